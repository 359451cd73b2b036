//! Checkpointed loops over the regression corpus (acceptance 1 and 2 of
//! the checkpointing issue): every `ForLoop` of every example that runs
//! under the generic harness, marked alone with 1, 2 and 3 snapshots,
//! gives in split and in joint mode the Jacobian of `ad.out` (1e-8
//! relative) and of the adjoint without checkpointing (1e-12 relative),
//! with every tape, checkpoint stack and snapshot empty at the end; each
//! reversed loop instance takes exactly `t(l, s)` forward steps; and every
//! output validates against `xaif_output.xsd`.

use std::path::{Path, PathBuf};

use xaif_cfrev::checkpoint::LoopMark;
use xaif_cfrev::{adjoint, AdjointOptions};
use xaif_interp::corpus::{read_index, Example};
use xaif_interp::{compare, CompileOptions, Harness, Jacobian, Mode, Outcome};
use xaif_linearize::catalogue::read_catalogues;
use xaif_linearize::Catalogue;
use xaif_model::{NonInlinableCatalogue, Program, RoutineBody, VertexKind};
use xaif_testkit::{have_xmllint, shared_dir, xmllint_valid};

/// Loops that are refused, and why: one is left by a jump (Fortran's
/// `exit`), which the issue asks to refuse; the loop around it has a body
/// that this jump makes unstructured (see `docs/checkpointing.md`).
const REFUSED: &[(&str, i64, &str)] = &[
    ("Unstructured2", 16, "its body is not structured"),
    ("Unstructured2", 17, "the loop is left by a jump"),
];

/// The example's adjoint input, with the engine options it was built with.
fn input(ex: &Example) -> (Program, AdjointOptions) {
    let (p, source) = xaif_model::read_program_file(&ex.input(true)).unwrap();
    xaif_model::validate_program(&p, &source).unwrap();
    let mut options = AdjointOptions::default();
    options.flatten.per_statement |= ex.options.contains("-S");
    options.zero_locals |= ex.options.contains("-D");
    options.rename |= ex.options.contains("'-r'");
    (p, options)
}

/// Every `ForLoop` with a line number: (routine symbol_id, line).
fn for_loops(p: &Program) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for (_, r) in p.routines.iter() {
        let RoutineBody::Graph(cfg) = &r.body else {
            continue;
        };
        for v in p.cfgs[*cfg].vertex_ids() {
            if let VertexKind::ForLoop { .. } = p.vertices[v].kind {
                if let Some(line) = p.vertices[v].attrs.int("lineNumber") {
                    out.push((r.symbol_name().to_string(), line));
                }
            }
        }
    }
    out
}

/// Writes the adjoint of `p` to `path`.
fn transform(
    p: &Program,
    catalogues: &(Catalogue, Option<NonInlinableCatalogue>),
    options: &AdjointOptions,
    path: &Path,
) -> Result<(), String> {
    let result =
        adjoint(p, &catalogues.0, catalogues.1.as_ref(), options).map_err(|e| e.to_string())?;
    let mut program = result.transformed.program;
    program.mark_as_output("");
    std::fs::write(path, xaif_model::write_program(&program)).map_err(|e| e.to_string())
}

/// Runs the output file `path` of example `ex` in `mode`.
fn run(ex: &Example, path: &Path, mode: Mode) -> Result<Outcome, String> {
    let (program, source) = xaif_model::read_program_file(path).map_err(|e| e.to_string())?;
    xaif_model::validate_program(&program, &source).map_err(|e| e.to_string())?;
    let prog = xaif_interp::compile_with(&program, &source, CompileOptions::default());
    let mut harness = Harness::new(&prog, ex.harness()?);
    harness.limits = xaif_interp::Limits::with_steps(50_000_000);
    harness.run(mode).map_err(|e| e.to_string())
}

/// Why `got` is not `want` within `rel`, if it is not.
fn differs(got: &Jacobian, want: &Jacobian, rel: f64) -> Option<String> {
    match compare(got, want, rel, 1e-13) {
        Ok(c) if c.matches() => None,
        Ok(c) => Some(format!("worst relative difference {:.3e}", c.max_rel)),
        Err(e) => Some(e),
    }
}

/// The checks of one run of a checkpointed output.
fn check_outcome(
    o: &Outcome,
    ad: &Jacobian,
    plain: &Jacobian,
    line: i64,
    instances: &mut usize,
) -> Result<(), String> {
    if !o.tapes_empty {
        return Err("tapes, checkpoints or snapshots not empty at the end".into());
    }
    if let Some(d) = differs(&o.jacobian, ad, 1e-8) {
        return Err(format!("against ad.out: {d}"));
    }
    if let Some(d) = differs(&o.jacobian, plain, 1e-12) {
        return Err(format!("against the adjoint without checkpointing: {d}"));
    }
    let records = &o.stats.checkpointed_loops;
    if records.is_empty() && o.stats.checkpointed_forward_steps > 0 {
        return Err("forward steps but no record".into());
    }
    for r in records {
        if r.line != line {
            return Err(format!("a record of line {} instead of {line}", r.line));
        }
        let t = xaif_revolve::min_forward_steps(r.iterations, r.snapshots);
        if r.forward_steps != t {
            return Err(format!(
                "{} forward steps for {} iterations and {} snapshots, not t = {t}",
                r.forward_steps, r.iterations, r.snapshots
            ));
        }
        if r.peak_snapshots > r.snapshots {
            return Err(format!("{} snapshots held", r.peak_snapshots));
        }
    }
    *instances += records.len();
    Ok(())
}

#[test]
fn every_corpus_for_loop_checkpointed_gives_the_same_jacobian() {
    let Some(shared) = shared_dir() else { return };
    let schema = shared.join("xaif/schema/examples");
    let examples = read_index(&shared.join("corpus")).unwrap();
    let scratch = xaif_testkit::scratch::Scratch::new("xaifb-ckpt", "corpus");
    let mut failures = Vec::new();
    let mut outputs: Vec<PathBuf> = Vec::new();
    let (mut loops, mut runs, mut instances, mut refusals) = (0usize, 0usize, 0usize, 0usize);
    for ex in examples.iter().filter(|e| e.runs_under_generic_harness()) {
        let catalogues = read_catalogues(
            &schema.join("inlinable_intrinsics.xaif"),
            ex.options
                .contains("-N")
                .then(|| schema.join("noninlinable_intrinsics.xaif"))
                .as_deref(),
        )
        .unwrap();
        let (p, base) = input(ex);
        let marks = for_loops(&p);
        if marks.is_empty() {
            continue;
        }
        let ad = ex.ad_out().unwrap();
        let plain_path = scratch.path().join(format!("{}.xaif", ex.name));
        transform(&p, &catalogues, &base, &plain_path).unwrap();
        let plain: Vec<Jacobian> = [Mode::Split, Mode::Joint]
            .iter()
            .map(|&m| run(ex, &plain_path, m).unwrap().jacobian)
            .collect();
        for (routine, line) in marks {
            loops += 1;
            for snapshots in 1..=3 {
                let name = format!("{} {routine}:{line}:{snapshots}", ex.name);
                let mut options = base.clone();
                options.checkpoint_loops = vec![LoopMark {
                    routine: routine.clone(),
                    line,
                    snapshots,
                }];
                let path = scratch
                    .path()
                    .join(format!("{}_{line}_{snapshots}_{routine}.xaif", ex.name));
                let refused = REFUSED
                    .iter()
                    .find(|(e, l, _)| *e == ex.name && *l == line)
                    .map(|(_, _, why)| *why);
                match (transform(&p, &catalogues, &options, &path), refused) {
                    (Err(e), Some(why)) if e.contains(why) => {
                        refusals += 1;
                        continue;
                    }
                    (Err(e), _) => {
                        failures.push(format!("{name}: {e}"));
                        continue;
                    }
                    (Ok(()), Some(why)) => {
                        failures.push(format!("{name}: not refused ({why})"));
                        continue;
                    }
                    (Ok(()), None) => {}
                }
                outputs.push(path.clone());
                for (k, mode) in [Mode::Split, Mode::Joint].into_iter().enumerate() {
                    runs += 1;
                    let checked = run(ex, &path, mode)
                        .and_then(|o| check_outcome(&o, &ad, &plain[k], line, &mut instances));
                    if let Err(e) = checked {
                        failures.push(format!("{name} {mode:?}: {e}"));
                    }
                }
            }
        }
    }
    if have_xmllint() {
        let valid = xmllint_valid(&shared.join("xaif/schema/xaif_output.xsd"), &outputs);
        for f in outputs.iter().filter(|f| !valid.contains(*f)) {
            failures.push(format!(
                "{}: not valid against xaif_output.xsd",
                f.display()
            ));
        }
    }
    eprintln!(
        "{loops} loops, {refusals} refusals, {runs} runs, {instances} reversed loop instances"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(loops >= 60, "only {loops} loops");
    assert_eq!(refusals, 3 * REFUSED.len());
    assert!(instances > 500, "only {instances} reversed loop instances");
}
