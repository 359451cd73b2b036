//! Standard output and standard error that never panic.
//!
//! `print!` and `eprint!` panic when the stream cannot be written (a closed
//! pipe, a full device). The driver shadows them (see the macros at the top
//! of `main.rs`) with the functions here, which behave like a Unix filter:
//!
//! - a closed pipe on standard output ends the output quietly: later writes
//!   are dropped, the work already done is kept, and the exit code is the
//!   one the run earns otherwise (as `xaifb … | head` expects);
//! - any other write error (a full device, an I/O error) is remembered and
//!   turns the exit code into 3 with a message, when the run ends
//!   ([`finish`]).
//!
//! Standard error is best effort: a message that cannot be written is lost,
//! but a failure other than a closed pipe still makes the exit code 3.

use std::fmt;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Set once standard output turned out to be a closed pipe.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// Set once standard error turned out to be a closed pipe.
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);
/// The first write error other than a closed pipe.
static FAILURE: Mutex<Option<String>> = Mutex::new(None);

fn record(stream: &str, e: &std::io::Error, closed: &AtomicBool) {
    if e.kind() == ErrorKind::BrokenPipe {
        closed.store(true, Ordering::Relaxed);
        return;
    }
    let mut failure = FAILURE.lock().unwrap_or_else(|p| p.into_inner());
    if failure.is_none() {
        *failure = Some(format!("cannot write to {stream}: {}", plain_io_message(e)));
    }
}

/// The system's message without Rust's ` (os error N)` suffix, as every
/// message of the driver words an I/O error.
pub fn plain_io_message(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Writes formatted text to standard output (the `print!` of the driver).
pub fn out(args: fmt::Arguments<'_>) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut lock = std::io::stdout().lock();
    if let Err(e) = lock.write_fmt(args) {
        record("standard output", &e, &STDOUT_CLOSED);
    }
}

/// Standard output as a writer with the same rules as [`out`]: it never
/// fails (a closed pipe drops the rest, other errors are kept for
/// [`finish`]), so streaming a large result to it needs no error path.
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !STDOUT_CLOSED.load(Ordering::Relaxed) {
            if let Err(e) = std::io::stdout().lock().write_all(buf) {
                record("standard output", &e, &STDOUT_CLOSED);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes formatted text to standard error (the `eprint!` of the driver).
pub fn err(args: fmt::Arguments<'_>) {
    if STDERR_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut lock = std::io::stderr().lock();
    if let Err(e) = lock.write_fmt(args) {
        record("standard error", &e, &STDERR_CLOSED);
    }
}

/// Flushes both streams; returns the first write error of the run other
/// than a closed pipe, if any.
pub fn finish() -> Option<String> {
    if !STDOUT_CLOSED.load(Ordering::Relaxed) {
        if let Err(e) = std::io::stdout().lock().flush() {
            record("standard output", &e, &STDOUT_CLOSED);
        }
    }
    if !STDERR_CLOSED.load(Ordering::Relaxed) {
        if let Err(e) = std::io::stderr().lock().flush() {
            record("standard error", &e, &STDERR_CLOSED);
        }
    }
    FAILURE.lock().unwrap_or_else(|p| p.into_inner()).take()
}
