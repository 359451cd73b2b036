//! What the snapshot of a checkpointed loop must hold.
//!
//! A checkpointed loop is re-run from snapshots taken between its
//! iterations, during its adjoint sweep: long after its first run, in split
//! mode even in another activation of its routine. A snapshot taken before
//! iteration `k` must therefore hold every variable that iterations `k…`
//! may read before writing it and that may hold another value by the time
//! the snapshot is restored (`docs/decisions.md`, "Checkpointed loops"):
//!
//! - *read before written*: the upward-exposed reads of one iteration
//!   (the body and the loop's update, callees' upward-exposed reads mapped
//!   to the caller through the argument binding; a variable counts as
//!   written only where it is definitely written, whole), plus everything
//!   the body's branch and loop conditions read;
//! - *may change*: the routine's locals and formals always (a split
//!   reversal restores them in a fresh activation, whose formals may be
//!   bound to conversion temporaries), and any other storage the loop, the
//!   code after it or the code after its routine returns may write before
//!   the adjoint sweep starts (the TBR analysis's overwritten-later
//!   facts, over every calling context).
//!
//! Results are whole storages (a snapshot holds whole variables, arrays
//! included, never sections), named by the routine's own declaration of a
//! shared variable where it has one.

use rustc_hash::FxHashMap;
use xaif_model::{RoutineId, StmtId, SymbolId, VertexId};

use crate::facts::ProgramFacts;
use crate::flow::{NodeRole, Region};
use crate::framework::{bottom_up, summarize, RoutineSummary, Solver, Summaries};
use crate::loc::{StorageId, StorageKey};
use crate::tbr::{condition_reads_of_nodes, written_later_records, ReqKill};
use crate::LocSet;

/// Upward-exposed reads (`req`) and definite writes (`kill`).
struct Exposed<'a, 'p> {
    facts: &'a ProgramFacts<'p>,
    routine: RoutineId,
    table: &'a FxHashMap<RoutineId, RoutineSummary<ReqKill>>,
}

impl Summaries for Exposed<'_, '_> {
    type Summary = ReqKill;

    fn identity(&self) -> ReqKill {
        ReqKill::default()
    }

    fn stmt(&self, s: StmtId) -> Option<ReqKill> {
        let e = self.facts.effect(self.routine, s);
        let mut req: LocSet = e.reads.iter().copied().collect();
        let mut kill = LocSet::new();
        if e.must {
            kill = e.writes.iter().copied().collect();
        }
        if let Some(call) = &e.call {
            let callee = self.table.get(&call.callee)?.summary.as_ref()?;
            let n = self.facts.routines[&self.routine].universe.len();
            req.union_with(&call.to_caller(&callee.req, n));
            kill.union_with(&call.kills(&callee.kill, n));
        }
        Some(ReqKill { req, kill })
    }

    fn seq(&self, a: &ReqKill, b: &ReqKill) -> ReqKill {
        let mut req = b.req.clone();
        req.difference_with(&a.kill);
        req.union_with(&a.req);
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

/// The flow nodes inside the body of loop `id` of `region` (explicit
/// stack: the tree is as deep as the CFG's nesting).
fn loop_body_nodes(region: &Region, id: u32) -> Option<Vec<u32>> {
    let mut stack = vec![(region, false)];
    let mut out = Vec::new();
    let mut found = false;
    while let Some((r, inside)) = stack.pop() {
        match r {
            Region::Node(n) => {
                if inside {
                    out.push(*n);
                }
            }
            Region::Seq(items) | Region::Branch(items) => {
                stack.extend(items.iter().map(|x| (x, inside)));
            }
            Region::Loop { body, id: this, .. } => {
                let enter = inside || *this == id;
                found |= *this == id;
                stack.push((body, enter));
            }
        }
    }
    found.then_some(out)
}

/// The state of each loop `(routine, loop vertex)` of `loops`: the
/// storages its snapshot holds, as symbols of the routine, in storage
/// order. `changes` false takes every exposed read as changing (when the
/// program may store where its XAIF does not say). A loop the analysis
/// cannot place (an unstructured routine) gets every variable its routine
/// and callees may read.
pub fn loop_states(
    facts: &ProgramFacts,
    solver: Solver,
    loops: &[(RoutineId, VertexId)],
    changes: bool,
) -> Vec<Vec<SymbolId>> {
    let exposed = exposed_reads(facts, solver);
    let later = changes.then(|| written_later_records(facts, solver));
    loops
        .iter()
        .map(|&(r, v)| {
            let read = loop_reads(facts, &exposed, r, v);
            let changed = later.as_ref().and_then(|l| changed_from(facts, l, r, v));
            state_symbols(facts, r, &read, changed.as_ref())
        })
        .collect()
}

/// Every routine's upward-exposed reads and definite writes, with its
/// loops' (callees' conditions counted as read first).
pub(crate) fn exposed_reads(
    facts: &ProgramFacts,
    solver: Solver,
) -> FxHashMap<RoutineId, RoutineSummary<ReqKill>> {
    bottom_up(&facts.callgraph, |r, table| {
        let prob = Exposed {
            facts,
            routine: r,
            table,
        };
        let mut s = summarize(&prob, &facts.flows[&r], solver);
        // A callee's conditions are read before anything it writes.
        if let Some(summary) = s.summary.as_mut() {
            let nodes: Vec<u32> = (0..facts.flows[&r].nodes.len() as u32).collect();
            summary
                .req
                .union_with(&condition_reads_of_nodes(facts, r, &nodes));
        }
        s
    })
}

/// What iterations of loop `v` of routine `r` may read before writing.
pub(crate) fn loop_reads(
    facts: &ProgramFacts,
    exposed: &FxHashMap<RoutineId, RoutineSummary<ReqKill>>,
    r: RoutineId,
    v: VertexId,
) -> LocSet {
    let fg = &facts.flows[&r];
    let id = fg.loop_vertices.iter().position(|&x| x == v);
    let summary = exposed.get(&r);
    let body = id.and_then(|id| {
        let s = summary?.loops.get(id)?.clone()?;
        let nodes = loop_body_nodes(fg.region.as_ref()?, id as u32)?;
        Some((s, nodes))
    });
    match body {
        Some((s, nodes)) => {
            let mut read = s.req;
            for n in nodes {
                read.union_with(&test_reads(facts, r, n));
            }
            // The loop's own test.
            let own: Vec<u32> = fg
                .nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| n.vertex == v && n.role == NodeRole::Vertex)
                .map(|(i, _)| i as u32)
                .collect();
            read.union_with(&condition_reads_of_nodes(facts, r, &own));
            read
        }
        None => all_reads_of(facts, r),
    }
}

/// What the statements of an iteration of loop `v` of routine `r` (not
/// its conditions, nor the loop's own test) may read before it writes it:
/// the values an iteration computes its results from. `None` where the
/// analysis cannot place the loop.
pub(crate) fn loop_statement_reads(
    facts: &ProgramFacts,
    exposed: &FxHashMap<RoutineId, RoutineSummary<ReqKill>>,
    r: RoutineId,
    v: VertexId,
) -> Option<LocSet> {
    let fg = &facts.flows[&r];
    let id = fg.loop_vertices.iter().position(|&x| x == v)?;
    let s = exposed.get(&r)?.loops.get(id)?.clone()?;
    Some(s.req)
}

/// What the condition of flow node `n` of routine `r` reads before the
/// code around it writes it: all of it, but the variable of a `ForLoop`,
/// which its initialization (run just before the first test) definitely
/// writes.
fn test_reads(facts: &ProgramFacts, r: RoutineId, n: u32) -> LocSet {
    let mut read = condition_reads_of_nodes(facts, r, &[n]);
    let node = &facts.flows[&r].nodes[n as usize];
    if let xaif_model::VertexKind::ForLoop {
        init: Some(init), ..
    } = &facts.program.vertices[node.vertex].kind
    {
        let e = facts.effect(r, *init);
        if e.must {
            let written: LocSet = e.writes.iter().copied().collect();
            read.difference_with(&written);
        }
    }
    read
}

/// Every slot routine `r` and its callees may read (the fallback).
fn all_reads_of(facts: &ProgramFacts, r: RoutineId) -> LocSet {
    let reads = crate::tbr::analyze_may_read(facts, Solver::Iterative);
    reads.get(r).cloned().unwrap_or_else(|| {
        let mut all = facts.routines[&r].empty();
        for i in 0..facts.routines[&r].universe.len() as u32 {
            all.insert(i);
        }
        all
    })
}

/// What may be written from the start of loop `v` of routine `r` until
/// the adjoint sweep starts (the loop itself included).
fn changed_from(
    facts: &ProgramFacts,
    later: &FxHashMap<RoutineId, (LocSet, crate::framework::Record<LocSet>)>,
    r: RoutineId,
    v: VertexId,
) -> Option<LocSet> {
    let (_, rec) = later.get(&r)?;
    let fg = &facts.flows[&r];
    let node = fg
        .nodes
        .iter()
        .position(|n| n.vertex == v && n.role == NodeRole::Vertex)?;
    rec.nodes
        .get(node)?
        .as_ref()
        .map(|(before, _)| before.clone())
}

/// The symbols of the storages of `read` that are the routine's own or
/// in `changed` (all of them when `changed` is `None`).
fn state_symbols(
    facts: &ProgramFacts,
    r: RoutineId,
    read: &LocSet,
    changed: Option<&LocSet>,
) -> Vec<SymbolId> {
    let rf = &facts.routines[&r];
    let own = facts.own_symbols(r);
    let mut storages: Vec<StorageId> = Vec::new();
    for slot in read.iter() {
        let storage = rf.universe.slot(slot).storage;
        if storages.contains(&storage) {
            continue;
        }
        let st = &facts.storages[storage.index()];
        let local = matches!(st.key, StorageKey::Local { routine, .. } if routine == r);
        let keep = local
            || rf.formal_position(storage).is_some()
            || changed.is_none_or(|c| c.contains(slot));
        if keep {
            storages.push(storage);
        }
    }
    storages.sort_by_key(|s| s.index());
    storages
        .into_iter()
        .filter_map(|storage| {
            let st = &facts.storages[storage.index()];
            match &st.key {
                StorageKey::Local { symbol, .. } => Some(*symbol),
                StorageKey::Shared(_) => own.get(&storage).or(st.symbols.first()).copied(),
            }
        })
        .collect()
}
