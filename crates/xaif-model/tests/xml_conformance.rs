//! Well-formed in, well-formed out (issue 15, classes 3, 4 and 7):
//!
//! - the reader rejects every character XML 1.0 forbids, raw and as a
//!   character reference, any `DOCTYPE`, and a version other than `1.x`,
//!   each with its line;
//! - the writer never writes what XML 1.0 forbids, whatever a model built
//!   in memory holds: every written document reads back;
//! - UTF-16 reads as the same document as UTF-8.

use proptest::prelude::*;
use xaif_model::{read_bytes, read_str, write_document, Attrs, Document, ErrorKind};

const DOC: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<xaif:CallGraph xmlns:xaif=\"http://www.mcs.anl.gov/XAIF\" program_name=\"VALUE\">\n  <xaif:ScopeHierarchy/>\n</xaif:CallGraph>\n";

fn first_error(bytes: &[u8]) -> (ErrorKind, u32) {
    let e = read_bytes(bytes, Some("t.xaif")).expect_err("rejected");
    let first = &e.errors()[0];
    (first.kind.clone(), first.line)
}

#[test]
fn every_forbidden_character_is_rejected_raw_and_as_a_reference() {
    let forbidden = (0u32..0x20)
        .filter(|c| !matches!(c, 0x9 | 0xA | 0xD))
        .chain([0xFFFE, 0xFFFF]);
    for code in forbidden {
        let c = char::from_u32(code).unwrap();
        let raw = DOC.replace("VALUE", &format!("a{c}b"));
        assert_eq!(
            first_error(raw.as_bytes()),
            (ErrorKind::ForbiddenCharacter(code), 2),
            "raw U+{code:04X}"
        );
        for reference in [format!("&#{code};"), format!("&#x{code:X};")] {
            let text = DOC.replace("VALUE", &format!("a{reference}b"));
            let (kind, line) = first_error(text.as_bytes());
            // quick-xml refuses `&#0;` itself; every other one is ours.
            assert!(
                kind == ErrorKind::ForbiddenCharacter(code)
                    || (code == 0 && matches!(kind, ErrorKind::Xml(_))),
                "{reference}: {kind:?}"
            );
            assert_eq!(line, 2, "{reference}");
        }
    }
    // Allowed characters still read, raw and as references.
    for ok in [
        "a\tb",
        "a&#9;b",
        "a&#xD;b",
        "\u{E000}\u{10FFFF}",
        "&#x10000;",
    ] {
        assert!(read_str(&DOC.replace("VALUE", ok), None).is_ok(), "{ok}");
    }
}

/// The scan for forbidden characters passes over blocks of bytes without
/// a suspect one: a forbidden character at any offset, across block
/// boundaries, and as a three-byte sequence split over two blocks, is
/// found and located, and the first of two is the one reported.
#[test]
fn forbidden_characters_are_found_at_every_offset() {
    let column = |value: &str| {
        let text = DOC.replace("VALUE", value);
        let e = read_bytes(text.as_bytes(), Some("t.xaif")).expect_err("rejected");
        let first = &e.errors()[0];
        (first.kind.clone(), first.line, first.column)
    };
    let (_, _, base) = column("\u{1}");
    for n in 0..200usize {
        for (c, code) in [('\u{1}', 1u32), ('\u{FFFF}', 0xFFFF)] {
            let value = format!("{}{c}b\u{2}", "a".repeat(n));
            assert_eq!(
                column(&value),
                (ErrorKind::ForbiddenCharacter(code), 2, base + n as u32),
                "U+{code:04X} after {n} bytes"
            );
        }
        // Allowed characters with the same lead byte, or below 0x20, at
        // the same offsets still read.
        let value = format!("{}\u{FFFD}\t\u{EFFF}b", "a".repeat(n));
        assert!(read_str(&DOC.replace("VALUE", &value), None).is_ok(), "{n}");
    }
}

#[test]
fn doctypes_and_other_versions_are_rejected() {
    for doctype in [
        "<!DOCTYPE x>",
        "<!DOCTYPE x SYSTEM \"http://example.com/x.dtd\">",
        "<!DOCTYPE x PUBLIC \"-//x//x\" \"x.dtd\">",
        "<!DOCTYPE x [<!ENTITY e \"lol\">]>",
    ] {
        let text = DOC.replacen("<xaif:CallGraph", &format!("{doctype}\n<xaif:CallGraph"), 1);
        assert_eq!(
            first_error(text.as_bytes()),
            (ErrorKind::DocType, 2),
            "{doctype}"
        );
    }
    for version in ["1.p", "2.0", "1.", "one"] {
        let text = DOC.replacen("1.0", version, 1);
        let (kind, line) = first_error(text.as_bytes());
        assert!(matches!(kind, ErrorKind::Xml(_)), "{version}: {kind:?}");
        assert_eq!(line, 1);
    }
    // A declaration anywhere but at the start.
    let late = format!("\n{DOC}");
    assert!(read_str(&late, None).is_err());
    assert!(read_str(&DOC.replacen("1.0", "1.1", 1), None).is_ok());
}

#[test]
fn utf16_reads_as_the_same_document() {
    let text = DOC.replace("VALUE", "Grüße").replacen("UTF-8", "UTF-16", 1);
    let plain = read_str(&DOC.replace("VALUE", "Grüße"), None).unwrap();
    for big_endian in [false, true] {
        let mut bytes = if big_endian {
            vec![0xFE, 0xFF]
        } else {
            vec![0xFF, 0xFE]
        };
        for unit in text.encode_utf16() {
            bytes.extend(if big_endian {
                unit.to_be_bytes()
            } else {
                unit.to_le_bytes()
            });
        }
        let parsed = read_bytes(&bytes, None).unwrap();
        assert_eq!(parsed.document, plain.document);
        // An unpaired surrogate is an error, not a panic.
        let mut broken = bytes.clone();
        let at = broken.len() - 8;
        broken[at..at + 2].copy_from_slice(if big_endian {
            &[0xD8, 0x00]
        } else {
            &[0x00, 0xD8]
        });
        assert!(read_bytes(&broken, None).is_err());
    }
    let declared = read_bytes(text.as_bytes(), None).unwrap_err();
    assert!(matches!(
        declared.errors()[0].kind,
        ErrorKind::EncodingMismatch { .. }
    ));
}

fn program_with_name(value: &str) -> Document {
    let mut doc = read_str(&DOC.replace("VALUE", "x"), None).unwrap().document;
    if let Document::Program(p) = &mut doc {
        p.attrs = Attrs::new().with("program_name", value);
    }
    doc
}

proptest! {
    /// Whatever a model built in memory holds, the writer's output reads
    /// back: forbidden characters become U+FFFD, everything else is kept.
    #[test]
    fn written_documents_are_always_well_formed(value in "\\PC*|[\\x00-\\x1f\\u{fffe}\\u{ffff}a&<>\"']{0,12}") {
        let text = write_document(&program_with_name(&value));
        let back = read_str(&text, None).expect("written text reads back");
        let Document::Program(p) = back.document else { panic!("a program") };
        let expected: String = value
            .chars()
            .map(|c| if xaif_model::reader::is_xml_char(c) { c } else { '\u{FFFD}' })
            .collect();
        prop_assert_eq!(p.attrs.get("program_name"), Some(expected.as_str()));
    }
}
