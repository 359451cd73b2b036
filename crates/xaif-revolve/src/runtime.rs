//! The run-time bookkeeping of checkpointed loops: what the calls in a
//! checkpointed adjoint ask for, independent of how values are stored.
//!
//! A checkpointed loop is reversed in two sweeps, as every other part of an
//! adjoint: the taping sweep runs the loop forward, storing snapshots where
//! the schedule says and taping only the last step, and the adjoint sweep,
//! later, reverses that step and drives the rest of the schedule. Between
//! the two the instance is *paused*. Instances begin in taping order and
//! their adjoint sweeps start in the reverse order in which their taping
//! sweeps ended (the adjoint mirrors the taping), so paused instances form
//! a stack; instances run inside a step of another (a marked inner loop:
//! two-level checkpointing) begin and pause or finish inside that step, so
//! running instances form a stack too. The snapshots of all instances form
//! one stack of frames: an instance stores its frames above those of every
//! instance still paused or running below it, and drops them all before it
//! finishes.
//!
//! The generated code dispatches on integer codes ([`DONE`], [`STORE`],
//! [`RESTORE`], [`ADVANCE`], [`TAPE`], [`ADJOINT`]); `runtime/` holds the
//! Fortran module with the same calls.

use crate::schedule::{Action, Schedule};

/// Code of "this sweep of the loop is over".
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
}

/// What a finished instance did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished<T> {
    /// What the caller attached at `begin`.
    pub tag: T,
    /// Its steps.
    pub steps: u64,
    /// The snapshots it was allowed.
    pub snapshots: u64,
    /// Steps run without taping, over both sweeps.
    pub forward_steps: u64,
    /// The most snapshots it held at once.
    pub peak_snapshots: usize,
}

/// The answer to [`Runtime::next`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply<T> {
    /// The action (`Done` also when the taping sweep pauses).
    pub action: Action,
    /// Its code for the generated code.
    pub code: i64,
    /// Its count: the steps of an advance, the position of a store or
    /// restore, the step of a tape or adjoint, 0 when done.
    pub count: i64,
    /// Snapshot frames to drop (the top ones) before acting.
    pub dropped: usize,
    /// The instance, when this reply finished it.
    pub finished: Option<Finished<T>>,
}

struct Instance<T> {
    schedule: Schedule,
    tag: T,
    sweep: Sweep,
    /// The taping sweep taped its step: the next call pauses it.
    taped: bool,
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
        Action::Done => (DONE, 0),
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

    /// Begins the taping sweep of an instance of `steps` steps (none when
    /// negative) with at most `snapshots` snapshots.
    pub fn begin(&mut self, steps: i64, snapshots: i64, tag: T) -> Result<(), RuntimeError> {
        if snapshots < 1 {
            return Err(RuntimeError::Snapshots(snapshots));
        }
        self.running.push(Instance {
            schedule: Schedule::new(steps.max(0) as u64, snapshots as u64),
            tag,
            sweep: Sweep::Taping,
            taped: false,
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

    /// The next action of the running instance. Its taping sweep ends
    /// (pauses) after its one taped step; its adjoint sweep ends when every
    /// step is reversed, which finishes it.
    pub fn next_action(&mut self) -> Result<Reply<T>, RuntimeError> {
        let inst = self.running.last_mut().ok_or(RuntimeError::NotRunning)?;
        let done = Reply {
            action: Action::Done,
            code: DONE,
            count: 0,
            dropped: 0,
            finished: None,
        };
        if inst.sweep == Sweep::Taping && inst.taped {
            let i = self.running.pop().expect("a running instance");
            self.paused.push(i);
            return Ok(done);
        }
        let before = inst.schedule.held();
        let action = inst.schedule.next_action();
        let dropped = before.saturating_sub(inst.schedule.held());
        if action == Action::Done {
            let i = self.running.pop().expect("a running instance");
            if i.sweep == Sweep::Taping {
                // No step at all: the adjoint sweep still resumes it.
                self.paused.push(i);
                return Ok(done);
            }
            return Ok(Reply {
                dropped,
                finished: Some(Finished {
                    steps: i.schedule.steps(),
                    snapshots: i.schedule.snapshots(),
                    forward_steps: i.schedule.forward_steps(),
                    peak_snapshots: i.schedule.peak_held(),
                    tag: i.tag,
                }),
                ..done
            });
        }
        if matches!(action, Action::Tape { .. }) && inst.sweep == Sweep::Taping {
            inst.taped = true;
        }
        let (code, count) = code(action);
        Ok(Reply {
            action,
            code,
            count,
            dropped,
            finished: None,
        })
    }
}
