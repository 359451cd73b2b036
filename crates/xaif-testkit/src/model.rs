//! Front-end XAIF programs whose basic blocks look like a real model's, for
//! the figures at scale (`cargo xtask gen --realistic`, `cargo xtask
//! versus`).
//!
//! [`crate::scale`] repeats a few statement shapes, so its graphs are tiny
//! and the elimination's memo serves almost all of them from a handful of
//! searches: it measures reading, analysis and writing, not the
//! elimination. A model hands the engine basic blocks as varied as the
//! regression corpus's, a few of them heavy (flux routines such as Roe's
//! approximate Riemann solver, whose blocks have tens of intermediate
//! vertices). This generator draws every basic block from that
//! distribution:
//!
//! - the size class of each block's graph follows the corpus's graphs
//!   (counted over the tangent inputs of the regression corpus: about three
//!   quarters have no intermediate vertex, a tenth one to three, a tenth
//!   four to fifteen, a few in hundredths sixteen to thirty-one and more
//!   than thirty-one, [`CLASSES`]);
//! - statements are random expression trees over the block's inputs
//!   (routine arguments, array elements at constant indices, globals), the
//!   block's earlier results and literal constants, with the corpus's mix
//!   of operations (products and sums first, quotients, differences and
//!   elementary functions less often), so that almost no two graphs have
//!   the same shape;
//! - heavy blocks are flux-like: a few states read from arrays, tens of
//!   temporaries computed from them and from each other, a few results
//!   written back.
//!
//! Blocks are separated as model code separates them: by DO loops (whose
//! bodies are blocks over the loop's element), two-way branches and calls
//! to later routines. The same seed gives the same bytes; both engines
//! accept the output, and it validates against `xaif.xsd`.

use std::fmt::Write as _;

use crate::scale::{
    assign_expr, call_graph_start, condition, elem, index_var, int, var, Cfg, Expr, Rng, Shape,
    SCOPE_HIERARCHY_END,
};

/// Local scalars of every routine (`t1` … `tN`).
const LOCALS: usize = 48;

/// A block class: (weight in thousandths, statements per block,
/// operations per statement), ranges inclusive.
pub type Class = (u64, (usize, usize), (usize, usize));

/// The size classes of block graphs, as (weight in thousandths, statements
/// per block, operations per statement): no intermediate vertex, one to
/// three, four to fifteen, sixteen to thirty-one, more (heavy). The
/// weights are the corpus's graph counts per class.
pub const CLASSES: [Class; 5] = [
    (735, (2, 4), (1, 1)),
    (115, (1, 2), (2, 3)),
    (96, (3, 5), (1, 3)),
    (9, (9, 14), (2, 3)),
    (44, (28, 50), (1, 3)),
];

/// Operations of the expressions: (name, arity, weight).
const OPS: [(&str, usize, u64); 9] = [
    ("mul_scal_scal", 2, 34),
    ("add_scal_scal", 2, 30),
    ("sub_scal_scal", 2, 16),
    ("div_scal_scal", 2, 8),
    ("sqrt_scal", 1, 4),
    ("exp_scal", 1, 2),
    ("sin_scal", 1, 2),
    ("cos_scal", 1, 2),
    ("ln_scal", 1, 2),
];

impl Rng {
    /// A number in `lo..=hi`.
    fn between(&mut self, (lo, hi): (usize, usize)) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// An index drawn by weight.
    fn weighted(&mut self, weights: impl Iterator<Item = u64> + Clone) -> usize {
        let total: u64 = weights.clone().sum();
        let mut x = self.next() % total.max(1);
        for (k, w) in weights.enumerate() {
            if x < w {
                return k;
            }
            x -= w;
        }
        0
    }
}

/// What a block reads and writes.
struct Pool {
    /// References (XML) of values the block may read.
    inputs: Vec<String>,
    /// Locals the block has written so far (indices into `t1..`).
    written: Vec<usize>,
}

/// One operand: a value the block computed (more often in heavy blocks),
/// an input, or a literal constant.
fn operand(rng: &mut Rng, e: &mut Expr, scope: usize, pool: &Pool, recent: u64) -> usize {
    let roll = rng.below(100) as u64;
    if !pool.written.is_empty() && roll < recent {
        // Mostly the latest results, as straight-line code reads them.
        let n = pool.written.len();
        let back = rng.below(n.min(6));
        let t = pool.written[n - 1 - back];
        return e.leaf(&var(scope, &format!("t{t}")));
    }
    if roll < recent + 8 {
        return constant(rng, e);
    }
    e.leaf(&pool.inputs[rng.below(pool.inputs.len())])
}

/// One operation on inputs, with a literal constant as one operand more
/// often than not (`0.5 * t3`, `x(2) / 9.81`); with `scaling`, a product
/// or quotient by a constant.
fn single(rng: &mut Rng, scope: usize, pool: &Pool, scaling: bool) -> Expr {
    let mut e = Expr::default();
    // Scalings by a constant (a product or a quotient) first.
    let (name, arity, _) = match rng.below(10) {
        _ if scaling => OPS[if rng.below(4) == 0 { 3 } else { 0 }],
        0..=4 => OPS[0],
        5 => OPS[3],
        _ => OPS[rng.weighted(OPS.iter().map(|o| o.2))],
    };
    let mut args = vec![operand(rng, &mut e, scope, pool, 0)];
    if arity == 2 {
        args.push(if scaling || rng.below(10) < 9 {
            constant(rng, &mut e)
        } else {
            operand(rng, &mut e, scope, pool, 0)
        });
    }
    e.op("Intrinsic", name, &args);
    e
}

/// A literal constant of the model (never 0 or 1, which fold).
fn constant(rng: &mut Rng, e: &mut Expr) -> usize {
    e.next += 1;
    let v = e.next;
    // Four decimals between 0.05 and 20, as model coefficients have them.
    let mut value = 0.05 + (rng.below(199_500) as f64) / 10_000.0;
    if (value - 1.0).abs() < 1e-9 {
        value = 1.0001;
    }
    let _ = write!(
        e.text,
        r#"<xaif:Constant vertex_id="{v}" type="real" value="{value:.4}"/>"#
    );
    v
}

/// A random expression with `ops` operations.
fn expression(rng: &mut Rng, scope: usize, pool: &Pool, ops: usize, recent: u64) -> Expr {
    let mut e = Expr::default();
    // Subtrees built so far; operations combine them until one is left.
    let mut open: Vec<usize> = Vec::new();
    for k in 0..ops.max(1) {
        let (name, arity, _) = OPS[rng.weighted(OPS.iter().map(|o| o.2))];
        let mut args = Vec::with_capacity(arity);
        for _ in 0..arity {
            // Reuse a subtree when there is one (so that the expression is
            // one tree), otherwise a fresh operand.
            let reuse = !open.is_empty() && (k + 1 == ops || rng.below(3) > 0);
            args.push(if reuse {
                open.remove(rng.below(open.len()))
            } else {
                operand(rng, &mut e, scope, pool, recent)
            });
        }
        open.push(e.op("Intrinsic", name, &args));
    }
    // Fold what is left with sums.
    while open.len() > 1 {
        let (a, b) = (open.remove(0), open.remove(0));
        open.push(e.op("Intrinsic", "add_scal_scal", &[a, b]));
    }
    e
}

/// The body of one straight-line block of the given class: its statements
/// (XML) and how many there are. Results go to `output` when given (the
/// loop's element), otherwise to array elements at constant indices.
fn block_body(
    rng: &mut Rng,
    id: &mut usize,
    scope: usize,
    class: usize,
    inputs: Vec<String>,
    output: Option<String>,
) -> (String, usize) {
    let (_, statements, ops) = CLASSES[class];
    let heavy = class == CLASSES.len() - 1;
    let n = rng.between(statements);
    let mut pool = Pool {
        inputs,
        written: Vec::new(),
    };
    let mut body = String::new();
    // Heavy blocks read their own results most of the time; the smallest
    // blocks are independent statements, often with a literal constant.
    let recent = if heavy {
        70
    } else if class >= 2 {
        55
    } else {
        0
    };
    let first = rng.below(LOCALS);
    for k in 0..n {
        let size = rng.between(ops);
        let e = if class == 0 {
            // Each small block scales something by a coefficient.
            single(rng, scope, &pool, k == 0)
        } else {
            expression(rng, scope, &pool, size, recent)
        };
        // Each statement writes a local of its own (a temporary), except
        // that the last ones of a block write results back.
        let last = k + 1 == n;
        let result = if heavy {
            k + 4 >= n
        } else {
            last && (class > 0 || output.is_some() || rng.below(5) == 0)
        };
        let lhs = if result {
            output
                .clone()
                .unwrap_or_else(|| elem(scope, "y", &int(1 + rng.below(10) as i64)))
        } else {
            // A local the block does not read as an input (the smallest
            // blocks are independent statements).
            let mut t = 1 + (first + k) % LOCALS;
            while pool.inputs.contains(&var(scope, &format!("t{t}"))) {
                t = 1 + t % LOCALS;
            }
            pool.written.push(t);
            var(scope, &format!("t{t}"))
        };
        assign_expr(&mut body, id, &lhs, e);
    }
    (body, n)
}

/// The inputs of a block outside a loop: routine arguments at constant
/// indices, a global, and a few locals written by earlier blocks.
fn straight_inputs(rng: &mut Rng, scope: usize) -> Vec<String> {
    let mut v = Vec::new();
    for _ in 0..6 {
        v.push(elem(scope, "x", &int(1 + rng.below(10) as i64)));
    }
    v.push(var(1, "g_1"));
    for _ in 0..3 {
        v.push(var(scope, &format!("t{}", 1 + rng.below(LOCALS))));
    }
    v
}

/// Writes the program described by `shape` into `out`: routines of about
/// `statements / routines` statements made of blocks drawn from
/// [`CLASSES`].
pub fn write_program(shape: &Shape, out: &mut String) {
    let routines = shape.routines.max(1);
    let per = (shape.statements / routines).max(8);
    let mut rng = Rng(shape.seed ^ 0x6d6f_6465_6c00);
    call_graph_start(
        out,
        "model",
        r#"<xaif:Symbol symbol_id="g_1" kind="variable" type="real" shape="scalar" active="1"/>
"#,
        routines,
    );
    for k in 0..routines {
        let s = k + 2;
        let _ = write!(
            out,
            r#"<xaif:Scope vertex_id="{s}"><xaif:SymbolTable>
<xaif:Symbol symbol_id="x" kind="variable" type="real" shape="vector" active="1"><xaif:DimensionBounds lower="1" upper="10"/></xaif:Symbol>
<xaif:Symbol symbol_id="y" kind="variable" type="real" shape="vector" active="1"><xaif:DimensionBounds lower="1" upper="10"/></xaif:Symbol>
<xaif:Symbol symbol_id="n" kind="variable" type="integer" shape="scalar" active="0"/>
<xaif:Symbol symbol_id="i" kind="variable" type="integer" shape="scalar" active="0"/>
"#
        );
        for t in 1..=LOCALS {
            let _ = writeln!(
                out,
                r#"<xaif:Symbol symbol_id="t{t}" kind="variable" type="real" shape="scalar" active="1"/>"#
            );
        }
        let _ = writeln!(
            out,
            r#"</xaif:SymbolTable></xaif:Scope><xaif:ScopeEdge edge_id="{s}" source="{s}" target="1"/>"#
        );
    }
    out.push_str(SCOPE_HIERARCHY_END);
    let mut id = 0;
    for k in 0..routines {
        routine(out, &mut rng, &mut id, k, routines, per);
    }
    out.push_str("</xaif:CallGraph>\n");
}

/// The program described by `shape`.
pub fn program(shape: &Shape) -> String {
    let mut out = String::with_capacity(shape.statements.saturating_mul(1200));
    write_program(shape, &mut out);
    out
}

/// A block class drawn by the corpus's weights.
fn class(rng: &mut Rng) -> usize {
    rng.weighted(CLASSES.iter().map(|c| c.0))
}

/// One routine of about `per` statements.
fn routine(out: &mut String, rng: &mut Rng, id: &mut usize, k: usize, routines: usize, per: usize) {
    let s = k + 2;
    let mut cfg = Cfg::open(out, k);
    let mut count = 0;
    while count < per {
        match rng.below(10) {
            // A DO loop whose body is a block over the loop's elements.
            0 | 1 => {
                // The front end keeps a basic block before and after a
                // loop (the reference engine's adjoint needs them).
                let (c, inputs) = (class(rng), straight_inputs(rng, s));
                let (pre, n_pre) = block_body(rng, id, s, c, inputs, None);
                cfg.then_block(s, &pre);
                let l = cfg.for_loop(s, id);
                let i = index_var(s, "i");
                let mut inputs = vec![elem(s, "x", &i), var(1, "g_1")];
                inputs.push(var(s, &format!("t{}", 1 + rng.below(LOCALS))));
                inputs.push(elem(s, "y", &i));
                let c = class(rng).min(2);
                let (body, n) = block_body(rng, id, s, c, inputs, Some(elem(s, "y", &i)));
                let v = cfg.block(s, &body);
                cfg.edges.push((l, v, Some(1)));
                cfg.end_loop(l, v);
                let (c, inputs) = (class(rng), straight_inputs(rng, s));
                let (post, n_post) = block_body(rng, id, s, c, inputs, None);
                cfg.then_block(s, &post);
                count += n_pre + n + n_post + 2;
            }
            // A two-way branch, a block in each arm.
            2 => {
                let (c, inputs) = (class(rng), straight_inputs(rng, s));
                let (bt, nt) = block_body(rng, id, s, c, inputs, None);
                let (c, inputs) = (class(rng), straight_inputs(rng, s));
                let (bf, nf) = block_body(rng, id, s, c, inputs, None);
                let t = var(s, &format!("t{}", 1 + rng.below(LOCALS)));
                let cond = condition("greater_than", &t, &var(1, "g_1"));
                cfg.prev = cfg.branch(s, cfg.prev, None, &cond, [&bt, &bf]);
                count += nt + nf;
            }
            // A call to a later routine, then a block.
            3 => {
                let callee = k + 1 + rng.below(3);
                let (c, inputs) = (class(rng), straight_inputs(rng, s));
                let (mut body, n) = block_body(rng, id, s, c, inputs, None);
                if callee < routines {
                    *id += 1;
                    let _ = write!(
                        body,
                        r#"<xaif:SubroutineCall statement_id="{id}" scope_id="1" symbol_id="r{callee}__{callee}" formalArgCount="3"><xaif:Argument position="1"><xaif:VariableReference vertex_id="1">{}</xaif:VariableReference></xaif:Argument><xaif:Argument position="2"><xaif:VariableReference vertex_id="1">{}</xaif:VariableReference></xaif:Argument><xaif:Argument position="3"><xaif:VariableReference vertex_id="1">{}</xaif:VariableReference></xaif:Argument></xaif:SubroutineCall>"#,
                        var(s, "y"),
                        var(s, "x"),
                        var(s, "n")
                    );
                    count += 1;
                }
                cfg.then_block(s, &body);
                count += n;
            }
            // A straight-line block.
            _ => {
                let (c, inputs) = (class(rng), straight_inputs(rng, s));
                let (body, n) = block_body(rng, id, s, c, inputs, None);
                cfg.then_block(s, &body);
                count += n;
            }
        }
    }
    cfg.finish(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_bytes_other_seed_other_program() {
        let shape = Shape {
            routines: 5,
            statements: 400,
            seed: 7,
        };
        assert_eq!(program(&shape), program(&shape));
        assert_ne!(program(&shape), program(&Shape { seed: 8, ..shape }));
    }
}
