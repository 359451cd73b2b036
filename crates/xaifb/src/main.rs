//! `xaifb`: the XAIF transformation engine's command-line driver.
//!
//! The driver is the only place that prints or decides exit codes; the
//! library crates return typed errors. Exit codes:
//!
//! - 0: every input was processed successfully;
//! - 1: at least one input is invalid (read, validation or schema errors)
//!   or could not be processed; the others were still processed;
//! - 2: the command line is wrong;
//! - 3: the environment is wrong (no inputs found, schema directory or tool
//!   missing, output not writable).

mod analyze;
mod batch;
mod compat;
mod modes;
mod output;
mod run;
mod schema;
mod shims;
mod transform;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, CommandFactory, Parser, Subcommand};

/// xaifb reads, validates and transforms XAIF, the XML interface format of
/// the OpenAD automatic differentiation tool chain.
#[derive(Parser)]
#[command(name = "xaifb", version, about, args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Read, validate and write XAIF back unchanged (same infoset).
    Roundtrip(RoundtripArgs),
    /// Check XAIF files: model checks, and XSD validation with --schema.
    Validate(ValidateArgs),
    /// Execute XAIF and print its Jacobian in the ad.out format.
    Run(run::RunArgs),
    /// Compare two Jacobian files (ad.out format).
    Compare(run::CompareArgs),
    /// Transform front-end XAIF into tangent-linear XAIF.
    Tangent(transform::TransformArgs),
    /// Transform front-end XAIF into adjoint XAIF (split and joint
    /// templates).
    Adjoint(transform::AdjointArgs),
    /// Transform front-end XAIF into trace XAIF (OpenAD's trace mode:
    /// placeholder 2 records calls, non-smooth intrinsics and active
    /// control flow when run).
    Trace(transform::TransformArgs),
    /// Convert arguments at call sites between active and passive, and
    /// nothing else (OpenAD's TypeChange driver).
    Typechange(transform::TransformArgs),
    /// Activity and to-be-recorded analyses: print what is active and what
    /// must be recorded, per routine and statement.
    Analyze(analyze::AnalyzeArgs),
    /// Write the four oadDriver paths of an xaifBooster installation under
    /// DIR, calling this xaifb, so that XAIFBOOSTERROOT=DIR makes OpenAD
    /// use it.
    Shims(shims::ShimsArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff).
    Man,
}

#[derive(Args)]
struct BatchArgs {
    /// Worker threads for many inputs (default: available cores).
    #[arg(long, short = 'j')]
    jobs: Option<usize>,
    /// Print a line for every file, not only for failures.
    #[arg(long)]
    verbose: bool,
}

#[derive(Args)]
struct RoundtripArgs {
    /// Input files or directories (searched for *.xaif).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output file (one input file) or directory (several inputs or a
    /// directory; relative paths are kept).
    #[arg(short = 'o', long = "output", required = true)]
    output: PathBuf,
    #[command(flatten)]
    batch: BatchArgs,
}

#[derive(Args)]
struct ValidateArgs {
    /// Input files or directories (searched for *.xaif).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Directory of the XAIF schemas (xaif.xsd, xaif_output.xsd, …); also
    /// taken from XAIF_SCHEMA_DIR. Enables XSD validation with xmllint.
    #[arg(long)]
    schema: Option<PathBuf>,
    #[command(flatten)]
    batch: BatchArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Roundtrip(args) => roundtrip(args),
        Command::Validate(args) => validate(args),
        Command::Run(args) => run::run(args),
        Command::Compare(args) => run::compare_files(args),
        Command::Tangent(args) => transform::tangent(args),
        Command::Adjoint(args) => transform::adjoint(args),
        Command::Trace(args) => modes::trace(args),
        Command::Typechange(args) => modes::typechange(args),
        Command::Analyze(args) => analyze::analyze(args),
        Command::Shims(args) => shims::shims(args),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "xaifb", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => clap_mangen::Man::new(Cli::command())
            .render(&mut std::io::stdout())
            .map(|_| ExitCode::SUCCESS)
            .map_err(Into::into),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("xaifb: {e:#}");
            ExitCode::from(3)
        }
    }
}

fn jobs(args: &BatchArgs) -> usize {
    args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

fn exit_for(failed: usize) -> ExitCode {
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Reads and gates one file; the error is the full report.
fn load(input: &Path) -> std::result::Result<xaif_model::Parsed, String> {
    let parsed = xaif_model::read_file(input).map_err(|e| e.to_string())?;
    xaif_model::validate_document(&parsed.document, &parsed.source).map_err(|e| e.to_string())?;
    Ok(parsed)
}

fn roundtrip(args: RoundtripArgs) -> Result<ExitCode> {
    let inputs = batch::collect_inputs(&args.inputs)?;
    if inputs.is_empty() {
        bail!("no .xaif files found");
    }
    let single = inputs.len() == 1 && args.inputs.len() == 1 && args.inputs[0].is_file();
    let to_dir = !single || args.output.is_dir();
    let outcomes = batch::run(&inputs, jobs(&args.batch), |input, rel| {
        let parsed = load(input)?;
        let text = xaif_model::write_document(&parsed.document);
        let dest = if to_dir {
            args.output.join(rel)
        } else {
            args.output.clone()
        };
        output::write_atomic(&dest, text.as_bytes())
            .map_err(|e| format!("{}: {e:#}", input.display()))?;
        Ok(Some(format!("written to {}", dest.display())))
    });
    let failed = batch::report(&outcomes, "roundtrip", args.batch.verbose);
    Ok(exit_for(failed))
}

fn validate(args: ValidateArgs) -> Result<ExitCode> {
    let inputs = batch::collect_inputs(&args.inputs)?;
    if inputs.is_empty() {
        bail!("no .xaif files found");
    }
    let schema_dir = schema::schema_dir(args.schema.as_deref());
    if let Some(dir) = &schema_dir {
        if !dir.is_dir() {
            bail!("schema directory {} not found", dir.display());
        }
        std::process::Command::new("xmllint")
            .arg("--version")
            .output()
            .context("xmllint is needed for --schema (install libxml2-utils)")?;
    }
    if schema_dir.is_none() {
        eprintln!(
            "xaifb: schema validation skipped: no schema directory (--schema or XAIF_SCHEMA_DIR); model checks only"
        );
    }
    let outcomes = batch::run(&inputs, jobs(&args.batch), |input, _| {
        let parsed = load(input)?;
        if let Some(dir) = &schema_dir {
            let xsd = schema::schema_for(&parsed.document);
            schema::xmllint(input, dir, xsd).map_err(|e| format!("{e:#}"))?;
            return Ok(Some(format!("valid ({xsd})")));
        }
        Ok(Some(
            "valid (model checks; schema validation skipped)".into(),
        ))
    });
    let failed = batch::report(&outcomes, "validate", args.batch.verbose);
    Ok(exit_for(failed))
}
