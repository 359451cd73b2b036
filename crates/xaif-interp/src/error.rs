//! Why a program could not be executed.
//!
//! The oracle refuses rather than guesses: anything whose meaning the XAIF
//! does not carry (a routine without a body, a marker standing for a dropped
//! store, I/O, pointers) or that has no defined result (an index out of
//! bounds, a tape popped empty) stops the run with an error naming the
//! construct and where it is.

use std::fmt;

/// What went wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ErrorKind {
    /// A call to a routine the XAIF defines no body for.
    #[error("routine `{0}` has no body in the XAIF (an external routine)")]
    NoBody(String),
    /// A marker for a statement the front end did not translate and that
    /// changes the program's numbers.
    #[error("statement not carried by the XAIF: {0}")]
    UntranslatedStatement(String),
    /// An intrinsic the interpreter does not know.
    #[error("unknown intrinsic `{0}`")]
    UnknownIntrinsic(String),
    /// An inlinable subroutine the interpreter does not know.
    #[error("unknown inlinable subroutine `{0}`")]
    UnknownInlinable(String),
    /// A construct the interpreter cannot execute.
    #[error("cannot execute {0}")]
    Unsupported(String),
    /// A value of the wrong type.
    #[error("type error: {0}")]
    Type(String),
    /// Operands whose shapes do not conform.
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// An array index outside the bounds.
    #[error("index {index} out of bounds {lo}:{hi} in dimension {dim}")]
    OutOfBounds {
        /// The index.
        index: i64,
        /// Lower bound.
        lo: i64,
        /// Upper bound.
        hi: i64,
        /// 1-based dimension.
        dim: usize,
    },
    /// An array read before it was given a shape.
    #[error("array `{0}` is used before it has a shape")]
    Unallocated(String),
    /// A pop from an empty tape or checkpoint stack.
    #[error("{0} is empty")]
    Underflow(String),
    /// A control flow vertex with no edge for the computed branch.
    #[error("no control flow edge for branch value {0}")]
    NoEdge(i64),
    /// A loop with a zero step.
    #[error("DO loop with zero step")]
    ZeroStep,
    /// A run exceeded its step budget.
    #[error("step budget of {0} exhausted in one run (runaway program?)")]
    StepBudget(u64),
    /// A run exceeded its wall-clock time limit.
    #[error("time limit of {0} s exceeded in one run (runaway program?)")]
    TimeLimit(f64),
    /// Calls nested deeper than the call depth limit.
    #[error("call depth limit of {0} exceeded (unbounded recursion?)")]
    CallDepth(usize),
    /// Storage, tapes and checkpoints would hold more elements than the
    /// limit allows (checked before allocating).
    #[error("{what} needs {need} elements; with {live} in use that exceeds the limit of {limit} elements")]
    TooLarge {
        /// What needs the storage (a variable, a tape, the harness).
        what: String,
        /// Elements it needs (saturated at `u128::MAX`).
        need: u128,
        /// Elements already in use.
        live: usize,
        /// The limit.
        limit: usize,
    },
    /// Integer arithmetic of the program whose result does not fit the
    /// integer type (Fortran leaves it undefined; compiled code wraps).
    #[error("integer overflow: {0}")]
    IntegerOverflow(String),
    /// A derivative mode asked of a file that holds no code of that kind.
    #[error("cannot run in {mode} mode: {reason}")]
    WrongMode {
        /// The mode asked for.
        mode: &'static str,
        /// What the file holds instead.
        reason: String,
    },
    /// A divided-difference step that cannot give a meaningful quotient.
    #[error("divided-difference step: {0}")]
    Step(String),
    /// The harness cannot be set up for this program.
    #[error("harness: {0}")]
    Harness(String),
    /// A run-time call of a checkpointed loop out of order
    /// (`oad_revolve_*`, `docs/checkpointing.md`).
    #[error("checkpointed loop: {0}")]
    Checkpointing(String),
}

/// An execution error with the routine and source line where it happened.
#[derive(Clone, Debug, PartialEq)]
pub struct InterpError {
    /// What went wrong.
    pub kind: ErrorKind,
    /// The routine (XAIF `symbol_id`) executing, if any.
    pub routine: Option<String>,
    /// Line in the XAIF file of the element being executed (0 if unknown).
    pub line: u32,
}

impl InterpError {
    /// An error without location yet.
    pub fn new(kind: ErrorKind) -> Self {
        InterpError {
            kind,
            routine: None,
            line: 0,
        }
    }
}

impl From<ErrorKind> for InterpError {
    fn from(kind: ErrorKind) -> Self {
        InterpError::new(kind)
    }
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: ", self.line)?;
        }
        if let Some(r) = &self.routine {
            write!(f, "in `{r}`: ")?;
        }
        write!(f, "{}", self.kind)
    }
}

impl std::error::Error for InterpError {}

/// Result type of the interpreter.
pub type Result<T> = std::result::Result<T, InterpError>;
