//! Checkpointed loops on the fixtures of `fixtures/checkpoint`:
//!
//! - the hard cases of the snapshot rule (`hard_cases.xaif`, see
//!   `docs/decisions.md`): a loop input the code after the loop overwrites
//!   (split mode), a global only a callee changes, sections of an array,
//!   an index variable the body changes. Each loop, alone and all together,
//!   with 1 to 3 snapshots, in split and joint mode, gives the Jacobian of
//!   the adjoint without checkpointing; the snapshot holds exactly what the
//!   rule says; and leaving the hard variable out of the snapshot breaks
//!   the Jacobian (the cases are hard);
//! - two-level checkpointing (`two_level.xaif`): an outer and an inner loop
//!   marked give the same Jacobian, the tape of one inner step at most, and
//!   each level's minimum of forward steps;
//! - 1,000 steps (`timestep.xaif`): the peak tape is one step's, the
//!   snapshots at most `s` states;
//! - a state of every kind beyond the default ones (`kinds.xaif`: an
//!   `integer(8)` beyond 2^31, a `real(4)` vector, a logical, a string, an
//!   `integer(2)` rank-7 array): stored and restored by the generic calls,
//!   the Jacobian without checkpointing, and each variable needed; a kind
//!   the run-time does not hold is refused at the loop, naming the variable.

use xaif_cfrev::checkpoint::LoopMark;
use xaif_cfrev::{adjoint, AdjointOptions};
use xaif_interp::{compare, Harness, HarnessSpec, Jacobian, Mode, Outcome};
use xaif_model::{Program, RoutineBody, VertexKind};

fn fixture(name: &str) -> (Program, xaif_model::SourceMap) {
    let path = xaif_testkit::repo_root()
        .join("fixtures/checkpoint")
        .join(name);
    let (p, source) = xaif_model::read_program_file(&path).unwrap();
    xaif_model::validate_program(&p, &source).unwrap();
    (p, source)
}

fn mark(routine: &str, line: i64, snapshots: u64) -> LoopMark {
    LoopMark {
        routine: routine.into(),
        line,
        snapshots,
    }
}

/// The adjoint's text with `marks`.
fn adjoint_text(p: &Program, marks: Vec<LoopMark>) -> String {
    let options = AdjointOptions {
        checkpoint_loops: marks,
        ..AdjointOptions::default()
    };
    let mut out = adjoint(p, xaif_linearize::builtin(), None, &options)
        .unwrap()
        .transformed
        .program;
    out.mark_as_output("");
    xaif_model::write_program(&out)
}

/// Runs adjoint text in `mode` with the generic harness.
fn run(text: &str, n: usize, m: usize, mode: Mode) -> Outcome {
    let (p, source) = xaif_model::read_program_str(text, None).unwrap();
    xaif_model::validate_program(&p, &source).unwrap();
    let prog = xaif_interp::compile(&p, &source);
    let mut h = Harness::new(&prog, HarnessSpec::generic(n, m));
    h.limits = xaif_interp::Limits::with_steps(200_000_000);
    let o = h.run(mode).unwrap();
    assert!(o.tapes_empty, "tapes, checkpoints or snapshots left");
    o
}

fn same(a: &Jacobian, b: &Jacobian, what: &str) {
    let c = compare(a, b, 1e-12, 1e-15).unwrap();
    assert!(
        c.matches(),
        "{what}: worst relative difference {:.3e}\n{}{}",
        c.max_rel,
        a.to_out("AD"),
        b.to_out("AD")
    );
}

fn differs(a: &Jacobian, b: &Jacobian) -> bool {
    !compare(a, b, 1e-9, 1e-12).unwrap().matches()
}

/// Every record of `o` takes `t(l, s)` forward steps.
fn on_schedule(o: &Outcome) {
    for r in &o.stats.checkpointed_loops {
        assert_eq!(
            r.forward_steps,
            xaif_revolve::min_forward_steps(r.iterations, r.snapshots),
            "{r:?}"
        );
        assert!(r.peak_snapshots <= r.snapshots);
    }
}

const HARD: [(&str, i64); 4] = [
    ("after", 20),
    ("incallee", 30),
    ("section", 40),
    ("index", 50),
];

#[test]
fn the_hard_cases_give_the_jacobian_without_checkpointing() {
    let (p, _) = fixture("hard_cases.xaif");
    let plain = adjoint_text(&p, Vec::new());
    let modes = [Mode::Split, Mode::Joint];
    let want: Vec<Jacobian> = modes
        .iter()
        .map(|&m| run(&plain, 2, 4, m).jacobian)
        .collect();
    for s in 1..=3 {
        let mut sets: Vec<Vec<LoopMark>> = HARD.iter().map(|(r, l)| vec![mark(r, *l, s)]).collect();
        sets.push(HARD.iter().map(|(r, l)| mark(r, *l, s)).collect());
        for marks in sets {
            let text = adjoint_text(&p, marks.clone());
            for (k, &mode) in modes.iter().enumerate() {
                let o = run(&text, 2, 4, mode);
                same(&o.jacobian, &want[k], &format!("{marks:?} {mode:?}"));
                on_schedule(&o);
                assert_eq!(o.stats.checkpointed_loops.len(), 4 * marks.len());
            }
        }
    }
}

/// The loop vertex at `line` of routine `name`.
fn loop_at(p: &Program, name: &str, line: i64) -> (xaif_model::RoutineId, xaif_model::VertexId) {
    let (rid, r) = p
        .routines
        .iter()
        .find(|(_, r)| r.symbol_name() == name)
        .unwrap();
    let RoutineBody::Graph(cfg) = &r.body else {
        panic!("no body")
    };
    let v = p.cfgs[*cfg]
        .vertex_ids()
        .find(|&v| {
            matches!(p.vertices[v].kind, VertexKind::ForLoop { .. })
                && p.vertices[v].attrs.int("lineNumber") == Some(line)
        })
        .unwrap();
    (rid, v)
}

#[test]
fn the_snapshot_holds_what_the_rule_says() {
    let (p, _) = fixture("hard_cases.xaif");
    let loops: Vec<_> = HARD.iter().map(|(r, l)| loop_at(&p, r, *l)).collect();
    let states = xaif_dataflow::analyze_loop_states(
        &p,
        xaif_dataflow::Solver::default(),
        false,
        &loops,
        true,
    )
    .unwrap();
    let names: Vec<Vec<&str>> = states
        .iter()
        .map(|s| {
            let mut n: Vec<&str> = s.iter().map(|&x| p.symbols[x].name()).collect();
            n.sort_unstable();
            n
        })
        .collect();
    // `after`: G (overwritten by head after the call), not C0 (never
    // written again); the formals; its loop variable.
    assert_eq!(names[0], ["G", "I", "X", "Y"]);
    // `incallee`: H, which only `bump` changes and `incallee` never names.
    assert_eq!(names[1], ["H", "I", "X", "Y"]);
    // `section`: all of W, read and written in sections.
    assert_eq!(names[2], ["I", "W", "X", "Y"]);
    // `index`: the global index K the body changes.
    assert_eq!(names[3], ["I", "K", "X", "Y"]);
}

/// `text` without the store and restore calls of the snapshot variable
/// `symbol`.
fn without_snapshot_of(text: &str, symbol: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    let needle = format!("symbol_id=\"{symbol}\"");
    while let Some(at) = rest.find("<xaif:InlinableSubroutineCall subroutine_name=\"oad_revolve_") {
        let end = rest[at..]
            .find("</xaif:InlinableSubroutineCall>")
            .map(|e| at + e + "</xaif:InlinableSubroutineCall>".len())
            .unwrap();
        let call = &rest[at..end];
        out.push_str(&rest[..at]);
        let snapshot =
            call.contains("\"oad_revolve_store\"") || call.contains("\"oad_revolve_restore\"");
        if !(snapshot && call.contains(&needle)) {
            out.push_str(call);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn each_hard_case_breaks_without_its_variable_in_the_snapshot() {
    let (p, _) = fixture("hard_cases.xaif");
    let plain = adjoint_text(&p, Vec::new());
    // (loop, the variable, the modes it breaks: G only in split mode, where
    // head overwrites it before the adjoint sweep; in joint mode the
    // argument checkpoint of `after` restores it).
    let cases = [
        (HARD[0], "G", vec![Mode::Split]),
        (HARD[1], "H", vec![Mode::Split, Mode::Joint]),
        (HARD[2], "W", vec![Mode::Split, Mode::Joint]),
        (HARD[3], "K", vec![Mode::Split, Mode::Joint]),
    ];
    for ((routine, line), symbol, modes) in cases {
        let text = adjoint_text(&p, vec![mark(routine, line, 2)]);
        let broken = without_snapshot_of(&text, symbol);
        assert_ne!(broken, text, "no snapshot call of {symbol}");
        for mode in modes {
            let want = run(&plain, 2, 4, mode).jacobian;
            same(&run(&text, 2, 4, mode).jacobian, &want, symbol);
            let got = run(&broken, 2, 4, mode).jacobian;
            assert!(
                differs(&got, &want),
                "{routine}: {symbol} is not needed in {mode:?}"
            );
        }
    }
}

#[test]
fn two_level_checkpointing_is_right_and_each_level_takes_its_minimum() {
    let (p, _) = fixture("two_level.xaif");
    let plain = adjoint_text(&p, Vec::new());
    let outer_only = adjoint_text(&p, vec![mark("head", 10, 3)]);
    let both = adjoint_text(&p, vec![mark("head", 10, 3), mark("head", 12, 2)]);
    for mode in [Mode::Split, Mode::Joint] {
        let want = run(&plain, 2, 2, mode);
        let one = run(&outer_only, 2, 2, mode);
        let two = run(&both, 2, 2, mode);
        same(&one.jacobian, &want.jacobian, "outer");
        same(&two.jacobian, &want.jacobian, "two levels");
        on_schedule(&two);
        let records = &two.stats.checkpointed_loops;
        // Per adjoint run (two dependents): one outer instance, and one
        // inner instance per taped outer step (12).
        let outer: Vec<_> = records.iter().filter(|r| r.line == 10).collect();
        let inner: Vec<_> = records.iter().filter(|r| r.line == 12).collect();
        assert_eq!(outer.len(), 2);
        assert_eq!(inner.len(), 2 * 12);
        assert!(outer
            .iter()
            .all(|r| r.forward_steps == xaif_revolve::min_forward_steps(12, 3)));
        assert!(
            inner
                .iter()
                .all(|r| r.iterations == 9
                    && r.forward_steps == xaif_revolve::min_forward_steps(9, 2))
        );
        // The tape: all 12 outer steps, one outer step, one inner step.
        let (p0, p1, p2) = (
            want.stats.peak_double_tape,
            one.stats.peak_double_tape,
            two.stats.peak_double_tape,
        );
        assert!(p2 < p1 && p1 < p0, "peaks {p0} {p1} {p2}");
        assert!(p1 * 10 <= p0, "one outer step of 12: peaks {p0} {p1}");
        assert!(p2 * 5 <= p1, "one inner step of 9: peaks {p1} {p2}");
    }
}

#[test]
fn a_thousand_steps_tape_one_step_and_hold_at_most_s_states() {
    let (p, _) = fixture("timestep.xaif");
    let plain = adjoint_text(&p, Vec::new());
    let want = run(&plain, 2, 1, Mode::Split);
    // Doubles one step tapes (the peak without checkpointing is 1000 steps
    // plus the code around the loop).
    let text = adjoint_text(&p, vec![mark("head", 10, 10)]);
    let o = run(&text, 2, 1, Mode::Split);
    same(&o.jacobian, &want.jacobian, "1000 steps");
    on_schedule(&o);
    let r = &o.stats.checkpointed_loops[0];
    assert_eq!(r.iterations, 1000);
    let step = want.stats.peak_double_tape / 1000;
    let around = want.stats.peak_double_tape - 1000 * step;
    assert!(step > 0 && around < 100);
    assert!(
        o.stats.peak_double_tape <= step + around,
        "peak {} with checkpointing, one step {step} plus {around} around the loop",
        o.stats.peak_double_tape
    );
    // At most s states, each of T, U(8) and UN(8).
    assert!(r.peak_snapshots <= 10);
    assert!(r.peak_snapshot_elements <= 10 * 17, "{r:?}");
    assert_eq!(o.stats.peak_snapshot_elements, r.peak_snapshot_elements);
}

#[test]
fn instance_records_stop_at_their_limit_and_the_counter_counts_on() {
    // An inner loop of no iterations, marked, in an outer loop of
    // 60,001 taped iterations: one instance per outer iteration, for each
    // of the two dependents.
    let path = xaif_testkit::repo_root().join("fixtures/checkpoint/two_level.xaif");
    let text = std::fs::read_to_string(path).unwrap();
    let text = text
        .replacen(
            r#"type="integer" value="12""#,
            r#"type="integer" value="60001""#,
            1,
        )
        .replacen(
            r#"type="integer" value="9""#,
            r#"type="integer" value="0""#,
            1,
        );
    let (p, source) = xaif_model::read_program_str(&text, None).unwrap();
    xaif_model::validate_program(&p, &source).unwrap();
    let out = adjoint_text(&p, vec![mark("head", 12, 1)]);
    let o = run(&out, 2, 2, Mode::Split);
    assert_eq!(o.stats.checkpointed_instances, 120_002);
    assert_eq!(
        o.stats.checkpointed_loops.len(),
        xaif_interp::exec::MAX_LOOP_RECORDS
    );
}

#[test]
fn snapshots_count_against_the_element_limit() {
    let (p, _) = fixture("timestep.xaif");
    // Two snapshots fit, ten do not.
    let two = adjoint_text(&p, vec![mark("head", 10, 2)]);
    let ten = adjoint_text(&p, vec![mark("head", 10, 10)]);
    let peak = run(&two, 2, 1, Mode::Split).stats.peak_elements;
    let (q, source) = xaif_model::read_program_str(&ten, None).unwrap();
    let prog = xaif_interp::compile(&q, &source);
    let mut h = Harness::new(&prog, HarnessSpec::generic(2, 1));
    h.limits = xaif_interp::Limits::with_steps(200_000_000);
    h.limits.elements = peak as usize;
    let e = h.run(Mode::Split).unwrap_err().to_string();
    assert!(e.contains("a snapshot of a checkpointed loop needs"), "{e}");
}

#[test]
fn more_marks_than_the_limit_are_refused() {
    let (p, _) = fixture("hard_cases.xaif");
    let marks = (0..=xaif_cfrev::checkpoint::MAX_MARKED_LOOPS)
        .map(|k| mark("after", 20 + k as i64, 1))
        .collect();
    let options = AdjointOptions {
        checkpoint_loops: marks,
        ..AdjointOptions::default()
    };
    let e = adjoint(&p, xaif_linearize::builtin(), None, &options)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("257 loops marked with --checkpoint-loop") && e.contains("at most 256"),
        "{e}"
    );
}

#[test]
fn checkpointed_outputs_validate_against_the_output_schema() {
    let Some(shared) = xaif_testkit::shared_dir() else {
        return;
    };
    if !xaif_testkit::have_xmllint() {
        return;
    }
    let dir = xaif_testkit::Scratch::new("xaifb-ckpt-xsd", "fixtures");
    let cases: Vec<(&str, Vec<LoopMark>)> = vec![
        (
            "hard_cases.xaif",
            HARD.iter().map(|(r, l)| mark(r, *l, 2)).collect(),
        ),
        (
            "two_level.xaif",
            vec![mark("head", 10, 3), mark("head", 12, 2)],
        ),
        ("timestep.xaif", vec![mark("head", 10, 5)]),
        ("kinds.xaif", vec![mark("head", 10, 2)]),
    ];
    let mut files = Vec::new();
    for (name, marks) in cases {
        let (p, _) = fixture(name);
        let path = dir.join(name);
        std::fs::write(&path, adjoint_text(&p, marks)).unwrap();
        files.push(path);
    }
    let valid = xaif_testkit::xmllint_valid(&shared.join("xaif/schema/xaif_output.xsd"), &files);
    assert_eq!(valid.len(), files.len(), "valid: {valid:?}");
}

#[test]
fn no_statement_id_repeats_within_a_placeholder() {
    let (p, _) = fixture("two_level.xaif");
    let text = adjoint_text(&p, vec![mark("head", 10, 3), mark("head", 12, 2)]);
    let (q, _) = xaif_model::read_program_str(&text, None).unwrap();
    let mut checked = 0;
    for (_, r) in q.routines.iter() {
        let RoutineBody::Replacements(list) = &r.body else {
            continue;
        };
        for rep in list {
            let mut seen = std::collections::BTreeSet::new();
            for v in q.cfgs[rep.cfg].vertex_ids() {
                let stmts: Vec<xaif_model::StmtId> = match &q.vertices[v].kind {
                    VertexKind::BasicBlock(s) => s.clone(),
                    VertexKind::ForLoop { init, update, .. } => {
                        init.iter().chain(update).copied().collect()
                    }
                    _ => Vec::new(),
                };
                for s in stmts {
                    let stmt = &q.stmts[s];
                    if matches!(stmt.kind, xaif_model::StmtKind::InlinableCall(_)) {
                        continue;
                    }
                    let id = stmt.attrs.get("statement_id").unwrap().to_string();
                    assert!(seen.insert(id.clone()), "statement {id} repeated");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 50);
}

#[test]
fn a_state_of_every_kind_round_trips_and_each_variable_is_needed() {
    let (p, _) = fixture("kinds.xaif");
    let plain = adjoint_text(&p, Vec::new());
    for mode in [Mode::Split, Mode::Joint] {
        let want = run(&plain, 2, 2, mode).jacobian;
        for s in 1..=3 {
            let text = adjoint_text(&p, vec![mark("head", 10, s)]);
            let o = run(&text, 2, 2, mode);
            same(&o.jacobian, &want, &format!("{s} snapshots {mode:?}"));
            on_schedule(&o);
            assert_eq!(o.stats.checkpointed_loops.len(), 2);
        }
        let text = adjoint_text(&p, vec![mark("head", 10, 2)]);
        // K8 (integer(8), 3e9 * 3^k), R4 (real(4)), L (logical, the branch
        // taken), M (integer(2), rank 7): each left out of the snapshot
        // changes the Jacobian.
        for symbol in ["K8", "R4", "L", "M"] {
            let broken = without_snapshot_of(&text, symbol);
            assert_ne!(broken, text, "no snapshot call of {symbol}");
            let got = run(&broken, 2, 2, mode).jacobian;
            assert!(differs(&got, &want), "{symbol} is not needed in {mode:?}");
        }
    }
}

#[test]
fn a_state_kind_the_run_time_does_not_hold_is_refused_at_the_loop() {
    let path = xaif_testkit::repo_root().join("fixtures/checkpoint/kinds.xaif");
    let text = std::fs::read_to_string(path).unwrap();
    let cases = [
        (
            "symbol_id=\"K8\" kind=\"variable\" type=\"integer\" feType=\"I8\"",
            "symbol_id=\"K8\" kind=\"variable\" type=\"integer\" feType=\"I16\"",
            "`K8`, of type integer and feType I16, a kind the run-time module does not hold",
        ),
        (
            "symbol_id=\"R4\" kind=\"variable\" type=\"real\" feType=\"F4\"",
            "symbol_id=\"R4\" kind=\"variable\" type=\"real\" feType=\"F10\"",
            "`R4`, of type real and feType F10",
        ),
        (
            "symbol_id=\"R4\" kind=\"variable\" type=\"real\" feType=\"F4\"",
            "symbol_id=\"R4\" kind=\"variable\" type=\"real\" feType=\"double\"",
            "`R4`, of type real and feType double",
        ),
    ];
    for (from, to, needle) in cases {
        assert!(text.contains(from));
        let changed = text.replace(from, to);
        let (p, source) = xaif_model::read_program_str(&changed, None).unwrap();
        xaif_model::validate_program(&p, &source).unwrap();
        // Without the mark the program transforms: only a snapshot cannot
        // hold the variable.
        let options = AdjointOptions::default();
        assert!(adjoint(&p, xaif_linearize::builtin(), None, &options).is_ok());
        let options = AdjointOptions {
            checkpoint_loops: vec![mark("head", 10, 2)],
            ..AdjointOptions::default()
        };
        let Err(e) = adjoint(&p, xaif_linearize::builtin(), None, &options) else {
            panic!("{to}: not refused");
        };
        let message = e.to_string();
        assert!(message.contains(needle), "{message}");
        assert!(
            message.contains("which a snapshot cannot hold"),
            "{message}"
        );
        let (span, element) = e.location().expect("located");
        assert_eq!(element, "ForLoop");
        assert_eq!(source.locate(span).0, 165, "{message}");
    }
}
