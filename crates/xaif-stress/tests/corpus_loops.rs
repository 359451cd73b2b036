//! Every loop of every corpus example that runs under the generic harness,
//! marked alone with each kind and setting (`--checkpoint-loop` with 1, 2,
//! 3 and 10 snapshots, `--fixed-point-loop` at two tolerances,
//! `--independent-loop`), in split and joint mode: each accepted mark gives
//! the unmarked adjoint's Jacobian (1e-12 relative; a converged fixed-point
//! loop within 1e-8), every reversed instance keeps its schedule's promise,
//! and each refusal is located and of a known reason
//! (`xaif_stress::corpus_loops`; `cargo xtask loop-sweep` prints the same
//! report).

use xaif_stress::corpus_loops::{summary, sweep, Sweep};

#[test]
fn every_corpus_loop_marked_with_every_kind_gives_the_unmarked_jacobian() {
    let Some(shared) = xaif_testkit::shared_dir() else {
        return;
    };
    let settings = Sweep::exhaustive();
    let report = sweep(&shared, &settings).unwrap();
    let text = summary(&report);
    eprintln!("{text}");
    assert!(report.findings.is_empty(), "{text}");
    // Every generic-harness example's unmarked adjoint runs, and the
    // corpus's loops are all there.
    assert!(report.left_out.is_empty(), "{text}");
    assert!(report.examples >= 100, "{text}");
    assert!(report.sites.len() >= 60, "{text}");
    // Each mark of each loop was either accepted or refused for a reason.
    let count = |kind: &str| -> usize {
        let accepted: usize = report
            .accepted
            .iter()
            .filter(|(k, _)| k.starts_with(kind))
            .map(|(_, n)| n)
            .sum();
        let refused: usize = report
            .refused
            .iter()
            .filter(|((k, _), _)| k == kind)
            .map(|(_, n)| n)
            .sum();
        accepted + refused
    };
    let loops = report.sites.len();
    assert_eq!(count("checkpoint"), loops * settings.snapshots.len());
    assert_eq!(count("fixed-point"), loops * settings.fixed_point.len());
    assert_eq!(count("independent"), loops);
    // Most loops admit checkpointing, many independence; the counted
    // loops (all of the corpus's) are no fixed-point iterations: marked
    // so, they used to be reversed as if they had converged, with wrong
    // Jacobians reported converged.
    assert!(
        report.admitting.get("checkpoint (binomial)").copied() >= Some(55),
        "{text}"
    );
    assert!(
        report.admitting.get("independent").copied() >= Some(30),
        "{text}"
    );
    let counted = report
        .refused
        .get(&(
            "fixed-point".to_string(),
            "a counted loop that no exit leaves".to_string(),
        ))
        .copied()
        .unwrap_or(0);
    assert!(counted >= 50 * settings.fixed_point.len(), "{text}");
    assert!(report.runs >= 500, "{text}");
    assert!(
        report.instances.get("binomial").copied() >= Some(1_000),
        "{text}"
    );
}
