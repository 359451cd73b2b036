//! The checkpointing variant (`cargo xtask stress --checkpoint-loops`):
//! every loop of a generated program (`ForLoop`, and the while and
//! post-test loops, checkpointed online) marked `--checkpoint-loop`, the
//! checkpointed adjoint run in split and joint mode against the adjoint
//! without checkpointing, its tapes, checkpoints and snapshots empty at the
//! end, every binomial instance taking exactly `t(l, s)` forward steps and
//! every online one repeating no iteration more than `r(l + 1, s)` times;
//! then every `ForLoop` marked `--independent-loop` (refusals expected,
//! accepted marks checked by the Jacobian and one forward run).
//!
//! A loop the transformation refuses is unmarked and the transformation
//! repeated; refusals are counted, and are findings unless they are the
//! ones the issue asks for (a loop left by a jump, or one whose body such
//! a jump makes unstructured).

use xaif_cfrev::checkpoint::LoopMark;
use xaif_cfrev::marks::IndependentMark;
use xaif_cfrev::AdjointOptions;
use xaif_interp::{Harness, Jacobian, LoopRecord, Mode};
use xaif_model::{Program, RoutineBody, VertexKind};

use crate::check::{
    finding, guarded, jacobian_difference, output_text, Checker, Runs, CHECKPOINTED,
};

/// Why a loop may be refused without that being a finding.
const EXPECTED_REFUSALS: &[&str] = &[
    "the loop is left by a jump",
    "its body is not structured, or a jump enters it",
];

/// Every loop with a line number, with 1 to 3 snapshots.
fn marks(p: &Program) -> Vec<LoopMark> {
    let mut out = Vec::new();
    for (_, r) in p.routines.iter() {
        let RoutineBody::Graph(cfg) = &r.body else {
            continue;
        };
        for v in p.cfgs[*cfg].vertex_ids() {
            if let VertexKind::ForLoop { .. } | VertexKind::PreLoop(_) | VertexKind::PostLoop(_) =
                p.vertices[v].kind
            {
                if let Some(line) = p.vertices[v].attrs.int("lineNumber") {
                    out.push(LoopMark {
                        routine: r.symbol_name().to_string(),
                        line,
                        snapshots: 1 + (out.len() as u64 + line as u64) % 3,
                    });
                }
            }
        }
    }
    out
}

/// The checkpointed adjoint with as many loops marked as can be: refused
/// marks are dropped (counted; a finding when unexpected).
///
/// With `independent`, the `ForLoop`s are marked `--independent-loop`
/// instead: a refusal naming the mark is expected (random loops often
/// carry a dependence); an accepted mark is checked by its Jacobian.
fn transform(
    checker: &Checker,
    runs: &mut Runs<'_>,
    p: &Program,
    independent: bool,
) -> Option<String> {
    let mut options = AdjointOptions {
        checkpoint_loops: marks(p),
        ..AdjointOptions::default()
    };
    if independent {
        options.independent_loops = options
            .checkpoint_loops
            .drain(..)
            .filter(|m| {
                p.routines.iter().any(|(_, r)| {
                    let RoutineBody::Graph(cfg) = &r.body else {
                        return false;
                    };
                    r.symbol_name() == m.routine
                        && p.cfgs[*cfg].vertex_ids().any(|v| {
                            matches!(p.vertices[v].kind, VertexKind::ForLoop { .. })
                                && p.vertices[v].attrs.int("lineNumber") == Some(m.line)
                        })
                })
            })
            .map(|m| IndependentMark {
                routine: m.routine,
                line: m.line,
            })
            .collect();
    }
    loop {
        if options.checkpoint_loops.is_empty() && options.independent_loops.is_empty() {
            return None;
        }
        runs.outcome.counts.transformations += 1;
        let result = guarded(|| {
            xaif_cfrev::adjoint(p, &checker.catalogue, Some(&checker.noninlinable), &options)
                .map(|r| output_text(r.transformed.program))
                .map_err(|e| e.to_string())
        });
        let e = match result {
            Ok(text) => {
                runs.outcome.counts.checkpointed_loops +=
                    options.checkpoint_loops.len() + options.independent_loops.len();
                return Some(text);
            }
            Err(e) => e,
        };
        if independent {
            let named = options
                .independent_loops
                .iter()
                .position(|m| e.contains(&format!("--independent-loop {}:{}", m.routine, m.line)));
            let Some(k) = named else {
                runs.outcome.findings.push(finding(
                    format!(
                        "independent-loop adjoint: {}",
                        crate::check::error_class(&e)
                    ),
                    CHECKPOINTED,
                    e,
                ));
                return None;
            };
            runs.outcome.counts.refused_loops += 1;
            options.independent_loops.remove(k);
            continue;
        }
        let named = options
            .checkpoint_loops
            .iter()
            .position(|m| e.contains(&format!("--checkpoint-loop {}:{}:", m.routine, m.line)));
        let Some(k) = named else {
            runs.outcome.findings.push(finding(
                format!("checkpointed adjoint: {}", crate::check::error_class(&e)),
                CHECKPOINTED,
                e,
            ));
            return None;
        };
        if !EXPECTED_REFUSALS.iter().any(|why| e.contains(why)) {
            runs.outcome.findings.push(finding(
                format!(
                    "checkpointed loop refused: {}",
                    crate::check::error_class(&e)
                ),
                CHECKPOINTED,
                e,
            ));
        }
        runs.outcome.counts.refused_loops += 1;
        options.checkpoint_loops.remove(k);
    }
}

/// Checks the checkpointed adjoint of `p` against `adjoints`, the
/// Jacobians of the adjoint without checkpointing by mode.
pub(crate) fn check_checkpointed(
    checker: &Checker,
    runs: &mut Runs<'_>,
    p: &Program,
    adjoints: &[(Mode, Jacobian)],
    full: bool,
) {
    for independent in [false, true] {
        check_marked(
            checker,
            runs,
            p,
            adjoints,
            full && !independent,
            independent,
        );
    }
}

/// [`check_checkpointed`] with the loops marked `--checkpoint-loop`, or
/// `--independent-loop` when `independent`.
fn check_marked(
    checker: &Checker,
    runs: &mut Runs<'_>,
    p: &Program,
    adjoints: &[(Mode, Jacobian)],
    full: bool,
    independent: bool,
) {
    let Some(text) = transform(checker, runs, p, independent) else {
        return;
    };
    let prog = guarded(|| {
        let (out, source) = xaif_model::read_program_str(&text, None).map_err(|e| e.to_string())?;
        xaif_model::validate_program(&out, &source).map_err(|e| e.to_string())?;
        Ok(xaif_interp::compile(&out, &source))
    });
    let prog = match prog {
        Ok(prog) => prog,
        Err(e) => {
            runs.outcome.findings.push(finding(
                "checkpointed adjoint does not read back",
                CHECKPOINTED,
                e,
            ));
            return;
        }
    };
    for (mode, plain) in adjoints {
        let what = format!("{CHECKPOINTED} ({mode:?})");
        runs.outcome.counts.runs += 1;
        let spec = runs.spec();
        let steps = checker.limits.step_budget;
        let outcome = guarded(|| {
            let mut h = Harness::new(&prog, spec);
            h.limits.steps = steps;
            h.limits.time = None;
            h.run(*mode).map_err(|e| e.to_string())
        });
        let o = match outcome {
            Ok(o) => o,
            Err(e) => {
                runs.outcome.findings.push(finding(
                    format!(
                        "checkpointed adjoint run: {}",
                        crate::check::error_class(&e)
                    ),
                    &what,
                    e,
                ));
                continue;
            }
        };
        if !o.tapes_empty {
            runs.outcome.findings.push(finding(
                "checkpointed adjoint: tapes or snapshots not empty at the end",
                &what,
                "",
            ));
        }
        let d = jacobian_difference(plain, &o.jacobian);
        if d > checker.limits.exact || d.is_nan() {
            runs.outcome.findings.push(finding(
                "checkpointed adjoint differs from the adjoint without checkpointing",
                &what,
                format!(
                    "worst relative difference {d:.3e}\nwithout:\n{}with:\n{}",
                    plain.to_out("AD"),
                    o.jacobian.to_out("AD")
                ),
            ));
        }
        for r in &o.stats.checkpointed_loops {
            runs.outcome.counts.loop_instances += 1;
            if let Err((check, detail)) = check_record(r) {
                runs.outcome.findings.push(finding(check, &what, detail));
            }
        }
    }
    if full {
        runs.outcome.outputs.push((CHECKPOINTED.into(), text));
    }
}

/// Checks one record of a reversed loop instance against its schedule's
/// promise: an independent loop runs each iteration once untaped; an
/// online one repeats no iteration more than `r(l + 1, s)` times; a
/// binomial one takes exactly `t(l, s)` forward steps and repeats no
/// iteration more than `r(l, s)` times; a fixed-point one reports its
/// adjoint iterations, within its limit, and whether they converged; none
/// holds more snapshots than it was allowed. `Err` holds the finding's
/// class (one line, no numbers) and what was seen.
pub fn check_record(r: &LoopRecord) -> Result<(), (&'static str, String)> {
    let at = format!(
        "loop at line {} of {}: {} iterations, {} snapshots",
        r.line, r.routine, r.iterations, r.snapshots
    );
    if r.peak_snapshots > r.snapshots && r.schedule != "fixed-point" {
        return Err((
            "checkpointed loop holds more snapshots than allowed",
            format!("{at}: {} snapshots held", r.peak_snapshots),
        ));
    }
    let reps = r.max_repetitions.unwrap_or(0);
    match r.schedule {
        "independent" => {
            if r.forward_steps != r.iterations || r.max_repetitions.is_some_and(|m| m > 1) {
                return Err((
                    "independent loop rerun",
                    format!(
                        "{at}: {} forward steps, {reps} repetitions",
                        r.forward_steps
                    ),
                ));
            }
        }
        "online" => {
            let bound = xaif_revolve::repetitions(r.iterations + 1, r.snapshots)
                .max(u64::from(r.iterations > 0));
            if reps > bound {
                return Err((
                    "online checkpointed loop beyond its repetition bound",
                    format!("{at}: {reps} repetitions (bound {bound})"),
                ));
            }
        }
        "binomial" => {
            let t = xaif_revolve::min_forward_steps(r.iterations, r.snapshots);
            // The taping sweep's run counts: every iteration but the last
            // runs untaped at least once.
            let bound = xaif_revolve::repetitions(r.iterations, r.snapshots)
                .max(u64::from(r.iterations > 1));
            if r.forward_steps != t || reps > bound {
                return Err((
                    "checkpointed loop off the binomial schedule",
                    format!(
                        "{at}: {} forward steps (t = {t}), {reps} repetitions (r = {bound})",
                        r.forward_steps
                    ),
                ));
            }
        }
        "fixed-point" => match (r.adjoint_iterations, r.converged) {
            (Some(k), Some(_)) if k >= 1 => {}
            _ => {
                return Err((
                    "fixed-point loop without its adjoint iterations",
                    format!("{at}: {r:?}"),
                ))
            }
        },
        other => {
            return Err((
                "loop record of an unknown schedule",
                format!("{at}: schedule `{other}`"),
            ))
        }
    }
    Ok(())
}
