//! Elimination ahead of the transformation, on a second core.
//!
//! The elimination takes a third of a transformation's time on programs
//! with flux-like blocks, and the transformation itself runs on one
//! thread. Yet every graph it eliminates is known from the input alone
//! (flattening reads only the input program), and the result of a graph
//! depends on its shape only (the [`Memo`]). So while the transformation
//! works through the program's basic blocks forwards, a second thread
//! flattens them from the last one backwards, builds their graphs and
//! eliminates them into the memo: the transformation finds each result
//! there when it gets to its graph, or waits for it when the other thread
//! is computing it. The two threads meet in the middle and never compute a
//! shape twice (the memo's claims). The blocks the second thread has
//! flattened are handed over too (within a budget), so the transformation
//! does not flatten them again.
//!
//! The output is the same bytes with or without the second thread, and
//! whatever the timing: a result is the same whichever thread computed it
//! (the memo's guarantee). What the second thread cannot foresee costs
//! nothing but its time: a sequence whose subscripts the transformation
//! freezes has another graph, and a graph the memo does not keep is
//! eliminated again by the transformation.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use xaif_elim::{Memo, Prefetched, PropagationMode};
use xaif_model::{Program, RoutineBody, RoutineId, StmtId, StmtKind, VertexKind};

use crate::catalogue::Catalogue;
use crate::context::Ctx;
use crate::flatten::{flatten, FlattenOptions, Piece};

/// Programs whose basic blocks' assignments have fewer expression
/// vertices in all get no second thread: starting one costs about as much
/// as eliminating a few small graphs (measured in `docs/performance.md`).
pub const AHEAD_MIN_SIZE: usize = 2000;

/// At most this many statements' worth of flattened blocks wait for the
/// transformation (their pieces hold the linearized statements: a few
/// kilobytes each); beyond it the transformation flattens them again.
pub const AHEAD_MAX_HANDED_STATEMENTS: usize = 20_000;

/// The second thread's stack: what the transformation's own thread has
/// (the main thread's 8 MiB), since it flattens the same expressions.
const AHEAD_STACK: usize = 8 << 20;

/// The basic blocks of a program in the order a transformation visits
/// them, and how far the transformation has got.
pub struct Ahead<'p> {
    blocks: Vec<&'p [StmtId]>,
    /// Per routine (in the order given), the index of its first block.
    routine_start: Vec<usize>,
    /// Blocks the transformation has started.
    entered: AtomicUsize,
    /// Set when the transformation ends (or fails): the second thread
    /// stops at its next graph.
    stopped: AtomicBool,
    /// Per block, its flattened pieces once the second thread is done with
    /// them, for the transformation to take instead of flattening again.
    pieces: Vec<Mutex<Option<Vec<Piece>>>>,
    /// Statements of the blocks whose pieces were handed over so far
    /// (bounded by [`AHEAD_MAX_HANDED_STATEMENTS`]).
    handed: AtomicUsize,
}

/// What the second thread needs to build a block's graphs the way the
/// transformation does.
pub struct Builder<'a> {
    /// The transformation's facts about the input.
    pub ctx: &'a Ctx<'a>,
    /// The inlinable intrinsics.
    pub catalogue: &'a Catalogue,
    /// `-S`, `-Q`.
    pub flatten: FlattenOptions,
    /// Direct-action intrinsics (`-N`).
    pub is_direct: &'a (dyn Fn(&str) -> bool + Sync),
    /// Where results go.
    pub memo: &'a Memo,
    /// Tangent or adjoint propagation.
    pub mode: PropagationMode,
}

impl<'p> Ahead<'p> {
    /// The basic blocks of `routines` (in that order) of `p`, when their
    /// assignments have enough expression vertices ([`AHEAD_MIN_SIZE`]) to
    /// gain from a second thread.
    pub fn new(p: &'p Program, routines: impl Iterator<Item = RoutineId>) -> Option<Self> {
        let mut blocks = Vec::new();
        let mut routine_start = Vec::new();
        let mut size = 0;
        for r in routines {
            routine_start.push(blocks.len());
            let RoutineBody::Graph(cfg) = &p.routines[r].body else {
                continue;
            };
            for v in p.cfgs[*cfg].vertex_ids() {
                if let VertexKind::BasicBlock(stmts) = &p.vertices[v].kind {
                    for &s in stmts {
                        if let StmtKind::Assignment(a) = &p.stmts[s].kind {
                            size += a.rhs.vertices.len();
                        }
                    }
                    blocks.push(stmts.as_slice());
                }
            }
        }
        (size >= AHEAD_MIN_SIZE).then(|| Ahead {
            pieces: blocks.iter().map(|_| Mutex::new(None)).collect(),
            handed: AtomicUsize::new(0),
            blocks,
            routine_start,
            entered: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
        })
    }

    /// The transformation starts the `k`th routine of those given to
    /// [`Ahead::new`] (its blocks are entered one by one after this).
    pub fn enter_routine(&self, k: usize) {
        if let Some(&start) = self.routine_start.get(k) {
            self.entered.store(start, Ordering::Relaxed);
        }
    }

    /// The transformation starts the next basic block of its routine, in
    /// the order of the routine's control flow graph, whose statements are
    /// `stmts`: the block's flattened pieces when the second thread has
    /// them ready (the same [`flatten`] gives).
    pub fn enter_block(&self, stmts: &[StmtId]) -> Option<Vec<Piece>> {
        let k = self.entered.fetch_add(1, Ordering::Relaxed);
        // Only the block the second thread flattened: the same statements
        // of the same program (a transformation that visits blocks twice
        // counts past them and finds other blocks here).
        let block = self.blocks.get(k)?;
        if block.as_ptr() != stmts.as_ptr() || block.len() != stmts.len() {
            return None;
        }
        self.pieces.get(k)?.lock().ok()?.take()
    }

    /// The transformation is over: the second thread stops.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    /// Whether the second thread should stop before block `k`: the
    /// transformation is over or has gone past it.
    fn passed(&self, k: usize) -> bool {
        self.stopped.load(Ordering::Relaxed) || k + 1 < self.entered.load(Ordering::Relaxed)
    }

    /// Whether the transformation is in block `k` now.
    fn inside(&self, k: usize) -> bool {
        k + 1 == self.entered.load(Ordering::Relaxed)
    }

    /// The second thread's work: the blocks from the last backwards, each
    /// block's sequences from the last backwards, until it meets the
    /// transformation: in the block the transformation is in, at the first
    /// sequence whose result is there or being computed. Errors are the
    /// transformation's to report: a block that does not flatten, or a
    /// graph that fails, is passed by.
    pub fn run(&self, b: &Builder<'_>) {
        for k in (0..self.blocks.len()).rev() {
            if self.passed(k) {
                return;
            }
            let Ok(pieces) = flatten(b.ctx, b.catalogue, self.blocks[k], b.flatten, b.is_direct)
            else {
                continue;
            };
            for piece in pieces.iter().rev() {
                if self.passed(k) {
                    return;
                }
                if let Piece::Seq(seq) = piece {
                    let done = crate::preaccumulate::prefetch(seq, b.memo, b.mode);
                    if matches!(done, Ok(Prefetched::Present)) && self.inside(k) {
                        return;
                    }
                }
            }
            self.hand_over(k, pieces);
        }
    }

    /// Keeps block `k`'s pieces for the transformation, within the budget.
    fn hand_over(&self, k: usize, pieces: Vec<Piece>) {
        // The transformation has entered the block: it flattens it itself.
        if k < self.entered.load(Ordering::Relaxed) {
            return;
        }
        let statements = self.blocks[k].len();
        if self.handed.load(Ordering::Relaxed) + statements > AHEAD_MAX_HANDED_STATEMENTS {
            return;
        }
        if let Some(Ok(mut slot)) = self.pieces.get(k).map(Mutex::lock) {
            self.handed.fetch_add(statements, Ordering::Relaxed);
            *slot = Some(pieces);
        }
    }
}

/// Stops the second thread when dropped: however the transformation ends
/// (an error returned early included), its scope does not wait for the
/// second thread to finish the program.
pub struct StopOnDrop<'a, 'p>(pub Option<&'a Ahead<'p>>);

impl Drop for StopOnDrop<'_, '_> {
    fn drop(&mut self) {
        if let Some(a) = self.0 {
            a.stop();
        }
    }
}

/// Runs `transform` with a second thread eliminating ahead of it when
/// `ahead` is given (and a thread can be started); `transform` calls
/// [`Ahead::enter_block`] at every basic block.
pub fn with_ahead<T>(
    ahead: Option<(&Ahead<'_>, &Builder<'_>)>,
    transform: impl FnOnce() -> T,
) -> T {
    let Some((a, b)) = ahead else {
        return transform();
    };
    std::thread::scope(|scope| {
        let started = std::thread::Builder::new()
            .name("xaifb-ahead".into())
            .stack_size(AHEAD_STACK)
            .spawn_scoped(scope, move || xaif_elim::one_thread_per_graph(|| a.run(b)));
        let _stop = StopOnDrop(Some(a));
        if started.is_ok() {
            // Both cores have graphs of their own to eliminate.
            xaif_elim::one_thread_per_graph(transform)
        } else {
            transform()
        }
    })
}
