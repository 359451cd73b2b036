//! Prints, for each corpus front-end input, where our activity differs from
//! the front end's (a development aid).
fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("corpus examples dir"));
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for d in entries {
        let f = d.join("tlmhead_sf.pre.xaif");
        if !f.exists() {
            continue;
        }
        let Ok((p, sm)) = xaif_model::read_program_file(&f) else {
            println!("{}: unreadable", d.display());
            continue;
        };
        if xaif_model::validate_program(&p, &sm).is_err() {
            println!("{}: invalid", d.display());
            continue;
        }
        let t = std::time::Instant::now();
        let a = match xaif_dataflow::analyze(
            &p,
            &xaif_dataflow::Config {
                tbr: true,
                ..Default::default()
            },
        ) {
            Ok(a) => a,
            Err(e) => {
                println!("{}: {e}", d.display());
                continue;
            }
        };
        let diffs = xaif_dataflow::compare_with_front_end(&a.facts, &a.activity);
        let name = d.file_name().unwrap().to_string_lossy().to_string();
        let ours_only: Vec<String> = diffs
            .iter()
            .filter(|x| x.ours)
            .map(|x| {
                format!(
                    "{}@{}{}",
                    x.name,
                    p.scopes[p.symbols[x.symbol].scope]
                        .attrs
                        .get("vertex_id")
                        .unwrap_or("?"),
                    if x.explanation.is_some() { "*" } else { "" }
                )
            })
            .collect();
        let fe_only: Vec<String> = diffs
            .iter()
            .filter(|x| !x.ours)
            .map(|x| x.name.clone())
            .collect();
        println!(
            "{name} [{:?}] ours-only {:?} fe-only {:?}",
            t.elapsed(),
            ours_only,
            fe_only
        );
    }
}
