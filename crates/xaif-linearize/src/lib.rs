//! Linearization and Jacobian preaccumulation of basic blocks, and the
//! tangent-linear transformation.
//!
//! Statements are linearized with the partials of the inlinable intrinsics
//! catalogue ([`catalogue`], [`linearize`]); the assignments of a basic
//! block are flattened into sequences whose linearized computational graphs
//! are merged ([`flatten`]); each sequence's graph is preaccumulated by
//! `xaif-elim` into Jacobian accumulation assignments and a remainder graph
//! ([`preaccumulate`]); [`tangent`] turns the remainder into forward
//! derivative propagation. The adjoint transformation reuses the same
//! preaccumulation and transposes the propagation.
//!
//! The crate reads and writes XAIF only through `xaif-model`; it never
//! depends on the interpreter (tests use it to check derivatives).

pub mod absent;
pub mod adjoint;
pub mod ahead;
pub mod builtin;
pub mod catalogue;
pub mod context;
pub mod dag;
pub mod flatten;
pub mod freeze;
pub mod large;
pub mod linearize;
pub mod preaccumulate;
pub mod rename;
pub mod tangent;
pub mod temps;
pub mod typechange;

pub use builtin::builtin;
pub use catalogue::Catalogue;
pub use flatten::FlattenOptions;
pub use tangent::{
    tangent, tangent_streamed, RoutineSink, TangentOptions, TransformError, TransformStats,
    Transformed,
};
pub use typechange::{typechange, TypeChangeOptions};
