//! The examples of the TBR seed paper: Figure 1 and the Bratu problem of
//! Appendix A, as hand-written XAIF fixtures.

mod common;

use common::{fixture, load, names, routine, stmt};
use xaif_dataflow::{analyze, ActivitySpec, Config, Solver, VarSpec};

fn config(solver: Solver, indep: &[&str], dep: &[&str]) -> Config {
    Config {
        activity: ActivitySpec {
            independents: indep.iter().map(|s| VarSpec::parse(s).unwrap()).collect(),
            dependents: dep.iter().map(|s| VarSpec::parse(s).unwrap()).collect(),
        },
        solver,
        tbr: true,
    }
}

#[test]
fn figure1_records_the_array_elements_and_the_indices_not_a() {
    let (p, _) = load(&fixture("tbr_figure1.xaif"));
    for solver in [Solver::Auto, Solver::Iterative] {
        let a = analyze(&p, &config(solver, &["fig1:x"], &["fig1:x"])).unwrap();
        let r = routine(&a, "fig1");
        let tbr = a.tbr.as_ref().unwrap();
        // s1..s3: i=0, j=10, a=3.14159; s4: x(i)=j+sin(x(i));
        // s5: x(j)=j*cos(x(j))+a; s6: i=i+1; s7: j=j-1; s8: a=a/2.
        let expected: &[(&str, &[&str])] = &[
            ("s1", &[]),
            ("s2", &[]),
            ("s3", &[]),
            ("s4", &["x"]),
            ("s5", &["x"]),
            ("s6", &["i"]),
            ("s7", &["j"]),
            ("s8", &[]),
        ];
        for (id, want) in expected {
            let t = tbr.stmt(stmt(&p, id)).expect("analysed statement");
            assert_eq!(names(&a, r, &t.recorded), *want, "{solver:?} {id} records");
        }
        // The required sets of the paper: Req(x(i)=…) = {x, i}, Req(x(j)=…) = {x, j}.
        let req = |id: &str| names(&a, r, &tbr.stmt(stmt(&p, id)).unwrap().required);
        assert_eq!(req("s4"), ["i", "x"]);
        assert_eq!(req("s5"), ["j", "x"]);
        // `a` is overwritten repeatedly but required nowhere.
        for (_, t) in tbr.stmts.iter() {
            assert!(!names(&a, r, &t.required).contains(&"a".to_string()));
        }
        // Taping at the use instead: both reads of each active statement
        // may be overwritten before its adjoint runs.
        assert_eq!(
            names(&a, r, &tbr.stmt(stmt(&p, "s4")).unwrap().to_tape),
            ["i", "x"]
        );
        assert_eq!(
            names(&a, r, &tbr.stmt(stmt(&p, "s5")).unwrap().to_tape),
            ["j", "x"]
        );
        // Activity: x is active, the integers and `a` are not.
        let act = &a.activity;
        let sym = |name: &str| {
            p.symbols
                .iter()
                .find(|(_, s)| s.name() == name)
                .map(|(i, _)| i)
                .unwrap()
        };
        assert_eq!(act.symbol_active(sym("x")), Some(true));
        assert_eq!(act.symbol_active(sym("a")), Some(false));
        assert_eq!(act.symbol_active(sym("i")), Some(false));
    }
}

#[test]
fn bratu_records_the_exp_temporaries_and_not_f() {
    let (p, _) = load(&fixture("tbr_bratu.xaif"));
    for solver in [Solver::Auto, Solver::Iterative] {
        let a = analyze(&p, &config(solver, &["bratu:x", "bratu:prm"], &["bratu:f"])).unwrap();
        let r = routine(&a, "bratu");
        let tbr = a.tbr.as_ref().unwrap();
        let mut recorded_anywhere: Vec<String> = Vec::new();
        for (s, t) in tbr.stmts.iter() {
            let rec = names(&a, r, &t.recorded);
            assert!(
                !rec.iter().any(|n| n.starts_with('f')),
                "{solver:?}: statement {} records {rec:?}",
                p.stmts[s].id()
            );
            recorded_anywhere.extend(rec);
        }
        recorded_anywhere.sort();
        recorded_anywhere.dedup();
        // The loop's temporaries (and the anonymous loop's index, which the
        // paper's DO loop restores by running backwards) are recorded; the
        // inputs x and prm, and h, are never overwritten after they are
        // required.
        assert_eq!(
            recorded_anywhere,
            ["exp10", "exp5", "exp6", "exp7", "exp8", "exp9", "i"],
            "{solver:?}"
        );
        // Each temporary is recorded exactly where it is reassigned.
        for k in 5..=10 {
            let name = format!("exp{k}");
            let at: Vec<&str> = tbr
                .stmts
                .iter()
                .filter(|(_, t)| names(&a, r, &t.recorded) == [name.clone()])
                .map(|(s, _)| p.stmts[s].id())
                .collect();
            assert_eq!(at.len(), 1, "{name} recorded at {at:?}");
        }
        // f(i-1), f(i), f(i+1) appear only linearly: never required.
        for (_, t) in tbr.stmts.iter() {
            assert!(!names(&a, r, &t.required).iter().any(|n| n.starts_with('f')));
        }
    }
}

#[test]
fn fixtures_are_schema_valid() {
    let Some(shared) = xaif_testkit::shared_dir() else {
        return;
    };
    if !xaif_testkit::have_xmllint() {
        return;
    }
    let schema = shared.join("xaif/schema/xaif.xsd");
    let files = xaif_testkit::xaif_files(&xaif_testkit::repo_root().join("fixtures/dataflow"));
    assert!(files.len() >= 2);
    for f in files {
        let out = std::process::Command::new("xmllint")
            .arg("--noout")
            .arg("--schema")
            .arg(&schema)
            .arg(&f)
            .output()
            .expect("xmllint runs");
        assert!(
            out.status.success(),
            "{}: {}",
            f.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        load(&f);
    }
}
