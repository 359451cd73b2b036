//! The last step of every command: what the user reads and the exit code.
//!
//! One cause, one exit code, one message, in every subcommand:
//!
//! - 1: an input that cannot be read ([`crate::input::InputError`]) or is
//!   not valid or cannot be transformed ([`Invalid`]); the message names
//!   the file (and the line and element where one is known);
//! - 2: a command line that cannot work ([`Usage`], and
//!   [`crate::output::Refused`]: an output over an input, two outputs on
//!   one path or both on standard output);
//! - 3: everything else, the environment (a schema directory or tool that
//!   is missing, an output that cannot be written);
//! - 4: not enough memory: an input's bytes that do not fit
//!   ([`crate::input::Cause::NoMemory`]) or any other allocation that
//!   fails (`cleanup::out_of_memory`, which ends the process at once).
//!
//! Commands return typed errors and this module alone turns them into a
//! message and a code; a batch keeps the worst code of its files.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};

/// A command line that cannot work (exit code 2); the message says why in
/// the words of the command line.
#[derive(Debug, Clone)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// An input that is not valid or cannot be transformed (exit code 1); the
/// message is the full report, naming the file.
#[derive(Debug, Clone)]
pub struct Invalid(pub String);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

/// The exit code of an error, by its cause (see the module's list).
pub fn code_of(e: &anyhow::Error) -> u8 {
    for cause in e.chain() {
        if let Some(i) = cause.downcast_ref::<crate::input::InputError>() {
            return match i.cause {
                crate::input::Cause::NoMemory => crate::cleanup::OUT_OF_MEMORY,
                _ => 1,
            };
        }
        if cause.is::<Invalid>() {
            return 1;
        }
        if cause.is::<Usage>() || cause.is::<crate::output::Refused>() {
            return 2;
        }
    }
    3
}

/// The message of an error: an input's report as it is (it names the
/// file), anything else after `xaifb: `.
pub fn message_of(e: &anyhow::Error) -> String {
    if let Some(input) = e.chain().find_map(|c| {
        c.downcast_ref::<crate::input::InputError>()
            .map(ToString::to_string)
            .or_else(|| c.downcast_ref::<Invalid>().map(ToString::to_string))
    }) {
        return input;
    }
    format!("xaifb: {e:#}")
}

/// Prints an error that ended a command and returns its exit code.
pub fn error_exit(e: &anyhow::Error) -> ExitCode {
    eprintln!("{}", message_of(e));
    ExitCode::from(code_of(e).max(worst()))
}

/// The worst exit code so far: of the failed files of a batch, and 4 once
/// an input did not fit into memory (`cleanup::input_out_of_memory`),
/// whatever became of its error.
fn worst() -> u8 {
    let w = WORST.load(Ordering::Relaxed);
    if crate::cleanup::input_was_out_of_memory() {
        w.max(crate::cleanup::OUT_OF_MEMORY)
    } else {
        w
    }
}

/// The worst exit code of the failed files of a batch so far.
static WORST: AtomicU8 = AtomicU8::new(0);

/// The report of one file of a batch that failed with `e`; the batch's exit
/// code becomes at least `e`'s.
pub fn job_failure(input: &Path, e: &anyhow::Error) -> String {
    WORST.fetch_max(code_of(e), Ordering::Relaxed);
    let message = message_of(e);
    let bare = message.strip_prefix("xaifb: ").unwrap_or(&message);
    let name = input.display().to_string();
    if bare.starts_with(&name) {
        bare.to_string()
    } else {
        format!("{name}: {bare}")
    }
}

/// The exit code of a batch with `failed` failures: 0, or the worst code
/// of its failures (1 for an input that failed without a recorded cause).
pub fn batch_exit_code(failed: usize) -> ExitCode {
    match worst() {
        0 if failed > 0 => ExitCode::from(1),
        0 => ExitCode::SUCCESS,
        worst => ExitCode::from(worst),
    }
}

/// A note or warning on standard error, unless `quiet`.
pub fn note(quiet: bool, text: &str) {
    if !quiet {
        eprintln!("xaifb: {text}");
    }
}

/// Why one input's transformation failed: its message and, when it is
/// about one statement of the input, where that statement starts and its
/// element name.
pub struct Failure {
    message: String,
    at: Option<(xaif_model::Span, &'static str)>,
    /// A second element the message names (its line and column are added).
    also: Option<(xaif_model::Span, &'static str)>,
}

impl From<xaif_linearize::TransformError> for Failure {
    fn from(e: xaif_linearize::TransformError) -> Self {
        Failure {
            at: e.location(),
            also: e.second_location(),
            message: e.to_string(),
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure {
            message,
            at: None,
            also: None,
        }
    }
}

impl Failure {
    /// `input: message`, or `input:line:column: element E: message` when
    /// the statement is known: the input is read again to find its line
    /// (only on this error path; standard input cannot be, and gets no
    /// line).
    pub fn render(&self, input: &Path) -> String {
        let bytes = (self.at.is_some() && input.as_os_str() != "-")
            .then(|| std::fs::read(input).ok())
            .flatten();
        let name = input.display().to_string();
        let locate = |(span, element): (xaif_model::Span, &'static str)| {
            let bytes = bytes.as_ref()?;
            let (line, column) = xaif_model::source_map(bytes, Some(&name)).locate(span);
            (line > 0).then(|| format!("{name}:{line}:{column}: element {element}"))
        };
        let also = self
            .also
            .and_then(locate)
            .map(|l| format!(" (the other statement: {l})"))
            .unwrap_or_default();
        match self.at.and_then(locate) {
            Some(prefix) => format!("{prefix}: {}{also}", self.message),
            None => format!("{}: {}", crate::input::display_name(input), self.message),
        }
    }
}

/// The debug records of `text` that `-T` selects. A record is a line, or
/// a graph from its `// name …` comment to the next one; it is selected
/// when one of its first line's words (a debug group such as `metrics:`,
/// a routine or graph name) is one of the tags.
pub fn select_debug(tags: Option<&str>, text: &str) -> String {
    let Some(tags) = tags else {
        return text.to_string();
    };
    let wanted: Vec<String> = tags
        .split_whitespace()
        .map(|t| t.trim_end_matches(':').to_ascii_lowercase())
        .collect();
    let words = |line: &str| -> Vec<String> {
        line.split(|c: char| c.is_whitespace() || c == ':' || c == ',')
            .filter(|w| !w.is_empty() && *w != "//")
            .map(str::to_ascii_lowercase)
            .collect()
    };
    let mut out = String::new();
    let mut keep = false;
    let mut in_graph = false;
    for line in text.split_inclusive('\n') {
        let starts_graph = line.starts_with("// ");
        if starts_graph || !in_graph {
            let mut w = words(line);
            if starts_graph {
                w.push("graphics".into());
                // Graph names are routine_block_graph: each part counts.
                let parts: Vec<String> = w
                    .iter()
                    .flat_map(|x| x.split('_').map(str::to_string).collect::<Vec<_>>())
                    .collect();
                w.extend(parts);
            }
            keep = w.iter().any(|x| wanted.contains(x))
                || (starts_graph
                    && w.iter()
                        .any(|x| wanted.iter().any(|t| x.starts_with(t.as_str()))));
            in_graph = starts_graph;
        }
        if keep {
            out.push_str(line);
        }
    }
    out
}
