//! Hostile and malformed inputs at the binary (issue 15, the model and
//! transformation side): each case failed before it was fixed — a panic, an
//! abort, a stack overflow, a wrong message or an ill-formed output — and
//! must now end in a clear, located error or a correct result.
//!
//! - Class 1: catalogue entries and intrinsic uses are checked against each
//!   other at the gate; input-controlled sizes (`nr_arguments`, formal
//!   positions) never size an allocation; a 10⁵-deep expression and
//!   thousands of nested `If`s transform and analyse.
//! - Class 3: a `DOCTYPE` is rejected, its entities never resolved.
//! - Class 4: what XML 1.0 forbids is rejected; a program the output schema
//!   could not accept (no alias, DU-UD or DO map) is refused.
//! - Class 7: UTF-16 XAIF is read; a catalogue with `nr_arguments="0"` is
//!   reported as such.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use xaif_testkit::{deep, repo_root, shared_dir};

fn xaifb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xaifb"))
}

fn scratch(name: &str) -> xaif_testkit::Scratch {
    xaif_testkit::Scratch::new("xaifb-gate", name)
}

fn catalogue_path() -> Option<PathBuf> {
    Some(shared_dir()?.join("xaif/schema/examples/inlinable_intrinsics.xaif"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts a failure with exit code 1 whose message names `file` with a
/// line, and contains every one of `needles`; no panic or abort.
fn refused(o: &Output, file: &Path, needles: &[&str]) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "exit code; stderr:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    let name = file.display().to_string();
    let located = err.lines().any(|l| {
        l.starts_with(&format!("{name}:"))
            && l[name.len() + 1..].starts_with(|c: char| c.is_ascii_digit())
    });
    assert!(located, "no file:line in:\n{err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` missing in:\n{err}");
    }
    err
}

fn validate(file: &Path) -> Output {
    xaifb().arg("validate").arg(file).output().unwrap()
}

fn tangent(catalogue: &Path, input: &Path, out: &Path) -> Output {
    xaifb()
        .arg("tangent")
        .arg("-c")
        .arg(catalogue)
        .arg("-i")
        .arg(input)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

/// A small valid program (`y = sin(sin(sin(x)))`).
fn program() -> String {
    deep::unary_chain(3, "sin_scal")
}

// ------------------------------------------------------------ class 3

#[test]
fn a_doctype_is_rejected_and_its_entities_never_resolved() {
    let dir = scratch("doctype");
    let secret = dir.join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET-LINE\n").unwrap();
    let text = program().replacen(
        "<xaif:CallGraph",
        &format!(
            "<!DOCTYPE x [<!ENTITY % e SYSTEM \"file://{}\"> %e; <!ENTITY s SYSTEM \"file://{}\">]>\n<xaif:CallGraph",
            secret.display(),
            secret.display()
        ),
        1,
    );
    let file = dir.join("doctype.xaif");
    std::fs::write(&file, text).unwrap();
    let o = validate(&file);
    let err = refused(&o, &file, &["DOCTYPE is not allowed"]);
    assert!(err.contains(&format!("{}:2:1:", file.display())), "{err}");
    assert!(!err.contains("TOP-SECRET"), "{err}");
    if let Some(cat) = catalogue_path() {
        let out = dir.join("out.xaif");
        let o = tangent(&cat, &file, &out);
        let err = refused(&o, &file, &["DOCTYPE"]);
        assert!(!err.contains("TOP-SECRET") && !out.exists(), "{err}");
    }
}

// ------------------------------------------------------------ class 4

#[test]
fn characters_xml_forbids_are_rejected_with_their_position() {
    let dir = scratch("chars");
    let cases: [(&str, Vec<u8>, &str); 6] = [
        (
            "control",
            program()
                .replace("program_name=\"deep\"", "program_name=\"de\u{1}ep\"")
                .into_bytes(),
            "U+0001",
        ),
        (
            "reference",
            program()
                .replace("program_name=\"deep\"", "program_name=\"de&#1;ep\"")
                .into_bytes(),
            "U+0001",
        ),
        (
            "nul",
            program()
                .replace("program_name=\"deep\"", "program_name=\"de\0ep\"")
                .into_bytes(),
            "U+0000",
        ),
        (
            "ffff",
            program()
                .replace("program_name=\"deep\"", "program_name=\"de\u{FFFF}ep\"")
                .into_bytes(),
            "U+FFFF",
        ),
        (
            "version",
            program()
                .replacen("version=\"1.0\"", "version=\"1.p\"", 1)
                .into_bytes(),
            "XML version `1.p`",
        ),
        (
            "utf8",
            {
                let mut b = program().into_bytes();
                let at = b.windows(4).position(|w| w == b"deep").unwrap();
                b[at + 1] = 0xFF;
                b
            },
            "not UTF-8",
        ),
    ];
    for (name, bytes, needle) in cases {
        let file = dir.join(format!("{name}.xaif"));
        std::fs::write(&file, bytes).unwrap();
        refused(&validate(&file), &file, &[needle]);
        // Nothing ill-formed is ever written.
        let out = dir.join(format!("{name}.out.xaif"));
        let o = xaifb()
            .arg("roundtrip")
            .arg(&file)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{name}: {}", stderr(&o));
        assert!(!out.exists(), "{name}: output written");
    }
}

#[test]
fn a_program_without_its_maps_is_refused_before_it_becomes_invalid_output() {
    let Some(cat) = catalogue_path() else { return };
    let dir = scratch("maps");
    let bare = "<?xml version=\"1.0\"?>\n<xaif:CallGraph xmlns:xaif=\"http://www.mcs.anl.gov/XAIF\" program_name=\"p\"/>\n";
    let empty_maps = program().replace(
        "<xaif:AliasSetMap><xaif:AliasSet key=\"0\"/></xaif:AliasSetMap>",
        "<xaif:AliasSetMap/>",
    );
    for (name, text, needle) in [
        ("bare", bare.to_string(), "`AliasSetMap` is missing"),
        ("empty", empty_maps, "`AliasSet` is missing"),
    ] {
        let file = dir.join(format!("{name}.xaif"));
        std::fs::write(&file, text).unwrap();
        for command in ["tangent", "adjoint"] {
            let out = dir.join(format!("{name}.{command}.xaif"));
            let o = xaifb()
                .arg(command)
                .arg("-c")
                .arg(&cat)
                .arg("-i")
                .arg(&file)
                .arg("-o")
                .arg(&out)
                .output()
                .unwrap();
            refused(&o, &file, &[needle]);
            assert!(!out.exists(), "{name} {command}: output written");
        }
    }
}

// ------------------------------------------------------------ class 7

fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
    let text = text.replacen("encoding=\"UTF-8\"", "encoding=\"UTF-16\"", 1);
    let mut out = if big_endian {
        vec![0xFE, 0xFF]
    } else {
        vec![0xFF, 0xFE]
    };
    for unit in text.encode_utf16() {
        out.extend(if big_endian {
            unit.to_be_bytes()
        } else {
            unit.to_le_bytes()
        });
    }
    out
}

#[test]
fn utf16_xaif_is_read() {
    let dir = scratch("utf16");
    let text = std::fs::read_to_string(repo_root().join("fixtures/model/all_kinds.xaif")).unwrap();
    let plain = dir.join("plain.xaif");
    std::fs::write(&plain, &text).unwrap();
    let reference = dir.join("plain.out.xaif");
    assert!(xaifb()
        .arg("roundtrip")
        .arg(&plain)
        .arg("-o")
        .arg(&reference)
        .status()
        .unwrap()
        .success());
    for big_endian in [false, true] {
        let file = dir.join(format!("utf16-{big_endian}.xaif"));
        std::fs::write(&file, utf16(&text, big_endian)).unwrap();
        let o = validate(&file);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = dir.join(format!("utf16-{big_endian}.out.xaif"));
        let o = xaifb()
            .arg("roundtrip")
            .arg(&file)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(&reference).unwrap(),
            "the UTF-16 file reads as the same document"
        );
    }
    // Errors in a UTF-16 file are located in its text.
    let bad = text.replacen("program_name=\"all_kinds\"", "program_name=\"a\u{1}\"", 1);
    let file = dir.join("bad.xaif");
    std::fs::write(&file, utf16(&bad, false)).unwrap();
    let err = refused(&validate(&file), &file, &["U+0001"]);
    let line = text
        .lines()
        .position(|l| l.contains("program_name=\"all_kinds\""))
        .unwrap()
        + 1;
    assert!(
        err.contains(&format!("{}:{line}:", file.display())),
        "{err}"
    );
    // UTF-16 declared over bytes that are not: the encoding is named.
    let file = dir.join("declared.xaif");
    std::fs::write(
        &file,
        text.replacen("encoding=\"UTF-8\"", "encoding=\"UTF-16\"", 1),
    )
    .unwrap();
    refused(&validate(&file), &file, &["encoding `UTF-16`"]);
}

// ------------------------------------------------------------ class 1

/// The reference catalogue with `from` replaced by `to` (once).
fn catalogue_with(dir: &Path, name: &str, from: &str, to: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string(catalogue_path()?).unwrap();
    assert!(text.contains(from), "{from}");
    let path = dir.join(format!("{name}.xaif"));
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    Some(path)
}

#[test]
fn catalogue_entries_are_checked_at_the_gate() {
    let dir = scratch("catalogue");
    let input = dir.join("in.xaif");
    std::fs::write(&input, program()).unwrap();
    let sin = "name=\"sin_scal\" nr_arguments=\"1\"";
    let cases = [
        (
            "zero",
            sin,
            "name=\"sin_scal\" nr_arguments=\"0\"",
            vec!["`nr_arguments` has value `0`, expected a positive integer"],
        ),
        (
            "missing",
            sin,
            "name=\"sin_scal\"",
            vec!["required attribute `nr_arguments` is missing"],
        ),
        (
            "overflow",
            sin,
            "name=\"sin_scal\" nr_arguments=\"99999999999999999999\"",
            vec!["expected a positive integer"],
        ),
        (
            // Refused before it could size the table of partials.
            "huge",
            sin,
            "name=\"sin_scal\" nr_arguments=\"99999999999\"",
            vec!["`nr_arguments` is 99999999999, outside 1..=1024"],
        ),
        (
            "argument",
            "<xaifii:ArgumentReference vertex_id=\"2\" argument=\"1\"/>",
            "<xaifii:ArgumentReference vertex_id=\"2\" argument=\"3\"/>",
            vec!["element `ArgumentReference`", "`argument` is 3, outside 0..=1"],
        ),
        (
            "partial",
            "<xaifii:Partial partial_id=\"1\">\n      <xaif:Intrinsic vertex_id=\"1\" name=\"cos_scal\"/>",
            "<xaifii:Partial partial_id=\"2\">\n      <xaif:Intrinsic vertex_id=\"1\" name=\"cos_scal\"/>",
            vec!["`partial_id` is 2, outside 1..=1"],
        ),
    ];
    for (name, from, to, needles) in cases {
        let Some(cat) = catalogue_with(&dir, name, from, to) else {
            return;
        };
        let out = dir.join(format!("{name}.out.xaif"));
        let err = refused(&tangent(&cat, &input, &out), &cat, &needles);
        assert!(!err.contains("no nr_arguments"), "{err}");
        assert!(!out.exists());
    }
    // Up to the limit, an entry with more arguments than its uses pass is
    // fine (they omit optional ones no partial reads).
    let Some(cat) = catalogue_with(&dir, "wide", sin, "name=\"sin_scal\" nr_arguments=\"1024\"")
    else {
        return;
    };
    let out = dir.join("wide.out.xaif");
    let o = tangent(&cat, &input, &out);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn intrinsic_uses_are_checked_against_the_catalogue() {
    let Some(cat) = catalogue_path() else { return };
    let dir = scratch("uses");
    // One operand for a product, two for a sine.
    let one = program().replacen("name=\"sin_scal\"", "name=\"mul_scal_scal\"", 1);
    let two = program().replacen(
        "<xaif:ExpressionEdge edge_id=\"1\" source=\"2\" target=\"1\" position=\"1\"/>",
        "<xaif:ExpressionEdge edge_id=\"1\" source=\"2\" target=\"1\" position=\"1\"/><xaif:ExpressionEdge edge_id=\"x\" source=\"4\" target=\"1\" position=\"2\"/>",
        1,
    );
    for (name, text, needle) in [
        ("one", one, "`mul_scal_scal` is applied to 1 argument, but"),
        ("two", two, "`sin_scal` is applied to 2 arguments, but"),
    ] {
        let file = dir.join(format!("{name}.xaif"));
        std::fs::write(&file, text).unwrap();
        for command in ["tangent", "adjoint"] {
            let out = dir.join(format!("{name}.{command}.xaif"));
            let o = xaifb()
                .arg(command)
                .arg("-c")
                .arg(&cat)
                .arg("-i")
                .arg(&file)
                .arg("-o")
                .arg(&out)
                .output()
                .unwrap();
            refused(&o, &file, &["element `Intrinsic`", needle]);
        }
    }
}

#[test]
fn a_formal_position_beyond_the_argument_list_is_refused() {
    let Some(cat) = catalogue_path() else { return };
    let dir = scratch("position");
    let file = dir.join("in.xaif");
    std::fs::write(
        &file,
        program().replacen("position=\"3\"", "position=\"99999999999\"", 1),
    )
    .unwrap();
    refused(
        &validate(&file),
        &file,
        &["`position` is 99999999999, outside 1..=3"],
    );
    let o = tangent(&cat, &file, &dir.join("out.xaif"));
    refused(&o, &file, &["element `ArgumentSymbolReference`"]);
}

/// `command` on `input` succeeds (exit 0, no panic).
fn succeeds(command: &[&str], input: &Path) {
    let o = xaifb().args(command).arg(input).output().unwrap();
    assert!(
        o.status.success(),
        "{command:?} {}: {}",
        input.display(),
        stderr(&o)
    );
}

#[test]
fn a_hundred_thousand_deep_expression_transforms_and_analyses() {
    let Some(cat) = catalogue_path() else { return };
    let dir = scratch("deep");
    let file = dir.join("deep.xaif");
    std::fs::write(&file, deep::sum_chain(100_000)).unwrap();
    let cat = cat.display().to_string();
    let out = dir.join("out.xaif").display().to_string();
    succeeds(&["tangent", "-c", &cat, "-o", &out, "-i"], &file);
    succeeds(&["adjoint", "-c", &cat, "-o", &out, "-i"], &file);
    let report = dir.join("report.txt").display().to_string();
    succeeds(&["analyze", "-o", &report], &file);
}

#[test]
fn thousands_of_nested_ifs_transform_and_analyse_on_worker_threads() {
    let Some(cat) = catalogue_path() else { return };
    let dir = scratch("ifs");
    let inputs = dir.join("in");
    std::fs::create_dir_all(&inputs).unwrap();
    // Two files: a batch, whose jobs run on worker threads with the
    // default thread stack.
    std::fs::write(inputs.join("ifs.xaif"), deep::nested_ifs(2_000)).unwrap();
    std::fs::write(
        inputs.join("chain.xaif"),
        deep::unary_chain(20_000, "sin_scal"),
    )
    .unwrap();
    let cat = cat.display().to_string();
    for command in ["tangent", "adjoint"] {
        let out = dir.join(command).display().to_string();
        succeeds(&[command, "-c", &cat, "-o", &out, "-i"], &inputs);
    }
    let report = dir.join("report.txt").display().to_string();
    succeeds(&["analyze", "-o", &report], &inputs.join("ifs.xaif"));
}

// ------------------------------------------------------------ limits

#[test]
fn a_routine_beyond_the_analysis_budget_is_refused_with_its_line() {
    let dir = scratch("budget");
    let file = dir.join("loops.xaif");
    std::fs::write(&file, deep::nested_loops(20)).unwrap();
    // Within the default budget it is analysed.
    succeeds(
        &["analyze", "-o", &dir.join("r.txt").display().to_string()],
        &file,
    );
    let o = xaifb()
        .args(["analyze", "--analysis-budget", "100"])
        .arg(&file)
        .output()
        .unwrap();
    let err = refused(
        &o,
        &file,
        &[
            "routine `head` is too large to analyse",
            "budget of 100",
            "--analysis-budget",
        ],
    );
    // Located at the routine's element.
    let line = deep::nested_loops(20)
        .lines()
        .position(|l| l.contains("<xaif:ControlFlowGraph"))
        .unwrap()
        + 1;
    assert!(
        err.contains(&format!("{}:{line}:", file.display())),
        "{err}"
    );
}

#[test]
fn long_expressions_are_shortened_in_the_analysis_report() {
    let dir = scratch("report");
    let file = dir.join("sum.xaif");
    std::fs::write(&file, deep::sum_chain(5_000)).unwrap();
    let o = xaifb().arg("analyze").arg(&file).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let report = String::from_utf8_lossy(&o.stdout);
    let line = report
        .lines()
        .find(|l| l.contains("Y = "))
        .expect("the statement is reported");
    assert!(line.ends_with('…'), "{line}");
    assert!(
        line.len() < xaif_dataflow::report::EXPR_TEXT_LIMIT + 200,
        "{} bytes",
        line.len()
    );
}
