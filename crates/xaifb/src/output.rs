//! Writing result files without ever leaving a partial one behind.
//!
//! Results are written to a temporary file beside the destination and renamed
//! into place only when complete, so a failed run leaves either the previous
//! file or nothing. The file is not synced to disk: the rename already
//! guarantees that no reader sees a partial file, and durability across a
//! power loss is the file system's business; an `fsync` per file would cost
//! more than transforming a typical input.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Writes `bytes` to `path` atomically (temporary file, then rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |f| f.write_all(bytes))
}

/// Writes what `fill` produces to `path` atomically: `fill` writes into a
/// buffered temporary file as it goes (a large result never has to be held
/// whole in memory), which is renamed into place only when `fill` and the
/// final flush succeed, and removed otherwise.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create directory {}", dir.display()))?;
    }
    let tmp = temporary_name(path);
    let result = (|| -> Result<()> {
        let f = std::fs::File::create(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 16, f);
        fill(&mut w)
            .and_then(|()| w.flush())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        drop(w);
        std::fs::rename(&tmp, path)
            .with_context(|| format!("cannot move result into {}", path.display()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn temporary_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_whole_file_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("xaifb-output-test-{}", std::process::id()));
        let path = dir.join("sub").join("out.xaif");
        write_atomic(&path, b"abc").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abc");
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
