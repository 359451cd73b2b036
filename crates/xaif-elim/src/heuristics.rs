//! Heuristics for choosing the next elimination.
//!
//! Following the control-flow-reversal seed (§3.2), a heuristic is a filter
//! from a set of candidate eliminations to a non-empty subset; filters are
//! composed into a [`Chain`], and every chain ends in forward or reverse
//! mode ([`Mode`]), which always picks a single candidate because both are
//! defined by one topological order of the input graph. The type makes a
//! chain without a final unique choice impossible.
//!
//! Filters only read measures through [`EliminationState`], so the same
//! filter works for vertex, edge and face elimination:
//!
//! | filter | vertex `j` | front `(i,j)` | back `(j,k)` | face `(i,j,k)` |
//! |---|---|---|---|---|
//! | Markowitz | `|P(j)|·|S(j)|` | `|S(j)|` | `|P(j)|` | `|P(d)|·|S(e)|` (dual, markers included) |
//! | relative Markowitz | minus `|P(j)∩X|·|S(j)∩Y|` | minus `|S(j)∩Y|` | minus `|P(j)∩X|` | minus 1 for a marker-to-marker face |
//! | fill-in | new edges `(i,k)` | new edges `(i,k)` | new edges `(i,k)` | 1 unless absorbed |
//! | sibling neighbourhood `(P_θ, S_θ)` | `(P(j), S(j))` | `({i}, S(j))` | `(P(j), {k})` | `({i}, {k})` |
//!
//! `X` are the independents, `Y` the dependents. The relative Markowitz
//! degree discounts products that land directly on an independent-to-
//! dependent edge, which every complete elimination must compute anyway.
//!
//! Forward mode picks the smallest key, reverse mode the largest:
//! vertices by topological position; edges by `(middle vertex, direction,
//! other end)` with the middle vertex being the target of a front and the
//! source of a back elimination, front ranking below back (so forward mode
//! front eliminates the in-edges of the earliest vertex, reverse mode back
//! eliminates the out-edges of the latest vertex, latest target first);
//! faces by `(middle, source, target)` in forward and `(middle, target,
//! source)` in reverse mode.

use std::fmt;

use crate::graph::VertexId;
use crate::result::ElimError;
use crate::value::{OpCounts, Triviality};

/// Sort key of forward and reverse mode (see the module documentation).
pub type OrderKey = [u64; 5];

/// The predecessor set `P_θ` and successor set `S_θ` of an elimination,
/// as used by the sibling degree. Both lists are sorted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Neighbourhood {
    /// `P_θ`.
    pub predecessors: Vec<VertexId>,
    /// `S_θ`.
    pub successors: Vec<VertexId>,
}

impl Neighbourhood {
    /// Builds a neighbourhood, sorting both sets.
    pub fn new(mut predecessors: Vec<VertexId>, mut successors: Vec<VertexId>) -> Self {
        predecessors.sort();
        predecessors.dedup();
        successors.sort();
        successors.dedup();
        Neighbourhood {
            predecessors,
            successors,
        }
    }

    /// `sd_{previous}(self) = |S_θ ∩ S_θ⁻| · |P_θ ∩ P_θ⁻|`.
    pub fn sibling_degree(&self, previous: &Neighbourhood) -> usize {
        intersection_size(&self.successors, &previous.successors)
            * intersection_size(&self.predecessors, &previous.predecessors)
    }
}

/// `|a ∩ b|` for any `a` and a sorted `b`.
pub(crate) fn intersection_size(a: &[VertexId], b: &[VertexId]) -> usize {
    a.iter().filter(|v| b.binary_search(v).is_ok()).count()
}

/// A graph on which eliminations of type `Target` can be measured and
/// performed. Implemented by [`crate::ElimGraph`] (vertex and edge
/// targets) and [`crate::DualGraph`] (faces).
///
/// Measures of a target that is not in the graph are meaningless but never
/// panic; [`EliminationState::eliminate`] checks the target.
pub trait EliminationState {
    /// What one elimination acts on.
    type Target: Copy + PartialEq + fmt::Debug;

    /// Markowitz degree (the cost in multiplications without folding).
    fn markowitz(&self, target: &Self::Target) -> usize;
    /// Relative Markowitz degree.
    fn relative_markowitz(&self, target: &Self::Target) -> i64;
    /// Number of new edges (dual vertices for faces) the elimination adds.
    fn fill_in(&self, target: &Self::Target) -> usize;
    /// `(P_θ, S_θ)` for the sibling degree.
    fn neighbourhood(&self, target: &Self::Target) -> Neighbourhood;
    /// Neighbourhood of the last elimination performed, taken before it was
    /// performed; `None` before the first.
    fn previous(&self) -> Option<&Neighbourhood>;
    /// `sd_previous(target)`; implementations may override this to avoid
    /// building the neighbourhood.
    fn sibling_degree(&self, target: &Self::Target, previous: &Neighbourhood) -> usize {
        self.neighbourhood(target).sibling_degree(previous)
    }
    /// Forward-mode key: the smallest is chosen.
    fn forward_key(&self, target: &Self::Target) -> OrderKey;
    /// Reverse-mode key: the largest is chosen.
    fn reverse_key(&self, target: &Self::Target) -> OrderKey;
    /// Change of the number of non-trivial edges the elimination causes.
    fn nontrivial_delta(&self, target: &Self::Target, triviality: Triviality) -> i64;
    /// Current number of non-trivial edges.
    fn nontrivial_edges(&self, triviality: Triviality) -> usize;
    /// Performs the elimination.
    fn eliminate(&mut self, target: &Self::Target) -> Result<(), ElimError>;
    /// Operations performed so far.
    fn ops(&self) -> OpCounts;
}

/// A heuristic that narrows a candidate set without necessarily making it
/// unique. Each keeps the candidates with the best value of its measure, so
/// a non-empty input yields a non-empty output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Filter {
    /// LM: lowest Markowitz degree.
    LowestMarkowitz,
    /// Lowest relative Markowitz degree.
    LowestRelativeMarkowitz,
    /// Lowest number of fill-in edges.
    LowestFillIn,
    /// HS: highest sibling degree with respect to the previous elimination;
    /// keeps everything when there is no previous elimination or the
    /// maximum sibling degree is zero (seed §3.2), favouring data locality.
    HighestSiblingDegree,
}

impl Filter {
    /// Applies the filter.
    pub fn apply<S: EliminationState + ?Sized>(
        self,
        state: &S,
        candidates: Vec<S::Target>,
    ) -> Vec<S::Target> {
        match self {
            Filter::LowestMarkowitz => keep_min(candidates, |t| state.markowitz(t) as i64),
            Filter::LowestRelativeMarkowitz => {
                keep_min(candidates, |t| state.relative_markowitz(t))
            }
            Filter::LowestFillIn => keep_min(candidates, |t| state.fill_in(t) as i64),
            Filter::HighestSiblingDegree => {
                let Some(previous) = state.previous() else {
                    return candidates;
                };
                let degrees: Vec<usize> = candidates
                    .iter()
                    .map(|t| state.sibling_degree(t, previous))
                    .collect();
                let max = degrees.iter().copied().max().unwrap_or(0);
                if max == 0 {
                    return candidates;
                }
                candidates
                    .into_iter()
                    .zip(degrees)
                    .filter(|(_, degree)| *degree == max)
                    .map(|(t, _)| t)
                    .collect()
            }
        }
    }

    /// The short name used in chain names.
    pub fn short_name(self) -> &'static str {
        match self {
            Filter::LowestMarkowitz => "LM",
            Filter::LowestRelativeMarkowitz => "LRM",
            Filter::LowestFillIn => "LF",
            Filter::HighestSiblingDegree => "HS",
        }
    }
}

fn keep_min<T: Copy>(candidates: Vec<T>, measure: impl Fn(&T) -> i64) -> Vec<T> {
    let values: Vec<i64> = candidates.iter().map(&measure).collect();
    let Some(min) = values.iter().copied().min() else {
        return candidates;
    };
    candidates
        .into_iter()
        .zip(values)
        .filter(|(_, value)| *value == min)
        .map(|(t, _)| t)
        .collect()
}

/// The final, unique choice of a chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Smallest forward key: earliest first.
    Forward,
    /// Largest reverse key: latest first.
    Reverse,
}

impl Mode {
    /// Picks one candidate; `None` only for an empty set.
    pub fn choose<S: EliminationState + ?Sized>(
        self,
        state: &S,
        candidates: &[S::Target],
    ) -> Option<S::Target> {
        match self {
            Mode::Forward => candidates
                .iter()
                .copied()
                .min_by_key(|t| state.forward_key(t)),
            Mode::Reverse => candidates
                .iter()
                .copied()
                .max_by_key(|t| state.reverse_key(t)),
        }
    }

    fn short_name(self) -> &'static str {
        match self {
            Mode::Forward => "forward",
            Mode::Reverse => "reverse",
        }
    }
}

/// A composition of filters ending in a unique choice.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Chain {
    /// Filters, applied in order.
    pub filters: Vec<Filter>,
    /// The tie breaker that makes the choice unique.
    pub mode: Mode,
}

impl Chain {
    /// A chain of the given filters ending in `mode`.
    pub fn new(filters: impl Into<Vec<Filter>>, mode: Mode) -> Chain {
        Chain {
            filters: filters.into(),
            mode,
        }
    }

    /// Pure forward mode.
    pub fn forward() -> Chain {
        Chain::new([], Mode::Forward)
    }

    /// Pure reverse mode.
    pub fn reverse() -> Chain {
        Chain::new([], Mode::Reverse)
    }

    /// The seed's chain HS → LM → reverse.
    pub fn seed() -> Chain {
        Chain::new(
            [Filter::HighestSiblingDegree, Filter::LowestMarkowitz],
            Mode::Reverse,
        )
    }

    /// Applies the filters and the mode; `None` only for an empty set.
    pub fn choose<S: EliminationState + ?Sized>(
        &self,
        state: &S,
        candidates: Vec<S::Target>,
    ) -> Option<S::Target> {
        let mut remaining = candidates;
        for filter in &self.filters {
            remaining = filter.apply(state, remaining);
        }
        self.mode.choose(state, &remaining)
    }

    /// The chains tried by default for vertex elimination.
    pub fn vertex_defaults() -> Vec<Chain> {
        use Filter::*;
        vec![
            Chain::forward(),
            Chain::reverse(),
            Chain::new([LowestMarkowitz], Mode::Forward),
            Chain::new([LowestMarkowitz], Mode::Reverse),
            Chain::new([LowestRelativeMarkowitz], Mode::Reverse),
            Chain::new([LowestFillIn], Mode::Reverse),
            Chain::seed(),
        ]
    }

    /// The chains tried by default for edge elimination.
    pub fn edge_defaults() -> Vec<Chain> {
        use Filter::*;
        vec![
            Chain::forward(),
            Chain::reverse(),
            Chain::new([LowestMarkowitz], Mode::Reverse),
            Chain::new([LowestMarkowitz], Mode::Forward),
            Chain::new([LowestRelativeMarkowitz], Mode::Reverse),
            Chain::new([LowestFillIn], Mode::Reverse),
            Chain::seed(),
        ]
    }

    /// The chains tried by default for face elimination.
    pub fn face_defaults() -> Vec<Chain> {
        use Filter::*;
        vec![
            Chain::forward(),
            Chain::reverse(),
            Chain::new([LowestMarkowitz], Mode::Reverse),
            Chain::new([LowestFillIn], Mode::Reverse),
            Chain::seed(),
        ]
    }
}

impl fmt::Display for Chain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for filter in &self.filters {
            write!(f, "{} -> ", filter.short_name())?;
        }
        f.write_str(self.mode.short_name())
    }
}
