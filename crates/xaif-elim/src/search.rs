//! Searching for cheap elimination sequences on the working graph.
//!
//! - [`descend`]: greedy improvement of a state by single moves (vertex
//!   eliminations, dependent cuts, front and back edge eliminations) whose
//!   cost change is negative (or zero, with `-m`), best first. Applied to
//!   the remainder of a finished sequence this is the post-processing of
//!   the issue: unit edges are forwarded or back-propagated exactly when
//!   that pays off, and so is everything else.
//! - [`exact_vertices`]: A* over sets of eliminated inner vertices
//!   (intermediates and dependents with out-edges). After vertex
//!   eliminations the graph, and so the cost of every further step and of
//!   stopping, depends only on the set eliminated, not on the order, so
//!   the sets form a lattice with additive step costs; states reached in
//!   different orders are the same state (memoised by their set). The
//!   heuristic is the admissible and consistent bound of
//!   [`Work::lower_bound`]. Finishing the search proves the best set
//!   optimal among all vertex elimination sequences, partial ones
//!   included; a node budget stops it early with the best found and the
//!   smallest bound left open (the gap).
//! - [`exact_edges`]: the same over edge-elimination states, which include
//!   every vertex elimination state, for graphs small enough; states are
//!   memoised by a hash of their structure and value shapes.
//! - [`beam`]: beam search over vertex and edge moves for graphs too large
//!   for either proof, seeded with the states of the heuristic chains.
//!
//! Budgets count expanded states, never time, so results do not depend on
//! the machine's speed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap as HashMap;

use crate::work::{Move, Work};

/// Which moves a search may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Moves {
    pub vertices: bool,
    pub edges: bool,
    /// Pre- and post-routings (`-R`).
    pub reroutings: bool,
}

/// Every possible move of the kinds asked for, in a fixed order.
pub(crate) fn moves(work: &Work, kinds: Moves, out: &mut Vec<Move>) {
    out.clear();
    if kinds.vertices {
        out.extend(work.inner_vertices().map(Move::Vertex));
    }
    if kinds.edges {
        work.edge_moves(out);
    }
    if kinds.reroutings {
        work.reroute_moves(out);
    }
}

/// Greedy descent from the current state: applies the best improving move
/// until none is left (or `steps` moves were made) and returns the moves.
/// With `plateau`, moves that keep the cost are taken when nothing
/// improves, at most `plateau_steps` of them in a row.
pub(crate) fn descend(work: &mut Work, kinds: Moves, plateau: bool, steps: usize) -> Vec<Move> {
    descend_marked(work, kinds, plateau, steps, &mut Vec::new())
}

/// [`descend`], pushing onto `marks` the mark before each move taken.
pub(crate) fn descend_marked(
    work: &mut Work,
    kinds: Moves,
    plateau: bool,
    steps: usize,
    marks: &mut Vec<crate::work::Mark>,
) -> Vec<Move> {
    let marks_at_start = marks.len();
    let mut done = Vec::new();
    let mut candidates = Vec::new();
    // Where the current run of cost-neutral moves began.
    let mut flat: Option<(crate::work::Mark, usize)> = None;
    let mut retries = 0;
    while done.len() < steps {
        let Some(now) = work.cost() else { break };
        moves(work, kinds, &mut candidates);
        // The best move, and whether its change was measured in this state.
        let mut best: Option<(i64, Move, bool)> = None;
        for &m in &candidates {
            let probes = work.probes;
            if let Some(d) = work.cached_delta(m, now) {
                if best.is_none_or(|(b, _, _)| d < b) {
                    best = Some((d, m, work.probes != probes));
                }
            }
        }
        let Some((cached, m, measured_here)) = best else {
            break;
        };
        // Cached changes ignore far-away effects (shared factors); the
        // chosen move is measured again before it is taken, unless it was
        // just measured in this very state (probes take themselves back).
        let real = if measured_here {
            Some(cached)
        } else {
            work.probe_cost(m).map(|c| c - now)
        };
        if real != Some(cached) && retries < 4 {
            retries += 1;
            work.forget_delta(m);
            continue;
        }
        retries = 0;
        match real {
            Some(d) if d < 0 => {
                flat = None;
                marks.push(work.mark());
                work.apply(m);
                done.push(m);
            }
            Some(0) if plateau => {
                if flat.is_none() {
                    flat = Some((work.mark(), done.len()));
                }
                if done.len() - flat.map_or(0, |f| f.1) >= PLATEAU {
                    break;
                }
                marks.push(work.mark());
                work.apply(m);
                done.push(m);
            }
            _ => break,
        }
    }
    // A walk over equal costs that led nowhere is taken back.
    if let Some((mark, len)) = flat {
        work.undo_to(mark);
        done.truncate(len);
        marks.truncate(marks_at_start + len);
    }
    done
}

/// Longest walk over moves that keep the cost (`-m`).
const PLATEAU: usize = 8;

/// Whether stopping in the current state costs at most `ops_limit` in
/// everything but the push terms: the optimizer never returns a sequence
/// that spends more operations than the reference's selection, so the
/// exact searches prove optimality among the sequences it may return.
/// The state's operations do not depend on the path to it beyond `g`,
/// which the searches minimise per state, so the constraint keeps them
/// exact.
fn within(work: &Work, ops_limit: i64) -> bool {
    work.cost_split().is_some_and(|(ops, _)| ops <= ops_limit)
}

/// The proof and the bound an A* search leaves: proven when it ran out of
/// open states within its budget, bounded by the cheapest open state (or
/// by the best found).
fn settle(
    result: &mut Exact,
    open: &BinaryHeap<(Reverse<i64>, Reverse<u32>)>,
    exhausted: bool,
    best_cost: i64,
) {
    let open_bound = open.iter().map(|(Reverse(f), _)| *f).min();
    result.proven = exhausted && open_bound.is_none();
    result.lower_bound = open_bound.map_or(best_cost, |b| b.min(best_cost));
}

/// What an exact search established.
#[derive(Clone, Debug)]
pub(crate) struct Exact {
    /// The best sequence found (from the start state) and its cost, if it
    /// beats the incumbent the search was given.
    pub best: Option<(Vec<Move>, i64)>,
    /// A lower bound on every reachable state's cost.
    pub lower_bound: i64,
    /// Whether the search space was exhausted (the best is optimal).
    pub proven: bool,
    /// States expanded.
    pub expanded: usize,
}

#[derive(Clone, Copy, Debug)]
struct VNode {
    set: u128,
    g: i64,
    parent: u32,
    vertex: u32,
}

/// A* over sets of eliminated inner vertices, from the current state of
/// `work` (which is restored). `incumbent` is the cost of a known
/// solution within `ops_limit` (see [`within`]); only cheaper ones within
/// it are reported. At most `budget` states are
/// expanded. Graphs with more than 128 inner vertices are not searched.
pub(crate) fn exact_vertices(
    work: &mut Work,
    incumbent: i64,
    ops_limit: i64,
    budget: usize,
) -> Exact {
    let inner: Vec<u32> = work.inner_vertices().collect();
    let root_bound = work.lower_bound();
    let mut result = Exact {
        best: None,
        lower_bound: root_bound.min(incumbent),
        proven: false,
        expanded: 0,
    };
    if inner.len() > 128 {
        return result;
    }
    let base = work.mark();
    let g0 = work.g();
    let mut best_cost = incumbent;
    let mut best_node: Option<u32> = None;
    if let Some(c) = work.cost() {
        if c < best_cost && within(work, ops_limit) {
            best_cost = c;
            best_node = Some(0);
        }
    }
    let mut nodes = vec![VNode {
        set: 0,
        g: g0,
        parent: u32::MAX,
        vertex: u32::MAX,
    }];
    let mut seen: HashMap<u128, i64> = HashMap::default();
    seen.insert(0, g0);
    let mut open: BinaryHeap<(Reverse<i64>, Reverse<u32>)> = BinaryHeap::new();
    open.push((Reverse(root_bound), Reverse(0)));
    // The vertices currently applied to `work`, in the order applied
    // (ascending bit), with the mark before each.
    let mut applied: Vec<(usize, crate::work::Mark)> = Vec::new();
    let mut exhausted = true;
    while let Some((Reverse(f), Reverse(id))) = open.pop() {
        if f >= best_cost {
            // Everything left is at least as expensive as the best.
            open.clear();
            break;
        }
        let node = nodes[id as usize];
        if seen.get(&node.set).is_some_and(|&g| g < node.g) {
            continue;
        }
        if result.expanded >= budget {
            open.push((Reverse(f), Reverse(id)));
            exhausted = false;
            break;
        }
        result.expanded += 1;
        goto_set(work, &inner, node.set, &mut applied);
        let g_here = work.g();
        for (bit, &v) in inner.iter().enumerate() {
            if node.set & (1u128 << bit) != 0 || !work.is_inner(v) {
                continue;
            }
            let mark = work.mark();
            work.apply(Move::Vertex(v));
            let step = work.g() - g_here;
            let child_g = node.g + step;
            let h = work.lower_bound() - work.g();
            let stop = work
                .final_cost()
                .filter(|&stop| child_g + stop < best_cost && within(work, ops_limit));
            work.undo_to(mark);
            let set = node.set | (1u128 << bit);
            if seen.get(&set).is_some_and(|&g| g <= child_g) {
                continue;
            }
            seen.insert(set, child_g);
            let child = nodes.len() as u32;
            nodes.push(VNode {
                set,
                g: child_g,
                parent: id,
                vertex: v,
            });
            // (`stop` is only kept when it beats the best, within the limit.)
            if let Some(stop) = stop {
                best_cost = child_g + stop;
                best_node = Some(child);
            }
            if child_g + h < best_cost {
                open.push((Reverse(child_g + h), Reverse(child)));
            }
        }
    }
    work.undo_to(base);
    settle(&mut result, &open, exhausted, best_cost);
    if let Some(mut id) = best_node {
        let mut path = Vec::new();
        while id != 0 && id != u32::MAX {
            let n = nodes[id as usize];
            path.push(Move::Vertex(n.vertex));
            id = n.parent;
        }
        path.reverse();
        result.best = Some((path, best_cost));
    }
    result
}

/// Brings `work` to the state where exactly the vertices of `set` are
/// eliminated, reusing the common prefix of what is applied.
fn goto_set(
    work: &mut Work,
    inner: &[u32],
    set: u128,
    applied: &mut Vec<(usize, crate::work::Mark)>,
) {
    // Vertices are applied in ascending bit order, so what is applied can
    // be kept as far as it equals the lowest bits of the target set.
    let mut keep = 0;
    let mut rest = set;
    while keep < applied.len() && rest != 0 {
        if applied[keep].0 != rest.trailing_zeros() as usize {
            break;
        }
        rest &= rest - 1;
        keep += 1;
    }
    if keep < applied.len() {
        work.undo_to(applied[keep].1);
        applied.truncate(keep);
    }
    while rest != 0 {
        let bit = rest.trailing_zeros() as usize;
        let mark = work.mark();
        let v = inner[bit];
        if work.is_inner(v) {
            work.apply(Move::Vertex(v));
        }
        applied.push((bit, mark));
        rest &= rest - 1;
    }
}

#[derive(Clone, Copy, Debug)]
struct ENode {
    g: i64,
    parent: u32,
    step: Move,
}

/// A* over edge-elimination states (front and back eliminations, with
/// vertex eliminations and dependent cuts as shortcuts), from the current
/// state of `work` (restored on return). States are memoised by
/// [`Work::state_key`].
pub(crate) fn exact_edges(work: &mut Work, incumbent: i64, ops_limit: i64, budget: usize) -> Exact {
    let base = work.mark();
    let root_bound = work.lower_bound();
    let mut result = Exact {
        best: None,
        lower_bound: root_bound.min(incumbent),
        proven: false,
        expanded: 0,
    };
    let mut best_cost = incumbent;
    let mut best_node: Option<u32> = None;
    if let Some(c) = work.cost() {
        if c < best_cost && within(work, ops_limit) {
            best_cost = c;
            best_node = Some(0);
        }
    }
    let mut scratch = crate::work::KeyScratch::default();
    let mut nodes = vec![ENode {
        g: work.g(),
        parent: u32::MAX,
        step: Move::Vertex(u32::MAX),
    }];
    let mut seen: HashMap<(u64, u64), i64> = HashMap::default();
    seen.insert(work.state_key(&mut scratch), work.g());
    let mut open: BinaryHeap<(Reverse<i64>, Reverse<u32>)> = BinaryHeap::new();
    open.push((Reverse(root_bound), Reverse(0)));
    let mut path: Vec<(u32, crate::work::Mark)> = Vec::new();
    let mut chain: Vec<u32> = Vec::new();
    let mut candidates = Vec::new();
    let mut exhausted = true;
    while let Some((Reverse(f), Reverse(id))) = open.pop() {
        if f >= best_cost {
            open.clear();
            break;
        }
        if result.expanded >= budget {
            open.push((Reverse(f), Reverse(id)));
            exhausted = false;
            break;
        }
        result.expanded += 1;
        goto_node(work, &nodes, id, &mut path, &mut chain);
        let g_here = work.g();
        let node = nodes[id as usize];
        moves(
            work,
            Moves {
                vertices: true,
                edges: true,
                reroutings: false,
            },
            &mut candidates,
        );
        for &m in &candidates {
            let mark = work.mark();
            work.apply(m);
            let child_g = node.g + (work.g() - g_here);
            let h = work.lower_bound() - work.g();
            let stop = work
                .final_cost()
                .filter(|&stop| child_g + stop < best_cost && within(work, ops_limit));
            let key = work.state_key(&mut scratch);
            work.undo_to(mark);
            if seen.get(&key).is_some_and(|&g| g <= child_g) {
                continue;
            }
            seen.insert(key, child_g);
            let child = nodes.len() as u32;
            nodes.push(ENode {
                g: child_g,
                parent: id,
                step: m,
            });
            // (`stop` is only kept when it beats the best, within the limit.)
            if let Some(stop) = stop {
                best_cost = child_g + stop;
                best_node = Some(child);
            }
            if child_g + h < best_cost {
                open.push((Reverse(child_g + h), Reverse(child)));
            }
        }
    }
    work.undo_to(base);
    settle(&mut result, &open, exhausted, best_cost);
    if let Some(id) = best_node {
        result.best = Some((node_path(&nodes, id), best_cost));
    }
    result
}

fn node_path(nodes: &[ENode], mut id: u32) -> Vec<Move> {
    let mut path = Vec::new();
    while id != 0 && id != u32::MAX {
        let n = nodes[id as usize];
        path.push(n.step);
        id = n.parent;
    }
    path.reverse();
    path
}

/// Brings `work` to the state of node `id`, reusing the common prefix of
/// the node path currently applied.
fn goto_node(
    work: &mut Work,
    nodes: &[ENode],
    id: u32,
    applied: &mut Vec<(u32, crate::work::Mark)>,
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
        work.apply(nodes[n as usize].step);
        applied.push((n, mark));
    }
}

/// Beam search from the current state and from the given starting
/// sequences: every level expands each kept state by every move, keeps
/// the `width` cheapest distinct children by their cost of stopping there
/// (ties by lower bound), and remembers the cheapest state seen. At most
/// `budget` children are evaluated. Returns the best sequence and cost if
/// it beats `incumbent`.
pub(crate) fn beam(
    work: &mut Work,
    starts: &[Vec<Move>],
    kinds: Moves,
    width: usize,
    incumbent: i64,
    budget: usize,
) -> Option<(Vec<Move>, i64)> {
    let base = work.mark();
    let mut best: Option<(Vec<Move>, i64)> = None;
    let mut best_cost = incumbent;
    let mut scratch = crate::work::KeyScratch::default();
    let mut beam: Vec<Vec<Move>> = vec![Vec::new()];
    for s in starts {
        if !beam.contains(s) {
            beam.push(s.clone());
        }
    }
    let mut evaluated = 0usize;
    let mut candidates = Vec::new();
    while !beam.is_empty() && evaluated < budget {
        let mut children: Vec<(i64, i64, Vec<Move>)> = Vec::new();
        let mut keys: HashMap<(u64, u64), ()> = HashMap::default();
        for path in &beam {
            work.undo_to(base);
            for &m in path {
                work.apply(m);
            }
            if let Some(c) = work.cost() {
                if c < best_cost {
                    best_cost = c;
                    best = Some((path.clone(), c));
                }
            }
            moves(work, kinds, &mut candidates);
            for &m in &candidates {
                if evaluated >= budget {
                    break;
                }
                evaluated += 1;
                let mark = work.mark();
                work.apply(m);
                let stop = work.cost().unwrap_or(i64::MAX);
                let bound = work.lower_bound();
                let key = work.state_key(&mut scratch);
                work.undo_to(mark);
                if bound >= best_cost || keys.insert(key, ()).is_some() {
                    continue;
                }
                let mut child = path.clone();
                child.push(m);
                children.push((stop, bound, child));
            }
        }
        children.sort_by(|a, b| (a.0, a.1, &a.2).cmp(&(b.0, b.1, &b.2)));
        children.truncate(width);
        for (stop, _, path) in &children {
            if *stop < best_cost {
                best_cost = *stop;
                best = Some((path.clone(), *stop));
            }
        }
        beam = children.into_iter().map(|c| c.2).collect();
    }
    work.undo_to(base);
    best
}
