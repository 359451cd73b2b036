//! The Fortran run-time modules (`runtime/oad_revolve.f90` and
//! `runtime/oad_revolve_snapshots.f90`, what an OpenAD build links)
//! compile without a warning under `gfortran -Wall -Wextra -std=f2008
//! -fcheck=all` and take the schedule of this crate: driven by
//! `runtime/test/schedule_driver.f90` on (steps, snapshots) pairs from 0 to
//! 1,000 steps and 1 to 50 snapshots, their action sequence, forward steps
//! and a two-level nest equal those of [`Runtime`], line for line, and
//! their snapshots restore exactly what was stored (the driver prints every
//! inconsistency). `runtime/test/snapshot_driver.f90` round-trips every
//! type, kind and rank the store holds (strings of 1,000 characters, rank-7
//! arrays, OpenAD's active type) bit for bit, queries what is held,
//! abandons a schedule, and stops on a restore of another type. Skipped
//! with a reason when gfortran is missing, unless `CI=true`.

use std::path::Path;
use std::process::Command;

use xaif_revolve::runtime::{DONE, RESTORE, STORE, TAPE};
use xaif_revolve::Runtime;

const STEPS: [i64; 18] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 13, 20, 21, 36, 55, 100, 257, 1000,
];
const SNAPSHOTS: [i64; 9] = [1, 2, 3, 4, 5, 6, 10, 20, 50];

/// What the driver prints, from this crate's run-time.
struct Expected {
    rt: Runtime<i64>,
    out: Vec<String>,
    forward: u64,
}

impl Expected {
    fn sweep(&mut self, prefix: &str) -> Vec<(i64, i64)> {
        let mut seen = Vec::new();
        loop {
            let r = self.rt.next_action().expect("a running loop");
            self.out.push(format!("{prefix}{} {}", r.code, r.count));
            seen.push((r.code, r.count));
            if let Some(f) = r.finished {
                self.forward = f.forward_steps;
            }
            if r.code == DONE {
                return seen;
            }
        }
    }

    fn reverse(&mut self, steps: i64, snaps: i64, line: i64) {
        self.rt.begin(steps, snaps, line).unwrap();
        self.sweep("");
        self.out.push("pause".into());
        self.rt.resume().unwrap();
        self.sweep("");
    }

    /// The driver's two-level nest: an outer loop of 4 (2 snapshots), an
    /// inner one of 5 (3) in each taped outer iteration.
    fn nested(&mut self) {
        self.rt.begin(4, 2, 1).unwrap();
        loop {
            let r = self.rt.next_action().unwrap();
            self.out.push(format!("outer {} {}", r.code, r.count));
            if r.code == DONE {
                break;
            }
            if r.code == TAPE {
                self.rt.begin(5, 3, 2).unwrap();
                self.sweep("");
            }
        }
        self.rt.resume().unwrap();
        loop {
            let r = self.rt.next_action().unwrap();
            self.out.push(format!("outer {} {}", r.code, r.count));
            match r.code {
                DONE => break,
                TAPE => {
                    self.rt.begin(5, 3, 2).unwrap();
                    self.sweep("");
                }
                c if c == xaif_revolve::runtime::ADJOINT => {
                    self.rt.resume().unwrap();
                    self.sweep("");
                }
                STORE | RESTORE => {}
                _ => {}
            }
        }
    }
}

fn expected() -> String {
    let mut e = Expected {
        rt: Runtime::new(),
        out: Vec::new(),
        forward: 0,
    };
    for &l in &STEPS {
        for &s in &SNAPSHOTS {
            e.out.push(format!("pair {l} {s}"));
            e.reverse(l, s, 11);
            let t = xaif_revolve::min_forward_steps(l as u64, s as u64);
            e.out.push(format!("forward {} {t}", e.forward));
        }
    }
    e.out.push("nested".into());
    e.nested();
    e.out.push("end".into());
    assert!(e.rt.is_empty());
    let mut text = e.out.join("\n");
    text.push('\n');
    text
}

/// The run-time compiled into a scratch directory, and `driver` (a file
/// of `runtime/test/`) linked with it; `None` when gfortran is missing.
fn build(driver: &str) -> Option<(xaif_testkit::Scratch, std::path::PathBuf)> {
    build_with(driver, &[])
}

/// [`build`] with `extra` compiler flags for everything.
fn build_with(driver: &str, extra: &[&str]) -> Option<(xaif_testkit::Scratch, std::path::PathBuf)> {
    use xaif_testkit::fortran;
    if !fortran::have_gfortran() {
        return None;
    }
    let name = format!("{driver}{}", extra.join(""));
    let dir = xaif_testkit::Scratch::new("xaifb-revolve", &name);
    let objects = fortran::compile_runtime_with(dir.path(), extra);
    let exe = dir.join("driver");
    let source = xaif_testkit::repo_root().join("runtime/test").join(driver);
    if let Err(e) = fortran::compile_program_with(dir.path(), &objects, &source, &exe, extra) {
        panic!("gfortran failed to compile {driver}:\n{e}");
    }
    Some((dir, exe))
}

#[test]
fn the_fortran_module_takes_the_rust_schedule() {
    let Some((_dir, exe)) = build("schedule_driver.f90") else {
        return;
    };
    let out = Command::new(Path::new(&exe))
        .output()
        .expect("the driver runs");
    assert!(
        out.status.success(),
        "the driver failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let got = String::from_utf8(out.stdout).expect("text");
    assert!(
        !got.contains("ERROR"),
        "inconsistencies:\n{}",
        got.lines()
            .filter(|l| l.contains("ERROR"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let want = expected();
    if got != want {
        let (n, (g, w)) = got
            .lines()
            .zip(want.lines())
            .enumerate()
            .find(|(_, (g, w))| g != w)
            .unwrap_or((
                got.lines().count().min(want.lines().count()),
                ("(end)", "(end)"),
            ));
        panic!("line {}: Fortran `{g}`, Rust `{w}`", n + 1);
    }
    assert!(want.lines().count() > 50_000);
}

#[test]
fn every_type_kind_and_rank_survives_a_store_and_restore() {
    snapshot_driver(&[]);
}

/// Models are often compiled with 8-byte default reals and integers: the
/// run-time compiles without a warning and holds the same (the default
/// kinds are among the explicit ones, and the counters' generics stay
/// distinct).
#[test]
fn with_eight_byte_default_kinds_it_holds_the_same() {
    snapshot_driver(&["-fdefault-real-8", "-fdefault-integer-8"]);
}

fn snapshot_driver(extra: &[&str]) {
    let Some((_dir, exe)) = build_with("snapshot_driver.f90", extra) else {
        return;
    };
    let out = Command::new(&exe).output().expect("the driver runs");
    let got = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "the driver failed:\n{got}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let errors: Vec<&str> = got.lines().filter(|l| l.starts_with("ERROR")).collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let oks = got.lines().filter(|l| l.starts_with("ok ")).count();
    assert_eq!(oks, 37, "{got}");
    for needed in [
        "ok character(len=100)",
        "ok character(len=1000)",
        "ok integer(int64) scalar",
        "ok real(real32) scalar",
        "ok logical scalar",
        "ok logical rank 7",
        "ok active rank 7",
        "ok abandon: nothing held",
    ] {
        assert!(got.lines().any(|l| l == needed), "no `{needed}`:\n{got}");
    }
    assert!(got.ends_with("end\n"), "{got}");

    let out = Command::new(&exe).arg("mismatch").output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(
            "oad_revolve: a restore of real(real32) (4 bytes) where the snapshot holds \
             integer(int32) (4 bytes)"
        ),
        "{said}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("ERROR"));
}
