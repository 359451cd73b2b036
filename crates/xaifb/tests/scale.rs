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
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xaifb"));
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

#[test]
fn generated_programs_transform_into_valid_outputs_with_the_same_bytes_every_way() {
    let Some(shared) = shared_dir() else { return };
    let schema = shared.join("xaif/schema");
    let dir = scratch("modes");
    let input = dir.join("generated.xaif");
    std::fs::write(
        &input,
        // Above the size from which one file's routines are written as
        // they are finished (`stream::STREAM_MIN_STATEMENTS`), on a thread
        // of their own (`--jobs 1` writes them inline).
        program(&Shape {
            routines: 12,
            statements: 2400,
            seed: 3,
        }),
    )
    .unwrap();
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
