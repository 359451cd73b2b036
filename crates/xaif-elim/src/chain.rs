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
    /// [`Work::cost_split`] after each prefix (entry `k`: after `k`
    /// moves), so that the prefix cheapest under a model is found without
    /// replaying.
    pub splits: Vec<Option<(i64, i64)>>,
}

/// Upper bound on the moves of one run (safety net, as
/// [`crate::STEP_LIMIT`]).
const MOVE_LIMIT: usize = 1_000_000;

/// The neighbourhood `(P_θ, S_θ)` of the previous elimination, as stamp
/// arrays (membership) and lists.
struct Marks {
    stamp: u32,
    preds: Vec<u32>,
    succs: Vec<u32>,
    pred_list: Vec<u32>,
    succ_list: Vec<u32>,
}

impl Marks {
    fn new(n: usize) -> Marks {
        Marks {
            stamp: 0,
            preds: vec![0; n],
            succs: vec![0; n],
            pred_list: Vec::new(),
            succ_list: Vec::new(),
        }
    }

    /// Records the neighbourhood of `m` in the current state.
    fn record(&mut self, work: &Work, m: Move) {
        self.stamp += 1;
        let s = self.stamp;
        self.pred_list.clear();
        self.succ_list.clear();
        type Adjacent<'a> = &'a [(u32, crate::work::W)];
        let (preds, succs): (Adjacent<'_>, Adjacent<'_>) = match m {
            Move::Vertex(j) => (work.preds(j), work.succs(j)),
            Move::Front(i, j) => {
                self.pred_list.push(i);
                (&[], work.succs(j))
            }
            Move::Back(j, k) => {
                self.succ_list.push(k);
                (work.preds(j), &[])
            }
            Move::Pre(..) | Move::Post(..) => (&[], &[]),
        };
        self.pred_list.extend(preds.iter().map(|e| e.0));
        self.succ_list.extend(succs.iter().map(|e| e.0));
        for &v in &self.pred_list {
            self.preds[v as usize] = s;
        }
        for &v in &self.succ_list {
            self.succs[v as usize] = s;
        }
    }
}

/// Runs a strategy (vertex or edge method) from the current state of
/// `work` and returns to it. With `random`, the chain's filters are
/// replaced by a seeded random choice.
pub(crate) fn run_chain(
    work: &mut Work,
    strategy: &Strategy,
    random: Option<&mut Rng>,
) -> Option<ChainRun> {
    run_chain_with(work, strategy, random, false)
}

/// [`run_chain`]; with `stop_when_flat`, a scarcity-preserving run stops
/// as soon as no candidate reduces (or, with `-m`, keeps) the number of
/// non-trivial edges.
pub(crate) fn run_chain_with(
    work: &mut Work,
    strategy: &Strategy,
    random: Option<&mut Rng>,
    stop_when_flat: bool,
) -> Option<ChainRun> {
    if strategy.method == Method::Face {
        return None;
    }
    if strategy.method == Method::Edge && random.is_none() {
        return Some(run_edge_chain(work, strategy, stop_when_flat));
    }
    run_plain(work, strategy, random, stop_when_flat)
}

/// The straightforward runner: every step measures every candidate. Used
/// for vertex strategies and randomized runs, and as the specification
/// the incremental edge runner is tested against.
pub(crate) fn run_plain(
    work: &mut Work,
    strategy: &Strategy,
    random: Option<&mut Rng>,
    stop_when_flat: bool,
) -> Option<ChainRun> {
    if strategy.method == Method::Face {
        return None;
    }
    let start = work.mark();
    let mut run = ChainRun {
        moves: Vec::new(),
        kept: 0,
        key: (work.nontrivial(), work.mults, work.adds),
        splits: vec![work.cost_split()],
    };
    let mut best_scarcity = work.nontrivial();
    let mut marks = Marks::new(work.len());
    let mut have_previous = false;
    let mut candidates: Vec<Move> = Vec::new();
    let mut deltas: Vec<i64> = Vec::new();
    let mut fills: Vec<i64> = Vec::new();
    let mut measures: Vec<i64> = Vec::new();
    let mut random = random;
    let need_fill = strategy.chain.filters.contains(&Filter::LowestFillIn);
    let scarcity = match strategy.extent {
        Extent::ScarcityPreserving { allow_maintaining } => Some(allow_maintaining),
        Extent::Total => None,
    };
    for _ in 0..MOVE_LIMIT {
        candidates.clear();
        deltas.clear();
        fills.clear();
        match strategy.method {
            Method::Vertex => {
                for v in 0..work.len() as u32 {
                    if work.is_present(v) && work.kind(v) == crate::VertexKind::Intermediate {
                        let m = Move::Vertex(v);
                        candidates.push(m);
                        if scarcity.is_some() {
                            deltas.push(work.scarcity_delta(m));
                        }
                        if need_fill {
                            fills.push(work.fill_in(m) as i64);
                        }
                    }
                }
            }
            _ => {
                for u in 0..work.len() as u32 {
                    if !work.is_present(u) {
                        continue;
                    }
                    let back_ok = work.kind(u) != crate::VertexKind::Independent;
                    for at in 0..work.succs(u).len() {
                        let w = work.succs(u)[at].0;
                        let front_ok = work.kind(w) == crate::VertexKind::Intermediate;
                        if scarcity.is_none() && !need_fill {
                            if front_ok {
                                candidates.push(Move::Front(u, w));
                            }
                            if back_ok {
                                candidates.push(Move::Back(u, w));
                            }
                            continue;
                        }
                        let (front, back, front_fill, back_fill) =
                            work.edge_cache(u, at, need_fill);
                        if front_ok {
                            candidates.push(Move::Front(u, w));
                            deltas.push(i64::from(front));
                            if need_fill {
                                fills.push(i64::from(front_fill));
                            }
                        }
                        if back_ok {
                            candidates.push(Move::Back(u, w));
                            deltas.push(i64::from(back));
                            if need_fill {
                                fills.push(i64::from(back_fill));
                            }
                        }
                    }
                }
            }
        }
        if candidates.is_empty() {
            break;
        }
        if let Some(allow_maintaining) = scarcity {
            let narrowed = scarcity_filter(
                &mut candidates,
                &mut deltas,
                &mut fills,
                need_fill,
                allow_maintaining,
            );
            if stop_when_flat && !narrowed {
                break;
            }
        }
        let chosen = match random.as_deref_mut() {
            Some(rng) => random_choice(work, &candidates, rng),
            None => match choose(
                work,
                &strategy.chain,
                &mut candidates,
                &mut fills,
                &mut measures,
                have_previous.then_some(&marks),
            ) {
                Some(m) => m,
                None => break,
            },
        };
        // The neighbourhood of the chosen move, before performing it.
        marks.record(work, chosen);
        have_previous = true;
        work.apply(chosen);
        run.moves.push(chosen);
        run.splits.push(work.cost_split());
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

/// Keeps the reducing candidates, else (with `allow_maintaining`) the
/// maintaining ones, else all; says whether it kept reducing or
/// maintaining ones. `fills` (when used) is filtered alongside.
fn scarcity_filter(
    candidates: &mut Vec<Move>,
    deltas: &mut [i64],
    fills: &mut Vec<i64>,
    use_fills: bool,
    allow_maintaining: bool,
) -> bool {
    let keep =
        |accept: &dyn Fn(i64) -> bool, candidates: &mut Vec<Move>, fills: &mut Vec<i64>| -> bool {
            if !deltas.iter().any(|&d| accept(d)) {
                return false;
            }
            let mut k = 0;
            candidates.retain(|_| {
                k += 1;
                accept(deltas[k - 1])
            });
            if use_fills {
                let mut k = 0;
                fills.retain(|_| {
                    k += 1;
                    accept(deltas[k - 1])
                });
            }
            true
        };
    if keep(&|d| d < 0, candidates, fills) {
        return true;
    }
    allow_maintaining && keep(&|d| d == 0, candidates, fills)
}

fn keep_min(candidates: &mut Vec<Move>, measures: &mut Vec<i64>, measure: impl Fn(Move) -> i64) {
    measures.clear();
    measures.extend(candidates.iter().map(|&m| measure(m)));
    retain_min(candidates, measures);
}

/// Keeps the candidates whose measure is the minimum.
fn retain_min(candidates: &mut Vec<Move>, measures: &[i64]) {
    let Some(&min) = measures.iter().min() else {
        return;
    };
    let mut k = 0;
    candidates.retain(|_| {
        k += 1;
        measures[k - 1] == min
    });
}

/// [`keep_min`], filtering `fills` alongside when it is still in use.
fn keep_min_with(
    candidates: &mut Vec<Move>,
    fills: &mut Vec<i64>,
    fills_valid: bool,
    measures: &mut Vec<i64>,
    measure: impl Fn(Move) -> i64,
) {
    measures.clear();
    measures.extend(candidates.iter().map(|&m| measure(m)));
    if fills_valid {
        if let Some(&min) = measures.iter().min() {
            let mut k = 0;
            fills.retain(|_| {
                k += 1;
                measures[k - 1] == min
            });
        }
    }
    retain_min(candidates, measures);
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
        Move::Pre(..) | Move::Post(..) => 0,
    }
}

fn key(m: Move) -> [u32; 3] {
    match m {
        Move::Vertex(j) => [j, 0, 0],
        Move::Front(i, j) => [j, 0, i],
        Move::Back(j, k) => [j, 1, k],
        Move::Pre(i, k, j) | Move::Post(i, k, j) => [k, 2, i.max(j)],
    }
}

fn choose(
    work: &Work,
    chain: &Chain,
    candidates: &mut Vec<Move>,
    fills: &mut Vec<i64>,
    measures: &mut Vec<i64>,
    previous: Option<&Marks>,
) -> Option<Move> {
    // `fills` is kept parallel to `candidates` until the fill-in filter
    // has run (it is only computed when the chain has that filter).
    let mut fills_valid = chain.filters.contains(&Filter::LowestFillIn);
    for filter in &chain.filters {
        match filter {
            Filter::LowestMarkowitz => {
                keep_min_with(candidates, fills, fills_valid, measures, |m| {
                    work.markowitz(m) as i64
                })
            }
            Filter::LowestRelativeMarkowitz => {
                keep_min_with(candidates, fills, fills_valid, measures, |m| {
                    work.relative_markowitz(m)
                })
            }
            Filter::LowestFillIn => {
                if fills_valid && fills.len() == candidates.len() {
                    measures.clear();
                    measures.extend(fills.iter().copied());
                    retain_min(candidates, measures);
                } else {
                    keep_min(candidates, measures, |m| work.fill_in(m) as i64);
                }
                fills_valid = false;
            }
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
                    if fills_valid {
                        let mut k = 0;
                        fills.retain(|_| {
                            k += 1;
                            measures[k - 1] == max
                        });
                    }
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

/// Graphs with at least this many edges run their strategies on two
/// threads (below it, starting threads costs more than it saves).
const PARALLEL_EDGES: usize = 64;

/// Fewer strategies than this run on one thread: with two (the tangent
/// search's baseline on large graphs) the second thread, its copy of the
/// graph and its allocator arena cost more CPU than they save in wall
/// time (measured on the corpus's largest graphs).
const PARALLEL_STRATEGIES: usize = 3;

/// Runs every strategy from the current state of `work` (restored), on
/// two threads for large graphs with at least [`PARALLEL_STRATEGIES`]
/// strategies; results in strategy order, so the outcome does not depend
/// on scheduling.
pub(crate) fn run_all(
    work: &mut Work,
    strategies: &[Strategy],
    stop_when_flat: bool,
) -> Vec<Option<ChainRun>> {
    let threads = if work.edge_count() < PARALLEL_EDGES || strategies.len() < PARALLEL_STRATEGIES {
        1
    } else {
        parallelism().min(2).min(strategies.len())
    };
    if threads < 2 {
        return strategies
            .iter()
            .map(|s| run_chain_with(work, s, None, stop_when_flat))
            .collect();
    }
    // This thread and one more take the next strategy not yet taken until
    // none is left (chains differ much in length); every run starts from
    // the same state and depends on nothing else, so the results, kept in
    // strategy order, do not depend on which thread ran what.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let take = || next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut results: Vec<Option<ChainRun>> = (0..strategies.len()).map(|_| None).collect();
    let mut other = work.clone();
    std::thread::scope(|scope| {
        let handle = scope.spawn(|| {
            let mut done = Vec::new();
            loop {
                let k = take();
                let Some(s) = strategies.get(k) else { break };
                done.push((k, run_chain_with(&mut other, s, None, stop_when_flat)));
            }
            done
        });
        loop {
            let k = take();
            let Some(s) = strategies.get(k) else { break };
            results[k] = run_chain_with(work, s, None, stop_when_flat);
        }
        if let Ok(done) = handle.join() {
            for (k, r) in done {
                results[k] = r;
            }
        }
    });
    results
}

thread_local! {
    /// Set while this thread's eliminations must stay on it (see
    /// [`one_thread_per_graph`]).
    static SOLO: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with every elimination it makes on the calling thread: the
/// chains of a large graph do not take a second thread. For callers that
/// already keep every core busy with graphs of their own (a thread
/// eliminating ahead of the transformation beside it), where a thread
/// per graph would only compete with them. Results do not change.
pub fn one_thread_per_graph<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            SOLO.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SOLO.with(|s| s.replace(true)));
    f()
}

/// The available parallelism, asked once per process (asking reads the
/// cgroup files, which costs more than eliminating a small graph); one
/// inside [`one_thread_per_graph`].
pub(crate) fn parallelism() -> usize {
    if SOLO.with(|s| s.get()) {
        return 1;
    }
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

/// Scarcity classes of an edge's two moves as counted bits.
fn classes(front: i32, back: i32, front_ok: bool, back_ok: bool) -> u8 {
    let mut bits = 0;
    if front_ok {
        bits |= match front {
            d if d < 0 => 1,
            0 => 2,
            _ => 0,
        };
    }
    if back_ok {
        bits |= match back {
            d if d < 0 => 4,
            0 => 8,
            _ => 0,
        };
    }
    bits
}

fn count_bits(bits: u8) -> (i64, i64) {
    (
        i64::from(bits & 1) + i64::from((bits >> 2) & 1),
        i64::from((bits >> 1) & 1) + i64::from((bits >> 3) & 1),
    )
}

/// The incremental runner of edge strategies: the scarcity classes of all
/// candidates are counted and updated only around what each elimination
/// changed, and when no candidate reduces (or keeps) the non-trivial edge
/// count the chain's filters run over whole vertex groups (every in-edge
/// of a vertex shares its front Markowitz degree, every out-edge its back
/// degree) instead of over every edge. It makes exactly the choices of
/// [`run_plain`].
pub(crate) fn run_edge_chain(
    work: &mut Work,
    strategy: &Strategy,
    stop_when_flat: bool,
) -> ChainRun {
    let start = work.mark();
    let mut state = EdgeRun::new(work, strategy);
    let mut run = ChainRun {
        moves: Vec::new(),
        kept: 0,
        key: (work.nontrivial(), work.mults, work.adds),
        splits: vec![work.cost_split()],
    };
    let mut best_scarcity = work.nontrivial();
    for _ in 0..MOVE_LIMIT {
        let class = state.scarcity_class();
        if stop_when_flat && state.scarcity.is_some() && class.is_none() {
            break;
        }
        let Some(chosen) = state.choose(work, &strategy.chain, class) else {
            break;
        };
        state.marks.record(work, chosen);
        state.have_previous = true;
        let mark = work.mark();
        work.apply(chosen);
        run.moves.push(chosen);
        run.splits.push(work.cost_split());
        if state.scarcity.is_some() {
            let count = work.nontrivial();
            if count < best_scarcity {
                best_scarcity = count;
                run.kept = run.moves.len();
                run.key = (count, work.mults, work.adds);
            }
        }
        state.update(work, mark);
    }
    if strategy.extent == Extent::Total {
        run.kept = run.moves.len();
        run.key = (work.nontrivial(), work.mults, work.adds);
    }
    work.undo_to(start);
    run
}

/// The incremental state of one [`run_edge_chain`].
struct EdgeRun {
    need_fill: bool,
    /// `Some(allow_maintaining)` for a scarcity-preserving strategy.
    scarcity: Option<bool>,
    /// Whether the scarcity classes are counted (scarcity or fill-in).
    incremental: bool,
    marks: Marks,
    have_previous: bool,
    counts: Counts,
    groups: Groups,
    /// Per vertex: the stamp of the last update that saw it changed, and
    /// which of its lists changed.
    seen: Vec<(u32, u32)>,
    stamp: u32,
    changed: Vec<u32>,
    candidates: Vec<Move>,
    fills: Vec<i64>,
    measures: Vec<i64>,
}

impl EdgeRun {
    /// The state before the first move: every edge's classes counted.
    fn new(work: &mut Work, strategy: &Strategy) -> EdgeRun {
        use crate::VertexKind::{Independent, Intermediate};
        let n = work.len();
        let need_fill = strategy.chain.filters.contains(&Filter::LowestFillIn);
        let scarcity = match strategy.extent {
            Extent::ScarcityPreserving { allow_maintaining } => Some(allow_maintaining),
            Extent::Total => None,
        };
        let incremental = scarcity.is_some() || need_fill;
        let mut counts = Counts::new(n);
        if incremental {
            for u in 0..n as u32 {
                if !work.is_present(u) {
                    continue;
                }
                let back_ok = work.kind(u) != Independent;
                for at in 0..work.succs(u).len() {
                    let w = work.succs(u)[at].0;
                    let (front, back) = work.refresh_edge(u, at, need_fill);
                    let bits = classes(front, back, work.kind(w) == Intermediate, back_ok);
                    work.cache_at(u, at).counted = bits;
                    counts.add(u, bits, 1);
                }
            }
        }
        EdgeRun {
            need_fill,
            scarcity,
            incremental,
            marks: Marks::new(n),
            have_previous: false,
            counts,
            groups: Groups::new(work, &strategy.chain),
            seen: vec![(0, 0); n],
            stamp: 0,
            changed: Vec::new(),
            candidates: Vec::new(),
            fills: Vec::new(),
            measures: Vec::new(),
        }
    }

    /// The scarcity class the next move is chosen from (as counted bits):
    /// reducing moves while there are any, then (with `-m`) keeping ones;
    /// `None` for all moves.
    fn scarcity_class(&self) -> Option<u8> {
        match self.scarcity {
            Some(_) if self.counts.total[0] > 0 => Some(1u8 | 4),
            Some(true) if self.counts.total[1] > 0 => Some(2u8 | 8),
            _ => None,
        }
    }

    /// The chain's choice among the moves of `class` (or all moves).
    fn choose(&mut self, work: &mut Work, chain: &Chain, class: Option<u8>) -> Option<Move> {
        let previous = self.have_previous.then_some(&self.marks);
        let Some(bits) = class else {
            return choose_all(
                work,
                chain,
                previous,
                self.need_fill,
                &self.groups,
                &mut self.candidates,
                &mut self.fills,
                &mut self.measures,
            );
        };
        self.candidates.clear();
        self.fills.clear();
        // Only the vertices with candidates of the class.
        let which = usize::from(bits & 1 == 0);
        for u in 0..work.len() as u32 {
            if self.counts.per_vertex[u as usize][which] == 0 {
                continue;
            }
            for at in 0..work.succs(u).len() {
                let w = work.succs(u)[at].0;
                let c = work.cache_ref(u, at);
                if c.counted & bits & 3 != 0 {
                    self.candidates.push(Move::Front(u, w));
                    self.fills.push(i64::from(c.front_fill));
                }
                if c.counted & bits & 12 != 0 {
                    self.candidates.push(Move::Back(u, w));
                    self.fills.push(i64::from(c.back_fill));
                }
            }
        }
        if !self.need_fill {
            self.fills.clear();
        }
        choose(
            work,
            chain,
            &mut self.candidates,
            &mut self.fills,
            &mut self.measures,
            previous,
        )
    }

    /// Brings the groups and the counted classes up to date with what the
    /// move made since `mark` changed.
    fn update(&mut self, work: &mut Work, mark: crate::work::Mark) {
        use crate::work::Entry;
        if !self.incremental {
            if self.groups.kind.is_some() {
                for e in work.changes_since(mark) {
                    match *e {
                        Entry::Linked(u, w)
                        | Entry::Changed(u, w, _)
                        | Entry::Unlinked(u, w, ..) => {
                            self.groups.update(work, u);
                            self.groups.update(work, w);
                        }
                        Entry::Removed(v) => self.groups.update(work, v),
                        Entry::ExprUse(_) => {}
                    }
                }
            }
            return;
        }
        self.note_changes(work, mark);
        self.refresh_changed(work);
    }

    /// Which vertices' lists changed since `mark` (in `changed`, with the
    /// lists in `seen`), uncounting the classes of the edges removed.
    fn note_changes(&mut self, work: &Work, mark: crate::work::Mark) {
        use crate::work::Entry;
        self.stamp += 1;
        self.changed.clear();
        let stamp = self.stamp;
        let (seen, changed, counts) = (&mut self.seen, &mut self.changed, &mut self.counts);
        let mut note = |v: u32, bit: u32| {
            let entry = &mut seen[v as usize];
            if entry.0 != stamp {
                *entry = (stamp, 0);
                changed.push(v);
            }
            entry.1 |= bit;
        };
        let mut removed = work.unlinked_since(mark).iter();
        for e in work.changes_since(mark) {
            match *e {
                Entry::Linked(u, w) | Entry::Changed(u, w, _) => {
                    note(u, OUT);
                    note(w, IN);
                }
                Entry::Unlinked(u, w, _) => {
                    if let Some(&slot) = removed.next() {
                        counts.add(u, work.slot_cache(slot).counted, -1);
                    }
                    note(u, OUT);
                    note(w, IN);
                }
                Entry::Removed(v) => note(v, OUT | IN),
                Entry::ExprUse(_) => {}
            }
        }
    }

    /// Measures again the moves of the edges around the changed vertices:
    /// front elimination of (u,w) reads the successors of u and w and the
    /// predecessors of w, back elimination the predecessors of u and w and
    /// the successors of u.
    fn refresh_changed(&mut self, work: &mut Work) {
        let epoch = work.epoch();
        for &v in &self.changed {
            self.groups.update(work, v);
            if !work.is_present(v) {
                continue;
            }
            let how = self.seen[v as usize].1;
            // Out-edges (v,x): both moves read v's successors; back reads
            // v's predecessors.
            let out_sides = if how & OUT != 0 { FRONT | BACK } else { BACK };
            for at in 0..work.succs(v).len() {
                refresh_counted(
                    work,
                    v,
                    at,
                    self.need_fill,
                    epoch,
                    out_sides,
                    &mut self.counts,
                );
            }
            // In-edges (y,v): front reads v's successors and predecessors,
            // back reads v's predecessors.
            let in_sides = if how & IN != 0 { FRONT | BACK } else { FRONT };
            for p in 0..work.preds(v).len() {
                let u = work.preds(v)[p].0;
                if let Some(at) = work.position(u, v) {
                    refresh_counted(
                        work,
                        u,
                        at,
                        self.need_fill,
                        epoch,
                        in_sides,
                        &mut self.counts,
                    );
                }
            }
        }
    }
}

/// Which of a vertex's lists changed.
const OUT: u32 = 1;
const IN: u32 = 2;
/// Which moves of an edge to measure again.
const FRONT: u32 = 1;
const BACK: u32 = 2;

#[allow(clippy::too_many_arguments)]
fn refresh_counted(
    work: &mut Work,
    u: u32,
    at: usize,
    fill: bool,
    epoch: u32,
    sides: u32,
    counts: &mut Counts,
) {
    let old = work.cache_ref(u, at);
    let front = sides & FRONT != 0 && old.stamp != epoch;
    let back = sides & BACK != 0 && old.back_stamp != epoch;
    if !front && !back {
        return;
    }
    counts.add(u, old.counted, -1);
    let w = work.succs(u)[at].0;
    let (front, back) = work.refresh_sides(u, at, fill, front, back);
    let bits = classes(
        front,
        back,
        work.kind(w) == crate::VertexKind::Intermediate,
        work.kind(u) != crate::VertexKind::Independent,
    );
    work.cache_at(u, at).counted = bits;
    counts.add(u, bits, 1);
}

/// How many candidate moves reduce and keep the non-trivial edge count,
/// in all and per source vertex of their edges.
struct Counts {
    total: [i64; 2],
    per_vertex: Vec<[i64; 2]>,
}

impl Counts {
    fn new(n: usize) -> Counts {
        Counts {
            total: [0; 2],
            per_vertex: vec![[0; 2]; n],
        }
    }

    /// Counts (`sign` 1) or uncounts (-1) the classes `bits` of an edge
    /// out of `u`.
    fn add(&mut self, u: u32, bits: u8, sign: i64) {
        let (r, k) = count_bits(bits);
        self.total[0] += sign * r;
        self.total[1] += sign * k;
        let v = &mut self.per_vertex[u as usize];
        v[0] += sign * r;
        v[1] += sign * k;
    }
}

/// The chain's choice among all edge moves (no scarcity narrowing), by
/// vertex groups where the filters allow, or `None` if there is no move.
#[allow(clippy::too_many_arguments)]
fn choose_all(
    work: &mut Work,
    chain: &Chain,
    previous: Option<&Marks>,
    need_fill: bool,
    groups: &Groups,
    candidates: &mut Vec<Move>,
    fills: &mut Vec<i64>,
    measures: &mut Vec<i64>,
) -> Option<Move> {
    use crate::VertexKind::{Independent, Intermediate};
    let mut filters: &[Filter] = &chain.filters;
    if let [Filter::HighestSiblingDegree, tail @ ..] = filters {
        if let Some(marks) = previous {
            // Only moves touching the previous neighbourhood can have a
            // positive sibling degree.
            candidates.clear();
            measures.clear();
            let s = marks.stamp;
            for &i in &marks.pred_list {
                for &(j, _) in work.succs(i) {
                    if work.kind(j) != Intermediate {
                        continue;
                    }
                    let sd = work
                        .succs(j)
                        .iter()
                        .filter(|e| marks.succs[e.0 as usize] == s)
                        .count();
                    if sd > 0 {
                        candidates.push(Move::Front(i, j));
                        measures.push(sd as i64);
                    }
                }
            }
            for &k in &marks.succ_list {
                for &(j, _) in work.preds(k) {
                    if work.kind(j) == Independent {
                        continue;
                    }
                    let sd = work
                        .preds(j)
                        .iter()
                        .filter(|e| marks.preds[e.0 as usize] == s)
                        .count();
                    if sd > 0 {
                        candidates.push(Move::Back(j, k));
                        measures.push(sd as i64);
                    }
                }
            }
            if !candidates.is_empty() {
                let max = measures.iter().copied().max().unwrap_or(0);
                let mut k = 0;
                candidates.retain(|_| {
                    k += 1;
                    measures[k - 1] == max
                });
                fills.clear();
                if need_fill {
                    for &m in candidates.iter() {
                        fills.push(work.fill_in(m) as i64);
                    }
                }
                let rest = Chain::new(tail.to_vec(), chain.mode);
                return choose(work, &rest, candidates, fills, measures, None);
            }
        }
        filters = tail;
    }
    if group_kind(filters).is_none() {
        // Materialize every move and filter generically.
        candidates.clear();
        fills.clear();
        for u in 0..work.len() as u32 {
            if !work.is_present(u) {
                continue;
            }
            let back_ok = work.kind(u) != Independent;
            for at in 0..work.succs(u).len() {
                let w = work.succs(u)[at].0;
                let (_, _, front_fill, back_fill) = work.edge_cache(u, at, need_fill);
                if work.kind(w) == Intermediate {
                    candidates.push(Move::Front(u, w));
                    fills.push(i64::from(front_fill));
                }
                if back_ok {
                    candidates.push(Move::Back(u, w));
                    fills.push(i64::from(back_fill));
                }
            }
        }
        if candidates.is_empty() {
            return None;
        }
        if !need_fill {
            fills.clear();
        }
        let rest = Chain::new(filters.to_vec(), chain.mode);
        return choose(work, &rest, candidates, fills, measures, None);
    }
    // One pass in the mode's order (forward: vertices ascending, the
    // front group before the back group; reverse: descending, back before
    // front): the first group with the smallest measure wins.
    let values = &groups.values;
    let mut best: Option<(i64, u32, bool)> = None;
    let mut consider = |j: usize, front: bool| {
        let v = values[j][usize::from(!front)];
        if v != NO_GROUP && best.is_none_or(|(b, _, _)| v < b) {
            best = Some((v, j as u32, front));
        }
    };
    match chain.mode {
        Mode::Forward => {
            for j in 0..values.len() {
                consider(j, true);
                consider(j, false);
            }
        }
        Mode::Reverse => {
            for j in (0..values.len()).rev() {
                consider(j, false);
                consider(j, true);
            }
        }
    }
    let (_, j, front) = best?;
    Some(match (chain.mode, front) {
        (Mode::Forward, true) => Move::Front(work.preds(j)[0].0, j),
        (Mode::Forward, false) => Move::Back(j, work.succs(j)[0].0),
        (Mode::Reverse, true) => {
            let p = work.preds(j);
            Move::Front(p[p.len() - 1].0, j)
        }
        (Mode::Reverse, false) => {
            let s = work.succs(j);
            Move::Back(j, s[s.len() - 1].0)
        }
    })
}

/// No group (in [`Groups`]).
const NO_GROUP: i64 = i64::MAX;

/// How the chain's filters after a leading sibling filter measure the
/// vertex groups of [`choose_all`]: 0 all equal, 1 Markowitz degree, 2
/// relative Markowitz degree; `None` when they cannot run by groups.
fn group_kind(filters: &[Filter]) -> Option<u8> {
    match filters {
        [] => Some(0),
        [Filter::LowestMarkowitz] => Some(1),
        [Filter::LowestRelativeMarkowitz] => Some(2),
        _ => None,
    }
}

/// The measures of every vertex's two edge groups (its in-edges, front
/// eliminated, and its out-edges, back eliminated; [`NO_GROUP`] when there
/// is no such group), kept up to date by the incremental runner for the
/// vertices whose lists changed.
struct Groups {
    kind: Option<u8>,
    values: Vec<[i64; 2]>,
}

impl Groups {
    fn new(work: &Work, chain: &Chain) -> Groups {
        let filters: &[Filter] = match chain.filters.as_slice() {
            [Filter::HighestSiblingDegree, tail @ ..] => tail,
            all => all,
        };
        let kind = group_kind(filters);
        let mut groups = Groups {
            kind,
            values: Vec::new(),
        };
        if kind.is_some() {
            groups.values = vec![[NO_GROUP; 2]; work.len()];
            for j in 0..work.len() as u32 {
                groups.update(work, j);
            }
        }
        groups
    }

    /// Measures vertex `j`'s groups again.
    fn update(&mut self, work: &Work, j: u32) {
        use crate::VertexKind::{Dependent, Independent, Intermediate};
        let Some(kind) = self.kind else { return };
        let count = |list: &[(u32, crate::work::W)], k| {
            list.iter().filter(|e| work.kind(e.0) == k).count() as i64
        };
        let mut v = [NO_GROUP; 2];
        if work.is_present(j) {
            let (p, s) = (work.preds(j), work.succs(j));
            if work.kind(j) == Intermediate && !p.is_empty() {
                v[0] = match kind {
                    0 => 0,
                    1 => s.len() as i64,
                    _ => s.len() as i64 - count(s, Dependent),
                };
            }
            if work.kind(j) != Independent && !s.is_empty() {
                v[1] = match kind {
                    0 => 0,
                    1 => p.len() as i64,
                    _ => p.len() as i64 - count(p, Independent),
                };
            }
        }
        self.values[j as usize] = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_thread_per_graph_holds_inside_and_is_restored_after() {
        let outside = parallelism();
        let (inside, nested) = one_thread_per_graph(|| {
            let nested = one_thread_per_graph(parallelism);
            (parallelism(), nested)
        });
        assert_eq!((inside, nested), (1, 1));
        assert_eq!(parallelism(), outside);
        // Restored when `f` panics too.
        let _ = std::panic::catch_unwind(|| one_thread_per_graph(|| panic!("in f")));
        assert_eq!(parallelism(), outside);
        // Other threads are not affected.
        let other = one_thread_per_graph(|| std::thread::scope(|s| s.spawn(parallelism).join()));
        assert_eq!(other.ok(), Some(outside));
    }
}
