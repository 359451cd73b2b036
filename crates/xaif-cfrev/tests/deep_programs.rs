//! Programs that are deep where XAIF is flat (issue 15, classes 1 and 2):
//! one expression thousands of operations deep, thousands of nested `If`s
//! and loops.
//!
//! - Every pass (gate, tangent, adjoint, the data-flow analyses and their
//!   report, the writer) runs on a thread with a 256 KiB stack: none may use
//!   native stack in proportion to the input. Before the passes iterated,
//!   each of these inputs overflowed such a stack (an abort, not an error).
//! - A chain too long for the heuristic elimination (more than
//!   `xaif_linearize::large::HEURISTIC_EDGES` edges) is eliminated in
//!   reverse mode; its tangent and adjoint Jacobians still equal divided
//!   differences, and no generated expression is deeper than
//!   `MAX_INLINE_DEPTH` allows.

use xaif_cfrev::{adjoint, AdjointOptions};
use xaif_interp::{compile, Harness, HarnessSpec, Jacobian, Mode};
use xaif_linearize::{catalogue::read_catalogues, tangent, Catalogue, TangentOptions};
use xaif_model::{ExprGraph, Program, StmtKind};
use xaif_testkit::deep;

fn catalogue() -> Option<Catalogue> {
    let shared = xaif_testkit::shared_dir()?;
    let path = shared.join("xaif/schema/examples/inlinable_intrinsics.xaif");
    Some(read_catalogues(&path, None).unwrap().0)
}

/// Reads, gates, transforms both ways, analyses, reports and writes `text`.
fn every_pass(text: &str, cat: &Catalogue) {
    let (p, source) = xaif_model::read_program_str(text, Some("deep.xaif")).unwrap();
    cat.validate_program(&p, &source)
        .unwrap_or_else(|e| panic!("{e}"));
    let t = tangent(&p, cat, None, &TangentOptions::default()).unwrap();
    let mut out = t.program;
    out.mark_as_output("");
    assert!(!xaif_model::write_program(&out).is_empty());
    let a = adjoint(&p, cat, None, &AdjointOptions::default()).unwrap();
    let mut out = a.transformed.program;
    out.mark_as_output("");
    assert!(!xaif_model::write_program(&out).is_empty());
    let config = xaif_dataflow::Config {
        tbr: true,
        ..Default::default()
    };
    let analysis = xaif_dataflow::analyze(&p, &config).unwrap();
    let report = xaif_dataflow::report::render(
        &analysis,
        Some(&source),
        xaif_dataflow::report::ReportOptions {
            activity: true,
            tbr: true,
        },
    );
    assert!(report.contains("head"));
}

/// Runs `f` on a thread with a 256 KiB stack (a tenth of a worker thread's
/// default), so recursion in proportion to the input overflows it.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn deep_expressions_need_no_stack() {
    let Some(cat) = catalogue() else { return };
    on_small_stack(move || {
        every_pass(&deep::sum_chain(20_000), &cat);
        every_pass(&deep::unary_chain(5_000, "sin_scal"), &cat);
    });
}

#[test]
fn deeply_nested_control_flow_needs_no_stack() {
    let Some(cat) = catalogue() else { return };
    on_small_stack(move || {
        every_pass(&deep::nested_ifs(2_000), &cat);
        every_pass(&deep::nested_loops(300), &cat);
    });
}

fn jacobian(p: &Program, mode: Option<Mode>) -> Jacobian {
    jacobian_of(p, mode, 1)
}

/// [`jacobian`] of a `head(X, Y)` whose `X` and `Y` have `n` elements.
fn jacobian_of(p: &Program, mode: Option<Mode>, n: usize) -> Jacobian {
    let mut p = p.clone();
    p.mark_as_output("");
    let text = xaif_model::write_program(&p);
    let (p, source) = xaif_model::read_program_str(&text, None).unwrap();
    xaif_model::validate_program(&p, &source).unwrap_or_else(|e| panic!("{e}"));
    let prog = compile(&p, &source);
    let mut spec = HarnessSpec::generic(n, n);
    spec.top = "head".into();
    spec.x0 = (0..n).map(|i| 0.7 + 0.1 * i as f64).collect();
    let harness = Harness::new(&prog, spec);
    match mode {
        None => harness.divided_differences(1e-6).unwrap(),
        Some(mode) => {
            let outcome = harness.run(mode).unwrap();
            assert!(outcome.tapes_empty, "{mode:?}: tapes not empty");
            outcome.jacobian
        }
    }
}

/// The depth of the deepest assignment in `p` as written (the arena of a
/// transformation result also holds statements it no longer uses).
fn deepest_expression(p: &Program) -> usize {
    let (p, _) = xaif_model::read_program_str(&xaif_model::write_program(p), None).unwrap();
    let mut deepest = 0;
    for (_, s) in p.stmts.iter() {
        let StmtKind::Assignment(a) = &s.kind else {
            continue;
        };
        let Some(g) = ExprGraph::new(&a.rhs) else {
            continue;
        };
        let mut depth = vec![0usize; g.args.len()];
        for v in g.postorder() {
            depth[v] = 1 + g.args[v].iter().map(|&w| depth[w]).max().unwrap_or(0);
        }
        deepest = deepest.max(depth[g.root]);
    }
    deepest
}

#[test]
fn long_chains_are_eliminated_in_linear_time_and_stay_correct() {
    let Some(cat) = catalogue() else { return };
    // 600 nested sines: more edges than the heuristic selection takes.
    let n = 600;
    assert!(n > xaif_linearize::large::HEURISTIC_EDGES);
    let text = deep::unary_chain(n, "sin_scal");
    let (p, source) = xaif_model::read_program_str(&text, None).unwrap();
    cat.validate_program(&p, &source).unwrap();
    let dd = jacobian(&p, None);
    let t = tangent(&p, &cat, None, &TangentOptions::default()).unwrap();
    // One Jacobian entry accumulated from n factors: n - 1 products.
    assert_eq!(t.stats.total.multiplications, n - 1);
    let deepest = deepest_expression(&t.program);
    assert!(
        deepest <= xaif_linearize::preaccumulate::MAX_INLINE_DEPTH + 2,
        "accumulations are stored before they grow deeper than the inline limit: {deepest}"
    );
    let a = adjoint(&p, &cat, None, &AdjointOptions::default()).unwrap();
    let expected = dd.entries[0];
    let close = |x: f64| (x - expected).abs() <= 1e-4 * expected.abs().max(1e-3);
    assert!(
        expected.abs() > 1e-4,
        "a non-trivial derivative: {expected}"
    );
    let tj = jacobian(&t.program, Some(Mode::Tangent));
    assert!(
        close(tj.entries[0]),
        "tangent {:?} vs {expected}",
        tj.entries
    );
    for mode in [Mode::Split, Mode::Joint] {
        let aj = jacobian(&a.transformed.program, Some(mode));
        assert!(
            close(aj.entries[0]),
            "{mode:?} {:?} vs {expected}",
            aj.entries
        );
    }
}

#[test]
fn loops_nested_beyond_the_planning_depth_are_counted() {
    let Some(cat) = catalogue() else { return };
    let depth = xaif_cfrev::explicit::MAX_PLANNED_DEPTH;
    let text = deep::nested_loops(depth + 6);
    let (p, source) = xaif_model::read_program_str(&text, None).unwrap();
    cat.validate_program(&p, &source).unwrap();
    let a = adjoint(&p, &cat, None, &AdjointOptions::default()).unwrap();
    // The adjoint sweep (placeholder 3): its ForLoops run the originals
    // backwards ("explicit") down to the planning depth, counted below.
    let out = &a.transformed.program;
    let mut reversal: Vec<&str> = Vec::new();
    for (_, r) in out.routines.iter() {
        let xaif_model::RoutineBody::Replacements(list) = &r.body else {
            continue;
        };
        for rep in list
            .iter()
            .filter(|rep| rep.attrs.get("placeholder") == Some("3"))
        {
            for v in out.cfgs[rep.cfg].vertex_ids() {
                if let Some(kind) = out.vertices[v].attrs.get("reversal") {
                    reversal.push(kind);
                }
            }
        }
    }
    let explicit = reversal.iter().filter(|k| **k == "explicit").count();
    let counted = reversal.iter().filter(|k| **k == "anonymous").count();
    assert_eq!((explicit, counted), (depth, 6), "{reversal:?}");
}

/// A deep whole-array expression: every temporary is an array shaped like
/// `X` (found for all nodes in one pass, not by a walk per node, which was
/// quadratic in the depth), and the Jacobians equal divided differences.
#[test]
fn deep_array_expressions_stay_correct() {
    let Some(cat) = catalogue() else { return };
    let text = deep::array_chain(600, "sin_scal");
    let (p, source) = xaif_model::read_program_str(&text, None).unwrap();
    cat.validate_program(&p, &source).unwrap();
    let dd = jacobian_of(&p, None, 2);
    let t = tangent(&p, &cat, None, &TangentOptions::default()).unwrap();
    let a = adjoint(&p, &cat, None, &AdjointOptions::default()).unwrap();
    let close = |got: &Jacobian, what: &str| {
        assert_eq!(got.entries.len(), dd.entries.len(), "{what}");
        for (g, e) in got.entries.iter().zip(&dd.entries) {
            assert!(
                (g - e).abs() <= 1e-4 * e.abs().max(1e-3),
                "{what}: {:?} vs {:?}",
                got.entries,
                dd.entries
            );
        }
    };
    assert!(
        dd.entries.iter().any(|e| e.abs() > 1e-4),
        "{:?}",
        dd.entries
    );
    close(&jacobian_of(&t.program, Some(Mode::Tangent), 2), "tangent");
    for mode in [Mode::Split, Mode::Joint] {
        close(
            &jacobian_of(&a.transformed.program, Some(mode), 2),
            &format!("{mode:?}"),
        );
    }
}

/// A call with hundreds of passive arguments to active formals: each goes
/// through an active temporary of its own (looked up by position and by
/// reference in maps; lists searched per argument were quadratic), and the
/// Jacobians still equal divided differences; every pass needs no stack.
#[test]
fn calls_with_many_arguments_stay_correct() {
    let Some(cat) = catalogue() else { return };
    let text = deep::wide_call(300);
    let (p, source) = xaif_model::read_program_str(&text, None).unwrap();
    cat.validate_program(&p, &source).unwrap();
    let dd = jacobian(&p, None);
    assert!(dd.entries[0].abs() > 1e-4, "{:?}", dd.entries);
    let close = |got: &Jacobian, what: &str| {
        let (g, e) = (got.entries[0], dd.entries[0]);
        assert!((g - e).abs() <= 1e-4 * e.abs(), "{what}: {g} vs {e}");
    };
    let t = tangent(&p, &cat, None, &TangentOptions::default()).unwrap();
    close(&jacobian(&t.program, Some(Mode::Tangent)), "tangent");
    let a = adjoint(&p, &cat, None, &AdjointOptions::default()).unwrap();
    for mode in [Mode::Split, Mode::Joint] {
        close(
            &jacobian(&a.transformed.program, Some(mode)),
            &format!("{mode:?}"),
        );
    }
    on_small_stack(move || every_pass(&deep::wide_call(2_000), &cat));
}
