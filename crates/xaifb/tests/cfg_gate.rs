//! The gate refuses control flow that has no meaning (issue 26, section
//! 3), through the binary: `validate` (with `--schema` where the schemas
//! and xmllint are at hand), `tangent` and `run` refuse a basic block with
//! two unconditional successors, an edge back into `Entry`, real constants
//! whose text is not a number and a vector with two dimension bounds, each
//! with the file, line and element. (Before, all of them passed, and `run`
//! printed a number for the first two.)

use std::path::{Path, PathBuf};
use std::process::Command;

fn xaifb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xaifb"))
}

fn seed() -> String {
    let path = xaif_testkit::repo_root().join("fixtures/adjoint/seed_cfr.xaif");
    std::fs::read_to_string(path).unwrap()
}

fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from}");
    text.replacen(from, to, 1)
}

/// The fixture with `extra` added before its first edge.
fn with(text: &str, extra: &str) -> String {
    let at = text.find("<xaif:ControlFlowEdge").unwrap();
    format!("{}{extra}\n    {}", &text[..at], &text[at..])
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs `xaifb ARGS`: exit code, stdout, stderr.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let o = xaifb().args(args).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `file` is refused by validate, tangent and run with an error at
/// `file:LINE:` naming `element` and saying `what`.
fn refused_everywhere(file: &Path, element: &str, what: &str) {
    let f = file.to_str().unwrap();
    let schema = xaif_testkit::shared_dir()
        .filter(|_| xaif_testkit::have_xmllint())
        .map(|s| s.join("xaif/schema"));
    let mut validate = vec!["validate".to_string()];
    if let Some(s) = &schema {
        validate.extend(["--schema".into(), s.display().to_string()]);
    }
    validate.push(f.into());
    let validate: Vec<&str> = validate.iter().map(String::as_str).collect();
    let out = file.with_extension("out.xaif");
    let o = out.to_str().unwrap();
    for args in [
        validate,
        vec!["tangent", f, "-o", o],
        vec!["run", f, "--n", "2", "--m", "3"],
    ] {
        let (code, stdout, stderr) = run(&args);
        assert_eq!(code, Some(1), "{args:?}\n{stdout}\n{stderr}");
        assert!(!out.exists(), "{args:?} wrote {out:?}");
        assert!(!stdout.contains("F(") && !stdout.contains("y("), "{stdout}");
        let located = stderr.lines().any(|l| {
            l.strip_prefix(&format!("{f}:"))
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
                && l.contains(&format!("element `{element}`"))
                && l.contains(what)
        });
        assert!(located, "{args:?}: {stderr}");
    }
}

fn scratch(name: &str) -> xaif_testkit::Scratch {
    xaif_testkit::Scratch::new("xaifb-cfg-gate", name)
}

#[test]
fn a_block_with_two_unconditional_successors_is_refused() {
    let dir = scratch("two");
    let file = write(
        &dir,
        "two.xaif",
        &with(
            &seed(),
            r#"<xaif:ControlFlowEdge edge_id="13" source="2" target="10"/>"#,
        ),
    );
    refused_everywhere(&file, "BasicBlock", "has 2 successors");
}

#[test]
fn an_edge_back_into_entry_is_refused() {
    let dir = scratch("entry");
    let file = write(
        &dir,
        "entry.xaif",
        &edit(
            &seed(),
            r#"source="10" target="11""#,
            r#"source="10" target="1""#,
        ),
    );
    refused_everywhere(&file, "ControlFlowEdge", "enters Entry");
}

#[test]
fn real_constants_that_are_not_numbers_are_refused() {
    let dir = scratch("constants");
    for (i, value) in ["2,0", "0x2", ""].into_iter().enumerate() {
        let file = write(
            &dir,
            &format!("c{i}.xaif"),
            &edit(
                &seed(),
                r#"<xaif:Constant vertex_id="3" type="integer" value="3"/>"#,
                &format!(r#"<xaif:Constant vertex_id="3" type="real" value="{value}"/>"#),
            ),
        );
        refused_everywhere(&file, "Constant", &format!("`value` has value `{value}`"));
    }
}

#[test]
fn a_vector_with_two_dimension_bounds_is_refused() {
    let dir = scratch("shape");
    let file = write(
        &dir,
        "shape.xaif",
        &edit(
            &seed(),
            r#"<xaif:DimensionBounds lower="1" upper="2"/>"#,
            r#"<xaif:DimensionBounds lower="1" upper="2"/>
          <xaif:DimensionBounds lower="1" upper="2"/>"#,
        ),
    );
    refused_everywhere(
        &file,
        "Symbol",
        "shape `vector` has rank 1 but 2 DimensionBounds",
    );
}
