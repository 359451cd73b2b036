//! `xaifb run` and `xaifb compare`: the numerical oracle on the command
//! line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};
use clap::{Args, ValueEnum};
use xaif_interp::{compare, Harness, HarnessSpec, Jacobian, Mode, Params};

/// Modes of `xaifb run`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum RunMode {
    /// Evaluate the function and print the dependents.
    Plain,
    /// Tangent-linear output: one run per independent.
    Tangent,
    /// Adjoint output under the split template.
    Split,
    /// Adjoint output under the joint template.
    Joint,
}

/// Arguments of `xaifb run`.
#[derive(Args)]
pub struct RunArgs {
    /// The XAIF program to execute.
    pub file: PathBuf,
    /// What kind of program it is and how to drive it.
    #[arg(long, value_enum, default_value = "plain")]
    pub mode: RunMode,
    /// Number of independents (default: from params.conf).
    #[arg(long)]
    pub n: Option<usize>,
    /// Number of dependents (default: from params.conf).
    #[arg(long)]
    pub m: Option<usize>,
    /// params.conf (default: the one beside FILE, if any).
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// harness.json of an example with its own driver (default: the one
    /// beside FILE, if any; otherwise the generic head(x, y) driver).
    #[arg(long)]
    pub harness: Option<PathBuf>,
    /// Start values of the independents, comma-separated (default: i/2).
    #[arg(long, value_delimiter = ',')]
    pub x0: Option<Vec<f64>>,
    /// Print the divided-difference Jacobian of the program (dd.out format)
    /// instead.
    #[arg(long)]
    pub fd: bool,
    /// Divided-difference step (default: from params.conf, else 1e-6).
    #[arg(long)]
    pub h: Option<f64>,
    /// Write the run's statistics as JSON to this file.
    #[arg(long)]
    pub stats_json: Option<PathBuf>,
    /// Write the Jacobian to this file instead of standard output.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Maximum number of executed statements and control flow vertices.
    #[arg(long, default_value_t = 200_000_000)]
    pub step_budget: u64,
    /// Execute markers for statements the XAIF does not carry (READ,
    /// untranslated calls, pointer stores, dropped stores) as no-ops instead
    /// of refusing: only when you know they do not change the numbers.
    #[arg(long)]
    pub inert_markers: bool,
}

fn sibling(file: &Path, name: &str) -> Option<PathBuf> {
    let p = file.parent()?.join(name);
    p.is_file().then_some(p)
}

/// Runs `xaifb run`.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    let (program, source) = match crate::input::read_program(&args.file) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return Ok(ExitCode::from(1));
        }
    };
    if let Err(e) = xaif_model::validate_program(&program, &source) {
        eprintln!("{e}");
        return Ok(ExitCode::from(1));
    }
    let params_path = args
        .params
        .clone()
        .or_else(|| sibling(&args.file, "params.conf"));
    let params = match &params_path {
        Some(p) => Some(
            Params::parse(&crate::input::read_text(p)?).map_err(|e| crate::input::invalid(p, e))?,
        ),
        None => None,
    };
    let harness_path = args
        .harness
        .clone()
        .or_else(|| sibling(&args.file, "harness.json"));
    let mut spec = match &harness_path {
        Some(p) => HarnessSpec::parse_json(&crate::input::read_text(p)?)
            .map_err(|e| crate::input::invalid(p, e))?,
        None => {
            let n = args
                .n
                .or(params.map(|p| p.n))
                .ok_or_else(|| anyhow!("give --n or --params"))?;
            let m = args
                .m
                .or(params.map(|p| p.m))
                .ok_or_else(|| anyhow!("give --m or --params"))?;
            HarnessSpec::generic(n, m)
        }
    };
    if let Some(x0) = &args.x0 {
        if x0.len() != spec.n {
            bail!("--x0 has {} values for {} independents", x0.len(), spec.n);
        }
        spec.x0 = x0.clone();
    }
    let prog = xaif_interp::compile_with(
        &program,
        &source,
        xaif_interp::CompileOptions {
            inert_markers: args.inert_markers,
        },
    );
    let mut harness = Harness::new(&prog, spec);
    harness.step_budget = args.step_budget;
    let file = args.file.display().to_string();
    let (text, stats) = if args.fd {
        let h = args.h.or(params.map(|p| p.h)).unwrap_or(1e-6);
        match harness.divided_differences(h) {
            Ok(j) => (j.to_out("DD"), None),
            Err(e) => {
                eprintln!("{file}: {e}");
                return Ok(ExitCode::from(1));
            }
        }
    } else {
        let mode = match args.mode {
            RunMode::Plain => Mode::Plain,
            RunMode::Tangent => Mode::Tangent,
            RunMode::Split => Mode::Split,
            RunMode::Joint => Mode::Joint,
        };
        match harness.run(mode) {
            Ok(outcome) => {
                let text = if mode == Mode::Plain {
                    outcome
                        .jacobian
                        .entries
                        .iter()
                        .enumerate()
                        .map(|(k, y)| format!("y({:3})={}\n", k + 1, xaif_interp::fortran_en(*y)))
                        .collect()
                } else {
                    outcome.jacobian.to_out("AD")
                };
                (text, Some(outcome))
            }
            Err(e) => {
                eprintln!("{file}: {e}");
                return Ok(ExitCode::from(1));
            }
        }
    };
    // The Jacobian file and the statistics file: both or neither.
    let mut outputs = crate::output::Outputs::new();
    if let Some(path) = &args.output {
        outputs.add(path, text.as_bytes())?;
    }
    if let Some(outcome) = &stats {
        let s = &outcome.stats;
        eprintln!(
            "tape: {} doubles and {} integers pushed, peaks {} / {}, {}; checkpoint peak {}; flops: plain {} / run original {} + derivative {}",
            s.doubles_pushed,
            s.integers_pushed,
            s.peak_double_tape,
            s.peak_integer_tape,
            if outcome.tapes_empty { "all tapes empty at the end" } else { "TAPES NOT EMPTY at the end" },
            s.peak_checkpoint,
            outcome.plain_flops,
            s.flops_original,
            s.flops_derivative
        );
    }
    if let Some(path) = &args.stats_json {
        let report = match &stats {
            Some(o) => serde_json::json!({
                "file": file,
                "mode": format!("{:?}", args.mode).to_lowercase(),
                "tapes_empty": o.tapes_empty,
                "plain_flops": o.plain_flops,
                "stats": o.stats,
            }),
            None => serde_json::json!({ "file": file, "mode": "fd" }),
        };
        outputs.add(path, serde_json::to_string_pretty(&report)?.as_bytes())?;
    }
    outputs.commit()?;
    if args.output.is_none() {
        print!("{text}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `xaifb compare`.
#[derive(Args)]
pub struct CompareArgs {
    /// First Jacobian file (ad.out format).
    pub a: PathBuf,
    /// Second Jacobian file.
    pub b: PathBuf,
    /// Relative tolerance.
    #[arg(long, default_value_t = 1e-10)]
    pub rel: f64,
    /// Absolute tolerance.
    #[arg(long, default_value_t = 1e-13)]
    pub abs: f64,
}

/// Runs `xaifb compare`: exit 0 when the files agree within the tolerances.
pub fn compare_files(args: CompareArgs) -> Result<ExitCode> {
    let read = |p: &Path| -> Result<Jacobian> {
        let text = crate::input::read_text(p)?;
        Ok(Jacobian::parse(&text).map_err(|e| crate::input::invalid(p, e))?)
    };
    let (a, b) = (read(&args.a)?, read(&args.b)?);
    let c = match compare(&a, &b, args.rel, args.abs) {
        Ok(c) => c,
        Err(e) => {
            // Jacobians that cannot be compared are inputs in error.
            eprintln!("{} versus {}: {e}", args.a.display(), args.b.display());
            return Ok(ExitCode::from(1));
        }
    };
    println!(
        "worst absolute difference {:.3e}, worst relative difference {:.3e}",
        c.max_abs, c.max_rel
    );
    for (k, i, x, y) in &c.mismatches {
        println!("F({k},{i}): {x:e} versus {y:e}");
    }
    Ok(if c.matches() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
