//! Inputs the fuzzer (`fuzz/`, target `read`) found to crash the model, kept
//! as regression tests.
//!
//! Each file in `tests/fuzz_regressions/` once made the reader, the gate or
//! the writer panic. The test runs every one through the same pipeline as
//! the fuzz target (read, validate, write, re-read) so the fix stays fixed;
//! a panic in any step fails the test. Add a file here for every crash the
//! fuzzer finds, named after what it exposed.

use std::path::PathBuf;

fn regressions() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the regression directory exists")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_fuzz_regression_runs_without_panicking() {
    let files = regressions();
    assert!(!files.is_empty(), "no regression inputs found");
    for f in files {
        let data = std::fs::read(&f).unwrap();
        let name = f.display().to_string();
        let outcome = std::panic::catch_unwind(|| {
            let Ok(parsed) = xaif_model::read_bytes(&data, Some(&name)) else {
                return;
            };
            let _ = xaif_model::validate_document(&parsed.document, &parsed.source);
            let text = xaif_model::write_document(&parsed.document);
            let again = xaif_model::read_str(&text, None)
                .unwrap_or_else(|e| panic!("written text does not read back: {e}"));
            assert_eq!(xaif_model::write_document(&again.document), text);
        });
        assert!(outcome.is_ok(), "{name} panicked");
    }
}

/// The first crash: an XML declaration whose `encoding=` value starts with a
/// multi-byte character instead of a quote made the encoding sniffer slice a
/// string inside a character. It must be an ordinary error (or read) now.
#[test]
fn multibyte_quote_in_encoding_declaration_is_handled() {
    let text = "<?xml version=\"1.0\" encoding=\u{72a}abc\u{72a}?><r/>";
    let result = xaif_model::read_bytes(text.as_bytes(), None);
    assert!(result.is_err(), "an unknown encoding or root is an error");
}
