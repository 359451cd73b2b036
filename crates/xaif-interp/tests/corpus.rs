//! The oracle against the OpenAD regression corpus (acceptance of the oracle
//! issue): reference outputs reproduce `ad.out`, divided differences of the
//! original programs agree with it, adjoint runs leave every tape empty, and
//! what cannot be executed is refused, never a panic.

use xaif_interp::corpus::{divided_differences, read_index, run_file, Example};
use xaif_interp::{CompileOptions, Mode};
use xaif_testkit::shared_dir;

/// The default step budget of a run (with the other default limits but no
/// time limit, see `run_file`): no corpus program may reach them.
const BUDGET: u64 = xaif_interp::Limits::STEPS;

fn examples() -> Option<Vec<Example>> {
    let shared = shared_dir()?;
    Some(read_index(&shared.join("corpus")).expect("index.csv reads"))
}

/// Every reference output whose `index.csv` oracle column says `match`
/// reproduces `ad.out` within 1e-10 relative or 1e-13 absolute; split and
/// joint runs end with every tape and checkpoint stack empty.
#[test]
fn reference_outputs_reproduce_ad_out() {
    let Some(examples) = examples() else { return };
    let mut failures = Vec::new();
    let mut checked = 0;
    for ex in &examples {
        for mode in [Mode::Tangent, Mode::Split, Mode::Joint] {
            if ex.oracle(mode) != "match" {
                continue;
            }
            checked += 1;
            // The index's verdict `not-executable` with oracle `match` means
            // markers that may change numbers (a READ of a file just
            // written, say) happen not to here: those runs are checked with
            // markers taken as inert; by default they are refused (below).
            let options = CompileOptions {
                inert_markers: ex.verdict == "not-executable",
            };
            let report = run_file(ex, &ex.reference(mode), mode, options, BUDGET);
            match (&report.outcome, &report.comparison) {
                (Err(e), _) => failures.push(format!("{} {mode:?}: {e}", ex.name)),
                (Ok(_), Some(c)) if !c.matches() => failures.push(format!(
                    "{} {mode:?}: worst relative {:.3e}, first mismatch {:?}",
                    ex.name, c.max_rel, c.mismatches[0]
                )),
                (Ok(o), _) if mode != Mode::Tangent && !o.tapes_empty => {
                    failures.push(format!("{} {mode:?}: tapes not empty at the end", ex.name))
                }
                (Ok(_), None) => {
                    failures.push(format!("{} {mode:?}: no ad.out to compare", ex.name))
                }
                _ => {}
            }
        }
    }
    assert!(checked > 400, "only {checked} reference runs");
    assert!(
        failures.is_empty(),
        "{} of {checked} runs failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Divided differences of every generic-harness example's original program
/// agree with `ad.out` within the example's tolerance.
#[test]
fn divided_differences_agree_with_ad_out() {
    let Some(examples) = examples() else { return };
    let mut failures = Vec::new();
    let mut checked = 0;
    for ex in examples
        .iter()
        .filter(|e| e.verdict == "executable-generic-harness")
    {
        checked += 1;
        if let Err(e) = divided_differences(ex, BUDGET) {
            failures.push(format!("{}: {e}", ex.name));
        }
    }
    assert!(checked > 100);
    assert!(
        failures.is_empty(),
        "{} of {checked} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every `not-executable` example is refused with an error naming what
/// cannot be executed, in every mode; nothing panics or runs away.
#[test]
fn not_executable_examples_are_refused() {
    let Some(examples) = examples() else { return };
    let mut failures = Vec::new();
    for ex in examples.iter().filter(|e| e.verdict == "not-executable") {
        for mode in [Mode::Plain, Mode::Tangent, Mode::Split, Mode::Joint] {
            let file = ex.reference(mode);
            if !file.is_file() {
                continue;
            }
            let report = run_file(ex, &file, mode, CompileOptions::default(), BUDGET);
            match &report.outcome {
                Ok(_) => failures.push(format!("{} {mode:?}: ran without refusing", ex.name)),
                Err(e) if e.contains("step budget") => {
                    failures.push(format!("{} {mode:?}: ran away: {e}", ex.name))
                }
                Err(_) => {}
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every program of the corpus, in every mode its files are for, runs to a
/// result or a refusal: no panic, no run past the step budget.
#[test]
fn no_example_panics_or_runs_away() {
    let Some(examples) = examples() else { return };
    let mut runaway = Vec::new();
    let mut runs = 0;
    for ex in &examples {
        for mode in [Mode::Plain, Mode::Tangent, Mode::Split, Mode::Joint] {
            let file = ex.reference(mode);
            if !file.is_file() {
                continue;
            }
            runs += 1;
            let report = run_file(ex, &file, mode, CompileOptions::default(), BUDGET);
            if let Err(e) = &report.outcome {
                if e.contains("step budget") {
                    runaway.push(format!("{} {mode:?}: {e}", ex.name));
                }
            }
        }
    }
    assert!(runs > 550, "only {runs} runs");
    assert!(runaway.is_empty(), "{}", runaway.join("\n"));
}
