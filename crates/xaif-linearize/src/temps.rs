//! Temporaries and new statements of the generated code.
//!
//! Every temporary is a new symbol of the routine's scope, `temp="1"`, named
//! `<prefix>lin_N`, `<prefix>aux_N`, `<prefix>acc_N`, `<prefix>prp_N` or
//! `<prefix>tyc_N` with program-wide counters (the reference engine's
//! names), typed and shaped like the value it holds. A temporary whose
//! extents are not known at transformation time has no bounds and is
//! allocated with `oad_AllocateMatching` before its assignment.

use xaif_model::{
    build::{assignment, inlinable_call},
    ArgValue, Attrs, Expr, Program, ScopeId, Stmt, StmtId, VarRef,
};

use crate::context::{Shape, ValueType};

/// Counters and naming of temporaries and generated statement ids.
#[derive(Clone, Debug, Default)]
pub struct Names {
    prefix: String,
    counters: [usize; 6],
    statements: usize,
}

/// The kinds of temporaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TempKind {
    /// A local partial derivative.
    Lin,
    /// A subexpression a partial reads.
    Aux,
    /// An accumulated Jacobian entry.
    Acc,
    /// A saved or intermediate derivative.
    Prp,
    /// An argument converted between active and passive.
    Tyc,
    /// A control flow value (loop counter, branch marker, popped value).
    Symbol,
}

impl TempKind {
    fn index(self) -> usize {
        self as usize
    }

    fn stem(self) -> &'static str {
        match self {
            TempKind::Lin => "lin",
            TempKind::Aux => "aux",
            TempKind::Acc => "acc",
            TempKind::Prp => "prp",
            TempKind::Tyc => "tyc",
            TempKind::Symbol => "Symbol",
        }
    }
}

impl Names {
    /// Names with the program's `prefix` (`OpenAD_`).
    pub fn new(prefix: &str) -> Self {
        Names {
            prefix: prefix.to_string(),
            ..Default::default()
        }
    }

    /// A fresh temporary name of `kind`.
    pub fn next(&mut self, kind: TempKind) -> String {
        let n = self.counters[kind.index()];
        self.counters[kind.index()] += 1;
        let stem = kind.stem();
        let mut name = String::with_capacity(self.prefix.len() + stem.len() + 12);
        name.push_str(&self.prefix);
        name.push_str(stem);
        name.push('_');
        push_decimal(&mut name, n as u64);
        name
    }

    /// A fresh statement id `_<stem>_N`.
    pub fn statement(&mut self, stem: &str) -> String {
        self.statements += 1;
        let mut id = String::with_capacity(stem.len() + 12);
        id.push('_');
        id.push_str(stem);
        id.push('_');
        push_decimal(&mut id, self.statements as u64);
        id
    }
}

/// Appends `n` in decimal (names are made by the thousand; `format!`
/// cost a few percent of a transformation).
fn push_decimal(s: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        s.push(char::from(d));
    }
}

/// A temporary that was declared.
#[derive(Clone, Debug)]
pub struct Temp {
    /// A reference to it (value part).
    pub var: VarRef,
    /// Whether it needs run-time allocation.
    pub allocatable: bool,
}

/// Declares a temporary in `scope` and returns a reference to it.
pub fn declare(
    out: &mut Program,
    names: &mut Names,
    scope: ScopeId,
    kind: TempKind,
    ty: ValueType,
    shape: &Shape,
    active: bool,
) -> Temp {
    let name = names.next(kind);
    let scope_id = out.scopes[scope]
        .attrs
        .get("vertex_id")
        .unwrap_or("1")
        .to_string();
    let type_name = match ty {
        ValueType::Integer => "integer",
        ValueType::Bool => "bool",
        _ => "real",
    };
    let fe = match ty {
        ValueType::Integer => "I4",
        ValueType::Bool => "L4",
        _ => "F8",
    };
    let attrs = Attrs::from_pairs([
        ("symbol_id", name.as_str()),
        ("kind", "variable"),
        ("type", type_name),
        ("feType", fe),
        ("shape", xaif_model::index::SHAPES[shape.rank.min(7)]),
        ("active", if active { "1" } else { "0" }),
        ("temp", "1"),
    ]);
    let (bounds, allocatable) = match (&shape.extents, shape.rank) {
        (_, 0) => (Vec::new(), false),
        (Some(ext), _) => (
            ext.iter()
                .rev()
                .map(|n| Attrs::new().with("lower", "1").with("upper", n.to_string()))
                .collect(),
            false,
        ),
        (None, _) => (Vec::new(), true),
    };
    out.add_symbol(scope, attrs, bounds);
    let var = VarRef::symbol(
        Attrs::from_pairs([
            ("vertex_id", "1"),
            ("active", if active { "true" } else { "false" }),
            ("deriv", "0"),
        ]),
        &scope_id,
        &name,
    );
    Temp { var, allocatable }
}

/// The attributes a `VariableReferenceType` element may carry (an
/// `AssignmentLHS` also has `live`, which other elements must not).
const REFERENCE_ATTRIBUTES: [&str; 6] = [
    "annotation",
    "active",
    "alias",
    "du_ud",
    "deriv",
    "constant",
];

fn reference_attrs(r: &VarRef, with_vertex_id: bool, deriv: bool) -> Attrs {
    let mut attrs = if with_vertex_id {
        Attrs::new().with("vertex_id", r.attrs.get("vertex_id").unwrap_or("1"))
    } else {
        Attrs::new()
    };
    for a in r.attrs.iter() {
        if REFERENCE_ATTRIBUTES.contains(&a.key) {
            attrs.push(a.key, a.value);
        }
    }
    attrs.set("deriv", if deriv { "1" } else { "0" });
    attrs
}

/// A reference to the derivative part of `r`, for propagator operands.
pub fn deriv_ref(r: &VarRef) -> VarRef {
    r.with_attrs(reference_attrs(r, false, true))
}

/// A reference usable as an expression vertex or argument (value part).
pub fn value_ref(r: &VarRef) -> VarRef {
    r.with_attrs(reference_attrs(r, true, false))
}

/// A new scalar integer temporary (a saved or popped index value, an
/// extent).
pub fn integer_temp(out: &mut Program, names: &mut Names, scope: ScopeId) -> VarRef {
    declare(
        out,
        names,
        scope,
        TempKind::Prp,
        ValueType::Integer,
        &Shape::SCALAR,
        false,
    )
    .var
}

/// `temp = rhs` with the statement id `_<stem>_N`.
pub fn set_temp(
    out: &mut Program,
    names: &mut Names,
    stem: &str,
    temp: &VarRef,
    rhs: Expr,
) -> StmtId {
    let id = names.statement(stem);
    let mut lhs = temp.clone();
    lhs.attrs.discard("vertex_id");
    add(out, assignment(&id, lhs, rhs))
}

/// An expression reading temporary `temp` (as a subscript, say).
pub fn read_temp(temp: &VarRef) -> Expr {
    let (scope_id, name) = temp.graph.symbol_ids().unwrap_or(("1", "?"));
    let mut b = xaif_model::ExprBuilder::new();
    b.variable(Attrs::new().with("active", "false"), scope_id, name);
    b.finish()
}

/// Calls `f` on every subscript expression of `r` (index, bound, stride)
/// that is not a constant.
pub fn for_each_variable_subscript(r: &mut VarRef, mut f: impl FnMut(&mut Expr)) {
    for v in &mut r.graph.vertices {
        let xaif_model::RefVertexKind::ArrayElement { triplets } = &mut v.kind else {
            continue;
        };
        for triplet in triplets {
            for e in [&mut triplet.index, &mut triplet.bound, &mut triplet.stride]
                .into_iter()
                .flatten()
            {
                let constant = e.vertices.len() == 1
                    && matches!(e.vertices[0].kind, xaif_model::ExprVertexKind::Constant);
                if !constant {
                    f(e);
                }
            }
        }
    }
}

/// Allocates a new statement in `out`.
pub fn add(out: &mut Program, s: Stmt) -> StmtId {
    out.stmts.alloc(s)
}

/// `temp = rhs`, preceded by `oad_AllocateMatching(temp, like)` when the
/// temporary needs allocation and a reference of the same shape is known.
pub fn assign_temp(
    out: &mut Program,
    names: &mut Names,
    stmts: &mut Vec<StmtId>,
    temp: &Temp,
    rhs: Expr,
    stem: &str,
    like: Option<&VarRef>,
) {
    if temp.allocatable {
        if let Some(like) = like {
            let id = names.statement("allocate");
            stmts.push(add(
                out,
                inlinable_call(
                    "oad_AllocateMatching",
                    &id,
                    vec![
                        ArgValue::Variable(value_ref(&temp.var)),
                        ArgValue::Variable(value_ref(like)),
                    ],
                ),
            ));
        }
    }
    let id = names.statement(stem);
    let mut lhs = temp.var.clone();
    lhs.attrs.discard("vertex_id");
    stmts.push(add(out, assignment(&id, lhs, rhs)));
}

#[cfg(test)]
mod name_tests {
    use super::*;

    /// Names and statement ids are what `format!` wrote, numbers of any
    /// width included.
    #[test]
    fn names_and_statement_ids_count_in_decimal() {
        for n in [
            0u64,
            7,
            9,
            10,
            99,
            100,
            12_345,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut s = String::from("x");
            push_decimal(&mut s, n);
            assert_eq!(s, format!("x{n}"));
        }
        let mut names = Names::new("OpenAD_");
        let first = names.next(TempKind::Lin);
        let second = names.next(TempKind::Lin);
        assert_eq!(
            (first, second),
            (
                format!("OpenAD_{}_0", TempKind::Lin.stem()),
                format!("OpenAD_{}_1", TempKind::Lin.stem())
            )
        );
        assert_eq!(names.statement("convert"), "_convert_1");
        assert_eq!(names.statement("convert"), "_convert_2");
    }
}
