//! The marks of loops to reverse otherwise than by taping every
//! iteration: `--checkpoint-loop` ([`crate::checkpoint::LoopMark`]),
//! `--fixed-point-loop` ([`FixedPointMark`]) and `--independent-loop`
//! ([`IndependentMark`]), their parsing (each value refused at the flag,
//! with what it should be), and the one form [`Mark`] the rest of the crate
//! works with.

use crate::checkpoint::LoopMark;

/// The default relative tolerance of a fixed-point loop's adjoint
/// (`xaif_revolve::fixed_point`).
pub const DEFAULT_TOLERANCE: f64 = 1e-12;

/// The default limit of a fixed-point loop's adjoint iterations.
pub const DEFAULT_MAX_ITERATIONS: u64 = 1000;

/// The largest limit of adjoint iterations: the run-time call takes it as
/// a default Fortran integer.
pub const MAX_ITERATIONS_LIMIT: u64 = i32::MAX as u64;

/// One `--fixed-point-loop ROUTINE:LINE[:TOLERANCE[:MAXITER]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct FixedPointMark {
    /// The routine, as for `--checkpoint-loop`.
    pub routine: String,
    /// The `lineNumber` of the loop.
    pub line: i64,
    /// The relative change of the state's adjoint below which its
    /// iteration stops (`0 < TOLERANCE < 1`).
    pub tolerance: f64,
    /// At most this many adjoint iterations (then a warning at run time).
    pub max_iterations: u64,
}

/// One `--independent-loop ROUTINE:LINE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndependentMark {
    /// The routine, as for `--checkpoint-loop`.
    pub routine: String,
    /// The `lineNumber` of the loop.
    pub line: i64,
}

/// `ROUTINE` and `LINE` of a mark's first two fields.
fn routine_line<'t>(text: &str, parts: &[&'t str]) -> Result<(&'t str, i64), String> {
    let (routine, line) = (parts[0], parts[1]);
    if routine.is_empty() {
        return Err(format!("`{text}`: no routine before the first `:`"));
    }
    use crate::runtime::{call_integer, CountError, MAX_CALL_INTEGER};
    let line = match call_integer(line) {
        Ok(l) if l > 0 => l as i64,
        Err(CountError::TooLarge) => {
            return Err(format!(
                "`{text}`: LINE {line} is more than the run-time takes: at most \
                 {MAX_CALL_INTEGER} (it is written into the loop's run-time calls as a \
                 default Fortran integer)"
            ))
        }
        _ => return Err(format!("`{text}`: LINE `{line}` is not a line number")),
    };
    Ok((routine, line))
}

/// The most bytes a loop plan file may have (`docs/limits.md`): a plan
/// names at most [`crate::checkpoint::MAX_MARKED_LOOPS`] loops, a few
/// kilobytes with comments.
pub const MAX_PLAN_BYTES: u64 = 1 << 20;

/// The marks of a loop plan file, by kind, in the order of its lines.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// `checkpoint ROUTINE:LINE[:S]` lines.
    pub checkpoint: Vec<LoopMark>,
    /// `fixed-point ROUTINE:LINE[:TOL[:MAX]]` lines.
    pub fixed_point: Vec<FixedPointMark>,
    /// `independent ROUTINE:LINE` lines.
    pub independent: Vec<IndependentMark>,
}

impl Plan {
    /// The marks as their flags would spell them, one per line of the
    /// plan, for the report of what a plan marked.
    pub fn describe(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .checkpoint
            .iter()
            .map(|m| format!("checkpoint {m}"))
            .collect();
        out.extend(self.fixed_point.iter().map(|m| {
            format!(
                "fixed-point {}:{}:{:e}:{}",
                m.routine, m.line, m.tolerance, m.max_iterations
            )
        }));
        out.extend(
            self.independent
                .iter()
                .map(|m| format!("independent {}:{}", m.routine, m.line)),
        );
        out
    }

    /// Whether the plan marks nothing.
    pub fn is_empty(&self) -> bool {
        self.checkpoint.is_empty() && self.fixed_point.is_empty() && self.independent.is_empty()
    }
}

/// A line of a loop plan that is not a mark: where (1-based line and
/// column) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanError {
    /// The line.
    pub line: usize,
    /// The column of the word at fault.
    pub column: usize,
    /// Why.
    pub message: String,
}

/// Parses a loop plan: one mark per line, `checkpoint ROUTINE:LINE[:S]`,
/// `fixed-point ROUTINE:LINE[:TOL[:MAX]]` or `independent ROUTINE:LINE`,
/// each value as its flag takes it; blank lines and comments (from `#` or
/// `!` to the end of the line) are ignored.
pub fn parse_plan(text: &str) -> Result<Plan, PlanError> {
    let mut plan = Plan::default();
    for (n, raw) in text.lines().enumerate() {
        let line = raw
            .find(['#', '!'])
            .map(|k| &raw[..k])
            .unwrap_or(raw)
            .trim_end();
        let at = |word: &str| -> usize {
            // Columns count characters; `word` is a slice of `raw`.
            let offset = word.as_ptr() as usize - raw.as_ptr() as usize;
            raw[..offset].chars().count() + 1
        };
        let mut words = line.split_whitespace();
        let Some(kind) = words.next() else {
            continue;
        };
        let fail = |word: &str, message: String| PlanError {
            line: n + 1,
            column: at(word),
            message,
        };
        let Some(spec) = words.next() else {
            return Err(fail(
                kind,
                format!("`{kind}` without ROUTINE:LINE after it"),
            ));
        };
        if let Some(extra) = words.next() {
            return Err(fail(
                extra,
                format!("`{extra}` after the mark: one mark per line"),
            ));
        }
        match kind {
            "checkpoint" => plan
                .checkpoint
                .push(LoopMark::parse(spec).map_err(|m| fail(spec, m))?),
            "fixed-point" => plan
                .fixed_point
                .push(FixedPointMark::parse(spec).map_err(|m| fail(spec, m))?),
            "independent" => plan
                .independent
                .push(IndependentMark::parse(spec).map_err(|m| fail(spec, m))?),
            _ => {
                return Err(fail(
                    kind,
                    format!(
                        "`{kind}` is not a kind of mark: `checkpoint`, `fixed-point` or \
                         `independent`"
                    ),
                ))
            }
        }
    }
    Ok(plan)
}

impl FixedPointMark {
    /// Parses `ROUTINE:LINE[:TOLERANCE[:MAXITER]]`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.split(':').collect();
        if !(2..=4).contains(&parts.len()) {
            return Err(format!(
                "`{text}`: expected ROUTINE:LINE[:TOLERANCE[:MAXITER]]"
            ));
        }
        let (routine, line) = routine_line(text, &parts)?;
        let tolerance = match parts.get(2) {
            None => DEFAULT_TOLERANCE,
            Some(t) => match t.parse::<f64>() {
                Ok(x) if x.is_finite() && x > 0.0 && x < 1.0 => x,
                _ => {
                    return Err(format!(
                        "`{text}`: TOLERANCE `{t}` is not a relative tolerance (a number \
                         between 0 and 1, such as 1e-10)"
                    ))
                }
            },
        };
        let max_iterations = match parts.get(3) {
            None => DEFAULT_MAX_ITERATIONS,
            Some(m) => match m.parse::<u64>() {
                Ok(n) if (1..=MAX_ITERATIONS_LIMIT).contains(&n) => n,
                _ => {
                    return Err(format!(
                        "`{text}`: MAXITER `{m}` is not a number of iterations from 1 to \
                         {MAX_ITERATIONS_LIMIT}"
                    ))
                }
            },
        };
        Ok(FixedPointMark {
            routine: routine.to_string(),
            line,
            tolerance,
            max_iterations,
        })
    }
}

impl IndependentMark {
    /// Parses `ROUTINE:LINE`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.split(':').collect();
        if parts.len() != 2 {
            return Err(format!("`{text}`: expected ROUTINE:LINE"));
        }
        let (routine, line) = routine_line(text, &parts)?;
        Ok(IndependentMark {
            routine: routine.to_string(),
            line,
        })
    }
}

/// How a marked loop is to be reversed, as its flag says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MarkKind {
    /// `--checkpoint-loop`: binomial or online checkpointing with at most
    /// this many snapshots.
    Checkpoint {
        /// Snapshots.
        snapshots: u64,
    },
    /// `--fixed-point-loop`.
    FixedPoint {
        /// Relative tolerance.
        tolerance: f64,
        /// Limit of adjoint iterations.
        max_iterations: u64,
    },
    /// `--independent-loop`.
    Independent,
}

/// Any mark: a routine, a line and a kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    /// The routine.
    pub routine: String,
    /// The loop's line.
    pub line: i64,
    /// The kind.
    pub kind: MarkKind,
}

impl Mark {
    /// The flag and its place, for messages: `--checkpoint-loop head:12`.
    pub fn flag_text(&self) -> String {
        let flag = match self.kind {
            MarkKind::Checkpoint { .. } => "--checkpoint-loop",
            MarkKind::FixedPoint { .. } => "--fixed-point-loop",
            MarkKind::Independent => "--independent-loop",
        };
        format!("{flag} {}:{}", self.routine, self.line)
    }

    /// Every mark of the three flags, in flag order.
    pub fn all(
        checkpoint: &[LoopMark],
        fixed_point: &[FixedPointMark],
        independent: &[IndependentMark],
    ) -> Vec<Mark> {
        let mut out: Vec<Mark> = checkpoint
            .iter()
            .map(|m| Mark {
                routine: m.routine.clone(),
                line: m.line,
                kind: MarkKind::Checkpoint {
                    snapshots: m.snapshots,
                },
            })
            .collect();
        out.extend(fixed_point.iter().map(|m| Mark {
            routine: m.routine.clone(),
            line: m.line,
            kind: MarkKind::FixedPoint {
                tolerance: m.tolerance,
                max_iterations: m.max_iterations,
            },
        }));
        out.extend(independent.iter().map(|m| Mark {
            routine: m.routine.clone(),
            line: m.line,
            kind: MarkKind::Independent,
        }));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_parse_and_refuse_what_they_cannot_take() {
        let m = FixedPointMark::parse("solve:12:1e-9:50").unwrap();
        assert_eq!((m.line, m.tolerance, m.max_iterations), (12, 1e-9, 50));
        let d = FixedPointMark::parse("solve:12").unwrap();
        assert_eq!(
            (d.tolerance, d.max_iterations),
            (DEFAULT_TOLERANCE, DEFAULT_MAX_ITERATIONS)
        );
        for bad in [
            "solve",
            ":12",
            "solve:0",
            "solve:12:0",
            "solve:12:1",
            "solve:12:nan",
            "solve:12:1e-9:0",
            "solve:12:1e-9:2147483648",
            "solve:12:1e-9:5:6",
        ] {
            assert!(FixedPointMark::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(IndependentMark::parse("cols:7").unwrap().line, 7);
        assert!(IndependentMark::parse("cols:7:3").is_err());
        assert!(IndependentMark::parse("cols:2147483648")
            .unwrap_err()
            .contains("at most 2147483647"));
    }

    #[test]
    fn plans_parse_and_locate_a_bad_line() {
        let plan = parse_plan(
            "# a plan\n\ncheckpoint head:12:4  ! time loop\n  fixed-point solve:30:1e-10:50\n\
             independent cells:7\ncheckpoint head:40\n",
        )
        .unwrap();
        assert_eq!(plan.checkpoint.len(), 2);
        assert_eq!(plan.checkpoint[0].snapshots, 4);
        assert_eq!(plan.fixed_point[0].max_iterations, 50);
        assert_eq!(plan.independent[0].line, 7);
        assert_eq!(
            plan.describe(),
            vec![
                "checkpoint head:12:4",
                "checkpoint head:40:10",
                "fixed-point solve:30:1e-10:50",
                "independent cells:7"
            ]
        );
        for (text, line, column, needle) in [
            (
                "checkpoint head:12\nfixpoint a:1\n",
                2,
                1,
                "not a kind of mark",
            ),
            ("\n\n   checkpoint head:x\n", 3, 15, "LINE `x`"),
            ("independent a:1 b:2\n", 1, 17, "one mark per line"),
            ("fixed-point\n", 1, 1, "without ROUTINE:LINE"),
            ("fixed-point s:3:2\n", 1, 13, "TOLERANCE `2`"),
            ("checkpoint h:3:2147483648\n", 1, 12, "at most 2147483647"),
        ] {
            let e = parse_plan(text).unwrap_err();
            assert_eq!((e.line, e.column), (line, column), "{text:?}: {e:?}");
            assert!(e.message.contains(needle), "{text:?}: {e:?}");
        }
        assert!(parse_plan("# nothing\n\n").unwrap().is_empty());
    }
}
