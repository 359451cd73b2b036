//! Campaigns: many generated programs, every check, findings grouped by
//! class with a shrunk program per class.
//!
//! Program `k` of a campaign with seed `S` is `gen::program(seed_k, size_k)`
//! with `seed_k` a mix of `S` and `k`, so a campaign's report does not
//! depend on the number of worker threads, and any finding is reproduced by
//! its program's seed alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use xaif_testkit::gen;

use crate::check::{Checker, Finding};

/// How to run a campaign.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// Index of the first program: a campaign is programs
    /// `first..first + programs` of its seed's sequence, so a long one runs
    /// as slices that together check exactly what one run would.
    pub first: usize,
    /// Number of programs.
    pub programs: usize,
    /// Campaign seed.
    pub seed: u64,
    /// Worker threads.
    pub jobs: usize,
    /// Largest program size (sizes cycle from 1 to this).
    pub max_size: usize,
    /// Where shrunk programs (and outputs awaiting schema validation) go.
    pub out: PathBuf,
    /// The schema directory, to validate generated programs and outputs
    /// with `xmllint` (`None`: no schema validation).
    pub schema: Option<PathBuf>,
    /// Candidates tried when shrinking one failing program.
    pub shrink_steps: usize,
}

/// One failing program.
#[derive(Clone, Debug)]
pub struct Failure {
    /// Index in the campaign.
    pub index: usize,
    /// Its seed.
    pub seed: u64,
    /// Its size.
    pub size: usize,
    /// What failed.
    pub finding: Finding,
    /// The shrunk program of its class.
    pub shrunk: Option<PathBuf>,
}

/// What a campaign found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Programs checked.
    pub programs: usize,
    /// Programs not checked because their function is not finite at the
    /// point.
    pub skipped: usize,
    /// Failures in program order.
    pub failures: Vec<Failure>,
    /// Jacobian entries compared with divided differences, non-smooth
    /// among them, non-zero tangent entries.
    pub dd_entries: usize,
    /// See `dd_entries`.
    pub nonsmooth_entries: usize,
    /// See `dd_entries`.
    pub nonzero_entries: usize,
    /// Entries whose differences did not settle as the step shrank
    /// ([`crate::check::Counts::unresolved_entries`]).
    pub unresolved_entries: usize,
    /// Transformations and derivative runs.
    pub transformations: usize,
    /// See `transformations`.
    pub runs: usize,
    /// Runs whose output's bytes an earlier run of the same program had
    /// (read and run once, checked under every variant's name).
    pub reused_runs: usize,
    /// Files validated against the schemas.
    pub validated: usize,
    /// Loops checkpointed, refused and reversed instances checked
    /// (the checkpointing variant, [`crate::loops`]).
    pub checkpointed_loops: usize,
    /// See `checkpointed_loops`.
    pub refused_loops: usize,
    /// See `checkpointed_loops`.
    pub loop_instances: usize,
    /// Reversed instances by schedule, fixed-point marks given and
    /// refused ([`crate::check::Counts`]).
    pub binomial_instances: usize,
    /// See `binomial_instances`.
    pub online_instances: usize,
    /// See `binomial_instances`.
    pub exit_instances: usize,
    /// See `binomial_instances`.
    pub fixed_point_instances: usize,
    /// See `binomial_instances`.
    pub independent_instances: usize,
    /// See `binomial_instances`.
    pub fixed_point_loops: usize,
    /// See `binomial_instances`.
    pub refused_fixed_point_loops: usize,
    /// See `binomial_instances`.
    pub fixed_point_not_reached: usize,
    /// Programs showing each construct of the generator.
    pub constructs: BTreeMap<String, usize>,
    /// Wall time.
    pub wall: Duration,
}

impl Report {
    /// Failures grouped by check, in order of first appearance.
    pub fn classes(&self) -> Vec<(String, Vec<&Failure>)> {
        let mut out: Vec<(String, Vec<&Failure>)> = Vec::new();
        for f in &self.failures {
            match out.iter_mut().find(|(c, _)| *c == f.finding.check) {
                Some((_, v)) => v.push(f),
                None => out.push((f.finding.check.clone(), vec![f])),
            }
        }
        out
    }
}

/// Seed of program `k` of a campaign with seed `seed`.
pub fn program_seed(seed: u64, k: usize) -> u64 {
    let mut z = seed ^ (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Size of program `k` (cycling through 1..=max).
pub fn program_size(k: usize, max: usize) -> usize {
    1 + k % max.max(1)
}

/// Checks one generated program (no schema validation).
pub fn check_program(checker: &Checker, p: &gen::Program, seed: u64) -> crate::Outcome {
    let text = gen::to_xaif(p, "");
    checker.check_with_fixed_points(
        &text,
        p.n,
        p.m,
        &p.dead_names(),
        seed,
        None,
        &fixed_points(p),
    )
}

/// The fixed-point iterations of a generated program: (routine, line).
pub fn fixed_points(p: &gen::Program) -> Vec<(String, i64)> {
    gen::fixed_point_lines(p)
        .into_iter()
        .enumerate()
        .flat_map(|(r, lines)| {
            let name = p.routines[r].name.clone();
            lines.into_iter().map(move |l| (name.clone(), l as i64))
        })
        .collect()
}

/// The programs a checker's campaign draws: those with the loops the
/// loop marks are for when it checks them.
pub fn sequence(checker: &Checker) -> gen::Sequence {
    if checker.checkpoint_loops {
        gen::Sequence::LoopKinds
    } else {
        gen::Sequence::Default
    }
}

/// `xmllint --schema` over many files; the files that do not validate,
/// with xmllint's messages for them.
pub fn xmllint(schema: &Path, files: &[PathBuf]) -> Result<Vec<(PathBuf, String)>, String> {
    let mut bad = Vec::new();
    for chunk in files.chunks(100) {
        let out = Command::new("xmllint")
            .arg("--noout")
            .arg("--schema")
            .arg(schema)
            .args(chunk)
            .output()
            .map_err(|e| format!("cannot run xmllint: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        for f in chunk {
            let name = f.display().to_string();
            if !stderr.lines().any(|l| l == format!("{name} validates")) {
                let msgs: Vec<&str> = stderr
                    .lines()
                    .filter(|l| l.starts_with(&name) && !l.ends_with("validates"))
                    .take(5)
                    .collect();
                bad.push((f.clone(), msgs.join("\n")));
            }
        }
    }
    Ok(bad)
}

fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').chars().take(60).collect()
}

struct Shared {
    report: Report,
    pending_xsd: Vec<(usize, u64, usize, String, PathBuf)>,
}

impl Campaign {
    /// Runs the campaign, printing progress and one line per failure to
    /// standard error when `verbose`.
    pub fn run(&self, checker: &Checker, verbose: bool) -> Result<Report, String> {
        let start = Instant::now();
        std::fs::create_dir_all(&self.out)
            .map_err(|e| format!("cannot create {}: {e}", self.out.display()))?;
        let xsd_dir = self.out.join("xsd");
        if self.schema.is_some() {
            std::fs::create_dir_all(&xsd_dir)
                .map_err(|e| format!("cannot create {}: {e}", xsd_dir.display()))?;
        }
        let next = AtomicUsize::new(0);
        let shared = Mutex::new(Shared {
            report: Report::default(),
            pending_xsd: Vec::new(),
        });
        let quiet_panics = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let xsd_error: Mutex<Option<String>> = Mutex::new(None);
        std::thread::scope(|s| {
            for _ in 0..self.jobs.max(1) {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= self.programs {
                        break;
                    }
                    let k = self.first + i;
                    let seed = program_seed(self.seed, k);
                    let size = program_size(k, self.max_size);
                    let p = sequence(checker).program(seed, size);
                    let features = gen::features(&p);
                    let outcome = check_program(checker, &p, seed);
                    let mut files = Vec::new();
                    if self.schema.is_some() {
                        let input = xsd_dir.join(format!("{k}-input.xaif"));
                        if std::fs::write(&input, gen::to_xaif(&p, "")).is_ok() {
                            files.push((k, seed, size, "generated program".to_string(), input));
                        }
                        for (name, text) in &outcome.outputs {
                            let f = xsd_dir.join(format!("{k}-{}.xaif", slug(name)));
                            if std::fs::write(&f, text).is_ok() {
                                files.push((k, seed, size, name.clone(), f));
                            }
                        }
                    }
                    let mut sh = shared.lock().expect("no worker panics holding the lock");
                    let r = &mut sh.report;
                    r.programs += 1;
                    if outcome.skipped.is_some() {
                        r.skipped += 1;
                    }
                    r.dd_entries += outcome.counts.dd_entries;
                    r.nonsmooth_entries += outcome.counts.nonsmooth_entries;
                    r.nonzero_entries += outcome.counts.nonzero_entries;
                    r.unresolved_entries += outcome.counts.unresolved_entries;
                    r.transformations += outcome.counts.transformations;
                    r.runs += outcome.counts.runs;
                    r.reused_runs += outcome.counts.reused_runs;
                    r.checkpointed_loops += outcome.counts.checkpointed_loops;
                    r.refused_loops += outcome.counts.refused_loops;
                    r.loop_instances += outcome.counts.loop_instances;
                    let c = &outcome.counts;
                    r.binomial_instances += c.binomial_instances;
                    r.online_instances += c.online_instances;
                    r.exit_instances += c.exit_instances;
                    r.fixed_point_instances += c.fixed_point_instances;
                    r.independent_instances += c.independent_instances;
                    r.fixed_point_loops += c.fixed_point_loops;
                    r.refused_fixed_point_loops += c.refused_fixed_point_loops;
                    r.fixed_point_not_reached += c.fixed_point_not_reached;
                    for f in features {
                        *r.constructs.entry(f).or_default() += 1;
                    }
                    for finding in outcome.findings {
                        if verbose {
                            eprintln!("program {k} (seed {seed}, size {size}): {}", finding.check);
                        }
                        r.failures.push(Failure {
                            index: k,
                            seed,
                            size,
                            finding,
                            shrunk: None,
                        });
                    }
                    sh.pending_xsd.extend(files);
                    let batch = if sh.pending_xsd.len() >= 200 {
                        std::mem::take(&mut sh.pending_xsd)
                    } else {
                        Vec::new()
                    };
                    let done = sh.report.programs;
                    drop(sh);
                    if !batch.is_empty() {
                        if let Err(e) = self.validate(&shared, batch) {
                            *xsd_error.lock().expect("lock") = Some(e);
                        }
                    }
                    if verbose && done % 500 == 0 {
                        eprintln!("{done} programs, {:.0} s", start.elapsed().as_secs_f64());
                    }
                });
            }
        });
        std::panic::set_hook(quiet_panics);
        let rest = std::mem::take(&mut shared.lock().expect("lock").pending_xsd);
        self.validate(&shared, rest)?;
        if let Some(e) = xsd_error.into_inner().expect("lock") {
            return Err(e);
        }
        let mut report = shared.into_inner().expect("lock").report;
        report.failures.sort_by_key(|f| f.index);
        // One shrunk program per class.
        let classes: Vec<(String, usize)> = report
            .classes()
            .iter()
            .map(|(c, fs)| (c.clone(), fs[0].index))
            .collect();
        for (class, first) in classes {
            let f = report
                .failures
                .iter()
                .find(|f| f.index == first && f.finding.check == class)
                .cloned()
                .expect("listed");
            let path = self.shrink(checker, &f, verbose)?;
            for g in report
                .failures
                .iter_mut()
                .filter(|g| g.finding.check == class)
            {
                g.shrunk = Some(path.clone());
            }
        }
        if let Ok(entries) = std::fs::read_dir(&xsd_dir) {
            if entries.count() == 0 {
                let _ = std::fs::remove_dir(&xsd_dir);
            }
        }
        report.wall = start.elapsed();
        Ok(report)
    }

    fn validate(
        &self,
        shared: &Mutex<Shared>,
        batch: Vec<(usize, u64, usize, String, PathBuf)>,
    ) -> Result<(), String> {
        let Some(schema) = &self.schema else {
            return Ok(());
        };
        let (inputs, outputs): (Vec<_>, Vec<_>) =
            batch.into_iter().partition(|b| b.3 == "generated program");
        let mut failures = Vec::new();
        for (set, xsd) in [(&inputs, "xaif.xsd"), (&outputs, "xaif_output.xsd")] {
            let files: Vec<PathBuf> = set.iter().map(|b| b.4.clone()).collect();
            let bad = xmllint(&schema.join(xsd), &files)?;
            for (file, msg) in bad {
                let b = set.iter().find(|b| b.4 == file).expect("validated above");
                failures.push(Failure {
                    index: b.0,
                    seed: b.1,
                    size: b.2,
                    finding: Finding {
                        check: format!("{} is not valid against {xsd}", b.3),
                        variant: b.3.clone(),
                        detail: msg,
                    },
                    shrunk: None,
                });
            }
            for f in &files {
                let _ = std::fs::remove_file(f);
            }
            let mut sh = shared.lock().expect("lock");
            sh.report.validated += files.len();
        }
        shared
            .lock()
            .expect("lock")
            .report
            .failures
            .extend(failures);
        Ok(())
    }

    /// Shrinks the program of failure `f` to one that still fails the
    /// same check and writes it under `out`.
    fn shrink(&self, checker: &Checker, f: &Failure, verbose: bool) -> Result<PathBuf, String> {
        let class = f.finding.check.clone();
        let schema_check = class.contains("is not valid against");
        let fails = |p: &gen::Program| -> bool {
            if schema_check {
                return self.schema_fails(checker, p, &class);
            }
            let text = gen::to_xaif(p, "");
            checker
                .check_with_fixed_points(
                    &text,
                    p.n,
                    p.m,
                    &p.dead_names(),
                    f.seed,
                    Some(&f.finding.variant),
                    &fixed_points(p),
                )
                .findings
                .iter()
                .any(|x| x.check == class)
        };
        let quiet = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let p = sequence(checker).shrink(f.seed, f.size, self.shrink_steps, fails);
        std::panic::set_hook(quiet);
        let outcome = check_program(checker, &p, f.seed);
        let detail = outcome
            .findings
            .iter()
            .find(|x| x.check == class)
            .map(|x| x.detail.clone())
            .unwrap_or_else(|| f.finding.detail.clone());
        let comment = format!(
            "shrunk from program {} of campaign seed {} (program seed {}, size {}), n = {}, m = {}\nfinding: {class}\n{detail}",
            f.index, self.seed, f.seed, f.size, p.n, p.m
        );
        let path = self.out.join(format!("{}-{}.xaif", slug(&class), f.seed));
        std::fs::write(&path, gen::to_xaif(&p, &comment))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        if verbose {
            eprintln!("shrunk `{class}` to {}", path.display());
        }
        Ok(path)
    }

    fn schema_fails(&self, checker: &Checker, p: &gen::Program, class: &str) -> bool {
        let Some(schema) = &self.schema else {
            return false;
        };
        let dir = self.out.join("shrink");
        if std::fs::create_dir_all(&dir).is_err() {
            return false;
        }
        let mut files = Vec::new();
        let text = gen::to_xaif(p, "");
        if class.starts_with("generated program") {
            let f = dir.join("input.xaif");
            let _ = std::fs::write(&f, text);
            files.push((f, "xaif.xsd"));
        } else {
            let outcome = check_program(checker, p, 0);
            for (name, t) in outcome.outputs {
                if class.starts_with(&name) {
                    let f = dir.join(format!("{}.xaif", slug(&name)));
                    let _ = std::fs::write(&f, t);
                    files.push((f, "xaif_output.xsd"));
                }
            }
        }
        let mut failed = false;
        for (f, xsd) in files {
            failed |= xmllint(&schema.join(xsd), std::slice::from_ref(&f))
                .is_ok_and(|bad| !bad.is_empty());
            let _ = std::fs::remove_file(f);
        }
        failed
    }
}

/// The report as text: totals, then one line per failure with the shrunk
/// program of its class.
pub fn summary(c: &Campaign, r: &Report) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} programs ({}..{} of seed {}, sizes 1..={}, {} jobs) in {:.1} s: {} failures in {} classes; {} skipped (not finite); {} transformations, {} derivative runs ({} of outputs identical to an earlier one), {} files schema-validated; {} Jacobian entries against divided differences ({} non-smooth, {} unresolved), {} non-zero",
        r.programs,
        c.first,
        c.first + c.programs,
        c.seed,
        c.max_size,
        c.jobs,
        r.wall.as_secs_f64(),
        r.failures.len(),
        r.classes().len(),
        r.skipped,
        r.transformations,
        r.runs,
        r.reused_runs,
        r.validated,
        r.dd_entries,
        r.nonsmooth_entries,
        r.unresolved_entries,
        r.nonzero_entries
    );
    if r.checkpointed_loops + r.refused_loops > 0 {
        let _ = writeln!(
            s,
            "checkpointed loops: {} marked, {} refused (left by a jump, or their body unstructured by one); fixed-point loops: {} marked, {} refused; {} reversed instances checked: {} binomial, {} online ({} of them counted loops left by an exit), {} fixed-point ({} reported, with a warning, not to have reached their fixed point: Jacobian not compared), {} independent",
            r.checkpointed_loops,
            r.refused_loops,
            r.fixed_point_loops,
            r.refused_fixed_point_loops,
            r.loop_instances,
            r.binomial_instances,
            r.online_instances,
            r.exit_instances,
            r.fixed_point_instances,
            r.fixed_point_not_reached,
            r.independent_instances
        );
    }
    for f in &r.failures {
        let _ = writeln!(
            s,
            "program {} (seed {}, size {}): {} -> {}",
            f.index,
            f.seed,
            f.size,
            f.finding.check,
            f.shrunk
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "-".into())
        );
    }
    s
}
