//! Running one job over many files: input discovery, a fixed pool of worker
//! threads, a progress bar on a terminal, per-file reports in input order and
//! a summary.
//!
//! A failing file never stops the others, and neither does a panicking one:
//! every job runs under `catch_unwind`, so a bug shows as an internal error
//! for that file, the others finish and the summary counts it. The caller
//! turns the outcome into an exit code.
//!
//! Directories are walked with walkdir: links are followed, but never into
//! a cycle (a link back to an ancestor is reported and skipped), and only
//! regular `*.xaif` files are taken; FIFOs, devices and sockets are never
//! opened. Everything skipped is named on standard error.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::IsTerminal;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};

use crate::input::{io_cause, type_cause, InputError};
use crate::output::{normalize, refuse_input, Refused};

/// Stack of a worker thread: the main thread's usual 8 MiB, so that a job
/// behaves the same in a batch as alone.
const WORKER_STACK: usize = 8 << 20;

/// One file to process.
pub struct Job {
    /// The file as found or named.
    pub input: PathBuf,
    /// The relative path its output keeps.
    pub rel: PathBuf,
    /// Why it cannot be processed, when named directly but not readable.
    problem: Option<String>,
}

/// The files to process and what the directory walks skipped.
#[derive(Default)]
pub struct Inputs {
    /// Files in order (each directory's files sorted).
    pub jobs: Vec<Job>,
    /// What the walks skipped, as `PATH: reason`.
    pub skipped: Vec<String>,
}

impl Inputs {
    /// Whether there is nothing to process at all.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }
}

/// The outcome of one file.
pub struct Outcome {
    /// The input file.
    pub input: PathBuf,
    /// `Ok` with an optional note, or the error report.
    pub result: std::result::Result<Option<String>, String>,
}

/// The outcomes of a batch, in input order, and what was skipped.
pub struct Outcomes {
    /// One per input file.
    pub files: Vec<Outcome>,
    /// What the directory walks skipped.
    pub skipped: Vec<String>,
}

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// Expands files and directories into the `.xaif` files to process, sorted
/// so that runs are reproducible, each with the relative path its output
/// keeps: below the directory it was found in, or, for files named
/// directly, below the deepest directory they all share (so that
/// `a/x.xaif` and `b/x.xaif` stay apart). A named path that cannot be read
/// becomes a failing job with its reason (the same message as everywhere
/// else); the same file reached twice under the same relative path is
/// processed once. Every file found is registered as an input of the run,
/// so that no output of the run overwrites it.
pub fn collect_inputs(paths: &[PathBuf]) -> Result<Inputs> {
    if let [only] = paths {
        if crate::input::is_stdin(only) {
            // Standard input, the only input (checked by the caller).
            return Ok(Inputs {
                jobs: vec![Job {
                    input: only.clone(),
                    rel: only.clone(),
                    problem: None,
                }],
                skipped: Vec::new(),
            });
        }
    }
    let inputs = collect_files(paths);
    if inputs.is_empty() {
        let dirs: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        anyhow::bail!("no .xaif files found in {}", dirs.join(", "));
    }
    Ok(inputs)
}

/// [`collect_inputs`] of files and directories.
fn collect_files(paths: &[PathBuf]) -> Inputs {
    let files: Vec<PathBuf> = paths
        .iter()
        .filter(|p| p.is_file())
        .map(|p| normalize(p))
        .collect();
    let shared = common_parent(&files);
    let mut out = Inputs::default();
    let mut seen: HashMap<((u64, u64), PathBuf), ()> = HashMap::new();
    let mut push = |out: &mut Inputs, input: PathBuf, rel: PathBuf, meta: &std::fs::Metadata| {
        if let Some(id) = identity(meta) {
            if seen.insert((id, rel.clone()), ()).is_some() {
                return;
            }
        }
        crate::output::protect(&input, meta);
        out.jobs.push(Job {
            input,
            rel,
            problem: None,
        });
    };
    for p in paths {
        let meta = match std::fs::metadata(p) {
            Ok(m) => m,
            Err(e) => {
                out.jobs.push(problem(p, io_cause(p, &e)));
                continue;
            }
        };
        if meta.is_dir() {
            for (f, m) in walk(p, &mut out.skipped) {
                let rel = relative(f.strip_prefix(p).unwrap_or(&f));
                push(&mut out, f, rel, &m);
            }
        } else if let Some(cause) = type_cause(meta.file_type()) {
            out.jobs.push(problem(p, cause));
        } else {
            let rel = match &shared {
                Some(dir) if files.len() > 1 => {
                    relative(normalize(p).strip_prefix(dir).unwrap_or(p))
                }
                _ => PathBuf::from(p.file_name().unwrap_or_default()),
            };
            push(&mut out, p.clone(), rel, &meta);
        }
    }
    out
}

/// Refuses `-` (standard input) beside other inputs: it can only be the
/// one input of a command.
pub fn stdin_alone(inputs: &[PathBuf]) -> std::result::Result<(), crate::report::Usage> {
    if inputs.len() > 1 && inputs.iter().any(|p| crate::input::is_stdin(p)) {
        return Err(crate::report::Usage(
            "`-` (standard input) must be the only input".into(),
        ));
    }
    Ok(())
}

/// The worker threads of `--jobs`, or as many as there are cores.
pub fn jobs(flag: Option<usize>) -> usize {
    flag.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

fn problem(path: &Path, cause: crate::input::Cause) -> Job {
    Job {
        input: path.to_path_buf(),
        rel: PathBuf::new(),
        problem: Some(
            InputError {
                path: path.to_path_buf(),
                cause,
            }
            .to_string(),
        ),
    }
}

/// `path` without root, prefix, `.` and `..` components: a relative path
/// that stays below any directory it is joined to.
fn relative(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .collect()
}

/// The deepest directory containing every file of `files` (absolute and
/// normalized).
fn common_parent(files: &[PathBuf]) -> Option<PathBuf> {
    let mut shared = files.first()?.parent()?.to_path_buf();
    for f in &files[1..] {
        while !f.starts_with(&shared) {
            if !shared.pop() {
                return Some(PathBuf::new());
            }
        }
    }
    Some(shared)
}

/// The regular `*.xaif` files below `dir`, sorted, with their metadata;
/// what cannot be taken is added to `skipped` with its reason.
fn walk(dir: &Path, skipped: &mut Vec<String>) -> Vec<(PathBuf, std::fs::Metadata)> {
    let is_xaif = |p: &Path| p.extension().is_some_and(|e| e == "xaif");
    let mut found = Vec::new();
    for entry in walkdir::WalkDir::new(dir).follow_links(true) {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let path = e.path().unwrap_or(dir).to_path_buf();
                if let Some(ancestor) = e.loop_ancestor() {
                    skipped.push(format!(
                        "{}: symbolic link loop (back to {}), not followed",
                        path.display(),
                        ancestor.display()
                    ));
                } else if let Some(io) = e.io_error() {
                    let cause = io_cause(&path, io);
                    // A dangling link that could not be an input is no news.
                    let dangling = matches!(cause, crate::input::Cause::BrokenLink);
                    if !dangling || is_xaif(&path) {
                        skipped.push(format!("{}: {cause}", path.display()));
                    }
                } else {
                    skipped.push(format!("{}: {e}", path.display()));
                }
                continue;
            }
        };
        if entry.file_type().is_dir() || !is_xaif(entry.path()) {
            continue;
        }
        if let Some(cause) = type_cause(entry.file_type()) {
            skipped.push(format!("{}: {cause}, skipped", entry.path().display()));
            continue;
        }
        match entry.metadata() {
            Ok(m) => found.push((entry.into_path(), m)),
            Err(e) => skipped.push(format!("{}: {e}", entry.path().display())),
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// Refuses, before anything is written, a batch in which two different
/// inputs would be written to the same destination or a destination is an
/// input of the run (exit code 2).
pub fn check_destinations(
    inputs: &Inputs,
    dest: impl Fn(&Path) -> PathBuf,
) -> std::result::Result<(), Refused> {
    let mut taken: HashMap<PathBuf, &Path> = HashMap::new();
    for job in inputs.jobs.iter().filter(|j| j.problem.is_none()) {
        let d = dest(&job.rel);
        refuse_input(&d)?;
        if let Some(first) = taken.insert(normalize(&d), &job.input) {
            return Err(Refused(format!(
                "{} and {} would both be written to {}; give them different names or transform them separately",
                first.display(),
                job.input.display(),
                d.display()
            )));
        }
    }
    Ok(())
}

thread_local! {
    /// The message and place of the last panic on this thread.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The message and place of the last panic on any thread (for a panic
/// carried over from a helper thread, such as the interpreter's).
static ANY_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Replaces the panic message on standard error by a record the batch
/// reports as an internal error of its file (set `XAIFB_BACKTRACE` to see
/// the usual message and backtrace as well).
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    let verbose = std::env::var_os("XAIFB_BACKTRACE").is_some();
    std::panic::set_hook(Box::new(move |info| {
        let msg = if let Some(s) = info.payload().downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = info.payload().downcast_ref::<String>() {
            s.clone()
        } else {
            "panic".to_string()
        };
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let record = format!("{msg}{place}");
        *ANY_PANIC.lock().unwrap_or_else(|p| p.into_inner()) = Some(record.clone());
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(record));
        if verbose {
            default(info);
        }
    }));
}

/// Runs `f`; a panic becomes `Err` with its message and place.
pub fn catch<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|_| {
        LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .or_else(|| ANY_PANIC.lock().unwrap_or_else(|p| p.into_inner()).take())
            .unwrap_or_else(|| "panic".to_string())
    })
}

/// Environment variable for fault injection in tests: a job whose input
/// path contains its value panics, so that the isolation of jobs can be
/// tested end to end whatever bugs remain.
pub const INJECT_PANIC_ENV: &str = "XAIFB_INJECT_PANIC";

fn inject_fault(input: &Path) {
    if let Some(pattern) = std::env::var_os(INJECT_PANIC_ENV) {
        let pattern = pattern.to_string_lossy();
        if !pattern.is_empty() && input.to_string_lossy().contains(&*pattern) {
            panic!("fault injected by {INJECT_PANIC_ENV}");
        }
    }
}

/// The report of a job that panicked.
pub fn internal_error(input: &Path, panic: &str) -> String {
    format!(
        "{}: internal error (a bug in xaifb, please report it with this file): {panic}",
        input.display()
    )
}

/// Runs `job` on every input with `jobs` threads; returns outcomes in input
/// order.
pub fn run<F>(inputs: &Inputs, jobs: usize, job: F) -> Outcomes
where
    F: Fn(&Path, &Path) -> std::result::Result<Option<String>, String> + Sync,
{
    let list = &inputs.jobs;
    let jobs = jobs.max(1).min(list.len().max(1));
    let bar = if std::io::stderr().is_terminal() && list.len() > 1 {
        let bar = ProgressBar::new(list.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Some(bar)
    } else {
        None
    };
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..list.len()).map(|_| None).collect());
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(j) = list.get(i) else {
            break;
        };
        if let Some(bar) = &bar {
            bar.set_message(j.rel.display().to_string());
        }
        let result = match &j.problem {
            Some(p) => Err(p.clone()),
            None => match catch(|| {
                let _working = crate::input::working_on(&j.input);
                inject_fault(&j.input);
                job(&j.input, &j.rel)
            }) {
                Ok(r) => r,
                Err(panic) => Err(internal_error(&j.input, &panic)),
            },
        };
        results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(Outcome {
            input: j.input.clone(),
            result,
        });
        if let Some(bar) = &bar {
            bar.inc(1);
        }
    };
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        // Files keep the cores busy: a large graph's chains stay on its
        // worker's thread.
        let worker = || {
            if jobs > 1 {
                xaif_elim::one_thread_per_graph(work)
            } else {
                work()
            }
        };
        for _ in 0..jobs {
            match std::thread::Builder::new()
                .stack_size(WORKER_STACK)
                .spawn_scoped(scope, worker)
            {
                Ok(h) => handles.push(h),
                Err(_) if !handles.is_empty() => break,
                // No thread at all: work on this one.
                Err(_) => work(),
            }
        }
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let files = results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .zip(list)
        .map(|(o, j)| {
            o.unwrap_or_else(|| Outcome {
                input: j.input.clone(),
                result: Err(internal_error(&j.input, "the job did not finish")),
            })
        })
        .collect();
    Outcomes {
        files,
        skipped: inputs.skipped.clone(),
    }
}

/// Prints each failure and what was skipped to stderr, with `verbose` each
/// file's note to stdout, and a summary line to stderr; returns the number
/// of failures.
pub fn report(outcomes: &Outcomes, verb: &str, verbose: bool) -> usize {
    let mut failed = 0;
    for o in &outcomes.files {
        match &o.result {
            Ok(Some(note)) if verbose => println!("{}: {note}", o.input.display()),
            Ok(_) => {}
            Err(report) => {
                failed += 1;
                eprintln!("{report}");
            }
        }
    }
    for s in &outcomes.skipped {
        eprintln!("xaifb: skipped {s}");
    }
    let n = outcomes.files.len();
    if n > 1 || failed > 0 || !outcomes.skipped.is_empty() {
        let skipped = match outcomes.skipped.len() {
            0 => String::new(),
            k => format!(", {k} skipped"),
        };
        eprintln!(
            "{verb}: {n} file(s), {} ok, {failed} failed{skipped}",
            n - failed
        );
    }
    failed
}
