//! Actual arguments whose activity differs from the callee's formal: the
//! output must give every active formal an active argument (Fortran does
//! not compile a real constant or a passive variable passed to an
//! argument of the active type), and the derivatives must stay right in
//! every mode, including joint mode, where the callee runs its forward
//! sweep again from the arguments of the reverse call.

use std::path::{Path, PathBuf};
use std::process::Command;

use xaif_testkit::repo_root;

fn xaifb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xaifb"))
}

fn scratch(name: &str) -> xaif_testkit::Scratch {
    xaif_testkit::Scratch::new("xaifb-conv", name)
}

fn fixture(name: &str) -> PathBuf {
    repo_root().join("fixtures/dropin").join(name)
}

fn run_ok(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{cmd:?}: exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn transform(mode: &str, input: &Path, out: &Path) -> String {
    run_ok(xaifb().arg(mode).arg(input).arg("-o").arg(out));
    std::fs::read_to_string(out).unwrap()
}

/// The `F(i, j)= v` entries of a Jacobian in the ad.out format.
fn entries(text: &str) -> Vec<f64> {
    text.lines()
        .filter_map(|l| l.split_once(")="))
        .map(|(_, v)| v.trim().parse::<f64>().unwrap())
        .collect()
}

fn jacobian(mode: &str, file: &Path) -> Vec<f64> {
    let mut cmd = xaifb();
    cmd.args(["run", "--n", "2", "--m", "2"]);
    if mode == "fd" {
        cmd.arg("--fd");
    } else {
        cmd.args(["--mode", mode]);
    }
    entries(&run_ok(cmd.arg(file)))
}

/// The text of every `SubroutineCall` of `foo` on line 10 (the call that
/// passes the constant or the passive variable).
fn calls_of_foo(xaif: &str) -> Vec<&str> {
    xaif.match_indices("<xaif:SubroutineCall ")
        .map(|(at, _)| {
            let end = xaif[at..].find("</xaif:SubroutineCall>").unwrap() + at;
            &xaif[at..end]
        })
        .filter(|call| call.contains("symbol_id=\"foo\"") && call.contains("lineNumber=\"10\""))
        .collect()
}

#[test]
fn active_formals_get_active_arguments_and_right_derivatives() {
    let dir = scratch("formals");
    for name in ["constant_actual.xaif", "passive_actual.xaif"] {
        let input = fixture(name);
        let fd = jacobian("fd", &input);
        assert_eq!(fd.len(), 4, "{name}");
        // y = (2 x1, x2 x1): dy1/dx1 = 2 whatever the point.
        assert!((fd[0] - 2.0).abs() < 1e-6, "{name}: {fd:?}");
        for mode in ["tangent", "adjoint", "typechange"] {
            let out = dir.join(format!("{mode}-{name}"));
            let text = transform(mode, &input, &out);
            let calls = calls_of_foo(&text);
            assert!(!calls.is_empty(), "{name} {mode}");
            for call in calls {
                // No real constant, and nothing passive, where foo's first
                // (active) formal is.
                let first = call.split("<xaif:Argument position=\"2\"").next().unwrap();
                assert!(!first.contains("type=\"real\""), "{name} {mode}: {call}");
                assert!(!first.contains("symbol_id=\"P\""), "{name} {mode}: {call}");
                assert!(first.contains("OpenAD_tyc_"), "{name} {mode}: {call}");
            }
            let runs: &[&str] = match mode {
                "tangent" => &["tangent"],
                "adjoint" => &["split", "joint"],
                _ => &["plain"],
            };
            for run in runs {
                if *run == "plain" {
                    // The converted program computes the same function.
                    let mut cmd = xaifb();
                    cmd.args(["run", "--n", "2", "--m", "2"]).arg(&out);
                    let mut orig = xaifb();
                    orig.args(["run", "--n", "2", "--m", "2"]).arg(&input);
                    assert_eq!(run_ok(&mut cmd), run_ok(&mut orig), "{name}");
                    continue;
                }
                let ad = jacobian(run, &out);
                assert_eq!(ad.len(), fd.len(), "{name} {run}");
                for (a, d) in ad.iter().zip(&fd) {
                    assert!(
                        (a - d).abs() <= 1e-6 * (1.0 + d.abs()),
                        "{name} {run}: {ad:?} against divided differences {fd:?}"
                    );
                }
            }
        }
    }
}
