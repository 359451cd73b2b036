//! The part of `cargo xtask corpus` that runs our own transformations: every
//! front-end input of the corpus transformed by xaifb (tangent and
//! adjoint, with the engine options the example was built with), executed
//! by the oracle, and compared with `ad.out` and with the reference
//! outputs' tape use.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use xaif_cfrev::AdjointOptions;
use xaif_interp::corpus::{run_file, Example, RunReport};
use xaif_interp::{compare, CompileOptions, Mode};
use xaif_linearize::catalogue::read_catalogues;
use xaif_linearize::TangentOptions;

/// The default step budget of `xaifb run` (per run; no time limit here).
const BUDGET: u64 = xaif_interp::Limits::STEPS;

/// Transforms `input` of `ex` in `mode` (tangent, or adjoint for split and
/// joint) into `dir`; returns the output file.
fn transform(
    shared: &Path,
    ex: &Example,
    input: &Path,
    adjoint: bool,
    dir: &Path,
) -> Result<PathBuf, String> {
    let schema = shared.join("xaif/schema/examples");
    let opts = &ex.options;
    let non_path = schema.join("noninlinable_intrinsics.xaif");
    let (catalogue, non) = read_catalogues(
        &schema.join("inlinable_intrinsics.xaif"),
        opts.contains("-N").then_some(non_path.as_path()),
    )
    .map_err(|e| e.to_string())?;
    let (p, source) = xaif_model::read_program_file(input).map_err(|e| e.to_string())?;
    xaif_model::validate_program(&p, &source).map_err(|e| e.to_string())?;
    let mut program = if adjoint {
        let mut o = AdjointOptions::default();
        o.flatten.per_statement = opts.contains("-S");
        o.zero_locals = opts.contains("-D");
        o.rename = opts.contains("'-r'");
        xaif_cfrev::adjoint(&p, &catalogue, non.as_ref(), &o)
            .map_err(|e| e.to_string())?
            .transformed
            .program
    } else {
        let mut o = TangentOptions::default();
        o.flatten.per_statement = opts.contains("-S");
        o.zero_locals = opts.contains("-D");
        o.rename = opts.contains("'-r'");
        xaif_linearize::tangent(&p, &catalogue, non.as_ref(), &o)
            .map_err(|e| e.to_string())?
            .program
    };
    program.mark_as_output("");
    let name = format!("{}-{}.xaif", ex.name, if adjoint { "adm" } else { "tlm" });
    let path = dir.join(name);
    std::fs::write(&path, xaif_model::write_program(&program)).map_err(|e| e.to_string())?;
    Ok(path)
}

fn verdict(report: &RunReport) -> String {
    match (&report.outcome, &report.comparison) {
        (Err(_), _) => "refused".into(),
        (Ok(o), _) if !o.tapes_empty => "tapes not empty".into(),
        (Ok(_), Some(c)) if c.matches() => "match".into(),
        (Ok(_), Some(c)) => format!("differs ({:.1e})", c.max_rel),
        (Ok(_), None) => "no ad.out".into(),
    }
}

/// Values pushed, peak checkpoint stack, values checkpointed and
/// derivative operations of a run.
fn pushed(report: &RunReport) -> Option<(u64, u64, u64, u64)> {
    let o = report.outcome.as_ref().ok()?;
    let s = &o.stats;
    Some((
        s.doubles_pushed + s.integers_pushed + s.logicals_pushed,
        s.peak_checkpoint,
        s.checkpoint_stored,
        s.flops_derivative,
    ))
}

/// Our outputs on every example, as markdown.
pub fn section(shared: &Path, examples: &[Example]) -> String {
    let dir = std::env::temp_dir().join(format!("xtask-corpus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok();
    let mut rows = String::new();
    let (mut checked, mut matched) = (0, 0);
    let mut totals = [(0u64, 0u64); 2];
    let mut stored = (0u64, 0u64);
    let mut flops = (0u64, 0u64);
    let mut adjoint_flops = [(0u64, 0u64); 2];
    let mut worse: Vec<String> = Vec::new();
    let mut failures_right = Vec::new();
    for ex in examples {
        let executable = matches!(
            ex.verdict.as_str(),
            "executable-generic-harness" | "executable-custom-harness"
        );
        let mut operations = String::new();
        let tangent = if ex.input(false).is_file() {
            match transform(shared, ex, &ex.input(false), false, &dir) {
                Ok(f) if executable => {
                    let r = run_file(ex, &f, Mode::Tangent, CompileOptions::default(), BUDGET);
                    let theirs = run_file(
                        ex,
                        &ex.reference(Mode::Tangent),
                        Mode::Tangent,
                        CompileOptions::default(),
                        BUDGET,
                    );
                    if let (Ok(a), Ok(b)) = (&r.outcome, &theirs.outcome) {
                        let (a, b) = (a.stats.flops_derivative, b.stats.flops_derivative);
                        flops.0 += a;
                        flops.1 += b;
                        operations = format!("{a} / {b}");
                        if a > b {
                            worse.push(format!("{} tangent operations {a} > {b}", ex.name));
                        }
                    }
                    checked += 1;
                    let v = verdict(&r);
                    matched += usize::from(v == "match");
                    v
                }
                Ok(_) => "transformed".into(),
                Err(_) => "transformation failed".into(),
            }
        } else {
            String::new()
        };
        let adjoint_input = [ex.input(true), ex.input(false)]
            .into_iter()
            .find(|p| p.is_file());
        let mut cells: Vec<String> = Vec::new();
        if let Some(input) = adjoint_input {
            match transform(shared, ex, &input, true, &dir) {
                Ok(f) => {
                    for (k, mode) in [Mode::Split, Mode::Joint].into_iter().enumerate() {
                        let ours = run_file(ex, &f, mode, CompileOptions::default(), BUDGET);
                        let theirs = if executable && ex.reference(mode).is_file() {
                            Some(run_file(
                                ex,
                                &ex.reference(mode),
                                mode,
                                CompileOptions::default(),
                                BUDGET,
                            ))
                        } else {
                            None
                        };
                        let mut v = if executable {
                            checked += 1;
                            let v = verdict(&ours);
                            matched += usize::from(v == "match");
                            v
                        } else {
                            "-".to_string()
                        };
                        if ex.adjoint_fails_in_reference() {
                            let dd_ok = match (&ours.outcome, ex.dd_out(), ex.params()) {
                                (Ok(o), Ok(dd), Ok(p)) => {
                                    o.tapes_empty
                                        && compare(&o.jacobian, &dd, p.tol, p.tol)
                                            .is_ok_and(|c| c.matches())
                                }
                                _ => false,
                            };
                            if dd_ok {
                                v = "reproduces dd.out".into();
                            }
                        }
                        let (a, b) = (pushed(&ours), theirs.as_ref().and_then(pushed));
                        let tape = match (a, b) {
                            (Some(a), Some(b)) => {
                                totals[k].0 += a.0;
                                totals[k].1 += b.0;
                                adjoint_flops[k].0 += a.3;
                                adjoint_flops[k].1 += b.3;
                                if a.0 > b.0 {
                                    worse.push(format!(
                                        "{} {mode:?} pushes {} > {}",
                                        ex.name, a.0, b.0
                                    ));
                                }
                                if a.3 > b.3 {
                                    worse.push(format!(
                                        "{} {mode:?} operations {} > {}",
                                        ex.name, a.3, b.3
                                    ));
                                }
                                if mode == Mode::Joint {
                                    stored.0 += a.2;
                                    stored.1 += b.2;
                                }
                                format!("{} / {} | {} / {} | {} / {}", a.3, b.3, a.0, b.0, a.1, b.1)
                            }
                            (Some(a), None) => format!("{} / - | {} / - | {} / -", a.3, a.0, a.1),
                            _ => " |  | ".into(),
                        };
                        cells.push(v);
                        cells.push(tape);
                    }
                }
                Err(_) => {
                    cells = vec![
                        "transformation failed".into(),
                        " |  | ".into(),
                        String::new(),
                        " |  | ".into(),
                    ];
                }
            }
        }
        if cells.is_empty() {
            cells = vec![
                String::new(),
                " |  | ".into(),
                String::new(),
                " |  | ".into(),
            ];
        }
        if ex.adjoint_fails_in_reference()
            && cells[0] == "reproduces dd.out"
            && cells[2] == "reproduces dd.out"
        {
            failures_right.push(ex.name.clone());
        }
        let _ = writeln!(
            rows,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            ex.name, ex.verdict, tangent, operations, cells[0], cells[1], cells[2], cells[3]
        );
    }
    std::fs::remove_dir_all(&dir).ok();
    let ratio = |(a, b): (u64, u64)| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let mut s = String::new();
    let _ = writeln!(s, "## Our outputs\n");
    let _ = writeln!(
        s,
        "Every front-end input transformed by xaifb with the engine options the example was built with \
         (tangent from `tlmhead_sf.pre.xaif`; adjoint from `admhead_sf.pre.xaif`, or from the tangent input when the \
         example has no adjoint input) and executed by the oracle. `match`: the Jacobian reproduces `ad.out` within \
         1e-10 relative or 1e-13 absolute and every tape ends empty; verdicts are given for the examples the reference \
         chain could check (`executable-*-harness`). On examples where the reference adjoint fails (`FAILREASON_adm_*`), \
         `reproduces dd.out` means our split or joint Jacobian agrees with the divided differences at the example's \
         tolerance. Tangent flops, flops split, flops joint: floating-point operations of the derivative code, ours / the reference output's. Pushed: doubles, integers and logicals pushed over the whole run (all dependents), ours / the \
         reference output's; checkpoint: peak checkpoint stack, ours / reference.\n"
    );
    let _ = writeln!(
        s,
        "{matched} of {checked} checked runs match. Values pushed over the executable examples: split {} / {} = {:.3}, joint {} / {} = {:.3} of the reference.\n",
        totals[0].0,
        totals[0].1,
        ratio(totals[0]),
        totals[1].0,
        totals[1].1,
        ratio(totals[1]),
    );
    let _ = writeln!(
        s,
        "Floating-point operations of the tangent derivative code (the oracle's count beyond the original program) over the executable examples: {} / {} = {:.3} of the reference.\n",
        flops.0,
        flops.1,
        ratio(flops)
    );
    let _ = writeln!(
        s,
        "Derivative operations of the adjoint code (both sweeps, the oracle's count beyond the original program) over the executable examples: split {} / {} = {:.3}, joint {} / {} = {:.3} of the reference.\n",
        adjoint_flops[0].0,
        adjoint_flops[0].1,
        ratio(adjoint_flops[0]),
        adjoint_flops[1].0,
        adjoint_flops[1].1,
        ratio(adjoint_flops[1]),
    );
    let _ = writeln!(
        s,
        "Examples where our output needs more derivative operations or pushes more values than the reference's (tangent, split, joint): {}.\n",
        if worse.is_empty() {
            "none".to_string()
        } else {
            worse.join("; ")
        }
    );
    let _ = writeln!(
        s,
        "Values stored in argument checkpoints (joint mode): {} / {} = {:.3} of the reference.\n",
        stored.0,
        stored.1,
        ratio(stored)
    );
    let _ = writeln!(
        s,
        "Reference adjoint failures (`FAILREASON_adm_*`) our split and joint adjoints get right: {}.\n",
        if failures_right.is_empty() {
            "none".to_string()
        } else {
            failures_right.join(", ")
        }
    );
    let _ = writeln!(s, "| example | verdict | tangent | tangent flops | split | flops split | pushed split | checkpoint split | joint | flops joint | pushed joint | checkpoint joint |");
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    s.push_str(&rows);
    s
}
