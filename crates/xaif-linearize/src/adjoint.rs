//! Adjoint basic blocks (seed "control flow reversal" §3): the taping form
//! and the adjoint form of every basic block.
//!
//! The taping form is the preaccumulated code of each sequence (Eq. (5):
//! statements, partials, accumulations) followed by pushes of every
//! non-constant Jacobian factor and of the values of every non-constant
//! subscript the adjoint references need. The adjoint form visits the
//! pieces of the block backwards: it pops those values in reverse and runs
//! the transposed propagation (Eq. (6)) with the adjoint calls of
//! `../shared/docs/xaif-semantics.md` §6.2, whose argument order puts the
//! original target first and the updated variable last: `Saxpy(a, t, s)`
//! is `s.d += a·t.d`, `IncDeriv(t, s)` is `s.d += t.d`. Calls to routines
//! of the program are re-emitted at their reversed position.

use rustc_hash::{FxHashMap, FxHashSet};
use xaif_model::{
    build::{assignment, inlinable_call},
    ArgValue, Attrs, CallArg, Expr, ExprBuilder, ExprVertexKind, Program, RoutineIndex, ScopeId,
    Stmt, StmtId, StmtKind, SymbolId, VarRef,
};

use crate::catalogue::Catalogue;
use crate::context::{Ctx, Shape, ValueType};
use crate::flatten::{direct_action, flatten, FlattenError, FlattenOptions, GraphStats, Piece};
use crate::preaccumulate::{preaccumulate, Factor, PreaccError, Preaccumulated, Target};
use crate::tangent::{
    convert_call, derivative_assignment, with_symbol, ConvertedArg, ConvertedCall,
};
use crate::temps::{
    add, declare, for_each_variable_subscript, integer_temp, read_temp, set_temp, value_ref, Names,
    TempKind,
};

/// The two forms of one basic block.
#[derive(Clone, Debug, Default)]
pub struct AdjointBlock {
    /// Taping form (placeholder 2).
    pub taping: Vec<StmtId>,
    /// Adjoint form (placeholder 3).
    pub adjoint: Vec<StmtId>,
    /// Statistics of the block's graphs.
    pub graphs: Vec<GraphStats>,
    /// The Graphviz text of each of [`AdjointBlock::graphs`], with
    /// [`BlockEnv::dot`] (unnamed: the caller knows the routine).
    pub dots: Vec<crate::tangent::DotGraph>,
    /// Doubles and integers the taping form pushes per execution.
    pub pushes: (usize, usize),
    /// Stable symbols (see [`StableIndices`]) the adjoint form reads
    /// instead of taped values.
    pub stable_reads: Vec<SymbolId>,
}

/// Why an adjoint block could not be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AdjointError {
    /// Flattening or linearization failed.
    #[error(transparent)]
    Flatten(#[from] FlattenError),
    /// Preaccumulation failed.
    #[error(transparent)]
    Preaccumulation(#[from] PreaccError),
    /// A construct without an adjoint.
    #[error("statement `{0}`: {1}")]
    Unsupported(String, String),
}

/// What the adjoint generator needs besides the program.
pub struct BlockEnv<'a> {
    /// The catalogue.
    pub catalogue: &'a Catalogue,
    /// Direct-action intrinsics (`-N`).
    pub is_direct: &'a dyn Fn(&str) -> bool,
    /// Routines of the program.
    pub routines: &'a RoutineIndex,
    /// Flattening options.
    pub flatten: FlattenOptions,
    /// Elimination configuration, with the results found so far
    /// (reused for graphs of the same shape).
    pub elimination: &'a xaif_elim::Memo,
    /// Whether to keep each eliminated graph as Graphviz text (the
    /// driver's `--dot` and `-g 8`).
    pub dot: bool,
    /// The second thread eliminating ahead, told of every block started.
    pub ahead: Option<&'a crate::ahead::Ahead<'a>>,
}

/// Integer variables whose values at the adjoint form's execution equal
/// their values when the taping form ran, so subscripts built from them
/// need no taping: inside an explicitly reversed loop, the loop variables
/// of the enclosing explicit loops (the adjoint loops run them backwards)
/// and the variables nothing in the outermost explicit loop assigns (the
/// control flow reversal restores them before the adjoint loop).
#[derive(Clone, Debug)]
pub struct StableIndices {
    /// Loop variables of the enclosing explicitly reversed loops.
    pub controlled: Vec<SymbolId>,
    /// Symbols the outermost explicit loop may assign (its body's
    /// assignments, call arguments, loop variables).
    pub assigned: std::rc::Rc<FxHashSet<SymbolId>>,
    /// Whether the loop calls routines or functions, which may change
    /// variables outside the routine's own scope.
    pub calls: bool,
    /// Whether the loop holds a statement the front end did not translate
    /// that may store anywhere (only the loop variables stay stable).
    pub opaque: bool,
    /// The routine's own scope.
    pub local_scope: ScopeId,
}

impl StableIndices {
    /// Whether the adjoint may read `s` instead of a taped value.
    pub fn contains(&self, p: &Program, s: SymbolId) -> bool {
        if self.controlled.contains(&s) {
            return true;
        }
        let sym = &p.symbols[s];
        !self.opaque
            && sym.rank() == 0
            && sym.ty() == xaif_model::SymbolType::Integer
            && !self.assigned.contains(&s)
            && (sym.scope == self.local_scope || !self.calls)
    }
}

fn call(out: &mut Program, names: &mut Names, name: &str, args: Vec<ArgValue>) -> StmtId {
    let id = names.statement(name);
    add(out, inlinable_call(name, &id, args))
}

fn var(r: &VarRef) -> ArgValue {
    ArgValue::Variable(value_ref(r))
}

/// Tapes the non-constant subscripts of references the adjoint uses: the
/// taping form pushes their values, the adjoint form pops them into integer
/// temporaries that replace the subscript expressions. A subscript that
/// computes from scalar integer variables, all but at most one of them
/// already taped here, tapes that one variable instead of its value and
/// is evaluated again from the popped variables (`x(k)` and `x(k+1)` tape
/// `k` once, as the reference engine does), which never tapes more than
/// one value per subscript.
struct IndexTape<'s> {
    pushes: Vec<StmtId>,
    pops: Vec<StmtId>,
    /// References already taped, by their text (a map: a call passes
    /// each argument through a fresh temporary, so a list searched per
    /// reference was quadratic in the number of arguments).
    seen: FxHashMap<String, VarRef>,
    /// Subscript expressions already taped, by canonical text, with what
    /// the adjoint reads instead: every push of one tape runs at the same
    /// point, so one expression has one value there (`y(i) = x(i)` tapes
    /// `i` once). A map for the same reason as `seen`.
    subscripts: FxHashMap<String, Expr>,
    /// Scalar integer variables taped here, with what the adjoint reads
    /// instead.
    variables: FxHashMap<SymbolId, Expr>,
    integers: usize,
    stable: Option<&'s StableIndices>,
    /// Stable symbols the adjoint reads directly.
    read: Vec<SymbolId>,
    /// Whether values are saved in temporaries first (`frozen`, to run
    /// before a call that may change them) and pushed later (`pushes`,
    /// after the call, so that they sit above what the callee pushes).
    freeze: bool,
    frozen: Vec<StmtId>,
}

impl<'s> IndexTape<'s> {
    fn new(stable: Option<&'s StableIndices>) -> Self {
        IndexTape {
            pushes: Vec::new(),
            pops: Vec::new(),
            seen: FxHashMap::default(),
            subscripts: FxHashMap::default(),
            variables: FxHashMap::default(),
            integers: 0,
            stable,
            read: Vec::new(),
            freeze: false,
            frozen: Vec::new(),
        }
    }

    /// The symbols of `e` when every variable it reads is stable (then the
    /// adjoint can evaluate it again).
    fn stable_symbols(&self, ctx: &Ctx<'_>, e: &Expr) -> Option<Vec<SymbolId>> {
        let stable = self.stable?;
        let mut symbols = Vec::new();
        for v in &e.vertices {
            match &v.kind {
                ExprVertexKind::Constant | ExprVertexKind::Intrinsic => {}
                ExprVertexKind::VariableReference(g) => {
                    if !g.subscripts().is_empty() {
                        return None;
                    }
                    let s = ctx.symbol_of(g)?;
                    if !stable.contains(ctx.p, s) {
                        return None;
                    }
                    symbols.push(s);
                }
                _ => return None,
            }
        }
        Some(symbols)
    }

    /// The adjoint version of `r`: its non-constant subscripts replaced by
    /// popped values (pushes and pops are recorded).
    fn adjoint_ref(&mut self, ctx: &Ctx<'_>, t: &mut Target<'_>, r: &VarRef) -> VarRef {
        let key = crate::context::ref_text(&r.graph);
        if let Some(done) = self.seen.get(&key) {
            return with_attrs_of(done, r);
        }
        let mut adj = r.clone();
        for_each_variable_subscript(&mut adj, |e| {
            if let Some(symbols) = self.stable_symbols(ctx, e) {
                self.read.extend(symbols);
                return;
            }
            let text = crate::context::expr_text(e);
            if let Some(popped) = self.subscripts.get(&text) {
                *e = popped.clone();
                return;
            }
            if self.tape_variables(ctx, t, e) {
                self.subscripts.insert(text, e.clone());
                return;
            }
            // Taping: push the value (through a temporary when it is not a
            // single variable, or when it must be saved before a call). A
            // subscript may be an integer array (`a(maxloc(a))`, a vector
            // subscript): it is taped whole, in a temporary of its shape.
            let shape = subscript_shape(ctx, t, e);
            let single = if self.freeze {
                None
            } else {
                single_reference(e)
            };
            let pushed = single.unwrap_or_else(|| {
                let temp = index_temp(t, &shape);
                let save = set_temp(t.out, t.names, "index", &temp, e.clone());
                if self.freeze {
                    self.frozen.push(save);
                } else {
                    self.pushes.push(save);
                }
                temp
            });
            // Adjoint: pop into a fresh integer and read it instead.
            let popped = self.push_and_pop(t, &pushed, &shape);
            *e = read_temp(&popped);
            self.subscripts.insert(text, e.clone());
        });
        self.seen.insert(key, adj.clone());
        adj
    }

    /// Pushes the integer `pushed` on the taping side and pops it into a
    /// fresh integer on the adjoint side, which is returned.
    fn push_and_pop(&mut self, t: &mut Target<'_>, pushed: &VarRef, shape: &Shape) -> VarRef {
        let push = push_name("push_i", shape.rank);
        self.pushes
            .push(call(t.out, t.names, &push, vec![var(pushed)]));
        self.integers += 1;
        let popped = index_temp(t, shape);
        let pop = push_name("pop_i", shape.rank);
        self.pops
            .push(call(t.out, t.names, &pop, vec![var(&popped)]));
        popped
    }

    /// Tapes the variables of `e` instead of its value when every variable
    /// it reads is a scalar integer of the program and at most one of them
    /// is not taped here yet, and rewrites `e` to read the popped values;
    /// `false` (and nothing done) otherwise.
    fn tape_variables(&mut self, ctx: &Ctx<'_>, t: &mut Target<'_>, e: &mut Expr) -> bool {
        let mut reads: Vec<(usize, SymbolId)> = Vec::new();
        let mut missing: Option<(SymbolId, VarRef)> = None;
        for (k, v) in e.vertices.iter().enumerate() {
            match &v.kind {
                ExprVertexKind::Constant | ExprVertexKind::Intrinsic => {}
                ExprVertexKind::VariableReference(g) => {
                    let Some(s) = ctx.symbol_of(g) else {
                        return false;
                    };
                    if !g.subscripts().is_empty()
                        || ctx.var_type(g) != ValueType::Integer
                        || ctx.ref_shape(g).rank != 0
                    {
                        return false;
                    }
                    if !self.variables.contains_key(&s) {
                        match &missing {
                            Some((m, _)) if *m != s => return false,
                            Some(_) => {}
                            None => {
                                let r = VarRef {
                                    attrs: v.attrs.clone(),
                                    graph: g.clone(),
                                };
                                missing = Some((s, r));
                            }
                        }
                    }
                    reads.push((k, s));
                }
                _ => return false,
            }
        }
        if let Some((s, r)) = missing {
            // Taping: push the variable (through a temporary saved before
            // a call when it must be).
            let pushed = if self.freeze {
                let temp = integer_temp(t.out, t.names, t.scope);
                let mut b = ExprBuilder::new();
                b.reference(&r);
                let save = set_temp(t.out, t.names, "index", &temp, b.finish());
                self.frozen.push(save);
                temp
            } else {
                r
            };
            let popped = self.push_and_pop(t, &pushed, &Shape::SCALAR);
            self.variables.insert(s, read_temp(&popped));
        }
        for (k, s) in reads {
            let popped = &self.variables[&s].vertices[0];
            let mut attrs = popped.attrs.clone();
            if let Some(id) = e.vertices[k].attrs.get("vertex_id") {
                attrs.set("vertex_id", id);
            }
            e.vertices[k] = xaif_model::ExprVertex {
                attrs,
                kind: popped.kind.clone(),
            };
        }
        true
    }

    /// The pops in the order the adjoint form runs them.
    fn pops_reversed(&self) -> Vec<StmtId> {
        self.pops.iter().rev().copied().collect()
    }
}

fn with_attrs_of(graph_from: &VarRef, attrs_from: &VarRef) -> VarRef {
    VarRef {
        attrs: attrs_from.attrs.clone(),
        graph: graph_from.graph.clone(),
    }
}

fn single_reference(e: &Expr) -> Option<VarRef> {
    if e.vertices.len() != 1 {
        return None;
    }
    match &e.vertices[0].kind {
        ExprVertexKind::VariableReference(g) => Some(VarRef {
            attrs: e.vertices[0].attrs.clone(),
            graph: g.clone(),
        }),
        _ => None,
    }
}

/// The shape of a subscript's value: a scalar index, or an integer
/// array of known size (`maxloc` of a vector, an index array of one
/// element; larger ones are refused, `Ctx::vector_subscript`), also when
/// it is a temporary of the output (an index saved before its statement,
/// `crate::freeze`).
fn subscript_shape(ctx: &Ctx<'_>, t: &Target<'_>, e: &Expr) -> Shape {
    if let Some(r) = single_reference(e) {
        if ctx.symbol_of(&r.graph).is_none() && r.graph.subscripts().is_empty() {
            if let Some(sym) = output_symbol(t, &r) {
                let sym = &t.out.symbols[sym];
                let rank = sym.rank();
                if rank > 0 && sym.bounds.len() == rank {
                    let extents = sym
                        .source_bounds()
                        .iter()
                        .map(|(lo, hi)| (hi - lo + 1).max(0))
                        .collect();
                    return Shape {
                        rank,
                        extents: Some(extents),
                    };
                }
            }
        }
    }
    crate::dag::Dag::from_expr(e)
        .map(|d| ctx.infer(&d)[d.root].1.clone())
        .filter(|s| s.rank > 0 && s.extents.is_some())
        .unwrap_or(Shape::SCALAR)
}

/// The symbol of the output's target scope that `r` names (a temporary
/// the transformation declared).
fn output_symbol(t: &Target<'_>, r: &VarRef) -> Option<SymbolId> {
    let (_, name) = r.graph.symbol_ids()?;
    t.out.scopes[t.scope]
        .tables
        .iter()
        .flat_map(|table| table.symbols.iter())
        .copied()
        .find(|&sym| t.out.symbols[sym].name() == name)
}

/// An integer temporary of `shape` for a taped subscript value (for a
/// scalar, what [`integer_temp`] declares).
fn index_temp(t: &mut Target<'_>, shape: &Shape) -> VarRef {
    declare(
        t.out,
        t.names,
        t.scope,
        TempKind::Prp,
        ValueType::Integer,
        shape,
        false,
    )
    .var
}

fn push_name(tape: &str, rank: usize) -> String {
    format!("{tape}_s{rank}")
}

/// Whether a temporary of this shape is allocated at run time.
fn is_allocatable(shape: &Shape) -> bool {
    shape.rank > 0 && shape.extents.is_none()
}

/// Taping: `push_i_s0(size(f, d))` for every dimension `d`.
fn push_extents(t: &mut Target<'_>, f: &VarRef, rank: usize) -> Vec<StmtId> {
    let mut out = Vec::with_capacity(2 * rank);
    for d in 1..=rank {
        let n = integer_temp(t.out, t.names, t.scope);
        let mut b = ExprBuilder::new();
        let array = b.reference(&value_ref(f));
        let dim = b.constant("integer", &d.to_string());
        b.intrinsic("size", &[array, dim]);
        out.push(set_temp(t.out, t.names, "extent", &n, b.finish()));
        out.push(call(t.out, t.names, "push_i_s0", vec![var(&n)]));
    }
    out
}

/// Adjoint: pops the extents `push_extents` recorded (last dimension
/// first) and allocates `f` with them.
fn pop_extents_and_allocate(t: &mut Target<'_>, f: &VarRef, rank: usize) -> Vec<StmtId> {
    let mut out = Vec::with_capacity(rank + 1);
    let mut dims = Vec::with_capacity(rank);
    for _ in 0..rank {
        let n = integer_temp(t.out, t.names, t.scope);
        out.push(call(t.out, t.names, "pop_i_s0", vec![var(&n)]));
        dims.push(n);
    }
    dims.reverse();
    let mut args = vec![var(f)];
    args.extend(dims.iter().map(var));
    out.push(call(t.out, t.names, "oad_AllocateShape", args));
    out
}

/// The rank of the value `r` denotes: program variables through the
/// input's symbols, temporaries through the output's, where they are
/// declared.
fn value_rank(ctx: &Ctx<'_>, t: &Target<'_>, r: &VarRef) -> usize {
    if ctx.symbol_of(&r.graph).is_some() {
        return ctx.ref_shape(&r.graph).rank;
    }
    output_symbol(t, r).map_or(0, |sym| t.out.symbols[sym].rank())
}

/// `s.d = s.d ± sum(f · t.d)`: the adjoint of propagating scalar `s` to
/// every element of array `t` (no adjoint call reduces).
fn reduction(t: &mut Target<'_>, f: &Factor, target: &VarRef, s: &VarRef) -> StmtId {
    let deriv = |r: &VarRef, vertex: bool| {
        let mut attrs = value_ref(r).attrs;
        attrs.set("deriv", "1");
        if !vertex {
            attrs.discard("vertex_id");
        }
        r.with_attrs(attrs)
    };
    let mut b = ExprBuilder::new();
    let old = b.reference(&deriv(s, true));
    let tv = b.reference(&deriv(target, true));
    let product = match f {
        Factor::Unit | Factor::MinusOne => tv,
        Factor::Constant(c) => {
            let c = b.real(*c);
            b.intrinsic("mul_scal_scal", &[c, tv])
        }
        Factor::Var(v) => {
            let a = b.reference(&value_ref(v));
            b.intrinsic("mul_scal_scal", &[a, tv])
        }
    };
    let sum = b.intrinsic("sum_arr", &[product]);
    let op = if matches!(f, Factor::MinusOne) {
        "sub_scal_scal"
    } else {
        "add_scal_scal"
    };
    b.intrinsic(op, &[old, sum]);
    let id = t.names.statement("adjoint_reduction");
    add(t.out, assignment(&id, deriv(s, false), b.finish()))
}

/// The adjoint of a preaccumulated sequence, with its taping suffix.
fn sequence_adjoint(
    ctx: &Ctx<'_>,
    t: &mut Target<'_>,
    pre: &Preaccumulated,
    stable: Option<&StableIndices>,
    reads: &mut Vec<SymbolId>,
) -> (Vec<StmtId>, Vec<StmtId>, (usize, usize)) {
    let mut taping = pre.stmts.clone();
    let mut index = IndexTape::new(stable);
    // Adjoint references (index substitution records pushes in order).
    let mut adj_steps = Vec::with_capacity(pre.steps.len());
    for step in &pre.steps {
        let target = index.adjoint_ref(ctx, t, &step.target.var);
        let terms: Vec<(Factor, VarRef)> = step
            .terms
            .iter()
            .map(|(f, s)| (f.clone(), index.adjoint_ref(ctx, t, &s.var)))
            .collect();
        adj_steps.push((target, terms));
    }
    let zeros: Vec<VarRef> = pre
        .zeros
        .iter()
        .map(|z| index.adjoint_ref(ctx, t, z))
        .collect();
    let saves: Vec<(VarRef, VarRef)> = pre
        .saves
        .iter()
        .map(|(save, v)| (save.var.clone(), index.adjoint_ref(ctx, t, &v.var)))
        .collect();
    // Run-time shaped temporaries: the adjoint may run in a fresh
    // activation (split mode), so they get their shape there.
    let allocations: Vec<(VarRef, VarRef)> = pre
        .allocations
        .iter()
        .map(|(temp, like)| (temp.clone(), index.adjoint_ref(ctx, t, like)))
        .collect();
    // Taping: factors, then indices.
    let mut doubles = 0;
    let mut extents = 0;
    for (f, shape) in &pre.factors {
        taping.push(call(
            t.out,
            t.names,
            &push_name("push", shape.rank),
            vec![var(f)],
        ));
        doubles += shape
            .extents
            .as_ref()
            .map(|e| e.iter().product::<i64>().max(1) as usize)
            .unwrap_or(1);
        if is_allocatable(shape) {
            // The adjoint may run in a fresh activation (split mode) where
            // the factor is not allocated: record its extents too.
            taping.extend(push_extents(t, f, shape.rank));
            extents += shape.rank;
        }
    }
    taping.extend(index.pushes.iter().copied());
    // Adjoint: pops in reverse, then the transposed propagation.
    let mut adjoint = index.pops_reversed();
    for (temp, like) in &allocations {
        adjoint.push(call(
            t.out,
            t.names,
            "oad_AllocateMatching",
            vec![var(temp), var(like)],
        ));
    }
    for (f, shape) in pre.factors.iter().rev() {
        if is_allocatable(shape) {
            adjoint.extend(pop_extents_and_allocate(t, f, shape.rank));
        }
        adjoint.push(call(
            t.out,
            t.names,
            &push_name("pop", shape.rank),
            vec![var(f)],
        ));
    }
    for (target, terms) in adj_steps.iter().rev() {
        let target_rank = value_rank(ctx, t, target);
        for (f, s) in terms {
            if target_rank > 0 && value_rank(ctx, t, s) == 0 {
                // The tangent broadcast s to every element of the target:
                // its adjoint sums them.
                adjoint.push(reduction(t, f, target, s));
                continue;
            }
            let stmt = match f {
                Factor::Unit => call(t.out, t.names, "IncDeriv", vec![var(target), var(s)]),
                Factor::MinusOne => call(t.out, t.names, "DecDeriv", vec![var(target), var(s)]),
                Factor::Constant(c) => {
                    let constant = Attrs::new()
                        .with("vertex_id", "1")
                        .with("type", "real")
                        .with("value", xaif_model::build::real_text(*c));
                    call(
                        t.out,
                        t.names,
                        "Saxpy",
                        vec![ArgValue::Constant(constant), var(target), var(s)],
                    )
                }
                Factor::Var(v) => call(t.out, t.names, "Saxpy", vec![var(v), var(target), var(s)]),
            };
            adjoint.push(stmt);
        }
        adjoint.push(call(t.out, t.names, "ZeroDeriv", vec![var(target)]));
    }
    for z in zeros.iter().rev() {
        adjoint.push(call(t.out, t.names, "ZeroDeriv", vec![var(z)]));
    }
    for (save, v) in saves.iter().rev() {
        adjoint.push(call(t.out, t.names, "IncDeriv", vec![var(save), var(v)]));
        adjoint.push(call(t.out, t.names, "ZeroDeriv", vec![var(save)]));
    }
    reads.extend(index.read);
    (taping, adjoint, (doubles, index.integers + extents))
}

/// Builds both forms of a basic block.
pub fn adjoint_block(
    ctx: &Ctx<'_>,
    t: &mut Target<'_>,
    env: &BlockEnv<'_>,
    stmts: &[StmtId],
    stable: Option<&StableIndices>,
) -> Result<AdjointBlock, AdjointError> {
    let pieces = match env.ahead.and_then(|a| a.enter_block(stmts)) {
        Some(pieces) => pieces,
        None => flatten(ctx, env.catalogue, stmts, env.flatten, env.is_direct)?,
    };
    let mut block = AdjointBlock::default();
    let mut segments: Vec<Vec<StmtId>> = Vec::new();
    for piece in &pieces {
        match piece {
            Piece::Seq(seq) => {
                let pre = preaccumulate(
                    ctx,
                    t,
                    seq,
                    env.elimination,
                    xaif_elim::PropagationMode::Adjoint,
                    env.dot,
                )?;
                let (taping, adjoint, pushes) =
                    sequence_adjoint(ctx, t, &pre, stable, &mut block.stable_reads);
                block.taping.extend(taping);
                segments.push(adjoint);
                block.pushes.0 += pushes.0;
                block.pushes.1 += pushes.1;
                if seq.is_active() {
                    block.graphs.push(pre.stats);
                    if let Some(before) = &pre.dot_before {
                        block.dots.push(crate::tangent::DotGraph {
                            name: String::new(),
                            before: before.clone(),
                            after: pre.dot_after.clone(),
                            lcg: pre.lcg_text.clone().unwrap_or_default(),
                        });
                    }
                }
            }
            Piece::Single(s) => {
                let (taping, adjoint, ints) =
                    single(ctx, t, env, *s, stable, &mut block.stable_reads)?;
                block.taping.extend(taping);
                segments.push(adjoint);
                block.pushes.1 += ints;
            }
        }
    }
    for seg in segments.into_iter().rev() {
        block.adjoint.extend(seg);
    }
    Ok(block)
}

/// `oad_convert(temp, value)`, and for an active temporary `ZeroDeriv(temp)`:
/// what a fresh temporary of a reverse call needs before it (the callee
/// may run its forward sweep again from it in joint mode, and must not
/// see an adjoint of an earlier use).
fn give_value(t: &mut Target<'_>, temp: &VarRef, value: ArgValue, active: bool) -> Vec<StmtId> {
    let mut out = vec![call(t.out, t.names, "oad_convert", vec![var(temp), value])];
    if active {
        out.push(call(t.out, t.names, "ZeroDeriv", vec![var(temp)]));
    }
    out
}

/// A call, a marker or a direct action: taping and adjoint forms, and the
/// integers the taping form pushes.
fn single(
    ctx: &Ctx<'_>,
    t: &mut Target<'_>,
    env: &BlockEnv<'_>,
    s: StmtId,
    stable: Option<&StableIndices>,
    reads: &mut Vec<SymbolId>,
) -> Result<(Vec<StmtId>, Vec<StmtId>, usize), AdjointError> {
    let stmt = &ctx.p.stmts[s];
    match &stmt.kind {
        StmtKind::SubroutineCall(args) => {
            // The adjoint tapes every subscript of the arguments (the
            // reverse call passes the same elements): one that is a
            // vector subscript has no index taping (`Ctx::vector_subscript`).
            // A routine without a body is only run forward.
            let callee = stmt.attrs.get("symbol_id").unwrap_or("");
            let reversed = env
                .routines
                .get(callee)
                .is_some_and(|r| ctx.p.routines[r].has_body(ctx.p));
            for a in args.iter().filter(|_| reversed) {
                let ArgValue::Variable(r) = &a.value else {
                    continue;
                };
                if let Some(why) = ctx.vector_subscript(&r.graph) {
                    return Err(AdjointError::Flatten(FlattenError {
                        statement: stmt.id().to_string(),
                        span: stmt.attrs.span,
                        element: stmt.kind.element(),
                        source: crate::linearize::LinearizeError::Unsupported(format!(
                            "the call's argument {why}"
                        )),
                    }));
                }
            }
            Ok(reverse_call(ctx, t, env, s, args, stable, reads))
        }
        StmtKind::Assignment(a) if direct_action(a, env.is_direct) => {
            direct_action_adjoint(ctx, t, s, a)
        }
        _ => Ok((vec![s], Vec::new(), 0)),
    }
}

/// A call: the taping form runs the converted call, with the values of
/// its arguments' subscripts saved before it and pushed after it; the
/// adjoint form pops them and calls the callee's adjoint, with fresh
/// temporaries for the converted arguments. A routine without a body has
/// no adjoint: the call is only run forward.
fn reverse_call(
    ctx: &Ctx<'_>,
    t: &mut Target<'_>,
    env: &BlockEnv<'_>,
    s: StmtId,
    args: &[CallArg],
    stable: Option<&StableIndices>,
    reads: &mut Vec<SymbolId>,
) -> (Vec<StmtId>, Vec<StmtId>, usize) {
    let stmt = &ctx.p.stmts[s];
    let c = convert_call(ctx, t.out, t.names, t.scope, env.routines, s);
    let mut taping = c.before.clone();
    let forward_call = [c.call].into_iter().chain(c.after.iter().copied());
    let callee = stmt.attrs.get("symbol_id").unwrap_or("");
    let has_body = env
        .routines
        .get(callee)
        .is_some_and(|r| ctx.p.routines[r].has_body(ctx.p));
    if !has_body {
        // External routines have no adjoint of their own.
        taping.extend(forward_call);
        return (taping, Vec::new(), 0);
    }
    let mut index = IndexTape::new(stable);
    index.freeze = true;
    let mut allocations = Vec::new();
    let new_args = reverse_call_args(ctx, t, &c, args, &mut index, &mut allocations);
    // The subscripts' values at the call (the callee may change the
    // variables they read), pushed after it: the adjoint pops them
    // before it runs the callee's adjoint.
    taping.extend(index.frozen.iter().copied());
    taping.extend(forward_call);
    taping.extend(index.pushes.iter().copied());
    let mut adjoint = index.pops_reversed();
    adjoint.extend(allocations);
    reads.extend(index.read.iter().copied());
    let mut attrs = stmt.attrs.clone();
    attrs.set("statement_id", t.names.statement("reverse_call"));
    adjoint.push(add(
        t.out,
        Stmt {
            attrs,
            kind: StmtKind::SubroutineCall(new_args),
        },
    ));
    (taping, adjoint, index.integers)
}

/// The arguments of the reverse call: each converted argument through a
/// fresh temporary given its value (statements in `allocations`), every
/// reference with the subscripts the adjoint reads from `index`.
fn reverse_call_args(
    ctx: &Ctx<'_>,
    t: &mut Target<'_>,
    c: &ConvertedCall,
    args: &[CallArg],
    index: &mut IndexTape<'_>,
    allocations: &mut Vec<StmtId>,
) -> Vec<CallArg> {
    let mut new_args = Vec::with_capacity(args.len());
    // The first converted argument at each position, found in
    // constant time (a call may pass thousands of arguments).
    let mut converted: FxHashMap<usize, &ConvertedArg> = FxHashMap::default();
    for arg in &c.converted {
        converted.entry(arg.position).or_insert(arg);
    }
    for (i, a) in args.iter().enumerate() {
        let pos = a.attrs.int("position").unwrap_or(i as i64 + 1) as usize;
        let value = match &a.value {
            ArgValue::Constant(constant) => match converted.get(&pos) {
                // A constant the forward call passed through an
                // active temporary: the callee's adjoint gets a
                // fresh one, whose adjoint nobody reads.
                Some(arg) => {
                    let temp = declare(
                        t.out,
                        t.names,
                        t.scope,
                        TempKind::Tyc,
                        ValueType::Real,
                        &arg.shape,
                        arg.active,
                    );
                    let value = ArgValue::Constant(constant.clone());
                    allocations.extend(give_value(t, &temp.var, value, arg.active));
                    ArgValue::Variable(temp.var)
                }
                None => ArgValue::Constant(constant.clone()),
            },
            ArgValue::Variable(actual) => {
                let passed = match converted.get(&pos) {
                    Some(arg) => converted_actual(ctx, t, arg, actual, index, allocations),
                    None => actual.clone(),
                };
                ArgValue::Variable(index.adjoint_ref(ctx, t, &passed))
            }
        };
        new_args.push(CallArg {
            attrs: a.attrs.clone(),
            value,
        });
    }
    new_args
}

/// What the reverse call passes for the converted variable `actual`: a
/// fresh temporary of the formal's activity (allocated and given the
/// actual's values by statements in `allocations`), whole or with the
/// actual's subscripts.
fn converted_actual(
    ctx: &Ctx<'_>,
    t: &mut Target<'_>,
    arg: &ConvertedArg,
    actual: &VarRef,
    index: &mut IndexTape<'_>,
    allocations: &mut Vec<StmtId>,
) -> VarRef {
    // A fresh temporary of the formal's activity.
    let temp = declare(
        t.out,
        t.names,
        t.scope,
        TempKind::Tyc,
        ValueType::Real,
        &arg.shape,
        arg.active,
    );
    if temp.allocatable {
        let like = index.adjoint_ref(ctx, t, &arg.like);
        allocations.push(call(
            t.out,
            t.names,
            "oad_AllocateMatching",
            vec![var(&temp.var), var(&like)],
        ));
    }
    // The callee may run its forward sweep
    // again (joint mode) from the values it
    // is given: the temporary gets the
    // actual's values as they are now, and no
    // adjoint from an earlier use.
    let source = if arg.element {
        index.adjoint_ref(ctx, t, actual)
    } else {
        index.adjoint_ref(ctx, t, &arg.like)
    };
    allocations.extend(give_value(t, &temp.var, var(&source), arg.active));
    if arg.element {
        temp.var
    } else {
        with_symbol(actual, &temp.var)
    }
}

/// A direct action `y = f(x)` (transpose, reshape): taped as it is; its
/// adjoint is `tmp.d = f(y.d); x.d += tmp.d; y.d = 0` (transpose and
/// reshape are their own adjoint operators up to the shape).
fn direct_action_adjoint(
    ctx: &Ctx<'_>,
    t: &mut Target<'_>,
    s: StmtId,
    a: &xaif_model::Assignment,
) -> Result<(Vec<StmtId>, Vec<StmtId>, usize), AdjointError> {
    let dag = crate::dag::Dag::from_expr(&a.rhs).expect("validated");
    let (arg, shaped) = match &dag.nodes[dag.root] {
        crate::dag::Node::Op { args, .. } => (args.first().copied(), args.len() > 1),
        _ => (None, false),
    };
    let Some(crate::dag::Node::Var(x)) = arg.map(|n| &dag.nodes[n]) else {
        return Err(AdjointError::Unsupported(
            ctx.p.stmts[s].id().to_string(),
            "a direct action on an expression that is not a variable".into(),
        ));
    };
    let shape = ctx.ref_shape(&x.graph);
    let tmp = declare(
        t.out,
        t.names,
        t.scope,
        TempKind::Prp,
        ValueType::Real,
        &shape,
        true,
    );
    let mut applied = derivative_assignment(ctx, a);
    // f(y.d) into tmp.d: the operand x becomes y's derivative.
    let arg = arg.expect("matched above");
    if let ExprVertexKind::VariableReference(g) = &mut applied.rhs.vertices[arg].kind {
        *g = a.lhs.graph.clone();
        applied.rhs.vertices[arg].attrs.set("deriv", "1");
    }
    let mut taping = vec![s];
    let mut adjoint = Vec::new();
    let mut integers = 0;
    if is_allocatable(&shape) {
        // The adjoint may run in a fresh activation (split mode)
        // where x has no shape: record its extents, and give the
        // temporary x's shape from them.
        taping.extend(push_extents(t, x, shape.rank));
        adjoint.extend(pop_extents_and_allocate(t, &tmp.var, shape.rank));
        integers = shape.rank;
    }
    if shaped {
        let name = dag.nodes[dag.root].op_name().unwrap_or_default();
        applied.rhs = shaped_action_of_derivative(name, &a.lhs, &tmp.var);
    }
    let mut lhs = tmp.var.clone();
    lhs.attrs.discard("vertex_id");
    lhs.attrs.set("deriv", "1");
    applied.lhs = lhs;
    let id = t.names.statement("reverse_assignment");
    adjoint.push(add(t.out, assignment(&id, applied.lhs, applied.rhs)));
    adjoint.push(call(
        t.out,
        t.names,
        "IncDeriv",
        vec![var(&tmp.var), var(x)],
    ));
    adjoint.push(call(t.out, t.names, "ZeroDeriv", vec![var(&a.lhs)]));
    Ok((taping, adjoint, integers))
}

/// `name(y.d, shape_arr(tmp))`, the adjoint of `y = name(x, shape)`
/// (reshape): the further arguments give the result's shape, which the
/// adjoint's result takes from x, through the temporary `tmp` of x's
/// shape. They may read values the adjoint sweep does not have (a local
/// shape vector of the taping sweep).
fn shaped_action_of_derivative(name: &str, y: &VarRef, tmp: &VarRef) -> Expr {
    let mut b = ExprBuilder::new();
    let mut yd = y.clone();
    yd.attrs.discard("vertex_id");
    yd.attrs.set("deriv", "1");
    let y = b.reference(&yd);
    let like = b.reference(&value_ref(tmp));
    let extents = b.intrinsic("shape_arr", &[like]);
    b.intrinsic(name, &[y, extents]);
    b.finish()
}
