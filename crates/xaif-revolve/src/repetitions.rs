//! How often each iteration of a loop ran without taping: the repetition
//! count `--stats-json` reports as `max_repetitions`.
//!
//! Untaped runs come as ranges (an advance runs `from..to`, the forward
//! sweep of a loop that runs itself runs `0..l`), so they are kept as a
//! difference array, one counter per iteration, grown as iterations are
//! seen: 4 bytes per iteration, read once when the loop is done.

/// Untaped runs per iteration.
#[derive(Clone, Debug, Default)]
pub struct Repetitions {
    /// `delta[i]`: runs starting at iteration `i` minus runs ending there.
    delta: Vec<i32>,
    /// Counting stopped: beyond [`Repetitions::LIMIT`] iterations.
    overflow: bool,
}

impl Repetitions {
    /// Iterations counted at most (beyond, `max` answers `None`).
    pub const LIMIT: u64 = 1 << 28;

    /// Nothing counted yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Iterations `from..to` ran once more untaped.
    pub fn add(&mut self, from: u64, to: u64) {
        if from >= to || self.overflow {
            return;
        }
        if to > Self::LIMIT {
            self.overflow = true;
            self.delta = Vec::new();
            return;
        }
        let need = to as usize + 1;
        if self.delta.len() < need {
            self.delta.resize(need, 0);
        }
        self.delta[from as usize] += 1;
        self.delta[to as usize] -= 1;
    }

    /// The most untaped runs of any iteration (0 when none ran untaped).
    pub fn max(&self) -> Option<u64> {
        if self.overflow {
            return None;
        }
        let mut run: i64 = 0;
        let mut best: i64 = 0;
        for d in &self.delta {
            run += i64::from(*d);
            best = best.max(run);
        }
        Some(best as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_ranges_add_up() {
        let mut r = Repetitions::new();
        assert_eq!(r.max(), Some(0));
        r.add(0, 10);
        r.add(2, 5);
        r.add(4, 6);
        r.add(7, 7);
        assert_eq!(r.max(), Some(3));
        r.add(0, Repetitions::LIMIT + 1);
        assert_eq!(r.max(), None);
    }
}
