//! The intrinsics of the inlinable catalogue and XAIF's boolean operations,
//! with Fortran semantics.
//!
//! Elemental operations apply element by element with scalars broadcast;
//! integer arithmetic stays integer (division truncates toward zero, `**`
//! with an integer exponent is repeated multiplication, as compiled Fortran
//! does); `real` rounds to single precision; reductions and transformations
//! (`sum`, `maxval`, `maxloc`, `transpose`, `reshape`, `shape`) work on whole
//! arrays.

use std::rc::Rc;

use crate::compile::Op;
use crate::error::ErrorKind;
use crate::value::{Scalar, Shape, Value};

type R<T> = Result<T, ErrorKind>;

/// Number of floating-point operations one element of `op` costs, for the
/// operation counts of a run (0 for non-arithmetic operations).
pub fn flops(op: Op) -> u64 {
    match op {
        Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Neg | Op::Pow => 1,
        Op::Sin
        | Op::Cos
        | Op::Tan
        | Op::Asin
        | Op::Acos
        | Op::Atan
        | Op::Sinh
        | Op::Cosh
        | Op::Tanh
        | Op::Exp
        | Op::Log
        | Op::Log10
        | Op::Sqrt
        | Op::Abs
        | Op::Sign
        | Op::Mod
        | Op::Min
        | Op::Max => 1,
        _ => 0,
    }
}

/// Applies `op` to evaluated arguments.
pub fn apply(op: Op, args: &[Value]) -> R<Value> {
    match op {
        Op::MinVal | Op::MaxVal | Op::Sum => reduce(op, one(op, args)?),
        Op::MaxLoc | Op::MinLoc => location(op, one(op, args)?),
        Op::Transpose => transpose(one(op, args)?),
        Op::Reshape => reshape(args),
        Op::Shape => {
            let a = one(op, args)?;
            let shape = a.shape();
            Ok(Value::Array {
                shape: Shape::from_slice(&[shape.len()]),
                data: shape.iter().map(|&n| Scalar::Int(n as i64)).collect(),
            })
        }
        _ => elemental(op, args),
    }
}

fn one(op: Op, args: &[Value]) -> R<&Value> {
    match args {
        [a] => Ok(a),
        _ => Err(ErrorKind::Unsupported(format!(
            "{op:?} with {} arguments (DIM and MASK arguments are not supported)",
            args.len()
        ))),
    }
}

fn elemental(op: Op, args: &[Value]) -> R<Value> {
    let arity = match op {
        Op::Neg
        | Op::Sin
        | Op::Cos
        | Op::Tan
        | Op::Asin
        | Op::Acos
        | Op::Atan
        | Op::Sinh
        | Op::Cosh
        | Op::Tanh
        | Op::Exp
        | Op::Log
        | Op::Log10
        | Op::Sqrt
        | Op::Abs
        | Op::Int
        | Op::Nint
        | Op::Real
        | Op::Not
        | Op::Trim => 1,
        _ => 2,
    };
    if args.len() != arity {
        return Err(ErrorKind::Unsupported(format!(
            "{op:?} with {} arguments (expected {arity})",
            args.len()
        )));
    }
    // Result shape: the shape of any array argument; all arrays conform.
    let mut shape: Option<Shape> = None;
    let mut len = 1;
    for a in args {
        if let Value::Array { shape: s, data } = a {
            match &shape {
                None => {
                    shape = Some(s.clone());
                    len = data.len();
                }
                Some(_) if data.len() != len => {
                    return Err(ErrorKind::Shape(format!(
                        "{op:?} of arrays with {len} and {} elements",
                        data.len()
                    )))
                }
                Some(_) => {}
            }
        }
    }
    match shape {
        None => Ok(Value::Scalar(scalar(op, args.iter().map(|a| a.elem(0)))?)),
        Some(shape) => {
            let mut data = Vec::with_capacity(len);
            for i in 0..len {
                data.push(scalar(op, args.iter().map(|a| a.elem(i)))?);
            }
            Ok(Value::Array { shape, data })
        }
    }
}

fn scalar<'a>(op: Op, mut args: impl Iterator<Item = &'a Scalar>) -> R<Scalar> {
    let a = args.next().expect("arity checked");
    let b = args.next();
    match b {
        None => unary(op, a),
        Some(b) => binary(op, a, b),
    }
}

fn real(s: &Scalar, op: Op) -> R<f64> {
    s.as_real()
        .ok_or_else(|| ErrorKind::Type(format!("{op:?} of a {}", s.ty().name())))
}

fn boolean(s: &Scalar, op: Op) -> R<bool> {
    match s {
        Scalar::Bool(b) => Ok(*b),
        _ => Err(ErrorKind::Type(format!("{op:?} of a {}", s.ty().name()))),
    }
}

fn unary(op: Op, a: &Scalar) -> R<Scalar> {
    if let Scalar::Int(i) = a {
        let over = || ErrorKind::IntegerOverflow(format!("{op:?} of {i}"));
        match op {
            Op::Neg => return i.checked_neg().map(Scalar::Int).ok_or_else(over),
            Op::Abs => return i.checked_abs().map(Scalar::Int).ok_or_else(over),
            Op::Int | Op::Nint => return Ok(Scalar::Int(*i)),
            _ => {}
        }
    }
    Ok(match op {
        Op::Not => Scalar::Bool(!boolean(a, op)?),
        Op::Trim => match a {
            Scalar::Str(s) => Scalar::Str(Rc::from(s.trim_end_matches(' '))),
            _ => return Err(ErrorKind::Type(format!("trim of a {}", a.ty().name()))),
        },
        Op::Int => {
            let x = real(a, op)?;
            Scalar::Int(crate::value::real_to_int(x).ok_or_else(|| {
                ErrorKind::IntegerOverflow(format!("int of {x} is out of the integer range"))
            })?)
        }
        Op::Nint => {
            let x = real(a, op)?;
            Scalar::Int(crate::value::real_to_int(x.round()).ok_or_else(|| {
                ErrorKind::IntegerOverflow(format!("nint of {x} is out of the integer range"))
            })?)
        }
        Op::Real => Scalar::Real(real(a, op)? as f32 as f64),
        _ => {
            let x = real(a, op)?;
            Scalar::Real(match op {
                Op::Neg => -x,
                Op::Sin => x.sin(),
                Op::Cos => x.cos(),
                Op::Tan => x.tan(),
                Op::Asin => x.asin(),
                Op::Acos => x.acos(),
                Op::Atan => x.atan(),
                Op::Sinh => x.sinh(),
                Op::Cosh => x.cosh(),
                Op::Tanh => x.tanh(),
                Op::Exp => x.exp(),
                Op::Log => x.ln(),
                Op::Log10 => x.log10(),
                Op::Sqrt => x.sqrt(),
                Op::Abs => x.abs(),
                _ => return Err(ErrorKind::Unsupported(format!("{op:?} with one argument"))),
            })
        }
    })
}

/// `x ** n` for an integer exponent, by repeated squaring as compiled code
/// does (gfortran expands constant exponents the same way).
pub fn powi(x: f64, n: i64) -> f64 {
    if n < 0 {
        return 1.0 / powi(x, n.checked_neg().unwrap_or(i64::MAX));
    }
    let (mut base, mut e, mut acc) = (x, n as u64, 1.0);
    while e > 0 {
        if e & 1 == 1 {
            acc *= base;
        }
        e >>= 1;
        if e > 0 {
            base *= base;
        }
    }
    acc
}

fn int_pow(b: i64, e: i64) -> Option<i64> {
    if e < 0 || (-1..=1).contains(&b) {
        return Some(match b {
            1 => 1,
            -1 => {
                if e % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            0 if e == 0 => 1,
            _ => 0,
        });
    }
    b.checked_pow(u32::try_from(e).ok()?)
}

fn str_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    // Fortran compares as if the shorter string were padded with blanks.
    a.trim_end_matches(' ').cmp(b.trim_end_matches(' '))
}

fn binary(op: Op, a: &Scalar, b: &Scalar) -> R<Scalar> {
    use std::cmp::Ordering;
    // Logical and string operations.
    match op {
        Op::And => return Ok(Scalar::Bool(boolean(a, op)? && boolean(b, op)?)),
        Op::Or => return Ok(Scalar::Bool(boolean(a, op)? || boolean(b, op)?)),
        Op::Xor => return Ok(Scalar::Bool(boolean(a, op)? != boolean(b, op)?)),
        Op::StrEq | Op::StrNe | Op::StrGe | Op::StrLe | Op::StrLt => {
            let (Scalar::Str(x), Scalar::Str(y)) = (a, b) else {
                return Err(ErrorKind::Type(format!("{op:?} of non-strings")));
            };
            let ord = str_cmp(x, y);
            return Ok(Scalar::Bool(match op {
                Op::StrEq => ord == Ordering::Equal,
                Op::StrNe => ord != Ordering::Equal,
                Op::StrGe => ord != Ordering::Less,
                Op::StrLe => ord != Ordering::Greater,
                _ => ord == Ordering::Less,
            }));
        }
        _ => {}
    }
    if matches!(op, Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge) {
        let ord = match (a, b) {
            (Scalar::Int(x), Scalar::Int(y)) => Some(x.cmp(y)),
            (Scalar::Bool(x), Scalar::Bool(y)) => Some(x.cmp(y)),
            (Scalar::Str(x), Scalar::Str(y)) => Some(str_cmp(x, y)),
            _ => real(a, op)?.partial_cmp(&real(b, op)?),
        };
        return Ok(Scalar::Bool(match (op, ord) {
            (Op::Ne, None) => true,
            (_, None) => false,
            (Op::Eq, Some(o)) => o == Ordering::Equal,
            (Op::Ne, Some(o)) => o != Ordering::Equal,
            (Op::Lt, Some(o)) => o == Ordering::Less,
            (Op::Le, Some(o)) => o != Ordering::Greater,
            (Op::Gt, Some(o)) => o == Ordering::Greater,
            (_, Some(o)) => o != Ordering::Less,
        }));
    }
    if let (Scalar::Int(x), Scalar::Int(y)) = (a, b) {
        let (x, y) = (*x, *y);
        // Checked: an overflow is an error, never a wrapped value.
        let over = || ErrorKind::IntegerOverflow(format!("{op:?} of {x} and {y}"));
        return Ok(Scalar::Int(match op {
            Op::Add => x.checked_add(y).ok_or_else(over)?,
            Op::Sub => x.checked_sub(y).ok_or_else(over)?,
            Op::Mul => x.checked_mul(y).ok_or_else(over)?,
            Op::Div => {
                if y == 0 {
                    return Err(ErrorKind::Type("integer division by zero".into()));
                }
                x.checked_div(y).ok_or_else(over)?
            }
            Op::Mod => {
                if y == 0 {
                    return Err(ErrorKind::Type("integer MOD by zero".into()));
                }
                x.wrapping_rem(y)
            }
            Op::Pow => int_pow(x, y).ok_or_else(over)?,
            Op::Min => x.min(y),
            Op::Max => x.max(y),
            Op::Sign => {
                let a = x.checked_abs().ok_or_else(over)?;
                if y >= 0 {
                    a
                } else {
                    -a
                }
            }
            _ => return Err(ErrorKind::Unsupported(format!("{op:?} with two arguments"))),
        }));
    }
    if op == Op::Pow {
        if let Scalar::Int(n) = b {
            return Ok(Scalar::Real(powi(real(a, op)?, *n)));
        }
    }
    let (x, y) = (real(a, op)?, real(b, op)?);
    Ok(Scalar::Real(match op {
        Op::Add => x + y,
        Op::Sub => x - y,
        Op::Mul => x * y,
        Op::Div => x / y,
        Op::Pow => x.powf(y),
        Op::Mod => x % y,
        Op::Min => {
            if y < x {
                y
            } else {
                x
            }
        }
        Op::Max => {
            if y > x {
                y
            } else {
                x
            }
        }
        Op::Sign => {
            if y.is_sign_negative() {
                -x.abs()
            } else {
                x.abs()
            }
        }
        _ => return Err(ErrorKind::Unsupported(format!("{op:?} with two arguments"))),
    }))
}

fn elements(v: &Value) -> &[Scalar] {
    match v {
        Value::Scalar(s) => std::slice::from_ref(s),
        Value::Array { data, .. } => data,
    }
}

fn reduce(op: Op, a: &Value) -> R<Value> {
    let data = elements(a);
    let all_int = data.iter().all(|s| matches!(s, Scalar::Int(_)));
    if all_int && !data.is_empty() {
        let ints: Vec<i64> = data.iter().filter_map(Scalar::as_int).collect();
        return Ok(Value::int(match op {
            Op::Sum => ints
                .iter()
                .try_fold(0i64, |s, &x| s.checked_add(x))
                .ok_or_else(|| ErrorKind::IntegerOverflow("sum of an integer array".into()))?,
            Op::MaxVal => *ints.iter().max().expect("non-empty"),
            _ => *ints.iter().min().expect("non-empty"),
        }));
    }
    let mut reals = Vec::with_capacity(data.len());
    for s in data {
        reals.push(real(s, op)?);
    }
    Ok(Value::real(match op {
        Op::Sum => reals.iter().sum(),
        Op::MaxVal => reals.iter().copied().fold(f64::MIN, f64::max),
        _ => reals.iter().copied().fold(f64::MAX, f64::min),
    }))
}

fn location(op: Op, a: &Value) -> R<Value> {
    let data = elements(a);
    let shape = a.shape();
    let mut best: Option<(usize, f64)> = None;
    for (k, s) in data.iter().enumerate() {
        let x = real(s, op)?;
        let better = match best {
            None => true,
            Some((_, b)) => {
                if op == Op::MaxLoc {
                    x > b
                } else {
                    x < b
                }
            }
        };
        if better {
            best = Some((k, x));
        }
    }
    let rank = shape.len().max(1);
    let mut index = vec![0i64; rank];
    if let Some((mut k, _)) = best {
        for (d, slot) in index.iter_mut().enumerate() {
            let n = shape.get(d).copied().unwrap_or(1).max(1);
            *slot = (k % n) as i64 + 1;
            k /= n;
        }
    }
    Ok(Value::Array {
        shape: Shape::from_slice(&[rank]),
        data: index.into_iter().map(Scalar::Int).collect(),
    })
}

fn transpose(a: &Value) -> R<Value> {
    let Value::Array { shape, data } = a else {
        return Err(ErrorKind::Shape("transpose of a scalar".into()));
    };
    if shape.len() != 2 {
        return Err(ErrorKind::Shape(format!(
            "transpose of a rank-{} array",
            shape.len()
        )));
    }
    let (r, c) = (shape[0], shape[1]);
    let mut out = Vec::with_capacity(data.len());
    for i in 0..r {
        for j in 0..c {
            out.push(data[i + j * r].clone());
        }
    }
    Ok(Value::Array {
        shape: Shape::from_slice(&[c, r]),
        data: out,
    })
}

fn reshape(args: &[Value]) -> R<Value> {
    let [a, s] = args else {
        return Err(ErrorKind::Unsupported(format!(
            "reshape with {} arguments",
            args.len()
        )));
    };
    let mut shape = Shape::new();
    for e in elements(s) {
        let n = e
            .as_int()
            .filter(|n| *n >= 0)
            .ok_or_else(|| ErrorKind::Type("reshape with a bad shape".into()))?;
        shape.push(n as usize);
    }
    let data = elements(a).to_vec();
    let count = shape.iter().try_fold(1usize, |p, &n| p.checked_mul(n));
    if count != Some(data.len()) {
        return Err(ErrorKind::Shape(format!(
            "reshape of {} elements to {:?}",
            data.len(),
            shape
        )));
    }
    Ok(Value::Array { shape, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(x: f64) -> Value {
        Value::real(x)
    }
    fn i(x: i64) -> Value {
        Value::int(x)
    }
    fn arr(xs: &[f64]) -> Value {
        Value::Array {
            shape: Shape::from_slice(&[xs.len()]),
            data: xs.iter().map(|x| Scalar::Real(*x)).collect(),
        }
    }

    #[test]
    fn integer_arithmetic_stays_integer() {
        assert_eq!(apply(Op::Div, &[i(7), i(2)]).unwrap(), i(3));
        assert_eq!(apply(Op::Div, &[i(-7), i(2)]).unwrap(), i(-3));
        assert_eq!(apply(Op::Mod, &[i(-7), i(2)]).unwrap(), i(-1));
        assert_eq!(apply(Op::Pow, &[i(2), i(10)]).unwrap(), i(1024));
        assert_eq!(apply(Op::Pow, &[i(2), i(-1)]).unwrap(), i(0));
        assert!(apply(Op::Div, &[i(1), i(0)]).is_err());
        assert_eq!(apply(Op::Add, &[i(1), r(0.5)]).unwrap(), r(1.5));
    }

    #[test]
    fn real_intrinsics_follow_fortran() {
        assert_eq!(apply(Op::Pow, &[r(1.5), i(3)]).unwrap(), r(1.5 * 1.5 * 1.5));
        assert_eq!(apply(Op::Pow, &[r(2.0), i(-2)]).unwrap(), r(0.25));
        assert_eq!(apply(Op::Sign, &[r(3.0), r(-0.0)]).unwrap(), r(-3.0));
        assert_eq!(apply(Op::Sign, &[r(-3.0), r(2.0)]).unwrap(), r(3.0));
        assert_eq!(apply(Op::Sign, &[i(-3), i(0)]).unwrap(), i(3));
        assert_eq!(apply(Op::Mod, &[r(-7.5), r(2.0)]).unwrap(), r(-1.5));
        assert_eq!(apply(Op::Int, &[r(-2.7)]).unwrap(), i(-2));
        assert_eq!(apply(Op::Nint, &[r(2.5)]).unwrap(), i(3));
        assert_eq!(apply(Op::Nint, &[r(-2.5)]).unwrap(), i(-3));
        assert_eq!(apply(Op::Real, &[r(0.1)]).unwrap(), r(0.1f32 as f64));
        assert_eq!(apply(Op::Min, &[i(2), r(1.5)]).unwrap(), r(1.5));
        assert_eq!(apply(Op::Max, &[i(2), i(5)]).unwrap(), i(5));
        assert_eq!(apply(Op::Abs, &[i(-4)]).unwrap(), i(4));
        assert!(apply(Op::Int, &[r(f64::NAN)]).is_err());
    }

    #[test]
    fn comparisons_and_logic() {
        assert_eq!(apply(Op::Le, &[i(2), r(2.0)]).unwrap(), Value::bool(true));
        assert_eq!(
            apply(Op::Ne, &[r(f64::NAN), r(f64::NAN)]).unwrap(),
            Value::bool(true)
        );
        assert_eq!(
            apply(Op::And, &[Value::bool(true), Value::bool(false)]).unwrap(),
            Value::bool(false)
        );
        assert_eq!(
            apply(Op::Not, &[Value::bool(false)]).unwrap(),
            Value::bool(true)
        );
        let s = |x: &str| Value::Scalar(Scalar::Str(Rc::from(x)));
        assert_eq!(
            apply(Op::StrEq, &[s("ab"), s("ab  ")]).unwrap(),
            Value::bool(true)
        );
        assert_eq!(
            apply(Op::StrLt, &[s("ab"), s("b")]).unwrap(),
            Value::bool(true)
        );
        assert!(apply(Op::And, &[i(1), i(0)]).is_err());
    }

    #[test]
    fn elemental_operations_broadcast_and_check_shapes() {
        assert_eq!(
            apply(Op::Mul, &[arr(&[1.0, 2.0]), r(3.0)]).unwrap(),
            arr(&[3.0, 6.0])
        );
        assert_eq!(apply(Op::Sin, &[arr(&[0.0])]).unwrap(), arr(&[0.0]));
        assert!(apply(Op::Add, &[arr(&[1.0, 2.0]), arr(&[1.0])]).is_err());
    }

    #[test]
    fn reductions_and_transformations() {
        assert_eq!(apply(Op::Sum, &[arr(&[1.0, 2.0, 3.5])]).unwrap(), r(6.5));
        assert_eq!(apply(Op::MaxVal, &[arr(&[1.0, 4.0, 3.5])]).unwrap(), r(4.0));
        assert_eq!(
            apply(Op::MinVal, &[arr(&[1.0, 4.0, -3.5])]).unwrap(),
            r(-3.5)
        );
        let loc = apply(Op::MaxLoc, &[arr(&[1.0, 4.0, 3.5])]).unwrap();
        assert_eq!(loc.scalar(), Some(&Scalar::Int(2)));
        let m = Value::Array {
            shape: Shape::from_slice(&[2, 3]),
            data: (1..=6).map(|k| Scalar::Real(k as f64)).collect(),
        };
        let t = apply(Op::Transpose, std::slice::from_ref(&m)).unwrap();
        assert_eq!(t.shape().as_slice(), &[3, 2]);
        assert_eq!(t.elem(1), &Scalar::Real(3.0));
        let shape = Value::Array {
            shape: Shape::from_slice(&[2]),
            data: vec![Scalar::Int(3), Scalar::Int(2)],
        };
        let re = apply(Op::Reshape, &[m.clone(), shape]).unwrap();
        assert_eq!(re.shape().as_slice(), &[3, 2]);
        assert_eq!(apply(Op::Shape, &[m]).unwrap().elem(1), &Scalar::Int(3));
    }

    #[test]
    fn powi_matches_repeated_multiplication() {
        let x = 1.1;
        // Repeated squaring: x * ((x*x) * (x*x)).
        assert_eq!(powi(x, 5), x * ((x * x) * (x * x)));
        assert_eq!(powi(x, 0), 1.0);
    }
}
