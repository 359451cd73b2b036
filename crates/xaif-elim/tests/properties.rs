//! Property tests on random linearized DAGs: every elimination method with
//! every heuristic chain, total and scarcity-preserving, must give the same
//! Jacobian as the sum over all paths of the edge-label products, and the
//! reported operation counts must be the operations in the emitted
//! expressions, counted independently here by walking and evaluating them.

use proptest::prelude::*;

use xaif_elim::{
    optimize, run, select, Chain, Config, EdgeValue, Effort, ElimGraph, Elimination,
    EliminationState, Expr, Extent, Filter, Label, Lcg, Method, Mode, OpCounts, Operand,
    PropagationMode, Search, Strategy as ElimStrategy, Triviality, VarId, VertexId, VertexKind,
};

const VARIABLES: usize = 6;

#[derive(Clone, Debug)]
struct Case {
    lcg: Lcg,
    values: Vec<f64>,
}

fn label() -> impl proptest::strategy::Strategy<Value = Label> {
    prop_oneof![
        2 => Just(Label::Unit),
        2 => Just(Label::MinusOne),
        2 => prop::sample::select(vec![2.0, -0.5, 3.0, 0.5, -2.0, 1.0]).prop_map(Label::Constant),
        5 => (0..VARIABLES as u32).prop_map(|v| Label::Variable(VarId(v))),
    ]
}

/// Random connected-ish DAGs. Vertices are created in a shuffled order so
/// that the topological sort has work to do; ranks below `independents`
/// are inputs, the last rank is always a dependent. Every non-input gets an
/// in-edge from an earlier vertex and every intermediate an out-edge to a
/// later one, so that most intermediates survive to be eliminated; extra
/// random edges add fan-in, fan-out, parallel edges and dependents with
/// out-edges.
fn case() -> impl proptest::strategy::Strategy<Value = Case> {
    (1usize..=3, 1usize..=9)
        .prop_flat_map(|(independents, others)| {
            let count = independents + others;
            (
                Just(independents),
                prop::collection::vec(prop::bool::weighted(0.4), others),
                prop::collection::vec((any::<prop::sample::Index>(), label()), count),
                prop::collection::vec((any::<prop::sample::Index>(), label()), count),
                prop::collection::vec((0..count, 0..count, label()), 0..(2 * count)),
                Just((0..count).collect::<Vec<usize>>()).prop_shuffle(),
                prop::collection::vec(prop_oneof![-2.0..-0.25f64, 0.25..2.0f64], VARIABLES),
            )
        })
        .prop_map(
            |(independents, dependent, spine_in, spine_out, extra, permutation, values)| {
                let count = permutation.len();
                let kind_of_rank = |rank: usize| {
                    if rank < independents {
                        VertexKind::Independent
                    } else if rank + 1 == count || dependent[rank - independents] {
                        VertexKind::Dependent
                    } else {
                        VertexKind::Intermediate
                    }
                };
                // permutation[slot] = rank of the vertex created in that slot.
                let mut lcg = Lcg::new();
                let mut id_of_rank = vec![VertexId(0); count];
                for &rank in &permutation {
                    id_of_rank[rank] = lcg.add_named_vertex(kind_of_rank(rank), format!("r{rank}"));
                }
                let mut edges = Vec::new();
                for (rank, &(pick, label)) in spine_in.iter().enumerate().skip(independents) {
                    edges.push((pick.index(rank), rank, label));
                }
                for (rank, &(pick, label)) in spine_out.iter().enumerate().take(count - 1) {
                    if kind_of_rank(rank) == VertexKind::Intermediate {
                        edges.push((rank, rank + 1 + pick.index(count - 1 - rank), label));
                    }
                }
                for (a, b, label) in extra {
                    let (low, high) = (a.min(b), a.max(b));
                    if low != high && high >= independents {
                        edges.push((low, high, label));
                    }
                }
                for (low, high, label) in edges {
                    lcg.add_edge(id_of_rank[low], id_of_rank[high], label)
                        .expect("generated edges are valid");
                }
                Case { lcg, values }
            },
        )
}

/// The oracle: explicit enumeration of every path, with the sum of the
/// absolute path products as the scale of the rounding error.
fn path_sums(case: &Case) -> Vec<(VertexId, VertexId, f64, f64)> {
    let lcg = &case.lcg;
    let value = |label: Label| match label {
        Label::Unit => 1.0,
        Label::MinusOne => -1.0,
        Label::Constant(c) => c,
        Label::Variable(v) => case.values[v.0 as usize],
    };
    fn walk(
        lcg: &Lcg,
        value: &dyn Fn(Label) -> f64,
        at: VertexId,
        product: f64,
        sums: &mut [(f64, f64)],
    ) {
        sums[at.index()].0 += product;
        sums[at.index()].1 += product.abs();
        for edge in lcg.edges().iter().filter(|e| e.source == at) {
            walk(lcg, value, edge.target, product * value(edge.label), sums);
        }
    }
    let mut entries = Vec::new();
    for x in lcg
        .vertices()
        .filter(|&v| lcg.kind(v) == Some(VertexKind::Independent))
    {
        let mut sums = vec![(0.0, 0.0); lcg.vertex_count()];
        walk(lcg, &value, x, 1.0, &mut sums);
        for y in lcg
            .vertices()
            .filter(|&v| lcg.kind(v) == Some(VertexKind::Dependent))
        {
            entries.push((y, x, sums[y.index()].0, sums[y.index()].1));
        }
    }
    entries
}

/// Operations counted by walking the trees, written independently of the
/// library's own counter.
fn walk_counts(expr: &Expr, counts: &mut OpCounts) {
    match expr {
        Expr::Leaf(_) => {}
        Expr::Neg(a) => {
            counts.negations += 1;
            walk_counts(a, counts);
        }
        Expr::Mul(a, b) | Expr::Add(a, b) | Expr::Sub(a, b) | Expr::Div(a, b) => {
            match expr {
                Expr::Mul(..) => counts.multiplications += 1,
                Expr::Add(..) => counts.additions += 1,
                Expr::Div(..) => counts.divisions += 1,
                _ => counts.subtractions += 1,
            }
            walk_counts(a, counts);
            walk_counts(b, counts);
        }
    }
}

/// Evaluates an expression and counts the arithmetic actually executed.
fn evaluate_counting(expr: &Expr, case: &Case, accs: &[f64], counts: &mut OpCounts) -> f64 {
    match expr {
        Expr::Leaf(Operand::Constant(c)) => *c,
        Expr::Leaf(Operand::Variable(v)) => case.values[v.0 as usize],
        Expr::Leaf(Operand::Acc(acc)) => {
            assert!(acc.index() < accs.len(), "{acc} read before definition");
            accs[acc.index()]
        }
        Expr::Neg(a) => {
            counts.negations += 1;
            -evaluate_counting(a, case, accs, counts)
        }
        Expr::Mul(a, b) => {
            let (a, b) = (
                evaluate_counting(a, case, accs, counts),
                evaluate_counting(b, case, accs, counts),
            );
            counts.multiplications += 1;
            a * b
        }
        Expr::Add(a, b) => {
            let (a, b) = (
                evaluate_counting(a, case, accs, counts),
                evaluate_counting(b, case, accs, counts),
            );
            counts.additions += 1;
            a + b
        }
        Expr::Sub(a, b) => {
            let (a, b) = (
                evaluate_counting(a, case, accs, counts),
                evaluate_counting(b, case, accs, counts),
            );
            counts.subtractions += 1;
            a - b
        }
        Expr::Div(a, b) => {
            let (a, b) = (
                evaluate_counting(a, case, accs, counts),
                evaluate_counting(b, case, accs, counts),
            );
            counts.divisions += 1;
            a / b
        }
    }
}

fn check(case: &Case, elimination: &Elimination, what: &str) -> Result<(), TestCaseError> {
    // Counts: reported == walked == executed.
    let mut walked = OpCounts::default();
    let mut executed = OpCounts::default();
    let mut accs = Vec::new();
    for (k, accumulation) in elimination.accumulations.iter().enumerate() {
        prop_assert_eq!(accumulation.id.index(), k);
        walk_counts(&accumulation.expr, &mut walked);
        accs.push(evaluate_counting(
            &accumulation.expr,
            case,
            &accs,
            &mut executed,
        ));
    }
    prop_assert_eq!(elimination.ops, walked, "{}: reported vs walked", what);
    prop_assert_eq!(walked, executed, "{}: walked vs executed", what);
    if !what.contains("rerouting") {
        prop_assert_eq!(elimination.ops.divisions, 0);
    }
    // Unit and minus-one factors are never multiplied.
    for accumulation in &elimination.accumulations {
        prop_assert!(
            !has_unit_factor(&accumulation.expr),
            "{}: unit factor",
            what
        );
    }

    // No parallel edges, and the reported scarcity count.
    let mut pairs: Vec<(VertexId, VertexId)> = elimination
        .remainder
        .edges
        .iter()
        .map(|e| (e.source, e.target))
        .collect();
    pairs.sort();
    let before = pairs.len();
    pairs.dedup();
    prop_assert_eq!(before, pairs.len(), "{}: parallel remainder edges", what);
    let nontrivial = elimination
        .remainder
        .edges
        .iter()
        .filter(|e| match (elimination.triviality, e.value) {
            (Triviality::None, _) => true,
            (_, EdgeValue::Unit | EdgeValue::MinusOne) => false,
            (Triviality::UnitAndConstant, EdgeValue::Constant(_)) => false,
            _ => true,
        })
        .count();
    prop_assert_eq!(elimination.nontrivial_edges, nontrivial);

    // Jacobian from the remainder graph against the enumerated paths, and
    // the library's own path-sum Jacobian of the input.
    let vars = |v: VarId| case.values.get(v.0 as usize).copied();
    let from_remainder = elimination
        .jacobian(&vars)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let from_input = case
        .lcg
        .jacobian(&vars)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    for (y, x, exact, scale) in path_sums(case) {
        let tolerance = 1e-12 * scale.max(1.0);
        let got = from_remainder.get(y, x).unwrap();
        if !got.is_finite() && elimination.ops.divisions > 0 {
            // A rerouting divided by a pivot that is zero for these
            // values (`-R` accepts that risk).
            continue;
        }
        prop_assert!(
            (got - exact).abs() <= tolerance,
            "{}: J[{},{}] = {} from the remainder, {} from the paths",
            what,
            y,
            x,
            got,
            exact
        );
        let library = from_input.get(y, x).unwrap();
        prop_assert!((library - exact).abs() <= tolerance);
    }
    Ok(())
}

fn has_unit_factor(expr: &Expr) -> bool {
    let is_unit = |e: &Expr| matches!(e, Expr::Leaf(Operand::Constant(c)) if c.abs() == 1.0);
    match expr {
        Expr::Leaf(_) => false,
        Expr::Neg(a) => has_unit_factor(a),
        Expr::Mul(a, b) => is_unit(a) || is_unit(b) || has_unit_factor(a) || has_unit_factor(b),
        Expr::Add(a, b) | Expr::Sub(a, b) => has_unit_factor(a) || has_unit_factor(b),
        Expr::Div(a, b) => has_unit_factor(a) || has_unit_factor(b),
    }
}

fn chains(method: Method) -> Vec<Chain> {
    let mut chains = match method {
        Method::Vertex => Chain::vertex_defaults(),
        Method::Edge => Chain::edge_defaults(),
        Method::Face => Chain::face_defaults(),
    };
    use Filter::*;
    chains.push(Chain::new(
        [LowestRelativeMarkowitz, LowestFillIn],
        Mode::Forward,
    ));
    chains.push(Chain::new(
        [HighestSiblingDegree, LowestFillIn],
        Mode::Forward,
    ));
    chains
}

fn is_bipartite(elimination: &Elimination) -> bool {
    let kind = |v: VertexId| elimination.remainder.vertices[v.index()].kind;
    elimination.remainder.edges.iter().all(|e| {
        kind(e.source) == VertexKind::Independent && kind(e.target) == VertexKind::Dependent
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn every_strategy_preserves_the_jacobian(case in case()) {
        let baseline = ElimGraph::new(&case.lcg).unwrap();
        for method in [Method::Vertex, Method::Edge, Method::Face] {
            for chain in chains(method) {
                let total = ElimStrategy { method, chain: chain.clone(), extent: Extent::Total };
                let elimination = run(&case.lcg, &total, Triviality::Unit).unwrap();
                let what = format!("{method:?} {chain} total");
                check(&case, &elimination, &what)?;
                match method {
                    Method::Vertex => prop_assert!(elimination
                        .remainder
                        .vertices
                        .iter()
                        .all(|v| !v.present || v.kind != VertexKind::Intermediate)),
                    Method::Edge | Method::Face => {
                        prop_assert!(is_bipartite(&elimination), "{}: not bipartite", what)
                    }
                }
                for triviality in [Triviality::None, Triviality::Unit, Triviality::UnitAndConstant] {
                    for allow_maintaining in [false, true] {
                        let partial = ElimStrategy {
                            method,
                            chain: chain.clone(),
                            extent: Extent::ScarcityPreserving { allow_maintaining },
                        };
                        let elimination = run(&case.lcg, &partial, triviality).unwrap();
                        let what = format!("{method:?} {chain} scarcity {triviality:?} m={allow_maintaining}");
                        check(&case, &elimination, &what)?;
                        prop_assert!(
                            elimination.nontrivial_edges <= baseline.nontrivial_edges(triviality),
                            "{}: scarcity increased", what
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn selection_keeps_the_best_and_preserves_the_jacobian(case in case()) {
        for config in [
            Config::default(),
            Config::from_flags(0, 1, false).unwrap(),
            Config::from_flags(1, 2, true).unwrap(),
            Config::from_flags(1, 0, false).unwrap(),
        ] {
            let selection = select(&case.lcg, &config).unwrap();
            check(&case, &selection.elimination, "selection")?;
            for strategy in &config.strategies {
                let other = run(&case.lcg, strategy, config.triviality).unwrap();
                prop_assert!(
                    config.metric.key(&selection.elimination) <= config.metric.key(&other)
                );
            }
        }
    }

    #[test]
    fn optimization_preserves_the_jacobian_and_never_loses_to_the_chain(case in case()) {
        for (effort, flags) in [
            (Effort::Fast, ""),
            (Effort::Default, ""),
            (Effort::Fast, "aRm"),
            (Effort::Default, "R"),
        ] {
            for mode in [PropagationMode::Tangent, PropagationMode::Adjoint] {
                let mut config = Config::from_flags(1, 1, flags.contains('m')).unwrap();
                config.search = Search {
                    effort,
                    randomized: flags.contains('a'),
                    rerouting: flags.contains('R'),
                    allow_maintaining: flags.contains('m'),
                    seed: 7,
                    ..Search::default()
                };
                let optimized = optimize(&case.lcg, &config, mode).unwrap();
                let what = if flags.contains('R') { "rerouting" } else { "optimize" };
                check(&case, &optimized.selection.elimination, what)?;
                let report = &optimized.report;
                prop_assert!(report.cost <= report.chain, "{:?}", report);
                prop_assert!(report.lower_bound <= report.cost, "{:?}", report);
                // The report prices the result as the search did: run-time
                // operations, and in adjoint mode a penalty per factor taped
                // beyond the reference selection's.
                let mut excess = 0;
                if mode == PropagationMode::Adjoint {
                    let reference = select(&case.lcg, &config).unwrap().elimination;
                    excess = xaif_elim::taped_factors(&optimized.selection.elimination)
                        .saturating_sub(xaif_elim::taped_factors(&reference))
                        as u64;
                }
                prop_assert_eq!(
                    report.cost,
                    xaif_elim::evaluate(&optimized.selection.elimination, mode)
                        + xaif_elim::EXCESS_TAPE * excess
                );
                // Deterministic: the same input gives the same result.
                let again = optimize(&case.lcg, &config, mode).unwrap();
                prop_assert_eq!(&again.selection.elimination.steps, &optimized.selection.elimination.steps);
            }
        }
    }

    #[test]
    fn filters_keep_a_non_empty_subset_and_modes_pick_a_member(case in case()) {
        let graph = ElimGraph::new(&case.lcg).unwrap();
        let dual = xaif_elim::DualGraph::new(&case.lcg).unwrap();
        let filters = [
            Filter::LowestMarkowitz,
            Filter::LowestRelativeMarkowitz,
            Filter::LowestFillIn,
            Filter::HighestSiblingDegree,
        ];
        for candidates in [graph.vertex_candidates(), graph.edge_candidates()] {
            for filter in filters {
                let kept = filter.apply(&graph, candidates.clone());
                prop_assert_eq!(kept.is_empty(), candidates.is_empty());
                prop_assert!(kept.iter().all(|t| candidates.contains(t)));
            }
            for mode in [Mode::Forward, Mode::Reverse] {
                let chosen = mode.choose(&graph, &candidates);
                prop_assert_eq!(chosen.is_some(), !candidates.is_empty());
                prop_assert!(chosen.iter().all(|t| candidates.contains(t)));
            }
        }
        let faces = dual.face_candidates();
        for filter in filters {
            let kept = filter.apply(&dual, faces.clone());
            prop_assert_eq!(kept.is_empty(), faces.is_empty());
            prop_assert!(kept.iter().all(|t| faces.contains(t)));
        }
    }

    #[test]
    fn manual_random_edge_eliminations_preserve_the_jacobian(
        case in case(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
    ) {
        let mut graph = ElimGraph::new(&case.lcg).unwrap();
        for pick in picks {
            let mut candidates = graph.edge_candidates();
            candidates.extend(graph.vertex_candidates());
            if candidates.is_empty() {
                break;
            }
            let target = candidates[pick.index(candidates.len())];
            graph.eliminate(&target).unwrap();
        }
        check(&case, &graph.finish(Triviality::Unit), "random sequence")?;
    }
}
