//! Control flow and call graph reversal: adjoint XAIF.
//!
//! [`region`] recognises structured control flow; [`reverse`] builds the
//! taping and adjoint CFGs of a routine from the taping and adjoint forms of
//! its basic blocks (seed "control flow reversal" §4) with block
//! enumeration for unstructured graphs; [`program`] turns every routine into
//! the `ReplacementList` of OpenAD's subroutine template with argument
//! checkpoints (seed "call graph reversal").
//!
//! [`explicit`] decides which loops run backwards instead of being
//! counted; [`marks`] and [`checkpoint`] find the loops marked
//! `--checkpoint-loop`, `--fixed-point-loop` and `--independent-loop` and
//! decide how each is reversed (binomial or online checkpointing, the
//! two-phase adjoint of a fixed point, independent iterations), and one
//! generator (`loopgen`) makes their code, run-time calls whose schedules
//! live in `xaif-revolve` and whose contract (call names, the types a
//! snapshot holds, the integers a call takes) is [`runtime`]. The crate
//! builds on the basic-block preaccumulation of
//! `xaif-linearize` and on the to-be-recorded analysis of `xaif-dataflow`
//! (argument checkpoints), and writes XAIF through `xaif-model`; it does
//! not depend on the interpreter.

pub mod checkpoint;
pub mod explicit;
pub(crate) mod loopgen;
pub mod marks;
pub mod program;
pub mod region;
pub mod reverse;
pub mod runtime;

pub use program::{
    adjoint, adjoint_streamed, top_routine, AdjointOptions, AdjointResult, TapeStats,
};
