//! A generated program as front-end XAIF: the shape `whirl2xaif` gives
//! programs (scope 1 with routines and module variables, one scope per
//! routine, alias sets with virtual address ranges, side-effect lists,
//! control flow graphs with `ForLoop`, `PreLoop`, `Branch` and jumps as
//! plain edges), plus the rarer vertex kinds the schema has (`If`,
//! `PostLoop`, `Goto`, `Label`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::ast::*;

const BOOLEAN_OPS: [&str; 10] = [
    "and",
    "or",
    "not",
    "equal",
    "not_equal",
    "less_than",
    "less_or_equal",
    "greater_than",
    "greater_or_equal",
    "xor",
];

fn shape_name(rank: usize) -> &'static str {
    ["scalar", "vector", "matrix", "three_tensor"][rank.min(3)]
}

fn real_text(x: f64) -> String {
    let s = format!("{x:?}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Program-wide numbering: statement ids, alias sets.
struct Ctx<'p> {
    p: &'p Program,
    stmt: usize,
    alias_keys: BTreeMap<(i64, i64, bool), usize>,
    /// Virtual address ranges: globals, then per routine its variables.
    global_range: Vec<(i64, i64)>,
    var_range: Vec<Vec<(i64, i64)>>,
    /// Options drawn for this program.
    pad_blocks: bool,
    goto_vertices: bool,
}

impl<'p> Ctx<'p> {
    fn new(p: &'p Program) -> Self {
        let mut next = 1;
        let mut alloc = |size: i64| {
            let r = (next, next + size.max(1) - 1);
            next += size.max(1);
            r
        };
        let global_range = p.globals.iter().map(|g| alloc(g.size())).collect();
        let var_range = p
            .routines
            .iter()
            .map(|r| {
                r.formals
                    .iter()
                    .chain(r.locals.iter())
                    .map(|v| alloc(v.size()))
                    .collect()
            })
            .collect();
        // Presentation options follow from the program itself, so that
        // rendering stays a function of the program.
        let h = p.routines.iter().map(|r| r.body.len()).sum::<usize>() + p.globals.len();
        Ctx {
            p,
            stmt: 0,
            alias_keys: BTreeMap::new(),
            global_range,
            var_range,
            pad_blocks: h % 2 == 0,
            goto_vertices: h % 3 == 0,
        }
    }

    fn next_stmt(&mut self) -> String {
        self.stmt += 1;
        self.stmt.to_string()
    }

    fn range(&self, r: usize, v: VarId) -> (i64, i64) {
        match v {
            VarId::Global(g) => self.global_range[g],
            VarId::Formal(f) => self.var_range[r][f],
            VarId::Local(l) => self.var_range[r][self.p.routines[r].formals.len() + l],
        }
    }

    fn alias(&mut self, r: usize, rf: &Ref) -> usize {
        let (a, b) = self.range(r, rf.var);
        let key = (a, b, !rf.subs.is_empty());
        let n = self.alias_keys.len() + 1;
        *self.alias_keys.entry(key).or_insert(n)
    }

    /// (scope_id, symbol_id) of variable `v` in routine `r`.
    fn symbol(&self, r: usize, v: VarId) -> (String, String) {
        match v {
            VarId::Global(g) => ("1".into(), global_symbol(self.p, r, g)),
            VarId::Formal(f) => (
                scope_of(r).to_string(),
                self.p.routines[r].formals[f].name.clone(),
            ),
            VarId::Local(l) => (
                scope_of(r).to_string(),
                self.p.routines[r].locals[l].name.clone(),
            ),
        }
    }
}

fn scope_of(r: usize) -> usize {
    r + 2
}

/// The scope-1 symbol routine `r` knows global `g` by.
fn global_symbol(p: &Program, r: usize, g: usize) -> String {
    let own = p
        .own_global_symbol
        .get(r)
        .and_then(|o| o.get(g))
        .copied()
        .unwrap_or(false);
    if own {
        format!("{}_{}", p.globals[g].name, r + 1)
    } else {
        p.globals[g].name.clone()
    }
}

fn symbol_xml(out: &mut String, indent: &str, id: &str, v: &Var) {
    let ty = match v.role.ty() {
        Ty::Real => ("real", "F8"),
        Ty::Int => ("integer", "I4"),
    };
    let active = if v.role.active() { 1 } else { 0 };
    let bounds = match &v.dims {
        Dims::Fixed(e) => e.iter().rev().copied().collect::<Vec<_>>(),
        _ => Vec::new(),
    };
    let head = format!(
        "{indent}<xaif:Symbol symbol_id=\"{id}\" kind=\"variable\" type=\"{}\" feType=\"{}\" shape=\"{}\" active=\"{active}\"",
        ty.0,
        ty.1,
        shape_name(v.rank())
    );
    if bounds.is_empty() {
        let _ = writeln!(out, "{head}/>");
    } else {
        let _ = writeln!(out, "{head}>");
        for u in bounds {
            let _ = writeln!(
                out,
                "{indent}  <xaif:DimensionBounds lower=\"1\" upper=\"{u}\"/>"
            );
        }
        let _ = writeln!(out, "{indent}</xaif:Symbol>");
    }
}

/// Writes the XAIF text of `p`, with `comment` (and a listing of the
/// program) in a comment at the top.
pub fn xaif(p: &Program, comment: &str) -> String {
    let mut c = Ctx::new(p);
    let mut cfgs = String::new();
    for r in 0..p.routines.len() {
        cfgs.push_str(&routine(&mut c, r));
    }
    let mut calls = String::new();
    let mut edge = 0;
    for (r, routine) in p.routines.iter().enumerate() {
        let mut callees = Vec::new();
        walk(&routine.body, &mut |s| {
            if let Stmt::Call { callee, .. } = s {
                callees.push(*callee);
            }
        });
        for callee in callees {
            edge += 1;
            let _ = writeln!(
                calls,
                "  <xaif:CallGraphEdge edge_id=\"{edge}\" source=\"{}\" target=\"{}\"/>",
                r + 1,
                callee + 1
            );
        }
    }
    let mut out = String::new();
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let text = format!("{comment}\n{}", super::listing::listing(p));
    let _ = writeln!(out, "<!--\n{}\n-->", text.replace("--", "- -").trim_end());
    out.push_str("<xaif:CallGraph xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xmlns:xaif=\"http://www.mcs.anl.gov/XAIF\" xsi:schemaLocation=\"http://www.mcs.anl.gov/XAIF xaif.xsd\" program_name=\"generated\" prefix=\"OpenAD_\">\n");
    out.push_str(
        "  <xaif:ScopeHierarchy>\n    <xaif:Scope vertex_id=\"1\">\n      <xaif:SymbolTable>\n",
    );
    for r in &p.routines {
        let _ = writeln!(
            out,
            "        <xaif:Symbol symbol_id=\"{}\" kind=\"subroutine\" type=\"void\" shape=\"scalar\" active=\"0\"/>",
            r.name
        );
    }
    let mut global_symbols = BTreeSet::new();
    for r in 0..p.routines.len() {
        for g in 0..p.globals.len() {
            global_symbols.insert((g, global_symbol(p, r, g)));
        }
    }
    for (g, id) in &global_symbols {
        symbol_xml(&mut out, "        ", id, &p.globals[*g]);
    }
    out.push_str("      </xaif:SymbolTable>\n    </xaif:Scope>\n");
    for (r, routine) in p.routines.iter().enumerate() {
        let s = scope_of(r);
        let _ = writeln!(
            out,
            "    <xaif:Scope vertex_id=\"{s}\">\n      <xaif:SymbolTable>"
        );
        for v in routine.formals.iter().chain(routine.locals.iter()) {
            symbol_xml(&mut out, "        ", &v.name, v);
        }
        let _ = writeln!(
            out,
            "      </xaif:SymbolTable>\n    </xaif:Scope>\n    <xaif:ScopeEdge edge_id=\"{}\" source=\"{s}\" target=\"1\"/>",
            r + 1
        );
    }
    out.push_str(
        "  </xaif:ScopeHierarchy>\n  <xaif:AliasSetMap>\n    <xaif:AliasSet key=\"0\"/>\n",
    );
    let mut sets: Vec<(usize, (i64, i64, bool))> =
        c.alias_keys.iter().map(|(k, v)| (*v, *k)).collect();
    sets.sort_unstable();
    for (key, (a, b, partial)) in sets {
        let _ = writeln!(
            out,
            "    <xaif:AliasSet key=\"{key}\">\n      <xaif:AliasRange from_virtual_address=\"{a}\" to_virtual_address=\"{b}\" partial=\"{}\"/>\n    </xaif:AliasSet>",
            partial as u8
        );
    }
    out.push_str("  </xaif:AliasSetMap>\n  <xaif:DUUDSetMap>\n    <xaif:StmtIdSet key=\"0\"/>\n  </xaif:DUUDSetMap>\n  <xaif:DOSetMap>\n    <xaif:StmtIdSet key=\"0\"/>\n  </xaif:DOSetMap>\n");
    out.push_str(&cfgs);
    out.push_str(&calls);
    out.push_str("</xaif:CallGraph>\n");
    out
}

/// Calls `f` on every statement, nested ones included.
pub fn walk(stmts: &[Stmt], f: &mut dyn FnMut(&Stmt)) {
    for s in stmts {
        f(s);
        match s {
            Stmt::Do { body, .. }
            | Stmt::While { body, .. }
            | Stmt::GotoLoop { body, .. }
            | Stmt::GotoSkip { body, .. } => walk(body, f),
            Stmt::If { then, els, .. } => {
                walk(then, f);
                walk(els, f);
            }
            Stmt::Select { cases, default, .. } => {
                for (_, b) in cases {
                    walk(b, f);
                }
                walk(default, f);
            }
            _ => {}
        }
    }
}

/// Reads and writes of a routine's statements, for the side-effect lists.
#[derive(Default)]
struct Effects {
    read_local: BTreeSet<VarId>,
    mod_local: BTreeSet<VarId>,
    read: BTreeSet<VarId>,
    modified: BTreeSet<VarId>,
}

fn effects(
    p: &Program,
    r: usize,
    memo: &mut BTreeMap<usize, (BTreeSet<usize>, BTreeSet<usize>)>,
) -> Effects {
    let mut e = Effects::default();
    let nonlocal = |v: VarId| !matches!(v, VarId::Local(_));
    let mut reads: Vec<VarId> = Vec::new();
    let mut writes: Vec<VarId> = Vec::new();
    let mut calls: Vec<(usize, Vec<Option<VarId>>)> = Vec::new();
    let routine = &p.routines[r];
    walk(&routine.body, &mut |s| {
        let mut exprs: Vec<Expr> = Vec::new();
        match s {
            Stmt::Assign(lhs, rhs) => {
                writes.push(lhs.var);
                // Subscripts of the left-hand side are reads.
                for sub in &lhs.subs {
                    match sub {
                        Sub::Elem(e) => exprs.push(e.clone()),
                        Sub::Range(a, b, c) => {
                            exprs.push(a.clone());
                            exprs.push(b.clone());
                            exprs.extend(c.clone());
                        }
                    }
                }
                exprs.push(rhs.clone());
            }
            Stmt::Call { callee, args } => {
                let mut vars = Vec::new();
                for a in args {
                    match a {
                        Arg::Ref(rf) => {
                            exprs.push(Expr::r(rf.clone()));
                            vars.push(Some(rf.var));
                        }
                        Arg::Const(_) => vars.push(None),
                    }
                }
                calls.push((*callee, vars));
            }
            Stmt::Do {
                var, lo, hi, step, ..
            } => {
                writes.push(*var);
                exprs.push(lo.clone());
                exprs.push(hi.clone());
                if let Step::Var(v) = step {
                    reads.push(*v);
                }
            }
            Stmt::While { cond, .. }
            | Stmt::If { cond, .. }
            | Stmt::Exit(cond)
            | Stmt::Return(cond)
            | Stmt::GotoLoop { cond, .. }
            | Stmt::GotoSkip { cond, .. } => exprs.push(cond.clone()),
            Stmt::Select { on, .. } => exprs.push(on.clone()),
        }
        for e in exprs {
            e.visit_refs(&mut |rf| reads.push(rf.var));
        }
    });
    for v in reads {
        if nonlocal(v) {
            e.read_local.insert(v);
        }
    }
    for v in writes {
        if nonlocal(v) {
            e.mod_local.insert(v);
        }
    }
    e.read = e.read_local.clone();
    e.modified = e.mod_local.clone();
    for (callee, vars) in calls {
        let (greads, gwrites) = global_effects(p, callee, memo);
        for g in greads {
            e.read.insert(VarId::Global(g));
        }
        for g in gwrites {
            e.modified.insert(VarId::Global(g));
        }
        for (k, v) in vars.into_iter().enumerate() {
            let Some(v) = v.filter(|v| nonlocal(*v)) else {
                continue;
            };
            e.read.insert(v);
            if p.routines[callee].written.get(k).copied().unwrap_or(true) {
                e.modified.insert(v);
            }
        }
    }
    e
}

/// Globals a routine and its callees read and write.
fn global_effects(
    p: &Program,
    r: usize,
    memo: &mut BTreeMap<usize, (BTreeSet<usize>, BTreeSet<usize>)>,
) -> (BTreeSet<usize>, BTreeSet<usize>) {
    if let Some(x) = memo.get(&r) {
        return x.clone();
    }
    let e = effects(p, r, memo);
    let pick = |s: &BTreeSet<VarId>| {
        s.iter()
            .filter_map(|v| match v {
                VarId::Global(g) => Some(*g),
                _ => None,
            })
            .collect::<BTreeSet<usize>>()
    };
    let out = (pick(&e.read), pick(&e.modified));
    memo.insert(r, out.clone());
    out
}

// ------------------------------------------------------------------ CFGs

#[derive(Clone)]
enum VKind {
    Entry,
    Exit,
    Block(Vec<String>),
    For {
        init: String,
        cond: String,
        update: String,
        explicit: bool,
    },
    Pre(String),
    Post(String),
    EndLoop,
    Branch(String),
    If(String),
    EndBranch,
    Goto,
    Label,
}

struct Cfg<'c, 'p> {
    c: &'c mut Ctx<'p>,
    r: usize,
    vertices: Vec<(usize, VKind)>,
    edges: Vec<(usize, usize, Option<i64>)>,
    next: usize,
    exit: usize,
    /// Join vertices of the enclosing loops an `exit` leaves, with whether
    /// one was used.
    loop_exits: Vec<(usize, bool)>,
}

/// Predecessors waiting for the next vertex: (vertex, condition value).
type Preds = Vec<(usize, Option<i64>)>;

impl Cfg<'_, '_> {
    fn alloc(&mut self) -> usize {
        self.next += 1;
        self.next
    }

    fn add(&mut self, id: usize, kind: VKind, preds: Preds) {
        for (p, cv) in preds {
            self.edges.push((p, id, cv));
        }
        self.vertices.push((id, kind));
    }

    fn vertex(&mut self, kind: VKind, preds: Preds) -> usize {
        let id = self.alloc();
        self.add(id, kind, preds);
        id
    }

    /// A jump edge from `from` to `to`, through a `Goto` vertex when the
    /// program is drawn with them.
    fn jump(&mut self, from: usize, cv: Option<i64>, to: usize) {
        if self.c.goto_vertices {
            let g = self.vertex(VKind::Goto, vec![(from, cv)]);
            self.edges.push((g, to, None));
        } else {
            self.edges.push((from, to, cv));
        }
    }

    /// A join point several edges may reach.
    fn join(&mut self, id: usize, preds: Preds) -> Preds {
        let kind = if self.c.goto_vertices {
            VKind::Label
        } else {
            VKind::Block(Vec::new())
        };
        self.add(id, kind, preds);
        vec![(id, None)]
    }

    fn seq(&mut self, stmts: &[Stmt], mut preds: Preds) -> Preds {
        let mut block: Vec<String> = Vec::new();
        let mut first = true;
        for s in stmts {
            match s {
                Stmt::Assign(..) | Stmt::Call { .. } => {
                    block.push(self.simple(s));
                }
                _ => {
                    if !block.is_empty() || (first && self.c.pad_blocks) {
                        let b = self.vertex(VKind::Block(std::mem::take(&mut block)), preds);
                        preds = vec![(b, None)];
                    }
                    preds = self.compound(s, preds);
                }
            }
            first = false;
        }
        if !block.is_empty() {
            let b = self.vertex(VKind::Block(block), preds);
            preds = vec![(b, None)];
        }
        preds
    }

    fn body(&mut self, stmts: &[Stmt], preds: Preds) -> Preds {
        // Every body starts with a block, empty or not.
        if stmts.is_empty() || !matches!(stmts[0], Stmt::Assign(..) | Stmt::Call { .. }) {
            let b = self.vertex(VKind::Block(Vec::new()), preds);
            self.seq(stmts, vec![(b, None)])
        } else {
            self.seq(stmts, preds)
        }
    }

    fn compound(&mut self, s: &Stmt, preds: Preds) -> Preds {
        let r = self.r;
        match s {
            Stmt::Do {
                var,
                lo,
                hi,
                step,
                body,
                explicit,
            } => {
                let v = Expr::var(*var);
                let init = assignment(self.c, r, "Initialization", &Ref::whole(*var), lo);
                let (cond, update) = match step {
                    Step::Up => (
                        Expr::Op("less_or_equal", vec![v.clone(), hi.clone()]),
                        Expr::Op("add_scal_scal", vec![v.clone(), Expr::Int(1)]),
                    ),
                    Step::Down => (
                        Expr::Op("greater_or_equal", vec![v.clone(), hi.clone()]),
                        Expr::Op("sub_scal_scal", vec![v.clone(), Expr::Int(1)]),
                    ),
                    Step::Var(s) => (
                        Expr::Op("not_equal", vec![v.clone(), hi.clone()]),
                        Expr::Op("add_scal_scal", vec![v.clone(), Expr::var(*s)]),
                    ),
                };
                let cond = expression(self.c, r, "Condition", &cond, "      ");
                let update = assignment(self.c, r, "Update", &Ref::whole(*var), &update);
                let l = self.vertex(
                    VKind::For {
                        init,
                        cond,
                        update,
                        explicit: *explicit,
                    },
                    preds,
                );
                self.loop_with(l, body)
            }
            Stmt::While { cond, body, post } => {
                let cond = expression(self.c, r, "Condition", cond, "      ");
                let kind = if *post {
                    VKind::Post(cond)
                } else {
                    VKind::Pre(cond)
                };
                let l = self.vertex(kind, preds);
                self.loop_with(l, body)
            }
            Stmt::If {
                cond,
                then,
                els,
                vertex,
            } => {
                let cond = expression(self.c, r, "Condition", cond, "      ");
                let kind = if *vertex {
                    VKind::If(cond)
                } else {
                    VKind::Branch(cond)
                };
                let b = self.vertex(kind, preds);
                let mut ends = self.body(then, vec![(b, Some(1))]);
                ends.extend(self.body(els, vec![(b, Some(0))]));
                let e = self.vertex(VKind::EndBranch, ends);
                vec![(e, None)]
            }
            Stmt::Select { on, cases, default } => {
                let cond = expression(self.c, r, "Condition", on, "      ");
                let b = self.vertex(VKind::Branch(cond), preds);
                let mut ends = Vec::new();
                for (values, body) in cases {
                    ends.extend(self.body(body, vec![(b, Some(values[0]))]));
                }
                ends.extend(self.body(default, vec![(b, None)]));
                let e = self.vertex(VKind::EndBranch, ends);
                vec![(e, None)]
            }
            Stmt::Exit(cond) => {
                let cond = expression(self.c, r, "Condition", cond, "      ");
                let b = self.vertex(VKind::Branch(cond), preds);
                let target = self
                    .loop_exits
                    .last_mut()
                    .map(|(t, used)| {
                        *used = true;
                        *t
                    })
                    .expect("exit only inside loops");
                self.jump(b, Some(1), target);
                let cont = self.vertex(VKind::Block(Vec::new()), vec![(b, Some(0))]);
                vec![(cont, None)]
            }
            Stmt::Return(cond) => {
                let cond = expression(self.c, r, "Condition", cond, "      ");
                let b = self.vertex(VKind::Branch(cond), preds);
                let exit = self.exit;
                self.jump(b, Some(1), exit);
                let cont = self.vertex(VKind::Block(Vec::new()), vec![(b, Some(0))]);
                vec![(cont, None)]
            }
            Stmt::GotoLoop { body, cond } => {
                let top = self.alloc();
                let preds = self.join(top, preds);
                let end = self.body(body, preds);
                let cond = expression(self.c, r, "Condition", cond, "      ");
                let b = self.vertex(VKind::Branch(cond), end);
                self.jump(b, Some(1), top);
                let cont = self.vertex(VKind::Block(Vec::new()), vec![(b, Some(0))]);
                vec![(cont, None)]
            }
            Stmt::GotoSkip { cond, body } => {
                let cond = expression(self.c, r, "Condition", cond, "      ");
                let b = self.vertex(VKind::Branch(cond), preds);
                let target = self.alloc();
                self.jump(b, Some(1), target);
                let end = self.body(body, vec![(b, Some(0))]);
                self.join(target, end)
            }
            Stmt::Assign(..) | Stmt::Call { .. } => unreachable!("simple statements"),
        }
    }

    /// Body and `EndLoop` of loop vertex `l`; the exit edge leaves `l` (to
    /// a join vertex when an `exit` also leaves the loop).
    fn loop_with(&mut self, l: usize, body: &[Stmt]) -> Preds {
        let join = self.alloc();
        self.loop_exits.push((join, false));
        let end = self.body(body, vec![(l, Some(1))]);
        let (_, used) = self.loop_exits.pop().expect("pushed above");
        let e = self.vertex(VKind::EndLoop, end);
        self.edges.push((e, l, None));
        if used {
            self.join(join, vec![(l, None)])
        } else {
            vec![(l, None)]
        }
    }

    fn simple(&mut self, s: &Stmt) -> String {
        let r = self.r;
        match s {
            Stmt::Assign(lhs, rhs) => assignment(self.c, r, "Assignment", lhs, rhs),
            Stmt::Call { callee, args } => {
                let id = self.c.next_stmt();
                let name = &self.c.p.routines[*callee].name;
                let mut out = format!(
                    "      <xaif:SubroutineCall statement_id=\"{id}\" scope_id=\"1\" symbol_id=\"{name}\" formalArgCount=\"{}\">\n",
                    args.len()
                );
                for (k, a) in args.iter().enumerate() {
                    let _ = writeln!(out, "        <xaif:Argument position=\"{}\">", k + 1);
                    match a {
                        Arg::Ref(rf) => out.push_str(&var_ref(
                            self.c,
                            r,
                            rf,
                            "VariableReference",
                            " vertex_id=\"1\"",
                            "          ",
                        )),
                        Arg::Const(e) => out.push_str(&constant(e, 1, "          ")),
                    }
                    out.push_str("        </xaif:Argument>\n");
                }
                out.push_str("      </xaif:SubroutineCall>\n");
                out
            }
            _ => unreachable!("compound statements"),
        }
    }
}

fn constant(e: &Expr, id: usize, indent: &str) -> String {
    match e {
        Expr::Real(x) => format!(
            "{indent}<xaif:Constant vertex_id=\"{id}\" type=\"real\" feType=\"F8\" value=\"{}\"/>\n",
            real_text(*x)
        ),
        Expr::Int(i) => format!(
            "{indent}<xaif:Constant vertex_id=\"{id}\" type=\"integer\" feType=\"I4\" value=\"{i}\"/>\n"
        ),
        Expr::Str(s) => format!(
            "{indent}<xaif:Constant vertex_id=\"{id}\" type=\"string\" value=\"{}\"/>\n",
            esc(s)
        ),
        _ => unreachable!("not a constant"),
    }
}

/// A variable reference element (`tag` is `VariableReference`, or the
/// `AssignmentLHS` whose children the reference graph is).
fn var_ref(c: &mut Ctx<'_>, r: usize, rf: &Ref, tag: &str, attrs: &str, indent: &str) -> String {
    let (scope, symbol) = c.symbol(r, rf.var);
    let alias = c.alias(r, rf);
    let mut out = format!("{indent}<xaif:{tag}{attrs} alias=\"{alias}\">\n");
    let _ = writeln!(
        out,
        "{indent}  <xaif:SymbolReference vertex_id=\"1\" scope_id=\"{scope}\" symbol_id=\"{symbol}\"/>"
    );
    if !rf.subs.is_empty() {
        let _ = writeln!(
            out,
            "{indent}  <xaif:ArrayElementReference vertex_id=\"2\">"
        );
        let inner = format!("{indent}        ");
        for s in &rf.subs {
            let _ = writeln!(out, "{indent}    <xaif:IndexTriplet>");
            match s {
                Sub::Elem(e) => {
                    out.push_str(&expression(c, r, "Index", e, &format!("{indent}      ")))
                }
                Sub::Range(a, b, st) => {
                    out.push_str(&expression(c, r, "Index", a, &format!("{indent}      ")));
                    out.push_str(&expression(c, r, "Bound", b, &format!("{indent}      ")));
                    // Front ends always write the stride of a section.
                    let one = Expr::Int(1);
                    let st = st.as_ref().unwrap_or(&one);
                    out.push_str(&expression(c, r, "Stride", st, &format!("{indent}      ")));
                }
            }
            let _ = inner;
            let _ = writeln!(out, "{indent}    </xaif:IndexTriplet>");
        }
        let _ = writeln!(out, "{indent}  </xaif:ArrayElementReference>");
        let _ = writeln!(
            out,
            "{indent}  <xaif:VariableReferenceEdge edge_id=\"1\" source=\"1\" target=\"2\"/>"
        );
    }
    let _ = writeln!(out, "{indent}</xaif:{tag}>");
    out
}

/// An expression graph as the children of element `tag`.
fn expression(c: &mut Ctx<'_>, r: usize, tag: &str, e: &Expr, indent: &str) -> String {
    let mut vertices = String::new();
    let mut edges: Vec<(usize, usize, usize)> = Vec::new();
    let mut next = 0;
    fn go(
        c: &mut Ctx<'_>,
        r: usize,
        e: &Expr,
        indent: &str,
        next: &mut usize,
        vertices: &mut String,
        edges: &mut Vec<(usize, usize, usize)>,
    ) -> usize {
        *next += 1;
        let id = *next;
        match e {
            Expr::Real(_) | Expr::Int(_) | Expr::Str(_) => {
                vertices.push_str(&constant(e, id, indent))
            }
            Expr::Ref(rf) => vertices.push_str(&var_ref(
                c,
                r,
                rf,
                "VariableReference",
                &format!(" vertex_id=\"{id}\""),
                indent,
            )),
            Expr::Op(name, args) => {
                let tag = if BOOLEAN_OPS.contains(name) {
                    "BooleanOperation"
                } else {
                    "Intrinsic"
                };
                let _ = writeln!(
                    vertices,
                    "{indent}<xaif:{tag} vertex_id=\"{id}\" name=\"{name}\"/>"
                );
                for (k, a) in args.iter().enumerate() {
                    let s = go(c, r, a, indent, next, vertices, edges);
                    edges.push((s, id, k + 1));
                }
            }
        }
        id
    }
    let inner = format!("{indent}  ");
    go(c, r, e, &inner, &mut next, &mut vertices, &mut edges);
    let mut out = format!("{indent}<xaif:{tag}>\n{vertices}");
    for (k, (s, t, pos)) in edges.iter().enumerate() {
        let _ = writeln!(
            out,
            "{inner}<xaif:ExpressionEdge edge_id=\"{}\" source=\"{s}\" target=\"{t}\" position=\"{pos}\"/>",
            k + 1
        );
    }
    let _ = writeln!(out, "{indent}</xaif:{tag}>");
    out
}

/// An assignment-shaped element (`Assignment`, `Initialization`,
/// `Update`).
fn assignment(c: &mut Ctx<'_>, r: usize, tag: &str, lhs: &Ref, rhs: &Expr) -> String {
    let id = c.next_stmt();
    let mut out = format!("      <xaif:{tag} statement_id=\"{id}\">\n");
    out.push_str(&var_ref(c, r, lhs, "AssignmentLHS", "", "        "));
    out.push_str(&expression(c, r, "AssignmentRHS", rhs, "        "));
    let _ = writeln!(out, "      </xaif:{tag}>");
    out
}

fn routine(c: &mut Ctx<'_>, r: usize) -> String {
    let p = c.p;
    let routine = &p.routines[r];
    let s = scope_of(r);
    let mut memo = BTreeMap::new();
    let effects = effects(p, r, &mut memo);
    let mut cfg = Cfg {
        c,
        r,
        vertices: Vec::new(),
        edges: Vec::new(),
        next: 2,
        exit: 2,
        loop_exits: Vec::new(),
    };
    let preds = cfg.seq(&routine.body, vec![(1, None)]);
    let mut vertices = vec![(1, VKind::Entry)];
    vertices.append(&mut cfg.vertices);
    vertices.push((2, VKind::Exit));
    let mut edges = cfg.edges;
    for (p, cv) in preds {
        edges.push((p, 2, cv));
    }
    let c = cfg.c;
    let structured = if routine.mark_unstructured {
        " structured=\"0\""
    } else {
        ""
    };
    let mut out = format!(
        "  <xaif:ControlFlowGraph vertex_id=\"{}\" scope_id=\"1\" symbol_id=\"{}\" controlflowgraph_scope_id=\"{s}\"{structured}>\n",
        r + 1,
        routine.name
    );
    out.push_str("    <xaif:ArgumentList>\n");
    for (k, f) in routine.formals.iter().enumerate() {
        let intent = if routine.out.get(k).copied().unwrap_or(false) {
            "out"
        } else if routine.written.get(k).copied().unwrap_or(true) {
            "inout"
        } else {
            "in"
        };
        let _ = writeln!(
            out,
            "      <xaif:ArgumentSymbolReference position=\"{}\" scope_id=\"{s}\" symbol_id=\"{}\" intent=\"{intent}\"/>",
            k + 1,
            f.name
        );
    }
    out.push_str("    </xaif:ArgumentList>\n");
    for (tag, set) in [
        ("ModLocal", &effects.mod_local),
        ("Mod", &effects.modified),
        ("ReadLocal", &effects.read_local),
        ("Read", &effects.read),
        ("OnEntry", &effects.read),
    ] {
        if set.is_empty() {
            continue;
        }
        let _ = writeln!(out, "    <xaif:{tag}>");
        for v in set {
            let (scope, symbol) = c.symbol(r, *v);
            let _ = writeln!(
                out,
                "      <xaif:SideEffectReference vertex_id=\"1\">\n        <xaif:SymbolReference vertex_id=\"1\" scope_id=\"{scope}\" symbol_id=\"{symbol}\"/>\n      </xaif:SideEffectReference>"
            );
        }
        let _ = writeln!(out, "    </xaif:{tag}>");
    }
    for (id, kind) in vertices {
        match kind {
            VKind::Entry => {
                let _ = writeln!(out, "    <xaif:Entry vertex_id=\"{id}\"/>");
            }
            VKind::Exit => {
                let _ = writeln!(out, "    <xaif:Exit vertex_id=\"{id}\"/>");
            }
            VKind::Block(stmts) => {
                if stmts.is_empty() {
                    let _ = writeln!(
                        out,
                        "    <xaif:BasicBlock vertex_id=\"{id}\" scope_id=\"{s}\"/>"
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "    <xaif:BasicBlock vertex_id=\"{id}\" scope_id=\"{s}\">"
                    );
                    for st in stmts {
                        out.push_str(&st);
                    }
                    out.push_str("    </xaif:BasicBlock>\n");
                }
            }
            VKind::For {
                init,
                cond,
                update,
                explicit,
            } => {
                let reversal = if explicit { "explicit" } else { "anonymous" };
                let _ = writeln!(
                    out,
                    "    <xaif:ForLoop vertex_id=\"{id}\" reversal=\"{reversal}\">"
                );
                out.push_str(&init);
                out.push_str(&cond);
                out.push_str(&update);
                out.push_str("    </xaif:ForLoop>\n");
            }
            VKind::Pre(ref cond)
            | VKind::Post(ref cond)
            | VKind::Branch(ref cond)
            | VKind::If(ref cond) => {
                let tag = match kind {
                    VKind::Pre(_) => "PreLoop",
                    VKind::Post(_) => "PostLoop",
                    VKind::Branch(_) => "Branch",
                    _ => "If",
                };
                let _ = writeln!(out, "    <xaif:{tag} vertex_id=\"{id}\">");
                out.push_str(cond);
                let _ = writeln!(out, "    </xaif:{tag}>");
            }
            VKind::EndLoop => {
                let _ = writeln!(out, "    <xaif:EndLoop vertex_id=\"{id}\"/>");
            }
            VKind::EndBranch => {
                let _ = writeln!(out, "    <xaif:EndBranch vertex_id=\"{id}\"/>");
            }
            VKind::Goto => {
                let _ = writeln!(out, "    <xaif:Goto vertex_id=\"{id}\"/>");
            }
            VKind::Label => {
                let _ = writeln!(out, "    <xaif:Label vertex_id=\"{id}\"/>");
            }
        }
    }
    for (k, (a, b, cv)) in edges.iter().enumerate() {
        let value = match cv {
            Some(v) => format!(" has_condition_value=\"true\" condition_value=\"{v}\""),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "    <xaif:ControlFlowEdge edge_id=\"{}\" source=\"{a}\" target=\"{b}\"{value}/>",
            k + 1
        );
    }
    out.push_str("  </xaif:ControlFlowGraph>\n");
    out
}
