//! Every loop of the regression corpus marked with every kind
//! (`cargo xtask loop-sweep`, and the suite's `corpus_loops.rs`, both with
//! every setting of [`Sweep::exhaustive`]; 3 s): each `ForLoop`, `PreLoop` and `PostLoop` with a line
//! number, of every example that runs under the generic harness, is marked
//! alone `--checkpoint-loop`, `--fixed-point-loop` and `--independent-loop`,
//! and each adjoint the transformation accepts is run in split and joint
//! mode against the unmarked adjoint of the same example.
//!
//! - A refusal is how a loop says it does not admit a kind; it must be a
//!   located error (the element, or two statements) and is counted by its
//!   reason ([`refusal_class`]). A refusal without a location, or with a
//!   reason none of the kinds gives, is a finding.
//! - An accepted checkpoint or independent mark must give the unmarked
//!   Jacobian (1e-12 relative, 1e-13 absolute, as the checkpointing tests
//!   hold), with every tape, checkpoint stack and snapshot empty at the
//!   end, and every reversed instance within its schedule's promise
//!   ([`crate::loops::check_record`]).
//! - An accepted fixed-point mark differentiates the fixed point, not the
//!   iterations run, so its Jacobian may differ from the unmarked one; but
//!   where every instance reports `converged` its Jacobian must agree with
//!   the unmarked one within [`Sweep::fixed_point_agreement`]: a different
//!   Jacobian reported as converged is a wrong number. A run that did not
//!   converge must say so (`converged: false`, the counter of unconverged
//!   loops that `xaifb run` warns of).
//! - A panic, a failed run (the step budget included) or an output that
//!   does not read back is a finding.

use std::collections::BTreeMap;
use std::path::Path;

use xaif_cfrev::checkpoint::LoopMark;
use xaif_cfrev::marks::{FixedPointMark, IndependentMark, DEFAULT_MAX_ITERATIONS};
use xaif_cfrev::AdjointOptions;
use xaif_interp::corpus::{read_index, Example};
use xaif_interp::{compare, Harness, Jacobian, Mode, Outcome, Prog};
use xaif_linearize::catalogue::read_catalogues;
use xaif_linearize::tangent::TransformError;
use xaif_linearize::Catalogue;
use xaif_model::{NonInlinableCatalogue, Program, RoutineBody, VertexKind};

use crate::check::{guarded, jacobian_difference};

/// What is swept: the settings of each kind's mark.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// `--checkpoint-loop R:L:S` for each of these `S`.
    pub snapshots: Vec<u64>,
    /// `--fixed-point-loop R:L:TOL:MAXITER` for each of these.
    pub fixed_point: Vec<(f64, u64)>,
    /// How far a converged fixed-point loop's Jacobian may be from the
    /// unmarked one (relative to the largest entry).
    pub fixed_point_agreement: f64,
    /// Interpreter steps one run may take.
    pub step_budget: u64,
    /// Only examples whose name contains this.
    pub only: Option<String>,
}

impl Sweep {
    /// One setting per kind: every loop, every kind, split and joint.
    pub fn quick() -> Self {
        Sweep {
            snapshots: vec![2],
            fixed_point: vec![(1e-12, DEFAULT_MAX_ITERATIONS)],
            fixed_point_agreement: 1e-8,
            step_budget: 50_000_000,
            only: None,
        }
    }

    /// Snapshots 1, 2, 3 and 10; fixed-point tolerances 1e-12 (limit
    /// 1,000) and 1e-8 (limit 20).
    pub fn exhaustive() -> Self {
        Sweep {
            snapshots: vec![1, 2, 3, 10],
            fixed_point: vec![(1e-12, DEFAULT_MAX_ITERATIONS), (1e-8, 20)],
            ..Sweep::quick()
        }
    }
}

/// One marked loop of the corpus.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Site {
    /// The example.
    pub example: String,
    /// The routine's `symbol_id`.
    pub routine: String,
    /// The loop's line.
    pub line: i64,
    /// `ForLoop`, `PreLoop` or `PostLoop`.
    pub element: &'static str,
}

/// What a sweep found, by kind and reason.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Examples swept (their unmarked adjoint runs in both modes).
    pub examples: usize,
    /// Generic-harness examples left out, and why (their unmarked
    /// adjoint does not transform or run).
    pub left_out: Vec<(String, String)>,
    /// The loops marked, each once per kind and setting.
    pub sites: Vec<Site>,
    /// Loops without a line number (no flag can name them).
    pub unnamed: usize,
    /// Accepted marks, by kind (`checkpoint (binomial)`, `checkpoint
    /// (online)`, `fixed-point`, `independent`).
    pub accepted: BTreeMap<String, usize>,
    /// Refused marks, by kind and reason.
    pub refused: BTreeMap<(String, String), usize>,
    /// Loops (not marks) that admit each kind at least once.
    pub admitting: BTreeMap<String, usize>,
    /// Split and joint runs of marked adjoints.
    pub runs: usize,
    /// Reversed loop instances checked, by schedule.
    pub instances: BTreeMap<String, usize>,
    /// Fixed-point runs with every instance converged, and those with one
    /// that did not (and said so).
    pub fixed_point_converged: usize,
    /// See [`Report::fixed_point_converged`].
    pub fixed_point_unconverged: usize,
    /// The largest relative difference from the unmarked Jacobian of a
    /// converged fixed-point run.
    pub fixed_point_worst: f64,
    /// The largest relative difference from the unmarked Jacobian of a
    /// checkpoint or independent run.
    pub exact_worst: f64,
    /// Disagreements: one line each (example, mark, mode, what).
    pub findings: Vec<String>,
}

/// The examples the sweep takes: those that run under the generic
/// harness, with an adjoint input.
pub fn examples(shared: &Path) -> Result<Vec<Example>, String> {
    Ok(read_index(&shared.join("corpus"))?
        .into_iter()
        .filter(Example::runs_under_generic_harness)
        .collect())
}

/// The example's adjoint input and the engine options it was built with.
pub fn example_input(ex: &Example) -> Result<(Program, AdjointOptions), String> {
    let (p, source) = xaif_model::read_program_file(&ex.input(true)).map_err(|e| e.to_string())?;
    xaif_model::validate_program(&p, &source).map_err(|e| e.to_string())?;
    let mut options = AdjointOptions::default();
    options.flatten.per_statement |= ex.options.contains("-S");
    options.zero_locals |= ex.options.contains("-D");
    options.rename |= ex.options.contains("'-r'");
    Ok((p, options))
}

/// The catalogues the example was built with.
pub fn example_catalogues(
    shared: &Path,
    ex: &Example,
) -> Result<(Catalogue, Option<NonInlinableCatalogue>), String> {
    let schema = shared.join("xaif/schema/examples");
    read_catalogues(
        &schema.join("inlinable_intrinsics.xaif"),
        ex.options
            .contains("-N")
            .then(|| schema.join("noninlinable_intrinsics.xaif"))
            .as_deref(),
    )
    .map_err(|e| e.to_string())
}

/// Every loop of `p` that a flag can name (routine, line, element), and
/// the number of those without a line number.
pub fn loops(p: &Program) -> (Vec<(String, i64, &'static str)>, usize) {
    let mut out = Vec::new();
    let mut unnamed = 0;
    for (_, r) in p.routines.iter() {
        let RoutineBody::Graph(cfg) = &r.body else {
            continue;
        };
        for v in p.cfgs[*cfg].vertex_ids() {
            let element = match p.vertices[v].kind {
                VertexKind::ForLoop { .. } => "ForLoop",
                VertexKind::PreLoop(_) => "PreLoop",
                VertexKind::PostLoop(_) => "PostLoop",
                _ => continue,
            };
            match p.vertices[v].attrs.int("lineNumber") {
                Some(line) => out.push((r.symbol_name().to_string(), line, element)),
                None => unnamed += 1,
            }
        }
    }
    (out, unnamed)
}

/// The reason class of a refusal, by the words each refusal of a marked
/// loop uses (`xaif_cfrev::checkpoint`); `None` for a refusal none of
/// them gives.
pub fn refusal_class(message: &str) -> Option<&'static str> {
    const CLASSES: &[(&str, &str)] = &[
        (
            "the loop is left by a jump",
            "left by a jump other than an exit to its successor",
        ),
        (
            "its body is not structured",
            "body not structured, or entered by a jump",
        ),
        (
            "a while loop's iterations cannot be independent",
            "a while or post-test loop",
        ),
        (
            "the loop is left by an exit, so its iterations are not independent",
            "left by an exit",
        ),
        (
            "its trip count is not known when it starts",
            "trip count not known when it starts",
        ),
        (
            "the iterations are not independent",
            "a dependence carried between iterations",
        ),
        (
            "runs the same number of iterations whatever its state does",
            "a counted loop that no exit leaves",
        ),
        (
            "no active variable is carried",
            "no active variable carried between iterations",
        ),
        (
            "which a snapshot cannot hold",
            "a state a snapshot cannot hold",
        ),
        (
            "which one is meant is not clear",
            "several loops on one line",
        ),
        ("marked loops nested", "marked nesting too deep"),
    ];
    CLASSES
        .iter()
        .find(|(needle, _)| message.contains(needle))
        .map(|(_, class)| *class)
}

/// One mark of a loop.
#[derive(Clone, Debug)]
enum Kind {
    Checkpoint(u64),
    FixedPoint(f64, u64),
    Independent,
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Checkpoint(_) => "checkpoint",
            Kind::FixedPoint(..) => "fixed-point",
            Kind::Independent => "independent",
        }
    }

    /// The flag as a user writes it.
    fn flag(&self, routine: &str, line: i64) -> String {
        match self {
            Kind::Checkpoint(s) => format!("--checkpoint-loop {routine}:{line}:{s}"),
            Kind::FixedPoint(t, m) => format!("--fixed-point-loop {routine}:{line}:{t:e}:{m}"),
            Kind::Independent => format!("--independent-loop {routine}:{line}"),
        }
    }

    fn options(&self, base: &AdjointOptions, routine: &str, line: i64) -> AdjointOptions {
        let mut o = base.clone();
        let routine = routine.to_string();
        match *self {
            Kind::Checkpoint(snapshots) => o.checkpoint_loops.push(LoopMark {
                routine,
                line,
                snapshots,
            }),
            Kind::FixedPoint(tolerance, max_iterations) => {
                o.fixed_point_loops.push(FixedPointMark {
                    routine,
                    line,
                    tolerance,
                    max_iterations,
                })
            }
            Kind::Independent => o.independent_loops.push(IndependentMark { routine, line }),
        }
        o
    }
}

/// The adjoint's text, or the refusal (with whether it is located).
fn transform(
    p: &Program,
    cat: &(Catalogue, Option<NonInlinableCatalogue>),
    options: &AdjointOptions,
) -> Result<Result<String, (String, bool)>, String> {
    guarded(|| {
        Ok(
            match xaif_cfrev::adjoint(p, &cat.0, cat.1.as_ref(), options) {
                Ok(r) => Ok(crate::check::output_text(r.transformed.program)),
                Err(e) => {
                    let located = matches!(
                        e,
                        TransformError::At { .. } | TransformError::Between { .. }
                    );
                    Err((e.to_string(), located))
                }
            },
        )
    })
}

/// Reads back, gates and compiles an output.
fn load(text: &str) -> Result<Prog, String> {
    guarded(|| {
        let (out, source) = xaif_model::read_program_str(text, None).map_err(|e| e.to_string())?;
        xaif_model::validate_program(&out, &source).map_err(|e| e.to_string())?;
        Ok(xaif_interp::compile(&out, &source))
    })
}

/// Runs `prog` as example `ex` runs, in `mode`.
fn run(prog: &Prog, ex: &Example, mode: Mode, steps: u64) -> Result<Outcome, String> {
    let spec = ex.harness()?;
    guarded(|| {
        let mut h = Harness::new(prog, spec);
        h.limits.steps = steps;
        h.limits.time = None;
        h.run(mode).map_err(|e| e.to_string())
    })
}

/// Why `got` is not `want` within `rel` relative (1e-13 absolute, as the
/// checkpointing tests compare), if it is not.
fn differs(got: &Jacobian, want: &Jacobian, rel: f64) -> Option<String> {
    match compare(got, want, rel, 1e-13) {
        Ok(c) if c.matches() => None,
        Ok(c) => Some(format!(
            "worst relative difference {:.3e} from the unmarked Jacobian",
            c.max_rel
        )),
        Err(e) => Some(e),
    }
}

/// Sweeps the examples of `shared` (see the module's comment).
pub fn sweep(shared: &Path, sweep: &Sweep) -> Result<Report, String> {
    let mut report = Report::default();
    for ex in examples(shared)? {
        if sweep.only.as_deref().is_some_and(|o| !ex.name.contains(o)) {
            continue;
        }
        sweep_example(shared, &ex, sweep, &mut report);
    }
    report.sites.sort();
    Ok(report)
}

/// The unmarked adjoint's Jacobians in split and joint mode.
fn unmarked(
    ex: &Example,
    p: &Program,
    cat: &(Catalogue, Option<NonInlinableCatalogue>),
    base: &AdjointOptions,
    steps: u64,
) -> Result<[Jacobian; 2], String> {
    let text = transform(p, cat, base)?.map_err(|(e, _)| e)?;
    let prog = load(&text)?;
    let split = run(&prog, ex, Mode::Split, steps)?;
    let joint = run(&prog, ex, Mode::Joint, steps)?;
    Ok([split.jacobian, joint.jacobian])
}

fn sweep_example(shared: &Path, ex: &Example, sweep: &Sweep, report: &mut Report) {
    let prepared = example_input(ex).and_then(|(p, base)| {
        let cat = example_catalogues(shared, ex)?;
        let plain = unmarked(ex, &p, &cat, &base, sweep.step_budget)?;
        Ok((p, base, cat, plain))
    });
    let (p, base, cat, plain) = match prepared {
        Ok(x) => x,
        Err(e) => {
            report.left_out.push((ex.name.clone(), e));
            return;
        }
    };
    report.examples += 1;
    let (sites, unnamed) = loops(&p);
    report.unnamed += unnamed;
    let mut kinds: Vec<Kind> = sweep
        .snapshots
        .iter()
        .map(|&s| Kind::Checkpoint(s))
        .collect();
    kinds.extend(
        sweep
            .fixed_point
            .iter()
            .map(|&(t, m)| Kind::FixedPoint(t, m)),
    );
    kinds.push(Kind::Independent);
    for (routine, line, element) in sites {
        let mut admits: Vec<&'static str> = Vec::new();
        for kind in &kinds {
            let flag = kind.flag(&routine, line);
            let name = format!("{} {flag}", ex.name);
            let options = kind.options(&base, &routine, line);
            let text = match transform(&p, &cat, &options) {
                Err(e) => {
                    report.findings.push(format!("{name}: {e}"));
                    continue;
                }
                Ok(Err((e, located))) => {
                    match refusal_class(&e) {
                        Some(class)
                            if located && e.contains(&flag_prefix(kind, &routine, line)) =>
                        {
                            *report
                                .refused
                                .entry((kind.name().to_string(), class.to_string()))
                                .or_default() += 1;
                        }
                        _ => report.findings.push(format!(
                            "{name}: refused {}: {e}",
                            if located {
                                "for another reason"
                            } else {
                                "without a location"
                            }
                        )),
                    }
                    continue;
                }
                Ok(Ok(text)) => text,
            };
            let label = match kind {
                Kind::Checkpoint(_) if text.contains("oad_revolve_begin_online") => {
                    "checkpoint (online)"
                }
                Kind::Checkpoint(_) => "checkpoint (binomial)",
                _ => kind.name(),
            };
            *report.accepted.entry(label.to_string()).or_default() += 1;
            if !admits.contains(&label) {
                admits.push(label);
            }
            let prog = match load(&text) {
                Ok(prog) => prog,
                Err(e) => {
                    report
                        .findings
                        .push(format!("{name}: the output does not read back: {e}"));
                    continue;
                }
            };
            for (k, mode) in [Mode::Split, Mode::Joint].into_iter().enumerate() {
                report.runs += 1;
                let what = format!("{name} {mode:?}");
                match run(&prog, ex, mode, sweep.step_budget) {
                    Ok(o) => check_outcome(&what, kind, &o, &plain[k], sweep, report),
                    Err(e) => report.findings.push(format!("{what}: the run failed: {e}")),
                }
            }
        }
        for label in admits {
            *report.admitting.entry(label.to_string()).or_default() += 1;
        }
        report.sites.push(Site {
            example: ex.name.clone(),
            routine,
            line,
            element,
        });
    }
}

/// How a refusal of the mark names it (`--checkpoint-loop head:12`,
/// without the settings).
fn flag_prefix(kind: &Kind, routine: &str, line: i64) -> String {
    let flag = match kind {
        Kind::Checkpoint(_) => "--checkpoint-loop",
        Kind::FixedPoint(..) => "--fixed-point-loop",
        Kind::Independent => "--independent-loop",
    };
    format!("{flag} {routine}:{line}")
}

/// The checks of one run of a marked adjoint.
fn check_outcome(
    what: &str,
    kind: &Kind,
    o: &Outcome,
    plain: &Jacobian,
    sweep: &Sweep,
    report: &mut Report,
) {
    if !o.tapes_empty {
        report.findings.push(format!(
            "{what}: tapes, checkpoints or snapshots not empty at the end"
        ));
    }
    let records = &o.stats.checkpointed_loops;
    if records.len() as u64 != o.stats.checkpointed_instances {
        report.findings.push(format!(
            "{what}: {} records of {} reversed instances",
            records.len(),
            o.stats.checkpointed_instances
        ));
    }
    for r in records {
        *report.instances.entry(r.schedule.to_string()).or_default() += 1;
        if let Err((class, detail)) = crate::loops::check_record(r) {
            report.findings.push(format!("{what}: {class}: {detail}"));
        }
        let expected = match kind {
            Kind::Checkpoint(_) => ["binomial", "online"].contains(&r.schedule),
            Kind::FixedPoint(..) => r.schedule == "fixed-point",
            Kind::Independent => r.schedule == "independent",
        };
        if !expected {
            report
                .findings
                .push(format!("{what}: a record of schedule `{}`", r.schedule));
        }
    }
    let d = jacobian_difference(&o.jacobian, plain);
    let shown = || {
        format!(
            "\nunmarked:\n{}marked:\n{}",
            plain.to_out("AD"),
            o.jacobian.to_out("AD")
        )
    };
    if let Kind::FixedPoint(..) = kind {
        let unconverged = records
            .iter()
            .filter(|r| r.converged == Some(false))
            .count();
        if unconverged as u64 != o.stats.unconverged_loops {
            report.findings.push(format!(
                "{what}: {unconverged} records not converged, {} counted (and warned of)",
                o.stats.unconverged_loops
            ));
        }
        if unconverged > 0 {
            report.fixed_point_unconverged += 1;
            return;
        }
        report.fixed_point_converged += 1;
        match differs(&o.jacobian, plain, sweep.fixed_point_agreement) {
            Some(e) => report
                .findings
                .push(format!("{what}: converged, but {e}{}", shown())),
            None => report.fixed_point_worst = report.fixed_point_worst.max(d),
        }
        return;
    }
    match differs(&o.jacobian, plain, 1e-12) {
        Some(e) => report.findings.push(format!("{what}: {e}{}", shown())),
        None => report.exact_worst = report.exact_worst.max(d),
    }
}

/// The report as text: counts by kind and reason, then the findings.
pub fn summary(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let mut by_element: BTreeMap<&str, usize> = BTreeMap::new();
    for site in &r.sites {
        *by_element.entry(site.element).or_default() += 1;
    }
    let _ = writeln!(
        s,
        "{} examples, {} loops ({}), {} without a line number; {} left out",
        r.examples,
        r.sites.len(),
        by_element
            .iter()
            .map(|(e, n)| format!("{n} {e}"))
            .collect::<Vec<_>>()
            .join(", "),
        r.unnamed,
        r.left_out.len()
    );
    for (name, why) in &r.left_out {
        let _ = writeln!(
            s,
            "  left out: {name}: {}",
            why.lines().next().unwrap_or("")
        );
    }
    let _ = writeln!(s, "accepted marks:");
    for (kind, n) in &r.accepted {
        let loops = r.admitting.get(kind).copied().unwrap_or(0);
        let _ = writeln!(s, "  {kind}: {n} (on {loops} loops)");
    }
    let _ = writeln!(s, "refused marks:");
    for ((kind, class), n) in &r.refused {
        let _ = writeln!(s, "  {kind}: {class}: {n}");
    }
    let _ = writeln!(
        s,
        "{} runs, reversed instances {}; fixed point: {} runs converged (worst {:.1e} from the unmarked Jacobian), {} not converged (warned); checkpoint and independent: worst {:.1e}",
        r.runs,
        r.instances
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        r.fixed_point_converged,
        r.fixed_point_worst,
        r.fixed_point_unconverged,
        r.exact_worst
    );
    let _ = writeln!(s, "{} findings", r.findings.len());
    for f in &r.findings {
        let _ = writeln!(s, "  {f}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use xaif_interp::LoopRecord;

    #[test]
    fn refusals_are_classed_and_unknown_ones_are_not() {
        assert_eq!(
            refusal_class(
                "--independent-loop head:7: the iterations are not independent: statement `5`"
            ),
            Some("a dependence carried between iterations")
        );
        assert_eq!(refusal_class("routine `head`: something else"), None);
    }

    #[test]
    fn records_off_their_schedule_are_findings() {
        let binomial = LoopRecord {
            routine: "head".into(),
            line: 3,
            schedule: "binomial",
            iterations: 10,
            snapshots: 2,
            forward_steps: xaif_revolve::min_forward_steps(10, 2),
            max_repetitions: Some(xaif_revolve::repetitions(10, 2)),
            peak_snapshots: 2,
            ..LoopRecord::default()
        };
        assert!(crate::loops::check_record(&binomial).is_ok());
        let more_steps = LoopRecord {
            forward_steps: binomial.forward_steps + 1,
            ..binomial.clone()
        };
        assert!(crate::loops::check_record(&more_steps).is_err());
        let repeated = LoopRecord {
            max_repetitions: Some(xaif_revolve::repetitions(10, 2) + 1),
            ..binomial.clone()
        };
        assert!(crate::loops::check_record(&repeated).is_err());
        let held = LoopRecord {
            peak_snapshots: 3,
            ..binomial.clone()
        };
        assert!(crate::loops::check_record(&held).is_err());
        let fixed_point = LoopRecord {
            schedule: "fixed-point",
            ..binomial
        };
        assert!(crate::loops::check_record(&fixed_point).is_err());
        let fixed_point = LoopRecord {
            adjoint_iterations: Some(4),
            converged: Some(true),
            ..fixed_point
        };
        assert!(crate::loops::check_record(&fixed_point).is_ok());
    }
}
