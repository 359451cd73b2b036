//! `cargo xtask stress`: a campaign of generated programs under every
//! differential check (`xaif-stress`), one line per disagreement with the
//! shrunk program of its class; non-zero exit on any.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use xaif_stress::campaign::{summary, Campaign};
use xaif_stress::Checker;

/// Arguments of `cargo xtask stress`.
#[derive(Args)]
pub struct StressArgs {
    /// Number of programs.
    #[arg(long, default_value_t = 1000)]
    programs: usize,
    /// Index of the first program: checks programs FIRST..FIRST+PROGRAMS
    /// of the seed's sequence (a long campaign run as slices).
    #[arg(long, default_value_t = 0)]
    first: usize,
    /// Campaign seed (any number).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads (default: available cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Largest program size; sizes cycle from 1 to it.
    #[arg(long, default_value_t = 8)]
    max_size: usize,
    /// Directory for shrunk programs.
    #[arg(long, default_value = "target/stress")]
    out: PathBuf,
    /// Skip the flag and strategy variants (defaults only).
    #[arg(long)]
    no_variants: bool,
    /// Skip schema validation of programs and outputs.
    #[arg(long)]
    no_xsd: bool,
    /// The checkpointing variant instead of the flag variants, on programs
    /// that also hold counted loops left by an exit and fixed-point
    /// iterations: every loop marked `--checkpoint-loop` (1 to 3
    /// snapshots; online where the trip count is not known on entry), the
    /// fixed-point iterations `--fixed-point-loop`, every `ForLoop`
    /// `--independent-loop`; each marked adjoint against the adjoint
    /// without marks.
    #[arg(long)]
    checkpoint_loops: bool,
    /// Candidates tried when shrinking a failing program.
    #[arg(long, default_value_t = 2000)]
    shrink_steps: usize,
    /// The reference material (default: $XAIFB_SHARED or ../shared), for
    /// the XAIF schemas.
    #[arg(long)]
    shared: Option<PathBuf>,
    /// Inlinable intrinsics catalogue (default: xaifb's built-in one).
    #[arg(short = 'c', long)]
    catalogue: Option<PathBuf>,
}

/// Runs the campaign.
pub fn run(args: StressArgs) -> Result<()> {
    let shared = args.shared.unwrap_or_else(crate::shared_dir);
    let mut checker = match &args.catalogue {
        Some(path) => {
            let (catalogue, _) = xaif_linearize::catalogue::read_catalogues(path, None)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            Checker::new(catalogue)
        }
        None => Checker::builtin(),
    };
    checker.with_variants = !args.no_variants;
    checker.checkpoint_loops = args.checkpoint_loops;
    let out = if args.out.is_absolute() {
        args.out
    } else {
        crate::repo_root().join(args.out)
    };
    let campaign = Campaign {
        first: args.first,
        programs: args.programs,
        seed: args.seed,
        jobs: args.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        }),
        max_size: args.max_size,
        out,
        schema: if args.no_xsd {
            None
        } else if shared.join("xaif/schema/xaif.xsd").is_file() {
            Some(shared.join("xaif/schema"))
        } else {
            bail!(
                "no XAIF schemas at {} (give --shared or --no-xsd)",
                shared.join("xaif/schema").display()
            )
        },
        shrink_steps: args.shrink_steps,
    };
    let report = campaign
        .run(&checker, true)
        .map_err(|e| anyhow::anyhow!(e))?;
    print!("{}", summary(&campaign, &report));
    let mut constructs: Vec<_> = report.constructs.iter().collect();
    constructs.sort_by_key(|(_, n)| std::cmp::Reverse(**n));
    let line: Vec<String> = constructs
        .iter()
        .filter(|(k, _)| !k.starts_with("intrinsic:"))
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    println!("constructs (programs showing each): {}", line.join(", "));
    if !report.failures.is_empty() {
        bail!(
            "{} disagreements in {} classes",
            report.failures.len(),
            report.classes().len()
        );
    }
    Ok(())
}
