//! Analysis time against program size: generated programs from 10^3 to
//! 10^5 statements and from 10 to 10^3 routines. Linear scaling shows as a
//! constant time per statement; `docs/performance.md` records the figures.
// criterion_group! generates an entry point that cannot carry a doc comment.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const SIZES: [(usize, usize); 4] = [(10, 1_000), (100, 10_000), (300, 30_000), (1_000, 100_000)];

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("dataflow");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(5));
    for (routines, stmts) in SIZES {
        let text = xaif_testkit::scale::program(&xaif_testkit::scale::Shape {
            routines,
            statements: stmts,
            seed: 0,
        });
        let (p, sm) = xaif_model::read_program_str(&text, None).expect("generated XAIF reads");
        xaif_model::validate_program(&p, &sm).expect("generated XAIF passes the gate");
        let count = p.stmts.len() as u64;
        group.throughput(Throughput::Elements(count));
        for (name, tbr) in [("activity", false), ("activity+tbr", true)] {
            let config = xaif_dataflow::Config {
                tbr,
                ..Default::default()
            };
            group.bench_with_input(
                BenchmarkId::new(name, format!("{routines}r_{count}s")),
                &p,
                |b, p| b.iter(|| xaif_dataflow::analyze(p, &config).expect("analysis")),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
