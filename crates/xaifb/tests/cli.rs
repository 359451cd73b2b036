//! The driver end to end: exit codes, batch processing, atomic outputs,
//! schema validation, the oracle commands and their reports.

use std::path::{Path, PathBuf};
use std::process::Command;

use xaif_testkit::{first_difference, have_xmllint, infoset, repo_root, shared_dir};

fn xaifb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xaifb"))
}

fn scratch(name: &str) -> xaif_testkit::Scratch {
    xaif_testkit::Scratch::new("xaifb-cli", name)
}

fn fixture(name: &str) -> PathBuf {
    repo_root().join("fixtures/model").join(name)
}

fn same_infoset(a: &Path, b: &Path) {
    let x = infoset(&std::fs::read(a).unwrap()).unwrap();
    let y = infoset(&std::fs::read(b).unwrap()).unwrap();
    assert_eq!(
        first_difference(&x, &y),
        None,
        "{} vs {}",
        a.display(),
        b.display()
    );
}

/// `xaifb roundtrip ARGS… -o OUT`, which must succeed.
fn roundtrip_ok(args: &[&std::ffi::OsStr], out: &Path) {
    let o = xaifb()
        .arg("roundtrip")
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn roundtrip_one_file() {
    let dir = scratch("one");
    let out = dir.join("out.xaif");
    let input = fixture("all_kinds.xaif");
    roundtrip_ok(&[input.as_os_str()], &out);
    same_infoset(&input, &out);
    // Deterministic: a second run gives the same bytes.
    let again = dir.join("again.xaif");
    roundtrip_ok(&[input.as_os_str()], &again);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&again).unwrap());
}

/// `roundtrip` and `validate` take their inputs with -i too, as the
/// transformations do (positional and -i inputs together).
#[test]
fn roundtrip_and_validate_take_inputs_with_i() {
    let dir = scratch("dash-i");
    let out = dir.join("out.xaif");
    let input = fixture("all_kinds.xaif");
    roundtrip_ok(&["-i".as_ref(), input.as_os_str()], &out);
    same_infoset(&input, &out);
    let both = dir.join("both");
    roundtrip_ok(&[input.as_os_str(), "-i".as_ref(), out.as_os_str()], &both);
    assert_eq!(std::fs::read_dir(&both).unwrap().count(), 2);
    let o = xaifb().args(["validate", "-i"]).arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Neither form: refused, as before.
    let o = xaifb().args(["validate"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
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
    let o = xaifb()
        .args(["roundtrip", "--jobs", "2"])
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "a failing file gives exit code 1");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("bad.xaif:") && stderr.contains("symbol `z` is not defined"),
        "{stderr}"
    );
    assert!(stderr.contains("3 file(s), 2 ok, 1 failed"), "{stderr}");
    same_infoset(&input.join("a.xaif"), &out.join("a.xaif"));
    same_infoset(&input.join("sub/b.xaif"), &out.join("sub/b.xaif"));
    assert!(
        !out.join("bad.xaif").exists(),
        "no output for a failing input"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn bad_input_gives_a_located_error_and_no_output() {
    let dir = scratch("bad");
    let out = dir.join("out.xaif");
    let o = xaifb()
        .args(["roundtrip"])
        .arg(fixture("err/malformed.xaif"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("malformed.xaif:162:"), "{stderr}");
    assert!(!out.exists());
    // Usage errors and environment errors have their own codes.
    assert_eq!(
        xaifb().args(["roundtrip"]).output().unwrap().status.code(),
        Some(2)
    );
    // A missing input is an input that cannot be processed (exit code 1,
    // as in every subcommand); an empty directory is an environment error.
    let missing = xaifb()
        .args(["validate", "/nonexistent/x.xaif"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr)
        .contains("/nonexistent/x.xaif: no such file or directory"));
    let empty = scratch("empty");
    let none = xaifb().arg("validate").arg(&empty).output().unwrap();
    assert_eq!(none.status.code(), Some(3));
}

#[test]
fn validate_with_schema_uses_xmllint() {
    let Some(shared) = shared_dir() else { return };
    if !have_xmllint() {
        return;
    }
    let schema = shared.join("xaif/schema");
    let ok = xaifb()
        .args(["validate", "--schema"])
        .arg(&schema)
        .arg(fixture("all_kinds.xaif"))
        .arg(fixture("output_kinds.xaif"))
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    // A file that passes the model checks but not the schema.
    let dir = scratch("schema");
    let text = std::fs::read_to_string(fixture("all_kinds.xaif"))
        .unwrap()
        .replace(r#"reversal="anonymous""#, r#"reversal="sideways""#);
    let bad = dir.join("bad.xaif");
    std::fs::write(&bad, text).unwrap();
    let o = xaifb()
        .args(["validate", "--schema"])
        .arg(&schema)
        .arg(&bad)
        .output()
        .unwrap();
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
    let cmp = xaifb()
        .arg("compare")
        .arg(&ours)
        .arg(ex.join("ad.out"))
        .output()
        .unwrap();
    assert!(
        cmp.status.success(),
        "{}",
        String::from_utf8_lossy(&cmp.stdout)
    );
    // The statistics follow our JSON schema.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("schemas/run-stats.schema.json")).unwrap(),
    )
    .unwrap();
    check_against(&report, &schema);
    assert_eq!(report["tapes_empty"], serde_json::Value::Bool(true));
    assert!(report["stats"]["doubles_pushed"].as_u64().unwrap() > 0);
    // Divided differences in the dd.out format.
    let fd = xaifb()
        .args(["run", "--fd"])
        .arg(ex.join("tlmhead_sf.pre.xaif"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&fd.stdout).starts_with(" DD\n"));
    // compare fails on different files.
    let other = dir.join("other.out");
    std::fs::write(
        &other,
        text.replacen("F(  1,  1)=", "F(  1,  1)=  9", 1)
            .replace("=  9 ", "=  9"),
    )
    .unwrap();
    let cmp = xaifb()
        .arg("compare")
        .arg(&ours)
        .arg(ex.join("dd.out"))
        .output()
        .unwrap();
    assert_eq!(cmp.status.code(), Some(1));
}

#[test]
fn tangent_transforms_with_reports_and_graphs() {
    let Some(shared) = shared_dir() else { return };
    let ex = shared.join("corpus/examples/lighthouse");
    let cat = shared.join("xaif/schema/examples/inlinable_intrinsics.xaif");
    let dir = scratch("tangent");
    let out = dir.join("out.xaif");
    let stats = dir.join("stats.json");
    let dots = dir.join("dots");
    let o = xaifb()
        .args(["tangent", "-c"])
        .arg(&cat)
        .arg("-i")
        .arg(ex.join("tlmhead_sf.pre.xaif"))
        .arg("-o")
        .arg(&out)
        .arg("-s")
        .arg(shared.join("xaif/schema"))
        .args(["-g", "64", "-d"])
        .arg(dir.join("debug.txt"))
        .arg("--stats-json")
        .arg(&stats)
        .arg("--dot")
        .arg(&dots)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The output runs and reproduces ad.out.
    let run = xaifb()
        .args(["run", "--mode", "tangent", "--params"])
        .arg(ex.join("params.conf"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let ours = dir.join("ours.out");
    std::fs::write(&ours, &run.stdout).unwrap();
    assert!(xaifb()
        .arg("compare")
        .arg(&ours)
        .arg(ex.join("ad.out"))
        .status()
        .unwrap()
        .success());
    // It names xaif_output.xsd and validates against it.
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("xaif_output.xsd"));
    if have_xmllint() {
        let v = xaifb()
            .args(["validate", "--schema"])
            .arg(shared.join("xaif/schema"))
            .arg(&out)
            .output()
            .unwrap();
        assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
    }
    // Reports: statistics following the schema, metrics, Graphviz files.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("schemas/transform-stats.schema.json")).unwrap(),
    )
    .unwrap();
    check_against(&report, &schema);
    assert!(report["total"]["multiplications"].as_u64().unwrap() > 0);
    assert!(std::fs::read_to_string(dir.join("debug.txt"))
        .unwrap()
        .contains("metrics: head__24"));
    let names: Vec<String> = std::fs::read_dir(&dots)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n.ends_with("_before.dot"))
            && names.iter().any(|n| n.ends_with("_after.dot")),
        "{names:?}"
    );
    // A bad heuristic is a usage problem, not a crash.
    let bad = xaifb()
        .args(["tangent", "-c"])
        .arg(&cat)
        .arg("-i")
        .arg(ex.join("tlmhead_sf.pre.xaif"))
        .args(["--heuristic", "edge:XX,reverse"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown filter"));
}

/// A small check of a JSON value against the subset of JSON Schema our
/// schemas use (type, required, additionalProperties, enum, minimum, $ref
/// into $defs, array items).
fn check_against(v: &serde_json::Value, schema: &serde_json::Value) {
    check_in(v, schema, schema);
}

fn check_in(v: &serde_json::Value, schema: &serde_json::Value, root: &serde_json::Value) {
    if let Some(r) = schema.get("$ref").and_then(|r| r.as_str()) {
        let name = r.trim_start_matches("#/$defs/");
        return check_in(v, &root["$defs"][name], root);
    }
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
                check_in(val, sub, root);
            }
        }
        Some("array") => {
            for item in v.as_array().expect("an array") {
                check_in(item, &schema["items"], root);
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

/// `xaifb adjoint` on one input: schema-valid output that the oracle runs
/// in split and joint mode to `ad.out`, and a statistics report (graphs and
/// taping per routine) that follows the schema.
#[test]
fn adjoint_transforms_with_tape_statistics() {
    let Some(shared) = shared_dir() else { return };
    let ex = shared.join("corpus/examples/Loop_simple_7");
    let cat = shared.join("xaif/schema/examples/inlinable_intrinsics.xaif");
    let dir = scratch("adjoint");
    let out = dir.join("out.xaif");
    let stats = dir.join("stats.json");
    let o = xaifb()
        .args(["adjoint", "-c"])
        .arg(&cat)
        .arg("-i")
        .arg(ex.join("admhead_sf.pre.xaif"))
        .arg("-o")
        .arg(&out)
        .arg("-s")
        .arg(shared.join("xaif/schema"))
        .arg("--stats-json")
        .arg(&stats)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for mode in ["split", "joint"] {
        let run = xaifb()
            .args(["run", "--mode", mode, "--params"])
            .arg(ex.join("params.conf"))
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(String::from_utf8_lossy(&run.stderr).contains("all tapes empty"));
        let ours = dir.join(format!("{mode}.out"));
        std::fs::write(&ours, &run.stdout).unwrap();
        assert!(xaifb()
            .arg("compare")
            .arg(&ours)
            .arg(ex.join("ad.out"))
            .status()
            .unwrap()
            .success());
    }
    if have_xmllint() {
        let v = xaifb()
            .args(["validate", "--schema"])
            .arg(shared.join("xaif/schema"))
            .arg(&out)
            .output()
            .unwrap();
        assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("schemas/transform-stats.schema.json")).unwrap(),
    )
    .unwrap();
    check_against(&report, &schema);
    assert_eq!(report["mode"], "adjoint");
    let tapes = report["tapes"].as_array().unwrap();
    let bar = tapes.iter().find(|t| t["routine"] == "bar__24").unwrap();
    // bar's loop over x(i) runs backwards: one explicit loop, no index
    // taped per block; its argument checkpoint holds x and k.
    assert_eq!(bar["explicit_loops"], 1);
    assert_eq!(bar["integers_per_block_execution"], 0);
    assert_eq!(bar["structured"], true);
    assert_eq!(bar["checkpoint_variables"], 2);
}

/// Many inputs in one call: outputs keep the inputs' relative paths (two
/// inputs with the same file name stay apart); per-file reports are refused
/// with a usage error; a bad input fails alone.
#[test]
fn adjoint_batch_of_many_inputs() {
    let Some(shared) = shared_dir() else { return };
    let cat = shared.join("xaif/schema/examples/inlinable_intrinsics.xaif");
    let dir = scratch("adjoint-batch");
    let examples = shared.join("corpus/examples");
    let inputs = ["Loop_simple_1", "lighthouse", "IfStatement_1"];
    let mut cmd = xaifb();
    cmd.args(["adjoint", "-c"]).arg(&cat);
    for e in inputs {
        cmd.arg("-i")
            .arg(examples.join(e).join("admhead_sf.pre.xaif"));
    }
    let o = cmd.arg("-o").arg(dir.join("out")).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for e in inputs {
        let f = dir.join("out").join(e).join("admhead_sf.pre.xaif");
        assert!(f.is_file(), "{} missing", f.display());
        assert!(std::fs::read_to_string(&f)
            .unwrap()
            .contains("ReplacementList"));
    }
    // A report describes one transformation.
    let o = xaifb()
        .args(["adjoint", "-c"])
        .arg(&cat)
        .arg("-i")
        .arg(examples.join("Loop_simple_1/admhead_sf.pre.xaif"))
        .arg("-i")
        .arg(examples.join("lighthouse/admhead_sf.pre.xaif"))
        .arg("-o")
        .arg(dir.join("out2"))
        .arg("--stats-json")
        .arg(dir.join("s.json"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("give one input"));
    // A broken input fails alone and leaves no output of its own.
    let bad = dir.join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("broken.xaif"), "<xaif:CallGraph").unwrap();
    std::fs::copy(
        examples.join("Loop_simple_1/admhead_sf.pre.xaif"),
        bad.join("good.xaif"),
    )
    .unwrap();
    let o = xaifb()
        .args(["adjoint", "-c"])
        .arg(&cat)
        .arg("-i")
        .arg(&bad)
        .arg("-o")
        .arg(dir.join("out3"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("broken.xaif"));
    assert!(dir.join("out3/good.xaif").is_file());
    assert!(!dir.join("out3/broken.xaif").exists());
}

/// The README's main job (its first command block) runs as written: each
/// `cargo run -p xaifb -- …` step, with this build of xaifb,
/// from the repository root, succeeds; the last prints a Jacobian.
#[test]
fn readme_main_job_runs() {
    let Some(_shared) = shared_dir() else { return };
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let block = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a first sh block");
    let steps: Vec<&str> = block.trim().split(" && ").collect();
    assert!(steps.len() >= 2, "{block}");
    let mut last = Vec::new();
    for step in steps {
        let args = step
            .strip_prefix("cargo run -p xaifb -- ")
            .unwrap_or_else(|| panic!("unexpected README step: {step}"));
        if args.starts_with("validate") && !have_xmllint() {
            continue;
        }
        let o = xaifb()
            .current_dir(repo_root())
            .args(args.split_whitespace())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{step}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        last = o.stdout;
    }
    let text = String::from_utf8(last).unwrap();
    assert!(
        text.starts_with(" AD\n") && text.contains("F(  3,  1)="),
        "{text}"
    );
}

/// The elimination flags (`--effort`, `-a` with `--seed`, `-R`, `-m`,
/// `-M`) each give a transformation whose output reproduces `ad.out`, the
/// same bytes every time, and `--stats-json` reports per graph the
/// reference chain's cost, ours and a lower bound.
#[test]
fn elimination_flags_and_per_graph_report() {
    let Some(shared) = shared_dir() else { return };
    let ex = shared.join("corpus/examples/lighthouse");
    let cat = shared.join("xaif/schema/examples/inlinable_intrinsics.xaif");
    let dir = scratch("elimination");
    let variants: [&[&str]; 7] = [
        &[],
        &["--effort", "fast"],
        &["--effort", "max"],
        &["-a", "--seed", "3"],
        &["-R"],
        &["-m"],
        &["-M", "0"],
    ];
    for (k, flags) in variants.iter().enumerate() {
        let mut texts = Vec::new();
        for round in 0..2 {
            let out = dir.join(format!("out{k}_{round}.xaif"));
            let stats = dir.join(format!("stats{k}.json"));
            let o = xaifb()
                .args(["tangent", "-c"])
                .arg(&cat)
                .arg("-i")
                .arg(ex.join("tlmhead_sf.pre.xaif"))
                .arg("-o")
                .arg(&out)
                .args(*flags)
                .arg("--stats-json")
                .arg(&stats)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{flags:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            texts.push(std::fs::read(&out).unwrap());
            let report: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
            let total = &report["total"];
            assert!(total["graphs"].as_u64().unwrap() > 0, "{flags:?}");
            for r in report["routines"].as_array().unwrap() {
                for b in r["blocks"].as_array().unwrap() {
                    for g in b["graphs"].as_array().unwrap() {
                        let (chain, cost, bound) = (
                            g["chain_cost"].as_u64().unwrap(),
                            g["cost"].as_u64().unwrap(),
                            g["lower_bound"].as_u64().unwrap(),
                        );
                        assert!(bound <= cost, "{flags:?}: {g}");
                        if flags.is_empty() || flags[0] == "--effort" {
                            assert!(cost <= chain, "{flags:?}: {g}");
                        }
                    }
                }
            }
        }
        assert!(texts[0] == texts[1], "{flags:?}: different bytes");
        let out = dir.join(format!("out{k}_0.xaif"));
        let run = xaifb()
            .args(["run", "--mode", "tangent", "--params"])
            .arg(ex.join("params.conf"))
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{flags:?}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let ours = dir.join(format!("ours{k}.out"));
        std::fs::write(&ours, &run.stdout).unwrap();
        assert!(
            xaifb()
                .arg("compare")
                .arg(&ours)
                .arg(ex.join("ad.out"))
                .status()
                .unwrap()
                .success(),
            "{flags:?}: Jacobian differs"
        );
    }
    let bad = xaifb()
        .args(["tangent", "-c"])
        .arg(&cat)
        .arg("-i")
        .arg(ex.join("tlmhead_sf.pre.xaif"))
        .args(["--effort", "extreme"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
