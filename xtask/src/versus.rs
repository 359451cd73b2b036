//! `cargo xtask versus --reference PATH`: xaifb and the reference engine
//! side by side on the same machine in the same run.
//!
//! Both engines run as whole processes (spawned directly, no shell), in
//! turns (reference, xaifb, reference, xaifb, …, the order swapped every
//! round), each writing a fresh output file; every figure is a median over
//! rounds and every ratio the median of the rounds' ratios, with the
//! smallest and largest ratio as its spread. On a shared, noisy machine a
//! ratio measured this way holds even when absolute times do not.
//!
//! Peak memory is each child's own `ru_maxrss` from `wait4`.
//!
//! The reference engine is an optional tool for this benchmark only: tests
//! and CI never need it. Its drivers fill schema defaults only while
//! validating, so they always get `-v -s SCHEMA`; xaifb gets `-s SCHEMA`
//! (the same `schemaLocation` in the output) and gates its input with its
//! built-in checks (`--xaifb-validate` adds its `-v`, which runs `xmllint`).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use xaif_interp::corpus::read_index;

/// The parts of the benchmark.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Part {
    /// Every corpus input, one process per file, tangent and adjoint.
    Corpus,
    /// The five largest corpus inputs, tangent and adjoint.
    Largest,
    /// Generated programs (`--sizes`), tangent and adjoint.
    Generated,
}

/// The generated programs of `cargo xtask versus`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Programs {
    /// Both kinds.
    Both,
    /// `xaif_testkit::scale`: a few fragments repeated.
    Scale,
    /// `xaif_testkit::model`: blocks drawn from the corpus's graphs.
    Realistic,
}

/// Options of `cargo xtask versus`.
#[derive(clap::Args)]
pub struct Args {
    /// The reference engine: its `oad` runner (the drivers it unpacks are
    /// then spawned directly) or a directory holding `bin/tangent-driver`
    /// and `bin/adjoint-driver`.
    #[arg(long)]
    reference: PathBuf,
    /// The reference material (default: $XAIFB_SHARED or ../shared).
    #[arg(long)]
    shared: Option<PathBuf>,
    /// The xaifb binary (default: build the one `cargo xtask install`
    /// installs, statically linked on GNU/Linux, and use it).
    #[arg(long)]
    xaifb: Option<PathBuf>,
    /// Without `--xaifb`: build and use the ordinary dynamically linked
    /// release binary instead.
    #[arg(long)]
    dynamic: bool,
    /// Parts to run (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Part>,
    /// Rounds over the corpus.
    #[arg(long, default_value_t = 5)]
    corpus_rounds: usize,
    /// Rounds on each of the largest inputs.
    #[arg(long, default_value_t = 11)]
    largest_rounds: usize,
    /// Rounds on each generated program of up to 10^4 statements.
    #[arg(long, default_value_t = 3)]
    generated_rounds: usize,
    /// Rounds on each larger generated program (the reference engine takes
    /// minutes there).
    #[arg(long, default_value_t = 1)]
    large_rounds: usize,
    /// Sizes of the generated programs, in statements (100 per routine).
    #[arg(long, value_delimiter = ',', default_values_t = [1_000usize, 10_000, 100_000])]
    sizes: Vec<usize>,
    /// Which generated programs: the few fragments of `cargo xtask gen`,
    /// the realistic ones of `cargo xtask gen --realistic`, or both.
    #[arg(long, value_enum, default_value = "both")]
    programs: Programs,
    /// Generated programs larger than this run with xaifb alone.
    #[arg(long, default_value_t = 100_000)]
    reference_max: usize,
    /// Worker threads of xaifb (its `--jobs`; default: xaifb's own).
    #[arg(long)]
    jobs: Option<usize>,
    /// Also pass `-v` to xaifb (validation of every input by xmllint).
    #[arg(long)]
    xaifb_validate: bool,
    /// An elimination cache (as `cargo xtask elim-exact --cache DIR` fills
    /// it): the realistic programs' operations with the cache are
    /// reported beside those of the default effort and the reference's
    /// chain.
    #[arg(long)]
    elim_cache: Option<PathBuf>,
    /// Where inputs and outputs go (default: a temporary directory, removed
    /// at the end).
    #[arg(long)]
    work: Option<PathBuf>,
}

/// One process run.
#[derive(Clone, Copy)]
struct Sample {
    secs: f64,
    peak_kib: u64,
    ok: bool,
}

/// Spawns `cmd` (output to `out`, removed first), waits for it with
/// `wait4`, and returns its wall time and peak resident set size.
fn measure(program: &Path, args: &[OsString], out: &Path) -> Result<Sample> {
    let _ = std::fs::remove_file(out);
    let start = Instant::now();
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("spawning {}", program.display()))?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: wait4 writes only into the zeroed rusage and the status we
    // pass; the child is ours and not waited for elsewhere.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::wait4(pid, &mut status, 0, &mut usage) != pid {
            bail!("wait4 failed: {}", std::io::Error::last_os_error());
        }
        usage
    };
    let secs = start.elapsed().as_secs_f64();
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 && out.is_file();
    Ok(Sample {
        secs,
        peak_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        ok,
    })
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn spread(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// The two engines and how to call them.
struct Engines {
    tangent_driver: PathBuf,
    adjoint_driver: PathBuf,
    xaifb: PathBuf,
    schema: PathBuf,
    catalogue: PathBuf,
    noninlinable: PathBuf,
    jobs: Option<usize>,
    xaifb_validate: bool,
}

/// One transformation to time: mode, input and the example's flags.
struct Job {
    adjoint: bool,
    input: PathBuf,
    /// `-S`, `-D`, `-r`, `-N` (with the non-inlinable catalogue), `-I`.
    flags: Vec<&'static str>,
}

impl Engines {
    fn args(&self, job: &Job, out: &Path, reference: bool) -> (PathBuf, Vec<OsString>) {
        let mut a: Vec<OsString> = Vec::new();
        let program = if reference {
            a.extend(["-v".into(), "-s".into(), self.schema.clone().into()]);
            if job.adjoint {
                self.adjoint_driver.clone()
            } else {
                self.tangent_driver.clone()
            }
        } else {
            a.push(if job.adjoint { "adjoint" } else { "tangent" }.into());
            a.extend(["-s".into(), self.schema.clone().into()]);
            if self.xaifb_validate {
                a.push("-v".into());
            }
            if let Some(j) = self.jobs {
                a.push(format!("--jobs={j}").into());
            }
            self.xaifb.clone()
        };
        a.extend(["-c".into(), self.catalogue.clone().into()]);
        for f in &job.flags {
            a.push(f.into());
            if *f == "-N" {
                a.push(self.noninlinable.clone().into());
            }
        }
        a.extend(["-i".into(), job.input.clone().into()]);
        a.extend(["-o".into(), out.into()]);
        (program, a)
    }

    /// Runs `job` once with the reference engine and once with xaifb (in
    /// the order `reference_first` says).
    fn pair(&self, job: &Job, work: &Path, reference_first: bool) -> Result<(Sample, Sample)> {
        let mut r = None;
        let mut x = None;
        for reference in [reference_first, !reference_first] {
            let out = work.join(if reference { "ref.xaif" } else { "xaifb.xaif" });
            let (program, args) = self.args(job, &out, reference);
            let s = measure(&program, &args, &out)?;
            if reference {
                r = Some(s);
            } else {
                x = Some(s);
            }
        }
        Ok((r.expect("ran"), x.expect("ran")))
    }

    fn xaifb_only(&self, job: &Job, work: &Path) -> Result<Sample> {
        let out = work.join("xaifb.xaif");
        let (program, args) = self.args(job, &out, false);
        measure(&program, &args, &out)
    }
}

/// The reference engine's drivers: from its `oad` runner (run once so that
/// it unpacks them) or from a directory.
pub(crate) fn drivers(reference: &Path) -> Result<(PathBuf, PathBuf)> {
    let find = |dir: &Path| -> Option<(PathBuf, PathBuf)> {
        for d in [dir.join("bin"), dir.to_path_buf()] {
            let (t, a) = (d.join("tangent-driver"), d.join("adjoint-driver"));
            if t.is_file() && a.is_file() {
                return Some((t, a));
            }
        }
        None
    };
    if reference.is_dir() {
        return find(reference)
            .with_context(|| format!("no bin/tangent-driver in {}", reference.display()));
    }
    // The runner unpacks its drivers on first use (and prints its usage
    // when given no mode).
    let _ = Command::new(reference)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .with_context(|| format!("running {}", reference.display()))?;
    let dir = std::env::var_os("XAIFBOOSTER_REF_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("xaifbooster-ref"));
    find(&dir).with_context(|| {
        format!(
            "{} did not unpack its drivers into {}",
            reference.display(),
            dir.display()
        )
    })
}

/// The engine flags of a corpus example's `options` file.
fn example_flags(options: &str, adjoint: bool) -> Vec<&'static str> {
    let mut f = Vec::new();
    for (flag, text) in [
        ("-S", "'-S'"),
        ("-D", "'-D'"),
        ("-r", "'-r'"),
        ("-N", "'-N "),
    ] {
        if options.contains(text) {
            f.push(flag);
        }
    }
    if adjoint {
        f.push("-I");
    }
    f
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
}

/// Runs the benchmark and prints its report.
pub fn run(args: Args) -> Result<()> {
    let shared = args.shared.clone().unwrap_or_else(crate::shared_dir);
    let (xaifb, which) = match &args.xaifb {
        Some(p) => (p.clone(), format!("`{}`", p.display())),
        None => {
            let built = crate::install::build(args.dynamic)?;
            (built.path, built.linking.describe().to_string())
        }
    };
    let (tangent_driver, adjoint_driver) = drivers(&args.reference)?;
    let schema = shared.join("xaif/schema").canonicalize()?;
    let engines = Engines {
        tangent_driver,
        adjoint_driver,
        xaifb,
        catalogue: schema.join("examples/inlinable_intrinsics.xaif"),
        noninlinable: schema.join("examples/noninlinable_intrinsics.xaif"),
        schema,
        jobs: args.jobs,
        xaifb_validate: args.xaifb_validate,
    };
    let (work, temporary) = match &args.work {
        Some(w) => (w.clone(), false),
        None => (
            std::env::temp_dir().join(format!("xtask-versus-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&work)?;
    let parts = if args.only.is_empty() {
        vec![Part::Corpus, Part::Largest, Part::Generated]
    } else {
        args.only.clone()
    };
    let mut report = String::new();
    let _ = writeln!(
        report,
        "xaifb versus the reference engine, whole process, alternating runs; xaifb {which}; load average at start {}.\n",
        load()
    );
    print!("{report}");
    let examples = read_index(&shared.join("corpus")).map_err(anyhow::Error::msg)?;
    if parts.contains(&Part::Corpus) {
        let s = corpus(&engines, &examples, &work, args.corpus_rounds)?;
        print!("{s}");
        report.push_str(&s);
    }
    if parts.contains(&Part::Largest) {
        let s = largest(&engines, &examples, &work, args.largest_rounds)?;
        print!("{s}");
        report.push_str(&s);
    }
    if parts.contains(&Part::Generated) {
        let s = generated(&engines, &args, &work)?;
        print!("{s}");
        report.push_str(&s);
    }
    let end = format!("\nLoad average at the end: {}.\n", load());
    print!("{end}");
    if temporary {
        std::fs::remove_dir_all(&work).ok();
    }
    Ok(())
}

/// Every corpus input, one process per file: per round, each file by both
/// engines in turn; the round's totals give its ratio.
fn corpus(
    engines: &Engines,
    examples: &[xaif_interp::corpus::Example],
    work: &Path,
    rounds: usize,
) -> Result<String> {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "### Corpus, one process per file ({rounds} rounds)\n\n| mode | inputs | reference, per round | xaifb, per round | reference per file | xaifb per file | ratio (median, min–max) | above the floor |\n|---|---|---|---|---|---|---|---|"
    );
    let mut notes = String::new();
    for adjoint in [false, true] {
        let jobs: Vec<Job> = examples
            .iter()
            .filter(|e| e.input(adjoint).is_file())
            .map(|e| Job {
                adjoint,
                input: e.input(adjoint),
                flags: example_flags(&e.options, adjoint),
            })
            .collect();
        // Inputs either engine refuses are left out of both totals.
        let mut refused = vec![false; jobs.len()];
        let mut totals: Vec<(Vec<f64>, Vec<f64>)> = Vec::new();
        // A process that does nothing, spawned the same way once per input
        // after each pair: what starting any process costs here.
        let mut floor: Vec<f64> = Vec::new();
        let nothing = work.join("nothing.out");
        for round in 0..rounds {
            let mut per: Vec<(f64, f64)> = Vec::with_capacity(jobs.len());
            for (k, job) in jobs.iter().enumerate() {
                let (r, x) = engines.pair(job, work, (round + k) % 2 == 0)?;
                if !r.ok || !x.ok {
                    refused[k] = true;
                }
                per.push((r.secs, x.secs));
                floor.push(measure(Path::new("true"), &[], &nothing)?.secs);
            }
            totals.push(per.into_iter().unzip());
        }
        let kept = refused.iter().filter(|r| !**r).count();
        let f = median(&floor);
        let (mut rt, mut xt, mut ratio, mut above) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (r, x) in &totals {
            let sum = |v: &Vec<f64>| -> f64 {
                v.iter()
                    .zip(&refused)
                    .filter(|(_, r)| !**r)
                    .map(|(t, _)| t)
                    .sum()
            };
            let (a, b) = (sum(r), sum(x));
            rt.push(a);
            xt.push(b);
            ratio.push(a / b);
            // The work above the process floor: each engine's time less
            // one start of a process per file.
            let start = f * kept as f64;
            above.push((a - start) / (b - start));
        }
        let (lo, hi) = spread(&ratio);
        let (alo, ahi) = spread(&above);
        let (mr, mx) = (median(&rt), median(&xt));
        let _ = writeln!(
            s,
            "| {} | {kept} of {} | {mr:.2} s | {mx:.3} s | {:.1} ms | {:.2} ms | **{:.1}×** ({lo:.1}–{hi:.1}) | **{:.1}×** ({alo:.1}–{ahi:.1}) |",
            if adjoint { "adjoint (-I)" } else { "tangent" },
            jobs.len(),
            mr / kept.max(1) as f64 * 1e3,
            mx / kept.max(1) as f64 * 1e3,
            median(&ratio),
            median(&above),
        );
        let _ = writeln!(
            notes,
            "\n{}: starting a process that does nothing (`true`, spawned the same way) takes {:.2} ms here (median over {} spawns); with that alone per file, the ratio could be at most {:.0}×.",
            if adjoint { "Adjoint" } else { "Tangent" },
            f * 1e3,
            floor.len(),
            mr / kept.max(1) as f64 / f,
        );
        let names: Vec<String> = jobs
            .iter()
            .zip(&refused)
            .filter(|(_, r)| **r)
            .map(|(j, _)| j.input.display().to_string())
            .collect();
        if !names.is_empty() {
            let _ = writeln!(
                notes,
                "\nLeft out ({}: refused by either engine): {}",
                names.len(),
                names.join(", ")
            );
        }
    }
    let _ = writeln!(
        s,
        "\nAbove the floor: (reference − floor) / (xaifb − floor) per round, the floor counted once per file.\n{notes}"
    );
    Ok(s)
}

/// Formats one row of a side-by-side table from paired samples, each
/// with the time of starting a process that does nothing measured right
/// after it (the floor).
fn row(name: &str, input: &Path, pairs: &[(Sample, Sample, f64)]) -> String {
    let size = std::fs::metadata(input).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    let ok = pairs.iter().all(|(r, x, _)| r.ok && x.ok);
    let rt: Vec<f64> = pairs.iter().map(|p| p.0.secs).collect();
    let xt: Vec<f64> = pairs.iter().map(|p| p.1.secs).collect();
    let ratio: Vec<f64> = pairs.iter().map(|p| p.0.secs / p.1.secs).collect();
    let floors: Vec<f64> = pairs.iter().map(|p| p.2).collect();
    let floor = median(&floors);
    let above: Vec<f64> = pairs
        .iter()
        .map(|p| (p.0.secs - floor) / (p.1.secs - floor))
        .collect();
    let (lo, hi) = spread(&ratio);
    let (alo, ahi) = spread(&above);
    let rm = pairs.iter().map(|p| p.0.peak_kib).max().unwrap_or(0);
    let xm = pairs.iter().map(|p| p.1.peak_kib).max().unwrap_or(0);
    format!(
        "| {name} | {size:.2} MB | {:.3} s | {:.3} s | **{:.1}×** ({lo:.1}–{hi:.1}) | {:.1}× ({alo:.1}–{ahi:.1}) | {:.2} ms | {:.0} MB | {:.0} MB | {:.2} |{}\n",
        median(&rt),
        median(&xt),
        median(&ratio),
        median(&above),
        floor * 1e3,
        mb(rm),
        mb(xm),
        xm as f64 / rm.max(1) as f64,
        if ok { "" } else { " (a run failed)" }
    )
}

const TABLE_HEAD: &str = "| input | size | reference | xaifb | ratio (median, min–max) | above the floor | floor | reference peak | xaifb peak | memory ratio |\n|---|---|---|---|---|---|---|---|---|---|\n";

/// One pair of runs and the floor measured right after it.
fn pair_with_floor(
    engines: &Engines,
    job: &Job,
    work: &Path,
    reference_first: bool,
) -> Result<(Sample, Sample, f64)> {
    let (r, x) = engines.pair(job, work, reference_first)?;
    let floor = measure(Path::new("true"), &[], &work.join("nothing.out"))?.secs;
    Ok((r, x, floor))
}

/// The five largest corpus inputs, in both modes.
fn largest(
    engines: &Engines,
    examples: &[xaif_interp::corpus::Example],
    work: &Path,
    rounds: usize,
) -> Result<String> {
    let mut s = format!("### The five largest corpus inputs ({rounds} rounds)\n\n{TABLE_HEAD}");
    for adjoint in [false, true] {
        let mut by_size: Vec<(u64, &xaif_interp::corpus::Example)> = examples
            .iter()
            .filter(|e| e.input(adjoint).is_file())
            .map(|e| {
                let len = std::fs::metadata(e.input(adjoint)).map(|m| m.len());
                (len.unwrap_or(0), e)
            })
            .collect();
        by_size.sort_by_key(|(len, e)| (std::cmp::Reverse(*len), e.name.clone()));
        for (_, e) in by_size.into_iter().take(5) {
            let job = Job {
                adjoint,
                input: e.input(adjoint),
                flags: example_flags(&e.options, adjoint),
            };
            let mut pairs = Vec::new();
            for round in 0..rounds {
                pairs.push(pair_with_floor(engines, &job, work, round % 2 == 0)?);
            }
            let mode = if adjoint { "adjoint -I" } else { "tangent" };
            s.push_str(&row(&format!("{} {mode}", e.name), &job.input, &pairs));
        }
    }
    s.push('\n');
    Ok(s)
}

/// Generated programs of the requested sizes, 100 statements per routine.
fn generated(engines: &Engines, args: &Args, work: &Path) -> Result<String> {
    let mut s = format!(
        "### Generated programs (`cargo xtask gen [--realistic] --routines S/100 --statements S --seed 1`; {} rounds up to 10^4 statements, {} above)\n\n{TABLE_HEAD}",
        args.generated_rounds, args.large_rounds
    );
    let mut alone = String::new();
    let mut outputs = Vec::new();
    let mut operations = String::new();
    let shared = args.shared.clone().unwrap_or_else(crate::shared_dir);
    let cache = args.elim_cache.as_ref().map(|dir| {
        xaif_elim::CacheHandle::new(dir.clone(), std::sync::Arc::new(|t: &str| eprintln!("{t}")))
    });
    let programs = args
        .sizes
        .iter()
        .flat_map(|&size| [(size, false), (size, true)])
        .filter(|&(_, realistic)| match args.programs {
            Programs::Both => true,
            Programs::Scale => !realistic,
            Programs::Realistic => realistic,
        });
    for (size, realistic) in programs {
        let rounds = if size <= 10_000 {
            args.generated_rounds
        } else {
            args.large_rounds
        };
        let kind = if realistic { " (realistic)" } else { "" };
        let input = work.join(format!("generated-{size}-{realistic}.xaif"));
        let shape = xaif_testkit::scale::Shape {
            routines: (size / 100).max(1),
            statements: size,
            seed: 1,
        };
        let text = if realistic {
            xaif_testkit::model::program(&shape)
        } else {
            xaif_testkit::scale::program(&shape)
        };
        std::fs::write(&input, text)?;
        if realistic {
            let ops = crate::exact::operations(&shared, &input, cache.as_ref())
                .map_err(anyhow::Error::msg)?;
            for (mode, (chain, default, cached)) in ["tangent", "adjoint"].iter().zip(ops) {
                let ratio = |x: u64| x as f64 / chain.max(1) as f64;
                let _ = writeln!(
                    operations,
                    "| {size} statements, {mode} | {chain} | {default} ({:.3}) | {} |",
                    ratio(default),
                    if cache.is_some() {
                        format!("{cached} ({:.3})", ratio(cached))
                    } else {
                        "–".to_string()
                    }
                );
            }
        }
        for adjoint in [false, true] {
            let job = Job {
                adjoint,
                input: input.clone(),
                flags: if adjoint { vec!["-I"] } else { vec![] },
            };
            let mode = if adjoint { "adjoint -I" } else { "tangent" };
            if size <= args.reference_max {
                let mut pairs = Vec::new();
                for round in 0..rounds {
                    pairs.push(pair_with_floor(engines, &job, work, round % 2 == 0)?);
                }
                s.push_str(&row(
                    &format!("{size} statements{kind}, {mode}"),
                    &input,
                    &pairs,
                ));
            } else {
                let mut samples = Vec::new();
                for _ in 0..rounds {
                    samples.push(engines.xaifb_only(&job, work)?);
                }
                let t: Vec<f64> = samples.iter().map(|x| x.secs).collect();
                let peak = samples.iter().map(|x| x.peak_kib).max().unwrap_or(0);
                let _ = writeln!(
                    alone,
                    "| {size} statements{kind}, {mode} | {:.2} MB | {:.3} s | {:.0} MB |{}",
                    std::fs::metadata(&input)?.len() as f64 / 1e6,
                    median(&t),
                    mb(peak),
                    if samples.iter().all(|x| x.ok) {
                        ""
                    } else {
                        " (a run failed)"
                    }
                );
            }
            let out = work.join("xaifb.xaif");
            if let Ok(m) = std::fs::metadata(&out) {
                outputs.push(format!(
                    "{size}{kind} {mode}: {:.1} MB",
                    m.len() as f64 / 1e6
                ));
            }
        }
        std::fs::remove_file(&input).ok();
    }
    if !alone.is_empty() {
        let _ = write!(
            s,
            "\nxaifb alone:\n\n| input | size | xaifb | xaifb peak |\n|---|---|---|---|\n{alone}"
        );
    }
    let _ = writeln!(s, "\nxaifb's output sizes: {}.\n", outputs.join("; "));
    if !operations.is_empty() {
        let _ = write!(
            s,
            "Operations of the realistic programs' eliminations (model units summed over every graph of the \
             tangent transformation, `-M 1 -A 1` as `cargo xtask elim-exact`; ratio to the chain): the \
             reference's chain, xaifb's default effort, and the default effort with `--elim-cache` (what a \
             build with that cache writes, e.g. after `cargo xtask elim-exact PROGRAM --cache DIR`).\n\n\
             | program | chain | default | with the cache |\n|---|---|---|---|\n{operations}\n"
        );
    }
    Ok(s)
}
