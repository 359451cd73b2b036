//! XSD validation through `xmllint`.
//!
//! The XAIF schemas use constructs (redefine, substitution groups, identity
//! constraints) that only a full XSD processor handles; libxml2's `xmllint`
//! is the one the OpenAD tool chain itself uses, so xaifb delegates to it
//! rather than reimplementing XSD.
//!
//! xmllint is an external program whose time and file access xaifb must
//! bound:
//! - it never sees a document type declaration: XAIF has none, and libxml2
//!   loads external parameter entities of the internal subset even with
//!   `--nonet` (it would read a local file and echo it in its error), so a
//!   document with a DOCTYPE is refused before xmllint runs;
//! - it runs with `--nonet` (no fetching of anything over the network) and
//!   reads the document from its standard input, the very bytes xaifb
//!   checked;
//! - it runs under a timeout (`--xmllint-timeout`, default 30 s), named in
//!   the error when it expires.
//!
//! The model checks run before xmllint, so that what the model can say is
//! said first, with its own locations.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use wait_timeout::ChildExt;
use xaif_model::Document;

use crate::report::Invalid;

/// Environment variable naming the XAIF schema directory when `--schema` is
/// not given.
pub const SCHEMA_ENV: &str = "XAIF_SCHEMA_DIR";

/// The default xmllint timeout per file: 300 times what the largest corpus
/// file takes (0.1 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

static TIMEOUT: Mutex<Duration> = Mutex::new(DEFAULT_TIMEOUT);

/// Sets the xmllint timeout (`--xmllint-timeout`).
pub fn set_timeout(t: Duration) {
    *TIMEOUT.lock().unwrap_or_else(|p| p.into_inner()) = t;
}

fn timeout() -> Duration {
    *TIMEOUT.lock().unwrap_or_else(|p| p.into_inner())
}

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

/// Whether the prolog of `bytes` (before the root element) holds a document
/// type declaration, in UTF-8 or any ASCII-compatible encoding, or in
/// UTF-16 of either byte order.
pub fn has_doctype(bytes: &[u8]) -> bool {
    fn ascii_prolog_has_doctype(text: &[u8]) -> bool {
        let mut i = 0;
        while let Some(off) = text[i..].iter().position(|&b| b == b'<') {
            let rest = &text[i + off..];
            if rest.starts_with(b"<!DOCTYPE") {
                return true;
            }
            let end = if rest.starts_with(b"<?") {
                find(rest, b"?>")
            } else if rest.starts_with(b"<!--") {
                find(rest, b"-->")
            } else {
                // The root element: the prolog is over.
                return false;
            };
            match end {
                Some(e) => i += off + e,
                None => return false,
            }
        }
        false
    }
    fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
        hay.windows(needle.len()).position(|w| w == needle)
    }
    // UTF-16 (with or without a byte order mark): keep the low bytes.
    let utf16 =
        |offset: usize| -> Vec<u8> { bytes.iter().skip(offset).step_by(2).copied().collect() };
    let zeros_even = bytes
        .iter()
        .step_by(2)
        .take(64)
        .filter(|&&b| b == 0)
        .count();
    let zeros_odd = bytes
        .iter()
        .skip(1)
        .step_by(2)
        .take(64)
        .filter(|&&b| b == 0)
        .count();
    if zeros_even > 8 && zeros_even > zeros_odd {
        return ascii_prolog_has_doctype(&utf16(1));
    }
    if zeros_odd > 8 && zeros_odd > zeros_even {
        return ascii_prolog_has_doctype(&utf16(0));
    }
    ascii_prolog_has_doctype(bytes)
}

/// Whether `xmllint` runs (asked once per process); the error says how to
/// install it (exit code 3).
pub fn require_xmllint() -> Result<()> {
    static RUNS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let runs = *RUNS.get_or_init(|| {
        Command::new("xmllint")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    });
    if !runs {
        bail!("xmllint is needed for schema validation (install libxml2-utils)");
    }
    Ok(())
}

/// Validates `bytes` (named `name` in messages) against `schema_dir/xsd`
/// with xmllint, bounded in time and without network or external entities.
/// A verdict on the document (invalid, a DOCTYPE, xmllint out of time or
/// memory on it) is [`Invalid`] (exit code 1); a missing schema file or
/// xmllint is the environment's (exit code 3).
pub fn xmllint(bytes: &[u8], name: &str, schema_dir: &Path, xsd: &str) -> Result<()> {
    let schema = schema_dir.join(xsd);
    if !schema.is_file() {
        bail!("schema {} not found", schema.display());
    }
    if has_doctype(bytes) {
        return Err(Invalid(format!(
            "{name}: has a document type declaration (<!DOCTYPE>); XAIF has none, and it is not passed to xmllint"
        ))
        .into());
    }
    let mut child = Command::new("xmllint")
        .arg("--noout")
        .arg("--nonet")
        .arg("--schema")
        .arg(&schema)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run xmllint (install libxml2-utils)")?;
    let mut stdin = child.stdin.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let limit = timeout();
    let (status, messages) = std::thread::scope(|s| {
        s.spawn(move || {
            // xmllint may stop reading early; a broken pipe is no error here.
            let _ = stdin.write_all(bytes);
        });
        let reader = s.spawn(move || {
            let mut text = Vec::new();
            // Bounded: xmllint's messages, at most a few per line of input.
            let _ = (&mut stderr).take(16 << 20).read_to_end(&mut text);
            text
        });
        let status = child.wait_timeout(limit);
        let status = match status {
            Ok(Some(st)) => Ok(st),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(Invalid(format!(
                    "{name}: xmllint did not finish schema validation within {} s (raise the limit with --xmllint-timeout)",
                    limit.as_secs_f64()
                ))
                .into())
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(anyhow!("{name}: waiting for xmllint: {e}"))
            }
        };
        (status, reader.join().unwrap_or_default())
    });
    let status = status?;
    if status.success() {
        return Ok(());
    }
    let msg = String::from_utf8_lossy(&messages);
    if is_out_of_memory(&msg) {
        // A limit of xmllint's, not a verdict on the file.
        return Err(Invalid(format!(
            "{name}: xmllint did not finish schema validation: it ran out of memory on {} bytes (the file was not found invalid; validate it where more memory is available)",
            bytes.len()
        ))
        .into());
    }
    let lines: Vec<String> = msg
        .lines()
        .filter(|l| !l.trim().is_empty() && l.trim() != "- fails to validate")
        .map(|l| match l.strip_prefix("-:") {
            Some(rest) => format!("{name}:{rest}"),
            None => l.to_string(),
        })
        .collect();
    if lines.is_empty() {
        return Err(Invalid(format!("{name}: xmllint failed ({status})")).into());
    }
    Err(Invalid(lines.join("\n")).into())
}

/// Whether xmllint's messages say that it ran out of memory (libxml2's
/// `out of memory error`, `Memory allocation failed`), which says nothing
/// about the document.
fn is_out_of_memory(messages: &str) -> bool {
    messages.contains("out of memory") || messages.contains("Memory allocation failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doctype_is_found_in_the_prolog_only() {
        assert!(has_doctype(b"<?xml version=\"1.0\"?>\n<!DOCTYPE r [<!ENTITY % e SYSTEM \"file:///etc/passwd\"> %e;]><r/>"));
        assert!(has_doctype(b"<!-- c --><!DOCTYPE r><r/>"));
        assert!(!has_doctype(
            b"<?xml version=\"1.0\"?><r><!-- <!DOCTYPE x> --></r>"
        ));
        assert!(!has_doctype(b"<r a=\"<!DOCTYPE\"/>"));
        let utf16le: Vec<u8> = "<?xml version=\"1.0\" encoding=\"UTF-16\"?><!DOCTYPE r><r/>"
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        assert!(has_doctype(&utf16le));
        let utf16be: Vec<u8> = "\u{feff}<!DOCTYPE r><r/>"
            .encode_utf16()
            .flat_map(|u| u.to_be_bytes())
            .collect();
        assert!(has_doctype(&utf16be));
    }
}
