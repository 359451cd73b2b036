//! The model against every XAIF file of the reference material: corpus
//! inputs and reference outputs, schema examples, stage outputs, catalogues.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use xaif_model::{read_bytes, validate_document, write_document, ErrorKind};
use xaif_testkit::{
    first_difference, have_xmllint, infoset, shared_dir, xaif_files, xmllint_valid,
};

/// Files in an older XAIF format (alias and DU-UD *lists*, `Nop`
/// statements, arguments without a variable reference): the reader rejects
/// them with an error naming the unknown element.
fn is_old_format(text: &str) -> bool {
    text.contains("AliasSetList") || text.contains("<xaif:Nop")
}

fn rel(shared: &Path, p: &Path) -> String {
    p.strip_prefix(shared).unwrap_or(p).display().to_string()
}

#[test]
fn every_file_reads_except_old_format_ones() {
    let Some(shared) = shared_dir() else { return };
    let files = xaif_files(&shared);
    assert!(
        files.len() > 1000,
        "expected the whole reference material, found {}",
        files.len()
    );
    let mut old = 0;
    for f in &files {
        let text = std::fs::read(f).unwrap();
        let old_format = is_old_format(&String::from_utf8_lossy(&text));
        match read_bytes(&text, Some(&f.display().to_string())) {
            Ok(_) => assert!(
                !old_format,
                "{} is in the old format but was read",
                rel(&shared, f)
            ),
            Err(errors) => {
                assert!(old_format, "{} failed to read:\n{errors}", rel(&shared, f));
                old += 1;
                let e = &errors.errors()[0];
                assert!(
                    matches!(&e.kind, ErrorKind::UnknownElement { name, .. } if e.to_string().contains(name.as_str())),
                    "{}: {e}",
                    rel(&shared, f)
                );
                assert!(e.line > 0 && e.column > 0);
            }
        }
    }
    assert_eq!(old, 14, "the reference material has 14 old-format files");
}

#[test]
fn roundtrip_preserves_the_infoset_and_is_deterministic() {
    let Some(shared) = shared_dir() else { return };
    for f in xaif_files(&shared) {
        let text = std::fs::read(&f).unwrap();
        let Ok(parsed) = read_bytes(&text, None) else {
            continue;
        };
        let written = write_document(&parsed.document);
        let before = infoset(&text).unwrap();
        let after = infoset(written.as_bytes()).unwrap();
        if let Some(diff) = first_difference(&before, &after) {
            panic!("{}: {diff}", rel(&shared, &f));
        }
        let reread = read_bytes(written.as_bytes(), None).unwrap();
        assert!(
            reread.document == parsed.document,
            "{}: re-read model differs",
            rel(&shared, &f)
        );
        assert_eq!(
            write_document(&reread.document),
            written,
            "{}: writer is not deterministic",
            rel(&shared, &f)
        );
    }
}

fn schema_for(text: &str) -> &'static str {
    if text.contains("InlinableIntrinsicDefinitions")
        && !text.contains("NonInlinableIntrinsicDefinitions")
    {
        "xaif_inlinable_intrinsics.xsd"
    } else if text.contains("NonInlinableIntrinsicDefinitions") {
        "xaif_noninlinable_intrinsics.xsd"
    } else if text.contains("xaif_output.xsd")
        || text.contains("ReplacementList")
        || text.contains("DerivativePropagator")
        || text.contains("InlinableSubroutineCall")
    {
        "xaif_output.xsd"
    } else {
        "xaif.xsd"
    }
}

#[test]
fn roundtrip_keeps_schema_validity() {
    let Some(shared) = shared_dir() else { return };
    if !have_xmllint() {
        return;
    }
    let schemas = shared.join("xaif/schema");
    let out_dir = std::env::temp_dir().join(format!("xaifb-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut groups: BTreeMap<&str, Vec<(PathBuf, PathBuf)>> = BTreeMap::new();
    for (i, f) in xaif_files(&shared).into_iter().enumerate() {
        let text = std::fs::read(&f).unwrap();
        let Ok(parsed) = read_bytes(&text, None) else {
            continue;
        };
        let out = out_dir.join(format!("{i}.xaif"));
        std::fs::write(&out, write_document(&parsed.document)).unwrap();
        groups
            .entry(schema_for(&String::from_utf8_lossy(&text)))
            .or_default()
            .push((f, out));
    }
    let mut checked = 0;
    for (xsd, pairs) in groups {
        let schema = schemas.join(xsd);
        let originals: Vec<PathBuf> = pairs.iter().map(|(f, _)| f.clone()).collect();
        let before = xmllint_valid(&schema, &originals);
        let outputs: Vec<PathBuf> = pairs
            .iter()
            .filter(|(f, _)| before.contains(f))
            .map(|(_, o)| o.clone())
            .collect();
        let after = xmllint_valid(&schema, &outputs);
        for (f, o) in &pairs {
            if before.contains(f) {
                checked += 1;
                assert!(
                    after.contains(o),
                    "{} validated against {xsd} before the round trip but not after",
                    rel(&shared, f)
                );
            }
        }
    }
    std::fs::remove_dir_all(&out_dir).ok();
    assert!(
        checked > 900,
        "only {checked} files validated against the schemas"
    );
}

/// Every corpus file that reads passes the gate; schema examples and stage
/// outputs that break XAIF's rules are rejected with the right variants.
#[test]
fn gate_accepts_the_corpus_and_rejects_broken_examples() {
    let Some(shared) = shared_dir() else { return };
    let mut rejected = BTreeMap::new();
    for f in xaif_files(&shared) {
        let text = std::fs::read(&f).unwrap();
        let Ok(parsed) = read_bytes(&text, Some(&f.display().to_string())) else {
            continue;
        };
        let name = rel(&shared, &f);
        if let Err(errors) = validate_document(&parsed.document, &parsed.source) {
            assert!(
                !name.starts_with("corpus"),
                "{name} fails the gate:\n{errors}"
            );
            rejected.insert(name, errors);
        }
    }
    let kinds = |name: &str| -> Vec<&ErrorKind> {
        rejected
            .get(name)
            .unwrap_or_else(|| panic!("{name} passed the gate"))
            .kinds()
            .collect()
    };
    // if_ex_1c has a duplicate vertex id and edges to a vertex that does not exist.
    let k = kinds("xaif/schema/examples/if_ex_1c.xaif");
    assert!(k.iter().any(|k| matches!(
        k,
        ErrorKind::DuplicateId {
            what: xaif_model::IdKind::ExprVertex,
            ..
        }
    )));
    assert!(k.iter().any(|k| matches!(
        k,
        ErrorKind::DanglingReference {
            what: xaif_model::RefKind::ExprEdgeEnd,
            ..
        }
    )));
    // joint_rescp refers to symbols its scopes do not declare.
    assert!(kinds("xaif/schema/examples/joint_rescp.xb.xaif")
        .iter()
        .any(|k| matches!(
            k,
            ErrorKind::DanglingReference {
                what: xaif_model::RefKind::Symbol,
                ..
            }
        )));
    // uwe_ex_2 has two control flow edges with id 4.
    assert!(kinds("xaif/schema/examples/uwe_ex_2.xaif")
        .iter()
        .any(|k| matches!(
            k,
            ErrorKind::DuplicateId {
                what: xaif_model::IdKind::CfgEdge,
                ..
            }
        )));
    // Several stage outputs concatenate four graphs into one ControlFlowGraph.
    assert!(kinds("xaif/stage-outputs/PushPop/add_mul_ex.xb.xaif")
        .iter()
        .any(|k| matches!(
            k,
            ErrorKind::EntryExitCount {
                entries: 4,
                exits: 4
            }
        )));
    // The catalogue the engine uses passes.
    assert!(!rejected.contains_key("xaif/schema/examples/inlinable_intrinsics.xaif"));
}
