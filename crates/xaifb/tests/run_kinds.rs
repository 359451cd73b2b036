//! `xaifb run` never prints a number that is not the program's derivative
//! (issue 26, section 2): every kind of output xaifb writes runs only in
//! the modes that execute it, `-f` adjoints run with the checkpoint
//! discipline they need, counts and steps that give no derivative are
//! refused, no non-finite Jacobian is printed, and trace records are
//! well-formed XML. Every test runs the binary.

use std::path::{Path, PathBuf};
use std::process::Command;

fn xaifb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xaifb"))
}

fn fixture(name: &str) -> PathBuf {
    xaif_testkit::repo_root().join("fixtures").join(name)
}

fn scratch(name: &str) -> xaif_testkit::Scratch {
    xaif_testkit::Scratch::new("xaifb-run-kinds", name)
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// What a run of the binary did.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Ran {
    let o = xaifb().args(args).output().unwrap();
    Ran {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

impl Ran {
    fn ok(&self) -> &str {
        assert_eq!(self.code, Some(0), "{}", self.stderr);
        &self.stdout
    }

    /// Refused with exit `code`, nothing on standard output, no panic.
    fn refused(&self, code: i32) -> &str {
        assert_eq!(
            self.code,
            Some(code),
            "expected exit {code}\nstdout: {}\nstderr: {}",
            self.stdout,
            self.stderr
        );
        assert!(self.stdout.is_empty(), "output on failure: {}", self.stdout);
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
        &self.stderr
    }
}

/// Runs `xaifb SUBCOMMAND FLAGS INPUT -o OUT` and returns OUT.
fn transform(sub: &str, flags: &[&str], input: &Path, out: &Path) -> PathBuf {
    let mut args = vec![sub];
    args.extend_from_slice(flags);
    args.extend_from_slice(&[path(input), "-o", path(out)]);
    run(&args).ok();
    out.to_path_buf()
}

/// The entries of an `ad.out` text, in order.
fn entries(text: &str) -> Vec<f64> {
    text.lines()
        .filter_map(|l| l.split_once('=').map(|(_, v)| v.trim()))
        .map(|v| v.replace(['D', 'd'], "E").parse::<f64>().unwrap())
        .collect()
}

fn assert_close(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(b) {
        assert!(
            (x - y).abs() <= 1e-10 * x.abs().max(y.abs()) + 1e-13,
            "{what}: {a:?} versus {b:?}"
        );
    }
}

// --------------------------------------------------- -f in joint mode

/// `-f` output says that its restores read in store order, and joint
/// mode then restores its checkpoints that way: the Jacobian is the
/// tangent's. (Before, the records were read off a stack in reverse and
/// the Jacobian was wrong with exit 0.)
#[test]
fn store_order_checkpoints_run_with_their_discipline_in_joint_mode() {
    let dir = scratch("store-order");
    let input = fixture("trace/calls.xaif");
    let stack = transform("adjoint", &[], &input, &dir.join("a.xaif"));
    let fifo = transform("adjoint", &["-f"], &input, &dir.join("af.xaif"));
    let tangent = transform("tangent", &[], &input, &dir.join("t.xaif"));
    let nm = ["--n", "2", "--m", "2"];
    let jac = |file: &Path, mode: &str| {
        let mut args = vec!["run", path(file), "--mode", mode];
        args.extend_from_slice(&nm);
        entries(run(&args).ok())
    };
    let reference = jac(&tangent, "tangent");
    assert!(reference.iter().any(|x| *x != 0.0));
    for (file, mode) in [
        (&stack, "joint"),
        (&stack, "split"),
        (&fifo, "joint"),
        (&fifo, "split"),
    ] {
        assert_close(&jac(file, mode), &reference, &format!("{file:?} {mode}"));
    }
    // The output says which discipline it needs; without -f it does not.
    let text = std::fs::read_to_string(&fifo).unwrap();
    assert!(text.contains(xaif_model::STORE_ORDER_ENTRY), "{text}");
    assert!(!std::fs::read_to_string(&stack)
        .unwrap()
        .contains(xaif_model::STORE_ORDER_ENTRY));
    // A round trip keeps the mark, and the discipline with it.
    let rt = dir.join("rt.xaif");
    run(&["roundtrip", path(&fifo), "-o", path(&rt)]).ok();
    assert_close(&jac(&rt, "joint"), &reference, "round trip");
    // The mark keeps the output valid against the output schema.
    if let Some(shared) = xaif_testkit::shared_dir() {
        if xaif_testkit::have_xmllint() {
            let schema = shared.join("xaif/schema/xaif_output.xsd");
            let valid = xaif_testkit::xmllint_valid(&schema, std::slice::from_ref(&fifo));
            assert!(valid.contains(&fifo), "{fifo:?} does not validate");
        }
    }
}

/// The corpus examples whose `-f` Jacobian was wrong in joint mode.
const STORE_ORDER_EXAMPLES: [&str; 6] = [
    "boxmodel",
    "nested_calls_1",
    "sideEffect_1",
    "srIntr",
    "Loop_simple_16",
    "LoopArrayIndex2",
];

/// On the corpus examples whose `-f` Jacobian was wrong in joint mode,
/// it is now `ad.out`'s, with the marks and without them.
///
/// The reference engine's `-f` output carries no mark: it differs from its
/// output without `-f` only in restoring each routine's argument
/// checkpoints in the order they were stored. xaifb's `-f` output with its
/// marks taken out is that file; joint mode reads the discipline from the
/// order of the calls (as a stack it printed a wrong Jacobian with exit 0
/// on every one of these examples).
#[test]
fn store_order_checkpoints_reproduce_ad_out_on_the_corpus_marked_or_not() {
    let Some(shared) = xaif_testkit::shared_dir() else {
        return;
    };
    let dir = scratch("store-order-corpus");
    for name in STORE_ORDER_EXAMPLES {
        let ex = shared.join("corpus/examples").join(name);
        let marked = transform(
            "adjoint",
            &["-f", "--full-checkpoints"],
            &ex.join("admhead_sf.pre.xaif"),
            &dir.join(format!("{name}.xaif")),
        );
        let text = std::fs::read_to_string(&marked).unwrap();
        assert!(text.contains(xaif_model::STORE_ORDER_ENTRY), "{name}");
        let unmarked = dir.join(format!("{name}-unmarked.xaif"));
        let mark = format!("\"{}\"", xaif_model::STORE_ORDER_ENTRY);
        std::fs::write(&unmarked, text.replace(&mark, "\"cp_entry\"")).unwrap();
        let params = ex.join("params.conf");
        let harness = ex.join("harness.json");
        let mut driver = vec!["--params", path(&params)];
        if harness.is_file() {
            driver.extend_from_slice(&["--harness", path(&harness)]);
        }
        // Unmarked, the kind names the discipline it read from the calls.
        let mut tangent = vec!["run", path(&unmarked), "--mode", "tangent"];
        tangent.extend_from_slice(&driver);
        let refused = run(&tangent);
        assert!(
            refused.stderr.contains("restored in store order"),
            "{name}: {}",
            refused.stderr
        );
        for (file, form) in [(&marked, "marked"), (&unmarked, "unmarked")] {
            let jacobian = dir.join(format!("{name}-{form}.out"));
            let mut args = vec!["run", path(file), "--mode", "joint", "-o", path(&jacobian)];
            args.extend_from_slice(&driver);
            run(&args).ok();
            let ad = ex.join("ad.out");
            let cmp = run(&["compare", path(&jacobian), path(&ad)]);
            assert_eq!(cmp.code, Some(0), "{name} {form}: {}", cmp.stdout);
        }
    }
}

// ------------------------------------------- every kind in every mode

/// Which run modes execute each kind of output; every other mode refuses
/// it, naming the file and what it is. The kind is read from the
/// document: the files are named alike.
#[test]
fn every_output_kind_runs_only_in_the_modes_that_execute_it() {
    let dir = scratch("kinds");
    let input = fixture("adjoint/seed_cfr.xaif");
    let original = dir.join("k0.xaif");
    std::fs::copy(&input, &original).unwrap();
    let passivated = dir.join("k6.xaif");
    run(&["analyze", path(&input), "--passivate", path(&passivated)]).ok();
    let kinds: Vec<(PathBuf, &str, &[&str])> = vec![
        (original, "not a transformation result", &["plain", "fd"]),
        (
            transform("tangent", &[], &input, &dir.join("k1.xaif")),
            "tangent-linear output",
            &["plain", "fd", "tangent"],
        ),
        (
            transform("adjoint", &[], &input, &dir.join("k2.xaif")),
            "adjoint output",
            &["plain", "fd", "split", "joint"],
        ),
        (
            transform("adjoint", &["-f"], &input, &dir.join("k3.xaif")),
            "restored in store order",
            &["plain", "fd", "split", "joint"],
        ),
        (
            transform("trace", &[], &input, &dir.join("k4.xaif")),
            "trace output",
            &["plain", "fd", "trace"],
        ),
        (
            transform("typechange", &[], &input, &dir.join("k5.xaif")),
            "type-change output",
            &["plain", "fd"],
        ),
        (passivated, "not a transformation result", &["plain", "fd"]),
    ];
    let modes = ["plain", "fd", "tangent", "split", "joint", "trace"];
    for (i, (file, what, accepted)) in kinds.iter().enumerate() {
        // The same document after a round trip is the same kind.
        let rt = dir.join(format!("r{i}.xaif"));
        run(&["roundtrip", path(file), "-o", path(&rt)]).ok();
        for f in [file, &rt] {
            for mode in modes {
                let mut args = vec!["run", path(f), "--n", "2", "--m", "3"];
                if mode == "fd" {
                    args.push("--fd");
                } else {
                    args.extend_from_slice(&["--mode", mode]);
                }
                let ran = run(&args);
                if accepted.contains(&mode) {
                    ran.ok();
                } else {
                    let err = ran.refused(1);
                    assert!(
                        err.contains(path(f))
                            && err.contains(&format!("cannot run in {mode} mode"))
                            && err.contains(what),
                        "{f:?} in {mode}: {err}"
                    );
                }
            }
        }
    }
}

// ------------------------------------------------- odd numeric flags

/// A program `head(x, y)` with `y(1) = exp(x(1))` and `y(2) = x(2)`.
fn exp_program(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(fixture("trace/calls.xaif")).unwrap();
    let head_end = text.find("<xaif:ControlFlowGraph").unwrap();
    let mut out = text[..head_end].to_string();
    out.push_str(
        r#"<xaif:ControlFlowGraph vertex_id="r1" scope_id="1" symbol_id="head" controlflowgraph_scope_id="2">
    <xaif:ArgumentList>
      <xaif:ArgumentSymbolReference position="1" scope_id="2" symbol_id="X" intent="in"/>
      <xaif:ArgumentSymbolReference position="2" scope_id="2" symbol_id="Y" intent="out"/>
    </xaif:ArgumentList>
    <xaif:Entry vertex_id="v1"/>
    <xaif:BasicBlock vertex_id="v2" scope_id="2">
      <xaif:Assignment statement_id="s1">
        <xaif:AssignmentLHS>
          <xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="Y"/>
          <xaif:ArrayElementReference vertex_id="2"><xaif:IndexTriplet><xaif:Index><xaif:Constant vertex_id="1" type="integer" value="1"/></xaif:Index></xaif:IndexTriplet></xaif:ArrayElementReference>
          <xaif:VariableReferenceEdge edge_id="1" source="1" target="2"/>
        </xaif:AssignmentLHS>
        <xaif:AssignmentRHS>
          <xaif:VariableReference vertex_id="1">
            <xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="X"/>
            <xaif:ArrayElementReference vertex_id="2"><xaif:IndexTriplet><xaif:Index><xaif:Constant vertex_id="1" type="integer" value="1"/></xaif:Index></xaif:IndexTriplet></xaif:ArrayElementReference>
            <xaif:VariableReferenceEdge edge_id="1" source="1" target="2"/>
          </xaif:VariableReference>
          <xaif:Intrinsic vertex_id="2" name="exp_scal"/>
          <xaif:ExpressionEdge edge_id="1" source="1" target="2" position="1"/>
        </xaif:AssignmentRHS>
      </xaif:Assignment>
      <xaif:Assignment statement_id="s2">
        <xaif:AssignmentLHS>
          <xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="Y"/>
          <xaif:ArrayElementReference vertex_id="2"><xaif:IndexTriplet><xaif:Index><xaif:Constant vertex_id="1" type="integer" value="2"/></xaif:Index></xaif:IndexTriplet></xaif:ArrayElementReference>
          <xaif:VariableReferenceEdge edge_id="1" source="1" target="2"/>
        </xaif:AssignmentLHS>
        <xaif:AssignmentRHS>
          <xaif:VariableReference vertex_id="1">
            <xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="X"/>
            <xaif:ArrayElementReference vertex_id="2"><xaif:IndexTriplet><xaif:Index><xaif:Constant vertex_id="1" type="integer" value="2"/></xaif:Index></xaif:IndexTriplet></xaif:ArrayElementReference>
            <xaif:VariableReferenceEdge edge_id="1" source="1" target="2"/>
          </xaif:VariableReference>
        </xaif:AssignmentRHS>
      </xaif:Assignment>
    </xaif:BasicBlock>
    <xaif:Exit vertex_id="v3"/>
    <xaif:ControlFlowEdge edge_id="1" source="v1" target="v2"/>
    <xaif:ControlFlowEdge edge_id="2" source="v2" target="v3"/>
  </xaif:ControlFlowGraph>
</xaif:CallGraph>
"#,
    );
    let file = dir.join("exp.xaif");
    std::fs::write(&file, out).unwrap();
    file
}

/// `--n 0` or `--m 0` (or a `params.conf` or `harness.json` saying so)
/// are refused in every mode: a Jacobian without rows or columns prints
/// nothing that could be checked. (Before, tangent and joint mode printed
/// an empty Jacobian with exit 0.)
#[test]
fn runs_without_independents_or_dependents_are_refused_in_every_mode() {
    let dir = scratch("counts");
    let input = exp_program(&dir);
    let tangent = transform("tangent", &[], &input, &dir.join("t.xaif"));
    let adjoint = transform("adjoint", &[], &input, &dir.join("a.xaif"));
    for (file, mode) in [
        (&input, "plain"),
        (&input, "fd"),
        (&tangent, "tangent"),
        (&adjoint, "split"),
        (&adjoint, "joint"),
    ] {
        for nm in [["0", "2"], ["2", "0"]] {
            let mut args = vec!["run", path(file), "--n", nm[0], "--m", nm[1]];
            if mode == "fd" {
                args.push("--fd");
            } else {
                args.extend_from_slice(&["--mode", mode]);
            }
            let err = run(&args).refused(2).to_string();
            assert!(err.contains("at least 1"), "{mode} {nm:?}: {err}");
        }
        let params = dir.join("params.conf");
        std::fs::write(&params, "2\n0\n1e-6\n1e-5\n").unwrap();
        let mut args = vec!["run", path(file), "--params", path(&params)];
        if mode == "fd" {
            args.push("--fd");
        } else {
            args.extend_from_slice(&["--mode", mode]);
        }
        let err = run(&args).refused(1).to_string();
        assert!(err.contains(path(&params)), "{mode}: {err}");
    }
    std::fs::remove_file(dir.join("params.conf")).unwrap();
    let harness = dir.join("harness.json");
    std::fs::write(
        &harness,
        r#"{"n": 0, "m": 1, "top": "head", "args": [{"kind": "y", "first": 1, "size": 2}], "x0": []}"#,
    )
    .unwrap();
    let err = run(&[
        "run",
        path(&tangent),
        "--mode",
        "tangent",
        "--harness",
        path(&harness),
    ])
    .refused(1)
    .to_string();
    assert!(err.contains(path(&harness)), "{err}");
}

/// A divided-difference step outside [1e-12, 1] · max(1, |x0|) is refused
/// (from `--h` as a command-line error, from `params.conf` naming it);
/// steps inside give the derivative to divided-difference accuracy.
/// (Before, `--h 1e-300` printed 0 and `--h 1e300` printed a wrong number
/// or Infinity with exit 0.)
#[test]
fn divided_difference_steps_that_give_no_derivative_are_refused() {
    let dir = scratch("steps");
    let input = exp_program(&dir);
    let fd = |h: &str, x0: &str| {
        run(&[
            "run",
            path(&input),
            "--fd",
            "--n",
            "2",
            "--m",
            "2",
            "--x0",
            x0,
            "--h",
            h,
        ])
    };
    for (h, x0) in [
        ("1e-300", "0.5,1"),
        ("1e-13", "0.5,1"),
        ("1e300", "0.5,1"),
        ("2", "0.5,1"),
        // Relative to the start value: 1e-9 is below 1e-12 · 1e4.
        ("1e-9", "1e4,1"),
    ] {
        let err = fd(h, x0).refused(2).to_string();
        assert!(err.contains("--h") && err.contains("1e-12"), "{h}: {err}");
    }
    // In range: the quotient approximates exp(0.5) and 1.
    for h in ["1e-7", "1e-12", "1e-3"] {
        let out = entries(fd(h, "0.5,1").ok());
        let want = [0.5f64.exp(), 0.0, 0.0, 1.0];
        for (x, w) in out.iter().zip(want) {
            assert!((x - w).abs() < 1e-2 * w.abs().max(1.0), "{h}: {out:?}");
        }
    }
    let params = dir.join("params.conf");
    std::fs::write(&params, "2\n2\n1.0D-300\n1e-5\n").unwrap();
    let err = run(&["run", path(&input), "--fd", "--params", path(&params)])
        .refused(1)
        .to_string();
    assert!(err.contains(path(&params)), "{err}");
}

/// A Jacobian with an entry that is not a finite number (an overflow of
/// the program) is refused in every mode that prints one.
#[test]
fn no_jacobian_with_a_non_finite_entry_is_printed() {
    let dir = scratch("nonfinite");
    let input = exp_program(&dir);
    let tangent = transform("tangent", &[], &input, &dir.join("t.xaif"));
    let adjoint = transform("adjoint", &[], &input, &dir.join("a.xaif"));
    for (file, mode) in [
        (&tangent, "tangent"),
        (&adjoint, "split"),
        (&adjoint, "joint"),
        (&input, "fd"),
    ] {
        let mut args = vec!["run", path(file), "--n", "2", "--m", "2", "--x0", "1000,1"];
        if mode == "fd" {
            args.push("--fd");
        } else {
            args.extend_from_slice(&["--mode", mode]);
        }
        let err = run(&args).refused(1).to_string();
        assert!(
            err.contains(path(file)) && err.contains("not a finite number"),
            "{mode}: {err}"
        );
        // The same program at a start value it can compute runs.
        let args: Vec<&str> = args
            .into_iter()
            .map(|a| if a == "1000,1" { "1,1" } else { a })
            .collect();
        run(&args).ok();
    }
}

// ------------------------------------------------------ trace records

/// Names in trace records are escaped: the records are well-formed XML
/// whatever the symbol is called. (Before, `<` and `&` went out as they
/// are, with exit 0.)
#[test]
fn trace_records_escape_symbol_names() {
    let dir = scratch("trace-escape");
    let text = std::fs::read_to_string(fixture("trace/calls.xaif")).unwrap();
    let odd = text.replace("symbol_id=\"foo\"", "symbol_id=\"f&lt;o&amp;o&quot;\"");
    assert_ne!(odd, text);
    let input = dir.join("odd.xaif");
    std::fs::write(&input, odd).unwrap();
    let traced = transform("trace", &[], &input, &dir.join("tr.xaif"));
    let out = run(&[
        "run",
        path(&traced),
        "--mode",
        "trace",
        "--n",
        "2",
        "--m",
        "2",
    ])
    .ok()
    .to_string();
    assert!(out.contains("name=\"f&lt;o&amp;o&quot;\""), "{out}");
    let doc = xaif_testkit::infoset(out.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{out}"));
    assert_eq!(doc.name, "Trace");
}

/// A harness fixes the numbers of independents and dependents: `--n` or
/// `--m` that disagree with it are refused, naming the harness (before,
/// they were silently ignored and the harness's sizes used); sizes that
/// agree run as without them.
#[test]
fn sizes_that_disagree_with_the_harness_are_refused() {
    let dir = scratch("harness-sizes");
    let input = exp_program(&dir);
    let tangent = transform("tangent", &[], &input, &dir.join("t.xaif"));
    let harness = dir.join("h.json");
    std::fs::write(
        &harness,
        r#"{"n": 2, "m": 2, "top": "head", "args": [{"kind": "x", "first": 1, "size": 2}, {"kind": "y", "first": 1, "size": 2}], "x0": [0.5, 1.5]}"#,
    )
    .unwrap();
    let base = [
        "run",
        path(&tangent),
        "--mode",
        "tangent",
        "--harness",
        path(&harness),
    ];
    let plain = run(&base).ok().to_string();
    for (flag, value) in [("--n", "3"), ("--m", "1")] {
        let mut args = base.to_vec();
        args.extend_from_slice(&[flag, value]);
        let err = run(&args).refused(2).to_string();
        assert!(err.contains(flag) && err.contains(path(&harness)), "{err}");
    }
    let mut agreeing = base.to_vec();
    agreeing.extend_from_slice(&["--n", "2", "--m", "2"]);
    assert_eq!(run(&agreeing).ok(), plain);
    // The Jacobian is the harness's: d exp(x1)/dx1 and dx2/dx2.
    let j = entries(&plain);
    assert_close(&j, &[0.5f64.exp(), 0.0, 0.0, 1.0], "harness Jacobian");
}
