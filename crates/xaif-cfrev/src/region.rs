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
//! Loops marked for checkpointing may be left by an exit (a jump out of
//! the body to the loop's successor, the front end's form of `EXIT`):
//! [`parse_with`] takes the set of such loops. In their bodies an arm of a
//! branch may end in [`Region::Exit`]; the code after a branch with an
//! exit is parsed into its one arm that goes on (a branch without an
//! `EndBranch` has [`Region::Branch::end`] `None`), so that a region
//! holding an exit is always the last of its sequence at every level: the
//! iteration that exits runs nothing after it, and the adjoint of such an
//! iteration is the adjoint of the arms it took. Code after a branch two
//! of whose arms go on, both after an exit elsewhere in it, would have to
//! be copied into each; such a body is not parsed (the loop is refused).
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
        /// The `EndBranch`; `None` for a branch with an exit whose arms
        /// that go on end with the sequence around it (only in the body
        /// of a loop [`parse_with`] allows exits).
        end: Option<VertexId>,
        /// Whether an arm holds an exit ([`Region::Exit`]), itself or in a
        /// branch of its own.
        exits: bool,
    },
    /// The end of an arm that leaves the enclosing loop by a jump to its
    /// successor (only in the body of a loop [`parse_with`] allows exits).
    Exit,
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
    /// Loops whose body may leave them by an exit.
    exits: &'a FxHashSet<VertexId>,
    /// For each open loop body, innermost last: where an exit of it goes
    /// (its successor), when it may have exits.
    targets: Vec<Option<VertexId>>,
}

/// The region tree of a CFG from its `Entry` to its `Exit`, or `None` when
/// the graph is not structured.
pub fn parse(p: &Program, cfg: CfgId) -> Option<Vec<Region>> {
    parse_with(p, cfg, &FxHashSet::default())
}

/// [`parse`], where the bodies of the loops `exits` may leave them by
/// exits.
pub fn parse_with(p: &Program, cfg: CfgId, exits: &FxHashSet<VertexId>) -> Option<Vec<Region>> {
    let g = CfgGraph::new(p, cfg);
    let entry = g.entry?;
    let exit = g.exit?;
    let mut parser = Parser {
        p,
        g,
        visited: FxHashSet::default(),
        exits,
        targets: Vec::new(),
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
pub fn parse_loop(
    p: &Program,
    cfg: CfgId,
    v: VertexId,
    exits: &FxHashSet<VertexId>,
) -> Option<Region> {
    let g = CfgGraph::new(p, cfg);
    let mut parser = Parser {
        p,
        g,
        visited: FxHashSet::default(),
        exits,
        targets: Vec::new(),
    };
    let edges = parser.g.successors(v).to_vec();
    let [a, b] = edges.as_slice() else {
        return None;
    };
    let is_body = |e: EdgeId| p.edges[e].condition_value() == Some(1);
    let ((body_edge, body_start), (exit_edge, successor)) = match (is_body(a.0), is_body(b.0)) {
        (true, false) => (*a, *b),
        (false, true) => (*b, *a),
        _ => return None,
    };
    parser.visited.insert(v);
    let target = parser.exit_of(v, successor);
    parser.targets.push(target);
    let (mut body, end) = parser.sequence(body_start)?;
    parser.targets.pop();
    if !matches!(parser.kind(end), VertexKind::EndLoop) || parser.single(end) != Some(v) {
        return None;
    }
    parser.visited.insert(end);
    // Entered only from the loop vertex, left only back to it (or by an
    // exit to its successor).
    let inside = |x: VertexId| x != v && parser.visited.contains(&x);
    for &x in parser.visited.iter().filter(|&&x| x != v) {
        let from_outside = parser
            .g
            .predecessors(x)
            .iter()
            .any(|(_, s)| !(inside(*s) || (*s == v && x == body_start)));
        let to_outside =
            parser.g.successors(x).iter().any(|(_, t)| {
                !(inside(*t) || (x == end && *t == v) || (Some(*t) == target && x != v))
            });
        if from_outside || to_outside {
            return None;
        }
    }
    if target.is_none() {
        // Exits only where allowed.
        debug_assert!(!body.iter().any(|r| matches!(r, Region::Exit)));
    }
    body.shrink_to_fit();
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
                Scan::Stop(mut stop) => loop {
                    match self.close(stop, &mut stack)? {
                        Closed::Root(items) => return Some((items, stop)),
                        Closed::Next(next) => {
                            v = next;
                            break;
                        }
                        // A branch without `EndBranch` ended with the
                        // sequence around it.
                        Closed::Stop(outer) => stop = outer,
                    }
                },
            }
        }
    }

    /// Where an exit of loop `v` goes (its successor `after`), when its
    /// body may have exits: never the routine's `Exit`, a jump to which
    /// is a return.
    fn exit_of(&self, v: VertexId, after: VertexId) -> Option<VertexId> {
        (self.exits.contains(&v) && !matches!(self.kind(after), VertexKind::Exit)).then_some(after)
    }

    /// Where an exit of the innermost open loop body goes, when it may
    /// have exits.
    fn exit_target(&self) -> Option<VertexId> {
        self.targets.last().copied().flatten()
    }

    /// Whether `v` ends a sequence: an `Exit`, `EndBranch` or `EndLoop`, or
    /// the successor an exit of the innermost loop goes to.
    fn is_stop(&self, v: VertexId) -> bool {
        matches!(
            self.kind(v),
            VertexKind::Exit | VertexKind::EndBranch | VertexKind::EndLoop
        ) || Some(v) == self.exit_target()
    }

    /// Adds the blocks and passes from `v` on to the innermost open
    /// sequence, up to an end vertex (`Scan::Stop`) or a branch or loop,
    /// whose first arm or body it opens (`Scan::Opened`, with the vertex it
    /// starts at).
    fn scan(&mut self, mut v: VertexId, stack: &mut Vec<(Vec<Region>, Cont)>) -> Option<Scan> {
        loop {
            if self.is_stop(v) {
                return Some(Scan::Stop(v));
            }
            if matches!(self.kind(v), VertexKind::Entry) {
                return None;
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
                        Cont::Arm(Box::new(ArmState {
                            vertex: v,
                            edges,
                            arms: Vec::new(),
                            reopened: None,
                        })),
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
                    self.targets.push(self.exit_of(v, exit));
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
        let (mut items, cont) = stack.pop()?;
        match cont {
            Cont::Root => Some(Closed::Root(items)),
            Cont::Arm(mut arm) => {
                // An arm ends at the branch's `EndBranch`, at an exit, or
                // (a branch without `EndBranch`) where the sequence around
                // the branch ends.
                let end = if Some(stop) == self.exit_target() {
                    // (An arm whose last branch exits on every way needs
                    // no exit of its own.)
                    if !matches!(items.last(), Some(Region::Branch { end: None, .. })) {
                        items.push(Region::Exit);
                    }
                    ArmEnd::Exit
                } else {
                    ArmEnd::At(stop)
                };
                let exits = end == ArmEnd::Exit || ends_in_exit(&items);
                match arm.reopened.take() {
                    Some(k) => {
                        // The code after a branch, parsed into its one arm
                        // that goes on, ended: so does the sequence around.
                        arm.arms[k].1 = items;
                        arm.arms[k].2 = end;
                        return self.finish_open_branch(*arm, stop, stack);
                    }
                    None => {
                        let edge = arm.edges[arm.arms.len()].0;
                        arm.arms.push((edge, items, end, exits));
                    }
                }
                if let Some(&(_, t)) = arm.edges.get(arm.arms.len()) {
                    stack.push((Vec::new(), Cont::Arm(arm)));
                    return Some(Closed::Next(t));
                }
                self.close_branch(*arm, stack)
            }
            Cont::Body {
                vertex,
                body_edge,
                exit_edge,
                exit,
            } => {
                self.targets.pop();
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

    /// Every arm of a branch is parsed: the branch closes at its
    /// `EndBranch`, or ends with the sequence around it, or (a branch with
    /// an exit and one arm that goes on) that arm is reopened to take the
    /// code after the branch.
    fn close_branch(
        &mut self,
        mut arm: ArmState,
        stack: &mut Vec<(Vec<Region>, Cont)>,
    ) -> Option<Closed> {
        let exits = arm.arms.iter().any(|a| a.3);
        let going_on: Vec<usize> = (0..arm.arms.len())
            .filter(|&k| arm.arms[k].2 != ArmEnd::Exit)
            .collect();
        let stops: Vec<VertexId> = going_on
            .iter()
            .filter_map(|&k| match arm.arms[k].2 {
                ArmEnd::At(x) => Some(x),
                ArmEnd::Exit => None,
            })
            .collect();
        let Some(&x) = stops.first() else {
            // Every arm exits.
            return None;
        };
        if stops.iter().any(|&y| y != x) {
            return None;
        }
        let joins = matches!(self.kind(x), VertexKind::EndBranch)
            && self.g.predecessors(x).len() == going_on.len();
        if !joins {
            // No `EndBranch` of its own: only a branch with an exit may
            // end with the sequence around it.
            return if exits {
                self.finish_open_branch(arm, x, stack)
            } else {
                None
            };
        }
        if !self.visited.insert(x) {
            return None;
        }
        let next = self.single(x)?;
        if exits && !self.is_stop(next) {
            // Code follows the branch: it goes into the one arm that goes
            // on, or would have to be copied.
            let [k] = going_on.as_slice() else {
                return None;
            };
            let k = *k;
            let items = std::mem::take(&mut arm.arms[k].1);
            arm.reopened = Some(k);
            stack.push((items, Cont::Arm(Box::new(arm))));
            return Some(Closed::Next(next));
        }
        let (out, _) = stack.last_mut()?;
        out.push(Region::Branch {
            vertex: arm.vertex,
            arms: arm
                .arms
                .into_iter()
                .map(|(e, items, _, _)| (e, items))
                .collect(),
            end: Some(x),
            exits,
        });
        Some(Closed::Next(next))
    }

    /// A branch with an exit whose arms that go on end where the sequence
    /// around it ends (`stop`): it is the last region of that sequence.
    fn finish_open_branch(
        &mut self,
        arm: ArmState,
        stop: VertexId,
        stack: &mut [(Vec<Region>, Cont)],
    ) -> Option<Closed> {
        let (out, _) = stack.last_mut()?;
        out.push(Region::Branch {
            vertex: arm.vertex,
            arms: arm
                .arms
                .into_iter()
                .map(|(e, items, _, _)| (e, items))
                .collect(),
            end: None,
            exits: true,
        });
        Some(Closed::Stop(stop))
    }
}

/// Whether a sequence's last region holds an exit.
fn ends_in_exit(items: &[Region]) -> bool {
    matches!(
        items.last(),
        Some(Region::Exit) | Some(Region::Branch { exits: true, .. })
    )
}

/// How an arm of a branch ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ArmEnd {
    /// By an exit.
    Exit,
    /// At this vertex (the branch's `EndBranch`, or where the sequence
    /// around it ends).
    At(VertexId),
}

/// A branch whose arms are being parsed.
struct ArmState {
    vertex: VertexId,
    edges: Vec<(EdgeId, VertexId)>,
    /// The arms parsed: edge, regions, how it ended, whether it holds an
    /// exit.
    arms: Vec<(EdgeId, Vec<Region>, ArmEnd, bool)>,
    /// The arm reopened to take the code after the branch.
    reopened: Option<usize>,
}

/// What to do when an open sequence of [`Parser::sequence`] reaches its
/// end vertex.
enum Cont {
    Root,
    Arm(Box<ArmState>),
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
    /// The sequence around ends at this vertex too.
    Stop(VertexId),
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
    /// The arm ends by leaving the enclosing loop (an exit).
    Exit,
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
                    Region::Exit => visit(Event::Exit),
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
            Region::Block(_) | Region::Pass(_) | Region::Exit => {}
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
