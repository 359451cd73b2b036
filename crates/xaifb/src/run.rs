//! `xaifb run` and `xaifb compare`: the numerical oracle on the command
//! line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use xaif_interp::{compare, ErrorKind, Harness, HarnessSpec, Jacobian, Limits, Mode, Params};

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
    /// Trace output: print the trace records of one run (OpenAD's
    /// `OAD_trace.f90` format).
    Trace,
}

/// Arguments of `xaifb run`.
#[derive(Args)]
pub struct RunArgs {
    /// The XAIF program to execute.
    pub file: PathBuf,
    /// What kind of program it is and how to drive it.
    #[arg(long, value_enum, default_value = "plain")]
    pub mode: RunMode,
    /// Number of independents, at least 1 (default: from params.conf;
    /// with a harness, the harness's, which it must equal).
    #[arg(long, value_parser = at_least_one)]
    pub n: Option<usize>,
    /// Number of dependents, at least 1 (default: from params.conf;
    /// with a harness, the harness's, which it must equal).
    #[arg(long, value_parser = at_least_one)]
    pub m: Option<usize>,
    /// params.conf (default: the one beside FILE, if any).
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// harness.json of an example with its own driver (default: the one
    /// beside FILE, if any; otherwise the generic head(x, y) driver).
    #[arg(long)]
    pub harness: Option<PathBuf>,
    /// Start values of the independents, comma-separated (default: i/2).
    #[arg(long, value_delimiter = ',', value_parser = finite, allow_hyphen_values = true)]
    pub x0: Option<Vec<f64>>,
    /// Print the divided-difference Jacobian of the program (dd.out format)
    /// instead.
    #[arg(long)]
    pub fd: bool,
    /// Divided-difference step (default: from params.conf, else 1e-6);
    /// within [1e-12, 1] times max(1, |x0|) of every independent.
    #[arg(long, value_parser = positive, allow_hyphen_values = true)]
    pub h: Option<f64>,
    /// Write the run's statistics as JSON to this file.
    #[arg(long)]
    pub stats_json: Option<PathBuf>,
    /// Write the Jacobian to this file instead of standard output.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Maximum number of executed statements and control flow vertices of
    /// one run.
    #[arg(long, default_value_t = Limits::STEPS)]
    pub step_budget: u64,
    /// Wall-clock limit of the whole run, in seconds.
    #[arg(long, default_value_t = Limits::TIME, value_parser = crate::flags::parse_seconds, allow_hyphen_values = true)]
    pub time_limit: f64,
    /// Maximum number of elements held at once by variables, frames, tapes
    /// and checkpoints (and asked for by --n, --m and the harness).
    #[arg(long, default_value_t = Limits::ELEMENTS)]
    pub max_elements: usize,
    /// Maximum depth of routine calls (at most 100000).
    #[arg(long, default_value_t = Limits::CALL_DEPTH as u64,
          value_parser = clap::value_parser!(u64).range(1..=MAX_CALL_DEPTH))]
    pub max_call_depth: u64,
    /// Execute markers for statements the XAIF does not carry (READ,
    /// untranslated calls, pointer stores, dropped stores) as no-ops instead
    /// of refusing: only when you know they do not change the numbers.
    #[arg(long)]
    pub inert_markers: bool,
}

fn sibling(file: &Path, name: &str) -> Option<PathBuf> {
    if crate::input::is_stdin(file) {
        return None;
    }
    let p = file.parent()?.join(name);
    p.is_file().then_some(p)
}

/// A count of at least one (independents, dependents): a Jacobian without
/// rows or columns prints nothing that could be checked.
fn at_least_one(text: &str) -> std::result::Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// A finite number (start values).
fn finite(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        Ok(_) => Err("must be a finite number".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// A finite number above zero (steps, time limits).
fn positive(text: &str) -> std::result::Result<f64, String> {
    match finite(text)? {
        x if x > 0.0 => Ok(x),
        _ => Err("must be greater than zero".into()),
    }
}

/// A finite number, zero or above (tolerances).
fn tolerance(text: &str) -> std::result::Result<f64, String> {
    match finite(text)? {
        x if x >= 0.0 => Ok(x),
        _ => Err("must not be negative".into()),
    }
}

/// What to do about an error that reached a limit.
fn hint(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::StepBudget(_) => "; raise it with --step-budget",
        ErrorKind::TimeLimit(_) => "; raise it with --time-limit",
        ErrorKind::CallDepth(_) => "; raise it with --max-call-depth",
        ErrorKind::TooLarge { .. } => "; raise it with --max-elements",
        _ => "",
    }
}

/// The Jacobian `j` if every entry is finite; otherwise the run reports
/// the first entry that is not (exit code 1): an overflow or a division
/// by zero of the program is no derivative.
fn finite_jacobian(file: &str, j: Jacobian) -> std::result::Result<Jacobian, ExitCode> {
    match j.first_non_finite() {
        None => Ok(j),
        Some((k, i, x)) => Err(invalid(
            file,
            format!(
                "F({k},{i}) = {x} is not a finite number (the run overflowed or divided by zero); no Jacobian is printed"
            ),
        )),
    }
}

/// Reports an input error of `file` (exit code 1).
fn invalid(file: &str, message: impl std::fmt::Display) -> ExitCode {
    eprintln!("{file}: {message}");
    ExitCode::from(1)
}

/// The largest `--max-call-depth`: its stack (see [`Limits::stack_bytes`])
/// stays under a GiB of address space.
const MAX_CALL_DEPTH: u64 = 100_000;

/// Runs `xaifb run`. The interpreter recurses natively per routine call,
/// so it runs on a thread whose stack fits the call depth limit.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    let limits = Limits {
        call_depth: args.max_call_depth as usize,
        ..Limits::default()
    };
    let _working = crate::input::working_on(&args.file);
    std::thread::Builder::new()
        .name("xaifb-run".into())
        .stack_size(limits.stack_bytes())
        .spawn(move || run_here(args))
        .context("cannot start the interpreter's thread")?
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Refuses standard input read twice and outputs that clash (exit code 2).
fn check_command_line(args: &RunArgs) -> Result<()> {
    crate::flags::stdin_once(
        [("", Some(args.file.as_path()))]
            .into_iter()
            .chain(args.params.as_deref().map(|p| ("--params", Some(p))))
            .chain(args.harness.as_deref().map(|p| ("--harness", Some(p)))),
    )?;
    let mut plan = crate::output::Plan::new();
    match &args.output {
        Some(p) => plan.file("-o", p),
        None => plan.stdout("the Jacobian (no -o)"),
    }
    if let Some(p) = &args.stats_json {
        plan.file("--stats-json", p);
    }
    plan.check()?;
    Ok(())
}

/// Runs `xaifb run` on the current thread.
fn run_here(args: RunArgs) -> Result<ExitCode> {
    check_command_line(&args)?;
    let Some((program, source)) = read_and_gate(&args.file) else {
        return Ok(ExitCode::from(1));
    };
    let file = crate::input::display_name(&args.file);
    let params_path = args
        .params
        .clone()
        .or_else(|| sibling(&args.file, "params.conf"));
    let params = match read_params(&args, params_path.as_deref())? {
        Ok(params) => params,
        Err(code) => return Ok(code),
    };
    let spec = match harness_spec(&args, params, &file)? {
        Ok(spec) => spec,
        Err(code) => return Ok(code),
    };
    let prog = xaif_interp::compile_with(
        &program,
        &source,
        xaif_interp::CompileOptions {
            inert_markers: args.inert_markers,
        },
    );
    let mut harness = Harness::new(&prog, spec);
    harness.limits = Limits {
        steps: args.step_budget,
        time: Some(std::time::Duration::from_secs_f64(args.time_limit)),
        elements: args.max_elements,
        call_depth: args.max_call_depth as usize,
    };
    let executed = if args.fd {
        divided_differences(&args, &harness, params, params_path.as_deref(), &file)
    } else {
        execute(&args, &harness, &file)
    };
    let (text, outcome) = match executed {
        Ok(done) => done,
        Err(code) => return Ok(code),
    };
    write_results(&args, &file, &text, outcome.as_ref())
}

/// Reads the program and checks it at the gate; `None` when either
/// failed (the error is printed).
fn read_and_gate(path: &Path) -> Option<(xaif_model::Program, xaif_model::SourceMap)> {
    let (program, source) = match crate::input::read_program(path) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return None;
        }
    };
    if let Err(e) = xaif_model::validate_program(&program, &source) {
        eprintln!("{e}");
        return None;
    }
    Some((program, source))
}

/// `params.conf` (`--params`, or the one beside the program), checked:
/// sizes of at least one, and a usable step when divided differences
/// take theirs from it. The inner `Err` is the exit code of a refusal.
fn read_params(
    args: &RunArgs,
    path: Option<&Path>,
) -> Result<std::result::Result<Option<Params>, ExitCode>> {
    let Some(p) = path else {
        return Ok(Ok(None));
    };
    let text = crate::input::read_text(p)?;
    let name = p.display().to_string();
    Ok(match Params::parse(&text) {
        // The step is checked where it is used: --h overrides it.
        Ok(params) if args.fd && args.h.is_none() && !(params.h.is_finite() && params.h > 0.0) => {
            Err(invalid(
                &name,
                format!(
                    "the divided-difference step h = {} is not a number above zero",
                    params.h
                ),
            ))
        }
        Ok(params) if params.n == 0 || params.m == 0 => Err(invalid(
            &name,
            format!(
                "n = {} and m = {}: a run needs at least one independent and one dependent",
                params.n, params.m
            ),
        )),
        Ok(params) => Ok(Some(params)),
        Err(e) => Err(invalid(&name, e)),
    })
}

/// The harness that drives the run: `--harness` or the `harness.json`
/// beside the program, else the generic driver of `--n`/`--m` or
/// `params.conf`; `--x0` replaces its start values. The inner `Err` is
/// the exit code of a refusal.
fn harness_spec(
    args: &RunArgs,
    params: Option<Params>,
    file: &str,
) -> Result<std::result::Result<HarnessSpec, ExitCode>> {
    let harness_path = args
        .harness
        .clone()
        .or_else(|| sibling(&args.file, "harness.json"));
    let mut spec = match &harness_path {
        Some(p) => {
            let text = crate::input::read_text(p)?;
            match HarnessSpec::parse_json(&text) {
                Ok(spec) => {
                    if let Some(code) = sizes_against_harness(args, &spec, p) {
                        return Ok(Err(code));
                    }
                    spec
                }
                // The path names the file: not `PATH: harness.json: …`.
                Err(e) => {
                    let cause = e.strip_prefix("harness.json: ").unwrap_or(&e);
                    return Ok(Err(invalid(&p.display().to_string(), cause)));
                }
            }
        }
        None => {
            let (Some(n), Some(m)) = (
                args.n.or(params.map(|p| p.n)),
                args.m.or(params.map(|p| p.m)),
            ) else {
                eprintln!(
                    "xaifb run: give --n and --m, or --params (no params.conf beside {file})"
                );
                return Ok(Err(ExitCode::from(2)));
            };
            // The generic driver's start values are allocated here: check
            // the sizes first.
            if n.max(m) > args.max_elements {
                return Ok(Err(invalid(
                    file,
                    format!(
                        "{n} independents and {m} dependents exceed the limit of {} elements; raise it with --max-elements",
                        args.max_elements,
                    ),
                )));
            }
            HarnessSpec::generic(n, m)
        }
    };
    if let Some(x0) = &args.x0 {
        if x0.len() != spec.n {
            eprintln!(
                "xaifb run: --x0 has {} values for {} independents",
                x0.len(),
                spec.n
            );
            return Ok(Err(ExitCode::from(2)));
        }
        spec.x0 = x0.clone();
    }
    Ok(Ok(spec))
}

/// What a run prints, and the outcome whose statistics it reports (none
/// for divided differences); `Err` is the exit code of a failed run.
type Executed = std::result::Result<(String, Option<xaif_interp::Outcome>), ExitCode>;

/// `--fd`: divided differences of the program at the step of `--h` or
/// `params.conf` (default 1e-6), a step that gives no derivative refused
/// where it came from.
fn divided_differences(
    args: &RunArgs,
    harness: &Harness<'_>,
    params: Option<Params>,
    params_path: Option<&Path>,
    file: &str,
) -> Executed {
    let h = args.h.or(params.map(|p| p.h)).unwrap_or(1e-6);
    if let Err(e) = harness.check_step(h) {
        // The step is the user's: named where it came from.
        return Err(match (args.h, params_path) {
            (Some(_), _) => {
                eprintln!("xaifb run: --h: {}", e.kind);
                ExitCode::from(2)
            }
            (None, Some(p)) => invalid(&p.display().to_string(), e.kind),
            _ => invalid(file, e.kind),
        });
    }
    match harness.divided_differences(h) {
        Ok(j) => finite_jacobian(file, j).map(|j| (j.to_out("DD"), None)),
        Err(e) => Err(invalid(file, format!("{e}{}", hint(&e.kind)))),
    }
}

/// Runs the program in `--mode`: the Jacobian (finite, or refused), the
/// dependents' values, or the trace records.
fn execute(args: &RunArgs, harness: &Harness<'_>, file: &str) -> Executed {
    let mode = match args.mode {
        RunMode::Plain => Mode::Plain,
        RunMode::Tangent => Mode::Tangent,
        RunMode::Split => Mode::Split,
        RunMode::Joint => Mode::Joint,
        RunMode::Trace => Mode::Trace,
    };
    let outcome = match harness.run(mode) {
        Ok(outcome) => outcome,
        Err(e) => return Err(invalid(file, format!("{e}{}", hint(&e.kind)))),
    };
    let text = match mode {
        Mode::Trace => {
            let mut t = String::from("<Trace number=\"1\">\n");
            for r in &outcome.trace {
                t.push_str(r);
                t.push('\n');
            }
            t.push_str("</Trace>\n");
            t
        }
        Mode::Plain => outcome
            .jacobian
            .entries
            .iter()
            .enumerate()
            .map(|(k, y)| format!("y({:3})={}\n", k + 1, xaif_interp::fortran_en(*y)))
            .collect(),
        _ => finite_jacobian(file, outcome.jacobian.clone())?.to_out("AD"),
    };
    Ok((text, Some(outcome)))
}

/// Writes the printed text (`-o`, else standard output) and the
/// statistics file (`--stats-json`), both or neither, and reports the
/// tape statistics on standard error.
fn write_results(
    args: &RunArgs,
    file: &str,
    text: &str,
    outcome: Option<&xaif_interp::Outcome>,
) -> Result<ExitCode> {
    // The Jacobian file and the statistics file: both or neither.
    let mut outputs = crate::output::Outputs::new();
    if let Some(path) = &args.output {
        outputs.add(path, text.as_bytes())?;
    }
    if let Some(outcome) = outcome.filter(|_| !matches!(args.mode, RunMode::Trace)) {
        report_tape(outcome);
    }
    if let Some(path) = &args.stats_json {
        let report = match outcome {
            Some(o) => serde_json::json!({
                "file": file,
                "mode": format!("{:?}", args.mode).to_lowercase(),
                "tapes_empty": o.tapes_empty,
                "plain_flops": o.plain_flops,
                "stats": o.stats,
                "checkpointed_loops": o.stats.checkpointed_loops,
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

/// The tape, checkpoint and operation counts of a run, on standard error.
fn report_tape(outcome: &xaif_interp::Outcome) {
    let s = &outcome.stats;
    if s.counted_multiplications + s.counted_additions > 0 {
        eprintln!(
            "counters: {} multiplications and {} additions counted",
            s.counted_multiplications, s.counted_additions
        );
    }
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
    warn_unconverged(s);
}

/// A warning for each fixed-point loop that did not converge: one that
/// did not reach its fixed point (its last complete iteration changed its
/// state by more than its tolerance) gets the derivative of a fixed point
/// it did not reach; one whose adjoint did not converge within its limit
/// gets derivatives that are not those of the fixed point (never a silent
/// result).
fn warn_unconverged(s: &xaif_interp::Stats) {
    let mut listed = 0u64;
    for r in &s.checkpointed_loops {
        if r.converged != Some(false) {
            continue;
        }
        listed += 1;
        if r.reached == Some(false) {
            let change = r
                .forward_change
                .map_or_else(|| "not a number".to_string(), |c| format!("{c:.3e}"));
            eprintln!(
                "xaifb run: warning: the fixed-point loop at line {} of `{}` did not reach its fixed point: its last complete iteration changed its state by {change} relative to its largest value, more than the loop's tolerance; its derivatives are those of a fixed point the loop did not reach (let the loop run to convergence, or do not mark it --fixed-point-loop)",
                r.line, r.routine,
            );
            continue;
        }
        let change = r
            .final_change
            .map_or_else(|| "infinite".to_string(), |c| format!("{c:.3e}"));
        eprintln!(
            "xaifb run: warning: the fixed-point loop at line {} of `{}` did not converge: {} adjoint iterations, last relative change {change}; its derivatives are not those of the fixed point (raise MAXITER of --fixed-point-loop, or check that the iteration is a contraction)",
            r.line,
            r.routine,
            r.adjoint_iterations.unwrap_or(0),
        );
    }
    if s.unconverged_loops > listed {
        eprintln!(
            "xaifb run: warning: {} more instances of fixed-point loops did not converge",
            s.unconverged_loops - listed
        );
    }
}

/// Arguments of `xaifb compare`.
#[derive(Args)]
pub struct CompareArgs {
    /// First Jacobian file (ad.out format).
    pub a: PathBuf,
    /// Second Jacobian file.
    pub b: PathBuf,
    /// Relative tolerance (finite, not negative).
    #[arg(long, default_value_t = 1e-10, value_parser = tolerance, allow_hyphen_values = true)]
    pub rel: f64,
    /// Absolute tolerance (finite, not negative).
    #[arg(long, default_value_t = 1e-13, value_parser = tolerance, allow_hyphen_values = true)]
    pub abs: f64,
}

/// Runs `xaifb compare`: exit 0 when the files agree within the tolerances,
/// 1 when they differ or either is not a complete Jacobian of finite
/// numbers.
pub fn compare_files(args: CompareArgs) -> Result<ExitCode> {
    crate::flags::stdin_once([("", Some(args.a.as_path())), ("", Some(args.b.as_path()))])?;
    let _working = (
        crate::input::working_on(&args.a),
        crate::input::working_on(&args.b),
    );
    let read = |p: &Path| -> Result<std::result::Result<Jacobian, String>> {
        let text = crate::input::read_text(p)?;
        let name = p.display();
        Ok(match Jacobian::parse(&text) {
            Err(e) => Err(format!("{name}: {e}")),
            Ok(j) => match j.first_non_finite() {
                Some((k, i, x)) => Err(format!(
                    "{name}: F({k},{i}) = {x} is not a finite number; a comparison with it means nothing"
                )),
                None => Ok(j),
            },
        })
    };
    let (a, b) = match (read(&args.a)?, read(&args.b)?) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => {
            for e in [a.err(), b.err()].into_iter().flatten() {
                eprintln!("{e}");
            }
            return Ok(ExitCode::from(1));
        }
    };
    let c = match compare(&a, &b, args.rel, args.abs) {
        Ok(c) => c,
        Err(_) => {
            eprintln!(
                "{} holds a {}x{} Jacobian but {} a {}x{} one",
                args.a.display(),
                a.m,
                a.n,
                args.b.display(),
                b.m,
                b.n
            );
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

/// A harness fixes the numbers of independents and dependents: `--n` or
/// `--m` beside it must agree, or the command line is refused (exit 2)
/// rather than silently ignored.
fn sizes_against_harness(
    args: &RunArgs,
    spec: &HarnessSpec,
    harness: &std::path::Path,
) -> Option<ExitCode> {
    for (flag, given, fixed, what) in [
        ("--n", args.n, spec.n, "independents"),
        ("--m", args.m, spec.m, "dependents"),
    ] {
        if let Some(given) = given {
            if given != fixed {
                eprintln!(
                    "xaifb run: {flag} {given} disagrees with {}, which has {fixed} {what}",
                    harness.display()
                );
                return Some(ExitCode::from(2));
            }
        }
    }
    None
}
