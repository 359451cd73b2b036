//! `cargo xtask`: the repository's chores as a small Rust program.
//!
//! Tasks that need more than one cargo command (build this, run that,
//! measure the result) live here rather than in shell scripts, so they run
//! the same on every machine that has cargo. `cargo xtask` is an alias in
//! `.cargo/config.toml`.
//!
//! - `cargo xtask bench`: the criterion benchmark of the model (read,
//!   validate, write throughput), then the peak memory of `xaifb roundtrip`
//!   on the largest corpus file relative to its size. See
//!   `docs/performance.md`.
//! - `cargo xtask corpus`: the numerical oracle over the whole regression
//!   corpus, on the reference outputs and on ours, as the table
//!   `docs/corpus-status.md`.
//! - `cargo xtask speed`: oracle throughput on the heaviest corpus runs,
//!   transformation time per input and per batch (for
//!   `docs/performance.md`), and how long a runaway program runs under the
//!   default limits of `xaifb run` (for `docs/limits.md`).
//! - `cargo xtask gen`: a generated front-end program of any size (see
//!   `xaif_testkit::scale`), for the figures at scale.
//! - `cargo xtask elim-report`: the elimination over every corpus graph
//!   (proofs, gaps, the exact method's reach, the elimination alone timed
//!   per effort level) as `docs/elimination.md`.
//! - `cargo xtask elim-exact [FILE…]`: the exhaustive effort on medium and
//!   large graphs beside the default effort (the table of
//!   `docs/elimination.md`'s exact section).
//! - `cargo xtask versus --reference PATH`: xaifb and the reference engine
//!   side by side, whole process, alternating runs (`docs/performance.md`).
//! - `cargo xtask install [--root DIR]`: the xaifb an OpenAD installation
//!   runs, statically linked on GNU/Linux for a quick start per file.
//! - `cargo xtask differential --reference PATH`: generated programs
//!   through both engines, every derivative output executed and held
//!   against divided differences (`docs/testing.md`).
//! - `cargo xtask same-bytes --baseline BIN`: outputs byte for byte those of
//!   an earlier build, and the same with `--jobs 1` and `--jobs N`.
//! - `cargo xtask stress --programs N --seed S [--jobs J]`: generated
//!   programs under every differential check; see `docs/testing.md`.
//! - `cargo xtask robust --mutants N --seed S [--first K]`: the robustness
//!   campaign (mutants of corpus inputs and generated programs through
//!   every subcommand, file-system and signal cases; `--first` runs a slice
//!   of a longer campaign); exits non-zero on any finding. See
//!   `docs/testing.md`.
//! - `cargo xtask runtime`: writes `runtime/oad_revolve_snapshots.f90`
//!   (the Fortran snapshot store of checkpointed loops) from the table of
//!   the types a snapshot holds; a test checks the file is up to date.
//! - `cargo xtask loop-sweep`: every loop of every corpus example that
//!   runs under the generic harness, marked alone with every kind and
//!   setting, against the unmarked adjoint in split and joint mode; exits
//!   non-zero on any finding (`docs/testing.md`).
//! - `cargo xtask deep`: transformation time on a 10⁴-deep expression (of
//!   scalars and of arrays) and 10⁴ nested `If`s (linear time in depth;
//!   `docs/performance.md`).

mod corpus;
mod deep;
mod differential;
mod elim;
mod engine;
mod exact;
mod install;
mod runtime;
mod same_bytes;
mod speed;
mod stress;
mod versus;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

/// The largest file of the reference corpus, relative to the reference
/// material directory.
const LARGEST: &str = "corpus/examples/graphEx2/admjointhead_sf.pre.xb.xaif";

/// Environment variable naming the reference material directory (as in
/// `xaif-testkit`).
const SHARED_ENV: &str = "XAIFB_SHARED";

/// Peak memory target: at most this many times the input size.
const MEMORY_TARGET: f64 = 10.0;

/// Repository tasks.
#[derive(Parser)]
#[command(name = "xtask", about)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Run the model benchmark and measure peak memory of a round trip.
    Bench(BenchArgs),
    /// Run the oracle over the corpus (reference outputs and ours) and
    /// write docs/corpus-status.md.
    Corpus(CorpusArgs),
    /// Measure the oracle's throughput and xaifb's transformation time on
    /// the corpus; prints markdown.
    Speed(CorpusArgs),
    /// Check generated programs: tangent against divided differences,
    /// adjoints against the tangent, every strategy and flag variant,
    /// schemas, determinism; shrink what fails.
    Stress(stress::StressArgs),
    /// Mark every loop of every corpus example that runs under the generic
    /// harness with every kind and setting, alone, and hold each accepted
    /// mark's adjoint to the unmarked one in split and joint mode; exit
    /// non-zero on any finding.
    LoopSweep(LoopSweepArgs),
    /// Time tangent and adjoint on a deep expression and deeply nested
    /// `If`s; prints markdown.
    Deep(DeepArgs),
    /// Run the elimination over every corpus graph (proofs, gaps, the
    /// exact method's reach, the elimination alone timed per effort) and
    /// write docs/elimination.md.
    ElimReport(ElimReportArgs),
    /// Search medium and large graphs exhaustively (the corpus's, or the
    /// given graphs and programs) beside the default effort; prints the
    /// table of docs/elimination.md's exact section.
    ElimExact(exact::Args),
    /// Write a generated front-end program of the given size.
    Gen(GenArgs),
    /// Time xaifb and the reference engine side by side (whole process,
    /// alternating runs) on the corpus, its largest inputs and generated
    /// programs; prints markdown.
    Versus(versus::Args),
    /// Generated programs through xaifb and the reference engine, every
    /// derivative output executed and compared with divided differences;
    /// exits non-zero where the reference engine is right and xaifb not.
    Differential(differential::Args),
    /// Check that outputs are byte for byte those of a baseline xaifb, and
    /// the same with --jobs 1 and --jobs N.
    SameBytes(same_bytes::Args),
    /// Run the robustness campaign: mutants through every subcommand under
    /// a memory limit and a timeout; exit non-zero on any finding.
    Robust(RobustArgs),
    /// Build the xaifb an OpenAD installation runs: statically linked on
    /// GNU/Linux, so that starting it per file loads nothing; with
    /// `--root DIR`, copy it to DIR/bin/xaifb.
    Install(install::Args),
    /// Write runtime/oad_revolve_snapshots.f90 (the Fortran snapshot
    /// store of checkpointed loops) from the table of the types a
    /// snapshot holds.
    Runtime,
    /// Run a command and print its peak resident set size in KiB (used by
    /// `bench`, in a process of its own so that no other child counts).
    #[command(hide = true)]
    PeakRss {
        /// The command and its arguments.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<OsString>,
    },
}

#[derive(Args)]
struct CorpusArgs {
    /// The reference material (default: $XAIFB_SHARED or ../shared).
    #[arg(long)]
    shared: Option<PathBuf>,
    /// Where the table goes.
    #[arg(long, default_value = "docs/corpus-status.md")]
    out: PathBuf,
}

#[derive(Args)]
struct DeepArgs {
    /// Depth of the expression and of the `If` nest.
    #[arg(long, default_value_t = 10_000)]
    n: usize,
    /// Runs per measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// The reference material (default: $XAIFB_SHARED or ../shared), for
    /// the intrinsics catalogue.
    #[arg(long)]
    shared: Option<PathBuf>,
    /// Time this xaifb binary instead of building the workspace's.
    #[arg(long)]
    xaifb: Option<PathBuf>,
}

#[derive(Args)]
struct ElimReportArgs {
    /// The reference material (default: $XAIFB_SHARED or ../shared).
    #[arg(long)]
    shared: Option<PathBuf>,
    /// Where the report goes.
    #[arg(long, default_value = "docs/elimination.md")]
    out: PathBuf,
    /// Only time the elimination alone (every effort but `max`) and print
    /// the table; nothing is written.
    #[arg(long)]
    timing: bool,
    /// With `--timing`: only the graphs of these corpus examples.
    #[arg(long)]
    only: Vec<String>,
    /// With `--timing`: only these effort levels (none, fast, default).
    #[arg(long)]
    effort: Vec<String>,
    /// With `--timing`: rounds per measurement (the median is reported).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Write every distinct graph of the tangent inputs to this directory
    /// (text form, one `.lcg` file each) instead of the report.
    #[arg(long)]
    dump: Option<PathBuf>,
    /// With `--dump`: the graphs of this program (built-in catalogue
    /// options, no flags) instead of the corpus's.
    #[arg(long)]
    input: Option<PathBuf>,
}

#[derive(Args)]
struct GenArgs {
    /// Number of routines.
    #[arg(long, default_value_t = 100)]
    routines: usize,
    /// Statements in all.
    #[arg(long, default_value_t = 10_000)]
    statements: usize,
    /// Seed choosing fragments and callees (same seed, same bytes).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Basic blocks drawn from the corpus's distribution of graph sizes,
    /// heavy flux-like blocks included (`xaif_testkit::model`), instead
    /// of the few fragments of `xaif_testkit::scale`.
    #[arg(long)]
    realistic: bool,
    /// Instead: one routine of this many nested `If`s
    /// (`xaif_testkit::deep::nested_ifs`), the deep input of the memory
    /// limit checks (`docs/limits.md`, "Memory").
    #[arg(long)]
    nested_ifs: Option<usize>,
    /// Also transform the program (tangent) and print its graph
    /// statistics: sizes, distinct shapes, the elimination's time.
    #[arg(long)]
    stats: bool,
    /// Output file.
    #[arg(short = 'o', long)]
    out: PathBuf,
}

#[derive(Args)]
struct RobustArgs {
    /// Number of mutants.
    #[arg(long, default_value_t = 200)]
    mutants: usize,
    /// Number of the first mutant: `--first K --mutants N` runs mutants K
    /// to K+N-1 of the seed, the same as in one longer run (a long campaign
    /// in slices).
    #[arg(long, default_value_t = 0)]
    first: usize,
    /// Share of program mutants made from a program generated for them
    /// alone.
    #[arg(long, default_value_t = 0.2)]
    generated: f64,
    /// `--time-limit` of every `run` (seconds; a runaway mutant reaches it
    /// in each of its runs).
    #[arg(long, default_value_t = 1.0)]
    run_time_limit: f64,
    /// Seed: the same seed gives the same mutants.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Mutants processed at once.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Seconds one command may take before it counts as a hang.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Address-space limit of one command, in MiB.
    #[arg(long, default_value_t = 2048)]
    memory_mib: u64,
    /// Skip the checks that need xmllint.
    #[arg(long)]
    no_schema: bool,
    /// Only this mutant (to reproduce a finding).
    #[arg(long)]
    only: Option<usize>,
    /// Scratch directory (findings are kept in its findings/).
    #[arg(long)]
    work: Option<PathBuf>,
    /// The reference material (default: $XAIFB_SHARED or ../shared).
    #[arg(long)]
    shared: Option<PathBuf>,
    /// Test this xaifb binary instead of building the workspace's.
    #[arg(long)]
    xaifb: Option<PathBuf>,
    /// Largest expression depth and element repetition of the deep and
    /// wide mutations.
    #[arg(long, default_value_t = 50_000)]
    max_repeat: usize,
    /// Leave out the `memory limit` class (every subcommand on large
    /// generated inputs under `--memory-mib` and `--tight-memory-mib`,
    /// with and without the second thread).
    #[arg(long)]
    no_limit_cases: bool,
    /// The tight limit of the `memory limit` class, MiB.
    #[arg(long, default_value_t = 512)]
    tight_memory_mib: u64,
    /// Runs of each command and limit of the `memory limit` class (all
    /// must give the same outcome).
    #[arg(long, default_value_t = 2)]
    limit_repeats: usize,
    /// Only these subcommands in the `memory limit` class
    /// (comma-separated).
    #[arg(long, value_delimiter = ',')]
    limit_commands: Vec<String>,
    /// Nesting of the large input of nested `If`s.
    #[arg(long, default_value_t = 30_000)]
    large_ifs: usize,
    /// Statements of the large generated program (0: none).
    #[arg(long, default_value_t = 100_000)]
    large_statements: usize,
    /// Time limit of one command of the `memory limit` class, seconds.
    #[arg(long, default_value_t = 300)]
    large_timeout: u64,
    /// Interrupts at random moments of large transformations.
    #[arg(long, default_value_t = 24)]
    interrupts: usize,
    /// Keep a CPU-heavy process running for the whole campaign (some
    /// failures show only under load).
    #[arg(long)]
    load: bool,
}

#[derive(Args)]
struct BenchArgs {
    /// Skip the criterion benchmark; only measure peak memory.
    #[arg(long)]
    memory_only: bool,
    /// Input for the memory measurement (default: the largest corpus file).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Arguments passed on to the criterion benchmark (after `--`), e.g. a
    /// filter such as `largest`.
    #[arg(last = true)]
    criterion_args: Vec<String>,
}

fn main() -> Result<()> {
    match Cli::parse().task {
        Task::Bench(args) => bench(args),
        Task::Corpus(args) => {
            let shared = args.shared.unwrap_or_else(shared_dir);
            let out = if args.out.is_absolute() {
                args.out
            } else {
                repo_root().join(args.out)
            };
            corpus::run(&shared, &out).map_err(|e| anyhow::anyhow!(e))
        }
        Task::ElimReport(args) => {
            let shared = args.shared.unwrap_or_else(shared_dir);
            let out = if args.out.is_absolute() {
                args.out
            } else {
                repo_root().join(args.out)
            };
            if let Some(dir) = &args.dump {
                return elim::dump(&shared, dir, args.input.as_deref())
                    .map_err(|e| anyhow::anyhow!(e));
            }
            if args.timing {
                return elim::timing(&shared, &args.only, &args.effort, args.rounds)
                    .map_err(|e| anyhow::anyhow!(e));
            }
            elim::run(&shared, &out).map_err(|e| anyhow::anyhow!(e))
        }
        Task::ElimExact(args) => {
            let shared = args.shared.clone().unwrap_or_else(shared_dir);
            exact::run(args, &shared).map_err(|e| anyhow::anyhow!(e))
        }
        Task::Speed(args) => {
            let shared = args.shared.unwrap_or_else(shared_dir);
            let xaifb = release_xaifb()?;
            let report = speed::run(&shared, &xaifb).map_err(|e| anyhow::anyhow!(e))?;
            print!("{report}");
            let runaway = repo_root().join("fixtures/interp/runaway.xaif");
            print!(
                "{}",
                speed::runaway(&xaifb, &runaway).map_err(|e| anyhow::anyhow!(e))?
            );
            Ok(())
        }
        Task::Stress(args) => stress::run(args),
        Task::LoopSweep(args) => loop_sweep(args),
        Task::Deep(args) => {
            let shared = args.shared.unwrap_or_else(shared_dir);
            let xaifb = match args.xaifb {
                Some(bin) => bin,
                None => release_xaifb()?,
            };
            let catalogue = shared.join("xaif/schema/examples/inlinable_intrinsics.xaif");
            deep::run(&xaifb, &catalogue, args.n, args.runs.max(1))
        }
        Task::Gen(args) => {
            let shape = xaif_testkit::scale::Shape {
                routines: args.routines,
                statements: args.statements,
                seed: args.seed,
            };
            let text = if let Some(n) = args.nested_ifs {
                xaif_testkit::deep::nested_ifs(n)
            } else if args.realistic {
                xaif_testkit::model::program(&shape)
            } else {
                xaif_testkit::scale::program(&shape)
            };
            std::fs::write(&args.out, text)
                .with_context(|| format!("writing {}", args.out.display()))?;
            if args.stats {
                let shared = shared_dir();
                print!(
                    "{}",
                    elim::program_stats(&shared, &args.out).map_err(anyhow::Error::msg)?
                );
            }
            Ok(())
        }
        Task::Versus(args) => versus::run(args),
        Task::Install(args) => install::run(args),
        Task::Runtime => runtime::run(&repo_root()),
        Task::Differential(args) => differential::run(args),
        Task::SameBytes(args) => same_bytes::run(args),
        Task::Robust(args) => robust(args),
        Task::PeakRss { command } => {
            let kib = peak_rss_kib(&command)?;
            println!("{kib}");
            Ok(())
        }
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the repository root")
        .to_path_buf()
}

/// Arguments of `cargo xtask loop-sweep`.
#[derive(Args)]
struct LoopSweepArgs {
    /// The reference material (default: $XAIFB_SHARED or ../shared).
    #[arg(long)]
    shared: Option<PathBuf>,
    /// One setting per kind (2 snapshots; tolerance 1e-12, 1,000
    /// iterations), as the test suite's sweep, instead of every setting.
    #[arg(long)]
    quick: bool,
    /// Only the examples whose name contains this.
    #[arg(long)]
    only: Option<String>,
}

/// `cargo xtask loop-sweep`: prints the summary; an error on any finding.
fn loop_sweep(args: LoopSweepArgs) -> Result<()> {
    use xaif_stress::corpus_loops::{summary, sweep, Sweep};
    let shared = args.shared.unwrap_or_else(shared_dir);
    let mut settings = if args.quick {
        Sweep::quick()
    } else {
        Sweep::exhaustive()
    };
    settings.only = args.only;
    let start = std::time::Instant::now();
    let report = sweep(&shared, &settings).map_err(anyhow::Error::msg)?;
    print!("{}", summary(&report));
    println!("{:.1} s", start.elapsed().as_secs_f64());
    if !report.findings.is_empty() {
        bail!("{} findings", report.findings.len());
    }
    Ok(())
}

/// The reference material: `$XAIFB_SHARED`, or `../shared` beside the
/// repository.
pub(crate) fn shared_dir() -> PathBuf {
    std::env::var_os(SHARED_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared"))
}

pub(crate) fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(repo_root());
    cmd
}

pub(crate) fn run(mut cmd: Command) -> Result<()> {
    let status = cmd.status().with_context(|| format!("running {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// Builds the workspace's ordinary (dynamically linked) release xaifb and
/// returns its path: what the tasks run unless given `--xaifb`.
pub(crate) fn release_xaifb() -> Result<PathBuf> {
    let mut build = cargo();
    build.args(["build", "--release", "-p", "xaifb"]);
    run(build)?;
    Ok(target_dir().join("release").join("xaifb"))
}

pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"))
}

fn bench(args: BenchArgs) -> Result<()> {
    if !args.memory_only {
        let mut cmd = cargo();
        cmd.args(["bench", "-p", "xaif-model", "--bench", "model", "--"]);
        cmd.args(&args.criterion_args);
        run(cmd)?;
    }

    let input = match args.input {
        Some(p) => p,
        None => {
            let p = shared_dir().join(LARGEST);
            if !p.is_file() {
                println!(
                    "peak memory: skipped, {} not found (set {SHARED_ENV} or pass --input)",
                    p.display()
                );
                return Ok(());
            }
            p
        }
    };
    let xaifb = release_xaifb()?;
    let out = std::env::temp_dir().join(format!("xtask-bench-{}.xaif", std::process::id()));

    // Measure in a child xtask process, so that getrusage(RUSAGE_CHILDREN)
    // there sees xaifb alone and not the cargo builds above.
    let measured = Command::new(std::env::current_exe()?)
        .arg("peak-rss")
        .arg(&xaifb)
        .args(["roundtrip", "-j", "1"])
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .output()
        .context("running the peak-memory helper")?;
    std::fs::remove_file(&out).ok();
    if !measured.status.success() {
        bail!(
            "peak-memory helper failed: {}",
            String::from_utf8_lossy(&measured.stderr)
        );
    }
    let kib: u64 = String::from_utf8_lossy(&measured.stdout)
        .trim()
        .parse()
        .context("peak-memory helper output")?;
    let input_bytes = std::fs::metadata(&input)?.len();
    let ratio = (kib * 1024) as f64 / input_bytes as f64;
    println!(
        "peak memory of `xaifb roundtrip -j 1 {}`: {:.1} MB for {:.2} MB of input = {ratio:.2}x input ({} the {MEMORY_TARGET}x target)",
        input.display(),
        (kib * 1024) as f64 / 1e6,
        input_bytes as f64 / 1e6,
        if ratio <= MEMORY_TARGET { "meets" } else { "MISSES" },
    );
    Ok(())
}

fn robust(args: RobustArgs) -> Result<()> {
    let shared = args.shared.unwrap_or_else(shared_dir);
    let xaifb = match args.xaifb {
        Some(bin) => bin.canonicalize().context("the xaifb binary")?,
        None => release_xaifb()?,
    };
    let work = args.work.unwrap_or_else(|| target_dir().join("robust"));
    let work = if work.is_absolute() {
        work
    } else {
        std::env::current_dir()?.join(work)
    };
    let mut cfg = xaif_testkit::robust::Config::new(
        xaifb,
        shared.canonicalize().context("the reference material")?,
        work.clone(),
        args.mutants,
        args.seed,
    );
    cfg.jobs = args.jobs;
    cfg.timeout = std::time::Duration::from_secs(args.timeout);
    cfg.memory = args.memory_mib << 20;
    cfg.schema = !args.no_schema
        && Command::new("xmllint")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    cfg.only = args.only;
    cfg.first = args.first;
    cfg.generated = args.generated;
    cfg.run_time_limit = args.run_time_limit;
    cfg.max_repeat = args.max_repeat;
    cfg.limit_cases = !args.no_limit_cases;
    cfg.tight_memory = args.tight_memory_mib << 20;
    cfg.limit_repeats = args.limit_repeats;
    cfg.limit_commands = args.limit_commands;
    cfg.large_ifs = args.large_ifs;
    cfg.large_statements = args.large_statements;
    cfg.interrupts = args.interrupts;
    cfg.large_timeout = std::time::Duration::from_secs(args.large_timeout);
    // Another CPU-heavy process: a shell spinning until the campaign ends.
    let mut load = if args.load {
        Some(
            Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .context("the load process")?,
        )
    } else {
        None
    };
    // The campaign holds mutants of up to tens of MB per job: bound its own
    // address space, so that a bug in it ends it rather than the machine.
    // SAFETY: setrlimit on this process with a valid struct.
    unsafe {
        let limit = libc::rlimit {
            rlim_cur: 8 << 30,
            rlim_max: 8 << 30,
        };
        libc::setrlimit(libc::RLIMIT_AS, &limit);
    }
    let report = xaif_testkit::robust::run(&cfg);
    if let Some(l) = load.as_mut() {
        let _ = l.kill();
        let _ = l.wait();
    }
    print!("{}", report.render());
    if !report.findings.is_empty() {
        bail!(
            "{} findings; reproducers in {}",
            report.findings.len(),
            work.join("findings").display()
        );
    }
    Ok(())
}

/// Runs `command` to completion and returns its peak resident set size.
fn peak_rss_kib(command: &[OsString]) -> Result<u64> {
    let status = Command::new(&command[0])
        .args(&command[1..])
        .status()
        .with_context(|| format!("running {:?}", command[0]))?;
    if !status.success() {
        bail!("{command:?} failed with {status}");
    }
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) != 0 {
            bail!("getrusage failed: {}", std::io::Error::last_os_error());
        }
        usage
    };
    // Linux reports ru_maxrss in KiB.
    Ok(u64::try_from(usage.ru_maxrss).unwrap_or(0))
}
