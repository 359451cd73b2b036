//! Writing result files: all of a job's files or none, never over an input,
//! never a partial or leftover file or directory.
//!
//! - Every output goes to a temporary file created beside its destination
//!   (tempfile: a unique name per job, removed when dropped, at most
//!   [`TEMPORARY_NAME_KEEP`] bytes of the destination's name in it, so that
//!   any legal name has a legal temporary) and is renamed into place only
//!   when the job's outputs are all complete ([`Outputs::commit`]), so a
//!   failed job leaves the previous files or nothing, and jobs writing
//!   beside each other never share a temporary. Directories made for the
//!   outputs are removed again when the job does not commit.
//! - SIGINT and SIGTERM remove the temporaries that are still open, then end
//!   the process by the signal as usual ([`install_signal_cleanup`]).
//! - A destination that is the same file as an input of the run (the
//!   program, a catalogue, `params.conf`, …; see `input.rs`) or as another
//!   output of the same job is refused ([`Refused`], exit code 2); so are
//!   two outputs of one command line on one path or both on standard
//!   output, before any work is done ([`Plan`]).
//! - `-` names standard output, written after the files are in place.
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

use anyhow::Result;

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

/// How many bytes of a destination's name its temporary's name keeps
/// (`.NAME.XXXXXX.tmp`): a file name may have up to 255 bytes, and the
/// temporary of any legal name must be legal too.
pub const TEMPORARY_NAME_KEEP: usize = 64;

/// The prefix of the temporary of `dest`: `.` and at most
/// [`TEMPORARY_NAME_KEEP`] bytes of its name (cut at a character), `.`.
fn temporary_prefix(dest: &Path) -> String {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    let mut end = name.len().min(TEMPORARY_NAME_KEEP);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!(".{}.", &name[..end])
}

/// `cannot VERB PATH: CAUSE`, with the system's words for the cause.
fn io_failure(verb: &str, path: &Path, e: &std::io::Error) -> anyhow::Error {
    anyhow::anyhow!(
        "cannot {verb} {}: {}",
        path.display(),
        crate::console::plain_io_message(e)
    )
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
    /// Standard output (a destination named `-`), written after every file
    /// is in place.
    Stdout(Vec<u8>),
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

/// The outputs of one job, written all or none: files, directories made
/// for them, and standard output.
#[derive(Default)]
pub struct Outputs {
    staged: Vec<Staged>,
    dests: HashSet<PathBuf>,
    /// Existing destinations by identity (two names of one file).
    existing: HashSet<FileId>,
    /// Whether standard output is taken.
    stdout: bool,
    /// Directories made for the outputs (in the order made), with their
    /// entries in the signal handler's list: removed again (when empty)
    /// unless the job commits.
    created: Vec<(PathBuf, crate::cleanup::Registration)>,
}

impl Drop for Outputs {
    fn drop(&mut self) {
        // The temporaries first, then the directories made for them,
        // deepest first; each unregistered once it is gone (or kept,
        // holding what another job put there).
        self.staged.clear();
        while let Some((d, registration)) = self.created.pop() {
            let _ = std::fs::remove_dir(&d);
            drop(registration);
        }
    }
}

impl Outputs {
    /// No outputs yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stages `bytes` for `dest` (`-`: standard output): checks the
    /// destination (not an input, not another output of this job, not a
    /// directory) and writes a temporary beside it. Nothing is visible at
    /// `dest` before [`Outputs::commit`].
    pub fn add(&mut self, dest: &Path, bytes: &[u8]) -> Result<()> {
        self.add_with(dest, |w| w.write_all(bytes))
    }

    /// [`Outputs::add`] for a program file: made executable (`0755`).
    pub fn add_executable(&mut self, dest: &Path, bytes: &[u8]) -> Result<()> {
        self.stage(dest, true, |w, _| w.write_all(bytes))
    }

    /// Stages what `fill` writes for `dest`, as [`Outputs::add`]: `fill`
    /// writes into a buffered temporary as it goes, so a large result never
    /// has to be held whole in memory.
    pub fn add_with(
        &mut self,
        dest: &Path,
        fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        self.stage(dest, false, |w, _| fill(w))
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
        self.stage(dest, false, fill)
    }

    /// Claims `dest` for this job: refused when it is an input of the run
    /// or another output of the job (by name or, for an existing file, by
    /// identity).
    fn claim(&mut self, dest: &Path) -> Result<()> {
        refuse_input(dest)?;
        let twice = || {
            Refused(format!(
                "{}: two outputs of one job name the same file",
                dest.display()
            ))
        };
        if !self.dests.insert(normalize(dest)) {
            return Err(twice().into());
        }
        if let Some(id) = std::fs::metadata(dest).ok().as_ref().and_then(file_id) {
            if !self.existing.insert(id) {
                return Err(twice().into());
            }
        }
        Ok(())
    }

    fn stage(
        &mut self,
        dest: &Path,
        executable: bool,
        fill: impl FnOnce(&mut dyn Write, Option<&std::fs::File>) -> std::io::Result<()>,
    ) -> Result<()> {
        if dest.as_os_str() == "-" {
            if std::mem::replace(&mut self.stdout, true) {
                return Err(Refused(
                    "two outputs of one job would both go to standard output (`-`)".into(),
                )
                .into());
            }
            let mut bytes = Vec::new();
            fill(&mut bytes, None).map_err(|e| io_failure("write", dest, &e))?;
            self.staged.push(Staged::Stdout(bytes));
            return Ok(());
        }
        self.claim(dest)?;
        if let Ok(meta) = std::fs::metadata(dest) {
            if meta.is_dir() {
                anyhow::bail!("cannot write {}: it is a directory", dest.display());
            }
            if !meta.is_file() {
                let mut bytes = Vec::new();
                fill(&mut bytes, None).map_err(|e| io_failure("write", dest, &e))?;
                self.staged.push(Staged::Direct {
                    bytes,
                    dest: dest.to_path_buf(),
                });
                return Ok(());
            }
        }
        let (tmp, registration) = self.temporary(dest)?;
        let mut staged = Staged::Temporary {
            tmp: Some(tmp),
            registration: Some(registration),
            dest: dest.to_path_buf(),
        };
        if let Staged::Temporary { tmp: Some(tmp), .. } = &mut staged {
            let path = tmp.path().to_path_buf();
            let file: &std::fs::File = tmp.as_file();
            let mut w = std::io::BufWriter::with_capacity(1 << 16, file);
            fill(&mut w, Some(file))
                .and_then(|()| w.flush())
                .map_err(|e| io_failure("write", &path, &e))?;
            drop(w);
            #[cfg(unix)]
            if executable {
                use std::os::unix::fs::PermissionsExt;
                file.set_permissions(std::fs::Permissions::from_mode(0o755))
                    .map_err(|e| io_failure("make executable", &path, &e))?;
            }
        }
        #[cfg(not(unix))]
        let _ = executable;
        self.staged.push(staged);
        Ok(())
    }

    /// Makes `dir` and the directories above it that are missing, one by
    /// one from the top, each registered with the signal handler when this
    /// call made it (`cleanup::create_dir`): a job that does not commit
    /// removes them, and so does an interrupt.
    fn make_dir(&mut self, dir: &Path) -> Result<()> {
        let mut missing = Vec::new();
        let mut d = Some(dir);
        while let Some(x) = d.filter(|x| !x.as_os_str().is_empty()) {
            if let Ok(meta) = std::fs::metadata(x) {
                if !meta.is_dir() {
                    anyhow::bail!(
                        "cannot create directory {}: {} is not a directory",
                        dir.display(),
                        x.display()
                    );
                }
                break;
            }
            missing.push(x.to_path_buf());
            d = x.parent();
        }
        for x in missing.into_iter().rev() {
            match crate::cleanup::create_dir(&x) {
                Ok(Some(registration)) => self.created.push((x, registration)),
                // Made meanwhile by another job or process: not ours.
                Ok(None) => {}
                Err(e) => return Err(io_failure("create directory", dir, &e)),
            }
        }
        Ok(())
    }

    /// A temporary beside `dest`, registered with the signal handler. Its
    /// directory is made when missing (again, should another job remove
    /// it meanwhile because its own outputs failed).
    fn temporary(
        &mut self,
        dest: &Path,
    ) -> Result<(tempfile::NamedTempFile, crate::cleanup::Registration)> {
        let dir = match dest.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(dir) => dir.to_path_buf(),
            None => PathBuf::from("."),
        };
        let prefix = temporary_prefix(dest);
        let mut attempts = 0;
        loop {
            attempts += 1;
            self.make_dir(&dir)?;
            let mut registration = None;
            let made = tempfile::Builder::new()
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
                });
            match made {
                Ok(tmp) => {
                    let reg = registration.expect("registered with the file");
                    return Ok((tmp, reg));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && attempts < 3 => {}
                Err(e) => {
                    return Err(anyhow::anyhow!(
                        "cannot create a temporary file in {}: {}",
                        dir.display(),
                        crate::console::plain_io_message(&e)
                    ))
                }
            }
        }
    }

    /// Moves every staged output into place, then writes what goes to
    /// standard output. When a file cannot be moved, those already moved
    /// are removed again and the rest are dropped, so the job leaves none
    /// of its outputs.
    pub fn commit(mut self) -> Result<()> {
        let mut done: Vec<PathBuf> = Vec::new();
        let mut placed: Vec<crate::cleanup::Registration> = Vec::new();
        let mut failure = None;
        for staged in &mut self.staged {
            let result = match staged {
                Staged::Temporary {
                    tmp,
                    registration,
                    dest,
                } => {
                    let tmp = tmp.take().expect("staged once, committed once");
                    // The output moved into place stays registered with the
                    // signal handler until every output of the job is in
                    // place: an interrupt meanwhile removes it, so a job
                    // never leaves half of its files (nor the directories
                    // made for them, which empty).
                    let r = crate::cleanup::create(dest, |d| {
                        tmp.persist(d).map(|_| ()).map_err(|e| {
                            let _ = e.file.close();
                            e.error
                        })
                    })
                    .map(|((), moved)| placed.push(moved))
                    .map_err(|e| io_failure("move result into", dest, &e));
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
                    .map_err(|e| io_failure("write", dest, &e)),
                Staged::Stdout(_) => Ok(PathBuf::new()),
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
        // Every file is in place: the files and the directories made for
        // them stay.
        drop(placed);
        self.created.clear();
        for staged in &self.staged {
            if let Staged::Stdout(bytes) = staged {
                crate::console::Stdout.write_all(bytes)?;
            }
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

/// Where one output of a command goes.
#[derive(Clone, Debug)]
pub enum Target {
    /// Standard output (no file named, or `-`).
    Stdout,
    /// A file.
    File(PathBuf),
    /// A directory of files (`--dot`, the graphs of `-G`).
    Dir(PathBuf),
}

/// The outputs a command line asks for, checked against each other before
/// any work is done ([`Plan::check`]): at most one of them on standard
/// output, no two on one path, no file where another output needs a
/// directory. [`Outputs`] checks the files again as they are staged (and
/// against the run's inputs).
#[derive(Default)]
pub struct Plan {
    items: Vec<(String, Target)>,
}

impl Plan {
    /// No outputs yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The output of `flag` is the file `path` (`-`: standard output).
    pub fn file(&mut self, flag: &str, path: &Path) {
        let target = if path.as_os_str() == "-" {
            Target::Stdout
        } else {
            Target::File(path.to_path_buf())
        };
        self.items
            .push((format!("{flag} {}", path.display()), target));
    }

    /// The output `what` goes to standard output (no file named).
    pub fn stdout(&mut self, what: &str) {
        self.items.push((what.to_string(), Target::Stdout));
    }

    /// The outputs of `flag` go into the directory `path`; `-` is refused
    /// (standard output cannot hold several files).
    pub fn dir(&mut self, flag: &str, path: &Path) -> std::result::Result<(), Refused> {
        if path.as_os_str() == "-" {
            return Err(Refused(format!(
                "{flag} -: standard output cannot hold a directory of files; name a directory"
            )));
        }
        self.items.push((
            format!("{flag} {}", path.display()),
            Target::Dir(path.to_path_buf()),
        ));
        Ok(())
    }

    /// Refuses two outputs that would go to standard output, two that name
    /// one path (one directory named twice is fine), and a file named where
    /// another output needs a directory.
    pub fn check(&self) -> std::result::Result<(), Refused> {
        let path = |t: &Target| match t {
            Target::Stdout => None,
            Target::File(p) => Some((normalize(p), false)),
            Target::Dir(p) => Some((normalize(p), true)),
        };
        for (i, (a, ta)) in self.items.iter().enumerate() {
            for (b, tb) in &self.items[i + 1..] {
                if matches!((ta, tb), (Target::Stdout, Target::Stdout)) {
                    return Err(Refused(format!(
                        "{a} and {b} would both write to standard output; name a file for one of them"
                    )));
                }
                let (Some((pa, da)), Some((pb, db))) = (path(ta), path(tb)) else {
                    continue;
                };
                if pa == pb && !(da && db) {
                    return Err(Refused(format!(
                        "{a} and {b} name the same path; give them different names"
                    )));
                }
                let file_above = (!da && pb.starts_with(&pa) && pa != pb)
                    || (!db && pa.starts_with(&pb) && pa != pb);
                if file_above {
                    return Err(Refused(format!(
                        "{a} and {b}: one path cannot be both a file and a directory holding another output"
                    )));
                }
            }
        }
        Ok(())
    }
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
