//! Activity on the front-end inputs of the OpenAD regression corpus,
//! compared with the front end's `active` flags.

mod common;

use std::path::Path;

use xaif_dataflow::{
    analyze, coarse_dependency_paths, compare_with_front_end, ActivitySpec, Config, Solver, VarSpec,
};
use xaif_model::Program;

/// Front-end-active symbols we find passive although a flow-insensitive
/// path connects them to an independent and a dependent, each checked by
/// hand against the source:
const PRECISER_THAN_FRONT_END: &[(&str, &str, &str)] = &[
    (
        "passiveMix3",
        "M2_2",
        "foo(p, t1) runs after y is computed: t1's new value reaches no dependent",
    ),
    (
        "passiveMix3",
        "OAD_CTMP0_3",
        "the temporary of min() inside foo, after y is computed",
    ),
    (
        "argumentConversion_8",
        "X_1",
        "foo only passes x to bar, which reads it nowhere (bar's x is passive in the front end too)",
    ),
];

/// Independents and dependents from the example's harness.json, or the
/// default (the top routine's active formals).
fn spec(dir: &Path, p: &Program) -> ActivitySpec {
    let Ok(text) = std::fs::read_to_string(dir.join("harness.json")) else {
        return ActivitySpec::default();
    };
    let h: serde_json::Value = serde_json::from_str(&text).expect("harness.json is JSON");
    let top = h["top"].as_str().expect("top").to_ascii_lowercase();
    let mut spec = ActivitySpec::default();
    // The harness names the routine of the transformed program; when the
    // front-end input calls it differently (renameSRinMod), use the default.
    let Some(routine) = p
        .routines
        .iter()
        .find(|(_, r)| xaif_dataflow::fortran_routine_name(r.symbol_name()) == top && r.has_body(p))
        .map(|(_, r)| r)
    else {
        return spec;
    };
    for (i, slot) in h["args"].as_array().into_iter().flatten().enumerate() {
        let kind = slot["kind"].as_str().unwrap_or("");
        if kind != "x" && kind != "y" {
            continue;
        }
        let formal = routine
            .arguments
            .as_ref()
            .and_then(|a| {
                a.args
                    .iter()
                    .find(|x| x.int("position") == Some(i as i64 + 1))
            })
            .and_then(|a| a.get("symbol_id"))
            .expect("formal at that position");
        let v = VarSpec {
            routine: top.clone(),
            variable: formal.to_string(),
        };
        if kind == "x" {
            spec.independents.push(v);
        } else {
            spec.dependents.push(v);
        }
    }
    for g in h["globals"].as_array().into_iter().flatten() {
        let v = VarSpec {
            routine: top.clone(),
            variable: g["name"].as_str().expect("name").to_string(),
        };
        if g["kind"] == "x" {
            spec.independents.push(v);
        } else {
            spec.dependents.push(v);
        }
    }
    spec
}

/// The corpus examples' tangent inputs that pass the gate, in order, with
/// their names and directories; `None` without the reference material.
fn corpus_programs() -> Option<Vec<(String, std::path::PathBuf, xaif_model::Program)>> {
    let shared = xaif_testkit::shared_dir()?;
    let mut dirs: Vec<_> = std::fs::read_dir(shared.join("corpus/examples"))
        .expect("corpus examples")
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    let mut programs = Vec::new();
    for dir in dirs {
        let file = dir.join("tlmhead_sf.pre.xaif");
        let Ok((p, sm)) = xaif_model::read_program_file(&file) else {
            continue;
        };
        if xaif_model::validate_program(&p, &sm).is_err() {
            continue;
        }
        let example = dir.file_name().unwrap().to_string_lossy().to_string();
        programs.push((example, dir, p));
    }
    Some(programs)
}

#[test]
fn corpus_activity_agrees_with_the_front_end_or_is_explained() {
    let Some(dirs) = corpus_programs() else {
        return;
    };
    let mut analysed = 0;
    let mut failures = Vec::new();
    for (example, dir, p) in dirs {
        let config = Config {
            activity: spec(&dir, &p),
            solver: Solver::Auto,
            tbr: true,
        };
        let a = analyze(&p, &config).unwrap_or_else(|e| panic!("{example}: {e}"));
        analysed += 1;
        let coarse =
            coarse_dependency_paths(&a.facts, &a.activity.independents, &a.activity.dependents);
        for d in compare_with_front_end(&a.facts, &a.activity) {
            if d.ours {
                // (a) Everything we call active is active in the front end,
                // or shares its storage with a symbol that is.
                if d.explanation.is_none() {
                    failures.push(format!("{example}: {} active for us only", d.name));
                }
                continue;
            }
            // (b) A front-end-active symbol we call passive must be off
            // every dependency path, or be a reviewed precision gain.
            let st = a.facts.storage_of_symbol(d.symbol).expect("resolved");
            let reviewed = PRECISER_THAN_FRONT_END
                .iter()
                .any(|(e, s, _)| *e == example && *s == d.name);
            if coarse[st.index()] && !reviewed {
                failures.push(format!(
                    "{example}: {} passive for us ({:?}) but on a dependency path",
                    d.name, d.explanation
                ));
            }
        }
        // Every independent and dependent is active.
        for (_, st) in a.activity.independents.iter().chain(&a.activity.dependents) {
            if a.facts.storages[st.index()].differentiable
                && a.activity.pointwise[st.index()]
                && !a.activity.storage_active(*st)
            {
                failures.push(format!(
                    "{example}: seed {} passive",
                    a.facts.storages[st.index()].name
                ));
            }
        }
        // The iterative equations give the same verdicts.
        let it = analyze(
            &p,
            &Config {
                solver: Solver::Iterative,
                ..config.clone()
            },
        )
        .unwrap();
        if it.activity.storages != a.activity.storages {
            failures.push(format!("{example}: iterative activity differs"));
        }
    }
    assert!(analysed > 100, "only {analysed} corpus inputs analysed");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The checkpoint decisions' lean analysis gives exactly the routine sets
/// of the whole TBR analysis, and fails where it fails.
#[test]
fn corpus_overwrites_are_the_tbr_routine_sets() {
    let Some(dirs) = corpus_programs() else {
        return;
    };
    let (mut compared, mut routines) = (0, 0);
    let mut failures = Vec::new();
    for (example, _, p) in dirs {
        for pessimistic in [false, true] {
            let config = Config {
                tbr: true,
                ..Default::default()
            };
            let full = xaif_dataflow::analyze_with_black_boxes(&p, &config, pessimistic);
            let lean = xaif_dataflow::analyze_overwrites(&p, Solver::Auto, pessimistic);
            let (full, (_, lean)) = match (full, lean) {
                (Ok(f), Ok(l)) => (f, l),
                (Err(_), Err(_)) => continue,
                _ => {
                    failures.push(format!("{example}: only one analysis failed"));
                    continue;
                }
            };
            let tbr = full.tbr.expect("TBR asked for");
            compared += 1;
            for &r in &full.facts.callgraph.routines {
                routines += 1;
                let (Some(t), Some(o)) = (tbr.routine(r), lean.get(r)) else {
                    failures.push(format!("{example}: routine {r:?} missing"));
                    continue;
                };
                if t.may_write != o.may_write || t.overwritten_after != o.overwritten_after {
                    failures.push(format!("{example}: routine {r:?} differs"));
                }
            }
            if lean.iter().count() != tbr.routines.iter().count() {
                failures.push(format!("{example}: different routines analysed"));
            }
        }
    }
    assert!(compared > 200, "only {compared} analyses compared");
    assert!(routines > 400, "only {routines} routines compared");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
