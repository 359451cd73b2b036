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
///
/// The tree is as deep as the CFG's nesting, which XAIF writes flat, so
/// cloning, comparing and dropping it use explicit stacks, never recursion.
#[derive(Debug)]
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

impl Drop for Region {
    /// Drops nested regions with an explicit stack: a region tree is as
    /// deep as the CFG's nesting, which XAIF writes flat.
    fn drop(&mut self) {
        let mut stack = Vec::new();
        self.take_children(&mut stack);
        while let Some(mut r) = stack.pop() {
            r.take_children(&mut stack);
        }
    }
}

impl Clone for Region {
    fn clone(&self) -> Self {
        enum Task<'a> {
            Visit(&'a Region),
            Build(&'a Region),
        }
        let mut tasks = vec![Task::Visit(self)];
        // Finished copies, children in order before their parent is built.
        let mut built: Vec<Region> = Vec::new();
        while let Some(task) = tasks.pop() {
            match task {
                Task::Visit(r) => match r {
                    Region::Node(n) => built.push(Region::Node(*n)),
                    Region::Seq(items) | Region::Branch(items) => {
                        tasks.push(Task::Build(r));
                        tasks.extend(items.iter().rev().map(Task::Visit));
                    }
                    Region::Loop { body, .. } => {
                        tasks.push(Task::Build(r));
                        tasks.push(Task::Visit(body));
                    }
                },
                Task::Build(r) => {
                    let copy = match r {
                        Region::Node(n) => Region::Node(*n),
                        Region::Seq(items) => {
                            Region::Seq(built.split_off(built.len() - items.len()))
                        }
                        Region::Branch(items) => {
                            Region::Branch(built.split_off(built.len() - items.len()))
                        }
                        Region::Loop { post_test, id, .. } => Region::Loop {
                            body: Box::new(built.pop().unwrap_or(Region::Seq(Vec::new()))),
                            post_test: *post_test,
                            id: *id,
                        },
                    };
                    built.push(copy);
                }
            }
        }
        built.pop().unwrap_or(Region::Seq(Vec::new()))
    }
}

impl PartialEq for Region {
    fn eq(&self, other: &Self) -> bool {
        let mut pairs = vec![(self, other)];
        while let Some((a, b)) = pairs.pop() {
            match (a, b) {
                (Region::Node(x), Region::Node(y)) if x == y => {}
                (Region::Seq(x), Region::Seq(y)) | (Region::Branch(x), Region::Branch(y))
                    if x.len() == y.len() =>
                {
                    pairs.extend(x.iter().zip(y));
                }
                (
                    Region::Loop {
                        body: x,
                        post_test: px,
                        id: ix,
                    },
                    Region::Loop {
                        body: y,
                        post_test: py,
                        id: iy,
                    },
                ) if px == py && ix == iy => pairs.push((x, y)),
                _ => return false,
            }
        }
        true
    }
}

impl Eq for Region {}

impl Region {
    /// Moves the nested regions out into `into`, leaving this one shallow.
    fn take_children(&mut self, into: &mut Vec<Region>) {
        match self {
            Region::Node(_) => {}
            Region::Seq(items) | Region::Branch(items) => into.append(items),
            Region::Loop { body, .. } => {
                into.push(std::mem::replace(&mut **body, Region::Seq(Vec::new())))
            }
        }
    }
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
    ///
    /// Nested structures are parsed with an explicit stack of open
    /// sequences (an arm of a branch, a loop body), so the nesting depth of
    /// the CFG, which XAIF writes flat, never becomes native recursion.
    fn seq(&mut self, first: VertexId, out: &mut Vec<Region>) -> Option<VertexId> {
        let mut stack: Vec<Open> = vec![(std::mem::take(out), Cont::Root)];
        let mut v = first;
        loop {
            // Run the innermost open sequence up to its end vertex, or open
            // a nested one.
            let end = match self.advance(&mut stack, v)? {
                Advance::Opened(next) => {
                    v = next;
                    continue;
                }
                Advance::Ended(end) => end,
            };
            // The innermost sequence ended at `end`.
            let (items, cont) = stack.pop()?;
            v = match cont {
                Cont::Root => {
                    *out = items;
                    return Some(end);
                }
                Cont::Arm(branch) => self.close_arm(&mut stack, items, end, branch)?,
                Cont::Body(open) => self.close_body(&mut stack, items, end, open)?,
            };
        }
    }

    /// Adds the vertices from `v` on to the innermost open sequence until
    /// it reaches its end vertex, or a branch or a loop opens a nested one.
    fn advance(&mut self, stack: &mut Vec<Open>, mut v: VertexId) -> Option<Advance> {
        loop {
            let (items, _) = stack.last_mut()?;
            let kind = &self.p.vertices[v].kind;
            match kind {
                VertexKind::Exit => {
                    self.mark(v)?;
                    return Some(Advance::Ended(v));
                }
                VertexKind::EndBranch | VertexKind::EndLoop => return Some(Advance::Ended(v)),
                VertexKind::Entry => return None,
                VertexKind::BasicBlock(_) | VertexKind::Goto | VertexKind::Label => {
                    if self.g.predecessors(v).len() != 1 {
                        return None;
                    }
                    self.mark(v)?;
                    items.push(Region::Node(self.of_vertex[&v]));
                    v = self.single_succ(v)?;
                }
                VertexKind::Branch(_) | VertexKind::If(_) => {
                    return self.open_branch(stack, v).map(Advance::Opened)
                }
                VertexKind::ForLoop { .. } | VertexKind::PreLoop(_) | VertexKind::PostLoop(_) => {
                    return self.open_loop(stack, v).map(Advance::Opened)
                }
            }
        }
    }

    /// Opens branch `v` on `stack`; returns its first arm's first vertex.
    fn open_branch(&mut self, stack: &mut Vec<Open>, v: VertexId) -> Option<VertexId> {
        if self.g.predecessors(v).len() != 1 {
            return None;
        }
        self.mark(v)?;
        let succ: Vec<VertexId> = self.g.successors(v).iter().map(|x| x.1).collect();
        let first_arm = *succ.first()?;
        stack.push((
            Vec::new(),
            Cont::Arm(OpenBranch {
                v,
                succ,
                next: 1,
                arms: Vec::new(),
                end: None,
            }),
        ));
        Some(first_arm)
    }

    /// Opens loop `v` (entered from before it and from its `EndLoop`) on
    /// `stack`; returns its body's first vertex.
    fn open_loop(&mut self, stack: &mut Vec<Open>, v: VertexId) -> Option<VertexId> {
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
        let exit = succ.iter().find(|(e, _)| *e != body_e)?.1;
        let id = self.loops.len() as u32;
        self.loops.push(v);
        stack.push((Vec::new(), Cont::Body(OpenLoop { v, id, exit })));
        Some(body_t)
    }

    /// An arm of `branch` ended at `end` with `items`: the next arm opens,
    /// or, after the last one, the branch closes at its `EndBranch` into
    /// the enclosing sequence. Returns the vertex to go on from.
    fn close_arm(
        &mut self,
        stack: &mut Vec<Open>,
        items: Vec<Region>,
        end: VertexId,
        branch: OpenBranch,
    ) -> Option<VertexId> {
        let OpenBranch {
            v: branch,
            succ,
            next,
            mut arms,
            end: previous,
        } = branch;
        if !matches!(self.p.vertices[end].kind, VertexKind::EndBranch)
            || previous.is_some_and(|x| x != end)
        {
            return None;
        }
        arms.push(Region::Seq(items));
        if let Some(&t) = succ.get(next) {
            stack.push((
                Vec::new(),
                Cont::Arm(OpenBranch {
                    v: branch,
                    succ,
                    next: next + 1,
                    arms,
                    end: Some(end),
                }),
            ));
            return Some(t);
        }
        if self.g.predecessors(end).len() != succ.len() {
            return None;
        }
        self.mark(end)?;
        let (parent, _) = stack.last_mut()?;
        parent.push(Region::Node(self.of_vertex[&branch]));
        parent.push(Region::Branch(arms));
        parent.push(Region::Node(self.of_vertex[&end]));
        self.single_succ(end)
    }

    /// The body `items` of loop `open` ended at `end`, its `EndLoop`: the
    /// loop closes into the enclosing sequence (with its initialization and
    /// update nodes for a `ForLoop`, its first entry for a `PostLoop`).
    /// Returns the loop's exit vertex, to go on from.
    fn close_body(
        &mut self,
        stack: &mut [Open],
        items: Vec<Region>,
        end: VertexId,
        open: OpenLoop,
    ) -> Option<VertexId> {
        let OpenLoop {
            v: header,
            id,
            exit,
        } = open;
        let mut body = items;
        if !matches!(self.p.vertices[end].kind, VertexKind::EndLoop)
            || self.g.predecessors(end).len() != 1
            || self.single_succ(end)? != header
        {
            return None;
        }
        self.mark(end)?;
        body.push(Region::Node(self.of_vertex[&end]));
        let node = Region::Node(self.of_vertex[&header]);
        let kind = &self.p.vertices[header].kind;
        let (parent, _) = stack.last_mut()?;
        match kind {
            VertexKind::ForLoop { .. } => {
                body.push(Region::Node(*self.extra.get(&(header, 1))?));
                parent.push(Region::Node(*self.extra.get(&(header, 0))?));
                parent.push(node);
                parent.push(Region::Loop {
                    body: Box::new(Region::Seq(body)),
                    post_test: false,
                    id,
                });
            }
            VertexKind::PreLoop(_) => {
                parent.push(node);
                parent.push(Region::Loop {
                    body: Box::new(Region::Seq(body)),
                    post_test: false,
                    id,
                });
            }
            _ => {
                parent.push(Region::Node(*self.extra.get(&(header, 2))?));
                parent.push(node);
                parent.push(Region::Loop {
                    body: Box::new(Region::Seq(body)),
                    post_test: true,
                    id,
                });
            }
        }
        Some(exit)
    }
}

/// An open sequence of the parser: its regions so far, and what to do
/// when it reaches its end vertex.
type Open = (Vec<Region>, Cont);

/// What to do when an open sequence reaches its end vertex.
enum Cont {
    /// The outermost sequence: return.
    Root,
    /// An arm of a branch: parse the next arm or close the branch.
    Arm(OpenBranch),
    /// The body of a loop.
    Body(OpenLoop),
}

/// A branch being parsed.
struct OpenBranch {
    /// The branch vertex.
    v: VertexId,
    /// The first vertex of each arm.
    succ: Vec<VertexId>,
    /// The arm to parse after the current one.
    next: usize,
    /// The arms parsed so far.
    arms: Vec<Region>,
    /// The `EndBranch` the arms parsed so far end at.
    end: Option<VertexId>,
}

/// A loop being parsed.
struct OpenLoop {
    /// The loop vertex.
    v: VertexId,
    /// Its number in the routine.
    id: u32,
    /// The vertex after the loop.
    exit: VertexId,
}

/// How [`Parser::advance`] stopped.
enum Advance {
    /// The innermost open sequence reached its end vertex.
    Ended(VertexId),
    /// A nested sequence opened, starting at this vertex.
    Opened(VertexId),
}
