//! The one interface every loop schedule has: the actions a checkpointed
//! loop's generated code dispatches on, what a schedule is asked, and what
//! it reports when it is done.
//!
//! A schedule decides; it holds no values. Its snapshots are positions
//! (the state before iteration `at`), kept as a list in the order they were
//! stored; whoever runs it holds the values in one frame per snapshot, in
//! the same order, and removes the frames the schedule drops
//! ([`Drops`]: depths from the newest, applied in order).
//!
//! Two kinds of taping sweeps exist. A loop whose trip count is known when
//! it starts (binomial checkpointing) is run by the schedule: its taping
//! sweep asks [`LoopSchedule::next_action`] as the adjoint sweep does. A
//! loop that runs itself (a while loop, a loop left by an exit, a
//! fixed-point iteration, a loop of independent iterations) runs its own
//! header in the taping sweep and tells the schedule of each iteration
//! about to run ([`LoopSchedule::iteration`], which answers whether to
//! store the state first) and of its end ([`LoopSchedule::ended`]); only
//! its adjoint sweep asks for actions.

/// One action of a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Store the current state, the state before step `at`, as a new
    /// snapshot.
    Store {
        /// The state's position.
        at: u64,
    },
    /// Restore the latest snapshot, the state before step `at`.
    Restore {
        /// The snapshot's position.
        at: u64,
    },
    /// Run steps `from..to` without taping.
    Advance {
        /// The first step run.
        from: u64,
        /// The position reached.
        to: u64,
    },
    /// Run step `step` with taping.
    Tape {
        /// The step.
        step: u64,
    },
    /// Reverse step `step`, taped just before.
    Adjoint {
        /// The step.
        step: u64,
    },
    /// Measure the adjoint of the loop's state (a fixed-point loop: the
    /// generated code reports it with `oad_revolve_measure`).
    Measure,
    /// Report the values of the loop's state (a fixed-point loop, before
    /// and after its first taped iteration: the generated code reports
    /// them with `oad_revolve_check`), to tell whether the loop reached
    /// its fixed point.
    Check,
    /// This sweep is over.
    Done,
}

/// Snapshots a schedule dropped: for each, its depth counted from the
/// newest snapshot held at that moment (0 the newest), in the order they
/// are to be removed.
pub type Drops = Vec<usize>;

/// What a schedule did, reported when it finishes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Iterations of the loop.
    pub steps: u64,
    /// Iterations run without taping, over both sweeps.
    pub forward_steps: u64,
    /// The most snapshots held at once.
    pub peak_held: usize,
    /// Adjoint iterations of a fixed-point loop.
    pub adjoint_iterations: Option<u64>,
    /// The last relative change of a fixed-point loop's state adjoint.
    pub final_change: Option<f64>,
    /// Whether a fixed-point loop converged: its last complete iteration
    /// left its state unchanged within its tolerance
    /// ([`Report::forward_change`]) and its adjoint converged within its
    /// limit.
    pub converged: Option<bool>,
    /// How much a fixed-point loop's last complete iteration changed its
    /// state: the largest absolute change relative to the largest
    /// absolute value (`None` when no iteration was complete, NaN when a
    /// value was not a number).
    pub forward_change: Option<f64>,
    /// Whether a fixed-point loop reached its fixed point: its
    /// [`Report::forward_change`] is within its tolerance (`None` when no
    /// iteration was complete).
    pub reached: Option<bool>,
}

/// The schedule of one loop instance.
pub trait LoopSchedule: Send {
    /// The name of the kind of schedule, as `--stats-json` reports it
    /// (`binomial`, `online`, `fixed-point`, `independent`).
    fn kind(&self) -> &'static str;

    /// Whether the loop runs its own header in the taping sweep
    /// ([`LoopSchedule::iteration`] and [`LoopSchedule::ended`]) rather
    /// than asking [`LoopSchedule::next_action`].
    fn runs_itself(&self) -> bool;

    /// The loop runs itself: one more iteration is about to run, from the
    /// current state. Whether to store that state first; snapshots dropped
    /// go to `drops`.
    fn iteration(&mut self, drops: &mut Drops) -> bool;

    /// The loop ran itself to its end, through its header (`by_exit`
    /// false) or by a jump out of its body in the middle of its last
    /// iteration. Snapshots dropped go to `drops`.
    fn ended(&mut self, by_exit: bool, drops: &mut Drops);

    /// The next action (after [`Action::Done`], `Done` again); snapshots
    /// dropped before it go to `drops`.
    fn next_action(&mut self, drops: &mut Drops) -> Action;

    /// The measure of the state's adjoint asked by [`Action::Measure`].
    fn measure(&mut self, _norm: f64) {}

    /// Values of the state asked by [`Action::Check`], in the order of
    /// the state's variables (several calls continue one another).
    fn check(&mut self, _values: &[f64]) {}

    /// Snapshots held now.
    fn held(&self) -> usize;

    /// What the schedule did so far.
    fn report(&self) -> Report;
}

/// The kinds of schedules, with what each needs to start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// A loop of known trip count (none when negative): binomial
    /// checkpointing (Griewank and Walther).
    Binomial {
        /// The trip count.
        steps: i64,
    },
    /// A loop whose trip count is known only at its end: online
    /// checkpointing ([`crate::online`]).
    Online,
    /// A fixed-point iteration: its last iteration reversed repeatedly
    /// until the state's adjoint converges ([`crate::fixed_point`]).
    FixedPoint {
        /// The relative change below which the state's adjoint counts as
        /// converged.
        tolerance: f64,
        /// At most this many adjoint iterations.
        max_iterations: u64,
    },
    /// A loop of independent iterations, each taped and reversed on its
    /// own from the loop's entry state ([`crate::independent`]).
    Independent,
}

impl Kind {
    /// The schedule of one instance with at most `snapshots` snapshots
    /// (at least 1; the fixed-point and independent schedules hold at most
    /// 2 and 1 whatever is asked).
    pub fn schedule(self, snapshots: u64) -> Box<dyn LoopSchedule> {
        let s = snapshots.max(1);
        match self {
            Kind::Binomial { steps } => {
                Box::new(crate::revolve::Binomial::new(steps.max(0) as u64, s))
            }
            Kind::Online => Box::new(crate::online::Online::new(s)),
            Kind::FixedPoint {
                tolerance,
                max_iterations,
            } => Box::new(crate::fixed_point::FixedPoint::new(
                tolerance,
                max_iterations,
            )),
            Kind::Independent => Box::new(crate::independent::Independent::new()),
        }
    }
}
