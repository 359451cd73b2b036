//! Trace mode: one fixture per construct (branches, loops, calls, array
//! subscripts, conditions) whose trace records, executed, are exactly the
//! path the program takes; and the whole corpus: every tangent input's
//! trace output validates, runs to the end, computes the same values in
//! placeholder 2 (traced) as in placeholder 1 (original), and writes
//! well-nested records.

use std::path::{Path, PathBuf};

use xaif_interp::corpus::{read_index, run_file};
use xaif_interp::{CompileOptions, Harness, HarnessSpec, Mode};
use xaif_testkit::{have_xmllint, repo_root, shared_dir, xmllint_valid};
use xaif_trace::{trace, TraceOptions, TEMPLATE};

fn read(path: &Path) -> xaif_model::Program {
    let (p, source) = xaif_model::read_program_file(path).unwrap();
    xaif_model::validate_program(&p, &source).unwrap();
    p
}

/// The trace output of a program, written and read back (the gate passes).
fn traced(p: &xaif_model::Program, options: &TraceOptions) -> xaif_model::Program {
    let mut out = trace(p, xaif_linearize::builtin(), None, options).unwrap();
    out.mark_as_output("");
    let text = xaif_model::write_program(&out);
    let (q, source) = xaif_model::read_program_str(&text, None).unwrap();
    xaif_model::validate_program(&q, &source).unwrap();
    q
}

/// Runs `p` at x = (0.5, 1) under `mode`: the dependents and the records.
fn run(p: &xaif_model::Program, mode: Mode) -> (Vec<f64>, Vec<String>) {
    let text = xaif_model::write_program(p);
    let (q, source) = xaif_model::read_program_str(&text, None).unwrap();
    let prog = xaif_interp::compile(&q, &source);
    let o = Harness::new(&prog, HarnessSpec::generic(2, 2))
        .run(mode)
        .unwrap();
    (o.jacobian.entries.clone(), o.trace)
}

fn fixture(name: &str) -> PathBuf {
    repo_root()
        .join("fixtures/trace")
        .join(format!("{name}.xaif"))
}

/// Traces a fixture, checks the template and that the traced copy
/// computes what the original does, and returns the records.
fn records(name: &str) -> Vec<String> {
    let p = read(&fixture(name));
    let t = traced(&p, &TraceOptions::default());
    for (_, r) in t.routines.iter() {
        assert_eq!(r.attrs.get("template_name"), Some(TEMPLATE));
        let xaif_model::RoutineBody::Replacements(list) = &r.body else {
            panic!("{name}: a routine without replacements")
        };
        assert_eq!(list.len(), 2, "{name}: placeholders 1 and 2");
    }
    let (y_plain, none) = run(&p, Mode::Plain);
    assert!(none.is_empty());
    let (y_traced, records) = run(&t, Mode::Trace);
    assert_eq!(y_plain, y_traced, "{name}: tracing changed the values");
    records
}

fn lines(text: &str) -> Vec<String> {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .split("> <")
        .map(|s| {
            let s = s.trim();
            let s = s.strip_prefix('<').unwrap_or(s);
            let s = s.strip_suffix('>').unwrap_or(s);
            format!("<{s}>")
        })
        .collect()
}

#[test]
fn branches_record_the_arm_taken() {
    // x(1) > x(2) is false at (0.5, 1): the false arm (0); t = x(2) - x(1)
    // > 0 is true (1) and has no subscripted argument to record.
    assert_eq!(
        records("branches"),
        lines(
            r#"<Branch line="11"> <Condition> <Arg name="X"> <Index val="1"/> </Arg>
               <Arg name="X"> <Index val="2"/> </Arg> </Condition> <Cfval val="0"/> </Branch>
               <Branch line="16"> <Cfval val="1"/> </Branch>"#
        )
    );
}

#[test]
fn loops_record_their_trip_count() {
    // while y(1) < x(2): y(1) += x(1) runs twice from y(1) = 0; the DO
    // loop over a passive index is not traced.
    assert_eq!(
        records("loops"),
        lines(
            r#"<Loop line="11"> <Condition> <Arg name="Y"> <Index val="1"/> </Arg>
               <Arg name="X"> <Index val="2"/> </Arg> </Condition> <Cfval val="2"/> </Loop>"#
        )
    );
}

#[test]
fn calls_record_subscripted_arguments() {
    assert_eq!(
        records("calls"),
        lines(
            r#"<Call name="foo" line="20"> </Call>
               <Call name="bar" line="21"> <Arg name="X"> <Index val="2"/> </Arg>
               <Arg name="Y"> <Index val="1"/> </Arg> </Call>"#
        )
    );
}

#[test]
fn subscripts_are_recorded_by_value() {
    // k = 1: x(k) records 1, y(k+1) (an expression, through a temporary)
    // records 2; abs is non-smooth and records its subscripted arguments.
    assert_eq!(
        records("indices"),
        lines(
            r#"<Call name="bar" line="22"> <Arg name="X"> <Index val="1"/> </Arg>
               <Arg name="Y"> <Index val="2"/> </Arg> </Call>
               <Call name="abs_scal" line="23"> <Arg name="X"> <Index val="1"/> </Arg>
               <Arg name="X"> <Index val="2"/> </Arg> </Call>"#
        )
    );
}

#[test]
fn conditions_record_only_active_subscripted_arguments() {
    // t*x(k) < x(1) with k = 2 is 0.5 < 0.5: false; k == 2 is passive.
    assert_eq!(
        records("conditions"),
        lines(
            r#"<Branch line="12"> <Condition> <Arg name="X"> <Index val="2"/> </Arg>
               <Arg name="X"> <Index val="1"/> </Arg> </Condition> <Cfval val="0"/> </Branch>"#
        )
    );
}

#[test]
fn names_follow_the_decoration_style() {
    // Open64 names: X_1 is shown as X, foo__3 as foo; without decoration
    // (-F NO_STYLE) names are shown as written.
    let p = read(&fixture("calls"));
    let plain = TraceOptions {
        decoration: xaif_model::Decoration::Plain,
        ..Default::default()
    };
    let (_, r) = run(&traced(&p, &plain), Mode::Trace);
    assert!(
        r.contains(&"<Call name=\"bar\" line=\"21\">".to_string()),
        "{r:?}"
    );
    assert_eq!(
        xaif_model::Decoration::Open64.plain_name("foo__3", true),
        "foo"
    );
    assert_eq!(
        xaif_model::Decoration::Plain.plain_name("foo__3", true),
        "foo__3"
    );
}

/// Whether trace records nest like XML elements.
fn well_nested(records: &[String]) -> bool {
    let mut stack: Vec<String> = Vec::new();
    for r in records {
        let name: String = r
            .trim_start_matches(['<', '/'])
            .chars()
            .take_while(|c| c.is_alphanumeric())
            .collect();
        if r.starts_with("</") {
            if stack.pop().as_deref() != Some(name.as_str()) {
                return false;
            }
        } else if !r.ends_with("/>") {
            stack.push(name);
        }
    }
    stack.is_empty()
}

#[test]
fn corpus_trace_outputs_validate_and_run_to_the_end() {
    let Some(shared) = shared_dir() else { return };
    let examples = read_index(&shared.join("corpus")).unwrap();
    let non_path = shared.join("xaif/schema/examples/noninlinable_intrinsics.xaif");
    let (_, non) = xaif_linearize::catalogue::read_catalogues(
        &shared.join("xaif/schema/examples/inlinable_intrinsics.xaif"),
        Some(&non_path),
    )
    .unwrap();
    let out = std::env::temp_dir().join(format!("xaifb-trace-corpus-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut files = Vec::new();
    let mut failures = Vec::new();
    let mut ran = 0;
    for ex in examples.iter().filter(|e| e.input(false).is_file()) {
        let p = read(&ex.input(false));
        let non = ex.options.contains("-N").then_some(non.as_ref()).flatten();
        let options = TraceOptions {
            rename: ex.options.contains("'-r'"),
            ..Default::default()
        };
        let mut t = match trace(&p, xaif_linearize::builtin(), non, &options) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{}: {e}", ex.name));
                continue;
            }
        };
        t.mark_as_output("");
        let file = out.join(format!("{}.xaif", ex.name));
        std::fs::write(&file, xaif_model::write_program(&t)).unwrap();
        files.push(file.clone());
        if !matches!(
            ex.verdict.as_str(),
            "executable-generic-harness" | "executable-custom-harness"
        ) {
            continue;
        }
        ran += 1;
        let traced = run_file(
            ex,
            &file,
            Mode::Trace,
            CompileOptions::default(),
            50_000_000,
        );
        // Placeholder 1, the original code with its conversions.
        let plain = run_file(
            ex,
            &file,
            Mode::Plain,
            CompileOptions::default(),
            50_000_000,
        );
        match (&traced.outcome, &plain.outcome) {
            (Ok(a), Ok(b)) => {
                if a.jacobian.entries != b.jacobian.entries {
                    failures.push(format!("{}: tracing changed the values", ex.name));
                }
                if !well_nested(&a.trace) {
                    failures.push(format!("{}: records do not nest: {:?}", ex.name, a.trace));
                }
            }
            (Err(e), _) => failures.push(format!("{}: the trace run stopped: {e}", ex.name)),
            (_, Err(e)) => failures.push(format!("{}: the plain run stopped: {e}", ex.name)),
        }
    }
    assert!(files.len() >= 160, "{} trace outputs", files.len());
    assert!(ran >= 100, "{ran} runs");
    if have_xmllint() {
        let schema = shared.join("xaif/schema/xaif_output.xsd");
        let valid = xmllint_valid(&schema, &files);
        for f in &files {
            if !valid.contains(f) {
                failures.push(format!("{}: does not validate", f.display()));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
