//! Prints the analysis report of an XAIF file (a development aid; the driver
//! has the real command).
fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: report FILE [ROUTINE:VAR-independent ...]");
    let (p, sm) =
        xaif_model::read_program_file(std::path::Path::new(&path)).expect("readable XAIF");
    xaif_model::validate_program(&p, &sm).expect("valid XAIF");
    let a = xaif_dataflow::analyze(
        &p,
        &xaif_dataflow::Config {
            tbr: true,
            ..Default::default()
        },
    )
    .expect("analysis");
    print!(
        "{}",
        xaif_dataflow::report::render(&a, Some(&sm), Default::default())
    );
}
