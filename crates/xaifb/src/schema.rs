//! XSD validation through `xmllint`.
//!
//! The XAIF schemas use constructs (redefine, substitution groups, identity
//! constraints) that only a full XSD processor handles; libxml2's `xmllint`
//! is the one the OpenAD tool chain itself uses, so xaifb delegates to it
//! rather than reimplementing XSD.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use xaif_model::Document;

/// Environment variable naming the XAIF schema directory when `--schema` is
/// not given.
pub const SCHEMA_ENV: &str = "XAIF_SCHEMA_DIR";

/// The schema directory from the flag or the environment.
pub fn schema_dir(flag: Option<&Path>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf)
        .or_else(|| std::env::var_os(SCHEMA_ENV).map(PathBuf::from))
}

/// The schema file a document is checked against: `xaif.xsd` for front-end
/// programs, `xaif_output.xsd` for transformation results, the catalogue
/// schemas for catalogues.
pub fn schema_for(doc: &Document) -> &'static str {
    match doc {
        Document::Program(p) if p.is_output() => "xaif_output.xsd",
        Document::Program(_) => "xaif.xsd",
        Document::Inlinable(_) => "xaif_inlinable_intrinsics.xsd",
        Document::NonInlinable(_) => "xaif_noninlinable_intrinsics.xsd",
    }
}

/// Validates `file` against `schema_dir/xsd` with xmllint; the error carries
/// xmllint's messages.
pub fn xmllint(file: &Path, schema_dir: &Path, xsd: &str) -> Result<()> {
    let schema = schema_dir.join(xsd);
    if !schema.is_file() {
        bail!("schema {} not found", schema.display());
    }
    let out = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&schema)
        .arg(file)
        .output()
        .context("cannot run xmllint (install libxml2-utils)")?;
    if out.status.success() {
        Ok(())
    } else {
        let msg = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = msg.lines().filter(|l| !l.trim().is_empty()).collect();
        bail!("{}", lines.join("\n"))
    }
}
