//! The Fortran run-time of checkpointed loops (`runtime/`) compiled as CI
//! compiles it, for the tests that drive it or compile generated code
//! against it.
//!
//! The modules are compiled with [`FLAGS`] (all warnings, standard
//! Fortran 2008, every run-time check) and must compile without a single
//! warning: what an OpenAD build links should be clean under the strictest
//! settings a user may have.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The flags every run-time source and test program is compiled with.
pub const FLAGS: [&str; 4] = ["-Wall", "-Wextra", "-std=f2008", "-fcheck=all"];

/// The run-time sources in compilation order, relative to the repository
/// root: stand-ins of OpenAD's `OAD_active` and `OAD_rev`, the snapshot
/// store, the schedule.
pub const SOURCES: [&str; 3] = [
    "runtime/test/oad_stubs.f90",
    "runtime/oad_revolve_snapshots.f90",
    "runtime/oad_revolve.f90",
];

/// Whether `gfortran` runs; when it does not, the test is skipped with a
/// reason (failed with `CI=true`) through [`crate::unavailable`].
pub fn have_gfortran() -> bool {
    let have = Command::new("gfortran")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        crate::unavailable("gfortran not found (install gfortran)");
    }
    have
}

/// Compiles the run-time into `dir` (objects and `.mod` files); panics,
/// with the compiler's words, on an error or a warning. Returns the
/// objects to link.
pub fn compile_runtime(dir: &Path) -> Vec<PathBuf> {
    compile_runtime_with(dir, &[])
}

/// [`compile_runtime`] with `extra` flags after [`FLAGS`] (a model's own
/// kinds: `-fdefault-real-8`, `-fdefault-integer-8`).
pub fn compile_runtime_with(dir: &Path, extra: &[&str]) -> Vec<PathBuf> {
    let root = crate::repo_root();
    SOURCES
        .iter()
        .map(|src| {
            let obj = dir.join(
                Path::new(src)
                    .file_stem()
                    .expect("a file name")
                    .to_string_lossy()
                    .to_string()
                    + ".o",
            );
            let out = Command::new("gfortran")
                .args(FLAGS)
                .args(extra)
                .arg("-J")
                .arg(dir)
                .arg("-c")
                .arg(root.join(src))
                .arg("-o")
                .arg(&obj)
                .output()
                .expect("gfortran runs");
            let said = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() && said.trim().is_empty(),
                "gfortran {} {} {src}:\n{said}",
                FLAGS.join(" "),
                extra.join(" ")
            );
            obj
        })
        .collect()
}

/// Compiles program `source` against the run-time objects `objects` (made
/// in `dir` by [`compile_runtime`]) into `exe`; returns the compiler's
/// diagnostics on failure.
pub fn compile_program(
    dir: &Path,
    objects: &[PathBuf],
    source: &Path,
    exe: &Path,
) -> Result<(), String> {
    compile_program_with(dir, objects, source, exe, &[])
}

/// [`compile_program`] with `extra` flags after [`FLAGS`].
pub fn compile_program_with(
    dir: &Path,
    objects: &[PathBuf],
    source: &Path,
    exe: &Path,
    extra: &[&str],
) -> Result<(), String> {
    let out = Command::new("gfortran")
        .args(FLAGS)
        .args(extra)
        .arg("-I")
        .arg(dir)
        .arg("-J")
        .arg(dir)
        .args(objects)
        .arg(source)
        .arg("-o")
        .arg(exe)
        .output()
        .map_err(|e| format!("gfortran: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}
