//! Vertex and edge elimination on the linearized graph itself.
//!
//! [`ElimGraph`] is the crate's own mutable graph. It is built from an
//! [`Lcg`] once the graph has passed the acyclicity gate, merges parallel
//! edges, and then supports the eliminations of the control-flow-reversal
//! seed (§3.1):
//!
//! - front elimination of `(i,j)` connects `i` to every successor `k` of
//!   `j` with `c_ki := c_ji * c_kj`; only edges whose target is not a
//!   dependent (that is, is intermediate) can be front eliminated, since
//!   the derivative of a dependent target would be lost;
//! - back elimination of `(j,k)` connects every predecessor `i` of `j` to
//!   `k` with `c_ki := c_kj * c_ji`; only edges whose source is not an
//!   independent can be back eliminated (a dependent source is fine);
//! - an existing edge `(i,k)` absorbs the product, `c_ki := c_ki + ...`,
//!   otherwise the new edge is fill-in;
//! - an intermediate vertex left without in- or out-edges is removed with
//!   all its edges, at any point (also right after construction);
//! - vertex elimination of an intermediate `j` is the front elimination of
//!   all its in-edges, performed pairwise in the order "predecessors in
//!   topological order, then successors in topological order".
//!
//! The product of an edge elimination always lists the eliminated edge's
//! label first. Predecessor and successor lists are kept sorted by the
//! topological order of the input, so every elimination emits its
//! accumulation expressions in a documented, reproducible order.

use std::collections::HashMap;

use crate::graph::{Lcg, VertexId, VertexKind};
use crate::heuristics::{EliminationState, Neighbourhood, OrderKey};
use crate::result::{
    Direction, ElimError, Elimination, LcgTarget, Recorder, RemainderVertex, Step,
};
use crate::value::{absorb_shape, product_shape, OpCounts, Shape, Triviality, Val};

/// Working graph for vertex and edge elimination.
#[derive(Clone, Debug)]
pub struct ElimGraph {
    kinds: Vec<VertexKind>,
    names: Vec<Option<String>>,
    /// Position of each vertex in the single topological order.
    rank: Vec<u32>,
    present: Vec<bool>,
    /// Predecessors, sorted by rank.
    preds: Vec<Vec<VertexId>>,
    /// Successors, sorted by rank.
    succs: Vec<Vec<VertexId>>,
    values: HashMap<(VertexId, VertexId), Val>,
    recorder: Recorder,
    previous: Option<Neighbourhood>,
}

impl ElimGraph {
    /// Builds the working graph.
    ///
    /// Fails with [`crate::GraphError::Cycle`] on a cyclic graph. Parallel
    /// edges are merged in insertion order, each merge being an absorption
    /// that costs one addition (folded for constants) and is recorded as
    /// [`Step::MergeParallel`]; the working graph therefore never has
    /// parallel edges and an edge is identified by its endpoints.
    /// Intermediates without in- or out-edges are then removed.
    pub fn new(lcg: &Lcg) -> Result<ElimGraph, ElimError> {
        let order = lcg.topological_order()?;
        let count = lcg.vertex_count();
        let mut rank = vec![0u32; count];
        for (position, vertex) in order.iter().enumerate() {
            rank[vertex.index()] = position as u32;
        }
        let mut graph = ElimGraph {
            kinds: lcg.kinds().to_vec(),
            names: lcg.names().to_vec(),
            rank,
            present: vec![true; count],
            preds: vec![Vec::new(); count],
            succs: vec![Vec::new(); count],
            values: HashMap::new(),
            recorder: Recorder::default(),
            previous: None,
        };
        for edge in lcg.edges() {
            let label = Val::from_label(edge.label);
            match graph.values.get(&(edge.source, edge.target)).copied() {
                Some(existing) => {
                    let merged = graph.recorder.sum(existing, label);
                    graph.values.insert((edge.source, edge.target), merged);
                    graph.recorder.steps.push(Step::MergeParallel {
                        source: edge.source,
                        target: edge.target,
                    });
                }
                None => graph.link(edge.source, edge.target, label),
            }
        }
        let all: Vec<VertexId> = lcg.vertices().collect();
        graph.prune(all);
        Ok(graph)
    }

    /// The role of a vertex in the input graph.
    pub fn kind(&self, vertex: VertexId) -> Option<VertexKind> {
        self.kinds.get(vertex.index()).copied()
    }

    /// Whether the vertex is still in the graph.
    pub fn contains_vertex(&self, vertex: VertexId) -> bool {
        self.present.get(vertex.index()).copied().unwrap_or(false)
    }

    /// Whether the edge is in the graph.
    pub fn contains_edge(&self, source: VertexId, target: VertexId) -> bool {
        self.values.contains_key(&(source, target))
    }

    /// Predecessors of a present vertex in topological order (empty for
    /// removed or foreign vertices).
    pub fn predecessors(&self, vertex: VertexId) -> &[VertexId] {
        self.preds.get(vertex.index()).map_or(&[], |list| list)
    }

    /// Successors of a present vertex in topological order.
    pub fn successors(&self, vertex: VertexId) -> &[VertexId] {
        self.succs.get(vertex.index()).map_or(&[], |list| list)
    }

    /// Position of the vertex in the topological order the graph was built
    /// with.
    pub fn rank(&self, vertex: VertexId) -> Option<u32> {
        self.rank.get(vertex.index()).copied()
    }

    /// Number of edges.
    pub fn edge_count(&self) -> usize {
        self.values.len()
    }

    /// Operations performed so far.
    pub fn ops(&self) -> OpCounts {
        self.recorder.ops
    }

    /// Steps performed so far.
    pub fn steps(&self) -> &[Step] {
        &self.recorder.steps
    }

    /// All present edges, by source then target in topological order.
    pub fn edges(&self) -> Vec<(VertexId, VertexId)> {
        let mut edges = Vec::with_capacity(self.values.len());
        for source in self.vertices_in_order() {
            for &target in &self.succs[source.index()] {
                edges.push((source, target));
            }
        }
        edges
    }

    fn vertices_in_order(&self) -> Vec<VertexId> {
        let mut vertices: Vec<VertexId> = (0..self.kinds.len() as u32)
            .map(VertexId)
            .filter(|v| self.present[v.index()])
            .collect();
        vertices.sort_by_key(|v| self.rank[v.index()]);
        vertices
    }

    /// Every possible vertex elimination (present intermediates), in
    /// topological order.
    pub fn vertex_candidates(&self) -> Vec<LcgTarget> {
        self.vertices_in_order()
            .into_iter()
            .filter(|v| self.kinds[v.index()] == VertexKind::Intermediate)
            .map(LcgTarget::Vertex)
            .collect()
    }

    /// Every possible edge elimination: front eliminations of edges into
    /// intermediates and back eliminations of edges out of non-independents,
    /// by edge in topological order, front before back.
    pub fn edge_candidates(&self) -> Vec<LcgTarget> {
        let mut candidates = Vec::new();
        for (source, target) in self.edges() {
            if self.kinds[target.index()] == VertexKind::Intermediate {
                candidates.push(LcgTarget::Edge {
                    source,
                    target,
                    direction: Direction::Front,
                });
            }
            if self.kinds[source.index()] != VertexKind::Independent {
                candidates.push(LcgTarget::Edge {
                    source,
                    target,
                    direction: Direction::Back,
                });
            }
        }
        candidates
    }

    /// Eliminates an intermediate vertex.
    pub fn eliminate_vertex(&mut self, vertex: VertexId) -> Result<(), ElimError> {
        self.eliminate(&LcgTarget::Vertex(vertex))
    }

    /// Front eliminates the edge `source -> target`.
    pub fn front_eliminate(&mut self, source: VertexId, target: VertexId) -> Result<(), ElimError> {
        self.eliminate(&LcgTarget::Edge {
            source,
            target,
            direction: Direction::Front,
        })
    }

    /// Back eliminates the edge `source -> target`.
    pub fn back_eliminate(&mut self, source: VertexId, target: VertexId) -> Result<(), ElimError> {
        self.eliminate(&LcgTarget::Edge {
            source,
            target,
            direction: Direction::Back,
        })
    }

    fn check(&self, target: &LcgTarget) -> Result<(), ElimError> {
        match *target {
            LcgTarget::Vertex(vertex) => {
                if !self.contains_vertex(vertex) {
                    return Err(ElimError::NoSuchVertex(vertex));
                }
                if self.kinds[vertex.index()] != VertexKind::Intermediate {
                    return Err(ElimError::NotIntermediate(vertex));
                }
            }
            LcgTarget::Edge {
                source,
                target,
                direction,
            } => {
                if !self.contains_edge(source, target) {
                    return Err(ElimError::NoSuchEdge {
                        from: source,
                        to: target,
                    });
                }
                match direction {
                    Direction::Front if self.kinds[target.index()] != VertexKind::Intermediate => {
                        return Err(ElimError::FrontIntoNonIntermediate {
                            from: source,
                            to: target,
                        })
                    }
                    Direction::Back if self.kinds[source.index()] == VertexKind::Independent => {
                        return Err(ElimError::BackFromIndependent {
                            from: source,
                            to: target,
                        })
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Consumes the graph and returns the protocol, the accumulation
    /// expressions, the remainder graph and the counts.
    pub fn finish(self, triviality: Triviality) -> Elimination {
        let vertices = self.remainder_vertices();
        let edges = self
            .edges()
            .into_iter()
            .map(|(source, target)| (source, target, self.values[&(source, target)]))
            .collect();
        self.recorder.finish(vertices, edges, triviality)
    }

    fn remainder_vertices(&self) -> Vec<RemainderVertex> {
        (0..self.kinds.len())
            .map(|index| RemainderVertex {
                id: VertexId(index as u32),
                kind: self.kinds[index],
                name: self.names[index].clone(),
                present: self.present[index],
            })
            .collect()
    }

    pub(crate) fn names(&self) -> &[Option<String>] {
        &self.names
    }

    pub(crate) fn kinds(&self) -> &[VertexKind] {
        &self.kinds
    }

    pub(crate) fn ranks(&self) -> &[u32] {
        &self.rank
    }

    pub(crate) fn value(&self, source: VertexId, target: VertexId) -> Option<Val> {
        self.values.get(&(source, target)).copied()
    }

    pub(crate) fn into_recorder(self) -> Recorder {
        self.recorder
    }

    fn link(&mut self, source: VertexId, target: VertexId, value: Val) {
        self.values.insert((source, target), value);
        let rank = &self.rank;
        let succs = &mut self.succs[source.index()];
        let at = succs.partition_point(|v| rank[v.index()] < rank[target.index()]);
        succs.insert(at, target);
        let preds = &mut self.preds[target.index()];
        let at = preds.partition_point(|v| rank[v.index()] < rank[source.index()]);
        preds.insert(at, source);
    }

    fn unlink(&mut self, source: VertexId, target: VertexId) -> Option<Val> {
        let value = self.values.remove(&(source, target))?;
        self.succs[source.index()].retain(|&v| v != target);
        self.preds[target.index()].retain(|&v| v != source);
        Some(value)
    }

    /// `(i,k) := (i,k) + a * b`, creating the edge if needed.
    fn accumulate(&mut self, source: VertexId, target: VertexId, a: Val, b: Val) {
        match self.values.get(&(source, target)).copied() {
            Some(existing) => {
                let value = self.recorder.absorb(existing, a, b);
                self.values.insert((source, target), value);
            }
            None => {
                let value = self.recorder.product(a, b);
                self.link(source, target, value);
            }
        }
    }

    /// Applies the isolation rule until nothing changes.
    fn prune(&mut self, mut work: Vec<VertexId>) {
        while let Some(vertex) = work.pop() {
            let index = vertex.index();
            if !self.present[index]
                || self.kinds[index] != VertexKind::Intermediate
                || (!self.preds[index].is_empty() && !self.succs[index].is_empty())
            {
                continue;
            }
            for pred in self.preds[index].clone() {
                self.unlink(pred, vertex);
                work.push(pred);
            }
            for succ in self.succs[index].clone() {
                self.unlink(vertex, succ);
                work.push(succ);
            }
            self.present[index] = false;
        }
    }

    fn count_in(&self, vertices: &[VertexId], kind: VertexKind) -> usize {
        vertices
            .iter()
            .filter(|v| self.kinds[v.index()] == kind)
            .count()
    }

    fn nontrivial(&self, shape: Shape, triviality: Triviality) -> i64 {
        i64::from(triviality.shape_is_nontrivial(shape))
    }

    /// Change of the non-trivial edge count if `(i,k) += a * b`.
    fn accumulate_delta(
        &self,
        source: VertexId,
        target: VertexId,
        a: Val,
        b: Val,
        triviality: Triviality,
    ) -> i64 {
        match self.value(source, target) {
            Some(existing) => {
                self.nontrivial(absorb_shape(existing, a, b), triviality)
                    - self.nontrivial(existing.shape(), triviality)
            }
            None => self.nontrivial(product_shape(a, b).shape(), triviality),
        }
    }
}

impl EliminationState for ElimGraph {
    type Target = LcgTarget;

    fn markowitz(&self, target: &LcgTarget) -> usize {
        match *target {
            LcgTarget::Vertex(j) => self.predecessors(j).len() * self.successors(j).len(),
            LcgTarget::Edge {
                target: j,
                direction: Direction::Front,
                ..
            } => self.successors(j).len(),
            LcgTarget::Edge {
                source: j,
                direction: Direction::Back,
                ..
            } => self.predecessors(j).len(),
        }
    }

    fn relative_markowitz(&self, target: &LcgTarget) -> i64 {
        let markowitz = self.markowitz(target) as i64;
        let discount = match *target {
            LcgTarget::Vertex(j) => {
                self.count_in(self.predecessors(j), VertexKind::Independent)
                    * self.count_in(self.successors(j), VertexKind::Dependent)
            }
            LcgTarget::Edge {
                target: j,
                direction: Direction::Front,
                ..
            } => self.count_in(self.successors(j), VertexKind::Dependent),
            LcgTarget::Edge {
                source: j,
                direction: Direction::Back,
                ..
            } => self.count_in(self.predecessors(j), VertexKind::Independent),
        };
        markowitz - discount as i64
    }

    fn fill_in(&self, target: &LcgTarget) -> usize {
        match *target {
            LcgTarget::Vertex(j) => self
                .predecessors(j)
                .iter()
                .map(|&i| {
                    self.successors(j)
                        .iter()
                        .filter(|&&k| !self.contains_edge(i, k))
                        .count()
                })
                .sum(),
            LcgTarget::Edge {
                source: i,
                target: j,
                direction: Direction::Front,
            } => self
                .successors(j)
                .iter()
                .filter(|&&k| !self.contains_edge(i, k))
                .count(),
            LcgTarget::Edge {
                source: j,
                target: k,
                direction: Direction::Back,
            } => self
                .predecessors(j)
                .iter()
                .filter(|&&i| !self.contains_edge(i, k))
                .count(),
        }
    }

    fn neighbourhood(&self, target: &LcgTarget) -> Neighbourhood {
        let (predecessors, successors) = match *target {
            LcgTarget::Vertex(j) => (self.predecessors(j).to_vec(), self.successors(j).to_vec()),
            LcgTarget::Edge {
                source: i,
                target: j,
                direction: Direction::Front,
            } => (vec![i], self.successors(j).to_vec()),
            LcgTarget::Edge {
                source: j,
                target: k,
                direction: Direction::Back,
            } => (self.predecessors(j).to_vec(), vec![k]),
        };
        Neighbourhood::new(predecessors, successors)
    }

    fn previous(&self) -> Option<&Neighbourhood> {
        self.previous.as_ref()
    }

    fn forward_key(&self, target: &LcgTarget) -> OrderKey {
        let rank = |v: VertexId| u64::from(self.rank[v.index()]);
        match *target {
            LcgTarget::Vertex(j) => [rank(j), 0, 0, 0, 0],
            LcgTarget::Edge {
                source,
                target,
                direction: Direction::Front,
            } => [rank(target), 0, rank(source), 0, 0],
            LcgTarget::Edge {
                source,
                target,
                direction: Direction::Back,
            } => [rank(source), 1, rank(target), 0, 0],
        }
    }

    fn reverse_key(&self, target: &LcgTarget) -> OrderKey {
        // The same key read from the other end: the latest middle vertex
        // first, back before front, the latest other end first.
        self.forward_key(target)
    }

    fn nontrivial_delta(&self, target: &LcgTarget, triviality: Triviality) -> i64 {
        let value = |s: VertexId, t: VertexId| self.value(s, t).unwrap_or(Val::Const(0.0));
        let shape_of = |s: VertexId, t: VertexId| self.nontrivial(value(s, t).shape(), triviality);
        match *target {
            LcgTarget::Vertex(j) => {
                let mut delta = 0;
                for &i in self.predecessors(j) {
                    delta -= shape_of(i, j);
                }
                for &k in self.successors(j) {
                    delta -= shape_of(j, k);
                }
                for &i in self.predecessors(j) {
                    for &k in self.successors(j) {
                        delta += self.accumulate_delta(i, k, value(i, j), value(j, k), triviality);
                    }
                }
                delta
            }
            LcgTarget::Edge {
                source: i,
                target: j,
                direction: Direction::Front,
            } => {
                let mut delta = -shape_of(i, j);
                for &k in self.successors(j) {
                    delta += self.accumulate_delta(i, k, value(i, j), value(j, k), triviality);
                }
                if self.kinds[j.index()] == VertexKind::Intermediate
                    && self.predecessors(j).len() == 1
                {
                    for &k in self.successors(j) {
                        delta -= shape_of(j, k);
                    }
                }
                delta
            }
            LcgTarget::Edge {
                source: j,
                target: k,
                direction: Direction::Back,
            } => {
                let mut delta = -shape_of(j, k);
                for &i in self.predecessors(j) {
                    delta += self.accumulate_delta(i, k, value(j, k), value(i, j), triviality);
                }
                if self.kinds[j.index()] == VertexKind::Intermediate
                    && self.successors(j).len() == 1
                {
                    for &i in self.predecessors(j) {
                        delta -= shape_of(i, j);
                    }
                }
                delta
            }
        }
    }

    fn nontrivial_edges(&self, triviality: Triviality) -> usize {
        self.values
            .values()
            .filter(|val| triviality.shape_is_nontrivial(val.shape()))
            .count()
    }

    fn eliminate(&mut self, target: &LcgTarget) -> Result<(), ElimError> {
        self.check(target)?;
        let neighbourhood = self.neighbourhood(target);
        match *target {
            LcgTarget::Vertex(j) => {
                let preds = self.preds[j.index()].clone();
                let succs = self.succs[j.index()].clone();
                for &i in &preds {
                    let c_ji = self.values[&(i, j)];
                    for &k in &succs {
                        let c_kj = self.values[&(j, k)];
                        self.accumulate(i, k, c_ji, c_kj);
                    }
                }
                for &i in &preds {
                    self.unlink(i, j);
                }
                for &k in &succs {
                    self.unlink(j, k);
                }
                self.present[j.index()] = false;
                let mut touched = preds;
                touched.extend(succs);
                self.recorder.steps.push(Step::Vertex(j));
                self.prune(touched);
            }
            LcgTarget::Edge {
                source: i,
                target: j,
                direction: Direction::Front,
            } => {
                let c_ji = self
                    .unlink(i, j)
                    .ok_or(ElimError::NoSuchEdge { from: i, to: j })?;
                for k in self.succs[j.index()].clone() {
                    let c_kj = self.values[&(j, k)];
                    self.accumulate(i, k, c_ji, c_kj);
                }
                self.recorder.steps.push(Step::from(*target));
                self.prune(vec![i, j]);
            }
            LcgTarget::Edge {
                source: j,
                target: k,
                direction: Direction::Back,
            } => {
                let c_kj = self
                    .unlink(j, k)
                    .ok_or(ElimError::NoSuchEdge { from: j, to: k })?;
                for i in self.preds[j.index()].clone() {
                    let c_ji = self.values[&(i, j)];
                    self.accumulate(i, k, c_kj, c_ji);
                }
                self.recorder.steps.push(Step::from(*target));
                self.prune(vec![j, k]);
            }
        }
        self.previous = Some(neighbourhood);
        Ok(())
    }

    fn ops(&self) -> OpCounts {
        self.recorder.ops
    }
}
