//! The printable report of `xaifb analyze`: per routine and statement, what
//! is active, varied and useful, and what must be recorded and why.
//!
//! The report is for people checking the analyses against the source: every
//! statement is shown with its XAIF id and line, as Fortran-like text, with
//! its facts named by variable (a whole array when every part of it is in
//! the set, else its named elements).

use std::fmt::Write as _;

use xaif_model::{
    ArgValue, Expr, ExprGraph, ExprVertexKind, RefGraph, RefVertexKind, RoutineId, SourceMap,
    StmtId, StmtKind, VertexKind,
};

use crate::flow::NodeRole;
use crate::tbr::Reason;
use crate::{Analysis, LocSet};

/// What to include.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReportOptions {
    /// Activity facts.
    pub activity: bool,
    /// TBR facts (when the analysis ran TBR).
    pub tbr: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            activity: true,
            tbr: true,
        }
    }
}

/// Renders the report; `source` gives line numbers to statements without a
/// `lineNumber` attribute.
pub fn render(a: &Analysis, source: Option<&SourceMap>, opts: ReportOptions) -> String {
    let f = &a.facts;
    let p = f.program;
    let mut out = String::new();
    let names = |set: &[(RoutineId, crate::StorageId)]| -> String {
        let v: Vec<String> = set
            .iter()
            .map(|(r, st)| format!("{}:{}", f.routines[r].name, f.storages[st.index()].name))
            .collect();
        v.join(", ")
    };
    if opts.activity {
        let _ = writeln!(out, "independents: {}", names(&a.activity.independents));
        let _ = writeln!(out, "dependents: {}", names(&a.activity.dependents));
        let diffs = crate::compare_with_front_end(f, &a.activity);
        if !diffs.is_empty() {
            let _ = writeln!(out, "differences from the front end's active flags:");
            for d in diffs {
                let _ = writeln!(
                    out,
                    "  {}: front end {}, ours {}{}",
                    d.name,
                    if d.front_end { "active" } else { "passive" },
                    if d.ours { "active" } else { "passive" },
                    d.explanation.map(|e| format!(" ({e})")).unwrap_or_default()
                );
            }
        }
    }
    for &r in &f.callgraph.top_down_order() {
        let rf = &f.routines[&r];
        let routine = &p.routines[r];
        let d = |set: &LocSet| -> String { format!("{{{}}}", f.describe(r, set).join(", ")) };
        let _ = writeln!(
            out,
            "\nroutine {} ({}; {} equations{})",
            rf.name,
            routine.symbol_name(),
            if rf.flow.region.is_some() {
                "structured"
            } else {
                "iterative"
            },
            if f.callgraph.is_recursive(r) {
                "; recursive"
            } else {
                ""
            }
        );
        if opts.activity {
            if let Some(ra) = a.activity.routines.get(r) {
                let _ = writeln!(
                    out,
                    "  varied on entry {}; useful on exit {}; active {}",
                    d(&ra.entry_vary),
                    d(&ra.exit_useful),
                    d(&ra.active)
                );
                match &ra.dep {
                    Some(dep) => {
                        let rows: Vec<String> = dep
                            .rows()
                            .filter(|(_, row)| !row.is_empty())
                            .map(|(w, row)| format!("{} <- {}", f.location(r, w), d(row)))
                            .collect();
                        let _ = writeln!(
                            out,
                            "  Dep: {}",
                            if rows.is_empty() {
                                "identity".to_string()
                            } else {
                                rows.join("; ")
                            }
                        );
                    }
                    None => {
                        let _ = writeln!(out, "  Dep: never returns");
                    }
                }
            }
        }
        if opts.tbr {
            if let Some(rt) = a.tbr.as_ref().and_then(|t| t.routine(r)) {
                let (req, kill) = match &rt.summary {
                    Some(s) => (d(&s.req), d(&s.kill)),
                    None => ("-".into(), "-".into()),
                };
                let _ = writeln!(
                    out,
                    "  TBR: Req {req}; Kill {kill}; InReq {}; may write {}; overwritten after return {}",
                    d(&rt.in_req),
                    d(&rt.may_write),
                    d(&rt.overwritten_after)
                );
            }
        }
        let cfg = match routine.body {
            xaif_model::RoutineBody::Graph(c) => c,
            _ => continue,
        };
        for v in p.cfgs[cfg].vertex_ids() {
            for role in [NodeRole::LoopInit, NodeRole::Vertex, NodeRole::LoopUpdate] {
                for node in rf
                    .flow
                    .nodes
                    .iter()
                    .filter(|n| n.vertex == v && n.role == role)
                {
                    if role == NodeRole::Vertex && !node.stmts.is_empty() {
                        let kind = p.vertices[v].kind.element();
                        let vid = p.vertices[v].attrs.get("vertex_id").unwrap_or("?");
                        let _ = write!(out, "  {kind} {vid}");
                        if let Some(bt) = a.tbr.as_ref().and_then(|t| t.vertices.get(v)) {
                            if opts.tbr {
                                let _ = write!(
                                    out,
                                    ": InReq {} OutReq {}",
                                    d(&bt.in_req),
                                    d(&bt.out_req)
                                );
                            }
                        }
                        out.push('\n');
                    }
                    for &s in &node.stmts {
                        stmt_report(a, r, s, source, opts, &mut out);
                    }
                }
            }
            let _ = matches!(p.vertices[v].kind, VertexKind::Entry);
        }
    }
    out
}

fn stmt_report(
    a: &Analysis,
    r: RoutineId,
    s: StmtId,
    source: Option<&SourceMap>,
    opts: ReportOptions,
    out: &mut String,
) {
    let f = &a.facts;
    let p = f.program;
    let stmt = &p.stmts[s];
    let line = stmt
        .attrs
        .get("lineNumber")
        .map(str::to_string)
        .or_else(|| source.map(|sm| sm.locate(stmt.attrs.span).0.to_string()))
        .unwrap_or_else(|| "?".into());
    let d = |set: &LocSet| -> String { format!("{{{}}}", f.describe(r, set).join(", ")) };
    let _ = writeln!(
        out,
        "    [{} line {}] {}",
        stmt.id(),
        line,
        stmt_text(&stmt.kind, stmt.attrs.get("symbol_id"))
    );
    if opts.activity {
        if let Some(sa) = a.activity.stmts.get(s) {
            let _ = writeln!(
                out,
                "        {}: varied {} -> {}; useful {} -> {}",
                if sa.active { "active" } else { "passive" },
                d(&sa.in_vary),
                d(&sa.out_vary),
                d(&sa.in_useful),
                d(&sa.out_useful)
            );
        }
    }
    if !opts.tbr {
        return;
    }
    let Some(t) = a.tbr.as_ref().and_then(|t| t.stmt(s)) else {
        return;
    };
    if !t.required.is_empty() {
        let why: Vec<String> = t
            .reasons
            .iter()
            .map(|q| {
                let what = match &q.reason {
                    Reason::Operand { op } => format!("operand of {op}"),
                    Reason::Index { array } => format!("subscript of {array}"),
                    Reason::Callee { routine } => format!("needed by the adjoint of {routine}"),
                    Reason::Opaque => "argument of an opaque call".to_string(),
                };
                format!("{} ({what})", f.describe(r, &q.slots).join(", "))
            })
            .collect();
        let _ = writeln!(out, "        requires {}", why.join("; "));
    }
    if !t.recorded.is_empty() {
        let mut own = t.recorded.clone();
        own.intersect_with(&t.required);
        let why = if own == t.recorded {
            "its old value is read by this statement's derivative"
        } else {
            "an earlier adjoint needs its old value"
        };
        let _ = writeln!(out, "        RECORD before: {} ({why})", d(&t.recorded));
    }
    if !t.to_tape.is_empty() {
        let _ = writeln!(
            out,
            "        to tape here: {} (may be overwritten before the adjoint runs)",
            d(&t.to_tape)
        );
    }
    if let Some(c) = a.tbr.as_ref().and_then(|tb| tb.call_site(s)) {
        let _ = writeln!(
            out,
            "        call {}: callee requires {}; to tape (split) {}; checkpoint (joint) {}",
            f.routines[&c.callee].name,
            d(&c.callee_required),
            d(&c.to_tape),
            d(&c.checkpoint)
        );
    }
}

/// A statement as Fortran-like text.
pub fn stmt_text(kind: &StmtKind, callee: Option<&str>) -> String {
    match kind {
        StmtKind::Assignment(a) => format!("{} = {}", ref_text(&a.lhs.graph), expr_text(&a.rhs)),
        StmtKind::SubroutineCall(args) => {
            let a: Vec<String> = args
                .iter()
                .map(|a| match &a.value {
                    ArgValue::Variable(v) => ref_text(&v.graph),
                    ArgValue::Constant(c) => c.get("value").unwrap_or("?").to_string(),
                })
                .collect();
            format!("call {}({})", callee.unwrap_or("?"), a.join(", "))
        }
        other => other.element().to_string(),
    }
}

/// A variable reference as text: `x(i,2)`.
pub fn ref_text(g: &RefGraph) -> String {
    let mut out = String::new();
    for v in g.chain() {
        match &v.kind {
            RefVertexKind::Symbol { .. } => out.push_str(v.attrs.get("symbol_id").unwrap_or("?")),
            RefVertexKind::ArrayElement { triplets } => {
                let t: Vec<String> = triplets
                    .iter()
                    .map(|t| {
                        let e = |x: &Option<Expr>| x.as_ref().map(expr_text).unwrap_or_default();
                        if t.bound.is_none() && t.stride.is_none() {
                            e(&t.index)
                        } else {
                            let mut s = format!("{}:{}", e(&t.index), e(&t.bound));
                            if t.stride.is_some() {
                                s.push(':');
                                s.push_str(&e(&t.stride));
                            }
                            s
                        }
                    })
                    .collect();
                let _ = write!(out, "({})", t.join(","));
            }
        }
    }
    out
}

/// An expression as text.
pub fn expr_text(e: &Expr) -> String {
    match ExprGraph::new(e) {
        Some(g) => vertex_text(e, &g, g.root),
        None => "?".into(),
    }
}

/// Longest expression text the report shows; longer texts end in `…`.
/// Expressions are flat in XAIF and may be deep or share subexpressions
/// (whose text repeats), so the text is bounded, and it is produced with an
/// explicit stack, never recursion.
pub const EXPR_TEXT_LIMIT: usize = 4096;

fn vertex_text(e: &Expr, g: &ExprGraph, root: usize) -> String {
    enum Task<'a> {
        Text(&'a str),
        Visit(usize),
    }
    let mut out = String::new();
    let mut stack = vec![Task::Visit(root)];
    while let Some(task) = stack.pop() {
        if out.len() > EXPR_TEXT_LIMIT {
            out.push('…');
            break;
        }
        let v = match task {
            Task::Text(t) => {
                out.push_str(t);
                continue;
            }
            Task::Visit(v) => v,
        };
        let vertex = &e.vertices[v];
        let args = &g.args[v];
        match &vertex.kind {
            ExprVertexKind::Constant => out.push_str(vertex.attrs.get("value").unwrap_or("?")),
            ExprVertexKind::VariableReference(rg) => out.push_str(&ref_text(rg)),
            ExprVertexKind::FunctionCall(a) => {
                let a: Vec<String> = a.iter().map(|x| ref_text(&x.graph)).collect();
                let _ = write!(
                    out,
                    "{}({})",
                    vertex.attrs.get("symbol_id").unwrap_or("?"),
                    a.join(", ")
                );
            }
            ExprVertexKind::Intrinsic | ExprVertexKind::BooleanOperation => {
                let name = vertex.attrs.get("name").unwrap_or("?");
                let infix = match name {
                    "add_scal_scal" => Some(" + "),
                    "sub_scal_scal" => Some(" - "),
                    "mul_scal_scal" => Some(" * "),
                    "div_scal_scal" => Some(" / "),
                    "pow_scal_scal" => Some(" ** "),
                    "greater_than" => Some(" > "),
                    "greater_or_equal" => Some(" >= "),
                    "less_than" => Some(" < "),
                    "less_or_equal" => Some(" <= "),
                    "equal" => Some(" == "),
                    "not_equal" => Some(" /= "),
                    "and" => Some(" .and. "),
                    "or" => Some(" .or. "),
                    _ => None,
                };
                // Tasks are pushed in reverse: the stack pops them in order.
                match (infix, args.as_slice()) {
                    (Some(op), [a, b]) => {
                        stack.extend([
                            Task::Text(")"),
                            Task::Visit(*b),
                            Task::Text(op),
                            Task::Visit(*a),
                            Task::Text("("),
                        ]);
                    }
                    (_, [a]) if name == "minus_scal" => {
                        stack.extend([Task::Visit(*a), Task::Text("-")]);
                    }
                    _ => {
                        let short = name
                            .strip_suffix("_scal_scal")
                            .or_else(|| name.strip_suffix("_scal"))
                            .unwrap_or(name);
                        stack.push(Task::Text(")"));
                        for (i, &a) in args.iter().enumerate().rev() {
                            stack.push(Task::Visit(a));
                            if i > 0 {
                                stack.push(Task::Text(", "));
                            }
                        }
                        stack.push(Task::Text("("));
                        stack.push(Task::Text(short));
                    }
                }
            }
            ExprVertexKind::ArgumentReference => out.push_str("arg"),
        }
    }
    out
}
