//! Every check of one program: the original's divided differences, the
//! tangent, the split and joint adjoints, the elimination strategies and
//! flag variants, determinism, tapes, panics and the step budget.

use std::panic::{catch_unwind, AssertUnwindSafe};

use xaif_cfrev::AdjointOptions;
use xaif_elim::{Chain, Config, Extent, Filter, Method, Mode as Direction, Strategy};
use xaif_interp::{compile, Harness, HarnessSpec, Jacobian, Mode, Prog};
use xaif_linearize::{Catalogue, FlattenOptions, TangentOptions};
use xaif_model::{NonInlinableCatalogue, Program};

/// Tolerances and limits of the checks.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Interpreter steps one run may take.
    pub step_budget: u64,
    /// Divided-difference step.
    pub h: f64,
    /// Relative tolerance between two derivative codes (rounding only).
    pub exact: f64,
    /// Relative tolerance between the tangent and central differences.
    pub dd: f64,
    /// Relative tolerance between the adjoint with loop marks
    /// (checkpointed, online, independent) and the one without: the same
    /// operations in the same order, so rounding alone.
    pub marked: f64,
    /// Relative tolerance between the adjoint with fixed-point iterations
    /// marked and the one without (`docs/checkpointing.md`: the two-phase
    /// adjoint's promise for an iteration converged to machine precision).
    pub fixed_point: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            step_budget: 20_000_000,
            h: 1e-6,
            exact: 1e-9,
            dd: 1e-5,
            marked: 1e-12,
            fixed_point: 1e-8,
        }
    }
}

/// One disagreement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The check that failed (one line, no numbers or names: findings of
    /// one class share it).
    pub check: String,
    /// Where it was seen first (`tangent`, `split adjoint`, a variant's
    /// flags); [`Checker::check_only`] repeats just that.
    pub variant: String,
    /// What was seen (and in which other variants).
    pub detail: String,
}

/// Counters of one program's checks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Jacobian entries compared with divided differences.
    pub dd_entries: usize,
    /// Entries where the function is not smooth at the point (one-sided
    /// differences disagree): compared with either side, or not at all
    /// across a jump.
    pub nonsmooth_entries: usize,
    /// Entries whose tangent disagreed with differences that did not
    /// settle as the step shrank (a function oscillating faster than
    /// the steps resolve) or stayed a kink with the tangent on neither
    /// side (kinks meeting at the point): not compared.
    pub unresolved_entries: usize,
    /// Non-zero entries of the tangent Jacobian.
    pub nonzero_entries: usize,
    /// Transformations done.
    pub transformations: usize,
    /// Derivative runs checked.
    pub runs: usize,
    /// Among them, runs of an output whose bytes an earlier run of this
    /// program had in the same mode (its results reused).
    pub reused_runs: usize,
    /// Loops checkpointed ([`Checker::checkpoint_loops`]).
    pub checkpointed_loops: usize,
    /// Loops the checkpointing refused, as it must: left by a jump or in a
    /// routine whose control flow is unstructured.
    pub refused_loops: usize,
    /// Reversed instances of checkpointed loops whose forward steps were
    /// checked against `t(l, s)`.
    pub loop_instances: usize,
    /// Among `loop_instances`, by schedule: binomial, online (of them on
    /// a counted loop left by an exit), fixed-point, independent.
    pub binomial_instances: usize,
    /// See `binomial_instances`.
    pub online_instances: usize,
    /// See `binomial_instances`.
    pub exit_instances: usize,
    /// See `binomial_instances`.
    pub fixed_point_instances: usize,
    /// See `binomial_instances`.
    pub independent_instances: usize,
    /// Fixed-point iterations marked `--fixed-point-loop`, and those
    /// refused (in a routine a jump makes unstructured, or with no active
    /// state: parameters that depend on no independent).
    pub fixed_point_loops: usize,
    /// See `fixed_point_loops`.
    pub refused_fixed_point_loops: usize,
    /// Fixed-point instances reported not to have reached their fixed
    /// point (their last complete iteration changed their state by more
    /// than the tolerance), with the warning: their Jacobian is not
    /// compared.
    pub fixed_point_not_reached: usize,
}

/// The outcome of checking one program.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Disagreements.
    pub findings: Vec<Finding>,
    /// Why the program was not checked (its function is not finite at the
    /// point): a generator matter, counted, not a finding.
    pub skipped: Option<String>,
    /// Counters.
    pub counts: Counts,
    /// Outputs to validate against `xaif_output.xsd`: (name, text).
    pub outputs: Vec<(String, String)>,
}

/// A transformation variant: flags and what they change.
#[derive(Clone, Debug)]
pub struct Variant {
    /// The flags as on the command line.
    pub name: String,
    tangent: Option<TangentOptions>,
    adjoint: Option<AdjointOptions>,
}

fn strategy(method: Method, filters: &[Filter], mode: Direction, total: bool) -> Config {
    let mut c = if total {
        Config::operations(Default::default())
    } else {
        Config::default()
    };
    c.strategies = vec![Strategy {
        method,
        chain: Chain::new(filters.to_vec(), mode),
        extent: if total {
            Extent::Total
        } else {
            Extent::ScarcityPreserving {
                allow_maintaining: false,
            }
        },
    }];
    c
}

/// The variants every program is checked under (besides the defaults):
/// elimination strategies (`--heuristic`), `-S`, `-n`, `-H`, `-M 0`,
/// `-A 0`, `-A 2`, `-m`, `-D`, `-p` in the tangent; `-S`, `-M 0`, `-A 2`,
/// a heuristic, `-p`, `-I`, `-P`, `-D`, `--enumerate-blocks`,
/// `--full-checkpoints` and `-f` (checkpoints restored in store order,
/// which the output marks and the oracle's joint mode follows) in the
/// adjoint.
pub fn variants(dead: &[String]) -> Vec<Variant> {
    let t = |name: &str, f: &dyn Fn(&mut TangentOptions)| {
        let mut o = TangentOptions::default();
        f(&mut o);
        Variant {
            name: name.to_string(),
            tangent: Some(o),
            adjoint: None,
        }
    };
    let a = |name: &str, f: &dyn Fn(&mut AdjointOptions)| {
        let mut o = AdjointOptions::default();
        f(&mut o);
        Variant {
            name: name.to_string(),
            tangent: None,
            adjoint: Some(o),
        }
    };
    use Filter::*;
    let dead = dead.to_vec();
    vec![
        t("tangent -S", &|o| {
            o.flatten = FlattenOptions {
                per_statement: true,
                no_alias_split: false,
            }
        }),
        t("tangent -n", &|o| o.nary = true),
        t("tangent -H", &|o| o.inline_calls = true),
        t("tangent -M 0", &|o| {
            o.elimination = Config::from_flags(0, 1, false).unwrap()
        }),
        t("tangent -A 0", &|o| {
            o.elimination = Config::from_flags(1, 0, false).unwrap()
        }),
        t("tangent -A 2", &|o| {
            o.elimination = Config::from_flags(1, 2, false).unwrap()
        }),
        t("tangent -m", &|o| {
            o.elimination = Config::from_flags(1, 1, true).unwrap()
        }),
        t("tangent -D", &|o| o.zero_locals = true),
        t("tangent -p (never-read actives)", &|o| {
            o.passive = dead.clone()
        }),
        t("tangent --heuristic vertex:forward -M 0", &|o| {
            o.elimination = strategy(Method::Vertex, &[], Direction::Forward, true)
        }),
        t("tangent --heuristic vertex:LM,reverse -M 0", &|o| {
            o.elimination = strategy(Method::Vertex, &[LowestMarkowitz], Direction::Reverse, true)
        }),
        t("tangent --heuristic edge:HS,LM,reverse", &|o| {
            o.elimination = strategy(
                Method::Edge,
                &[HighestSiblingDegree, LowestMarkowitz],
                Direction::Reverse,
                false,
            )
        }),
        t("tangent --heuristic edge:LF,forward -M 0", &|o| {
            o.elimination = strategy(Method::Edge, &[LowestFillIn], Direction::Forward, true)
        }),
        t("tangent --heuristic face:LRM,forward -M 0", &|o| {
            o.elimination = strategy(
                Method::Face,
                &[LowestRelativeMarkowitz],
                Direction::Forward,
                true,
            )
        }),
        a("adjoint -S", &|o| {
            o.flatten = FlattenOptions {
                per_statement: true,
                no_alias_split: false,
            }
        }),
        a("adjoint -M 0", &|o| {
            o.elimination = Config::from_flags(0, 1, false).unwrap()
        }),
        a("adjoint -A 2", &|o| {
            o.elimination = Config::from_flags(1, 2, false).unwrap()
        }),
        a("adjoint --heuristic vertex:LM,forward -M 0", &|o| {
            o.elimination = strategy(Method::Vertex, &[LowestMarkowitz], Direction::Forward, true)
        }),
        a("adjoint -p (never-read actives)", &|o| {
            o.passive = dead.clone()
        }),
        a("adjoint -I -P -D", &|o| {
            o.all_inout = true;
            o.checkpoint_all_formals = true;
            o.zero_locals = true;
        }),
        a("adjoint --enumerate-blocks", &|o| {
            o.force_enumeration = true
        }),
        a("adjoint --full-checkpoints", &|o| o.full_checkpoints = true),
        a("adjoint -f", &|o| o.restore_in_store_order = true),
    ]
}

/// The name of the checkpointing variant's findings.
pub const CHECKPOINTED: &str = "adjoint --checkpoint-loop";

/// The variant name of the checkpointing variant's adjoint with the
/// fixed-point iterations marked `--fixed-point-loop` (it starts with
/// [`CHECKPOINTED`]: shrinking repeats the checkpointing variant).
pub const FIXED_POINT: &str = "adjoint --checkpoint-loop --fixed-point-loop";

/// The variant name of the checkpointing variant's adjoint with every
/// `ForLoop` marked `--independent-loop` (see [`FIXED_POINT`]).
pub const INDEPENDENT: &str = "adjoint --checkpoint-loop --independent-loop";

/// What the checks need besides the program.
pub struct Checker {
    pub(crate) catalogue: Catalogue,
    pub(crate) noninlinable: NonInlinableCatalogue,
    /// Limits.
    pub limits: Limits,
    /// Whether to run the variants (the defaults are always checked).
    pub with_variants: bool,
    /// The checkpointing variant instead of the others: every `ForLoop`
    /// marked `--checkpoint-loop` (1 to 3 snapshots), the checkpointed
    /// adjoint held against the adjoint without checkpointing.
    pub checkpoint_loops: bool,
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic".into()
    }
}

/// Runs `f`, turning a panic into an error.
pub(crate) fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(format!("panic: {}", panic_text(p))),
    }
}

pub(crate) fn finding(
    check: impl Into<String>,
    variant: &str,
    detail: impl Into<String>,
) -> Finding {
    Finding {
        check: check.into(),
        variant: variant.to_string(),
        detail: detail.into(),
    }
}

/// One finding per class: the first, with the other variants it was seen
/// in.
fn merge(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<(Finding, Vec<String>)> = Vec::new();
    for f in findings {
        match out.iter_mut().find(|(g, _)| g.check == f.check) {
            Some((_, also)) => also.push(f.variant),
            None => out.push((f, Vec::new())),
        }
    }
    out.into_iter()
        .map(|(mut f, also)| {
            if !also.is_empty() {
                f.detail = format!(
                    "{}
also in: {}",
                    f.detail,
                    also.join(", ")
                );
            }
            f
        })
        .collect()
}

fn kind_of(mode: Mode) -> &'static str {
    if mode == Mode::Tangent {
        "tangent"
    } else {
        "adjoint"
    }
}

/// The class of an error message: its text without numbers, quotes and
/// line positions, so that findings of one mechanism group together.
pub fn error_class(msg: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for c in msg.chars() {
        match c {
            '`' | '\'' => {
                quoted = !quoted;
                out.push('_');
            }
            _ if quoted => {}
            '0'..='9' => {
                if !out.ends_with('#') {
                    out.push('#');
                }
            }
            _ => out.push(c),
        }
    }
    out.chars().take(120).collect()
}

/// Worst relative difference of two Jacobians, scaled by the larger of
/// their largest entries (and 1).
pub fn jacobian_difference(a: &Jacobian, b: &Jacobian) -> f64 {
    let scale = a
        .entries
        .iter()
        .chain(&b.entries)
        .fold(1.0f64, |s, x| s.max(x.abs()));
    a.entries
        .iter()
        .zip(&b.entries)
        .map(|(x, y)| if x == y { 0.0 } else { (x - y).abs() / scale })
        .fold(0.0, f64::max)
}

/// `<ȳ, J ẋ>` against `<Jᵀ ȳ, ẋ>` for a few deterministic vector pairs:
/// the largest relative disagreement.
pub fn dot_product_difference(tangent: &Jacobian, adjoint: &Jacobian, seed: u64) -> f64 {
    let (n, m) = (tangent.n, tangent.m);
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s % 2001) as f64 / 1000.0 - 1.0
    };
    let mut worst: f64 = 0.0;
    for _ in 0..3 {
        let xd: Vec<f64> = (0..n).map(|_| next()).collect();
        let yb: Vec<f64> = (0..m).map(|_| next()).collect();
        let mut lhs = 0.0;
        let mut rhs = 0.0;
        let mut scale: f64 = 1.0;
        for k in 1..=m {
            for i in 1..=n {
                let t = tangent.get(k, i) * xd[i - 1] * yb[k - 1];
                let a = adjoint.get(k, i) * xd[i - 1] * yb[k - 1];
                lhs += t;
                rhs += a;
                scale = scale.max(t.abs()).max(a.abs());
            }
        }
        worst = worst.max((lhs - rhs).abs() / scale);
    }
    worst
}

pub(crate) struct Runs<'a> {
    checker: &'a Checker,
    n: usize,
    m: usize,
    pub(crate) outcome: Outcome,
    /// The original's values at the point.
    y0: Vec<f64>,
    /// The distinct outputs so far, read back, gated and compiled, with
    /// their runs.
    outputs: Vec<Loaded>,
}

/// One distinct output text.
struct Loaded {
    text: String,
    /// The compiled program, or why it does not read back or pass the
    /// gate.
    prog: Result<Prog, String>,
    /// The runs done, by mode.
    results: Vec<(Mode, RunResult)>,
}

/// The original's dependents at x0 + step and x0 - step along one
/// independent.
type Around = (Vec<f64>, Vec<f64>);

/// The tangent's entry (k, i) at x0 moved by a step along independent i
/// (1-based k and i), when it can be run there.
type Near<'a> = dyn Fn(&Runs<'_>, usize, usize, f64) -> Option<f64> + 'a;

/// One Jacobian entry against divided differences at one step.
struct DdEntry {
    /// Whether the one-sided differences agree.
    smooth: bool,
    /// The central difference.
    central: f64,
    /// Its uncertainty from rounding.
    noise: f64,
    /// How far the tangent is from what the differences allow (relative
    /// to the entry's scale), if it is.
    disagreement: Option<f64>,
}

/// A run's Jacobian, whether its tapes ended empty, and (tangent mode)
/// the function's values; or the error.
type RunResult = Result<(Jacobian, bool, Option<Vec<f64>>), String>;

impl Runs<'_> {
    pub(crate) fn spec(&self) -> HarnessSpec {
        HarnessSpec::generic(self.n, self.m)
    }

    /// The tangent Jacobian of output `index` at x0 moved by `step` along
    /// independent `i` (1-based).
    fn tangent_at(&self, index: usize, i: usize, step: f64) -> Option<Jacobian> {
        let prog = self.outputs.get(index)?.prog.as_ref().ok()?;
        let mut spec = self.spec();
        *spec.x0.get_mut(i.checked_sub(1)?)? += step;
        let steps = self.checker.limits.step_budget;
        guarded(|| {
            let mut h = Harness::new(prog, spec);
            h.limits.steps = steps;
            h.limits.time = None;
            h.run(Mode::Tangent)
                .map(|o| o.jacobian)
                .map_err(|e| e.to_string())
        })
        .ok()
    }

    /// The index in `outputs` of an output's text, read back, gated and
    /// compiled the first time it is seen. (Texts are compared, not
    /// hashed: a program has a few dozen outputs, most of different
    /// lengths, and hashing their bytes cost more than comparing them.)
    fn load(&mut self, text: &str) -> usize {
        if let Some(i) = self.outputs.iter().position(|o| o.text == text) {
            return i;
        }
        let prog = guarded(|| {
            let (p, source) = xaif_model::read_program_str(text, None)
                .map_err(|e| format!("output does not read back: {e}"))?;
            xaif_model::validate_program(&p, &source)
                .map_err(|e| format!("output fails the gate: {e}"))?;
            Ok(compile(&p, &source))
        });
        self.outputs.push(Loaded {
            text: text.to_string(),
            prog,
            results: Vec::new(),
        });
        self.outputs.len() - 1
    }

    /// Runs a compiled output in `mode` (and, in tangent mode, the plain
    /// function it computes too).
    fn execute(&self, prog: &Prog, mode: Mode) -> RunResult {
        let limits = self.checker.limits.clone();
        let spec = self.spec();
        guarded(|| {
            let mut h = Harness::new(prog, spec);
            h.limits.steps = limits.step_budget;
            // No wall-clock limit: a report must not depend on the machine.
            h.limits.time = None;
            let outcome = h.run(mode).map_err(|e| e.to_string())?;
            // The derivative code computes the original's values too.
            let values = if mode == Mode::Tangent {
                let x0 = h.spec().x0.clone();
                Some(h.evaluate(&x0).map_err(|e| e.to_string())?.0)
            } else {
                None
            };
            Ok((outcome.jacobian, outcome.tapes_empty, values))
        })
    }

    /// Re-reads and gates an output, then runs it in `mode`. The
    /// interpreter is deterministic (a step budget, no clock), so an
    /// output whose bytes another variant already produced is read and
    /// run once: its results are those of the first, and every check on
    /// them is repeated under this variant's name.
    fn run_output(&mut self, what: &str, text: &str, mode: Mode) -> Option<Jacobian> {
        self.outcome.counts.runs += 1;
        let i = self.load(text);
        let known = self.outputs[i].results.iter().find(|(m, _)| *m == mode);
        let result = match known {
            Some((_, r)) => {
                self.outcome.counts.reused_runs += 1;
                r.clone()
            }
            None => {
                let r = match &self.outputs[i].prog {
                    Ok(prog) => self.execute(prog, mode),
                    Err(e) => Err(e.clone()),
                };
                self.outputs[i].results.push((mode, r.clone()));
                r
            }
        };
        match result {
            Ok((jacobian, tapes_empty, values)) => {
                if let Some(y) = values {
                    let same = y.iter().zip(&self.y0).all(|(a, b)| {
                        a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
                    });
                    if !same {
                        self.outcome.findings.push(finding(
                            "derivative code computes other values than the original",
                            what,
                            format!("original y = {:?}, derivative code y = {y:?}", self.y0),
                        ));
                    }
                }
                if !tapes_empty && mode != Mode::Tangent {
                    self.outcome.findings.push(finding(
                        "adjoint: tapes not empty at the end",
                        what,
                        "",
                    ));
                }
                Some(jacobian)
            }
            Err(e) => {
                self.outcome.findings.push(finding(
                    format!("{} run: {}", kind_of(mode), error_class(&e)),
                    what,
                    e,
                ));
                None
            }
        }
    }

    fn compare(&mut self, what: &str, reference: &Jacobian, j: &Jacobian) {
        let d = jacobian_difference(reference, j);
        if d > self.checker.limits.exact || d.is_nan() {
            self.outcome.findings.push(finding(
                "tangent variant differs from the default tangent",
                what,
                format!(
                    "worst relative difference {d:.3e}\ntangent:\n{}{what}:\n{}",
                    reference.to_out("AD"),
                    j.to_out("AD")
                ),
            ));
        }
    }

    fn compare_adjoint(&mut self, what: &str, tangent: &Jacobian, j: &Jacobian, seed: u64) {
        let d = dot_product_difference(tangent, j, seed);
        if d > self.checker.limits.exact || d.is_nan() {
            self.outcome.findings.push(finding(
                "adjoint differs from the tangent (dot products)",
                what,
                format!(
                    "worst relative difference {d:.3e} (entries {:.3e})\ntangent:\n{}{what}:\n{}",
                    jacobian_difference(tangent, j),
                    tangent.to_out("AD"),
                    j.to_out("AD")
                ),
            ));
        }
    }
}

pub(crate) fn output_text(mut p: Program) -> String {
    p.mark_as_output("");
    xaif_model::write_program(&p)
}

impl Checker {
    /// A checker with xaifb's built-in intrinsics catalogue.
    pub fn builtin() -> Self {
        Self::new(xaif_linearize::builtin().clone())
    }

    /// A checker with the inlinable catalogue `catalogue` (and the
    /// non-inlinable catalogue's direct actions `transpose_arr`,
    /// `reshape_arr`).
    pub fn new(catalogue: Catalogue) -> Self {
        let text = r#"<xaifnii:NonInlinableIntrinsicDefinitions xmlns:xaifnii="http://www.mcs.anl.gov/XAIFNonInlinableIntrinsics"><xaifnii:DirectAction name="transpose_arr" derivAction="transpose_arr"/><xaifnii:DirectAction name="reshape_arr" derivAction="reshape_arr"/></xaifnii:NonInlinableIntrinsicDefinitions>"#;
        let parsed = xaif_model::read_str(text, None).expect("the built-in catalogue reads");
        let xaif_model::Document::NonInlinable(noninlinable) = parsed.document else {
            unreachable!("a non-inlinable catalogue")
        };
        Checker {
            catalogue,
            noninlinable,
            limits: Limits::default(),
            with_variants: true,
            checkpoint_loops: false,
        }
    }

    /// Checks one program given as front-end XAIF with `n` independents
    /// and `m` dependents (driven as `head(x, y)`); `dead` names active
    /// variables that are never read (safe to force passive); `seed` picks
    /// the dot-product vectors.
    pub fn check(&self, text: &str, n: usize, m: usize, dead: &[String], seed: u64) -> Outcome {
        self.check_only(text, n, m, dead, seed, None)
    }

    /// [`Checker::check_only`] of a program whose loops at `fixed_points`
    /// (routine, `lineNumber`) are fixed-point iterations, which the
    /// checkpointing variant also marks `--fixed-point-loop`.
    #[allow(clippy::too_many_arguments)]
    pub fn check_with_fixed_points(
        &self,
        text: &str,
        n: usize,
        m: usize,
        dead: &[String],
        seed: u64,
        only: Option<&str>,
        fixed_points: &[(String, i64)],
    ) -> Outcome {
        let mut outcome = self.check_all(text, n, m, dead, seed, only, fixed_points);
        outcome.findings = merge(std::mem::take(&mut outcome.findings));
        outcome
    }

    /// [`Checker::check`], but with `only` the default tangent (the
    /// reference) and the one variant a finding names
    /// ([`Finding::variant`]): what shrinking repeats.
    pub fn check_only(
        &self,
        text: &str,
        n: usize,
        m: usize,
        dead: &[String],
        seed: u64,
        only: Option<&str>,
    ) -> Outcome {
        self.check_with_fixed_points(text, n, m, dead, seed, only, &[])
    }

    #[allow(clippy::too_many_arguments)]
    fn check_all(
        &self,
        text: &str,
        n: usize,
        m: usize,
        dead: &[String],
        seed: u64,
        only: Option<&str>,
        fixed_points: &[(String, i64)],
    ) -> Outcome {
        let full = only.is_none();
        let wanted = |name: &str| only.is_none_or(|o| o.starts_with(name));
        let mut runs = Runs {
            checker: self,
            n,
            m,
            outcome: Outcome::default(),
            y0: Vec::new(),
            outputs: Vec::new(),
        };
        let read = guarded(|| {
            let (p, source) =
                xaif_model::read_program_str(text, None).map_err(|e| e.to_string())?;
            xaif_model::validate_program(&p, &source).map_err(|e| e.to_string())?;
            Ok((p, source))
        });
        let (program, source) = match read {
            Ok(x) => x,
            Err(e) => {
                runs.outcome
                    .findings
                    .push(finding("generated program fails the gate", "input", e));
                return runs.outcome;
            }
        };
        // The function and its divided differences.
        let prog = match guarded(|| Ok(compile(&program, &source))) {
            Ok(p) => p,
            Err(e) => {
                runs.outcome.findings.push(finding(
                    format!("generated program does not run: {}", error_class(&e)),
                    "input",
                    e,
                ));
                return runs.outcome;
            }
        };
        let mut harness = Harness::new(&prog, HarnessSpec::generic(n, m));
        harness.limits.steps = self.limits.step_budget;
        harness.limits.time = None;
        let x0 = harness.spec().x0.clone();
        let eval =
            |x: &[f64]| guarded(|| harness.evaluate(x).map(|r| r.0).map_err(|e| e.to_string()));
        // The values at x0 ± step along independent `i`.
        let around = |i: usize, step: f64| -> Result<(Vec<f64>, Vec<f64>), String> {
            let mut x = x0.clone();
            x[i] = x0[i] + step;
            let p = eval(&x)?;
            x[i] = x0[i] - step;
            Ok((p, eval(&x)?))
        };
        let dd = (|| {
            let y0 = eval(&x0)?;
            let mut plus = Vec::with_capacity(n);
            let mut minus = Vec::with_capacity(n);
            for i in 0..n {
                let (p, m) = around(i, self.limits.h)?;
                plus.push(p);
                minus.push(m);
            }
            Ok::<_, String>((y0, plus, minus))
        })();
        let (y0, plus, minus) = match dd {
            Ok(x) => x,
            // Values that overflowed on the way (an integer conversion of
            // an infinity or NaN): the function is not finite there.
            Err(e) if e.contains("NaN") || e.contains("of inf") || e.contains("of -inf") => {
                runs.outcome.skipped = Some(format!("not finite: {e}"));
                return runs.outcome;
            }
            Err(e) => {
                runs.outcome.findings.push(finding(
                    format!("generated program does not run: {}", error_class(&e)),
                    "input",
                    e,
                ));
                return runs.outcome;
            }
        };
        runs.y0 = y0.clone();
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite() && x.abs() < 1e12);
        if !finite(&y0) || !plus.iter().chain(&minus).all(|v| finite(v)) {
            runs.outcome.skipped = Some("the function is not finite near the point".into());
            return runs.outcome;
        }

        // Tangent.
        let tangent = self.tangent_text(
            &mut runs,
            "tangent",
            &program,
            &TangentOptions::default(),
            full,
        );
        let Some(tangent_text) = tangent else {
            return runs.outcome;
        };
        let Some(jt) = runs.run_output("tangent", &tangent_text, Mode::Tangent) else {
            return runs.outcome;
        };
        if !finite(&jt.entries) {
            runs.outcome.skipped = Some("the derivative is not finite at the point".into());
            return runs.outcome;
        }
        runs.outcome.counts.nonzero_entries = jt.entries.iter().filter(|x| **x != 0.0).count();
        let refine = |i: usize, step: f64| around(i, step).ok();
        let tangent_index = runs.load(&tangent_text);
        let near = |runs: &Runs<'_>, k: usize, i: usize, step: f64| {
            runs.tangent_at(tangent_index, i, step).map(|j| j.get(k, i))
        };
        self.compare_dd(&mut runs, &jt, &y0, &plus, &minus, (&refine, &near));
        if full {
            runs.outcome.outputs.push(("tangent".into(), tangent_text));
        }

        // Adjoint, split and joint.
        let adjoints = self.default_adjoints(&mut runs, &program, &jt, seed, only);
        if self.checkpoint_loops {
            if wanted(CHECKPOINTED) {
                crate::loops::check_checkpointed(
                    self,
                    &mut runs,
                    &program,
                    &adjoints,
                    full,
                    fixed_points,
                );
            }
            return runs.outcome;
        }
        if !self.with_variants && full {
            return runs.outcome;
        }
        self.check_variants(&mut runs, &program, &jt, dead, seed, only);
        runs.outcome
    }

    /// The default adjoint in split and joint mode against the tangent
    /// `jt` (dot products); the Jacobians of the modes that ran.
    fn default_adjoints(
        &self,
        runs: &mut Runs<'_>,
        program: &Program,
        jt: &Jacobian,
        seed: u64,
        only: Option<&str>,
    ) -> Vec<(Mode, Jacobian)> {
        let full = only.is_none();
        let wanted = |name: &str| only.is_none_or(|o| o.starts_with(name));
        let mut adjoints = Vec::new();
        if !(wanted("split adjoint") || wanted("joint adjoint")) {
            return adjoints;
        }
        let Some(text) =
            self.adjoint_text(runs, "adjoint", program, &AdjointOptions::default(), full)
        else {
            return adjoints;
        };
        for (mode, name) in [
            (Mode::Split, "split adjoint"),
            (Mode::Joint, "joint adjoint"),
        ] {
            if !wanted(name) {
                continue;
            }
            if let Some(j) = runs.run_output(name, &text, mode) {
                runs.compare_adjoint(name, jt, &j, seed);
                adjoints.push((mode, j));
            }
        }
        if full {
            runs.outcome.outputs.push(("adjoint".into(), text));
        }
        adjoints
    }

    /// Every flag and strategy variant ([`variants`]) against the default
    /// tangent `jt`.
    fn check_variants(
        &self,
        runs: &mut Runs<'_>,
        program: &Program,
        jt: &Jacobian,
        dead: &[String],
        seed: u64,
        only: Option<&str>,
    ) {
        let full = only.is_none();
        let wanted = |name: &str| only.is_none_or(|o| o.starts_with(name));
        for v in variants(dead) {
            if !wanted(&v.name) {
                continue;
            }
            if let Some(o) = &v.tangent {
                if let Some(text) = self.tangent_text(runs, &v.name, program, o, false) {
                    if let Some(j) = runs.run_output(&v.name, &text, Mode::Tangent) {
                        runs.compare(&v.name, jt, &j);
                    }
                    if full && v.name.ends_with("-H") {
                        runs.outcome.outputs.push((v.name.clone(), text));
                    }
                }
            }
            if let Some(o) = &v.adjoint {
                if let Some(text) = self.adjoint_text(runs, &v.name, program, o, false) {
                    for (mode, m) in [(Mode::Split, "split"), (Mode::Joint, "joint")] {
                        let what = format!("{} ({m})", v.name);
                        if !wanted(&what) {
                            continue;
                        }
                        if let Some(j) = runs.run_output(&what, &text, mode) {
                            runs.compare_adjoint(&what, jt, &j, seed);
                        }
                    }
                }
            }
        }
    }

    /// The tangent against divided differences at step `h`; an entry
    /// that disagrees is tried again at `h/10`, …, `h/10⁴` (`refine` gives
    /// the values at x0 ± step along an independent): a function curved at
    /// the scale of `h` (`sin` of four rounds of `u² + 2`, a slope of 10⁶)
    /// has differences that converge to its derivative only at smaller
    /// steps, where a wrong tangent stays wrong; one that oscillates
    /// faster than double precision can resolve (a slope of 10⁹ at
    /// x = 0.5) has differences that never settle, and nothing is claimed;
    /// nor at a kink that stays a kink with the tangent on neither side.
    fn compare_dd(
        &self,
        runs: &mut Runs<'_>,
        jt: &Jacobian,
        y0: &[f64],
        plus: &[Vec<f64>],
        minus: &[Vec<f64>],
        (refine, near): (&dyn Fn(usize, f64) -> Option<Around>, &Near<'_>),
    ) {
        let h = self.limits.h;
        let mut worst: Option<(f64, usize, usize, f64, f64)> = None;
        let mut finer: Vec<Vec<Option<Around>>> = vec![Vec::new(); jt.n];
        for i in 1..=jt.n {
            for k in 1..=jt.m {
                let t = jt.get(k, i);
                let y = y0[k - 1];
                let at_h = self.dd_entry(t, y, plus[i - 1][k - 1], minus[i - 1][k - 1], h);
                runs.outcome.counts.dd_entries += 1;
                if !at_h.smooth {
                    runs.outcome.counts.nonsmooth_entries += 1;
                }
                let Some(rel) = at_h.disagreement else {
                    continue;
                };
                // Smaller steps: agreement clears the entry; smooth
                // differences that settle (two steps in a row within the
                // tolerance) without agreeing are a finding; differences
                // that never settle resolve nothing, like a jump, and
                // neither does a kink that stays at every step with the
                // tangent on neither side (kinks meeting at the point: `x`
                // at 0.5 makes `sign(min(x - 0.5, 0), 1)` take a tie and
                // the absolute value of an exact zero, and the tangent's
                // slope +1 is neither side's, 0 or -1).
                let mut agrees = false;
                let mut settled = None;
                let mut previous = at_h.central;
                for (r, step) in [1e-1, 1e-2, 1e-3, 1e-4]
                    .map(|f| f * h)
                    .into_iter()
                    .enumerate()
                {
                    if finer[i - 1].len() <= r {
                        finer[i - 1].push(refine(i - 1, step));
                    }
                    let Some((p, m)) = &finer[i - 1][r] else {
                        break;
                    };
                    let (yp, ym) = (p[k - 1], m[k - 1]);
                    if !yp.is_finite() || !ym.is_finite() {
                        break;
                    }
                    let e = self.dd_entry(t, y, yp, ym, step);
                    if e.disagreement.is_none() {
                        agrees = true;
                        break;
                    }
                    let scale = 1.0 + e.central.abs().max(previous.abs());
                    if e.smooth && (e.central - previous).abs() <= self.limits.dd * scale + e.noise
                    {
                        settled = Some((e.central, step));
                        break;
                    }
                    previous = e.central;
                }
                let Some((settled_at, step)) = settled.filter(|_| !agrees) else {
                    if !agrees {
                        runs.outcome.counts.unresolved_entries += 1;
                    }
                    continue;
                };
                // An isolated point: on both sides, at the last step, the
                // tangent is the settled difference, so the branch taken
                // at x0 holds at x0 alone (`mod(2 x, 1.5)` exactly 0 makes
                // `maxloc` see a tie, and the index it gives is another
                // than on either side). The tangent of the branch taken
                // is what AD computes there; nothing is claimed.
                let tol = |a: f64, b: f64| self.limits.dd * (1.0 + a.abs().max(b.abs()));
                let isolated = [step, -step].iter().all(|&d| {
                    near(runs, k, i, d)
                        .is_some_and(|t2| (t2 - settled_at).abs() <= tol(t2, settled_at))
                });
                if isolated {
                    runs.outcome.counts.unresolved_entries += 1;
                    continue;
                }
                if !agrees && worst.is_none_or(|w| rel > w.0) {
                    worst = Some((rel, k, i, t, at_h.central));
                }
            }
        }
        if let Some((rel, k, i, t, cen)) = worst {
            runs.outcome.findings.push(finding(
                "tangent differs from divided differences",
                "tangent",
                format!(
                    "F({k},{i}): tangent {t:e}, central difference {cen:e} (relative {rel:.2e})"
                ),
            ));
        }
    }

    /// One Jacobian entry `t` against the differences of the values `y`,
    /// `yp`, `ym` at x0, x0 + step, x0 - step.
    fn dd_entry(&self, t: f64, y: f64, yp: f64, ym: f64, step: f64) -> DdEntry {
        let fwd = (yp - y) / step;
        let bwd = (y - ym) / step;
        let cen = (yp - ym) / (2.0 * step);
        let scale = 1.0 + t.abs().max(cen.abs());
        // Rounding makes differences uncertain by about eps |y| / step.
        let noise = 2e-15 * (1.0 + y.abs().max(yp.abs()).max(ym.abs())) / step;
        let smooth = (fwd - bwd).abs() <= 1e-3 * (1.0 + fwd.abs().max(bwd.abs())) + noise;
        let disagreement = if smooth {
            let err = (t - cen).abs();
            (err > self.limits.dd * scale + noise).then_some(err / scale)
        } else {
            // At a kink the tangent takes one side (within the curvature
            // of that side); across a jump nothing can be said.
            let near = |d: f64| (t - d).abs() <= 1e-3 * (1.0 + d.abs()) + noise;
            let jump = fwd.abs().max(bwd.abs()) > 1e3 * (1.0 + t.abs());
            (!jump && !near(fwd) && !near(bwd))
                .then(|| (t - fwd).abs().min((t - bwd).abs()) / scale)
        };
        DdEntry {
            smooth,
            central: cen,
            noise,
            disagreement,
        }
    }

    fn tangent_text(
        &self,
        runs: &mut Runs<'_>,
        what: &str,
        p: &Program,
        options: &TangentOptions,
        twice: bool,
    ) -> Option<String> {
        runs.outcome.counts.transformations += 1;
        let result = guarded(|| {
            xaif_linearize::tangent(p, &self.catalogue, Some(&self.noninlinable), options)
                .map(|r| r.program)
                .map_err(|e| e.to_string())
        });
        let first = match result {
            Ok(p) => output_text(p),
            Err(e) => {
                runs.outcome.findings.push(finding(
                    format!("tangent transformation: {}", error_class(&e)),
                    what,
                    e,
                ));
                return None;
            }
        };
        if twice {
            // Same input, same bytes.
            let again = guarded(|| {
                xaif_linearize::tangent(p, &self.catalogue, Some(&self.noninlinable), options)
                    .map(|r| output_text(r.program))
                    .map_err(|e| e.to_string())
            });
            if again.as_deref() != Ok(first.as_str()) {
                runs.outcome
                    .findings
                    .push(finding("output is not deterministic", what, ""));
            }
        }
        Some(first)
    }

    fn adjoint_text(
        &self,
        runs: &mut Runs<'_>,
        what: &str,
        p: &Program,
        options: &AdjointOptions,
        twice: bool,
    ) -> Option<String> {
        runs.outcome.counts.transformations += 1;
        let run = || {
            xaif_cfrev::adjoint(p, &self.catalogue, Some(&self.noninlinable), options)
                .map(|r| output_text(r.transformed.program))
                .map_err(|e| e.to_string())
        };
        let first = match guarded(run) {
            Ok(t) => t,
            Err(e) => {
                runs.outcome.findings.push(finding(
                    format!("adjoint transformation: {}", error_class(&e)),
                    what,
                    e,
                ));
                return None;
            }
        };
        if twice && guarded(run).as_deref() != Ok(first.as_str()) {
            runs.outcome
                .findings
                .push(finding("output is not deterministic", what, ""));
        }
        Some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The divided-difference check on `f` at x0 = 0.5 with tangent `t`:
    /// the findings and the unresolved entries.
    fn dd(f: &dyn Fn(f64) -> f64, t: f64) -> (usize, usize) {
        dd_near(f, t, None)
    }

    /// [`dd`] with the tangent at points near x0 given by `tangent_near`.
    fn dd_near(
        f: &dyn Fn(f64) -> f64,
        t: f64,
        tangent_near: Option<&dyn Fn(f64) -> f64>,
    ) -> (usize, usize) {
        let checker = Checker::builtin();
        let mut runs = Runs {
            checker: &checker,
            n: 1,
            m: 1,
            outcome: Outcome::default(),
            y0: Vec::new(),
            outputs: Vec::new(),
        };
        let x0 = 0.5;
        let h = checker.limits.h;
        let mut jt = Jacobian::zeros(1, 1);
        jt.set(1, 1, t);
        let refine = |_: usize, s: f64| Some((vec![f(x0 + s)], vec![f(x0 - s)]));
        let near = |_: &Runs<'_>, _: usize, _: usize, s: f64| tangent_near.map(|t| t(x0 + s));
        checker.compare_dd(
            &mut runs,
            &jt,
            &[f(x0)],
            &[vec![f(x0 + h)]],
            &[vec![f(x0 - h)]],
            (&refine, &near),
        );
        (
            runs.outcome.findings.len(),
            runs.outcome.counts.unresolved_entries,
        )
    }

    #[test]
    fn smooth_functions_need_the_right_tangent() {
        let cube = |x: f64| x * x * x;
        assert_eq!(dd(&cube, 0.75), (0, 0));
        assert_eq!(dd(&cube, 0.7501), (1, 0));
    }

    #[test]
    fn kinks_take_either_side_or_claim_nothing() {
        let kink = |x: f64| (x - 0.5).abs() + 2.0 * x;
        assert_eq!(dd(&kink, 3.0), (0, 0));
        assert_eq!(dd(&kink, 1.0), (0, 0));
        // Neither side: unresolved, not a finding (kinks meeting).
        assert_eq!(dd(&kink, 2.0), (0, 1));
        let meeting = |x: f64| 2.0 + (x - 0.5).min(0.0).abs();
        assert_eq!(dd(&meeting, 1.0), (0, 1));
        // A kink near the point (not at it) is curvature at small steps:
        // a tangent on neither side is a finding.
        let near = |x: f64| (x - 0.5 - 3e-6).abs() * 1e-3 + (1e3 * x).sin();
        let right = 1e3 * 500f64.cos() - 1e-3;
        assert_eq!(dd(&near, right), (0, 0));
        assert_eq!(dd(&near, right + 1.0), (1, 0));
    }

    #[test]
    fn much_curved_functions_are_differenced_at_smaller_steps() {
        // Slope 10^3 · cos(500) at 0.5; the curvature 10^6 spoils the
        // differences at 10^-6, not at 10^-7.
        let f = |x: f64| (1e3 * x).sin();
        let right = 1e3 * 500f64.cos();
        assert_eq!(dd(&f, right), (0, 0));
        assert_eq!(dd(&f, right * 1.001), (1, 0));
    }

    #[test]
    fn differences_that_never_settle_claim_nothing() {
        // Slope 10^12: the differences at 10^-6 … 10^-10 are noise (at a
        // tangent that small, they look like a jump).
        let f = |x: f64| (1e12 * x).sin();
        assert_eq!(dd(&f, 1e12 * 5e11f64.cos()), (0, 1));
        assert_eq!(dd(&f, 1.0).0, 0);
    }

    #[test]
    fn a_branch_taken_at_the_point_alone_claims_nothing() {
        // Constant near 0.5, with slope -0.75 at 0.5 alone (the branch of
        // a tie taken there): the tangent -0.75 is not a finding when the
        // tangent beside the point is the difference, 0.
        let f = |_: f64| 1.0;
        assert_eq!(dd(&f, -0.75), (1, 0));
        assert_eq!(dd_near(&f, -0.75, Some(&|_| 0.0)), (0, 1));
        // A tangent wrong beside the point as well is still a finding.
        assert_eq!(dd_near(&f, -0.75, Some(&|_| -0.75)), (1, 0));
        let cube = |x: f64| x * x * x;
        assert_eq!(
            dd_near(&cube, 0.7501, Some(&|x: f64| 3.0 * x * x + 1e-4)),
            (1, 0)
        );
    }
}
