//! Generated programs that are deep or long where XAIF is flat: one
//! expression with `n` nested operations, `n` nested `If`s, `n` nested
//! `ForLoop`s. Every pass must handle them without native recursion in
//! proportion to `n` and in time linear in `n`; the tests and `cargo xtask
//! deep` use them. Each is valid against `xaif.xsd`.
//!
//! The routine is `head(X, Y, I)` with real scalars `X`, `Y` (active) and an
//! integer `I`.

use std::fmt::Write;

const HEAD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<xaif:CallGraph xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xaif="http://www.mcs.anl.gov/XAIF" xsi:schemaLocation="http://www.mcs.anl.gov/XAIF xaif.xsd" program_name="deep" prefix="OpenAD_">
  <xaif:ScopeHierarchy>
    <xaif:Scope vertex_id="1"><xaif:SymbolTable>
      <xaif:Symbol symbol_id="head" kind="subroutine" type="void" active="0"/>
    </xaif:SymbolTable></xaif:Scope>
    <xaif:Scope vertex_id="2"><xaif:SymbolTable>
      <xaif:Symbol symbol_id="X" kind="variable" type="real" shape="scalar" active="1"/>
      <xaif:Symbol symbol_id="Y" kind="variable" type="real" shape="scalar" active="1"/>
      <xaif:Symbol symbol_id="I" kind="variable" type="integer" shape="scalar" active="0"/>
LOCALS    </xaif:SymbolTable></xaif:Scope>
    <xaif:ScopeEdge edge_id="1" source="2" target="1"/>
  </xaif:ScopeHierarchy>
  <xaif:AliasSetMap><xaif:AliasSet key="0"/></xaif:AliasSetMap>
  <xaif:DUUDSetMap><xaif:StmtIdSet key="0"/></xaif:DUUDSetMap>
  <xaif:DOSetMap><xaif:StmtIdSet key="0"/></xaif:DOSetMap>
  <xaif:ControlFlowGraph vertex_id="1" scope_id="1" symbol_id="head" controlflowgraph_scope_id="2">
    <xaif:ArgumentList>
      <xaif:ArgumentSymbolReference position="1" scope_id="2" symbol_id="X" intent="inout"/>
      <xaif:ArgumentSymbolReference position="2" scope_id="2" symbol_id="Y" intent="inout"/>
      <xaif:ArgumentSymbolReference position="3" scope_id="2" symbol_id="I" intent="in"/>
    </xaif:ArgumentList>
"#;

const TAIL: &str = "  </xaif:ControlFlowGraph>\n</xaif:CallGraph>\n";

fn head(locals: &str) -> String {
    HEAD.replace("LOCALS", locals)
}

fn var(out: &mut String, id: &str, symbol: &str) {
    let _ = writeln!(
        out,
        r#"<xaif:VariableReference vertex_id="{id}"><xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="{symbol}"/></xaif:VariableReference>"#
    );
}

fn edge(out: &mut String, id: &str, source: &str, target: &str, position: usize) {
    let _ = writeln!(
        out,
        r#"<xaif:ExpressionEdge edge_id="{id}" source="{source}" target="{target}" position="{position}"/>"#
    );
}

fn assignment(id: &str, lhs: &str, rhs: &str) -> String {
    format!(
        r#"<xaif:Assignment statement_id="{id}"><xaif:AssignmentLHS><xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="{lhs}"/></xaif:AssignmentLHS><xaif:AssignmentRHS>
{rhs}</xaif:AssignmentRHS></xaif:Assignment>
"#
    )
}

fn block(id: &str, body: &str) -> String {
    format!("<xaif:BasicBlock vertex_id=\"{id}\" scope_id=\"2\">\n{body}</xaif:BasicBlock>\n")
}

fn cfg_edge(out: &mut String, n: &mut usize, source: &str, target: &str, value: Option<u8>) {
    *n += 1;
    let cond = value
        .map(|v| format!(r#" has_condition_value="true" condition_value="{v}""#))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        r#"<xaif:ControlFlowEdge edge_id="{n}" source="{source}" target="{target}"{cond}/>"#
    );
}

/// `Y = f(f(…f(X)…))` with `n` applications of the unary intrinsic `op`
/// (e.g. `sin_scal`): one expression `n` operations deep.
pub fn unary_chain(n: usize, op: &str) -> String {
    let mut rhs = String::new();
    for k in 1..=n {
        let _ = writeln!(rhs, r#"<xaif:Intrinsic vertex_id="{k}" name="{op}"/>"#);
    }
    var(&mut rhs, &(n + 1).to_string(), "X");
    for k in 1..=n {
        edge(
            &mut rhs,
            &k.to_string(),
            &(k + 1).to_string(),
            &k.to_string(),
            1,
        );
    }
    straight_line(&assignment("s1", "Y", &rhs))
}

/// [`unary_chain`] on arrays: `X` and `Y` are vectors of two elements and
/// `Y = f(f(…f(X)…))` is one whole-array expression `n` operations deep,
/// whose temporaries are arrays shaped like `X`.
pub fn array_chain(n: usize, op: &str) -> String {
    let vector = |name: &str| {
        (
            format!(
                r#"<xaif:Symbol symbol_id="{name}" kind="variable" type="real" shape="scalar" active="1"/>"#
            ),
            format!(
                r#"<xaif:Symbol symbol_id="{name}" kind="variable" type="real" shape="vector" active="1"><xaif:DimensionBounds lower="1" upper="2"/></xaif:Symbol>"#
            ),
        )
    };
    let mut text = unary_chain(n, op);
    for name in ["X", "Y"] {
        let (scalar, array) = vector(name);
        text = text.replacen(&scalar, &array, 1);
    }
    text
}

/// `Y = (…((X + 1) + 1)…) + 1` with `n` additions of constants: one
/// expression `n` operations deep whose partials are all unit (small
/// derivative code).
pub fn sum_chain(n: usize) -> String {
    let mut rhs = String::new();
    for k in 1..=n {
        let _ = writeln!(
            rhs,
            r#"<xaif:Intrinsic vertex_id="{k}" name="add_scal_scal"/><xaif:Constant vertex_id="c{k}" type="real" value="1.0"/>"#
        );
    }
    var(&mut rhs, &(n + 1).to_string(), "X");
    for k in 1..=n {
        edge(
            &mut rhs,
            &format!("a{k}"),
            &(k + 1).to_string(),
            &k.to_string(),
            1,
        );
        edge(
            &mut rhs,
            &format!("b{k}"),
            &format!("c{k}"),
            &k.to_string(),
            2,
        );
    }
    straight_line(&assignment("s1", "Y", &rhs))
}

fn straight_line(statement: &str) -> String {
    let mut s = head("");
    s.push_str("<xaif:Entry vertex_id=\"1\"/>\n");
    s.push_str(&block("2", statement));
    s.push_str("<xaif:Exit vertex_id=\"3\"/>\n");
    let mut e = 0;
    cfg_edge(&mut s, &mut e, "1", "2", None);
    cfg_edge(&mut s, &mut e, "2", "3", None);
    s.push_str(TAIL);
    s
}

fn sin_x() -> String {
    let mut rhs = String::from("<xaif:Intrinsic vertex_id=\"1\" name=\"sin_scal\"/>\n");
    var(&mut rhs, "2", "X");
    edge(&mut rhs, "1", "2", "1", 1);
    rhs
}

fn x_times_y() -> String {
    let mut rhs = String::from("<xaif:Intrinsic vertex_id=\"1\" name=\"mul_scal_scal\"/>\n");
    var(&mut rhs, "2", "X");
    var(&mut rhs, "3", "Y");
    edge(&mut rhs, "1", "2", "1", 1);
    edge(&mut rhs, "2", "3", "1", 2);
    rhs
}

/// `n` nested `If`s: `if (I < k) then <next level> else Y = X * Y`, the
/// innermost then-branch `Y = sin(X)`.
pub fn nested_ifs(n: usize) -> String {
    let mut s = head("");
    let mut edges = String::new();
    let mut e = 0;
    s.push_str("<xaif:Entry vertex_id=\"entry\"/>\n");
    cfg_edge(&mut edges, &mut e, "entry", "if0", None);
    for k in 0..n {
        let mut cond = String::from(
            "<xaif:Condition><xaif:BooleanOperation vertex_id=\"1\" name=\"less_than\"/>",
        );
        var(&mut cond, "2", "I");
        let _ = write!(
            cond,
            r#"<xaif:Constant vertex_id="3" type="integer" value="{k}"/>"#
        );
        edge(&mut cond, "1", "2", "1", 1);
        edge(&mut cond, "2", "3", "1", 2);
        cond.push_str("</xaif:Condition>");
        let _ = writeln!(s, r#"<xaif:If vertex_id="if{k}">{cond}</xaif:If>"#);
        s.push_str(&block(
            &format!("else{k}"),
            &assignment(&format!("se{k}"), "Y", &x_times_y()),
        ));
        let _ = writeln!(s, r#"<xaif:EndBranch vertex_id="end{k}"/>"#);
        let then = if k + 1 < n {
            format!("if{}", k + 1)
        } else {
            "inner".to_string()
        };
        cfg_edge(&mut edges, &mut e, &format!("if{k}"), &then, Some(1));
        cfg_edge(
            &mut edges,
            &mut e,
            &format!("if{k}"),
            &format!("else{k}"),
            Some(0),
        );
        cfg_edge(
            &mut edges,
            &mut e,
            &format!("else{k}"),
            &format!("end{k}"),
            None,
        );
        let after = if k == 0 {
            "exit".to_string()
        } else {
            format!("end{}", k - 1)
        };
        cfg_edge(&mut edges, &mut e, &format!("end{k}"), &after, None);
    }
    s.push_str(&block("inner", &assignment("sin", "Y", &sin_x())));
    cfg_edge(
        &mut edges,
        &mut e,
        "inner",
        &format!("end{}", n.saturating_sub(1)),
        None,
    );
    s.push_str("<xaif:Exit vertex_id=\"exit\"/>\n");
    s.push_str(&edges);
    s.push_str(TAIL);
    s
}

/// `n` nested `DO Ik = 1, 2` loops around `Y = X * Y`.
pub fn nested_loops(n: usize) -> String {
    let mut locals = String::new();
    for k in 0..n {
        let _ = writeln!(
            locals,
            r#"      <xaif:Symbol symbol_id="I{k}" kind="variable" type="integer" shape="scalar" active="0"/>"#
        );
    }
    let mut s = head(&locals);
    let mut edges = String::new();
    let mut e = 0;
    s.push_str("<xaif:Entry vertex_id=\"entry\"/>\n");
    cfg_edge(&mut edges, &mut e, "entry", "loop0", None);
    for k in 0..n {
        let i = format!("I{k}");
        let lhs = format!(
            r#"<xaif:AssignmentLHS><xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="{i}"/></xaif:AssignmentLHS>"#
        );
        let mut cond = String::from(
            "<xaif:Condition><xaif:BooleanOperation vertex_id=\"1\" name=\"less_or_equal\"/>",
        );
        var(&mut cond, "2", &i);
        cond.push_str(r#"<xaif:Constant vertex_id="3" type="integer" value="2"/>"#);
        edge(&mut cond, "1", "2", "1", 1);
        edge(&mut cond, "2", "3", "1", 2);
        cond.push_str("</xaif:Condition>");
        let mut inc = String::from(r#"<xaif:Intrinsic vertex_id="1" name="add_scal_scal"/>"#);
        var(&mut inc, "2", &i);
        inc.push_str(r#"<xaif:Constant vertex_id="3" type="integer" value="1"/>"#);
        edge(&mut inc, "1", "2", "1", 1);
        edge(&mut inc, "2", "3", "1", 2);
        let _ = writeln!(
            s,
            r#"<xaif:ForLoop vertex_id="loop{k}"><xaif:Initialization statement_id="init{k}">{lhs}<xaif:AssignmentRHS><xaif:Constant vertex_id="1" type="integer" value="1"/></xaif:AssignmentRHS></xaif:Initialization>{cond}<xaif:Update statement_id="update{k}">{lhs}<xaif:AssignmentRHS>{inc}</xaif:AssignmentRHS></xaif:Update></xaif:ForLoop>"#
        );
        let _ = writeln!(s, r#"<xaif:EndLoop vertex_id="endloop{k}"/>"#);
        let body = if k + 1 < n {
            format!("loop{}", k + 1)
        } else {
            "inner".to_string()
        };
        cfg_edge(&mut edges, &mut e, &format!("loop{k}"), &body, Some(1));
        let after = if k == 0 {
            "exit".to_string()
        } else {
            format!("endloop{}", k - 1)
        };
        cfg_edge(&mut edges, &mut e, &format!("loop{k}"), &after, Some(0));
        cfg_edge(
            &mut edges,
            &mut e,
            &format!("endloop{k}"),
            &format!("loop{k}"),
            None,
        );
    }
    s.push_str(&block("inner", &assignment("mul", "Y", &x_times_y())));
    cfg_edge(
        &mut edges,
        &mut e,
        "inner",
        &format!("endloop{}", n.saturating_sub(1)),
        None,
    );
    s.push_str("<xaif:Exit vertex_id=\"exit\"/>\n");
    s.push_str(&edges);
    s.push_str(TAIL);
    s
}

/// `head` calls `foo(P, …, P)` with `n` arguments, `P` a passive real and
/// `foo` having `n` active real formals (`foo` sets `A1 = sin(A1)`; `head`
/// then sets `Y = sin(X)`): one call with `n` arguments, each passed
/// through an active temporary of its own in the derivative code.
pub fn wide_call(n: usize) -> String {
    let mut s = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<xaif:CallGraph xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xaif="http://www.mcs.anl.gov/XAIF" xsi:schemaLocation="http://www.mcs.anl.gov/XAIF xaif.xsd" program_name="wide" prefix="OpenAD_">
  <xaif:ScopeHierarchy>
    <xaif:Scope vertex_id="1"><xaif:SymbolTable>
      <xaif:Symbol symbol_id="head" kind="subroutine" type="void" active="0"/>
      <xaif:Symbol symbol_id="foo" kind="subroutine" type="void" active="0"/>
    </xaif:SymbolTable></xaif:Scope>
    <xaif:Scope vertex_id="2"><xaif:SymbolTable>
      <xaif:Symbol symbol_id="X" kind="variable" type="real" shape="scalar" active="1"/>
      <xaif:Symbol symbol_id="Y" kind="variable" type="real" shape="scalar" active="1"/>
      <xaif:Symbol symbol_id="P" kind="variable" type="real" shape="scalar" active="0"/>
    </xaif:SymbolTable></xaif:Scope>
    <xaif:Scope vertex_id="3"><xaif:SymbolTable>
"#,
    );
    for k in 1..=n {
        let _ = writeln!(
            s,
            r#"      <xaif:Symbol symbol_id="A{k}" kind="variable" type="real" shape="scalar" active="1"/>"#
        );
    }
    s.push_str(
        r#"    </xaif:SymbolTable></xaif:Scope>
    <xaif:ScopeEdge edge_id="1" source="2" target="1"/>
    <xaif:ScopeEdge edge_id="2" source="3" target="1"/>
  </xaif:ScopeHierarchy>
  <xaif:AliasSetMap><xaif:AliasSet key="0"/></xaif:AliasSetMap>
  <xaif:DUUDSetMap><xaif:StmtIdSet key="0"/></xaif:DUUDSetMap>
  <xaif:DOSetMap><xaif:StmtIdSet key="0"/></xaif:DOSetMap>
  <xaif:ControlFlowGraph vertex_id="1" scope_id="1" symbol_id="foo" controlflowgraph_scope_id="3">
    <xaif:ArgumentList>
"#,
    );
    for k in 1..=n {
        let _ = writeln!(
            s,
            r#"      <xaif:ArgumentSymbolReference position="{k}" scope_id="3" symbol_id="A{k}" intent="inout"/>"#
        );
    }
    let sin = |scope: &str, x: &str| {
        format!(
            r#"<xaif:Intrinsic vertex_id="1" name="sin_scal"/>
<xaif:VariableReference vertex_id="2"><xaif:SymbolReference vertex_id="1" scope_id="{scope}" symbol_id="{x}"/></xaif:VariableReference>
<xaif:ExpressionEdge edge_id="1" source="2" target="1" position="1"/>
"#
        )
    };
    let _ = write!(
        s,
        r#"    </xaif:ArgumentList>
<xaif:Entry vertex_id="1"/>
<xaif:BasicBlock vertex_id="2" scope_id="3">
<xaif:Assignment statement_id="f1"><xaif:AssignmentLHS><xaif:SymbolReference vertex_id="1" scope_id="3" symbol_id="A1"/></xaif:AssignmentLHS><xaif:AssignmentRHS>
{}</xaif:AssignmentRHS></xaif:Assignment>
</xaif:BasicBlock>
<xaif:Exit vertex_id="3"/>
<xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>
<xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>
  </xaif:ControlFlowGraph>
  <xaif:ControlFlowGraph vertex_id="2" scope_id="1" symbol_id="head" controlflowgraph_scope_id="2">
    <xaif:ArgumentList>
      <xaif:ArgumentSymbolReference position="1" scope_id="2" symbol_id="X" intent="inout"/>
      <xaif:ArgumentSymbolReference position="2" scope_id="2" symbol_id="Y" intent="inout"/>
    </xaif:ArgumentList>
<xaif:Entry vertex_id="1"/>
<xaif:BasicBlock vertex_id="2" scope_id="2">
<xaif:SubroutineCall statement_id="c1" scope_id="1" symbol_id="foo" formalArgCount="{n}">
"#,
        sin("3", "A1")
    );
    for k in 1..=n {
        let _ = writeln!(
            s,
            r#"<xaif:Argument position="{k}"><xaif:VariableReference vertex_id="1" active="0"><xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="P"/></xaif:VariableReference></xaif:Argument>"#
        );
    }
    let _ = write!(
        s,
        r#"</xaif:SubroutineCall>
<xaif:Assignment statement_id="h1"><xaif:AssignmentLHS><xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="Y"/></xaif:AssignmentLHS><xaif:AssignmentRHS>
{}</xaif:AssignmentRHS></xaif:Assignment>
</xaif:BasicBlock>
<xaif:Exit vertex_id="3"/>
<xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>
<xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>
  </xaif:ControlFlowGraph>
</xaif:CallGraph>
"#,
        sin("2", "X")
    );
    s
}
