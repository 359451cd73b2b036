//! The driver under faults (issue classes 1, 2, 3, 6 and 7): closed pipes and
//! full devices, panicking jobs, link cycles, FIFOs and devices, huge
//! inputs, a slow or nosy xmllint, outputs over inputs, colliding outputs,
//! interrupted batches, partial job outputs, and one message and exit code
//! per cause in every subcommand. Every test runs the binary, and every
//! command runs under a watchdog so that a hang fails the test instead of
//! stalling the suite.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use xaif_testkit::{have_xmllint, repo_root, shared_dir};

/// The binary under test (`XAIFB_TEST_BIN` runs these tests against
/// another build, e.g. an older one, to see them fail).
fn xaifb() -> Command {
    match std::env::var_os("XAIFB_TEST_BIN") {
        Some(bin) => Command::new(bin),
        None => Command::new(env!("CARGO_BIN_EXE_xaifb")),
    }
}

fn scratch(name: &str) -> xaif_testkit::Scratch {
    xaif_testkit::Scratch::new("xaifb-robust", name)
}

/// A small front-end program and a schema-free way to a catalogue.
fn program() -> PathBuf {
    repo_root().join("fixtures/adjoint/seed_cfr.xaif")
}

fn catalogue(shared: &Path) -> PathBuf {
    shared.join("xaif/schema/examples/inlinable_intrinsics.xaif")
}

/// Runs `cmd` with captured output; fails the test when it takes longer
/// than `secs` (a hang).
fn run(cmd: &mut Command, secs: u64) -> Output {
    run_to(cmd, Stdio::piped(), secs)
}

/// [`run`] with standard output sent to `stdout`.
fn run_to(cmd: &mut Command, stdout: Stdio, secs: u64) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
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
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {secs} s (a hang)");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn no_panic(o: &Output) {
    let e = stderr(o);
    assert!(
        !e.contains("panicked") && !e.contains("internal error") && o.status.code() != Some(101),
        "{e}"
    );
}

fn temporaries(dir: &Path) -> Vec<PathBuf> {
    walk(dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn mkfifo(path: &Path) {
    let st = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(st.success());
}

// ---------------------------------------------------------------- class 1

/// Standard output closed by the reader (`xaifb … | head`): the program
/// ends quietly, without a panic, with the exit code of the work it did.
#[test]
fn closed_pipe_ends_quietly() {
    let Some(shared) = shared_dir() else { return };
    let cases: Vec<Vec<std::ffi::OsString>> = vec![
        vec![
            "tangent".into(),
            "-c".into(),
            catalogue(&shared).into(),
            "-i".into(),
            program().into(),
        ],
        vec![
            "validate".into(),
            "--verbose".into(),
            program().into(),
            repo_root().join("fixtures/model/all_kinds.xaif").into(),
        ],
        vec!["analyze".into(), program().into()],
    ];
    for args in cases {
        let mut child = xaifb()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Close the reading end before the program writes anything.
        drop(child.stdout.take());
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let st = child.wait().unwrap();
        assert_eq!(st.code(), Some(0), "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("failed printing"),
            "{args:?}: {err}"
        );
    }
}

/// A full device is a write error: exit code 3 with a message, in every
/// subcommand that writes to standard output, including the per-file notes
/// of `validate --verbose`.
#[test]
fn full_device_is_an_error_exit() {
    let full = Path::new("/dev/full");
    if !full.exists() {
        eprintln!("skipping: no /dev/full");
        return;
    }
    let Some(shared) = shared_dir() else { return };
    let dir = scratch("full");
    let jac = dir.join("a.out");
    std::fs::write(&jac, " AD\nF(  1,  1)=  1.0\n").unwrap();
    let cases: Vec<Vec<std::ffi::OsString>> = vec![
        vec!["validate".into(), "--verbose".into(), program().into()],
        vec![
            "tangent".into(),
            "-c".into(),
            catalogue(&shared).into(),
            "-i".into(),
            program().into(),
        ],
        vec![
            "adjoint".into(),
            "-c".into(),
            catalogue(&shared).into(),
            "-i".into(),
            program().into(),
        ],
        vec!["analyze".into(), program().into()],
        vec![
            "run".into(),
            program().into(),
            "--n".into(),
            "2".into(),
            "--m".into(),
            "3".into(),
        ],
        vec!["compare".into(), jac.clone().into(), jac.clone().into()],
    ];
    for args in cases {
        let out = run_to(
            xaifb().args(&args),
            Stdio::from(std::fs::File::create(full).unwrap()),
            60,
        );
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {e}");
        assert!(
            e.contains("cannot write to standard output"),
            "{args:?}: {e}"
        );
        no_panic(&out);
    }
    // An output file on a full device: exit 3, no temporary left.
    let o = run(
        xaifb().arg("roundtrip").arg(program()).arg("-o").arg(full),
        60,
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
}

/// A job that panics is an internal error of its file: the other files are
/// still written, the summary counts it, the exit code is 1.
#[test]
fn a_panicking_job_does_not_stop_the_batch() {
    let dir = scratch("panic");
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    for name in ["a", "b", "boom", "c", "d"] {
        std::fs::copy(program(), input.join(format!("{name}.xaif"))).unwrap();
    }
    let out = dir.join("out");
    let o = run(
        xaifb()
            .env("XAIFB_INJECT_PANIC", "boom")
            .args(["roundtrip", "--jobs", "2"])
            .arg(&input)
            .arg("-o")
            .arg(&out),
        60,
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("boom.xaif: internal error"), "{e}");
    assert!(!e.contains("panicked at"), "{e}");
    assert!(e.contains("5 file(s), 4 ok, 1 failed"), "{e}");
    for name in ["a", "b", "c", "d"] {
        assert!(out.join(format!("{name}.xaif")).is_file(), "{name} missing");
    }
    assert!(!out.join("boom.xaif").exists());
    assert!(temporaries(&out).is_empty());
}

// ---------------------------------------------------------------- class 2

/// A directory walk takes regular files only, never follows a link into a
/// cycle and names what it skipped.
#[test]
fn directory_walk_skips_link_cycles_and_fifos() {
    let dir = scratch("walk");
    let input = dir.join("in");
    std::fs::create_dir_all(input.join("d1")).unwrap();
    std::fs::create_dir_all(input.join("d2")).unwrap();
    std::fs::copy(program(), input.join("a.xaif")).unwrap();
    std::os::unix::fs::symlink(".", input.join("self")).unwrap();
    std::os::unix::fs::symlink("../d2", input.join("d1/to2")).unwrap();
    std::os::unix::fs::symlink("../d1", input.join("d2/to1")).unwrap();
    mkfifo(&input.join("pipe.xaif"));
    let out = dir.join("out");
    let o = run(xaifb().arg("roundtrip").arg(&input).arg("-o").arg(&out), 30);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    let written: Vec<PathBuf> = walk(&out);
    assert_eq!(written, vec![out.join("a.xaif")], "{e}");
    assert!(e.contains("symbolic link loop"), "{e}");
    assert!(e.contains("pipe.xaif: is a FIFO"), "{e}");
    assert!(e.contains("skipped"), "{e}");
}

/// Devices and FIFOs are never read; a file above the input size limit is
/// refused with the limit and the flag that raises it.
#[test]
fn non_regular_and_huge_inputs_are_refused() {
    let dir = scratch("huge");
    let fifo = dir.join("p.xaif");
    mkfifo(&fifo);
    for input in [Path::new("/dev/zero"), fifo.as_path()] {
        for cmd in ["validate", "analyze", "run"] {
            let o = run(xaifb().arg(cmd).arg(input), 20);
            assert_eq!(o.status.code(), Some(1), "{cmd} {}", input.display());
            assert!(
                stderr(&o).contains(&format!("{}: is a", input.display())),
                "{}",
                stderr(&o)
            );
        }
    }
    let o = run(
        xaifb()
            .args(["validate", "--max-input-size", "1K"])
            .arg(program()),
        20,
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains(&format!(
            "{}: is larger than the input size limit of 1024 bytes (raise it with --max-input-size)",
            program().display()
        )),
        "{e}"
    );
    // Raised, the same file passes.
    let o = run(
        xaifb()
            .args(["validate", "--max-input-size", "10M"])
            .arg(program()),
        20,
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A fake xmllint that answers --version, records its arguments and then
/// sleeps; a schema directory with empty schema files.
fn fake_xmllint(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join("xmllint.log");
    let script = bin.join("xmllint");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo fake; exit 0; fi\necho \"$@\" >> '{}'\nexec sleep 30\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let schema = dir.join("schema");
    std::fs::create_dir_all(&schema).unwrap();
    for xsd in ["xaif.xsd", "xaif_output.xsd"] {
        std::fs::write(schema.join(xsd), "").unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (PathBuf::from(path), schema, log)
}

/// xmllint running out of memory (libxml2 says so as a parser error at a
/// line) is named as xmllint's limit, not reported as an invalid file.
#[test]
fn xmllint_out_of_memory_is_not_an_invalid_file() {
    let dir = scratch("xmllint-oom");
    let (_, schema, _) = fake_xmllint(&dir);
    let script = dir.join("bin/xmllint");
    std::fs::write(
        &script,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo fake; exit 0; fi\ncat > /dev/null\necho '-:3: parser error : out of memory error' >&2\necho '- fails to validate' >&2\nexit 1\n",
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = run(
        xaifb()
            .env("PATH", &path)
            .args(["validate", "--schema"])
            .arg(&schema)
            .arg(program()),
        20,
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("xmllint did not finish schema validation: it ran out of memory")
            && e.contains("seed_cfr.xaif")
            && !e.contains("parser error"),
        "{e}"
    );
}

/// xmllint runs under a timeout named in the error, without network and on
/// the bytes xaifb checked; the model checks come first.
#[test]
fn xmllint_is_bounded_and_checked_first() {
    let dir = scratch("xmllint");
    let (path, schema, log) = fake_xmllint(&dir);
    let start = Instant::now();
    let o = run(
        xaifb()
            .env("PATH", &path)
            .args(["validate", "--xmllint-timeout", "1", "--schema"])
            .arg(&schema)
            .arg(program()),
        20,
    );
    let e = stderr(&o);
    assert!(start.elapsed() < Duration::from_secs(15));
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("xmllint did not finish schema validation within 1 s")
            && e.contains("--xmllint-timeout")
            && e.contains("seed_cfr.xaif"),
        "{e}"
    );
    let args = std::fs::read_to_string(&log).unwrap();
    assert!(
        args.contains("--nonet") && args.trim_end().ends_with(" -"),
        "{args}"
    );
    // tangent -v -s: the same bound.
    if let Some(shared) = shared_dir() {
        let o = run(
            xaifb()
                .env("PATH", &path)
                .args(["tangent", "-v", "--xmllint-timeout", "1", "-s"])
                .arg(&schema)
                .arg("-c")
                .arg(catalogue(&shared))
                .arg("-i")
                .arg(program()),
            20,
        );
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("within 1 s"), "{}", stderr(&o));
    }
    // A file the model rejects never reaches xmllint.
    std::fs::remove_file(&log).unwrap();
    let bad = repo_root().join("fixtures/model/err/dangling_symbol.xaif");
    let o = run(
        xaifb()
            .env("PATH", &path)
            .args(["validate", "--schema"])
            .arg(&schema)
            .arg(&bad),
        20,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("symbol `z` is not defined"));
    assert!(!log.exists(), "xmllint ran on a file the model rejects");
}

// ---------------------------------------------------------------- class 3

/// A DOCTYPE with an external parameter entity never makes xaifb (or the
/// xmllint it runs) read the named file: its content appears in no output.
#[test]
fn doctype_never_leaks_a_file() {
    let dir = scratch("doctype");
    let secret = dir.join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET-7f3a9c\n").unwrap();
    let text = std::fs::read_to_string(program()).unwrap();
    let decl_end = text.find("?>").unwrap() + 2;
    let evil = format!(
        "{}\n<!DOCTYPE xaif:CallGraph [\n<!ENTITY % ext SYSTEM \"file://{}\">\n%ext;\n]>{}",
        &text[..decl_end],
        secret.display(),
        &text[decl_end..]
    );
    let input = dir.join("evil.xaif");
    std::fs::write(&input, evil).unwrap();
    let mut cases: Vec<Command> = Vec::new();
    for cmd in ["validate", "analyze"] {
        let mut c = xaifb();
        c.arg(cmd).arg(&input);
        cases.push(c);
    }
    let mut c = xaifb();
    c.arg("roundtrip")
        .arg(&input)
        .arg("-o")
        .arg(dir.join("o.xaif"));
    cases.push(c);
    if let Some(shared) = shared_dir() {
        if have_xmllint() {
            let schema = shared.join("xaif/schema");
            let mut c = xaifb();
            c.args(["validate", "--schema"]).arg(&schema).arg(&input);
            cases.push(c);
            let mut c = xaifb();
            c.args(["tangent", "-v", "-s"])
                .arg(&schema)
                .arg("-c")
                .arg(catalogue(&shared))
                .arg("-i")
                .arg(&input);
            cases.push(c);
            let mut c = xaifb();
            c.args(["adjoint", "-v", "-s"])
                .arg(&schema)
                .arg("-c")
                .arg(catalogue(&shared))
                .arg("-i")
                .arg(&input);
            cases.push(c);
        }
    }
    for mut c in cases {
        let o = run(&mut c, 30);
        let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
        assert!(!all.contains("TOP-SECRET"), "{c:?} leaked the file:\n{all}");
        let written = dir.join("o.xaif");
        assert!(
            !written.exists()
                || !std::fs::read_to_string(&written)
                    .unwrap()
                    .contains("TOP-SECRET")
        );
        // Whatever refuses it (the reader, or the driver before xmllint),
        // a schema validation never accepts it.
        if c.get_args().any(|a| a == "-v" || a == "--schema") {
            assert_eq!(o.status.code(), Some(1), "{c:?}: {all}");
        }
        no_panic(&o);
    }
}

// ---------------------------------------------------------------- class 6

/// An output that is an input of the run (the program, the catalogue,
/// params.conf, an in-place batch) is refused with exit code 2, and the
/// input is unchanged.
#[test]
fn output_over_an_input_is_refused() {
    let Some(shared) = shared_dir() else { return };
    let dir = scratch("clobber");
    let input = dir.join("in.xaif");
    std::fs::copy(program(), &input).unwrap();
    let cat = dir.join("cat.xaif");
    std::fs::copy(catalogue(&shared), &cat).unwrap();
    let params = dir.join("params.conf");
    std::fs::write(&params, "2\n3\n0.00001\n0.000012\n").unwrap();
    let before = |p: &Path| std::fs::read(p).unwrap();
    let (i0, c0, p0) = (before(&input), before(&cat), before(&params));
    let link = dir.join("alias.xaif");
    std::os::unix::fs::symlink(&input, &link).unwrap();
    let mut cases: Vec<Command> = Vec::new();
    for mode in ["tangent", "adjoint"] {
        for out in [&input, &cat, &link] {
            let mut c = xaifb();
            c.arg(mode)
                .arg("-c")
                .arg(&cat)
                .arg("-i")
                .arg(&input)
                .arg("-o")
                .arg(out);
            cases.push(c);
        }
        let mut c = xaifb();
        c.arg(mode)
            .arg("-c")
            .arg(&cat)
            .arg("-i")
            .arg(&input)
            .arg("-o")
            .arg(dir.join("fresh.xaif"))
            .arg("--stats-json")
            .arg(&input);
        cases.push(c);
    }
    let mut c = xaifb();
    c.arg("analyze").arg(&input).arg("-o").arg(&input);
    cases.push(c);
    let mut c = xaifb();
    c.arg("analyze").arg(&input).arg("--passivate").arg(&link);
    cases.push(c);
    let mut c = xaifb();
    c.arg("run").arg(&input).arg("-o").arg(&input);
    cases.push(c);
    let mut c = xaifb();
    c.arg("run").arg(&input).arg("--stats-json").arg(&params);
    cases.push(c);
    let mut c = xaifb();
    c.arg("roundtrip").arg(&input).arg("-o").arg(&input);
    cases.push(c);
    let mut c = xaifb();
    c.arg("roundtrip").arg(&dir).arg("-o").arg(&dir);
    cases.push(c);
    for mut c in cases {
        let o = run(&mut c, 60);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{c:?}: {e}");
        assert!(
            e.contains("refusing to write an output over an input"),
            "{c:?}: {e}"
        );
        assert_eq!(before(&input), i0, "{c:?} changed the input");
        assert_eq!(before(&cat), c0, "{c:?} changed the catalogue");
        assert_eq!(before(&params), p0, "{c:?} changed params.conf");
        assert!(!dir.join("fresh.xaif").exists());
    }
    assert!(temporaries(&dir).is_empty());
}

/// Two inputs from different directories with the same relative name are
/// refused before anything is written; the same input named twice is
/// processed once, every time.
#[test]
fn colliding_outputs_are_refused_before_writing() {
    let dir = scratch("collide");
    for d in ["a", "b"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
        std::fs::copy(program(), dir.join(d).join("x.xaif")).unwrap();
        std::fs::copy(program(), dir.join(d).join(format!("only_{d}.xaif"))).unwrap();
    }
    let out = dir.join("out");
    let o = run(
        xaifb()
            .arg("roundtrip")
            .arg(dir.join("a"))
            .arg(dir.join("b"))
            .arg("-o")
            .arg(&out),
        60,
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("a/x.xaif") && e.contains("b/x.xaif") && e.contains("both"),
        "{e}"
    );
    assert!(!out.exists(), "something was written before the refusal");
    for _ in 0..5 {
        let out = dir.join("twice");
        let o = run(
            xaifb()
                .args(["roundtrip", "--jobs", "4"])
                .arg(dir.join("a"))
                .arg(dir.join("a"))
                .arg(dir.join("a/x.xaif"))
                .arg("-o")
                .arg(&out),
            60,
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let mut files = walk(&out);
        files.sort();
        assert_eq!(files, vec![out.join("only_a.xaif"), out.join("x.xaif")]);
    }
}

/// SIGINT and SIGTERM in the middle of a batch leave no temporary behind.
#[test]
fn interrupted_batch_leaves_no_temporary() {
    let Some(shared) = shared_dir() else { return };
    let big = shared.join("corpus/examples/graphEx2/admjointhead_sf.pre.xb.xaif");
    let dir = scratch("signal");
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    for k in 0..24 {
        std::fs::copy(&big, input.join(format!("f{k:02}.xaif"))).unwrap();
    }
    let whole = dir.join("whole.xaif");
    let o = run(xaifb().arg("roundtrip").arg(&big).arg("-o").arg(&whole), 60);
    assert!(o.status.success(), "{}", stderr(&o));
    let complete = std::fs::metadata(&whole).unwrap().len();
    let mut interrupted = 0;
    for (k, delay) in [150u64, 300, 450, 600, 800, 1000].into_iter().enumerate() {
        for sig in ["INT", "TERM"] {
            let out = dir.join(format!("out{k}{sig}"));
            let mut child = xaifb()
                .args(["roundtrip", "--jobs", "2"])
                .arg(&input)
                .arg("-o")
                .arg(&out)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(delay));
            Command::new("kill")
                .arg(format!("-{sig}"))
                .arg(child.id().to_string())
                .status()
                .unwrap();
            let st = child.wait().unwrap();
            if st.code().is_none() {
                interrupted += 1;
            }
            assert!(
                temporaries(&out).is_empty(),
                "SIG{sig} after {delay} ms left {:?}",
                temporaries(&out)
            );
            // What was written is complete.
            for f in walk(&out) {
                assert_eq!(
                    std::fs::metadata(&f).unwrap().len(),
                    complete,
                    "{} is partial",
                    f.display()
                );
            }
        }
    }
    assert!(
        interrupted > 0,
        "no run was interrupted; the batch is too short"
    );
}

/// A job writes all its outputs or none: an unwritable debug file, statistics
/// file or second output leaves no main output behind.
#[test]
fn a_job_writes_all_its_outputs_or_none() {
    let Some(shared) = shared_dir() else { return };
    let dir = scratch("allornone");
    // A path below a regular file can be created by nobody, root included.
    let blocker = dir.join("file");
    std::fs::write(&blocker, "x").unwrap();
    let unwritable = blocker.join("sub/out");
    let out = dir.join("out.xaif");
    let mut cases: Vec<Command> = Vec::new();
    for mode in ["tangent", "adjoint"] {
        for flag in [["-g", "64"], ["--stats-json", ""], ["--dot", ""]] {
            if mode == "adjoint" && flag[0] == "--dot" {
                continue;
            }
            let mut c = xaifb();
            c.arg(mode)
                .arg("-c")
                .arg(catalogue(&shared))
                .arg("-i")
                .arg(program())
                .arg("-o")
                .arg(&out);
            if flag[0] == "-g" {
                c.args(flag).arg("-d").arg(&unwritable);
            } else {
                c.arg(flag[0]).arg(&unwritable);
            }
            cases.push(c);
        }
    }
    let mut c = xaifb();
    c.arg("analyze")
        .arg(program())
        .arg("-o")
        .arg(&out)
        .arg("--passivate")
        .arg(&unwritable);
    cases.push(c);
    let mut c = xaifb();
    c.arg("run")
        .arg(program())
        .args(["--n", "2", "--m", "3", "-o"])
        .arg(&out)
        .arg("--stats-json")
        .arg(&unwritable);
    cases.push(c);
    for mut c in cases {
        let o = run(&mut c, 60);
        assert_eq!(o.status.code(), Some(3), "{c:?}: {}", stderr(&o));
        assert!(!out.exists(), "{c:?} left its main output behind");
        assert!(temporaries(&dir).is_empty(), "{c:?}");
    }
}

// ---------------------------------------------------------------- class 7

/// One cause, one message, one exit code, in every subcommand and every
/// place a file is named.
#[test]
fn one_cause_one_message_one_exit_code() {
    let Some(shared) = shared_dir() else { return };
    let dir = scratch("causes");
    let fifo = dir.join("fifo.xaif");
    mkfifo(&fifo);
    let (l1, l2) = (dir.join("loop1.xaif"), dir.join("loop2.xaif"));
    std::os::unix::fs::symlink(&l2, &l1).unwrap();
    std::os::unix::fs::symlink(&l1, &l2).unwrap();
    let missing = dir.join("missing.xaif");
    let big = dir.join("big.xaif");
    std::fs::write(&big, vec![b' '; 64 << 10]).unwrap();
    let jac = dir.join("j.out");
    std::fs::write(&jac, " AD\nF(  1,  1)=  1.0\n").unwrap();
    let cat = catalogue(&shared);
    let causes: Vec<(&Path, String)> = vec![
        (&missing, "no such file or directory".into()),
        (&l1, "symbolic link loop".into()),
        (&fifo, "is a FIFO (named pipe), not a regular file".into()),
        (
            Path::new("/dev/urandom"),
            "is a character device, not a regular file".into(),
        ),
        (
            &big,
            "is larger than the input size limit of 49152 bytes (raise it with --max-input-size)"
                .into(),
        ),
    ];
    for (path, cause) in &causes {
        let p = path.to_path_buf();
        let o = dir.join("o");
        let mut cases: Vec<Command> = Vec::new();
        let mut add = |args: Vec<std::ffi::OsString>| {
            let mut c = xaifb();
            c.args(["--max-input-size", "48K"]).args(args);
            cases.push(c);
        };
        add(vec!["validate".into(), p.clone().into()]);
        add(vec![
            "roundtrip".into(),
            p.clone().into(),
            "-o".into(),
            o.clone().into(),
        ]);
        for mode in ["tangent", "adjoint"] {
            add(vec![
                mode.into(),
                "-c".into(),
                cat.clone().into(),
                "-i".into(),
                p.clone().into(),
            ]);
            add(vec![
                mode.into(),
                "-c".into(),
                p.clone().into(),
                "-i".into(),
                program().into(),
            ]);
        }
        add(vec!["analyze".into(), p.clone().into()]);
        add(vec!["run".into(), p.clone().into()]);
        add(vec!["compare".into(), p.clone().into(), jac.clone().into()]);
        add(vec!["compare".into(), jac.clone().into(), p.clone().into()]);
        let expected = format!("{}: {cause}", p.display());
        for mut c in cases {
            // The limit is for `big` (the other files are below it).
            if !std::ptr::eq(*path, big.as_path()) {
                c = rebuild_without_limit(&c);
            }
            let o = run(&mut c, 20);
            let e = stderr(&o);
            assert_eq!(o.status.code(), Some(1), "{c:?}: {e}");
            assert!(
                e.lines().any(|l| l == expected),
                "{c:?}: expected the line `{expected}`:\n{e}"
            );
        }
    }
}

/// `c` without its leading `--max-input-size 48K`.
fn rebuild_without_limit(c: &Command) -> Command {
    let mut n = Command::new(c.get_program());
    n.args(c.get_args().skip(2));
    n
}

/// Every option the README documents for a subcommand is accepted by it.
#[test]
fn readme_options_are_accepted() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let help = |cmd: &str| {
        let o = xaifb().args([cmd, "--help"]).output().unwrap();
        assert!(o.status.success());
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let flags_in = |text: &str| -> Vec<String> {
        text.split(|c: char| {
            c == '`' || c.is_whitespace() || c == '|' || c == ',' || c == '(' || c == ')'
        })
        .filter(|w| w.starts_with('-') && w.len() > 1 && w.chars().nth(1) != Some(' '))
        .map(|w| w.trim_end_matches(['.', ':']).to_string())
        .filter(|w| {
            w.chars()
                .skip(1)
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
        .collect()
    };
    let mut checked = 0;
    // The command table: each row's flags belong to its command (adjoint
    // also takes every tangent flag).
    for line in readme.lines().filter(|l| l.starts_with("| `xaifb ")) {
        let cmd = line["| `xaifb ".len()..].split_whitespace().next().unwrap();
        let h = help(cmd);
        for flag in flags_in(line) {
            assert!(
                h.contains(&format!(" {flag} "))
                    || h.contains(&format!(" {flag},"))
                    || h.contains(&format!(" {flag}\n")),
                "README documents `{flag}` for `xaifb {cmd}`, which does not accept it"
            );
            checked += 1;
        }
        if cmd == "tangent" {
            let a = help("adjoint");
            for flag in flags_in(line) {
                assert!(a.contains(&format!(" {flag}")), "adjoint lacks `{flag}`");
            }
        }
    }
    // The flag table of the four transforming commands.
    let transforming = ["tangent", "adjoint", "trace", "typechange"];
    let helps: Vec<(&str, String)> = transforming.iter().map(|c| (*c, help(c))).collect();
    for line in readme.lines().filter(|l| l.starts_with("| `-")) {
        let first = line.split(" | ").next().unwrap_or("");
        for flag in flags_in(first) {
            for (cmd, h) in &helps {
                assert!(
                    h.contains(&format!(" {flag} ")) || h.contains(&format!(" {flag},")) || h.contains(&format!(" {flag}\n")),
                    "README documents `{flag}` for the transforming commands; `xaifb {cmd}` does not accept it"
                );
                checked += 1;
            }
        }
    }
    // Options documented for every batch command and every subcommand.
    let paragraph = |start: &str| -> String {
        let i = readme
            .find(start)
            .unwrap_or_else(|| panic!("README: {start}"));
        readme[i..].split("\n\n").next().unwrap().to_string()
    };
    let batch_para = paragraph("Batch options:");
    let batch_para = batch_para.split('.').next().unwrap();
    for cmd in ["roundtrip", "validate", "tangent", "adjoint"] {
        let h = help(cmd);
        for flag in flags_in(batch_para) {
            assert!(
                h.contains(&format!(" {flag}")),
                "`xaifb {cmd}` lacks `{flag}`"
            );
            checked += 1;
        }
    }
    let limits_para = paragraph("Limits:");
    for cmd in [
        "roundtrip",
        "validate",
        "tangent",
        "adjoint",
        "run",
        "compare",
        "analyze",
    ] {
        let h = help(cmd);
        for flag in flags_in(&limits_para) {
            assert!(
                h.contains(&format!(" {flag}")),
                "`xaifb {cmd}` lacks `{flag}`"
            );
            checked += 1;
        }
    }
    assert!(checked > 40, "only {checked} documented options found");
    // And the documented flags parse: --verbose on the transforms.
    let Some(shared) = shared_dir() else { return };
    let dir = scratch("readme");
    for mode in ["tangent", "adjoint"] {
        let o = run(
            xaifb()
                .arg(mode)
                .arg("--verbose")
                .arg("-c")
                .arg(catalogue(&shared))
                .arg("-i")
                .arg(program())
                .arg("-o")
                .arg(dir.join(format!("{mode}.xaif"))),
            60,
        );
        assert!(o.status.success(), "{mode} --verbose: {}", stderr(&o));
    }
}

/// A malformed `harness.json` is named once, with the line of the fault:
/// `PATH: missing field …`, not `PATH: harness.json: …`.
#[test]
fn a_bad_harness_is_named_once() {
    let dir = scratch("harness");
    let json = dir.join("harness.json");
    std::fs::write(&json, "{\"n\": 1, \"m\": 1, \"top\": \"head\"}\n").unwrap();
    let o = run(
        xaifb()
            .arg("run")
            .arg(program())
            .arg("--harness")
            .arg(&json),
        60,
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let first = err.lines().next().unwrap_or("");
    assert!(
        first.starts_with(&format!("{}: missing field", json.display())),
        "{err}"
    );
    assert!(first.contains("line 1"), "{err}");
    assert_eq!(err.matches("harness.json").count(), 1, "{err}");
}
