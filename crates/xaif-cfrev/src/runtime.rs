//! The contract between the code `--checkpoint-loop` generates and the
//! run-time support that executes it (`runtime/oad_revolve.f90` with
//! `runtime/oad_revolve_snapshots.f90` in a compiled adjoint, the
//! interpreter in `xaifb run`): which call stores and restores a loop state
//! variable, which variables a snapshot can hold, and which integers the
//! calls can take.
//!
//! Every state variable is stored with `oad_revolve_store(x)` and
//! restored with `oad_revolve_restore(x)`: Fortran generic interfaces, so
//! the compiler picks the specific procedure from the variable's
//! declaration (type, kind, rank), whatever the XAIF says about it. What
//! the generic covers is [`HELD_TYPES`] for ranks 0 to 7; `cargo xtask
//! runtime` generates the snapshot module from that table, and
//! [`snapshot_type`] refuses, before anything is emitted, a state variable
//! whose type and kind are not in it (`docs/checkpointing.md`,
//! `docs/decisions.md`).

use xaif_model::{Symbol, SymbolType};

/// The call that appends a state variable to the snapshot being stored.
pub const STORE_CALL: &str = "oad_revolve_store";

/// The call that reads a state variable back from the snapshot being
/// restored.
pub const RESTORE_CALL: &str = "oad_revolve_restore";

/// The largest integer a run-time call argument can take: integers reach
/// the calls (`oad_revolve_begin(n, s, line)`, `oad_revolve_resume(line)`)
/// as literals, which the back end writes as default Fortran integers
/// (32 bits).
pub const MAX_CALL_INTEGER: u64 = i32::MAX as u64;

/// Why a count given on the command line cannot reach a run-time call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CountError {
    /// Not a decimal number.
    NotANumber,
    /// A number above [`MAX_CALL_INTEGER`] (or beyond any integer).
    TooLarge,
}

/// Parses a non-negative decimal count that will be written into a
/// run-time call, refusing what the call cannot take: one rule for every
/// integer a flag passes to the run-time.
pub fn call_integer(text: &str) -> Result<u64, CountError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CountError::NotANumber);
    }
    match text.parse::<u64>() {
        Ok(n) if n <= MAX_CALL_INTEGER => Ok(n),
        _ => Err(CountError::TooLarge),
    }
}

/// How the snapshot module holds a variable of one [`HeldType`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holding {
    /// An intrinsic type of one kind: its bits.
    Value,
    /// A character string of any length (`character(len=*)`).
    Chars,
    /// OpenAD's active type: the value part (`x%v`), the derivative left
    /// alone.
    Active,
}

/// A Fortran type the snapshot module holds, and the XAIF symbols that
/// the OpenAD back end declares with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldType {
    /// The declaration of the module's dummy argument (kinds named by
    /// `iso_fortran_env`, so distinct on every compiler).
    pub fortran: &'static str,
    /// The short name in the module's specific procedures (`store_i8_3`).
    pub tag: &'static str,
    /// How it is held.
    pub holding: Holding,
    /// The XAIF type of the symbols declared so (for [`Holding::Active`]:
    /// every active `real`).
    pub xaif: SymbolType,
    /// Their `feType`s: the front end's storage type (WHIRL's machine
    /// types, `I8` for `integer(8)`, `F4` for `real(4)`; a logical is an
    /// integer machine type, and `L4` is taken for `logical(4)` as
    /// generated and hand-written XAIF spell it); empty for any.
    pub fe_types: &'static [&'static str],
}

const fn held(
    fortran: &'static str,
    tag: &'static str,
    xaif: SymbolType,
    fe_types: &'static [&'static str],
) -> HeldType {
    HeldType {
        fortran,
        tag,
        holding: Holding::Value,
        xaif,
        fe_types,
    }
}

/// Every type and kind a snapshot holds, each for ranks 0 to 7.
/// A symbol without a `feType` has its type's default kind, which is one
/// of these on every compiler.
pub const HELD_TYPES: &[HeldType] = &[
    held("integer(int8)", "i1", SymbolType::Integer, &["I1", "U1"]),
    held("integer(int16)", "i2", SymbolType::Integer, &["I2", "U2"]),
    held("integer(int32)", "i4", SymbolType::Integer, &["I4", "U4"]),
    held("integer(int64)", "i8", SymbolType::Integer, &["I8", "U8"]),
    held("real(real32)", "r4", SymbolType::Real, &["F4"]),
    held("real(real64)", "r8", SymbolType::Real, &["F8"]),
    held("real(real128)", "r16", SymbolType::Real, &["F16", "FQ"]),
    held("complex(real32)", "c4", SymbolType::Complex, &["C4"]),
    held("complex(real64)", "c8", SymbolType::Complex, &["C8"]),
    held(
        "complex(real128)",
        "c16",
        SymbolType::Complex,
        &["C16", "CQ"],
    ),
    held("logical(int8)", "l1", SymbolType::Bool, &["I1", "U1", "L1"]),
    held(
        "logical(int16)",
        "l2",
        SymbolType::Bool,
        &["I2", "U2", "L2"],
    ),
    held(
        "logical(int32)",
        "l4",
        SymbolType::Bool,
        &["I4", "U4", "L4"],
    ),
    held(
        "logical(int64)",
        "l8",
        SymbolType::Bool,
        &["I8", "U8", "L8"],
    ),
    HeldType {
        fortran: "character(len=*)",
        tag: "ch",
        holding: Holding::Chars,
        xaif: SymbolType::String,
        fe_types: &[],
    },
    HeldType {
        fortran: "type(active)",
        tag: "a",
        holding: Holding::Active,
        xaif: SymbolType::Real,
        fe_types: &[],
    },
];

/// The [`HeldType`] a snapshot holds symbol `sym` as, or why a snapshot
/// cannot hold it (a phrase naming its type and kind).
pub fn snapshot_type(sym: &Symbol) -> Result<&'static HeldType, String> {
    let ty = sym.ty();
    let fe = sym.fe_type();
    let entries = || {
        HELD_TYPES
            .iter()
            .filter(move |h| h.holding == Holding::Value)
    };
    match ty {
        SymbolType::Real if sym.is_active() => {
            return Ok(HELD_TYPES
                .iter()
                .find(|h| h.holding == Holding::Active)
                .expect("the table has the active type"));
        }
        SymbolType::Complex if sym.is_active() => {
            return Err("an active complex, which OpenAD's active type (a real) cannot be".into())
        }
        SymbolType::String | SymbolType::Char => {
            return Ok(HELD_TYPES
                .iter()
                .find(|h| h.holding == Holding::Chars)
                .expect("the table has strings"));
        }
        SymbolType::Opaque | SymbolType::Void => {
            let what = if fe == "M" {
                "a derived type".to_string()
            } else if fe.is_empty() {
                format!("of type {}", ty.name())
            } else {
                format!("of type {} (feType {fe})", ty.name())
            };
            return Err(what);
        }
        _ => {}
    }
    let same_type = || entries().filter(move |h| h.xaif == ty);
    if fe.is_empty() {
        // The type's default kind, one the module holds on every compiler;
        // the usual one (OpenAD's back end declares a real without a
        // `feType` as `real(8)`) stands for it.
        return same_type()
            .find(|h| matches!(h.tag, "i4" | "r8" | "c8" | "l4"))
            .ok_or_else(|| format!("of type {}", ty.name()));
    }
    if let Some(h) = same_type().find(|h| h.fe_types.contains(&fe)) {
        return Ok(h);
    }
    let kinds: Vec<String> = same_type()
        .map(|h| format!("{} ({})", h.fortran, h.fe_types.join(", ")))
        .collect();
    Err(format!(
        "of type {} and feType {fe}, a kind the run-time module does not hold (it holds {})",
        ty.name(),
        kinds.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_beyond_a_default_fortran_integer_are_refused() {
        assert_eq!(call_integer("10"), Ok(10));
        assert_eq!(call_integer("2147483647"), Ok(2_147_483_647));
        assert_eq!(call_integer("2147483648"), Err(CountError::TooLarge));
        assert_eq!(
            call_integer("18446744073709551615"),
            Err(CountError::TooLarge)
        );
        assert_eq!(
            call_integer("99999999999999999999999999"),
            Err(CountError::TooLarge)
        );
        for bad in ["", "x", "-1", "+3", "1e3", " 4"] {
            assert_eq!(call_integer(bad), Err(CountError::NotANumber), "{bad}");
        }
    }

    #[test]
    fn the_table_names_each_type_once() {
        let mut tags: Vec<&str> = HELD_TYPES.iter().map(|h| h.tag).collect();
        tags.sort_unstable();
        tags.dedup();
        assert_eq!(tags.len(), HELD_TYPES.len());
        let mut fortran: Vec<&str> = HELD_TYPES.iter().map(|h| h.fortran).collect();
        fortran.sort_unstable();
        fortran.dedup();
        assert_eq!(fortran.len(), HELD_TYPES.len());
    }
}
