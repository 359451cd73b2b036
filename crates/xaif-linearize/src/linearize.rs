//! Linearization of one assignment: which subexpressions are active, the
//! local partial derivative on every edge from an active argument to its
//! operation, and which subexpressions must be named by temporaries because
//! a partial reads them.
//!
//! Partials come from the inlinable intrinsics catalogue. A partial that is
//! `linear_one` or `linear_minus_one` is the constant ±1; one that reduces
//! to a constant (`2.0 * x` with respect to `x`) is that constant; any other
//! is an instance of the catalogue's expression, evaluated into a `lin`
//! temporary before the statement. When a partial reads the operation's
//! result or a non-leaf active argument, that subexpression is first
//! assigned to an `aux` temporary and the statement reads the temporary.

use xaif_model::{Attrs, Expr, ExprBuilder, ExprVertexKind, VarRef};

use crate::catalogue::{Catalogue, PartialKind, TNode, Template};
use crate::context::Ctx;
use crate::dag::{Dag, Node};

/// The local partial on one edge.
#[derive(Clone, Debug, PartialEq)]
pub enum EdgePartial {
    /// +1.
    Unit,
    /// -1.
    MinusOne,
    /// A constant.
    Constant(f64),
    /// The catalogue expression `template` for the operation `op`.
    Instance {
        /// The operation node.
        op: usize,
        /// The partial's template.
        template: Template,
    },
}

/// An edge of the statement's local graph: from an active argument node to
/// the operation node that uses it.
#[derive(Clone, Debug, PartialEq)]
pub struct LinEdge {
    /// The argument node.
    pub from: usize,
    /// The operation node.
    pub to: usize,
    /// The local partial.
    pub partial: EdgePartial,
}

/// A linearized assignment.
#[derive(Clone, Debug)]
pub struct LinStmt {
    /// The right-hand side.
    pub dag: Dag,
    /// Whether each node carries a derivative.
    pub active: Vec<bool>,
    /// The local partials.
    pub edges: Vec<LinEdge>,
    /// Operation nodes that partials read, in evaluation order; each gets
    /// an `aux` temporary.
    pub aux: Vec<usize>,
}

/// Why an assignment cannot be linearized.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LinearizeError {
    /// An operation on active values that the catalogue does not define.
    #[error("intrinsic `{0}` is applied to active values but is not in the inlinable catalogue")]
    NotInCatalogue(String),
    /// A construct whose derivative the engine cannot form.
    #[error("cannot differentiate {0}")]
    Unsupported(String),
}

/// Linearizes a right-hand side.
pub fn linearize(
    ctx: &Ctx<'_>,
    catalogue: &Catalogue,
    rhs: &Expr,
) -> Result<LinStmt, LinearizeError> {
    let dag = Dag::from_expr(rhs)
        .ok_or_else(|| LinearizeError::Unsupported("an empty expression".into()))?;
    let order = dag.postorder(dag.root);
    let mut active = vec![false; dag.nodes.len()];
    let mut edges = Vec::new();
    let mut needs_aux = vec![false; dag.nodes.len()];
    let mut complex = vec![false; dag.nodes.len()];
    for &n in &order {
        match &dag.nodes[n] {
            Node::Var(r) => {
                active[n] = !r.attrs.flag("deriv", false) && ctx.ref_active(&r.graph);
                complex[n] = ctx.ref_complex(&r.graph);
            }
            Node::Const(attrs) => complex[n] = attrs.get("type") == Some("complex"),
            Node::Other(v) => {
                if let ExprVertexKind::FunctionCall(args) = &v.kind {
                    if args.iter().any(|a| ctx.ref_active(&a.graph)) {
                        return Err(LinearizeError::Unsupported(format!(
                            "the function call `{}` on active arguments",
                            v.attrs.get("symbol_id").unwrap_or("?")
                        )));
                    }
                }
            }
            Node::Op {
                attrs,
                boolean,
                args,
            } => {
                let name = attrs.get("name").unwrap_or("");
                complex[n] = !*boolean && complex_valued(name, args.iter().map(|&a| complex[a]));
                if *boolean || !args.iter().any(|&a| active[a]) {
                    continue;
                }
                let intrinsic = catalogue
                    .get(name)
                    .ok_or_else(|| LinearizeError::NotInCatalogue(name.to_string()))?;
                // The gate checks every use against the catalogue
                // (`Catalogue::validate_program`); this keeps a program that
                // skipped it from reaching past the operand list.
                if args.len() > intrinsic.arity {
                    return Err(LinearizeError::Unsupported(format!(
                        "`{name}` with {} arguments (the catalogue has nr_arguments={})",
                        args.len(),
                        intrinsic.arity
                    )));
                }
                for (j, &a) in args.iter().enumerate() {
                    if !active[a] {
                        continue;
                    }
                    let Some(p) = intrinsic.partial(j + 1) else {
                        continue;
                    };
                    let partial = match (p.kind, &p.template) {
                        // The catalogue gives these no partial although
                        // their real value moves with their real argument:
                        // following it would drop the derivative, silently.
                        (PartialKind::Passive, _) if drops_derivative(name).is_some() => {
                            return Err(LinearizeError::Unsupported(format!(
                                "`{name}` of {} (the intrinsics catalogue declares its partial passive, so its derivative would be dropped; {})",
                                if name == "sum_arr" { "an active array" } else { "an active value" },
                                drops_derivative(name).unwrap_or_default()
                            )));
                        }
                        (PartialKind::Passive, _) => continue,
                        (PartialKind::LinearOne, _) => EdgePartial::Unit,
                        (PartialKind::LinearMinusOne, _) => EdgePartial::MinusOne,
                        (_, None) => continue,
                        (_, Some(t)) => match constant_value(&dag, args, t) {
                            Some(c) => {
                                if c == 1.0 {
                                    EdgePartial::Unit
                                } else if c == -1.0 {
                                    EdgePartial::MinusOne
                                } else {
                                    EdgePartial::Constant(c)
                                }
                            }
                            None => {
                                // Optional trailing arguments may be absent;
                                // a partial reading one cannot be formed.
                                if let Some(k) = t.arguments().into_iter().find(|&k| k > args.len())
                                {
                                    return Err(LinearizeError::Unsupported(format!(
                                        "`{name}` with {} arguments: its partial with respect to argument {} reads argument {k}",
                                        args.len(),
                                        j + 1
                                    )));
                                }
                                for k in t.arguments() {
                                    let node = if k == 0 { n } else { args[k - 1] };
                                    if matches!(dag.nodes[node], Node::Op { .. }) {
                                        needs_aux[node] = true;
                                    }
                                }
                                EdgePartial::Instance {
                                    op: n,
                                    template: t.clone(),
                                }
                            }
                        },
                    };
                    active[n] = true;
                    edges.push(LinEdge {
                        from: a,
                        to: n,
                        partial,
                    });
                }
                // Derivatives are real: a complex value has two parts and
                // the catalogue's partials of `complex_scal`, `imag_scal`
                // and complex arithmetic are those of real arithmetic
                // (imag(complex(a, b)) would get da + db instead of db).
                if active[n] && complex[n] {
                    return Err(LinearizeError::Unsupported(format!(
                        "`{name}` of active values with a complex result (derivatives are carried for real values only; the catalogue's partials of complex arithmetic would give a wrong derivative)"
                    )));
                }
            }
        }
    }
    let aux = order.iter().copied().filter(|&n| needs_aux[n]).collect();
    Ok(LinStmt {
        dag,
        active,
        edges,
        aux,
    })
}

/// For an intrinsic whose catalogue partial is passive although its value
/// follows an active real argument, what to write instead: the sum of an
/// array, the front end's non-canonical `min` and `max` (meant for
/// integers; OpenAD's canonical forms are calls its run-time
/// differentiates) and `transfer` (the identity on a real of the same kind).
pub fn drops_derivative(name: &str) -> Option<&'static str> {
    match name {
        "sum_arr" => Some("write the sum as additions"),
        "nc_max_scal_scal" | "nc_min_scal_scal" | "nc_maxval" | "nc_minval" => {
            Some("the `nc_` forms are for integers; the canonical `max` and `min` of reals are calls to the run-time's `oad_s_max`/`oad_s_min`, which differentiate them")
        }
        "transfer" => Some("a reinterpretation of bits has no derivative to give"),
        _ => None,
    }
}

/// Whether the operation `name` yields a complex value, given which of its
/// arguments are complex: `complex_scal` always; the parts, modulus and
/// conversions (`real_scal`, `imag_scal`, `abs_scal`, `int_scal`, …) never;
/// any other operation when one of its arguments is complex (Fortran's
/// mixed arithmetic promotes to complex).
pub fn complex_valued(name: &str, mut args: impl Iterator<Item = bool>) -> bool {
    match name {
        "complex_scal" => true,
        "real_scal" | "imag_scal" | "abs_scal" | "int_scal" | "nint_scal" | "transfer"
        | "lbound" | "ubound" | "size" | "len" | "trim" | "scan" | "ichar" | "maxloc_arr"
        | "minloc_arr" | "shape_arr" => false,
        _ => args.any(|c| c),
    }
}

/// The value of a constant, as the compiled code sees it (`F4` constants are
/// single precision).
pub fn constant_of(attrs: &Attrs) -> Option<f64> {
    let v: f64 = attrs
        .get("value")?
        .trim()
        .replace(['d', 'D'], "e")
        .parse()
        .ok()?;
    if !v.is_finite() {
        return None;
    }
    Some(if attrs.get("feType") == Some("F4") {
        v as f32 as f64
    } else {
        v
    })
}

/// The value of a partial that depends only on constants, folded the way
/// the compiled code computes it (integer operands stay integer); `None`
/// when it reads a variable or an operation folding does not cover.
fn constant_value(dag: &Dag, args: &[usize], t: &Template) -> Option<f64> {
    #[derive(Clone, Copy)]
    enum C {
        I(i64),
        R(f64),
    }
    fn leaf(a: &Attrs) -> Option<C> {
        if a.get("type") == Some("integer") {
            a.get("value")?.trim().parse().ok().map(C::I)
        } else {
            constant_of(a).map(C::R)
        }
    }
    // Bottom-up over the template (no recursion: see `Template::postorder`).
    let mut value: Vec<Option<C>> = vec![None; t.nodes.len()];
    for n in t.postorder() {
        value[n] = match &t.nodes[n] {
            TNode::Const(a) => leaf(a),
            TNode::Arg(0) => None,
            TNode::Arg(k) => match args.get(k - 1).map(|&a| &dag.nodes[a]) {
                Some(Node::Const(a)) => leaf(a),
                _ => None,
            },
            TNode::Op { name, args: ops } => (|| {
                let v: Vec<C> = ops.iter().map(|&o| value[o]).collect::<Option<_>>()?;
                Some(match (name.as_str(), v.as_slice()) {
                    ("minus_scal", [C::I(a)]) => C::I(a.checked_neg()?),
                    ("minus_scal", [C::R(a)]) => C::R(-a),
                    (_, [C::I(a), C::I(b)]) => C::I(match name.as_str() {
                        "add_scal_scal" => a.checked_add(*b)?,
                        "sub_scal_scal" => a.checked_sub(*b)?,
                        "mul_scal_scal" => a.checked_mul(*b)?,
                        "div_scal_scal" if *b != 0 => a.checked_div(*b)?,
                        _ => return None,
                    }),
                    (_, [a, b]) => {
                        let f = |c: &C| match c {
                            C::I(i) => *i as f64,
                            C::R(r) => *r,
                        };
                        let (a, b) = (f(a), f(b));
                        C::R(match name.as_str() {
                            "add_scal_scal" => a + b,
                            "sub_scal_scal" => a - b,
                            "mul_scal_scal" => a * b,
                            "div_scal_scal" => a / b,
                            _ => return None,
                        })
                    }
                    _ => return None,
                })
            })(),
        };
    }
    match value.get(t.root).copied().flatten()? {
        C::I(i) => Some(i as f64),
        C::R(r) => r.is_finite().then_some(r),
    }
}

/// Writes the expression of a partial instance: argument references become
/// the operation's arguments (leaves copied, named subexpressions read from
/// their temporaries via `named`), the result becomes the operation's
/// temporary.
pub fn instantiate(
    dag: &Dag,
    op: usize,
    template: &Template,
    named: &dyn Fn(usize) -> Option<VarRef>,
) -> Expr {
    let args: &[usize] = match &dag.nodes[op] {
        Node::Op { args, .. } => args,
        _ => &[],
    };
    let mut b = ExprBuilder::new();
    let mut made: Vec<usize> = vec![usize::MAX; template.nodes.len()];
    // Bottom-up in the order a recursive writer would visit the nodes.
    for n in template.postorder() {
        made[n] = match &template.nodes[n] {
            TNode::Const(a) => b.vertex(a.clone(), ExprVertexKind::Constant),
            TNode::Arg(k) => {
                let node = if *k == 0 { op } else { args[*k - 1] };
                match named(node) {
                    Some(r) => b.reference(&r),
                    None => {
                        // A leaf, or a passive subexpression recomputed in
                        // place.
                        let sub = dag.to_expr(node, named);
                        copy_into(&sub, &mut b)
                    }
                }
            }
            TNode::Op { name, args: ops } => {
                let vs: Vec<usize> = ops.iter().map(|&o| made[o]).collect();
                b.intrinsic(name, &vs)
            }
        };
    }
    b.finish()
}

/// Copies an expression into a builder; returns the index of its root.
pub fn copy_into(e: &Expr, b: &mut ExprBuilder) -> usize {
    let g = xaif_model::ExprGraph::new(e).expect("built expressions are well formed");
    let mut map = vec![usize::MAX; e.vertices.len()];
    let dag = Dag::from_expr(e).expect("well formed");
    for n in dag.postorder(g.root) {
        let v = &e.vertices[n];
        map[n] = b.vertex(v.attrs.clone(), v.kind.clone());
        for (i, a) in g.args[n].iter().enumerate() {
            b.edge(map[*a], map[n], i + 1);
        }
    }
    map[g.root]
}
