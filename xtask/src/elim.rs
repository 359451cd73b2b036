//! `cargo xtask elim-report`: the elimination over every graph of the
//! regression corpus, as `docs/elimination.md`.
//!
//! Every tangent and adjoint input is transformed with the engine options
//! its example was built with and the default effort; the per-graph
//! statistics (the reference chain's cost, ours, the lower bound, the
//! proof, the time) are summarized: totals, proofs, the distribution of
//! the gap between result and bound, times. Then the exact method alone
//! (`--effort max`) runs on every distinct graph, one at a time, to find
//! the size up to which it proves optimality within a second; and the
//! elimination alone (graphs already built, no XAIF) is timed over all
//! corpus graphs at every effort level, for `docs/performance.md`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use xaif_cfrev::AdjointOptions;
use xaif_elim::{optimize, Config, Effort, Lcg, Proof, PropagationMode};
use xaif_interp::corpus::{read_index, Example};
use xaif_linearize::catalogue::read_catalogues;
use xaif_linearize::flatten::GraphStats;
use xaif_linearize::TangentOptions;

/// One graph's statistics, named `example/routine/block`.
pub(crate) type Named = (String, GraphStats);

/// A transformation's graph statistics and (tangent) its graphs in text
/// form, each with its name.
type Transformed = (Vec<Named>, Vec<(String, String)>);

/// The per-graph statistics of one transformation, and (tangent) the
/// graphs themselves in text form, named `example/routine_block_k`.
pub(crate) fn transform(shared: &Path, ex: &Example, adjoint: bool) -> Result<Transformed, String> {
    let input = if adjoint {
        [ex.input(true), ex.input(false)]
            .into_iter()
            .find(|p| p.is_file())
            .ok_or("no input")?
    } else {
        ex.input(false)
    };
    transform_file(shared, &input, &ex.options, &ex.name, adjoint)
}

/// [`transform`] of one input file with the engine options of an
/// example's `options` file (`-S`, `-D`, `-r`, `-N`); graphs are named
/// after `name`.
pub(crate) fn transform_file(
    shared: &Path,
    input: &Path,
    opts: &str,
    name: &str,
    adjoint: bool,
) -> Result<Transformed, String> {
    let schema = shared.join("xaif/schema/examples");
    let non_path = schema.join("noninlinable_intrinsics.xaif");
    let (catalogue, non) = read_catalogues(
        &schema.join("inlinable_intrinsics.xaif"),
        opts.contains("-N").then_some(non_path.as_path()),
    )
    .map_err(|e| e.to_string())?;
    let (p, source) = xaif_model::read_program_file(input).map_err(|e| e.to_string())?;
    xaif_model::validate_program(&p, &source).map_err(|e| e.to_string())?;
    let (stats, dots) = if adjoint {
        let mut o = AdjointOptions::default();
        o.flatten.per_statement = opts.contains("-S");
        o.zero_locals = opts.contains("-D");
        o.rename = opts.contains("'-r'");
        let r = xaif_cfrev::adjoint(&p, &catalogue, non.as_ref(), &o).map_err(|e| e.to_string())?;
        (r.transformed.stats, Vec::new())
    } else {
        let mut o = TangentOptions::default();
        o.flatten.per_statement = opts.contains("-S");
        o.zero_locals = opts.contains("-D");
        o.rename = opts.contains("'-r'");
        o.dot = true;
        let r =
            xaif_linearize::tangent(&p, &catalogue, non.as_ref(), &o).map_err(|e| e.to_string())?;
        let dots = r.dots.into_iter();
        (
            r.stats,
            dots.map(|d| (format!("{name}/{}", d.name), d.lcg))
                .collect(),
        )
    };
    let mut graphs = Vec::new();
    for r in stats.routines {
        for b in r.blocks {
            let several = b.graphs.iter().filter(|g| g.graphs > 0).count() > 1;
            for (k, g) in b.graphs.into_iter().filter(|g| g.graphs > 0).enumerate() {
                let suffix = if several {
                    format!(" #{k}")
                } else {
                    String::new()
                };
                graphs.push((format!("{name}/{}/{}{suffix}", r.routine, b.block), g));
            }
        }
    }
    Ok((graphs, dots))
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Summary rows of one mode.
fn summary(s: &mut String, mode: &str, graphs: &[GraphStats]) {
    let chain: u64 = graphs.iter().map(|g| g.chain_cost).sum();
    let ours: u64 = graphs.iter().map(|g| g.cost).sum();
    let bound: u64 = graphs.iter().map(|g| g.lower_bound).sum();
    let edge = graphs.iter().filter(|g| g.proof == Some("edge")).count();
    let vertex = graphs.iter().filter(|g| g.proof == Some("vertex")).count();
    let better = graphs.iter().filter(|g| g.cost < g.chain_cost).count();
    let mut micros: Vec<u64> = graphs.iter().map(|g| g.micros).collect();
    micros.sort_unstable();
    let _ = writeln!(
        s,
        "| {mode} | {} | {chain} | {ours} | {:.3} | {better} | {bound} | {edge} | {vertex} | {} µs | {} µs | {} µs | {:.1} ms |",
        graphs.len(),
        ours as f64 / chain.max(1) as f64,
        percentile(&micros, 0.5),
        percentile(&micros, 0.9),
        micros.last().copied().unwrap_or(0),
        micros.iter().sum::<u64>() as f64 / 1e3,
    );
}

/// The gap between result and lower bound, as a distribution.
fn gaps(s: &mut String, mode: &str, graphs: &[GraphStats]) {
    let mut buckets = [0usize; 6];
    for g in graphs {
        let gap = if g.cost == 0 {
            0.0
        } else {
            (g.cost - g.lower_bound.min(g.cost)) as f64 / g.cost as f64
        };
        let k = if g.proof.is_some() || gap == 0.0 {
            0
        } else if gap <= 0.1 {
            1
        } else if gap <= 0.25 {
            2
        } else if gap <= 0.5 {
            3
        } else if gap < 1.0 {
            4
        } else {
            5
        };
        buckets[k] += 1;
    }
    let _ = writeln!(
        s,
        "| {mode} | {} | {} | {} | {} | {} | {} |",
        buckets[0], buckets[1], buckets[2], buckets[3], buckets[4], buckets[5]
    );
}

/// How the search works and what its bounds rest on, for the report's
/// readers (the figures follow it).
const METHOD: &str = "## How the elimination is chosen

Per graph (`xaif_elim::optimize`), by effort:

1. The reference's chains run on the search's working graph (all seven in adjoint mode and on graphs of fewer than \
64 edges; the seed's chain and lowest Markowitz → reverse on larger tangent graphs). Their selection is the \
baseline: the result never costs more, and in adjoint mode it never spends more operations (pushes and pops aside) \
or tapes more factors.
2. Candidates: no elimination, the selection, the cheapest prefix of every chain run under the cost model.
3. Greedy descent from the four best candidates (two with `--effort fast`) over vertex, front and back edge eliminations (the remainder \
post-processing).
4. Exact searches where the graph is small: A* over sets of eliminated vertices (up to 8 inner vertices, 256 \
states) and over edge-elimination states (up to 6 edges, 100 states). A graph beyond their reach whose parts are \
joined only by independents (three statements updating three fields from the same inputs) is searched part by \
part: eliminations in one part never touch another, costs add up, and so do bounds and proofs.
5. `--effort max`: all chains everywhere, eight descents, exact searches up to 32 inner vertices and 16 edges with \
budgets of 10⁵ and 2·10⁴ states, then the anytime search where no proof was found: iterated descent (perturb the \
best sequence at a random position by leaving a move out, putting a random move before it, or making one or two \
random moves and descending again; keep the result when it costs no more), 400 units of work (moves measured or \
made) per edge, from 9 inner vertices; then beam search. In adjoint mode it keeps only states within the \
baseline's operations and tape.

Budgets count states and work, never time, and random choices come from a seeded generator: the result depends on \
the graph, the flags and the seed only (`--jobs` and the machine do not change a byte).

## Lower bounds

The bound of a graph (and of every state the exact searches reach) is the larger of two:

- **Potential**: every operation merges at most two run-time values into one and folding never merges run-time \
values, so reaching a state with `f` run-time edges from one with `φ` (those an independent reaches) costs at least \
`φ − f` operations, and each run-time edge left costs two more in the propagation.
- **Circuit**: the whole derivative code from a state on (accumulation and propagation) is a circuit of binary \
operations, copies and sign changes free. Its inputs include every distinct run-time value that carries \
derivatives, the tangents of the independents (tangent code), or the adjoints of the dependents and of the \
independents (adjoint code increments the latter). Each operation joins at most two connected pieces, and at the \
end there are at most as many pieces as the graph has components once its edges and shared values join them: at \
least `inputs − components` operations. On top: a dependent whose in-edges all carry run-time values never gets a \
unit in-edge, so its tangent begins with a `Sax` whose addition joins nothing (one more operation), and in adjoint \
code some factor into it is taped (a push and a pop per such piece). Where two paths of unit and constant edges \
join the same vertices, constants may cancel to zero, and only run-time edges count.

Both are admissible (a property test compares them with exhaustive search from random states of random graphs) \
but loose on large graphs: they count inputs and pieces, not how often a value must be combined. The gap in the \
tables below is the distance to them, not to the optimum; a proof closes it.

";

/// Graphs with at least this many intermediate vertices are listed one by
/// one in the report.
const LISTED: usize = 20;

/// The per-graph table of the graphs with at least [`LISTED`]
/// intermediate vertices (each distinct one once per mode), and how many
/// of them are improved over the chain or within 10% of their bound.
fn large_graphs(s: &mut String, tangent: &[Named], adjoint: &[Named]) {
    let mut rows: Vec<(&str, &str, &GraphStats)> = Vec::new();
    for (mode, graphs) in [("tangent", tangent), ("adjoint", adjoint)] {
        let mut seen = std::collections::HashSet::new();
        for (name, g) in graphs {
            if g.intermediates >= LISTED && seen.insert(name.as_str()) {
                rows.push((name.as_str(), mode, g));
            }
        }
    }
    rows.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    let within = |g: &GraphStats| g.cost as f64 <= 1.1 * g.lower_bound as f64;
    let good = rows
        .iter()
        .filter(|r| r.2.cost < r.2.chain_cost || r.2.proof.is_some() || within(r.2))
        .count();
    let _ = writeln!(
        s,
        "\n## Graphs with {LISTED} or more intermediate vertices\n\nEvery such graph of the corpus, each block once per \
         mode (examples that share a routine give the same graph). Gap: (ours − bound) / ours. {good} of {} are \
         improved over the chain, proven optimal or within 10% of their bound.\n",
        rows.len()
    );
    let _ = writeln!(
        s,
        "| graph | mode | intermediates | inner | edges | chain | ours | bound | gap | proof | found by |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, mode, g) in rows {
        let gap = (g.cost - g.lower_bound.min(g.cost)) as f64 / g.cost.max(1) as f64;
        let _ = writeln!(
            s,
            "| {name} | {mode} | {} | {} | {} | {} | {} | {} | {:.0}% | {} | {} |",
            g.intermediates,
            g.inner_vertices,
            g.edges,
            g.chain_cost,
            g.cost,
            g.lower_bound,
            gap * 100.0,
            g.proof.unwrap_or("–"),
            g.found_by,
        );
    }
}

/// The elimination alone: `graphs` (built once) eliminated and searched
/// per effort level, median of `rounds` rounds (1 for `max`, which is
/// left out when `max` is false), as a markdown section.
fn timing_table_with(graphs: &[Lcg], rounds: usize, max: bool, efforts: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n## The elimination alone\n");
    let _ = writeln!(
        s,
        "All {} graphs of the corpus's tangent inputs (duplicates included: every graph the transformations eliminate), \
         built once, then eliminated and searched per effort level; median of {rounds} rounds (1 for `max`), one thread \
         per graph except two for the chains of a large graph with three or more of them (the adjoint search's \
         seven, the reference selection's); wall time, and the CPU time of every thread. `none` is the reference's \
         selection alone (what `--heuristic` and the previous releases did).\n",
        graphs.len()
    );
    let _ = writeln!(
        s,
        "| effort | tangent | adjoint | per graph (tangent) | tangent, CPU | adjoint, CPU |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    let mut levels = vec![
        ("none", Effort::None, rounds),
        ("fast", Effort::Fast, rounds),
        ("default", Effort::Default, rounds),
    ];
    if max {
        levels.push(("max", Effort::Max, 1));
    }
    if !efforts.is_empty() {
        levels.retain(|l| efforts.iter().any(|e| e == l.0));
    }
    for (name, effort, rounds) in levels {
        let mut row = Vec::new();
        let mut cpu_row = Vec::new();
        for mode in [PropagationMode::Tangent, PropagationMode::Adjoint] {
            let mut times = Vec::new();
            let mut cpu = Vec::new();
            for _ in 0..rounds.max(1) {
                let (t, c) = (Instant::now(), process_cpu());
                for g in graphs {
                    let mut config = Config::default();
                    config.search.effort = effort;
                    let _ = optimize(g, &config, mode);
                }
                times.push(t.elapsed());
                cpu.push(process_cpu().saturating_sub(c));
            }
            row.push(median(times));
            cpu_row.push(median(cpu));
        }
        let _ = writeln!(
            s,
            "| {name} | {:.1} ms | {:.1} ms | {:.0} µs | {:.1} ms | {:.1} ms |",
            row[0].as_secs_f64() * 1e3,
            row[1].as_secs_f64() * 1e3,
            row[0].as_secs_f64() * 1e6 / graphs.len().max(1) as f64,
            cpu_row[0].as_secs_f64() * 1e3,
            cpu_row[1].as_secs_f64() * 1e3,
        );
    }
    s
}

/// CPU time of this process so far (every thread), less sensitive to the
/// load of a shared machine than wall time.
fn process_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes into the struct we pass.
    if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn timing_table(graphs: &[Lcg], rounds: usize) -> String {
    timing_table_with(graphs, rounds, true, &[])
}

/// `cargo xtask elim-report --timing`: only the elimination-alone table
/// (without `max`; only the levels named in `efforts`, when given),
/// printed, over the graphs of the corpus's tangent inputs (of the
/// examples named in `only`, when given).
pub fn timing(
    shared: &Path,
    only: &[String],
    efforts: &[String],
    rounds: usize,
) -> Result<(), String> {
    let examples = read_index(&shared.join("corpus"))?;
    let mut lcgs: Vec<String> = Vec::new();
    for ex in &examples {
        if !only.is_empty() && !only.contains(&ex.name) {
            continue;
        }
        if ex.input(false).is_file() {
            if let Ok((_, dots)) = transform(shared, ex, false) {
                lcgs.extend(dots.into_iter().map(|d| d.1));
            }
        }
    }
    let graphs: Vec<Lcg> = lcgs
        .iter()
        .filter_map(|t| Lcg::from_text(t))
        .filter(|g| !g.edges().is_empty())
        .collect();
    print!("{}", timing_table_with(&graphs, rounds, false, efforts));
    Ok(())
}

/// `cargo xtask elim-report --dump DIR`: every distinct graph of the
/// corpus's tangent inputs (or of the tangent transformation of `input`)
/// in [`Lcg::to_text`] form, one file each, named after the first
/// example, routine and block it comes from (inputs for experiments with
/// the search outside the transformations).
pub fn dump(shared: &Path, dir: &Path, input: Option<&Path>) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut all = Vec::new();
    match input {
        Some(file) => {
            let (_, dots) = transform_file(shared, file, "", "input", false)?;
            all.extend(dots);
        }
        None => {
            for ex in &read_index(&shared.join("corpus"))? {
                if ex.input(false).is_file() {
                    if let Ok((_, dots)) = transform(shared, ex, false) {
                        all.extend(dots);
                    }
                }
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for (name, text) in all {
        if Lcg::from_text(&text).is_none_or(|g| g.edges().is_empty()) || !seen.insert(text.clone())
        {
            continue;
        }
        let file = dir.join(format!("{}.lcg", name.replace('/', "__")));
        std::fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))?;
    }
    eprintln!(
        "elim-report: {} distinct graphs in {}",
        seen.len(),
        dir.display()
    );
    Ok(())
}

/// The first section of `docs/elimination.md` that the report keeps as
/// it is (written from `cargo xtask elim-exact`'s results).
const KEPT: &str = "The truth on medium graphs";

/// Runs the report over the corpus in `shared` and writes it to `out`;
/// the sections of `out` from [`KEPT`] on stay.
pub fn run(shared: &Path, out: &Path) -> Result<(), String> {
    let started = Instant::now();
    let examples = read_index(&shared.join("corpus"))?;
    let mut tangent_named = Vec::new();
    let mut adjoint_named = Vec::new();
    let mut lcgs: Vec<String> = Vec::new();
    for ex in &examples {
        if ex.input(false).is_file() {
            if let Ok((g, dots)) = transform(shared, ex, false) {
                tangent_named.extend(g);
                lcgs.extend(dots.into_iter().map(|d| d.1));
            }
        }
        if ex.input(true).is_file() || ex.input(false).is_file() {
            if let Ok((g, _)) = transform(shared, ex, true) {
                adjoint_named.extend(g);
            }
        }
    }
    let tangent: Vec<GraphStats> = tangent_named.iter().map(|g| g.1.clone()).collect();
    let adjoint: Vec<GraphStats> = adjoint_named.iter().map(|g| g.1.clone()).collect();
    let graphs: Vec<Lcg> = lcgs
        .iter()
        .filter_map(|t| Lcg::from_text(t))
        .filter(|g| !g.edges().is_empty())
        .collect();
    let mut distinct: Vec<&String> = lcgs.iter().collect();
    distinct.sort();
    distinct.dedup();
    let distinct: Vec<Lcg> = distinct
        .into_iter()
        .filter_map(|t| Lcg::from_text(t))
        .filter(|g| !g.edges().is_empty())
        .collect();

    let mut s = String::new();
    let _ = writeln!(s, "# Elimination\n");
    let _ = writeln!(
        s,
        "Generated by `cargo xtask elim-report` from the regression corpus (every tangent and adjoint input, with the \
         engine options its example was built with). Costs are operations of the derivative code per execution of the \
         graph: the Jacobian accumulation plus the propagation of the remainder graph, forward in tangent mode; in \
         adjoint mode the transposed propagation plus two operations per taped factor (push and pop), and {} more per \
         factor beyond what the reference's chain tapes. \"Chain\" is the reference's selection (scarcity-preserving \
         edge elimination under its seven heuristic chains, as before this search existed), \"ours\" the result of the \
         default effort. A proof covers every vertex elimination sequence (intermediates eliminated, dependents with \
         out-edges cut) or every front and back edge elimination sequence, partial ones included; the lower bound \
         holds for every edge elimination sequence.\n",
        xaif_elim::EXCESS_TAPE
    );
    s.push_str(METHOD);
    let _ = writeln!(s, "## Default effort, per graph of every transformation\n");
    let _ = writeln!(
        s,
        "| mode | graphs | chain | ours | ours / chain | graphs improved | lower bounds | proven (edges) | proven (vertices) | median time | 90th percentile | slowest | total time |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    summary(&mut s, "tangent", &tangent);
    summary(&mut s, "adjoint", &adjoint);
    let _ = writeln!(
        s,
        "\nGap between result and lower bound, (cost − bound) / cost, graphs per bucket (proven or zero gap first):\n"
    );
    let _ = writeln!(
        s,
        "| mode | proven or 0 | ≤ 10% | ≤ 25% | ≤ 50% | < 100% | bound 0 |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    gaps(&mut s, "tangent", &tangent);
    gaps(&mut s, "adjoint", &adjoint);
    large_graphs(&mut s, &tangent_named, &adjoint_named);
    let proven_up_to = |graphs: &[GraphStats]| {
        let mut sizes: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
        for g in graphs {
            let e = sizes.entry(g.inner_vertices).or_default();
            e.0 += 1;
            e.1 += usize::from(g.proof.is_some());
        }
        let mut upto = None;
        for (size, (n, proven)) in sizes {
            if proven < n {
                break;
            }
            upto = Some(size);
        }
        upto.map_or("none".to_string(), |s| s.to_string())
    };
    let _ = writeln!(
        s,
        "\nWith the default effort every graph with at most {} (tangent) and {} (adjoint) inner vertices is proven optimal.",
        proven_up_to(&tangent),
        proven_up_to(&adjoint)
    );

    // The exact method alone, one distinct graph at a time.
    let _ = writeln!(s, "\n## The exact method\n");
    let _ = writeln!(
        s,
        "`--effort max` on each of the {} distinct graphs of the tangent inputs (A* over vertex sets with a budget of \
         100 000 expanded states on graphs with at most 32 inner vertices, A* over edge-elimination states on graphs \
         with at most 16 edges (20 000 states), beam search on the rest), one graph at a time. Inner vertices are the intermediates \
         and the dependents with out-edges.\n",
        distinct.len()
    );
    let mut by_size: BTreeMap<usize, (usize, usize, usize, Duration)> = BTreeMap::new();
    let mut slowest_proof = Duration::ZERO;
    for mode in [PropagationMode::Tangent, PropagationMode::Adjoint] {
        for g in &distinct {
            let mut config = Config::default();
            config.search.effort = Effort::Max;
            let t = Instant::now();
            let Ok(o) = optimize(g, &config, mode) else {
                continue;
            };
            let dt = t.elapsed();
            let e = by_size.entry(o.report.size.0).or_default();
            e.0 += 1;
            let within = dt <= Duration::from_secs(1);
            if o.report.proof.is_some() && within {
                e.1 += 1;
                slowest_proof = slowest_proof.max(dt);
            }
            if o.report.proof == Some(Proof::Edge) && within {
                e.2 += 1;
            }
            e.3 = e.3.max(dt);
        }
    }
    let mut handled = 0;
    for (&size, &(n, proven, _, _)) in &by_size {
        if proven < n {
            break;
        }
        handled = size;
    }
    let _ = writeln!(
        s,
        "Every graph with at most **{handled} inner vertices** is proven optimal within one second (in both modes); the \
         slowest of these proofs took {:.0} ms.\n",
        slowest_proof.as_secs_f64() * 1e3
    );
    let _ = writeln!(
        s,
        "| inner vertices | graphs × modes | proven within 1 s | of which over edge eliminations | slowest |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|");
    for (size, (n, proven, edge, slowest)) in &by_size {
        let _ = writeln!(
            s,
            "| {size} | {n} | {proven} | {edge} | {:.1} ms |",
            slowest.as_secs_f64() * 1e3
        );
    }

    // The elimination alone over all graphs.
    s.push_str(&timing_table(&graphs, 5));
    let _ = writeln!(
        s,
        "\nThe machine is shared and its figures noisy; compare ratios within one run. Wall time of the whole report: \
         {:.0} s.\n\n## Rerunning\n\n`cargo xtask elim-report` rewrites this file (`--timing` prints the last table \
         alone). `cargo xtask elim-report --dump DIR` writes the corpus's distinct graphs as text files (`--input \
         PROGRAM` those of any program, e.g. one of `cargo xtask gen --realistic`), and `cargo run --release -p \
         xaif-elim --example lab -- DIR EFFORT [MIN_INTERMEDIATES]` runs the search on them alone, one line per graph \
         (chain, ours, bound, proof, CPU time) and totals per mode. Everything from the section \"{KEPT}\" on \
         is written by hand from `cargo xtask elim-exact` (hours of search) and kept as it is.",
        started.elapsed().as_secs_f64()
    );
    let mut s = s.replace(&shared.display().to_string(), "../shared");
    // The hand-written sections at the end (the exhaustive results) stay.
    if let Ok(old) = std::fs::read_to_string(out) {
        if let Some(at) = old.find(&format!("\n## {KEPT}")) {
            s.push_str(&old[at..]);
        }
    }
    std::fs::write(out, s).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!(
        "elim-report: {} tangent and {} adjoint graphs; report in {}",
        tangent.len(),
        adjoint.len(),
        out.display()
    );
    Ok(())
}

/// A graph's text form with its variable labels renumbered by rank (the
/// same variables stay equal and in the same order): two graphs have the
/// same key exactly when the memo of `xaif_elim` takes them for the same
/// shape (names aside).
fn shape_key(text: &str) -> String {
    let mut ids: Vec<u64> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.strip_prefix('v')?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        match (parts.next(), parts.next(), parts.next()) {
            (Some(a), Some(b), Some(label)) => {
                let label = match label.strip_prefix('v').and_then(|v| v.parse::<u64>().ok()) {
                    Some(id) => format!("v{}", ids.binary_search(&id).unwrap_or(0)),
                    None => label.to_string(),
                };
                let _ = writeln!(out, "{a} {b} {label}");
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The size class of a graph by inner vertices, as in the corpus table.
fn size_class(inner: usize) -> usize {
    match inner {
        0 => 0,
        1..=3 => 1,
        4..=15 => 2,
        16..=31 => 3,
        _ => 4,
    }
}

/// Labels of [`size_class`].
const SIZE_CLASSES: [&str; 5] = ["0", "1–3", "4–15", "16–31", "≥ 32"];

/// The graph statistics of one tangent transformation: graphs per size
/// class (shares), distinct shapes, and the time of the elimination
/// against the whole transformation in this process.
pub fn program_stats(shared: &Path, input: &Path) -> Result<String, String> {
    let t = Instant::now();
    let (graphs, dots) = transform_file(shared, input, "", "input", false)?;
    let total = t.elapsed();
    let mut classes = [0usize; 5];
    for (_, g) in &graphs {
        classes[size_class(g.inner_vertices)] += 1;
    }
    let keys: std::collections::HashSet<String> = dots.iter().map(|d| shape_key(&d.1)).collect();
    let elim: u64 = graphs.iter().map(|g| g.1.micros).sum();
    let heavy: u64 = graphs
        .iter()
        .filter(|g| g.1.inner_vertices >= 32)
        .map(|g| g.1.micros)
        .sum();
    let n = graphs.len().max(1);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} graphs, {} distinct shapes ({:.1}%); inner vertices per graph: {}",
        graphs.len(),
        keys.len(),
        keys.len() as f64 * 100.0 / dots.len().max(1) as f64,
        SIZE_CLASSES
            .iter()
            .zip(classes)
            .map(|(c, k)| format!("{c}: {:.1}%", k as f64 * 100.0 / n as f64))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        s,
        "transformation {:.0} ms (one process, graphs drawn for Graphviz too), elimination {:.0} ms ({:.0}%), of which graphs of 32 or more inner vertices {:.0} ms",
        total.as_secs_f64() * 1e3,
        elim as f64 / 1e3,
        elim as f64 / 1e3 / (total.as_secs_f64() * 1e3) * 100.0,
        heavy as f64 / 1e3
    );
    Ok(s)
}
