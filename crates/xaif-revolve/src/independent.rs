//! The schedule of a loop whose iterations are independent: each taped and
//! reversed on its own, from the loop's entry state.
//!
//! The loop runs itself, untaped, in the taping sweep; the schedule stores
//! its entry state before the first iteration. The adjoint sweep reverses
//! the iterations last to first, as the adjoint of the whole loop would:
//! each restores the entry state, tapes its iteration and reverses it. No
//! iteration reads what another writes (`xaif-dataflow` proves it before
//! the loop is marked), so the entry state is the state each iteration
//! began from, as far as it reads; the tape holds one iteration, and no
//! iteration runs untaped but in the forward sweep.

use crate::schedule::{Action, Drops, LoopSchedule, Report};

/// The independent schedule of one loop instance.
#[derive(Clone, Debug, Default)]
pub struct Independent {
    started: u64,
    held: bool,
    /// Iterations `next..started` are reversed.
    next: u64,
    /// Which action of the iteration being reversed comes next: its
    /// restore (0, of iteration `next − 1`), tape (1) or adjoint (2, of
    /// iteration `next`).
    step: u8,
    begun: bool,
}

impl Independent {
    /// The schedule of one instance.
    pub fn new() -> Self {
        Independent::default()
    }
}

impl LoopSchedule for Independent {
    fn kind(&self) -> &'static str {
        "independent"
    }

    fn runs_itself(&self) -> bool {
        true
    }

    fn iteration(&mut self, _drops: &mut Drops) -> bool {
        self.started += 1;
        let store = !self.held;
        self.held = true;
        store
    }

    fn ended(&mut self, _by_exit: bool, _drops: &mut Drops) {}

    fn next_action(&mut self, drops: &mut Drops) -> Action {
        if !self.begun {
            self.begun = true;
            self.next = self.started;
        }
        if self.next == 0 && self.step == 0 {
            if self.held {
                self.held = false;
                drops.push(0);
            }
            return Action::Done;
        }
        let k = self.next - if self.step == 0 { 1 } else { 0 };
        match self.step {
            0 => {
                self.next -= 1;
                self.step = 1;
                Action::Restore { at: 0 }
            }
            1 => {
                self.step = 2;
                Action::Tape { step: k }
            }
            _ => {
                self.step = 0;
                Action::Adjoint { step: k }
            }
        }
    }

    fn held(&self) -> usize {
        usize::from(self.held)
    }

    fn report(&self) -> Report {
        Report {
            steps: self.started,
            forward_steps: self.started,
            peak_held: usize::from(self.started > 0),
            ..Report::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterations_are_reversed_last_to_first_from_the_entry_state() {
        let mut s = Independent::new();
        let mut drops = Drops::new();
        assert!(s.iteration(&mut drops));
        assert!(!s.iteration(&mut drops));
        s.ended(false, &mut drops);
        let mut seen = Vec::new();
        loop {
            let a = s.next_action(&mut drops);
            seen.push(a);
            if a == Action::Done {
                break;
            }
        }
        use Action::*;
        assert_eq!(
            seen,
            vec![
                Restore { at: 0 },
                Tape { step: 1 },
                Adjoint { step: 1 },
                Restore { at: 0 },
                Tape { step: 0 },
                Adjoint { step: 0 },
                Done
            ]
        );
        assert_eq!(drops, vec![0]);
        let mut empty = Independent::new();
        assert_eq!(empty.next_action(&mut drops), Done);
    }
}
