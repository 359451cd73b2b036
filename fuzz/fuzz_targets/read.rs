//! Fuzz target `read`: arbitrary bytes through the whole model pipeline.
//!
//! The reader is the one place where untrusted text enters xaifb, so it must
//! turn any input into either a document or an error, never a panic or a
//! hang; the validation gate must then handle whatever the reader accepted
//! (it runs on models whose ids and references are arbitrary); and the writer
//! must produce text that reads back to the same model, or a round trip
//! through xaifb would change a program.
//!
//! "The same model" allows one documented difference: the writer uses fixed
//! namespace prefixes and declares on the root each one the stored root
//! attributes do not declare (an input may bind the XAIF namespace to another
//! prefix, or declare it as the default namespace). The re-read root then
//! carries those declarations; they are removed before comparing. Writing
//! the re-read model must give the same bytes again (a fixpoint).

#![no_main]

use libfuzzer_sys::fuzz_target;
use xaif_model::{Attrs, Document};

/// Namespace declarations the writer adds to a root that lacks them.
const WRITER_DECLARATIONS: [&str; 3] = ["xmlns:xaif", "xmlns:xaifii", "xmlns:xaifnii"];

fn root_attrs(doc: &mut Document) -> &mut Attrs {
    match doc {
        Document::Program(p) => &mut p.attrs,
        Document::Inlinable(c) => &mut c.attrs,
        Document::NonInlinable(c) => &mut c.attrs,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(mut parsed) = xaif_model::read_bytes(data, None) else {
        return;
    };
    // Errors are fine here; only panics and hangs are findings.
    let _ = xaif_model::validate_document(&parsed.document, &parsed.source);
    let text = xaif_model::write_document(&parsed.document);
    let mut again = match xaif_model::read_str(&text, None) {
        Ok(again) => again.document,
        Err(e) => panic!("written text does not read back: {e}\n{text}"),
    };
    assert_eq!(
        xaif_model::write_document(&again),
        text,
        "writing the re-read model gives different text"
    );
    let first = root_attrs(&mut parsed.document);
    let added: Vec<&str> = WRITER_DECLARATIONS
        .into_iter()
        .filter(|key| !first.has(key))
        .collect();
    let second = root_attrs(&mut again);
    for key in added {
        second.remove(key);
    }
    assert!(
        again == parsed.document,
        "re-read model differs from the first\n{text}"
    );
});
