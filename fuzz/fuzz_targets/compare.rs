//! Fuzz target `compare`: arbitrary bytes as two Jacobian files (`ad.out`
//! format) and the tolerances of `xaifb compare`.
//!
//! Jacobian files come from other tools and from users; parsing them and
//! comparing them must give a result or an error for any text, never a
//! panic, an allocation sized by an index in the file, or a pass on
//! non-finite numbers. The input is split at its first NUL byte into the
//! two files; the last 16 bytes (when present) give the relative and
//! absolute tolerances, any bit pattern included.

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
    let (rel, abs) = if tol.len() == 16 {
        (
            f64::from_le_bytes(tol[..8].try_into().expect("8 bytes")),
            f64::from_le_bytes(tol[8..].try_into().expect("8 bytes")),
        )
    } else {
        (1e-10, 1e-13)
    };
    if let Ok(c) = xaif_interp::compare(&ja, &jb, rel, abs) {
        // A pass means every entry is a finite number within the
        // tolerances.
        if c.matches() {
            assert!(
                ja.entries.iter().chain(&jb.entries).all(|x| x.is_finite()),
                "compare passes non-finite entries"
            );
        }
    }
});
