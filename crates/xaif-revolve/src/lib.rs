//! Binomial checkpointing for the adjoints of long loops.
//!
//! The adjoint of a loop of `l` steps needs the steps' intermediate states
//! in reverse order. Taping every step needs memory proportional to `l`;
//! Griewank and Walther's binomial checkpointing (ACM TOMS Algorithm 799,
//! "Revolve") keeps at most `s` loop states (snapshots) and recomputes the
//! others from the nearest snapshot, with the fewest forward steps any
//! schedule with `s` snapshots can take:
//!
//! `t(l, s) = r·l − C(s + r, s + 1)`, `r` the least integer with
//! `C(s + r, s) ≥ l` ([`min_forward_steps`]).
//!
//! - [`binomial`]: the binomial numbers, the repetition number `r`,
//!   `t(l, s)` and the place of the next snapshot;
//! - [`schedule`]: the schedule of one loop instance as a sequence of
//!   [`Action`]s (store, restore, advance, tape one step, reverse it),
//!   computed one action at a time;
//! - [`runtime`]: what a program running a checkpointed adjoint calls:
//!   loop instances begun in the taping sweep, paused, resumed by the
//!   adjoint sweep, nested (two-level hierarchical checkpointing), with
//!   the integer action codes the generated code dispatches on.
//!
//! The crate knows nothing of XAIF: the interpreter (`xaif-interp`)
//! executes the generated run-time calls with it, the tests check the
//! schedule's optimality with it, and the Fortran run-time module under
//! `runtime/` implements the same schedule for compiled adjoints (a test
//! compares the two action by action).

pub mod binomial;
pub mod runtime;
pub mod schedule;

pub use binomial::{binomial, min_forward_steps, repetitions};
pub use runtime::{Finished, Runtime, RuntimeError, Sweep};
pub use schedule::{Action, Schedule};
