//! The loop kinds on the command line and through the oadDriver shims:
//!
//! - a loop plan (`--loop-plan FILE`, or the file `XAIFB_LOOP_PLAN` names)
//!   marks loops as the flags do, is reported on standard error unless
//!   `--quiet`, and a bad line is a command-line error naming the file,
//!   line and column, with no output; through the shims the environment
//!   variable alone marks the loops of an unmodified OpenAD build;
//! - `xaifb run --stats-json` reports each kind's `schedule`,
//!   `max_repetitions`, a fixed-point loop's `adjoint_iterations`,
//!   `final_change`, `forward_change`, `reached` and `converged`, and warns
//!   on standard error of a fixed-point loop that did not converge within
//!   MAXITER or did not reach its fixed point;
//! - `--independent-loop` on a loop whose iterations depend on one another
//!   is refused (exit 1) naming the variable and both statements.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use xaif_testkit::loop_programs::{self as lp, Carried, Ending, FixedPointForm};
use xaif_testkit::repo_root;

fn xaifb() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xaifb"));
    c.env_remove("XAIFB_LOOP_PLAN");
    c
}

fn errors_fixture() -> PathBuf {
    repo_root().join("fixtures/checkpoint/errors.xaif")
}

/// The adjoint of `input` with `args` into `out`.
fn adjoint(input: &Path, args: &[&str], out: &Path) -> Output {
    xaifb()
        .arg("adjoint")
        .arg(input)
        .arg("-o")
        .arg(out)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_loop_plan_marks_loops_as_the_flags_do() {
    let dir = xaif_testkit::Scratch::new("xaifb-loop-plan", "flag");
    let plan = dir.join("plan.txt");
    // The while loop at line 5 (online), the counted loop at 23
    // (binomial).
    std::fs::write(
        &plan,
        "# loops of the fixture\ncheckpoint head:5:3   ! time loop\n\n  checkpoint head:23:2\n",
    )
    .unwrap();
    let by_plan = dir.join("plan.xaif");
    let o = adjoint(
        &errors_fixture(),
        &["--loop-plan", plan.to_str().unwrap()],
        &by_plan,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("loop plan")
            && err.contains("(from --loop-plan): checkpoint head:5:3, checkpoint head:23:2"),
        "{err}"
    );
    let by_flags = dir.join("flags.xaif");
    let o = adjoint(
        &errors_fixture(),
        &[
            "--checkpoint-loop",
            "head:5:3",
            "--checkpoint-loop",
            "head:23:2",
        ],
        &by_flags,
    );
    assert!(o.status.success());
    let text = std::fs::read(&by_plan).unwrap();
    assert_eq!(text, std::fs::read(&by_flags).unwrap());
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("oad_revolve_begin_online") && text.contains("oad_revolve_begin\""));
    // Quiet: no report.
    let o = adjoint(
        &errors_fixture(),
        &["--quiet", "--loop-plan", plan.to_str().unwrap()],
        &by_plan,
    );
    assert!(o.status.success());
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn a_bad_plan_line_is_located_and_writes_nothing() {
    let dir = xaif_testkit::Scratch::new("xaifb-loop-plan", "bad");
    for (text, at, needle) in [
        (
            "checkpoint head:5\nfixpoint head:23\n",
            ":2:1:",
            "not a kind of mark",
        ),
        ("\n\n    independent head:x\n", ":3:17:", "LINE `x`"),
        (
            "checkpoint head:23:2147483648\n",
            ":1:12:",
            "at most 2147483647",
        ),
        ("fixed-point head:5:7\n", ":1:13:", "TOLERANCE `7`"),
    ] {
        let plan = dir.join("plan.txt");
        std::fs::write(&plan, text).unwrap();
        let out = dir.join("out.xaif");
        let o = adjoint(
            &errors_fixture(),
            &["--loop-plan", plan.to_str().unwrap()],
            &out,
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{text:?}: {err}");
        assert!(
            err.contains(&format!("{}{at}", plan.display())) && err.contains(needle),
            "{text:?}: {err}"
        );
        assert!(!out.exists(), "{text:?}: an output was written");
    }
    // A plan that names a loop that is not there: the input's located
    // error, as for the flag.
    let plan = dir.join("plan.txt");
    std::fs::write(&plan, "checkpoint head:99\n").unwrap();
    let out = dir.join("out.xaif");
    let o = adjoint(
        &errors_fixture(),
        &["--loop-plan", plan.to_str().unwrap()],
        &out,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no loop at line 99"));
    assert!(!out.exists());
    // A plan that cannot be read.
    let o = adjoint(
        &errors_fixture(),
        &["--loop-plan", dir.join("nosuch").to_str().unwrap()],
        &out,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot be read"));
}

#[test]
fn the_shims_take_the_plan_from_the_environment_alone() {
    let dir = xaif_testkit::Scratch::new("xaifb-loop-plan", "shims");
    let root = dir.join("booster");
    let o = xaifb().arg("shims").arg(&root).output().unwrap();
    assert!(o.status.success());
    let driver =
        root.join("xaifBooster/algorithms/BasicBlockPreaccumulationReverse/driver/oadDriver");
    let plan = dir.join("plan.txt");
    std::fs::write(&plan, "checkpoint head:5:2\ncheckpoint head:23\n").unwrap();
    let shim = |out: &Path, plan: Option<&Path>| {
        let mut c = Command::new(&driver);
        c.arg("-i").arg(errors_fixture()).arg("-o").arg(out);
        match plan {
            Some(p) => c.env("XAIFB_LOOP_PLAN", p),
            None => c.env_remove("XAIFB_LOOP_PLAN"),
        };
        c.output().unwrap()
    };
    let out = dir.join("marked.xaif");
    let o = shim(&out, Some(&plan));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("(from XAIFB_LOOP_PLAN): checkpoint head:5:2, checkpoint head:23:10"));
    let marked = std::fs::read_to_string(&out).unwrap();
    assert!(marked.contains("oad_revolve_begin_online") && marked.contains("oad_revolve_next"));
    let plain = dir.join("plain.xaif");
    let o = shim(&plain, None);
    assert!(o.status.success());
    assert!(!std::fs::read_to_string(&plain)
        .unwrap()
        .contains("oad_revolve"));
    // A bad plan through the shims: located, exit 2, no output.
    std::fs::write(&plan, "checkpoint head:5\nwhile head:8\n").unwrap();
    let bad = dir.join("bad.xaif");
    let o = shim(&bad, Some(&plan));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!("{}:2:1:", plan.display())));
    assert!(!bad.exists());
}

/// `xaifb run --stats-json` on the adjoint `adjoint` of a generic-harness
/// program of `n` inputs and `m` outputs: the records and the standard
/// error.
fn run_stats(adjoint: &Path, n: usize, m: usize, mode: &str) -> (Vec<serde_json::Value>, String) {
    let stats = adjoint.with_extension("json");
    let o = xaifb()
        .arg("run")
        .arg(adjoint)
        .args(["--mode", mode, "--n", &n.to_string(), "--m", &m.to_string()])
        .arg("--stats-json")
        .arg(&stats)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(v["tapes_empty"], true);
    (v["checkpointed_loops"].as_array().unwrap().clone(), err)
}

/// The adjoint of the generic-harness program `input` (3 inputs, 2
/// outputs) with `--fixed-point-loop MARK`, run in split and joint mode:
/// per mode, the records and the standard error.
fn fixed_point_runs(
    input: &Path,
    mark: &str,
) -> Vec<(&'static str, Vec<serde_json::Value>, String)> {
    let out = input.with_file_name("fp_adjoint.xaif");
    let o = adjoint(input, &["--fixed-point-loop", mark], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    ["split", "joint"]
        .into_iter()
        .map(|mode| {
            let (records, err) = run_stats(&out, 3, 2, mode);
            assert!(!records.is_empty(), "{mark} {mode}");
            (mode, records, err)
        })
        .collect()
}

#[test]
fn run_reports_each_kind_and_warns_of_an_unconverged_fixed_point() {
    let dir = xaif_testkit::Scratch::new("xaifb-loop-kinds", "stats");
    // A fixed-point loop, with the default limit and with 3 iterations.
    let prog = lp::fixed_point(FixedPointForm::While, (0.3, 0.4, 0.5), false);
    let input = dir.join("fp.xaif");
    std::fs::write(&input, lp::xaif(&prog, "fixed point")).unwrap();
    let line = lp::loop_lines(&prog)[0];
    for (mark, converges) in [
        (format!("head:{line}"), true),
        (format!("head:{line}:1e-12:3"), false),
    ] {
        for (mode, records, err) in fixed_point_runs(&input, &mark) {
            for r in &records {
                assert_eq!(r["schedule"], "fixed-point");
                assert_eq!(r["converged"], converges, "{mark} {mode}");
                assert_eq!(r["max_repetitions"], 1, "{mark} {mode}");
                let iterations = r["adjoint_iterations"].as_u64().unwrap();
                let change = r["final_change"].as_f64().unwrap();
                if converges {
                    assert!(iterations >= 2 && change <= 1e-12, "{r}");
                } else {
                    assert!(iterations == 3 && change > 1e-12, "{r}");
                }
            }
            assert_eq!(
                err.contains("did not converge") && err.contains("raise MAXITER"),
                !converges,
                "{mark} {mode}: {err}"
            );
        }
    }
    // A while loop of 37 iterations, online with 3 snapshots: r(38, 3) = 4.
    let prog = lp::time_loop(37, Ending::While, false);
    let input = dir.join("online.xaif");
    std::fs::write(&input, lp::xaif(&prog, "time loop")).unwrap();
    let out = dir.join("online_adjoint.xaif");
    let mark = format!("head:{}:3", lp::loop_lines(&prog)[0]);
    let o = adjoint(&input, &["--checkpoint-loop", &mark], &out);
    assert!(o.status.success());
    let (records, _) = run_stats(&out, 3, 2, "split");
    for r in &records {
        assert_eq!(r["schedule"], "online");
        assert_eq!(r["iterations"], 37);
        let reps = r["max_repetitions"].as_u64().unwrap();
        assert!(
            (1..=xaif_revolve::repetitions(38, 3)).contains(&reps),
            "{r}"
        );
        assert!(
            r.get("adjoint_iterations").is_none_or(|v| v.is_null()),
            "{r}"
        );
    }
    // Independent cells: as many forward steps as iterations.
    let prog = lp::independent(9);
    let input = dir.join("cells.xaif");
    std::fs::write(&input, lp::xaif(&prog, "cells")).unwrap();
    let out = dir.join("cells_adjoint.xaif");
    let mark = format!("head:{}", lp::loop_lines(&prog)[0]);
    let o = adjoint(&input, &["--independent-loop", &mark], &out);
    assert!(o.status.success());
    let (records, _) = run_stats(&out, 10, 10, "joint");
    for r in &records {
        assert_eq!(r["schedule"], "independent");
        assert_eq!(r["iterations"], 9);
        assert_eq!(r["forward_steps"], 9);
        assert_eq!(r["max_repetitions"], 1);
    }
}

/// A while loop stopped by its count 5 iterations into a contraction
/// that needs about 30 to converge, marked `--fixed-point-loop`: its
/// adjoint converges, to the derivative of a fixed point the loop did not
/// reach. `run` reports `reached: false`, the state's relative change,
/// `converged: false`, and warns (it used to report it converged, a wrong
/// Jacobian with no word).
#[test]
fn run_warns_of_a_fixed_point_loop_that_did_not_reach_its_fixed_point() {
    let dir = xaif_testkit::Scratch::new("xaifb-loop-kinds", "reached");
    for (limit, reached) in [(5, false), (200, true)] {
        let prog = lp::fixed_point_limited(FixedPointForm::While, (0.3, 0.4, 0.5), false, limit);
        let input = dir.join("fp.xaif");
        std::fs::write(&input, lp::xaif(&prog, "fixed point")).unwrap();
        let mark = format!("head:{}", lp::loop_lines(&prog)[0]);
        for (mode, records, err) in fixed_point_runs(&input, &mark) {
            for r in &records {
                assert_eq!(r["reached"], reached, "{limit} {mode}: {r}");
                assert_eq!(r["converged"], reached, "{limit} {mode}: {r}");
                let change = r["forward_change"].as_f64().unwrap();
                assert_eq!(change <= 1e-12, reached, "{limit} {mode}: {r}");
            }
            assert_eq!(
                err.contains("did not reach its fixed point"),
                !reached,
                "{limit} {mode}: {err}"
            );
            assert!(!err.contains("raise MAXITER"), "{limit} {mode}: {err}");
        }
    }
}

#[test]
fn a_carried_dependence_is_refused_naming_the_variable_and_both_statements() {
    let dir = xaif_testkit::Scratch::new("xaifb-loop-kinds", "dependent");
    for (form, variable) in [
        (Carried::PreviousElement, "A"),
        (Carried::Scalar, "C"),
        (Carried::Callee, "A"),
    ] {
        let prog = lp::dependent(5, form);
        let input = dir.join("dependent.xaif");
        std::fs::write(&input, lp::xaif(&prog, "dependent")).unwrap();
        let out = dir.join("out.xaif");
        let mark = format!("head:{}", lp::loop_lines(&prog)[0]);
        let o = adjoint(&input, &["--independent-loop", &mark], &out);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{form:?}: {err}");
        assert!(err.contains(&input.display().to_string()), "{err}");
        assert!(
            err.contains("not independent")
                && err.contains(&format!("`{variable}`"))
                && err.matches("statement `").count() >= 2,
            "{form:?}: {err}"
        );
        assert!(!out.exists());
    }
}

/// A counted loop that no exit leaves runs its iterations whatever its
/// state does: marked `--fixed-point-loop`, it used to be reversed as if
/// its last state were the fixed point, and a loop such as `y = x * y` run
/// three times got the fixed point's derivative, reported converged. It is
/// refused, located at the loop, with no output; `--checkpoint-loop`
/// takes it.
#[test]
fn a_counted_loop_without_an_exit_is_no_fixed_point_iteration() {
    let dir = xaif_testkit::Scratch::new("xaifb-loop-kinds", "counted-fixed-point");
    // A counted loop that carries an active scalar from one iteration to
    // the next.
    let prog = lp::dependent(5, Carried::Scalar);
    let input = dir.join("counted.xaif");
    std::fs::write(&input, lp::xaif(&prog, "counted")).unwrap();
    let mark = format!("head:{}", lp::loop_lines(&prog)[0]);
    let out = dir.join("out.xaif");
    let o = adjoint(&input, &["--fixed-point-loop", &mark], &out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{}:", input.display()))
            && err.contains("element ForLoop:")
            && err.contains(&format!("--fixed-point-loop {mark}"))
            && err.contains("a counted loop that no exit leaves")
            && err.contains("does not iterate to convergence"),
        "{err}"
    );
    assert!(!out.exists());
    let o = adjoint(&input, &["--checkpoint-loop", &mark], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Left by an exit, a counted loop can be a fixed-point iteration.
    let prog = lp::fixed_point(FixedPointForm::Exit, (0.3, 0.4, 0.5), true);
    let input = dir.join("exit.xaif");
    std::fs::write(&input, lp::xaif(&prog, "exit")).unwrap();
    let mark = format!("head:{}", lp::loop_lines(&prog)[0]);
    let o = adjoint(&input, &["--fixed-point-loop", &mark], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
