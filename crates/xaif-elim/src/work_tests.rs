//! Internal properties of the search engine, on random graphs:
//!
//! - the working graph prices every sequence of moves exactly as the
//!   expressions built by replaying it on an [`ElimGraph`] (so the search
//!   optimizes what the derivative code will cost), for every goal, and
//!   taking a move back restores the state;
//! - the incremental chain runner makes the same choices as the plain one.

use proptest::prelude::*;

use crate::chain::{run_edge_chain, run_plain};
use crate::cost::{evaluate_model, model, Goal, PropagationMode};
use crate::heuristics::Chain;
use crate::strategy::{Extent, Method, Metric, Strategy as ElimStrategy};
use crate::value::Triviality;
use crate::work::{Move, Work};
use crate::{ElimGraph, Label, Lcg, VarId, VertexId, VertexKind};

fn label() -> impl proptest::strategy::Strategy<Value = Label> {
    prop_oneof![
        3 => Just(Label::Unit),
        2 => Just(Label::MinusOne),
        2 => prop::sample::select(vec![2.0, -0.5, 3.0, 0.5]).prop_map(Label::Constant),
        6 => (0..6u32).prop_map(|v| Label::Variable(VarId(v))),
    ]
}

/// Random DAGs over vertices created in rank order: the first ones are
/// independents, the last one a dependent, the others intermediates or
/// dependents; edges go from lower to higher ranks.
fn graph() -> impl proptest::strategy::Strategy<Value = Lcg> {
    (1usize..=3, 1usize..=7)
        .prop_flat_map(|(x, others)| {
            let n = x + others;
            (
                Just(x),
                prop::collection::vec(prop::bool::weighted(0.35), others),
                prop::collection::vec((0..n, 0..n, label()), n..3 * n),
            )
        })
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
                let (lo, hi) = (a.min(b), a.max(b));
                if lo != hi && hi >= x {
                    g.add_edge(VertexId(lo as u32), VertexId(hi as u32), l)
                        .expect("valid edge");
                }
            }
            g
        })
}

fn models() -> Vec<crate::work::Model> {
    let mut models = vec![
        model(
            Goal::RunTime,
            PropagationMode::Tangent,
            Metric::Scarcity,
            Triviality::Unit,
        ),
        model(
            Goal::RunTime,
            PropagationMode::Adjoint,
            Metric::Scarcity,
            Triviality::Unit,
        ),
        model(
            Goal::Metric,
            PropagationMode::Tangent,
            Metric::Scarcity,
            Triviality::UnitAndConstant,
        ),
    ];
    // A tape limit with a penalty, as in adjoint mode.
    let mut capped = models[1];
    capped.max_pushes = 1;
    capped.w_excess = 3 << 20;
    models.push(capped);
    models
}

fn possible_moves(work: &Work, out: &mut Vec<Move>) {
    out.clear();
    out.extend(work.inner_vertices().map(Move::Vertex));
    work.edge_moves(out);
    work.reroute_moves(out);
    out.retain(|&m| work.can(m));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn the_working_graph_prices_sequences_like_their_expressions(
        lcg in graph(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let base = ElimGraph::new(&lcg).unwrap();
        for m in models() {
            let mut work = Work::new(&base, m, Triviality::Unit);
            let start = work.mark();
            let start_cost = work.cost();
            let mut moves = Vec::new();
            let mut done = Vec::new();
            for pick in &picks {
                possible_moves(&work, &mut moves);
                if moves.is_empty() {
                    break;
                }
                let mv = moves[pick.index(moves.len())];
                // Trying a move and taking it back changes nothing.
                let before = work.cost();
                let _ = work.probe_cost(mv);
                prop_assert_eq!(work.cost(), before);
                let mut replay = Vec::new();
                work.targets(mv, &mut replay);
                work.apply(mv);
                done.push(replay);
            }
            let mut graph = ElimGraph::new(&lcg).unwrap();
            for ops in &done {
                for op in ops {
                    op.on(&mut graph).unwrap();
                }
            }
            let elimination = graph.finish(Triviality::Unit);
            prop_assert_eq!(work.cost(), evaluate_model(&work.model, &elimination), "{:?}", m);
            // The Jacobian survives every move, reroutings included (they
            // divide by a pivot that may be zero at run time, here when a
            // constant zero factor reached it, or a rounding residue of a
            // cancellation: then the quotients blow up and the comparison
            // says nothing).
            let vars = |v: VarId| Some(0.75 + 0.5 * f64::from(v.0));
            let a = lcg.jacobian(&vars).unwrap();
            let b = elimination.jacobian(&vars).unwrap();
            let blown_up = elimination
                .acc_values(&vars)
                .unwrap()
                .iter()
                .any(|v| !v.is_finite() || v.abs() > 1e8);
            for (x, y) in a.values.iter().zip(&b.values) {
                if !y.is_finite() || blown_up {
                    prop_assert!(elimination.ops.divisions > 0);
                    continue;
                }
                prop_assert!((x - y).abs() <= 1e-9 * (1.0 + x.abs()), "{} vs {}", x, y);
            }
            // The lower bound holds for the state reached.
            work.undo_to(start);
            prop_assert_eq!(work.cost(), start_cost);
        }
    }

    #[test]
    fn the_incremental_chain_runner_chooses_like_the_plain_one(lcg in graph()) {
        let base = ElimGraph::new(&lcg).unwrap();
        let m = models()[0];
        let mut work = Work::new(&base, m, Triviality::Unit);
        for chain in Chain::edge_defaults() {
            for extent in [
                Extent::Total,
                Extent::ScarcityPreserving { allow_maintaining: false },
                Extent::ScarcityPreserving { allow_maintaining: true },
            ] {
                let strategy = ElimStrategy { method: Method::Edge, chain: chain.clone(), extent };
                let fast = run_edge_chain(&mut work, &strategy, false);
                let plain = run_plain(&mut work, &strategy, None, false).unwrap();
                prop_assert_eq!(&fast.moves, &plain.moves, "{:?}", strategy);
                prop_assert_eq!(fast.kept, plain.kept);
                prop_assert_eq!(fast.key, plain.key);
            }
        }
    }

    /// A chain run depends only on the state it starts from, not on the
    /// runs made before on the same working graph (the threads of
    /// `run_all` take strategies in any order).
    #[test]
    fn chain_runs_do_not_depend_on_earlier_runs(lcg in graph()) {
        let base = ElimGraph::new(&lcg).unwrap();
        let m = models()[1];
        let mut shared = Work::new(&base, m, Triviality::Unit);
        let strategies: Vec<ElimStrategy> = Chain::edge_defaults()
            .into_iter()
            .map(|chain| ElimStrategy {
                method: Method::Edge,
                chain,
                extent: Extent::ScarcityPreserving { allow_maintaining: false },
            })
            .collect();
        // In reverse order on one graph, each on a fresh one.
        for s in strategies.iter().rev() {
            let after_others = run_edge_chain(&mut shared, s, false);
            let mut fresh = Work::new(&base, m, Triviality::Unit);
            let alone = run_edge_chain(&mut fresh, s, false);
            prop_assert_eq!(&after_others.moves, &alone.moves, "{:?}", s);
            prop_assert_eq!(&after_others.splits, &alone.splits);
            prop_assert_eq!(after_others.kept, alone.kept);
        }
    }

    /// Eliminating an intermediate and front eliminating its only in-edge
    /// (or back eliminating its only out-edge) reach the same state, which
    /// is what lets a probe reuse the other's cost.
    #[test]
    fn a_lone_edge_elimination_reaches_the_vertex_elimination_state(
        lcg in graph(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let base = ElimGraph::new(&lcg).unwrap();
        for m in models() {
            let mut work = Work::new(&base, m, Triviality::Unit);
            let mut moves = Vec::new();
            let mut scratch = crate::work::KeyScratch::default();
            for pick in picks.iter().map(Some).chain([None]) {
                for j in work.inner_vertices().collect::<Vec<_>>() {
                    if work.kind(j) != VertexKind::Intermediate {
                        continue;
                    }
                    let mut same = Vec::new();
                    if let [(i, _)] = work.preds(j) {
                        same.push(Move::Front(*i, j));
                    }
                    if let [(k, _)] = work.succs(j) {
                        same.push(Move::Back(j, *k));
                    }
                    let mark = work.mark();
                    work.apply(Move::Vertex(j));
                    let expected = (work.cost(), work.state_key(&mut scratch));
                    work.undo_to(mark);
                    for mv in same {
                        work.apply(mv);
                        let got = (work.cost(), work.state_key(&mut scratch));
                        work.undo_to(mark);
                        prop_assert_eq!(got, expected, "{:?}", mv);
                    }
                }
                let Some(pick) = pick else { break };
                possible_moves(&work, &mut moves);
                if moves.is_empty() {
                    break;
                }
                work.apply(moves[pick.index(moves.len())]);
            }
        }
    }
}

/// The cheapest cost reachable from the current state of `work` by
/// eliminations (vertex, front and back; every prefix counts), by
/// exhaustive search over states (memoised by [`Work::state_key`] with
/// the cost spent to reach them); `None` beyond `limit` states.
fn cheapest_reachable(work: &mut Work, limit: usize) -> Option<i64> {
    fn go(
        work: &mut Work,
        seen: &mut std::collections::HashMap<(u64, u64), i64>,
        scratch: &mut crate::work::KeyScratch,
        best: &mut i64,
        limit: usize,
    ) -> bool {
        if seen.len() > limit {
            return false;
        }
        if let Some(c) = work.cost() {
            *best = (*best).min(c);
        }
        let mut moves: Vec<Move> = work.inner_vertices().map(Move::Vertex).collect();
        work.edge_moves(&mut moves);
        for m in moves {
            let mark = work.mark();
            work.apply(m);
            let key = work.state_key(scratch);
            let g = work.g();
            let fresh = seen.get(&key).is_none_or(|&old| g < old);
            if fresh {
                seen.insert(key, g);
                if !go(work, seen, scratch, best, limit) {
                    work.undo_to(mark);
                    return false;
                }
            }
            work.undo_to(mark);
        }
        true
    }
    let mut best = i64::MAX;
    let mut seen = std::collections::HashMap::new();
    let mut scratch = crate::work::KeyScratch::default();
    go(work, &mut seen, &mut scratch, &mut best, limit).then_some(best)
}

/// The lower bound in the state that the random moves `picks` reach
/// (vertex or edge eliminations, each picked among those possible), and
/// the cheapest cost reachable from it (`None` beyond the search's limit).
fn bound_and_reachable(work: &mut Work, picks: &[prop::sample::Index]) -> Option<(i64, i64)> {
    let mut moves = Vec::new();
    for pick in picks {
        moves.clear();
        moves.extend(work.inner_vertices().map(Move::Vertex));
        work.edge_moves(&mut moves);
        if moves.is_empty() {
            break;
        }
        work.apply(moves[pick.index(moves.len())]);
    }
    let bound = work.lower_bound();
    cheapest_reachable(work, 20_000).map(|best| (bound, best))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The lower bound (the potential and the circuit bound, and the cut
    /// bound where it is on) is at most the cheapest cost reachable, in
    /// every state a few random moves reach, for every goal.
    #[test]
    fn the_lower_bound_holds_in_every_state(
        lcg in graph(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
    ) {
        let base = ElimGraph::new(&lcg).unwrap();
        for (m, cut) in models().into_iter().flat_map(|m| [(m, false), (m, true)]) {
            let mut work = Work::new(&base, m, Triviality::Unit);
            if cut {
                work.enable_cut_floor();
            }
            if let Some((bound, best)) = bound_and_reachable(&mut work, &picks) {
                prop_assert!(bound <= best, "{:?} (cut {}): bound {} above {}", m, cut, bound, best);
            }
        }
    }
}

/// On a graph with nothing to eliminate (every independent feeds every
/// dependent through a factor of its own), the cut bound is the cost of
/// the graph as it is in both modes, which the other bounds are not: the
/// cuts are the out-edges of the independents, each factor taped.
#[test]
fn the_cut_bound_is_exact_where_nothing_can_be_eliminated() {
    let mut g = Lcg::new();
    let x: Vec<VertexId> = (0..2)
        .map(|_| g.add_vertex(VertexKind::Independent))
        .collect();
    let y: Vec<VertexId> = (0..2)
        .map(|_| g.add_vertex(VertexKind::Dependent))
        .collect();
    for (k, (a, b)) in [(0, 0), (0, 1), (1, 0), (1, 1)].into_iter().enumerate() {
        g.add_edge(x[a], y[b], Label::Variable(VarId(k as u32)))
            .unwrap();
    }
    let base = ElimGraph::new(&g).unwrap();
    for (mode, ops) in [
        (PropagationMode::Tangent, 8),
        (PropagationMode::Adjoint, 16),
    ] {
        let m = model(Goal::RunTime, mode, Metric::Scarcity, Triviality::Unit);
        let mut work = Work::new(&base, m, Triviality::Unit);
        let cost = work.cost().unwrap();
        assert_eq!(cost >> 20, ops, "{mode:?}");
        assert!(work.lower_bound() < cost, "{mode:?}");
        assert!(work.enable_cut_floor());
        assert_eq!(work.lower_bound() >> 20, ops, "{mode:?}");
        assert!(work.lower_bound() <= cost, "{mode:?}");
    }
}

/// [`graph`] with run-time labels only (some shared), where constants
/// cannot reconverge and the cut bound's count of edges minus vertices
/// applies.
fn runtime_graph() -> impl proptest::strategy::Strategy<Value = Lcg> {
    (graph(), prop::collection::vec(0u32..6, 32)).prop_map(|(g, ids)| {
        let mut out = Lcg::new();
        for v in g.vertices() {
            out.add_vertex(g.kind(v).expect("a vertex of the graph"));
        }
        for (k, e) in g.edges().iter().enumerate() {
            let id = ids[k % ids.len()] + k as u32 / 4;
            out.add_edge(e.source, e.target, Label::Variable(VarId(id)))
                .expect("valid edge");
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// With run-time labels only, the cut bound (both of its counts) is at
    /// most the cheapest cost reachable, in every state a few random moves
    /// reach.
    #[test]
    fn the_cut_bound_holds_on_runtime_graphs(
        lcg in runtime_graph(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
    ) {
        let base = ElimGraph::new(&lcg).unwrap();
        for m in models() {
            let mut work = Work::new(&base, m, Triviality::Unit);
            work.enable_cut_floor();
            if let Some((bound, best)) = bound_and_reachable(&mut work, &picks) {
                prop_assert!(bound <= best, "{:?}: bound {} above {}", m, bound, best);
            }
        }
    }
}
