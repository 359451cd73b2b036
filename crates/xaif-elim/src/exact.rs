//! The exact search of `--effort exhaustive` over vertex elimination
//! sequences: branch and bound on which inner vertices are kept, with the
//! graph split into independent parts wherever kept vertices separate it,
//! each part searched alone (A* over its sets of eliminated vertices) and
//! remembered by its canonical neighbourhood.
//!
//! # Why a kept vertex separates
//!
//! In vertex elimination, eliminating `u` changes only edges from `u`'s
//! predecessors to `u`'s successors. A vertex `v` that is never
//! eliminated therefore gets new in-edges only from eliminations above it
//! and new out-edges only from eliminations below it, and the cost of its
//! in-edges (the propagation into `v`) depends on the part above alone.
//! So once some vertices are decided kept, the undecided inner vertices
//! fall into parts that never touch each other's edges: two vertices are
//! in one part when an edge joins them, when they are predecessors of a
//! common vertex outside the parts (absorption into its in-edges, its
//! propagation cost) or when they carry the same run-time value (shared
//! pushes and negations). The cost of a sequence is then the cost of the
//! state searched plus the sum of what each part's moves change, and the
//! cheapest sequence is the concatenation of the parts' cheapest ones.
//!
//! # The search
//!
//! A part with at most [`LEAF`] vertices is searched by A* over its sets
//! of eliminated vertices (after vertex eliminations the graph depends on
//! the set eliminated, not on the order; states are the sets, the
//! heuristic the admissible bound of [`Work::lower_bound`], which holds
//! for the moves of one part as for all moves). A larger part is split by
//! branching on one of its vertices, the one whose keeping leaves the
//! smallest largest part: either it is kept (the rest splits) or it is
//! eliminated at some time (it must be gone at the end: the same part,
//! one vertex fewer to decide). Both branches together cover every
//! sequence, so the cheaper branch is the part's optimum and the smaller
//! of their bounds its bound. Parts are remembered by a hash of their
//! vertices, their edges, the in-edges of the vertices they feed and the
//! facts of their run-time values, so a part met again in another branch
//! is not searched again.
//!
//! The budget counts states expanded by the A* searches; once it is
//! spent, the parts not searched get the graph's bound and nothing is
//! proven. The search runs under the model without the excess tape
//! weight (a relaxation: the excess is never negative), so the optimum it
//! proves is a lower bound, and a proof of the real model when the best
//! sequence taps no excess. Recursion is one level per decided vertex, at
//! most [`MAX_INNER`] deep.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap as HashMap;

use crate::work::{Mark, Move, Work, W};

/// Parts with at most this many vertices are searched by A* over subsets.
pub(crate) const LEAF: usize = 12;

/// Parts of up to this many vertices are searched by A* over subsets
/// directly, without branching, while the budget left covers every one of
/// their subsets: branching on a vertex leaves its "eliminated" branch
/// with a part of the same size, so a part of 18 vertices branched down to
/// 12 searches up to 2^6 parts of 18 vertices (the corpus's graph of 9
/// intermediates and 18 inner vertices spent 4·10^6 states unproven),
/// where A* over its 2^18 subsets at most proves it in a few seconds.
/// Beyond 20 the subsets' map would outgrow the memory a search may take.
pub(crate) const DIRECT: usize = 20;

/// Graphs with more inner vertices than this are not searched.
pub(crate) const MAX_INNER: usize = 256;

/// What the search established, in model units of the relaxed model.
#[derive(Clone, Debug)]
pub(crate) struct Outcome {
    /// The cheapest vertex sequence found from the state searched and its
    /// cost.
    pub best: Option<(Vec<Move>, i64)>,
    /// A lower bound on the cost of every vertex elimination sequence.
    pub bound: i64,
    /// Whether `best` is proven optimal among vertex elimination
    /// sequences.
    pub proven: bool,
    /// States expanded.
    pub states: usize,
}

/// The result for one part: the cheapest change of the cost its moves
/// make, the moves, a lower bound on that change, and whether it is
/// proven.
#[derive(Clone, Debug)]
struct PartResult {
    delta: i64,
    moves: Vec<Move>,
    bound: i64,
    proven: bool,
}

struct Solver<'a> {
    work: &'a mut Work,
    must: Vec<bool>,
    memo: HashMap<(u64, u64), PartResult>,
    states: usize,
    budget: usize,
    /// Parts up to this size are searched by A*.
    leaf: usize,
    /// Parts up to this size are searched by A* while the budget left
    /// covers all their subsets ([`DIRECT`]).
    direct: usize,
    /// The bound of the whole graph at the root, as a change of its cost:
    /// what a part that is not searched is given.
    root_slack: i64,
    /// Scratch of the part splitting: membership stamps.
    in_set: Vec<u32>,
    stamp: u32,
}

/// The exact search over vertex elimination sequences from the current
/// state of `work` (restored on return), expanding at most `budget`
/// states, under the model without the excess tape weight.
pub(crate) fn vertex_search(work: &mut Work, budget: usize) -> Outcome {
    vertex_search_with(work, budget, LEAF, DIRECT)
}

/// [`vertex_search`] with parts of at most `leaf` vertices searched by A*,
/// and of at most `direct` while the budget left covers their subsets.
fn vertex_search_with(work: &mut Work, budget: usize, leaf: usize, direct: usize) -> Outcome {
    let model = work.model;
    work.limit_tape(i64::MAX, 0);
    let inner: Vec<u32> = work.inner_vertices().collect();
    let Some(base_cost) = work.cost() else {
        work.limit_tape(model.max_pushes, model.w_excess);
        return Outcome {
            best: None,
            bound: i64::MIN,
            proven: false,
            states: 0,
        };
    };
    if inner.len() > MAX_INNER || model.total {
        let bound = work.lower_bound();
        work.limit_tape(model.max_pushes, model.w_excess);
        return Outcome {
            best: None,
            bound,
            proven: false,
            states: 0,
        };
    }
    let n = work.len();
    let root_slack = work.lower_bound() - base_cost;
    let mut solver = Solver {
        work,
        must: vec![false; n],
        memo: HashMap::default(),
        states: 0,
        budget,
        leaf,
        direct,
        root_slack,
        in_set: vec![0; n],
        stamp: 0,
    };
    let parts = solver.split(&inner);
    let mut total = PartResult {
        delta: 0,
        moves: Vec::new(),
        bound: 0,
        proven: true,
    };
    for part in parts {
        let r = solver.solve(&part);
        total.delta += r.delta;
        total.bound += r.bound;
        total.proven &= r.proven;
        total.moves.extend(r.moves);
    }
    let states = solver.states;
    let work = solver.work;
    // The parts' moves together, priced as one sequence.
    let mark = work.mark();
    for &m in &total.moves {
        work.apply(m);
    }
    let cost = work.cost();
    work.undo_to(mark);
    work.limit_tape(model.max_pushes, model.w_excess);
    let best = cost.map(|c| (total.moves, c));
    let consistent = best
        .as_ref()
        .is_some_and(|b| b.1 == base_cost + total.delta);
    Outcome {
        bound: (base_cost + total.bound).max(base_cost + root_slack),
        proven: total.proven && consistent,
        best,
        states,
    }
}

impl Solver<'_> {
    /// The parts of `vertices` (inner vertices, none kept) in the current
    /// state, each sorted, in the order of their smallest vertex.
    fn split(&mut self, vertices: &[u32]) -> Vec<Vec<u32>> {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.in_set.iter_mut().for_each(|s| *s = 0);
            self.stamp = 1;
        }
        let stamp = self.stamp;
        let mut index: HashMap<u32, usize> = HashMap::default();
        for (k, &v) in vertices.iter().enumerate() {
            self.in_set[v as usize] = stamp;
            index.insert(v, k);
        }
        let mut parent: Vec<usize> = (0..vertices.len()).collect();
        fn find(parent: &mut [usize], mut a: usize) -> usize {
            while parent[a] != a {
                parent[a] = parent[parent[a]];
                a = parent[a];
            }
            a
        }
        let union = |parent: &mut Vec<usize>, a: usize, b: usize| {
            let (a, b) = (find(parent, a), find(parent, b));
            if a != b {
                parent[a.max(b)] = a.min(b);
            }
        };
        // A common target outside, a common run-time value.
        let mut target_of: HashMap<u32, usize> = HashMap::default();
        let mut value_of: HashMap<u32, usize> = HashMap::default();
        for (k, &u) in vertices.iter().enumerate() {
            for &(w, val) in self.work.succs(u) {
                if self.in_set[w as usize] == stamp {
                    union(&mut parent, k, index[&w]);
                } else {
                    let first = *target_of.entry(w).or_insert(k);
                    union(&mut parent, k, first);
                    // The in-edges of a target outside are the part's too
                    // (absorption changes them).
                    for &(_, into) in self.work.preds(w) {
                        if let W::Run(id, _) = into {
                            let first = *value_of.entry(id).or_insert(k);
                            union(&mut parent, k, first);
                        }
                    }
                }
                if let W::Run(id, _) = val {
                    let first = *value_of.entry(id).or_insert(k);
                    union(&mut parent, k, first);
                }
            }
            for &(_, val) in self.work.preds(u) {
                if let W::Run(id, _) = val {
                    let first = *value_of.entry(id).or_insert(k);
                    union(&mut parent, k, first);
                }
            }
        }
        // A vertex without predecessors cuts off what it reaches when it
        // goes (the isolation rule), whatever part that is in.
        for (k, &u) in vertices.iter().enumerate() {
            if !self.work.preds(u).is_empty() {
                continue;
            }
            let mut stack = vec![u];
            let mut seen: Vec<u32> = vec![u];
            while let Some(w) = stack.pop() {
                for &(x, _) in self.work.succs(w) {
                    if !seen.contains(&x) {
                        seen.push(x);
                        stack.push(x);
                        if let Some(&j) = index.get(&x) {
                            union(&mut parent, k, j);
                        }
                        // What it reaches may lose in-edges: whatever
                        // else feeds them shares them.
                        for &(p, _) in self.work.preds(x) {
                            if let Some(&j) = index.get(&p) {
                                union(&mut parent, k, j);
                            }
                        }
                    }
                }
            }
        }
        let mut groups: HashMap<usize, Vec<u32>> = HashMap::default();
        for (k, &v) in vertices.iter().enumerate() {
            let r = find(&mut parent, k);
            groups.entry(r).or_default().push(v);
        }
        let mut parts: Vec<Vec<u32>> = groups.into_values().collect();
        for p in &mut parts {
            p.sort_unstable();
        }
        parts.sort_unstable();
        parts
    }

    /// A hash of everything the part's cheapest change depends on: its
    /// vertices and which must go, their edges, the in-edges of the
    /// vertices they feed, and the facts of the run-time values there
    /// (numbered by first appearance).
    fn key(&self, part: &[u32]) -> (u64, u64) {
        let mut h1: u64 = 0xcbf2_9ce4_8422_2325;
        let mut h2: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut mix = |x: u64| {
            h1 = (h1 ^ x).wrapping_mul(0x0000_0100_0000_01b3);
            h2 = (h2 ^ x.rotate_left(29)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        };
        let mut ids: HashMap<u32, u64> = HashMap::default();
        let mut code = |work: &Work, val: W| -> u64 {
            match val {
                W::One(neg) => u64::from(neg),
                W::Const(c) => c.to_bits() ^ 0x5555,
                W::Run(id, neg) => {
                    let next = ids.len() as u64;
                    let canon = *ids.entry(id).or_insert(next);
                    let (sub, unread, uses) = work.value_facts(id);
                    (canon << 24)
                        | (u64::from(uses.min(0xffff)) << 4)
                        | (u64::from(unread) << 3)
                        | (u64::from(sub) << 2)
                        | (u64::from(neg) << 1)
                        | 0xa000_0000_0000_0000
                }
            }
        };
        mix(part.len() as u64);
        let mut targets: Vec<u32> = Vec::new();
        for &u in part {
            mix(u64::from(u) << 8 | u64::from(self.must[u as usize]));
            for &(w, val) in self.work.succs(u) {
                mix(u64::from(w) << 2 | 1);
                mix(code(self.work, val));
                if part.binary_search(&w).is_err() {
                    targets.push(w);
                }
            }
            for &(p, val) in self.work.preds(u) {
                mix(u64::from(p) << 2 | 2);
                mix(code(self.work, val));
            }
        }
        targets.sort_unstable();
        targets.dedup();
        for t in targets {
            mix(u64::from(t) << 2 | 3);
            for &(p, val) in self.work.preds(t) {
                mix(u64::from(p));
                mix(code(self.work, val));
            }
        }
        (h1, h2)
    }

    /// The part's cheapest change of the cost, from the current state.
    fn solve(&mut self, part: &[u32]) -> PartResult {
        let key = self.key(part);
        if let Some(r) = self.memo.get(&key) {
            return r.clone();
        }
        if self.states >= self.budget {
            return PartResult {
                delta: i64::MAX / 4,
                moves: Vec::new(),
                bound: self.root_slack,
                proven: false,
            };
        }
        self.states += 1;
        let free: Vec<u32> = part
            .iter()
            .copied()
            .filter(|&v| !self.must[v as usize])
            .collect();
        let left = self.budget - self.states;
        let whole = part.len() <= self.direct
            && 1usize
                .checked_shl(free.len() as u32)
                .is_some_and(|n| n <= left);
        let result = if part.len() <= self.leaf || free.is_empty() || whole {
            self.leaf(part)
        } else {
            self.branch(part, &free)
        };
        if result.proven || self.states < self.budget {
            self.memo.insert(key, result.clone());
        }
        result
    }

    /// Branches on the free vertex whose keeping splits the part best.
    fn branch(&mut self, part: &[u32], free: &[u32]) -> PartResult {
        let mut choice: Option<(usize, usize, u32, Vec<Vec<u32>>)> = None;
        for &v in free {
            let rest: Vec<u32> = part.iter().copied().filter(|&u| u != v).collect();
            let parts = self.split(&rest);
            let largest = parts.iter().map(Vec::len).max().unwrap_or(0);
            let better = choice
                .as_ref()
                .is_none_or(|c| (largest, usize::MAX - parts.len()) < (c.0, c.1));
            if better {
                choice = Some((largest, usize::MAX - parts.len(), v, parts));
            }
        }
        let Some((_, _, v, parts)) = choice else {
            return self.leaf(part);
        };
        // Kept: the rest splits.
        let mut kept = PartResult {
            delta: 0,
            moves: Vec::new(),
            bound: 0,
            proven: true,
        };
        for p in &parts {
            let r = self.solve(p);
            kept.delta = kept.delta.saturating_add(r.delta);
            kept.bound = kept.bound.saturating_add(r.bound);
            kept.proven &= r.proven;
            kept.moves.extend(r.moves);
        }
        // Eliminated at some time.
        self.must[v as usize] = true;
        let gone = self.solve(part);
        self.must[v as usize] = false;
        let (mut best, other) = if gone.delta < kept.delta {
            (gone, kept)
        } else {
            (kept, gone)
        };
        best.bound = best.bound.min(other.bound);
        best.proven &= other.proven;
        best
    }

    /// A* over the vertex elimination sequences of a part (those that
    /// leave no vertex that must go), states remembered by
    /// [`Work::state_key`]: the graph and its values, not the set
    /// eliminated, since the order can change which run-time values are
    /// shared or negated.
    fn leaf(&mut self, part: &[u32]) -> PartResult {
        let unsearched = PartResult {
            delta: i64::MAX / 4,
            moves: Vec::new(),
            bound: self.root_slack,
            proven: false,
        };
        if self.states >= self.budget {
            return unsearched;
        }
        let work = &mut *self.work;
        let Some(base_cost) = work.cost() else {
            return unsearched;
        };
        let must = &self.must;
        // Whether every vertex that must go is gone (or no longer inner).
        let done = |work: &Work| part.iter().all(|&v| !must[v as usize] || !work.is_inner(v));
        let base = work.mark();
        let mut best_cost = i64::MAX;
        let mut best_node: Option<u32> = None;
        if done(work) {
            best_cost = base_cost;
            best_node = Some(0);
        }
        let mut nodes = vec![Node {
            g: work.g(),
            parent: u32::MAX,
            step: u32::MAX,
        }];
        let mut scratch = crate::work::KeyScratch::default();
        let mut seen: HashMap<(u64, u64), i64> = HashMap::default();
        seen.insert(work.state_key(&mut scratch), work.g());
        let mut open: BinaryHeap<(Reverse<i64>, Reverse<u32>)> = BinaryHeap::new();
        open.push((Reverse(work.lower_bound()), Reverse(0)));
        let mut applied: Vec<(u32, Mark)> = Vec::new();
        let mut chain: Vec<u32> = Vec::new();
        let mut exhausted = true;
        while let Some((Reverse(f), Reverse(id))) = open.pop() {
            if f >= best_cost {
                open.clear();
                break;
            }
            if self.states >= self.budget {
                open.push((Reverse(f), Reverse(id)));
                exhausted = false;
                break;
            }
            self.states += 1;
            goto_node(work, &nodes, id, &mut applied, &mut chain);
            let node = nodes[id as usize];
            let g_here = work.g();
            for &v in part {
                if !work.is_inner(v) {
                    continue;
                }
                let mark = work.mark();
                work.apply(Move::Vertex(v));
                let child_g = node.g + (work.g() - g_here);
                let h = work.lower_bound() - work.g();
                let stop = if done(work) {
                    work.final_cost().map(|s| child_g + s)
                } else {
                    None
                };
                let key = work.state_key(&mut scratch);
                work.undo_to(mark);
                if seen.get(&key).is_some_and(|&g| g <= child_g) {
                    continue;
                }
                seen.insert(key, child_g);
                let child = nodes.len() as u32;
                nodes.push(Node {
                    g: child_g,
                    parent: id,
                    step: v,
                });
                if let Some(stop) = stop.filter(|&s| s < best_cost) {
                    best_cost = stop;
                    best_node = Some(child);
                }
                if child_g + h < best_cost {
                    open.push((Reverse(child_g + h), Reverse(child)));
                }
            }
        }
        work.undo_to(base);
        let open_bound = open.iter().map(|(Reverse(f), _)| *f).min();
        let proven = exhausted && open_bound.is_none() && best_node.is_some();
        let bound = open_bound.map_or(best_cost, |b| b.min(best_cost));
        let mut moves = Vec::new();
        if let Some(mut id) = best_node {
            while id != 0 {
                let n = nodes[id as usize];
                moves.push(Move::Vertex(n.step));
                id = n.parent;
            }
            moves.reverse();
        }
        PartResult {
            delta: if best_node.is_some() {
                best_cost - base_cost
            } else {
                i64::MAX / 4
            },
            moves,
            bound: if bound == i64::MAX {
                self.root_slack
            } else {
                bound - base_cost
            },
            proven,
        }
    }
}

/// A state of the A* search of a part: the cost so far, the state it was
/// reached from and the vertex eliminated on the way.
#[derive(Clone, Copy)]
struct Node {
    g: i64,
    parent: u32,
    step: u32,
}

/// Brings `work` to the state of node `id` (the moves on its path from
/// the root), reusing the common prefix of what is applied.
fn goto_node(
    work: &mut Work,
    nodes: &[Node],
    id: u32,
    applied: &mut Vec<(u32, Mark)>,
    chain: &mut Vec<u32>,
) {
    chain.clear();
    let mut at = id;
    while at != 0 && at != u32::MAX {
        chain.push(at);
        at = nodes[at as usize].parent;
    }
    chain.reverse();
    let mut keep = 0;
    while keep < applied.len() && keep < chain.len() && applied[keep].0 == chain[keep] {
        keep += 1;
    }
    if keep < applied.len() {
        work.undo_to(applied[keep].1);
        applied.truncate(keep);
    }
    for &n in &chain[keep..] {
        let mark = work.mark();
        work.apply(Move::Vertex(nodes[n as usize].step));
        applied.push((n, mark));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::{model, Goal, PropagationMode};
    use crate::graph::{Label, Lcg, VarId, VertexId, VertexKind};
    use crate::strategy::Metric;
    use crate::value::Triviality;
    use crate::ElimGraph;
    use proptest::prelude::*;

    fn graph() -> impl Strategy<Value = Lcg> {
        let label = prop_oneof![
            3 => Just(Label::Unit),
            1 => Just(Label::MinusOne),
            1 => Just(Label::Constant(2.0)),
            5 => (0u32..8).prop_map(|v| Label::Variable(VarId(v))),
        ];
        (
            2usize..=3,
            prop::collection::vec(prop::bool::weighted(0.25), 4..=8),
            prop::collection::vec((0usize..12, 0usize..12, label), 4..=20),
        )
            .prop_map(|(x, dependent, edges)| {
                let n = x + dependent.len();
                let mut g = Lcg::new();
                for r in 0..n {
                    let kind = if r < x {
                        VertexKind::Independent
                    } else if r + 1 == n || dependent[r - x] {
                        VertexKind::Dependent
                    } else {
                        VertexKind::Intermediate
                    };
                    g.add_vertex(kind);
                }
                for (a, b, l) in edges {
                    let (lo, hi) = (a.min(b) % n, a.max(b) % n);
                    if lo < hi && hi >= x {
                        let _ = g.add_edge(VertexId(lo as u32), VertexId(hi as u32), l);
                    }
                }
                g
            })
    }

    /// The cheapest cost over every vertex elimination sequence from the
    /// current state (restored), by trying them all.
    fn every_sequence(work: &mut Work) -> i64 {
        let mut best = work.cost().unwrap_or(i64::MAX);
        let inner: Vec<u32> = work.inner_vertices().collect();
        for v in inner {
            let mark = work.mark();
            work.apply(Move::Vertex(v));
            best = best.min(every_sequence(work));
            work.undo_to(mark);
        }
        best
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Part by part, with parts split down to one or two vertices,
        /// the search finds the optimum over all vertex elimination
        /// sequences (found by trying every sequence), its sequence costs
        /// what it claims, and its bound is that optimum when proven and
        /// below it otherwise, with the cut bound of `--effort exhaustive`
        /// or without.
        #[test]
        fn parts_give_the_optimum_of_every_sequence(
            lcg in graph(),
            leaf in 1usize..=3,
            cut in any::<bool>(),
        ) {
            let Ok(built) = ElimGraph::new(&lcg) else { return Ok(()) };
            for mode in [PropagationMode::Tangent, PropagationMode::Adjoint] {
                let m = model(Goal::RunTime, mode, Metric::default(), Triviality::default());
                let mut work = Work::new(&built, m, Triviality::default());
                if cut {
                    prop_assert!(work.enable_cut_floor());
                }
                let optimum = every_sequence(&mut work);
                let parts = vertex_search_with(&mut work, 1 << 20, leaf, leaf);
                prop_assert!(parts.proven);
                let (moves, cost) = parts.best.clone().unwrap();
                let mark = work.mark();
                for &mv in &moves {
                    prop_assert!(work.can(mv));
                    work.apply(mv);
                }
                prop_assert_eq!(work.cost(), Some(cost));
                work.undo_to(mark);
                prop_assert_eq!(cost, optimum, "{:?} {:?}", mode, moves);
                prop_assert_eq!(parts.bound, optimum);
                // A budget too small proves nothing, and its bound holds.
                let short = vertex_search_with(&mut work, 3, leaf, leaf);
                // Whole parts searched directly: the same optimum.
                let direct = vertex_search_with(&mut work, 1 << 20, leaf, DIRECT);
                prop_assert!(direct.proven);
                prop_assert_eq!(direct.bound, optimum);
                prop_assert_eq!(direct.best.map(|b| b.1), Some(optimum));
                prop_assert!(short.bound <= optimum);
            }
        }
    }
}
