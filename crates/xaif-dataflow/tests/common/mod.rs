//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use xaif_dataflow::{Analysis, LocSet};
use xaif_model::{Program, RoutineId, SourceMap, StmtId};

/// The committed fixture `name` of `fixtures/dataflow`.
pub fn fixture(name: &str) -> PathBuf {
    xaif_testkit::repo_root()
        .join("fixtures/dataflow")
        .join(name)
}

/// Reads and gates an XAIF file.
pub fn load(path: &std::path::Path) -> (Program, SourceMap) {
    let (p, sm) = xaif_model::read_program_file(path).expect("readable XAIF");
    xaif_model::validate_program(&p, &sm).expect("XAIF passes the gate");
    (p, sm)
}

/// The statement with XAIF id `id`.
pub fn stmt(p: &Program, id: &str) -> StmtId {
    p.stmts
        .iter()
        .find(|(_, s)| s.id() == id)
        .map(|(i, _)| i)
        .unwrap_or_else(|| panic!("no statement {id}"))
}

/// The analysed routine with Fortran name `name`.
pub fn routine(a: &Analysis, name: &str) -> RoutineId {
    *a.facts
        .routines
        .iter()
        .find(|(_, rf)| rf.name == name)
        .unwrap_or_else(|| panic!("no routine {name}"))
        .0
}

/// Names of a set, sorted.
pub fn names(a: &Analysis, r: RoutineId, set: &LocSet) -> Vec<String> {
    let mut v = a.facts.describe(r, set);
    v.sort();
    v
}
