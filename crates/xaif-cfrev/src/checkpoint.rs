//! Marked loops (`--checkpoint-loop`, `--fixed-point-loop`,
//! `--independent-loop`): the marks, the loops they name (found, or
//! refused with the element located, before anything is transformed), and
//! what each loop's code needs: how it is reversed, its header, and the
//! variables of its snapshots.
//!
//! - A counted `ForLoop` that no jump leaves, marked `--checkpoint-loop`,
//!   is reversed by binomial checkpointing (its trip count is known when it
//!   starts); a `PreLoop`, a `PostLoop`, a `ForLoop` left by an exit or one
//!   whose trip count is not known when it starts, by online checkpointing.
//! - `--fixed-point-loop`: Christianson's two-phase adjoint; the loop must
//!   iterate to convergence (a while or post-test loop, or a loop left by
//!   an exit: a counted loop that no exit leaves is refused) and carry
//!   active state from one iteration to the next.
//! - `--independent-loop`: a counted loop whose iterations
//!   `xaif_dataflow::loops` proves independent; each is taped and reversed
//!   on its own.
//!
//! The code is made by [`crate::loopgen`]; the calls, their arguments and
//! the Fortran module that implements them are described in
//! `docs/checkpointing.md`; the snapshot holds the state
//! `xaif_dataflow::snapshot` determines (`docs/decisions.md`). The
//! schedules live in `xaif-revolve`, which this crate does not need: it
//! only emits calls.

use rustc_hash::{FxHashMap, FxHashSet};
use xaif_linearize::context::Ctx as InputCtx;
use xaif_linearize::tangent::TransformError;
use xaif_model::{
    Attrs, CfgGraph, CfgId, Program, RoutineBody, RoutineId, ScopeId, StmtId, SymbolId, VarRef,
    VertexId, VertexKind,
};

use crate::explicit::ExplicitLoop;
use crate::marks::{Mark, MarkKind};
use crate::region::{walk, Event, Region};

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
    pub(crate) kind: MarkKind,
    pub(crate) line: i64,
    /// The flag, for messages (`--checkpoint-loop head:12`).
    pub(crate) text: String,
}

/// How a marked loop is reversed.
#[derive(Clone, Debug)]
pub(crate) enum Scheme {
    /// Binomial checkpointing of a counted loop.
    Binomial {
        header: ExplicitLoop,
        snapshots: u64,
    },
    /// Online checkpointing of a loop that runs itself.
    Online { snapshots: u64 },
    /// The two-phase adjoint of a fixed-point loop; `measured` are the
    /// active variables it carries from one iteration to the next, whose
    /// adjoints measure its convergence; `checked` those of them its
    /// statements read (the `x` of `x ← F(x, p)`), whose values an
    /// iteration at the fixed point leaves unchanged.
    FixedPoint {
        tolerance: f64,
        max_iterations: u64,
        measured: Vec<VarRef>,
        checked: Vec<VarRef>,
    },
    /// Independent iterations, each taped and reversed on its own.
    Independent { header: ExplicitLoop },
}

impl Scheme {
    /// Whether the loop runs its own header in the taping sweep.
    pub(crate) fn runs_itself(&self) -> bool {
        !matches!(self, Scheme::Binomial { .. })
    }
}

/// What the code of one marked loop needs.
#[derive(Clone, Debug)]
pub struct CheckpointedLoop {
    pub(crate) scheme: Scheme,
    /// The `ForLoop`'s initialization and update (none for while loops).
    pub(crate) init: Option<StmtId>,
    pub(crate) update: Option<StmtId>,
    pub(crate) line: i64,
    /// The snapshot's variables, and whether each is an optional formal
    /// some call leaves out (stored and restored only when present).
    pub(crate) state: Vec<(VarRef, bool)>,
}

/// Located error at a vertex of the input.
pub(crate) fn at_vertex(p: &Program, v: VertexId, message: String) -> TransformError {
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
/// located, what cannot be marked before anything is transformed.
pub(crate) fn resolve(
    p: &Program,
    marks: &[Mark],
    decoration: xaif_model::Decoration,
) -> Result<FxHashMap<RoutineId, Vec<Marked>>, TransformError> {
    let mut out: FxHashMap<RoutineId, Vec<Marked>> = FxHashMap::default();
    if marks.len() > MAX_MARKED_LOOPS {
        return Err(TransformError::Input(format!(
            "{} loops marked with --checkpoint-loop, --fixed-point-loop and --independent-loop: at most {MAX_MARKED_LOOPS}",
            marks.len()
        )));
    }
    let mut seen: FxHashMap<VertexId, String> = FxHashMap::default();
    for mark in marks {
        let text = mark.flag_text();
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
        if matches!(mark.kind, MarkKind::Independent)
            && !matches!(p.vertices[v].kind, VertexKind::ForLoop { .. })
        {
            return Err(at_vertex(
                p,
                v,
                format!(
                    "{text}: a while loop's iterations cannot be independent: each depends on \
                     the test of the one before (a counted ForLoop can be marked)"
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
            kind: mark.kind,
            line: mark.line,
            text,
        });
    }
    for (&rid, marked) in &out {
        check_depth(p, rid, marked)?;
    }
    Ok(out)
}

/// At most this many marked loops nested in one another in one routine
/// (`docs/limits.md`): each level's code holds its body in plain, taping
/// and adjoint form, with the levels inside in each; the output grows with
/// the square of the depth (measured: 8.9 MB at 16 levels of a
/// one-statement body).
pub const MAX_MARKED_DEPTH: usize = 16;

/// Refuses, at the loop too deep, marked loops nested more than
/// [`MAX_MARKED_DEPTH`] deep in routine `rid` (before any code is made).
fn check_depth(p: &Program, rid: RoutineId, marked: &[Marked]) -> Result<(), TransformError> {
    if marked.len() <= MAX_MARKED_DEPTH {
        return Ok(());
    }
    let RoutineBody::Graph(cfg) = &p.routines[rid].body else {
        return Ok(());
    };
    let g = CfgGraph::new(p, *cfg);
    let vertices: FxHashSet<VertexId> = marked.iter().map(|m| m.vertex).collect();
    // Each marked loop's body, and so the marked loops inside it.
    let mut inside: FxHashMap<VertexId, Vec<VertexId>> = FxHashMap::default();
    for m in marked {
        let body = body_vertices(p, &g, m.vertex);
        inside.insert(
            m.vertex,
            body.into_iter().filter(|v| vertices.contains(v)).collect(),
        );
    }
    // Depth of each marked loop: 1 + the number of marked loops whose body
    // holds it.
    let mut depth: FxHashMap<VertexId, usize> = marked.iter().map(|m| (m.vertex, 1)).collect();
    for list in inside.values() {
        for v in list {
            *depth.entry(*v).or_default() += 1;
        }
    }
    let deepest = marked
        .iter()
        .filter(|m| depth[&m.vertex] > MAX_MARKED_DEPTH)
        .max_by_key(|m| depth[&m.vertex]);
    if let Some(m) = deepest {
        return Err(at_vertex(
            p,
            m.vertex,
            format!(
                "{}: marked loops nested {} deep in routine `{}`: at most {MAX_MARKED_DEPTH} \
                 (the code of a marked loop holds its body three times, the marked loops \
                 inside it included; docs/limits.md)",
                m.text,
                depth[&m.vertex],
                p.routines[rid].symbol_name()
            ),
        ));
    }
    Ok(())
}

/// The vertices of the body of loop `v`: reached from its body edge
/// without passing the loop vertex or its successor (the target of its
/// exit edge), in the CFG's vertex order.
pub(crate) fn body_vertices(p: &Program, g: &CfgGraph, v: VertexId) -> Vec<VertexId> {
    let succ = g.successors(v);
    let body = succ
        .iter()
        .find(|(e, _)| p.edges[*e].condition_value() == Some(1))
        .map(|(_, t)| *t);
    let after = succ
        .iter()
        .find(|(e, _)| p.edges[*e].condition_value() != Some(1))
        .map(|(_, t)| *t);
    let mut seen: FxHashSet<VertexId> = FxHashSet::default();
    let mut work: Vec<VertexId> = body.into_iter().collect();
    while let Some(x) = work.pop() {
        if x == v || Some(x) == after || !seen.insert(x) {
            continue;
        }
        work.extend(g.successors(x).iter().map(|(_, t)| *t));
    }
    g.vertices
        .iter()
        .copied()
        .filter(|x| seen.contains(x))
        .collect()
}

/// The routine with code that `name` names: its `symbol_id`, or its name
/// as the user wrote it (`-F`'s decoration removed, any case). An error
/// is located at the call graph (the file's `CallGraph` element).
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
    let at_call_graph = |message: String| TransformError::At {
        message,
        span: p.attrs.span,
        element: "CallGraph",
    };
    match matching.as_slice() {
        [one] => Ok(*one),
        [] => {
            let names: Vec<&str> = with_code
                .iter()
                .map(|(r, _)| p.routines[*r].symbol_name())
                .collect();
            Err(at_call_graph(format!(
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
            Err(at_call_graph(format!(
                "{text}: `{name}` names several routines ({}): give the symbol_id",
                names.join(", ")
            )))
        }
    }
}

/// What the data-flow analysis says about the marked loops: each one's
/// snapshot variables, and the loop-carried active variables (fixed-point
/// loops) and a carried dependence (independent loops).
#[derive(Default)]
pub(crate) struct LoopFacts {
    pub(crate) states: FxHashMap<VertexId, Vec<SymbolId>>,
    pub(crate) carried: FxHashMap<VertexId, Vec<SymbolId>>,
    pub(crate) fed: FxHashMap<VertexId, Vec<SymbolId>>,
    pub(crate) dependence: FxHashMap<VertexId, xaif_dataflow::loops::Dependence>,
}

/// The [`LoopFacts`] of every marked loop, from one data-flow analysis of
/// `p`. `opaque` (a marker that may stand for a store the XAIF does not
/// carry) makes every variable a loop reads part of its state.
pub(crate) fn loop_facts(
    p: &Program,
    marked: &FxHashMap<RoutineId, Vec<Marked>>,
    pessimistic: bool,
    opaque: bool,
) -> Result<LoopFacts, TransformError> {
    let mut loops: Vec<(RoutineId, VertexId)> = marked
        .iter()
        .flat_map(|(r, ms)| ms.iter().map(move |m| (*r, m.vertex)))
        .collect();
    loops.sort_unstable();
    let kind_of: FxHashMap<VertexId, MarkKind> = marked
        .values()
        .flatten()
        .map(|m| (m.vertex, m.kind))
        .collect();
    let mut queries = Vec::new();
    let symbols = xaif_model::SymbolIndex::new(p);
    for &(r, v) in &loops {
        let kind = kind_of[&v];
        if !matches!(kind, MarkKind::FixedPoint { .. } | MarkKind::Independent) {
            continue;
        }
        let RoutineBody::Graph(cfg) = &p.routines[r].body else {
            continue;
        };
        let g = CfgGraph::new(p, *cfg);
        let independence = match kind {
            MarkKind::Independent => loop_variable(p, &symbols, v),
            _ => None,
        };
        queries.push(xaif_dataflow::loops::LoopQuery {
            routine: r,
            vertex: v,
            body: body_vertices(p, &g, v),
            independence,
        });
    }
    let (states, answers) = xaif_dataflow::analyze_marked_loops(
        p,
        xaif_dataflow::Solver::default(),
        pessimistic,
        &loops,
        !opaque,
        &queries,
    )
    .map_err(|e| {
        TransformError::Input(format!(
            "marked loops: the data-flow analysis that decides what a snapshot holds failed: {e}"
        ))
    })?;
    let mut facts = LoopFacts {
        states: loops.iter().map(|(_, v)| *v).zip(states).collect(),
        ..LoopFacts::default()
    };
    for (q, a) in queries.iter().zip(answers) {
        facts.carried.insert(q.vertex, a.carried);
        facts.fed.insert(q.vertex, a.fed);
        if let Some(d) = a.dependence {
            facts.dependence.insert(q.vertex, d);
        }
    }
    Ok(facts)
}

/// The variable a `ForLoop`'s initialization assigns.
fn loop_variable(p: &Program, symbols: &xaif_model::SymbolIndex, v: VertexId) -> Option<SymbolId> {
    let VertexKind::ForLoop {
        init: Some(init), ..
    } = &p.vertices[v].kind
    else {
        return None;
    };
    let xaif_model::StmtKind::Assignment(a) = &p.stmts[*init].kind else {
        return None;
    };
    symbols.resolve(a.lhs.graph.symbol_ref()?)
}

/// The marked loops of one routine (`marked`, with their `facts`),
/// checked: each loop's body must be structured (exits of online and
/// fixed-point loops aside) and entered and left only through the loop
/// (the rest of a routine may be unstructured: such a routine is reversed
/// by block enumeration, the loop as one unit); a binomial or independent
/// loop counted, its trip count known when it starts.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan(
    ctx: &InputCtx<'_>,
    rid: RoutineId,
    cfg: CfgId,
    scope: ScopeId,
    regions: Option<&[Region]>,
    marked: &[Marked],
    facts: &LoopFacts,
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
    let exits: FxHashSet<VertexId> = marked.iter().map(|m| m.vertex).collect();
    // Loops of a routine without a region tree, parsed one by one.
    let parsed: Vec<Option<Region>> = match regions {
        Some(_) => Vec::new(),
        None => marked
            .iter()
            .map(|m| crate::region::parse_loop(p, cfg, m.vertex, &exits))
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
                "the loop is left by a jump other than an exit to its successor (a Goto \
                 elsewhere, a return, an exit of an enclosing loop), or by an exit from a \
                 branch two of whose arms go on to code after it"
            } else {
                "its body is not structured, or a jump enters it"
            };
            return Err(at_vertex(
                p,
                m.vertex,
                format!("{}: cannot be reversed so: {why}", m.text),
            ));
        };
        out.insert(
            m.vertex,
            checkpointed_loop(ctx, scope, m, body, facts, &optional)?,
        );
    }
    Ok(out)
}

/// Whether a loop body holds an exit of its own loop (at any depth of
/// branches; an exit in a loop nested in it leaves only that loop, and
/// does not make the outer loop's trip count unknown).
fn has_exit(body: &[Region]) -> bool {
    let mut found = false;
    let mut depth = 0usize;
    walk(body, false, |e| match e {
        Event::LoopStart(_) => depth += 1,
        Event::LoopEnd(_) => depth -= 1,
        Event::Exit => found |= depth == 0,
        _ => {}
    });
    found
}

/// What the code of marked loop `m` (body `body`) needs.
fn checkpointed_loop(
    ctx: &InputCtx<'_>,
    scope: ScopeId,
    m: &Marked,
    body: &[Region],
    facts: &LoopFacts,
    optional: &FxHashSet<SymbolId>,
) -> Result<CheckpointedLoop, TransformError> {
    let p = ctx.p;
    let exits = has_exit(body);
    let header = if exits {
        None
    } else {
        counted(ctx, scope, m.vertex, body)
    };
    let (init, update) = match p.vertices[m.vertex].kind {
        VertexKind::ForLoop { init, update, .. } => (init, update),
        _ => (None, None),
    };
    let scheme = match (m.kind, header) {
        (MarkKind::Checkpoint { snapshots }, Some(header)) => {
            Scheme::Binomial { header, snapshots }
        }
        (MarkKind::Checkpoint { snapshots }, None) => Scheme::Online { snapshots },
        (MarkKind::Independent, Some(header)) => {
            if let Some(d) = facts.dependence.get(&m.vertex) {
                return Err(dependence_error(p, m, d));
            }
            Scheme::Independent { header }
        }
        (MarkKind::Independent, None) => {
            let why = if exits {
                "the loop is left by an exit, so its iterations are not independent of one \
                 another's outcome"
            } else {
                "its trip count is not known when it starts (a counted loop `i = e0; i <= e1; \
                 i = i + c`, whose bounds and step its body does not change, can be marked)"
            };
            return Err(at_vertex(
                p,
                m.vertex,
                format!(
                    "{}: cannot be reversed as independent iterations: {why}",
                    m.text
                ),
            ));
        }
        (MarkKind::FixedPoint { .. }, Some(_)) => {
            // Its trip count is fixed when it starts: it stops whatever its
            // state does, and reversing its last iteration to convergence
            // would differentiate a fixed point it never reached (the
            // derivative of `y = x * y` run three times is not that of
            // `y = 0`), with every sign of convergence.
            return Err(at_vertex(
                p,
                m.vertex,
                format!(
                    "{}: not a fixed-point iteration: a counted loop that no exit leaves runs \
                     the same number of iterations whatever its state does, so it does not \
                     iterate to convergence (a while loop, or a counted loop left by an exit \
                     when its state has converged, can be marked; --checkpoint-loop reverses \
                     this one)",
                    m.text
                ),
            ));
        }
        (
            MarkKind::FixedPoint {
                tolerance,
                max_iterations,
            },
            None,
        ) => {
            let carried = facts.carried.get(&m.vertex).cloned().unwrap_or_default();
            if carried.is_empty() {
                return Err(at_vertex(
                    p,
                    m.vertex,
                    format!(
                        "{}: not a fixed-point iteration: no active variable is carried from \
                         one iteration to the next (written by one and read by the next)",
                        m.text
                    ),
                ));
            }
            Scheme::FixedPoint {
                tolerance,
                max_iterations,
                measured: carried.iter().map(|&s| whole_variable(p, s)).collect(),
                checked: facts
                    .fed
                    .get(&m.vertex)
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
                    .iter()
                    .map(|&s| whole_variable(p, s))
                    .collect(),
            }
        }
    };
    let mut state = Vec::new();
    for &s in facts
        .states
        .get(&m.vertex)
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
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
        scheme,
        init,
        update,
        line: m.line,
        state,
    })
}

/// The refusal of a loop whose iterations depend on one another: the
/// variable and both statements, located at the statement that writes it.
fn dependence_error(
    p: &Program,
    m: &Marked,
    d: &xaif_dataflow::loops::Dependence,
) -> TransformError {
    let name = p.symbols[d.symbol].name();
    let describe = |s: StmtId| {
        let stmt = &p.stmts[s];
        let id = stmt.attrs.get("statement_id").unwrap_or("?");
        format!("statement `{id}` ({})", stmt_element(stmt))
    };
    let message = if d.writer == d.reader {
        format!(
            "{}: the iterations are not independent: {} writes `{name}` and reads what \
             another iteration wrote",
            m.text,
            describe(d.writer)
        )
    } else {
        format!(
            "{}: the iterations are not independent: {} writes `{name}` and {} reads it \
             (or writes it) in another iteration",
            m.text,
            describe(d.writer),
            describe(d.reader)
        )
    };
    TransformError::Between {
        message,
        first: (
            p.stmts[d.writer].attrs.span,
            stmt_element(&p.stmts[d.writer]),
        ),
        second: (
            p.stmts[d.reader].attrs.span,
            stmt_element(&p.stmts[d.reader]),
        ),
    }
}

/// A statement's element name.
fn stmt_element(s: &xaif_model::Stmt) -> &'static str {
    match &s.kind {
        xaif_model::StmtKind::Assignment(_) => "Assignment",
        xaif_model::StmtKind::SubroutineCall(_) => "SubroutineCall",
        xaif_model::StmtKind::InlinableCall(_) => "InlinableSubroutineCall",
        xaif_model::StmtKind::Marker => "Marker",
        xaif_model::StmtKind::DerivativePropagator(_) => "DerivativePropagator",
    }
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
pub(crate) fn whole_variable(p: &Program, s: SymbolId) -> VarRef {
    let sym = &p.symbols[s];
    let scope = p.scopes[sym.scope].attrs.get("vertex_id").unwrap_or("1");
    VarRef::symbol(
        Attrs::new().with("vertex_id", "1"),
        scope,
        sym.attrs.get("symbol_id").unwrap_or(""),
    )
}
