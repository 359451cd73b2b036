//! The robustness campaign (`cargo xtask robust`, and a short fixed-seed run
//! in the test suite): mutants of corpus inputs, catalogues and Jacobian
//! files through every subcommand of `xaifb`, each run under an
//! address-space limit and a timeout, every outcome classified; plus fixed
//! file-system and signal cases.
//!
//! A finding is any of: a panic (or a caught one, reported as an internal
//! error), a death by signal (stack overflow, allocation abort), a hang, an
//! exit code other than 0 and 1 where the command line is right, an error
//! that does not name the file, a partial output or a leftover temporary,
//! output that the gate or the output schema rejects when the input was
//! accepted, different bytes from the same run twice, the content of a
//! file named in a DOCTYPE anywhere in the output, a Jacobian
//! comparison that passes on non-finite numbers, and a `run` that prints
//! what is not the program's result (`run_kinds.rs`); and the driver's
//! contract with the file system and the command line (`driver.rs`).

mod driver;
mod limits;
pub mod mutate;
mod run_kinds;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mutate::{Context, Rng};

/// What a campaign runs and how.
#[derive(Clone, Debug)]
pub struct Config {
    /// The `xaifb` binary under test.
    pub xaifb: PathBuf,
    /// The reference material (corpus, schemas, catalogue).
    pub shared: PathBuf,
    /// Scratch directory (emptied first); findings are kept below it in
    /// `findings/`.
    pub work: PathBuf,
    /// Number of mutants.
    pub mutants: usize,
    /// Number of the first mutant: mutant `k` depends only on the seed and
    /// `k`, so a long campaign run in slices (`first`, `first + mutants`,
    /// …) runs the same mutants as one run.
    pub first: usize,
    /// Seed of the campaign: the same seed gives the same mutants.
    pub seed: u64,
    /// Mutants processed at once.
    pub jobs: usize,
    /// Time limit of one command (beyond it: a hang).
    pub timeout: Duration,
    /// Address-space limit of one command, in bytes.
    pub memory: u64,
    /// Whether to run the checks that need xmllint.
    pub schema: bool,
    /// Check determinism of the transformations on every k-th mutant.
    pub determinism_every: usize,
    /// Whether to run the file-system and signal cases.
    pub fs_cases: bool,
    /// Largest corpus input used as a seed, in bytes.
    pub max_seed_bytes: u64,
    /// Only this mutant (for reproducing a finding).
    pub only: Option<usize>,
    /// Largest repetition of deep and wide mutations (expression depth,
    /// copies of an element).
    pub max_repeat: usize,
    /// Programs besides the corpus (e.g. generated ones), with the number
    /// of independents and dependents of their top routine.
    pub extra_seeds: Vec<Seed>,
    /// Share of program mutants made from a program generated for that
    /// mutant alone (`crate::scale` with a shape and seed of its own), so
    /// that a campaign sees as many distinct generated programs.
    pub generated: f64,
    /// `--time-limit` of `run` (seconds): a mutant that makes a program
    /// run away reaches it in every `run` of the mutant, so it sets the
    /// pace of a campaign; the step budget stays at its default.
    pub run_time_limit: f64,
    /// Whether to run the `memory limit` class (`limits.rs`) with the
    /// fixed cases: every subcommand on large generated inputs under
    /// [`Config::memory`] and [`Config::tight_memory`].
    pub limit_cases: bool,
    /// The tight address-space limit of the `memory limit` class, bytes.
    pub tight_memory: u64,
    /// Runs of each command and limit of the `memory limit` class; all
    /// must give the same outcome.
    pub limit_repeats: usize,
    /// Only these subcommands in the `memory limit` class (all when
    /// empty).
    pub limit_commands: Vec<String>,
    /// Nesting of the `If`s of the first large input.
    pub large_ifs: usize,
    /// Statements of the second large input (a generated program of 100
    /// routines; none when 0).
    pub large_statements: usize,
    /// Interrupts at random moments of large transformations (`limits.rs`).
    pub interrupts: usize,
    /// Time limit of one command of the `memory limit` class (its inputs
    /// take seconds each on a quiet machine, more under load).
    pub large_timeout: Duration,
}

impl Config {
    /// A configuration with the usual limits (30 s, 2 GiB).
    pub fn new(xaifb: PathBuf, shared: PathBuf, work: PathBuf, mutants: usize, seed: u64) -> Self {
        Config {
            xaifb,
            shared,
            work,
            mutants,
            first: 0,
            seed,
            jobs: 2,
            timeout: Duration::from_secs(30),
            memory: 2 << 30,
            schema: true,
            determinism_every: 4,
            fs_cases: true,
            max_seed_bytes: 64 << 10,
            only: None,
            max_repeat: 50_000,
            extra_seeds: Vec::new(),
            generated: 0.2,
            run_time_limit: 1.0,
            limit_cases: false,
            tight_memory: 512 << 20,
            limit_repeats: 2,
            limit_commands: Vec::new(),
            large_ifs: 30_000,
            large_statements: 100_000,
            interrupts: 0,
            large_timeout: Duration::from_secs(300),
        }
    }
}

/// A program to mutate.
#[derive(Clone, Debug)]
pub struct Seed {
    /// A name for reports.
    pub name: String,
    /// The XAIF text.
    pub text: Vec<u8>,
    /// Independents of the generic harness.
    pub n: usize,
    /// Dependents of the generic harness.
    pub m: usize,
    /// A `harness.json` for `run` when the program has no `head(x, y)`.
    pub harness: Option<String>,
}

/// One finding.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The class (panic, hang, …).
    pub class: String,
    /// The subcommand and its role (e.g. `tangent`, `run tangent output`).
    pub command: String,
    /// The mutant number (`None` for the fixed cases).
    pub mutant: Option<usize>,
    /// The mutations applied.
    pub kinds: Vec<&'static str>,
    /// What was seen (first lines of the error).
    pub detail: String,
    /// Where the reproducer was kept.
    pub saved: Option<PathBuf>,
}

/// The result of a campaign.
#[derive(Debug, Default)]
pub struct Report {
    /// Mutants run.
    pub mutants: usize,
    /// Commands run.
    pub runs: usize,
    /// Mutants made from a program generated for them alone (each a
    /// distinct program).
    pub generated: usize,
    /// Outcomes per command: `ok`, `error` (exit 1, located) or a finding
    /// class.
    pub outcomes: BTreeMap<String, BTreeMap<String, usize>>,
    /// The first error without a line number of each command: not a
    /// finding (the file is named), but where a message could say more.
    pub unlocated: BTreeMap<String, String>,
    /// Wall-clock seconds spent in each command.
    pub seconds: BTreeMap<String, f64>,
    /// Mutations applied, by kind.
    pub kinds: BTreeMap<&'static str, usize>,
    /// Every finding.
    pub findings: Vec<Finding>,
    /// Wall-clock time.
    pub elapsed: Duration,
    /// The seed.
    pub seed: u64,
}

impl Report {
    /// Findings per class.
    pub fn classes(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for f in &self.findings {
            *m.entry(f.class.clone()).or_insert(0) += 1;
        }
        m
    }

    /// A markdown summary.
    pub fn render(&self) -> String {
        let mut s = format!(
            "robust campaign: seed {}, {} mutants ({} of distinct generated programs), {} runs, {:.1} s, {} findings\n\n",
            self.seed,
            self.mutants,
            self.generated,
            self.runs,
            self.elapsed.as_secs_f64(),
            self.findings.len()
        );
        s.push_str("| command | outcomes | seconds |\n|---|---|---:|\n");
        for (cmd, o) in &self.outcomes {
            let list: Vec<String> = o.iter().map(|(k, v)| format!("{k} {v}")).collect();
            s.push_str(&format!(
                "| {cmd} | {} | {:.1} |\n",
                list.join(", "),
                self.seconds.get(cmd).copied().unwrap_or(0.0)
            ));
        }
        s.push_str("\n| mutation | count |\n|---|---|\n");
        for (k, v) in &self.kinds {
            s.push_str(&format!("| {k} | {v} |\n"));
        }
        if !self.unlocated.is_empty() {
            s.push_str("\n| command | first error without a line |\n|---|---|\n");
            for (cmd, e) in &self.unlocated {
                s.push_str(&format!(
                    "| {cmd} | {} |\n",
                    e.replace('\n', " / ").replace('|', "\\|")
                ));
            }
        }
        if !self.findings.is_empty() {
            s.push_str("\n| finding | count | first example |\n|---|---|---|\n");
            for (class, n) in self.classes() {
                let f = self
                    .findings
                    .iter()
                    .find(|f| f.class == class)
                    .expect("counted");
                s.push_str(&format!(
                    "| {class} | {n} | {} (mutant {}, {}): {} {} |\n",
                    f.command,
                    f.mutant
                        .map(|m| m.to_string())
                        .unwrap_or_else(|| "-".into()),
                    f.kinds.join("+"),
                    f.detail.replace('\n', " / ").replace('|', "\\|"),
                    f.saved
                        .as_ref()
                        .map(|p| format!("[{}]", p.display()))
                        .unwrap_or_default()
                ));
            }
        }
        s
    }
}

/// How a command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// Exit code.
    Code(i32),
    /// Killed by a signal.
    Signal(i32),
    /// Still running at the time limit (then killed).
    Timeout,
}

/// One command's result.
#[derive(Clone, Debug)]
pub struct Exec {
    /// How it ended.
    pub end: End,
    /// Standard output (at most 1 MiB kept).
    pub stdout: Vec<u8>,
    /// Standard error: its first [`CAPTURE_HEAD`] bytes and, when longer,
    /// its last [`CAPTURE_TAIL`].
    pub stderr: String,
    /// Wall-clock time.
    pub elapsed: Duration,
}

/// Bytes of a command's output kept from its start: bounded, since a
/// mutant can make a command print without end.
pub const CAPTURE_HEAD: u64 = 1 << 20;

/// Bytes of standard error kept from its end besides: the error message
/// comes last, after any debug output (`-g`) however long.
pub const CAPTURE_TAIL: u64 = 64 << 10;

/// Runs `args` with `xaifb` in `dir` (stdout and stderr to files there),
/// under the address-space limit and the timeout.
pub fn exec(cfg: &Config, dir: &Path, args: &[String]) -> Exec {
    exec_with(cfg, dir, args, |_| {})
}

/// [`exec`] with a hook to adjust the command (environment, stdout).
pub fn exec_with(
    cfg: &Config,
    dir: &Path,
    args: &[String],
    adjust: impl FnOnce(&mut Command),
) -> Exec {
    std::fs::create_dir_all(dir).expect("scratch directory");
    let out_path = dir.join("stdout");
    let err_path = dir.join("stderr");
    let mut cmd = Command::new(&cfg.xaifb);
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .env_remove("XAIFB_BACKTRACE")
        .env_remove("RUST_BACKTRACE")
        .env_remove("XAIF_SCHEMA_DIR");
    adjust(&mut cmd);
    limit(&mut cmd, cfg.memory);
    let start = Instant::now();
    let end = match cmd.spawn() {
        Err(e) => panic!("cannot run {}: {e}", cfg.xaifb.display()),
        Ok(mut child) => wait(&mut child, cfg.timeout),
    };
    let elapsed = start.elapsed();
    let read = |p: &Path, keep_tail: bool| {
        use std::io::{Read, Seek, SeekFrom};
        let mut v = Vec::new();
        if let Ok(mut f) = std::fs::File::open(p) {
            let _ = (&mut f).take(CAPTURE_HEAD).read_to_end(&mut v);
            // A long debug output (`-g`) comes before the error message:
            // the end is kept too, so the message is judged.
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            if keep_tail && len > CAPTURE_HEAD {
                let from = len.saturating_sub(CAPTURE_TAIL).max(CAPTURE_HEAD);
                if f.seek(SeekFrom::Start(from)).is_ok() {
                    v.extend_from_slice(b"\n[...]\n");
                    let _ = f.take(CAPTURE_TAIL).read_to_end(&mut v);
                }
            }
        }
        v
    };
    let stdout = read(&out_path, false);
    let stderr = String::from_utf8_lossy(&read(&err_path, true)).into_owned();
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    Exec {
        end,
        stdout,
        stderr,
        elapsed,
    }
}

#[cfg(unix)]
fn limit(cmd: &mut Command, memory: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls (setrlimit, setpgid) between
    // fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let as_limit = libc::rlimit {
                rlim_cur: memory as libc::rlim_t,
                rlim_max: memory as libc::rlim_t,
            };
            libc::setrlimit(libc::RLIMIT_AS, &as_limit);
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            // Its own process group, so that a timeout also ends xmllint.
            libc::setpgid(0, 0);
            Ok(())
        });
    }
}

#[cfg(not(unix))]
fn limit(_cmd: &mut Command, _memory: u64) {}

fn wait(child: &mut std::process::Child, timeout: Duration) -> End {
    use wait_timeout::ChildExt;
    let status = match child.wait_timeout(timeout) {
        Ok(Some(st)) => st,
        _ => {
            #[cfg(unix)]
            // SAFETY: kill on the child's own process group.
            unsafe {
                libc::kill(-(child.id() as i32), libc::SIGKILL);
            }
            let _ = child.kill();
            let _ = child.wait();
            return End::Timeout;
        }
    };
    if let Some(c) = status.code() {
        return End::Code(c);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(s) = status.signal() {
            return End::Signal(s);
        }
    }
    End::Code(-1)
}

/// `xaifb`'s default `--max-input-size` (256 MiB).
const INPUT_SIZE_LIMIT: u64 = 256 << 20;

/// The marker written into the secret file of DOCTYPE mutations.
const SECRET: &str = "XAIFB-CAMPAIGN-SECRET-5e1f";

/// Classifies one outcome; `names` are the file names a located error may
/// cite, `exits` the acceptable exit codes.
pub fn classify(e: &Exec, names: &[&Path], exits: &[i32]) -> Option<(String, String)> {
    let first = |s: &str| s.lines().take(3).collect::<Vec<_>>().join("\n");
    let detail = first(&e.stderr);
    if e.stderr.contains(SECRET) || String::from_utf8_lossy(&e.stdout).contains(SECRET) {
        return Some(("leak of a file named in a DOCTYPE".into(), detail));
    }
    match &e.end {
        End::Timeout => return Some(("hang".into(), detail)),
        End::Signal(s) => {
            let class = if e.stderr.contains("has overflowed its stack") {
                "stack overflow".to_string()
            } else if e.stderr.contains("memory allocation of") {
                "allocation abort".to_string()
            } else {
                format!("killed by signal {s}")
            };
            return Some((class, detail));
        }
        End::Code(_) => {}
    }
    if e.stderr.contains("panicked at") {
        return Some(("panic".into(), detail));
    }
    if e.stderr.contains("internal error") {
        return Some(("internal error (caught panic)".into(), detail));
    }
    let End::Code(code) = e.end else {
        unreachable!()
    };
    if code == 101 {
        return Some(("panic".into(), detail));
    }
    if !exits.contains(&code) {
        return Some((format!("exit code {code}"), detail));
    }
    if code != 0 {
        if e.stderr.trim().is_empty() {
            // `compare` reports a mismatch on standard output.
            if e.stdout.is_empty() {
                return Some(("failure without a message".into(), detail));
            }
            return None;
        }
        let named = names.iter().any(|n| {
            let full = n.display().to_string();
            let file = n
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            e.stderr.contains(&full) || (!file.is_empty() && e.stderr.contains(&file))
        });
        if !named {
            return Some(("error without the file name".into(), detail));
        }
    }
    None
}

/// Whether `stderr` names one of `names` with a line number
/// (`FILE:LINE`, as the reader's and the gate's errors do, or `FILE: line
/// L`, as `run`'s and `compare`'s do).
fn with_line(stderr: &str, names: &[&Path]) -> bool {
    names.iter().any(|n| {
        let full = n.display().to_string();
        stderr.match_indices(&full).any(|(i, _)| {
            let rest = &stderr[i + full.len()..];
            // `FILE:LINE:COL: …` (reader, gate) or `FILE: line L: …` (run).
            rest.starts_with(':') && rest[1..].starts_with(|c: char| c.is_ascii_digit())
                || rest
                    .strip_prefix(": line ")
                    .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        })
    })
}

/// Files below `dir` whose name says they are temporaries.
fn temporaries(dir: &Path) -> Vec<PathBuf> {
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
            } else if p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.ends_with(".tmp") && n.starts_with('.')
            }) {
                out.push(p);
            }
        }
    }
    out
}

/// Corpus inputs usable as seeds: front-end programs of examples that run
/// under the generic harness, at most `max_bytes` long.
pub fn corpus_seeds(shared: &Path, max_bytes: u64) -> Vec<Seed> {
    let index = std::fs::read_to_string(shared.join("corpus/index.csv")).unwrap_or_default();
    let mut out = Vec::new();
    for line in index.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 5 || f[2] != "generic" {
            continue;
        }
        let (Ok(n), Ok(m)) = (f[3].parse::<usize>(), f[4].parse::<usize>()) else {
            continue;
        };
        for file in ["tlmhead_sf.pre.xaif", "admhead_sf.pre.xaif"] {
            let p = shared.join("corpus/examples").join(f[0]).join(file);
            if std::fs::metadata(&p).is_ok_and(|m| m.len() <= max_bytes) {
                if let Ok(text) = std::fs::read(&p) {
                    out.push(Seed {
                        name: format!("{}/{file}", f[0]),
                        text,
                        n,
                        m,
                        harness: None,
                    });
                }
            }
        }
    }
    out
}

/// Generated programs shaped like model code (`crate::scale`): several
/// routines, loops, branches and a call DAG, which the corpus's small
/// examples seldom combine.
pub fn generated_seeds() -> Vec<Seed> {
    [(2, 40, 1), (3, 90, 2), (5, 150, 3), (8, 300, 4)]
        .into_iter()
        .map(|(routines, statements, seed)| Seed {
            name: format!("generated/{routines}x{statements}"),
            text: crate::scale::program(&crate::scale::Shape {
                routines,
                statements,
                seed,
            })
            .into_bytes(),
            n: 10,
            m: 10,
            harness: Some(GENERATED_HARNESS.into()),
        })
        .collect()
}

/// How `run` calls a generated program: `r0(x, y, n)` with ten independents,
/// ten dependents and `n = 10`.
const GENERATED_HARNESS: &str = r#"{"n": 10, "m": 10, "top": "r0", "args": [{"kind": "x", "first": 1, "size": 10}, {"kind": "y", "first": 1, "size": 10}, {"kind": "int", "value": 10}], "x0": [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0]}"#;

/// A program generated for one mutant: 1 to 6 routines, 20 to 220
/// statements, a seed of its own.
fn generated_seed(rng: &mut Rng) -> Seed {
    let shape = crate::scale::Shape {
        routines: 1 + rng.below(6),
        statements: 20 + rng.below(201),
        seed: rng.next_u64(),
    };
    Seed {
        name: format!(
            "generated/{}x{}/{:016x}",
            shape.routines, shape.statements, shape.seed
        ),
        text: crate::scale::program(&shape).into_bytes(),
        n: 10,
        m: 10,
        harness: Some(GENERATED_HARNESS.into()),
    }
}

struct Shared<'a> {
    cfg: &'a Config,
    seeds: Vec<Seed>,
    catalogue: PathBuf,
    catalogue_text: Vec<u8>,
    jacobians: Vec<(String, Vec<u8>)>,
    intrinsics: Vec<String>,
    schema: PathBuf,
    secret: PathBuf,
    report: Mutex<Report>,
    saved: Mutex<BTreeMap<String, usize>>,
}

impl Shared<'_> {
    fn outcome(&self, command: &str, class: &str) {
        let mut r = self.report.lock().unwrap_or_else(|p| p.into_inner());
        r.runs += 1;
        *r.outcomes
            .entry(command.to_string())
            .or_default()
            .entry(class.to_string())
            .or_insert(0) += 1;
    }

    #[allow(clippy::too_many_arguments)]
    fn finding(
        &self,
        class: &str,
        command: &str,
        mutant: Option<usize>,
        kinds: &[&'static str],
        detail: &str,
        files: &[&Path],
        args: &[String],
    ) {
        let saved = {
            let mut saved = self.saved.lock().unwrap_or_else(|p| p.into_inner());
            let n = saved.entry(class.to_string()).or_insert(0);
            *n += 1;
            if *n <= 5 {
                let slug: String = class
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                    .collect();
                let dir = self.cfg.work.join("findings").join(slug).join(format!(
                    "{}-{}",
                    mutant
                        .map(|m| m.to_string())
                        .unwrap_or_else(|| "fixed".into()),
                    command.replace(' ', "-")
                ));
                let _ = std::fs::create_dir_all(&dir);
                for f in files {
                    if let Some(name) = f.file_name() {
                        let _ = std::fs::copy(f, dir.join(name));
                    }
                }
                let _ = std::fs::write(
                    dir.join("command.txt"),
                    format!(
                        "xaifb {}\n\nmutations: {}\nseed {} mutant {:?}\n\n{detail}\n",
                        args.join(" "),
                        kinds.join(" + "),
                        self.cfg.seed,
                        mutant
                    ),
                );
                Some(dir)
            } else {
                None
            }
        };
        self.report
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .findings
            .push(Finding {
                class: class.to_string(),
                command: command.to_string(),
                mutant,
                kinds: kinds.to_vec(),
                detail: detail.to_string(),
                saved,
            });
    }
}

/// Runs the campaign.
pub fn run(cfg: &Config) -> Report {
    let start = Instant::now();
    let _ = std::fs::remove_dir_all(&cfg.work);
    std::fs::create_dir_all(&cfg.work).expect("work directory");
    let secret = cfg.work.join("secret.txt");
    std::fs::write(&secret, format!("{SECRET}\n")).expect("secret file");
    let catalogue = cfg
        .shared
        .join("xaif/schema/examples/inlinable_intrinsics.xaif");
    let catalogue_text = std::fs::read(&catalogue).unwrap_or_default();
    let intrinsics: Vec<String> = {
        let t = String::from_utf8_lossy(&catalogue_text);
        let mut v: Vec<String> = t
            .match_indices(" name=\"")
            .filter_map(|(i, _)| t[i + 7..].split('"').next().map(str::to_string))
            .filter(|n| n.ends_with("_scal") || n.contains("_scal_"))
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let mut seeds = corpus_seeds(&cfg.shared, cfg.max_seed_bytes);
    seeds.extend(generated_seeds());
    seeds.extend(cfg.extra_seeds.iter().cloned());
    assert!(
        !seeds.is_empty(),
        "no seed programs in {}",
        cfg.shared.display()
    );
    let jacobians: Vec<(String, Vec<u8>)> = seeds
        .iter()
        .filter_map(|s| {
            let ex = s.name.split('/').next()?;
            let p = cfg.shared.join("corpus/examples").join(ex).join("ad.out");
            Some((ex.to_string(), std::fs::read(p).ok()?))
        })
        .take(40)
        .collect();
    let shared = Shared {
        cfg,
        seeds,
        catalogue,
        catalogue_text,
        jacobians,
        intrinsics,
        schema: cfg.shared.join("xaif/schema"),
        secret,
        report: Mutex::new(Report {
            seed: cfg.seed,
            ..Report::default()
        }),
        saved: Mutex::new(BTreeMap::new()),
    };
    let items: Vec<usize> = match cfg.only {
        Some(k) => vec![k],
        None => (cfg.first..cfg.first + cfg.mutants).collect(),
    };
    driver::setup(cfg);
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..cfg.jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&k) = items.get(i) else { break };
                mutant(&shared, k);
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                if d % 250 == 0 {
                    // A report so far, so that a long campaign stopped early
                    // still tells what it found.
                    let mut r = shared.report.lock().unwrap_or_else(|p| p.into_inner());
                    r.mutants = d;
                    r.elapsed = start.elapsed();
                    let _ = std::fs::write(cfg.work.join("report-so-far.md"), r.render());
                    eprintln!(
                        "robust: {d}/{} mutants, {} runs, {} findings, {:.0} s",
                        items.len(),
                        r.runs,
                        r.findings.len(),
                        r.elapsed.as_secs_f64()
                    );
                }
            });
        }
    });
    // The fixed cases once per campaign: with its first slice.
    if cfg.fs_cases && cfg.only.is_none() && cfg.first == 0 {
        fs_cases(&shared);
        driver::fixed_cases(&shared);
        run_kinds::reference_forms_fixed(&shared);
        limits::interrupt_cases(&shared);
        limits::deep_marked_nest_cases(&shared);
    }
    if cfg.limit_cases && cfg.only.is_none() && cfg.first == 0 {
        limits::memory_cases(&shared);
    }
    let mut report = shared
        .report
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    report.mutants = items.len();
    report.elapsed = start.elapsed();
    report
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// One mutant through every subcommand.
fn mutant(sh: &Shared<'_>, k: usize) {
    let cfg = sh.cfg;
    let mut rng = Rng::for_item(cfg.seed, k as u64);
    let dir = cfg.work.join(format!("m{k}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mutant directory");
    let ctx = Context {
        secret: &sh.secret,
        intrinsics: &sh.intrinsics,
        max_repeat: cfg.max_repeat,
    };
    let count = match rng.below(10) {
        0 => 3,
        1 | 2 => 2,
        _ => 1,
    };
    let target = rng.below(100);
    let seed = if target >= 15 && rng.chance(cfg.generated) {
        sh.report
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .generated += 1;
        generated_seed(&mut rng)
    } else {
        rng.pick(&sh.seeds).clone()
    };
    let kinds: Vec<&'static str>;
    if target < 8 {
        // A catalogue mutant, with the program unchanged.
        let (text, k2) = mutate::mutate(&sh.catalogue_text, &mut rng, &ctx, count);
        kinds = k2;
        let cat = dir.join("catalogue.xaif");
        let prog = dir.join("program.xaif");
        std::fs::write(&cat, &text).expect("write mutant");
        std::fs::write(&prog, &seed.text).expect("write program");
        tally(sh, &kinds);
        let files = [cat.as_path(), prog.as_path()];
        let runs: Vec<(&str, Vec<String>)> = vec![
            (
                "validate catalogue",
                vec!["validate".into(), "-j".into(), "1".into(), s(&cat)],
            ),
            (
                "tangent (catalogue)",
                vec![
                    "tangent".into(),
                    "-c".into(),
                    s(&cat),
                    "-i".into(),
                    s(&prog),
                    "-o".into(),
                    "out.xaif".into(),
                ],
            ),
            (
                "adjoint (catalogue)",
                vec![
                    "adjoint".into(),
                    "-c".into(),
                    s(&cat),
                    "-i".into(),
                    s(&prog),
                    "-o".into(),
                    "out.xaif".into(),
                ],
            ),
        ];
        for (j, (name, args)) in runs.into_iter().enumerate() {
            let cdir = dir.join(format!("c{j}"));
            let e = exec(cfg, &cdir, &args);
            check(
                sh,
                k,
                &kinds,
                name,
                &e,
                &[&cat, &prog],
                &[0, 1],
                &cdir,
                &["out.xaif"],
                &files,
                &args,
            );
        }
    } else if target < 15 && !sh.jacobians.is_empty() {
        // A Jacobian file mutant for compare.
        let (ex, orig) = rng.pick(&sh.jacobians).clone();
        let (text, k2) = mutate_jacobian(&orig, &mut rng);
        kinds = k2;
        let a = dir.join("mutant.out");
        let b = dir.join(format!("{ex}.out"));
        std::fs::write(&a, &text).expect("write mutant");
        std::fs::write(&b, &orig).expect("write original");
        tally(sh, &kinds);
        for (j, (x, y)) in [(&a, &b), (&b, &a)].into_iter().enumerate() {
            let args = vec!["compare".to_string(), s(x), s(y)];
            let cdir = dir.join(format!("c{j}"));
            let e = exec(cfg, &cdir, &args);
            check(
                sh,
                k,
                &kinds,
                "compare",
                &e,
                &[&a],
                &[0, 1],
                &cdir,
                &[],
                &[&a, &b],
                &args,
            );
            let lower = String::from_utf8_lossy(&text).to_lowercase();
            if e.end == End::Code(0) && (lower.contains("nan") || lower.contains("inf")) {
                sh.finding(
                    "silent wrong number: compare passes a non-finite entry",
                    "compare",
                    Some(k),
                    &kinds,
                    "exit 0",
                    &[&a, &b],
                    &args,
                );
            }
        }
    } else {
        let (text, k2) = mutate::mutate(&seed.text, &mut rng, &ctx, count);
        kinds = k2;
        let input = dir.join("input.xaif");
        std::fs::write(&input, &text).expect("write mutant");
        tally(sh, &kinds);
        program_runs(sh, k, &kinds, &dir, &input, &seed, &mut rng);
        driver::mutant_runs(sh, k, &kinds, &dir, &input, &seed, &mut rng);
    }
    // Keep nothing but findings.
    let _ = std::fs::remove_dir_all(&dir);
}

fn tally(sh: &Shared<'_>, kinds: &[&'static str]) {
    let mut r = sh.report.lock().unwrap_or_else(|p| p.into_inner());
    for k in kinds {
        *r.kinds.entry(k).or_insert(0) += 1;
    }
}

/// Checks one outcome: classification, leftovers, partial outputs, leaks
/// into output files. Returns `Some(true)` for exit code 0, `Some(false)`
/// for an ordinary error and `None` for a finding.
#[allow(clippy::too_many_arguments)]
fn check(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    name: &str,
    e: &Exec,
    names: &[&Path],
    exits: &[i32],
    cdir: &Path,
    outputs: &[&str],
    files: &[&Path],
    args: &[String],
) -> Option<bool> {
    *sh.report
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .seconds
        .entry(name.to_string())
        .or_insert(0.0) += e.elapsed.as_secs_f64();
    let mut class = classify(e, names, exits);
    if class.is_none() {
        let temps = temporaries(cdir);
        if !temps.is_empty() {
            class = Some(("leftover temporary".into(), format!("{temps:?}")));
        } else if e.end != End::Code(0) {
            if let Some(o) = outputs.iter().find(|o| cdir.join(o).exists()) {
                class = Some((
                    "partial output after a failure".into(),
                    format!("{o} exists; {}", e.stderr.lines().next().unwrap_or("")),
                ));
            }
        }
        for o in outputs {
            if std::fs::read(cdir.join(o))
                .is_ok_and(|b| String::from_utf8_lossy(&b).contains(SECRET))
            {
                class = Some((
                    "leak of a file named in a DOCTYPE".into(),
                    format!("in {o}"),
                ));
            }
        }
    }
    match class {
        Some((c, detail)) => {
            sh.outcome(name, &c);
            sh.finding(&c, name, Some(k), kinds, &detail, files, args);
            None
        }
        None => {
            let ok = e.end == End::Code(0);
            let label = if ok {
                "ok"
            } else if with_line(&e.stderr, names) {
                "error"
            } else {
                sh.report
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .unlocated
                    .entry(name.to_string())
                    .or_insert_with(|| e.stderr.lines().next().unwrap_or("").to_string());
                "error (file, no line)"
            };
            sh.outcome(name, label);
            Some(ok)
        }
    }
}

/// Every subcommand on a program mutant, and on its results.
#[allow(clippy::too_many_arguments)]
fn program_runs(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    dir: &Path,
    input: &Path,
    seed: &Seed,
    rng: &mut Rng,
) {
    let cfg = sh.cfg;
    // How `run` finds the sizes: the generic harness, or the seed's own;
    // and its time limit.
    let mut sizes: Vec<String> = match &seed.harness {
        Some(h) => {
            let p = dir.join("harness.json");
            std::fs::write(&p, h).expect("write harness");
            vec!["--harness".into(), s(&p)]
        }
        None => vec![
            "--n".into(),
            seed.n.to_string(),
            "--m".into(),
            seed.m.to_string(),
        ],
    };
    sizes.extend(["--time-limit".into(), cfg.run_time_limit.to_string()]);
    let inp = s(input);
    let cat = s(&sh.catalogue);
    let schema = s(&sh.schema);
    // xmllint's own limit, well below the campaign's: a slow xmllint is a
    // located error of xaifb, not a hang.
    let xmllint_timeout = (cfg.timeout.as_secs_f64() / 3.0).max(1.0).to_string();
    let files = [input];
    let mut j = 0;
    let mut go = |name: &str,
                  args: Vec<String>,
                  outputs: &[&str],
                  names: &[&Path]|
     -> (Option<bool>, PathBuf, String) {
        let cdir = dir.join(format!("c{j}"));
        j += 1;
        let e = exec(cfg, &cdir, &args);
        let ok = check(
            sh,
            k,
            kinds,
            name,
            &e,
            names,
            &[0, 1],
            &cdir,
            outputs,
            &files,
            &args,
        );
        (ok, cdir, e.stderr)
    };
    go(
        "validate",
        vec!["validate".into(), "-j".into(), "1".into(), inp.clone()],
        &[],
        &[input],
    );
    let mut schema_valid = false;
    if cfg.schema {
        let (ok, _, _) = go(
            "validate --schema",
            vec![
                "validate".into(),
                "-j".into(),
                "1".into(),
                "--xmllint-timeout".into(),
                xmllint_timeout.clone(),
                "--schema".into(),
                schema.clone(),
                inp.clone(),
            ],
            &[],
            &[input],
        );
        schema_valid = ok == Some(true);
    }
    let (rt_ok, rt_dir, _) = go(
        "roundtrip",
        vec![
            "roundtrip".into(),
            "-j".into(),
            "1".into(),
            inp.clone(),
            "-o".into(),
            "out.xaif".into(),
        ],
        &["out.xaif"],
        &[input],
    );
    if rt_ok == Some(true) {
        determinism(
            sh,
            k,
            kinds,
            "roundtrip",
            &rt_dir,
            &[
                "roundtrip".into(),
                "-j".into(),
                "1".into(),
                inp.clone(),
                "-o".into(),
                "out.xaif".into(),
            ],
            input,
        );
    }
    let check_det = cfg.determinism_every > 0 && k % cfg.determinism_every == 0;
    let mut results: Vec<(String, PathBuf)> = Vec::new();
    for mode in ["tangent", "adjoint", "trace", "typechange"] {
        let args = vec![
            mode.into(),
            "-c".into(),
            cat.clone(),
            "-i".into(),
            inp.clone(),
            "-o".into(),
            "out.xaif".into(),
            "-s".into(),
            schema.clone(),
        ];
        let (ok, cdir, _) = go(mode, args.clone(), &["out.xaif"], &[input]);
        if ok == Some(true) {
            if check_det {
                determinism(sh, k, kinds, mode, &cdir, &args, input);
            }
            results.push((mode.to_string(), cdir.join("out.xaif")));
        }
    }
    go(
        "analyze",
        vec!["analyze".into(), inp.clone()],
        &[],
        &[input],
    );
    go(
        "run plain",
        vec!["run".into(), inp.clone()]
            .into_iter()
            .chain(sizes.iter().cloned())
            .collect(),
        &[],
        &[input],
    );
    if rng.chance(0.3) {
        go(
            "run --fd",
            vec!["run".into(), inp.clone(), "--fd".into()]
                .into_iter()
                .chain(sizes.iter().cloned())
                .collect(),
            &[],
            &[input],
        );
    }
    // A front-end program holds no derivative code: a derivative mode must
    // be refused, not give a zero Jacobian.
    let wrong = *rng.pick(&["tangent", "split", "joint"]);
    {
        let args: Vec<String> = vec!["run".into(), inp.clone(), "--mode".into(), wrong.into()]
            .into_iter()
            .chain(sizes.iter().cloned())
            .collect();
        let cdir = dir.join(format!("w{wrong}"));
        let e = exec(cfg, &cdir, &args);
        if check(
            sh,
            k,
            kinds,
            "run --mode on a front-end program",
            &e,
            &[input],
            &[0, 1],
            &cdir,
            &[],
            &files,
            &args,
        ) == Some(true)
        {
            sh.finding(
                "silent wrong number: run --mode on a file without that code",
                "run --mode on a front-end program",
                Some(k),
                kinds,
                "exit 0",
                &files,
                &args,
            );
        }
    }
    let mut jacobians: Vec<PathBuf> = Vec::new();
    for (mode, out) in &results {
        // An output beyond the default input size limit (a wide mutant's
        // adjoint can be 30 times its input) is refused by every command
        // that reads it, by design: nothing to check beyond that.
        if std::fs::metadata(out).is_ok_and(|m| m.len() > INPUT_SIZE_LIMIT) {
            sh.outcome(
                &format!("validate {mode} output"),
                "not read back: beyond the input size limit",
            );
            continue;
        }
        // The output reads back through the gate, and validates when the
        // input did.
        let (ok, _, _) = go(
            &format!("validate {mode} output"),
            vec!["validate".into(), "-j".into(), "1".into(), s(out)],
            &[],
            &[out],
        );
        if ok == Some(false) {
            sh.finding(
                "output rejected by the gate",
                mode,
                Some(k),
                kinds,
                "validate fails on the output",
                &[input, out],
                &[],
            );
        }
        if schema_valid {
            let (ok, _, err) = go(
                &format!("validate --schema {mode} output"),
                vec![
                    "validate".into(),
                    "-j".into(),
                    "1".into(),
                    "--xmllint-timeout".into(),
                    xmllint_timeout.clone(),
                    "--schema".into(),
                    schema.clone(),
                    s(out),
                ],
                &[],
                &[out],
            );
            // A located error other than xmllint's time limit.
            if ok == Some(false) && !err.contains("did not finish schema validation") {
                sh.finding(
                    "schema-invalid output from a schema-valid input",
                    mode,
                    Some(k),
                    kinds,
                    "xaif_output.xsd rejects the output",
                    &[input, out],
                    &[],
                );
            }
        }
        let modes: &[&str] = match mode.as_str() {
            "tangent" => &["tangent"],
            "adjoint" => &["split", "joint"],
            "trace" => &["trace"],
            _ => &["plain"],
        };
        for rm in modes {
            let args: Vec<String> = vec![
                "run".into(),
                s(out),
                "--mode".into(),
                rm.to_string(),
                "-o".into(),
                "jac.out".into(),
            ]
            .into_iter()
            .chain(sizes.iter().cloned())
            .collect();
            let (ok, cdir, _) = go(
                &format!("run {rm} on {mode} output"),
                args,
                &["jac.out"],
                &[out],
            );
            if ok == Some(true) && matches!(*rm, "tangent" | "split" | "joint") {
                jacobians.push(cdir.join("jac.out"));
            }
        }
    }
    if jacobians.len() >= 2 {
        let (a, b) = (jacobians[0].clone(), jacobians[jacobians.len() - 1].clone());
        go(
            "compare",
            vec!["compare".into(), s(&a), s(&b)],
            &[],
            &[&a, &b],
        );
    }
    // `run` on every kind of output in every mode, and with odd numbers.
    run_kinds::every_kind_in_every_mode(sh, k, kinds, dir, input, &sizes, rng);
    run_kinds::reference_forms_in_every_mode(sh, k, kinds, dir, input, &sizes, sh.cfg.seed);
    run_kinds::odd_numeric_flags(sh, k, kinds, dir, input, seed, &results, rng);
}

/// Runs `args` again in a fresh directory and compares `out.xaif`.
fn determinism(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    name: &str,
    first: &Path,
    args: &[String],
    input: &Path,
) {
    let again = first.with_extension("again");
    let e = exec(sh.cfg, &again, args);
    if e.end != End::Code(0) {
        sh.finding(
            "nondeterministic outcome",
            name,
            Some(k),
            kinds,
            &format!(
                "second run: {:?} {}",
                e.end,
                e.stderr.lines().next().unwrap_or("")
            ),
            &[input],
            args,
        );
        return;
    }
    let a = std::fs::read(first.join("out.xaif")).unwrap_or_default();
    let b = std::fs::read(again.join("out.xaif")).unwrap_or_default();
    if a != b {
        sh.finding(
            "nondeterministic bytes",
            name,
            Some(k),
            kinds,
            "two runs, different outputs",
            &[input],
            args,
        );
    }
}

/// The kinds of Jacobian file mutation.
const JACOBIAN_KINDS: [&str; 6] = [
    "jac-value",
    "jac-index",
    "jac-delete",
    "jac-duplicate",
    "jac-truncate",
    "jac-garbage",
];

/// Mutates a Jacobian file (`ad.out` format): non-finite and huge entries,
/// huge indices, deleted, duplicated or truncated lines, garbage.
fn mutate_jacobian(text: &[u8], rng: &mut Rng) -> (Vec<u8>, Vec<&'static str>) {
    let t = String::from_utf8_lossy(text).into_owned();
    let mut lines: Vec<String> = t.lines().map(str::to_string).collect();
    let kind: &'static str = JACOBIAN_KINDS[rng.below(JACOBIAN_KINDS.len())];
    let pick_line = |rng: &mut Rng, lines: &Vec<String>| {
        if lines.len() > 1 {
            1 + rng.below(lines.len() - 1)
        } else {
            0
        }
    };
    match kind {
        "jac-value" => {
            let i = pick_line(rng, &lines);
            if let Some(l) = lines.get_mut(i) {
                if let Some(eq) = l.find('=') {
                    let v = rng.pick(&[
                        "NaN",
                        "Infinity",
                        "-Infinity",
                        "nan",
                        "inf",
                        "1e999",
                        "-0",
                        "",
                        "x",
                        "1.0E+308",
                        "4.9E-324",
                    ]);
                    *l = format!("{}={v}", &l[..eq]);
                }
            }
        }
        "jac-index" => {
            let i = pick_line(rng, &lines);
            if let Some(l) = lines.get_mut(i) {
                if let Some(eq) = l.find('=') {
                    let idx = rng.pick(&[
                        "1000000000000,  1",
                        "  0,  0",
                        " -1,  1",
                        "99999999999999999999,1",
                        "1",
                        "",
                    ]);
                    *l = format!("F({idx}){}", &l[eq..]);
                }
            }
        }
        "jac-delete" => {
            let i = pick_line(rng, &lines);
            if i < lines.len() {
                lines.remove(i);
            }
        }
        "jac-duplicate" => {
            let i = pick_line(rng, &lines);
            if let Some(l) = lines.get(i).cloned() {
                lines.insert(i, l);
            }
        }
        "jac-truncate" => {
            let at = rng.below(t.len().max(1));
            return (t.as_bytes()[..at].to_vec(), vec![kind]);
        }
        _ => {
            lines.insert(
                rng.below(lines.len() + 1),
                rng.pick(&["\u{0}\u{ff}", "F(", " DD", "=====", "F(  1,  1)"])
                    .to_string(),
            );
        }
    }
    (format!("{}\n", lines.join("\n")).into_bytes(), vec![kind])
}

/// The file-system and signal cases: links, FIFOs, devices, the same output
/// twice, an output over an input, an interrupted batch, a full device, a
/// closed pipe.
fn fs_cases(sh: &Shared<'_>) {
    let cfg = sh.cfg;
    let base = cfg.work.join("fs");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).expect("fs case directory");
    let prog = base.join("p.xaif");
    std::fs::write(&prog, &sh.seeds[0].text).expect("program");
    let cat = s(&sh.catalogue);
    let fail = |class: &str, name: &str, detail: &str, args: &[String]| {
        sh.finding(class, name, None, &[], detail, &[], args);
    };
    let case = |name: &str, args: Vec<String>, exits: &[i32], names: &[&Path]| -> Exec {
        let cdir = base.join(name.replace(' ', "-"));
        let e = exec(cfg, &cdir, &args);
        match classify(&e, names, exits) {
            Some((c, d)) => {
                sh.outcome(&format!("fs: {name}"), &c);
                fail(&c, &format!("fs: {name}"), &d, &args);
            }
            None => sh.outcome(&format!("fs: {name}"), "ok"),
        }
        e
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::symlink;
        // A tree with a self-link, a link cycle and a FIFO.
        let tree = base.join("tree");
        std::fs::create_dir_all(tree.join("d1")).expect("tree");
        std::fs::create_dir_all(tree.join("d2")).expect("tree");
        std::fs::copy(&prog, tree.join("a.xaif")).expect("tree");
        let _ = symlink(".", tree.join("self"));
        let _ = symlink("../d2", tree.join("d1/l"));
        let _ = symlink("../d1", tree.join("d2/l"));
        let fifo = tree.join("f.xaif");
        let _ = Command::new("mkfifo").arg(&fifo).status();
        let out = base.join("tree-out");
        let e = case(
            "walk with link cycles and a FIFO",
            vec!["roundtrip".into(), s(&tree), "-o".into(), s(&out)],
            &[0],
            &[&tree],
        );
        let written = crate::xaif_files(&out);
        if e.end == End::Code(0) && written.len() != 1 {
            fail(
                "walk took more than the regular files",
                "fs: walk",
                &format!("{} outputs", written.len()),
                &[],
            );
        }
        // Bad inputs named directly, in every subcommand.
        let (l1, l2) = (base.join("l1.xaif"), base.join("l2.xaif"));
        let _ = symlink(&l2, &l1);
        let _ = symlink(&l1, &l2);
        let missing = base.join("missing.xaif");
        let urandom = PathBuf::from("/dev/urandom");
        for bad in [&l1, &fifo, &urandom, &missing] {
            let b = s(bad);
            let cmds: Vec<Vec<String>> = vec![
                vec!["validate".into(), b.clone()],
                vec!["roundtrip".into(), b.clone(), "-o".into(), "o.xaif".into()],
                vec![
                    "tangent".into(),
                    "-c".into(),
                    cat.clone(),
                    "-i".into(),
                    b.clone(),
                ],
                vec![
                    "adjoint".into(),
                    "-c".into(),
                    b.clone(),
                    "-i".into(),
                    s(&prog),
                ],
                vec!["analyze".into(), b.clone()],
                vec![
                    "run".into(),
                    b.clone(),
                    "--n".into(),
                    "1".into(),
                    "--m".into(),
                    "1".into(),
                ],
                vec!["compare".into(), b.clone(), b.clone()],
            ];
            for args in cmds {
                let name = format!(
                    "{} {}",
                    args[0],
                    bad.file_name()
                        .map(|f| f.to_string_lossy().into_owned())
                        .unwrap_or_default()
                );
                case(&name, args, &[1], &[bad]);
            }
        }
    }
    // The same input twice, and two inputs for one output.
    let (d1, d2) = (base.join("a"), base.join("b"));
    for d in [&d1, &d2] {
        std::fs::create_dir_all(d).expect("dirs");
        std::fs::copy(&prog, d.join("x.xaif")).expect("copy");
    }
    for _ in 0..3 {
        let out = base.join("twice-out");
        let _ = std::fs::remove_dir_all(&out);
        case(
            "same input twice",
            vec![
                "roundtrip".into(),
                "-j".into(),
                "4".into(),
                s(&d1),
                s(&d1),
                s(&d1.join("x.xaif")),
                "-o".into(),
                s(&out),
            ],
            &[0],
            &[&d1],
        );
    }
    let out = base.join("collide-out");
    case(
        "colliding outputs",
        vec!["roundtrip".into(), s(&d1), s(&d2), "-o".into(), s(&out)],
        &[2],
        &[&d1],
    );
    if out.exists() {
        fail(
            "output written before a refused collision",
            "fs: colliding outputs",
            "",
            &[],
        );
    }
    // An output over an input.
    let before = std::fs::read(&prog).unwrap_or_default();
    for mode in ["tangent", "adjoint"] {
        case(
            &format!("{mode} -o input"),
            vec![
                mode.into(),
                "-c".into(),
                cat.clone(),
                "-i".into(),
                s(&prog),
                "-o".into(),
                s(&prog),
            ],
            &[2],
            &[&prog],
        );
        case(
            &format!("{mode} -o catalogue"),
            vec![
                mode.into(),
                "-c".into(),
                cat.clone(),
                "-i".into(),
                s(&prog),
                "-o".into(),
                cat.clone(),
            ],
            &[2],
            &[&sh.catalogue],
        );
    }
    if std::fs::read(&prog).unwrap_or_default() != before {
        fail("input overwritten", "fs: -o input", "", &[]);
    }
    // A full device.
    if Path::new("/dev/full").exists() {
        for args in [
            vec!["validate".to_string(), "--verbose".into(), s(&prog)],
            vec![
                "tangent".into(),
                "-c".into(),
                cat.clone(),
                "-i".into(),
                s(&prog),
            ],
            vec!["analyze".into(), s(&prog)],
        ] {
            let name = format!("{} > /dev/full", args[0]);
            let e = exec_with(cfg, &base.join("full"), &args, |c| {
                if let Ok(f) = std::fs::File::create("/dev/full") {
                    c.stdout(f);
                }
            });
            match classify(&e, &[Path::new("standard output")], &[3]) {
                Some((c, d)) => {
                    sh.outcome(&format!("fs: {name}"), &c);
                    fail(&c, &format!("fs: {name}"), &d, &args);
                }
                None => sh.outcome(&format!("fs: {name}"), "ok"),
            }
        }
    }
    // A closed pipe.
    {
        let args = vec![
            "tangent".to_string(),
            "-c".into(),
            cat.clone(),
            "-i".into(),
            s(&prog),
        ];
        let mut c = Command::new(&cfg.xaifb);
        c.args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(Stdio::null());
        limit(&mut c, cfg.memory);
        if let Ok(mut child) = c.spawn() {
            drop(child.stdout.take());
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            let end = wait(&mut child, cfg.timeout);
            let e = Exec {
                end,
                stdout: Vec::new(),
                stderr: err,
                elapsed: Duration::ZERO,
            };
            match classify(&e, &[], &[0]) {
                Some((c, d)) => {
                    sh.outcome("fs: closed pipe", &c);
                    fail(&c, "fs: closed pipe", &d, &args);
                }
                None => sh.outcome("fs: closed pipe", "ok"),
            }
        }
    }
    // An interrupted batch leaves no temporary.
    let many = base.join("many");
    std::fs::create_dir_all(&many).expect("many");
    let big = sh
        .seeds
        .iter()
        .max_by_key(|s| s.text.len())
        .map(|s| s.text.clone())
        .unwrap_or_default();
    for i in 0..40 {
        let _ = std::fs::write(many.join(format!("f{i:02}.xaif")), &big);
    }
    for (i, delay) in [20u64, 60, 120, 250].into_iter().enumerate() {
        for sig in [libc_sigint(), libc_sigterm()] {
            let out = base.join(format!("int-{i}-{sig}"));
            let mut c = Command::new(&cfg.xaifb);
            c.args([
                "adjoint",
                "-j",
                "2",
                "-c",
                &cat,
                "-i",
                &s(&many),
                "-o",
                &s(&out),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
            if let Ok(mut child) = c.spawn() {
                std::thread::sleep(Duration::from_millis(delay));
                #[cfg(unix)]
                // SAFETY: a signal to our own child.
                unsafe {
                    libc::kill(child.id() as i32, sig);
                }
                let _ = wait(&mut child, cfg.timeout);
                let temps = temporaries(&out);
                let name = format!("interrupted batch (signal {sig})");
                if temps.is_empty() {
                    sh.outcome(&format!("fs: {name}"), "ok");
                } else {
                    sh.outcome(&format!("fs: {name}"), "leftover temporary");
                    fail(
                        "leftover temporary",
                        &format!("fs: {name}"),
                        &format!("{temps:?}"),
                        &[],
                    );
                }
            }
        }
    }
}

#[cfg(unix)]
fn libc_sigint() -> i32 {
    libc::SIGINT
}

#[cfg(unix)]
fn libc_sigterm() -> i32 {
    libc::SIGTERM
}

#[cfg(not(unix))]
fn libc_sigint() -> i32 {
    2
}

#[cfg(not(unix))]
fn libc_sigterm() -> i32 {
    15
}

#[cfg(all(test, unix))]
mod capture_tests {
    use super::*;

    /// An error message after more debug output than the head keeps is
    /// still seen: the campaign judges the message, not the debug output.
    #[test]
    fn the_end_of_a_long_standard_error_is_kept() {
        let dir = std::env::temp_dir().join(format!("robust-capture-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = Config::new("/bin/sh".into(), dir.clone(), dir.clone(), 0, 1);
        let script = format!(
            "head -c {} /dev/zero | tr '\\0' x >&2; echo ' the last line' >&2",
            CAPTURE_HEAD * 2
        );
        let e = exec(&cfg, &dir, &["-c".to_string(), script]);
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(e.end, End::Code(0));
        assert!(
            e.stderr.ends_with("the last line\n"),
            "{}",
            &e.stderr[e.stderr.len() - 40..]
        );
        assert!(e.stderr.len() as u64 <= CAPTURE_HEAD + CAPTURE_TAIL + 16);
        assert!(e.stderr.starts_with("xxxx"));
    }
}
