//! The XAIF intermediate representation.
//!
//! A [`Program`] is one `xaif:CallGraph` document. Entities that other code
//! refers to live in typed arenas on the program (scopes, symbols, routines,
//! control flow graphs, CFG vertices and edges, statements); small trees that
//! nothing outside their owner names (expression graphs, variable reference
//! graphs, side-effect lists) are stored inline in their owner.
//!
//! The representation is lossless: every element keeps its attributes
//! verbatim and in order ([`Attrs`]), and containers whose children may
//! interleave in XAIF (scope hierarchy, call graph, CFG bodies, expression
//! graphs) keep the document order of their children. Writing a program back
//! therefore reproduces the input infoset.
//!
//! Cross references (edge endpoints, `symbol_id`/`scope_id`, `alias`,
//! `du_ud`) are kept as the XAIF ids they are; the validation gate
//! ([`crate::validate`]) proves they resolve, and [`crate::index`] builds the
//! handle-level lookups that passes use after the gate.

use crate::arena::{Arena, Id};
use crate::attrs::Attrs;

/// Handle of a scope.
pub type ScopeId = Id<Scope>;
/// Handle of a symbol.
pub type SymbolId = Id<Symbol>;
/// Handle of a call graph vertex (a routine).
pub type RoutineId = Id<Routine>;
/// Handle of one control flow graph body.
pub type CfgId = Id<Cfg>;
/// Handle of a control flow graph vertex.
pub type VertexId = Id<CfgVertex>;
/// Handle of a control flow graph edge.
pub type EdgeId = Id<CfgEdge>;
/// Handle of a statement.
pub type StmtId = Id<Stmt>;

/// One XAIF program (`xaif:CallGraph` document) with all its arenas.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    /// Attributes of the `CallGraph` element, including namespace
    /// declarations and `xsi:schemaLocation`.
    pub attrs: Attrs,
    /// The scope tree.
    pub scope_hierarchy: ScopeHierarchy,
    /// `AliasSetMap`, absent only in malformed inputs.
    pub alias_map: Option<AliasSetMap>,
    /// `DUUDSetMap`.
    pub duud_map: Option<StmtIdSetMap>,
    /// `DOSetMap`.
    pub do_map: Option<StmtIdSetMap>,
    /// Call graph vertices and edges in document order.
    pub items: Vec<CallGraphItem>,
    /// `CallGraphEdge` attributes, addressed by [`CallGraphItem::Edge`].
    pub call_edges: Vec<Attrs>,
    /// All scopes.
    pub scopes: Arena<Scope>,
    /// All symbols of all symbol tables.
    pub symbols: Arena<Symbol>,
    /// All call graph vertices.
    pub routines: Arena<Routine>,
    /// All control flow graph bodies (of `ControlFlowGraph`s and of each
    /// `Replacement`).
    pub cfgs: Arena<Cfg>,
    /// All control flow graph vertices.
    pub vertices: Arena<CfgVertex>,
    /// All control flow graph edges.
    pub edges: Arena<CfgEdge>,
    /// All statements, including loop `Initialization`s and `Update`s.
    pub stmts: Arena<Stmt>,
}

/// A child of `CallGraph` after the maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallGraphItem {
    /// A `ControlFlowGraph` or `ReplacementList`.
    Routine(RoutineId),
    /// A `CallGraphEdge`, by its index in [`Program::call_edges`].
    Edge(usize),
}

/// `ScopeHierarchy`: scopes and scope edges in document order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScopeHierarchy {
    /// Attributes of the `ScopeHierarchy` element.
    pub attrs: Attrs,
    /// Children in document order.
    pub items: Vec<ScopeItem>,
}

/// A child of `ScopeHierarchy`.
#[derive(Clone, Debug, PartialEq)]
pub enum ScopeItem {
    /// A `Scope`.
    Scope(ScopeId),
    /// A `ScopeEdge` (child scope → parent scope).
    Edge(Attrs),
}

/// A `Scope` with its symbol tables.
#[derive(Clone, Debug, PartialEq)]
pub struct Scope {
    /// Attributes (`vertex_id`, `annotation`, …).
    pub attrs: Attrs,
    /// The `SymbolTable` children (XAIF allows several; front ends write one).
    pub tables: Vec<SymbolTable>,
}

/// A `SymbolTable`.
#[derive(Clone, Debug, PartialEq)]
pub struct SymbolTable {
    /// Attributes of the `SymbolTable` element.
    pub attrs: Attrs,
    /// The table's symbols in document order.
    pub symbols: Vec<SymbolId>,
}

/// A `Symbol`.
#[derive(Clone, Debug, PartialEq)]
pub struct Symbol {
    /// Attributes (`symbol_id`, `kind`, `type`, `shape`, `active`, …).
    pub attrs: Attrs,
    /// `DimensionBounds` children, last dimension first (as XAIF lists them).
    pub bounds: Vec<Attrs>,
    /// The scope whose table holds the symbol.
    pub scope: ScopeId,
}

/// `AliasSetMap`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AliasSetMap {
    /// Attributes of the map element.
    pub attrs: Attrs,
    /// The sets in document order.
    pub sets: Vec<AliasSet>,
}

/// One `AliasSet` with its virtual address ranges.
#[derive(Clone, Debug, PartialEq)]
pub struct AliasSet {
    /// Attributes (`key`).
    pub attrs: Attrs,
    /// `AliasRange` children.
    pub ranges: Vec<Attrs>,
}

/// `DUUDSetMap` or `DOSetMap`: keyed sets of statement ids.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StmtIdSetMap {
    /// Attributes of the map element.
    pub attrs: Attrs,
    /// The sets in document order.
    pub sets: Vec<StmtIdSet>,
}

/// One `StmtIdSet`.
#[derive(Clone, Debug, PartialEq)]
pub struct StmtIdSet {
    /// Attributes (`key`).
    pub attrs: Attrs,
    /// `StatementId` children (`idRef`; an empty `idRef` stands for "outside
    /// this routine").
    pub ids: Vec<Attrs>,
}

/// A call graph vertex: a routine as a plain `ControlFlowGraph` or, in adjoint
/// output, as a `ReplacementList` of numbered `Replacement` graphs.
#[derive(Clone, Debug, PartialEq)]
pub struct Routine {
    /// Attributes (`vertex_id`, `symbol_id`, `scope_id`,
    /// `controlflowgraph_scope_id`, `template_name`, …).
    pub attrs: Attrs,
    /// The `ArgumentList`, if present.
    pub arguments: Option<ArgumentList>,
    /// `ModLocal`, `Mod`, `ReadLocal`, `Read`, `OnEntry`, in document order.
    pub side_effects: Vec<SideEffectList>,
    /// The body.
    pub body: RoutineBody,
}

/// How a routine's code is given.
#[derive(Clone, Debug, PartialEq)]
pub enum RoutineBody {
    /// A `ControlFlowGraph` element: one body.
    Graph(CfgId),
    /// A `ReplacementList` element: numbered bodies for a template.
    Replacements(Vec<Replacement>),
}

/// One `Replacement` of a `ReplacementList`.
#[derive(Clone, Debug, PartialEq)]
pub struct Replacement {
    /// Attributes (`placeholder`, `structured`).
    pub attrs: Attrs,
    /// The replacement's control flow graph.
    pub cfg: CfgId,
}

/// An `ArgumentList`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArgumentList {
    /// Attributes of the list element.
    pub attrs: Attrs,
    /// `ArgumentSymbolReference` children (`position`, `scope_id`,
    /// `symbol_id`, `intent`).
    pub args: Vec<Attrs>,
}

/// Which side-effect list an element is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SideEffectKind {
    /// `ModLocal`: variables the routine itself modifies.
    ModLocal,
    /// `Mod`: variables the routine or its callees modify.
    Mod,
    /// `ReadLocal`: variables the routine itself reads.
    ReadLocal,
    /// `Read`: variables the routine or its callees read.
    Read,
    /// `OnEntry`: values needed on entry.
    OnEntry,
}

impl SideEffectKind {
    /// All kinds, in schema order.
    pub const ALL: [SideEffectKind; 5] = [
        SideEffectKind::ModLocal,
        SideEffectKind::Mod,
        SideEffectKind::ReadLocal,
        SideEffectKind::Read,
        SideEffectKind::OnEntry,
    ];

    /// The XAIF element name.
    pub fn element(self) -> &'static str {
        match self {
            SideEffectKind::ModLocal => "ModLocal",
            SideEffectKind::Mod => "Mod",
            SideEffectKind::ReadLocal => "ReadLocal",
            SideEffectKind::Read => "Read",
            SideEffectKind::OnEntry => "OnEntry",
        }
    }

    /// The kind named by an XAIF element name.
    pub fn from_element(name: &str) -> Option<Self> {
        SideEffectKind::ALL
            .into_iter()
            .find(|k| k.element() == name)
    }
}

/// One side-effect list of a routine.
#[derive(Clone, Debug, PartialEq)]
pub struct SideEffectList {
    /// Which list.
    pub kind: SideEffectKind,
    /// Attributes of the list element.
    pub attrs: Attrs,
    /// `SideEffectReference` children.
    pub refs: Vec<VarRef>,
}

/// One control flow graph body: vertices and edges in document order.
#[derive(Clone, Debug, PartialEq)]
pub struct Cfg {
    /// The routine the body belongs to.
    pub routine: RoutineId,
    /// Children in document order.
    pub items: Vec<CfgItem>,
}

/// A child of a CFG body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CfgItem {
    /// A control flow vertex.
    Vertex(VertexId),
    /// A `ControlFlowEdge`.
    Edge(EdgeId),
}

impl Cfg {
    /// The vertices in document order.
    pub fn vertex_ids(&self) -> impl Iterator<Item = VertexId> + '_ {
        self.items.iter().filter_map(|i| match i {
            CfgItem::Vertex(v) => Some(*v),
            CfgItem::Edge(_) => None,
        })
    }

    /// The edges in document order.
    pub fn edge_ids(&self) -> impl Iterator<Item = EdgeId> + '_ {
        self.items.iter().filter_map(|i| match i {
            CfgItem::Edge(e) => Some(*e),
            CfgItem::Vertex(_) => None,
        })
    }
}

/// A control flow graph vertex.
#[derive(Clone, Debug, PartialEq)]
pub struct CfgVertex {
    /// Attributes (`vertex_id`, `annotation`, `scope_id` of a block,
    /// `reversal` of a loop, `lineNumber`, …).
    pub attrs: Attrs,
    /// The body that holds this vertex.
    pub cfg: CfgId,
    /// What kind of vertex it is, with its contents.
    pub kind: VertexKind,
}

/// The kinds of CFG vertices of XAIF, with their contents.
#[derive(Clone, Debug, PartialEq)]
pub enum VertexKind {
    /// `Entry`.
    Entry,
    /// `Exit`.
    Exit,
    /// `BasicBlock` with its statements.
    BasicBlock(Vec<StmtId>),
    /// `Branch` (two-way or select case).
    Branch(Option<Expr>),
    /// `If`.
    If(Option<Expr>),
    /// `ForLoop` with `Initialization`, `Condition`, `Update`.
    ForLoop {
        /// The `Initialization` assignment.
        init: Option<StmtId>,
        /// The loop condition.
        condition: Option<Expr>,
        /// The `Update` assignment.
        update: Option<StmtId>,
    },
    /// `PreLoop` (a while loop).
    PreLoop(Option<Expr>),
    /// `PostLoop` (a repeat-until loop).
    PostLoop(Option<Expr>),
    /// `EndBranch`.
    EndBranch,
    /// `EndLoop`.
    EndLoop,
    /// `Goto`.
    Goto,
    /// `Label`.
    Label,
}

impl VertexKind {
    /// The XAIF element name.
    pub fn element(&self) -> &'static str {
        match self {
            VertexKind::Entry => "Entry",
            VertexKind::Exit => "Exit",
            VertexKind::BasicBlock(_) => "BasicBlock",
            VertexKind::Branch(_) => "Branch",
            VertexKind::If(_) => "If",
            VertexKind::ForLoop { .. } => "ForLoop",
            VertexKind::PreLoop(_) => "PreLoop",
            VertexKind::PostLoop(_) => "PostLoop",
            VertexKind::EndBranch => "EndBranch",
            VertexKind::EndLoop => "EndLoop",
            VertexKind::Goto => "Goto",
            VertexKind::Label => "Label",
        }
    }

    /// The condition of a branching or looping vertex.
    pub fn condition(&self) -> Option<&Expr> {
        match self {
            VertexKind::Branch(c)
            | VertexKind::If(c)
            | VertexKind::PreLoop(c)
            | VertexKind::PostLoop(c) => c.as_ref(),
            VertexKind::ForLoop { condition, .. } => condition.as_ref(),
            _ => None,
        }
    }
}

/// A `ControlFlowEdge`.
#[derive(Clone, Debug, PartialEq)]
pub struct CfgEdge {
    /// Attributes (`edge_id`, `source`, `target`, `has_condition_value`,
    /// `condition_value`).
    pub attrs: Attrs,
    /// The body that holds this edge.
    pub cfg: CfgId,
}

impl CfgEdge {
    /// The branch value this edge is taken for, if it has one.
    pub fn condition_value(&self) -> Option<i64> {
        if self.attrs.flag("has_condition_value", false) {
            Some(self.attrs.int("condition_value").unwrap_or(1))
        } else {
            None
        }
    }
}

/// A statement of a basic block, or a loop's initialization or update.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// Attributes (`statement_id`, `lineNumber`, `do_chain`, …).
    pub attrs: Attrs,
    /// The statement proper.
    pub kind: StmtKind,
}

/// The statement kinds of XAIF (inputs and transformation outputs).
#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `Assignment` (also `Initialization` and `Update` of a `ForLoop`).
    Assignment(Assignment),
    /// `SubroutineCall`.
    SubroutineCall(Vec<CallArg>),
    /// `Marker`: a statement the front end did not translate.
    Marker,
    /// `InlinableSubroutineCall` (output only).
    InlinableCall(Vec<InlinableArg>),
    /// `DerivativePropagator` (output only).
    DerivativePropagator(Vec<PropEntry>),
}

impl StmtKind {
    /// The XAIF element name when the statement sits in a basic block.
    pub fn element(&self) -> &'static str {
        match self {
            StmtKind::Assignment(_) => "Assignment",
            StmtKind::SubroutineCall(_) => "SubroutineCall",
            StmtKind::Marker => "Marker",
            StmtKind::InlinableCall(_) => "InlinableSubroutineCall",
            StmtKind::DerivativePropagator(_) => "DerivativePropagator",
        }
    }
}

/// An assignment: a variable reference on the left, an expression on the
/// right.
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    /// `AssignmentLHS`.
    pub lhs: VarRef,
    /// `AssignmentRHS`.
    pub rhs: Expr,
}

/// An `Argument` of a `SubroutineCall` or `InlinableSubroutineCall`.
#[derive(Clone, Debug, PartialEq)]
pub struct CallArg {
    /// Attributes (`position`, …).
    pub attrs: Attrs,
    /// The actual argument.
    pub value: ArgValue,
}

/// What an argument passes.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// A `VariableReference` (passed by reference).
    Variable(VarRef),
    /// A `Constant` (its attributes).
    Constant(Attrs),
}

/// An argument of an `InlinableSubroutineCall`.
#[derive(Clone, Debug, PartialEq)]
pub enum InlinableArg {
    /// `Argument`, as in a subroutine call.
    Argument(CallArg),
    /// `ArgumentSubstitute`: a variable reference with a `position`.
    Substitute(VarRef),
}

impl InlinableArg {
    /// The argument's `position` attribute.
    pub fn position(&self) -> Option<i64> {
        match self {
            InlinableArg::Argument(a) => a.attrs.int("position"),
            InlinableArg::Substitute(v) => v.attrs.int("position"),
        }
    }
}

/// One entry of a `DerivativePropagator`.
#[derive(Clone, Debug, PartialEq)]
pub struct PropEntry {
    /// Attributes of the entry element.
    pub attrs: Attrs,
    /// The entry proper.
    pub kind: PropKind,
}

/// The derivative propagator entries.
#[derive(Clone, Debug, PartialEq)]
pub enum PropKind {
    /// `SetDeriv(Tgt, Src)`: tgt.d := src.d.
    SetDeriv {
        /// `Tgt`.
        tgt: VarRef,
        /// `Src`.
        src: VarRef,
    },
    /// `SetNegDeriv(Tgt, Src)`: tgt.d := -src.d.
    SetNegDeriv {
        /// `Tgt`.
        tgt: VarRef,
        /// `Src`.
        src: VarRef,
    },
    /// `IncDeriv(Tgt, Src)`: tgt.d += src.d.
    IncDeriv {
        /// `Tgt`.
        tgt: VarRef,
        /// `Src`.
        src: VarRef,
    },
    /// `DecDeriv(Tgt, Src)`: tgt.d -= src.d.
    DecDeriv {
        /// `Tgt`.
        tgt: VarRef,
        /// `Src`.
        src: VarRef,
    },
    /// `Sax(AX…, Y)`: y.d := Σ a·x.d.
    Sax {
        /// The `AX` terms.
        terms: Vec<AxTerm>,
        /// `Y`.
        y: VarRef,
    },
    /// `Saxpy(AX…, Y)`: y.d += Σ a·x.d.
    Saxpy {
        /// The `AX` terms.
        terms: Vec<AxTerm>,
        /// `Y`.
        y: VarRef,
    },
    /// `ZeroDeriv`: x.d := 0.
    ZeroDeriv(VarRef),
}

impl PropKind {
    /// The XAIF element name.
    pub fn element(&self) -> &'static str {
        match self {
            PropKind::SetDeriv { .. } => "SetDeriv",
            PropKind::SetNegDeriv { .. } => "SetNegDeriv",
            PropKind::IncDeriv { .. } => "IncDeriv",
            PropKind::DecDeriv { .. } => "DecDeriv",
            PropKind::Sax { .. } => "Sax",
            PropKind::Saxpy { .. } => "Saxpy",
            PropKind::ZeroDeriv(_) => "ZeroDeriv",
        }
    }
}

/// One `AX` term of a `Sax` or `Saxpy`.
#[derive(Clone, Debug, PartialEq)]
pub struct AxTerm {
    /// Attributes of the `AX` element.
    pub attrs: Attrs,
    /// `A`: the factor, an expression.
    pub a: Expr,
    /// `X`: the variable whose derivative is scaled.
    pub x: VarRef,
}

/// A variable reference: a small graph of a `SymbolReference` followed by
/// `ArrayElementReference`s, joined by `VariableReferenceEdge`s.
///
/// The same structure serves `AssignmentLHS`, `SideEffectReference`,
/// propagator operands (`Tgt`, `Src`, `X`, `Y`, `ZeroDeriv`), argument
/// references and `ArgumentSubstitute`; `attrs` are the attributes of that
/// element (`active`, `alias`, `du_ud`, `deriv`, …).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VarRef {
    /// Attributes of the referencing element.
    pub attrs: Attrs,
    /// The reference graph.
    pub graph: RefGraph,
}

/// The vertices and edges of a variable reference.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RefGraph {
    /// `SymbolReference` and `ArrayElementReference` vertices in order.
    pub vertices: Vec<RefVertex>,
    /// `VariableReferenceEdge` attributes (`edge_id`, `source`, `target`).
    pub edges: Vec<Attrs>,
}

impl RefGraph {
    /// The symbol reference of this variable reference (the graph's first
    /// `SymbolReference`).
    pub fn symbol_ref(&self) -> Option<&Attrs> {
        self.vertices.iter().find_map(|v| match &v.kind {
            RefVertexKind::Symbol { .. } => Some(&v.attrs),
            RefVertexKind::ArrayElement { .. } => None,
        })
    }
}

/// A vertex of a variable reference graph.
#[derive(Clone, Debug, PartialEq)]
pub struct RefVertex {
    /// Attributes (`vertex_id`, and `symbol_id`, `scope_id` for a symbol).
    pub attrs: Attrs,
    /// The vertex proper.
    pub kind: RefVertexKind,
}

/// Kinds of variable reference vertices.
#[derive(Clone, Debug, PartialEq)]
pub enum RefVertexKind {
    /// `SymbolReference` with its `SymbolReferenceProperty` children.
    Symbol {
        /// `SymbolReferenceProperty` attributes.
        properties: Vec<Attrs>,
    },
    /// `ArrayElementReference` with one triplet per dimension, in source
    /// order.
    ArrayElement {
        /// `IndexTriplet` children.
        triplets: Vec<IndexTriplet>,
    },
}

/// One `IndexTriplet`: an index, or a section `index:bound:stride`.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexTriplet {
    /// Attributes of the triplet element.
    pub attrs: Attrs,
    /// `Index`.
    pub index: Option<Expr>,
    /// `Bound`.
    pub bound: Option<Expr>,
    /// `Stride`.
    pub stride: Option<Expr>,
}

/// An expression graph (`AssignmentRHS`, `Condition`, `Index`, `Bound`,
/// `Stride`, `A`, and the catalogue's `Function` and `Partial`).
///
/// Edges point from an argument to the operation that uses it, with the
/// argument number as `position`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Expr {
    /// Attributes of the container element (`partial_id` of a `Partial`, …).
    pub attrs: Attrs,
    /// The vertices.
    pub vertices: Vec<ExprVertex>,
    /// The edges.
    pub edges: Vec<ExprEdge>,
    /// Document order of the children when it is not "all vertices, then all
    /// edges": `true` marks an edge. `None` means that canonical order.
    pub layout: Option<Vec<bool>>,
}

/// A vertex of an expression graph.
#[derive(Clone, Debug, PartialEq)]
pub struct ExprVertex {
    /// Attributes (`vertex_id`, `name`, `value`, `type`, `active`, …).
    pub attrs: Attrs,
    /// The vertex proper.
    pub kind: ExprVertexKind,
}

/// Kinds of expression vertices.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprVertexKind {
    /// `VariableReference`.
    VariableReference(RefGraph),
    /// `Constant`.
    Constant,
    /// `Intrinsic`.
    Intrinsic,
    /// `FunctionCall` with its `Argument` references.
    FunctionCall(Vec<VarRef>),
    /// `BooleanOperation`.
    BooleanOperation,
    /// `ArgumentReference` (only in intrinsic catalogues).
    ArgumentReference,
}

impl ExprVertexKind {
    /// The XAIF element name.
    pub fn element(&self) -> &'static str {
        match self {
            ExprVertexKind::VariableReference(_) => "VariableReference",
            ExprVertexKind::Constant => "Constant",
            ExprVertexKind::Intrinsic => "Intrinsic",
            ExprVertexKind::FunctionCall(_) => "FunctionCall",
            ExprVertexKind::BooleanOperation => "BooleanOperation",
            ExprVertexKind::ArgumentReference => "ArgumentReference",
        }
    }
}

/// An `ExpressionEdge`.
#[derive(Clone, Debug, PartialEq)]
pub struct ExprEdge {
    /// Attributes (`edge_id`, `source`, `target`, `position`).
    pub attrs: Attrs,
}
