//! `xaifb roundtrip` and `xaifb validate`: documents read and gated, then
//! written back unchanged or checked against the schema, one file or a
//! whole batch.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::report::job_failure;

/// Options of every batch command.
#[derive(Args)]
pub struct BatchArgs {
    /// Worker threads for many inputs (default: available cores).
    #[arg(long, short = 'j', value_parser = crate::flags::worker_count, allow_hyphen_values = true)]
    pub jobs: Option<usize>,
    /// Print a line for every file, not only for failures.
    #[arg(long)]
    pub verbose: bool,
}

/// Arguments of `xaifb roundtrip`.
#[derive(Args)]
pub struct RoundtripArgs {
    /// Input files or directories (searched for *.xaif), the same as -i;
    /// `-` reads standard input.
    #[arg(value_name = "INPUT", required_unless_present = "input")]
    pub inputs: Vec<PathBuf>,
    /// Input file or directory, as for the transformations (repeat it for
    /// several).
    #[arg(short = 'i', long = "input", action = clap::ArgAction::Append)]
    pub input: Vec<PathBuf>,
    /// Output file (one input file; `-`: standard output) or directory
    /// (several inputs or a directory; relative paths are kept).
    #[arg(short = 'o', long = "output", required = true)]
    pub output: PathBuf,
    /// The batch options.
    #[command(flatten)]
    pub batch: BatchArgs,
}

/// Arguments of `xaifb validate`.
#[derive(Args)]
pub struct ValidateArgs {
    /// Input files or directories (searched for *.xaif), the same as -i;
    /// `-` reads standard input.
    #[arg(value_name = "INPUT", required_unless_present = "input")]
    pub inputs: Vec<PathBuf>,
    /// Input file or directory, as for the transformations (repeat it for
    /// several).
    #[arg(short = 'i', long = "input", action = clap::ArgAction::Append)]
    pub input: Vec<PathBuf>,
    /// Directory of the XAIF schemas (xaif.xsd, xaif_output.xsd, …); also
    /// taken from XAIF_SCHEMA_DIR. Enables XSD validation with xmllint.
    #[arg(short = 's', long)]
    pub schema: Option<PathBuf>,
    /// The batch options.
    #[command(flatten)]
    pub batch: BatchArgs,
}

/// Runs `xaifb roundtrip`.
pub fn roundtrip(args: RoundtripArgs) -> Result<ExitCode> {
    let named: Vec<PathBuf> = args.inputs.iter().chain(&args.input).cloned().collect();
    crate::batch::stdin_alone(&named)?;
    let stdin = named.len() == 1 && crate::input::is_stdin(&named[0]);
    let single = named.len() == 1 && (stdin || named[0].is_file());
    let to_dir = !single || (!stdin && args.output.is_dir());
    if to_dir {
        crate::output::Plan::new().dir("-o", &args.output)?;
    }
    let inputs = crate::batch::collect_inputs(&named)?;
    let dest = |rel: &Path| {
        if to_dir {
            args.output.join(rel)
        } else {
            args.output.clone()
        }
    };
    if !crate::input::is_stdin(&args.output) {
        crate::batch::check_destinations(&inputs, dest)?;
    }
    let jobs = crate::batch::jobs(args.batch.jobs);
    let outcomes = crate::batch::run(&inputs, jobs, |input, rel| {
        let parsed = crate::gate::load(input)?;
        let text = xaif_model::write_document(&parsed.document);
        let dest = dest(rel);
        crate::output::write_atomic(&dest, text.as_bytes()).map_err(|e| job_failure(input, &e))?;
        Ok(Some(format!("written to {}", dest.display())))
    });
    let failed = crate::batch::report(&outcomes, "roundtrip", args.batch.verbose);
    Ok(crate::report::batch_exit_code(failed))
}

/// Runs `xaifb validate`.
pub fn validate(args: ValidateArgs) -> Result<ExitCode> {
    let named: Vec<PathBuf> = args.inputs.iter().chain(&args.input).cloned().collect();
    crate::batch::stdin_alone(&named)?;
    let schema_dir = crate::gate::schema_dir(args.schema.as_deref())?;
    let inputs = crate::batch::collect_inputs(&named)?;
    if schema_dir.is_none() {
        eprintln!(
            "xaifb: schema validation skipped: no schema directory (--schema or XAIF_SCHEMA_DIR); model checks only"
        );
    }
    let outcomes = crate::batch::run(&inputs, crate::batch::jobs(args.batch.jobs), |input, _| {
        let Some(dir) = &schema_dir else {
            crate::gate::load(input)?;
            return Ok(Some(
                "valid (model checks; schema validation skipped)".into(),
            ));
        };
        let bytes = crate::input::read(input).map_err(|e| e.to_string())?;
        let name = crate::input::display_name(input);
        let parsed = xaif_model::read_bytes(&bytes, Some(&name)).map_err(|e| e.to_string())?;
        xaif_model::validate_document(&parsed.document, &parsed.source)
            .map_err(|e| e.to_string())?;
        let xsd = crate::schema::schema_for(&parsed.document);
        crate::schema::xmllint(&bytes, &name, dir, xsd).map_err(|e| job_failure(input, &e))?;
        Ok(Some(format!("valid ({xsd})")))
    });
    let failed = crate::batch::report(&outcomes, "validate", args.batch.verbose);
    Ok(crate::report::batch_exit_code(failed))
}
