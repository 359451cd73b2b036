//! Errors of reading and validating XAIF.
//!
//! Every error names the file, the line and column where the offending
//! element starts, and the element, so a user can go straight to the spot.
//! Reading stops at the first malformed construct; the validation gate
//! collects every error it finds.

use std::fmt;
use std::sync::Arc;

use compact_str::CompactString;

/// What kind of id a duplicate-id error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IdKind {
    /// `Scope@vertex_id`.
    Scope,
    /// `Symbol@symbol_id` within one symbol table.
    Symbol,
    /// `ControlFlowGraph@vertex_id` / `ReplacementList@vertex_id`.
    Routine,
    /// Control flow vertex `vertex_id` within one graph.
    CfgVertex,
    /// `ControlFlowEdge@edge_id` within one graph.
    CfgEdge,
    /// Expression vertex `vertex_id` within one expression.
    ExprVertex,
    /// `ExpressionEdge@edge_id` within one expression.
    ExprEdge,
    /// Variable reference vertex `vertex_id` within one reference.
    RefVertex,
    /// Statement `statement_id` within one routine.
    Statement,
    /// `AliasSet@key`.
    AliasKey,
    /// `StmtIdSet@key` of the DU-UD map.
    DuudKey,
    /// `StmtIdSet@key` of the DO map.
    DoKey,
    /// A routine defined twice for the same `symbol_id`.
    RoutineSymbol,
    /// `InlinableIntrinsic@name` or a non-inlinable intrinsic name.
    Intrinsic,
    /// `Partial@partial_id` within one intrinsic.
    Partial,
}

impl fmt::Display for IdKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IdKind::Scope => "scope",
            IdKind::Symbol => "symbol",
            IdKind::Routine => "call graph vertex",
            IdKind::CfgVertex => "control flow vertex",
            IdKind::CfgEdge => "control flow edge",
            IdKind::ExprVertex => "expression vertex",
            IdKind::ExprEdge => "expression edge",
            IdKind::RefVertex => "variable reference vertex",
            IdKind::Statement => "statement",
            IdKind::AliasKey => "alias set key",
            IdKind::DuudKey => "DU-UD set key",
            IdKind::DoKey => "DO set key",
            IdKind::RoutineSymbol => "routine",
            IdKind::Intrinsic => "intrinsic",
            IdKind::Partial => "partial",
        })
    }
}

/// What kind of reference a dangling-reference error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefKind {
    /// A `scope_id` that names no scope.
    Scope,
    /// A `symbol_id` not in the symbol table of the given scope.
    Symbol,
    /// An end of a `ScopeEdge`.
    ScopeEdgeEnd,
    /// An end of a `CallGraphEdge`.
    CallGraphEdgeEnd,
    /// An end of a `ControlFlowEdge`.
    CfgEdgeEnd,
    /// An end of an `ExpressionEdge`.
    ExprEdgeEnd,
    /// An end of a `VariableReferenceEdge`.
    RefEdgeEnd,
    /// An `alias` attribute whose key is not in the `AliasSetMap`.
    AliasKey,
    /// A `du_ud` attribute whose key is not in the `DUUDSetMap`.
    DuudKey,
    /// A `do_chain` attribute whose key is not in the `DOSetMap`.
    DoKey,
}

impl fmt::Display for RefKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RefKind::Scope => "scope",
            RefKind::Symbol => "symbol",
            RefKind::ScopeEdgeEnd => "scope edge end",
            RefKind::CallGraphEdgeEnd => "call graph edge end",
            RefKind::CfgEdgeEnd => "control flow edge end",
            RefKind::ExprEdgeEnd => "expression edge end",
            RefKind::RefEdgeEnd => "variable reference edge end",
            RefKind::AliasKey => "alias set key",
            RefKind::DuudKey => "DU-UD set key",
            RefKind::DoKey => "DO set key",
        })
    }
}

/// The ways XAIF input can be wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ErrorKind {
    /// The file could not be read at all.
    #[error("cannot read file: {0}")]
    Io(String),
    /// The text is not well-formed XML.
    #[error("malformed XML: {0}")]
    Xml(String),
    /// The declared encoding is not one we read.
    #[error("unsupported encoding `{0}` (UTF-8, UTF-16 and ISO-8859-1 are read)")]
    Encoding(String),
    /// The XML declaration names an encoding the bytes are not in.
    #[error("the XML declaration says encoding `{declared}`, but the text is {found}")]
    EncodingMismatch {
        /// The declared encoding.
        declared: String,
        /// What the bytes are.
        found: &'static str,
    },
    /// A character XML 1.0 does not allow in a document (a control
    /// character, NUL, U+FFFE or U+FFFF), raw or as a character reference.
    #[error("character U+{0:04X} is not allowed in XML 1.0")]
    ForbiddenCharacter(u32),
    /// A document type declaration: XAIF has no DTD, and entities are never
    /// declared or resolved.
    #[error("a DOCTYPE is not allowed: XAIF has no DTD, and entities are never resolved")]
    DocType,
    /// The root element is not an XAIF document.
    #[error("the root element `{0}` is not an XAIF CallGraph or intrinsics catalogue")]
    UnknownRoot(String),
    /// An element the schema does not allow at this place.
    #[error("unknown element `{name}` inside `{parent}`{}", if *.old_format { " (an element of an older XAIF format: regenerate the file with a current front end)" } else { "" })]
    UnknownElement {
        /// The element's qualified name as written.
        name: CompactString,
        /// The enclosing element's local name.
        parent: CompactString,
        /// Whether the name is known from older XAIF versions.
        old_format: bool,
    },
    /// Non-whitespace text where XAIF has none.
    #[error("unexpected text content `{0}`")]
    UnexpectedText(String),
    /// A required child element is missing.
    #[error("required child element `{0}` is missing")]
    MissingChild(&'static str),
    /// A child element XAIF allows once appears again.
    #[error("element `{0}` appears more than once (XAIF allows one)")]
    Repeated(&'static str),
    /// A required attribute is missing.
    #[error("required attribute `{0}` is missing")]
    MissingAttribute(&'static str),
    /// An attribute whose value does not parse.
    #[error("attribute `{attr}` has value `{value}`, expected {expected}")]
    BadAttribute {
        /// The attribute name.
        attr: &'static str,
        /// The value found.
        value: CompactString,
        /// What was expected.
        expected: &'static str,
    },
    /// Two elements share an id that must be unique.
    #[error("duplicate {what} id `{id}` (first at line {first_line}, column {first_column})")]
    DuplicateId {
        /// The kind of id.
        what: IdKind,
        /// The id.
        id: CompactString,
        /// Line of the first definition.
        first_line: u32,
        /// Column of the first definition.
        first_column: u32,
    },
    /// A reference to an id that is not defined.
    #[error("{what} `{id}` is not defined")]
    DanglingReference {
        /// The kind of reference.
        what: RefKind,
        /// The id referred to.
        id: CompactString,
    },
    /// An expression graph with a cycle.
    #[error("expression graph has a cycle through vertex `{vertex}`")]
    CyclicExpression {
        /// A vertex on the cycle.
        vertex: CompactString,
    },
    /// An operation without an argument at some position.
    #[error("vertex `{vertex}` has {found} incoming edges but no argument at position {position}")]
    MissingPosition {
        /// The operation vertex.
        vertex: CompactString,
        /// The missing position.
        position: i64,
        /// How many incoming edges it has.
        found: usize,
    },
    /// An operation with two arguments at one position.
    #[error("vertex `{vertex}` has two arguments at position {position}")]
    DuplicatePosition {
        /// The operation vertex.
        vertex: CompactString,
        /// The position taken twice.
        position: i64,
    },
    /// A call with two arguments at one position.
    #[error("the call of `{routine}` has two arguments at position {position}")]
    CallPositionTaken {
        /// The called routine's symbol.
        routine: CompactString,
        /// The position taken twice.
        position: i64,
    },
    /// A call passing an argument where the called routine (defined in the
    /// file) has no formal argument.
    #[error("the call of `{routine}` passes an argument at position {position}, but `{routine}` has {formals} formal argument(s)")]
    CallPositionNoFormal {
        /// The called routine's symbol.
        routine: CompactString,
        /// The position without a formal.
        position: i64,
        /// How many formal arguments the routine has.
        formals: usize,
    },
    /// An expression graph that does not compute one value.
    #[error("expression graph has {roots} result vertices; exactly one is required")]
    ExpressionRoots {
        /// How many vertices have no outgoing edge.
        roots: usize,
    },
    /// A number that names an argument that does not exist
    /// (`partial_id` or `ArgumentReference@argument` beyond the intrinsic's
    /// `nr_arguments`, a formal's `position` beyond its argument list).
    #[error("attribute `{attr}` is {value}, outside {low}..={high} ({bound} is {high})")]
    OutOfRange {
        /// The attribute.
        attr: &'static str,
        /// Its value.
        value: i64,
        /// The smallest value allowed.
        low: i64,
        /// The largest value allowed.
        high: i64,
        /// What the largest value is.
        bound: &'static str,
    },
    /// A use of a catalogue intrinsic with more arguments than its
    /// catalogue entry has, or fewer than its partials read.
    #[error("intrinsic `{name}` is applied to {found} argument{}, but {}", if *.found == 1 { "" } else { "s" }, arity_text(*.least, *.most))]
    IntrinsicArity {
        /// The intrinsic.
        name: CompactString,
        /// Arguments at this use.
        found: usize,
        /// The highest argument the entry's partials read.
        least: usize,
        /// `nr_arguments` of the catalogue entry.
        most: usize,
    },
    /// A CFG without exactly one entry and one exit.
    #[error("control flow graph has {entries} Entry and {exits} Exit vertices; exactly one of each is required")]
    EntryExitCount {
        /// Number of `Entry` vertices.
        entries: usize,
        /// Number of `Exit` vertices.
        exits: usize,
    },
    /// A control flow graph that breaks one of the structural rules of
    /// `docs/cfg-rules.md` (successors, condition values, Entry and Exit
    /// edges, loops, reachability).
    #[error("{at}: {rule} (docs/cfg-rules.md)")]
    ControlFlow {
        /// The vertex or edge: ``control flow vertex `3` (BasicBlock)``.
        at: String,
        /// The rule it breaks.
        rule: String,
    },
    /// A symbol whose number of `DimensionBounds` is neither zero (a shape
    /// known at run time) nor the rank of its shape.
    #[error("shape `{shape}` has rank {rank} but {bounds} DimensionBounds; give none (a shape known at run time) or one per dimension")]
    ShapeBounds {
        /// The `shape` attribute.
        shape: String,
        /// Its rank.
        rank: usize,
        /// The number of `DimensionBounds`.
        bounds: usize,
    },
}

/// What a catalogue entry allows, for [`ErrorKind::IntrinsicArity`].
fn arity_text(least: usize, most: usize) -> String {
    if least == most {
        format!("its inlinable catalogue entry takes {most} (nr_arguments)")
    } else {
        format!(
            "its inlinable catalogue entry takes {least} to {most} (nr_arguments is {most}; its partials read argument {least})"
        )
    }
}

/// One error with its location.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelError {
    /// The file, when reading from a file.
    pub file: Option<Arc<str>>,
    /// 1-based line of the element (0 when the element was not read from a
    /// file).
    pub line: u32,
    /// 1-based column of the element.
    pub column: u32,
    /// The local name of the offending element.
    pub element: CompactString,
    /// What is wrong.
    pub kind: ErrorKind,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.as_deref().unwrap_or("<input>");
        if self.line > 0 {
            write!(f, "{file}:{}:{}: ", self.line, self.column)?;
        } else {
            write!(f, "{file}: ")?;
        }
        if !self.element.is_empty() {
            write!(f, "element `{}`: ", self.element)?;
        }
        write!(f, "{}", self.kind)
    }
}

impl std::error::Error for ModelError {}

/// All errors found in one document.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelErrors(pub Vec<ModelError>);

impl ModelErrors {
    /// The individual errors, in document order.
    pub fn errors(&self) -> &[ModelError] {
        &self.0
    }

    /// The error kinds, for tests that match on variants.
    pub fn kinds(&self) -> impl Iterator<Item = &ErrorKind> {
        self.0.iter().map(|e| &e.kind)
    }
}

impl fmt::Display for ModelErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ModelErrors {}

impl From<ModelError> for ModelErrors {
    fn from(e: ModelError) -> Self {
        ModelErrors(vec![e])
    }
}
