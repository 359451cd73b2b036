//! Valid out of what the gate accepts (issue 15, class 4): mutants of the
//! fixtures (attribute values replaced by odd or hostile text, attributes
//! and elements deleted or duplicated) that the gate
//! (`Catalogue::validate_program`) accepts must transform into tangent and
//! adjoint XAIF that `xaif_output.xsd` accepts, or fail with an error; an
//! output the back end would reject is never produced.
//!
//! The mutants come from a fixed seed (`XAIFB_MUTANTS` sets how many; the
//! default keeps the test at a few seconds). A failure prints the mutation,
//! so it can be replayed by hand.

use std::path::{Path, PathBuf};

use xaif_cfrev::{adjoint, AdjointOptions};
use xaif_linearize::{catalogue::read_catalogues, tangent, Catalogue, TangentOptions};
use xaif_testkit::{have_xmllint, repo_root, shared_dir, xmllint_valid};

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const ODD_VALUES: &[&str] = &[
    "",
    " ",
    "0",
    "1",
    "-1",
    "2",
    "99999999999",
    "1e308",
    "NaN",
    "a&amp;b&lt;c&gt;&quot;d",
    "&#x9;&#xA;",
    "\u{e9}\u{1F600}",
    "x y",
    "true",
    "false",
    "OpenAD_",
    "_",
];

/// Byte ranges of every `name="value"` attribute in `text`.
fn attributes(text: &str) -> Vec<(usize, usize, usize)> {
    // (start of name, start of value, end of value)
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(q) = text[i..].find("=\"") {
        let eq = i + q;
        let mut s = eq;
        while s > 0 && (b[s - 1].is_ascii_alphanumeric() || b[s - 1] == b'_' || b[s - 1] == b':') {
            s -= 1;
        }
        let v = eq + 2;
        let Some(len) = text[v..].find('"') else {
            break;
        };
        if s < eq && b[s - 1] == b' ' {
            out.push((s, v, v + len));
        }
        i = v + len + 1;
    }
    out
}

/// Byte ranges of every self-closing element `<…/>` in `text`.
fn empty_elements(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(lt) = text[i..].find('<') {
        let s = i + lt;
        let Some(gt) = text[s..].find('>') else { break };
        let e = s + gt + 1;
        if text[s..e].ends_with("/>") && !text[s..e].starts_with("<?") {
            out.push((s, e));
        }
        i = e;
    }
    out
}

/// One mutation of `text`, and what it was.
fn mutate(text: &str, rng: &mut Rng) -> (String, String) {
    let attrs = attributes(text);
    let elements = empty_elements(text);
    match rng.below(4) {
        0 | 1 if !attrs.is_empty() => {
            let (s, v, e) = attrs[rng.below(attrs.len())];
            let value = ODD_VALUES[rng.below(ODD_VALUES.len())];
            let what = format!("{} = {value:?} (was {:?})", &text[s..v - 2], &text[v..e]);
            (format!("{}{value}{}", &text[..v], &text[e..]), what)
        }
        2 if !attrs.is_empty() => {
            let (s, _, e) = attrs[rng.below(attrs.len())];
            let what = format!("delete {}", &text[s..=e]);
            (format!("{}{}", &text[..s - 1], &text[e + 1..]), what)
        }
        _ if !elements.is_empty() => {
            let (s, e) = elements[rng.below(elements.len())];
            if rng.below(2) == 0 {
                (
                    format!("{}{}", &text[..s], &text[e..]),
                    format!("delete {}", &text[s..e]),
                )
            } else {
                (
                    format!("{}{}{}", &text[..e], &text[s..e], &text[e..]),
                    format!("duplicate {}", &text[s..e]),
                )
            }
        }
        _ => (text.to_string(), "none".into()),
    }
}

fn seeds() -> Vec<(String, String)> {
    let root = repo_root();
    let mut out: Vec<(String, String)> = [
        "fixtures/adjoint/seed_cfr.xaif",
        "fixtures/adjoint/control_flow.xaif",
        "fixtures/adjoint/passivation.xaif",
        "fixtures/tangent/flatten.xaif",
    ]
    .iter()
    .map(|f| {
        (
            f.to_string(),
            std::fs::read_to_string(root.join(f)).expect("fixture"),
        )
    })
    .collect();
    out.push((
        "deep::nested_ifs(3)".into(),
        xaif_testkit::deep::nested_ifs(3),
    ));
    out.push((
        "deep::nested_loops(3)".into(),
        xaif_testkit::deep::nested_loops(3),
    ));
    out
}

/// Transforms `text` both ways when the gate accepts it; returns the
/// outputs written as the driver writes them.
fn outputs(text: &str, cat: &Catalogue, schema_dir: &Path) -> Vec<(&'static str, String)> {
    let Ok((p, source)) = xaif_model::read_program_str(text, None) else {
        return Vec::new();
    };
    if cat.validate_program(&p, &source).is_err() {
        return Vec::new();
    }
    let dir = schema_dir.display().to_string();
    let mut out = Vec::new();
    if let Ok(t) = tangent(&p, cat, None, &TangentOptions::default()) {
        let mut q = t.program;
        q.mark_as_output(&dir);
        out.push(("tangent", xaif_model::write_program(&q)));
    }
    if let Ok(a) = adjoint(&p, cat, None, &AdjointOptions::default()) {
        let mut q = a.transformed.program;
        q.mark_as_output(&dir);
        out.push(("adjoint", xaif_model::write_program(&q)));
    }
    out
}

#[test]
fn outputs_of_inputs_the_gate_accepts_validate() {
    let Some(shared) = shared_dir() else { return };
    if !have_xmllint() {
        return;
    }
    let schema_dir = shared.join("xaif/schema");
    let cat = read_catalogues(&schema_dir.join("examples/inlinable_intrinsics.xaif"), None)
        .unwrap()
        .0;
    let count: usize = std::env::var("XAIFB_MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let dir = std::env::temp_dir().join(format!("xaifb-validity-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let seeds = seeds();
    let mut rng = Rng(0x5eed_0f15);
    let mut written: Vec<(PathBuf, String)> = Vec::new();
    let mut accepted = 0;
    // The unmutated seeds first: their outputs must validate too.
    for k in 0..seeds.len() + count {
        let (name, text) = &seeds[k % seeds.len()];
        let (mutant, what) = if k < seeds.len() {
            (text.clone(), "none".to_string())
        } else {
            let (once, first) = mutate(text, &mut rng);
            if rng.below(2) == 0 {
                (once, first)
            } else {
                let (twice, second) = mutate(&once, &mut rng);
                (twice, format!("{first}; {second}"))
            }
        };
        let outs = outputs(&mutant, &cat, &schema_dir);
        if !outs.is_empty() {
            accepted += 1;
        }
        for (mode, out) in outs {
            let path = dir.join(format!("{k}-{mode}.xaif"));
            std::fs::write(&path, out).unwrap();
            written.push((path, format!("{name}: {what} ({mode})")));
        }
    }
    let files: Vec<PathBuf> = written.iter().map(|(p, _)| p.clone()).collect();
    let valid = xmllint_valid(&schema_dir.join("xaif_output.xsd"), &files);
    let invalid: Vec<&String> = written
        .iter()
        .filter(|(p, _)| !valid.contains(p))
        .map(|(_, what)| what)
        .collect();
    assert!(
        invalid.is_empty(),
        "{} of {} outputs fail xaif_output.xsd (kept in {}):\n{}",
        invalid.len(),
        written.len(),
        dir.display(),
        invalid
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The mutants exercise the property: a fair share pass the gate (most
    // mutations break a reference the gate checks).
    assert!(
        accepted > seeds.len() + count / 20,
        "only {accepted} of {count} mutants accepted"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
