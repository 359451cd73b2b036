//! Behaviour of the elimination API on small graphs: parallel edges,
//! isolation, folding of signs and constants, errors, face elimination
//! details, scarcity, selection and Graphviz output.

use xaif_elim::{
    run, scarcity_filter, select, AccId, Chain, Config, ConfigError, DualGraph, DualVertexId,
    EdgeValue, ElimError, ElimGraph, EliminationState, Expr, Extent, GraphError, Label, Lcg,
    LcgTarget, Method, Metric, Operand, Step, Strategy, Triviality, VarId, VertexKind,
};

use VertexKind::{Dependent, Independent, Intermediate};

fn var(n: u32) -> Label {
    Label::Variable(VarId(n))
}

fn values(v: VarId) -> Option<f64> {
    Some(0.5 + f64::from(v.0) * 0.75)
}

fn assert_same_jacobian(lcg: &Lcg, elimination: &xaif_elim::Elimination) {
    let expected = lcg.jacobian(&values).unwrap();
    let got = elimination.jacobian(&values).unwrap();
    assert_eq!(expected.dependents, got.dependents);
    for (a, b) in expected.values.iter().zip(&got.values) {
        assert!((a - b).abs() <= 1e-12 * a.abs().max(1.0), "{a} vs {b}");
    }
}

#[test]
fn parallel_edges_are_merged_by_one_addition() {
    // y = x * x: two edges x -> y, both labelled x.
    let mut lcg = Lcg::new();
    let x = lcg.add_vertex(Independent);
    let y = lcg.add_vertex(Dependent);
    lcg.add_edge(x, y, var(0)).unwrap();
    lcg.add_edge(x, y, var(1)).unwrap();
    let elimination = ElimGraph::new(&lcg).unwrap().finish(Triviality::Unit);
    assert_eq!(
        elimination.steps,
        vec![Step::MergeParallel {
            source: x,
            target: y
        }]
    );
    assert_eq!(elimination.accumulations[0].expr.to_string(), "v0 + v1");
    assert_eq!(
        elimination.remainder.edges[0].value,
        EdgeValue::Acc(AccId(0))
    );
    assert_eq!(elimination.ops.additions, 1);
    assert_same_jacobian(&lcg, &elimination);

    // y = x + x: the units fold to the constant 2 without any operation.
    let mut lcg = Lcg::new();
    let x = lcg.add_vertex(Independent);
    let y = lcg.add_vertex(Dependent);
    lcg.add_edge(x, y, Label::Unit).unwrap();
    lcg.add_edge(x, y, Label::Unit).unwrap();
    let elimination = ElimGraph::new(&lcg).unwrap().finish(Triviality::Unit);
    assert!(elimination.accumulations.is_empty());
    assert_eq!(
        elimination.remainder.edges[0].value,
        EdgeValue::Constant(2.0)
    );
    assert_eq!(elimination.nontrivial_edges, 1);
}

#[test]
fn dead_intermediates_are_removed() {
    // a feeds nothing, b is fed by nothing; both vanish with their edges,
    // and so does c, which is only reachable from b.
    let mut lcg = Lcg::new();
    let x = lcg.add_vertex(Independent);
    let a = lcg.add_vertex(Intermediate);
    let b = lcg.add_vertex(Intermediate);
    let c = lcg.add_vertex(Intermediate);
    let y = lcg.add_vertex(Dependent);
    lcg.add_edge(x, a, var(0)).unwrap();
    lcg.add_edge(b, c, var(1)).unwrap();
    lcg.add_edge(c, y, var(2)).unwrap();
    lcg.add_edge(x, y, var(3)).unwrap();
    let graph = ElimGraph::new(&lcg).unwrap();
    assert!(!graph.contains_vertex(a) && !graph.contains_vertex(b) && !graph.contains_vertex(c));
    assert_eq!(graph.edges(), vec![(x, y)]);
}

#[test]
fn eliminations_reject_what_the_seed_forbids() {
    let mut lcg = Lcg::new();
    let x = lcg.add_vertex(Independent);
    let t = lcg.add_vertex(Intermediate);
    let y = lcg.add_vertex(Dependent);
    let z = lcg.add_vertex(Dependent);
    lcg.add_edge(x, t, var(0)).unwrap();
    lcg.add_edge(t, y, var(1)).unwrap();
    lcg.add_edge(y, z, var(2)).unwrap();
    let mut graph = ElimGraph::new(&lcg).unwrap();
    assert_eq!(
        graph.front_eliminate(t, y),
        Err(ElimError::FrontIntoNonIntermediate { from: t, to: y })
    );
    assert_eq!(
        graph.back_eliminate(x, t),
        Err(ElimError::BackFromIndependent { from: x, to: t })
    );
    assert_eq!(
        graph.eliminate_vertex(y),
        Err(ElimError::NotIntermediate(y))
    );
    assert_eq!(
        graph.front_eliminate(x, y),
        Err(ElimError::NoSuchEdge { from: x, to: y })
    );
    // A dependent source may be back eliminated.
    graph.back_eliminate(y, z).unwrap();
    graph.eliminate_vertex(t).unwrap();
    assert_eq!(graph.eliminate_vertex(t), Err(ElimError::NoSuchVertex(t)));
    let elimination = graph.finish(Triviality::Unit);
    assert_same_jacobian(&lcg, &elimination);

    let mut cyclic = Lcg::new();
    let x = cyclic.add_vertex(Independent);
    let a = cyclic.add_vertex(Intermediate);
    let b = cyclic.add_vertex(Dependent);
    cyclic.add_edge(x, a, var(0)).unwrap();
    cyclic.add_edge(a, b, var(0)).unwrap();
    cyclic.add_edge(b, a, var(0)).unwrap();
    assert!(matches!(
        ElimGraph::new(&cyclic),
        Err(ElimError::Graph(GraphError::Cycle(_)))
    ));
    assert!(matches!(
        select(&cyclic, &Config::default()),
        Err(ElimError::Graph(GraphError::Cycle(_)))
    ));
    assert!(cyclic.jacobian(&values).is_err());
}

#[test]
fn minus_one_factors_become_signs_and_subtractions() {
    // y = x1 - sin(x2): the negated product needs a stored negation.
    let mut lcg = Lcg::new();
    let x1 = lcg.add_vertex(Independent);
    let x2 = lcg.add_vertex(Independent);
    let s = lcg.add_vertex(Intermediate);
    let y = lcg.add_vertex(Dependent);
    lcg.add_edge(x2, s, var(0)).unwrap();
    lcg.add_edge(s, y, Label::MinusOne).unwrap();
    lcg.add_edge(x1, y, Label::Unit).unwrap();
    let mut graph = ElimGraph::new(&lcg).unwrap();
    graph.eliminate_vertex(s).unwrap();
    let elimination = graph.finish(Triviality::Unit);
    assert_eq!(elimination.ops.multiplications, 0);
    assert_eq!(elimination.ops.negations, 1);
    assert_eq!(
        elimination.accumulations[0].expr,
        Expr::Neg(Box::new(Expr::Leaf(Operand::Variable(VarId(0)))))
    );
    assert_same_jacobian(&lcg, &elimination);

    // s = v1 x - v0 a (a = v0' x) then y = -s: the difference is computed
    // as a subtraction and negated for free by swapping its operands.
    let mut lcg = Lcg::new();
    let x = lcg.add_vertex(Independent);
    let a = lcg.add_vertex(Intermediate);
    let s = lcg.add_vertex(Intermediate);
    let y = lcg.add_vertex(Dependent);
    lcg.add_edge(x, a, var(0)).unwrap();
    lcg.add_edge(x, s, var(1)).unwrap();
    lcg.add_edge(a, s, Label::MinusOne).unwrap();
    lcg.add_edge(s, y, Label::MinusOne).unwrap();
    let mut graph = ElimGraph::new(&lcg).unwrap();
    graph.eliminate_vertex(a).unwrap();
    graph.eliminate_vertex(s).unwrap();
    let elimination = graph.finish(Triviality::Unit);
    assert_eq!(elimination.accumulations.len(), 1);
    assert_eq!(elimination.accumulations[0].expr.to_string(), "v0 - v1");
    assert_eq!(elimination.ops.subtractions, 1);
    assert_eq!(elimination.ops.negations, 0);
    assert_same_jacobian(&lcg, &elimination);

    // A negated product used only on its remainder edge is negated in place.
    let mut lcg = Lcg::new();
    let x = lcg.add_vertex(Independent);
    let s = lcg.add_vertex(Intermediate);
    let t = lcg.add_vertex(Intermediate);
    let y = lcg.add_vertex(Dependent);
    lcg.add_edge(x, s, var(0)).unwrap();
    lcg.add_edge(s, t, var(1)).unwrap();
    lcg.add_edge(t, y, Label::MinusOne).unwrap();
    let mut graph = ElimGraph::new(&lcg).unwrap();
    graph.eliminate_vertex(s).unwrap();
    graph.eliminate_vertex(t).unwrap();
    let elimination = graph.finish(Triviality::Unit);
    assert_eq!(elimination.accumulations.len(), 1);
    assert_eq!(elimination.accumulations[0].expr.to_string(), "-(v0 * v1)");
    assert_same_jacobian(&lcg, &elimination);
}

#[test]
fn constants_fold_and_count_as_trivial_only_with_a2() {
    // y = 3 * (2 * x): one folded constant edge, no operation.
    let mut lcg = Lcg::new();
    let x = lcg.add_vertex(Independent);
    let t = lcg.add_vertex(Intermediate);
    let y = lcg.add_vertex(Dependent);
    lcg.add_edge(x, t, Label::Constant(2.0)).unwrap();
    lcg.add_edge(t, y, Label::Constant(3.0)).unwrap();
    let mut graph = ElimGraph::new(&lcg).unwrap();
    graph.eliminate_vertex(t).unwrap();
    let a1 = graph.clone().finish(Triviality::Unit);
    assert_eq!(a1.remainder.edges[0].value, EdgeValue::Constant(6.0));
    assert_eq!(a1.ops, Default::default());
    assert_eq!(a1.nontrivial_edges, 1);
    assert_eq!(
        graph
            .clone()
            .finish(Triviality::UnitAndConstant)
            .nontrivial_edges,
        0
    );
    assert_eq!(graph.finish(Triviality::None).nontrivial_edges, 1);
}

/// `x1, x2, x3 -> t -> y1, y2, y3`: eliminating t turns 6 edges into 9.
fn bowtie(inputs: Label) -> Lcg {
    let mut lcg = Lcg::new();
    let xs: Vec<_> = (0..3).map(|_| lcg.add_vertex(Independent)).collect();
    let t = lcg.add_vertex(Intermediate);
    let ys: Vec<_> = (0..3).map(|_| lcg.add_vertex(Dependent)).collect();
    for &x in &xs {
        lcg.add_edge(x, t, inputs).unwrap();
    }
    for (n, &y) in ys.iter().enumerate() {
        lcg.add_edge(t, y, var(n as u32 + 3)).unwrap();
    }
    lcg
}

#[test]
fn scarcity_preserving_elimination_stops_at_the_minimum() {
    for method in [Method::Vertex, Method::Edge, Method::Face] {
        let lcg = bowtie(var(0));
        let total = Strategy {
            method,
            chain: Chain::seed(),
            extent: Extent::Total,
        };
        let partial = Strategy {
            extent: Extent::ScarcityPreserving {
                allow_maintaining: false,
            },
            ..total.clone()
        };
        let complete = run(&lcg, &total, Triviality::Unit).unwrap();
        assert_eq!(complete.nontrivial_edges, 9, "{method:?}");
        assert_eq!(complete.ops.multiplications, 9, "{method:?}");
        let kept = run(&lcg, &partial, Triviality::Unit).unwrap();
        assert!(kept.steps.is_empty(), "{method:?}");
        assert_eq!(kept.nontrivial_edges, 6);
        assert_same_jacobian(&lcg, &kept);
    }
    // With unit in-edges the 9 products fold away, but 9 variable edges
    // are still worse than the original 3 non-trivial ones.
    let lcg = bowtie(Label::Unit);
    let selection = select(&lcg, &Config::default()).unwrap();
    assert!(selection.elimination.steps.is_empty());
    assert_eq!(selection.elimination.nontrivial_edges, 3);
    // The operations metric wants the bipartite graph at no cost.
    let selection = select(&lcg, &Config::operations(Triviality::Unit)).unwrap();
    assert_eq!(selection.elimination.ops, Default::default());
    assert_eq!(selection.elimination.remainder.edges.len(), 9);
}

#[test]
fn scarcity_filter_prefers_reducing_then_maintaining() {
    // t: 2 in, 2 out (elimination keeps 4 non-trivial edges);
    // u: 2 in, 3 out (elimination makes 6 out of 5).
    let mut lcg = Lcg::new();
    let xs: Vec<_> = (0..4).map(|_| lcg.add_vertex(Independent)).collect();
    let t = lcg.add_vertex(Intermediate);
    let u = lcg.add_vertex(Intermediate);
    let ys: Vec<_> = (0..5).map(|_| lcg.add_vertex(Dependent)).collect();
    for (source, target) in [
        (xs[0], t),
        (xs[1], t),
        (t, ys[0]),
        (t, ys[1]),
        (xs[2], u),
        (xs[3], u),
        (u, ys[2]),
        (u, ys[3]),
        (u, ys[4]),
    ] {
        lcg.add_edge(source, target, var(0)).unwrap();
    }
    let graph = ElimGraph::new(&lcg).unwrap();
    let all = graph.vertex_candidates();
    assert_eq!(
        graph.nontrivial_delta(&LcgTarget::Vertex(t), Triviality::Unit),
        0
    );
    assert_eq!(
        graph.nontrivial_delta(&LcgTarget::Vertex(u), Triviality::Unit),
        1
    );
    assert_eq!(
        scarcity_filter(&graph, all.clone(), Triviality::Unit, false),
        all
    );
    assert_eq!(
        scarcity_filter(&graph, all, Triviality::Unit, true),
        vec![LcgTarget::Vertex(t)]
    );
}

#[test]
fn face_elimination_absorbs_and_merges_twins() {
    // i -> j -> k, i -> k, k -> m1, k -> m2; j and k intermediate.
    let mut lcg = Lcg::new();
    let i = lcg.add_vertex(Independent);
    let j = lcg.add_vertex(Intermediate);
    let k = lcg.add_vertex(Intermediate);
    let m1 = lcg.add_vertex(Dependent);
    let m2 = lcg.add_vertex(Dependent);
    lcg.add_edge(i, k, var(0)).unwrap();
    lcg.add_edge(i, j, var(1)).unwrap();
    lcg.add_edge(j, k, var(2)).unwrap();
    lcg.add_edge(k, m1, var(3)).unwrap();
    lcg.add_edge(k, m2, var(4)).unwrap();
    let mut dual = DualGraph::new(&lcg).unwrap();
    let d = DualVertexId;
    assert_eq!(
        dual.dual_vertices(),
        vec![
            (d(0), i, j),
            (d(1), i, k),
            (d(2), j, k),
            (d(3), k, m1),
            (d(4), k, m2)
        ]
    );
    assert!(dual.is_representable());
    // (j,k) -> (k,m1): fill-in d5 = (j,m1); the graph is no longer a line graph.
    dual.eliminate_face(d(2), d(3)).unwrap();
    assert!(!dual.is_representable());
    assert_eq!(
        dual.clone().finish(Triviality::Unit),
        Err(ElimError::NotRepresentable)
    );
    // (i,j) -> (j,k): (i,k) exists but has other successors, so this is
    // fill-in d6 = (i,k) with the single successor (k,m2); (j,k) dies.
    dual.eliminate_face(d(0), d(2)).unwrap();
    assert_eq!(dual.successors(d(6)), &[d(4)]);
    // (i,k) -> (k,m1): d1 now has the same neighbourhood as d6; they merge.
    dual.eliminate_face(d(1), d(3)).unwrap();
    assert_eq!(
        dual.eliminate_face(d(6), d(4)),
        Err(ElimError::NoSuchFace {
            first: d(6),
            second: d(4)
        })
    );
    let steps = dual.clone().finish(Triviality::Unit).unwrap().steps;
    assert_eq!(
        steps.last(),
        Some(&Step::MergeDual {
            kept: d(1),
            removed: d(6),
            source: i,
            target: k
        })
    );
    while let Some(face) = dual.face_candidates().first().copied() {
        dual.eliminate(&face).unwrap();
    }
    let elimination = dual.finish(Triviality::Unit).unwrap();
    assert_eq!(elimination.remainder.edges.len(), 2);
    assert_same_jacobian(&lcg, &elimination);
}

#[test]
fn face_elimination_of_parallel_paths_absorbs() {
    // x -> a -> y and x -> b -> y: the second face product is absorbed.
    let mut lcg = Lcg::new();
    let x = lcg.add_vertex(Independent);
    let a = lcg.add_vertex(Intermediate);
    let b = lcg.add_vertex(Intermediate);
    let y = lcg.add_vertex(Dependent);
    lcg.add_edge(x, a, var(0)).unwrap();
    lcg.add_edge(a, y, var(1)).unwrap();
    lcg.add_edge(x, b, var(2)).unwrap();
    lcg.add_edge(b, y, var(3)).unwrap();
    let strategy = Strategy {
        method: Method::Face,
        chain: Chain::forward(),
        extent: Extent::Total,
    };
    let elimination = run(&lcg, &strategy, Triviality::Unit).unwrap();
    let rendered: Vec<String> = elimination
        .accumulations
        .iter()
        .map(|a| a.expr.to_string())
        .collect();
    assert_eq!(rendered, vec!["v0 * v1", "acc0 + v2 * v3"]);
    assert_eq!(elimination.remainder.edges.len(), 1);
    assert_eq!(
        elimination.remainder.edges[0].value,
        EdgeValue::Acc(AccId(1))
    );
}

#[test]
fn flags_map_to_configurations() {
    assert_eq!(Config::from_flags(2, 1, false), Err(ConfigError::Metric(2)));
    assert_eq!(
        Config::from_flags(1, 3, false),
        Err(ConfigError::Triviality(3))
    );
    let config = Config::from_flags(0, 2, false).unwrap();
    assert_eq!(config.metric, Metric::Operations);
    assert_eq!(config.triviality, Triviality::UnitAndConstant);
    assert!(config.strategies.iter().all(|s| s.extent == Extent::Total));
    let config = Config::from_flags(1, 0, true).unwrap();
    assert_eq!(config.metric, Metric::Scarcity);
    assert!(config.strategies.iter().all(|s| s.extent
        == Extent::ScarcityPreserving {
            allow_maintaining: true
        }));
    assert_eq!(Config::default(), Config::from_flags(1, 1, false).unwrap());
    let empty = Config {
        strategies: Vec::new(),
        ..Config::default()
    };
    assert_eq!(
        select(&bowtie(Label::Unit), &empty),
        Err(ElimError::NoStrategies)
    );
}

#[test]
fn remainder_dot_omits_removed_vertices() {
    let mut lcg = Lcg::new();
    let x = lcg.add_named_vertex(Independent, "x");
    let t = lcg.add_named_vertex(Intermediate, "t");
    let y = lcg.add_named_vertex(Dependent, "y");
    lcg.add_edge(x, t, var(0)).unwrap();
    lcg.add_edge(t, y, Label::MinusOne).unwrap();
    let mut graph = ElimGraph::new(&lcg).unwrap();
    graph.eliminate_vertex(t).unwrap();
    let elimination = graph.finish(Triviality::Unit);
    assert_eq!(
        elimination.remainder.to_dot(),
        "digraph remainder {\n  v0 [label=\"x\", shape=box];\n  v2 [label=\"y\", shape=doublecircle];\n  v0 -> v2 [label=\"acc0\"];\n}\n"
    );
    assert_eq!(elimination.acc_use_counts(), vec![1]);
}

#[test]
fn evaluation_reports_bad_input_instead_of_panicking() {
    let lcg = bowtie(var(0));
    let mut elimination = ElimGraph::new(&lcg).unwrap().finish(Triviality::Unit);
    assert_eq!(
        elimination.jacobian(&|_| None),
        Err(xaif_elim::EvalError::UnboundVariable(VarId(0)))
    );
    elimination.remainder.edges.push(xaif_elim::RemainderEdge {
        source: xaif_elim::VertexId(0),
        target: xaif_elim::VertexId(99),
        value: EdgeValue::Unit,
    });
    assert!(matches!(
        elimination.jacobian(&values),
        Err(xaif_elim::EvalError::Graph(GraphError::UnknownVertex(_)))
    ));
}
