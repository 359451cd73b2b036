//! The second step of every command: an input read (`input.rs`) becomes a
//! document the rest may trust, or an error naming the file, line and
//! element.
//!
//! The model's gate (`xaif_model::validate_*`) runs on every document;
//! programs are also checked against the inlinable catalogue when one is
//! given; with a schema, `xmllint` validates the very bytes read
//! (`schema.rs`), after the model has said what it can.
//!
//! One rule for the schema directory, in every subcommand: a directory
//! named by `--schema`/`-s` (where a subcommand validates against it) or
//! by `XAIF_SCHEMA_DIR` must exist and hold `xaif.xsd`, and `xmllint`
//! must run; otherwise the command stops before any file is processed
//! (exit code 3). Without a directory, schema validation is skipped and
//! said so.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use xaif_linearize::Catalogue;
use xaif_model::{NonInlinableCatalogue, Program};

use crate::report::Invalid;

/// Reads any XAIF document (program or catalogue) and gates it; the error
/// is the full report.
pub fn load(input: &Path) -> std::result::Result<xaif_model::Parsed, String> {
    let parsed = crate::input::read_document(input)?;
    xaif_model::validate_document(&parsed.document, &parsed.source).map_err(|e| e.to_string())?;
    Ok(parsed)
}

/// Reads and gates a program (`-`: standard input), with the source map
/// that locates later errors in it.
pub fn program_with_source(path: &Path) -> Result<(Program, xaif_model::SourceMap)> {
    let (p, source) = crate::input::read_program(path).map_err(Invalid)?;
    xaif_model::validate_program(&p, &source).map_err(|e| Invalid(e.to_string()))?;
    Ok((p, source))
}

/// The schema directory of `flag` or `XAIF_SCHEMA_DIR` (an empty value is
/// no value), checked by the one rule of this module: `None` when neither
/// names one.
pub fn schema_dir(flag: Option<&Path>) -> Result<Option<PathBuf>> {
    let Some(dir) = crate::schema::schema_dir(flag).filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(None);
    };
    if !dir.is_dir() {
        return Err(anyhow!("schema directory {} not found", dir.display()));
    }
    if !dir.join("xaif.xsd").is_file() {
        return Err(anyhow!(
            "schema directory {} holds no xaif.xsd (is it the XAIF schema directory?)",
            dir.display()
        ));
    }
    crate::schema::require_xmllint()?;
    Ok(Some(dir))
}

/// The inlinable catalogue of `-c`, or the built-in one, and the
/// non-inlinable one of `-N`. `-c` naming the distributed catalogue file
/// (recognised by its bytes) takes the built-in table too: the same
/// meaning, without parsing the file on every run.
pub fn catalogues(
    inlinable: Option<&Path>,
    noninlinable: Option<&Path>,
) -> Result<(Cow<'static, Catalogue>, Option<NonInlinableCatalogue>)> {
    for path in inlinable.iter().chain(noninlinable.iter()) {
        crate::input::check(path)?;
    }
    let inlinable = match inlinable {
        Some(path) => {
            let bytes = crate::input::read(path)?;
            if xaif_linearize::builtin::is_distributed_catalogue(&bytes) {
                Cow::Borrowed(xaif_linearize::builtin())
            } else {
                let name = crate::input::display_name(path);
                xaif_linearize::catalogue::inlinable_from_bytes(&bytes, &name)
                    .map(Cow::Owned)
                    .map_err(|e| Invalid(e.to_string()))?
            }
        }
        None => Cow::Borrowed(xaif_linearize::builtin()),
    };
    let non = match noninlinable {
        None => None,
        Some(path) => match load(path).map_err(Invalid)?.document {
            xaif_model::Document::NonInlinable(n) => Some(n),
            _ => {
                return Err(Invalid(format!(
                    "{}: not a non-inlinable intrinsics catalogue",
                    crate::input::display_name(path)
                ))
                .into())
            }
        },
    };
    Ok((inlinable, non))
}

/// How a program is validated against the schema (`-v`).
pub struct SchemaCheck {
    /// Whether to validate at all.
    pub validate: bool,
    /// The schema directory of `-s` or `XAIF_SCHEMA_DIR`, checked
    /// ([`schema_dir`]); without one, `xaif.xsd` beside the input is used
    /// when there is one, as the reference engine does.
    pub dir: Option<PathBuf>,
    /// Whether a skipped validation goes unsaid (`--quiet`).
    pub quiet: bool,
}

/// Reads and gates a front-end program (`-`: standard input): the model's
/// gate, the catalogue's check of every intrinsic use when one is given,
/// then the schema when `schema` asks for it.
pub fn program(
    path: &Path,
    catalogue: Option<&Catalogue>,
    schema: &SchemaCheck,
) -> Result<Program> {
    let bytes = crate::input::read(path)?;
    let name = crate::input::display_name(path);
    let parsed = xaif_model::read_bytes(&bytes, Some(&name)).map_err(|e| Invalid(e.to_string()))?;
    let (p, source) = match parsed.document {
        xaif_model::Document::Program(p) => (*p, parsed.source),
        other => {
            return Err(Invalid(
                xaif_model::ModelErrors::from(parsed.source.error(
                    xaif_model::Span(0),
                    other.root_name(),
                    xaif_model::ErrorKind::UnknownRoot(format!(
                        "{} (a program was expected)",
                        other.root_name()
                    )),
                ))
                .to_string(),
            )
            .into())
        }
    };
    // With the catalogue, every intrinsic use is also checked against its
    // entry before any transformation starts.
    match catalogue {
        Some(c) => c.validate_program(&p, &source),
        None => xaif_model::validate_program(&p, &source),
    }
    .map_err(|e| Invalid(e.to_string()))?;
    if schema.validate {
        validate_schema(path, &bytes, schema)?;
    }
    Ok(p)
}

/// `-v`: validates `bytes` (read from `path`) against `xaif.xsd` of the
/// schema directory, or of the input's own directory; says that it
/// skipped validation when there is neither.
fn validate_schema(path: &Path, bytes: &[u8], schema: &SchemaCheck) -> Result<()> {
    let name = crate::input::display_name(path);
    let beside = || {
        let dir = path.parent()?.to_path_buf();
        (!crate::input::is_stdin(path) && dir.join("xaif.xsd").is_file()).then_some(dir)
    };
    let Some(dir) = schema.dir.clone().or_else(beside) else {
        crate::report::note(
            schema.quiet,
            &format!(
                "{name}: schema validation skipped: no schema directory (-s or XAIF_SCHEMA_DIR)"
            ),
        );
        return Ok(());
    };
    crate::schema::require_xmllint()?;
    crate::schema::xmllint(bytes, &name, &dir, "xaif.xsd")
}
