//! Temporary: print the LCG text of every graph of a tangent transformation.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (cat, _) = xaif_linearize::catalogue::read_catalogues(std::path::Path::new(&args[1]), None).unwrap();
    let (p, source) = xaif_model::read_program_file(std::path::Path::new(&args[2])).unwrap();
    xaif_model::validate_program(&p, &source).unwrap();
    let mut o = xaif_linearize::TangentOptions::default();
    o.dot = true;
    let r = xaif_linearize::tangent(&p, &cat, None, &o).unwrap();
    for d in &r.dots {
        if args.len() < 4 || d.name.contains(&args[3]) {
            print!("{}---\n", d.lcg);
        }
    }
}
