//! The reference's heuristic chains, run on the search's working graph.
//!
//! [`crate::strategy::run`] runs a strategy on an [`crate::ElimGraph`] and
//! builds every expression on the way. The optimizer needs only the
//! sequence and what it costs, for all configured strategies, so it runs
//! them here with the same candidates, the same measures, the same filters
//! and the same tie breaking (forward and reverse keys are unique), and
//! therefore the same sequences; the winner is replayed once with
//! expressions.
//!
//! The randomized variant (`-a`) keeps the scarcity filter but picks among
//! the surviving candidates at random, favouring low Markowitz degrees,
//! from a seeded generator, so a fixed seed gives a fixed sequence.

use crate::heuristics::{Chain, Filter, Mode};
use crate::strategy::{Extent, Method, Strategy};
use crate::work::{Move, Work};

/// A small deterministic generator (SplitMix64): the search's only source
/// of randomness, so a seed fixes every result.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x853c_49e6_748f_ea9b)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((self.next() >> 11) as u128 * n as u128 >> 53) as usize
    }
}

/// What one chain run produced.
#[derive(Clone, Debug)]
pub(crate) struct ChainRun {
    /// Every move of the run, in order.
    pub moves: Vec<Move>,
    /// How many of them the strategy keeps (the scarcity rule's prefix, or
    /// all of a total run).
    pub kept: usize,
    /// `(non-trivial edges, multiplications, additions)` of the kept
    /// prefix, for the reference metric.
    pub key: (i64, u32, u32),
}

/// Upper bound on the moves of one run (safety net, as
/// [`crate::STEP_LIMIT`]).
const MOVE_LIMIT: usize = 1_000_000;

struct Marks {
    stamp: u32,
    preds: Vec<u32>,
    succs: Vec<u32>,
}

/// Runs a strategy (vertex or edge method) from the current state of
/// `work` and returns to it. With `random`, the chain's filters are
/// replaced by a seeded random choice.
pub(crate) fn run_chain(
    work: &mut Work,
    strategy: &Strategy,
    random: Option<&mut Rng>,
) -> Option<ChainRun> {
    if strategy.method == Method::Face {
        return None;
    }
    let start = work.mark();
    let mut run = ChainRun {
        moves: Vec::new(),
        kept: 0,
        key: (work.nontrivial(), work.mults, work.adds),
    };
    let mut best_scarcity = work.nontrivial();
    let mut marks = Marks {
        stamp: 0,
        preds: vec![0; work.len()],
        succs: vec![0; work.len()],
    };
    let mut have_previous = false;
    let mut candidates: Vec<Move> = Vec::new();
    let mut measures: Vec<i64> = Vec::new();
    let mut random = random;
    for _ in 0..MOVE_LIMIT {
        candidates.clear();
        match strategy.method {
            Method::Vertex => {
                for v in 0..work.len() as u32 {
                    if work.is_present(v) && work.kind(v) == crate::VertexKind::Intermediate {
                        candidates.push(Move::Vertex(v));
                    }
                }
            }
            _ => work.edge_moves(&mut candidates),
        }
        if candidates.is_empty() {
            break;
        }
        if let Extent::ScarcityPreserving { allow_maintaining } = strategy.extent {
            scarcity_filter(work, &mut candidates, &mut measures, allow_maintaining);
        }
        let chosen = match random.as_deref_mut() {
            Some(rng) => random_choice(work, &candidates, rng),
            None => choose(
                work,
                &strategy.chain,
                &mut candidates,
                &mut measures,
                have_previous.then_some(&marks),
            ),
        };
        // The neighbourhood of the chosen move, before performing it.
        marks.stamp += 1;
        let s = marks.stamp;
        match chosen {
            Move::Vertex(j) => {
                for &(i, _) in work.preds(j) {
                    marks.preds[i as usize] = s;
                }
                for &(k, _) in work.succs(j) {
                    marks.succs[k as usize] = s;
                }
            }
            Move::Front(i, j) => {
                marks.preds[i as usize] = s;
                for &(k, _) in work.succs(j) {
                    marks.succs[k as usize] = s;
                }
            }
            Move::Back(j, k) => {
                for &(i, _) in work.preds(j) {
                    marks.preds[i as usize] = s;
                }
                marks.succs[k as usize] = s;
            }
        }
        have_previous = true;
        work.apply(chosen);
        run.moves.push(chosen);
        if let Extent::ScarcityPreserving { .. } = strategy.extent {
            let count = work.nontrivial();
            if count < best_scarcity {
                best_scarcity = count;
                run.kept = run.moves.len();
                run.key = (count, work.mults, work.adds);
            }
        }
    }
    if strategy.extent == Extent::Total {
        run.kept = run.moves.len();
        run.key = (work.nontrivial(), work.mults, work.adds);
    }
    work.undo_to(start);
    Some(run)
}

fn scarcity_filter(
    work: &Work,
    candidates: &mut Vec<Move>,
    deltas: &mut Vec<i64>,
    allow_maintaining: bool,
) {
    deltas.clear();
    deltas.extend(candidates.iter().map(|&m| work.scarcity_delta(m)));
    let keep = |accept: &dyn Fn(i64) -> bool, candidates: &mut Vec<Move>| -> bool {
        if !deltas.iter().any(|&d| accept(d)) {
            return false;
        }
        let mut k = 0;
        candidates.retain(|_| {
            k += 1;
            accept(deltas[k - 1])
        });
        true
    };
    if keep(&|d| d < 0, candidates) {
        return;
    }
    if allow_maintaining {
        keep(&|d| d == 0, candidates);
    }
}

fn keep_min(candidates: &mut Vec<Move>, measures: &mut Vec<i64>, measure: impl Fn(Move) -> i64) {
    measures.clear();
    measures.extend(candidates.iter().map(|&m| measure(m)));
    let Some(&min) = measures.iter().min() else {
        return;
    };
    let mut k = 0;
    candidates.retain(|_| {
        k += 1;
        measures[k - 1] == min
    });
}

fn sibling_degree(work: &Work, m: Move, marks: &Marks) -> usize {
    let s = marks.stamp;
    let in_p = |v: u32| marks.preds[v as usize] == s;
    let in_s = |v: u32| marks.succs[v as usize] == s;
    let count_s = |list: &[(u32, crate::work::W)]| list.iter().filter(|e| in_s(e.0)).count();
    let count_p = |list: &[(u32, crate::work::W)]| list.iter().filter(|e| in_p(e.0)).count();
    match m {
        Move::Vertex(j) => {
            let p = count_p(work.preds(j));
            if p == 0 {
                return 0;
            }
            count_s(work.succs(j)) * p
        }
        Move::Front(i, j) => {
            if !in_p(i) {
                return 0;
            }
            count_s(work.succs(j))
        }
        Move::Back(j, k) => {
            if !in_s(k) {
                return 0;
            }
            count_p(work.preds(j))
        }
    }
}

fn key(m: Move) -> [u32; 3] {
    match m {
        Move::Vertex(j) => [j, 0, 0],
        Move::Front(i, j) => [j, 0, i],
        Move::Back(j, k) => [j, 1, k],
    }
}

fn choose(
    work: &Work,
    chain: &Chain,
    candidates: &mut Vec<Move>,
    measures: &mut Vec<i64>,
    previous: Option<&Marks>,
) -> Move {
    for filter in &chain.filters {
        match filter {
            Filter::LowestMarkowitz => keep_min(candidates, measures, |m| work.markowitz(m) as i64),
            Filter::LowestRelativeMarkowitz => {
                keep_min(candidates, measures, |m| work.relative_markowitz(m))
            }
            Filter::LowestFillIn => keep_min(candidates, measures, |m| work.fill_in(m) as i64),
            Filter::HighestSiblingDegree => {
                let Some(marks) = previous else { continue };
                measures.clear();
                measures.extend(
                    candidates
                        .iter()
                        .map(|&m| sibling_degree(work, m, marks) as i64),
                );
                let max = measures.iter().copied().max().unwrap_or(0);
                if max > 0 {
                    let mut k = 0;
                    candidates.retain(|_| {
                        k += 1;
                        measures[k - 1] == max
                    });
                }
            }
        }
    }
    match chain.mode {
        Mode::Forward => candidates.iter().copied().min_by_key(|&m| key(m)),
        Mode::Reverse => candidates.iter().copied().max_by_key(|&m| key(m)),
    }
    .expect("a non-empty candidate set")
}

fn random_choice(work: &Work, candidates: &[Move], rng: &mut Rng) -> Move {
    // Weight 1 / (1 + Markowitz degree), in integers.
    let weights: Vec<u64> = candidates
        .iter()
        .map(|&m| 720_720 / (1 + work.markowitz(m) as u64).min(720_720))
        .collect();
    let total: u64 = weights.iter().sum::<u64>().max(1);
    let mut pick = rng.next() % total;
    for (m, w) in candidates.iter().zip(&weights) {
        if pick < *w {
            return *m;
        }
        pick -= w;
    }
    candidates[candidates.len() - 1]
}
