//! `xaifb shims DIR`: xaifb in the places where OpenAD looks for
//! xaifBooster.
//!
//! OpenAD's scripts run `$XAIFBOOSTERROOT/xaifBooster/algorithms/<driver>/
//! driver/oadDriver` for tangent (`BasicBlockPreaccumulation`), adjoint
//! (`BasicBlockPreaccumulationReverse`), trace (`TraceDiff`) and type
//! change (`TypeChange`) mode, with the reference's flags. Each shim is a
//! two-line shell script that passes those flags unchanged to the matching
//! xaifb subcommand, so pointing `XAIFBOOSTERROOT` at DIR makes an
//! unmodified OpenAD installation use xaifb.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

/// The driver directories and the subcommand each runs.
pub const DRIVERS: [(&str, &str); 4] = [
    ("BasicBlockPreaccumulation", "tangent"),
    ("BasicBlockPreaccumulationReverse", "adjoint"),
    ("TraceDiff", "trace"),
    ("TypeChange", "typechange"),
];

/// Arguments of `xaifb shims`.
#[derive(Args)]
pub struct ShimsArgs {
    /// The directory to use as XAIFBOOSTERROOT.
    pub dir: PathBuf,
    /// The xaifb binary the shims call (default: this one).
    #[arg(long)]
    pub xaifb: Option<PathBuf>,
}

/// The path of driver `name` under `root`.
pub fn driver_path(root: &Path, name: &str) -> PathBuf {
    root.join("xaifBooster/algorithms")
        .join(name)
        .join("driver/oadDriver")
}

fn quoted(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// Runs `xaifb shims`.
pub fn shims(args: ShimsArgs) -> Result<ExitCode> {
    let exe = match args.xaifb {
        Some(p) => p,
        None => std::env::current_exe().context("cannot find the xaifb binary")?,
    };
    let exe = exe.canonicalize().unwrap_or(exe);
    for (driver, mode) in DRIVERS {
        let path = driver_path(&args.dir, driver);
        let script = format!("#!/bin/sh\nexec {} {mode} \"$@\"\n", quoted(&exe));
        crate::output::write_atomic(&path, script.as_bytes())?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .with_context(|| format!("cannot make {} executable", path.display()))?;
        }
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
