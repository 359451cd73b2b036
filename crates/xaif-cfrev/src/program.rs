//! Call graph reversal (seed "call graph reversal"): every routine becomes a
//! `ReplacementList` for OpenAD's `reverse_subroutine_template` with the 13
//! placeholders the reference engine fills
//! (`../shared/docs/xaif-semantics.md` §6.1):
//!
//! | placeholder | content |
//! |---|---|
//! | 1 | the original code |
//! | 2, 3 | taping and adjoint code |
//! | 4, 6 | argument checkpoint store and restore of the `Read` list |
//! | 5, 7 | empty result checkpoint skeletons |
//! | 8, 9 | time-step checkpoint store/restore (`Mod` then `ReadLocal`) |
//! | 10, 11 | taping and adjoint with every loop anonymous |
//! | 12, 13 | store/restore of the derivative parts of the active `Mod` list |
//!
//! The same output serves the split and the joint template: split runs 1, 2
//! or 3 by the mode flags; joint runs the checkpoint placeholders around
//! them.

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use xaif_linearize::absent::guard_absent;
use xaif_linearize::{
    adjoint::{adjoint_block, BlockEnv},
    ahead::{with_ahead, Ahead, Builder},
    context::{Ctx, Shape, ValueType},
    flatten::FlattenOptions,
    preaccumulate::Target,
    tangent::{
        BlockStats, Finisher, RoutineSink, RoutineStats, Start, TransformError, TransformStats,
        Transformed,
    },
    temps::{declare, value_ref, Names, TempKind},
    Catalogue,
};
use xaif_model::{
    build::inlinable_call, ArgValue, Attrs, Cfg, CfgEdge, CfgId, CfgItem, CfgVertex, ExprBuilder,
    NonInlinableCatalogue, Program, PropEntry, PropKind, Replacement, Routine, RoutineBody,
    RoutineId, SideEffectKind, Stmt, StmtId, StmtKind, SymbolId, VarRef, VertexId, VertexKind,
};

use crate::explicit::LoopPlan;
use crate::reverse::{reverse, BlockCode, CfgBuilder, Reversal, Temps};

/// Options of the adjoint transformation (the reference driver's flags
/// that apply).
#[derive(Clone, Debug, Default)]
pub struct AdjointOptions {
    /// `-S`, `-Q`.
    pub flatten: FlattenOptions,
    /// `-p`.
    pub passive: Vec<String>,
    /// `-M`, `-A`, `-m`, `--heuristic`.
    pub elimination: xaif_elim::Config,
    /// `-D`: zero the derivatives of active locals after the adjoint entry.
    pub zero_locals: bool,
    /// `-I`: every formal gets intent `inout`.
    pub all_inout: bool,
    /// `-P`: checkpoint formals even when every call passes a constant.
    pub checkpoint_all_formals: bool,
    /// `-f`: restore checkpoints in store order.
    pub restore_in_store_order: bool,
    /// `-r`: give transformed routines the program's prefix.
    pub rename: bool,
    /// Reverse every CFG by block enumeration (the unstructured fallback),
    /// even structured ones.
    pub force_enumeration: bool,
    /// Checkpoint every variable of the front end's `Read` list, as the
    /// reference engine does, instead of only those the routine or the
    /// code after it may overwrite (to-be-recorded analysis).
    pub full_checkpoints: bool,
    /// `-F`: how the front end decorated names (for `-p` and `-w`).
    pub decoration: xaif_model::Decoration,
    /// `-w`: routines without a body that have hand-written wrappers.
    pub wrappers: Vec<String>,
    /// `-C`: `countmult(n)`/`countadd(n)` at the end of every basic
    /// block's taping code.
    pub counters: bool,
    /// `-b`: pessimistic assumptions for routines without a body in the
    /// to-be-recorded analysis that narrows argument checkpoints.
    pub pessimistic_black_boxes: bool,
    /// `-U`: loops the front end marked simple run backwards even where
    /// the body may change a bound variable.
    pub ignore_simple_loop_violations: bool,
    /// `-u`: asked per such variable (the driver asks the user).
    pub ask_simple_loop_violations: Option<fn(&str) -> bool>,
    /// `-t`: the top-level routine, whose reach decides which globals are
    /// quasi-constant.
    pub top: Option<String>,
    /// Keep every eliminated graph as Graphviz text
    /// (`Transformed::dots`), for the driver's `--dot` and `-g 8`.
    pub dot: bool,
    /// `--checkpoint-loop`: loops reversed by binomial or online
    /// checkpointing.
    pub checkpoint_loops: Vec<crate::checkpoint::LoopMark>,
    /// `--fixed-point-loop`: fixed-point iterations reversed by the
    /// two-phase adjoint.
    pub fixed_point_loops: Vec<crate::marks::FixedPointMark>,
    /// `--independent-loop`: loops whose iterations are taped and
    /// reversed one at a time.
    pub independent_loops: Vec<crate::marks::IndependentMark>,
    /// Eliminate ahead of the transformation on a second thread when the
    /// program is large enough (`xaif_linearize::ahead`; same output).
    pub ahead: bool,
}

/// Per-routine taping statistics (`--stats-json` of the adjoint).
#[derive(Clone, Debug, Default, Serialize)]
pub struct TapeStats {
    /// The routine.
    pub routine: String,
    /// Doubles pushed by one execution of each basic block, summed.
    pub doubles_per_block_execution: usize,
    /// Integers pushed by the basic blocks' index taping, summed.
    pub integers_per_block_execution: usize,
    /// Elements named by the argument checkpoint (placeholder 4).
    pub checkpoint_variables: usize,
    /// Whether the CFG was reversed as structured.
    pub structured: bool,
    /// Loops run backwards explicitly instead of by counting.
    pub explicit_loops: usize,
}

struct SymbolTemps<'a> {
    names: &'a mut Names,
    scope: xaif_model::ScopeId,
}

impl Temps for SymbolTemps<'_> {
    fn integer(&mut self, out: &mut Program) -> VarRef {
        declare(
            out,
            self.names,
            self.scope,
            TempKind::Symbol,
            ValueType::Integer,
            &Shape::SCALAR,
            false,
        )
        .var
    }

    fn statement(&mut self, stem: &str) -> String {
        self.names.statement(stem)
    }
}

/// The result of the adjoint transformation.
pub struct AdjointResult {
    /// Program, graph statistics, Graphviz graphs.
    pub transformed: Transformed,
    /// Taping statistics per routine.
    pub tapes: Vec<TapeStats>,
}

/// Transforms a validated front-end program into adjoint XAIF.
pub fn adjoint(
    p: &Program,
    catalogue: &Catalogue,
    noninlinable: Option<&NonInlinableCatalogue>,
    options: &AdjointOptions,
) -> Result<AdjointResult, TransformError> {
    adjoint_with(p, catalogue, noninlinable, options, None)
}

/// [`adjoint`], handing every routine to `sink` as soon as it is complete
/// (see `xaif_linearize::tangent::Finisher`); the returned program then
/// holds everything but the routines' bodies. Not with `rename` (`-r`
/// renames across routines).
pub fn adjoint_streamed(
    p: &Program,
    catalogue: &Catalogue,
    noninlinable: Option<&NonInlinableCatalogue>,
    options: &AdjointOptions,
    sink: RoutineSink<'_>,
) -> Result<AdjointResult, TransformError> {
    if options.rename {
        return Err(TransformError::Output(
            "-r renames across routines: the output cannot be streamed".into(),
        ));
    }
    adjoint_with(p, catalogue, noninlinable, options, Some(sink))
}

/// What the transformation of every routine shares: the input, its
/// analyses and the options.
struct Job<'a, 'p> {
    p: &'p Program,
    ctx: &'a Ctx<'p>,
    env: &'a BlockEnv<'a>,
    options: &'a AdjointOptions,
    /// (callee, position) of arguments some call passes as a variable.
    passed: &'a FxHashSet<(String, i64)>,
    /// (callee, position) of optional formals some call leaves out.
    left_out: &'a FxHashSet<(String, i64)>,
    policy: &'a crate::explicit::LoopPolicy,
    /// `Read` lists inferred for routines without one.
    inferred: &'a FxHashMap<RoutineId, Vec<VarRef>>,
    changes: &'a Option<Changes>,
    /// Marked loops, by routine.
    marked: &'a FxHashMap<RoutineId, Vec<crate::checkpoint::Marked>>,
    /// What the data-flow analysis says of them.
    loop_facts: &'a crate::checkpoint::LoopFacts,
}

/// The output program and its names, which every routine adds to.
struct Output<'o> {
    out: &'o mut Program,
    names: &'o mut Names,
    /// The eliminated graphs as Graphviz text, with `AdjointOptions::dot`.
    dots: &'o mut Vec<xaif_linearize::tangent::DotGraph>,
}

fn adjoint_with(
    p: &Program,
    catalogue: &Catalogue,
    noninlinable: Option<&NonInlinableCatalogue>,
    options: &AdjointOptions,
    sink: Option<RoutineSink<'_>>,
) -> Result<AdjointResult, TransformError> {
    let lazy = sink.is_some();
    if p.is_output() {
        // Refused by Start::make (before it copies anything), and before
        // the analysis below.
        Start::make(p, noninlinable, &[], options.decoration, &[], true)?;
    }
    // Calls that would convert an absent optional argument are made under
    // `if (present(f))` first (see `absent`).
    let guarded = guard_absent(p, &options.passive, options.decoration, &options.wrappers)?;
    let p = guarded.as_ref().unwrap_or(p);
    let (marked, loop_facts) = marked_loops(p, options)?;
    // Before the output copy exists: the analysis is the largest thing a
    // run holds besides the input, and only its answers are kept.
    let (inferred, changes) = checkpoint_analysis(p, options);
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
    let memo = xaif_elim::Memo::new(&options.elimination);
    let items: Vec<RoutineId> = p.call_graph_routines().collect();
    let ahead = if options.ahead {
        Ahead::new(p, items.iter().copied())
    } else {
        None
    };
    let env = BlockEnv {
        catalogue,
        is_direct: &is_direct,
        routines: &routines,
        flatten: options.flatten,
        elimination: &memo,
        dot: options.dot,
        ahead: ahead.as_ref(),
    };
    let builder = Builder {
        ctx: &ctx,
        catalogue,
        flatten: options.flatten,
        is_direct: &is_direct,
        memo: &memo,
        mode: xaif_elim::PropagationMode::Adjoint,
    };
    let passed = variables_passed(p);
    let left_out = xaif_model::formals_maybe_absent(p);
    let policy = crate::explicit::LoopPolicy {
        trust_hints: options.ignore_simple_loop_violations,
        ask: options.ask_simple_loop_violations,
        quasi_constant: match &options.top {
            Some(top) => quasi_constant(p, &ctx, &routines, top)?,
            None => Default::default(),
        },
        checkpointed: marked.values().flatten().map(|m| m.vertex).collect(),
    };
    let job = Job {
        p,
        ctx: &ctx,
        env: &env,
        options,
        passed: &passed,
        left_out: &left_out,
        policy: &policy,
        inferred: &inferred,
        changes: &changes,
        marked: &marked,
        loop_facts: &loop_facts,
    };
    let mut stats = TransformStats::default();
    let mut dots = Vec::new();
    let mut tapes = Vec::new();
    // Intents are set as each routine is made (-I included).
    let mut finisher = sink.map(|sink| Finisher::new(&out, sink, false));
    with_ahead(ahead.as_ref().map(|a| (a, &builder)), || {
        for (k, &rid) in items.iter().enumerate() {
            if let Some(a) = &ahead {
                a.enter_routine(k);
            }
            if lazy {
                out.copy_statements_of(p, rid);
            }
            let mut o = Output {
                out: &mut out,
                names: &mut names,
                dots: &mut dots,
            };
            if let Some((rstats, tape)) = job.routine(&mut o, rid)? {
                stats.total.add(&rstats.total);
                stats.routines.push(rstats);
                tapes.push(tape);
            }
            if let Some(f) = &mut finisher {
                f.done(&mut out, rid)?;
            }
        }
        Ok::<(), TransformError>(())
    })?;
    if finisher.is_none() {
        // `-I` is applied per argument as the adjoint's intents are made.
        xaif_linearize::rename::finish_program(&mut out, p, false, options.rename);
    }
    Ok(AdjointResult {
        transformed: Transformed {
            program: out,
            stats,
            dots,
        },
        tapes,
    })
}

/// The marked loops, found in `p` (or refused), and what the data-flow
/// analysis says of them.
#[allow(clippy::type_complexity)]
fn marked_loops(
    p: &Program,
    options: &AdjointOptions,
) -> Result<
    (
        FxHashMap<RoutineId, Vec<crate::checkpoint::Marked>>,
        crate::checkpoint::LoopFacts,
    ),
    TransformError,
> {
    let marks = crate::marks::Mark::all(
        &options.checkpoint_loops,
        &options.fixed_point_loops,
        &options.independent_loops,
    );
    if marks.is_empty() {
        return Ok(Default::default());
    }
    let marked = crate::checkpoint::resolve(p, &marks, options.decoration)?;
    let opaque = p.stmts.iter().any(|(_, s)| {
        matches!(s.kind, StmtKind::Marker)
            && crate::explicit::marker_may_store(s.attrs.get("annotation").unwrap_or(""))
    });
    let facts = crate::checkpoint::loop_facts(p, &marked, options.pessimistic_black_boxes, opaque)?;
    Ok((marked, facts))
}

/// The code of every basic block of a routine body in taping and adjoint
/// form, with the routine's statistics.
struct Codes {
    /// With the loop plan; then, when it has explicit loops, with every
    /// index taped (placeholders 10 and 11).
    variants: Vec<FxHashMap<VertexId, BlockCode>>,
    rstats: RoutineStats,
    doubles: usize,
    integers: usize,
}

impl Job<'_, '_> {
    /// The `ReplacementList` of routine `rid` in `o.out`, with its
    /// statistics (`None` for a routine without a body or scope).
    fn routine(
        &self,
        o: &mut Output<'_>,
        rid: RoutineId,
    ) -> Result<Option<(RoutineStats, TapeStats)>, TransformError> {
        let p = self.p;
        let routine = &p.routines[rid];
        let RoutineBody::Graph(cfg) = &routine.body else {
            return Ok(None);
        };
        let name = routine.symbol_name().to_string();
        let scope_attr = routine
            .attrs
            .get("controlflowgraph_scope_id")
            .unwrap_or("1")
            .to_string();
        let Some(scope) = self.ctx.symbols.scope(&scope_attr) else {
            return Ok(None);
        };
        let mut rstats = RoutineStats {
            routine: name.clone(),
            ..Default::default()
        };
        let mut tape = TapeStats {
            routine: name.clone(),
            structured: true,
            ..Default::default()
        };
        let mut list: Vec<(u32, Option<CfgId>, bool)> = Vec::new();
        // Variables the adjoint restores by popping into them.
        let mut restored_formals: Vec<SymbolId> = Vec::new();
        let has_code = p.cfgs[*cfg].vertex_ids().next().is_some();
        if has_code {
            let routine_code = self.code_placeholders(o, rid, *cfg, scope, &scope_attr)?;
            rstats = RoutineStats {
                routine: name.clone(),
                ..routine_code.rstats
            };
            tape.doubles_per_block_execution = routine_code.doubles;
            tape.integers_per_block_execution = routine_code.integers;
            tape.explicit_loops = routine_code.explicit_loops;
            tape.structured = routine_code.structured;
            restored_formals = routine_code.restored_formals;
            list = routine_code.list;
        } else {
            for ph in [1, 2, 3, 10, 11] {
                list.push((ph, None, true));
            }
        }
        tape.checkpoint_variables =
            self.checkpoint_placeholders(o, rid, &name, &scope_attr, &mut list);
        list.sort_by_key(|(ph, ..)| *ph);
        o.out.routines[rid] = self.replacement_routine(o.out, rid, list, &restored_formals);
        Ok(Some((rstats, tape)))
    }

    /// Placeholders 1, 2, 3, 10 and 11 of a routine with code.
    fn code_placeholders(
        &self,
        o: &mut Output<'_>,
        rid: RoutineId,
        cfg: CfgId,
        scope: xaif_model::ScopeId,
        scope_attr: &str,
    ) -> Result<RoutineCode, TransformError> {
        let (p, ctx, options) = (self.p, self.ctx, self.options);
        let routine = &p.routines[rid];
        let name = routine.symbol_name().to_string();
        let structured = !options.force_enumeration && routine.attrs.flag("structured", true);
        // Marked loops may be left by exits.
        let exits: rustc_hash::FxHashSet<VertexId> = self
            .marked
            .get(&rid)
            .map(|m| m.iter().map(|m| m.vertex).collect())
            .unwrap_or_default();
        let regions = if structured {
            crate::region::parse_with(p, cfg, &exits)
        } else {
            None
        };
        // Which loops run backwards explicitly (structured bodies only).
        let mut plan = regions
            .as_ref()
            .map(|regions| crate::explicit::plan_with(ctx, scope, regions, self.policy))
            .unwrap_or_default();
        let codes = self.block_codes(o, &name, cfg, scope, &mut plan)?;
        let restored_formals = plan.restore.values().flatten().copied().collect();
        // The original code, with the same argument conversions as the
        // derivative code: it is compiled with the active types too.
        let converted = xaif_linearize::typechange::convert_blocks(
            ctx,
            o.out,
            o.names,
            self.env.routines,
            cfg,
            scope,
        );
        let blocks: FxHashMap<VertexId, Vec<StmtId>> = converted
            .into_iter()
            .map(|(v, c)| {
                let stmts = c
                    .iter()
                    .flat_map(xaif_linearize::typechange::Converted::stmts);
                (v, stmts.collect())
            })
            .collect();
        let original = copy_cfg(p, o.out, rid, cfg, &blocks);
        let generator = match self.marked.get(&rid) {
            Some(marked) => Some(crate::loopgen::Generator {
                loops: crate::checkpoint::plan(
                    ctx,
                    rid,
                    cfg,
                    scope,
                    regions.as_deref(),
                    marked,
                    self.loop_facts,
                    self.left_out,
                )?,
                plain: &blocks,
            }),
            None => None,
        };
        // The forward sweeps of marked loops left by exits jump out of
        // their loops.
        let exits_marked = regions.as_deref().is_some_and(|r| {
            let mut found = false;
            crate::region::walk(r, false, |e| {
                found |= matches!(e, crate::region::Event::Exit)
            });
            found
        });
        let mut temps = SymbolTemps {
            names: o.names,
            scope,
        };
        let mut reversal = Reversal {
            original: p,
            routine: rid,
            cfg,
            code: &codes.variants[0],
            scope_id: scope_attr,
            force_enumeration: options.force_enumeration,
            plan: Some(&plan),
            marked: generator
                .as_ref()
                .map(|g| g as &dyn crate::reverse::MarkedLoops),
        };
        let rev = reverse(&reversal, o.out, &mut temps);
        reversal.code = codes.variants.last().expect("one variant at least");
        reversal.plan = None;
        let rev_anonymous = reverse(&reversal, o.out, &mut temps);
        if options.zero_locals {
            for adj in [rev.adjoint, rev_anonymous.adjoint] {
                zero_active_locals(ctx, o.out, rid, adj, scope, scope_attr);
            }
        }
        Ok(RoutineCode {
            list: vec![
                (1, Some(original), true),
                (2, Some(rev.taping), rev.structured && !exits_marked),
                (3, Some(rev.adjoint), rev.structured && !exits_marked),
                (
                    10,
                    Some(rev_anonymous.taping),
                    rev.structured && !exits_marked,
                ),
                (
                    11,
                    Some(rev_anonymous.adjoint),
                    rev.structured && !exits_marked,
                ),
            ],
            rstats: codes.rstats,
            doubles: codes.doubles,
            integers: codes.integers,
            explicit_loops: plan.explicit.len(),
            structured: rev.structured,
            restored_formals,
        })
    }

    /// Both forms of every basic block; with explicit loops a second set
    /// that tapes every index for the strictly anonymous placeholders 10
    /// and 11.
    fn block_codes(
        &self,
        o: &mut Output<'_>,
        name: &str,
        cfg: CfgId,
        scope: xaif_model::ScopeId,
        plan: &mut LoopPlan,
    ) -> Result<Codes, TransformError> {
        let p = self.p;
        let variants: &[bool] = if plan.explicit.is_empty() {
            &[true]
        } else {
            &[true, false]
        };
        let mut codes = Codes {
            variants: Vec::new(),
            rstats: RoutineStats::default(),
            doubles: 0,
            integers: 0,
        };
        for &with_plan in variants {
            let mut code: FxHashMap<VertexId, BlockCode> = FxHashMap::default();
            for v in p.cfgs[cfg].vertex_ids() {
                let VertexKind::BasicBlock(stmts) = &p.vertices[v].kind else {
                    continue;
                };
                let mut target = Target {
                    out: o.out,
                    names: o.names,
                    scope,
                };
                let stable = if with_plan {
                    plan.stable.get(&v).cloned()
                } else {
                    None
                };
                let mut block =
                    adjoint_block(self.ctx, &mut target, self.env, stmts, stable.as_ref())
                        .map_err(|e| TransformError::Block {
                            routine: name.to_string(),
                            source: e,
                        })?;
                if self.options.counters {
                    let mut total = xaif_linearize::flatten::GraphStats::default();
                    for g in &block.graphs {
                        total.add(g);
                    }
                    block
                        .taping
                        .extend(xaif_linearize::tangent::counter_calls(o.out, &total));
                }
                if with_plan {
                    plan.add_reads(v, &block.stable_reads);
                    let mut bstats = BlockStats {
                        block: p.vertices[v]
                            .attrs
                            .get("vertex_id")
                            .unwrap_or("")
                            .to_string(),
                        ..Default::default()
                    };
                    for g in &block.graphs {
                        bstats.total.add(g);
                    }
                    bstats.graphs = block.graphs.clone();
                    for (k, mut d) in block.dots.drain(..).enumerate() {
                        d.name = format!("{name}_{}_{k}", bstats.block);
                        o.dots.push(d);
                    }
                    codes.doubles += block.pushes.0;
                    codes.integers += block.pushes.1;
                    if !bstats.graphs.is_empty() {
                        codes.rstats.total.add(&bstats.total);
                        codes.rstats.blocks.push(bstats);
                    }
                }
                code.insert(
                    v,
                    BlockCode {
                        taping: block.taping,
                        adjoint: block.adjoint,
                    },
                );
            }
            codes.variants.push(code);
        }
        Ok(codes)
    }

    /// Placeholders 4 to 9, 12 and 13 (argument, result, time-step and
    /// derivative checkpoints) into `list`; returns the number of
    /// variables placeholder 4 stores.
    fn checkpoint_placeholders(
        &self,
        o: &mut Output<'_>,
        rid: RoutineId,
        name: &str,
        scope_attr: &str,
        list: &mut Vec<(u32, Option<CfgId>, bool)>,
    ) -> usize {
        let (ctx, options) = (self.ctx, self.options);
        let routine = &self.p.routines[rid];
        // The formals at the positions `keep` accepts.
        let formals_at = |keep: &dyn Fn(i64) -> bool| -> Vec<SymbolId> {
            routine
                .arguments
                .iter()
                .flat_map(|l| {
                    l.args
                        .iter()
                        .filter_map(|a| ctx.symbols.resolve(a).map(|s| (a, s)))
                })
                .filter(|(a, _)| keep(a.int("position").unwrap_or(0)))
                .map(|(_, s)| s)
                .collect()
        };
        let formals = formals_at(&|pos| {
            !options.checkpoint_all_formals && !self.passed.contains(&(name.to_string(), pos))
        });
        let skip_formals = |refs: &[VarRef]| -> Vec<VarRef> {
            refs.iter()
                .filter(|r| {
                    ctx.symbol_of(&r.graph)
                        .is_some_and(|s| !formals.contains(&s))
                })
                .cloned()
                .collect()
        };
        let list_refs = |kind: SideEffectKind| -> Vec<VarRef> {
            routine
                .side_effect(kind)
                .map(|l| skip_formals(&l.refs))
                .unwrap_or_default()
        };
        // A routine without a `Read` list gets the one the analysis
        // infers (see `inferred_reads`).
        let mut read = match routine.side_effect(SideEffectKind::Read) {
            Some(list) => skip_formals(&list.refs),
            None => self
                .inferred
                .get(&rid)
                .map(|refs| skip_formals(refs))
                .unwrap_or_default(),
        };
        if let Some(changes) = self.changes {
            read.retain(|r| {
                ctx.symbol_of(&r.graph)
                    .is_none_or(|s| changes.may_change(rid, s))
            });
        }
        let modified = list_refs(SideEffectKind::Mod);
        let read_local = list_refs(SideEffectKind::ReadLocal);
        // Optional formals some call leaves out: their checkpoints
        // run only when they are present.
        let optional = formals_at(&|pos| self.left_out.contains(&(name.to_string(), pos)));
        let cp = |o: &mut Output<'_>,
                  refs: &[VarRef],
                  store: bool,
                  deriv: bool,
                  reversed: bool|
         -> CfgId {
            let mut stmts = Vec::new();
            let mut ordered: Vec<&VarRef> = refs.iter().collect();
            if reversed {
                ordered.reverse();
            }
            for r in ordered {
                if let Some(s) = checkpoint_call(ctx, o.out, o.names, r, store, deriv) {
                    let guard = ctx
                        .symbol_of(&r.graph)
                        .filter(|s| optional.contains(s))
                        .map(|_| r.clone());
                    stmts.push((s, guard));
                }
            }
            // Restores that read in store order say so (`run` needs to
            // know the discipline: `xaif_model::STORE_ORDER_ENTRY`).
            let entry = if !store && options.restore_in_store_order {
                xaif_model::STORE_ORDER_ENTRY
            } else {
                CP_ENTRY
            };
            checkpoint_cfg_guarded(o.out, rid, scope_attr, entry, stmts)
        };
        let restore_reversed = !options.restore_in_store_order;
        let ph4 = cp(o, &read, true, false, false);
        let ph6 = cp(o, &read, false, false, restore_reversed);
        let ph5 = checkpoint_cfg(o.out, rid, scope_attr, CP_ENTRY, Vec::new());
        let ph7 = checkpoint_cfg(o.out, rid, scope_attr, CP_ENTRY, Vec::new());
        let time_step: Vec<VarRef> = modified.iter().chain(read_local.iter()).cloned().collect();
        let ph8 = cp(o, &time_step, true, false, false);
        let ph9 = cp(o, &time_step, false, false, restore_reversed);
        let active_mod: Vec<VarRef> = modified
            .iter()
            .filter(|r| {
                ctx.symbol_of(&r.graph)
                    .is_some_and(|s| ctx.symbol_active(s))
            })
            .cloned()
            .collect();
        let ph12 = cp(o, &active_mod, true, true, false);
        let ph13 = cp(o, &active_mod, false, true, restore_reversed);
        for (ph, g) in [
            (4, ph4),
            (5, ph5),
            (6, ph6),
            (7, ph7),
            (8, ph8),
            (9, ph9),
            (12, ph12),
            (13, ph13),
        ] {
            list.push((ph, Some(g), true));
        }
        read.len()
    }

    /// The routine as a `ReplacementList` of the placeholders in `list`,
    /// with the adjoint's intents.
    fn replacement_routine(
        &self,
        out: &mut Program,
        rid: RoutineId,
        list: Vec<(u32, Option<CfgId>, bool)>,
        restored_formals: &[SymbolId],
    ) -> Routine {
        let ctx = self.ctx;
        let routine = &self.p.routines[rid];
        let replacements = list
            .into_iter()
            .map(|(ph, g, structured)| {
                let mut attrs = Attrs::new().with("placeholder", ph.to_string());
                if !structured {
                    attrs.set("structured", "0");
                }
                let cfg = g.unwrap_or_else(|| {
                    out.cfgs.alloc(Cfg {
                        routine: rid,
                        items: Vec::new(),
                    })
                });
                Replacement { attrs, cfg }
            })
            .collect();
        let attrs = routine.replacement_list_attrs("reverse_subroutine_template");
        let mut arguments = routine.arguments.clone();
        if let Some(args) = &mut arguments {
            for a in &mut args.args {
                let symbol = ctx.symbols.resolve(a);
                let active = symbol.is_some_and(|s| ctx.symbol_active(s));
                let restored = symbol.is_some_and(|s| restored_formals.contains(&s));
                if active || restored || self.options.all_inout {
                    a.set("intent", "inout");
                }
            }
        }
        Routine {
            attrs,
            arguments,
            side_effects: Vec::new(),
            body: RoutineBody::Replacements(replacements),
        }
    }
}

/// Placeholders 1, 2, 3, 10 and 11 of a routine, with what its taping
/// code pushes.
struct RoutineCode {
    list: Vec<(u32, Option<CfgId>, bool)>,
    rstats: RoutineStats,
    doubles: usize,
    integers: usize,
    explicit_loops: usize,
    structured: bool,
    restored_formals: Vec<SymbolId>,
}

/// What a routine's re-execution from its argument checkpoint may find
/// changed (seed "TBR analysis" §5 at call sites): a global the routine
/// reads needs checkpointing only when the routine itself or the code that
/// runs after it returns (before its reversal) may overwrite it. Formals
/// keep the front end's rule.
///
/// Only TBR's two routine-level sets are computed (not the requirement
/// analysis, the per-statement results or activity, which the answers do
/// not depend on), and only the answers are kept: the analysis is dropped
/// before the output copy is made.
struct Changes {
    /// (routine, symbol) of the routines' `Read` lists that the analysis
    /// proves unchanged at the routine's reversal.
    unchanged: FxHashSet<(RoutineId, SymbolId)>,
}

impl Changes {
    /// The answers for the `Read` lists of `p` (the front end's, or the
    /// `inferred` ones) from the analysis's `facts` and `overwrites`.
    fn new(
        p: &Program,
        facts: &xaif_dataflow::ProgramFacts<'_>,
        overwrites: &xaif_model::SecondaryMap<xaif_model::Routine, xaif_dataflow::Overwrites>,
        inferred: &FxHashMap<RoutineId, Vec<VarRef>>,
    ) -> Self {
        let symbols = xaif_model::SymbolIndex::new(p);
        let mut unchanged = FxHashSet::default();
        for (r, routine) in p.routines.iter() {
            let read = match routine.side_effect(SideEffectKind::Read) {
                Some(list) => &list.refs,
                None => match inferred.get(&r) {
                    Some(refs) => refs,
                    None => continue,
                },
            };
            for v in read {
                let s = v.graph.symbol_ref().and_then(|a| symbols.resolve(a));
                if let Some(s) = s {
                    if !may_change(facts, overwrites, r, s) {
                        unchanged.insert((r, s));
                    }
                }
            }
        }
        Changes { unchanged }
    }

    /// Whether `s`, read by routine `r`, may differ when `r` is re-run at
    /// its reversal (true when the analysis has no answer).
    fn may_change(&self, r: RoutineId, s: SymbolId) -> bool {
        !self.unchanged.contains(&(r, s))
    }
}

/// [`Changes::may_change`] asked of the analysis.
fn may_change(
    facts: &xaif_dataflow::ProgramFacts<'_>,
    overwrites: &xaif_model::SecondaryMap<xaif_model::Routine, xaif_dataflow::Overwrites>,
    r: RoutineId,
    s: SymbolId,
) -> bool {
    let (Some(storage), Some(rf), Some(rt)) = (
        facts.storage_of_symbol(s),
        facts.routines.get(&r),
        overwrites.get(r),
    ) else {
        return true;
    };
    // A formal may be bound to a fresh temporary at the reversed call
    // (argument conversion), so its checkpoint is its value.
    if !rf.universe.has(storage) || rf.formal_position(storage).is_some() {
        return true;
    }
    let slots = rf.slots_of(storage);
    slots.intersects(&rt.may_write) || slots.intersects(&rt.overwritten_after)
}

/// The data-flow answers argument checkpoints need, from one analysis of
/// `p` made before the output copy exists (it is the largest thing a run
/// holds besides the input, and only its answers are kept): the `Read`
/// lists inferred for routines without one ([`inferred_reads`]), and what
/// the re-runs may find changed ([`Changes`]; `None` with
/// `--full-checkpoints`, when the analysis fails, or when a marker may
/// stand for a store the XAIF does not carry).
fn checkpoint_analysis(
    p: &Program,
    options: &AdjointOptions,
) -> (FxHashMap<RoutineId, Vec<VarRef>>, Option<Changes>) {
    let missing: Vec<RoutineId> = p
        .routines
        .iter()
        .filter(|(_, r)| {
            matches!(r.body, RoutineBody::Graph(_))
                && r.has_body(p)
                && r.side_effect(SideEffectKind::Read).is_none()
        })
        .map(|(id, _)| id)
        .collect();
    let opaque = p.stmts.iter().any(|(_, s)| {
        matches!(s.kind, StmtKind::Marker)
            && crate::explicit::marker_may_store(s.attrs.get("annotation").unwrap_or(""))
    });
    let want_changes = !options.full_checkpoints && !opaque;
    if !want_changes && missing.is_empty() {
        return (FxHashMap::default(), None);
    }
    let analysis = xaif_dataflow::analyze_checkpoints(
        p,
        xaif_dataflow::Solver::default(),
        options.pessimistic_black_boxes,
        want_changes,
        !missing.is_empty(),
    )
    .ok();
    let inferred = inferred_reads(
        p,
        &missing,
        analysis
            .as_ref()
            .and_then(|(facts, sets)| Some((facts, sets.may_read.as_ref()?))),
    );
    let changes = analysis.as_ref().and_then(|(facts, sets)| {
        Some(Changes::new(p, facts, sets.overwrites.as_ref()?, &inferred))
    });
    (inferred, changes)
}

/// The `Read` side-effect list of every routine with a body whose input
/// has none (the lists are optional in XAIF; OpenAD's front end always
/// writes them, hand-written and generated XAIF often does not): the
/// formals and the variables shared with other routines (globals, module
/// and host variables) that the routine or its callees may read, from the
/// data-flow analysis, in the order of the analysis's storages. A joint
/// reversal re-runs each routine from its argument checkpoint; with no
/// list at all nothing would be checkpointed and the re-run would start
/// from the values the forward run left behind. When the analysis cannot
/// answer, every formal and every variable of scope 1 is listed (more
/// checkpointing, never a re-run from wrong values). Routines that have
/// a list keep it (the reference engine's behaviour).
fn inferred_reads(
    p: &Program,
    missing: &[RoutineId],
    analysis: Option<(
        &xaif_dataflow::ProgramFacts<'_>,
        &xaif_model::SecondaryMap<xaif_model::Routine, xaif_dataflow::LocSet>,
    )>,
) -> FxHashMap<RoutineId, Vec<VarRef>> {
    let mut out = FxHashMap::default();
    if missing.is_empty() {
        return out;
    }
    let reference = |s: SymbolId| whole_variable(p, s);
    match analysis {
        Some((facts, reads)) => {
            for &r in missing {
                let (Some(rf), Some(set)) = (facts.routines.get(&r), reads.get(r)) else {
                    continue;
                };
                let own = facts.own_symbols(r);
                let mut seen = FxHashSet::default();
                let mut refs = Vec::new();
                for slot in set.iter() {
                    let storage = rf.universe.slot(slot).storage;
                    if !seen.insert(storage) {
                        continue;
                    }
                    let st = &facts.storages[storage.index()];
                    let symbol = match &st.key {
                        xaif_dataflow::loc::StorageKey::Local { routine, symbol } => {
                            if *routine == r && rf.formal_position(storage).is_none() {
                                continue;
                            }
                            *symbol
                        }
                        xaif_dataflow::loc::StorageKey::Shared(_) => {
                            match own.get(&storage).or(st.symbols.first()) {
                                Some(s) => *s,
                                None => continue,
                            }
                        }
                    };
                    refs.extend(reference(symbol));
                }
                out.insert(r, refs);
            }
        }
        None => out = all_formals_and_globals(p, missing),
    }
    out
}

/// A reference to the whole variable `s` (as side-effect lists hold them).
fn whole_variable(p: &Program, s: SymbolId) -> Option<VarRef> {
    let sym = &p.symbols[s];
    let scope = p.scopes[sym.scope].attrs.get("vertex_id")?;
    let name = sym.attrs.get("symbol_id")?;
    Some(VarRef::symbol(
        Attrs::new().with("vertex_id", "1"),
        scope,
        name,
    ))
}

/// The fallback of [`inferred_reads`]: for each routine of `missing`,
/// its formals and every variable of scope 1 (transformation
/// temporaries aside).
fn all_formals_and_globals(
    p: &Program,
    missing: &[RoutineId],
) -> FxHashMap<RoutineId, Vec<VarRef>> {
    let symbols = xaif_model::SymbolIndex::new(p);
    let reference = |s: SymbolId| whole_variable(p, s);
    let globals: Vec<SymbolId> = p
        .symbols
        .iter()
        .filter(|(_, sym)| {
            p.scopes[sym.scope].attrs.get("vertex_id") == Some("1")
                && sym.attrs.get("kind") == Some("variable")
                && sym.attrs.get("temp") != Some("1")
        })
        .map(|(id, _)| id)
        .collect();
    let mut out = FxHashMap::default();
    for &r in missing {
        let formals = p.routines[r]
            .arguments
            .iter()
            .flat_map(|l| l.args.iter().filter_map(|a| symbols.resolve(a)));
        let refs = formals
            .chain(globals.iter().copied())
            .filter_map(reference)
            .collect();
        out.insert(r, refs);
    }
    out
}

/// (callee symbol id, position) of every argument some call passes as a
/// variable.
fn variables_passed(p: &Program) -> FxHashSet<(String, i64)> {
    let mut out = FxHashSet::default();
    for (_, s) in p.stmts.iter() {
        if let StmtKind::SubroutineCall(args) = &s.kind {
            let callee = s.attrs.get("symbol_id").unwrap_or("").to_string();
            for (i, a) in args.iter().enumerate() {
                if matches!(a.value, ArgValue::Variable(_)) {
                    out.insert((
                        callee.clone(),
                        a.attrs.int("position").unwrap_or(i as i64 + 1),
                    ));
                }
            }
        }
    }
    out
}

/// `cp_arg_store_<type>_<shape>[_a][_d](r)` or the matching restore.
fn checkpoint_call(
    ctx: &Ctx<'_>,
    out: &mut Program,
    names: &mut Names,
    r: &VarRef,
    store: bool,
    deriv: bool,
) -> Option<StmtId> {
    let s = ctx.symbol_of(&r.graph)?;
    let sym = &ctx.p.symbols[s];
    let ty = match sym.ty() {
        xaif_model::SymbolType::Real => "real",
        xaif_model::SymbolType::Integer => "integer",
        xaif_model::SymbolType::Bool => "bool",
        xaif_model::SymbolType::String | xaif_model::SymbolType::Char => "string",
        _ => return None,
    };
    let shape = xaif_model::index::SHAPES[sym.rank().min(7)];
    let active = sym.is_active() && ty == "real";
    if deriv && !active {
        return None;
    }
    let suffix = match (active, deriv) {
        (true, true) => "_a_d",
        (true, false) => "_a",
        _ => "",
    };
    let verb = if store { "store" } else { "restore" };
    let name = format!("cp_arg_{verb}_{ty}_{shape}{suffix}");
    let id = names.statement(&name);
    Some(out.stmts.alloc(inlinable_call(
        &name,
        &id,
        vec![ArgValue::Variable(value_ref(r))],
    )))
}

/// The annotation of a checkpoint CFG's `Entry`, as the reference engine
/// writes it.
const CP_ENTRY: &str = "cp_entry";

/// A checkpoint CFG whose statements with a guard run only when that
/// optional formal is present (`if (present(f))`); without guards the
/// plain one-block CFG. `entry` annotates its `Entry`.
fn checkpoint_cfg_guarded(
    out: &mut Program,
    rid: RoutineId,
    scope_id: &str,
    entry: &str,
    stmts: Vec<(StmtId, Option<VarRef>)>,
) -> CfgId {
    if stmts.iter().all(|(_, g)| g.is_none()) {
        return checkpoint_cfg(
            out,
            rid,
            scope_id,
            entry,
            stmts.into_iter().map(|(s, _)| s).collect(),
        );
    }
    let mut b = checkpoint_frame(out, rid, entry);
    let block_attrs = || {
        Attrs::new()
            .with("annotation", "cp_basicblock")
            .with("scope_id", scope_id)
    };
    let mut last = "1".to_string();
    let mut plain: Vec<StmtId> = Vec::new();
    let flush =
        |b: &mut CfgBuilder, out: &mut Program, plain: &mut Vec<StmtId>, last: &mut String| {
            if plain.is_empty() {
                return;
            }
            let block = b.vertex(
                out,
                block_attrs(),
                VertexKind::BasicBlock(std::mem::take(plain)),
            );
            b.edge(out, last, &block, None);
            *last = block;
        };
    for (s, guard) in stmts {
        let Some(formal) = guard else {
            plain.push(s);
            continue;
        };
        flush(&mut b, out, &mut plain, &mut last);
        let mut cond = ExprBuilder::new();
        let arg = cond.reference(&value_ref(&formal));
        cond.intrinsic("present", &[arg]);
        let branch = b.vertex(out, Attrs::new(), VertexKind::Branch(Some(cond.finish())));
        b.edge(out, &last, &branch, None);
        let block = b.vertex(out, block_attrs(), VertexKind::BasicBlock(vec![s]));
        b.edge(out, &branch, &block, Some(1));
        let end = b.vertex(out, Attrs::new(), VertexKind::EndBranch);
        b.edge(out, &block, &end, None);
        b.edge(out, &branch, &end, None);
        last = end;
    }
    flush(&mut b, out, &mut plain, &mut last);
    b.edge(out, &last, "2", None);
    b.cfg
}

/// A checkpoint CFG's builder with its Entry (vertex 1, annotated `entry`)
/// and Exit (vertex 2), annotated as the reference engine does.
fn checkpoint_frame(out: &mut Program, rid: RoutineId, entry: &str) -> CfgBuilder {
    let mut b = CfgBuilder::new(out, rid, "_cp_");
    b.vertex_with_id(
        out,
        "1",
        Attrs::new().with("annotation", entry),
        VertexKind::Entry,
    );
    b.vertex_with_id(
        out,
        "2",
        Attrs::new().with("annotation", "cp_exit"),
        VertexKind::Exit,
    );
    b
}

/// A checkpoint CFG: Entry (annotated `entry`), Exit and one block
/// (annotated as the reference engine does).
fn checkpoint_cfg(
    out: &mut Program,
    rid: RoutineId,
    scope_id: &str,
    entry: &str,
    stmts: Vec<StmtId>,
) -> CfgId {
    let mut b = checkpoint_frame(out, rid, entry);
    b.vertex_with_id(
        out,
        "3",
        Attrs::new()
            .with("annotation", "cp_basicblock")
            .with("scope_id", scope_id),
        VertexKind::BasicBlock(stmts),
    );
    b.edge(out, "1", "3", None);
    b.edge(out, "3", "2", None);
    b.cfg
}

/// The routine with code that `-t TOP` names (by its symbol or its
/// Fortran name), if there is one: a driver that goes on without `-t`
/// when there is none, as the reference engine does, asks first.
pub fn top_routine(p: &Program, top: &str) -> Option<RoutineId> {
    p.routines
        .iter()
        .find(|(_, r)| {
            r.has_body(p)
                && (r.symbol_name() == top
                    || xaif_model::fortran_routine_name(r.symbol_name())
                        == top.to_ascii_lowercase())
        })
        .map(|(id, _)| id)
}

/// `-t`: the global variables (of scopes that belong to no routine) that
/// no routine reachable from `top` writes. Writes are assignments, call
/// arguments and inlinable-call arguments; a marker that may stand for a
/// store leaves nothing quasi-constant.
fn quasi_constant(
    p: &Program,
    ctx: &Ctx<'_>,
    routines: &xaif_model::RoutineIndex,
    top: &str,
) -> Result<rustc_hash::FxHashSet<SymbolId>, TransformError> {
    let start = top_routine(p, top).ok_or_else(|| {
        TransformError::Input(format!("-t {top}: no routine of that name with code"))
    })?;
    let routine_scopes: rustc_hash::FxHashSet<&str> = p
        .routines
        .iter()
        .filter_map(|(_, r)| r.attrs.get("controlflowgraph_scope_id"))
        .collect();
    let is_global = |s: SymbolId| {
        let sym = &p.symbols[s];
        sym.kind() == xaif_model::SymbolKind::Variable
            && !routine_scopes.contains(p.scopes[sym.scope].attrs.get("vertex_id").unwrap_or(""))
    };
    let mut written: rustc_hash::FxHashSet<String> = rustc_hash::FxHashSet::default();
    let mut seen = rustc_hash::FxHashSet::default();
    let mut work = vec![start];
    while let Some(r) = work.pop() {
        if !seen.insert(r) {
            continue;
        }
        let RoutineBody::Graph(cfg) = &p.routines[r].body else {
            continue;
        };
        let mut note = |g: &xaif_model::RefGraph| {
            if let Some(s) = ctx.symbol_of(g) {
                written.insert(xaif_model::base_name(p.symbols[s].name()));
            }
        };
        for v in p.cfgs[*cfg].vertex_ids() {
            let stmts: Vec<StmtId> = match &p.vertices[v].kind {
                VertexKind::BasicBlock(s) => s.clone(),
                VertexKind::ForLoop { init, update, .. } => {
                    init.iter().chain(update).copied().collect()
                }
                _ => Vec::new(),
            };
            for s in stmts {
                match &p.stmts[s].kind {
                    StmtKind::Assignment(a) => note(&a.lhs.graph),
                    StmtKind::SubroutineCall(args) => {
                        for a in args {
                            if let xaif_model::ArgValue::Variable(v) = &a.value {
                                note(&v.graph);
                            }
                        }
                        if let Some(c) = p.stmts[s]
                            .attrs
                            .get("symbol_id")
                            .and_then(|c| routines.get(c))
                        {
                            work.push(c);
                        }
                    }
                    StmtKind::InlinableCall(args) => {
                        for a in args {
                            match a {
                                xaif_model::InlinableArg::Argument(a) => {
                                    if let xaif_model::ArgValue::Variable(v) = &a.value {
                                        note(&v.graph);
                                    }
                                }
                                xaif_model::InlinableArg::Substitute(v) => note(&v.graph),
                            }
                        }
                    }
                    StmtKind::Marker => {
                        if crate::explicit::marker_may_store(
                            p.stmts[s].attrs.get("annotation").unwrap_or(""),
                        ) {
                            return Ok(Default::default());
                        }
                    }
                    StmtKind::DerivativePropagator(_) => {}
                }
            }
        }
    }
    Ok(p.symbols
        .ids()
        .filter(|&s| is_global(s) && !written.contains(&xaif_model::base_name(p.symbols[s].name())))
        .collect())
}

/// A copy of routine body `cfg` in `out`, with the statements of the
/// basic blocks in `blocks` replaced.
fn copy_cfg(
    p: &Program,
    out: &mut Program,
    rid: RoutineId,
    cfg: CfgId,
    blocks: &FxHashMap<VertexId, Vec<StmtId>>,
) -> CfgId {
    let new = out.cfgs.alloc(Cfg {
        routine: rid,
        items: Vec::new(),
    });
    for item in &p.cfgs[cfg].items {
        let copied = match *item {
            CfgItem::Vertex(v) => CfgItem::Vertex(out.vertices.alloc(CfgVertex {
                attrs: p.vertices[v].attrs.clone(),
                cfg: new,
                kind: match blocks.get(&v) {
                    Some(stmts) => VertexKind::BasicBlock(stmts.clone()),
                    None => p.vertices[v].kind.clone(),
                },
            })),
            CfgItem::Edge(e) => CfgItem::Edge(out.edges.alloc(CfgEdge {
                attrs: p.edges[e].attrs.clone(),
                cfg: new,
            })),
        };
        out.cfgs[new].items.push(copied);
    }
    new
}

/// `-D`: a block of `ZeroDeriv`s for the active locals right after the
/// adjoint entry.
fn zero_active_locals(
    ctx: &Ctx<'_>,
    out: &mut Program,
    rid: RoutineId,
    adjoint: CfgId,
    scope: xaif_model::ScopeId,
    scope_id: &str,
) {
    let entries: Vec<PropEntry> = xaif_linearize::tangent::zeroable_active_locals(ctx, rid, scope)
        .into_iter()
        .map(|s| PropEntry {
            attrs: Attrs::new(),
            kind: PropKind::ZeroDeriv(VarRef::symbol(
                Attrs::new().with("deriv", "1"),
                scope_id,
                ctx.p.symbols[s].name(),
            )),
        })
        .collect();
    if entries.is_empty() {
        return;
    }
    let zero = out.stmts.alloc(Stmt {
        attrs: Attrs::new(),
        kind: StmtKind::DerivativePropagator(entries),
    });
    // The entry's successor gets the zeroing first.
    let g = xaif_model::CfgGraph::new(out, adjoint);
    let Some(entry) = g.entry else { return };
    let Some(&(edge, first)) = g.successors(entry).first() else {
        return;
    };
    match &mut out.vertices[first].kind {
        VertexKind::BasicBlock(stmts) => stmts.insert(0, zero),
        _ => {
            let id = "_adj_zero_locals";
            let v = out.vertices.alloc(CfgVertex {
                attrs: Attrs::new()
                    .with("vertex_id", id)
                    .with("scope_id", scope_id),
                cfg: adjoint,
                kind: VertexKind::BasicBlock(vec![zero]),
            });
            let target = out.vertices[first]
                .attrs
                .get("vertex_id")
                .unwrap_or("")
                .to_string();
            out.edges[edge].attrs.set("target", id);
            let e = out.edges.alloc(CfgEdge {
                attrs: Attrs::new()
                    .with("edge_id", "_adj_zero_locals_edge")
                    .with("source", id)
                    .with("target", target),
                cfg: adjoint,
            });
            out.cfgs[adjoint].items.push(CfgItem::Vertex(v));
            out.cfgs[adjoint].items.push(CfgItem::Edge(e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A routine `f(a, b)` without side-effect lists and a global `g`.
    fn program() -> Program {
        let text = r#"<?xml version="1.0" encoding="UTF-8"?>
<xaif:CallGraph xmlns:xaif="http://www.mcs.anl.gov/XAIF" program_name="p" prefix="OpenAD_">
  <xaif:ScopeHierarchy>
    <xaif:Scope vertex_id="1">
      <xaif:SymbolTable>
        <xaif:Symbol symbol_id="g" kind="variable" type="real" shape="scalar" active="1"/>
        <xaif:Symbol symbol_id="t" kind="variable" type="real" shape="scalar" active="1" temp="1"/>
        <xaif:Symbol symbol_id="f" kind="subroutine" type="void" active="0"/>
      </xaif:SymbolTable>
    </xaif:Scope>
    <xaif:Scope vertex_id="2">
      <xaif:SymbolTable>
        <xaif:Symbol symbol_id="a" kind="variable" type="real" shape="scalar" active="1"/>
        <xaif:Symbol symbol_id="b" kind="variable" type="real" shape="scalar" active="1"/>
      </xaif:SymbolTable>
    </xaif:Scope>
    <xaif:ScopeEdge edge_id="1" source="2" target="1"/>
  </xaif:ScopeHierarchy>
  <xaif:ControlFlowGraph vertex_id="1" scope_id="1" symbol_id="f" controlflowgraph_scope_id="2">
    <xaif:ArgumentList>
      <xaif:ArgumentSymbolReference position="1" scope_id="2" symbol_id="a" intent="inout"/>
      <xaif:ArgumentSymbolReference position="2" scope_id="2" symbol_id="b" intent="inout"/>
    </xaif:ArgumentList>
    <xaif:Entry vertex_id="1"/>
    <xaif:BasicBlock vertex_id="2" scope_id="2">
      <xaif:Assignment statement_id="1">
        <xaif:AssignmentLHS><xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="b"/></xaif:AssignmentLHS>
        <xaif:AssignmentRHS>
          <xaif:VariableReference vertex_id="1"><xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="a"/></xaif:VariableReference>
          <xaif:VariableReference vertex_id="2"><xaif:SymbolReference vertex_id="1" scope_id="1" symbol_id="g"/></xaif:VariableReference>
          <xaif:Intrinsic vertex_id="3" name="mul_scal_scal"/>
          <xaif:ExpressionEdge edge_id="1" source="1" target="3" position="1"/>
          <xaif:ExpressionEdge edge_id="2" source="2" target="3" position="2"/>
        </xaif:AssignmentRHS>
      </xaif:Assignment>
    </xaif:BasicBlock>
    <xaif:Exit vertex_id="3"/>
    <xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>
    <xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>
  </xaif:ControlFlowGraph>
</xaif:CallGraph>
"#;
        xaif_model::read_program_str(text, None).unwrap().0
    }

    fn names(refs: &[VarRef]) -> Vec<(String, String)> {
        refs.iter()
            .map(|r| {
                let (scope, symbol) = r.graph.symbol_ids().unwrap();
                (scope.to_string(), symbol.to_string())
            })
            .collect()
    }

    #[test]
    fn a_routine_without_a_read_list_gets_the_formals_and_globals_it_reads() {
        let p = program();
        let (inferred, _) = checkpoint_analysis(&p, &AdjointOptions::default());
        let (rid, _) = p.routines.iter().next().unwrap();
        // `b` is only written; `a` and `g` are read.
        let mut got = names(&inferred[&rid]);
        got.sort();
        assert_eq!(
            got,
            vec![
                ("1".to_string(), "g".to_string()),
                ("2".to_string(), "a".to_string())
            ]
        );
    }

    /// `f` reads the global through its own declaration `g_1` and calls
    /// `h`, which reads it as `g_2` (one storage: scope-1 variables are one
    /// by their name without the `_<n>` suffix).
    fn two_declarations() -> Program {
        let assign = |lhs: (&str, &str), rhs: (&str, &str)| {
            format!(
                r#"<xaif:Assignment statement_id="s{0}{1}">
        <xaif:AssignmentLHS><xaif:SymbolReference vertex_id="1" scope_id="{0}" symbol_id="{1}"/></xaif:AssignmentLHS>
        <xaif:AssignmentRHS><xaif:VariableReference vertex_id="1"><xaif:SymbolReference vertex_id="1" scope_id="{2}" symbol_id="{3}"/></xaif:VariableReference></xaif:AssignmentRHS>
      </xaif:Assignment>"#,
                lhs.0, lhs.1, rhs.0, rhs.1
            )
        };
        let text = format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<xaif:CallGraph xmlns:xaif="http://www.mcs.anl.gov/XAIF" program_name="p" prefix="OpenAD_">
  <xaif:ScopeHierarchy>
    <xaif:Scope vertex_id="1"><xaif:SymbolTable>
      <xaif:Symbol symbol_id="g_1" kind="variable" type="real" shape="scalar" active="1"/>
      <xaif:Symbol symbol_id="g_2" kind="variable" type="real" shape="scalar" active="1"/>
      <xaif:Symbol symbol_id="f" kind="subroutine" type="void" active="0"/>
      <xaif:Symbol symbol_id="h" kind="subroutine" type="void" active="0"/>
    </xaif:SymbolTable></xaif:Scope>
    <xaif:Scope vertex_id="2"><xaif:SymbolTable>
      <xaif:Symbol symbol_id="a" kind="variable" type="real" shape="scalar" active="1"/>
    </xaif:SymbolTable></xaif:Scope>
    <xaif:Scope vertex_id="3"><xaif:SymbolTable>
      <xaif:Symbol symbol_id="b" kind="variable" type="real" shape="scalar" active="1"/>
    </xaif:SymbolTable></xaif:Scope>
    <xaif:ScopeEdge edge_id="1" source="2" target="1"/>
    <xaif:ScopeEdge edge_id="2" source="3" target="1"/>
  </xaif:ScopeHierarchy>
  <xaif:ControlFlowGraph vertex_id="1" scope_id="1" symbol_id="f" controlflowgraph_scope_id="2">
    <xaif:ArgumentList><xaif:ArgumentSymbolReference position="1" scope_id="2" symbol_id="a" intent="inout"/></xaif:ArgumentList>
    <xaif:Entry vertex_id="1"/>
    <xaif:BasicBlock vertex_id="2" scope_id="2">
      {}
      <xaif:SubroutineCall statement_id="c" scope_id="1" symbol_id="h" formalArgCount="1">
        <xaif:Argument position="1"><xaif:VariableReference vertex_id="1"><xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="a"/></xaif:VariableReference></xaif:Argument>
      </xaif:SubroutineCall>
    </xaif:BasicBlock>
    <xaif:Exit vertex_id="3"/>
    <xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>
    <xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>
  </xaif:ControlFlowGraph>
  <xaif:ControlFlowGraph vertex_id="2" scope_id="1" symbol_id="h" controlflowgraph_scope_id="3">
    <xaif:ArgumentList><xaif:ArgumentSymbolReference position="1" scope_id="3" symbol_id="b" intent="inout"/></xaif:ArgumentList>
    <xaif:Entry vertex_id="1"/>
    <xaif:BasicBlock vertex_id="2" scope_id="3">
      {}
    </xaif:BasicBlock>
    <xaif:Exit vertex_id="3"/>
    <xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>
    <xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>
  </xaif:ControlFlowGraph>
</xaif:CallGraph>
"#,
            assign(("2", "a"), ("1", "g_1")),
            assign(("3", "b"), ("1", "g_2")),
        );
        xaif_model::read_program_str(&text, None).unwrap().0
    }

    #[test]
    fn an_inferred_list_names_a_shared_variable_by_the_routines_own_declaration() {
        let p = two_declarations();
        let (inferred, _) = checkpoint_analysis(&p, &AdjointOptions::default());
        let by_name = |name: &str| {
            let (rid, _) = p
                .routines
                .iter()
                .find(|(_, r)| r.symbol_name() == name)
                .unwrap();
            names(&inferred[&rid])
        };
        // `f` reads the storage itself (as `g_1`) and through `h` (as
        // `g_2`): one entry, its own name; passing `a` on counts as a read
        // (the analysis's conservative view of a call). `h` only writes
        // its formal.
        assert_eq!(
            by_name("f"),
            vec![
                ("2".to_string(), "a".to_string()),
                ("1".to_string(), "g_1".to_string())
            ]
        );
        assert_eq!(by_name("h"), vec![("1".to_string(), "g_2".to_string())]);
    }

    #[test]
    fn without_the_analysis_every_formal_and_global_is_listed() {
        let p = program();
        let (rid, _) = p.routines.iter().next().unwrap();
        let all = all_formals_and_globals(&p, &[rid]);
        assert_eq!(
            names(&all[&rid]),
            vec![
                ("2".to_string(), "a".to_string()),
                ("2".to_string(), "b".to_string()),
                ("1".to_string(), "g".to_string()),
            ]
        );
    }
}
