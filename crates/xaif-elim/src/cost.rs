//! What an elimination costs when the derivative code runs.
//!
//! The reference engine ranks eliminations by its metrics (`-M`): the
//! number of non-trivial remainder edges, then multiplications, then
//! additions ([`crate::Metric`]). What the user pays for is the derivative
//! code's run time, and that depends on the mode:
//!
//! - **accumulation**: one operation per multiplication, addition,
//!   subtraction and materialized negation of the Jacobian accumulation
//!   expressions (units and constants are folded, see [`crate::value`]);
//! - remainder edges whose factor folded to the constant zero are not
//!   propagated at all;
//! - **tangent propagation** of the remainder graph: for each target, a
//!   unit or minus-one edge costs one addition (`IncDeriv`, `DecDeriv`) and
//!   any other factor a multiplication and an addition (`Sax`, `Saxpy`),
//!   except that the first term of a target with a unit or minus-one edge
//!   is a free copy (`SetDeriv`, `SetNegDeriv`), so the code generator puts
//!   such a term first;
//! - **adjoint propagation**: every remainder edge is one `IncDeriv` or
//!   `DecDeriv` (unit, minus one) or one `Saxpy` (two operations), and
//!   every distinct run-time factor is pushed by the taping sweep and popped
//!   by the adjoint sweep, which is counted as two operations.
//!
//! [`PropagationMode`] says which propagation follows, [`Goal`] whether the
//! run time or the reference's metric is minimized. Both are turned into
//! one additive integer cost (lexicographic metrics by weights far apart),
//! used by the search (the working graph) and by [`evaluate`], which prices a
//! finished [`Elimination`] the same way.

use std::collections::HashMap;

use crate::result::Elimination;
use crate::strategy::Metric;
use crate::value::{EdgeValue, Triviality};
use crate::work::{Circuit, Model};

/// Which derivative code propagates the remainder graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PropagationMode {
    /// Forward propagation (tangent-linear code).
    #[default]
    Tangent,
    /// Taping of the factors and transposed propagation (adjoint code).
    Adjoint,
}

/// What the search minimizes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Goal {
    /// Operations of the derivative code in the propagation mode (plus
    /// pushes and pops in adjoint mode); the default.
    #[default]
    RunTime,
    /// The reference's ranking, [`crate::Config::metric`] under
    /// [`crate::Config::triviality`] (what `-M` asks for).
    Metric,
}

/// One operation of the derivative code in model units; the low bits
/// below it break ties.
pub const OPERATION: i64 = 1 << 20;

/// In adjoint mode, every taped factor beyond the number the reference's
/// chain tapes on the same graph costs this many operations more (on top
/// of its push and pop): taping more than the reference must save clearly
/// more than it costs, so that the tape does not grow for small gains.
pub const EXCESS_TAPE: u64 = 6;

/// The distinct run-time factors on the remainder edges of an
/// elimination: what adjoint code tapes per execution.
pub fn taped_factors(elimination: &Elimination) -> usize {
    let mut factors: Vec<(bool, u32)> = elimination
        .remainder
        .edges
        .iter()
        .filter_map(|e| match e.value {
            EdgeValue::Variable(v) => Some((false, v.0)),
            EdgeValue::Acc(a) => Some((true, a.0)),
            _ => None,
        })
        .collect();
    factors.sort_unstable();
    factors.dedup();
    factors.len()
}

/// The search's cost model of a goal.
pub(crate) fn model(
    goal: Goal,
    mode: PropagationMode,
    metric: Metric,
    triviality: Triviality,
) -> Model {
    let nontrivial = |weight: i64| {
        let class = |shape| i64::from(triviality.shape_is_nontrivial(shape)) * weight;
        use crate::value::Shape;
        [
            class(Shape::One),
            class(Shape::Constant),
            class(Shape::Runtime),
            class(Shape::Constant),
        ]
    };
    match (goal, mode, metric) {
        (Goal::RunTime, PropagationMode::Tangent, _) => Model {
            w_mul: OPERATION,
            w_add: OPERATION,
            w_edge: [OPERATION, 2 * OPERATION, 2 * OPERATION, 0],
            first_unit: OPERATION,
            w_push: 1,
            w_neg: OPERATION,
            total: false,
            max_pushes: i64::MAX,
            w_excess: 0,
            circuit: Circuit::Tangent,
        },
        (Goal::RunTime, PropagationMode::Adjoint, _) => Model {
            w_mul: OPERATION,
            w_add: OPERATION,
            w_edge: [OPERATION, 2 * OPERATION, 2 * OPERATION, 0],
            first_unit: 0,
            w_push: 2 * OPERATION + 1,
            w_neg: OPERATION,
            total: false,
            max_pushes: i64::MAX,
            w_excess: 0,
            circuit: Circuit::Adjoint,
        },
        (Goal::Metric, _, Metric::Scarcity) => Model {
            w_mul: 1 << 20,
            w_add: 1,
            w_edge: nontrivial(1 << 40),
            first_unit: 0,
            w_push: 0,
            w_neg: 0,
            total: false,
            max_pushes: i64::MAX,
            w_excess: 0,
            circuit: Circuit::None,
        },
        (Goal::Metric, _, Metric::Operations) => Model {
            w_mul: 1 << 40,
            w_add: 1 << 20,
            w_edge: nontrivial(1),
            first_unit: 0,
            w_push: 0,
            w_neg: 0,
            total: true,
            max_pushes: i64::MAX,
            w_excess: 0,
            circuit: Circuit::None,
        },
    }
}

/// The leading component of a cost in its natural unit: operations for
/// [`Goal::RunTime`] (push and pop included in adjoint mode),
/// non-trivial edges for the scarcity metric, multiplications for the
/// operations metric.
pub(crate) fn primary(goal: Goal, metric: Metric, cost: i64) -> u64 {
    let shift = match (goal, metric) {
        (Goal::RunTime, _) => 20,
        (Goal::Metric, _) => 40,
    };
    (cost.max(0) >> shift) as u64
}

/// The cost of a finished elimination under a model; `None` when the model
/// needs a total elimination and an intermediate is left.
pub(crate) fn evaluate_model(model: &Model, elimination: &Elimination) -> Option<i64> {
    if model.total
        && elimination
            .remainder
            .vertices
            .iter()
            .any(|v| v.present && v.kind == crate::VertexKind::Intermediate)
    {
        return None;
    }
    let ops = elimination.ops;
    let mut cost = model.w_mul * ops.multiplicative() as i64
        + model.w_add * ops.additive() as i64
        + model.w_neg * ops.negations as i64;
    let mut counts: HashMap<u32, [u16; 4]> = HashMap::new();
    let mut factors: Vec<(bool, u32)> = Vec::new();
    for edge in &elimination.remainder.edges {
        let class = match edge.value {
            EdgeValue::Unit | EdgeValue::MinusOne => 0,
            EdgeValue::Constant(0.0) => 3,
            EdgeValue::Constant(_) => 1,
            EdgeValue::Variable(v) => {
                factors.push((false, v.0));
                2
            }
            EdgeValue::Acc(a) => {
                factors.push((true, a.0));
                2
            }
        };
        counts.entry(edge.target.0).or_default()[class] += 1;
    }
    for c in counts.values() {
        let mut v = 0;
        for (class, &n) in c.iter().enumerate() {
            v += model.w_edge[class] * i64::from(n);
        }
        if c[0] > 0 {
            v -= model.first_unit;
        }
        cost += v;
    }
    factors.sort_unstable();
    factors.dedup();
    let pushes = factors.len() as i64;
    cost += model.w_push * pushes + model.w_excess * (pushes - model.max_pushes).max(0);
    Some(cost)
}

/// The run-time operations of a finished elimination in a mode:
/// accumulation plus propagation, and in adjoint mode two more per pushed
/// factor. This is what [`Goal::RunTime`] minimizes, in operations (in
/// adjoint mode with [`EXCESS_TAPE`] more per factor beyond the
/// reference's tape).
pub fn evaluate(elimination: &Elimination, mode: PropagationMode) -> u64 {
    let m = model(
        Goal::RunTime,
        mode,
        Metric::default(),
        elimination.triviality,
    );
    evaluate_model(&m, elimination)
        .map_or(u64::MAX, |c| primary(Goal::RunTime, Metric::default(), c))
}
