//! Fuzz target `catalogue`: arbitrary bytes as the inlinable intrinsics
//! catalogue of a fixed program, through both transformations.
//!
//! The catalogue is an input like any other (users pass their own with
//! `-c`), and its entries drive code generation: arities, argument
//! references and partial-derivative expressions go straight into the
//! linearization. Any catalogue must therefore give a catalogue error or a
//! transformation (or a located transformation error), never a panic, an
//! abort or a hang. The program is the bundled seed of the control flow
//! reversal paper; the catalogue examples of the reference material seed
//! the corpus (`fuzz/seed.sh`).

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn program() -> &'static xaif_model::Program {
    static PROGRAM: OnceLock<xaif_model::Program> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let text = include_str!("../../fixtures/adjoint/seed_cfr.xaif");
        let (p, source) = xaif_model::read_program_str(text, None).expect("the fixture reads");
        xaif_model::validate_program(&p, &source).expect("the fixture is valid");
        p
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(parsed) = xaif_model::read_bytes(data, None) else {
        return;
    };
    if xaif_model::validate_document(&parsed.document, &parsed.source).is_err() {
        return;
    }
    let xaif_model::Document::Inlinable(c) = parsed.document else {
        return;
    };
    let Ok(catalogue) = xaif_linearize::Catalogue::new(&c) else {
        return;
    };
    let program = program();
    let _ = xaif_linearize::tangent(program, &catalogue, None, &Default::default());
    let _ = xaif_cfrev::adjoint(program, &catalogue, None, &Default::default());
});
