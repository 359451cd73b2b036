//! The transformation commands (`tangent`, `adjoint`, `trace`,
//! `typechange`) as one pipeline: the command line checked (`flags.rs`),
//! each input read and gated (`gate.rs`), transformed by its library,
//! written with its side outputs (`write.rs`, `graphs.rs`), and reported
//! (`report.rs`). A one-file call may stream its result; a batch runs the
//! same steps per file on worker threads (`batch.rs`).

use std::borrow::Cow;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use xaif_linearize::tangent::DotGraph;
use xaif_linearize::Catalogue;
use xaif_model::Program;

use crate::compat::Mode;
use crate::flags::{AdjointArgs, TransformArgs};
use crate::gate::SchemaCheck;
use crate::graphs::GraphFiles;
use crate::output::Outputs;
use crate::report::Failure;
use crate::stream::Spill;

/// What one transformation made, whatever its mode.
struct Done {
    /// The output program (without its routines when they were streamed).
    program: Program,
    /// The eliminated graphs (with `--dot`, `-g 8`).
    dots: Vec<DotGraph>,
    /// The `-g 64` records.
    metrics: String,
    /// The `--stats-json` report.
    stats: Option<serde_json::Value>,
}

impl Done {
    /// A result without graphs, metrics or statistics (trace, type change).
    fn plain(program: Program) -> Self {
        Done {
            program,
            dots: Vec::new(),
            metrics: String::new(),
            stats: None,
        }
    }
}

/// The checks and settings every transformation starts with: the command
/// line (exit code 2), the viewer of `-B` and the schema directory of `-v`
/// (exit code 3), before any input is read.
fn start(mode: Mode, args: &TransformArgs) -> Result<SchemaCheck> {
    args.check(mode)?;
    if args.render_dir(mode).is_some() {
        crate::graphs::check_tools(args.reference.viewer.as_deref())?;
    }
    let dir = if args.validate {
        crate::gate::schema_dir(args.schema.as_deref())?
    } else {
        None
    };
    Ok(SchemaCheck {
        validate: args.validate,
        dir,
        quiet: args.reference.quiet,
    })
}

/// Runs `xaifb tangent`.
pub fn tangent(args: TransformArgs) -> Result<ExitCode> {
    let begun = Instant::now();
    let schema = start(Mode::Tangent, &args)?;
    let (catalogue, noninlinable) =
        crate::gate::catalogues(args.catalogue.as_deref(), args.noninlinable.as_deref())?;
    let (catalogue, noninlinable) = (catalogue.as_ref(), noninlinable.as_ref());
    let options = args.tangent_options()?;
    if args.is_batch() {
        return batch(&args, Some(catalogue), &schema, Mode::Tangent, |_, p| {
            xaif_linearize::tangent(p, catalogue, noninlinable, &options)
                .map(|r| r.program)
                .map_err(Failure::from)
        });
    }
    one_file(
        &args,
        Mode::Tangent,
        Some(catalogue),
        &schema,
        begun,
        |p, spill| {
            let r = match spill {
                Some(spill) => xaif_linearize::tangent_streamed(
                    p,
                    catalogue,
                    noninlinable,
                    &options,
                    &mut |out, r| spill.routine(out, r),
                ),
                None => xaif_linearize::tangent(p, catalogue, noninlinable, &options),
            }?;
            let metrics = if args.debug_mask & 64 != 0 {
                tangent_metrics(&r.stats)
            } else {
                String::new()
            };
            let stats = args.stats_json.as_ref().map(|_| {
                serde_json::json!({
                    "input": args.single_input().display().to_string(),
                    "mode": "tangent",
                    "routines": r.stats.routines,
                    "total": r.stats.total,
                })
            });
            Ok(Done {
                program: r.program,
                dots: r.dots,
                metrics,
                stats,
            })
        },
    )
}

/// The `-g 64` records of a tangent transformation.
fn tangent_metrics(stats: &xaif_linearize::TransformStats) -> String {
    let mut text = String::new();
    for r in &stats.routines {
        for b in &r.blocks {
            for (k, g) in b.graphs.iter().enumerate() {
                text.push_str(&format!(
                    "metrics: {} block {} graph {k}: {} vertices, {} edges, {} mul, {} add, {} sub, {} div, {} non-trivial remainder edges\n",
                    r.routine, b.block, g.vertices, g.edges, g.multiplications, g.additions, g.subtractions, g.divisions, g.nontrivial_remainder_edges
                ));
            }
        }
        let t = &r.total;
        text.push_str(&format!(
            "metrics: {} total: {} mul, {} add, {} sub, {} div\n",
            r.routine, t.multiplications, t.additions, t.subtractions, t.divisions
        ));
    }
    text
}

/// The adjoint options of the command line.
fn adjoint_options(args: &AdjointArgs) -> Result<xaif_cfrev::AdjointOptions> {
    let common = &args.common;
    let r = &common.reference;
    let t = common.tangent_options()?;
    let plan = loop_plan(common.loop_plan.as_deref(), r.quiet)?;
    Ok(xaif_cfrev::AdjointOptions {
        flatten: t.flatten,
        passive: t.passive,
        elimination: t.elimination,
        zero_locals: common.zero_locals,
        all_inout: r.all_inout,
        checkpoint_all_formals: r.checkpoint_all_formals,
        restore_in_store_order: r.restore_in_store_order,
        rename: common.rename,
        force_enumeration: args.enumerate_blocks,
        full_checkpoints: args.full_checkpoints,
        decoration: r.decoration(),
        wrappers: r.wrapper_names(),
        counters: r.counters,
        pessimistic_black_boxes: r.pessimistic,
        ignore_simple_loop_violations: r.ignore_simple_loops,
        ask_simple_loop_violations: r.ask_simple_loops.then_some(ask_user as fn(&str) -> bool),
        top: r.top.clone(),
        dot: common.wants_graphs(),
        checkpoint_loops: [common.checkpoint_loop.clone(), plan.checkpoint].concat(),
        fixed_point_loops: [common.fixed_point_loop.clone(), plan.fixed_point].concat(),
        independent_loops: [common.independent_loop.clone(), plan.independent].concat(),
        ahead: t.ahead,
    })
}

/// The environment variable naming a loop plan file when `--loop-plan` is
/// not given.
pub const LOOP_PLAN_ENV: &str = "XAIFB_LOOP_PLAN";

/// The marks of the loop plan of `--loop-plan FILE` or, without it, of
/// the file `XAIFB_LOOP_PLAN` names (none when it is unset or empty),
/// reported on standard error unless `quiet`. A plan that cannot be read,
/// is too large, or has a bad line is a command-line error naming the
/// file, line and column.
fn loop_plan(flag: Option<&Path>, quiet: bool) -> Result<xaif_cfrev::marks::Plan> {
    use crate::report::Usage;
    use std::io::Read as _;
    use xaif_cfrev::marks::{parse_plan, Plan, MAX_PLAN_BYTES};
    let from_env = std::env::var_os(LOOP_PLAN_ENV).filter(|v| !v.is_empty());
    let (path, source) = match (flag, &from_env) {
        (Some(p), _) => (p.to_path_buf(), "--loop-plan".to_string()),
        (None, Some(v)) => (std::path::PathBuf::from(v), LOOP_PLAN_ENV.to_string()),
        (None, None) => return Ok(Plan::default()),
    };
    let name = path.display().to_string();
    let unreadable = |e: std::io::Error| {
        anyhow::Error::new(Usage(format!(
            "{name} (the loop plan of {source}): cannot be read: {}",
            crate::console::plain_io_message(&e)
        )))
    };
    let file = std::fs::File::open(&path).map_err(unreadable)?;
    let mut bytes = Vec::new();
    file.take(MAX_PLAN_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_PLAN_BYTES {
        return Err(Usage(format!(
            "{name} (the loop plan of {source}): more than {MAX_PLAN_BYTES} bytes, the \
             limit of a loop plan"
        ))
        .into());
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        let upto = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = upto.iter().filter(|&&b| b == b'\n').count() + 1;
        anyhow::Error::new(Usage(format!(
            "{name}:{line}: (the loop plan of {source}): not UTF-8 text"
        )))
    })?;
    let plan = parse_plan(&text).map_err(|e| {
        anyhow::Error::new(Usage(format!(
            "{name}:{}:{}: (the loop plan of {source}): {}",
            e.line, e.column, e.message
        )))
    })?;
    let marks = plan.describe();
    crate::report::note(
        quiet,
        &format!(
            "loop plan {name} (from {source}): {}",
            if marks.is_empty() {
                "no marks".to_string()
            } else {
                marks.join(", ")
            }
        ),
    );
    Ok(plan)
}

/// `-t TOP` for `p`: when no routine TOP has code, the transformation goes
/// on without it, as the reference engine does (scripts pass `-t` for
/// whole families of files), and says so.
fn with_top<'o>(
    p: &Program,
    options: &'o xaif_cfrev::AdjointOptions,
    input: &Path,
    quiet: bool,
) -> Cow<'o, xaif_cfrev::AdjointOptions> {
    match &options.top {
        Some(top) if xaif_cfrev::top_routine(p, top).is_none() => {
            crate::report::note(
                quiet,
                &format!(
                    "warning: {}: -t {top}: no routine `{top}` with code; going on without -t",
                    crate::input::display_name(input)
                ),
            );
            let mut without = options.clone();
            without.top = None;
            Cow::Owned(without)
        }
        _ => Cow::Borrowed(options),
    }
}

/// Runs `xaifb adjoint`.
pub fn adjoint(args: AdjointArgs) -> Result<ExitCode> {
    let begun = Instant::now();
    let common = &args.common;
    let schema = start(Mode::Adjoint, common)?;
    let (catalogue, noninlinable) =
        crate::gate::catalogues(common.catalogue.as_deref(), common.noninlinable.as_deref())?;
    let (catalogue, noninlinable) = (catalogue.as_ref(), noninlinable.as_ref());
    let options = adjoint_options(&args)?;
    let quiet = common.reference.quiet;
    if common.is_batch() {
        return batch(
            common,
            Some(catalogue),
            &schema,
            Mode::Adjoint,
            |input, p| {
                let options = with_top(p, &options, input, quiet);
                xaif_cfrev::adjoint(p, catalogue, noninlinable, &options)
                    .map(|r| r.transformed.program)
                    .map_err(Failure::from)
            },
        );
    }
    let input = common.single_input();
    one_file(
        common,
        Mode::Adjoint,
        Some(catalogue),
        &schema,
        begun,
        |p, spill| {
            let options = with_top(p, &options, &input, quiet);
            let r = match spill {
                Some(spill) => xaif_cfrev::adjoint_streamed(
                    p,
                    catalogue,
                    noninlinable,
                    &options,
                    &mut |out, r| spill.routine(out, r),
                ),
                None => xaif_cfrev::adjoint(p, catalogue, noninlinable, &options),
            }?;
            let stats = &r.transformed.stats;
            let metrics = if common.debug_mask & 64 != 0 {
                adjoint_metrics(stats, &r.tapes)
            } else {
                String::new()
            };
            let report = common.stats_json.as_ref().map(|_| {
                serde_json::json!({
                    "input": common.single_input().display().to_string(),
                    "mode": "adjoint",
                    "routines": stats.routines,
                    "total": stats.total,
                    "tapes": r.tapes,
                })
            });
            Ok(Done {
                program: r.transformed.program,
                dots: r.transformed.dots,
                metrics,
                stats: report,
            })
        },
    )
}

/// The `-g 64` records of an adjoint transformation.
fn adjoint_metrics(
    stats: &xaif_linearize::TransformStats,
    tapes: &[xaif_cfrev::TapeStats],
) -> String {
    let mut text = String::new();
    for r in &stats.routines {
        let t = &r.total;
        text.push_str(&format!(
            "metrics: {} total: {} mul, {} add, {} sub, {} div\n",
            r.routine, t.multiplications, t.additions, t.subtractions, t.divisions
        ));
    }
    for tp in tapes {
        text.push_str(&format!(
            "metrics: {} tape: {} doubles and {} integers per block execution, {} checkpointed variables, {}\n",
            tp.routine,
            tp.doubles_per_block_execution,
            tp.integers_per_block_execution,
            tp.checkpoint_variables,
            if tp.structured { "structured" } else { "unstructured" }
        ));
    }
    text
}

/// Runs `xaifb trace`.
pub fn trace(args: TransformArgs) -> Result<ExitCode> {
    let begun = Instant::now();
    let schema = start(Mode::Trace, &args)?;
    let (catalogue, noninlinable) =
        crate::gate::catalogues(args.catalogue.as_deref(), args.noninlinable.as_deref())?;
    let r = &args.reference;
    let options = xaif_trace::TraceOptions {
        passive: args.passive_names(),
        decoration: r.decoration(),
        wrappers: r.wrapper_names(),
        rename: args.rename,
        all_inout: r.all_inout,
    };
    let run = |p: &Program| {
        xaif_trace::trace(p, catalogue.as_ref(), noninlinable.as_ref(), &options)
            .map_err(|e| Failure::from(e.to_string()))
    };
    whole_program(&args, Mode::Trace, &schema, begun, run)
}

/// Runs `xaifb typechange`.
pub fn typechange(args: TransformArgs) -> Result<ExitCode> {
    let begun = Instant::now();
    let schema = start(Mode::TypeChange, &args)?;
    let (_, noninlinable) =
        crate::gate::catalogues(args.catalogue.as_deref(), args.noninlinable.as_deref())?;
    let r = &args.reference;
    let options = xaif_linearize::TypeChangeOptions {
        passive: args.passive_names(),
        decoration: r.decoration(),
        wrappers: r.wrapper_names(),
        rename: args.rename,
        all_inout: r.all_inout,
    };
    let run = |p: &Program| {
        xaif_linearize::typechange(p, noninlinable.as_ref(), &options)
            .map(|t| t.program)
            .map_err(|e| Failure::from(e.to_string()))
    };
    whole_program(&args, Mode::TypeChange, &schema, begun, run)
}

/// A transformation of the whole program without a catalogue of its own
/// and without streaming (trace, typechange): a batch, or one file.
fn whole_program<F>(
    args: &TransformArgs,
    mode: Mode,
    schema: &SchemaCheck,
    begun: Instant,
    run: F,
) -> Result<ExitCode>
where
    F: Fn(&Program) -> Result<Program, Failure> + Sync,
{
    if args.is_batch() {
        return batch(args, None, schema, mode, |_, p| run(p));
    }
    one_file(args, mode, None, schema, begun, |p, _| {
        run(p).map(Done::plain)
    })
}

/// `-u`: asks the question on standard error and reads the answer from
/// standard input; `y` or `yes` agrees, anything else (or the end of the
/// input) does not.
fn ask_user(question: &str) -> bool {
    eprint!("xaifb: {question} [y/N] ");
    let mut answer = String::new();
    let _ = std::io::stdin().read_line(&mut answer);
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// One input through the pipeline: read and gate, `transform` (given a
/// spill when tangent or adjoint output can be streamed), then the
/// output with its side outputs, all or none.
fn one_file<F>(
    args: &TransformArgs,
    mode: Mode,
    catalogue: Option<&Catalogue>,
    schema: &SchemaCheck,
    begun: Instant,
    transform: F,
) -> Result<ExitCode>
where
    F: FnOnce(&Program, Option<&mut Spill>) -> Result<Done, Failure>,
{
    crate::write::set_one_file();
    let input = args.single_input();
    let _working = crate::input::working_on(&input);
    let program = crate::gate::program(&input, catalogue, schema)?;
    let mut spill = match mode {
        Mode::Tangent | Mode::Adjoint => args.spill(&program),
        Mode::Trace | Mode::TypeChange => None,
    };
    let done = match transform(&program, spill.as_mut()) {
        Ok(done) => done,
        Err(e) => return Err(crate::report::Invalid(e.render(&input)).into()),
    };
    crate::write::release(program);
    let (mut outputs, mut debug) = (Outputs::new(), String::new());
    let pictures = side_outputs(args, mode, &done, &mut outputs, &mut debug)?;
    if args.debug_mask & 16 != 0 && matches!(mode, Mode::Tangent | Mode::Adjoint) {
        args.debug(
            &mut debug,
            &format!(
                "timing: {} transformation {:.3} ms\n",
                mode.name(),
                begun.elapsed().as_secs_f64() * 1e3
            ),
        );
    }
    match spill {
        Some(spill) => args.write_streamed(outputs, &debug, done.program, spill)?,
        None => args.write(outputs, &debug, done.program)?,
    }
    if let Some(viewer) = &args.reference.viewer {
        crate::graphs::view(viewer, &pictures)?;
    }
    if args.verbose {
        let name = crate::input::display_name(&input);
        match args.output_file() {
            Some(out) => println!("{name}: written to {}", out.display()),
            None => eprintln!("{name}: written to standard output"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Stages the side outputs of `done` (statistics, graph files) and adds
/// its debug records (`-g 64`, `-g 8`) to `debug`; returns the pictures
/// of `-G` for the viewer.
fn side_outputs(
    args: &TransformArgs,
    mode: Mode,
    done: &Done,
    outputs: &mut Outputs,
    debug: &mut String,
) -> Result<Vec<std::path::PathBuf>> {
    if args.debug_mask & 64 != 0 && !done.metrics.is_empty() {
        args.debug(debug, &done.metrics);
    }
    if args.debug_mask & 8 != 0 && !done.dots.is_empty() {
        let mut text = String::new();
        for d in &done.dots {
            text.push_str(&format!("// {} before elimination\n{}\n", d.name, d.before));
            if let Some(a) = &d.after {
                text.push_str(&format!("// {} after elimination\n{a}\n", d.name));
            }
        }
        args.debug(debug, &text);
    }
    let files = GraphFiles {
        dot: args.dot.as_deref(),
        render: args.reference.graphics.zip(args.render_dir(mode)),
    };
    let pictures = files.stage(outputs, &done.dots)?;
    if let (Some(path), Some(report)) = (&args.stats_json, &done.stats) {
        outputs.add(path, serde_json::to_string_pretty(report)?.as_bytes())?;
    }
    Ok(pictures)
}

/// Transforms every input of a batch call with `transform` on worker
/// threads; outputs go to the `-o` directory under the inputs' relative
/// paths. Per-file reports (statistics, Graphviz, debug output) belong to
/// one-file calls (`TransformArgs::check` refuses them here).
fn batch<F>(
    args: &TransformArgs,
    catalogue: Option<&Catalogue>,
    schema: &SchemaCheck,
    mode: Mode,
    transform: F,
) -> Result<ExitCode>
where
    F: Fn(&Path, &Program) -> Result<Program, Failure> + Sync,
{
    let Some(out_dir) = &args.output else {
        // `TransformArgs::check` refuses a batch without -o first.
        return Err(crate::report::Usage("several inputs need -o DIRECTORY".into()).into());
    };
    let inputs = crate::batch::collect_inputs(&args.all_inputs())?;
    crate::batch::check_destinations(&inputs, |rel| out_dir.join(rel))?;
    let jobs = crate::batch::jobs(args.jobs);
    let outcomes = crate::batch::run(&inputs, jobs, |input, rel| {
        let program = crate::gate::program(input, catalogue, schema)
            .map_err(|e| crate::report::job_failure(input, &e))?;
        let result = transform(input, &program).map_err(|e| e.render(input))?;
        let dest = out_dir.join(rel);
        args.write_to(result, &dest)
            .map_err(|e| crate::report::job_failure(input, &e))?;
        Ok(Some(format!("written to {}", dest.display())))
    });
    let failed = crate::batch::report(&outcomes, mode.name(), args.verbose);
    Ok(crate::report::batch_exit_code(failed))
}
