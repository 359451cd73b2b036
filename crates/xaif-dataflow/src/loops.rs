//! What the kinds of marked loops ask of the analysis besides their
//! snapshot (`docs/checkpointing.md`):
//!
//! - the *loop-carried state* of a fixed-point loop: the active variables
//!   an iteration writes and may read before writing (the `x` of `x ←
//!   F(x, p)`), whose adjoint the two-phase adjoint iterates on; the other
//!   inputs are its parameters;
//! - whether a counted loop's iterations are *independent*: no iteration
//!   reads or writes what another writes, but through the loop variable
//!   (every access of an array written in the loop subscripts one
//!   dimension with the loop variable plus the same constant) or through a
//!   sum reduction `s = s + e` (`s` read nowhere else in the loop). The
//!   first carried dependence is reported with the variable and two
//!   statements, the one that writes it and one that reads it (or writes it
//!   again).
//!
//! An iteration's upward-exposed reads come from the same `Req`/`Kill`
//! summaries as the snapshot's ([`crate::snapshot`]); where a routine has
//! no structure the analysis can place the loop in, every read of the body
//! counts as upward-exposed (more state, more refusals, never fewer).
//! Callees are summarised by their may-read and may-write sets, mapped to
//! the caller through the argument binding: a callee writing a variable is
//! a write of the actual argument as the call subscripts it, or of the
//! whole variable (a global).

use rustc_hash::FxHashMap;
use xaif_model::{
    ArgValue, Expr, ExprGraph, ExprVertexKind, RefGraph, RefVertexKind, RoutineId, StmtId,
    StmtKind, SymbolId, VertexId, VertexKind,
};

use crate::facts::ProgramFacts;
use crate::framework::{RoutineSummary, Solver};
use crate::loc::{constant_int, for_each_ref, for_each_ref_in_expr, for_each_subscript_ref};
use crate::loc::{StorageId, StorageKey};
use crate::snapshot::{exposed_reads, loop_reads};
use crate::tbr::{union, Collect, ReqKill};
use crate::LocSet;

/// One marked loop to analyse.
#[derive(Clone, Debug)]
pub struct LoopQuery {
    /// Its routine.
    pub routine: RoutineId,
    /// Its loop vertex.
    pub vertex: VertexId,
    /// The vertices of its body (nested loops and branches included, not
    /// the loop vertex).
    pub body: Vec<VertexId>,
    /// The loop variable, when the independence of its iterations is
    /// asked.
    pub independence: Option<SymbolId>,
}

/// A dependence carried from one iteration to another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dependence {
    /// The variable (the routine's own symbol for it).
    pub symbol: SymbolId,
    /// A statement of the loop that writes it.
    pub writer: StmtId,
    /// A statement of the loop that reads it (or writes it too).
    pub reader: StmtId,
}

/// What the analysis says about one [`LoopQuery`].
#[derive(Clone, Debug, Default)]
pub struct LoopAnswer {
    /// The variables the loop's iterations may write and read before
    /// writing that carry derivatives (active, real), as the routine's
    /// symbols, in storage order.
    pub carried: Vec<SymbolId>,
    /// Those of [`LoopAnswer::carried`] that the iteration's statements
    /// may read before writing (not only its conditions): the `x` that `x
    /// ← F(x, p)` maps, whose values a fixed-point loop leaves unchanged
    /// at its fixed point. A change measure read only by the loop's test
    /// (`while (err > tol)`) is carried but not here: it changes in every
    /// iteration, converged or not. Where the analysis cannot place the
    /// loop, those of `carried` that no condition of the loop reads.
    pub fed: Vec<SymbolId>,
    /// The first dependence carried between iterations, when independence
    /// was asked and does not hold.
    pub dependence: Option<Dependence>,
}

/// One reference of a statement of the body to a storage.
struct Access<'e> {
    stmt: StmtId,
    storage: StorageId,
    write: bool,
    /// The reference, when its subscripts are known (not a callee's
    /// access to a global).
    graph: Option<&'e RefGraph>,
}

/// May-read and may-write summaries of every routine.
pub(crate) struct Effects {
    reads: FxHashMap<RoutineId, RoutineSummary<LocSet>>,
    writes: FxHashMap<RoutineId, RoutineSummary<LocSet>>,
}

impl Effects {
    fn new(facts: &ProgramFacts, solver: Solver) -> Self {
        Effects {
            reads: union(facts, solver, Collect::Reads),
            writes: union(facts, solver, Collect::Writes),
        }
    }
}

/// Answers every query of `queries` from one set of summaries.
pub fn loop_answers(
    facts: &ProgramFacts,
    solver: Solver,
    queries: &[LoopQuery],
) -> Vec<LoopAnswer> {
    if queries.is_empty() {
        return Vec::new();
    }
    let exposed = exposed_reads(facts, solver);
    let effects = Effects::new(facts, solver);
    queries
        .iter()
        .map(|q| {
            let read = loop_reads(facts, &exposed, q.routine, q.vertex);
            let accesses = body_accesses(facts, &effects, q);
            let mut written = facts.routines[&q.routine].empty();
            for a in accesses.iter().filter(|a| a.write) {
                for &s in facts.routines[&q.routine].universe.slots_of(a.storage) {
                    written.insert(s);
                }
            }
            let mut exposed_written = read.clone();
            exposed_written.intersect_with(&written);
            let carried = carried(facts, q, &exposed_written);
            let mut fed_written = statement_reads(facts, &exposed, q);
            fed_written.intersect_with(&exposed_written);
            let fed = self::carried(facts, q, &fed_written);
            let dependence = q
                .independence
                .and_then(|var| dependence(facts, q, var, &exposed_written, &accesses));
            LoopAnswer {
                carried,
                fed,
                dependence,
            }
        })
        .collect()
}

/// What the statements of loop `q`'s iterations may read before writing
/// ([`crate::snapshot::loop_statement_reads`]); where the analysis cannot
/// place the loop, everything its conditions and its own test do not read.
fn statement_reads(
    facts: &ProgramFacts,
    exposed: &FxHashMap<RoutineId, RoutineSummary<ReqKill>>,
    q: &LoopQuery,
) -> LocSet {
    if let Some(s) = crate::snapshot::loop_statement_reads(facts, exposed, q.routine, q.vertex) {
        return s;
    }
    let fg = &facts.flows[&q.routine];
    let body: rustc_hash::FxHashSet<VertexId> = q.body.iter().copied().collect();
    let nodes: Vec<u32> = fg
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.vertex == q.vertex || body.contains(&n.vertex))
        .map(|(i, _)| i as u32)
        .collect();
    let mut s = all_slots(facts.routines[&q.routine].universe.len());
    s.difference_with(&crate::tbr::condition_reads_of_nodes(
        facts, q.routine, &nodes,
    ));
    s
}

/// The storages of `slots`, each once, in storage order.
fn storages_of(facts: &ProgramFacts, r: RoutineId, slots: &LocSet) -> Vec<StorageId> {
    let u = &facts.routines[&r].universe;
    let mut out: Vec<StorageId> = slots.iter().map(|s| u.slot(s).storage).collect();
    out.sort_by_key(|s| s.index());
    out.dedup();
    out
}

/// The routine's own symbol of a storage.
fn symbol_of(
    facts: &ProgramFacts,
    own: &FxHashMap<StorageId, SymbolId>,
    storage: StorageId,
) -> Option<SymbolId> {
    let st = &facts.storages[storage.index()];
    match &st.key {
        StorageKey::Local { symbol, .. } => Some(*symbol),
        StorageKey::Shared(_) => own.get(&storage).or(st.symbols.first()).copied(),
    }
}

/// The active real storages among those written and read before written.
fn carried(facts: &ProgramFacts, q: &LoopQuery, exposed_written: &LocSet) -> Vec<SymbolId> {
    let p = facts.program;
    let own = facts.own_symbols(q.routine);
    storages_of(facts, q.routine, exposed_written)
        .into_iter()
        .filter(|st| facts.storages[st.index()].differentiable)
        .filter_map(|st| symbol_of(facts, &own, st))
        .filter(|&sym| p.symbols[sym].is_active() && Some(sym) != q.independence)
        .collect()
}

/// Every access of the body's statements and conditions, in body order.
fn body_accesses<'e>(facts: &'e ProgramFacts, fx: &Effects, q: &LoopQuery) -> Vec<Access<'e>> {
    let p = facts.program;
    let mut out = Vec::new();
    let stmt = |s: StmtId, out: &mut Vec<Access<'e>>| stmt_accesses(facts, fx, q.routine, s, out);
    for &v in &q.body {
        let vertex = &p.vertices[v];
        match &vertex.kind {
            VertexKind::BasicBlock(stmts) => {
                for &s in stmts {
                    stmt(s, &mut out);
                }
            }
            VertexKind::ForLoop { init, update, .. } => {
                for s in init.iter().chain(update.iter()) {
                    stmt(*s, &mut out);
                }
            }
            _ => {}
        }
        if let Some(c) = vertex.kind.condition() {
            // A condition is read by the statement before it, for
            // messages: the loop's first statement.
            let at = first_stmt(p, &q.body);
            let mut refs = Vec::new();
            for_each_ref_in_expr(c, &mut |g| refs.push(g));
            for g in refs {
                if let (Some(at), Some(acc)) = (at, facts.res.lookup(q.routine, g)) {
                    out.push(Access {
                        stmt: at,
                        storage: acc.storage,
                        write: false,
                        graph: Some(g),
                    });
                }
            }
        }
    }
    out
}

/// The first statement of the body's vertices.
fn first_stmt(p: &xaif_model::Program, body: &[VertexId]) -> Option<StmtId> {
    body.iter().find_map(|&v| match &p.vertices[v].kind {
        VertexKind::BasicBlock(stmts) => stmts.first().copied(),
        VertexKind::ForLoop { init, .. } => *init,
        _ => None,
    })
}

/// The accesses of statement `s` of routine `r`.
fn stmt_accesses<'e>(
    facts: &'e ProgramFacts,
    fx: &Effects,
    r: RoutineId,
    s: StmtId,
    out: &mut Vec<Access<'e>>,
) {
    let p = facts.program;
    let push = |g: &'e RefGraph, write: bool, out: &mut Vec<Access<'e>>| {
        if let Some(acc) = facts.res.lookup(r, g) {
            out.push(Access {
                stmt: s,
                storage: acc.storage,
                write,
                graph: Some(g),
            });
        }
    };
    match &p.stmts[s].kind {
        StmtKind::Assignment(a) => {
            push(&a.lhs.graph, true, out);
            let mut reads = Vec::new();
            for_each_subscript_ref(&a.lhs.graph, &mut |g| reads.push(g));
            for_each_ref_in_expr(&a.rhs, &mut |g| reads.push(g));
            for g in reads {
                push(g, false, out);
            }
        }
        StmtKind::SubroutineCall(args) => {
            let e = facts.effect(r, s);
            let n = facts.routines[&r].universe.len();
            let (w, rd) = match &e.call {
                Some(call) => {
                    let summary = |t: &FxHashMap<RoutineId, RoutineSummary<LocSet>>| {
                        t.get(&call.callee)
                            .and_then(|x| x.summary.as_ref())
                            .map(|x| call.to_caller(x, n))
                            .unwrap_or_else(|| all_slots(n))
                    };
                    let mut rd = summary(&fx.reads);
                    for &i in &call.index_reads {
                        rd.insert(i);
                    }
                    (summary(&fx.writes), rd)
                }
                // A routine without a body: it may write its arguments.
                None => (
                    e.writes.iter().copied().collect::<LocSet>(),
                    e.reads.iter().copied().collect::<LocSet>(),
                ),
            };
            let u = &facts.routines[&r].universe;
            let mut named: Vec<StorageId> = Vec::new();
            for a in args {
                let ArgValue::Variable(v) = &a.value else {
                    continue;
                };
                let mut subs = Vec::new();
                for_each_subscript_ref(&v.graph, &mut |g| subs.push(g));
                for g in subs {
                    push(g, false, out);
                }
                let Some(acc) = facts.res.lookup(r, &v.graph) else {
                    continue;
                };
                named.push(acc.storage);
                let slots = u.slots_of(acc.storage);
                if slots.iter().any(|&x| w.contains(x)) {
                    push(&v.graph, true, out);
                }
                if slots.iter().any(|&x| rd.contains(x)) {
                    push(&v.graph, false, out);
                }
            }
            // What the callee touches that no actual argument names: whole
            // variables (globals).
            for (set, write) in [(&w, true), (&rd, false)] {
                for st in storages_of(facts, r, set) {
                    if !named.contains(&st) {
                        out.push(Access {
                            stmt: s,
                            storage: st,
                            write,
                            graph: None,
                        });
                    }
                }
            }
        }
        _ => {
            // Other statements: every reference read, and written where the
            // statement may write it.
            let e = facts.effect(r, s);
            let mut refs = Vec::new();
            crate::facts::stmt_refs(p, s, &mut |g| refs.push(g));
            let u = &facts.routines[&r].universe;
            for g in refs {
                let Some(acc) = facts.res.lookup(r, g) else {
                    continue;
                };
                let written = u.slots_of(acc.storage).iter().any(|x| e.writes.contains(x));
                push(g, false, out);
                if written {
                    push(g, true, out);
                }
            }
        }
    }
}

fn all_slots(n: usize) -> LocSet {
    let mut s = LocSet::with_capacity(n);
    for i in 0..n as u32 {
        s.insert(i);
    }
    s
}

/// The first dependence carried between the iterations of loop `q`, whose
/// variable is `var`: a storage written in the loop and read (or written)
/// by other iterations, neither through the loop variable nor as a sum
/// reduction.
fn dependence(
    facts: &ProgramFacts,
    q: &LoopQuery,
    var: SymbolId,
    exposed_written: &LocSet,
    accesses: &[Access<'_>],
) -> Option<Dependence> {
    let own = facts.own_symbols(q.routine);
    let var_storage = facts.storage_of_symbol(var);
    for st in storages_of(facts, q.routine, exposed_written) {
        if Some(st) == var_storage {
            continue;
        }
        let mine: Vec<&Access> = accesses.iter().filter(|a| a.storage == st).collect();
        if mine.is_empty()
            || reduction(facts, q.routine, st, &mine)
            || by_loop_variable(facts, var, &mine)
        {
            continue;
        }
        let writer = mine.iter().find(|a| a.write).map(|a| a.stmt)?;
        let reader = mine
            .iter()
            .find(|a| !a.write && a.stmt != writer)
            .or_else(|| mine.iter().find(|a| !a.write))
            .or_else(|| mine.iter().find(|a| a.write && a.stmt != writer))
            .map(|a| a.stmt)
            .unwrap_or(writer);
        return Some(Dependence {
            symbol: symbol_of(facts, &own, st)?,
            writer,
            reader,
        });
    }
    None
}

/// The subscripts of a reference: per dimension, the constant `c` when the
/// subscript is `var + c` (or `var`, `c + var`, `var − c`).
fn loop_subscripts(facts: &ProgramFacts, var: SymbolId, g: &RefGraph) -> Vec<Option<i64>> {
    let mut out = Vec::new();
    for v in g.chain().iter().skip(1) {
        if let RefVertexKind::ArrayElement { triplets } = &v.kind {
            for t in triplets {
                out.push(match (&t.index, &t.bound, &t.stride) {
                    (Some(i), None, None) => offset(facts, var, i),
                    _ => None,
                });
            }
        }
    }
    out
}

/// `c` when `e` is `var + c`, `c + var`, `var − c` or `var`.
fn offset(facts: &ProgramFacts, var: SymbolId, e: &Expr) -> Option<i64> {
    let g = ExprGraph::new(e)?;
    let is_var = |i: usize| match &e.vertices[i].kind {
        ExprVertexKind::VariableReference(r) => {
            r.vertices.len() == 1
                && r.symbol_ref()
                    .and_then(|a| facts.res.symbols.resolve(a))
                    .and_then(|s| facts.storage_of_symbol(s))
                    == facts.storage_of_symbol(var)
        }
        _ => false,
    };
    let constant = |i: usize| -> Option<i64> {
        let v = &e.vertices[i];
        if !matches!(v.kind, ExprVertexKind::Constant)
            || v.attrs.get("type").is_some_and(|t| t != "integer")
        {
            return None;
        }
        v.attrs.get("value")?.trim().parse::<i64>().ok()
    };
    let root = g.root;
    if is_var(root) {
        return Some(0);
    }
    let name = e.vertices[root].attrs.get("name")?;
    let args = &g.args[root];
    let [a, b] = args.as_slice() else {
        return None;
    };
    match name {
        "add_scal_scal" if is_var(*a) => constant(*b),
        "add_scal_scal" if is_var(*b) => constant(*a),
        "sub_scal_scal" if is_var(*a) => constant(*b)?.checked_neg(),
        _ => None,
    }
}

/// Whether every access to the storage subscripts one dimension with the
/// loop variable plus the same constant: distinct iterations then touch
/// distinct elements.
fn by_loop_variable(facts: &ProgramFacts, var: SymbolId, accesses: &[&Access]) -> bool {
    let mut common: Option<Vec<Option<i64>>> = None;
    for a in accesses {
        let Some(g) = a.graph else {
            return false;
        };
        let subs = loop_subscripts(facts, var, g);
        common = Some(match common {
            None => subs,
            Some(c) => {
                if c.len() != subs.len() {
                    return false;
                }
                c.iter()
                    .zip(&subs)
                    .map(|(x, y)| if x == y { *x } else { None })
                    .collect()
            }
        });
    }
    common.is_some_and(|c| c.iter().any(Option::is_some))
}

/// Whether every access to the storage is in a sum reduction `s = s + e`
/// (`e + s`, `s − e`; `e` not reading `s`) of the same element.
fn reduction(facts: &ProgramFacts, r: RoutineId, st: StorageId, accesses: &[&Access]) -> bool {
    let p = facts.program;
    let same = |g: &RefGraph| facts.res.lookup(r, g).is_some_and(|a| a.storage == st);
    let mut lhs_key: Option<Vec<Option<i64>>> = None;
    for a in accesses {
        let StmtKind::Assignment(asg) = &p.stmts[a.stmt].kind else {
            return false;
        };
        if !same(&asg.lhs.graph) {
            return false;
        }
        let key = element_key(&asg.lhs.graph);
        if key.iter().any(Option::is_none) {
            return false;
        }
        match &lhs_key {
            None => lhs_key = Some(key.clone()),
            Some(k) if *k != key => return false,
            _ => {}
        }
        let Some(g) = ExprGraph::new(&asg.rhs) else {
            return false;
        };
        let root = g.root;
        let name = asg.rhs.vertices[root].attrs.get("name").unwrap_or("");
        let [x, y] = g.args[root].as_slice() else {
            return false;
        };
        let is_self = |i: usize| match &asg.rhs.vertices[i].kind {
            ExprVertexKind::VariableReference(rg) => same(rg) && element_key(rg) == key,
            _ => false,
        };
        let (own, other) = match name {
            "add_scal_scal" if is_self(*x) => (*x, *y),
            "add_scal_scal" if is_self(*y) => (*y, *x),
            "sub_scal_scal" if is_self(*x) => (*x, *y),
            _ => return false,
        };
        // The rest of the right-hand side reads no part of `s`, nor do the
        // subscripts of the left-hand side.
        let mut reads_self = false;
        let mut work = vec![other];
        let mut seen = vec![false; g.args.len()];
        while let Some(v) = work.pop() {
            if std::mem::replace(&mut seen[v], true) {
                continue;
            }
            match &asg.rhs.vertices[v].kind {
                ExprVertexKind::VariableReference(rg) => {
                    for_each_ref(rg, &mut |h| reads_self |= same(h));
                }
                ExprVertexKind::FunctionCall(args) => {
                    for a in args {
                        for_each_ref(&a.graph, &mut |h| reads_self |= same(h));
                    }
                }
                _ => {}
            }
            work.extend(g.args[v].iter().copied());
        }
        if let ExprVertexKind::VariableReference(rg) = &asg.rhs.vertices[own].kind {
            for_each_subscript_ref(rg, &mut |h| reads_self |= same(h));
        }
        for_each_subscript_ref(&asg.lhs.graph, &mut |h| reads_self |= same(h));
        if reads_self {
            return false;
        }
    }
    true
}

/// The constant subscripts of a reference (`None` for computed ones).
fn element_key(g: &RefGraph) -> Vec<Option<i64>> {
    let mut out = Vec::new();
    for v in g.chain().iter().skip(1) {
        if let RefVertexKind::ArrayElement { triplets } = &v.kind {
            for t in triplets {
                out.push(match (&t.index, &t.bound, &t.stride) {
                    (Some(i), None, None) => constant_int(i),
                    _ => None,
                });
            }
        }
    }
    out
}
