//! The short form of an output program (the reference drivers without
//! `-V`).
//!
//! The front end's analysis results travel through a transformation as the
//! alias and DU-UD maps, the `alias` and `du_ud` keys of every variable
//! reference, the `do_chain` keys of statements and each routine's `Mod`,
//! `ModLocal`, `Read` and `ReadLocal` lists. The back end needs none of
//! them, so the reference engine prints them only when asked (`-V`,
//! "verbose XAIF"); otherwise the alias and DU-UD maps keep just their
//! empty key 0 and the keys and lists are left out. The DO map stays.

use crate::model::{
    AliasSet, ArgValue, CfgVertex, Expr, ExprVertexKind, InlinableArg, Program, PropKind, RefGraph,
    RefVertexKind, Routine, RoutineId, SideEffectKind, Stmt, StmtIdSet, StmtKind, VarRef,
    VertexKind,
};
use crate::Attrs;

impl Program {
    /// Removes what only `-V` prints: see the module documentation.
    pub fn make_terse(&mut self) {
        self.make_maps_terse();
        for r in self.routines.values_mut() {
            routine_lists(r);
        }
        for v in self.vertices.values_mut() {
            vertex(v);
        }
        for s in self.stmts.values_mut() {
            stmt(s);
        }
    }

    /// The part of [`Program::make_terse`] outside the routines: the alias
    /// and DU-UD maps keep only their key 0.
    pub fn make_maps_terse(&mut self) {
        if let Some(map) = &mut self.alias_map {
            map.sets = vec![AliasSet {
                attrs: Attrs::new().with("key", "0"),
                ranges: Vec::new(),
            }];
        }
        if let Some(map) = &mut self.duud_map {
            map.sets = vec![StmtIdSet {
                attrs: Attrs::new().with("key", "0"),
                ids: Vec::new(),
            }];
        }
    }

    /// The part of [`Program::make_terse`] inside routine `r` (its lists,
    /// vertices and statements), for output written one routine at a
    /// time: [`Program::make_maps_terse`] and this for every routine give
    /// the bytes of `make_terse`.
    pub fn make_routine_terse(&mut self, r: RoutineId) {
        routine_lists(&mut self.routines[r]);
        let (vertices, stmts) = self.routine_contents(r);
        for v in vertices {
            vertex(&mut self.vertices[v]);
        }
        for s in stmts {
            stmt(&mut self.stmts[s]);
        }
    }
}

/// A routine's side-effect lists: only `OnEntry` stays, without keys.
fn routine_lists(r: &mut Routine) {
    r.side_effects.retain(|l| l.kind == SideEffectKind::OnEntry);
    for l in &mut r.side_effects {
        for v in &mut l.refs {
            var_ref(v);
        }
    }
}

/// A vertex's condition, without keys.
fn vertex(v: &mut CfgVertex) {
    match &mut v.kind {
        VertexKind::Branch(Some(c))
        | VertexKind::If(Some(c))
        | VertexKind::PreLoop(Some(c))
        | VertexKind::PostLoop(Some(c))
        | VertexKind::ForLoop {
            condition: Some(c), ..
        } => expr(c),
        _ => {}
    }
}

/// A statement without `do_chain` and without keys in its references.
fn stmt(s: &mut Stmt) {
    s.attrs.discard("do_chain");
    match &mut s.kind {
        StmtKind::Assignment(a) => {
            var_ref(&mut a.lhs);
            expr(&mut a.rhs);
        }
        StmtKind::SubroutineCall(args) => {
            for a in args {
                if let ArgValue::Variable(v) = &mut a.value {
                    var_ref(v);
                }
            }
        }
        StmtKind::InlinableCall(args) => {
            for a in args {
                match a {
                    InlinableArg::Argument(a) => {
                        if let ArgValue::Variable(v) = &mut a.value {
                            var_ref(v);
                        }
                    }
                    InlinableArg::Substitute(v) => var_ref(v),
                }
            }
        }
        StmtKind::DerivativePropagator(entries) => {
            for e in entries {
                match &mut e.kind {
                    PropKind::SetDeriv { tgt, src }
                    | PropKind::SetNegDeriv { tgt, src }
                    | PropKind::IncDeriv { tgt, src }
                    | PropKind::DecDeriv { tgt, src } => {
                        var_ref(tgt);
                        var_ref(src);
                    }
                    PropKind::Sax { terms, y } | PropKind::Saxpy { terms, y } => {
                        for t in terms {
                            expr(&mut t.a);
                            var_ref(&mut t.x);
                        }
                        var_ref(y);
                    }
                    PropKind::ZeroDeriv(x) => var_ref(x),
                }
            }
        }
        StmtKind::Marker => {}
    }
}

fn keys(a: &mut Attrs) {
    a.discard("alias");
    a.discard("du_ud");
}

fn var_ref(v: &mut VarRef) {
    keys(&mut v.attrs);
    let mut stack = Vec::new();
    subscripts(&mut v.graph, &mut stack);
    drain(stack);
}

fn expr(e: &mut Expr) {
    drain(vec![e]);
}

/// The subscript expressions of a reference graph, onto the work list.
fn subscripts<'a>(g: &'a mut RefGraph, stack: &mut Vec<&'a mut Expr>) {
    for v in g.vertices.iter_mut() {
        if let RefVertexKind::ArrayElement { triplets } = &mut v.kind {
            for t in triplets.iter_mut() {
                for x in [&mut t.index, &mut t.bound, &mut t.stride]
                    .into_iter()
                    .flatten()
                {
                    stack.push(x);
                }
            }
        }
    }
}

/// Removes the keys from every reference of the expressions on the work
/// list and of the subscripts inside them (no recursion: subscripts may
/// nest as deep as the input).
fn drain(mut stack: Vec<&mut Expr>) {
    while let Some(e) = stack.pop() {
        let Expr { vertices, .. } = e;
        for v in vertices.iter_mut() {
            keys(&mut v.attrs);
            match &mut v.kind {
                ExprVertexKind::VariableReference(g) => subscripts(g, &mut stack),
                ExprVertexKind::FunctionCall(args) => {
                    for a in args.iter_mut() {
                        keys(&mut a.attrs);
                        subscripts(&mut a.graph, &mut stack);
                    }
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_maps_and_lists_go_the_do_map_stays() {
        let text = r#"<?xml version="1.0"?>
<xaif:CallGraph xmlns:xaif="http://www.mcs.anl.gov/XAIF" program_name="p" prefix="OpenAD_">
  <xaif:ScopeHierarchy>
    <xaif:Scope vertex_id="1"><xaif:SymbolTable>
      <xaif:Symbol symbol_id="x" kind="variable" type="real" shape="vector" active="1"><xaif:DimensionBounds lower="1" upper="2"/></xaif:Symbol>
      <xaif:Symbol symbol_id="i" kind="variable" type="integer" shape="scalar"/>
      <xaif:Symbol symbol_id="h" kind="subroutine" type="void"/>
    </xaif:SymbolTable></xaif:Scope>
  </xaif:ScopeHierarchy>
  <xaif:AliasSetMap><xaif:AliasSet key="0"/><xaif:AliasSet key="1"><xaif:AliasRange from_virtual_address="1" to_virtual_address="1" partial="false"/></xaif:AliasSet></xaif:AliasSetMap>
  <xaif:DUUDSetMap><xaif:StmtIdSet key="0"/><xaif:StmtIdSet key="1"><xaif:StatementId idRef="s"/></xaif:StmtIdSet></xaif:DUUDSetMap>
  <xaif:DOSetMap><xaif:StmtIdSet key="0"/><xaif:StmtIdSet key="1"><xaif:StatementId idRef="s"/></xaif:StmtIdSet></xaif:DOSetMap>
  <xaif:ControlFlowGraph vertex_id="1" scope_id="1" symbol_id="h" controlflowgraph_scope_id="1">
    <xaif:Mod><xaif:SideEffectReference vertex_id="1"><xaif:SymbolReference vertex_id="1" scope_id="1" symbol_id="x"/></xaif:SideEffectReference></xaif:Mod>
    <xaif:Entry vertex_id="e"/>
    <xaif:BasicBlock vertex_id="b" scope_id="1">
      <xaif:Assignment statement_id="s" do_chain="1">
        <xaif:AssignmentLHS alias="1" du_ud="1">
          <xaif:SymbolReference vertex_id="1" scope_id="1" symbol_id="x"/>
          <xaif:ArrayElementReference vertex_id="2"><xaif:IndexTriplet><xaif:Index>
            <xaif:VariableReference vertex_id="1" alias="1" du_ud="1"><xaif:SymbolReference vertex_id="1" scope_id="1" symbol_id="i"/></xaif:VariableReference>
          </xaif:Index></xaif:IndexTriplet></xaif:ArrayElementReference>
          <xaif:VariableReferenceEdge edge_id="1" source="1" target="2"/>
        </xaif:AssignmentLHS>
        <xaif:AssignmentRHS><xaif:Constant vertex_id="1" type="real" value="1.0"/></xaif:AssignmentRHS>
      </xaif:Assignment>
    </xaif:BasicBlock>
    <xaif:Exit vertex_id="x"/>
    <xaif:ControlFlowEdge edge_id="1" source="e" target="b"/>
    <xaif:ControlFlowEdge edge_id="2" source="b" target="x"/>
  </xaif:ControlFlowGraph>
</xaif:CallGraph>
"#;
        let (mut p, _) = crate::read_program_str(text, None).unwrap();
        p.make_terse();
        let out = crate::write_program(&p);
        assert!(!out.contains("alias=") && !out.contains("du_ud="), "{out}");
        assert!(
            !out.contains("do_chain") && !out.contains("xaif:Mod"),
            "{out}"
        );
        assert!(!out.contains("AliasSet key=\"1\"") && out.contains("AliasSet key=\"0\""));
        assert!(
            out.contains("<xaif:StatementId idRef=\"s\"/>"),
            "the DO map stays"
        );
    }

    /// Shortening and writing one routine at a time (a streamed
    /// transformation) gives the bytes of the whole model's.
    #[test]
    fn routine_by_routine_gives_the_same_bytes() {
        let dir = two_routines();
        let (whole, _) = crate::read_program_str(&dir, None).unwrap();
        let mut by_routine = whole.clone();
        let mut whole = whole;
        whole.make_terse();
        let expected = crate::write_program(&whole);
        by_routine.make_maps_terse();
        let mut text = Vec::new();
        crate::write_header_to(&by_routine, &mut text).unwrap();
        for item in by_routine.items.clone() {
            if let crate::CallGraphItem::Routine(r) = item {
                by_routine.make_routine_terse(r);
            }
            crate::write_item_to(&by_routine, item, &mut text).unwrap();
        }
        crate::write_footer_to(&mut text).unwrap();
        assert_eq!(String::from_utf8(text).unwrap(), expected);
        assert!(expected.contains("CallGraphEdge") && !expected.contains("du_ud="));
    }

    /// A routine moved into a program of its own writes the same bytes,
    /// also when its graphs share elements (here one body used by two
    /// replacements), and leaves nothing behind.
    #[test]
    fn a_taken_routine_writes_the_same_bytes() {
        let (mut p, _) = crate::read_program_str(&two_routines(), None).unwrap();
        let first = p.routines.ids().next().unwrap();
        let crate::RoutineBody::Graph(cfg) = p.routines[first].body else {
            panic!("a plain body");
        };
        p.routines[first].body = crate::RoutineBody::Replacements(
            ["1", "2"]
                .into_iter()
                .map(|ph| crate::Replacement {
                    attrs: crate::Attrs::new().with("placeholder", ph),
                    cfg,
                })
                .collect(),
        );
        let mut expected = Vec::new();
        let mut taken = Vec::new();
        for item in p.items.clone() {
            crate::write_item_to(&p, item, &mut expected).unwrap();
            match item {
                crate::CallGraphItem::Routine(r) => {
                    let part = p.take_routine(r);
                    crate::write_item_to(&part, part.items[0], &mut taken).unwrap();
                    assert_eq!(part.stmts.len(), 1, "the shared statement is taken once");
                    assert!(p.routine_contents(r).0.is_empty(), "nothing left behind");
                }
                crate::CallGraphItem::Edge(_) => {
                    crate::write_item_to(&p, item, &mut taken).unwrap();
                }
            }
        }
        let expected = String::from_utf8(expected).unwrap();
        assert_eq!(String::from_utf8(taken).unwrap(), expected);
        assert_eq!(expected.matches("<xaif:Replacement ").count(), 2);
    }

    /// Two routines with keys, lists and a call graph edge between them.
    fn two_routines() -> String {
        let routine = |name: &str, scope: &str| {
            format!(
                r#"  <xaif:ControlFlowGraph vertex_id="{name}" scope_id="1" symbol_id="{name}" controlflowgraph_scope_id="{scope}">
    <xaif:Mod><xaif:SideEffectReference vertex_id="1"><xaif:SymbolReference vertex_id="1" scope_id="1" symbol_id="x"/></xaif:SideEffectReference></xaif:Mod>
    <xaif:Entry vertex_id="e"/>
    <xaif:BasicBlock vertex_id="b" scope_id="{scope}">
      <xaif:Assignment statement_id="s" do_chain="1">
        <xaif:AssignmentLHS alias="1" du_ud="1"><xaif:SymbolReference vertex_id="1" scope_id="1" symbol_id="x"/></xaif:AssignmentLHS>
        <xaif:AssignmentRHS><xaif:VariableReference vertex_id="1" alias="1" du_ud="1"><xaif:SymbolReference vertex_id="1" scope_id="1" symbol_id="x"/></xaif:VariableReference></xaif:AssignmentRHS>
      </xaif:Assignment>
    </xaif:BasicBlock>
    <xaif:Exit vertex_id="x"/>
    <xaif:ControlFlowEdge edge_id="1" source="e" target="b"/>
    <xaif:ControlFlowEdge edge_id="2" source="b" target="x"/>
  </xaif:ControlFlowGraph>
"#
            )
        };
        format!(
            r#"<?xml version="1.0"?>
<xaif:CallGraph xmlns:xaif="http://www.mcs.anl.gov/XAIF" program_name="p" prefix="OpenAD_">
  <xaif:ScopeHierarchy>
    <xaif:Scope vertex_id="1"><xaif:SymbolTable>
      <xaif:Symbol symbol_id="x" kind="variable" type="real" shape="scalar" active="1"/>
      <xaif:Symbol symbol_id="f" kind="subroutine" type="void"/>
      <xaif:Symbol symbol_id="g" kind="subroutine" type="void"/>
    </xaif:SymbolTable></xaif:Scope>
    <xaif:Scope vertex_id="2"><xaif:SymbolTable/></xaif:Scope>
    <xaif:Scope vertex_id="3"><xaif:SymbolTable/></xaif:Scope>
    <xaif:ScopeEdge edge_id="1" source="2" target="1"/>
    <xaif:ScopeEdge edge_id="2" source="3" target="1"/>
  </xaif:ScopeHierarchy>
  <xaif:AliasSetMap><xaif:AliasSet key="0"/><xaif:AliasSet key="1"><xaif:AliasRange from_virtual_address="1" to_virtual_address="1" partial="false"/></xaif:AliasSet></xaif:AliasSetMap>
  <xaif:DUUDSetMap><xaif:StmtIdSet key="0"/><xaif:StmtIdSet key="1"><xaif:StatementId idRef="s"/></xaif:StmtIdSet></xaif:DUUDSetMap>
  <xaif:DOSetMap><xaif:StmtIdSet key="0"/></xaif:DOSetMap>
{}{}  <xaif:CallGraphEdge edge_id="1" source="f" target="g"/>
</xaif:CallGraph>
"#,
            routine("f", "2"),
            routine("g", "3")
        )
    }
}
