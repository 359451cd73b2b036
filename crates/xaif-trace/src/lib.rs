//! Trace mode: XAIF whose execution records the path it takes.
//!
//! OpenAD's trace mode (`openad -m t`, the reference's TraceDiff driver)
//! compares runs of a program at different inputs: where did control flow
//! depend on active values, which non-smooth intrinsics were evaluated,
//! which array elements reached the routines called. The output is a
//! `ReplacementList` per routine for OpenAD's `tracing_subroutine_template`:
//! placeholder 1 holds the routine as it is (with the argument conversions
//! of the TypeChange transformation, [`xaif_linearize::typechange`]),
//! placeholder 2 a copy with calls to the run-time support's `oad_trace_*`
//! routines (`OAD_trace.f90`), each of which writes one XML record:
//!
//! - around every call of a routine with code: `oad_trace_call(name,
//!   line)` … `oad_trace_ecall()`, and in between an `oad_trace_arg(name)`
//!   with an `oad_trace_index(i)` per subscript value and
//!   `oad_trace_earg()` for every argument that is an array element or
//!   section;
//! - before an assignment that evaluates a non-smooth intrinsic (the
//!   catalogue's `nonSmooth` ones: `abs`, `tan`, `int`, `mod`, `sign`, …):
//!   the same call record for the intrinsic, which is renamed `oad_<name>`
//!   (the run-time support's tracing version, e.g. `oad_tan` records the
//!   branch of `tan`);
//! - for every branch whose condition reads an active variable:
//!   `oad_trace_branch(line)` before it (with `oad_trace_condition()` …
//!   `oad_trace_econdition()` around the traced subscripted arguments of
//!   the condition), and on every arm's way into the `EndBranch`
//!   `oad_trace_CFval(k)` (1 for the true arm of a two-way branch, 0 for
//!   the other, the case value of a select arm) and `oad_trace_ebranch()`;
//! - for every `ForLoop` whose initialization, condition or update, and
//!   every `PreLoop` whose condition, reads an active variable: a counter
//!   set to 0 and `oad_trace_loop(line)` before the loop (with the traced
//!   arguments of initialization, condition and update), the counter
//!   incremented before the `EndLoop`, and `oad_trace_CFval(counter)`,
//!   `oad_trace_eloop()` on the loop's exit.
//!
//! Subscript values that are expressions are first assigned to integer
//! temporaries. Control flow that is not structured gets the statement
//! records only.

use rustc_hash::{FxHashMap, FxHashSet};
use xaif_cfrev::region::{parse, Region};
use xaif_linearize::absent::guard_absent;
use xaif_linearize::catalogue::Catalogue;
use xaif_linearize::context::{Ctx, Shape, ValueType};
use xaif_linearize::tangent::{Start, TransformError};
use xaif_linearize::temps::{add, declare, integer_temp, set_temp, value_ref, Names, TempKind};
use xaif_linearize::typechange::{convert_blocks, Converted};
use xaif_model::build::inlinable_call;
use xaif_model::{
    ArgValue, Attrs, Cfg, CfgEdge, CfgId, CfgItem, CfgVertex, EdgeId, Expr, ExprBuilder, ExprGraph,
    ExprVertexKind, NonInlinable, NonInlinableCatalogue, Program, RefGraph, Replacement, Routine,
    RoutineBody, RoutineId, ScopeId, Stmt, StmtId, StmtKind, VarRef, VertexId, VertexKind,
};

/// Options of the trace transformation (the reference driver's flags that
/// apply).
#[derive(Clone, Debug, Default)]
pub struct TraceOptions {
    /// `-p`: symbols forced passive.
    pub passive: Vec<String>,
    /// `-F`: how the front end decorated names (trace records print names
    /// without the decoration).
    pub decoration: xaif_model::Decoration,
    /// `-w`: routines without a body that have hand-written wrappers.
    pub wrappers: Vec<String>,
    /// `-r`: give routines with code the program's prefix.
    pub rename: bool,
    /// `-I`: every formal argument gets intent inout.
    pub all_inout: bool,
}

/// The template of the output's routines.
pub const TEMPLATE: &str = "tracing_subroutine_template";

/// Transforms a validated front-end program into trace XAIF.
pub fn trace(
    p: &Program,
    catalogue: &Catalogue,
    noninlinable: Option<&NonInlinableCatalogue>,
    options: &TraceOptions,
) -> Result<Program, TransformError> {
    // Calls that would convert an absent optional argument are made under
    // `if (present(f))` first (see `xaif_linearize::absent`).
    let guarded = guard_absent(p, &options.passive, options.decoration, &options.wrappers)?;
    let p = guarded.as_ref().unwrap_or(p);
    let Start {
        ctx,
        mut out,
        mut names,
        routines,
        ..
    } = Start::with_names(
        p,
        noninlinable,
        &options.passive,
        options.decoration,
        &options.wrappers,
    )?;
    let non_smooth: FxHashSet<String> = catalogue
        .intrinsics()
        .into_iter()
        .filter(|i| i.non_smooth)
        .map(|i| i.name.clone())
        .chain(
            noninlinable
                .into_iter()
                .flat_map(|c| c.entries.iter())
                .filter(|e| e.attrs().flag("nonSmooth", false))
                .map(|e: &NonInlinable| e.name().to_string()),
        )
        .collect();
    let mut blocks_made = 0usize;
    let items: Vec<RoutineId> = p.call_graph_routines().collect();
    for rid in items {
        let routine = &p.routines[rid];
        let RoutineBody::Graph(cfg) = routine.body else {
            continue;
        };
        let scope_id = routine
            .attrs
            .get("controlflowgraph_scope_id")
            .unwrap_or("1")
            .to_string();
        let scope = ctx.symbols.scope(&scope_id);
        let traced = match scope {
            Some(scope) if p.cfgs[cfg].vertex_ids().next().is_some() => {
                let converted = convert_blocks(&ctx, &mut out, &mut names, &routines, cfg, scope);
                let copy = copy_cfg(&mut out, cfg);
                let mut t = Tracer {
                    ctx: &ctx,
                    out: &mut out,
                    names: &mut names,
                    routines: &routines,
                    scope,
                    scope_id: scope_id.clone(),
                    non_smooth: &non_smooth,
                    decoration: options.decoration,
                    blocks: &mut blocks_made,
                };
                for (v, c) in &converted {
                    let original: Vec<StmtId> = c.iter().flat_map(Converted::stmts).collect();
                    t.out.vertices[*v].kind = VertexKind::BasicBlock(original);
                    let traced = t.block(c);
                    t.out.vertices[copy.1[v]].kind = VertexKind::BasicBlock(traced);
                }
                if let Some(regions) = parse(p, cfg) {
                    t.control_flow(cfg, copy.0, &regions, &copy.1);
                }
                copy.0
            }
            _ => out.cfgs.alloc(Cfg {
                routine: rid,
                items: Vec::new(),
            }),
        };
        let attrs = routine.replacement_list_attrs(TEMPLATE);
        let replacement = |ph: &str, cfg| Replacement {
            attrs: Attrs::new().with("placeholder", ph),
            cfg,
        };
        out.routines[rid] = Routine {
            attrs,
            arguments: routine.arguments.clone(),
            side_effects: Vec::new(),
            body: RoutineBody::Replacements(vec![replacement("1", cfg), replacement("2", traced)]),
        };
    }
    xaif_linearize::rename::finish_program(&mut out, p, options.all_inout, options.rename);
    Ok(out)
}

/// A copy of routine body `cfg` (vertices and edges in the same order)
/// and the map from the original's vertices to the copy's.
fn copy_cfg(out: &mut Program, cfg: CfgId) -> (CfgId, FxHashMap<VertexId, VertexId>) {
    let routine = out.cfgs[cfg].routine;
    let new = out.cfgs.alloc(Cfg {
        routine,
        items: Vec::new(),
    });
    let mut map = FxHashMap::default();
    let items = out.cfgs[cfg].items.clone();
    for item in items {
        let copied = match item {
            CfgItem::Vertex(v) => {
                let vertex = CfgVertex {
                    attrs: out.vertices[v].attrs.clone(),
                    cfg: new,
                    kind: out.vertices[v].kind.clone(),
                };
                let c = out.vertices.alloc(vertex);
                map.insert(v, c);
                CfgItem::Vertex(c)
            }
            CfgItem::Edge(e) => {
                let edge = CfgEdge {
                    attrs: out.edges[e].attrs.clone(),
                    cfg: new,
                };
                CfgItem::Edge(out.edges.alloc(edge))
            }
        };
        out.cfgs[new].items.push(copied);
    }
    (new, map)
}

/// The original body's vertices and edges in the traced copy.
struct Maps {
    vertices: FxHashMap<VertexId, VertexId>,
    edges: FxHashMap<EdgeId, EdgeId>,
}

struct Tracer<'a, 'p> {
    ctx: &'a Ctx<'p>,
    out: &'a mut Program,
    names: &'a mut Names,
    routines: &'a xaif_model::RoutineIndex,
    scope: ScopeId,
    scope_id: String,
    non_smooth: &'a FxHashSet<String>,
    decoration: xaif_model::Decoration,
    blocks: &'a mut usize,
}

fn int(v: i64) -> ArgValue {
    ArgValue::Constant(
        Attrs::new()
            .with("vertex_id", "1")
            .with("type", "integer")
            .with("value", v.to_string()),
    )
}

fn string(s: &str) -> ArgValue {
    ArgValue::Constant(
        Attrs::new()
            .with("vertex_id", "1")
            .with("type", "string")
            .with("value", s),
    )
}

fn line(attrs: &Attrs) -> i64 {
    attrs.int("lineNumber").unwrap_or(0)
}

fn has_array_access(g: &RefGraph) -> bool {
    !g.subscripts().is_empty()
}

impl Tracer<'_, '_> {
    fn call(&mut self, name: &str, args: Vec<ArgValue>, into: &mut Vec<StmtId>) {
        let id = self.names.statement("trace");
        into.push(add(self.out, inlinable_call(name, &id, args)));
    }

    /// The active variable references of expression `e` reachable from
    /// vertex `root` (subscripts aside).
    fn active_args(&self, e: &Expr, root: Option<usize>) -> Vec<VarRef> {
        let mut refs = Vec::new();
        let reach: Vec<usize> = match (root, ExprGraph::new(e)) {
            (Some(r), Some(g)) => {
                let mut seen = vec![false; e.vertices.len()];
                let mut stack = vec![r];
                let mut order = Vec::new();
                while let Some(n) = stack.pop() {
                    if std::mem::replace(&mut seen[n], true) {
                        continue;
                    }
                    order.push(n);
                    stack.extend(g.args[n].iter().rev());
                }
                order.sort_unstable();
                order
            }
            _ => (0..e.vertices.len()).collect(),
        };
        for n in reach {
            let v = &e.vertices[n];
            if let ExprVertexKind::VariableReference(g) = &v.kind {
                // The front end's activity, whatever the type (derived
                // types with active components count).
                let active = self.ctx.symbol_of(g).is_some_and(|s| {
                    self.ctx.p.symbols[s].is_active() && !self.ctx.forced_passive.contains(&s)
                });
                if active {
                    refs.push(VarRef {
                        attrs: v.attrs.clone(),
                        graph: g.clone(),
                    });
                }
            }
        }
        refs
    }

    /// The name a record shows for the variable of `g`.
    fn shown_name(&self, g: &RefGraph) -> String {
        match self.ctx.symbol_of(g) {
            Some(s) => {
                let sym = &self.ctx.p.symbols[s];
                if sym.attrs.flag("temp", false) {
                    sym.name().to_string()
                } else {
                    self.decoration.plain_name(sym.name(), false)
                }
            }
            None => g
                .symbol_ids()
                .map(|(_, n)| n.to_string())
                .unwrap_or_default(),
        }
    }

    /// `oad_trace_arg(name)`, the subscript values, `oad_trace_earg()`.
    fn trace_arg(&mut self, r: &VarRef, into: &mut Vec<StmtId>) {
        let name = self.shown_name(&r.graph);
        self.call("oad_trace_arg", vec![string(&name)], into);
        let mut indices: Vec<Expr> = Vec::new();
        for triplets in r.graph.subscripts() {
            for t in triplets {
                indices.extend(
                    [&t.index, &t.bound, &t.stride]
                        .into_iter()
                        .flatten()
                        .cloned(),
                );
            }
        }
        for e in indices {
            let value = self.index_value(e, into);
            self.call("oad_trace_index", vec![value], into);
        }
        self.call("oad_trace_earg", Vec::new(), into);
    }

    /// A subscript value as an argument: the constant, the variable, or a
    /// temporary assigned the expression.
    fn index_value(&mut self, e: Expr, into: &mut Vec<StmtId>) -> ArgValue {
        if e.vertices.len() == 1 {
            match &e.vertices[0].kind {
                ExprVertexKind::Constant => {
                    let value = e.vertices[0].attrs.get("value").unwrap_or("0");
                    if let Ok(v) = value.trim().parse::<i64>() {
                        return int(v);
                    }
                }
                ExprVertexKind::VariableReference(g) => {
                    return ArgValue::Variable(value_ref(&VarRef {
                        attrs: e.vertices[0].attrs.clone(),
                        graph: g.clone(),
                    }))
                }
                _ => {}
            }
        }
        let temp = integer_temp(self.out, self.names, self.scope);
        into.push(set_temp(
            self.out,
            self.names,
            "index_expression_assignment_for_tracing",
            &temp,
            e,
        ));
        ArgValue::Variable(value_ref(&temp))
    }

    /// The traced arguments of `refs` that are array elements or sections.
    fn traced_args(&mut self, refs: &[VarRef], into: &mut Vec<StmtId>) {
        for r in refs.iter().filter(|r| has_array_access(&r.graph)) {
            self.trace_arg(r, into);
        }
    }

    /// The traced statements of a basic block.
    fn block(&mut self, converted: &[Converted]) -> Vec<StmtId> {
        let mut out = Vec::new();
        for c in converted {
            match c {
                Converted::Kept(s) => self.assignment(*s, &mut out),
                Converted::Call {
                    original,
                    converted,
                } => {
                    let stmt = &self.ctx.p.stmts[*original];
                    let callee = stmt.attrs.get("symbol_id").unwrap_or("");
                    let has_body = self
                        .routines
                        .get(callee)
                        .is_some_and(|r| self.ctx.p.routines[r].has_body(self.ctx.p));
                    if !has_body {
                        out.extend(c.stmts());
                        continue;
                    }
                    let name = self.decoration.plain_name(callee, true);
                    self.call(
                        "oad_trace_call",
                        vec![string(&name), int(line(&stmt.attrs))],
                        &mut out,
                    );
                    if let StmtKind::SubroutineCall(args) = &stmt.kind {
                        let refs: Vec<VarRef> = args
                            .iter()
                            .filter_map(|a| match &a.value {
                                ArgValue::Variable(v) => Some(v.clone()),
                                ArgValue::Constant(_) => None,
                            })
                            .collect();
                        self.traced_args(&refs, &mut out);
                    }
                    out.extend(&converted.before);
                    out.push(converted.call);
                    out.extend(&converted.after);
                    self.call("oad_trace_ecall", Vec::new(), &mut out);
                }
            }
        }
        out
    }

    /// An assignment with the records of its non-smooth intrinsics, which
    /// are renamed to their tracing versions; any other statement as it is.
    fn assignment(&mut self, s: StmtId, out: &mut Vec<StmtId>) {
        let stmt = &self.ctx.p.stmts[s];
        let StmtKind::Assignment(a) = &stmt.kind else {
            out.push(s);
            return;
        };
        let hits: Vec<usize> = a
            .rhs
            .vertices
            .iter()
            .enumerate()
            .filter(|(_, v)| {
                matches!(v.kind, ExprVertexKind::Intrinsic)
                    && v.attrs
                        .get("name")
                        .is_some_and(|n| self.non_smooth.contains(n))
            })
            .map(|(i, _)| i)
            .collect();
        if hits.is_empty() {
            out.push(s);
            return;
        }
        let (attrs, mut a) = (stmt.attrs.clone(), a.clone());
        for &n in &hits {
            let name = a.rhs.vertices[n]
                .attrs
                .get("name")
                .unwrap_or("")
                .to_string();
            self.call(
                "oad_trace_call",
                vec![string(&name), int(line(&attrs))],
                out,
            );
            let refs = self.active_args(&a.rhs, Some(n));
            self.traced_args(&refs, out);
            self.call("oad_trace_ecall", Vec::new(), out);
        }
        for &n in &hits {
            let name = a.rhs.vertices[n]
                .attrs
                .get("name")
                .unwrap_or("")
                .to_string();
            a.rhs.vertices[n].attrs.set("name", format!("oad_{name}"));
        }
        out.push(add(
            self.out,
            Stmt {
                attrs,
                kind: StmtKind::Assignment(a),
            },
        ));
    }

    /// Inserts a basic block with `stmts` on edge `edge`: the edge now ends
    /// in the block, a new edge leads on to its old target.
    fn insert_on(&mut self, cfg: CfgId, edge: EdgeId, stmts: Vec<StmtId>) {
        *self.blocks += 1;
        let id = format!("_trc_{}", self.blocks);
        let v = self.out.vertices.alloc(CfgVertex {
            attrs: Attrs::new()
                .with("vertex_id", &id)
                .with("annotation", "_trc_")
                .with("scope_id", &self.scope_id),
            cfg,
            kind: VertexKind::BasicBlock(stmts),
        });
        let target = self.out.edges[edge]
            .attrs
            .get("target")
            .unwrap_or("")
            .to_string();
        self.out.edges[edge].attrs.set("target", &id);
        let e = self.out.edges.alloc(CfgEdge {
            attrs: Attrs::new()
                .with("edge_id", format!("_trc_e_{}", self.blocks))
                .with("source", &id)
                .with("target", target),
            cfg,
        });
        self.out.cfgs[cfg].items.push(CfgItem::Vertex(v));
        self.out.cfgs[cfg].items.push(CfgItem::Edge(e));
    }

    fn vertex_id(&self, v: VertexId) -> String {
        self.out.vertices[v]
            .attrs
            .get("vertex_id")
            .unwrap_or("")
            .to_string()
    }

    /// The edges of `cfg` as they are now that end in `v`.
    fn edges_into(&self, cfg: CfgId, v: VertexId) -> Vec<EdgeId> {
        let id = self.vertex_id(v);
        self.out.cfgs[cfg]
            .edge_ids()
            .filter(|e| self.out.edges[*e].attrs.get("target") == Some(id.as_str()))
            .collect()
    }

    /// The edges of `cfg` as they are now that start in `v`.
    fn edges_from(&self, cfg: CfgId, v: VertexId) -> Vec<EdgeId> {
        let id = self.vertex_id(v);
        self.out.cfgs[cfg]
            .edge_ids()
            .filter(|e| self.out.edges[*e].attrs.get("source") == Some(id.as_str()))
            .collect()
    }

    /// The edge of the copy by which an arm of a branch of the original
    /// (its first edge `first`, its regions) reaches the `EndBranch`.
    fn arm_exit(&self, cfg: CfgId, first: EdgeId, arm: &[Region], maps: &Maps) -> Option<EdgeId> {
        let single = |v: &VertexId| match self.edges_from(cfg, maps.vertices[v]).as_slice() {
            [e] => Some(*e),
            _ => None,
        };
        match arm.last() {
            None => Some(maps.edges[&first]),
            Some(Region::Block(v)) | Some(Region::Pass(v)) => single(v),
            Some(Region::Branch { end: Some(end), .. }) => single(end),
            Some(Region::Loop { exit_edge, .. }) => Some(maps.edges[exit_edge]),
            // Exits are parsed only for marked loops, never here.
            Some(Region::Branch { end: None, .. }) | Some(Region::Exit) => None,
        }
    }

    /// Branch and loop records on the traced copy `cfg` of a structured
    /// body whose regions (of the original) are `regions`; `map` takes the
    /// original's vertices to the copy's. Outer structures go first, so
    /// that records inserted later on the same edge sit inside them.
    fn control_flow(
        &mut self,
        original: CfgId,
        cfg: CfgId,
        regions: &[Region],
        map: &FxHashMap<VertexId, VertexId>,
    ) {
        let maps = Maps {
            vertices: map.clone(),
            // Edges of the copy were made in the original's order.
            edges: self.ctx.p.cfgs[original]
                .edge_ids()
                .zip(self.out.cfgs[cfg].edge_ids())
                .collect(),
        };
        let mut work: Vec<&Region> = regions.iter().rev().collect();
        while let Some(r) = work.pop() {
            match r {
                Region::Block(_) | Region::Pass(_) | Region::Exit => {}
                Region::Branch { end: None, .. } => {}
                Region::Branch {
                    vertex,
                    arms,
                    end: Some(end),
                    ..
                } => {
                    let condition = self.ctx.p.vertices[*vertex].kind.condition();
                    let refs = condition
                        .map(|c| self.active_args(c, None))
                        .unwrap_or_default();
                    if !refs.is_empty() {
                        self.branch(cfg, *vertex, arms, *end, &refs, &maps);
                    }
                    for (_, arm) in arms.iter().rev() {
                        work.extend(arm.iter().rev());
                    }
                }
                Region::Loop {
                    vertex,
                    body,
                    end,
                    exit_edge,
                    ..
                } => {
                    self.looped(cfg, *vertex, *end, maps.edges[exit_edge], &maps.vertices);
                    work.extend(body.iter().rev());
                }
            }
        }
    }

    fn branch(
        &mut self,
        cfg: CfgId,
        vertex: VertexId,
        arms: &[(EdgeId, Vec<Region>)],
        end: VertexId,
        refs: &[VarRef],
        maps: &Maps,
    ) {
        let (v, end_copy) = (maps.vertices[&vertex], maps.vertices[&end]);
        let mut stmts = Vec::new();
        let l = line(&self.ctx.p.vertices[vertex].attrs);
        self.call("oad_trace_branch", vec![int(l)], &mut stmts);
        if refs.iter().any(|r| has_array_access(&r.graph)) {
            self.call("oad_trace_condition", Vec::new(), &mut stmts);
            self.traced_args(refs, &mut stmts);
            self.call("oad_trace_econdition", Vec::new(), &mut stmts);
        }
        // The arms' ways into the EndBranch, before anything is inserted
        // on them.
        let two_way = arms.len() == 2;
        let exits: Vec<(EdgeId, i64)> = arms
            .iter()
            .filter_map(|(first, arm)| {
                let value = self.ctx.p.edges[*first].condition_value();
                let k = if two_way {
                    i64::from(value == Some(1))
                } else {
                    value.unwrap_or(0)
                };
                self.arm_exit(cfg, *first, arm, maps).map(|e| (e, k))
            })
            .collect();
        if let [e] = self.edges_into(cfg, v).as_slice() {
            self.insert_on(cfg, *e, stmts);
        }
        for (e, k) in exits {
            debug_assert!(self.edges_into(cfg, end_copy).contains(&e));
            let mut s = Vec::new();
            self.call("oad_trace_CFval", vec![int(k)], &mut s);
            self.call("oad_trace_ebranch", Vec::new(), &mut s);
            self.insert_on(cfg, e, s);
        }
    }

    fn looped(
        &mut self,
        cfg: CfgId,
        vertex: VertexId,
        end: VertexId,
        exit: EdgeId,
        map: &FxHashMap<VertexId, VertexId>,
    ) {
        let p = self.ctx.p;
        let (init, condition, update) = match &p.vertices[vertex].kind {
            VertexKind::ForLoop {
                init,
                condition,
                update,
            } => {
                let rhs = |s: &Option<StmtId>| match s.map(|s| &p.stmts[s].kind) {
                    Some(StmtKind::Assignment(a)) => self.active_args(&a.rhs, None),
                    _ => Vec::new(),
                };
                (
                    rhs(init),
                    condition
                        .as_ref()
                        .map(|c| self.active_args(c, None))
                        .unwrap_or_default(),
                    rhs(update),
                )
            }
            VertexKind::PreLoop(Some(c)) => (Vec::new(), self.active_args(c, None), Vec::new()),
            _ => return,
        };
        if init.is_empty() && condition.is_empty() && update.is_empty() {
            return;
        }
        let (v, end_copy) = (map[&vertex], map[&end]);
        let counter = declare(
            self.out,
            self.names,
            self.scope,
            TempKind::Symbol,
            ValueType::Integer,
            &Shape::SCALAR,
            false,
        )
        .var;
        let mut before = Vec::new();
        let mut zero = ExprBuilder::new();
        zero.constant("integer", "0");
        before.push(set_temp(
            self.out,
            self.names,
            "trace_loop_counter",
            &counter,
            zero.finish(),
        ));
        let l = line(&p.vertices[vertex].attrs);
        self.call("oad_trace_loop", vec![int(l)], &mut before);
        for (list, open, close) in [
            (
                &init,
                "oad_trace_initialization",
                "oad_trace_einitialization",
            ),
            (&condition, "oad_trace_condition", "oad_trace_econdition"),
            (&update, "oad_trace_update", "oad_trace_eupdate"),
        ] {
            if list.iter().any(|r| has_array_access(&r.graph)) {
                self.call(open, Vec::new(), &mut before);
                self.traced_args(list, &mut before);
                self.call(close, Vec::new(), &mut before);
            }
        }
        let end_id = self.vertex_id(end_copy);
        let entry: Vec<EdgeId> = self
            .edges_into(cfg, v)
            .into_iter()
            .filter(|e| self.out.edges[*e].attrs.get("source") != Some(end_id.as_str()))
            .collect();
        if let [e] = entry.as_slice() {
            self.insert_on(cfg, *e, before);
        }
        if let [e] = self.edges_into(cfg, end_copy).as_slice() {
            let mut b = ExprBuilder::new();
            let x = b.reference(&value_ref(&counter));
            let one = b.constant("integer", "1");
            b.intrinsic("add_scal_scal", &[x, one]);
            let inc = set_temp(
                self.out,
                self.names,
                "trace_loop_increment",
                &counter,
                b.finish(),
            );
            self.insert_on(cfg, *e, vec![inc]);
        }
        let mut after = Vec::new();
        self.call(
            "oad_trace_CFval",
            vec![ArgValue::Variable(value_ref(&counter))],
            &mut after,
        );
        self.call("oad_trace_eloop", Vec::new(), &mut after);
        self.insert_on(cfg, exit, after);
    }
}
