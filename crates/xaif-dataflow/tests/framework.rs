//! The framework: structured and iterative equations agree on structured
//! graphs, unstructured graphs are solved iteratively, recursion reaches a
//! fixpoint, passivation keeps call bindings consistent.

mod common;

use common::{fixture, load, names, routine, stmt};
use xaif_dataflow::{analyze, Analysis, Config, PassivationOptions, PassivationPlan, Solver};
use xaif_model::Program;

/// Every per-statement, per-vertex and per-routine fact of two analyses.
fn assert_same(a: &Analysis, b: &Analysis, what: &str) {
    let (sa, sb): (Vec<_>, Vec<_>) = (
        a.activity.stmts.iter().collect(),
        b.activity.stmts.iter().collect(),
    );
    assert_eq!(sa, sb, "{what}: statement activity");
    let (ra, rb): (Vec<_>, Vec<_>) = (
        a.activity.routines.iter().collect(),
        b.activity.routines.iter().collect(),
    );
    assert_eq!(ra, rb, "{what}: routine activity");
    assert_eq!(a.activity.storages, b.activity.storages, "{what}: verdicts");
    let (ta, tb) = (a.tbr.as_ref().unwrap(), b.tbr.as_ref().unwrap());
    let (sa, sb): (Vec<_>, Vec<_>) = (ta.stmts.iter().collect(), tb.stmts.iter().collect());
    assert_eq!(sa, sb, "{what}: statement TBR");
    let (ca, cb): (Vec<_>, Vec<_>) = (ta.calls.iter().collect(), tb.calls.iter().collect());
    assert_eq!(ca, cb, "{what}: call sites");
    let (ra, rb): (Vec<_>, Vec<_>) = (ta.routines.iter().collect(), tb.routines.iter().collect());
    assert_eq!(ra, rb, "{what}: routine TBR");
}

fn both(p: &Program) -> (Analysis<'_>, Analysis<'_>) {
    let c = Config {
        tbr: true,
        ..Config::default()
    };
    let s = analyze(p, &c).unwrap();
    let i = analyze(
        p,
        &Config {
            solver: Solver::Iterative,
            ..c
        },
    )
    .unwrap();
    (s, i)
}

#[test]
fn structured_and_iterative_equations_agree_on_fixtures() {
    for f in xaif_testkit::xaif_files(&xaif_testkit::repo_root().join("fixtures/dataflow")) {
        let (p, _) = load(&f);
        let (s, i) = both(&p);
        assert_same(&s, &i, &f.display().to_string());
    }
}

#[test]
fn structured_and_iterative_equations_agree_on_the_corpus() {
    let Some(shared) = xaif_testkit::shared_dir() else {
        return;
    };
    let (mut structured, mut total) = (0, 0);
    for dir in std::fs::read_dir(shared.join("corpus/examples"))
        .unwrap()
        .flatten()
    {
        let f = dir.path().join("tlmhead_sf.pre.xaif");
        let Ok((p, sm)) = xaif_model::read_program_file(&f) else {
            continue;
        };
        if xaif_model::validate_program(&p, &sm).is_err() {
            continue;
        }
        let (s, i) = both(&p);
        for rf in s.facts.routines.values() {
            total += 1;
            structured += rf.flow.region.is_some() as usize;
        }
        assert_same(&s, &i, &f.display().to_string());
    }
    // The structured equations really ran: most corpus routines are
    // properly nested.
    assert!(
        structured * 10 > total * 9,
        "{structured} of {total} structured"
    );
}

#[test]
fn unstructured_graphs_are_solved_iteratively_with_the_same_meaning() {
    let (p, _) = load(&fixture("unstructured.xaif"));
    let a = analyze(
        &p,
        &Config {
            tbr: true,
            ..Config::default()
        },
    )
    .unwrap();
    let goto = routine(&a, "loopgoto");
    let wh = routine(&a, "loopwhile");
    assert!(a.facts.routines[&goto].flow.region.is_none());
    assert!(a.facts.routines[&wh].flow.region.is_some());
    // The goto loop runs at least once, the while loop maybe not: they agree
    // on everything but what the zero-trip path adds.
    let tbr = a.tbr.as_ref().unwrap();
    for (g, w) in [("s8", "s5"), ("s9", "s6"), ("s10", "s7")] {
        let (tg, tw) = (
            tbr.stmt(stmt(&p, g)).unwrap(),
            tbr.stmt(stmt(&p, w)).unwrap(),
        );
        assert_eq!(
            names(&a, goto, &tg.required),
            names(&a, wh, &tw.required),
            "{g}/{w}"
        );
        assert_eq!(
            names(&a, goto, &tg.recorded),
            names(&a, wh, &tw.recorded),
            "{g}/{w}"
        );
        assert_eq!(
            names(&a, goto, &tg.to_tape),
            names(&a, wh, &tw.to_tape),
            "{g}/{w}"
        );
    }
    assert_eq!(
        names(&a, goto, &tbr.stmt(stmt(&p, "s9")).unwrap().recorded),
        ["t"]
    );
    let dep = |r| {
        let d = a.activity.routines[r].dep.clone().unwrap();
        let mut v: Vec<String> = d
            .rows()
            .map(|(w, row)| format!("{} <- {:?}", a.facts.location(r, w), names(&a, r, row)))
            .collect();
        v.sort();
        v
    };
    assert_eq!(dep(goto), dep(wh));
}

#[test]
fn recursion_reaches_a_fixpoint() {
    let (p, _) = load(&fixture("recursion.xaif"));
    for solver in [Solver::Auto, Solver::Iterative] {
        let a = analyze(
            &p,
            &Config {
                solver,
                tbr: true,
                ..Config::default()
            },
        )
        .unwrap();
        let dep = |name: &str, var: &str| -> Vec<String> {
            let r = routine(&a, name);
            let d = a.activity.routines[r].dep.clone().expect("returns");
            let slot = a.facts.routines[&r]
                .universe
                .slots()
                .find(|(_, s)| a.facts.storages[s.storage.index()].name == var)
                .map(|(i, _)| i)
                .unwrap();
            let row = d
                .row(slot)
                .cloned()
                .unwrap_or_else(|| [slot].into_iter().collect());
            names(&a, r, &row)
        };
        // rec: b = b + sin(a) a number of times, then b = b * a.
        assert_eq!(dep("rec", "b"), ["a", "b"], "{solver:?}");
        // ping/pong: every path ends with b = a.
        assert_eq!(dep("ping", "b"), ["a"], "{solver:?}");
        assert_eq!(dep("pong", "b"), ["a"], "{solver:?}");
        let head = routine(&a, "head");
        let hd = a.activity.routines[head].dep.clone().unwrap();
        let rows: Vec<String> = hd
            .rows()
            .filter(|(_, r)| !r.is_empty())
            .map(|(w, r)| format!("{} <- {:?}", a.facts.location(head, w), names(&a, head, r)))
            .collect();
        assert_eq!(
            rows,
            ["y(1) <- [\"x(1)\"]", "y(2) <- [\"x(2)\"]"],
            "{solver:?}"
        );
        for r in ["rec", "ping", "pong"] {
            assert!(a.facts.callgraph.is_recursive(routine(&a, r)));
        }
        // rec's adjoint needs a (sin; b * a) and b (b * a), but b * a
        // overwrites b, which it therefore records: Req(rec) = {a}, through
        // every level of recursion.
        let tbr = a.tbr.as_ref().unwrap();
        let rec = routine(&a, "rec");
        let s = tbr.routine(rec).unwrap().summary.clone().unwrap();
        assert_eq!(names(&a, rec, &s.req), ["a"], "{solver:?}");
        assert_eq!(names(&a, rec, &s.kill), ["b"], "{solver:?}");
        let last = tbr.stmt(stmt(&p, "s8")).unwrap();
        assert_eq!(names(&a, rec, &last.recorded), ["b"], "{solver:?}");
        assert_eq!(
            names(&a, rec, &tbr.routine(rec).unwrap().in_req),
            ["a"],
            "{solver:?}"
        );
    }
}

#[test]
fn passivation_keeps_call_bindings_consistent() {
    let (mut p, _) = load(&fixture("calls.xaif"));
    let plan = {
        let a = analyze(&p, &Config::default()).unwrap();
        PassivationPlan::new(&a.facts, &a.activity, PassivationOptions::default())
    };
    let name = |p: &Program, s| p.symbols[s].name().to_string();
    let passivated: Vec<String> = plan.passivate.iter().map(|s| name(&p, *s)).collect();
    let kept: Vec<String> = plan.kept.iter().map(|(s, _)| name(&p, *s)).collect();
    // i is already passive; w(2) shares w with the active w(1); p and q are
    // passive but bound to scale's active formals, so they stay active.
    assert!(passivated.is_empty(), "{passivated:?}");
    assert_eq!(kept, ["p", "q"]);
    plan.apply(&mut p);
    // After applying, our verdicts never contradict the flags in the
    // direction that would lose derivatives.
    let a = analyze(&p, &Config::default()).unwrap();
    for (sym, ours) in a.activity.symbols.iter() {
        if *ours {
            assert!(p.symbols[sym].is_active(), "{}", p.symbols[sym].name());
        }
    }
}

#[test]
fn solvers_agree_on_every_cfg_vertex_kind() {
    // The interpreter's fixtures cover PostLoop, If, Goto, Label, select
    // case and zero-trip loops; the model's all_kinds.xaif every vertex kind.
    let root = xaif_testkit::repo_root().join("fixtures");
    let mut files = xaif_testkit::xaif_files(&root.join("interp"));
    files.push(root.join("model/all_kinds.xaif"));
    let mut post_loops = 0;
    for f in files {
        let Ok((p, sm)) = xaif_model::read_program_file(&f) else {
            continue;
        };
        if xaif_model::validate_program(&p, &sm).is_err() {
            continue;
        }
        post_loops += p
            .vertices
            .iter()
            .filter(|(_, v)| matches!(v.kind, xaif_model::VertexKind::PostLoop(_)))
            .count();
        let (s, i) = both(&p);
        assert_same(&s, &i, &f.display().to_string());
    }
    assert!(post_loops > 0);
}

#[test]
fn a_post_test_loop_kills_what_its_body_kills() {
    let (p, _) = load(&fixture("postloop.xaif"));
    for solver in [Solver::Auto, Solver::Iterative] {
        let a = analyze(
            &p,
            &Config {
                solver,
                tbr: true,
                ..Config::default()
            },
        )
        .unwrap();
        let r = routine(&a, "repeat");
        // The post-test loop is properly nested (the structured solver
        // handles it when asked to).
        assert!(a.facts.routines[&r].flow.region.is_some());
        // y = t * t runs at least once: y on entry never reaches the exit.
        let dep = a.activity.routines[r].dep.clone().unwrap();
        let y = a.facts.routines[&r]
            .universe
            .slots()
            .find(|(_, s)| a.facts.storages[s.storage.index()].name == "y")
            .unwrap()
            .0;
        assert!(!dep.depends(y, y), "{solver:?}");
        let kill = a
            .tbr
            .as_ref()
            .unwrap()
            .routine(r)
            .unwrap()
            .summary
            .clone()
            .unwrap()
            .kill;
        assert_eq!(names(&a, r, &kill), ["t", "y"], "{solver:?}");
    }
}
