//! Binomial checkpointing (Griewank and Walther's Revolve) of one loop
//! instance whose trip count is known when it starts, one action at a time.
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
//! `s ≤ 10`), and no step runs untaped more than `r(l, s)` times, the
//! repetition number. The actions are computed on demand, so a schedule
//! costs memory for its snapshot positions only.
//!
//! The online schedule reverses each stretch between two of its snapshots
//! with a binomial schedule that starts from a snapshot it already holds
//! ([`Binomial::from_snapshot`]).

use crate::binomial::next_snapshot;
use crate::schedule::{Action, Drops, LoopSchedule, Report};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing done yet.
    Start,
    /// The entry state is held but not the program's: restore it first.
    Restore,
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
pub struct Binomial {
    steps: u64,
    snapshots: u64,
    /// Added to every position reported (a stretch of a longer loop).
    offset: u64,
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

impl Binomial {
    /// The schedule of `steps` steps with at most `snapshots` snapshots
    /// (at least 1 is used: the entry state's).
    pub fn new(steps: u64, snapshots: u64) -> Self {
        Binomial {
            steps,
            snapshots: snapshots.max(1),
            offset: 0,
            stored: Vec::new(),
            capo: 0,
            fine: steps,
            phase: Phase::Start,
            forward: 0,
            peak: 0,
        }
    }

    /// The schedule of the `steps` steps after position `offset`, whose
    /// state is held in a snapshot already (counted among the
    /// `snapshots`) but is not the program's: the first action restores
    /// it, and the last drops it.
    pub fn from_snapshot(offset: u64, steps: u64, snapshots: u64) -> Self {
        let mut b = Binomial::new(steps, snapshots);
        b.offset = offset;
        b.stored.push(0);
        b.peak = 1;
        b.phase = if steps == 0 {
            Phase::Reversed
        } else {
            Phase::Restore
        };
        b
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

    /// The most snapshots held at once so far.
    pub fn peak_held(&self) -> usize {
        self.peak
    }

    /// The next action, the snapshots dropped before it into `drops` (the
    /// newest ones: those at or after the step just reversed).
    pub fn next_action_into(&mut self, drops: &mut Drops) -> Action {
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
            Phase::Restore => {
                self.phase = Phase::Ready;
                Action::Restore { at: self.offset }
            }
            Phase::Ready => self.ready(),
            Phase::Taped => {
                self.fine -= 1;
                self.phase = Phase::Reversed;
                Action::Adjoint {
                    step: self.offset + self.fine,
                }
            }
            Phase::Reversed => {
                // Snapshots at or after the part reversed are not needed.
                while self.stored.last().is_some_and(|&p| p >= self.fine) {
                    self.stored.pop();
                    drops.push(0);
                }
                if self.fine == 0 {
                    self.phase = Phase::Finished;
                    return Action::Done;
                }
                // Position 0 is stored whenever there are two steps or more.
                let at = self.stored.last().copied().unwrap_or(0);
                self.capo = at;
                self.phase = Phase::Ready;
                Action::Restore {
                    at: self.offset + at,
                }
            }
        }
    }

    /// The action from state `capo`.
    fn ready(&mut self) -> Action {
        if self.capo + 1 == self.fine {
            self.phase = Phase::Taped;
            return Action::Tape {
                step: self.offset + self.capo,
            };
        }
        if self.stored.last() != Some(&self.capo) {
            self.stored.push(self.capo);
            self.peak = self.peak.max(self.stored.len());
            return Action::Store {
                at: self.offset + self.capo,
            };
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
        Action::Advance {
            from: self.offset + from,
            to: self.offset + to,
        }
    }

    /// The next action.
    pub fn next_action(&mut self) -> Action {
        let mut drops = Drops::new();
        self.next_action_into(&mut drops)
    }

    /// Snapshots held now.
    pub fn held(&self) -> usize {
        self.stored.len()
    }
}

impl LoopSchedule for Binomial {
    fn kind(&self) -> &'static str {
        "binomial"
    }

    fn runs_itself(&self) -> bool {
        false
    }

    fn iteration(&mut self, _drops: &mut Drops) -> bool {
        false
    }

    fn ended(&mut self, _by_exit: bool, _drops: &mut Drops) {}

    fn next_action(&mut self, drops: &mut Drops) -> Action {
        self.next_action_into(drops)
    }

    fn held(&self) -> usize {
        self.stored.len()
    }

    fn report(&self) -> Report {
        Report {
            steps: self.steps,
            forward_steps: self.forward,
            peak_held: self.peak,
            ..Report::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn actions(l: u64, s: u64) -> Vec<Action> {
        let mut sch = Binomial::new(l, s);
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

    #[test]
    fn a_stretch_from_a_held_snapshot_restores_it_first_and_drops_it_last() {
        use Action::*;
        let mut b = Binomial::from_snapshot(10, 2, 2);
        let mut drops = Drops::new();
        let mut seen = Vec::new();
        loop {
            let a = b.next_action_into(&mut drops);
            seen.push(a);
            if a == Done {
                break;
            }
        }
        assert_eq!(
            seen,
            vec![
                Restore { at: 10 },
                Advance { from: 10, to: 11 },
                Tape { step: 11 },
                Adjoint { step: 11 },
                Restore { at: 10 },
                Tape { step: 10 },
                Adjoint { step: 10 },
                Done
            ]
        );
        // The held entry snapshot is dropped with the last step.
        assert_eq!(drops, vec![0]);
        assert_eq!(b.held(), 0);
    }
}
