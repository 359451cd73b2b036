//! Online checkpointing: the schedule of a loop whose trip count is known
//! only when it ends (a while loop, a loop left by an exit).
//!
//! The loop runs itself in the taping sweep: before each iteration the
//! schedule says whether to store the state, and which snapshots to drop,
//! so that whenever the loop ends, its iterations can be reversed with at
//! most `s` snapshots and no iteration runs untaped more often than
//! `r(l + 1, s)` times (the least `r` with `C(s + r, s) > l`), the
//! forward sweep's run included. That is the repetition number `r(l, s)`
//! of the best offline schedule, except when `l = C(s + r, s)` exactly,
//! where a loop whose end is seen only after its last iteration needs one
//! more: offline, the last iteration is taped in the first sweep, while
//! here it has run untaped by the time the loop's test fails, so the
//! first sweep reverses one iteration fewer (`docs/checkpointing.md`).
//!
//! # The placement
//!
//! When the loop ends after `l` iterations holding snapshots at positions
//! `p_0 = 0 < p_1 < … < p_m`, stretch `i` (from `p_i` to `p_{i+1}`, the
//! last to `l`) is reversed last to first by a binomial schedule from its
//! snapshot with the `s − i` snapshots left to it; its iterations run at
//! most `1 + r(L_i, s − i)` times untaped. With `R = r(l + 1, s)`, the
//! configuration is *valid* when every stretch has `L_i ≤ C(s − i + R − 1,
//! s − i)`; `Σ_{i<s} C(s − i + R − 1, s − i) = C(s + R, s) − 1 ≥ l`, so
//! valid configurations exist for every `l`.
//!
//! A recursive rule keeps one at every moment. With `a` snapshots for the
//! part after its origin `o` (`a = s` and `o = 0` for the loop), phase `R`
//! of that part begins at `o + C(a + R − 1, a)`: the state there is
//! stored, every snapshot strictly between `o` and it becomes dispensable,
//! and the part after it is the same problem with `a − 1` snapshots. Then
//! the stretch from `o` is at most `C(a + R − 1, a)` iterations long, which
//! stretch index `s − a` allows at level `R`, and the rest, shorter than
//! `C(a + R, a) − C(a + R − 1, a) = C(a − 1 + R, a − 1)`, is valid for the
//! sub-problem at a level of at most `R`; by induction the whole stays
//! valid, with at most `s` essential snapshots. Dispensable snapshots are
//! kept while a slot is free and the configuration stays valid (they only
//! shorten the recomputation); the newest one goes first when a slot is
//! needed or a stretch grows too long.
//!
//! This keeps, like the dynamic checkpointing of Wang, Moin and Iaccarino
//! (SIAM J. Sci. Comput. 31(4), 2009), the least repetition number at every
//! iteration; the total of untaped iterations stays within a few percent of
//! the offline minimum `t(l, s)` for long loops (`docs/checkpointing.md`
//! has the measured table). Every decision costs `O(1)` binomial numbers
//! but for the drops, and memory for the snapshot positions only.

use crate::binomial::binomial;
use crate::revolve::Binomial;
use crate::schedule::{Action, Drops, LoopSchedule, Report};

#[derive(Clone, Copy, Debug)]
struct Held {
    at: u64,
    /// Needed by the recursive rule; the others may go.
    essential: bool,
}

/// One part of the recursive rule: the iterations after `origin`, with
/// `snaps` snapshots (the one at `origin` included), in phase `phase`,
/// whose next phase begins at `next`.
#[derive(Clone, Copy, Debug)]
struct Part {
    origin: u64,
    snaps: u64,
    phase: u64,
    next: u64,
}

#[derive(Clone, Debug)]
enum Phase {
    /// The loop runs itself.
    Forward,
    /// The stretch from snapshot `segment` is being reversed by `inner`.
    Reversing {
        segment: usize,
        inner: Box<Binomial>,
    },
    /// Every iteration is reversed.
    Finished,
}

/// The online schedule of one loop instance.
#[derive(Clone, Debug)]
pub struct Online {
    s: u64,
    held: Vec<Held>,
    parts: Vec<Part>,
    /// Iterations begun.
    started: u64,
    /// `r(started + 1, s)`: the repetition number the configuration keeps.
    bound: u64,
    phase: Phase,
    /// Untaped iterations of the forward sweep and of finished stretches.
    forward: u64,
    peak: usize,
}

impl Online {
    /// The schedule of a loop holding at most `snapshots` (≥ 1) states.
    pub fn new(snapshots: u64) -> Self {
        Online {
            s: snapshots.max(1),
            held: Vec::new(),
            parts: Vec::new(),
            started: 0,
            bound: 0,
            phase: Phase::Forward,
            forward: 0,
            peak: 0,
        }
    }

    /// The positions of the snapshots held (while the loop runs itself:
    /// those its reversal would start from if it ended now).
    pub fn positions(&self) -> Vec<u64> {
        self.held.iter().map(|h| h.at).collect()
    }

    /// The repetition number the current configuration keeps: `r(l + 1,
    /// s)` for the `l` iterations begun.
    pub fn bound(&self) -> u64 {
        self.bound
    }

    /// Whether stretch `i` (from snapshot `i`) is short enough for the
    /// bound with `l` iterations.
    fn valid(&self, i: usize, l: u64) -> bool {
        let end = self.held.get(i + 1).map(|h| h.at).unwrap_or(l);
        let len = end - self.held[i].at;
        len <= 1 || len <= binomial(self.s - i as u64, self.bound - 1)
    }

    /// Drops the newest dispensable snapshot; false when there is none.
    fn drop_dispensable(&mut self, drops: &mut Drops) -> Option<usize> {
        let d = self.held.iter().rposition(|h| !h.essential)?;
        let depth = self.held.len() - 1 - d;
        self.held.remove(d);
        drops.push(depth);
        Some(d)
    }

    /// Drops dispensable snapshots until every stretch is valid with `l`
    /// iterations; `suspects` are the starts of the stretches that may not
    /// be (the others only became more valid).
    fn repair(&mut self, l: u64, mut suspects: Vec<u64>, drops: &mut Drops) {
        while let Some(at) = suspects.pop() {
            let Ok(i) = self.held.binary_search_by_key(&at, |h| h.at) else {
                continue;
            };
            if self.valid(i, l) {
                continue;
            }
            // The recursive rule's snapshots alone are valid, so a
            // dispensable one exists while a stretch is not.
            let Some(d) = self.drop_dispensable(drops) else {
                debug_assert!(false, "no dispensable snapshot with an invalid stretch");
                return;
            };
            suspects.push(at);
            suspects.push(self.held[d - 1].at);
        }
    }

    /// The rule's phase beginning at iteration `k`, if any: the state
    /// there is stored.
    fn phase_begins(&mut self, k: u64) -> bool {
        let Some(d) = self.parts.iter().position(|p| p.snaps >= 2 && p.next == k) else {
            return false;
        };
        let part = self.parts[d];
        for h in &mut self.held {
            if part.origin < h.at && h.at < k {
                h.essential = false;
            }
        }
        let phase = part.phase + 1;
        self.parts[d].phase = phase;
        self.parts[d].next = part.origin.saturating_add(binomial(part.snaps, phase - 1));
        self.parts.truncate(d + 1);
        self.parts.push(Part {
            origin: k,
            snaps: part.snaps - 1,
            phase: 1,
            next: k + 1,
        });
        true
    }

    /// The stretch from snapshot `segment` to `end`, reversed from its
    /// snapshot with the snapshots left to it.
    fn stretch(&self, segment: usize, end: u64) -> Box<Binomial> {
        let at = self.held[segment].at;
        Box::new(Binomial::from_snapshot(
            at,
            end - at,
            self.s - segment as u64,
        ))
    }
}

impl LoopSchedule for Online {
    fn kind(&self) -> &'static str {
        "online"
    }

    fn runs_itself(&self) -> bool {
        true
    }

    fn iteration(&mut self, drops: &mut Drops) -> bool {
        let k = self.started;
        self.started += 1;
        self.forward += 1;
        let l = k + 1;
        while binomial(self.s, self.bound) <= l {
            self.bound += 1;
        }
        let mut suspects = Vec::new();
        let store = if k == 0 {
            self.parts.push(Part {
                origin: 0,
                snaps: self.s,
                phase: 1,
                next: 1,
            });
            true
        } else {
            self.phase_begins(k)
        };
        if store {
            if self.held.len() as u64 == self.s {
                if let Some(d) = self.drop_dispensable(drops) {
                    suspects.push(self.held[d - 1].at);
                }
            }
            self.held.push(Held {
                at: k,
                essential: true,
            });
        }
        if let Some(last) = self.held.last() {
            suspects.push(last.at);
        }
        self.repair(l, suspects, drops);
        self.peak = self.peak.max(self.held.len());
        store
    }

    fn ended(&mut self, _by_exit: bool, _drops: &mut Drops) {}

    fn next_action(&mut self, drops: &mut Drops) -> Action {
        loop {
            match &mut self.phase {
                Phase::Finished => return Action::Done,
                Phase::Forward => {
                    if self.held.is_empty() {
                        self.phase = Phase::Finished;
                        return Action::Done;
                    }
                    let segment = self.held.len() - 1;
                    let inner = self.stretch(segment, self.started);
                    self.phase = Phase::Reversing { segment, inner };
                }
                Phase::Reversing { segment, inner } => {
                    let a = inner.next_action_into(drops);
                    let segment = *segment;
                    let total = segment + inner.held();
                    self.peak = self.peak.max(total);
                    if a != Action::Done {
                        return a;
                    }
                    // The stretch's own snapshot went with its last step.
                    self.forward += inner.forward_steps();
                    let start = self.held[segment].at;
                    self.held.pop();
                    if segment == 0 {
                        self.phase = Phase::Finished;
                        return Action::Done;
                    }
                    let inner = self.stretch(segment - 1, start);
                    self.phase = Phase::Reversing {
                        segment: segment - 1,
                        inner,
                    };
                }
            }
        }
    }

    fn held(&self) -> usize {
        match &self.phase {
            Phase::Reversing { segment, inner, .. } => segment + inner.held(),
            _ => self.held.len(),
        }
    }

    fn report(&self) -> Report {
        let inner = match &self.phase {
            Phase::Reversing { inner, .. } => inner.forward_steps(),
            _ => 0,
        };
        Report {
            steps: self.started,
            forward_steps: self.forward + inner,
            peak_held: self.peak,
            ..Report::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binomial::repetitions;

    /// The repetition number of a reversal from `positions` after `l`
    /// iterations: each stretch reversed by the binomial schedule with the
    /// snapshots left to it, every iteration once more for the forward
    /// sweep.
    fn repetitions_from(positions: &[u64], l: u64, s: u64) -> u64 {
        (0..positions.len())
            .map(|i| {
                let end = positions.get(i + 1).copied().unwrap_or(l);
                1 + repetitions(end - positions[i], s - i as u64)
            })
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn every_moment_keeps_the_least_repetition_number() {
        // For every l up to 10^4 and s up to 20: at most s snapshots, and
        // the reversal from them repeats no iteration more than r(l, s)
        // times, or r(l, s) + 1 exactly when l = C(s + r, s).
        for s in 1..=20u64 {
            let mut o = Online::new(s);
            let mut drops = Drops::new();
            for l in 1..=10_000u64 {
                o.iteration(&mut drops);
                let p = o.positions();
                assert!(p.len() as u64 <= s, "l={l} s={s}: {} held", p.len());
                assert_eq!(p[0], 0);
                let got = repetitions_from(&p, l, s);
                let r = repetitions(l, s);
                let exact = binomial(s, r) == l;
                let allowed = if exact { r + 1 } else { r };
                assert!(got <= allowed, "l={l} s={s}: {got} repetitions, r = {r}");
                assert_eq!(got, repetitions(l + 1, s).max(1), "l={l} s={s}");
            }
        }
    }
}
