//! `cargo xtask differential --reference PATH`: generated programs through
//! both engines, every output executed by the oracle and compared with
//! divided differences of the program.
//!
//! Program `k` of seed `S` is the same program as in `cargo xtask stress`
//! (`gen::program(program_seed(S, k), program_size(k, max))`), so that a
//! program found here can be shrunk and kept with the stress tools. Each
//! engine transforms it in tangent and adjoint mode, with the same
//! catalogues (the distribution's inlinable and non-inlinable ones) and
//! under the same address-space limit and timeout; `xaifb run` executes
//! every output (tangent; adjoint under the split and the joint template)
//! and `xaifb compare` holds the Jacobian against the divided differences
//! of the original program.
//!
//! Every outcome is classified per engine and mode. A finding, which makes
//! the task exit non-zero, is a program the reference engine gets right in
//! a mode where xaifb does not (fails, or gives other derivatives). The
//! reference engine is an optional tool for this task only: tests and CI
//! never need it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use xaif_stress::campaign::{program_seed, program_size};
use xaif_testkit::gen;
use xaif_testkit::robust::{exec, Config, End, Exec};

/// Options of `cargo xtask differential`.
#[derive(clap::Args)]
pub struct Args {
    /// The reference engine: its `oad` runner or a directory holding
    /// `bin/tangent-driver` and `bin/adjoint-driver`.
    #[arg(long)]
    reference: PathBuf,
    /// Campaign seed (the same programs as `cargo xtask stress --seed`).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of programs.
    #[arg(long, default_value_t = 100)]
    programs: usize,
    /// Index of the first program.
    #[arg(long, default_value_t = 0)]
    first: usize,
    /// Largest program size; sizes cycle from 1 to it (as in `stress`).
    #[arg(long, default_value_t = 8)]
    max_size: usize,
    /// Programs processed at once.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Address-space limit of one command, in MiB (the reference engine
    /// exhausts any amount of memory on some programs).
    #[arg(long, default_value_t = 2048)]
    memory_mib: u64,
    /// Time limit of one command, in seconds.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Relative tolerance against the divided differences.
    #[arg(long, default_value_t = 1e-4)]
    rel: f64,
    /// Absolute tolerance against the divided differences.
    #[arg(long, default_value_t = 1e-6)]
    abs: f64,
    /// The reference material (default: $XAIFB_SHARED or ../shared), for
    /// the schemas and catalogues.
    #[arg(long)]
    shared: Option<PathBuf>,
    /// The xaifb binary (default: build and use the release binary).
    #[arg(long)]
    xaifb: Option<PathBuf>,
    /// Where programs and outputs go (default: target/differential,
    /// emptied first).
    #[arg(long)]
    work: Option<PathBuf>,
    /// A flag given to both engines' adjoint transformation (repeatable),
    /// e.g. `-f` (checkpoints restored in store order) or `-I`: the
    /// reference's outputs with that flag are then run in split and joint
    /// mode like the others.
    #[arg(long = "adjoint-flag", allow_hyphen_values = true)]
    adjoint_flags: Vec<String>,
    /// Keep every program's directory (default: only those where
    /// something disagrees).
    #[arg(long)]
    keep: bool,
}

/// The derivative programs each engine writes and how they are driven.
const MODES: [(&str, &str); 3] = [
    ("tangent", "tangent"),
    ("split", "adjoint"),
    ("joint", "adjoint"),
];

/// The engines, in report order.
const ENGINES: [&str; 2] = ["reference", "xaifb"];

/// What happened to one program in one engine and mode.
const AGREES: &str = "agrees with divided differences";

/// Outcomes of one program: (engine, mode) → class.
type Outcomes = BTreeMap<(&'static str, &'static str), String>;

/// One row of the report: (engine, mode) → how many programs and the
/// first few of them.
type Cells<'a> = BTreeMap<(&'a str, &'a str), (usize, Vec<usize>)>;

/// Runs the task.
pub fn run(args: Args) -> Result<()> {
    let shared = args.shared.clone().unwrap_or_else(crate::shared_dir);
    let shared = shared
        .canonicalize()
        .with_context(|| format!("the reference material {}", shared.display()))?;
    let schema = shared.join("xaif/schema");
    let catalogue = schema.join("examples/inlinable_intrinsics.xaif");
    let noninlinable = schema.join("examples/noninlinable_intrinsics.xaif");
    for f in [&catalogue, &noninlinable] {
        if !f.is_file() {
            bail!("{} is missing", f.display());
        }
    }
    let (tangent_driver, adjoint_driver) = crate::versus::drivers(&args.reference)?;
    let xaifb = match &args.xaifb {
        Some(bin) => bin.canonicalize().context("the xaifb binary")?,
        None => crate::release_xaifb()?,
    };
    let work = args
        .work
        .clone()
        .unwrap_or_else(|| crate::target_dir().join("differential"));
    let work = if work.is_absolute() {
        work
    } else {
        std::env::current_dir()?.join(work)
    };
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;

    let mut cfg = Config::new(xaifb, shared.clone(), work.clone(), 0, args.seed);
    cfg.timeout = Duration::from_secs(args.timeout);
    cfg.memory = args.memory_mib << 20;
    // The robustness campaign's runner (limits, timeout, its own process
    // group) runs whatever binary its configuration names: one
    // configuration per engine's program.
    let with = |program: &Path| {
        let mut c = cfg.clone();
        c.xaifb = program.to_path_buf();
        c
    };
    let tools = Tools {
        xaifb: cfg.clone(),
        tangent: with(&tangent_driver),
        adjoint: with(&adjoint_driver),
        schema,
        catalogue,
        noninlinable,
        rel: args.rel,
        abs: args.abs,
        adjoint_flags: args.adjoint_flags.clone(),
        keep: args.keep,
    };

    let started = std::time::Instant::now();
    let next = AtomicUsize::new(args.first);
    let end = args.first + args.programs;
    let results: Mutex<Vec<(usize, Option<Outcomes>)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..args.jobs.max(1) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= end {
                    break;
                }
                let seed = program_seed(args.seed, k);
                let size = program_size(k, args.max_size);
                let p = gen::program(seed, size);
                let text = gen::to_xaif(
                    &p,
                    &format!(
                        "program {k} of differential seed {}: seed {seed}, size {size}",
                        args.seed
                    ),
                );
                let dir = work.join(k.to_string());
                let outcome = tools.program(&dir, &text, p.n, p.m);
                let mut done = results.lock().expect("no worker panics holding the lock");
                done.push((k, outcome));
                if done.len() % 25 == 0 {
                    eprintln!(
                        "{} programs, {:.0} s",
                        done.len(),
                        started.elapsed().as_secs_f64()
                    );
                }
            });
        }
    });
    let mut results = results.into_inner().expect("workers finished");
    results.sort_by_key(|r| r.0);
    let mut runs = format!(
        "Programs {}..{} of differential seed {} (sizes 1..={}), compared at relative {} / absolute {}",
        args.first,
        args.first + args.programs,
        args.seed,
        args.max_size,
        args.rel,
        args.abs,
    );
    if !args.adjoint_flags.is_empty() {
        runs.push_str(&format!(", adjoint flags {}", args.adjoint_flags.join(" ")));
    }
    let (report, findings) = render(&runs, &results);
    print!("{report}");
    if findings > 0 {
        bail!(
            "{findings} programs where the reference engine is right and xaifb is not (kept in {})",
            work.display()
        );
    }
    Ok(())
}

/// The commands of one campaign.
struct Tools {
    xaifb: Config,
    tangent: Config,
    adjoint: Config,
    schema: PathBuf,
    catalogue: PathBuf,
    noninlinable: PathBuf,
    rel: f64,
    abs: f64,
    adjoint_flags: Vec<String>,
    keep: bool,
}

impl Tools {
    /// Transforms and checks one program; `None` when its divided
    /// differences cannot be taken (not finite, or the program does not
    /// run), which leaves nothing to compare with.
    fn program(&self, dir: &Path, text: &str, n: usize, m: usize) -> Option<Outcomes> {
        std::fs::create_dir_all(dir).ok()?;
        std::fs::write(dir.join("in.xaif"), text).ok()?;
        let size = [
            "--n".to_string(),
            n.to_string(),
            "--m".into(),
            m.to_string(),
        ];
        let mut fd = s(&["run", "--fd", "in.xaif", "-o", "dd.out"]);
        fd.extend(size.iter().cloned());
        if !ok(&exec(&self.xaifb, dir, &fd)) {
            return None;
        }
        let mut outcomes = Outcomes::new();
        for engine in ENGINES {
            for kind in ["tangent", "adjoint"] {
                let out = format!("{engine}-{kind}.xaif");
                let transformed = self.transform(dir, engine, kind, &out);
                for (mode, from) in MODES {
                    if from != kind {
                        continue;
                    }
                    let class = match &transformed {
                        Err(class) => class.clone(),
                        Ok(()) => self.check(dir, &out, mode, &size),
                    };
                    outcomes.insert((engine, mode), class);
                }
            }
        }
        if !self.keep && outcomes.values().all(|c| c == AGREES) {
            let _ = std::fs::remove_dir_all(dir);
        }
        Some(outcomes)
    }

    /// Runs one engine's transformation; the class of its failure.
    fn transform(&self, dir: &Path, engine: &str, kind: &str, out: &str) -> Result<(), String> {
        let common = [
            "-s".to_string(),
            self.schema.display().to_string(),
            "-c".into(),
            self.catalogue.display().to_string(),
            "-N".into(),
            self.noninlinable.display().to_string(),
            "-i".into(),
            "in.xaif".into(),
            "-o".into(),
            out.into(),
        ];
        let mut common = common.to_vec();
        if kind == "adjoint" {
            common.extend(self.adjoint_flags.iter().cloned());
        }
        let e = if engine == "reference" {
            // The drivers fill schema defaults only while validating.
            let mut a = s(&["-v"]);
            a.extend(common);
            exec(
                if kind == "tangent" {
                    &self.tangent
                } else {
                    &self.adjoint
                },
                dir,
                &a,
            )
        } else {
            let mut a = vec![kind.to_string()];
            a.extend(common);
            exec(&self.xaifb, dir, &a)
        };
        if ok(&e) && dir.join(out).is_file() {
            return Ok(());
        }
        Err(format!("transformation fails: {}", failure(&e)))
    }

    /// Executes one output in `mode` and compares it with the divided
    /// differences.
    fn check(&self, dir: &Path, out: &str, mode: &str, size: &[String]) -> String {
        let jacobian = format!("{out}.{mode}.out");
        let mut a = s(&["run", "--mode", mode, out, "-o", &jacobian]);
        a.extend(size.iter().cloned());
        let e = exec(&self.xaifb, dir, &a);
        if !ok(&e) {
            return format!("output does not run: {}", failure(&e));
        }
        let rel = self.rel.to_string();
        let abs = self.abs.to_string();
        let c = exec(
            &self.xaifb,
            dir,
            &s(&["compare", "--rel", &rel, "--abs", &abs, "dd.out", &jacobian]),
        );
        match c.end {
            End::Code(0) => AGREES.into(),
            End::Code(1) => "wrong derivatives".into(),
            _ => format!("comparison fails: {}", failure(&c)),
        }
    }
}

/// Owned arguments.
fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Whether a command exited with 0.
fn ok(e: &Exec) -> bool {
    e.end == End::Code(0)
}

/// A short class for a failed command: how it ended and its first error
/// line with numbers, names and paths left out.
fn failure(e: &Exec) -> String {
    let stdout = String::from_utf8_lossy(&e.stdout);
    let text = format!("{}\n{stdout}", e.stderr).to_lowercase();
    if text.contains("bad_alloc") || text.contains("out of memory") {
        return "out of memory".into();
    }
    match e.end {
        End::Timeout => return "timeout".into(),
        End::Signal(9) => return "killed (memory)".into(),
        End::Signal(sig) if !text.contains("exception") => {
            return format!("signal {sig}");
        }
        _ => {}
    }
    // xaifb reports on standard error, the reference engine's drivers on
    // standard output.
    let error = |text: &str| -> Option<String> {
        text.lines()
            .rev()
            .find(|l| {
                let l = l.to_lowercase();
                l.contains("error") || l.contains("exception")
            })
            .map(str::to_string)
    };
    let line = error(&e.stderr)
        .or_else(|| error(&stdout))
        .or_else(|| {
            e.stderr
                .lines()
                .find(|l| !l.trim().is_empty())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "no message".into());
    normalize(&line)
}

/// `line` without file positions, quoted names and numbers, shortened.
fn normalize(line: &str) -> String {
    // The message after the last location prefix (`file:line:col:`).
    let msg = match line.find("exception:") {
        Some(i) => &line[i + "exception:".len()..],
        None => {
            let location = |part: &str| {
                part.starts_with("line ")
                    || part.starts_with("in `")
                    || part.ends_with(".xaif")
                    || part.contains(".xaif:")
            };
            let mut rest = line;
            while let Some((head, tail)) = rest.split_once(": ") {
                if !location(head) {
                    break;
                }
                rest = tail;
            }
            rest
        }
    };
    let mut out = String::new();
    let mut quoted = false;
    let mut last_digit = false;
    for c in msg.trim().chars() {
        match c {
            '`' => {
                if !quoted {
                    out.push('X');
                }
                quoted = !quoted;
            }
            _ if quoted => {}
            '0'..='9' => {
                if !last_digit {
                    out.push('N');
                }
            }
            _ => out.push(c),
        }
        last_digit = c.is_ascii_digit() && !quoted;
    }
    let mut out: String = out.chars().take(90).collect();
    if out.is_empty() {
        out.push_str("no message");
    }
    out
}

/// The report, and the number of findings (programs and modes where the
/// reference engine agrees with the divided differences and xaifb does
/// not); `runs` names the programs and the tolerances (the report's first
/// words).
fn render(runs: &str, results: &[(usize, Option<Outcomes>)]) -> (String, usize) {
    let mut r = String::new();
    let checked: Vec<(usize, &Outcomes)> = results
        .iter()
        .filter_map(|(k, o)| o.as_ref().map(|o| (*k, o)))
        .collect();
    let _ = writeln!(
        r,
        "{runs}: {} generated, {} with finite divided differences.\n",
        results.len(),
        checked.len(),
    );
    // Class → engine/mode → (count, first programs).
    let mut classes: BTreeMap<&str, Cells> = BTreeMap::new();
    for (k, o) in &checked {
        for ((engine, mode), class) in o.iter() {
            let e = classes
                .entry(class.as_str())
                .or_default()
                .entry((engine, mode))
                .or_default();
            e.0 += 1;
            if e.1.len() < 4 {
                e.1.push(*k);
            }
        }
    }
    let columns: Vec<(&str, &str)> = ENGINES
        .iter()
        .flat_map(|e| MODES.iter().map(move |(m, _)| (*e, *m)))
        .collect();
    let _ = write!(r, "| outcome |");
    for (e, m) in &columns {
        let _ = write!(r, " {e} {m} |");
    }
    let _ = write!(r, "\n|---|");
    for _ in &columns {
        let _ = write!(r, "---|");
    }
    r.push('\n');
    let mut order: Vec<&&str> = classes.keys().collect();
    order.sort_by_key(|c| (**c != AGREES, **c));
    for class in order {
        let row = &classes[*class];
        let _ = write!(r, "| {class} |");
        for col in &columns {
            match row.get(col) {
                Some((n, first)) => {
                    let ks: Vec<String> = first.iter().map(|k| k.to_string()).collect();
                    if **class == *AGREES {
                        let _ = write!(r, " {n} |");
                    } else {
                        let _ = write!(r, " {n} (e.g. {}) |", ks.join(", "));
                    }
                }
                None => r.push_str(" |"),
            }
        }
        r.push('\n');
    }
    // Findings: the reference agrees where xaifb does not.
    let mut findings = Vec::new();
    for (k, o) in &checked {
        for (mode, _) in MODES {
            let ours = &o[&("xaifb", mode)];
            if o[&("reference", mode)] == AGREES && ours != AGREES {
                findings.push(format!("program {k}, {mode}: xaifb: {ours}"));
            }
        }
    }
    let all_ours = checked
        .iter()
        .filter(|(_, o)| MODES.iter().all(|(m, _)| o[&("xaifb", *m)] == AGREES))
        .count();
    let all_ref = checked
        .iter()
        .filter(|(_, o)| MODES.iter().all(|(m, _)| o[&("reference", *m)] == AGREES))
        .count();
    let _ = writeln!(
        r,
        "\nRight in all three modes: xaifb {all_ours} of {n}, the reference engine {all_ref} of {n}.",
        n = checked.len()
    );
    if findings.is_empty() {
        let _ = writeln!(
            r,
            "Programs the reference engine gets right in a mode where xaifb does not: none."
        );
    } else {
        let _ = writeln!(
            r,
            "Programs the reference engine gets right in a mode where xaifb does not:"
        );
        for f in &findings {
            let _ = writeln!(r, "- {f}");
        }
    }
    let count = findings.len();
    (r, count)
}

#[cfg(test)]
mod tests {
    use super::{normalize, render, Outcomes, AGREES, ENGINES, MODES};

    /// Outcomes with every engine and mode agreeing but `xaifb`'s `mode`,
    /// which is `ours`.
    fn outcomes(mode: &str, ours: &str) -> Option<Outcomes> {
        let mut o = Outcomes::new();
        for e in ENGINES {
            for (m, _) in MODES {
                let class = if e == "xaifb" && m == mode {
                    ours
                } else {
                    AGREES
                };
                o.insert((e, m), class.to_string());
            }
        }
        Some(o)
    }

    #[test]
    fn a_program_the_reference_gets_right_and_xaifb_not_is_a_finding() {
        let results = vec![
            (0, outcomes("split", AGREES)),
            (1, outcomes("split", "wrong derivatives")),
            (2, None),
        ];
        let (report, findings) = render("runs", &results);
        assert_eq!(findings, 1, "{report}");
        assert!(
            report.contains("program 1, split: xaifb: wrong derivatives"),
            "{report}"
        );
        assert!(
            report.contains("3 generated, 2 with finite divided differences"),
            "{report}"
        );
        assert!(
            report.contains("xaifb 1 of 2, the reference engine 2 of 2"),
            "{report}"
        );
        // The reference wrong too: not a finding.
        let mut both = outcomes("joint", "output does not run: x").unwrap();
        both.insert(("reference", "joint"), "timeout".into());
        let (report, findings) = render("runs", &[(5, Some(both))]);
        assert_eq!(findings, 0, "{report}");
        assert!(report.contains("| timeout |"), "{report}");
    }

    #[test]
    fn failures_are_classed_without_positions_names_or_numbers() {
        assert_eq!(
            normalize("out.xaif: line 1687: in `head`: type error: a subscript of `Y` that is not an integer"),
            "type error: a subscript of X that is not an integer"
        );
        assert_eq!(
            normalize("0:oadDriver.cpp:85:ERROR::caught exception: (ControlFlowGraph.cpp:473)LogicException: cannot use this for if"),
            "(ControlFlowGraph.cpp:N)LogicException: cannot use this for if"
        );
        assert_eq!(normalize(""), "no message");
    }
}
