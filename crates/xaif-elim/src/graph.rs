//! The input graph: a linearized computational graph (LCG) as the caller
//! builds it from linearized statements.
//!
//! The graph is deliberately dumb: it stores vertices with their role and
//! edges with their local partial derivative, and checks only what can be
//! checked cheaply while building (unknown vertices, self loops, edges into
//! independents). Acyclicity is checked once, by [`Lcg::topological_order`],
//! when an elimination starts; that is the gate after which the elimination
//! code may rely on a topological order.

use std::fmt;

use thiserror::Error;

/// Handle of a vertex of an [`Lcg`]; also names the same vertex in every
/// graph derived from it (working graphs, remainder graphs, Jacobians).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VertexId(pub u32);

impl VertexId {
    /// The position of the vertex in its graph's vertex list.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for VertexId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Opaque caller id of a variable edge label, typically the index of the
/// `lin_N` temporary holding the partial derivative at run time.
///
/// The elimination never looks inside: it only multiplies and adds such
/// values symbolically, so the caller can map them back to symbols.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VarId(pub u32);

impl fmt::Display for VarId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

/// Role of a vertex in the local vector function the graph represents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VertexKind {
    /// An input of the block; it never has in-edges.
    Independent,
    /// A value that is neither an input nor an output; elimination removes it.
    Intermediate,
    /// An output of the block. It may still have out-edges: the caller marks
    /// as dependent every value that may be read after the block, which
    /// includes values read again inside it (for example any vertex with
    /// more than one out-edge when better analyses are missing).
    Dependent,
}

/// Local partial derivative on an input edge.
///
/// Unit and minus-one factors are kept apart from other constants because
/// multiplying by them is free and the code generator propagates them with
/// dedicated primitives (`SetDeriv`/`IncDeriv`, `SetNegDeriv`/`DecDeriv`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Label {
    /// The factor `+1` (for example a copy or an addition operand).
    Unit,
    /// The factor `-1` (for example the subtrahend of a subtraction).
    MinusOne,
    /// A constant factor known at transformation time. `1.0` and `-1.0`
    /// are treated exactly like [`Label::Unit`] and [`Label::MinusOne`].
    Constant(f64),
    /// A factor known only at run time, held in the caller's variable.
    Variable(VarId),
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Unit => write!(f, "1"),
            Label::MinusOne => write!(f, "-1"),
            Label::Constant(value) => write!(f, "{value}"),
            Label::Variable(var) => write!(f, "{var}"),
        }
    }
}

/// Handle of an edge of an [`Lcg`], in insertion order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EdgeId(pub u32);

/// One edge of an [`Lcg`]: `target` depends on `source` with the partial
/// derivative `label`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Edge {
    /// The argument vertex.
    pub source: VertexId,
    /// The result vertex.
    pub target: VertexId,
    /// The local partial derivative of `target` with respect to `source`.
    pub label: Label,
}

/// Everything that can be wrong with a graph handed to this crate.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum GraphError {
    /// A handle that does not belong to the graph.
    #[error("vertex {0} does not exist")]
    UnknownVertex(VertexId),
    /// An edge from a vertex to itself; linearized graphs are acyclic.
    #[error("self loop at vertex {0}")]
    SelfLoop(VertexId),
    /// Independents are inputs and cannot depend on anything.
    #[error("edge {from} -> {to} enters an independent vertex")]
    EdgeIntoIndependent {
        /// Source of the rejected edge.
        from: VertexId,
        /// The independent target.
        to: VertexId,
    },
    /// A vertex with in-edges cannot become an input.
    #[error("vertex {0} has in-edges and cannot be independent")]
    IndependentWithInEdges(VertexId),
    /// Constants must be finite so that folding them stays meaningful.
    #[error("edge {from} -> {to} has the non-finite constant {value}")]
    NonFiniteConstant {
        /// Source of the rejected edge.
        from: VertexId,
        /// Target of the rejected edge.
        to: VertexId,
        /// The offending value.
        value: f64,
    },
    /// The graph has a directed cycle through this vertex.
    #[error("the graph has a cycle through vertex {0}")]
    Cycle(VertexId),
}

/// A linearized computational graph as built by the caller.
///
/// Parallel edges (same source and target) are allowed because they arise
/// naturally, for example from `x*x`; eliminations merge them first (see
/// [`crate::ElimGraph::new`]).
#[derive(Clone, Debug, Default)]
pub struct Lcg {
    kinds: Vec<VertexKind>,
    names: Vec<Option<String>>,
    edges: Vec<Edge>,
}

impl Lcg {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a vertex without a display name.
    pub fn add_vertex(&mut self, kind: VertexKind) -> VertexId {
        self.push_vertex(kind, None)
    }

    /// Adds a vertex with a name used only for display (Graphviz output,
    /// step listings); the name has no meaning to the elimination.
    pub fn add_named_vertex(&mut self, kind: VertexKind, name: impl Into<String>) -> VertexId {
        self.push_vertex(kind, Some(name.into()))
    }

    fn push_vertex(&mut self, kind: VertexKind, name: Option<String>) -> VertexId {
        let id = VertexId(self.kinds.len() as u32);
        self.kinds.push(kind);
        self.names.push(name);
        id
    }

    /// Changes the role of a vertex, typically to mark an intermediate as
    /// dependent once the caller knows it is read later.
    pub fn set_kind(&mut self, vertex: VertexId, kind: VertexKind) -> Result<(), GraphError> {
        self.check_vertex(vertex)?;
        if kind == VertexKind::Independent && self.edges.iter().any(|e| e.target == vertex) {
            return Err(GraphError::IndependentWithInEdges(vertex));
        }
        self.kinds[vertex.index()] = kind;
        Ok(())
    }

    /// Adds the edge `source -> target` labelled with the local partial
    /// derivative of `target` with respect to `source`.
    pub fn add_edge(
        &mut self,
        source: VertexId,
        target: VertexId,
        label: Label,
    ) -> Result<EdgeId, GraphError> {
        self.check_vertex(source)?;
        self.check_vertex(target)?;
        if source == target {
            return Err(GraphError::SelfLoop(source));
        }
        if self.kinds[target.index()] == VertexKind::Independent {
            return Err(GraphError::EdgeIntoIndependent {
                from: source,
                to: target,
            });
        }
        if let Label::Constant(value) = label {
            if !value.is_finite() {
                return Err(GraphError::NonFiniteConstant {
                    from: source,
                    to: target,
                    value,
                });
            }
        }
        let id = EdgeId(self.edges.len() as u32);
        self.edges.push(Edge {
            source,
            target,
            label,
        });
        Ok(id)
    }

    fn check_vertex(&self, vertex: VertexId) -> Result<(), GraphError> {
        if vertex.index() < self.kinds.len() {
            Ok(())
        } else {
            Err(GraphError::UnknownVertex(vertex))
        }
    }

    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.kinds.len()
    }

    /// All vertex handles in insertion order.
    pub fn vertices(&self) -> impl Iterator<Item = VertexId> + '_ {
        (0..self.kinds.len() as u32).map(VertexId)
    }

    /// The role of a vertex, `None` for a foreign handle.
    pub fn kind(&self, vertex: VertexId) -> Option<VertexKind> {
        self.kinds.get(vertex.index()).copied()
    }

    /// The display name of a vertex, if it has one.
    pub fn name(&self, vertex: VertexId) -> Option<&str> {
        self.names.get(vertex.index())?.as_deref()
    }

    /// All edges in insertion order, parallel edges included.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// The vertices in a topological order, or [`GraphError::Cycle`].
    ///
    /// The order is deterministic: among the vertices that are ready, the
    /// one added first comes first, so a graph built in evaluation order
    /// keeps its insertion order. Forward and reverse mode rank candidate
    /// eliminations by this single order.
    pub fn topological_order(&self) -> Result<Vec<VertexId>, GraphError> {
        let pairs: Vec<(usize, usize)> = self
            .edges
            .iter()
            .map(|e| (e.source.index(), e.target.index()))
            .collect();
        topological_order(self.kinds.len(), &pairs)
            .map(|order| order.into_iter().map(|v| VertexId(v as u32)).collect())
            .map_err(|v| GraphError::Cycle(VertexId(v as u32)))
    }

    pub(crate) fn kinds(&self) -> &[VertexKind] {
        &self.kinds
    }

    pub(crate) fn names(&self) -> &[Option<String>] {
        &self.names
    }
}

/// A line-oriented text form of an [`Lcg`], for test fixtures, benchmark
/// inputs and bug reports: one `x`, `z` or `y` line per vertex
/// (independent, intermediate, dependent) in order, then one line per edge
/// `source target label` with the label `1`, `-1`, `c<value>` or `v<id>`.
/// Names are not kept.
impl Lcg {
    /// The graph in the text form.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        for kind in &self.kinds {
            s.push(match kind {
                VertexKind::Independent => 'x',
                VertexKind::Intermediate => 'z',
                VertexKind::Dependent => 'y',
            });
            s.push('\n');
        }
        for e in &self.edges {
            let label = match e.label {
                Label::Unit => "1".to_string(),
                Label::MinusOne => "-1".to_string(),
                Label::Constant(c) => format!("c{c:?}"),
                Label::Variable(v) => format!("v{}", v.0),
            };
            let _ = writeln!(s, "{} {} {label}", e.source, e.target);
        }
        s
    }

    /// Reads the text form; `None` for anything malformed (unknown line,
    /// bad number, an edge the graph rejects).
    pub fn from_text(text: &str) -> Option<Lcg> {
        let mut g = Lcg::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            match line {
                "x" => {
                    g.add_vertex(VertexKind::Independent);
                }
                "z" => {
                    g.add_vertex(VertexKind::Intermediate);
                }
                "y" => {
                    g.add_vertex(VertexKind::Dependent);
                }
                _ => {
                    let mut parts = line.split_whitespace();
                    let source = VertexId(parts.next()?.parse().ok()?);
                    let target = VertexId(parts.next()?.parse().ok()?);
                    let label = match parts.next()? {
                        "1" => Label::Unit,
                        "-1" => Label::MinusOne,
                        l if l.starts_with('c') => Label::Constant(l[1..].parse().ok()?),
                        l if l.starts_with('v') => Label::Variable(VarId(l[1..].parse().ok()?)),
                        _ => return None,
                    };
                    if parts.next().is_some() {
                        return None;
                    }
                    g.add_edge(source, target, label).ok()?;
                }
            }
        }
        Some(g)
    }
}

/// Kahn's algorithm with the smallest ready index first. On a cycle it
/// returns one vertex on (or behind) a cycle.
pub(crate) fn topological_order(
    vertex_count: usize,
    edges: &[(usize, usize)],
) -> Result<Vec<usize>, usize> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    let mut in_degree = vec![0usize; vertex_count];
    let mut successors = vec![Vec::new(); vertex_count];
    for &(source, target) in edges {
        in_degree[target] += 1;
        successors[source].push(target);
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..vertex_count)
        .filter(|&v| in_degree[v] == 0)
        .map(Reverse)
        .collect();
    let mut order = Vec::with_capacity(vertex_count);
    while let Some(Reverse(vertex)) = ready.pop() {
        order.push(vertex);
        for &next in &successors[vertex] {
            in_degree[next] -= 1;
            if in_degree[next] == 0 {
                ready.push(Reverse(next));
            }
        }
    }
    if order.len() == vertex_count {
        Ok(order)
    } else {
        Err((0..vertex_count).find(|&v| in_degree[v] > 0).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_edges() {
        let mut g = Lcg::new();
        let x = g.add_vertex(VertexKind::Independent);
        let y = g.add_vertex(VertexKind::Dependent);
        assert_eq!(
            g.add_edge(y, x, Label::Unit),
            Err(GraphError::EdgeIntoIndependent { from: y, to: x })
        );
        assert_eq!(g.add_edge(y, y, Label::Unit), Err(GraphError::SelfLoop(y)));
        assert_eq!(
            g.add_edge(x, VertexId(7), Label::Unit),
            Err(GraphError::UnknownVertex(VertexId(7)))
        );
        assert!(matches!(
            g.add_edge(x, y, Label::Constant(f64::NAN)),
            Err(GraphError::NonFiniteConstant { .. })
        ));
        g.add_edge(x, y, Label::Unit).unwrap();
        assert_eq!(
            g.set_kind(y, VertexKind::Independent),
            Err(GraphError::IndependentWithInEdges(y))
        );
    }

    #[test]
    fn detects_cycles_and_orders_stably() {
        let mut g = Lcg::new();
        let x = g.add_vertex(VertexKind::Independent);
        let a = g.add_vertex(VertexKind::Intermediate);
        let b = g.add_vertex(VertexKind::Intermediate);
        let y = g.add_vertex(VertexKind::Dependent);
        g.add_edge(x, b, Label::Unit).unwrap();
        g.add_edge(b, a, Label::Unit).unwrap();
        g.add_edge(a, y, Label::Unit).unwrap();
        assert_eq!(g.topological_order().unwrap(), vec![x, b, a, y]);
        g.add_edge(a, b, Label::Unit).unwrap();
        assert!(matches!(g.topological_order(), Err(GraphError::Cycle(_))));
    }
}
