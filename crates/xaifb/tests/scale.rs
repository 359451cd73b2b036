//! Generated programs at scale (`xaif_testkit::scale`, `cargo xtask gen`):
//! the input validates against `xaif.xsd`, xaifb transforms it in both
//! modes into outputs that validate against `xaif_output.xsd`, and the
//! bytes do not depend on the number of worker threads, on whether the
//! result is written to a file or to standard output, or on whether it is
//! written routine by routine (one input) or as a whole (a batch).

use std::path::Path;
use std::process::Command;

use xaif_testkit::scale::{program, Shape};
use xaif_testkit::{have_xmllint, shared_dir, xmllint_valid};

fn scratch(name: &str) -> xaif_testkit::Scratch {
    xaif_testkit::Scratch::new("xaifb-scale", name)
}

fn transform(schema: &Path, mode: &str, input: &Path, extra: &[&str]) -> Vec<u8> {
    transform_with(None, schema, mode, input, extra)
}

/// [`transform`] with `XAIFB_ALLOCATOR` set to `allocator`.
fn transform_with(
    allocator: Option<&str>,
    schema: &Path,
    mode: &str,
    input: &Path,
    extra: &[&str],
) -> Vec<u8> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xaifb"));
    if let Some(a) = allocator {
        cmd.env("XAIFB_ALLOCATOR", a);
    }
    cmd.arg(mode)
        .arg("-s")
        .arg(schema)
        .arg("-c")
        .arg(schema.join("examples/inlinable_intrinsics.xaif"))
        .arg("-i")
        .arg(input)
        .args(extra);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{mode} {}: {}",
        input.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A generated program of 2400 statements in `dir`: above the size from
/// which one file's routines are written as they are finished
/// (`stream::STREAM_MIN_STATEMENTS`), on a thread of their own (`--jobs
/// 1` writes them inline).
fn streamed_program(dir: &Path, seed: u64) -> std::path::PathBuf {
    let input = dir.join("generated.xaif");
    let shape = Shape {
        routines: 12,
        statements: 2400,
        seed,
    };
    std::fs::write(&input, program(&shape)).unwrap();
    input
}

#[test]
fn generated_programs_transform_into_valid_outputs_with_the_same_bytes_every_way() {
    let Some(shared) = shared_dir() else { return };
    let schema = shared.join("xaif/schema");
    let dir = scratch("modes");
    let input = streamed_program(&dir, 3);
    let mut outputs = Vec::new();
    for (mode, extra) in [("tangent", &[][..]), ("adjoint", &["-I"][..])] {
        let to_stdout = transform(&schema, mode, &input, extra);
        let mut files = Vec::new();
        for jobs in ["1", "3"] {
            let out = dir.join(format!("{mode}-{jobs}.xaif"));
            let mut args = extra.to_vec();
            let out_arg = out.to_str().unwrap().to_string();
            args.extend(["--jobs", jobs, "-o", &out_arg]);
            let printed = transform(&schema, mode, &input, &args);
            assert!(printed.is_empty());
            files.push(std::fs::read(&out).unwrap());
            outputs.push(out);
        }
        assert_eq!(files[0], files[1], "{mode}: --jobs 1 and --jobs 3 differ");
        assert_eq!(
            files[0], to_stdout,
            "{mode}: file and standard output differ"
        );
        // A directory input goes through the batch path, which writes the
        // whole output model at once; one file is written routine by
        // routine.
        let batch_in = dir.join(format!("in-{mode}"));
        std::fs::create_dir_all(&batch_in).unwrap();
        std::fs::copy(&input, batch_in.join("generated.xaif")).unwrap();
        let batch_out = dir.join(format!("batch-{mode}"));
        let mut args = extra.to_vec();
        let out_arg = batch_out.to_str().unwrap().to_string();
        args.extend(["-o", &out_arg]);
        transform(&schema, mode, &batch_in, &args);
        assert_eq!(
            files[0],
            std::fs::read(batch_out.join("generated.xaif")).unwrap(),
            "{mode}: the streamed output differs from the whole model's"
        );
        assert!(files[0].len() > 100_000, "{mode}: output too small");
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
    std::fs::remove_dir_all(&dir).ok();
}

/// mimalloc (which an input of this size gets, initialised only then) and
/// the system allocator give the same bytes, with the writer and copy
/// threads at work.
#[test]
fn both_allocators_give_the_same_bytes() {
    let Some(shared) = shared_dir() else { return };
    let schema = shared.join("xaif/schema");
    let dir = scratch("allocators");
    let input = streamed_program(&dir, 5);
    assert!(std::fs::metadata(&input).unwrap().len() > 128 * 1024);
    for (mode, extra) in [("tangent", &[][..]), ("adjoint", &["-I"][..])] {
        let outputs: Vec<Vec<u8>> = ["mimalloc", "system"]
            .iter()
            .map(|a| {
                let out = dir.join(format!("{mode}-{a}.xaif"));
                let mut args = extra.to_vec();
                let out_arg = out.to_str().unwrap().to_string();
                args.extend(["-o", &out_arg]);
                transform_with(Some(a), &schema, mode, &input, &args);
                std::fs::read(&out).unwrap()
            })
            .collect();
        assert!(outputs[0].len() > 100_000, "{mode}: output too small");
        assert!(outputs[0] == outputs[1], "{mode}: the allocators differ");
    }
}

/// Runs `xaifb run --mode MODE FILE` with the harness and parameters in
/// `dir` and returns the Jacobian it prints.
fn run_jacobian(dir: &Path, mode: &str, file: &Path) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_xaifb"))
        .args(["run", "--mode", mode])
        .arg("--harness")
        .arg(dir.join("harness.json"))
        .arg("--params")
        .arg(dir.join("params.conf"))
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "run --mode {mode} {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The generated programs that measure speed are programs whose
/// derivatives must be right too: tangent, split and joint adjoint give
/// one Jacobian. The generator writes no side-effect lists, so the joint
/// reversal's argument checkpoints come from the lists the engine infers
/// (without them the re-run callees start from the values their forward
/// run left: `r0` calls `r2` twice with the same arrays).
#[test]
fn generated_programs_have_one_jacobian_in_every_mode() {
    let Some(shared) = shared_dir() else { return };
    let schema = shared.join("xaif/schema");
    for (routines, statements, seed) in [(3, 150, 7), (5, 300, 7)] {
        let dir = scratch(&format!("jacobian-{routines}-{statements}-{seed}"));
        let input = dir.join("generated.xaif");
        let text = program(&Shape {
            routines,
            statements,
            seed,
        });
        assert!(
            !text.contains("<xaif:Read>"),
            "the generator writes no lists"
        );
        std::fs::write(&input, text).unwrap();
        // Every routine is r_k(x(10), y(10), n); small start values keep
        // the products of the generated expressions finite.
        let x0: Vec<String> = (1..=10).map(|i| format!("{}", i as f64 * 1e-3)).collect();
        std::fs::write(
            dir.join("harness.json"),
            format!(
                r#"{{"example": "generated", "n": 10, "m": 10, "top": "r0", "args": [{{"kind": "x", "first": 1, "size": 10}}, {{"kind": "y", "first": 1, "size": 10}}, {{"kind": "int", "value": 10}}], "x0": [{}]}}"#,
                x0.join(", ")
            ),
        )
        .unwrap();
        std::fs::write(dir.join("params.conf"), "10\n10\n1e-6\n1e-4\n").unwrap();
        let tangent = dir.join("tangent.xaif");
        let adjoint = dir.join("adjoint.xaif");
        std::fs::write(&tangent, transform(&schema, "tangent", &input, &[])).unwrap();
        std::fs::write(&adjoint, transform(&schema, "adjoint", &input, &["-I"])).unwrap();
        let jacobians = [
            ("tangent", run_jacobian(&dir, "tangent", &tangent)),
            ("split", run_jacobian(&dir, "split", &adjoint)),
            ("joint", run_jacobian(&dir, "joint", &adjoint)),
        ];
        for (name, j) in &jacobians {
            std::fs::write(dir.join(format!("{name}.out")), j).unwrap();
        }
        for other in ["split", "joint"] {
            let o = Command::new(env!("CARGO_BIN_EXE_xaifb"))
                .arg("compare")
                .arg(dir.join("tangent.out"))
                .arg(dir.join(format!("{other}.out")))
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{routines} routines, {statements} statements, seed {seed}: tangent and {other} adjoint differ:\n{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
}
