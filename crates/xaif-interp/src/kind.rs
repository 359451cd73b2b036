//! What kind of XAIF a program is, read from the document itself, and
//! which run modes can execute that kind meaningfully.
//!
//! Every derivative mode runs only the code it was made for: tangent mode
//! seeds derivative parts and reads them back, split and joint mode call
//! the adjoint template's placeholders, trace mode the tracing template's.
//! Run on anything else, a mode does not fail: it prints zeros, or an empty
//! trace, that look like results. So the kind is decided before a run from
//! what the document holds (never from its file name), and a mode refuses
//! every kind it cannot execute.

use xaif_model::{Program, RoutineBody, VertexKind, STORE_ORDER_ENTRY, TYPE_CHANGE_ENTRY};

use crate::harness::Mode;

/// The template name of adjoint output (OpenAD's joint and split
/// templates).
pub const ADJOINT_TEMPLATE: &str = "reverse_subroutine_template";

/// The template name of trace output (OpenAD's TraceDiff driver).
pub const TRACE_TEMPLATE: &str = "tracing_subroutine_template";

/// The kinds of XAIF xaifb reads and writes, as far as running them goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProgramKind {
    /// A program that is no transformation result: front-end XAIF, or what
    /// `xaifb analyze --passivate` writes from it. It holds no derivative
    /// code.
    Original,
    /// Tangent-linear output: a transformation result with plain control
    /// flow graphs (without derivative code where nothing is active).
    Tangent,
    /// Type-change output (argument conversions at calls, no derivative
    /// code), which xaifb marks with [`TYPE_CHANGE_ENTRY`]. The reference
    /// engine's TypeChange driver writes no such mark: its output cannot
    /// be told from tangent-linear output.
    TypeChange,
    /// Adjoint output (`reverse_subroutine_template`).
    Adjoint {
        /// Whether some routine restores its argument checkpoints in the
        /// order they were stored (`-f`), which its `Entry` annotation
        /// ([`STORE_ORDER_ENTRY`]) says, or, in the reference engine's
        /// unmarked output, the order of its restores shows.
        store_order: bool,
    },
    /// Trace output (`tracing_subroutine_template`).
    Trace,
    /// Replacement lists of templates xaifb does not know how to run, or
    /// of more than one template.
    UnknownTemplate(String),
}

impl ProgramKind {
    /// Reads the kind of `p` (a program that passed the gate).
    pub fn of(p: &Program) -> ProgramKind {
        let mut templates: Vec<&str> = Vec::new();
        for (_, r) in p.routines.iter() {
            if let RoutineBody::Replacements(_) = r.body {
                let t = r.attrs.get("template_name").unwrap_or("");
                if !templates.contains(&t) {
                    templates.push(t);
                }
            }
        }
        match templates.as_slice() {
            [] if !p.is_output() => ProgramKind::Original,
            [] if marked_type_change(p) => ProgramKind::TypeChange,
            [] => ProgramKind::Tangent,
            [ADJOINT_TEMPLATE] => ProgramKind::Adjoint {
                store_order: p
                    .routines
                    .iter()
                    .any(|(_, r)| restores_in_store_order(p, r)),
            },
            [TRACE_TEMPLATE] => ProgramKind::Trace,
            names => ProgramKind::UnknownTemplate(
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        }
    }

    /// What the file is, for messages.
    pub fn describe(&self) -> String {
        match self {
            ProgramKind::Original => {
                "the file is not a transformation result (front-end XAIF, or `analyze --passivate` output) and holds no derivative code".into()
            }
            ProgramKind::Tangent => "the file is tangent-linear output".into(),
            ProgramKind::TypeChange => {
                "the file is type-change output (argument conversions only, no derivative code)".into()
            }
            ProgramKind::Adjoint { store_order: false } => {
                "the file is adjoint output (`reverse_subroutine_template`)".into()
            }
            ProgramKind::Adjoint { store_order: true } => {
                "the file is adjoint output (`reverse_subroutine_template`) whose checkpoints are restored in store order (-f)".into()
            }
            ProgramKind::Trace => {
                "the file is trace output (`tracing_subroutine_template`)".into()
            }
            ProgramKind::UnknownTemplate(names) => format!(
                "the file holds replacement lists of template {names}, which xaifb cannot run"
            ),
        }
    }

    /// Whether `mode` executes this kind meaningfully (divided differences
    /// run the plain program, as [`Mode::Plain`] does).
    pub fn runs_in(&self, mode: Mode) -> bool {
        match (self, mode) {
            (ProgramKind::UnknownTemplate(_), _) => false,
            (_, Mode::Plain) => true,
            (ProgramKind::Tangent, Mode::Tangent) => true,
            (ProgramKind::Adjoint { .. }, Mode::Split | Mode::Joint) => true,
            (ProgramKind::Trace, Mode::Trace) => true,
            _ => false,
        }
    }

    /// The modes that run this kind, for messages (`--mode plain, --fd`).
    pub fn modes(&self) -> String {
        let modes: Vec<&str> = [
            (Mode::Plain, "--mode plain"),
            (Mode::Tangent, "--mode tangent"),
            (Mode::Split, "--mode split"),
            (Mode::Joint, "--mode joint"),
            (Mode::Trace, "--mode trace"),
        ]
        .into_iter()
        .filter(|(m, _)| self.runs_in(*m))
        .map(|(_, name)| name)
        .collect();
        if modes.is_empty() {
            return "no mode runs it".into();
        }
        format!("run it with {} or --fd", modes.join(", "))
    }
}

/// Whether some routine's `Entry` carries [`TYPE_CHANGE_ENTRY`].
fn marked_type_change(p: &Program) -> bool {
    p.vertices.iter().any(|(_, v)| {
        matches!(v.kind, VertexKind::Entry)
            && v.attrs
                .get("annotation")
                .is_some_and(|a| a.split(' ').any(|w| w == TYPE_CHANGE_ENTRY))
    })
}

/// Whether routine `r`'s argument restores (placeholder 6) read in store
/// order: the `Entry` of that graph carries [`STORE_ORDER_ENTRY`] (xaifb's
/// `-f`), or, unmarked, the restores name the stored arguments in the
/// order placeholder 4 stored them where that order is not its own
/// reverse. The reference engine's `-f` writes no mark, only that order
/// (its output differs from the one without `-f` in nothing else), and
/// run as a stack it would restore the wrong values with no error; where
/// the stores read the same both ways, the two disciplines restore alike.
pub(crate) fn restores_in_store_order(p: &Program, r: &xaif_model::Routine) -> bool {
    let Some(cfg) = r.graph(Some("6")) else {
        return false;
    };
    let marked = p.cfgs[cfg].vertex_ids().any(|v| {
        let vertex = &p.vertices[v];
        matches!(vertex.kind, VertexKind::Entry)
            && vertex.attrs.get("annotation") == Some(STORE_ORDER_ENTRY)
    });
    if marked {
        return true;
    }
    let (Some(stores), Some(restores)) = (
        checkpoint_calls(p, r, "4", "cp_arg_store_"),
        checkpoint_calls(p, r, "6", "cp_arg_restore_"),
    ) else {
        return false;
    };
    restores == stores && !stores.iter().eq(stores.iter().rev())
}

/// The argument checkpoint calls of placeholder `placeholder` of `r`
/// whose names begin with `prefix`, in document order, each as the rest
/// of its name and its arguments (which compare without their source
/// positions, so that a store and the restore of the same argument are
/// equal).
fn checkpoint_calls<'p>(
    p: &'p Program,
    r: &xaif_model::Routine,
    placeholder: &str,
    prefix: &str,
) -> Option<Vec<(&'p str, &'p [xaif_model::InlinableArg])>> {
    let cfg = r.graph(Some(placeholder))?;
    let mut calls = Vec::new();
    for v in p.cfgs[cfg].vertex_ids() {
        let VertexKind::BasicBlock(stmts) = &p.vertices[v].kind else {
            continue;
        };
        for &s in stmts {
            let stmt = &p.stmts[s];
            let xaif_model::StmtKind::InlinableCall(args) = &stmt.kind else {
                continue;
            };
            let name = stmt.attrs.get("subroutine_name").unwrap_or("");
            if let Some(rest) = name.strip_prefix(prefix) {
                calls.push((rest, args.as_slice()));
            }
        }
    }
    Some(calls)
}
