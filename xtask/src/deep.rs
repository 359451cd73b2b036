//! `cargo xtask deep`: time of `xaifb tangent` and `xaifb adjoint` on
//! programs that are deep where XAIF is flat (issue 15, class 2): a chain of
//! `n` nested `sin`, the same of `exp` on an array (temporaries of a shape),
//! a call with `n` arguments and `n` nested `If`s (`xaif-testkit`'s generators),
//! whole process, median of several runs, wall-clock and CPU time.
//!
//! Every pass must be linear in expression depth and length; the target is
//! under 2 s each for `n = 10⁴` on the development machine. CPU time (user
//! and system, of the xaifb process alone) is the figure that does not
//! depend on what else the machine runs.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

/// Seconds the issue allows for each transformation at `n = 10⁴`.
const TARGET: f64 = 2.0;

/// CPU seconds (user + system) of the children reaped so far.
fn children_cpu() -> Result<f64> {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) != 0 {
            bail!("getrusage failed: {}", std::io::Error::last_os_error());
        }
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(secs(usage.ru_utime) + secs(usage.ru_stime))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs `xaifb MODE -c CATALOGUE -i INPUT -o OUT` `runs` times; returns
/// the median wall and CPU seconds.
fn time(
    xaifb: &Path,
    mode: &str,
    catalogue: &Path,
    input: &Path,
    runs: usize,
) -> Result<(f64, f64)> {
    let out = input.with_extension(format!("{mode}.xaif"));
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let before = children_cpu()?;
        let start = Instant::now();
        let status = Command::new(xaifb)
            .arg(mode)
            .arg("-c")
            .arg(catalogue)
            .arg("-i")
            .arg(input)
            .arg("-o")
            .arg(&out)
            .status()
            .with_context(|| format!("running {}", xaifb.display()))?;
        wall.push(start.elapsed().as_secs_f64());
        cpu.push(children_cpu()? - before);
        if !status.success() {
            bail!("xaifb {mode} {} failed with {status}", input.display());
        }
    }
    std::fs::remove_file(&out).ok();
    Ok((median(wall), median(cpu)))
}

/// Generates the inputs, times both transformations on each and prints a
/// markdown table.
pub fn run(xaifb: &Path, catalogue: &Path, n: usize, runs: usize) -> Result<()> {
    let dir = std::env::temp_dir().join(format!("xtask-deep-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let inputs = [
        (
            format!("{n} nested `sin` (one expression)"),
            dir.join("chain.xaif"),
            xaif_testkit::deep::unary_chain(n, "sin_scal"),
        ),
        (
            format!("{n} nested `exp` of an array (one expression)"),
            dir.join("array.xaif"),
            xaif_testkit::deep::array_chain(n, "exp_scal"),
        ),
        (
            format!("a call with {n} passive arguments"),
            dir.join("call.xaif"),
            xaif_testkit::deep::wide_call(n),
        ),
        (
            format!("{n} nested `If`s"),
            dir.join("ifs.xaif"),
            xaif_testkit::deep::nested_ifs(n),
        ),
    ];
    println!("| input | size | mode | wall (s) | CPU (s) | target {TARGET} s |");
    println!("|---|---|---|---|---|---|");
    for (what, path, text) in &inputs {
        std::fs::write(path, text)?;
        for mode in ["tangent", "adjoint"] {
            let (wall, cpu) = time(xaifb, mode, catalogue, path, runs)?;
            println!(
                "| {what} | {:.1} MB | {mode} | {wall:.2} | {cpu:.2} | {} |",
                text.len() as f64 / 1e6,
                if cpu < TARGET { "met" } else { "MISSED" }
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
