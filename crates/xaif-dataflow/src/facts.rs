//! What every analysis needs to know about the program, computed once:
//! analysed routines, their flow graphs, the call graph, each routine's
//! universe of slots, and each statement's reads, writes and call binding.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;
use xaif_model::{
    ArgValue, Expr, ExprVertexKind, InlinableArg, Program, RoutineBody, RoutineId, StmtId,
    StmtKind, SymbolId, VarRef,
};

use crate::callgraph::CallGraph;
use crate::flow::FlowGraph;
use crate::loc::{
    for_each_ref, for_each_ref_in_expr, for_each_subscript_ref, fortran_routine_name, Access,
    Location, Part, Resolver, Shape, Storage, StorageId, StorageKey, Universe,
};
use crate::LocSet;

/// The effect of one statement on the slots of its routine.
#[derive(Clone, Debug, Default)]
pub(crate) struct Effect {
    /// Slots an assignment or an opaque statement may write.
    pub writes: Vec<u32>,
    /// The writes are definite (a kill).
    pub must: bool,
    /// Slots read in differentiable positions (empty when the assigned
    /// variable carries no derivative).
    pub dp: Vec<u32>,
    /// Every slot read, subscripts included.
    pub reads: Vec<u32>,
    /// A call to a routine of the program.
    pub call: Option<CallEffect>,
    /// A statement whose effect is not known precisely (a call to a routine
    /// without a body, an inlinable call): it may write its variable
    /// arguments, each depending on all of them.
    pub opaque: bool,
}

/// A call to a routine with a body: how its slots map to the caller's.
#[derive(Clone, Debug)]
pub(crate) struct CallEffect {
    /// The callee.
    pub callee: RoutineId,
    /// For each callee slot, the caller slots it may touch (empty: the
    /// callee's own locals, or a formal bound to a constant).
    pub may: Vec<Vec<u32>>,
    /// Caller slots that one callee slot covers exactly: the caller slot is
    /// definitely written when that callee slot is.
    pub covers: Vec<(u32, Vec<u32>)>,
    /// Slots read by the subscripts of the actual arguments.
    pub index_reads: Vec<u32>,
    /// Slots of the variable actual arguments.
    pub actuals: Vec<u32>,
}

impl CallEffect {
    /// Maps a callee set to the caller slots it may touch.
    pub fn to_caller(&self, callee_set: &LocSet, caller_len: usize) -> LocSet {
        let mut out = LocSet::with_capacity(caller_len);
        for a in callee_set.iter() {
            if let Some(list) = self.may.get(a as usize) {
                for &c in list {
                    out.insert(c);
                }
            }
        }
        out
    }

    /// Maps a caller set to the callee slots that may touch it.
    pub fn to_callee(&self, caller_set: &LocSet) -> LocSet {
        let mut out = LocSet::with_capacity(self.may.len());
        for (a, list) in self.may.iter().enumerate() {
            if list.iter().any(|c| caller_set.contains(*c)) {
                out.insert(a as u32);
            }
        }
        out
    }

    /// The caller slots definitely written when the callee definitely
    /// writes `callee_kill`.
    pub fn kills(&self, callee_kill: &LocSet, caller_len: usize) -> LocSet {
        let mut out = LocSet::with_capacity(caller_len);
        for (c, cover) in &self.covers {
            if !cover.is_empty() && cover.iter().all(|a| callee_kill.contains(*a)) {
                out.insert(*c);
            }
        }
        out
    }
}

/// Facts about one analysed routine.
#[derive(Clone, Debug)]
pub struct RoutineFacts {
    /// The routine's Fortran name (`head` for `head__24`).
    pub name: String,
    /// Its flow graph.
    pub flow: FlowGraph,
    /// Its slots.
    pub universe: Universe,
    /// The storage of each formal, by position (1 first).
    pub formals: Vec<Option<StorageId>>,
    pub(crate) effects: FxHashMap<StmtId, Effect>,
}

impl RoutineFacts {
    /// The set of all slots of `storage`.
    pub fn slots_of(&self, storage: StorageId) -> LocSet {
        let mut s = LocSet::with_capacity(self.universe.len());
        for &x in self.universe.slots_of(storage) {
            s.insert(x);
        }
        s
    }

    /// An empty set of this routine's universe.
    pub fn empty(&self) -> LocSet {
        LocSet::with_capacity(self.universe.len())
    }

    /// Whether `storage` is a formal of the routine.
    pub fn formal_position(&self, storage: StorageId) -> Option<usize> {
        self.formals
            .iter()
            .position(|f| *f == Some(storage))
            .map(|i| i + 1)
    }
}

/// Storages a routine touches, with the constant elements it names.
type Used = BTreeMap<StorageId, BTreeSet<Box<[i64]>>>;

/// Everything the analyses know about a program before solving anything.
pub struct ProgramFacts<'p> {
    /// The program.
    pub program: &'p Program,
    /// Every storage unit.
    pub storages: Vec<Storage>,
    /// The call graph of the analysed routines.
    pub callgraph: CallGraph,
    /// Per analysed routine.
    pub routines: FxHashMap<RoutineId, RoutineFacts>,
    pub(crate) flows: FxHashMap<RoutineId, FlowGraph>,
    pub(crate) res: Resolver<'p>,
    symbol_storage: FxHashMap<SymbolId, StorageId>,
    stmt_routine: FxHashMap<StmtId, RoutineId>,
}

impl<'p> ProgramFacts<'p> {
    /// Resolves and indexes `p` (a program that passed the validation gate).
    pub fn new(p: &'p Program) -> Self {
        Self::with_black_boxes(p, false)
    }

    /// [`ProgramFacts::new`] with the assumption made about routines
    /// without a body (black boxes). Optimistic (`false`, the default): a
    /// call may read and overwrite its variable arguments, each depending
    /// on all of them. Pessimistic (`true`, the reference driver's `-b`):
    /// it may also read and overwrite every global variable, which then
    /// depends on all arguments and globals (seed "TBR analysis" §4: the
    /// call's `Dep` relates everything it may touch).
    ///
    /// The steps: the flow graphs of the routines with a body and their
    /// call graph, the storages each routine names (its callees' shared
    /// ones included), each routine's universe of slots, every
    /// statement's effect, and the indexes by symbol and statement.
    pub fn with_black_boxes(p: &'p Program, pessimistic: bool) -> Self {
        let mut res = Resolver::new(p);
        let (routines, flows) = flow_graphs(p);
        let callgraph = CallGraph::new(p, routines.clone(), &flows);
        let mut used: FxHashMap<RoutineId, Used> = FxHashMap::default();
        let mut formals: FxHashMap<RoutineId, Vec<Option<StorageId>>> = FxHashMap::default();
        for &r in &routines {
            let mut u = Used::new();
            let f = formal_storages(p, &mut res, r, &mut u);
            named_storages(p, &mut res, r, &flows[&r], &mut u);
            if pessimistic && calls_black_box(p, &flows[&r]) {
                global_storages(p, &mut res, r, &mut u);
            }
            used.insert(r, u);
            formals.insert(r, f);
        }
        share_callee_storages(&res, &callgraph, &mut used);
        let mut facts: FxHashMap<RoutineId, RoutineFacts> = FxHashMap::default();
        for &r in &routines {
            let routine = &p.routines[r];
            facts.insert(
                r,
                RoutineFacts {
                    name: fortran_routine_name(routine.symbol_name()),
                    flow: flows[&r].clone(),
                    universe: Universe::build(&used[&r]),
                    formals: formals.remove(&r).unwrap_or_default(),
                    effects: FxHashMap::default(),
                },
            );
        }
        for &r in &routines {
            let effects = statement_effects(p, &mut res, &facts, &callgraph, r, pessimistic);
            facts.get_mut(&r).expect("analysed routine").effects = effects;
        }
        let mut symbol_storage = FxHashMap::default();
        for (i, st) in res.storages.iter().enumerate() {
            for &sym in &st.symbols {
                symbol_storage
                    .entry(sym)
                    .or_insert(StorageId::from_index(i));
            }
        }
        let mut stmt_routine = FxHashMap::default();
        for (&r, rf) in &facts {
            for s in rf.effects.keys() {
                stmt_routine.insert(*s, r);
            }
        }
        let storages = std::mem::take(&mut res.storages);
        ProgramFacts {
            program: p,
            storages,
            callgraph,
            routines: facts,
            flows,
            res,
            symbol_storage,
            stmt_routine,
        }
    }

    /// The storage a symbol names (as first resolved), if any analysed
    /// routine touches it.
    pub fn storage_of_symbol(&self, sym: SymbolId) -> Option<StorageId> {
        self.symbol_storage.get(&sym).copied()
    }

    /// The analysed routine holding statement `s`.
    pub fn routine_of(&self, s: StmtId) -> Option<RoutineId> {
        self.stmt_routine.get(&s).copied()
    }

    /// Names slot `slot` of routine `r`.
    pub fn location(&self, r: RoutineId, slot: u32) -> Location {
        let s = self.routines[&r].universe.slot(slot);
        Location {
            name: self.storages[s.storage.index()].name.clone(),
            storage: s.storage,
            part: s.part.clone(),
        }
    }

    /// Names every slot of `set` in routine `r`.
    pub fn locations(&self, r: RoutineId, set: &LocSet) -> Vec<Location> {
        set.iter().map(|s| self.location(r, s)).collect()
    }

    /// Names a set compactly: a storage all of whose slots are in the set is
    /// named once, as a whole.
    pub fn describe(&self, r: RoutineId, set: &LocSet) -> Vec<String> {
        let u = &self.routines[&r].universe;
        let mut out = Vec::new();
        let mut done: BTreeSet<StorageId> = BTreeSet::new();
        for s in set.iter() {
            let slot = u.slot(s);
            let all = u.slots_of(slot.storage);
            if all.len() > 1 && all.iter().all(|x| set.contains(*x)) {
                if done.insert(slot.storage) {
                    out.push(self.storages[slot.storage.index()].name.clone());
                }
            } else {
                out.push(self.location(r, s).to_string());
            }
        }
        out
    }

    pub(crate) fn effect(&self, r: RoutineId, s: StmtId) -> &Effect {
        static EMPTY: std::sync::OnceLock<Effect> = std::sync::OnceLock::new();
        self.routines[&r]
            .effects
            .get(&s)
            .unwrap_or_else(|| EMPTY.get_or_init(Effect::default))
    }
}

/// The routines with a body, in call graph order, and their flow graphs
/// (structured unless marked `structured="0"` or `"false"`).
fn flow_graphs(p: &Program) -> (Vec<RoutineId>, FxHashMap<RoutineId, FlowGraph>) {
    let mut routines = Vec::new();
    let mut flows = FxHashMap::default();
    for item in &p.items {
        if let xaif_model::CallGraphItem::Routine(r) = item {
            let routine = &p.routines[*r];
            if let RoutineBody::Graph(cfg) = routine.body {
                if routine.has_body(p) && !flows.contains_key(r) {
                    let structured = routine.attrs.get("structured") != Some("0")
                        && routine.attrs.get("structured") != Some("false");
                    flows.insert(*r, FlowGraph::new(p, cfg, structured));
                    routines.push(*r);
                }
            }
        }
    }
    (routines, flows)
}

/// The storage of each formal of routine `r`, by position (1 first); each
/// is noted in `u`.
fn formal_storages(
    p: &Program,
    res: &mut Resolver,
    r: RoutineId,
    u: &mut Used,
) -> Vec<Option<StorageId>> {
    let mut f = Vec::new();
    if let Some(args) = &p.routines[r].arguments {
        for a in &args.args {
            let (Some(pos), Some(sym)) = (a.int("position"), res.symbols.resolve(a)) else {
                continue;
            };
            let st = res.storage_of(r, sym);
            let pos = pos.max(1) as usize;
            if f.len() < pos {
                f.resize(pos, None);
            }
            f[pos - 1] = Some(st);
            u.entry(st).or_default();
        }
    }
    f
}

/// Notes in `u` the storages routine `r` (flow graph `fg`) names in its
/// statements and conditions, with the constant elements it names.
fn named_storages(p: &Program, res: &mut Resolver, r: RoutineId, fg: &FlowGraph, u: &mut Used) {
    let mut note = |res: &mut Resolver, g: &xaif_model::RefGraph| {
        if let Some(acc) = res.access(r, g) {
            let keys = u.entry(acc.storage).or_default();
            if let Shape::Elem(k) = acc.shape {
                keys.insert(k);
            }
        }
    };
    for node in &fg.nodes {
        for &s in &node.stmts {
            let mut refs = Vec::new();
            stmt_refs(p, s, &mut |g| refs.push(g));
            for g in refs {
                note(res, g);
            }
        }
        if node.role == crate::flow::NodeRole::Vertex {
            if let Some(c) = p.vertices[node.vertex].kind.condition() {
                let mut refs = Vec::new();
                for_each_ref_in_expr(c, &mut |g| refs.push(g));
                for g in refs {
                    note(res, g);
                }
            }
        }
    }
}

/// Notes in `u` every global variable's shared storage: under `-b` a
/// routine that calls a black box may touch them all.
fn global_storages(p: &Program, res: &mut Resolver, r: RoutineId, u: &mut Used) {
    for sym in global_variables(p) {
        let st = res.storage_of(r, sym);
        if matches!(res.storages[st.index()].key, StorageKey::Shared(_)) {
            u.entry(st).or_default();
        }
    }
}

/// Shared storages of callees belong to their callers' universes: adds
/// them, with their constant elements, until nothing changes (recursion).
fn share_callee_storages(
    res: &Resolver,
    callgraph: &CallGraph,
    used: &mut FxHashMap<RoutineId, Used>,
) {
    let is_local_of = |res: &Resolver, st: StorageId, r: RoutineId| matches!(res.storages[st.index()].key, StorageKey::Local { routine, .. } if routine == r);
    loop {
        let mut changed = false;
        for scc in &callgraph.sccs {
            for &r in scc {
                for c in callgraph.callees(r) {
                    if c == r {
                        continue;
                    }
                    let shared: Vec<(StorageId, BTreeSet<Box<[i64]>>)> = used[&c]
                        .iter()
                        .filter(|(st, _)| !is_local_of(res, **st, c))
                        .map(|(st, k)| (*st, k.clone()))
                        .collect();
                    let mine = used.get_mut(&r).expect("analysed routine");
                    for (st, keys) in shared {
                        let entry = mine.entry(st).or_insert_with(|| {
                            changed = true;
                            BTreeSet::new()
                        });
                        for k in keys {
                            changed |= entry.insert(k);
                        }
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
}

/// The effect of every statement of routine `r`, in its flow graph's
/// order.
fn statement_effects(
    p: &Program,
    res: &mut Resolver,
    facts: &FxHashMap<RoutineId, RoutineFacts>,
    callgraph: &CallGraph,
    r: RoutineId,
    pessimistic: bool,
) -> FxHashMap<StmtId, Effect> {
    let mut effects = FxHashMap::default();
    let stmts: Vec<StmtId> = facts[&r]
        .flow
        .nodes
        .iter()
        .flat_map(|n| n.stmts.iter().copied())
        .collect();
    for s in stmts {
        let e = effect(p, res, facts, callgraph, r, s, pessimistic);
        effects.insert(s, e);
    }
    effects
}

impl ProgramFacts<'_> {
    /// For each storage routine `r` names itself, the first of its symbols
    /// the routine's statements and conditions name it by: a list written
    /// for the routine refers to a shared variable through its own
    /// declaration of it, as a front end does.
    pub fn own_symbols(&self, r: RoutineId) -> FxHashMap<StorageId, SymbolId> {
        let p = self.program;
        let mut out = FxHashMap::default();
        let Some(fg) = self.flows.get(&r) else {
            return out;
        };
        let mut refs = Vec::new();
        for node in &fg.nodes {
            for &s in &node.stmts {
                stmt_refs(p, s, &mut |g| refs.push(g));
            }
            if node.role == crate::flow::NodeRole::Vertex {
                if let Some(c) = p.vertices[node.vertex].kind.condition() {
                    for_each_ref_in_expr(c, &mut |g| refs.push(g));
                }
            }
        }
        for g in refs {
            let Some(sym) = g.symbol_ref().and_then(|a| self.res.symbols.resolve(a)) else {
                continue;
            };
            if let Some(st) = self.storage_of_symbol(sym) {
                out.entry(st).or_insert(sym);
            }
        }
        out
    }
}

/// Calls `f` on every variable reference of statement `s`.
pub(crate) fn stmt_refs<'e>(
    p: &'e Program,
    s: StmtId,
    f: &mut dyn FnMut(&'e xaif_model::RefGraph),
) {
    match &p.stmts[s].kind {
        StmtKind::Assignment(a) => {
            for_each_ref(&a.lhs.graph, f);
            for_each_ref_in_expr(&a.rhs, f);
        }
        StmtKind::SubroutineCall(args) => {
            for a in args {
                if let ArgValue::Variable(v) = &a.value {
                    for_each_ref(&v.graph, f);
                }
            }
        }
        StmtKind::InlinableCall(args) => {
            for a in args {
                match a {
                    InlinableArg::Argument(a) => {
                        if let ArgValue::Variable(v) = &a.value {
                            for_each_ref(&v.graph, f);
                        }
                    }
                    InlinableArg::Substitute(v) => for_each_ref(&v.graph, f),
                }
            }
        }
        StmtKind::Marker | StmtKind::DerivativePropagator(_) => {}
    }
}

/// Slots an access reads.
pub(crate) fn read_slots(u: &Universe, acc: &Access) -> Vec<u32> {
    match &acc.shape {
        Shape::Elem(k) => u.slot_for_elem(acc.storage, k).into_iter().collect(),
        Shape::Whole | Shape::Unknown => u.slots_of(acc.storage).to_vec(),
    }
}

/// Slots an access writes, and whether definitely.
pub(crate) fn write_slots(u: &Universe, acc: &Access) -> (Vec<u32>, bool) {
    match &acc.shape {
        Shape::Whole => (u.slots_of(acc.storage).to_vec(), true),
        Shape::Elem(k) => match u.elem_slot(acc.storage, k) {
            Some(s) => (vec![s], true),
            None => (u.rest_slot(acc.storage).into_iter().collect(), false),
        },
        Shape::Unknown => (u.slots_of(acc.storage).to_vec(), false),
    }
}

/// Intrinsics whose result does not depend differentiably on their
/// arguments.
pub(crate) fn non_differentiable(name: &str) -> bool {
    matches!(
        name,
        "int_scal"
            | "nint_scal"
            | "maxloc_arr"
            | "minloc_arr"
            | "shape_arr"
            | "size"
            | "lbound"
            | "ubound"
            | "present"
            | "allocated"
            | "associated"
            | "len"
            | "trim"
            | "and"
            | "or"
            | "not"
            | "xor"
            | "equal"
            | "not_equal"
            | "less_than"
            | "less_or_equal"
            | "greater_than"
            | "greater_or_equal"
    ) || name.starts_with("string_")
        || name.starts_with("floor")
        || name.starts_with("ceiling")
        || name.starts_with("int_")
        || name.starts_with("nint")
}

/// Slots read in differentiable positions of `e` (seed §4.1, `DP`).
pub(crate) fn dp_slots(
    p: &Program,
    res: &mut Resolver,
    u: &Universe,
    r: RoutineId,
    e: &Expr,
    out: &mut Vec<u32>,
) {
    let Some(g) = crate::loc::expr_graph(e) else {
        return;
    };
    let mut stack = vec![g.root];
    let mut seen = vec![false; e.vertices.len()];
    while let Some(v) = stack.pop() {
        if std::mem::replace(&mut seen[v], true) {
            continue;
        }
        let vertex = &e.vertices[v];
        match &vertex.kind {
            ExprVertexKind::VariableReference(rg) => {
                if let Some(acc) = res.access(r, rg) {
                    if res.storages[acc.storage.index()].differentiable {
                        out.extend(read_slots(u, &acc));
                    }
                }
            }
            ExprVertexKind::FunctionCall(args) => {
                for a in args {
                    if let Some(acc) = res.access(r, &a.graph) {
                        if res.storages[acc.storage.index()].differentiable {
                            out.extend(read_slots(u, &acc));
                        }
                    }
                }
            }
            ExprVertexKind::Intrinsic | ExprVertexKind::BooleanOperation => {
                let name = vertex.attrs.get("name").unwrap_or("");
                if matches!(vertex.kind, ExprVertexKind::BooleanOperation)
                    || non_differentiable(name)
                {
                    continue;
                }
                let args = &g.args[v];
                if name == "sign_scal_scal" {
                    stack.extend(args.first().copied());
                } else {
                    stack.extend(args.iter().copied());
                }
            }
            ExprVertexKind::Constant | ExprVertexKind::ArgumentReference => {}
        }
    }
    let _ = p;
}

fn all_reads(p: &Program, res: &mut Resolver, u: &Universe, r: RoutineId, s: StmtId) -> Vec<u32> {
    let mut out = Vec::new();
    let mut refs = Vec::new();
    match &p.stmts[s].kind {
        StmtKind::Assignment(a) => {
            for_each_subscript_ref(&a.lhs.graph, &mut |g| refs.push(g));
            for_each_ref_in_expr(&a.rhs, &mut |g| refs.push(g));
        }
        _ => stmt_refs(p, s, &mut |g| refs.push(g)),
    }
    for g in refs {
        if let Some(acc) = res.access(r, g) {
            out.extend(read_slots(u, &acc));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether a flow graph calls a routine without a body.
fn calls_black_box(p: &Program, fg: &FlowGraph) -> bool {
    let routines = xaif_model::RoutineIndex::new(p);
    fg.nodes.iter().flat_map(|n| n.stmts.iter()).any(|s| {
        matches!(p.stmts[*s].kind, StmtKind::SubroutineCall(_))
            && p.stmts[*s]
                .attrs
                .get("symbol_id")
                .and_then(|c| routines.get(c))
                .is_none_or(|r| !p.routines[r].has_body(p))
    })
}

/// The variables of scopes that belong to no routine (the global scope and
/// modules), temporaries left out.
fn global_variables(p: &Program) -> Vec<SymbolId> {
    let routine_scopes: BTreeSet<&str> = p
        .routines
        .iter()
        .filter_map(|(_, r)| r.attrs.get("controlflowgraph_scope_id"))
        .collect();
    p.symbols
        .iter()
        .filter(|(_, s)| {
            s.kind() == xaif_model::SymbolKind::Variable
                && !s.attrs.flag("temp", false)
                && !routine_scopes.contains(p.scopes[s.scope].attrs.get("vertex_id").unwrap_or(""))
        })
        .map(|(id, _)| id)
        .collect()
}

fn effect(
    p: &Program,
    res: &mut Resolver,
    facts: &FxHashMap<RoutineId, RoutineFacts>,
    cg: &CallGraph,
    r: RoutineId,
    s: StmtId,
    pessimistic: bool,
) -> Effect {
    let u = &facts[&r].universe;
    let mut e = Effect {
        reads: all_reads(p, res, u, r, s),
        ..Effect::default()
    };
    match &p.stmts[s].kind {
        StmtKind::Assignment(a) => {
            if let Some(acc) = res.access(r, &a.lhs.graph) {
                let (w, must) = write_slots(u, &acc);
                e.writes = w;
                e.must = must;
                if res.storages[acc.storage.index()].differentiable {
                    dp_slots(p, res, u, r, &a.rhs, &mut e.dp);
                    e.dp.sort_unstable();
                    e.dp.dedup();
                }
            }
        }
        StmtKind::SubroutineCall(args) => {
            let callee = cg
                .call_sites(r)
                .iter()
                .find(|(x, _)| *x == s)
                .and_then(|(_, c)| *c);
            let mut by_pos: FxHashMap<usize, Option<&VarRef>> = FxHashMap::default();
            let mut actuals = Vec::new();
            let mut index_reads = Vec::new();
            for (i, a) in args.iter().enumerate() {
                let pos = a
                    .attrs
                    .int("position")
                    .map(|x| x.max(1) as usize)
                    .unwrap_or(i + 1);
                match &a.value {
                    ArgValue::Variable(v) => {
                        by_pos.insert(pos, Some(v));
                        if let Some(acc) = res.access(r, &v.graph) {
                            actuals.extend(read_slots(u, &acc));
                        }
                        let mut refs = Vec::new();
                        for_each_subscript_ref(&v.graph, &mut |g| refs.push(g));
                        for g in refs {
                            if let Some(acc) = res.access(r, g) {
                                index_reads.extend(read_slots(u, &acc));
                            }
                        }
                    }
                    ArgValue::Constant(_) => {
                        by_pos.insert(pos, None);
                    }
                }
            }
            actuals.sort_unstable();
            actuals.dedup();
            index_reads.sort_unstable();
            index_reads.dedup();
            match callee {
                Some(c) => {
                    let mut accs: FxHashMap<usize, Access> = FxHashMap::default();
                    for (pos, v) in &by_pos {
                        if let Some(v) = v {
                            if let Some(acc) = res.access(r, &v.graph) {
                                accs.insert(*pos, acc);
                            }
                        }
                    }
                    let mut call = binding(res, &facts[&c], c, u, &accs);
                    call.index_reads = index_reads;
                    call.actuals = actuals;
                    e.call = Some(call);
                }
                None => {
                    e.opaque = true;
                    let mut touched = actuals.clone();
                    if pessimistic {
                        for (slot, sl) in u.slots() {
                            if matches!(res.storages[sl.storage.index()].key, StorageKey::Shared(_))
                            {
                                touched.push(slot);
                            }
                        }
                        touched.sort_unstable();
                        touched.dedup();
                        e.reads.extend(touched.iter().copied());
                        e.reads.sort_unstable();
                        e.reads.dedup();
                    }
                    e.writes = touched.clone();
                    e.dp = touched
                        .iter()
                        .copied()
                        .filter(|x| res.storages[u.slot(*x).storage.index()].differentiable)
                        .collect();
                }
            }
        }
        StmtKind::InlinableCall(_) => {
            e.opaque = true;
            e.writes = e.reads.clone();
            e.dp = e
                .reads
                .iter()
                .copied()
                .filter(|x| res.storages[u.slot(*x).storage.index()].differentiable)
                .collect();
        }
        StmtKind::Marker | StmtKind::DerivativePropagator(_) => {}
    }
    e
}

/// How the slots of callee `c` map to the caller's (universe `ur`) at a call
/// with actual arguments `actuals` (by position).
fn binding(
    res: &Resolver,
    callee: &RoutineFacts,
    c: RoutineId,
    ur: &Universe,
    actuals: &FxHashMap<usize, Access>,
) -> CallEffect {
    let uc = &callee.universe;
    let mut may = vec![Vec::new(); uc.len()];
    let mut covers: Vec<(u32, Vec<u32>)> = Vec::new();
    let mut shared: BTreeSet<StorageId> = BTreeSet::new();
    for (a, slot) in uc.slots() {
        let st = slot.storage;
        if let Some(pos) = callee.formal_position(st) {
            let Some(acc) = actuals.get(&pos) else {
                continue;
            };
            let t = acc.storage;
            let formal_scalar = res.storages[st.index()].rank == 0;
            let actual_scalar = res.storages[t.index()].rank == 0;
            match (&acc.shape, formal_scalar) {
                (Shape::Elem(k), true) => {
                    if let Some(cs) = ur.slot_for_elem(t, k) {
                        may[a as usize] = vec![cs];
                        if ur.elem_slot(t, k) == Some(cs) {
                            covers.push((cs, vec![a]));
                        }
                    }
                }
                (Shape::Whole, true) if actual_scalar => {
                    if let Some(cs) = ur.rest_slot(t) {
                        may[a as usize] = vec![cs];
                        covers.push((cs, vec![a]));
                    }
                }
                _ => may[a as usize] = ur.slots_of(t).to_vec(),
            }
        } else if matches!(res.storages[st.index()].key, StorageKey::Local { routine, .. } if routine == c)
        {
            // The callee's own frame: invisible to the caller.
        } else if ur.has(st) {
            shared.insert(st);
            may[a as usize] = match &slot.part {
                Part::All => ur.slots_of(st).to_vec(),
                Part::Elem(k) => ur.slot_for_elem(st, k).into_iter().collect(),
                Part::Others => ur
                    .slots_of(st)
                    .iter()
                    .copied()
                    .filter(|cs| match &ur.slot(*cs).part {
                        Part::Elem(k) => uc.elem_slot(st, k).is_none(),
                        _ => true,
                    })
                    .collect(),
            };
        }
    }
    for st in shared {
        for &cs in ur.slots_of(st) {
            let cover: Vec<u32> = match &ur.slot(cs).part {
                Part::All => uc.slots_of(st).to_vec(),
                Part::Elem(k) => uc.slot_for_elem(st, k).into_iter().collect(),
                Part::Others => uc
                    .slots_of(st)
                    .iter()
                    .copied()
                    .filter(|a| match &uc.slot(*a).part {
                        Part::Elem(k) => ur.elem_slot(st, k).is_none(),
                        _ => true,
                    })
                    .collect(),
            };
            covers.push((cs, cover));
        }
    }
    CallEffect {
        callee: c,
        may,
        covers,
        index_reads: Vec::new(),
        actuals: Vec::new(),
    }
}

impl StorageId {
    pub(crate) fn from_index(i: usize) -> Self {
        StorageId::new(i as u32)
    }
}
