//! To-be-recorded analysis (seed §5): which values the adjoint needs that
//! the forward sweep may overwrite.
//!
//! Bottom-up, each statement, block, loop and routine gets `Req` (values its
//! adjoint needs that are still in memory after it) and `Kill` (locations it
//! definitely overwrites); calls use their callee's summary through the
//! formal ↔ actual binding. Top-down, `InReq`/`OutReq` (values some earlier
//! adjoint needs) flow forward from the entry of the top routine; an
//! assignment that overwrites a location of `InReq` ∪ its own required
//! reads must *record* it ([`StmtTbr::recorded`], the paper's PUSH before
//! the overwrite).
//!
//! The adjoint code generator may also tape at the reading statement instead
//! (the reference engine pushes index values where they are used). For that
//! a second pair of analyses computes what each routine may write (bottom
//! up) and what may be written after each statement until the adjoint sweep
//! starts (top down, backward): [`StmtTbr::to_tape`] is the part of a
//! statement's required reads that may be overwritten before its adjoint
//! runs. Both are stated for the split reversal of the paper (the whole
//! forward sweep, then the whole adjoint sweep); [`CallSiteTbr`] adds what a
//! joint reversal of a call needs.
//!
//! # Using the results from the adjoint code generator
//!
//! ```text
//! let a = xaif_dataflow::analyze(&program, &Config { tbr: true, ..Default::default() })?;
//! let tbr = a.tbr.as_ref().unwrap();
//! for each statement s of the taping sweep:
//!     let t = tbr.stmt(s)?;                 // None: unreachable or not analysed
//!     // Strategy A (paper): push the old value of each location of
//!     // t.recorded just before s, pop it before the adjoint of s.
//!     // Strategy B (tape at the use): push the values of t.to_tape right
//!     // after evaluating s's operands; t.reasons tells which reference
//!     // (an index of `x`, an operand of `sin_scal`) each one is.
//!     a.facts.describe(t.routine, &t.to_tape) // names, e.g. ["i", "x"]
//! for each call statement c:
//!     let cs = tbr.call_site(c)?;
//!     // split mode: cs.to_tape are callee requirements live after the
//!     // call that the caller may overwrite before the reversal;
//!     // joint mode: cs.checkpoint are the callee's reads that may change
//!     // between the call and its re-execution.
//! ```

use rustc_hash::FxHashMap;
use xaif_model::{
    Assignment, CfgVertex, Expr, ExprGraph, ExprVertexKind, Routine, RoutineId, SecondaryMap, Stmt,
    StmtId, StmtKind,
};

use crate::activity::Activity;
use crate::facts::{read_slots, Effect, ProgramFacts};
use crate::framework::{
    bottom_up, summarize, top_down, Contribution, Direction, Propagation, Record, RoutineSummary,
    Solver, Summaries,
};
use crate::loc::{for_each_ref_in_expr, for_each_subscript_ref, Universe};
use crate::LocSet;

/// Why a value is required by an adjoint.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// It is an operand of a nonlinear operation whose partial derivatives
    /// need it (`op` is the intrinsic's name, e.g. `sin_scal`,
    /// `mul_scal_scal`).
    Operand {
        /// The operation.
        op: String,
    },
    /// It occurs in a subscript of a reference to `array` whose adjoint is
    /// addressed with it.
    Index {
        /// The array's `symbol_id`.
        array: String,
    },
    /// The adjoint of the called routine needs it.
    Callee {
        /// The callee's Fortran name.
        routine: String,
    },
    /// It is an argument of a call whose effect is unknown (no body, or an
    /// inlinable call) and that is active.
    Opaque,
}

/// One group of required values with its reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// The required slots.
    pub slots: LocSet,
    /// Why.
    pub reason: Reason,
}

/// `Req` and `Kill` of a structure (seed §5.1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReqKill {
    /// Values required by the structure's adjoint, still live after it.
    pub req: LocSet,
    /// Locations definitely overwritten.
    pub kill: LocSet,
}

/// TBR facts of one statement, in its routine's universe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StmtTbr {
    /// The routine holding the statement.
    pub routine: RoutineId,
    /// Whether the statement has an adjoint that needs anything.
    pub active: bool,
    /// The values the statement reads that its adjoint needs (before its
    /// own overwriting: `Req(a) ∪ Req(exp)`; for a call, the callee's
    /// `Req` plus the actuals' subscripts).
    pub required: LocSet,
    /// Why each group of [`StmtTbr::required`] is needed.
    pub reasons: Vec<Requirement>,
    /// The statement's summary.
    pub summary: ReqKill,
    /// Values required by earlier adjoints, just before the statement.
    pub in_req: LocSet,
    /// The same just after.
    pub out_req: LocSet,
    /// Locations the statement overwrites whose old value some adjoint
    /// needs: push them before the statement (the paper's flags).
    pub recorded: LocSet,
    /// Locations that may be written after the statement and before the
    /// adjoint sweep starts.
    pub overwritten_later: LocSet,
    /// The required reads that may be overwritten (by the statement itself
    /// or later) before the statement's adjoint runs: tape them at the
    /// statement.
    pub to_tape: LocSet,
}

/// TBR facts of a call site, in the caller's universe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallSiteTbr {
    /// The callee.
    pub callee: RoutineId,
    /// Values live after the call that the callee's adjoint needs
    /// (`Req(S)` translated to the caller).
    pub callee_required: LocSet,
    /// Locations the callee may read.
    pub callee_reads: LocSet,
    /// Locations the callee may write.
    pub callee_writes: LocSet,
    /// Locations that may be written between the call's return and the
    /// start of the adjoint sweep.
    pub overwritten_later: LocSet,
    /// Split reversal: callee requirements the caller may overwrite before
    /// the callee's adjoint runs.
    pub to_tape: LocSet,
    /// Joint reversal: the callee's reads that may have changed when it is
    /// re-run from the call's reversal point (it overwrites them itself, or
    /// the caller does later); checkpoint them at the call.
    pub checkpoint: LocSet,
}

/// TBR facts of a routine, in its own universe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutineTbr {
    /// `Req(S)` and `Kill(S)` (`None`: the routine never returns).
    pub summary: Option<ReqKill>,
    /// `InReq(S)`: values required on entry, over all calling contexts.
    pub in_req: LocSet,
    /// Locations the routine or its callees may write.
    pub may_write: LocSet,
    /// Locations the routine or its callees may read.
    pub may_read: LocSet,
    /// Locations that may be written after the routine returns and before
    /// the adjoint sweep, over all calling contexts.
    pub overwritten_after: LocSet,
}

/// `InReq` and `OutReq` of a CFG vertex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockTbr {
    /// Required before the vertex.
    pub in_req: LocSet,
    /// Required after it.
    pub out_req: LocSet,
}

/// The result of TBR analysis, in side tables keyed by model handles.
#[derive(Clone, Debug, Default)]
pub struct Tbr {
    /// Per statement.
    pub stmts: SecondaryMap<Stmt, StmtTbr>,
    /// Per call statement to a routine with a body.
    pub calls: SecondaryMap<Stmt, CallSiteTbr>,
    /// Per CFG vertex.
    pub vertices: SecondaryMap<CfgVertex, BlockTbr>,
    /// Per analysed routine.
    pub routines: SecondaryMap<Routine, RoutineTbr>,
}

impl Tbr {
    /// What statement `s` needs taped ("at this statement, which values it
    /// reads that a derivative needs may be overwritten before the adjoint
    /// sweep needs them"), and what it must record before overwriting.
    pub fn stmt(&self, s: StmtId) -> Option<&StmtTbr> {
        self.stmts.get(s)
    }

    /// What the callee's adjoint needs at call `s` and what may be
    /// overwritten between the call and its reversal.
    pub fn call_site(&self, s: StmtId) -> Option<&CallSiteTbr> {
        self.calls.get(s)
    }

    /// The routine's summaries and calling-context facts.
    pub fn routine(&self, r: RoutineId) -> Option<&RoutineTbr> {
        self.routines.get(r)
    }
}

/// Per-statement requirement of an assignment or opaque statement.
#[derive(Clone, Debug, Default)]
struct Local {
    active: bool,
    required: LocSet,
    reasons: Vec<Requirement>,
    kill: LocSet,
}

struct ReqProblem<'a, 'p> {
    facts: &'a ProgramFacts<'p>,
    routine: RoutineId,
    local: &'a FxHashMap<StmtId, Local>,
    table: &'a FxHashMap<RoutineId, RoutineSummary<ReqKill>>,
}

impl ReqProblem<'_, '_> {
    /// The statement's summary and its required reads (before its kill).
    fn stmt_parts(&self, s: StmtId) -> Option<(ReqKill, LocSet)> {
        let e = self.facts.effect(self.routine, s);
        let n = self.facts.routines[&self.routine].universe.len();
        if let Some(call) = &e.call {
            let callee = self.table.get(&call.callee)?.summary.as_ref()?;
            let kill = call.kills(&callee.kill, n);
            let mut required = call.to_caller(&callee.req, n);
            if let Some(l) = self.local.get(&s) {
                required.union_with(&l.required);
            }
            let mut req = required.clone();
            req.difference_with(&kill);
            return Some((ReqKill { req, kill }, required));
        }
        let l = self.local.get(&s)?;
        let mut req = l.required.clone();
        req.difference_with(&l.kill);
        Some((
            ReqKill {
                req,
                kill: l.kill.clone(),
            },
            l.required.clone(),
        ))
    }
}

impl Summaries for ReqProblem<'_, '_> {
    type Summary = ReqKill;

    fn identity(&self) -> ReqKill {
        ReqKill::default()
    }

    fn stmt(&self, s: StmtId) -> Option<ReqKill> {
        match self.stmt_parts(s) {
            Some((rk, _)) => Some(rk),
            None if self.facts.effect(self.routine, s).call.is_some() => None,
            None => Some(ReqKill::default()),
        }
    }

    fn seq(&self, a: &ReqKill, b: &ReqKill) -> ReqKill {
        let mut req = a.req.clone();
        req.difference_with(&b.kill);
        req.union_with(&b.req);
        let mut kill = a.kill.clone();
        kill.union_with(&b.kill);
        ReqKill { req, kill }
    }

    fn join(&self, into: &mut ReqKill, other: &ReqKill) {
        into.req.union_with(&other.req);
        into.kill.intersect_with(&other.kill);
    }

    fn star(&self, body: &ReqKill) -> ReqKill {
        ReqKill {
            req: body.req.clone(),
            kill: LocSet::new(),
        }
    }
}

impl Propagation for ReqProblem<'_, '_> {
    type Fact = LocSet;

    fn direction(&self) -> Direction {
        Direction::Forward
    }

    fn bottom(&self) -> LocSet {
        LocSet::new()
    }

    fn join_fact(&self, into: &mut LocSet, other: &LocSet) -> bool {
        into.union_with(other)
    }

    fn apply(&self, s: &ReqKill, fact: &LocSet) -> LocSet {
        let mut f = fact.clone();
        f.difference_with(&s.kill);
        f.union_with(&s.req);
        f
    }
}

/// Which per-statement set a [`UnionProblem`] collects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Collect {
    Writes,
    Reads,
}

/// May-write or may-read sets: summaries are plain unions.
struct UnionProblem<'a, 'p> {
    facts: &'a ProgramFacts<'p>,
    routine: RoutineId,
    table: &'a FxHashMap<RoutineId, RoutineSummary<LocSet>>,
    collect: Collect,
}

impl Summaries for UnionProblem<'_, '_> {
    type Summary = LocSet;

    fn identity(&self) -> LocSet {
        LocSet::new()
    }

    fn stmt(&self, s: StmtId) -> Option<LocSet> {
        let e = self.facts.effect(self.routine, s);
        let own: &[u32] = match self.collect {
            Collect::Writes => &e.writes,
            Collect::Reads => &e.reads,
        };
        let mut out: LocSet = own.iter().copied().collect();
        if let Some(call) = &e.call {
            let callee = self.table.get(&call.callee)?.summary.as_ref()?;
            let n = self.facts.routines[&self.routine].universe.len();
            out.union_with(&call.to_caller(callee, n));
        }
        Some(out)
    }

    fn seq(&self, a: &LocSet, b: &LocSet) -> LocSet {
        let mut x = a.clone();
        x.union_with(b);
        x
    }

    fn join(&self, into: &mut LocSet, other: &LocSet) {
        into.union_with(other);
    }

    fn star(&self, body: &LocSet) -> LocSet {
        body.clone()
    }
}

impl Propagation for UnionProblem<'_, '_> {
    type Fact = LocSet;

    fn direction(&self) -> Direction {
        Direction::Backward
    }

    fn bottom(&self) -> LocSet {
        LocSet::new()
    }

    fn join_fact(&self, into: &mut LocSet, other: &LocSet) -> bool {
        into.union_with(other)
    }

    fn apply(&self, s: &LocSet, fact: &LocSet) -> LocSet {
        let mut f = fact.clone();
        f.union_with(s);
        f
    }
}

/// Computes the local requirements of every non-call statement (and the
/// subscript requirements of calls) from activity.
fn local_requirements(
    facts: &ProgramFacts,
    act: &Activity,
    r: RoutineId,
) -> FxHashMap<StmtId, Local> {
    let p = facts.program;
    let rf = &facts.routines[&r];
    let u = &rf.universe;
    let mut out = FxHashMap::default();
    for node in &rf.flow.nodes {
        for &s in &node.stmts {
            let Some(sa) = act.stmts.get(s) else {
                continue;
            };
            let e = facts.effect(r, s);
            let writes: LocSet = e.writes.iter().copied().collect();
            let mut l = Local::default();
            if e.must {
                l.kill = writes.clone();
            }
            match &p.stmts[s].kind {
                StmtKind::Assignment(a) => {
                    let lhs_useful = writes.intersects(&sa.out_useful);
                    let mut varied = sa.in_vary.clone();
                    varied.union_with(&sa.out_vary);
                    let lhs_active = lhs_useful && writes.intersects(&varied);
                    let sc = Scope { facts, r, u };
                    assignment_requirements(&sc, a, sa, (lhs_useful, lhs_active), &mut l);
                }
                StmtKind::SubroutineCall(_) if e.call.is_some() => {
                    let call = e.call.as_ref().expect("checked");
                    if sa.active && !call.index_reads.is_empty() {
                        let slots: LocSet = call.index_reads.iter().copied().collect();
                        l.required.union_with(&slots);
                        l.reasons.push(Requirement {
                            slots,
                            reason: Reason::Index {
                                array: "an actual argument".to_string(),
                            },
                        });
                        l.active = true;
                    }
                }
                _ if e.opaque && sa.active => {
                    let slots: LocSet = e.reads.iter().copied().collect();
                    l.required.union_with(&slots);
                    l.reasons.push(Requirement {
                        slots,
                        reason: Reason::Opaque,
                    });
                    l.active = true;
                }
                _ => {}
            }
            out.insert(s, l);
        }
    }
    out
}

fn push_req(l: &mut Local, slots: LocSet, reason: Reason) {
    if slots.is_empty() {
        return;
    }
    l.required.union_with(&slots);
    if let Some(existing) = l.reasons.iter_mut().find(|x| x.reason == reason) {
        existing.slots.union_with(&slots);
    } else {
        l.reasons.push(Requirement { slots, reason });
    }
}

/// Where an assignment's requirements are computed.
struct Scope<'a, 'p> {
    facts: &'a ProgramFacts<'p>,
    r: RoutineId,
    u: &'a Universe,
}

/// The requirements of an assignment: the subscripts of an active
/// left-hand side (its adjoint is addressed with them), and, when the
/// left-hand side is useful and the right-hand side active, the operands
/// of the nonlinear operations on an active path and the subscripts of
/// its active references.
fn assignment_requirements(
    sc: &Scope,
    a: &Assignment,
    sa: &crate::activity::StmtActivity,
    (lhs_useful, lhs_active): (bool, bool),
    l: &mut Local,
) {
    if lhs_active {
        let array = lhs_symbol_name(sc.facts.program, &a.lhs.graph);
        push_req(l, lhs_index_slots(sc, a), Reason::Index { array });
        l.active = true;
    }
    if !lhs_useful {
        return;
    }
    let e = &a.rhs;
    let Some(g) = crate::loc::expr_graph(e) else {
        return;
    };
    // Every pass over the expression is bottom-up in this order or a walk
    // with an explicit stack: expressions are flat in XAIF, so their depth
    // is bounded only by the file.
    let order = g.postorder();
    let active = vertex_activity(sc, e, &g, &order, &sa.in_vary);
    if active[g.root] != Some(true) {
        return;
    }
    l.active = true;
    let (own_slots, reads_any) = own_slots(sc, e, &g, &order);
    let pending = gather_requirements(sc, e, &g, &active, &reads_any);
    settle_requirements(pending, &own_slots, &g, l);
}

/// The slots the subscripts of an assignment's left-hand side read.
fn lhs_index_slots(sc: &Scope, a: &Assignment) -> LocSet {
    let mut slots = LocSet::new();
    let mut refs = Vec::new();
    for_each_subscript_ref(&a.lhs.graph, &mut |g| refs.push(g));
    for g in refs {
        if let Some(acc) = sc.facts.res.lookup(sc.r, g) {
            slots.union_with(&read_slots(sc.u, &acc).into_iter().collect());
        }
    }
    slots
}

/// Activity of each expression vertex (in `order`, bottom-up): it
/// contains a variable varied before the statement (`vary`) in a
/// differentiable position.
fn vertex_activity(
    sc: &Scope,
    e: &Expr,
    g: &ExprGraph,
    order: &[usize],
    vary: &LocSet,
) -> Vec<Option<bool>> {
    let (facts, r, u) = (sc.facts, sc.r, sc.u);
    let mut active = vec![None::<bool>; e.vertices.len()];
    for &v in order {
        let vertex = &e.vertices[v];
        let differentiable_read = |rg: &xaif_model::RefGraph| {
            facts.res.lookup(r, rg).is_some_and(|acc| {
                facts.storages[acc.storage.index()].differentiable
                    && read_slots(u, &acc).iter().any(|s| vary.contains(*s))
            })
        };
        let x = match &vertex.kind {
            ExprVertexKind::VariableReference(rg) => differentiable_read(rg),
            ExprVertexKind::FunctionCall(args) => {
                args.iter().any(|a| differentiable_read(&a.graph))
            }
            ExprVertexKind::Intrinsic => {
                let name = vertex.attrs.get("name").unwrap_or("");
                let arg_active = |w: &usize| active[*w] == Some(true);
                if crate::facts::non_differentiable(name) {
                    false
                } else if name == "sign_scal_scal" {
                    g.args[v].first().is_some_and(arg_active)
                } else {
                    g.args[v].iter().any(arg_active)
                }
            }
            _ => false,
        };
        active[v] = Some(x);
    }
    active
}

/// The slots each expression vertex reads itself (its own references),
/// and whether the subexpression rooted at each vertex reads any slot at
/// all; computed once, bottom-up in `order`.
fn own_slots(sc: &Scope, e: &Expr, g: &ExprGraph, order: &[usize]) -> (Vec<LocSet>, Vec<bool>) {
    let n = e.vertices.len();
    let mut own_slots: Vec<LocSet> = vec![LocSet::new(); n];
    let mut reads_any = vec![false; n];
    for &v in order {
        own_slots[v] = vertex_own_slots(sc, e, v);
        reads_any[v] = !own_slots[v].is_empty() || g.args[v].iter().any(|&w| reads_any[w]);
    }
    (own_slots, reads_any)
}

/// The slots vertex `v` reads itself: its reference's, or its function
/// call arguments'.
fn vertex_own_slots(sc: &Scope, e: &Expr, v: usize) -> LocSet {
    let mut out = LocSet::new();
    let mut refs = Vec::new();
    match &e.vertices[v].kind {
        ExprVertexKind::VariableReference(rg) => {
            crate::loc::for_each_ref(rg, &mut |x| refs.push(x));
        }
        ExprVertexKind::FunctionCall(args) => {
            for a in args {
                crate::loc::for_each_ref(&a.graph, &mut |x| refs.push(x));
            }
        }
        _ => {}
    }
    for x in refs {
        if let Some(acc) = sc.facts.res.lookup(sc.r, x) {
            for s in read_slots(sc.u, &acc) {
                out.insert(s);
            }
        }
    }
    out
}

/// A requirement of an assignment's right-hand side, in the order met:
/// slots already known, or the roots of subexpressions whose variables
/// (VARs of the seed) are required.
///
/// Requirements on the variables of subexpressions are gathered per reason
/// as the roots of those subexpressions and unioned at the end with one
/// walk per reason ([`settle_requirements`]), so a chain of nonlinear
/// operations costs time linear in its length, not quadratic. A reason
/// takes the place of its first non-empty contribution, as if every
/// contribution were added when met.
enum Pending {
    Slots(LocSet, Reason),
    Roots(Vec<usize>, Reason),
}

/// The requirements gathered so far, with the place of each reason's
/// subexpression roots.
struct Gather<'r> {
    pending: Vec<Pending>,
    operand_reason: FxHashMap<Reason, usize>,
    reads_any: &'r [bool],
}

impl Gather<'_> {
    /// Requires the variables of the subexpressions rooted at `roots`, for
    /// `reason`, when they read anything.
    fn vars_of(&mut self, roots: &[usize], reason: Reason) {
        if !roots.iter().any(|&w| self.reads_any[w]) {
            return;
        }
        match self.operand_reason.get(&reason) {
            Some(&i) => {
                if let Pending::Roots(list, _) = &mut self.pending[i] {
                    list.extend_from_slice(roots);
                }
            }
            None => {
                self.operand_reason
                    .insert(reason.clone(), self.pending.len());
                self.pending.push(Pending::Roots(roots.to_vec(), reason));
            }
        }
    }

    /// The requirements of the active intrinsic `name` with arguments
    /// `args`: none for linear operations, the other factor's variables
    /// for a product with an active factor, the divisor's (and for an
    /// active divisor the dividend's) for a quotient, every operand's
    /// otherwise.
    fn intrinsic(&mut self, name: &str, args: &[usize], active: &[Option<bool>]) {
        let act_arg = |i: usize| args.get(i).is_some_and(|&w| active[w] == Some(true));
        let op = || Reason::Operand {
            op: name.to_string(),
        };
        match name {
            "add_scal_scal" | "sub_scal_scal" | "minus_scal" | "real_scal" | "sum_arr"
            | "transpose_arr" | "reshape_arr" => {}
            "mul_scal_scal" if args.len() == 2 => {
                if act_arg(0) {
                    self.vars_of(&[args[1]], op());
                }
                if act_arg(1) {
                    self.vars_of(&[args[0]], op());
                }
            }
            "div_scal_scal" if args.len() == 2 => {
                if act_arg(0) {
                    self.vars_of(&[args[1]], op());
                }
                if act_arg(1) {
                    self.vars_of(&[args[0], args[1]], op());
                }
            }
            _ => self.vars_of(args, op()),
        }
    }
}

/// Walks the active vertices of the right-hand side from its root (an
/// explicit stack) and gathers their requirements: the subscripts of
/// active references, the operands of calls and nonlinear intrinsics.
fn gather_requirements(
    sc: &Scope,
    e: &Expr,
    g: &ExprGraph,
    active: &[Option<bool>],
    reads_any: &[bool],
) -> Vec<Pending> {
    let p = sc.facts.program;
    let mut gather = Gather {
        pending: Vec::new(),
        operand_reason: FxHashMap::default(),
        reads_any,
    };
    let mut stack = vec![g.root];
    let mut seen = vec![false; e.vertices.len()];
    while let Some(v) = stack.pop() {
        if std::mem::replace(&mut seen[v], true) {
            continue;
        }
        if active[v] != Some(true) {
            continue;
        }
        let vertex = &e.vertices[v];
        let args = &g.args[v];
        match &vertex.kind {
            ExprVertexKind::VariableReference(rg) => {
                let mut slots = LocSet::new();
                let mut refs = Vec::new();
                for_each_subscript_ref(rg, &mut |x| refs.push(x));
                insert_read_slots(sc.facts, sc.r, sc.u, refs, &mut slots);
                if !slots.is_empty() {
                    gather.pending.push(Pending::Slots(
                        slots,
                        Reason::Index {
                            array: lhs_symbol_name(p, rg),
                        },
                    ));
                }
            }
            ExprVertexKind::FunctionCall(_) => {
                gather.vars_of(
                    &[v],
                    Reason::Operand {
                        op: vertex.attrs.get("symbol_id").unwrap_or("?").to_string(),
                    },
                );
            }
            ExprVertexKind::Intrinsic => {
                gather.intrinsic(vertex.attrs.get("name").unwrap_or(""), args, active);
            }
            _ => {}
        }
        stack.extend(args.iter().copied().filter(|&w| active[w] == Some(true)));
    }
    gather.pending
}

/// Adds the gathered requirements to `l` in order, with one walk per
/// operand reason over the subexpressions it collected.
fn settle_requirements(pending: Vec<Pending>, own_slots: &[LocSet], g: &ExprGraph, l: &mut Local) {
    let mut mark = vec![usize::MAX; own_slots.len()];
    for (k, item) in pending.into_iter().enumerate() {
        match item {
            Pending::Slots(slots, reason) => push_req(l, slots, reason),
            Pending::Roots(roots, reason) => {
                let mut slots = LocSet::new();
                let mut walk = roots;
                while let Some(w) = walk.pop() {
                    if std::mem::replace(&mut mark[w], k) == k {
                        continue;
                    }
                    slots.union_with(&own_slots[w]);
                    walk.extend(g.args[w].iter().copied());
                }
                push_req(l, slots, reason);
            }
        }
    }
}

fn lhs_symbol_name(p: &xaif_model::Program, g: &xaif_model::RefGraph) -> String {
    let _ = p;
    g.chain()
        .first()
        .and_then(|v| v.attrs.get("symbol_id"))
        .unwrap_or("?")
        .to_string()
}

/// May-write (`Collect::Writes`) or may-read summaries of every routine,
/// bottom up.
pub(crate) fn union(
    facts: &ProgramFacts,
    solver: Solver,
    collect: Collect,
) -> FxHashMap<RoutineId, RoutineSummary<LocSet>> {
    bottom_up(&facts.callgraph, |r, table| {
        let prob = UnionProblem {
            facts,
            routine: r,
            table,
            collect,
        };
        summarize(&prob, &facts.flows[&r], solver)
    })
}

/// What may be written after each statement and routine until the adjoint
/// sweep starts, over all calling contexts (top down, backward), from the
/// may-write summaries `writes`.
fn written_later(
    facts: &ProgramFacts,
    solver: Solver,
    writes: &FxHashMap<RoutineId, RoutineSummary<LocSet>>,
) -> FxHashMap<RoutineId, (LocSet, Record<LocSet>)> {
    let contribute_bwd = |_: &UnionProblem, r: RoutineId, s: StmtId, fact: &LocSet| {
        let call = facts.effect(r, s).call.as_ref()?;
        Some(Contribution {
            callee: call.callee,
            fact: call.to_callee(fact),
        })
    };
    top_down(
        &facts.callgraph,
        &facts.flows,
        solver,
        writes,
        FxHashMap::default(),
        |r| UnionProblem {
            facts,
            routine: r,
            table: writes,
            collect: Collect::Writes,
        },
        contribute_bwd,
    )
}

/// What may be written after each flow node and statement of every
/// analysed routine until the adjoint sweep starts (split reversal, over
/// all calling contexts), with the routines' may-write summaries it needs.
pub(crate) fn written_later_records(
    facts: &ProgramFacts,
    solver: Solver,
) -> FxHashMap<RoutineId, (LocSet, Record<LocSet>)> {
    let writes = union(facts, solver, Collect::Writes);
    written_later(facts, solver, &writes)
}

/// What every analysed routine and its callees may read, as slots of the
/// routine's universe (callees' reads of formals mapped to the actual
/// arguments): the `Read` side-effect list a front end's analysis gives,
/// for programs that come without one.
///
/// Reads of branch and loop conditions count too (the flow graphs carry
/// conditions on their vertices, not as statements): a loop bound a
/// routine re-run from its checkpoint reads must be restored like any
/// other input.
pub fn analyze_may_read(facts: &ProgramFacts, solver: Solver) -> SecondaryMap<Routine, LocSet> {
    let reads = bottom_up(&facts.callgraph, |r, table| {
        let prob = UnionProblem {
            facts,
            routine: r,
            table,
            collect: Collect::Reads,
        };
        let mut s = summarize(&prob, &facts.flows[&r], solver);
        if let Some(summary) = s.summary.as_mut() {
            summary.union_with(&condition_reads(facts, r));
        }
        s
    });
    let mut out = SecondaryMap::default();
    for &r in &facts.callgraph.routines {
        let set = reads
            .get(&r)
            .and_then(|x| x.summary.clone())
            .unwrap_or_else(|| facts.routines[&r].empty());
        out.insert(r, set);
    }
    out
}

/// The slots the conditions of routine `r`'s branches and loops read.
fn condition_reads(facts: &ProgramFacts, r: RoutineId) -> LocSet {
    let nodes: Vec<u32> = (0..facts.flows[&r].nodes.len() as u32).collect();
    condition_reads_of_nodes(facts, r, &nodes)
}

/// The slots the conditions of the flow nodes `nodes` of routine `r` read.
pub(crate) fn condition_reads_of_nodes(
    facts: &ProgramFacts,
    r: RoutineId,
    nodes: &[u32],
) -> LocSet {
    let p = facts.program;
    let u = &facts.routines[&r].universe;
    let mut out = LocSet::with_capacity(u.len());
    let all = &facts.flows[&r].nodes;
    for node in nodes.iter().filter_map(|&n| all.get(n as usize)) {
        if node.role != crate::flow::NodeRole::Vertex {
            continue;
        }
        let Some(c) = p.vertices[node.vertex].kind.condition() else {
            continue;
        };
        let mut refs = Vec::new();
        for_each_ref_in_expr(c, &mut |g| refs.push(g));
        insert_read_slots(facts, r, u, refs, &mut out);
    }
    out
}

/// Adds to `out` the slots that the references `refs` of routine `r` read.
fn insert_read_slots(
    facts: &ProgramFacts,
    r: RoutineId,
    u: &Universe,
    refs: Vec<&xaif_model::RefGraph>,
    out: &mut LocSet,
) {
    for g in refs {
        if let Some(acc) = facts.res.lookup(r, g) {
            for slot in read_slots(u, &acc) {
                out.insert(slot);
            }
        }
    }
}

/// The two sets of [`RoutineTbr`] a routine's argument checkpoint depends
/// on, alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overwrites {
    /// [`RoutineTbr::may_write`].
    pub may_write: LocSet,
    /// [`RoutineTbr::overwritten_after`].
    pub overwritten_after: LocSet,
}

/// [`RoutineTbr::may_write`] and [`RoutineTbr::overwritten_after`] of
/// every analysed routine, the same sets [`analyze_tbr`] gives, without
/// the requirement analysis, the per-statement results and the activity
/// they need: what deciding argument checkpoints asks of a whole program,
/// in a fraction of the time and memory.
pub fn analyze_overwrites(
    facts: &ProgramFacts,
    solver: Solver,
) -> SecondaryMap<Routine, Overwrites> {
    let writes = union(facts, solver, Collect::Writes);
    let later = written_later(facts, solver, &writes);
    let mut out = SecondaryMap::default();
    for &r in &facts.callgraph.routines {
        out.insert(
            r,
            Overwrites {
                may_write: writes
                    .get(&r)
                    .and_then(|x| x.summary.clone())
                    .unwrap_or_default(),
                overwritten_after: later[&r].0.clone(),
            },
        );
    }
    out
}

/// Runs TBR analysis on top of `act`.
///
/// The steps: each statement's own requirements, the routines' `Req`/`Kill`
/// summaries bottom-up, the requirements in calling context top-down, the
/// routines' may-write and may-read sets and what is overwritten after
/// each statement, then the facts per statement, call site, vertex and
/// routine.
pub fn analyze_tbr(facts: &ProgramFacts, act: &Activity, solver: Solver) -> Tbr {
    let cg = &facts.callgraph;
    let local: FxHashMap<RoutineId, FxHashMap<StmtId, Local>> = cg
        .routines
        .iter()
        .map(|&r| (r, local_requirements(facts, act, r)))
        .collect();
    let req = requirement_summaries(facts, &local, solver);
    let inreq = requirements_in_context(facts, &local, &req, solver);
    let writes = union(facts, solver, Collect::Writes);
    let reads = union(facts, solver, Collect::Reads);
    let later = written_later(facts, solver, &writes);
    let tables = TbrTables {
        facts,
        local: &local,
        req: &req,
        writes: &writes,
        reads: &reads,
    };
    let mut out = Tbr::default();
    for &r in &cg.routines {
        tables.routine(r, &inreq[&r], &later[&r], &mut out);
    }
    let _ = for_each_ref_in_expr;
    out
}

/// Every routine's own requirements, by statement.
type LocalRequirements = FxHashMap<RoutineId, FxHashMap<StmtId, Local>>;

/// The `Req`/`Kill` summary of every routine (and of its loops), callees
/// first.
fn requirement_summaries(
    facts: &ProgramFacts,
    local: &LocalRequirements,
    solver: Solver,
) -> FxHashMap<RoutineId, RoutineSummary<ReqKill>> {
    let empty = FxHashMap::default();
    bottom_up(&facts.callgraph, |r, table| {
        let prob = ReqProblem {
            facts,
            routine: r,
            local: local.get(&r).unwrap_or(&empty),
            table,
        };
        summarize(&prob, &facts.flows[&r], solver)
    })
}

/// The requirements before and after every statement in calling context,
/// flowing from callers into callees: per routine, the requirement on
/// entry and the record of its statements and nodes.
fn requirements_in_context(
    facts: &ProgramFacts,
    local: &LocalRequirements,
    req: &FxHashMap<RoutineId, RoutineSummary<ReqKill>>,
    solver: Solver,
) -> FxHashMap<RoutineId, (LocSet, Record<LocSet>)> {
    let empty = FxHashMap::default();
    let contribute_fwd = |_: &ReqProblem, r: RoutineId, s: StmtId, fact: &LocSet| {
        let call = facts.effect(r, s).call.as_ref()?;
        Some(Contribution {
            callee: call.callee,
            fact: call.to_callee(fact),
        })
    };
    top_down(
        &facts.callgraph,
        &facts.flows,
        solver,
        req,
        FxHashMap::default(),
        |r| ReqProblem {
            facts,
            routine: r,
            local: local.get(&r).unwrap_or(&empty),
            table: req,
        },
        contribute_fwd,
    )
}

/// The analyses [`analyze_tbr`] reads its facts from.
struct TbrTables<'a, 'p> {
    facts: &'a ProgramFacts<'p>,
    local: &'a LocalRequirements,
    req: &'a FxHashMap<RoutineId, RoutineSummary<ReqKill>>,
    writes: &'a FxHashMap<RoutineId, RoutineSummary<LocSet>>,
    reads: &'a FxHashMap<RoutineId, RoutineSummary<LocSet>>,
}

impl TbrTables<'_, '_> {
    /// The facts of routine `r`, its statements, call sites and vertices,
    /// from its requirements in context (`inreq`) and what is overwritten
    /// after each of its statements (`later`).
    fn routine(
        &self,
        r: RoutineId,
        (in_req_s, rrec): &(LocSet, Record<LocSet>),
        (after_s, lrec): &(LocSet, Record<LocSet>),
        out: &mut Tbr,
    ) {
        let rf = &self.facts.routines[&r];
        let empty = FxHashMap::default();
        let prob = ReqProblem {
            facts: self.facts,
            routine: r,
            local: self.local.get(&r).unwrap_or(&empty),
            table: self.req,
        };
        for (&s, before_after) in &rrec.stmts {
            let overwritten_later = lrec
                .stmts
                .get(&s)
                .map(|(_, after)| after.clone())
                .unwrap_or_default();
            self.statement(&prob, s, before_after, overwritten_later, out);
        }
        for (i, node) in rf.flow.nodes.iter().enumerate() {
            if node.role != crate::flow::NodeRole::Vertex {
                continue;
            }
            if let Some((b, a)) = &rrec.nodes[i] {
                out.vertices.insert(
                    node.vertex,
                    BlockTbr {
                        in_req: b.clone(),
                        out_req: a.clone(),
                    },
                );
            }
        }
        out.routines.insert(
            r,
            RoutineTbr {
                summary: self.req.get(&r).and_then(|x| x.summary.clone()),
                in_req: in_req_s.clone(),
                may_write: self
                    .writes
                    .get(&r)
                    .and_then(|x| x.summary.clone())
                    .unwrap_or_default(),
                may_read: self
                    .reads
                    .get(&r)
                    .and_then(|x| x.summary.clone())
                    .unwrap_or_default(),
                overwritten_after: after_s.clone(),
            },
        );
    }

    /// The facts of statement `s` of the routine of `prob`, required
    /// `(ib, ia)` before and after it: what it requires and why, what it
    /// must record and tape; for a call, also its call site's facts.
    fn statement(
        &self,
        prob: &ReqProblem,
        s: StmtId,
        (ib, ia): &(LocSet, LocSet),
        overwritten_later: LocSet,
        out: &mut Tbr,
    ) {
        let r = prob.routine;
        let n = self.facts.routines[&r].universe.len();
        let e = self.facts.effect(r, s);
        let l = prob.local.get(&s);
        let (summary, required) = prob
            .stmt_parts(s)
            .unwrap_or((ReqKill::default(), LocSet::new()));
        let reasons = self.reasons(e, l, n);
        let w = self.written(e, n);
        let mut recorded = LocSet::new();
        if e.call.is_none() {
            let mut needed = ib.clone();
            needed.union_with(&required);
            let own: LocSet = e.writes.iter().copied().collect();
            recorded = own;
            recorded.intersect_with(&needed);
        }
        let mut exposed = w.clone();
        exposed.union_with(&overwritten_later);
        let mut to_tape = required.clone();
        to_tape.intersect_with(&exposed);
        let active = l.is_some_and(|l| l.active) || !required.is_empty();
        out.stmts.insert(
            s,
            StmtTbr {
                routine: r,
                active,
                required: required.clone(),
                reasons,
                summary,
                in_req: ib.clone(),
                out_req: ia.clone(),
                recorded,
                overwritten_later: overwritten_later.clone(),
                to_tape,
            },
        );
        if let Some(call) = &e.call {
            out.calls
                .insert(s, self.call_site(call, n, overwritten_later));
        }
    }

    /// Why a statement of effect `e` (in a routine of `n` slots) requires
    /// what it does: its own reasons (`l`), then for a call what the
    /// callee requires.
    fn reasons(&self, e: &Effect, l: Option<&Local>, n: usize) -> Vec<Requirement> {
        let facts = self.facts;
        let mut reasons = l.map(|l| l.reasons.clone()).unwrap_or_default();
        if let Some(call) = &e.call {
            if let Some(Some(cs)) = self.req.get(&call.callee).map(|x| x.summary.as_ref()) {
                let slots = call.to_caller(&cs.req, n);
                if !slots.is_empty() {
                    reasons.push(Requirement {
                        slots,
                        reason: Reason::Callee {
                            routine: facts.routines[&call.callee].name.clone(),
                        },
                    });
                }
            }
        }
        reasons
    }

    /// The slots a statement of effect `e` (in a routine of `n` slots) may
    /// write, a call's callee's writes included.
    fn written(&self, e: &Effect, n: usize) -> LocSet {
        let mut w: LocSet = e.writes.iter().copied().collect();
        if let Some(call) = &e.call {
            if let Some(Some(cw)) = self.writes.get(&call.callee).map(|x| x.summary.as_ref()) {
                w.union_with(&call.to_caller(cw, n));
            }
        }
        w
    }

    /// The facts of a call site (in the caller's `n` slots): what the
    /// callee requires, reads and writes, what to tape of it and which of
    /// its reads the argument checkpoint must save.
    fn call_site(
        &self,
        call: &crate::facts::CallEffect,
        n: usize,
        overwritten_later: LocSet,
    ) -> CallSiteTbr {
        let sum = |t: &FxHashMap<RoutineId, RoutineSummary<LocSet>>| {
            t.get(&call.callee)
                .and_then(|x| x.summary.as_ref())
                .map(|x| call.to_caller(x, n))
                .unwrap_or_default()
        };
        let callee_reads = sum(self.reads);
        let callee_writes = sum(self.writes);
        let callee_required = self
            .req
            .get(&call.callee)
            .and_then(|x| x.summary.as_ref())
            .map(|x| call.to_caller(&x.req, n))
            .unwrap_or_default();
        let mut to_tape = callee_required.clone();
        to_tape.intersect_with(&overwritten_later);
        let mut changed = callee_writes.clone();
        changed.union_with(&overwritten_later);
        let mut checkpoint = callee_reads.clone();
        checkpoint.intersect_with(&changed);
        CallSiteTbr {
            callee: call.callee,
            callee_required,
            callee_reads,
            callee_writes,
            overwritten_later,
            to_tape,
            checkpoint,
        }
    }
}
