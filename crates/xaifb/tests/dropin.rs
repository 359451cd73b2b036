//! xaifb as a drop-in replacement of xaifBooster: every flag of the
//! reference drivers' union `iocdgGBNsTvpbVDFh wr nCAmQaHMRS I uUt fP`
//! does its job (each test fails if its flag stops working; `-a`, `-R`
//! and `-m` are tested with the elimination heuristics), the trace and
//! type-change drivers, the oadDriver shims, the built-in catalogue, the
//! modern command line (positional input, standard streams, `--quiet`,
//! completions, manual page), and the regression suite's exact command
//! line on the whole corpus.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use xaif_testkit::{have_xmllint, repo_root, shared_dir, xmllint_valid};

fn xaifb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xaifb"))
}

fn scratch(name: &str) -> xaif_testkit::Scratch {
    xaif_testkit::Scratch::new("xaifb-dropin", name)
}

fn fixture(path: &str) -> PathBuf {
    repo_root().join("fixtures").join(path)
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `xaifb MODE ARGS INPUT -o OUT` and returns the output text and
/// standard error.
fn transform(mode: &str, args: &[&str], input: &Path, dir: &Path, name: &str) -> (String, String) {
    let out = dir.join(name);
    let o = xaifb()
        .arg(mode)
        .args(args)
        .arg(input)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = ok(&o);
    (std::fs::read_to_string(&out).unwrap(), err)
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn flags_group_and_bind_arguments_as_the_reference_parses_them() {
    let dir = scratch("group");
    let input = fixture("adjoint/seed_cfr.xaif");
    // -vV grouped; -vVi IN: the argument binds to the last letter.
    for args in [vec!["-vV", "-i"], vec!["-vVi"]] {
        let o = xaifb()
            .arg("tangent")
            .args(&args)
            .arg(&input)
            .arg("-o")
            .arg(dir.join("t.xaif"))
            .output()
            .unwrap();
        let err = ok(&o);
        assert!(err.contains("schema validation skipped"), "{err}");
    }
    // The whole union on every transforming driver.
    for mode in ["tangent", "adjoint", "trace"] {
        let o = xaifb()
            .arg(mode)
            .args([
                "-vV",
                "-b",
                "-F",
                "OPEN64_STYLE",
                "-w",
                "none",
                "-C",
                "-T",
                "metrics",
            ])
            .args([
                "-n", "-A", "1", "-M", "1", "-Q", "-H", "-S", "-D", "-I", "-f", "-P",
            ])
            .args(["-U", "-t", "head", "-p", "nothing", "-g", "0", "-i"])
            .arg(&input)
            .arg("-o")
            .arg(dir.join(format!("{mode}.xaif")))
            .output()
            .unwrap();
        ok(&o);
    }
    // -h is the help.
    let o = xaifb().args(["tangent", "-h"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("-V"));
}

#[test]
fn verbose_xaif_keeps_the_analysis_maps_and_keys() {
    let Some(shared) = shared_dir() else { return };
    let dir = scratch("verbose");
    let input = shared.join("corpus/examples/boxmodel/tlmhead_sf.pre.xaif");
    for mode in ["tangent", "adjoint", "trace", "typechange"] {
        let (short, _) = transform(mode, &[], &input, &dir, "short.xaif");
        let (long, _) = transform(mode, &["-V"], &input, &dir, "long.xaif");
        for key in ["alias=\"", "du_ud=\"", "<xaif:AliasSet key=\"1\""] {
            assert!(long.contains(key) && !short.contains(key), "{mode} {key}");
        }
        assert!(short.contains("<xaif:AliasSet key=\"0\""), "{mode}");
        assert!(short.contains("DOSetMap") && long.contains("DOSetMap"));
    }
    let (long, _) = transform("typechange", &["-V"], &input, &dir, "tc.xaif");
    assert!(long.contains("<xaif:Read>"), "side-effect lists with -V");
}

#[test]
fn pessimistic_black_boxes_may_change_globals() {
    // foo reads the global g; head calls ext (no body) after foo returns.
    let dir = scratch("blackbox");
    let input = fixture("dropin/blackbox.xaif");
    let checkpoints = |flag: &[&str]| {
        let stats = dir.join("stats.json");
        let mut args = flag.to_vec();
        let s = stats.to_str().unwrap().to_string();
        args.extend(["--stats-json", s.as_str()]);
        transform("adjoint", &args, &input, &dir, "a.xaif");
        json(&stats)["tapes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["checkpoint_variables"].as_u64().unwrap())
            .sum::<u64>()
    };
    assert!(checkpoints(&["-b"]) > checkpoints(&[]));
    // The analysis command takes the same flag.
    let report = |flag: &[&str]| {
        let o = xaifb()
            .arg("analyze")
            .args(flag)
            .arg("--tbr")
            .arg(&input)
            .output()
            .unwrap();
        ok(&o);
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_ne!(report(&["-b"]), report(&[]));
}

#[test]
fn wrappers_rename_calls_and_drop_conversions() {
    let dir = scratch("wrappers");
    let input = fixture("dropin/blackbox.xaif");
    for mode in ["tangent", "typechange", "trace", "adjoint"] {
        let (plain, _) = transform(mode, &[], &input, &dir, "p.xaif");
        let (wrapped, _) = transform(mode, &["-w", "ext"], &input, &dir, "w.xaif");
        // An active argument of a routine without a body becomes passive
        // around the call, unless the routine has a wrapper.
        assert!(plain.contains("oad_convert"), "{mode}");
        assert!(!wrapped.contains("oad_convert"), "{mode}");
        assert!(wrapped.contains("symbol_id=\"OpenAD_ext\""), "{mode}");
        assert!(!plain.contains("OpenAD_ext"), "{mode}");
    }
}

#[test]
fn decoration_style_decides_how_names_are_matched_and_shown() {
    let Some(shared) = shared_dir() else { return };
    let dir = scratch("style");
    let input = shared.join("corpus/examples/lighthouse/tlmhead_sf.pre.xaif");
    // -p matches the front end's X_1 by its plain name only with Open64
    // decorations.
    let (open64, _) = transform("tangent", &["-p", "NU"], &input, &dir, "a.xaif");
    let (plain, _) = transform(
        "tangent",
        &["-p", "NU", "-F", "NO_STYLE"],
        &input,
        &dir,
        "b.xaif",
    );
    let (none, _) = transform("tangent", &[], &input, &dir, "c.xaif");
    assert_ne!(open64, none);
    assert_eq!(plain, none);
    // Trace records show plain names, or the names as written.
    let ex = shared.join("corpus/examples/IfStatement_1/tlmhead_sf.pre.xaif");
    let (t1, _) = transform("trace", &[], &ex, &dir, "t1.xaif");
    let (t2, _) = transform("trace", &["-F", "NO_STYLE"], &ex, &dir, "t2.xaif");
    assert!(t1.contains("value=\"X\"") && t2.contains("value=\"X_1\""));
    // A style the reference does not know is a usage error.
    let o = xaifb()
        .args(["tangent", "-F", "FANCY"])
        .arg(&ex)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn counters_are_appended_and_counted_when_run() {
    let dir = scratch("counters");
    let input = fixture("adjoint/seed_cfr.xaif");
    let (with, _) = transform("tangent", &["-C"], &input, &dir, "t.xaif");
    let (without, _) = transform("tangent", &[], &input, &dir, "u.xaif");
    assert!(with.contains("countmult") && with.contains("countadd"));
    assert!(!without.contains("countmult"));
    let (adj, _) = transform("adjoint", &["-C"], &input, &dir, "a.xaif");
    assert!(adj.contains("countmult"));
    let Some(shared) = shared_dir() else { return };
    let ex = shared.join("corpus/examples/lighthouse");
    transform(
        "tangent",
        &["-C"],
        &ex.join("tlmhead_sf.pre.xaif"),
        &dir,
        "l.xaif",
    );
    let o = xaifb()
        .args(["run", "--mode", "tangent", "--params"])
        .arg(ex.join("params.conf"))
        .arg(dir.join("l.xaif"))
        .output()
        .unwrap();
    let err = ok(&o);
    assert!(
        err.contains("counters: ") && !err.contains("counters: 0 "),
        "{err}"
    );
}

#[cfg(unix)]
fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[cfg(unix)]
#[test]
fn graphics_are_rendered_by_dot_and_shown_by_the_viewer() {
    // Stand-ins for Graphviz and a viewer record how they were called.
    let dir = scratch("graphics");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join("log.txt");
    let log_s = log.display().to_string();
    // dot reads the graph on its standard input and writes the picture
    // to its standard output.
    script(
        &bin.join("dot"),
        &format!("echo dot \"$@\" >> '{log_s}'\ngrep -c digraph"),
    );
    script(
        &bin.join("myviewer"),
        &format!("echo view \"$@\" >> '{log_s}'"),
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = dir.join("t.xaif");
    let o = xaifb()
        .env("PATH", &path)
        .args(["tangent", "-g", "8", "-G", "svg", "-B", "myviewer", "-d"])
        .arg(dir.join("debug.txt"))
        .arg(fixture("adjoint/seed_cfr.xaif"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    ok(&o);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("dot -Tsvg"), "{text}");
    assert!(text.contains("view ") && text.contains(".svg"), "{text}");
    // Every picture holds what dot made of its graph, and the viewer saw
    // each once it was in place.
    let graphs = dir.join("t.xaif.graphs");
    let pictures: Vec<PathBuf> = std::fs::read_dir(&graphs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .collect();
    assert!(!pictures.is_empty());
    for p in &pictures {
        assert_eq!(
            std::fs::read_to_string(p).unwrap(),
            "1\n",
            "{}",
            p.display()
        );
        assert!(text.contains(&format!("view {}", p.display())), "{text}");
    }
    // Without -G the graphs stay Graphviz text in the debug output.
    let o = xaifb()
        .args(["tangent", "-g", "8", "-d"])
        .arg(dir.join("debug2.txt"))
        .arg(fixture("adjoint/seed_cfr.xaif"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    ok(&o);
    assert!(std::fs::read_to_string(dir.join("debug2.txt"))
        .unwrap()
        .contains("digraph"));
}

#[test]
fn tags_narrow_the_debug_output() {
    let dir = scratch("tags");
    let input = fixture("trace/calls.xaif");
    let debug = |tags: &[&str]| {
        let d = dir.join("debug.txt");
        let _ = std::fs::remove_file(&d);
        let mut args = vec!["-g", "80", "-d", d.to_str().unwrap()];
        args.extend(tags);
        let d2 = d.clone();
        transform("tangent", &args, &input, &dir, "t.xaif");
        std::fs::read_to_string(d2).unwrap_or_default()
    };
    let all = debug(&[]);
    assert!(
        all.contains("metrics: foo") && all.contains("metrics: bar") && all.contains("timing:")
    );
    let foo = debug(&["-T", "foo"]);
    assert!(
        foo.contains("metrics: foo") && !foo.contains("metrics: bar") && !foo.contains("timing:")
    );
    let timing = debug(&["-T", "timing"]);
    assert!(timing.contains("timing:") && !timing.contains("metrics:"));
}

#[test]
fn all_intents_become_inout() {
    let dir = scratch("inout");
    let input = fixture("trace/calls.xaif");
    for mode in ["tangent", "adjoint", "trace", "typechange"] {
        let (plain, _) = transform(mode, &[], &input, &dir, "p.xaif");
        let (inout, _) = transform(mode, &["-I"], &input, &dir, "i.xaif");
        // The adjoint gives active formals inout anyway.
        assert!(
            mode == "adjoint" || plain.contains("intent=\"in\""),
            "{mode}"
        );
        assert!(mode == "adjoint" || plain != inout, "{mode}");
        assert!(
            !inout.contains("intent=\"in\"") && !inout.contains("intent=\"out\""),
            "{mode}"
        );
    }
}

#[test]
fn checkpoint_flags_change_the_adjoint() {
    let Some(shared) = shared_dir() else { return };
    let dir = scratch("checkpoints");
    for (flag, ex) in [
        ("-f", "IfStatement_3"),
        ("-P", "ConsFold"),
        ("-I", "passiveMix3"),
    ] {
        let input = shared
            .join("corpus/examples")
            .join(ex)
            .join("admhead_sf.pre.xaif");
        let (a, _) = transform("adjoint", &[], &input, &dir, "a.xaif");
        let (b, _) = transform("adjoint", &[flag], &input, &dir, "b.xaif");
        assert_ne!(a, b, "{flag}");
    }
}

#[test]
fn simple_loop_flags_decide_with_the_user() {
    let dir = scratch("loops");
    let input = fixture("dropin/simple_loops.xaif");
    let run = |flags: &[&str], stdin: &str| {
        let stats = dir.join("stats.json");
        let mut child = xaifb()
            .arg("adjoint")
            .args(flags)
            .arg(&input)
            .arg("-o")
            .arg(dir.join("a.xaif"))
            .arg("--stats-json")
            .arg(&stats)
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        let err = ok(&o);
        let t = &json(&stats)["tapes"][0];
        let pushes = std::fs::read_to_string(dir.join("a.xaif"))
            .unwrap()
            .matches("push_i")
            .count();
        (t["explicit_loops"].as_u64().unwrap(), pushes, err)
    };
    let (proved, pushes, _) = run(&[], "");
    // -U: the loop whose body assigns its bound runs backwards too.
    assert_eq!(run(&["-U"], "").0, proved + 1);
    // -u: asked; yes runs it backwards, no does not.
    let (yes, _, question) = run(&["-u"], "y\n");
    assert_eq!(yes, proved + 1);
    assert!(
        question.contains("marked simple") && question.contains("`K`"),
        "{question}"
    );
    assert_eq!(run(&["-u"], "n\n").0, proved);
    // -t head: the global bound n is never written: not restored.
    assert!(run(&["-t", "head"], "").1 < pushes);
    // -t naming no routine with code: the reference engine goes on
    // without it, and so does xaifb, with a warning.
    let o = xaifb()
        .args(["adjoint", "-t", "nosuch"])
        .arg(&input)
        .output()
        .unwrap();
    let err = ok(&o);
    assert!(
        err.contains("-t nosuch: no routine `nosuch` with code"),
        "{err}"
    );
}

#[test]
fn flags_without_effect_in_a_mode_are_reported() {
    let dir = scratch("inert");
    let input = fixture("trace/calls.xaif");
    let (_, err) = transform("trace", &["-S", "-C"], &input, &dir, "t.xaif");
    assert!(err.contains("-S has no effect in trace mode"), "{err}");
    assert!(err.contains("-C has no effect in trace mode"), "{err}");
    let (_, err) = transform("tangent", &["-P", "-b"], &input, &dir, "t.xaif");
    assert!(err.contains("-P has no effect in tangent mode"), "{err}");
    assert!(err.contains("-b has no effect in tangent mode"), "{err}");
    let (_, err) = transform("trace", &["-S", "--quiet"], &input, &dir, "t.xaif");
    assert!(err.is_empty(), "{err}");
}

#[test]
fn other_reference_flags_change_the_output() {
    let Some(shared) = shared_dir() else { return };
    let dir = scratch("others");
    let ex = |name: &str| {
        shared
            .join("corpus/examples")
            .join(name)
            .join("tlmhead_sf.pre.xaif")
    };
    for (flags, name) in [
        (vec!["-S"], "lighthouse"),
        (vec!["-n"], "lighthouse"),
        (vec!["-H"], "lighthouse"),
        (vec!["-A", "0"], "lighthouse"),
        (vec!["-A", "2"], "RoehFlux"),
        (vec!["-M", "0"], "lighthouse"),
        (vec!["-Q"], "RoehFlux"),
        (vec!["-D"], "lighthouse"),
        (vec!["-r"], "lighthouse"),
        (vec!["-p", "NU"], "lighthouse"),
    ] {
        let (a, _) = transform("tangent", &[], &ex(name), &dir, "a.xaif");
        let (b, _) = transform("tangent", &flags, &ex(name), &dir, "b.xaif");
        assert_ne!(a, b, "{flags:?} on {name}");
    }
    // -N: transpose needs the non-inlinable catalogue.
    let schema = shared.join("xaif/schema");
    let non = schema.join("examples/noninlinable_intrinsics.xaif");
    let t = ex("transpose");
    assert!(!xaifb()
        .arg("tangent")
        .arg(&t)
        .output()
        .unwrap()
        .status
        .success());
    transform(
        "tangent",
        &["-N", non.to_str().unwrap()],
        &t,
        &dir,
        "n.xaif",
    );
    // -s names the schema; -v with it validates the input.
    let (with_s, _) = transform(
        "tangent",
        &["-s", schema.to_str().unwrap()],
        &ex("lighthouse"),
        &dir,
        "s.xaif",
    );
    assert!(with_s.contains(&format!("{}/xaif_output.xsd", schema.display())));
    if have_xmllint() {
        let bad = dir.join("bad.xaif");
        let text = std::fs::read_to_string(ex("lighthouse")).unwrap();
        std::fs::write(
            &bad,
            text.replacen(
                "<xaif:ScopeHierarchy>",
                "<xaif:ScopeHierarchy bogus=\"1\">",
                1,
            ),
        )
        .unwrap();
        let v = |flags: &[&str]| {
            xaifb()
                .arg("tangent")
                .args(flags)
                .args(["-s", schema.to_str().unwrap()])
                .arg(&bad)
                .arg("-o")
                .arg(dir.join("v.xaif"))
                .status()
                .unwrap()
                .success()
        };
        assert!(v(&[]) && !v(&["-v"]));
    }
    // -c: another catalogue is used (one without sin_scal fails).
    let cat = std::fs::read_to_string(schema.join("examples/inlinable_intrinsics.xaif")).unwrap();
    let start = cat
        .find("<xaifii:InlinableIntrinsic name=\"cos_scal\"")
        .unwrap();
    let end = start + cat[start..].find("</xaifii:InlinableIntrinsic>").unwrap() + 28;
    let small = dir.join("small.xaif");
    std::fs::write(&small, format!("{}{}", &cat[..start], &cat[end..])).unwrap();
    let o = xaifb()
        .arg("tangent")
        .args(["-c", small.to_str().unwrap()])
        .arg(shared.join("corpus/examples/cos_f_arg/tlmhead_sf.pre.xaif"))
        .output()
        .unwrap();
    assert!(!o.status.success());
}

#[test]
fn positional_input_and_standard_streams() {
    let input = fixture("adjoint/seed_cfr.xaif");
    let dir = scratch("streams");
    let (file, _) = transform("adjoint", &[], &input, &dir, "a.xaif");
    // - reads standard input; -o - (and no -o) writes standard output.
    let mut child = xaifb()
        .args(["adjoint", "-", "-o", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&std::fs::read(&input).unwrap()).unwrap();
    }
    let o = child.wait_with_output().unwrap();
    ok(&o);
    assert_eq!(String::from_utf8_lossy(&o.stdout), file);
    let o = xaifb()
        .args(["adjoint", "-i"])
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), file);
    // No input at all is a usage error.
    assert_eq!(
        xaifb().arg("adjoint").output().unwrap().status.code(),
        Some(2)
    );
}

#[test]
fn completions_and_manual_page() {
    let o = xaifb().args(["completions", "bash"]).output().unwrap();
    ok(&o);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("xaifb") && text.contains("typechange"));
    let o = xaifb().arg("man").output().unwrap();
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains(".TH xaifb"));
}

/// The reference drivers' command line of the regression suite for an
/// example: `-v -V -i IN -c CATALOGUE -o OUT` plus its flags.
fn example_flags(shared: &Path, example: &Path, joint: bool) -> Vec<String> {
    let options = std::fs::read_to_string(example.join("options")).unwrap_or_default();
    let mut flags = Vec::new();
    for part in options.split("'xaifBooster':{").skip(1) {
        let Some(opts) = part.split("'opts':'").nth(1) else {
            continue;
        };
        let opts = opts.split('\'').next().unwrap_or("");
        let opts = opts.replace(
            "${XAIFSCHEMAROOT}",
            &shared.join("xaif").display().to_string(),
        );
        flags.extend(opts.split_whitespace().map(str::to_string));
    }
    if joint && !flags.iter().any(|f| f == "-I") {
        flags.push("-I".into());
    }
    flags
}

#[test]
fn shims_run_the_regression_command_line() {
    let dir = scratch("shims");
    let o = xaifb().arg("shims").arg(&dir).output().unwrap();
    ok(&o);
    let input = fixture("adjoint/seed_cfr.xaif");
    for (driver, mode) in [
        ("BasicBlockPreaccumulation", "tangent"),
        ("BasicBlockPreaccumulationReverse", "adjoint"),
        ("TraceDiff", "trace"),
        ("TypeChange", "typechange"),
    ] {
        let shim = dir
            .join("xaifBooster/algorithms")
            .join(driver)
            .join("driver/oadDriver");
        let out = dir.join(format!("{mode}.xaif"));
        let o = Command::new(&shim)
            .args(["-v", "-V", "-i"])
            .arg(&input)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        ok(&o);
        let (direct, _) = transform(mode, &["-v", "-V"], &input, &dir, "direct.xaif");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), direct, "{driver}");
    }
}

/// Acceptance: the regression suite's exact command line succeeds on
/// every corpus input, through xaifb and through each shim, and the
/// outputs validate.
#[test]
fn regression_command_line_on_the_corpus() {
    let Some(shared) = shared_dir() else { return };
    let dir = scratch("regression");
    ok(&xaifb().arg("shims").arg(dir.join("root")).output().unwrap());
    let catalogue = shared.join("xaif/schema/examples/inlinable_intrinsics.xaif");
    let mut failures = Vec::new();
    let mut outputs = Vec::new();
    let mut runs = 0;
    let mut examples: Vec<PathBuf> = std::fs::read_dir(shared.join("corpus/examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    examples.sort();
    for ex in &examples {
        let name = ex.file_name().unwrap().to_string_lossy().into_owned();
        let mut jobs: Vec<(&str, &str, PathBuf, bool)> = Vec::new();
        let tlm = ex.join("tlmhead_sf.pre.xaif");
        if tlm.is_file() {
            jobs.push(("BasicBlockPreaccumulation", "tangent", tlm.clone(), false));
            jobs.push(("TraceDiff", "trace", tlm.clone(), false));
            jobs.push(("TypeChange", "typechange", tlm, false));
        }
        let adm = ex.join("admhead_sf.pre.xaif");
        if adm.is_file() {
            jobs.push((
                "BasicBlockPreaccumulationReverse",
                "split",
                adm.clone(),
                false,
            ));
            jobs.push(("BasicBlockPreaccumulationReverse", "joint", adm, true));
        }
        for (driver, mode, input, joint) in jobs {
            let flags = example_flags(&shared, ex, joint);
            let sub = if matches!(mode, "split" | "joint") {
                "adjoint"
            } else {
                mode
            };
            let shim = dir
                .join("root/xaifBooster/algorithms")
                .join(driver)
                .join("driver/oadDriver");
            for (how, mut cmd) in [("xaifb", xaifb()), ("shim", Command::new(&shim))] {
                if how == "xaifb" {
                    cmd.arg(sub);
                }
                let out = dir.join(format!("{name}.{mode}.{how}.xaif"));
                let o = cmd
                    .args(["-v", "-V", "-i"])
                    .arg(&input)
                    .arg("-c")
                    .arg(&catalogue)
                    .arg("-o")
                    .arg(&out)
                    .args(&flags)
                    .output()
                    .unwrap();
                runs += 1;
                if !o.status.success() || !out.is_file() {
                    failures.push(format!(
                        "{name} {mode} through {how}: {}",
                        String::from_utf8_lossy(&o.stderr)
                            .lines()
                            .last()
                            .unwrap_or("")
                    ));
                } else if how == "xaifb" {
                    outputs.push(out);
                }
            }
        }
    }
    assert!(runs > 1500, "{runs} runs");
    if have_xmllint() {
        let valid = xmllint_valid(&shared.join("xaif/schema/xaif_output.xsd"), &outputs);
        failures.extend(
            outputs
                .iter()
                .filter(|o| !valid.contains(*o))
                .map(|o| format!("{}: does not validate", o.display())),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Acceptance: on every corpus input, output with the built-in catalogue
/// is byte-identical to output with the distributed catalogue file. `-c`
/// with the file itself takes the built-in table, so the file is given
/// with a newline appended: the same catalogue, parsed.
#[test]
fn builtin_catalogue_gives_byte_identical_outputs() {
    let Some(shared) = shared_dir() else { return };
    let dir = scratch("catalogue");
    let mut bytes =
        std::fs::read(shared.join("xaif/schema/examples/inlinable_intrinsics.xaif")).unwrap();
    bytes.push(b'\n');
    let catalogue = dir.join("inlinable_intrinsics.xaif");
    std::fs::write(&catalogue, bytes).unwrap();
    let non = shared.join("xaif/schema/examples/noninlinable_intrinsics.xaif");
    let mut compared = 0;
    let mut differ = Vec::new();
    for (mode, file) in [
        ("tangent", "tlmhead_sf.pre.xaif"),
        ("adjoint", "admhead_sf.pre.xaif"),
    ] {
        let inputs: Vec<PathBuf> = std::fs::read_dir(shared.join("corpus/examples"))
            .unwrap()
            .map(|e| e.unwrap().path().join(file))
            .filter(|p| p.is_file())
            .collect();
        // One batch call each way: outputs keep the inputs' relative paths.
        for (sub, extra) in [
            ("builtin", vec![]),
            (
                "file",
                vec!["-c".to_string(), catalogue.display().to_string()],
            ),
        ] {
            let o = xaifb()
                .arg(mode)
                .args(["-V", "-N"])
                .arg(&non)
                .args(&extra)
                .args(&inputs)
                .arg("-o")
                .arg(dir.join(mode).join(sub))
                .output()
                .unwrap();
            ok(&o);
        }
        for f in xaif_testkit::xaif_files(&dir.join(mode).join("builtin")) {
            let rel = f.strip_prefix(dir.join(mode).join("builtin")).unwrap();
            let other = dir.join(mode).join("file").join(rel);
            compared += 1;
            if std::fs::read(&f).unwrap() != std::fs::read(&other).unwrap() {
                differ.push(format!("{mode} {}", rel.display()));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(compared >= 300, "{compared} outputs compared");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// The README's first command runs in a fresh directory that holds only
/// the installed binary's view of the world: the bundled example, no
/// reference material, no schemas (validation is reported as skipped).
#[test]
fn readme_main_job_runs_without_reference_material() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let block = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a first sh block");
    let dir = scratch("fresh");
    let mut last = Vec::new();
    for step in block.trim().split(" && ") {
        let args = step
            .strip_prefix("cargo run -p xaifb -- ")
            .unwrap_or_else(|| panic!("unexpected README step: {step}"));
        for word in args.split_whitespace() {
            if word.starts_with("fixtures/") {
                let to = dir.join(word);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(repo_root().join(word), to).unwrap();
            }
        }
        let o = xaifb()
            .current_dir(&dir)
            .env("XAIFB_SHARED", dir.join("no-such-directory"))
            .env_remove("XAIF_SCHEMA_DIR")
            .args(args.split_whitespace())
            .output()
            .unwrap();
        let err = ok(&o);
        if args.starts_with("validate") {
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(
                format!("{out}{err}").contains("schema validation skipped"),
                "{out}{err}"
            );
        }
        last = o.stdout;
    }
    let text = String::from_utf8(last).unwrap();
    assert!(
        text.starts_with(" AD\n") && text.contains("F(  3,  1)="),
        "{text}"
    );
}

/// `-H` writes the tangent propagation as the reference engine's inlinable
/// calls: its names (`set_neg_deriv`, `inc_deriv`, …), suffixed `_s<rank>`
/// per argument unless an argument is an array section, which select
/// OpenAD's inlining definitions. Here they are the reference engine's
/// calls on the same examples, and the output reproduces `ad.out`.
#[test]
fn tangent_calls_carry_the_reference_engines_names() {
    let Some(shared) = shared_dir() else { return };
    let dir = scratch("inline-names");
    for (name, expected) in [
        (
            "LoopArrayIndex",
            vec![
                ("sax_s0_s0_s0", 3),
                ("saxpy_s0_s0_s0", 1),
                ("setderiv_s0_s0", 2),
            ],
        ),
        ("arrayAdd", vec![("inc_deriv", 1), ("setderiv", 2)]),
    ] {
        let ex = shared.join("corpus/examples").join(name);
        let out_name = format!("{name}.xaif");
        let (text, _) = transform(
            "tangent",
            &["-H"],
            &ex.join("tlmhead_sf.pre.xaif"),
            &dir,
            &out_name,
        );
        let mut calls: std::collections::BTreeMap<&str, usize> = Default::default();
        for part in text.split("subroutine_name=\"").skip(1) {
            let called = part.split('"').next().unwrap();
            if !called.starts_with("oad_") {
                *calls.entry(called).or_default() += 1;
            }
        }
        let expected: std::collections::BTreeMap<&str, usize> = expected.into_iter().collect();
        assert_eq!(calls, expected, "{name}");
        reproduces_ad_out(&dir.join(&out_name), &ex, "tangent", &dir);
    }
}

/// Runs `output` of corpus example `ex` in `mode` (its `params.conf`) and
/// requires the Jacobian to be its `ad.out`'s.
fn reproduces_ad_out(output: &Path, ex: &Path, mode: &str, dir: &Path) {
    let jacobian = dir.join(format!("{mode}.out"));
    let o = xaifb()
        .arg("run")
        .arg(output)
        .args(["--mode", mode, "--params"])
        .arg(ex.join("params.conf"))
        .arg("-o")
        .arg(&jacobian)
        .output()
        .unwrap();
    ok(&o);
    let cmp = xaifb()
        .arg("compare")
        .arg(&jacobian)
        .arg(ex.join("ad.out"))
        .output()
        .unwrap();
    assert!(
        cmp.status.success(),
        "{} {mode}: {}",
        output.display(),
        String::from_utf8_lossy(&cmp.stdout)
    );
}

/// A subscript whose value is an integer array (`x(maxloc(x))`) is taped
/// whole, in an integer temporary of its shape with `push_i_s1` and
/// `pop_i_s1`, as the reference engine tapes it: stored in a scalar, the
/// generated Fortran would not compile. The adjoint reproduces `ad.out`.
#[test]
fn array_valued_subscripts_are_taped_in_arrays() {
    let Some(shared) = shared_dir() else { return };
    let dir = scratch("array-subscripts");
    let ex = shared.join("corpus/examples/maxLoc");
    let (text, _) = transform(
        "adjoint",
        &["-I"],
        &ex.join("admhead_sf.pre.xaif"),
        &dir,
        "a.xaif",
    );
    assert!(text.contains("subroutine_name=\"push_i_s1\""), "{text}");
    assert!(text.contains("subroutine_name=\"pop_i_s1\""), "{text}");
    assert!(!text.contains("subroutine_name=\"push_i_s0\""), "{text}");
    assert!(
        text.contains("type=\"integer\" feType=\"I4\" shape=\"vector\""),
        "{text}"
    );
    for mode in ["split", "joint"] {
        reproduces_ad_out(&dir.join("a.xaif"), &ex, mode, &dir);
    }
}
