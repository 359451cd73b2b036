//! One test per construct the oracle executes, on the hand-made fixtures of
//! `fixtures/interp`: intrinsics with their edge cases, loop semantics,
//! argument passing, arrays, derivative propagators, inlinable calls and
//! the transitions of the split and joint templates.

use std::path::PathBuf;

use xaif_interp::exec::Actual;
use xaif_interp::harness::ArgSlot;
use xaif_interp::{compile, Flags, Harness, HarnessSpec, Machine, Mode, Prog, Template};

fn load(name: &str) -> Prog {
    let path: PathBuf = xaif_testkit::repo_root().join("fixtures/interp").join(name);
    let (p, source) = xaif_model::read_program_file(&path).unwrap_or_else(|e| panic!("{e}"));
    xaif_model::validate_program(&p, &source).unwrap_or_else(|e| panic!("{e}"));
    compile(&p, &source)
}

/// Runs `top(y)` with a real `y` of `m` elements (a scalar for `None`).
fn outputs(prog: &Prog, top: &str, m: Option<usize>) -> Vec<f64> {
    let spec = HarnessSpec {
        n: 0,
        m: m.unwrap_or(1),
        top: top.into(),
        args: vec![ArgSlot::Y { first: 1, size: m }],
        globals: Vec::new(),
        setup_calls: Vec::new(),
        x0: Vec::new(),
    };
    Harness::new(prog, spec)
        .evaluate(&[])
        .unwrap_or_else(|e| panic!("{top}: {e}"))
        .0
}

#[test]
fn intrinsics_and_their_edge_cases() {
    let prog = load("intrinsics.xaif");
    let pow5 = {
        let x: f64 = 1.1;
        x * ((x * x) * (x * x))
    };
    let cases: &[(&str, f64)] = &[
        ("idiv", 3.0),
        ("idivneg", -3.0),
        ("imodneg", -1.0),
        ("imodpos", 1.0),
        ("ipow", 1024.0),
        ("ipowneg", 0.0),
        ("ipowminus", -1.0),
        ("imin", 2.0),
        ("imax", 5.0),
        ("isign", -3.0),
        ("iabs", 4.0),
        ("ineg", -5.0),
        ("isub", -4.0),
        ("imixed", 1.5),
        ("rpowi", pow5),
        ("rpowneg", 0.25),
        ("rpowr", 2f64.powf(0.5)),
        ("rsignz", -3.0),
        ("rsign", 3.0),
        ("rmod", -1.5),
        ("rint", -2.0),
        ("rnint", 3.0),
        ("rnintneg", -3.0),
        ("rreal", 0.1f32 as f64),
        ("rsingle", 0.1f32 as f64),
        ("rdiv", 1.0 / 3.0),
        ("rmul", -3.0),
        ("rsin", 0.5f64.sin()),
        ("rcos", 0.5f64.cos()),
        ("rtan", 0.5f64.tan()),
        ("rasin", 0.5f64.asin()),
        ("racos", 0.5f64.acos()),
        ("ratan", 0.5f64.atan()),
        ("rsinh", 0.5f64.sinh()),
        ("rcosh", 0.5f64.cosh()),
        ("rtanh", 0.5f64.tanh()),
        ("rexp", 0.5f64.exp()),
        ("rlog", 0.5f64.ln()),
        ("rlogten", 0.5f64.log10()),
        ("rsqrt", 2f64.sqrt()),
        ("rabs", 1.5),
        ("rmin", 1.5),
        ("rmax", 2.0),
        ("rneg", -1.5),
        ("ble", 1.0),
        ("blt", 0.0),
        ("beq", 1.0),
        ("bne", 1.0),
        ("bge", 0.0),
        ("bgt", 1.0),
        ("band", 0.0),
        ("bor", 1.0),
        ("bnot", 1.0),
        ("bxor", 0.0),
        ("seq", 1.0),
        ("sne", 1.0),
        ("slt", 1.0),
        ("sge", 1.0),
        ("sle", 0.0),
    ];
    for (name, expected) in cases {
        let y = outputs(&prog, &format!("c_{name}"), None);
        assert_eq!(y, [*expected], "c_{name}");
    }
}

#[test]
fn loop_and_branch_semantics() {
    let y = outputs(&load("loops.xaif"), "loops", Some(12));
    let expected = [
        5.0,  // do i = 1, 5: five trips
        6.0,  // i after the loop
        4.0,  // do i = 10, 1, -3: 10, 7, 4, 1
        -2.0, // i after it
        0.0,  // do i = 5, 1: no trip
        5.0,  // i keeps its initial value
        4.0,  // condition i /= 7 with run-time step 2: a DO loop, (7-1+2)/2 trips
        3.0,  // the bound is fixed on entry although the body changes it
        3.0,  // while k < 3
        1.0,  // a repeat loop runs its body once
        20.0, // select case 2
        1.0,  // If on a logical, through Goto and Label
    ];
    assert_eq!(y, expected);
}

#[test]
fn argument_passing() {
    let y = outputs(&load("calls.xaif"), "calls", Some(9));
    let expected = [
        2.0,  // by reference: the callee increments the caller's variable
        5.0,  // sequence association: arr(2) passed to v(2) sees arr(2:3)
        11.0, // a matrix row (non-contiguous) copied in and out of v(3)
        8.0,  // rank change: mat(2,3) seen as v(4); v(3) is mat(1,2)
        2.0,  // optional argument absent
        1.0,  // optional argument present
        7.0,  // G_1 and G_2 are one global
        13.0, // assumed shape: size 3, lower bound 1
        6.0,  // host association doubles the host's local; lbound(z) is 0
    ];
    assert_eq!(y, expected);
}

#[test]
fn array_operations() {
    let y = outputs(&load("arrays.xaif"), "arrays", Some(12));
    let expected = [
        11.0, 7.0, -1.0, 3.0, -10.0, 20.0, 6.0, 3.0, 2.0, 2.0, 2.0, 2.0,
    ];
    assert_eq!(y, expected);
}

fn tangent(prog: &Prog, n: usize, m: usize) -> Vec<Vec<f64>> {
    let mut spec = HarnessSpec::generic(n, m);
    spec.top = "head".into();
    let out = Harness::new(prog, spec)
        .run(Mode::Tangent)
        .unwrap_or_else(|e| panic!("{e}"));
    (1..=m)
        .map(|k| (1..=n).map(|i| out.jacobian.get(k, i)).collect())
        .collect()
}

#[test]
fn derivative_propagators() {
    let j = tangent(&load("propagators.xaif"), 3, 6);
    let expected = vec![
        vec![1.0, 0.0, 0.0],
        vec![0.0, -1.0, 0.0],
        vec![3.0, 0.0, 2.0],
        vec![1.0, 1.0, -1.0],
        vec![1.0, 4.0, 0.0],
        vec![0.0, 0.0, 0.0],
    ];
    assert_eq!(j, expected);
}

#[test]
fn inlinable_calls() {
    let prog = load("inlinable.xaif");
    let spec = HarnessSpec::generic(3, 10);
    let (y, _) = Harness::new(&prog, spec)
        .evaluate(&[0.5, 1.0, 1.5])
        .unwrap();
    // Tapes are LIFO, blocks keep their element order, checkpoints come
    // back in reverse, oad_convert copies the value, AllocateMatching shapes.
    assert_eq!(&y[..8], &[2.0, 1.0, 3.0, 5.0, 6.0, 7.0, 1.0, 3.0]);
    let j = tangent(&prog, 3, 10);
    // a(1).d = 3 x1.d + x2.d (Saxpy, IncDeriv); a(2).d = -x3.d (DecDeriv);
    // a(3).d zeroed.
    assert_eq!(j[8], [3.0, 1.0, 0.0]);
    assert_eq!(j[9], [0.0, 0.0, -1.0]);
    assert!(j[..8].iter().all(|row| row.iter().all(|x| *x == 0.0)));
}

/// Runs `tmain` with the given flags under `template` and returns the
/// placeholder trace (10+N for tmain's placeholder N, 20+N for tsub's).
fn trace(template: Template, calls: &[Flags]) -> Vec<i64> {
    let prog = load("templates.xaif");
    let main = prog.routine_by_fortran_name("tmain").unwrap();
    let mut m = Machine::new(&prog, template, 1_000_000);
    let place = m.global_place("trace").unwrap();
    for flags in calls {
        m.flags = *flags;
        m.call(main, Vec::<Actual>::new()).unwrap();
    }
    let mut t = m.mem.get(place.buf, place.offset).as_int().unwrap();
    let mut out = Vec::new();
    while t > 0 {
        out.push(t % 100);
        t /= 100;
    }
    out.reverse();
    out
}

#[test]
fn split_template_runs_one_placeholder_per_flag() {
    let plain = Flags::PLAIN;
    let tape = Flags {
        tape: true,
        ..Flags::NONE
    };
    let adjoint = Flags {
        adjoint: true,
        ..Flags::NONE
    };
    assert_eq!(trace(Template::Split, &[plain]), [11, 21]);
    assert_eq!(trace(Template::Split, &[tape, adjoint]), [12, 22, 13, 23]);
}

#[test]
fn joint_template_state_machine() {
    let both = Flags {
        tape: true,
        adjoint: true,
        ..Flags::NONE
    };
    // tmain tapes (2); tsub called from there sees {arg_store, plain}:
    // stores its checkpoint (4) and runs plainly (1). Then tmain's adjoint
    // (3); tsub called from there sees {arg_restore, tape}: restores (6),
    // tapes (2) and reverses itself at once (3).
    assert_eq!(
        trace(Template::Joint, &[both]),
        [12, 24, 21, 13, 26, 22, 23]
    );
    // Plain: run 1 with arg_store cleared, flags restored afterwards.
    assert_eq!(trace(Template::Joint, &[Flags::PLAIN]), [11, 21]);
    let store_plain = Flags {
        arg_store: true,
        plain: true,
        ..Flags::NONE
    };
    // A callee reached from a plain run sees {plain} only: arg_store is cleared.
    assert_eq!(trace(Template::Joint, &[store_plain]), [14, 11, 21]);
}

/// Runs `top(y)` with a small step budget and returns the error.
fn refusal(prog: &Prog, top: &str) -> xaif_interp::InterpError {
    let spec = HarnessSpec {
        n: 0,
        m: 1,
        top: top.into(),
        args: vec![ArgSlot::Y {
            first: 1,
            size: None,
        }],
        globals: Vec::new(),
        setup_calls: Vec::new(),
        x0: Vec::new(),
    };
    let mut h = Harness::new(prog, spec);
    h.limits = xaif_interp::Limits::with_steps(10_000);
    match h.evaluate(&[]) {
        Ok((y, _)) => panic!("{top} ran and gave {y:?}"),
        Err(e) => e,
    }
}

#[test]
fn what_cannot_be_executed_is_refused_with_its_line() {
    use xaif_interp::ErrorKind as K;
    let prog = load("refusals.xaif");
    type Check = fn(&K) -> bool;
    let cases: Vec<(&str, Check)> = vec![
        (
            "r_read",
            |k| matches!(k, K::UntranslatedStatement(s) if s.contains("READ")),
        ),
        (
            "r_pointer",
            |k| matches!(k, K::UntranslatedStatement(s) if s.contains("OPR_ISTORE")),
        ),
        (
            "r_external",
            |k| matches!(k, K::NoBody(name) if name == "ext"),
        ),
        ("r_bounds", |k| {
            matches!(
                k,
                K::OutOfBounds {
                    index: 3,
                    lo: 1,
                    hi: 2,
                    dim: 1
                }
            )
        }),
        ("r_underflow", |k| matches!(k, K::Underflow(_))),
        (
            "r_dropped",
            |k| matches!(k, K::UntranslatedStatement(s) if s.contains("OPR_STID")),
        ),
        ("r_runaway", |k| matches!(k, K::StepBudget(10_000))),
        (
            "r_unknown",
            |k| matches!(k, K::UnknownIntrinsic(name) if name == "bessel_scal"),
        ),
    ];
    for (top, expected) in cases {
        let e = refusal(&prog, top);
        assert!(expected(&e.kind), "{top}: unexpected {e}");
        assert!(e.line > 0, "{top}: no line in {e}");
        assert!(
            e.routine.as_deref() == Some(top),
            "{top}: routine not named in {e}"
        );
    }
    // A local that a translated statement assigns is fine even in a routine
    // with dropped stores.
    assert_eq!(outputs(&prog, "r_notinert", None), [4.0]);
}

#[test]
fn inert_markers_option_executes_markers_as_no_ops() {
    let path = xaif_testkit::repo_root().join("fixtures/interp/refusals.xaif");
    let (p, source) = xaif_model::read_program_file(&path).unwrap();
    let prog = xaif_interp::compile_with(
        &p,
        &source,
        xaif_interp::CompileOptions {
            inert_markers: true,
        },
    );
    assert_eq!(outputs(&prog, "r_read", None), [1.0]);
    assert_eq!(outputs(&prog, "r_dropped", None), [0.0]);
}
