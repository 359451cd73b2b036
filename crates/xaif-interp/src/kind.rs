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
    /// engine's TypeChange driver writes no such mark; its output is told
    /// from tangent-linear output by what it lacks: it assigns active
    /// variables and holds no derivative code anywhere, where a tangent
    /// output propagates (or zeroes) the derivative of every active
    /// assignment.
    TypeChange {
        /// Whether the document says so ([`TYPE_CHANGE_ENTRY`]) rather
        /// than its lack of derivative code.
        marked: bool,
    },
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
            [] if marked_type_change(p) => ProgramKind::TypeChange { marked: true },
            [] if assigns_active_without_derivative_code(p) => {
                ProgramKind::TypeChange { marked: false }
            }
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
            ProgramKind::TypeChange { marked: true } => {
                "the file is type-change output (argument conversions only, no derivative code)".into()
            }
            ProgramKind::TypeChange { marked: false } => {
                "the file is type-change output (it assigns active variables but holds no derivative code anywhere, as the reference engine's type-change output does)".into()
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

/// Whether the plain output `p` assigns some active variable and holds no
/// derivative code at all (no `DerivativePropagator`, no call of the
/// tangent module): a tangent output propagates or zeroes the derivative
/// of every assignment to an active variable, so such a file is no
/// tangent output, and tangent mode would print its zero derivatives as a
/// Jacobian.
fn assigns_active_without_derivative_code(p: &Program) -> bool {
    let mut assigns_active = false;
    let mut symbols: Option<xaif_model::SymbolIndex> = None;
    for (_, stmt) in p.stmts.iter() {
        match &stmt.kind {
            xaif_model::StmtKind::DerivativePropagator(_) => return false,
            xaif_model::StmtKind::InlinableCall(_) => {
                let name = stmt.attrs.get("subroutine_name").unwrap_or("");
                if crate::compile::is_tangent_call(name) {
                    return false;
                }
            }
            xaif_model::StmtKind::Assignment(a) if !assigns_active => {
                let index = symbols.get_or_insert_with(|| xaif_model::SymbolIndex::new(p));
                assigns_active = a
                    .lhs
                    .graph
                    .symbol_ids()
                    .and_then(|(scope, name)| index.symbol(scope, name))
                    .is_some_and(|s| p.symbols[s].is_active());
            }
            _ => {}
        }
    }
    assigns_active
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

/// How a routine's argument restores (placeholder 6) take back what its
/// stores (placeholder 4) saved, as the document says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestoreOrder {
    /// Off a stack, the last value stored first: on each of the run-time's
    /// stacks (reals, integers, logicals, strings) every restore names the
    /// argument the store it pops saved (where that also holds read in
    /// store order, both disciplines restore alike).
    Stack,
    /// In the order they were stored (`-f`): the `Entry` of placeholder 6
    /// carries [`STORE_ORDER_ENTRY`] (xaifb's `-f`), or, unmarked, every
    /// restore names the argument of the store it reads in store order and
    /// not, popped off a stack, that of the store it would pop.
    StoreOrder,
    /// Unmarked, and the restores name the stored arguments in neither
    /// order, or marked and not in store order: which value each restore
    /// takes depends on a discipline the document does not tell, or
    /// contradicts. Joint mode refuses such a program.
    Undecided {
        /// Where placeholder 6 begins (its `Replacement`).
        span: xaif_model::Span,
        /// Whether the routine carries [`STORE_ORDER_ENTRY`].
        marked: bool,
    },
}

/// How routine `r` restores its argument checkpoints ([`RestoreOrder`]).
///
/// The reference engine's `-f` writes no mark: its output differs from
/// the one without `-f` only in the order of placeholder 6's restores
/// (the stores' order instead of its reverse), so the structure of the
/// calls is all there is to read. Each call goes to one of the routine's
/// four stacks (by the type its name gives), so the two disciplines are
/// played on each stack apart: a store pairs with the restore that would
/// take its values back, and the discipline fits when every pair names the
/// same argument the same way (the same call kind, the same reference,
/// whatever the attributes around it say). Run as a stack, store-order
/// restores take wrong values with no error; where both disciplines fit,
/// each restore takes the value of its own argument either way. An
/// unmarked routine where neither fits (no engine writes one; an edited
/// file can) is [`RestoreOrder::Undecided`]: guessing a discipline for it
/// could print a wrong Jacobian; so is a routine marked to restore in
/// store order whose restores do not fit that order (an edited file
/// again).
pub fn restore_order(p: &Program, r: &xaif_model::Routine) -> RestoreOrder {
    let Some(cfg) = r.graph(Some("6")) else {
        return RestoreOrder::Stack;
    };
    let marked = p.cfgs[cfg].vertex_ids().any(|v| {
        let vertex = &p.vertices[v];
        matches!(vertex.kind, VertexKind::Entry)
            && vertex.attrs.get("annotation") == Some(STORE_ORDER_ENTRY)
    });
    let restores = checkpoint_calls(p, r, "6", "cp_arg_restore_").unwrap_or_default();
    let stores = checkpoint_calls(p, r, "4", "cp_arg_store_").unwrap_or_default();
    if !marked && disciplines_fit(&stores, &restores, true) {
        RestoreOrder::Stack
    } else if disciplines_fit(&stores, &restores, false) {
        RestoreOrder::StoreOrder
    } else {
        let span = match &r.body {
            RoutineBody::Replacements(list) => list
                .iter()
                .find(|x| x.cfg == cfg)
                .map(|x| x.attrs.span)
                .unwrap_or(r.attrs.span),
            _ => r.attrs.span,
        };
        RestoreOrder::Undecided { span, marked }
    }
}

/// Whether every restore of `restores` takes back the argument it names
/// when run after `stores` off a stack (`stack`) or in store order: on
/// each of the run-time's stacks, the k-th restore pairs with the k-th
/// store from the top or from the start, and the two must be the same
/// call kind of the same argument. A restore with no store to pair with,
/// or a call whose name gives no type, fits neither.
fn disciplines_fit(
    stores: &[CheckpointCall<'_>],
    restores: &[CheckpointCall<'_>],
    stack: bool,
) -> bool {
    let mut per_stack: [Vec<&CheckpointCall<'_>>; 4] = Default::default();
    for c in stores {
        let Some(slot) = c.slot() else {
            return false;
        };
        per_stack[slot].push(c);
    }
    let mut taken = [0usize; 4];
    for c in restores {
        let Some(slot) = c.slot() else {
            return false;
        };
        let stored = &per_stack[slot];
        let k = taken[slot];
        taken[slot] += 1;
        let paired = if stack {
            stored.len().checked_sub(k + 1).map(|i| stored[i])
        } else {
            stored.get(k).copied()
        };
        if paired.is_none_or(|s| !s.same_argument(c)) {
            return false;
        }
    }
    true
}

/// A checkpoint call of placeholder 4 or 6: the rest of its name after
/// `cp_arg_store_` or `cp_arg_restore_` (`real_vector_a`), and its
/// arguments.
struct CheckpointCall<'p> {
    kind: &'p str,
    args: &'p [xaif_model::InlinableArg],
}

impl CheckpointCall<'_> {
    /// The run-time stack the call's values go to or come from
    /// (`crate::exec::stack_slot`).
    fn slot(&self) -> Option<usize> {
        let ty = crate::compile::element_type(self.kind)?;
        Some(crate::exec::stack_slot(ty, self.kind.ends_with("_a_d")))
    }

    /// Whether a store and a restore name the same argument the same way:
    /// the same call kind and the same references (their graphs; the
    /// attributes of the reference element, such as `deriv`, `alias` or
    /// `du_ud`, say nothing about which variable it is).
    fn same_argument(&self, other: &CheckpointCall<'_>) -> bool {
        use xaif_model::{ArgValue, InlinableArg};
        fn key(a: &InlinableArg) -> Result<&xaif_model::RefGraph, &xaif_model::Attrs> {
            match a {
                InlinableArg::Argument(a) => match &a.value {
                    ArgValue::Variable(r) => Ok(&r.graph),
                    ArgValue::Constant(c) => Err(c),
                },
                InlinableArg::Substitute(r) => Ok(&r.graph),
            }
        }
        self.kind == other.kind
            && self.args.len() == other.args.len()
            && self
                .args
                .iter()
                .zip(other.args)
                .all(|(a, b)| key(a) == key(b))
    }
}

/// Whether routine `r`'s argument restores read in store order
/// ([`RestoreOrder::StoreOrder`]).
pub(crate) fn restores_in_store_order(p: &Program, r: &xaif_model::Routine) -> bool {
    restore_order(p, r) == RestoreOrder::StoreOrder
}

/// The argument checkpoint calls of placeholder `placeholder` of `r`
/// whose names begin with `prefix`, in document order.
fn checkpoint_calls<'p>(
    p: &'p Program,
    r: &xaif_model::Routine,
    placeholder: &str,
    prefix: &str,
) -> Option<Vec<CheckpointCall<'p>>> {
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
            if let Some(kind) = name.strip_prefix(prefix) {
                calls.push(CheckpointCall {
                    kind,
                    args: args.as_slice(),
                });
            }
        }
    }
    Some(calls)
}
