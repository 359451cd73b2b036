//! Random graphs for the property tests of the elimination.

use std::ops::RangeInclusive;

use proptest::prelude::*;
use xaif_elim::{Label, Lcg, VarId, VertexId, VertexKind};

/// Edge labels: mostly unit and variable (among `vars` variables), some
/// `-1` and constants.
pub fn label(vars: u32) -> impl Strategy<Value = Label> {
    prop_oneof![
        3 => Just(Label::Unit),
        1 => Just(Label::MinusOne),
        1 => prop::sample::select(vec![2.0, -0.5]).prop_map(Label::Constant),
        5 => (0..vars).prop_map(|v| Label::Variable(VarId(v))),
    ]
}

/// Random DAGs with named vertices in rank order: the first are
/// independents, the last a dependent, the others intermediates or (three
/// in ten) dependents; up to `max_edges` edges.
pub fn graph(
    independents: RangeInclusive<usize>,
    others: RangeInclusive<usize>,
    vars: u32,
    max_edges: usize,
) -> impl Strategy<Value = Lcg> {
    (independents, others)
        .prop_flat_map(move |(x, others)| {
            let n = x + others;
            (
                Just(x),
                prop::collection::vec(prop::bool::weighted(0.3), others),
                prop::collection::vec((0..n, 0..n, label(vars)), 1..=max_edges),
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
                g.add_named_vertex(kind, format!("a{r}"));
            }
            for (a, b, l) in edges {
                let (lo, hi) = (a.min(b), a.max(b));
                if lo != hi && hi >= x {
                    g.add_edge(VertexId(lo as u32), VertexId(hi as u32), l)
                        .unwrap();
                }
            }
            g
        })
}
