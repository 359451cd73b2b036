//! The search on graph files, outside any transformation: every `.lcg`
//! file of a directory (the text form of [`Lcg`], as `cargo xtask
//! elim-report --dump DIR [--input PROGRAM]` writes them) is optimized at
//! one effort level in tangent and in adjoint mode, under the driver's
//! default configuration (`-M 1 -A 1`, what `cargo xtask elim-exact`
//! uses), and the reports are printed one line per graph, with totals and
//! the CPU time of each mode.
//! It exists to compare search settings on the corpus's graphs and on
//! generated ones without rebuilding the whole engine:
//!
//! ```sh
//! cargo xtask elim-report --dump target/graphs
//! cargo run --release -p xaif-elim --example lab -- target/graphs default 20
//! ```
//!
//! Arguments: the directory, the effort (`none`, `fast`, `default`,
//! `max`, `exhaustive`; default `default`), and the fewest intermediate
//! vertices of the graphs to take (default 0).

use std::path::Path;
use std::process::ExitCode;

use xaif_elim::{optimize, Config, Effort, Lcg, Proof, PropagationMode, VertexKind};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = args.get(1) else {
        eprintln!("usage: lab DIR [none|fast|default|max|exhaustive] [MIN_INTERMEDIATES]");
        return ExitCode::from(2);
    };
    let effort = match args.get(2).map(String::as_str) {
        None | Some("default") => Effort::Default,
        Some("none") => Effort::None,
        Some("fast") => Effort::Fast,
        Some("max") => Effort::Max,
        Some("exhaustive") => Effort::Exhaustive,
        Some(other) => {
            eprintln!("lab: unknown effort `{other}`");
            return ExitCode::from(2);
        }
    };
    let min_inter: usize = match args.get(3).map(|s| s.parse()) {
        None => 0,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("lab: {}: {e}", args[3]);
            return ExitCode::from(2);
        }
    };
    match run(Path::new(dir), effort, min_inter) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lab: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(dir: &Path, effort: Effort, min_inter: usize) -> Result<(), String> {
    let read = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files: Vec<_> = read
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "lcg"))
        .collect();
    files.sort();
    // Chain, ours and bound per mode, and CPU microseconds per mode.
    let mut totals = [[0u64; 3]; 2];
    let mut cpu_total = [0u128; 2];
    for file in files {
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let g = Lcg::from_text(&text).ok_or_else(|| format!("{}: not a graph", file.display()))?;
        let inter = g
            .vertices()
            .filter(|&v| g.kind(v) == Some(VertexKind::Intermediate))
            .count();
        if inter < min_inter {
            continue;
        }
        let name = file
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        let mut line = format!("{name:60} i={inter:3} e={:3}", g.edges().len());
        for (k, mode) in [PropagationMode::Tangent, PropagationMode::Adjoint]
            .into_iter()
            .enumerate()
        {
            let mut config =
                Config::from_flags(1, 1, false).map_err(|e| format!("the default flags: {e}"))?;
            config.search.effort = effort;
            let before = cpu();
            let o = optimize(&g, &config, mode).map_err(|e| format!("{}: {e}", file.display()))?;
            let micros = cpu() - before;
            cpu_total[k] += micros;
            let r = &o.report;
            totals[k][0] += r.chain;
            totals[k][1] += r.cost;
            totals[k][2] += r.lower_bound;
            let vb = r.vertex_bound.map_or("-".to_string(), |b| b.to_string());
            let proof = match r.proof {
                Some(Proof::Edge) => "E",
                Some(Proof::Vertex) => "V",
                None => "-",
            };
            line += &format!(
                " | {:4} {:4} {:4} {vb:>4} {proof} {micros:>7}us {:16}",
                r.chain, r.cost, r.lower_bound, r.found_by
            );
        }
        println!("{line}");
    }
    for (k, mode) in ["tangent", "adjoint"].iter().enumerate() {
        println!(
            "{mode}: chain {} ours {} bound {} cpu {} ms",
            totals[k][0],
            totals[k][1],
            totals[k][2],
            cpu_total[k] / 1000
        );
    }
    Ok(())
}

/// CPU time of the process (every thread: the adjoint baseline's chains
/// run on two), in microseconds.
fn cpu() -> u128 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes into the struct we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as u128 * 1_000_000 + t.tv_nsec as u128 / 1000
}
