//! The structural rules of a control flow graph (`docs/cfg-rules.md`),
//! checked at the gate once its ids are unique and its edges resolve.
//!
//! Every pass and the oracle follow edges by these rules: a basic block
//! has one way on, a branch picks its edge by case value, a loop has a
//! body edge (condition value 1) and an exit edge, an `EndLoop` goes back
//! to its loop, every vertex lies on a way from `Entry` to `Exit`. A graph that breaks them has no meaning (the oracle would
//! take the first of two successors, the reversal would invent a
//! structure), so the gate refuses it, at the vertex or edge that breaks a
//! rule.

use crate::error::ErrorKind;
use crate::index::CfgGraph;
use crate::model::{CfgId, EdgeId, Program, VertexId, VertexKind};

use super::Gate;

/// How many successors a vertex kind has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Successors {
    /// `Exit`: none.
    None,
    /// `Entry`, `BasicBlock`, `EndBranch`, `EndLoop`, `Goto`, `Label`:
    /// exactly one, without a condition value.
    One,
    /// `Branch`, `If`: at least one, case values distinct, at most one
    /// default edge (without a value).
    Cases,
    /// `ForLoop`, `PreLoop`, `PostLoop`: a body edge (value 1) and an exit
    /// edge (no value, or 0).
    Loop,
}

fn successors(kind: &VertexKind) -> Successors {
    match kind {
        VertexKind::Exit => Successors::None,
        VertexKind::Branch(_) | VertexKind::If(_) => Successors::Cases,
        VertexKind::ForLoop { .. } | VertexKind::PreLoop(_) | VertexKind::PostLoop(_) => {
            Successors::Loop
        }
        VertexKind::Entry
        | VertexKind::BasicBlock(_)
        | VertexKind::EndBranch
        | VertexKind::EndLoop
        | VertexKind::Goto
        | VertexKind::Label => Successors::One,
    }
}

/// A graph's vertices with their kinds and successors, resolved once.
struct Graph<'p> {
    p: &'p Program,
    g: CfgGraph,
}

impl Graph<'_> {
    fn kind(&self, v: VertexId) -> &VertexKind {
        &self.p.vertices[v].kind
    }

    fn value(&self, e: EdgeId) -> Option<i64> {
        self.p.edges[e].condition_value()
    }

    /// ``control flow vertex `ID` (Kind)``, for messages.
    fn vertex(&self, v: VertexId) -> String {
        let vertex = &self.p.vertices[v];
        format!(
            "control flow vertex `{}` ({})",
            vertex.attrs.get("vertex_id").unwrap_or("1"),
            vertex.kind.element()
        )
    }

    /// The body edge of loop vertex `v` (condition value 1) and its
    /// target, if it has exactly one.
    fn body(&self, v: VertexId) -> Option<(EdgeId, VertexId)> {
        let mut bodies = self
            .g
            .successors(v)
            .iter()
            .filter(|(e, _)| self.value(*e) == Some(1));
        let first = bodies.next().copied();
        first.filter(|_| bodies.next().is_none())
    }

    /// ``control flow edge `ID` from `S` to `T` ``, for messages.
    fn edge(&self, e: EdgeId) -> String {
        let a = &self.p.edges[e].attrs;
        format!(
            "control flow edge `{}` from `{}` to `{}`",
            a.get("edge_id").unwrap_or(""),
            a.get("source").unwrap_or(""),
            a.get("target").unwrap_or("")
        )
    }
}

impl Gate<'_> {
    /// Checks the rules of `docs/cfg-rules.md` on `cfg`, whose vertex ids
    /// are unique, whose edges resolve and which has one `Entry` and one
    /// `Exit`. A graph without any edge is left alone (see the rules).
    pub(super) fn cfg_rules(&mut self, p: &Program, cfg: CfgId) {
        if p.cfgs[cfg].edge_ids().next().is_none() {
            return;
        }
        let graph = Graph {
            p,
            g: CfgGraph::new(p, cfg),
        };
        for &v in &graph.g.vertices {
            self.vertex_successors(&graph, v);
        }
        self.entry_and_exit_edges(&graph);
        self.back_edges(&graph);
        self.reachability(&graph);
    }

    fn cfg_error(&mut self, graph: &Graph<'_>, at: Result<VertexId, EdgeId>, rule: String) {
        let (span, element, at) = match at {
            Ok(v) => (
                graph.p.vertices[v].attrs.span,
                graph.kind(v).element(),
                graph.vertex(v),
            ),
            Err(e) => (
                graph.p.edges[e].attrs.span,
                "ControlFlowEdge",
                graph.edge(e),
            ),
        };
        self.push_at(span, element, ErrorKind::ControlFlow { at, rule });
    }

    /// Successor counts and condition values by vertex kind.
    fn vertex_successors(&mut self, graph: &Graph<'_>, v: VertexId) {
        let out = graph.g.successors(v);
        let values: Vec<Option<i64>> = out.iter().map(|(e, _)| graph.value(*e)).collect();
        match successors(graph.kind(v)) {
            // Edges out of Exit are reported with the Entry and Exit rules.
            Successors::None => {}
            // A condition value on the one edge chooses nothing; the
            // reference engine's trace output writes one there.
            Successors::One => {
                if out.len() != 1 {
                    let rule = format!("has {} successors; exactly one is required", out.len());
                    self.cfg_error(graph, Ok(v), rule);
                }
            }
            Successors::Cases => self.branch_cases(graph, v, &values),
            Successors::Loop => self.loop_edges(graph, v, &values),
        }
    }

    /// A branch: at least one edge, distinct case values, one default at
    /// most; or, as the schema's own example writes it, no case value on
    /// any edge (then nothing tells the cases apart: the oracle refuses to
    /// run the branch, the transformations copy it as it is).
    fn branch_cases(&mut self, graph: &Graph<'_>, v: VertexId, values: &[Option<i64>]) {
        let out = graph.g.successors(v);
        if out.is_empty() {
            let rule = "has no successor; a branch needs at least one edge".to_string();
            self.cfg_error(graph, Ok(v), rule);
        }
        if values.iter().all(Option::is_none) {
            return;
        }
        let mut seen: Vec<Option<i64>> = Vec::with_capacity(values.len());
        for (&(e, _), value) in out.iter().zip(values) {
            if seen.contains(value) {
                let rule = match value {
                    Some(c) => format!("is a second edge for case value {c} of its branch"),
                    None => "is a second default edge (without a condition value) of its branch"
                        .to_string(),
                };
                self.cfg_error(graph, Err(e), rule);
            } else {
                seen.push(*value);
            }
        }
    }

    /// A loop: a body edge with value 1 and an exit edge without a value
    /// (or with 0); or, as the schema's own example writes it, two edges
    /// without values (then nothing tells body from exit: the oracle
    /// refuses to run the loop, the reversal enumerates blocks).
    fn loop_edges(&mut self, graph: &Graph<'_>, v: VertexId, values: &[Option<i64>]) {
        let rule = match values {
            [Some(1), None | Some(0)] | [None | Some(0), Some(1)] | [None, None] => return,
            [a, b] => format!(
                "has successor edges with condition values {} and {}; a loop needs a body edge with value 1 and an exit edge without a value (or with 0)",
                shown(*a),
                shown(*b)
            ),
            _ => format!(
                "has {} successors; a loop needs exactly two, its body edge (condition value 1) and its exit edge",
                values.len()
            ),
        };
        self.cfg_error(graph, Ok(v), rule);
    }

    /// No edge enters `Entry`; no edge leaves `Exit`.
    fn entry_and_exit_edges(&mut self, graph: &Graph<'_>) {
        if let Some(entry) = graph.g.entry {
            for &(e, _) in graph.g.predecessors(entry) {
                let rule = "enters Entry; control enters a graph only at its start".to_string();
                self.cfg_error(graph, Err(e), rule);
            }
        }
        if let Some(exit) = graph.g.exit {
            for &(e, _) in graph.g.successors(exit) {
                let rule = "leaves Exit; control leaves a graph only at its end".to_string();
                self.cfg_error(graph, Err(e), rule);
            }
        }
    }

    /// Every `EndLoop` leads back to a loop vertex, from inside that
    /// loop's body: the target of the body edge dominates the `EndLoop`
    /// (every way from `Entry` to it passes the body edge).
    fn back_edges(&mut self, graph: &Graph<'_>) {
        let Some(entry) = graph.g.entry else {
            return;
        };
        let dom = Dominators::new(&graph.g, entry);
        for &v in &graph.g.vertices {
            if !matches!(graph.kind(v), VertexKind::EndLoop) {
                continue;
            }
            let [(_, target)] = graph.g.successors(v) else {
                continue; // reported with the successor counts
            };
            if successors(graph.kind(*target)) != Successors::Loop {
                let rule = format!(
                    "leads to {}; an EndLoop leads back to its ForLoop, PreLoop or PostLoop",
                    graph.vertex(*target)
                );
                self.cfg_error(graph, Ok(v), rule);
            } else if dom.reached(&graph.g, v) {
                // Inside the body: behind the body edge on every way to it
                // (behind the loop vertex where no edge marks the body).
                let start = graph.body(*target).map_or(*target, |(_, s)| s);
                if !dom.dominates(&graph.g, start, v) {
                    let rule = format!(
                        "leads back to {} but is not inside its body (it is reached from Entry without passing the body edge)",
                        graph.vertex(*target)
                    );
                    self.cfg_error(graph, Ok(v), rule);
                }
            }
        }
    }

    /// Every vertex is reached from `Entry`, and reaches `Exit`.
    fn reachability(&mut self, graph: &Graph<'_>) {
        let (Some(entry), Some(exit)) = (graph.g.entry, graph.g.exit) else {
            return;
        };
        let from_entry = walk(&graph.g, entry, true);
        let to_exit = walk(&graph.g, exit, false);
        for (i, &v) in graph.g.vertices.iter().enumerate() {
            let rule = if !from_entry[i] {
                "is not reached from Entry"
            } else if !to_exit[i] {
                "never reaches Exit"
            } else {
                continue;
            };
            self.cfg_error(graph, Ok(v), rule.to_string());
        }
    }
}

fn shown(value: Option<i64>) -> String {
    value.map_or_else(|| "none".to_string(), |c| c.to_string())
}

/// Which vertices (by local index) are reached from `start` following
/// edges forwards (`forward`) or backwards; an explicit stack.
fn walk(g: &CfgGraph, start: VertexId, forward: bool) -> Vec<bool> {
    let mut seen = vec![false; g.vertices.len()];
    seen[g.local_index(start)] = true;
    let mut stack = vec![start];
    while let Some(v) = stack.pop() {
        let next = if forward {
            g.successors(v)
        } else {
            g.predecessors(v)
        };
        for &(_, w) in next {
            let i = g.local_index(w);
            if !seen[i] {
                seen[i] = true;
                stack.push(w);
            }
        }
    }
    seen
}

/// The dominator tree of a graph's vertices reached from `Entry`
/// (Cooper, Harvey and Kennedy's iterative algorithm over a reverse
/// postorder), numbered so that a dominance query is two comparisons.
struct Dominators {
    /// Pre- and post-order numbers in the dominator tree, by local index
    /// (`None`: not reached from `Entry`).
    order: Vec<Option<(usize, usize)>>,
}

impl Dominators {
    fn new(g: &CfgGraph, entry: VertexId) -> Self {
        let n = g.vertices.len();
        let rpo = reverse_postorder(g, entry);
        let mut number = vec![usize::MAX; n];
        for (k, &v) in rpo.iter().enumerate() {
            number[v] = k;
        }
        let root = g.local_index(entry);
        let mut idom = vec![usize::MAX; n];
        idom[root] = root;
        let mut changed = true;
        while changed {
            changed = false;
            for &v in rpo.iter().skip(1) {
                let mut new = usize::MAX;
                for &(_, p) in g.predecessors(g.vertices[v]) {
                    let p = g.local_index(p);
                    if idom[p] == usize::MAX {
                        continue;
                    }
                    new = if new == usize::MAX {
                        p
                    } else {
                        intersect(&idom, &number, p, new)
                    };
                }
                if new != usize::MAX && idom[v] != new {
                    idom[v] = new;
                    changed = true;
                }
            }
        }
        Dominators {
            order: tree_order(&idom, &rpo, root),
        }
    }

    /// Whether `v` is reached from `Entry`.
    fn reached(&self, g: &CfgGraph, v: VertexId) -> bool {
        self.order[g.local_index(v)].is_some()
    }

    /// Whether `a` dominates `b` (both reached from `Entry`).
    fn dominates(&self, g: &CfgGraph, a: VertexId, b: VertexId) -> bool {
        match (self.order[g.local_index(a)], self.order[g.local_index(b)]) {
            (Some((pa, qa)), Some((pb, qb))) => pa <= pb && qb <= qa,
            _ => false,
        }
    }
}

/// The vertices reached from `entry` (local indices) in reverse
/// postorder; an explicit stack.
fn reverse_postorder(g: &CfgGraph, entry: VertexId) -> Vec<usize> {
    let mut seen = vec![false; g.vertices.len()];
    let mut post = Vec::with_capacity(g.vertices.len());
    let root = g.local_index(entry);
    seen[root] = true;
    let mut stack = vec![(root, 0usize)];
    while let Some((v, i)) = stack.pop() {
        let succ = g.successors(g.vertices[v]);
        if let Some(&(_, w)) = succ.get(i) {
            stack.push((v, i + 1));
            let w = g.local_index(w);
            if !seen[w] {
                seen[w] = true;
                stack.push((w, 0));
            }
        } else {
            post.push(v);
        }
    }
    post.reverse();
    post
}

/// The nearest common dominator of `a` and `b` (by reverse-postorder
/// `number`).
fn intersect(idom: &[usize], number: &[usize], mut a: usize, mut b: usize) -> usize {
    while a != b {
        while number[a] > number[b] {
            a = idom[a];
        }
        while number[b] > number[a] {
            b = idom[b];
        }
    }
    a
}

/// Pre- and post-order numbers of the dominator tree given by `idom`
/// (vertices of `rpo` only); an explicit stack.
fn tree_order(idom: &[usize], rpo: &[usize], root: usize) -> Vec<Option<(usize, usize)>> {
    let mut children = vec![Vec::new(); idom.len()];
    for &v in rpo {
        if v != root && idom[v] != usize::MAX {
            children[idom[v]].push(v);
        }
    }
    let mut order = vec![None; idom.len()];
    let mut pre = vec![0; idom.len()];
    let mut clock = 0;
    let mut stack = vec![(root, 0usize)];
    pre[root] = clock;
    while let Some((v, i)) = stack.pop() {
        if let Some(&c) = children[v].get(i) {
            stack.push((v, i + 1));
            clock += 1;
            pre[c] = clock;
            stack.push((c, 0));
        } else {
            clock += 1;
            order[v] = Some((pre[v], clock));
        }
    }
    order
}
