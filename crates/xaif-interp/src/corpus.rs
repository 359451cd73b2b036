//! The OpenAD regression corpus as a test bed.
//!
//! Each example folder holds front-end XAIF, the reference engine's outputs,
//! `params.conf`, `ad.out` and, for examples with their own driver, a
//! `harness.json`; `index.csv` says per example and mode whether executing
//! the reference output reproduced `ad.out`. This module reads that layout
//! and runs an XAIF file of an example the way its driver does, so the test
//! suites and `cargo xtask corpus` share one procedure.

use std::path::{Path, PathBuf};

use crate::compile::CompileOptions;
use crate::harness::{Harness, HarnessSpec, Mode, Outcome, Params};
use crate::jacobian::{compare, Comparison, Jacobian};

/// One row of `index.csv`.
#[derive(Clone, Debug, Default)]
pub struct Example {
    /// Folder name.
    pub name: String,
    /// The example's folder.
    pub dir: PathBuf,
    /// `executable-generic-harness`, `executable-custom-harness`,
    /// `executable-but-reference-incomplete`, `not-executable`, `no-xaif`.
    pub verdict: String,
    /// `failreason` column: modes in which the reference tool chain fails.
    pub failreason: String,
    /// `options` column.
    pub options: String,
    /// Oracle status of the reference tangent output (`match`, …).
    pub oracle_tlm: String,
    /// Oracle status of the reference split output.
    pub oracle_split: String,
    /// Oracle status of the reference joint output.
    pub oracle_joint: String,
    /// `caveats` column.
    pub caveats: String,
}

impl Example {
    /// The reference output file for `mode` (`Plain` and `Trace` give
    /// the front-end input).
    pub fn reference(&self, mode: Mode) -> PathBuf {
        self.dir.join(match mode {
            Mode::Plain | Mode::Trace => "tlmhead_sf.pre.xaif",
            Mode::Tangent => "tlmnonehead_sf.pre.xb.xaif",
            Mode::Split => "admsplithead_sf.pre.xb.xaif",
            Mode::Joint => "admjointhead_sf.pre.xb.xaif",
        })
    }

    /// The front-end input for tangent (`false`) or adjoint (`true`) mode.
    pub fn input(&self, adjoint: bool) -> PathBuf {
        self.dir.join(if adjoint {
            "admhead_sf.pre.xaif"
        } else {
            "tlmhead_sf.pre.xaif"
        })
    }

    /// The `index.csv` oracle status for `mode`.
    pub fn oracle(&self, mode: Mode) -> &str {
        match mode {
            Mode::Tangent => &self.oracle_tlm,
            Mode::Split => &self.oracle_split,
            Mode::Joint => &self.oracle_joint,
            Mode::Plain | Mode::Trace => "",
        }
    }

    /// `params.conf`.
    pub fn params(&self) -> Result<Params, String> {
        let text = std::fs::read_to_string(self.dir.join("params.conf"))
            .map_err(|e| format!("{}: params.conf: {e}", self.name))?;
        Params::parse(&text)
    }

    /// How the example is driven: its `harness.json`, or the generic driver.
    pub fn harness(&self) -> Result<HarnessSpec, String> {
        let path = self.dir.join("harness.json");
        if path.is_file() {
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            HarnessSpec::parse_json(&text)
        } else {
            let p = self.params()?;
            Ok(HarnessSpec::generic(p.n, p.m))
        }
    }

    /// The Jacobian the compiled code produced.
    pub fn ad_out(&self) -> Result<Jacobian, String> {
        let text = std::fs::read_to_string(self.dir.join("ad.out"))
            .map_err(|e| format!("{}: ad.out: {e}", self.name))?;
        Jacobian::parse(&text)
    }

    /// The divided-difference Jacobian the reference chain recorded.
    pub fn dd_out(&self) -> Result<Jacobian, String> {
        let text = std::fs::read_to_string(self.dir.join("dd.out"))
            .map_err(|e| format!("{}: dd.out: {e}", self.name))?;
        Jacobian::parse(&text)
    }

    /// Whether the reference chain's adjoint fails in some mode (a
    /// `FAILREASON_adm_*` file).
    pub fn adjoint_fails_in_reference(&self) -> bool {
        self.failreason.contains("adm")
    }

    /// Whether the example runs under the generic harness (`params.conf`
    /// alone drives it) and has an adjoint input: the examples every
    /// sweep over the corpus's loops takes.
    pub fn runs_under_generic_harness(&self) -> bool {
        self.verdict == "executable-generic-harness" && self.input(true).is_file()
    }

    /// Whether the example's options select no default initialisation.
    pub fn no_default_init(&self) -> bool {
        self.options.contains("scalarNDI")
    }
}

/// Splits one CSV line (fields may be quoted and contain commas).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// Reads `corpus/index.csv`.
pub fn read_index(corpus: &Path) -> Result<Vec<Example>, String> {
    let text = std::fs::read_to_string(corpus.join("index.csv"))
        .map_err(|e| format!("{}: {e}", corpus.join("index.csv").display()))?;
    let mut lines = text.lines();
    let header = csv_fields(lines.next().ok_or("index.csv is empty")?);
    let col = |name: &str| header.iter().position(|h| h == name);
    let get = |fields: &[String], name: &str| -> String {
        col(name)
            .and_then(|i| fields.get(i))
            .cloned()
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let f = csv_fields(line);
        let name = get(&f, "example");
        out.push(Example {
            dir: corpus.join("examples").join(&name),
            name,
            verdict: get(&f, "verdict"),
            failreason: get(&f, "failreason"),
            options: get(&f, "options"),
            oracle_tlm: get(&f, "oracle_tlm"),
            oracle_split: get(&f, "oracle_split"),
            oracle_joint: get(&f, "oracle_joint"),
            caveats: get(&f, "caveats"),
        });
    }
    Ok(out)
}

/// The result of running one XAIF file of an example.
#[derive(Debug)]
pub struct RunReport {
    /// The run's outcome, or why it could not run.
    pub outcome: Result<Outcome, String>,
    /// Comparison with `ad.out`, when both exist.
    pub comparison: Option<Comparison>,
}

impl RunReport {
    /// Whether the run reproduced `ad.out` within 1e-10 relative or 1e-13
    /// absolute.
    pub fn matches(&self) -> bool {
        self.comparison.as_ref().is_some_and(Comparison::matches)
    }
}

/// Reads, validates and compiles `file` with `options`, runs it in `mode`
/// with the example's driver, and compares the Jacobian with `ad.out`.
pub fn run_file(
    example: &Example,
    file: &Path,
    mode: Mode,
    options: CompileOptions,
    step_budget: u64,
) -> RunReport {
    let failed = |e: String| RunReport {
        outcome: Err(e),
        comparison: None,
    };
    let (program, source) = match xaif_model::read_program_file(file) {
        Ok(x) => x,
        Err(e) => return failed(e.to_string()),
    };
    if let Err(e) = xaif_model::validate_program(&program, &source) {
        return failed(e.to_string());
    }
    let spec = match example.harness() {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let prog = crate::compile_with(&program, &source, options);
    let mut harness = Harness::new(&prog, spec);
    harness.limits = crate::Limits::with_steps(step_budget);
    let outcome = harness.run(mode).map_err(|e| e.to_string());
    let comparison = match (&outcome, example.ad_out()) {
        (Ok(o), Ok(ad)) => compare(&o.jacobian, &ad, 1e-10, 1e-13).ok(),
        _ => None,
    };
    RunReport {
        outcome,
        comparison,
    }
}

/// Divided differences of the example's front-end program, compared with
/// `ad.out` at the example's tolerance: `Ok(worst relative difference)`
/// when they agree.
pub fn divided_differences(example: &Example, step_budget: u64) -> Result<f64, String> {
    let dd = example_divided_differences(example, step_budget)?;
    let params = example.params()?;
    let ad = example.ad_out()?;
    let c =
        compare(&dd, &ad, params.tol, params.tol).map_err(|e| format!("{}: {e}", example.name))?;
    if c.matches() {
        Ok(c.max_rel)
    } else {
        Err(format!(
            "divided differences differ from ad.out beyond {}: worst relative {:.3e}, absolute {:.3e}, first at F{:?}",
            params.tol,
            c.max_rel,
            c.max_abs,
            c.mismatches.first().map(|m| (m.0, m.1, m.2, m.3))
        ))
    }
}

/// The divided-difference Jacobian of the example's front-end program.
pub fn example_divided_differences(
    example: &Example,
    step_budget: u64,
) -> Result<Jacobian, String> {
    let params = example.params()?;
    let file = example.input(false);
    let (program, source) = xaif_model::read_program_file(&file).map_err(|e| e.to_string())?;
    xaif_model::validate_program(&program, &source).map_err(|e| e.to_string())?;
    let prog = crate::compile(&program, &source);
    let mut harness = Harness::new(&prog, example.harness()?);
    harness.limits = crate::Limits::with_steps(step_budget);
    harness
        .divided_differences(params.h)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_keep_quoted_commas() {
        assert_eq!(
            csv_fields(r#"a,"{'x':1,'y':2}",,c"#),
            ["a", "{'x':1,'y':2}", "", "c"]
        );
        assert_eq!(
            csv_fields(r#""he said ""hi""",b"#),
            [r#"he said "hi""#, "b"]
        );
    }
}
