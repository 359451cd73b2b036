//! Marked loops at the limits (reliability round 4):
//!
//! - 130 counted loops nested in one routine, each marked: refused at once
//!   (no output, exit 1) at the deepest loop beyond the documented depth
//!   of 16, located, instead of exhausting memory; 16 levels transform and run;
//! - `do t = 1, -9223372036854775808` and other zero-trip loops whose
//!   bounds are at the ends of the integers: the adjoint, with and without
//!   checkpointing, runs no trip and gives the derivative of a loop that
//!   does nothing, where the trip-count arithmetic overflowed before;
//! - loops whose bounds and step are known only at run time with spans
//!   beyond the 64-bit integers, and loops whose first value is within one
//!   step of the integers' end: the adjoint, with and without
//!   checkpointing, gives the Jacobian of the loop Fortran runs, where its
//!   trip count or its reversed loop variable overflowed before;
//! - every mark flag naming a routine that does not exist is located at
//!   the call graph's line and column.

use std::path::Path;
use std::process::{Command, Output};

use xaif_testkit::loop_programs as lp;

fn xaifb() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xaifb"));
    c.env_remove("XAIFB_LOOP_PLAN");
    c
}

fn adjoint(input: &Path, marks: &[String], out: &Path) -> Output {
    xaifb()
        .arg("adjoint")
        .arg(input)
        .arg("-o")
        .arg(out)
        .args(marks)
        .output()
        .unwrap()
}

/// The Jacobian text `xaifb run` prints for `file`.
fn jacobian(file: &Path, mode: &str) -> String {
    let o = xaifb()
        .arg("run")
        .arg(file)
        .args(["--n", "2", "--m", "2", "--mode", mode])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn marks_of(flag: &str, lines: &[usize]) -> Vec<String> {
    lines
        .iter()
        .flat_map(|l| [flag.to_string(), format!("head:{l}:2")])
        .collect()
}

#[test]
fn a_deep_marked_nest_is_refused_before_any_work() {
    let dir = xaif_testkit::Scratch::new("xaifb-loop-limits", "deep");
    for depth in [130usize, 17] {
        let prog = lp::nested_loops(depth, 2);
        let input = dir.join(format!("nest{depth}.xaif"));
        std::fs::write(&input, lp::xaif(&prog, "nest")).unwrap();
        let lines = lp::loop_lines(&prog);
        assert_eq!(lines.len(), depth);
        let out = dir.join("out.xaif");
        let o = adjoint(&input, &marks_of("--checkpoint-loop", &lines), &out);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{depth}: {err}");
        assert!(
            err.contains(&format!("{}:", input.display()))
                && err.contains("element ForLoop")
                && err.contains(&format!("--checkpoint-loop head:{}", lines[depth - 1]))
                && err.contains(&format!("marked loops nested {depth} deep"))
                && err.contains("at most 16"),
            "{depth}: {err}"
        );
        assert!(!out.exists());
    }
    // At the limit: transformed, and the Jacobian of the unmarked adjoint.
    let prog = lp::nested_loops(16, 2);
    let input = dir.join("nest16.xaif");
    std::fs::write(&input, lp::xaif(&prog, "nest")).unwrap();
    let marked = dir.join("marked.xaif");
    let o = adjoint(
        &input,
        &marks_of("--checkpoint-loop", &lp::loop_lines(&prog)),
        &marked,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let plain = dir.join("plain.xaif");
    assert!(adjoint(&input, &[], &plain).status.success());
    assert_eq!(jacobian(&marked, "joint"), jacobian(&plain, "joint"));
}

#[test]
fn zero_trip_loops_at_the_ends_of_the_integers_do_not_overflow() {
    let dir = xaif_testkit::Scratch::new("xaifb-loop-limits", "bounds");
    // y(1) = x(1) y(1) per trip, y = x before: no trip, the identity.
    let identity = "F(  1,  1)=   1.0000000000000000E+000\n\
                    F(  2,  1)=   0.0000000000000000E+000\n\
                    F(  1,  2)=   0.0000000000000000E+000\n\
                    F(  2,  2)=   1.0000000000000000E+000\n";
    for (lo, hi, down) in [
        (1, i64::MIN, false),
        (-1, i64::MAX, true),
        (0, i64::MAX, true),
        (i64::MIN, i64::MAX, true),
        (i64::MAX, i64::MIN, false),
        (5, 3, false),
    ] {
        let prog = lp::bounded_loop(lo, hi, down);
        let input = dir.join("bound.xaif");
        std::fs::write(&input, lp::xaif(&prog, "bound")).unwrap();
        let line = lp::loop_lines(&prog)[0];
        for marks in [
            vec![],
            vec!["--checkpoint-loop".into(), format!("head:{line}:2")],
        ] {
            let out = dir.join("adjoint.xaif");
            let o = adjoint(&input, &marks, &out);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            for mode in ["split", "joint"] {
                let j = jacobian(&out, mode);
                assert!(
                    j.contains(identity),
                    "do t = {lo}, {hi} {marks:?} {mode}:\n{j}"
                );
            }
        }
    }
    // Ordinary bounds keep their usual code (the constant is computed
    // only where the arithmetic would overflow).
    let prog = lp::bounded_loop(1, 10, false);
    let input = dir.join("ten.xaif");
    std::fs::write(&input, lp::xaif(&prog, "ten")).unwrap();
    let out = dir.join("ten_adjoint.xaif");
    assert!(adjoint(&input, &[], &out).status.success());
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("name=\"div_scal_scal\""));
}

/// The entries `F(i, j)` of a Jacobian `xaifb run` printed, in order.
fn entries(text: &str) -> Vec<f64> {
    text.lines()
        .filter_map(|l| l.split_once(")="))
        .map(|(_, v)| v.trim().parse::<f64>().expect("a number"))
        .collect()
}

/// The values of `do t = lo, hi, step` as Fortran runs it: the trip count
/// `max(0, (hi - lo + step) / step)`, exactly.
fn fortran_values(lo: i64, hi: i64, step: i64) -> Vec<i128> {
    let (lo, hi, step) = (i128::from(lo), i128::from(hi), i128::from(step));
    let trips = ((hi - lo + step) / step).max(0);
    (0..trips).map(|k| lo + k * step).collect()
}

/// The Jacobian of [`lp::runtime_bounded_loop`] at `x = (0.5, 1)` (the
/// default start of `xaifb run`): `y(k) = x(k)^(1 + n_k)`, `n_k` the trips
/// whose `t` gives the subscript `k = 1 + |mod(t, 2)|`.
fn expected(lo: i64, hi: i64, step: i64) -> [f64; 4] {
    let values = fortran_values(lo, hi, step);
    let odd = values.iter().filter(|t| *t % 2 != 0).count() as i32;
    let even = values.len() as i32 - odd;
    // y(1) collects the even trips, y(2) the odd ones.
    let d = |x: f64, n: i32| f64::from(n + 1) * x.powi(n);
    [d(0.5, even), 0.0, 0.0, d(1.0, odd)]
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= 1e-12 * x.abs().max(y.abs()).max(1.0))
}

/// Loops whose bounds and step are known only at run time and whose span
/// `hi - lo + step` leaves the 64-bit integers (few trips through a large
/// step, or none), and loops whose first value is within one step of the
/// integers' end (the reversed loop stepped past it): the adjoint, split
/// and joint, with and without checkpointing, gives the Jacobian of the
/// loop Fortran runs, equal to the tangent's and to divided differences,
/// where its trip-count and loop-variable arithmetic overflowed before.
#[test]
fn loops_whose_bounds_are_near_the_ends_of_the_integers_reverse_exactly() {
    let dir = xaif_testkit::Scratch::new("xaifb-loop-limits", "runtime");
    const MIN: i64 = i64::MIN;
    const MAX: i64 = i64::MAX;
    const Q: i64 = 1 << 62;
    let cases: &[(i64, i64, i64)] = &[
        // Spans beyond the integers, a few trips.
        (MIN + 5, Q, Q),
        (MIN + 5, MAX - 2, MAX - 2),
        (MAX - 4, -Q, -Q),
        (MIN + 7, Q, 3 * (Q / 2)),
        // Spans beyond the integers, no trip.
        (1, MIN, 1),
        (-2, MAX, -1),
        (MAX, MIN, Q),
        (MIN, MAX, -3),
        (MAX, MIN + 1, 1),
        // The first value within one step of the end.
        (MIN, MIN + 2, 1),
        (MAX, MAX - 2, -1),
        (MIN + 1, 0, Q),
        (MAX - 1, 0, -Q),
        (MIN, 3, MAX),
        // Ordinary.
        (1, 5, 1),
        (7, -2, -3),
    ];
    for &(lo, hi, step) in cases {
        let what = format!("do t = {lo}, {hi}, {step}");
        let want = expected(lo, hi, step);
        let prog = lp::runtime_bounded_loop(lo, hi, step);
        let input = dir.join("bound.xaif");
        std::fs::write(&input, lp::xaif(&prog, "bound")).unwrap();
        let line = lp::loop_lines(&prog)[0];
        // The tangent and the divided differences of the original.
        let tangent = dir.join("tangent.xaif");
        let o = xaifb()
            .arg("tangent")
            .arg(&input)
            .arg("-o")
            .arg(&tangent)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let t = entries(&jacobian(&tangent, "tangent"));
        assert!(close(&t, &want), "{what}: tangent {t:?}, expected {want:?}");
        let fd = xaifb()
            .arg("run")
            .arg(&input)
            .args(["--n", "2", "--m", "2", "--fd"])
            .output()
            .unwrap();
        assert!(
            fd.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&fd.stderr)
        );
        let fd = entries(&String::from_utf8_lossy(&fd.stdout));
        assert!(
            fd.len() == 4 && fd.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-4),
            "{what}: divided differences {fd:?}, expected {want:?}"
        );
        for marks in [
            vec![],
            vec!["--checkpoint-loop".into(), format!("head:{line}:2")],
            vec!["--checkpoint-loop".into(), format!("head:{line}:1")],
        ] {
            let out = dir.join("adjoint.xaif");
            let o = adjoint(&input, &marks, &out);
            assert!(
                o.status.success(),
                "{what} {marks:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            for mode in ["split", "joint"] {
                let j = entries(&jacobian(&out, mode));
                assert!(
                    close(&j, &want),
                    "{what} {marks:?} {mode}: {j:?}, expected {want:?}"
                );
            }
        }
    }
    // Constant bounds whose first value is within one step of the end.
    for (lo, hi, down) in [(MIN, MIN + 2, false), (MAX, MAX - 2, true)] {
        let prog = lp::bounded_loop(lo, hi, down);
        let input = dir.join("const.xaif");
        std::fs::write(&input, lp::xaif(&prog, "const")).unwrap();
        let line = lp::loop_lines(&prog)[0];
        // y(1) = x(1)^4: 4 x(1)^3 at 0.5.
        let want = [0.5, 0.0, 0.0, 1.0];
        for marks in [
            vec![],
            vec!["--checkpoint-loop".into(), format!("head:{line}:2")],
        ] {
            let out = dir.join("const_adjoint.xaif");
            let o = adjoint(&input, &marks, &out);
            assert!(
                o.status.success(),
                "{lo}, {hi} {marks:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            for mode in ["split", "joint"] {
                let j = entries(&jacobian(&out, mode));
                assert!(
                    close(&j, &want),
                    "do t = {lo}, {hi} {marks:?} {mode}: {j:?}"
                );
            }
        }
    }
}

#[test]
fn a_mark_of_a_routine_that_does_not_exist_is_located_at_the_call_graph() {
    let dir = xaif_testkit::Scratch::new("xaifb-loop-limits", "nosuch");
    let input = xaif_testkit::repo_root().join("fixtures/checkpoint/errors.xaif");
    let plan = dir.join("plan.txt");
    std::fs::write(&plan, "independent nosuch:4\n").unwrap();
    for marks in [
        vec!["--checkpoint-loop", "nosuch:3"],
        vec!["--fixed-point-loop", "nosuch:3"],
        vec!["--independent-loop", "nosuch:3"],
        vec!["--loop-plan", plan.to_str().unwrap()],
    ] {
        let marks: Vec<String> = marks.iter().map(|s| s.to_string()).collect();
        let out = dir.join("out.xaif");
        let o = adjoint(&input, &marks, &out);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{marks:?}: {err}");
        assert!(
            err.contains(&format!("{}:3:1: element CallGraph:", input.display()))
                && err.contains("no routine `nosuch`"),
            "{marks:?}: {err}"
        );
        assert!(!out.exists());
    }
}
