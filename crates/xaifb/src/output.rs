//! Writing result files: all of a job's files or none, never over an input,
//! never a partial or leftover file.
//!
//! - Every output goes to a temporary file created beside its destination
//!   (tempfile: a unique name per job, removed when dropped) and is renamed
//!   into place only when the job's outputs are all complete
//!   ([`Outputs::commit`]), so a failed job leaves the previous files or
//!   nothing, and jobs writing beside each other never share a temporary.
//! - SIGINT and SIGTERM remove the temporaries that are still open, then end
//!   the process by the signal as usual ([`install_signal_cleanup`]).
//! - A destination that is the same file as an input of the run (the
//!   program, a catalogue, `params.conf`, …; see `input.rs`) or as another
//!   output of the same job is refused ([`Refused`], exit code 2).
//! - A destination that exists and is not a regular file (`/dev/null`, a
//!   FIFO) is written directly, at commit time.
//!
//! Files are not synced to disk: the rename already guarantees that no
//! reader sees a partial file, and durability across a power loss is the
//! file system's business (see `docs/decisions.md`).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use anyhow::{Context, Result};

/// An output the command line must not ask for (exit code 2): it is an
/// input of the run, or two outputs are the same file.
#[derive(Debug, Clone)]
pub struct Refused(pub String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// The identity of a file: device and inode.
type FileId = (u64, u64);

#[cfg(unix)]
fn file_id(meta: &std::fs::Metadata) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn file_id(_meta: &std::fs::Metadata) -> Option<FileId> {
    None
}

/// The inputs of this run, by identity, with the name they were given.
static INPUTS: Mutex<Option<HashMap<FileId, PathBuf>>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers `path` (with its metadata) as an input of the run: no output
/// may be written over it.
pub fn protect(path: &Path, meta: &std::fs::Metadata) {
    if let Some(id) = file_id(meta) {
        lock(&INPUTS)
            .get_or_insert_with(HashMap::new)
            .entry(id)
            .or_insert_with(|| path.to_path_buf());
    }
}

/// The input `path` is, if it exists and is one.
fn protected(path: &Path) -> Option<PathBuf> {
    let meta = std::fs::metadata(path).ok()?;
    let id = file_id(&meta)?;
    lock(&INPUTS).as_ref()?.get(&id).cloned()
}

/// Refuses `dest` when it is an input of the run.
pub fn refuse_input(dest: &Path) -> std::result::Result<(), Refused> {
    match protected(dest) {
        Some(input) if input == dest => Err(Refused(format!(
            "{}: refusing to write an output over an input of this run",
            dest.display()
        ))),
        Some(input) => Err(Refused(format!(
            "{}: refusing to write an output over an input of this run ({})",
            dest.display(),
            input.display()
        ))),
        None => Ok(()),
    }
}

/// `path` made absolute and with `.` and `..` resolved lexically, for
/// comparing destinations that do not exist yet.
pub fn normalize(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Removes every temporary when SIGINT or SIGTERM arrives, then lets the
/// signal end the process as it would have. Call once, at start-up; the
/// work is done in the signal handler (see `cleanup.rs`), no thread waits.
pub fn install_signal_cleanup() {
    crate::cleanup::install();
}

/// One staged output.
enum Staged {
    /// A temporary beside its destination, renamed at commit.
    Temporary {
        tmp: Option<tempfile::NamedTempFile>,
        /// The temporary's entry in the signal handler's list.
        registration: Option<crate::cleanup::Registration>,
        dest: PathBuf,
    },
    /// An existing special file (a device, a FIFO), written at commit.
    Direct { bytes: Vec<u8>, dest: PathBuf },
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Staged::Temporary {
            tmp, registration, ..
        } = self
        {
            if let Some(t) = tmp.take() {
                let _ = t.close();
            }
            // Unregistered once the file is gone, so a signal never misses it.
            registration.take();
        }
    }
}

/// The outputs of one job, written all or none.
#[derive(Default)]
pub struct Outputs {
    staged: Vec<Staged>,
    dests: HashSet<PathBuf>,
}

impl Outputs {
    /// No outputs yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stages `bytes` for `dest`: checks the destination (not an input, not
    /// another output of this job, not a directory) and writes a temporary
    /// beside it. Nothing is visible at `dest` before [`Outputs::commit`].
    pub fn add(&mut self, dest: &Path, bytes: &[u8]) -> Result<()> {
        self.add_with(dest, |w| w.write_all(bytes))
    }

    /// Stages what `fill` writes for `dest`, as [`Outputs::add`]: `fill`
    /// writes into a buffered temporary as it goes, so a large result never
    /// has to be held whole in memory.
    pub fn add_with(
        &mut self,
        dest: &Path,
        fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        self.add_with_file(dest, |w, _| fill(w))
    }

    /// [`Outputs::add_with`], where `fill` also gets the temporary file
    /// itself when there is one, for positional writes (`write_at`) after
    /// flushing the writer; it leaves the file's cursor at the end of what
    /// it wrote. Destinations that are not regular files get `None`.
    pub fn add_with_file(
        &mut self,
        dest: &Path,
        fill: impl FnOnce(&mut dyn Write, Option<&std::fs::File>) -> std::io::Result<()>,
    ) -> Result<()> {
        refuse_input(dest)?;
        if !self.dests.insert(normalize(dest)) {
            return Err(Refused(format!(
                "{}: two outputs of one job name the same file",
                dest.display()
            ))
            .into());
        }
        if let Ok(meta) = std::fs::metadata(dest) {
            if meta.is_dir() {
                anyhow::bail!("cannot write {}: it is a directory", dest.display());
            }
            if !meta.is_file() {
                let mut bytes = Vec::new();
                fill(&mut bytes, None)
                    .with_context(|| format!("cannot write {}", dest.display()))?;
                self.staged.push(Staged::Direct {
                    bytes,
                    dest: dest.to_path_buf(),
                });
                return Ok(());
            }
        }
        let dir = match dest.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create directory {}", dir.display()))?;
                dir.to_path_buf()
            }
            None => PathBuf::from("."),
        };
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".into());
        let prefix = format!(".{name}.");
        let mut registration = None;
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".tmp")
            .make_in(&dir, |path| {
                let (file, reg) = crate::cleanup::create(path, |path| {
                    let mut o = std::fs::OpenOptions::new();
                    o.write(true).create_new(true);
                    #[cfg(unix)]
                    {
                        // Like any newly created file: 0666 less the umask
                        // (tempfile's own default, 0600, would hide results
                        // from other users).
                        use std::os::unix::fs::OpenOptionsExt;
                        o.mode(0o666);
                    }
                    o.open(path)
                })?;
                registration = Some(reg);
                Ok(file)
            })
            .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
        let mut staged = Staged::Temporary {
            tmp: Some(tmp),
            registration,
            dest: dest.to_path_buf(),
        };
        if let Staged::Temporary { tmp: Some(tmp), .. } = &mut staged {
            let path = tmp.path().to_path_buf();
            let file: &std::fs::File = tmp.as_file();
            let mut w = std::io::BufWriter::with_capacity(1 << 16, file);
            fill(&mut w, Some(file))
                .and_then(|()| w.flush())
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        self.staged.push(staged);
        Ok(())
    }

    /// Moves every staged output into place. When one cannot be, those
    /// already moved are removed again and the rest are dropped, so the job
    /// leaves none of its outputs.
    pub fn commit(mut self) -> Result<()> {
        let mut done: Vec<PathBuf> = Vec::new();
        let mut failure = None;
        for staged in &mut self.staged {
            let result = match staged {
                Staged::Temporary {
                    tmp,
                    registration,
                    dest,
                } => {
                    let tmp = tmp.take().expect("staged once, committed once");
                    let r = tmp
                        .persist(&*dest)
                        .map(|_| ())
                        .map_err(|e| {
                            let _ = e.file.close();
                            anyhow::Error::new(e.error)
                        })
                        .with_context(|| format!("cannot move result into {}", dest.display()));
                    // Unregistered once the temporary is renamed or removed.
                    registration.take();
                    r.map(|_| dest.clone())
                }
                Staged::Direct { bytes, dest } => std::fs::OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(&*dest)
                    .and_then(|mut f| f.write_all(bytes).and_then(|_| f.flush()))
                    .map(|_| PathBuf::new())
                    .with_context(|| format!("cannot write {}", dest.display())),
            };
            match result {
                Ok(p) => done.push(p),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failure {
            for p in done.iter().filter(|p| !p.as_os_str().is_empty()) {
                let _ = std::fs::remove_file(p);
            }
            return Err(e);
        }
        Ok(())
    }
}

/// Writes `bytes` to `path` atomically (temporary file, then rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Writes what `fill` produces to `path` atomically, streaming into the
/// temporary (see [`Outputs::add_with`]).
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let mut outputs = Outputs::new();
    outputs.add_with(path, fill)?;
    outputs.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn writes_whole_file_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("xaifb-output-test-{}", std::process::id()));
        let path = dir.join("sub").join("out.xaif");
        write_atomic(&path, b"abc").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abc");
        assert!(leftovers(path.parent().unwrap()).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_job_writes_all_its_outputs_or_none() {
        let dir = std::env::temp_dir().join(format!("xaifb-output-all-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("taken")).unwrap();
        let mut o = Outputs::new();
        o.add(&dir.join("a.txt"), b"a").unwrap();
        assert!(o.add(&dir.join("taken"), b"b").is_err());
        drop(o);
        assert!(!dir.join("a.txt").exists());
        assert!(leftovers(&dir).is_empty());
        // The same destination twice in one job is refused.
        let mut o = Outputs::new();
        o.add(&dir.join("a.txt"), b"a").unwrap();
        let e = o.add(&dir.join("./a.txt"), b"b").unwrap_err();
        assert!(e.downcast_ref::<Refused>().is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
