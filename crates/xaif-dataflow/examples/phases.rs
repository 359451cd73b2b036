//! Times each phase on generated programs (development aid).

fn main() {
    for (routines, stmts) in [(10, 1_000), (1_000, 100_000)] {
        let text = xaif_testkit::scale::program(&xaif_testkit::scale::Shape {
            routines,
            statements: stmts,
            seed: 0,
        });
        let (p, _) = xaif_model::read_program_str(&text, None).unwrap();
        let n = p.stmts.len() as f64;
        let t = std::time::Instant::now();
        let f = xaif_dataflow::ProgramFacts::new(&p);
        let t1 = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let a =
            xaif_dataflow::analyze_activity(&f, &Default::default(), Default::default()).unwrap();
        let t2 = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let _tb = xaif_dataflow::analyze_tbr(&f, &a, Default::default());
        let t3 = t.elapsed().as_secs_f64();
        println!(
            "{routines}: facts {:.2} activity {:.2} tbr {:.2} us/stmt",
            t1 * 1e6 / n,
            t2 * 1e6 / n,
            t3 * 1e6 / n
        );
    }
}
