//! Reading the files a command is given, with one message per cause.
//!
//! Every subcommand reads its inputs (programs, catalogues, Jacobian files,
//! `params.conf`, `harness.json`) through this module, so that the same
//! cause gives the same message and the same exit code everywhere
//! ([`InputError`], exit code 1): a missing file, a symbolic link loop, a
//! directory, a FIFO or device (never opened for reading, so never a hang or
//! an endless read), a file larger than the input size limit.
//!
//! Every file read is also registered as an input of the run, so that no
//! output is ever written over it (`output.rs`).
//!
//! `-` names standard input wherever a file is read; it can be read once
//! per run, so a command line that names it twice is refused before any
//! work (`flags::stdin_once`).

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The default input size limit: 256 MiB, about a hundred times the largest
/// program of the OpenAD regression corpus (2.9 MB). Reading, checking and
/// transforming take about ten times the input size in memory.
pub const DEFAULT_MAX_INPUT_SIZE: u64 = 256 << 20;

static MAX_INPUT_SIZE: AtomicU64 = AtomicU64::new(DEFAULT_MAX_INPUT_SIZE);

/// Sets the input size limit (`--max-input-size`).
pub fn set_max_input_size(bytes: u64) {
    MAX_INPUT_SIZE.store(bytes, Ordering::Relaxed);
}

/// The input size limit in force.
pub fn max_input_size() -> u64 {
    MAX_INPUT_SIZE.load(Ordering::Relaxed)
}

/// Why a file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// Nothing by that name.
    Missing,
    /// A symbolic link whose target does not exist.
    BrokenLink,
    /// A chain of symbolic links that never ends.
    LinkLoop,
    /// Not readable by this user.
    PermissionDenied,
    /// A directory where a file was expected.
    Directory,
    /// A named pipe.
    Fifo,
    /// A character device (`/dev/zero`, `/dev/urandom`, a terminal).
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A Unix socket.
    Socket,
    /// Larger than the input size limit.
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// Not UTF-8 text (for text inputs such as Jacobian files).
    NotText,
    /// Its bytes do not fit into memory (exit code 4, as every failed
    /// allocation: `cleanup::out_of_memory`).
    NoMemory,
    /// Any other I/O error, as the system words it.
    Io(String),
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Missing => write!(f, "no such file or directory"),
            Cause::BrokenLink => write!(f, "broken symbolic link (its target does not exist)"),
            Cause::LinkLoop => write!(f, "symbolic link loop"),
            Cause::PermissionDenied => write!(f, "permission denied"),
            Cause::Directory => write!(f, "is a directory, not a file"),
            Cause::Fifo => write!(f, "is a FIFO (named pipe), not a regular file"),
            Cause::CharDevice => write!(f, "is a character device, not a regular file"),
            Cause::BlockDevice => write!(f, "is a block device, not a regular file"),
            Cause::Socket => write!(f, "is a socket, not a regular file"),
            Cause::TooLarge { limit } => write!(
                f,
                "is larger than the input size limit of {limit} bytes (raise it with --max-input-size)"
            ),
            Cause::NotText => write!(f, "is not UTF-8 text"),
            Cause::NoMemory => f.write_str(&crate::cleanup::out_of_memory_cause(
                crate::cleanup::address_space_limit(),
            )),
            Cause::Io(e) => write!(f, "{e}"),
        }
    }
}

/// A file that could not be read: `PATH: CAUSE`. Exit code 1 in every
/// subcommand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file as the user named it.
    pub path: PathBuf,
    /// Why it could not be read.
    pub cause: Cause,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.cause)
    }
}

impl std::error::Error for InputError {}

fn error(path: &Path, cause: Cause) -> InputError {
    if cause == Cause::NoMemory {
        crate::cleanup::input_out_of_memory();
    }
    InputError {
        path: path.to_path_buf(),
        cause,
    }
}

/// The cause of an I/O error on `path`.
pub fn io_cause(path: &Path, e: &std::io::Error) -> Cause {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return Cause::LinkLoop;
    }
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                Cause::BrokenLink
            } else {
                Cause::Missing
            }
        }
        std::io::ErrorKind::PermissionDenied => Cause::PermissionDenied,
        std::io::ErrorKind::OutOfMemory => Cause::NoMemory,
        _ => Cause::Io(plain_io_message(e)),
    }
}

use crate::console::plain_io_message;

/// The cause of a file type that is not a regular file, if it is not.
pub fn type_cause(t: std::fs::FileType) -> Option<Cause> {
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some(Cause::Directory);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some(Cause::Fifo);
        }
        if t.is_char_device() {
            return Some(Cause::CharDevice);
        }
        if t.is_block_device() {
            return Some(Cause::BlockDevice);
        }
        if t.is_socket() {
            return Some(Cause::Socket);
        }
    }
    Some(Cause::Io("not a regular file".into()))
}

/// Whether `path` names standard input (`-`).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// How messages name an input: `<stdin>` for `-`, the path otherwise.
pub fn display_name(path: &Path) -> String {
    if is_stdin(path) {
        STDIN_NAME.into()
    } else {
        path.display().to_string()
    }
}

/// Names `path` as an input being worked on until the registration is
/// dropped: a failed allocation meanwhile names it in its message
/// (`cleanup::out_of_memory`).
pub fn working_on(path: &Path) -> crate::cleanup::Registration {
    crate::cleanup::working_on(&display_name(path))
}

/// The name of standard input in messages.
pub const STDIN_NAME: &str = "<stdin>";

/// Checks that `path` is a regular file within the size limit, without
/// reading it, and registers it as an input (for files a library reads
/// itself, such as the catalogues). Standard input (`-`) passes.
pub fn check(path: &Path) -> Result<(), InputError> {
    if is_stdin(path) {
        return Ok(());
    }
    let meta = std::fs::metadata(path).map_err(|e| error(path, io_cause(path, &e)))?;
    if let Some(cause) = type_cause(meta.file_type()) {
        return Err(error(path, cause));
    }
    let limit = max_input_size();
    if meta.len() > limit {
        return Err(error(path, Cause::TooLarge { limit }));
    }
    crate::output::protect(path, &meta);
    Ok(())
}

/// Reads a whole input file: only regular files (a FIFO or device is never
/// read, so never blocks or reads forever) of at most the input size limit;
/// `-` reads standard input.
pub fn read(path: &Path) -> Result<Vec<u8>, InputError> {
    if is_stdin(path) {
        return read_stdin();
    }
    check(path)?;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        // Opening a FIFO that replaced the file since the check must not
        // block waiting for a writer.
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .map_err(|e| error(path, io_cause(path, &e)))?;
    let meta = file
        .metadata()
        .map_err(|e| error(path, io_cause(path, &e)))?;
    if let Some(cause) = type_cause(meta.file_type()) {
        return Err(error(path, cause));
    }
    let limit = max_input_size();
    let mut bytes = Vec::new();
    // The file's bytes are the first large allocation of a run: one that
    // does not fit is the input's error, before any work.
    crate::alloc::fallible(|| bytes.try_reserve_exact(meta.len().min(limit) as usize))
        .map_err(|_| error(path, Cause::NoMemory))?;
    // Read at most one byte past the limit: a file that grows while it is
    // read is still bounded.
    crate::alloc::fallible(|| file.take(limit.saturating_add(1)).read_to_end(&mut bytes))
        .map_err(|e| error(path, io_cause(path, &e)))?;
    if bytes.len() as u64 > limit {
        return Err(error(path, Cause::TooLarge { limit }));
    }
    Ok(bytes)
}

/// Reads standard input (an input named `-`), bounded by the input size
/// limit like a file.
pub fn read_stdin() -> Result<Vec<u8>, InputError> {
    let path = Path::new(STDIN_NAME);
    let limit = max_input_size();
    let mut bytes = Vec::new();
    crate::alloc::fallible(|| {
        std::io::stdin()
            .lock()
            .take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
    })
    .map_err(|e| error(path, io_cause(path, &e)))?;
    if bytes.len() as u64 > limit {
        return Err(error(path, Cause::TooLarge { limit }));
    }
    Ok(bytes)
}

/// Reads a whole UTF-8 text input (a Jacobian file, `params.conf`,
/// `harness.json`).
pub fn read_text(path: &Path) -> Result<String, InputError> {
    String::from_utf8(read(path)?).map_err(|_| error(path, Cause::NotText))
}

/// Reads any XAIF document (program or catalogue); the error is the full
/// report (file, line, column, element).
pub fn read_document(path: &Path) -> Result<xaif_model::Parsed, String> {
    let bytes = read(path).map_err(|e| e.to_string())?;
    xaif_model::read_bytes(&bytes, Some(&display_name(path))).map_err(|e| e.to_string())
}

/// Reads a program (a `CallGraph` document); the error is the full report.
pub fn read_program(path: &Path) -> Result<(xaif_model::Program, xaif_model::SourceMap), String> {
    let parsed = read_document(path)?;
    match parsed.document {
        xaif_model::Document::Program(p) => Ok((*p, parsed.source)),
        other => Err(xaif_model::ModelErrors::from(parsed.source.error(
            xaif_model::Span(0),
            other.root_name(),
            xaif_model::ErrorKind::UnknownRoot(format!(
                "{} (a program was expected)",
                other.root_name()
            )),
        ))
        .to_string()),
    }
}
