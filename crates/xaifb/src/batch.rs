//! Running one job over many files: input discovery, a fixed pool of worker
//! threads, a progress bar on a terminal, per-file reports in input order and
//! a summary.
//!
//! A failing file never stops the others; the caller turns the outcome into
//! an exit code.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{bail, Result};
use indicatif::{ProgressBar, ProgressStyle};

/// The outcome of one file.
pub struct Outcome {
    /// The input file.
    pub input: PathBuf,
    /// `Ok` with an optional note, or the error report.
    pub result: std::result::Result<Option<String>, String>,
}

/// Expands files and directories into the `.xaif` files to process, sorted
/// so that runs are reproducible, each with the relative path its output
/// keeps: below the directory it was found in, or, for files named
/// directly, below the deepest directory they all share (so that
/// `a/x.xaif` and `b/x.xaif` stay apart).
pub fn collect_inputs(paths: &[PathBuf]) -> Result<Vec<(PathBuf, PathBuf)>> {
    let files: Vec<&PathBuf> = paths.iter().filter(|p| p.is_file()).collect();
    let shared = common_parent(&files);
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found = Vec::new();
            walk(p, &mut found)?;
            found.sort();
            for f in found {
                let rel = f.strip_prefix(p).unwrap_or(&f).to_path_buf();
                out.push((f, rel));
            }
        } else if p.is_file() {
            let rel = match &shared {
                Some(dir) if files.len() > 1 => p.strip_prefix(dir).unwrap_or(p).to_path_buf(),
                _ => PathBuf::from(p.file_name().unwrap_or_default()),
            };
            out.push((p.clone(), rel));
        } else {
            bail!("{}: no such file or directory", p.display());
        }
    }
    Ok(out)
}

/// The deepest directory containing every file of `files`.
fn common_parent(files: &[&PathBuf]) -> Option<PathBuf> {
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

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "xaif") {
            out.push(path);
        }
    }
    Ok(())
}

/// Runs `job` on every input with `jobs` threads; returns outcomes in input
/// order.
pub fn run<F>(inputs: &[(PathBuf, PathBuf)], jobs: usize, job: F) -> Vec<Outcome>
where
    F: Fn(&Path, &Path) -> std::result::Result<Option<String>, String> + Sync,
{
    let jobs = jobs.max(1).min(inputs.len().max(1));
    let bar = if std::io::stderr().is_terminal() && inputs.len() > 1 {
        let bar = ProgressBar::new(inputs.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Some(bar)
    } else {
        None
    };
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> =
        Mutex::new((0..inputs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((input, rel)) = inputs.get(i) else {
                    break;
                };
                if let Some(bar) = &bar {
                    bar.set_message(rel.display().to_string());
                }
                let result = job(input, rel);
                results
                    .lock()
                    .expect("no worker panics while holding the lock")[i] = Some(Outcome {
                    input: input.clone(),
                    result,
                });
                if let Some(bar) = &bar {
                    bar.inc(1);
                }
            });
        }
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    results
        .into_inner()
        .expect("workers are done")
        .into_iter()
        .map(|o| o.expect("every input was processed"))
        .collect()
}

/// Prints each failure (and notes when `verbose`) and a summary line to
/// stderr; returns the number of failures.
pub fn report(outcomes: &[Outcome], verb: &str, verbose: bool) -> usize {
    let mut failed = 0;
    for o in outcomes {
        match &o.result {
            Ok(Some(note)) if verbose => eprintln!("{}: {note}", o.input.display()),
            Ok(_) => {}
            Err(report) => {
                failed += 1;
                eprintln!("{report}");
            }
        }
    }
    if outcomes.len() > 1 || failed > 0 {
        eprintln!(
            "{verb}: {} file(s), {} ok, {} failed",
            outcomes.len(),
            outcomes.len() - failed,
            failed
        );
    }
    failed
}
