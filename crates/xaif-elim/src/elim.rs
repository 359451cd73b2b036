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

use crate::graph::{Lcg, VertexId, VertexKind};
use crate::heuristics::{intersection_size, EliminationState, Neighbourhood, OrderKey};
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
    /// Edge values, parallel to `preds` (the same values as in
    /// `succ_values`, stored twice so both directions iterate without
    /// lookups).
    pred_values: Vec<Vec<Val>>,
    /// Successors, sorted by rank.
    succs: Vec<Vec<VertexId>>,
    /// Edge values, parallel to `succs`.
    succ_values: Vec<Vec<Val>>,
    edge_count: usize,
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
            pred_values: vec![Vec::new(); count],
            succs: vec![Vec::new(); count],
            succ_values: vec![Vec::new(); count],
            edge_count: 0,
            recorder: Recorder::default(),
            previous: None,
        };
        for edge in lcg.edges() {
            let label = Val::from_label(edge.label);
            match graph.value(edge.source, edge.target) {
                Some(existing) => {
                    let merged = graph.recorder.sum(existing, label);
                    graph.set_value(edge.source, edge.target, merged);
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
        self.position(source, target).is_some()
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
        self.edge_count
    }

    /// Operations performed so far.
    pub fn ops(&self) -> OpCounts {
        self.recorder.ops
    }

    /// See `Recorder::acc_facts`.
    pub(crate) fn acc_facts(&self) -> Vec<(bool, u32)> {
        self.recorder.acc_facts()
    }

    /// Steps performed so far.
    pub fn steps(&self) -> &[Step] {
        &self.recorder.steps
    }

    /// All present edges, by source then target in topological order.
    pub fn edges(&self) -> Vec<(VertexId, VertexId)> {
        let mut edges = Vec::with_capacity(self.edge_count);
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

    /// Pre-routes the edge `i -> k` about the pivot edge `j -> k` (`-R`):
    /// with `q = c_ki / c_kj`, the edge `i -> j` gets `+= q` and every
    /// other successor `l` of `j` gets `c_li -= q * c_lj`, and `i -> k` is
    /// removed. Every path sum stays the same (a path `i -> j -> k` now
    /// carries `c_ki`, the others are compensated), provided `c_kj` is not
    /// zero at run time (a pivot known to be zero is refused). `j` must be
    /// an intermediate that comes after `i` in the topological order.
    pub fn preroute(&mut self, i: VertexId, k: VertexId, j: VertexId) -> Result<(), ElimError> {
        let bad = ElimError::NotReroutable {
            from: i,
            to: k,
            pivot: j,
        };
        if i == j
            || self.kinds.get(j.index()) != Some(&VertexKind::Intermediate)
            || self.rank.get(i.index()) >= self.rank.get(j.index())
        {
            return Err(bad);
        }
        let (Some(c_ki), Some(c_kj)) = (self.value(i, k), self.value(j, k)) else {
            return Err(bad);
        };
        if c_kj == Val::Const(0.0) {
            return Err(bad);
        }
        let q = self.recorder.quotient(c_ki, c_kj);
        let existing = self.value(i, j);
        let v = self.recorder.absorb_value(existing, q);
        self.put(i, j, v);
        for l in self.succs[j.index()].clone() {
            if l == k {
                continue;
            }
            let c_lj = self.value(j, l).unwrap_or(Val::Const(0.0));
            let existing = self.value(i, l);
            let v = self.recorder.absorb_negated(existing, q, c_lj);
            self.put(i, l, v);
        }
        self.unlink(i, k);
        self.recorder.steps.push(Step::Reroute {
            source: i,
            target: k,
            pivot: j,
            pre: true,
        });
        self.prune(vec![i, j, k]);
        Ok(())
    }

    /// Post-routes the edge `i -> k` about the pivot edge `i -> j` (`-R`):
    /// with `q = c_ki / c_ji`, the edge `j -> k` gets `+= q` and every
    /// other predecessor `h` of `j` gets `c_kh -= c_jh * q`, and `i -> k`
    /// is removed. `j` must come before `k` in the topological order.
    pub fn postroute(&mut self, i: VertexId, k: VertexId, j: VertexId) -> Result<(), ElimError> {
        let bad = ElimError::NotReroutable {
            from: i,
            to: k,
            pivot: j,
        };
        if j == k
            || self.kinds.get(j.index()) == Some(&VertexKind::Independent)
            || self.rank.get(j.index()) >= self.rank.get(k.index())
        {
            return Err(bad);
        }
        let (Some(c_ki), Some(c_ji)) = (self.value(i, k), self.value(i, j)) else {
            return Err(bad);
        };
        if c_ji == Val::Const(0.0) {
            return Err(bad);
        }
        let q = self.recorder.quotient(c_ki, c_ji);
        let existing = self.value(j, k);
        let v = self.recorder.absorb_value(existing, q);
        self.put(j, k, v);
        for h in self.preds[j.index()].clone() {
            if h == i {
                continue;
            }
            let c_jh = self.value(h, j).unwrap_or(Val::Const(0.0));
            let existing = self.value(h, k);
            let v = self.recorder.absorb_negated(existing, c_jh, q);
            self.put(h, k, v);
        }
        self.unlink(i, k);
        self.recorder.steps.push(Step::Reroute {
            source: i,
            target: k,
            pivot: j,
            pre: false,
        });
        self.prune(vec![i, j, k]);
        Ok(())
    }

    /// Sets the value of an edge, creating it if needed.
    fn put(&mut self, source: VertexId, target: VertexId, value: Val) {
        if self.contains_edge(source, target) {
            self.set_value(source, target, value);
        } else {
            self.link(source, target, value);
        }
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
            .filter_map(|(source, target)| Some((source, target, self.value(source, target)?)))
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
        let at = self.position(source, target)?;
        Some(self.succ_values[source.index()][at])
    }

    /// Position of `target` in the successor list of `source`, found by
    /// rank (ranks are unique).
    fn position(&self, source: VertexId, target: VertexId) -> Option<usize> {
        let rank = *self.rank.get(target.index())?;
        let succs = self.succs.get(source.index())?;
        let at = succs
            .binary_search_by_key(&rank, |v| self.rank[v.index()])
            .ok()?;
        (succs[at] == target).then_some(at)
    }

    /// Position of `source` in the predecessor list of `target`.
    fn pred_position(&self, source: VertexId, target: VertexId) -> Option<usize> {
        let rank = *self.rank.get(source.index())?;
        let preds = self.preds.get(target.index())?;
        let at = preds
            .binary_search_by_key(&rank, |v| self.rank[v.index()])
            .ok()?;
        (preds[at] == source).then_some(at)
    }

    fn set_value(&mut self, source: VertexId, target: VertexId, value: Val) {
        if let (Some(out), Some(back)) = (
            self.position(source, target),
            self.pred_position(source, target),
        ) {
            self.succ_values[source.index()][out] = value;
            self.pred_values[target.index()][back] = value;
        }
    }

    pub(crate) fn into_recorder(self) -> Recorder {
        self.recorder
    }

    fn link(&mut self, source: VertexId, target: VertexId, value: Val) {
        let rank = &self.rank;
        let succs = &mut self.succs[source.index()];
        let at = succs.partition_point(|v| rank[v.index()] < rank[target.index()]);
        succs.insert(at, target);
        self.succ_values[source.index()].insert(at, value);
        self.edge_count += 1;
        let preds = &mut self.preds[target.index()];
        let at = preds.partition_point(|v| rank[v.index()] < rank[source.index()]);
        preds.insert(at, source);
        self.pred_values[target.index()].insert(at, value);
    }

    fn unlink(&mut self, source: VertexId, target: VertexId) -> Option<Val> {
        let at = self.position(source, target)?;
        let back = self.pred_position(source, target)?;
        self.succs[source.index()].remove(at);
        let value = self.succ_values[source.index()].remove(at);
        self.preds[target.index()].remove(back);
        self.pred_values[target.index()].remove(back);
        self.edge_count -= 1;
        Some(value)
    }

    /// `(i,k) := (i,k) + a * b`, creating the edge if needed.
    fn accumulate(&mut self, source: VertexId, target: VertexId, a: Val, b: Val) {
        match self.value(source, target) {
            Some(existing) => {
                let value = self.recorder.absorb(existing, a, b);
                self.set_value(source, target, value);
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

    /// Change of the non-trivial edge count if an edge whose current
    /// value is `existing` (or that does not exist) gets `+= a * b`.
    fn accumulate_delta(
        &self,
        existing: Option<Val>,
        a: Val,
        b: Val,
        triviality: Triviality,
    ) -> i64 {
        match existing {
            Some(existing) => {
                self.nontrivial(absorb_shape(existing, a, b), triviality)
                    - self.nontrivial(existing.shape(), triviality)
            }
            None => self.nontrivial(product_shape(a, b).shape(), triviality),
        }
    }

    /// Visits the successors `k` of `j` with `c_kj` and the value of
    /// `(i,k)` if that edge exists: a merge of two lists sorted by rank, so
    /// no lookups.
    fn successors_against(&self, i: VertexId, j: VertexId, visit: impl FnMut(Val, Option<Val>)) {
        merge_by_rank(
            &self.rank,
            (&self.succs[j.index()], &self.succ_values[j.index()]),
            (&self.succs[i.index()], &self.succ_values[i.index()]),
            visit,
        )
    }

    /// Visits the predecessors `i` of `j` with `c_ji` and the value of
    /// `(i,k)` if that edge exists.
    fn predecessors_against(&self, j: VertexId, k: VertexId, visit: impl FnMut(Val, Option<Val>)) {
        merge_by_rank(
            &self.rank,
            (&self.preds[j.index()], &self.pred_values[j.index()]),
            (&self.preds[k.index()], &self.pred_values[k.index()]),
            visit,
        )
    }
}

/// For each entry of `list`, visits its value and the value of the entry
/// with the same vertex in `other`, if any; both lists are sorted by rank.
fn merge_by_rank(
    rank: &[u32],
    (list, values): (&[VertexId], &[Val]),
    (other, other_values): (&[VertexId], &[Val]),
    mut visit: impl FnMut(Val, Option<Val>),
) {
    let mut cursor = 0;
    for (&vertex, &value) in list.iter().zip(values) {
        let key = rank[vertex.index()];
        while cursor < other.len() && rank[other[cursor].index()] < key {
            cursor += 1;
        }
        let matched =
            (cursor < other.len() && other[cursor] == vertex).then(|| other_values[cursor]);
        visit(value, matched);
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
        let mut missing = 0;
        let mut count = |_: Val, existing: Option<Val>| missing += usize::from(existing.is_none());
        match *target {
            LcgTarget::Vertex(j) if self.contains_vertex(j) => {
                for &i in self.predecessors(j) {
                    self.successors_against(i, j, &mut count);
                }
            }
            LcgTarget::Edge {
                source: i,
                target: j,
                direction: Direction::Front,
            } if self.contains_edge(i, j) => self.successors_against(i, j, &mut count),
            LcgTarget::Edge {
                source: j,
                target: k,
                direction: Direction::Back,
            } if self.contains_edge(j, k) => self.predecessors_against(j, k, &mut count),
            _ => {}
        }
        missing
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

    fn sibling_degree(&self, target: &LcgTarget, previous: &Neighbourhood) -> usize {
        let member = |v: &VertexId, set: &[VertexId]| usize::from(set.binary_search(v).is_ok());
        let (p, s) = (&previous.predecessors[..], &previous.successors[..]);
        match *target {
            LcgTarget::Vertex(j) => {
                intersection_size(self.successors(j), s)
                    * intersection_size(self.predecessors(j), p)
            }
            LcgTarget::Edge {
                source: i,
                target: j,
                direction: Direction::Front,
            } => intersection_size(self.successors(j), s) * member(&i, p),
            LcgTarget::Edge {
                source: j,
                target: k,
                direction: Direction::Back,
            } => member(&k, s) * intersection_size(self.predecessors(j), p),
        }
    }

    fn forward_key(&self, target: &LcgTarget) -> OrderKey {
        let rank = |v: VertexId| u64::from(self.rank(v).unwrap_or(0));
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
        let count = |val: Val| self.nontrivial(val.shape(), triviality);
        match *target {
            LcgTarget::Vertex(j) if self.contains_vertex(j) => {
                let mut delta = 0;
                for &c_kj in &self.succ_values[j.index()] {
                    delta -= count(c_kj);
                }
                for (&i, &c_ji) in self.preds[j.index()]
                    .iter()
                    .zip(&self.pred_values[j.index()])
                {
                    delta -= count(c_ji);
                    self.successors_against(i, j, |c_kj, existing| {
                        delta += self.accumulate_delta(existing, c_ji, c_kj, triviality)
                    });
                }
                delta
            }
            LcgTarget::Edge {
                source: i,
                target: j,
                direction: Direction::Front,
            } => {
                let Some(c_ji) = self.value(i, j) else {
                    return 0;
                };
                let mut delta = -count(c_ji);
                self.successors_against(i, j, |c_kj, existing| {
                    delta += self.accumulate_delta(existing, c_ji, c_kj, triviality)
                });
                if self.kinds[j.index()] == VertexKind::Intermediate
                    && self.preds[j.index()].len() == 1
                {
                    for &c_kj in &self.succ_values[j.index()] {
                        delta -= count(c_kj);
                    }
                }
                delta
            }
            LcgTarget::Edge {
                source: j,
                target: k,
                direction: Direction::Back,
            } => {
                let Some(c_kj) = self.value(j, k) else {
                    return 0;
                };
                let mut delta = -count(c_kj);
                self.predecessors_against(j, k, |c_ji, existing| {
                    delta += self.accumulate_delta(existing, c_kj, c_ji, triviality)
                });
                if self.kinds[j.index()] == VertexKind::Intermediate
                    && self.succs[j.index()].len() == 1
                {
                    for &c_ji in &self.pred_values[j.index()] {
                        delta -= count(c_ji);
                    }
                }
                delta
            }
            _ => 0,
        }
    }

    fn nontrivial_edges(&self, triviality: Triviality) -> usize {
        self.succ_values
            .iter()
            .flatten()
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
                    let c_ji = self.value(i, j).unwrap_or(Val::Const(0.0));
                    for &k in &succs {
                        let c_kj = self.value(j, k).unwrap_or(Val::Const(0.0));
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
                    let c_kj = self.value(j, k).unwrap_or(Val::Const(0.0));
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
                    let c_ji = self.value(i, j).unwrap_or(Val::Const(0.0));
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
