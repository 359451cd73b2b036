//! The TypeChange transformation: argument conversions at call sites and
//! nothing else (the reference's fourth driver, which OpenAD uses when
//! derivative code is written by hand or by another tool).
//!
//! Every call whose actual and formal arguments differ in activity passes
//! a temporary of the formal's activity, converted with `oad_convert`
//! before and after the call (allocated with `oad_AllocateMatching` when
//! its extents are known only at run time); active arguments of routines
//! without a body are converted to passive values, unless the routine has
//! a hand-written wrapper (`-w`), whose calls are renamed instead. This is
//! exactly what the tangent and adjoint modes do around calls
//! ([`crate::tangent::convert_call`]); `-r` and `-I` apply as there.

use crate::absent::guard_absent;
use rustc_hash::FxHashMap;
use xaif_model::{
    NonInlinableCatalogue, Program, RoutineBody, StmtId, StmtKind, VertexId, VertexKind,
};

use crate::context::Ctx;
use crate::tangent::{convert_call, ConvertedCall, Start, TransformError, Transformed};
use crate::temps::Names;

/// Options of the TypeChange transformation.
#[derive(Clone, Debug, Default)]
pub struct TypeChangeOptions {
    /// `-p`: symbols forced passive.
    pub passive: Vec<String>,
    /// `-F`: how the front end decorated names.
    pub decoration: xaif_model::Decoration,
    /// `-w`: routines without a body that have hand-written wrappers.
    pub wrappers: Vec<String>,
    /// `-r`: give routines with code the program's prefix.
    pub rename: bool,
    /// `-I`: every formal argument gets intent inout.
    pub all_inout: bool,
}

/// One statement of a basic block after the conversions.
pub enum Converted {
    /// A statement kept as it is.
    Kept(StmtId),
    /// A call (`original`) with its conversions.
    Call {
        /// The input's call statement.
        original: StmtId,
        /// The conversions and the call that replaces it.
        converted: ConvertedCall,
    },
}

impl Converted {
    /// The statements, in order.
    pub fn stmts(&self) -> Vec<StmtId> {
        match self {
            Converted::Kept(s) => vec![*s],
            Converted::Call { converted: c, .. } => {
                let mut v = c.before.clone();
                v.push(c.call);
                v.extend(&c.after);
                v
            }
        }
    }
}

/// The basic blocks of routine body `cfg` with every call converted.
pub fn convert_blocks(
    ctx: &Ctx<'_>,
    out: &mut Program,
    names: &mut Names,
    routines: &xaif_model::RoutineIndex,
    cfg: xaif_model::CfgId,
    scope: xaif_model::ScopeId,
) -> FxHashMap<VertexId, Vec<Converted>> {
    let mut blocks = FxHashMap::default();
    for v in ctx.p.cfgs[cfg].vertex_ids() {
        let VertexKind::BasicBlock(stmts) = &ctx.p.vertices[v].kind else {
            continue;
        };
        let converted = stmts
            .iter()
            .map(|&s| match ctx.p.stmts[s].kind {
                StmtKind::SubroutineCall(_) => Converted::Call {
                    original: s,
                    converted: convert_call(ctx, out, names, scope, routines, s),
                },
                _ => Converted::Kept(s),
            })
            .collect();
        blocks.insert(v, converted);
    }
    blocks
}

/// Converts the arguments of every call of a validated front-end program.
pub fn typechange(
    p: &Program,
    noninlinable: Option<&NonInlinableCatalogue>,
    options: &TypeChangeOptions,
) -> Result<Transformed, TransformError> {
    // Calls that would convert an absent optional argument are made under
    // `if (present(f))` first (see `absent`).
    let guarded = guard_absent(p, &options.passive, options.decoration, &options.wrappers)?;
    let p = guarded.as_ref().unwrap_or(p);
    let Start {
        ctx,
        mut out,
        mut names,
        routines,
        ..
    } = Start::with_names(
        p,
        noninlinable,
        &options.passive,
        options.decoration,
        &options.wrappers,
    )?;
    for (_, routine) in p.routines.iter() {
        let RoutineBody::Graph(cfg) = &routine.body else {
            continue;
        };
        let Some(scope) = routine
            .attrs
            .get("controlflowgraph_scope_id")
            .and_then(|s| ctx.symbols.scope(s))
        else {
            continue;
        };
        for (v, converted) in convert_blocks(&ctx, &mut out, &mut names, &routines, *cfg, scope) {
            let stmts = converted.iter().flat_map(Converted::stmts).collect();
            out.vertices[v].kind = VertexKind::BasicBlock(stmts);
        }
    }
    crate::rename::finish_program(&mut out, p, options.all_inout, options.rename);
    mark_entries(&mut out);
    Ok(Transformed {
        program: out,
        stats: Default::default(),
        dots: Vec::new(),
    })
}

/// Marks the `Entry` of every routine with
/// [`xaif_model::TYPE_CHANGE_ENTRY`] (added to an annotation it has), so
/// that the output says it holds no derivative code to run.
fn mark_entries(out: &mut Program) {
    let entries: Vec<_> = out
        .routines
        .iter()
        .filter_map(|(_, r)| match r.body {
            RoutineBody::Graph(cfg) => Some(cfg),
            RoutineBody::Replacements(_) => None,
        })
        .flat_map(|cfg| out.cfgs[cfg].vertex_ids())
        .filter(|&v| matches!(out.vertices[v].kind, VertexKind::Entry))
        .collect();
    for v in entries {
        let attrs = &mut out.vertices[v].attrs;
        let mark = match attrs.get("annotation").filter(|a| !a.is_empty()) {
            Some(old) => format!("{old} {}", xaif_model::TYPE_CHANGE_ENTRY),
            None => xaif_model::TYPE_CHANGE_ENTRY.to_string(),
        };
        attrs.set("annotation", &mark);
    }
}
