//! `xaifb analyze`: activity and to-be-recorded analyses on the command
//! line, printed as a report; optionally the program with our activity
//! applied.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::report::{Invalid, Usage};
use xaif_dataflow::{
    report, ActivitySpec, Config, DataflowError, PassivationOptions, PassivationPlan, Solver,
    VarSpec,
};

/// Arguments of `xaifb analyze`.
#[derive(Args)]
pub struct AnalyzeArgs {
    /// Pessimistic assumptions for routines without a body (the
    /// reference's -b): a call may also read and overwrite every global.
    #[arg(short = 'b', long)]
    pub pessimistic: bool,
    /// The XAIF program (a front-end input).
    pub file: PathBuf,
    /// Report activity (varied, useful, active). With neither --activity
    /// nor --tbr, both are reported.
    #[arg(long)]
    pub activity: bool,
    /// Report what must be recorded (Req, Kill, InReq, records, tapes).
    #[arg(long)]
    pub tbr: bool,
    /// An independent, as ROUTINE:VARIABLE by Fortran names (repeatable;
    /// default: the top routine's active formals).
    #[arg(long = "independent", value_name = "ROUTINE:VAR")]
    pub independents: Vec<String>,
    /// A dependent, as ROUTINE:VARIABLE (repeatable; default: the top
    /// routine's active formals).
    #[arg(long = "dependent", value_name = "ROUTINE:VAR")]
    pub dependents: Vec<String>,
    /// Solve the general iterative equations everywhere instead of the
    /// structured ones on properly nested graphs.
    #[arg(long)]
    pub iterative: bool,
    /// Write the program with symbols we prove passive marked active="0".
    #[arg(long, value_name = "FILE")]
    pub passivate: Option<PathBuf>,
    /// With --passivate, also mark active="1" what we find active and the
    /// front end does not.
    #[arg(long, requires = "passivate")]
    pub allow_activation: bool,
    /// Largest data-flow working set allowed for one routine, in 64-bit
    /// words (see docs/limits.md).
    #[arg(long, value_name = "WORDS", default_value_t = xaif_dataflow::DEFAULT_BUDGET)]
    pub analysis_budget: u64,
    /// Write the report to this file instead of standard output.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
}

/// Runs `xaifb analyze`: the command line checked, the program read and
/// gated, analysed, and the report (and the passivated program) written.
pub fn analyze(args: AnalyzeArgs) -> Result<ExitCode> {
    let spec = activity_spec(&args)?;
    let mut plan = crate::output::Plan::new();
    match &args.output {
        Some(p) => plan.file("-o", p),
        None => plan.stdout("the report (no -o)"),
    }
    if let Some(p) = &args.passivate {
        plan.file("--passivate", p);
    }
    plan.check()?;
    let _working = crate::input::working_on(&args.file);
    let (mut program, source) = crate::gate::program_with_source(&args.file)?;
    let (text, passivation) = analysis(&args, spec, &program, &source)?;
    // The report file and the passivated program: both or neither.
    let mut outputs = crate::output::Outputs::new();
    if let Some(path) = &args.output {
        outputs.add(path, text.as_bytes())?;
    }
    if let (Some(path), Some(plan)) = (&args.passivate, &passivation) {
        plan.apply(&mut program);
        outputs.add(path, xaif_model::write_program(&program).as_bytes())?;
    }
    outputs.commit()?;
    if args.output.is_none() {
        print!("{text}");
    }
    if let (Some(path), Some(plan)) = (&args.passivate, passivation) {
        eprintln!(
            "{}: {} symbols passivated, {} activated, {} kept active for call consistency",
            path.display(),
            plan.passivate.len(),
            plan.activate.len(),
            plan.kept.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The independents and dependents of `--independent` and `--dependent`
/// (a command-line error when one is not `ROUTINE:VARIABLE`).
fn activity_spec(args: &AnalyzeArgs) -> Result<ActivitySpec> {
    let parse = |v: &[String]| -> std::result::Result<Vec<VarSpec>, DataflowError> {
        v.iter().map(|s| VarSpec::parse(s)).collect()
    };
    match (parse(&args.independents), parse(&args.dependents)) {
        (Ok(independents), Ok(dependents)) => Ok(ActivitySpec {
            independents,
            dependents,
        }),
        (Err(e), _) | (_, Err(e)) => Err(Usage(e.to_string()).into()),
    }
}

/// The analyses: the report's text and, with `--passivate`, the plan of
/// what to passivate.
fn analysis(
    args: &AnalyzeArgs,
    spec: ActivitySpec,
    program: &xaif_model::Program,
    source: &xaif_model::SourceMap,
) -> Result<(String, Option<PassivationPlan>)> {
    let both = !args.activity && !args.tbr;
    let config = Config {
        activity: spec,
        solver: if args.iterative {
            Solver::Iterative
        } else {
            Solver::Auto
        },
        tbr: args.tbr || both,
    };
    let name = crate::input::display_name(&args.file);
    let analysis = match xaif_dataflow::analyze_within(
        program,
        &config,
        args.pessimistic,
        args.analysis_budget,
    ) {
        Ok(a) => a,
        Err(e @ DataflowError::TooLarge { span, .. }) => {
            let (line, column) = source.locate(span);
            return Err(Invalid(format!("{name}:{line}:{column}: {e}")).into());
        }
        // The independents or dependents name nothing in the program.
        Err(e) => return Err(Usage(format!("{name}: {e}")).into()),
    };
    let opts = report::ReportOptions {
        activity: args.activity || both,
        tbr: args.tbr || both,
    };
    let text = report::render(&analysis, Some(source), opts);
    let plan = args.passivate.as_ref().map(|_| {
        PassivationPlan::new(
            &analysis.facts,
            &analysis.activity,
            PassivationOptions {
                allow_activation: args.allow_activation,
            },
        )
    });
    Ok((text, plan))
}
