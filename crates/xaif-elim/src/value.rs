//! Edge values and Jacobian accumulation expressions.
//!
//! During elimination every edge carries a `Val`: a unit, a folded
//! constant, an original variable label or an accumulated value, each with
//! a pending sign. Keeping the sign apart is what makes `-1` factors free:
//! `-1 * c` never becomes an operation, `a + (-1)(b*c)` becomes the single
//! subtraction `a - b*c`, and only a negative value that survives into the
//! remainder graph is materialized (see [`crate::Elimination`]).
//!
//! Folding rules, applied identically when previewing an elimination for a
//! heuristic and when performing it:
//! - a factor `+1` or `-1` is dropped (its sign is carried along);
//! - constant times constant and constant plus constant are computed now;
//!   results equal to `1.0` or `-1.0` become unit factors again;
//! - every other product is one multiplication, every other sum one
//!   addition or subtraction; each new edge value that is not folded to a
//!   unit, a constant or an existing operand defines one new accumulated
//!   value `acc_k` (an absorption `c + a*b` is one value with two
//!   operations, as in the seed's Eq. (5)).
//!
//! No other algebra is done (in particular `0 * x` is not folded), so the
//! operation counts are exactly the operations in the emitted expressions.

use std::fmt;

use crate::graph::{Label, VarId};

/// Handle of an accumulated value `acc_k`; `k` is its position in
/// [`crate::Elimination::accumulations`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AccId(pub u32);

impl AccId {
    /// Position in the accumulation list.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for AccId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "acc{}", self.0)
    }
}

/// A leaf of an accumulation expression.
///
/// A unit summand (as in `1 + c`) appears as `Constant(1.0)`; unit and
/// minus-one factors never appear because they are folded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Operand {
    /// A constant, original or folded.
    Constant(f64),
    /// An original variable edge label.
    Variable(VarId),
    /// An earlier accumulated value.
    Acc(AccId),
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Constant(value) => write!(f, "{value}"),
            Operand::Variable(var) => write!(f, "{var}"),
            Operand::Acc(acc) => write!(f, "{acc}"),
        }
    }
}

/// Right-hand side of one Jacobian accumulation expression.
///
/// Every interior node is exactly one run-time operation, counted in
/// [`OpCounts`]; see [`Expr::operation_counts`].
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// An operand.
    Leaf(Operand),
    /// A sign change; only emitted when a negative value has to be stored
    /// as a remainder edge value. Counted as a negation, not in the metrics.
    Neg(Box<Expr>),
    /// A product (one multiplication).
    Mul(Box<Expr>, Box<Expr>),
    /// A sum (one addition).
    Add(Box<Expr>, Box<Expr>),
    /// A difference, left minus right (one subtraction).
    Sub(Box<Expr>, Box<Expr>),
    /// A quotient, left over right (one division; only reroutings, `-R`,
    /// produce it).
    Div(Box<Expr>, Box<Expr>),
}

impl Expr {
    /// Counts the operations of the tree by walking it.
    pub fn operation_counts(&self) -> OpCounts {
        let mut counts = OpCounts::default();
        self.count_into(&mut counts);
        counts
    }

    fn count_into(&self, counts: &mut OpCounts) {
        match self {
            Expr::Leaf(_) => {}
            Expr::Neg(inner) => {
                counts.negations += 1;
                inner.count_into(counts);
            }
            Expr::Mul(left, right) => {
                counts.multiplications += 1;
                left.count_into(counts);
                right.count_into(counts);
            }
            Expr::Add(left, right) => {
                counts.additions += 1;
                left.count_into(counts);
                right.count_into(counts);
            }
            Expr::Sub(left, right) => {
                counts.subtractions += 1;
                left.count_into(counts);
                right.count_into(counts);
            }
            Expr::Div(left, right) => {
                counts.divisions += 1;
                left.count_into(counts);
                right.count_into(counts);
            }
        }
    }

    /// Calls `visit` for every leaf, left to right.
    pub fn for_each_operand(&self, visit: &mut impl FnMut(&Operand)) {
        match self {
            Expr::Leaf(operand) => visit(operand),
            Expr::Neg(inner) => inner.for_each_operand(visit),
            Expr::Mul(left, right)
            | Expr::Add(left, right)
            | Expr::Sub(left, right)
            | Expr::Div(left, right) => {
                left.for_each_operand(visit);
                right.for_each_operand(visit);
            }
        }
    }

    /// Renders the expression with caller names for variables, for
    /// listings and test expectations. Products bind tighter than sums;
    /// parentheses are written only where needed.
    pub fn render(&self, var_name: &dyn Fn(VarId) -> String) -> String {
        self.render_prec(var_name, 0)
    }

    fn render_prec(&self, var_name: &dyn Fn(VarId) -> String, context: u8) -> String {
        let (text, own) = match self {
            Expr::Leaf(Operand::Variable(var)) => (var_name(*var), 3),
            Expr::Leaf(operand) => (operand.to_string(), 3),
            Expr::Neg(inner) => (format!("-{}", inner.render_prec(var_name, 3)), 2),
            Expr::Mul(left, right) => (
                format!(
                    "{} * {}",
                    left.render_prec(var_name, 1),
                    right.render_prec(var_name, 2)
                ),
                1,
            ),
            Expr::Div(left, right) => (
                format!(
                    "{} / {}",
                    left.render_prec(var_name, 1),
                    right.render_prec(var_name, 2)
                ),
                1,
            ),
            Expr::Add(left, right) => (
                format!(
                    "{} + {}",
                    left.render_prec(var_name, 0),
                    right.render_prec(var_name, 1)
                ),
                0,
            ),
            Expr::Sub(left, right) => (
                format!(
                    "{} - {}",
                    left.render_prec(var_name, 0),
                    right.render_prec(var_name, 1)
                ),
                0,
            ),
        };
        if own < context {
            format!("({text})")
        } else {
            text
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(&|var| var.to_string()))
    }
}

/// Numbers of run-time operations in accumulation expressions.
///
/// Divisions come only from reroutings (`-R`). Negations are listed
/// separately and do not enter the metrics, like other unit factors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct OpCounts {
    /// Number of `*` operations.
    pub multiplications: usize,
    /// Number of binary `+` operations.
    pub additions: usize,
    /// Number of binary `-` operations.
    pub subtractions: usize,
    /// Number of `/` operations (reroutings only).
    pub divisions: usize,
    /// Number of unary minus operations.
    pub negations: usize,
}

impl OpCounts {
    /// Multiplications and divisions: the first criterion of the
    /// operations metric.
    pub fn multiplicative(&self) -> usize {
        self.multiplications + self.divisions
    }

    /// Additions and subtractions: the second criterion of the operations
    /// metric.
    pub fn additive(&self) -> usize {
        self.additions + self.subtractions
    }
}

impl std::ops::Add for OpCounts {
    type Output = OpCounts;
    fn add(self, other: OpCounts) -> OpCounts {
        OpCounts {
            multiplications: self.multiplications + other.multiplications,
            additions: self.additions + other.additions,
            subtractions: self.subtractions + other.subtractions,
            divisions: self.divisions + other.divisions,
            negations: self.negations + other.negations,
        }
    }
}

/// The final value of a remainder edge.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EdgeValue {
    /// The factor `+1`.
    Unit,
    /// The factor `-1`.
    MinusOne,
    /// A constant factor, original or folded (never `1.0` or `-1.0`).
    Constant(f64),
    /// An original variable label, unchanged.
    Variable(VarId),
    /// An accumulated value.
    Acc(AccId),
}

impl fmt::Display for EdgeValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EdgeValue::Unit => write!(f, "1"),
            EdgeValue::MinusOne => write!(f, "-1"),
            EdgeValue::Constant(value) => write!(f, "{value}"),
            EdgeValue::Variable(var) => write!(f, "{var}"),
            EdgeValue::Acc(acc) => write!(f, "{acc}"),
        }
    }
}

/// Which edges are trivial for the scarcity count (`-A 0/1/2`).
///
/// Trivial edges cost nothing to propagate beyond an addition, so
/// scarcity-preserving elimination minimizes the number of the others.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Triviality {
    /// `-A 0`: every edge counts.
    None,
    /// `-A 1` (default): `+1` and `-1` edges are trivial.
    #[default]
    Unit,
    /// `-A 2`: `+1`, `-1` and constant edges are trivial.
    UnitAndConstant,
}

impl Triviality {
    /// Maps the reference engine's `-A` flag value.
    pub fn from_flag(flag: u8) -> Option<Self> {
        match flag {
            0 => Some(Triviality::None),
            1 => Some(Triviality::Unit),
            2 => Some(Triviality::UnitAndConstant),
            _ => None,
        }
    }

    /// Whether an edge with this value counts as non-trivial.
    pub fn is_nontrivial(self, value: &EdgeValue) -> bool {
        self.shape_is_nontrivial(match value {
            EdgeValue::Unit | EdgeValue::MinusOne => Shape::One,
            EdgeValue::Constant(_) => Shape::Constant,
            EdgeValue::Variable(_) | EdgeValue::Acc(_) => Shape::Runtime,
        })
    }

    pub(crate) fn shape_is_nontrivial(self, shape: Shape) -> bool {
        matches!(
            (self, shape),
            (Triviality::None, _) | (_, Shape::Runtime) | (Triviality::Unit, Shape::Constant)
        )
    }
}

/// What kind of value an edge would carry; enough to decide triviality.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    One,
    Constant,
    Runtime,
}

/// Working edge value: an operand with a pending sign.
///
/// Invariant: `Const` never holds `1.0` or `-1.0` (those are `One`), and a
/// constant carries its sign in its value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Val {
    One { negative: bool },
    Const(f64),
    Var { var: VarId, negative: bool },
    Acc { acc: AccId, negative: bool },
}

impl Val {
    pub(crate) fn from_label(label: Label) -> Val {
        match label {
            Label::Unit => Val::One { negative: false },
            Label::MinusOne => Val::One { negative: true },
            Label::Constant(value) => Val::constant(value),
            Label::Variable(var) => Val::Var {
                var,
                negative: false,
            },
        }
    }

    pub(crate) fn constant(value: f64) -> Val {
        if value == 1.0 {
            Val::One { negative: false }
        } else if value == -1.0 {
            Val::One { negative: true }
        } else {
            Val::Const(value)
        }
    }

    fn constant_value(self) -> Option<f64> {
        match self {
            Val::One { negative } => Some(if negative { -1.0 } else { 1.0 }),
            Val::Const(value) => Some(value),
            _ => None,
        }
    }

    pub(crate) fn negated(self) -> Val {
        match self {
            Val::One { negative } => Val::One {
                negative: !negative,
            },
            Val::Const(value) => Val::Const(-value),
            Val::Var { var, negative } => Val::Var {
                var,
                negative: !negative,
            },
            Val::Acc { acc, negative } => Val::Acc {
                acc,
                negative: !negative,
            },
        }
    }

    pub(crate) fn shape(self) -> Shape {
        match self {
            Val::One { .. } => Shape::One,
            Val::Const(_) => Shape::Constant,
            Val::Var { .. } | Val::Acc { .. } => Shape::Runtime,
        }
    }

    /// The pending sign and the unsigned leaf.
    fn signed_leaf(self) -> (bool, Operand) {
        match self {
            Val::One { negative } => (negative, Operand::Constant(1.0)),
            Val::Const(value) => (false, Operand::Constant(value)),
            Val::Var { var, negative } => (negative, Operand::Variable(var)),
            Val::Acc { acc, negative } => (negative, Operand::Acc(acc)),
        }
    }

    /// The remainder form, or `None` when a pending sign must first be
    /// materialized.
    pub(crate) fn as_edge_value(self) -> Option<EdgeValue> {
        match self {
            Val::One { negative: false } => Some(EdgeValue::Unit),
            Val::One { negative: true } => Some(EdgeValue::MinusOne),
            Val::Const(value) => Some(EdgeValue::Constant(value)),
            Val::Var {
                var,
                negative: false,
            } => Some(EdgeValue::Variable(var)),
            Val::Acc {
                acc,
                negative: false,
            } => Some(EdgeValue::Acc(acc)),
            Val::Var { negative: true, .. } | Val::Acc { negative: true, .. } => None,
        }
    }
}

/// A value that may still need to be stored in a new accumulated value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Term {
    /// Folded: no operation, no new accumulated value.
    Simple(Val),
    /// An expression with a pending sign; its operations are already
    /// counted in the `OpCounts` handed to the builder.
    Expr { expr: Expr, negative: bool },
}

impl Term {
    fn signed_expr(self) -> (bool, Expr) {
        match self {
            Term::Simple(val) => {
                let (negative, leaf) = val.signed_leaf();
                (negative, Expr::Leaf(leaf))
            }
            Term::Expr { expr, negative } => (negative, expr),
        }
    }
}

/// `a * b` with the folding rules of this module.
pub(crate) fn multiply(a: Val, b: Val, counts: &mut OpCounts) -> Term {
    match (a, b) {
        (Val::One { negative }, other) | (other, Val::One { negative }) => {
            Term::Simple(if negative { other.negated() } else { other })
        }
        (Val::Const(x), Val::Const(y)) => Term::Simple(Val::constant(x * y)),
        _ => {
            let (negative_a, leaf_a) = a.signed_leaf();
            let (negative_b, leaf_b) = b.signed_leaf();
            counts.multiplications += 1;
            Term::Expr {
                expr: Expr::Mul(Box::new(Expr::Leaf(leaf_a)), Box::new(Expr::Leaf(leaf_b))),
                negative: negative_a != negative_b,
            }
        }
    }
}

/// `first + second` with the folding rules of this module; `first` stays
/// on the left of the emitted sum unless only it is negative.
pub(crate) fn add(first: Term, second: Term, counts: &mut OpCounts) -> Term {
    if let (Term::Simple(x), Term::Simple(y)) = (&first, &second) {
        if let (Some(x), Some(y)) = (x.constant_value(), y.constant_value()) {
            return Term::Simple(Val::constant(x + y));
        }
    }
    let (negative_first, first) = first.signed_expr();
    let (negative_second, second) = second.signed_expr();
    let boxed = |e: Expr| Box::new(e);
    match (negative_first, negative_second) {
        (false, false) | (true, true) => {
            counts.additions += 1;
            Term::Expr {
                expr: Expr::Add(boxed(first), boxed(second)),
                negative: negative_first,
            }
        }
        (false, true) => {
            counts.subtractions += 1;
            Term::Expr {
                expr: Expr::Sub(boxed(first), boxed(second)),
                negative: false,
            }
        }
        (true, false) => {
            counts.subtractions += 1;
            Term::Expr {
                expr: Expr::Sub(boxed(second), boxed(first)),
                negative: false,
            }
        }
    }
}

/// `a / b` with the folding rules of this module (a unit divisor is a
/// sign, constants fold).
pub(crate) fn divide(a: Val, b: Val, counts: &mut OpCounts) -> Term {
    match (a, b) {
        (other, Val::One { negative }) => {
            Term::Simple(if negative { other.negated() } else { other })
        }
        (Val::One { negative }, Val::Const(y)) => {
            Term::Simple(Val::constant(if negative { -1.0 / y } else { 1.0 / y }))
        }
        (Val::Const(x), Val::Const(y)) => Term::Simple(Val::constant(x / y)),
        _ => {
            let (negative_a, leaf_a) = a.signed_leaf();
            let (negative_b, leaf_b) = b.signed_leaf();
            counts.divisions += 1;
            Term::Expr {
                expr: Expr::Div(Box::new(Expr::Leaf(leaf_a)), Box::new(Expr::Leaf(leaf_b))),
                negative: negative_a != negative_b,
            }
        }
    }
}

impl Term {
    /// The same term with its sign flipped (no operation).
    pub(crate) fn negated(self) -> Term {
        match self {
            Term::Simple(val) => Term::Simple(val.negated()),
            Term::Expr { expr, negative } => Term::Expr {
                expr,
                negative: !negative,
            },
        }
    }
}

/// The shape of `a * b` without building anything.
pub(crate) fn product_shape(a: Val, b: Val) -> Preview {
    match (a, b) {
        (Val::One { negative }, other) | (other, Val::One { negative }) => {
            Preview::Known(if negative { other.negated() } else { other })
        }
        (Val::Const(x), Val::Const(y)) => Preview::Known(Val::constant(x * y)),
        _ => Preview::Runtime,
    }
}

/// The shape of `existing + a * b` without building anything.
pub(crate) fn absorb_shape(existing: Val, a: Val, b: Val) -> Shape {
    match product_shape(a, b) {
        Preview::Known(product) => match (existing.constant_value(), product.constant_value()) {
            (Some(x), Some(y)) => Val::constant(x + y).shape(),
            _ => Shape::Runtime,
        },
        Preview::Runtime => Shape::Runtime,
    }
}

/// Result of a shape preview: a folded value or "needs a run-time
/// operation".
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Preview {
    Known(Val),
    Runtime,
}

impl Preview {
    pub(crate) fn shape(self) -> Shape {
        match self {
            Preview::Known(val) => val.shape(),
            Preview::Runtime => Shape::Runtime,
        }
    }
}

/// Negates an expression for storage, preferring to swap a subtraction
/// over adding a unary minus.
pub(crate) fn negate_expr(expr: Expr, counts: &mut OpCounts) -> Expr {
    match expr {
        Expr::Sub(left, right) => Expr::Sub(right, left),
        other => {
            counts.negations += 1;
            Expr::Neg(Box::new(other))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(id: u32) -> Val {
        Val::Var {
            var: VarId(id),
            negative: false,
        }
    }

    #[test]
    fn unit_and_minus_one_factors_are_free() {
        let mut counts = OpCounts::default();
        let minus = Val::One { negative: true };
        assert_eq!(
            multiply(minus, var(1), &mut counts),
            Term::Simple(var(1).negated())
        );
        assert_eq!(
            multiply(minus, minus, &mut counts),
            Term::Simple(Val::One { negative: false })
        );
        assert_eq!(
            multiply(Val::Const(2.0), Val::Const(0.5), &mut counts),
            Term::Simple(Val::One { negative: false })
        );
        assert_eq!(counts, OpCounts::default());
    }

    #[test]
    fn negative_summand_becomes_subtraction() {
        let mut counts = OpCounts::default();
        let product = multiply(var(1), var(2).negated(), &mut counts);
        let sum = add(Term::Simple(var(3)), product, &mut counts);
        let Term::Expr { expr, negative } = sum else {
            panic!("expected an expression")
        };
        assert!(!negative);
        assert_eq!(expr.to_string(), "v3 - v1 * v2");
        assert_eq!(counts.multiplications, 1);
        assert_eq!(counts.subtractions, 1);
        assert_eq!(expr.operation_counts(), counts);
    }

    #[test]
    fn constants_fold_in_sums() {
        let mut counts = OpCounts::default();
        let sum = add(
            Term::Simple(Val::Const(3.0)),
            Term::Simple(Val::One { negative: true }),
            &mut counts,
        );
        assert_eq!(sum, Term::Simple(Val::Const(2.0)));
        assert_eq!(counts, OpCounts::default());
    }

    #[test]
    fn render_parenthesizes_only_where_needed() {
        let leaf = |id| Box::new(Expr::Leaf(Operand::Variable(VarId(id))));
        let e = Expr::Mul(Box::new(Expr::Sub(leaf(1), leaf(2))), leaf(3));
        assert_eq!(e.to_string(), "(v1 - v2) * v3");
        let e = Expr::Sub(leaf(1), Box::new(Expr::Add(leaf(2), leaf(3))));
        assert_eq!(e.to_string(), "v1 - (v2 + v3)");
    }
}
