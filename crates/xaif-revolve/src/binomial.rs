//! The binomial numbers of checkpointing.
//!
//! With `s` snapshots and at most `r` executions of every step (its
//! *repetition number*), at most `β(s, r) = C(s + r, s)` steps can be
//! reversed; the least `r` with `β(s, r) ≥ l` gives the minimal number of
//! forward steps `t(l, s) = r·l − β(s + 1, r − 1)` (Griewank and Walther,
//! ACM TOMS 26(1), 2000). Here the snapshot that holds the loop's entry
//! state counts among the `s`, and the forward steps are the steps run
//! without taping (each step is also taped once, to be reversed).
//!
//! Every quantity is computed incrementally, each binomial number from the
//! previous one, and only while it stays below the step count, so nothing
//! overflows for any step count that fits in a `u64`.

/// `β(s, r) = C(s + r, s)`, saturating at `u64::MAX`.
pub fn binomial(s: u64, r: u64) -> u64 {
    let mut b: u128 = 1;
    for k in 1..=r.min(s) {
        // C(n, k) from C(n, k-1) with n = s + r and k the smaller side.
        let n = (s as u128) + (r as u128);
        b = b * (n - k as u128 + 1) / k as u128;
        if b > u64::MAX as u128 {
            return u64::MAX;
        }
    }
    b as u64
}

/// The repetition number: the least `r` with `β(s, r) ≥ steps`
/// (0 for at most one step). `s` must be at least 1. Found by bisection
/// (`β(s, r)` grows with `r`, and `β(s, steps − 1) ≥ steps`), so that even
/// a single snapshot (`r = steps − 1`) costs no more than a few hundred
/// multiplications.
pub fn repetitions(steps: u64, s: u64) -> u64 {
    let s = s.max(1);
    if steps <= 1 {
        return 0;
    }
    let (mut lo, mut hi) = (0u64, steps - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if binomial(s, mid) >= steps {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// `t(l, s)`: the fewest steps a reversal of `l` steps with `s` snapshots
/// (the entry state's included) runs without taping. No step is
/// recomputed when `s ≥ l − 1`: then `t = l − 1`, the first forward sweep.
pub fn min_forward_steps(steps: u64, s: u64) -> u64 {
    if steps <= 1 {
        return 0;
    }
    let s = s.max(1);
    let r = repetitions(steps, s);
    // r·l − β(s + 1, r − 1), exact in u128 (β(s + 1, r − 1) ≤ r·l).
    let total = r as u128 * steps as u128 - binomial(s + 1, r - 1) as u128;
    u64::try_from(total).unwrap_or(u64::MAX)
}

/// Where to place the next snapshot: `l ≥ 2` steps lie between the
/// current state (held in a snapshot) and the end of the part still to be
/// reversed, and `a ≥ 2` snapshots are available for them, that one
/// included. Returns the number of steps to advance, `m` in `1..l`.
///
/// Reversing the `l − m` steps after the new snapshot with `a − 1`
/// snapshots, then the `m` steps before it with `a`, takes
/// `m + t(l − m, a − 1) + t(m, a)` forward steps, which is `t(l, a)` when
/// `m ≤ β(a, r − 1)` and `l − m ≤ β(a − 1, r)` (so that each part keeps
/// within its repetition number) and `m ≥ β(a, r − 2)`,
/// `l − m ≥ β(a − 1, r − 1)`: `t(·, s)` is linear with slope `r` on
/// `[β(s, r − 1), β(s, r)]` and `β(a + 1, r − 1) = β(a + 1, r − 2) +
/// β(a, r − 1)`. The largest such `m` is taken.
pub fn next_snapshot(l: u64, a: u64) -> u64 {
    debug_assert!(l >= 2 && a >= 2);
    let r = repetitions(l, a);
    let m = binomial(a, r - 1).min(l - binomial(a - 1, r - 1));
    m.clamp(1, l - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomials_are_pascals_triangle() {
        for s in 0..20u64 {
            for r in 0..20u64 {
                let expected = if s == 0 || r == 0 {
                    1
                } else {
                    binomial(s - 1, r) + binomial(s, r - 1)
                };
                assert_eq!(binomial(s, r), expected, "β({s}, {r})");
            }
        }
        assert_eq!(binomial(1000, 1000), u64::MAX);
    }

    #[test]
    fn the_repetition_number_is_the_least_that_covers_the_steps() {
        for s in 1..12u64 {
            for l in 1..500u64 {
                let r = repetitions(l, s);
                assert!(binomial(s, r) >= l);
                assert!(r == 0 || binomial(s, r - 1) < l, "l={l} s={s} r={r}");
            }
        }
    }

    #[test]
    fn huge_step_counts_do_not_overflow() {
        let l = u64::MAX / 2;
        assert!(min_forward_steps(l, 1_000) > l);
        assert_eq!(min_forward_steps(l, u64::MAX), l - 1);
        assert_eq!(repetitions(l, 1), l - 1);
        assert_eq!(min_forward_steps(l, 1), u64::MAX);
        // One snapshot: every step recomputed from the entry state.
        assert_eq!(min_forward_steps(1_000, 1), 999 * 1000 / 2);
    }
}
