//! The loop kinds beyond binomial checkpointing, on loops generated for
//! this test (`xaif_testkit::loop_programs`), in split and joint mode:
//!
//! - online checkpointing (acceptance 1 of the loop-kinds issue): while
//!   loops, post-test loops and loops left by an exit before, inside or
//!   after their body, of 0, 1, 37, 1,000 and 100,000 iterations, with 1,
//!   2, 3, 10 and 50 snapshots, in structured routines and in routines the
//!   front end marks unstructured: the Jacobian of the adjoint without
//!   marks to 1e-12, every tape and snapshot empty at the end, and every
//!   instance's `max_repetitions` at most `r(l + 1, s)` (the least `r`
//!   with `C(s + r, s) > l`: `r(l, s)`, or one more when `l = C(s + r, s)`,
//!   docs/checkpointing.md), at most `s` snapshots;
//! - fixed-point loops (acceptance 2): contractions whose forward iteration
//!   converges to machine precision give the implicit-function-theorem
//!   Jacobian within 1e-8 relative, with the peak double tape of one
//!   iteration and `adjoint_iterations` reported; a limit too low is
//!   reported as not converged; a loop carrying no active state is
//!   refused;
//! - independent iterations (acceptance 3): the Jacobian of the unmarked
//!   adjoint to 1e-12, the peak double tape of one iteration, as many
//!   forward steps as iterations; every carried dependence refused with the
//!   variable and both statements.

use xaif_cfrev::checkpoint::LoopMark;
use xaif_cfrev::marks::{FixedPointMark, IndependentMark};
use xaif_cfrev::{adjoint, AdjointOptions};
use xaif_interp::{compare, Harness, HarnessSpec, Jacobian, Mode, Outcome};
use xaif_testkit::loop_programs::{self as lp, Carried, Ending, FixedPointForm};

/// Reads and gates XAIF text.
fn read(text: &str) -> xaif_model::Program {
    let (p, source) = xaif_model::read_program_str(text, None).unwrap();
    xaif_model::validate_program(&p, &source).unwrap();
    p
}

/// The adjoint's text with `options`, or the error.
fn transform(p: &xaif_model::Program, options: &AdjointOptions) -> Result<String, String> {
    let mut out = adjoint(p, xaif_linearize::builtin(), None, options)
        .map_err(|e| e.to_string())?
        .transformed
        .program;
    out.mark_as_output("");
    Ok(xaif_model::write_program(&out))
}

/// Runs adjoint text in `mode` with the generic harness.
fn run(text: &str, n: usize, m: usize, mode: Mode) -> Outcome {
    let p = read(text);
    let prog = xaif_interp::compile(&p, &xaif_model::source_map(text.as_bytes(), None));
    let mut h = Harness::new(&prog, HarnessSpec::generic(n, m));
    h.limits = xaif_interp::Limits::with_steps(2_000_000_000);
    h.limits.time = None;
    let o = h.run(mode).unwrap();
    assert!(o.tapes_empty, "tapes, checkpoints or snapshots left");
    o
}

fn same(a: &Jacobian, b: &Jacobian, rel: f64, what: &str) {
    let c = compare(a, b, rel, 1e-15).unwrap();
    assert!(
        c.matches(),
        "{what}: worst relative difference {:.3e}\n{}{}",
        c.max_rel,
        a.to_out("AD"),
        b.to_out("AD")
    );
}

fn checkpoint(line: usize, snapshots: u64) -> AdjointOptions {
    AdjointOptions {
        checkpoint_loops: vec![LoopMark {
            routine: "head".into(),
            line: line as i64,
            snapshots,
        }],
        ..AdjointOptions::default()
    }
}

/// The least `r` with `C(s + r, s) > l`: the repetition number online
/// checkpointing keeps.
fn online_bound(l: u64, s: u64) -> u64 {
    xaif_revolve::repetitions(l + 1, s).max(u64::from(l > 0))
}

/// One time loop of `n` iterations ending as `ending`, marked with each
/// of `snapshots`, against the unmarked adjoint.
fn check_time_loop(n: i64, ending: Ending, unstructured: bool, snapshots: &[u64]) {
    check_time_loop_in(
        n,
        ending,
        unstructured,
        snapshots,
        &[Mode::Split, Mode::Joint],
    );
}

/// [`check_time_loop`] in `modes`.
fn check_time_loop_in(
    n: i64,
    ending: Ending,
    unstructured: bool,
    snapshots: &[u64],
    modes: &[Mode],
) {
    let prog = lp::time_loop(n, ending, unstructured);
    let p = read(&lp::xaif(&prog, "time loop"));
    let line = lp::loop_lines(&prog)[0];
    let plain = transform(&p, &AdjointOptions::default()).unwrap();
    for &mode in modes {
        let want = run(&plain, 3, 2, mode).jacobian;
        for &s in snapshots {
            let what = format!("{ending:?} n={n} s={s} {mode:?} unstructured={unstructured}");
            let text =
                transform(&p, &checkpoint(line, s)).unwrap_or_else(|e| panic!("{what}: {e}"));
            let o = run(&text, 3, 2, mode);
            same(&o.jacobian, &want, 1e-12, &what);
            assert!(!o.stats.checkpointed_loops.is_empty(), "{what}: no record");
            for r in &o.stats.checkpointed_loops {
                assert_eq!(r.schedule, "online", "{what}");
                let l = r.iterations;
                // An exit tested before the counter's increment ends the
                // loop in iteration n + 1; after it, or a post-test, in
                // iteration n (at least 1).
                let expected = match ending {
                    Ending::PostTest | Ending::ExitLast => n.max(1) as u64,
                    Ending::ExitFirst | Ending::ExitMiddle => n as u64 + 1,
                    Ending::While => n as u64,
                };
                assert_eq!(l, expected, "{what}");
                let reps = r.max_repetitions.unwrap();
                assert!(
                    reps <= online_bound(l, s),
                    "{what}: {reps} repetitions, bound {}",
                    online_bound(l, s)
                );
                assert!(r.peak_snapshots <= s, "{what}");
            }
        }
    }
}

#[test]
fn online_checkpointing_of_while_and_exit_loops() {
    for ending in [
        Ending::While,
        Ending::PostTest,
        Ending::ExitFirst,
        Ending::ExitMiddle,
        Ending::ExitLast,
    ] {
        for unstructured in [false, true] {
            for n in [0, 1, 37, 1000] {
                check_time_loop(n, ending, unstructured, &[1, 2, 3, 10, 50]);
            }
        }
    }
}

#[test]
fn online_checkpointing_of_a_hundred_thousand_iterations() {
    // One snapshot (or two, or three) would rerun every iteration
    // thousands of times: r(10^5, 3) = 84.
    check_time_loop(100_000, Ending::While, false, &[10, 50]);
    check_time_loop(100_000, Ending::ExitMiddle, true, &[10]);
}

// Three snapshots: r(10^5, 3) = 83 repetitions, 6.2 million forward
// steps per adjoint sweep, one test per mode. Two snapshots (r = 446,
// 30 million) and one (5·10^9) take minutes and hours:
// docs/checkpointing.md.
#[test]
fn online_checkpointing_of_a_hundred_thousand_iterations_with_three_snapshots_split() {
    check_time_loop_in(100_000, Ending::ExitMiddle, true, &[3], &[Mode::Split]);
}

#[test]
fn online_checkpointing_of_a_hundred_thousand_iterations_with_three_snapshots_joint() {
    check_time_loop_in(100_000, Ending::While, false, &[3], &[Mode::Joint]);
}

#[test]
fn an_exit_of_a_nested_loop_leaves_only_that_loop() {
    // The untaped copies of the outer loop's body once sent the inner
    // loop's exit out of the outer loop, which then ended after one
    // iteration in the taping sweep. A counted outer loop is reversed by
    // the binomial schedule: the inner loop's exit leaves it counted (it
    // was taken for an exit of its own, and checkpointed online).
    for (outer, inner, counted) in [
        (1, 1, false),
        (3, 2, false),
        (7, 5, false),
        (1, 1, true),
        (7, 5, true),
    ] {
        let prog = lp::nested_time_loops_with(outer, inner, counted);
        let p = read(&lp::xaif(&prog, "nested time loops"));
        let lines = lp::loop_lines(&prog);
        let plain = transform(&p, &AdjointOptions::default()).unwrap();
        for mode in [Mode::Split, Mode::Joint] {
            let want = run(&plain, 2, 2, mode).jacobian;
            for s in [1, 2, 3] {
                let what =
                    format!("outer {outer} (counted {counted}), inner {inner}, s={s}, {mode:?}");
                let options = AdjointOptions {
                    checkpoint_loops: lines
                        .iter()
                        .map(|&line| LoopMark {
                            routine: "head".into(),
                            line: line as i64,
                            snapshots: s,
                        })
                        .collect(),
                    ..AdjointOptions::default()
                };
                let text = transform(&p, &options).unwrap_or_else(|e| panic!("{what}: {e}"));
                let o = run(&text, 2, 2, mode);
                same(&o.jacobian, &want, 1e-12, &what);
                for r in &o.stats.checkpointed_loops {
                    let expected = if r.line as usize == lines[0] {
                        outer as u64
                    } else {
                        inner as u64
                    };
                    assert_eq!(r.iterations, expected, "{what}: loop at line {}", r.line);
                    let schedule = if counted && r.line as usize == lines[0] {
                        "binomial"
                    } else {
                        "online"
                    };
                    assert_eq!(r.schedule, schedule, "{what}: loop at line {}", r.line);
                }
            }
        }
    }
}

const RATES: (f64, f64, f64) = (0.3, 0.4, 0.5);

fn fixed_point_options(line: usize, tolerance: f64, max: u64) -> AdjointOptions {
    AdjointOptions {
        fixed_point_loops: vec![FixedPointMark {
            routine: "head".into(),
            line: line as i64,
            tolerance,
            max_iterations: max,
        }],
        ..AdjointOptions::default()
    }
}

#[test]
fn fixed_point_loops_give_the_implicit_function_derivative() {
    let x0 = [0.5, 1.0, 1.5];
    for form in [FixedPointForm::While, FixedPointForm::Exit] {
        for unstructured in [false, true] {
            if form == FixedPointForm::While && unstructured {
                continue;
            }
            let prog = lp::fixed_point(form, RATES, unstructured);
            let p = read(&lp::xaif(&prog, "fixed point"));
            let line = lp::loop_lines(&prog)[0];
            let text = transform(&p, &fixed_point_options(line, 1e-12, 1000)).unwrap();
            let plain = transform(&p, &AdjointOptions::default()).unwrap();
            let want = lp::fixed_point_derivative(x0, RATES);
            for mode in [Mode::Split, Mode::Joint] {
                let what = format!("{form:?} {mode:?} unstructured={unstructured}");
                let o = run(&text, 3, 2, mode);
                for (k, (got, want)) in o.jacobian.entries.iter().zip(want).enumerate() {
                    let rel = (got - want).abs() / want.abs().max(1e-300);
                    assert!(
                        rel <= 1e-8 || (got - want).abs() <= 1e-14,
                        "{what}: entry {k}: {got} against {want}"
                    );
                }
                for r in &o.stats.checkpointed_loops {
                    assert_eq!(r.schedule, "fixed-point");
                    assert_eq!(r.converged, Some(true), "{what}");
                    assert!(r.adjoint_iterations.unwrap() >= 2, "{what}");
                    assert!(r.final_change.unwrap() <= 1e-12, "{what}");
                    assert_eq!(r.max_repetitions, Some(1), "{what}");
                }
                // The tape of one iteration, measured: the unmarked
                // adjoint of the same loop limited to no iteration (the
                // code around the loop) and to one; every iteration of the
                // fully taped run tapes as much. The two-phase adjoint
                // holds the code around the loop and at most one
                // iteration.
                let limited = |limit: i64| {
                    let prog = lp::fixed_point_limited(form, RATES, unstructured, limit);
                    let p = read(&lp::xaif(&prog, "fixed point, limited"));
                    let text = transform(&p, &AdjointOptions::default()).unwrap();
                    run(&text, 3, 2, mode).stats.peak_double_tape
                };
                let (around, one) = (limited(0), limited(1));
                let iteration = one - around;
                assert!(iteration > 0, "{what}: an iteration tapes nothing");
                let full = run(&plain, 3, 2, mode).stats.peak_double_tape;
                let iterations = o.stats.checkpointed_loops[0].iterations;
                assert!(iterations > 2, "{what}: {iterations} iterations");
                assert_eq!(
                    full,
                    around + iterations * iteration,
                    "{what}: the fully taped run's peak is not {iterations} iterations of \
                     {iteration} doubles and {around} around the loop"
                );
                assert!(
                    o.stats.peak_double_tape <= around + iteration,
                    "{what}: peak tape {} against one iteration's {iteration} and {around} \
                     around the loop ({full} taping every iteration)",
                    o.stats.peak_double_tape,
                );
            }
        }
    }
}

#[test]
fn a_fixed_point_loop_short_of_its_limit_is_reported_unconverged() {
    let prog = lp::fixed_point(FixedPointForm::While, RATES, false);
    let p = read(&lp::xaif(&prog, "fixed point"));
    let line = lp::loop_lines(&prog)[0];
    let text = transform(&p, &fixed_point_options(line, 1e-12, 3)).unwrap();
    let o = run(&text, 3, 2, Mode::Split);
    assert!(o.stats.unconverged_loops > 0);
    for r in &o.stats.checkpointed_loops {
        assert_eq!((r.converged, r.adjoint_iterations), (Some(false), Some(3)));
    }
}

/// A loop stopped by its count before it reached its fixed point: its
/// adjoint converges, to the derivative of a fixed point the loop did not
/// reach, so the loop is reported not converged (it used to be reported
/// converged, a wrong Jacobian without a word); run to convergence, the
/// same loop reached its fixed point.
#[test]
fn a_fixed_point_loop_stopped_short_of_its_fixed_point_is_reported_unconverged() {
    for form in [FixedPointForm::While, FixedPointForm::Exit] {
        for (limit, reached) in [(3, false), (8, false), (200, true)] {
            let prog = lp::fixed_point_limited(form, RATES, false, limit);
            let p = read(&lp::xaif(&prog, "fixed point, limited"));
            let line = lp::loop_lines(&prog)[0];
            let text = transform(&p, &fixed_point_options(line, 1e-12, 1000)).unwrap();
            for mode in [Mode::Split, Mode::Joint] {
                let what = format!("{form:?} {mode:?} limit {limit}");
                let o = run(&text, 3, 2, mode);
                assert!(!o.stats.checkpointed_loops.is_empty(), "{what}");
                for r in &o.stats.checkpointed_loops {
                    let change = r.forward_change.expect("a complete iteration");
                    assert_eq!(r.reached, Some(reached), "{what}: change {change:e}");
                    assert_eq!(r.converged, Some(reached), "{what}");
                    if reached {
                        assert!(change <= 1e-12, "{what}: {change:e}");
                    } else {
                        assert!(change > 1e-6, "{what}: {change:e}");
                        // The adjoint iteration itself converged.
                        assert!(r.final_change.unwrap() <= 1e-12, "{what}");
                    }
                }
                assert_eq!(o.stats.unconverged_loops > 0, !reached, "{what}");
            }
        }
    }
}

/// A change measure read only by the loop's test (`while (err > tol)`)
/// is carried from one iteration to the next but is no part of the fixed
/// point: at convergence it still changes (here from the first
/// iteration's change to 0, the map being constant after it), and the
/// loop has reached its fixed point all the same.
///
/// A loop left by an exit has its last complete iteration one before the
/// one the exit ends: here the first, from the initial guess, which is no
/// fixed point. The two-phase adjoint reverses that iteration, so the loop
/// is reported not to have reached its fixed point (its Jacobian is right
/// only because this map does not depend on its state).
#[test]
fn a_change_measure_read_only_by_the_test_is_no_part_of_the_fixed_point() {
    let prog = lp::fixed_point(FixedPointForm::Exit, (0.0, 0.0, 0.5), false);
    let p = read(&lp::xaif(&prog, "fixed point"));
    let line = lp::loop_lines(&prog)[0];
    let text = transform(&p, &fixed_point_options(line, 1e-12, 1000)).unwrap();
    for r in &run(&text, 3, 2, Mode::Split).stats.checkpointed_loops {
        assert_eq!((r.reached, r.converged), (Some(false), Some(false)));
        assert_eq!(r.forward_change, Some(1.0));
    }
    {
        let form = FixedPointForm::While;
        let prog = lp::fixed_point(form, (0.0, 0.0, 0.5), false);
        let p = read(&lp::xaif(&prog, "fixed point"));
        let line = lp::loop_lines(&prog)[0];
        let text = transform(&p, &fixed_point_options(line, 1e-12, 1000)).unwrap();
        let want = lp::fixed_point_derivative([0.5, 1.0, 1.5], (0.0, 0.0, 0.5));
        for mode in [Mode::Split, Mode::Joint] {
            let what = format!("{form:?} {mode:?}");
            let o = run(&text, 3, 2, mode);
            for r in &o.stats.checkpointed_loops {
                assert_eq!(r.forward_change, Some(0.0), "{what}");
                assert_eq!((r.reached, r.converged), (Some(true), Some(true)), "{what}");
            }
            for (got, want) in o.jacobian.entries.iter().zip(want) {
                assert!((got - want).abs() <= 1e-14, "{what}: {got} against {want}");
            }
        }
    }
}

#[test]
fn a_loop_carrying_no_active_state_is_not_a_fixed_point() {
    let prog = lp::private_cells(4);
    let p = read(&lp::xaif(&prog, "cells"));
    let line = lp::loop_lines(&prog)[0];
    let e = transform(&p, &fixed_point_options(line, 1e-12, 10)).unwrap_err();
    assert!(e.contains("not a fixed-point iteration"), "{e}");
}

fn independent_options(line: usize) -> AdjointOptions {
    AdjointOptions {
        independent_loops: vec![IndependentMark {
            routine: "head".into(),
            line: line as i64,
        }],
        ..AdjointOptions::default()
    }
}

#[test]
fn independent_iterations_are_reversed_one_at_a_time() {
    for cells in [0, 1, 7, 200] {
        let prog = lp::independent(cells);
        let n = cells as usize + 1;
        let p = read(&lp::xaif(&prog, "cells"));
        let line = lp::loop_lines(&prog)[0];
        let text = transform(&p, &independent_options(line)).unwrap();
        let plain = transform(&p, &AdjointOptions::default()).unwrap();
        let one = transform(
            &read(&lp::xaif(&lp::independent(1), "one")),
            &AdjointOptions::default(),
        )
        .unwrap();
        for mode in [Mode::Split, Mode::Joint] {
            let what = format!("cells={cells} {mode:?}");
            let o = run(&text, n, n, mode);
            same(&o.jacobian, &run(&plain, n, n, mode).jacobian, 1e-12, &what);
            for r in &o.stats.checkpointed_loops {
                assert_eq!(r.schedule, "independent");
                assert_eq!(r.forward_steps, cells as u64, "{what}");
                assert_eq!(r.iterations, cells as u64, "{what}");
            }
            let single = run(&one, 2, 2, mode);
            assert!(
                o.stats.peak_double_tape <= single.stats.peak_double_tape,
                "{what}: peak tape {} against one iteration's {}",
                o.stats.peak_double_tape,
                single.stats.peak_double_tape
            );
        }
    }
}

#[test]
fn carried_dependences_are_refused_with_both_statements() {
    for (dependence, variable) in [
        (Carried::PreviousElement, "A"),
        (Carried::Scalar, "C"),
        (Carried::Callee, "A"),
    ] {
        let prog = lp::dependent(5, dependence);
        let p = read(&lp::xaif(&prog, "dependent"));
        let line = lp::loop_lines(&prog)[0];
        let e = transform(&p, &independent_options(line)).unwrap_err();
        assert!(
            e.contains("not independent") && e.contains(&format!("`{variable}`")),
            "{dependence:?}: {e}"
        );
        assert!(e.matches("statement `").count() >= 2, "{dependence:?}: {e}");
    }
}
