//! `xaifb run` on the kinds of output the reference engine writes (issue
//! 34, section 4): they carry none of xaifb's marks, so what they are is
//! read from their structure, and where it cannot be, the mode refuses
//! with the reason instead of printing a number. The files are xaifb's
//! outputs in the reference engine's form (`xaif_testkit::reference`):
//! the reference engine itself is never run here.

use std::path::{Path, PathBuf};
use std::process::Command;

use xaif_testkit::reference::{
    assumed_shape_checkpoint, mixed_checkpoints, restores_reordered, store_order_form,
    three_checkpoints, unmarked,
};

fn xaifb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xaifb"))
}

fn scratch(name: &str) -> xaif_testkit::Scratch {
    xaif_testkit::Scratch::new("xaifb-run-reference-forms", name)
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

    /// Refused with exit 1, nothing on standard output, no panic.
    fn refused(&self) -> &str {
        assert_eq!(
            self.code,
            Some(1),
            "expected a refusal\nstdout: {}\nstderr: {}",
            self.stdout,
            self.stderr
        );
        assert!(self.stdout.is_empty(), "output on failure: {}", self.stdout);
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
        &self.stderr
    }
}

/// Runs `xaifb SUBCOMMAND FLAGS INPUT -o OUT` and returns OUT's text.
fn transform(sub: &str, flags: &[&str], input: &Path, out: &Path) -> String {
    let mut args = vec![sub];
    args.extend_from_slice(flags);
    args.extend_from_slice(&[path(input), "-o", path(out)]);
    run(&args).ok();
    std::fs::read_to_string(out).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// The Jacobian `run FILE --mode MODE` prints for head(x(3), y(3)).
fn jacobian(file: &Path, mode: &str) -> Vec<f64> {
    entries(run(&["run", path(file), "--mode", mode, "--n", "3", "--m", "3"]).ok())
}

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

// ------------------------------------------- restores of unmarked adjoints

/// The marks these tests take out are xaifb's.
#[test]
fn the_marks_taken_out_are_xaifbs() {
    assert_eq!(
        xaif_testkit::reference::STORE_ORDER_MARK,
        xaif_model::STORE_ORDER_ENTRY
    );
    assert_eq!(
        xaif_testkit::reference::TYPE_CHANGE_MARK,
        xaif_model::TYPE_CHANGE_ENTRY
    );
}

/// The reference engine's `-f` form of an adjoint (restores in store
/// order, no mark) gives in joint mode the Jacobian of the same adjoint
/// without `-f`, which is the tangent's; so do xaifb's `-f` output with its
/// marks taken out, and the stack form made back from it.
#[test]
fn store_order_forms_give_the_joint_jacobian_of_the_stack_form() {
    let dir = scratch("store-order-forms");
    let input = write(&dir, "in.xaif", &three_checkpoints());
    let tangent = jacobian(
        &write(
            &dir,
            "t.xaif",
            &transform("tangent", &[], &input, &dir.join("t0.xaif")),
        ),
        "tangent",
    );
    assert!(tangent.iter().filter(|x| **x != 0.0).count() > 3);
    let stack = transform("adjoint", &[], &input, &dir.join("a.xaif"));
    let fifo = store_order_form(&stack).expect("restores to reorder");
    assert_ne!(fifo, stack);
    let marked_f = transform("adjoint", &["-f"], &input, &dir.join("af.xaif"));
    let forms = [
        ("stack", stack.clone()),
        ("store order", fifo.clone()),
        ("xaifb -f unmarked", unmarked(&marked_f)),
        (
            "back to a stack",
            store_order_form(&unmarked(&marked_f)).unwrap(),
        ),
    ];
    for (name, text) in forms {
        let file = write(&dir, &format!("{}.xaif", name.replace(' ', "_")), &text);
        for mode in ["joint", "split"] {
            assert_close(&jacobian(&file, mode), &tangent, &format!("{name} {mode}"));
        }
    }
}

/// Which restore takes which value is decided per stack of the run-time
/// and by the argument each call names, not by the attributes around it:
/// store-order restores whose reference elements carry other attributes
/// than the stores' (no `deriv`, other vertex numbers), or whose real and
/// integer restores interleave differently from the stores, are still
/// read in store order in joint mode. (Before, only restores equal to the
/// stores call for call, attributes included, were; these ran as a stack
/// and printed a wrong Jacobian with exit 0.) Each form also gives the
/// tangent's Jacobian in split mode, which runs no checkpoints.
#[test]
fn store_order_restores_are_recognised_by_structure() {
    let dir = scratch("by-structure");
    for (name, program) in [
        ("three", three_checkpoints()),
        ("mixed", mixed_checkpoints()),
    ] {
        let input = write(&dir, &format!("{name}.xaif"), &program);
        let tangent = jacobian(
            &write(
                &dir,
                &format!("{name}.t.xaif"),
                &transform("tangent", &[], &input, &dir.join("t0.xaif")),
            ),
            "tangent",
        );
        assert!(tangent.iter().filter(|x| **x != 0.0).count() >= 3, "{name}");
        let stack = transform("adjoint", &[], &input, &dir.join("a.xaif"));
        // Store order, every reference element with other attributes.
        let restyled = restores_reordered(&stack, &|calls| {
            calls.reverse();
            for c in calls.iter_mut() {
                *c = c.replace(" deriv=\"0\"", "").replace(
                    "<xaif:VariableReference vertex_id=\"1\"",
                    "<xaif:VariableReference vertex_id=\"9\"",
                );
            }
        })
        .unwrap();
        let mut forms = vec![("restyled", restyled)];
        if name == "mixed" {
            // Store order per stack, the integer restore first.
            let fifo = store_order_form(&stack).unwrap();
            let interleaved = restores_reordered(&fifo, &|calls| {
                let int = calls
                    .iter()
                    .position(|c| c.contains("cp_arg_restore_integer"))
                    .expect("an integer restore");
                let c = calls.remove(int);
                calls.insert(0, c);
            })
            .unwrap();
            assert_ne!(interleaved, fifo);
            forms.push(("interleaved", interleaved));
        }
        for (form, text) in forms {
            let file = write(&dir, &format!("{name}-{form}.xaif"), &text);
            for mode in ["joint", "split"] {
                assert_close(
                    &jacobian(&file, mode),
                    &tangent,
                    &format!("{name} {form} {mode}"),
                );
            }
        }
    }
}

/// An unmarked adjoint whose restores name the stored arguments in
/// neither order (no engine writes one; an edited file can), or one marked
/// to restore in store order whose restores do not, is refused in joint
/// mode, naming the routine and where its placeholder 6 is, because which
/// value each restore takes depends on a discipline the file does not
/// tell, or contradicts. (Before, it was run as a stack, or the marked one
/// in store order, and printed a wrong Jacobian with exit 0.) Split mode,
/// which runs no checkpoints, still runs it.
#[test]
fn restores_in_neither_order_are_refused_in_joint_mode() {
    let dir = scratch("neither-order");
    let input = write(&dir, "in.xaif", &three_checkpoints());
    let stack = transform("adjoint", &[], &input, &dir.join("a.xaif"));
    let tangent = jacobian(
        &write(
            &dir,
            "t.xaif",
            &transform("tangent", &[], &input, &dir.join("t0.xaif")),
        ),
        "tangent",
    );
    let marked_f = transform("adjoint", &["-f"], &input, &dir.join("af.xaif"));
    // Rotated: neither the stores' order nor its reverse; and xaifb's -f
    // output, marked to restore in store order, rotated too.
    for (name, text) in [
        (
            "rotated -f marked",
            restores_reordered(&marked_f, &|c| c.rotate_left(1)),
        ),
        ("rotated", restores_reordered(&stack, &|c| c.rotate_left(1))),
        (
            "rotated -f",
            restores_reordered(&unmarked(&marked_f), &|c| c.rotate_left(1)),
        ),
    ] {
        let file = write(&dir, &format!("{name}.xaif"), &text.unwrap());
        let err = run(&[
            "run",
            path(&file),
            "--mode",
            "joint",
            "--n",
            "3",
            "--m",
            "3",
        ])
        .refused()
        .to_string();
        assert!(
            err.contains(path(&file))
                && err.contains("cannot run in joint mode")
                && err.contains("`sa`")
                && err.contains("placeholder 6")
                && err.contains("line "),
            "{name}: {err}"
        );
        assert_close(&jacobian(&file, "split"), &tangent, name);
    }
}

/// A restore must take back exactly what the store it pairs with saved:
/// a reverse call that passes fewer elements than the forward call did
/// (an edited file) is a located error naming both counts, not values
/// taken from the neighbours on the checkpoint stack.
#[test]
fn a_restore_that_does_not_fit_its_store_is_an_error() {
    let dir = scratch("unfit-restore");
    let input = write(&dir, "in.xaif", &assumed_shape_checkpoint());
    for flags in [&[][..], &["-f"][..]] {
        let out = unmarked(&transform("adjoint", flags, &input, &dir.join("a.xaif")));
        let whole = "<xaif:SymbolReference vertex_id=\"1\" scope_id=\"2\" symbol_id=\"X\"/>";
        // The reverse calls (placeholder 3) pass x(1:2) instead of x.
        let mut edited = String::new();
        let mut rest = out.as_str();
        while let Some(at) = rest.find("statement_id=\"_reverse_call_") {
            let arg = rest[at..].find(whole).unwrap() + at;
            edited.push_str(&rest[..arg]);
            edited.push_str(whole);
            edited.push_str("<xaif:ArrayElementReference vertex_id=\"2\"><xaif:IndexTriplet><xaif:Index><xaif:Constant vertex_id=\"1\" type=\"integer\" value=\"1\"/></xaif:Index><xaif:Bound><xaif:Constant vertex_id=\"1\" type=\"integer\" value=\"2\"/></xaif:Bound></xaif:IndexTriplet></xaif:ArrayElementReference><xaif:VariableReferenceEdge edge_id=\"1\" source=\"1\" target=\"2\"/>");
            rest = &rest[arg + whole.len()..];
        }
        edited.push_str(rest);
        assert_ne!(edited, out);
        let file = write(&dir, "edited.xaif", &edited);
        let err = run(&[
            "run",
            path(&file),
            "--mode",
            "joint",
            "--n",
            "3",
            "--m",
            "3",
        ])
        .refused()
        .to_string();
        assert!(
            err.contains("takes 2 real elements where the store it pairs with saved 3"),
            "{flags:?}: {err}"
        );
        assert!(err.contains(path(&file)) && err.contains("line "), "{err}");
    }
}

// ------------------------------------------------- unmarked type change

/// The reference engine's type-change output carries no mark: it assigns
/// active variables and holds no derivative code, which a tangent output
/// never does, so tangent mode refuses it. (Before, it ran as tangent
/// output and printed a zero Jacobian with exit 0.) Plain runs and
/// divided differences still run it; the tangent output of the same
/// program stays tangent output.
#[test]
fn unmarked_type_change_output_is_refused_in_tangent_mode() {
    let dir = scratch("unmarked-type-change");
    let input = write(&dir, "in.xaif", &three_checkpoints());
    let marked = transform("typechange", &[], &input, &dir.join("tc.xaif"));
    let bare = unmarked(&marked);
    assert_ne!(bare, marked);
    let file = write(&dir, "tc-unmarked.xaif", &bare);
    let sizes = ["--n", "3", "--m", "3"];
    let mut args = vec!["run", path(&file), "--mode", "tangent"];
    args.extend_from_slice(&sizes);
    let err = run(&args).refused().to_string();
    assert!(
        err.contains(path(&file))
            && err.contains("cannot run in tangent mode")
            && err.contains("type-change output")
            && err.contains("no derivative code"),
        "{err}"
    );
    for mode in [&["--mode", "plain"][..], &["--fd"][..]] {
        let mut args = vec!["run", path(&file)];
        args.extend_from_slice(mode);
        args.extend_from_slice(&sizes);
        run(&args).ok();
    }
    let tangent = write(
        &dir,
        "t.xaif",
        &transform("tangent", &[], &input, &dir.join("t0.xaif")),
    );
    assert!(jacobian(&tangent, "tangent").iter().any(|x| *x != 0.0));
}
