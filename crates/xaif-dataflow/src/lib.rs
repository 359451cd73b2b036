//! Activity and to-be-recorded (TBR) analyses over XAIF.
//!
//! Reverse-mode differentiation needs to know which variables carry
//! derivatives (activity) and which values its adjoint sweep needs that the
//! forward sweep overwrites (TBR). This crate computes both as the seed
//! paper (Hascoët, Naumann, Pascual, *TBR Analysis in Reverse-Mode Automatic
//! Differentiation*) specifies them: bottom-up summaries per structure and
//! per routine on the call graph, then top-down propagation.
//!
//! - [`loc`]: abstract locations (unified storage, split at constant array
//!   elements) and per-routine universes of slots;
//! - [`flow`], [`framework`], [`callgraph`]: flow graphs with their
//!   structure, the structured and iterative solvers, and the call-graph
//!   drivers (recursion to a fixpoint);
//! - [`dep`], [`activity`]: differentiable dependency, varied and useful
//!   sets, activity per symbol, comparison with the front end's flags and
//!   passivation;
//! - [`tbr`]: `Req`/`Kill`, `InReq`/`OutReq`, what to record and what to
//!   tape, per statement, block, routine and call site;
//! - [`snapshot`]: what the snapshot of a checkpointed loop holds;
//! - [`loops`]: the loop-carried state of a fixed-point loop and the
//!   independence of a loop's iterations;
//! - [`report`]: the printable report of `xaifb analyze`.
//!
//! Results live in side tables keyed by model handles; the IR is never
//! changed, except by [`PassivationPlan::apply`] on request. The crate knows
//! nothing of the interpreter or of any transformation.

#![warn(missing_docs)]

pub mod activity;
pub mod bitset;
pub mod callgraph;
pub mod dep;
pub mod error;
pub mod facts;
pub mod flow;
pub mod framework;
pub mod loc;
pub mod loops;
pub mod report;
pub mod snapshot;
pub mod tbr;

pub use activity::{
    analyze_activity, coarse_dependency_paths, compare_with_front_end, top_routines, Activity,
    ActivityDiff, ActivitySpec, BlockActivity, PassivationOptions, PassivationPlan,
    RoutineActivity, StmtActivity, VarSpec,
};
pub use bitset::LocSet;
pub use callgraph::CallGraph;
pub use dep::Dep;
pub use error::DataflowError;

pub use facts::{ProgramFacts, RoutineFacts};
pub use flow::{FlowGraph, Region};
pub use framework::Solver;
pub use loc::{fortran_routine_name, Location, Part, StorageId, Universe};
pub use tbr::{
    analyze_may_read, analyze_tbr, BlockTbr, CallSiteTbr, Overwrites, Reason, ReqKill, Requirement,
    RoutineTbr, StmtTbr, Tbr,
};

use xaif_model::{Program, Routine, SecondaryMap};

/// What to analyse and how.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// Independents and dependents (default: the top routine's active
    /// formals).
    pub activity: ActivitySpec,
    /// Which equations to solve.
    pub solver: Solver,
    /// Also run TBR analysis.
    pub tbr: bool,
}

/// Everything computed for one program.
pub struct Analysis<'p> {
    /// The resolved program: locations, call graph, flow graphs.
    pub facts: ProgramFacts<'p>,
    /// Activity.
    pub activity: Activity,
    /// TBR, when asked for.
    pub tbr: Option<Tbr>,
}

/// Default of the analysis budget ([`analyze_within`]): 2^26 words
/// (512 MiB of bit vectors at most), ten thousand times what the largest
/// routine of the OpenAD regression corpus may need.
pub const DEFAULT_BUDGET: u64 = 1 << 26;

/// An upper bound, in 64-bit words, of the facts and summaries the
/// analyses keep for a routine: a set of its slots per flow node and per
/// statement (before and after), and a dependency row per slot for every
/// loop summary (structured solver) or every flow node (iterative solver).
/// Data-flow facts are bit vectors over the routine's slots, so a routine
/// with many variables and many loops or statements costs their product;
/// that is what the budget bounds.
pub fn routine_cost(rf: &RoutineFacts) -> u64 {
    let slots = rf.universe.len() as u64;
    let words = slots.div_ceil(64).max(1);
    let facts = rf.flow.nodes.len() as u64 + 2 * rf.flow.stmt_count() as u64;
    let summaries = if rf.flow.region.is_some() {
        u64::from(rf.flow.loops)
    } else {
        rf.flow.nodes.len() as u64
    };
    facts
        .saturating_add(summaries.saturating_mul(slots))
        .saturating_mul(words)
}

/// Analyses a program that passed [`xaif_model::validate_program`], within
/// [`DEFAULT_BUDGET`].
pub fn analyze<'p>(p: &'p Program, config: &Config) -> Result<Analysis<'p>, DataflowError> {
    analyze_within(p, config, false, DEFAULT_BUDGET)
}

/// [`analyze`] with the pessimistic assumption for routines without a
/// body when `pessimistic` (the reference driver's `-b`): see
/// [`ProgramFacts::with_black_boxes`].
pub fn analyze_with_black_boxes<'p>(
    p: &'p Program,
    config: &Config,
    pessimistic: bool,
) -> Result<Analysis<'p>, DataflowError> {
    analyze_within(p, config, pessimistic, DEFAULT_BUDGET)
}

/// Analyses a program that passed [`xaif_model::validate_program`]
/// (pessimistic about routines without a body when `pessimistic`), first
/// checking that no routine's [`routine_cost`] exceeds `budget`: the
/// equations are linear in program size for a bounded number of variables
/// per routine, but a routine with 10⁴ variables nested 10⁴ loops deep
/// would need 10⁸ dependency rows. Such a routine is refused with
/// [`DataflowError::TooLarge`] instead of exhausting memory.
pub fn analyze_within<'p>(
    p: &'p Program,
    config: &Config,
    pessimistic: bool,
    budget: u64,
) -> Result<Analysis<'p>, DataflowError> {
    let facts = ProgramFacts::with_black_boxes(p, pessimistic);
    within_budget(p, &facts, budget)?;
    let activity = analyze_activity(&facts, &config.activity, config.solver)?;
    let tbr = config
        .tbr
        .then(|| analyze_tbr(&facts, &activity, config.solver));
    Ok(Analysis {
        facts,
        activity,
        tbr,
    })
}

/// Refuses a program one of whose routines' [`routine_cost`] exceeds
/// `budget`.
fn within_budget(p: &Program, facts: &ProgramFacts, budget: u64) -> Result<(), DataflowError> {
    for &r in &facts.callgraph.routines {
        let rf = &facts.routines[&r];
        let cost = routine_cost(rf);
        if cost > budget {
            return Err(DataflowError::TooLarge {
                routine: rf.name.clone(),
                span: p.routines[r].attrs.span,
                slots: rf.universe.len(),
                statements: rf.flow.stmt_count(),
                loops: rf.flow.loops as usize,
                cost,
                budget,
            });
        }
    }
    Ok(())
}

/// What deciding argument checkpoints needs of a whole program
/// ([`tbr::analyze_overwrites`]), within [`DEFAULT_BUDGET`] and under the
/// same conditions as [`analyze_with_black_boxes`] with TBR: it fails
/// exactly when that would, and its sets are the same as that analysis's
/// [`RoutineTbr::may_write`] and [`RoutineTbr::overwritten_after`].
pub fn analyze_overwrites<'p>(
    p: &'p Program,
    solver: Solver,
    pessimistic: bool,
) -> Result<(ProgramFacts<'p>, SecondaryMap<Routine, Overwrites>), DataflowError> {
    let (facts, sets) = analyze_checkpoints(p, solver, pessimistic, true, false)?;
    Ok((facts, sets.overwrites.unwrap_or_default()))
}

/// The routine-level sets argument checkpoints are decided from, each
/// only when asked for.
#[derive(Default)]
pub struct CheckpointSets {
    /// [`tbr::analyze_overwrites`].
    pub overwrites: Option<SecondaryMap<Routine, Overwrites>>,
    /// [`tbr::analyze_may_read`]: the `Read` lists of routines whose input
    /// has none.
    pub may_read: Option<SecondaryMap<Routine, LocSet>>,
}

/// Builds the facts of `p` once (within [`DEFAULT_BUDGET`], as
/// [`analyze_overwrites`]) and the [`CheckpointSets`] asked for.
/// `pessimistic` is [`ProgramFacts::with_black_boxes`]'s.
pub fn analyze_checkpoints<'p>(
    p: &'p Program,
    solver: Solver,
    pessimistic: bool,
    overwrites: bool,
    may_read: bool,
) -> Result<(ProgramFacts<'p>, CheckpointSets), DataflowError> {
    let facts = ProgramFacts::with_black_boxes(p, pessimistic);
    within_budget(p, &facts, DEFAULT_BUDGET)?;
    let sets = CheckpointSets {
        overwrites: overwrites.then(|| tbr::analyze_overwrites(&facts, solver)),
        may_read: may_read.then(|| tbr::analyze_may_read(&facts, solver)),
    };
    Ok((facts, sets))
}

/// The state of each checkpointed loop `(routine, loop vertex)` of
/// `loops` ([`snapshot::loop_states`]), from facts built once within
/// [`DEFAULT_BUDGET`] (pessimistic about routines without a body when
/// `pessimistic`). `changes` false takes every variable a loop reads
/// before writing as changing.
pub fn analyze_loop_states(
    p: &Program,
    solver: Solver,
    pessimistic: bool,
    loops: &[(xaif_model::RoutineId, xaif_model::VertexId)],
    changes: bool,
) -> Result<Vec<Vec<xaif_model::SymbolId>>, DataflowError> {
    Ok(analyze_marked_loops(p, solver, pessimistic, loops, changes, &[])?.0)
}

/// [`analyze_loop_states`] for `loops`, and the [`loops::LoopAnswer`] of
/// each of `queries`, from facts built once.
pub fn analyze_marked_loops(
    p: &Program,
    solver: Solver,
    pessimistic: bool,
    loops: &[(xaif_model::RoutineId, xaif_model::VertexId)],
    changes: bool,
    queries: &[loops::LoopQuery],
) -> Result<(Vec<Vec<xaif_model::SymbolId>>, Vec<loops::LoopAnswer>), DataflowError> {
    let facts = ProgramFacts::with_black_boxes(p, pessimistic);
    within_budget(p, &facts, DEFAULT_BUDGET)?;
    let states = snapshot::loop_states(&facts, solver, loops, changes);
    let answers = loops::loop_answers(&facts, solver, queries);
    Ok((states, answers))
}
