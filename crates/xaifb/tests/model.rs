//! Realistic generated programs (`xaif_testkit::model`, `cargo xtask gen
//! --realistic`): xaifb transforms them in both modes into outputs that
//! validate and do not depend on the number of worker threads; their
//! graphs follow the corpus's sizes (most without intermediate vertices,
//! a few heavy ones), almost none repeats a shape, and the default search
//! eliminates every graph of ten or more inner vertices into the graph's
//! own Jacobian.

use std::path::Path;
use std::process::Command;

use xaif_elim::{optimize, Config, Lcg, PropagationMode, VarId};
use xaif_testkit::model::program;
use xaif_testkit::scale::Shape;
use xaif_testkit::{have_xmllint, shared_dir, xmllint_valid};

fn transform(schema: &Path, mode: &str, input: &Path, extra: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_xaifb"))
        .arg(mode)
        .arg("-s")
        .arg(schema)
        .arg("-i")
        .arg(input)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{mode} {}: {}",
        input.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

const SHAPE: Shape = Shape {
    routines: 8,
    statements: 1600,
    seed: 3,
};

#[test]
fn realistic_programs_transform_into_valid_outputs_the_same_with_any_jobs() {
    let Some(shared) = shared_dir() else { return };
    let schema = shared.join("xaif/schema");
    let dir = xaif_testkit::Scratch::new("xaifb-model", "modes");
    let input = dir.join("model.xaif");
    std::fs::write(&input, program(&SHAPE)).unwrap();
    let mut outputs = Vec::new();
    for (mode, extra) in [("tangent", &[][..]), ("adjoint", &["-I"][..])] {
        let mut bytes = Vec::new();
        for jobs in ["1", "3"] {
            let out = dir.join(format!("{mode}-{jobs}.xaif"));
            let mut args = extra.to_vec();
            let out_arg = out.to_str().unwrap().to_string();
            args.extend(["--jobs", jobs, "-o", &out_arg]);
            transform(&schema, mode, &input, &args);
            bytes.push(std::fs::read(&out).unwrap());
            outputs.push(out);
        }
        assert!(bytes[0] == bytes[1], "{mode}: --jobs 1 and --jobs 3 differ");
    }
    if have_xmllint() {
        let valid = xmllint_valid(&schema.join("xaif.xsd"), std::slice::from_ref(&input));
        assert!(
            valid.contains(&input),
            "the generated input is not schema-valid"
        );
        let valid = xmllint_valid(&schema.join("xaif_output.xsd"), &outputs);
        assert_eq!(valid.len(), outputs.len(), "outputs not schema-valid");
    }
}

/// The graphs of the program's tangent transformation, in text form.
fn graphs() -> Vec<Lcg> {
    let text = program(&SHAPE);
    let (p, _) = xaif_model::read_program_str(&text, Some("model.xaif")).unwrap();
    let catalogue = xaif_linearize::builtin::builtin();
    let options = xaif_linearize::TangentOptions {
        dot: true,
        ..Default::default()
    };
    let result = xaif_linearize::tangent(&p, catalogue, None, &options).unwrap();
    result
        .dots
        .iter()
        .filter_map(|d| Lcg::from_text(&d.lcg))
        .collect()
}

#[test]
fn realistic_graphs_are_varied_and_eliminate_into_their_jacobians() {
    let graphs = graphs();
    let n = graphs.len();
    let inner = |g: &Lcg| {
        let e = optimize(g, &Config::default(), PropagationMode::Tangent).unwrap();
        e.report.size.0
    };
    let sizes: Vec<usize> = graphs.iter().map(inner).collect();
    let without = sizes.iter().filter(|&&s| s == 0).count();
    let heavy = sizes.iter().filter(|&&s| s >= 32).count();
    assert!(n > 300, "{n} graphs");
    assert!(
        without * 2 > n,
        "{without} of {n} graphs without inner vertices"
    );
    assert!(heavy * 200 > n, "{heavy} of {n} graphs with 32 or more");
    // Shapes as the memo compares them: texts with variables renamed by
    // rank; nine in ten are distinct.
    let mut shapes: Vec<String> = graphs.iter().map(shape).collect();
    shapes.sort();
    shapes.dedup();
    assert!(shapes.len() * 10 >= n * 9, "{} shapes of {n}", shapes.len());
    let vars = |v: VarId| Some(0.3 + 0.17 * f64::from(v.0 % 11));
    for (g, &size) in graphs.iter().zip(&sizes) {
        if size < 10 {
            continue;
        }
        let want = g.jacobian(&vars).unwrap();
        for mode in [PropagationMode::Tangent, PropagationMode::Adjoint] {
            let o = optimize(g, &Config::default(), mode).unwrap();
            assert!(o.report.cost <= o.report.chain, "{:?}", o.report);
            assert!(o.report.lower_bound <= o.report.cost, "{:?}", o.report);
            let got = o.selection.elimination.jacobian(&vars).unwrap();
            for (a, b) in want.values.iter().zip(&got.values) {
                assert!(
                    (a - b).abs() <= 1e-9 * (1.0 + a.abs()),
                    "{mode:?}: {a} against {b} on\n{}",
                    g.to_text()
                );
            }
        }
    }
}

/// A graph's text with its variable labels renumbered by rank.
fn shape(g: &Lcg) -> String {
    let text = g.to_text();
    let mut ids: Vec<u64> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.strip_prefix('v')?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    text.lines()
        .map(|l| {
            let p: Vec<&str> = l.split_whitespace().collect();
            match p.as_slice() {
                [a, b, v] if v.starts_with('v') => {
                    let id: u64 = v[1..].parse().unwrap();
                    format!("{a} {b} v{}\n", ids.binary_search(&id).unwrap())
                }
                _ => format!("{l}\n"),
            }
        })
        .collect()
}
