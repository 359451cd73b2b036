//! The data-flow framework: summaries that compose, facts that propagate,
//! two solvers for each, and the call-graph drivers.
//!
//! Every analysis of the seed paper has the same two halves:
//!
//! - a *bottom-up* half that synthesises, for each program structure, a
//!   context-free summary of its effect (`Dep`; `Req` and `Kill`; the may-write
//!   set) — [`Summaries`];
//! - a *top-down* half that propagates a set of locations from the ends of
//!   the program through every structure, using the summaries where a
//!   structure is crossed as a whole (varied, useful, `InReq`, overwritten
//!   later) — [`Propagation`].
//!
//! Each half has two solvers. On a properly nested flow graph
//! ([`FlowGraph::region`]) the structured equations of the paper's Figures
//! 3, 5, 7 and 9 compose summaries over sequences, join them over branches
//! and close them over loops ([`Summaries::star`]: the only fixpoint, local
//! to one loop); a loop is crossed top-down by applying the closure of its
//! body once, with no iteration. On any flow graph the general equations of
//! Figures 2, 4, 6 and 8 are solved by a worklist in reverse post-order. The
//! two must agree on structured graphs; the tests check that.
//!
//! Routines are summarised bottom-up over the strongly connected components
//! of the call graph, iterating each recursive component from "never
//! returns" to a fixpoint ([`bottom_up`]); facts then flow top-down, the
//! facts of all calling contexts of a routine joined into its boundary fact,
//! re-solving a routine whenever that grows ([`top_down`]).

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;
use xaif_model::{RoutineId, StmtId};

use crate::callgraph::CallGraph;
use crate::flow::{FlowGraph, Region};

/// Which way facts flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the entry towards the exit (varied, required).
    Forward,
    /// From the exit towards the entry (useful, overwritten later).
    Backward,
}

/// Which solver to use for the equations of one routine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Solver {
    /// Structured equations where the flow graph is properly nested and not
    /// marked unstructured, the iterative ones elsewhere.
    #[default]
    Auto,
    /// The general iterative equations everywhere.
    Iterative,
}

/// The bottom-up half of an analysis: summaries of program structures.
///
/// A summary is a transfer function in closed form. `None` stands for
/// "never completes" (a call to a routine whose summary is still unknown
/// while a recursive component is being solved): it is absorbing for
/// sequence and neutral for join.
pub trait Summaries {
    /// The summary of a structure.
    type Summary: Clone + PartialEq;
    /// The summary of a structure that does nothing.
    fn identity(&self) -> Self::Summary;
    /// The summary of one statement.
    fn stmt(&self, s: StmtId) -> Option<Self::Summary>;
    /// `first` then `then`.
    fn seq(&self, first: &Self::Summary, then: &Self::Summary) -> Self::Summary;
    /// Either `into` or `other` (the result is stored in `into`).
    fn join(&self, into: &mut Self::Summary, other: &Self::Summary);
    /// Zero or more repetitions of `body`. The default iterates
    /// `x := x ∪ x;body` from the identity to its fixpoint.
    fn star(&self, body: &Self::Summary) -> Self::Summary {
        let mut x = self.identity();
        loop {
            let mut next = x.clone();
            self.join(&mut next, &self.seq(&x, body));
            if next == x {
                return x;
            }
            x = next;
        }
    }
}

/// The top-down half: facts propagated with the help of summaries.
pub trait Propagation: Summaries {
    /// The propagated fact.
    type Fact: Clone + PartialEq;
    /// Which way facts flow.
    fn direction(&self) -> Direction;
    /// The fact of a point no execution reaches.
    fn bottom(&self) -> Self::Fact;
    /// Joins `other` into `into`; returns whether `into` grew.
    fn join_fact(&self, into: &mut Self::Fact, other: &Self::Fact) -> bool;
    /// Crosses a structure of summary `s` in [`Propagation::direction`].
    fn apply(&self, s: &Self::Summary, fact: &Self::Fact) -> Self::Fact;
    /// Crosses one statement. The default applies its summary.
    fn transfer(&self, s: StmtId, fact: &Self::Fact) -> Self::Fact {
        match self.stmt(s) {
            Some(sum) => self.apply(&sum, fact),
            None => self.bottom(),
        }
    }
}

/// Summaries of the loops of a structured routine, by loop id.
pub type LoopSummaries<S> = Vec<Option<S>>;

/// A routine's summary and its loops' summaries.
pub type StructuredSummary<S> = (Option<S>, LoopSummaries<S>);

/// The summary of a routine body by the structured equations; also returns
/// the summary of every loop body. `None` when the graph has no structure.
pub fn summarize_structured<P: Summaries>(
    p: &P,
    fg: &FlowGraph,
) -> Option<StructuredSummary<P::Summary>> {
    let region = fg.region.as_ref()?;
    let mut loops = vec![None; fg.loops as usize];
    let s = summarize_region(p, fg, region, &mut loops);
    Some((s, loops))
}

/// The summary of a region and, in `loops`, of every loop inside it.
///
/// A post-order walk with an explicit stack: the region tree is as deep as
/// the CFG's nesting, which XAIF writes flat.
fn summarize_region<P: Summaries>(
    p: &P,
    fg: &FlowGraph,
    root: &Region,
    loops: &mut LoopSummaries<P::Summary>,
) -> Option<P::Summary> {
    /// An open composite region and what its children gave so far.
    enum Open<'r, S> {
        Seq {
            items: &'r [Region],
            next: usize,
            acc: Option<S>,
        },
        Branch {
            arms: &'r [Region],
            next: usize,
            acc: Option<S>,
        },
        Loop {
            post_test: bool,
            id: u32,
        },
    }
    let node = |n: u32| -> Option<P::Summary> {
        let mut acc = p.identity();
        for &s in &fg.nodes[n as usize].stmts {
            acc = p.seq(&acc, &p.stmt(s)?);
        }
        Some(acc)
    };
    fn open<'r, S>(
        r: &'r Region,
        identity: impl FnOnce() -> S,
        node: impl FnOnce(u32) -> Option<S>,
    ) -> Result<Option<S>, Open<'r, S>> {
        match r {
            Region::Node(n) => Ok(node(*n)),
            Region::Seq(items) => Err(Open::Seq {
                items,
                next: 0,
                acc: Some(identity()),
            }),
            Region::Branch(arms) => Err(Open::Branch {
                arms,
                next: 0,
                acc: None,
            }),
            Region::Loop { post_test, id, .. } => Err(Open::Loop {
                post_test: *post_test,
                id: *id,
            }),
        }
    }
    let mut stack: Vec<Open<'_, P::Summary>> = Vec::new();
    // The region to enter next, or the summary of the one just finished.
    let mut enter: Option<&Region> = Some(root);
    let mut done: Option<Option<P::Summary>> = None;
    loop {
        if let Some(r) = enter.take() {
            match open(r, || p.identity(), node) {
                Ok(s) => done = Some(s),
                Err(frame) => {
                    if let Region::Loop { body, .. } = r {
                        enter = Some(body);
                    }
                    stack.push(frame);
                    if enter.is_some() {
                        continue;
                    }
                }
            }
        }
        // Give a finished child's summary to its parent.
        if let Some(s) = done.take() {
            match stack.last_mut() {
                None => return s,
                Some(Open::Seq { acc, .. }) => {
                    *acc = match (acc.take(), s) {
                        (Some(a), Some(b)) => Some(p.seq(&a, &b)),
                        _ => None,
                    };
                }
                Some(Open::Branch { acc, .. }) => {
                    if let Some(s) = s {
                        match acc {
                            Some(a) => p.join(a, &s),
                            None => *acc = Some(s),
                        }
                    }
                }
                Some(Open::Loop { post_test, id }) => {
                    let (post_test, id) = (*post_test, *id);
                    stack.pop();
                    loops[id as usize] = s.clone();
                    done = Some(match s {
                        Some(b) => {
                            let star = p.star(&b);
                            Some(if post_test { p.seq(&b, &star) } else { star })
                        }
                        // The body never completes: only the zero-trip path
                        // of a pre-test loop leaves it.
                        None if post_test => None,
                        None => Some(p.identity()),
                    });
                    continue;
                }
            }
        }
        // Enter the next child of the innermost open region, or close it.
        match stack.last_mut() {
            None => return None,
            Some(Open::Seq { items, next, .. })
            | Some(Open::Branch {
                arms: items, next, ..
            }) => {
                if let Some(child) = items.get(*next) {
                    *next += 1;
                    enter = Some(child);
                } else {
                    done = Some(match stack.pop() {
                        Some(Open::Seq { acc, .. }) | Some(Open::Branch { acc, .. }) => acc,
                        _ => None,
                    });
                }
            }
            Some(Open::Loop { .. }) => {
                // A loop's body is entered when the loop is opened.
                return None;
            }
        }
    }
}

/// The summary of a routine body by the general iterative equations:
/// `In(entry) = Id`, `In(B) = ⋃ Out(P)`, `Out(B) = In(B) ; B`, worklist to
/// the fixpoint; the routine's summary is `In(exit)`.
pub fn summarize_iterative<P: Summaries>(p: &P, fg: &FlowGraph) -> Option<P::Summary> {
    let n = fg.nodes.len();
    if n == 0 {
        return Some(p.identity());
    }
    let order = fg.reverse_postorder();
    let mut rank = vec![usize::MAX; n];
    for (i, &v) in order.iter().enumerate() {
        rank[v as usize] = i;
    }
    let mut input: Vec<Option<P::Summary>> = vec![None; n];
    let mut output: Vec<Option<P::Summary>> = vec![None; n];
    input[fg.entry as usize] = Some(p.identity());
    let mut work: BTreeSet<(usize, u32)> = BTreeSet::new();
    work.insert((rank[fg.entry as usize], fg.entry));
    while let Some((_, v)) = work.pop_first() {
        let vi = v as usize;
        let Some(inp) = &input[vi] else { continue };
        let mut acc = Some(inp.clone());
        for &s in &fg.nodes[vi].stmts {
            acc = match (acc, p.stmt(s)) {
                (Some(a), Some(b)) => Some(p.seq(&a, &b)),
                _ => None,
            };
        }
        if acc == output[vi] {
            continue;
        }
        output[vi] = acc.clone();
        let Some(out) = acc else { continue };
        for &w in &fg.succ[vi] {
            let wi = w as usize;
            let grew = match &mut input[wi] {
                Some(x) => {
                    let before = x.clone();
                    p.join(x, &out);
                    *x != before
                }
                None => {
                    input[wi] = Some(out.clone());
                    true
                }
            };
            if grew {
                work.insert((rank[wi], w));
            }
        }
    }
    match fg.exit {
        Some(x) => input[x as usize].clone(),
        None => None,
    }
}

/// Facts recorded at every statement and node of one routine: the fact just
/// before and just after it, in execution order whatever the direction.
#[derive(Clone, Debug)]
pub struct Record<F> {
    /// `(before, after)` of each statement.
    pub stmts: FxHashMap<StmtId, (F, F)>,
    /// `(before, after)` of each flow node.
    pub nodes: Vec<Option<(F, F)>>,
    /// The fact at the routine's other end (the exit for forward problems,
    /// the entry for backward ones).
    pub end: F,
}

impl<F> Record<F> {
    fn new(nodes: usize, end: F) -> Self {
        Record {
            stmts: FxHashMap::default(),
            nodes: (0..nodes).map(|_| None).collect(),
            end,
        }
    }
}

/// Propagates `boundary` (the entry fact of a forward problem, the exit fact
/// of a backward one) through a structured routine, using the structured
/// equations; `loops` are the loop summaries of [`summarize_structured`].
pub fn propagate_structured<P: Propagation>(
    p: &P,
    fg: &FlowGraph,
    boundary: &P::Fact,
    loops: &LoopSummaries<P::Summary>,
) -> Option<Record<P::Fact>> {
    let region = fg.region.as_ref()?;
    let mut rec = Record::new(fg.nodes.len(), p.bottom());
    let end = walk(p, fg, region, boundary.clone(), loops, &mut rec);
    rec.end = end;
    Some(rec)
}

/// Propagates `fact` through region `root`, recording every node and
/// statement, and returns the fact at its other end.
///
/// An explicit stack replaces recursion: the region tree is as deep as the
/// CFG's nesting, which XAIF writes flat.
fn walk<P: Propagation>(
    p: &P,
    fg: &FlowGraph,
    root: &Region,
    fact: P::Fact,
    loops: &LoopSummaries<P::Summary>,
    rec: &mut Record<P::Fact>,
) -> P::Fact {
    let forward = p.direction() == Direction::Forward;
    /// An open composite region.
    enum Open<'r, F> {
        /// Items in the direction of flow; `fact` is the fact so far.
        Seq {
            items: &'r [Region],
            done: usize,
            fact: Option<F>,
        },
        /// Every arm starts from `input`; `out` joins their results.
        Branch {
            arms: &'r [Region],
            next: usize,
            input: F,
            out: F,
        },
        /// The fact at the loop header.
        Loop { header: F, post_test: bool },
    }
    let mut stack: Vec<Open<'_, P::Fact>> = Vec::new();
    // A region to enter with its incoming fact, or the fact a finished
    // region hands back.
    let mut enter: Option<(&Region, P::Fact)> = Some((root, fact));
    let mut done: Option<P::Fact> = None;
    loop {
        if let Some((r, f)) = enter.take() {
            match r {
                Region::Node(n) => done = Some(cross_node(p, fg, *n, f, rec)),
                Region::Seq(items) => stack.push(Open::Seq {
                    items,
                    done: 0,
                    fact: Some(f),
                }),
                Region::Branch(arms) => stack.push(Open::Branch {
                    arms,
                    next: 0,
                    input: f,
                    out: p.bottom(),
                }),
                Region::Loop {
                    body,
                    post_test,
                    id,
                } => {
                    // The fact at the loop header: the boundary fact crossed
                    // by zero or more iterations of the body (Figures 5 and
                    // 9).
                    let header = match &loops[*id as usize] {
                        Some(b) => p.apply(&p.star(b), &f),
                        None => f,
                    };
                    stack.push(Open::Loop {
                        header: header.clone(),
                        post_test: *post_test,
                    });
                    enter = Some((body, header));
                    continue;
                }
            }
        }
        if let Some(f) = done.take() {
            match stack.last_mut() {
                None => return f,
                Some(Open::Seq { fact, .. }) => *fact = Some(f),
                Some(Open::Branch { out, .. }) => {
                    p.join_fact(out, &f);
                }
                Some(Open::Loop { .. }) => {
                    let Some(Open::Loop { header, post_test }) = stack.pop() else {
                        unreachable!("the top is a loop")
                    };
                    done = Some(if post_test { f } else { header });
                    continue;
                }
            }
        }
        match stack.last_mut() {
            None => return p.bottom(),
            Some(Open::Seq {
                items,
                done: k,
                fact,
            }) => {
                if *k < items.len() {
                    let child = if forward {
                        &items[*k]
                    } else {
                        &items[items.len() - 1 - *k]
                    };
                    *k += 1;
                    let f = fact.take().unwrap_or_else(|| p.bottom());
                    enter = Some((child, f));
                } else {
                    let f = fact.take().unwrap_or_else(|| p.bottom());
                    stack.pop();
                    done = Some(f);
                }
            }
            Some(Open::Branch {
                arms,
                next,
                input,
                out,
            }) => {
                if let Some(arm) = arms.get(*next) {
                    *next += 1;
                    enter = Some((arm, input.clone()));
                } else {
                    let f = std::mem::replace(out, p.bottom());
                    stack.pop();
                    done = Some(f);
                }
            }
            Some(Open::Loop { .. }) => return p.bottom(),
        }
    }
}

fn cross_node<P: Propagation>(
    p: &P,
    fg: &FlowGraph,
    n: u32,
    fact: P::Fact,
    rec: &mut Record<P::Fact>,
) -> P::Fact {
    let node = &fg.nodes[n as usize];
    let mut f = fact.clone();
    if p.direction() == Direction::Forward {
        for &s in &node.stmts {
            let next = p.transfer(s, &f);
            rec.stmts.insert(s, (f, next.clone()));
            f = next;
        }
        join_record(p, &mut rec.nodes[n as usize], fact, f.clone());
    } else {
        for &s in node.stmts.iter().rev() {
            let prev = p.transfer(s, &f);
            rec.stmts.insert(s, (prev.clone(), f));
            f = prev;
        }
        join_record(p, &mut rec.nodes[n as usize], f.clone(), fact);
    }
    f
}

fn join_record<P: Propagation>(
    p: &P,
    slot: &mut Option<(P::Fact, P::Fact)>,
    before: P::Fact,
    after: P::Fact,
) {
    match slot {
        Some((b, a)) => {
            p.join_fact(b, &before);
            p.join_fact(a, &after);
        }
        None => *slot = Some((before, after)),
    }
}

/// Propagates `boundary` through any flow graph with the general iterative
/// equations (Figures 4 and 8), then records every statement's facts.
pub fn propagate_iterative<P: Propagation>(
    p: &P,
    fg: &FlowGraph,
    boundary: &P::Fact,
) -> Record<P::Fact> {
    let n = fg.nodes.len();
    let mut rec = Record::new(n, p.bottom());
    if n == 0 {
        rec.end = boundary.clone();
        return rec;
    }
    let forward = p.direction() == Direction::Forward;
    // Facts at the start of each node in the direction of flow.
    let mut start: Vec<P::Fact> = (0..n).map(|_| p.bottom()).collect();
    let mut reached = vec![false; n];
    let mut order = fg.reverse_postorder();
    let (first, next, prev) = if forward {
        (Some(fg.entry), &fg.succ, &fg.pred)
    } else {
        order.reverse();
        (fg.exit, &fg.pred, &fg.succ)
    };
    let _ = prev;
    let mut rank = vec![usize::MAX; n];
    for (i, &v) in order.iter().enumerate() {
        rank[v as usize] = i;
    }
    // Nodes not in the order (unreachable from the entry) still get a rank.
    let mut extra = order.len();
    for r in rank.iter_mut() {
        if *r == usize::MAX {
            *r = extra;
            extra += 1;
        }
    }
    let mut work: BTreeSet<(usize, u32)> = BTreeSet::new();
    if let Some(f) = first {
        start[f as usize] = boundary.clone();
        reached[f as usize] = true;
        work.insert((rank[f as usize], f));
    }
    let through = |v: usize, fact: &P::Fact| -> P::Fact {
        let mut f = fact.clone();
        if forward {
            for &s in &fg.nodes[v].stmts {
                f = p.transfer(s, &f);
            }
        } else {
            for &s in fg.nodes[v].stmts.iter().rev() {
                f = p.transfer(s, &f);
            }
        }
        f
    };
    while let Some((_, v)) = work.pop_first() {
        let vi = v as usize;
        let out = through(vi, &start[vi]);
        for &w in &next[vi] {
            let wi = w as usize;
            let grew = p.join_fact(&mut start[wi], &out);
            if grew || !reached[wi] {
                reached[wi] = true;
                work.insert((rank[wi], w));
            }
        }
    }
    for v in 0..n {
        if !reached[v] {
            continue;
        }
        let fact = start[v].clone();
        let end = cross_node(p, fg, v as u32, fact, &mut rec);
        let _ = end;
    }
    rec.end = match (forward, fg.exit) {
        (true, Some(x)) if reached[x as usize] => start[x as usize].clone(),
        (false, _) if reached[fg.entry as usize] => start[fg.entry as usize].clone(),
        _ => p.bottom(),
    };
    rec
}

/// A routine summary with the summaries of its loops.
#[derive(Clone, Debug)]
pub struct RoutineSummary<S> {
    /// The routine's summary (`None`: never returns).
    pub summary: Option<S>,
    /// Loop body summaries of the structured solver (empty when iterative).
    pub loops: LoopSummaries<S>,
}

/// Solves the bottom-up equations of one routine: structured when `solver`
/// allows it and the flow graph has a structure, iterative otherwise.
pub fn summarize<P: Summaries>(
    p: &P,
    fg: &FlowGraph,
    solver: Solver,
) -> RoutineSummary<P::Summary> {
    match solver {
        Solver::Auto => {
            summarize_structured(p, fg).map(|(summary, loops)| RoutineSummary { summary, loops })
        }
        Solver::Iterative => None,
    }
    .unwrap_or_else(|| RoutineSummary {
        summary: summarize_iterative(p, fg),
        loops: Vec::new(),
    })
}

/// Summarises every routine of `cg` bottom-up. `solve` summarises one
/// routine from the summaries known so far (usually by building its problem
/// and calling [`summarize`]); callees outside the current component are
/// final, and recursive components iterate from "never returns" to their
/// fixpoint.
pub fn bottom_up<S, F>(cg: &CallGraph, mut solve: F) -> FxHashMap<RoutineId, RoutineSummary<S>>
where
    S: Clone + PartialEq,
    F: FnMut(RoutineId, &FxHashMap<RoutineId, RoutineSummary<S>>) -> RoutineSummary<S>,
{
    let mut table: FxHashMap<RoutineId, RoutineSummary<S>> = FxHashMap::default();
    for scc in &cg.sccs {
        let recursive = scc.len() > 1 || cg.calls_itself(scc[0]);
        loop {
            let mut changed = false;
            for &r in scc {
                let solved = solve(r, &table);
                let same = table
                    .get(&r)
                    .is_some_and(|old| old.summary == solved.summary);
                changed |= !same;
                table.insert(r, solved);
            }
            if !recursive || !changed {
                break;
            }
        }
    }
    table
}

/// A call site's contribution to its callee's boundary fact.
pub struct Contribution<F> {
    /// The callee.
    pub callee: RoutineId,
    /// The fact in the callee's namespace.
    pub fact: F,
}

/// Propagates facts top-down over the call graph. `seeds` are boundary facts
/// given by the user (independents at an entry, dependents at an exit);
/// `make` builds the problem of a routine; `contribute` maps the fact at a
/// call statement (before it for forward problems, after it for backward
/// ones) into its callee. Routines are solved callers first and re-solved
/// when their boundary fact grows, so recursion reaches a fixpoint.
pub fn top_down<P, M, C>(
    cg: &CallGraph,
    flows: &FxHashMap<RoutineId, FlowGraph>,
    solver: Solver,
    loops: &FxHashMap<RoutineId, RoutineSummary<P::Summary>>,
    seeds: FxHashMap<RoutineId, P::Fact>,
    mut make: M,
    mut contribute: C,
) -> FxHashMap<RoutineId, (P::Fact, Record<P::Fact>)>
where
    P: Propagation,
    M: FnMut(RoutineId) -> P,
    C: FnMut(&P, RoutineId, StmtId, &P::Fact) -> Option<Contribution<P::Fact>>,
{
    let order = cg.top_down_order();
    let rank: FxHashMap<RoutineId, usize> =
        order.iter().enumerate().map(|(i, r)| (*r, i)).collect();
    let mut boundary: FxHashMap<RoutineId, P::Fact> = seeds;
    let mut out: FxHashMap<RoutineId, (P::Fact, Record<P::Fact>)> = FxHashMap::default();
    let mut work: BTreeSet<(usize, RoutineId)> =
        order.iter().enumerate().map(|(i, r)| (i, *r)).collect();
    while let Some((_, r)) = work.pop_first() {
        let fg = &flows[&r];
        let prob = make(r);
        let b = boundary.entry(r).or_insert_with(|| prob.bottom()).clone();
        let rec = match (solver, loops.get(&r)) {
            (Solver::Auto, Some(ls)) if fg.region.is_some() => {
                propagate_structured(&prob, fg, &b, &ls.loops)
            }
            _ => None,
        }
        .unwrap_or_else(|| propagate_iterative(&prob, fg, &b));
        let mut contributions = Vec::new();
        for &(s, _) in cg.call_sites(r) {
            let Some((before, after)) = rec.stmts.get(&s) else {
                continue;
            };
            let at = match prob.direction() {
                Direction::Forward => before,
                Direction::Backward => after,
            };
            if let Some(c) = contribute(&prob, r, s, at) {
                contributions.push(c);
            }
        }
        out.insert(r, (b, rec));
        for c in contributions {
            let entry = boundary.entry(c.callee).or_insert_with(|| prob.bottom());
            let grew = prob.join_fact(entry, &c.fact);
            if grew && out.contains_key(&c.callee) {
                if let Some(&k) = rank.get(&c.callee) {
                    work.insert((k, c.callee));
                }
            }
        }
    }
    out
}
