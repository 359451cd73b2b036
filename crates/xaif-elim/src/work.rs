//! The search engine's working graph: vertex and edge elimination that
//! computes costs but builds no expressions, with an undo journal.
//!
//! [`crate::ElimGraph`] builds the Jacobian accumulation expressions of one
//! elimination sequence. Searching for a good sequence needs millions of
//! trial eliminations whose expressions are thrown away, so the search runs
//! on this leaner graph and the winner is replayed once on an `ElimGraph`.
//! Everything that decides a cost is reproduced exactly: vertices are
//! renumbered by the same topological order (so lists sorted by index are
//! sorted by rank, and eliminations visit predecessors and successors in
//! the same order), edge values fold `±1` factors and constants by the
//! rules of [`crate::value`], and new run-time values get fresh ids so
//! that shared factors stay recognisable.
//!
//! Bookkeeping is incremental: every change of an edge updates the in-edge
//! counts of its target (units, constants, run-time values), the
//! propagation cost of the remainder under the [`Model`], the number of
//! distinct run-time factors and the non-trivial edge count, so the cost
//! of the current state is always known in O(1) (the lower bound,
//! [`Work::lower_bound`], takes one pass over the edges). Each change is
//! journaled;
//! [`Work::undo_to`] reverts to a mark, which is how the search measures a
//! candidate (apply, read, undo) and backtracks without cloning.

use crate::elim::ElimGraph;
use crate::graph::{VertexId, VertexKind};
use crate::result::{Direction, LcgTarget};
use crate::value::{Triviality, Val};

/// A working edge value: a unit with a sign, a folded constant, or a
/// run-time value (an original label or a product or sum made by the
/// elimination) with a pending sign.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum W {
    One(bool),
    Const(f64),
    Run(u32, bool),
}

impl W {
    fn constant(value: f64) -> W {
        if value == 1.0 {
            W::One(false)
        } else if value == -1.0 {
            W::One(true)
        } else {
            W::Const(value)
        }
    }

    fn cval(self) -> Option<f64> {
        match self {
            W::One(neg) => Some(if neg { -1.0 } else { 1.0 }),
            W::Const(c) => Some(c),
            W::Run(..) => None,
        }
    }

    fn negated(self) -> W {
        match self {
            W::One(neg) => W::One(!neg),
            W::Const(c) => W::Const(-c),
            W::Run(id, neg) => W::Run(id, !neg),
        }
    }

    fn sign(self) -> bool {
        match self {
            W::One(neg) | W::Run(_, neg) => neg,
            W::Const(_) => false,
        }
    }

    /// 0 unit, 1 constant, 2 run time, 3 the constant zero (propagated
    /// by nothing at all).
    pub(crate) fn class(self) -> usize {
        match self {
            W::One(_) => 0,
            W::Const(0.0) => 3,
            W::Const(_) => 1,
            W::Run(..) => 2,
        }
    }

    fn push_key(self) -> Option<usize> {
        match self {
            W::Run(id, neg) => Some(id as usize * 2 + usize::from(neg)),
            _ => None,
        }
    }
}

/// The cost model of the search, as integer weights, so that every
/// objective (lexicographic metrics included) is one additive number: the
/// operations of the accumulation plus the cost of propagating the
/// remainder graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Model {
    /// Per multiplication.
    pub w_mul: i64,
    /// Per addition or subtraction.
    pub w_add: i64,
    /// Per remainder edge by class (unit, constant, run time, zero).
    pub w_edge: [i64; 4],
    /// Subtracted once per target vertex with a unit in-edge (tangent mode
    /// sets such a target with a free copy).
    pub first_unit: i64,
    /// Per distinct run-time factor of the remainder (adjoint taping).
    pub w_push: i64,
    /// Per distinct negative run-time factor of the remainder: its sign
    /// is materialized by one negation.
    pub w_neg: i64,
    /// Final states must have no intermediate vertex left (`-M 0`).
    pub total: bool,
    /// Distinct run-time factors beyond this many cost `w_excess` more
    /// each (adjoint mode: taping more than the reference's chain must pay
    /// for itself).
    pub max_pushes: i64,
    /// Per distinct run-time factor beyond `max_pushes`.
    pub w_excess: i64,
    /// Whether the circuit bound ([`Work::circuit_bound`]) holds for this
    /// model, and for which propagation.
    pub circuit: Circuit,
}

/// Which derivative code the circuit bound ([`Work::circuit_bound`])
/// counts, if the model prices operations at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Circuit {
    /// A metric, not operations: no circuit bound.
    None,
    /// Tangent code: its inputs are the independents' tangents.
    Tangent,
    /// Adjoint code: its inputs are the dependents' adjoints and the
    /// independents' adjoints so far (which it increments).
    Adjoint,
}

impl Model {
    /// The lower bound beyond the operations spent: `phi` grounded
    /// run-time edges (whose source an independent reaches), of which
    /// `fixed_run` (and `fixed_const` constant edges) run from an
    /// independent to a dependent, which no elimination removes.
    ///
    /// Every operation merges at most two run-time values into one and
    /// folding never merges run-time values, so reaching a state with `f`
    /// run-time edges costs at least `(phi - f)` operations; a run-time
    /// edge left costs `w_edge[2]`, a constant one `w_edge[1]`, and the
    /// fixed edges stay (a constant one may turn into a run-time one).
    pub(crate) fn bound(&self, phi: i64, fixed_run: i64, fixed_const: i64) -> i64 {
        let op = self.w_mul.min(self.w_add);
        let run = self.w_edge[2];
        if run < op {
            return run * phi;
        }
        let extra = run - op;
        op * phi + (extra * fixed_run).max(extra.min(self.w_edge[1]) * (fixed_run + fixed_const))
    }
}

/// What one journal entry undoes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Entry {
    Linked(u32, u32),
    /// An edge removed; its cache is on the stack of removed edges' caches
    /// (kept apart so that every entry stays small).
    Unlinked(u32, u32, W),
    Changed(u32, u32, W),
    Removed(u32),
    /// An expression read run-time value `id` once more.
    ExprUse(u32),
}

/// Reusable memory of [`Work::circuit_bound`]: union-find parents and
/// stamps of what the current count has seen.
#[derive(Clone, Debug, Default)]
pub(crate) struct CircuitScratch {
    stamp: u32,
    parent: Vec<u32>,
    value_seen: Vec<u32>,
    /// A vertex with an out-edge carrying each run-time value seen.
    value_vertex: Vec<u32>,
    vertex_seen: Vec<u32>,
    source_seen: Vec<u32>,
    grounded: Vec<u32>,
    /// Run-time ids counted by the cut bound ([`Work::cut_bound`]).
    id_seen: Vec<u32>,
}

impl CircuitScratch {
    /// A fresh stamp, with room for `vertices` vertices and `values`
    /// run-time ids.
    fn next_stamp(&mut self, vertices: usize, values: usize) -> u32 {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.value_seen.iter_mut().for_each(|s| *s = 0);
            self.vertex_seen.iter_mut().for_each(|s| *s = 0);
            self.source_seen.iter_mut().for_each(|s| *s = 0);
            self.grounded.iter_mut().for_each(|s| *s = 0);
            self.id_seen.iter_mut().for_each(|s| *s = 0);
            self.stamp = 1;
        }
        if self.parent.len() < vertices {
            self.parent.resize(vertices, 0);
            self.vertex_seen.resize(vertices, 0);
            self.source_seen.resize(vertices, 0);
            self.grounded.resize(vertices, 0);
        }
        if self.value_seen.len() < values {
            self.value_seen.resize(values, 0);
            self.value_vertex.resize(values, 0);
            self.id_seen.resize(values, 0);
        }
        self.stamp
    }
}

/// Minimum vertex cuts of the working graph by unit-capacity maximum flow
/// on the split graph (vertex `v` is the arc `2v → 2v+1` of capacity one,
/// edges are arcs of unbounded capacity), reusing its memory.
struct VertexCut {
    /// Arcs: target, remaining capacity; arc `a ^ 1` is the reverse.
    to: Vec<u32>,
    cap: Vec<i32>,
    /// Arcs leaving each node.
    out: Vec<Vec<u32>>,
    /// The search's predecessor arc of each node.
    via: Vec<u32>,
}

impl VertexCut {
    fn new(n: usize) -> VertexCut {
        VertexCut {
            to: Vec::new(),
            cap: Vec::new(),
            out: vec![Vec::new(); 2 * n + 2],
            via: Vec::new(),
        }
    }

    fn arc(&mut self, a: usize, b: usize, cap: i32) {
        self.out[a].push(self.to.len() as u32);
        self.to.push(b as u32);
        self.cap.push(cap);
        self.out[b].push(self.to.len() as u32);
        self.to.push(a as u32);
        self.cap.push(0);
    }

    /// The fewest present vertices other than `excluded` (which no path
    /// may cross) that meet every path from a vertex of `sources` to a
    /// vertex where `sink` holds (both ends included, so a source or a
    /// sink may be in the cut), over edges that are not the constant zero
    /// if `nonzero`.
    fn max_flow(
        &mut self,
        work: &Work,
        sources: &[u32],
        sink: &dyn Fn(u32) -> bool,
        excluded: u32,
        nonzero: bool,
    ) -> i64 {
        let n = work.kinds.len();
        let (s, t) = (2 * n, 2 * n + 1);
        self.to.clear();
        self.cap.clear();
        self.out.iter_mut().for_each(Vec::clear);
        const INF: i32 = i32::MAX / 2;
        for v in 0..n {
            if !work.present[v] || v as u32 == excluded {
                continue;
            }
            self.arc(2 * v, 2 * v + 1, 1);
            if sink(v as u32) {
                self.arc(2 * v + 1, t, INF);
            }
            for &(w, val) in &work.succ[v] {
                if w != excluded && work.present[w as usize] && !(nonzero && val.class() == 3) {
                    self.arc(2 * v + 1, 2 * w as usize, INF);
                }
            }
        }
        for &v in sources {
            if v != excluded && work.present[v as usize] {
                self.arc(s, 2 * v as usize, INF);
            }
        }
        let mut total = 0i64;
        let nodes = 2 * n + 2;
        let mut queue: Vec<u32> = Vec::with_capacity(nodes);
        loop {
            self.via.clear();
            self.via.resize(nodes, u32::MAX);
            queue.clear();
            queue.push(s as u32);
            let mut head = 0;
            let mut reached = false;
            while head < queue.len() && !reached {
                let a = queue[head] as usize;
                head += 1;
                for &arc in &self.out[a] {
                    let b = self.to[arc as usize] as usize;
                    if self.cap[arc as usize] > 0 && b != s && self.via[b] == u32::MAX {
                        self.via[b] = arc;
                        if b == t {
                            reached = true;
                            break;
                        }
                        queue.push(b as u32);
                    }
                }
            }
            if !reached {
                return total;
            }
            // Every augmenting path crosses a vertex arc of capacity one.
            let mut b = t;
            while b != s {
                let arc = self.via[b] as usize;
                self.cap[arc] -= 1;
                self.cap[arc ^ 1] += 1;
                b = self.to[arc ^ 1] as usize;
            }
            total += 1;
        }
    }
}

/// Joins the trees of `a` and `b` in a union-find forest; whether they
/// were apart.
fn union(parent: &mut [u32], a: u32, b: u32) -> bool {
    let (a, b) = (find_root(parent, a), find_root(parent, b));
    if a != b {
        parent[a.max(b) as usize] = a.min(b);
    }
    a != b
}

/// The root of `v` in a union-find forest, halving paths on the way.
fn find_root(parent: &mut [u32], mut v: u32) -> u32 {
    while parent[v as usize] != v {
        let up = parent[parent[v as usize] as usize];
        parent[v as usize] = up;
        v = up;
    }
    v
}

/// A point to return to with [`Work::undo_to`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    journal: usize,
    unlinked: usize,
    mults: u32,
    adds: u32,
    fresh: u32,
}

/// One move of the search, on working indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Move {
    /// Eliminate an intermediate, or cut a dependent (back eliminate all
    /// its out-edges).
    Vertex(u32),
    /// Front elimination of an edge into an intermediate.
    Front(u32, u32),
    /// Back elimination of an edge out of a non-independent.
    Back(u32, u32),
    /// Pre-routing of the edge `(i,k)` about the pivot edge `(j,k)`:
    /// `Pre(i, k, j)` (`-R`).
    Pre(u32, u32, u32),
    /// Post-routing of the edge `(i,k)` about the pivot edge `(i,j)`:
    /// `Post(i, k, j)` (`-R`).
    Post(u32, u32, u32),
}

impl Move {
    /// The same move with every vertex renamed by `f`.
    pub(crate) fn map(self, f: impl Fn(u32) -> u32) -> Move {
        match self {
            Move::Vertex(v) => Move::Vertex(f(v)),
            Move::Front(i, j) => Move::Front(f(i), f(j)),
            Move::Back(j, k) => Move::Back(f(j), f(k)),
            Move::Pre(i, k, j) => Move::Pre(f(i), f(k), f(j)),
            Move::Post(i, k, j) => Move::Post(f(i), f(k), f(j)),
        }
    }

    /// The vertices the move names.
    pub(crate) fn vertices(self) -> impl Iterator<Item = u32> {
        let (a, b, c) = match self {
            Move::Vertex(v) => (v, u32::MAX, u32::MAX),
            Move::Front(i, j) | Move::Back(i, j) => (i, j, u32::MAX),
            Move::Pre(i, k, j) | Move::Post(i, k, j) => (i, k, j),
        };
        [a, b, c].into_iter().filter(|&v| v != u32::MAX)
    }
}

/// Reusable memory of [`Work::state_key`]: the canonical number given to
/// each run-time id in the current key (valid where the stamp matches).
#[derive(Clone, Debug, Default)]
pub(crate) struct KeyScratch {
    stamp: u32,
    seen: Vec<(u32, u32)>,
}

/// One operation on an [`ElimGraph`] replaying a [`Move`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Replay {
    Eliminate(LcgTarget),
    Pre(VertexId, VertexId, VertexId),
    Post(VertexId, VertexId, VertexId),
}

impl Replay {
    /// Performs the operation.
    pub(crate) fn on(self, graph: &mut ElimGraph) -> Result<(), crate::ElimError> {
        use crate::heuristics::EliminationState;
        match self {
            Replay::Eliminate(t) => graph.eliminate(&t),
            Replay::Pre(i, k, j) => graph.preroute(i, k, j),
            Replay::Post(i, k, j) => graph.postroute(i, k, j),
        }
    }
}

/// The working graph.
#[derive(Clone, Debug)]
pub(crate) struct Work {
    kinds: Vec<VertexKind>,
    /// Working index (topological rank) to original vertex.
    orig: Vec<VertexId>,
    present: Vec<bool>,
    succ: Vec<Vec<(u32, W)>>,
    pred: Vec<Vec<(u32, W)>>,
    pub(crate) model: Model,
    /// Per value shape (unit, constant, run time): 1 if such an edge is
    /// non-trivial under `triviality`.
    nontrivial_weight: [i64; 3],
    pub(crate) mults: u32,
    pub(crate) adds: u32,
    fresh: u32,
    counts: Vec<[u16; 4]>,
    prop: i64,
    /// Uses of each run-time factor (by `W::push_key`) on edges.
    uses: Vec<u32>,
    distinct: i64,
    /// Ids of run-time values that appear negated on some edge.
    neg_ids: Vec<u32>,
    /// Ids below this are original labels; the others accumulated values.
    acc_base: u32,
    /// Per run-time id: whether its expression is a subtraction.
    sub_top: Vec<bool>,
    /// Per run-time id: reads by later expressions.
    expr_use: Vec<u32>,
    /// Edges from independents to dependents by class (never eliminated).
    fixed: [i64; 4],
    nontrivial: i64,
    intermediates: usize,
    edges: usize,
    journal: Vec<Entry>,
    /// The cache slots of the edges of the journal's `Unlinked` entries,
    /// in the same order (kept, so that undoing restores them as they
    /// were without copying).
    unlinked: Vec<u32>,
    scratch: Vec<u32>,
    /// The work list of [`Work::prune`], reused.
    prune_stack: Vec<u32>,
    /// Per-edge cache slots in `caches`, parallel to `succ` (an edge's
    /// measures stay in their slot while it moves in the lists).
    slots: Vec<Vec<u32>>,
    /// Cached per-edge measures, by slot.
    caches: Vec<EdgeCache>,
    /// Slots of no edge and of no journal entry.
    free_slots: Vec<u32>,
    /// When each vertex's lists last changed (see [`EdgeCache`]).
    touched: Vec<u32>,
    /// When each vertex's successor list last changed.
    touched_out: Vec<u32>,
    /// When each vertex's predecessor list last changed.
    touched_in: Vec<u32>,
    epoch: u32,
    /// Set while a move is tried and taken back: the state after is the
    /// state before, so no cache is invalidated.
    probing: bool,
    /// Cached cost change of eliminating each vertex: (stamp, change).
    vertex_cost: Vec<(u32, Option<i64>)>,
    /// Moves measured by [`Work::probe_cost`] so far.
    pub(crate) probes: u64,
    /// Changes of state outside probes (moves applied, undone).
    version: u64,
    /// Per intermediate: the cost after its elimination (or an equivalent
    /// edge elimination, see [`Work::same_as_vertex`]) as last probed,
    /// and `version + 1` then (0: never).
    probed: Vec<(u64, Option<i64>)>,
    /// Memory of [`Work::circuit_bound`] (which only reads the graph).
    circuit_scratch: std::cell::RefCell<CircuitScratch>,
    /// See [`Work::find_constant_reconvergence`]: when set, the bounds
    /// count only what run-time values make certain.
    constant_reconvergence: bool,
    /// See [`Work::enable_cut_floor`]: the cut sums of the state it was
    /// computed in, `(run, all, ids)`, when the cut bound is on.
    cut_floor: Option<(i64, i64, i64)>,
    /// Whether no edge carried the constant zero when the cut bound was
    /// turned on (see [`Work::cut_bound`]).
    cut_zero_free: bool,
}

/// Measures of the front and back elimination of one edge, valid while
/// neither endpoint's lists changed since `stamp` (an epoch of the
/// working graph; 0 never is).
#[derive(Clone, Copy, Debug)]
pub(crate) struct EdgeCache {
    /// Which scarcity classes the incremental chain runner counts this
    /// edge in (bit 0 front reducing, 1 front keeping, 2 back reducing, 3
    /// back keeping).
    pub counted: u8,
    /// When `front` and `front_fill` were measured.
    pub stamp: u32,
    /// When `back` and `back_fill` were measured.
    pub back_stamp: u32,
    pub front: i32,
    pub back: i32,
    pub front_fill: i32,
    pub back_fill: i32,
    /// When the two cost changes below were measured.
    pub cost_stamp: u32,
    /// Cost changes of front and back elimination ([`UNKNOWN`]: not
    /// measured or not final).
    pub front_cost: i64,
    pub back_cost: i64,
}

/// An unmeasured cost change in [`EdgeCache`].
const UNKNOWN: i64 = i64::MIN;

impl Default for EdgeCache {
    fn default() -> EdgeCache {
        EdgeCache {
            counted: 0,
            stamp: 0,
            back_stamp: 0,
            front: 0,
            back: 0,
            front_fill: -1,
            back_fill: -1,
            cost_stamp: 0,
            front_cost: UNKNOWN,
            back_cost: UNKNOWN,
        }
    }
}

impl Work {
    /// The working graph of an elimination graph as built (parallel edges
    /// merged, dead intermediates removed), with the operations spent so
    /// far counted.
    pub(crate) fn new(graph: &ElimGraph, model: Model, triviality: Triviality) -> Work {
        let kinds_in = graph.kinds();
        let ranks = graph.ranks();
        let n = kinds_in.len();
        let mut orig = vec![VertexId(0); n];
        for (v, &r) in ranks.iter().enumerate() {
            orig[r as usize] = VertexId(v as u32);
        }
        let mut max_var = 0u32;
        let mut max_acc = 0u32;
        for v in 0..n {
            for &k in graph.successors(VertexId(v as u32)) {
                match graph.value(VertexId(v as u32), k) {
                    Some(Val::Var { var, .. }) => max_var = max_var.max(var.0 + 1),
                    Some(Val::Acc { acc, .. }) => max_acc = max_acc.max(acc.0 + 1),
                    _ => {}
                }
            }
        }
        let acc_base = max_var;
        let convert = |val: Val| match val {
            Val::One { negative } => W::One(negative),
            Val::Const(c) => W::Const(c),
            Val::Var { var, negative } => W::Run(var.0, negative),
            Val::Acc { acc, negative } => W::Run(acc_base + acc.0, negative),
        };
        let ops = graph.ops();
        let mut work = Work {
            kinds: orig.iter().map(|v| kinds_in[v.index()]).collect(),
            present: orig.iter().map(|&v| graph.contains_vertex(v)).collect(),
            orig,
            succ: vec![Vec::new(); n],
            pred: vec![Vec::new(); n],
            model,
            nontrivial_weight: [
                crate::value::Shape::One,
                crate::value::Shape::Constant,
                crate::value::Shape::Runtime,
            ]
            .map(|shape| i64::from(triviality.shape_is_nontrivial(shape))),
            mults: ops.multiplicative() as u32,
            adds: ops.additive() as u32,
            fresh: acc_base + max_acc,
            counts: vec![[0; 4]; n],
            prop: 0,
            uses: Vec::new(),
            distinct: 0,
            neg_ids: Vec::new(),
            acc_base,
            sub_top: Vec::new(),
            expr_use: Vec::new(),
            fixed: [0; 4],
            nontrivial: 0,
            intermediates: 0,
            edges: 0,
            journal: Vec::new(),
            unlinked: Vec::new(),
            scratch: Vec::new(),
            prune_stack: Vec::new(),
            slots: vec![Vec::new(); n],
            caches: Vec::new(),
            free_slots: Vec::new(),
            touched: vec![0; n],
            touched_out: vec![0; n],
            touched_in: vec![0; n],
            epoch: 1,
            probing: false,
            vertex_cost: vec![(0, None); n],
            probes: 0,
            version: 0,
            probed: vec![(0, None); n],
            circuit_scratch: Default::default(),
            constant_reconvergence: false,
            cut_floor: None,
            cut_zero_free: false,
        };
        for r in 0..n {
            if work.present[r] && work.kinds[r] == VertexKind::Intermediate {
                work.intermediates += 1;
            }
        }
        let size = work.fresh as usize + 1;
        work.sub_top = vec![false; size];
        work.expr_use = vec![0; size];
        for (acc, (sub, uses)) in graph.acc_facts().into_iter().enumerate() {
            let id = (acc_base + acc as u32) as usize;
            if id < size {
                work.sub_top[id] = sub;
                work.expr_use[id] = uses;
            }
        }
        for r in 0..n {
            let v = work.orig[r];
            for &k in graph.successors(v) {
                if let Some(val) = graph.value(v, k) {
                    work.link(r as u32, ranks[k.index()], convert(val));
                }
            }
        }
        work.journal.clear();
        work.unlinked.clear();
        work.constant_reconvergence = work.find_constant_reconvergence();
        work
    }

    /// Whether two different paths of unit and constant edges join the
    /// same two vertices. Only then can constants cancel (`1 + (-1)`)
    /// into the constant zero, which carries nothing; eliminations never
    /// add such paths (a new edge stands for paths that were there).
    fn find_constant_reconvergence(&self) -> bool {
        let n = self.kinds.len();
        let mut paths = vec![0u8; n];
        for u in 0..n {
            if !self.succ[u].iter().any(|e| !matches!(e.1, W::Run(..))) {
                continue;
            }
            paths.iter_mut().for_each(|p| *p = 0);
            paths[u] = 1;
            // Working indices are topological ranks.
            for v in u..n {
                let here = paths[v];
                if here == 0 {
                    continue;
                }
                for &(w, val) in &self.succ[v] {
                    if !matches!(val, W::Run(..)) {
                        let p = &mut paths[w as usize];
                        *p = (*p + here).min(2);
                        if *p >= 2 {
                            return true;
                        }
                    }
                }
            }
        }
        false
    }

    /// The vertex of the graph as built at working index `v`.
    pub(crate) fn vertex_of(&self, v: u32) -> VertexId {
        self.orig[v as usize]
    }

    /// The working index of a vertex of the graph as built.
    pub(crate) fn rank_of(&self, v: VertexId) -> u32 {
        self.orig
            .iter()
            .position(|&o| o == v)
            .map_or(u32::MAX, |r| r as u32)
    }

    /// Number of vertices (present or not).
    pub(crate) fn len(&self) -> usize {
        self.kinds.len()
    }

    pub(crate) fn kind(&self, v: u32) -> VertexKind {
        self.kinds[v as usize]
    }

    pub(crate) fn is_present(&self, v: u32) -> bool {
        self.present[v as usize]
    }

    pub(crate) fn succs(&self, v: u32) -> &[(u32, W)] {
        &self.succ[v as usize]
    }

    pub(crate) fn preds(&self, v: u32) -> &[(u32, W)] {
        &self.pred[v as usize]
    }

    pub(crate) fn edge_count(&self) -> usize {
        self.edges
    }

    /// Whether the vertex can be eliminated (an intermediate) or cut (a
    /// dependent with out-edges).
    pub(crate) fn is_inner(&self, v: u32) -> bool {
        let i = v as usize;
        self.present[i]
            && match self.kinds[i] {
                VertexKind::Intermediate => true,
                VertexKind::Dependent => !self.succ[i].is_empty(),
                VertexKind::Independent => false,
            }
    }

    /// Cost of the operations so far.
    pub(crate) fn g(&self) -> i64 {
        self.model.w_mul * i64::from(self.mults) + self.model.w_add * i64::from(self.adds)
    }

    /// Cost of stopping here (the remainder's propagation), or `None` when
    /// the model requires a total elimination and intermediates are left.
    pub(crate) fn final_cost(&self) -> Option<i64> {
        if self.model.total && self.intermediates > 0 {
            return None;
        }
        Some(
            self.prop
                + self.model.w_push * self.distinct
                + self.model.w_excess * (self.distinct - self.model.max_pushes).max(0)
                + self.model.w_neg * self.negations(),
        )
    }

    /// Total cost of stopping here.
    pub(crate) fn cost(&self) -> Option<i64> {
        Some(self.g() + self.final_cost()?)
    }

    /// An admissible lower bound on the cost of every state reachable from
    /// here, stopping included: the larger of the potential bound
    /// ([`Model::bound`]) and the circuit bound ([`Work::circuit_bound`]).
    pub(crate) fn lower_bound(&self) -> i64 {
        let mut scratch = self.circuit_scratch.borrow_mut();
        let n = self.kinds.len();
        let stamp = scratch.next_stamp(n, self.fresh as usize + 1);
        // What carries derivatives now: reachable from an independent
        // (front eliminations can cut a vertex off its inputs).
        let grounded = &mut scratch.grounded;
        let mut phi = 0i64;
        for u in 0..n {
            let g = self.present[u]
                && (self.kinds[u] == VertexKind::Independent
                    || self.pred[u].iter().any(|e| grounded[e.0 as usize] == stamp));
            grounded[u] = if g { stamp } else { 0 };
            if g {
                phi += self.succ[u]
                    .iter()
                    .filter(|e| matches!(e.1, W::Run(..)))
                    .count() as i64;
            }
        }
        // A constant edge from an independent to a dependent may cancel
        // to zero where constants reconverge.
        let fixed_const = if self.constant_reconvergence {
            0
        } else {
            self.fixed[1]
        };
        let potential = self.g() + self.model.bound(phi, self.fixed[2], fixed_const);
        let cut = self.cut_bound(&mut scratch, stamp);
        potential
            .max(self.circuit_bound(&mut scratch, stamp))
            .max(cut)
    }

    /// Turns on the cut bound ([`Work::cut_bound`]) for every state
    /// reachable from the current one, which must be the state the
    /// working graph was built in (nothing applied): the cut sums are
    /// computed here, once, by maximum flows. Off by default (the default
    /// effort's searches keep the bounds they had); whether it is on.
    pub(crate) fn enable_cut_floor(&mut self) -> bool {
        if !self.journal.is_empty() || self.model.circuit == Circuit::None {
            return false;
        }
        if self.cut_floor.is_none() {
            self.cut_floor = Some(self.cut_sums());
            self.cut_zero_free = self.succ.iter().flatten().all(|e| e.1.class() != 3);
        }
        true
    }

    /// The cut sums of the current state, `(run, all, ids)`: `run` is the
    /// larger of the sum over independents `x` of the fewest vertices
    /// (other than `x`) that meet every path from `x` through a run-time
    /// out-edge of `x` to a dependent, and the sum over dependents `y` of
    /// the fewest vertices (other than `y`) that meet every path from an
    /// independent ending in a run-time in-edge of `y`; `all` the larger
    /// of `run` and the same sums over every path without an edge of the
    /// constant zero, or `run` where constants reconverge (a constant
    /// edge may then cancel to zero). A product with a run-time factor
    /// stays run-time even when another factor is zero. `ids` is the
    /// larger of the two run-time cut sums, each less the run-time edges
    /// out of independents (into dependents) beyond their distinct ids.
    fn cut_sums(&self) -> (i64, i64, i64) {
        let n = self.kinds.len();
        let mut flow = VertexCut::new(n);
        let is_dependent = |v: u32| self.kinds[v as usize] == VertexKind::Dependent;
        let (mut out_run, mut out_all, mut in_run, mut in_all) = (0i64, 0i64, 0i64, 0i64);
        for x in 0..n as u32 {
            if !self.present[x as usize] || self.kinds[x as usize] != VertexKind::Independent {
                continue;
            }
            let (run, all) = cut_ends(&self.succ[x as usize]);
            out_run += flow.max_flow(self, &run, &is_dependent, x, false);
            out_all += flow.max_flow(self, &all, &is_dependent, x, true);
        }
        let independents: Vec<u32> = (0..n as u32)
            .filter(|&v| {
                self.present[v as usize] && self.kinds[v as usize] == VertexKind::Independent
            })
            .collect();
        for y in 0..n as u32 {
            if !self.present[y as usize] || self.kinds[y as usize] != VertexKind::Dependent {
                continue;
            }
            let (run, all) = cut_ends(&self.pred[y as usize]);
            in_run += flow.max_flow(self, &independents, &|v| run.contains(&v), y, false);
            in_all += flow.max_flow(self, &independents, &|v| all.contains(&v), y, true);
        }
        let run = out_run.max(in_run);
        let all = if self.constant_reconvergence {
            run
        } else {
            run.max(out_all).max(in_all)
        };
        // Run-time edges out of independents (into dependents) beyond
        // their distinct ids.
        let excess = |edges: Vec<u32>| {
            let count = edges.len() as i64;
            let mut ids = edges;
            ids.sort_unstable();
            ids.dedup();
            count - ids.len() as i64
        };
        let ids_of = |kind: VertexKind, out: bool| -> Vec<u32> {
            (0..n)
                .filter(|&v| self.present[v] && self.kinds[v] == kind)
                .flat_map(|v| if out { &self.succ[v] } else { &self.pred[v] })
                .filter_map(|e| match e.1 {
                    W::Run(id, _) => Some(id),
                    _ => None,
                })
                .collect()
        };
        let ids = (out_run - excess(ids_of(VertexKind::Independent, true)))
            .max(in_run - excess(ids_of(VertexKind::Dependent, false)))
            .max(0);
        (run, all, ids)
    }

    /// The cut bound, where [`Work::enable_cut_floor`] turned it on (else
    /// `i64::MIN`). Let `D` be the distinct run-time ids on grounded edges
    /// now and `F` any state reachable from here:
    ///
    /// - every operation makes one new id and reads at most two, and an id
    ///   leaves the grounded edges only by being read (a product or sum
    ///   replaces the edge it was on, a copy through a unit keeps it, and
    ///   a vertex loses its last in- or out-edge only when its other edges
    ///   went into products or copies), so `F` has at least `D - ops`
    ///   grounded ids, and at most as many as grounded run-time edges;
    /// - every path from `x` to a dependent is a path of `F` (eliminations
    ///   contract paths, never cut them), so the heads of `x`'s out-edges
    ///   in `F` meet all of them: `x` keeps at least the cut's number of
    ///   out-edges, run-time ones where the path starts with a run-time
    ///   edge (its first edge in `F` includes that edge); the same holds
    ///   for the in-edges of a dependent. The edges of `F` that are not
    ///   run-time are not the constant zero unless constants reconverge;
    /// - an id on an out-edge of `x` in `F` whose paths start with a
    ///   run-time edge was made by an operation on an out-edge `(x, m)` of
    ///   `x` or is on such an edge now: it moves only by copies through
    ///   units, which keep the tail `x` (an independent has no in-edge to
    ///   copy through) and only narrow the paths it stands for, so all of
    ///   them cross `m` (one of the edges that carry it now). Those `m`
    ///   meet every path from `x` through a run-time out-edge, so `F` has
    ///   at least `ids` distinct ids (an id on several such edges now
    ///   counts once for all of them; an id made later stays on the edges
    ///   of one independent); the same holds for dependents.
    ///
    /// Tangent: a run-time edge costs at least two operations and a unit
    /// edge at least the free copy it may give its target, so `F` costs at
    /// least `g + ops + 2·f_run - D_F ≥ g + D + run`. Adjoint (each
    /// distinct factor pushed and popped, no free copy): at least
    /// `g + ops + 2·f_run + f_other + 2·D_F ≥ g + D + run + all + ids`, in
    /// units of the cheaper of a multiplication and an addition.
    ///
    /// A second count, where no edge is the constant zero and constants do
    /// not reconverge (then every absorption into an existing edge is an
    /// addition that is spent, not folded): over the grounded part,
    /// eliminating a vertex with `p` predecessors and `s` successors
    /// changes edges minus vertices by `(p-1)(s-1)` less its absorptions,
    /// an edge elimination (with the vertex it may leave cut off) by
    /// minus its absorptions, so the additions spent are at least the
    /// drop of `E - V`. Tangent code adds one operation per in-edge of a
    /// target beyond its first and one more per run-time edge, so `F`
    /// costs at least `g + (E - V) + X + run` (`X` independents, the
    /// grounded vertices without in-edge); adjoint code one per edge, one
    /// more per run-time edge and two per factor: at least
    /// `g + (E - V) + X + Y + run + 2·ids` (`Y` grounded dependents, which
    /// stay). The bound is the larger of the two counts.
    fn cut_bound(&self, scratch: &mut CircuitScratch, stamp: u32) -> i64 {
        let Some((run, all, ids)) = self.cut_floor else {
            return i64::MIN;
        };
        let m = &self.model;
        let op = m.w_mul.min(m.w_add);
        let tangent_like = m.w_edge[2] >= 2 * op
            && m.w_edge[0] >= m.first_unit
            && m.first_unit >= 0
            && m.w_edge[1] >= 0
            && m.w_push >= 0
            && m.w_neg >= 0
            && m.w_excess >= 0
            && op >= 0;
        if !tangent_like {
            return i64::MIN;
        }
        let adjoint_like =
            m.first_unit == 0 && m.w_push >= 2 * op && m.w_edge[0] >= op && m.w_edge[1] >= op;
        let cyclomatic = self.cut_zero_free
            && !self.constant_reconvergence
            && m.w_edge[0] >= op
            && m.w_edge[1] >= op
            && m.first_unit <= op;
        let CircuitScratch {
            grounded, id_seen, ..
        } = scratch;
        let mut distinct = 0i64;
        let (mut vertices, mut edges, mut independents, mut dependents) = (0i64, 0i64, 0i64, 0i64);
        for (u, succ) in self.succ.iter().enumerate() {
            if grounded[u] != stamp {
                continue;
            }
            vertices += 1;
            edges += succ.len() as i64;
            match self.kinds[u] {
                VertexKind::Independent => independents += 1,
                VertexKind::Dependent => dependents += 1,
                VertexKind::Intermediate => {}
            }
            for &(_, val) in succ {
                if let W::Run(id, _) = val {
                    let seen = &mut id_seen[id as usize];
                    if *seen != stamp {
                        *seen = stamp;
                        distinct += 1;
                    }
                }
            }
        }
        let cycles = edges - vertices + independents;
        let (by_values, by_cycles) = if adjoint_like {
            (
                distinct + run + all + ids,
                cycles + dependents + run + 2 * ids,
            )
        } else {
            (distinct + run, cycles + run)
        };
        let best = if cyclomatic {
            by_values.max(by_cycles)
        } else {
            by_values
        };
        self.g() + op * best
    }

    /// The circuit bound: the derivative code of every state reachable
    /// from here is a circuit of binary operations (multiplications and
    /// additions; copies and sign changes are free) whose inputs include
    /// every distinct run-time value on an edge that carries derivatives
    /// (grounded, not the constant zero) and the derivative of every
    /// independent with such an out-edge (tangent; adjoint code also reads
    /// the adjoints of the dependents with such an in-edge, and increments
    /// those of the independents). Each operation joins at most two
    /// connected pieces of the circuit into one, and in the end there are
    /// at most as many pieces as the graph has components once the edges
    /// and the shared run-time values join what they connect, so the code
    /// has at least `inputs - components` operations beyond those spent; the derivative code's count (a
    /// `Sax` or `Saxpy` is two, push and pop cost extra) is at least that.
    /// Where constants reconverge ([`Work::find_constant_reconvergence`])
    /// a unit or constant edge may cancel, so only run-time edges count.
    /// Beyond the circuit: a dependent whose in-edges all carry run-time
    /// values never gets a unit in-edge (every product into it has such a
    /// factor), so its tangent starts with a `Sax` whose addition joins
    /// nothing, and in adjoint code a factor into it is taped.
    fn circuit_bound(&self, scratch: &mut CircuitScratch, stamp: u32) -> i64 {
        let adjoint = match self.model.circuit {
            Circuit::None => return i64::MIN,
            Circuit::Tangent => false,
            Circuit::Adjoint => true,
        };
        let robust = self.constant_reconvergence;
        let n = self.kinds.len();
        let CircuitScratch {
            parent,
            value_seen,
            value_vertex,
            vertex_seen,
            source_seen,
            grounded,
            ..
        } = scratch;
        let (mut inputs, mut vertices, mut joins) = (0i64, 0i64, 0i64);
        for (u, succ) in self.succ.iter().enumerate().take(n) {
            if grounded[u] != stamp {
                continue;
            }
            for &(w, val) in succ {
                if val.class() == 3 || (robust && !matches!(val, W::Run(..))) {
                    // The constant zero carries nothing; where constants
                    // reconverge, a constant path may cancel.
                    continue;
                }
                // Tangent code starts from the independents' tangents;
                // adjoint code from the dependents' adjoints and the
                // independents' adjoints so far (it increments them).
                let w = w as usize;
                let sources = [
                    (self.kinds[u] == VertexKind::Independent).then_some(u),
                    (adjoint && self.kinds[w] == VertexKind::Dependent).then_some(w),
                ];
                for v in sources.into_iter().flatten() {
                    if source_seen[v] != stamp {
                        source_seen[v] = stamp;
                        inputs += 1;
                    }
                }
                for v in [u, w] {
                    if vertex_seen[v] != stamp {
                        vertex_seen[v] = stamp;
                        parent[v] = v as u32;
                        vertices += 1;
                    }
                }
                joins += i64::from(union(parent, u as u32, w as u32));
                // A run-time value is one input wherever it occurs, and
                // joins the pieces that read it.
                if let W::Run(id, _) = val {
                    let id = id as usize;
                    if value_seen[id] != stamp {
                        value_seen[id] = stamp;
                        value_vertex[id] = u as u32;
                        inputs += 1;
                    } else {
                        joins += i64::from(union(parent, u as u32, value_vertex[id]));
                    }
                }
            }
        }
        let gates = (inputs - (vertices - joins)).max(0);
        // Dependents that keep run-time in-edges: a first `Sax` each in
        // tangent code, a taped factor per piece (components joined by
        // the values they share) in adjoint code.
        let mut first_terms = 0i64;
        let mut taped = 0i64;
        for (v, pred) in self.pred.iter().enumerate().take(n) {
            if !self.present[v]
                || self.kinds[v] != VertexKind::Dependent
                || vertex_seen[v] != stamp
                || pred.is_empty()
                || !pred.iter().all(|e| matches!(e.1, W::Run(..)))
            {
                continue;
            }
            first_terms += 1;
            let root = find_root(parent, v as u32) as usize;
            // Components counted are marked in `source_seen` with the
            // stamp's complement.
            if source_seen[root] != !stamp {
                source_seen[root] = !stamp;
                taped += 1;
            }
        }
        let op = self.model.w_add.min(self.model.w_mul);
        let extra = if adjoint {
            taped * self.model.w_push
        } else {
            first_terms * self.model.w_add
        };
        self.g() + gates * op + extra
    }

    /// Non-trivial remainder edges under the triviality of construction.
    pub(crate) fn nontrivial(&self) -> i64 {
        self.nontrivial
    }

    /// The cost of stopping here without the push and pop part, and the
    /// pushes (the two measures the adjoint result must not worsen).
    pub(crate) fn cost_split(&self) -> Option<(i64, i64)> {
        let c = self.cost()?;
        let pushes = self.model.w_push * self.distinct
            + self.model.w_excess * (self.distinct - self.model.max_pushes).max(0);
        Some((c - pushes, self.distinct))
    }

    pub(crate) fn mark(&self) -> Mark {
        Mark {
            journal: self.journal.len(),
            unlinked: self.unlinked.len(),
            mults: self.mults,
            adds: self.adds,
            fresh: self.fresh,
        }
    }

    /// Reverts every change made since `mark`.
    pub(crate) fn undo_to(&mut self, mark: Mark) {
        self.epoch += 1;
        if !self.probing {
            self.version += 1;
        }
        while self.journal.len() > mark.journal {
            match self.journal.pop() {
                Some(Entry::Linked(u, w)) => {
                    if let Some((_, slot)) = self.raw_unlink(u, w) {
                        self.free_slots.push(slot);
                    }
                }
                Some(Entry::Unlinked(u, w, val)) => {
                    let slot = self.unlinked.pop();
                    self.raw_link_slot(u, w, val, slot);
                }
                Some(Entry::Changed(u, w, old)) => {
                    self.raw_set(u, w, old);
                }
                Some(Entry::ExprUse(id)) => self.expr_use[id as usize] -= 1,
                Some(Entry::Removed(v)) => {
                    self.touch(v, v);
                    self.touched_in[v as usize] = self.epoch;
                    self.touched_out[v as usize] = self.epoch;
                    self.present[v as usize] = true;
                    if self.kinds[v as usize] == VertexKind::Intermediate {
                        self.intermediates += 1;
                    }
                }
                None => break,
            }
        }
        self.journal.truncate(mark.journal);
        self.unlinked.truncate(mark.unlinked);
        self.mults = mark.mults;
        self.adds = mark.adds;
        self.fresh = mark.fresh;
    }

    // ---------------------------------------------------------- edges

    fn class_weight(&self, val: W) -> i64 {
        self.nontrivial_weight[match val {
            W::One(_) => 0,
            W::Const(_) => 1,
            W::Run(..) => 2,
        }]
    }

    fn count_edge(&mut self, u: u32, w: u32, val: W, sign: i64) {
        let t = w as usize;
        let class = val.class();
        let c = &mut self.counts[t][class];
        let before = *c;
        if sign > 0 {
            *c += 1;
        } else {
            *c -= 1;
        }
        // The change of the target's propagation cost: the class's weight,
        // and the unit credit when the first unit in-edge comes or the
        // last one goes.
        let mut change = sign * self.model.w_edge[class];
        if class == 0 {
            if sign > 0 && before == 0 {
                change -= self.model.first_unit;
            } else if sign < 0 && before == 1 {
                change += self.model.first_unit;
            }
        }
        self.prop += change;
        self.nontrivial += sign * self.class_weight(val);
        if self.kinds[u as usize] == VertexKind::Independent
            && self.kinds[t] == VertexKind::Dependent
        {
            self.fixed[val.class()] += sign;
        }
        if let Some(key) = val.push_key() {
            if key >= self.uses.len() {
                self.uses.resize(key + 1 + key / 2, 0);
            }
            let n = &mut self.uses[key];
            if sign > 0 {
                *n += 1;
                if *n == 1 {
                    self.distinct += 1;
                    if key & 1 == 1 {
                        self.neg_ids.push((key / 2) as u32);
                    }
                }
            } else {
                *n -= 1;
                if *n == 0 {
                    self.distinct -= 1;
                    if key & 1 == 1 {
                        let id = (key / 2) as u32;
                        if let Some(at) = self.neg_ids.iter().position(|&x| x == id) {
                            self.neg_ids.swap_remove(at);
                        }
                    }
                }
            }
        }
    }

    /// Adds an edge with a fresh cache.
    fn raw_link(&mut self, u: u32, w: u32, val: W) {
        self.raw_link_slot(u, w, val, None);
    }

    /// Adds an edge with the cache in `slot` (a fresh one if `None`).
    fn raw_link_slot(&mut self, u: u32, w: u32, val: W, slot: Option<u32>) {
        let slot = slot.unwrap_or_else(|| match self.free_slots.pop() {
            Some(free) => {
                self.caches[free as usize] = EdgeCache::default();
                free
            }
            None => {
                self.caches.push(EdgeCache::default());
                (self.caches.len() - 1) as u32
            }
        });
        self.touch(u, w);
        let s = &mut self.succ[u as usize];
        let at = s.partition_point(|e| e.0 < w);
        s.insert(at, (w, val));
        self.slots[u as usize].insert(at, slot);
        let p = &mut self.pred[w as usize];
        let before = p.partition_point(|e| e.0 < u);
        p.insert(before, (u, val));
        self.edges += 1;
        self.count_edge(u, w, val, 1);
    }

    /// Removes an edge; returns its value and its cache slot (still
    /// taken).
    fn raw_unlink(&mut self, u: u32, w: u32) -> Option<(W, u32)> {
        self.touch(u, w);
        let s = &mut self.succ[u as usize];
        let at = s.binary_search_by_key(&w, |e| e.0).ok()?;
        let (_, val) = s.remove(at);
        let slot = self.slots[u as usize].remove(at);
        let p = &mut self.pred[w as usize];
        if let Ok(at) = p.binary_search_by_key(&u, |e| e.0) {
            p.remove(at);
        }
        self.edges -= 1;
        self.count_edge(u, w, val, -1);
        Some((val, slot))
    }

    fn touch(&mut self, u: u32, w: u32) {
        if !self.probing {
            self.touched[u as usize] = self.epoch;
            self.touched[w as usize] = self.epoch;
            self.touched_out[u as usize] = self.epoch;
            self.touched_in[w as usize] = self.epoch;
        }
    }

    fn raw_set(&mut self, u: u32, w: u32, val: W) -> Option<W> {
        self.touch(u, w);
        let s = &mut self.succ[u as usize];
        let at = s.binary_search_by_key(&w, |e| e.0).ok()?;
        let old = std::mem::replace(&mut s[at].1, val);
        let p = &mut self.pred[w as usize];
        if let Ok(at) = p.binary_search_by_key(&u, |e| e.0) {
            p[at].1 = val;
        }
        self.count_edge(u, w, old, -1);
        self.count_edge(u, w, val, 1);
        Some(old)
    }

    fn link(&mut self, u: u32, w: u32, val: W) {
        self.raw_link(u, w, val);
        self.journal.push(Entry::Linked(u, w));
    }

    fn unlink(&mut self, u: u32, w: u32) -> Option<W> {
        let (val, slot) = self.raw_unlink(u, w)?;
        self.unlinked.push(slot);
        self.journal.push(Entry::Unlinked(u, w, val));
        Some(val)
    }

    fn set(&mut self, u: u32, w: u32, val: W) {
        if let Some(old) = self.raw_set(u, w, val) {
            self.journal.push(Entry::Changed(u, w, old));
        }
    }

    pub(crate) fn value(&self, u: u32, w: u32) -> Option<W> {
        let s = &self.succ[u as usize];
        s.binary_search_by_key(&w, |e| e.0).ok().map(|at| s[at].1)
    }

    // ---------------------------------------------------------- folding

    fn mul(&mut self, a: W, b: W) -> W {
        match (a, b) {
            (W::One(neg), other) | (other, W::One(neg)) => {
                if neg {
                    other.negated()
                } else {
                    other
                }
            }
            (W::Const(x), W::Const(y)) => W::constant(x * y),
            _ => {
                self.mults += 1;
                self.new_value(a, b, false, a.sign() != b.sign())
            }
        }
    }

    fn add(&mut self, a: W, b: W) -> W {
        if let (Some(x), Some(y)) = (a.cval(), b.cval()) {
            return W::constant(x + y);
        }
        self.adds += 1;
        // Mixed signs make a subtraction with no pending sign.
        self.new_value(a, b, a.sign() != b.sign(), a.sign() && b.sign())
    }

    /// A new run-time value computed from `a` and `b`.
    fn new_value(&mut self, a: W, b: W, sub: bool, negative: bool) -> W {
        for operand in [a, b] {
            if let W::Run(id, _) = operand {
                self.expr_use[id as usize] += 1;
                self.journal.push(Entry::ExprUse(id));
            }
        }
        let id = self.fresh;
        self.fresh += 1;
        if self.sub_top.len() <= id as usize {
            let size = id as usize + 1 + id as usize / 2;
            self.sub_top.resize(size, false);
            self.expr_use.resize(size, 0);
        }
        self.sub_top[id as usize] = sub;
        self.expr_use[id as usize] = 0;
        W::Run(id, negative)
    }

    /// Negations needed to materialize the pending signs on remainder
    /// edges: one per distinct negated value, except an accumulated
    /// subtraction read nowhere else, whose operands are swapped instead.
    fn negations(&self) -> i64 {
        let mut n = 0;
        for &id in &self.neg_ids {
            let i = id as usize;
            let free = id >= self.acc_base
                && self.sub_top[i]
                && self.expr_use[i] == 0
                && self.uses[2 * i] + self.uses[2 * i + 1] == 1;
            n += i64::from(!free);
        }
        n
    }

    /// `(i,k) += a * b`.
    fn accumulate(&mut self, i: u32, k: u32, a: W, b: W) {
        let product = self.mul(a, b);
        match self.value(i, k) {
            Some(existing) => {
                let sum = self.add(existing, product);
                self.set(i, k, sum);
            }
            None => self.link(i, k, product),
        }
    }

    fn remove_vertex(&mut self, v: u32) {
        self.touch(v, v);
        self.touched_in[v as usize] = self.epoch;
        self.touched_out[v as usize] = self.epoch;
        self.present[v as usize] = false;
        if self.kinds[v as usize] == VertexKind::Intermediate {
            self.intermediates -= 1;
        }
        self.journal.push(Entry::Removed(v));
    }

    /// The isolation rule, from `start`.
    fn prune(&mut self, start: &[u32]) {
        // The stack is kept between calls: no allocation per elimination.
        let mut work = std::mem::take(&mut self.prune_stack);
        work.clear();
        work.extend_from_slice(start);
        while let Some(v) = work.pop() {
            let i = v as usize;
            if !self.present[i]
                || self.kinds[i] != VertexKind::Intermediate
                || (!self.pred[i].is_empty() && !self.succ[i].is_empty())
            {
                continue;
            }
            while let Some(&(p, _)) = self.pred[i].last() {
                self.unlink(p, v);
                work.push(p);
            }
            while let Some(&(s, _)) = self.succ[i].last() {
                self.unlink(v, s);
                work.push(s);
            }
            self.remove_vertex(v);
        }
        self.prune_stack = work;
    }

    // ---------------------------------------------------------- moves

    /// Whether a move is possible in the current state.
    pub(crate) fn can(&self, m: Move) -> bool {
        match m {
            Move::Vertex(v) => self.is_inner(v),
            Move::Front(i, j) => {
                self.kinds[j as usize] == VertexKind::Intermediate && self.value(i, j).is_some()
            }
            Move::Back(j, k) => {
                self.kinds[j as usize] != VertexKind::Independent && self.value(j, k).is_some()
            }
            Move::Pre(i, k, j) => {
                i < j
                    && self.kinds[j as usize] == VertexKind::Intermediate
                    && self.value(i, k).is_some()
                    && self.value(j, k).is_some_and(|p| p.cval() != Some(0.0))
            }
            Move::Post(i, k, j) => {
                j < k
                    && self.kinds[j as usize] != VertexKind::Independent
                    && self.value(i, k).is_some()
                    && self.value(i, j).is_some_and(|p| p.cval() != Some(0.0))
            }
        }
    }

    /// Performs a possible move (see [`Work::can`]).
    pub(crate) fn apply(&mut self, m: Move) {
        self.epoch += 1;
        if !self.probing {
            self.version += 1;
        }
        match m {
            Move::Vertex(j) => self.eliminate_vertex(j),
            Move::Front(i, j) => self.front(i, j),
            Move::Back(j, k) => self.back(j, k),
            Move::Pre(i, k, j) => self.preroute(i, k, j),
            Move::Post(i, k, j) => self.postroute(i, k, j),
        }
    }

    fn div(&mut self, a: W, b: W) -> W {
        match (a, b) {
            (other, W::One(neg)) => {
                if neg {
                    other.negated()
                } else {
                    other
                }
            }
            (W::One(neg), W::Const(y)) => W::constant(if neg { -1.0 / y } else { 1.0 / y }),
            (W::Const(x), W::Const(y)) => W::constant(x / y),
            _ => {
                self.mults += 1;
                self.new_value(a, b, false, a.sign() != b.sign())
            }
        }
    }

    /// `(i,k) += a`, or a new edge `a`.
    fn add_value(&mut self, i: u32, k: u32, a: W) {
        match self.value(i, k) {
            Some(existing) => {
                let sum = self.add(existing, a);
                self.set(i, k, sum);
            }
            None => self.link(i, k, a),
        }
    }

    /// `(i,k) -= a * b`, or a new edge `-(a * b)`.
    fn subtract(&mut self, i: u32, k: u32, a: W, b: W) {
        let product = self.mul(a, b).negated();
        self.add_value(i, k, product);
    }

    fn preroute(&mut self, i: u32, k: u32, j: u32) {
        let (Some(c_ki), Some(c_kj)) = (self.value(i, k), self.value(j, k)) else {
            return;
        };
        let q = self.div(c_ki, c_kj);
        self.add_value(i, j, q);
        let ns = self.succ[j as usize].len();
        for s in 0..ns {
            let (l, c_lj) = self.succ[j as usize][s];
            if l != k {
                self.subtract(i, l, q, c_lj);
            }
        }
        self.unlink(i, k);
        self.prune(&[i, j, k]);
    }

    fn postroute(&mut self, i: u32, k: u32, j: u32) {
        let (Some(c_ki), Some(c_ji)) = (self.value(i, k), self.value(i, j)) else {
            return;
        };
        let q = self.div(c_ki, c_ji);
        self.add_value(j, k, q);
        let np = self.pred[j as usize].len();
        for p in 0..np {
            let (h, c_jh) = self.pred[j as usize][p];
            if h != i {
                self.subtract(h, k, c_jh, q);
            }
        }
        self.unlink(i, k);
        self.prune(&[i, j, k]);
    }

    /// Every possible rerouting, appended to `out`.
    pub(crate) fn reroute_moves(&self, out: &mut Vec<Move>) {
        for k in 0..self.kinds.len() {
            if !self.present[k] {
                continue;
            }
            let p = &self.pred[k];
            for a in 0..p.len() {
                for b in a + 1..p.len() {
                    // Pre-routing of (i,k) about (j,k) needs i before j.
                    let (i, j) = (p[a].0, p[b].0);
                    if self.kinds[j as usize] == VertexKind::Intermediate
                        && p[b].1.cval() != Some(0.0)
                    {
                        out.push(Move::Pre(i, k as u32, j));
                    }
                }
            }
        }
        for i in 0..self.kinds.len() {
            if !self.present[i] {
                continue;
            }
            let s = &self.succ[i];
            for a in 0..s.len() {
                for b in a + 1..s.len() {
                    // Post-routing of (i,k) about (i,j) needs j before k.
                    let (j, k) = (s[a].0, s[b].0);
                    if self.kinds[j as usize] != VertexKind::Independent
                        && s[a].1.cval() != Some(0.0)
                    {
                        out.push(Move::Post(i as u32, k, j));
                    }
                }
            }
        }
    }

    fn eliminate_vertex(&mut self, j: u32) {
        let ji = j as usize;
        let np = self.pred[ji].len();
        let ns = self.succ[ji].len();
        if self.kinds[ji] == VertexKind::Dependent {
            // Cut: back eliminate every out-edge, in successor order.
            for s in 0..ns {
                let (k, c_kj) = self.succ[ji][s];
                for p in 0..np {
                    let (i, c_ji) = self.pred[ji][p];
                    self.accumulate(i, k, c_kj, c_ji);
                }
            }
            let mut gone = std::mem::take(&mut self.scratch);
            gone.clear();
            while let Some(&(k, _)) = self.succ[ji].last() {
                self.unlink(j, k);
                gone.push(k);
            }
            if np == 0 {
                self.prune(&gone);
            }
            self.scratch = gone;
            return;
        }
        for p in 0..np {
            let (i, c_ji) = self.pred[ji][p];
            for s in 0..ns {
                let (k, c_kj) = self.succ[ji][s];
                self.accumulate(i, k, c_ji, c_kj);
            }
        }
        while let Some(&(i, _)) = self.pred[ji].last() {
            self.unlink(i, j);
        }
        while let Some(&(k, _)) = self.succ[ji].last() {
            self.unlink(j, k);
        }
        self.remove_vertex(j);
    }

    fn front(&mut self, i: u32, j: u32) {
        let Some(c_ji) = self.unlink(i, j) else {
            return;
        };
        let ns = self.succ[j as usize].len();
        for s in 0..ns {
            let (k, c_kj) = self.succ[j as usize][s];
            self.accumulate(i, k, c_ji, c_kj);
        }
        self.prune(&[i, j]);
    }

    fn back(&mut self, j: u32, k: u32) {
        let Some(c_kj) = self.unlink(j, k) else {
            return;
        };
        let np = self.pred[j as usize].len();
        for p in 0..np {
            let (i, c_ji) = self.pred[j as usize][p];
            self.accumulate(i, k, c_kj, c_ji);
        }
        self.prune(&[j, k]);
    }

    /// The move as operations on the input graph, appended to `out`.
    pub(crate) fn targets(&self, m: Move, out: &mut Vec<Replay>) {
        let o = |v: u32| self.orig[v as usize];
        match m {
            Move::Pre(i, k, j) => out.push(Replay::Pre(o(i), o(k), o(j))),
            Move::Post(i, k, j) => out.push(Replay::Post(o(i), o(k), o(j))),
            other => self.elimination_targets(other, out),
        }
    }

    fn elimination_targets(&self, m: Move, out: &mut Vec<Replay>) {
        let mut push = |t: LcgTarget| out.push(Replay::Eliminate(t));
        match m {
            Move::Pre(..) | Move::Post(..) => {}
            Move::Vertex(j) if self.kinds[j as usize] == VertexKind::Dependent => {
                for &(k, _) in &self.succ[j as usize] {
                    push(LcgTarget::Edge {
                        source: self.orig[j as usize],
                        target: self.orig[k as usize],
                        direction: Direction::Back,
                    });
                }
            }
            Move::Vertex(j) => push(LcgTarget::Vertex(self.orig[j as usize])),
            Move::Front(i, j) => push(LcgTarget::Edge {
                source: self.orig[i as usize],
                target: self.orig[j as usize],
                direction: Direction::Front,
            }),
            Move::Back(j, k) => push(LcgTarget::Edge {
                source: self.orig[j as usize],
                target: self.orig[k as usize],
                direction: Direction::Back,
            }),
        }
    }

    /// Every inner vertex, in rank order.
    pub(crate) fn inner_vertices(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.kinds.len() as u32).filter(|&v| self.is_inner(v))
    }

    /// Every edge move (front before back per edge, edges by source then
    /// target), appended to `out`.
    pub(crate) fn edge_moves(&self, out: &mut Vec<Move>) {
        for u in 0..self.kinds.len() {
            if !self.present[u] {
                continue;
            }
            for &(w, _) in &self.succ[u] {
                if self.kinds[w as usize] == VertexKind::Intermediate {
                    out.push(Move::Front(u as u32, w));
                }
                if self.kinds[u] != VertexKind::Independent {
                    out.push(Move::Back(u as u32, w));
                }
            }
        }
    }

    /// What the cost of a state knows of run-time value `id` besides the
    /// edges that carry it: whether its expression is a subtraction,
    /// whether no later expression reads it, and on how many edges it is
    /// (either sign).
    pub(crate) fn value_facts(&self, id: u32) -> (bool, bool, u32) {
        let i = id as usize;
        let sub = self.sub_top.get(i).copied().unwrap_or(false);
        let unread = self.expr_use.get(i).copied().unwrap_or(0) == 0;
        let uses = self.uses.get(2 * i).copied().unwrap_or(0)
            + self.uses.get(2 * i + 1).copied().unwrap_or(0);
        (sub, unread, uses)
    }

    /// A hash of the state's structure and value shapes, with fresh
    /// run-time ids renumbered by first appearance (so states reached in
    /// different orders compare equal).
    pub(crate) fn state_key(&self, scratch: &mut KeyScratch) -> (u64, u64) {
        scratch.stamp = scratch.stamp.wrapping_add(1);
        if scratch.stamp == 0 {
            scratch.seen.clear();
            scratch.stamp = 1;
        }
        if scratch.seen.len() < self.fresh as usize + 1 {
            scratch.seen.resize(self.fresh as usize + 1, (0, 0));
        }
        let mut next = 0u32;
        let mut h1: u64 = 0xcbf2_9ce4_8422_2325;
        let mut h2: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut mix = |x: u64| {
            h1 = (h1 ^ x).wrapping_mul(0x0000_0100_0000_01b3);
            h2 = (h2 ^ x.rotate_left(29)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        };
        for u in 0..self.kinds.len() {
            if !self.present[u] {
                mix(u64::MAX);
                continue;
            }
            for &(w, val) in &self.succ[u] {
                mix(((u as u64) << 32) | u64::from(w));
                let code = match val {
                    W::One(neg) => u64::from(neg),
                    W::Const(c) => c.to_bits() ^ 0x5555,
                    W::Run(id, neg) => {
                        let slot = &mut scratch.seen[id as usize];
                        let canon = if slot.0 == scratch.stamp {
                            slot.1
                        } else {
                            *slot = (scratch.stamp, next);
                            next += 1;
                            next - 1
                        };
                        let i = id as usize;
                        let sub = self.sub_top.get(i).copied().unwrap_or(false);
                        let unread = self.expr_use.get(i).copied().unwrap_or(0) == 0;
                        (u64::from(canon) << 4)
                            | (u64::from(unread) << 3)
                            | (u64::from(sub) << 2)
                            | (u64::from(neg) << 1)
                            | 0xa000_0000_0000_0000
                    }
                };
                mix(code);
            }
        }
        (h1, h2)
    }
}

// ------------------------------------------------------------------ scarcity

impl Work {
    fn weight(&self, val: W) -> i64 {
        self.class_weight(val)
    }

    /// The value shape of `a * b` (`None`: a new run-time value).
    fn product_shape(a: W, b: W) -> Option<W> {
        match (a, b) {
            (W::One(neg), other) | (other, W::One(neg)) => {
                Some(if neg { other.negated() } else { other })
            }
            (W::Const(x), W::Const(y)) => Some(W::constant(x * y)),
            _ => None,
        }
    }

    fn accumulate_delta(&self, existing: Option<W>, a: W, b: W) -> i64 {
        let product = Self::product_shape(a, b);
        match existing {
            Some(e) => {
                let after = match product.and_then(|p| Some(W::constant(e.cval()? + p.cval()?))) {
                    Some(folded) => self.weight(folded),
                    None => self.weight(W::Run(0, false)),
                };
                after - self.weight(e)
            }
            None => match product {
                Some(p) => self.weight(p),
                None => self.weight(W::Run(0, false)),
            },
        }
    }

    /// For each entry of `list` (sorted), its value and the value of the
    /// entry with the same vertex in `other` (sorted), if any.
    fn merge(list: &[(u32, W)], other: &[(u32, W)], mut visit: impl FnMut(W, Option<W>)) {
        let mut cursor = 0;
        for &(v, val) in list {
            while cursor < other.len() && other[cursor].0 < v {
                cursor += 1;
            }
            let matched = (cursor < other.len() && other[cursor].0 == v).then(|| other[cursor].1);
            visit(val, matched);
        }
    }

    /// The change of the non-trivial edge count a chain move causes, as the
    /// reference selection measures it (the same formula as
    /// [`crate::ElimGraph`]'s).
    pub(crate) fn scarcity_delta(&self, m: Move) -> i64 {
        match m {
            Move::Pre(..) | Move::Post(..) => 0,
            Move::Vertex(j) => {
                let ji = j as usize;
                let mut delta = 0;
                for &(_, c_kj) in &self.succ[ji] {
                    delta -= self.weight(c_kj);
                }
                for &(i, c_ji) in &self.pred[ji] {
                    delta -= self.weight(c_ji);
                    Self::merge(&self.succ[ji], &self.succ[i as usize], |c_kj, existing| {
                        delta += self.accumulate_delta(existing, c_ji, c_kj)
                    });
                }
                delta
            }
            Move::Front(i, j) => {
                let Some(c_ji) = self.value(i, j) else {
                    return 0;
                };
                let ji = j as usize;
                let mut delta = -self.weight(c_ji);
                Self::merge(&self.succ[ji], &self.succ[i as usize], |c_kj, existing| {
                    delta += self.accumulate_delta(existing, c_ji, c_kj)
                });
                if self.kinds[ji] == VertexKind::Intermediate && self.pred[ji].len() == 1 {
                    for &(_, c_kj) in &self.succ[ji] {
                        delta -= self.weight(c_kj);
                    }
                }
                delta
            }
            Move::Back(j, k) => {
                let Some(c_kj) = self.value(j, k) else {
                    return 0;
                };
                let ji = j as usize;
                let mut delta = -self.weight(c_kj);
                Self::merge(&self.pred[ji], &self.pred[k as usize], |c_ji, existing| {
                    delta += self.accumulate_delta(existing, c_kj, c_ji)
                });
                if self.kinds[ji] == VertexKind::Intermediate && self.succ[ji].len() == 1 {
                    for &(_, c_ji) in &self.pred[ji] {
                        delta -= self.weight(c_ji);
                    }
                }
                delta
            }
        }
    }

    /// Number of missing `(i,k)` edges the move would create.
    pub(crate) fn fill_in(&self, m: Move) -> usize {
        let mut missing = 0;
        let mut count = |_: W, existing: Option<W>| missing += usize::from(existing.is_none());
        match m {
            Move::Pre(..) | Move::Post(..) => {}
            Move::Vertex(j) => {
                for &(i, _) in &self.pred[j as usize] {
                    Self::merge(&self.succ[j as usize], &self.succ[i as usize], &mut count);
                }
            }
            Move::Front(i, j) => {
                Self::merge(&self.succ[j as usize], &self.succ[i as usize], &mut count)
            }
            Move::Back(j, k) => {
                Self::merge(&self.pred[j as usize], &self.pred[k as usize], &mut count)
            }
        }
        missing
    }

    /// [`Work::scarcity_delta`] and (with `fill`, else -1) [`Work::fill_in`]
    /// of the front elimination of the edge at position `at` of `u`'s
    /// successors, in one pass.
    fn front_measures(&self, u: u32, at: usize, fill: bool) -> (i32, i32) {
        let (j, c_ji) = self.succ[u as usize][at];
        let ji = j as usize;
        let mut delta = -self.weight(c_ji);
        let mut missing = 0;
        Self::merge(&self.succ[ji], &self.succ[u as usize], |c_kj, existing| {
            delta += self.accumulate_delta(existing, c_ji, c_kj);
            missing += i32::from(existing.is_none());
        });
        if self.kinds[ji] == VertexKind::Intermediate && self.pred[ji].len() == 1 {
            for &(_, c_kj) in &self.succ[ji] {
                delta -= self.weight(c_kj);
            }
        }
        (delta as i32, if fill { missing } else { -1 })
    }

    /// The same for the back elimination of that edge.
    fn back_measures(&self, u: u32, at: usize, fill: bool) -> (i32, i32) {
        let (k, c_kj) = self.succ[u as usize][at];
        let ji = u as usize;
        let mut delta = -self.weight(c_kj);
        let mut missing = 0;
        Self::merge(&self.pred[ji], &self.pred[k as usize], |c_ji, existing| {
            delta += self.accumulate_delta(existing, c_kj, c_ji);
            missing += i32::from(existing.is_none());
        });
        if self.kinds[ji] == VertexKind::Intermediate && self.succ[ji].len() == 1 {
            for &(_, c_ji) in &self.pred[ji] {
                delta -= self.weight(c_ji);
            }
        }
        (delta as i32, if fill { missing } else { -1 })
    }

    fn count_kind(list: &[(u32, W)], kinds: &[VertexKind], kind: VertexKind) -> usize {
        list.iter().filter(|e| kinds[e.0 as usize] == kind).count()
    }

    /// Markowitz degree.
    pub(crate) fn markowitz(&self, m: Move) -> usize {
        match m {
            Move::Pre(..) | Move::Post(..) => 0,
            Move::Vertex(j) => self.pred[j as usize].len() * self.succ[j as usize].len(),
            Move::Front(_, j) => self.succ[j as usize].len(),
            Move::Back(j, _) => self.pred[j as usize].len(),
        }
    }

    /// Relative Markowitz degree.
    pub(crate) fn relative_markowitz(&self, m: Move) -> i64 {
        let k = &self.kinds;
        let discount = match m {
            Move::Pre(..) | Move::Post(..) => 0,
            Move::Vertex(j) => {
                Self::count_kind(&self.pred[j as usize], k, VertexKind::Independent)
                    * Self::count_kind(&self.succ[j as usize], k, VertexKind::Dependent)
            }
            Move::Front(_, j) => Self::count_kind(&self.succ[j as usize], k, VertexKind::Dependent),
            Move::Back(j, _) => {
                Self::count_kind(&self.pred[j as usize], k, VertexKind::Independent)
            }
        };
        self.markowitz(m) as i64 - discount as i64
    }
}

// ------------------------------------------------------------------ caches

impl Work {
    /// The cached measures of the edge at position `at` of `u`'s
    /// successors, recomputed if either endpoint changed since.
    pub(crate) fn edge_cache(&mut self, u: u32, at: usize, fill: bool) -> (i32, i32, i32, i32) {
        // Front elimination of (u,w) reads the successors of u and w and
        // the predecessor count of w; back elimination the predecessors of
        // u and w and the successor count of u.
        let ui = u as usize;
        let w = self.succ[ui][at].0;
        let wi = w as usize;
        let front_last = self.touched_out[ui]
            .max(self.touched_out[wi])
            .max(self.touched_in[wi]);
        let back_last = self.touched_in[ui]
            .max(self.touched_in[wi])
            .max(self.touched_out[ui]);
        let c = &self.caches[self.slots[ui][at] as usize];
        let front_fresh = c.stamp != 0 && c.stamp >= front_last && (!fill || c.front_fill >= 0);
        let back_fresh =
            c.back_stamp != 0 && c.back_stamp >= back_last && (!fill || c.back_fill >= 0);
        if !(front_fresh && back_fresh) {
            self.refresh_sides(u, at, fill, !front_fresh, !back_fresh);
        }
        let c = &self.caches[self.slots[ui][at] as usize];
        (c.front, c.back, c.front_fill, c.back_fill)
    }
}

impl Work {
    /// The cost after a move, measured by performing and taking it back
    /// without invalidating any cache.
    pub(crate) fn probe_cost(&mut self, m: Move) -> Option<i64> {
        self.probes += 1;
        let same = self.same_as_vertex(m);
        if let Some(j) = same {
            let (version, after) = self.probed[j as usize];
            if version == self.version + 1 {
                return after;
            }
        }
        let mark = self.mark();
        let probing = self.probing;
        self.probing = true;
        self.apply(m);
        let after = self.cost();
        self.undo_to(mark);
        self.probing = probing;
        if let Some(j) = same {
            self.probed[j as usize] = (self.version + 1, after);
        }
        after
    }

    /// Makes distinct run-time factors beyond `max_pushes` cost `w_excess`
    /// more each (a change of the model: no cost measured before is
    /// reused).
    pub(crate) fn limit_tape(&mut self, max_pushes: i64, w_excess: i64) {
        self.model.max_pushes = max_pushes;
        self.model.w_excess = w_excess;
        self.version += 1;
    }

    /// The intermediate whose elimination leads to the same state as the
    /// move: the move itself, the front elimination of its only in-edge
    /// or the back elimination of its only out-edge (the same products in
    /// the same order, the same values, the same edges left).
    fn same_as_vertex(&self, m: Move) -> Option<u32> {
        let j = match m {
            Move::Vertex(j) => j,
            Move::Front(_, j) if self.pred[j as usize].len() == 1 => j,
            Move::Back(j, _) if self.succ[j as usize].len() == 1 => j,
            _ => return None,
        };
        (self.kinds[j as usize] == VertexKind::Intermediate).then_some(j)
    }

    /// The cost change of a move, from the cache when neither the move's
    /// vertices nor (for vertex moves) their neighbours changed since it
    /// was measured; `None` when the state after is not final.
    pub(crate) fn cached_delta(&mut self, m: Move, now: i64) -> Option<i64> {
        match m {
            Move::Pre(..) | Move::Post(..) => self.probe_cost(m).map(|c| c - now),
            Move::Vertex(v) => {
                let (stamp, delta) = self.vertex_cost[v as usize];
                let vi = v as usize;
                let mut last = self.touched[vi];
                for &(p, _) in &self.pred[vi] {
                    last = last.max(self.touched[p as usize]);
                }
                for &(k, _) in &self.succ[vi] {
                    last = last.max(self.touched[k as usize]);
                }
                if stamp != 0 && stamp >= last {
                    return delta;
                }
                let delta = self.probe_cost(m).map(|c| c - now);
                self.vertex_cost[vi] = (self.epoch, delta);
                delta
            }
            Move::Front(u, w) | Move::Back(u, w) => {
                let Ok(at) = self.succ[u as usize].binary_search_by_key(&w, |e| e.0) else {
                    return None;
                };
                let last = self.touched[u as usize]
                    .max(self.touched[w as usize])
                    .max(
                        self.succ[w as usize]
                            .iter()
                            .map(|e| self.touched[e.0 as usize])
                            .max()
                            .unwrap_or(0),
                    )
                    .max(
                        self.pred[u as usize]
                            .iter()
                            .map(|e| self.touched[e.0 as usize])
                            .max()
                            .unwrap_or(0),
                    );
                let front = matches!(m, Move::Front(..));
                let c = &self.caches[self.slots[u as usize][at] as usize];
                if c.cost_stamp != 0 && c.cost_stamp >= last {
                    let cached = if front { c.front_cost } else { c.back_cost };
                    if cached != UNKNOWN {
                        return Some(cached);
                    }
                }
                let delta = self.probe_cost(m).map(|c| c - now);
                let entry = &mut self.caches[self.slots[u as usize][at] as usize];
                if entry.cost_stamp < last || entry.cost_stamp == 0 {
                    entry.front_cost = UNKNOWN;
                    entry.back_cost = UNKNOWN;
                }
                entry.cost_stamp = self.epoch;
                let value = delta.unwrap_or(UNKNOWN);
                if front {
                    entry.front_cost = value;
                } else {
                    entry.back_cost = value;
                }
                delta
            }
        }
    }
}

impl Work {
    /// Drops the cached cost change of a move (it will be measured again).
    pub(crate) fn forget_delta(&mut self, m: Move) {
        match m {
            Move::Pre(..) | Move::Post(..) => {}
            Move::Vertex(v) => self.vertex_cost[v as usize].0 = 0,
            Move::Front(u, w) | Move::Back(u, w) => {
                if let Ok(at) = self.succ[u as usize].binary_search_by_key(&w, |e| e.0) {
                    self.caches[self.slots[u as usize][at] as usize].cost_stamp = 0;
                }
            }
        }
    }
}

impl Work {
    /// The journal entries since `mark`, for runners that maintain their
    /// own incremental state.
    pub(crate) fn changes_since(&self, mark: Mark) -> &[Entry] {
        &self.journal[mark.journal.min(self.journal.len())..]
    }

    /// The cache slots of the edges removed since `mark` (one per
    /// `Unlinked` entry of [`Work::changes_since`]); see
    /// [`Work::slot_cache`].
    pub(crate) fn unlinked_since(&self, mark: Mark) -> &[u32] {
        &self.unlinked[mark.unlinked.min(self.unlinked.len())..]
    }

    /// The cache in a slot.
    pub(crate) fn slot_cache(&self, slot: u32) -> &EdgeCache {
        &self.caches[slot as usize]
    }

    /// The cache of the edge at position `at` of `u`'s successors, to read.
    pub(crate) fn cache_ref(&self, u: u32, at: usize) -> &EdgeCache {
        &self.caches[self.slots[u as usize][at] as usize]
    }

    /// The cache of the edge at position `at` of `u`'s successors.
    pub(crate) fn cache_at(&mut self, u: u32, at: usize) -> &mut EdgeCache {
        &mut self.caches[self.slots[u as usize][at] as usize]
    }

    /// Recomputes the scarcity measures (and fills) of the front and/or
    /// back elimination of an edge now; returns the front and back
    /// scarcity changes.
    pub(crate) fn refresh_sides(
        &mut self,
        u: u32,
        at: usize,
        fill: bool,
        front: bool,
        back: bool,
    ) -> (i32, i32) {
        // Fields are written one by one (no copy of the whole entry read
        // back after partial writes).
        let ui = u as usize;
        let w = self.succ[ui][at].0;
        let epoch = self.epoch;
        if front {
            let (delta, fill_in) = if self.kinds[w as usize] == VertexKind::Intermediate {
                self.front_measures(u, at, fill)
            } else {
                (0, if fill { 0 } else { -1 })
            };
            let c = &mut self.caches[self.slots[ui][at] as usize];
            c.front = delta;
            c.front_fill = fill_in;
            c.stamp = epoch;
        }
        if back {
            let (delta, fill_in) = if self.kinds[ui] != VertexKind::Independent {
                self.back_measures(u, at, fill)
            } else {
                (0, if fill { 0 } else { -1 })
            };
            let c = &mut self.caches[self.slots[ui][at] as usize];
            c.back = delta;
            c.back_fill = fill_in;
            c.back_stamp = epoch;
        }
        let c = &self.caches[self.slots[ui][at] as usize];
        (c.front, c.back)
    }

    /// Recomputes both scarcity measures (and fills) of an edge now.
    pub(crate) fn refresh_edge(&mut self, u: u32, at: usize, fill: bool) -> (i32, i32) {
        self.refresh_sides(u, at, fill, true, true)
    }

    /// Position of `w` in `u`'s successors.
    pub(crate) fn position(&self, u: u32, w: u32) -> Option<usize> {
        self.succ[u as usize].binary_search_by_key(&w, |e| e.0).ok()
    }
}

impl Work {
    /// The current epoch (see [`EdgeCache`]).
    pub(crate) fn epoch(&self) -> u32 {
        self.epoch
    }
}

/// The far ends of `edges` (a vertex's out- or in-edges) where a cut of
/// [`Work::cut_sums`] starts: those of run-time edges, and those of every
/// edge but the constant zero.
fn cut_ends(edges: &[(u32, W)]) -> (Vec<u32>, Vec<u32>) {
    let run = edges
        .iter()
        .filter(|e| matches!(e.1, W::Run(..)))
        .map(|e| e.0)
        .collect();
    let all = edges
        .iter()
        .filter(|e| e.1.class() != 3)
        .map(|e| e.0)
        .collect();
    (run, all)
}
