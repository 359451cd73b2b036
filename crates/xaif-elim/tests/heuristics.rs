//! What each heuristic filter keeps, pinned down on small hand-built graphs.

use xaif_elim::{
    Chain, Direction, DualGraph, DualVertexId, ElimGraph, EliminationState, FaceTarget, Filter,
    Label, Lcg, LcgTarget, Mode, VarId, VertexId, VertexKind,
};

use Direction::{Back, Front};
use VertexKind::{Dependent, Independent, Intermediate};

fn var(n: u32) -> Label {
    Label::Variable(VarId(n))
}

fn edge(source: VertexId, target: VertexId, direction: Direction) -> LcgTarget {
    LcgTarget::Edge {
        source,
        target,
        direction,
    }
}

/// `x -> a -> b -> y` with the shortcut `a -> y`; `a`, `b` intermediate.
///
/// | candidate | Markowitz | relative | fill-in |
/// |---|---|---|---|
/// | (x,a)_f | 2 | 1 | 2 |
/// | (a,b)_f | 1 | 0 | 0 |
/// | (a,b)_b | 1 | 0 | 1 |
/// | (a,y)_b | 1 | 0 | 1 |
/// | (b,y)_b | 1 | 1 | 0 |
struct Chain4 {
    graph: ElimGraph,
    x: VertexId,
    a: VertexId,
    b: VertexId,
    y: VertexId,
}

fn chain4() -> Chain4 {
    let mut lcg = Lcg::new();
    let x = lcg.add_named_vertex(Independent, "x");
    let a = lcg.add_named_vertex(Intermediate, "a");
    let b = lcg.add_named_vertex(Intermediate, "b");
    let y = lcg.add_named_vertex(Dependent, "y");
    lcg.add_edge(x, a, var(0)).unwrap();
    lcg.add_edge(a, b, var(1)).unwrap();
    lcg.add_edge(b, y, var(2)).unwrap();
    lcg.add_edge(a, y, var(3)).unwrap();
    Chain4 {
        graph: ElimGraph::new(&lcg).unwrap(),
        x,
        a,
        b,
        y,
    }
}

#[test]
fn edge_candidates_respect_the_seed_restrictions() {
    let Chain4 { graph, x, a, b, y } = chain4();
    assert_eq!(
        graph.edge_candidates(),
        vec![
            edge(x, a, Front),
            edge(a, b, Front),
            edge(a, b, Back),
            edge(a, y, Back),
            edge(b, y, Back),
        ]
    );
}

#[test]
fn lowest_markowitz_on_edges() {
    let Chain4 { graph, x, a, b, y } = chain4();
    let kept = Filter::LowestMarkowitz.apply(&graph, graph.edge_candidates());
    assert_eq!(
        kept,
        vec![
            edge(a, b, Front),
            edge(a, b, Back),
            edge(a, y, Back),
            edge(b, y, Back)
        ]
    );
    assert_eq!(graph.markowitz(&edge(x, a, Front)), 2);
}

#[test]
fn lowest_relative_markowitz_on_edges() {
    let Chain4 { graph, a, b, y, .. } = chain4();
    let kept = Filter::LowestRelativeMarkowitz.apply(&graph, graph.edge_candidates());
    assert_eq!(
        kept,
        vec![edge(a, b, Front), edge(a, b, Back), edge(a, y, Back)]
    );
}

#[test]
fn lowest_fill_in_on_edges() {
    let Chain4 { graph, a, b, y, .. } = chain4();
    let kept = Filter::LowestFillIn.apply(&graph, graph.edge_candidates());
    assert_eq!(kept, vec![edge(a, b, Front), edge(b, y, Back)]);
}

#[test]
fn forward_and_reverse_mode_on_edges() {
    let Chain4 { graph, x, a, b, y } = chain4();
    let all = graph.edge_candidates();
    // Forward: in-edges of the earliest vertex, front first.
    assert_eq!(Mode::Forward.choose(&graph, &all), Some(edge(x, a, Front)));
    // Reverse: out-edges of the latest vertex, back first, latest target.
    assert_eq!(Mode::Reverse.choose(&graph, &all), Some(edge(b, y, Back)));
    let lm_forward = Chain::new([Filter::LowestMarkowitz], Mode::Forward);
    assert_eq!(
        lm_forward.choose(&graph, all.clone()),
        Some(edge(a, b, Back))
    );
    let lm_reverse = Chain::new([Filter::LowestMarkowitz], Mode::Reverse);
    assert_eq!(lm_reverse.choose(&graph, all), Some(edge(b, y, Back)));
    assert_eq!(Mode::Forward.choose(&graph, &[]), None);
}

#[test]
fn vertex_filters_on_the_chain() {
    let Chain4 { graph, a, b, .. } = chain4();
    let all = graph.vertex_candidates();
    assert_eq!(all, vec![LcgTarget::Vertex(a), LcgTarget::Vertex(b)]);
    // a: P={x}, S={b,y}: Markowitz 2, relative 2-1*1 = 1, fill-in 2.
    // b: P={a}, S={y}: Markowitz 1, relative 1-0*1 = 1, fill-in 0.
    assert_eq!(
        Filter::LowestMarkowitz.apply(&graph, all.clone()),
        vec![LcgTarget::Vertex(b)]
    );
    assert_eq!(
        Filter::LowestRelativeMarkowitz.apply(&graph, all.clone()),
        all.clone()
    );
    assert_eq!(
        Filter::LowestFillIn.apply(&graph, all.clone()),
        vec![LcgTarget::Vertex(b)]
    );
    assert_eq!(
        Mode::Forward.choose(&graph, &all),
        Some(LcgTarget::Vertex(a))
    );
    assert_eq!(
        Mode::Reverse.choose(&graph, &all),
        Some(LcgTarget::Vertex(b))
    );
}

#[test]
fn relative_markowitz_discounts_independent_to_dependent_products() {
    // a joins x1, x2 to y1, y2 directly (Markowitz 4, relative 0);
    // c -> d -> y1 is a detour (Markowitz 1 each, relative 1 each).
    let mut lcg = Lcg::new();
    let x1 = lcg.add_vertex(Independent);
    let x2 = lcg.add_vertex(Independent);
    let a = lcg.add_vertex(Intermediate);
    let c = lcg.add_vertex(Intermediate);
    let d = lcg.add_vertex(Intermediate);
    let y1 = lcg.add_vertex(Dependent);
    let y2 = lcg.add_vertex(Dependent);
    for (s, t) in [(x1, a), (x2, a), (a, y1), (a, y2), (x1, c), (c, d), (d, y1)] {
        lcg.add_edge(s, t, var(0)).unwrap();
    }
    let graph = ElimGraph::new(&lcg).unwrap();
    let all = graph.vertex_candidates();
    assert_eq!(
        Filter::LowestMarkowitz.apply(&graph, all.clone()),
        vec![LcgTarget::Vertex(c), LcgTarget::Vertex(d)]
    );
    assert_eq!(
        Filter::LowestRelativeMarkowitz.apply(&graph, all),
        vec![LcgTarget::Vertex(a)]
    );
}

/// `x -> a -> y`, `x -> b -> y`, `x -> c -> z`: a, b, c intermediate.
fn siblings() -> (Lcg, [VertexId; 6]) {
    let mut lcg = Lcg::new();
    let x = lcg.add_named_vertex(Independent, "x");
    let a = lcg.add_named_vertex(Intermediate, "a");
    let b = lcg.add_named_vertex(Intermediate, "b");
    let c = lcg.add_named_vertex(Intermediate, "c");
    let y = lcg.add_named_vertex(Dependent, "y");
    let z = lcg.add_named_vertex(Dependent, "z");
    for (n, (s, t)) in [(x, a), (a, y), (x, b), (b, y), (x, c), (c, z)]
        .into_iter()
        .enumerate()
    {
        lcg.add_edge(s, t, var(n as u32)).unwrap();
    }
    (lcg, [x, a, b, c, y, z])
}

#[test]
fn highest_sibling_degree_on_edges() {
    let (lcg, [x, a, b, c, y, z]) = siblings();
    let mut graph = ElimGraph::new(&lcg).unwrap();
    // No previous elimination: keep everything.
    let all = graph.edge_candidates();
    assert_eq!(Filter::HighestSiblingDegree.apply(&graph, all.clone()), all);
    // After (x,a)_f, with P = {x} and S = {y}, the siblings are the two
    // eliminations of the parallel path through b.
    graph.front_eliminate(x, a).unwrap();
    let kept = Filter::HighestSiblingDegree.apply(&graph, graph.edge_candidates());
    assert_eq!(kept, vec![edge(x, b, Front), edge(b, y, Back)]);
    // After (c,z)_b nothing shares both a predecessor and a successor with
    // it (maximum sibling degree 0): keep everything.
    graph.back_eliminate(c, z).unwrap();
    let all = graph.edge_candidates();
    assert!(!all.is_empty());
    assert_eq!(Filter::HighestSiblingDegree.apply(&graph, all.clone()), all);
}

#[test]
fn highest_sibling_degree_on_vertices() {
    let (lcg, [_, a, b, c, _, _]) = siblings();
    let mut graph = ElimGraph::new(&lcg).unwrap();
    graph.eliminate_vertex(a).unwrap();
    let all = graph.vertex_candidates();
    assert_eq!(all, vec![LcgTarget::Vertex(b), LcgTarget::Vertex(c)]);
    assert_eq!(
        Filter::HighestSiblingDegree.apply(&graph, all),
        vec![LcgTarget::Vertex(b)]
    );
    let (lcg, [_, _, _, c, _, _]) = siblings();
    let mut graph = ElimGraph::new(&lcg).unwrap();
    graph.eliminate_vertex(c).unwrap();
    let all = graph.vertex_candidates();
    assert_eq!(Filter::HighestSiblingDegree.apply(&graph, all.clone()), all);
}

#[test]
fn highest_sibling_degree_follows_the_seed() {
    // The seed graph after (3,t)_f: only (4,7)_b is a sibling that can be
    // eliminated, since (3,4)_f would enter the dependent 4.
    let mut lcg = Lcg::new();
    let v1 = lcg.add_vertex(Independent);
    let v2 = lcg.add_vertex(Independent);
    let v3 = lcg.add_vertex(Dependent);
    let v4 = lcg.add_vertex(Dependent);
    let t = lcg.add_vertex(Intermediate);
    let v6 = lcg.add_vertex(Dependent);
    let v7 = lcg.add_vertex(Dependent);
    for (s, d) in [
        (v1, v3),
        (v2, v3),
        (v1, v4),
        (v3, v4),
        (v3, t),
        (v2, t),
        (t, v7),
        (v4, v7),
        (v4, v6),
    ] {
        lcg.add_edge(s, d, var(0)).unwrap();
    }
    let mut graph = ElimGraph::new(&lcg).unwrap();
    let first = Filter::LowestMarkowitz.apply(&graph, graph.edge_candidates());
    assert_eq!(first, vec![edge(v2, t, Front), edge(v3, t, Front)]);
    assert_eq!(
        Mode::Reverse.choose(&graph, &first),
        Some(edge(v3, t, Front))
    );
    graph.front_eliminate(v3, t).unwrap();
    let kept = Filter::HighestSiblingDegree.apply(&graph, graph.edge_candidates());
    assert_eq!(kept, vec![edge(v4, v7, Back)]);
}

fn face(graph: &DualGraph, first: u32, second: u32) -> FaceTarget {
    *graph
        .face_candidates()
        .iter()
        .find(|f| f.first == DualVertexId(first) && f.second == DualVertexId(second))
        .expect("face exists")
}

#[test]
fn face_filters_on_the_chain() {
    let mut lcg = Lcg::new();
    let x = lcg.add_vertex(Independent);
    let a = lcg.add_vertex(Intermediate);
    let b = lcg.add_vertex(Intermediate);
    let y = lcg.add_vertex(Dependent);
    lcg.add_edge(x, a, var(0)).unwrap();
    lcg.add_edge(a, b, var(1)).unwrap();
    lcg.add_edge(b, y, var(2)).unwrap();
    lcg.add_edge(a, y, var(3)).unwrap();
    let graph = DualGraph::new(&lcg).unwrap();
    // Dual vertices by edge order: d0 (x,a), d1 (a,b), d2 (a,y), d3 (b,y).
    assert_eq!(
        graph.dual_vertices(),
        vec![
            (DualVertexId(0), x, a),
            (DualVertexId(1), a, b),
            (DualVertexId(2), a, y),
            (DualVertexId(3), b, y),
        ]
    );
    let all = graph.face_candidates();
    let (xab, xay, aby) = (face(&graph, 0, 1), face(&graph, 0, 2), face(&graph, 1, 3));
    assert_eq!(all, vec![xab, xay, aby]);
    // Markowitz |P(d)|*|S(e)| with markers: 1 for all three.
    assert_eq!(Filter::LowestMarkowitz.apply(&graph, all.clone()), all);
    // Relative: the marker-to-marker face (x,a,y) is discounted.
    assert_eq!(
        Filter::LowestRelativeMarkowitz.apply(&graph, all.clone()),
        vec![xay]
    );
    // (a,b,y) is absorbed by (a,y), which has the same neighbourhoods.
    assert_eq!(Filter::LowestFillIn.apply(&graph, all.clone()), vec![aby]);
    assert_eq!(Mode::Forward.choose(&graph, &all), Some(xab));
    assert_eq!(Mode::Reverse.choose(&graph, &all), Some(aby));
}

#[test]
fn highest_sibling_degree_on_faces() {
    let (lcg, [x, a, b, _, y, _]) = siblings();
    let mut graph = DualGraph::new(&lcg).unwrap();
    let all = graph.face_candidates();
    assert_eq!(Filter::HighestSiblingDegree.apply(&graph, all.clone()), all);
    let through_a = *all.iter().find(|f| f.middle == a).unwrap();
    graph.eliminate(&through_a).unwrap();
    let kept = Filter::HighestSiblingDegree.apply(&graph, graph.face_candidates());
    assert_eq!(kept.len(), 1);
    assert_eq!((kept[0].source, kept[0].middle, kept[0].target), (x, b, y));
}

#[test]
fn chains_have_readable_names() {
    assert_eq!(Chain::seed().to_string(), "HS -> LM -> reverse");
    assert_eq!(Chain::forward().to_string(), "forward");
}
