//! The resources one run may use.
//!
//! The oracle executes programs it did not write: a loop that never ends,
//! a recursion without a base case or a bound of 2^63 must stop with an
//! error that says which limit it reached, before it exhausts the machine.
//! Every limit has a default that no corpus program comes near and is
//! listed in `docs/limits.md` with the flag of `xaifb run` that raises it.

use std::time::Duration;

/// Limits of a run. A run is one evaluation: the setup calls and the call
/// of the top routine that give the function's value, one column of a
/// tangent-linear Jacobian or one row of an adjoint one. Step budget and
/// time limit apply to each run anew; storage and call depth at any moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Executed statements and control flow vertices of one run.
    pub steps: u64,
    /// Wall-clock time of one run; `None` for no limit (the corpus
    /// runners, whose results must not depend on the machine's speed).
    pub time: Option<Duration>,
    /// Elements held at once by variables, frames, tapes and checkpoint
    /// stacks, checked before anything is allocated.
    pub elements: usize,
    /// Depth of routine calls.
    pub call_depth: usize,
}

impl Limits {
    /// Default step budget: 3.6 times the longest corpus run (5.5 M steps,
    /// `boxmodel` joint), reached in about 1.5 s by a tight loop.
    pub const STEPS: u64 = 20_000_000;
    /// Default time limit in seconds.
    pub const TIME: f64 = 4.0;
    /// Default element limit: 10^7 elements (160 MB of reals with their
    /// derivative parts).
    pub const ELEMENTS: usize = 10_000_000;
    /// Default call depth. The interpreter recurses natively per routine
    /// call (about 2.5 KiB of stack each in a release build), so the limit
    /// also bounds the stack: 500 calls stay inside a thread's default
    /// 2 MiB. A caller that raises it runs the machine on a thread with
    /// [`Limits::stack_bytes`] of stack, as `xaifb run` does.
    pub const CALL_DEPTH: usize = 500;

    /// Stack a thread needs to run a machine under these limits: room for
    /// `call_depth` nested calls, with a margin for expressions and
    /// subscripts nested inside the deepest one.
    pub fn stack_bytes(&self) -> usize {
        (16 << 20) + self.call_depth.saturating_mul(8 << 10)
    }

    /// The defaults without a time limit: results that do not depend on
    /// the machine's speed.
    pub fn untimed() -> Self {
        Limits {
            time: None,
            ..Limits::default()
        }
    }

    /// The defaults with `steps` as the step budget and no time limit.
    pub fn with_steps(steps: u64) -> Self {
        Limits {
            steps,
            ..Limits::untimed()
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            steps: Self::STEPS,
            time: Some(Duration::from_secs_f64(Self::TIME)),
            elements: Self::ELEMENTS,
            call_depth: Self::CALL_DEPTH,
        }
    }
}

/// Number of elements of an array with bounds `bounds`, exact (no
/// overflow whatever the bounds), saturated at `u128::MAX`.
pub fn elements_of(bounds: &[(i64, i64)]) -> u128 {
    bounds
        .iter()
        .map(|&(lo, hi)| extent(lo, hi))
        .fold(1u128, u128::saturating_mul)
}

/// Number of elements of `lo:hi` (0 when `hi < lo`), exact.
pub fn extent(lo: i64, hi: i64) -> u128 {
    if hi < lo {
        0
    } else {
        (hi as i128 - lo as i128 + 1) as u128
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_counts_never_overflow() {
        assert_eq!(extent(1, 0), 0);
        assert_eq!(extent(i64::MIN, i64::MAX), 1u128 << 64);
        assert_eq!(elements_of(&[(1, 3), (0, 1)]), 6);
        assert_eq!(elements_of(&[]), 1);
        assert_eq!(
            elements_of(&[(i64::MIN, i64::MAX), (i64::MIN, i64::MAX), (1, 2)]),
            u128::MAX
        );
    }
}
