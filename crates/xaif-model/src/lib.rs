//! The XAIF model: read, validate and write the XML interface format of the
//! OpenAD tool chain.
//!
//! Every part of xaifb stands on this crate. It reads everything a real front
//! end or the reference engine writes ([`read_file`], [`read_str`]), keeps it
//! losslessly in an arena-based IR ([`Program`]), says precisely what is wrong
//! with bad input ([`validate`], errors with file, line, column and element),
//! and writes it back deterministically ([`write_program`]).
//!
//! The crate knows nothing about differentiation: no pass, no analysis, no
//! interpreter. Passes read and build the IR through the types here and keep
//! their results in side tables keyed by the handles of [`arena`].

pub mod arena;
pub mod attrs;
pub mod build;
pub mod catalogue;
pub mod error;
pub mod index;
pub mod model;
pub mod reader;
pub mod source;
pub mod terse;
pub mod validate;
pub mod writer;

pub use arena::{Arena, Id, SecondaryMap};
pub use attrs::{Attr, Attrs, Span};
pub use build::ExprBuilder;
pub use catalogue::{InlinableCatalogue, InlinableIntrinsic, NonInlinable, NonInlinableCatalogue};
pub use error::{ErrorKind, IdKind, ModelError, ModelErrors, RefKind};
pub use index::{
    base_name, formals_maybe_absent, fortran_routine_name, shape_rank, CfgGraph, Decoration,
    ExprGraph, RoutineIndex, SymbolIndex, SymbolKind, SymbolType, STORE_ORDER_ENTRY,
    TYPE_CHANGE_ENTRY,
};
pub use model::*;
pub use reader::{
    read_bytes, read_file, read_program_file, read_program_str, read_str, source_map, Document,
    Parsed,
};
pub use source::SourceMap;
pub use validate::{
    validate_document, validate_inlinable, validate_noninlinable, validate_program,
    validate_program_with_arities,
};
pub use writer::{
    write_document, write_footer_to, write_header_to, write_inlinable, write_item_to,
    write_noninlinable, write_program, write_program_to,
};
