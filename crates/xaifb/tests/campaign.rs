//! A short fixed-seed robustness campaign (`cargo xtask robust` runs long
//! ones): mutants of corpus inputs, catalogues and Jacobian files through
//! every subcommand of this build under a memory limit and a timeout, and the
//! file-system and signal cases. Any finding fails the test, with the
//! campaign's table and the place of the reproducers.

use xaif_testkit::{have_xmllint, robust, shared_dir};

/// Seed and size of the campaign the test suite runs (about half a minute on
/// two cores).
const SEED: u64 = 15;
const MUTANTS: usize = 80;

#[test]
fn short_campaign_finds_nothing() {
    let Some(shared) = shared_dir() else { return };
    let work = std::env::temp_dir().join(format!("xaifb-campaign-{}", std::process::id()));
    let mut cfg = robust::Config::new(
        env!("CARGO_BIN_EXE_xaifb").into(),
        shared.canonicalize().unwrap(),
        work.clone(),
        MUTANTS,
        SEED,
    );
    cfg.jobs = 2;
    cfg.timeout = std::time::Duration::from_secs(20);
    cfg.schema = have_xmllint();
    // Expressions 10^4 deep (the size the benchmarks hold to 2 s), not
    // the long campaign's 3·10^4, so that a loaded machine stays far from
    // the timeout.
    cfg.max_repeat = 10_000;
    let report = robust::run(&cfg);
    assert!(report.runs > MUTANTS * 5, "{}", report.render());
    assert!(
        report.findings.is_empty(),
        "{}\nreproducers in {}",
        report.render(),
        work.join("findings").display()
    );
    let _ = std::fs::remove_dir_all(&work);
}
