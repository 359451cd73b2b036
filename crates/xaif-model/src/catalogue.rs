//! Intrinsic catalogues.
//!
//! The inlinable catalogue (`xaif_inlinable_intrinsics.xsd`) gives, per
//! intrinsic, its arity and one partial derivative expression per argument;
//! linearization instantiates those expressions. The non-inlinable catalogue
//! lists intrinsics that are differentiated by a direct action or an explicit
//! Jacobian. Both are XAIF documents of their own and are read, validated and
//! written by the same machinery as programs.

use crate::attrs::Attrs;
use crate::model::Expr;

/// Namespace of the program elements.
pub const XAIF_NS: &str = "http://www.mcs.anl.gov/XAIF";
/// Namespace of the inlinable intrinsics catalogue.
pub const INLINABLE_NS: &str = "http://www.mcs.anl.gov/XAIFInlinableIntrinsics";
/// Namespace of the non-inlinable intrinsics catalogue.
pub const NONINLINABLE_NS: &str = "http://www.mcs.anl.gov/XAIFNonInlinableIntrinsics";

/// The most arguments (`nr_arguments`) an inlinable intrinsic may take.
/// Fortran's intrinsics take at most a handful (the reference catalogue
/// none above 2); the bound keeps a catalogue's number from sizing the
/// table of partials built from it.
pub const MAX_ARGUMENTS: usize = 1024;

/// `InlinableIntrinsicDefinitions`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InlinableCatalogue {
    /// Attributes of the root element (`language`, namespace declarations).
    pub attrs: Attrs,
    /// The intrinsics in document order.
    pub intrinsics: Vec<InlinableIntrinsic>,
}

/// One `InlinableIntrinsic`.
#[derive(Clone, Debug, PartialEq)]
pub struct InlinableIntrinsic {
    /// Attributes (`name`, `nr_arguments`, `return_type`, `nonSmooth`,
    /// `shapeChange`).
    pub attrs: Attrs,
    /// `Function`: an expression (often empty) whose attributes say whether
    /// the function is a builtin and its builtin name.
    pub function: Expr,
    /// `Partial`s: expressions over `ArgumentReference`s, with `partial_id`,
    /// `partial_type` and `nonValueInquiry` attributes.
    pub partials: Vec<Expr>,
}

impl InlinableIntrinsic {
    /// The intrinsic's name (`sin_scal`, `mul_scal_scal`, …).
    pub fn name(&self) -> &str {
        self.attrs.get("name").unwrap_or("")
    }
}

impl InlinableCatalogue {
    /// The intrinsic called `name`.
    pub fn get(&self, name: &str) -> Option<&InlinableIntrinsic> {
        self.intrinsics.iter().find(|i| i.name() == name)
    }
}

/// `NonInlinableIntrinsicDefinitions`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NonInlinableCatalogue {
    /// Attributes of the root element.
    pub attrs: Attrs,
    /// The entries in document order.
    pub entries: Vec<NonInlinable>,
}

/// One non-inlinable intrinsic.
#[derive(Clone, Debug, PartialEq)]
pub enum NonInlinable {
    /// `ExplicitJacobian` with its `Partial` (`dep`, `indep`, `partial`)
    /// children.
    ExplicitJacobian {
        /// Attributes (`name`, `jacobian`, `return_type`, `nonSmooth`).
        attrs: Attrs,
        /// `Partial` attributes.
        partials: Vec<Attrs>,
    },
    /// `DirectAction` (`name`, `derivAction`, `nonSmooth`).
    DirectAction(Attrs),
}

impl NonInlinable {
    /// The entry's attributes.
    pub fn attrs(&self) -> &Attrs {
        match self {
            NonInlinable::ExplicitJacobian { attrs, .. } => attrs,
            NonInlinable::DirectAction(attrs) => attrs,
        }
    }

    /// The intrinsic's name.
    pub fn name(&self) -> &str {
        self.attrs().get("name").unwrap_or("")
    }
}

impl NonInlinableCatalogue {
    /// The entry for intrinsic `name`.
    pub fn get(&self, name: &str) -> Option<&NonInlinable> {
        self.entries.iter().find(|e| e.name() == name)
    }
}
