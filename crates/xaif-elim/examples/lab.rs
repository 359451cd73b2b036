//! Scratch: optimize every .lcg graph of a directory and print the reports.
use xaif_elim::{optimize, Config, Effort, Lcg, PropagationMode, VertexKind};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = &args[1];
    let effort = match args.get(2).map(String::as_str) {
        Some("fast") => Effort::Fast,
        Some("max") => Effort::Max,
        Some("none") => Effort::None,
        _ => Effort::Default,
    };
    let min_inter: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut tot = [0u64; 6];
    let mut tcpu = [0u128; 2];
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let g = Lcg::from_text(&text).unwrap();
        let inter = g
            .vertices()
            .filter(|&v| g.kind(v) == Some(VertexKind::Intermediate))
            .count();
        if inter < min_inter {
            continue;
        }
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        let mut line = format!("{name:60} i={inter:3} e={:3}", g.edges().len());
        for (k, mode) in [PropagationMode::Tangent, PropagationMode::Adjoint]
            .into_iter()
            .enumerate()
        {
            let mut c = Config::default();
            c.search.effort = effort;
            let t = cpu();
            let o = optimize(&g, &c, mode).unwrap();
            let dt = cpu() - t;
            tcpu[k] += dt;
            let r = &o.report;
            tot[3 * k] += r.chain;
            tot[3 * k + 1] += r.cost;
            tot[3 * k + 2] += r.lower_bound;
            line += &format!(
                " | {:4} {:4} {:4} {:6} {:>7}us {:16}",
                r.chain,
                r.cost,
                r.lower_bound,
                r.proof.map_or("-", |p| if p == xaif_elim::Proof::Edge {
                    "E"
                } else {
                    "V"
                }),
                dt,
                r.found_by
            );
        }
        println!("{line}");
    }
    println!(
        "totals tangent chain {} ours {} bound {} cpu {} ms; adjoint chain {} ours {} bound {} cpu {} ms",
        tot[0], tot[1], tot[2], tcpu[0] / 1000, tot[3], tot[4], tot[5], tcpu[1] / 1000
    );
}

fn cpu() -> u128 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as u128 * 1_000_000 + t.tv_nsec as u128 / 1000
}
