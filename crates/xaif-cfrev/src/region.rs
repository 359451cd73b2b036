//! Structured control flow as a tree of regions.
//!
//! Algorithm 1 of seed "control flow reversal" sorts the vertices of a
//! structured CFG so that loop bodies come before the loop's successor and
//! both arms of a branch before its `EndBranch`. This module computes the
//! same order as a tree: a sequence of basic blocks, branches (each arm a
//! sequence, closed by the matching `EndBranch`) and loops (a body
//! sequence closed by the `EndLoop` that leads back to the loop vertex).
//! Reversal is then a walk of the tree ([`walk`]). A graph that does not
//! have this shape (gotos into the middle of a structure, early exits) is
//! reported as unstructured and reversed by block enumeration instead.
//!
//! The tree is as deep as the CFG's nesting, which XAIF writes flat, so
//! parsing, walking, cloning, comparing and dropping it use explicit stacks:
//! no native recursion in proportion to the input.

use rustc_hash::FxHashSet;
use xaif_model::{CfgGraph, CfgId, EdgeId, Program, VertexId, VertexKind};

/// A region of a structured CFG.
#[derive(Debug)]
pub enum Region {
    /// A basic block.
    Block(VertexId),
    /// A `Label` or `Goto` with one successor: passes control on.
    Pass(VertexId),
    /// A `Branch` or `If` with its arms and its `EndBranch`.
    Branch {
        /// The branching vertex.
        vertex: VertexId,
        /// The arms in edge order: the edge leaving the branch and the
        /// arm's regions.
        arms: Vec<(EdgeId, Vec<Region>)>,
        /// The `EndBranch`.
        end: VertexId,
    },
    /// A `ForLoop`, `PreLoop` or `PostLoop` with its body and `EndLoop`.
    Loop {
        /// The loop vertex.
        vertex: VertexId,
        /// The edge into the body (`condition_value` 1).
        body_edge: EdgeId,
        /// The body.
        body: Vec<Region>,
        /// The `EndLoop`.
        end: VertexId,
        /// The edge leaving the loop.
        exit_edge: EdgeId,
    },
}

struct Parser<'a> {
    p: &'a Program,
    g: CfgGraph,
    visited: FxHashSet<VertexId>,
}

/// The region tree of a CFG from its `Entry` to its `Exit`, or `None` when
/// the graph is not structured.
pub fn parse(p: &Program, cfg: CfgId) -> Option<Vec<Region>> {
    let g = CfgGraph::new(p, cfg);
    let entry = g.entry?;
    let exit = g.exit?;
    let mut parser = Parser {
        p,
        g,
        visited: FxHashSet::default(),
    };
    parser.visited.insert(entry);
    let start = parser.single(entry)?;
    let (regions, stop) = parser.sequence(start)?;
    if stop != exit {
        return None;
    }
    Some(regions)
}

/// The loop at loop vertex `v` as a [`Region::Loop`], when its body is
/// structured and entered and left only through `v` (the rest of the graph
/// may be unstructured): what a checkpointed loop of a routine reversed by
/// block enumeration is reversed as, one unit.
pub fn parse_loop(p: &Program, cfg: CfgId, v: VertexId) -> Option<Region> {
    let g = CfgGraph::new(p, cfg);
    let mut parser = Parser {
        p,
        g,
        visited: FxHashSet::default(),
    };
    let edges = parser.g.successors(v).to_vec();
    let [a, b] = edges.as_slice() else {
        return None;
    };
    let is_body = |e: EdgeId| p.edges[e].condition_value() == Some(1);
    let ((body_edge, body_start), (exit_edge, _)) = match (is_body(a.0), is_body(b.0)) {
        (true, false) => (*a, *b),
        (false, true) => (*b, *a),
        _ => return None,
    };
    parser.visited.insert(v);
    let (body, end) = parser.sequence(body_start)?;
    if !matches!(parser.kind(end), VertexKind::EndLoop) || parser.single(end) != Some(v) {
        return None;
    }
    parser.visited.insert(end);
    // Entered only from the loop vertex, left only back to it.
    let inside = |x: VertexId| x != v && parser.visited.contains(&x);
    for &x in parser.visited.iter().filter(|&&x| x != v) {
        let from_outside = parser
            .g
            .predecessors(x)
            .iter()
            .any(|(_, s)| !(inside(*s) || (*s == v && x == body_start)));
        let to_outside = parser
            .g
            .successors(x)
            .iter()
            .any(|(_, t)| !(inside(*t) || (x == end && *t == v)));
        if from_outside || to_outside {
            return None;
        }
    }
    Some(Region::Loop {
        vertex: v,
        body_edge,
        body,
        end,
        exit_edge,
    })
}

impl Parser<'_> {
    fn kind(&self, v: VertexId) -> &VertexKind {
        &self.p.vertices[v].kind
    }

    fn single(&self, v: VertexId) -> Option<VertexId> {
        match self.g.successors(v) {
            [(_, t)] => Some(*t),
            _ => None,
        }
    }

    /// Regions from `v` up to the first `Exit`, `EndBranch` or `EndLoop`,
    /// which is returned. Nested structures are parsed with an explicit
    /// stack of open sequences (branch arms, loop bodies).
    fn sequence(&mut self, first: VertexId) -> Option<(Vec<Region>, VertexId)> {
        let mut stack: Vec<(Vec<Region>, Cont)> = vec![(Vec::new(), Cont::Root)];
        let mut v = first;
        loop {
            match self.scan(v, &mut stack)? {
                Scan::Opened(inside) => v = inside,
                Scan::Stop(stop) => match self.close(stop, &mut stack)? {
                    Closed::Root(items) => return Some((items, stop)),
                    Closed::Next(next) => v = next,
                },
            }
        }
    }

    /// Adds the blocks and passes from `v` on to the innermost open
    /// sequence, up to an end vertex (`Scan::Stop`) or a branch or loop,
    /// whose first arm or body it opens (`Scan::Opened`, with the vertex it
    /// starts at).
    fn scan(&mut self, mut v: VertexId, stack: &mut Vec<(Vec<Region>, Cont)>) -> Option<Scan> {
        loop {
            match self.kind(v) {
                VertexKind::Exit | VertexKind::EndBranch | VertexKind::EndLoop => {
                    return Some(Scan::Stop(v))
                }
                VertexKind::Entry => return None,
                _ => {}
            }
            if !self.visited.insert(v) {
                return None;
            }
            let (out, _) = stack.last_mut()?;
            match self.kind(v) {
                VertexKind::BasicBlock(_) => {
                    out.push(Region::Block(v));
                    v = self.single(v)?;
                }
                VertexKind::Label | VertexKind::Goto => {
                    out.push(Region::Pass(v));
                    v = self.single(v)?;
                }
                VertexKind::Branch(_) | VertexKind::If(_) => {
                    let edges: Vec<(EdgeId, VertexId)> = self.g.successors(v).to_vec();
                    let first_arm = edges.first()?.1;
                    stack.push((
                        Vec::new(),
                        Cont::Arm {
                            vertex: v,
                            edges,
                            arms: Vec::new(),
                            end: None,
                        },
                    ));
                    return Some(Scan::Opened(first_arm));
                }
                VertexKind::ForLoop { .. } | VertexKind::PreLoop(_) | VertexKind::PostLoop(_) => {
                    let edges = self.g.successors(v).to_vec();
                    let [a, b] = edges.as_slice() else {
                        return None;
                    };
                    let is_body = |e: EdgeId| self.p.edges[e].condition_value() == Some(1);
                    let ((body_edge, body_start), (exit_edge, exit)) =
                        match (is_body(a.0), is_body(b.0)) {
                            (true, false) => (*a, *b),
                            (false, true) => (*b, *a),
                            _ => return None,
                        };
                    stack.push((
                        Vec::new(),
                        Cont::Body {
                            vertex: v,
                            body_edge,
                            exit_edge,
                            exit,
                        },
                    ));
                    return Some(Scan::Opened(body_start));
                }
                _ => return None,
            }
        }
    }

    /// The innermost open sequence reached `stop`: closes it (an arm, the
    /// next arm or the whole branch; a loop body and its loop) and says
    /// where parsing goes on, or returns the outermost sequence.
    fn close(&mut self, stop: VertexId, stack: &mut Vec<(Vec<Region>, Cont)>) -> Option<Closed> {
        let (items, cont) = stack.pop()?;
        match cont {
            Cont::Root => Some(Closed::Root(items)),
            Cont::Arm {
                vertex,
                edges,
                mut arms,
                end,
            } => {
                if !matches!(self.kind(stop), VertexKind::EndBranch)
                    || end.is_some_and(|x| x != stop)
                {
                    return None;
                }
                let edge = edges[arms.len()].0;
                arms.push((edge, items));
                if let Some(&(_, t)) = edges.get(arms.len()) {
                    stack.push((
                        Vec::new(),
                        Cont::Arm {
                            vertex,
                            edges,
                            arms,
                            end: Some(stop),
                        },
                    ));
                    return Some(Closed::Next(t));
                }
                if !self.visited.insert(stop) || self.g.predecessors(stop).len() != arms.len() {
                    return None;
                }
                let (out, _) = stack.last_mut()?;
                out.push(Region::Branch {
                    vertex,
                    arms,
                    end: stop,
                });
                Some(Closed::Next(self.single(stop)?))
            }
            Cont::Body {
                vertex,
                body_edge,
                exit_edge,
                exit,
            } => {
                if !matches!(self.kind(stop), VertexKind::EndLoop)
                    || self.single(stop) != Some(vertex)
                {
                    return None;
                }
                if !self.visited.insert(stop) {
                    return None;
                }
                // The loop vertex is entered from before the loop and
                // from its EndLoop only.
                if self.g.predecessors(vertex).len() != 2 {
                    return None;
                }
                let (out, _) = stack.last_mut()?;
                out.push(Region::Loop {
                    vertex,
                    body_edge,
                    body: items,
                    end: stop,
                    exit_edge,
                });
                Some(Closed::Next(exit))
            }
        }
    }
}

/// What to do when an open sequence of [`Parser::sequence`] reaches its
/// end vertex.
enum Cont {
    Root,
    Arm {
        vertex: VertexId,
        edges: Vec<(EdgeId, VertexId)>,
        arms: Vec<(EdgeId, Vec<Region>)>,
        end: Option<VertexId>,
    },
    Body {
        vertex: VertexId,
        body_edge: EdgeId,
        exit_edge: EdgeId,
        exit: VertexId,
    },
}

/// Where [`Parser::scan`] stopped.
enum Scan {
    /// At an end vertex.
    Stop(VertexId),
    /// Having opened an arm or a loop body, which starts at this vertex.
    Opened(VertexId),
}

/// What [`Parser::close`] did.
enum Closed {
    /// Closed the outermost sequence: its regions.
    Root(Vec<Region>),
    /// Parsing goes on at this vertex.
    Next(VertexId),
}

/// One step of a walk over region sequences ([`walk`]).
#[derive(Clone, Copy, Debug)]
pub enum Event<'r> {
    /// A basic block.
    Block(VertexId),
    /// A `Label` or `Goto` passing control on.
    Pass(VertexId),
    /// A branch (a [`Region::Branch`]) before its arms.
    BranchStart(&'r Region),
    /// Arm `index` of the innermost open branch begins; `edge` leaves the
    /// branching vertex into it.
    ArmStart {
        /// Position of the arm.
        index: usize,
        /// The edge into the arm.
        edge: EdgeId,
    },
    /// Arm `index` of the innermost open branch has ended.
    ArmEnd {
        /// Position of the arm.
        index: usize,
    },
    /// The innermost open branch after its last arm.
    BranchEnd(&'r Region),
    /// A loop (a [`Region::Loop`]) before its body.
    LoopStart(&'r Region),
    /// The innermost open loop after its body.
    LoopEnd(&'r Region),
}

/// Walks `regions` in order (or each sequence in reverse order when
/// `reverse`; the arms of a branch always in order), reporting each region
/// and the start and end of every branch, arm and loop to `visit`, with an
/// explicit stack.
pub fn walk<'r>(regions: &'r [Region], reverse: bool, mut visit: impl FnMut(Event<'r>)) {
    enum Frame<'r> {
        Seq { items: &'r [Region], next: usize },
        Branch { region: &'r Region, next: usize },
        Loop { region: &'r Region },
    }
    let mut stack = vec![Frame::Seq {
        items: regions,
        next: 0,
    }];
    while let Some(top) = stack.last_mut() {
        match top {
            Frame::Seq { items, next } => {
                if *next == items.len() {
                    stack.pop();
                    match stack.last_mut() {
                        Some(Frame::Branch { next, .. }) => {
                            visit(Event::ArmEnd { index: *next - 1 })
                        }
                        Some(Frame::Loop { region }) => {
                            visit(Event::LoopEnd(region));
                            stack.pop();
                        }
                        _ => {}
                    }
                    continue;
                }
                let r = if reverse {
                    &items[items.len() - 1 - *next]
                } else {
                    &items[*next]
                };
                *next += 1;
                match r {
                    Region::Block(v) => visit(Event::Block(*v)),
                    Region::Pass(v) => visit(Event::Pass(*v)),
                    Region::Branch { .. } => {
                        visit(Event::BranchStart(r));
                        stack.push(Frame::Branch { region: r, next: 0 });
                    }
                    Region::Loop { body, .. } => {
                        visit(Event::LoopStart(r));
                        stack.push(Frame::Loop { region: r });
                        stack.push(Frame::Seq {
                            items: body,
                            next: 0,
                        });
                    }
                }
            }
            Frame::Branch { region, next } => {
                let region: &'r Region = region;
                let Region::Branch { arms, .. } = region else {
                    stack.pop();
                    continue;
                };
                match arms.get(*next) {
                    Some((edge, arm)) => {
                        visit(Event::ArmStart {
                            index: *next,
                            edge: *edge,
                        });
                        *next += 1;
                        stack.push(Frame::Seq {
                            items: arm,
                            next: 0,
                        });
                    }
                    None => {
                        visit(Event::BranchEnd(region));
                        stack.pop();
                    }
                }
            }
            // A loop's body sequence closes the loop when it ends.
            Frame::Loop { .. } => {
                stack.pop();
            }
        }
    }
}

impl Region {
    /// Moves the nested regions out into `into`, leaving this one shallow.
    fn take_children(&mut self, into: &mut Vec<Region>) {
        match self {
            Region::Block(_) | Region::Pass(_) => {}
            Region::Branch { arms, .. } => {
                for (_, arm) in arms.iter_mut() {
                    into.append(arm);
                }
            }
            Region::Loop { body, .. } => into.append(body),
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        let mut stack = Vec::new();
        self.take_children(&mut stack);
        while let Some(mut r) = stack.pop() {
            r.take_children(&mut stack);
        }
    }
}
