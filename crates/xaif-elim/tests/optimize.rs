//! The optimizer against brute force, on random small graphs and on the
//! seeds' worked examples, and the flags that extend it (`-R`, `-a`, `-m`)
//! each on a graph where it pays off.
//!
//! Costs are run-time operations of the derivative code
//! ([`xaif_elim::evaluate`]): accumulation plus tangent propagation, or
//! accumulation plus adjoint propagation plus two per taped factor (and
//! [`xaif_elim::EXCESS_TAPE`] per factor beyond the reference's tape).

mod common;

use proptest::prelude::*;

use xaif_elim::{
    evaluate, optimize, optimize_against, taped_factors, Config, Effort, ElimGraph, Elimination,
    EliminationState, Label, Lcg, Optimized, Proof, PropagationMode, Search, Step, Triviality,
    VarId, VertexId, VertexKind, EXCESS_TAPE,
};

use PropagationMode::{Adjoint, Tangent};

fn config(effort: Effort) -> Config {
    let mut c = Config::default();
    c.search.effort = effort;
    c
}

fn run(lcg: &Lcg, effort: Effort, mode: PropagationMode) -> Optimized {
    optimize(lcg, &config(effort), mode).expect("optimization succeeds")
}

/// What the optimizer minimizes: [`evaluate`], and in adjoint mode
/// [`EXCESS_TAPE`] more per taped factor beyond the reference's chain's.
fn objective(lcg: &Lcg, e: &Elimination, mode: PropagationMode) -> u64 {
    let base = evaluate(e, mode);
    if mode == Tangent {
        return base;
    }
    let chain = xaif_elim::select(lcg, &config(Effort::None))
        .unwrap()
        .elimination;
    let excess = taped_factors(e).saturating_sub(taped_factors(&chain)) as u64;
    base + EXCESS_TAPE * excess
}

/// The operations an elimination's derivative code runs, pushes and pops
/// aside.
fn operations(e: &Elimination, mode: PropagationMode) -> u64 {
    match mode {
        Tangent => evaluate(e, mode),
        Adjoint => evaluate(e, mode) - 2 * taped_factors(e) as u64,
    }
}

/// What the optimizer may return: eliminations that run no more
/// operations than the reference's chain (pushes and pops aside). `None`
/// for the others.
fn admissible(lcg: &Lcg, e: &Elimination, mode: PropagationMode) -> Option<u64> {
    let chain = xaif_elim::select(lcg, &config(Effort::None))
        .unwrap()
        .elimination;
    (operations(e, mode) <= operations(&chain, mode)).then(|| objective(lcg, e, mode))
}

/// The cheapest [`admissible`] edge elimination sequence (every prefix
/// included), by exhaustive search without any pruning; `None` when there
/// are more than `limit` states.
fn brute_force_edges(lcg: &Lcg, mode: PropagationMode, limit: usize) -> Option<u64> {
    fn go(
        lcg: &Lcg,
        g: &ElimGraph,
        mode: PropagationMode,
        best: &mut u64,
        states: &mut usize,
        limit: usize,
    ) -> bool {
        *states += 1;
        if *states > limit {
            return false;
        }
        if let Some(c) = admissible(lcg, &g.clone().finish(Triviality::Unit), mode) {
            *best = (*best).min(c);
        }
        for t in g.edge_candidates() {
            let mut h = g.clone();
            h.eliminate(&t).unwrap();
            if !go(lcg, &h, mode, best, states, limit) {
                return false;
            }
        }
        true
    }
    let g = ElimGraph::new(lcg).unwrap();
    let mut best = u64::MAX;
    let mut states = 0;
    go(lcg, &g, mode, &mut best, &mut states, limit).then_some(best)
}

/// The cheapest [`admissible`] vertex elimination sequence: intermediates
/// eliminated, dependents cut (all their out-edges back eliminated), in
/// every order, every prefix included.
fn brute_force_vertices(lcg: &Lcg, mode: PropagationMode) -> u64 {
    fn go(lcg: &Lcg, g: &ElimGraph, mode: PropagationMode, best: &mut u64) {
        if let Some(c) = admissible(lcg, &g.clone().finish(Triviality::Unit), mode) {
            *best = (*best).min(c);
        }
        let inner: Vec<VertexId> = (0..64u32)
            .map(VertexId)
            .filter(|&v| g.contains_vertex(v))
            .filter(|&v| match g.kind(v) {
                Some(VertexKind::Intermediate) => true,
                Some(VertexKind::Dependent) => !g.successors(v).is_empty(),
                _ => false,
            })
            .collect();
        for v in inner {
            let mut h = g.clone();
            if h.kind(v) == Some(VertexKind::Intermediate) {
                h.eliminate_vertex(v).unwrap();
            } else {
                for k in g.successors(v).to_vec() {
                    h.back_eliminate(v, k).unwrap();
                }
            }
            go(lcg, &h, mode, best);
        }
    }
    let g = ElimGraph::new(lcg).unwrap();
    let mut best = u64::MAX;
    go(lcg, &g, mode, &mut best);
    best
}

/// Small random DAGs (vertices in rank order; the first are
/// independents, the last a dependent).
fn small_graph(max_edges: usize) -> impl Strategy<Value = Lcg> {
    common::graph(1..=2, 1..=4, 5, max_edges)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Proven optima are the brute-force optima, every result is at least
    /// the brute-force optimum, and every lower bound is at most it.
    #[test]
    fn exact_search_agrees_with_brute_force(lcg in small_graph(6)) {
        for mode in [Tangent, Adjoint] {
            let Some(optimum) = brute_force_edges(&lcg, mode, 200_000) else {
                continue;
            };
            let vertex_optimum = brute_force_vertices(&lcg, mode);
            prop_assert!(optimum <= vertex_optimum);
            for effort in [Effort::Fast, Effort::Default, Effort::Max] {
                let r = run(&lcg, effort, mode).report;
                prop_assert!(r.cost >= optimum, "{:?} {:?}: {:?} below {}", effort, mode, r, optimum);
                prop_assert!(r.lower_bound <= optimum, "{:?} {:?}: bound {:?} above {}", effort, mode, r, optimum);
                match r.proof {
                    Some(Proof::Edge) => prop_assert_eq!(r.cost, optimum),
                    Some(Proof::Vertex) => prop_assert!(r.cost <= vertex_optimum),
                    None => {}
                }
            }
            // Max effort proves these small graphs over edge eliminations.
            let r = run(&lcg, Effort::Max, mode).report;
            prop_assert_eq!(r.proof, Some(Proof::Edge), "{:?}", r);
        }
    }
}

/// The LCG of the control-flow-reversal seed, Eq. (3)/(4): 1, 2
/// independent; 3, 4, 6, 7 dependent; t intermediate.
fn control_flow_seed() -> Lcg {
    let mut g = Lcg::new();
    let v1 = g.add_named_vertex(VertexKind::Independent, "1");
    let v2 = g.add_named_vertex(VertexKind::Independent, "2");
    let v3 = g.add_named_vertex(VertexKind::Dependent, "3");
    let v4 = g.add_named_vertex(VertexKind::Dependent, "4");
    let t = g.add_named_vertex(VertexKind::Intermediate, "t");
    let v6 = g.add_named_vertex(VertexKind::Dependent, "6");
    let v7 = g.add_named_vertex(VertexKind::Dependent, "7");
    let var = |n| Label::Variable(VarId(n));
    for (k, (a, b)) in [
        (v1, v3),
        (v2, v3),
        (v1, v4),
        (v3, v4),
        (v3, t),
        (v2, t),
        (t, v7),
        (v4, v7),
        (v4, v6),
    ]
    .into_iter()
    .enumerate()
    {
        g.add_edge(a, b, var(k as u32)).unwrap();
    }
    g
}

/// The LCG of the weighted-term-graphs seed, Figs. 1 and 2: `a = cos(x)`,
/// `b = sin(y)*y*y`, `f = exp(a*b)`; x, y independent, f dependent.
fn term_graph_seed() -> Lcg {
    let mut g = Lcg::new();
    let x = g.add_named_vertex(VertexKind::Independent, "x");
    let y = g.add_named_vertex(VertexKind::Independent, "y");
    let a = g.add_named_vertex(VertexKind::Intermediate, "cos");
    let s = g.add_named_vertex(VertexKind::Intermediate, "sin");
    let t = g.add_named_vertex(VertexKind::Intermediate, "sin*y");
    let b = g.add_named_vertex(VertexKind::Intermediate, "sin*y*y");
    let m = g.add_named_vertex(VertexKind::Intermediate, "a*b");
    let f = g.add_named_vertex(VertexKind::Dependent, "exp");
    let var = |n| Label::Variable(VarId(n));
    for (k, (p, q)) in [
        (x, a),
        (y, s),
        (s, t),
        (y, t),
        (t, b),
        (y, b),
        (a, m),
        (b, m),
        (m, f),
    ]
    .into_iter()
    .enumerate()
    {
        g.add_edge(p, q, var(k as u32)).unwrap();
    }
    g
}

/// The seeds' worked examples: proven optima (over all edge elimination
/// sequences), what the reference's chain costs, and the best vertex
/// elimination sequence found by brute force. On the control-flow seed the
/// chain of Eq. (5) and its relatives cost 23 tangent operations where 18
/// suffice; edge elimination beats every vertex elimination sequence in
/// adjoint mode (37 against 40).
#[test]
fn the_seed_examples_are_solved_optimally() {
    // (graph, mode, proven optimum, reference chain, best vertex sequence)
    for (name, lcg, mode, optimum, chain, vertex) in [
        (
            "control flow seed",
            control_flow_seed(),
            Tangent,
            18,
            23,
            18,
        ),
        (
            "control flow seed",
            control_flow_seed(),
            Adjoint,
            37,
            37,
            40,
        ),
        ("term graph seed", term_graph_seed(), Tangent, 12, 12, 12),
        ("term graph seed", term_graph_seed(), Adjoint, 16, 16, 16),
    ] {
        let r = run(&lcg, Effort::Max, mode).report;
        assert_eq!(r.proof, Some(Proof::Edge), "{name} {mode:?}: {r:?}");
        assert_eq!(
            (r.cost, r.chain, r.lower_bound),
            (optimum, chain, optimum),
            "{name} {mode:?}: {r:?}"
        );
        assert_eq!(brute_force_vertices(&lcg, mode), vertex, "{name} {mode:?}");
        // The default effort finds the optimum too, and proves it over
        // vertex eliminations.
        let d = run(&lcg, Effort::Default, mode).report;
        assert_eq!((d.cost, d.proof), (optimum, Some(Proof::Vertex)), "{d:?}");
    }
}

fn graph(text: &str) -> Lcg {
    Lcg::from_text(text).expect("a well-formed graph")
}

fn with(effort: Effort, f: impl FnOnce(&mut Search)) -> Config {
    let mut c = config(effort);
    f(&mut c.search);
    c
}

/// `-R`: a post-routing about a unit pivot removes a propagation edge in
/// adjoint mode that no elimination can remove as cheaply.
#[test]
fn rerouting_pays_off_where_eliminations_do_not() {
    let lcg = graph(
        "x\nx\nz\nz\ny\nz\ny\n5 6 1\n3 6 v1\n4 5 v2\n2 3 v3\n3 4 v4\n0 4 1\n1 4 1\n0 6 1\n1 5 1\n0 5 1\n2 4 1\n",
    );
    let without = optimize(&lcg, &config(Effort::Fast), Adjoint).unwrap();
    let with_r = optimize(&lcg, &with(Effort::Fast, |s| s.rerouting = true), Adjoint).unwrap();
    assert!(
        with_r.report.cost < without.report.cost,
        "{:?} vs {:?}",
        with_r.report,
        without.report
    );
    assert!(with_r
        .selection
        .elimination
        .steps
        .iter()
        .any(|s| matches!(s, Step::Reroute { .. })));
    assert!(!without
        .selection
        .elimination
        .steps
        .iter()
        .any(|s| matches!(s, Step::Reroute { .. })));
    let vars = |v: VarId| Some(1.25 + f64::from(v.0) * 0.5);
    let a = lcg.jacobian(&vars).unwrap();
    let b = with_r.selection.elimination.jacobian(&vars).unwrap();
    for (x, y) in a.values.iter().zip(&b.values) {
        assert!((x - y).abs() < 1e-12, "{x} vs {y}");
    }
}

/// `-a`: randomized chains find what the configured ones and the greedy
/// post-processing miss, the same for the same seed.
#[test]
fn randomized_heuristics_pay_off_and_follow_the_seed() {
    let lcg = graph(
        "x\ny\nz\nz\ny\ny\n0 1 v1\n3 5 1\n4 5 1\n0 4 v2\n2 5 1\n1 3 v3\n2 3 1\n0 2 1\n0 5 v4\n",
    );
    let without = optimize(&lcg, &config(Effort::Fast), Tangent).unwrap();
    let seeded = |seed| {
        with(Effort::Fast, |s| {
            s.randomized = true;
            s.seed = seed;
        })
    };
    let with_a = optimize(&lcg, &seeded(0), Tangent).unwrap();
    assert!(
        with_a.report.cost < without.report.cost,
        "{:?} vs {:?}",
        with_a.report,
        without.report
    );
    assert_eq!(with_a.report.found_by, "randomized chain");
    let again = optimize(&lcg, &seeded(0), Tangent).unwrap();
    assert_eq!(
        again.selection.elimination.steps,
        with_a.selection.elimination.steps
    );
}

/// `-m`: walking over cost-neutral moves reaches a cheaper state that
/// strictly improving moves cannot.
#[test]
fn maintaining_moves_pay_off() {
    let lcg = graph("x\nx\nz\nz\nz\nz\ny\n4 5 1\n1 4 v1\n5 6 v2\n0 3 1\n0 5 v3\n3 4 v4\n0 4 1\n");
    let without = optimize(&lcg, &config(Effort::Fast), Tangent).unwrap();
    let mut m = Config::from_flags(1, 1, true).unwrap();
    m.search.effort = Effort::Fast;
    m.search.allow_maintaining = true;
    let with_m = optimize(&lcg, &m, Tangent).unwrap();
    assert!(
        with_m.report.cost < without.report.cost,
        "{:?} vs {:?}",
        with_m.report,
        without.report
    );
}

/// The optimizer chooses among states; it never changes what the graph
/// computes, and explicit strategies (`--heuristic`) are left alone.
#[test]
fn effort_none_is_the_reference_selection() {
    let lcg = control_flow_seed();
    let none = run(&lcg, Effort::None, Tangent);
    let selected = xaif_elim::select(&lcg, &config(Effort::None)).unwrap();
    assert_eq!(none.selection, selected);
    assert_eq!(none.report.cost, none.report.chain);
}

/// A layered graph: two independents, `layers` layers of three
/// intermediates each fully connected to the next, two dependents.
fn layered(layers: usize) -> Lcg {
    let mut text = String::from("x\nx\n");
    for _ in 0..layers * 3 {
        text.push_str("z\n");
    }
    text.push_str("y\ny\n");
    let mut var = 0;
    let mut edge = |text: &mut String, s: usize, t: usize| {
        var += 1;
        text.push_str(&format!("{s} {t} v{var}\n"));
    };
    for s in 0..2 {
        for t in 2..5 {
            edge(&mut text, s, t);
        }
    }
    for l in 0..layers - 1 {
        for s in 0..3 {
            for t in 0..3 {
                edge(&mut text, 2 + 3 * l + s, 2 + 3 * (l + 1) + t);
            }
        }
    }
    let last = 2 + 3 * (layers - 1);
    let dep = 2 + 3 * layers;
    for s in 0..3 {
        for t in 0..2 {
            edge(&mut text, last + s, dep + t);
        }
    }
    graph(&text)
}

/// The search limits of `docs/limits.md` are reached and only change how
/// good the result is: a graph beyond the largest one `default`'s exact
/// searches take (8 inner vertices, 6 edges) gets no proof there, and the
/// same graph, within `max`'s (32 inner vertices), is proven optimal over
/// vertex eliminations; neither result is worse than the reference's chain
/// or below the lower bound it reports.
#[test]
fn search_limits_are_reached_and_keep_the_best_found() {
    for mode in [Tangent, Adjoint] {
        let big = layered(4);
        let d = run(&big, Effort::Default, mode).report;
        assert_eq!(d.size, (12, 39), "{d:?}");
        assert_eq!(d.proof, None, "{d:?}");
        assert!(d.lower_bound <= d.cost && d.cost <= d.chain, "{d:?}");
        let m = run(&big, Effort::Max, mode).report;
        assert_eq!(m.proof, Some(Proof::Vertex), "{m:?}");
        assert!(
            m.lower_bound <= m.cost && m.cost <= d.cost,
            "{m:?} vs {d:?}"
        );
        // Within `default`'s limits the same shape is proven there too.
        let small = run(&layered(2), Effort::Default, mode).report;
        assert_eq!(small.proof, Some(Proof::Vertex), "{small:?}");
    }
}

/// `t1 = x1*x2; t2 = x1*sin(t1); y1 = cos(t2); y2 = x2*t2`, as this crate
/// builds it (each input one vertex) and as the reference engine does
/// (the reads of `x1` and `x2` in the later statements, values from
/// outside the routine, are vertices of their own).
fn reads_of_inputs() -> (Lcg, Lcg) {
    let ours = graph(
        "x\nx\nz\nz\nz\ny\ny\n0 2 v0\n1 2 v1\n2 3 v2\n0 4 v3\n3 4 v4\n4 5 v5\n1 6 v6\n4 6 v7\n",
    );
    let reference = graph(
        "x\nx\nx\nx\nz\nz\nz\ny\ny\n0 4 v0\n1 4 v1\n4 5 v2\n2 6 v3\n5 6 v4\n6 7 v5\n3 8 v6\n6 8 v7\n",
    );
    (ours, reference)
}

/// On the reference's graph its chains stop with six factors for 15
/// operations; on ours they accumulate the whole Jacobian (four factors,
/// 17 operations), which the cost model prefers. Bounded by the
/// reference's selection on its graph, the adjoint spends no more
/// operations and tapes no more factors than that, with the same Jacobian;
/// without the bound it spends more operations.
#[test]
fn the_reference_graph_bounds_the_adjoint() {
    let (ours, reference) = reads_of_inputs();
    let chain = xaif_elim::select(&reference, &config(Effort::None))
        .unwrap()
        .elimination;
    let (ops, factors) = (operations(&chain, Adjoint), taped_factors(&chain));
    assert_eq!((ops, factors), (15, 6));
    let free = run(&ours, Effort::Default, Adjoint).selection.elimination;
    assert!(operations(&free, Adjoint) > ops, "{free:?}");
    for effort in [Effort::Fast, Effort::Default, Effort::Max] {
        let bounded = optimize_against(&ours, Some(&reference), &config(effort), Adjoint)
            .unwrap()
            .selection
            .elimination;
        assert!(
            operations(&bounded, Adjoint) <= ops,
            "{effort:?}: {bounded:?}"
        );
        assert!(
            taped_factors(&bounded) <= factors,
            "{effort:?}: {bounded:?}"
        );
        let vars = |v: VarId| Some(0.75 + f64::from(v.0) * 0.5);
        let a = ours.jacobian(&vars).unwrap();
        let b = bounded.jacobian(&vars).unwrap();
        for (x, y) in a.values.iter().zip(&b.values) {
            assert!((x - y).abs() < 1e-12, "{x} vs {y}");
        }
    }
    // Tangent code and no reference graph: the choice of `optimize`.
    for (mode, r) in [(Tangent, Some(&reference)), (Adjoint, None)] {
        let a = optimize_against(&ours, r, &config(Effort::Default), mode).unwrap();
        let b = run(&ours, Effort::Default, mode);
        assert_eq!(a.selection, b.selection, "{mode:?}");
        assert_eq!(a.report.cost, b.report.cost, "{mode:?}");
    }
}
