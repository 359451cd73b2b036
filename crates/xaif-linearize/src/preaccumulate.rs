//! Preaccumulation of a flattened sequence: partials and temporaries, the
//! elimination on the sequence's graph, Jacobian accumulation assignments,
//! and the remainder graph as an ordered list of propagation steps.
//!
//! The result is mode-neutral: the tangent generator turns the steps into a
//! `DerivativePropagator` after the sequence; the adjoint generator tapes
//! the factors and transposes the steps.

use rustc_hash::FxHashMap;
use xaif_elim::{AccId, EdgeValue, Elimination, Operand, VertexId, VertexKind};
use xaif_model::{Expr, ExprBuilder, Program, ScopeId, Stmt, StmtId, StmtKind, VarRef};

use crate::catalogue::Template;
use crate::context::{Ctx, Shape, ValueType};
use crate::dag::Node;
use crate::flatten::{build_graph, build_reference_graph, GraphStats, Item, SeqGraph, Sequence};
use crate::linearize::{instantiate, EdgePartial, LinStmt};
use crate::temps::{add, assign_temp, declare, Names, Temp, TempKind};

/// A factor of a propagation step.
#[derive(Clone, Debug)]
pub enum Factor {
    /// +1.
    Unit,
    /// -1.
    MinusOne,
    /// A constant.
    Constant(f64),
    /// A temporary holding a partial or an accumulated value.
    Var(VarRef),
}

impl Factor {
    /// The factor as an expression.
    pub fn expr(&self) -> Expr {
        let mut b = ExprBuilder::new();
        match self {
            Factor::Unit => {
                b.real(1.0);
            }
            Factor::MinusOne => {
                b.real(-1.0);
            }
            Factor::Constant(c) => {
                b.real(*c);
            }
            Factor::Var(r) => {
                b.reference(&crate::temps::value_ref(r));
            }
        }
        b.finish()
    }
}

/// Where a derivative lives during propagation.
#[derive(Clone, Debug)]
pub struct Slot {
    /// The variable whose derivative part holds it.
    pub var: VarRef,
    /// A temporary of the generated code (not a program variable).
    pub temporary: bool,
    /// The rank of the value it holds (the temporary's declared rank; a
    /// program variable's rank after its subscripts), which `-H` names
    /// its inlinable calls by.
    pub rank: usize,
}

/// One step of propagation: `target.d (+)= Σ factor · source.d`.
#[derive(Clone, Debug)]
pub struct Step {
    /// The target.
    pub target: Slot,
    /// The terms.
    pub terms: Vec<(Factor, Slot)>,
}

/// Everything the sequence's derivative code needs.
#[derive(Clone, Debug, Default)]
pub struct Preaccumulated {
    /// The statements of the sequence with their partial computations, then
    /// the accumulation assignments.
    pub stmts: Vec<StmtId>,
    /// Independents whose derivative must be saved before the sequence's
    /// targets are written: (temporary, variable).
    pub saves: Vec<(Slot, Slot)>,
    /// Variables whose derivative becomes zero.
    pub zeros: Vec<VarRef>,
    /// Propagation steps in order (sources before targets).
    pub steps: Vec<Step>,
    /// Non-constant factors the steps use (temporaries) with their shapes,
    /// for taping.
    pub factors: Vec<(VarRef, Shape)>,
    /// Propagation temporaries whose extents are known only at run time,
    /// with a reference of their shape: both modes allocate them
    /// (`oad_AllocateMatching(temporary, like)`) before the propagation
    /// uses them.
    pub allocations: Vec<(VarRef, VarRef)>,
    /// Graph statistics.
    pub stats: GraphStats,
    /// The graph before elimination, as Graphviz text.
    pub dot_before: Option<String>,
    /// The remainder graph, as Graphviz text.
    pub dot_after: Option<String>,
    /// The graph before elimination in the text form of
    /// [`xaif_elim::Lcg::to_text`] (kept with the Graphviz text, for
    /// reports and benchmarks of the elimination alone).
    pub lcg_text: Option<String>,
}

/// Why preaccumulation failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PreaccError {
    /// The sequence's graph is malformed.
    #[error("linearized graph: {0}")]
    Graph(#[from] xaif_elim::GraphError),
    /// The elimination failed.
    #[error("elimination: {0}")]
    Elimination(#[from] xaif_elim::ElimError),
}

/// The routine being transformed.
pub struct Target<'o> {
    /// The output program.
    pub out: &'o mut Program,
    /// Temporary names.
    pub names: &'o mut Names,
    /// The routine's scope (where temporaries are declared).
    pub scope: ScopeId,
}

/// Preaccumulates a sequence: emits its statements with partials and the
/// accumulation, and returns the propagation.
///
/// The steps, in order: freeze the subscripts the sequence changes, build
/// and eliminate its graph, emit the statements with their partials, emit
/// the Jacobian accumulation, choose where each derivative lives, order
/// the propagation along the remainder graph, and allocate the
/// propagation temporaries shaped at run time.
pub fn preaccumulate(
    ctx: &Ctx<'_>,
    t: &mut Target<'_>,
    seq: &Sequence,
    memo: &xaif_elim::Memo,
    mode: xaif_elim::PropagationMode,
    want_dot: bool,
) -> Result<Preaccumulated, PreaccError> {
    if !seq.is_active() {
        return Ok(passive(seq));
    }
    let frozen = crate::freeze::freeze(ctx, t, seq);
    let seq = frozen.as_ref().map_or(seq, |f| &f.seq);
    let graph = build_graph(seq)?;
    let (elimination, report) = eliminate(&graph, seq, memo, mode)?;
    let mut result = Preaccumulated::default();
    record_graph(&mut result, &graph, elimination.as_ref(), report, want_dot);
    let mut p = Preaccumulation {
        ctx,
        t,
        seq,
        frozen: frozen.as_ref(),
        graph: &graph,
        vertex_node: vertex_nodes(&graph),
        shapes: Vec::with_capacity(seq.items.len()),
        lin_temps: vec![None; graph.variables.len()],
        lin_shapes: vec![Shape::SCALAR; graph.variables.len()],
        acc_value: Vec::new(),
        acc_shapes: Vec::new(),
        slot: FxHashMap::default(),
        unallocated: Vec::new(),
        result,
    };
    p.emit_statements();
    if let Some(e) = &elimination {
        p.accumulate(e);
    }
    p.derivative_slots();
    if let Some(e) = &elimination {
        p.propagate(e)?;
    }
    p.allocate_intermediates();
    Ok(p.result)
}

/// The result for a sequence without derivative work: its statements
/// unchanged.
fn passive(seq: &Sequence) -> Preaccumulated {
    let mut result = Preaccumulated::default();
    for item in &seq.items {
        if let Item::Plain(s) = item {
            result.stmts.push(*s);
        }
    }
    result
}

/// Eliminates the sequence's graph (none when it has no edges), with the
/// search's report when the graph is small enough to search.
fn eliminate(
    graph: &SeqGraph,
    seq: &Sequence,
    memo: &xaif_elim::Memo,
    mode: xaif_elim::PropagationMode,
) -> Result<(Option<Elimination>, Option<xaif_elim::Report>), PreaccError> {
    if graph.lcg.edges().is_empty() {
        return Ok((None, None));
    }
    // Beyond `large::HEURISTIC_EDGES` edges the graph is eliminated in
    // reverse mode in linear time, without a report.
    let reference = reference_graph(graph, seq, mode)?;
    let (elimination, report) = crate::large::eliminate(
        &graph.lcg,
        reference.as_ref(),
        memo,
        mode,
        crate::large::HEURISTIC_EDGES,
    )?;
    Ok((Some(elimination), report))
}

/// The reference engine's graph of the sequence, in adjoint mode where it
/// differs from ours: it bounds the taping code's cost.
fn reference_graph(
    graph: &SeqGraph,
    seq: &Sequence,
    mode: xaif_elim::PropagationMode,
) -> Result<Option<xaif_elim::Lcg>, PreaccError> {
    Ok(match mode {
        xaif_elim::PropagationMode::Adjoint
            if graph.lcg.edges().len() < xaif_elim::REFERENCE_EDGES =>
        {
            build_reference_graph(seq)?
        }
        _ => None,
    })
}

/// Eliminates the graph of `seq` into `memo` the way [`preaccumulate`]
/// would, without emitting anything (the second thread of
/// [`crate::ahead`]); nothing when the graph is not searched or not kept.
pub(crate) fn prefetch(
    seq: &Sequence,
    memo: &xaif_elim::Memo,
    mode: xaif_elim::PropagationMode,
) -> Result<xaif_elim::Prefetched, PreaccError> {
    if !seq.is_active() {
        return Ok(xaif_elim::Prefetched::NotKept);
    }
    let graph = build_graph(seq)?;
    let edges = graph.lcg.edges().len();
    if edges == 0 || edges > crate::large::HEURISTIC_EDGES {
        return Ok(xaif_elim::Prefetched::NotKept);
    }
    let reference = reference_graph(&graph, seq, mode)?;
    let reference = reference
        .as_ref()
        .filter(|r| r.edges().len() <= crate::large::HEURISTIC_EDGES);
    Ok(memo.prefetch_against(&graph.lcg, reference, mode)?)
}

/// Records the graph (as Graphviz and text when asked for) and the
/// statistics of its elimination and search in `result`, for `-g` and the
/// metrics.
fn record_graph(
    result: &mut Preaccumulated,
    graph: &SeqGraph,
    elimination: Option<&Elimination>,
    report: Option<xaif_elim::Report>,
    want_dot: bool,
) {
    if want_dot {
        result.dot_before = Some(graph.lcg.to_dot());
        result.lcg_text = Some(graph.lcg.to_text());
        result.dot_after = elimination.map(|e| e.remainder.to_dot());
    }
    result.stats.vertices = graph.lcg.vertex_count();
    result.stats.edges = graph.lcg.edges().len();
    result.stats.intermediates = graph
        .lcg
        .vertices()
        .filter(|&v| graph.lcg.kind(v) == Some(xaif_elim::VertexKind::Intermediate))
        .count();
    if let Some(e) = elimination {
        result.stats.multiplications = e.ops.multiplications;
        result.stats.additions = e.ops.additions;
        result.stats.subtractions = e.ops.subtractions;
        result.stats.divisions = e.ops.divisions;
        result.stats.nontrivial_remainder_edges = e.nontrivial_edges;
    }
    if let Some(r) = report {
        let stats = &mut result.stats;
        stats.graphs = 1;
        stats.inner_vertices = r.size.0;
        stats.chain_cost = r.chain;
        stats.cost = r.cost;
        stats.lower_bound = r.lower_bound;
        stats.proof = r.proof.map(|p| match p {
            xaif_elim::Proof::Vertex => "vertex",
            xaif_elim::Proof::Edge => "edge",
        });
        stats.proven = usize::from(r.proof.is_some());
        stats.found_by = r.found_by;
        stats.micros = r.micros;
    }
}

/// Which (item, node) each vertex stands for (the first, when several),
/// for the shapes of the temporaries that hold its derivative.
fn vertex_nodes(graph: &SeqGraph) -> FxHashMap<VertexId, (usize, usize)> {
    let mut vertex_node: FxHashMap<VertexId, (usize, usize)> = FxHashMap::default();
    for (k, nv) in graph.node_vertex.iter().enumerate() {
        for (n, v) in nv.iter().enumerate() {
            if let Some(v) = v {
                vertex_node.entry(*v).or_insert((k, n));
            }
        }
    }
    vertex_node
}

/// The state the steps of [`preaccumulate`] share after the elimination:
/// what each step emits or decides is read by the later ones.
struct Preaccumulation<'c, 't, 'o, 's> {
    ctx: &'c Ctx<'c>,
    t: &'t mut Target<'o>,
    /// The sequence (frozen, when freezing rewrote it).
    seq: &'s Sequence,
    /// The temporaries freezing introduced, per item.
    frozen: Option<&'s crate::freeze::Frozen>,
    graph: &'s SeqGraph,
    /// Which (item, node) each vertex stands for.
    vertex_node: FxHashMap<VertexId, (usize, usize)>,
    /// Per item, the type and shape of each node of its right-hand side
    /// (empty for items that are not active).
    shapes: Vec<Vec<(ValueType, Shape)>>,
    /// The temporary holding each variable label's partial, and its shape.
    lin_temps: Vec<Option<Temp>>,
    lin_shapes: Vec<Shape>,
    /// The value of each accumulation kept in a temporary, and the shape
    /// of every accumulation.
    acc_value: Vec<Option<Factor>>,
    acc_shapes: Vec<Shape>,
    /// Where each vertex's derivative lives.
    slot: FxHashMap<VertexId, Slot>,
    /// Propagation temporaries shaped at run time, not yet allocated.
    unallocated: Vec<(VertexId, VarRef)>,
    result: Preaccumulated,
}

impl Preaccumulation<'_, '_, '_, '_> {
    /// Emits the statements of the sequence in order: each after the
    /// frozen subscripts it needs, active ones with their auxiliary and
    /// partial temporaries before them.
    fn emit_statements(&mut self) {
        let seq = self.seq;
        for (k, item) in seq.items.iter().enumerate() {
            let frozen_here = self.frozen.is_some_and(|f| !f.before[k].is_empty());
            if let Some(f) = self.frozen {
                self.result.stmts.extend(f.before[k].iter().copied());
            }
            let types = match item {
                Item::Zero { stmt, lhs } if frozen_here => {
                    self.emit_with_lhs(*stmt, lhs);
                    Vec::new()
                }
                Item::Plain(s) | Item::Zero { stmt: s, .. } => {
                    self.result.stmts.push(*s);
                    Vec::new()
                }
                Item::Active { stmt, lin, lhs, .. } => {
                    self.emit_active(k, *stmt, lin, lhs, frozen_here)
                }
            };
            self.shapes.push(types);
        }
    }

    /// Emits a copy of the assignment `stmt` with the left-hand side `lhs`
    /// (its subscripts frozen).
    fn emit_with_lhs(&mut self, stmt: StmtId, lhs: &VarRef) {
        let original = &self.ctx.p.stmts[stmt];
        let StmtKind::Assignment(a) = &original.kind else {
            unreachable!("zeroing items are assignments")
        };
        let new = Stmt {
            attrs: original.attrs.clone(),
            kind: StmtKind::Assignment(xaif_model::Assignment {
                lhs: lhs.clone(),
                rhs: a.rhs.clone(),
            }),
        };
        self.result.stmts.push(add(self.t.out, new));
    }

    /// Emits the active item `k`: its auxiliary temporaries, its partials,
    /// then the statement itself; returns the types and shapes of its
    /// right-hand side's nodes.
    fn emit_active(
        &mut self,
        k: usize,
        stmt: StmtId,
        lin: &LinStmt,
        lhs: &VarRef,
        frozen_here: bool,
    ) -> Vec<(ValueType, Shape)> {
        let types = self.ctx.infer(&lin.dag);
        let likes = LikeRefs::new(&lin.dag, &types);
        let aux_temp = self.emit_aux(lin, &types, &likes);
        self.emit_partials(k, lin, &types, &likes, &aux_temp);
        if lin.aux.is_empty() && !frozen_here {
            self.result.stmts.push(stmt);
        } else {
            self.emit_rewritten(stmt, lin, lhs, frozen_here, &aux_temp);
        }
        types
    }

    /// Assigns the subexpressions that several partials share to auxiliary
    /// temporaries, each written with the earlier ones; returns the
    /// temporary of each such node.
    fn emit_aux(
        &mut self,
        lin: &LinStmt,
        types: &[(ValueType, Shape)],
        likes: &LikeRefs,
    ) -> FxHashMap<usize, VarRef> {
        let mut aux_temp: FxHashMap<usize, VarRef> = FxHashMap::default();
        for &a in &lin.aux {
            let (ty, shape) = &types[a];
            let t = &mut *self.t;
            let temp = declare(t.out, t.names, t.scope, TempKind::Aux, *ty, shape, false);
            let rhs = {
                let named = |n: usize| {
                    if n == a {
                        None
                    } else {
                        aux_temp.get(&n).cloned()
                    }
                };
                lin.dag.to_expr(a, &named)
            };
            let like = likes.get(&lin.dag, a, types);
            assign_temp(
                t.out,
                t.names,
                &mut self.result.stmts,
                &temp,
                rhs,
                "aux",
                like.as_ref(),
            );
            aux_temp.insert(a, temp.var);
        }
        aux_temp
    }

    /// Assigns each partial of item `k` that the graph labels with a
    /// variable to a temporary of its own.
    fn emit_partials(
        &mut self,
        k: usize,
        lin: &LinStmt,
        types: &[(ValueType, Shape)],
        likes: &LikeRefs,
        aux_temp: &FxHashMap<usize, VarRef>,
    ) {
        let named = |n: usize| aux_temp.get(&n).cloned();
        for (vi, (item_k, e)) in self.graph.variables.iter().enumerate() {
            if *item_k != k {
                continue;
            }
            let EdgePartial::Instance { op, template } = &lin.edges[*e].partial else {
                continue;
            };
            let rhs = instantiate(&lin.dag, *op, template, &named);
            let shape = partial_shape(&lin.dag, *op, template, types);
            let t = &mut *self.t;
            let temp = declare(
                t.out,
                t.names,
                t.scope,
                TempKind::Lin,
                ValueType::Real,
                &shape,
                false,
            );
            let like = likes.get(&lin.dag, *op, types);
            assign_temp(
                t.out,
                t.names,
                &mut self.result.stmts,
                &temp,
                rhs,
                "elementary_partial",
                like.as_ref(),
            );
            self.lin_shapes[vi] = shape;
            self.lin_temps[vi] = Some(temp);
        }
    }

    /// Emits the active assignment `stmt` rewritten: its right-hand side
    /// reads the auxiliary temporaries, its left-hand side is the frozen
    /// one when freezing changed it.
    fn emit_rewritten(
        &mut self,
        stmt: StmtId,
        lin: &LinStmt,
        lhs: &VarRef,
        frozen_here: bool,
        aux_temp: &FxHashMap<usize, VarRef>,
    ) {
        let named = |n: usize| aux_temp.get(&n).cloned();
        let original = &self.ctx.p.stmts[stmt];
        let StmtKind::Assignment(a) = &original.kind else {
            unreachable!("active items are assignments")
        };
        let rhs = lin.dag.to_expr(lin.dag.root, &named);
        let lhs = if frozen_here {
            lhs.with_attrs(a.lhs.attrs.clone())
        } else {
            a.lhs.clone()
        };
        let new = Stmt {
            attrs: original.attrs.clone(),
            kind: StmtKind::Assignment(xaif_model::Assignment { lhs, rhs }),
        };
        self.result.stmts.push(add(self.t.out, new));
    }

    /// The shape of the value a vertex stands for (scalar when it stands
    /// for no node).
    fn shape_of_vertex(&self, v: VertexId) -> Shape {
        self.vertex_node
            .get(&v)
            .and_then(|(k, n)| self.shapes.get(*k).and_then(|s| s.get(*n)))
            .map(|(_, s)| s.clone())
            .unwrap_or(Shape::SCALAR)
    }

    /// Emits the Jacobian accumulation: each accumulation the remainder
    /// graph or several others use gets a temporary; one used once is
    /// written into its user.
    fn accumulate(&mut self, e: &Elimination) {
        let total_uses = e.acc_use_counts();
        let mut remainder_uses = vec![0usize; e.accumulations.len()];
        for edge in &e.remainder.edges {
            if let EdgeValue::Acc(a) = edge.value {
                remainder_uses[a.index()] += 1;
            }
        }
        self.acc_value = vec![None; e.accumulations.len()];
        let mut acc_expr_inline: Vec<Option<xaif_elim::Expr>> = vec![None; e.accumulations.len()];
        self.acc_shapes = vec![Shape::SCALAR; e.accumulations.len()];
        // Depth of each accumulation's expression with its inlined operands.
        let mut inline_depth: Vec<usize> = vec![0; e.accumulations.len()];
        for acc in &e.accumulations {
            let k = acc.id.index();
            let shape = expr_shape(&acc.expr, &self.lin_shapes, &self.acc_shapes);
            self.acc_shapes[k] = shape.clone();
            let depth = expr_depth(&acc.expr, &|a| {
                if acc_expr_inline[a.index()].is_some() {
                    inline_depth[a.index()]
                } else {
                    0
                }
            });
            inline_depth[k] = depth;
            // A value used once is written into its user, unless that
            // makes the expression deeper than MAX_INLINE_DEPTH (a long
            // chain of products would otherwise become one expression as
            // deep as the input).
            if total_uses[k] == 1 && remainder_uses[k] == 0 && depth < MAX_INLINE_DEPTH {
                acc_expr_inline[k] = Some(acc.expr.clone());
                continue;
            }
            let rhs = acc_to_expr(
                &acc.expr,
                &self.lin_temps,
                &self.acc_value,
                &acc_expr_inline,
            );
            let t = &mut *self.t;
            let temp = declare(
                t.out,
                t.names,
                t.scope,
                TempKind::Acc,
                ValueType::Real,
                &shape,
                false,
            );
            let like = largest_operand(
                &acc.expr,
                &self.lin_temps,
                &self.lin_shapes,
                &self.acc_value,
                &self.acc_shapes,
            );
            assign_temp(
                t.out,
                t.names,
                &mut self.result.stmts,
                &temp,
                rhs,
                "jacobian_accumulation",
                like.as_ref(),
            );
            self.acc_value[k] = Some(Factor::Var(temp.var));
        }
    }

    /// The factor a remainder edge's value stands for.
    fn factor(&self, v: &EdgeValue) -> Factor {
        match v {
            EdgeValue::Unit => Factor::Unit,
            EdgeValue::MinusOne => Factor::MinusOne,
            EdgeValue::Constant(c) => Factor::Constant(*c),
            EdgeValue::Variable(var) => Factor::Var(
                self.lin_temps[var.0 as usize]
                    .as_ref()
                    .expect("every variable label has a temporary")
                    .var
                    .clone(),
            ),
            EdgeValue::Acc(a) => self.acc_value[a.index()]
                .clone()
                .expect("remainder accumulations are stored"),
        }
    }

    /// Decides where the derivatives of the independents and dependents
    /// live: an independent's own derivative, or a saved copy when the
    /// sequence overwrites it before the propagation reads it; a
    /// dependent's own derivative. Zeroed variables are recorded.
    fn derivative_slots(&mut self) {
        let seq = self.seq;
        let mut defs_written: Vec<&VarRef> = Vec::new();
        for item in &seq.items {
            match item {
                Item::Active {
                    lhs,
                    dependent: true,
                    ..
                } => defs_written.push(lhs),
                Item::Zero { lhs, .. } => defs_written.push(lhs),
                _ => {}
            }
        }
        for (i, ind) in seq.independents.iter().enumerate() {
            let v = self.graph.independent_vertex[i];
            let aliased = !ind.after_zero
                && defs_written.iter().any(|d| {
                    crate::context::overlap(self.ctx, d, &ind.var) != crate::context::Overlap::No
                });
            let own = Slot {
                var: ind.var.clone(),
                temporary: false,
                rank: self.ctx.ref_shape(&ind.var.graph).rank,
            };
            if aliased {
                let save = self.save_slot(&ind.var);
                self.result.saves.push((save.clone(), own));
                self.slot.insert(v, save);
            } else {
                self.slot.insert(v, own);
            }
        }
        for (k, item) in seq.items.iter().enumerate() {
            match item {
                Item::Active {
                    lhs,
                    dependent: true,
                    ..
                } => {
                    if let Some(v) = self.graph.def_vertex[k] {
                        self.slot.insert(
                            v,
                            Slot {
                                var: lhs.clone(),
                                temporary: false,
                                rank: self.ctx.ref_shape(&lhs.graph).rank,
                            },
                        );
                    }
                }
                Item::Zero { lhs, .. } => self.result.zeros.push(lhs.clone()),
                _ => {}
            }
        }
    }

    /// A temporary for the saved derivative of the independent `var`,
    /// allocated like `var` when its extents are known only at run time.
    fn save_slot(&mut self, var: &VarRef) -> Slot {
        let shape = self.ctx.ref_shape(&var.graph);
        let t = &mut *self.t;
        let temp = declare(
            t.out,
            t.names,
            t.scope,
            TempKind::Prp,
            ValueType::Real,
            &shape,
            true,
        );
        if temp.allocatable {
            self.result
                .allocations
                .push((temp.var.clone(), var.clone()));
        }
        Slot {
            var: temp.var,
            temporary: true,
            rank: shape.rank,
        }
    }

    /// Where the derivative of vertex `v` lives: its slot, or a new
    /// propagation temporary for an intermediate (allocated later, by
    /// [`Self::allocate_intermediates`], when shaped at run time).
    fn slot_for(&mut self, v: VertexId) -> Slot {
        if let Some(s) = self.slot.get(&v) {
            return s.clone();
        }
        let shape = self.shape_of_vertex(v);
        let t = &mut *self.t;
        let temp = declare(
            t.out,
            t.names,
            t.scope,
            TempKind::Prp,
            ValueType::Real,
            &shape,
            true,
        );
        if temp.allocatable {
            self.unallocated.push((v, temp.var.clone()));
        }
        let s = Slot {
            var: temp.var,
            temporary: true,
            rank: shape.rank,
        };
        self.slot.insert(v, s.clone());
        s
    }

    /// The propagation steps, in topological order of the remainder graph:
    /// one per vertex with in-edges, a zero for a dependent or read vertex
    /// without any.
    fn propagate(&mut self, e: &Elimination) -> Result<(), PreaccError> {
        let graph = self.graph;
        let order = graph.lcg.topological_order()?;
        let mut incoming: FxHashMap<VertexId, Vec<&xaif_elim::RemainderEdge>> =
            FxHashMap::default();
        let mut has_out: FxHashMap<VertexId, ()> = FxHashMap::default();
        for edge in &e.remainder.edges {
            // A factor folded to zero contributes nothing.
            if edge.value == EdgeValue::Constant(0.0) {
                continue;
            }
            incoming.entry(edge.target).or_default().push(edge);
            has_out.insert(edge.source, ());
        }
        for v in order {
            let kind = graph.lcg.kind(v);
            let Some(ins) = incoming.get(&v) else {
                let read_later = has_out.contains_key(&v) && kind != Some(VertexKind::Independent);
                if (kind == Some(VertexKind::Dependent) && e.remainder.vertices[v.index()].present)
                    || read_later
                {
                    // A value whose derivative is zero (structurally or
                    // because its factors folded to zero).
                    let zero = self.slot_for(v).var;
                    self.result.zeros.push(zero);
                }
                continue;
            };
            let target = self.slot_for(v);
            let step = self.step(target, ins);
            self.result.steps.push(step);
        }
        Ok(())
    }

    /// The step setting `target` from its in-edges `ins`; records the
    /// non-constant factors it uses for taping.
    fn step(&mut self, target: Slot, ins: &[&xaif_elim::RemainderEdge]) -> Step {
        let mut terms = Vec::with_capacity(ins.len());
        for edge in ins {
            let f = self.factor(&edge.value);
            if let Factor::Var(r) = &f {
                if !self.result.factors.iter().any(|(x, _)| x == r) {
                    let shape = match &edge.value {
                        EdgeValue::Variable(var) => self.lin_shapes[var.0 as usize].clone(),
                        EdgeValue::Acc(a) => self.acc_shapes[a.index()].clone(),
                        _ => Shape::SCALAR,
                    };
                    self.result.factors.push((r.clone(), shape));
                }
            }
            terms.push((f, self.slot_for(edge.source)));
        }
        // A unit or minus-one term first: the target is then set by a
        // copy (`SetDeriv`, `SetNegDeriv`), which costs nothing.
        if let Some(at) = terms
            .iter()
            .position(|(f, _)| matches!(f, Factor::Unit | Factor::MinusOne))
        {
            let unit = terms.remove(at);
            terms.insert(0, unit);
        }
        Step { target, terms }
    }

    /// Allocates each propagation temporary shaped at run time like a
    /// reference of the vertex's subexpression, or else like a source of
    /// the same rank of the step that sets it.
    fn allocate_intermediates(&mut self) {
        let seq = self.seq;
        for (v, temp) in std::mem::take(&mut self.unallocated) {
            let from_expression =
                self.vertex_node
                    .get(&v)
                    .and_then(|&(k, n)| match &seq.items[k] {
                        Item::Active { lin, .. } => like_ref(&lin.dag, n, &self.shapes[k]),
                        _ => None,
                    });
            // Otherwise a source of the same rank of the step that sets it.
            let rank = self.shape_of_vertex(v).rank;
            let from_sources = || {
                self.result
                    .steps
                    .iter()
                    .filter(|s| s.target.var == temp)
                    .flat_map(|s| s.terms.iter())
                    .map(|(_, src)| &src.var)
                    .find(|r| self.ctx.ref_shape(&r.graph).rank == rank)
                    .cloned()
            };
            if let Some(like) = from_expression.or_else(from_sources) {
                self.result.allocations.push((temp, like));
            }
        }
    }
}

/// For every node of a right-hand side, its [`like_ref`] (the first
/// variable reference of its rank reached through elementwise operations
/// of that rank), built in one pass: asking [`like_ref`] node by node
/// walked the node's whole subexpression each time, quadratic in the depth
/// of an array-valued expression.
struct LikeRefs {
    /// The node holding the reference, for each node reachable from the
    /// root; `None` for the others.
    first: Vec<Option<Option<usize>>>,
}

impl LikeRefs {
    fn new(dag: &crate::dag::Dag, types: &[(ValueType, Shape)]) -> LikeRefs {
        let mut first: Vec<Option<Option<usize>>> = vec![None; dag.nodes.len()];
        if types.iter().all(|(_, s)| s.rank == 0) {
            // All scalar: no temporary needs a model.
            return LikeRefs { first };
        }
        // Arguments before users: a node takes the first of its arguments
        // of its own rank that has one, which is what the walk from it
        // meets first.
        let rank = |n: usize| types.get(n).map_or(0, |(_, s)| s.rank);
        for n in dag.postorder(dag.root) {
            let want = rank(n);
            let found = if want == 0 {
                None
            } else {
                match &dag.nodes[n] {
                    Node::Var(_) => Some(n),
                    Node::Op { attrs, args, .. }
                        if elementwise(attrs.get("name").unwrap_or("")) =>
                    {
                        args.iter()
                            .filter(|&&a| rank(a) == want)
                            .find_map(|&a| first[a].flatten())
                    }
                    _ => None,
                }
            };
            first[n] = Some(found);
        }
        LikeRefs { first }
    }

    /// [`like_ref`] of `n`, from the table when `n` is in it.
    fn get(&self, dag: &crate::dag::Dag, n: usize, types: &[(ValueType, Shape)]) -> Option<VarRef> {
        match self.first.get(n) {
            Some(Some(found)) => match &dag.nodes[(*found)?] {
                Node::Var(r) => Some(r.clone()),
                _ => None,
            },
            _ => like_ref(dag, n, types),
        }
    }
}

/// A variable reference among the node's arguments with the node's shape,
/// for allocating a temporary of that shape at run time.
fn like_ref(dag: &crate::dag::Dag, n: usize, types: &[(ValueType, Shape)]) -> Option<VarRef> {
    let want = types.get(n)?.1.rank;
    if want == 0 {
        return None;
    }
    // Only through elementwise operations, whose array operands have the
    // result's shape: an inquiry's or a reduction's argument does not.
    let mut stack = vec![n];
    while let Some(m) = stack.pop() {
        if types[m].1.rank != want {
            continue;
        }
        match &dag.nodes[m] {
            Node::Var(r) => return Some(r.clone()),
            Node::Op { attrs, args, .. } if elementwise(attrs.get("name").unwrap_or("")) => {
                stack.extend(args.iter().rev().copied());
            }
            _ => {}
        }
    }
    None
}

/// Whether an intrinsic applies elementwise (its array operands have the
/// result's shape).
fn elementwise(name: &str) -> bool {
    !matches!(
        name,
        "size"
            | "lbound"
            | "ubound"
            | "len"
            | "present"
            | "allocated"
            | "sum_arr"
            | "nc_maxval"
            | "nc_minval"
            | "maxval"
            | "minval"
            | "maxloc_arr"
            | "minloc_arr"
            | "shape_arr"
            | "transpose_arr"
            | "reshape_arr"
            | "transfer"
            | "trim"
            | "scan"
    )
}

fn partial_shape(
    dag: &crate::dag::Dag,
    op: usize,
    template: &Template,
    types: &[(ValueType, Shape)],
) -> Shape {
    let args: &[usize] = match &dag.nodes[op] {
        Node::Op { args, .. } => args,
        _ => &[],
    };
    let mut best = Shape::SCALAR;
    for k in template.arguments() {
        let node = if k == 0 { op } else { args[k - 1] };
        let s = &types[node].1;
        if s.rank > best.rank || (s.rank == best.rank && best.extents.is_none()) {
            best = s.clone();
        }
    }
    best
}

/// How deep an accumulation expression may grow by writing single-use
/// accumulations into their users; deeper values are stored in
/// temporaries. Far above what the graphs of real basic blocks need, it
/// keeps generated expressions (and the code that writes them) shallow.
pub const MAX_INLINE_DEPTH: usize = 64;

/// The height of `e`, an inlined accumulation operand counting
/// `inlined(acc)` levels. Accumulation expressions are small trees (a
/// product or an absorption), so the recursion is bounded.
fn expr_depth(e: &xaif_elim::Expr, inlined: &dyn Fn(AccId) -> usize) -> usize {
    use xaif_elim::Expr as E;
    match e {
        E::Leaf(Operand::Acc(a)) => 1 + inlined(*a),
        E::Leaf(_) => 1,
        E::Neg(x) => 1 + expr_depth(x, inlined),
        E::Mul(x, y) | E::Add(x, y) | E::Sub(x, y) | E::Div(x, y) => {
            1 + expr_depth(x, inlined).max(expr_depth(y, inlined))
        }
    }
}

fn expr_shape(e: &xaif_elim::Expr, lin: &[Shape], acc: &[Shape]) -> Shape {
    let mut best = Shape::SCALAR;
    e.for_each_operand(&mut |o| {
        let s = match o {
            Operand::Constant(_) => Shape::SCALAR,
            Operand::Variable(v) => lin[v.0 as usize].clone(),
            Operand::Acc(a) => acc[a.index()].clone(),
        };
        if s.rank > best.rank {
            best = s;
        }
    });
    best
}

fn largest_operand(
    e: &xaif_elim::Expr,
    lin_temps: &[Option<Temp>],
    lin_shapes: &[Shape],
    acc_value: &[Option<Factor>],
    acc_shapes: &[Shape],
) -> Option<VarRef> {
    let mut best: Option<(usize, VarRef)> = None;
    e.for_each_operand(&mut |o| {
        let candidate = match o {
            Operand::Variable(v) => lin_temps[v.0 as usize]
                .as_ref()
                .map(|t| (lin_shapes[v.0 as usize].rank, t.var.clone())),
            Operand::Acc(a) => match &acc_value[a.index()] {
                Some(Factor::Var(r)) => Some((acc_shapes[a.index()].rank, r.clone())),
                _ => None,
            },
            Operand::Constant(_) => None,
        };
        if let Some((rank, r)) = candidate {
            if rank > 0 && best.as_ref().is_none_or(|(b, _)| rank > *b) {
                best = Some((rank, r));
            }
        }
    });
    best.map(|(_, r)| r)
}

fn acc_to_expr(
    e: &xaif_elim::Expr,
    lin: &[Option<Temp>],
    acc: &[Option<Factor>],
    inline: &[Option<xaif_elim::Expr>],
) -> Expr {
    fn go(
        e: &xaif_elim::Expr,
        b: &mut ExprBuilder,
        lin: &[Option<Temp>],
        acc: &[Option<Factor>],
        inline: &[Option<xaif_elim::Expr>],
    ) -> usize {
        use xaif_elim::Expr as E;
        match e {
            E::Leaf(Operand::Constant(c)) => b.real(*c),
            E::Leaf(Operand::Variable(v)) => b.reference(&crate::temps::value_ref(
                &lin[v.0 as usize].as_ref().expect("temporary").var,
            )),
            E::Leaf(Operand::Acc(a)) => leaf_acc(*a, b, lin, acc, inline),
            E::Neg(x) => {
                let x = go(x, b, lin, acc, inline);
                b.intrinsic("minus_scal", &[x])
            }
            E::Mul(x, y) | E::Add(x, y) | E::Sub(x, y) | E::Div(x, y) => {
                let name = match e {
                    E::Mul(..) => "mul_scal_scal",
                    E::Add(..) => "add_scal_scal",
                    E::Div(..) => "div_scal_scal",
                    _ => "sub_scal_scal",
                };
                let x = go(x, b, lin, acc, inline);
                let y = go(y, b, lin, acc, inline);
                b.intrinsic(name, &[x, y])
            }
        }
    }
    fn leaf_acc(
        a: AccId,
        b: &mut ExprBuilder,
        lin: &[Option<Temp>],
        acc: &[Option<Factor>],
        inline: &[Option<xaif_elim::Expr>],
    ) -> usize {
        if let Some(x) = &inline[a.index()] {
            return go(x, b, lin, acc, inline);
        }
        match &acc[a.index()] {
            Some(Factor::Var(r)) => b.reference(&crate::temps::value_ref(r)),
            Some(Factor::Constant(c)) => b.real(*c),
            Some(Factor::Unit) => b.real(1.0),
            Some(Factor::MinusOne) => b.real(-1.0),
            None => {
                unreachable!("an accumulation reads only earlier, stored or inlined, accumulations")
            }
        }
    }
    let mut b = ExprBuilder::new();
    go(e, &mut b, lin, acc, inline);
    b.finish()
}

#[cfg(test)]
mod like_tests {
    use super::*;
    use crate::dag::Dag;
    use xaif_model::Attrs;

    /// The one-pass table gives what the walk from each node gives, on
    /// random DAGs with shared nodes and variables of mixed ranks.
    #[test]
    fn the_table_agrees_with_the_walk() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..200 {
            let mut nodes = Vec::new();
            let mut types = Vec::new();
            let leaves = 1 + next(5);
            for k in 0..leaves {
                let attrs = Attrs::from_pairs([("vertex_id", k.to_string())]);
                nodes.push(Node::Var(VarRef {
                    attrs,
                    graph: Default::default(),
                }));
                types.push((
                    ValueType::Real,
                    Shape {
                        rank: next(3),
                        extents: None,
                    },
                ));
            }
            for _ in 0..1 + next(30) {
                let args: Vec<usize> = (0..1 + next(3)).map(|_| next(nodes.len())).collect();
                nodes.push(Node::Op {
                    attrs: Attrs::new(),
                    boolean: false,
                    args,
                });
                types.push((
                    ValueType::Real,
                    Shape {
                        rank: next(3),
                        extents: None,
                    },
                ));
            }
            let dag = Dag {
                root: nodes.len() - 1,
                nodes,
            };
            let table = LikeRefs::new(&dag, &types);
            for n in 0..dag.nodes.len() {
                assert_eq!(
                    table.get(&dag, n, &types),
                    like_ref(&dag, n, &types),
                    "node {n} of {dag:?}"
                );
            }
        }
    }
}
