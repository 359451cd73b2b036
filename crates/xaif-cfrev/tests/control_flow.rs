//! Control flow reversal on hand-written programs (acceptance of the adjoint
//! issue):
//!
//! - the example of seed "control flow reversal" §2 (a while loop with a
//!   branch, `fixtures/adjoint/seed_cfr.xaif`): the taping and adjoint CFGs
//!   have the structure of the seed's Figure 2 (b) and (c), and the
//!   adjoint Jacobian equals divided differences;
//! - `fixtures/adjoint/control_flow.xaif`: a `PostLoop`, `If`, loops nested
//!   in branches nested in a loop, an early exit, an early return, a
//!   backward goto, explicit loops and DO loops with run-time strides: in split and joint mode, with and
//!   without block enumeration, the adjoint Jacobian equals the tangent one
//!   (checked as dot products `<ȳ, J ẋ> = <Jᵀ ȳ, ẋ>` on several vector
//!   pairs) and divided differences, and every tape ends empty.

use std::path::Path;

use xaif_cfrev::{adjoint, AdjointOptions};
use xaif_interp::{compile, Harness, HarnessSpec, Jacobian, Mode};
use xaif_linearize::{catalogue::read_catalogues, tangent, Catalogue, TangentOptions};
use xaif_model::{CfgGraph, CfgId, InlinableArg, Program, RoutineBody, StmtKind, VertexKind};

fn catalogue() -> Option<Catalogue> {
    let shared = xaif_testkit::shared_dir()?;
    let path = shared.join("xaif/schema/examples/inlinable_intrinsics.xaif");
    Some(read_catalogues(&path, None).unwrap().0)
}

fn read(path: &Path) -> (Program, xaif_model::SourceMap) {
    let (p, source) = xaif_model::read_program_file(path).unwrap();
    xaif_model::validate_program(&p, &source).unwrap_or_else(|e| panic!("{e}"));
    (p, source)
}

fn spec(top: &str, n: usize, m: usize) -> HarnessSpec {
    let mut s = HarnessSpec::generic(n, m);
    s.top = top.into();
    s.x0 = vec![0.7, 1.3];
    s
}

/// Writes, re-reads and gates `p` (the path the back end takes), then runs
/// it in `mode`; checks that every tape ends empty.
fn run(p: &Program, spec: HarnessSpec, mode: Mode) -> Jacobian {
    let mut p = p.clone();
    p.mark_as_output("");
    let text = xaif_model::write_program(&p);
    let (p, source) = xaif_model::read_program_str(&text, None).unwrap();
    xaif_model::validate_program(&p, &source).unwrap_or_else(|e| panic!("{e}"));
    let prog = compile(&p, &source);
    let top = spec.top.clone();
    let outcome = Harness::new(&prog, spec)
        .run(mode)
        .unwrap_or_else(|e| panic!("{top} {mode:?}: {e}"));
    assert!(
        outcome.tapes_empty,
        "{top} {mode:?}: tapes not empty at the end"
    );
    outcome.jacobian
}

fn entry(j: &Jacobian, row: usize, col: usize) -> f64 {
    j.entries[col * j.m + row]
}

/// `<ȳ, J ẋ>` with `J` from the tangent and `<Jᵀ ȳ, ẋ>` with `Jᵀ` from the
/// adjoint, for a few deterministic vector pairs.
fn dot_products_agree(tangent: &Jacobian, adjoint: &Jacobian) -> Result<(), String> {
    let (n, m) = (tangent.n, tangent.m);
    let mut seed = 0x2545_f491_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % 2000) as f64 / 1000.0 - 1.0
    };
    for _ in 0..4 {
        let xd: Vec<f64> = (0..n).map(|_| next()).collect();
        let yb: Vec<f64> = (0..m).map(|_| next()).collect();
        let jxd: Vec<f64> = (0..m)
            .map(|i| (0..n).map(|k| entry(tangent, i, k) * xd[k]).sum())
            .collect();
        let jtyb: Vec<f64> = (0..n)
            .map(|k| (0..m).map(|i| entry(adjoint, i, k) * yb[i]).sum())
            .collect();
        let lhs: f64 = yb.iter().zip(&jxd).map(|(a, b)| a * b).sum();
        let rhs: f64 = jtyb.iter().zip(&xd).map(|(a, b)| a * b).sum();
        if (lhs - rhs).abs() > 1e-12 * lhs.abs().max(1.0) {
            return Err(format!("<ȳ, J ẋ> = {lhs} but <Jᵀ ȳ, ẋ> = {rhs}"));
        }
    }
    Ok(())
}

fn placeholder(p: &Program, routine: &str, ph: &str) -> (CfgId, bool) {
    let r = p
        .routines
        .iter()
        .map(|(_, r)| r)
        .find(|r| r.symbol_name() == routine)
        .unwrap();
    let RoutineBody::Replacements(list) = &r.body else {
        panic!("{routine}: not a ReplacementList")
    };
    let rep = list
        .iter()
        .find(|x| x.attrs.get("placeholder") == Some(ph))
        .unwrap();
    (rep.cfg, rep.attrs.flag("structured", true))
}

#[test]
fn control_flow_adjoints_equal_tangents_and_divided_differences() {
    let Some(cat) = catalogue() else { return };
    let (p, source) = read(&xaif_testkit::repo_root().join("fixtures/adjoint/control_flow.xaif"));
    let original = compile(&p, &source);
    let tangent_out = tangent(&p, &cat, None, &TangentOptions::default())
        .unwrap()
        .program;
    let structured = adjoint(&p, &cat, None, &AdjointOptions::default()).unwrap();
    let enumerated = adjoint(
        &p,
        &cat,
        None,
        &AdjointOptions {
            force_enumeration: true,
            ..AdjointOptions::default()
        },
    )
    .unwrap();
    let tops = [
        ("f_postloop", true),
        ("f_if", true),
        ("f_if_else", true),
        ("f_nested", true),
        ("f_exit", false),
        ("f_return", false),
        ("f_goto", false),
        ("f_simple", true),
        ("f_stride", true),
    ];
    for (top, is_structured) in tops {
        let out = &structured.transformed.program;
        assert_eq!(
            placeholder(out, top, "3").1,
            is_structured,
            "{top}: structured flag"
        );
        assert!(!placeholder(&enumerated.transformed.program, top, "3").1);
        let t = run(&tangent_out, spec(top, 2, 2), Mode::Tangent);
        assert!(
            t.entries.iter().any(|x| *x != 0.0),
            "{top}: a zero Jacobian tests nothing"
        );
        let dd = Harness::new(&original, spec(top, 2, 2))
            .divided_differences(1e-7)
            .unwrap();
        let c = xaif_interp::compare(&t, &dd, 1e-5, 1e-6).unwrap();
        assert!(
            c.matches(),
            "{top}: tangent {t:?} vs divided differences {dd:?}"
        );
        for (variant, result) in [("structured", &structured), ("enumerated", &enumerated)] {
            for mode in [Mode::Split, Mode::Joint] {
                let a = run(&result.transformed.program, spec(top, 2, 2), mode);
                dot_products_agree(&t, &a)
                    .unwrap_or_else(|e| panic!("{top} {variant} {mode:?}: {e}"));
                let c = xaif_interp::compare(&a, &t, 1e-12, 1e-14).unwrap();
                assert!(
                    c.matches(),
                    "{top} {variant} {mode:?}: adjoint {a:?} vs tangent {t:?}"
                );
                let c = xaif_interp::compare(&a, &dd, 1e-5, 1e-6).unwrap();
                assert!(
                    c.matches(),
                    "{top} {variant} {mode:?}: adjoint {a:?} vs divided differences {dd:?}"
                );
            }
        }
    }
}

/// One line per vertex in depth-first order from the entry (condition
/// edges in order of their values, the default edge last): the vertex kind,
/// what its statements do, and its successors by line number.
fn sketch(p: &Program, cfg: CfgId) -> Vec<String> {
    let g = CfgGraph::new(p, cfg);
    let mut order = Vec::new();
    let mut stack = vec![g.entry.unwrap()];
    while let Some(v) = stack.pop() {
        if order.contains(&v) {
            continue;
        }
        order.push(v);
        let mut succ: Vec<_> = g.successors(v).to_vec();
        succ.sort_by_key(|(e, _)| p.edges[*e].condition_value().unwrap_or(i64::MAX));
        for (_, t) in succ.into_iter().rev() {
            stack.push(t);
        }
    }
    let index = |v| order.iter().position(|w| *w == v).unwrap();
    order
        .iter()
        .map(|&v| {
            let what = match &p.vertices[v].kind {
                VertexKind::BasicBlock(stmts) => {
                    let parts: Vec<String> = stmts
                        .iter()
                        .map(|s| match &p.stmts[*s].kind {
                            StmtKind::Assignment(_) => "=".to_string(),
                            StmtKind::InlinableCall(args) => {
                                let name = p.stmts[*s].attrs.get("subroutine_name").unwrap_or("?");
                                let constant = args.iter().find_map(|a| match a {
                                    InlinableArg::Argument(c) => match &c.value {
                                        xaif_model::ArgValue::Constant(k) => {
                                            k.get("value").map(str::to_string)
                                        }
                                        _ => None,
                                    },
                                    _ => None,
                                });
                                match constant {
                                    Some(k) if name.starts_with("push_i") => format!("{name}({k})"),
                                    _ => name.to_string(),
                                }
                            }
                            other => other.element().to_string(),
                        })
                        .collect();
                    format!("BasicBlock[{}]", parts.join(" "))
                }
                VertexKind::ForLoop { .. } => format!(
                    "ForLoop({})",
                    p.vertices[v].attrs.get("reversal").unwrap_or("")
                ),
                other => format!("{other:?}").split('(').next().unwrap().to_string(),
            };
            let mut succ: Vec<_> = g.successors(v).to_vec();
            succ.sort_by_key(|(e, _)| p.edges[*e].condition_value().unwrap_or(i64::MAX));
            let targets: Vec<String> = succ
                .iter()
                .map(|(e, t)| match p.edges[*e].condition_value() {
                    Some(c) => format!("{c}:{}", index(*t)),
                    None => index(*t).to_string(),
                })
                .collect();
            format!("{} {what} -> {}", index(v), targets.join(" "))
        })
        .collect()
}

#[test]
fn seed_example_has_the_structure_of_figure_2_and_a_correct_adjoint() {
    let Some(cat) = catalogue() else { return };
    let (p, source) = read(&xaif_testkit::repo_root().join("fixtures/adjoint/seed_cfr.xaif"));
    let result = adjoint(&p, &cat, None, &AdjointOptions::default()).unwrap();
    let out = &result.transformed.program;
    // Figure 2 (b): the original graph with basic blocks in taping form
    // (partials computed and pushed), a counter set
    // before the loop, incremented before its end and pushed on its exit,
    // and the branch number pushed on each edge into the EndBranch.
    let (taping, structured) = placeholder(out, "head", "2");
    assert!(structured);
    let expected_taping = [
        "0 Entry -> 1",
        "1 BasicBlock[= =] -> 2",
        "2 BasicBlock[=] -> 3",
        "3 PreLoop -> 1:4 13",
        "4 If -> 0:5 1:11",
        "5 BasicBlock[= = push_s0] -> 6",
        "6 BasicBlock[push_i_s0(2)] -> 7",
        "7 EndBranch -> 8",
        "8 BasicBlock[= =] -> 9",
        "9 BasicBlock[=] -> 10",
        "10 EndLoop -> 3",
        "11 BasicBlock[= = push_s0] -> 12",
        "12 BasicBlock[push_i_s0(1)] -> 7",
        "13 BasicBlock[push_i_s0] -> 14",
        "14 BasicBlock[= = = push_s0 push_s0] -> 15",
        "15 Exit -> ",
    ];
    let got = sketch(out, taping);
    assert_eq!(got, expected_taping, "taping CFG:\n{}", got.join("\n"));
    // Figure 2 (c): the adjoint of the last block, the loop count popped
    // before an adjoint FORLOOP, in its body the adjoint of the loop's last
    // block, the branch number popped before a Branch on it, the adjoint
    // arms, and the adjoint of the first block last.
    let (adj, structured) = placeholder(out, "head", "3");
    assert!(structured);
    let expected_adjoint = [
        "0 Entry -> 1",
        "1 BasicBlock[pop_s0 pop_s0 Saxpy Saxpy ZeroDeriv] -> 2",
        "2 BasicBlock[pop_i_s0] -> 3",
        "3 ForLoop(anonymous) -> 1:4 11",
        "4 BasicBlock[] -> 5",
        "5 BasicBlock[pop_i_s0] -> 6",
        "6 Branch -> 1:7 2:10",
        "7 BasicBlock[pop_s0 Saxpy ZeroDeriv] -> 8",
        "8 EndBranch -> 9",
        "9 EndLoop -> 3",
        "10 BasicBlock[pop_s0 Saxpy ZeroDeriv] -> 8",
        "11 BasicBlock[] -> 12",
        "12 Exit -> ",
    ];
    let got = sketch(out, adj);
    assert_eq!(got, expected_adjoint, "adjoint CFG:\n{}", got.join("\n"));
    // The adjoint Jacobian equals divided differences of the original.
    let original = compile(&p, &source);
    let dd = Harness::new(&original, spec("head", 2, 3))
        .divided_differences(1e-7)
        .unwrap();
    for mode in [Mode::Split, Mode::Joint] {
        let a = run(out, spec("head", 2, 3), mode);
        let c = xaif_interp::compare(&a, &dd, 1e-5, 1e-6).unwrap();
        assert!(
            c.matches(),
            "{mode:?}: adjoint {a:?} vs divided differences {dd:?}"
        );
        assert!(a.entries.iter().filter(|x| **x != 0.0).count() >= 3);
    }
}
