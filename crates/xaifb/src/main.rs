use std::path::PathBuf;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let parsed = xaif_model::read_file(&PathBuf::from(&args[1]));
    match parsed {
        Ok(p) => {
            if let Err(e) = xaif_model::validate_document(&p.document, &p.source) {
                eprintln!("{e}");
            }
            let out = xaif_model::write_document(&p.document);
            std::fs::write(&args[2], out).unwrap();
        }
        Err(e) => { eprintln!("{e}"); std::process::exit(1) }
    }
}
