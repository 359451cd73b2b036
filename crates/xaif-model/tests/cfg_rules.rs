//! The gate's control flow rules (`docs/cfg-rules.md`), constants and
//! shapes: each rule broken once on the fixture of the control flow
//! reversal paper (a while loop around a two-way branch), with the located
//! error it gets; and the oddities the reference material writes, which
//! pass.

use xaif_model::{read_str, validate_document, ErrorKind, ModelErrors};

fn seed() -> String {
    let path = xaif_testkit::repo_root().join("fixtures/adjoint/seed_cfr.xaif");
    std::fs::read_to_string(path).unwrap()
}

/// `text` with `from` replaced by `to` (which must occur).
fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from}");
    text.replacen(from, to, 1)
}

/// The fixture with `extra` added before its first edge.
fn with(text: &str, extra: &str) -> String {
    let at = text.find("<xaif:ControlFlowEdge").unwrap();
    format!("{}{extra}\n    {}", &text[..at], &text[at..])
}

fn gate(text: &str) -> Result<(), ModelErrors> {
    let parsed = read_str(text, Some("cfg.xaif")).unwrap();
    validate_document(&parsed.document, &parsed.source)
}

/// The control flow errors of `text`, as (element, message).
fn cfg_errors(text: &str) -> Vec<(String, String)> {
    let errs = gate(text).expect_err("passed the gate");
    errs.errors()
        .iter()
        .filter(|e| matches!(e.kind, ErrorKind::ControlFlow { .. }))
        .map(|e| {
            assert!(e.line > 0 && e.column > 0, "{e}");
            assert!(e.to_string().starts_with("cfg.xaif:"), "{e}");
            (e.element.to_string(), e.to_string())
        })
        .collect()
}

/// Asserts that some control flow error is at `element` and says `what`.
fn refused(text: &str, element: &str, what: &str) {
    let errs = cfg_errors(text);
    assert!(
        errs.iter().any(|(el, m)| el == element && m.contains(what)),
        "expected `{element}`: {what}; got {errs:#?}"
    );
}

#[test]
fn the_fixture_passes() {
    gate(&seed()).unwrap();
}

#[test]
fn a_block_with_two_successors_is_refused() {
    let t = with(
        &seed(),
        r#"<xaif:ControlFlowEdge edge_id="13" source="10" target="3"/>"#,
    );
    refused(
        &t,
        "BasicBlock",
        "vertex `10` (BasicBlock): has 2 successors",
    );
}

#[test]
fn edges_into_entry_and_out_of_exit_are_refused() {
    let t = with(
        &seed(),
        r#"<xaif:ControlFlowEdge edge_id="13" source="8" target="1"/>"#,
    );
    refused(
        &t,
        "ControlFlowEdge",
        "edge `13` from `8` to `1`: enters Entry",
    );
    let t = with(
        &seed(),
        r#"<xaif:ControlFlowEdge edge_id="13" source="11" target="10"/>"#,
    );
    refused(&t, "ControlFlowEdge", "leaves Exit");
}

#[test]
fn branch_cases_must_be_distinct_with_one_default() {
    let dup = edit(
        &seed(),
        r#"target="6" has_condition_value="true" condition_value="0""#,
        r#"target="6" has_condition_value="true" condition_value="1""#,
    );
    refused(&dup, "ControlFlowEdge", "second edge for case value 1");
    let two_defaults = with(
        &edit(
            &seed(),
            r#"target="6" has_condition_value="true" condition_value="0""#,
            r#"target="6""#,
        ),
        r#"<xaif:ControlFlowEdge edge_id="13" source="4" target="7"/>"#,
    );
    refused(&two_defaults, "ControlFlowEdge", "second default edge");
    let none = edit(
        &edit(
            &seed(),
            r#"<xaif:ControlFlowEdge edge_id="4" source="4" target="5" has_condition_value="true" condition_value="1"/>"#,
            "",
        ),
        r#"<xaif:ControlFlowEdge edge_id="5" source="4" target="6" has_condition_value="true" condition_value="0"/>"#,
        "",
    );
    refused(&none, "If", "has no successor");
}

#[test]
fn loops_need_a_body_edge_and_an_exit_edge() {
    let one = edit(
        &seed(),
        r#"<xaif:ControlFlowEdge edge_id="11" source="3" target="10"/>"#,
        "",
    );
    refused(&one, "PreLoop", "has 1 successors");
    let wrong = edit(
        &seed(),
        r#"edge_id="11" source="3" target="10""#,
        r#"edge_id="11" source="3" target="10" has_condition_value="true" condition_value="2""#,
    );
    refused(&wrong, "PreLoop", "condition values 1 and 2");
}

#[test]
fn an_end_loop_leads_back_to_its_loop_from_inside() {
    let elsewhere = edit(
        &seed(),
        r#"source="9" target="3""#,
        r#"source="9" target="8""#,
    );
    refused(
        &elsewhere,
        "EndLoop",
        "leads to control flow vertex `8` (BasicBlock)",
    );
    // A second EndLoop of the loop, on its exit path.
    let outside = edit(
        &with(
            &seed(),
            r#"<xaif:EndLoop vertex_id="12"/>
    <xaif:ControlFlowEdge edge_id="13" source="12" target="3"/>"#,
        ),
        r#"source="3" target="10""#,
        r#"source="3" target="12""#,
    );
    refused(&outside, "EndLoop", "is not inside its body");
    // A way into the body that does not pass the body edge (a goto into
    // the loop).
    let into = with(
        &edit(
            &seed(),
            r#"source="2" target="3""#,
            r#"source="2" target="12""#,
        ),
        r#"<xaif:Branch vertex_id="12"/>
    <xaif:ControlFlowEdge edge_id="13" source="12" target="3" has_condition_value="true" condition_value="1"/>
    <xaif:ControlFlowEdge edge_id="14" source="12" target="8"/>"#,
    );
    refused(&into, "EndLoop", "is not inside its body");
}

#[test]
fn every_vertex_lies_on_a_way_from_entry_to_exit() {
    let dead = with(
        &seed(),
        r#"<xaif:BasicBlock vertex_id="12" scope_id="2"/>
    <xaif:ControlFlowEdge edge_id="13" source="12" target="11"/>"#,
    );
    refused(
        &dead,
        "BasicBlock",
        "vertex `12` (BasicBlock): is not reached from Entry",
    );
    let trap = with(
        &seed(),
        r#"<xaif:BasicBlock vertex_id="12" scope_id="2"/>
    <xaif:ControlFlowEdge edge_id="13" source="12" target="12"/>
    <xaif:ControlFlowEdge edge_id="14" source="4" target="12" has_condition_value="true" condition_value="2"/>"#,
    );
    refused(
        &trap,
        "BasicBlock",
        "vertex `12` (BasicBlock): never reaches Exit",
    );
}

/// What the reference material writes and the rules tolerate
/// (`docs/cfg-rules.md`, "What is odd but accepted").
#[test]
fn unmarked_choices_and_graphs_without_edges_pass() {
    let s = seed();
    // A branch and a loop whose edges carry no value.
    let unmarked = s
        .replace(r#" has_condition_value="true" condition_value="1""#, "")
        .replace(r#" has_condition_value="true" condition_value="0""#, "");
    assert_ne!(unmarked, s);
    gate(&unmarked).unwrap();
    // A condition value on a block's one edge.
    let valued = edit(
        &s,
        r#"source="2" target="3""#,
        r#"source="2" target="3" has_condition_value="1" condition_value="1""#,
    );
    gate(&valued).unwrap();
    // No edges at all.
    let edgeless: String = s
        .lines()
        .filter(|l| !l.contains("<xaif:ControlFlowEdge"))
        .collect::<Vec<_>>()
        .join("\n");
    gate(&edgeless).unwrap();
}

#[test]
fn constants_that_are_not_numbers_are_refused() {
    let s = seed();
    let constant = r#"<xaif:Constant vertex_id="3" type="integer" value="3"/>"#;
    for (ty, value) in [
        ("real", "2,0"),
        ("real", "0x2"),
        ("real", ""),
        ("real", "1e"),
        ("double", "inf"),
        ("real", "NaN"),
        ("integer", "2,0"),
        ("integer", ""),
        ("integer", "1.5"),
        ("bool", "yes"),
    ] {
        let t = edit(
            &s,
            constant,
            &format!(r#"<xaif:Constant vertex_id="3" type="{ty}" value="{value}"/>"#),
        );
        let errs = gate(&t).expect_err(value);
        assert!(
            errs.errors().iter().any(|e| e.element == "Constant"
                && matches!(&e.kind, ErrorKind::BadAttribute { attr: "value", value: v, .. } if v == value)),
            "{ty} {value:?}: {errs}"
        );
    }
    for (ty, value) in [
        ("real", "2.0"),
        ("real", "1.5D0"),
        ("real", ".5"),
        ("real", "-3e-7"),
        ("double", "4"),
        ("integer", "-12"),
        ("bool", ".true."),
    ] {
        let t = edit(
            &s,
            constant,
            &format!(r#"<xaif:Constant vertex_id="3" type="{ty}" value="{value}"/>"#),
        );
        gate(&t).unwrap_or_else(|e| panic!("{ty} {value}: {e}"));
    }
}

#[test]
fn every_shape_has_none_or_all_of_its_bounds() {
    let s = seed();
    let vector_x = r#"<xaif:Symbol symbol_id="X" kind="variable" type="real" shape="vector" active="1">
          <xaif:DimensionBounds lower="1" upper="2"/>"#;
    let cases = [
        ("vector", 2, false),
        ("vector", 0, true),
        ("scalar", 1, false),
        ("matrix", 1, false),
        ("matrix", 2, true),
        ("three_tensor", 3, true),
        ("three_tensor", 2, false),
    ];
    for (shape, bounds, ok) in cases {
        let b = r#"
          <xaif:DimensionBounds lower="1" upper="2"/>"#
            .repeat(bounds);
        let t = edit(
            &s,
            vector_x,
            &format!(
                r#"<xaif:Symbol symbol_id="X" kind="variable" type="real" shape="{shape}" active="1">{b}"#
            ),
        );
        // Only the symbol table is of interest: the program's uses of X
        // are not checked against its shape here.
        let r = gate(&t);
        let shape_error = r.as_ref().err().is_some_and(|e| {
            e.errors()
                .iter()
                .any(|e| e.element == "Symbol" && matches!(e.kind, ErrorKind::ShapeBounds { .. }))
        });
        assert_eq!(!shape_error, ok, "{shape} with {bounds}: {r:?}");
    }
}
