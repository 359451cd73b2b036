//! Checkpointing schedules for the adjoints of loops.
//!
//! The adjoint of a loop of `l` steps needs the steps' intermediate states
//! in reverse order. Taping every step needs memory proportional to `l`;
//! checkpointing keeps at most `s` loop states (snapshots) and recomputes
//! the others from the nearest snapshot. This crate decides what to do
//! next for every kind of loop `xaifb` reverses, behind one interface
//! ([`LoopSchedule`]):
//!
//! - [`revolve`]: Griewank and Walther's binomial checkpointing (ACM TOMS
//!   Algorithm 799, "Revolve") of a loop whose trip count is known when it
//!   starts, with the fewest forward steps any schedule with `s` snapshots
//!   can take, `t(l, s) = r·l − C(s + r, s + 1)`, `r` the least integer
//!   with `C(s + r, s) ≥ l` ([`min_forward_steps`]);
//! - [`online`]: online checkpointing of a loop whose trip count is known
//!   only at its end (while loops, loops left by an exit), keeping the
//!   least repetition number at every iteration;
//! - [`fixed_point`]: Christianson's two-phase adjoint of a fixed-point
//!   iteration;
//! - [`independent`]: a loop of independent iterations, each taped and
//!   reversed on its own from the loop's entry state;
//! - [`binomial`]: the binomial numbers, the repetition number, `t(l, s)`
//!   and the place of the next snapshot;
//! - [`runtime`]: what a program running a checkpointed adjoint calls:
//!   loop instances begun in the taping sweep, paused, resumed by the
//!   adjoint sweep, nested, with the integer action codes the generated
//!   code dispatches on, and what each instance did
//!   ([`repetitions`]: how often each step ran untaped).
//!
//! The crate knows nothing of XAIF: the interpreter (`xaif-interp`)
//! executes the generated run-time calls with it, the tests check the
//! schedules' optimality with it, and the Fortran run-time module under
//! `runtime/` implements the same schedules for compiled adjoints (a test
//! compares the two action by action).

pub mod binomial;
pub mod fixed_point;
pub mod independent;
pub mod online;
pub mod repetitions;
pub mod revolve;
pub mod runtime;
pub mod schedule;

pub use binomial::{binomial, min_forward_steps, repetitions};
pub use revolve::Binomial;
pub use runtime::{Finished, Runtime, RuntimeError, Sweep};
pub use schedule::{Action, Drops, Kind, LoopSchedule, Report};
