//! What the four transformation drivers share beyond their flags (inputs
//! from files or standard input, the built-in catalogue, schema
//! validation that is skipped, not failed, without a schema, debug
//! records, rendered graphs), and the `trace` and `typechange` commands.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use xaif_linearize::Catalogue;
use xaif_model::{NonInlinableCatalogue, Program};

use crate::compat::{inert_flags, Mode};
use crate::transform::TransformArgs;

/// The inlinable catalogue of `-c`, or the built-in one, and the
/// non-inlinable one of `-N`. `-c` naming the distributed catalogue file
/// (recognised by its bytes) takes the built-in table too: the same
/// meaning, without parsing the file on every run.
pub fn catalogues(
    inlinable: Option<&Path>,
    noninlinable: Option<&Path>,
) -> Result<(Cow<'static, Catalogue>, Option<NonInlinableCatalogue>), String> {
    for path in inlinable.iter().chain(noninlinable.iter()) {
        crate::input::check(path).map_err(|e| e.to_string())?;
    }
    let inlinable = match inlinable {
        Some(path) => {
            let bytes = crate::input::read(path).map_err(|e| e.to_string())?;
            if xaif_linearize::builtin::is_distributed_catalogue(&bytes) {
                Cow::Borrowed(xaif_linearize::builtin())
            } else {
                let name = path.display().to_string();
                xaif_linearize::catalogue::inlinable_from_bytes(&bytes, &name)
                    .map(Cow::Owned)
                    .map_err(|e| e.to_string())?
            }
        }
        None => Cow::Borrowed(xaif_linearize::builtin()),
    };
    let non = match noninlinable {
        None => None,
        Some(path) => {
            let parsed = crate::input::read_document(path)?;
            xaif_model::validate_document(&parsed.document, &parsed.source)
                .map_err(|e| e.to_string())?;
            match parsed.document {
                xaif_model::Document::NonInlinable(n) => Some(n),
                _ => {
                    return Err(format!(
                        "{}: not a non-inlinable intrinsics catalogue",
                        path.display()
                    ))
                }
            }
        }
    };
    Ok((inlinable, non))
}

/// Reads and gates an input (`-`: standard input); with `-v` validates it
/// against `xaif.xsd` of the schema directory (`-s`, `XAIF_SCHEMA_DIR`, or
/// the input's own directory as the reference does), and says that it
/// skipped validation when there is none.
pub fn read_input(
    args: &TransformArgs,
    path: &Path,
    catalogue: Option<&xaif_linearize::Catalogue>,
) -> Result<Program, String> {
    let stdin = path.as_os_str() == "-";
    let (p, source) = if stdin {
        let bytes = crate::input::read_stdin().map_err(|e| e.to_string())?;
        let parsed = xaif_model::read_bytes(&bytes, Some("<stdin>")).map_err(|e| e.to_string())?;
        let source = parsed.source;
        match parsed.document {
            xaif_model::Document::Program(p) => (*p, source),
            _ => return Err("standard input: not an XAIF program".into()),
        }
    } else {
        crate::input::read_program(path)?
    };
    // With the catalogue, every intrinsic use is also checked against its
    // entry before any transformation starts.
    match catalogue {
        Some(c) => c.validate_program(&p, &source),
        None => xaif_model::validate_program(&p, &source),
    }
    .map_err(|e| e.to_string())?;
    if args.validate {
        let dir = crate::schema::schema_dir(args.schema.as_deref()).or_else(|| {
            let beside = path.parent()?.to_path_buf();
            (!stdin && beside.join("xaif.xsd").is_file()).then_some(beside)
        });
        match dir {
            Some(dir) if dir.join("xaif.xsd").is_file() && !stdin => {
                crate::schema::xmllint_file(path, &dir, "xaif.xsd")
                    .map_err(|e| format!("{e:#}"))?;
            }
            Some(dir) if !stdin => note(
                args,
                &format!(
                    "{}: schema validation skipped: no xaif.xsd in {}",
                    path.display(),
                    dir.display()
                ),
            ),
            _ => {
                note(
                    args,
                    &format!(
                    "{}: schema validation skipped: no schema directory (-s or XAIF_SCHEMA_DIR)",
                    if stdin { "<stdin>".into() } else { path.display().to_string() }
                ),
                )
            }
        }
    }
    Ok(p)
}

/// A note on standard error, unless `--quiet`.
pub fn note(args: &TransformArgs, text: &str) {
    if !args.reference.quiet {
        eprintln!("xaifb: {text}");
    }
}

/// Checks the inputs and reports flags without effect in `mode`; an exit
/// code when the command line cannot work.
pub fn check(mode: Mode, args: &TransformArgs) -> Option<ExitCode> {
    if args.all_inputs().is_empty() {
        eprintln!("xaifb {}: no input (give IN or -i IN)", mode.name());
        return Some(ExitCode::from(2));
    }
    if args.reference.ask_simple_loops && args.reference.ignore_simple_loops {
        eprintln!("xaifb {}: -u and -U exclude each other", mode.name());
        return Some(ExitCode::from(2));
    }
    for (flag, why) in inert_flags(mode, args) {
        note(
            args,
            &format!("{flag} has no effect in {} mode: {why}", mode.name()),
        );
    }
    None
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

/// `-G`: renders every graph of `-g 8` with Graphviz's `dot` into ps or
/// svg files (beside the `--dot` files, or in `<output>.graphs/`), and
/// with `-B` starts the viewer on each.
pub fn render_graphs(
    args: &TransformArgs,
    dots: &[xaif_linearize::tangent::DotGraph],
) -> Result<()> {
    let Some(format) = args.reference.graphics else {
        return Ok(());
    };
    if args.debug_mask & 8 == 0 {
        return Ok(());
    }
    let dir = match (&args.dot, &args.output) {
        (Some(d), _) => d.clone(),
        (None, Some(o)) if o.as_os_str() != "-" => {
            let mut name = o.file_name().unwrap_or_default().to_os_string();
            name.push(".graphs");
            o.with_file_name(name)
        }
        _ => PathBuf::from("xaifb.graphs"),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let ext = format.ext();
    for d in dots {
        for (suffix, text) in [("before", Some(&d.before)), ("after", d.after.as_ref())] {
            let Some(text) = text else { continue };
            let source = dir.join(format!("{}_{suffix}.dot", d.name));
            let target = dir.join(format!("{}_{suffix}.{ext}", d.name));
            crate::output::write_atomic(&source, text.as_bytes())?;
            let status = std::process::Command::new("dot")
                .arg(format!("-T{ext}"))
                .arg("-o")
                .arg(&target)
                .arg(&source)
                .status()
                .context("-G needs Graphviz's dot (install graphviz)")?;
            if !status.success() {
                bail!("dot could not render {}", source.display());
            }
            if let Some(viewer) = &args.reference.viewer {
                std::process::Command::new(viewer)
                    .arg(&target)
                    .status()
                    .with_context(|| format!("cannot start the viewer {viewer}"))?;
            }
        }
    }
    Ok(())
}

/// `-u`: asks the question on standard error and reads the answer from
/// standard input; `y` or `yes` agrees, anything else (or the end of the
/// input) does not.
pub fn ask_user(question: &str) -> bool {
    eprint!("xaifb: {question} [y/N] ");
    let mut answer = String::new();
    let _ = std::io::stdin().read_line(&mut answer);
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

fn fail(msg: String) -> Result<ExitCode> {
    eprintln!("{msg}");
    Ok(ExitCode::from(1))
}

/// Runs `xaifb trace`.
pub fn trace(args: TransformArgs) -> Result<ExitCode> {
    if let Some(code) = check(Mode::Trace, &args) {
        return Ok(code);
    }
    let (catalogue, noninlinable) = match args.catalogues() {
        Ok(x) => x,
        Err(e) => return fail(e),
    };
    let r = &args.reference;
    let options = xaif_trace::TraceOptions {
        passive: passive(&args),
        decoration: r.decoration(),
        wrappers: r.wrapper_names(),
        rename: args.rename,
        all_inout: r.all_inout,
    };
    let run = |p: &Program| {
        xaif_trace::trace(p, catalogue.as_ref(), noninlinable.as_ref(), &options)
            .map_err(|e| e.to_string())
    };
    one_or_many(&args, "trace", run)
}

/// Runs `xaifb typechange`.
pub fn typechange(args: TransformArgs) -> Result<ExitCode> {
    if let Some(code) = check(Mode::TypeChange, &args) {
        return Ok(code);
    }
    let (_, noninlinable) = match args.catalogues() {
        Ok(x) => x,
        Err(e) => return fail(e),
    };
    let r = &args.reference;
    let options = xaif_linearize::TypeChangeOptions {
        passive: passive(&args),
        decoration: r.decoration(),
        wrappers: r.wrapper_names(),
        rename: args.rename,
        all_inout: r.all_inout,
    };
    let run = |p: &Program| {
        xaif_linearize::typechange(p, noninlinable.as_ref(), &options)
            .map(|t| t.program)
            .map_err(|e| e.to_string())
    };
    one_or_many(&args, "typechange", run)
}

fn passive(args: &TransformArgs) -> Vec<String> {
    args.passive
        .as_deref()
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

fn one_or_many<F>(args: &TransformArgs, verb: &str, run: F) -> Result<ExitCode>
where
    F: Fn(&Program) -> Result<Program, String> + Sync,
{
    if args.is_batch() {
        return crate::transform::batch(args, None, verb, |p| {
            run(p).map_err(crate::transform::Failure::from)
        });
    }
    let program = match args.input(None) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    match run(&program) {
        Ok(out) => {
            args.write(crate::output::Outputs::new(), "", out)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => fail(format!("{}: {e}", args.single_input().display())),
    }
}
