//! Lowering a validated XAIF program into an executable form.
//!
//! Compiling once resolves every symbol reference to a storage location
//! (frame slot, unified global, or a host routine's slot), every callee to a
//! routine index, every intrinsic and inlinable call to an operation, and
//! every control flow edge to a vertex index, so execution never looks up a
//! string. Constructs that cannot be executed compile to a node that refuses
//! with a precise error when (and only when) it is reached, so a program with
//! an unsupported corner still runs where it never goes there.

use std::rc::Rc;

use rustc_hash::FxHashMap;
use xaif_model::{
    base_name, fortran_routine_name, ArgValue, Attrs, CfgGraph, CfgId, Expr, ExprGraph,
    ExprVertexKind, InlinableArg, Program, PropKind, RefGraph, RefVertexKind, RoutineBody, ScopeId,
    ScopeItem, SourceMap, Span, StmtId, StmtKind, SymbolId, SymbolIndex, SymbolType, VarRef,
    VertexKind,
};

use crate::error::ErrorKind;
use crate::kind::RestoreOrder;
use crate::value::{Scalar, Ty};

/// Declaration of a variable: what storage it needs.
#[derive(Clone, Debug)]
pub struct VarDecl {
    /// The XAIF `symbol_id`.
    pub name: String,
    /// Element type.
    pub ty: Ty,
    /// Rank from the symbol's shape.
    pub rank: usize,
    /// Declared bounds, first dimension first; `None` for assumed or
    /// deferred shape (taken from the actual, or set on first write).
    pub bounds: Option<Vec<(i64, i64)>>,
    /// A passive single-precision real: stores round to `f32`.
    pub single: bool,
    /// The symbol is active.
    pub active: bool,
    /// The type is one the interpreter cannot compute with (complex,
    /// opaque); any use is refused.
    pub unsupported: Option<&'static str>,
    /// Line of the declaration (the `Symbol` element) in the XAIF file.
    pub line: u32,
}

/// Where a variable lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loc {
    /// A slot of the executing routine's frame.
    Local(u32),
    /// A unified global.
    Global(u32),
    /// A slot of the nearest active frame of a host routine (host
    /// association of internal procedures).
    Host {
        /// The host routine.
        routine: u32,
        /// Its slot.
        slot: u32,
    },
}

/// A compiled variable reference.
#[derive(Clone, Debug)]
pub struct CRef {
    /// Storage.
    pub loc: Loc,
    /// Subscripts, source order; empty for a whole variable.
    pub subs: Vec<CSub>,
    /// Whether the reference denotes the derivative part (`deriv="1"`).
    pub deriv: bool,
    /// The symbol's id, for messages.
    pub name: Rc<str>,
}

/// One subscript.
#[derive(Clone, Debug)]
pub enum CSub {
    /// A single index.
    Index(CExpr),
    /// A section `lo:hi:stride` (missing parts default to the bounds and 1).
    Range(Option<CExpr>, Option<CExpr>, Option<CExpr>),
}

/// Intrinsic and boolean operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Neg,
    Pow,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Exp,
    Log,
    Log10,
    Sqrt,
    Abs,
    Sign,
    Mod,
    Min,
    Max,
    Int,
    Nint,
    Real,
    MinVal,
    MaxVal,
    Sum,
    MaxLoc,
    MinLoc,
    Transpose,
    Reshape,
    Shape,
    Trim,
    /// `cmplx(re, im)`.
    Cmplx,
    /// `imag(z)`: the imaginary part.
    Imag,
    /// `transfer(source, mold)`: the bits of `source` read as `mold`'s type.
    Transfer,
    /// `scan(string, set)`: position of the first character of `string`
    /// in `set`, 0 if none.
    Scan,
    /// `ichar(c)`: the character code.
    Ichar,
    /// `len(s)` of a string value (of a variable it is an inquiry).
    Len,
    StrEq,
    StrNe,
    StrGe,
    StrLe,
    StrLt,
    And,
    Or,
    Not,
    Xor,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Inquiry intrinsics, which look at a variable's storage rather than its
/// value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inquiry {
    /// `size(a [, dim])`.
    Size,
    /// `lbound(a [, dim])`.
    Lbound,
    /// `ubound(a [, dim])`.
    Ubound,
    /// `present(a)`.
    Present,
    /// `allocated(a)`.
    Allocated,
    /// `len(s)`.
    Len,
}

/// A compiled expression: the vertices of its graph in evaluation order,
/// each operation taking its operands from earlier nodes; the last node is
/// the result.
///
/// XAIF expressions are graphs, written flat: a chain may be 10^5 deep and
/// a vertex may feed several operations. Kept as a graph, compiling and
/// evaluating are loops over the nodes (no native recursion in the depth)
/// and a shared vertex is evaluated once (no blow-up of a DAG into a tree).
#[derive(Clone, Debug)]
pub struct CExpr {
    /// The nodes, operands before the operations that use them.
    pub nodes: Vec<ENode>,
}

/// One operand of an operation node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    /// Index of the node that computes it.
    pub node: u32,
    /// Whether this is the node's last use in evaluation order: its value
    /// is moved rather than copied.
    pub last: bool,
}

/// One node of a compiled expression.
#[derive(Clone, Debug)]
pub enum ENode {
    /// A constant.
    Const(Scalar),
    /// A variable's value (or derivative part).
    Ref(Box<CRef>),
    /// An operation on the values of earlier nodes.
    Op(Op, Vec<Operand>),
    /// A tracing version of an intrinsic (`oad_tan_scal`): the intrinsic,
    /// and for `tan` a `<Tan sd=".."/>` trace record.
    Traced(Op, Vec<Operand>),
    /// An inquiry on a variable, with further value operands.
    Inquiry(Inquiry, Box<CRef>, Vec<Operand>),
    /// Something that cannot be evaluated.
    Refuse(ErrorKind),
}

impl CExpr {
    /// An expression of one node.
    pub fn leaf(node: ENode) -> Self {
        CExpr { nodes: vec![node] }
    }

    /// An expression that refuses with `kind` when evaluated.
    pub fn refuse(kind: ErrorKind) -> Self {
        CExpr::leaf(ENode::Refuse(kind))
    }
}

/// An actual argument.
#[derive(Clone, Debug)]
pub enum CArg {
    /// A variable, passed by reference.
    Ref(CRef),
    /// A constant, passed as a temporary.
    Const(Scalar),
}

/// The inlinable subroutines of tangent and adjoint output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InlineOp {
    /// `push_s0/s1/s2`, `push_i_*`, `push_b`, `push_s`, `apush`, with the
    /// rank its name says (`_s<rank>`), which the argument must have: the
    /// run-time's push of that name takes only such arguments.
    Push(Ty, Option<u8>),
    /// `pop_*`, `apop`, with the rank of its name.
    Pop(Ty, Option<u8>),
    /// `Saxpy(a, x, y)`: y.d += a·x.d.
    Saxpy,
    /// `IncDeriv(x, y)`: y.d += x.d.
    IncDeriv,
    /// `DecDeriv(x, y)`: y.d -= x.d.
    DecDeriv,
    /// `ZeroDeriv(x)`, tangent `zeroderiv(x)`: x.d := 0.
    ZeroDeriv,
    /// Tangent `setderiv(tgt, src)`: tgt.d := src.d (target first).
    SetDeriv,
    /// Tangent `setnegderiv(tgt, src)`: tgt.d := -src.d.
    SetNegDeriv,
    /// Tangent `incderiv(tgt, src)`: tgt.d += src.d (target first).
    IncDerivTarget,
    /// Tangent `decderiv(tgt, src)`: tgt.d -= src.d (target first).
    DecDerivTarget,
    /// Tangent `sax(a, x, y)`: y.d := a·x.d.
    Sax,
    /// `cp_arg_store_*` / `cp_res_store_*`.
    CpStore {
        /// Element type of the checkpoint stack.
        ty: Ty,
        /// `_d`: the derivative part.
        deriv: bool,
    },
    /// `cp_arg_restore_*` / `cp_res_restore_*`.
    CpRestore {
        /// Element type of the checkpoint stack.
        ty: Ty,
        /// `_d`: the derivative part.
        deriv: bool,
    },
    /// `oad_convert(to, from)`: copy the value part.
    Convert,
    /// `oad_AllocateMatching(a, b)`.
    AllocateMatching,
    /// `oad_AllocateShape(a, n1, …)`.
    AllocateShape,
    /// `oad_ShapeTest(a, b)`: only checks shapes.
    ShapeTest,
    /// `countmult(n)` (`true`) and `countadd(n)` of `-C`: add `n` to the
    /// run's operation counters.
    Count(bool),
    /// An `oad_trace_*` call of trace output: writes one record.
    Trace(TraceRecord),
    /// `oad_revolve_begin(steps, snapshots, line)`: the taping sweep of a
    /// checkpointed loop begins (`docs/checkpointing.md`).
    RevolveBegin,
    /// `oad_revolve_resume(line)`: its adjoint sweep begins.
    RevolveResume,
    /// `oad_revolve_next(action, count)`: the schedule's next action.
    RevolveNext,
    /// `oad_revolve_begin_online(snapshots, line)`: the taping sweep of a
    /// loop checkpointed online begins; the loop runs itself.
    RevolveBeginOnline,
    /// `oad_revolve_begin_fixed_point(tolerance, maxiter, line)`: the
    /// taping sweep of a fixed-point loop begins; the loop runs itself.
    RevolveBeginFixedPoint,
    /// `oad_revolve_begin_independent(line)`: the taping sweep of a loop of
    /// independent iterations begins; the loop runs itself.
    RevolveBeginIndependent,
    /// `oad_revolve_iteration(action)`: one more iteration of a loop that
    /// runs itself; `action` 1 to store the state first, 0 to run it.
    RevolveIteration,
    /// `oad_revolve_end(how)`: a loop that runs itself ended (`how` 1 by an
    /// exit, 0 through its header); its taping sweep pauses.
    RevolveEnd,
    /// `oad_revolve_measure(x)`: the adjoint of state variable `x` into the
    /// measure of a fixed-point loop's convergence.
    RevolveMeasure,
    /// `oad_revolve_check(x)`: the values of state variable `x` into the
    /// check that a fixed-point loop reached its fixed point.
    RevolveCheck,
    /// `oad_revolve_store(x)`: `x` into the snapshot being stored, as the
    /// type `x` has (`None`, the generic call xaifb emits), or as the type
    /// the name gives (`oad_revolve_store_<type>_<shape>[_a]`, the calls of
    /// earlier xaifb outputs).
    RevolveStore(Option<Ty>),
    /// `oad_revolve_restore(x)`: `x` from the snapshot being restored
    /// (variables in the reverse order of the store); the type as for
    /// [`InlineOp::RevolveStore`].
    RevolveRestore(Option<Ty>),
}

/// The records of OpenAD's trace run-time support (`OAD_trace.f90`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceRecord {
    /// `oad_trace_call(name, line)`: `<Call name=".." line="..">`.
    Call,
    /// `</Call>`.
    ECall,
    /// `oad_trace_arg(name)`: `<Arg name="..">`.
    Arg,
    /// `</Arg>`.
    EArg,
    /// `oad_trace_index(i)`: `<Index val=".."/>`.
    Index,
    /// `oad_trace_loop(line)`: `<Loop line="..">`.
    Loop,
    /// `</Loop>`.
    ELoop,
    /// `oad_trace_branch(line)`: `<Branch line="..">`.
    Branch,
    /// `</Branch>`.
    EBranch,
    /// `<Initialization>`.
    Initialization,
    /// `</Initialization>`.
    EInitialization,
    /// `<Condition>`.
    Condition,
    /// `</Condition>`.
    ECondition,
    /// `<Update>`.
    Update,
    /// `</Update>`.
    EUpdate,
    /// `oad_trace_CFval(i)`: `<Cfval val=".."/>`.
    CfVal,
}

impl TraceRecord {
    /// The record of `oad_trace_<name>`.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "call" => TraceRecord::Call,
            "ecall" => TraceRecord::ECall,
            "arg" => TraceRecord::Arg,
            "earg" => TraceRecord::EArg,
            "index" => TraceRecord::Index,
            "loop" => TraceRecord::Loop,
            "eloop" => TraceRecord::ELoop,
            "branch" => TraceRecord::Branch,
            "ebranch" => TraceRecord::EBranch,
            "initialization" => TraceRecord::Initialization,
            "einitialization" => TraceRecord::EInitialization,
            "condition" => TraceRecord::Condition,
            "econdition" => TraceRecord::ECondition,
            "update" => TraceRecord::Update,
            "eupdate" => TraceRecord::EUpdate,
            "cfval" => TraceRecord::CfVal,
            _ => return None,
        })
    }
}

/// A derivative propagator entry.
#[derive(Clone, Debug)]
pub enum CProp {
    /// tgt.d := src.d.
    Set(CRef, CRef),
    /// tgt.d := -src.d.
    SetNeg(CRef, CRef),
    /// tgt.d += src.d.
    Inc(CRef, CRef),
    /// tgt.d -= src.d.
    Dec(CRef, CRef),
    /// y.d := Σ a·x.d (accumulate = false) or y.d += Σ a·x.d (true).
    Sax {
        /// The (a, x) terms.
        terms: Vec<(CExpr, CRef)>,
        /// The target.
        y: CRef,
        /// Saxpy rather than Sax.
        accumulate: bool,
    },
    /// x.d := 0.
    Zero(CRef),
}

/// What a statement does.
#[derive(Clone, Debug)]
pub enum SKind {
    /// Assignment.
    Assign {
        /// Target.
        lhs: CRef,
        /// Value.
        rhs: CExpr,
    },
    /// Call of a routine of the program (by index) or of an external one.
    Call {
        /// The routine, or the callee's name when the XAIF has no body.
        target: Result<usize, String>,
        /// Arguments by position (1-based).
        args: Vec<(usize, CArg)>,
    },
    /// An inlinable subroutine call.
    Inline {
        /// The operation.
        op: InlineOp,
        /// Arguments in position order.
        args: Vec<CArg>,
    },
    /// A derivative propagator.
    Prop(Vec<CProp>),
    /// Nothing to do (pragmas, comments, output statements).
    Nop,
    /// Refuse to execute.
    Refuse(ErrorKind),
}

/// A compiled statement.
#[derive(Clone, Debug)]
pub struct CStmt {
    /// What it does.
    pub kind: SKind,
    /// Its line in the XAIF file.
    pub line: u32,
    /// Whether its floating-point operations count as derivative code
    /// (statements created by the transformation) rather than original code.
    pub derivative: bool,
}

/// DO-loop semantics of a `ForLoop`: bounds and step evaluated once.
#[derive(Clone, Debug)]
pub struct DoLoop {
    /// The loop variable.
    pub var: CRef,
    /// The last value (the condition's bound).
    pub hi: CExpr,
    /// The step expression.
    pub step: CExpr,
    /// The update subtracts the step.
    pub negate: bool,
}

/// Kinds of compiled CFG vertices.
#[derive(Clone, Debug)]
pub enum VKind {
    /// Entry.
    Entry,
    /// Exit.
    Exit,
    /// A basic block.
    Block(Vec<CStmt>),
    /// A branch (or `If`) on a logical or integer condition.
    Branch(CExpr),
    /// A `ForLoop`.
    For {
        /// Initialization.
        init: Option<Box<CStmt>>,
        /// Condition (while semantics).
        cond: CExpr,
        /// Update.
        update: Option<Box<CStmt>>,
        /// DO-loop semantics when the condition and update have that form.
        do_loop: Option<Box<DoLoop>>,
    },
    /// A `PreLoop` (while).
    Pre(CExpr),
    /// A `PostLoop` (body first, repeated while the condition holds).
    Post(CExpr),
    /// `EndLoop`.
    EndLoop,
    /// `EndBranch`, `Goto`, `Label`: pass through.
    Pass,
    /// A vertex that cannot be executed.
    Refuse(ErrorKind),
}

/// A compiled CFG vertex.
#[derive(Clone, Debug)]
pub struct CVertex {
    /// What it does.
    pub kind: VKind,
    /// Outgoing edges: branch value (if any) and target vertex index.
    pub succ: Vec<(Option<i64>, usize)>,
    /// Line in the XAIF file.
    pub line: u32,
}

/// A compiled control flow graph.
#[derive(Clone, Debug)]
pub struct CCfg {
    /// Vertices.
    pub vertices: Vec<CVertex>,
    /// Index of the entry vertex.
    pub entry: usize,
}

/// How a routine's code is given.
#[derive(Clone, Debug)]
pub enum Body {
    /// A plain CFG.
    Plain(CCfg),
    /// Numbered replacements of the subroutine template.
    Template(Vec<(u32, CCfg)>),
    /// No code (module or external routine).
    Empty,
}

/// A compiled routine.
#[derive(Clone, Debug)]
pub struct CRoutine {
    /// The XAIF `symbol_id`.
    pub name: String,
    /// Slot of each formal, by position (index 0 = position 1).
    pub formals: Vec<Option<u32>>,
    /// Declarations of the frame's slots.
    pub slots: Vec<VarDecl>,
    /// The code.
    pub body: Body,
    /// Line of the routine in the XAIF file.
    pub line: u32,
    /// The first marker of the routine that stands for a store the XAIF
    /// does not carry (`OPR_STID`), with its line: a local read before any
    /// translated statement wrote it then has an unknown value.
    pub dropped_store: Option<(String, u32)>,
    /// Whether its argument checkpoints are restored in the order they
    /// were stored (`-f` output: one record per store, read from its
    /// start) instead of off a stack in reverse.
    pub restore_in_store_order: bool,
    /// The line of placeholder 6 when its restores follow neither the
    /// order of the stores nor its reverse in a document without xaifb's
    /// `-f` mark, or do not follow the stores' order under that mark
    /// (`crate::kind::RestoreOrder::Undecided`), and whether it is marked:
    /// joint mode refuses the program.
    pub undecided_restores: Option<(u32, bool)>,
}

impl CRoutine {
    /// The graph of placeholder `ph` of a template routine.
    pub fn placeholder(&self, ph: u32) -> Option<&CCfg> {
        match &self.body {
            Body::Template(list) => list.iter().find(|(p, _)| *p == ph).map(|(_, g)| g),
            _ => None,
        }
    }
}

/// A whole compiled program.
#[derive(Clone, Debug)]
pub struct Prog {
    /// Routines with code, in document order.
    pub routines: Vec<CRoutine>,
    /// Unified globals.
    pub globals: Vec<VarDecl>,
    /// Unified global names (lower case, `_<digits>` suffix removed) to
    /// their index.
    pub global_names: FxHashMap<String, u32>,
    /// Routine `symbol_id` to index.
    pub by_symbol: FxHashMap<String, usize>,
    /// What kind of XAIF the program is: which run modes execute it.
    pub kind: crate::kind::ProgramKind,
}

impl Prog {
    /// The routine whose Fortran name is `name`: its `symbol_id` without
    /// trailing underscores and digits equals `name`, ignoring case.
    pub fn routine_by_fortran_name(&self, name: &str) -> Option<usize> {
        let want = name.to_ascii_lowercase();
        self.routines
            .iter()
            .position(|r| fortran_routine_name(&r.name) == want && !matches!(r.body, Body::Empty))
    }
}

/// The largest argument position a formal may have (Fortran allows 255
/// arguments; positions come from the input and size a table).
const MAX_POSITION: usize = 1 << 16;

/// Choices that change how much the oracle trusts the XAIF.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompileOptions {
    /// Execute markers for READ statements, untranslated calls, pointer
    /// stores, character assignments and dropped stores as no-ops instead
    /// of refusing them (or the reads that see their values). Only for
    /// programs where the user knows those statements do not change the
    /// numbers (a file read back that was just written, say).
    pub inert_markers: bool,
}

/// Compiles a validated program, refusing markers that may change numbers.
pub fn compile(p: &Program, source: &SourceMap) -> Prog {
    compile_with(p, source, CompileOptions::default())
}

/// Compiles a validated program with `options`.
pub fn compile_with(p: &Program, source: &SourceMap, options: CompileOptions) -> Prog {
    let mut c = Compiler::new(p, source);
    c.options = options;
    c.run()
}

struct Compiler<'a> {
    p: &'a Program,
    source: &'a SourceMap,
    symbols: SymbolIndex,
    /// The routine owning each CFG scope.
    scope_owner: FxHashMap<ScopeId, usize>,
    /// Parent of each scope.
    scope_parent: FxHashMap<ScopeId, ScopeId>,
    global_scope: Option<ScopeId>,
    routines: Vec<CRoutine>,
    routine_scope: Vec<Option<ScopeId>>,
    /// Slot of each symbol in each routine.
    slot_of: Vec<FxHashMap<SymbolId, u32>>,
    globals: Vec<VarDecl>,
    global_names: FxHashMap<String, u32>,
    by_symbol: FxHashMap<String, usize>,
    prefix: String,
    options: CompileOptions,
}

impl<'a> Compiler<'a> {
    fn new(p: &'a Program, source: &'a SourceMap) -> Self {
        let symbols = SymbolIndex::new(p);
        let mut scope_parent = FxHashMap::default();
        for item in &p.scope_hierarchy.items {
            if let ScopeItem::Edge(attrs) = item {
                if let (Some(s), Some(t)) = (
                    attrs.get("source").and_then(|id| symbols.scope(id)),
                    attrs.get("target").and_then(|id| symbols.scope(id)),
                ) {
                    scope_parent.insert(s, t);
                }
            }
        }
        let global_scope = symbols.scope("1");
        Compiler {
            p,
            source,
            symbols,
            scope_owner: FxHashMap::default(),
            scope_parent,
            global_scope,
            routines: Vec::new(),
            routine_scope: Vec::new(),
            slot_of: Vec::new(),
            globals: Vec::new(),
            global_names: FxHashMap::default(),
            by_symbol: FxHashMap::default(),
            prefix: p.attrs.get("prefix").unwrap_or("OpenAD_").to_string(),
            options: CompileOptions::default(),
        }
    }

    fn line(&self, span: Span) -> u32 {
        self.source.locate(span).0
    }

    fn run(mut self) -> Prog {
        let p = self.p;
        // First pass: routines, their scopes and formals' slots.
        let mut order = Vec::new();
        for item in &p.items {
            if let xaif_model::CallGraphItem::Routine(r) = item {
                let routine = &p.routines[*r];
                let index = self.routines.len();
                let name = routine.symbol_name().to_string();
                let has_body = routine.has_body(p);
                if has_body {
                    self.by_symbol.entry(name.clone()).or_insert(index);
                }
                let scope = routine
                    .attrs
                    .get("controlflowgraph_scope_id")
                    .and_then(|id| self.symbols.scope(id));
                if let Some(s) = scope {
                    self.scope_owner.entry(s).or_insert(index);
                }
                let restores = crate::kind::restore_order(p, routine);
                self.routines.push(CRoutine {
                    name,
                    formals: Vec::new(),
                    slots: Vec::new(),
                    body: Body::Empty,
                    line: self.line(routine.attrs.span),
                    dropped_store: None,
                    restore_in_store_order: restores == RestoreOrder::StoreOrder,
                    undecided_restores: match restores {
                        RestoreOrder::Undecided { span, marked } => Some((self.line(span), marked)),
                        _ => None,
                    },
                });
                self.routine_scope.push(scope);
                self.slot_of.push(FxHashMap::default());
                order.push((index, *r, has_body));
            }
        }
        // Locals: every variable of the routine's own scope gets a slot.
        for &(index, _, _) in &order {
            if let Some(scope) = self.routine_scope[index] {
                for table in &p.scopes[scope].tables {
                    for &sym in &table.symbols {
                        if p.symbols[sym].kind() == xaif_model::SymbolKind::Variable {
                            self.local_slot(index, sym);
                        }
                    }
                }
            }
        }
        for &(index, r, _) in &order {
            let routine = &p.routines[r];
            if let Some(args) = &routine.arguments {
                for a in &args.args {
                    let (Some(pos), Some(sym)) = (a.int("position"), self.symbols.resolve(a))
                    else {
                        continue;
                    };
                    let slot = self.local_slot(index, sym);
                    let pos = pos.max(1) as usize;
                    if pos > MAX_POSITION {
                        // No routine has that many arguments; a call that
                        // passes one there finds no formal and is refused.
                        continue;
                    }
                    let formals = &mut self.routines[index].formals;
                    if formals.len() < pos {
                        formals.resize(pos, None);
                    }
                    formals[pos - 1] = Some(slot);
                }
            }
        }
        // Second pass: code.
        for &(index, r, has_body) in &order {
            if !has_body {
                continue;
            }
            let body = match &p.routines[r].body {
                RoutineBody::Graph(cfg) => Body::Plain(self.cfg(index, *cfg)),
                RoutineBody::Replacements(list) => {
                    let mut graphs = Vec::new();
                    for rep in list {
                        let Some(ph) = rep.attrs.int("placeholder") else {
                            continue;
                        };
                        if p.cfgs[rep.cfg].vertex_ids().next().is_none() {
                            continue;
                        }
                        graphs.push((ph as u32, self.cfg(index, rep.cfg)));
                    }
                    Body::Template(graphs)
                }
            };
            self.routines[index].body = body;
        }
        Prog {
            routines: self.routines,
            globals: self.globals,
            global_names: self.global_names,
            by_symbol: self.by_symbol,
            kind: crate::kind::ProgramKind::of(p),
        }
    }

    fn decl(&self, sym: SymbolId) -> VarDecl {
        let s = &self.p.symbols[sym];
        let (ty, unsupported) = match s.ty() {
            SymbolType::Real => (Ty::Real, None),
            SymbolType::Integer => (Ty::Int, None),
            SymbolType::Bool => (Ty::Bool, None),
            SymbolType::String | SymbolType::Char => (Ty::Str, None),
            SymbolType::Complex => (Ty::Real, Some("complex")),
            SymbolType::Opaque => (Ty::Real, Some("opaque")),
            SymbolType::Void => (Ty::Real, Some("void")),
        };
        let rank = s.rank();
        let bounds = if rank == 0 {
            Some(Vec::new())
        } else if s.bounds.len() == rank {
            Some(s.source_bounds())
        } else {
            None
        };
        VarDecl {
            name: s.name().to_string(),
            ty,
            rank,
            bounds,
            single: ty == Ty::Real && s.fe_type() == "F4" && !s.is_active(),
            active: s.is_active(),
            unsupported,
            line: self.line(s.attrs.span),
        }
    }

    fn local_slot(&mut self, routine: usize, sym: SymbolId) -> u32 {
        if let Some(slot) = self.slot_of[routine].get(&sym) {
            return *slot;
        }
        let decl = self.decl(sym);
        let slots = &mut self.routines[routine].slots;
        slots.push(decl);
        let slot = (slots.len() - 1) as u32;
        self.slot_of[routine].insert(sym, slot);
        slot
    }

    /// Where symbol `sym` lives when referenced from `routine`.
    fn loc(&mut self, routine: usize, sym: SymbolId) -> Loc {
        if let Some(slot) = self.slot_of[routine].get(&sym) {
            return Loc::Local(*slot);
        }
        let symbol = &self.p.symbols[sym];
        let scope = symbol.scope;
        if Some(scope) == self.global_scope {
            if symbol.is_temp() {
                return Loc::Local(self.local_slot(routine, sym));
            }
            return Loc::Global(self.global(&base_name(symbol.name()), sym));
        }
        if let Some(&owner) = self.scope_owner.get(&scope) {
            if owner != routine && self.is_ancestor(scope, routine) {
                let slot = self.local_slot(owner, sym);
                return Loc::Host {
                    routine: owner as u32,
                    slot,
                };
            }
        }
        // Module scopes and anything else: one storage per symbol.
        let key = format!(
            "{}:{}",
            self.p.scopes[scope].attrs.get("vertex_id").unwrap_or("1"),
            symbol.name()
        );
        Loc::Global(self.global(&key, sym))
    }

    fn is_ancestor(&self, scope: ScopeId, routine: usize) -> bool {
        let mut s = self.routine_scope[routine];
        while let Some(cur) = s {
            if cur == scope {
                return true;
            }
            s = self.scope_parent.get(&cur).copied();
        }
        false
    }

    fn global(&mut self, key: &str, sym: SymbolId) -> u32 {
        if let Some(g) = self.global_names.get(key) {
            // Keep the most informative declaration (one with bounds).
            let decl = self.decl(sym);
            let existing = &mut self.globals[*g as usize];
            if existing.bounds.is_none() && decl.bounds.is_some() {
                *existing = VarDecl {
                    active: existing.active || decl.active,
                    ..decl
                };
            }
            return *g;
        }
        let decl = self.decl(sym);
        self.globals.push(decl);
        let g = (self.globals.len() - 1) as u32;
        self.global_names.insert(key.to_string(), g);
        g
    }

    // -------------------------------------------------------------- graphs

    fn cfg(&mut self, routine: usize, cfg: CfgId) -> CCfg {
        let p = self.p;
        let graph = CfgGraph::new(p, cfg);
        let mut vertices = Vec::with_capacity(graph.vertices.len());
        for &v in &graph.vertices {
            let vertex = &p.vertices[v];
            let line = self.line(vertex.attrs.span);
            let kind = match &vertex.kind {
                VertexKind::Entry => VKind::Entry,
                VertexKind::Exit => VKind::Exit,
                VertexKind::BasicBlock(stmts) => {
                    VKind::Block(stmts.iter().map(|s| self.stmt(routine, *s)).collect())
                }
                VertexKind::Branch(c) | VertexKind::If(c) => {
                    VKind::Branch(self.cond(routine, c.as_ref(), line))
                }
                VertexKind::PreLoop(c) => VKind::Pre(self.cond(routine, c.as_ref(), line)),
                VertexKind::PostLoop(c) => VKind::Post(self.cond(routine, c.as_ref(), line)),
                VertexKind::ForLoop {
                    init,
                    condition,
                    update,
                } => {
                    let cond = self.cond(routine, condition.as_ref(), line);
                    let do_loop = match (init, condition, update) {
                        (Some(i), Some(c), Some(u)) => self.do_loop(routine, *i, c, *u),
                        _ => None,
                    };
                    VKind::For {
                        init: init.map(|s| Box::new(self.stmt(routine, s))),
                        cond,
                        update: update.map(|s| Box::new(self.stmt(routine, s))),
                        do_loop: do_loop.map(Box::new),
                    }
                }
                VertexKind::EndLoop => VKind::EndLoop,
                VertexKind::EndBranch | VertexKind::Goto | VertexKind::Label => VKind::Pass,
            };
            let succ = graph
                .successors(v)
                .iter()
                .map(|(e, t)| (p.edges[*e].condition_value(), graph.local_index(*t)))
                .collect();
            vertices.push(CVertex { kind, succ, line });
        }
        let entry = graph.entry.map(|e| graph.local_index(e)).unwrap_or(0);
        CCfg { vertices, entry }
    }

    fn cond(&mut self, routine: usize, c: Option<&Expr>, _line: u32) -> CExpr {
        match c {
            Some(e) => self.expr(routine, e),
            None => CExpr::refuse(ErrorKind::Unsupported(
                "a control vertex without condition".into(),
            )),
        }
    }

    /// Recognises `i = lo; i <= hi (>=, /=); i = i ± step` as a DO loop.
    fn do_loop(
        &mut self,
        routine: usize,
        init: StmtId,
        cond: &Expr,
        update: StmtId,
    ) -> Option<DoLoop> {
        let p = self.p;
        let StmtKind::Assignment(init_a) = &p.stmts[init].kind else {
            return None;
        };
        let StmtKind::Assignment(upd_a) = &p.stmts[update].kind else {
            return None;
        };
        let var = init_a.lhs.graph.symbol_ref()?;
        if init_a.lhs.graph.vertices.len() != 1 {
            return None;
        }
        let var_sym = self.symbols.resolve(var)?;
        let is_var = |e: &Expr, i: usize| -> bool {
            match &e.vertices[i].kind {
                ExprVertexKind::VariableReference(g) => {
                    g.vertices.len() == 1
                        && g.symbol_ref().and_then(|a| self.symbols.resolve(a)) == Some(var_sym)
                }
                _ => false,
            }
        };
        // Condition: BooleanOperation(le/ge/ne) with the loop variable as one
        // operand.
        let cg = ExprGraph::new(cond)?;
        let root = &cond.vertices[cg.root];
        if !matches!(root.kind, ExprVertexKind::BooleanOperation) {
            return None;
        }
        let op = root.attrs.get("name")?;
        if !matches!(op, "less_or_equal" | "greater_or_equal" | "not_equal") {
            return None;
        }
        let args = &cg.args[cg.root];
        if args.len() != 2 {
            return None;
        }
        let bound = match (is_var(cond, args[0]), is_var(cond, args[1])) {
            (true, false) => args[1],
            (false, true) if op == "not_equal" => args[0],
            _ => return None,
        };
        // Update: i = i + s, i = s + i, or i = i - s.
        let ug = ExprGraph::new(&upd_a.rhs)?;
        let uroot = &upd_a.rhs.vertices[ug.root];
        if upd_a
            .lhs
            .graph
            .symbol_ref()
            .and_then(|a| self.symbols.resolve(a))
            != Some(var_sym)
        {
            return None;
        }
        let name = uroot.attrs.get("name")?;
        let uargs = &ug.args[ug.root];
        if uargs.len() != 2 {
            return None;
        }
        let (step, negate) = match (
            name,
            is_var(&upd_a.rhs, uargs[0]),
            is_var(&upd_a.rhs, uargs[1]),
        ) {
            ("add_scal_scal", true, false) => (uargs[1], false),
            ("add_scal_scal", false, true) => (uargs[0], false),
            ("sub_scal_scal", true, false) => (uargs[1], true),
            _ => return None,
        };
        let var_ref = self.var_ref(routine, &init_a.lhs.graph, &init_a.lhs.attrs);
        let hi = self.expr_at(routine, cond, &cg, bound);
        let step = self.expr_at(routine, &upd_a.rhs, &ug, step);
        Some(DoLoop {
            var: var_ref,
            hi,
            step,
            negate,
        })
    }

    // ---------------------------------------------------------- statements

    fn is_derivative_symbol(&self, attrs: Option<&Attrs>) -> bool {
        let Some(sym) = attrs.and_then(|a| self.symbols.resolve(a)) else {
            return false;
        };
        let s = &self.p.symbols[sym];
        s.is_temp() || s.name().starts_with(&self.prefix)
    }

    fn stmt(&mut self, routine: usize, s: StmtId) -> CStmt {
        let p = self.p;
        let stmt = &p.stmts[s];
        let line = self.line(stmt.attrs.span);
        let mut derivative = false;
        let kind = match &stmt.kind {
            StmtKind::Assignment(a) => {
                derivative = self.is_derivative_symbol(a.lhs.graph.symbol_ref())
                    || a.lhs.attrs.flag("deriv", false);
                SKind::Assign {
                    lhs: self.var_ref(routine, &a.lhs.graph, &a.lhs.attrs),
                    rhs: self.expr(routine, &a.rhs),
                }
            }
            StmtKind::Marker => {
                let annotation = stmt.attrs.get("annotation").unwrap_or("");
                match marker(annotation) {
                    MarkerEffect::Inert => SKind::Nop,
                    MarkerEffect::DroppedStore if self.options.inert_markers => SKind::Nop,
                    MarkerEffect::DroppedStore => {
                        let r = &mut self.routines[routine];
                        if r.dropped_store.is_none() {
                            r.dropped_store = Some((annotation.trim().to_string(), line));
                        }
                        SKind::Nop
                    }
                    MarkerEffect::Unsafe(_) if self.options.inert_markers => SKind::Nop,
                    MarkerEffect::Unsafe(what) => SKind::Refuse(ErrorKind::UntranslatedStatement(
                        format!("{what} [{}]", annotation.trim()),
                    )),
                }
            }
            StmtKind::SubroutineCall(args) => {
                let callee = stmt.attrs.get("symbol_id").unwrap_or("");
                let target = match self.by_symbol.get(callee) {
                    Some(&i) => Ok(i),
                    None => Err(callee.to_string()),
                };
                let args = args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| {
                        let pos = a
                            .attrs
                            .int("position")
                            .map(|x| x.max(1) as usize)
                            .unwrap_or(i + 1);
                        (pos, self.arg(routine, &a.value))
                    })
                    .collect();
                SKind::Call { target, args }
            }
            StmtKind::InlinableCall(args) => {
                derivative = true;
                let name = stmt.attrs.get("subroutine_name").unwrap_or("");
                let mut sorted: Vec<(i64, &InlinableArg)> = args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| (a.position().unwrap_or(i as i64 + 1), a))
                    .collect();
                sorted.sort_by_key(|(p, _)| *p);
                let args: Vec<CArg> = sorted
                    .into_iter()
                    .map(|(_, a)| match a {
                        InlinableArg::Argument(a) => self.arg(routine, &a.value),
                        InlinableArg::Substitute(v) => {
                            CArg::Ref(self.var_ref(routine, &v.graph, &v.attrs))
                        }
                    })
                    .collect();
                match inline_op(name) {
                    Some(op) => SKind::Inline { op, args },
                    None => SKind::Refuse(ErrorKind::UnknownInlinable(name.to_string())),
                }
            }
            StmtKind::DerivativePropagator(entries) => {
                derivative = true;
                let mut out = Vec::with_capacity(entries.len());
                for e in entries {
                    let r = |c: &mut Self, v: &VarRef| c.var_ref(routine, &v.graph, &v.attrs);
                    out.push(match &e.kind {
                        PropKind::SetDeriv { tgt, src } => CProp::Set(r(self, tgt), r(self, src)),
                        PropKind::SetNegDeriv { tgt, src } => {
                            CProp::SetNeg(r(self, tgt), r(self, src))
                        }
                        PropKind::IncDeriv { tgt, src } => CProp::Inc(r(self, tgt), r(self, src)),
                        PropKind::DecDeriv { tgt, src } => CProp::Dec(r(self, tgt), r(self, src)),
                        PropKind::Sax { terms, y } | PropKind::Saxpy { terms, y } => CProp::Sax {
                            terms: terms
                                .iter()
                                .map(|t| (self.expr(routine, &t.a), r(self, &t.x)))
                                .collect(),
                            y: r(self, y),
                            accumulate: matches!(e.kind, PropKind::Saxpy { .. }),
                        },
                        PropKind::ZeroDeriv(v) => CProp::Zero(r(self, v)),
                    });
                }
                SKind::Prop(out)
            }
        };
        CStmt {
            kind,
            line,
            derivative,
        }
    }

    fn arg(&mut self, routine: usize, v: &ArgValue) -> CArg {
        match v {
            ArgValue::Variable(v) => CArg::Ref(self.var_ref(routine, &v.graph, &v.attrs)),
            ArgValue::Constant(attrs) => match constant(attrs) {
                Ok(c) => CArg::Const(c),
                Err(_) => CArg::Const(Scalar::Int(0)),
            },
        }
    }

    // --------------------------------------------------------- expressions

    fn var_ref(&mut self, routine: usize, g: &RefGraph, attrs: &Attrs) -> CRef {
        let deriv = attrs.flag("deriv", false);
        let chain = g.chain();
        let sym_attrs = chain.first().map(|v| &v.attrs);
        let name: Rc<str> = Rc::from(sym_attrs.and_then(|a| a.get("symbol_id")).unwrap_or("?"));
        let sym = sym_attrs.and_then(|a| self.symbols.resolve(a));
        let Some(sym) = sym else {
            return CRef {
                loc: Loc::Global(u32::MAX),
                subs: Vec::new(),
                deriv,
                name,
            };
        };
        let loc = self.loc(routine, sym);
        let mut subs = Vec::new();
        let mut element_refs = 0;
        for v in chain.iter().skip(1) {
            if let RefVertexKind::ArrayElement { triplets } = &v.kind {
                element_refs += 1;
                for t in triplets {
                    let e = |c: &mut Self, x: &Option<Expr>| x.as_ref().map(|x| c.expr(routine, x));
                    if t.bound.is_none() && t.stride.is_none() {
                        match &t.index {
                            Some(i) => subs.push(CSub::Index(self.expr(routine, i))),
                            None => subs.push(CSub::Range(None, None, None)),
                        }
                    } else {
                        let lo = e(self, &t.index);
                        let hi = e(self, &t.bound);
                        let st = e(self, &t.stride);
                        subs.push(CSub::Range(lo, hi, st));
                    }
                }
            }
        }
        if element_refs > 1 {
            // A reference chain with several subscript lists (components of
            // derived types) is not something the front ends we know write.
            subs = vec![CSub::Index(CExpr::refuse(ErrorKind::Unsupported(format!(
                "a reference to `{name}` with {element_refs} subscript lists"
            ))))];
        }
        CRef {
            loc,
            subs,
            deriv,
            name,
        }
    }

    fn expr(&mut self, routine: usize, e: &Expr) -> CExpr {
        match ExprGraph::new(e) {
            Some(g) => self.expr_at(routine, e, &g, g.root),
            None => CExpr::refuse(ErrorKind::Unsupported("an empty expression".into())),
        }
    }

    /// Lowers the subgraph of `e` whose result is vertex `root`: a
    /// post-order walk with an explicit stack, each vertex lowered once.
    fn expr_at(&mut self, routine: usize, e: &Expr, g: &ExprGraph, root: usize) -> CExpr {
        const NONE: u32 = u32::MAX;
        // Node of each vertex, once lowered.
        let mut node_of = vec![NONE; e.vertices.len()];
        let mut nodes: Vec<ENode> = Vec::new();
        // Whether the vertex's operands are lowered as values (an inquiry's
        // first argument is a variable, not a value).
        let operands = |v: usize| -> &[usize] {
            let args = &g.args[v];
            let vertex = &e.vertices[v];
            let name = vertex.attrs.get("name").unwrap_or("");
            // `len` of an expression is an operation on its value.
            let of_variable = args.first().is_some_and(|&a| {
                matches!(e.vertices[a].kind, ExprVertexKind::VariableReference(_))
            });
            let is_inquiry = matches!(
                vertex.kind,
                ExprVertexKind::Intrinsic | ExprVertexKind::BooleanOperation
            ) && inquiry(name).is_some_and(|q| of_variable || q != Inquiry::Len);
            if is_inquiry && !args.is_empty() {
                &args[1..]
            } else if matches!(
                vertex.kind,
                ExprVertexKind::Intrinsic | ExprVertexKind::BooleanOperation
            ) {
                args
            } else {
                &[]
            }
        };
        let mut stack: Vec<(usize, bool)> = vec![(root, false)];
        while let Some((v, expanded)) = stack.pop() {
            if node_of[v] != NONE {
                continue;
            }
            if !expanded {
                stack.push((v, true));
                for &a in operands(v).iter().rev() {
                    if node_of[a] == NONE {
                        stack.push((a, false));
                    }
                }
                continue;
            }
            let ops: Vec<Operand> = operands(v)
                .iter()
                .map(|&a| Operand {
                    node: node_of[a],
                    last: false,
                })
                .collect();
            let node = self.expr_node(routine, e, g, v, ops);
            node_of[v] = nodes.len() as u32;
            nodes.push(node);
        }
        // Mark each node's last use in evaluation order: its value moves.
        let mut last_use: Vec<Option<(usize, usize)>> = vec![None; nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            if let ENode::Op(_, ops) | ENode::Inquiry(_, _, ops) = n {
                for (k, o) in ops.iter().enumerate() {
                    last_use[o.node as usize] = Some((i, k));
                }
            }
        }
        for (i, k) in last_use.into_iter().flatten() {
            if let ENode::Op(_, ops) | ENode::Inquiry(_, _, ops) = &mut nodes[i] {
                ops[k].last = true;
            }
        }
        CExpr { nodes }
    }

    /// The node of vertex `v` of `e`, whose value operands are `ops`.
    fn expr_node(
        &mut self,
        routine: usize,
        e: &Expr,
        g: &ExprGraph,
        v: usize,
        ops: Vec<Operand>,
    ) -> ENode {
        let vertex = &e.vertices[v];
        let args = &g.args[v];
        match &vertex.kind {
            ExprVertexKind::Constant => match constant(&vertex.attrs) {
                Ok(c) => ENode::Const(c),
                Err(k) => ENode::Refuse(k),
            },
            ExprVertexKind::VariableReference(rg) => {
                ENode::Ref(Box::new(self.var_ref(routine, rg, &vertex.attrs)))
            }
            ExprVertexKind::Intrinsic | ExprVertexKind::BooleanOperation => {
                let name = vertex.attrs.get("name").unwrap_or("");
                let first = args.first().map(|&a| &e.vertices[a].kind);
                let of_variable = matches!(first, Some(ExprVertexKind::VariableReference(_)));
                // `len` of an expression (`len(trim(s))`) is an operation
                // on its value, not an inquiry.
                if let Some(inq) = inquiry(name).filter(|&q| of_variable || q != Inquiry::Len) {
                    let Some(ExprVertexKind::VariableReference(rg)) = first else {
                        return ENode::Refuse(ErrorKind::Unsupported(format!(
                            "`{name}` of an expression that is not a variable"
                        )));
                    };
                    let r = self.var_ref(routine, rg, &e.vertices[args[0]].attrs);
                    return ENode::Inquiry(inq, Box::new(r), ops);
                }
                match op(name) {
                    Some(op) => ENode::Op(op, ops),
                    // Trace output's tracing versions of non-smooth
                    // intrinsics (`oad_tan_scal`, …).
                    None => match name.strip_prefix("oad_").and_then(op) {
                        Some(op) => ENode::Traced(op, ops),
                        None => ENode::Refuse(ErrorKind::UnknownIntrinsic(name.to_string())),
                    },
                }
            }
            ExprVertexKind::FunctionCall(_) => ENode::Refuse(ErrorKind::Unsupported(format!(
                "function call `{}` inside an expression",
                vertex.attrs.get("symbol_id").unwrap_or("?")
            ))),
            ExprVertexKind::ArgumentReference => ENode::Refuse(ErrorKind::Unsupported(
                "an argument reference outside a catalogue".into(),
            )),
        }
    }
}

/// The constant an XAIF `Constant` element denotes.
pub fn constant(attrs: &Attrs) -> Result<Scalar, ErrorKind> {
    let ty = attrs.get("type").unwrap_or("real");
    let raw = attrs.get("value").unwrap_or("");
    // Blanks are part of a character constant (`len('ab  ')` is 4).
    let value = if matches!(ty, "string" | "char") {
        raw
    } else {
        raw.trim()
    };
    let fe = attrs.get("feType").unwrap_or("");
    let bad = || ErrorKind::Type(format!("constant `{value}` of type {ty}"));
    Ok(match ty {
        "integer" => Scalar::Int(parse_int(value).ok_or_else(|| {
            let digits = value.trim_start_matches(['-', '+']);
            let integral = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
            let real_beyond = parse_real(value).is_some_and(|x| x.is_finite() && x.fract() == 0.0);
            if integral || real_beyond {
                ErrorKind::IntegerOverflow(format!(
                    "constant `{value}` is out of the integer range"
                ))
            } else {
                bad()
            }
        })?),
        "bool" => Scalar::Bool(match value.to_ascii_lowercase().trim_matches('.') {
            "true" | "1" | "t" => true,
            "false" | "0" | "f" => false,
            _ => return Err(bad()),
        }),
        "string" | "char" => Scalar::Str(Rc::from(value)),
        _ => {
            let x = parse_real(value).ok_or_else(bad)?;
            Scalar::Real(if fe == "F4" { x as f32 as f64 } else { x })
        }
    })
}

/// An integer constant: an `i64` literal, or a real literal with an
/// integral value inside the `i64` range (never saturated).
fn parse_int(text: &str) -> Option<i64> {
    text.parse::<i64>().ok().or_else(|| {
        if text
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'-' || b == b'+')
        {
            // An integer literal beyond the range, not a real.
            return None;
        }
        parse_real(text)
            .filter(|x| x.fract() == 0.0)
            .and_then(crate::value::real_to_int)
    })
}

fn parse_real(text: &str) -> Option<f64> {
    let t = text.replace(['d', 'D'], "e");
    t.parse::<f64>().ok()
}

/// What a `Marker` stands for, as far as the numbers are concerned.
enum MarkerEffect {
    /// Pragmas, comments, `use`, labels, output statements.
    Inert,
    /// A store of a passive value the XAIF does not carry (`OPR_STID`):
    /// harmless unless a later read sees its value.
    DroppedStore,
    /// A statement that may change values in ways the XAIF does not say.
    Unsafe(&'static str),
}

fn marker(annotation: &str) -> MarkerEffect {
    let unsafe_kinds = [
        ("OPR_ISTORE", "a store through a pointer (OPR_ISTORE)"),
        ("OPR_PSTORE", "a store through a pointer (OPR_PSTORE)"),
        (
            "OPR_CALL",
            "a call the front end did not translate (OPR_CALL)",
        ),
        ("READ", "a READ statement"),
        ("cassignstmt", "a character assignment"),
    ];
    for (key, what) in unsafe_kinds {
        if annotation.contains(key) {
            return MarkerEffect::Unsafe(what);
        }
    }
    if annotation.contains("OPR_STID") {
        return MarkerEffect::DroppedStore;
    }
    MarkerEffect::Inert
}

fn inquiry(name: &str) -> Option<Inquiry> {
    Some(match name {
        "size" => Inquiry::Size,
        "lbound" => Inquiry::Lbound,
        "ubound" => Inquiry::Ubound,
        "present" => Inquiry::Present,
        "allocated" => Inquiry::Allocated,
        "len" => Inquiry::Len,
        _ => return None,
    })
}

fn op(name: &str) -> Option<Op> {
    Some(match name {
        "add_scal_scal" => Op::Add,
        "sub_scal_scal" => Op::Sub,
        "mul_scal_scal" => Op::Mul,
        "div_scal_scal" => Op::Div,
        "minus_scal" => Op::Neg,
        "pow_scal_scal" => Op::Pow,
        "sin_scal" => Op::Sin,
        "cos_scal" => Op::Cos,
        "tan_scal" => Op::Tan,
        "arcsin_scal" => Op::Asin,
        "arccos_scal" => Op::Acos,
        "arctan_scal" => Op::Atan,
        "sinh_scal" => Op::Sinh,
        "cosh_scal" => Op::Cosh,
        "tanh_scal" => Op::Tanh,
        "exp_scal" => Op::Exp,
        "ln_scal" => Op::Log,
        "log10" => Op::Log10,
        "sqrt_scal" => Op::Sqrt,
        "abs_scal" => Op::Abs,
        "sign_scal_scal" => Op::Sign,
        "mod_scal_scal" => Op::Mod,
        "nc_min_scal_scal" | "min_scal_scal" => Op::Min,
        "nc_max_scal_scal" | "max_scal_scal" => Op::Max,
        "int_scal" => Op::Int,
        "nint_scal" => Op::Nint,
        "real_scal" => Op::Real,
        "nc_minval" | "minval" => Op::MinVal,
        "nc_maxval" | "maxval" => Op::MaxVal,
        "sum_arr" => Op::Sum,
        "maxloc_arr" => Op::MaxLoc,
        "minloc_arr" => Op::MinLoc,
        "transpose_arr" => Op::Transpose,
        "reshape_arr" => Op::Reshape,
        "shape_arr" => Op::Shape,
        "trim" => Op::Trim,
        "complex_scal" => Op::Cmplx,
        "imag_scal" => Op::Imag,
        "transfer" => Op::Transfer,
        "scan" => Op::Scan,
        "ichar" => Op::Ichar,
        "len" => Op::Len,
        "string_eq_scal_scal" => Op::StrEq,
        "string_ne_scal_scal" => Op::StrNe,
        "string_ge_scal_scal" => Op::StrGe,
        "string_le_scal_scal" => Op::StrLe,
        "string_lt_scal_scal" => Op::StrLt,
        "and" => Op::And,
        "or" => Op::Or,
        "not" => Op::Not,
        "xor" => Op::Xor,
        "equal" => Op::Eq,
        "not_equal" => Op::Ne,
        "less_than" => Op::Lt,
        "less_or_equal" => Op::Le,
        "greater_than" => Op::Gt,
        "greater_or_equal" => Op::Ge,
        _ => return None,
    })
}

/// Whether `name` is a call of the tangent module (`-H` output), which
/// propagates derivatives.
pub(crate) fn is_tangent_call(name: &str) -> bool {
    tangent_call(name).is_some()
}

/// The tangent module's calls (`-H` output): the reference engine's names,
/// with or without their `_s<rank>` suffixes (one per argument), and the
/// unsuffixed names xaifb wrote before it followed them.
fn tangent_call(name: &str) -> Option<InlineOp> {
    let mut base = name;
    while let Some((head, rank)) = base.rsplit_once("_s") {
        if rank.is_empty() || !rank.bytes().all(|b| b.is_ascii_digit()) {
            break;
        }
        base = head;
    }
    Some(match base {
        "saxpy" => InlineOp::Saxpy,
        "sax" => InlineOp::Sax,
        "setderiv" => InlineOp::SetDeriv,
        "set_neg_deriv" | "setnegderiv" => InlineOp::SetNegDeriv,
        "inc_deriv" | "incderiv" => InlineOp::IncDerivTarget,
        "dec_deriv" | "decderiv" => InlineOp::DecDerivTarget,
        "zero_deriv" | "zeroderiv" => InlineOp::ZeroDeriv,
        _ => return None,
    })
}

/// The rank a tape call's name gives its argument (`push_i_s1`: 1).
fn tape_rank(name: &str) -> Option<u8> {
    name.rsplit_once("_s")
        .and_then(|(_, rank)| rank.parse::<u8>().ok())
}

fn inline_op(name: &str) -> Option<InlineOp> {
    Some(match name {
        "apush" => InlineOp::Push(Ty::Real, None),
        "apop" => InlineOp::Pop(Ty::Real, None),
        "push_s0" | "push_s1" | "push_s2" | "push_s3" => InlineOp::Push(Ty::Real, tape_rank(name)),
        "pop_s0" | "pop_s1" | "pop_s2" | "pop_s3" => InlineOp::Pop(Ty::Real, tape_rank(name)),
        "push_i_s0" | "push_i_s1" | "push_i_s2" | "push_i_s3" => {
            InlineOp::Push(Ty::Int, tape_rank(name))
        }
        "pop_i_s0" | "pop_i_s1" | "pop_i_s2" | "pop_i_s3" => {
            InlineOp::Pop(Ty::Int, tape_rank(name))
        }
        "push_b" => InlineOp::Push(Ty::Bool, None),
        "pop_b" => InlineOp::Pop(Ty::Bool, None),
        "push_s" => InlineOp::Push(Ty::Str, None),
        "pop_s" => InlineOp::Pop(Ty::Str, None),
        "Saxpy" => InlineOp::Saxpy,
        "IncDeriv" => InlineOp::IncDeriv,
        "DecDeriv" => InlineOp::DecDeriv,
        "ZeroDeriv" => InlineOp::ZeroDeriv,
        "oad_convert" => InlineOp::Convert,
        "oad_AllocateMatching" => InlineOp::AllocateMatching,
        "oad_AllocateShape" => InlineOp::AllocateShape,
        "oad_ShapeTest" => InlineOp::ShapeTest,
        "countmult" => InlineOp::Count(true),
        "countadd" => InlineOp::Count(false),
        _ => {
            if let Some(op) = tangent_call(name) {
                return Some(op);
            }
            if let Some(record) = name.strip_prefix("oad_trace_") {
                return TraceRecord::from_name(record).map(InlineOp::Trace);
            }
            if let Some(op) = revolve_op(name) {
                return Some(op);
            }
            return checkpoint_op(name);
        }
    })
}

/// The run-time calls of checkpointed loops (`oad_revolve_*`).
fn revolve_op(name: &str) -> Option<InlineOp> {
    let rest = name.strip_prefix("oad_revolve_")?;
    Some(match rest {
        "begin" => InlineOp::RevolveBegin,
        "resume" => InlineOp::RevolveResume,
        "next" => InlineOp::RevolveNext,
        "begin_online" => InlineOp::RevolveBeginOnline,
        "begin_fixed_point" => InlineOp::RevolveBeginFixedPoint,
        "begin_independent" => InlineOp::RevolveBeginIndependent,
        "iteration" => InlineOp::RevolveIteration,
        "end" => InlineOp::RevolveEnd,
        "measure" => InlineOp::RevolveMeasure,
        "check" => InlineOp::RevolveCheck,
        "store" => InlineOp::RevolveStore(None),
        "restore" => InlineOp::RevolveRestore(None),
        _ => {
            let (store, typed) = if let Some(t) = rest.strip_prefix("store_") {
                (true, t)
            } else {
                (false, rest.strip_prefix("restore_")?)
            };
            let ty = Some(element_type(typed)?);
            if store {
                InlineOp::RevolveStore(ty)
            } else {
                InlineOp::RevolveRestore(ty)
            }
        }
    })
}

/// The element type a checkpoint call's name begins with
/// (`real_vector_a` is real).
pub(crate) fn element_type(typed: &str) -> Option<Ty> {
    if typed.starts_with("real_") {
        Some(Ty::Real)
    } else if typed.starts_with("integer_") {
        Some(Ty::Int)
    } else if typed.starts_with("bool_") {
        Some(Ty::Bool)
    } else if typed.starts_with("string_") {
        Some(Ty::Str)
    } else {
        None
    }
}

/// `cp_arg_store_real_vector_a_d` and friends.
fn checkpoint_op(name: &str) -> Option<InlineOp> {
    let (store, rest) = if let Some(r) = name
        .strip_prefix("cp_arg_store_")
        .or_else(|| name.strip_prefix("cp_res_store_"))
    {
        (true, r)
    } else if let Some(r) = name
        .strip_prefix("cp_arg_restore_")
        .or_else(|| name.strip_prefix("cp_res_restore_"))
    {
        (false, r)
    } else {
        return None;
    };
    let ty = element_type(rest)?;
    let deriv = rest.ends_with("_a_d");
    Some(if store {
        InlineOp::CpStore { ty, deriv }
    } else {
        InlineOp::CpRestore { ty, deriv }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unified_as_the_semantics_says() {
        assert_eq!(fortran_routine_name("head__24"), "head");
        assert_eq!(fortran_routine_name("OpenAD_head__28"), "openad_head");
        assert_eq!(
            fortran_routine_name("box_model_body__140"),
            "box_model_body"
        );
        assert_eq!(fortran_routine_name("ad_roehf5__24"), "ad_roehf5");
        assert_eq!(base_name("G_29"), "g");
        assert_eq!(base_name("MX_32"), "mx");
        assert_eq!(base_name("plain"), "plain");
    }

    #[test]
    fn constants_parse_with_their_precision() {
        let c =
            |pairs: &[(&str, &str)]| constant(&Attrs::from_pairs(pairs.iter().copied())).unwrap();
        assert_eq!(c(&[("type", "integer"), ("value", "-3")]), Scalar::Int(-3));
        assert_eq!(
            c(&[("type", "real"), ("feType", "F4"), ("value", "0.1")]),
            Scalar::Real(0.1f32 as f64)
        );
        assert_eq!(
            c(&[("type", "real"), ("feType", "F8"), ("value", "0.1")]),
            Scalar::Real(0.1)
        );
        assert_eq!(
            c(&[("type", "real"), ("value", "1.5D0")]),
            Scalar::Real(1.5)
        );
        assert_eq!(
            c(&[("type", "bool"), ("value", ".true.")]),
            Scalar::Bool(true)
        );
    }

    #[test]
    fn integer_constants_are_never_saturated() {
        let c = |v: &str| constant(&Attrs::from_pairs([("type", "integer"), ("value", v)]));
        assert_eq!(c("-9223372036854775808").unwrap(), Scalar::Int(i64::MIN));
        assert_eq!(c("3.0").unwrap(), Scalar::Int(3));
        for beyond in ["9223372036854775808", "-9223372036854775809", "1e30"] {
            assert!(
                matches!(c(beyond), Err(ErrorKind::IntegerOverflow(_))),
                "{beyond}"
            );
        }
        assert!(matches!(c("x"), Err(ErrorKind::Type(_))));
    }

    #[test]
    fn checkpoint_names_decode() {
        assert_eq!(
            inline_op("cp_arg_store_real_vector_a_d"),
            Some(InlineOp::CpStore {
                ty: Ty::Real,
                deriv: true
            })
        );
        assert_eq!(
            inline_op("cp_arg_restore_integer_scalar"),
            Some(InlineOp::CpRestore {
                ty: Ty::Int,
                deriv: false
            })
        );
        assert_eq!(inline_op("cp_arg_store_opaque_scalar"), None);
        assert_eq!(inline_op("push"), None);
    }
}
