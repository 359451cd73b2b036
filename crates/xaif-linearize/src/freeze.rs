//! Subscripts that a sequence changes under its own feet.
//!
//! The derivative code of a sequence runs after its statements: the
//! tangent propagation, and the adjoint's taping of index values, evaluate
//! the subscripts of the sequence's references again there. A subscript
//! that reads a variable some statement of the sequence writes at or after
//! the reference (`a(maxloc(a)) = …`, `a(int(b(1))) = …; b(1) = …`) would
//! then name another element than the statement did. Fortran evaluates a
//! reference's subscripts when the statement runs, so such a subscript is
//! saved in an integer temporary (of its shape: `maxloc` gives an array of
//! one element) just before its statement, and every copy
//! of the reference (the statement, its slot in the propagation) reads the
//! temporary. Passive statements that write subscript variables end a
//! sequence instead (see `flatten`).

use std::collections::HashMap;

use xaif_model::{Expr, ExprVertexKind, StmtId, VarRef};

use crate::context::{Ctx, Storage};
use crate::dag::Node;
use crate::flatten::{Item, Sequence, Source};
use crate::preaccumulate::Target;
use crate::temps::{for_each_variable_subscript, integer_temp, read_temp, set_temp};

/// A sequence whose self-modified subscripts read temporaries.
pub struct Frozen {
    /// The rewritten sequence.
    pub seq: Sequence,
    /// Per item, the assignments of its temporaries (to run just before
    /// it).
    pub before: Vec<Vec<StmtId>>,
}

/// Storages `e` reads (subscripts of its references included).
fn reads(ctx: &Ctx<'_>, e: &Expr, out: &mut Vec<Storage>) {
    for v in &e.vertices {
        if let ExprVertexKind::VariableReference(g) = &v.kind {
            if let Some(s) = ctx.symbol_of(g) {
                out.push(ctx.storage(s));
            }
            for triplets in g.subscripts() {
                for t in triplets {
                    for x in [&t.index, &t.bound, &t.stride].into_iter().flatten() {
                        reads(ctx, x, out);
                    }
                }
            }
        }
    }
}

/// `r` with every subscript reading one of `written` replaced by a fresh
/// temporary assigned in `before`.
fn freeze_ref(
    ctx: &Ctx<'_>,
    t: &mut Target<'_>,
    r: &VarRef,
    written: &[Storage],
    before: &mut Vec<StmtId>,
) -> Option<VarRef> {
    let mut out = r.clone();
    let mut changed = false;
    for_each_variable_subscript(&mut out, |e| {
        let mut read = Vec::new();
        reads(ctx, e, &mut read);
        if read.iter().any(|s| written.contains(s)) {
            // A subscript whose value is an integer array of one element
            // (`a(maxloc(a))`) is saved whole: Fortran assigns no array to
            // a scalar (vector subscripts of more elements are refused
            // before, `Ctx::vector_subscript`).
            let shape = crate::dag::Dag::from_expr(e)
                .map(|d| ctx.infer(&d)[d.root].1.clone())
                .filter(|s| s.rank > 0 && s.extents.is_some());
            let temp = match shape {
                Some(shape) => {
                    crate::temps::declare(
                        t.out,
                        t.names,
                        t.scope,
                        crate::temps::TempKind::Prp,
                        crate::context::ValueType::Integer,
                        &shape,
                        false,
                    )
                    .var
                }
                None => integer_temp(t.out, t.names, t.scope),
            };
            before.push(set_temp(t.out, t.names, "index", &temp, e.clone()));
            *e = read_temp(&temp);
            changed = true;
        }
    });
    changed.then_some(out)
}

/// Whether a subscript of `r` that is not a constant reads one of the
/// storages `written` holds (what [`freeze_ref`] would replace), without
/// copying `r`; `scratch` is reused for the reads.
fn touches(
    ctx: &Ctx<'_>,
    r: &VarRef,
    written: &HashMap<Storage, usize>,
    scratch: &mut Vec<Storage>,
) -> bool {
    r.graph.vertices.iter().any(|v| {
        let xaif_model::RefVertexKind::ArrayElement { triplets } = &v.kind else {
            return false;
        };
        triplets.iter().any(|t| {
            [&t.index, &t.bound, &t.stride]
                .into_iter()
                .flatten()
                .filter(|e| {
                    !(e.vertices.len() == 1
                        && matches!(e.vertices[0].kind, ExprVertexKind::Constant))
                })
                .any(|e| {
                    scratch.clear();
                    reads(ctx, e, scratch);
                    scratch.iter().any(|s| written.contains_key(s))
                })
        })
    })
}

/// The sequence with its self-modified subscripts frozen, or `None` when
/// it has none.
///
/// Most sequences have none: they are checked first, and the sequence is
/// copied only when an item needs a temporary (the items are then
/// rewritten in order, so the temporaries are made in the same order).
pub fn freeze(ctx: &Ctx<'_>, t: &mut Target<'_>, seq: &Sequence) -> Option<Frozen> {
    let lhs_storage = |item: &Item| match item {
        Item::Active { lhs, .. } | Item::Zero { lhs, .. } => {
            ctx.symbol_of(&lhs.graph).map(|s| ctx.storage(s))
        }
        Item::Plain(_) => None,
    };
    // How many items from the current one on write each storage.
    let mut written: HashMap<Storage, usize> = HashMap::new();
    for item in &seq.items {
        if let Some(s) = lhs_storage(item) {
            *written.entry(s).or_default() += 1;
        }
    }
    let mut frozen: Option<Frozen> = None;
    let mut scratch = Vec::new();
    for k in 0..seq.items.len() {
        if k > 0 {
            if let Some(s) = lhs_storage(&seq.items[k - 1]) {
                if let Some(n) = written.get_mut(&s) {
                    *n -= 1;
                    if *n == 0 {
                        written.remove(&s);
                    }
                }
            }
        }
        if written.is_empty() {
            break;
        }
        let needed = match &seq.items[k] {
            Item::Plain(_) => false,
            Item::Zero { lhs, .. } => touches(ctx, lhs, &written, &mut scratch),
            Item::Active { lin, lhs, .. } => {
                touches(ctx, lhs, &written, &mut scratch)
                    || lin.dag.nodes.iter().any(|n| match n {
                        Node::Var(r) => touches(ctx, r, &written, &mut scratch),
                        _ => false,
                    })
            }
        };
        if !needed {
            continue;
        }
        let written: Vec<Storage> = written.keys().cloned().collect();
        let Frozen { seq: out, before } = frozen.get_or_insert_with(|| Frozen {
            seq: seq.clone(),
            before: vec![Vec::new(); seq.items.len()],
        });
        let Sequence {
            items,
            independents,
            ..
        } = out;
        match &mut items[k] {
            Item::Plain(_) => {}
            Item::Zero { lhs, .. } => {
                if let Some(f) = freeze_ref(ctx, t, lhs, &written, &mut before[k]) {
                    *lhs = f;
                }
            }
            Item::Active {
                lin, lhs, sources, ..
            } => {
                if let Some(f) = freeze_ref(ctx, t, lhs, &written, &mut before[k]) {
                    *lhs = f;
                }
                for n in 0..lin.dag.nodes.len() {
                    let Node::Var(r) = &lin.dag.nodes[n] else {
                        continue;
                    };
                    let Some(f) = freeze_ref(ctx, t, r, &written, &mut before[k]) else {
                        continue;
                    };
                    // The independent this use stands for reads the same
                    // element.
                    if let Some(Source::Independent(i)) = sources.get(&n) {
                        let ind = &mut independents[*i];
                        if ind.var.graph == r.graph {
                            ind.var = f.with_attrs(ind.var.attrs.clone());
                        }
                    }
                    lin.dag.nodes[n] = Node::Var(f);
                }
            }
        }
    }
    frozen
}
