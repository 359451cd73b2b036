//! `cargo xtask same-bytes --baseline BIN`: a speed change must not change
//! a single output byte. Runs a baseline xaifb (built from an earlier
//! commit) and the current one on every corpus input (tangent, and adjoint
//! with `-I`, each with the example's flags) and on generated programs, and
//! compares the outputs byte for byte; the current binary also runs with
//! `--jobs 1` and `--jobs N`, which must agree too. A change of the
//! elimination by design names the outputs it changes
//! (`--allow-changed`); those must still agree between the job counts.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use xaif_interp::corpus::read_index;

/// Options of `cargo xtask same-bytes`.
#[derive(clap::Args)]
pub struct Args {
    /// The xaifb binary whose outputs are the reference bytes.
    #[arg(long)]
    baseline: PathBuf,
    /// The xaifb binary to check (default: build and use the release
    /// binary).
    #[arg(long)]
    xaifb: Option<PathBuf>,
    /// The reference material (default: $XAIFB_SHARED or ../shared).
    #[arg(long)]
    shared: Option<PathBuf>,
    /// Sizes of the generated programs checked, in statements.
    #[arg(long, value_delimiter = ',', default_values_t = [1_000usize, 10_000])]
    sizes: Vec<usize>,
    /// Worker threads of the `--jobs N` run.
    #[arg(long, default_value_t = 4)]
    jobs: usize,
    /// Cases whose output may differ from the baseline's (a change of the
    /// elimination by design), by name as printed (`RoehFlux adjoint`,
    /// `realistic 1000 tangent`); they must still agree between `--jobs 1`
    /// and `--jobs N`, and the report lists which did differ.
    #[arg(long, value_delimiter = ',')]
    allow_changed: Vec<String>,
    /// Also check realistic generated programs (`cargo xtask gen
    /// --realistic`) of the same sizes.
    #[arg(long)]
    realistic: bool,
    /// Check every case before failing, and list all that differ (the
    /// list `--allow-changed` takes), instead of stopping at the first.
    #[arg(long)]
    keep_going: bool,
}

/// Runs `xaifb` with `args` writing `out`; the output bytes, or `None` when
/// it failed (then both binaries must fail).
fn output(xaifb: &Path, args: &[OsString], out: &Path) -> Result<Option<Vec<u8>>> {
    let _ = std::fs::remove_file(out);
    let status = Command::new(xaifb)
        .args(args)
        .arg("-o")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .with_context(|| format!("running {}", xaifb.display()))?;
    Ok(if status.success() {
        Some(std::fs::read(out)?)
    } else {
        None
    })
}

/// Runs the check and prints a summary; fails on the first difference
/// (with `--keep-going`, after listing every one).
pub fn run(args: Args) -> Result<()> {
    let shared = args.shared.clone().unwrap_or_else(crate::shared_dir);
    let xaifb = match &args.xaifb {
        Some(p) => p.clone(),
        None => crate::release_xaifb()?,
    };
    let schema = shared.join("xaif/schema").canonicalize()?;
    let catalogue = schema.join("examples/inlinable_intrinsics.xaif");
    let noninlinable = schema.join("examples/noninlinable_intrinsics.xaif");
    let work = std::env::temp_dir().join(format!("xtask-same-bytes-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let mut cases: Vec<(String, Vec<OsString>)> = Vec::new();
    let common = |adjoint: bool, input: &Path| -> Vec<OsString> {
        vec![
            if adjoint { "adjoint" } else { "tangent" }.into(),
            "-s".into(),
            schema.clone().into(),
            "-c".into(),
            catalogue.clone().into(),
            "-i".into(),
            input.into(),
        ]
    };
    for ex in read_index(&shared.join("corpus")).map_err(anyhow::Error::msg)? {
        for adjoint in [false, true] {
            let input = ex.input(adjoint);
            if !input.is_file() {
                continue;
            }
            let mut a = common(adjoint, &input);
            for (flag, text) in [("-S", "'-S'"), ("-D", "'-D'"), ("-r", "'-r'")] {
                if ex.options.contains(text) {
                    a.push(flag.into());
                }
            }
            if ex.options.contains("'-N ") {
                a.push("-N".into());
                a.push(noninlinable.clone().into());
            }
            if adjoint {
                a.push("-I".into());
            }
            let mode = if adjoint { "adjoint" } else { "tangent" };
            cases.push((format!("{} {mode}", ex.name), a));
        }
    }
    let kinds: &[bool] = if args.realistic {
        &[false, true]
    } else {
        &[false]
    };
    for &size in &args.sizes {
        for &realistic in kinds {
            let kind = if realistic { "realistic" } else { "generated" };
            let input = work.join(format!("{kind}-{size}.xaif"));
            let shape = xaif_testkit::scale::Shape {
                routines: (size / 100).max(1),
                statements: size,
                seed: 1,
            };
            let text = if realistic {
                xaif_testkit::model::program(&shape)
            } else {
                xaif_testkit::scale::program(&shape)
            };
            std::fs::write(&input, text)?;
            cases.push((format!("{kind} {size} tangent"), common(false, &input)));
            let mut a = common(true, &input);
            a.push("-I".into());
            cases.push((format!("{kind} {size} adjoint"), a));
        }
    }
    let (mut same, mut both_failed) = (0, 0);
    let mut changed = Vec::new();
    let mut unexpected = Vec::new();
    let out = work.join("out.xaif");
    for (name, a) in &cases {
        let base = output(&args.baseline, a, &out)?;
        let mut serial = a.clone();
        serial.push("--jobs=1".into());
        let mut parallel = a.clone();
        parallel.push(format!("--jobs={}", args.jobs).into());
        let now = output(&xaifb, &serial, &out)?;
        let now_parallel = output(&xaifb, &parallel, &out)?;
        if now != now_parallel {
            bail!("{name}: --jobs 1 and --jobs {} differ", args.jobs);
        }
        if base != now {
            if !args.allow_changed.contains(name) {
                if !args.keep_going {
                    bail!("{name}: the output differs from the baseline's");
                }
                eprintln!("{name}: the output differs from the baseline's");
                unexpected.push(name.clone());
            } else {
                changed.push(name.clone());
            }
            continue;
        }
        if base.is_none() {
            both_failed += 1;
        } else {
            same += 1;
        }
    }
    std::fs::remove_dir_all(&work).ok();
    println!(
        "same bytes: {same} outputs identical to the baseline's and between --jobs 1 and --jobs {} ({both_failed} inputs refused by both)",
        args.jobs
    );
    if !changed.is_empty() {
        println!(
            "changed as allowed ({}, the same with any --jobs): {}",
            changed.len(),
            changed.join(", ")
        );
    }
    if !unexpected.is_empty() {
        bail!(
            "{} outputs differ from the baseline's: {}",
            unexpected.len(),
            unexpected.join(",")
        );
    }
    Ok(())
}
