//! Temporary experiment driver.
use xaif_elim::*;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let effort = match std::env::args().nth(2).as_deref() { Some("fast") => Effort::Fast, Some("max") => Effort::Max, Some("none") => Effort::None, _ => Effort::Default };
    let text = std::fs::read_to_string(path).unwrap();
    for mode in [PropagationMode::Tangent, PropagationMode::Adjoint] {
        let (mut chain, mut ours, mut lb, mut proven, mut n) = (0u64, 0u64, 0u64, 0, 0);
        let mut time = 0u64;
        let mut worst = Vec::new();
        for g in text.split("---\n") {
            let Some(lcg) = Lcg::from_text(g) else { continue };
            if lcg.edges().is_empty() { continue; }
            let mut config = if std::env::var("A2").is_ok() { let mut c = Config::from_flags(1, 2, false).unwrap(); c.search.goal = Goal::Metric; c } else { Config::default() };
            config.search.effort = effort;
            let t = std::time::Instant::now();
            let o = optimize(&lcg, &config, mode).unwrap();
            let dt = t.elapsed().as_micros() as u64;
            time += dt;
            chain += o.report.chain; ours += o.report.cost; lb += o.report.lower_bound;
            if o.report.proof.is_some() { proven += 1; }
            n += 1;
            let mut f: Vec<String> = o.selection.elimination.remainder.edges.iter().filter_map(|e| match e.value { EdgeValue::Variable(v) => Some(format!("v{}", v.0)), EdgeValue::Acc(a) => Some(format!("a{}", a.0)), _ => None }).collect();
            f.sort(); f.dedup();
            if std::env::var("SHOW").is_ok() && o.report.size.0 >= 60 { let sel = select(&lcg, &config).unwrap(); println!("chain taped {} ours taped {}", taped_factors(&sel.elimination), taped_factors(&o.selection.elimination)); println!("{mode:?} size {:?} pushes {} cost {} chain {} ops {:?}", o.report.size, f.len(), o.report.cost, o.report.chain, o.selection.elimination.ops); }
            worst.push((dt, o.report.size, o.report.chain, o.report.cost, o.report.lower_bound, o.report.found_by, o.report.proof));
            let j0 = lcg.jacobian(&|v| Some(1.0 + v.0 as f64 * 0.37));
            let j1 = o.selection.elimination.jacobian(&|v| Some(1.0 + v.0 as f64 * 0.37));
            if let (Ok(a), Ok(b)) = (j0, j1) { for (x, y) in a.values.iter().zip(&b.values) { assert!((x - y).abs() <= 1e-9 * (1.0 + x.abs()), "jacobian"); } }
        }
        worst.sort_by_key(|w| w.0);
        println!("{mode:?}: graphs {n} chain {chain} ours {ours} ratio {:.3} lb {lb} proven {proven} time {} us", ours as f64 / chain as f64, time);
        for w in worst.iter().rev().take(8) { println!("  {w:?}"); }
    }
}

#[allow(dead_code)]
fn find_reroute() {}
#[allow(dead_code)]
fn unused() {}
