//! Face elimination on the dual (line) graph, after Naumann.
//!
//! The dual graph has one vertex per edge of the linearized graph, carrying
//! the edge's value, and one edge — a *face* — from dual vertex `(i,j)` to
//! dual vertex `(j,k)` for every pair of consecutive edges. Independents and
//! dependents are represented as boundary markers: a dual vertex whose
//! source is independent has the source marker as predecessor, one whose
//! target is dependent has the sink marker as successor. The Jacobian entry
//! of dependent `y` and independent `x` is the sum over all dual paths from
//! the marker of `x` to the marker of `y` of the products of the values.
//!
//! Face elimination of the face `d -> e`, with `d = (i,j)` and `e = (j,k)`:
//!
//! 1. remove the face;
//! 2. if a dual vertex `w` exists with the same primal endpoints `(i,k)`,
//!    the same boundary markers and exactly the predecessor set of `d` and
//!    the successor set of `e`, it absorbs the product:
//!    `c_w := c_w + c_d * c_e`; otherwise a new dual vertex `(i,k)` with
//!    predecessors `P(d)`, successors `S(e)` and value `c_d * c_e` is added
//!    (fill-in);
//! 3. `d` is removed if it has no successor left and no sink marker, `e` if
//!    it has no predecessor left and no source marker (such a vertex lies
//!    on no path between markers);
//! 4. any two dual vertices that now have identical predecessor and
//!    successor sets (and markers) are merged by an addition, recorded as
//!    [`Step::MergeDual`]; the dual vertex with the smaller id survives.
//!
//! Only faces between two dual vertices are eliminated, never a face to or
//! from a marker, so no dependent loses its derivative. Step 4 is what keeps
//! the dual graph free of duplicates; it makes a completely face-eliminated
//! graph, in which every dual vertex connects a source marker to a sink
//! marker, exactly the bipartite Jacobian graph.
//!
//! A partially face-eliminated dual graph is in general not the line graph
//! of any linearized graph, so it has no remainder graph. It is one exactly
//! when, for every primal vertex `j`, every dual vertex ending at `j` has a
//! face to every dual vertex starting at `j` ([`DualGraph::is_representable`]);
//! scarcity-preserving face elimination only stops at such points.

use std::collections::HashMap;
use std::fmt;

use crate::elim::ElimGraph;
use crate::graph::{Lcg, VertexId, VertexKind};
use crate::heuristics::{EliminationState, Neighbourhood, OrderKey};
use crate::result::{ElimError, Elimination, FaceTarget, Recorder, RemainderVertex, Step};
use crate::value::{absorb_shape, product_shape, OpCounts, Shape, Triviality, Val};

/// Handle of a vertex of a [`DualGraph`] (an edge of the primal graph, or
/// an edge created by face elimination). Never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DualVertexId(pub u32);

impl DualVertexId {
    fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for DualVertexId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "d{}", self.0)
    }
}

#[derive(Clone, Debug)]
struct DualVertex {
    source: VertexId,
    target: VertexId,
    value: Val,
    /// Sorted by id.
    preds: Vec<DualVertexId>,
    /// Sorted by id.
    succs: Vec<DualVertexId>,
    /// Has the source marker as predecessor (its source is independent).
    from_independent: bool,
    /// Has the sink marker as successor (its target is dependent).
    to_dependent: bool,
    present: bool,
}

/// Working graph for face elimination.
#[derive(Clone, Debug)]
pub struct DualGraph {
    kinds: Vec<VertexKind>,
    names: Vec<Option<String>>,
    rank: Vec<u32>,
    vertices: Vec<DualVertex>,
    by_endpoints: HashMap<(VertexId, VertexId), Vec<DualVertexId>>,
    recorder: Recorder,
    previous: Option<Neighbourhood>,
}

impl DualGraph {
    /// Builds the dual graph of an input graph, after the same
    /// normalization as [`ElimGraph::new`] (acyclicity check, merging of
    /// parallel edges, removal of dead intermediates).
    pub fn new(lcg: &Lcg) -> Result<DualGraph, ElimError> {
        Ok(DualGraph::from_elim_graph(ElimGraph::new(lcg)?))
    }

    /// Builds the dual graph of a working graph, keeping its protocol and
    /// accumulation expressions, so that edge and face elimination can be
    /// mixed.
    pub fn from_elim_graph(graph: ElimGraph) -> DualGraph {
        let kinds = graph.kinds().to_vec();
        let names = graph.names().to_vec();
        let rank = graph.ranks().to_vec();
        let edges = graph.edges();
        let mut vertices = Vec::with_capacity(edges.len());
        let mut by_endpoints: HashMap<(VertexId, VertexId), Vec<DualVertexId>> = HashMap::new();
        let mut starting_at: HashMap<VertexId, Vec<DualVertexId>> = HashMap::new();
        for (index, &(source, target)) in edges.iter().enumerate() {
            let id = DualVertexId(index as u32);
            vertices.push(DualVertex {
                source,
                target,
                value: graph.value(source, target).unwrap_or(Val::Const(0.0)),
                preds: Vec::new(),
                succs: Vec::new(),
                from_independent: kinds[source.index()] == VertexKind::Independent,
                to_dependent: kinds[target.index()] == VertexKind::Dependent,
                present: true,
            });
            by_endpoints.entry((source, target)).or_default().push(id);
            starting_at.entry(source).or_default().push(id);
        }
        for index in 0..vertices.len() {
            let middle = vertices[index].target;
            let next = starting_at.get(&middle).cloned().unwrap_or_default();
            for &e in &next {
                vertices[e.index()].preds.push(DualVertexId(index as u32));
            }
            vertices[index].succs = next;
        }
        let mut dual = DualGraph {
            kinds,
            names,
            rank,
            vertices,
            by_endpoints,
            recorder: graph.into_recorder(),
            previous: None,
        };
        let all: Vec<DualVertexId> = (0..dual.vertices.len() as u32).map(DualVertexId).collect();
        dual.remove_dead(all);
        dual
    }

    /// Present dual vertices with their primal endpoints, by id.
    pub fn dual_vertices(&self) -> Vec<(DualVertexId, VertexId, VertexId)> {
        self.present_ids()
            .map(|id| {
                let v = &self.vertices[id.index()];
                (id, v.source, v.target)
            })
            .collect()
    }

    /// Predecessors of a dual vertex (without the boundary marker).
    pub fn predecessors(&self, vertex: DualVertexId) -> &[DualVertexId] {
        self.vertices.get(vertex.index()).map_or(&[], |v| &v.preds)
    }

    /// Successors of a dual vertex (without the boundary marker).
    pub fn successors(&self, vertex: DualVertexId) -> &[DualVertexId] {
        self.vertices.get(vertex.index()).map_or(&[], |v| &v.succs)
    }

    /// Every face, by first then second dual vertex id.
    pub fn face_candidates(&self) -> Vec<FaceTarget> {
        let mut faces = Vec::new();
        for first in self.present_ids() {
            for &second in &self.vertices[first.index()].succs {
                faces.push(self.face(first, second));
            }
        }
        faces
    }

    /// Eliminates the face `first -> second`.
    pub fn eliminate_face(
        &mut self,
        first: DualVertexId,
        second: DualVertexId,
    ) -> Result<(), ElimError> {
        if !self.has_face(first, second) {
            return Err(ElimError::NoSuchFace { first, second });
        }
        let face = self.face(first, second);
        self.eliminate(&face)
    }

    /// Whether the dual graph is the line graph of a linearized graph (see
    /// the module documentation); only then does [`DualGraph::finish`]
    /// succeed.
    pub fn is_representable(&self) -> bool {
        let mut starting_at: HashMap<VertexId, Vec<DualVertexId>> = HashMap::new();
        for id in self.present_ids() {
            starting_at
                .entry(self.vertices[id.index()].source)
                .or_default()
                .push(id);
        }
        self.by_endpoints.values().all(|ids| ids.len() <= 1)
            && self.present_ids().all(|id| {
                let vertex = &self.vertices[id.index()];
                let expected = starting_at.get(&vertex.target).map_or(&[][..], |v| v);
                vertex.succs == expected
            })
    }

    /// Operations performed so far.
    pub fn ops(&self) -> OpCounts {
        self.recorder.ops
    }

    /// Consumes the graph and returns the result, or
    /// [`ElimError::NotRepresentable`] if the dual graph has no remainder
    /// graph.
    pub fn finish(self, triviality: Triviality) -> Result<Elimination, ElimError> {
        if !self.is_representable() {
            return Err(ElimError::NotRepresentable);
        }
        let mut present = vec![false; self.kinds.len()];
        for (index, kind) in self.kinds.iter().enumerate() {
            present[index] = *kind != VertexKind::Intermediate;
        }
        let mut edges: Vec<(VertexId, VertexId, Val)> = self
            .present_ids()
            .map(|id| {
                let v = &self.vertices[id.index()];
                present[v.source.index()] = true;
                present[v.target.index()] = true;
                (v.source, v.target, v.value)
            })
            .collect();
        edges.sort_by_key(|(s, t, _)| (self.rank[s.index()], self.rank[t.index()]));
        let vertices = (0..self.kinds.len())
            .map(|index| RemainderVertex {
                id: VertexId(index as u32),
                kind: self.kinds[index],
                name: self.names[index].clone(),
                present: present[index],
            })
            .collect();
        Ok(self.recorder.finish(vertices, edges, triviality))
    }

    fn present_ids(&self) -> impl Iterator<Item = DualVertexId> + '_ {
        self.vertices
            .iter()
            .enumerate()
            .filter(|(_, v)| v.present)
            .map(|(index, _)| DualVertexId(index as u32))
    }

    fn is_present(&self, id: DualVertexId) -> bool {
        self.vertices.get(id.index()).is_some_and(|v| v.present)
    }

    fn has_face(&self, first: DualVertexId, second: DualVertexId) -> bool {
        self.is_present(first)
            && self.is_present(second)
            && self.vertices[first.index()]
                .succs
                .binary_search(&second)
                .is_ok()
    }

    fn face(&self, first: DualVertexId, second: DualVertexId) -> FaceTarget {
        let d = &self.vertices[first.index()];
        let e = &self.vertices[second.index()];
        FaceTarget {
            first,
            second,
            source: d.source,
            middle: d.target,
            target: e.target,
        }
    }

    /// The dual vertex that would absorb the product of the face.
    fn absorber(&self, first: DualVertexId, second: DualVertexId) -> Option<DualVertexId> {
        let d = &self.vertices[first.index()];
        let e = &self.vertices[second.index()];
        self.by_endpoints
            .get(&(d.source, e.target))?
            .iter()
            .copied()
            .find(|&w| {
                let w = &self.vertices[w.index()];
                w.from_independent == d.from_independent
                    && w.to_dependent == e.to_dependent
                    && w.preds == d.preds
                    && w.succs == e.succs
            })
    }

    fn is_dead(&self, id: DualVertexId) -> bool {
        let v = &self.vertices[id.index()];
        v.present
            && ((v.succs.is_empty() && !v.to_dependent)
                || (v.preds.is_empty() && !v.from_independent))
    }

    /// Removes dual vertices on no marker-to-marker path, transitively;
    /// returns the surviving vertices whose neighbour sets changed.
    fn remove_dead(&mut self, mut work: Vec<DualVertexId>) -> Vec<DualVertexId> {
        let mut touched = Vec::new();
        while let Some(id) = work.pop() {
            if !self.is_dead(id) {
                continue;
            }
            for neighbour in self.detach(id) {
                work.push(neighbour);
                touched.push(neighbour);
            }
        }
        touched.retain(|&id| self.is_present(id));
        touched
    }

    /// Removes a dual vertex and its faces; returns its former neighbours.
    fn detach(&mut self, id: DualVertexId) -> Vec<DualVertexId> {
        let preds = std::mem::take(&mut self.vertices[id.index()].preds);
        let succs = std::mem::take(&mut self.vertices[id.index()].succs);
        for &p in &preds {
            remove_sorted(&mut self.vertices[p.index()].succs, id);
        }
        for &s in &succs {
            remove_sorted(&mut self.vertices[s.index()].preds, id);
        }
        let v = &mut self.vertices[id.index()];
        v.present = false;
        let key = (v.source, v.target);
        if let Some(ids) = self.by_endpoints.get_mut(&key) {
            ids.retain(|&other| other != id);
            if ids.is_empty() {
                self.by_endpoints.remove(&key);
            }
        }
        let mut neighbours = preds;
        neighbours.extend(succs);
        neighbours
    }

    /// Merges dual vertices with identical neighbourhoods, starting from
    /// the given ones, until none are left.
    fn merge_twins(&mut self, mut work: Vec<DualVertexId>) {
        while let Some(id) = work.pop() {
            if !self.is_present(id) {
                continue;
            }
            let v = &self.vertices[id.index()];
            let (source, target) = (v.source, v.target);
            let Some(same_endpoints) = self.by_endpoints.get(&(source, target)) else {
                continue;
            };
            let twin = same_endpoints.iter().copied().find(|&other| {
                let o = &self.vertices[other.index()];
                other != id
                    && o.from_independent == v.from_independent
                    && o.to_dependent == v.to_dependent
                    && o.preds == v.preds
                    && o.succs == v.succs
            });
            let Some(twin) = twin else { continue };
            let (kept, removed) = (id.min(twin), id.max(twin));
            let merged = self.recorder.sum(
                self.vertices[kept.index()].value,
                self.vertices[removed.index()].value,
            );
            self.vertices[kept.index()].value = merged;
            self.recorder.steps.push(Step::MergeDual {
                kept,
                removed,
                source,
                target,
            });
            work.extend(self.detach(removed));
            work.push(kept);
        }
    }

    fn nontrivial(&self, shape: Shape, triviality: Triviality) -> i64 {
        i64::from(triviality.shape_is_nontrivial(shape))
    }
}

fn insert_sorted(list: &mut Vec<DualVertexId>, id: DualVertexId) {
    if let Err(at) = list.binary_search(&id) {
        list.insert(at, id);
    }
}

fn remove_sorted(list: &mut Vec<DualVertexId>, id: DualVertexId) {
    if let Ok(at) = list.binary_search(&id) {
        list.remove(at);
    }
}

impl EliminationState for DualGraph {
    type Target = FaceTarget;

    /// `|P(d)| * |S(e)|`, boundary markers included: the number of faces
    /// the fill-in vertex would get.
    fn markowitz(&self, face: &FaceTarget) -> usize {
        if !self.has_face(face.first, face.second) {
            return 0;
        }
        let d = &self.vertices[face.first.index()];
        let e = &self.vertices[face.second.index()];
        (d.preds.len() + usize::from(d.from_independent))
            * (e.succs.len() + usize::from(e.to_dependent))
    }

    /// The Markowitz degree minus the one marker-to-marker face, if any.
    fn relative_markowitz(&self, face: &FaceTarget) -> i64 {
        if !self.has_face(face.first, face.second) {
            return 0;
        }
        let d = &self.vertices[face.first.index()];
        let e = &self.vertices[face.second.index()];
        self.markowitz(face) as i64 - i64::from(d.from_independent && e.to_dependent)
    }

    fn fill_in(&self, face: &FaceTarget) -> usize {
        if !self.has_face(face.first, face.second) {
            return 0;
        }
        usize::from(self.absorber(face.first, face.second).is_none())
    }

    fn neighbourhood(&self, face: &FaceTarget) -> Neighbourhood {
        Neighbourhood::new(vec![face.source], vec![face.target])
    }

    fn previous(&self) -> Option<&Neighbourhood> {
        self.previous.as_ref()
    }

    fn forward_key(&self, face: &FaceTarget) -> OrderKey {
        let rank = |v: VertexId| u64::from(self.rank.get(v.index()).copied().unwrap_or(0));
        [
            rank(face.middle),
            rank(face.source),
            rank(face.target),
            u64::from(face.first.0),
            u64::from(face.second.0),
        ]
    }

    fn reverse_key(&self, face: &FaceTarget) -> OrderKey {
        let rank = |v: VertexId| u64::from(self.rank.get(v.index()).copied().unwrap_or(0));
        [
            rank(face.middle),
            rank(face.target),
            rank(face.source),
            u64::from(face.second.0),
            u64::from(face.first.0),
        ]
    }

    /// Exact except for twin merges the face would trigger (step 4), which
    /// are ignored.
    fn nontrivial_delta(&self, face: &FaceTarget, triviality: Triviality) -> i64 {
        if !self.has_face(face.first, face.second) {
            return 0;
        }
        let d = &self.vertices[face.first.index()];
        let e = &self.vertices[face.second.index()];
        let mut delta = match self.absorber(face.first, face.second) {
            Some(w) => {
                let w = self.vertices[w.index()].value;
                self.nontrivial(absorb_shape(w, d.value, e.value), triviality)
                    - self.nontrivial(w.shape(), triviality)
            }
            None => self.nontrivial(product_shape(d.value, e.value).shape(), triviality),
        };
        if d.succs.len() == 1 && !d.to_dependent {
            delta -= self.nontrivial(d.value.shape(), triviality);
        }
        if e.preds.len() == 1 && !e.from_independent {
            delta -= self.nontrivial(e.value.shape(), triviality);
        }
        delta
    }

    fn nontrivial_edges(&self, triviality: Triviality) -> usize {
        self.vertices
            .iter()
            .filter(|v| v.present && triviality.shape_is_nontrivial(v.value.shape()))
            .count()
    }

    fn eliminate(&mut self, face: &FaceTarget) -> Result<(), ElimError> {
        let (first, second) = (face.first, face.second);
        if !self.has_face(first, second) || self.face(first, second) != *face {
            return Err(ElimError::NoSuchFace { first, second });
        }
        let neighbourhood = self.neighbourhood(face);
        let absorber = self.absorber(first, second);
        remove_sorted(&mut self.vertices[first.index()].succs, second);
        remove_sorted(&mut self.vertices[second.index()].preds, first);
        let (c_d, c_e) = (
            self.vertices[first.index()].value,
            self.vertices[second.index()].value,
        );
        let result = match absorber {
            Some(w) => {
                let value = self
                    .recorder
                    .absorb(self.vertices[w.index()].value, c_d, c_e);
                self.vertices[w.index()].value = value;
                w
            }
            None => {
                let value = self.recorder.product(c_d, c_e);
                let id = DualVertexId(self.vertices.len() as u32);
                let preds = self.vertices[first.index()].preds.clone();
                let succs = self.vertices[second.index()].succs.clone();
                for &p in &preds {
                    insert_sorted(&mut self.vertices[p.index()].succs, id);
                }
                for &s in &succs {
                    insert_sorted(&mut self.vertices[s.index()].preds, id);
                }
                self.vertices.push(DualVertex {
                    source: face.source,
                    target: face.target,
                    value,
                    preds,
                    succs,
                    from_independent: self.vertices[first.index()].from_independent,
                    to_dependent: self.vertices[second.index()].to_dependent,
                    present: true,
                });
                self.by_endpoints
                    .entry((face.source, face.target))
                    .or_default()
                    .push(id);
                id
            }
        };
        self.recorder.steps.push(Step::Face(*face));
        let mut touched = vec![first, second, result];
        touched.extend(self.vertices[result.index()].preds.iter().copied());
        touched.extend(self.vertices[result.index()].succs.iter().copied());
        touched.extend(self.remove_dead(vec![first, second]));
        self.merge_twins(touched);
        self.previous = Some(neighbourhood);
        Ok(())
    }

    fn ops(&self) -> OpCounts {
        self.recorder.ops
    }
}
