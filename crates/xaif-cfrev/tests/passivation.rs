//! Activity refinement never makes a derivative wrong, and it pays:
//! `fixtures/adjoint/passivation.xaif` has symbols its front end marked
//! active that `xaif-dataflow` proves passive (constants, a value never used
//! for a dependent). After passivation, the tangent and the adjoint (split
//! and joint) Jacobians equal those of the unpassivated program and divided
//! differences, and the adjoint tapes and computes less.

use xaif_cfrev::{adjoint, AdjointOptions};
use xaif_dataflow::{PassivationOptions, PassivationPlan};
use xaif_interp::{compile, Harness, HarnessSpec, Jacobian, Mode, Outcome};
use xaif_linearize::{catalogue::read_catalogues, tangent, Catalogue, TangentOptions};
use xaif_model::Program;

fn catalogue() -> Option<Catalogue> {
    let shared = xaif_testkit::shared_dir()?;
    let path = shared.join("xaif/schema/examples/inlinable_intrinsics.xaif");
    Some(read_catalogues(&path, None).unwrap().0)
}

fn run(p: &Program, mode: Mode) -> Outcome {
    let mut p = p.clone();
    p.mark_as_output("");
    let text = xaif_model::write_program(&p);
    let (p, source) = xaif_model::read_program_str(&text, None).unwrap();
    xaif_model::validate_program(&p, &source).unwrap_or_else(|e| panic!("{e}"));
    let prog = compile(&p, &source);
    let outcome = Harness::new(&prog, HarnessSpec::generic(2, 2))
        .run(mode)
        .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
    assert!(outcome.tapes_empty, "{mode:?}: tapes not empty");
    outcome
}

fn same(a: &Jacobian, b: &Jacobian, what: &str) {
    let c = xaif_interp::compare(a, b, 1e-12, 1e-14).unwrap();
    assert!(c.matches(), "{what}: {a:?} vs {b:?}");
}

#[test]
fn passivated_program_keeps_its_jacobians_and_tapes_less() {
    let Some(cat) = catalogue() else { return };
    let path = xaif_testkit::repo_root().join("fixtures/adjoint/passivation.xaif");
    let (original, source) = xaif_model::read_program_file(&path).unwrap();
    xaif_model::validate_program(&original, &source).unwrap();
    let plan = {
        let analysis =
            xaif_dataflow::analyze(&original, &xaif_dataflow::Config::default()).unwrap();
        PassivationPlan::new(
            &analysis.facts,
            &analysis.activity,
            PassivationOptions::default(),
        )
    };
    let mut names: Vec<&str> = plan
        .passivate
        .iter()
        .map(|s| original.symbols[*s].name())
        .collect();
    names.sort();
    assert_eq!(names, ["C", "T", "W"]);
    let mut passivated = original.clone();
    plan.apply(&mut passivated);

    let reference = run(
        &tangent(&original, &cat, None, &TangentOptions::default())
            .unwrap()
            .program,
        Mode::Tangent,
    );
    let dd = Harness::new(&compile(&original, &source), HarnessSpec::generic(2, 2))
        .divided_differences(1e-7)
        .unwrap();
    let c = xaif_interp::compare(&reference.jacobian, &dd, 1e-5, 1e-6).unwrap();
    assert!(c.matches(), "tangent vs divided differences");
    assert!(
        reference
            .jacobian
            .entries
            .iter()
            .filter(|x| **x != 0.0)
            .count()
            >= 3
    );

    let t = run(
        &tangent(&passivated, &cat, None, &TangentOptions::default())
            .unwrap()
            .program,
        Mode::Tangent,
    );
    same(&t.jacobian, &reference.jacobian, "passivated tangent");
    assert!(t.stats.flops_derivative < reference.stats.flops_derivative);

    let before = adjoint(&original, &cat, None, &AdjointOptions::default())
        .unwrap()
        .transformed
        .program;
    let after = adjoint(&passivated, &cat, None, &AdjointOptions::default())
        .unwrap()
        .transformed
        .program;
    for mode in [Mode::Split, Mode::Joint] {
        let b = run(&before, mode);
        let a = run(&after, mode);
        same(&b.jacobian, &reference.jacobian, "adjoint");
        same(&a.jacobian, &reference.jacobian, "passivated adjoint");
        let pushed = |o: &Outcome| o.stats.doubles_pushed + o.stats.integers_pushed;
        assert!(
            pushed(&a) < pushed(&b),
            "{mode:?}: {} pushed after, {} before",
            pushed(&a),
            pushed(&b)
        );
        assert!(a.stats.flops_derivative < b.stats.flops_derivative);
    }
}
