//! Structured control flow as a tree of regions.
//!
//! Algorithm 1 of seed "control flow reversal" sorts the vertices of a
//! structured CFG so that loop bodies come before the loop's successor and
//! both arms of a branch before its `EndBranch`. This module computes the
//! same order as a tree: a sequence of basic blocks, branches (each arm a
//! sequence, closed by the matching `EndBranch`) and loops (a body
//! sequence closed by the `EndLoop` that leads back to the loop vertex).
//! Reversal is then a recursive walk of the tree. A graph that does not
//! have this shape (gotos into the middle of a structure, early exits) is
//! reported as unstructured and reversed by block enumeration instead.

use rustc_hash::FxHashSet;
use xaif_model::{CfgGraph, CfgId, EdgeId, Program, VertexId, VertexKind};

/// A region of a structured CFG.
#[derive(Clone, Debug, PartialEq)]
pub enum Region {
    /// A basic block.
    Block(VertexId),
    /// A `Label` or `Goto` with one successor: passes control on.
    Pass(VertexId),
    /// A `Branch` or `If` with its arms and its `EndBranch`.
    Branch {
        /// The branching vertex.
        vertex: VertexId,
        /// The arms in edge order: the edge leaving the branch and the
        /// arm's regions.
        arms: Vec<(EdgeId, Vec<Region>)>,
        /// The `EndBranch`.
        end: VertexId,
    },
    /// A `ForLoop`, `PreLoop` or `PostLoop` with its body and `EndLoop`.
    Loop {
        /// The loop vertex.
        vertex: VertexId,
        /// The edge into the body (`condition_value` 1).
        body_edge: EdgeId,
        /// The body.
        body: Vec<Region>,
        /// The `EndLoop`.
        end: VertexId,
        /// The edge leaving the loop.
        exit_edge: EdgeId,
    },
}

struct Parser<'a> {
    p: &'a Program,
    g: CfgGraph,
    visited: FxHashSet<VertexId>,
}

/// The region tree of a CFG from its `Entry` to its `Exit`, or `None` when
/// the graph is not structured.
pub fn parse(p: &Program, cfg: CfgId) -> Option<Vec<Region>> {
    let g = CfgGraph::new(p, cfg);
    let entry = g.entry?;
    let exit = g.exit?;
    let mut parser = Parser {
        p,
        g,
        visited: FxHashSet::default(),
    };
    parser.visited.insert(entry);
    let start = parser.single(entry)?;
    let (regions, stop) = parser.sequence(start)?;
    if stop != exit {
        return None;
    }
    Some(regions)
}

impl Parser<'_> {
    fn kind(&self, v: VertexId) -> &VertexKind {
        &self.p.vertices[v].kind
    }

    fn single(&self, v: VertexId) -> Option<VertexId> {
        match self.g.successors(v) {
            [(_, t)] => Some(*t),
            _ => None,
        }
    }

    /// Regions from `v` up to the first `Exit`, `EndBranch` or `EndLoop`,
    /// which is returned.
    fn sequence(&mut self, mut v: VertexId) -> Option<(Vec<Region>, VertexId)> {
        let mut out = Vec::new();
        loop {
            match self.kind(v) {
                VertexKind::Exit | VertexKind::EndBranch | VertexKind::EndLoop => {
                    return Some((out, v))
                }
                VertexKind::Entry => return None,
                _ => {}
            }
            if !self.visited.insert(v) {
                return None;
            }
            match self.kind(v) {
                VertexKind::BasicBlock(_) => {
                    out.push(Region::Block(v));
                    v = self.single(v)?;
                }
                VertexKind::Label | VertexKind::Goto => {
                    out.push(Region::Pass(v));
                    v = self.single(v)?;
                }
                VertexKind::Branch(_) | VertexKind::If(_) => {
                    let edges: Vec<(EdgeId, VertexId)> = self.g.successors(v).to_vec();
                    if edges.is_empty() {
                        return None;
                    }
                    let mut arms = Vec::new();
                    let mut end = None;
                    for (e, t) in edges {
                        let (arm, stop) = self.sequence(t)?;
                        if !matches!(self.kind(stop), VertexKind::EndBranch)
                            || end.is_some_and(|x| x != stop)
                        {
                            return None;
                        }
                        end = Some(stop);
                        arms.push((e, arm));
                    }
                    let end = end?;
                    if !self.visited.insert(end) || self.g.predecessors(end).len() != arms.len() {
                        return None;
                    }
                    out.push(Region::Branch {
                        vertex: v,
                        arms,
                        end,
                    });
                    v = self.single(end)?;
                }
                VertexKind::ForLoop { .. } | VertexKind::PreLoop(_) | VertexKind::PostLoop(_) => {
                    let edges = self.g.successors(v).to_vec();
                    let [a, b] = edges.as_slice() else {
                        return None;
                    };
                    let is_body = |e: EdgeId| self.p.edges[e].condition_value() == Some(1);
                    let ((body_edge, body_start), (exit_edge, exit)) =
                        match (is_body(a.0), is_body(b.0)) {
                            (true, false) => (*a, *b),
                            (false, true) => (*b, *a),
                            _ => return None,
                        };
                    let (body, stop) = self.sequence(body_start)?;
                    if !matches!(self.kind(stop), VertexKind::EndLoop)
                        || self.single(stop) != Some(v)
                    {
                        return None;
                    }
                    if !self.visited.insert(stop) {
                        return None;
                    }
                    // The loop vertex is entered from before the loop and
                    // from its EndLoop only.
                    if self.g.predecessors(v).len() != 2 {
                        return None;
                    }
                    out.push(Region::Loop {
                        vertex: v,
                        body_edge,
                        body,
                        end: stop,
                        exit_edge,
                    });
                    v = exit;
                }
                _ => return None,
            }
        }
    }
}
