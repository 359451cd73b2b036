//! The Fortran run-time module (`runtime/oad_revolve.f90`, what an OpenAD
//! build links) takes the schedule of this crate: compiled with gfortran
//! and driven by `runtime/test/schedule_driver.f90` on (steps, snapshots)
//! pairs from 0 to 1,000 steps and 1 to 50 snapshots, its action sequence,
//! its forward steps and a two-level nest equal those of [`Runtime`], line
//! for line, and its snapshots restore exactly what was stored (the driver
//! prints every inconsistency). Skipped with a reason when gfortran is
//! missing, unless `CI=true`.

use std::path::Path;
use std::process::Command;

use xaif_revolve::runtime::{DONE, RESTORE, STORE, TAPE};
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

#[test]
fn the_fortran_module_takes_the_rust_schedule() {
    let have = Command::new("gfortran")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        xaif_testkit::unavailable("gfortran not found (install gfortran)");
        return;
    }
    let root = xaif_testkit::repo_root();
    let runtime = root.join("runtime");
    let dir = xaif_testkit::scratch::Scratch::new("xaifb-revolve", "fortran");
    let exe = dir.join("driver");
    let status = Command::new("gfortran")
        .args(["-std=f2008", "-Wall", "-J"])
        .arg(dir.path())
        .arg("-o")
        .arg(&exe)
        .arg(runtime.join("test/oad_stubs.f90"))
        .arg(runtime.join("oad_revolve.f90"))
        .arg(runtime.join("test/schedule_driver.f90"))
        .status()
        .expect("gfortran runs");
    assert!(status.success(), "gfortran failed to compile runtime/");
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
