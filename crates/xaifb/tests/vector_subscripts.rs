//! Subscripts whose value is an integer array (issue 34, section 4): a
//! vector subscript selects a section, not one element, and its size may
//! be known only at run time. Derivative code is generated only where each
//! subscript selects one element; an index array of exactly one element
//! (`maxloc` of a vector) is taped whole, in a temporary of its shape.
//! Everything else is refused, located, by every transformation that would
//! write derivative code for it. So are the other values whose derivative
//! the intrinsics catalogue would get wrong: the sum of an active array and
//! complex values meeting active ones.

use std::path::{Path, PathBuf};
use std::process::Command;

use xaif_testkit::gen::ast::*;

fn xaifb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xaifb"))
}

fn scratch(name: &str) -> xaif_testkit::Scratch {
    xaif_testkit::Scratch::new("xaifb-vector-subscripts", name)
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Ran {
    let o = xaifb().args(args).output().unwrap();
    Ran {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn entries(text: &str) -> Vec<f64> {
    text.lines()
        .filter_map(|l| l.split_once('=').map(|(_, v)| v.trim()))
        .map(|v| v.replace(['D', 'd'], "E").parse::<f64>().unwrap())
        .collect()
}

/// The Jacobian `run FILE MODE-ARGS` prints for head(x(3), y(3)).
fn jacobian(file: &Path, mode: &[&str]) -> Vec<f64> {
    let mut args = vec!["run", path(file)];
    args.extend_from_slice(mode);
    args.extend_from_slice(&["--n", "3", "--m", "3"]);
    let r = run(&args);
    assert_eq!(r.code, Some(0), "{mode:?}: {}", r.stderr);
    entries(&r.stdout)
}

fn var(name: &str, role: Role, dims: Dims, extents: Vec<i64>) -> Var {
    Var {
        name: name.into(),
        role,
        dims,
        extents,
    }
}

fn at(v: VarId, subs: Vec<Expr>) -> Ref {
    Ref {
        var: v,
        subs: subs.into_iter().map(Sub::Elem).collect(),
    }
}

fn rd(r: Ref) -> Expr {
    Expr::r(r)
}

fn op(name: &'static str, args: Vec<Expr>) -> Expr {
    Expr::Op(name, args)
}

fn routine(
    name: &str,
    formals: Vec<Var>,
    locals: Vec<Var>,
    body: Vec<Stmt>,
    prologue: usize,
) -> Routine {
    Routine::plain(name, formals, locals, body, prologue)
}

fn head_formals() -> Vec<Var> {
    vec![
        var("X", Role::Active, Dims::Fixed(vec![3]), vec![3]),
        var("Y", Role::Active, Dims::Fixed(vec![3]), vec![3]),
    ]
}

/// What indexes `x` in [`indexed`].
#[derive(Clone, Copy, Debug)]
enum Index {
    /// An allocatable integer array, shaped at run time (one element).
    RunTime,
    /// An integer array of three elements.
    Three,
    /// A section of run-time length of a global index array.
    Section,
}

/// head(x(3), y(3)) reads and writes `x` and `y` through an integer array
/// subscript (`y(idx) = x(idx) * x(2)`, Fortran's elementwise section
/// assignment), or (`call`) passes `x(idx)` to a routine that reads it.
fn indexed(index: Index, call: bool) -> String {
    let (x, y) = (VarId::Formal(0), VarId::Formal(1));
    let ga = VarId::Global(0);
    let (idx, n) = (VarId::Local(0), VarId::Local(1));
    let (idx_var, subscript) = match index {
        Index::RunTime => (
            var("IDX", Role::Index, Dims::Alloc, vec![1]),
            rd(Ref::whole(idx)),
        ),
        Index::Three => (
            var("IDX", Role::Index, Dims::Fixed(vec![3]), vec![3]),
            rd(Ref::whole(idx)),
        ),
        Index::Section => (
            var("IDX", Role::Index, Dims::Fixed(vec![1]), vec![1]),
            rd(Ref {
                var: ga,
                subs: vec![Sub::Range(Expr::Int(1), Expr::var(n), None)],
            }),
        ),
    };
    let mut body: Vec<Stmt> = (1..=3)
        .map(|k| Stmt::Assign(at(y, vec![Expr::Int(k)]), Expr::Real(0.0)))
        .collect();
    for (k, v) in [(1, 3), (2, 1), (3, 2)] {
        body.push(Stmt::Assign(at(ga, vec![Expr::Int(k)]), Expr::Int(v)));
    }
    body.push(Stmt::Assign(Ref::whole(n), Expr::Int(1)));
    match index {
        Index::RunTime => body.push(Stmt::Assign(
            Ref::whole(idx),
            rd(Ref {
                var: ga,
                subs: vec![Sub::Range(Expr::Int(2), Expr::Int(2), None)],
            }),
        )),
        Index::Three => body.push(Stmt::Assign(Ref::whole(idx), rd(Ref::whole(ga)))),
        Index::Section => body.push(Stmt::Assign(Ref::whole(idx), Expr::Int(1))),
    }
    let prologue = body.len();
    let mut routines = Vec::new();
    if call {
        body.push(Stmt::Call {
            callee: 1,
            args: vec![
                Arg::Ref(at(x, vec![subscript.clone()])),
                Arg::Ref(at(y, vec![Expr::Int(3)])),
            ],
        });
        let (f, g) = (VarId::Formal(0), VarId::Formal(1));
        routines.push(routine(
            "sr",
            vec![
                var("F", Role::Active, Dims::Assumed, vec![1]),
                var("G", Role::Active, Dims::Scalar, vec![]),
            ],
            vec![],
            vec![Stmt::Assign(
                Ref::whole(g),
                op(
                    "mul_scal_scal",
                    vec![
                        op("sin_scal", vec![rd(at(f, vec![Expr::Int(1)]))]),
                        rd(at(f, vec![Expr::Int(1)])),
                    ],
                ),
            )],
            0,
        ));
    } else {
        body.push(Stmt::Assign(
            at(y, vec![subscript.clone()]),
            op(
                "mul_scal_scal",
                vec![rd(at(x, vec![subscript])), rd(at(x, vec![Expr::Int(2)]))],
            ),
        ));
    }
    body.push(Stmt::Assign(
        at(y, vec![Expr::Int(2)]),
        op("sin_scal", vec![rd(at(x, vec![Expr::Int(3)]))]),
    ));
    let head = routine(
        "head",
        head_formals(),
        vec![idx_var, var("N", Role::Index, Dims::Scalar, vec![])],
        body,
        prologue,
    );
    routines.insert(0, head);
    let count = routines.len();
    let p = Program {
        n: 3,
        m: 3,
        globals: vec![var("GA", Role::Index, Dims::Fixed(vec![3]), vec![3])],
        routines,
        own_global_symbol: vec![vec![false]; count],
    };
    xaif_testkit::gen::to_xaif(&p, "an integer array subscript")
}

/// A vector subscript of any size other than one (three elements, a
/// run-time number, a section of run-time length), in an assignment or in
/// an argument of a call the adjoint reverses, is refused by the adjoint
/// and the tangent transformations with the file, line, column, element
/// and statement, and no output file. (Before, each was taped and
/// propagated as one element, with exit 0: the adjoint pushed the index
/// array with `push_i_s0`, which the run-time cannot take, and of several
/// elements would differentiate one where the statement writes a
/// section.)
#[test]
fn vector_subscripts_are_refused_located() {
    let dir = scratch("refused");
    for index in [Index::RunTime, Index::Three, Index::Section] {
        for call in [false, true] {
            let name = format!("{index:?}-{call}");
            let input = write(&dir, &format!("{name}.xaif"), &indexed(index, call));
            let modes: &[&str] = if call {
                // The tangent passes the argument on unchanged: only the
                // adjoint tapes and reverses a call's subscripts.
                &["adjoint"]
            } else {
                &["adjoint", "tangent"]
            };
            for sub in modes {
                let out = dir.join(format!("{name}.{sub}.xaif"));
                let r = run(&[sub, path(&input), "-o", path(&out)]);
                assert_eq!(r.code, Some(1), "{name} {sub}: {}", r.stderr);
                assert!(!out.exists(), "{name} {sub}: output written");
                assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
                let e = &r.stderr;
                assert!(
                    e.contains(&format!("{}:", path(&input)))
                        && e.contains("routine `head`")
                        && e.contains("statement `")
                        && e.contains("` subscripted by")
                        && e.contains("(a vector subscript)"),
                    "{name} {sub}: {e}"
                );
                let size = match index {
                    Index::Three => "an integer array of 3 elements",
                    Index::RunTime | Index::Section => "an integer array of run-time size",
                };
                assert!(e.contains(size), "{name} {sub}: {e}");
                // Located to the line and column of the statement.
                let located = e
                    .split_once(&format!("{}:", path(&input)))
                    .map(|(_, rest)| rest.split(':').take(2).all(|n| n.parse::<u32>().is_ok()))
                    .unwrap_or(false);
                assert!(located, "{name} {sub}: {e}");
            }
        }
    }
}

/// head(x(3), y(3)) with `ta(maxloc(ta))`: the subscript is an index
/// array of one element, read and written in the same statement, so it is
/// saved before the statement (a temporary of its shape: Fortran assigns
/// no array to a scalar) and taped whole.
fn maxloc_program() -> String {
    let (x, y) = (VarId::Formal(0), VarId::Formal(1));
    let ta = VarId::Global(0);
    let ml = || op("maxloc_arr", vec![Expr::var(ta)]);
    let mut body: Vec<Stmt> = (1..=3)
        .map(|k| Stmt::Assign(at(y, vec![Expr::Int(k)]), Expr::Real(0.0)))
        .collect();
    body.extend([
        Stmt::Assign(at(ta, vec![Expr::Int(1)]), rd(at(x, vec![Expr::Int(1)]))),
        Stmt::Assign(
            at(ta, vec![Expr::Int(2)]),
            op(
                "mul_scal_scal",
                vec![rd(at(x, vec![Expr::Int(2)])), Expr::Real(2.0)],
            ),
        ),
        Stmt::Assign(at(ta, vec![Expr::Int(3)]), rd(at(x, vec![Expr::Int(3)]))),
    ]);
    let prologue = body.len();
    body.extend([
        // ta(maxloc(ta)) = sin(ta(1)) * x(1): the subscript reads ta,
        // which the statement writes.
        Stmt::Assign(
            at(ta, vec![ml()]),
            op(
                "mul_scal_scal",
                vec![
                    op("sin_scal", vec![rd(at(ta, vec![Expr::Int(1)]))]),
                    rd(at(x, vec![Expr::Int(1)])),
                ],
            ),
        ),
        // ta(1:1) = ta(maxloc(ta)) * x(3): sections of one element.
        Stmt::Assign(
            Ref {
                var: ta,
                subs: vec![Sub::Range(Expr::Int(1), Expr::Int(1), None)],
            },
            op(
                "mul_scal_scal",
                vec![rd(at(ta, vec![ml()])), rd(at(x, vec![Expr::Int(3)]))],
            ),
        ),
    ]);
    for k in 1..=3 {
        body.push(Stmt::Assign(
            at(y, vec![Expr::Int(k)]),
            rd(at(ta, vec![Expr::Int(k)])),
        ));
    }
    let head = routine("head", head_formals(), vec![], body, prologue);
    let p = Program {
        n: 3,
        m: 3,
        globals: vec![var("TA", Role::Active, Dims::Fixed(vec![3]), vec![3])],
        routines: vec![head],
        own_global_symbol: vec![vec![false]],
    };
    xaif_testkit::gen::to_xaif(&p, "a maxloc subscript")
}

/// The adjoint of `ta(maxloc(ta)) = …` gives, in split and joint mode,
/// the tangent's Jacobian, which agrees with divided differences; its
/// index temporaries are arrays of one element, taped with the rank-1
/// calls (the interpreter refuses a tape call whose `_s<rank>` differs
/// from its argument's rank, and an array assigned to a scalar). (Before,
/// the saved subscript was a scalar assigned `maxloc(ta)` and pushed with
/// `push_i_s0`: Fortran does not compile it.)
#[test]
fn a_maxloc_subscript_is_taped_whole() {
    let dir = scratch("maxloc");
    let input = write(&dir, "in.xaif", &maxloc_program());
    let fd = jacobian(&input, &["--fd"]);
    let tangent_file = dir.join("t.xaif");
    let r = run(&["tangent", path(&input), "-o", path(&tangent_file)]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let tangent = jacobian(&tangent_file, &["--mode", "tangent"]);
    assert!(tangent.iter().filter(|x| **x != 0.0).count() >= 3);
    for (t, d) in tangent.iter().zip(&fd) {
        assert!(
            (t - d).abs() <= 1e-5 * t.abs().max(1.0),
            "{tangent:?} versus {fd:?}"
        );
    }
    let adjoint_file = dir.join("a.xaif");
    let r = run(&["adjoint", path(&input), "-o", path(&adjoint_file)]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for mode in ["split", "joint"] {
        let a = jacobian(&adjoint_file, &["--mode", mode]);
        assert_eq!(a.len(), tangent.len());
        for (x, t) in a.iter().zip(&tangent) {
            assert!(
                (x - t).abs() <= 1e-12 * t.abs().max(1.0),
                "{mode}: {a:?} versus {tangent:?}"
            );
        }
    }
    let text = std::fs::read_to_string(&adjoint_file).unwrap();
    assert!(text.contains("\"push_i_s1\""), "no rank-1 index taping");
}

/// head(x(3), y(3)) with `y(1) = sum(ta) * x(3)`, `ta` computed from `x`:
/// the catalogue declares `sum_arr`'s partial passive, so following it
/// would drop the derivative through `ta` with exit 0 (the old tangent
/// did: d y(1) / d x(1) came out 0 where it is x(3)). Both refuse it,
/// located, and write nothing.
#[test]
fn the_sum_of_an_active_array_is_refused_located() {
    let (x, y) = (VarId::Formal(0), VarId::Formal(1));
    let ta = VarId::Global(0);
    let mut body: Vec<Stmt> = (1..=3)
        .map(|k| Stmt::Assign(at(y, vec![Expr::Int(k)]), Expr::Real(0.0)))
        .collect();
    for k in 1..=3 {
        body.push(Stmt::Assign(
            at(ta, vec![Expr::Int(k)]),
            rd(at(x, vec![Expr::Int(k)])),
        ));
    }
    let prologue = body.len();
    body.push(Stmt::Assign(
        at(y, vec![Expr::Int(1)]),
        op(
            "mul_scal_scal",
            vec![
                op("sum_arr", vec![Expr::var(ta)]),
                rd(at(x, vec![Expr::Int(3)])),
            ],
        ),
    ));
    let p = Program {
        n: 3,
        m: 3,
        globals: vec![var("TA", Role::Active, Dims::Fixed(vec![3]), vec![3])],
        routines: vec![routine("head", head_formals(), vec![], body, prologue)],
        own_global_symbol: vec![vec![false]],
    };
    let dir = scratch("sum");
    let input = write(
        &dir,
        "sum.xaif",
        &xaif_testkit::gen::to_xaif(&p, "the sum of an active array"),
    );
    for sub in ["tangent", "adjoint"] {
        let out = dir.join(format!("sum.{sub}.xaif"));
        let r = run(&[sub, path(&input), "-o", path(&out)]);
        assert_eq!(r.code, Some(1), "{sub}: {}", r.stderr);
        assert!(!out.exists(), "{sub}: output written");
        let e = &r.stderr;
        assert!(
            e.contains(&format!("{}:", path(&input)))
                && e.contains("sum_arr")
                && e.contains("passive"),
            "{sub}: {e}"
        );
        let located = e
            .split_once(&format!("{}:", path(&input)))
            .map(|(_, rest)| rest.split(':').take(2).all(|n| n.parse::<u32>().is_ok()))
            .unwrap_or(false);
        assert!(located, "{sub}: {e}");
    }
}

/// Asserts that tangent and adjoint both refuse `input` with exit 1, no
/// output, and a message that names the file with a line and column and
/// holds every one of `words`.
fn refused_located(dir: &Path, input: &Path, name: &str, words: &[&str]) {
    for sub in ["tangent", "adjoint"] {
        let out = dir.join(format!("{name}.{sub}.xaif"));
        let r = run(&[sub, path(input), "-o", path(&out)]);
        assert_eq!(r.code, Some(1), "{name} {sub}: {}", r.stderr);
        assert!(!out.exists(), "{name} {sub}: output written");
        let e = &r.stderr;
        let file = format!("{}:", path(input));
        assert!(
            e.contains(&file) && words.iter().all(|w| e.contains(w)),
            "{name} {sub}: {e}"
        );
        let located = e
            .split_once(&file)
            .map(|(_, rest)| rest.split(':').take(2).all(|n| n.parse::<u32>().is_ok()))
            .unwrap_or(false);
        assert!(located, "{name} {sub}: {e}");
    }
}

/// Asserts that the tangent, split and joint Jacobians of `input` agree
/// with its divided differences `fd`.
fn derivatives_match(dir: &Path, input: &Path, fd: &[f64]) {
    for (sub, mode) in [
        ("tangent", "tangent"),
        ("adjoint", "split"),
        ("adjoint", "joint"),
    ] {
        let out = dir.join(format!("passive.{sub}.xaif"));
        let r = run(&[sub, path(input), "-o", path(&out)]);
        assert_eq!(r.code, Some(0), "{sub}: {}", r.stderr);
        let j = jacobian(&out, &["--mode", mode]);
        assert_eq!(j.len(), fd.len(), "{mode}: {j:?}");
        for (a, b) in j.iter().zip(fd) {
            assert!(
                (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
                "{mode}: {j:?} vs {fd:?}"
            );
        }
    }
}

/// head(x(3), y(3)) whose `y(1)` is computed by `first` (reading `ZC`, a
/// scalar local declared complex) and `y(2) = x(2) * x(3)`.
fn complex_program(first: Vec<Stmt>, y1: Expr) -> String {
    let text = y1_program(first, y1);
    let declared = r#"symbol_id="ZC" kind="variable" type="real""#;
    assert!(text.contains(declared), "{text}");
    text.replace(declared, r#"symbol_id="ZC" kind="variable" type="complex""#)
}

/// head(x(3), y(3)) whose `y(1)` is computed by `first` (with a scalar
/// local `ZC`) and `y(2) = x(2) * x(3)`.
fn y1_program(first: Vec<Stmt>, y1: Expr) -> String {
    let (x, y) = (VarId::Formal(0), VarId::Formal(1));
    let mut body = first;
    body.push(Stmt::Assign(at(y, vec![Expr::Int(1)]), y1));
    body.push(Stmt::Assign(
        at(y, vec![Expr::Int(2)]),
        op(
            "mul_scal_scal",
            vec![rd(at(x, vec![Expr::Int(2)])), rd(at(x, vec![Expr::Int(3)]))],
        ),
    ));
    body.push(Stmt::Assign(at(y, vec![Expr::Int(3)]), Expr::Real(0.0)));
    let locals = vec![var("ZC", Role::Clean, Dims::Scalar, vec![])];
    let p = Program {
        n: 3,
        m: 3,
        globals: vec![],
        routines: vec![routine("head", head_formals(), locals, body, 0)],
        own_global_symbol: vec![vec![]],
    };
    xaif_testkit::gen::to_xaif(&p, "one computed output")
}

/// Derivatives are real: a complex value built from, or combined with, an
/// active value would be differentiated with the catalogue's partials of
/// complex arithmetic, which are those of real arithmetic (before this
/// check, `imag(complex(x1, x2))` got the tangent 1 with respect to `x1`
/// where divided differences give 0, exit 0), and a complex variable
/// assigned an active value dropped its derivative. Both transformations
/// refuse them, located; complex values that never meet an active one are
/// differentiated as before.
#[test]
fn active_values_in_complex_arithmetic_are_refused_located() {
    let x = VarId::Formal(0);
    let zc = VarId::Local(0);
    let x_ = |k| rd(at(x, vec![Expr::Int(k)]));
    let z = || Expr::var(zc);
    let refused = [
        (
            "parts",
            complex_program(
                vec![],
                op("imag_scal", vec![op("complex_scal", vec![x_(1), x_(2)])]),
            ),
            "complex_scal",
        ),
        (
            "mixed",
            complex_program(
                vec![Stmt::Assign(
                    Ref::whole(zc),
                    op("complex_scal", vec![Expr::Real(0.5), Expr::Real(0.25)]),
                )],
                op("abs_scal", vec![op("mul_scal_scal", vec![z(), x_(1)])]),
            ),
            "mul_scal_scal",
        ),
        (
            "stored",
            complex_program(
                vec![Stmt::Assign(Ref::whole(zc), x_(1))],
                op("mul_scal_scal", vec![op("real_scal", vec![z()]), x_(3)]),
            ),
            "complex variable",
        ),
    ];
    let dir = scratch("complex");
    for (name, text, what) in refused {
        let input = write(&dir, &format!("{name}.xaif"), &text);
        refused_located(&dir, &input, name, &[what, "complex"]);
    }
    // A complex value that never meets an active one: y(1) = |0.3 + 0.4i| x1
    // (the interpreter executes complex values in expressions, not
    // complex variables).
    let text = complex_program(
        vec![],
        op(
            "mul_scal_scal",
            vec![
                op(
                    "abs_scal",
                    vec![op("complex_scal", vec![Expr::Real(0.3), Expr::Real(0.4)])],
                ),
                x_(1),
            ],
        ),
    );
    let input = write(&dir, "passive.xaif", &text);
    let fd = jacobian(&input, &["--fd"]);
    assert!((fd[0] - 0.5).abs() < 1e-6, "{fd:?}");
    derivatives_match(&dir, &input, &fd);
}

/// `max`, `min`, `maxval` and `minval` in the front end's non-canonical
/// forms (meant for integers) and `transfer` have passive partials in the
/// catalogue although their real value follows an active real argument:
/// following the catalogue dropped the derivative with exit 0 (the old
/// tangent of `y(1) = nc_max(x(1), x(2)) * x(3)` gave 0 for `x(2)`, the
/// larger, where divided differences give `x(3)` = 1.5). Both transformations refuse them,
/// located; on passive values they stay as they are.
#[test]
fn intrinsics_whose_catalogue_partial_drops_a_derivative_are_refused_located() {
    let x = VarId::Formal(0);
    let x_ = |k| rd(at(x, vec![Expr::Int(k)]));
    let times_x3 = |e: Expr| op("mul_scal_scal", vec![e, x_(3)]);
    let refused = [
        (
            "nc_max_scal_scal",
            times_x3(op("nc_max_scal_scal", vec![x_(1), x_(2)])),
        ),
        (
            "nc_min_scal_scal",
            times_x3(op("nc_min_scal_scal", vec![x_(1), x_(2)])),
        ),
        ("nc_maxval", times_x3(op("nc_maxval", vec![Expr::var(x)]))),
        ("nc_minval", times_x3(op("nc_minval", vec![Expr::var(x)]))),
        (
            "transfer",
            times_x3(op("transfer", vec![x_(1), Expr::Real(0.0)])),
        ),
    ];
    let dir = scratch("passive-partials");
    for (name, y1) in refused {
        let input = write(&dir, &format!("{name}.xaif"), &y1_program(vec![], y1));
        refused_located(
            &dir,
            &input,
            name,
            &[format!("`{name}`").as_str(), "passive"],
        );
    }
    // On passive values: y(1) = max(0.25, 0.5) * x(3).
    let y1 = times_x3(op(
        "nc_max_scal_scal",
        vec![Expr::Real(0.25), Expr::Real(0.5)],
    ));
    let input = write(&dir, "passive.xaif", &y1_program(vec![], y1));
    let fd = jacobian(&input, &["--fd"]);
    assert!((fd[6] - 0.5).abs() < 1e-6, "{fd:?}");
    derivatives_match(&dir, &input, &fd);
}
