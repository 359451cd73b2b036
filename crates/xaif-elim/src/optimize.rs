//! Choosing the elimination of one graph: the reference's selection, then
//! search within an effort level, keeping the cheapest result.
//!
//! [`optimize`] runs the configured strategies (the reference's chains) on
//! the working graph and takes the reference's winner as the baseline and
//! incumbent, so the result is never costlier than the reference's chain
//! on the same graph. Then, by [`Effort`]:
//!
//! - `Fast`: the cheapest prefix of every chain run under the cost model,
//!   randomized chains with `-a`, and greedy descent from the two best
//!   starting points (the remainder post-processing: unit-edge forwarding
//!   and back-propagation and every other improving vertex or edge
//!   elimination, reroutings with `-R`, cost-neutral walks with `-m`);
//! - `Default`: descent from the four best starting points (the two more
//!   than `Fast` reach the proven optimum of the three adjoint corpus
//!   graphs of 10 and 12 intermediates that two starts miss by 3 to 5%,
//!   for about a third more search time, a few percent of a file's), and
//!   the exact searches where the graph is small (A* over vertex sets up
//!   to 8 inner vertices, over edge-elimination states up to 6 edges, a
//!   few hundred states each), on each independent part of the graph
//!   alone when it has several and the whole is beyond their reach
//!   ([`crate::components`]);
//! - `Max`: all seven chains as baseline on every graph, more starting
//!   points, exact searches up to 32 inner vertices and 16 edges with
//!   budgets of tens of thousands of states, and where no proof was
//!   found the anytime search, iterated descent ([`crate::anytime`]) with
//!   400 units of work per edge (from 9 inner vertices), then beam search.
//!   (At the default effort iterated descent does not pay for its time:
//!   with 10 units per edge on the graphs of 20 inner vertices or more of
//!   the corpus and of realistic generated programs it took a quarter
//!   more time for a few tenths of a percent fewer operations.)
//! - `Exhaustive`: the default effort's search, then everything of `Max`
//!   with budgets of millions of states, the exact search over vertex
//!   elimination sequences part by part ([`crate::exact`]) and several
//!   anytime searches from different starts.
//!
//! [`optimize_against`] also takes the graph the reference engine builds
//! for the same code, when it differs (its flattening gives some reads of
//! one value vertices of their own): in adjoint mode the reference's
//! selection on that graph also bounds the operations of the result.
//!
//! Budgets count states and work, not time, so the output never depends
//! on the machine. The winner is replayed on an [`ElimGraph`], which builds the
//! accumulation expressions, and priced again from them
//! ([`crate::cost`]); the chain's own result is kept when it is not
//! strictly more expensive.

use std::time::Instant;

use crate::chain::{run_chain, ChainRun, Rng};
use crate::cost::{evaluate_model, model, primary, Goal, PropagationMode};
use crate::elim::ElimGraph;
use crate::graph::Lcg;
use crate::result::{ElimError, Elimination};
use crate::search::{beam, descend, exact_edges, exact_vertices, Moves};
use crate::strategy::{select, Config, Extent, Method, Metric, Selection, Strategy};
use crate::work::{Move, Work};

/// How hard [`optimize`] searches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Effort {
    /// Only the configured strategies, as [`select`] (the reference's
    /// behaviour; also what `--heuristic` asks for).
    None,
    /// Cheap improvements of the chains' results.
    Fast,
    /// Exact search on small graphs, beam search on the others.
    #[default]
    Default,
    /// Larger budgets everywhere.
    Max,
    /// For builds that run for weeks: everything the default effort does
    /// (on the same baseline, so its result never costs more than the
    /// default's), then the exact searches and the anytime search with
    /// budgets of millions of states ([`crate::exact`]); budgets count
    /// states, so the result is still a function of the graph and the
    /// flags.
    Exhaustive,
}

impl Effort {
    /// The effort's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Effort::None => "none",
            Effort::Fast => "fast",
            Effort::Default => "default",
            Effort::Max => "max",
            Effort::Exhaustive => "exhaustive",
        }
    }

    /// The effort named `name` ([`Effort::name`]).
    pub fn from_name(name: &str) -> Option<Effort> {
        [
            Effort::None,
            Effort::Fast,
            Effort::Default,
            Effort::Max,
            Effort::Exhaustive,
        ]
        .into_iter()
        .find(|e| e.name() == name)
    }
}

/// The search settings of a [`Config`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Search {
    /// What is minimized.
    pub goal: Goal,
    /// How hard to search.
    pub effort: Effort,
    /// `-a`: randomized chains in addition to the configured ones.
    pub randomized: bool,
    /// `-R`: reroutings (pre- and post-routing of edges, with divisions)
    /// in the remainder post-processing.
    pub rerouting: bool,
    /// `-m`: the post-processing may walk over moves that keep the cost.
    pub allow_maintaining: bool,
    /// Seed of every random choice (`--seed`).
    pub seed: u64,
    /// Where results are kept between runs (`--elim-cache`), if anywhere.
    pub cache: Option<crate::cache::CacheHandle>,
}

/// Which search space a proof covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proof {
    /// Optimal among all vertex elimination sequences (intermediates
    /// eliminated, dependents cut), partial ones included.
    Vertex,
    /// Optimal among all front and back edge elimination sequences, which
    /// include the vertex elimination sequences.
    Edge,
}

/// What [`optimize`] found out about one graph. Costs are in the goal's
/// unit: operations of the derivative code for [`Goal::RunTime`] (with two
/// per pushed factor in adjoint mode), non-trivial edges or
/// multiplications for the metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The reference selection's cost.
    pub chain: u64,
    /// The cost of the result.
    pub cost: u64,
    /// A lower bound on the cost of every edge elimination sequence.
    pub lower_bound: u64,
    /// What the result is proven optimal for, if anything.
    pub proof: Option<Proof>,
    /// Which part of the search found the result.
    pub found_by: &'static str,
    /// States expanded or evaluated by the searches.
    pub states: usize,
    /// Wall time of [`optimize`] in microseconds (reported, never used to
    /// decide anything).
    pub micros: u64,
    /// Inner vertices (intermediates and dependents with out-edges) and
    /// edges of the graph as eliminated (parallel edges merged).
    pub size: (usize, usize),
    /// A lower bound on the cost of every vertex elimination sequence,
    /// where the exact search over them ran (`--effort exhaustive`); at
    /// least `lower_bound`.
    pub vertex_bound: Option<u64>,
}

/// The result of [`optimize`].
#[derive(Clone, Debug, PartialEq)]
pub struct Optimized {
    /// The elimination chosen and the strategy that describes it best (the
    /// reference's winner when the search did not improve on it).
    pub selection: Selection,
    /// How it was found and how good it is.
    pub report: Report,
}

struct Budgets {
    /// (inner vertices at most, states expanded at most).
    exact_vertices: (usize, usize),
    /// (edges at most, states expanded at most).
    exact_edges: (usize, usize),
    /// (width, children evaluated at most).
    beam: (usize, usize),
    /// Randomized chains with `-a`.
    random_runs: usize,
    /// Starting points of the greedy descent.
    starts: usize,
    /// Moves of one descent at most.
    descent: usize,
    /// Work (probes and moves) of the iterated descent per edge.
    anytime: u64,
    /// Inner vertices from which the iterated descent runs.
    anytime_from: usize,
}

impl Effort {
    fn budgets(self) -> Budgets {
        match self {
            Effort::None | Effort::Fast => Budgets {
                exact_vertices: (0, 0),
                exact_edges: (0, 0),
                beam: (0, 0),
                random_runs: 4,
                starts: 2,
                descent: 256,
                anytime: 0,
                anytime_from: usize::MAX,
            },
            Effort::Default => Budgets {
                exact_vertices: (8, 256),
                exact_edges: (6, 100),
                beam: (0, 0),
                random_runs: 8,
                starts: 4,
                descent: 1024,
                anytime: 0,
                anytime_from: usize::MAX,
            },
            Effort::Max => Budgets {
                exact_vertices: (32, 100_000),
                exact_edges: (16, 20_000),
                beam: (8, 20_000),
                random_runs: 64,
                starts: 8,
                descent: 4096,
                anytime: 400,
                anytime_from: 9,
            },
            // What runs after the default effort's search (see
            // `Session::exhaustive`).
            Effort::Exhaustive => Budgets {
                exact_vertices: (128, EXHAUSTIVE_STATES),
                exact_edges: (24, EXHAUSTIVE_STATES / 4),
                beam: (16, EXHAUSTIVE_STATES / 4),
                random_runs: 256,
                starts: 16,
                descent: 4096,
                anytime: EXHAUSTIVE_ANYTIME,
                anytime_from: 1,
            },
        }
    }
}

/// A candidate sequence and its model cost.
#[derive(Clone, Debug)]
struct Candidate {
    moves: Vec<Move>,
    cost: i64,
    found_by: &'static str,
}

/// Chooses the elimination of `lcg` for code that propagates in `mode`.
pub fn optimize(lcg: &Lcg, config: &Config, mode: PropagationMode) -> Result<Optimized, ElimError> {
    optimize_against(lcg, None, config, mode)
}

/// [`optimize`], where `reference` is the graph the reference engine
/// builds for the same code when it differs from `lcg` (its flattening
/// gives some reads of one value vertices of their own). For adjoint code
/// under [`Goal::RunTime`], the reference's selection on that graph
/// bounds the result: it spends no more operations (the push part aside)
/// than that selection whenever a sequence found on `lcg` does, even if
/// a cheaper one under the cost model (or the baseline) spends more;
/// otherwise the choice is [`optimize`]'s. (The taped factors are held
/// by the excess weight of [`crate::cost::EXCESS_TAPE`] as in
/// [`optimize`]: a bound on them too would trade operations for factors
/// where this crate's replay of the reference's chains differs from the
/// reference's.)
pub fn optimize_against(
    lcg: &Lcg,
    reference: Option<&Lcg>,
    config: &Config,
    mode: PropagationMode,
) -> Result<Optimized, ElimError> {
    let started = Instant::now();
    let search = &config.search;
    let has_face = config.strategies.iter().any(|s| s.method == Method::Face);
    let graph = ElimGraph::new(lcg)?;
    let m = model(search.goal, mode, config.metric, config.triviality);
    let mut work = Work::new(&graph, m, config.triviality);
    if search.effort == Effort::None || has_face || config.strategies.is_empty() {
        return select_only(lcg, config, &work, started);
    }
    let mut run = Session::baseline(&mut work, reference, config, mode)?;
    let cache = search
        .cache
        .as_ref()
        .filter(|_| run.size.0 >= crate::cache::CACHE_MIN_INNER)
        .map(|c| (c, crate::memo::cache_key(lcg, reference, mode, config)));
    let cached = cache
        .as_ref()
        .and_then(|(c, key)| run.cached(&mut work, c, key, search.effort));
    let reused = cached.as_ref().is_some_and(|e| e.1);
    if !reused {
        run.chain_candidates(&mut work);
        run.descents(&mut work);
        run.exact(&mut work, &graph, lcg, config, mode);
        run.anytime(&mut work);
        run.beam(&mut work);
        if search.effort == Effort::Exhaustive {
            run.exhaustive(&mut work, config);
        }
    }
    let effort = search.effort;
    let (mut optimized, chosen) = run.finish(&graph, &mut work, config, started)?;
    if reused {
        optimized.report.found_by = "cache";
    }
    if let (Some((c, key)), false) = (cache, reused) {
        let found = crate::cache::Entry {
            effort,
            proof: optimized.report.proof,
            cost: chosen.cost,
            bound: chosen.bound,
            moves: chosen.moves,
        };
        let stronger = |old: &crate::cache::Entry| {
            old.cost < found.cost
                || (old.cost == found.cost
                    && crate::cache::rank(old.effort) >= crate::cache::rank(found.effort)
                    && (old.proof.is_some() || found.proof.is_none()))
        };
        if !cached.as_ref().is_some_and(|(old, _)| stronger(old)) {
            c.0.store(&key, &found);
        }
    }
    Ok(optimized)
}

/// The reference's selection alone ([`Effort::None`], face elimination,
/// no strategy), reported under the cost model.
fn select_only(
    lcg: &Lcg,
    config: &Config,
    work: &Work,
    started: Instant,
) -> Result<Optimized, ElimError> {
    let unit = |c: i64| primary(config.search.goal, config.metric, c);
    let selection = select(lcg, config)?;
    let cost = evaluate_model(&work.model, &selection.elimination).map_or(u64::MAX, unit);
    Ok(Optimized {
        selection,
        report: Report {
            chain: cost,
            cost,
            lower_bound: unit(work.lower_bound()).min(cost),
            proof: None,
            found_by: "chain",
            states: 0,
            micros: started.elapsed().as_micros() as u64,
            size: (work.inner_vertices().count(), work.edge_count()),
            vertex_bound: None,
        },
    })
}

/// The state of one [`optimize_against`]: the baseline, the limits every
/// returned sequence must respect, the candidates found so far and what
/// is proven.
struct Session {
    goal: Goal,
    metric: Metric,
    budgets: Budgets,
    /// Inner vertices and edges of the graph as built.
    size: (usize, usize),
    kinds: Moves,
    allow_maintaining: bool,
    seed: u64,
    randomized: bool,
    /// The baseline's strategies and their complete runs.
    baseline: Vec<Strategy>,
    runs: Vec<ChainRun>,
    /// Which run is the reference's selection, its moves and cost split.
    reference_index: usize,
    reference_moves: Vec<Move>,
    reference_split: Option<(i64, i64)>,
    /// Operations (the push part aside) of the baseline, and of the
    /// reference engine's selection on its graph where that is lower.
    base_limit: i64,
    limit: i64,
    candidates: Vec<Candidate>,
    states: usize,
    proof: Option<Proof>,
    /// A lower bound on every sequence's cost (model units).
    bound: i64,
    /// A lower bound on every vertex elimination sequence's cost, where
    /// the exact search over them ran.
    vertex_bound: Option<i64>,
}

impl Session {
    /// Runs the reference's chains (the baseline), finds the reference's
    /// selection among them and sets the limits.
    fn baseline(
        work: &mut Work,
        reference: Option<&Lcg>,
        config: &Config,
        mode: PropagationMode,
    ) -> Result<Session, ElimError> {
        let search = &config.search;
        let baseline = baseline_strategies(config, work.edge_count(), search.effort, mode);
        let runs: Vec<ChainRun> = crate::chain::run_all(work, &baseline, false)
            .into_iter()
            .flatten()
            .collect();
        let Some(reference_index) = reference_run(&runs, config.metric) else {
            return Err(ElimError::NoStrategies);
        };
        let reference_moves = runs[reference_index].moves[..runs[reference_index].kept].to_vec();
        let reference_split = sequence_split(work, &reference_moves);
        let adjoint_runtime = search.goal == Goal::RunTime && mode == PropagationMode::Adjoint;
        // The operations of the reference's selection on the reference
        // engine's graph, when it is small enough for its chains to be
        // quick (on larger graphs the bound costs a third of the time and
        // has not been seen to bind).
        let reference_ops = match reference {
            Some(r) if adjoint_runtime && r.edges().len() < REFERENCE_EDGES => {
                reference_bound(r, config, mode)?.map(|s| s.0)
            }
            _ => None,
        };
        if adjoint_runtime {
            // Taping more factors than the baseline must pay for itself.
            if let Some((_, pushes)) = reference_split {
                work.limit_tape(
                    pushes,
                    crate::cost::EXCESS_TAPE as i64 * crate::cost::OPERATION,
                );
            }
        }
        let base_limit = reference_split.map_or(i64::MAX, |s| s.0);
        let limit = reference_ops.map_or(base_limit, |ops| base_limit.min(ops));
        let states = runs.iter().map(|r| r.moves.len()).sum::<usize>();
        Ok(Session {
            goal: search.goal,
            metric: config.metric,
            // The exhaustive effort first does what the default does.
            budgets: match search.effort {
                Effort::Exhaustive => Effort::Default.budgets(),
                effort => effort.budgets(),
            },
            size: (work.inner_vertices().count(), work.edge_count()),
            kinds: Moves {
                vertices: true,
                edges: true,
                reroutings: search.rerouting,
            },
            allow_maintaining: search.allow_maintaining,
            seed: search.seed,
            randomized: search.randomized,
            baseline,
            runs,
            reference_index,
            reference_moves,
            reference_split,
            base_limit,
            limit,
            candidates: Vec::new(),
            states,
            proof: None,
            bound: work.lower_bound(),
            vertex_bound: None,
        })
    }

    /// The entry the cache holds for this graph, replayed and priced: a
    /// move that is not possible, a cost that is not the one recorded or a
    /// sequence beyond the operation limit is reported and the entry
    /// ignored. The entry is reused (its sequence the only candidate,
    /// nothing searched) when it was found by the same effort, by the
    /// exhaustive one, or is proven optimal over edge elimination
    /// sequences; otherwise it is only returned, so that a stronger entry
    /// is not replaced by a weaker result. Returns the entry and whether
    /// it is reused.
    fn cached(
        &mut self,
        work: &mut Work,
        cache: &crate::cache::CacheHandle,
        key: &str,
        effort: Effort,
    ) -> Option<(crate::cache::Entry, bool)> {
        let entry = cache.0.load(key)?;
        let mark = work.mark();
        let mut valid = true;
        for &m in &entry.moves {
            if !work.can(m) {
                valid = false;
                break;
            }
            work.apply(m);
        }
        let priced = valid
            .then(|| (work.cost(), work.cost_split()))
            .and_then(|(c, s)| Some((c?, s?)));
        work.undo_to(mark);
        let problem = match priced {
            None if !valid => Some("a move is not possible on this graph"),
            None => Some("its sequence leaves no cost"),
            Some((cost, _)) if cost != entry.cost => Some("its cost is not the one recorded"),
            Some((_, (ops, _))) if ops > self.base_limit => {
                Some("its sequence spends more operations than the baseline")
            }
            Some(_) => None,
        };
        if let Some(why) = problem {
            cache.0.bad(&cache.0.file_of(key), why);
            return None;
        }
        let reuse = entry.effort == effort
            || entry.effort == Effort::Exhaustive
            || entry.proof == Some(Proof::Edge);
        if reuse {
            self.push(entry.moves.clone(), entry.cost, "cache");
            self.proof = entry.proof;
            self.bound = self.bound.max(entry.bound.min(entry.cost));
        }
        Some((entry, reuse))
    }

    fn push(&mut self, moves: Vec<Move>, cost: i64, found_by: &'static str) {
        self.candidates.push(Candidate {
            moves,
            cost,
            found_by,
        });
    }

    /// No elimination, the reference's selection, the cheapest prefix of
    /// every chain run (within the limits), and randomized chains (`-a`).
    fn chain_candidates(&mut self, work: &mut Work) {
        for (moves, found_by) in [
            (Vec::new(), "no elimination"),
            (self.reference_moves.clone(), "chain"),
        ] {
            if let Some(cost) = sequence_cost(work, &moves) {
                self.push(moves, cost, found_by);
            }
        }
        let mut found = Vec::new();
        for run in &self.runs {
            let mut limits = vec![i64::MAX];
            if self.limit < self.base_limit {
                limits.push(self.limit);
            }
            for limit in limits {
                if let Some((len, cost)) = cheapest_prefix(&work.model, &run.splits, limit) {
                    found.push((run.moves[..len].to_vec(), cost));
                }
            }
        }
        for (moves, cost) in found {
            self.push(moves, cost, "chain prefix");
        }
        if self.randomized {
            let random = Strategy {
                method: Method::Edge,
                chain: crate::heuristics::Chain::reverse(),
                extent: Extent::ScarcityPreserving {
                    allow_maintaining: self.allow_maintaining,
                },
            };
            let mut rng = Rng::new(self.seed);
            for _ in 0..self.budgets.random_runs {
                if let Some(run) = run_chain(work, &random, Some(&mut rng)) {
                    self.states += run.moves.len();
                    if let Some((len, cost)) = cheapest_prefix(&work.model, &run.splits, i64::MAX) {
                        self.push(run.moves[..len].to_vec(), cost, "randomized chain");
                    }
                }
            }
        }
        sort_candidates(&mut self.candidates);
    }

    /// The remainder post-processing: greedy descent from the best
    /// starting points.
    fn descents(&mut self, work: &mut Work) {
        let mut starts: Vec<Vec<Move>> = Vec::new();
        for c in &self.candidates {
            if starts.len() >= self.budgets.starts {
                break;
            }
            if !starts.contains(&c.moves) {
                starts.push(c.moves.clone());
            }
        }
        for start in starts {
            let base = work.mark();
            for &mv in &start {
                work.apply(mv);
            }
            let more = descend(
                work,
                self.kinds,
                self.allow_maintaining,
                self.budgets.descent,
            );
            self.states += more.len();
            if !more.is_empty() {
                if let Some(cost) = work.cost() {
                    let mut moves = start;
                    moves.extend(more);
                    self.push(moves, cost, "descent");
                }
            }
            work.undo_to(base);
        }
        sort_candidates(&mut self.candidates);
    }

    /// The exact searches where the graph is small enough: on the whole
    /// graph, or on each of its independent parts ([`crate::components`]).
    /// They search among the sequences that spend no more operations than
    /// the baseline (the push part aside) and than the reference engine's
    /// selection on its graph (`limit`), the only ones returned in the end
    /// (the latter when one is found).
    fn exact(
        &mut self,
        work: &mut Work,
        graph: &ElimGraph,
        lcg: &Lcg,
        config: &Config,
        mode: PropagationMode,
    ) {
        // Parts only where the whole graph is beyond the exact searches'
        // reach (and there is something to search at all).
        let (vlimit, _) = self.budgets.exact_vertices;
        let (elimit, _) = self.budgets.exact_edges;
        let whole_in_reach = self.size.0 <= vlimit && self.size.1 <= elimit;
        let parts = if whole_in_reach || self.size.0 == 0 {
            None
        } else {
            crate::components::parts(lcg, |v| graph.contains_vertex(v))
        };
        if let Some(parts) = parts {
            // Where the cost is a sum over the parts: always in tangent
            // mode, in adjoint mode when no label is shared.
            let additive = mode == PropagationMode::Tangent
                || self.goal == Goal::Metric
                || !crate::components::share_labels(&parts);
            // Only where every part is within the vertex search's reach,
            // so that the parts can prove the whole.
            let in_reach = parts
                .iter()
                .all(|p| crate::components::inner_vertices(&p.lcg) <= vlimit);
            if additive && in_reach {
                self.exact_parts(work, &parts, config, mode);
                return;
            }
        }
        let vbudget = self.budgets.exact_vertices.1;
        if self.size.0 <= vlimit && vbudget > 0 {
            let incumbent = feasible_cost(work, &self.candidates, self.limit);
            let exact = exact_vertices(work, incumbent, self.limit, vbudget);
            self.states += exact.expanded;
            if let Some((moves, cost)) = exact.best {
                self.push(moves, cost, "exact (vertices)");
            }
            if exact.proven {
                self.proof = Some(Proof::Vertex);
            }
            sort_candidates(&mut self.candidates);
        }
        let (elimit, ebudget) = self.budgets.exact_edges;
        if self.size.1 <= elimit && ebudget > 0 {
            let incumbent = feasible_cost(work, &self.candidates, self.limit);
            let exact = exact_edges(work, incumbent, self.limit, ebudget);
            self.states += exact.expanded;
            if let Some((moves, cost)) = exact.best {
                self.push(moves, cost, "exact (edges)");
            }
            self.bound = self.bound.max(exact.lower_bound);
            if exact.proven {
                self.proof = Some(Proof::Edge);
            }
            sort_candidates(&mut self.candidates);
        }
    }

    /// [`Session::exact`] part by part: each part's graph is searched
    /// alone (without the tape and operation limits, a relaxation), from
    /// the best candidate's moves in it; the parts' results together are
    /// a candidate. Where the cost is a sum over the parts (always in
    /// tangent mode; in adjoint mode when no label is shared), the sum of
    /// the parts' bounds is a bound, and when every part is proven and the
    /// combination keeps the limits, the combination is optimal.
    fn exact_parts(
        &mut self,
        work: &mut Work,
        parts: &[crate::components::Part],
        config: &Config,
        mode: PropagationMode,
    ) {
        let best = self
            .candidates
            .first()
            .map(|c| c.moves.clone())
            .unwrap_or_default();
        let mut combined: Vec<Move> = Vec::new();
        let mut bound = 0i64;
        let mut proof = Some(Proof::Edge);
        for part in parts {
            let Ok(graph) = ElimGraph::new(&part.lcg) else {
                return;
            };
            let m = model(self.goal, mode, self.metric, config.triviality);
            let mut sub = Work::new(&graph, m, config.triviality);
            // Working indices of the part to those of the whole, and back.
            let to_whole: Vec<u32> = (0..sub.len() as u32)
                .map(|v| {
                    let whole = part.to_whole[sub.vertex_of(v).index()];
                    work.rank_of(whole)
                })
                .collect();
            let mut to_part = vec![u32::MAX; work.len()];
            for (v, &w) in to_whole.iter().enumerate() {
                to_part[w as usize] = v as u32;
            }
            // The best candidate's moves in this part.
            let mine: Vec<Move> = best
                .iter()
                .filter(|m| m.vertices().all(|v| to_part[v as usize] != u32::MAX))
                .map(|m| m.map(|v| to_part[v as usize]))
                .collect();
            let (moves, part_bound, part_proof) = self.exact_part(&mut sub, mine);
            bound += part_bound;
            proof = match (proof, part_proof) {
                (Some(Proof::Edge), Some(p)) => Some(p),
                (Some(Proof::Vertex), Some(_)) => Some(Proof::Vertex),
                _ => None,
            };
            combined.extend(moves.into_iter().map(|m| m.map(|v| to_whole[v as usize])));
        }
        if let Some(cost) = sequence_cost(work, &combined) {
            // The relaxation's optimum is the optimum when it keeps the
            // limits: operations and the baseline's tape.
            let max_pushes = work.model.max_pushes;
            let tape_kept = sequence_split(work, &combined)
                .is_some_and(|(ops, pushes)| ops <= self.limit && pushes <= max_pushes);
            self.push(combined, cost, "exact (parts)");
            self.bound = self.bound.max(bound);
            if tape_kept {
                self.proof = proof;
            }
        }
        sort_candidates(&mut self.candidates);
    }

    /// The exact searches on one part's graph from the candidate's moves
    /// there: the best sequence found, a lower bound and the proof.
    fn exact_part(&mut self, sub: &mut Work, start: Vec<Move>) -> (Vec<Move>, i64, Option<Proof>) {
        let mut best = (sequence_cost(sub, &start).unwrap_or(i64::MAX), start);
        let mut bound = sub.lower_bound().min(best.0);
        let mut proof = None;
        let (vlimit, vbudget) = self.budgets.exact_vertices;
        let inner = sub.inner_vertices().count();
        if inner <= vlimit && vbudget > 0 {
            let exact = exact_vertices(sub, best.0, i64::MAX, vbudget);
            self.states += exact.expanded;
            if let Some((moves, cost)) = exact.best {
                best = (cost, moves);
            }
            if exact.proven {
                proof = Some(Proof::Vertex);
            }
        }
        let (elimit, ebudget) = self.budgets.exact_edges;
        if sub.edge_count() <= elimit && ebudget > 0 {
            let exact = exact_edges(sub, best.0, i64::MAX, ebudget);
            self.states += exact.expanded;
            if let Some((moves, cost)) = exact.best {
                best = (cost, moves);
            }
            bound = bound.max(exact.lower_bound);
            if exact.proven {
                proof = Some(Proof::Edge);
            }
        }
        if proof == Some(Proof::Edge) {
            bound = best.0;
        }
        (best.1, bound, proof)
    }

    /// Iterated local search from the best candidate where no proof was
    /// found, within a budget in proportion to the graph's size.
    fn anytime(&mut self, work: &mut Work) {
        if self.proof.is_some() {
            return;
        }
        let start = self.candidates[0].moves.clone();
        self.anytime_from(work, start, self.seed);
    }

    /// Iterated local search from `start` with `seed`, within the
    /// budget, its result a candidate.
    fn anytime_from(&mut self, work: &mut Work, start: Vec<Move>, seed: u64) {
        let budget = self.budgets.anytime * self.size.1 as u64;
        if budget == 0 || self.size.0 < self.budgets.anytime_from {
            return;
        }
        let incumbent = self.candidates[0].cost;
        // Only states within the operations of the baseline and its tape:
        // more taped factors than the reference's selection would make an
        // example push more than the reference's code.
        let (limit, max_pushes) = (self.limit, work.model.max_pushes);
        let keep = |w: &Work| {
            w.cost_split()
                .is_some_and(|(ops, pushes)| ops <= limit && pushes <= max_pushes)
        };
        let (found, spent) =
            crate::anytime::iterated(work, &start, incumbent, self.kinds, budget, seed, keep);
        self.states += spent as usize;
        if let Some((moves, cost)) = found {
            self.push(moves, cost, "iterated descent");
            sort_candidates(&mut self.candidates);
        }
    }

    /// Beam search where no proof was found.
    fn beam(&mut self, work: &mut Work) {
        let (width, budget) = self.budgets.beam;
        if self.proof.is_some() || budget == 0 {
            return;
        }
        let starts: Vec<Vec<Move>> = self
            .candidates
            .iter()
            .take(width)
            .map(|c| c.moves.clone())
            .collect();
        let incumbent = self.candidates[0].cost;
        if let Some((moves, cost)) = beam(work, &starts, self.kinds, width, incumbent, budget) {
            self.push(moves, cost, "beam");
        }
        self.states += budget;
        sort_candidates(&mut self.candidates);
    }

    /// `--effort exhaustive`, after the default effort's search: the
    /// other configured chains and randomized ones as candidates, more
    /// descents, the exact searches with budgets of millions of states,
    /// the anytime search from the best candidates with several seeds,
    /// then beam search. Nothing runs once a proof over edge elimination
    /// sequences is found.
    fn exhaustive(&mut self, work: &mut Work, config: &Config) {
        self.budgets = Effort::Exhaustive.budgets();
        // The cut bound: maximum flows once, then every bound of the
        // searches below is at least as strong. It counts on paths being
        // contracted, which reroutings do not do.
        if !self.kinds.reroutings && work.enable_cut_floor() {
            self.bound = self.bound.max(work.lower_bound());
        }
        if self.proof == Some(Proof::Edge) {
            return;
        }
        // Every configured chain, and randomized ones, as candidates.
        let others: Vec<Strategy> = config
            .strategies
            .iter()
            .filter(|s| !self.baseline.contains(s))
            .cloned()
            .collect();
        for run in crate::chain::run_all(work, &others, false)
            .into_iter()
            .flatten()
        {
            self.states += run.moves.len();
            if let Some((len, cost)) = cheapest_prefix(&work.model, &run.splits, self.limit) {
                self.push(run.moves[..len].to_vec(), cost, "chain prefix");
            }
        }
        let random = Strategy {
            method: Method::Edge,
            chain: crate::heuristics::Chain::reverse(),
            extent: Extent::ScarcityPreserving {
                allow_maintaining: self.allow_maintaining,
            },
        };
        let mut rng = Rng::new(self.seed ^ 0x6578_6861_7573_7469);
        for _ in 0..self.budgets.random_runs {
            if let Some(run) = run_chain(work, &random, Some(&mut rng)) {
                self.states += run.moves.len();
                if let Some((len, cost)) = cheapest_prefix(&work.model, &run.splits, self.limit) {
                    self.push(run.moves[..len].to_vec(), cost, "randomized chain");
                }
            }
        }
        sort_candidates(&mut self.candidates);
        self.descents(work);
        // The edge search where the graph is small, the vertex search part
        // by part (which subsumes A* over the whole graph's vertex sets).
        let (elimit, ebudget) = self.budgets.exact_edges;
        if self.size.1 <= elimit {
            let incumbent = feasible_cost(work, &self.candidates, self.limit);
            let exact = exact_edges(work, incumbent, self.limit, ebudget);
            self.states += exact.expanded;
            if let Some((moves, cost)) = exact.best {
                self.push(moves, cost, "exact (edges)");
            }
            self.bound = self.bound.max(exact.lower_bound);
            if exact.proven {
                self.proof = Some(Proof::Edge);
            }
            sort_candidates(&mut self.candidates);
        }
        if self.proof != Some(Proof::Edge) {
            self.exact_vertex_parts(work);
        }
        if self.proof == Some(Proof::Edge) {
            return;
        }
        // The anytime search from the best distinct candidates, each with
        // a seed of its own, then once more from the best of all.
        let mut starts: Vec<Vec<Move>> = Vec::new();
        for c in &self.candidates {
            if starts.len() >= EXHAUSTIVE_RESTARTS {
                break;
            }
            if !starts.contains(&c.moves) {
                starts.push(c.moves.clone());
            }
        }
        for (k, start) in starts.into_iter().enumerate() {
            self.anytime_from(work, start, self.seed.wrapping_add(k as u64 + 1));
        }
        let best = self.candidates[0].moves.clone();
        self.anytime_from(work, best, self.seed.wrapping_add(0x1000));
        self.beam(work);
    }

    /// The exact search over vertex elimination sequences part by part
    /// ([`crate::exact`]): its best sequence is a candidate, its bound a
    /// bound of the vertex elimination sequences, and its proof (under the
    /// model without the excess tape weight, a relaxation) holds when the
    /// best sequence costs the same under the real model and keeps the
    /// operation limit.
    fn exact_vertex_parts(&mut self, work: &mut Work) {
        if self.size.0 == 0 {
            return;
        }
        let outcome = crate::exact::vertex_search(work, self.budgets.exact_vertices.1);
        self.states += outcome.states;
        self.vertex_bound = Some(self.vertex_bound.unwrap_or(i64::MIN).max(outcome.bound));
        let Some((moves, relaxed)) = outcome.best else {
            return;
        };
        let Some(cost) = sequence_cost(work, &moves) else {
            return;
        };
        let within = sequence_split(work, &moves).is_some_and(|s| s.0 <= self.limit);
        if !within {
            return;
        }
        if outcome.proven && cost == relaxed && self.proof.is_none() {
            self.proof = Some(Proof::Vertex);
        }
        self.push(moves, cost, "exact (vertex parts)");
        sort_candidates(&mut self.candidates);
    }

    /// The cheapest candidate that is no worse than the baseline in
    /// operations (the push part aside) and, where one is, no worse than
    /// the reference engine's selection, replayed with expressions; the
    /// baseline is kept unless it is strictly more expensive or spends
    /// more than that selection.
    fn finish(
        self,
        graph: &ElimGraph,
        work: &mut Work,
        config: &Config,
        started: Instant,
    ) -> Result<(Optimized, Chosen), ElimError> {
        let unit = |c: i64| primary(self.goal, self.metric, c);
        let reference_strategy = self.baseline[self.reference_index].clone();
        let chain_elimination = replay(graph, work, &self.reference_moves, config)?;
        let chain_cost = evaluate_model(&work.model, &chain_elimination);
        let within = |s: Option<(i64, i64)>, limit: i64| s.is_some_and(|s| s.0 <= limit);
        let mut best = self
            .candidates
            .iter()
            .find(|c| within(sequence_split(work, &c.moves), self.limit))
            .cloned();
        let chain_within = best.is_none() || within(self.reference_split, self.limit);
        if best.is_none() {
            best = self
                .candidates
                .iter()
                .find(|c| within(sequence_split(work, &c.moves), self.base_limit))
                .cloned();
        }
        let best_within = best.as_ref().map_or(i64::MAX, |b| b.cost);
        let (elimination, cost, found_by, moves) = match best {
            Some(best) if best.moves != self.reference_moves => {
                let ours = replay(graph, work, &best.moves, config)?;
                let ours_cost = evaluate_model(&work.model, &ours);
                match (ours_cost, chain_cost) {
                    (Some(a), Some(b)) if a < b || !chain_within => {
                        (ours, ours_cost, best.found_by, best.moves)
                    }
                    (Some(_), None) => (ours, ours_cost, best.found_by, best.moves),
                    _ => (
                        chain_elimination,
                        chain_cost,
                        "chain",
                        self.reference_moves.clone(),
                    ),
                }
            }
            _ => (
                chain_elimination,
                chain_cost,
                "chain",
                self.reference_moves.clone(),
            ),
        };
        let chosen = Chosen {
            cost: sequence_cost(work, &moves).unwrap_or(i64::MAX),
            bound: self.bound,
            moves,
        };
        // Reported in the goal's units, under the objective minimized.
        let cost_unit = cost.map_or(u64::MAX, unit);
        let chain_unit = chain_cost.map_or(u64::MAX, unit);
        // A proof covers the model optimum among the sequences within the
        // baseline's operations; the result is that optimum unless the
        // replayed expressions made the baseline cheaper.
        let proof = self
            .proof
            .filter(|_| cost.is_some_and(|c| c <= best_within));
        let lower_bound = if proof == Some(Proof::Edge) {
            cost_unit
        } else {
            unit(self.bound).min(cost_unit)
        };
        let optimized = Optimized {
            selection: Selection {
                elimination,
                strategy: reference_strategy,
            },
            report: Report {
                chain: chain_unit,
                cost: cost_unit,
                lower_bound,
                proof,
                found_by,
                states: self.states,
                micros: started.elapsed().as_micros() as u64,
                size: self.size,
                vertex_bound: self.vertex_bound.map(|b| unit(b.max(0)).max(lower_bound)),
            },
        };
        Ok((optimized, chosen))
    }
}

/// The sequence [`Session::finish`] chose, its model cost and the bound
/// known, for the cache.
struct Chosen {
    moves: Vec<Move>,
    cost: i64,
    bound: i64,
}

/// The index of the reference's selection among complete runs of its
/// strategies (ties keep the earlier strategy).
fn reference_run(runs: &[ChainRun], metric: Metric) -> Option<usize> {
    let mut reference: Option<(usize, (i64, u32, u32))> = None;
    for (index, run) in runs.iter().enumerate() {
        let key = match metric {
            Metric::Scarcity => run.key,
            Metric::Operations => (i64::from(run.key.1), run.key.2, run.key.0 as u32),
        };
        if reference.is_none_or(|(_, best)| key < best) {
            reference = Some((index, key));
        }
    }
    reference.map(|(index, _)| index)
}

/// The cost split ([`Work::cost_split`]: operations part and taped
/// factors) of the reference's selection on `reference` under the run-time
/// model of `mode`.
fn reference_bound(
    reference: &Lcg,
    config: &Config,
    mode: PropagationMode,
) -> Result<Option<(i64, i64)>, ElimError> {
    let graph = ElimGraph::new(reference)?;
    let m = model(Goal::RunTime, mode, config.metric, config.triviality);
    let mut work = Work::new(&graph, m, config.triviality);
    let strategies = baseline_strategies(config, work.edge_count(), config.search.effort, mode);
    let runs: Vec<ChainRun> = crate::chain::run_all(&mut work, &strategies, false)
        .into_iter()
        .flatten()
        .collect();
    Ok(reference_run(&runs, config.metric)
        .and_then(|k| sequence_split(&mut work, &runs[k].moves[..runs[k].kept])))
}

/// The strategies of the baseline: the configured ones, except that for
/// tangent code on graphs with at least [`LONG_RUNS`] edges below
/// `--effort max` only the seed's chain and lowest Markowitz → reverse run
/// (when configured), because complete runs on large graphs are long and
/// the other chains rarely lead the search anywhere better. Adjoint code
/// always runs them all: its tape must never exceed the reference
/// selection's.
fn baseline_strategies(
    config: &Config,
    edges: usize,
    effort: Effort,
    mode: PropagationMode,
) -> Vec<Strategy> {
    use crate::heuristics::{Chain, Filter, Mode};
    if edges < LONG_RUNS || effort == Effort::Max || mode == PropagationMode::Adjoint {
        return config.strategies.clone();
    }
    let lm = Chain::new([Filter::LowestMarkowitz], Mode::Reverse);
    let kept: Vec<Strategy> = config
        .strategies
        .iter()
        .filter(|s| s.chain == Chain::seed() || s.chain == lm)
        .cloned()
        .collect();
    if kept.is_empty() {
        config.strategies.clone()
    } else {
        kept
    }
}

/// See [`baseline_strategies`].
const LONG_RUNS: usize = 64;

/// States the exact searches of `--effort exhaustive` expand at most
/// (the vertex search; the edge search and beam search a quarter).
pub const EXHAUSTIVE_STATES: usize = 4_000_000;

/// Work per edge of each anytime search of `--effort exhaustive`.
pub const EXHAUSTIVE_ANYTIME: u64 = 20_000;

/// Anytime searches of `--effort exhaustive`, each from another of the
/// best candidates with a seed of its own (one more from the best).
pub const EXHAUSTIVE_RESTARTS: usize = 8;

/// Reference graphs with at least this many edges bound nothing (see
/// [`optimize_against`]).
pub const REFERENCE_EDGES: usize = 64;

fn sort_candidates(candidates: &mut [Candidate]) {
    candidates.sort_by_key(|c| (c.cost, c.moves.len()));
}

/// The cost split of [`Work::cost_split`] after a sequence from the
/// current state (restored).
fn sequence_split(work: &mut Work, moves: &[Move]) -> Option<(i64, i64)> {
    let mark = work.mark();
    for &m in moves {
        work.apply(m);
    }
    let split = work.cost_split();
    work.undo_to(mark);
    split
}

/// The prefix of a run cheapest under the model (with its push terms)
/// among those that spend at most `limit` in operations (the push part
/// aside), from the run's recorded cost splits, and its cost.
fn cheapest_prefix(
    model: &crate::work::Model,
    splits: &[Option<(i64, i64)>],
    limit: i64,
) -> Option<(usize, i64)> {
    let mut best: Option<(usize, i64)> = None;
    for (k, split) in splits.iter().enumerate() {
        let Some((rest, pushes)) = split.filter(|s| s.0 <= limit) else {
            continue;
        };
        let c = rest + model.w_push * pushes + model.w_excess * (pushes - model.max_pushes).max(0);
        if best.is_none_or(|(_, b)| c < b) {
            best = Some((k, c));
        }
    }
    best
}

/// The cost of the cheapest candidate that spends at most `limit` in
/// operations (the push part aside); `i64::MAX` when none does.
fn feasible_cost(work: &mut Work, candidates: &[Candidate], limit: i64) -> i64 {
    candidates
        .iter()
        .find(|c| sequence_split(work, &c.moves).is_some_and(|s| s.0 <= limit))
        .map_or(i64::MAX, |c| c.cost)
}

/// The model cost of a sequence from the current state (restored).
fn sequence_cost(work: &mut Work, moves: &[Move]) -> Option<i64> {
    let mark = work.mark();
    for &m in moves {
        work.apply(m);
    }
    let cost = work.cost();
    work.undo_to(mark);
    cost
}

/// Replays a sequence of working moves on a copy of `built` (the graph as
/// built, which `work` started from) and finishes it.
fn replay(
    built: &ElimGraph,
    work: &mut Work,
    moves: &[Move],
    config: &Config,
) -> Result<Elimination, ElimError> {
    let mut graph = built.clone();
    let mark = work.mark();
    let mut targets = Vec::new();
    for &m in moves {
        targets.clear();
        work.targets(m, &mut targets);
        work.apply(m);
        for t in &targets {
            t.on(&mut graph)?;
        }
    }
    work.undo_to(mark);
    Ok(graph.finish(config.triviality))
}
