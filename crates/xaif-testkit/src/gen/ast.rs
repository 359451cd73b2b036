//! The generated programs' abstract syntax: a small Fortran with exactly
//! the constructs front ends put into XAIF, plus what each variable may hold.
//!
//! Every variable has a [`Role`] that the builder keeps true, so that a
//! generated program is always well defined and its derivatives are those
//! of the mathematical function it computes: subscripts stay inside the
//! bounds because index variables hold `1..=K`, loops terminate, and the
//! front end's activity flags are sound because passive reals that may hold
//! values depending on the independents never flow into active ones.

/// Index variables hold a value in `1..=K`.
pub const K: i64 = 3;

/// Counters hold a value in `-COUNT..=COUNT`.
pub const COUNT: i64 = 6;

/// The element type of a variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// `real(8)`.
    Real,
    /// `integer`.
    Int,
    /// `logical`.
    Bool,
}

/// The declared shape of a variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dims {
    /// A scalar.
    Scalar,
    /// Constant extents (lower bounds 1), first dimension first.
    Fixed(Vec<i64>),
    /// A rank-one assumed-shape formal `a(:)`: its extent is the actual's,
    /// known only at run time.
    Assumed,
    /// A rank-one allocatable local: no bounds in the XAIF, shaped by its
    /// first assignment at run time.
    Alloc,
}

/// What a variable may hold and where its value may flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// An active real.
    Active,
    /// An active real that is only ever written, never read: forcing it
    /// passive (`-p`) cannot change any derivative.
    Dead,
    /// A passive real whose value never depends on the independents; it
    /// may flow anywhere.
    Clean,
    /// A passive real that may hold values depending on the independents;
    /// its value flows only into other sinks.
    Sink,
    /// An integer in `1..=K`, usable as a subscript.
    Index,
    /// An integer in `-COUNT..=COUNT`.
    Count,
    /// A DO-loop variable, read only inside its loops (and after them in
    /// the same statement list).
    Loop,
    /// A logical.
    Flag,
}

impl Role {
    /// The element type of variables with this role.
    pub fn ty(self) -> Ty {
        match self {
            Role::Active | Role::Dead | Role::Clean | Role::Sink => Ty::Real,
            Role::Index | Role::Count | Role::Loop => Ty::Int,
            Role::Flag => Ty::Bool,
        }
    }

    /// Whether the front end marks such variables active.
    pub fn active(self) -> bool {
        matches!(self, Role::Active | Role::Dead)
    }
}

/// A variable: a global, a formal or a local.
#[derive(Clone, Debug, PartialEq)]
pub struct Var {
    /// Fortran name (upper case, unique in its routine).
    pub name: String,
    /// Role.
    pub role: Role,
    /// Declared shape.
    pub dims: Dims,
    /// Extents at run time (empty for a scalar).
    pub extents: Vec<i64>,
}

impl Var {
    /// Rank.
    pub fn rank(&self) -> usize {
        self.extents.len()
    }

    /// Number of elements at run time.
    pub fn size(&self) -> i64 {
        self.extents.iter().product()
    }

    /// Whether the extents are known only at run time.
    pub fn deferred(&self) -> bool {
        matches!(self.dims, Dims::Assumed | Dims::Alloc)
    }
}

/// A variable of a routine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VarId {
    /// A global of the program.
    Global(usize),
    /// A formal of the routine.
    Formal(usize),
    /// A local of the routine.
    Local(usize),
}

/// One subscript of a reference.
#[derive(Clone, Debug, PartialEq)]
pub enum Sub {
    /// `a(i)`.
    Elem(Expr),
    /// `a(lo:hi)` or `a(lo:hi:st)`.
    Range(Expr, Expr, Option<Expr>),
}

/// A reference to a variable, an element or a section.
#[derive(Clone, Debug, PartialEq)]
pub struct Ref {
    /// The variable.
    pub var: VarId,
    /// Subscripts, one per dimension (none for the whole variable).
    pub subs: Vec<Sub>,
}

impl Ref {
    /// The whole variable.
    pub fn whole(var: VarId) -> Self {
        Ref {
            var,
            subs: Vec::new(),
        }
    }
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A real constant.
    Real(f64),
    /// An integer constant.
    Int(i64),
    /// A character constant.
    Str(String),
    /// A logical constant (`.true.`, `.false.`).
    Bool(bool),
    /// A variable, element or section.
    Ref(Box<Ref>),
    /// An intrinsic of the inlinable catalogue, an inquiry (`size`,
    /// `lbound`, `ubound`) or a boolean operation (`and`, `less_than`, …).
    Op(&'static str, Vec<Expr>),
}

impl Expr {
    /// A reference expression.
    pub fn r(r: Ref) -> Self {
        Expr::Ref(Box::new(r))
    }

    /// A whole-variable reference expression.
    pub fn var(v: VarId) -> Self {
        Expr::r(Ref::whole(v))
    }

    /// Calls `f` on every reference in the expression (subscripts
    /// included).
    pub fn visit_refs(&self, f: &mut dyn FnMut(&Ref)) {
        match self {
            Expr::Ref(r) => {
                f(r);
                for s in &r.subs {
                    s.visit(f);
                }
            }
            Expr::Op(_, args) => args.iter().for_each(|a| a.visit_refs(f)),
            _ => {}
        }
    }
}

impl Sub {
    pub(crate) fn visit(&self, f: &mut dyn FnMut(&Ref)) {
        match self {
            Sub::Elem(e) => e.visit_refs(f),
            Sub::Range(a, b, c) => {
                a.visit_refs(f);
                b.visit_refs(f);
                if let Some(c) = c {
                    c.visit_refs(f);
                }
            }
        }
    }
}

/// The step of a DO loop.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// `+1`.
    Up,
    /// `-1`.
    Down,
    /// A variable holding a non-zero step known only at run time.
    Var(VarId),
}

/// An actual argument.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// A variable, element or section (passed by reference).
    Ref(Ref),
    /// A constant.
    Const(Expr),
    /// Nothing, at an optional formal (the call has no `Argument` at that
    /// position).
    Absent,
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `lhs = rhs`.
    Assign(Ref, Expr),
    /// `call callee(args)`.
    Call {
        /// Index of the routine called.
        callee: usize,
        /// Actuals by position.
        args: Vec<Arg>,
    },
    /// `do var = lo, hi[, step]` (a `ForLoop`).
    Do {
        /// Loop variable.
        var: VarId,
        /// First value.
        lo: Expr,
        /// Last value.
        hi: Expr,
        /// Step.
        step: Step,
        /// Body.
        body: Vec<Stmt>,
        /// `reversal="explicit"`: the user's promise of a simple loop.
        explicit: bool,
    },
    /// `do while (cond)` (`PreLoop`), or with `post` the body first and the
    /// condition after it (`PostLoop`).
    While {
        /// Condition (bounded by a counter the builder maintains).
        cond: Expr,
        /// Body.
        body: Vec<Stmt>,
        /// Whether the condition is tested after the body.
        post: bool,
    },
    /// `if (cond) then … else … end if` (a `Branch`, or with `vertex` an
    /// `If` vertex).
    If {
        /// Condition.
        cond: Expr,
        /// Then part.
        then: Vec<Stmt>,
        /// Else part.
        els: Vec<Stmt>,
        /// Whether it is written as an `If` vertex rather than a `Branch`.
        vertex: bool,
    },
    /// `select case (on)`.
    Select {
        /// Selector (integer).
        on: Expr,
        /// Cases: values and body.
        cases: Vec<(Vec<i64>, Vec<Stmt>)>,
        /// `case default`.
        default: Vec<Stmt>,
    },
    /// `if (cond) exit` (leaves the innermost loop).
    Exit(Expr),
    /// `if (cond) return`.
    Return(Expr),
    /// `10 continue; body; if (cond) goto 10`.
    GotoLoop {
        /// Body.
        body: Vec<Stmt>,
        /// Jump back while this holds (bounded by a counter).
        cond: Expr,
    },
    /// A statement the front end did not translate but that changes no
    /// value (a pragma): an inert `Marker`.
    Marker,
    /// `if (cond) goto 20; body; 20 continue`.
    GotoSkip {
        /// Condition of the jump.
        cond: Expr,
        /// Statements skipped when it holds.
        body: Vec<Stmt>,
    },
}

/// A routine.
#[derive(Clone, Debug, PartialEq)]
pub struct Routine {
    /// Fortran name.
    pub name: String,
    /// Formals in order.
    pub formals: Vec<Var>,
    /// Whether the routine (or a routine it calls) may write each formal.
    pub written: Vec<bool>,
    /// Formals the routine assigns before it reads them (`intent(out)`):
    /// callers may pass passive variables that may hold anything.
    pub out: Vec<bool>,
    /// Optional formals: read only under `if (present(f))`, so that
    /// callers may leave them out.
    pub optional: Vec<bool>,
    /// Locals.
    pub locals: Vec<Var>,
    /// Body.
    pub body: Vec<Stmt>,
    /// Whether the XAIF marks the CFG `structured="0"` (only done when it
    /// has jumps; otherwise the engine has to find out itself).
    pub mark_unstructured: bool,
    /// Whether the XAIF carries the routine's side-effect lists (optional
    /// in XAIF: hand-written XAIF and other front ends leave them out).
    /// Without them the reference engine checkpoints nothing, and joint
    /// mode runs the routine again at its reversal from its arguments as
    /// they are then; xaifb infers the `Read` list instead. The builder
    /// leaves them out of kernels (see `kernel`), and of some other
    /// routines, which only an engine that infers the list gets right.
    pub side_effect_lists: bool,
    /// A routine whose run again from its arguments at its reversal is the
    /// same run, lists or not: it touches no global, reads no formal it
    /// writes (every formal is read-only or `intent(out)`), and every
    /// caller passes, where it reads, constants or variables the caller
    /// never changes after its prologue, with constant subscripts.
    pub kernel: bool,
    /// Number of leading statements of `body` that give the locals (and in
    /// `head` the globals and `y`) their first values.
    pub prologue: usize,
}

impl Routine {
    /// A structured routine with its side-effect lists that may write every
    /// formal, none `intent(out)` or optional, its first `prologue`
    /// statements passive set-up: the routine hand-written test programs
    /// need, built in one place.
    pub fn plain(
        name: &str,
        formals: Vec<Var>,
        locals: Vec<Var>,
        body: Vec<Stmt>,
        prologue: usize,
    ) -> Routine {
        let n = formals.len();
        Routine {
            name: name.into(),
            formals,
            written: vec![true; n],
            out: vec![false; n],
            optional: vec![false; n],
            locals,
            body,
            mark_unstructured: false,
            side_effect_lists: true,
            kernel: false,
            prologue,
        }
    }
}

/// A generated program: `head(x(n), y(m))` and the routines it calls.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// Number of independents.
    pub n: usize,
    /// Number of dependents.
    pub m: usize,
    /// Globals (module variables).
    pub globals: Vec<Var>,
    /// Routines; `routines[0]` is `head`, and a routine only calls
    /// routines after it.
    pub routines: Vec<Routine>,
    /// Per routine and global, whether the routine refers to the global
    /// under a symbol of its own (`G_7` beside `G_3`, one storage).
    pub own_global_symbol: Vec<Vec<bool>>,
}

impl Program {
    /// The variable `v` of routine `r`.
    pub fn var(&self, r: usize, v: VarId) -> &Var {
        match v {
            VarId::Global(g) => &self.globals[g],
            VarId::Formal(f) => &self.routines[r].formals[f],
            VarId::Local(l) => &self.routines[r].locals[l],
        }
    }

    /// Names of variables that are active but never read, and that no
    /// other variable of the program shares (`-p` forces names passive
    /// program-wide): safe to force passive.
    pub fn dead_names(&self) -> Vec<String> {
        let all: Vec<&Var> = self
            .globals
            .iter()
            .chain(self.routines.iter().flat_map(|r| r.locals.iter()))
            .chain(self.routines.iter().flat_map(|r| r.formals.iter()))
            .collect();
        let mut out: Vec<String> = Vec::new();
        for v in &all {
            let unique = all.iter().all(|w| w.name != v.name || w.role == Role::Dead);
            if v.role == Role::Dead && unique && !out.contains(&v.name) {
                out.push(v.name.clone());
            }
        }
        out
    }
}
