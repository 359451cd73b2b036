//! The schedule of one loop instance, one action at a time.
//!
//! A loop of `l` steps (step `i` takes the loop from state `i` to state
//! `i + 1`) is reversed with at most `s` snapshots held at once. The
//! schedule starts at state 0 and reverses the steps `l − 1, l − 2, …, 0`:
//!
//! - while the part still to be reversed, steps `capo..fine`, has more than
//!   one step, the current state (held in a snapshot) is advanced by the
//!   binomial rule ([`crate::binomial::next_snapshot`]) and stored as a new
//!   snapshot, or, when only the current state's snapshot is available,
//!   advanced to step `fine − 1`;
//! - step `fine − 1` is then taped and reversed; the snapshots at or after
//!   `fine` are dropped and the latest one left is restored.
//!
//! This is the recursion `t(l, s) = min_m m + t(l − m, s − 1) + t(m, s)`
//! unrolled with the snapshots as its stack, so the untaped steps come to
//! exactly [`crate::min_forward_steps`]`(l, s)` (tested for every `l ≤ 300`,
//! `s ≤ 10`). The actions are computed on demand, so a schedule costs
//! memory for its snapshot positions only.

use crate::binomial::next_snapshot;

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
    /// Every step is reversed.
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing done yet.
    Start,
    /// The program holds state `capo`.
    Ready,
    /// Step `fine − 1` was just taped.
    Taped,
    /// Step `fine` was just reversed; the program's state is undefined.
    Reversed,
    /// Every step is reversed.
    Finished,
}

/// The binomial schedule of one loop instance.
#[derive(Clone, Debug)]
pub struct Schedule {
    steps: u64,
    snapshots: u64,
    /// Positions of the snapshots held, oldest first.
    stored: Vec<u64>,
    /// The position of the program's state.
    capo: u64,
    /// Steps `fine..steps` are reversed.
    fine: u64,
    phase: Phase,
    forward: u64,
    peak: usize,
}

impl Schedule {
    /// The schedule of `steps` steps with at most `snapshots` snapshots
    /// (at least 1 is used: the entry state's).
    pub fn new(steps: u64, snapshots: u64) -> Self {
        Schedule {
            steps,
            snapshots: snapshots.max(1),
            stored: Vec::new(),
            capo: 0,
            fine: steps,
            phase: Phase::Start,
            forward: 0,
            peak: 0,
        }
    }

    /// The number of steps.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The snapshots allowed.
    pub fn snapshots(&self) -> u64 {
        self.snapshots
    }

    /// Steps run without taping so far (advances).
    pub fn forward_steps(&self) -> u64 {
        self.forward
    }

    /// Snapshots held now.
    pub fn held(&self) -> usize {
        self.stored.len()
    }

    /// The most snapshots held at once so far.
    pub fn peak_held(&self) -> usize {
        self.peak
    }

    /// The next action. After [`Action::Done`] it returns `Done` again.
    pub fn next_action(&mut self) -> Action {
        match self.phase {
            Phase::Finished => Action::Done,
            Phase::Start => {
                if self.steps == 0 {
                    self.phase = Phase::Finished;
                    return Action::Done;
                }
                self.phase = Phase::Ready;
                self.ready()
            }
            Phase::Ready => self.ready(),
            Phase::Taped => {
                self.fine -= 1;
                self.phase = Phase::Reversed;
                Action::Adjoint { step: self.fine }
            }
            Phase::Reversed => {
                // Snapshots at or after the part reversed are not needed.
                while self.stored.last().is_some_and(|&p| p >= self.fine) {
                    self.stored.pop();
                }
                if self.fine == 0 {
                    self.phase = Phase::Finished;
                    return Action::Done;
                }
                // Position 0 is stored whenever there are two steps or more.
                let at = self.stored.last().copied().unwrap_or(0);
                self.capo = at;
                self.phase = Phase::Ready;
                Action::Restore { at }
            }
        }
    }

    /// The action from state `capo`.
    fn ready(&mut self) -> Action {
        if self.capo + 1 == self.fine {
            self.phase = Phase::Taped;
            return Action::Tape { step: self.capo };
        }
        if self.stored.last() != Some(&self.capo) {
            self.stored.push(self.capo);
            self.peak = self.peak.max(self.stored.len());
            return Action::Store { at: self.capo };
        }
        // Snapshots available for steps capo..fine, the one at capo included.
        let available = self.snapshots - (self.stored.len() as u64 - 1);
        let from = self.capo;
        let to = if available <= 1 {
            self.fine - 1
        } else {
            from + next_snapshot(self.fine - from, available)
        };
        self.forward += to - from;
        self.capo = to;
        Action::Advance { from, to }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn actions(l: u64, s: u64) -> Vec<Action> {
        let mut sch = Schedule::new(l, s);
        let mut out = Vec::new();
        loop {
            let a = sch.next_action();
            out.push(a);
            if a == Action::Done {
                return out;
            }
        }
    }

    #[test]
    fn three_steps_with_two_snapshots() {
        use Action::*;
        assert_eq!(
            actions(3, 2),
            vec![
                Store { at: 0 },
                Advance { from: 0, to: 1 },
                Store { at: 1 },
                Advance { from: 1, to: 2 },
                Tape { step: 2 },
                Adjoint { step: 2 },
                Restore { at: 1 },
                Tape { step: 1 },
                Adjoint { step: 1 },
                Restore { at: 0 },
                Tape { step: 0 },
                Adjoint { step: 0 },
                Done,
            ]
        );
    }

    #[test]
    fn no_steps_and_one_step() {
        use Action::*;
        assert_eq!(actions(0, 3), vec![Done]);
        assert_eq!(
            actions(1, 3),
            vec![Tape { step: 0 }, Adjoint { step: 0 }, Done]
        );
    }
}
