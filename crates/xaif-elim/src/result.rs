//! What an elimination produces, and the bookkeeping that produces it.
//!
//! Both working graphs ([`crate::ElimGraph`], [`crate::DualGraph`]) share one
//! `Recorder`, so steps, accumulation expressions and operation counts are
//! built the same way whatever the elimination method: the counts are
//! incremented exactly where an expression node is created.

use std::collections::HashMap;
use std::fmt;

use thiserror::Error;

use crate::dual::DualVertexId;
use crate::graph::{GraphError, VertexId, VertexKind};
use crate::value::{
    add, multiply, negate_expr, AccId, EdgeValue, Expr, OpCounts, Operand, Term, Triviality, Val,
};

/// Direction of an edge elimination (control-flow-reversal seed, §3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// `(i,j)_f`: connect `i` to every successor of `j`.
    Front,
    /// `(j,k)_b`: connect every predecessor of `j` to `k`.
    Back,
}

/// One elimination on the (primal) linearized graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LcgTarget {
    /// Eliminate an intermediate vertex.
    Vertex(VertexId),
    /// Front or back eliminate the edge `source -> target`.
    Edge {
        /// Source of the eliminated edge.
        source: VertexId,
        /// Target of the eliminated edge.
        target: VertexId,
        /// Front or back.
        direction: Direction,
    },
}

/// One face elimination on the dual graph: the face from dual vertex
/// `first` (an edge `source -> middle`) to dual vertex `second` (an edge
/// `middle -> target`). The primal vertices are given for display and for
/// the heuristics; the dual ids identify the face.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FaceTarget {
    /// The dual vertex the face leaves.
    pub first: DualVertexId,
    /// The dual vertex the face enters.
    pub second: DualVertexId,
    /// Source of `first`.
    pub source: VertexId,
    /// Target of `first` and source of `second`.
    pub middle: VertexId,
    /// Target of `second`.
    pub target: VertexId,
}

/// One entry of the elimination protocol, in execution order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// Two parallel input edges were merged by an addition (absorption).
    MergeParallel {
        /// Common source.
        source: VertexId,
        /// Common target.
        target: VertexId,
    },
    /// A vertex elimination.
    Vertex(VertexId),
    /// An edge elimination.
    Edge {
        /// Source of the eliminated edge.
        source: VertexId,
        /// Target of the eliminated edge.
        target: VertexId,
        /// Front or back.
        direction: Direction,
    },
    /// A face elimination.
    Face(FaceTarget),
    /// A rerouting (`-R`): the edge `source -> target` was removed and its
    /// paths rerouted through `pivot` with a division by the pivot edge's
    /// value. Pre-routing uses the pivot edge `pivot -> target`, post-
    /// routing `source -> pivot`.
    Reroute {
        /// Source of the removed edge.
        source: VertexId,
        /// Target of the removed edge.
        target: VertexId,
        /// The vertex the paths now run through.
        pivot: VertexId,
        /// Pre-routing (true) or post-routing.
        pre: bool,
    },
    /// Two dual vertices with identical predecessor and successor sets were
    /// merged by an addition (absorption in the dual graph).
    MergeDual {
        /// The surviving dual vertex.
        kept: DualVertexId,
        /// The dual vertex folded into `kept`.
        removed: DualVertexId,
        /// Common primal source.
        source: VertexId,
        /// Common primal target.
        target: VertexId,
    },
}

impl From<LcgTarget> for Step {
    fn from(target: LcgTarget) -> Step {
        match target {
            LcgTarget::Vertex(vertex) => Step::Vertex(vertex),
            LcgTarget::Edge {
                source,
                target,
                direction,
            } => Step::Edge {
                source,
                target,
                direction,
            },
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::MergeParallel { source, target } => write!(f, "merge ({source},{target})"),
            Step::Vertex(vertex) => write!(f, "vertex {vertex}"),
            Step::Edge {
                source,
                target,
                direction: Direction::Front,
            } => write!(f, "({source},{target})_f"),
            Step::Edge {
                source,
                target,
                direction: Direction::Back,
            } => write!(f, "({source},{target})_b"),
            Step::Face(face) => write!(
                f,
                "face ({},{},{}) [{}->{}]",
                face.source, face.middle, face.target, face.first, face.second
            ),
            Step::MergeDual {
                kept,
                removed,
                source,
                target,
            } => write!(f, "merge dual {removed} into {kept} ({source},{target})"),
            Step::Reroute {
                source,
                target,
                pivot,
                pre,
            } => write!(
                f,
                "{}-route ({source},{target}) via {pivot}",
                if *pre { "pre" } else { "post" }
            ),
        }
    }
}

/// Errors of the elimination API; every caller mistake is one of these.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum ElimError {
    /// The input graph is malformed.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// The vertex does not exist or was already removed.
    #[error("vertex {0} is not in the working graph")]
    NoSuchVertex(VertexId),
    /// The edge does not exist (any more).
    #[error("edge {from} -> {to} is not in the working graph")]
    NoSuchEdge {
        /// Requested source.
        from: VertexId,
        /// Requested target.
        to: VertexId,
    },
    /// Only intermediate vertices can be eliminated.
    #[error("vertex {0} is not an intermediate vertex")]
    NotIntermediate(VertexId),
    /// Front elimination would lose the derivative of the dependent target.
    #[error("edge {from} -> {to} cannot be front eliminated: its target is not intermediate")]
    FrontIntoNonIntermediate {
        /// Source of the edge.
        from: VertexId,
        /// The dependent target.
        to: VertexId,
    },
    /// Back elimination needs predecessors of the source.
    #[error("edge {from} -> {to} cannot be back eliminated: its source is independent")]
    BackFromIndependent {
        /// The independent source.
        from: VertexId,
        /// Target of the edge.
        to: VertexId,
    },
    /// A rerouting whose edges or pivot do not qualify.
    #[error("edge {from} -> {to} cannot be rerouted about {pivot}")]
    NotReroutable {
        /// Source of the edge.
        from: VertexId,
        /// Target of the edge.
        to: VertexId,
        /// The pivot vertex.
        pivot: VertexId,
    },
    /// The dual graph has no such face.
    #[error("there is no face {first} -> {second} in the dual graph")]
    NoSuchFace {
        /// Requested first dual vertex.
        first: DualVertexId,
        /// Requested second dual vertex.
        second: DualVertexId,
    },
    /// A partially face-eliminated dual graph that is not the line graph of
    /// any linearized graph has no remainder graph.
    #[error("the dual graph does not correspond to a linearized graph")]
    NotRepresentable,
    /// Safety net against a non-terminating elimination loop.
    #[error("elimination did not finish within {0} steps")]
    StepLimit(usize),
    /// Selection needs at least one strategy.
    #[error("no elimination strategy configured")]
    NoStrategies,
}

/// One Jacobian accumulation expression `acc_k := expr`.
#[derive(Clone, Debug, PartialEq)]
pub struct Accumulation {
    /// The value defined, `acc_k`.
    pub id: AccId,
    /// Its right-hand side; operands are original labels, constants and
    /// accumulated values defined earlier in the list.
    pub expr: Expr,
}

/// A vertex of the remainder graph.
#[derive(Clone, Debug, PartialEq)]
pub struct RemainderVertex {
    /// The vertex handle of the input graph.
    pub id: VertexId,
    /// Its role in the input graph.
    pub kind: VertexKind,
    /// Its display name in the input graph.
    pub name: Option<String>,
    /// False for intermediates removed by the elimination.
    pub present: bool,
}

/// An edge of the remainder graph.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RemainderEdge {
    /// Source vertex.
    pub source: VertexId,
    /// Target vertex.
    pub target: VertexId,
    /// The factor to propagate along the edge.
    pub value: EdgeValue,
}

/// The graph left after elimination: what the code generator turns into
/// derivative propagation. It has no parallel edges; it is bipartite after a
/// complete edge or face elimination, and need not be otherwise.
#[derive(Clone, Debug, PartialEq)]
pub struct Remainder {
    /// Every vertex of the input graph, indexed by [`VertexId::index`].
    pub vertices: Vec<RemainderVertex>,
    /// The remaining edges, ordered by source and target in the
    /// topological order of the input.
    pub edges: Vec<RemainderEdge>,
}

/// The complete outcome of an elimination.
#[derive(Clone, Debug, PartialEq)]
pub struct Elimination {
    /// The protocol, in execution order.
    pub steps: Vec<Step>,
    /// The accumulation expressions in evaluation order; entry `k` defines
    /// `acc_k`.
    pub accumulations: Vec<Accumulation>,
    /// The remainder graph.
    pub remainder: Remainder,
    /// Operations in `accumulations`, counted as they were created.
    pub ops: OpCounts,
    /// Non-trivial edges of `remainder` under `triviality`.
    pub nontrivial_edges: usize,
    /// The triviality the count above uses.
    pub triviality: Triviality,
}

impl Elimination {
    /// How often each accumulated value is read: by later expressions plus
    /// by remainder edges. A code generator can inline values read once.
    pub fn acc_use_counts(&self) -> Vec<usize> {
        let mut uses = vec![0; self.accumulations.len()];
        for accumulation in &self.accumulations {
            accumulation.expr.for_each_operand(&mut |operand| {
                if let Operand::Acc(acc) = operand {
                    if let Some(count) = uses.get_mut(acc.index()) {
                        *count += 1;
                    }
                }
            });
        }
        for edge in &self.remainder.edges {
            if let EdgeValue::Acc(acc) = edge.value {
                if let Some(count) = uses.get_mut(acc.index()) {
                    *count += 1;
                }
            }
        }
        uses
    }
}

/// Shared builder of steps, expressions and counts.
#[derive(Clone, Debug, Default)]
pub(crate) struct Recorder {
    pub(crate) steps: Vec<Step>,
    accumulations: Vec<Expr>,
    pub(crate) ops: OpCounts,
    /// Reads of each accumulated value by later expressions.
    expr_uses: Vec<u32>,
}

impl Recorder {
    /// For each accumulated value so far: whether its expression is a
    /// subtraction (a pending sign on it is materialized for free by
    /// swapping the operands) and how often later expressions read it.
    pub(crate) fn acc_facts(&self) -> Vec<(bool, u32)> {
        self.accumulations
            .iter()
            .zip(&self.expr_uses)
            .map(|(e, &u)| (matches!(e, Expr::Sub(..)), u))
            .collect()
    }

    /// Value of a fill-in edge `a * b`.
    pub(crate) fn product(&mut self, a: Val, b: Val) -> Val {
        let term = multiply(a, b, &mut self.ops);
        self.store(term)
    }

    /// Value of an absorbing edge `existing + a * b`.
    pub(crate) fn absorb(&mut self, existing: Val, a: Val, b: Val) -> Val {
        let product = multiply(a, b, &mut self.ops);
        let term = add(Term::Simple(existing), product, &mut self.ops);
        self.store(term)
    }

    /// The quotient `a / b` of a rerouting.
    pub(crate) fn quotient(&mut self, a: Val, b: Val) -> Val {
        let term = crate::value::divide(a, b, &mut self.ops);
        self.store(term)
    }

    /// Value of an edge after `existing - a * b`, or of a new edge `-(a *
    /// b)` (a pending sign, no operation).
    pub(crate) fn absorb_negated(&mut self, existing: Option<Val>, a: Val, b: Val) -> Val {
        let product = multiply(a, b, &mut self.ops).negated();
        let term = match existing {
            Some(existing) => add(Term::Simple(existing), product, &mut self.ops),
            None => product,
        };
        self.store(term)
    }

    /// Value of an edge after `existing + a` (or a new edge `a`).
    pub(crate) fn absorb_value(&mut self, existing: Option<Val>, a: Val) -> Val {
        match existing {
            Some(existing) => {
                let term = add(Term::Simple(existing), Term::Simple(a), &mut self.ops);
                self.store(term)
            }
            None => a,
        }
    }

    /// Value of two merged parallel edges `a + b`.
    pub(crate) fn sum(&mut self, a: Val, b: Val) -> Val {
        let term = add(Term::Simple(a), Term::Simple(b), &mut self.ops);
        self.store(term)
    }

    fn store(&mut self, term: Term) -> Val {
        match term {
            Term::Simple(val) => val,
            Term::Expr { expr, negative } => {
                let acc = self.push(expr);
                Val::Acc { acc, negative }
            }
        }
    }

    fn push(&mut self, expr: Expr) -> AccId {
        expr.for_each_operand(&mut |operand| {
            if let Operand::Acc(acc) = operand {
                self.expr_uses[acc.index()] += 1;
            }
        });
        let acc = AccId(self.accumulations.len() as u32);
        self.accumulations.push(expr);
        self.expr_uses.push(0);
        acc
    }

    /// Turns the working state into the public result. Remainder values
    /// with a pending sign are materialized: a negated accumulated value
    /// read nowhere else is rewritten in place (`a - b` becomes `b - a`,
    /// anything else gets a unary minus); otherwise one new value
    /// `acc := -x` is shared by all edges that need `-x`.
    pub(crate) fn finish(
        mut self,
        vertices: Vec<RemainderVertex>,
        edges: Vec<(VertexId, VertexId, Val)>,
        triviality: Triviality,
    ) -> Elimination {
        let mut edge_refs = vec![0u32; self.accumulations.len()];
        for (_, _, val) in &edges {
            if let Val::Acc { acc, .. } = val {
                edge_refs[acc.index()] += 1;
            }
        }
        let mut negated: HashMap<(bool, u32), AccId> = HashMap::new();
        let mut remainder_edges = Vec::with_capacity(edges.len());
        for (source, target, val) in edges {
            let value = match val.as_edge_value() {
                Some(value) => value,
                None => self.materialize_negative(val, &edge_refs, &mut negated),
            };
            remainder_edges.push(RemainderEdge {
                source,
                target,
                value,
            });
        }
        let nontrivial_edges = remainder_edges
            .iter()
            .filter(|edge| triviality.is_nontrivial(&edge.value))
            .count();
        Elimination {
            steps: self.steps,
            accumulations: self
                .accumulations
                .into_iter()
                .enumerate()
                .map(|(index, expr)| Accumulation {
                    id: AccId(index as u32),
                    expr,
                })
                .collect(),
            remainder: Remainder {
                vertices,
                edges: remainder_edges,
            },
            ops: self.ops,
            nontrivial_edges,
            triviality,
        }
    }

    fn materialize_negative(
        &mut self,
        val: Val,
        edge_refs: &[u32],
        negated: &mut HashMap<(bool, u32), AccId>,
    ) -> EdgeValue {
        let (key, operand) = match val {
            Val::Acc { acc, .. } => {
                if self.expr_uses[acc.index()] == 0 && edge_refs[acc.index()] == 1 {
                    let expr = std::mem::replace(
                        &mut self.accumulations[acc.index()],
                        Expr::Leaf(Operand::Constant(0.0)),
                    );
                    self.accumulations[acc.index()] = negate_expr(expr, &mut self.ops);
                    return EdgeValue::Acc(acc);
                }
                ((true, acc.0), Operand::Acc(acc))
            }
            Val::Var { var, .. } => ((false, var.0), Operand::Variable(var)),
            // Units and constants carry their sign already.
            Val::One { .. } | Val::Const(_) => {
                return val.as_edge_value().unwrap_or(EdgeValue::Unit);
            }
        };
        if let Some(&acc) = negated.get(&key) {
            return EdgeValue::Acc(acc);
        }
        self.ops.negations += 1;
        let acc = self.push(Expr::Neg(Box::new(Expr::Leaf(operand))));
        negated.insert(key, acc);
        EdgeValue::Acc(acc)
    }
}
