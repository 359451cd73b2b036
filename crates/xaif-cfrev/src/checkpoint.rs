//! Checkpointed loops (`--checkpoint-loop ROUTINE:LINE[:SNAPSHOTS]`):
//! the adjoint of a marked `ForLoop` by binomial checkpointing
//! (Griewank and Walther's Revolve), generated in the XAIF itself.
//!
//! A marked loop of `n` iterations is not taped in the taping sweep. In its
//! place, placeholder 2 holds a dispatcher that asks the run-time support
//! what to do next (`oad_revolve_next`) and stores snapshots of the loop
//! state, advances the loop without taping, and tapes its last iteration;
//! placeholder 3 holds a second dispatcher that reverses that iteration
//! and drives the rest of the schedule: restore a snapshot, advance
//! without taping, tape one iteration, reverse it. The code around the
//! loop keeps its usual taping and reversal; a marked loop inside the body
//! of another (two-level hierarchical checkpointing) is checkpointed
//! inside each taped iteration of the outer one.
//!
//! The run-time calls, their arguments and the Fortran module that
//! implements them are described in `docs/checkpointing.md`; the snapshot
//! holds the state `xaif_dataflow::snapshot` determines
//! (`docs/decisions.md`). The schedule itself lives in `xaif-revolve`,
//! which this crate does not need: it only emits calls.

use rustc_hash::{FxHashMap, FxHashSet};
use xaif_linearize::context::Ctx as InputCtx;
use xaif_linearize::tangent::TransformError;
use xaif_linearize::temps::value_ref;
use xaif_model::{
    build::{assignment, inlinable_call},
    ArgValue, Attrs, CfgGraph, CfgId, ExprBuilder, ExprVertexKind, Program, RoutineBody, RoutineId,
    ScopeId, StmtId, SymbolId, VarRef, VertexId, VertexKind,
};

use crate::explicit::{ExplicitLoop, Step};
use crate::region::{walk, Event, Region};
use crate::reverse::{
    adjoint_seq, at_most, connect, copy_vertex, embed, increment, int_const, set_int, taping_seq,
    CfgBuilder, Ctx, Pending, Temps,
};

/// Snapshots of a loop marked without `:SNAPSHOTS`.
pub const DEFAULT_SNAPSHOTS: u64 = 10;

/// At most this many `--checkpoint-loop` flags (`docs/limits.md`): the
/// code of a checkpointed loop is made by a call per nesting level of
/// marked loops.
pub const MAX_MARKED_LOOPS: usize = 256;

/// One `--checkpoint-loop ROUTINE:LINE[:SNAPSHOTS]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopMark {
    /// The routine: its `symbol_id` (`head__24`) or its name as `-p` and
    /// `-w` take it (`head`).
    pub routine: String,
    /// The `lineNumber` of the loop.
    pub line: i64,
    /// Loop states held at once, the loop's entry state included (≥ 1).
    pub snapshots: u64,
}

impl LoopMark {
    /// Parses `ROUTINE:LINE[:SNAPSHOTS]`, refusing a LINE or SNAPSHOTS
    /// that the run-time calls they are written into cannot take
    /// ([`crate::runtime::MAX_CALL_INTEGER`]).
    pub fn parse(text: &str) -> Result<Self, String> {
        use crate::runtime::{call_integer, CountError, MAX_CALL_INTEGER};
        let parts: Vec<&str> = text.split(':').collect();
        let (routine, line, snapshots) = match parts.as_slice() {
            [r, l] => (*r, *l, None),
            [r, l, s] => (*r, *l, Some(*s)),
            _ => return Err(format!("`{text}`: expected ROUTINE:LINE[:SNAPSHOTS]")),
        };
        if routine.is_empty() {
            return Err(format!("`{text}`: no routine before the first `:`"));
        }
        let too_large = |what: &str, value: &str, calls: &str| {
            format!(
                "`{text}`: {what} {value} is more than the run-time takes: at most \
                 {MAX_CALL_INTEGER} (it is written into {calls} as a default Fortran integer)"
            )
        };
        let line = match call_integer(line) {
            Ok(l) if l > 0 => l as i64,
            Err(CountError::TooLarge) => {
                return Err(too_large(
                    "LINE",
                    line,
                    "`oad_revolve_begin` and `oad_revolve_resume`",
                ))
            }
            _ => return Err(format!("`{text}`: LINE `{line}` is not a line number")),
        };
        let snapshots = match snapshots {
            None => DEFAULT_SNAPSHOTS,
            Some(s) => match call_integer(s) {
                Ok(0) => {
                    return Err(format!(
                        "`{text}`: SNAPSHOTS 0: at least 1 (the loop's entry state) is needed"
                    ))
                }
                Ok(n) => n,
                Err(CountError::TooLarge) => {
                    return Err(too_large("SNAPSHOTS", s, "`oad_revolve_begin`"))
                }
                Err(CountError::NotANumber) => {
                    return Err(format!("`{text}`: SNAPSHOTS `{s}` is not a number"))
                }
            },
        };
        Ok(LoopMark {
            routine: routine.to_string(),
            line,
            snapshots,
        })
    }
}

impl std::fmt::Display for LoopMark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.routine, self.line, self.snapshots)
    }
}

/// A marked loop found in the input.
#[derive(Clone, Debug)]
pub(crate) struct Marked {
    pub(crate) vertex: VertexId,
    pub(crate) snapshots: u64,
    pub(crate) line: i64,
    /// The flag, for messages.
    pub(crate) text: String,
}

/// What the code of one checkpointed loop needs.
#[derive(Clone, Debug)]
pub struct CheckpointedLoop {
    header: ExplicitLoop,
    init: StmtId,
    update: StmtId,
    snapshots: u64,
    line: i64,
    /// The snapshot's variables, and whether each is an optional formal
    /// some call leaves out (stored and restored only when present).
    state: Vec<(VarRef, bool)>,
}

/// The checkpointed loops of one routine, and the plain form of its basic
/// blocks (what an advance runs).
pub struct Checkpoints<'a> {
    pub(crate) loops: FxHashMap<VertexId, CheckpointedLoop>,
    pub(crate) plain: &'a FxHashMap<VertexId, Vec<StmtId>>,
}

/// Located error at a vertex of the input.
fn at_vertex(p: &Program, v: VertexId, message: String) -> TransformError {
    let vertex = &p.vertices[v];
    TransformError::At {
        message,
        span: vertex.attrs.span,
        element: vertex_element(&vertex.kind),
    }
}

fn vertex_element(kind: &VertexKind) -> &'static str {
    match kind {
        VertexKind::ForLoop { .. } => "ForLoop",
        VertexKind::PreLoop(_) => "PreLoop",
        VertexKind::PostLoop(_) => "PostLoop",
        _ => "vertex",
    }
}

/// The loop vertices of routine body `cfg` with their `lineNumber`s.
fn loops_of(p: &Program, cfg: CfgId) -> Vec<(VertexId, Option<i64>)> {
    p.cfgs[cfg]
        .vertex_ids()
        .filter(|&v| {
            matches!(
                p.vertices[v].kind,
                VertexKind::ForLoop { .. } | VertexKind::PreLoop(_) | VertexKind::PostLoop(_)
            )
        })
        .map(|v| (v, p.vertices[v].attrs.int("lineNumber")))
        .collect()
}

/// Finds the loops the flags mark, by routine; refuses, with the element
/// located, what cannot be checkpointed before anything is transformed.
pub(crate) fn resolve(
    p: &Program,
    marks: &[LoopMark],
    decoration: xaif_model::Decoration,
) -> Result<FxHashMap<RoutineId, Vec<Marked>>, TransformError> {
    let mut out: FxHashMap<RoutineId, Vec<Marked>> = FxHashMap::default();
    if marks.len() > MAX_MARKED_LOOPS {
        return Err(TransformError::Input(format!(
            "{} loops marked with --checkpoint-loop: at most {MAX_MARKED_LOOPS}",
            marks.len()
        )));
    }
    let mut seen: FxHashMap<VertexId, String> = FxHashMap::default();
    for mark in marks {
        let text = format!("--checkpoint-loop {}:{}", mark.routine, mark.line);
        let (rid, cfg) = find_routine(p, &mark.routine, decoration, &text)?;
        let loops = loops_of(p, cfg);
        let here: Vec<VertexId> = loops
            .iter()
            .filter(|(_, l)| *l == Some(mark.line))
            .map(|(v, _)| *v)
            .collect();
        let routine = &p.routines[rid];
        let v = match here.as_slice() {
            [v] => *v,
            [] => {
                let mut lines: Vec<i64> = loops.iter().filter_map(|(_, l)| *l).collect();
                lines.sort_unstable();
                lines.dedup();
                let listed = if lines.is_empty() {
                    "it has no loops".to_string()
                } else {
                    let l: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                    format!("its loops are at lines {}", l.join(", "))
                };
                return Err(TransformError::At {
                    message: format!(
                        "{text}: routine `{}` has no loop at line {}; {listed}",
                        routine.symbol_name(),
                        mark.line
                    ),
                    span: routine.attrs.span,
                    element: "ControlFlowGraph",
                });
            }
            [v, ..] => {
                return Err(at_vertex(
                    p,
                    *v,
                    format!(
                    "{text}: routine `{}` has {} loops at line {}: which one is meant is not clear",
                    routine.symbol_name(),
                    here.len(),
                    mark.line
                ),
                ))
            }
        };
        if let VertexKind::PreLoop(_) | VertexKind::PostLoop(_) = p.vertices[v].kind {
            return Err(at_vertex(
                p,
                v,
                format!(
                    "{text}: a while loop, whose trip count is not known when it starts, \
                     cannot be checkpointed"
                ),
            ));
        }
        if let Some(first) = seen.insert(v, text.clone()) {
            return Err(at_vertex(
                p,
                v,
                format!("{text}: the loop is marked twice ({first} names it too)"),
            ));
        }
        out.entry(rid).or_default().push(Marked {
            vertex: v,
            snapshots: mark.snapshots,
            line: mark.line,
            text,
        });
    }
    Ok(out)
}

/// The routine with code that `name` names: its `symbol_id`, or its name
/// as the user wrote it (`-F`'s decoration removed, any case).
fn find_routine(
    p: &Program,
    name: &str,
    decoration: xaif_model::Decoration,
    text: &str,
) -> Result<(RoutineId, CfgId), TransformError> {
    let with_code: Vec<(RoutineId, CfgId)> = p
        .routines
        .iter()
        .filter_map(|(id, r)| match &r.body {
            RoutineBody::Graph(cfg) if r.has_body(p) => Some((id, *cfg)),
            _ => None,
        })
        .collect();
    let exact: Vec<_> = with_code
        .iter()
        .filter(|(r, _)| p.routines[*r].symbol_name() == name)
        .copied()
        .collect();
    let matching: Vec<_> = if exact.is_empty() {
        with_code
            .iter()
            .filter(|(r, _)| {
                decoration
                    .plain_name(p.routines[*r].symbol_name(), true)
                    .eq_ignore_ascii_case(name)
            })
            .copied()
            .collect()
    } else {
        exact
    };
    match matching.as_slice() {
        [one] => Ok(*one),
        [] => {
            let names: Vec<&str> = with_code
                .iter()
                .map(|(r, _)| p.routines[*r].symbol_name())
                .collect();
            Err(TransformError::Input(format!(
                "{text}: no routine `{name}` with code (the routines with code are {})",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            )))
        }
        several => {
            let names: Vec<&str> = several
                .iter()
                .map(|(r, _)| p.routines[*r].symbol_name())
                .collect();
            Err(TransformError::Input(format!(
                "{text}: `{name}` names several routines ({}): give the symbol_id",
                names.join(", ")
            )))
        }
    }
}

/// The snapshot variables of every marked loop, from one data-flow
/// analysis of `p` (`xaif_dataflow::snapshot`). `opaque` (a marker that
/// may stand for a store the XAIF does not carry) makes every variable a
/// loop reads part of its state.
pub(crate) fn loop_states(
    p: &Program,
    marked: &FxHashMap<RoutineId, Vec<Marked>>,
    pessimistic: bool,
    opaque: bool,
) -> Result<FxHashMap<VertexId, Vec<SymbolId>>, TransformError> {
    let mut loops: Vec<(RoutineId, VertexId)> = marked
        .iter()
        .flat_map(|(r, ms)| ms.iter().map(move |m| (*r, m.vertex)))
        .collect();
    loops.sort_unstable();
    let states = xaif_dataflow::analyze_loop_states(
        p,
        xaif_dataflow::Solver::default(),
        pessimistic,
        &loops,
        !opaque,
    )
    .map_err(|e| {
        TransformError::Input(format!(
            "--checkpoint-loop: the data-flow analysis that decides what a snapshot holds failed: {e}"
        ))
    })?;
    Ok(loops.into_iter().map(|(_, v)| v).zip(states).collect())
}

/// The checkpointed loops of one routine (`marked`, with their `states`),
/// checked: each loop's body must be structured and entered and left only
/// through the loop (the rest of a routine may be unstructured: such a
/// routine is reversed by block enumeration, the loop as one unit), and
/// the loop counted, its trip count known when it starts.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan(
    ctx: &InputCtx<'_>,
    rid: RoutineId,
    cfg: CfgId,
    scope: ScopeId,
    regions: Option<&[Region]>,
    marked: &[Marked],
    states: &FxHashMap<VertexId, Vec<SymbolId>>,
    left_out: &FxHashSet<(String, i64)>,
) -> Result<FxHashMap<VertexId, CheckpointedLoop>, TransformError> {
    let p = ctx.p;
    let routine = &p.routines[rid];
    let optional: FxHashSet<SymbolId> = routine
        .arguments
        .iter()
        .flat_map(|l| l.args.iter())
        .filter(|a| {
            left_out.contains(&(
                routine.symbol_name().to_string(),
                a.int("position").unwrap_or(0),
            ))
        })
        .filter_map(|a| ctx.symbols.resolve(a))
        .collect();
    let bodies = regions.map(loop_bodies).unwrap_or_default();
    // Loops of a routine without a region tree, parsed one by one.
    let parsed: Vec<Option<Region>> = match regions {
        Some(_) => Vec::new(),
        None => marked
            .iter()
            .map(|m| crate::region::parse_loop(p, cfg, m.vertex))
            .collect(),
    };
    let mut out = FxHashMap::default();
    for (k, m) in marked.iter().enumerate() {
        let body = match (regions, parsed.get(k)) {
            (Some(_), _) => bodies.get(&m.vertex).copied(),
            (None, Some(Some(Region::Loop { body, .. }))) => Some(body.as_slice()),
            _ => None,
        };
        let Some(body) = body else {
            let why = if left_by_jump(p, cfg, m.vertex) {
                "the loop is left by a jump (a Goto out of its body, an exit or a return)"
            } else {
                "its body is not structured, or a jump enters it"
            };
            return Err(at_vertex(
                p,
                m.vertex,
                format!("{}: cannot be checkpointed: {why}", m.text),
            ));
        };
        out.insert(
            m.vertex,
            checkpointed_loop(ctx, scope, m, body, states, &optional)?,
        );
    }
    Ok(out)
}

/// What the code of marked loop `m` (body `body`) needs.
fn checkpointed_loop(
    ctx: &InputCtx<'_>,
    scope: ScopeId,
    m: &Marked,
    body: &[Region],
    states: &FxHashMap<VertexId, Vec<SymbolId>>,
    optional: &FxHashSet<SymbolId>,
) -> Result<CheckpointedLoop, TransformError> {
    let p = ctx.p;
    let header = counted(ctx, scope, m.vertex, body).ok_or_else(|| {
        at_vertex(
            p,
            m.vertex,
            format!(
                "{}: cannot be checkpointed: its trip count is not known when it starts \
                 (a counted loop `i = e0; i <= e1; i = i + c`, whose bounds and step its \
                 body does not change, can be)",
                m.text
            ),
        )
    })?;
    let VertexKind::ForLoop {
        init: Some(init),
        update: Some(update),
        ..
    } = p.vertices[m.vertex].kind
    else {
        unreachable!("a counted loop has a header");
    };
    let mut state = Vec::new();
    for &s in states.get(&m.vertex).map(Vec::as_slice).unwrap_or(&[]) {
        if let Err(why) = crate::runtime::snapshot_type(&p.symbols[s]) {
            return Err(at_vertex(
                p,
                m.vertex,
                format!(
                    "{}: cannot be checkpointed: its state includes `{}`, {why}, \
                     which a snapshot cannot hold",
                    m.text,
                    p.symbols[s].name(),
                ),
            ));
        }
        state.push((whole_variable(p, s), optional.contains(&s)));
    }
    Ok(CheckpointedLoop {
        header,
        init,
        update,
        snapshots: m.snapshots,
        line: m.line,
        state,
    })
}

/// The body of every loop of `regions`, by loop vertex.
fn loop_bodies(regions: &[Region]) -> FxHashMap<VertexId, &[Region]> {
    let mut out = FxHashMap::default();
    walk(regions, false, |e| {
        if let Event::LoopStart(Region::Loop { vertex, body, .. }) = e {
            out.insert(*vertex, body.as_slice());
        }
    });
    out
}

/// The header of loop `v` when its trip count is fixed on entry: a
/// Fortran `DO` (condition `<=`, `>=` or `/=`, bounds evaluated once),
/// or a `<`/`>` loop whose body changes neither its variable nor its
/// bound; a run-time stride the body must not change either (the update
/// evaluates it again).
fn counted(
    ctx: &InputCtx<'_>,
    scope: ScopeId,
    v: VertexId,
    body: &[Region],
) -> Option<ExplicitLoop> {
    let h = crate::explicit::recognise_with(ctx, v, true)?;
    let VertexKind::ForLoop {
        condition: Some(cond),
        ..
    } = &ctx.p.vertices[v].kind
    else {
        return None;
    };
    let g = xaif_model::ExprGraph::new(cond)?;
    let op = cond.vertices[g.root].attrs.get("name")?;
    let mut fixed: Vec<SymbolId> = Vec::new();
    if !matches!(op, "less_or_equal" | "greater_or_equal" | "not_equal") {
        fixed.push(ctx.symbol_of(&h.var.graph)?);
        fixed.extend(crate::explicit::symbols_read(ctx, &h.bound));
    }
    if let Some(e) = h.step.expr() {
        fixed.extend(crate::explicit::symbols_read(ctx, e));
    }
    if crate::explicit::changes_any(ctx, scope, body, &fixed) {
        return None;
    }
    Some(h)
}

/// Whether a path from the body of loop `v` leaves the loop other than
/// through its `EndLoop` (the graph being unstructured).
fn left_by_jump(p: &Program, cfg: CfgId, v: VertexId) -> bool {
    let g = CfgGraph::new(p, cfg);
    let Some(&(_, start)) = g
        .successors(v)
        .iter()
        .find(|(e, _)| p.edges[*e].condition_value() == Some(1))
    else {
        return false;
    };
    // Forward from the body's start, not through the loop vertex.
    let mut forward: FxHashSet<VertexId> = FxHashSet::default();
    let mut work = vec![start];
    while let Some(x) = work.pop() {
        if x == v || !forward.insert(x) {
            continue;
        }
        work.extend(g.successors(x).iter().map(|(_, t)| *t));
    }
    // Backward from the loop vertex, within that set.
    let mut back: FxHashSet<VertexId> = FxHashSet::default();
    let mut work: Vec<VertexId> = g
        .predecessors(v)
        .iter()
        .map(|(_, s)| *s)
        .filter(|s| forward.contains(s))
        .collect();
    while let Some(x) = work.pop() {
        if !back.insert(x) {
            continue;
        }
        work.extend(
            g.predecessors(x)
                .iter()
                .map(|(_, s)| *s)
                .filter(|s| forward.contains(s)),
        );
    }
    forward.iter().any(|x| !back.contains(x))
}

/// A reference to the whole variable `s`.
fn whole_variable(p: &Program, s: SymbolId) -> VarRef {
    let sym = &p.symbols[s];
    let scope = p.scopes[sym.scope].attrs.get("vertex_id").unwrap_or("1");
    VarRef::symbol(
        Attrs::new().with("vertex_id", "1"),
        scope,
        sym.attrs.get("symbol_id").unwrap_or(""),
    )
}

// ------------------------------------------------------------------ code

/// The action codes of `oad_revolve_next` (`xaif_revolve::runtime`).
mod code {
    pub const STORE: i64 = 1;
    pub const RESTORE: i64 = 2;
    pub const ADVANCE: i64 = 3;
    pub const TAPE: i64 = 4;
    pub const ADJOINT: i64 = 5;
}

/// An arm of a dispatcher.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Arm {
    Store,
    Restore,
    Advance,
    Tape,
    Adjoint,
}

impl Arm {
    fn code(self) -> i64 {
        match self {
            Arm::Store => code::STORE,
            Arm::Restore => code::RESTORE,
            Arm::Advance => code::ADVANCE,
            Arm::Tape => code::TAPE,
            Arm::Adjoint => code::ADJOINT,
        }
    }
}

/// The variables a dispatcher's `oad_revolve_next` sets.
struct Dispatch {
    action: VarRef,
    count: VarRef,
}

fn integer_constant(v: i64) -> ArgValue {
    ArgValue::Constant(
        Attrs::new()
            .with("vertex_id", "1")
            .with("type", "integer")
            .with("value", v.to_string()),
    )
}

fn call(out: &mut Program, temps: &mut dyn Temps, name: &str, args: Vec<ArgValue>) -> StmtId {
    let id = temps.statement(name);
    out.stmts.alloc(inlinable_call(name, &id, args))
}

fn next_call(out: &mut Program, temps: &mut dyn Temps, d: &Dispatch) -> StmtId {
    call(
        out,
        temps,
        "oad_revolve_next",
        vec![
            ArgValue::Variable(d.action.clone()),
            ArgValue::Variable(d.count.clone()),
        ],
    )
}

/// The taping sweep of checkpointed loop `region` (placeholder 2): the
/// loop's initialization, its trip count, `oad_revolve_begin`, and a
/// dispatcher that stores snapshots, advances and tapes the last step.
pub(crate) fn taping_sweep(
    c: &Ctx<'_>,
    b: &mut CfgBuilder,
    out: &mut Program,
    temps: &mut dyn Temps,
    region: &Region,
    cl: &CheckpointedLoop,
    pending: &mut Pending,
) {
    let Region::Loop { body, .. } = region else {
        return;
    };
    let d = Dispatch {
        action: temps.integer(out),
        count: temps.integer(out),
    };
    let steps = temps.integer(out);
    let trip = trip_count(&cl.header);
    let mut lhs = steps.clone();
    lhs.attrs.discard("vertex_id");
    let count = out
        .stmts
        .alloc(assignment(&temps.statement("ckp_steps"), lhs, trip));
    let begin = call(
        out,
        temps,
        "oad_revolve_begin",
        vec![
            ArgValue::Variable(steps),
            integer_constant(i64::try_from(cl.snapshots).unwrap_or(i64::MAX)),
            integer_constant(cl.line),
        ],
    );
    let next = next_call(out, temps, &d);
    let head = vec![cl.init, count, begin, next];
    dispatch(
        c,
        b,
        out,
        temps,
        (body, cl),
        head,
        &[Arm::Store, Arm::Advance, Arm::Tape],
        &d,
        pending,
    );
}

/// The adjoint sweep of checkpointed loop `region` (placeholder 3):
/// `oad_revolve_resume` and a dispatcher that reverses the step taped
/// last and drives the rest of the schedule.
pub(crate) fn adjoint_sweep(
    c: &Ctx<'_>,
    b: &mut CfgBuilder,
    out: &mut Program,
    temps: &mut dyn Temps,
    region: &Region,
    cl: &CheckpointedLoop,
    pending: &mut Pending,
) {
    let Region::Loop { body, .. } = region else {
        return;
    };
    let d = Dispatch {
        action: temps.integer(out),
        count: temps.integer(out),
    };
    let resume = call(
        out,
        temps,
        "oad_revolve_resume",
        vec![integer_constant(cl.line)],
    );
    let next = next_call(out, temps, &d);
    dispatch(
        c,
        b,
        out,
        temps,
        (body, cl),
        vec![resume, next],
        &[
            Arm::Store,
            Arm::Restore,
            Arm::Advance,
            Arm::Tape,
            Arm::Adjoint,
        ],
        &d,
        pending,
    );
}

/// `(e1 − i + s) / s` after the initialization `i = e0`: the trip count of
/// `DO i = e0, e1, s` as the interpreter and Fortran fix it on entry
/// (negative for none; the run-time takes it as 0).
fn trip_count(h: &ExplicitLoop) -> xaif_model::Expr {
    let stride = |b: &mut ExprBuilder| -> usize {
        match &h.step {
            Step::Constant(c) => int_const(b, *c),
            Step::Stride { expr, negated } => {
                let s = embed(b, expr);
                if *negated {
                    let zero = int_const(b, 0);
                    b.intrinsic("sub_scal_scal", &[zero, s])
                } else {
                    s
                }
            }
        }
    };
    let mut b = ExprBuilder::new();
    let e1 = embed(&mut b, &h.bound);
    let i = b.reference(&value_ref(&h.var));
    let span = b.intrinsic("sub_scal_scal", &[e1, i]);
    let s = stride(&mut b);
    let widened = b.intrinsic("add_scal_scal", &[span, s]);
    let s = stride(&mut b);
    b.intrinsic("div_scal_scal", &[widened, s]);
    b.finish()
}

/// `head` (a block), then `while (action /= 0)`: a branch on the action
/// to `arms`, and the next action. `pending` ends holding the loop's exit.
#[allow(clippy::too_many_arguments)]
fn dispatch(
    c: &Ctx<'_>,
    b: &mut CfgBuilder,
    out: &mut Program,
    temps: &mut dyn Temps,
    (body, cl): (&[Region], &CheckpointedLoop),
    head: Vec<StmtId>,
    arms: &[Arm],
    d: &Dispatch,
    pending: &mut Pending,
) {
    let head = b.block(out, &c.scope_id, head);
    connect(b, out, pending, &head);
    let mut cond = ExprBuilder::new();
    let a = cond.reference(&d.action);
    let zero = int_const(&mut cond, 0);
    let ne = cond.vertex(
        Attrs::new().with("name", "not_equal"),
        ExprVertexKind::BooleanOperation,
    );
    cond.edge(a, ne, 1);
    cond.edge(zero, ne, 2);
    let w = b.vertex(out, Attrs::new(), VertexKind::PreLoop(Some(cond.finish())));
    b.edge(out, &head, &w, None);
    let mut sel = ExprBuilder::new();
    sel.reference(&d.action);
    let branch = b.vertex(out, Attrs::new(), VertexKind::Branch(Some(sel.finish())));
    b.edge(out, &w, &branch, Some(1));
    let mut ends: Pending = Vec::new();
    for &arm in arms {
        let mut p: Pending = vec![(branch.clone(), Some(arm.code()))];
        match arm {
            Arm::Store | Arm::Restore => {
                snapshot_arm(c, b, out, temps, cl, arm == Arm::Store, &mut p)
            }
            Arm::Advance => advance(c, b, out, temps, body, cl, d, &mut p),
            Arm::Tape => {
                let copy = c.fresh_copy();
                taping_seq(&copy, b, out, temps, body, &mut p);
                update_block(&copy, b, out, cl, &mut p);
            }
            Arm::Adjoint => adjoint_seq(c, b, out, temps, body, &mut p),
        }
        ends.extend(p);
    }
    let end = b.vertex(out, Attrs::new(), VertexKind::EndBranch);
    connect(b, out, &mut ends, &end);
    let next = next_call(out, temps, d);
    let next_block = b.block(out, &c.scope_id, vec![next]);
    b.edge(out, &end, &next_block, None);
    let end_loop = b.vertex(out, Attrs::new(), VertexKind::EndLoop);
    b.edge(out, &next_block, &end_loop, None);
    b.edge(out, &end_loop, &w, None);
    pending.push((w, None));
}

/// The store (or restore, in reverse order) calls of the loop's state,
/// those of optional formals under `if (present(f))`.
fn snapshot_arm(
    c: &Ctx<'_>,
    b: &mut CfgBuilder,
    out: &mut Program,
    temps: &mut dyn Temps,
    cl: &CheckpointedLoop,
    store: bool,
    p: &mut Pending,
) {
    let name = if store {
        crate::runtime::STORE_CALL
    } else {
        crate::runtime::RESTORE_CALL
    };
    let mut refs: Vec<&(VarRef, bool)> = cl.state.iter().collect();
    if !store {
        refs.reverse();
    }
    let mut plain: Vec<StmtId> = Vec::new();
    let flush =
        |b: &mut CfgBuilder, out: &mut Program, plain: &mut Vec<StmtId>, p: &mut Pending| {
            if !plain.is_empty() {
                let blk = b.block(out, &c.scope_id, std::mem::take(plain));
                connect(b, out, p, &blk);
                p.push((blk, None));
            }
        };
    for (r, optional) in refs {
        let stmt = call(out, temps, name, vec![ArgValue::Variable(value_ref(r))]);
        if !optional {
            plain.push(stmt);
            continue;
        }
        flush(b, out, &mut plain, p);
        let mut cond = ExprBuilder::new();
        let arg = cond.reference(&value_ref(r));
        cond.intrinsic("present", &[arg]);
        let branch = b.vertex(out, Attrs::new(), VertexKind::Branch(Some(cond.finish())));
        connect(b, out, p, &branch);
        let blk = b.block(out, &c.scope_id, vec![stmt]);
        b.edge(out, &branch, &blk, Some(1));
        let end = b.vertex(out, Attrs::new(), VertexKind::EndBranch);
        b.edge(out, &blk, &end, None);
        b.edge(out, &branch, &end, None);
        p.push((end, None));
    }
    flush(b, out, &mut plain, p);
}

/// `do k = 1, count`: the plain body and the loop's update.
#[allow(clippy::too_many_arguments)]
fn advance(
    c: &Ctx<'_>,
    b: &mut CfgBuilder,
    out: &mut Program,
    temps: &mut dyn Temps,
    body: &[Region],
    cl: &CheckpointedLoop,
    d: &Dispatch,
    p: &mut Pending,
) {
    let k = temps.integer(out);
    let init = set_int(out, temps, &k, 1);
    let update = increment(out, temps, &k);
    let for_loop = b.vertex(
        out,
        Attrs::new().with("reversal", "anonymous"),
        VertexKind::ForLoop {
            init: Some(init),
            condition: Some(at_most(&k, &d.count)),
            update: Some(update),
        },
    );
    connect(b, out, p, &for_loop);
    let mut inner: Pending = vec![(for_loop.clone(), Some(1))];
    let copy = c.fresh_copy();
    plain_seq(&copy, b, out, body, &mut inner);
    update_block(&copy, b, out, cl, &mut inner);
    let end = b.vertex(out, Attrs::new(), VertexKind::EndLoop);
    connect(b, out, &mut inner, &end);
    b.edge(out, &end, &for_loop, None);
    p.push((for_loop, None));
}

/// A block with the loop's update (in copy `c`'s own statement), after
/// the dangling edges `p`, which end holding its exit.
fn update_block(
    c: &Ctx<'_>,
    b: &mut CfgBuilder,
    out: &mut Program,
    cl: &CheckpointedLoop,
    p: &mut Pending,
) {
    let VertexKind::BasicBlock(stmts) =
        c.own_statements(out, VertexKind::BasicBlock(vec![cl.update]))
    else {
        unreachable!("a block stays a block")
    };
    let upd = b.block(out, &c.scope_id, stmts);
    connect(b, out, p, &upd);
    p.push((upd, None));
}

/// A copy of `regions` as plain code (placeholder 1's statements: the
/// blocks with their argument conversions), vertex ids under `c`'s
/// prefix.
fn plain_seq(
    c: &Ctx<'_>,
    b: &mut CfgBuilder,
    out: &mut Program,
    regions: &[Region],
    pending: &mut Pending,
) {
    let plain = c.checkpoints.map(|k| k.plain);
    let mut pendings: Vec<Pending> = vec![std::mem::take(pending)];
    // Open branches (the copy and its arms' ends) and loops (the copy).
    let mut branches: Vec<(String, Pending)> = Vec::new();
    let mut loops: Vec<String> = Vec::new();
    walk(regions, false, |event| {
        let top = pendings.len() - 1;
        match event {
            Event::Block(v) | Event::Pass(v) => {
                let kind = match plain.and_then(|m| m.get(&v)) {
                    Some(stmts) => VertexKind::BasicBlock(stmts.clone()),
                    None => c.original.vertices[v].kind.clone(),
                };
                let id = copy_vertex(c, b, out, v, kind);
                connect(b, out, &mut pendings[top], &id);
                pendings[top].push((id, None));
            }
            Event::BranchStart(Region::Branch { vertex, .. }) => {
                let kind = c.original.vertices[*vertex].kind.clone();
                let id = copy_vertex(c, b, out, *vertex, kind);
                connect(b, out, &mut pendings[top], &id);
                branches.push((id, Vec::new()));
            }
            Event::ArmStart { edge, .. } => {
                if let Some((id, _)) = branches.last() {
                    let value = c.original.edges[edge].condition_value();
                    pendings.push(vec![(id.clone(), value)]);
                }
            }
            Event::ArmEnd { .. } => {
                let arm = pendings.pop().unwrap_or_default();
                if let Some((_, ends)) = branches.last_mut() {
                    ends.extend(arm);
                }
            }
            Event::BranchEnd(Region::Branch { end, .. }) => {
                let (_, mut ends) = branches.pop().unwrap_or_default();
                let id = copy_vertex(c, b, out, *end, VertexKind::EndBranch);
                connect(b, out, &mut ends, &id);
                pendings[top].push((id, None));
            }
            Event::LoopStart(Region::Loop {
                vertex, body_edge, ..
            }) => {
                let kind = c.original.vertices[*vertex].kind.clone();
                let id = copy_vertex(c, b, out, *vertex, kind);
                connect(b, out, &mut pendings[top], &id);
                let value = c.original.edges[*body_edge].condition_value();
                pendings.push(vec![(id.clone(), value)]);
                loops.push(id);
            }
            Event::LoopEnd(Region::Loop { end, exit_edge, .. }) => {
                let mut body = pendings.pop().unwrap_or_default();
                let top = pendings.len() - 1;
                let loop_id = loops.pop().unwrap_or_default();
                let id = copy_vertex(c, b, out, *end, VertexKind::EndLoop);
                connect(b, out, &mut body, &id);
                b.edge(out, &id, &loop_id, None);
                let value = c.original.edges[*exit_edge].condition_value();
                pendings[top].push((loop_id, value));
            }
            Event::BranchStart(_)
            | Event::BranchEnd(_)
            | Event::LoopStart(_)
            | Event::LoopEnd(_) => {}
        }
    });
    *pending = pendings.pop().unwrap_or_default();
}
