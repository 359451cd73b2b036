//! The abstract machine that executes compiled XAIF.
//!
//! It implements the executable meaning of XAIF as the OpenAD tool chain
//! compiles it: Fortran argument passing by reference, DO-loop trip counts
//! fixed on entry, active values with derivative parts, derivative
//! propagators, the inlinable calls of tangent and adjoint code, global LIFO
//! tapes, per-routine argument checkpoint stacks, the mode-flag state
//! machines of the split and joint subroutine templates, and the run-time
//! calls of checkpointed loops (`oad_revolve_*`, scheduled by
//! `xaif-revolve`, with their snapshots: `docs/checkpointing.md`).

use std::rc::Rc;
use std::time::Instant;

use rustc_hash::FxHashMap;
use serde::Serialize;
use smallvec::SmallVec;

use crate::compile::{
    Body, CArg, CCfg, CExpr, CProp, CRef, CStmt, CSub, CVertex, DoLoop, ENode, InlineOp, Inquiry,
    Loc, Operand, Prog, SKind, VKind, VarDecl,
};
use crate::error::{ErrorKind, InterpError, Result};
use crate::intrinsics;
use crate::limits::{elements_of, Limits};
use crate::memory::{whole, BufId, Cells, Dim, Memory, Place};
use crate::value::{Scalar, Shape, Ty, Value};

/// The seven mode flags of OpenAD's subroutine templates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// Store argument checkpoints.
    pub arg_store: bool,
    /// Restore argument checkpoints.
    pub arg_restore: bool,
    /// Store result checkpoints.
    pub res_store: bool,
    /// Restore result checkpoints.
    pub res_restore: bool,
    /// Run the original code.
    pub plain: bool,
    /// Run the taping code.
    pub tape: bool,
    /// Run the adjoint code.
    pub adjoint: bool,
}

impl Flags {
    /// Only `plain`.
    pub const PLAIN: Flags = Flags {
        arg_store: false,
        arg_restore: false,
        res_store: false,
        res_restore: false,
        plain: true,
        tape: false,
        adjoint: false,
    };

    /// No flag set.
    pub const NONE: Flags = Flags {
        arg_store: false,
        arg_restore: false,
        res_store: false,
        res_restore: false,
        plain: false,
        tape: false,
        adjoint: false,
    };
}

/// Which subroutine template the back end pasted the replacements into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Template {
    /// Split reversal: the flags select one placeholder and never change.
    Split,
    /// Joint reversal: the five-test state machine.
    Joint,
    /// Trace output (`tracing_subroutine_template`): every routine runs
    /// its placeholder 2, the copy that writes trace records.
    Trace,
}

/// Counters of one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Doubles pushed onto the double tape.
    pub doubles_pushed: u64,
    /// Integers pushed onto the integer tape.
    pub integers_pushed: u64,
    /// Logicals pushed.
    pub logicals_pushed: u64,
    /// Strings pushed.
    pub strings_pushed: u64,
    /// Largest size of the double tape.
    pub peak_double_tape: u64,
    /// Largest size of the integer tape.
    pub peak_integer_tape: u64,
    /// Largest total size of all argument checkpoint stacks (elements).
    pub peak_checkpoint: u64,
    /// Elements stored into argument checkpoints.
    pub checkpoint_stored: u64,
    /// Floating-point operations of original statements.
    pub flops_original: u64,
    /// Floating-point operations of derivative code (statements created by
    /// the transformation, propagators, inlinable calls).
    pub flops_derivative: u64,
    /// Statements and control flow vertices executed.
    pub steps: u64,
    /// Steps of the longest run (what the step budget bounds).
    pub peak_run_steps: u64,
    /// Routine calls.
    pub calls: u64,
    /// Largest number of elements held at once by variables, frames,
    /// tapes and checkpoint stacks (what the element limit bounds).
    pub peak_elements: u64,
    /// Deepest nesting of routine calls.
    pub peak_call_depth: u64,
    /// Multiplications counted by `countmult` calls (`-C` output).
    pub counted_multiplications: u64,
    /// Additions counted by `countadd` calls (`-C` output).
    pub counted_additions: u64,
    /// Elements stored into the snapshots of checkpointed loops.
    pub snapshot_stored: u64,
    /// Largest number of elements held at once by the snapshots of
    /// checkpointed loops.
    pub peak_snapshot_elements: u64,
    /// Steps of checkpointed loops run without taping (advances), over
    /// every instance.
    pub checkpointed_forward_steps: u64,
    /// Reversed instances of checkpointed loops (all of them, also beyond
    /// the records kept).
    pub checkpointed_instances: u64,
    /// Instances of fixed-point loops whose adjoint did not converge
    /// within their limit of iterations (`xaifb run` warns of each).
    pub unconverged_loops: u64,
    /// One record per reversed instance of a checkpointed loop, in the
    /// order they finished (reported by `xaifb run --stats-json` at the top
    /// level, beside these counters).
    #[serde(skip)]
    pub checkpointed_loops: Vec<LoopRecord>,
}

/// What one reversed instance of a checkpointed loop did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LoopRecord {
    /// The routine (XAIF `symbol_id`) whose loop it is.
    pub routine: String,
    /// The loop's line (the `lineNumber` of its `ForLoop`).
    pub line: i64,
    /// Its schedule: `binomial`, `online`, `fixed-point` or `independent`.
    pub schedule: &'static str,
    /// Its iterations.
    pub iterations: u64,
    /// The snapshots it was allowed.
    pub snapshots: u64,
    /// Iterations run without taping, over both sweeps (each iteration is
    /// also taped once).
    pub forward_steps: u64,
    /// The most times any one iteration ran without taping, the taping
    /// sweep's run included (`None` beyond 2^28 iterations).
    pub max_repetitions: Option<u64>,
    /// The most snapshots it held at once.
    pub peak_snapshots: u64,
    /// The most elements its snapshots held at once.
    pub peak_snapshot_elements: u64,
    /// A fixed-point loop's adjoint iterations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adjoint_iterations: Option<u64>,
    /// A fixed-point loop's last relative change of its state's adjoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_change: Option<f64>,
    /// Whether a fixed-point loop converged: it reached its fixed point
    /// (`reached`) and its adjoint converged within its limit of
    /// iterations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub converged: Option<bool>,
    /// How much a fixed-point loop's last complete iteration changed its
    /// state, relative to the state's largest absolute value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forward_change: Option<f64>,
    /// Whether that change is within the loop's tolerance: the loop
    /// reached the fixed point whose derivative its adjoint gives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reached: Option<bool>,
}

/// What the machine keeps about a running or paused checkpointed loop.
#[derive(Clone, Debug)]
struct LoopTag {
    routine: usize,
    line: i64,
    /// The flags of the taping sweep, set for taped steps.
    taping: Flags,
    /// The flags of the adjoint sweep, set for reversed steps.
    adjoint: Flags,
    /// The first snapshot frame of this instance.
    base: usize,
    /// The most elements its frames held.
    peak_elements: u64,
}

#[derive(Clone, Debug)]
enum Slot {
    Unbound,
    Bound { place: Place, growable: bool },
    Absent,
}

struct Frame {
    routine: usize,
    slots: Vec<Slot>,
    /// Whether a translated statement (or the caller) gave each slot a
    /// value; checked only in routines with dropped stores.
    written: Vec<bool>,
    owned: Vec<BufId>,
    copy_back: Vec<(Place, Place)>,
}

#[derive(Default, Clone, Debug)]
struct Stacks {
    real: Vec<f64>,
    int: Vec<i64>,
    bool: Vec<bool>,
    str: Vec<Rc<str>>,
}

impl Stacks {
    fn len(&self) -> usize {
        self.real.len() + self.int.len() + self.bool.len() + self.str.len()
    }
}

/// A record of argument checkpoints being restored in store order: where
/// it starts in each of the routine's stacks (real, integer, logical,
/// string) and what is read next.
#[derive(Clone, Copy)]
struct RecordRead {
    routine: usize,
    start: [usize; 4],
    next: [usize; 4],
    /// Per stack ([`stack_slot`]), the record's first entry in the
    /// routine's [`CpEntry`] lists, and the entry the next restore pairs
    /// with.
    entry_start: [usize; 4],
    entry_next: [usize; 4],
}

/// What one `cp_arg_store_*` call saved: its type and number of elements,
/// listed per stack of the run-time ([`stack_slot`]: the stacks are
/// independent, as the run-time's are). A restore pairs with one entry of
/// its stack (the last one off a stack, the next one of a record read in
/// store order) and must take back exactly what it holds: a restore that
/// does not fit its store (an array whose size changed between the two, a
/// restore in another order than the one the document was read to use) is
/// an error instead of values taken from its neighbours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CpEntry {
    ty: Ty,
    deriv: bool,
    len: usize,
}

/// The top of the stack of type `ty` (`deriv`: a derivative part, kept on
/// the real stack), taken off.
fn take_top(stack: &mut Stacks, ty: Ty, deriv: bool) -> Option<Scalar> {
    if deriv {
        return stack.real.pop().map(Scalar::Real);
    }
    Some(match ty {
        Ty::Real => Scalar::Real(stack.real.pop()?),
        Ty::Int => Scalar::Int(stack.int.pop()?),
        Ty::Bool => Scalar::Bool(stack.bool.pop()?),
        Ty::Str => Scalar::Str(stack.str.pop()?),
    })
}

/// Which of a routine's four checkpoint stacks (reals, integers,
/// logicals, strings) holds values of type `ty` (`deriv`: a derivative
/// part, kept on the real stack).
pub(crate) fn stack_slot(ty: Ty, deriv: bool) -> usize {
    match (ty, deriv) {
        (_, true) | (Ty::Real, false) => 0,
        (Ty::Int, false) => 1,
        (Ty::Bool, false) => 2,
        (Ty::Str, false) => 3,
    }
}

/// The value at read position `next` of the stack of type `ty`, which
/// moves on by one (the record is dropped whole at its end).
fn take_next(stack: &Stacks, next: &mut [usize; 4], ty: Ty, deriv: bool) -> Option<Scalar> {
    let slot = stack_slot(ty, deriv);
    let value = match slot {
        0 => stack.real.get(next[0]).copied().map(Scalar::Real),
        1 => stack.int.get(next[1]).copied().map(Scalar::Int),
        2 => stack.bool.get(next[2]).copied().map(Scalar::Bool),
        _ => stack.str.get(next[3]).cloned().map(Scalar::Str),
    };
    next[slot] += 1;
    value
}

#[derive(Clone, Copy)]
struct LoopState {
    /// Trips left: up to 2^64 (from -2^63 to 2^63-1), exact in i128.
    remaining: i128,
    step: i64,
}

enum SubVal {
    Index(i64),
    Range(Option<i64>, Option<i64>, i64),
}

/// An actual argument of a call from outside the program (the harness).
#[derive(Clone, Debug)]
pub enum Actual {
    /// Storage passed by reference.
    Place(Place),
    /// An absent optional argument.
    Absent,
}

/// The machine: memory, frames, tapes, checkpoints and mode flags of one run.
pub struct Machine<'p> {
    prog: &'p Prog,
    /// All storage.
    pub mem: Memory,
    globals: Vec<Slot>,
    frames: Vec<Frame>,
    /// The current mode flags.
    pub flags: Flags,
    template: Template,
    tapes: Stacks,
    checkpoints: Vec<Stacks>,
    checkpoint_total: usize,
    /// Per routine and stack ([`stack_slot`]), what each store of
    /// `checkpoints` saved, in store order.
    cp_entries: Vec<[Vec<CpEntry>; 4]>,
    cp_entries_total: usize,
    /// Per routine, the start of each record of checkpoints to be restored
    /// in store order (routines of `-f` output only): the values' and the
    /// entries' positions.
    records: Vec<Vec<([usize; 4], [usize; 4])>>,
    records_total: usize,
    /// The record being restored in store order, if any.
    reading: Option<RecordRead>,
    /// Counters.
    pub stats: Stats,
    limits: Limits,
    /// Steps executed before the current run began.
    run_start: u64,
    /// When the current run's time limit runs out.
    deadline: Option<Instant>,
    /// Work done (steps plus elements read and written), and the amount
    /// at which the clock is read next.
    work: u64,
    next_clock: u64,
    /// Frame slots of the active calls (counted against the element
    /// limit with storage, tapes and checkpoints).
    frame_slots: usize,
    remembered: FxHashMap<(usize, u32), Shape>,
    derivative_code: bool,
    /// Trace records written so far (trace output), one per line.
    pub trace: Vec<String>,
    /// Checkpointed loops running and paused.
    loops: xaif_revolve::Runtime<LoopTag>,
    /// Their snapshots, one frame per snapshot, oldest first.
    snapshots: Vec<Stacks>,
    /// Elements held by `snapshots`.
    snapshot_total: usize,
    /// Where the next restore call reads in the top frame (real, integer,
    /// logical, string elements left).
    restore_cursor: [usize; 4],
}

/// Work between two readings of the clock: about a millisecond.
const CLOCK_EVERY: u64 = 4096;

/// Records of reversed checkpointed loop instances kept per machine
/// (`docs/limits.md`): a loop nested in a long one is reversed once per
/// outer iteration; beyond this many the counters still count them.
pub const MAX_LOOP_RECORDS: usize = 100_000;

fn err(kind: ErrorKind) -> InterpError {
    InterpError::new(kind)
}

/// A variable for messages: its name and where it is declared.
fn describe(decl: &VarDecl) -> String {
    if decl.line > 0 {
        format!("`{}` (declared at line {})", decl.name, decl.line)
    } else {
        format!("`{}`", decl.name)
    }
}

impl<'p> Machine<'p> {
    /// A fresh machine for `prog` with the default limits, `step_budget`
    /// as its step budget and no time limit.
    pub fn new(prog: &'p Prog, template: Template, step_budget: u64) -> Self {
        Self::with_limits(prog, template, Limits::with_steps(step_budget))
    }

    /// A fresh machine for `prog` under `limits`; its first run begins.
    pub fn with_limits(prog: &'p Prog, template: Template, limits: Limits) -> Self {
        Machine {
            prog,
            mem: Memory::default(),
            globals: vec![Slot::Unbound; prog.globals.len()],
            frames: Vec::new(),
            flags: Flags::PLAIN,
            template,
            tapes: Stacks::default(),
            checkpoints: vec![Stacks::default(); prog.routines.len()],
            checkpoint_total: 0,
            cp_entries: vec![Default::default(); prog.routines.len()],
            cp_entries_total: 0,
            records: vec![Vec::new(); prog.routines.len()],
            records_total: 0,
            reading: None,
            stats: Stats::default(),
            limits,
            run_start: 0,
            deadline: limits.time.map(|t| Instant::now() + t),
            work: 0,
            next_clock: CLOCK_EVERY,
            frame_slots: 0,
            remembered: FxHashMap::default(),
            derivative_code: false,
            trace: Vec::new(),
            loops: xaif_revolve::Runtime::new(),
            snapshots: Vec::new(),
            snapshot_total: 0,
            restore_cursor: [0; 4],
        }
    }

    /// The compiled program.
    pub fn prog(&self) -> &'p Prog {
        self.prog
    }

    /// Begins a run (one evaluation: the calls that compute one column or
    /// row of a Jacobian): the step budget and the time limit start anew.
    pub fn begin_run(&mut self) {
        self.end_run();
        self.deadline = self.limits.time.map(|t| Instant::now() + t);
        self.next_clock = self.work + CLOCK_EVERY;
    }

    /// Empties the tapes (done once before the first taping run).
    pub fn reset_tapes(&mut self) {
        self.tapes = Stacks::default();
    }

    /// Whether every tape and checkpoint stack is empty and no
    /// checkpointed loop is running, paused or holding snapshots.
    pub fn tapes_empty(&self) -> bool {
        self.tapes.len() == 0
            && self.checkpoints.iter().all(|c| c.len() == 0)
            && self.cp_entries_total == 0
            && self.loops.is_empty()
            && self.snapshots.is_empty()
            && self.records_total == 0
    }

    /// Sizes of the double and integer tapes.
    pub fn tape_sizes(&self) -> (usize, usize) {
        (self.tapes.real.len(), self.tapes.int.len())
    }

    /// Allocates storage outside any frame (for the harness): a scalar when
    /// `len` is `None`, else a rank-one array with bounds `1:len`. `what`
    /// names it if it exceeds the element limit.
    pub fn alloc(&mut self, ty: Ty, len: Option<usize>, what: &str) -> Result<Place> {
        let n = len.unwrap_or(1);
        self.reserve(n as u128, || what.to_string())?;
        let buf = self.mem.alloc(ty, n, false);
        Ok(match len {
            None => Place {
                buf,
                offset: 0,
                dims: Default::default(),
            },
            Some(n) => whole(buf, 0, &[(1, n as i64)]),
        })
    }

    /// Elements held now by storage, frames, tapes and checkpoints.
    pub fn elements_in_use(&self) -> usize {
        self.mem.elements()
            + self.frame_slots
            + self.tapes.len()
            + self.checkpoint_total
            + self.cp_entries_total
            + self.snapshot_total
            + self.records_total
    }

    /// Checks that `need` more elements stay within the element limit
    /// (called before every allocation, so it also keeps the peak).
    fn reserve(&mut self, need: u128, what: impl FnOnce() -> String) -> Result<()> {
        let live = self.elements_in_use();
        let total = need.saturating_add(live as u128);
        if total > self.limits.elements as u128 {
            return Err(err(ErrorKind::TooLarge {
                what: what(),
                need,
                live,
                limit: self.limits.elements,
            }));
        }
        self.stats.peak_elements = self.stats.peak_elements.max(total as u64);
        Ok(())
    }

    /// The element count of a variable's bounds, checked against the
    /// element limit.
    fn reserve_bounds(&mut self, decl: &VarDecl, bounds: &[(i64, i64)]) -> Result<usize> {
        let need = elements_of(bounds);
        self.reserve(need, || describe(decl))?;
        Ok(need as usize)
    }

    /// The storage of the global whose unified name is `name` (see
    /// [`xaif_model::base_name`]).
    pub fn global_place(&mut self, name: &str) -> Result<Place> {
        let g = *self
            .prog
            .global_names
            .get(&name.to_ascii_lowercase())
            .ok_or_else(|| err(ErrorKind::Harness(format!("no global variable `{name}`"))))?;
        match self.global_base(g, None)? {
            Some(p) => Ok(p),
            None => Err(err(ErrorKind::Unallocated(
                self.prog.globals[g as usize].name.clone(),
            ))),
        }
    }

    /// Calls routine `routine` with the given actual arguments (position 1
    /// first). An error in binding the arguments is located at the
    /// routine, as there is no calling statement.
    pub fn call(&mut self, routine: usize, actuals: Vec<Actual>) -> Result<()> {
        let args = actuals
            .into_iter()
            .enumerate()
            .map(|(i, a)| (i + 1, a))
            .collect();
        self.call_routine(routine, args).map_err(|mut e| {
            if e.line == 0 {
                let r = &self.prog.routines[routine];
                e.line = r.line;
                e.routine = Some(r.name.clone());
            }
            e
        })
    }

    #[inline]
    fn step(&mut self) -> Result<()> {
        self.stats.steps += 1;
        if self.stats.steps > self.run_start.saturating_add(self.limits.steps) {
            return Err(err(ErrorKind::StepBudget(self.limits.steps)));
        }
        self.work += 1;
        self.clock()
    }

    /// Ends a run: its steps count towards the longest run's.
    pub fn end_run(&mut self) {
        let run = self.stats.steps - self.run_start;
        self.stats.peak_run_steps = self.stats.peak_run_steps.max(run);
        self.run_start = self.stats.steps;
    }

    /// Reads the clock when enough work was done since the last reading.
    #[inline]
    fn clock(&mut self) -> Result<()> {
        if self.work < self.next_clock {
            return Ok(());
        }
        self.read_clock()
    }

    #[cold]
    fn read_clock(&mut self) -> Result<()> {
        self.next_clock = self.work + CLOCK_EVERY;
        if let Some(deadline) = self.deadline {
            if Instant::now() >= deadline {
                let secs = self.limits.time.map(|t| t.as_secs_f64()).unwrap_or(0.0);
                return Err(err(ErrorKind::TimeLimit(secs)));
            }
        }
        Ok(())
    }

    /// Counts `n` elements read or written as work for the time limit.
    fn charge(&mut self, n: usize) {
        self.work += n as u64 / 16;
    }

    fn locate(&self, mut e: InterpError, line: u32) -> InterpError {
        if e.line == 0 {
            e.line = line;
        }
        if e.routine.is_none() {
            e.routine = self
                .frames
                .last()
                .map(|f| self.prog.routines[f.routine].name.clone());
        }
        e
    }

    fn count(&mut self, flops: u64) {
        if self.derivative_code {
            self.stats.flops_derivative += flops;
        } else {
            self.stats.flops_original += flops;
        }
    }

    // ------------------------------------------------------------- calls

    fn call_routine(&mut self, r: usize, actuals: Vec<(usize, Actual)>) -> Result<()> {
        self.stats.calls += 1;
        let prog = self.prog;
        let routine = &prog.routines[r];
        if matches!(routine.body, Body::Empty) {
            return Err(err(ErrorKind::NoBody(routine.name.clone())));
        }
        // The machine recurses natively per call: bound the depth.
        if self.frames.len() >= self.limits.call_depth {
            return Err(err(ErrorKind::CallDepth(self.limits.call_depth)));
        }
        self.reserve(routine.slots.len() as u128, || {
            format!("a call of `{}` (its frame)", routine.name)
        })?;
        let mut frame = Frame {
            routine: r,
            slots: vec![Slot::Unbound; routine.slots.len()],
            written: vec![false; routine.slots.len()],
            owned: Vec::new(),
            copy_back: Vec::new(),
        };
        for (i, formal) in routine.formals.iter().enumerate() {
            if let Some(slot) = formal {
                frame.slots[*slot as usize] = Slot::Absent;
            }
            let _ = i;
        }
        for (pos, actual) in actuals {
            let Some(Some(slot)) = routine.formals.get(pos - 1) else {
                return Err(err(ErrorKind::Unsupported(format!(
                    "a call of `{}` with an argument at position {pos}, which has no formal",
                    routine.name
                ))));
            };
            let decl = &routine.slots[*slot as usize];
            frame.written[*slot as usize] = true;
            frame.slots[*slot as usize] = match actual {
                Actual::Absent => Slot::Absent,
                Actual::Place(p) => self.bind(&mut frame, decl, p)?,
            };
        }
        let slots = frame.slots.len();
        self.frame_slots += slots;
        self.frames.push(frame);
        self.stats.peak_call_depth = self.stats.peak_call_depth.max(self.frames.len() as u64);
        let result = self.run_body(r);
        let frame = self.frames.pop().expect("pushed above");
        self.frame_slots -= slots;
        self.finish_frame(frame);
        result
    }

    #[inline(never)]
    fn bind(&mut self, frame: &mut Frame, decl: &VarDecl, a: Place) -> Result<Slot> {
        let buf_ty = self.mem.buf(a.buf).cells.ty();
        let a = if buf_ty != decl.ty && decl.unsupported.is_none() {
            // Without an interface the compiled code passes the storage
            // anyway; the values seen through the dummy are the actual's
            // converted, and derivative parts are untouched. Copy in and
            // out through a temporary of the dummy's type.
            let len = a.len().max(1);
            self.reserve(len as u128, || describe(decl))?;
            let tmp = self.mem.alloc(decl.ty, len, decl.single);
            let tmp_place = if a.is_scalar() {
                Place {
                    buf: tmp,
                    offset: 0,
                    dims: Default::default(),
                }
            } else {
                whole(tmp, 0, &[(1, len as i64)])
            };
            self.copy(&a, &tmp_place);
            frame.owned.push(tmp);
            frame.copy_back.push((tmp_place.clone(), a));
            tmp_place
        } else {
            a
        };
        if decl.rank == 0 {
            if a.is_scalar() {
                return Ok(Slot::Bound {
                    place: a,
                    growable: false,
                });
            }
            // An array passed to a scalar dummy (no interface): the dummy
            // is the first element, as with the compiled code.
            if !a.is_empty() {
                let offset = a.offset_of(0);
                return Ok(Slot::Bound {
                    place: Place {
                        buf: a.buf,
                        offset,
                        dims: Default::default(),
                    },
                    growable: false,
                });
            }
            return Err(err(ErrorKind::Shape(format!(
                "an empty array passed to scalar dummy `{}`",
                decl.name
            ))));
        }
        let buf_len = self.mem.buf(a.buf).cells.len();
        match &decl.bounds {
            Some(bounds) => {
                let need = elements_of(bounds);
                if a.is_scalar() || a.is_contiguous() {
                    let start = if a.is_scalar() {
                        a.offset
                    } else {
                        a.offset_of(0)
                    };
                    if start as u128 + need > buf_len as u128 {
                        return Err(err(ErrorKind::Shape(format!(
                            "dummy `{}` needs {need} elements but the actual argument provides {}",
                            decl.name,
                            buf_len.saturating_sub(start)
                        ))));
                    }
                    Ok(Slot::Bound {
                        place: whole(a.buf, start, bounds),
                        growable: false,
                    })
                } else {
                    // Copy-in/copy-out through a contiguous temporary, as the
                    // compiled code does for a section passed to an
                    // explicit-shape dummy.
                    if (a.len() as u128) < need {
                        return Err(err(ErrorKind::Shape(format!(
                            "dummy `{}` needs {need} elements but the section has {}",
                            decl.name,
                            a.len()
                        ))));
                    }
                    self.reserve(a.len() as u128, || describe(decl))?;
                    let tmp = self.mem.alloc(decl.ty, a.len(), false);
                    let tmp_place = whole(tmp, 0, &[(1, a.len() as i64)]);
                    self.copy(&a, &tmp_place);
                    frame.owned.push(tmp);
                    frame.copy_back.push((tmp_place, a));
                    Ok(Slot::Bound {
                        place: whole(tmp, 0, bounds),
                        growable: false,
                    })
                }
            }
            None => {
                if a.is_scalar() {
                    // Sequence association: an element passed to an array
                    // dummy of unknown size sees the rest of the storage.
                    if decl.rank != 1 {
                        return Err(err(ErrorKind::Shape(format!(
                            "an array element passed to rank-{} dummy `{}` without declared bounds",
                            decl.rank, decl.name
                        ))));
                    }
                    return Ok(Slot::Bound {
                        place: whole(a.buf, a.offset, &[(1, (buf_len - a.offset) as i64)]),
                        growable: false,
                    });
                }
                if a.dims.len() == decl.rank {
                    let mut place = a;
                    for d in place.dims.iter_mut() {
                        d.lo = 1;
                    }
                    return Ok(Slot::Bound {
                        place,
                        growable: false,
                    });
                }
                if decl.rank == 1 && a.is_contiguous() {
                    let start = a.offset_of(0);
                    return Ok(Slot::Bound {
                        place: whole(a.buf, start, &[(1, a.len() as i64)]),
                        growable: false,
                    });
                }
                Err(err(ErrorKind::Shape(format!(
                    "a rank-{} array passed to rank-{} dummy `{}`",
                    a.dims.len(),
                    decl.rank,
                    decl.name
                ))))
            }
        }
    }

    fn copy(&mut self, from: &Place, to: &Place) {
        let src: Vec<usize> = from.offsets().collect();
        for (s, t) in src.into_iter().zip(to.offsets()) {
            let v = self.mem.get(from.buf, s);
            let d = self.mem.get_d(from.buf, s);
            let _ = self.mem.set(to.buf, t, &v);
            self.mem.set_d(to.buf, t, d);
        }
    }

    #[inline(never)]
    fn finish_frame(&mut self, frame: Frame) {
        for (tmp, actual) in &frame.copy_back {
            self.copy(tmp, actual);
        }
        let routine = &self.prog.routines[frame.routine];
        for (i, slot) in frame.slots.iter().enumerate() {
            if let Slot::Bound {
                place,
                growable: true,
            } = slot
            {
                if routine.slots[i].bounds.is_none() {
                    self.remembered
                        .insert((frame.routine, i as u32), place.shape());
                }
            }
        }
        for b in frame.owned {
            self.mem.release(b);
        }
    }

    fn run_body(&mut self, r: usize) -> Result<()> {
        let routine = &self.prog.routines[r];
        match &routine.body {
            Body::Empty => Err(err(ErrorKind::NoBody(routine.name.clone()))),
            Body::Plain(g) => self.run_cfg(g),
            Body::Template(_) => match self.template {
                Template::Trace => self.run_placeholder(r, 2),
                Template::Split => {
                    let f = self.flags;
                    if f.plain {
                        self.run_placeholder(r, 1)?;
                    }
                    if f.tape {
                        self.run_placeholder(r, 2)?;
                    }
                    if f.adjoint {
                        self.run_placeholder(r, 3)?;
                    }
                    Ok(())
                }
                Template::Joint => {
                    let records = routine.restore_in_store_order;
                    if self.flags.arg_store {
                        if records {
                            self.open_record(r)?;
                        }
                        self.run_placeholder(r, 4)?;
                    }
                    if self.flags.arg_restore {
                        if records {
                            self.begin_record_read(r)?;
                        }
                        let restored = self.run_placeholder(r, 6);
                        self.end_record_read();
                        restored?;
                    }
                    if self.flags.plain {
                        let saved = self.flags;
                        self.flags.arg_store = false;
                        self.run_placeholder(r, 1)?;
                        self.flags = saved;
                    }
                    if self.flags.tape {
                        self.flags = Flags {
                            arg_store: true,
                            plain: true,
                            ..Flags::NONE
                        };
                        self.run_placeholder(r, 2)?;
                        self.flags = Flags {
                            adjoint: true,
                            ..Flags::NONE
                        };
                    }
                    if self.flags.adjoint {
                        let restore_tape = Flags {
                            arg_restore: true,
                            tape: true,
                            ..Flags::NONE
                        };
                        self.flags = restore_tape;
                        self.run_placeholder(r, 3)?;
                        self.flags = restore_tape;
                    }
                    Ok(())
                }
            },
        }
    }

    fn run_placeholder(&mut self, r: usize, ph: u32) -> Result<()> {
        match self.prog.routines[r].placeholder(ph) {
            Some(g) => self.run_cfg(g),
            None => Ok(()),
        }
    }

    // ------------------------------------------------------ control flow

    fn run_cfg(&mut self, g: &'p CCfg) -> Result<()> {
        let mut loops: Vec<Option<LoopState>> = Vec::new();
        let mut v = g.entry;
        let mut from_back = false;
        loop {
            let vertex = &g.vertices[v];
            self.step().map_err(|e| self.locate(e, vertex.line))?;
            let next = match &vertex.kind {
                VKind::Exit => return Ok(()),
                VKind::Entry | VKind::Pass => self.single(vertex)?,
                VKind::EndLoop => {
                    let next = self.single(vertex)?;
                    v = next;
                    from_back = true;
                    continue;
                }
                VKind::Block(stmts) => {
                    for s in stmts {
                        self.exec(s)?;
                    }
                    self.single(vertex)?
                }
                VKind::Branch(c) => {
                    let value = self.eval(c).map_err(|e| self.locate(e, vertex.line))?;
                    let selector = match value.scalar() {
                        Some(Scalar::Bool(b)) => *b as i64,
                        Some(Scalar::Int(i)) => *i,
                        _ => {
                            return Err(self.locate(
                                err(ErrorKind::Type(
                                    "a branch condition that is neither logical nor integer".into(),
                                )),
                                vertex.line,
                            ))
                        }
                    };
                    self.pick(vertex, selector)?
                }
                VKind::Pre(c) => {
                    let go = self.truth(c, vertex.line)?;
                    self.loop_edge(vertex, go)?
                }
                VKind::Post(c) => {
                    let go = if from_back {
                        self.truth(c, vertex.line)?
                    } else {
                        true
                    };
                    self.loop_edge(vertex, go)?
                }
                VKind::For {
                    init,
                    cond,
                    update,
                    do_loop,
                } => {
                    if loops.len() < g.vertices.len() {
                        loops.resize(g.vertices.len(), None);
                    }
                    let go = self
                        .for_loop(
                            &mut loops[v],
                            from_back,
                            init.as_deref(),
                            cond,
                            update.as_deref(),
                            do_loop.as_deref(),
                        )
                        .map_err(|e| self.locate(e, vertex.line))?;
                    self.loop_edge(vertex, go)?
                }
                VKind::Refuse(kind) => return Err(self.locate(err(kind.clone()), vertex.line)),
            };
            v = next;
            from_back = false;
        }
    }

    #[inline(never)]
    fn for_loop(
        &mut self,
        state: &mut Option<LoopState>,
        from_back: bool,
        init: Option<&'p CStmt>,
        cond: &'p CExpr,
        update: Option<&'p CStmt>,
        do_loop: Option<&'p DoLoop>,
    ) -> Result<bool> {
        if !from_back {
            *state = None;
            if let Some(i) = init {
                self.exec(i)?;
            }
            if let Some(d) = do_loop {
                let lo = self.eval_ref(&d.var)?;
                let hi = self.eval(&d.hi)?;
                let st = self.eval(&d.step)?;
                if let (Some(Scalar::Int(lo)), Some(Scalar::Int(hi)), Some(Scalar::Int(st))) =
                    (lo.scalar(), hi.scalar(), st.scalar())
                {
                    let step = if d.negate {
                        st.checked_neg().ok_or_else(|| {
                            err(ErrorKind::IntegerOverflow(format!(
                                "the DO loop step -({st})"
                            )))
                        })?
                    } else {
                        *st
                    };
                    if step == 0 {
                        return Err(err(ErrorKind::ZeroStep));
                    }
                    // Exact in i128: |hi - lo + step| < 2^65.
                    let (lo, hi, st) = (*lo as i128, *hi as i128, step as i128);
                    let trip = ((hi - lo + st) / st).max(0);
                    *state = Some(LoopState {
                        remaining: trip,
                        step,
                    });
                }
            }
        } else if let (Some(s), Some(d)) = (state.as_ref(), do_loop) {
            let step = s.step;
            let place = self.place(&d.var, None)?;
            let cur = self.mem.get(place.buf, place.offset).as_int().unwrap_or(0);
            // The DO variable passes the last value by one step; beyond the
            // integer range that is an overflow, not a wrapped value.
            let next = cur.checked_add(step).ok_or_else(|| {
                err(ErrorKind::IntegerOverflow(format!(
                    "the DO variable `{}` = {cur} incremented by {step}",
                    d.var.name
                )))
            })?;
            self.mem.set(place.buf, place.offset, &Scalar::Int(next));
        } else if let Some(u) = update {
            self.exec(u)?;
        }
        match state {
            Some(s) => {
                if s.remaining > 0 {
                    s.remaining -= 1;
                    Ok(true)
                } else {
                    Ok(false)
                }
            }
            None => {
                let v = self.eval(cond)?;
                v.scalar().and_then(Scalar::as_bool).ok_or_else(|| {
                    err(ErrorKind::Type(
                        "a loop condition that is not logical".into(),
                    ))
                })
            }
        }
    }

    #[inline(never)]
    fn truth(&mut self, c: &'p CExpr, line: u32) -> Result<bool> {
        let v = self.eval(c).map_err(|e| self.locate(e, line))?;
        v.scalar().and_then(Scalar::as_bool).ok_or_else(|| {
            self.locate(
                err(ErrorKind::Type("a condition that is not logical".into())),
                line,
            )
        })
    }

    fn single(&self, v: &CVertex) -> Result<usize> {
        v.succ.first().map(|(_, t)| *t).ok_or_else(|| {
            self.locate(
                err(ErrorKind::Unsupported(
                    "a control flow vertex without successor".into(),
                )),
                v.line,
            )
        })
    }

    fn pick(&self, v: &CVertex, selector: i64) -> Result<usize> {
        // Several edges and no case value on any: nothing says which to
        // take (the gate lets such a branch pass, docs/cfg-rules.md).
        if v.succ.len() > 1 && v.succ.iter().all(|(c, _)| c.is_none()) {
            return Err(self.locate(
                err(ErrorKind::Unsupported(
                    "a branch whose edges carry no case values".into(),
                )),
                v.line,
            ));
        }
        if let Some((_, t)) = v.succ.iter().find(|(c, _)| *c == Some(selector)) {
            return Ok(*t);
        }
        if let Some((_, t)) = v.succ.iter().find(|(c, _)| c.is_none()) {
            return Ok(*t);
        }
        Err(self.locate(err(ErrorKind::NoEdge(selector)), v.line))
    }

    fn loop_edge(&self, v: &CVertex, go: bool) -> Result<usize> {
        // Without a body edge nothing says which edge is the exit: the
        // gate lets such a loop pass (docs/cfg-rules.md), the oracle
        // refuses to guess.
        if !v.succ.iter().any(|(c, _)| *c == Some(1)) {
            return Err(self.locate(
                err(ErrorKind::Unsupported(
                    "a loop whose edges do not mark its body (no edge with condition value 1)"
                        .into(),
                )),
                v.line,
            ));
        }
        let found = if go {
            v.succ.iter().find(|(c, _)| *c == Some(1))
        } else {
            v.succ.iter().find(|(c, _)| *c != Some(1))
        };
        found
            .map(|(_, t)| *t)
            .ok_or_else(|| self.locate(err(ErrorKind::NoEdge(go as i64)), v.line))
    }

    // -------------------------------------------------------- statements

    fn exec(&mut self, s: &'p CStmt) -> Result<()> {
        self.step().map_err(|e| self.locate(e, s.line))?;
        self.derivative_code = s.derivative;
        let result = match &s.kind {
            SKind::Nop => Ok(()),
            SKind::Refuse(kind) => Err(err(kind.clone())),
            SKind::Assign { lhs, rhs } => self.assign(lhs, rhs),
            SKind::Call { target, args } => self.exec_call(target, args),
            SKind::Inline { op, args } => self.inline(*op, args),
            SKind::Prop(entries) => entries.iter().try_for_each(|e| self.prop(e)),
        };
        result.map_err(|e| self.locate(e, s.line))
    }

    #[inline(never)]
    fn assign(&mut self, lhs: &'p CRef, rhs: &'p CExpr) -> Result<()> {
        let value = self.eval(rhs)?;
        let place = self.place(lhs, Some(&value.shape()))?;
        if let (true, Value::Array { shape, .. }) = (place.is_scalar(), &value) {
            // Fortran assigns no array to a scalar, not even one of one
            // element (`i = maxloc(v)`): compiled, such a program does not
            // build, so its values are not what it computes.
            return Err(err(ErrorKind::Shape(format!(
                "assigning an array of rank {} to the scalar `{}`",
                shape.len(),
                lhs.name
            ))));
        }
        if !lhs.deriv {
            self.note_write(lhs);
        }
        self.write(&place, &value, lhs.deriv, &lhs.name)
    }

    fn exec_call(
        &mut self,
        target: &'p std::result::Result<usize, String>,
        args: &'p [(usize, CArg)],
    ) -> Result<()> {
        let callee = match target {
            Ok(c) => *c,
            Err(name) => return Err(err(ErrorKind::NoBody(name.clone()))),
        };
        let routine = &self.prog.routines[callee];
        let mut actuals = Vec::with_capacity(args.len());
        let mut temps = Vec::new();
        for (pos, a) in args {
            match a {
                CArg::Ref(r) => {
                    // An absent optional argument passed on whole: absent
                    // in the callee too (Fortran allows it where the
                    // callee's dummy is optional).
                    if r.subs.is_empty() && matches!(self.base_slot(r)?, Some(Slot::Absent)) {
                        actuals.push((*pos, Actual::Absent));
                        continue;
                    }
                    let place = self.place(r, None)?;
                    // The callee may define it.
                    self.note_write(r);
                    actuals.push((*pos, Actual::Place(place)))
                }
                CArg::Const(c) => {
                    self.reserve(1, || "a constant argument".into())?;
                    let ty = routine
                        .formals
                        .get(pos - 1)
                        .copied()
                        .flatten()
                        .map(|s| routine.slots[s as usize].ty)
                        .unwrap_or(c.ty());
                    let buf = self.mem.alloc(ty, 1, false);
                    self.mem.set(buf, 0, c).ok_or_else(|| {
                        err(ErrorKind::Type(format!(
                            "constant {c:?} passed as {}",
                            ty.name()
                        )))
                    })?;
                    temps.push(buf);
                    actuals.push((
                        *pos,
                        Actual::Place(Place {
                            buf,
                            offset: 0,
                            dims: Default::default(),
                        }),
                    ));
                }
            }
        }
        let result = self.call_routine(callee, actuals);
        for b in temps {
            self.mem.release(b);
        }
        result
    }

    // ------------------------------------------------------- expressions

    /// Evaluates an expression: its nodes in order, each operation on the
    /// values of earlier nodes (moved at their last use).
    fn eval(&mut self, e: &CExpr) -> Result<Value> {
        if let [node] = e.nodes.as_slice() {
            return self.eval_node(node, &mut []);
        }
        // Most expressions have a handful of nodes: keep them on the stack.
        let mut values: SmallVec<[Value; 4]> = SmallVec::with_capacity(e.nodes.len());
        for node in &e.nodes {
            let v = self.eval_node(node, &mut values)?;
            values.push(v);
        }
        Ok(values.pop().expect("an expression has a node"))
    }

    /// The value of `node`, whose operands are in `values`.
    #[inline]
    fn eval_node(&mut self, node: &ENode, values: &mut [Value]) -> Result<Value> {
        match node {
            ENode::Const(c) => Ok(Value::Scalar(c.clone())),
            ENode::Ref(r) => self.eval_ref(r),
            ENode::Op(op, operands) => {
                let v = match operands.as_slice() {
                    [a] => intrinsics::apply(*op, &[take(values, a)]),
                    [a, b] => intrinsics::apply(*op, &[take(values, a), take(values, b)]),
                    _ => intrinsics::apply(*op, &take_operands(values, operands)),
                }
                .map_err(err)?;
                let per = intrinsics::flops(*op);
                if per > 0 && !v.is_empty() && matches!(v.elem(0), Scalar::Real(_)) {
                    self.count(per * v.len() as u64);
                }
                Ok(v)
            }
            ENode::Traced(op, operands) => {
                let args = take_operands(values, operands);
                // `<Tan sd=".."/>`: which branch of tan the argument is on.
                let record = match (op, args.first()) {
                    (crate::compile::Op::Tan, Some(Value::Scalar(Scalar::Real(x)))) => {
                        let half = std::f64::consts::FRAC_PI_2;
                        let sd = ((x + half) / std::f64::consts::PI).trunc() as i64;
                        Some(format!("<Tan sd=\"{sd}\"/>"))
                    }
                    _ => None,
                };
                let v = intrinsics::apply(*op, &args).map_err(err)?;
                self.trace.extend(record);
                Ok(v)
            }
            ENode::Inquiry(q, r, operands) => {
                let rest = take_operands(values, operands);
                self.inquiry(*q, r, &rest)
            }
            ENode::Refuse(kind) => Err(err(kind.clone())),
        }
    }

    /// The value (or derivative part) of a variable reference.
    fn eval_ref(&mut self, r: &CRef) -> Result<Value> {
        if !r.deriv {
            self.check_read(r)?;
        }
        let place = self.place(r, None)?;
        Ok(self.read(&place, r.deriv))
    }

    fn inquiry(&mut self, q: Inquiry, r: &CRef, rest: &[Value]) -> Result<Value> {
        if q == Inquiry::Present {
            return Ok(Value::bool(!matches!(
                self.base_slot(r)?,
                Some(Slot::Absent)
            )));
        }
        if q == Inquiry::Allocated {
            let base = self.base(r, None)?;
            return Ok(Value::bool(base.is_some()));
        }
        let place = self.place(r, None)?;
        if q == Inquiry::Len {
            let v = self.read(&place, false);
            return match v.elem(0) {
                Scalar::Str(s) => Ok(Value::int(s.chars().count() as i64)),
                _ => Err(err(ErrorKind::Type("len of a non-string".into()))),
            };
        }
        let dim = match rest.first() {
            Some(d) => Some(d.scalar().and_then(Scalar::as_int).ok_or_else(|| {
                err(ErrorKind::Type(
                    "a DIM argument that is not an integer".into(),
                ))
            })?),
            None => None,
        };
        let per_dim = |d: &Dim| -> i64 {
            match q {
                Inquiry::Size => d.n as i64,
                Inquiry::Lbound => d.lo,
                _ => d.hi(),
            }
        };
        match dim {
            Some(k) => {
                let d = usize::try_from(k)
                    .ok()
                    .and_then(|k| k.checked_sub(1))
                    .and_then(|k| place.dims.get(k))
                    .ok_or_else(|| {
                        err(ErrorKind::Shape(format!(
                            "DIM={k} of a rank-{} array",
                            place.dims.len()
                        )))
                    })?;
                Ok(Value::int(per_dim(d)))
            }
            None if q == Inquiry::Size => Ok(Value::int(place.len() as i64)),
            None => Ok(Value::Array {
                shape: Shape::from_slice(&[place.dims.len()]),
                data: place.dims.iter().map(|d| Scalar::Int(per_dim(d))).collect(),
            }),
        }
    }

    fn read(&mut self, place: &Place, deriv: bool) -> Value {
        if !place.is_scalar() {
            self.charge(place.len());
        }
        let get = |off: usize| {
            if deriv {
                Scalar::Real(self.mem.get_d(place.buf, off))
            } else {
                self.mem.get(place.buf, off)
            }
        };
        if place.is_scalar() {
            Value::Scalar(get(place.offset))
        } else {
            Value::Array {
                shape: place.shape(),
                data: place.offsets().map(get).collect(),
            }
        }
    }

    fn write(&mut self, place: &Place, v: &Value, deriv: bool, name: &str) -> Result<()> {
        let n = place.len();
        let m = v.len();
        self.charge(n);
        if m != 1 && (m != n || place.is_scalar()) {
            return Err(err(ErrorKind::Shape(format!(
                "assigning {m} elements to `{name}` which has {n}"
            ))));
        }
        let offsets: Vec<usize> = if place.is_scalar() {
            vec![place.offset]
        } else {
            place.offsets().collect()
        };
        for (i, off) in offsets.into_iter().enumerate() {
            let s = v.elem(if m == 1 { 0 } else { i });
            if deriv {
                let x = s.as_real().ok_or_else(|| {
                    err(ErrorKind::Type(format!("a {} derivative", s.ty().name())))
                })?;
                self.mem.set_d(place.buf, off, x);
            } else {
                let ty = self.mem.buf(place.buf).cells.ty();
                self.mem.set(place.buf, off, s).ok_or_else(|| match s {
                    Scalar::Real(x) if ty == Ty::Int => err(ErrorKind::IntegerOverflow(format!(
                        "{x} assigned to integer `{name}` is out of the integer range"
                    ))),
                    _ => err(ErrorKind::Type(format!(
                        "cannot assign a {} to `{name}` of type {}",
                        s.ty().name(),
                        ty.name()
                    ))),
                })?;
            }
        }
        Ok(())
    }

    // --------------------------------------------------------- places

    fn frame_index(&self, loc: Loc) -> Result<Option<(usize, u32)>> {
        match loc {
            Loc::Local(slot) => Ok(Some((self.frames.len() - 1, slot))),
            Loc::Global(_) => Ok(None),
            Loc::Host { routine, slot } => self
                .frames
                .iter()
                .rposition(|f| f.routine == routine as usize)
                .map(|i| Some((i, slot)))
                .ok_or_else(|| {
                    err(ErrorKind::Unsupported(
                        "a host variable without an active host".into(),
                    ))
                }),
        }
    }

    fn base_slot(&self, r: &CRef) -> Result<Option<&Slot>> {
        if let Loc::Global(g) = r.loc {
            return Ok(self.globals.get(g as usize));
        }
        let (f, slot) = self.frame_index(r.loc)?.expect("not a global");
        Ok(self.frames[f].slots.get(slot as usize))
    }

    /// Records that a translated statement gives `r` a value.
    fn note_write(&mut self, r: &CRef) {
        if let Loc::Local(slot) = r.loc {
            if let Some(f) = self.frames.last_mut() {
                if let Some(w) = f.written.get_mut(slot as usize) {
                    *w = true;
                }
            }
        }
    }

    /// Refuses to read a local that only a dropped store could have set.
    fn check_read(&self, r: &CRef) -> Result<()> {
        let Loc::Local(slot) = r.loc else {
            return Ok(());
        };
        let Some(f) = self.frames.last() else {
            return Ok(());
        };
        let Some((marker, line)) = &self.prog.routines[f.routine].dropped_store else {
            return Ok(());
        };
        if f.written.get(slot as usize) == Some(&false) {
            return Err(err(ErrorKind::UntranslatedStatement(format!(
                "`{}` is read but no translated statement assigns it; its value comes from a store the XAIF does not carry (the marker {marker} at line {line})",
                r.name
            ))));
        }
        Ok(())
    }

    fn decl_of(&self, loc: Loc) -> Result<&'p VarDecl> {
        let prog = self.prog;
        match loc {
            Loc::Global(g) => prog.globals.get(g as usize).ok_or_else(|| {
                err(ErrorKind::Unsupported(
                    "a reference to an unknown symbol".into(),
                ))
            }),
            Loc::Local(slot) => {
                let f = self.frames.last().expect("inside a routine");
                Ok(&prog.routines[f.routine].slots[slot as usize])
            }
            Loc::Host { routine, slot } => {
                Ok(&prog.routines[routine as usize].slots[slot as usize])
            }
        }
    }

    fn slot_mut(&mut self, loc: Loc) -> Result<&mut Slot> {
        match loc {
            Loc::Global(g) => Ok(&mut self.globals[g as usize]),
            _ => {
                let (f, slot) = self.frame_index(loc)?.expect("not a global");
                Ok(&mut self.frames[f].slots[slot as usize])
            }
        }
    }

    fn global_base(&mut self, g: u32, hint: Option<&Shape>) -> Result<Option<Place>> {
        let r = CRef {
            loc: Loc::Global(g),
            subs: Vec::new(),
            deriv: false,
            name: Rc::from(self.prog.globals[g as usize].name.as_str()),
        };
        self.base(&r, hint)
    }

    /// The whole-variable place of `r`, allocating a local or global on
    /// first use; `None` when it has no shape yet. `alloc_shape` gives the
    /// shape to allocate an unshaped array with (realloc on assignment).
    fn base(&mut self, r: &CRef, alloc_shape: Option<&Shape>) -> Result<Option<Place>> {
        let decl = self.decl_of(r.loc)?;
        if let Some(u) = decl.unsupported {
            return Err(err(ErrorKind::Unsupported(format!(
                "variable `{}` of type {u}",
                decl.name
            ))));
        }
        // The common case first: the variable has its storage.
        if let Some(Slot::Bound { place, .. }) = self.base_slot(r)? {
            return Ok(Some(place.clone()));
        }
        let remembered = match r.loc {
            Loc::Local(slot) => {
                let f = self.frames.last().expect("inside a routine");
                self.remembered.get(&(f.routine, slot)).cloned()
            }
            _ => None,
        };
        let owner_frame = match r.loc {
            Loc::Global(_) => None,
            loc => self.frame_index(loc)?.map(|(f, _)| f),
        };
        let slot = self.slot_mut(r.loc)?.clone();
        match slot {
            Slot::Bound { place, .. } => Ok(Some(place)),
            Slot::Absent => Err(err(ErrorKind::Unsupported(format!(
                "use of optional argument `{}`, which is not present",
                decl.name
            )))),
            Slot::Unbound => {
                let from_shape = |shape: &Shape| -> Vec<(i64, i64)> {
                    shape
                        .iter()
                        .map(|&n| (1, i64::try_from(n).unwrap_or(i64::MAX)))
                        .collect()
                };
                let (bounds, growable) = match (&decl.bounds, remembered, alloc_shape) {
                    (Some(b), _, _) => (b.clone(), false),
                    (None, Some(shape), _) => (from_shape(&shape), true),
                    (None, None, Some(shape)) if shape.len() == decl.rank => {
                        (from_shape(shape), true)
                    }
                    _ => return Ok(None),
                };
                let len = self.reserve_bounds(decl, &bounds)?;
                let buf = self.mem.alloc(decl.ty, len, decl.single);
                let place = if decl.rank == 0 {
                    Place {
                        buf,
                        offset: 0,
                        dims: Default::default(),
                    }
                } else {
                    whole(buf, 0, &bounds)
                };
                if let Some(f) = owner_frame {
                    self.frames[f].owned.push(buf);
                }
                *self.slot_mut(r.loc)? = Slot::Bound {
                    place: place.clone(),
                    growable,
                };
                Ok(Some(place))
            }
        }
    }

    fn subscripts(&mut self, r: &CRef) -> Result<Vec<SubVal>> {
        let mut out = Vec::with_capacity(r.subs.len());
        let int = |m: &mut Self, e: &CExpr| -> Result<i64> {
            m.eval(e)?.scalar().and_then(Scalar::as_int).ok_or_else(|| {
                err(ErrorKind::Type(format!(
                    "a subscript of `{}` that is not an integer",
                    r.name
                )))
            })
        };
        for s in &r.subs {
            out.push(match s {
                CSub::Index(e) => SubVal::Index(int(self, e)?),
                CSub::Range(lo, hi, st) => {
                    let lo = match lo {
                        Some(e) => Some(int(self, e)?),
                        None => None,
                    };
                    let hi = match hi {
                        Some(e) => Some(int(self, e)?),
                        None => None,
                    };
                    let st = match st {
                        Some(e) => int(self, e)?,
                        None => 1,
                    };
                    SubVal::Range(lo, hi, st)
                }
            });
        }
        Ok(out)
    }

    /// The place `r` denotes. With `write_shape`, an unshaped rank-one array
    /// is given (or grown to) the shape the write needs.
    fn place(&mut self, r: &CRef, write_shape: Option<&Shape>) -> Result<Place> {
        let subs = self.subscripts(r)?;
        let needed_hi = |subs: &[SubVal]| -> Option<i64> {
            match subs {
                [SubVal::Index(i)] => Some(*i),
                [SubVal::Range(lo, Some(hi), st)] => {
                    Some(if *st > 0 { *hi } else { lo.unwrap_or(*hi) })
                }
                _ => None,
            }
        };
        let alloc_shape: Option<Shape> = match write_shape {
            Some(s) if subs.is_empty() => Some(s.clone()),
            Some(_) => needed_hi(&subs)
                .map(|hi| Shape::from_slice(&[usize::try_from(hi.max(0)).unwrap_or(usize::MAX)])),
            None => None,
        };
        let base = match self.base(r, alloc_shape.as_ref())? {
            Some(p) => p,
            None => return Err(err(ErrorKind::Unallocated(r.name.to_string()))),
        };
        // Grow a lazily shaped rank-one array written beyond its end.
        let slot = match write_shape {
            Some(_) => self.slot_mut(r.loc)?.clone(),
            None => Slot::Unbound,
        };
        let base = match (write_shape, needed_hi(&subs), slot) {
            (
                Some(_),
                Some(hi),
                Slot::Bound {
                    place,
                    growable: true,
                },
            ) if place.dims.len() == 1 && hi > place.dims[0].hi() => {
                let need = crate::limits::extent(place.dims[0].lo, hi);
                let have = self.mem.buf(place.buf).cells.len();
                let grown_len = (place.offset as u128).saturating_add(need);
                let decl = self.decl_of(r.loc)?;
                self.reserve(grown_len.saturating_sub(have as u128), || describe(decl))?;
                let n = need as usize;
                self.mem.grow(place.buf, place.offset + n);
                let mut grown = place.clone();
                grown.dims[0].n = n;
                *self.slot_mut(r.loc)? = Slot::Bound {
                    place: grown.clone(),
                    growable: true,
                };
                grown
            }
            _ => base,
        };
        if subs.is_empty() {
            return Ok(base);
        }
        if subs.len() != base.dims.len() {
            return Err(err(ErrorKind::Shape(format!(
                "`{}` has rank {} but {} subscripts",
                r.name,
                base.dims.len(),
                subs.len()
            ))));
        }
        let mut offset = base.offset as isize;
        let mut dims = smallvec::SmallVec::new();
        for (k, (s, d)) in subs.iter().zip(&base.dims).enumerate() {
            let check = |i: i64| -> Result<()> {
                if i < d.lo || i > d.hi() {
                    Err(err(ErrorKind::OutOfBounds {
                        index: i,
                        lo: d.lo,
                        hi: d.hi(),
                        dim: k + 1,
                    }))
                } else {
                    Ok(())
                }
            };
            match *s {
                SubVal::Index(i) => {
                    check(i)?;
                    offset += (i - d.lo) as isize * d.stride;
                }
                SubVal::Range(lo, hi, st) => {
                    if st == 0 {
                        return Err(err(ErrorKind::ZeroStep));
                    }
                    let lo = lo.unwrap_or(d.lo);
                    let hi = hi.unwrap_or(d.hi());
                    // Exact in i128 whatever the bounds.
                    let (lo_w, hi_w, st_w) = (lo as i128, hi as i128, st as i128);
                    let count = ((hi_w - lo_w + st_w) / st_w).max(0);
                    if count > 0 {
                        check(lo)?;
                        // Both ends inside the bounds: every element is.
                        let last = lo_w + (count - 1) * st_w;
                        check(i64::try_from(last).unwrap_or(i64::MAX))?;
                        offset += (lo - d.lo) as isize * d.stride;
                    }
                    // With both ends in bounds, count and stride fit.
                    dims.push(Dim {
                        lo: 1,
                        n: count as usize,
                        stride: if count > 1 {
                            d.stride * st as isize
                        } else {
                            d.stride
                        },
                    });
                }
            }
        }
        Ok(Place {
            buf: base.buf,
            offset: offset.max(0) as usize,
            dims,
        })
    }

    // ------------------------------------------------------------- derivatives

    fn derivs(&self, p: &Place) -> Vec<f64> {
        if p.is_scalar() {
            vec![self.mem.get_d(p.buf, p.offset)]
        } else {
            p.offsets().map(|o| self.mem.get_d(p.buf, o)).collect()
        }
    }

    fn offsets(p: &Place) -> Vec<usize> {
        if p.is_scalar() {
            vec![p.offset]
        } else {
            p.offsets().collect()
        }
    }

    fn conform(n: usize, m: usize, what: &str) -> Result<()> {
        if m == 1 || m == n {
            Ok(())
        } else {
            Err(err(ErrorKind::Shape(format!(
                "{what}: {m} elements for a target of {n}"
            ))))
        }
    }

    /// tgt.d := f(tgt.d, src.d) element-wise, src broadcast.
    fn update_derivs(
        &mut self,
        tgt: &Place,
        src: &[f64],
        f: impl Fn(f64, f64) -> f64,
        what: &str,
    ) -> Result<()> {
        let offs = Self::offsets(tgt);
        Self::conform(offs.len(), src.len(), what)?;
        for (i, off) in offs.into_iter().enumerate() {
            let s = src[if src.len() == 1 { 0 } else { i }];
            let t = self.mem.get_d(tgt.buf, off);
            self.mem.set_d(tgt.buf, off, f(t, s));
        }
        Ok(())
    }

    #[inline(never)]
    fn prop(&mut self, e: &'p CProp) -> Result<()> {
        match e {
            CProp::Set(t, s) | CProp::SetNeg(t, s) | CProp::Inc(t, s) | CProp::Dec(t, s) => {
                let sp = self.place(s, None)?;
                let src = self.derivs(&sp);
                let tp = self.place(t, None)?;
                let n = src.len().max(tp.len()) as u64;
                match e {
                    CProp::Set(..) => self.update_derivs(&tp, &src, |_, s| s, "SetDeriv"),
                    CProp::SetNeg(..) => self.update_derivs(&tp, &src, |_, s| -s, "SetNegDeriv"),
                    CProp::Inc(..) => {
                        self.count(n);
                        self.update_derivs(&tp, &src, |t, s| t + s, "IncDeriv")
                    }
                    _ => {
                        self.count(n);
                        self.update_derivs(&tp, &src, |t, s| t - s, "DecDeriv")
                    }
                }
            }
            CProp::Sax {
                terms,
                y,
                accumulate,
            } => {
                let yp = self.place(y, None)?;
                let n = yp.len().max(1);
                let mut acc = vec![0.0; n];
                for (a, x) in terms {
                    let av = self.eval(a)?;
                    let xp = self.place(x, None)?;
                    let xd = self.derivs(&xp);
                    Self::conform(n, av.len(), "Sax factor")?;
                    Self::conform(n, xd.len(), "Sax operand")?;
                    for (i, slot) in acc.iter_mut().enumerate() {
                        let a = av
                            .elem(if av.len() == 1 { 0 } else { i })
                            .as_real()
                            .ok_or_else(|| {
                                err(ErrorKind::Type("a non-numeric Sax factor".into()))
                            })?;
                        *slot += a * xd[if xd.len() == 1 { 0 } else { i }];
                    }
                    self.count(2 * n as u64);
                }
                if *accumulate {
                    self.update_derivs(&yp, &acc, |t, s| t + s, "Saxpy")
                } else {
                    self.update_derivs(&yp, &acc, |_, s| s, "Sax")
                }
            }
            CProp::Zero(x) => {
                let p = self.place(x, None)?;
                self.update_derivs(&p, &[0.0], |_, s| s, "ZeroDeriv")
            }
        }
    }

    // -------------------------------------------------------- inlinable calls

    fn arg_place(&mut self, args: &'p [CArg], k: usize, op: InlineOp) -> Result<Place> {
        match args.get(k) {
            Some(CArg::Ref(r)) => {
                let writes = match op {
                    InlineOp::Pop(..)
                    | InlineOp::CpRestore { deriv: false, .. }
                    | InlineOp::Convert
                    | InlineOp::RevolveRestore(_) => k == 0,
                    InlineOp::RevolveNext | InlineOp::RevolveIteration => true,
                    _ => false,
                };
                if writes {
                    self.note_write(r);
                }
                self.place(r, None)
            }
            Some(CArg::Const(_)) => Err(err(ErrorKind::Unsupported(format!(
                "{op:?} with a constant where a variable is required"
            )))),
            None => Err(err(ErrorKind::Unsupported(format!(
                "{op:?} with {} arguments",
                args.len()
            )))),
        }
    }

    fn arg_value(&mut self, args: &'p [CArg], k: usize, op: InlineOp) -> Result<Value> {
        match args.get(k) {
            Some(CArg::Ref(r)) => {
                self.check_read(r)?;
                let p = self.place(r, None)?;
                Ok(self.read(&p, false))
            }
            Some(CArg::Const(c)) => Ok(Value::Scalar(c.clone())),
            None => Err(err(ErrorKind::Unsupported(format!(
                "{op:?} with {} arguments",
                args.len()
            )))),
        }
    }

    /// Runs an inlinable call: one step function per family of calls.
    #[inline(never)]
    fn inline(&mut self, op: InlineOp, args: &'p [CArg]) -> Result<()> {
        match op {
            InlineOp::Push(ty, rank) => self.push(ty, rank, args, op),
            InlineOp::Pop(ty, rank) => self.pop(ty, rank, args, op),
            InlineOp::SetDeriv
            | InlineOp::SetNegDeriv
            | InlineOp::IncDerivTarget
            | InlineOp::DecDerivTarget => self.tangent_update(op, args),
            InlineOp::Saxpy | InlineOp::Sax => self.saxpy(op, args),
            InlineOp::IncDeriv | InlineOp::DecDeriv => self.adjoint_update(op, args),
            InlineOp::ZeroDeriv => {
                let p = self.arg_place(args, 0, op)?;
                self.update_derivs(&p, &[0.0], |_, s| s, "ZeroDeriv")
            }
            InlineOp::CpStore { ty, deriv } => self.checkpoint_store(ty, deriv, args, op),
            InlineOp::CpRestore { ty, deriv } => self.checkpoint_restore(ty, deriv, args, op),
            InlineOp::Convert => {
                let from = self.arg_value(args, 1, op)?;
                let to = self.arg_place(args, 0, op)?;
                self.write(&to, &from, false, "oad_convert target")
            }
            InlineOp::AllocateMatching | InlineOp::AllocateShape => self.allocate_call(op, args),
            InlineOp::ShapeTest => Ok(()),
            InlineOp::Count(mult) => {
                let n = self
                    .arg_value(args, 0, op)?
                    .elem(0)
                    .as_int()
                    .unwrap_or(0)
                    .max(0) as u64;
                if mult {
                    self.stats.counted_multiplications += n;
                } else {
                    self.stats.counted_additions += n;
                }
                Ok(())
            }
            InlineOp::Trace(record) => self.trace_record(record, args, op),
            InlineOp::RevolveBegin
            | InlineOp::RevolveBeginOnline
            | InlineOp::RevolveBeginFixedPoint
            | InlineOp::RevolveBeginIndependent => self.revolve_begin(args, op),
            InlineOp::RevolveIteration => self.revolve_iteration(args, op),
            InlineOp::RevolveEnd => self.revolve_end(args, op),
            InlineOp::RevolveMeasure => self.revolve_measure(args, op),
            InlineOp::RevolveCheck => self.revolve_check(args, op),
            InlineOp::RevolveResume => self.revolve_resume(args, op),
            InlineOp::RevolveNext => self.revolve_next(args, op),
            InlineOp::RevolveStore(ty) => self.revolve_store(ty, args, op),
            InlineOp::RevolveRestore(ty) => self.revolve_restore(ty, args, op),
        }
    }

    /// `push_*`: the argument's elements onto the tape of `ty`.
    fn push(&mut self, ty: Ty, rank: Option<u8>, args: &'p [CArg], op: InlineOp) -> Result<()> {
        let v = self.arg_value(args, 0, op)?;
        tape_rank_check(rank, v.shape().len(), "push")?;
        let n = v.len();
        self.reserve(n as u128, || format!("the {} tape", ty.name()))?;
        for i in 0..n {
            let s = v.elem(i);
            match ty {
                Ty::Real => self.tapes.real.push(
                    s.as_real()
                        .ok_or_else(|| err(ErrorKind::Type("push of a non-real".into())))?,
                ),
                Ty::Int => self.tapes.int.push(
                    s.as_int()
                        .ok_or_else(|| err(ErrorKind::Type("push_i of a non-integer".into())))?,
                ),
                Ty::Bool => self.tapes.bool.push(
                    s.as_bool()
                        .ok_or_else(|| err(ErrorKind::Type("push_b of a non-logical".into())))?,
                ),
                Ty::Str => match s {
                    Scalar::Str(x) => self.tapes.str.push(x.clone()),
                    _ => return Err(err(ErrorKind::Type("push_s of a non-string".into()))),
                },
            }
        }
        let n = n as u64;
        match ty {
            Ty::Real => {
                self.stats.doubles_pushed += n;
                self.stats.peak_double_tape = self
                    .stats
                    .peak_double_tape
                    .max(self.tapes.real.len() as u64);
            }
            Ty::Int => {
                self.stats.integers_pushed += n;
                self.stats.peak_integer_tape = self
                    .stats
                    .peak_integer_tape
                    .max(self.tapes.int.len() as u64);
            }
            Ty::Bool => self.stats.logicals_pushed += n,
            Ty::Str => self.stats.strings_pushed += n,
        }
        Ok(())
    }

    /// `pop_*`: the top elements of the tape of `ty` into the argument.
    fn pop(&mut self, ty: Ty, rank: Option<u8>, args: &'p [CArg], op: InlineOp) -> Result<()> {
        let p = self.arg_place(args, 0, op)?;
        tape_rank_check(rank, p.dims.len(), "pop")?;
        let offs = Self::offsets(&p);
        let n = offs.len();
        let have = match ty {
            Ty::Real => self.tapes.real.len(),
            Ty::Int => self.tapes.int.len(),
            Ty::Bool => self.tapes.bool.len(),
            Ty::Str => self.tapes.str.len(),
        };
        if have < n {
            return Err(err(ErrorKind::Underflow(format!("the {} tape", ty.name()))));
        }
        let start = have - n;
        for (i, off) in offs.into_iter().enumerate() {
            let s = match ty {
                Ty::Real => Scalar::Real(self.tapes.real[start + i]),
                Ty::Int => Scalar::Int(self.tapes.int[start + i]),
                Ty::Bool => Scalar::Bool(self.tapes.bool[start + i]),
                Ty::Str => Scalar::Str(self.tapes.str[start + i].clone()),
            };
            self.mem.set(p.buf, off, &s).ok_or_else(|| {
                err(ErrorKind::Type(format!(
                    "pop of a {} into a different type",
                    ty.name()
                )))
            })?;
        }
        match ty {
            Ty::Real => self.tapes.real.truncate(start),
            Ty::Int => self.tapes.int.truncate(start),
            Ty::Bool => self.tapes.bool.truncate(start),
            Ty::Str => self.tapes.str.truncate(start),
        }
        Ok(())
    }

    /// The tangent module's `setderiv`, `setnegderiv`, `incderiv` and
    /// `decderiv` (target first).
    fn tangent_update(&mut self, op: InlineOp, args: &'p [CArg]) -> Result<()> {
        let sp = self.arg_place(args, 1, op)?;
        let src = self.derivs(&sp);
        let tp = self.arg_place(args, 0, op)?;
        let n = src.len().max(tp.len()) as u64;
        match op {
            InlineOp::SetDeriv => self.update_derivs(&tp, &src, |_, s| s, "setderiv"),
            InlineOp::SetNegDeriv => self.update_derivs(&tp, &src, |_, s| -s, "setnegderiv"),
            InlineOp::IncDerivTarget => {
                self.count(n);
                self.update_derivs(&tp, &src, |t, s| t + s, "incderiv")
            }
            _ => {
                self.count(n);
                self.update_derivs(&tp, &src, |t, s| t - s, "decderiv")
            }
        }
    }

    /// `Saxpy(a, x, y)` (y.d += a·x.d) and the tangent `sax` (y.d := a·x.d).
    fn saxpy(&mut self, op: InlineOp, args: &'p [CArg]) -> Result<()> {
        let a = self.arg_value(args, 0, op)?;
        let xp = self.arg_place(args, 1, op)?;
        let xd = self.derivs(&xp);
        let yp = self.arg_place(args, 2, op)?;
        let n = yp.len().max(1);
        Self::conform(n, a.len(), "Saxpy factor")?;
        Self::conform(n, xd.len(), "Saxpy operand")?;
        let mut add = Vec::with_capacity(n);
        for i in 0..n {
            let ai = a
                .elem(if a.len() == 1 { 0 } else { i })
                .as_real()
                .ok_or_else(|| err(ErrorKind::Type("a non-numeric Saxpy factor".into())))?;
            add.push(ai * xd[if xd.len() == 1 { 0 } else { i }]);
        }
        self.count(2 * n as u64);
        if op == InlineOp::Sax {
            self.update_derivs(&yp, &add, |_, s| s, "sax")
        } else {
            self.update_derivs(&yp, &add, |t, s| t + s, "Saxpy")
        }
    }

    /// The adjoint's `IncDeriv(x, y)` and `DecDeriv(x, y)` (source first).
    fn adjoint_update(&mut self, op: InlineOp, args: &'p [CArg]) -> Result<()> {
        let xp = self.arg_place(args, 0, op)?;
        let xd = self.derivs(&xp);
        let yp = self.arg_place(args, 1, op)?;
        self.count(yp.len().max(1) as u64);
        if op == InlineOp::IncDeriv {
            self.update_derivs(&yp, &xd, |t, s| t + s, "IncDeriv")
        } else {
            self.update_derivs(&yp, &xd, |t, s| t - s, "DecDeriv")
        }
    }

    /// `cp_arg_store_*`: the argument onto the current routine's own
    /// checkpoint stack.
    fn checkpoint_store(
        &mut self,
        ty: Ty,
        deriv: bool,
        args: &'p [CArg],
        op: InlineOp,
    ) -> Result<()> {
        let p = self.arg_place(args, 0, op)?;
        let r = self.frames.last().map(|f| f.routine).unwrap_or(0);
        let offs = Self::offsets(&p);
        let n = offs.len();
        self.reserve(n as u128 + 1, || {
            format!("the {} checkpoint stack", ty.name())
        })?;
        self.cp_entries[r][stack_slot(ty, deriv)].push(CpEntry { ty, deriv, len: n });
        self.cp_entries_total += 1;
        for off in offs {
            let stack = &mut self.checkpoints[r];
            if deriv {
                stack.real.push(self.mem.get_d(p.buf, off));
                continue;
            }
            push_element(stack, ty, self.mem.get(p.buf, off), "a string checkpoint")?;
        }
        self.checkpoint_total += n;
        self.stats.checkpoint_stored += n as u64;
        self.stats.peak_checkpoint = self.stats.peak_checkpoint.max(self.checkpoint_total as u64);
        Ok(())
    }

    /// `cp_arg_restore_*`: takes the argument back from the current
    /// routine's checkpoint stack of its type: off the top, arrays walked
    /// backwards; or, inside a record read in store order
    /// ([`Machine::open_record`]), from the record's read position
    /// onwards, arrays walked forwards.
    fn checkpoint_restore(
        &mut self,
        ty: Ty,
        deriv: bool,
        args: &'p [CArg],
        op: InlineOp,
    ) -> Result<()> {
        let p = self.arg_place(args, 0, op)?;
        let r = self.frames.last().map(|f| f.routine).unwrap_or(0);
        let mut offs = Self::offsets(&p);
        let reading = self.reading.filter(|rd| rd.routine == r);
        if reading.is_none() {
            offs.reverse();
        }
        let n = offs.len();
        let underflow = || {
            err(ErrorKind::Underflow(format!(
                "the {} checkpoint stack",
                ty.name()
            )))
        };
        // The store this restore pairs with.
        let slot = stack_slot(ty, deriv);
        let entry = match &mut self.reading {
            Some(rd) if reading.is_some() => {
                let e = self.cp_entries[r][slot].get(rd.entry_next[slot]).copied();
                rd.entry_next[slot] += 1;
                e
            }
            _ => {
                let e = self.cp_entries[r][slot].pop();
                if e.is_some() {
                    self.cp_entries_total -= 1;
                }
                e
            }
        };
        let entry = entry.ok_or_else(underflow)?;
        let want = CpEntry { ty, deriv, len: n };
        if entry != want {
            let name = match args.first() {
                Some(CArg::Ref(r)) => format!("`{}`", r.name),
                _ => "a constant".to_string(),
            };
            let what = |e: &CpEntry| {
                format!(
                    "{} {}{} element{}",
                    e.len,
                    e.ty.name(),
                    if e.deriv { " derivative" } else { "" },
                    if e.len == 1 { "" } else { "s" }
                )
            };
            return Err(err(ErrorKind::Shape(format!(
                "an argument checkpoint restore into {name} takes {} where the store it pairs with saved {}",
                what(&want),
                what(&entry)
            ))));
        }
        for off in offs {
            let stack = &mut self.checkpoints[r];
            let taken = match &mut self.reading {
                Some(rd) if reading.is_some() => take_next(stack, &mut rd.next, ty, deriv),
                _ => take_top(stack, ty, deriv),
            };
            let value = taken.ok_or_else(underflow)?;
            if deriv {
                self.mem
                    .set_d(p.buf, off, value.as_real().unwrap_or_default());
                continue;
            }
            self.mem.set(p.buf, off, &value).ok_or_else(|| {
                err(ErrorKind::Type(
                    "a checkpoint restored into a different type".into(),
                ))
            })?;
        }
        if reading.is_none() {
            self.checkpoint_total = self.checkpoint_total.saturating_sub(n);
        }
        Ok(())
    }

    /// Begins a store of routine `r`'s argument checkpoints (placeholder
    /// 4) whose restores read in store order: the values stored from here
    /// on form one record (one checkpoint file of the reference's `-f`).
    fn open_record(&mut self, r: usize) -> Result<()> {
        self.reserve(1, || "the checkpoint records".to_string())?;
        let stack = &self.checkpoints[r];
        let mark = [
            stack.real.len(),
            stack.int.len(),
            stack.bool.len(),
            stack.str.len(),
        ];
        let entries = self.cp_entries[r].each_ref().map(Vec::len);
        self.records[r].push((mark, entries));
        self.records_total += 1;
        Ok(())
    }

    /// Begins the restore of routine `r`'s argument checkpoints (placeholder
    /// 6) in store order: the latest record is read from its start.
    fn begin_record_read(&mut self, r: usize) -> Result<()> {
        let (mark, entries) = self.records[r].pop().ok_or_else(|| {
            err(ErrorKind::Underflow(format!(
                "the argument checkpoint records of `{}`",
                self.prog.routines[r].name
            )))
        })?;
        self.records_total -= 1;
        self.reading = Some(RecordRead {
            routine: r,
            start: mark,
            next: mark,
            entry_start: entries,
            entry_next: entries,
        });
        Ok(())
    }

    /// Ends a restore in store order: the record is dropped whole.
    fn end_record_read(&mut self) {
        let Some(rd) = self.reading.take() else {
            return;
        };
        let stack = &mut self.checkpoints[rd.routine];
        let before = stack.len();
        stack.real.truncate(rd.start[0]);
        stack.int.truncate(rd.start[1]);
        stack.bool.truncate(rd.start[2]);
        stack.str.truncate(rd.start[3]);
        self.checkpoint_total = self.checkpoint_total.saturating_sub(before - stack.len());
        for (entries, &start) in self.cp_entries[rd.routine].iter_mut().zip(&rd.entry_start) {
            let dropped = entries.len().saturating_sub(start);
            entries.truncate(start);
            self.cp_entries_total -= dropped;
        }
    }

    /// `oad_AllocateMatching(a, b)` and `oad_AllocateShape(a, n1, …)`.
    fn allocate_call(&mut self, op: InlineOp, args: &'p [CArg]) -> Result<()> {
        let Some(CArg::Ref(target)) = args.first() else {
            return Err(err(ErrorKind::Unsupported(format!(
                "{op:?} without a variable to allocate"
            ))));
        };
        let shape: Shape = if op == InlineOp::AllocateMatching {
            self.arg_place(args, 1, op)?.shape()
        } else {
            let mut s = Shape::new();
            for k in 1..args.len() {
                let n = self
                    .arg_value(args, k, op)?
                    .scalar()
                    .and_then(Scalar::as_int)
                    .ok_or_else(|| {
                        err(ErrorKind::Type("an extent that is not an integer".into()))
                    })?;
                s.push(usize::try_from(n.max(0)).unwrap_or(usize::MAX));
            }
            s
        };
        self.allocate(target, &shape)
    }

    /// An `oad_trace_*` call: one record of `OAD_trace.f90`.
    fn trace_record(
        &mut self,
        record: crate::compile::TraceRecord,
        args: &'p [CArg],
        op: InlineOp,
    ) -> Result<()> {
        // Record attributes are XML: names are escaped.
        let text = |m: &mut Self, k: usize| -> Result<String> {
            Ok(match m.arg_value(args, k, op)?.elem(0) {
                Scalar::Str(s) => xml_attribute(s.trim_end()),
                Scalar::Int(i) => i.to_string(),
                other => xml_attribute(&format!("{other:?}")),
            })
        };
        use crate::compile::TraceRecord as T;
        let line = match record {
            T::Call => format!(
                "<Call name=\"{}\" line=\"{}\">",
                text(self, 0)?,
                text(self, 1)?
            ),
            T::ECall => "</Call>".into(),
            T::Arg => format!("<Arg name=\"{}\">", text(self, 0)?),
            T::EArg => "</Arg>".into(),
            T::Index => format!("<Index val=\"{}\"/>", text(self, 0)?),
            T::Loop => format!("<Loop line=\"{}\">", text(self, 0)?),
            T::ELoop => "</Loop>".into(),
            T::Branch => format!("<Branch line=\"{}\">", text(self, 0)?),
            T::EBranch => "</Branch>".into(),
            T::Initialization => "<Initialization>".into(),
            T::EInitialization => "</Initialization>".into(),
            T::Condition => "<Condition>".into(),
            T::ECondition => "</Condition>".into(),
            T::Update => "<Update>".into(),
            T::EUpdate => "</Update>".into(),
            T::CfVal => format!("<Cfval val=\"{}\"/>", text(self, 0)?),
        };
        self.trace.push(line);
        Ok(())
    }

    // ------------------------------------------------- checkpointed loops

    /// Argument `k` of an inlinable call as an integer.
    fn int_arg(&mut self, args: &'p [CArg], k: usize, op: InlineOp) -> Result<i64> {
        self.arg_value(args, k, op)?
            .scalar()
            .and_then(Scalar::as_int)
            .ok_or_else(|| {
                err(ErrorKind::Type(format!(
                    "{op:?}: argument {} is not an integer",
                    k + 1
                )))
            })
    }

    /// Argument `k` of an inlinable call as a real.
    fn real_arg(&mut self, args: &'p [CArg], k: usize, op: InlineOp) -> Result<f64> {
        self.arg_value(args, k, op)?
            .scalar()
            .and_then(Scalar::as_real)
            .ok_or_else(|| {
                err(ErrorKind::Type(format!(
                    "{op:?}: argument {} is not a number",
                    k + 1
                )))
            })
    }

    /// `oad_revolve_begin(steps, snapshots, line)` and the other kinds'
    /// begins (`_online(snapshots, line)`, `_fixed_point(tolerance,
    /// maxiter, line)`, `_independent(line)`): the taping sweep of a
    /// checkpointed loop begins; the flags now are those its taped steps
    /// run under.
    fn revolve_begin(&mut self, args: &'p [CArg], op: InlineOp) -> Result<()> {
        let (kind, snapshots, line) = match op {
            InlineOp::RevolveBeginOnline => (
                xaif_revolve::Kind::Online,
                self.int_arg(args, 0, op)?,
                self.int_arg(args, 1, op)?,
            ),
            InlineOp::RevolveBeginFixedPoint => {
                let tolerance = self.real_arg(args, 0, op)?;
                let max = self.int_arg(args, 1, op)?;
                if tolerance.is_nan() || tolerance < 0.0 || max < 1 {
                    return Err(err(ErrorKind::Checkpointing(format!(
                        "a fixed-point loop with tolerance {tolerance} and {max} adjoint iterations at most (a tolerance of 0 or more and 1 iteration or more are needed)"
                    ))));
                }
                let kind = xaif_revolve::Kind::FixedPoint {
                    tolerance,
                    max_iterations: max as u64,
                };
                (kind, 2, self.int_arg(args, 2, op)?)
            }
            InlineOp::RevolveBeginIndependent => (
                xaif_revolve::Kind::Independent,
                1,
                self.int_arg(args, 0, op)?,
            ),
            _ => {
                let steps = self.int_arg(args, 0, op)?;
                let kind = xaif_revolve::Kind::Binomial { steps };
                (kind, self.int_arg(args, 1, op)?, self.int_arg(args, 2, op)?)
            }
        };
        let tag = LoopTag {
            routine: self.frames.last().map(|f| f.routine).unwrap_or(0),
            line,
            taping: self.flags,
            adjoint: self.flags,
            base: self.snapshot_total,
            peak_elements: 0,
        };
        self.loops
            .begin(kind, snapshots, tag)
            .map_err(|e| err(ErrorKind::Checkpointing(e.to_string())))
    }

    /// `oad_revolve_resume(line)`: the adjoint sweep of the latest paused
    /// loop begins (it must be the loop at `line`); the flags now are those
    /// its reversed steps run under.
    fn revolve_resume(&mut self, args: &'p [CArg], op: InlineOp) -> Result<()> {
        let line = self.int_arg(args, 0, op)?;
        let flags = self.flags;
        let tag = self
            .loops
            .resume()
            .map_err(|e| err(ErrorKind::Checkpointing(e.to_string())))?;
        if tag.line != line {
            return Err(err(ErrorKind::Checkpointing(format!(
                "the adjoint sweep of the loop at line {line} found the loop at line {} paused",
                tag.line
            ))));
        }
        tag.adjoint = flags;
        Ok(())
    }

    /// `oad_revolve_next(action, count)`: the schedule's next action and
    /// its count into the arguments; the mode flags for it (plain for an
    /// advance, the taping sweep's for a taped step, the adjoint sweep's
    /// for a reversed one); snapshots dropped, begun or opened for
    /// reading.
    fn revolve_next(&mut self, args: &'p [CArg], op: InlineOp) -> Result<()> {
        let action_place = self.arg_place(args, 0, op)?;
        let count_place = self.arg_place(args, 1, op)?;
        let reply = self
            .loops
            .next_action()
            .map_err(|e| err(ErrorKind::Checkpointing(e.to_string())))?;
        self.drop_snapshots(&reply.drops);
        use xaif_revolve::Action;
        match reply.action {
            Action::Measure | Action::Check => {}
            Action::Store { .. } => self.snapshots.push(Stacks::default()),
            Action::Restore { .. } => {
                let top = self.snapshots.last().ok_or_else(|| {
                    err(ErrorKind::Checkpointing(
                        "a restore without a snapshot".into(),
                    ))
                })?;
                self.restore_cursor =
                    [top.real.len(), top.int.len(), top.bool.len(), top.str.len()];
            }
            Action::Advance { from, to } => {
                self.flags = Flags::PLAIN;
                self.stats.checkpointed_forward_steps += to - from;
            }
            Action::Tape { .. } => {
                if let Some(tag) = self.loops.current() {
                    self.flags = tag.taping;
                }
            }
            Action::Adjoint { .. } => {
                if let Some(tag) = self.loops.current() {
                    self.flags = tag.adjoint;
                }
            }
            Action::Done => {
                if let Some(f) = reply.finished {
                    self.flags = f.tag.adjoint;
                    self.record_loop(f);
                }
            }
        }
        self.mem
            .set(
                action_place.buf,
                action_place.offset,
                &Scalar::Int(reply.code),
            )
            .ok_or_else(|| err(ErrorKind::Type("an action code into a non-integer".into())))?;
        self.mem
            .set(
                count_place.buf,
                count_place.offset,
                &Scalar::Int(reply.count),
            )
            .ok_or_else(|| err(ErrorKind::Type("an action count into a non-integer".into())))?;
        Ok(())
    }

    /// `oad_revolve_iteration(action)`: one more iteration of a loop that
    /// runs itself is about to run: `action` 1 when its state is to be
    /// stored first (a frame is opened), 0 otherwise; plain flags.
    fn revolve_iteration(&mut self, args: &'p [CArg], op: InlineOp) -> Result<()> {
        let place = self.arg_place(args, 0, op)?;
        let reply = self
            .loops
            .iteration()
            .map_err(|e| err(ErrorKind::Checkpointing(e.to_string())))?;
        self.drop_snapshots(&reply.drops);
        if reply.code == xaif_revolve::runtime::STORE {
            self.snapshots.push(Stacks::default());
        }
        self.stats.checkpointed_forward_steps += 1;
        self.flags = Flags::PLAIN;
        self.mem
            .set(place.buf, place.offset, &Scalar::Int(reply.code))
            .ok_or_else(|| err(ErrorKind::Type("an action code into a non-integer".into())))
    }

    /// `oad_revolve_end(how)`: a loop that runs itself ended (`how` 1: by
    /// an exit); its taping sweep pauses, and the flags are the taping
    /// sweep's again.
    fn revolve_end(&mut self, args: &'p [CArg], op: InlineOp) -> Result<()> {
        let how = self.int_arg(args, 0, op)?;
        let taping = self.loops.current().map(|t| t.taping);
        let reply = self
            .loops
            .end(how != 0)
            .map_err(|e| err(ErrorKind::Checkpointing(e.to_string())))?;
        self.drop_snapshots(&reply.drops);
        if let Some(flags) = taping {
            self.flags = flags;
        }
        Ok(())
    }

    /// `oad_revolve_measure(x)`: the largest absolute adjoint of `x` into
    /// the running fixed-point loop's measure.
    fn revolve_measure(&mut self, args: &'p [CArg], op: InlineOp) -> Result<()> {
        let p = self.arg_place(args, 0, op)?;
        let norm = self.derivs(&p).iter().fold(0.0f64, |m, d| {
            if d.is_nan() || m.is_nan() {
                f64::NAN
            } else {
                m.max(d.abs())
            }
        });
        self.loops
            .measure(norm)
            .map_err(|e| err(ErrorKind::Checkpointing(e.to_string())))
    }

    /// `oad_revolve_check(x)`: the values of `x` (a variable of any shape;
    /// a string counts as not a number) into the running fixed-point
    /// loop's check that it reached its fixed point.
    fn revolve_check(&mut self, args: &'p [CArg], op: InlineOp) -> Result<()> {
        let p = self.arg_place(args, 0, op)?;
        let offs = Self::offsets(&p);
        self.reserve(offs.len() as u128, || {
            "the check of a fixed-point loop's state".to_string()
        })?;
        let values: Vec<f64> = offs
            .into_iter()
            .map(|o| self.mem.get(p.buf, o).as_real().unwrap_or(f64::NAN))
            .collect();
        self.loops
            .check(&values)
            .map_err(|e| err(ErrorKind::Checkpointing(e.to_string())))
    }

    /// Removes the snapshot frames a schedule dropped (depths from the
    /// newest, in order).
    fn drop_snapshots(&mut self, drops: &[usize]) {
        for &d in drops {
            if let Some(at) = self.snapshots.len().checked_sub(1 + d) {
                let frame = self.snapshots.remove(at);
                self.snapshot_total -= frame.len();
            }
        }
    }

    /// Keeps the record of a finished checkpointed loop (at most
    /// [`MAX_LOOP_RECORDS`]; the counters count every instance).
    fn record_loop(&mut self, f: xaif_revolve::Finished<LoopTag>) {
        self.stats.checkpointed_instances += 1;
        if f.converged == Some(false) {
            self.stats.unconverged_loops += 1;
        }
        if self.stats.checkpointed_loops.len() >= MAX_LOOP_RECORDS {
            return;
        }
        self.stats.checkpointed_loops.push(LoopRecord {
            routine: self.prog.routines[f.tag.routine].name.clone(),
            line: f.tag.line,
            schedule: f.schedule,
            iterations: f.steps,
            snapshots: f.snapshots,
            forward_steps: f.forward_steps,
            max_repetitions: f.max_repetitions,
            peak_snapshots: f.peak_snapshots as u64,
            peak_snapshot_elements: f.tag.peak_elements,
            adjoint_iterations: f.adjoint_iterations,
            final_change: f.final_change,
            converged: f.converged,
            forward_change: f.forward_change,
            reached: f.reached,
        });
    }

    /// `oad_revolve_store(x)`: `x`'s value part into the snapshot being
    /// stored, as the type `ty` or, without one, as `x`'s own.
    fn revolve_store(&mut self, ty: Option<Ty>, args: &'p [CArg], op: InlineOp) -> Result<()> {
        let p = self.arg_place(args, 0, op)?;
        let ty = ty.unwrap_or_else(|| self.mem.buf(p.buf).cells.ty());
        let offs = Self::offsets(&p);
        let n = offs.len();
        self.reserve(n as u128, || {
            "a snapshot of a checkpointed loop".to_string()
        })?;
        let base = match self.loops.current() {
            Some(tag) if !self.snapshots.is_empty() => tag.base,
            _ => {
                return Err(err(ErrorKind::Checkpointing(
                    "a snapshot store outside a store action".into(),
                )))
            }
        };
        for off in offs {
            let value = self.mem.get(p.buf, off);
            let frame = self.snapshots.last_mut().expect("checked above");
            push_element(frame, ty, value, "a string snapshot")?;
        }
        self.snapshot_total += n;
        self.stats.snapshot_stored += n as u64;
        self.stats.peak_snapshot_elements = self
            .stats
            .peak_snapshot_elements
            .max(self.snapshot_total as u64);
        let own = (self.snapshot_total - base) as u64;
        if let Some(tag) = self.loops.current() {
            tag.peak_elements = tag.peak_elements.max(own);
        }
        Ok(())
    }

    /// `oad_revolve_restore(x)`: `x`'s value part from the snapshot being
    /// restored, which stays stored (variables come in the reverse order of
    /// the store, arrays walked backwards), as the type `ty` or, without
    /// one, as `x`'s own.
    fn revolve_restore(&mut self, ty: Option<Ty>, args: &'p [CArg], op: InlineOp) -> Result<()> {
        let p = self.arg_place(args, 0, op)?;
        let ty = ty.unwrap_or_else(|| self.mem.buf(p.buf).cells.ty());
        let mut offs = Self::offsets(&p);
        offs.reverse();
        let k = match ty {
            Ty::Real => 0,
            Ty::Int => 1,
            Ty::Bool => 2,
            Ty::Str => 3,
        };
        for off in offs {
            let short = || {
                err(ErrorKind::Checkpointing(format!(
                    "the snapshot holds fewer {} values than are restored",
                    ty.name()
                )))
            };
            let frame = self.snapshots.last().ok_or_else(short)?;
            let at = self.restore_cursor[k].checked_sub(1).ok_or_else(short)?;
            let s = match ty {
                Ty::Real => Scalar::Real(*frame.real.get(at).ok_or_else(short)?),
                Ty::Int => Scalar::Int(*frame.int.get(at).ok_or_else(short)?),
                Ty::Bool => Scalar::Bool(*frame.bool.get(at).ok_or_else(short)?),
                Ty::Str => Scalar::Str(frame.str.get(at).ok_or_else(short)?.clone()),
            };
            self.restore_cursor[k] = at;
            self.mem.set(p.buf, off, &s).ok_or_else(|| {
                err(ErrorKind::Type(
                    "a snapshot restored into a different type".into(),
                ))
            })?;
        }
        Ok(())
    }

    fn allocate(&mut self, target: &CRef, shape: &Shape) -> Result<()> {
        self.note_write(target);
        if let Some(Slot::Bound { place, .. }) = self.base_slot(target)?.cloned() {
            if place.shape() == *shape {
                return Ok(());
            }
        }
        let decl = self.decl_of(target.loc)?;
        let bounds: Vec<(i64, i64)> = shape
            .iter()
            .map(|&n| (1, i64::try_from(n).unwrap_or(i64::MAX)))
            .collect();
        let len = self.reserve_bounds(decl, &bounds)?;
        let buf = self.mem.alloc(decl.ty, len, decl.single);
        let place = whole(buf, 0, &bounds);
        if let Some((f, _)) = self.frame_index(target.loc)? {
            self.frames[f].owned.push(buf);
        }
        *self.slot_mut(target.loc)? = Slot::Bound {
            place,
            growable: false,
        };
        Ok(())
    }

    // ------------------------------------------------------ harness access

    /// Reads the value part of an element as a real.
    pub fn get_real(&self, buf: BufId, off: usize) -> f64 {
        self.mem.get(buf, off).as_real().unwrap_or(f64::NAN)
    }

    /// Writes the value part of an element.
    pub fn set_value(&mut self, buf: BufId, off: usize, v: &Scalar) {
        let _ = self.mem.set(buf, off, v);
    }

    /// Whether a buffer holds reals.
    pub fn is_real(&self, buf: BufId) -> bool {
        matches!(self.mem.buf(buf).cells, Cells::Real { .. })
    }
}

/// `text` as the value of an XML attribute in double quotes: markup
/// characters as entity references, tabs and line ends as character
/// references, and the control characters XML 1.0 forbids as U+FFFD.
fn xml_attribute(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\u{0}'..='\u{1F}' | '\u{FFFE}' | '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// The value of operand `o` from `values`: moved at its last use, copied
/// otherwise.
#[inline]
fn take(values: &mut [Value], o: &Operand) -> Value {
    let slot = &mut values[o.node as usize];
    if o.last {
        std::mem::replace(slot, Value::Scalar(Scalar::Bool(false)))
    } else {
        slot.clone()
    }
}

/// Appends the value `s` of an element of type `ty` to `stack` (`what`
/// names the stack in the error for a non-string stored as a string).
/// A tape call whose name says another rank than its argument has
/// (`push_i_s0` of an array): the run-time's routine of that name takes no
/// such argument (compiled code does not build), so its values are not
/// taped as the name says.
fn tape_rank_check(rank: Option<u8>, actual: usize, what: &str) -> Result<()> {
    match rank {
        Some(r) if usize::from(r) != actual => Err(err(ErrorKind::Shape(format!(
            "a {what} of rank {r} (`_s{r}`) of an argument of rank {actual}"
        )))),
        _ => Ok(()),
    }
}

fn push_element(stack: &mut Stacks, ty: Ty, s: Scalar, what: &str) -> Result<()> {
    match (ty, s) {
        (Ty::Real, s) => stack.real.push(s.as_real().unwrap_or(0.0)),
        (Ty::Int, s) => stack.int.push(s.as_int().unwrap_or(0)),
        (Ty::Bool, s) => stack.bool.push(s.as_bool().unwrap_or(false)),
        (Ty::Str, Scalar::Str(s)) => stack.str.push(s),
        (Ty::Str, _) => {
            return Err(err(ErrorKind::Type(format!("{what} of a non-string"))));
        }
    }
    Ok(())
}

/// The values of `operands` from `values` (see [`take`]).
fn take_operands(values: &mut [Value], operands: &[Operand]) -> SmallVec<[Value; 3]> {
    operands.iter().map(|o| take(values, o)).collect()
}
