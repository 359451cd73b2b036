//! `cargo xtask corpus`: the oracle over the whole regression corpus, as a
//! status table in `docs/corpus-status.md`.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use xaif_interp::corpus::{example_divided_differences, read_index, run_file, Example};
use xaif_interp::{compare, CompileOptions, Mode};

/// The default step budget of `xaifb run` (per run; no time limit here).
const BUDGET: u64 = xaif_interp::Limits::STEPS;

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Plain => "plain",
        Mode::Tangent => "tangent",
        Mode::Split => "split",
        Mode::Joint => "joint",
        Mode::Trace => "trace",
    }
}

fn one_line(text: &str) -> String {
    let first = text.lines().next().unwrap_or("").replace('|', "\\|");
    let short: String = first.chars().take(140).collect();
    if short.len() < first.len() {
        format!("{short}…")
    } else {
        short
    }
}

struct Row {
    example: String,
    verdict: String,
    mode: &'static str,
    index: String,
    result: String,
    worst: String,
    doubles: String,
    integers: String,
    peak: String,
    empty: String,
    checkpoint: String,
}

fn reference_row(ex: &Example, mode: Mode) -> Option<Row> {
    let file = ex.reference(mode);
    if !file.is_file() {
        return None;
    }
    // As in the oracle's tests: `not-executable` examples whose index says
    // `match` run with markers taken as inert (noted in the result).
    let inert = ex.verdict == "not-executable" && ex.oracle(mode) == "match";
    let options = CompileOptions {
        inert_markers: inert,
    };
    let report = run_file(ex, &file, mode, options, BUDGET);
    let mut row = Row {
        example: ex.name.clone(),
        verdict: ex.verdict.clone(),
        mode: mode_name(mode),
        index: ex.oracle(mode).to_string(),
        result: String::new(),
        worst: String::new(),
        doubles: String::new(),
        integers: String::new(),
        peak: String::new(),
        empty: String::new(),
        checkpoint: String::new(),
    };
    match (&report.outcome, &report.comparison) {
        (Err(e), _) => row.result = format!("refused: {}", one_line(e)),
        (Ok(o), c) => {
            row.result = match c {
                Some(c) if c.matches() && inert => "match (markers inert)".into(),
                Some(c) if c.matches() => "match".into(),
                Some(_) => "differs".into(),
                None => "no ad.out".into(),
            };
            if let Some(c) = c {
                row.worst = format!("{:.1e}", c.max_rel);
            }
            if mode != Mode::Tangent {
                let s = &o.stats;
                row.doubles = s.doubles_pushed.to_string();
                row.integers = s.integers_pushed.to_string();
                row.peak = format!("{} / {}", s.peak_double_tape, s.peak_integer_tape);
                row.empty = if o.tapes_empty { "yes" } else { "NO" }.into();
                row.checkpoint = s.peak_checkpoint.to_string();
            }
        }
    }
    Some(row)
}

fn dd_row(ex: &Example) -> Option<Row> {
    if !ex.input(false).is_file() {
        return None;
    }
    let mut row = Row {
        example: ex.name.clone(),
        verdict: ex.verdict.clone(),
        mode: "dd",
        index: String::new(),
        result: String::new(),
        worst: String::new(),
        doubles: String::new(),
        integers: String::new(),
        peak: String::new(),
        empty: String::new(),
        checkpoint: String::new(),
    };
    match (
        example_divided_differences(ex, BUDGET),
        ex.ad_out(),
        ex.params(),
    ) {
        (Err(e), _, _) => row.result = format!("refused: {}", one_line(&e)),
        (Ok(dd), Ok(ad), Ok(p)) => match compare(&dd, &ad, p.tol, p.tol) {
            Ok(c) => {
                row.result = if c.matches() {
                    format!("agrees within {}", p.tol)
                } else {
                    format!("differs beyond {}", p.tol)
                };
                row.worst = format!("{:.1e}", c.max_rel);
            }
            Err(e) => row.result = e,
        },
        (Ok(_), _, _) => row.result = "no ad.out or params.conf".into(),
    }
    Some(row)
}

/// Runs the oracle over the corpus in `shared` and writes the table to
/// `out`.
pub fn run(shared: &Path, out: &Path) -> Result<(), String> {
    let start = Instant::now();
    let examples = read_index(&shared.join("corpus"))?;
    let mut rows = Vec::new();
    for ex in &examples {
        rows.extend(dd_row(ex));
        for mode in [Mode::Tangent, Mode::Split, Mode::Joint] {
            rows.extend(reference_row(ex, mode));
        }
    }
    let elapsed = start.elapsed();
    let count = |f: &dyn Fn(&Row) -> bool| rows.iter().filter(|r| f(r)).count();
    let index_match = count(&|r| r.index == "match");
    let index_match_ok = count(&|r| r.index == "match" && r.result.starts_with("match"));
    let mut s = String::new();
    let _ = writeln!(s, "# Corpus status\n");
    let _ = writeln!(s, "## Reference outputs\n");
    let _ = writeln!(
        s,
        "Generated by `cargo xtask corpus`: the numerical oracle (`xaif-interp`) run over every example of the regression corpus. \
         `dd` rows: divided differences of the front-end program compared with `ad.out` at the example's tolerance. \
         Other rows: the reference engine's output of that mode executed with the example's driver and compared with `ad.out` \
         (match = within 1e-10 relative or 1e-13 absolute); `index` is the oracle column of `index.csv`. \
         Markers for statements the XAIF does not carry are refused, except on `not-executable` examples whose index says \
         `match`, which run with those markers taken as inert (`--inert-markers`). Tape columns are counts of the whole run of the mode \
         (all dependents).\n"
    );
    let _ = writeln!(
        s,
        "{} examples, {} runs; {} of {} runs that `index.csv` marks `match` reproduce `ad.out`; wall time {:.1} s.\n",
        examples.len(),
        rows.len(),
        index_match_ok,
        index_match,
        elapsed.as_secs_f64()
    );
    let _ = writeln!(s, "| example | verdict | mode | index | result | worst rel. error | doubles pushed | integers pushed | peak tape (d / i) | tapes empty | checkpoint peak |");
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.example,
            r.verdict,
            r.mode,
            r.index,
            r.result,
            r.worst,
            r.doubles,
            r.integers,
            r.peak,
            r.empty,
            r.checkpoint
        );
    }
    s.push('\n');
    s.push_str(&crate::engine::section(shared, &examples));
    // Messages name files by where this machine keeps the reference
    // material; the table names them relative to the repository.
    let s = s.replace(&shared.display().to_string(), "../shared");
    std::fs::write(out, s).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!(
        "corpus: {} runs in {:.1} s; {index_match_ok}/{index_match} index matches reproduced; table in {}",
        rows.len(),
        elapsed.as_secs_f64(),
        out.display()
    );
    Ok(())
}
