//! Generated programs through the driver: batches give the same bytes
//! whatever the number of worker threads, and a second run gives them
//! again.

use std::path::{Path, PathBuf};
use std::process::Command;

use xaif_testkit::gen;

fn scratch(name: &str) -> xaif_testkit::Scratch {
    xaif_testkit::Scratch::new("xaifb-generated", name)
}

fn batch(mode: &str, noninlinable: &Path, input: &Path, out: &Path, jobs: &str) {
    let st = Command::new(env!("CARGO_BIN_EXE_xaifb"))
        .arg(mode)
        .arg("-N")
        .arg(noninlinable)
        .arg("-i")
        .arg(input)
        .arg("-o")
        .arg(out)
        .args(["--jobs", jobs])
        .status()
        .unwrap();
    assert!(st.success(), "{mode} -j {jobs}");
}

#[test]
fn batches_of_generated_programs_are_deterministic_across_jobs() {
    let dir = scratch("jobs");
    // The direct actions of the non-inlinable catalogue (the generated
    // programs transpose matrices); the inlinable one is built in.
    let noninlinable = dir.join("noninlinable.xaif");
    std::fs::write(
        &noninlinable,
        r#"<xaifnii:NonInlinableIntrinsicDefinitions xmlns:xaifnii="http://www.mcs.anl.gov/XAIFNonInlinableIntrinsics"><xaifnii:DirectAction name="transpose_arr" derivAction="transpose_arr"/><xaifnii:DirectAction name="reshape_arr" derivAction="reshape_arr"/></xaifnii:NonInlinableIntrinsicDefinitions>"#,
    )
    .unwrap();
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    for seed in 0..16u64 {
        let text = gen::generate(seed * 7919 + 3, 1 + (seed % 8) as usize);
        std::fs::write(input.join(format!("p{seed}.xaif")), text).unwrap();
    }
    for mode in ["tangent", "adjoint"] {
        let outs: Vec<PathBuf> = ["1", "2", "2"]
            .iter()
            .enumerate()
            .map(|(k, jobs)| {
                let out = dir.join(format!("{mode}-{k}"));
                batch(mode, &noninlinable, &input, &out, jobs);
                out
            })
            .collect();
        for seed in 0..16u64 {
            let name = format!("p{seed}.xaif");
            let first = std::fs::read(outs[0].join(&name)).unwrap();
            for other in &outs[1..] {
                assert_eq!(
                    first,
                    std::fs::read(other.join(&name)).unwrap(),
                    "{mode} {name}"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
