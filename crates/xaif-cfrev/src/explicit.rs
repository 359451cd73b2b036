//! Explicit ("simple") loop reversal (`../shared/docs/engine-conventions.md`
//! §5).
//!
//! A `ForLoop` the front end marks `reversal="explicit"` whose header has
//! the form `i = e0; i <= e1 (or <, >=, >); i = i ± c` runs backwards in
//! the adjoint: `i` from its last value `e0 + c·((e1 − e0 + c)/c − 1)` down
//! to `e0` when the bounds are constants whose arithmetic fits in 64-bit
//! integers ([`closed_form_fits`]); otherwise the adjoint counts the trips
//! again with the loop's own header (which leaves `i` one step beyond its
//! last value, as the original left it) and steps `i` back at the top of
//! each reversed iteration, computing no value the loop does not. No
//! counter is taped, and subscripts built from `i` and from
//! variables the loop does not change need no taping either: the adjoint
//! reads them again. The values such loop-invariant variables had are
//! pushed once after the outermost explicit loop and restored (popped into
//! the variables) before its adjoint, because code after the loop, or a
//! fresh activation in split mode, may change them.
//!
//! A loop whose variable or bounds the body may change, or whose header
//! has another form, is reversed by counting like every other loop.

use std::rc::Rc;

use rustc_hash::{FxHashMap, FxHashSet};
use xaif_linearize::adjoint::StableIndices;
use xaif_linearize::context::Ctx;
use xaif_model::{
    ArgValue, CallArg, Expr, ExprGraph, ExprVertexKind, InlinableArg, Program, ScopeId, StmtId,
    StmtKind, SymbolId, SymbolType, VarRef, VertexId, VertexKind,
};

use crate::region::{walk, Event, Region};

/// The header of an explicitly reversed loop.
#[derive(Clone, Debug)]
pub struct ExplicitLoop {
    /// The loop variable.
    pub var: VarRef,
    /// Its first value.
    pub first: Expr,
    /// The inclusive bound (`e1`, or `e1 ∓ 1` for strict comparisons).
    pub bound: Expr,
    /// The step.
    pub step: Step,
}

/// The step of an explicit loop.
#[derive(Clone, Debug)]
pub enum Step {
    /// A constant (never 0).
    Constant(i64),
    /// A run-time stride `s` (the loop's condition is `i /= e1`, Fortran's
    /// `DO i = e0, e1, s`): `i = i + s`, or `i = i - s` when `negated`.
    Stride {
        /// `s`.
        expr: Expr,
        /// Whether the update subtracts it.
        negated: bool,
    },
}

impl Step {
    /// The expressions the adjoint's header reads again.
    pub fn expr(&self) -> Option<&Expr> {
        match self {
            Step::Constant(_) => None,
            Step::Stride { expr, .. } => Some(expr),
        }
    }
}

/// Which loops run backwards explicitly, and what their adjoints need.
#[derive(Clone, Debug, Default)]
pub struct LoopPlan {
    /// Explicitly reversed loops by loop vertex.
    pub explicit: FxHashMap<VertexId, ExplicitLoop>,
    /// For each basic block inside an explicit loop, the variables its
    /// adjoint may read instead of taped values.
    pub stable: FxHashMap<VertexId, StableIndices>,
    /// For each outermost explicit loop: the variables its adjoint needs
    /// restored (loop bounds of the nest so far; [`LoopPlan::add_reads`]
    /// adds what the basic blocks read).
    pub restore: FxHashMap<VertexId, Vec<SymbolId>>,
    /// Outermost explicit loop of each basic block and explicit loop inside
    /// one.
    outermost: FxHashMap<VertexId, VertexId>,
}

impl LoopPlan {
    /// Records that the adjoint of `block` reads `symbols` (stable ones):
    /// those that are not loop variables of the nest are restored before
    /// the outermost loop's adjoint.
    pub fn add_reads(&mut self, block: VertexId, symbols: &[SymbolId]) {
        let (Some(root), Some(stable)) = (self.outermost.get(&block), self.stable.get(&block))
        else {
            return;
        };
        let list = self.restore.entry(*root).or_default();
        for s in symbols {
            if !stable.controlled.contains(s) && !list.contains(s) {
                list.push(*s);
            }
        }
    }

    /// The references of the variables restored around outermost loop
    /// `root`, in push order.
    pub fn restored_refs(&self, p: &Program, root: VertexId) -> Vec<VarRef> {
        self.restore
            .get(&root)
            .map(|list| list.iter().map(|s| symbol_ref(p, *s)).collect())
            .unwrap_or_default()
    }
}

fn symbol_ref(p: &Program, s: SymbolId) -> VarRef {
    let scope_id = p.scopes[p.symbols[s].scope]
        .attrs
        .get("vertex_id")
        .unwrap_or("1");
    VarRef::symbol(
        xaif_model::Attrs::new()
            .with("vertex_id", "1")
            .with("active", "false"),
        scope_id,
        p.symbols[s].name(),
    )
}

/// What a region may change.
#[derive(Default)]
struct Effects {
    assigned: FxHashSet<SymbolId>,
    calls: bool,
    /// A statement the front end did not translate may store anywhere.
    opaque: bool,
}

impl Effects {
    fn changes(&self, p: &Program, s: SymbolId, local: ScopeId) -> bool {
        self.opaque || self.assigned.contains(&s) || (self.calls && p.symbols[s].scope != local)
    }
}

/// Whether a marker may stand for a store the XAIF does not carry (the
/// front end's annotation names the construct it dropped).
pub(crate) fn marker_may_store(annotation: &str) -> bool {
    [
        "OPR_STID",
        "OPR_ISTORE",
        "OPR_PSTORE",
        "OPR_CALL",
        "cassignstmt",
        "READ",
    ]
    .iter()
    .any(|k| annotation.contains(k))
}

fn expr_effects(ctx: &Ctx<'_>, e: &Expr, fx: &mut Effects) {
    for v in &e.vertices {
        if let ExprVertexKind::FunctionCall(args) = &v.kind {
            fx.calls = true;
            for a in args {
                if let Some(s) = ctx.symbol_of(&a.graph) {
                    fx.assigned.insert(s);
                }
            }
        }
    }
}

fn stmt_effects(ctx: &Ctx<'_>, s: StmtId, fx: &mut Effects) {
    match &ctx.p.stmts[s].kind {
        StmtKind::Assignment(a) => {
            if let Some(sym) = ctx.symbol_of(&a.lhs.graph) {
                fx.assigned.insert(sym);
            }
            expr_effects(ctx, &a.rhs, fx);
        }
        StmtKind::SubroutineCall(args) => {
            fx.calls = true;
            for a in args {
                if let ArgValue::Variable(r) = &a.value {
                    if let Some(sym) = ctx.symbol_of(&r.graph) {
                        fx.assigned.insert(sym);
                    }
                }
            }
        }
        StmtKind::InlinableCall(args) => {
            for a in args {
                let r = match a {
                    InlinableArg::Argument(CallArg {
                        value: ArgValue::Variable(r),
                        ..
                    }) => r,
                    InlinableArg::Substitute(r) => r,
                    InlinableArg::Argument(_) => continue,
                };
                if let Some(sym) = ctx.symbol_of(&r.graph) {
                    fx.assigned.insert(sym);
                }
            }
        }
        StmtKind::Marker => {
            let annotation = ctx.p.stmts[s].attrs.get("annotation").unwrap_or("");
            if marker_may_store(annotation) {
                fx.opaque = true;
            }
        }
        StmtKind::DerivativePropagator(_) => fx.opaque = true,
    }
}

fn region_effects(ctx: &Ctx<'_>, regions: &[Region], fx: &mut Effects) {
    walk(regions, false, |event| match event {
        Event::Block(v) => {
            if let VertexKind::BasicBlock(stmts) = &ctx.p.vertices[v].kind {
                for s in stmts {
                    stmt_effects(ctx, *s, fx);
                }
            }
        }
        Event::BranchStart(Region::Branch { vertex, .. }) => {
            if let VertexKind::Branch(Some(c)) | VertexKind::If(Some(c)) =
                &ctx.p.vertices[*vertex].kind
            {
                expr_effects(ctx, c, fx);
            }
        }
        Event::LoopStart(Region::Loop { vertex, .. }) => match &ctx.p.vertices[*vertex].kind {
            VertexKind::ForLoop {
                init,
                condition,
                update,
            } => {
                for s in init.iter().chain(update.iter()) {
                    stmt_effects(ctx, *s, fx);
                }
                if let Some(c) = condition {
                    expr_effects(ctx, c, fx);
                }
            }
            VertexKind::PreLoop(Some(c)) | VertexKind::PostLoop(Some(c)) => {
                expr_effects(ctx, c, fx)
            }
            _ => {}
        },
        _ => {}
    });
}

/// The scalar integer variables `e` reads, or `None` when it reads
/// anything else (array elements, function results). Whole arrays may be
/// read by the shape inquiries `lbound`, `ubound` and `size`: shapes do not
/// change while a loop runs.
fn scalar_reads(ctx: &Ctx<'_>, e: &Expr) -> Option<Vec<SymbolId>> {
    let g = ExprGraph::new(e)?;
    let inquiry = |at: usize| {
        (0..e.vertices.len()).any(|u| g.args[u].first() == Some(&at))
            && (0..e.vertices.len()).all(|u| {
                !g.args[u].contains(&at)
                    || (g.args[u].first() == Some(&at)
                        && matches!(e.vertices[u].kind, ExprVertexKind::Intrinsic)
                        && matches!(
                            e.vertices[u].attrs.get("name"),
                            Some("lbound" | "ubound" | "size")
                        ))
            })
    };
    let mut out = Vec::new();
    for (at, v) in e.vertices.iter().enumerate() {
        match &v.kind {
            ExprVertexKind::Constant | ExprVertexKind::Intrinsic => {}
            ExprVertexKind::VariableReference(r) => {
                if !r.subscripts().is_empty() {
                    return None;
                }
                let s = ctx.symbol_of(r)?;
                let sym = &ctx.p.symbols[s];
                if sym.rank() > 0 && inquiry(at) {
                    continue;
                }
                if sym.rank() != 0 || sym.ty() != SymbolType::Integer {
                    return None;
                }
                out.push(s);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Every variable `e` reads, subscripts and function arguments included
/// (recursion over subscripts follows the XML nesting, which the reader
/// bounds).
pub(crate) fn symbols_read(ctx: &Ctx<'_>, e: &Expr) -> Vec<SymbolId> {
    fn of_ref(ctx: &Ctx<'_>, g: &xaif_model::RefGraph, out: &mut Vec<SymbolId>) {
        out.extend(ctx.symbol_of(g));
        for v in &g.vertices {
            if let xaif_model::RefVertexKind::ArrayElement { triplets } = &v.kind {
                for t in triplets {
                    for e in [&t.index, &t.bound, &t.stride].into_iter().flatten() {
                        of_expr(ctx, e, out);
                    }
                }
            }
        }
    }
    fn of_expr(ctx: &Ctx<'_>, e: &Expr, out: &mut Vec<SymbolId>) {
        for v in &e.vertices {
            match &v.kind {
                ExprVertexKind::VariableReference(g) => of_ref(ctx, g, out),
                ExprVertexKind::FunctionCall(args) => {
                    for a in args {
                        of_ref(ctx, &a.graph, out);
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    of_expr(ctx, e, &mut out);
    out
}

/// Whether `regions` (in the routine of scope `local`) may change any of
/// `symbols`: assign it, pass it to a call, or, for a variable of another
/// scope, call anything.
pub(crate) fn changes_any(
    ctx: &Ctx<'_>,
    local: ScopeId,
    regions: &[Region],
    symbols: &[SymbolId],
) -> bool {
    let mut fx = Effects::default();
    region_effects(ctx, regions, &mut fx);
    symbols.iter().any(|&s| fx.changes(ctx.p, s, local))
}

fn int_constant(e: &Expr, at: usize) -> Option<i64> {
    let v = &e.vertices[at];
    match v.kind {
        ExprVertexKind::Constant => v.attrs.get("value")?.trim().parse().ok(),
        _ => None,
    }
}

fn is_var(ctx: &Ctx<'_>, e: &Expr, at: usize, var: SymbolId) -> bool {
    match &e.vertices[at].kind {
        ExprVertexKind::VariableReference(g) => {
            g.subscripts().is_empty() && ctx.symbol_of(g) == Some(var)
        }
        _ => false,
    }
}

/// The subexpression of `e` rooted at vertex `at`.
fn subexpr(e: &Expr, g: &ExprGraph, at: usize) -> Expr {
    let mut b = xaif_model::ExprBuilder::new();
    crate::reverse::embed_at(&mut b, e, g, at);
    b.finish()
}

/// Recognises `i = e0; i <= e1 (<, >=, >); i = i ± c`, whatever the
/// front end's `reversal` hint says: whether the loop may run backwards is
/// decided by what its body changes (see [`plan`]).
fn recognise(ctx: &Ctx<'_>, v: VertexId) -> Option<ExplicitLoop> {
    recognise_with(ctx, v, false)
}

/// [`recognise`]; with `any_bounds`, the first value, the bound and a
/// run-time stride may be any expressions not reading the variable (a
/// checkpointed loop evaluates them once, where Fortran does), not only
/// integer scalars (which an explicit loop's adjoint reads again).
pub(crate) fn recognise_with(ctx: &Ctx<'_>, v: VertexId, any_bounds: bool) -> Option<ExplicitLoop> {
    let vertex = &ctx.p.vertices[v];
    let VertexKind::ForLoop {
        init: Some(init),
        condition: Some(cond),
        update: Some(update),
    } = &vertex.kind
    else {
        return None;
    };
    let StmtKind::Assignment(init) = &ctx.p.stmts[*init].kind else {
        return None;
    };
    let StmtKind::Assignment(update) = &ctx.p.stmts[*update].kind else {
        return None;
    };
    if !init.lhs.graph.subscripts().is_empty() {
        return None;
    }
    let var = ctx.symbol_of(&init.lhs.graph)?;
    let sym = &ctx.p.symbols[var];
    if sym.rank() != 0 || sym.ty() != SymbolType::Integer {
        return None;
    }
    if ctx.symbol_of(&update.lhs.graph) != Some(var) || !update.lhs.graph.subscripts().is_empty() {
        return None;
    }
    // Step.
    let ug = ExprGraph::new(&update.rhs)?;
    let op = update.rhs.vertices[ug.root].attrs.get("name")?;
    let [a, b] = ug.args[ug.root].as_slice() else {
        return None;
    };
    let (stride, negated) = match op {
        "add_scal_scal" if is_var(ctx, &update.rhs, *a, var) => (*b, false),
        "add_scal_scal" if is_var(ctx, &update.rhs, *b, var) => (*a, false),
        "sub_scal_scal" if is_var(ctx, &update.rhs, *a, var) => (*b, true),
        _ => return None,
    };
    let step = match int_constant(&update.rhs, stride) {
        Some(0) => return None,
        Some(c) => Step::Constant(if negated { -c } else { c }),
        None => {
            let expr = subexpr(&update.rhs, &ug, stride);
            let reads_var = if any_bounds {
                symbols_read(ctx, &expr).contains(&var)
            } else {
                scalar_reads(ctx, &expr)?.contains(&var)
            };
            if reads_var {
                return None;
            }
            Step::Stride { expr, negated }
        }
    };
    // Bound: var OP e1 or e1 OP var.
    let cg = ExprGraph::new(cond)?;
    let op = cond.vertices[cg.root].attrs.get("name")?;
    let [l, r] = cg.args[cg.root].as_slice() else {
        return None;
    };
    let (op, other) = if is_var(ctx, cond, *l, var) {
        (op.to_string(), *r)
    } else if is_var(ctx, cond, *r, var) {
        let mirrored = match op {
            "not_equal" => "not_equal",
            "less_or_equal" => "greater_or_equal",
            "less_than" => "greater_than",
            "greater_or_equal" => "less_or_equal",
            "greater_than" => "less_than",
            _ => return None,
        };
        (mirrored.to_string(), *l)
    } else {
        return None;
    };
    let adjust: i64 = match (op.as_str(), &step) {
        // Fortran's DO with a run-time stride; the trip count is fixed on
        // entry, whatever the stride's sign.
        ("not_equal", Step::Stride { .. }) => 0,
        (_, Step::Stride { .. }) => return None,
        ("less_or_equal", Step::Constant(c)) if *c > 0 => 0,
        ("greater_or_equal", Step::Constant(c)) if *c < 0 => 0,
        ("less_than", Step::Constant(c)) if *c > 0 => -1,
        ("greater_than", Step::Constant(c)) if *c < 0 => 1,
        _ => return None,
    };
    let e1 = subexpr(cond, &cg, other);
    if any_bounds {
        if symbols_read(ctx, &e1).contains(&var) || symbols_read(ctx, &init.rhs).contains(&var) {
            return None;
        }
    } else {
        scalar_reads(ctx, &e1)?;
        scalar_reads(ctx, &init.rhs)?;
    }
    let bound = if adjust == 0 {
        e1
    } else {
        let mut b = xaif_model::ExprBuilder::new();
        let x = crate::reverse::embed(&mut b, &e1);
        let c = b.constant("integer", &adjust.abs().to_string());
        b.intrinsic(
            if adjust > 0 {
                "add_scal_scal"
            } else {
                "sub_scal_scal"
            },
            &[x, c],
        );
        b.finish()
    };
    Some(ExplicitLoop {
        var: init.lhs.clone(),
        first: init.rhs.clone(),
        bound,
        step,
    })
}

/// Loops nested deeper than this are not considered for running
/// backwards: they are counted. Deciding about a loop reads everything its
/// body changes, so planning costs the body's size per nesting level; the
/// cap keeps that linear in the size of the routine (real loop nests are a
/// few levels deep).
pub const MAX_PLANNED_DEPTH: usize = 64;

struct Frame {
    root: VertexId,
    effects: Rc<FxHashSet<SymbolId>>,
    calls: bool,
    opaque: bool,
    controlled: Vec<SymbolId>,
}

/// What the user says about loops (the reference driver's `-U`, `-u` and
/// `-t`): by default a loop runs backwards only when the analysis proves
/// its variable and bounds unchanged by its body.
#[derive(Clone, Debug, Default)]
pub struct LoopPolicy {
    /// `-U`: for loops the front end marked simple (`reversal="explicit"`),
    /// bound variables the body may change are ignored: the user vouches
    /// for them.
    pub trust_hints: bool,
    /// `-u`: asked, for each such variable of a loop marked simple, whether
    /// to ignore it (the question names the loop and the variable).
    pub ask: Option<fn(&str) -> bool>,
    /// `-t`: global variables that no routine the top routine reaches
    /// writes (quasi-constant): never changed, never restored.
    pub quasi_constant: FxHashSet<SymbolId>,
    /// Loops reversed by checkpointing (`--checkpoint-loop`): never run
    /// backwards, their iterations being reversed one at a time.
    pub checkpointed: FxHashSet<VertexId>,
}

struct Planner<'c, 'p> {
    ctx: &'c Ctx<'p>,
    local: ScopeId,
    plan: LoopPlan,
    policy: &'c LoopPolicy,
}

impl Planner<'_, '_> {
    /// Whether loop `l` (body `body`) can run backwards inside `frame`
    /// (or as an outermost loop when `frame` is `None`).
    fn explicit_in(
        &self,
        vertex: VertexId,
        l: &ExplicitLoop,
        body: &[Region],
        frame: Option<&Frame>,
        outer_fx: Option<&Effects>,
    ) -> Option<(SymbolId, Vec<SymbolId>)> {
        let hinted = self.ctx.p.vertices[vertex].attrs.get("reversal") == Some("explicit");
        let ctx = self.ctx;
        let var = ctx.symbol_of(&l.var.graph)?;
        let mut body_fx = Effects::default();
        region_effects(ctx, body, &mut body_fx);
        if body_fx.opaque || body_fx.assigned.contains(&var) {
            return None;
        }
        let mut reads = scalar_reads(ctx, &l.first)?;
        reads.extend(scalar_reads(ctx, &l.bound)?);
        if let Some(e) = l.step.expr() {
            reads.extend(scalar_reads(ctx, e)?);
        }
        let mut restore = Vec::new();
        for s in reads {
            if s == var {
                return None;
            }
            let controlled = frame.is_some_and(|f| f.controlled.contains(&s));
            if controlled || self.policy.quasi_constant.contains(&s) {
                continue;
            }
            let changes = match (frame, outer_fx) {
                (Some(f), _) => {
                    f.opaque
                        || f.effects.contains(&s)
                        || (f.calls && ctx.p.symbols[s].scope != self.local)
                }
                (None, Some(fx)) => fx.changes(ctx.p, s, self.local),
                (None, None) => true,
            };
            if changes && !(hinted && self.vouched(vertex, s)) {
                return None;
            }
            if !restore.contains(&s) {
                restore.push(s);
            }
        }
        Some((var, restore))
    }

    /// Whether the user vouches that `s` does not change in the simple loop
    /// `vertex` (`-U`, or `-u` and a yes).
    fn vouched(&self, vertex: VertexId, s: SymbolId) -> bool {
        if self.policy.trust_hints {
            return true;
        }
        let Some(ask) = self.policy.ask else {
            return false;
        };
        let v = &self.ctx.p.vertices[vertex];
        ask(&format!(
            "loop {} (line {}) is marked simple, but its body may change `{}`: ignore that?",
            v.attrs.get("vertex_id").unwrap_or("?"),
            v.attrs.get("lineNumber").unwrap_or("?"),
            self.ctx.p.symbols[s].name()
        ))
    }

    /// Plans every loop of `regions`, outermost first. The frame of each
    /// open loop (what its enclosing explicit loops control and change) is
    /// kept on an explicit stack, since loops nest as deep as the input.
    fn visit(&mut self, regions: &[Region]) {
        // Frames by index; the stack holds the frame in force inside each
        // open loop (`None`: not inside an explicit loop).
        let mut frames: Vec<Frame> = Vec::new();
        let mut inside: Vec<Option<usize>> = vec![None];
        walk(regions, false, |event| {
            let frame = inside.last().copied().flatten();
            match event {
                Event::Block(v) => {
                    if let Some(f) = frame.map(|i| &frames[i]) {
                        self.plan.stable.insert(
                            v,
                            StableIndices {
                                controlled: f.controlled.clone(),
                                assigned: f.effects.clone(),
                                calls: f.calls,
                                opaque: f.opaque,
                                local_scope: self.local,
                            },
                        );
                        self.plan.outermost.insert(v, f.root);
                    }
                }
                Event::LoopStart(_) if inside.len() > MAX_PLANNED_DEPTH => {
                    // Too deep to plan: counted, as when the analysis
                    // fails, in the frame of the enclosing loop.
                    inside.push(frame);
                }
                Event::LoopStart(r @ Region::Loop { vertex, body, .. }) => {
                    let header = if self.policy.checkpointed.contains(vertex) {
                        None
                    } else {
                        recognise(self.ctx, *vertex)
                    };
                    let body_frame = match frame {
                        None => {
                            // A candidate outermost loop: what the whole
                            // loop (header and body) changes.
                            let mut fx = Effects::default();
                            region_effects(self.ctx, std::slice::from_ref(r), &mut fx);
                            let ok = header
                                .as_ref()
                                .and_then(|h| self.explicit_in(*vertex, h, body, None, Some(&fx)));
                            match (header, ok) {
                                (Some(h), Some((var, restore))) => {
                                    self.plan.explicit.insert(*vertex, h);
                                    self.plan.restore.insert(*vertex, restore);
                                    frames.push(Frame {
                                        root: *vertex,
                                        effects: Rc::new(fx.assigned),
                                        calls: fx.calls,
                                        opaque: fx.opaque,
                                        controlled: vec![var],
                                    });
                                    Some(frames.len() - 1)
                                }
                                _ => None,
                            }
                        }
                        Some(fi) => {
                            let f = &frames[fi];
                            let ok = header
                                .as_ref()
                                .and_then(|h| self.explicit_in(*vertex, h, body, Some(f), None));
                            match (header, ok) {
                                (Some(h), Some((var, restore))) => {
                                    self.plan.explicit.insert(*vertex, h);
                                    self.plan.outermost.insert(*vertex, f.root);
                                    let list = self.plan.restore.entry(f.root).or_default();
                                    for s in restore {
                                        if !list.contains(&s) {
                                            list.push(s);
                                        }
                                    }
                                    let mut controlled = f.controlled.clone();
                                    controlled.push(var);
                                    let inner = Frame {
                                        root: f.root,
                                        effects: f.effects.clone(),
                                        calls: f.calls,
                                        opaque: f.opaque,
                                        controlled,
                                    };
                                    frames.push(inner);
                                    Some(frames.len() - 1)
                                }
                                _ => Some(fi),
                            }
                        }
                    };
                    inside.push(body_frame);
                }
                Event::LoopEnd(_) => {
                    inside.pop();
                }
                _ => {}
            }
        });
    }
}

/// Decides which loops of a structured routine body run backwards
/// explicitly. `local` is the routine's scope.
pub fn plan(ctx: &Ctx<'_>, local: ScopeId, regions: &[Region]) -> LoopPlan {
    plan_with(ctx, local, regions, &LoopPolicy::default())
}

/// [`plan`] under what the user says about loops.
pub fn plan_with(
    ctx: &Ctx<'_>,
    local: ScopeId,
    regions: &[Region],
    policy: &LoopPolicy,
) -> LoopPlan {
    let mut planner = Planner {
        policy,
        ctx,
        local,
        plan: LoopPlan::default(),
    };
    planner.visit(regions);
    planner.plan
}

/// The value of `e` when it is an integer constant, or a sum or difference
/// of them (a strict bound's `e1 ∓ 1`), exactly (`i128`: no overflow).
pub(crate) fn constant_integer(e: &Expr) -> Option<i128> {
    let g = xaif_model::ExprGraph::new(e)?;
    if g.args.len() > 3 {
        return None;
    }
    let value = |v: usize| -> Option<i128> {
        let x = &e.vertices[v];
        match x.kind {
            xaif_model::ExprVertexKind::Constant if g.args[v].is_empty() => {
                x.attrs.get("value")?.trim().parse::<i128>().ok()
            }
            _ => None,
        }
    };
    let root = g.root;
    match (&e.vertices[root].kind, g.args[root].as_slice()) {
        (xaif_model::ExprVertexKind::Constant, []) => value(root),
        (xaif_model::ExprVertexKind::Intrinsic, [a, b]) => {
            let (a, b) = (value(*a)?, value(*b)?);
            match e.vertices[root].attrs.get("name")? {
                "add_scal_scal" => Some(a + b),
                "sub_scal_scal" => Some(a - b),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether the closed form of the trip count and the last value of `DO i
/// = e0, e1, c` (`(e1 − e0 + c)/c`, then `e0 + c·(trips − 1)`, and the
/// reversed loop's step past its first value, `e0 − c`) stays within the
/// 64-bit integers: only for constant bounds and step, decided exactly
/// (`i128`). Bounds known only at run time may be anything, so their
/// loops are counted instead (`crate::reverse`, `crate::loopgen`): their
/// code computes no value the original loop does not.
pub(crate) fn closed_form_fits(h: &ExplicitLoop) -> bool {
    let Step::Constant(c) = h.step else {
        return false;
    };
    let (Some(e0), Some(e1)) = (constant_integer(&h.first), constant_integer(&h.bound)) else {
        return false;
    };
    let c = i128::from(c);
    let fits = |x: i128| i64::try_from(x).is_ok();
    let span = e1 - e0;
    let widened = span + c;
    let trips = widened / c;
    let last_index = trips - 1;
    let offset = c * last_index;
    let last = e0 + offset;
    [
        e0,
        e1,
        -c,
        span,
        widened,
        trips,
        last_index,
        offset,
        last,
        e0 - c,
    ]
    .into_iter()
    .all(fits)
}
