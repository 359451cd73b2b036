//! Jacobians in the regression suite's `ad.out` / `dd.out` format, and their
//! comparison.
//!
//! The format is what the compiled OpenAD drivers print: a header line
//! (` AD` or ` DD`), then `F(kkk,iii)=value` per entry, dependent first,
//! ordered by independent, then dependent, values in Fortran `EN26.16E3`
//! engineering notation. Writing it exactly lets a user diff our output
//! against `ad.out` line by line.

use std::fmt::Write;

/// A dense Jacobian: `m` dependents by `n` independents.
#[derive(Clone, Debug, PartialEq)]
pub struct Jacobian {
    /// Number of independents.
    pub n: usize,
    /// Number of dependents.
    pub m: usize,
    /// Entries, row-major: `entries[k * n + i]` is F(k+1, i+1).
    pub entries: Vec<f64>,
}

impl Jacobian {
    /// A zero Jacobian.
    pub fn zeros(m: usize, n: usize) -> Self {
        Jacobian {
            n,
            m,
            entries: vec![0.0; m * n],
        }
    }

    /// F(k, i), 1-based.
    pub fn get(&self, k: usize, i: usize) -> f64 {
        self.entries[(k - 1) * self.n + (i - 1)]
    }

    /// Sets F(k, i), 1-based.
    pub fn set(&mut self, k: usize, i: usize, x: f64) {
        self.entries[(k - 1) * self.n + (i - 1)] = x;
    }

    /// The text of an `ad.out` (header `AD`) or `dd.out` (header `DD`) file.
    pub fn to_out(&self, header: &str) -> String {
        let mut s = format!(" {header}\n");
        for i in 1..=self.n {
            for k in 1..=self.m {
                let _ = writeln!(s, "F({k:3},{i:3})={}", fortran_en(self.get(k, i)));
            }
        }
        s
    }

    /// Parses an `ad.out`/`dd.out` file. The file must hold every entry of
    /// an m x n Jacobian exactly once (in any order), so its size is
    /// bounded by its length and nothing is allocated for indices it only
    /// names; a file without entries is not a Jacobian.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut entries = Vec::new();
        let (mut n, mut m) = (0usize, 0usize);
        // Line of the entry with the largest k and the largest i.
        let (mut m_line, mut n_line) = (0, 0);
        let mut seen: rustc_hash::FxHashMap<(usize, usize), usize> = Default::default();
        for (lineno, line) in text.lines().enumerate() {
            let lineno = lineno + 1;
            let line = line.trim();
            if line.is_empty() || !line.starts_with("F(") {
                continue;
            }
            let bad = || format!("line {lineno}: cannot read `{line}`");
            let close = line.find(')').ok_or_else(bad)?;
            let (k, i) = line[2..close].split_once(',').ok_or_else(bad)?;
            let k: usize = k.trim().parse().map_err(|_| bad())?;
            let i: usize = i.trim().parse().map_err(|_| bad())?;
            let value = line[close + 1..].trim_start_matches('=').trim();
            let x = parse_fortran_real(value).ok_or_else(bad)?;
            if k == 0 || i == 0 {
                return Err(bad());
            }
            if let Some(first) = seen.insert((k, i), lineno) {
                return Err(format!(
                    "line {lineno}: F({k},{i}) is given twice (first at line {first})"
                ));
            }
            if k > m {
                (m, m_line) = (k, lineno);
            }
            if i > n {
                (n, n_line) = (i, lineno);
            }
            entries.push((k, i, x));
        }
        if entries.is_empty() {
            return Err("no Jacobian entries (lines `F(k,i)=value`)".into());
        }
        let total = (m as u128) * (n as u128);
        if total != entries.len() as u128 {
            return Err(format!(
                "line {}: indices up to F({m},{n}) make the Jacobian {m}x{n}, but the file holds {} of its {total} entries",
                m_line.max(n_line),
                entries.len()
            ));
        }
        let mut j = Jacobian::zeros(m, n);
        for (k, i, x) in entries {
            j.set(k, i, x);
        }
        Ok(j)
    }

    /// The first entry that is not a finite number, as (k, i, value).
    pub fn first_non_finite(&self) -> Option<(usize, usize, f64)> {
        let pos = self.entries.iter().position(|x| !x.is_finite())?;
        Some((pos / self.n + 1, pos % self.n + 1, self.entries[pos]))
    }
}

/// Reads a real as Fortran prints it (`1.5E+000`, `-Infinity`, `NaN`).
pub fn parse_fortran_real(text: &str) -> Option<f64> {
    let t = text.trim();
    match t {
        "NaN" => return Some(f64::NAN),
        "Infinity" | "+Infinity" => return Some(f64::INFINITY),
        "-Infinity" => return Some(f64::NEG_INFINITY),
        _ => {}
    }
    t.replace(['d', 'D'], "E").parse().ok()
}

/// Formats `x` like Fortran's `EN26.16E3` edit descriptor: engineering
/// notation (exponent a multiple of 3, one to three digits before the
/// point), 16 digits after the point, a three-digit exponent, right-justified
/// in 26 characters. Digits are the exact decimal rounding of the double.
pub fn fortran_en(x: f64) -> String {
    let body = if x.is_nan() {
        "NaN".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        let sign = if x.is_sign_negative() { "-" } else { "" };
        let a = x.abs();
        if a == 0.0 {
            format!("{sign}0.0000000000000000E+000")
        } else {
            let mut e10 = exponent_of(&format!("{a:e}"));
            loop {
                let eng = e10.div_euclid(3) * 3;
                let before = (e10 - eng + 1) as usize;
                let text = format!("{:.*e}", before + 15, a);
                let e_rounded = exponent_of(&text);
                if e_rounded != e10 {
                    // Rounding carried into a new decade (999.99… → 1000.0).
                    e10 = e_rounded;
                    continue;
                }
                let mantissa = &text[..text.find('e').expect("exponent")];
                let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
                let (int_part, frac) = digits.split_at(before);
                let esign = if eng < 0 { '-' } else { '+' };
                break format!("{sign}{int_part}.{frac}E{esign}{:03}", eng.abs());
            }
        }
    };
    format!("{body:>26}")
}

fn exponent_of(text: &str) -> i32 {
    text[text.find('e').expect("exponent") + 1..]
        .parse()
        .expect("an integer exponent")
}

/// The worst differences between two Jacobians.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Largest absolute difference.
    pub max_abs: f64,
    /// Largest relative difference (to the larger magnitude).
    pub max_rel: f64,
    /// Entries that differ by more than both 1e-10 relative and 1e-13
    /// absolute, as (k, i, a, b).
    pub mismatches: Vec<(usize, usize, f64, f64)>,
}

impl Comparison {
    /// Whether every entry agrees within 1e-10 relative or 1e-13 absolute.
    pub fn matches(&self) -> bool {
        self.mismatches.is_empty()
    }
}

/// Compares two Jacobians entry by entry: an entry agrees when it is within
/// `rel` relative or `abs` absolute. Differently sized Jacobians are an
/// error.
pub fn compare(a: &Jacobian, b: &Jacobian, rel: f64, abs: f64) -> Result<Comparison, String> {
    if a.n != b.n || a.m != b.m {
        return Err(format!(
            "sizes differ: {}x{} versus {}x{}",
            a.m, a.n, b.m, b.n
        ));
    }
    let mut c = Comparison {
        max_abs: 0.0,
        max_rel: 0.0,
        mismatches: Vec::new(),
    };
    for k in 1..=a.m {
        for i in 1..=a.n {
            let (x, y) = (a.get(k, i), b.get(k, i));
            if x == y || (x.is_nan() && y.is_nan()) {
                continue;
            }
            if !x.is_finite() || !y.is_finite() {
                // An infinity against anything else never agrees.
                c.max_abs = f64::INFINITY;
                c.max_rel = f64::INFINITY;
                c.mismatches.push((k, i, x, y));
                continue;
            }
            let d = (x - y).abs();
            let scale = x.abs().max(y.abs());
            let r = if scale > 0.0 { d / scale } else { 0.0 };
            if d.is_nan() {
                c.max_abs = f64::INFINITY;
                c.max_rel = f64::INFINITY;
                c.mismatches.push((k, i, x, y));
                continue;
            }
            c.max_abs = c.max_abs.max(d);
            c.max_rel = c.max_rel.max(r);
            if d > abs && r > rel {
                c.mismatches.push((k, i, x, y));
            }
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engineering_notation_matches_the_reference_files() {
        assert_eq!(fortran_en(1.5), "   1.5000000000000000E+000");
        assert_eq!(fortran_en(0.375), " 375.0000000000000000E-003");
        assert_eq!(fortran_en(0.0), "   0.0000000000000000E+000");
        assert_eq!(
            fortran_en(-3.1100614242937774),
            "  -3.1100614242937774E+000"
        );
        assert_eq!(fortran_en(1234.5), "   1.2345000000000000E+003");
        // Exact decimal digits of the double, rounded to 19 significant.
        assert_eq!(fortran_en(0.1), " 100.0000000000000056E-003");
        assert_eq!(
            fortran_en(999.99999999999999999),
            "   1.0000000000000000E+003"
        );
        assert_eq!(fortran_en(f64::NAN).trim(), "NaN");
    }

    #[test]
    fn out_files_round_trip() {
        let text = " AD\nF(  1,  1)=   1.5000000000000000E+000\nF(  2,  1)= 375.0000000000000000E-003\nF(  1,  2)=   0.0000000000000000E+000\nF(  2,  2)=  -2.0000000000000000E+000\n";
        let j = Jacobian::parse(text).unwrap();
        assert_eq!((j.m, j.n), (2, 2));
        assert_eq!(j.get(2, 1), 0.375);
        assert_eq!(j.to_out("AD"), text);
    }

    #[test]
    fn comparison_uses_both_tolerances() {
        let a = Jacobian {
            n: 3,
            m: 1,
            entries: vec![1.0, 1e-14, 5.0],
        };
        let b = Jacobian {
            n: 3,
            m: 1,
            entries: vec![1.0 + 1e-11, 0.0, 5.1],
        };
        let c = compare(&a, &b, 1e-10, 1e-13).unwrap();
        assert_eq!(c.mismatches.len(), 1);
        assert_eq!(c.mismatches[0].1, 3);
        assert!(!c.matches());
        assert!(compare(&a, &Jacobian::zeros(2, 3), 1e-10, 1e-13).is_err());
        // An infinity never agrees with a finite number (the relative
        // difference inf/inf is NaN, which must not count as agreement).
        let inf = Jacobian {
            n: 1,
            m: 1,
            entries: vec![f64::INFINITY],
        };
        let one = Jacobian {
            n: 1,
            m: 1,
            entries: vec![1.0],
        };
        assert!(!compare(&inf, &one, 1e-10, 1e-13).unwrap().matches());
        assert!(compare(&inf, &inf, 1e-10, 1e-13).unwrap().matches());
    }

    #[test]
    fn parsing_wants_every_entry_once() {
        let e = |text: &str| Jacobian::parse(text).unwrap_err();
        assert!(e(" AD\n").contains("no Jacobian entries"));
        // F(10^12, 1) names a huge Jacobian but holds one entry: refused
        // without allocating it.
        assert!(e(" AD\nF(1000000000000,1)=1.0\n").starts_with("line 2: "));
        assert!(e("F(1,1)=1.0\nF(2,2)=1.0\n").contains("2 of its 4 entries"));
        assert!(e("F(1,1)=1.0\nF(1,1)=2.0\n").contains("given twice (first at line 1)"));
        assert!(e("F(0,1)=1.0\n").starts_with("line 1: cannot read"));
        let j = Jacobian::parse("F(2,1)=2.0\nF(1,1)=1.0\nF(1,2)=NaN\nF(2,2)=4.0\n").unwrap();
        assert_eq!(j.get(2, 1), 2.0);
        let (k, i, x) = j.first_non_finite().unwrap();
        assert_eq!((k, i), (1, 2));
        assert!(x.is_nan());
    }
}
