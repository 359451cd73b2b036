//! Anytime search for graphs beyond the exact searches' reach: iterated
//! descent over elimination sequences.
//!
//! Greedy descent ([`crate::search::descend`]) stops in the first state no
//! single move improves. Iterated descent escapes such states by
//! perturbing the sequence that reached them and descending again, and
//! keeps the new sequence when it costs no more (so it also drifts across
//! plateaus). A perturbation picks a position of the sequence at random
//! and, from the state there, either leaves that move out, puts a random
//! move before it (the rest is replayed where still possible), or makes
//! one or two random moves and lets descent redo the rest.
//!
//! The current sequence stays applied with a mark before each move, so a
//! perturbation takes back only the moves after its position, and the
//! working graph's cached measures of everything those moves did not
//! touch stay valid for the next descent. The budget counts work (moves
//! measured and moves applied), never time, and every random choice comes
//! from the seeded generator: the result depends on the graph and the
//! seed only. It starts from the best sequence found before it, so it is
//! never worse.

use crate::chain::Rng;
use crate::search::{descend_marked, moves, Moves};
use crate::work::{Mark, Move, Work};

/// The sequence currently applied, with the mark before each move.
struct Path {
    moves: Vec<Move>,
    marks: Vec<Mark>,
    /// Moves applied so far (the work counted against the budget).
    applied: u64,
}

impl Path {
    fn push(&mut self, work: &mut Work, m: Move) {
        self.marks.push(work.mark());
        work.apply(m);
        self.moves.push(m);
        self.applied += 1;
    }

    /// Takes back every move from position `p` on.
    fn truncate(&mut self, work: &mut Work, p: usize) {
        if p < self.moves.len() {
            work.undo_to(self.marks[p]);
            self.moves.truncate(p);
            self.marks.truncate(p);
        }
    }

    /// Applies the moves of `seq` that are possible, in order.
    fn replay_valid(&mut self, work: &mut Work, seq: &[Move]) {
        for &m in seq {
            if work.can(m) {
                self.push(work, m);
            }
        }
    }

    /// A random possible move, applied; `false` when there is none.
    fn random_move(
        &mut self,
        work: &mut Work,
        kinds: Moves,
        rng: &mut Rng,
        all: &mut Vec<Move>,
    ) -> bool {
        moves(work, kinds, all);
        if all.is_empty() {
            return false;
        }
        let m = all[(rng.next() % all.len() as u64) as usize];
        self.push(work, m);
        true
    }
}

/// One perturbation of the sequence at position `p` (the moves from `p`
/// on, taken back, are `tail`).
fn perturb(
    path: &mut Path,
    work: &mut Work,
    tail: &[Move],
    kinds: Moves,
    rng: &mut Rng,
    all: &mut Vec<Move>,
) {
    match rng.next() % 3 {
        0 if !tail.is_empty() => path.replay_valid(work, &tail[1..]),
        1 => {
            path.random_move(work, kinds, rng, all);
            path.replay_valid(work, tail);
        }
        _ => {
            for _ in 0..1 + rng.next() % 2 {
                if !path.random_move(work, kinds, rng, all) {
                    break;
                }
            }
        }
    }
}

/// Iterated descent from `start` (a sequence from the current state of
/// `work`, which is restored on return) until `budget` units of work are
/// spent. Returns the best sequence found among the states `keep`
/// accepts and its cost if it beats `incumbent`, and the work spent.
pub(crate) fn iterated(
    work: &mut Work,
    start: &[Move],
    incumbent: i64,
    kinds: Moves,
    budget: u64,
    seed: u64,
    keep: impl Fn(&Work) -> bool,
) -> (Option<(Vec<Move>, i64)>, u64) {
    let base = work.mark();
    let probes_before = work.probes;
    let mut rng = Rng::new(seed);
    let mut path = Path {
        moves: Vec::new(),
        marks: Vec::new(),
        applied: 0,
    };
    path.replay_valid(work, start);
    let mut current = work.cost().unwrap_or(i64::MAX);
    let mut best: Option<(Vec<Move>, i64)> = None;
    let mut best_cost = incumbent.min(current);
    let (mut all, mut tail) = (Vec::new(), Vec::new());
    let mut spent = 0;
    while spent < budget {
        let p = (rng.next() % (path.moves.len() as u64 + 1)) as usize;
        tail.clear();
        tail.extend_from_slice(&path.moves[p..]);
        path.truncate(work, p);
        perturb(&mut path, work, &tail, kinds, &mut rng, &mut all);
        let more = descend_marked(work, kinds, false, DESCENT, &mut path.marks);
        path.applied += more.len() as u64;
        path.moves.extend(more);
        let cost = work.cost().unwrap_or(i64::MAX);
        if cost < best_cost && keep(work) {
            best_cost = cost;
            best = Some((path.moves.clone(), cost));
        }
        if cost <= current {
            current = cost;
        } else {
            // Back to the sequence before the perturbation.
            path.truncate(work, p);
            path.replay_valid(work, &tail);
        }
        spent = work.probes - probes_before + path.applied;
    }
    work.undo_to(base);
    (best, spent)
}

/// Moves of one descent at most.
const DESCENT: usize = 4096;
