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

/// The binary the shims call, made absolute: `--xaifb` must name an
/// executable file (exit code 1 otherwise, as for any input), so that no
/// shim is installed that cannot run.
fn binary(flag: Option<PathBuf>) -> Result<PathBuf> {
    let Some(path) = flag else {
        let exe = std::env::current_exe().context("cannot find the xaifb binary")?;
        return Ok(exe.canonicalize().unwrap_or(exe));
    };
    let missing = |cause| crate::input::InputError {
        path: path.clone(),
        cause,
    };
    let meta = std::fs::metadata(&path).map_err(|e| missing(crate::input::io_cause(&path, &e)))?;
    if let Some(cause) = crate::input::type_cause(meta.file_type()) {
        return Err(missing(cause).into());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o111 == 0 {
            return Err(crate::report::Invalid(format!(
                "{}: is not executable; --xaifb names the xaifb binary the shims run",
                path.display()
            ))
            .into());
        }
    }
    let exe = path
        .canonicalize()
        .map_err(|e| missing(crate::input::io_cause(&path, &e)))?;
    Ok(exe)
}

/// Runs `xaifb shims`: the four drivers are installed together or not at
/// all (one job of `output.rs`).
pub fn shims(args: ShimsArgs) -> Result<ExitCode> {
    crate::output::Plan::new().dir("shims", &args.dir)?;
    let exe = binary(args.xaifb)?;
    let mut outputs = crate::output::Outputs::new();
    let mut paths = Vec::new();
    for (driver, mode) in DRIVERS {
        let path = driver_path(&args.dir, driver);
        let script = format!("#!/bin/sh\nexec {} {mode} \"$@\"\n", quoted(&exe));
        outputs.add_executable(&path, script.as_bytes())?;
        paths.push(path);
    }
    outputs.commit()?;
    for path in paths {
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
