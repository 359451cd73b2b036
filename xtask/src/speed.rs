//! `cargo xtask speed`: how fast the oracle executes and how fast xaifb
//! transforms, on the regression corpus, as markdown for
//! `docs/performance.md`.
//!
//! - Oracle: the reference outputs of the examples that execute the most
//!   operations, run in their modes; executed statements and floating-point
//!   operations per second (median of several runs in one process).
//! - Transformations: `xaifb tangent` and `xaifb adjoint` as a whole
//!   process on every input (the way the reference engine is timed: one
//!   process per input, each writing a new file), and the whole corpus in
//!   one batch call.
//! - Limits: how long `xaifb run` lets a runaway program run under its
//!   default limits (`docs/limits.md`).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use xaif_interp::corpus::{read_index, Example};
use xaif_interp::{compile, Harness, Mode};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Runs `ex`'s reference output of `mode` `reps` times; returns the median
/// time and the counters of one run.
fn time_oracle(ex: &Example, mode: Mode, reps: usize) -> Option<(Duration, u64, u64)> {
    let file = ex.reference(mode);
    let (p, source) = xaif_model::read_program_file(&file).ok()?;
    xaif_model::validate_program(&p, &source).ok()?;
    let prog = compile(&p, &source);
    let spec = ex.harness().ok()?;
    let mut times = Vec::new();
    let mut counters = (0, 0);
    for _ in 0..reps {
        let mut h = Harness::new(&prog, spec.clone());
        h.limits = xaif_interp::Limits::untimed();
        let start = Instant::now();
        let o = h.run(mode).ok()?;
        times.push(start.elapsed());
        counters = (
            o.stats.steps,
            o.stats.flops_original + o.stats.flops_derivative,
        );
    }
    Some((median(times), counters.0, counters.1))
}

/// The report.
pub fn run(shared: &Path, xaifb: &Path) -> Result<String, String> {
    let examples = read_index(&shared.join("corpus"))?;
    let mut s = String::new();
    // Oracle: find the heaviest runs (by executed statements).
    let mut heavy: Vec<(u64, &Example, Mode)> = Vec::new();
    for ex in examples
        .iter()
        .filter(|e| e.verdict.starts_with("executable-") && e.verdict.ends_with("harness"))
    {
        for mode in [Mode::Tangent, Mode::Split] {
            if ex.oracle(mode) != "match" {
                continue;
            }
            if let Some((_, steps, _)) = time_oracle(ex, mode, 1) {
                heavy.push((steps, ex, mode));
            }
        }
    }
    heavy.sort_by_key(|h| std::cmp::Reverse(h.0));
    let _ = writeln!(
        s,
        "| example | mode | statements executed | flops | median time | statements/s | flops/s |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for (_, ex, mode) in heavy.iter().take(6) {
        if let Some((t, steps, flops)) = time_oracle(ex, *mode, 7) {
            let secs = t.as_secs_f64();
            let _ = writeln!(
                s,
                "| {} | {:?} | {steps} | {flops} | {:.1} ms | {:.1} M | {:.1} M |",
                ex.name,
                mode,
                secs * 1e3,
                steps as f64 / secs / 1e6,
                flops as f64 / secs / 1e6
            );
        }
    }
    // Transformations, one process per input, then one batch call.
    let cat = shared.join("xaif/schema/examples/inlinable_intrinsics.xaif");
    let out = std::env::temp_dir().join(format!("xtask-speed-{}", std::process::id()));
    std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
    for (command, adjoint, named) in [
        ("tangent", false, &["RoehFlux_MemOps", "RoehFlux"][..]),
        ("adjoint", true, &["RoehFlux", "graphEx1"][..]),
    ] {
        let inputs: Vec<&Example> = examples
            .iter()
            .filter(|e| e.input(adjoint).is_file())
            .collect();
        let mut per_input = Vec::new();
        let mut by_name: Vec<(String, Duration)> = Vec::new();
        for round in 0..3 {
            for ex in &inputs {
                let dest = out.join(format!("{}-{command}-{round}.xaif", ex.name));
                let start = Instant::now();
                let status = Command::new(xaifb)
                    .args([command, "-c"])
                    .arg(&cat)
                    .arg("-i")
                    .arg(ex.input(adjoint))
                    .arg("-o")
                    .arg(&dest)
                    .stderr(std::process::Stdio::null())
                    .status()
                    .map_err(|e| e.to_string())?;
                let t = start.elapsed();
                if status.success() {
                    per_input.push(t);
                    if named.contains(&ex.name.as_str()) {
                        by_name.push((ex.name.clone(), t));
                    }
                }
            }
        }
        let mean = per_input.iter().sum::<Duration>().as_secs_f64() / per_input.len().max(1) as f64;
        let max = per_input.iter().max().copied().unwrap_or_default();
        let med = median(per_input.clone());
        let mut args: Vec<std::ffi::OsString> =
            vec![command.into(), "-c".into(), cat.clone().into()];
        for ex in &inputs {
            args.push("-i".into());
            args.push(ex.input(adjoint).into());
        }
        let batch_dir = out.join(format!("batch-{command}"));
        args.push("-o".into());
        args.push(batch_dir.clone().into());
        let mut batch = Vec::new();
        for _ in 0..3 {
            std::fs::remove_dir_all(&batch_dir).ok();
            let start = Instant::now();
            Command::new(xaifb)
                .args(&args)
                .stderr(std::process::Stdio::null())
                .status()
                .map_err(|e| e.to_string())?;
            batch.push(start.elapsed());
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "`xaifb {command}`, one process per input, {} inputs × 3 rounds: mean {:.2} ms, median {:.2} ms, slowest {:.1} ms per input.",
            inputs.len(),
            mean * 1e3,
            med.as_secs_f64() * 1e3,
            max.as_secs_f64() * 1e3
        );
        for name in named {
            let times: Vec<Duration> = by_name
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, t)| *t)
                .collect();
            if !times.is_empty() {
                let _ = writeln!(
                    s,
                    "{name}: median {:.1} ms.",
                    median(times).as_secs_f64() * 1e3
                );
            }
        }
        let _ = writeln!(
            s,
            "All {} inputs in one batch call: median {:.0} ms.",
            inputs.len(),
            median(batch).as_secs_f64() * 1e3
        );
    }
    std::fs::remove_dir_all(&out).ok();
    Ok(s)
}

/// How long `xaifb run` takes to stop the runaway program `fixture` (a
/// `do while (.true.)` loop) under its default limits: the median of three
/// runs, and the limit that stopped each.
pub fn runaway(xaifb: &Path, fixture: &Path) -> Result<String, String> {
    let mut times = Vec::new();
    let mut stopped_by = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        let out = Command::new(xaifb)
            .arg("run")
            .arg(fixture)
            .args(["--n", "1", "--m", "1"])
            .output()
            .map_err(|e| e.to_string())?;
        times.push(start.elapsed());
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            return Err(format!("{} ran to completion", fixture.display()));
        }
        stopped_by.push(if err.contains("step budget") {
            "step budget"
        } else if err.contains("time limit") {
            "time limit"
        } else {
            return Err(format!(
                "{} stopped by something else: {err}",
                fixture.display()
            ));
        });
    }
    Ok(format!(
        "\nA runaway program (`{}`) under the default limits of `xaifb run` stops after {:.2} s (median of 3; stopped by: {}).\n",
        fixture.file_name().unwrap_or_default().to_string_lossy(),
        median(times).as_secs_f64(),
        stopped_by.join(", ")
    ))
}
