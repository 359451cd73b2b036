//! `cargo xtask elim-exact [FILE…]`: the exhaustive effort on medium and
//! large graphs, one at a time, beside the default effort, as the table of
//! `docs/elimination.md`'s section "The truth on medium graphs".
//!
//! A FILE is a graph in text form (`.lcg`, as `cargo xtask elim-report
//! --dump` writes them) or a program (`.xaif`, every graph of its tangent
//! transformation); without FILE, the distinct graphs of the corpus's
//! tangent inputs. Graphs with fewer than `--min-intermediates` (20)
//! intermediate vertices are left out. Each graph is optimized in tangent
//! and adjoint mode under the driver's default configuration (`-M 1 -A
//! 1`), first at the default effort, then exhaustively (with
//! `--cache DIR`, into that elimination cache, so that later builds reuse
//! the results). The rows go to standard error as they are found and the
//! table to `--out`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use xaif_elim::{optimize, CacheHandle, Config, Effort, Lcg, Proof, PropagationMode, VertexKind};

/// The arguments of `cargo xtask elim-exact`.
#[derive(clap::Args)]
pub struct Args {
    /// Graphs (`.lcg`) or programs (`.xaif`); default: the corpus's.
    pub files: Vec<PathBuf>,
    /// The reference material (default: $XAIFB_SHARED or ../shared).
    #[arg(long)]
    pub shared: Option<PathBuf>,
    /// Graphs with fewer intermediate vertices are left out.
    #[arg(long, default_value_t = 20)]
    pub min_intermediates: usize,
    /// Keep the exhaustive results in this elimination cache.
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Where the markdown table goes (default: printed only).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// One graph to search: its name, the names of the other graphs of the
/// same text, and the graph.
pub(crate) struct Graph {
    pub(crate) name: String,
    pub(crate) also: Vec<String>,
    pub(crate) lcg: Lcg,
}

pub(crate) fn intermediates(g: &Lcg) -> usize {
    g.vertices()
        .filter(|&v| g.kind(v) == Some(VertexKind::Intermediate))
        .count()
}

/// The graphs named by `files` (or the corpus's), distinct, with at least
/// `min` intermediates, in name order.
pub(crate) fn graphs(shared: &Path, files: &[PathBuf], min: usize) -> Result<Vec<Graph>, String> {
    let mut named: Vec<(String, String)> = Vec::new();
    if files.is_empty() {
        for ex in &xaif_interp::corpus::read_index(&shared.join("corpus"))? {
            if ex.input(false).is_file() {
                if let Ok((_, dots)) = crate::elim::transform(shared, ex, false) {
                    named.extend(dots);
                }
            }
        }
    }
    for file in files {
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        if file.extension().is_some_and(|x| x == "xaif") {
            let (_, dots) = crate::elim::transform_file(shared, file, "", &stem, false)?;
            named.extend(dots);
        } else {
            let text =
                std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
            named.push((stem, text));
        }
    }
    named.sort();
    let mut out: Vec<Graph> = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    for (name, text) in named {
        let Some(lcg) = Lcg::from_text(&text) else {
            return Err(format!("{name}: not a graph"));
        };
        if intermediates(&lcg) < min {
            continue;
        }
        match texts.iter().position(|t| *t == text) {
            Some(k) => out[k].also.push(name),
            None => {
                texts.push(text);
                out.push(Graph {
                    name,
                    also: Vec::new(),
                    lcg,
                });
            }
        }
    }
    Ok(out)
}

/// The operations (model units) of every graph of `program`'s tangent
/// transformation, each as often as the program has it, per mode
/// (tangent, adjoint): the reference's chain, the default effort, and the
/// default effort with `cache` (what a build with that cache writes).
pub(crate) fn operations(
    shared: &Path,
    program: &Path,
    cache: Option<&CacheHandle>,
) -> Result<[(u64, u64, u64); 2], String> {
    let mut totals = [(0u64, 0u64, 0u64); 2];
    for g in graphs(shared, &[program.to_path_buf()], 0)? {
        let times = 1 + g.also.len() as u64;
        for (m, mode) in [PropagationMode::Tangent, PropagationMode::Adjoint]
            .into_iter()
            .enumerate()
        {
            let d = optimize(&g.lcg, &config(Effort::Default, None), mode)
                .map_err(|e| format!("{}: {e}", g.name))?;
            let c = match cache {
                Some(_) => {
                    optimize(&g.lcg, &config(Effort::Default, cache), mode)
                        .map_err(|e| format!("{}: {e}", g.name))?
                        .report
                        .cost
                }
                None => d.report.cost,
            };
            totals[m].0 += times * d.report.chain;
            totals[m].1 += times * d.report.cost;
            totals[m].2 += times * c;
        }
    }
    Ok(totals)
}

/// The driver's default configuration (`-M 1 -A 1`) at `effort`.
pub(crate) fn config(effort: Effort, cache: Option<&CacheHandle>) -> Config {
    let mut c = Config::from_flags(1, 1, false).expect("the default flags are valid");
    c.search.effort = effort;
    c.search.cache = cache.cloned();
    c
}

/// Runs the task.
pub fn run(args: Args, shared: &Path) -> Result<(), String> {
    let cache = args
        .cache
        .as_ref()
        .map(|dir| CacheHandle::new(dir.clone(), std::sync::Arc::new(|t: &str| eprintln!("{t}"))));
    let graphs = graphs(shared, &args.files, args.min_intermediates)?;
    eprintln!("elim-exact: {} distinct graphs", graphs.len());
    let mut table = String::new();
    let _ = writeln!(
        table,
        "| graph | mode | intermediates | inner | edges | chain | default | best | bound | gap | vertex bound | proof | default − best | time (default) | time (exhaustive) |"
    );
    let _ = writeln!(
        table,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    // Per mode: chain, default, best, bound, graphs proven.
    let mut totals = [(0u64, 0u64, 0u64, 0u64, 0usize); 2];
    for g in &graphs {
        for (m, mode) in [PropagationMode::Tangent, PropagationMode::Adjoint]
            .into_iter()
            .enumerate()
        {
            let t = Instant::now();
            let d = optimize(&g.lcg, &config(Effort::Default, None), mode)
                .map_err(|e| format!("{}: {e}", g.name))?;
            let default_time = t.elapsed();
            let t = Instant::now();
            let x = optimize(&g.lcg, &config(Effort::Exhaustive, cache.as_ref()), mode)
                .map_err(|e| format!("{}: {e}", g.name))?;
            let time = t.elapsed();
            let r = &x.report;
            let gap = (r.cost - r.lower_bound.min(r.cost)) as f64 / r.cost.max(1) as f64;
            let proof = match r.proof {
                Some(Proof::Edge) => "optimal (edge sequences)",
                Some(Proof::Vertex) => "optimal (vertex sequences)",
                None => "–",
            };
            let mode_name = match mode {
                PropagationMode::Tangent => "tangent",
                PropagationMode::Adjoint => "adjoint",
            };
            let name = if g.also.is_empty() {
                g.name.clone()
            } else {
                format!("{} (= {})", g.name, g.also.join(", "))
            };
            let row = format!(
                "| {name} | {mode_name} | {} | {} | {} | {} | {} | {} | {} | {:.0}% | {} | {proof} | {:+.1}% | {:.1} ms | {:.0} s |",
                intermediates(&g.lcg),
                r.size.0,
                r.size.1,
                r.chain,
                d.report.cost,
                r.cost,
                r.lower_bound,
                gap * 100.0,
                r.vertex_bound.map_or("–".to_string(), |b| b.to_string()),
                (d.report.cost as f64 - r.cost as f64) * 100.0 / r.cost.max(1) as f64,
                default_time.as_secs_f64() * 1e3,
                time.as_secs_f64(),
            );
            eprintln!("{row}");
            table.push_str(&row);
            table.push('\n');
            let t = &mut totals[m];
            t.0 += r.chain;
            t.1 += d.report.cost;
            t.2 += r.cost;
            t.3 += r.lower_bound.min(r.cost);
            t.4 += usize::from(r.proof.is_some());
        }
    }
    if graphs.len() > 1 {
        for (mode_name, t) in ["tangent", "adjoint"].iter().zip(totals) {
            let row = format!(
                "| all {} graphs | {mode_name} | | | | {} | {} | {} | {} | {:.0}% | | {} proven | {:+.1}% | | |",
                graphs.len(),
                t.0,
                t.1,
                t.2,
                t.3,
                (t.2 - t.3) as f64 * 100.0 / t.2.max(1) as f64,
                t.4,
                (t.1 as f64 - t.2 as f64) * 100.0 / t.2.max(1) as f64,
            );
            eprintln!("{row}");
            table.push_str(&row);
            table.push('\n');
        }
    }
    match &args.out {
        Some(out) => std::fs::write(out, &table).map_err(|e| format!("{}: {e}", out.display()))?,
        None => print!("{table}"),
    }
    Ok(())
}
