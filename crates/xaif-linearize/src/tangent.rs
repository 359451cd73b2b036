//! Tangent-linear mode: every basic block preaccumulated, derivatives
//! propagated forward after each sequence, active/passive argument
//! conversions around calls.
//!
//! The output follows the reference engine's conventions
//! (`../shared/docs/engine-conventions.md` §2–§4 and §8): plain
//! `ControlFlowGraph`s, temporaries declared in the routine's scope with
//! `temp="1"`, `DerivativePropagator`s (or, with `-H`, the reference's
//! tangent inlinable calls `setderiv(tgt, src)`, `set_neg_deriv`,
//! `inc_deriv`, `dec_deriv`, `zero_deriv(x)`, `sax(a, x, y)`,
//! `saxpy(a, x, y)`, suffixed `_s<rank>` per argument where no argument
//! is an array section), and
//! `oad_convert` around calls whose actual and formal activity differ.

use crate::absent::guard_absent;
use serde::Serialize;
use xaif_model::{
    build::inlinable_call, ArgValue, Attrs, AxTerm, CallArg, CfgId, Expr, NonInlinable,
    NonInlinableCatalogue, Program, PropEntry, PropKind, Routine, RoutineBody, RoutineId,
    RoutineIndex, ScopeId, Stmt, StmtId, StmtKind, SymbolId, VarRef, VertexKind,
};

use crate::catalogue::Catalogue;
use crate::context::{Ctx, ValueType};
use crate::flatten::{flatten, FlattenError, FlattenOptions, GraphStats, Piece};
use crate::preaccumulate::{preaccumulate, Factor, PreaccError, Preaccumulated, Slot, Target};
use crate::temps::{
    add, declare, deriv_ref, for_each_variable_subscript, integer_temp, read_temp, set_temp,
    value_ref, Names, Temp, TempKind,
};

/// Options of the tangent-linear transformation (the reference driver's
/// flags that apply).
#[derive(Clone, Debug, Default)]
pub struct TangentOptions {
    /// `-S` and `-Q`.
    pub flatten: FlattenOptions,
    /// `-n`: one n-ary `Sax` per target.
    pub nary: bool,
    /// `-H`: propagators as inlinable calls.
    pub inline_calls: bool,
    /// `-D`: zero the derivatives of active locals on entry.
    pub zero_locals: bool,
    /// `-p`: symbols forced passive.
    pub passive: Vec<String>,
    /// Elimination configuration (`-M`, `-A`, `-m`, `--heuristic`).
    pub elimination: xaif_elim::Config,
    /// Keep Graphviz text of every graph before and after elimination.
    pub dot: bool,
    /// `-r`: give transformed routines the program's prefix.
    pub rename: bool,
    /// `-F`: how the front end decorated names (for `-p` and `-w`).
    pub decoration: xaif_model::Decoration,
    /// `-w`: routines without a body that have hand-written wrappers.
    pub wrappers: Vec<String>,
    /// `-C`: append `countmult(n)` and `countadd(n)` with the block's
    /// operation counts to every basic block.
    pub counters: bool,
    /// `-I`: every formal argument gets intent inout.
    pub all_inout: bool,
    /// Eliminate ahead of the transformation on a second thread when the
    /// program is large enough (see [`crate::ahead`]; same output).
    pub ahead: bool,
}

/// Statistics of one basic block.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BlockStats {
    /// The block's `vertex_id`.
    pub block: String,
    /// Per graph.
    pub graphs: Vec<GraphStats>,
    /// Sum over the graphs.
    pub total: GraphStats,
}

/// Statistics of one routine.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RoutineStats {
    /// The routine's `symbol_id`.
    pub routine: String,
    /// Per basic block with graphs.
    pub blocks: Vec<BlockStats>,
    /// Sum over the blocks.
    pub total: GraphStats,
}

/// Statistics of a transformation (`--stats-json`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct TransformStats {
    /// Per routine.
    pub routines: Vec<RoutineStats>,
    /// Sum over the routines.
    pub total: GraphStats,
}

/// A graph kept for Graphviz output.
#[derive(Clone, Debug)]
pub struct DotGraph {
    /// Routine, block and graph number, for file names.
    pub name: String,
    /// Before elimination.
    pub before: String,
    /// After elimination.
    pub after: Option<String>,
    /// The graph before elimination in [`xaif_elim::Lcg::to_text`] form.
    pub lcg: String,
}

/// Why the transformation failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TransformError {
    /// A block could not be flattened or linearized.
    #[error("routine `{routine}`: {source}")]
    Flatten {
        /// The routine.
        routine: String,
        /// The cause.
        source: FlattenError,
    },
    /// Preaccumulation failed.
    #[error("routine `{routine}`: {source}")]
    Preaccumulation {
        /// The routine.
        routine: String,
        /// The cause.
        source: PreaccError,
    },
    /// A basic block's adjoint could not be built.
    #[error("routine `{routine}`: {source}")]
    Block {
        /// The routine.
        routine: String,
        /// The cause.
        source: crate::adjoint::AdjointError,
    },
    /// The input is already a transformation result or otherwise unusable.
    #[error("{0}")]
    Input(String),
    /// The sink of a streamed transformation failed (writing its output).
    #[error("{0}")]
    Output(String),
    /// What was asked of one element of the input cannot be done (a loop
    /// marked for checkpointing that cannot be checkpointed): located at
    /// the element.
    #[error("{message}")]
    At {
        /// Why.
        message: String,
        /// Where the element starts.
        span: xaif_model::Span,
        /// Its element name.
        element: &'static str,
    },
    /// What was asked cannot be done because of two elements of the input
    /// (a loop marked independent whose iterations share a variable: the
    /// statement that writes it and the one that reads it): located at
    /// the first, the second's line given too.
    #[error("{message}")]
    Between {
        /// Why.
        message: String,
        /// The first element's start and name.
        first: (xaif_model::Span, &'static str),
        /// The second element's start and name.
        second: (xaif_model::Span, &'static str),
    },
}

impl TransformError {
    /// Where the input element the error is about starts, and its element
    /// name, when the error concerns one statement: the caller, who knows
    /// the file, turns it into a line and column.
    pub fn location(&self) -> Option<(xaif_model::Span, &'static str)> {
        let flatten = match self {
            TransformError::Flatten { source, .. } => source,
            TransformError::Block {
                source: crate::adjoint::AdjointError::Flatten(source),
                ..
            } => source,
            TransformError::At { span, element, .. }
            | TransformError::Between {
                first: (span, element),
                ..
            } => return span.is_known().then_some((*span, *element)),
            _ => return None,
        };
        flatten
            .span
            .is_known()
            .then_some((flatten.span, flatten.element))
    }
}

impl TransformError {
    /// The second element an error is about, when it names two
    /// ([`TransformError::Between`]).
    pub fn second_location(&self) -> Option<(xaif_model::Span, &'static str)> {
        match self {
            TransformError::Between {
                second: (span, element),
                ..
            } => span.is_known().then_some((*span, *element)),
            _ => None,
        }
    }
}

/// The result of a transformation.
pub struct Transformed {
    /// The output program.
    pub program: Program,
    /// Statistics.
    pub stats: TransformStats,
    /// Graphs for Graphviz output (empty unless asked for).
    pub dots: Vec<DotGraph>,
}

/// The non-inlinable intrinsics with a direct action (`-N`).
#[derive(Clone, Debug, Default)]
pub struct DirectActions(Vec<String>);

impl DirectActions {
    /// The direct actions of catalogue `c` (none without one).
    pub fn new(c: Option<&NonInlinableCatalogue>) -> Self {
        DirectActions(
            c.map(|c| {
                c.entries
                    .iter()
                    .filter(|e| matches!(e, NonInlinable::DirectAction(_)))
                    .map(|e| e.name().to_string())
                    .collect()
            })
            .unwrap_or_default(),
        )
    }

    /// Whether intrinsic `name` has a direct action.
    pub fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|d| d == name)
    }
}

/// What every transformation of a program starts from.
pub struct Start<'p> {
    /// The gated input's context (activity with `-p`).
    pub ctx: Ctx<'p>,
    /// The output: a copy of the input that the transformation rewrites.
    pub out: Program,
    /// Names of new temporaries and statements.
    pub names: Names,
    /// The input's routines.
    pub routines: RoutineIndex,
    /// Direct actions (`-N`).
    pub direct: DirectActions,
}

impl<'p> Start<'p> {
    /// Refuses programs that are already transformation results.
    pub fn new(
        p: &'p Program,
        noninlinable: Option<&NonInlinableCatalogue>,
        passive: &[String],
    ) -> Result<Self, TransformError> {
        Self::with_names(
            p,
            noninlinable,
            passive,
            xaif_model::Decoration::Open64,
            &[],
        )
    }

    /// [`Start::new`] with the front end's naming style (`-F`) and the
    /// routines with hand-written wrappers (`-w`).
    pub fn with_names(
        p: &'p Program,
        noninlinable: Option<&NonInlinableCatalogue>,
        passive: &[String],
        decoration: xaif_model::Decoration,
        wrappers: &[String],
    ) -> Result<Self, TransformError> {
        Self::make(p, noninlinable, passive, decoration, wrappers, false)
    }

    /// [`Start::with_names`]; with `lazy_statements` the output starts
    /// without the input's statements, which a streamed transformation
    /// copies routine by routine (`Program::copy_statements_of`) before it
    /// transforms the routine.
    pub fn make(
        p: &'p Program,
        noninlinable: Option<&NonInlinableCatalogue>,
        passive: &[String],
        decoration: xaif_model::Decoration,
        wrappers: &[String],
        lazy_statements: bool,
    ) -> Result<Self, TransformError> {
        if p.is_output() {
            return Err(TransformError::Input(
                "the input is already a transformation result (it has derivative code)".into(),
            ));
        }
        Ok(Start {
            ctx: Ctx::with_names(p, passive, decoration, wrappers),
            out: if lazy_statements {
                p.clone_without_statements()
            } else {
                p.clone()
            },
            names: Names::new(p.attrs.get("prefix").unwrap_or("OpenAD_")),
            routines: RoutineIndex::new(p),
            direct: DirectActions::new(noninlinable),
        })
    }
}

/// Transforms a validated front-end program into tangent-linear XAIF.
pub fn tangent(
    p: &Program,
    catalogue: &Catalogue,
    noninlinable: Option<&NonInlinableCatalogue>,
    options: &TangentOptions,
) -> Result<Transformed, TransformError> {
    tangent_with(p, catalogue, noninlinable, options, None)
}

/// [`tangent`], handing every routine to `sink` as soon as it is complete
/// (see [`Finisher`]); the returned program then holds everything but the
/// routines' bodies. Not with `rename` (`-r` renames across routines).
pub fn tangent_streamed(
    p: &Program,
    catalogue: &Catalogue,
    noninlinable: Option<&NonInlinableCatalogue>,
    options: &TangentOptions,
    sink: RoutineSink<'_>,
) -> Result<Transformed, TransformError> {
    if options.rename {
        return Err(TransformError::Output(
            "-r renames across routines: the output cannot be streamed".into(),
        ));
    }
    tangent_with(p, catalogue, noninlinable, options, Some(sink))
}

/// Where a streamed transformation hands each finished routine: the
/// output program (the routine complete, ready to be written) and the
/// routine. An error stops the transformation.
pub type RoutineSink<'a> = &'a mut dyn FnMut(&mut Program, RoutineId) -> Result<(), String>;

/// Finishes routines one at a time for a streamed transformation: gives
/// the routine what the whole-program passes at the end would
/// (`formalArgCount` on calls, `-I` intents), hands it to the sink, then
/// drops every graph, vertex, edge and statement made since the
/// transformation started, so the output model holds one routine at a
/// time. Transformations build each routine's code from the input and
/// never refer to another routine's new elements, which makes the drop
/// safe; the finished routine's body must not be read afterwards.
pub struct Finisher<'a> {
    sink: RoutineSink<'a>,
    routines: RoutineIndex,
    all_inout: bool,
    marks: [usize; 4],
}

impl<'a> Finisher<'a> {
    /// A finisher for `out` as it is now (before any routine was
    /// transformed); `all_inout` is `-I` when the transformation leaves
    /// intents to the end.
    pub fn new(out: &Program, sink: RoutineSink<'a>, all_inout: bool) -> Self {
        Finisher {
            sink,
            routines: RoutineIndex::new(out),
            all_inout,
            marks: [
                out.cfgs.len(),
                out.vertices.len(),
                out.edges.len(),
                out.stmts.len(),
            ],
        }
    }

    /// Routine `r` of `out` is complete: finish it, hand it on, drop it.
    pub fn done(&mut self, out: &mut Program, r: RoutineId) -> Result<(), TransformError> {
        let (_, stmts) = out.routine_contents(r);
        crate::rename::complete_call_counts_of(out, &self.routines, &stmts);
        if self.all_inout {
            crate::rename::intents_inout(&mut out.routines[r]);
        }
        (self.sink)(out, r).map_err(TransformError::Output)?;
        let [cfgs, vertices, edges, stmts] = self.marks;
        out.cfgs.truncate(cfgs);
        out.vertices.truncate(vertices);
        out.edges.truncate(edges);
        out.stmts.truncate(stmts);
        Ok(())
    }
}

fn tangent_with(
    p: &Program,
    catalogue: &Catalogue,
    noninlinable: Option<&NonInlinableCatalogue>,
    options: &TangentOptions,
    sink: Option<RoutineSink<'_>>,
) -> Result<Transformed, TransformError> {
    // Calls that would convert an absent optional argument are made under
    // `if (present(f))` first (see `absent`).
    let guarded = guard_absent(p, &options.passive, options.decoration, &options.wrappers)?;
    let p = guarded.as_ref().unwrap_or(p);
    let lazy = sink.is_some();
    let Start {
        ctx,
        mut out,
        mut names,
        routines,
        direct,
    } = Start::make(
        p,
        noninlinable,
        &options.passive,
        options.decoration,
        &options.wrappers,
        lazy,
    )?;
    let is_direct = |name: &str| direct.contains(name);
    let mut stats = TransformStats::default();
    let mut dots = Vec::new();
    let mut finisher = sink.map(|sink| Finisher::new(&out, sink, options.all_inout));
    let memo = xaif_elim::Memo::new(&options.elimination);
    let ahead = if options.ahead {
        crate::ahead::Ahead::new(p, p.routines.ids())
    } else {
        None
    };
    let builder = crate::ahead::Builder {
        ctx: &ctx,
        catalogue,
        flatten: options.flatten,
        is_direct: &is_direct,
        memo: &memo,
        mode: xaif_elim::PropagationMode::Tangent,
    };
    crate::ahead::with_ahead(ahead.as_ref().map(|a| (a, &builder)), || {
        for (k, (rid, routine)) in p.routines.iter().enumerate() {
            if let Some(a) = &ahead {
                a.enter_routine(k);
            }
            if lazy {
                out.copy_statements_of(p, rid);
            }
            tangent_routine(
                p,
                &ctx,
                &mut out,
                &mut names,
                &routines,
                &is_direct,
                catalogue,
                (options, &memo, ahead.as_ref()),
                (rid, routine),
                &mut stats,
                &mut dots,
            )?;
            if let Some(f) = &mut finisher {
                f.done(&mut out, rid)?;
            }
        }
        Ok::<(), TransformError>(())
    })?;
    if finisher.is_none() {
        crate::rename::finish_program(&mut out, p, options.all_inout, options.rename);
    }
    Ok(Transformed {
        program: out,
        stats,
        dots,
    })
}

/// One routine of [`tangent`].
#[allow(clippy::too_many_arguments)]
fn tangent_routine(
    p: &Program,
    ctx: &Ctx<'_>,
    out: &mut Program,
    names: &mut Names,
    routines: &RoutineIndex,
    is_direct: &dyn Fn(&str) -> bool,
    catalogue: &Catalogue,
    (options, memo, ahead): (
        &TangentOptions,
        &xaif_elim::Memo,
        Option<&crate::ahead::Ahead<'_>>,
    ),
    (rid, routine): (RoutineId, &Routine),
    stats: &mut TransformStats,
    dots: &mut Vec<DotGraph>,
) -> Result<(), TransformError> {
    let RoutineBody::Graph(cfg) = &routine.body else {
        return Ok(());
    };
    let name = routine.symbol_name().to_string();
    let Some(scope) = routine
        .attrs
        .get("controlflowgraph_scope_id")
        .and_then(|s| ctx.symbols.scope(s))
    else {
        return Ok(());
    };
    let mut rstats = RoutineStats {
        routine: name.clone(),
        ..Default::default()
    };
    let vertices: Vec<_> = p.cfgs[*cfg].vertex_ids().collect();
    for v in vertices {
        let VertexKind::BasicBlock(stmts) = &p.vertices[v].kind else {
            continue;
        };
        let pieces =
            match ahead.and_then(|a| a.enter_block(stmts)) {
                Some(pieces) => pieces,
                None => flatten(ctx, catalogue, stmts, options.flatten, &is_direct).map_err(
                    |source| TransformError::Flatten {
                        routine: name.clone(),
                        source,
                    },
                )?,
            };
        let mut new_stmts = Vec::new();
        let mut bstats = BlockStats {
            block: p.vertices[v]
                .attrs
                .get("vertex_id")
                .unwrap_or("")
                .to_string(),
            ..Default::default()
        };
        for piece in &pieces {
            match piece {
                Piece::Seq(seq) => {
                    let mut target = Target { out, names, scope };
                    let pre = preaccumulate(
                        ctx,
                        &mut target,
                        seq,
                        memo,
                        xaif_elim::PropagationMode::Tangent,
                        options.dot,
                    )
                    .map_err(|source| TransformError::Preaccumulation {
                        routine: name.clone(),
                        source,
                    })?;
                    new_stmts.extend(pre.stmts.iter().copied());
                    emit_propagation(ctx, out, names, &pre, options, &mut new_stmts);
                    if seq.is_active() {
                        if let Some(before) = &pre.dot_before {
                            dots.push(DotGraph {
                                name: format!("{name}_{}_{}", bstats.block, bstats.graphs.len()),
                                before: before.clone(),
                                after: pre.dot_after.clone(),
                                lcg: pre.lcg_text.clone().unwrap_or_default(),
                            });
                        }
                        bstats.total.add(&pre.stats);
                        bstats.graphs.push(pre.stats);
                    }
                }
                Piece::Single(s) => single(
                    ctx,
                    out,
                    names,
                    scope,
                    routines,
                    *s,
                    &is_direct,
                    options,
                    &mut new_stmts,
                ),
            }
        }
        if options.counters {
            new_stmts.extend(counter_calls(out, &bstats.total));
        }
        out.vertices[v].kind = VertexKind::BasicBlock(new_stmts);
        if !bstats.graphs.is_empty() {
            rstats.total.add(&bstats.total);
            rstats.blocks.push(bstats);
        }
    }
    if options.zero_locals {
        zero_active_locals(ctx, out, rid, *cfg, scope);
    }
    stats.total.add(&rstats.total);
    stats.routines.push(rstats);
    Ok(())
}

/// `countmult(n)` and `countadd(n)` for a block whose derivative code
/// costs `stats` (`-C`): multiplications and divisions, additions and
/// subtractions, as the operation-count metric counts them.
pub fn counter_calls(out: &mut Program, stats: &GraphStats) -> Vec<StmtId> {
    let count = |name: &str, n: usize| {
        inlinable_call(
            name,
            &format!("inline_{name}"),
            vec![ArgValue::Constant(
                Attrs::new()
                    .with("vertex_id", "1")
                    .with("type", "integer")
                    .with("value", n.to_string()),
            )],
        )
    };
    let mult = count("countmult", stats.multiplications + stats.divisions);
    let add_ = count("countadd", stats.additions + stats.subtractions);
    vec![add(out, mult), add(out, add_)]
}

fn prop_entry(kind: PropKind) -> PropEntry {
    PropEntry {
        attrs: Attrs::new(),
        kind,
    }
}

/// Appends the forward propagation of a preaccumulated sequence.
pub fn emit_propagation(
    ctx: &Ctx<'_>,
    out: &mut Program,
    names: &mut Names,
    pre: &Preaccumulated,
    options: &TangentOptions,
    stmts: &mut Vec<StmtId>,
) {
    // Run-time shaped temporaries get their shape first.
    for (temp, like) in &pre.allocations {
        let id = names.statement("allocate");
        stmts.push(add(
            out,
            inlinable_call(
                "oad_AllocateMatching",
                &id,
                vec![
                    ArgValue::Variable(value_ref(temp)),
                    ArgValue::Variable(value_ref(like)),
                ],
            ),
        ));
    }
    let mut entries: Vec<PropEntry> = Vec::new();
    let d = |s: &Slot| deriv_ref(&s.var);
    for (save, var) in &pre.saves {
        entries.push(prop_entry(PropKind::SetDeriv {
            tgt: d(save),
            src: d(var),
        }));
    }
    for z in &pre.zeros {
        entries.push(prop_entry(PropKind::ZeroDeriv(deriv_ref(z))));
    }
    for step in &pre.steps {
        let tgt = d(&step.target);
        if options.nary {
            let terms = step
                .terms
                .iter()
                .map(|(f, s)| AxTerm {
                    attrs: Attrs::new(),
                    a: f.expr(),
                    x: d(s),
                })
                .collect();
            entries.push(prop_entry(PropKind::Sax { terms, y: tgt }));
            continue;
        }
        for (i, (f, s)) in step.terms.iter().enumerate() {
            let src = d(s);
            let first = i == 0;
            entries.push(prop_entry(match (f, first) {
                (Factor::Unit, true) => PropKind::SetDeriv {
                    tgt: tgt.clone(),
                    src,
                },
                (Factor::Unit, false) => PropKind::IncDeriv {
                    tgt: tgt.clone(),
                    src,
                },
                (Factor::MinusOne, true) => PropKind::SetNegDeriv {
                    tgt: tgt.clone(),
                    src,
                },
                (Factor::MinusOne, false) => PropKind::DecDeriv {
                    tgt: tgt.clone(),
                    src,
                },
                (f, first) => {
                    let terms = vec![AxTerm {
                        attrs: Attrs::new(),
                        a: f.expr(),
                        x: src,
                    }];
                    if first {
                        PropKind::Sax {
                            terms,
                            y: tgt.clone(),
                        }
                    } else {
                        PropKind::Saxpy {
                            terms,
                            y: tgt.clone(),
                        }
                    }
                }
            }));
        }
    }
    if entries.is_empty() {
        return;
    }
    if options.inline_calls {
        let ranks = temporary_ranks(pre);
        let shape_of = |r: &VarRef| -> (usize, bool) {
            let temp = r
                .graph
                .symbol_ref()
                .and_then(|a| a.get("symbol_id"))
                .and_then(|n| ranks.get(n));
            match temp {
                Some(&rank) => (rank, false),
                None => (
                    ctx.ref_shape(&r.graph).rank,
                    !r.graph.subscripts().is_empty(),
                ),
            }
        };
        for e in entries {
            for s in inline_form(names, e, &shape_of) {
                stmts.push(add(out, s));
            }
        }
    } else {
        stmts.push(add(
            out,
            Stmt {
                attrs: Attrs::new(),
                kind: StmtKind::DerivativePropagator(entries),
            },
        ));
    }
}

/// The ranks of the temporaries a sequence's propagation names (they
/// are referenced whole): propagation and saved-derivative temporaries,
/// and the factors' temporaries.
fn temporary_ranks(pre: &Preaccumulated) -> rustc_hash::FxHashMap<&str, usize> {
    fn slot<'p>(ranks: &mut rustc_hash::FxHashMap<&'p str, usize>, s: &'p Slot) {
        if s.temporary {
            if let Some(n) = s.var.graph.symbol_ref().and_then(|a| a.get("symbol_id")) {
                ranks.insert(n, s.rank);
            }
        }
    }
    let mut ranks = rustc_hash::FxHashMap::default();
    for step in &pre.steps {
        slot(&mut ranks, &step.target);
        for (_, source) in &step.terms {
            slot(&mut ranks, source);
        }
    }
    for (save, var) in &pre.saves {
        slot(&mut ranks, save);
        slot(&mut ranks, var);
    }
    for (factor, shape) in &pre.factors {
        if let Some(n) = factor.graph.symbol_ref().and_then(|a| a.get("symbol_id")) {
            ranks.insert(n, shape.rank);
        }
    }
    ranks
}

/// The name `-H` gives a tangent inlinable call: the reference engine's
/// (`setderiv`, `set_neg_deriv`, `inc_deriv`, `dec_deriv`, `zero_deriv`,
/// `sax`, `saxpy`), with `_s<rank>` for each argument in order when none
/// is an array section of rank one or more, the variants OpenAD's
/// inlining definitions provide.
fn inline_name(base: &str, args: &[(usize, bool)]) -> String {
    let mut name = base.to_string();
    if args.iter().any(|&(rank, section)| rank > 0 && section) {
        return name;
    }
    for &(rank, _) in args {
        name.push_str(&format!("_s{rank}"));
    }
    name
}

/// A propagator entry as tangent inlinable calls (target first for the
/// set/inc/dec family, `(a, x, y)` for `sax`/`saxpy`; an n-ary `Sax`
/// becomes one `sax` and then `saxpy` calls), named by [`inline_name`]
/// from `shape_of`: a reference's rank and whether it has subscripts.
fn inline_form(
    names: &mut Names,
    e: PropEntry,
    shape_of: &dyn Fn(&VarRef) -> (usize, bool),
) -> Vec<Stmt> {
    let v = |r: VarRef| ArgValue::Variable(value_ref(&r));
    let factor = |a: &Expr| -> (ArgValue, (usize, bool)) {
        // Factors are one constant or one reference.
        match &a.vertices[0].kind {
            xaif_model::ExprVertexKind::VariableReference(g) => {
                let r = VarRef {
                    attrs: a.vertices[0].attrs.clone(),
                    graph: g.clone(),
                };
                let shape = shape_of(&r);
                (ArgValue::Variable(r), shape)
            }
            _ => (ArgValue::Constant(a.vertices[0].attrs.clone()), (0, false)),
        }
    };
    let mut call = |base: &str, shapes: &[(usize, bool)], args: Vec<ArgValue>| {
        inlinable_call(
            &inline_name(base, shapes),
            &names.statement("tangent_call"),
            args,
        )
    };
    let is_sax = matches!(e.kind, PropKind::Sax { .. });
    let mut pair = |base: &str, tgt: VarRef, src: VarRef| {
        let shapes = [shape_of(&tgt), shape_of(&src)];
        vec![call(base, &shapes, vec![v(tgt), v(src)])]
    };
    match e.kind {
        PropKind::SetDeriv { tgt, src } => pair("setderiv", tgt, src),
        PropKind::SetNegDeriv { tgt, src } => pair("set_neg_deriv", tgt, src),
        PropKind::IncDeriv { tgt, src } => pair("inc_deriv", tgt, src),
        PropKind::DecDeriv { tgt, src } => pair("dec_deriv", tgt, src),
        PropKind::ZeroDeriv(x) => {
            let shapes = [shape_of(&x)];
            vec![call("zero_deriv", &shapes, vec![v(x)])]
        }
        PropKind::Sax { terms, y } | PropKind::Saxpy { terms, y } => {
            let mut sets = is_sax;
            let y_shape = shape_of(&y);
            terms
                .into_iter()
                .map(|t| {
                    let base = if sets { "sax" } else { "saxpy" };
                    sets = false;
                    let (a, a_shape) = factor(&t.a);
                    let shapes = [a_shape, shape_of(&t.x), y_shape];
                    call(base, &shapes, vec![a, v(t.x), v(y.clone())])
                })
                .collect()
        }
    }
}

/// A call, an untranslated statement or a direct-action assignment.
#[allow(clippy::too_many_arguments)]
fn single(
    ctx: &Ctx<'_>,
    out: &mut Program,
    names: &mut Names,
    scope: ScopeId,
    routines: &RoutineIndex,
    s: StmtId,
    is_direct: &dyn Fn(&str) -> bool,
    _options: &TangentOptions,
    stmts: &mut Vec<StmtId>,
) {
    let stmt = &ctx.p.stmts[s];
    match &stmt.kind {
        StmtKind::SubroutineCall(_) => {
            let c = convert_call(ctx, out, names, scope, routines, s);
            stmts.extend(c.before);
            stmts.push(c.call);
            stmts.extend(c.after);
        }
        StmtKind::Assignment(a) if crate::flatten::direct_action(a, is_direct) => {
            // y = f(x) for a direct action: y.d = f(x.d).
            stmts.push(s);
            let deriv = derivative_assignment(ctx, a);
            let mut attrs = stmt.attrs.clone();
            attrs.set("statement_id", names.statement("direct_action"));
            stmts.push(add(
                out,
                Stmt {
                    attrs,
                    kind: StmtKind::Assignment(deriv),
                },
            ));
        }
        _ => stmts.push(s),
    }
}

/// `y = f(x)` as `y.d = f(x.d)`: the left-hand side and the active
/// references of the right-hand side denote derivative parts.
pub fn derivative_assignment(ctx: &Ctx<'_>, a: &xaif_model::Assignment) -> xaif_model::Assignment {
    let mut deriv = a.clone();
    deriv.lhs.attrs.set("deriv", "1");
    for v in &mut deriv.rhs.vertices {
        if let xaif_model::ExprVertexKind::VariableReference(g) = &v.kind {
            if ctx.ref_active(g) {
                v.attrs.set("deriv", "1");
            }
        }
    }
    deriv
}

/// A call with its active/passive argument conversions.
pub struct ConvertedCall {
    /// Statements before the call (allocations, `oad_convert` in).
    pub before: Vec<StmtId>,
    /// The call (the original statement when nothing is converted).
    pub call: StmtId,
    /// Statements after the call (shape tests, `oad_convert` out).
    pub after: Vec<StmtId>,
    /// The converted arguments (the adjoint passes fresh temporaries of the
    /// same kind).
    pub converted: Vec<ConvertedArg>,
}

/// `r` with every non-constant subscript expression replaced by an integer
/// temporary assigned (in `before`) from it.
fn freeze_subscripts(
    out: &mut Program,
    names: &mut Names,
    scope: ScopeId,
    r: &VarRef,
    before: &mut Vec<StmtId>,
) -> VarRef {
    let mut frozen = r.clone();
    for_each_variable_subscript(&mut frozen, |e| {
        let temp = integer_temp(out, names, scope);
        before.push(set_temp(out, names, "index", &temp, e.clone()));
        *e = read_temp(&temp);
    });
    frozen
}

/// One argument `convert_call` passes through a temporary.
#[derive(Clone, Debug)]
pub struct ConvertedArg {
    /// Argument position.
    pub position: usize,
    /// What the temporary is shaped like and converted from: the actual
    /// element for a scalar formal, the whole actual variable otherwise
    /// (the temporary itself for a constant, which is converted in only).
    pub like: VarRef,
    /// The temporary's shape.
    pub shape: crate::context::Shape,
    /// The temporary's (the formal's) activity.
    pub active: bool,
    /// Whether the temporary stands for one element (passed whole) rather
    /// than for the actual's variable (passed with the actual's
    /// subscripts).
    pub element: bool,
}

/// Wraps a call in `oad_convert`s for every argument whose activity differs
/// from the callee's formal: the whole variable is converted into a
/// temporary of the formal's activity and the same element or section of
/// the temporary is passed, so sequence association still sees the rest of
/// the array.
pub fn convert_call(
    ctx: &Ctx<'_>,
    out: &mut Program,
    names: &mut Names,
    scope: ScopeId,
    routines: &RoutineIndex,
    s: StmtId,
) -> ConvertedCall {
    let stmt = &ctx.p.stmts[s];
    let StmtKind::SubroutineCall(args) = &stmt.kind else {
        return ConvertedCall {
            before: Vec::new(),
            call: s,
            after: Vec::new(),
            converted: Vec::new(),
        };
    };
    let callee = stmt.attrs.get("symbol_id").unwrap_or("");
    let external = routines
        .get(callee)
        .is_none_or(|r| !ctx.p.routines[r].has_body(ctx.p));
    if external && ctx.has_wrapper(callee) {
        return wrapper_call(ctx, out, stmt, callee);
    }
    let formals = callee_formals(ctx, routines, callee);
    let mut conversion = Conversion {
        ctx,
        out,
        names,
        scope,
        before: Vec::new(),
        after: Vec::new(),
        converted: Vec::new(),
    };
    let mut new_args = Vec::with_capacity(args.len());
    for (i, a) in args.iter().enumerate() {
        let pos = a.attrs.int("position").unwrap_or(i as i64 + 1) as usize;
        new_args.push(conversion.argument(a, pos, &formals, external));
    }
    let Conversion {
        out,
        before,
        after,
        converted,
        ..
    } = conversion;
    let call = if converted.is_empty() {
        s
    } else {
        add(
            out,
            Stmt {
                attrs: stmt.attrs.clone(),
                kind: StmtKind::SubroutineCall(new_args),
            },
        )
    };
    ConvertedCall {
        before,
        call,
        after,
        converted,
    }
}

/// The call of a routine without a body that has a hand-written wrapper
/// (`-w`): renamed to the wrapper, which takes the active arguments as they
/// are.
fn wrapper_call(ctx: &Ctx<'_>, out: &mut Program, stmt: &Stmt, callee: &str) -> ConvertedCall {
    let prefix = ctx.p.attrs.get("prefix").unwrap_or("OpenAD_");
    let name = crate::rename::wrapper_symbol(out, callee, prefix);
    let mut call = stmt.clone();
    call.attrs.set("symbol_id", name);
    ConvertedCall {
        before: Vec::new(),
        call: add(out, call),
        after: Vec::new(),
        converted: Vec::new(),
    }
}

/// The conversions of one call being built: the statements before and
/// after it and the arguments passed through temporaries.
struct Conversion<'c, 'o> {
    ctx: &'c Ctx<'c>,
    out: &'o mut Program,
    names: &'o mut Names,
    scope: ScopeId,
    before: Vec<StmtId>,
    after: Vec<StmtId>,
    converted: Vec<ConvertedArg>,
}

impl Conversion<'_, '_> {
    /// What the call passes for its argument `a` at position `pos`: `a`
    /// itself, or a temporary of the formal's activity when they differ.
    fn argument(
        &mut self,
        a: &CallArg,
        pos: usize,
        formals: &[Option<SymbolId>],
        external: bool,
    ) -> CallArg {
        let ctx = self.ctx;
        let actual = match &a.value {
            xaif_model::ArgValue::Variable(actual) => actual,
            xaif_model::ArgValue::Constant(constant) => {
                // A constant is passive: a scalar active formal receives an
                // active temporary holding its value (the compiled callee
                // takes nothing else), as the reference engine does.
                let real = |s: SymbolId| ctx.p.symbols[s].ty() == xaif_model::SymbolType::Real;
                let active_scalar = formals
                    .get(pos.wrapping_sub(1))
                    .copied()
                    .flatten()
                    .filter(|&f| real(f) && ctx.symbol_active(f) && ctx.p.symbols[f].rank() == 0);
                if active_scalar.is_none() || !real_constant(constant) {
                    return a.clone();
                }
                return self.constant_to_active(a, pos, constant);
            }
        };
        let Some(actual_sym) = ctx.symbol_of(&actual.graph) else {
            return a.clone();
        };
        let Some((fa, formal_rank)) =
            converted_to(ctx, formals, external, pos, actual_sym, &actual.graph)
        else {
            return a.clone();
        };
        self.variable_to_formal(a, pos, actual, fa, formal_rank)
    }

    /// A real constant passed to an active scalar formal: an active
    /// temporary converted from it, converted in only.
    fn constant_to_active(&mut self, a: &CallArg, pos: usize, constant: &Attrs) -> CallArg {
        let shape = crate::context::Shape::SCALAR;
        let temp = declare(
            self.out,
            self.names,
            self.scope,
            TempKind::Tyc,
            ValueType::Real,
            &shape,
            true,
        );
        let id = self.names.statement("convert");
        self.before.push(add(
            self.out,
            inlinable_call(
                "oad_convert",
                &id,
                vec![
                    ArgValue::Variable(value_ref(&temp.var)),
                    ArgValue::Constant(constant.clone()),
                ],
            ),
        ));
        self.converted.push(ConvertedArg {
            position: pos,
            like: temp.var.clone(),
            shape,
            active: true,
            element: true,
        });
        CallArg {
            attrs: a.attrs.clone(),
            value: xaif_model::ArgValue::Variable(temp.var),
        }
    }

    /// A variable passed to a real formal of the other activity (`fa`, of
    /// rank `formal_rank`): a temporary of the formal's activity converted
    /// from the actual before the call and back after it, passed as the
    /// element or with the actual's subscripts.
    fn variable_to_formal(
        &mut self,
        a: &CallArg,
        pos: usize,
        actual: &VarRef,
        fa: bool,
        formal_rank: usize,
    ) -> CallArg {
        let ctx = self.ctx;
        let (scope_id, symbol_id) = actual.graph.symbol_ids().expect("resolved above");
        // A scalar formal sees one element: convert just that element.
        // Otherwise the callee may reach the rest of the actual's storage
        // (sequence association), so the whole variable is converted.
        let element = formal_rank == 0 && ctx.ref_shape(&actual.graph).rank == 0;
        let whole = if element {
            // The callee may change the subscripts' variables (a global
            // index): the conversion back uses their values at the call.
            freeze_subscripts(
                self.out,
                self.names,
                self.scope,
                &value_ref(actual),
                &mut self.before,
            )
        } else {
            VarRef::symbol(Attrs::new().with("vertex_id", "1"), scope_id, symbol_id)
        };
        let shape = ctx.ref_shape(&whole.graph);
        let temp = declare(
            self.out,
            self.names,
            self.scope,
            TempKind::Tyc,
            ValueType::Real,
            &shape,
            fa,
        );
        self.convert_in_and_out(&temp, &whole);
        let passed = if element {
            temp.var.clone()
        } else {
            with_symbol(actual, &temp.var)
        };
        self.converted.push(ConvertedArg {
            position: pos,
            like: whole.clone(),
            shape,
            active: fa,
            element,
        });
        CallArg {
            attrs: a.attrs.clone(),
            value: xaif_model::ArgValue::Variable(passed),
        }
    }

    /// The statements around the call for the temporary `temp` of `whole`:
    /// allocated like it and converted from it before; its shape tested and
    /// converted back after.
    fn convert_in_and_out(&mut self, temp: &Temp, whole: &VarRef) {
        let pair = |x: &VarRef, y: &VarRef| {
            vec![
                ArgValue::Variable(value_ref(x)),
                ArgValue::Variable(value_ref(y)),
            ]
        };
        if temp.allocatable {
            let id = self.names.statement("allocate");
            self.before.push(add(
                self.out,
                inlinable_call("oad_AllocateMatching", &id, pair(&temp.var, whole)),
            ));
        }
        let id = self.names.statement("convert");
        self.before.push(add(
            self.out,
            inlinable_call("oad_convert", &id, pair(&temp.var, whole)),
        ));
        if temp.allocatable {
            let id = self.names.statement("shape_test");
            self.after.push(add(
                self.out,
                inlinable_call("oad_ShapeTest", &id, pair(&temp.var, whole)),
            ));
        }
        let id = self.names.statement("convert");
        self.after.push(add(
            self.out,
            inlinable_call("oad_convert", &id, pair(whole, &temp.var)),
        ));
    }
}

/// The activity and rank of the formal at `pos` when a variable actual
/// (`actual_sym`, referenced by `actual`) must be converted to it: both
/// real, of different activity. A routine without a body (external)
/// takes passive values of the actual's shape.
pub(crate) fn converted_to(
    ctx: &Ctx<'_>,
    formals: &[Option<SymbolId>],
    external: bool,
    pos: usize,
    actual_sym: SymbolId,
    actual: &xaif_model::RefGraph,
) -> Option<(bool, usize)> {
    let real = |s: SymbolId| ctx.p.symbols[s].ty() == xaif_model::SymbolType::Real;
    let formal = match formals.get(pos.wrapping_sub(1)).copied().flatten() {
        Some(f) if real(f) => Some((ctx.symbol_active(f), ctx.p.symbols[f].rank())),
        Some(_) => None,
        None if external => Some((false, ctx.ref_shape(actual).rank)),
        None => None,
    };
    let aa = ctx.symbol_active(actual_sym);
    formal.filter(|(fa, _)| *fa != aa && real(actual_sym))
}

/// Whether a constant argument is a real number (what an active formal
/// would otherwise receive with the wrong type).
fn real_constant(constant: &Attrs) -> bool {
    constant.get("type").is_some_and(|t| t == "real")
}

/// `r` with its variable replaced by `by` (same subscripts).
pub fn with_symbol(r: &VarRef, by: &VarRef) -> VarRef {
    let (scope, symbol) = by.graph.symbol_ids().unwrap_or(("1", "?"));
    let mut out = r.clone();
    if let Some(v) = out
        .graph
        .vertices
        .iter_mut()
        .find(|v| matches!(v.kind, xaif_model::RefVertexKind::Symbol { .. }))
    {
        v.attrs.set("symbol_id", symbol);
        v.attrs.set("scope_id", scope);
    }
    out
}

/// The formal symbols of the routine defined for `callee`, by position.
pub fn callee_formals(
    ctx: &Ctx<'_>,
    routines: &RoutineIndex,
    callee: &str,
) -> Vec<Option<SymbolId>> {
    let Some(r) = routines.get(callee) else {
        return Vec::new();
    };
    let routine = &ctx.p.routines[r];
    if !routine.has_body(ctx.p) {
        return Vec::new();
    }
    let mut out: Vec<Option<SymbolId>> = Vec::new();
    if let Some(args) = &routine.arguments {
        for a in &args.args {
            let (Some(pos), Some(sym)) = (a.int("position"), ctx.symbols.resolve(a)) else {
                continue;
            };
            let pos = pos.max(1) as usize;
            if out.len() < pos {
                out.resize(pos, None);
            }
            out[pos - 1] = Some(sym);
        }
    }
    out
}

/// The active locals whose derivatives `-D` zeroes on entry: those whose
/// storage exists on entry. An allocatable (rank without bounds) has none
/// until it is allocated, and gets zero derivatives then.
pub fn zeroable_active_locals(
    ctx: &Ctx<'_>,
    routine: xaif_model::RoutineId,
    scope: ScopeId,
) -> Vec<SymbolId> {
    let formals: Vec<SymbolId> = ctx.p.routines[routine]
        .arguments
        .iter()
        .flat_map(|l| l.args.iter().filter_map(|a| ctx.symbols.resolve(a)))
        .collect();
    let mut out = Vec::new();
    for table in &ctx.p.scopes[scope].tables {
        for &s in &table.symbols {
            let sym = &ctx.p.symbols[s];
            let allocatable = sym.rank() > 0 && sym.bounds.len() != sym.rank();
            if sym.kind() == xaif_model::SymbolKind::Variable
                && ctx.symbol_active(s)
                && !formals.contains(&s)
                && !allocatable
            {
                out.push(s);
            }
        }
    }
    out
}

/// `-D`: a `ZeroDeriv` for every active local at the start of the routine.
fn zero_active_locals(
    ctx: &Ctx<'_>,
    out: &mut Program,
    routine: xaif_model::RoutineId,
    cfg: CfgId,
    scope: ScopeId,
) {
    let scope_id = ctx.p.scopes[scope]
        .attrs
        .get("vertex_id")
        .unwrap_or("1")
        .to_string();
    let entries: Vec<PropEntry> = zeroable_active_locals(ctx, routine, scope)
        .into_iter()
        .map(|s| {
            let r = VarRef::symbol(
                Attrs::new().with("deriv", "1"),
                &scope_id,
                ctx.p.symbols[s].name(),
            );
            prop_entry(PropKind::ZeroDeriv(r))
        })
        .collect();
    if entries.is_empty() {
        return;
    }
    let graph = xaif_model::CfgGraph::new(out, cfg);
    let Some(entry) = graph.entry else { return };
    let Some(&(_, first)) = graph.successors(entry).first() else {
        return;
    };
    let zero = out.stmts.alloc(Stmt {
        attrs: Attrs::new(),
        kind: StmtKind::DerivativePropagator(entries),
    });
    match &mut out.vertices[first].kind {
        VertexKind::BasicBlock(stmts) => stmts.insert(0, zero),
        _ => {
            // Insert a block between the entry and its successor.
            let edge = graph.successors(entry)[0].0;
            let block_id = "_zero_locals_block".to_string();
            let v = out.vertices.alloc(xaif_model::CfgVertex {
                attrs: Attrs::new()
                    .with("vertex_id", &block_id)
                    .with("scope_id", &scope_id),
                cfg,
                kind: VertexKind::BasicBlock(vec![zero]),
            });
            out.edges[edge].attrs.set("target", &block_id);
            let target = out.vertices[first]
                .attrs
                .get("vertex_id")
                .unwrap_or("")
                .to_string();
            let e = out.edges.alloc(xaif_model::CfgEdge {
                attrs: Attrs::new()
                    .with("edge_id", "_zero_locals_edge")
                    .with("source", &block_id)
                    .with("target", &target),
                cfg,
            });
            out.cfgs[cfg].items.push(xaif_model::CfgItem::Vertex(v));
            out.cfgs[cfg].items.push(xaif_model::CfgItem::Edge(e));
        }
    }
}
