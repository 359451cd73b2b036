//! Programs whose routines come without side-effect lists.
//!
//! The `ModLocal`, `Mod`, `ReadLocal`, `Read` and `OnEntry` lists of a
//! `ControlFlowGraph` are optional in XAIF. OpenAD's front end writes them;
//! hand-written and generated XAIF often does not. Joint-mode reversal
//! re-runs every routine from its argument checkpoint, which stores the
//! `Read` list: without one it must be inferred, or the re-run starts from
//! the values the forward run left behind and the adjoint is wrong. Every
//! fixture of the campaigns with calls is checked again here with its
//! lists removed.

use xaif_stress::Checker;

/// `n` and `m` from a fixture's header (the listing the generator writes).
fn sizes(text: &str) -> (usize, usize) {
    let line = text
        .lines()
        .find(|l| l.starts_with("head(x("))
        .expect("a head(x(n), y(m)) line");
    let num = |key: &str| -> usize {
        let at = line.find(key).expect("n and m") + key.len();
        line[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap()
    };
    (num("n = "), num("m = "))
}

#[test]
fn fixtures_with_calls_are_right_without_side_effect_lists() {
    let checker = Checker::builtin();
    let dir = xaif_testkit::repo_root().join("fixtures/stress");
    let mut checked = 0;
    for path in xaif_testkit::xaif_files(&dir) {
        let text = std::fs::read_to_string(&path).unwrap();
        if !text.contains("<xaif:SubroutineCall") {
            continue;
        }
        let stripped = xaif_testkit::strip::side_effect_lists(&text);
        assert!(!stripped.contains("<xaif:Read>"));
        let (n, m) = sizes(&text);
        let outcome = checker.check(&stripped, n, m, &[], 1);
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert!(outcome.skipped.is_none(), "{name}: {:?}", outcome.skipped);
        let findings: Vec<String> = outcome
            .findings
            .iter()
            .map(|f| format!("{} [{}]\n{}", f.check, f.variant, f.detail))
            .collect();
        assert!(findings.is_empty(), "{name}:\n{}", findings.join("\n\n"));
        checked += 1;
    }
    assert!(checked > 0, "no fixture with calls");
}
