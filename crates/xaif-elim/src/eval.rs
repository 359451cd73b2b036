//! Numeric evaluation: the oracle for tests and a checking aid for callers.
//!
//! The Jacobian of a linearized graph is, for each dependent `y` and
//! independent `x`, the sum over all paths from `x` to `y` of the products
//! of the edge values ([`Lcg::jacobian`]). Elimination must preserve it, so
//! the Jacobian of the remainder graph, with its values computed from the
//! accumulation expressions ([`Elimination::jacobian`]), must be the same.
//! Paths may run through dependents that have out-edges; they count like
//! any other path.

use thiserror::Error;

use crate::graph::{topological_order, GraphError, Label, Lcg, VarId, VertexId, VertexKind};
use crate::result::Elimination;
use crate::value::{AccId, EdgeValue, Expr, Operand};

/// Errors of numeric evaluation.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum EvalError {
    /// The caller gave no value for a variable label.
    #[error("no value for variable {0}")]
    UnboundVariable(VarId),
    /// An expression reads an accumulated value not defined before it.
    #[error("{0} is read before it is defined")]
    UndefinedAcc(AccId),
    /// The graph is malformed (cyclic, or a hand-edited remainder names a
    /// vertex that does not exist).
    #[error(transparent)]
    Graph(#[from] GraphError),
}

/// A dense Jacobian, rows are dependents and columns independents, both in
/// vertex-id order.
#[derive(Clone, Debug, PartialEq)]
pub struct Jacobian {
    /// Row vertices.
    pub dependents: Vec<VertexId>,
    /// Column vertices.
    pub independents: Vec<VertexId>,
    /// Row-major entries.
    pub values: Vec<f64>,
}

impl Jacobian {
    /// The entry `d dependent / d independent`, `None` if either vertex is
    /// not a row or column.
    pub fn get(&self, dependent: VertexId, independent: VertexId) -> Option<f64> {
        let row = self.dependents.iter().position(|&v| v == dependent)?;
        let column = self.independents.iter().position(|&v| v == independent)?;
        self.values
            .get(row * self.independents.len() + column)
            .copied()
    }
}

impl Operand {
    /// The value of the operand given variable values and the values of
    /// the accumulated values defined so far.
    pub fn evaluate(
        &self,
        vars: &dyn Fn(VarId) -> Option<f64>,
        accs: &[f64],
    ) -> Result<f64, EvalError> {
        match *self {
            Operand::Constant(value) => Ok(value),
            Operand::Variable(var) => vars(var).ok_or(EvalError::UnboundVariable(var)),
            Operand::Acc(acc) => accs
                .get(acc.index())
                .copied()
                .ok_or(EvalError::UndefinedAcc(acc)),
        }
    }
}

impl Expr {
    /// Evaluates the expression.
    pub fn evaluate(
        &self,
        vars: &dyn Fn(VarId) -> Option<f64>,
        accs: &[f64],
    ) -> Result<f64, EvalError> {
        Ok(match self {
            Expr::Leaf(operand) => operand.evaluate(vars, accs)?,
            Expr::Neg(inner) => -inner.evaluate(vars, accs)?,
            Expr::Mul(l, r) => l.evaluate(vars, accs)? * r.evaluate(vars, accs)?,
            Expr::Add(l, r) => l.evaluate(vars, accs)? + r.evaluate(vars, accs)?,
            Expr::Sub(l, r) => l.evaluate(vars, accs)? - r.evaluate(vars, accs)?,
            Expr::Div(l, r) => l.evaluate(vars, accs)? / r.evaluate(vars, accs)?,
        })
    }
}

impl EdgeValue {
    /// The numeric value of a remainder edge.
    pub fn evaluate(
        &self,
        vars: &dyn Fn(VarId) -> Option<f64>,
        accs: &[f64],
    ) -> Result<f64, EvalError> {
        match *self {
            EdgeValue::Unit => Ok(1.0),
            EdgeValue::MinusOne => Ok(-1.0),
            EdgeValue::Constant(value) => Ok(value),
            EdgeValue::Variable(var) => Operand::Variable(var).evaluate(vars, accs),
            EdgeValue::Acc(acc) => Operand::Acc(acc).evaluate(vars, accs),
        }
    }
}

impl Label {
    /// The numeric value of an input edge label.
    pub fn evaluate(&self, vars: &dyn Fn(VarId) -> Option<f64>) -> Result<f64, EvalError> {
        match *self {
            Label::Unit => Ok(1.0),
            Label::MinusOne => Ok(-1.0),
            Label::Constant(value) => Ok(value),
            Label::Variable(var) => vars(var).ok_or(EvalError::UnboundVariable(var)),
        }
    }
}

impl Elimination {
    /// The values of all accumulated values, in definition order.
    pub fn acc_values(&self, vars: &dyn Fn(VarId) -> Option<f64>) -> Result<Vec<f64>, EvalError> {
        let mut values = Vec::with_capacity(self.accumulations.len());
        for accumulation in &self.accumulations {
            let value = accumulation.expr.evaluate(vars, &values)?;
            values.push(value);
        }
        Ok(values)
    }

    /// The Jacobian as the path sum over the remainder graph.
    pub fn jacobian(&self, vars: &dyn Fn(VarId) -> Option<f64>) -> Result<Jacobian, EvalError> {
        let accs = self.acc_values(vars)?;
        let kinds: Vec<VertexKind> = self.remainder.vertices.iter().map(|v| v.kind).collect();
        let mut edges = Vec::with_capacity(self.remainder.edges.len());
        for edge in &self.remainder.edges {
            let value = edge.value.evaluate(vars, &accs)?;
            edges.push((edge.source.index(), edge.target.index(), value));
        }
        path_sum(&kinds, &edges)
    }
}

impl Lcg {
    /// The Jacobian as the sum over all paths of the products of the edge
    /// labels (parallel edges are distinct paths).
    pub fn jacobian(&self, vars: &dyn Fn(VarId) -> Option<f64>) -> Result<Jacobian, EvalError> {
        let mut edges = Vec::with_capacity(self.edges().len());
        for edge in self.edges() {
            let value = edge.label.evaluate(vars)?;
            edges.push((edge.source.index(), edge.target.index(), value));
        }
        path_sum(self.kinds(), &edges)
    }
}

/// Sum over paths by forward accumulation in topological order, one
/// independent at a time (distributivity turns the path sum into this).
fn path_sum(kinds: &[VertexKind], edges: &[(usize, usize, f64)]) -> Result<Jacobian, EvalError> {
    if let Some(&(s, t, _)) = edges
        .iter()
        .find(|&&(s, t, _)| s >= kinds.len() || t >= kinds.len())
    {
        let bad = if s >= kinds.len() { s } else { t };
        return Err(GraphError::UnknownVertex(VertexId(bad as u32)).into());
    }
    let pairs: Vec<(usize, usize)> = edges.iter().map(|&(s, t, _)| (s, t)).collect();
    let order = topological_order(kinds.len(), &pairs)
        .map_err(|v| GraphError::Cycle(VertexId(v as u32)))?;
    let mut out_edges = vec![Vec::new(); kinds.len()];
    for &(source, target, value) in edges {
        out_edges[source].push((target, value));
    }
    let select = |kind: VertexKind| -> Vec<VertexId> {
        (0..kinds.len())
            .filter(|&v| kinds[v] == kind)
            .map(|v| VertexId(v as u32))
            .collect()
    };
    let dependents = select(VertexKind::Dependent);
    let independents = select(VertexKind::Independent);
    let mut values = vec![0.0; dependents.len() * independents.len()];
    let mut tangent = vec![0.0; kinds.len()];
    for (column, independent) in independents.iter().enumerate() {
        tangent.iter_mut().for_each(|t| *t = 0.0);
        tangent[independent.index()] = 1.0;
        for &vertex in &order {
            let here = tangent[vertex];
            for &(target, value) in &out_edges[vertex] {
                tangent[target] += value * here;
            }
        }
        for (row, dependent) in dependents.iter().enumerate() {
            values[row * independents.len() + column] = tangent[dependent.index()];
        }
    }
    Ok(Jacobian {
        dependents,
        independents,
        values,
    })
}
