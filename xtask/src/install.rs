//! `cargo xtask install`: the xaifb binary an OpenAD installation runs,
//! built to start quickly.
//!
//! OpenAD runs the engine once per file, so every file pays for starting
//! a process. A dynamically linked xaifb spends about half a millisecond
//! of that loading the C library, the unwinder and the maths library and
//! applying some 6,500 relocations (`LD_DEBUG=statistics`), a fifth of
//! its whole work on a typical corpus file. On GNU/Linux this task
//! therefore links the C library statically (`-C
//! target-feature=+crt-static`) into a position-dependent executable (`-C
//! relocation-model=static`): nothing is loaded or relocated at start
//! (`docs/decisions.md`, `docs/performance.md`). Elsewhere, or where the
//! C library's static archives are missing, it builds the ordinary
//! binary and says so.
//!
//! The flags apply to the target only (`--target` is given explicitly),
//! so build scripts and procedural macros, which must stay dynamic, are
//! built as usual, and a separate target directory keeps the ordinary
//! build's cache intact.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// How a built xaifb is linked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linking {
    /// The C library linked in, position-dependent: nothing to load at
    /// start.
    Static,
    /// The ordinary build: the C library loaded at start.
    Dynamic,
}

impl Linking {
    /// How reports name it.
    pub fn describe(self) -> &'static str {
        match self {
            Linking::Static => "statically linked (`cargo xtask install`)",
            Linking::Dynamic => "dynamically linked (`cargo build --release`)",
        }
    }
}

/// A built xaifb binary.
pub struct Built {
    /// Where cargo put it.
    pub path: PathBuf,
    /// How it is linked.
    pub linking: Linking,
}

/// Options of `cargo xtask install`.
#[derive(clap::Args)]
pub struct Args {
    /// Copy the binary to ROOT/bin/xaifb (created if missing), the layout
    /// of `cargo install --root`.
    #[arg(long)]
    root: Option<PathBuf>,
    /// Build the ordinary dynamically linked binary instead.
    #[arg(long)]
    dynamic: bool,
}

/// The code generation flags of the quick-start build.
pub const STATIC_FLAGS: [&str; 4] = [
    "-C",
    "target-feature=+crt-static",
    "-C",
    "relocation-model=static",
];

/// Whether the quick-start build applies to `host` (a target triple):
/// GNU/Linux, where the C library's static archives come with its
/// development files.
pub fn static_applies(host: &str) -> bool {
    host.ends_with("-linux-gnu")
}

/// `RUSTFLAGS` for the quick-start build: the user's own, then ours.
pub fn rustflags(existing: Option<&str>) -> String {
    let ours = STATIC_FLAGS.join(" ");
    match existing.map(str::trim).filter(|s| !s.is_empty()) {
        Some(theirs) => format!("{theirs} {ours}"),
        None => ours,
    }
}

/// The host's target triple, from `rustc -vV`.
fn host_triple() -> Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = std::process::Command::new(&rustc)
        .arg("-vV")
        .output()
        .with_context(|| format!("running {} -vV", Path::new(&rustc).display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(|h| h.trim().to_string())
        .context("rustc -vV did not name the host")
}

/// Builds xaifb for an installation: statically linked where that
/// applies and works, the ordinary binary otherwise.
pub fn build(dynamic: bool) -> Result<Built> {
    let host = host_triple()?;
    if !dynamic && static_applies(&host) {
        let dir = crate::target_dir().join("install");
        let mut cmd = crate::cargo();
        cmd.args(["build", "--release", "-p", "xaifb", "--target", &host])
            .env("CARGO_TARGET_DIR", &dir)
            .env(
                "RUSTFLAGS",
                rustflags(std::env::var("RUSTFLAGS").ok().as_deref()),
            )
            .env_remove("CARGO_ENCODED_RUSTFLAGS");
        match crate::run(cmd) {
            Ok(()) => {
                return Ok(Built {
                    path: dir.join(&host).join("release").join("xaifb"),
                    linking: Linking::Static,
                })
            }
            Err(e) => eprintln!(
                "xtask install: the statically linked build failed ({e:#}); \
                 building the ordinary binary instead (on Debian and Ubuntu the \
                 static C library comes with libc6-dev)"
            ),
        }
    }
    Ok(Built {
        path: crate::release_xaifb()?,
        linking: Linking::Dynamic,
    })
}

/// Copies `bin` to `root/bin/xaifb` through a temporary file, so that a
/// running installation never sees half a binary.
fn place(bin: &Path, root: &Path) -> Result<PathBuf> {
    let dir = root.join("bin");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let dest = dir.join("xaifb");
    let temp = dir.join(".xaifb.install.tmp");
    std::fs::copy(bin, &temp)
        .with_context(|| format!("copying {} to {}", bin.display(), temp.display()))?;
    std::fs::rename(&temp, &dest).with_context(|| format!("installing {}", dest.display()))?;
    Ok(dest)
}

/// Runs `cargo xtask install`.
pub fn run(args: Args) -> Result<()> {
    let built = build(args.dynamic)?;
    let path = match &args.root {
        Some(root) => place(&built.path, root)?,
        None => built.path.clone(),
    };
    let version = std::process::Command::new(&path)
        .arg("--version")
        .output()
        .with_context(|| format!("running {} --version", path.display()))?;
    if !version.status.success() {
        bail!("{} --version failed", path.display());
    }
    println!(
        "{}: {}, {}",
        path.display(),
        String::from_utf8_lossy(&version.stdout).trim(),
        built.linking.describe()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gnu_linux_gets_the_static_build() {
        assert!(static_applies("x86_64-unknown-linux-gnu"));
        assert!(static_applies("aarch64-unknown-linux-gnu"));
        assert!(!static_applies("x86_64-unknown-linux-musl"));
        assert!(!static_applies("aarch64-apple-darwin"));
        assert!(!static_applies("x86_64-pc-windows-msvc"));
    }

    #[test]
    fn the_users_rustflags_are_kept_before_ours() {
        assert_eq!(
            rustflags(None),
            "-C target-feature=+crt-static -C relocation-model=static"
        );
        assert_eq!(rustflags(Some("  ")), rustflags(None));
        assert_eq!(
            rustflags(Some("-C target-cpu=native")),
            "-C target-cpu=native -C target-feature=+crt-static -C relocation-model=static"
        );
    }
}
