//! The checkpointing variant (`cargo xtask stress --checkpoint-loops`):
//! every loop of a generated program (`ForLoop`, and the while and
//! post-test loops, checkpointed online) marked `--checkpoint-loop`, the
//! checkpointed adjoint run in split and joint mode against the adjoint
//! without checkpointing, its tapes, checkpoints and snapshots empty at the
//! end, every binomial instance taking exactly `t(l, s)` forward steps and
//! every online one repeating no iteration more than `r(l + 1, s)` times;
//! then every `ForLoop` marked `--independent-loop` (refusals expected,
//! accepted marks checked by the Jacobian and one forward run), and the
//! fixed-point iterations `--fixed-point-loop`: converged, within 1e-8 of
//! the adjoint without marks; or reported, with a warning, not to have
//! reached their fixed point (counted, their Jacobian not compared: a loop
//! left by an exit reverses its iteration before the last, which a map
//! converging in two or three iterations has not reached).
//!
//! A loop the transformation refuses is unmarked and the transformation
//! repeated; refusals are counted, and are findings unless they are the
//! ones the issue asks for (a loop left by a jump, or one whose body such
//! a jump makes unstructured).

use xaif_cfrev::checkpoint::LoopMark;
use xaif_cfrev::marks::{FixedPointMark, IndependentMark};
use xaif_cfrev::AdjointOptions;
use xaif_interp::{Harness, Jacobian, LoopRecord, Mode};
use xaif_model::{Program, RoutineBody, VertexKind};

use crate::check::{
    finding, guarded, jacobian_difference, output_text, Checker, Runs, CHECKPOINTED, FIXED_POINT,
    INDEPENDENT,
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

/// Which marks a checkpointing-variant transformation gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    /// Every loop `--checkpoint-loop` (binomial when counted, online
    /// otherwise: while and post-test loops, loops left by an exit).
    Checkpoint,
    /// The fixed-point iterations `--fixed-point-loop`, the other loops
    /// `--checkpoint-loop`.
    FixedPoint,
    /// Every `ForLoop` `--independent-loop`.
    Independent,
}

/// The adjoint tolerance and iteration limit the fixed-point marks give.
const FIXED_POINT_TOLERANCE: f64 = 1e-12;
/// See [`FIXED_POINT_TOLERANCE`].
const FIXED_POINT_MAX_ITERATIONS: u64 = 1000;

/// Whether error `e` names the mark `flag routine:line` (and not one of a
/// longer line number).
fn names(e: &str, flag: &str, routine: &str, line: i64) -> bool {
    let needle = format!("{flag} {routine}:{line}");
    e.match_indices(&needle).any(|(at, _)| {
        !e[at + needle.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

/// The checkpointed adjoint with as many loops marked as can be: refused
/// marks are dropped (counted; a finding when unexpected).
///
/// With [`Pass::Independent`], the `ForLoop`s are marked
/// `--independent-loop` instead: a refusal naming the mark is expected
/// (random loops often carry a dependence); an accepted mark is checked by
/// its Jacobian. With [`Pass::FixedPoint`], the loops at `fixed_points`
/// are marked `--fixed-point-loop`: a refusal is expected where a
/// checkpoint mark's would be, or when the iteration carries no active
/// state (its parameters depend on no independent).
fn transform(
    checker: &Checker,
    runs: &mut Runs<'_>,
    p: &Program,
    pass: Pass,
    fixed_points: &[(String, i64)],
) -> Option<(String, String)> {
    let mut options = AdjointOptions {
        checkpoint_loops: marks(p),
        ..AdjointOptions::default()
    };
    if pass == Pass::FixedPoint {
        let (fixed, others): (Vec<LoopMark>, Vec<LoopMark>) = options
            .checkpoint_loops
            .drain(..)
            .partition(|m| fixed_points.contains(&(m.routine.clone(), m.line)));
        options.checkpoint_loops = others;
        options.fixed_point_loops = fixed
            .into_iter()
            .map(|m| FixedPointMark {
                routine: m.routine,
                line: m.line,
                tolerance: FIXED_POINT_TOLERANCE,
                max_iterations: FIXED_POINT_MAX_ITERATIONS,
            })
            .collect();
        if options.fixed_point_loops.is_empty() {
            return None;
        }
    }
    if pass == Pass::Independent {
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
        if options.checkpoint_loops.is_empty()
            && options.independent_loops.is_empty()
            && options.fixed_point_loops.is_empty()
        {
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
                runs.outcome.counts.fixed_point_loops += options.fixed_point_loops.len();
                let flags: Vec<String> = options
                    .checkpoint_loops
                    .iter()
                    .map(|m| format!("--checkpoint-loop {}:{}:{}", m.routine, m.line, m.snapshots))
                    .chain(options.fixed_point_loops.iter().map(|m| {
                        format!(
                            "--fixed-point-loop {}:{}:{}:{}",
                            m.routine, m.line, m.tolerance, m.max_iterations
                        )
                    }))
                    .chain(
                        options
                            .independent_loops
                            .iter()
                            .map(|m| format!("--independent-loop {}:{}", m.routine, m.line)),
                    )
                    .collect();
                return Some((text, flags.join(" ")));
            }
            Err(e) => e,
        };
        if pass == Pass::Independent {
            let named = options
                .independent_loops
                .iter()
                .position(|m| names(&e, "--independent-loop", &m.routine, m.line));
            let Some(k) = named else {
                runs.outcome.findings.push(finding(
                    format!(
                        "independent-loop adjoint: {}",
                        crate::check::error_class(&e)
                    ),
                    INDEPENDENT,
                    e,
                ));
                return None;
            };
            runs.outcome.counts.refused_loops += 1;
            options.independent_loops.remove(k);
            continue;
        }
        if let Some(k) = options
            .fixed_point_loops
            .iter()
            .position(|m| names(&e, "--fixed-point-loop", &m.routine, m.line))
        {
            if !EXPECTED_REFUSALS.iter().any(|why| e.contains(why))
                && !e.contains("not a fixed-point iteration: no active variable is carried")
            {
                runs.outcome.findings.push(finding(
                    format!(
                        "fixed-point loop refused: {}",
                        crate::check::error_class(&e)
                    ),
                    FIXED_POINT,
                    e,
                ));
            }
            runs.outcome.counts.refused_fixed_point_loops += 1;
            options.fixed_point_loops.remove(k);
            continue;
        }
        let named = options
            .checkpoint_loops
            .iter()
            .position(|m| e.contains(&format!("--checkpoint-loop {}:{}:", m.routine, m.line)));
        let Some(k) = named else {
            runs.outcome.findings.push(finding(
                format!("checkpointed adjoint: {}", crate::check::error_class(&e)),
                if pass == Pass::FixedPoint {
                    FIXED_POINT
                } else {
                    CHECKPOINTED
                },
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
/// Jacobians of the adjoint without checkpointing by mode; with the loops
/// at `fixed_points` (routine, line) marked `--fixed-point-loop` too when
/// there are any.
pub(crate) fn check_checkpointed(
    checker: &Checker,
    runs: &mut Runs<'_>,
    p: &Program,
    adjoints: &[(Mode, Jacobian)],
    full: bool,
    fixed_points: &[(String, i64)],
) {
    for pass in [Pass::Checkpoint, Pass::FixedPoint, Pass::Independent] {
        if pass == Pass::FixedPoint && fixed_points.is_empty() {
            continue;
        }
        check_marked(
            checker,
            runs,
            p,
            adjoints,
            full && pass == Pass::Checkpoint,
            pass,
            fixed_points,
        );
    }
}

/// [`check_checkpointed`] with the marks of `pass`.
fn check_marked(
    checker: &Checker,
    runs: &mut Runs<'_>,
    p: &Program,
    adjoints: &[(Mode, Jacobian)],
    full: bool,
    pass: Pass,
    fixed_points: &[(String, i64)],
) {
    let Some((text, flags)) = transform(checker, runs, p, pass, fixed_points) else {
        return;
    };
    let variant = match pass {
        Pass::Checkpoint => CHECKPOINTED,
        Pass::FixedPoint => FIXED_POINT,
        Pass::Independent => INDEPENDENT,
    };
    let tolerance = if pass == Pass::FixedPoint {
        checker.limits.fixed_point
    } else {
        checker.limits.marked
    };
    // The counted loops left by an exit, whose online instances are
    // counted apart.
    let for_loops: Vec<(String, i64)> = p
        .routines
        .iter()
        .filter_map(|(_, r)| match &r.body {
            RoutineBody::Graph(cfg) => Some((r, *cfg)),
            _ => None,
        })
        .flat_map(|(r, cfg)| {
            p.cfgs[cfg]
                .vertex_ids()
                .filter_map(move |v| match p.vertices[v].kind {
                    VertexKind::ForLoop { .. } => p.vertices[v]
                        .attrs
                        .int("lineNumber")
                        .map(|l| (r.symbol_name().to_string(), l)),
                    _ => None,
                })
        })
        .collect();
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
        let what = format!("{variant} ({mode:?})");
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
        // A fixed-point loop that reports, with a warning, that it did not
        // reach its fixed point (a loop left by an exit reverses its
        // iteration before the last, which a map converging in a few
        // iterations has not yet reached) gives a Jacobian it warns of.
        let not_reached = o
            .stats
            .checkpointed_loops
            .iter()
            .filter(|r| r.reached == Some(false))
            .count();
        if not_reached > 0 && o.stats.unconverged_loops == 0 {
            runs.outcome.findings.push(finding(
                "fixed-point loop not reached but not counted (and warned of)",
                &what,
                "",
            ));
        }
        runs.outcome.counts.fixed_point_not_reached += not_reached;
        let d = if not_reached > 0 {
            0.0
        } else {
            jacobian_difference(plain, &o.jacobian)
        };
        if d > tolerance || d.is_nan() {
            runs.outcome.findings.push(finding(
                match pass {
                    Pass::Checkpoint => {
                        "checkpointed adjoint differs from the adjoint without checkpointing"
                    }
                    Pass::FixedPoint => {
                        "fixed-point adjoint differs from the adjoint without marks"
                    }
                    Pass::Independent => {
                        "independent-loop adjoint differs from the adjoint without marks"
                    }
                },
                &what,
                format!(
                    "{flags}: worst relative difference {d:.3e}\nwithout:\n{}with:\n{}",
                    plain.to_out("AD"),
                    o.jacobian.to_out("AD")
                ),
            ));
        }
        for r in &o.stats.checkpointed_loops {
            runs.outcome.counts.loop_instances += 1;
            match r.schedule {
                "fixed-point" => runs.outcome.counts.fixed_point_instances += 1,
                "independent" => runs.outcome.counts.independent_instances += 1,
                "online" => {
                    runs.outcome.counts.online_instances += 1;
                    if for_loops.contains(&(r.routine.clone(), r.line)) {
                        runs.outcome.counts.exit_instances += 1;
                    }
                }
                _ => runs.outcome.counts.binomial_instances += 1,
            }
            if r.schedule == "fixed-point" && r.converged != Some(true) && r.reached != Some(false)
            {
                runs.outcome.findings.push(finding(
                    "fixed-point loop's adjoint not converged",
                    &what,
                    format!(
                        "loop at line {} of {}: {} iterations, converged {:?} after {:?} adjoint iterations, final change {:?}, forward change {:?}",
                        r.line, r.routine, r.iterations, r.converged, r.adjoint_iterations, r.final_change, r.forward_change
                    ),
                ));
            }
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
