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
use crate::region::{parse_with, walk, Event, Region};

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
pub(crate) type Pending = Vec<(String, Option<i64>)>;

pub(crate) fn connect(b: &mut CfgBuilder, out: &mut Program, pending: &mut Pending, to: &str) {
    for (from, value) in pending.drain(..) {
        b.edge(out, &from, to, value);
    }
}

/// The code of the marked loops of a routine (`--checkpoint-loop` and the
/// other loop marks), which [`crate::loopgen`] makes: the walks hand each
/// marked loop over when they reach it. A trait, so that the walks know
/// nothing of the generator that uses them.
pub(crate) trait MarkedLoops {
    /// Whether loop vertex `v` is marked.
    fn is_marked(&self, v: VertexId) -> bool;
    /// The marked loops' vertices, in order.
    fn vertices(&self) -> Vec<VertexId>;
    /// The taping sweep of marked loop `region`, after the dangling edges
    /// `pending` (which end holding the edges that leave it).
    fn taping(
        &self,
        c: &Ctx<'_>,
        b: &mut CfgBuilder,
        out: &mut Program,
        temps: &mut dyn Temps,
        region: &Region,
        pending: &mut Pending,
    );
    /// Its adjoint sweep.
    fn adjoint(
        &self,
        c: &Ctx<'_>,
        b: &mut CfgBuilder,
        out: &mut Program,
        temps: &mut dyn Temps,
        region: &Region,
        pending: &mut Pending,
    );
}

/// What the reversal of one CFG reads, and how it names copied vertices.
#[derive(Clone)]
pub(crate) struct Ctx<'a> {
    pub(crate) original: &'a Program,
    pub(crate) code: &'a FxHashMap<VertexId, BlockCode>,
    pub(crate) scope_id: String,
    plan: Option<&'a LoopPlan>,
    /// The marked loops and their code.
    pub(crate) marked: Option<&'a dyn MarkedLoops>,
    /// Prepended to the original vertex ids of copies: a checkpointed
    /// loop's body appears several times in one CFG.
    pub(crate) prefix: String,
    /// Copies made so far (each gets its own prefix).
    pub(crate) copies: &'a std::cell::Cell<usize>,
}

impl<'a> Ctx<'a> {
    fn explicit(&self, v: VertexId) -> Option<&ExplicitLoop> {
        self.plan.and_then(|p| p.explicit.get(&v))
    }

    /// The marked loops, if loop vertex `v` is one of them.
    pub(crate) fn marked_loop(&self, v: VertexId) -> Option<&'a dyn MarkedLoops> {
        self.marked.filter(|m| m.is_marked(v))
    }

    /// A context whose copies get a fresh vertex id prefix.
    pub(crate) fn fresh_copy(&self) -> Self {
        let n = self.copies.get() + 1;
        self.copies.set(n);
        Ctx {
            prefix: format!("_ckp{n}_"),
            ..self.clone()
        }
    }

    /// `kind` with statements of its own in a copy (statement ids with
    /// the copy's prefix appended), so that a checkpointed loop's body,
    /// which appears several times in one CFG, never repeats a statement
    /// id there; the kind itself outside copies.
    pub(crate) fn own_statements(&self, out: &mut Program, kind: VertexKind) -> VertexKind {
        if self.prefix.is_empty() {
            return kind;
        }
        let mut renamed = |s: StmtId| -> StmtId {
            let mut stmt = out.stmts[s].clone();
            if let Some(id) = stmt.attrs.get("statement_id") {
                let id = format!("{id}{}", self.prefix);
                stmt.attrs.set("statement_id", &id);
            }
            out.stmts.alloc(stmt)
        };
        match kind {
            VertexKind::BasicBlock(stmts) => {
                VertexKind::BasicBlock(stmts.into_iter().map(&mut renamed).collect())
            }
            VertexKind::ForLoop {
                init,
                condition,
                update,
            } => VertexKind::ForLoop {
                init: init.map(&mut renamed),
                condition,
                update: update.map(&mut renamed),
            },
            k => k,
        }
    }

    /// The `vertex_id` of the copy of `v`: the original one with the
    /// copy's prefix.
    pub(crate) fn vertex_id(&self, v: VertexId) -> String {
        let id = self.original.vertices[v]
            .attrs
            .get("vertex_id")
            .unwrap_or("1");
        format!("{}{id}", self.prefix)
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

pub(crate) fn int_const(b: &mut ExprBuilder, v: i64) -> usize {
    b.constant("integer", &v.to_string())
}

pub(crate) fn set_int(
    out: &mut Program,
    temps: &mut dyn Temps,
    var: &VarRef,
    value: i64,
) -> StmtId {
    let mut e = ExprBuilder::new();
    int_const(&mut e, value);
    let mut lhs = var.clone();
    lhs.attrs.discard("vertex_id");
    out.stmts
        .alloc(assignment(&temps.statement("cfr_init"), lhs, e.finish()))
}

pub(crate) fn increment(out: &mut Program, temps: &mut dyn Temps, var: &VarRef) -> StmtId {
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

pub(crate) fn tape_call(
    out: &mut Program,
    temps: &mut dyn Temps,
    name: &str,
    arg: ArgValue,
) -> StmtId {
    let id = temps.statement(name);
    out.stmts.alloc(inlinable_call(name, &id, vec![arg]))
}

/// A copy of vertex `v` of the original, with `kind`, under the
/// context's prefix.
pub(crate) fn copy_vertex(
    c: &Ctx<'_>,
    b: &mut CfgBuilder,
    out: &mut Program,
    v: VertexId,
    kind: VertexKind,
) -> String {
    let attrs = c.original.vertices[v].attrs.clone();
    let id = c.vertex_id(v);
    let kind = c.own_statements(out, kind);
    b.vertex_with_id(out, &id, attrs, kind)
}

/// The taping CFG of `regions`, appended after the dangling edges in
/// `pending` (which ends holding the edges that leave the last region).
/// Driven by [`walk`] with explicit stacks of open arms and loops.
pub(crate) fn taping_seq(
    c: &Ctx<'_>,
    b: &mut CfgBuilder,
    out: &mut Program,
    temps: &mut dyn Temps,
    regions: &[Region],
    pending: &mut Pending,
) {
    let mut exits = Pending::new();
    taping_seq_exits(c, b, out, temps, regions, pending, &mut exits);
    debug_assert!(exits.is_empty(), "exits only in marked loops' bodies");
}

/// [`taping_seq`] of a body with exits: the dangling edges of the arms
/// that leave the loop go to `exits` (after the push of their arm's
/// marker).
pub(crate) fn taping_seq_exits(
    c: &Ctx<'_>,
    b: &mut CfgBuilder,
    out: &mut Program,
    temps: &mut dyn Temps,
    regions: &[Region],
    pending: &mut Pending,
    exits: &mut Pending,
) {
    let mut w = TapingWalk {
        c,
        b,
        out,
        temps,
        pendings: vec![std::mem::take(pending)],
        branches: Vec::new(),
        loops: Vec::new(),
        skip: 0,
        exits: Pending::new(),
    };
    walk(regions, false, |event| w.event(event));
    *pending = w.pendings.pop().unwrap_or_default();
    exits.append(&mut w.exits);
}

/// The state of [`taping_seq`]'s walk.
struct TapingWalk<'w, 'a> {
    c: &'w Ctx<'a>,
    b: &'w mut CfgBuilder,
    out: &'w mut Program,
    temps: &'w mut dyn Temps,
    /// Dangling edges of each open sequence; the outermost is the
    /// caller's.
    pendings: Vec<Pending>,
    /// Open branches: the copied vertex, the arms' closing blocks and the
    /// arm being walked.
    branches: Vec<(String, Pending, usize)>,
    /// Open loops: the copied loop vertex and its counter.
    loops: Vec<(String, Option<VarRef>)>,
    /// Loops open inside a checkpointed loop, whose code
    /// [`crate::loopgen`] made.
    skip: usize,
    /// Dangling edges of arms that left the loop by an exit.
    exits: Pending,
}

impl TapingWalk<'_, '_> {
    fn top(&mut self) -> &mut Pending {
        self.pendings.last_mut().expect("the outermost sequence")
    }

    fn event(&mut self, event: Event<'_>) {
        if skipped(&mut self.skip, &event) {
            return;
        }
        match event {
            Event::Block(v) => self.block(v),
            Event::Pass(v) => {
                let kind = self.c.original.vertices[v].kind.clone();
                let id = copy_vertex(self.c, self.b, self.out, v, kind);
                connect(
                    self.b,
                    self.out,
                    self.pendings.last_mut().expect("open"),
                    &id,
                );
                self.top().push((id, None));
            }
            Event::BranchStart(Region::Branch { vertex, .. }) => self.branch_start(*vertex),
            Event::ArmStart { edge, index } => {
                let Some((id, _, arm)) = self.branches.last_mut() else {
                    return;
                };
                *arm = index;
                let value = self.c.original.edges[edge].condition_value();
                let id = id.clone();
                self.pendings.push(vec![(id, value)]);
            }
            Event::ArmEnd { index } => self.arm_end(index),
            Event::BranchEnd(Region::Branch { end, .. }) => {
                let (_, mut ends, _) = self.branches.pop().unwrap_or_default();
                match end {
                    Some(end) => {
                        let end_id =
                            copy_vertex(self.c, self.b, self.out, *end, VertexKind::EndBranch);
                        connect(self.b, self.out, &mut ends, &end_id);
                        self.top().push((end_id, None));
                    }
                    // A branch with an exit and no `EndBranch`: its arms
                    // that go on end with the sequence around it.
                    None => self.top().append(&mut ends),
                }
            }
            Event::Exit => self.exit(),
            Event::LoopStart(r @ Region::Loop { vertex, .. }) => {
                match self.c.marked_loop(*vertex) {
                    Some(m) => {
                        self.skip = 1;
                        let pending = self.pendings.last_mut().expect("open");
                        m.taping(self.c, self.b, self.out, self.temps, r, pending);
                    }
                    None => self.loop_start(r),
                }
            }
            Event::LoopEnd(r @ Region::Loop { .. }) => self.loop_end(r),
            // The walk reports branches and loops with their own regions.
            Event::BranchStart(_)
            | Event::BranchEnd(_)
            | Event::LoopStart(_)
            | Event::LoopEnd(_) => {}
        }
    }

    /// A basic block in taping form.
    fn block(&mut self, v: VertexId) {
        let stmts = self
            .c
            .code
            .get(&v)
            .map(|x| x.taping.clone())
            .unwrap_or_default();
        let id = copy_vertex(self.c, self.b, self.out, v, VertexKind::BasicBlock(stmts));
        connect(
            self.b,
            self.out,
            self.pendings.last_mut().expect("open"),
            &id,
        );
        self.top().push((id, None));
    }

    /// The branching vertex, copied.
    fn branch_start(&mut self, vertex: VertexId) {
        let kind = self.c.original.vertices[vertex].kind.clone();
        let id = copy_vertex(self.c, self.b, self.out, vertex, kind);
        connect(
            self.b,
            self.out,
            self.pendings.last_mut().expect("open"),
            &id,
        );
        self.branches.push((id, Vec::new(), 0));
    }

    /// An arm leaves the loop by an exit: the numbers of the arms it is in
    /// are pushed, innermost first, as their ends would have pushed them,
    /// and the iteration ends there (without the loop's update).
    fn exit(&mut self) {
        let mut arm = std::mem::take(self.top());
        if arm.is_empty() {
            return;
        }
        let markers: Vec<StmtId> = self
            .branches
            .iter()
            .rev()
            .map(|(_, _, index)| {
                tape_call(
                    self.out,
                    self.temps,
                    "push_i_s0",
                    ArgValue::Constant(
                        Attrs::new()
                            .with("vertex_id", "1")
                            .with("type", "integer")
                            .with("value", (index + 1).to_string()),
                    ),
                )
            })
            .collect();
        let push = self.b.block(self.out, &self.c.scope_id, markers);
        connect(self.b, self.out, &mut arm, &push);
        self.exits.push((push, None));
    }

    /// The end of arm `index`: a block pushing its number (none for an
    /// arm that ended by an exit).
    fn arm_end(&mut self, index: usize) {
        let mut arm_pending = self.pendings.pop().unwrap_or_default();
        if arm_pending.is_empty() {
            return;
        }
        let marker = tape_call(
            self.out,
            self.temps,
            "push_i_s0",
            ArgValue::Constant(
                Attrs::new()
                    .with("vertex_id", "1")
                    .with("type", "integer")
                    .with("value", (index + 1).to_string()),
            ),
        );
        let push = self.b.block(self.out, &self.c.scope_id, vec![marker]);
        connect(self.b, self.out, &mut arm_pending, &push);
        if let Some((_, ends, _)) = self.branches.last_mut() {
            ends.push((push, None));
        }
    }

    /// A loop vertex, copied, with its counter set to 0 before it.
    fn loop_start(&mut self, r: &Region) {
        let Region::Loop {
            vertex, body_edge, ..
        } = r
        else {
            return;
        };
        let c = self.c;
        // A loop that runs backwards in the adjoint needs no counter; the
        // values its adjoint reads again are pushed once after the
        // outermost explicit loop. Any other loop counts its iterations
        // and pushes the count on exit.
        let counter = c
            .explicit(*vertex)
            .is_none()
            .then(|| self.temps.integer(self.out));
        if let Some(ctr) = &counter {
            let init = set_int(self.out, self.temps, ctr, 0);
            let init_block = self.b.block(self.out, &c.scope_id, vec![init]);
            connect(
                self.b,
                self.out,
                self.pendings.last_mut().expect("open"),
                &init_block,
            );
            self.top().push((init_block, None));
        }
        let kind = c.original.vertices[*vertex].kind.clone();
        let loop_id = copy_vertex(c, self.b, self.out, *vertex, kind);
        connect(
            self.b,
            self.out,
            self.pendings.last_mut().expect("open"),
            &loop_id,
        );
        let value = c.original.edges[*body_edge].condition_value();
        self.pendings.push(vec![(loop_id.clone(), value)]);
        self.loops.push((loop_id, counter));
    }

    /// The loop's `EndLoop`, its counter's increment and the push of the
    /// count (or of the restored invariants) on its exit.
    fn loop_end(&mut self, r: &Region) {
        let Region::Loop {
            vertex,
            end,
            exit_edge,
            ..
        } = r
        else {
            return;
        };
        let c = self.c;
        let mut body_pending = self.pendings.pop().unwrap_or_default();
        let (loop_id, counter) = self.loops.pop().unwrap_or_default();
        if let Some(ctr) = &counter {
            let inc = increment(self.out, self.temps, ctr);
            let inc_block = self.b.block(self.out, &c.scope_id, vec![inc]);
            connect(self.b, self.out, &mut body_pending, &inc_block);
            body_pending.push((inc_block, None));
        }
        let end_id = copy_vertex(c, self.b, self.out, *end, VertexKind::EndLoop);
        connect(self.b, self.out, &mut body_pending, &end_id);
        self.b.edge(self.out, &end_id, &loop_id, None);
        let pushed: Vec<VarRef> = match &counter {
            Some(ctr) => vec![ctr.clone()],
            None => c.restored(*vertex),
        };
        let exit_value = c.original.edges[*exit_edge].condition_value();
        if pushed.is_empty() {
            self.top().push((loop_id, exit_value));
        } else {
            let pushes = pushed
                .iter()
                .map(|r| {
                    tape_call(
                        self.out,
                        self.temps,
                        "push_i_s0",
                        ArgValue::Variable(r.clone()),
                    )
                })
                .collect();
            let push_block = self.b.block(self.out, &c.scope_id, pushes);
            self.b.edge(self.out, &loop_id, &push_block, exit_value);
            self.top().push((push_block, None));
        }
    }
}

/// Whether `event` lies inside a checkpointed loop whose code is made
/// apart (`skip` counts the loops open there, the checkpointed one
/// included).
fn skipped(skip: &mut usize, event: &Event<'_>) -> bool {
    if *skip == 0 {
        return false;
    }
    match event {
        Event::LoopStart(_) => *skip += 1,
        Event::LoopEnd(_) => *skip -= 1,
        _ => {}
    }
    true
}

/// The adjoint CFG of `regions` (in reverse order), appended after the
/// dangling edges in `pending`. Driven by [`walk`] with explicit stacks of
/// open arms and loops.
pub(crate) fn adjoint_seq(
    c: &Ctx<'_>,
    b: &mut CfgBuilder,
    out: &mut Program,
    temps: &mut dyn Temps,
    regions: &[Region],
    pending: &mut Pending,
) {
    let mut w = AdjointWalk {
        c,
        b,
        out,
        temps,
        pendings: vec![std::mem::take(pending)],
        branches: Vec::new(),
        loops: Vec::new(),
        skip: 0,
    };
    walk(regions, true, |event| w.event(event));
    *pending = w.pendings.pop().unwrap_or_default();
}

/// The state of [`adjoint_seq`]'s walk.
struct AdjointWalk<'w, 'a> {
    c: &'w Ctx<'a>,
    b: &'w mut CfgBuilder,
    out: &'w mut Program,
    temps: &'w mut dyn Temps,
    pendings: Vec<Pending>,
    /// Open branches: the adjoint branch vertex and the arms' loose ends.
    branches: Vec<(String, Pending)>,
    /// Open loops: the adjoint `ForLoop` vertex.
    loops: Vec<String>,
    /// Loops open inside a checkpointed loop (see [`skipped`]).
    skip: usize,
}

impl AdjointWalk<'_, '_> {
    fn top(&mut self) -> &mut Pending {
        self.pendings.last_mut().expect("the outermost sequence")
    }

    fn event(&mut self, event: Event<'_>) {
        if skipped(&mut self.skip, &event) {
            return;
        }
        match event {
            Event::Block(v) => self.block(v),
            Event::Pass(_) => {}
            Event::BranchStart(Region::Branch { vertex, end, .. }) => {
                self.branch_start(*vertex, *end)
            }
            // The adjoint of an arm that left the loop begins with the
            // regions before the exit.
            Event::Exit => {}
            Event::ArmStart { index, .. } => {
                let Some((branch, _)) = self.branches.last() else {
                    return;
                };
                self.pendings
                    .push(vec![(branch.clone(), Some(index as i64 + 1))]);
            }
            Event::ArmEnd { .. } => {
                let arm_pending = self.pendings.pop().unwrap_or_default();
                if let Some((_, ends)) = self.branches.last_mut() {
                    ends.extend(arm_pending);
                }
            }
            Event::BranchEnd(Region::Branch { vertex, .. }) => {
                let (_, mut ends) = self.branches.pop().unwrap_or_default();
                let end_branch = self.b.vertex_with_id(
                    self.out,
                    &format!("_adj_{}", self.c.vertex_id(*vertex)),
                    Attrs::new().with("annotation", "_cfr_"),
                    VertexKind::EndBranch,
                );
                connect(self.b, self.out, &mut ends, &end_branch);
                self.top().push((end_branch, None));
            }
            Event::LoopStart(r @ Region::Loop { vertex, .. }) => {
                match self.c.marked_loop(*vertex) {
                    Some(m) => {
                        self.skip = 1;
                        let pending = self.pendings.last_mut().expect("open");
                        m.adjoint(self.c, self.b, self.out, self.temps, r, pending);
                    }
                    None => self.loop_start(r),
                }
            }
            Event::LoopEnd(Region::Loop { vertex, .. }) => self.loop_end(*vertex),
            Event::BranchStart(_)
            | Event::BranchEnd(_)
            | Event::LoopStart(_)
            | Event::LoopEnd(_) => {}
        }
    }

    /// A basic block in adjoint form.
    fn block(&mut self, v: VertexId) {
        let stmts = self
            .c
            .code
            .get(&v)
            .map(|x| x.adjoint.clone())
            .unwrap_or_default();
        let mut attrs = self.c.original.vertices[v].attrs.clone();
        let id = self.c.vertex_id(v);
        attrs.set("vertex_id", &id);
        let id = self
            .b
            .vertex_with_id(self.out, &id, attrs, VertexKind::BasicBlock(stmts));
        connect(
            self.b,
            self.out,
            self.pendings.last_mut().expect("open"),
            &id,
        );
        self.top().push((id, None));
    }

    /// The pop of the arm number and the adjoint branch on it (its id the
    /// `EndBranch`'s, or the branch's own for one without).
    fn branch_start(&mut self, vertex: VertexId, end: Option<VertexId>) {
        let c = self.c;
        let marker = self.temps.integer(self.out);
        let pop = tape_call(
            self.out,
            self.temps,
            "pop_i_s0",
            ArgValue::Variable(marker.clone()),
        );
        let pop_block = self.b.block(self.out, &c.scope_id, vec![pop]);
        connect(
            self.b,
            self.out,
            self.pendings.last_mut().expect("open"),
            &pop_block,
        );
        let mut cond = ExprBuilder::new();
        cond.reference(&marker);
        let id = match end {
            Some(end) => format!("_adj_{}", c.vertex_id(end)),
            None => format!("_adj_x{}", c.vertex_id(vertex)),
        };
        let branch = self.b.vertex_with_id(
            self.out,
            &id,
            Attrs::new().with("annotation", "_cfr_"),
            VertexKind::Branch(Some(cond.finish())),
        );
        self.b.edge(self.out, &pop_block, &branch, None);
        self.branches.push((branch, Vec::new()));
    }

    /// The adjoint loop's header: the explicit loop run backwards (its
    /// invariants restored first), or a count popped and run.
    fn loop_start(&mut self, r: &Region) {
        let Region::Loop { vertex, end, .. } = r else {
            return;
        };
        let c = self.c;
        // An explicit loop counted again (its variable stepped back at the
        // top of each iteration of the adjoint).
        let mut counting: Option<&ExplicitLoop> = None;
        let (header, reversal) = match c.explicit(*vertex) {
            Some(h) => {
                // Restore the invariants, then run the variable backwards.
                let restored = c.restored(*vertex);
                if !restored.is_empty() {
                    let pops = restored
                        .iter()
                        .rev()
                        .map(|r| {
                            tape_call(
                                self.out,
                                self.temps,
                                "pop_i_s0",
                                ArgValue::Variable(r.clone()),
                            )
                        })
                        .collect();
                    let pop_block = self.b.block(self.out, &c.scope_id, pops);
                    connect(
                        self.b,
                        self.out,
                        self.pendings.last_mut().expect("open"),
                        &pop_block,
                    );
                    self.top().push((pop_block, None));
                }
                match h.step {
                    Step::Constant(step) if crate::explicit::closed_form_fits(h) => {
                        (backwards(self.out, self.temps, h, step), "explicit")
                    }
                    _ => {
                        counting = Some(h);
                        (self.counted_backwards(r), "explicit")
                    }
                }
            }
            None => (self.counted_header(), "anonymous"),
        };
        let (init, condition, update) = header;
        let for_loop = self.b.vertex_with_id(
            self.out,
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
        connect(
            self.b,
            self.out,
            self.pendings.last_mut().expect("open"),
            &for_loop,
        );
        self.pendings.push(vec![(for_loop.clone(), Some(1))]);
        self.loops.push(for_loop);
        if let Some(h) = counting {
            let back = step_back(self.out, self.temps, h);
            let back = self.b.block(self.out, &c.scope_id, vec![back]);
            connect(
                self.b,
                self.out,
                self.pendings.last_mut().expect("open"),
                &back,
            );
            self.top().push((back, None));
        }
    }

    /// The header of an explicit loop reversed by counting its trips
    /// again: before it, `trips = 0` and the original loop's own header
    /// (a copy, statements of its own) around `trips = trips + 1`, which
    /// leaves the variable at the value the original loop left it; the
    /// header runs `k` from 1 to `trips`, and each iteration steps the
    /// variable back first ([`step_back`]). Every value computed is one
    /// the original loop computed, or a count of its trips: nothing
    /// overflows where the original does not, whatever its bounds.
    fn counted_backwards(&mut self, r: &Region) -> (StmtId, xaif_model::Expr, StmtId) {
        let Region::Loop {
            vertex,
            body_edge,
            exit_edge,
            ..
        } = r
        else {
            unreachable!("a loop region")
        };
        let c = self.c;
        let trips = self.temps.integer(self.out);
        let zero = set_int(self.out, self.temps, &trips, 0);
        let zero = self.b.block(self.out, &c.scope_id, vec![zero]);
        connect(
            self.b,
            self.out,
            self.pendings.last_mut().expect("open"),
            &zero,
        );
        let kind = match &c.original.vertices[*vertex].kind {
            VertexKind::ForLoop {
                init,
                condition,
                update,
            } => VertexKind::ForLoop {
                init: init.map(|s| restated(self.out, self.temps, s, "cfr_init")),
                condition: condition.clone(),
                update: update.map(|s| restated(self.out, self.temps, s, "cfr_update")),
            },
            k => k.clone(),
        };
        let attrs = Attrs::new()
            .with("annotation", "_cfr_")
            .with("reversal", "anonymous");
        let count = self.b.vertex(self.out, attrs, kind);
        self.b.edge(self.out, &zero, &count, None);
        let inc = increment(self.out, self.temps, &trips);
        let inc = self.b.block(self.out, &c.scope_id, vec![inc]);
        let body_value = c.original.edges[*body_edge].condition_value();
        self.b.edge(self.out, &count, &inc, body_value);
        let end = self.b.vertex(
            self.out,
            Attrs::new().with("annotation", "_cfr_"),
            VertexKind::EndLoop,
        );
        self.b.edge(self.out, &inc, &end, None);
        self.b.edge(self.out, &end, &count, None);
        let exit_value = c.original.edges[*exit_edge].condition_value();
        self.top().push((count, exit_value));
        let k = self.temps.integer(self.out);
        let init = set_int(self.out, self.temps, &k, 1);
        let update = increment(self.out, self.temps, &k);
        (init, at_most(&k, &trips), update)
    }

    /// Pops the count of a counted loop before it; its header runs `k`
    /// from 1 to the count.
    fn counted_header(&mut self) -> (StmtId, xaif_model::Expr, StmtId) {
        let bound = self.temps.integer(self.out);
        let k = self.temps.integer(self.out);
        let pop = tape_call(
            self.out,
            self.temps,
            "pop_i_s0",
            ArgValue::Variable(bound.clone()),
        );
        let pop_block = self.b.block(self.out, &self.c.scope_id, vec![pop]);
        connect(
            self.b,
            self.out,
            self.pendings.last_mut().expect("open"),
            &pop_block,
        );
        self.top().push((pop_block, None));
        let init = set_int(self.out, self.temps, &k, 1);
        let update = increment(self.out, self.temps, &k);
        (init, at_most(&k, &bound), update)
    }

    /// The adjoint loop's `EndLoop`.
    fn loop_end(&mut self, vertex: VertexId) {
        let mut body_pending = self.pendings.pop().unwrap_or_default();
        let for_loop = self.loops.pop().unwrap_or_default();
        let end_loop = self.b.vertex_with_id(
            self.out,
            &format!("_adj_{}", self.c.vertex_id(vertex)),
            Attrs::new().with("annotation", "_cfr_"),
            VertexKind::EndLoop,
        );
        connect(self.b, self.out, &mut body_pending, &end_loop);
        self.b.edge(self.out, &end_loop, &for_loop, None);
        self.top().push((for_loop, None));
    }
}

/// `k <= bound`.
pub(crate) fn at_most(k: &VarRef, bound: &VarRef) -> xaif_model::Expr {
    let mut cond = ExprBuilder::new();
    let kv = cond.reference(k);
    let bv = cond.reference(bound);
    cond.vertex(
        Attrs::new().with("name", "less_or_equal"),
        xaif_model::ExprVertexKind::BooleanOperation,
    );
    cond.edge(kv, 2, 1);
    cond.edge(bv, 2, 2);
    cond.finish()
}

/// The header of the adjoint of an explicit loop whose closed form fits
/// ([`crate::explicit::closed_form_fits`]: constant bounds and step `c`):
/// `i` from its last value `e0 + c·((e1 − e0 + c)/c − 1)` back to `e0` in
/// steps of `−c`, a `>=` (`<=`) condition (the quotient truncates, so a
/// loop that ran zero times starts beyond `e0` and runs zero times again).
fn backwards(
    out: &mut Program,
    temps: &mut dyn Temps,
    h: &ExplicitLoop,
    c: i64,
) -> (StmtId, xaif_model::Expr, StmtId) {
    let mut lhs = h.var.clone();
    lhs.attrs.discard("vertex_id");
    // Initialization.
    let mut b = ExprBuilder::new();
    let e1 = embed(&mut b, &h.bound);
    let e0 = embed(&mut b, &h.first);
    let span = b.intrinsic("sub_scal_scal", &[e1, e0]);
    let step = int_const(&mut b, c);
    let widened = b.intrinsic("add_scal_scal", &[span, step]);
    let step = int_const(&mut b, c);
    let trips = b.intrinsic("div_scal_scal", &[widened, step]);
    let one = int_const(&mut b, 1);
    let last_index = b.intrinsic("sub_scal_scal", &[trips, one]);
    let step = int_const(&mut b, c);
    let offset = b.intrinsic("mul_scal_scal", &[step, last_index]);
    let e0 = embed(&mut b, &h.first);
    b.intrinsic("add_scal_scal", &[e0, offset]);
    let init = out
        .stmts
        .alloc(assignment(&temps.statement("cfr_init"), lhs, b.finish()));
    // Condition.
    let mut b = ExprBuilder::new();
    let i = b.reference(&h.var);
    let e0 = embed(&mut b, &h.first);
    let op = if c > 0 {
        "greater_or_equal"
    } else {
        "less_or_equal"
    };
    let v = b.vertex(
        Attrs::new().with("name", op),
        xaif_model::ExprVertexKind::BooleanOperation,
    );
    b.edge(i, v, 1);
    b.edge(e0, v, 2);
    let condition = b.finish();
    (init, condition, step_back(out, temps, h))
}

/// A copy of statement `s` with a statement id of its own (stem `stem`).
fn restated(out: &mut Program, temps: &mut dyn Temps, s: StmtId, stem: &str) -> StmtId {
    let mut stmt = out.stmts[s].clone();
    stmt.attrs.set("statement_id", temps.statement(stem));
    out.stmts.alloc(stmt)
}

/// `i = i − c` (`i = i ∓ s` for a run-time stride `s`): the opposite of an
/// explicit loop's update, stepping its variable back to the value it had
/// in the iteration before.
fn step_back(out: &mut Program, temps: &mut dyn Temps, h: &ExplicitLoop) -> StmtId {
    step_back_of(out, temps, &h.var, &h.step, "cfr_update")
}

/// `v = v − c` (`v = v ∓ s` for a run-time stride `s`), a statement of
/// stem `stem`: one step of `step` back, for a loop's variable or a counter
/// that follows it.
pub(crate) fn step_back_of(
    out: &mut Program,
    temps: &mut dyn Temps,
    v: &VarRef,
    step: &Step,
    stem: &str,
) -> StmtId {
    let mut lhs = v.clone();
    lhs.attrs.discard("vertex_id");
    let mut b = ExprBuilder::new();
    let i = b.reference(v);
    match step {
        // (`-c` of the step -2^63 is no 64-bit integer: `i - c` keeps it.)
        Step::Constant(c) if *c < 0 && *c != i64::MIN => {
            let k = int_const(&mut b, -*c);
            b.intrinsic("add_scal_scal", &[i, k]);
        }
        Step::Constant(c) => {
            let k = int_const(&mut b, *c);
            b.intrinsic("sub_scal_scal", &[i, k]);
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
    out.stmts
        .alloc(assignment(&temps.statement(stem), lhs, b.finish()))
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
    /// Marked loops (`--checkpoint-loop` and the other loop marks), whose
    /// code [`crate::loopgen`] makes.
    pub(crate) marked: Option<&'a dyn MarkedLoops>,
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
        marked,
    } = *r;
    let copies = std::cell::Cell::new(0);
    let c = Ctx {
        original,
        code,
        scope_id: scope_id.to_string(),
        plan,
        marked,
        prefix: String::new(),
        copies: &copies,
    };
    let regions = if force_enumeration || original.cfgs[cfg].items.is_empty() {
        None
    } else {
        let exits = marked
            .map(|m| m.vertices().into_iter().collect())
            .unwrap_or_default();
        parse_with(original, cfg, &exits)
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
            let e = copy_vertex(&c, &mut tb, out, entry, VertexKind::Entry);
            let mut pending = vec![(e, None)];
            taping_seq(&c, &mut tb, out, temps, &regions, &mut pending);
            let x = copy_vertex(&c, &mut tb, out, exit, VertexKind::Exit);
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

/// A marked loop of a routine reversed by block enumeration: the loop,
/// its body structured, is one unit of the enumeration.
struct Unit {
    region: Region,
    /// The loop's vertices but the loop vertex (its body and `EndLoop`).
    inside: rustc_hash::FxHashSet<VertexId>,
    /// The unit's first and last vertex in the taping CFG.
    entry: String,
    exit: String,
}

/// The marked loops of `cfg` as units (their entries and exits not yet
/// made).
fn units(c: &Ctx<'_>, cfg: CfgId) -> FxHashMap<VertexId, Unit> {
    let mut out = FxHashMap::default();
    let Some(marked) = c.marked else {
        return out;
    };
    let all: rustc_hash::FxHashSet<VertexId> = marked.vertices().into_iter().collect();
    for v in marked.vertices() {
        let Some(region) = crate::region::parse_loop(c.original, cfg, v, &all) else {
            continue;
        };
        let mut inside = rustc_hash::FxHashSet::default();
        if let Region::Loop { body, end, .. } = &region {
            inside.insert(*end);
            walk(body, false, |e| match e {
                Event::Block(x) | Event::Pass(x) => {
                    inside.insert(x);
                }
                Event::BranchStart(Region::Branch { vertex, end, .. }) => {
                    inside.insert(*vertex);
                    if let Some(end) = end {
                        inside.insert(*end);
                    }
                }
                Event::LoopStart(Region::Loop { vertex, end, .. }) => {
                    inside.insert(*vertex);
                    inside.insert(*end);
                }
                _ => {}
            });
        }
        out.insert(
            v,
            Unit {
                region,
                inside,
                entry: String::new(),
                exit: String::new(),
            },
        );
    }
    out
}

/// Block enumeration for unstructured graphs.
fn enumerate(
    c: &Ctx<'_>,
    out: &mut Program,
    routine: RoutineId,
    cfg: CfgId,
    temps: &mut dyn Temps,
) -> Reversed {
    let g = CfgGraph::new(c.original, cfg);
    let mut units = units(c, cfg);
    // Taping: the original graph, each block with adjoint work pushing its
    // number at its end, and 0 pushed after the entry.
    let mut tb = CfgBuilder::new(out, routine, "_aug_");
    let numbers = enumerated_vertices(c, &g, &mut tb, out, temps, &mut units);
    enumerated_edges(c, &g, &mut tb, out, temps, &units);
    let adjoint = enumerated_adjoint(c, out, routine, temps, &numbers, &units);
    Reversed {
        taping: tb.cfg,
        adjoint,
        structured: false,
    }
}

/// The taping CFG's vertices: each block's taping code, with the push of
/// its number when its adjoint does anything; a checkpointed loop's taping
/// sweep and the push of its number. Returns the numbers.
fn enumerated_vertices(
    c: &Ctx<'_>,
    g: &CfgGraph,
    tb: &mut CfgBuilder,
    out: &mut Program,
    temps: &mut dyn Temps,
    units: &mut FxHashMap<VertexId, Unit>,
) -> Vec<(VertexId, i64)> {
    let original = c.original;
    let mut numbers: Vec<(VertexId, i64)> = Vec::new();
    let push_number = |out: &mut Program, temps: &mut dyn Temps, n: i64| {
        tape_call(
            out,
            temps,
            "push_i_s0",
            ArgValue::Constant(
                Attrs::new()
                    .with("vertex_id", "1")
                    .with("type", "integer")
                    .with("value", n.to_string()),
            ),
        )
    };
    for &v in &g.vertices {
        if units.values().any(|u| u.inside.contains(&v)) {
            continue;
        }
        if let Some(unit) = units.get_mut(&v) {
            let n = numbers.len() as i64 + 1;
            numbers.push((v, n));
            unit.entry = tb.block(out, &c.scope_id, Vec::new());
            let mut pending = vec![(unit.entry.clone(), None)];
            let cu = c.fresh_copy();
            if let Some(marked) = c.marked {
                marked.taping(&cu, tb, out, temps, &unit.region, &mut pending);
            }
            let push = push_number(out, temps, n);
            unit.exit = tb.block(out, &c.scope_id, vec![push]);
            connect(tb, out, &mut pending, &unit.exit);
            continue;
        }
        let vertex = &original.vertices[v];
        let kind = match &vertex.kind {
            VertexKind::BasicBlock(_) => {
                let code = c.code.get(&v).cloned().unwrap_or_default();
                let mut stmts = code.taping;
                if !code.adjoint.is_empty() {
                    let n = numbers.len() as i64 + 1;
                    numbers.push((v, n));
                    stmts.push(push_number(out, temps, n));
                }
                VertexKind::BasicBlock(stmts)
            }
            k => k.clone(),
        };
        copy_vertex(c, tb, out, v, kind);
    }
    numbers
}

/// The taping CFG's edges: the original ones, 0 pushed after the entry, a
/// checkpointed loop entered at its unit's entry and left from its exit.
fn enumerated_edges(
    c: &Ctx<'_>,
    g: &CfgGraph,
    tb: &mut CfgBuilder,
    out: &mut Program,
    temps: &mut dyn Temps,
    units: &FxHashMap<VertexId, Unit>,
) {
    let original = c.original;
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
    let id = |v: VertexId| {
        original.vertices[v]
            .attrs
            .get("vertex_id")
            .unwrap_or("1")
            .to_string()
    };
    for &v in &g.vertices {
        if units.values().any(|u| u.inside.contains(&v)) {
            continue;
        }
        for (e, t) in g.successors(v) {
            let (s_id, mut value) = (id(v), original.edges[*e].condition_value());
            let s_id = match units.get(&v) {
                Some(u) if u.inside.contains(t) => continue,
                Some(u) => {
                    value = None;
                    u.exit.clone()
                }
                None => s_id,
            };
            let t_id = match units.get(t) {
                Some(u) => u.entry.clone(),
                None => id(*t),
            };
            if Some(&s_id) == entry.as_ref() {
                tb.edge(out, &s_id, &start, value);
                tb.edge(out, &start, &t_id, None);
            } else {
                tb.edge(out, &s_id, &t_id, value);
            }
        }
    }
}

/// The adjoint CFG of block enumeration: pop; while (popped /= 0) {
/// dispatch to the adjoint of that block or checkpointed loop; pop }.
fn enumerated_adjoint(
    c: &Ctx<'_>,
    out: &mut Program,
    routine: RoutineId,
    temps: &mut dyn Temps,
    numbers: &[(VertexId, i64)],
    units: &FxHashMap<VertexId, Unit>,
) -> CfgId {
    let original = c.original;
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
        for (v, n) in numbers {
            if let Some(u) = units.get(v) {
                let mut pending = vec![(branch.clone(), Some(*n))];
                let cu = c.fresh_copy();
                if let Some(marked) = c.marked {
                    marked.adjoint(&cu, &mut ab, out, temps, &u.region, &mut pending);
                }
                connect(&mut ab, out, &mut pending, &end_branch);
                continue;
            }
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
    ab.cfg
}
