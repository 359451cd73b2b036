//! Control flow reversal (seed "control flow reversal" §4, Algorithms 2–5).
//!
//! From a structured CFG and, for each basic block, its taping and adjoint
//! forms, this builds:
//!
//! - the taping CFG (placeholder 2): the original structure with the taping
//!   blocks, a block `ctr = 0` before each loop, `ctr = ctr + 1` before its
//!   `EndLoop` and `push_i_s0(ctr)` on its exit edge, and on each edge into
//!   an `EndBranch` a block pushing the number of the arm taken;
//! - the adjoint CFG (placeholder 3): the regions in reverse order, each
//!   basic block in adjoint form, each branch an adjoint `Branch` on the
//!   popped arm number (Entry/Exit, Branch/EndBranch and Loop/EndLoop swap
//!   roles, Algorithm 2), each loop a `ForLoop` running the body's adjoint
//!   as many times as the popped count says.
//!
//! Every loop is reversed by counting ("anonymous"), which needs no
//! assumption about the loop's bounds; values the adjoint of a loop body
//! needs (indices) are taped by the basic blocks themselves.
//!
//! A CFG without this structure is reversed by block enumeration: the taping
//! CFG is the original one with each basic block pushing its number (and 0
//! after the entry); the adjoint pops numbers and dispatches to the adjoint
//! blocks in a `PreLoop` until it pops 0.

use rustc_hash::FxHashMap;
use xaif_model::{
    build::{assignment, inlinable_call},
    ArgValue, Attrs, Cfg, CfgEdge, CfgGraph, CfgId, CfgItem, CfgVertex, ExprBuilder, Program,
    RoutineId, StmtId, VarRef, VertexId, VertexKind,
};

use crate::explicit::{ExplicitLoop, LoopPlan, Step};
use crate::region::{parse, walk, Event, Region};

/// The taping and adjoint forms of one basic block.
#[derive(Clone, Debug, Default)]
pub struct BlockCode {
    /// Taping form.
    pub taping: Vec<StmtId>,
    /// Adjoint form.
    pub adjoint: Vec<StmtId>,
}

/// A source of fresh integer temporaries and statement ids.
pub trait Temps {
    /// A new integer scalar temporary.
    fn integer(&mut self, out: &mut Program) -> VarRef;
    /// A new statement id with the given stem.
    fn statement(&mut self, stem: &str) -> String;
}

/// The reversal of one CFG.
#[derive(Clone, Debug)]
pub struct Reversed {
    /// The taping CFG.
    pub taping: CfgId,
    /// The adjoint CFG.
    pub adjoint: CfgId,
    /// Whether the original was structured (enumeration otherwise).
    pub structured: bool,
}

/// Builds one CFG body in the output program.
pub struct CfgBuilder {
    /// The body.
    pub cfg: CfgId,
    edges: usize,
    vertices: usize,
    prefix: &'static str,
}

impl CfgBuilder {
    /// A new empty body of `routine`; new vertices are named
    /// `<prefix>N`.
    pub fn new(out: &mut Program, routine: RoutineId, prefix: &'static str) -> Self {
        let cfg = out.cfgs.alloc(Cfg {
            routine,
            items: Vec::new(),
        });
        CfgBuilder {
            cfg,
            edges: 0,
            vertices: 0,
            prefix,
        }
    }

    /// Adds a vertex with the given id.
    pub fn vertex_with_id(
        &mut self,
        out: &mut Program,
        id: &str,
        mut attrs: Attrs,
        kind: VertexKind,
    ) -> String {
        attrs.set("vertex_id", id);
        let v = out.vertices.alloc(CfgVertex {
            attrs,
            cfg: self.cfg,
            kind,
        });
        out.cfgs[self.cfg].items.push(CfgItem::Vertex(v));
        id.to_string()
    }

    /// Adds a vertex with a fresh id, annotated `_cfr_`.
    pub fn vertex(&mut self, out: &mut Program, attrs: Attrs, kind: VertexKind) -> String {
        self.vertices += 1;
        let id = format!("{}{}", self.prefix, self.vertices);
        let attrs = if attrs.has("annotation") {
            attrs
        } else {
            attrs.with("annotation", "_cfr_")
        };
        self.vertex_with_id(out, &id, attrs, kind)
    }

    /// Adds an edge, with a branch value when given.
    pub fn edge(&mut self, out: &mut Program, source: &str, target: &str, value: Option<i64>) {
        self.edges += 1;
        let mut attrs = Attrs::new()
            .with("edge_id", format!("_cfr_e_{}", self.edges))
            .with("source", source)
            .with("target", target);
        match value {
            Some(v) => {
                attrs.set("has_condition_value", "1");
                attrs.set("condition_value", v.to_string());
            }
            None => attrs.set("has_condition_value", "0"),
        }
        let e = out.edges.alloc(CfgEdge {
            attrs,
            cfg: self.cfg,
        });
        out.cfgs[self.cfg].items.push(CfgItem::Edge(e));
    }

    /// A basic block with `stmts` (scope `scope_id`).
    pub fn block(&mut self, out: &mut Program, scope_id: &str, stmts: Vec<StmtId>) -> String {
        self.vertex(
            out,
            Attrs::new().with("scope_id", scope_id),
            VertexKind::BasicBlock(stmts),
        )
    }
}

/// Dangling edges waiting for the next vertex.
type Pending = Vec<(String, Option<i64>)>;

fn connect(b: &mut CfgBuilder, out: &mut Program, pending: &mut Pending, to: &str) {
    for (from, value) in pending.drain(..) {
        b.edge(out, &from, to, value);
    }
}

struct Ctx<'a> {
    original: &'a Program,
    code: &'a FxHashMap<VertexId, BlockCode>,
    scope_id: String,
    plan: Option<&'a LoopPlan>,
}

impl Ctx<'_> {
    fn explicit(&self, v: VertexId) -> Option<&ExplicitLoop> {
        self.plan.and_then(|p| p.explicit.get(&v))
    }

    /// The original `vertex_id` of `v`.
    fn vertex_id(&self, v: VertexId) -> String {
        self.original.vertices[v]
            .attrs
            .get("vertex_id")
            .unwrap_or("1")
            .to_string()
    }

    /// The variables restored around outermost explicit loop `v`.
    fn restored(&self, v: VertexId) -> Vec<VarRef> {
        self.plan
            .map(|p| p.restored_refs(self.original, v))
            .unwrap_or_default()
    }
}

/// Copies expression `e` into `b`; returns the index of its result.
pub fn embed(b: &mut ExprBuilder, e: &xaif_model::Expr) -> usize {
    let g = xaif_model::ExprGraph::new(e).expect("gated expressions have a result");
    embed_at(b, e, &g, g.root)
}

/// Copies the subexpression of `e` rooted at vertex `at` into `b`.
///
/// The copy is a tree, as the front end writes expressions, unless the
/// tree would be much larger than the graph (a shared subexpression
/// repeated exponentially often); then shared vertices are copied once. An
/// explicit stack replaces recursion: expressions are flat in XAIF, so their
/// depth is bounded only by the file.
pub fn embed_at(
    b: &mut ExprBuilder,
    e: &xaif_model::Expr,
    g: &xaif_model::ExprGraph,
    at: usize,
) -> usize {
    // Size of the tree the subexpression unfolds to, saturating.
    let mut tree = vec![0usize; g.args.len()];
    for v in g.postorder() {
        tree[v] = g.args[v]
            .iter()
            .fold(1usize, |n, &a| n.saturating_add(tree[a]));
    }
    let share = tree[at] > 4 * g.args.len() + 64;
    let mut made: Vec<Option<usize>> = vec![None; g.args.len()];
    // Open vertices with the copies of their arguments so far.
    let mut stack: Vec<(usize, Vec<usize>)> = vec![(at, Vec::new())];
    loop {
        let Some((v, args)) = stack.last_mut() else {
            unreachable!("the root is returned when it is finished")
        };
        let v = *v;
        if let Some(&next) = g.args[v].get(args.len()) {
            match made[next] {
                Some(copy) if share => args.push(copy),
                _ => stack.push((next, Vec::new())),
            }
            continue;
        }
        let Some((_, args)) = stack.pop() else {
            unreachable!("the top exists")
        };
        let mut attrs = e.vertices[v].attrs.clone();
        attrs.discard("vertex_id");
        let copy = b.vertex(attrs, e.vertices[v].kind.clone());
        for (i, a) in args.iter().enumerate() {
            b.edge(*a, copy, i + 1);
        }
        made[v] = Some(copy);
        match stack.last_mut() {
            None => return copy,
            Some((_, parent_args)) => parent_args.push(copy),
        }
    }
}

fn int_const(b: &mut ExprBuilder, v: i64) -> usize {
    b.constant("integer", &v.to_string())
}

fn set_int(out: &mut Program, temps: &mut dyn Temps, var: &VarRef, value: i64) -> StmtId {
    let mut e = ExprBuilder::new();
    int_const(&mut e, value);
    let mut lhs = var.clone();
    lhs.attrs.discard("vertex_id");
    out.stmts
        .alloc(assignment(&temps.statement("cfr_init"), lhs, e.finish()))
}

fn increment(out: &mut Program, temps: &mut dyn Temps, var: &VarRef) -> StmtId {
    let mut e = ExprBuilder::new();
    let x = e.reference(var);
    let one = int_const(&mut e, 1);
    e.intrinsic("add_scal_scal", &[x, one]);
    let mut lhs = var.clone();
    lhs.attrs.discard("vertex_id");
    out.stmts.alloc(assignment(
        &temps.statement("cfr_increment"),
        lhs,
        e.finish(),
    ))
}

fn tape_call(out: &mut Program, temps: &mut dyn Temps, name: &str, arg: ArgValue) -> StmtId {
    let id = temps.statement(name);
    out.stmts.alloc(inlinable_call(name, &id, vec![arg]))
}

fn copy_vertex(
    b: &mut CfgBuilder,
    out: &mut Program,
    original: &Program,
    v: VertexId,
    kind: VertexKind,
) -> String {
    let attrs = original.vertices[v].attrs.clone();
    let id = attrs.get("vertex_id").unwrap_or("1").to_string();
    b.vertex_with_id(out, &id, attrs, kind)
}

/// The taping CFG of `regions`, appended after the dangling edges in
/// `pending` (which ends holding the edges that leave the last region).
/// Driven by [`walk`] with explicit stacks of open arms and loops.
fn taping_seq(
    c: &Ctx<'_>,
    b: &mut CfgBuilder,
    out: &mut Program,
    temps: &mut dyn Temps,
    regions: &[Region],
    pending: &mut Pending,
) {
    // Dangling edges of each open sequence; the outermost is `pending`.
    let mut pendings: Vec<Pending> = vec![std::mem::take(pending)];
    // Open branches: the copied vertex and the arms' closing blocks.
    let mut branches: Vec<(String, Pending)> = Vec::new();
    // Open loops: the copied loop vertex and its counter.
    let mut loops: Vec<(String, Option<VarRef>)> = Vec::new();
    walk(regions, false, |event| {
        let top = pendings.len() - 1;
        match event {
            Event::Block(v) => {
                let stmts = c.code.get(&v).map(|x| x.taping.clone()).unwrap_or_default();
                let id = copy_vertex(b, out, c.original, v, VertexKind::BasicBlock(stmts));
                connect(b, out, &mut pendings[top], &id);
                pendings[top].push((id, None));
            }
            Event::Pass(v) => {
                let id = copy_vertex(b, out, c.original, v, c.original.vertices[v].kind.clone());
                connect(b, out, &mut pendings[top], &id);
                pendings[top].push((id, None));
            }
            Event::BranchStart(Region::Branch { vertex, .. }) => {
                let id = copy_vertex(
                    b,
                    out,
                    c.original,
                    *vertex,
                    c.original.vertices[*vertex].kind.clone(),
                );
                connect(b, out, &mut pendings[top], &id);
                branches.push((id, Vec::new()));
            }
            Event::ArmStart { edge, .. } => {
                let Some((id, _)) = branches.last() else {
                    return;
                };
                pendings.push(vec![(id.clone(), c.original.edges[edge].condition_value())]);
            }
            Event::ArmEnd { index } => {
                let mut arm_pending = pendings.pop().unwrap_or_default();
                let marker = tape_call(
                    out,
                    temps,
                    "push_i_s0",
                    ArgValue::Constant(
                        Attrs::new()
                            .with("vertex_id", "1")
                            .with("type", "integer")
                            .with("value", (index + 1).to_string()),
                    ),
                );
                let push = b.block(out, &c.scope_id, vec![marker]);
                connect(b, out, &mut arm_pending, &push);
                if let Some((_, ends)) = branches.last_mut() {
                    ends.push((push, None));
                }
            }
            Event::BranchEnd(Region::Branch { end, .. }) => {
                let (_, mut ends) = branches.pop().unwrap_or_default();
                let end_id = copy_vertex(b, out, c.original, *end, VertexKind::EndBranch);
                connect(b, out, &mut ends, &end_id);
                pendings[top].push((end_id, None));
            }
            Event::LoopStart(Region::Loop {
                vertex, body_edge, ..
            }) => {
                // A loop that runs backwards in the adjoint needs no
                // counter; the values its adjoint reads again are pushed
                // once after the outermost explicit loop. Any other loop
                // counts its iterations and pushes the count on exit.
                let counter = c.explicit(*vertex).is_none().then(|| temps.integer(out));
                if let Some(ctr) = &counter {
                    let init = set_int(out, temps, ctr, 0);
                    let init_block = b.block(out, &c.scope_id, vec![init]);
                    connect(b, out, &mut pendings[top], &init_block);
                    pendings[top].push((init_block, None));
                }
                let loop_id = copy_vertex(
                    b,
                    out,
                    c.original,
                    *vertex,
                    c.original.vertices[*vertex].kind.clone(),
                );
                connect(b, out, &mut pendings[top], &loop_id);
                pendings.push(vec![(
                    loop_id.clone(),
                    c.original.edges[*body_edge].condition_value(),
                )]);
                loops.push((loop_id, counter));
            }
            Event::LoopEnd(Region::Loop {
                vertex,
                end,
                exit_edge,
                ..
            }) => {
                let mut body_pending = pendings.pop().unwrap_or_default();
                let top = pendings.len() - 1;
                let (loop_id, counter) = loops.pop().unwrap_or_default();
                if let Some(ctr) = &counter {
                    let inc = increment(out, temps, ctr);
                    let inc_block = b.block(out, &c.scope_id, vec![inc]);
                    connect(b, out, &mut body_pending, &inc_block);
                    body_pending.push((inc_block, None));
                }
                let end_id = copy_vertex(b, out, c.original, *end, VertexKind::EndLoop);
                connect(b, out, &mut body_pending, &end_id);
                b.edge(out, &end_id, &loop_id, None);
                let pushed: Vec<VarRef> = match &counter {
                    Some(ctr) => vec![ctr.clone()],
                    None => c.restored(*vertex),
                };
                let exit_value = c.original.edges[*exit_edge].condition_value();
                if pushed.is_empty() {
                    pendings[top].push((loop_id, exit_value));
                } else {
                    let pushes = pushed
                        .iter()
                        .map(|r| tape_call(out, temps, "push_i_s0", ArgValue::Variable(r.clone())))
                        .collect();
                    let push_block = b.block(out, &c.scope_id, pushes);
                    b.edge(out, &loop_id, &push_block, exit_value);
                    pendings[top].push((push_block, None));
                }
            }
            // The walk reports branches and loops with their own regions.
            Event::BranchStart(_)
            | Event::BranchEnd(_)
            | Event::LoopStart(_)
            | Event::LoopEnd(_) => {}
        }
    });
    *pending = pendings.pop().unwrap_or_default();
}

/// The adjoint CFG of `regions` (in reverse order), appended after the
/// dangling edges in `pending`. Driven by [`walk`] with explicit stacks of
/// open arms and loops.
fn adjoint_seq(
    c: &Ctx<'_>,
    b: &mut CfgBuilder,
    out: &mut Program,
    temps: &mut dyn Temps,
    regions: &[Region],
    pending: &mut Pending,
) {
    let mut pendings: Vec<Pending> = vec![std::mem::take(pending)];
    // Open branches: the adjoint branch vertex and the arms' loose ends.
    let mut branches: Vec<(String, Pending)> = Vec::new();
    // Open loops: the adjoint `ForLoop` vertex.
    let mut loops: Vec<String> = Vec::new();
    walk(regions, true, |event| {
        let top = pendings.len() - 1;
        match event {
            Event::Block(v) => {
                let stmts = c
                    .code
                    .get(&v)
                    .map(|x| x.adjoint.clone())
                    .unwrap_or_default();
                let mut attrs = c.original.vertices[v].attrs.clone();
                let id = attrs.get("vertex_id").unwrap_or("1").to_string();
                attrs.set("vertex_id", &id);
                let id = b.vertex_with_id(out, &id, attrs, VertexKind::BasicBlock(stmts));
                connect(b, out, &mut pendings[top], &id);
                pendings[top].push((id, None));
            }
            Event::Pass(_) => {}
            Event::BranchStart(Region::Branch { end, .. }) => {
                let marker = temps.integer(out);
                let pop = tape_call(out, temps, "pop_i_s0", ArgValue::Variable(marker.clone()));
                let pop_block = b.block(out, &c.scope_id, vec![pop]);
                connect(b, out, &mut pendings[top], &pop_block);
                let mut cond = ExprBuilder::new();
                cond.reference(&marker);
                let branch = b.vertex_with_id(
                    out,
                    &format!("_adj_{}", c.vertex_id(*end)),
                    Attrs::new().with("annotation", "_cfr_"),
                    VertexKind::Branch(Some(cond.finish())),
                );
                b.edge(out, &pop_block, &branch, None);
                branches.push((branch, Vec::new()));
            }
            Event::ArmStart { index, .. } => {
                let Some((branch, _)) = branches.last() else {
                    return;
                };
                pendings.push(vec![(branch.clone(), Some(index as i64 + 1))]);
            }
            Event::ArmEnd { .. } => {
                let arm_pending = pendings.pop().unwrap_or_default();
                if let Some((_, ends)) = branches.last_mut() {
                    ends.extend(arm_pending);
                }
            }
            Event::BranchEnd(Region::Branch { vertex, .. }) => {
                let (_, mut ends) = branches.pop().unwrap_or_default();
                let end_branch = b.vertex_with_id(
                    out,
                    &format!("_adj_{}", c.vertex_id(*vertex)),
                    Attrs::new().with("annotation", "_cfr_"),
                    VertexKind::EndBranch,
                );
                connect(b, out, &mut ends, &end_branch);
                pendings[top].push((end_branch, None));
            }
            Event::LoopStart(Region::Loop { vertex, end, .. }) => {
                let before = &mut pendings[top];
                let (header, reversal) = match c.explicit(*vertex) {
                    Some(h) => {
                        // Restore the invariants, then run the variable
                        // backwards.
                        let restored = c.restored(*vertex);
                        if !restored.is_empty() {
                            let pops = restored
                                .iter()
                                .rev()
                                .map(|r| {
                                    tape_call(out, temps, "pop_i_s0", ArgValue::Variable(r.clone()))
                                })
                                .collect();
                            let pop_block = b.block(out, &c.scope_id, pops);
                            connect(b, out, before, &pop_block);
                            before.push((pop_block, None));
                        }
                        (backwards(out, temps, h), "explicit")
                    }
                    None => {
                        // Pop the count and run the body that often.
                        let bound = temps.integer(out);
                        let k = temps.integer(out);
                        let pop =
                            tape_call(out, temps, "pop_i_s0", ArgValue::Variable(bound.clone()));
                        let pop_block = b.block(out, &c.scope_id, vec![pop]);
                        connect(b, out, before, &pop_block);
                        before.push((pop_block, None));
                        let init = set_int(out, temps, &k, 1);
                        let update = increment(out, temps, &k);
                        let mut cond = ExprBuilder::new();
                        let kv = cond.reference(&k);
                        let bv = cond.reference(&bound);
                        cond.vertex(
                            Attrs::new().with("name", "less_or_equal"),
                            xaif_model::ExprVertexKind::BooleanOperation,
                        );
                        cond.edge(kv, 2, 1);
                        cond.edge(bv, 2, 2);
                        ((init, cond.finish(), update), "anonymous")
                    }
                };
                let (init, condition, update) = header;
                let for_loop = b.vertex_with_id(
                    out,
                    &format!("_adj_{}", c.vertex_id(*end)),
                    Attrs::new()
                        .with("annotation", "_cfr_")
                        .with("reversal", reversal),
                    VertexKind::ForLoop {
                        init: Some(init),
                        condition: Some(condition),
                        update: Some(update),
                    },
                );
                connect(b, out, before, &for_loop);
                pendings.push(vec![(for_loop.clone(), Some(1))]);
                loops.push(for_loop);
            }
            Event::LoopEnd(Region::Loop { vertex, .. }) => {
                let mut body_pending = pendings.pop().unwrap_or_default();
                let top = pendings.len() - 1;
                let for_loop = loops.pop().unwrap_or_default();
                let end_loop = b.vertex_with_id(
                    out,
                    &format!("_adj_{}", c.vertex_id(*vertex)),
                    Attrs::new().with("annotation", "_cfr_"),
                    VertexKind::EndLoop,
                );
                connect(b, out, &mut body_pending, &end_loop);
                b.edge(out, &end_loop, &for_loop, None);
                pendings[top].push((for_loop, None));
            }
            Event::BranchStart(_)
            | Event::BranchEnd(_)
            | Event::LoopStart(_)
            | Event::LoopEnd(_) => {}
        }
    });
    *pending = pendings.pop().unwrap_or_default();
}

/// The header of the adjoint of an explicit loop: `i` from its last value
/// `e0 + c·((e1 − e0 + c)/c − 1)` back to `e0` in steps of `−c` (the
/// quotient truncates, so a loop that ran zero times starts beyond `e0` and
/// runs zero times again). A constant step gives a `>=` (`<=`) condition; a
/// run-time stride `s` gives Fortran's `DO i = last, e0, −s`, written
/// `i /= e0` with the trip count fixed on entry.
fn backwards(
    out: &mut Program,
    temps: &mut dyn Temps,
    h: &ExplicitLoop,
) -> (StmtId, xaif_model::Expr, StmtId) {
    let int = |b: &mut ExprBuilder, v: i64| b.constant("integer", &v.to_string());
    // The forward stride as an expression of `b` (a run-time `i = i - s`
    // is the stride `0 - s`).
    let stride = |b: &mut ExprBuilder| -> usize {
        match &h.step {
            Step::Constant(c) => int(b, *c),
            Step::Stride { expr, negated } => {
                let s = embed(b, expr);
                if *negated {
                    let zero = int(b, 0);
                    b.intrinsic("sub_scal_scal", &[zero, s])
                } else {
                    s
                }
            }
        }
    };
    let mut lhs = h.var.clone();
    lhs.attrs.discard("vertex_id");
    // Initialization.
    let mut b = ExprBuilder::new();
    let e1 = embed(&mut b, &h.bound);
    let e0 = embed(&mut b, &h.first);
    let span = b.intrinsic("sub_scal_scal", &[e1, e0]);
    let c = stride(&mut b);
    let widened = b.intrinsic("add_scal_scal", &[span, c]);
    let c = stride(&mut b);
    let trips = b.intrinsic("div_scal_scal", &[widened, c]);
    let one = int(&mut b, 1);
    let last_index = b.intrinsic("sub_scal_scal", &[trips, one]);
    let c = stride(&mut b);
    let offset = b.intrinsic("mul_scal_scal", &[c, last_index]);
    let e0 = embed(&mut b, &h.first);
    b.intrinsic("add_scal_scal", &[e0, offset]);
    let init = out.stmts.alloc(assignment(
        &temps.statement("cfr_init"),
        lhs.clone(),
        b.finish(),
    ));
    // Condition.
    let mut b = ExprBuilder::new();
    let i = b.reference(&h.var);
    let e0 = embed(&mut b, &h.first);
    let op = match h.step {
        Step::Constant(c) if c > 0 => "greater_or_equal",
        Step::Constant(_) => "less_or_equal",
        Step::Stride { .. } => "not_equal",
    };
    let v = b.vertex(
        Attrs::new().with("name", op),
        xaif_model::ExprVertexKind::BooleanOperation,
    );
    b.edge(i, v, 1);
    b.edge(e0, v, 2);
    let condition = b.finish();
    // Update: the opposite of the forward update.
    let mut b = ExprBuilder::new();
    let i = b.reference(&h.var);
    match &h.step {
        Step::Constant(c) => {
            let k = int(&mut b, c.abs());
            b.intrinsic(
                if *c > 0 {
                    "sub_scal_scal"
                } else {
                    "add_scal_scal"
                },
                &[i, k],
            );
        }
        Step::Stride { expr, negated } => {
            let s = embed(&mut b, expr);
            b.intrinsic(
                if *negated {
                    "add_scal_scal"
                } else {
                    "sub_scal_scal"
                },
                &[i, s],
            );
        }
    }
    let update = out
        .stmts
        .alloc(assignment(&temps.statement("cfr_update"), lhs, b.finish()));
    (init, condition, update)
}

/// What [`reverse`] reverses and how.
pub struct Reversal<'a> {
    /// The input program.
    pub original: &'a Program,
    /// The routine whose CFG is reversed (its new bodies belong to it).
    pub routine: RoutineId,
    /// The CFG.
    pub cfg: CfgId,
    /// Each basic block's taping and adjoint forms.
    pub code: &'a FxHashMap<VertexId, BlockCode>,
    /// The routine's scope id (for new blocks).
    pub scope_id: &'a str,
    /// Reverse by block enumeration even when the graph is structured.
    pub force_enumeration: bool,
    /// Which loops run backwards explicitly (`None`: every loop counted).
    pub plan: Option<&'a LoopPlan>,
}

/// Reverses `r.cfg` into two new bodies of `r.routine` in `out`.
pub fn reverse(r: &Reversal<'_>, out: &mut Program, temps: &mut dyn Temps) -> Reversed {
    let Reversal {
        original,
        routine,
        cfg,
        code,
        scope_id,
        force_enumeration,
        plan,
    } = *r;
    let c = Ctx {
        original,
        code,
        scope_id: scope_id.to_string(),
        plan,
    };
    let regions = if force_enumeration || original.cfgs[cfg].items.is_empty() {
        None
    } else {
        parse(original, cfg)
    };
    let structured_attr = original.routines[original.cfgs[cfg].routine]
        .attrs
        .flag("structured", true);
    match regions {
        Some(regions) if structured_attr => {
            let g = CfgGraph::new(original, cfg);
            let entry = g.entry.expect("structured graphs have an entry");
            let exit = g.exit.expect("structured graphs have an exit");
            // Taping.
            let mut tb = CfgBuilder::new(out, routine, "_aug_");
            let e = copy_vertex(&mut tb, out, original, entry, VertexKind::Entry);
            let mut pending = vec![(e, None)];
            taping_seq(&c, &mut tb, out, temps, &regions, &mut pending);
            let x = copy_vertex(&mut tb, out, original, exit, VertexKind::Exit);
            connect(&mut tb, out, &mut pending, &x);
            // Adjoint.
            let mut ab = CfgBuilder::new(out, routine, "_adj_v_");
            let e = ab.vertex(out, Attrs::new(), VertexKind::Entry);
            let mut pending = vec![(e, None)];
            adjoint_seq(&c, &mut ab, out, temps, &regions, &mut pending);
            let x = ab.vertex(out, Attrs::new(), VertexKind::Exit);
            connect(&mut ab, out, &mut pending, &x);
            Reversed {
                taping: tb.cfg,
                adjoint: ab.cfg,
                structured: true,
            }
        }
        _ => enumerate(&c, out, routine, cfg, temps),
    }
}

/// Block enumeration for unstructured graphs.
fn enumerate(
    c: &Ctx<'_>,
    out: &mut Program,
    routine: RoutineId,
    cfg: CfgId,
    temps: &mut dyn Temps,
) -> Reversed {
    let original = c.original;
    let g = CfgGraph::new(original, cfg);
    let mut numbers: Vec<(VertexId, i64)> = Vec::new();
    // Taping: the original graph, each block with adjoint work pushing its
    // number at its end, and 0 pushed after the entry.
    let mut tb = CfgBuilder::new(out, routine, "_aug_");
    for &v in &g.vertices {
        let vertex = &original.vertices[v];
        let kind = match &vertex.kind {
            VertexKind::BasicBlock(_) => {
                let code = c.code.get(&v).cloned().unwrap_or_default();
                let mut stmts = code.taping;
                if !code.adjoint.is_empty() {
                    let n = numbers.len() as i64 + 1;
                    numbers.push((v, n));
                    stmts.push(tape_call(
                        out,
                        temps,
                        "push_i_s0",
                        ArgValue::Constant(
                            Attrs::new()
                                .with("vertex_id", "1")
                                .with("type", "integer")
                                .with("value", n.to_string()),
                        ),
                    ));
                }
                VertexKind::BasicBlock(stmts)
            }
            k => k.clone(),
        };
        copy_vertex(&mut tb, out, original, v, kind);
    }
    let entry = g.entry.map(|e| {
        original.vertices[e]
            .attrs
            .get("vertex_id")
            .unwrap_or("1")
            .to_string()
    });
    let zero = tape_call(
        out,
        temps,
        "push_i_s0",
        ArgValue::Constant(
            Attrs::new()
                .with("vertex_id", "1")
                .with("type", "integer")
                .with("value", "0"),
        ),
    );
    let start = tb.block(out, &c.scope_id, vec![zero]);
    for &v in &g.vertices {
        for (e, t) in g.successors(v) {
            let s_id = original.vertices[v]
                .attrs
                .get("vertex_id")
                .unwrap_or("1")
                .to_string();
            let t_id = original.vertices[*t]
                .attrs
                .get("vertex_id")
                .unwrap_or("1")
                .to_string();
            let value = original.edges[*e].condition_value();
            if Some(&s_id) == entry.as_ref() {
                tb.edge(out, &s_id, &start, value);
                tb.edge(out, &start, &t_id, None);
            } else {
                tb.edge(out, &s_id, &t_id, value);
            }
        }
    }
    // Adjoint: pop; while (popped /= 0) { dispatch; pop }.
    let mut ab = CfgBuilder::new(out, routine, "_adj_v_");
    let which = temps.integer(out);
    let entry_v = ab.vertex(out, Attrs::new(), VertexKind::Entry);
    let pop = tape_call(out, temps, "pop_i_s0", ArgValue::Variable(which.clone()));
    let first_pop = ab.block(out, &c.scope_id, vec![pop]);
    ab.edge(out, &entry_v, &first_pop, None);
    let mut cond = ExprBuilder::new();
    let w = cond.reference(&which);
    let zero_c = int_const(&mut cond, 0);
    cond.vertex(
        Attrs::new().with("name", "not_equal"),
        xaif_model::ExprVertexKind::BooleanOperation,
    );
    cond.edge(w, 2, 1);
    cond.edge(zero_c, 2, 2);
    let while_v = ab.vertex(out, Attrs::new(), VertexKind::PreLoop(Some(cond.finish())));
    ab.edge(out, &first_pop, &while_v, None);
    // The dispatch; without numbered blocks there is none (a branch
    // without a case would be a dead end, docs/cfg-rules.md): the loop
    // body only pops.
    let dispatch = (!numbers.is_empty()).then(|| {
        let mut sel = ExprBuilder::new();
        sel.reference(&which);
        let branch = ab.vertex(out, Attrs::new(), VertexKind::Branch(Some(sel.finish())));
        ab.edge(out, &while_v, &branch, Some(1));
        let end_branch = ab.vertex(out, Attrs::new(), VertexKind::EndBranch);
        for (v, n) in &numbers {
            let stmts = c.code.get(v).map(|x| x.adjoint.clone()).unwrap_or_default();
            let mut attrs = original.vertices[*v].attrs.clone();
            let id = format!("_adj_{}", attrs.get("vertex_id").unwrap_or("1"));
            attrs.set("vertex_id", &id);
            let blk = ab.vertex_with_id(out, &id, attrs, VertexKind::BasicBlock(stmts));
            ab.edge(out, &branch, &blk, Some(*n));
            ab.edge(out, &blk, &end_branch, None);
        }
        end_branch
    });
    let pop = tape_call(out, temps, "pop_i_s0", ArgValue::Variable(which));
    let next_pop = ab.block(out, &c.scope_id, vec![pop]);
    match &dispatch {
        Some(end_branch) => ab.edge(out, end_branch, &next_pop, None),
        None => ab.edge(out, &while_v, &next_pop, Some(1)),
    }
    let end_loop = ab.vertex(out, Attrs::new(), VertexKind::EndLoop);
    ab.edge(out, &next_pop, &end_loop, None);
    ab.edge(out, &end_loop, &while_v, None);
    let exit_v = ab.vertex(out, Attrs::new(), VertexKind::Exit);
    ab.edge(out, &while_v, &exit_v, None);
    Reversed {
        taping: tb.cfg,
        adjoint: ab.cfg,
        structured: false,
    }
}
