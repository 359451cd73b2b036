//! The run-time bookkeeping of checkpointed loops: what the calls in a
//! checkpointed adjoint ask for, independent of how values are stored.
//!
//! A checkpointed loop is reversed in two sweeps, as every other part of an
//! adjoint. Its taping sweep either asks the schedule for actions (a loop
//! of known trip count: store snapshots, advance without taping, tape its
//! last step) or runs its own header, telling the schedule of each
//! iteration ([`Runtime::iteration`]: store the state first or not) and of
//! its end ([`Runtime::end`]); the adjoint sweep, later, asks for actions
//! until every step is reversed. Between the two the instance is *paused*.
//! Instances begin in taping order and their adjoint sweeps start in the
//! reverse order in which their taping sweeps ended (the adjoint mirrors
//! the taping), so paused instances form a stack; instances run inside a
//! step of another (a marked inner loop: two-level checkpointing) begin
//! and pause or finish inside that step, so running instances form a stack
//! too. The snapshots of all instances form one stack of frames: an
//! instance stores its frames above those of every instance still paused
//! or running below it, and drops them all before it finishes; a schedule
//! may drop one of its own frames that is not the newest ([`Reply::drops`]
//! gives depths from the newest frame).
//!
//! The generated code dispatches on integer codes ([`DONE`], [`STORE`],
//! [`RESTORE`], [`ADVANCE`], [`TAPE`], [`ADJOINT`], [`MEASURE`],
//! [`CHECK`]);
//! `runtime/` holds the Fortran module with the same calls.

use crate::repetitions::Repetitions;
use crate::schedule::{Action, Drops, Kind, LoopSchedule};

/// Code of "this sweep of the loop is over" (and of "run the iteration"
/// in answer to [`Runtime::iteration`]).
pub const DONE: i64 = 0;
/// Code of "store the loop state as a new snapshot".
pub const STORE: i64 = 1;
/// Code of "restore the latest snapshot".
pub const RESTORE: i64 = 2;
/// Code of "run `count` steps without taping".
pub const ADVANCE: i64 = 3;
/// Code of "run one step with taping".
pub const TAPE: i64 = 4;
/// Code of "reverse the step just taped".
pub const ADJOINT: i64 = 5;
/// Code of "measure the adjoint of the loop's state" (fixed-point loops).
pub const MEASURE: i64 = 6;
/// Code of "report the values of the loop's state" (fixed-point loops,
/// before and after their first taped iteration).
pub const CHECK: i64 = 7;

/// Which sweep an instance is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sweep {
    /// Begun, not yet paused.
    Taping,
    /// Resumed.
    Adjoint,
}

/// A misuse of the run-time calls (generated code never does this; a
/// hand-edited or truncated program may).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    /// `next` without a running instance.
    #[error("no checkpointed loop is running (a `next` call without `begin` or `resume`)")]
    NotRunning,
    /// `resume` without a paused instance.
    #[error("no checkpointed loop is paused (a `resume` call without a taping sweep before it)")]
    NothingPaused,
    /// `begin` with fewer than one snapshot.
    #[error("{0} snapshots: a checkpointed loop needs at least 1")]
    Snapshots(i64),
    /// A call of the wrong sweep or kind of loop.
    #[error("{0}")]
    Sequence(&'static str),
}

/// What a finished instance did.
#[derive(Clone, Debug, PartialEq)]
pub struct Finished<T> {
    /// What the caller attached at `begin`.
    pub tag: T,
    /// The kind of schedule (`binomial`, `online`, `fixed-point`,
    /// `independent`).
    pub schedule: &'static str,
    /// Its steps.
    pub steps: u64,
    /// The snapshots it was allowed.
    pub snapshots: u64,
    /// Steps run without taping, over both sweeps.
    pub forward_steps: u64,
    /// The most times one step ran without taping, over both sweeps
    /// (`None` beyond [`Repetitions::LIMIT`] steps).
    pub max_repetitions: Option<u64>,
    /// The most snapshots it held at once.
    pub peak_snapshots: usize,
    /// Adjoint iterations of a fixed-point loop.
    pub adjoint_iterations: Option<u64>,
    /// Its last relative change of the state's adjoint.
    pub final_change: Option<f64>,
    /// Whether it reached its fixed point and its adjoint converged
    /// within its limit.
    pub converged: Option<bool>,
    /// How much its last complete iteration changed its state, relative
    /// to the state's largest value.
    pub forward_change: Option<f64>,
    /// Whether its last complete iteration left its state unchanged
    /// within its tolerance.
    pub reached: Option<bool>,
}

/// The answer to [`Runtime::next_action`], [`Runtime::iteration`] and
/// [`Runtime::end`].
#[derive(Clone, Debug, PartialEq)]
pub struct Reply<T> {
    /// The action (`Done` also when the taping sweep pauses, and for "run
    /// the iteration" in answer to [`Runtime::iteration`]).
    pub action: Action,
    /// Its code for the generated code.
    pub code: i64,
    /// Its count: the steps of an advance, the position of a store or
    /// restore, the step of a tape or adjoint, 0 otherwise.
    pub count: i64,
    /// Snapshot frames to remove before acting, in order: each one's depth
    /// counted from the newest frame at that moment (0 the newest).
    pub drops: Drops,
    /// The instance, when this reply finished it.
    pub finished: Option<Finished<T>>,
}

struct Instance<T> {
    schedule: Box<dyn LoopSchedule>,
    snapshots: u64,
    tag: T,
    sweep: Sweep,
    /// The taping sweep taped its step: the next call pauses it.
    taped: bool,
    /// Untaped runs per step.
    repetitions: Repetitions,
}

/// Running and paused instances.
pub struct Runtime<T> {
    running: Vec<Instance<T>>,
    paused: Vec<Instance<T>>,
}

impl<T> Default for Runtime<T> {
    fn default() -> Self {
        Runtime {
            running: Vec::new(),
            paused: Vec::new(),
        }
    }
}

fn code(a: Action) -> (i64, i64) {
    let n = |x: u64| i64::try_from(x).unwrap_or(i64::MAX);
    match a {
        Action::Store { at } => (STORE, n(at)),
        Action::Restore { at } => (RESTORE, n(at)),
        Action::Advance { from, to } => (ADVANCE, n(to - from)),
        Action::Tape { step } => (TAPE, n(step)),
        Action::Adjoint { step } => (ADJOINT, n(step)),
        Action::Measure => (MEASURE, 0),
        Action::Check => (CHECK, 0),
        Action::Done => (DONE, 0),
    }
}

fn reply<T>(action: Action, drops: Drops) -> Reply<T> {
    let (code, count) = code(action);
    Reply {
        action,
        code,
        count,
        drops,
        finished: None,
    }
}

impl<T> Runtime<T> {
    /// A run-time with no instance.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no instance is running or paused.
    pub fn is_empty(&self) -> bool {
        self.running.is_empty() && self.paused.is_empty()
    }

    /// Instances running and paused.
    pub fn len(&self) -> usize {
        self.running.len() + self.paused.len()
    }

    /// Begins the taping sweep of an instance of `kind` with at most
    /// `snapshots` snapshots.
    pub fn begin(&mut self, kind: Kind, snapshots: i64, tag: T) -> Result<(), RuntimeError> {
        if snapshots < 1 {
            return Err(RuntimeError::Snapshots(snapshots));
        }
        self.running.push(Instance {
            schedule: kind.schedule(snapshots as u64),
            snapshots: snapshots as u64,
            tag,
            sweep: Sweep::Taping,
            taped: false,
            repetitions: Repetitions::new(),
        });
        Ok(())
    }

    /// Begins the adjoint sweep of the latest paused instance; returns its
    /// tag.
    pub fn resume(&mut self) -> Result<&mut T, RuntimeError> {
        let mut i = self.paused.pop().ok_or(RuntimeError::NothingPaused)?;
        i.sweep = Sweep::Adjoint;
        self.running.push(i);
        Ok(&mut self.running.last_mut().expect("pushed").tag)
    }

    /// The tag of the running instance the next call acts for.
    pub fn current(&mut self) -> Option<&mut T> {
        self.running.last_mut().map(|i| &mut i.tag)
    }

    /// The sweep of the running instance.
    pub fn sweep(&self) -> Option<Sweep> {
        self.running.last().map(|i| i.sweep)
    }

    /// The running instance runs itself and one more of its iterations is
    /// about to run: [`STORE`] to store the state first, [`DONE`] to run
    /// it at once.
    pub fn iteration(&mut self) -> Result<Reply<T>, RuntimeError> {
        let inst = self.running.last_mut().ok_or(RuntimeError::NotRunning)?;
        if inst.sweep != Sweep::Taping || !inst.schedule.runs_itself() {
            return Err(RuntimeError::Sequence(
                "an iteration call for a loop that does not run itself in its taping sweep",
            ));
        }
        let mut drops = Drops::new();
        let k = inst.schedule.report().steps;
        let store = inst.schedule.iteration(&mut drops);
        inst.repetitions.add(k, k + 1);
        Ok(if store {
            reply(Action::Store { at: k }, drops)
        } else {
            reply(Action::Done, drops)
        })
    }

    /// The running instance, which runs itself, ended (by a jump out of
    /// its body when `by_exit`): its taping sweep pauses.
    pub fn end(&mut self, by_exit: bool) -> Result<Reply<T>, RuntimeError> {
        let inst = self.running.last_mut().ok_or(RuntimeError::NotRunning)?;
        if inst.sweep != Sweep::Taping || !inst.schedule.runs_itself() {
            return Err(RuntimeError::Sequence(
                "an end call for a loop that does not run itself in its taping sweep",
            ));
        }
        let mut drops = Drops::new();
        inst.schedule.ended(by_exit, &mut drops);
        let i = self.running.pop().expect("a running instance");
        self.paused.push(i);
        Ok(reply(Action::Done, drops))
    }

    /// The measure of the running instance's state adjoint
    /// ([`MEASURE`]); several calls take the largest.
    pub fn measure(&mut self, norm: f64) -> Result<(), RuntimeError> {
        let inst = self.running.last_mut().ok_or(RuntimeError::NotRunning)?;
        inst.schedule.measure(norm);
        Ok(())
    }

    /// Values of the running instance's state ([`CHECK`]); several calls
    /// continue one another.
    pub fn check(&mut self, values: &[f64]) -> Result<(), RuntimeError> {
        let inst = self.running.last_mut().ok_or(RuntimeError::NotRunning)?;
        inst.schedule.check(values);
        Ok(())
    }

    /// The next action of the running instance. A taping sweep asked for
    /// actions ends (pauses) after its one taped step; an adjoint sweep
    /// ends when every step is reversed, which finishes the instance.
    pub fn next_action(&mut self) -> Result<Reply<T>, RuntimeError> {
        let inst = self.running.last_mut().ok_or(RuntimeError::NotRunning)?;
        if inst.sweep == Sweep::Taping {
            if inst.schedule.runs_itself() {
                return Err(RuntimeError::Sequence(
                    "a next call in the taping sweep of a loop that runs itself",
                ));
            }
            if inst.taped {
                let i = self.running.pop().expect("a running instance");
                self.paused.push(i);
                return Ok(reply(Action::Done, Drops::new()));
            }
        }
        let mut drops = Drops::new();
        let action = inst.schedule.next_action(&mut drops);
        if let Action::Advance { from, to } = action {
            inst.repetitions.add(from, to);
        }
        if action == Action::Done {
            let i = self.running.pop().expect("a running instance");
            if i.sweep == Sweep::Taping {
                // No step at all: the adjoint sweep still resumes it.
                self.paused.push(i);
                return Ok(reply(Action::Done, drops));
            }
            let r = i.schedule.report();
            let mut done = reply(Action::Done, drops);
            done.finished = Some(Finished {
                schedule: i.schedule.kind(),
                steps: r.steps,
                snapshots: i.snapshots,
                forward_steps: r.forward_steps,
                max_repetitions: i.repetitions.max(),
                peak_snapshots: r.peak_held,
                adjoint_iterations: r.adjoint_iterations,
                final_change: r.final_change,
                converged: r.converged,
                forward_change: r.forward_change,
                reached: r.reached,
                tag: i.tag,
            });
            return Ok(done);
        }
        if matches!(action, Action::Tape { .. }) && inst.sweep == Sweep::Taping {
            inst.taped = true;
        }
        Ok(reply(action, drops))
    }
}
