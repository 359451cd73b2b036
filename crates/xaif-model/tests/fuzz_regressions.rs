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

/// A program whose assignment's right-hand side nests subscripts `levels`
/// deep: each level is four elements (`VariableReference`,
/// `ArrayElementReference`, `IndexTriplet`, `Index`), and reading, gating and
/// writing each recurse once per level.
fn nested_subscripts(levels: usize) -> String {
    let open = r#"<xaif:VariableReference vertex_id="1"><xaif:ArrayElementReference vertex_id="1"><xaif:IndexTriplet><xaif:Index>"#;
    let close =
        "</xaif:Index></xaif:IndexTriplet></xaif:ArrayElementReference></xaif:VariableReference>";
    format!(
        r#"<?xml version="1.0"?><xaif:CallGraph xmlns:xaif="http://www.mcs.anl.gov/XAIF"><xaif:ScopeHierarchy/><xaif:ControlFlowGraph><xaif:BasicBlock><xaif:Assignment><xaif:AssignmentLHS/><xaif:AssignmentRHS>{}{}</xaif:AssignmentRHS></xaif:Assignment></xaif:BasicBlock></xaif:ControlFlowGraph></xaif:CallGraph>"#,
        open.repeat(levels),
        close.repeat(levels)
    )
}

/// Runs `f` on a thread with the default 2 MiB stack of spawned threads
/// (xaifb's batch workers), so that a stack overflow aborts the test binary
/// instead of passing on a larger main-thread stack.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

/// Found by hand while fuzzing (libFuzzer's inputs are too short to nest this
/// deep): 1000 levels of nested subscripts (200 kB) overflowed the stack of
/// a 2 MiB thread in the reader, aborting the whole process. The reader now
/// rejects nesting beyond `MAX_DEPTH` elements with an error.
#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let errors = on_small_stack(|| {
        let text = nested_subscripts(2000);
        match xaif_model::read_str(&text, Some("deep.xaif")) {
            Ok(_) => None,
            Err(e) => Some(e.to_string()),
        }
    })
    .expect("deep nesting is rejected");
    assert!(errors.contains("nested more than"), "{errors}");
    assert!(errors.contains("deep.xaif:1:"), "{errors}");
}

/// Just inside the limit, reading, gating, writing and re-reading all fit in
/// a 2 MiB stack.
#[test]
fn nesting_up_to_the_limit_round_trips_on_a_small_stack() {
    // Six enclosing elements plus four per level.
    let levels = (xaif_model::reader::MAX_DEPTH - 6) / 4;
    let equal = on_small_stack(move || {
        let parsed = xaif_model::read_str(&nested_subscripts(levels), None).expect("reads");
        let _ = xaif_model::validate_document(&parsed.document, &parsed.source);
        let text = xaif_model::write_document(&parsed.document);
        let again = xaif_model::read_str(&text, None).expect("written text reads back");
        again.document == parsed.document
    });
    assert!(equal);
}
