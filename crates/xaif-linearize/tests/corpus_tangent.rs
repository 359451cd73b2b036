//! Tangent-linear mode over the regression corpus (acceptance of the
//! tangent issue): every tangent input transforms into schema-valid XAIF,
//! and executing our output reproduces `ad.out` for every executable
//! example, under the default flags and under the flag variants a user may
//! choose.

use std::path::{Path, PathBuf};

use xaif_interp::corpus::{read_index, run_file, Example, RunReport};
use xaif_interp::{CompileOptions, Mode};
use xaif_linearize::{tangent, Catalogue, TangentOptions};
use xaif_model::NonInlinableCatalogue;
use xaif_testkit::{have_xmllint, shared_dir, xmllint_valid};

fn catalogues(shared: &Path) -> (Catalogue, NonInlinableCatalogue) {
    let ex = shared.join("xaif/schema/examples");
    let (c, n) = xaif_linearize::catalogue::read_catalogues(
        &ex.join("inlinable_intrinsics.xaif"),
        Some(&ex.join("noninlinable_intrinsics.xaif")),
    )
    .unwrap();
    (c, n.unwrap())
}

/// The engine options an example was built with (its `options` file).
fn example_options(ex: &Example, base: &TangentOptions) -> (TangentOptions, bool) {
    let mut o = base.clone();
    let opts = &ex.options;
    o.flatten.per_statement |= opts.contains("-S");
    o.zero_locals |= opts.contains("-D");
    o.rename |= opts.contains("'-r'");
    (o, opts.contains("-N"))
}

/// Transforms the example's tangent input; returns the output file.
fn transform(
    shared: &Path,
    ex: &Example,
    base: &TangentOptions,
    out_dir: &Path,
) -> Result<PathBuf, String> {
    let program = xaif_model::read_program_file(&ex.input(false)).map_err(|e| e.to_string())?;
    transform_program(shared, ex, program, base, out_dir)
}

/// Gates and transforms a program read from (or made from) the example's
/// tangent input; returns the output file.
fn transform_program(
    shared: &Path,
    ex: &Example,
    (p, source): (xaif_model::Program, xaif_model::SourceMap),
    base: &TangentOptions,
    out_dir: &Path,
) -> Result<PathBuf, String> {
    let (catalogue, non) = catalogues(shared);
    xaif_model::validate_program(&p, &source).map_err(|e| e.to_string())?;
    let (options, with_non) = example_options(ex, base);
    let result =
        tangent(&p, &catalogue, with_non.then_some(&non), &options).map_err(|e| e.to_string())?;
    let mut program = result.program;
    program.mark_as_output("");
    let path = out_dir.join(format!("{}.xaif", ex.name));
    std::fs::write(&path, xaif_model::write_program(&program)).unwrap();
    Ok(path)
}

/// Runs a tangent output with the example's harness, against `ad.out`.
fn run_tangent(ex: &Example, file: &Path) -> RunReport {
    run_file(
        ex,
        file,
        Mode::Tangent,
        CompileOptions::default(),
        50_000_000,
    )
}

/// Records why `report` does not reproduce `ad.out`, if it does not.
fn check_report(name: &str, report: &RunReport, failures: &mut Vec<String>) {
    match (&report.outcome, &report.comparison) {
        (Err(e), _) => failures.push(format!("{name}: {e}")),
        (Ok(_), Some(c)) if !c.matches() => failures.push(format!(
            "{name}: worst relative {:.3e}, first mismatch {:?}",
            c.max_rel, c.mismatches[0]
        )),
        (Ok(_), None) => failures.push(format!("{name}: nothing to compare")),
        _ => {}
    }
}

fn run_variant(name: &str, base: TangentOptions, check_schema: bool) {
    run_variant_with(name, base, check_schema, false)
}

/// With `compare_operations`, also runs the reference tangent outputs and
/// requires the floating-point operations of our derivative code, summed
/// over the executable corpus, to be at most 0.80 of theirs, and no
/// example to need more than the reference's output.
fn run_variant_with(
    name: &str,
    base: TangentOptions,
    check_schema: bool,
    compare_operations: bool,
) {
    let Some(shared) = shared_dir() else { return };
    let examples = read_index(&shared.join("corpus")).unwrap();
    let out = std::env::temp_dir().join(format!("xaifb-tangent-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut failures = Vec::new();
    let mut outputs = Vec::new();
    let mut checked = 0;
    let (mut ours, mut theirs) = (0u64, 0u64);
    for ex in examples.iter().filter(|e| e.input(false).is_file()) {
        let file = match transform(&shared, ex, &base, &out) {
            Ok(f) => f,
            Err(e) => {
                failures.push(format!("{}: transformation failed: {e}", ex.name));
                continue;
            }
        };
        outputs.push(file.clone());
        if !matches!(
            ex.verdict.as_str(),
            "executable-generic-harness" | "executable-custom-harness"
        ) {
            continue;
        }
        checked += 1;
        let report = run_tangent(ex, &file);
        if compare_operations {
            let reference = run_file(
                ex,
                &ex.reference(Mode::Tangent),
                Mode::Tangent,
                CompileOptions::default(),
                50_000_000,
            );
            if let (Ok(a), Ok(b)) = (&report.outcome, &reference.outcome) {
                ours += a.stats.flops_derivative;
                theirs += b.stats.flops_derivative;
                if a.stats.flops_derivative > b.stats.flops_derivative {
                    failures.push(format!(
                        "{}: {} derivative operations, the reference's output {}",
                        ex.name, a.stats.flops_derivative, b.stats.flops_derivative
                    ));
                }
            }
        }
        check_report(&ex.name, &report, &mut failures);
    }
    assert!(checked > 120, "only {checked} executable examples");
    if compare_operations {
        assert!(
            theirs > 1_000_000,
            "reference derivative code ran only {theirs} operations"
        );
        let ratio = ours as f64 / theirs as f64;
        eprintln!("derivative operations: ours {ours}, reference {theirs}, ratio {ratio:.3}");
        if ratio > 0.80 {
            failures.push(format!(
                "our derivative code runs {ours} floating-point operations, the reference's {theirs} (ratio {ratio:.3} > 0.80)"
            ));
        }
    }
    if check_schema && have_xmllint() {
        let schema = shared.join("xaif/schema/xaif_output.xsd");
        let valid = xmllint_valid(&schema, &outputs);
        for f in outputs.iter().filter(|f| !valid.contains(*f)) {
            failures.push(format!(
                "{}: not valid against xaif_output.xsd",
                f.display()
            ));
        }
    }
    std::fs::remove_dir_all(&out).ok();
    assert!(
        failures.is_empty(),
        "{name}: {} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn default_flags_validate_and_reproduce_ad_out() {
    run_variant_with("default", TangentOptions::default(), true, true);
}

#[test]
fn nary_sax_and_inlinable_calls() {
    run_variant(
        "nary-inline",
        TangentOptions {
            nary: true,
            inline_calls: true,
            ..Default::default()
        },
        true,
    );
}

#[test]
fn operations_metric_and_per_statement_graphs() {
    let mut o = TangentOptions {
        elimination: xaif_elim::Config::from_flags(0, 2, false).unwrap(),
        ..Default::default()
    };
    run_variant("ops", o.clone(), false);
    o.flatten.per_statement = true;
    run_variant("per-statement", o, false);
}

#[test]
fn seed_chain_and_face_elimination() {
    use xaif_elim::{Chain, Extent, Method, Strategy};
    for (name, method, chain) in [
        ("seed-edge", Method::Edge, Chain::seed()),
        ("face", Method::Face, Chain::reverse()),
    ] {
        let config = xaif_elim::Config {
            strategies: vec![Strategy {
                method,
                chain,
                extent: Extent::Total,
            }],
            ..Default::default()
        };
        run_variant(
            name,
            TangentOptions {
                elimination: config,
                ..Default::default()
            },
            false,
        );
    }
}

/// The alias, DU-UD and DO keys and maps and the side-effect lists are
/// optional in XAIF: without any of the front end's analyses every
/// executable example's tangent still reproduces `ad.out` (flattening then
/// assumes what a missing key allows).
#[test]
fn tangent_reproduces_ad_out_without_front_end_analyses() {
    let Some(shared) = shared_dir() else { return };
    let examples = read_index(&shared.join("corpus")).unwrap();
    let dir = xaif_testkit::Scratch::new("xaifb-tangent", "no-analyses");
    let mut failures = Vec::new();
    let mut checked = 0;
    for ex in examples.iter().filter(|e| {
        e.input(false).is_file()
            && matches!(
                e.verdict.as_str(),
                "executable-generic-harness" | "executable-custom-harness"
            )
    }) {
        let text = std::fs::read_to_string(ex.input(false)).unwrap();
        let stripped = xaif_testkit::strip::front_end_analyses(&text);
        let file = xaif_model::read_program_str(&stripped, None)
            .map_err(|e| e.to_string())
            .and_then(|program| {
                transform_program(&shared, ex, program, &TangentOptions::default(), &dir)
            });
        let file = match file {
            Ok(f) => f,
            Err(e) => {
                failures.push(format!("{}: {e}", ex.name));
                continue;
            }
        };
        checked += 1;
        let report = run_tangent(ex, &file);
        check_report(&ex.name, &report, &mut failures);
    }
    assert!(checked > 120, "only {checked} executable examples");
    assert!(
        failures.is_empty(),
        "{} failures without the front end's analyses:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
