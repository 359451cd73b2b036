//! Independent parts of a graph, searched one at a time.
//!
//! A basic block often computes several results that share only inputs:
//! three statements updating three fields from the same old values give a
//! graph of three parts joined by nothing but independents. Eliminations
//! in one part never create or change an edge of another (a new edge runs
//! from a predecessor to a successor of what is eliminated, and both lie
//! in its part or are independents), and the tangent cost is a sum over
//! targets, so the cost of a sequence is the sum of its restrictions to
//! the parts. The exact searches therefore run on each part alone, which
//! is exponentially cheaper than on the whole and proves the whole optimal
//! when every part is. In adjoint mode the parts also share the count of
//! distinct taped factors; the sum is exact when no run-time label occurs
//! in two parts, and the tape limit is checked on the combination.

use crate::graph::{Label, Lcg, VertexId, VertexKind};

/// One part: its own graph (the part's vertices and the independents it
/// reads, in the original order) and where each of its vertices comes
/// from.
#[derive(Clone, Debug)]
pub(crate) struct Part {
    pub lcg: Lcg,
    /// Vertex of the part's graph to vertex of the whole graph.
    pub to_whole: Vec<VertexId>,
}

fn find(parent: &mut [u32], mut v: u32) -> u32 {
    while parent[v as usize] != v {
        let up = parent[parent[v as usize] as usize];
        parent[v as usize] = up;
        v = up;
    }
    v
}

/// The parts of `lcg` (components of its edges once the independents are
/// taken out) in the order of their first edge, or `None` when there is
/// only one. Edges with an end that is not `present` (an intermediate the
/// graph as built removed, since it reaches no dependent) are left out.
pub(crate) fn parts(lcg: &Lcg, present: impl Fn(VertexId) -> bool) -> Option<Vec<Part>> {
    let n = lcg.vertex_count();
    let kinds = lcg.kinds();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    let kept: Vec<bool> = lcg
        .edges()
        .iter()
        .map(|e| present(e.source) && present(e.target))
        .collect();
    for e in lcg.edges().iter().zip(&kept).filter(|k| *k.1).map(|k| k.0) {
        if kinds[e.source.index()] != VertexKind::Independent {
            let (a, b) = (find(&mut parent, e.source.0), find(&mut parent, e.target.0));
            if a != b {
                parent[a.max(b) as usize] = a.min(b);
            }
        }
    }
    // Parts by the root of each edge's target, in order of first edge.
    let mut index: Vec<u32> = vec![u32::MAX; n];
    let mut roots = 0u32;
    let mut part_of_edge = Vec::with_capacity(lcg.edges().len());
    for (e, &keep) in lcg.edges().iter().zip(&kept) {
        if !keep {
            part_of_edge.push(u32::MAX);
            continue;
        }
        let r = find(&mut parent, e.target.0) as usize;
        if index[r] == u32::MAX {
            index[r] = roots;
            roots += 1;
        }
        part_of_edge.push(index[r]);
    }
    if roots < 2 {
        return None;
    }
    let mut parts = Vec::with_capacity(roots as usize);
    for p in 0..roots {
        // The part's vertices in the original order.
        let mut used = vec![false; n];
        for (e, &q) in lcg.edges().iter().zip(&part_of_edge) {
            if q == p {
                used[e.source.index()] = true;
                used[e.target.index()] = true;
            }
        }
        let mut sub = Lcg::new();
        let mut to_whole = Vec::new();
        let mut to_sub = vec![VertexId(u32::MAX); n];
        for v in 0..n {
            if used[v] {
                to_sub[v] = sub.add_vertex(kinds[v]);
                to_whole.push(VertexId(v as u32));
            }
        }
        for (e, &q) in lcg.edges().iter().zip(&part_of_edge) {
            if q == p {
                // Every edge of the whole graph was accepted, so it is
                // accepted here.
                let _ = sub.add_edge(to_sub[e.source.index()], to_sub[e.target.index()], e.label);
            }
        }
        parts.push(Part { lcg: sub, to_whole });
    }
    Some(parts)
}

/// Intermediates and dependents with out-edges of a part's graph (the
/// inner vertices of the graph as built, before dead vertices go).
pub(crate) fn inner_vertices(lcg: &Lcg) -> usize {
    let mut has_out = vec![false; lcg.vertex_count()];
    for e in lcg.edges() {
        has_out[e.source.index()] = true;
    }
    lcg.kinds()
        .iter()
        .zip(&has_out)
        .filter(|(k, out)| match k {
            VertexKind::Intermediate => true,
            VertexKind::Dependent => **out,
            VertexKind::Independent => false,
        })
        .count()
}

/// Whether some run-time label occurs in two parts (then the parts share
/// taped factors and adjoint costs are not a sum over them).
pub(crate) fn share_labels(parts: &[Part]) -> bool {
    let mut seen: Vec<(u32, usize)> = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        for e in p.lcg.edges() {
            if let Label::Variable(v) = e.label {
                seen.push((v.0, k));
            }
        }
    }
    seen.sort_unstable();
    seen.dedup();
    seen.windows(2).any(|w| w[0].0 == w[1].0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::VarId;

    #[test]
    fn parts_joined_only_by_independents_are_split() {
        // y1 = f(x0, x1), y2 = g(x1): two parts sharing x1.
        let mut g = Lcg::new();
        let x0 = g.add_vertex(VertexKind::Independent);
        let x1 = g.add_vertex(VertexKind::Independent);
        let a = g.add_vertex(VertexKind::Intermediate);
        let y1 = g.add_vertex(VertexKind::Dependent);
        let y2 = g.add_vertex(VertexKind::Dependent);
        g.add_edge(x0, a, Label::Variable(VarId(0))).unwrap();
        g.add_edge(x1, a, Label::Variable(VarId(1))).unwrap();
        g.add_edge(a, y1, Label::Unit).unwrap();
        g.add_edge(x1, y2, Label::Variable(VarId(2))).unwrap();
        let parts = parts(&g, |_| true).expect("two parts");
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].to_whole, vec![x0, x1, a, y1]);
        assert_eq!(parts[1].to_whole, vec![x1, y2]);
        assert_eq!(parts[0].lcg.edges().len(), 3);
        assert!(!share_labels(&parts));
        // A dependent with an out-edge joins its part to the next.
        g.add_edge(y1, y2, Label::Unit).unwrap();
        assert!(super::parts(&g, |_| true).is_none());
        // Without the vertex that joins them, two parts again.
        assert_eq!(super::parts(&g, |v| v != y1).map(|p| p.len()), Some(2));
    }
}
