//! `--checkpoint-loop` on the command line: every bad mark is refused with
//! a located error (file, line, column, element), a non-zero exit and no
//! output file; tangent and trace mode note the flag and ignore it; the
//! oadDriver shims pass it on; and `xaifb run --stats-json` reports each
//! reversed loop instance with exactly `t(l, s)` forward steps
//! (`fixtures/checkpoint/errors.xaif`: a while loop at line 5, a post-test
//! loop at 8, a loop left by an exit at 11, one left by a return at 15
//! (routine `early`), a `<` loop whose body changes its bound at 19, a
//! counted loop at 23; routine `empty` has no loop).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use xaif_testkit::repo_root;

fn xaifb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xaifb"))
}

fn fixture(name: &str) -> PathBuf {
    repo_root().join("fixtures/checkpoint").join(name)
}

fn adjoint(marks: &[&str], out: &Path) -> Output {
    let mut c = xaifb();
    c.arg("adjoint")
        .arg(fixture("errors.xaif"))
        .arg("-o")
        .arg(out);
    for m in marks {
        c.arg("--checkpoint-loop").arg(m);
    }
    c.output().unwrap()
}

/// The mark is refused with exit `code`, a message containing `needles`,
/// and no output file.
fn refused(marks: &[&str], code: i32, needles: &[&str]) {
    let dir = xaif_testkit::Scratch::new("xaifb-ckpt-cli", &marks.join("_").replace(':', "-"));
    let out = dir.join("out.xaif");
    let o = adjoint(marks, &out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{marks:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{marks:?}: `{n}` not in: {err}");
    }
    assert!(!out.exists(), "{marks:?}: an output was written");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "{marks:?}: a temporary was left"
    );
}

#[test]
fn bad_marks_get_located_errors_and_no_output() {
    let file = fixture("errors.xaif").display().to_string();
    let located = |element: &str| format!("element {element}:");
    // A return (a jump to the routine's Exit) is not an exit.
    refused(
        &["early:15"],
        1,
        &[&file, &located("ForLoop"), "left by a jump", "a return"],
    );
    refused(
        &["head:99"],
        1,
        &[
            &located("ControlFlowGraph"),
            "no loop at line 99",
            "its loops are at lines 5, 8, 11, 19, 23",
        ],
    );
    refused(
        &["empty:30"],
        1,
        &["has no loop at line 30", "it has no loops"],
    );
    // Located at the call graph, line and column (it used to name the
    // file alone).
    refused(
        &["nosuch:3"],
        1,
        &[
            &format!("{file}:3:1: element CallGraph:"),
            "no routine `nosuch`",
            "head, early, empty",
        ],
    );
    refused(
        &["head:23", "head:23:4"],
        1,
        &[&located("ForLoop"), "marked twice"],
    );
    // Command-line errors: exit 2.
    refused(&["head:23:0"], 2, &["SNAPSHOTS 0"]);
    refused(&["head:23:x"], 2, &["SNAPSHOTS `x` is not a number"]);
    refused(&["head:x"], 2, &["is not a line number"]);
    refused(&["head"], 2, &["expected ROUTINE:LINE[:SNAPSHOTS]"]);
}

/// SNAPSHOTS and LINE reach the run-time calls as default Fortran
/// integers: a value beyond 2^31 - 1 is a command-line error naming the
/// limit (it was written into `oad_revolve_begin`, which then did not
/// compile, or silently cut to 2^63 - 1), in every mode that takes the
/// flag; the limit itself is accepted and reaches the call unchanged.
#[test]
fn counts_the_run_time_cannot_take_are_refused_at_the_flag() {
    let limit = "at most 2147483647";
    for mark in [
        "head:23:2147483648",
        "head:23:9223372036854775808",
        "head:23:18446744073709551615",
        "head:23:99999999999999999999999",
    ] {
        refused(&[mark], 2, &["SNAPSHOTS", limit, "oad_revolve_begin"]);
    }
    refused(&["head:2147483648"], 2, &["LINE 2147483648", limit]);
    refused(&["head:18446744073709551616:3"], 2, &["LINE", limit]);
    let dir = xaif_testkit::Scratch::new("xaifb-ckpt-cli", "limit");
    for mode in ["tangent", "trace"] {
        let out = dir.join(format!("{mode}.xaif"));
        let o = xaifb()
            .arg(mode)
            .arg(fixture("errors.xaif"))
            .arg("-o")
            .arg(&out)
            .args(["--checkpoint-loop", "head:23:2147483648"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{mode}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(limit), "{mode}");
        assert!(!out.exists(), "{mode}");
    }
    let out = dir.join("out.xaif");
    let o = adjoint(&["head:23:2147483647"], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    let begin = text
        .find("subroutine_name=\"oad_revolve_begin\"")
        .expect("a begin call");
    let call = &text[begin
        ..begin
            + text[begin..]
                .find("</xaif:InlinableSubroutineCall>")
                .unwrap()];
    assert!(call.contains("value=\"2147483647\""), "{call}");
}

#[test]
fn a_good_mark_works_by_symbol_id_and_by_name_also_through_the_shims() {
    let dir = xaif_testkit::Scratch::new("xaifb-ckpt-cli", "good");
    for (k, mark) in ["head:23:2", "HEAD:23"].iter().enumerate() {
        let out = dir.join(format!("out{k}.xaif"));
        let o = adjoint(&[mark], &out);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.contains("oad_revolve_begin"));
    }
    // The oadDriver shims pass every argument on unchanged.
    let root = dir.join("booster");
    let o = xaifb().arg("shims").arg(&root).output().unwrap();
    assert!(o.status.success());
    let driver =
        root.join("xaifBooster/algorithms/BasicBlockPreaccumulationReverse/driver/oadDriver");
    let out = dir.join("shim.xaif");
    let o = Command::new(&driver)
        .arg("-i")
        .arg(fixture("errors.xaif"))
        .arg("-o")
        .arg(&out)
        .args(["--checkpoint-loop", "head:23:2"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("oad_revolve_next"));
}

#[test]
fn tangent_and_trace_mode_note_the_flag_and_ignore_it() {
    let dir = xaif_testkit::Scratch::new("xaifb-ckpt-cli", "modes");
    for mode in ["tangent", "trace"] {
        let with = dir.join(format!("{mode}_with.xaif"));
        let without = dir.join(format!("{mode}_without.xaif"));
        let o = xaifb()
            .arg(mode)
            .arg(fixture("errors.xaif"))
            .args(["--checkpoint-loop", "head:23:2", "-o"])
            .arg(&with)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        assert!(
            err.contains(&format!("--checkpoint-loop has no effect in {mode} mode")),
            "{err}"
        );
        let o = xaifb()
            .arg(mode)
            .arg(fixture("errors.xaif"))
            .arg("-o")
            .arg(&without)
            .output()
            .unwrap();
        assert!(o.status.success());
        assert_eq!(
            std::fs::read(&with).unwrap(),
            std::fs::read(&without).unwrap()
        );
    }
}

/// The `checkpointed_loops` of `xaifb run --stats-json` on the adjoint
/// of `input` with `marks`, in `mode`.
fn loop_records(input: &Path, marks: &[String], mode: &str, dir: &Path) -> Vec<serde_json::Value> {
    let out = dir.join("adjoint.xaif");
    let mut c = xaifb();
    c.arg("adjoint").arg(input).arg("-o").arg(&out);
    for m in marks {
        c.arg("--checkpoint-loop").arg(m);
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stats = dir.join("stats.json");
    let o = xaifb()
        .arg("run")
        .arg(&out)
        .args(["--mode", mode, "--n", "2", "--m", "4", "--stats-json"])
        .arg(&stats)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(v["tapes_empty"], true);
    v["checkpointed_loops"].as_array().unwrap().clone()
}

#[test]
fn run_reports_every_reversed_instance_with_the_minimum_of_forward_steps() {
    let dir = xaif_testkit::Scratch::new("xaifb-ckpt-cli", "stats");
    let input = fixture("hard_cases.xaif");
    // Loops of 6, 5, 4 and 7 iterations.
    let loops = [
        ("after", 20, 6u64),
        ("incallee", 30, 5),
        ("section", 40, 4),
        ("index", 50, 7),
    ];
    for s in 1..=4u64 {
        let marks: Vec<String> = loops
            .iter()
            .map(|(r, l, _)| format!("{r}:{l}:{s}"))
            .collect();
        for mode in ["split", "joint"] {
            let records = loop_records(&input, &marks, mode, dir.path());
            // One instance of each loop per adjoint run, four runs.
            assert_eq!(records.len(), 4 * loops.len(), "{mode} s={s}");
            for r in &records {
                let line = r["line"].as_i64().unwrap();
                let (routine, _, l) = loops.iter().find(|x| x.1 == line).unwrap();
                assert_eq!(r["routine"], *routine);
                assert_eq!(r["iterations"], *l);
                assert_eq!(r["snapshots"], s);
                let t = xaif_revolve::min_forward_steps(*l, s);
                assert_eq!(r["forward_steps"], t, "{routine} l={l} s={s} {mode}");
                assert!(r["peak_snapshots"].as_u64().unwrap() <= s);
            }
        }
    }
}
