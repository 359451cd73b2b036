//! Elimination of linearized graphs too large for the heuristic selection.
//!
//! [`xaif_elim::select`] runs several heuristic chains, and each chain
//! chooses every elimination step among all candidates of the current
//! graph: its time grows with the square of the graph's size, and with the
//! cube around a vertex of high degree (`x + x + … + x`). That is what the
//! reference engine does too, and it is cheap on the graphs of real basic
//! blocks (the largest in the OpenAD regression corpus has 149 edges), but a
//! generated statement with 10⁴ nested operations would take minutes.
//!
//! A graph with more edges than the limit ([`HEURISTIC_EDGES`] by default)
//! is therefore eliminated without search: every intermediate vertex, in
//! reverse topological order (reverse mode, one of the chains the selection
//! tries anyway). Each vertex is eliminated when everything after it is
//! already gone, so its successors are dependents only: for the graph of one
//! statement every elimination costs its original in-degree, and the whole
//! elimination is linear in the size of the graph. The result is a complete
//! elimination with a bipartite remainder, correct like every other; only
//! the operation count may be higher than what the search would find.
//! Smaller graphs go to [`xaif_elim::optimize`].

use std::cmp::Reverse;

use xaif_elim::{
    Config, ElimError, ElimGraph, Elimination, Lcg, Memo, PropagationMode, Report, VertexKind,
};

/// Default limit on the edges of a graph that the heuristic selection
/// eliminates; larger graphs are eliminated in reverse mode in linear time.
pub const HEURISTIC_EDGES: usize = 500;

/// Eliminates `lcg` for code that propagates in `mode`: with
/// [`xaif_elim::optimize_against`] (the reference's selection and the
/// searches beyond it, bounded by the reference's selection on
/// `reference`, the reference engine's graph of the same code when it
/// differs; with its report) when it has at most `max_heuristic_edges`
/// edges, by reverse vertex elimination (no report) otherwise.
pub fn eliminate(
    lcg: &Lcg,
    reference: Option<&Lcg>,
    memo: &Memo,
    mode: PropagationMode,
    max_heuristic_edges: usize,
) -> Result<(Elimination, Option<Report>), ElimError> {
    let config = memo.config();
    if lcg.edges().len() <= max_heuristic_edges {
        let reference = reference.filter(|r| r.edges().len() <= max_heuristic_edges);
        let optimized = memo.optimize_against(lcg, reference, mode)?;
        return Ok((optimized.selection.elimination, Some(optimized.report)));
    }
    Ok((reverse_vertex_elimination(lcg, config)?, None))
}

/// Eliminates every intermediate vertex, the last in topological order
/// first.
pub fn reverse_vertex_elimination(lcg: &Lcg, config: &Config) -> Result<Elimination, ElimError> {
    let mut graph = ElimGraph::new(lcg)?;
    let mut order: Vec<_> = lcg
        .vertices()
        .filter(|&v| graph.kind(v) == Some(VertexKind::Intermediate))
        .collect();
    order.sort_by_key(|&v| Reverse(graph.rank(v)));
    for v in order {
        // Building the graph and earlier eliminations remove intermediates
        // left without in- or out-edges.
        if graph.contains_vertex(v) {
            graph.eliminate_vertex(v)?;
        }
    }
    Ok(graph.finish(config.triviality))
}

#[cfg(test)]
mod tests {
    use super::*;
    use xaif_elim::{Label, VarId};

    /// y = f_n(…f_1(x)): a chain of `n` intermediates.
    fn chain(n: usize) -> Lcg {
        let mut g = Lcg::new();
        let mut prev = g.add_vertex(VertexKind::Independent);
        for k in 0..n {
            let v = g.add_vertex(VertexKind::Intermediate);
            g.add_edge(prev, v, Label::Variable(VarId(k as u32)))
                .unwrap();
            prev = v;
        }
        let y = g.add_vertex(VertexKind::Dependent);
        g.add_edge(prev, y, Label::Variable(VarId(n as u32)))
            .unwrap();
        g
    }

    #[test]
    fn a_long_chain_becomes_one_edge_with_one_product_per_factor() {
        let g = chain(2000);
        let (e, report) = eliminate(
            &g,
            None,
            &Memo::new(&Config::default()),
            PropagationMode::Tangent,
            HEURISTIC_EDGES,
        )
        .unwrap();
        assert!(report.is_none());
        assert_eq!(e.remainder.edges.len(), 1);
        assert_eq!(e.ops.multiplications, 2000);
        // Same Jacobian as the heuristic selection on a small chain.
        let small = chain(12);
        let fast = reverse_vertex_elimination(&small, &Config::default()).unwrap();
        let best = xaif_elim::select(&small, &Config::default())
            .unwrap()
            .elimination;
        assert_eq!(fast.remainder.edges.len(), best.remainder.edges.len());
        assert_eq!(fast.ops.multiplications, best.ops.multiplications);
    }

    #[test]
    fn small_graphs_keep_the_heuristic_selection() {
        let g = chain(5);
        let mode = PropagationMode::Adjoint;
        let (e, report) = eliminate(
            &g,
            None,
            &Memo::new(&Config::default()),
            mode,
            HEURISTIC_EDGES,
        )
        .unwrap();
        let best = xaif_elim::optimize(&g, &Config::default(), mode).unwrap();
        assert_eq!(e, best.selection.elimination);
        assert_eq!(report.map(|r| r.found_by), Some(best.report.found_by));
    }
}
