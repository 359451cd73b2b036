//! Throughput of the model: read, read + validate, read + validate + write.
//!
//! Every xaifb run reads, gates and writes whole programs, so these three
//! numbers bound how fast any transformation can be. They are measured here,
//! in a benchmark, and never in a timed test (a loaded CI machine would make
//! such a test flaky). Inputs are the largest file of the reference corpus and
//! all corpus files together, found through `XAIFB_SHARED` (default
//! `../shared` beside the repository); without them the benchmark prints why
//! and measures nothing. Throughput is reported in decimal MB/s of input.
//!
//! Run with `cargo bench -p xaif-model --bench model` or `cargo xtask bench`
//! (which also measures peak memory); see `docs/performance.md`.
// criterion_group! generates an entry point that cannot carry a doc comment.
#![allow(missing_docs)]

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use xaif_model::{read_bytes, validate_document, write_document};

/// The largest file of the corpus, relative to the reference material.
const LARGEST: &str = "corpus/examples/graphEx2/admjointhead_sf.pre.xb.xaif";

/// The reference material, or `None` (with a message) when it is absent.
fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os(xaif_testkit::SHARED_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| xaif_testkit::repo_root().join("../shared"));
    if dir.join("corpus").is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipping the model benchmark: no reference corpus at {} (set {})",
            dir.display(),
            xaif_testkit::SHARED_ENV
        );
        None
    }
}

/// One benchmark input: the files' bytes, read once up front so that disk
/// speed is not measured.
struct Input {
    files: Vec<Vec<u8>>,
}

impl Input {
    fn load(paths: &[PathBuf]) -> Self {
        let files = paths
            .iter()
            .map(|p| std::fs::read(p).expect("readable corpus file"))
            // Old-format files are rejected by the reader; they would only
            // measure how fast an error is found.
            .filter(|bytes| read_bytes(bytes, None).is_ok())
            .collect();
        Input { files }
    }

    fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.len() as u64).sum()
    }
}

fn read_only(input: &Input) {
    for f in &input.files {
        black_box(read_bytes(f, None).expect("reads"));
    }
}

fn read_validate(input: &Input) {
    for f in &input.files {
        let parsed = read_bytes(f, None).expect("reads");
        black_box(validate_document(&parsed.document, &parsed.source).is_ok());
        black_box(parsed);
    }
}

fn round_trip(input: &Input) {
    for f in &input.files {
        let parsed = read_bytes(f, None).expect("reads");
        black_box(validate_document(&parsed.document, &parsed.source).is_ok());
        black_box(write_document(&parsed.document));
    }
}

/// Registers the three measurements of `input` in `group`.
fn measure(group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>, input: &Input) {
    group.throughput(Throughput::BytesDecimal(input.bytes()));
    group.bench_function("read", |b| b.iter(|| read_only(input)));
    group.bench_function("read+validate", |b| b.iter(|| read_validate(input)));
    group.bench_function("read+validate+write", |b| b.iter(|| round_trip(input)));
}

fn largest(c: &mut Criterion) {
    let Some(shared) = shared_dir() else { return };
    let path = shared.join(LARGEST);
    if !path.is_file() {
        eprintln!(
            "skipping the largest-file benchmark: {} not found",
            path.display()
        );
        return;
    }
    let input = Input::load(&[path]);
    let mut group = c.benchmark_group("largest");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    measure(&mut group, &input);
    group.finish();
}

fn corpus(c: &mut Criterion) {
    let Some(shared) = shared_dir() else { return };
    let paths = xaif_testkit::xaif_files(&shared.join("corpus"));
    let input = Input::load(&paths);
    eprintln!(
        "corpus: {} files read, {:.1} MB",
        input.files.len(),
        input.bytes() as f64 / 1e6
    );
    let mut group = c.benchmark_group("corpus");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(15));
    measure(&mut group, &input);
    group.finish();
}

criterion_group!(benches, largest, corpus);
criterion_main!(benches);
