//! The flow graph the solvers run on, and its structured form.
//!
//! XAIF keeps a `ForLoop`'s `Initialization` and `Update` inside the loop
//! vertex, although they run on different edges (the initialization on entry,
//! the update on the way back from `EndLoop`), and a `PostLoop` runs its body
//! once before the first test. [`FlowGraph`] makes that explicit: every CFG
//! vertex is a node, plus one node for each loop initialization, each loop
//! update and each post-test loop's first entry, placed on the edges where
//! they run. Both solvers of [`crate::framework`] see the same statements in
//! the same order.
//!
//! When the CFG is properly nested (every `Branch` closes at one `EndBranch`,
//! every loop's body returns through one `EndLoop`, no other joins) and not
//! marked `structured="0"`, [`FlowGraph::region`] is its structure tree, on
//! which the paper's structured equations run without fixpoints except the
//! local one of loops for dependencies.

use rustc_hash::FxHashMap;
use xaif_model::{CfgGraph, CfgId, Program, StmtId, VertexId, VertexKind};

/// What a flow node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeRole {
    /// A CFG vertex (its statements, if it is a basic block).
    Vertex,
    /// The `Initialization` of the `ForLoop` vertex.
    LoopInit,
    /// The `Update` of the `ForLoop` vertex.
    LoopUpdate,
    /// The first, untested entry into a `PostLoop`'s body.
    PostLoopEntry,
}

/// One node of a flow graph.
#[derive(Clone, Debug)]
pub struct FlowNode {
    /// The CFG vertex it belongs to.
    pub vertex: VertexId,
    /// Its role.
    pub role: NodeRole,
    /// Its statements, in execution order.
    pub stmts: Vec<StmtId>,
}

/// Structure of a properly nested flow graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Region {
    /// One node.
    Node(u32),
    /// Regions run one after the other.
    Seq(Vec<Region>),
    /// Alternatives: exactly one arm runs.
    Branch(Vec<Region>),
    /// A loop: `body` runs zero or more times (`post_test`: one or more).
    Loop {
        /// The loop's body (for a `ForLoop`, ending with its update).
        body: Box<Region>,
        /// The body runs before the first test.
        post_test: bool,
        /// Number of the loop in its routine (index of loop side tables).
        id: u32,
    },
}

/// One routine body as the solvers see it.
#[derive(Clone, Debug)]
pub struct FlowGraph {
    /// The nodes.
    pub nodes: Vec<FlowNode>,
    /// Successors of each node.
    pub succ: Vec<Vec<u32>>,
    /// Predecessors of each node.
    pub pred: Vec<Vec<u32>>,
    /// The entry node.
    pub entry: u32,
    /// The exit node, if the CFG has one.
    pub exit: Option<u32>,
    /// The structure tree when the graph is properly nested.
    pub region: Option<Region>,
    /// Number of loops of `region`.
    pub loops: u32,
    /// The CFG vertex of each loop of `region`.
    pub loop_vertices: Vec<VertexId>,
}

impl FlowGraph {
    /// Builds the flow graph of `cfg`; `structured` is false when the CFG is
    /// marked `structured="0"` (then no structure is looked for).
    pub fn new(p: &Program, cfg: CfgId, structured: bool) -> Self {
        let g = CfgGraph::new(p, cfg);
        let mut nodes = Vec::new();
        let mut of_vertex: FxHashMap<VertexId, u32> = FxHashMap::default();
        for &v in &g.vertices {
            let stmts = match &p.vertices[v].kind {
                VertexKind::BasicBlock(s) => s.clone(),
                _ => Vec::new(),
            };
            of_vertex.insert(v, nodes.len() as u32);
            nodes.push(FlowNode {
                vertex: v,
                role: NodeRole::Vertex,
                stmts,
            });
        }
        let mut extra: FxHashMap<(VertexId, u8), u32> = FxHashMap::default();
        let mut edges: Vec<(u32, u32)> = Vec::new();
        let is_end_loop = |v: VertexId| matches!(p.vertices[v].kind, VertexKind::EndLoop);
        for &v in &g.vertices {
            let from = of_vertex[&v];
            for &(_, t) in g.successors(v) {
                let to = of_vertex[&t];
                match &p.vertices[t].kind {
                    VertexKind::ForLoop { init, update, .. } => {
                        let (role, stmt, tag) = if is_end_loop(v) {
                            (NodeRole::LoopUpdate, *update, 1)
                        } else {
                            (NodeRole::LoopInit, *init, 0)
                        };
                        let n = *extra.entry((t, tag)).or_insert_with(|| {
                            nodes.push(FlowNode {
                                vertex: t,
                                role,
                                stmts: stmt.into_iter().collect(),
                            });
                            edges.push((nodes.len() as u32 - 1, to));
                            nodes.len() as u32 - 1
                        });
                        edges.push((from, n));
                    }
                    VertexKind::PostLoop(_) if !is_end_loop(v) => {
                        let n = *extra.entry((t, 2)).or_insert_with(|| {
                            nodes.push(FlowNode {
                                vertex: t,
                                role: NodeRole::PostLoopEntry,
                                stmts: Vec::new(),
                            });
                            let n = nodes.len() as u32 - 1;
                            let body = body_edge(p, &g, t);
                            for &(e, s) in g.successors(t) {
                                if body.is_none_or(|b| b == e) {
                                    edges.push((n, of_vertex[&s]));
                                }
                            }
                            n
                        });
                        edges.push((from, n));
                    }
                    _ => edges.push((from, to)),
                }
            }
        }
        let mut succ = vec![Vec::new(); nodes.len()];
        let mut pred = vec![Vec::new(); nodes.len()];
        for (s, t) in edges {
            succ[s as usize].push(t);
            pred[t as usize].push(s);
        }
        let entry = g.entry.map(|e| of_vertex[&e]).unwrap_or(0);
        let exit = g.exit.map(|e| of_vertex[&e]);
        let mut fg = FlowGraph {
            nodes,
            succ,
            pred,
            entry,
            exit,
            region: None,
            loops: 0,
            loop_vertices: Vec::new(),
        };
        if structured && !g.vertices.is_empty() {
            let mut parser = Parser {
                p,
                g: &g,
                of_vertex: &of_vertex,
                extra: &extra,
                seen: FxHashMap::default(),
                loops: Vec::new(),
            };
            if let Some(r) = parser.parse() {
                fg.loops = parser.loops.len() as u32;
                fg.loop_vertices = parser.loops;
                fg.region = Some(r);
            }
        }
        fg
    }

    /// Nodes in reverse post-order from the entry (reachable nodes only).
    pub fn reverse_postorder(&self) -> Vec<u32> {
        let n = self.nodes.len();
        let mut seen = vec![false; n];
        let mut order = Vec::with_capacity(n);
        if n == 0 {
            return order;
        }
        let mut stack: Vec<(u32, usize)> = vec![(self.entry, 0)];
        seen[self.entry as usize] = true;
        while let Some((v, i)) = stack.pop() {
            if let Some(&w) = self.succ[v as usize].get(i) {
                stack.push((v, i + 1));
                if !seen[w as usize] {
                    seen[w as usize] = true;
                    stack.push((w, 0));
                }
            } else {
                order.push(v);
            }
        }
        order.reverse();
        order
    }

    /// Number of statements in the graph.
    pub fn stmt_count(&self) -> usize {
        self.nodes.iter().map(|n| n.stmts.len()).sum()
    }
}

/// The edge into a loop's body: the one taken when the condition holds.
fn body_edge(p: &Program, g: &CfgGraph, v: VertexId) -> Option<xaif_model::EdgeId> {
    let succ = g.successors(v);
    succ.iter()
        .find(|(e, _)| p.edges[*e].condition_value() == Some(1))
        .map(|(e, _)| *e)
}

struct Parser<'a> {
    p: &'a Program,
    g: &'a CfgGraph,
    of_vertex: &'a FxHashMap<VertexId, u32>,
    extra: &'a FxHashMap<(VertexId, u8), u32>,
    seen: FxHashMap<VertexId, ()>,
    loops: Vec<VertexId>,
}

impl Parser<'_> {
    fn parse(&mut self) -> Option<Region> {
        let entry = self.g.entry?;
        self.g.exit?;
        self.seen.insert(entry, ());
        let first = self.single_succ(entry)?;
        let mut out = Vec::new();
        let end = self.seq(first, &mut out)?;
        if !matches!(self.p.vertices[end].kind, VertexKind::Exit) {
            return None;
        }
        Some(Region::Seq(out))
    }

    fn single_succ(&self, v: VertexId) -> Option<VertexId> {
        match self.g.successors(v) {
            [(_, t)] => Some(*t),
            _ => None,
        }
    }

    fn mark(&mut self, v: VertexId) -> Option<()> {
        if self.seen.insert(v, ()).is_some() {
            return None;
        }
        Some(())
    }

    /// Parses a sequence starting at `v` up to the first unmatched
    /// `EndBranch`, `EndLoop` or `Exit`, which it returns (unmarked).
    fn seq(&mut self, mut v: VertexId, out: &mut Vec<Region>) -> Option<VertexId> {
        loop {
            let kind = &self.p.vertices[v].kind;
            match kind {
                VertexKind::Exit => {
                    self.mark(v)?;
                    return Some(v);
                }
                VertexKind::EndBranch | VertexKind::EndLoop => return Some(v),
                VertexKind::Entry => return None,
                VertexKind::BasicBlock(_) | VertexKind::Goto | VertexKind::Label => {
                    if self.g.predecessors(v).len() != 1 {
                        return None;
                    }
                    self.mark(v)?;
                    out.push(Region::Node(self.of_vertex[&v]));
                    v = self.single_succ(v)?;
                }
                VertexKind::Branch(_) | VertexKind::If(_) => {
                    if self.g.predecessors(v).len() != 1 {
                        return None;
                    }
                    self.mark(v)?;
                    let succ: Vec<VertexId> = self.g.successors(v).iter().map(|x| x.1).collect();
                    if succ.is_empty() {
                        return None;
                    }
                    let mut arms = Vec::new();
                    let mut end = None;
                    for t in succ.iter() {
                        let mut arm = Vec::new();
                        let e = self.seq(*t, &mut arm)?;
                        if !matches!(self.p.vertices[e].kind, VertexKind::EndBranch)
                            || end.is_some_and(|x| x != e)
                        {
                            return None;
                        }
                        end = Some(e);
                        arms.push(Region::Seq(arm));
                    }
                    let end = end?;
                    if self.g.predecessors(end).len() != succ.len() {
                        return None;
                    }
                    self.mark(end)?;
                    out.push(Region::Node(self.of_vertex[&v]));
                    out.push(Region::Branch(arms));
                    out.push(Region::Node(self.of_vertex[&end]));
                    v = self.single_succ(end)?;
                }
                VertexKind::ForLoop { .. } | VertexKind::PreLoop(_) | VertexKind::PostLoop(_) => {
                    let preds = self.g.predecessors(v);
                    if preds.len() != 2 {
                        return None;
                    }
                    self.mark(v)?;
                    let body_e = body_edge(self.p, self.g, v)?;
                    let succ = self.g.successors(v);
                    if succ.len() != 2 {
                        return None;
                    }
                    let body_t = succ.iter().find(|(e, _)| *e == body_e)?.1;
                    let exit_t = succ.iter().find(|(e, _)| *e != body_e)?.1;
                    let id = self.loops.len() as u32;
                    self.loops.push(v);
                    let mut body = Vec::new();
                    let end = self.seq(body_t, &mut body)?;
                    if !matches!(self.p.vertices[end].kind, VertexKind::EndLoop)
                        || self.g.predecessors(end).len() != 1
                        || self.single_succ(end)? != v
                    {
                        return None;
                    }
                    self.mark(end)?;
                    body.push(Region::Node(self.of_vertex[&end]));
                    let header = Region::Node(self.of_vertex[&v]);
                    match kind {
                        VertexKind::ForLoop { .. } => {
                            body.push(Region::Node(*self.extra.get(&(v, 1))?));
                            out.push(Region::Node(*self.extra.get(&(v, 0))?));
                            out.push(header);
                            out.push(Region::Loop {
                                body: Box::new(Region::Seq(body)),
                                post_test: false,
                                id,
                            });
                        }
                        VertexKind::PreLoop(_) => {
                            out.push(header);
                            out.push(Region::Loop {
                                body: Box::new(Region::Seq(body)),
                                post_test: false,
                                id,
                            });
                        }
                        _ => {
                            out.push(Region::Node(*self.extra.get(&(v, 2))?));
                            out.push(header);
                            out.push(Region::Loop {
                                body: Box::new(Region::Seq(body)),
                                post_test: true,
                                id,
                            });
                        }
                    }
                    v = exit_t;
                }
            }
        }
    }
}
