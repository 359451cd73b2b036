//! The command line of the transformation commands (`tangent`, `adjoint`,
//! `trace`, `typechange`), its values and its checks: everything about a
//! command line that can be refused is refused here, with exit code 2 and a
//! message in the command line's words, before any input is read.
//!
//! Values are checked as they are parsed (clap value parsers): the ranges
//! of `-A` and `-M`, the syntax of `--heuristic`, sizes and seconds of the
//! global limits, so that a malformed value is a command-line error and
//! never reaches a library as something it cannot mean.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use clap::Args;
use xaif_elim::{Chain, Config, Effort, Extent, Filter, Goal, Method, Search, Strategy};
use xaif_linearize::{FlattenOptions, TangentOptions};

use crate::compat::{Mode, ReferenceFlags};
use crate::input::is_stdin;
use crate::output::{Plan, Refused};
use crate::report::Usage;

/// The longest time a flag may give, in seconds (about 31 years): beyond
/// it a duration means nothing, and no clock can count it.
pub const MAX_SECONDS: f64 = 1e9;

/// Refuses a command line on which standard input is read by more than
/// one of `readers` (`(flag, path)` pairs; a path `-` reads it, so does a
/// flag without a path, such as `-u`): it can be read once.
pub fn stdin_once<'a>(
    readers: impl IntoIterator<Item = (&'a str, Option<&'a Path>)>,
) -> Result<(), Usage> {
    let takers: Vec<String> = readers
        .into_iter()
        .filter(|(_, p)| p.is_none_or(is_stdin))
        .map(|(flag, p)| match p {
            Some(_) if flag.is_empty() => "the input `-`".to_string(),
            Some(_) => format!("{flag} -"),
            None => flag.to_string(),
        })
        .collect();
    if let [first @ .., last] = &takers[..] {
        if !first.is_empty() {
            return Err(Usage(format!(
                "{} and {last} would each read standard input, which can be read once; name files instead",
                first.join(", ")
            )));
        }
    }
    Ok(())
}

/// Parses a size such as `1000`, `64K`, `256M` or `2G` (powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let not_a_size = || {
        format!("`{s}` is not a size: give a whole number of bytes, optionally followed by K, M or G (e.g. 1000, 64K, 256M, 2G)")
    };
    let t = s.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    if digits.is_empty() {
        return Err(not_a_size());
    }
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(not_a_size()),
    };
    let too_large = || format!("`{s}` is too large (at most {} bytes)", u64::MAX);
    let n: u64 = digits.parse().map_err(|_| too_large())?;
    n.checked_mul(1 << shift).ok_or_else(too_large)
}

/// Parses a number of seconds above zero and at most [`MAX_SECONDS`].
pub fn parse_seconds(s: &str) -> Result<f64, String> {
    let x: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(x.is_finite() && x > 0.0) {
        return Err(format!("`{s}`: give a number of seconds above zero"));
    }
    if x > MAX_SECONDS {
        return Err(format!(
            "`{s}` seconds is more than the most allowed, {MAX_SECONDS:e} (about 31 years)"
        ));
    }
    Ok(x)
}

/// `-A`: 0, 1 or 2.
fn trivial_level(s: &str) -> Result<u8, String> {
    match s.trim() {
        "0" => Ok(0),
        "1" => Ok(1),
        "2" => Ok(2),
        _ => Err("give 0 (no trivial edges), 1 (unit edges) or 2 (unit and constant edges)".into()),
    }
}

/// `-M`: 0 or 1.
fn metric_level(s: &str) -> Result<u8, String> {
    match s.trim() {
        "0" => Ok(0),
        "1" => Ok(1),
        _ => Err("give 0 (operations) or 1 (scarcity)".into()),
    }
}

/// `--jobs`: at least one worker.
pub fn worker_count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("give a number of worker threads, 1 or more".into()),
    }
}

/// `--seed`: a whole number from 0 to 2^64 - 1.
fn seed_value(s: &str) -> Result<u64, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("give a whole number from 0 to {}", u64::MAX))
}

/// `-g`: a sum of debug groups.
fn debug_groups(s: &str) -> Result<u32, String> {
    s.trim().parse().map_err(|_| {
        format!(
            "give a sum of debug groups (8 graphics, 16 timing, 64 metrics), a whole number from 0 to {}",
            u32::MAX
        )
    })
}

/// `--heuristic`: checked as it is parsed, kept as written.
fn heuristic_spec(s: &str) -> Result<String, String> {
    parse_strategy(s, Extent::Total).map(|_| s.to_string())
}

/// Flags of the transformation drivers.
#[derive(Args, Clone)]
pub struct TransformArgs {
    /// Input XAIF files or directories (`-` reads standard input), the
    /// same as -i.
    #[arg(value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Inlinable intrinsics catalogue (default: the built-in one, the same
    /// as the XAIF distribution's `inlinable_intrinsics.xaif`).
    #[arg(short = 'c')]
    pub catalogue: Option<PathBuf>,
    /// Input XAIF (`-` reads standard input). Repeat it, or name a
    /// directory, to transform many files in one call (then -o names the
    /// output directory).
    #[arg(short = 'i', action = clap::ArgAction::Append)]
    pub input: Vec<PathBuf>,
    /// Output XAIF (default or `-`: standard output); the output directory
    /// for several inputs.
    #[arg(short = 'o')]
    pub output: Option<PathBuf>,
    /// Worker threads for many inputs (default: available cores); with
    /// one large input, 1 also writes its routines on the transforming
    /// thread instead of a writer thread, and eliminates without a second
    /// thread working ahead (same bytes).
    #[arg(long, short = 'j', value_parser = worker_count, allow_hyphen_values = true)]
    pub jobs: Option<usize>,
    /// Print a line for every file, not only for failures.
    #[arg(long)]
    pub verbose: bool,
    /// Schema directory: the output's schemaLocation names xaif_output.xsd
    /// there; with -v the input is validated against it.
    #[arg(short = 's')]
    pub schema: Option<PathBuf>,
    /// Validate the input against the schema (needs -s and xmllint).
    #[arg(short = 'v')]
    pub validate: bool,
    /// One computational graph per statement (no flattening).
    #[arg(short = 'S')]
    pub per_statement: bool,
    /// One n-ary Sax per target instead of binary Sax/Saxpy.
    #[arg(short = 'n')]
    pub nary: bool,
    /// Tangent propagators as inlinable calls.
    #[arg(short = 'H')]
    pub inline_calls: bool,
    /// Trivial edges: 0 none, 1 unit, 2 unit and constant.
    #[arg(short = 'A', default_value_t = 1, value_parser = trivial_level, allow_hyphen_values = true)]
    pub trivial: u8,
    /// Elimination metric: 0 operations, 1 scarcity. Given, it is also
    /// what the search minimizes; otherwise the search minimizes the
    /// derivative code's operations in the mode (with pushes and pops in
    /// adjoint mode).
    #[arg(short = 'M', value_parser = metric_level, allow_hyphen_values = true)]
    pub metric: Option<u8>,
    /// Allow eliminations that keep the number of non-trivial edges (and
    /// moves that keep the cost in the remainder post-processing).
    #[arg(short = 'm')]
    pub maintaining: bool,
    /// Randomized heuristics in addition to the chain (seeded by --seed).
    #[arg(short = 'a')]
    pub randomized: bool,
    /// Reroutings (pre- and post-routing of edges, with divisions) in the
    /// remainder post-processing.
    #[arg(short = 'R')]
    pub rerouting: bool,
    /// Seed of the randomized heuristics and of the search.
    #[arg(long, default_value_t = 0, value_parser = seed_value, allow_hyphen_values = true)]
    pub seed: u64,
    /// How hard the elimination searches: fast, default, max or
    /// exhaustive (minutes to hours per large graph; for builds that run
    /// for weeks, best with --elim-cache).
    #[arg(long, value_enum, default_value_t = EffortArg::Default)]
    pub effort: EffortArg,
    /// Keep the elimination of every large graph in this directory and
    /// reuse it in later runs (default: $XAIFB_ELIM_CACHE when set; see
    /// docs/elimination.md).
    #[arg(long, value_name = "DIR")]
    pub elim_cache: Option<PathBuf>,
    /// Symbols forced passive (space-separated names).
    #[arg(short = 'p')]
    pub passive: Option<String>,
    /// Zero the derivatives of active locals explicitly.
    #[arg(short = 'D')]
    pub zero_locals: bool,
    /// Non-inlinable intrinsics catalogue (direct actions).
    #[arg(short = 'N')]
    pub noninlinable: Option<PathBuf>,
    /// Do not split flattened sequences on possibly aliased left-hand
    /// sides.
    #[arg(short = 'Q')]
    pub no_alias_split: bool,
    /// Give the transformed routines the program's prefix (head becomes
    /// OpenAD_head).
    #[arg(short = 'r')]
    pub rename: bool,
    /// Debug output file (default: standard error; `-`: standard output).
    #[arg(short = 'd')]
    pub debug_file: Option<PathBuf>,
    /// Debug groups: 8 graphics (Graphviz of every graph), 16 timing,
    /// 64 metrics (operation counts per graph, block, routine).
    #[arg(short = 'g', default_value_t = 0, value_parser = debug_groups, allow_hyphen_values = true)]
    pub debug_mask: u32,
    /// One elimination strategy instead of the reference's selection, as
    /// METHOD:FILTER,…,MODE with METHOD vertex, edge or face, filters HS,
    /// LM, LRM, LF and MODE forward or reverse (e.g. edge:HS,LM,reverse).
    #[arg(long, value_parser = heuristic_spec)]
    pub heuristic: Option<String>,
    /// Write operation and graph statistics as JSON to this file (`-`:
    /// standard output).
    #[arg(long)]
    pub stats_json: Option<PathBuf>,
    /// Write Graphviz files of every linearized graph before and after
    /// elimination into this directory (file names: docs/limits.md).
    #[arg(long)]
    pub dot: Option<PathBuf>,
    /// The reference drivers' other flags.
    #[command(flatten)]
    pub reference: ReferenceFlags,
    /// Reverse the loop at LINE of ROUTINE by checkpointing, holding at
    /// most SNAPSHOTS loop states (default 10): binomial for a counted
    /// loop, online for a while loop or a loop left by an exit;
    /// repeatable; an outer and an inner loop give two-level
    /// checkpointing. Adjoint mode only (docs/checkpointing.md).
    #[arg(
        long = "checkpoint-loop",
        value_name = "ROUTINE:LINE[:SNAPSHOTS]",
        value_parser = xaif_cfrev::checkpoint::LoopMark::parse
    )]
    pub checkpoint_loop: Vec<xaif_cfrev::checkpoint::LoopMark>,
    /// Reverse the fixed-point iteration at LINE of ROUTINE by the
    /// two-phase adjoint: its converged iteration reversed until its
    /// state's adjoint changes by less than TOLERANCE (relative, default
    /// 1e-12) or MAXITER times (default 1000, then a warning at run time);
    /// repeatable. Adjoint mode only (docs/checkpointing.md).
    #[arg(
        long = "fixed-point-loop",
        value_name = "ROUTINE:LINE[:TOLERANCE[:MAXITER]]",
        value_parser = xaif_cfrev::marks::FixedPointMark::parse
    )]
    pub fixed_point_loop: Vec<xaif_cfrev::marks::FixedPointMark>,
    /// Reverse the counted loop at LINE of ROUTINE one iteration at a
    /// time, its iterations proven independent (sum reductions aside);
    /// repeatable. Adjoint mode only (docs/checkpointing.md).
    #[arg(
        long = "independent-loop",
        value_name = "ROUTINE:LINE",
        value_parser = xaif_cfrev::marks::IndependentMark::parse
    )]
    pub independent_loop: Vec<xaif_cfrev::marks::IndependentMark>,
    /// Mark loops from FILE, one mark per line: `checkpoint
    /// ROUTINE:LINE[:S]`, `fixed-point ROUTINE:LINE[:TOL[:MAX]]`,
    /// `independent ROUTINE:LINE`; `#` or `!` starts a comment. Without
    /// the flag, the file named by the environment variable
    /// XAIFB_LOOP_PLAN (so that an unmodified OpenAD build, through the
    /// shims, can mark loops). Adjoint mode only (docs/checkpointing.md).
    #[arg(long = "loop-plan", value_name = "FILE")]
    pub loop_plan: Option<PathBuf>,
}

/// `--effort`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EffortArg {
    /// The reference's chains, improved greedily.
    Fast,
    /// Exact search on small graphs, beam search on the others.
    Default,
    /// Larger search budgets (slower).
    Max,
    /// Exact searches and long anytime searches (minutes to hours per
    /// large graph).
    Exhaustive,
}

/// The environment variable that names the elimination cache when
/// `--elim-cache` is not given (so that OpenAD's scripts, which call the
/// shims with the reference's flags, use it too).
pub const ELIM_CACHE_VAR: &str = "XAIFB_ELIM_CACHE";

/// Flags only the adjoint driver has.
#[derive(Args, Clone)]
pub struct AdjointArgs {
    /// The flags every transformation has.
    #[command(flatten)]
    pub common: TransformArgs,
    /// Checkpoint every variable of the front end's Read lists (the
    /// reference's argument checkpoints) instead of only those the
    /// to-be-recorded analysis finds may change before the reversal.
    #[arg(long)]
    pub full_checkpoints: bool,
    /// Reverse every control flow graph by block enumeration.
    #[arg(long)]
    pub enumerate_blocks: bool,
}

/// Parses `--heuristic`; the error says what is wrong in the flag's words.
pub fn parse_strategy(spec: &str, extent: Extent) -> Result<Strategy, String> {
    let (method, chain) = spec
        .split_once(':')
        .ok_or_else(|| "expected METHOD:CHAIN, e.g. edge:HS,LM,reverse".to_string())?;
    let method = match method.trim() {
        "vertex" => Method::Vertex,
        "edge" => Method::Edge,
        "face" => Method::Face,
        m => return Err(format!("unknown method `{m}` (vertex, edge or face)")),
    };
    let mut parts: Vec<&str> = chain
        .split([',', '>', ' '])
        .map(|s| s.trim().trim_end_matches('-'))
        .filter(|s| !s.is_empty())
        .collect();
    let mode = match parts.pop() {
        Some("forward") => xaif_elim::Mode::Forward,
        Some("reverse") => xaif_elim::Mode::Reverse,
        Some(other) => {
            return Err(format!(
                "the chain must end in forward or reverse, not `{other}`"
            ))
        }
        None => return Err("the chain is empty; it must end in forward or reverse".into()),
    };
    let filters = parts
        .into_iter()
        .map(|f| match f {
            "HS" => Ok(Filter::HighestSiblingDegree),
            "LM" => Ok(Filter::LowestMarkowitz),
            "LRM" => Ok(Filter::LowestRelativeMarkowitz),
            "LF" => Ok(Filter::LowestFillIn),
            other => Err(format!("unknown filter `{other}` (HS, LM, LRM or LF)")),
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Strategy {
        method,
        chain: Chain::new(filters, mode),
        extent,
    })
}

impl TransformArgs {
    /// The elimination configuration of -M, -A, -m, -a, -R, --seed,
    /// --effort and --heuristic.
    pub fn elimination(&self) -> Result<Config> {
        let metric = self.metric.unwrap_or(1);
        let mut config = Config::from_flags(metric, self.trivial, self.maintaining)
            .map_err(|e| Usage(e.to_string()))?;
        config.search = Search {
            goal: if self.metric.is_some() {
                Goal::Metric
            } else {
                Goal::RunTime
            },
            effort: match self.effort {
                EffortArg::Fast => Effort::Fast,
                EffortArg::Default => Effort::Default,
                EffortArg::Max => Effort::Max,
                EffortArg::Exhaustive => Effort::Exhaustive,
            },
            randomized: self.randomized,
            rerouting: self.rerouting,
            allow_maintaining: self.maintaining,
            seed: self.seed,
            cache: self.elim_cache_dir().map(|dir| {
                let quiet = self.reference.quiet;
                xaif_elim::CacheHandle::new(
                    dir,
                    std::sync::Arc::new(move |text: &str| crate::report::note(quiet, text)),
                )
            }),
        };
        if let Some(spec) = &self.heuristic {
            // One strategy, as asked: no search beyond it.
            config.search.effort = Effort::None;
            let extent = if metric == 1 {
                Extent::ScarcityPreserving {
                    allow_maintaining: self.maintaining,
                }
            } else {
                Extent::Total
            };
            let strategy = parse_strategy(spec, extent)
                .map_err(|e| Usage(format!("--heuristic {spec}: {e}")))?;
            config.strategies = vec![strategy];
        }
        Ok(config)
    }

    /// The elimination cache's directory: `--elim-cache`, else
    /// `$XAIFB_ELIM_CACHE` when it is set and not empty.
    pub fn elim_cache_dir(&self) -> Option<PathBuf> {
        self.elim_cache.clone().or_else(|| {
            std::env::var_os(ELIM_CACHE_VAR)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
    }

    /// The names of `-p`.
    pub fn passive_names(&self) -> Vec<String> {
        self.passive
            .as_deref()
            .map(|s| s.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Whether the transformation keeps every eliminated graph as Graphviz
    /// text (`--dot`, `-g 8`).
    pub fn wants_graphs(&self) -> bool {
        self.dot.is_some() || self.debug_mask & 8 != 0
    }

    /// The tangent options of these flags.
    pub fn tangent_options(&self) -> Result<TangentOptions> {
        Ok(TangentOptions {
            flatten: FlattenOptions {
                per_statement: self.per_statement,
                no_alias_split: self.no_alias_split,
            },
            nary: self.nary,
            inline_calls: self.inline_calls,
            zero_locals: self.zero_locals,
            passive: self.passive_names(),
            elimination: self.elimination()?,
            dot: self.wants_graphs(),
            rename: self.rename,
            decoration: self.reference.decoration(),
            wrappers: self.reference.wrapper_names(),
            counters: self.reference.counters,
            all_inout: self.reference.all_inout,
            ahead: self.eliminates_ahead(),
        })
    }

    /// Whether a one-file transformation eliminates ahead on a second
    /// thread: not in a batch (whose files already share the cores) and
    /// not under `--jobs 1`.
    pub fn eliminates_ahead(&self) -> bool {
        self.jobs != Some(1) && !self.is_batch()
    }

    /// Every input: the positional ones, then those of -i.
    pub fn all_inputs(&self) -> Vec<PathBuf> {
        self.inputs.iter().chain(&self.input).cloned().collect()
    }

    /// Whether several inputs are transformed in one call.
    pub fn is_batch(&self) -> bool {
        let all = self.all_inputs();
        all.len() > 1 || all.iter().any(|p| p.is_dir())
    }

    /// The single input of a one-file call.
    pub fn single_input(&self) -> PathBuf {
        self.all_inputs().into_iter().next().unwrap_or_default()
    }

    /// The output file of a one-file call; `None` for standard output.
    pub fn output_file(&self) -> Option<&Path> {
        self.output.as_deref().filter(|p| !is_stdin(p))
    }

    /// Where the rendered graphs of `-G` go, when they are rendered.
    pub fn render_dir(&self, mode: Mode) -> Option<PathBuf> {
        let rendered = self.reference.graphics.is_some()
            && self.debug_mask & 8 != 0
            && matches!(mode, Mode::Tangent | Mode::Adjoint);
        rendered.then(|| crate::graphs::render_dir(self.dot.as_deref(), self.output_file()))
    }

    /// The outputs this command line asks for (see [`Plan`]).
    pub fn plan(&self, mode: Mode) -> Result<Plan, Refused> {
        let mut plan = Plan::new();
        if self.is_batch() {
            if let Some(out) = &self.output {
                plan.dir("-o", out)?;
            }
            return Ok(plan);
        }
        match &self.output {
            Some(p) => plan.file("-o", p),
            None => plan.stdout("the output (no -o)"),
        }
        if let Some(p) = &self.debug_file {
            plan.file("-d", p);
        }
        if let Some(p) = &self.stats_json {
            plan.file("--stats-json", p);
        }
        if let Some(p) = &self.dot {
            plan.dir("--dot", p)?;
        }
        if let Some(dir) = self.render_dir(mode).filter(|_| self.dot.is_none()) {
            plan.dir("-G (the rendered graphs)", &dir)?;
        }
        Ok(plan)
    }

    /// Refuses a command line that cannot work in `mode` (exit code 2) and
    /// notes the flags that have no effect in it.
    pub fn check(&self, mode: Mode) -> Result<()> {
        let name = mode.name();
        let usage = |text: String| Err(anyhow!(Usage(format!("{name}: {text}"))));
        let inputs = self.all_inputs();
        let r = &self.reference;
        if inputs.is_empty() {
            return usage("no input (give IN or -i IN)".into());
        }
        if inputs.len() > 1 && inputs.iter().any(|p| is_stdin(p)) {
            return usage("`-` (standard input) must be the only input".into());
        }
        if r.ask_simple_loops && r.ignore_simple_loops {
            return usage("-u and -U exclude each other".into());
        }
        let asks = mode == Mode::Adjoint && r.ask_simple_loops;
        if asks && is_stdin(&inputs[0]) {
            return usage(
                "-u reads its answers from standard input, which holds the program here; give the program as a file (or decide with -U)".into(),
            );
        }
        stdin_once(
            inputs
                .iter()
                .map(|p| ("", Some(p.as_path())))
                .chain(self.catalogue.as_deref().map(|p| ("-c", Some(p))))
                .chain(self.noninlinable.as_deref().map(|p| ("-N", Some(p))))
                .chain(asks.then_some(("-u", None))),
        )?;
        if !matches!(mode, Mode::Tangent | Mode::Adjoint) {
            if self.stats_json.is_some() {
                return usage(format!("--stats-json: {name} mode eliminates no graphs and counts no operations, so there are no statistics to write"));
            }
            if self.dot.is_some() {
                return usage(format!(
                    "--dot: {name} mode eliminates no graphs, so there are none to write"
                ));
            }
        }
        if self.is_batch() {
            let one_file = self.stats_json.is_some()
                || self.dot.is_some()
                || self.debug_file.is_some()
                || self.debug_mask != 0;
            if one_file {
                return usage(
                    "--stats-json, --dot, -d and -g describe one transformation; give one input"
                        .into(),
                );
            }
            if self.output.is_none() {
                return usage("several inputs need -o DIRECTORY".into());
            }
        }
        self.plan(mode)?.check()?;
        for (flag, why) in self.inert_flags(mode) {
            crate::report::note(
                r.quiet,
                &format!("{flag} has no effect in {name} mode: {why}"),
            );
        }
        Ok(())
    }

    /// The flags that have no effect in `mode`, with the reason.
    pub fn inert_flags(&self, mode: Mode) -> Vec<(String, &'static str)> {
        let r = &self.reference;
        let differentiates = matches!(mode, Mode::Tangent | Mode::Adjoint);
        let mut out = Vec::new();
        let mut add = |on: bool, flag: &str, why: &'static str| {
            if on {
                out.push((flag.to_string(), why));
            }
        };
        let no_derivatives = "it concerns derivative code, which this mode does not write";
        if !differentiates {
            add(self.per_statement, "-S", no_derivatives);
            add(self.nary, "-n", no_derivatives);
            add(self.inline_calls, "-H", no_derivatives);
            add(self.trivial != 1, "-A", no_derivatives);
            add(self.metric.is_some(), "-M", no_derivatives);
            add(self.maintaining, "-m", no_derivatives);
            add(self.randomized, "-a", no_derivatives);
            add(self.rerouting, "-R", no_derivatives);
            add(self.no_alias_split, "-Q", no_derivatives);
            add(self.zero_locals, "-D", no_derivatives);
            add(r.counters, "-C", no_derivatives);
            add(self.heuristic.is_some(), "--heuristic", no_derivatives);
            add(
                self.debug_mask != 0,
                "-g",
                "its groups describe eliminated graphs, which this mode does not make",
            );
        }
        if mode != Mode::Adjoint {
            let reversal = "it concerns the adjoint's reversal";
            add(r.pessimistic, "-b", reversal);
            add(r.restore_in_store_order, "-f", reversal);
            add(r.checkpoint_all_formals, "-P", reversal);
            add(r.ask_simple_loops, "-u", reversal);
            add(r.ignore_simple_loops, "-U", reversal);
            add(r.top.is_some(), "-t", reversal);
            add(
                !self.checkpoint_loop.is_empty(),
                "--checkpoint-loop",
                reversal,
            );
            add(
                !self.fixed_point_loop.is_empty(),
                "--fixed-point-loop",
                reversal,
            );
            add(
                !self.independent_loop.is_empty(),
                "--independent-loop",
                reversal,
            );
            add(self.loop_plan.is_some(), "--loop-plan", reversal);
        }
        let graphs = self.debug_mask & 8 != 0 && differentiates;
        add(
            r.graphics.is_some() && !graphs,
            "-G",
            "it formats the graphs of -g 8",
        );
        add(
            r.viewer.is_some() && (r.graphics.is_none() || !graphs),
            "-B",
            "it shows the files of -G",
        );
        add(
            r.tags.is_some() && self.debug_mask == 0,
            "-T",
            "it narrows the debug output of -g",
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("256m"), Ok(256 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert!(parse_size("x").is_err());
        assert!(parse_size("12T").is_err());
        assert!(parse_size("1.5M").unwrap_err().contains("whole number"));
        assert!(parse_size("99999999999999999999G").is_err());
    }

    #[test]
    fn seconds_are_bounded() {
        assert_eq!(parse_seconds("2.5"), Ok(2.5));
        for bad in ["0", "-1", "nan", "inf", "1e300", "x", ""] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn heuristic_errors_speak_the_flags_words() {
        let e = parse_strategy("edge:HS,LM", Extent::Total).unwrap_err();
        assert_eq!(e, "the chain must end in forward or reverse, not `LM`");
        assert!(parse_strategy("edge:", Extent::Total).is_err());
        assert!(parse_strategy("edge:HS,reverse", Extent::Total).is_ok());
    }
}
