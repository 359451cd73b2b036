//! Front-end XAIF programs of any size, shaped like model code, for
//! benchmarks at scale (`cargo xtask gen`, `cargo xtask versus`, the
//! data-flow benchmark).
//!
//! OpenAD hands a whole model to the engine as one file, so the figures
//! that matter to its users are those of one input of 10^4 to 10^5
//! statements and more. The corpus has no such input; this generator makes
//! them, deterministically from a seed, so anyone can reproduce a figure.
//!
//! A program has `routines` subroutines of about `statements / routines`
//! statements each. Every routine takes two arrays and a length, keeps three
//! active scalars and a loop variable, and is a sequence of fragments drawn
//! from the seed: straight-line blocks on constant array elements and
//! globals, DO loops over the arrays, two-way branches, loops whose body
//! branches, blocks of longer expressions, and calls to later routines (a
//! call DAG whose depth grows with the routine count). Both the reference
//! engine and xaifb accept the output, and it validates against `xaif.xsd`.

use std::fmt::Write as _;

/// What to generate.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Number of subroutines.
    pub routines: usize,
    /// Statements in all (assignments, calls, loop initializations and
    /// updates); each routine gets at least 8.
    pub statements: usize,
    /// Chooses the fragments and callees; the same seed gives the same
    /// bytes.
    pub seed: u64,
}

/// A small deterministic generator (splitmix64): the program must not
/// depend on a random-number crate's version.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

pub(crate) fn var(scope: usize, name: &str) -> String {
    format!(r#"<xaif:SymbolReference vertex_id="1" scope_id="{scope}" symbol_id="{name}"/>"#)
}

pub(crate) fn elem(scope: usize, name: &str, index: &str) -> String {
    format!(
        r#"<xaif:SymbolReference vertex_id="1" scope_id="{scope}" symbol_id="{name}"/><xaif:ArrayElementReference vertex_id="2"><xaif:IndexTriplet><xaif:Index>{index}</xaif:Index></xaif:IndexTriplet></xaif:ArrayElementReference><xaif:VariableReferenceEdge edge_id="1" source="1" target="2"/>"#
    )
}

pub(crate) fn int(v: i64) -> String {
    format!(r#"<xaif:Constant vertex_id="1" type="integer" value="{v}"/>"#)
}

pub(crate) fn index_var(scope: usize, name: &str) -> String {
    format!(
        r#"<xaif:VariableReference vertex_id="1">{}</xaif:VariableReference>"#,
        var(scope, name)
    )
}

/// An expression tree under construction: vertices and edges of an
/// `AssignmentRHS` (or `Condition`), numbered from 1.
#[derive(Default)]
pub(crate) struct Expr {
    pub(crate) text: String,
    edges: String,
    pub(crate) next: usize,
    edge_count: usize,
}

impl Expr {
    pub(crate) fn leaf(&mut self, reference: &str) -> usize {
        self.next += 1;
        let v = self.next;
        let _ = write!(
            self.text,
            r#"<xaif:VariableReference vertex_id="{v}">{reference}</xaif:VariableReference>"#
        );
        v
    }

    pub(crate) fn op(&mut self, tag: &str, name: &str, args: &[usize]) -> usize {
        self.next += 1;
        let v = self.next;
        let _ = write!(self.text, r#"<xaif:{tag} vertex_id="{v}" name="{name}"/>"#);
        for (k, a) in args.iter().enumerate() {
            self.edge_count += 1;
            let e = self.edge_count;
            let _ = write!(
                self.edges,
                r#"<xaif:ExpressionEdge edge_id="{e}" source="{a}" target="{v}" position="{}"/>"#,
                k + 1
            );
        }
        v
    }

    fn finish(self) -> String {
        self.text + &self.edges
    }
}

/// `lhs = op(a, b)` or `lhs = op(a)`.
fn assign(out: &mut String, id: &mut usize, lhs: &str, op: &str, a: &str, b: Option<&str>) {
    let mut e = Expr::default();
    let mut args = vec![e.leaf(a)];
    if let Some(b) = b {
        args.push(e.leaf(b));
    }
    e.op("Intrinsic", op, &args);
    assign_expr(out, id, lhs, e);
}

pub(crate) fn assign_expr(out: &mut String, id: &mut usize, lhs: &str, rhs: Expr) {
    *id += 1;
    let _ = writeln!(
        out,
        r#"<xaif:Assignment statement_id="{id}"><xaif:AssignmentLHS>{lhs}</xaif:AssignmentLHS><xaif:AssignmentRHS>{}</xaif:AssignmentRHS></xaif:Assignment>"#,
        rhs.finish()
    );
}

/// A comparison `a OP b` as a `Condition`.
pub(crate) fn condition(op: &str, a: &str, b: &str) -> String {
    let mut e = Expr::default();
    let (x, y) = (e.leaf(a), e.leaf(b));
    e.op("BooleanOperation", op, &[x, y]);
    format!("<xaif:Condition>{}</xaif:Condition>", e.finish())
}

/// One control flow graph being written: vertices as text, edges kept to
/// be written after them.
pub(crate) struct Cfg {
    pub(crate) text: String,
    pub(crate) edges: Vec<(usize, usize, Option<u8>)>,
    pub(crate) next: usize,
    /// The vertex the next fragment follows.
    pub(crate) prev: usize,
}

impl Cfg {
    /// Opens the control flow graph of routine `k` (scope `k + 2`, formals
    /// `x`, `y`, `n`) in `out`; the graph under way holds its Entry.
    pub(crate) fn open(out: &mut String, k: usize) -> Cfg {
        let s = k + 2;
        let _ = writeln!(
            out,
            r#"<xaif:ControlFlowGraph vertex_id="{}" scope_id="1" symbol_id="r{k}__{k}" controlflowgraph_scope_id="{s}"><xaif:ArgumentList><xaif:ArgumentSymbolReference position="1" scope_id="{s}" symbol_id="x" intent="inout"/><xaif:ArgumentSymbolReference position="2" scope_id="{s}" symbol_id="y" intent="inout"/><xaif:ArgumentSymbolReference position="3" scope_id="{s}" symbol_id="n" intent="inout"/></xaif:ArgumentList>"#,
            k + 1
        );
        let mut cfg = Cfg {
            text: String::new(),
            edges: Vec::new(),
            next: 0,
            prev: 0,
        };
        let entry = cfg.vertex();
        let _ = writeln!(cfg.text, r#"<xaif:Entry vertex_id="{entry}"/>"#);
        cfg.prev = entry;
        cfg
    }

    /// Ends the graph: the Exit after the current vertex, every edge, and
    /// the closing tag, appended to `out` after the vertices.
    pub(crate) fn finish(mut self, out: &mut String) {
        let exit = self.vertex();
        let _ = writeln!(self.text, r#"<xaif:Exit vertex_id="{exit}"/>"#);
        self.edges.push((self.prev, exit, None));
        out.push_str(&self.text);
        for (n, (src, dst, cv)) in self.edges.iter().enumerate() {
            let c = cv
                .map(|v| format!(r#" has_condition_value="true" condition_value="{v}""#))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                r#"<xaif:ControlFlowEdge edge_id="{}" source="{src}" target="{dst}"{c}/>"#,
                n + 1
            );
        }
        out.push_str("</xaif:ControlFlowGraph>\n");
    }

    pub(crate) fn vertex(&mut self) -> usize {
        self.next += 1;
        self.next
    }

    pub(crate) fn block(&mut self, scope: usize, body: &str) -> usize {
        let v = self.vertex();
        let _ = writeln!(
            self.text,
            r#"<xaif:BasicBlock vertex_id="{v}" scope_id="{scope}">{body}</xaif:BasicBlock>"#
        );
        v
    }

    /// Appends a straight-line block after the current vertex.
    pub(crate) fn then_block(&mut self, scope: usize, body: &str) {
        let v = self.block(scope, body);
        self.edges.push((self.prev, v, None));
        self.prev = v;
    }

    /// A two-way branch on `cond` with the two bodies; returns the
    /// `EndBranch`. The branch follows `from` through an edge with
    /// `from_value`.
    pub(crate) fn branch(
        &mut self,
        scope: usize,
        from: usize,
        from_value: Option<u8>,
        cond: &str,
        bodies: [&str; 2],
    ) -> usize {
        let br = self.vertex();
        let _ = writeln!(
            self.text,
            r#"<xaif:Branch vertex_id="{br}">{cond}</xaif:Branch>"#
        );
        self.edges.push((from, br, from_value));
        let t = self.block(scope, bodies[0]);
        let f = self.block(scope, bodies[1]);
        let e = self.vertex();
        let _ = writeln!(self.text, r#"<xaif:EndBranch vertex_id="{e}"/>"#);
        self.edges.push((br, t, Some(1)));
        self.edges.push((br, f, Some(0)));
        self.edges.push((t, e, None));
        self.edges.push((f, e, None));
        e
    }

    /// `do i = 1, n` after the current vertex; returns the loop vertex,
    /// from which the body hangs with condition value 1 (closed by
    /// `end_loop`).
    pub(crate) fn for_loop(&mut self, scope: usize, id: &mut usize) -> usize {
        let l = self.vertex();
        let i = var(scope, "i");
        *id += 1;
        let init = format!(
            r#"<xaif:Initialization statement_id="{id}"><xaif:AssignmentLHS>{i}</xaif:AssignmentLHS><xaif:AssignmentRHS>{}</xaif:AssignmentRHS></xaif:Initialization>"#,
            int(1)
        );
        *id += 1;
        let update = format!(
            r#"<xaif:Update statement_id="{id}"><xaif:AssignmentLHS>{i}</xaif:AssignmentLHS><xaif:AssignmentRHS><xaif:Intrinsic vertex_id="1" name="add_scal_scal"/><xaif:VariableReference vertex_id="2">{i}</xaif:VariableReference><xaif:Constant vertex_id="3" type="integer" value="1"/><xaif:ExpressionEdge edge_id="1" source="2" target="1" position="1"/><xaif:ExpressionEdge edge_id="2" source="3" target="1" position="2"/></xaif:AssignmentRHS></xaif:Update>"#
        );
        let _ = writeln!(
            self.text,
            r#"<xaif:ForLoop vertex_id="{l}" reversal="anonymous">{init}{}{update}</xaif:ForLoop>"#,
            condition("less_or_equal", &i, &var(scope, "n"))
        );
        self.edges.push((self.prev, l, None));
        self.prev = l;
        l
    }

    /// The `EndLoop` of loop `l` whose body ends in `last`. The reference
    /// engine wants the front end's order: body vertices and edges before
    /// the `EndLoop` and its edge back.
    pub(crate) fn end_loop(&mut self, l: usize, last: usize) {
        let e = self.vertex();
        let _ = writeln!(self.text, r#"<xaif:EndLoop vertex_id="{e}"/>"#);
        self.edges.push((last, e, None));
        self.edges.push((e, l, None));
    }
}

/// Opens a generated call graph named `name`: the global scope with the
/// symbols `globals` and one subroutine symbol per routine.
pub(crate) fn call_graph_start(out: &mut String, name: &str, globals: &str, routines: usize) {
    let _ = write!(
        out,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<xaif:CallGraph xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xaif="http://www.mcs.anl.gov/XAIF" xsi:schemaLocation="http://www.mcs.anl.gov/XAIF xaif.xsd" program_name="{name}" prefix="OpenAD_">
<xaif:ScopeHierarchy><xaif:Scope vertex_id="1"><xaif:SymbolTable>
{globals}"#
    );
    for k in 0..routines {
        let _ = writeln!(
            out,
            r#"<xaif:Symbol symbol_id="r{k}__{k}" kind="subroutine" type="void" active="0"/>"#
        );
    }
    out.push_str("</xaif:SymbolTable></xaif:Scope>\n");
}

/// Closes the scope hierarchy of a generated program, with the empty
/// analysis maps the back end expects after it.
pub(crate) const SCOPE_HIERARCHY_END: &str = r#"</xaif:ScopeHierarchy><xaif:AliasSetMap><xaif:AliasSet key="0"/></xaif:AliasSetMap><xaif:DUUDSetMap><xaif:StmtIdSet key="0"/></xaif:DUUDSetMap><xaif:DOSetMap><xaif:StmtIdSet key="0"/></xaif:DOSetMap>
"#;

/// Writes the program described by `shape` into `out`.
pub fn write_program(shape: &Shape, out: &mut String) {
    let routines = shape.routines.max(1);
    let per = (shape.statements / routines).max(8);
    let mut rng = Rng(shape.seed);
    call_graph_start(
        out,
        "generated",
        r#"<xaif:Symbol symbol_id="g_1" kind="variable" type="real" shape="scalar" active="1"/>
<xaif:Symbol symbol_id="gv_2" kind="variable" type="real" shape="vector" active="1"><xaif:DimensionBounds lower="1" upper="10"/></xaif:Symbol>
"#,
        routines,
    );
    for k in 0..routines {
        let s = k + 2;
        let _ = writeln!(
            out,
            r#"<xaif:Scope vertex_id="{s}"><xaif:SymbolTable>
<xaif:Symbol symbol_id="x" kind="variable" type="real" shape="vector" active="1"><xaif:DimensionBounds lower="1" upper="10"/></xaif:Symbol>
<xaif:Symbol symbol_id="y" kind="variable" type="real" shape="vector" active="1"><xaif:DimensionBounds lower="1" upper="10"/></xaif:Symbol>
<xaif:Symbol symbol_id="n" kind="variable" type="integer" shape="scalar" active="0"/>
<xaif:Symbol symbol_id="a" kind="variable" type="real" shape="scalar" active="1"/>
<xaif:Symbol symbol_id="b" kind="variable" type="real" shape="scalar" active="1"/>
<xaif:Symbol symbol_id="c" kind="variable" type="real" shape="scalar" active="1"/>
<xaif:Symbol symbol_id="i" kind="variable" type="integer" shape="scalar" active="0"/>
</xaif:SymbolTable></xaif:Scope><xaif:ScopeEdge edge_id="{s}" source="{s}" target="1"/>"#
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
    let mut out = String::with_capacity(shape.statements.saturating_mul(900));
    write_program(shape, &mut out);
    out
}

/// One routine of about `per` statements.
fn routine(out: &mut String, rng: &mut Rng, id: &mut usize, k: usize, routines: usize, per: usize) {
    let s = k + 2;
    let mut cfg = Cfg::open(out, k);
    let (a, b, c) = (var(s, "a"), var(s, "b"), var(s, "c"));
    let g = var(1, "g_1");
    let mut count = 0;
    while count < per {
        let mut body = String::new();
        match rng.below(6) {
            // A straight-line block with constant elements and a global.
            0 => {
                let (x1, y2) = (elem(s, "x", &int(1)), elem(s, "y", &int(2)));
                assign(&mut body, id, &a, "mul_scal_scal", &x1, Some(&b));
                assign(&mut body, id, &b, "sin_scal", &a, None);
                assign(&mut body, id, &y2, "add_scal_scal", &y2, Some(&b));
                assign(&mut body, id, &g, "mul_scal_scal", &g, Some(&c));
                let gv3 = elem(1, "gv_2", &int(3));
                assign(&mut body, id, &c, "exp_scal", &gv3, None);
                cfg.then_block(s, &body);
                count += 5;
            }
            // A DO loop over computed elements.
            1 => {
                // The front end keeps a basic block before and after a loop.
                let mut pre = String::new();
                assign(&mut pre, id, &b, "add_scal_scal", &b, Some(&c));
                cfg.then_block(s, &pre);
                let l = cfg.for_loop(s, id);
                let xi = elem(s, "x", &index_var(s, "i"));
                let yi = elem(s, "y", &index_var(s, "i"));
                assign(&mut body, id, &a, "mul_scal_scal", &xi, Some(&b));
                assign(&mut body, id, &yi, "add_scal_scal", &yi, Some(&a));
                assign(&mut body, id, &b, "cos_scal", &yi, None);
                assign(&mut body, id, &c, "div_scal_scal", &c, Some(&b));
                let v = cfg.block(s, &body);
                cfg.edges.push((l, v, Some(1)));
                cfg.end_loop(l, v);
                let mut post = String::new();
                assign(&mut post, id, &c, "mul_scal_scal", &c, Some(&a));
                cfg.then_block(s, &post);
                count += 8;
            }
            // A two-way branch.
            2 => {
                let (mut bt, mut bf) = (String::new(), String::new());
                assign(&mut bt, id, &c, "mul_scal_scal", &a, Some(&b));
                assign(&mut bt, id, &a, "sqrt_scal", &c, None);
                assign(&mut bf, id, &c, "add_scal_scal", &a, Some(&b));
                assign(&mut bf, id, &b, "mul_scal_scal", &c, Some(&c));
                let cond = condition("greater_than", &a, &b);
                cfg.prev = cfg.branch(s, cfg.prev, None, &cond, [&bt, &bf]);
                count += 4;
            }
            // A loop whose body branches on the current element.
            3 => {
                // The front end keeps a basic block before and after a loop.
                let mut pre = String::new();
                assign(&mut pre, id, &b, "add_scal_scal", &b, Some(&c));
                cfg.then_block(s, &pre);
                let l = cfg.for_loop(s, id);
                let xi = elem(s, "x", &index_var(s, "i"));
                let yi = elem(s, "y", &index_var(s, "i"));
                let (mut bt, mut bf, mut after) = (String::new(), String::new(), String::new());
                assign(&mut body, id, &b, "mul_scal_scal", &xi, Some(&c));
                assign(&mut bt, id, &yi, "mul_scal_scal", &xi, Some(&a));
                assign(&mut bt, id, &a, "add_scal_scal", &a, Some(&yi));
                assign(&mut bf, id, &yi, "sub_scal_scal", &yi, Some(&xi));
                assign(&mut after, id, &c, "add_scal_scal", &c, Some(&yi));
                // As the front end writes them: the loop body and each
                // branch's continuation are basic blocks.
                let first = cfg.block(s, &body);
                cfg.edges.push((l, first, Some(1)));
                let cond = condition("greater_than", &xi, &b);
                let e = cfg.branch(s, first, None, &cond, [&bt, &bf]);
                let last = cfg.block(s, &after);
                cfg.edges.push((e, last, None));
                cfg.end_loop(l, last);
                let mut post = String::new();
                assign(&mut post, id, &a, "mul_scal_scal", &a, Some(&c));
                cfg.then_block(s, &post);
                count += 9;
            }
            // Longer expressions, as model code has them.
            4 => {
                let (x1, y2) = (
                    elem(s, "x", &int(1 + rng.below(10) as i64)),
                    elem(s, "y", &int(2)),
                );
                // a = x(k) * b + sin(c) * y(2) - a / b
                let mut e = Expr::default();
                let (v1, v2) = (e.leaf(&x1), e.leaf(&b));
                let m1 = e.op("Intrinsic", "mul_scal_scal", &[v1, v2]);
                let v3 = e.leaf(&c);
                let s1 = e.op("Intrinsic", "sin_scal", &[v3]);
                let v4 = e.leaf(&y2);
                let m2 = e.op("Intrinsic", "mul_scal_scal", &[s1, v4]);
                let p = e.op("Intrinsic", "add_scal_scal", &[m1, m2]);
                let (v5, v6) = (e.leaf(&a), e.leaf(&b));
                let d = e.op("Intrinsic", "div_scal_scal", &[v5, v6]);
                e.op("Intrinsic", "sub_scal_scal", &[p, d]);
                assign_expr(&mut body, id, &a, e);
                // c = exp(a * b) + g * c
                let mut e = Expr::default();
                let (v1, v2) = (e.leaf(&a), e.leaf(&b));
                let m = e.op("Intrinsic", "mul_scal_scal", &[v1, v2]);
                let x = e.op("Intrinsic", "exp_scal", &[m]);
                let (v3, v4) = (e.leaf(&g), e.leaf(&c));
                let m2 = e.op("Intrinsic", "mul_scal_scal", &[v3, v4]);
                e.op("Intrinsic", "add_scal_scal", &[x, m2]);
                assign_expr(&mut body, id, &c, e);
                assign(&mut body, id, &b, "mul_scal_scal", &a, Some(&c));
                cfg.then_block(s, &body);
                count += 3;
            }
            // Calls to one or two later routines.
            _ => {
                let calls = 1 + rng.below(2);
                for _ in 0..calls {
                    let callee = k + 1 + rng.below(3);
                    if callee >= routines {
                        continue;
                    }
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
                let x4 = elem(s, "x", &int(4));
                assign(&mut body, id, &x4, "mul_scal_scal", &g, Some(&a));
                cfg.then_block(s, &body);
                count += 1;
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
            statements: 200,
            seed: 7,
        };
        assert_eq!(program(&shape), program(&shape));
        assert_ne!(program(&shape), program(&Shape { seed: 8, ..shape }));
    }

    #[test]
    fn statement_count_follows_the_request() {
        for (routines, statements) in [(1, 8), (10, 1_000), (40, 10_000)] {
            let text = program(&Shape {
                routines,
                statements,
                seed: 1,
            });
            let n = text.matches("statement_id=").count();
            assert!(
                n >= statements && n < statements + routines * 10,
                "{routines} routines, {statements} statements asked, {n} made"
            );
            assert_eq!(text.matches("<xaif:ControlFlowGraph ").count(), routines);
        }
    }
}
