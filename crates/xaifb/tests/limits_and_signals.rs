//! What a run does when the machine says no (issue 34, sections 1, 3 and
//! 4): an allocation refused under an address-space limit is a located
//! error with exit code 4, the same in every run; an interrupt removes the
//! directories the run made for its outputs and nothing else; graph file
//! names are safe for shells whatever the routine is called. Every test
//! runs the binary; `XAIFB_TEST_BIN` runs them against another build.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use xaif_testkit::{deep, repo_root};

fn xaifb() -> Command {
    match std::env::var_os("XAIFB_TEST_BIN") {
        Some(bin) => Command::new(bin),
        None => Command::new(env!("CARGO_BIN_EXE_xaifb")),
    }
}

fn scratch(name: &str) -> xaif_testkit::Scratch {
    xaif_testkit::Scratch::new("xaifb-limits", name)
}

/// Every file and directory below `dir`, sorted.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Runs `cmd` under an address-space limit of `bytes`, without core
/// files; fails the test after 120 s.
#[cfg(unix)]
fn limited(cmd: &mut Command, bytes: u64) -> Output {
    use std::os::unix::process::CommandExt;
    // SAFETY: only setrlimit between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let l = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            libc::setrlimit(libc::RLIMIT_AS, &l);
            let c = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &c);
            Ok(())
        });
    }
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(120), "{cmd:?} hangs");
    out
}

/// Another CPU-heavy process's worth of work while `f` runs: a thread
/// spinning on another core.
fn under_load<R>(f: impl FnOnce() -> R) -> R {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut x = 1u64;
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..10_000 {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                }
                std::hint::black_box(x);
            }
        });
        let r = f();
        stop.store(true, Ordering::Relaxed);
        r
    })
}

/// One run's outcome, as a user sees it: exit code (or signal), standard
/// error, and the bytes written.
#[derive(Debug, PartialEq)]
struct Outcome {
    code: Option<i32>,
    stderr: String,
    output: Option<Vec<u8>>,
}

// ------------------------------------------------------------- section 1

/// Under an address-space limit too small for the transformation, every
/// subcommand that transforms ends with exit code 4 and one line naming
/// the input and the limit: never an abort ("memory allocation of N bytes
/// failed", SIGABRT, as before), no output, no temporary and no directory
/// made for the output. The same limit gives the same outcome in 20 runs,
/// with and without another CPU-heavy process, with and without the
/// second thread; a generous limit gives the same bytes every time.
#[cfg(unix)]
#[test]
fn a_refused_allocation_is_a_located_error_the_same_in_every_run() {
    let dir = scratch("oom");
    let input = dir.join("ifs.xaif");
    std::fs::write(&input, deep::nested_ifs(3_000)).unwrap();
    let run = |mode: &str, jobs: &[&str], limit: u64| -> Outcome {
        let out = dir.join("new/deeper/out.xaif");
        let o = limited(
            xaifb().arg(mode).args(jobs).arg(&input).arg("-o").arg(&out),
            limit,
        );
        let output = std::fs::read(&out).ok();
        let _ = std::fs::remove_dir_all(dir.join("new"));
        Outcome {
            code: o.status.code(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            output,
        }
    };
    let small = 64u64 << 20;
    let want = format!(
        "{}: not enough memory: an allocation failed under the address-space limit of 64 MiB (ulimit -v); raise the limit or give a smaller input\n",
        input.display()
    );
    for mode in ["adjoint", "tangent", "roundtrip"] {
        for jobs in [&[][..], &["--jobs", "1"][..]] {
            // The tangent and the round trip of this program fit; the
            // adjoint does not.
            let first = run(mode, jobs, small);
            let got = (first.code, first.stderr.as_str(), first.output.is_some());
            if mode == "adjoint" || got.0 != Some(0) {
                assert_eq!(
                    got,
                    (Some(4), want.as_str(), false),
                    "{mode} {jobs:?} under 64 MiB"
                );
            }
            assert_eq!(tree(dir.path()), vec![input.clone()], "{mode} {jobs:?}");
        }
    }
    // 20 runs each, with and without load, with and without the second
    // thread: one outcome.
    for jobs in [&[][..], &["--jobs", "1"][..]] {
        for load in [false, true] {
            let runs = |n: usize| -> Vec<Outcome> {
                (0..n).map(|_| run("adjoint", jobs, small)).collect()
            };
            // Twenty runs with the second thread, ten on one thread.
            let n = if jobs.is_empty() { 20 } else { 10 };
            let all = if load {
                under_load(|| runs(n))
            } else {
                runs(n)
            };
            for (k, o) in all.iter().enumerate() {
                assert_eq!(o, &all[0], "run {k}, {jobs:?}, load {load}");
            }
        }
    }
    // A limit that is ample: the same bytes as without one, every time.
    let free = {
        let o = xaifb()
            .arg("adjoint")
            .arg(&input)
            .arg("-o")
            .arg(dir.join("free.xaif"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(dir.join("free.xaif")).unwrap()
    };
    for load in [false, true] {
        let runs = || {
            (0..3)
                .map(|_| run("adjoint", &[], 1 << 30))
                .collect::<Vec<_>>()
        };
        let all = if load { under_load(runs) } else { runs() };
        for o in all {
            assert_eq!(o.code, Some(0), "{}", o.stderr);
            assert!(o.output.as_deref() == Some(&free[..]), "different bytes");
        }
    }
}

/// Every subcommand under a limit it cannot work in: exit code 4 and the
/// input named, or its own located error; never a signal.
#[cfg(unix)]
#[test]
fn every_subcommand_ends_cleanly_under_a_tiny_limit() {
    let dir = scratch("tiny");
    let input = dir.join("ifs.xaif");
    std::fs::write(&input, deep::nested_ifs(3_000)).unwrap();
    let cases: Vec<Vec<String>> = vec![
        vec!["validate".into(), input.display().to_string()],
        vec!["analyze".into(), input.display().to_string()],
        vec!["run".into(), input.display().to_string()],
        vec![
            "tangent".into(),
            input.display().to_string(),
            "-o".into(),
            dir.join("t.xaif").display().to_string(),
        ],
    ];
    for args in &cases {
        for limit in [24u64 << 20, 40 << 20, 56 << 20] {
            let o = limited(xaifb().args(args), limit);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                o.status.code().is_some(),
                "{args:?} under {limit}: {:?}\n{err}",
                o.status
            );
            assert!(!err.contains("memory allocation of"), "{args:?}: {err}");
            if o.status.code() == Some(4) {
                assert!(
                    err.contains(&format!("{}: not enough memory", input.display()))
                        || err.starts_with("xaifb: not enough memory"),
                    "{args:?}: {err}"
                );
            }
        }
    }
}

// ------------------------------------------------------------- section 3

/// A run that takes a while: the adjoint of 3000 nested `If`s (about a
/// second), with every side output in directories that do not exist yet.
fn slow_run(dir: &Path, input: &Path) -> Command {
    let mut c = xaifb();
    c.arg("adjoint")
        .arg(input)
        .arg("-o")
        .arg(dir.join("new1/a/out.xaif"))
        .arg("--stats-json")
        .arg(dir.join("new2/b/stats.json"))
        .arg("--dot")
        .arg(dir.join("kept/new3/dots"));
    c
}

/// SIGINT or SIGTERM after the run made the directories for its outputs
/// (the parents of `-o` and `--stats-json`, the `--dot` directory)
/// removes them again, and only them: a directory that was there before
/// stays with what it held.
#[cfg(unix)]
#[test]
fn an_interrupt_removes_the_directories_made_for_outputs_and_only_those() {
    let dir = scratch("interrupt");
    let input = dir.join("ifs.xaif");
    std::fs::write(&input, deep::nested_ifs(3_000)).unwrap();
    std::fs::create_dir_all(dir.join("kept")).unwrap();
    std::fs::write(dir.join("kept/mine.txt"), "mine").unwrap();
    let before = tree(dir.path());
    let mut interrupted = 0;
    for (k, sig) in [libc::SIGINT, libc::SIGTERM, libc::SIGINT, libc::SIGTERM]
        .into_iter()
        .enumerate()
    {
        let mut child = slow_run(dir.path(), &input)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // At the moment the first directory appears, or a little later.
        let start = Instant::now();
        while !dir.join("new1").exists() && start.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_micros(200));
        }
        std::thread::sleep(Duration::from_millis(50 * k as u64));
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        if status.signal() == Some(sig) {
            interrupted += 1;
            assert_eq!(tree(dir.path()), before, "signal {sig}, run {k}");
        } else {
            // Finished before the signal: every output is there.
            assert!(status.success(), "{status:?}");
            assert!(dir.join("new1/a/out.xaif").is_file());
            for d in ["new1", "new2"] {
                std::fs::remove_dir_all(dir.join(d)).unwrap();
            }
            std::fs::remove_dir_all(dir.join("kept/new3")).unwrap();
        }
    }
    assert!(interrupted >= 2, "only {interrupted} runs were interrupted");
}

// ------------------------------------------------------------- section 4

/// `program` with its routine `head` called `name` (XML-escaped here).
fn renamed(dir: &Path, file: &str, name: &str) -> PathBuf {
    let mut escaped = String::new();
    for c in name.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '"' => escaped.push_str("&quot;"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f || (0x80..0xa0).contains(&(c as u32)) => {
                escaped.push_str(&format!("&#{};", c as u32))
            }
            c => escaped.push(c),
        }
    }
    let text = std::fs::read_to_string(repo_root().join("fixtures/adjoint/seed_cfr.xaif"))
        .unwrap()
        .replace("symbol_id=\"head\"", &format!("symbol_id=\"{escaped}\""));
    let p = dir.join(file);
    std::fs::write(&p, text).unwrap();
    p
}

/// Graph files of routines named with newlines, carriage returns, tabs,
/// DEL, C1 controls, line separators, shell metacharacters and path
/// separators are named with printable ASCII only (letters, digits, `_`,
/// `-`, `.`, `%`, `~`), hold no separator or control character, fit 255
/// bytes, and differ for different names (also for a name that spells
/// another's escape).
#[test]
fn graph_file_names_are_safe_for_shells_and_injective() {
    let dir = scratch("dotnames");
    let names = [
        "a\nb".to_string(),
        "a%0Ab".to_string(),
        "a\rb".to_string(),
        "tab\there".to_string(),
        "del\u{7f}c1\u{85}ls\u{2028}".to_string(),
        "$(rm -rf x);`y`|z&w>v<u'q\"*?[]{}!#".to_string(),
        "sl/ash\\back:colon".to_string(),
        format!("{}\n", "n".repeat(400)),
        format!("{}\r", "n".repeat(400)),
    ];
    // Every name's file names, to hold them apart from every other's.
    let mut seen: Vec<(String, Vec<String>)> = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let input = renamed(dir.path(), &format!("in{k}.xaif"), name);
        let dots = dir.join(format!("dots{k}"));
        let o = xaifb()
            .arg("adjoint")
            .arg(&input)
            .arg("-o")
            .arg(dir.join(format!("out{k}.xaif")))
            .arg("--dot")
            .arg(&dots)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{name:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let files = tree(&dots);
        assert_eq!(files.len(), 6, "{name:?}: {files:?}");
        let mut mine = Vec::new();
        for f in files {
            assert_eq!(f.parent(), Some(dots.as_path()), "{name:?}: {f:?}");
            let file = f.file_name().unwrap().to_str().unwrap().to_string();
            assert!(
                file.len() <= 255
                    && file.bytes().all(|b| b.is_ascii_alphanumeric()
                        || matches!(b, b'_' | b'-' | b'.' | b'%' | b'~'))
                    && !file.starts_with(['.', '-', '~']),
                "{name:?} gives the file name {file:?}"
            );
            mine.push(file);
        }
        for (other, theirs) in &seen {
            for f in &mine {
                assert!(!theirs.contains(f), "{name:?} and {other:?} both give {f}");
            }
        }
        seen.push((name.clone(), mine));
    }
}
