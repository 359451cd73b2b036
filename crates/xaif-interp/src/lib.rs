//! The numerical oracle: executes XAIF and computes Jacobians.
//!
//! No transformation can be trusted until its output runs. The reference
//! tool chain checks derivatives only after a Fortran compiler has seen them;
//! this crate checks them at the XAIF level, for xaifb's own output and for
//! anyone else's. It executes original programs, tangent-linear outputs and
//! adjoint outputs (under the split and the joint subroutine template) with
//! the meaning `../shared/docs/xaif-semantics.md` gives them, and drives
//! them like the OpenAD regression suite does to produce Jacobians in the
//! suite's `ad.out` format.
//!
//! Pipeline: [`compile`] lowers a validated [`xaif_model::Program`] once
//! (symbols to storage locations, names to operations); a [`Harness`]
//! allocates the top routine's arguments and runs the [`Machine`]. What the
//! XAIF does not carry (routines without a body, markers for dropped stores,
//! I/O, pointers) is refused with an [`InterpError`] naming the construct and
//! its line; runaway programs, unbounded recursion and oversized arrays stop
//! at the [`Limits`] of the run.
//!
//! The interpreter depends only on the model; no transformation depends on
//! it.

pub mod compile;
pub mod corpus;
pub mod error;
pub mod exec;
pub mod harness;
pub mod intrinsics;
pub mod jacobian;
pub mod kind;
pub mod limits;
pub mod memory;
pub mod value;

pub use compile::{compile, compile_with, CompileOptions, Prog};
pub use error::{ErrorKind, InterpError};
pub use exec::{Flags, LoopRecord, Machine, Stats, Template};
pub use harness::{ArgSlot, Harness, HarnessSpec, Mode, Outcome, Params};
pub use jacobian::{compare, fortran_en, Comparison, Jacobian};
pub use kind::ProgramKind;
pub use limits::Limits;
