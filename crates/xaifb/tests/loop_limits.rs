//! Marked loops at the limits (reliability round 4):
//!
//! - 130 counted loops nested in one routine, each marked: refused at once
//!   (no output, exit 1) at the deepest loop beyond the documented depth
//!   of 16, located, instead of exhausting memory; 16 levels transform and run;
//! - `do t = 1, -9223372036854775808` and other zero-trip loops whose
//!   bounds are at the ends of the integers: the adjoint, with and without
//!   checkpointing, runs no trip and gives the derivative of a loop that
//!   does nothing, where the trip-count arithmetic overflowed before;
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
