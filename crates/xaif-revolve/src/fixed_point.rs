//! The schedule of a fixed-point loop: Christianson's two-phase adjoint
//! (Optimization Methods and Software 3, 1994).
//!
//! A loop iterating `x ← F(x, p)` to convergence runs itself, untaped, in
//! the taping sweep; the schedule keeps the states at the start of its
//! last two iterations (two snapshots, the older dropped at each store).
//! Its adjoint sweep:
//!
//! - when the loop was left by an exit in the middle of its last
//!   iteration, that partial iteration is reversed once, from its own start
//!   state (what it computed before the exit, a residual for instance, may
//!   be read after the loop);
//! - the last complete iteration, from its start state (the converged
//!   state to the precision the loop reached), is then taped and reversed
//!   again and again. Each reversal maps the state's adjoint `x̄` to `F_xᵀ
//!   x̄` and adds `F_pᵀ x̄` to the adjoints of the parameters, so after `k`
//!   reversals the parameters hold `F_pᵀ (x̄₀ + F_xᵀ x̄₀ + … + (F_xᵀ)^{k−1}
//!   x̄₀)`: Christianson's iteration `ζ ← x̄₀ + F_xᵀ ζ`, whose second phase
//!   `p̄ += F_pᵀ ζ` is distributed over the first by linearity. The limit is
//!   the implicit-function-theorem adjoint `F_pᵀ (I − F_xᵀ)^{−1} x̄₀` when
//!   `F` is a contraction.
//!
//! After each reversal the generated code measures the state's adjoint
//! ([`Action::Measure`]): `d_k`, the largest absolute value of the
//! adjoints of the loop-carried active state, is the change of `ζ` in
//! iteration `k` (`d_0` the adjoint the loop's state receives from the code
//! after it). The iteration stops after reversal `k` when `d_k ≤ τ ·
//! max(d_0, …, d_{k−1})`: the change relative to the largest seen, which
//! bounds the relative error of the parameters' adjoints by about `τ / (1 −
//! q)` for a contraction of rate `q`; or after `max_iterations` reversals,
//! reported as not converged (the run prints a warning).
//!
//! The two-phase adjoint gives the derivative of the fixed point, which is
//! that of the loop only when the loop reached it: a while loop stopped on
//! a count or a time, or one that is no fixed-point iteration at all
//! (`y = x * y` three times), would get a derivative it does not have.
//! So around the first taping of the complete iteration the generated
//! code reports the state's values ([`Action::Check`], `oad_revolve_check`)
//! before and after it: the loop counts as converged only when that
//! iteration changed no value of the state by more than `τ` times the
//! largest absolute value (`forward_change` in the report), the same
//! relative tolerance as its adjoint's.

use crate::schedule::{Action, Drops, LoopSchedule, Report};

/// The default relative tolerance of `--fixed-point-loop`.
pub const DEFAULT_TOLERANCE: f64 = 1e-12;
/// The default limit of adjoint iterations of `--fixed-point-loop`.
pub const DEFAULT_MAX_ITERATIONS: u64 = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Forward,
    PartialRestore,
    PartialTape,
    PartialAdjoint,
    Seed,
    Restore,
    CheckBefore,
    Tape,
    CheckAfter,
    Adjoint,
    Measure,
    Judge,
    Finished,
}

/// The fixed-point schedule of one loop instance.
#[derive(Clone, Debug)]
pub struct FixedPoint {
    tolerance: f64,
    max_iterations: u64,
    started: u64,
    /// Positions held, oldest first (at most 2).
    held: Vec<u64>,
    by_exit: bool,
    phase: Phase,
    /// Reversals of the complete iteration so far.
    iterations: u64,
    /// The largest change seen before the current one.
    largest: f64,
    /// The measure of the current reversal.
    pending: f64,
    last_change: f64,
    converged: Option<bool>,
    peak: usize,
    /// The state's values before the first taped complete iteration.
    before: Vec<f64>,
    /// Checking the values after it: the next value's index, and the
    /// largest change and largest value so far.
    after: Option<(usize, f64, f64)>,
    forward_change: Option<f64>,
}

impl FixedPoint {
    /// The schedule of a fixed-point loop that stops its adjoint iteration
    /// at a relative change of `tolerance`, or after `max_iterations` (at
    /// least 1) reversals.
    pub fn new(tolerance: f64, max_iterations: u64) -> Self {
        FixedPoint {
            tolerance,
            max_iterations: max_iterations.max(1),
            started: 0,
            held: Vec::new(),
            by_exit: false,
            phase: Phase::Forward,
            iterations: 0,
            largest: 0.0,
            pending: 0.0,
            last_change: 0.0,
            converged: None,
            peak: 0,
            before: Vec::new(),
            after: None,
            forward_change: None,
        }
    }

    /// The complete iteration reversed repeatedly, if any.
    fn complete(&self) -> Option<u64> {
        let l = self.started;
        match (self.by_exit, l) {
            (_, 0) | (true, 1) => None,
            (true, _) => Some(l - 2),
            (false, _) => Some(l - 1),
        }
    }

    /// After measuring reversal `iterations`: whether to stop.
    fn judge(&mut self) -> bool {
        let d = self.pending;
        let reference = self.largest;
        self.largest = self.largest.max(d);
        self.last_change = if reference > 0.0 {
            d / reference
        } else if d == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
        // An adjoint that overflowed is not converged, though `∞ ≤ τ · ∞`
        // holds: an expanding iteration used to stop there as converged,
        // with infinite derivatives.
        let converged = d.is_finite() && reference.is_finite() && d <= self.tolerance * reference;
        if converged || self.iterations >= self.max_iterations {
            self.converged = Some(converged && self.reached());
            return true;
        }
        false
    }

    /// Whether the loop reached its fixed point: its last complete
    /// iteration changed its state by at most the tolerance (a NaN never
    /// passes).
    fn reached(&self) -> bool {
        self.forward_change
            .is_some_and(|c| c <= self.tolerance || c == 0.0)
    }

    /// The values after the first taped iteration are all in: the
    /// relative change of the state.
    fn settle_check(&mut self) {
        let Some((next, change, largest)) = self.after.take() else {
            return;
        };
        let c = if next != self.before.len() || change.is_nan() || largest.is_nan() {
            f64::NAN
        } else if change == 0.0 {
            0.0
        } else if largest > 0.0 && largest.is_finite() {
            change / largest
        } else {
            f64::INFINITY
        };
        self.forward_change = Some(c);
        self.before = Vec::new();
    }
}

impl LoopSchedule for FixedPoint {
    fn kind(&self) -> &'static str {
        "fixed-point"
    }

    fn runs_itself(&self) -> bool {
        true
    }

    fn iteration(&mut self, drops: &mut Drops) -> bool {
        if self.held.len() == 2 {
            self.held.remove(0);
            drops.push(1);
        }
        self.held.push(self.started);
        self.started += 1;
        self.peak = self.peak.max(self.held.len());
        true
    }

    fn ended(&mut self, by_exit: bool, drops: &mut Drops) {
        self.by_exit = by_exit;
        if !by_exit && self.held.len() == 2 {
            self.held.remove(0);
            drops.push(1);
        }
    }

    fn next_action(&mut self, drops: &mut Drops) -> Action {
        loop {
            match self.phase {
                Phase::Finished => return Action::Done,
                Phase::Forward => {
                    self.phase = if self.by_exit && self.started > 0 {
                        Phase::PartialRestore
                    } else {
                        Phase::Seed
                    };
                }
                Phase::PartialRestore => {
                    self.phase = Phase::PartialTape;
                    return Action::Restore {
                        at: self.started - 1,
                    };
                }
                Phase::PartialTape => {
                    self.phase = Phase::PartialAdjoint;
                    return Action::Tape {
                        step: self.started - 1,
                    };
                }
                Phase::PartialAdjoint => {
                    self.phase = Phase::Seed;
                    return Action::Adjoint {
                        step: self.started - 1,
                    };
                }
                Phase::Seed => {
                    if self.by_exit && self.started > 0 {
                        // The partial iteration's snapshot is done with.
                        self.held.pop();
                        drops.push(0);
                    }
                    if self.complete().is_none() {
                        self.phase = Phase::Finished;
                        return Action::Done;
                    }
                    self.pending = 0.0;
                    self.phase = Phase::Restore;
                    return Action::Measure;
                }
                Phase::Restore => {
                    if self.iterations == 0 {
                        // The seed's measure.
                        self.largest = self.pending;
                    }
                    self.pending = 0.0;
                    self.phase = if self.iterations == 0 {
                        Phase::CheckBefore
                    } else {
                        Phase::Tape
                    };
                    return Action::Restore {
                        at: self.complete().unwrap_or(0),
                    };
                }
                Phase::CheckBefore => {
                    self.before.clear();
                    self.phase = Phase::Tape;
                    return Action::Check;
                }
                Phase::Tape => {
                    self.phase = if self.iterations == 0 {
                        Phase::CheckAfter
                    } else {
                        Phase::Adjoint
                    };
                    return Action::Tape {
                        step: self.complete().unwrap_or(0),
                    };
                }
                Phase::CheckAfter => {
                    self.after = Some((0, 0.0, 0.0));
                    self.phase = Phase::Adjoint;
                    return Action::Check;
                }
                Phase::Adjoint => {
                    self.settle_check();
                    self.phase = Phase::Measure;
                    self.iterations += 1;
                    return Action::Adjoint {
                        step: self.complete().unwrap_or(0),
                    };
                }
                Phase::Measure => {
                    self.pending = 0.0;
                    self.phase = Phase::Judge;
                    return Action::Measure;
                }
                Phase::Judge => {
                    if self.judge() {
                        self.held.pop();
                        drops.push(0);
                        self.phase = Phase::Finished;
                        return Action::Done;
                    }
                    self.phase = Phase::Restore;
                }
            }
        }
    }

    fn measure(&mut self, norm: f64) {
        // NaN propagates: the iteration then never counts as converged.
        self.pending = if norm.is_nan() || self.pending.is_nan() {
            f64::NAN
        } else {
            self.pending.max(norm.abs())
        };
    }

    fn check(&mut self, values: &[f64]) {
        let Some((next, change, largest)) = &mut self.after else {
            self.before.extend_from_slice(values);
            return;
        };
        for &v in values {
            let d = match self.before.get(*next) {
                Some(&b) => {
                    *largest = nan_max(nan_max(*largest, b.abs()), v.abs());
                    (v - b).abs()
                }
                None => f64::NAN,
            };
            *change = nan_max(*change, d);
            *next += 1;
        }
    }

    fn held(&self) -> usize {
        self.held.len()
    }

    fn report(&self) -> Report {
        Report {
            steps: self.started,
            forward_steps: self.started,
            peak_held: self.peak,
            adjoint_iterations: Some(self.iterations),
            final_change: Some(self.last_change),
            converged: self.converged,
            forward_change: self.forward_change,
            reached: self.forward_change.map(|_| self.reached()),
        }
    }
}

/// The larger of `a` and `b`, NaN when either is (`f64::max` drops a NaN).
fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the adjoint sweep with the state's adjoint shrinking by `q`
    /// per reversal from `seed`, of a loop that reached its fixed point;
    /// the actions (but the checks) and the report.
    fn run(l: u64, by_exit: bool, q: f64, seed: f64, tol: f64, max: u64) -> (Vec<Action>, Report) {
        let state = [1.5, -2.0, 0.0];
        checked(l, by_exit, q, seed, tol, max, &state, &state)
    }

    /// [`run`] of a loop whose state is `before` before its first taped
    /// complete iteration and `after` after it (reported in two calls
    /// each); there are two checks exactly when an iteration is complete.
    #[allow(clippy::too_many_arguments)]
    fn checked(
        l: u64,
        by_exit: bool,
        q: f64,
        seed: f64,
        tol: f64,
        max: u64,
        before: &[f64],
        after: &[f64],
    ) -> (Vec<Action>, Report) {
        let mut f = FixedPoint::new(tol, max);
        let mut drops = Drops::new();
        for _ in 0..l {
            assert!(f.iteration(&mut drops));
            assert!(f.held() <= 2);
        }
        f.ended(by_exit, &mut drops);
        let mut d = seed;
        let mut out = Vec::new();
        let mut checks = 0;
        loop {
            let a = f.next_action(&mut drops);
            if a == Action::Check {
                let values = if checks == 0 { before } else { after };
                let (first, second) = values.split_at(values.len() / 2);
                f.check(first);
                f.check(second);
                checks += 1;
                continue;
            }
            out.push(a);
            match a {
                Action::Done => break,
                Action::Measure => f.measure(d),
                Action::Adjoint { .. } => d *= q,
                _ => {}
            }
        }
        assert_eq!(f.held(), 0);
        let complete = l > 1 || (l == 1 && !by_exit);
        assert_eq!(checks, if complete { 2 } else { 0 });
        (out, f.report())
    }

    #[test]
    fn a_loop_that_did_not_reach_its_fixed_point_is_not_converged() {
        // `y = x * y` stopped after 3 iterations: its adjoint converges
        // (x = 0.5), but its last iteration halved its state.
        let (_, r) = checked(3, false, 0.5, 1.0, 1e-12, 1000, &[4.0], &[2.0]);
        assert_eq!(r.adjoint_iterations, Some(40));
        assert_eq!(r.forward_change, Some(0.5));
        assert_eq!(r.converged, Some(false));
        // Within the tolerance, relative to the largest value of the state.
        let near = [1e3, 1.0 + 1e-10];
        let (_, r) = checked(3, true, 0.5, 1.0, 1e-12, 1000, &[1e3, 1.0], &near);
        assert!(r.forward_change.unwrap() <= 1e-12, "{r:?}");
        assert_eq!(r.converged, Some(true));
        let (_, r) = checked(3, false, 0.5, 1.0, 1e-14, 1000, &[1e3, 1.0], &near);
        assert_eq!(r.converged, Some(false));
        // A value that is not a number, or a state reported with another
        // number of values, never passes.
        for (b, a) in [
            (&[1.0, f64::NAN][..], &[1.0, f64::NAN][..]),
            (&[1.0, 2.0][..], &[1.0][..]),
            (&[1.0][..], &[1.0, 2.0][..]),
            (&[f64::INFINITY][..], &[f64::INFINITY][..]),
        ] {
            let (_, r) = checked(4, false, 0.5, 1.0, 1e-12, 1000, b, a);
            assert_eq!(r.converged, Some(false), "{b:?} -> {a:?}: {r:?}");
        }
        // An unchanged state of zeros has reached its fixed point.
        let (_, r) = checked(4, false, 0.5, 1.0, 1e-12, 1000, &[0.0, 0.0], &[0.0, -0.0]);
        assert_eq!((r.forward_change, r.converged), (Some(0.0), Some(true)));
    }

    #[test]
    fn a_contraction_converges_to_the_tolerance() {
        let (actions, r) = run(30, false, 0.5, 1.0, 1e-12, 1000);
        // 0.5^k <= 1e-12 first at k = 40.
        assert_eq!(r.adjoint_iterations, Some(40));
        assert_eq!(r.converged, Some(true));
        assert!(r.final_change.unwrap() <= 1e-12);
        assert_eq!(actions[0], Action::Measure);
        assert_eq!(actions[1], Action::Restore { at: 29 });
        assert_eq!(actions[2], Action::Tape { step: 29 });
    }

    #[test]
    fn a_loop_left_by_an_exit_reverses_its_partial_iteration_first() {
        let (actions, r) = run(5, true, 0.1, 1.0, 1e-6, 100);
        assert_eq!(
            &actions[..5],
            &[
                Action::Restore { at: 4 },
                Action::Tape { step: 4 },
                Action::Adjoint { step: 4 },
                Action::Measure,
                Action::Restore { at: 3 },
            ]
        );
        assert_eq!(r.converged, Some(true));
        // One partial iteration alone: nothing to iterate.
        let (actions, r) = run(1, true, 0.1, 1.0, 1e-6, 100);
        assert_eq!(actions.len(), 4);
        assert_eq!(r.adjoint_iterations, Some(0));
        let (actions, _) = run(0, false, 0.1, 1.0, 1e-6, 100);
        assert_eq!(actions, vec![Action::Done]);
    }

    #[test]
    fn no_convergence_within_the_limit_is_reported() {
        let (_, r) = run(3, false, 1.0, 1.0, 1e-12, 7);
        assert_eq!(r.adjoint_iterations, Some(7));
        assert_eq!(r.converged, Some(false));
        let (_, r) = run(3, false, f64::NAN, 1.0, 1e-12, 5);
        assert_eq!(r.converged, Some(false));
        // An expanding iteration whose adjoint overflows (2^1024) is not
        // converged, at the limit or after it.
        let (_, r) = run(3, false, 2.0, 1.0, 1e-12, 1100);
        assert_eq!(
            (r.adjoint_iterations, r.converged),
            (Some(1100), Some(false))
        );
        let (_, r) = run(3, false, f64::INFINITY, 1.0, 1e-12, 4);
        assert_eq!((r.adjoint_iterations, r.converged), (Some(4), Some(false)));
        // A zero seed converges at once.
        let (_, r) = run(3, false, 0.5, 0.0, 1e-12, 5);
        assert_eq!((r.adjoint_iterations, r.converged), (Some(1), Some(true)));
    }
}
