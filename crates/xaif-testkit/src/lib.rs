//! Test support shared by the workspace's test suites.
//!
//! Tests that use the reference material (the OpenAD regression corpus, the
//! XAIF schemas and examples) find it through the `XAIFB_SHARED` environment
//! variable, defaulting to `../shared` beside the repository, so users can
//! point the suites at their own copy. Outside CI a missing directory or a
//! missing `xmllint` skips those tests with a printed reason; with `CI=true`
//! it fails them, so CI can never pass by skipping.

pub mod deep;
pub mod fortran;
pub mod gen;
pub mod loop_programs;
pub mod model;
pub mod reference;
pub mod scale;
pub mod scratch;
pub mod strip;

pub use scratch::Scratch;

use std::path::{Path, PathBuf};

pub mod robust;

use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;

/// Environment variable naming the reference material directory.
pub const SHARED_ENV: &str = "XAIFB_SHARED";

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root exists")
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Skips (returns `None` after printing why) or, in CI, fails the test.
pub fn unavailable(what: &str) -> Option<PathBuf> {
    if in_ci() {
        panic!("{what} (required when CI=true)");
    }
    eprintln!("skipping: {what}");
    None
}

/// The reference material directory, or `None` (test skipped) when absent.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os(SHARED_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared"));
    if dir.join("corpus").is_dir() && dir.join("xaif").is_dir() {
        Some(dir)
    } else {
        unavailable(&format!(
            "reference material not found at {} (set {SHARED_ENV})",
            dir.display()
        ))
    }
}

/// Whether `xmllint` runs; `false` (test skipped) when it does not.
pub fn have_xmllint() -> bool {
    let ok = std::process::Command::new("xmllint")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        unavailable("xmllint not found (install libxml2-utils)");
    }
    ok
}

/// Runs `xmllint --schema` on many files at once (a few processes instead
/// of one per file) and returns the set that validates.
pub fn xmllint_valid(schema: &Path, files: &[PathBuf]) -> std::collections::BTreeSet<PathBuf> {
    let mut valid = std::collections::BTreeSet::new();
    for chunk in files.chunks(200) {
        let out = std::process::Command::new("xmllint")
            .arg("--noout")
            .arg("--schema")
            .arg(schema)
            .args(chunk)
            .output()
            .expect("xmllint runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        for f in chunk {
            let line = format!("{} validates", f.display());
            if stderr.lines().any(|l| l == line) {
                valid.insert(f.clone());
            }
        }
    }
    valid
}

/// Every `.xaif` file under `dir`, sorted.
pub fn xaif_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("readable directory") {
            let p = e.expect("directory entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "xaif") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// One element of an XML infoset: namespace, local name, attributes in order
/// (namespace declarations left out), children.
#[derive(Debug, PartialEq, Eq)]
pub struct Element {
    /// Namespace URI (empty when unbound).
    pub ns: String,
    /// Local name.
    pub name: String,
    /// Attributes in document order: (qualified name, unescaped value).
    pub attrs: Vec<(String, String)>,
    /// Child elements.
    pub children: Vec<Element>,
}

/// Parses `text` into its infoset: elements, attributes and their order;
/// whitespace, comments, quoting, prefixes and the declaration aside.
pub fn infoset(text: &[u8]) -> Result<Element, String> {
    let mut reader = NsReader::from_reader(text);
    let mut stack: Vec<Element> = Vec::new();
    loop {
        let (ns, ev) = reader.read_resolved_event().map_err(|e| e.to_string())?;
        let ns = match ns {
            ResolveResult::Bound(n) => String::from_utf8_lossy(n.as_ref()).into_owned(),
            _ => String::new(),
        };
        let (e, empty) = match ev {
            Event::Start(e) => (e, false),
            Event::Empty(e) => (e, true),
            Event::End(_) => {
                let done = stack.pop().ok_or("unbalanced end tag")?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(done),
                    None => return Ok(done),
                }
                continue;
            }
            Event::Eof => return Err("unexpected end of file".into()),
            _ => continue,
        };
        let mut attrs = Vec::new();
        for a in e.attributes() {
            let a = a.map_err(|e| e.to_string())?;
            let key = String::from_utf8_lossy(a.key.as_ref()).into_owned();
            if key == "xmlns" || key.starts_with("xmlns:") {
                continue;
            }
            let value = a.unescape_value().map_err(|e| e.to_string())?.into_owned();
            attrs.push((key, value));
        }
        let el = Element {
            ns,
            name: String::from_utf8_lossy(e.local_name().as_ref()).into_owned(),
            attrs,
            children: Vec::new(),
        };
        if empty {
            match stack.last_mut() {
                Some(parent) => parent.children.push(el),
                None => return Ok(el),
            }
        } else {
            stack.push(el);
        }
    }
}

/// The path of the first difference between two infosets, or `None` when
/// they are equal.
pub fn first_difference(a: &Element, b: &Element) -> Option<String> {
    fn walk(a: &Element, b: &Element, path: &mut String) -> Option<String> {
        path.push('/');
        path.push_str(&a.name);
        if a.ns != b.ns || a.name != b.name {
            return Some(format!(
                "{path}: element {}:{} vs {}:{}",
                a.ns, a.name, b.ns, b.name
            ));
        }
        if a.attrs != b.attrs {
            return Some(format!("{path}: attributes {:?} vs {:?}", a.attrs, b.attrs));
        }
        if a.children.len() != b.children.len() {
            return Some(format!(
                "{path}: {} children vs {}",
                a.children.len(),
                b.children.len()
            ));
        }
        for (i, (x, y)) in a.children.iter().zip(&b.children).enumerate() {
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            if let Some(d) = walk(x, y, path) {
                return Some(d);
            }
            path.truncate(len);
        }
        None
    }
    walk(a, b, &mut String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infoset_ignores_prefixes_whitespace_and_comments() {
        let a = infoset(br#"<a:r xmlns:a="u" k="1"><!-- c --><a:x v="&amp;"/></a:r>"#).unwrap();
        let b = infoset(b"<r xmlns=\"u\" k='1'>\n  <x v=\"&#38;\"></x>\n</r>").unwrap();
        assert_eq!(first_difference(&a, &b), None);
    }

    #[test]
    fn infoset_sees_attribute_order_and_values() {
        let a = infoset(br#"<r x="1" y="2"/>"#).unwrap();
        let b = infoset(br#"<r y="2" x="1"/>"#).unwrap();
        assert!(first_difference(&a, &b).is_some());
        let c = infoset(br#"<r x="1" y="3"/>"#).unwrap();
        assert!(first_difference(&a, &c).is_some());
    }
}
