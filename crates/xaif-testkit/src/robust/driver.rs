//! The driver's contract with the file system and the command line, as
//! campaign classes (issue 26): each program mutant also goes through
//!
//! - `names`: its first routine renamed (`../`, absolute paths, 300
//!   characters, odd bytes) and transformed with `--dot` and sometimes
//!   `-g 8 -G svg`: no file outside the directory named, the job as
//!   successful as without `--dot`;
//! - `side outputs`: `-o`, `-d`, `--stats-json`, `--dot` and `-G` drawn from
//!   a few paths that clash (`a`, `a/x`, `-`), lie below a regular file, or
//!   render with a `dot` that fails: exit code 2 exactly for a clash,
//!   everything asked for written on success and nothing on failure;
//! - `flags`: one odd value of a numeric or strategy flag of the
//!   transformations or a limit: exit code 2 with the flag named exactly
//!   when the value is malformed;
//! - `full device`: a subcommand writing to `/dev/full` (standard output or
//!   a named output): never exit code 0;
//! - `dash`: `-` as input or output somewhere: standard input and output
//!   once each, refused (exit 2) otherwise, never a file named `-`;
//!
//! and once per campaign every subcommand (help, version, manual page,
//! completions, shims included) writes to a full device.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::mutate::Rng;
use super::{classify, exec_with, s, temporaries, Config, End, Exec, Seed, Shared};

/// Where the stand-ins for Graphviz's `dot` are: `ok` copies the graph,
/// `fail` refuses it.
fn bin(cfg: &Config, which: &str) -> PathBuf {
    cfg.work.join("driver-bin").join(which)
}

/// `PATH` with the stand-in `dot` of `which` first.
fn path_with(cfg: &Config, which: &str) -> String {
    format!(
        "{}:{}",
        bin(cfg, which).display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Makes the stand-in tools, once per campaign, before any mutant runs.
pub(super) fn setup(cfg: &Config) {
    for (which, body) in [
        ("ok", "cat"),
        (
            "fail",
            "cat > /dev/null\necho 'dot: syntax error' >&2\nexit 1",
        ),
    ] {
        let dir = bin(cfg, which);
        std::fs::create_dir_all(&dir).expect("stand-in directory");
        let dot = dir.join("dot");
        std::fs::write(&dot, format!("#!/bin/sh\n{body}\n")).expect("stand-in dot");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dot, std::fs::Permissions::from_mode(0o755))
                .expect("stand-in dot");
        }
    }
}

/// Records the outcome of one command of a class: a finding when
/// `problem` says so, else `ok`, `refused` (exit 2) or `error`.
#[allow(clippy::too_many_arguments)]
fn record(
    sh: &Shared<'_>,
    k: Option<usize>,
    kinds: &[&'static str],
    class: &str,
    e: &Exec,
    problem: Option<(String, String)>,
    files: &[&Path],
    args: &[String],
) {
    *sh.report
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .seconds
        .entry(class.to_string())
        .or_insert(0.0) += e.elapsed.as_secs_f64();
    match problem {
        Some((c, detail)) => {
            sh.outcome(class, &c);
            sh.finding(&c, class, k, kinds, &detail, files, args);
        }
        None => {
            let label = match e.end {
                End::Code(0) => "ok",
                End::Code(2) => "refused",
                _ => "error",
            };
            sh.outcome(class, label);
        }
    }
}

/// The faults every command is checked for (`classify`, leftover
/// temporaries), with exit codes `exits`. An error message must name one
/// of `names` (an input) or, for exit codes 2 and 3 (the command line, the
/// environment), hold one of `markers` (a flag, `standard output`, a
/// cause).
fn judge(
    e: &Exec,
    cdir: &Path,
    names: &[&Path],
    markers: &[&str],
    exits: &[i32],
) -> Option<(String, String)> {
    let mut problem = classify(e, names, exits);
    let first = || e.stderr.lines().next().unwrap_or("").to_string();
    if matches!(e.end, End::Code(2) | End::Code(3)) {
        let marked = markers.iter().any(|f| e.stderr.contains(f));
        problem = match problem {
            Some((c, _)) if c == "error without the file name" && marked => None,
            other => other,
        };
        if problem.is_none() && e.end == End::Code(2) {
            let debug = ["Some(", "None", "internal error", "unexpected argument"];
            if let Some(d) = debug.iter().find(|d| e.stderr.contains(*d)) {
                problem = Some((
                    format!("command-line error not in the user's words ({d})"),
                    first(),
                ));
            } else if !marked && !markers.is_empty() {
                problem = Some(("command-line error without the flag".into(), first()));
            }
        }
    }
    if problem.is_none() {
        let temps = temporaries(cdir);
        if !temps.is_empty() {
            problem = Some(("leftover temporary".into(), format!("{temps:?}")));
        }
    }
    problem
}

/// Every file below `dir`.
fn all_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The first routine's symbol id in `text` (the `symbol_id` of its first
/// `ControlFlowGraph`).
fn first_routine(text: &str) -> Option<String> {
    let at = text.find("ControlFlowGraph ")?;
    let rest = &text[at..text[at..].find('>').map_or(text.len(), |e| at + e)];
    let v = rest.split("symbol_id=\"").nth(1)?;
    Some(v.split('"').next()?.to_string())
}

/// `name` as an XML attribute value.
fn xml_attr(name: &str) -> String {
    name.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('"', "&quot;")
        .replace('\t', "&#9;")
        .replace('\n', "&#10;")
        .replace('\r', "&#13;")
}

/// An odd routine name for mutant `k`; each holds the token `ESC{k}` so
/// that a file written from it can be found wherever it went.
fn odd_name(rng: &mut Rng, work: &Path, k: usize) -> String {
    let token = format!("ESC{k}");
    match rng.below(10) {
        0 => format!("{}{token}", "../".repeat(1 + rng.below(3))),
        1 => format!("{}/abs-{k}/{token}", work.display()),
        2 => format!("{token}{}", "x".repeat(250 + rng.below(100))),
        3 => format!("{token} é%2F<&>\t\n.."),
        4 => format!("..{token}/.."),
        5 => format!(".{token}"),
        6 => format!("-{token}"),
        // Control characters XML can carry (as references or raw): line
        // ends, tab, DEL, C1 controls, Unicode line and paragraph
        // separators, and shell metacharacters.
        7 => format!("{token}\n\r\t\u{7f}\u{85}\u{9b}\u{2028}\u{2029}"),
        8 => format!("$({token});`x`|&>*?~{{}}[]'!#\\:"),
        _ => format!("{token}/{}", "ä/".repeat(40 + rng.below(60))),
    }
}

/// Class `names`: the first routine of the mutant's seed (unmutated, so
/// that most runs get as far as writing graphs) or, now and then, of the
/// mutant itself renamed, through `--dot`.
fn names(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    dir: &Path,
    input: &Path,
    seed: &Seed,
    rng: &mut Rng,
) {
    let cfg = sh.cfg;
    let bytes = if rng.chance(0.8) {
        seed.text.clone()
    } else {
        std::fs::read(input).unwrap_or_default()
    };
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let Some(routine) = first_routine(&text) else {
        return;
    };
    let odd = odd_name(rng, &cfg.work, k);
    let named = dir.join("named.xaif");
    let renamed = text.replace(
        &format!("symbol_id=\"{routine}\""),
        &format!("symbol_id=\"{}\"", xml_attr(&odd)),
    );
    std::fs::write(&named, renamed).expect("write renamed mutant");
    let mode = *rng.pick(&["tangent", "adjoint"]);
    let render = rng.chance(0.3);
    let base: Vec<String> = vec![
        mode.into(),
        "-c".into(),
        s(&sh.catalogue),
        "-i".into(),
        s(&named),
        "-o".into(),
        "out.xaif".into(),
    ];
    let mut args = base.clone();
    args.extend(["--dot".into(), "dots".into()]);
    if render {
        args.extend(["-g".into(), "8".into(), "-G".into(), "svg".into()]);
        args.extend(["-d".into(), "debug.txt".into()]);
    }
    let cdir = dir.join("names");
    let e = exec_with(cfg, &cdir, &args, |c| {
        c.env("PATH", path_with(cfg, "ok"));
    });
    let mut problem = judge(&e, &cdir, &[&named], &[], &[0, 1]);
    let token = format!("ESC{k}");
    // Where a file named from the routine may have gone: anywhere below
    // the mutant's directory, beside it, or in the absolute place named.
    let mut places = all_files(dir);
    for d in [cfg.work.as_path(), cfg.work.parent().unwrap_or(&cfg.work)] {
        if let Ok(rd) = std::fs::read_dir(d) {
            places.extend(rd.flatten().map(|e| e.path()));
        }
    }
    places.extend(all_files(&cfg.work.join(format!("abs-{k}"))));
    // Graph files go straight into the directory named, none deeper.
    let dots = cdir.join("dots");
    let escaped: Vec<&PathBuf> = places
        .iter()
        .filter(|p| p.to_string_lossy().contains(&token))
        .filter(|p| p.parent() != Some(dots.as_path()))
        .collect();
    // Graph file names are safe for shells: printable ASCII without
    // separators or control characters, bounded.
    let unsafe_names: Vec<String> = all_files(&dots)
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| {
            n.len() > 255
                || n.starts_with(['-', '.', '~'])
                || !n.bytes().all(|b| {
                    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'%' | b'~')
                })
        })
        .collect();
    if problem.is_none() && !unsafe_names.is_empty() {
        problem = Some((
            "graph file name unsafe for shells".into(),
            format!("{:?}", &unsafe_names[..unsafe_names.len().min(3)]),
        ));
    }
    if problem.is_none() && !escaped.is_empty() {
        problem = Some((
            "graph file outside the directory named".into(),
            format!(
                "{} files, e.g. {:?}",
                escaped.len(),
                &escaped[..escaped.len().min(3)]
            ),
        ));
    }
    if problem.is_none() && e.end != End::Code(0) && rng.chance(0.5) {
        // The same call without --dot: it may not succeed where this failed.
        let plain = exec_with(cfg, &dir.join("names-plain"), &base, |_| {});
        if plain.end == End::Code(0) {
            problem = Some((
                "side output fails a job that succeeds without it".into(),
                e.stderr.lines().next().unwrap_or("").to_string(),
            ));
        }
    }
    let _ = std::fs::remove_dir_all(cfg.work.join(format!("abs-{k}")));
    record(
        sh,
        Some(k),
        kinds,
        "driver: names",
        &e,
        problem,
        &[&named],
        &args,
    );
}

/// One output of a command line in class `side outputs`.
#[derive(Clone, Debug, PartialEq)]
enum Target {
    Stdout,
    File(String),
    Dir(String),
}

/// Whether two targets clash (the driver's rule, written again here as
/// the oracle): both on standard output, one path twice (two directories
/// may share one), or a file where the other needs a directory.
fn clash(a: &Target, b: &Target) -> bool {
    let path = |t: &Target| match t {
        Target::Stdout => None,
        Target::File(p) => Some((p.clone(), false)),
        Target::Dir(p) => Some((p.clone(), true)),
    };
    match (path(a), path(b)) {
        (None, None) => true,
        (Some((pa, da)), Some((pb, db))) => {
            let below = |x: &str, y: &str| y.starts_with(&format!("{x}/"));
            (pa == pb && !(da && db)) || (!da && below(&pa, &pb)) || (!db && below(&pb, &pa))
        }
        _ => false,
    }
}

/// Class `side outputs`, on the mutant's seed (unmutated, so that most
/// runs get as far as writing) or on the mutant.
fn side_outputs(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    dir: &Path,
    mutant: &Path,
    seed: &Seed,
    rng: &mut Rng,
) {
    let cfg = sh.cfg;
    let cdir = dir.join("side");
    std::fs::create_dir_all(&cdir).expect("side directory");
    let input = if rng.chance(0.7) {
        let p = dir.join("seed.xaif");
        std::fs::write(&p, &seed.text).expect("write seed");
        p
    } else {
        mutant.to_path_buf()
    };
    let input = input.as_path();
    std::fs::write(cdir.join("blocker"), "a regular file").expect("blocker");
    let pool = ["a", "b", "a/x", "-", "blocker/x", "c.json", "d"];
    let pick = |rng: &mut Rng, p: f64| rng.chance(p).then(|| rng.pick(&pool).to_string());
    let mode = *rng.pick(&[
        "tangent",
        "adjoint",
        "adjoint",
        "tangent",
        "trace",
        "typechange",
    ]);
    let output = pick(rng, 0.8);
    let debug = pick(rng, 0.3);
    let stats = pick(rng, 0.5);
    let dot = pick(rng, 0.5);
    let mask = *rng.pick(&[0u32, 8, 64, 72]);
    let render = mask & 8 != 0 && rng.chance(0.5);
    let failing = render && rng.chance(0.5);
    let mut args: Vec<String> = vec![
        mode.into(),
        "-c".into(),
        s(&sh.catalogue),
        "-i".into(),
        s(input),
    ];
    let mut targets: Vec<Target> = Vec::new();
    let as_file = |p: &str| {
        if p == "-" {
            Target::Stdout
        } else {
            Target::File(p.to_string())
        }
    };
    match &output {
        Some(o) => {
            args.extend(["-o".into(), o.clone()]);
            targets.push(as_file(o));
        }
        None => targets.push(Target::Stdout),
    }
    if let Some(d) = &debug {
        args.extend(["-d".into(), d.clone()]);
        targets.push(as_file(d));
    }
    if let Some(p) = &stats {
        args.extend(["--stats-json".into(), p.clone()]);
        targets.push(as_file(p));
    }
    if let Some(p) = &dot {
        args.extend(["--dot".into(), p.clone()]);
        targets.push(if p == "-" {
            // Refused: standard output holds no directory.
            Target::Stdout
        } else {
            Target::Dir(p.clone())
        });
        if p == "-" {
            targets.push(Target::Stdout);
        }
    }
    if mask != 0 {
        args.extend(["-g".into(), mask.to_string()]);
    }
    let differentiates = matches!(mode, "tangent" | "adjoint");
    if render {
        args.extend(["-G".into(), "svg".into()]);
        if differentiates && dot.is_none() {
            let graphs = match &output {
                Some(o) if o != "-" => format!("{o}.graphs"),
                _ => "xaifb.graphs".into(),
            };
            targets.push(Target::Dir(graphs));
        }
    }
    let clashes = targets
        .iter()
        .enumerate()
        .any(|(i, a)| targets[i + 1..].iter().any(|b| clash(a, b)));
    let refused = clashes || (!differentiates && (stats.is_some() || dot.is_some()));
    let which = if failing { "fail" } else { "ok" };
    let e = exec_with(cfg, &cdir, &args, |c| {
        c.env("PATH", path_with(cfg, which));
    });
    let below_blocker = args.iter().any(|a| a.starts_with("blocker/"));
    let exits: &[i32] = if refused {
        &[2]
    } else if below_blocker || failing {
        &[0, 1, 3]
    } else {
        &[0, 1]
    };
    let markers = [
        "-o",
        "-d",
        "--stats-json",
        "--dot",
        "-G",
        "standard output",
        "cannot create",
        "dot could not render",
    ];
    let mut problem = judge(&e, &cdir, &[input], &markers, exits);
    let written: Vec<PathBuf> = all_files(&cdir)
        .into_iter()
        .filter(|p| {
            let n = p.file_name().map(|n| n.to_string_lossy().into_owned());
            !matches!(n.as_deref(), Some("blocker" | "stdout" | "stderr"))
        })
        .collect();
    if problem.is_none() && e.end != End::Code(0) && !written.is_empty() {
        problem = Some((
            "partial output after a failure".into(),
            format!("{:?}", &written[..written.len().min(3)]),
        ));
    }
    if problem.is_none() && e.end == End::Code(0) {
        // Standard output holds something when the program or the
        // statistics go there (debug records may be none).
        let on_stdout = output.as_deref().is_none_or(|o| o == "-") || stats.as_deref() == Some("-");
        problem = complete(
            &cdir,
            &targets,
            &e,
            on_stdout,
            stats.as_deref(),
            dot.as_deref(),
        );
    }
    if written
        .iter()
        .any(|p| p.file_name().is_some_and(|n| n == "-"))
    {
        problem = Some(("a file named -".into(), format!("{written:?}")));
    }
    record(
        sh,
        Some(k),
        kinds,
        "driver: side outputs",
        &e,
        problem,
        &[input],
        &args,
    );
}

/// After a successful job: every file asked for exists, the statistics are
/// JSON, and the `--dot` directory holds as many graphs as they count.
fn complete(
    cdir: &Path,
    targets: &[Target],
    e: &Exec,
    on_stdout: bool,
    stats: Option<&str>,
    dot: Option<&str>,
) -> Option<(String, String)> {
    for t in targets {
        if let Target::File(p) = t {
            if !cdir.join(p).is_file() {
                return Some(("output asked for not written".into(), p.clone()));
            }
        }
    }
    if on_stdout && e.stdout.is_empty() {
        return Some((
            "output asked for not written".into(),
            "standard output".into(),
        ));
    }
    let text = match stats {
        Some("-") => String::from_utf8_lossy(&e.stdout).into_owned(),
        Some(p) => std::fs::read_to_string(cdir.join(p)).unwrap_or_default(),
        None => return None,
    };
    let Ok(report) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Some((
            "statistics that are not JSON".into(),
            text.chars().take(80).collect(),
        ));
    };
    let graphs: usize = report["routines"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .flat_map(|r| r["blocks"].as_array().cloned().unwrap_or_default())
                .map(|b| b["graphs"].as_array().map_or(0, Vec::len))
                .sum()
        })
        .unwrap_or(0);
    if let Some(d) = dot.filter(|d| *d != "-") {
        let before = all_files(&cdir.join(d))
            .iter()
            .filter(|p| p.to_string_lossy().ends_with("_before.dot"))
            .count();
        if before != graphs {
            return Some((
                "graph files asked for not written".into(),
                format!("{before} graphs in {d}, {graphs} counted"),
            ));
        }
    }
    None
}

/// The odd values of class `flags`: (subcommand, flag, value, valid).
const FLAG_VALUES: &[(&str, &str, &str, bool)] = &[
    ("tangent", "--heuristic", "edge:HS,LM,reverse", true),
    ("adjoint", "--heuristic", "vertex:LM,forward", true),
    ("tangent", "--heuristic", "face:LF,reverse", true),
    ("tangent", "--heuristic", "edge:HS>LM>forward", true),
    ("adjoint", "--heuristic", "edge:HS,,, reverse", true),
    ("tangent", "--heuristic", "edge:HS,LM", false),
    ("adjoint", "--heuristic", "edge:", false),
    ("tangent", "--heuristic", "nonsense", false),
    ("tangent", "--heuristic", "", false),
    ("adjoint", "--heuristic", "edge:XX,reverse", false),
    ("tangent", "--heuristic", "Edge:HS,reverse", false),
    ("tangent", "--heuristic", ":reverse", false),
    ("tangent", "--heuristic", "edge:é,reverse", false),
    ("tangent", "-A", "0", true),
    ("adjoint", "-A", "2", true),
    ("tangent", "-A", "3", false),
    ("adjoint", "-A", "-1", false),
    ("tangent", "-A", "256", false),
    ("tangent", "-A", "1.0", false),
    ("tangent", "-A", "", false),
    ("tangent", "-M", "0", true),
    ("adjoint", "-M", "1", true),
    ("tangent", "-M", "2", false),
    ("adjoint", "-M", "-1", false),
    ("tangent", "-M", "x", false),
    ("tangent", "--jobs", "1", true),
    ("adjoint", "--jobs", "0", false),
    ("tangent", "--jobs", "-1", false),
    ("tangent", "--seed", "18446744073709551615", true),
    ("tangent", "--seed", "18446744073709551616", false),
    ("adjoint", "--seed", "-1", false),
    ("tangent", "--effort", "max", true),
    ("tangent", "--effort", "x", false),
    ("tangent", "-g", "4294967295", true),
    ("tangent", "-g", "4294967296", false),
    ("adjoint", "-g", "-1", false),
    ("run", "--time-limit", "0.5", true),
    ("run", "--time-limit", "1e-300", true),
    ("run", "--time-limit", "1e9", true),
    ("run", "--time-limit", "1e300", false),
    ("run", "--time-limit", "1e10", false),
    ("run", "--time-limit", "0", false),
    ("run", "--time-limit", "-1", false),
    ("run", "--time-limit", "nan", false),
    ("run", "--time-limit", "inf", false),
    ("validate", "--max-input-size", "0", true),
    ("tangent", "--max-input-size", "1K", true),
    ("validate", "--max-input-size", "256M", true),
    ("tangent", "--max-input-size", "1.5M", false),
    ("validate", "--max-input-size", "-1", false),
    (
        "adjoint",
        "--max-input-size",
        "99999999999999999999G",
        false,
    ),
    ("validate", "--max-input-size", "1T", false),
    ("validate", "--max-input-size", "", false),
    ("validate", "--xmllint-timeout", "0.5", true),
    ("tangent", "--xmllint-timeout", "0", false),
    ("validate", "--xmllint-timeout", "1e300", false),
    ("validate", "--xmllint-timeout", "nan", false),
];

/// Class `flags`: one odd value on the mutant.
fn flags(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    dir: &Path,
    input: &Path,
    seed: &Seed,
    rng: &mut Rng,
) {
    let &(cmd, flag, value, valid) = rng.pick(FLAG_VALUES);
    let mut args: Vec<String> = vec![cmd.into(), s(input)];
    match cmd {
        "run" => match &seed.harness {
            Some(h) => {
                let p = dir.join("flags-harness.json");
                std::fs::write(&p, h).expect("harness");
                args.extend(["--harness".into(), s(&p)]);
            }
            None => args.extend([
                "--n".into(),
                seed.n.to_string(),
                "--m".into(),
                seed.m.to_string(),
            ]),
        },
        "validate" => {}
        _ => args.extend([
            "-c".into(),
            s(&sh.catalogue),
            "-o".into(),
            "out.xaif".into(),
        ]),
    }
    args.extend([flag.into(), value.into()]);
    let cdir = dir.join("flags");
    let e = exec_with(sh.cfg, &cdir, &args, |_| {});
    let exits: &[i32] = if valid { &[0, 1] } else { &[2] };
    // A small --max-input-size may refuse the catalogue first.
    let problem = judge(&e, &cdir, &[input, &sh.catalogue], &[flag], exits);
    record(
        sh,
        Some(k),
        kinds,
        "driver: flags",
        &e,
        problem,
        &[input],
        &args,
    );
}

/// Class `full device`: one subcommand of the mutant writing to a full
/// device.
fn full_device(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    dir: &Path,
    input: &Path,
    seed: &Seed,
    rng: &mut Rng,
) {
    let full = Path::new("/dev/full");
    if !full.exists() {
        return;
    }
    let inp = s(input);
    let cat = s(&sh.catalogue);
    let sizes = [
        "--n".to_string(),
        seed.n.to_string(),
        "--m".into(),
        seed.m.to_string(),
    ];
    // (arguments, whether standard output is the full device)
    let cases: Vec<(Vec<String>, bool)> = vec![
        (
            vec!["validate".into(), "--verbose".into(), inp.clone()],
            true,
        ),
        (
            vec!["roundtrip".into(), inp.clone(), "-o".into(), "-".into()],
            true,
        ),
        (
            vec!["roundtrip".into(), inp.clone(), "-o".into(), s(full)],
            false,
        ),
        (
            vec!["tangent".into(), "-c".into(), cat.clone(), inp.clone()],
            true,
        ),
        (
            vec![
                "adjoint".into(),
                "-c".into(),
                cat.clone(),
                inp.clone(),
                "-o".into(),
                s(full),
            ],
            false,
        ),
        (vec!["trace".into(), inp.clone()], true),
        (
            vec!["typechange".into(), inp.clone(), "-o".into(), s(full)],
            false,
        ),
        (
            vec![
                "tangent".into(),
                inp.clone(),
                "-o".into(),
                "o.xaif".into(),
                "--stats-json".into(),
                s(full),
            ],
            false,
        ),
        (vec!["analyze".into(), inp.clone()], true),
        (
            vec![
                "analyze".into(),
                inp.clone(),
                "-o".into(),
                "r.txt".into(),
                "--passivate".into(),
                s(full),
            ],
            false,
        ),
        (
            ["run".into(), inp.clone()]
                .into_iter()
                .chain(sizes.iter().cloned())
                .collect(),
            true,
        ),
        (
            ["run".into(), inp.clone(), "-o".into(), s(full)]
                .into_iter()
                .chain(sizes.iter().cloned())
                .collect(),
            false,
        ),
    ];
    let (args, to_stdout) = rng.pick(&cases).clone();
    let cdir = dir.join("full");
    let e = exec_with(sh.cfg, &cdir, &args, |c| {
        if to_stdout {
            if let Ok(f) = std::fs::OpenOptions::new().write(true).open(full) {
                c.stdout(f);
            }
        }
    });
    let markers = ["cannot write"];
    let mut problem = judge(&e, &cdir, &[input], &markers, &[1, 3]);
    if problem.is_none() && e.end == End::Code(3) && !e.stderr.contains("cannot write") {
        problem = Some((
            "write error without its cause".into(),
            e.stderr.lines().next().unwrap_or("").to_string(),
        ));
    }
    record(
        sh,
        Some(k),
        kinds,
        "driver: full device",
        &e,
        problem,
        &[input],
        &args,
    );
}

/// Class `dash`: `-` as input or output somewhere on the mutant's command
/// line.
#[allow(clippy::too_many_arguments)]
fn dash(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    dir: &Path,
    input: &Path,
    seed: &Seed,
    rng: &mut Rng,
) {
    let inp = s(input);
    let cat = s(&sh.catalogue);
    let sizes = [
        "--n".to_string(),
        seed.n.to_string(),
        "--m".into(),
        seed.m.to_string(),
    ];
    let other = dir.join("other.xaif");
    let _ = std::fs::copy(input, &other);
    let mode = *rng.pick(&["tangent", "adjoint", "trace", "typechange"]);
    let v = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<String>>();
    // (arguments, standard input is the mutant, refused)
    let cases: Vec<(Vec<String>, bool, bool)> = vec![
        (v(&[mode, "-", "-o", "-"]), true, false),
        (v(&[mode, "-", "-o", "o.xaif"]), true, false),
        (
            v(&[mode, "-i", "-", "-o", "o.xaif", "-c", &cat]),
            true,
            false,
        ),
        (v(&[mode, "-", &s(&other), "-o", "outdir"]), true, true),
        (v(&[mode, &inp, &s(&other), "-o", "-"]), false, true),
        (v(&[mode, "-", "-c", "-"]), true, true),
        (v(&["adjoint", "-u", "-"]), true, true),
        (v(&["tangent", &inp, "-d", "-", "-g", "64"]), false, true),
        (
            v(&["tangent", &inp, "-o", "o.xaif", "-d", "-", "-g", "64"]),
            false,
            false,
        ),
        (
            v(&["adjoint", &inp, "-o", "o.xaif", "--stats-json", "-"]),
            false,
            false,
        ),
        (v(&["tangent", &inp, "--dot", "-"]), false, true),
        (v(&["validate", "-"]), true, false),
        (v(&["validate", "-", &inp]), true, true),
        (v(&["roundtrip", "-", "-o", "-"]), true, false),
        (v(&["roundtrip", &inp, "-o", "-"]), false, false),
        (v(&["roundtrip", &inp, &s(&other), "-o", "-"]), false, true),
        (v(&["analyze", "-", "-o", "-"]), true, false),
        (v(&["analyze", &inp, "--passivate", "-"]), false, true),
        (
            v(&["analyze", &inp, "-o", "r.txt", "--passivate", "-"]),
            false,
            false,
        ),
        ([v(&["run", "-"]), sizes.to_vec()].concat(), true, false),
        (
            [v(&["run", &inp, "-o", "-"]), sizes.to_vec()].concat(),
            false,
            false,
        ),
        (
            [v(&["run", "-", "--params", "-"]), sizes.to_vec()].concat(),
            true,
            true,
        ),
        (
            [v(&["run", &inp, "--stats-json", "-"]), sizes.to_vec()].concat(),
            false,
            true,
        ),
        (v(&["shims", "-"]), false, true),
    ];
    let (args, stdin, refused) = rng.pick(&cases).clone();
    let cdir = dir.join("dash");
    let e = exec_with(sh.cfg, &cdir, &args, |c: &mut Command| {
        if stdin {
            if let Ok(f) = std::fs::File::open(input) {
                c.stdin(f);
            }
        }
    });
    let exits: &[i32] = if refused { &[2] } else { &[0, 1] };
    let names = [input, Path::new("<stdin>"), other.as_path()];
    let markers = ["standard input", "standard output"];
    let mut problem = judge(&e, &cdir, &names, &markers, exits);
    if cdir.join("-").exists() {
        problem = Some(("a file named -".into(), s(&cdir.join("-"))));
    }
    record(
        sh,
        Some(k),
        kinds,
        "driver: dash",
        &e,
        problem,
        &[input],
        &args,
    );
}

/// Every class on one program mutant (after its other runs).
pub(super) fn mutant_runs(
    sh: &Shared<'_>,
    k: usize,
    kinds: &[&'static str],
    dir: &Path,
    input: &Path,
    seed: &Seed,
    rng: &mut Rng,
) {
    names(sh, k, kinds, dir, input, seed, rng);
    side_outputs(sh, k, kinds, dir, input, seed, rng);
    flags(sh, k, kinds, dir, input, seed, rng);
    full_device(sh, k, kinds, dir, input, seed, rng);
    dash(sh, k, kinds, dir, input, seed, rng);
}

/// Once per campaign: every subcommand that writes to standard output, a
/// full device as standard output.
pub(super) fn fixed_cases(sh: &Shared<'_>) {
    let full = Path::new("/dev/full");
    if !full.exists() {
        return;
    }
    let base = sh.cfg.work.join("driver-fixed");
    let prog = base.join("p.xaif");
    let _ = std::fs::create_dir_all(&base);
    let _ = std::fs::write(&prog, &sh.seeds[0].text);
    let p = s(&prog);
    let n = sh.seeds[0].n.to_string();
    let m = sh.seeds[0].m.to_string();
    let shims = s(&base.join("shims"));
    let cases: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["--version"],
        vec!["help"],
        vec!["tangent", "--help"],
        vec!["man"],
        vec!["completions", "bash"],
        vec!["shims", &shims],
        vec!["validate", "--verbose", &p],
        vec!["roundtrip", &p, "-o", "-"],
        vec!["tangent", &p],
        vec!["adjoint", &p],
        vec!["trace", &p],
        vec!["typechange", &p],
        vec!["tangent", "--verbose", &p, "-o", "o.xaif"],
        vec!["analyze", &p],
        vec!["run", &p, "--n", &n, "--m", &m],
    ];
    let named: Vec<Vec<&str>> = vec![
        vec!["tangent", &p, "-o", "/dev/full"],
        vec!["adjoint", &p, "-o", "o.xaif", "-g", "64", "-d", "/dev/full"],
        vec!["tangent", &p, "-o", "o.xaif", "--stats-json", "/dev/full"],
        vec!["analyze", &p, "-o", "/dev/full"],
        vec!["analyze", &p, "-o", "r.txt", "--passivate", "/dev/full"],
        vec!["roundtrip", &p, "-o", "/dev/full"],
        vec!["run", &p, "--n", &n, "--m", &m, "-o", "/dev/full"],
        vec![
            "run",
            &p,
            "--n",
            &n,
            "--m",
            &m,
            "-o",
            "j.out",
            "--stats-json",
            "/dev/full",
        ],
    ];
    let cases = cases
        .into_iter()
        .map(|c| (c, true))
        .chain(named.into_iter().map(|c| (c, false)));
    for (args, to_stdout) in cases {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let cdir = base.join(format!(
            "c-{}",
            args.join("-")
                .replace('/', "_")
                .chars()
                .take(40)
                .collect::<String>()
        ));
        let e = exec_with(sh.cfg, &cdir, &args, |c| {
            if to_stdout {
                if let Ok(f) = std::fs::OpenOptions::new().write(true).open(full) {
                    c.stdout(f);
                }
            }
        });
        let cause = if to_stdout {
            "cannot write to standard output"
        } else {
            "cannot write /dev/full"
        };
        let mut problem = judge(&e, &cdir, &[], &[cause], &[3]);
        if problem.is_none() && !e.stderr.contains(cause) {
            problem = Some(("write error without its cause".into(), e.stderr.clone()));
        }
        let what = if to_stdout {
            "> /dev/full"
        } else {
            "-o /dev/full"
        };
        let class = format!("driver: {} {what}", args[0]);
        record(sh, None, &[], &class, &e, problem, &[], &args);
    }
}
