//! Generated XAIF programs of chosen size for the benchmark: `routines`
//! routines of about `stmts` statements in all, each mixing straight-line
//! blocks, DO loops, branches, array elements, globals and calls to the next
//! two routines (a call DAG whose depth grows with the routine count).

use std::fmt::Write as _;

fn var(scope: usize, name: &str) -> String {
    format!(r#"<xaif:SymbolReference vertex_id="1" scope_id="{scope}" symbol_id="{name}"/>"#)
}

fn elem(scope: usize, name: &str, index: &str) -> String {
    format!(
        r#"<xaif:SymbolReference vertex_id="1" scope_id="{scope}" symbol_id="{name}"/><xaif:ArrayElementReference vertex_id="2"><xaif:IndexTriplet><xaif:Index>{index}</xaif:Index></xaif:IndexTriplet></xaif:ArrayElementReference><xaif:VariableReferenceEdge edge_id="1" source="1" target="2"/>"#
    )
}

fn int(v: i64) -> String {
    format!(r#"<xaif:Constant vertex_id="1" type="integer" value="{v}"/>"#)
}

fn index_var(scope: usize, name: &str) -> String {
    format!(
        r#"<xaif:VariableReference vertex_id="1">{}</xaif:VariableReference>"#,
        var(scope, name)
    )
}

/// `lhs = op(a, b)` or `lhs = op(a)`.
fn assign(
    out: &mut String,
    id: &mut usize,
    tag: &str,
    lhs: &str,
    op: &str,
    a: &str,
    b: Option<&str>,
) {
    *id += 1;
    let _ = write!(
        out,
        r#"<xaif:{tag} statement_id="{id}"><xaif:AssignmentLHS>{lhs}</xaif:AssignmentLHS><xaif:AssignmentRHS><xaif:Intrinsic vertex_id="1" name="{op}"/><xaif:VariableReference vertex_id="2">{a}</xaif:VariableReference>"#
    );
    match b {
        Some(b) => {
            let _ = write!(
                out,
                r#"<xaif:VariableReference vertex_id="3">{b}</xaif:VariableReference><xaif:ExpressionEdge edge_id="1" source="2" target="1" position="1"/><xaif:ExpressionEdge edge_id="2" source="3" target="1" position="2"/>"#
            );
        }
        None => {
            let _ = write!(
                out,
                r#"<xaif:ExpressionEdge edge_id="1" source="2" target="1" position="1"/>"#
            );
        }
    }
    let _ = writeln!(out, "</xaif:AssignmentRHS></xaif:{tag}>");
}

struct Cfg {
    text: String,
    edges: Vec<(usize, usize, Option<u8>)>,
    next: usize,
}

impl Cfg {
    fn vertex(&mut self) -> usize {
        self.next += 1;
        self.next
    }
}

/// A program of `routines` routines and about `stmts` statements.
pub fn program(routines: usize, stmts: usize) -> String {
    let per = (stmts / routines).max(8);
    let mut out = String::new();
    out.push_str(r#"<?xml version="1.0" encoding="UTF-8"?>
<xaif:CallGraph xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xaif="http://www.mcs.anl.gov/XAIF" xsi:schemaLocation="http://www.mcs.anl.gov/XAIF xaif.xsd" program_name="bench" prefix="OpenAD_">
<xaif:ScopeHierarchy><xaif:Scope vertex_id="1"><xaif:SymbolTable>
<xaif:Symbol symbol_id="g_1" kind="variable" type="real" shape="scalar" active="1"/>
<xaif:Symbol symbol_id="gv_2" kind="variable" type="real" shape="vector" active="1"><xaif:DimensionBounds lower="1" upper="10"/></xaif:Symbol>
"#);
    for k in 0..routines {
        let _ = writeln!(
            out,
            r#"<xaif:Symbol symbol_id="r{k}__{k}" kind="subroutine" type="void" active="0"/>"#
        );
    }
    out.push_str("</xaif:SymbolTable></xaif:Scope>\n");
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
    out.push_str(r#"</xaif:ScopeHierarchy><xaif:AliasSetMap><xaif:AliasSet key="0"/></xaif:AliasSetMap><xaif:DUUDSetMap><xaif:StmtIdSet key="0"/></xaif:DUUDSetMap><xaif:DOSetMap><xaif:StmtIdSet key="0"/></xaif:DOSetMap>
"#);
    let mut id = 0;
    for k in 0..routines {
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
        };
        let entry = cfg.vertex();
        let _ = writeln!(cfg.text, r#"<xaif:Entry vertex_id="{entry}"/>"#);
        let mut prev = entry;
        let mut pending: Option<u8> = None;
        let mut count = 0;
        let (a, b, c) = (var(s, "a"), var(s, "b"), var(s, "c"));
        let g = var(1, "g_1");
        let mut template = k % 4;
        while count < per {
            match template % 4 {
                // A straight-line block with constant elements and a global.
                0 => {
                    let v = cfg.vertex();
                    let mut body = String::new();
                    assign(
                        &mut body,
                        &mut id,
                        "Assignment",
                        &a,
                        "mul_scal_scal",
                        &elem(s, "x", &int(1)),
                        Some(&b),
                    );
                    assign(&mut body, &mut id, "Assignment", &b, "sin_scal", &a, None);
                    assign(
                        &mut body,
                        &mut id,
                        "Assignment",
                        &elem(s, "y", &int(2)),
                        "add_scal_scal",
                        &elem(s, "y", &int(2)),
                        Some(&b),
                    );
                    assign(
                        &mut body,
                        &mut id,
                        "Assignment",
                        &g,
                        "mul_scal_scal",
                        &g,
                        Some(&c),
                    );
                    assign(
                        &mut body,
                        &mut id,
                        "Assignment",
                        &c,
                        "exp_scal",
                        &elem(1, "gv_2", &int(3)),
                        None,
                    );
                    let _ = writeln!(
                        cfg.text,
                        r#"<xaif:BasicBlock vertex_id="{v}" scope_id="{s}">{body}</xaif:BasicBlock>"#
                    );
                    cfg.edges.push((prev, v, pending.take()));
                    prev = v;
                    count += 5;
                }
                // A DO loop over computed elements.
                1 => {
                    let l = cfg.vertex();
                    let (mut init, mut upd) = (String::new(), String::new());
                    id += 1;
                    let _ = write!(
                        init,
                        r#"<xaif:Initialization statement_id="{id}"><xaif:AssignmentLHS>{}</xaif:AssignmentLHS><xaif:AssignmentRHS>{}</xaif:AssignmentRHS></xaif:Initialization>"#,
                        var(s, "i"),
                        int(1)
                    );
                    id += 1;
                    let _ = write!(
                        upd,
                        r#"<xaif:Update statement_id="{id}"><xaif:AssignmentLHS>{}</xaif:AssignmentLHS><xaif:AssignmentRHS><xaif:Intrinsic vertex_id="1" name="add_scal_scal"/><xaif:VariableReference vertex_id="2">{}</xaif:VariableReference><xaif:Constant vertex_id="3" type="integer" value="1"/><xaif:ExpressionEdge edge_id="1" source="2" target="1" position="1"/><xaif:ExpressionEdge edge_id="2" source="3" target="1" position="2"/></xaif:AssignmentRHS></xaif:Update>"#,
                        var(s, "i"),
                        var(s, "i")
                    );
                    let _ = writeln!(
                        cfg.text,
                        r#"<xaif:ForLoop vertex_id="{l}" reversal="anonymous">{init}<xaif:Condition><xaif:BooleanOperation vertex_id="1" name="less_or_equal"/><xaif:VariableReference vertex_id="2">{}</xaif:VariableReference><xaif:VariableReference vertex_id="3">{}</xaif:VariableReference><xaif:ExpressionEdge edge_id="1" source="2" target="1" position="1"/><xaif:ExpressionEdge edge_id="2" source="3" target="1" position="2"/></xaif:Condition>{upd}</xaif:ForLoop>"#,
                        var(s, "i"),
                        var(s, "n")
                    );
                    cfg.edges.push((prev, l, pending.take()));
                    let v = cfg.vertex();
                    let mut body = String::new();
                    let xi = elem(s, "x", &index_var(s, "i"));
                    let yi = elem(s, "y", &index_var(s, "i"));
                    assign(
                        &mut body,
                        &mut id,
                        "Assignment",
                        &a,
                        "mul_scal_scal",
                        &xi,
                        Some(&b),
                    );
                    assign(
                        &mut body,
                        &mut id,
                        "Assignment",
                        &yi,
                        "add_scal_scal",
                        &yi,
                        Some(&a),
                    );
                    assign(&mut body, &mut id, "Assignment", &b, "cos_scal", &yi, None);
                    assign(
                        &mut body,
                        &mut id,
                        "Assignment",
                        &c,
                        "div_scal_scal",
                        &c,
                        Some(&b),
                    );
                    let _ = writeln!(
                        cfg.text,
                        r#"<xaif:BasicBlock vertex_id="{v}" scope_id="{s}">{body}</xaif:BasicBlock>"#
                    );
                    cfg.edges.push((l, v, Some(1)));
                    let e = cfg.vertex();
                    let _ = writeln!(cfg.text, r#"<xaif:EndLoop vertex_id="{e}"/>"#);
                    cfg.edges.push((v, e, None));
                    cfg.edges.push((e, l, None));
                    prev = l;
                    count += 6;
                }
                // A branch.
                2 => {
                    let br = cfg.vertex();
                    let _ = writeln!(
                        cfg.text,
                        r#"<xaif:Branch vertex_id="{br}"><xaif:Condition><xaif:BooleanOperation vertex_id="1" name="greater_than"/><xaif:VariableReference vertex_id="2">{a}</xaif:VariableReference><xaif:VariableReference vertex_id="3">{b}</xaif:VariableReference><xaif:ExpressionEdge edge_id="1" source="2" target="1" position="1"/><xaif:ExpressionEdge edge_id="2" source="3" target="1" position="2"/></xaif:Condition></xaif:Branch>"#
                    );
                    cfg.edges.push((prev, br, pending.take()));
                    let (t, f) = (cfg.vertex(), cfg.vertex());
                    let (mut bt, mut bf) = (String::new(), String::new());
                    assign(
                        &mut bt,
                        &mut id,
                        "Assignment",
                        &c,
                        "mul_scal_scal",
                        &a,
                        Some(&b),
                    );
                    assign(&mut bt, &mut id, "Assignment", &a, "sqrt_scal", &c, None);
                    assign(
                        &mut bf,
                        &mut id,
                        "Assignment",
                        &c,
                        "add_scal_scal",
                        &a,
                        Some(&b),
                    );
                    assign(
                        &mut bf,
                        &mut id,
                        "Assignment",
                        &b,
                        "mul_scal_scal",
                        &c,
                        Some(&c),
                    );
                    let _ = writeln!(
                        cfg.text,
                        r#"<xaif:BasicBlock vertex_id="{t}" scope_id="{s}">{bt}</xaif:BasicBlock><xaif:BasicBlock vertex_id="{f}" scope_id="{s}">{bf}</xaif:BasicBlock>"#
                    );
                    let e = cfg.vertex();
                    let _ = writeln!(cfg.text, r#"<xaif:EndBranch vertex_id="{e}"/>"#);
                    cfg.edges.push((br, t, Some(1)));
                    cfg.edges.push((br, f, Some(0)));
                    cfg.edges.push((t, e, None));
                    cfg.edges.push((f, e, None));
                    prev = e;
                    count += 4;
                }
                // Calls to the next two routines.
                _ => {
                    let v = cfg.vertex();
                    let mut body = String::new();
                    for callee in [k + 1, k + 2] {
                        if callee >= routines {
                            continue;
                        }
                        id += 1;
                        let _ = write!(
                            body,
                            r#"<xaif:SubroutineCall statement_id="{id}" scope_id="1" symbol_id="r{callee}__{callee}" formalArgCount="3"><xaif:Argument position="1"><xaif:VariableReference vertex_id="1">{}</xaif:VariableReference></xaif:Argument><xaif:Argument position="2"><xaif:VariableReference vertex_id="1">{}</xaif:VariableReference></xaif:Argument><xaif:Argument position="3"><xaif:VariableReference vertex_id="1">{}</xaif:VariableReference></xaif:Argument></xaif:SubroutineCall>"#,
                            var(s, "y"),
                            var(s, "x"),
                            var(s, "n")
                        );
                        count += 1;
                    }
                    assign(
                        &mut body,
                        &mut id,
                        "Assignment",
                        &elem(s, "x", &int(4)),
                        "mul_scal_scal",
                        &g,
                        Some(&a),
                    );
                    count += 1;
                    let _ = writeln!(
                        cfg.text,
                        r#"<xaif:BasicBlock vertex_id="{v}" scope_id="{s}">{body}</xaif:BasicBlock>"#
                    );
                    cfg.edges.push((prev, v, pending.take()));
                    prev = v;
                }
            }
            template += 1;
        }
        let exit = cfg.vertex();
        let _ = writeln!(cfg.text, r#"<xaif:Exit vertex_id="{exit}"/>"#);
        cfg.edges.push((prev, exit, pending.take()));
        out.push_str(&cfg.text);
        for (n, (src, dst, cv)) in cfg.edges.iter().enumerate() {
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
    out.push_str("</xaif:CallGraph>\n");
    out
}
