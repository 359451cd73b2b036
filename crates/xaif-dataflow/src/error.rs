//! Typed errors of the analyses.
//!
//! The analyses themselves cannot fail on a program that passed the
//! validation gate; what can be wrong is what the user asks for (a routine
//! or variable that does not exist, a malformed `ROUTINE:VARIABLE`), or a
//! routine too large for the analysis budget.

/// What can go wrong when asking for an analysis.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DataflowError {
    /// A `ROUTINE:VARIABLE` specification without both parts.
    #[error("bad variable specification `{0}`: expected ROUTINE:VARIABLE")]
    BadSpec(String),
    /// No analysed routine has this Fortran name.
    #[error("no routine `{routine}` with a body (routines: {known})")]
    UnknownRoutine {
        /// The name asked for.
        routine: String,
        /// The names that exist.
        known: String,
    },
    /// The routine neither declares nor reaches this variable.
    #[error("routine `{routine}` has no variable `{variable}`")]
    UnknownVariable {
        /// The routine.
        routine: String,
        /// The variable asked for.
        variable: String,
    },
    /// A routine whose facts and summaries would exceed the budget.
    #[error("routine `{routine}` is too large to analyse: {slots} variable slots, {statements} statements and {loops} loops need up to {cost} words of data-flow facts, more than the budget of {budget} (raise it with --analysis-budget)")]
    TooLarge {
        /// The routine's Fortran name.
        routine: String,
        /// Where the routine's element starts (for a located message).
        span: xaif_model::Span,
        /// Slots of its universe.
        slots: usize,
        /// Statements of its body.
        statements: usize,
        /// Loops of its body (when structured).
        loops: usize,
        /// [`crate::routine_cost`].
        cost: u64,
        /// The budget.
        budget: u64,
    },
}
