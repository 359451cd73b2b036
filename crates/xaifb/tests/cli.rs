//! The driver end to end: exit codes, batch processing, atomic outputs,
//! schema validation, the oracle commands and their reports.

use std::path::{Path, PathBuf};
use std::process::Command;

use xaif_testkit::{first_difference, have_xmllint, infoset, repo_root, shared_dir};

fn xaifb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xaifb"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xaifb-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn fixture(name: &str) -> PathBuf {
    repo_root().join("fixtures/model").join(name)
}

fn same_infoset(a: &Path, b: &Path) {
    let x = infoset(&std::fs::read(a).unwrap()).unwrap();
    let y = infoset(&std::fs::read(b).unwrap()).unwrap();
    assert_eq!(first_difference(&x, &y), None, "{} vs {}", a.display(), b.display());
}

#[test]
fn roundtrip_one_file() {
    let dir = scratch("one");
    let out = dir.join("out.xaif");
    let st = xaifb().args(["roundtrip"]).arg(fixture("all_kinds.xaif")).arg("-o").arg(&out).status().unwrap();
    assert!(st.success());
    same_infoset(&fixture("all_kinds.xaif"), &out);
    // Deterministic: a second run gives the same bytes.
    let again = dir.join("again.xaif");
    xaifb().args(["roundtrip"]).arg(fixture("all_kinds.xaif")).arg("-o").arg(&again).status().unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&again).unwrap());
}

#[test]
fn batch_reports_failures_and_processes_the_rest() {
    let dir = scratch("batch");
    let input = dir.join("in");
    std::fs::create_dir_all(input.join("sub")).unwrap();
    std::fs::copy(fixture("all_kinds.xaif"), input.join("a.xaif")).unwrap();
    std::fs::copy(fixture("output_kinds.xaif"), input.join("sub/b.xaif")).unwrap();
    std::fs::copy(fixture("err/dangling_symbol.xaif"), input.join("bad.xaif")).unwrap();
    let out = dir.join("out");
    let o = xaifb().args(["roundtrip", "--jobs", "2"]).arg(&input).arg("-o").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "a failing file gives exit code 1");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("bad.xaif:") && stderr.contains("symbol `z` is not defined"), "{stderr}");
    assert!(stderr.contains("3 file(s), 2 ok, 1 failed"), "{stderr}");
    same_infoset(&input.join("a.xaif"), &out.join("a.xaif"));
    same_infoset(&input.join("sub/b.xaif"), &out.join("sub/b.xaif"));
    assert!(!out.join("bad.xaif").exists(), "no output for a failing input");
    let leftovers: Vec<_> = std::fs::read_dir(&out).unwrap().filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().ends_with(".tmp")).collect();
    assert!(leftovers.is_empty());
}

#[test]
fn bad_input_gives_a_located_error_and_no_output() {
    let dir = scratch("bad");
    let out = dir.join("out.xaif");
    let o = xaifb().args(["roundtrip"]).arg(fixture("err/malformed.xaif")).arg("-o").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("malformed.xaif:162:"), "{stderr}");
    assert!(!out.exists());
    // Usage errors and environment errors have their own codes.
    assert_eq!(xaifb().args(["roundtrip"]).output().unwrap().status.code(), Some(2));
    let missing = xaifb().args(["validate", "/nonexistent/x.xaif"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(3));
}

#[test]
fn validate_with_schema_uses_xmllint() {
    let Some(shared) = shared_dir() else { return };
    if !have_xmllint() {
        return;
    }
    let schema = shared.join("xaif/schema");
    let ok = xaifb().args(["validate", "--schema"]).arg(&schema).arg(fixture("all_kinds.xaif")).arg(fixture("output_kinds.xaif")).output().unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    // A file that passes the model checks but not the schema.
    let dir = scratch("schema");
    let text = std::fs::read_to_string(fixture("all_kinds.xaif")).unwrap().replace(r#"reversal="anonymous""#, r#"reversal="sideways""#);
    let bad = dir.join("bad.xaif");
    std::fs::write(&bad, text).unwrap();
    let o = xaifb().args(["validate", "--schema"]).arg(&schema).arg(&bad).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("reversal"));
}

#[test]
fn run_prints_ad_out_and_stats() {
    let Some(shared) = shared_dir() else { return };
    let ex = shared.join("corpus/examples/Loop_simple_16");
    let dir = scratch("run");
    let stats = dir.join("stats.json");
    let o = xaifb()
        .args(["run", "--mode", "joint"])
        .arg(ex.join("admjointhead_sf.pre.xb.xaif"))
        .arg("--stats-json")
        .arg(&stats)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ours = dir.join("ours.out");
    std::fs::write(&ours, &o.stdout).unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.starts_with(" AD\nF(  1,  1)="), "{text}");
    let cmp = xaifb().arg("compare").arg(&ours).arg(ex.join("ad.out")).output().unwrap();
    assert!(cmp.status.success(), "{}", String::from_utf8_lossy(&cmp.stdout));
    // The statistics follow our JSON schema.
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(repo_root().join("schemas/run-stats.schema.json")).unwrap()).unwrap();
    check_against(&report, &schema);
    assert_eq!(report["tapes_empty"], serde_json::Value::Bool(true));
    assert!(report["stats"]["doubles_pushed"].as_u64().unwrap() > 0);
    // Divided differences in the dd.out format.
    let fd = xaifb().args(["run", "--fd"]).arg(ex.join("tlmhead_sf.pre.xaif")).output().unwrap();
    assert!(String::from_utf8_lossy(&fd.stdout).starts_with(" DD\n"));
    // compare fails on different files.
    let other = dir.join("other.out");
    std::fs::write(&other, text.replacen("F(  1,  1)=", "F(  1,  1)=  9", 1).replace("=  9 ", "=  9")).unwrap();
    let cmp = xaifb().arg("compare").arg(&ours).arg(ex.join("dd.out")).output().unwrap();
    assert_eq!(cmp.status.code(), Some(1));
}

/// A small check of a JSON value against the subset of JSON Schema our
/// schemas use (type, required, additionalProperties, enum, minimum).
fn check_against(v: &serde_json::Value, schema: &serde_json::Value) {
    if let Some(options) = schema.get("enum").and_then(|e| e.as_array()) {
        assert!(options.contains(v), "{v} not in {options:?}");
    }
    match schema.get("type").and_then(|t| t.as_str()) {
        Some("object") => {
            let obj = v.as_object().expect("an object");
            let props = schema["properties"].as_object().unwrap();
            for r in schema["required"].as_array().into_iter().flatten() {
                assert!(obj.contains_key(r.as_str().unwrap()), "missing {r}");
            }
            for (k, val) in obj {
                let sub = props.get(k).unwrap_or_else(|| panic!("unexpected key {k}"));
                check_against(val, sub);
            }
        }
        Some("integer") => {
            let n = v.as_i64().expect("an integer");
            if let Some(min) = schema.get("minimum").and_then(|m| m.as_i64()) {
                assert!(n >= min);
            }
        }
        Some("boolean") => assert!(v.is_boolean()),
        Some("string") => assert!(v.is_string()),
        _ => {}
    }
}
