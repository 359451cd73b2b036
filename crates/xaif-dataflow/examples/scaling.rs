//! Times the analyses on generated programs of growing size (a quick check
//! of linear scaling; the criterion benchmark is the reference).

fn main() {
    for (routines, stmts) in [(10, 1_000), (100, 10_000), (300, 30_000), (1_000, 100_000)] {
        let text = xaif_testkit::scale::program(&xaif_testkit::scale::Shape {
            routines,
            statements: stmts,
            seed: 0,
        });
        let (p, sm) = xaif_model::read_program_str(&text, None).unwrap();
        xaif_model::validate_program(&p, &sm).unwrap();
        let n = p.stmts.len();
        for tbr in [false, true] {
            let config = xaif_dataflow::Config {
                tbr,
                ..Default::default()
            };
            let reps = (200_000 / n).max(3);
            let t = std::time::Instant::now();
            for _ in 0..reps {
                std::hint::black_box(xaif_dataflow::analyze(&p, &config).unwrap());
            }
            let per = t.elapsed().as_secs_f64() / reps as f64;
            println!(
                "{routines:5} routines {n:7} stmts tbr={tbr:5}: {:9.2} ms, {:6.2} us/stmt",
                per * 1e3,
                per * 1e6 / n as f64
            );
        }
    }
}
