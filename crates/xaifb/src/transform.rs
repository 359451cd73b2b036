//! `xaifb tangent` (and the flags it shares with `xaifb adjoint`): the
//! reference driver's single-letter flags, the catalogues, and the output
//! files and reports.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use xaif_elim::{Chain, Config, Effort, Extent, Filter, Goal, Method, Mode, Search, Strategy};
use xaif_linearize::{Catalogue, FlattenOptions, TangentOptions};
use xaif_model::{NonInlinableCatalogue, Program};

use crate::output::Outputs;

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
    /// thread instead of a writer thread (same bytes).
    #[arg(long, short = 'j')]
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
    #[arg(short = 'A', default_value_t = 1)]
    pub trivial: u8,
    /// Elimination metric: 0 operations, 1 scarcity. Given, it is also
    /// what the search minimizes; otherwise the search minimizes the
    /// derivative code's operations in the mode (with pushes and pops in
    /// adjoint mode).
    #[arg(short = 'M')]
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
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// How hard the elimination searches: fast, default or max.
    #[arg(long, value_enum, default_value_t = EffortArg::Default)]
    pub effort: EffortArg,
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
    /// Debug output file (default: standard error).
    #[arg(short = 'd')]
    pub debug_file: Option<PathBuf>,
    /// Debug groups: 8 graphics (Graphviz of every graph), 16 timing,
    /// 64 metrics (operation counts per graph, block, routine).
    #[arg(short = 'g', default_value_t = 0)]
    pub debug_mask: u32,
    /// One elimination strategy instead of the reference's selection, as
    /// METHOD:FILTER,…,MODE with METHOD vertex, edge or face, filters HS,
    /// LM, LRM, LF and MODE forward or reverse (e.g. edge:HS,LM,reverse).
    #[arg(long)]
    pub heuristic: Option<String>,
    /// Write operation and graph statistics as JSON to this file.
    #[arg(long)]
    pub stats_json: Option<PathBuf>,
    /// Write Graphviz files of every linearized graph before and after
    /// elimination into this directory.
    #[arg(long)]
    pub dot: Option<PathBuf>,
    /// The reference drivers' other flags.
    #[command(flatten)]
    pub reference: crate::compat::ReferenceFlags,
    /// Reverse the loop at LINE of ROUTINE by binomial checkpointing,
    /// holding at most SNAPSHOTS loop states (default 10); repeatable; an
    /// outer and an inner loop give two-level checkpointing. Adjoint mode
    /// only (docs/checkpointing.md).
    #[arg(
        long = "checkpoint-loop",
        value_name = "ROUTINE:LINE[:SNAPSHOTS]",
        value_parser = xaif_cfrev::checkpoint::LoopMark::parse
    )]
    pub checkpoint_loop: Vec<xaif_cfrev::checkpoint::LoopMark>,
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
}

/// Flags only the adjoint driver has.
#[derive(Args, Clone)]
pub struct AdjointArgs {
    #[command(flatten)]
    common: TransformArgs,
    /// Checkpoint every variable of the front end's Read lists (the
    /// reference's argument checkpoints) instead of only those the
    /// to-be-recorded analysis finds may change before the reversal.
    #[arg(long)]
    full_checkpoints: bool,
    /// Reverse every control flow graph by block enumeration.
    #[arg(long)]
    enumerate_blocks: bool,
}

/// Parses `--heuristic`.
pub fn parse_strategy(spec: &str, extent: Extent) -> Result<Strategy> {
    let (method, chain) = spec
        .split_once(':')
        .ok_or_else(|| anyhow!("--heuristic {spec}: expected METHOD:CHAIN"))?;
    let method = match method.trim() {
        "vertex" => Method::Vertex,
        "edge" => Method::Edge,
        "face" => Method::Face,
        m => bail!("--heuristic: unknown method `{m}` (vertex, edge, face)"),
    };
    let mut parts: Vec<&str> = chain
        .split([',', '>', ' '])
        .map(|s| s.trim().trim_end_matches('-'))
        .filter(|s| !s.is_empty())
        .collect();
    let mode = match parts.pop() {
        Some("forward") => Mode::Forward,
        Some("reverse") => Mode::Reverse,
        other => bail!("--heuristic: the chain must end in forward or reverse, not {other:?}"),
    };
    let filters = parts
        .into_iter()
        .map(|f| match f {
            "HS" => Ok(Filter::HighestSiblingDegree),
            "LM" => Ok(Filter::LowestMarkowitz),
            "LRM" => Ok(Filter::LowestRelativeMarkowitz),
            "LF" => Ok(Filter::LowestFillIn),
            other => Err(anyhow!(
                "--heuristic: unknown filter `{other}` (HS, LM, LRM, LF)"
            )),
        })
        .collect::<Result<Vec<_>>>()?;
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
            .map_err(|e| anyhow!("{e}"))?;
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
            },
            randomized: self.randomized,
            rerouting: self.rerouting,
            allow_maintaining: self.maintaining,
            seed: self.seed,
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
            config.strategies = vec![parse_strategy(spec, extent)?];
        }
        Ok(config)
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
            passive: self
                .passive
                .as_deref()
                .map(|s| s.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            elimination: self.elimination()?,
            dot: self.dot.is_some() || self.debug_mask & 8 != 0,
            rename: self.rename,
            decoration: self.reference.decoration(),
            wrappers: self.reference.wrapper_names(),
            counters: self.reference.counters,
            all_inout: self.reference.all_inout,
        })
    }

    /// Reads the catalogues (the built-in inlinable one without -c).
    pub fn catalogues(
        &self,
    ) -> Result<
        (
            std::borrow::Cow<'static, Catalogue>,
            Option<NonInlinableCatalogue>,
        ),
        String,
    > {
        crate::modes::catalogues(self.catalogue.as_deref(), self.noninlinable.as_deref())
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

    /// Reads and gates the single input (and validates it with -v -s).
    pub fn input(&self, catalogue: Option<&Catalogue>) -> Result<Program, String> {
        self.read_input(&self.single_input(), catalogue)
    }

    /// Reads and gates an input (`-`: standard input) and validates it
    /// against the schema with -v.
    pub fn read_input(
        &self,
        path: &Path,
        catalogue: Option<&Catalogue>,
    ) -> Result<Program, String> {
        crate::modes::read_input(self, path, catalogue)
    }

    /// Marks `p` as a transformation result (its schema location) and,
    /// without -V, gives it the reference's short form.
    fn mark_output(&self, p: &mut Program) {
        let dir = self
            .schema
            .as_ref()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        p.mark_as_output(&dir);
        if !self.reference.verbose_xaif {
            p.make_terse();
        }
    }

    /// Writes an output program to `path`, streaming its text into the
    /// temporary file.
    pub(crate) fn write_to(&self, mut p: Program, path: &Path) -> Result<()> {
        self.mark_output(&mut p);
        let result =
            crate::output::write_atomic_with(path, |w| xaif_model::write_program_to(&p, w));
        release(p);
        result
    }

    /// Writes the output program together with the job's other outputs
    /// (the -d file with `debug`, and what `outputs` holds): all or none.
    /// The program is streamed into its temporary file, or to standard
    /// output without -o or with `-o -`.
    pub fn write(&self, mut outputs: Outputs, debug: &str, mut p: Program) -> Result<()> {
        self.mark_output(&mut p);
        if let Some(path) = &self.debug_file {
            outputs.add(path, debug.as_bytes())?;
        }
        let file = self.output.as_ref().filter(|p| p.as_os_str() != "-");
        if let Some(path) = file {
            outputs.add_with(path, |w| xaif_model::write_program_to(&p, w))?;
        }
        outputs.commit()?;
        if file.is_none() {
            use std::io::Write;
            let mut out = std::io::BufWriter::with_capacity(1 << 16, crate::console::Stdout);
            xaif_model::write_program_to(&p, &mut out)?;
            out.flush()?;
        }
        release(p);
        Ok(())
    }

    /// [`TransformArgs::write`] for a streamed transformation: `p` holds
    /// the header, `spill` the routines.
    pub fn write_streamed(
        &self,
        mut outputs: Outputs,
        debug: &str,
        mut p: Program,
        spill: crate::stream::Spill,
    ) -> Result<()> {
        let dir = self
            .schema
            .as_ref()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        p.mark_as_output(&dir);
        if !self.reference.verbose_xaif {
            p.make_maps_terse();
        }
        if let Some(path) = &self.debug_file {
            outputs.add(path, debug.as_bytes())?;
        }
        match self.output.as_ref().filter(|p| p.as_os_str() != "-") {
            Some(path) => {
                outputs.add_with_file(path, |w, file| spill.write_document(&p, w, file))?;
                outputs.commit()?;
            }
            None => {
                outputs.commit()?;
                let mut out = std::io::BufWriter::with_capacity(1 << 16, crate::console::Stdout);
                spill.write_document(&p, &mut out, None)?;
                std::io::Write::flush(&mut out)?;
            }
        }
        release(p);
        Ok(())
    }

    /// A spill for streaming the single input's transformation, when it
    /// can be streamed (see `stream::can_stream`) and is large enough to
    /// gain from it (`stream::STREAM_MIN_STATEMENTS`).
    fn spill(&self, p: &Program) -> Option<crate::stream::Spill> {
        if p.stmts.len() < crate::stream::STREAM_MIN_STATEMENTS
            || !crate::stream::can_stream(p, self.rename)
        {
            return None;
        }
        let dest = self.output.as_deref().filter(|p| p.as_os_str() != "-");
        let threaded = self.jobs != Some(1);
        crate::stream::Spill::new(dest, !self.reference.verbose_xaif, threaded).ok()
    }

    /// Debug output, the records `-T` selects: kept in `buffer` for the
    /// -d file, or printed to standard error.
    pub fn debug(&self, buffer: &mut String, text: &str) {
        let text = crate::modes::select_debug(self.reference.tags.as_deref(), text);
        let text = text.as_str();
        match &self.debug_file {
            Some(_) => buffer.push_str(text),
            None => eprint!("{text}"),
        }
    }
}

/// Hands a program that is no longer needed back. A one-file call ends
/// right after writing its result, and freeing a large model piece by
/// piece costs a tenth of the run, so a one-file call leaves that to the
/// process's exit; batch workers free as usual.
fn release(p: Program) {
    if ONE_FILE.load(std::sync::atomic::Ordering::Relaxed) {
        std::mem::forget(p);
    }
}

/// Whether this process transforms one file (see [`release`]).
static ONE_FILE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn write_dots(
    outputs: &mut Outputs,
    dir: &Path,
    dots: &[xaif_linearize::tangent::DotGraph],
) -> Result<()> {
    for d in dots {
        outputs.add(
            &dir.join(format!("{}_before.dot", d.name)),
            d.before.as_bytes(),
        )?;
        if let Some(after) = &d.after {
            outputs.add(&dir.join(format!("{}_after.dot", d.name)), after.as_bytes())?;
        }
    }
    Ok(())
}

/// Why one input's transformation failed: its message and, when it is
/// about one statement of the input, where that statement starts and its
/// element name.
pub(crate) struct Failure {
    message: String,
    at: Option<(xaif_model::Span, &'static str)>,
}

impl From<xaif_linearize::TransformError> for Failure {
    fn from(e: xaif_linearize::TransformError) -> Self {
        Failure {
            at: e.location(),
            message: e.to_string(),
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure { message, at: None }
    }
}

impl Failure {
    /// `input: message`, or `input:line:column: element E: message` when
    /// the statement is known: the input is read again to find its line
    /// (only on this error path; standard input cannot be, and gets no
    /// line).
    pub(crate) fn render(&self, input: &Path) -> String {
        let located = self.at.and_then(|(span, element)| {
            if input.as_os_str() == "-" {
                return None;
            }
            let bytes = std::fs::read(input).ok()?;
            let name = input.display().to_string();
            let (line, column) = xaif_model::source_map(&bytes, Some(&name)).locate(span);
            (line > 0).then(|| format!("{name}:{line}:{column}: element {element}: "))
        });
        match located {
            Some(prefix) => format!("{prefix}{}", self.message),
            None => format!("{}: {}", input.display(), self.message),
        }
    }
}

/// Transforms every input of a batch call with `transform` on worker
/// threads; outputs go to the `-o` directory under the inputs' relative
/// paths. Per-file reports (statistics, Graphviz, debug output) belong to
/// one-file calls.
pub(crate) fn batch<F>(
    common: &TransformArgs,
    catalogue: Option<&Catalogue>,
    verb: &str,
    transform: F,
) -> Result<ExitCode>
where
    F: Fn(&Program) -> Result<Program, Failure> + Sync,
{
    if common.stats_json.is_some()
        || common.dot.is_some()
        || common.debug_file.is_some()
        || common.debug_mask != 0
    {
        eprintln!(
            "xaifb: --stats-json, --dot, -d and -g describe one transformation; give one input"
        );
        return Ok(ExitCode::from(2));
    }
    let Some(out_dir) = &common.output else {
        eprintln!("xaifb: several inputs need -o DIRECTORY");
        return Ok(ExitCode::from(2));
    };
    let inputs = crate::batch::collect_inputs(&common.all_inputs())?;
    if inputs.is_empty() {
        bail!("no .xaif files found");
    }
    crate::batch::check_destinations(&inputs, |rel| out_dir.join(rel))?;
    let jobs = common.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let outcomes = crate::batch::run(&inputs, jobs, |input, rel| {
        let program = common.read_input(input, catalogue)?;
        let result = transform(&program).map_err(|e| e.render(input))?;
        let dest = out_dir.join(rel);
        common
            .write_to(result, &dest)
            .map_err(|e| crate::batch::output_failure(input, &e))?;
        Ok(Some(format!("written to {}", dest.display())))
    });
    let failed = crate::batch::report(&outcomes, verb, common.verbose);
    Ok(crate::batch::exit_code(failed))
}

/// Runs `xaifb tangent`.
pub fn tangent(args: TransformArgs) -> Result<ExitCode> {
    let start = std::time::Instant::now();
    if let Some(code) = crate::modes::check(crate::compat::Mode::Tangent, &args) {
        return Ok(code);
    }
    let fail = |msg: String| -> Result<ExitCode> {
        eprintln!("{msg}");
        Ok(ExitCode::from(1))
    };
    let (catalogue, noninlinable) = match args.catalogues() {
        Ok(x) => x,
        Err(e) => return fail(e),
    };
    let options = args.tangent_options()?;
    if args.is_batch() {
        return batch(&args, Some(catalogue.as_ref()), "tangent", |p| {
            xaif_linearize::tangent(p, catalogue.as_ref(), noninlinable.as_ref(), &options)
                .map(|r| r.program)
                .map_err(Failure::from)
        });
    }
    ONE_FILE.store(true, std::sync::atomic::Ordering::Relaxed);
    let program = match args.input(Some(catalogue.as_ref())) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let mut spill = args.spill(&program);
    let result = match &mut spill {
        Some(spill) => xaif_linearize::tangent_streamed(
            &program,
            catalogue.as_ref(),
            noninlinable.as_ref(),
            &options,
            &mut |out, r| spill.routine(out, r),
        ),
        None => xaif_linearize::tangent(
            &program,
            catalogue.as_ref(),
            noninlinable.as_ref(),
            &options,
        ),
    };
    let result = match result {
        Ok(r) => r,
        Err(e) => return fail(Failure::from(e).render(&args.single_input())),
    };
    let (mut outputs, mut debug) = (Outputs::new(), String::new());
    if args.debug_mask & 64 != 0 {
        let mut text = String::new();
        for r in &result.stats.routines {
            for b in &r.blocks {
                for (k, g) in b.graphs.iter().enumerate() {
                    text.push_str(&format!(
                        "metrics: {} block {} graph {k}: {} vertices, {} edges, {} mul, {} add, {} sub, {} div, {} non-trivial remainder edges\n",
                        r.routine, b.block, g.vertices, g.edges, g.multiplications, g.additions, g.subtractions, g.divisions, g.nontrivial_remainder_edges
                    ));
                }
            }
            let t = &r.total;
            text.push_str(&format!(
                "metrics: {} total: {} mul, {} add, {} sub, {} div\n",
                r.routine, t.multiplications, t.additions, t.subtractions, t.divisions
            ));
        }
        args.debug(&mut debug, &text);
    }
    if args.debug_mask & 8 != 0 {
        let mut text = String::new();
        for d in &result.dots {
            text.push_str(&format!("// {} before elimination\n{}\n", d.name, d.before));
            if let Some(a) = &d.after {
                text.push_str(&format!("// {} after elimination\n{a}\n", d.name));
            }
        }
        args.debug(&mut debug, &text);
    }
    if let Some(dir) = &args.dot {
        write_dots(&mut outputs, dir, &result.dots)?;
    }
    crate::modes::render_graphs(&args, &result.dots)?;
    if let Some(path) = &args.stats_json {
        let report = serde_json::json!({
            "input": args.single_input().display().to_string(),
            "mode": "tangent",
            "routines": result.stats.routines,
            "total": result.stats.total,
        });
        outputs.add(path, serde_json::to_string_pretty(&report)?.as_bytes())?;
    }
    release(program);
    if args.debug_mask & 16 != 0 {
        args.debug(
            &mut debug,
            &format!(
                "timing: tangent transformation {:.3} ms\n",
                start.elapsed().as_secs_f64() * 1e3
            ),
        );
    }
    match spill {
        Some(spill) => args.write_streamed(outputs, &debug, result.program, spill)?,
        None => args.write(outputs, &debug, result.program)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `xaifb adjoint`.
pub fn adjoint(args: AdjointArgs) -> Result<ExitCode> {
    let start = std::time::Instant::now();
    let common = &args.common;
    if let Some(code) = crate::modes::check(crate::compat::Mode::Adjoint, common) {
        return Ok(code);
    }
    let r = &common.reference;
    let fail = |msg: String| -> Result<ExitCode> {
        eprintln!("{msg}");
        Ok(ExitCode::from(1))
    };
    let (catalogue, noninlinable) = match common.catalogues() {
        Ok(x) => x,
        Err(e) => return fail(e),
    };
    let t = common.tangent_options()?;
    let options = xaif_cfrev::AdjointOptions {
        flatten: t.flatten,
        passive: t.passive,
        elimination: t.elimination,
        zero_locals: common.zero_locals,
        all_inout: r.all_inout,
        checkpoint_all_formals: r.checkpoint_all_formals,
        restore_in_store_order: r.restore_in_store_order,
        rename: common.rename,
        force_enumeration: args.enumerate_blocks,
        full_checkpoints: args.full_checkpoints,
        decoration: r.decoration(),
        wrappers: r.wrapper_names(),
        counters: r.counters,
        pessimistic_black_boxes: r.pessimistic,
        ignore_simple_loop_violations: r.ignore_simple_loops,
        ask_simple_loop_violations: r
            .ask_simple_loops
            .then_some(crate::modes::ask_user as fn(&str) -> bool),
        top: r.top.clone(),
        checkpoint_loops: common.checkpoint_loop.clone(),
    };
    if common.is_batch() {
        return batch(common, Some(catalogue.as_ref()), "adjoint", |p| {
            xaif_cfrev::adjoint(p, catalogue.as_ref(), noninlinable.as_ref(), &options)
                .map(|r| r.transformed.program)
                .map_err(Failure::from)
        });
    }
    ONE_FILE.store(true, std::sync::atomic::Ordering::Relaxed);
    let program = match common.input(Some(catalogue.as_ref())) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let mut spill = common.spill(&program);
    let result = match &mut spill {
        Some(spill) => xaif_cfrev::adjoint_streamed(
            &program,
            catalogue.as_ref(),
            noninlinable.as_ref(),
            &options,
            &mut |out, r| spill.routine(out, r),
        ),
        None => xaif_cfrev::adjoint(
            &program,
            catalogue.as_ref(),
            noninlinable.as_ref(),
            &options,
        ),
    };
    let result = match result {
        Ok(r) => r,
        Err(e) => return fail(Failure::from(e).render(&common.single_input())),
    };
    let (mut outputs, mut debug) = (Outputs::new(), String::new());
    let stats = &result.transformed.stats;
    if common.debug_mask & 64 != 0 {
        let mut text = String::new();
        for r in &stats.routines {
            let t = &r.total;
            text.push_str(&format!(
                "metrics: {} total: {} mul, {} add, {} sub, {} div\n",
                r.routine, t.multiplications, t.additions, t.subtractions, t.divisions
            ));
        }
        for tp in &result.tapes {
            text.push_str(&format!(
                "metrics: {} tape: {} doubles and {} integers per block execution, {} checkpointed variables, {}\n",
                tp.routine,
                tp.doubles_per_block_execution,
                tp.integers_per_block_execution,
                tp.checkpoint_variables,
                if tp.structured { "structured" } else { "unstructured" }
            ));
        }
        common.debug(&mut debug, &text);
    }
    if let Some(path) = &common.stats_json {
        let report = serde_json::json!({
            "input": common.single_input().display().to_string(),
            "mode": "adjoint",
            "routines": stats.routines,
            "total": stats.total,
            "tapes": result.tapes,
        });
        outputs.add(path, serde_json::to_string_pretty(&report)?.as_bytes())?;
    }
    release(program);
    if common.debug_mask & 16 != 0 {
        common.debug(
            &mut debug,
            &format!(
                "timing: adjoint transformation {:.3} ms\n",
                start.elapsed().as_secs_f64() * 1e3
            ),
        );
    }
    match spill {
        Some(spill) => common.write_streamed(outputs, &debug, result.transformed.program, spill)?,
        None => common.write(outputs, &debug, result.transformed.program)?,
    }
    Ok(ExitCode::SUCCESS)
}
