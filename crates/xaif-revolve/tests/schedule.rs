//! The schedules are valid and as good as promised. Binomial: for every
//! `l ≤ 300` and `s ≤ 10` it reverses every step once, in reverse order,
//! from states it really has, never holds more than `s` snapshots, runs
//! exactly `t(l, s) = r·l − C(s + r, s + 1)` steps without taping and none
//! more than `r(l, s)` times; that formula is itself checked against the
//! dynamic program it solves. Online: the same validity for every `l ≤
//! 400`, `s ≤ 8` and for loops up to 10^4 iterations and 20 snapshots,
//! with no step run untaped more than `r(l + 1, s)` times, the forward
//! sweep's run included. Fixed-point and independent schedules through the
//! run-time with their snapshot frames.

use xaif_revolve::runtime::{ADJOINT, ADVANCE, DONE, MEASURE, RESTORE, STORE, TAPE};
use xaif_revolve::{
    binomial, min_forward_steps, repetitions, Action, Binomial, Drops, Kind, LoopSchedule, Runtime,
};

/// Runs the schedule of `l` steps and `s` snapshots on a simulated loop
/// state; returns the untaped steps, or why the schedule is wrong.
fn simulate(l: u64, s: u64) -> Result<u64, String> {
    let mut sch = Binomial::new(l, s);
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
            Action::Measure | Action::Check => {
                return Err("a measure or check in a binomial schedule".into())
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
        let mut sch = Binomial::new(l, s);
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
    rt.begin(Kind::Binomial { steps: 2 }, 2, "outer").unwrap();
    // Outer taping sweep: store 0, advance 1, tape step 1 (then the inner
    // loop's taping sweep runs inside that step), pause.
    assert_eq!(rt.next_action().unwrap().code, STORE);
    assert_eq!(rt.next_action().unwrap().code, ADVANCE);
    assert_eq!(rt.next_action().unwrap().code, TAPE);
    rt.begin(Kind::Binomial { steps: 3 }, 1, "inner").unwrap();
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
    assert!(rt.begin(Kind::Binomial { steps: 3 }, 0, ()).is_err());
    rt.begin(Kind::Binomial { steps: 0 }, 1, ()).unwrap();
    assert_eq!(rt.next_action().unwrap().code, DONE);
    rt.resume().unwrap();
    let r = rt.next_action().unwrap();
    assert_eq!(r.code, DONE);
    assert_eq!(r.finished.unwrap().steps, 0);
    assert!(rt.is_empty());
}

/// Runs schedule `sch` of a loop of `l` iterations on a simulated state
/// (its position) and frame stack, the taping sweep first (run by the
/// schedule, or by the loop with `iteration` calls when it runs itself):
/// every step reversed once in order, from the states really stored, at
/// most `s` frames at once. Returns the untaped runs per step and the
/// schedule's own count of forward steps.
fn simulate_any(mut sch: Box<dyn LoopSchedule>, l: u64, s: u64) -> Result<(Vec<u64>, u64), String> {
    let mut runs = vec![0u64; l as usize];
    let mut frames: Vec<u64> = Vec::new();
    let mut state: Option<u64> = Some(0);
    let mut taped: Option<u64> = None;
    let mut next_reversed = l;
    let independent = sch.kind() == "independent";
    let drop = |frames: &mut Vec<u64>, drops: &mut Drops| -> Result<(), String> {
        for d in drops.drain(..) {
            if d >= frames.len() {
                return Err(format!("drop at depth {d} of {} frames", frames.len()));
            }
            let at = frames.len() - 1 - d;
            frames.remove(at);
        }
        Ok(())
    };
    let mut drops = Drops::new();
    if sch.runs_itself() {
        for k in 0..l {
            let store = sch.iteration(&mut drops);
            drop(&mut frames, &mut drops)?;
            if store {
                frames.push(k);
            }
            if frames.len() as u64 > s {
                return Err(format!("{} frames held in the forward sweep", frames.len()));
            }
            runs[k as usize] += 1;
        }
        sch.ended(false, &mut drops);
        drop(&mut frames, &mut drops)?;
        state = Some(l);
    }
    for _ in 0..(10 * l * l + 100) {
        if sch.held() != frames.len() {
            return Err(format!(
                "schedule holds {} but {} frames",
                sch.held(),
                frames.len()
            ));
        }
        let a = sch.next_action(&mut drops);
        drop(&mut frames, &mut drops)?;
        match a {
            Action::Store { at } => {
                if state != Some(at) {
                    return Err(format!("store {at} in state {state:?}"));
                }
                frames.push(at);
                if frames.len() as u64 > s {
                    return Err(format!("{} snapshots held", frames.len()));
                }
            }
            Action::Restore { at } => {
                if frames.last() != Some(&at) {
                    return Err(format!("restore {at} with frames {frames:?}"));
                }
                // Independent iterations start from the entry state, as
                // far as they read (the generated code sets the loop
                // variable).
                state = if independent {
                    next_reversed.checked_sub(1)
                } else {
                    Some(at)
                };
            }
            Action::Advance { from, to } => {
                if state != Some(from) || to <= from || to >= next_reversed {
                    return Err(format!("advance {from}..{to} in state {state:?}"));
                }
                for k in from..to {
                    runs[k as usize] += 1;
                }
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
            Action::Measure | Action::Check => {
                return Err("a measure or check outside a fixed-point loop".into())
            }
            Action::Done => {
                if next_reversed != 0 {
                    return Err(format!("done before step {}", next_reversed - 1));
                }
                if !frames.is_empty() {
                    return Err(format!("done holding {frames:?}"));
                }
                return Ok((runs, sch.report().forward_steps));
            }
        }
    }
    Err("no end".into())
}

#[test]
fn the_binomial_schedule_repeats_no_step_more_than_the_repetition_number() {
    for l in 1..=300u64 {
        for s in 1..=10u64 {
            let (runs, forward) =
                simulate_any(Kind::Binomial { steps: l as i64 }.schedule(s), l, s)
                    .unwrap_or_else(|e| panic!("l={l} s={s}: {e}"));
            assert_eq!(forward, runs.iter().sum::<u64>(), "l={l} s={s}");
            let most = runs.iter().copied().max().unwrap_or(0);
            assert_eq!(most, repetitions(l, s), "l={l} s={s}");
        }
    }
}

/// The online schedule of `l` iterations with `s` snapshots, run and
/// checked: valid, and no step untaped more than `r(l + 1, s)` times.
fn check_online(l: u64, s: u64) {
    let (runs, forward) = simulate_any(Kind::Online.schedule(s), l, s)
        .unwrap_or_else(|e| panic!("online l={l} s={s}: {e}"));
    assert_eq!(forward, runs.iter().sum::<u64>(), "l={l} s={s}");
    let most = runs.iter().copied().max().unwrap_or(0);
    assert!(
        most <= repetitions(l + 1, s).max(u64::from(l > 0)),
        "online l={l} s={s}: {most} repetitions"
    );
}

#[test]
fn online_schedules_are_valid_within_the_repetition_bound() {
    for l in 0..=400u64 {
        for s in 1..=8u64 {
            check_online(l, s);
        }
    }
    for (l, s) in [
        (1_000, 2),
        (1_000, 5),
        (1_000, 10),
        (2_002, 5),
        (4_096, 12),
        (9_999, 20),
        (10_000, 20),
        (10_000, 3),
    ] {
        check_online(l, s);
    }
}

#[test]
fn independent_schedules_run_each_step_once_untaped() {
    for l in 0..=50u64 {
        let (runs, forward) = simulate_any(Kind::Independent.schedule(1), l, 1).unwrap();
        assert_eq!(forward, l);
        assert!(runs.iter().all(|&r| r == 1));
    }
}

#[test]
fn a_fixed_point_loop_through_the_run_time() {
    // Five iterations, the last left by an exit: the partial iteration is
    // reversed once, then the last complete one until the measure falls
    // below 1e-3 of the seed's (halving: 10 reversals).
    let mut rt: Runtime<()> = Runtime::new();
    rt.begin(
        Kind::FixedPoint {
            tolerance: 1e-3,
            max_iterations: 100,
        },
        2,
        (),
    )
    .unwrap();
    let mut frames = 0usize;
    for _ in 0..5 {
        let r = rt.iteration().unwrap();
        frames -= r.drops.len();
        if r.code == STORE {
            frames += 1;
        }
        assert!(frames <= 2);
    }
    let r = rt.end(true).unwrap();
    frames -= r.drops.len();
    assert_eq!(frames, 2);
    assert!(rt.next_action().is_err(), "paused: nothing runs");
    rt.resume().unwrap();
    let mut d = 1.0;
    let mut seen = Vec::new();
    loop {
        let r = rt.next_action().unwrap();
        frames -= r.drops.len();
        seen.push((r.code, r.count));
        match r.code {
            MEASURE => rt.measure(d).unwrap(),
            ADJOINT => d /= 2.0,
            DONE => {
                let f = r.finished.unwrap();
                assert_eq!(f.schedule, "fixed-point");
                assert_eq!(f.adjoint_iterations, Some(10));
                assert_eq!(f.converged, Some(true));
                assert_eq!(f.max_repetitions, Some(1));
                assert_eq!(f.forward_steps, 5);
                break;
            }
            _ => {}
        }
    }
    assert_eq!(frames, 0);
    assert_eq!(
        &seen[..4],
        &[(RESTORE, 4), (TAPE, 4), (ADJOINT, 4), (MEASURE, 0)]
    );
    assert!(rt.is_empty());
}

/// The table of `docs/checkpointing.md` (online against offline forward
/// steps, 1,000 and 100,000 iterations, s = 2, 5, 10, 20, 50): printed
/// with `--nocapture`; online never below the offline minimum, and within
/// one more sweep of the loop above it (`l` more steps).
#[test]
fn online_against_offline_forward_steps() {
    for l in [1_000u64, 100_000] {
        for s in [2u64, 5, 10, 20, 50] {
            let (runs, online) = simulate_any(Kind::Online.schedule(s), l, s).unwrap();
            let offline = xaif_revolve::min_forward_steps(l, s);
            let most = runs.iter().copied().max().unwrap_or(0);
            println!(
                "| {l} | {s} | {offline} | {online} | {:.3} | {} | {most} |",
                online as f64 / offline.max(1) as f64,
                repetitions(l, s)
            );
            assert!(online >= offline && online <= offline + l, "l={l} s={s}");
        }
    }
}
