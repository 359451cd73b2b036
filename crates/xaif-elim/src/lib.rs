//! Jacobian preaccumulation by elimination on linearized computational
//! graphs.
//!
//! A basic block (or a flattened sequence of statements) is a local vector
//! function; its linearized computational graph (LCG) has the local partial
//! derivatives on its edges, and its Jacobian is the sum over all paths of
//! the products of the edge values. Eliminating vertices, edges or faces
//! rewrites the graph without changing that sum while turning products
//! along paths into explicit *Jacobian accumulation expressions*; what is
//! left, the *remainder graph*, is what the derivative code propagates
//! (seeds: `../shared/seeds/control-flow-reversal.txt` §3 and
//! `../shared/seeds/weighted-term-graphs.txt`, relative to the repository
//! root).
//!
//! # Design
//!
//! The crate knows nothing about XAIF. The caller (linearization and code
//! generation) builds an [`Lcg`] with labels [`Label::Unit`],
//! [`Label::MinusOne`], [`Label::Constant`] or [`Label::Variable`] (an
//! opaque id such as the index of a `lin_N` temporary), marks vertices
//! [`VertexKind::Independent`], [`VertexKind::Intermediate`] or
//! [`VertexKind::Dependent`] — a dependent may keep out-edges — and gets
//! back an [`Elimination`]:
//!
//! - [`Elimination::steps`]: the protocol ([`Step`]);
//! - [`Elimination::accumulations`]: `acc_k := expr` in evaluation order,
//!   each [`Expr`] a tree of products, sums and differences over original
//!   labels, constants and earlier `acc` values;
//! - [`Elimination::remainder`]: the remaining edges, each with its final
//!   [`EdgeValue`] (an original label, a folded constant or an `acc`);
//! - [`Elimination::ops`] and [`Elimination::nontrivial_edges`]: the exact
//!   operation counts of the expressions and the scarcity measure.
//!
//! Decisions that shape the output:
//!
//! - **Parallel edges** of the input (from `x*x`) are merged first, one
//!   absorption (an addition, folded for constants) per extra edge, shown
//!   as [`Step::MergeParallel`]. The working graphs never have parallel
//!   edges, so an edge is named by its endpoints.
//! - **Folding** ([`value`]): factors `+1` and `-1` are never multiplied;
//!   a `-1` travels as a pending sign and turns `a + (-b)` into `a - b`.
//!   Constant times constant and constant plus constant are computed at
//!   transformation time. A negative value that ends on a remainder edge is
//!   materialized (a subtraction is swapped, otherwise a unary minus, listed
//!   as a negation and not part of the metrics). Nothing else is
//!   simplified, so the counts are exactly the nodes of the expressions.
//! - **Edge elimination** follows the seed exactly ([`ElimGraph`]); the
//!   eliminated edge's label is the first factor of each product and an
//!   absorbed value is the left summand, as in the seed's Eq. (5).
//! - **Reroutings** (`-R`) remove an edge by routing its paths through a
//!   sibling edge, dividing by that pivot's value (which must not be zero
//!   at run time; a pivot known to be zero is refused).
//! - **Face elimination** works on the dual graph with boundary markers,
//!   absorbs only into a dual vertex with identical neighbourhoods and
//!   merges twins as they arise ([`dual`]).
//! - **Heuristics** are filters composed into a [`Chain`] that always ends
//!   in forward or reverse mode on one topological order ([`heuristics`]).
//! - **Scarcity-preserving** elimination runs a complete sequence that
//!   prefers non-trivial-edge-reducing steps and returns the earliest state
//!   with the fewest non-trivial edges ([`strategy`]); [`select`] keeps the
//!   best of several strategies under the scarcity (`-M 1`) or operations
//!   (`-M 0`) metric, with triviality `-A 0/1/2` ([`Triviality`]).
//!
//! [`optimize()`] chooses the elimination the transformation uses: the
//! reference's selection ([`select`], on the search's own working graph)
//! as baseline, then, by [`Effort`], greedy descent over vertex and edge
//! eliminations (the remainder post-processing: unit edges forwarded or
//! back-propagated where that pays, and every other improving step),
//! randomized chains (`-a`), reroutings (`-R`, [`Step::Reroute`]), exact
//! A* searches over vertex sets and edge-elimination states that prove
//! optimality on small graphs, and beam search. What is minimized is the
//! derivative code's cost in the mode that follows ([`cost`]), or the
//! reference's metric on request ([`Goal`]). Every result comes with a
//! [`Report`]: the baseline's cost, ours, a lower bound, the proof.
//!
//! Compared with the reference engine, the scarcity heuristics have no
//! refill-avoidance filter. Face elimination is complete and correct but
//! slow with some chains on large graphs, which is why the default
//! configurations use vertex and edge elimination only.
//!
//! Nothing here panics on caller input: malformed graphs and impossible
//! eliminations are [`GraphError`]s and [`ElimError`]s, numeric evaluation
//! failures [`EvalError`]s.
//!
//! # Example
//!
//! ```
//! use xaif_elim::{select, Config, Label, Lcg, VarId, VertexKind};
//!
//! // y = sin(x) * x
//! let mut g = Lcg::new();
//! let x = g.add_vertex(VertexKind::Independent);
//! let s = g.add_vertex(VertexKind::Intermediate);
//! let y = g.add_vertex(VertexKind::Dependent);
//! g.add_edge(x, s, Label::Variable(VarId(0)))?; // cos(x)
//! g.add_edge(s, y, Label::Variable(VarId(1)))?; // x
//! g.add_edge(x, y, Label::Variable(VarId(2)))?; // sin(x)
//! let best = select(&g, &Config::operations(Default::default()))?.elimination;
//! assert_eq!(best.remainder.edges.len(), 1);
//! assert_eq!(best.accumulations[0].expr.to_string(), "v2 + v0 * v1");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod anytime;
pub mod cache;
mod chain;
mod components;
pub mod cost;
pub mod dot;
pub mod dual;
pub mod elim;
pub mod eval;
mod exact;
pub mod graph;
pub mod heuristics;
pub mod memo;
pub mod optimize;
pub mod result;
mod search;
pub mod strategy;
pub mod value;
mod work;
#[cfg(test)]
mod work_tests;

pub use cache::{CacheHandle, COST_MODEL_VERSION};
pub use chain::one_thread_per_graph;
pub use cost::{evaluate, taped_factors, Goal, PropagationMode, EXCESS_TAPE};
pub use dual::{DualGraph, DualVertexId};
pub use elim::ElimGraph;
pub use eval::{EvalError, Jacobian};
pub use graph::{Edge, EdgeId, GraphError, Label, Lcg, VarId, VertexId, VertexKind};
pub use heuristics::{Chain, EliminationState, Filter, Mode, Neighbourhood, OrderKey};
pub use memo::{Memo, Prefetched};
pub use optimize::{
    optimize, optimize_against, Effort, Optimized, Proof, Report, Search, REFERENCE_EDGES,
};
pub use result::{
    Accumulation, Direction, ElimError, Elimination, FaceTarget, LcgTarget, Remainder,
    RemainderEdge, RemainderVertex, Step,
};
pub use strategy::{
    run, scarcity_filter, select, Config, ConfigError, Extent, Method, Metric, Selection, Strategy,
    STEP_LIMIT,
};
pub use value::{AccId, EdgeValue, Expr, OpCounts, Operand, Triviality};
