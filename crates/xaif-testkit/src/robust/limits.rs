//! Campaign classes for what the machine refuses (issue 34): runs under an
//! address-space limit and interrupts at random moments, both on large
//! generated inputs with the second thread running.
//!
//! - `memory limit`: every subcommand on each large input (3·10⁴ nested
//!   `If`s, a generated program of many routines) under the campaign's
//!   limit and a tight one, with and without `--jobs 1`, each run
//!   [`Config::limit_repeats`] times. Every run must end with exit code 0,
//!   1 (a located error) or 4 (not enough memory, the input named), never
//!   by a signal; leave no temporary, and on failure neither an output nor
//!   a directory made for one; and the repeats must agree: the same exit
//!   code, the same standard error and the same bytes.
//! - `interrupt`: a transformation of a large input with `-o`,
//!   `--stats-json` and `--dot` in directories that do not exist yet, sent
//!   SIGINT or SIGTERM after a random delay. Ended by the signal, it must
//!   leave the directory as it was (no temporary, no directory it made,
//!   what was there untouched); finished first, every output must be
//!   there.
//! - `deep marked nests`: counted loops nested 1 to 130 deep in one
//!   routine, every one marked `--checkpoint-loop`, under the campaign's
//!   memory limit and timeout. Up to the documented limit of 16 levels the
//!   adjoint must be written and give, in joint mode, the Jacobian of the
//!   unmarked adjoint; beyond it, exit 1 with the located refusal naming
//!   the limit and no output, never an abort or a hang.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::mutate::Rng;
use super::{classify, exec, s, temporaries, wait, Config, End, Shared};

/// How `run` calls `crate::deep`'s `head(X, Y, I)`: `I = 7`.
const IFS_HARNESS: &str = r#"{"n": 1, "m": 1, "top": "head", "args": [{"kind": "x", "first": 1, "size": 1}, {"kind": "y", "first": 1, "size": 1}, {"kind": "int", "value": 7}], "x0": [0.5]}"#;

/// The large inputs: `(name, text)`.
fn large_inputs(cfg: &Config) -> Vec<(String, String)> {
    let mut v = vec![(
        format!("ifs{}", cfg.large_ifs),
        crate::deep::nested_ifs(cfg.large_ifs),
    )];
    if cfg.large_statements > 0 {
        v.push((
            format!("gen{}", cfg.large_statements),
            crate::scale::program(&crate::scale::Shape {
                routines: 100,
                statements: cfg.large_statements,
                seed: cfg.seed,
            }),
        ));
    }
    v
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

fn hash(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// Class `memory limit` (see the module documentation).
pub(super) fn memory_cases(sh: &Shared<'_>) {
    let cfg = sh.cfg;
    let base = cfg.work.join("limits");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).expect("limits directory");
    let cat = s(&sh.catalogue);
    for (name, text) in large_inputs(cfg) {
        let input = base.join(format!("{name}.xaif"));
        std::fs::write(&input, &text).expect("large input");
        drop(text);
        let inp = s(&input);
        let is_ifs = name.starts_with("ifs");
        let h = base.join(format!("{name}.harness.json"));
        std::fs::write(
            &h,
            if is_ifs {
                IFS_HARNESS
            } else {
                super::GENERATED_HARNESS
            },
        )
        .expect("harness");
        // `run`'s wall-clock limit would make the outcome depend on the
        // machine's speed; its step budget bounds it the same every time.
        let run_args: Vec<String> = vec![
            "--harness".into(),
            s(&h),
            "--time-limit".into(),
            "100000".into(),
        ];
        let commands: Vec<(&str, Vec<String>)> = vec![
            ("validate", vec!["validate".into(), inp.clone()]),
            (
                "roundtrip",
                vec!["roundtrip".into(), inp.clone(), "-o".into(), "new/o".into()],
            ),
            (
                "tangent",
                vec![
                    "tangent".into(),
                    "-c".into(),
                    cat.clone(),
                    inp.clone(),
                    "-o".into(),
                    "new/o".into(),
                ],
            ),
            (
                "adjoint",
                vec![
                    "adjoint".into(),
                    "-c".into(),
                    cat.clone(),
                    inp.clone(),
                    "-o".into(),
                    "new/o".into(),
                ],
            ),
            (
                "trace",
                vec!["trace".into(), inp.clone(), "-o".into(), "new/o".into()],
            ),
            (
                "typechange",
                vec![
                    "typechange".into(),
                    inp.clone(),
                    "-o".into(),
                    "new/o".into(),
                ],
            ),
            (
                "analyze",
                vec!["analyze".into(), inp.clone(), "-o".into(), "new/o".into()],
            ),
            ("run", {
                let mut v = vec!["run".into(), inp.clone()];
                v.extend(run_args.iter().cloned());
                v.extend(["-o".into(), "new/o".into()]);
                v
            }),
        ];
        for (cmd, args) in &commands {
            if !cfg.limit_commands.is_empty() && !cfg.limit_commands.iter().any(|c| c == cmd) {
                continue;
            }
            for limit in [cfg.memory, cfg.tight_memory] {
                for jobs in [None, Some("1")] {
                    let mut args = args.clone();
                    if let Some(j) = jobs {
                        if *cmd != "validate" && *cmd != "run" && *cmd != "analyze" {
                            args.extend(["--jobs".into(), j.into()]);
                        } else {
                            // One thread in any case.
                            continue;
                        }
                    }
                    let label = format!(
                        "memory limit: {cmd} {name} {} MiB{}",
                        limit >> 20,
                        if jobs.is_some() { " -j1" } else { "" }
                    );
                    one_limit(sh, &base, &input, &label, &args, limit);
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// The repeats of one command under one limit.
fn one_limit(sh: &Shared<'_>, base: &Path, input: &Path, label: &str, args: &[String], limit: u64) {
    let mut limited = sh.cfg.clone();
    limited.memory = limit;
    limited.timeout = sh.cfg.large_timeout;
    let cdir = base.join("run");
    let mut first: Option<(String, String, Option<u64>)> = None;
    for k in 0..sh.cfg.limit_repeats.max(1) {
        let _ = std::fs::remove_dir_all(&cdir);
        let e = exec(&limited, &cdir, args);
        *sh.report
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .seconds
            .entry(label.to_string())
            .or_insert(0.0) += e.elapsed.as_secs_f64();
        let out = cdir.join("new/o");
        let bytes = std::fs::read(&out).ok();
        let mut problem = classify(&e, &[input], &[0, 1, 4]);
        if problem.is_none() && e.end == End::Code(4) && !e.stderr.contains("not enough memory") {
            problem = Some(("exit code 4 without its message".into(), e.stderr.clone()));
        }
        let temps = temporaries(&cdir);
        if problem.is_none() && !temps.is_empty() {
            problem = Some(("leftover temporary".into(), format!("{temps:?}")));
        }
        if problem.is_none() && e.end != End::Code(0) && cdir.join("new").exists() {
            problem = Some((
                "directory made for a failed output left".into(),
                format!("{:?}", tree(&cdir.join("new"))),
            ));
        }
        let seen = (
            format!("{:?}", e.end),
            e.stderr.clone(),
            bytes.as_deref().map(hash),
        );
        if problem.is_none() {
            match &first {
                None => first = Some(seen),
                Some(f) if *f != seen => {
                    problem = Some((
                        "different outcome under the same memory limit".into(),
                        format!(
                            "run 1: {} {}; run {}: {} {}",
                            f.0,
                            f.1.lines().next().unwrap_or(""),
                            k + 1,
                            seen.0,
                            seen.1.lines().next().unwrap_or("")
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        match problem {
            Some((c, d)) => {
                sh.outcome(label, &c);
                sh.finding(&c, label, None, &[], &d, &[], args);
                break;
            }
            None => sh.outcome(
                label,
                match e.end {
                    End::Code(0) => "ok",
                    End::Code(4) => "not enough memory",
                    _ => "error",
                },
            ),
        }
    }
    let _ = std::fs::remove_dir_all(&cdir);
}

/// Class `interrupt` (see the module documentation).
pub(super) fn interrupt_cases(sh: &Shared<'_>) {
    let cfg = sh.cfg;
    if cfg.interrupts == 0 {
        return;
    }
    let base = cfg.work.join("interrupts");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).expect("interrupt directory");
    let inputs = [
        ("ifs3000", crate::deep::nested_ifs(3_000)),
        (
            "gen20000",
            crate::scale::program(&crate::scale::Shape {
                routines: 40,
                statements: 20_000,
                seed: cfg.seed,
            }),
        ),
    ];
    for (name, text) in &inputs {
        std::fs::write(base.join(format!("{name}.xaif")), text).expect("input");
    }
    let mut rng = Rng::new(cfg.seed ^ 0x1A7E_5157);
    for k in 0..cfg.interrupts {
        let (name, _) = &inputs[k % inputs.len()];
        let input = base.join(format!("{name}.xaif"));
        let cdir = base.join(format!("case{k}"));
        std::fs::create_dir_all(cdir.join("kept")).expect("case directory");
        std::fs::write(cdir.join("kept/mine.txt"), "mine").expect("a file of the user's");
        let before = tree(&cdir);
        let mode = *rng.pick(&["adjoint", "tangent"]);
        let sig = *rng.pick(&[libc::SIGINT, libc::SIGTERM]);
        let delay = Duration::from_millis(rng.below(1500) as u64);
        let args: Vec<String> = vec![
            mode.into(),
            "-c".into(),
            s(&sh.catalogue),
            s(&input),
            "-o".into(),
            "new1/a/out.xaif".into(),
            "--stats-json".into(),
            "new2/b/stats.json".into(),
            "--dot".into(),
            "kept/new3/dots".into(),
        ];
        let label = format!("interrupt: {mode} {name}");
        let start = Instant::now();
        let mut command = Command::new(&cfg.xaifb);
        command
            .args(&args)
            .current_dir(&cdir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // A campaign started in the background of a non-interactive shell
        // (`nohup … &`) ignores SIGINT, and its children inherit that;
        // xaifb keeps a disposition that was "ignore" at start-up, as the
        // shells' convention asks, so the interrupt would never arrive and
        // the run would end on its own, late under load: a false hang.
        // The class tests what xaifb does with a signal it is sent, so the
        // child starts with both signals at their default.
        // SAFETY: `signal` is async-signal-safe, as a `pre_exec` hook must be.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, || {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = match command.spawn() {
            Ok(c) => c,
            Err(e) => panic!("cannot run {}: {e}", cfg.xaifb.display()),
        };
        std::thread::sleep(delay);
        // SAFETY: a signal to our own child.
        unsafe {
            libc::kill(child.id() as i32, sig);
        }
        let end = wait(&mut child, cfg.timeout);
        *sh.report
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .seconds
            .entry(label.clone())
            .or_insert(0.0) += start.elapsed().as_secs_f64();
        let after = tree(&cdir);
        let problem = match &end {
            End::Signal(s) if *s == sig => (after != before).then(|| {
                let extra: Vec<&PathBuf> = after.iter().filter(|p| !before.contains(p)).collect();
                let missing: Vec<&PathBuf> = before.iter().filter(|p| !after.contains(p)).collect();
                (
                    "left behind after an interrupt".to_string(),
                    format!(
                        "signal {sig} after {} ms: added {extra:?}, removed {missing:?}",
                        delay.as_millis()
                    ),
                )
            }),
            End::Code(0) => (!cdir.join("new1/a/out.xaif").is_file()
                || !cdir.join("new2/b/stats.json").is_file()
                || !cdir.join("kept/new3/dots").is_dir()
                || !temporaries(&cdir).is_empty())
            .then(|| {
                (
                    "outputs missing after success".to_string(),
                    format!("{after:?}"),
                )
            }),
            End::Timeout => Some(("hang".into(), String::new())),
            other => Some((
                "interrupt ended otherwise".into(),
                format!("{other:?} after signal {sig} at {} ms", delay.as_millis()),
            )),
        };
        match problem {
            Some((c, d)) => {
                sh.outcome(&label, &c);
                sh.finding(&c, &label, None, &[], &d, &[], &args);
            }
            None => sh.outcome(
                &label,
                if end == End::Code(0) {
                    "finished first"
                } else {
                    "interrupted, clean"
                },
            ),
        }
        let _ = std::fs::remove_dir_all(&cdir);
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// Class `deep marked nests` (see the module documentation).
pub(super) fn deep_marked_nest_cases(sh: &Shared<'_>) {
    let cfg = sh.cfg;
    let base = cfg.work.join("deep-marked-nests");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).expect("deep marked nest directory");
    let label = "deep marked nests: adjoint";
    for depth in [1usize, 4, 16, 17, 48, 130] {
        let prog = crate::loop_programs::nested_loops(depth, 2);
        let input = base.join(format!("nest{depth}.xaif"));
        std::fs::write(&input, crate::loop_programs::xaif(&prog, "nest")).expect("input");
        let mut args: Vec<String> = vec![
            "adjoint".into(),
            "-c".into(),
            s(&sh.catalogue),
            "-i".into(),
            s(&input),
            "-o".into(),
            "marked.xaif".into(),
        ];
        for l in crate::loop_programs::loop_lines(&prog) {
            args.extend(["--checkpoint-loop".into(), format!("head:{l}:2")]);
        }
        let cdir = base.join(format!("case{depth}"));
        let e = exec(cfg, &cdir, &args);
        let out = cdir.join("marked.xaif");
        let mut problem = classify(&e, &[&input], &[0, 1]);
        if problem.is_none() {
            problem = match (depth <= 16, &e.end) {
                (true, End::Code(0)) => marked_jacobian_differs(sh, &input, &out, &cdir),
                (false, End::Code(1)) if e.stderr.contains("at most 16") && !out.exists() => None,
                _ => Some((
                    "deep marked nest: not the documented outcome".into(),
                    format!("{depth} levels: {:?}: {}", e.end, e.stderr),
                )),
            };
        }
        match problem {
            Some((c, d)) => {
                sh.outcome(label, &c);
                sh.finding(&c, label, None, &[], &d, &[&input], &args);
            }
            None => sh.outcome(label, if depth <= 16 { "ok" } else { "refused" }),
        }
    }
}

/// For a nest within the limit: `None` when the marked adjoint `out` gives
/// the unmarked adjoint's Jacobian in joint mode, else the finding.
fn marked_jacobian_differs(
    sh: &Shared<'_>,
    input: &Path,
    out: &Path,
    cdir: &Path,
) -> Option<(String, String)> {
    let plain_args: Vec<String> = vec![
        "adjoint".into(),
        "-c".into(),
        s(&sh.catalogue),
        "-i".into(),
        s(input),
        "-o".into(),
        "plain.xaif".into(),
    ];
    let pdir = cdir.join("plain");
    if exec(sh.cfg, &pdir, &plain_args).end != End::Code(0) {
        return Some((
            "deep marked nest: the unmarked adjoint failed".into(),
            s(input),
        ));
    }
    let jacobian = |file: &Path, dir: &Path| {
        let args: Vec<String> = vec![
            "run".into(),
            s(file),
            "--n".into(),
            "2".into(),
            "--m".into(),
            "2".into(),
            "--mode".into(),
            "joint".into(),
        ];
        let e = exec(sh.cfg, dir, &args);
        (e.end == End::Code(0)).then(|| String::from_utf8_lossy(&e.stdout).into_owned())
    };
    let marked = jacobian(out, &cdir.join("run-marked"));
    let plain = jacobian(&pdir.join("plain.xaif"), &cdir.join("run-plain"));
    match (marked, plain) {
        (Some(a), Some(b)) if a == b => None,
        (a, b) => Some((
            "silent wrong number: deep marked nest's Jacobian differs from the unmarked adjoint's"
                .into(),
            format!("marked: {a:?}\nunmarked: {b:?}"),
        )),
    }
}
