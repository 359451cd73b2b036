//! The schedule is valid and optimal: for every `l ≤ 300` and `s ≤ 10`
//! it reverses every step once, in reverse order, from states it really
//! has, never holds more than `s` snapshots, and runs exactly
//! `t(l, s) = r·l − C(s + r, s + 1)` steps without taping; that formula is
//! itself checked against the dynamic program it solves.

use xaif_revolve::runtime::{ADJOINT, ADVANCE, DONE, RESTORE, STORE, TAPE};
use xaif_revolve::{binomial, min_forward_steps, Action, Runtime, Schedule};

/// Runs the schedule of `l` steps and `s` snapshots on a simulated loop
/// state; returns the untaped steps, or why the schedule is wrong.
fn simulate(l: u64, s: u64) -> Result<u64, String> {
    let mut sch = Schedule::new(l, s);
    // The program's state (a position), None when undefined.
    let mut state: Option<u64> = Some(0);
    let mut snapshots: Vec<u64> = Vec::new();
    let mut taped: Option<u64> = None;
    let mut next_reversed = l;
    let mut forward = 0;
    for _ in 0..(10 * l * l + 10) {
        let a = sch.next_action();
        match a {
            Action::Store { at } => {
                if state != Some(at) {
                    return Err(format!("store {at} in state {state:?}"));
                }
                snapshots.push(at);
                if snapshots.len() as u64 > s {
                    return Err(format!("{} snapshots held", snapshots.len()));
                }
            }
            Action::Restore { at } => {
                // Snapshots beyond the part still to reverse are dropped.
                snapshots.retain(|&p| p < next_reversed);
                if snapshots.last() != Some(&at) {
                    return Err(format!("restore {at} with snapshots {snapshots:?}"));
                }
                state = Some(at);
            }
            Action::Advance { from, to } => {
                if state != Some(from) || to <= from || to >= next_reversed {
                    return Err(format!("advance {from}..{to} in state {state:?}"));
                }
                forward += to - from;
                state = Some(to);
            }
            Action::Tape { step } => {
                if state != Some(step) || step + 1 != next_reversed {
                    return Err(format!("tape {step} in state {state:?}"));
                }
                taped = Some(step);
                state = Some(step + 1);
            }
            Action::Adjoint { step } => {
                if taped != Some(step) {
                    return Err(format!("adjoint {step} after tape {taped:?}"));
                }
                taped = None;
                next_reversed = step;
                state = None;
            }
            Action::Done => {
                if next_reversed != 0 {
                    return Err(format!("done before step {}", next_reversed - 1));
                }
                if sch.forward_steps() != forward {
                    return Err("forward steps miscounted".into());
                }
                return Ok(forward);
            }
        }
    }
    Err("no end".into())
}

#[test]
fn every_schedule_is_valid_and_takes_the_minimum_of_forward_steps() {
    for l in 1..=300u64 {
        for s in 1..=10u64 {
            let forward = simulate(l, s).unwrap_or_else(|e| panic!("l={l} s={s}: {e}"));
            let expected = min_forward_steps(l, s);
            assert_eq!(forward, expected, "l={l} s={s}");
            if s + 1 >= l {
                assert_eq!(forward, l - 1, "l={l} s={s}: no recomputation");
            }
        }
    }
}

#[test]
fn the_closed_form_solves_the_recursion() {
    // t(l, s) = min over 1 <= m < l of m + t(l - m, s - 1) + t(m, s),
    // t(1, s) = 0, t(l, 1) = l(l-1)/2.
    const L: usize = 120;
    const S: usize = 8;
    let mut t = vec![vec![0u64; S + 1]; L + 1];
    for l in 2..=L {
        t[l][1] = (l * (l - 1) / 2) as u64;
        for s in 2..=S {
            t[l][s] = (1..l)
                .map(|m| m as u64 + t[l - m][s - 1] + t[m][s])
                .min()
                .unwrap();
        }
    }
    for (l, row) in t.iter().enumerate().skip(1) {
        for (s, &dp) in row.iter().enumerate().skip(1) {
            let r = xaif_revolve::repetitions(l as u64, s as u64);
            let closed = min_forward_steps(l as u64, s as u64);
            assert_eq!(closed, dp, "l={l} s={s}");
            if l > 1 {
                assert_eq!(
                    closed,
                    r * l as u64 - binomial(s as u64 + 1, r - 1),
                    "l={l} s={s}"
                );
            }
        }
    }
}

#[test]
fn large_schedules_hold_at_most_s_snapshots() {
    for (l, s) in [
        (1_000u64, 2u64),
        (1_000, 5),
        (1_000, 10),
        (1_000, 50),
        (5_000, 3),
    ] {
        let mut sch = Schedule::new(l, s);
        while sch.next_action() != Action::Done {}
        assert!(sch.peak_held() as u64 <= s);
        assert_eq!(sch.forward_steps(), min_forward_steps(l, s));
    }
}

/// The codes of the replies of `rt` until `DONE`.
fn sweep(rt: &mut Runtime<&'static str>) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    loop {
        let r = rt.next_action().unwrap();
        out.push((r.code, r.count));
        if r.code == DONE {
            return out;
        }
    }
}

#[test]
fn an_inner_instance_runs_and_pauses_inside_an_outer_step() {
    let mut rt: Runtime<&'static str> = Runtime::new();
    rt.begin(2, 2, "outer").unwrap();
    // Outer taping sweep: store 0, advance 1, tape step 1 (then the inner
    // loop's taping sweep runs inside that step), pause.
    assert_eq!(rt.next_action().unwrap().code, STORE);
    assert_eq!(rt.next_action().unwrap().code, ADVANCE);
    assert_eq!(rt.next_action().unwrap().code, TAPE);
    rt.begin(3, 1, "inner").unwrap();
    assert_eq!(
        sweep(&mut rt),
        vec![(STORE, 0), (ADVANCE, 2), (TAPE, 2), (DONE, 0)]
    );
    assert_eq!(rt.next_action().unwrap().code, DONE);
    assert_eq!(rt.len(), 2);
    // Adjoint sweep of the outer loop: its first action reverses step 1,
    // which reverses the inner loop.
    assert_eq!(*rt.resume().unwrap(), "outer");
    assert_eq!(rt.next_action().unwrap().code, ADJOINT);
    assert_eq!(*rt.resume().unwrap(), "inner");
    let inner: Vec<_> = sweep(&mut rt);
    assert_eq!(
        inner,
        vec![
            (ADJOINT, 2),
            (RESTORE, 0),
            (ADVANCE, 1),
            (TAPE, 1),
            (ADJOINT, 1),
            (RESTORE, 0),
            (TAPE, 0),
            (ADJOINT, 0),
            (DONE, 0)
        ]
    );
    assert_eq!(rt.len(), 1);
    let rest = sweep(&mut rt);
    assert_eq!(rest, vec![(RESTORE, 0), (TAPE, 0), (ADJOINT, 0), (DONE, 0)]);
    assert!(rt.is_empty());
}

#[test]
fn misuse_is_an_error() {
    let mut rt: Runtime<()> = Runtime::new();
    assert!(rt.next_action().is_err());
    assert!(rt.resume().is_err());
    assert!(rt.begin(3, 0, ()).is_err());
    rt.begin(0, 1, ()).unwrap();
    assert_eq!(rt.next_action().unwrap().code, DONE);
    rt.resume().unwrap();
    let r = rt.next_action().unwrap();
    assert_eq!(r.code, DONE);
    assert_eq!(r.finished.unwrap().steps, 0);
    assert!(rt.is_empty());
}
