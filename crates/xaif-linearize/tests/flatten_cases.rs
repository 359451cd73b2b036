//! Flattening corner cases (fixtures/tangent/flatten.xaif, no DU-UD chains,
//! so every decision rests on the alias analysis): the tangent Jacobian of
//! the flattened output equals the one of per-statement graphs and agrees
//! with divided differences of the original.

use xaif_interp::{compile, Harness, HarnessSpec, Jacobian, Mode};
use xaif_linearize::{tangent, Catalogue, TangentOptions};
use xaif_model::{Document, Program};

fn catalogue() -> Option<Catalogue> {
    let shared = xaif_testkit::shared_dir()?;
    let parsed =
        xaif_model::read_file(&shared.join("xaif/schema/examples/inlinable_intrinsics.xaif"))
            .unwrap();
    let Document::Inlinable(c) = parsed.document else {
        panic!("catalogue")
    };
    Some(Catalogue::new(&c).unwrap())
}

fn spec(top: &str) -> HarnessSpec {
    let mut s = HarnessSpec::generic(2, 2);
    s.top = top.into();
    s.x0 = vec![0.7, 1.3];
    s
}

fn jacobian(p: &Program, top: &str) -> Jacobian {
    let text = xaif_model::write_program(p);
    let (p, source) = xaif_model::read_program_str(&text, None).unwrap();
    xaif_model::validate_program(&p, &source).unwrap_or_else(|e| panic!("{e}"));
    let prog = compile(&p, &source);
    Harness::new(&prog, spec(top))
        .run(Mode::Tangent)
        .unwrap_or_else(|e| panic!("{top}: {e}"))
        .jacobian
}

#[test]
fn flattened_graphs_agree_with_per_statement_graphs_and_divided_differences() {
    let Some(cat) = catalogue() else { return };
    let path = xaif_testkit::repo_root().join("fixtures/tangent/flatten.xaif");
    let (p, source) = xaif_model::read_program_file(&path).unwrap();
    xaif_model::validate_program(&p, &source).unwrap();
    let flat = tangent(&p, &cat, None, &TangentOptions::default())
        .unwrap()
        .program;
    let mut per = TangentOptions::default();
    per.flatten.per_statement = true;
    let single = tangent(&p, &cat, None, &per).unwrap().program;
    let original = compile(&p, &source);
    let tops = [
        "f_alias",
        "f_redefine",
        "f_self",
        "f_index",
        "f_loop",
        "f_copy",
        "f_zero",
        "f_array",
    ];
    for top in tops {
        let a = jacobian(&flat, top);
        let b = jacobian(&single, top);
        let c = xaif_interp::compare(&a, &b, 1e-12, 1e-14).unwrap();
        assert!(c.matches(), "{top}: flattened {a:?} vs per statement {b:?}");
        let dd = Harness::new(&original, spec(top))
            .divided_differences(1e-7)
            .unwrap();
        let c = xaif_interp::compare(&a, &dd, 1e-5, 1e-6).unwrap();
        assert!(
            c.matches(),
            "{top}: tangent {a:?} vs divided differences {dd:?}"
        );
        assert!(
            a.entries.iter().any(|x| *x != 0.0),
            "{top}: a zero Jacobian tests nothing"
        );
    }
}
