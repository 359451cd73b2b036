//! Hand-written fixtures: every vertex and statement kind reads, validates
//! and round-trips; every error kind is reported with its variant, its
//! element and a position.

use std::path::PathBuf;

use xaif_model::{
    read_file, validate_document, write_document, Document, ErrorKind, IdKind, ModelErrors,
    PropKind, RefKind, StmtKind, VertexKind,
};

fn fixture(name: &str) -> PathBuf {
    xaif_testkit::repo_root().join("fixtures/model").join(name)
}

fn program(name: &str) -> xaif_model::Program {
    let parsed = read_file(&fixture(name)).unwrap_or_else(|e| panic!("{e}"));
    validate_document(&parsed.document, &parsed.source).unwrap_or_else(|e| panic!("{e}"));
    match parsed.document {
        Document::Program(p) => *p,
        _ => panic!("{name} is not a program"),
    }
}

#[test]
fn every_vertex_kind_is_read() {
    let p = program("all_kinds.xaif");
    let mut kinds: Vec<&str> = p.vertices.iter().map(|(_, v)| v.kind.element()).collect();
    kinds.sort();
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "BasicBlock",
            "Branch",
            "EndBranch",
            "EndLoop",
            "Entry",
            "Exit",
            "ForLoop",
            "Goto",
            "If",
            "Label",
            "PostLoop",
            "PreLoop"
        ]
    );
    let for_loop = p
        .vertices
        .iter()
        .find_map(|(_, v)| match &v.kind {
            VertexKind::ForLoop {
                init,
                condition,
                update,
            } => Some((init, condition, update)),
            _ => None,
        })
        .unwrap();
    assert!(for_loop.0.is_some() && for_loop.1.is_some() && for_loop.2.is_some());
    let stmts: Vec<&str> = p.stmts.iter().map(|(_, s)| s.kind.element()).collect();
    for kind in ["Assignment", "Marker", "SubroutineCall"] {
        assert!(stmts.contains(&kind), "{kind} missing");
    }
    // The right-hand side with an edge between vertices keeps its layout.
    let interleaved = p.stmts.iter().any(|(_, s)| match &s.kind {
        StmtKind::Assignment(a) => a.rhs.layout.is_some(),
        _ => false,
    });
    assert!(interleaved);
}

#[test]
fn every_output_construct_is_read() {
    let p = program("output_kinds.xaif");
    assert!(p.is_output());
    let mut entries = Vec::new();
    for (_, s) in p.stmts.iter() {
        if let StmtKind::DerivativePropagator(list) = &s.kind {
            entries.extend(list.iter().map(|e| e.kind.element()));
        }
    }
    assert_eq!(
        entries,
        [
            "SetDeriv",
            "SetNegDeriv",
            "IncDeriv",
            "DecDeriv",
            "Sax",
            "Saxpy",
            "ZeroDeriv"
        ]
    );
    assert!(p
        .stmts
        .iter()
        .any(|(_, s)| matches!(s.kind, StmtKind::InlinableCall(_))));
    let zero = p.stmts.iter().find_map(|(_, s)| match &s.kind {
        StmtKind::DerivativePropagator(list) => list.iter().find_map(|e| match &e.kind {
            PropKind::ZeroDeriv(v) => Some(v.attrs.get("deriv").map(str::to_string)),
            _ => None,
        }),
        _ => None,
    });
    assert_eq!(zero, Some(Some("1".to_string())));
}

#[test]
fn fixtures_round_trip_to_equal_models() {
    for name in ["all_kinds.xaif", "output_kinds.xaif"] {
        let parsed = read_file(&fixture(name)).unwrap();
        let text = write_document(&parsed.document);
        let again = xaif_model::read_str(&text, None).unwrap();
        assert!(again.document == parsed.document, "{name}");
        assert_eq!(write_document(&again.document), text);
    }
}

/// Reads and gates an error fixture; returns all errors.
fn errors(name: &str) -> ModelErrors {
    let path = fixture(&format!("err/{name}.xaif"));
    match read_file(&path) {
        Err(e) => e,
        Ok(parsed) => match validate_document(&parsed.document, &parsed.source) {
            Err(e) => e,
            Ok(()) => panic!("{name}: no error reported"),
        },
    }
}

/// Checks that fixture `name` gives exactly one error, of the expected kind,
/// that names the fixture file, a line and an element.
fn check(name: &str, element: &str, matches: impl Fn(&ErrorKind) -> bool) {
    let errs = errors(name);
    assert_eq!(
        errs.errors().len(),
        1,
        "{name}: expected one error, got:\n{errs}"
    );
    let e = &errs.errors()[0];
    assert!(matches(&e.kind), "{name}: unexpected error {e}");
    assert!(e.line > 0 && e.column > 0, "{name}: no position in {e}");
    assert_eq!(e.element, element, "{name}: wrong element in {e}");
    let text = e.to_string();
    assert!(
        text.contains(&format!("{name}.xaif:{}:{}", e.line, e.column)),
        "{name}: {text}"
    );
}

#[test]
fn duplicate_ids_are_reported() {
    let dup = |what: IdKind| move |k: &ErrorKind| matches!(k, ErrorKind::DuplicateId { what: w, .. } if *w == what);
    check("duplicate_scope", "Scope", dup(IdKind::Scope));
    check("duplicate_symbol", "Symbol", dup(IdKind::Symbol));
    check(
        "duplicate_routine",
        "ControlFlowGraph",
        dup(IdKind::Routine),
    );
    check("duplicate_cfg_vertex", "Label", dup(IdKind::CfgVertex));
    check(
        "duplicate_cfg_edge",
        "ControlFlowEdge",
        dup(IdKind::CfgEdge),
    );
    check("duplicate_expr_vertex", "Constant", dup(IdKind::ExprVertex));
    check(
        "duplicate_expr_edge",
        "ExpressionEdge",
        dup(IdKind::ExprEdge),
    );
    check(
        "duplicate_ref_vertex",
        "ArrayElementReference",
        dup(IdKind::RefVertex),
    );
    check("duplicate_statement", "Assignment", dup(IdKind::Statement));
    check("duplicate_alias_key", "AliasSet", dup(IdKind::AliasKey));
    check("duplicate_duud_key", "DUUDSetMap", dup(IdKind::DuudKey));
    check("duplicate_do_key", "DOSetMap", dup(IdKind::DoKey));
}

#[test]
fn dangling_references_are_reported() {
    let dangling = |what: RefKind| move |k: &ErrorKind| matches!(k, ErrorKind::DanglingReference { what: w, .. } if *w == what);
    check(
        "dangling_scope",
        "SymbolReference",
        dangling(RefKind::Scope),
    );
    check(
        "dangling_symbol",
        "SymbolReference",
        dangling(RefKind::Symbol),
    );
    check(
        "dangling_scope_edge",
        "ScopeEdge",
        dangling(RefKind::ScopeEdgeEnd),
    );
    check(
        "dangling_call_graph_edge",
        "CallGraphEdge",
        dangling(RefKind::CallGraphEdgeEnd),
    );
    check(
        "dangling_cfg_edge",
        "ControlFlowEdge",
        dangling(RefKind::CfgEdgeEnd),
    );
    check(
        "dangling_expr_edge",
        "ExpressionEdge",
        dangling(RefKind::ExprEdgeEnd),
    );
    check(
        "dangling_ref_edge",
        "VariableReferenceEdge",
        dangling(RefKind::RefEdgeEnd),
    );
    check(
        "dangling_alias",
        "AssignmentLHS",
        dangling(RefKind::AliasKey),
    );
    check("dangling_duud", "AssignmentLHS", dangling(RefKind::DuudKey));
    check("dangling_do", "Assignment", dangling(RefKind::DoKey));
}

#[test]
fn graph_shape_errors_are_reported() {
    check("cyclic_expression", "Intrinsic", |k| {
        matches!(k, ErrorKind::CyclicExpression { .. })
    });
    check("missing_position", "ExpressionEdge", |k| {
        matches!(k, ErrorKind::MissingPosition { position: 2, .. })
    });
    check("duplicate_position", "ExpressionEdge", |k| {
        matches!(k, ErrorKind::DuplicatePosition { position: 1, .. })
    });
    check("expression_roots", "Condition", |k| {
        matches!(k, ErrorKind::ExpressionRoots { roots: 2 })
    });
    check("entry_exit_count", "ControlFlowGraph", |k| {
        matches!(
            k,
            ErrorKind::EntryExitCount {
                entries: 1,
                exits: 2
            }
        )
    });
}

#[test]
fn attribute_errors_are_reported() {
    check("missing_attribute", "Symbol", |k| {
        matches!(k, ErrorKind::MissingAttribute("symbol_id"))
    });
    check("bad_attribute", "ExpressionEdge", |k| {
        matches!(
            k,
            ErrorKind::BadAttribute {
                attr: "position",
                ..
            }
        )
    });
}

#[test]
fn read_errors_are_reported() {
    check("unknown_element", "Nop", |k| {
        matches!(
            k,
            ErrorKind::UnknownElement {
                old_format: true,
                ..
            }
        )
    });
    check("unexpected_text", "", |k| {
        matches!(k, ErrorKind::UnexpectedText(_))
    });
    check("missing_child", "Initialization", |k| {
        matches!(k, ErrorKind::MissingChild("AssignmentRHS"))
    });
    check("unknown_root", "Program", |k| {
        matches!(k, ErrorKind::UnknownRoot(_))
    });
    check("encoding", "", |k| matches!(k, ErrorKind::Encoding(_)));
    // A second ScopeHierarchy would replace the first while the scopes read
    // from the first stay in the arenas: transformations then declared
    // their temporaries in scopes that are never written.
    check("repeated_scope_hierarchy", "ScopeHierarchy", |k| {
        matches!(k, ErrorKind::Repeated("ScopeHierarchy"))
    });
    let errs = errors("malformed");
    assert!(matches!(errs.errors()[0].kind, ErrorKind::Xml(_)), "{errs}");
    assert!(errs.errors()[0].line > 0);
}

#[test]
fn all_errors_are_collected() {
    // Two independent faults in one file: both are reported, in document order.
    let text = std::fs::read_to_string(fixture("err/dangling_symbol.xaif"))
        .unwrap()
        .replace(
            r#"edge_id="14" source="12" target="13""#,
            r#"edge_id="14" source="12" target="77""#,
        );
    let parsed = xaif_model::read_str(&text, Some("two.xaif")).unwrap();
    let errs = validate_document(&parsed.document, &parsed.source).unwrap_err();
    let kinds: Vec<_> = errs.kinds().collect();
    assert_eq!(kinds.len(), 2, "{errs}");
    assert!(errs.errors()[0].line < errs.errors()[1].line);
}

/// A call with two arguments at one position is refused at the second
/// argument, for inlinable calls as for subroutine calls (the
/// subroutine-call case, with positions beyond the callee's formals, is
/// tested through the binary in `xaifb`'s `run_robust.rs`).
#[test]
fn a_call_position_taken_twice_is_reported() {
    let text = std::fs::read_to_string(fixture("output_kinds.xaif")).unwrap();
    let call =
        r#"<xaif:InlinableSubroutineCall subroutine_name="push_s0" statement_id="inline_push">"#;
    let at = text.find(call).expect("the fixture's inlinable call") + call.len();
    let argument = r#"
          <xaif:Argument position="1">
            <xaif:VariableReference vertex_id="1" active="false">
              <xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="OpenAD_lin_0"/>
            </xaif:VariableReference>
          </xaif:Argument>"#;
    let twice = format!("{}{argument}{}", &text[..at], &text[at..]);
    let parsed = xaif_model::read_bytes(twice.as_bytes(), Some("twice.xaif")).unwrap();
    let errs = validate_document(&parsed.document, &parsed.source).unwrap_err();
    assert_eq!(errs.errors().len(), 1, "{errs}");
    assert!(
        matches!(
            &errs.errors()[0].kind,
            ErrorKind::CallPositionTaken { routine, position: 1 } if routine == "push_s0"
        ),
        "{errs}"
    );
    assert!(errs.to_string().contains("twice.xaif:"), "{errs}");
}

/// A symbol's `shape` is one of the schema's: `void`, `scalar` … up to
/// `seven_tensor`; anything else is refused at the symbol.
#[test]
fn symbol_shapes_are_the_schemas() {
    let text = std::fs::read_to_string(fixture("all_kinds.xaif")).unwrap();
    let gate = |shape: &str| {
        let t = text.replacen("shape=\"scalar\"", &format!("shape=\"{shape}\""), 1);
        let parsed = xaif_model::read_str(&t, Some("shapes.xaif")).unwrap();
        validate_document(&parsed.document, &parsed.source)
    };
    for shape in ["void", "scalar", "vector", "three_tensor", "seven_tensor"] {
        assert!(gate(shape).is_ok(), "{shape}");
    }
    for shape in ["cube", "eight_tensor", ""] {
        let errs = gate(shape).unwrap_err();
        assert!(
            errs.kinds()
                .any(|k| matches!(k, ErrorKind::BadAttribute { attr: "shape", .. })),
            "{shape}: {errs}"
        );
    }
}
