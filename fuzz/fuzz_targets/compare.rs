//! Fuzz target `compare`: arbitrary bytes as two Jacobian files (`ad.out`
//! format) and the tolerances of `xaifb compare`.
//!
//! Jacobian files come from other tools and from users; parsing them and
//! comparing them must give a result or an error for any text, never a
//! panic or an allocation sized by an index in the file, and a comparison
//! of what `xaifb compare` accepts (finite entries, finite tolerances not
//! below zero) must never produce NaN differences. The input is split at
//! its first NUL byte into the two files; the last 16 bytes (when present)
//! give the relative and absolute tolerances, any bit pattern included.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (body, tol) = if data.len() > 16 {
        data.split_at(data.len() - 16)
    } else {
        (data, &[][..])
    };
    let (a, b) = match body.iter().position(|&b| b == 0) {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, body),
    };
    let (Ok(a), Ok(b)) = (std::str::from_utf8(a), std::str::from_utf8(b)) else {
        return;
    };
    let (Ok(ja), Ok(jb)) = (
        xaif_interp::Jacobian::parse(a),
        xaif_interp::Jacobian::parse(b),
    ) else {
        return;
    };
    // What `xaifb compare` refuses before comparing: non-finite entries,
    // tolerances that are not finite or negative.
    if ja.first_non_finite().is_some() || jb.first_non_finite().is_some() {
        return;
    }
    let (rel, abs) = if tol.len() == 16 {
        (
            f64::from_le_bytes(tol[..8].try_into().expect("8 bytes")),
            f64::from_le_bytes(tol[8..].try_into().expect("8 bytes")),
        )
    } else {
        (1e-10, 1e-13)
    };
    if !(rel.is_finite() && rel >= 0.0 && abs.is_finite() && abs >= 0.0) {
        return;
    }
    if let Ok(c) = xaif_interp::compare(&ja, &jb, rel, abs) {
        // Finite entries give finite differences (or an infinite one from
        // an overflow), never NaN, so a verdict always means something.
        assert!(
            !c.max_abs.is_nan() && !c.max_rel.is_nan(),
            "a comparison of finite Jacobians gives NaN"
        );
    }
});
