//! The regression harness: how a program is driven to produce a Jacobian.
//!
//! This is the procedure of the OpenAD regression suite's drivers
//! (`../shared/docs/xaif-semantics.md` §7 and the corpus's `HARNESS.md`): the
//! generic driver calls `head(x, y)` with `x(i) = i/2`; examples with their
//! own driver describe top routine, argument slots, globals, setup calls and
//! start values in a `harness.json`. One run of a mode is one execution: the
//! slots, globals, tapes and checkpoint stacks are created once and keep
//! their contents from one call to the next.

use serde::{Deserialize, Serialize};

use crate::compile::{Body, Prog};
use crate::error::{ErrorKind, InterpError, Result};
use crate::exec::{Actual, Flags, Machine, Stats, Template};
use crate::jacobian::Jacobian;
use crate::limits::Limits;
use crate::memory::{BufId, Place};
use crate::value::{Scalar, Ty};
use xaif_model::fortran_routine_name;

/// `params.conf`: sizes, divided-difference step, AD-versus-DD tolerance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Number of independents.
    pub n: usize,
    /// Number of dependents.
    pub m: usize,
    /// Divided-difference step.
    pub h: f64,
    /// Tolerance between AD and DD Jacobians.
    pub tol: f64,
}

impl Params {
    /// Parses the four lines of a `params.conf`.
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let mut next = |what: &str| {
            lines
                .next()
                .ok_or_else(|| format!("params.conf: missing {what}"))
        };
        let n = next("n")?
            .parse()
            .map_err(|_| "params.conf: n is not an integer".to_string())?;
        let m = next("m")?
            .parse()
            .map_err(|_| "params.conf: m is not an integer".to_string())?;
        let h = crate::jacobian::parse_fortran_real(next("h")?)
            .ok_or("params.conf: h is not a number")?;
        let tol = crate::jacobian::parse_fortran_real(next("tolerance")?)
            .ok_or("params.conf: tolerance is not a number")?;
        Ok(Params { n, m, h, tol })
    }
}

/// The smallest divided-difference step, relative to `max(1, |x0|)` of
/// each independent ([`Harness::check_step`]).
pub const STEP_LOW: f64 = 1e-12;

/// The largest divided-difference step, relative to `max(1, |x0|)`.
pub const STEP_HIGH: f64 = 1.0;

/// One actual argument of the top routine.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ArgSlot {
    /// Independents: a scalar (no size) or a rank-one array `1:size`.
    X {
        /// First independent held.
        first: usize,
        /// Array size, absent for a scalar.
        #[serde(default)]
        size: Option<usize>,
    },
    /// Dependents, like `X`.
    Y {
        /// First dependent held.
        first: usize,
        /// Array size, absent for a scalar.
        #[serde(default)]
        size: Option<usize>,
    },
    /// A passive integer scalar.
    Int {
        /// Its value.
        value: i64,
    },
    /// A passive real scalar or rank-one array.
    Real {
        /// Its value(s).
        value: RealValue,
    },
}

/// The value of a passive real slot.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum RealValue {
    /// A scalar.
    Scalar(f64),
    /// A rank-one array.
    Array(Vec<f64>),
}

/// A global holding independents or dependents.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
pub struct GlobalSlot {
    /// The Fortran name (scope-1 symbols unify by it).
    pub name: String,
    /// `x` or `y`.
    pub kind: String,
    /// First independent or dependent held.
    pub first: usize,
    /// Number of elements, absent for a scalar.
    #[serde(default)]
    pub size: Option<usize>,
}

/// How an example is driven (`harness.json`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
pub struct HarnessSpec {
    /// Number of independents.
    pub n: usize,
    /// Number of dependents.
    pub m: usize,
    /// The top routine's Fortran name.
    pub top: String,
    /// Its arguments by position.
    pub args: Vec<ArgSlot>,
    /// Globals holding independents or dependents.
    #[serde(default)]
    pub globals: Vec<GlobalSlot>,
    /// Routines called before every evaluation of `top`.
    #[serde(default)]
    pub setup_calls: Vec<String>,
    /// Start values of the independents.
    pub x0: Vec<f64>,
}

impl HarnessSpec {
    /// The generic driver: `head(x(1:n), y(1:m))`, `x0(i) = i/2`.
    pub fn generic(n: usize, m: usize) -> Self {
        HarnessSpec {
            n,
            m,
            top: "head".into(),
            args: vec![
                ArgSlot::X {
                    first: 1,
                    size: Some(n),
                },
                ArgSlot::Y {
                    first: 1,
                    size: Some(m),
                },
            ],
            globals: Vec::new(),
            setup_calls: Vec::new(),
            x0: (1..=n).map(|i| i as f64 / 2.0).collect(),
        }
    }

    /// Parses a `harness.json`.
    pub fn parse_json(text: &str) -> std::result::Result<Self, String> {
        let spec: HarnessSpec =
            serde_json::from_str(text).map_err(|e| format!("harness.json: {e}"))?;
        if spec.n == 0 || spec.m == 0 {
            return Err(format!(
                "harness.json: n = {} and m = {}: a run needs at least one independent and one dependent",
                spec.n, spec.m
            ));
        }
        if spec.x0.len() != spec.n {
            return Err(format!(
                "harness.json: {} start values for n = {}",
                spec.x0.len(),
                spec.n
            ));
        }
        Ok(spec)
    }
}

/// The modes of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Evaluate the function.
    Plain,
    /// Tangent-linear output, one run per independent.
    Tangent,
    /// Adjoint output under the split template, one run per dependent.
    Split,
    /// Adjoint output under the joint template, one run per dependent.
    Joint,
    /// Trace output: one evaluation under the tracing template, which
    /// writes the trace records (the "Jacobian" is the dependents).
    Trace,
}

impl Mode {
    /// The mode's name on the command line (`--mode NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Tangent => "tangent",
            Mode::Split => "split",
            Mode::Joint => "joint",
            Mode::Trace => "trace",
        }
    }
}

/// The result of running a derivative mode.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The Jacobian.
    pub jacobian: Jacobian,
    /// Counters of the whole run.
    pub stats: Stats,
    /// Whether every tape and checkpoint stack was empty at the end.
    pub tapes_empty: bool,
    /// Floating-point operations of one plain evaluation.
    pub plain_flops: u64,
    /// The trace records of a trace run (empty otherwise).
    pub trace: Vec<String>,
}

/// Drives a compiled program.
pub struct Harness<'p> {
    prog: &'p Prog,
    spec: HarnessSpec,
    /// The limits of each run: each evaluation of the function, each
    /// tangent-linear run per independent, each adjoint run per dependent.
    pub limits: Limits,
}

struct Bound {
    actuals: Vec<Actual>,
    /// (buffer, offset) of each independent.
    x: Vec<(BufId, usize)>,
    /// (buffer, offset) of each dependent.
    y: Vec<(BufId, usize)>,
}

fn herr(msg: String) -> InterpError {
    InterpError::new(ErrorKind::Harness(msg))
}

impl<'p> Harness<'p> {
    /// A harness for `prog` driven as `spec` says.
    pub fn new(prog: &'p Prog, spec: HarnessSpec) -> Self {
        Harness {
            prog,
            spec,
            limits: Limits::default(),
        }
    }

    /// A machine under the harness's limits.
    fn machine(&self, template: Template) -> Machine<'p> {
        Machine::with_limits(self.prog, template, self.limits)
    }

    /// Checks the sizes the specification asks for (independents,
    /// dependents, argument slots, the Jacobian) against the element limit
    /// before anything is allocated.
    fn check_sizes(&self, jacobian: bool) -> Result<()> {
        let limit = self.limits.elements;
        let too_large = |what: String, need: u128| {
            InterpError::new(ErrorKind::TooLarge {
                what,
                need,
                live: 0,
                limit,
            })
        };
        let (n, m) = (self.spec.n, self.spec.m);
        // A Jacobian of no rows or no columns holds nothing that could be
        // checked.
        for (count, what) in [(n, "independents"), (m, "dependents")] {
            if jacobian && count == 0 {
                return Err(herr(format!(
                    "0 {what}: a Jacobian needs at least one independent and one dependent"
                )));
            }
        }
        let mut total: u128 = n as u128 + m as u128;
        if jacobian {
            total += n as u128 * m as u128;
        }
        for slot in &self.spec.args {
            total += match slot {
                ArgSlot::X { size, .. } | ArgSlot::Y { size, .. } => size.unwrap_or(1) as u128,
                ArgSlot::Int { .. } => 1,
                ArgSlot::Real { value } => match value {
                    RealValue::Scalar(_) => 1,
                    RealValue::Array(v) => v.len() as u128,
                },
            };
        }
        if total > limit as u128 {
            return Err(too_large(
                format!(
                    "the harness ({n} independents, {m} dependents{})",
                    if jacobian { ", their Jacobian" } else { "" }
                ),
                total,
            ));
        }
        Ok(())
    }

    /// Refuses a mode that cannot execute the program's kind (see
    /// [`crate::kind`]): run as it is, it would print zeros or an empty
    /// trace that look like results. Split, joint and trace mode also need
    /// the top routine to be a template routine.
    fn check_mode(&self, mode: Mode, top: usize) -> Result<()> {
        let kind = &self.prog.kind;
        let name = mode.name();
        if !kind.runs_in(mode) {
            return Err(InterpError::new(ErrorKind::WrongMode {
                mode: name,
                reason: format!("{}; {}", kind.describe(), kind.modes()),
            }));
        }
        let template_top = matches!(self.prog.routines[top].body, Body::Template(_));
        if matches!(mode, Mode::Split | Mode::Joint | Mode::Trace) && !template_top {
            return Err(InterpError::new(ErrorKind::WrongMode {
                mode: name,
                reason: format!(
                    "the top routine `{}` has no ReplacementList (it is not transformed code)",
                    self.spec.top
                ),
            }));
        }
        if mode == Mode::Joint {
            // Joint mode runs placeholders 4 and 6: a routine whose
            // restores follow neither discipline would take values from a
            // guessed one.
            let undecided = self
                .prog
                .routines
                .iter()
                .find_map(|r| r.undecided_restores.map(|u| (r, u)));
            if let Some((r, (line, marked))) = undecided {
                let routine = fortran_routine_name(&r.name);
                let mark = xaif_model::STORE_ORDER_ENTRY;
                let reason = if marked {
                    format!("`{routine}` is marked `{mark}` (argument checkpoints restored in the order placeholder 4 stores them), but its restores (placeholder 6) do not name the stored arguments in that order: which value each restore takes cannot be told")
                } else {
                    format!("`{routine}` restores its argument checkpoints (placeholder 6) neither in the reverse of the order placeholder 4 stores them (a stack) nor in that order (-f, which the reference engine writes without a mark), and no `{mark}` mark says which: which value each restore takes cannot be told")
                };
                return Err(InterpError {
                    kind: ErrorKind::WrongMode { mode: name, reason },
                    routine: Some(r.name.clone()),
                    line,
                });
            }
        }
        Ok(())
    }

    /// The specification.
    pub fn spec(&self) -> &HarnessSpec {
        &self.spec
    }

    fn routine(&self, name: &str) -> Result<usize> {
        self.prog.routine_by_fortran_name(name).ok_or_else(|| {
            let known: Vec<String> = self
                .prog
                .routines
                .iter()
                .map(|r| fortran_routine_name(&r.name))
                .collect();
            herr(format!(
                "no routine `{name}` with a body (routines: {})",
                known.join(", ")
            ))
        })
    }

    fn bind(&self, m: &mut Machine<'p>) -> Result<Bound> {
        let (n, mm) = (self.spec.n, self.spec.m);
        let mut x = vec![None; n];
        let mut y = vec![None; mm];
        let put = |list: &mut Vec<Option<(BufId, usize)>>,
                   k: usize,
                   at: (BufId, usize),
                   what: &str|
         -> Result<()> {
            match list.get_mut(k.wrapping_sub(1)) {
                Some(slot @ None) => {
                    *slot = Some(at);
                    Ok(())
                }
                Some(Some(_)) => Err(herr(format!("{what} {k} is bound twice"))),
                None => Err(herr(format!("{what} {k} is out of range"))),
            }
        };
        let mut actuals = Vec::new();
        for slot in &self.spec.args {
            let place = match slot {
                ArgSlot::X { first, size } | ArgSlot::Y { first, size } => {
                    let is_x = matches!(slot, ArgSlot::X { .. });
                    let what = if is_x { "independents" } else { "dependents" };
                    let place = m.alloc(Ty::Real, *size, &format!("an argument of {what}"))?;
                    for e in 0..size.unwrap_or(1) {
                        let at = (place.buf, place.offset + e);
                        let k = first.saturating_add(e);
                        if is_x {
                            put(&mut x, k, at, "independent")?;
                        } else {
                            put(&mut y, k, at, "dependent")?;
                        }
                    }
                    place
                }
                ArgSlot::Int { value } => {
                    let place = m.alloc(Ty::Int, None, "an integer argument")?;
                    m.set_value(place.buf, 0, &Scalar::Int(*value));
                    place
                }
                ArgSlot::Real { value } => match value {
                    RealValue::Scalar(v) => {
                        let place = m.alloc(Ty::Real, None, "a real argument")?;
                        m.set_value(place.buf, 0, &Scalar::Real(*v));
                        place
                    }
                    RealValue::Array(vs) => {
                        let place = m.alloc(Ty::Real, Some(vs.len()), "a real argument")?;
                        for (i, v) in vs.iter().enumerate() {
                            m.set_value(place.buf, i, &Scalar::Real(*v));
                        }
                        place
                    }
                },
            };
            actuals.push(Actual::Place(place));
        }
        for g in &self.spec.globals {
            let place: Place = m
                .global_place(&g.name)
                .map_err(|e| herr(format!("global `{}`: {e}", g.name)))?;
            if !m.is_real(place.buf) {
                return Err(herr(format!("global `{}` is not real", g.name)));
            }
            let offsets: Vec<usize> = if place.is_scalar() {
                vec![place.offset]
            } else {
                place.offsets().collect()
            };
            let count = g.size.unwrap_or(1);
            if offsets.len() < count {
                return Err(herr(format!(
                    "global `{}` has {} elements, not {count}",
                    g.name,
                    offsets.len()
                )));
            }
            for (e, off) in offsets.into_iter().take(count).enumerate() {
                let k = g.first.saturating_add(e);
                if g.kind == "x" {
                    put(&mut x, k, (place.buf, off), "independent")?;
                } else {
                    put(&mut y, k, (place.buf, off), "dependent")?;
                }
            }
        }
        let x: Option<Vec<_>> = x.into_iter().collect();
        let y: Option<Vec<_>> = y.into_iter().collect();
        Ok(Bound {
            actuals,
            x: x.ok_or_else(|| herr("not every independent is bound".into()))?,
            y: y.ok_or_else(|| herr("not every dependent is bound".into()))?,
        })
    }

    fn setup_calls(&self, m: &mut Machine<'p>, flags: Flags) -> Result<()> {
        for name in &self.spec.setup_calls {
            let r = self.routine(name)?;
            m.flags = flags;
            m.call(r, Vec::new())?;
        }
        Ok(())
    }

    fn set_x(&self, m: &mut Machine<'p>, b: &Bound, x: &[f64]) {
        for (&(buf, off), v) in b.x.iter().zip(x) {
            m.set_value(buf, off, &Scalar::Real(*v));
        }
    }

    /// Evaluates the function at `x` (one fresh run).
    pub fn evaluate(&self, x: &[f64]) -> Result<(Vec<f64>, Stats)> {
        self.check_sizes(false)?;
        let top = self.routine(&self.spec.top)?;
        self.check_mode(Mode::Plain, top)?;
        let mut m = self.machine(Template::Split);
        let b = self.bind(&mut m)?;
        let y = self.eval_in(&mut m, &b, top, x)?;
        m.end_run();
        Ok((y, m.stats))
    }

    fn eval_in(&self, m: &mut Machine<'p>, b: &Bound, top: usize, x: &[f64]) -> Result<Vec<f64>> {
        m.begin_run();
        self.set_x(m, b, x);
        self.setup_calls(m, Flags::PLAIN)?;
        m.flags = Flags::PLAIN;
        m.call(top, b.actuals.clone())?;
        Ok(b.y.iter().map(|&(buf, off)| m.get_real(buf, off)).collect())
    }

    /// Refuses a divided-difference step that cannot give a meaningful
    /// quotient at the start values: for every independent, with
    /// `s = max(1, |x0|)`, the step must lie in
    /// `[STEP_LOW·s, STEP_HIGH·s]` (`docs/limits.md`). Below, `x0 + h`
    /// rounds away most of the step (its error is up to half an ulp of
    /// `x0`, 1.1e-16·s: beyond 1e-4 of the step); above, the quotient
    /// does not approximate a derivative at `x0` and `x0 + h` may overflow.
    pub fn check_step(&self, h: f64) -> Result<()> {
        let bad = |what: String| InterpError::new(ErrorKind::Step(what));
        if !(h.is_finite() && h > 0.0) {
            return Err(bad(format!("h = {h} is not a finite number above zero")));
        }
        for (i, &x) in self.spec.x0.iter().enumerate() {
            let s = x.abs().max(1.0);
            let (low, high) = (STEP_LOW * s, STEP_HIGH * s);
            if h < low || h > high || !(x + h).is_finite() {
                return Err(bad(format!(
                    "h = {h:e} is outside [{low:e}, {high:e}] for independent {} (start value {x:e}); the step must lie within [{STEP_LOW:e}, {STEP_HIGH:e}] times max(1, |start value|)",
                    i + 1
                )));
            }
        }
        Ok(())
    }

    /// Divided differences of the plain program with step `h` (checked by
    /// [`Harness::check_step`]).
    pub fn divided_differences(&self, h: f64) -> Result<Jacobian> {
        self.check_sizes(true)?;
        self.check_step(h)?;
        let top = self.routine(&self.spec.top)?;
        self.check_mode(Mode::Plain, top)?;
        let mut m = self.machine(Template::Split);
        let b = self.bind(&mut m)?;
        let x0 = self.spec.x0.clone();
        let y0 = self.eval_in(&mut m, &b, top, &x0)?;
        let mut j = Jacobian::zeros(self.spec.m, self.spec.n);
        for i in 1..=self.spec.n {
            let mut x = x0.clone();
            x[i - 1] += h;
            let y = self.eval_in(&mut m, &b, top, &x)?;
            for k in 1..=self.spec.m {
                j.set(k, i, (y[k - 1] - y0[k - 1]) / h);
            }
        }
        Ok(j)
    }

    fn plain_flops(&self) -> Result<u64> {
        match self.evaluate(&self.spec.x0) {
            Ok((_, s)) => Ok(s.flops_original + s.flops_derivative),
            // Out of time or memory: the run's result is not to be trusted
            // to have finished either.
            Err(e) if matches!(e.kind, ErrorKind::TimeLimit(_) | ErrorKind::TooLarge { .. }) => {
                Err(e)
            }
            Err(_) => Ok(0),
        }
    }

    /// Runs a derivative mode and returns the Jacobian. A mode whose code
    /// the program does not hold (tangent mode on anything but a
    /// tangent-linear result, split or joint mode on anything but adjoint
    /// code) is refused.
    pub fn run(&self, mode: Mode) -> Result<Outcome> {
        self.check_sizes(mode != Mode::Plain)?;
        let top = self.routine(&self.spec.top)?;
        self.check_mode(mode, top)?;
        let template = match mode {
            Mode::Joint => Template::Joint,
            Mode::Trace => Template::Trace,
            _ => Template::Split,
        };
        let mut m = self.machine(template);
        let b = self.bind(&mut m)?;
        let (n, mm) = (self.spec.n, self.spec.m);
        // Plain mode has no Jacobian: its sizes were not checked for one.
        let mut j = Jacobian::zeros(mm, if mode == Mode::Plain { 1 } else { n });
        match mode {
            Mode::Plain | Mode::Trace => {
                let y = self.eval_in(&mut m, &b, top, &self.spec.x0)?;
                let mut jy = Jacobian::zeros(mm, 1);
                for (k, v) in y.iter().enumerate() {
                    jy.set(k + 1, 1, *v);
                }
                j = jy;
            }
            Mode::Tangent => {
                for i in 1..=n {
                    m.begin_run();
                    self.set_x(&mut m, &b, &self.spec.x0);
                    self.setup_calls(&mut m, Flags::PLAIN)?;
                    for (k, &(buf, off)) in b.x.iter().enumerate() {
                        m.mem.set_d(buf, off, if k + 1 == i { 1.0 } else { 0.0 });
                    }
                    m.flags = Flags::PLAIN;
                    m.call(top, b.actuals.clone())?;
                    for (k, &(buf, off)) in b.y.iter().enumerate() {
                        j.set(k + 1, i, m.mem.get_d(buf, off));
                    }
                }
            }
            Mode::Split | Mode::Joint => {
                m.reset_tapes();
                for i in 1..=mm {
                    m.begin_run();
                    self.set_x(&mut m, &b, &self.spec.x0);
                    for &(buf, off) in &b.x {
                        m.mem.set_d(buf, off, 0.0);
                    }
                    self.setup_calls(&mut m, Flags::PLAIN)?;
                    for (k, &(buf, off)) in b.y.iter().enumerate() {
                        m.set_value(buf, off, &Scalar::Real(0.0));
                        m.mem.set_d(buf, off, if k + 1 == i { 1.0 } else { 0.0 });
                    }
                    if mode == Mode::Split {
                        m.flags = Flags {
                            tape: true,
                            ..Flags::NONE
                        };
                        m.call(top, b.actuals.clone())?;
                        m.flags = Flags {
                            adjoint: true,
                            ..Flags::NONE
                        };
                        m.call(top, b.actuals.clone())?;
                    } else {
                        m.flags = Flags {
                            tape: true,
                            adjoint: true,
                            ..Flags::NONE
                        };
                        m.call(top, b.actuals.clone())?;
                    }
                    for (k, &(buf, off)) in b.x.iter().enumerate() {
                        j.set(i, k + 1, m.mem.get_d(buf, off));
                    }
                }
            }
        }
        m.end_run();
        let tapes_empty = m.tapes_empty();
        let stats = m.stats.clone();
        Ok(Outcome {
            jacobian: j,
            stats,
            tapes_empty,
            plain_flops: if matches!(mode, Mode::Plain | Mode::Trace) {
                0
            } else {
                self.plain_flops()?
            },
            trace: std::mem::take(&mut m.trace),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_conf_parses() {
        let p = Params::parse("5 \n4\n0.000001\n0.00001\n").unwrap();
        assert_eq!(
            p,
            Params {
                n: 5,
                m: 4,
                h: 1e-6,
                tol: 1e-5
            }
        );
        assert!(Params::parse("2\n").is_err());
    }

    #[test]
    fn harness_json_parses_every_slot_kind() {
        let text = r#"{"example": "e", "n": 3, "m": 1, "top": "t",
            "args": [{"kind": "int", "value": 5}, {"kind": "x", "first": 1, "size": 2},
                     {"kind": "real", "value": [1.0, 2.0]}, {"kind": "real", "value": 10.0},
                     {"kind": "y", "first": 1}],
            "globals": [{"name": "g", "kind": "x", "first": 3}],
            "setup_calls": ["init"], "x0": [0.5, 1.0, 1.5], "x0_rule": "i/2", "notes": "n"}"#;
        let s = HarnessSpec::parse_json(text).unwrap();
        assert_eq!(s.args.len(), 5);
        assert_eq!(
            s.args[2],
            ArgSlot::Real {
                value: RealValue::Array(vec![1.0, 2.0])
            }
        );
        assert_eq!(
            s.args[4],
            ArgSlot::Y {
                first: 1,
                size: None
            }
        );
        assert_eq!(s.globals[0].first, 3);
        assert!(HarnessSpec::parse_json(
            r#"{"n": 2, "m": 1, "top": "t", "args": [], "x0": [1.0]}"#
        )
        .is_err());
    }
}
