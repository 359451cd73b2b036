//! The worked example of the control-flow-reversal seed, §3.3: the LCG of
//! Eq. (3)/(4), eliminated by HS -> LM -> reverse edge elimination, must
//! reproduce the elimination steps and Jacobian accumulation expressions of
//! Eq. (5) exactly.

use xaif_elim::{
    run, Chain, Direction, EdgeValue, Elimination, Extent, Label, Lcg, Method, Operand, Step,
    Strategy, Triviality, VarId, VertexId, VertexKind,
};

/// Variable labels of Eq. (4), in this order: c31 c32 c41 c43 ct3 ct2 c7t c74 c64.
const NAMES: [&str; 9] = [
    "c31", "c32", "c41", "c43", "ct3", "ct2", "c7t", "c74", "c64",
];

struct Seed {
    lcg: Lcg,
    v: [VertexId; 7],
}

/// Vertices 1, 2 independent; 3, 4, 6, 7 dependent ("every vertex in our
/// graph except for t will be treated as an output"); t intermediate.
fn seed_graph() -> Seed {
    let mut lcg = Lcg::new();
    let v1 = lcg.add_named_vertex(VertexKind::Independent, "1");
    let v2 = lcg.add_named_vertex(VertexKind::Independent, "2");
    let v3 = lcg.add_named_vertex(VertexKind::Dependent, "3");
    let v4 = lcg.add_named_vertex(VertexKind::Dependent, "4");
    let t = lcg.add_named_vertex(VertexKind::Intermediate, "t");
    let v6 = lcg.add_named_vertex(VertexKind::Dependent, "6");
    let v7 = lcg.add_named_vertex(VertexKind::Dependent, "7");
    let var =
        |name: &str| Label::Variable(VarId(NAMES.iter().position(|n| *n == name).unwrap() as u32));
    lcg.add_edge(v1, v3, var("c31")).unwrap();
    lcg.add_edge(v2, v3, var("c32")).unwrap();
    lcg.add_edge(v1, v4, var("c41")).unwrap();
    lcg.add_edge(v3, v4, var("c43")).unwrap();
    lcg.add_edge(v3, t, var("ct3")).unwrap();
    lcg.add_edge(v2, t, var("ct2")).unwrap();
    lcg.add_edge(t, v7, var("c7t")).unwrap();
    lcg.add_edge(v4, v7, var("c74")).unwrap();
    lcg.add_edge(v4, v6, var("c64")).unwrap();
    Seed {
        lcg,
        v: [v1, v2, v3, v4, t, v6, v7],
    }
}

fn eliminate_seed(seed: &Seed) -> Elimination {
    let strategy = Strategy {
        method: Method::Edge,
        chain: Chain::seed(),
        extent: Extent::Total,
    };
    run(&seed.lcg, &strategy, Triviality::Unit).unwrap()
}

fn edge_step(source: VertexId, target: VertexId, direction: Direction) -> Step {
    Step::Edge {
        source,
        target,
        direction,
    }
}

#[test]
fn steps_are_those_of_eq_5() {
    let seed = seed_graph();
    let [v1, v2, v3, v4, t, v6, v7] = seed.v;
    let _ = (v1, v2);
    let elimination = eliminate_seed(&seed);
    use Direction::{Back, Front};
    assert_eq!(
        elimination.steps,
        vec![
            edge_step(v3, t, Front),
            edge_step(v4, v7, Back),
            edge_step(v3, v7, Back),
            edge_step(t, v7, Back),
            edge_step(v4, v6, Back),
            edge_step(v3, v6, Back),
            edge_step(v3, v4, Back),
        ]
    );
}

#[test]
fn accumulation_expressions_are_those_of_eq_5() {
    let seed = seed_graph();
    let elimination = eliminate_seed(&seed);
    // Eq. (5), centre column, with each accumulated value named by the
    // edge label it (re)defines, exactly as the seed writes it.
    let expected = [
        ("c73", "ct3 * c7t"),
        // The seed prints this product as c41 * c74; the engine always puts
        // the eliminated edge (4,7) first, as in every other line of Eq. (5).
        ("c71", "c74 * c41"),
        ("c73", "c73 + c74 * c43"),
        ("c71", "c71 + c73 * c31"),
        ("c72", "c73 * c32"),
        ("c72", "c72 + c7t * ct2"),
        ("c61", "c64 * c41"),
        ("c63", "c64 * c43"),
        ("c61", "c61 + c63 * c31"),
        ("c62", "c63 * c32"),
        ("c41", "c41 + c43 * c31"),
        ("c42", "c43 * c32"),
    ];
    assert_eq!(elimination.accumulations.len(), expected.len());
    let acc_names: Vec<&str> = expected.iter().map(|(lhs, _)| *lhs).collect();
    for (index, (accumulation, (lhs, rhs))) in
        elimination.accumulations.iter().zip(expected).enumerate()
    {
        assert_eq!(accumulation.id.index(), index);
        let rendered = render_with_acc_names(&accumulation.expr, &acc_names);
        assert_eq!(
            (acc_names[index], rendered.as_str()),
            (lhs, rhs),
            "acc{index}"
        );
    }
    // Twelve products, five absorptions, nothing else.
    assert_eq!(elimination.ops.multiplications, 12);
    assert_eq!(elimination.ops.additions, 5);
    assert_eq!(elimination.ops.subtractions, 0);
    assert_eq!(elimination.ops.divisions, 0);
    assert_eq!(elimination.ops.negations, 0);
}

/// Renders with the seed's names for variables and accumulated values.
fn render_with_acc_names(expr: &xaif_elim::Expr, acc_names: &[&str]) -> String {
    use xaif_elim::Expr;
    match expr {
        Expr::Leaf(Operand::Variable(var)) => NAMES[var.0 as usize].to_string(),
        Expr::Leaf(Operand::Acc(acc)) => acc_names[acc.index()].to_string(),
        Expr::Leaf(Operand::Constant(value)) => value.to_string(),
        Expr::Mul(l, r) => format!(
            "{} * {}",
            render_with_acc_names(l, acc_names),
            render_with_acc_names(r, acc_names)
        ),
        Expr::Add(l, r) => format!(
            "{} + {}",
            render_with_acc_names(l, acc_names),
            render_with_acc_names(r, acc_names)
        ),
        other => panic!("unexpected node {other:?}"),
    }
}

#[test]
fn remainder_holds_the_pushed_jacobian_entries() {
    let seed = seed_graph();
    let [v1, v2, v3, v4, _, v6, v7] = seed.v;
    let elimination = eliminate_seed(&seed);
    let var = |name: &str| {
        EdgeValue::Variable(VarId(NAMES.iter().position(|n| *n == name).unwrap() as u32))
    };
    let acc = |k: u32| EdgeValue::Acc(xaif_elim::AccId(k));
    // Right column of Eq. (5): J31, J32 are original labels; the others are
    // the last accumulated value of their edge.
    let mut entries: Vec<(VertexId, VertexId, EdgeValue)> = elimination
        .remainder
        .edges
        .iter()
        .map(|e| (e.source, e.target, e.value))
        .collect();
    entries.sort_by_key(|(s, t, _)| (*t, *s));
    assert_eq!(
        entries,
        vec![
            (v1, v3, var("c31")),
            (v2, v3, var("c32")),
            (v1, v4, acc(10)),
            (v2, v4, acc(11)),
            (v1, v6, acc(8)),
            (v2, v6, acc(9)),
            (v1, v7, acc(3)),
            (v2, v7, acc(5)),
        ]
    );
    assert!(!elimination.remainder.vertices[seed.v[4].index()].present);
    assert_eq!(elimination.nontrivial_edges, 8);
}

#[test]
fn jacobian_matches_path_sum_and_calculus() {
    let seed = seed_graph();
    let [v1, v2, v3, v4, _, v6, v7] = seed.v;
    let elimination = eliminate_seed(&seed);
    // Point values and the partials of Eq. (4) at that point.
    let (x1, x2) = (0.7_f64, -1.3_f64);
    let x3 = x1 * x2;
    let x4 = x1 * x3;
    let xt = x2 * x3;
    let partials = [x2, x1, x3, x1, x2, x3, x4, xt, x4.cos()];
    let vars = |var: VarId| partials.get(var.0 as usize).copied();
    let from_remainder = elimination.jacobian(&vars).unwrap();
    let from_paths = seed.lcg.jacobian(&vars).unwrap();
    assert_eq!(from_remainder.dependents, vec![v3, v4, v6, v7]);
    assert_eq!(from_remainder.independents, vec![v1, v2]);
    for (a, b) in from_remainder.values.iter().zip(&from_paths.values) {
        assert!((a - b).abs() <= 1e-14 * a.abs().max(1.0), "{a} vs {b}");
    }
    // v7 = v1^3 v2^3 and v6 = sin(v1^2 v2).
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-13 * b.abs().max(1.0);
    let j = |dep, ind| from_remainder.get(dep, ind).unwrap();
    assert!(close(j(v7, v1), 3.0 * x1.powi(2) * x2.powi(3)));
    assert!(close(j(v7, v2), 3.0 * x1.powi(3) * x2.powi(2)));
    assert!(close(j(v6, v1), x4.cos() * 2.0 * x1 * x2));
    assert!(close(j(v6, v2), x4.cos() * x1 * x1));
    assert!(close(j(v4, v1), 2.0 * x1 * x2));
    assert!(close(j(v3, v2), x1));
}
