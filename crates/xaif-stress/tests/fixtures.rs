//! One fixture per class of wrong results the generated programs found
//! (`fixtures/stress/*.xaif`, each says in its header what it exercises):
//! every check of the campaigns, with every variant, comes out clean on
//! each.

use xaif_stress::{Checker, Outcome};

/// `n`, `m` and the never-read active names from a fixture's header (the
/// listing the generator writes).
fn header(text: &str) -> (usize, usize, Vec<String>) {
    let line = text
        .lines()
        .find(|l| l.starts_with("head(x("))
        .expect("a head(x(n), y(m)) line");
    let num = |key: &str| -> usize {
        let at = line.find(key).expect("n and m") + key.len();
        line[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap()
    };
    let dead = text
        .lines()
        .filter(|l| l.ends_with(" Dead") && l.contains("::"))
        .map(|l| {
            let name = l.split("::").nth(1).unwrap().trim();
            name.split(['(', ' ']).next().unwrap().to_string()
        })
        .collect();
    (num("n = "), num("m = "), dead)
}

fn checker() -> Option<Checker> {
    Some(Checker::builtin())
}

/// Fails the test when the checks skipped the program or found anything.
fn assert_clean(name: &str, outcome: &Outcome) {
    assert!(outcome.skipped.is_none(), "{name}: {:?}", outcome.skipped);
    let findings: Vec<String> = outcome
        .findings
        .iter()
        .map(|f| format!("{} [{}]\n{}", f.check, f.variant, f.detail))
        .collect();
    assert!(findings.is_empty(), "{name}:\n{}", findings.join("\n\n"));
}

fn check(name: &str) {
    let Some(checker) = checker() else { return };
    let path = xaif_testkit::repo_root().join("fixtures/stress").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let (n, m, dead) = header(&text);
    let outcome = checker.check(&text, n, m, &dead, 1);
    assert_clean(name, &outcome);
    assert!(
        outcome.counts.nonzero_entries > 0,
        "{name}: the Jacobian is zero"
    );
}

#[test]
fn runtime_shaped_propagation_temporaries_are_allocated() {
    check("runtime_shape_temporaries.xaif");
}

#[test]
fn converted_elements_use_the_index_values_before_the_call() {
    check("call_index_changed.xaif");
}

#[test]
fn adjoints_of_broadcast_scalars_sum() {
    check("broadcast_adjoint.xaif");
}

#[test]
fn subscripts_a_block_changes_are_taken_when_their_statement_runs() {
    check("self_modified_subscripts.xaif");
}

#[test]
fn zeroing_active_locals_leaves_allocatables_alone() {
    check("zero_locals_allocatable.xaif");
}

#[test]
fn an_element_of_a_vector_definition_is_not_its_value() {
    check("chain_element_of_vector_definition.xaif");
}

#[test]
fn runtime_shaped_temporaries_are_allocated_like_an_elementwise_operand() {
    check("runtime_shape_like_reference.xaif");
}

#[test]
fn passive_actuals_rerun_in_joint_mode_keep_their_value() {
    // The class the generator reaches since it writes routines without
    // side-effect lists: nothing restores the converted argument before
    // joint mode runs the callee again.
    check("passive_actual_rerun_in_joint_mode.xaif");
}

#[test]
fn reshape_adjoints_take_the_source_shape() {
    check("reshape_adjoint_shape.xaif");
}

#[test]
fn reshape_adjoints_of_allocatable_sources_record_the_extents() {
    check("reshape_adjoint_allocatable_source.xaif");
}

#[test]
fn checkpoints_of_optional_formals_run_when_they_are_present() {
    check("optional_formal_checkpoint.xaif");
}

#[test]
fn absent_optional_arguments_pass_on_absent() {
    // The oracle's class: it refused to pass an absent optional argument
    // on to an optional formal.
    check("optional_absent_passed_on.xaif");
}

#[test]
fn checkpoints_of_optional_formals_passed_on_run_when_they_are_present() {
    check("optional_passed_on_checkpoint.xaif");
}

#[test]
fn absent_optional_arguments_are_not_converted() {
    check("optional_passed_on_converted.xaif");
}

#[test]
fn every_fixture_has_a_test() {
    let dir = xaif_testkit::repo_root().join("fixtures/stress");
    let this = include_str!("fixtures.rs");
    for f in xaif_testkit::xaif_files(&dir) {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            this.contains(&format!("check(\"{name}\")")),
            "{name} is not checked"
        );
    }
}

#[test]
fn much_curved_functions_are_differenced_at_smaller_steps() {
    // Not an engine class: the tangent was right, the differences at the
    // default step were not (a slope of 10^6, sin of repeated squares).
    check("much_curved_function.xaif");
}

#[test]
fn kinks_meeting_at_the_point_claim_nothing() {
    // Not an engine class: `sign(y(minloc(y)), 0.5)` with a tie in
    // `minloc` and an exact zero at the point; the tangent's slope is
    // neither side's, and no rule says which it should be.
    check("kinks_meeting_at_the_point.xaif");
}

#[test]
fn subscripts_with_integer_arrays_tape_their_values() {
    check("integer_array_in_subscript.xaif");
}

#[test]
fn a_branch_taken_at_the_point_alone_claims_nothing() {
    // Not an engine class: `mod(2 x(3), 1.5)` is exactly 0 at the point,
    // so `maxloc` sees a tie and the loop leaves another index than on
    // either side; the tangent is that branch's (-0.75), the differences
    // see the neighbours' (0), and the tangent beside the point is 0 too.
    check("branch_at_the_point_alone.xaif");
}

/// The side-effect lists are optional in XAIF (OpenAD's front end writes
/// them; hand-written and generated XAIF often does not). Joint-mode
/// reversal re-runs every routine from its argument checkpoint, which
/// stores the `Read` list: without one the list must be inferred, or the
/// re-run starts from the values the forward run left behind. Every
/// fixture with calls is checked again with its lists removed.
#[test]
fn fixtures_with_calls_are_right_without_side_effect_lists() {
    let checker = Checker::builtin();
    let dir = xaif_testkit::repo_root().join("fixtures/stress");
    let mut checked = 0;
    for path in xaif_testkit::xaif_files(&dir) {
        let text = std::fs::read_to_string(&path).unwrap();
        if !text.contains("<xaif:SubroutineCall") {
            continue;
        }
        let stripped = xaif_testkit::strip::side_effect_lists(&text);
        assert!(!stripped.contains("<xaif:Read>"));
        let (n, m, dead) = header(&text);
        let outcome = checker.check(&stripped, n, m, &dead, 1);
        assert_clean(&path.file_name().unwrap().to_string_lossy(), &outcome);
        checked += 1;
    }
    assert!(checked > 0, "no fixture with calls");
}
