//! A short fixed-seed campaign, as CI runs it: generated programs under
//! every check and variant (schemas included when `xmllint` is there), no
//! disagreement; and the report does not depend on the number of worker
//! threads.

use xaif_stress::campaign::{summary, Campaign};
use xaif_stress::Checker;

fn checker() -> Option<Checker> {
    Some(Checker::builtin())
}

fn campaign(programs: usize, seed: u64, jobs: usize, xsd: bool) -> Campaign {
    let schema = if xsd && xaif_testkit::have_xmllint() {
        xaif_testkit::shared_dir().map(|s| s.join("xaif/schema"))
    } else {
        None
    };
    Campaign {
        first: 0,
        programs,
        seed,
        jobs,
        max_size: 8,
        out: std::env::temp_dir().join(format!(
            "xaif-stress-test-{}-{seed}-{jobs}",
            std::process::id()
        )),
        schema,
        shrink_steps: 200,
    }
}

#[test]
fn a_short_fixed_seed_campaign_finds_nothing() {
    let Some(checker) = checker() else { return };
    let c = campaign(120, 20_261_124, 2, true);
    let report = c.run(&checker, false).unwrap();
    let _ = std::fs::remove_dir_all(&c.out);
    let text = summary(&c, &report);
    assert_eq!(report.programs, 120);
    assert!(report.failures.is_empty(), "{text}");
    // The generator's programs are mostly inside their domains and their
    // Jacobians are mostly not trivial.
    assert!(report.skipped * 10 <= report.programs, "{text}");
    assert!(report.nonzero_entries * 4 >= report.dd_entries, "{text}");
    if c.schema.is_some() {
        assert!(report.validated >= 3 * report.programs, "{text}");
    }
}

#[test]
fn reports_do_not_depend_on_the_number_of_threads() {
    let Some(mut checker) = checker() else { return };
    checker.with_variants = false;
    let one = campaign(24, 7, 1, false);
    let two = campaign(24, 7, 2, false);
    let (a, b) = (
        one.run(&checker, false).unwrap(),
        two.run(&checker, false).unwrap(),
    );
    let _ = std::fs::remove_dir_all(&one.out);
    let _ = std::fs::remove_dir_all(&two.out);
    assert_eq!(
        (
            a.programs,
            a.skipped,
            a.dd_entries,
            a.nonsmooth_entries,
            a.nonzero_entries,
            a.runs
        ),
        (
            b.programs,
            b.skipped,
            b.dd_entries,
            b.nonsmooth_entries,
            b.nonzero_entries,
            b.runs
        )
    );
    assert_eq!(a.constructs, b.constructs);
    assert_eq!(a.failures.len(), b.failures.len());
}

#[test]
fn slices_of_a_campaign_check_what_the_whole_checks() {
    let Some(mut checker) = checker() else { return };
    checker.with_variants = false;
    let whole = campaign(24, 11, 1, false);
    let mut head = campaign(10, 11, 1, false);
    let mut tail = campaign(14, 11, 1, false);
    head.out.set_extension("head");
    tail.out.set_extension("tail");
    tail.first = 10;
    let w = whole.run(&checker, false).unwrap();
    let (h, t) = (
        head.run(&checker, false).unwrap(),
        tail.run(&checker, false).unwrap(),
    );
    for c in [&whole, &head, &tail] {
        let _ = std::fs::remove_dir_all(&c.out);
    }
    assert_eq!(
        (
            w.programs,
            w.skipped,
            w.dd_entries,
            w.nonzero_entries,
            w.runs
        ),
        (
            h.programs + t.programs,
            h.skipped + t.skipped,
            h.dd_entries + t.dd_entries,
            h.nonzero_entries + t.nonzero_entries,
            h.runs + t.runs
        )
    );
    let mut constructs = h.constructs.clone();
    for (k, n) in &t.constructs {
        *constructs.entry(k.clone()).or_default() += n;
    }
    assert_eq!(w.constructs, constructs);
    assert!(summary(&tail, &t).starts_with("14 programs (10..24 of seed 11"));
}

/// A sample of the checkpointing campaign (`cargo xtask stress
/// --checkpoint-loops`): every loop of every program marked, the
/// checkpointed adjoints held against the adjoints without checkpointing,
/// no disagreement; loops are marked and reversed on every schedule:
/// binomial, online (counted loops left by an exit among them),
/// fixed-point, independent.
#[test]
fn a_short_checkpointing_campaign_finds_nothing() {
    let Some(mut checker) = checker() else { return };
    checker.checkpoint_loops = true;
    let c = campaign(60, 20_261_224, 2, false);
    let report = c.run(&checker, false).unwrap();
    let _ = std::fs::remove_dir_all(&c.out);
    let text = summary(&c, &report);
    assert!(report.failures.is_empty(), "{text}");
    assert!(report.checkpointed_loops >= 40, "{text}");
    assert!(report.loop_instances >= 100, "{text}");
    for (schedule, instances) in [
        ("binomial", report.binomial_instances),
        ("online", report.online_instances),
        ("online, of an exit loop", report.exit_instances),
        ("fixed-point", report.fixed_point_instances),
        ("independent", report.independent_instances),
    ] {
        assert!(instances > 0, "no {schedule} instance: {text}");
    }
    assert!(report.fixed_point_loops > 0, "{text}");
}

/// Programs of the checkpointing campaign (seed 1) whose while or counted
/// loops hold loops left by an exit, all marked: the untaped copies of the
/// outer loop's body sent the inner loops' exits out of the outer loop,
/// which then ended after one iteration in the taping sweep (a wrong
/// Jacobian, exit 0).
#[test]
fn exits_of_nested_loops_leave_only_their_loop() {
    let Some(mut checker) = checker() else { return };
    checker.checkpoint_loops = true;
    for first in [663, 1078, 1495] {
        let mut c = campaign(1, 1, 1, false);
        c.first = first;
        c.max_size = 8;
        let report = c.run(&checker, false).unwrap();
        let _ = std::fs::remove_dir_all(&c.out);
        let text = summary(&c, &report);
        assert!(report.failures.is_empty(), "program {first}: {text}");
        assert!(report.online_instances > 0, "program {first}: {text}");
    }
}
