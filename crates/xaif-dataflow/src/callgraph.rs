//! The call graph of the analysed routines, from `SubroutineCall`
//! statements.
//!
//! Summaries are computed callees first and facts propagated callers first
//! (seed §3), so the call graph is kept with its strongly connected
//! components in bottom-up order; a component with more than one routine or
//! a routine that calls itself is recursive and is solved to a fixpoint.

use rustc_hash::{FxHashMap, FxHashSet};
use xaif_model::{Program, RoutineId, RoutineIndex, StmtId, StmtKind};

use crate::flow::FlowGraph;

/// Routines with bodies and who calls whom.
#[derive(Clone, Debug, Default)]
pub struct CallGraph {
    /// The analysed routines (plain `ControlFlowGraph`s with a body), in
    /// document order.
    pub routines: Vec<RoutineId>,
    /// Strongly connected components, callees before callers.
    pub sccs: Vec<Vec<RoutineId>>,
    calls: FxHashMap<RoutineId, Vec<(StmtId, Option<RoutineId>)>>,
    callers: FxHashMap<RoutineId, Vec<RoutineId>>,
    self_calls: FxHashSet<RoutineId>,
}

impl CallGraph {
    /// Builds the call graph of `routines` whose flow graphs are `flows`.
    pub fn new(
        p: &Program,
        routines: Vec<RoutineId>,
        flows: &FxHashMap<RoutineId, FlowGraph>,
    ) -> Self {
        let index = RoutineIndex::new(p);
        let analysed: FxHashSet<RoutineId> = routines.iter().copied().collect();
        let mut calls: FxHashMap<RoutineId, Vec<(StmtId, Option<RoutineId>)>> =
            FxHashMap::default();
        let mut callers: FxHashMap<RoutineId, Vec<RoutineId>> = FxHashMap::default();
        let mut self_calls = FxHashSet::default();
        for &r in &routines {
            let mut sites = Vec::new();
            for node in &flows[&r].nodes {
                for &s in &node.stmts {
                    if let StmtKind::SubroutineCall(_) = &p.stmts[s].kind {
                        let callee = p.stmts[s]
                            .attrs
                            .get("symbol_id")
                            .and_then(|name| index.get(name))
                            .filter(|c| analysed.contains(c));
                        if let Some(c) = callee {
                            let list = callers.entry(c).or_default();
                            if !list.contains(&r) {
                                list.push(r);
                            }
                            if c == r {
                                self_calls.insert(r);
                            }
                        }
                        sites.push((s, callee));
                    }
                }
            }
            calls.insert(r, sites);
        }
        let mut cg = CallGraph {
            routines,
            sccs: Vec::new(),
            calls,
            callers,
            self_calls,
        };
        cg.sccs = cg.tarjan();
        cg
    }

    /// The call statements of `r` with their callees (`None`: a routine
    /// without a body in this program).
    pub fn call_sites(&self, r: RoutineId) -> &[(StmtId, Option<RoutineId>)] {
        self.calls.get(&r).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// The routines that call `r`.
    pub fn callers(&self, r: RoutineId) -> &[RoutineId] {
        self.callers.get(&r).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// The distinct routines `r` calls.
    pub fn callees(&self, r: RoutineId) -> Vec<RoutineId> {
        let mut out: Vec<RoutineId> = Vec::new();
        for (_, c) in self.call_sites(r) {
            if let Some(c) = c {
                if !out.contains(c) {
                    out.push(*c);
                }
            }
        }
        out
    }

    /// Whether `r` calls itself directly.
    pub fn calls_itself(&self, r: RoutineId) -> bool {
        self.self_calls.contains(&r)
    }

    /// Whether `r` is part of a cycle of calls.
    pub fn is_recursive(&self, r: RoutineId) -> bool {
        self.calls_itself(r) || self.sccs.iter().any(|c| c.len() > 1 && c.contains(&r))
    }

    /// Routines that no other analysed routine calls.
    pub fn roots(&self) -> Vec<RoutineId> {
        self.routines
            .iter()
            .copied()
            .filter(|r| self.callers(*r).iter().all(|c| c == r))
            .collect()
    }

    /// Routines callers first (the reverse of [`CallGraph::sccs`]).
    pub fn top_down_order(&self) -> Vec<RoutineId> {
        self.sccs.iter().rev().flatten().copied().collect()
    }

    fn tarjan(&self) -> Vec<Vec<RoutineId>> {
        let n = self.routines.len();
        let pos: FxHashMap<RoutineId, usize> = self
            .routines
            .iter()
            .enumerate()
            .map(|(i, r)| (*r, i))
            .collect();
        let succ: Vec<Vec<usize>> = self
            .routines
            .iter()
            .map(|r| self.callees(*r).iter().map(|c| pos[c]).collect())
            .collect();
        let mut index = vec![usize::MAX; n];
        let mut low = vec![0; n];
        let mut on_stack = vec![false; n];
        let mut stack = Vec::new();
        let mut next = 0;
        let mut out = Vec::new();
        for root in 0..n {
            if index[root] != usize::MAX {
                continue;
            }
            let mut call: Vec<(usize, usize)> = vec![(root, 0)];
            index[root] = next;
            low[root] = next;
            next += 1;
            stack.push(root);
            on_stack[root] = true;
            while let Some(&mut (v, ref mut i)) = call.last_mut() {
                if let Some(&w) = succ[v].get(*i) {
                    *i += 1;
                    if index[w] == usize::MAX {
                        index[w] = next;
                        low[w] = next;
                        next += 1;
                        stack.push(w);
                        on_stack[w] = true;
                        call.push((w, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                } else {
                    call.pop();
                    if let Some(&(u, _)) = call.last() {
                        low[u] = low[u].min(low[v]);
                    }
                    if low[v] == index[v] {
                        let mut comp = Vec::new();
                        while let Some(w) = stack.pop() {
                            on_stack[w] = false;
                            comp.push(self.routines[w]);
                            if w == v {
                                break;
                            }
                        }
                        comp.reverse();
                        out.push(comp);
                    }
                }
            }
        }
        out
    }
}
