//! `xaifb`: the XAIF transformation engine's command-line driver.
//!
//! The driver is the only place that prints or decides exit codes; the
//! library crates return typed errors. Exit codes (one cause, one code, in
//! every subcommand; `report.rs`):
//!
//! - 0: every input was processed successfully;
//! - 1: at least one input is invalid (read, validation or schema errors)
//!   or could not be processed; the others were still processed;
//! - 2: the command line is wrong (a malformed or out-of-range value,
//!   flags that exclude each other, two outputs on one path or both on
//!   standard output, an output over an input, `-` twice);
//! - 3: the environment is wrong (no inputs found, schema directory or tool
//!   missing, an output, standard output included, not writable).
//!
//! A command is a pipeline of modules, each using only those below it:
//! the command line (`main.rs`, `flags.rs`, `compat.rs`), read
//! (`input.rs`), gate (`gate.rs`, `schema.rs`), transform (`transform.rs`,
//! and the other subcommands: `documents.rs`, `run.rs`, `analyze.rs`,
//! `shims.rs`), write (`write.rs`, `graphs.rs`, `stream.rs`, `output.rs`,
//! `cleanup.rs`), report (`report.rs`, `batch.rs`, `console.rs`).

// The driver's printing macros never panic: a closed pipe ends the output
// quietly and any other write error becomes exit code 3 (`console.rs`).
// Defined before the modules so that they shadow the standard ones in every
// module of the crate.
macro_rules! print {
    ($($t:tt)*) => { $crate::console::out(format_args!($($t)*)) };
}
macro_rules! println {
    () => { $crate::console::out(format_args!("\n")) };
    ($($t:tt)*) => {{ $crate::console::out(format_args!($($t)*)); $crate::console::out(format_args!("\n")) }};
}
macro_rules! eprint {
    ($($t:tt)*) => { $crate::console::err(format_args!($($t)*)) };
}
macro_rules! eprintln {
    () => { $crate::console::err(format_args!("\n")) };
    ($($t:tt)*) => { $crate::console::err(format_args!("{}\n", format_args!($($t)*))) };
}

/// mimalloc for large inputs, the system's allocator for the rest
/// (`alloc.rs`, `docs/decisions.md`); a failed allocation ends the run
/// cleanly with exit code 4.
#[global_allocator]
static GLOBAL: alloc::Allocator = alloc::Allocator;

mod alloc;

mod analyze;
mod batch;
mod cleanup;
mod compat;
mod console;
mod documents;
mod flags;
mod gate;
mod graphs;
mod input;
mod output;
mod report;
mod run;
mod schema;
mod shims;
mod stream;
mod transform;
mod write;

use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand};

/// xaifb reads, validates and transforms XAIF, the XML interface format of
/// the OpenAD automatic differentiation tool chain.
#[derive(Parser)]
#[command(name = "xaifb", version, about, args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    limits: Limits,
}

/// Limits that hold in every subcommand (see docs/limits.md).
#[derive(Args)]
struct Limits {
    /// Largest input file read, in bytes (suffixes K, M, G; default 256M).
    #[arg(long, global = true, value_name = "SIZE", value_parser = flags::parse_size,
          allow_hyphen_values = true)]
    max_input_size: Option<u64>,
    /// Seconds xmllint may take on one file (validate --schema, tangent
    /// and adjoint -v; default 30).
    #[arg(long, global = true, value_name = "SECONDS", value_parser = flags::parse_seconds,
          allow_hyphen_values = true)]
    xmllint_timeout: Option<f64>,
}

#[derive(Subcommand)]
enum Command {
    /// Read, validate and write XAIF back unchanged (same infoset).
    Roundtrip(documents::RoundtripArgs),
    /// Check XAIF files: model checks, and XSD validation with --schema.
    Validate(documents::ValidateArgs),
    /// Execute XAIF and print its Jacobian in the ad.out format.
    Run(run::RunArgs),
    /// Compare two Jacobian files (ad.out format).
    Compare(run::CompareArgs),
    /// Transform front-end XAIF into tangent-linear XAIF.
    Tangent(flags::TransformArgs),
    /// Transform front-end XAIF into adjoint XAIF (split and joint
    /// templates).
    Adjoint(flags::AdjointArgs),
    /// Transform front-end XAIF into trace XAIF (OpenAD's trace mode:
    /// placeholder 2 records calls, non-smooth intrinsics and active
    /// control flow when run).
    Trace(flags::TransformArgs),
    /// Convert arguments at call sites between active and passive, and
    /// nothing else (OpenAD's TypeChange driver).
    Typechange(flags::TransformArgs),
    /// Activity and to-be-recorded analyses: print what is active and what
    /// must be recorded, per routine and statement.
    Analyze(analyze::AnalyzeArgs),
    /// Write the four oadDriver paths of an xaifBooster installation under
    /// DIR, calling this xaifb, so that XAIFBOOSTERROOT=DIR makes OpenAD
    /// use it.
    Shims(shims::ShimsArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff).
    Man,
}

/// The command line, parsed by a command that holds only the subcommand
/// named on it: clap builds every argument of every subcommand it knows
/// before parsing, and for the one process per file that OpenAD runs that
/// was a twentieth of the run. Anything this quick parse does not accept
/// (help, version, errors, no or an unknown subcommand) is parsed again by
/// the whole command, so what a user sees is the whole command's output.
///
/// Help and version go to standard output like any output: a write error
/// there is exit code 3 (a closed pipe is not an error); any other clap
/// error is exit code 2.
fn parse_cli() -> Result<Cli, ExitCode> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(cli) = quick_parse(&args) {
        return Ok(cli);
    }
    let e = match Cli::try_parse_from(&args) {
        Ok(cli) => return Ok(cli),
        Err(e) => e,
    };
    if e.use_stderr() {
        let _ = e.print();
        return Err(ExitCode::from(2));
    }
    use std::io::Write;
    let written = e.print().and_then(|()| std::io::stdout().flush());
    match written {
        Err(w) if w.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!(
                "xaifb: cannot write to standard output: {}",
                console::plain_io_message(&w)
            );
            Err(ExitCode::from(3))
        }
        _ => Err(ExitCode::SUCCESS),
    }
}

/// [`parse_cli`]'s quick parse: `None` when it does not apply or fails.
fn quick_parse(args: &[std::ffi::OsString]) -> Option<Cli> {
    use clap::FromArgMatches;
    // The first word that is neither an option nor the value of a global
    // option names the subcommand.
    let mut words = args.iter().skip(1);
    let name = loop {
        let w = words.next()?.to_str()?;
        match w {
            "--max-input-size" | "--xmllint-timeout" => {
                words.next()?;
            }
            _ if w.starts_with('-') => {}
            _ => break w,
        }
    };
    let root = quick_command(name)?;
    let matches = root.try_get_matches_from(args).ok()?;
    Cli::from_arg_matches(&matches).ok()
}

/// The command [`quick_parse`] parses with when `name` is the subcommand:
/// the root's global options and that one subcommand.
fn quick_command(name: &str) -> Option<clap::Command> {
    let sub = |name: &'static str| clap::Command::new(name);
    let sub = match name {
        "tangent" => flags::TransformArgs::augment_args(sub("tangent")),
        "trace" => flags::TransformArgs::augment_args(sub("trace")),
        "typechange" => flags::TransformArgs::augment_args(sub("typechange")),
        "adjoint" => flags::AdjointArgs::augment_args(sub("adjoint")),
        "roundtrip" => documents::RoundtripArgs::augment_args(sub("roundtrip")),
        "validate" => documents::ValidateArgs::augment_args(sub("validate")),
        "run" => run::RunArgs::augment_args(sub("run")),
        "compare" => run::CompareArgs::augment_args(sub("compare")),
        "analyze" => analyze::AnalyzeArgs::augment_args(sub("analyze")),
        _ => return None,
    };
    let root = Limits::augment_args(
        clap::Command::new("xaifb")
            .args_override_self(true)
            .subcommand_required(true),
    )
    .subcommand(sub.args_override_self(true));
    Some(root)
}

fn main() -> ExitCode {
    batch::install_panic_hook();
    output::install_signal_cleanup();
    let cli = match parse_cli() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    if let Some(n) = cli.limits.max_input_size {
        input::set_max_input_size(n);
    }
    if let Some(t) = cli.limits.xmllint_timeout {
        schema::set_timeout(std::time::Duration::from_secs_f64(t));
    }
    let result = batch::catch(|| match cli.command {
        Command::Roundtrip(args) => documents::roundtrip(args),
        Command::Validate(args) => documents::validate(args),
        Command::Run(args) => run::run(args),
        Command::Compare(args) => run::compare_files(args),
        Command::Tangent(args) => transform::tangent(args),
        Command::Adjoint(args) => transform::adjoint(args),
        Command::Trace(args) => transform::trace(args),
        Command::Typechange(args) => transform::typechange(args),
        Command::Analyze(args) => analyze::analyze(args),
        Command::Shims(args) => shims::shims(args),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "xaifb", &mut console::Stdout);
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => clap_mangen::Man::new(Cli::command())
            .render(&mut console::Stdout)
            .map(|_| ExitCode::SUCCESS)
            .map_err(Into::into),
    });
    let code = match result {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => report::error_exit(&e),
        Err(panic) => {
            eprintln!("xaifb: internal error (a bug in xaifb, please report it): {panic}");
            ExitCode::from(1)
        }
    };
    match console::finish() {
        Some(failure) => {
            eprintln!("xaifb: {failure}");
            ExitCode::from(3)
        }
        None => code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quick parse defines every subcommand's arguments exactly as the
    /// whole command does, and parses command lines to the same matches;
    /// what it refuses goes to the whole command.
    #[test]
    fn quick_parse_is_the_whole_parse() {
        let mut full = Cli::command();
        full.build();
        let names = [
            "tangent",
            "trace",
            "typechange",
            "adjoint",
            "roundtrip",
            "validate",
            "run",
            "compare",
            "analyze",
        ];
        let describe = |c: &clap::Command| {
            // The display order of the global options only matters to
            // help, which the whole command prints.
            let mut v: Vec<String> = c
                .get_arguments()
                .map(|a| {
                    if a.is_global_set() {
                        format!("{:?}", a.clone().display_order(0))
                    } else {
                        format!("{a:?}")
                    }
                })
                .collect();
            v.sort();
            v
        };
        for name in names {
            let mut quick = quick_command(name).expect("a quick command");
            quick.build();
            let q = quick.find_subcommand(name).expect("the subcommand");
            let f = full.find_subcommand(name).expect("the subcommand");
            let (dq, df) = (describe(q), describe(f));
            let only_quick: Vec<_> = dq.iter().filter(|a| !df.contains(a)).collect();
            let only_whole: Vec<_> = df.iter().filter(|a| !dq.contains(a)).collect();
            assert!(
                only_quick.is_empty() && only_whole.is_empty(),
                "{name}: quick {only_quick:#?}, whole {only_whole:#?}"
            );
            assert_eq!(
                q.is_args_override_self(),
                f.is_args_override_self(),
                "{name}"
            );
        }
        for name in ["shims", "completions", "man", "help", "nosuch"] {
            assert!(quick_command(name).is_none(), "{name}");
        }
        let lines: &[&[&str]] = &[
            &[
                "xaifb", "tangent", "-i", "a.xaif", "-o", "b.xaif", "-S", "-A", "2",
            ],
            &[
                "xaifb",
                "--max-input-size",
                "1M",
                "tangent",
                "a.xaif",
                "-o",
                "x",
                "-o",
                "y",
            ],
            &[
                "xaifb", "adjoint", "-I", "-aRm", "--seed", "3", "--effort", "max", "a.xaif",
            ],
            &[
                "xaifb",
                "run",
                "f.xaif",
                "--mode",
                "split",
                "--xmllint-timeout",
                "3",
            ],
            &[
                "xaifb",
                "validate",
                "--schema",
                "s",
                "d",
                "--jobs",
                "2",
                "--verbose",
            ],
            &["xaifb", "compare", "a", "b"],
            &["xaifb", "analyze", "a.xaif"],
            &["xaifb", "roundtrip", "a.xaif", "-o", "b"],
        ];
        for line in lines {
            let whole = Cli::command().try_get_matches_from(*line).expect("parses");
            let quick = quick_command(line[line.iter().position(|w| names.contains(w)).unwrap()])
                .unwrap()
                .try_get_matches_from(*line)
                .expect("parses");
            assert_eq!(
                format!("{:?}", whole.subcommand()),
                format!("{:?}", quick.subcommand()),
                "{line:?}"
            );
            assert!(quick_parse(&line.iter().map(Into::into).collect::<Vec<_>>()).is_some());
        }
        // Help and errors are left to the whole command.
        for line in [
            &["xaifb", "tangent", "--help"][..],
            &["xaifb", "tangent", "--nosuch"],
            &["xaifb", "--version"],
            &["xaifb"],
        ] {
            assert!(quick_parse(&line.iter().map(Into::into).collect::<Vec<_>>()).is_none());
        }
    }

    /// The elimination configuration a command line asks for.
    fn elimination(args: &[&str]) -> xaif_elim::Config {
        let cli = Cli::try_parse_from(args).expect("a valid command line");
        let Command::Tangent(t) = cli.command else {
            panic!("not a tangent command line");
        };
        t.elimination().expect("a valid configuration")
    }

    /// `-a` (with `--seed`), `-R` and `-m` reach the elimination search,
    /// whose tests show each changing results where it pays off
    /// (`xaif-elim/tests/optimize.rs`); without them the search does
    /// neither.
    #[test]
    fn search_flags_reach_the_elimination() {
        let plain = elimination(&["xaifb", "tangent", "in.xaif"]);
        assert!(!plain.search.randomized && !plain.search.rerouting);
        assert!(!plain.search.allow_maintaining);
        let set = elimination(&[
            "xaifb", "tangent", "-a", "--seed", "7", "-R", "-m", "in.xaif",
        ]);
        assert!(set.search.randomized && set.search.rerouting && set.search.allow_maintaining);
        assert_eq!(set.search.seed, 7);
        let grouped = elimination(&["xaifb", "tangent", "-aRm", "in.xaif"]);
        assert!(grouped.search.randomized && grouped.search.rerouting);
        assert!(grouped.search.allow_maintaining);
    }
}
