//! The reference engine's forms of xaifb's outputs, for tests and
//! campaigns that must run the kinds of XAIF the reference engine writes
//! without the reference engine itself.
//!
//! xaifb marks what its output cannot otherwise tell: a type-change
//! output's `Entry` says `type_change`, a `-f` adjoint's placeholder 6
//! says `cp_entry_store_order`. The reference engine writes neither: its
//! type-change output is a plain output without derivative code, and its
//! `-f` output differs from its output without `-f` only in the order of
//! each routine's argument restores (placeholder 6), which follow the
//! stores (placeholder 4) instead of their reverse. [`unmarked`] takes the
//! marks out; [`restores_reordered`] reorders the restores, as `-f` does
//! ([`store_order_form`]) or as no engine does (an edited file).

use crate::gen::ast::*;

/// xaifb's mark of type-change output (`xaif_model::TYPE_CHANGE_ENTRY`).
pub const TYPE_CHANGE_MARK: &str = "type_change";

/// xaifb's mark of restores in store order
/// (`xaif_model::STORE_ORDER_ENTRY`).
pub const STORE_ORDER_MARK: &str = "cp_entry_store_order";

/// `text` without xaifb's marks: the `Entry` of a store-order restore is a
/// plain `cp_entry`, and `type_change` leaves every annotation.
pub fn unmarked(text: &str) -> String {
    let text = text.replace(
        &format!("annotation=\"{STORE_ORDER_MARK}\""),
        "annotation=\"cp_entry\"",
    );
    text.replace(
        &format!("annotation=\"{TYPE_CHANGE_MARK}\""),
        "annotation=\"\"",
    )
    .replace(&format!(" {TYPE_CHANGE_MARK}\""), "\"")
    .replace(&format!("\"{TYPE_CHANGE_MARK} "), "\"")
}

/// `text` with the argument restores of every routine's placeholder 6
/// (the `cp_arg_restore_*` calls, in document order) put in the order
/// `reorder` gives them; everything else stays as it is. `None` when no
/// placeholder 6 holds a restore.
pub fn restores_reordered(text: &str, reorder: &dyn Fn(&mut Vec<String>)) -> Option<String> {
    const OPEN: &str = "<xaif:Replacement placeholder=\"6\"";
    const CLOSE: &str = "</xaif:Replacement>";
    const CALL: &str = "<xaif:InlinableSubroutineCall ";
    const CALL_END: &str = "</xaif:InlinableSubroutineCall>";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut any = false;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let block_len = rest[at..]
            .find(CLOSE)
            .map_or(rest.len() - at, |e| e + CLOSE.len());
        let block = &rest[at..at + block_len];
        // The restore calls (spans in the block) and the text between.
        let mut spans = Vec::new();
        let mut from = 0;
        while let Some(c) = block[from..].find(CALL) {
            let start = from + c;
            let Some(e) = block[start..].find(CALL_END) else {
                break;
            };
            let end = start + e + CALL_END.len();
            if block[start..end].contains("subroutine_name=\"cp_arg_restore_") {
                spans.push((start, end));
            }
            from = end;
        }
        if spans.is_empty() {
            out.push_str(block);
        } else {
            any = true;
            let mut calls: Vec<String> = spans
                .iter()
                .map(|&(s, e)| block[s..e].to_string())
                .collect();
            reorder(&mut calls);
            let mut last = 0;
            for (&(s, e), call) in spans.iter().zip(&calls) {
                out.push_str(&block[last..s]);
                out.push_str(call);
                last = e;
            }
            out.push_str(&block[last..]);
        }
        rest = &rest[at + block_len..];
    }
    out.push_str(rest);
    any.then_some(out)
}

/// The reference engine's `-f` form of an unmarked adjoint output written
/// without `-f`: every routine's restores in the order of its stores (the
/// reverse of theirs).
pub fn store_order_form(text: &str) -> Option<String> {
    restores_reordered(text, &|calls| calls.reverse())
}

// ------------------------------------------------------------ programs
//
// Small programs whose adjoints checkpoint several arguments, so that the
// order of their restores decides which value each takes: for the tests
// of the forms above and the fixed cases of the robustness campaign.

fn var(name: &str, dims: Dims, extents: Vec<i64>) -> Var {
    Var {
        name: name.into(),
        role: Role::Active,
        dims,
        extents,
    }
}

fn elem(v: VarId, k: i64) -> Ref {
    Ref {
        var: v,
        subs: vec![Sub::Elem(Expr::Int(k))],
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
        var("X", Dims::Fixed(vec![3]), vec![3]),
        var("Y", Dims::Fixed(vec![3]), vec![3]),
    ]
}

/// head(x(3), y(3)) calls sa(la, lb, lc), which reads and writes all
/// three: its argument checkpoint stores three distinct scalars, and
/// restoring them in another order gives other derivatives.
pub fn three_checkpoints() -> String {
    let (x, y) = (VarId::Formal(0), VarId::Formal(1));
    let (la, lb, lc) = (VarId::Local(0), VarId::Local(1), VarId::Local(2));
    let scalar = |n: &str| var(n, Dims::Scalar, vec![]);
    let mut body: Vec<Stmt> = (1..=3)
        .map(|k| Stmt::Assign(elem(y, k), Expr::Real(0.0)))
        .collect();
    body.extend([
        Stmt::Assign(Ref::whole(la), rd(elem(x, 1))),
        Stmt::Assign(
            Ref::whole(lb),
            op("mul_scal_scal", vec![rd(elem(x, 2)), Expr::Real(2.0)]),
        ),
        Stmt::Assign(Ref::whole(lc), op("sin_scal", vec![rd(elem(x, 3))])),
        Stmt::Call {
            callee: 1,
            args: vec![
                Arg::Ref(Ref::whole(la)),
                Arg::Ref(Ref::whole(lb)),
                Arg::Ref(Ref::whole(lc)),
            ],
        },
        Stmt::Assign(elem(y, 1), rd(Ref::whole(la))),
        Stmt::Assign(elem(y, 2), rd(Ref::whole(lb))),
        Stmt::Assign(elem(y, 3), rd(Ref::whole(lc))),
    ]);
    let head = routine(
        "head",
        head_formals(),
        vec![scalar("LA"), scalar("LB"), scalar("LC")],
        body,
        3,
    );
    let (fa, fb, fc) = (VarId::Formal(0), VarId::Formal(1), VarId::Formal(2));
    let w = |v| rd(Ref::whole(v));
    let sa = routine(
        "sa",
        vec![scalar("FA"), scalar("FB"), scalar("FC")],
        vec![],
        vec![
            Stmt::Assign(Ref::whole(fa), op("mul_scal_scal", vec![w(fa), w(fb)])),
            Stmt::Assign(
                Ref::whole(fb),
                op(
                    "add_scal_scal",
                    vec![op("mul_scal_scal", vec![w(fb), w(fc)]), w(fa)],
                ),
            ),
            Stmt::Assign(Ref::whole(fc), op("mul_scal_scal", vec![w(fc), w(fa)])),
        ],
        0,
    );
    let p = Program {
        n: 3,
        m: 3,
        globals: vec![],
        routines: vec![head, sa],
        own_global_symbol: vec![vec![], vec![]],
    };
    crate::gen::to_xaif(&p, "three argument checkpoints of one routine")
}

/// head(x(3), y(3)) calls sb(x) with an assumed-shape formal: the
/// checkpoint of sb holds as many elements as the call passes.
pub fn assumed_shape_checkpoint() -> String {
    let (x, y) = (VarId::Formal(0), VarId::Formal(1));
    let mut body: Vec<Stmt> = (1..=3)
        .map(|k| Stmt::Assign(elem(y, k), Expr::Real(0.0)))
        .collect();
    body.extend([
        Stmt::Call {
            callee: 1,
            args: vec![Arg::Ref(Ref::whole(x))],
        },
        Stmt::Assign(
            elem(y, 1),
            op("mul_scal_scal", vec![rd(elem(x, 1)), rd(elem(x, 2))]),
        ),
        Stmt::Assign(elem(y, 2), rd(elem(x, 3))),
        Stmt::Assign(elem(y, 3), rd(elem(x, 2))),
    ]);
    let head = routine("head", head_formals(), vec![], body, 3);
    let f = VarId::Formal(0);
    let sb = routine(
        "sb",
        vec![var("F", Dims::Assumed, vec![3])],
        vec![],
        vec![
            Stmt::Assign(
                elem(f, 1),
                op("mul_scal_scal", vec![rd(elem(f, 1)), rd(elem(f, 2))]),
            ),
            Stmt::Assign(elem(f, 3), op("sin_scal", vec![rd(elem(f, 3))])),
        ],
        0,
    );
    let p = Program {
        n: 3,
        m: 3,
        globals: vec![],
        routines: vec![head, sb],
        own_global_symbol: vec![vec![], vec![]],
    };
    crate::gen::to_xaif(&p, "an assumed-shape argument checkpoint")
}

/// head(x(3), y(3)) calls sm(la, ln, lb) with an integer between two
/// reals: the checkpoint of sm stores a real, an integer and a real, on two
/// stacks of the run-time.
pub fn mixed_checkpoints() -> String {
    let (x, y) = (VarId::Formal(0), VarId::Formal(1));
    let (la, ln, lb) = (VarId::Local(0), VarId::Local(1), VarId::Local(2));
    let scalar = |n: &str| var(n, Dims::Scalar, vec![]);
    let mut body: Vec<Stmt> = (1..=3)
        .map(|k| Stmt::Assign(elem(y, k), Expr::Real(0.0)))
        .collect();
    body.extend([
        Stmt::Assign(Ref::whole(la), op("sin_scal", vec![rd(elem(x, 1))])),
        Stmt::Assign(Ref::whole(ln), Expr::Int(2)),
        Stmt::Assign(
            Ref::whole(lb),
            op("mul_scal_scal", vec![rd(elem(x, 2)), rd(elem(x, 3))]),
        ),
        Stmt::Call {
            callee: 1,
            args: vec![
                Arg::Ref(Ref::whole(la)),
                Arg::Ref(Ref::whole(ln)),
                Arg::Ref(Ref::whole(lb)),
            ],
        },
        Stmt::Assign(elem(y, 1), rd(Ref::whole(la))),
        Stmt::Assign(elem(y, 2), rd(Ref::whole(lb))),
        Stmt::Assign(
            elem(y, 3),
            op("mul_scal_scal", vec![rd(Ref::whole(la)), rd(elem(x, 1))]),
        ),
    ]);
    let head = routine(
        "head",
        head_formals(),
        vec![
            scalar("LA"),
            Var {
                name: "LN".into(),
                role: Role::Index,
                dims: Dims::Scalar,
                extents: vec![],
            },
            scalar("LB"),
        ],
        body,
        3,
    );
    let (fa, fn_, fb, k) = (
        VarId::Formal(0),
        VarId::Formal(1),
        VarId::Formal(2),
        VarId::Local(0),
    );
    let w = |v| rd(Ref::whole(v));
    let int = |n: &str, role| Var {
        name: n.to_string(),
        role,
        dims: Dims::Scalar,
        extents: vec![],
    };
    let sm = routine(
        "sm",
        vec![scalar("FA"), int("FN", Role::Index), scalar("FB")],
        vec![int("K", Role::Loop)],
        vec![Stmt::Do {
            var: k,
            lo: Expr::Int(1),
            hi: w(fn_),
            step: Step::Up,
            body: vec![
                Stmt::Assign(Ref::whole(fa), op("mul_scal_scal", vec![w(fa), w(fb)])),
                Stmt::Assign(
                    Ref::whole(fb),
                    op("add_scal_scal", vec![op("sin_scal", vec![w(fb)]), w(fa)]),
                ),
            ],
            explicit: false,
        }],
        0,
    );
    let p = Program {
        n: 3,
        m: 3,
        globals: vec![],
        routines: vec![head, sm],
        own_global_symbol: vec![vec![], vec![]],
    };
    crate::gen::to_xaif(&p, "argument checkpoints on two stacks")
}

/// The programs above, named, each `head(x(3), y(3))`.
pub fn checkpoint_programs() -> Vec<(&'static str, String)> {
    vec![
        ("three argument checkpoints", three_checkpoints()),
        ("argument checkpoints on two stacks", mixed_checkpoints()),
        (
            "an assumed-shape argument checkpoint",
            assumed_shape_checkpoint(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restores_are_reordered_within_each_placeholder_6() {
        let call = |n: &str| {
            format!("<xaif:InlinableSubroutineCall subroutine_name=\"cp_arg_restore_{n}\" statement_id=\"{n}\"></xaif:InlinableSubroutineCall>")
        };
        let store = "<xaif:InlinableSubroutineCall subroutine_name=\"cp_arg_store_a\" statement_id=\"s\"></xaif:InlinableSubroutineCall>";
        let text = format!(
            "<xaif:Replacement placeholder=\"4\">{store}</xaif:Replacement><xaif:Replacement placeholder=\"6\">{}\n{}\n{}</xaif:Replacement><xaif:Replacement placeholder=\"6\">{}</xaif:Replacement>",
            call("a"),
            call("b"),
            call("c"),
            call("d")
        );
        let reversed = store_order_form(&text).unwrap();
        assert_eq!(
            reversed,
            format!(
                "<xaif:Replacement placeholder=\"4\">{store}</xaif:Replacement><xaif:Replacement placeholder=\"6\">{}\n{}\n{}</xaif:Replacement><xaif:Replacement placeholder=\"6\">{}</xaif:Replacement>",
                call("c"),
                call("b"),
                call("a"),
                call("d")
            )
        );
        assert_eq!(store_order_form(&reversed).unwrap(), text);
        assert!(store_order_form(store).is_none());
    }

    #[test]
    fn marks_are_taken_out() {
        let text = format!(
            "<xaif:Entry annotation=\"{STORE_ORDER_MARK}\"/><xaif:Entry annotation=\"{TYPE_CHANGE_MARK}\"/><xaif:Entry annotation=\"x {TYPE_CHANGE_MARK}\"/>"
        );
        assert_eq!(
            unmarked(&text),
            "<xaif:Entry annotation=\"cp_entry\"/><xaif:Entry annotation=\"\"/><xaif:Entry annotation=\"x\"/>"
        );
    }
}
