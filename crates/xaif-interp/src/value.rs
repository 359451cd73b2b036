//! Run-time values: scalars of the Fortran types XAIF uses and arrays of
//! them.
//!
//! Expressions evaluate to a [`Value`]; arrays are column-major with their
//! extents, so that element-wise operations and assignments to sections work
//! the way the compiled Fortran does.

use std::rc::Rc;

use smallvec::SmallVec;

/// The element types the interpreter executes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// Double precision real (single precision is double rounded to f32).
    Real,
    /// Integer.
    Int,
    /// Logical.
    Bool,
    /// Character string.
    Str,
}

impl Ty {
    /// The type name used in messages and checkpoint call names.
    pub fn name(self) -> &'static str {
        match self {
            Ty::Real => "real",
            Ty::Int => "integer",
            Ty::Bool => "bool",
            Ty::Str => "string",
        }
    }
}

/// One scalar value.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    /// A real.
    Real(f64),
    /// An integer.
    Int(i64),
    /// A logical.
    Bool(bool),
    /// A string.
    Str(Rc<str>),
}

impl Scalar {
    /// The scalar's type.
    pub fn ty(&self) -> Ty {
        match self {
            Scalar::Real(_) => Ty::Real,
            Scalar::Int(_) => Ty::Int,
            Scalar::Bool(_) => Ty::Bool,
            Scalar::Str(_) => Ty::Str,
        }
    }

    /// The value as a real (integers convert, logicals are 0/1).
    pub fn as_real(&self) -> Option<f64> {
        match self {
            Scalar::Real(x) => Some(*x),
            Scalar::Int(i) => Some(*i as f64),
            Scalar::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            Scalar::Str(_) => None,
        }
    }

    /// The value as an integer (reals truncate toward zero, as Fortran's
    /// assignment conversion does; `None` for a real outside the integer
    /// range, which is never saturated).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Scalar::Int(i) => Some(*i),
            Scalar::Real(x) => real_to_int(*x),
            Scalar::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }

    /// The value as a logical (integers: non-zero is true).
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Scalar::Bool(b) => Some(*b),
            Scalar::Int(i) => Some(*i != 0),
            _ => None,
        }
    }

    /// Converts to `ty` as an assignment does.
    pub fn convert(&self, ty: Ty) -> Option<Scalar> {
        Some(match ty {
            Ty::Real => Scalar::Real(self.as_real()?),
            Ty::Int => Scalar::Int(self.as_int()?),
            Ty::Bool => Scalar::Bool(self.as_bool()?),
            Ty::Str => match self {
                Scalar::Str(s) => Scalar::Str(s.clone()),
                _ => return None,
            },
        })
    }
}

/// `x` truncated toward zero, when that is an `i64` (finite and in
/// -2^63..2^63).
pub fn real_to_int(x: f64) -> Option<i64> {
    // 2^63 is exact in f64; every f64 below it truncates into range.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    let t = x.trunc();
    (t.is_finite() && (-LIMIT..LIMIT).contains(&t)).then_some(t as i64)
}

/// Array extents, first dimension first.
pub type Shape = SmallVec<[usize; 2]>;

/// A value: a scalar or a column-major array.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A scalar.
    Scalar(Scalar),
    /// An array with its extents.
    Array {
        /// Extents, first dimension first.
        shape: Shape,
        /// Elements in column-major order.
        data: Vec<Scalar>,
    },
}

impl Value {
    /// A real scalar.
    pub fn real(x: f64) -> Self {
        Value::Scalar(Scalar::Real(x))
    }

    /// An integer scalar.
    pub fn int(i: i64) -> Self {
        Value::Scalar(Scalar::Int(i))
    }

    /// A logical scalar.
    pub fn bool(b: bool) -> Self {
        Value::Scalar(Scalar::Bool(b))
    }

    /// Number of elements (1 for a scalar).
    pub fn len(&self) -> usize {
        match self {
            Value::Scalar(_) => 1,
            Value::Array { data, .. } => data.len(),
        }
    }

    /// Whether the value has no elements (an empty array).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The scalar, when the value is one (or a one-element array, which
    /// Fortran intrinsics like `maxloc` return where a scalar is meant).
    pub fn scalar(&self) -> Option<&Scalar> {
        match self {
            Value::Scalar(s) => Some(s),
            Value::Array { data, .. } if data.len() == 1 => data.first(),
            Value::Array { .. } => None,
        }
    }

    /// Element `i` in column-major order; scalars broadcast.
    pub fn elem(&self, i: usize) -> &Scalar {
        match self {
            Value::Scalar(s) => s,
            Value::Array { data, .. } => &data[i],
        }
    }

    /// The extents (empty for a scalar).
    pub fn shape(&self) -> Shape {
        match self {
            Value::Scalar(_) => Shape::new(),
            Value::Array { shape, .. } => shape.clone(),
        }
    }
}
