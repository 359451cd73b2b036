//! The Fortran run-time modules (`runtime/oad_revolve.f90` and
//! `runtime/oad_revolve_snapshots.f90`, what an OpenAD build links)
//! compile without a warning under `gfortran -Wall -Wextra -std=f2008
//! -fcheck=all` and take the schedules of this crate: driven by
//! `runtime/test/schedule_driver.f90` on binomial (steps, snapshots) pairs
//! from 0 to 1,000 steps and 1 to 50 snapshots, online loops of 0 to 1,000
//! iterations and 1 to 50 snapshots, fixed-point loops (converging,
//! not converging within MAXITER, left by an exit), independent loops, a
//! two-level binomial nest and a fixed-point loop in a while loop, their
//! action sequences, answers to `oad_revolve_iteration`, forward steps and
//! adjoint iterations equal those of [`Runtime`], line for line, their
//! snapshots restore exactly what was stored (the driver prints every
//! inconsistency), and the unconverged fixed-point loops, and only they,
//! are reported on the standard error. `runtime/test/snapshot_driver.f90` round-trips every
//! type, kind and rank the store holds (strings of 1,000 characters, rank-7
//! arrays, OpenAD's active type) bit for bit, queries what is held,
//! abandons a schedule, and stops on a restore of another type. Skipped
//! with a reason when gfortran is missing, unless `CI=true`.

use std::path::Path;
use std::process::Command;

use xaif_revolve::runtime::{ADJOINT, CHECK, DONE, MEASURE, RESTORE, STORE, TAPE};
use xaif_revolve::{Kind, Runtime};

const STEPS: [i64; 18] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 13, 20, 21, 36, 55, 100, 257, 1000,
];
const SNAPSHOTS: [i64; 9] = [1, 2, 3, 4, 5, 6, 10, 20, 50];

/// What the driver prints, from this crate's run-time.
struct Expected {
    rt: Runtime<i64>,
    out: Vec<String>,
    forward: u64,
    iterations: u64,
    /// The simulated adjoint of a fixed-point loop's state and its factor
    /// per reversed iteration.
    adj: f64,
    q: f64,
    /// The simulated state a fixed-point loop reports to `check`, its
    /// change over the iteration checked, and what the last loop
    /// finished reported.
    fx: f64,
    drift: f64,
    last: Option<(Option<bool>, Option<f64>)>,
}

impl Expected {
    fn sweep(&mut self, prefix: &str) -> Vec<(i64, i64)> {
        let mut seen = Vec::new();
        loop {
            let r = self.rt.next_action().expect("a running loop");
            self.out.push(format!("{prefix}{} {}", r.code, r.count));
            seen.push((r.code, r.count));
            if r.code == ADJOINT {
                self.adj *= self.q;
            }
            if r.code == MEASURE {
                self.rt.measure(self.adj).unwrap();
            }
            if r.code == CHECK {
                self.rt.check(&[self.fx]).unwrap();
                self.rt.check(&[0.25, -0.5]).unwrap();
                self.fx += self.drift;
            }
            if let Some(f) = r.finished {
                self.forward = f.forward_steps;
                self.iterations = f.adjoint_iterations.unwrap_or(0);
                self.last = Some((f.converged, f.forward_change));
            }
            if r.code == DONE {
                return seen;
            }
        }
    }

    /// The driver's `runs_itself`: a loop of `kind` (1 online, 2 fixed
    /// point, 3 independent) running itself for `steps` iterations.
    #[allow(clippy::too_many_arguments)]
    fn runs_itself(
        &mut self,
        kind: u8,
        steps: u64,
        snaps: i64,
        by_exit: u8,
        tolerance: f64,
        max_iterations: u64,
        factor: f64,
        seed: f64,
    ) {
        self.out
            .push(format!("kind {kind} {steps} {snaps} {by_exit}"));
        let k = match kind {
            1 => Kind::Online,
            2 => Kind::FixedPoint {
                tolerance,
                max_iterations,
            },
            _ => Kind::Independent,
        };
        let snaps_used = match kind {
            1 => snaps,
            2 => 2,
            _ => 1,
        };
        self.rt.begin(k, snaps_used, 12).unwrap();
        for _ in 0..steps {
            let r = self.rt.iteration().unwrap();
            self.out.push(format!("i {}", r.code));
        }
        self.rt.end(by_exit == 1).unwrap();
        self.out.push("pause".into());
        self.rt.resume().unwrap();
        self.adj = seed;
        self.q = factor;
        self.iterations = 0;
        self.sweep("");
        self.out
            .push(format!("forward {} {} 0", self.forward, self.iterations));
    }

    /// The driver's `mixed`: a while loop of 6 iterations (2 snapshots),
    /// a fixed-point loop of 4 in each.
    fn mixed(&mut self) {
        self.rt.begin(Kind::Online, 2, 1).unwrap();
        for _ in 0..6 {
            let r = self.rt.iteration().unwrap();
            self.out.push(format!("outer i {}", r.code));
        }
        self.rt.end(false).unwrap();
        self.rt.resume().unwrap();
        let inner = Kind::FixedPoint {
            tolerance: 1e-8,
            max_iterations: 100,
        };
        loop {
            let r = self.rt.next_action().unwrap();
            self.out.push(format!("outer {} {}", r.code, r.count));
            match r.code {
                DONE => break,
                TAPE => {
                    self.rt.begin(inner, 2, 2).unwrap();
                    for _ in 0..4 {
                        self.rt.iteration().unwrap();
                    }
                    self.rt.end(false).unwrap();
                }
                ADJOINT => {
                    self.rt.resume().unwrap();
                    self.adj = 1.0;
                    self.q = 0.25;
                    self.sweep("");
                }
                _ => {}
            }
        }
        self.out.push("held 0".into());
    }

    fn reverse(&mut self, steps: i64, snaps: i64, line: i64) {
        self.rt
            .begin(Kind::Binomial { steps }, snaps, line)
            .unwrap();
        self.sweep("");
        self.out.push("pause".into());
        self.rt.resume().unwrap();
        self.sweep("");
    }

    /// The driver's two-level nest: an outer loop of 4 (2 snapshots), an
    /// inner one of 5 (3) in each taped outer iteration.
    fn nested(&mut self) {
        self.rt.begin(Kind::Binomial { steps: 4 }, 2, 1).unwrap();
        loop {
            let r = self.rt.next_action().unwrap();
            self.out.push(format!("outer {} {}", r.code, r.count));
            if r.code == DONE {
                break;
            }
            if r.code == TAPE {
                self.rt.begin(Kind::Binomial { steps: 5 }, 3, 2).unwrap();
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
                    self.rt.begin(Kind::Binomial { steps: 5 }, 3, 2).unwrap();
                    self.sweep("");
                }
                ADJOINT => {
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
        iterations: 0,
        adj: 1.0,
        q: 1.0,
        fx: 1.0,
        drift: 0.0,
        last: None,
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
    for l in [0, 1, 2, 3, 5, 10, 37, 100, 257, 1000] {
        for s in [1, 2, 3, 5, 10, 50] {
            e.out.push(format!("online {l} {s}"));
            e.runs_itself(1, l, s, 0, 1e-12, 10, 1.0, 1.0);
        }
    }
    e.runs_itself(2, 30, 2, 0, 1e-12, 1000, 0.5, 1.0);
    e.runs_itself(2, 5, 2, 1, 1e-6, 100, 0.1, 1.0);
    e.runs_itself(2, 1, 2, 1, 1e-6, 100, 0.1, 1.0);
    e.runs_itself(2, 0, 2, 0, 1e-6, 100, 0.1, 1.0);
    e.runs_itself(2, 2, 2, 1, 1e-10, 50, 0.9, 2.0);
    e.runs_itself(2, 3, 2, 0, 1e-12, 7, 1.0, 1.0);
    e.runs_itself(2, 3, 2, 0, 1e-12, 5, 0.5, 0.0);
    // Expanding: the adjoint overflows at the 1,024th reversal and must
    // not count as converged.
    e.runs_itself(2, 3, 2, 0, 1e-12, 1100, 2.0, 1.0);
    // A loop that did not reach its fixed point: not converged, though
    // its adjoint is.
    e.runs_itself(2, 30, 2, 0, 1e-12, 1000, 0.5, 1.0);
    assert_eq!(e.last, Some((Some(true), Some(0.0))));
    e.drift = 1e-3;
    e.runs_itself(2, 30, 2, 0, 1e-12, 1000, 0.5, 1.0);
    e.drift = 0.0;
    let (converged, change) = e.last.expect("finished");
    assert_eq!(converged, Some(false));
    // The state was 1 and 1.001 at the two checks.
    assert!((change.unwrap() - 1e-3 / 1.001).abs() < 1e-15, "{change:?}");
    for l in 0..=5 {
        e.runs_itself(3, l, 1, 0, 0.0, 1, 1.0, 1.0);
    }
    e.runs_itself(3, 37, 1, 0, 0.0, 1, 1.0, 1.0);
    e.out.push("mixed".into());
    e.mixed();
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
    // The fixed-point loops that do not converge within MAXITER (and only
    // they) are reported.
    let warned = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = warned.lines().collect();
    assert_eq!(warnings.len(), 4, "{warned}");
    assert!(warnings[0].contains(
        "warning: the adjoint of the fixed-point loop at line 12 did not converge in 50 iterations"
    ));
    assert!(warnings[1].contains("did not converge in 7 iterations"));
    assert!(warnings[2].contains("did not converge in 1100 iterations"));
    assert!(
        warnings[3].contains(
            "warning: the fixed-point loop at line 12 did not reach its fixed point: its last iteration changed its state by 9.990E-04 relative"
        ),
        "{}",
        warnings[3]
    );
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
