//! The driver's contract with the file system and the command line (issue
//! 26, sections 1 and 4): no file is written outside the place the user
//! named, a job writes all of its files or none, and one cause gives one
//! exit code and one message. Every test runs the binary;
//! `XAIFB_TEST_BIN` runs them against another build (an older one fails
//! each of them).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use xaif_testkit::repo_root;

fn xaifb() -> Command {
    match std::env::var_os("XAIFB_TEST_BIN") {
        Some(bin) => Command::new(bin),
        None => Command::new(env!("CARGO_BIN_EXE_xaifb")),
    }
}

fn scratch(name: &str) -> xaif_testkit::Scratch {
    xaif_testkit::Scratch::new("xaifb-reliability", name)
}

/// A small front-end program: `head(x, y)` with two independents and three
/// dependents, three linearized graphs.
fn program() -> PathBuf {
    repo_root().join("fixtures/adjoint/seed_cfr.xaif")
}

/// Runs `cmd` with `stdin` as standard input and standard output to
/// `stdout` (captured when `None`); fails the test after 60 s (a hang).
fn run_with(cmd: &mut Command, stdin: Option<&[u8]>, stdout: Option<Stdio>) -> Output {
    let capture = stdout.is_none();
    let mut child = cmd
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(stdout.unwrap_or_else(Stdio::piped))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(bytes) = stdin {
        let mut i = child.stdin.take().unwrap();
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            let _ = i.write_all(&bytes);
        });
    }
    let out = child.stdout.take();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(mut out) = out {
            let _ = out.read_to_end(&mut v);
        }
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{cmd:?} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = capture;
    Output {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

fn run(cmd: &mut Command) -> Output {
    run_with(cmd, None, None)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts the exit code, showing the command and its messages.
fn code(o: &Output, want: i32, what: &str) {
    assert_eq!(o.status.code(), Some(want), "{what}: {}", stderr(o));
}

/// Every file below `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// `program()` with its routine called `name` (XML-escaped here).
fn renamed(dir: &Path, file: &str, name: &str) -> PathBuf {
    let escaped = name
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('"', "&quot;")
        .replace('\t', "&#9;")
        .replace('\n', "&#10;");
    let text = std::fs::read_to_string(program())
        .unwrap()
        .replace("symbol_id=\"head\"", &format!("symbol_id=\"{escaped}\""));
    let p = dir.join(file);
    std::fs::write(&p, text).unwrap();
    p
}

/// A stand-in program on a directory put first on `PATH`.
#[cfg(unix)]
fn fake(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let p = bin.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

// ------------------------------------------------------------- section 1

/// Graph files take their names from routine names through a safe,
/// bounded, collision-free mapping: a routine called `../ESCAPED`, one
/// named by an absolute path, one of 300 characters and one of odd bytes
/// all get their six graph files inside `--dot DIR` and only there, and
/// the job succeeds as it does without `--dot`.
#[test]
fn graph_file_names_stay_inside_the_directory_named() {
    let dir = scratch("names");
    let abs = dir.join("ABS").display().to_string();
    let names = [
        "../ESCAPED".to_string(),
        abs,
        "a".repeat(300),
        "é ü%2F<&>\t\n..".to_string(),
        ".hidden".to_string(),
        "-dash".to_string(),
    ];
    for (k, name) in names.iter().enumerate() {
        let input = renamed(&dir, &format!("in{k}.xaif"), name);
        let dots = dir.join(format!("dots{k}"));
        let o = run(xaifb()
            .arg("tangent")
            .arg(&input)
            .arg("-o")
            .arg(dir.join(format!("out{k}.xaif")))
            .arg("--dot")
            .arg(&dots));
        code(&o, 0, &format!("routine {name:?}"));
        // Every graph file of the runs so far is in its run's directory.
        let graphs: Vec<PathBuf> = files(&dir)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "dot"))
            .collect();
        assert_eq!(graphs.len(), 6 * (k + 1), "routine {name:?}: {graphs:?}");
        let here: Vec<&PathBuf> = graphs.iter().filter(|g| g.starts_with(&dots)).collect();
        assert_eq!(here.len(), 6, "routine {name:?}: {graphs:?}");
        for g in here {
            assert_eq!(
                g.parent(),
                Some(dots.as_path()),
                "{name:?}: {}",
                g.display()
            );
            let file = g.file_name().unwrap().to_string_lossy();
            assert!(file.len() <= 255 && !file.starts_with(['.', '-']), "{file}");
        }
    }
}

/// A failed graphics step (`dot` exits non-zero) fails the job and leaves
/// nothing behind: no output, no `.graphs` directory, no Graphviz file.
#[cfg(unix)]
#[test]
fn a_failed_rendering_leaves_nothing_behind() {
    let dir = scratch("render-fails");
    let path = fake(
        &dir,
        "dot",
        "cat > /dev/null\necho 'syntax error' >&2\nexit 1",
    );
    let out = dir.join("work/out.xaif");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    for extra in [
        &[][..],
        &["--dot".as_ref(), dir.join("work/dots").as_os_str()][..],
    ] {
        let o = run(xaifb()
            .env("PATH", &path)
            .arg("tangent")
            .arg(program())
            .args(["-g", "8", "-G", "svg", "-d"])
            .arg(dir.join("work/debug.txt"))
            .arg("-o")
            .arg(&out)
            .args(extra));
        code(&o, 3, "dot fails");
        assert!(
            stderr(&o).contains("dot could not render"),
            "{}",
            stderr(&o)
        );
        let left = files(&dir.join("work"));
        assert!(left.is_empty(), "{left:?}");
        let dirs: Vec<_> = std::fs::read_dir(dir.join("work")).unwrap().collect();
        assert!(dirs.is_empty(), "{dirs:?}");
    }
}

/// With a `dot` that works, the pictures and their Graphviz text are
/// written beside each other, and the viewer starts on each picture.
#[cfg(unix)]
#[test]
fn rendered_graphs_are_written_with_the_job() {
    let dir = scratch("render");
    let log = dir.join("view.log");
    fake(&dir, "dot", "cat");
    let path = fake(&dir, "v", &format!("echo \"$1\" >> '{}'", log.display()));
    let input = renamed(&dir, "odd.xaif", "../odd name");
    let out = dir.join("out.xaif");
    let o = run(xaifb()
        .env("PATH", &path)
        .arg("adjoint")
        .arg(&input)
        .args(["-g", "8", "-G", "ps", "-B", "v", "-d"])
        .arg(dir.join("debug.txt"))
        .arg("-o")
        .arg(&out));
    code(&o, 0, "adjoint -g 8 -G ps");
    let graphs = files(&dir.join("out.xaif.graphs"));
    let ps: Vec<_> = graphs
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ps"))
        .collect();
    assert_eq!(ps.len(), 6, "{graphs:?}");
    assert_eq!(graphs.len(), 12, "{graphs:?}");
    let viewed = std::fs::read_to_string(&log).unwrap();
    assert_eq!(viewed.lines().count(), 6, "{viewed}");
    for p in ps {
        // `cat` as dot: the picture is the graph's text.
        assert!(std::fs::read_to_string(p).unwrap().contains("digraph"));
    }
}

/// Every pair of outputs is checked before anything is written: `-o X
/// --dot X` and the like are refused (exit 2) and leave nothing, and
/// neither does a job whose later output cannot be written.
#[test]
fn clashing_outputs_are_refused_before_anything_is_written() {
    let dir = scratch("clash");
    let x = dir.join("x");
    let s = |p: &Path| p.display().to_string();
    let f = s(&program());
    let cases: Vec<Vec<String>> = vec![
        vec![
            "tangent".into(),
            f.clone(),
            "-o".into(),
            s(&x),
            "--dot".into(),
            s(&x),
        ],
        vec![
            "adjoint".into(),
            f.clone(),
            "-o".into(),
            s(&x),
            "--stats-json".into(),
            s(&x),
        ],
        vec![
            "tangent".into(),
            f.clone(),
            "-o".into(),
            "-".into(),
            "-d".into(),
            s(&x),
            "--dot".into(),
            s(&x),
        ],
        vec![
            "tangent".into(),
            f.clone(),
            "-o".into(),
            s(&x),
            "--stats-json".into(),
            s(&x.join("s.json")),
        ],
        vec![
            "tangent".into(),
            f.clone(),
            "-o".into(),
            s(&dir.join("o.xaif")),
            "--stats-json".into(),
            s(&x),
            "--dot".into(),
            s(&x),
        ],
        vec![
            "run".into(),
            f.clone(),
            "--n".into(),
            "2".into(),
            "--m".into(),
            "3".into(),
            "-o".into(),
            s(&x),
            "--stats-json".into(),
            s(&x),
        ],
        vec![
            "analyze".into(),
            f.clone(),
            "-o".into(),
            s(&x),
            "--passivate".into(),
            s(&x),
        ],
    ];
    for args in cases {
        let o = run(xaifb().args(&args));
        code(&o, 2, &args.join(" "));
        let left = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(left, 0, "{}: something was written", args.join(" "));
    }
    // All or none: the graphs directory of a job whose statistics file
    // cannot be written is not left behind, made directories included.
    let blocker = dir.join("file");
    std::fs::write(&blocker, "x").unwrap();
    let o = run(xaifb()
        .arg("tangent")
        .arg(program())
        .arg("-o")
        .arg(dir.join("o.xaif"))
        .arg("--dot")
        .arg(dir.join("new/dots"))
        .arg("--stats-json")
        .arg(blocker.join("s.json")));
    code(&o, 3, "unwritable statistics");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["file"], "{left:?}");
}

/// Any legal output name has a legal temporary: names of 245 to 255 bytes
/// are written by every command that writes a file.
#[test]
fn temporaries_fit_any_legal_output_name() {
    let dir = scratch("long");
    for len in [245, 250, 255] {
        let name = "n".repeat(len);
        let out = dir.join(&name);
        let f = program().display().to_string();
        let commands: Vec<Vec<&str>> = vec![
            vec!["tangent", &f, "-o"],
            vec!["roundtrip", &f, "-o"],
            vec!["analyze", &f, "-o"],
            vec!["run", &f, "--n", "2", "--m", "3", "-o"],
        ];
        for args in commands {
            let _ = std::fs::remove_file(&out);
            let o = run(xaifb().args(&args).arg(&out));
            code(&o, 0, &format!("{} -o <{len} bytes>", args[0]));
            assert!(out.is_file());
        }
    }
}

/// `shims DIR` installs all four drivers or none, and refuses a `--xaifb`
/// binary that is not there or cannot run.
#[cfg(unix)]
#[test]
fn shims_are_installed_all_or_none() {
    let dir = scratch("shims");
    let root = dir.join("root");
    let drivers = |root: &Path| -> Vec<PathBuf> {
        files(root)
            .into_iter()
            .filter(|p| p.ends_with("driver/oadDriver"))
            .collect()
    };
    // The last driver's directory is blocked by a file.
    let blocked = root.join("xaifBooster/algorithms/TypeChange");
    std::fs::create_dir_all(&blocked).unwrap();
    std::fs::write(blocked.join("driver"), "not a directory").unwrap();
    let o = run(xaifb().arg("shims").arg(&root));
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(drivers(&root).is_empty(), "{:?}", drivers(&root));
    std::fs::remove_file(blocked.join("driver")).unwrap();
    // A binary that is not there, or not a program.
    let text = dir.join("text");
    std::fs::write(&text, "not a program").unwrap();
    for bad in [dir.join("missing"), text] {
        let o = run(xaifb().arg("shims").arg(&root).arg("--xaifb").arg(&bad));
        code(&o, 1, &format!("--xaifb {}", bad.display()));
        assert!(stderr(&o).contains(&bad.display().to_string()));
        assert!(drivers(&root).is_empty(), "{:?}", drivers(&root));
    }
    let o = run(xaifb().arg("shims").arg(&root));
    code(&o, 0, "shims");
    assert_eq!(drivers(&root).len(), 4);
}

/// `adjoint --dot DIR` and `adjoint -g 8` write the graphs it eliminated,
/// as many as `--stats-json` counts.
#[test]
fn the_adjoint_writes_the_graphs_it_eliminated() {
    let dir = scratch("adjoint-graphs");
    let dots = dir.join("dots");
    let stats = dir.join("stats.json");
    let o = run(xaifb()
        .arg("adjoint")
        .arg(program())
        .arg("-o")
        .arg(dir.join("out.xaif"))
        .arg("--dot")
        .arg(&dots)
        .arg("--stats-json")
        .arg(&stats)
        .args(["-g", "8", "-d"])
        .arg(dir.join("debug.txt")));
    code(&o, 0, "adjoint --dot");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let graphs: usize = report["routines"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["blocks"].as_array().unwrap())
        .map(|b| b["graphs"].as_array().unwrap().len())
        .sum();
    assert!(graphs > 0);
    let before = files(&dots)
        .iter()
        .filter(|p| p.to_string_lossy().ends_with("_before.dot"))
        .count();
    assert_eq!(before, graphs, "{:?}", files(&dots));
    let debug = std::fs::read_to_string(dir.join("debug.txt")).unwrap();
    assert_eq!(
        debug.matches("before elimination").count(),
        graphs,
        "{debug}"
    );
}

// ------------------------------------------------------------- section 4

/// Malformed values of the transformations' numeric and strategy flags
/// and of the limits are command-line errors: exit code 2, a message in
/// the flag's words (no debug formatting, no internal error).
#[test]
fn malformed_flag_values_are_command_line_errors() {
    let f = program().display().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["tangent", &f, "--heuristic", "edge:HS,LM"],
        vec!["tangent", &f, "--heuristic", "nonsense"],
        vec!["adjoint", &f, "--heuristic", "edge:"],
        vec!["tangent", &f, "-A", "3"],
        vec!["adjoint", &f, "-A", "-1"],
        vec!["tangent", &f, "-M", "2"],
        vec!["tangent", &f, "--jobs", "0"],
        vec!["run", &f, "--n", "2", "--m", "3", "--time-limit", "1e300"],
        vec!["tangent", &f, "--max-input-size", "1.5M"],
        vec!["validate", &f, "--max-input-size", "-1"],
        vec!["validate", &f, "--xmllint-timeout", "1e300"],
    ];
    for args in cases {
        let o = run(xaifb().args(&args));
        let e = stderr(&o);
        code(&o, 2, &args.join(" "));
        let flag = args[args.len() - 2];
        assert!(e.contains(flag), "{}: {e}", args.join(" "));
        assert!(
            !e.contains("Some(")
                && !e.contains("internal error")
                && !e.contains("unexpected argument"),
            "{}: {e}",
            args.join(" ")
        );
    }
}

/// One rule for the schema directory everywhere: named (by a flag or
/// `XAIF_SCHEMA_DIR`) where something is validated against it, it must
/// exist and hold `xaif.xsd`, else exit code 3 naming it, before any
/// output is written.
#[test]
fn one_rule_for_a_missing_or_empty_schema_directory() {
    let dir = scratch("schema-rule");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let missing = dir.join("missing");
    let out = dir.join("out.xaif");
    for schema in [&missing, &empty] {
        let runs: Vec<Command> = vec![
            {
                let mut c = xaifb();
                c.args(["tangent", "-v", "-s"])
                    .arg(schema)
                    .arg(program())
                    .arg("-o")
                    .arg(&out);
                c
            },
            {
                let mut c = xaifb();
                c.args(["adjoint", "-v", "-s"])
                    .arg(schema)
                    .arg(program())
                    .arg("-o")
                    .arg(&out);
                c
            },
            {
                let mut c = xaifb();
                c.args(["validate", "--schema"]).arg(schema).arg(program());
                c
            },
            {
                let mut c = xaifb();
                c.env("XAIF_SCHEMA_DIR", schema)
                    .arg("validate")
                    .arg(program());
                c
            },
            {
                let mut c = xaifb();
                c.env("XAIF_SCHEMA_DIR", schema)
                    .args(["tangent", "-v"])
                    .arg(program())
                    .arg("-o")
                    .arg(&out);
                c
            },
        ];
        for mut c in runs {
            let o = run(&mut c);
            code(&o, 3, &format!("{c:?}"));
            assert!(
                stderr(&o).contains(&schema.display().to_string()),
                "{}",
                stderr(&o)
            );
            assert!(!out.exists(), "{c:?}");
        }
    }
}

/// Every write error is an error: help, version, the manual page,
/// completions, batch and one-file `--verbose` lines and every report to
/// a full standard output give exit code 3 with a message.
#[cfg(unix)]
#[test]
fn every_write_error_is_an_error() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let dir = scratch("full");
    let f = program().display().to_string();
    let out = dir.join("o.xaif").display().to_string();
    let shims = dir.join("shims").display().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["--version"],
        vec!["tangent", "--help"],
        vec!["help"],
        vec!["man"],
        vec!["completions", "bash"],
        vec!["validate", "--verbose", &f],
        vec!["tangent", "--verbose", &f, "-o", &out],
        vec!["adjoint", &f],
        vec!["run", &f, "--n", "2", "--m", "3"],
        vec!["analyze", &f],
        vec!["roundtrip", &f, "-o", "-"],
        vec!["shims", &shims],
    ];
    for args in cases {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = run_with(xaifb().args(&args), None, Some(Stdio::from(full)));
        code(&o, 3, &args.join(" "));
        assert!(
            stderr(&o).contains("cannot write to standard output"),
            "{}: {}",
            args.join(" "),
            stderr(&o)
        );
    }
    // A full device named as the output file.
    for args in [
        vec!["tangent", &f, "-o", "/dev/full"],
        vec!["roundtrip", &f, "-o", "/dev/full"],
        vec!["run", &f, "--n", "2", "--m", "3", "-o", "/dev/full"],
        vec!["analyze", &f, "-o", "/dev/full"],
    ] {
        let o = run(xaifb().args(&args));
        code(&o, 3, &args.join(" "));
        assert!(
            stderr(&o).contains("cannot write /dev/full"),
            "{}",
            stderr(&o)
        );
    }
}

/// `-` as an output is standard output wherever one output can go there,
/// and is refused (exit 2) where it cannot: a batch, a directory, two
/// outputs on standard output. No file named `-` is ever made.
#[test]
fn dash_is_standard_output_or_refused() {
    let dir = scratch("dash-out");
    let f = program().display().to_string();
    let other = repo_root().join("fixtures/adjoint/control_flow.xaif");
    let o_file = dir.join("o.xaif").display().to_string();
    let stdout_cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", &f, "--n", "2", "--m", "3", "-o", "-"],
            "y(  3)=",
        ),
        (vec!["roundtrip", &f, "-o", "-"], "<xaif:CallGraph"),
        (vec!["analyze", &f, "-o", "-"], "independents: head:X"),
        (
            vec!["analyze", &f, "-o", &o_file, "--passivate", "-"],
            "<xaif:CallGraph",
        ),
        (
            vec!["tangent", &f, "-o", &o_file, "--stats-json", "-"],
            "\"mode\": \"tangent\"",
        ),
        (
            vec!["adjoint", &f, "-o", &o_file, "-g", "64", "-d", "-"],
            "metrics:",
        ),
        (
            vec![
                "run",
                &f,
                "--n",
                "2",
                "--m",
                "3",
                "-o",
                &o_file,
                "--stats-json",
                "-",
            ],
            "\"tapes_empty\"",
        ),
    ];
    for (args, want) in stdout_cases {
        let o = run(xaifb().current_dir(dir.path()).args(&args));
        code(&o, 0, &args.join(" "));
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains(want), "{}: {text}", args.join(" "));
        assert!(
            !dir.join("-").exists(),
            "{}: a file named -",
            args.join(" ")
        );
    }
    let refused: Vec<Vec<&str>> = vec![
        vec!["tangent", &f, other.to_str().unwrap(), "-o", "-"],
        vec!["roundtrip", &f, other.to_str().unwrap(), "-o", "-"],
        vec!["tangent", &f, "--dot", "-"],
        vec!["shims", "-"],
        vec!["tangent", &f, "--stats-json", "-"],
        vec!["run", &f, "--n", "2", "--m", "3", "--stats-json", "-"],
        vec!["analyze", &f, "--passivate", "-"],
    ];
    for args in refused {
        let o = run(xaifb().current_dir(dir.path()).args(&args));
        code(&o, 2, &args.join(" "));
        assert!(stderr(&o).contains("standard output"), "{}", stderr(&o));
        assert!(
            !dir.join("-").exists(),
            "{}: a file named -",
            args.join(" ")
        );
    }
}

/// `-` as an input is standard input in every subcommand, once: beside
/// other inputs, twice, or with `-u` (which reads its answers there) it
/// is refused (exit 2).
#[test]
fn dash_is_standard_input_once() {
    let dir = scratch("dash-in");
    let f = program().display().to_string();
    let text = std::fs::read(program()).unwrap();
    let other = repo_root().join("fixtures/adjoint/control_flow.xaif");
    let o_file = dir.join("o.xaif").display().to_string();
    let ad = dir.join("a.out");
    std::fs::write(&ad, " AD\nF(  1,  1)=  1.0\n").unwrap();
    let ad = ad.display().to_string();
    for args in [
        vec!["validate", "-"],
        vec!["roundtrip", "-", "-o", &o_file],
        vec!["run", "-", "--n", "2", "--m", "3"],
        vec!["analyze", "-"],
        vec!["tangent", "-", "-o", &o_file],
        vec!["adjoint", "-u", &f, "-o", &o_file],
    ] {
        let o = run_with(xaifb().args(&args), Some(&text), None);
        code(&o, 0, &args.join(" "));
    }
    let jacobian = b" AD\nF(  1,  1)=  1.0\n";
    let o = run_with(xaifb().args(["compare", "-", &ad]), Some(jacobian), None);
    code(&o, 0, "compare - A");
    std::fs::remove_file(&o_file).unwrap();
    for args in [
        vec!["tangent", "-", other.to_str().unwrap(), "-o", &o_file],
        vec!["validate", &f, "-"],
        vec!["roundtrip", "-i", "-", "-i", &f, "-o", &o_file],
        vec!["adjoint", "-u", "-", "-o", &o_file],
        vec!["tangent", "-", "-c", "-", "-o", &o_file],
        vec!["compare", "-", "-"],
        vec!["run", "-", "--params", "-"],
    ] {
        let o = run_with(xaifb().args(&args), Some(&text), None);
        code(&o, 2, &args.join(" "));
        assert!(stderr(&o).contains("standard input"), "{}", stderr(&o));
        assert!(!Path::new(&o_file).exists(), "{}", args.join(" "));
    }
}

/// `-t NAME` where no routine NAME has code: a warning, and the output of
/// the same call without `-t` (the reference engine goes on too).
#[test]
fn a_top_routine_that_is_not_there_is_warned_about() {
    let dir = scratch("top");
    let (with, without) = (dir.join("with.xaif"), dir.join("without.xaif"));
    let o = run(xaifb()
        .args(["adjoint", "-t", "nosuch"])
        .arg(program())
        .arg("-o")
        .arg(&with));
    code(&o, 0, "-t nosuch");
    assert!(stderr(&o).contains("-t nosuch"), "{}", stderr(&o));
    let o = run(xaifb()
        .arg("adjoint")
        .arg(program())
        .arg("-o")
        .arg(&without));
    code(&o, 0, "without -t");
    assert_eq!(
        std::fs::read(&with).unwrap(),
        std::fs::read(&without).unwrap()
    );
    let o = run(xaifb()
        .args(["adjoint", "--quiet", "-t", "nosuch"])
        .arg(program())
        .arg("-o")
        .arg(&with));
    code(&o, 0, "--quiet -t nosuch");
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

/// `validate DIR` without `.xaif` files names DIR; `validate` takes `-s`
/// as the transformations do.
#[cfg(unix)]
#[test]
fn validate_names_an_empty_directory_and_takes_s() {
    let dir = scratch("validate");
    let empty = dir.join("nothing-here");
    std::fs::create_dir_all(&empty).unwrap();
    let o = run(xaifb().arg("validate").arg(&empty));
    code(&o, 3, "validate EMPTY");
    assert!(
        stderr(&o).contains("no .xaif files found") && stderr(&o).contains("nothing-here"),
        "{}",
        stderr(&o)
    );
    // A schema directory and an xmllint that accepts everything.
    let schema = dir.join("schema");
    std::fs::create_dir_all(&schema).unwrap();
    std::fs::write(schema.join("xaif.xsd"), "").unwrap();
    let path = fake(&dir, "xmllint", "cat > /dev/null\nexit 0");
    let o = run(xaifb()
        .env("PATH", &path)
        .args(["validate", "--verbose", "-s"])
        .arg(&schema)
        .arg(program()));
    code(&o, 0, "validate -s");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("valid (xaif.xsd)"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}
