//! Front-end programs with the loops real models have, written with the
//! generator's syntax ([`crate::gen::ast`]) and XAIF writer, for the tests
//! and measurements of the loop marks (`docs/checkpointing.md`):
//!
//! - [`time_loop`]: a time loop of a nonlinear two-variable state, as a
//!   `do while`, a post-test loop, or a `DO` left by an exit (before,
//!   inside or after the body), of any number of iterations;
//! - [`fixed_point`]: a contraction `z ← F(z, p)` iterated until its change
//!   falls below 1e-15, as a `do while` or a `DO` left by an exit, with
//!   [`fixed_point_derivative`], the implicit-function-theorem Jacobian
//!   of its output;
//! - [`independent`]: a loop over cells whose iterations are independent
//!   (a private temporary, a sum reduction), and [`dependent`] ones that
//!   carry a dependence in one of several forms.
//!
//! Each program is `head(x(n), y(m))`; [`loop_lines`] gives the lines its
//! loops are marked by.

use crate::gen::ast::{Dims, Expr, Program, Ref, Role, Routine, Stmt, Sub, Var, VarId};

/// How a time loop ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// `do while (k < n)`.
    While,
    /// `do; …; end do while (k < n)` (at least one iteration).
    PostTest,
    /// `do i = 1, big; if (k >= n) exit; …` (the exit first).
    ExitFirst,
    /// The exit between the body's two halves.
    ExitMiddle,
    /// The exit last.
    ExitLast,
}

fn var(name: &str, role: Role, dims: Dims) -> Var {
    let extents = match &dims {
        Dims::Fixed(e) => e.clone(),
        _ => Vec::new(),
    };
    Var {
        name: name.into(),
        role,
        dims,
        extents,
    }
}

fn scalar(name: &str, role: Role) -> Var {
    var(name, role, Dims::Scalar)
}

fn l(k: usize) -> VarId {
    VarId::Local(k)
}

fn elem(v: VarId, i: Expr) -> Ref {
    Ref {
        var: v,
        subs: vec![Sub::Elem(i)],
    }
}

fn e(v: VarId) -> Expr {
    Expr::var(v)
}

fn x(i: i64) -> Expr {
    Expr::r(elem(VarId::Formal(0), Expr::Int(i)))
}

fn y(i: i64) -> Ref {
    elem(VarId::Formal(1), Expr::Int(i))
}

fn op(name: &'static str, args: Vec<Expr>) -> Expr {
    Expr::Op(name, args)
}

fn add(a: Expr, b: Expr) -> Expr {
    op("add_scal_scal", vec![a, b])
}

fn mul(a: Expr, b: Expr) -> Expr {
    op("mul_scal_scal", vec![a, b])
}

fn head(n: usize, m: usize, locals: Vec<Var>, body: Vec<Stmt>, unstructured: bool) -> Routine {
    let formals = vec![
        var("X", Role::Active, Dims::Fixed(vec![n as i64])),
        var("Y", Role::Active, Dims::Fixed(vec![m as i64])),
    ];
    Routine {
        name: "head".into(),
        written: vec![false, true],
        out: vec![false, false],
        optional: vec![false, false],
        formals,
        locals,
        body,
        mark_unstructured: unstructured,
        side_effect_lists: true,
        kernel: false,
        prologue: 0,
    }
}

fn program(n: usize, m: usize, routines: Vec<Routine>) -> Program {
    let own = vec![Vec::new(); routines.len()];
    Program {
        n,
        m,
        globals: Vec::new(),
        routines,
        own_global_symbol: own,
    }
}

/// A time loop of `n` iterations ending as `ending`: `head(x(3), y(2))`,
/// state `u, v` from `x(1), x(2)`, parameter `p = x(3)`; each iteration
/// `w = u + 0.01 sin(v) p; v = v + 0.01 cos(u) u; u = w`, counted by `k`.
/// `unstructured` marks the routine `structured="0"` (as a front end does
/// for a loop left by an exit).
pub fn time_loop(n: i64, ending: Ending, unstructured: bool) -> Program {
    let (u, v, w, p, k, i) = (l(0), l(1), l(2), l(3), l(4), l(5));
    let locals = vec![
        scalar("U", Role::Active),
        scalar("V", Role::Active),
        scalar("W", Role::Active),
        scalar("P", Role::Active),
        scalar("K", Role::Count),
        scalar("I", Role::Loop),
    ];
    let first = vec![Stmt::Assign(
        Ref::whole(w),
        add(
            e(u),
            mul(Expr::Real(0.01), mul(op("sin_scal", vec![e(v)]), e(p))),
        ),
    )];
    let second = vec![
        Stmt::Assign(
            Ref::whole(v),
            add(
                e(v),
                mul(Expr::Real(0.01), mul(op("cos_scal", vec![e(u)]), e(u))),
            ),
        ),
        Stmt::Assign(Ref::whole(u), e(w)),
        Stmt::Assign(Ref::whole(k), add(e(k), Expr::Int(1))),
    ];
    let more = op("less_than", vec![e(k), Expr::Int(n)]);
    let done = op("greater_or_equal", vec![e(k), Expr::Int(n)]);
    let exit = Stmt::Exit(done);
    let body: Vec<Stmt> = match ending {
        Ending::While | Ending::PostTest => [first, second].concat(),
        Ending::ExitFirst => [vec![exit], first, second].concat(),
        Ending::ExitMiddle => [first, vec![exit], second].concat(),
        Ending::ExitLast => [first, second, vec![exit]].concat(),
    };
    let looped = match ending {
        Ending::While => Stmt::While {
            cond: more,
            body,
            post: false,
        },
        Ending::PostTest => Stmt::While {
            cond: more,
            body,
            post: true,
        },
        _ => Stmt::Do {
            var: i,
            lo: Expr::Int(1),
            hi: Expr::Int(2_000_000_000),
            step: crate::gen::ast::Step::Up,
            body,
            explicit: false,
        },
    };
    let body = vec![
        Stmt::Assign(Ref::whole(u), x(1)),
        Stmt::Assign(Ref::whole(v), x(2)),
        Stmt::Assign(Ref::whole(p), x(3)),
        Stmt::Assign(Ref::whole(k), Expr::Int(0)),
        looped,
        Stmt::Assign(y(1), mul(e(u), e(v))),
        Stmt::Assign(y(2), add(e(v), mul(e(p), e(u)))),
    ];
    program(3, 2, vec![head(3, 2, locals, body, unstructured)])
}

/// Time loops nested in a time loop: `head(x(2), y(2))`, state `u` from
/// `x(1)`, parameter `p = x(2)`; `do while (k < outer)` holds `do i = 1,
/// 1000` left by an exit after `inner` iterations of `u = u + 0.01 sin(u)
/// p`; then `y(1) = u`, `y(2) = p u`. Marked together, the inner loop's
/// exit must leave only the inner loop.
pub fn nested_time_loops(outer: i64, inner: i64) -> Program {
    nested_time_loops_with(outer, inner, false)
}

/// [`nested_time_loops`] with the outer loop counted (`do k = 1, outer`)
/// when `counted`: the inner loop's exit does not make its trip count
/// unknown, so it is checkpointed by the binomial schedule.
pub fn nested_time_loops_with(outer: i64, inner: i64, counted: bool) -> Program {
    let (u, p, k, j, i) = (l(0), l(1), l(2), l(3), l(4));
    let locals = vec![
        scalar("U", Role::Active),
        scalar("P", Role::Active),
        scalar("K", Role::Count),
        scalar("J", Role::Count),
        scalar("I", Role::Loop),
    ];
    let step = Stmt::Assign(
        Ref::whole(u),
        add(
            e(u),
            mul(Expr::Real(0.01), mul(op("sin_scal", vec![e(u)]), e(p))),
        ),
    );
    let inner_loop = Stmt::Do {
        var: i,
        lo: Expr::Int(1),
        hi: Expr::Int(1000),
        step: crate::gen::ast::Step::Up,
        body: vec![
            step,
            Stmt::Assign(Ref::whole(j), add(e(j), Expr::Int(1))),
            Stmt::Exit(op("greater_or_equal", vec![e(j), Expr::Int(inner)])),
        ],
        explicit: false,
    };
    let outer_loop = if counted {
        Stmt::Do {
            var: k,
            lo: Expr::Int(1),
            hi: Expr::Int(outer),
            step: crate::gen::ast::Step::Up,
            body: vec![Stmt::Assign(Ref::whole(j), Expr::Int(0)), inner_loop],
            explicit: false,
        }
    } else {
        Stmt::While {
            cond: op("less_than", vec![e(k), Expr::Int(outer)]),
            body: vec![
                Stmt::Assign(Ref::whole(j), Expr::Int(0)),
                inner_loop,
                Stmt::Assign(Ref::whole(k), add(e(k), Expr::Int(1))),
            ],
            post: false,
        }
    };
    let body = vec![
        Stmt::Assign(Ref::whole(u), x(1)),
        Stmt::Assign(Ref::whole(p), x(2)),
        Stmt::Assign(Ref::whole(k), Expr::Int(0)),
        outer_loop,
        Stmt::Assign(y(1), e(u)),
        Stmt::Assign(y(2), mul(e(p), e(u))),
    ];
    program(2, 2, vec![head(2, 2, locals, body, true)])
}

/// How a fixed-point loop ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixedPointForm {
    /// `do while (err > 1e-15 .and. it < 200)`.
    While,
    /// `do it = 1, 200; …; if (err <= 1e-15) exit; end do`.
    Exit,
}

/// The contraction `z1 ← a cos(z2) + p1`, `z2 ← b sin(z1) + c p1 p2` with
/// `p = x(1:2)`, from `z = 0`, until the change `|Δz1| + |Δz2|` is at most
/// 1e-15 (200 iterations at most); then `y(1) = z1`, `y(2) = z2 x(3)`.
/// `rates = (a, b, c)`.
pub fn fixed_point(form: FixedPointForm, rates: (f64, f64, f64), unstructured: bool) -> Program {
    fixed_point_limited(form, rates, unstructured, 200)
}

/// [`fixed_point`] with at most `limit` iterations instead of 200: with 0
/// or 1, the unmarked adjoint tapes the code around the loop and no or one
/// iteration (what a fixed-point loop's adjoint may hold at once).
pub fn fixed_point_limited(
    form: FixedPointForm,
    rates: (f64, f64, f64),
    unstructured: bool,
    limit: i64,
) -> Program {
    let (z1, z2, w1, w2, err, it) = (l(0), l(1), l(2), l(3), l(4), l(5));
    let locals = vec![
        scalar("Z1", Role::Active),
        scalar("Z2", Role::Active),
        scalar("W1", Role::Active),
        scalar("W2", Role::Active),
        scalar("ERR", Role::Active),
        scalar("IT", Role::Count),
    ];
    let (a, b, c) = rates;
    let mut body = vec![
        Stmt::Assign(
            Ref::whole(w1),
            add(mul(Expr::Real(a), op("cos_scal", vec![e(z2)])), x(1)),
        ),
        Stmt::Assign(
            Ref::whole(w2),
            add(
                mul(Expr::Real(b), op("sin_scal", vec![e(z1)])),
                mul(Expr::Real(c), mul(x(1), x(2))),
            ),
        ),
        Stmt::Assign(
            Ref::whole(err),
            add(
                op("abs_scal", vec![op("sub_scal_scal", vec![e(w1), e(z1)])]),
                op("abs_scal", vec![op("sub_scal_scal", vec![e(w2), e(z2)])]),
            ),
        ),
        Stmt::Assign(Ref::whole(z1), e(w1)),
        Stmt::Assign(Ref::whole(z2), e(w2)),
    ];
    let looped = match form {
        FixedPointForm::While => {
            body.push(Stmt::Assign(Ref::whole(it), add(e(it), Expr::Int(1))));
            Stmt::While {
                cond: op(
                    "and",
                    vec![
                        op("greater_than", vec![e(err), Expr::Real(1e-15)]),
                        op("less_than", vec![e(it), Expr::Int(limit)]),
                    ],
                ),
                body,
                post: false,
            }
        }
        FixedPointForm::Exit => {
            body.push(Stmt::Exit(op(
                "less_or_equal",
                vec![e(err), Expr::Real(1e-15)],
            )));
            Stmt::Do {
                var: it,
                lo: Expr::Int(1),
                hi: Expr::Int(limit),
                step: crate::gen::ast::Step::Up,
                body,
                explicit: false,
            }
        }
    };
    let body = vec![
        Stmt::Assign(Ref::whole(z1), Expr::Real(0.0)),
        Stmt::Assign(Ref::whole(z2), Expr::Real(0.0)),
        Stmt::Assign(Ref::whole(err), Expr::Real(1.0)),
        Stmt::Assign(Ref::whole(it), Expr::Int(0)),
        looped,
        Stmt::Assign(y(1), e(z1)),
        Stmt::Assign(y(2), mul(e(z2), x(3))),
    ];
    program(3, 2, vec![head(3, 2, locals, body, unstructured)])
}

/// The Jacobian (row-major, 2 × 3) of [`fixed_point`]'s output at `x`,
/// from the implicit function theorem at the fixed point `z*` (found by
/// iterating `F` to convergence in `f64`): `dz/dp = (I − F_z)^{−1} F_p`.
pub fn fixed_point_derivative(x: [f64; 3], rates: (f64, f64, f64)) -> [f64; 6] {
    let (a, b, c) = rates;
    let (p1, p2) = (x[0], x[1]);
    let (mut z1, mut z2) = (0.0f64, 0.0f64);
    for _ in 0..10_000 {
        let w1 = a * z2.cos() + p1;
        let w2 = b * z1.sin() + c * p1 * p2;
        let done = w1 == z1 && w2 == z2;
        z1 = w1;
        z2 = w2;
        if done {
            break;
        }
    }
    // F_z = [[0, -a sin z2], [b cos z1, 0]]; I - F_z.
    let (m11, m12, m21, m22) = (1.0, a * z2.sin(), -b * z1.cos(), 1.0);
    let det = m11 * m22 - m12 * m21;
    let inv = [m22 / det, -m12 / det, -m21 / det, m11 / det];
    // F_p = [[1, 0], [c p2, c p1]].
    let fp = [1.0, 0.0, c * p2, c * p1];
    let dz = [
        inv[0] * fp[0] + inv[1] * fp[2],
        inv[0] * fp[1] + inv[1] * fp[3],
        inv[2] * fp[0] + inv[3] * fp[2],
        inv[2] * fp[1] + inv[3] * fp[3],
    ];
    // y1 = z1, y2 = z2 x3.
    [dz[0], dz[1], 0.0, dz[2] * x[2], dz[3] * x[2], z2]
}

/// A loop over `cells` cells whose iterations are independent:
/// `head(x(cells + 1), y(cells + 1))`, `p = x(cells + 1)`, each iteration
/// `t = x(i) x(i); y(i) = sin(t) p + x(i); s = s + t p`, then `y(cells +
/// 1) = s`.
pub fn independent(cells: i64) -> Program {
    cell_loop(cells, true)
}

/// [`independent`] without its sum reduction (`y(cells + 1) = p`): a loop
/// that carries no active state from one iteration to the next.
pub fn private_cells(cells: i64) -> Program {
    cell_loop(cells, false)
}

fn cell_loop(cells: i64, reduction: bool) -> Program {
    let (i, t, p, s) = (l(0), l(1), l(2), l(3));
    let n = cells as usize + 1;
    let locals = vec![
        scalar("I", Role::Loop),
        scalar("T", Role::Active),
        scalar("P", Role::Active),
        scalar("S", Role::Active),
    ];
    let xi = || Expr::r(elem(VarId::Formal(0), e(i)));
    let mut body = vec![
        Stmt::Assign(Ref::whole(t), mul(xi(), xi())),
        Stmt::Assign(
            elem(VarId::Formal(1), e(i)),
            add(mul(op("sin_scal", vec![e(t)]), e(p)), xi()),
        ),
    ];
    if reduction {
        body.push(Stmt::Assign(Ref::whole(s), add(e(s), mul(e(t), e(p)))));
    } else {
        body.push(Stmt::Assign(Ref::whole(s), e(p)));
    }
    let body = vec![
        Stmt::Assign(Ref::whole(p), x(cells + 1)),
        Stmt::Assign(Ref::whole(s), Expr::Real(0.0)),
        Stmt::Do {
            var: i,
            lo: Expr::Int(1),
            hi: Expr::Int(cells),
            step: crate::gen::ast::Step::Up,
            body,
            explicit: false,
        },
        Stmt::Assign(y(cells + 1), e(s)),
    ];
    program(n, n, vec![head(n, n, locals, body, false)])
}

/// A dependence an iteration of a cell loop carries to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carried {
    /// `a(i) = a(i − 1) + x(i)`: the previous element.
    PreviousElement,
    /// `c = 0.5 c + x(i)`: a scalar carried along.
    Scalar,
    /// `call bump(a)`, which writes all of `a`, and `y(i) = a(i)`: an
    /// array written through a callee.
    Callee,
}

/// A cell loop like [`independent`] whose iterations carry `dependence`,
/// and the statement ids of the statement that writes the shared variable
/// and of one that reads it in another iteration.
pub fn dependent(cells: i64, dependence: Carried) -> Program {
    let (i, a, c) = (l(0), l(1), l(2));
    let n = cells as usize;
    let locals = vec![
        scalar("I", Role::Loop),
        var("A", Role::Active, Dims::Fixed(vec![n as i64 + 1])),
        scalar("C", Role::Active),
    ];
    let xi = || Expr::r(elem(VarId::Formal(0), e(i)));
    let ai = |off: i64| {
        elem(
            a,
            if off == 0 {
                e(i)
            } else {
                add(e(i), Expr::Int(off))
            },
        )
    };
    let mut routines = Vec::new();
    let body = match dependence {
        Carried::PreviousElement => vec![
            Stmt::Assign(ai(1), add(Expr::r(ai(0)), xi())),
            Stmt::Assign(elem(VarId::Formal(1), e(i)), Expr::r(ai(1))),
        ],
        Carried::Scalar => vec![
            Stmt::Assign(Ref::whole(c), add(mul(Expr::Real(0.5), e(c)), xi())),
            Stmt::Assign(elem(VarId::Formal(1), e(i)), e(c)),
        ],
        Carried::Callee => {
            let formal = var("B", Role::Active, Dims::Fixed(vec![n as i64 + 1]));
            routines.push(Routine {
                name: "bump".into(),
                written: vec![true],
                out: vec![false],
                optional: vec![false],
                formals: vec![formal],
                locals: Vec::new(),
                body: vec![Stmt::Assign(
                    Ref::whole(VarId::Formal(0)),
                    mul(Expr::Real(1.5), Expr::var(VarId::Formal(0))),
                )],
                mark_unstructured: false,
                side_effect_lists: true,
                kernel: false,
                prologue: 0,
            });
            vec![
                Stmt::Call {
                    callee: 1,
                    args: vec![crate::gen::ast::Arg::Ref(Ref::whole(a))],
                },
                Stmt::Assign(elem(VarId::Formal(1), e(i)), add(Expr::r(ai(0)), xi())),
            ]
        }
    };
    let mut body = vec![
        Stmt::Assign(Ref::whole(c), Expr::Real(0.0)),
        Stmt::Assign(Ref::whole(a), Expr::Real(1.0)),
        Stmt::Do {
            var: i,
            lo: Expr::Int(1),
            hi: Expr::Int(cells),
            step: crate::gen::ast::Step::Up,
            body,
            explicit: false,
        },
    ];
    body.push(Stmt::Assign(y(1), add(Expr::r(y(1)), e(c))));
    let mut all = vec![head(n, n, locals, body, false)];
    all.extend(routines);
    program(n, n, all)
}

/// `depth` counted loops nested in one another in `head(x(2), y(2))`,
/// each of `trips` iterations over its own counter, the innermost
/// `y(1) = sin(y(1)) x(1) + x(2)`: the deep marked nests of
/// `docs/limits.md`. Loop `k` (outermost first) is at
/// [`loop_lines`]`[k]`.
pub fn nested_loops(depth: usize, trips: i64) -> Program {
    let locals: Vec<Var> = (0..depth)
        .map(|k| scalar(&format!("I{k}"), Role::Loop))
        .collect();
    let y1 = || Expr::r(y(1));
    let mut body = vec![Stmt::Assign(
        y(1),
        add(mul(op("sin_scal", vec![y1()]), x(1)), x(2)),
    )];
    for k in (0..depth).rev() {
        body = vec![Stmt::Do {
            var: l(k),
            lo: Expr::Int(1),
            hi: Expr::Int(trips),
            step: crate::gen::ast::Step::Up,
            body,
            explicit: false,
        }];
    }
    let body = [
        vec![Stmt::Assign(y(1), x(1)), Stmt::Assign(y(2), x(2))],
        body,
    ]
    .concat();
    program(2, 2, vec![head(2, 2, locals, body, false)])
}

/// A counted loop `do t = lo, hi` (`, -1` when `down`) around `y(1) =
/// y(1) x(1)` in `head(x(2), y(2))`: loops whose bounds are at the ends
/// of the integers.
pub fn bounded_loop(lo: i64, hi: i64, down: bool) -> Program {
    let locals = vec![scalar("T", Role::Loop)];
    let body = vec![
        Stmt::Assign(y(1), x(1)),
        Stmt::Assign(y(2), x(2)),
        Stmt::Do {
            var: l(0),
            lo: Expr::Int(lo),
            hi: Expr::Int(hi),
            step: if down {
                crate::gen::ast::Step::Down
            } else {
                crate::gen::ast::Step::Up
            },
            body: vec![Stmt::Assign(y(1), mul(Expr::r(y(1)), x(1)))],
            explicit: false,
        },
    ];
    program(2, 2, vec![head(2, 2, locals, body, false)])
}

/// `do t = lo, hi, step` with the bounds and the step in variables set
/// just before the loop (known only at run time; `step` ±1 is written as
/// Fortran's default step, the condition `t <= hi` or `t >= hi`, any
/// other as a run-time stride) around `y(k) = y(k) x(k)`, `k = 1 +
/// abs(mod(t, 2))`, in `head(x(2), y(2))`: the trip count and every value
/// of `t` show in the Jacobian. The loops of `docs/limits.md` whose
/// bounds are near the ends of the integers.
pub fn runtime_bounded_loop(lo: i64, hi: i64, step: i64) -> Program {
    let locals = vec![
        scalar("T", Role::Loop),
        scalar("LO", Role::Count),
        scalar("HI", Role::Count),
        scalar("ST", Role::Count),
    ];
    let k = || {
        add(
            Expr::Int(1),
            op(
                "abs_scal",
                vec![op("mod_scal_scal", vec![e(l(0)), Expr::Int(2)])],
            ),
        )
    };
    let yk = || elem(VarId::Formal(1), k());
    let xk = Expr::r(elem(VarId::Formal(0), k()));
    let body = vec![
        Stmt::Assign(y(1), x(1)),
        Stmt::Assign(y(2), x(2)),
        Stmt::Assign(Ref::whole(l(1)), Expr::Int(lo)),
        Stmt::Assign(Ref::whole(l(2)), Expr::Int(hi)),
        Stmt::Assign(Ref::whole(l(3)), Expr::Int(step)),
        Stmt::Do {
            var: l(0),
            lo: e(l(1)),
            hi: e(l(2)),
            step: match step {
                1 => crate::gen::ast::Step::Up,
                -1 => crate::gen::ast::Step::Down,
                _ => crate::gen::ast::Step::Var(l(3)),
            },
            body: vec![Stmt::Assign(yk(), mul(Expr::r(yk()), xk))],
            explicit: false,
        },
    ];
    program(2, 2, vec![head(2, 2, locals, body, false)])
}

/// The program as front-end XAIF.
pub fn xaif(p: &Program, what: &str) -> String {
    crate::gen::to_xaif(p, what)
}

/// The lines of `head`'s loops (`ForLoop`, `PreLoop`, `PostLoop`), in the
/// order they are written: what the loop marks name them by.
pub fn loop_lines(p: &Program) -> Vec<usize> {
    crate::gen::loop_lines(p)
        .into_iter()
        .next()
        .unwrap_or_default()
}
