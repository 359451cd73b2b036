//! Temporary: search random graphs where -R helps.
use xaif_elim::*;
fn main() {
    let mut seed: u64 = 12345;
    let mut next = || { seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); (seed >> 33) as usize };
    for trial in 0..200000 {
        let n = 4 + next() % 4;
        let nx = 1 + next() % 2;
        let mut g = Lcg::new();
        let mut vs = Vec::new();
        for r in 0..n {
            let kind = if r < nx { VertexKind::Independent } else if r + 1 == n || next() % 3 == 0 { VertexKind::Dependent } else { VertexKind::Intermediate };
            vs.push(g.add_vertex(kind));
        }
        let ne = n + next() % (n);
        let mut var = 0;
        for _ in 0..ne {
            let a = next() % n; let b = next() % n;
            let (lo, hi) = (a.min(b), a.max(b));
            if lo == hi || hi < nx { continue; }
            if g.edges().iter().any(|e| e.source == vs[lo] && e.target == vs[hi]) { continue; }
            let l = match next() % 4 { 0 => Label::Unit, _ => { var += 1; Label::Variable(VarId(var)) } };
            let _ = g.add_edge(vs[lo], vs[hi], l);
        }
        let which = std::env::args().nth(1).unwrap_or_default();
        for (goal, mode) in [(Goal::Metric, PropagationMode::Tangent), (Goal::RunTime, PropagationMode::Tangent), (Goal::RunTime, PropagationMode::Adjoint)] {
            let mut c = Config::default();
            c.search.goal = goal; c.search.effort = Effort::Fast;
            let Ok(a) = optimize(&g, &c, mode) else { continue };
            match which.as_str() {
                "a" => c.search.randomized = true,
                "m" => { c = Config::from_flags(1, 1, true).unwrap(); c.search.goal = goal; c.search.effort = Effort::Fast; c.search.allow_maintaining = true; }
                _ => c.search.rerouting = true,
            }
            let Ok(b) = optimize(&g, &c, mode) else { continue };
            if b.report.cost < a.report.cost {
                println!("trial {trial} {goal:?} {mode:?} without {} with {}\n{}", a.report.cost, b.report.cost, g.to_text());
                println!("{:?}", b.selection.elimination.steps);
                return;
            }
        }
    }
    println!("none");
}
