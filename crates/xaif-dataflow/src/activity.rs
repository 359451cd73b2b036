//! Activity analysis (seed §4): which variables carry derivatives.
//!
//! A variable is active at a point when it is *varied* (depends on some
//! independent) and *useful* (some dependent depends on it). Varied sets flow
//! forward from the independents, useful sets backward from the dependents,
//! both crossing statements, loops and calls through the `Dep` summaries
//! ([`crate::dep`]). A symbol is active when its storage is active at some
//! point of some routine.
//!
//! The front end also marks symbols `active`; [`compare_with_front_end`]
//! reports where we differ and why, and [`PassivationPlan`] applies our
//! result to a program: it only ever turns front-end-active symbols passive
//! (unless asked to activate), and only whole groups of symbols bound to one
//! another at call sites, so that no call passes an active actual to a
//! passive formal because of us.

use rustc_hash::FxHashMap;
use xaif_model::{
    CfgVertex, Program, Routine, RoutineId, SecondaryMap, Stmt, StmtId, Symbol, SymbolId,
    SymbolKind,
};

use crate::dep::{Dep, DepProblem};
use crate::error::DataflowError;
use crate::facts::{Effect, ProgramFacts, RoutineFacts};
use crate::framework::{
    bottom_up, summarize, top_down, Contribution, Direction, Record, RoutineSummary, Solver,
};
use crate::loc::{base_name, StorageId};
use crate::LocSet;

/// A variable named by the user: `ROUTINE:VARIABLE`, both by their Fortran
/// names (`head:x` for `X_1` of `head__24`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarSpec {
    /// The routine's Fortran name.
    pub routine: String,
    /// The variable's name (a `symbol_id`, or its name without the
    /// front end's `_<digits>` suffix), case-insensitive.
    pub variable: String,
}

impl VarSpec {
    /// Parses `ROUTINE:VARIABLE`.
    pub fn parse(text: &str) -> Result<Self, DataflowError> {
        match text.split_once(':') {
            Some((r, v)) if !r.trim().is_empty() && !v.trim().is_empty() => Ok(VarSpec {
                routine: r.trim().to_ascii_lowercase(),
                variable: v.trim().to_string(),
            }),
            _ => Err(DataflowError::BadSpec(text.to_string())),
        }
    }
}

/// Independents and dependents of an activity analysis.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ActivitySpec {
    /// Inputs to differentiate with respect to; empty: the active formals
    /// of the top routine.
    pub independents: Vec<VarSpec>,
    /// Outputs to differentiate; empty: the active formals of the top
    /// routine.
    pub dependents: Vec<VarSpec>,
}

/// Activity facts of one statement, in its routine's universe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StmtActivity {
    /// The routine holding the statement.
    pub routine: RoutineId,
    /// Varied just before.
    pub in_vary: LocSet,
    /// Varied just after.
    pub out_vary: LocSet,
    /// Useful just before.
    pub in_useful: LocSet,
    /// Useful just after.
    pub out_useful: LocSet,
    /// Whether the statement computes a derivative (it writes or passes a
    /// location that is varied and useful).
    pub active: bool,
}

/// Activity facts at a flow node (a basic block or other CFG vertex).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockActivity {
    /// Varied at entry and exit.
    pub vary: (LocSet, LocSet),
    /// Useful at entry and exit.
    pub useful: (LocSet, LocSet),
}

/// Activity facts of one routine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutineActivity {
    /// The routine's differentiable dependencies from entry to exit
    /// (`None`: it never returns).
    pub dep: Option<Dep>,
    /// Varied on entry, over all calling contexts (`InVary(S)`).
    pub entry_vary: LocSet,
    /// Useful on exit, over all calling contexts (`OutUseful(S)`).
    pub exit_useful: LocSet,
    /// Slots active somewhere in the routine.
    pub active: LocSet,
}

/// The result of activity analysis, in side tables keyed by model handles.
#[derive(Clone, Debug, Default)]
pub struct Activity {
    /// Per statement.
    pub stmts: SecondaryMap<Stmt, StmtActivity>,
    /// Per CFG vertex (the node of the vertex itself; for loop vertices the
    /// header).
    pub vertices: SecondaryMap<CfgVertex, BlockActivity>,
    /// Per analysed routine.
    pub routines: SecondaryMap<Routine, RoutineActivity>,
    /// Per variable symbol of the analysed routines: our verdict.
    pub symbols: SecondaryMap<Symbol, bool>,
    /// Our verdict per storage, by [`StorageId::index`]: varied and useful
    /// at some point, and used differentiably somewhere (written or read in
    /// a differentiable position by an active statement, bound at a call to
    /// such a storage, or an independent or dependent). A variable that is
    /// varied and useful only while it passes untouched through a routine
    /// needs no derivative there.
    pub storages: Vec<bool>,
    /// Whether each storage is varied and useful at some point.
    pub pointwise: Vec<bool>,
    /// Whether each storage is used differentiably somewhere.
    pub used: Vec<bool>,
    /// Whether each storage is varied somewhere.
    pub varied: Vec<bool>,
    /// Whether each storage is useful somewhere.
    pub useful: Vec<bool>,
    /// The resolved independents.
    pub independents: Vec<(RoutineId, StorageId)>,
    /// The resolved dependents.
    pub dependents: Vec<(RoutineId, StorageId)>,
    pub(crate) dep: FxHashMap<RoutineId, RoutineSummary<Dep>>,
}

impl Activity {
    /// Whether storage `st` is active anywhere.
    pub fn storage_active(&self, st: StorageId) -> bool {
        self.storages.get(st.index()).copied().unwrap_or(false)
    }

    /// Our verdict on symbol `sym`; `None` when no analysed routine touches
    /// it.
    pub fn symbol_active(&self, sym: SymbolId) -> Option<bool> {
        self.symbols.get(sym).copied()
    }
}

/// The routines the program starts from: those no analysed routine calls;
/// when several, the one named `head` if there is one.
pub fn top_routines(facts: &ProgramFacts) -> Vec<RoutineId> {
    let roots = facts.callgraph.roots();
    if roots.len() > 1 {
        if let Some(h) = roots.iter().find(|r| facts.routines[r].name == "head") {
            return vec![*h];
        }
    }
    roots
}

/// Resolves `spec` to a routine and storage.
pub fn resolve_spec(
    facts: &ProgramFacts,
    spec: &VarSpec,
) -> Result<(RoutineId, StorageId), DataflowError> {
    let r = facts
        .callgraph
        .routines
        .iter()
        .copied()
        .find(|r| facts.routines[r].name == spec.routine)
        .ok_or_else(|| {
            let names: Vec<&str> = facts
                .callgraph
                .routines
                .iter()
                .map(|r| facts.routines[r].name.as_str())
                .collect();
            DataflowError::UnknownRoutine {
                routine: spec.routine.clone(),
                known: names.join(", "),
            }
        })?;
    let want = spec.variable.to_ascii_lowercase();
    let u = &facts.routines[&r].universe;
    let mut found = None;
    for (_, slot) in u.slots() {
        let st = &facts.storages[slot.storage.index()];
        let hit = st.symbols.iter().any(|s| {
            let name = facts.program.symbols[*s].name();
            name.eq_ignore_ascii_case(&spec.variable) || base_name(name) == want
        });
        if hit {
            found = Some(slot.storage);
            break;
        }
    }
    found
        .map(|st| (r, st))
        .ok_or_else(|| DataflowError::UnknownVariable {
            routine: spec.routine.clone(),
            variable: spec.variable.clone(),
        })
}

fn default_spec(facts: &ProgramFacts) -> Vec<(RoutineId, StorageId)> {
    let mut out = Vec::new();
    for r in top_routines(facts) {
        let routine = &facts.program.routines[r];
        let Some(args) = &routine.arguments else {
            continue;
        };
        for (i, a) in args.args.iter().enumerate() {
            let _ = i;
            let Some(pos) = a.int("position") else {
                continue;
            };
            let Some(Some(st)) = facts.routines[&r].formals.get(pos.max(1) as usize - 1) else {
                continue;
            };
            let active = facts.storages[st.index()]
                .symbols
                .iter()
                .any(|s| facts.program.symbols[*s].is_active());
            if active && facts.storages[st.index()].differentiable {
                out.push((r, *st));
            }
        }
    }
    out
}

fn seeds(facts: &ProgramFacts, vars: &[(RoutineId, StorageId)]) -> FxHashMap<RoutineId, LocSet> {
    let mut out: FxHashMap<RoutineId, LocSet> = FxHashMap::default();
    for (r, st) in vars {
        let rf = &facts.routines[r];
        out.entry(*r)
            .or_insert_with(|| rf.empty())
            .union_with(&rf.slots_of(*st));
    }
    out
}

/// Runs `Dep`, varied and useful analyses.
///
/// The steps: resolve the independents and dependents, summarise every
/// routine's dependences bottom-up, propagate varied sets forward from the
/// independents and useful sets backward from the dependents, then read
/// off each routine's and statement's activity, settle which storages are
/// used differentiably, and give the verdict per storage and symbol.
pub fn analyze_activity(
    facts: &ProgramFacts,
    spec: &ActivitySpec,
    solver: Solver,
) -> Result<Activity, DataflowError> {
    let (independents, dependents) = endpoints(facts, spec)?;
    let dep = dependences(facts, solver);
    let vary = propagate(
        facts,
        solver,
        &dep,
        seeds(facts, &independents),
        Direction::Forward,
    );
    let useful = propagate(
        facts,
        solver,
        &dep,
        seeds(facts, &dependents),
        Direction::Backward,
    );
    let mut act = Activity {
        storages: vec![false; facts.storages.len()],
        pointwise: vec![false; facts.storages.len()],
        used: vec![false; facts.storages.len()],
        varied: vec![false; facts.storages.len()],
        useful: vec![false; facts.storages.len()],
        independents,
        dependents,
        ..Activity::default()
    };
    for &r in &facts.callgraph.routines {
        routine_activity(facts, r, &vary[&r], &useful[&r], &dep, &mut act);
    }
    for (_, st) in act.independents.iter().chain(&act.dependents) {
        act.used[st.index()] = true;
    }
    used_through_calls(facts, &mut act);
    verdicts(facts, &mut act);
    act.dep = dep;
    Ok(act)
}

/// Resolved independents or dependents: (routine, storage) pairs.
type Endpoints = Vec<(RoutineId, StorageId)>;

/// Resolves the independents and dependents of `spec`; either list left
/// empty is the top routine's active formals.
fn endpoints(
    facts: &ProgramFacts,
    spec: &ActivitySpec,
) -> Result<(Endpoints, Endpoints), DataflowError> {
    let mut independents = spec
        .independents
        .iter()
        .map(|s| resolve_spec(facts, s))
        .collect::<Result<Vec<_>, _>>()?;
    let mut dependents = spec
        .dependents
        .iter()
        .map(|s| resolve_spec(facts, s))
        .collect::<Result<Vec<_>, _>>()?;
    if independents.is_empty() {
        independents = default_spec(facts);
    }
    if dependents.is_empty() {
        dependents = default_spec(facts);
    }
    Ok((independents, dependents))
}

/// The `Dep` summary of every routine (and of its loops), callees first.
fn dependences(facts: &ProgramFacts, solver: Solver) -> FxHashMap<RoutineId, RoutineSummary<Dep>> {
    bottom_up(&facts.callgraph, |r, table| {
        let prob = DepProblem {
            facts,
            routine: r,
            table,
            direction: Direction::Forward,
        };
        summarize(&prob, &facts.flows[&r], solver)
    })
}

/// Varied sets (`Forward`, from the independents) or useful sets
/// (`Backward`, from the dependents) through every routine, crossing
/// calls into their callees: per routine, the fact at its boundary and
/// the record of its statements and nodes.
fn propagate(
    facts: &ProgramFacts,
    solver: Solver,
    dep: &FxHashMap<RoutineId, RoutineSummary<Dep>>,
    seeds: FxHashMap<RoutineId, LocSet>,
    direction: Direction,
) -> FxHashMap<RoutineId, (LocSet, Record<LocSet>)> {
    let contribute = |_: &DepProblem, r: RoutineId, s: StmtId, fact: &LocSet| {
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
        dep,
        seeds,
        |r| DepProblem {
            facts,
            routine: r,
            table: dep,
            direction,
        },
        contribute,
    )
}

/// Adds `v ∩ u` (varied and useful) to `active`.
fn note_active(v: &LocSet, u: &LocSet, active: &mut LocSet) {
    let mut both = v.clone();
    both.intersect_with(u);
    active.union_with(&both);
}

/// Reads off routine `r`'s activity from its varied and useful records:
/// its statements' and vertices' facts, the slots active in it, and the
/// storages it finds varied, useful, active pointwise or used.
fn routine_activity(
    facts: &ProgramFacts,
    r: RoutineId,
    (entry_vary, vrec): &(LocSet, Record<LocSet>),
    (exit_useful, urec): &(LocSet, Record<LocSet>),
    dep: &FxHashMap<RoutineId, RoutineSummary<Dep>>,
    act: &mut Activity,
) {
    let rf = &facts.routines[&r];
    let mut active = rf.empty();
    note_active(entry_vary, &urec.end, &mut active);
    note_active(&vrec.end, exit_useful, &mut active);
    for (&s, (vb, va)) in &vrec.stmts {
        let Some((ub, ua)) = urec.stmts.get(&s) else {
            continue;
        };
        note_active(vb, ub, &mut active);
        note_active(va, ua, &mut active);
        let e = facts.effect(r, s);
        let is_active = statement_active(rf, e, (vb, va), (ub, ua), &mut act.used);
        act.stmts.insert(
            s,
            StmtActivity {
                routine: r,
                in_vary: vb.clone(),
                out_vary: va.clone(),
                in_useful: ub.clone(),
                out_useful: ua.clone(),
                active: is_active,
            },
        );
    }
    for (n, node) in rf.flow.nodes.iter().enumerate() {
        if let (Some((vb, va)), Some((ub, ua))) = (&vrec.nodes[n], &urec.nodes[n]) {
            note_active(vb, ub, &mut active);
            note_active(va, ua, &mut active);
            if node.role == crate::flow::NodeRole::Vertex {
                act.vertices.insert(
                    node.vertex,
                    BlockActivity {
                        vary: (vb.clone(), va.clone()),
                        useful: (ub.clone(), ua.clone()),
                    },
                );
            }
        }
    }
    let mark = |set: &LocSet, table: &mut Vec<bool>| {
        for s in set.iter() {
            table[rf.universe.slot(s).storage.index()] = true;
        }
    };
    mark(&active, &mut act.pointwise);
    mark(entry_vary, &mut act.varied);
    mark(exit_useful, &mut act.useful);
    for (vb, va) in vrec.stmts.values() {
        mark(vb, &mut act.varied);
        mark(va, &mut act.varied);
    }
    for (ub, ua) in urec.stmts.values() {
        mark(ub, &mut act.useful);
        mark(ua, &mut act.useful);
    }
    act.routines.insert(
        r,
        RoutineActivity {
            dep: dep.get(&r).and_then(|d| d.summary.clone()),
            entry_vary: entry_vary.clone(),
            exit_useful: exit_useful.clone(),
            active,
        },
    );
}

/// Whether a statement of effect `e` (in routine `rf`) computes a
/// derivative, given what is varied and useful before and after it: a
/// call or opaque statement touches a live (varied and useful) location;
/// another writes one live after it from a varied differentiable read.
/// Marks in `used_storages` the storages an active statement uses
/// differentiably.
fn statement_active(
    rf: &RoutineFacts,
    e: &Effect,
    (vb, va): (&LocSet, &LocSet),
    (ub, ua): (&LocSet, &LocSet),
    used_storages: &mut [bool],
) -> bool {
    let mut touched: LocSet = e.writes.iter().copied().collect();
    if let Some(call) = &e.call {
        for list in &call.may {
            for &c in list {
                touched.insert(c);
            }
        }
    }
    let mut live = vb.clone();
    live.intersect_with(ub);
    let mut live_after = va.clone();
    live_after.intersect_with(ua);
    live.union_with(&live_after);
    let is_active = if e.call.is_some() || e.opaque {
        touched.intersects(&live)
    } else {
        touched.intersects(&live_after) && LocSet::from_slots(e.dp.iter().copied()).intersects(vb)
    };
    if is_active {
        let mut used = rf.empty();
        if e.call.is_none() {
            let mut w: LocSet = e.writes.iter().copied().collect();
            w.intersect_with(&live_after);
            used.union_with(&w);
            let mut d: LocSet = e.dp.iter().copied().collect();
            d.intersect_with(vb);
            used.union_with(&d);
            if e.opaque {
                let mut t = touched.clone();
                t.intersect_with(&live);
                used.union_with(&t);
            }
        }
        for x in used.iter() {
            used_storages[rf.universe.slot(x).storage.index()] = true;
        }
    }
    is_active
}

/// A storage bound at a call to a storage used in the callee is used too
/// (the actual must carry the derivative the callee computes), when it is
/// active pointwise. Callees first, so one pass settles everything but
/// recursion, which repeats until nothing changes.
fn used_through_calls(facts: &ProgramFacts, act: &mut Activity) {
    let bottom_up_order: Vec<RoutineId> = facts.callgraph.sccs.iter().flatten().copied().collect();
    loop {
        let mut changed = false;
        for &r in &bottom_up_order {
            let rf = &facts.routines[&r];
            for e in rf.effects.values() {
                let Some(call) = &e.call else { continue };
                let callee = &facts.routines[&call.callee];
                for (a, list) in call.may.iter().enumerate() {
                    let sa = callee.universe.slot(a as u32).storage;
                    if !act.used[sa.index()] {
                        continue;
                    }
                    for &c in list {
                        let sc = rf.universe.slot(c).storage;
                        if act.pointwise[sc.index()] && !act.used[sc.index()] {
                            act.used[sc.index()] = true;
                            changed = true;
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

/// The verdicts: a storage is active when it is active pointwise and used
/// differentiably; a variable symbol is active when its storage is.
fn verdicts(facts: &ProgramFacts, act: &mut Activity) {
    for i in 0..facts.storages.len() {
        act.storages[i] = act.pointwise[i] && act.used[i];
    }
    for (i, st) in facts.storages.iter().enumerate() {
        for &sym in &st.symbols {
            if facts.program.symbols[sym].kind() == SymbolKind::Variable {
                act.symbols.insert(sym, act.storages[i]);
            }
        }
    }
}

/// Where our activity differs from the front end's `active` flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActivityDiff {
    /// The symbol.
    pub symbol: SymbolId,
    /// Its `symbol_id`.
    pub name: String,
    /// The front end's flag.
    pub front_end: bool,
    /// Ours.
    pub ours: bool,
    /// Why, when we can tell.
    pub explanation: Option<String>,
}

/// Lists every variable symbol of the analysed routines on which our
/// verdict differs from the front end's.
pub fn compare_with_front_end(facts: &ProgramFacts, act: &Activity) -> Vec<ActivityDiff> {
    let p = facts.program;
    let mut out = Vec::new();
    for (sym, &ours) in act.symbols.iter() {
        let symbol = &p.symbols[sym];
        let fe = symbol.is_active();
        if fe == ours {
            continue;
        }
        let st = facts.storage_of_symbol(sym);
        let explanation = match (ours, st) {
            (true, Some(st)) => facts.storages[st.index()]
                .symbols
                .iter()
                .find(|o| **o != sym && p.symbols[**o].is_active())
                .map(|o| {
                    format!(
                        "shares its storage with the front-end-active `{}`",
                        p.symbols[*o].name()
                    )
                }),
            (false, Some(st)) => Some(match (act.varied[st.index()], act.useful[st.index()]) {
                (false, false) => "neither varied nor useful".to_string(),
                (false, true) => "never depends on an independent".to_string(),
                (true, false) => "no dependent depends on it".to_string(),
                (true, true) if act.pointwise[st.index()] => {
                    "varied and useful only where no statement uses it differentiably".to_string()
                }
                (true, true) => "never varied and useful at the same point".to_string(),
            }),
            _ => None,
        };
        out.push(ActivityDiff {
            symbol: sym,
            name: symbol.name().to_string(),
            front_end: fe,
            ours,
            explanation,
        });
    }
    out
}

/// Options of [`PassivationPlan::new`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassivationOptions {
    /// Also set `active="1"` on symbols we find active that the front end
    /// marked passive (with every symbol bound to them at call sites).
    pub allow_activation: bool,
}

/// Changes of `active` flags derived from our activity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassivationPlan {
    /// Symbols to mark `active="0"`.
    pub passivate: Vec<SymbolId>,
    /// Symbols to mark `active="1"`.
    pub activate: Vec<SymbolId>,
    /// Front-end-active symbols we find passive but keep active, with why.
    pub kept: Vec<(SymbolId, String)>,
}

impl PassivationPlan {
    /// Plans the changes. A symbol is passivated only when every storage
    /// bound to its storage at some call (formal ↔ actual, transitively) is
    /// passive for us, and none of them is passed to a routine without a
    /// body (whose expectations we cannot see).
    pub fn new(facts: &ProgramFacts, act: &Activity, opts: PassivationOptions) -> Self {
        let p = facts.program;
        let n = facts.storages.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(parent: &mut [usize], mut x: usize) -> usize {
            while parent[x] != x {
                parent[x] = parent[parent[x]];
                x = parent[x];
            }
            x
        }
        let mut external = vec![false; n];
        for (&r, rf) in &facts.routines {
            for e in rf.effects.values() {
                if let Some(call) = &e.call {
                    let callee = &facts.routines[&call.callee];
                    for (a, list) in call.may.iter().enumerate() {
                        let sa = callee.universe.slot(a as u32).storage;
                        for &c in list {
                            let sc = rf.universe.slot(c).storage;
                            let (x, y) =
                                (find(&mut parent, sa.index()), find(&mut parent, sc.index()));
                            parent[x] = y;
                        }
                    }
                } else if e.opaque {
                    for &w in &e.writes {
                        external[rf.universe.slot(w).storage.index()] = true;
                    }
                }
            }
            let _ = r;
        }
        let mut class_active = vec![false; n];
        let mut class_external = vec![false; n];
        for (i, ext) in external.iter().enumerate() {
            let c = find(&mut parent, i);
            class_active[c] |= act.storages[i];
            class_external[c] |= *ext;
        }
        let mut plan = PassivationPlan::default();
        for (i, st) in facts.storages.iter().enumerate() {
            let c = find(&mut parent, i);
            for &sym in &st.symbols {
                let symbol = &p.symbols[sym];
                if symbol.kind() != SymbolKind::Variable {
                    continue;
                }
                let fe = symbol.is_active();
                if fe && !act.storages[i] {
                    if class_active[c] {
                        plan.kept.push((
                            sym,
                            "bound at a call to a variable that is active".to_string(),
                        ));
                    } else if class_external[c] {
                        plan.kept
                            .push((sym, "passed to a routine without a body".to_string()));
                    } else {
                        plan.passivate.push(sym);
                    }
                } else if !fe && opts.allow_activation && class_active[c] && st.differentiable {
                    plan.activate.push(sym);
                }
            }
        }
        plan.passivate.sort();
        plan.activate.sort();
        plan.kept.sort();
        plan
    }

    /// Sets the planned flags on `p` (the program the plan was made for).
    pub fn apply(&self, p: &mut Program) {
        for &s in &self.passivate {
            p.symbols[s].attrs.set("active", "0");
        }
        for &s in &self.activate {
            p.symbols[s].attrs.set("active", "1");
        }
    }
}

/// A flow-insensitive, context-insensitive over-approximation of the
/// storages through which an independent may reach a dependent: a storage
/// graph with an edge from every differentiably read storage to every
/// written one and both ways across every formal ↔ actual binding. Kills,
/// order and paths are ignored, so whatever it excludes is certainly off
/// every dependency path; tests use it to check passive verdicts without
/// trusting the flow-sensitive analysis.
pub fn coarse_dependency_paths(
    facts: &ProgramFacts,
    independents: &[(RoutineId, StorageId)],
    dependents: &[(RoutineId, StorageId)],
) -> Vec<bool> {
    let n = facts.storages.len();
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    let st = |rf: &crate::RoutineFacts, slot: u32| rf.universe.slot(slot).storage.index();
    for rf in facts.routines.values() {
        for e in rf.effects.values() {
            if let Some(call) = &e.call {
                let callee = &facts.routines[&call.callee];
                for (a, list) in call.may.iter().enumerate() {
                    let sa = st(callee, a as u32);
                    for &c in list {
                        let sc = st(rf, c);
                        succ[sa].push(sc);
                        succ[sc].push(sa);
                    }
                }
            } else {
                for &d in &e.dp {
                    for &w in &e.writes {
                        succ[st(rf, d)].push(st(rf, w));
                    }
                }
            }
        }
    }
    let mut pred: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (u, list) in succ.iter().enumerate() {
        for &v in list {
            pred[v].push(u);
        }
    }
    let reach = |seeds: &[(RoutineId, StorageId)], adj: &Vec<Vec<usize>>| {
        let mut seen = vec![false; n];
        let mut stack: Vec<usize> = seeds.iter().map(|(_, s)| s.index()).collect();
        while let Some(v) = stack.pop() {
            if std::mem::replace(&mut seen[v], true) {
                continue;
            }
            stack.extend(adj[v].iter().copied());
        }
        seen
    };
    let fwd = reach(independents, &succ);
    let bwd = reach(dependents, &pred);
    (0..n).map(|i| fwd[i] && bwd[i]).collect()
}
