//! The memo of [`xaif_elim::optimize`] results: a result reused for a graph
//! of the same shape is the result [`xaif_elim::optimize`] finds for that
//! graph itself, under every effort and flag, in both modes.

mod common;

use proptest::prelude::*;

use xaif_elim::{
    optimize, Config, Effort, Label, Lcg, Memo, Optimized, PropagationMode, VarId, VertexKind,
};

use PropagationMode::{Adjoint, Tangent};

/// Random DAGs of up to 9 vertices.
fn graph(max_edges: usize) -> impl Strategy<Value = Lcg> {
    common::graph(1..=3, 1..=6, 6, max_edges)
}

/// `lcg` with its variables renamed by `rename` and its vertices named
/// anew.
fn renamed(lcg: &Lcg, rename: impl Fn(u32) -> u32) -> Lcg {
    let mut g = Lcg::new();
    for v in lcg.vertices() {
        g.add_named_vertex(lcg.kind(v).unwrap(), format!("b{}", v.0));
    }
    for e in lcg.edges() {
        let label = match e.label {
            Label::Variable(v) => Label::Variable(VarId(rename(v.0))),
            other => other,
        };
        g.add_edge(e.source, e.target, label).unwrap();
    }
    g
}

fn config(effort: Effort, randomized: bool, rerouting: bool) -> Config {
    let mut c = Config::default();
    c.search.effort = effort;
    c.search.randomized = randomized;
    c.search.rerouting = rerouting;
    c
}

/// The result without the time it took.
fn timeless(mut o: Optimized) -> Optimized {
    o.report.micros = 0;
    o
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    /// A graph of the same shape (variables renamed in the same order, with
    /// gaps, and other vertex names) gets from the memo exactly what
    /// `optimize` finds for it.
    #[test]
    fn reused_results_are_the_graphs_own(
        lcg in graph(12),
        offset in 0u32..1000,
        stride in 1u32..9,
        effort in prop::sample::select(vec![Effort::Fast, Effort::Default, Effort::Max]),
        randomized in any::<bool>(),
        rerouting in any::<bool>(),
    ) {
        let c = config(effort, randomized, rerouting);
        let other = renamed(&lcg, |v| offset + stride * v);
        for mode in [Tangent, Adjoint] {
            let memo = Memo::new(&c);
            let Ok(first) = memo.optimize(&lcg, mode) else {
                continue;
            };
            prop_assert_eq!(timeless(first), timeless(optimize(&lcg, &c, mode).unwrap()));
            let kept = memo.len();
            let reused = memo.optimize(&other, mode).unwrap();
            prop_assert_eq!(memo.len(), kept, "the second graph has the first one's shape");
            prop_assert_eq!(timeless(reused), timeless(optimize(&other, &c, mode).unwrap()));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Two threads sharing a memo, one eliminating ahead (`prefetch_against`,
    /// graphs from the last backwards) while the other works forwards and
    /// waits for results being computed: every result the second thread
    /// gets is the one `optimize` finds for its graph alone, whoever
    /// computed it, and each shape is computed once.
    #[test]
    fn results_are_the_same_whichever_thread_computed_them(
        graphs in prop::collection::vec(graph(12), 1..12),
        repeat in 0usize..4,
    ) {
        let c = Config::default();
        // Some graphs twice, renamed, so that both threads meet shapes the
        // other computed or is computing.
        let mut all = graphs.clone();
        for g in graphs.iter().take(repeat) {
            all.push(renamed(g, |v| 3 * v + 1));
        }
        for mode in [Tangent, Adjoint] {
            let memo = Memo::new(&c);
            let got: Vec<Option<Optimized>> = std::thread::scope(|scope| {
                scope.spawn(|| {
                    for g in all.iter().rev() {
                        let _ = memo.prefetch_against(g, None, mode);
                    }
                });
                all.iter().map(|g| memo.optimize(g, mode).ok().map(timeless)).collect()
            });
            for (g, got) in all.iter().zip(got) {
                let alone = optimize(g, &c, mode).ok().map(timeless);
                prop_assert_eq!(got, alone);
            }
        }
    }
}

#[test]
fn prefetching_keeps_a_result_the_transformation_then_reuses() {
    let c = Config::default();
    let memo = Memo::new(&c);
    let g = two_inputs([3, 7], 2.0);
    assert_eq!(
        memo.prefetch_against(&g, None, Tangent).unwrap(),
        xaif_elim::Prefetched::Computed
    );
    assert_eq!(memo.len(), 1);
    assert_eq!(
        memo.prefetch_against(&two_inputs([1, 2], 2.0), None, Tangent)
            .unwrap(),
        xaif_elim::Prefetched::Present
    );
    let reused = memo.optimize(&two_inputs([1, 2], 2.0), Tangent).unwrap();
    assert_eq!(memo.len(), 1);
    assert_eq!(
        timeless(reused),
        timeless(optimize(&two_inputs([1, 2], 2.0), &c, Tangent).unwrap())
    );
}

/// y = v0*x0 + v1*x1 through one intermediate, with the given variables.
fn two_inputs(v: [u32; 2], c: f64) -> Lcg {
    let mut g = Lcg::new();
    let x0 = g.add_named_vertex(VertexKind::Independent, "x0");
    let x1 = g.add_named_vertex(VertexKind::Independent, "x1");
    let t = g.add_named_vertex(VertexKind::Intermediate, "t");
    let y = g.add_named_vertex(VertexKind::Dependent, "y");
    g.add_edge(x0, t, Label::Variable(VarId(v[0]))).unwrap();
    g.add_edge(x1, t, Label::Variable(VarId(v[1]))).unwrap();
    g.add_edge(t, y, Label::Constant(c)).unwrap();
    g
}

#[test]
fn shapes_are_told_apart_by_labels_order_and_mode() {
    let c = Config::default();
    let memo = Memo::new(&c);
    memo.optimize(&two_inputs([3, 7], 2.0), Tangent).unwrap();
    assert_eq!(memo.len(), 1);
    // Same shape: variables renamed in the same order.
    memo.optimize(&two_inputs([10, 40], 2.0), Tangent).unwrap();
    assert_eq!(memo.len(), 1);
    // The variables in the other order, equal variables, another
    // constant, the other mode: other shapes.
    memo.optimize(&two_inputs([7, 3], 2.0), Tangent).unwrap();
    memo.optimize(&two_inputs([5, 5], 2.0), Tangent).unwrap();
    memo.optimize(&two_inputs([3, 7], 3.0), Tangent).unwrap();
    memo.optimize(&two_inputs([3, 7], 2.0), Adjoint).unwrap();
    assert_eq!(memo.len(), 5);
}

#[test]
fn reused_results_carry_the_new_graphs_names_and_variables() {
    let c = Config::default();
    let memo = Memo::new(&c);
    memo.optimize(&two_inputs([3, 7], 2.0), Tangent).unwrap();
    let mut g = Lcg::new();
    let x0 = g.add_named_vertex(VertexKind::Independent, "p");
    let x1 = g.add_named_vertex(VertexKind::Independent, "q");
    let t = g.add_named_vertex(VertexKind::Intermediate, "r");
    let y = g.add_named_vertex(VertexKind::Dependent, "s");
    g.add_edge(x0, t, Label::Variable(VarId(20))).unwrap();
    g.add_edge(x1, t, Label::Variable(VarId(21))).unwrap();
    g.add_edge(t, y, Label::Constant(2.0)).unwrap();
    let reused = memo.optimize(&g, Tangent).unwrap();
    assert_eq!(memo.len(), 1);
    let text = format!("{:?}", reused.selection.elimination);
    assert!(
        text.contains("VarId(20)") && text.contains("VarId(21)"),
        "{text}"
    );
    assert!(
        !text.contains("VarId(3)") && !text.contains("VarId(7)"),
        "{text}"
    );
    let names: Vec<_> = reused
        .selection
        .elimination
        .remainder
        .vertices
        .iter()
        .filter_map(|v| v.name.clone())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| ["p", "q", "r", "s"].contains(&n.as_str())),
        "{names:?}"
    );
    assert_eq!(
        timeless(reused),
        timeless(optimize(&g, &c, Tangent).unwrap())
    );
}

/// A result found against the reference engine's graph is kept apart from
/// the result for the graph alone: the same memo gives each the result
/// found without it.
#[test]
fn results_against_a_reference_graph_are_kept_apart() {
    let ours = Lcg::from_text(
        "x\nx\nz\nz\nz\ny\ny\n0 2 v0\n1 2 v1\n2 3 v2\n0 4 v3\n3 4 v4\n4 5 v5\n1 6 v6\n4 6 v7\n",
    )
    .unwrap();
    let reference = Lcg::from_text(
        "x\nx\nx\nx\nz\nz\nz\ny\ny\n0 4 v0\n1 4 v1\n4 5 v2\n2 6 v3\n5 6 v4\n6 7 v5\n3 8 v6\n6 8 v7\n",
    )
    .unwrap();
    let config = Config::default();
    let memo = Memo::new(&config);
    let against = xaif_elim::optimize_against(&ours, Some(&reference), &config, Adjoint).unwrap();
    let alone = optimize(&ours, &config, Adjoint).unwrap();
    assert_ne!(against.selection, alone.selection);
    for _ in 0..2 {
        let a = memo
            .optimize_against(&ours, Some(&reference), Adjoint)
            .unwrap();
        assert_eq!(a.selection, against.selection);
        let b = memo.optimize(&ours, Adjoint).unwrap();
        assert_eq!(b.selection, alone.selection);
    }
    assert_eq!(memo.len(), 2);
}
