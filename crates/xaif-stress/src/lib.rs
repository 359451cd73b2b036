//! Differential checks of the whole pipeline on generated programs
//! (`xaif_testkit::gen`): the tangent against divided differences, the
//! split and joint adjoints against the tangent with every tape empty,
//! every elimination strategy and flag variant against the default,
//! deterministic and schema-valid outputs, no panic, a step budget; the
//! checkpointing variant ([`loops`]); and campaigns of many programs that
//! shrink what fails to a small program.

pub mod campaign;
pub mod check;
pub mod corpus_loops;
pub mod loops;

pub use check::{Checker, Finding, Limits, Outcome};
