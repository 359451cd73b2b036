//! Random valid front-end XAIF programs, for differential testing of the
//! whole pipeline on programs nobody wrote by hand.
//!
//! A program is drawn as a [`Recipe`] (proptest strategies: numbers that
//! choose), built into a [`Program`] whose construction keeps it valid and
//! well defined ([`ast`] says how), and written as XAIF that the model's gate
//! and `xaif.xsd` accept. The same seed and size always give the same
//! program. [`shrink`] reduces a program that makes a check fail to a small
//! one that still does, through proptest's shrinking of its recipe.
//!
//! ```
//! let text = xaif_testkit::gen::generate(7, 4);
//! assert!(text.contains("<xaif:CallGraph"));
//! ```

pub mod ast;
mod build;
mod emit;
mod listing;
pub mod recipe;

use std::collections::BTreeSet;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

pub use ast::Program;
pub use recipe::Recipe;

use ast::*;

fn runner(seed: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    for (k, chunk) in bytes.chunks_mut(8).enumerate() {
        let v = seed
            .wrapping_add(k as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(17)
            ^ 0xD1B5_4A32_D192_ED03;
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// Which programs a sequence holds: the default ones, or those with the
/// loops the loop marks are for besides ([`Recipe::loop_kinds`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sequence {
    /// [`program`]'s programs.
    #[default]
    Default,
    /// [`program_with_loop_kinds`]'s programs.
    LoopKinds,
}

impl Sequence {
    fn strategy(self, size: usize) -> proptest::strategy::BoxedStrategy<Recipe> {
        match self {
            Sequence::Default => recipe::recipe(size),
            Sequence::LoopKinds => recipe::recipe_with_loop_kinds(size),
        }
    }

    /// Program (`seed`, `size`) of this sequence.
    pub fn program(self, seed: u64, size: usize) -> Program {
        let mut r = runner(seed);
        build(
            &self
                .strategy(size)
                .new_tree(&mut r)
                .expect("recipe strategies never reject")
                .current(),
        )
    }

    /// [`shrink`] within this sequence.
    pub fn shrink(
        self,
        seed: u64,
        size: usize,
        max_steps: usize,
        mut fails: impl FnMut(&Program) -> bool,
    ) -> Program {
        let mut r = runner(seed);
        let mut tree = self
            .strategy(size)
            .new_tree(&mut r)
            .expect("recipe strategies never reject");
        let mut best = build(&tree.current());
        if !tree.simplify() {
            return best;
        }
        for _ in 0..max_steps {
            let candidate = build(&tree.current());
            if fails(&candidate) {
                best = candidate;
                if !tree.simplify() {
                    break;
                }
            } else if !tree.complicate() {
                break;
            }
        }
        best
    }
}

/// The recipe of program (`seed`, `size`).
pub fn recipe_for(seed: u64, size: usize) -> Recipe {
    let mut r = runner(seed);
    recipe::recipe(size)
        .new_tree(&mut r)
        .expect("recipe strategies never reject")
        .current()
}

/// Builds the program a recipe describes.
pub fn build(recipe: &Recipe) -> Program {
    build::build(recipe)
}

/// The program (`seed`, `size`): `size` scales routines and statements
/// (1 to about 20).
pub fn program(seed: u64, size: usize) -> Program {
    build(&recipe_for(seed, size))
}

/// Program (`seed`, `size`) with, besides [`program`]'s constructs, counted
/// loops left by an exit when a counter (or a condition) says so, and
/// fixed-point iterations ([`fixed_point_lines`]): what the loop marks are
/// checked on.
pub fn program_with_loop_kinds(seed: u64, size: usize) -> Program {
    Sequence::LoopKinds.program(seed, size)
}

/// The XAIF text of program (`seed`, `size`).
pub fn generate(seed: u64, size: usize) -> String {
    to_xaif(
        &program(seed, size),
        &format!("generated program: seed {seed}, size {size}"),
    )
}

/// The XAIF text of a program, `comment` and a Fortran-like listing at the
/// top.
pub fn to_xaif(p: &Program, comment: &str) -> String {
    emit::xaif(p, comment)
}

/// A Fortran-like listing of a program.
pub fn listing(p: &Program) -> String {
    listing::listing(p)
}

/// Per routine, the lines of its loops in the listing (the `lineNumber`s
/// of its `ForLoop`s, `PreLoop`s and `PostLoop`s), in the order they are
/// written.
pub fn loop_lines(p: &Program) -> Vec<Vec<usize>> {
    listing::do_lines(p)
}

/// Per routine, the lines of its fixed-point iterations (a subset of
/// [`loop_lines`]): the loops the builder wrote as a contraction iterated
/// until its change is at most [`FIXED_POINT_TOLERANCE`], recognised by
/// their change variable, whose name starts with [`FIXED_POINT_CHANGE`].
pub fn fixed_point_lines(p: &Program) -> Vec<Vec<usize>> {
    listing::fixed_point_lines(p)
}

/// The prefix of the name of a fixed-point iteration's change variable.
pub const FIXED_POINT_CHANGE: &str = "FPERR";

/// The change at which a generated fixed-point iteration stops: its state
/// is then the fixed point to a few units in the last place.
pub const FIXED_POINT_TOLERANCE: f64 = 1e-14;

/// Programs as a proptest strategy (shrinking simplifies the program).
pub fn strategy(size: usize) -> impl Strategy<Value = Program> {
    recipe::recipe(size).prop_map(|r| build(&r))
}

/// Shrinks program (`seed`, `size`), which makes `fails` true, to a small
/// program that still does, trying at most `max_steps` candidates.
pub fn shrink(
    seed: u64,
    size: usize,
    max_steps: usize,
    fails: impl FnMut(&Program) -> bool,
) -> Program {
    Sequence::Default.shrink(seed, size, max_steps, fails)
}

/// The constructs a program exercises, by name (`intrinsic:NAME` for every
/// intrinsic it applies); what the coverage test counts.
pub fn features(p: &Program) -> BTreeSet<String> {
    let mut f = BTreeSet::new();
    let mut add = |s: &str| {
        f.insert(s.to_string());
    };
    if p.routines.len() >= 3 {
        add("routines>=3");
    }
    if fixed_point_lines(p).iter().any(|l| !l.is_empty()) {
        add("fixed_point_loop");
    }
    if call_depth(p, 0) >= 3 {
        add("call_depth>=3");
    }
    if !p.globals.is_empty() {
        add("global");
    }
    if called_with_different_activity(p) {
        add("routine_called_with_different_activity");
    }
    if p.own_global_symbol.iter().flatten().any(|x| *x) {
        add("global_under_several_symbols");
    }
    let vars = p
        .globals
        .iter()
        .chain(p.routines.iter().flat_map(|r| r.locals.iter()))
        .chain(p.routines.iter().flat_map(|r| r.formals.iter()));
    for v in vars {
        match v.role {
            Role::Active => add("active"),
            Role::Dead => add("active_never_read"),
            Role::Clean => add("passive"),
            Role::Sink => add("passive_holding_active_values"),
            Role::Index if v.rank() > 0 => add("index_vector"),
            Role::Index => add("index_variable"),
            Role::Count => add("integer_counter"),
            Role::Loop => {}
            Role::Flag => add("logical_variable"),
        }
        match v.dims {
            Dims::Fixed(ref e) if e.len() == 2 => add("matrix"),
            Dims::Fixed(ref e) if e.len() > 3 => add("rank_four_to_six_array"),
            Dims::Fixed(ref e) if e.len() > 2 => add("rank_three_array"),
            Dims::Fixed(_) => add("fixed_shape_array"),
            Dims::Assumed => add("assumed_shape_formal"),
            Dims::Alloc => add("allocatable"),
            Dims::Scalar => {}
        }
    }
    for (r, routine) in p.routines.iter().enumerate() {
        if r > 0 {
            for (k, fm) in routine.formals.iter().enumerate() {
                add(if fm.rank() == 0 {
                    "scalar_formal"
                } else {
                    "array_formal"
                });
                if routine.written[k] && fm.role.ty() == Ty::Int {
                    add("integer_formal_written");
                }
                if routine.optional.get(k).copied().unwrap_or(false) {
                    add("optional_formal");
                    if fm.rank() > 0 {
                        add("optional_array_formal");
                    }
                }
            }
        }
        if r > 0 && !routine.side_effect_lists {
            add("no_side_effect_lists");
            if !routine.kernel {
                add("no_side_effect_lists_not_a_kernel");
            }
        }
        let unstructured = has_jumps(&routine.body);
        if unstructured && routine.mark_unstructured {
            add("unstructured_marked");
        }
        if unstructured && !routine.mark_unstructured {
            add("unstructured_unmarked");
        }
        emit::walk(&routine.body, &mut |s| stmt_features(p, r, s, &mut add));
        if reads_do_variable_after_loop(&routine.body) {
            add("do_variable_after_loop");
        }
    }
    f
}

/// Whether some statement list reads a DO variable after its loop.
fn reads_do_variable_after_loop(stmts: &[Stmt]) -> bool {
    let reads = |s: &Stmt, v: VarId| -> bool {
        let mut found = false;
        emit::walk(std::slice::from_ref(s), &mut |x| {
            let mut exprs: Vec<&Expr> = Vec::new();
            match x {
                Stmt::Assign(l, rhs) => {
                    exprs.push(rhs);
                    for sub in &l.subs {
                        if let Sub::Elem(e) = sub {
                            exprs.push(e);
                        }
                    }
                }
                Stmt::If { cond, .. } | Stmt::While { cond, .. } => exprs.push(cond),
                _ => {}
            }
            for e in exprs {
                e.visit_refs(&mut |r| found |= r.var == v);
            }
        });
        found
    };
    for (k, s) in stmts.iter().enumerate() {
        if let Stmt::Do { var, .. } = s {
            if stmts[k + 1..].iter().any(|t| reads(t, *var)) {
                return true;
            }
        }
    }
    let mut nested = false;
    for s in stmts {
        match s {
            Stmt::Do { body, .. }
            | Stmt::While { body, .. }
            | Stmt::GotoLoop { body, .. }
            | Stmt::GotoSkip { body, .. } => nested |= reads_do_variable_after_loop(body),
            Stmt::If { then, els, .. } => {
                nested |= reads_do_variable_after_loop(then) || reads_do_variable_after_loop(els)
            }
            Stmt::Select { cases, default, .. } => {
                for (_, b) in cases {
                    nested |= reads_do_variable_after_loop(b);
                }
                nested |= reads_do_variable_after_loop(default);
            }
            _ => {}
        }
    }
    nested
}

fn has_jumps(stmts: &[Stmt]) -> bool {
    let mut found = false;
    emit::walk(stmts, &mut |s| {
        if matches!(
            s,
            Stmt::Exit(_) | Stmt::Return(_) | Stmt::GotoLoop { .. } | Stmt::GotoSkip { .. }
        ) {
            found = true;
        }
    });
    found
}

/// Whether some routine gets, at one formal, an active actual at one call
/// site and a passive one or a constant at another.
fn called_with_different_activity(p: &Program) -> bool {
    // (callee, position) -> (active seen, passive or constant seen)
    let mut seen: std::collections::BTreeMap<(usize, usize), (bool, bool)> = Default::default();
    for (r, routine) in p.routines.iter().enumerate() {
        emit::walk(&routine.body, &mut |s| {
            if let Stmt::Call { callee, args } = s {
                for (k, a) in args.iter().enumerate() {
                    let fm = &p.routines[*callee].formals[k];
                    if fm.role.ty() != Ty::Real {
                        continue;
                    }
                    let active = matches!(a, Arg::Ref(x) if p.var(r, x.var).role.active());
                    let e = seen.entry((*callee, k)).or_default();
                    if active {
                        e.0 = true;
                    } else {
                        e.1 = true;
                    }
                }
            }
        });
    }
    seen.values().any(|(a, b)| *a && *b)
}

fn call_depth(p: &Program, r: usize) -> usize {
    let mut depth = 0;
    emit::walk(&p.routines[r].body, &mut |s| {
        if let Stmt::Call { callee, .. } = s {
            depth = depth.max(1 + call_depth(p, *callee));
        }
    });
    depth
}

/// Globals routine `r` and its callees write.
fn global_writes(p: &Program, r: usize, out: &mut BTreeSet<usize>) {
    emit::walk(&p.routines[r].body, &mut |s| match s {
        Stmt::Assign(l, _) => {
            if let VarId::Global(g) = l.var {
                out.insert(g);
            }
        }
        Stmt::Call { callee, .. } => global_writes(p, *callee, out),
        _ => {}
    });
}

fn expr_features(e: &Expr, add: &mut dyn FnMut(&str)) {
    match e {
        Expr::Op(name, args) => {
            add(&format!("intrinsic:{name}"));
            for a in args {
                expr_features(a, add);
            }
        }
        Expr::Ref(r) => ref_features(r, add),
        Expr::Bool(_) => add("logical_constant"),
        _ => {}
    }
}

fn ref_features(r: &Ref, add: &mut dyn FnMut(&str)) {
    for s in &r.subs {
        match s {
            Sub::Elem(e) => {
                if matches!(e, Expr::Op(..)) {
                    add("index_arithmetic");
                }
                expr_features(e, add);
            }
            Sub::Range(a, b, st) => {
                add("section");
                match st {
                    Some(Expr::Int(-1)) => add("section_reversed"),
                    Some(_) => add("section_strided"),
                    None => {}
                }
                if !matches!(a, Expr::Int(_)) {
                    add("section_with_runtime_bounds");
                }
                expr_features(a, add);
                expr_features(b, add);
            }
        }
    }
}

fn stmt_features(p: &Program, r: usize, s: &Stmt, add: &mut dyn FnMut(&str)) {
    match s {
        Stmt::Assign(l, rhs) => {
            ref_features(l, add);
            expr_features(rhs, add);
            let var = p.var(r, l.var);
            let vector = var.rank() > 0
                && (l.subs.is_empty() || l.subs.iter().any(|x| matches!(x, Sub::Range(..))));
            if vector {
                add("vector_assignment");
                let mut same = false;
                rhs.visit_refs(&mut |x| same |= x.var == l.var);
                if same {
                    add("vector_assignment_overlapping");
                }
                if var.deferred() {
                    add("vector_assignment_runtime_shape");
                }
            }
            if let Expr::Op("transpose_arr" | "reshape_arr", _) = rhs {
                add("direct_action");
            }
        }
        Stmt::Call { callee, args } => {
            add("call");
            let callee_r = &p.routines[*callee];
            let mut writes = BTreeSet::new();
            global_writes(p, *callee, &mut writes);
            let written_ints: Vec<VarId> = args
                .iter()
                .zip(&callee_r.written)
                .filter_map(|(a, w)| match a {
                    Arg::Ref(x) if *w && x.subs.is_empty() => Some(x.var),
                    _ => None,
                })
                .collect();
            let unchecked = !callee_r.side_effect_lists;
            for (k, a) in args.iter().enumerate() {
                let fm = &callee_r.formals[k];
                // Read by a callee that joint mode runs again from its
                // arguments as they are at its reversal (no checkpoint).
                let rerun = unchecked && !callee_r.written[k];
                match a {
                    Arg::Absent => add("optional_argument_absent"),
                    Arg::Const(_) => {
                        add("constant_argument");
                        if rerun && fm.role == Role::Active {
                            add("constant_to_active_formal_without_checkpoint");
                        }
                    }
                    Arg::Ref(x) => {
                        ref_features(x, add);
                        let actual = p.var(r, x.var);
                        if matches!(x.var, VarId::Formal(f) if p.routines[r].optional[f]) {
                            add("optional_argument_passed_on");
                            if (actual.role == Role::Active) != (fm.role == Role::Active) {
                                add("optional_argument_passed_on_converted");
                            }
                        }
                        if rerun && fm.role == Role::Active && actual.role == Role::Clean {
                            add("conversion_passive_to_active_without_checkpoint");
                        }
                        if rerun && actual.role == Role::Active && fm.role == Role::Active {
                            add("active_actual_without_checkpoint");
                        }
                        if actual.role == Role::Active && fm.role == Role::Sink {
                            add("conversion_active_to_passive");
                        }
                        if actual.role == Role::Clean && fm.role == Role::Active {
                            add("conversion_passive_to_active");
                        }
                        if actual.role == Role::Sink && fm.role == Role::Active {
                            add("conversion_passive_to_active_and_back");
                        }
                        if fm.rank() > 0
                            && x.subs.iter().all(|s| matches!(s, Sub::Elem(_)))
                            && !x.subs.is_empty()
                        {
                            add("element_to_array_formal");
                            if actual.rank() == 2 {
                                add("matrix_element_to_array_formal");
                            }
                        }
                        if fm.rank() > 0
                            && actual.rank() == 2
                            && matches!(
                                x.subs.as_slice(),
                                [Sub::Range(..), Sub::Elem(_)] | [Sub::Elem(_), Sub::Range(..)]
                            )
                        {
                            add("matrix_column_or_row_to_array_formal");
                        }
                        if fm.rank() > 0 && x.subs.is_empty() && actual.rank() != fm.rank() {
                            add("array_rank_change");
                        }
                        // A subscript the callee changes.
                        let mut changed = false;
                        for sub in &x.subs {
                            let e = match sub {
                                Sub::Elem(e) => e.clone(),
                                Sub::Range(a, _, _) => a.clone(),
                            };
                            e.visit_refs(&mut |v| {
                                changed |= matches!(v.var, VarId::Global(g) if writes.contains(&g))
                                    || written_ints.contains(&v.var);
                            });
                        }
                        if changed {
                            add("call_argument_index_changed_by_callee");
                        }
                    }
                }
            }
        }
        Stmt::Do {
            lo,
            hi,
            step,
            explicit,
            body,
            ..
        } => {
            expr_features(lo, add);
            expr_features(hi, add);
            // A bound the caller set: an integer formal or global.
            let mut from_caller = false;
            for e in [lo, hi] {
                e.visit_refs(&mut |x| {
                    from_caller |= matches!(x.var, VarId::Formal(_) | VarId::Global(_))
                        && p.var(r, x.var).role.ty() == Ty::Int
                        && x.subs.is_empty();
                });
            }
            if from_caller {
                add("do_bound_set_by_caller");
            }
            // A bound the body changes (the trip count is fixed on entry).
            let mut bound_vars = BTreeSet::new();
            for e in [lo, hi] {
                e.visit_refs(&mut |x| {
                    bound_vars.insert(x.var);
                });
            }
            let mut changed = (false, false);
            emit::walk(body, &mut |t| match t {
                Stmt::Assign(l, _) => changed.0 |= bound_vars.contains(&l.var),
                Stmt::Call { callee, args } => {
                    let mut g = BTreeSet::new();
                    global_writes(p, *callee, &mut g);
                    changed.1 |= g.iter().any(|g| bound_vars.contains(&VarId::Global(*g)));
                    for (a, w) in args.iter().zip(&p.routines[*callee].written) {
                        if let (Arg::Ref(x), true) = (a, w) {
                            changed.1 |= bound_vars.contains(&x.var);
                        }
                    }
                }
                _ => {}
            });
            if changed.0 {
                add("do_bound_changed_in_body");
            }
            if changed.1 {
                add("do_bound_changed_by_call_in_body");
            }
            add(match step {
                Step::Up => "do_up",
                Step::Down => "do_down",
                Step::Var(_) => "do_runtime_stride",
            });
            let zero_trip = matches!(hi, Expr::Op("sub_scal_scal", a) if a.first() == Some(lo) && a.get(1) == Some(&Expr::Int(1)))
                || matches!(lo, Expr::Op("sub_scal_scal", a) if a.first() == Some(hi) && a.get(1) == Some(&Expr::Int(1)));
            if zero_trip {
                add("do_zero_trip");
            }
            if *explicit {
                add("do_simple_loop_hint");
            }
            if body.iter().any(|s| matches!(s, Stmt::Exit(_))) {
                add("do_left_by_exit");
            }
        }
        Stmt::While { cond, post, .. } => {
            expr_features(cond, add);
            add(if *post { "postloop" } else { "while" });
        }
        Stmt::If {
            cond, els, vertex, ..
        } => {
            expr_features(cond, add);
            add(if *vertex { "if_vertex" } else { "if" });
            if !els.is_empty() {
                add("if_else");
            }
        }
        Stmt::Select { on, .. } => {
            expr_features(on, add);
            add("select_case");
        }
        Stmt::Exit(c) => {
            expr_features(c, add);
            add("early_exit");
        }
        Stmt::Return(c) => {
            expr_features(c, add);
            add("early_return");
        }
        Stmt::GotoLoop { cond, .. } => {
            expr_features(cond, add);
            add("goto_backward");
        }
        Stmt::GotoSkip { cond, .. } => {
            expr_features(cond, add);
            add("goto_forward");
        }
        Stmt::Marker => add("marker"),
    }
}

/// The construct names every sample of programs should show (the
/// intrinsics come from the catalogue the caller checks against).
pub const CONSTRUCTS: &[&str] = &[
    "routines>=3",
    "call_depth>=3",
    "global",
    "global_under_several_symbols",
    "active",
    "active_never_read",
    "passive",
    "passive_holding_active_values",
    "index_variable",
    "integer_counter",
    "matrix",
    "fixed_shape_array",
    "assumed_shape_formal",
    "allocatable",
    "scalar_formal",
    "array_formal",
    "integer_formal_written",
    "unstructured_marked",
    "unstructured_unmarked",
    "index_arithmetic",
    "section",
    "section_reversed",
    "section_strided",
    "section_with_runtime_bounds",
    "vector_assignment",
    "vector_assignment_overlapping",
    "vector_assignment_runtime_shape",
    "direct_action",
    "call",
    "constant_argument",
    "conversion_active_to_passive",
    "conversion_passive_to_active",
    "conversion_passive_to_active_and_back",
    "element_to_array_formal",
    "array_rank_change",
    "call_argument_index_changed_by_callee",
    "do_up",
    "do_down",
    "do_runtime_stride",
    "do_zero_trip",
    "do_simple_loop_hint",
    "while",
    "postloop",
    "if",
    "if_else",
    "if_vertex",
    "select_case",
    "early_exit",
    "early_return",
    "goto_backward",
    "goto_forward",
    "marker",
    "rank_three_array",
    "rank_four_to_six_array",
    "logical_variable",
    "logical_constant",
    "do_variable_after_loop",
    "index_vector",
    "no_side_effect_lists",
    "conversion_passive_to_active_without_checkpoint",
    "constant_to_active_formal_without_checkpoint",
    "active_actual_without_checkpoint",
    "routine_called_with_different_activity",
    "do_bound_set_by_caller",
    "do_bound_changed_in_body",
    "do_bound_changed_by_call_in_body",
    "matrix_element_to_array_formal",
    "matrix_column_or_row_to_array_formal",
    "optional_formal",
    "optional_argument_absent",
    "optional_argument_passed_on",
    "optional_argument_passed_on_converted",
    "no_side_effect_lists_not_a_kernel",
    "optional_array_formal",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Variables routine `r` writes outside its prologue (calls included:
    /// actuals of formals the callee writes, and globals its callees write).
    fn written_after_prologue(p: &Program, r: usize) -> BTreeSet<VarId> {
        let routine = &p.routines[r];
        let mut out = BTreeSet::new();
        emit::walk(&routine.body[routine.prologue..], &mut |s| match s {
            Stmt::Assign(l, _) => {
                out.insert(l.var);
            }
            Stmt::Do { var, .. } => {
                out.insert(*var);
            }
            Stmt::Call { callee, args } => {
                for (a, w) in args.iter().zip(&p.routines[*callee].written) {
                    if let (Arg::Ref(x), true) = (a, w) {
                        out.insert(x.var);
                    }
                }
                let mut g = BTreeSet::new();
                global_writes(p, *callee, &mut g);
                out.extend(g.into_iter().map(VarId::Global));
            }
            _ => {}
        });
        out
    }

    fn touches_globals(p: &Program, r: usize) -> bool {
        let mut found = false;
        emit::walk(&p.routines[r].body, &mut |s| {
            let mut refs: Vec<VarId> = Vec::new();
            let mut grab = |e: &Expr| e.visit_refs(&mut |x| refs.push(x.var));
            match s {
                Stmt::Assign(l, rhs) => {
                    grab(&Expr::r(l.clone()));
                    grab(rhs);
                }
                Stmt::Call { callee, args } => {
                    found |= touches_globals(p, *callee);
                    for a in args {
                        match a {
                            Arg::Ref(x) => grab(&Expr::r(x.clone())),
                            Arg::Const(e) => grab(e),
                            Arg::Absent => {}
                        }
                    }
                }
                Stmt::Do { lo, hi, .. } => {
                    grab(lo);
                    grab(hi);
                }
                Stmt::While { cond, .. }
                | Stmt::If { cond, .. }
                | Stmt::Exit(cond)
                | Stmt::Return(cond)
                | Stmt::GotoLoop { cond, .. }
                | Stmt::GotoSkip { cond, .. } => grab(cond),
                Stmt::Select { on, .. } => grab(on),
                Stmt::Marker => {}
            }
            found |= refs.iter().any(|v| matches!(v, VarId::Global(_)));
        });
        found
    }

    /// A kernel is run again at its reversal from its arguments as they
    /// are then: the builder keeps that the same run (see
    /// `Routine::kernel`).
    #[test]
    fn routines_without_side_effect_lists_run_again_the_same() {
        let mut unchecked = 0;
        for k in 0..400u64 {
            let p = program(k.wrapping_mul(0x9E37_79B9_7F4A_7C15), 1 + (k % 8) as usize);
            for (c, callee) in p.routines.iter().enumerate() {
                if !callee.kernel {
                    continue;
                }
                unchecked += 1;
                assert!(c > 0 && !touches_globals(&p, c), "seed index {k}");
                for f in 0..callee.formals.len() {
                    assert!(!callee.written[f] || callee.out[f], "seed index {k}");
                }
            }
            for q in 0..p.routines.len() {
                let written = written_after_prologue(&p, q);
                emit::walk(&p.routines[q].body, &mut |s| {
                    let Stmt::Call { callee, args } = s else {
                        return;
                    };
                    let c = &p.routines[*callee];
                    if !c.kernel {
                        return;
                    }
                    for (a, w) in args.iter().zip(&c.written) {
                        let (Arg::Ref(x), false) = (a, w) else {
                            continue;
                        };
                        let mut subscript_refs = 0;
                        for sub in &x.subs {
                            Sub::visit(sub, &mut |_| subscript_refs += 1);
                        }
                        assert!(
                            !matches!(x.var, VarId::Global(_))
                                && !written.contains(&x.var)
                                && subscript_refs == 0,
                            "seed index {k}: {} passes {x:?} to {}\n{}",
                            p.routines[q].name,
                            c.name,
                            listing(&p)
                        );
                    }
                });
            }
        }
        assert!(unchecked > 20, "{unchecked} routines without lists");
    }
}
