//! `xaifb analyze` on the TBR seed's Figure 1.

use std::process::Command;

fn fixture(name: &str) -> std::path::PathBuf {
    xaif_testkit::repo_root()
        .join("fixtures/dataflow")
        .join(name)
}

#[test]
fn analyze_prints_what_to_record_and_why() {
    let out = Command::new(env!("CARGO_BIN_EXE_xaifb"))
        .args(["analyze", "--activity", "--tbr"])
        .arg(fixture("tbr_figure1.xaif"))
        .output()
        .expect("xaifb runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("routine fig1"), "{text}");
    assert!(
        text.contains("[s4 line 4] x(i) = (j + sin(x(i)))"),
        "{text}"
    );
    assert!(text.contains("RECORD before: {i}"), "{text}");
    assert!(text.contains("RECORD before: {j}"), "{text}");
    assert_eq!(text.matches("RECORD before: {x}").count(), 2, "{text}");
    assert!(!text.contains("RECORD before: {a}"), "{text}");
}

#[test]
fn analyze_rejects_unknown_variables_as_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_xaifb"))
        .args(["analyze", "--independent", "fig1:nosuch"])
        .arg(fixture("tbr_figure1.xaif"))
        .output()
        .expect("xaifb runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nosuch"));
}

#[test]
fn analyze_passivates_into_a_file_that_reads_back() {
    let dir = std::env::temp_dir().join(format!("xaifb-analyze-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dest = dir.join("passive.xaif");
    let out = Command::new(env!("CARGO_BIN_EXE_xaifb"))
        .args(["analyze", "--activity", "--passivate"])
        .arg(&dest)
        .arg(fixture("calls.xaif"))
        .output()
        .expect("xaifb runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (p, sm) = xaif_model::read_program_file(&dest).expect("readable");
    xaif_model::validate_program(&p, &sm).expect("valid");
    let _ = std::fs::remove_dir_all(&dir);
}
