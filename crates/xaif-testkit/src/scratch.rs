//! Scratch directories for tests that run the engine on files.
//!
//! A test suite that leaves its outputs in the temporary directory fills
//! the disk of whoever runs it often (a corpus test writes hundreds of
//! megabytes). A [`Scratch`] directory is made empty when created and
//! removed when dropped; a failing test keeps it, and says where, so the
//! files that made it fail can be read.

use std::ffi::OsStr;
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// A directory under the temporary directory, unique to this process and
/// name, removed when dropped unless the thread is panicking.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// An empty directory `<tmp>/<prefix>-<pid>-<name>` (anything already
    /// there from an earlier run of the same process id is removed).
    pub fn new(prefix: &str, name: &str) -> Scratch {
        let path = std::env::temp_dir().join(format!("{prefix}-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("the temporary directory is writable");
        Scratch { path }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("test files kept in {}", self.path.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

impl Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<OsStr> for Scratch {
    fn as_ref(&self) -> &OsStr {
        self.path.as_os_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_directory_is_removed_when_dropped() {
        let s = Scratch::new("xaif-testkit", "drop");
        std::fs::write(s.join("f"), "x").unwrap();
        let p = s.to_path_buf();
        assert!(p.join("f").is_file());
        drop(s);
        assert!(!p.exists());
    }

    #[test]
    fn a_failing_test_keeps_its_files() {
        let p = std::env::temp_dir().join(format!("xaif-testkit-{}-kept", std::process::id()));
        let q = p.clone();
        let r = std::thread::spawn(move || {
            let s = Scratch::new("xaif-testkit", "kept");
            assert_eq!(s.path(), q.as_path());
            std::fs::write(s.join("f"), "x").unwrap();
            panic!("failing on purpose");
        })
        .join();
        assert!(r.is_err());
        assert!(p.join("f").is_file());
        std::fs::remove_dir_all(&p).unwrap();
    }
}
