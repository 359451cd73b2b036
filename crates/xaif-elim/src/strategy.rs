//! Running heuristic chains to the end, scarcity-preserving partial
//! elimination, and choosing the best of several runs.
//!
//! A *total* run eliminates until no candidate is left: no intermediate
//! vertex for vertex elimination (edges between dependents may remain), a
//! bipartite graph for edge and face elimination.
//!
//! A *scarcity-preserving* run (the reference engine's default) also runs a
//! complete sequence, but before the chain it prefers eliminations that
//! strictly reduce the number of non-trivial edges, then — with
//! `allow_maintaining` (`-m`) — those that keep it, and only then any
//! elimination. It returns the graph at the earliest point of the sequence
//! where the number of non-trivial edges was minimal (possibly before the
//! first elimination), so the remainder graph is usually not bipartite.
//! Face elimination only stops at points where the dual graph still is the
//! line graph of a linearized graph.
//!
//! [`select`] runs several strategies and keeps the best by the chosen
//! [`Metric`]; ties keep the earlier strategy.

use std::cmp::Ordering;

use thiserror::Error;

use crate::dual::DualGraph;
use crate::elim::ElimGraph;
use crate::graph::Lcg;
use crate::heuristics::{Chain, EliminationState};
use crate::result::{ElimError, Elimination};
use crate::value::Triviality;

/// Upper bound on the number of eliminations of one run; far above what
/// any terminating elimination of a realistic graph needs.
pub const STEP_LIMIT: usize = 1_000_000;

/// Which kind of elimination a strategy performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// Vertex elimination on the linearized graph.
    Vertex,
    /// Front and back edge elimination on the linearized graph.
    Edge,
    /// Face elimination on the dual graph.
    Face,
}

/// How far a strategy eliminates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Extent {
    /// Until no candidate is left.
    Total,
    /// Stop where the number of non-trivial edges is minimal.
    ScarcityPreserving {
        /// `-m`: prefer eliminations that keep the non-trivial edge count
        /// over those that increase it when no reducing one exists.
        allow_maintaining: bool,
    },
}

/// One way to eliminate a graph.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Strategy {
    /// Vertex, edge or face elimination.
    pub method: Method,
    /// The heuristic chain choosing each step.
    pub chain: Chain,
    /// Total or scarcity-preserving.
    pub extent: Extent,
}

/// How candidate results are ranked (`-M`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Metric {
    /// `-M 0`: fewer multiplications and divisions, then fewer additions
    /// and subtractions, then fewer non-trivial remainder edges.
    Operations,
    /// `-M 1` (default): fewer non-trivial remainder edges, then fewer
    /// multiplications and divisions, then fewer additions and subtractions.
    #[default]
    Scarcity,
}

impl Metric {
    /// Maps the reference engine's `-M` flag value.
    pub fn from_flag(flag: u8) -> Option<Metric> {
        match flag {
            0 => Some(Metric::Operations),
            1 => Some(Metric::Scarcity),
            _ => None,
        }
    }

    /// The lexicographic key of a result; smaller is better.
    pub fn key(self, elimination: &Elimination) -> (usize, usize, usize) {
        let ops = elimination.ops;
        match self {
            Metric::Operations => (
                ops.multiplicative(),
                ops.additive(),
                elimination.nontrivial_edges,
            ),
            Metric::Scarcity => (
                elimination.nontrivial_edges,
                ops.multiplicative(),
                ops.additive(),
            ),
        }
    }

    /// Compares two results; `Less` means `a` is better.
    pub fn compare(self, a: &Elimination, b: &Elimination) -> Ordering {
        self.key(a).cmp(&self.key(b))
    }
}

/// Bad flag values handed to [`Config::from_flags`].
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// `-M` takes 0 or 1.
    #[error("unknown elimination metric {0} (expected 0 or 1)")]
    Metric(u8),
    /// `-A` takes 0, 1 or 2.
    #[error("unknown trivial-edge level {0} (expected 0, 1 or 2)")]
    Triviality(u8),
}

/// Everything [`select`] needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// How results are ranked.
    pub metric: Metric,
    /// Which edges are trivial, for scarcity and for the reported counts.
    pub triviality: Triviality,
    /// The strategies to try, in order of preference on ties.
    pub strategies: Vec<Strategy>,
    /// What [`crate::optimize()`] does beyond them.
    pub search: crate::optimize::Search,
}

impl Config {
    /// The reference default (`-M 1`): scarcity-preserving edge elimination
    /// with the default edge chains, ranked by the scarcity metric.
    pub fn scarcity(triviality: Triviality, allow_maintaining: bool) -> Config {
        let extent = Extent::ScarcityPreserving { allow_maintaining };
        Config {
            metric: Metric::Scarcity,
            triviality,
            strategies: Chain::edge_defaults()
                .into_iter()
                .map(|chain| Strategy {
                    method: Method::Edge,
                    chain,
                    extent,
                })
                .collect(),
            search: Default::default(),
        }
    }

    /// `-M 0`: the default vertex and edge chains, total elimination,
    /// ranked by the operations metric.
    pub fn operations(triviality: Triviality) -> Config {
        let vertex = Chain::vertex_defaults().into_iter().map(|chain| Strategy {
            method: Method::Vertex,
            chain,
            extent: Extent::Total,
        });
        let edge = Chain::edge_defaults().into_iter().map(|chain| Strategy {
            method: Method::Edge,
            chain,
            extent: Extent::Total,
        });
        Config {
            metric: Metric::Operations,
            triviality,
            strategies: vertex.chain(edge).collect(),
            search: Default::default(),
        }
    }

    /// The configuration for the reference engine's `-M`, `-A` and `-m`
    /// flags.
    pub fn from_flags(
        metric: u8,
        triviality: u8,
        allow_maintaining: bool,
    ) -> Result<Config, ConfigError> {
        let triviality =
            Triviality::from_flag(triviality).ok_or(ConfigError::Triviality(triviality))?;
        match Metric::from_flag(metric).ok_or(ConfigError::Metric(metric))? {
            Metric::Operations => Ok(Config::operations(triviality)),
            Metric::Scarcity => Ok(Config::scarcity(triviality, allow_maintaining)),
        }
    }
}

impl Default for Config {
    fn default() -> Config {
        Config::scarcity(Triviality::default(), false)
    }
}

/// The best result of [`select`] and the strategy that produced it.
#[derive(Clone, Debug, PartialEq)]
pub struct Selection {
    /// The winning elimination.
    pub elimination: Elimination,
    /// The strategy that produced it.
    pub strategy: Strategy,
}

/// Runs one strategy on a graph.
pub fn run(
    lcg: &Lcg,
    strategy: &Strategy,
    triviality: Triviality,
) -> Result<Elimination, ElimError> {
    let chain = &strategy.chain;
    let extent = strategy.extent;
    match strategy.method {
        Method::Vertex => {
            let graph = ElimGraph::new(lcg)?;
            let graph = drive(
                graph,
                ElimGraph::vertex_candidates,
                chain,
                extent,
                triviality,
                |_| true,
                STEP_LIMIT,
            )?;
            Ok(graph.finish(triviality))
        }
        Method::Edge => {
            let graph = ElimGraph::new(lcg)?;
            let graph = drive(
                graph,
                ElimGraph::edge_candidates,
                chain,
                extent,
                triviality,
                |_| true,
                STEP_LIMIT,
            )?;
            Ok(graph.finish(triviality))
        }
        Method::Face => {
            let graph = DualGraph::new(lcg)?;
            let graph = drive(
                graph,
                DualGraph::face_candidates,
                chain,
                extent,
                triviality,
                DualGraph::is_representable,
                STEP_LIMIT,
            )?;
            graph.finish(triviality)
        }
    }
}

/// Graphs with at least this many edges run their strategies on several
/// threads (below it, starting threads costs more than it saves).
const PARALLEL_EDGES: usize = 64;

/// Runs every configured strategy and keeps the best result (the first in
/// configuration order among equals, however the runs were scheduled).
pub fn select(lcg: &Lcg, config: &Config) -> Result<Selection, ElimError> {
    let results = run_all(lcg, config);
    let mut best: Option<Selection> = None;
    for (strategy, elimination) in config.strategies.iter().zip(results) {
        let elimination = elimination?;
        let better = match &best {
            None => true,
            Some(current) => {
                config.metric.compare(&elimination, &current.elimination) == Ordering::Less
            }
        };
        if better {
            best = Some(Selection {
                elimination,
                strategy: strategy.clone(),
            });
        }
    }
    best.ok_or(ElimError::NoStrategies)
}

/// The result of every strategy, in configuration order.
fn run_all(lcg: &Lcg, config: &Config) -> Vec<Result<Elimination, ElimError>> {
    // Small graphs first: asking for the parallelism reads the cgroup
    // files, which costs more than eliminating a small graph.
    let threads = if lcg.edges().len() < PARALLEL_EDGES {
        1
    } else {
        crate::chain::parallelism().min(config.strategies.len())
    };
    if threads < 2 {
        return config
            .strategies
            .iter()
            .map(|s| run(lcg, s, config.triviality))
            .collect();
    }
    let mut results: Vec<Option<Result<Elimination, ElimError>>> =
        (0..config.strategies.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    config
                        .strategies
                        .iter()
                        .enumerate()
                        .skip(t)
                        .step_by(threads)
                        .map(|(k, s)| (k, run(lcg, s, config.triviality)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for (k, r) in h.join().expect("elimination threads do not panic") {
                results[k] = Some(r);
            }
        }
    });
    results
        .into_iter()
        .map(|r| r.expect("every strategy ran"))
        .collect()
}

/// Keeps the eliminations that reduce the non-trivial edge count, else
/// (with `allow_maintaining`) those that keep it, else all.
pub fn scarcity_filter<S: EliminationState + ?Sized>(
    state: &S,
    candidates: Vec<S::Target>,
    triviality: Triviality,
    allow_maintaining: bool,
) -> Vec<S::Target> {
    let deltas: Vec<i64> = candidates
        .iter()
        .map(|t| state.nontrivial_delta(t, triviality))
        .collect();
    let pick = |accept: &dyn Fn(i64) -> bool| -> Vec<S::Target> {
        candidates
            .iter()
            .zip(&deltas)
            .filter(|(_, delta)| accept(**delta))
            .map(|(t, _)| *t)
            .collect()
    };
    let reducing = pick(&|delta| delta < 0);
    if !reducing.is_empty() {
        return reducing;
    }
    if allow_maintaining {
        let maintaining = pick(&|delta| delta == 0);
        if !maintaining.is_empty() {
            return maintaining;
        }
    }
    candidates
}

fn drive<S: EliminationState + Clone>(
    mut state: S,
    candidates: impl Fn(&S) -> Vec<S::Target>,
    chain: &Chain,
    extent: Extent,
    triviality: Triviality,
    representable: impl Fn(&S) -> bool,
    step_limit: usize,
) -> Result<S, ElimError> {
    // Scarcity-preserving runs remember the initial state and the length of
    // the best prefix, and replay that prefix at the end: cheaper than
    // cloning the growing state at every improvement, and exact because
    // eliminations are deterministic.
    let initial = match extent {
        Extent::Total => None,
        Extent::ScarcityPreserving { .. } => Some(state.clone()),
    };
    let mut performed = Vec::new();
    let mut best = (state.nontrivial_edges(triviality), 0);
    for _ in 0..step_limit {
        let mut available = candidates(&state);
        if let Extent::ScarcityPreserving { allow_maintaining } = extent {
            available = scarcity_filter(&state, available, triviality, allow_maintaining);
        }
        let Some(target) = chain.choose(&state, available) else {
            let Some(mut replayed) = initial else {
                return Ok(state);
            };
            if best.1 == performed.len() {
                return Ok(state);
            }
            for target in &performed[..best.1] {
                replayed.eliminate(target)?;
            }
            return Ok(replayed);
        };
        state.eliminate(&target)?;
        if initial.is_some() {
            performed.push(target);
            let count = state.nontrivial_edges(triviality);
            if count < best.0 && representable(&state) {
                best = (count, performed.len());
            }
        }
    }
    Err(ElimError::StepLimit(step_limit))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Label, VarId, VertexKind};

    /// The step limit (`docs/limits.md`) is reached with its error: a
    /// chain `x -> a -> b -> y` needs two vertex eliminations.
    #[test]
    fn a_run_beyond_its_step_limit_is_an_error() {
        let mut lcg = Lcg::new();
        let x = lcg.add_vertex(VertexKind::Independent);
        let a = lcg.add_vertex(VertexKind::Intermediate);
        let b = lcg.add_vertex(VertexKind::Intermediate);
        let y = lcg.add_vertex(VertexKind::Dependent);
        for (k, (s, t)) in [(x, a), (a, b), (b, y)].into_iter().enumerate() {
            lcg.add_edge(s, t, Label::Variable(VarId(k as u32)))
                .unwrap();
        }
        let go = |limit| {
            drive(
                ElimGraph::new(&lcg).unwrap(),
                ElimGraph::vertex_candidates,
                &Chain::forward(),
                Extent::Total,
                Triviality::Unit,
                |_| true,
                limit,
            )
        };
        let err = go(1).map(|_| ()).unwrap_err();
        assert_eq!(err.to_string(), "elimination did not finish within 1 steps");
        assert!(go(3).is_ok());
    }
}
