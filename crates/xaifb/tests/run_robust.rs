//! `xaifb run` and `xaifb compare` on hostile input: every failure is a
//! located error with a non-zero exit, never a panic, an abort, a stack
//! overflow, a hang or a silently wrong number. Each test builds its
//! program, runs the binary under an address-space limit and a timeout, and
//! checks the message (and, where the program is fine, the number).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

// ------------------------------------------------------------- the binary

fn scratch(name: &str) -> xaif_testkit::Scratch {
    xaif_testkit::Scratch::new("xaifb-run", name)
}

/// What a run of the binary did.
struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Outcome {
    /// Exit code 1 or 2 with a message that is not a panic or an abort.
    fn refused(&self, code: i32) -> &str {
        assert_eq!(
            self.code,
            Some(code),
            "expected exit {code}\nstdout: {}\nstderr: {}",
            self.stdout,
            self.stderr
        );
        assert!(
            !self.stderr.contains("panicked")
                && !self.stderr.contains("memory allocation")
                && !self.stderr.contains("overflowed its stack"),
            "{}",
            self.stderr
        );
        assert!(self.stdout.is_empty(), "output on failure: {}", self.stdout);
        &self.stderr
    }

    fn ok(&self) -> &str {
        assert_eq!(self.code, Some(0), "{}", self.stderr);
        &self.stdout
    }
}

/// Runs `xaifb ARGS` with 2 GiB of address space and a 20 s timeout (a
/// hang or a crash is a failed test, not a stuck suite).
fn xaifb(args: &[&str]) -> Outcome {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -v 2097152 2>/dev/null; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_xaifb"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let ereader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("xaifb {args:?} did not finish within 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Outcome {
        code: status.code(),
        stdout: reader.join().unwrap(),
        stderr: ereader.join().unwrap(),
    }
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

// ----------------------------------------------------------- the programs

static STMT: AtomicUsize = AtomicUsize::new(1);

fn stmt_id() -> usize {
    STMT.fetch_add(1, Ordering::Relaxed)
}

/// An expression graph under construction.
#[derive(Default)]
struct E {
    vertices: Vec<String>,
    edges: Vec<String>,
}

impl E {
    fn push(&mut self, xml: impl FnOnce(usize) -> String) -> usize {
        let id = self.vertices.len() + 1;
        self.vertices.push(xml(id));
        id
    }

    fn int(&mut self, value: &str) -> usize {
        self.push(|id| {
            format!(r#"<xaif:Constant vertex_id="{id}" type="integer" value="{value}"/>"#)
        })
    }

    fn real(&mut self, value: &str) -> usize {
        self.push(|id| format!(r#"<xaif:Constant vertex_id="{id}" type="real" value="{value}"/>"#))
    }

    fn boolean(&mut self, value: bool) -> usize {
        self.push(|id| format!(r#"<xaif:Constant vertex_id="{id}" type="bool" value="{value}"/>"#))
    }

    fn var(&mut self, name: &str) -> usize {
        let r = sym(name);
        self.push(|id| {
            format!(r#"<xaif:VariableReference vertex_id="{id}">{r}</xaif:VariableReference>"#)
        })
    }

    fn elem(&mut self, name: &str, index: i64) -> usize {
        let r = elem(name, index);
        self.push(|id| {
            format!(r#"<xaif:VariableReference vertex_id="{id}">{r}</xaif:VariableReference>"#)
        })
    }

    fn op(&mut self, name: &str, args: &[usize]) -> usize {
        let kind = if matches!(
            name,
            "less_or_equal" | "greater_or_equal" | "not_equal" | "less_than"
        ) {
            "BooleanOperation"
        } else {
            "Intrinsic"
        };
        let id = self.push(|id| format!(r#"<xaif:{kind} vertex_id="{id}" name="{name}"/>"#));
        for (k, a) in args.iter().enumerate() {
            let e = self.edges.len() + 1;
            self.edges.push(format!(
                r#"<xaif:ExpressionEdge edge_id="{e}" source="{a}" target="{id}" position="{}"/>"#,
                k + 1
            ));
        }
        id
    }

    fn xml(&self) -> String {
        format!("{}\n{}", self.vertices.join("\n"), self.edges.join("\n"))
    }
}

/// A reference to a variable of the routine's scope (2).
fn sym(name: &str) -> String {
    format!(r#"<xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="{name}"/>"#)
}

/// A reference to `name(index)`.
fn elem(name: &str, index: i64) -> String {
    format!(
        r#"{}<xaif:ArrayElementReference vertex_id="2"><xaif:IndexTriplet><xaif:Index><xaif:Constant vertex_id="1" type="integer" value="{index}"/></xaif:Index></xaif:IndexTriplet></xaif:ArrayElementReference><xaif:VariableReferenceEdge edge_id="1" source="1" target="2"/>"#,
        sym(name)
    )
}

fn assign_tag(tag: &str, lhs: &str, rhs: &E) -> String {
    format!(
        r#"<xaif:{tag} statement_id="s{}"><xaif:AssignmentLHS>{lhs}</xaif:AssignmentLHS><xaif:AssignmentRHS>{}</xaif:AssignmentRHS></xaif:{tag}>"#,
        stmt_id(),
        rhs.xml()
    )
}

fn assign(lhs: &str, rhs: &E) -> String {
    assign_tag("Assignment", lhs, rhs)
}

/// `y(k) = x(i)`-style one-liners.
fn copy(lhs: &str, build: impl FnOnce(&mut E) -> usize) -> String {
    let mut e = E::default();
    build(&mut e);
    assign(lhs, &e)
}

fn call(callee: &str, args: &[&str]) -> String {
    let args: String = args
        .iter()
        .enumerate()
        .map(|(k, a)| {
            format!(
                r#"<xaif:Argument position="{}"><xaif:VariableReference vertex_id="1">{}</xaif:VariableReference></xaif:Argument>"#,
                k + 1,
                sym(a)
            )
        })
        .collect();
    format!(
        r#"<xaif:SubroutineCall statement_id="s{}" scope_id="1" symbol_id="{callee}" formalArgCount="{}">{args}</xaif:SubroutineCall>"#,
        stmt_id(),
        args.len()
    )
}

/// Entry, one basic block, Exit.
fn straight(stmts: &[String]) -> String {
    format!(
        r#"<xaif:Entry vertex_id="1"/>
<xaif:BasicBlock vertex_id="2" scope_id="2">{}</xaif:BasicBlock>
<xaif:Exit vertex_id="3"/>
<xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>
<xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>"#,
        stmts.join("\n")
    )
}

/// `do I = lo, hi, step; body; end do; after`.
fn do_loop(lo: &str, hi: &str, step: &str, body: &[String], after: &[String]) -> String {
    let mut cond = E::default();
    let i = cond.var("I");
    let h = cond.int(hi);
    let negative = step.starts_with('-');
    cond.op(
        if negative {
            "greater_or_equal"
        } else {
            "less_or_equal"
        },
        &[i, h],
    );
    let mut upd = E::default();
    let i = upd.var("I");
    let s = upd.int(step);
    upd.op("add_scal_scal", &[i, s]);
    format!(
        r#"<xaif:Entry vertex_id="1"/>
<xaif:ForLoop vertex_id="3" reversal="anonymous">
<xaif:Initialization statement_id="s{}"><xaif:AssignmentLHS>{}</xaif:AssignmentLHS><xaif:AssignmentRHS><xaif:Constant vertex_id="1" type="integer" value="{lo}"/></xaif:AssignmentRHS></xaif:Initialization>
<xaif:Condition>{}</xaif:Condition>
{}
</xaif:ForLoop>
<xaif:BasicBlock vertex_id="4" scope_id="2">{}</xaif:BasicBlock>
<xaif:EndLoop vertex_id="5"/>
<xaif:BasicBlock vertex_id="6" scope_id="2">{}</xaif:BasicBlock>
<xaif:Exit vertex_id="7"/>
<xaif:ControlFlowEdge edge_id="1" source="1" target="3"/>
<xaif:ControlFlowEdge edge_id="3" source="3" target="4" has_condition_value="true" condition_value="1"/>
<xaif:ControlFlowEdge edge_id="4" source="4" target="5"/>
<xaif:ControlFlowEdge edge_id="5" source="5" target="3"/>
<xaif:ControlFlowEdge edge_id="6" source="3" target="6"/>
<xaif:ControlFlowEdge edge_id="7" source="6" target="7"/>"#,
        stmt_id(),
        sym("I"),
        cond.xml(),
        assign_tag("Update", &sym("I"), &upd),
        body.join("\n"),
        after.join("\n"),
    )
}

/// A routine: its Fortran name, scope id, symbols (XML), formals by
/// position and control flow graph.
#[derive(Clone)]
struct Routine {
    name: &'static str,
    scope: u32,
    symbols: String,
    formals: Vec<&'static str>,
    cfg: String,
}

/// The usual locals: integers I, J, K, N; X and Y are the formals of
/// `head`.
fn head_symbols(n: usize, m: usize, extra: &str) -> String {
    format!(
        r#"<xaif:Symbol symbol_id="X" kind="variable" type="real" shape="vector" active="1"><xaif:DimensionBounds lower="1" upper="{n}"/></xaif:Symbol>
<xaif:Symbol symbol_id="Y" kind="variable" type="real" shape="vector" active="1"><xaif:DimensionBounds lower="1" upper="{m}"/></xaif:Symbol>
<xaif:Symbol symbol_id="I" kind="variable" type="integer" shape="scalar" active="0"/>
<xaif:Symbol symbol_id="J" kind="variable" type="integer" shape="scalar" active="0"/>
<xaif:Symbol symbol_id="K" kind="variable" type="integer" shape="scalar" active="0"/>
<xaif:Symbol symbol_id="B" kind="variable" type="bool" shape="scalar" active="0"/>
{extra}"#
    )
}

fn head(n: usize, m: usize, extra_symbols: &str, cfg: String) -> Routine {
    Routine {
        name: "head",
        scope: 2,
        symbols: head_symbols(n, m, extra_symbols),
        formals: vec!["X", "Y"],
        cfg,
    }
}

/// The whole document. Every routine's scope is its own and a child of
/// the global scope 1; references use `scope_id="2"`, so routines other
/// than `head` get their scope ids rewritten.
fn program(routines: &[Routine]) -> String {
    let mut scopes = String::new();
    let mut globals = String::new();
    let mut graphs = String::new();
    for (k, r) in routines.iter().enumerate() {
        let s = r.scope;
        scopes.push_str(&format!(
            r#"<xaif:Scope vertex_id="{s}"><xaif:SymbolTable>{}</xaif:SymbolTable></xaif:Scope><xaif:ScopeEdge edge_id="{s}" source="{s}" target="1"/>"#,
            r.symbols
        ));
        globals.push_str(&format!(
            r#"<xaif:Symbol symbol_id="{}" kind="subroutine" type="void" active="0"/>"#,
            r.name
        ));
        let formals: String = r
            .formals
            .iter()
            .enumerate()
            .map(|(p, f)| {
                format!(
                    r#"<xaif:ArgumentSymbolReference position="{}" scope_id="{s}" symbol_id="{f}" intent="inout"/>"#,
                    p + 1
                )
            })
            .collect();
        let cfg = r
            .cfg
            .replace(r#"scope_id="2""#, &format!(r#"scope_id="{s}""#));
        graphs.push_str(&format!(
            r#"<xaif:ControlFlowGraph vertex_id="{}" scope_id="1" symbol_id="{}" controlflowgraph_scope_id="{s}"><xaif:ArgumentList>{formals}</xaif:ArgumentList>
{cfg}
</xaif:ControlFlowGraph>
"#,
            k + 1,
            r.name
        ));
    }
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<xaif:CallGraph xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xaif="http://www.mcs.anl.gov/XAIF" xsi:schemaLocation="http://www.mcs.anl.gov/XAIF xaif.xsd" program_name="robust" prefix="OpenAD_">
<xaif:ScopeHierarchy>
<xaif:Scope vertex_id="1"><xaif:SymbolTable>{globals}</xaif:SymbolTable></xaif:Scope>
{scopes}
</xaif:ScopeHierarchy>
<xaif:AliasSetMap><xaif:AliasSet key="0"/></xaif:AliasSetMap>
<xaif:DUUDSetMap><xaif:StmtIdSet key="0"/></xaif:DUUDSetMap>
<xaif:DOSetMap><xaif:StmtIdSet key="0"/></xaif:DOSetMap>
{graphs}</xaif:CallGraph>
"#
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// `y(1) = <value>` for an integer-valued expression built by `build`.
fn head_with(stmts: Vec<String>) -> String {
    program(&[head(1, 1, "", straight(&stmts))])
}

/// The value printed for y(1) by `run --mode plain`.
fn y1(stdout: &str) -> f64 {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("y(  1)="))
        .unwrap_or_else(|| panic!("no y(1) in {stdout}"));
    line["y(  1)=".len()..]
        .trim()
        .replace("E", "e")
        .parse()
        .unwrap()
}

fn run_plain(file: &Path, extra: &[&str]) -> Outcome {
    let mut args = vec!["run", path(file), "--n", "1", "--m", "1"];
    args.extend_from_slice(extra);
    xaifb(&args)
}

/// The message names the file, a line and the routine.
fn located(stderr: &str, file: &Path, routine: &str) {
    assert!(
        stderr.contains(path(file)) && stderr.contains("line ") && stderr.contains(routine),
        "not located (file, line, `{routine}`): {stderr}"
    );
}

// --------------------------------------------------- integer arithmetic

#[test]
fn do_loop_trip_count_near_the_integer_limits() {
    let dir = scratch("trip");
    let body = vec![copy(&elem("Y", 1), |e| {
        let y = e.elem("Y", 1);
        let one = e.real("1.0");
        e.op("add_scal_scal", &[y, one])
    })];
    // Counting down to -2^63+1: the trip count 2^63 does not fit an i64
    // (it used to divide with overflow and panic). The loop runs until the
    // step budget stops it.
    let down = write(
        &dir,
        "down.xaif",
        &program(&[head(
            1,
            1,
            "",
            do_loop("0", "-9223372036854775807", "-1", &body, &[]),
        )]),
    );
    let o = run_plain(&down, &["--step-budget", "100000"]);
    let err = o.refused(1);
    assert!(err.contains("step budget of 100000"), "{err}");
    located(err, &down, "head");
    // From -2^63 to 2^63-1: 2^64 trips, not zero.
    let all = write(
        &dir,
        "all.xaif",
        &program(&[head(
            1,
            1,
            "",
            do_loop(
                "-9223372036854775808",
                "9223372036854775807",
                "1",
                &body,
                &[],
            ),
        )]),
    );
    let err = run_plain(&all, &["--step-budget", "100000"])
        .refused(1)
        .to_string();
    assert!(err.contains("step budget of 100000"), "{err}");
    // Two trips ending at 2^63-1: the DO variable's last increment
    // overflows; that is an error at the loop, not a wrapped value.
    let top = write(
        &dir,
        "top.xaif",
        &program(&[head(
            1,
            1,
            "",
            do_loop(
                "9223372036854775806",
                "9223372036854775807",
                "1",
                &body,
                &[],
            ),
        )]),
    );
    let o = run_plain(&top, &[]);
    let err = o.refused(1);
    assert!(err.contains("integer overflow"), "{err}");
    located(err, &top, "head");
    // An ordinary loop still runs its trips.
    let ok = write(
        &dir,
        "ok.xaif",
        &program(&[head(1, 1, "", do_loop("10", "1", "-3", &body, &[]))]),
    );
    assert_eq!(y1(run_plain(&ok, &[]).ok()), 4.0);
}

#[test]
fn integer_overflow_is_a_located_error() {
    let dir = scratch("intover");
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "mul",
            vec![copy(&sym("K"), |e| {
                let a = e.int("4611686018427387904");
                let b = e.int("2");
                e.op("mul_scal_scal", &[a, b])
            })],
        ),
        (
            "add",
            vec![copy(&sym("K"), |e| {
                let a = e.int("9223372036854775807");
                let b = e.int("1");
                e.op("add_scal_scal", &[a, b])
            })],
        ),
        (
            "neg",
            vec![copy(&sym("K"), |e| {
                let a = e.int("-9223372036854775808");
                e.op("minus_scal", &[a])
            })],
        ),
        (
            "pow",
            vec![copy(&sym("K"), |e| {
                let a = e.int("3");
                let b = e.int("40");
                e.op("pow_scal_scal", &[a, b])
            })],
        ),
        // A constant beyond the integer range is not saturated.
        (
            "constant",
            vec![copy(&sym("K"), |e| e.int("9223372036854775808"))],
        ),
        // Nor is a real converted to an integer.
        ("convert", vec![copy(&sym("K"), |e| e.real("1.0e30"))]),
    ];
    for (name, mut stmts) in cases {
        stmts.push(copy(&elem("Y", 1), |e| e.var("K")));
        let file = write(&dir, &format!("{name}.xaif"), &head_with(stmts));
        let o = run_plain(&file, &[]);
        let err = o.refused(1);
        assert!(
            err.contains("integer overflow") || err.contains("out of the integer range"),
            "{name}: {err}"
        );
        located(err, &file, "head");
    }
}

// ------------------------------------------------------------------ sizes

#[test]
fn huge_array_bounds_are_refused_before_allocating() {
    let dir = scratch("bounds");
    for (name, lo, hi) in [
        ("max", "1", "9223372036854775807"),
        ("span", "-9223372036854775808", "9223372036854775807"),
        ("big", "1", "100000000000"),
    ] {
        let extra = format!(
            r#"<xaif:Symbol symbol_id="A" kind="variable" type="real" shape="vector" active="0"><xaif:DimensionBounds lower="{lo}" upper="{hi}"/></xaif:Symbol>"#
        );
        let stmts = vec![
            copy(&elem("A", 1), |e| e.real("2.0")),
            copy(&elem("Y", 1), |e| e.elem("A", 1)),
        ];
        let file = write(
            &dir,
            &format!("{name}.xaif"),
            &program(&[head(1, 1, &extra, straight(&stmts))]),
        );
        let o = run_plain(&file, &[]);
        let err = o.refused(1);
        assert!(
            err.contains("`A`") && err.contains("--max-elements"),
            "{name}: {err}"
        );
        located(err, &file, "head");
    }
    // Two-dimensional bounds whose product overflows.
    let extra = r#"<xaif:Symbol symbol_id="A" kind="variable" type="real" shape="matrix" active="0"><xaif:DimensionBounds lower="1" upper="4294967296"/><xaif:DimensionBounds lower="1" upper="4294967296"/></xaif:Symbol>"#;
    let stmts = vec![copy(&sym("A"), |e| e.real("2.0"))];
    let file = write(
        &dir,
        "product.xaif",
        &program(&[head(1, 1, extra, straight(&stmts))]),
    );
    let err = run_plain(&file, &[]).refused(1).to_string();
    assert!(err.contains("--max-elements"), "{err}");
    // Under the limit the same program runs; above a lowered limit it
    // does not.
    let extra = r#"<xaif:Symbol symbol_id="A" kind="variable" type="real" shape="vector" active="0"><xaif:DimensionBounds lower="1" upper="1000"/></xaif:Symbol>"#;
    let stmts = vec![
        copy(&elem("A", 1000), |e| e.real("2.0")),
        copy(&elem("Y", 1), |e| e.elem("A", 1000)),
    ];
    let file = write(
        &dir,
        "small.xaif",
        &program(&[head(1, 1, extra, straight(&stmts))]),
    );
    assert_eq!(y1(run_plain(&file, &[]).ok()), 2.0);
    let err = run_plain(&file, &["--max-elements", "500"])
        .refused(1)
        .to_string();
    assert!(
        err.contains("`A`") && err.contains("1000 elements") && err.contains("500"),
        "{err}"
    );
}

#[test]
fn an_array_grown_by_a_write_is_checked_before_growing() {
    let dir = scratch("grow");
    // A deferred-shape array (no bounds) is given its shape by the first
    // write; an element 10^15 would need 10^15 elements.
    let extra =
        r#"<xaif:Symbol symbol_id="A" kind="variable" type="real" shape="vector" active="0"/>"#;
    let stmts = vec![
        copy(&elem("A", 1_000_000_000_000_000), |e| e.real("2.0")),
        copy(&elem("Y", 1), |e| e.real("1.0")),
    ];
    let file = write(
        &dir,
        "grow.xaif",
        &program(&[head(1, 1, extra, straight(&stmts))]),
    );
    let err = run_plain(&file, &[]).refused(1).to_string();
    assert!(
        err.contains("`A`") && err.contains("--max-elements"),
        "{err}"
    );
    located(&err, &file, "head");
}

#[test]
fn harness_sizes_are_checked_before_allocating() {
    let dir = scratch("harness");
    let file = write(
        &dir,
        "h.xaif",
        &head_with(vec![copy(&elem("Y", 1), |e| e.elem("X", 1))]),
    );
    // Divided differences need the m x n Jacobian too.
    for (n, m) in [
        ("100000000", "1"),
        ("1", "100000000"),
        ("1000000", "1000000"),
    ] {
        let o = xaifb(&["run", path(&file), "--fd", "--n", n, "--m", m]);
        let err = o.refused(1);
        assert!(err.contains("--max-elements"), "--n {n} --m {m}: {err}");
        assert!(err.contains(path(&file)), "{err}");
    }
    // A harness.json slot of 10^12 elements.
    let json = write(
        &dir,
        "harness.json",
        r#"{"n": 1, "m": 1, "top": "head", "args": [{"kind": "x", "first": 1, "size": 1000000000000}, {"kind": "y", "first": 1, "size": 1}], "x0": [1.0]}"#,
    );
    let o = xaifb(&["run", path(&file), "--harness", path(&json)]);
    let err = o.refused(1);
    assert!(err.contains("--max-elements"), "{err}");
}

#[test]
fn compare_refuses_huge_indices_without_allocating() {
    let dir = scratch("cmphuge");
    let a = write(&dir, "a.out", " AD\nF(1000000000000,  1)=   1.0E+000\n");
    let b = write(&dir, "b.out", " AD\nF(  1,  1)=   1.0E+000\n");
    let o = xaifb(&["compare", path(&a), path(&b)]);
    let err = o.refused(1);
    assert!(err.contains(path(&a)) && err.contains("line 2"), "{err}");
}

// -------------------------------------------------------------- recursion

#[test]
fn unbounded_recursion_stops_at_the_call_depth_limit() {
    let dir = scratch("recursion");
    let rec = Routine {
        name: "rec",
        scope: 3,
        symbols: r#"<xaif:Symbol symbol_id="Z" kind="variable" type="real" shape="vector" active="1"><xaif:DimensionBounds lower="1" upper="1"/></xaif:Symbol>"#.into(),
        formals: vec!["Z"],
        cfg: straight(&[call("rec", &["Z"])]),
    };
    let file = write(
        &dir,
        "rec.xaif",
        &program(&[head(1, 1, "", straight(&[call("rec", &["Y"])])), rec]),
    );
    let o = run_plain(&file, &[]);
    let err = o.refused(1);
    assert!(
        err.contains("call depth") && err.contains("--max-call-depth"),
        "{err}"
    );
    located(err, &file, "rec");
    // A lower limit is honoured too.
    let err = run_plain(&file, &["--max-call-depth", "10"])
        .refused(1)
        .to_string();
    assert!(err.contains("call depth limit of 10 "), "{err}");
}

#[test]
fn deep_and_shared_expressions_run_without_recursion() {
    let dir = scratch("deep");
    // y(1) = sin(sin(...sin(x(1))...)), 10^5 deep, written flat.
    let mut e = E::default();
    let mut v = e.elem("X", 1);
    let depth = 100_000;
    for _ in 0..depth {
        v = e.op("sin_scal", &[v]);
    }
    let file = write(
        &dir,
        "deep.xaif",
        &head_with(vec![assign(&elem("Y", 1), &e)]),
    );
    let mut want = 0.5f64;
    for _ in 0..depth {
        want = want.sin();
    }
    let got = y1(run_plain(&file, &[]).ok());
    assert!((got - want).abs() <= 1e-15 * want.abs(), "{got} vs {want}");
    // A DAG that doubles 200 times: every vertex used twice. As a tree it
    // has 2^200 leaves; evaluated as the graph it is, it is 200 additions.
    let mut e = E::default();
    let mut v = e.elem("X", 1);
    for _ in 0..200 {
        v = e.op("add_scal_scal", &[v, v]);
    }
    let file = write(
        &dir,
        "dag.xaif",
        &head_with(vec![assign(&elem("Y", 1), &e)]),
    );
    let got = y1(run_plain(&file, &[]).ok());
    assert_eq!(got, 0.5 * 2f64.powi(200));
}

// ---------------------------------------------------------------- runaway

#[test]
fn a_runaway_program_stops_by_default() {
    // do while (.true.): y(1) = y(1) + x(1)
    let file = xaif_testkit::repo_root().join("fixtures/interp/runaway.xaif");
    // The harness times out after 20 s; the default limits stop the run
    // well before (docs/limits.md; measured by `cargo xtask speed`).
    let o = run_plain(&file, &[]);
    let err = o.refused(1);
    assert!(
        err.contains("step budget of 20000000 exhausted in one run (runaway program?); raise it with --step-budget")
            || err.contains("time limit of 4 s exceeded in one run (runaway program?); raise it with --time-limit"),
        "{err}"
    );
    located(err, &file, "head");
    // The time limit alone stops it too.
    let o = run_plain(
        &file,
        &["--step-budget", "100000000000", "--time-limit", "0.2"],
    );
    let err = o.refused(1);
    assert!(err.contains("time limit of 0.2 s"), "{err}");
    located(err, &file, "head");
}

/// A loop of Goto, Label and Branch vertices (unstructured), whose only
/// statement is in a basic block: the budget runs out in a statement.
#[test]
fn step_budget_in_unstructured_code_is_located() {
    let dir = scratch("unstructured");
    let body: String = (0..3)
        .map(|_| {
            copy(&elem("Y", 1), |e| {
                let y = e.elem("Y", 1);
                let one = e.real("1.0");
                e.op("add_scal_scal", &[y, one])
            })
        })
        .collect();
    let mut cond = E::default();
    cond.boolean(true);
    let cfg = format!(
        r#"<xaif:Entry vertex_id="1"/>
<xaif:Label vertex_id="2"/>
<xaif:BasicBlock vertex_id="3" scope_id="2">{body}</xaif:BasicBlock>
<xaif:Branch vertex_id="4"><xaif:Condition>{}</xaif:Condition></xaif:Branch>
<xaif:Goto vertex_id="5"/>
<xaif:Exit vertex_id="6"/>
<xaif:ControlFlowEdge edge_id="1" source="1" target="2"/>
<xaif:ControlFlowEdge edge_id="2" source="2" target="3"/>
<xaif:ControlFlowEdge edge_id="3" source="3" target="4"/>
<xaif:ControlFlowEdge edge_id="4" source="4" target="5" has_condition_value="true" condition_value="1"/>
<xaif:ControlFlowEdge edge_id="5" source="4" target="6" has_condition_value="true" condition_value="0"/>
<xaif:ControlFlowEdge edge_id="6" source="5" target="2"/>"#,
        cond.xml()
    );
    let file = write(&dir, "goto.xaif", &program(&[head(1, 1, "", cfg)]));
    for budget in ["1000", "1001", "1002", "1003", "1004", "1005"] {
        let o = run_plain(&file, &["--step-budget", budget]);
        let err = o.refused(1);
        assert!(err.contains(&format!("step budget of {budget}")), "{err}");
        located(err, &file, "head");
    }
}

// ------------------------------------------------------------------ modes

#[test]
fn a_mode_whose_code_the_file_does_not_hold_is_refused() {
    let dir = scratch("modes");
    let file = write(
        &dir,
        "plain.xaif",
        &head_with(vec![copy(&elem("Y", 1), |e| {
            let x = e.elem("X", 1);
            e.op("sin_scal", &[x])
        })]),
    );
    for mode in ["tangent", "split", "joint"] {
        let o = xaifb(&["run", path(&file), "--mode", mode, "--n", "1", "--m", "1"]);
        let err = o.refused(1);
        assert!(
            err.contains(path(&file)) && err.contains(mode),
            "{mode}: {err}"
        );
    }
    // The same program as it is runs in plain mode and by divided
    // differences.
    assert!(run_plain(&file, &[]).ok().starts_with("y(  1)="));
    let fd = xaifb(&["run", path(&file), "--fd", "--n", "1", "--m", "1"]);
    assert!(fd.ok().starts_with(" DD\n"));
}

#[test]
fn a_mode_of_the_other_kind_is_refused_on_transformation_results() {
    let Some(shared) = xaif_testkit::shared_dir() else {
        return;
    };
    let ex = shared.join("corpus/examples/Loop_simple_16");
    let tangent = ex.join("tlmnonehead_sf.pre.xb.xaif");
    let adjoint = ex.join("admjointhead_sf.pre.xb.xaif");
    for mode in ["split", "joint"] {
        let err = xaifb(&["run", path(&tangent), "--mode", mode])
            .refused(1)
            .to_string();
        assert!(err.contains(mode), "{err}");
    }
    let err = xaifb(&["run", path(&adjoint), "--mode", "tangent"])
        .refused(1)
        .to_string();
    assert!(err.contains("tangent"), "{err}");
    // The right modes still run.
    xaifb(&["run", path(&tangent), "--mode", "tangent"]).ok();
    xaifb(&["run", path(&adjoint), "--mode", "joint"]).ok();
    xaifb(&["run", path(&adjoint), "--mode", "plain"]).ok();
}

// ------------------------------------------------------- run's arguments

#[test]
fn run_rejects_steps_and_start_values_that_give_no_number() {
    let dir = scratch("runargs");
    let file = write(
        &dir,
        "f.xaif",
        &head_with(vec![copy(&elem("Y", 1), |e| e.elem("X", 1))]),
    );
    let f = path(&file);
    for args in [
        vec!["run", f, "--fd", "--n", "1", "--m", "1", "--h", "0"],
        vec!["run", f, "--fd", "--n", "1", "--m", "1", "--h", "nan"],
        vec!["run", f, "--fd", "--n", "1", "--m", "1", "--h", "inf"],
        vec!["run", f, "--n", "1", "--m", "1", "--x0", "nan"],
        vec!["run", f, "--n", "1", "--m", "1", "--x0", "inf"],
        vec!["run", f, "--n", "1", "--m", "1", "--x0", "-inf"],
        vec!["run", f, "--n", "1", "--m", "1", "--time-limit", "nan"],
        vec!["run", f, "--n", "1", "--m", "1", "--time-limit", "-1"],
    ] {
        let o = xaifb(&args);
        let err = o.refused(2);
        assert!(err.contains("--"), "{args:?}: {err}");
    }
    // A step of 0 from params.conf is refused too, naming the file.
    let params = write(&dir, "params.conf", "1\n1\n0.0\n1e-5\n");
    let o = xaifb(&["run", f, "--fd", "--params", path(&params)]);
    let err = o.refused(1);
    assert!(err.contains(path(&params)), "{err}");
    // Good values still run.
    let o = xaifb(&["run", f, "--fd", "--n", "1", "--m", "1", "--h", "1e-3"]);
    assert!(o.ok().starts_with(" DD\n"));
}

// ----------------------------------------------------------------- compare

#[test]
fn compare_rejects_what_is_not_a_comparable_jacobian() {
    let dir = scratch("compare");
    let good = write(
        &dir,
        "good.out",
        " AD\nF(  1,  1)=   1.0000000000000000E+000\nF(  2,  1)=   2.0000000000000000E+000\n",
    );
    let inf = write(
        &dir,
        "inf.out",
        " AD\nF(  1,  1)=   1.0000000000000000E+000\nF(  2,  1)=                  Infinity\n",
    );
    let nan = write(
        &dir,
        "nan.out",
        " AD\nF(  1,  1)=                       NaN\nF(  2,  1)=   2.0000000000000000E+000\n",
    );
    let empty = write(&dir, "empty.out", " AD\n");
    let empty2 = write(&dir, "empty2.out", "");
    let wide = write(
        &dir,
        "wide.out",
        " AD\nF(  1,  1)=   1.0000000000000000E+000\nF(  1,  2)=   2.0000000000000000E+000\n",
    );
    // 2x2 with two entries missing.
    let holes = write(
        &dir,
        "holes.out",
        " AD\nF(  1,  1)=   1.0000000000000000E+000\nF(  2,  2)=   0.0000000000000000E+000\n",
    );
    let full = write(
        &dir,
        "full.out",
        " AD\nF(  1,  1)=   1.0000000000000000E+000\nF(  2,  1)=   0.0000000000000000E+000\nF(  1,  2)=   0.0000000000000000E+000\nF(  2,  2)=   0.0000000000000000E+000\n",
    );
    let twice = write(
        &dir,
        "twice.out",
        " AD\nF(  1,  1)=   1.0000000000000000E+000\nF(  1,  1)=   1.0000000000000000E+000\nF(  2,  1)=   2.0000000000000000E+000\n",
    );
    for (a, b, bad) in [
        (&good, &inf, &inf),
        (&inf, &good, &inf),
        (&nan, &good, &nan),
        (&empty, &empty, &empty),
        (&empty2, &good, &empty2),
        (&good, &wide, &wide),
        (&holes, &full, &holes),
        (&twice, &good, &twice),
    ] {
        let o = xaifb(&["compare", path(a), path(b)]);
        let err = o.refused(1);
        assert!(
            err.contains(path(bad)),
            "{} {}: {err}",
            a.display(),
            b.display()
        );
    }
    // Tolerances that accept everything or nothing.
    for tol in [
        ["--rel", "nan"],
        ["--abs", "nan"],
        ["--rel", "-1"],
        ["--abs", "-1e-3"],
        ["--rel", "inf"],
    ] {
        let o = xaifb(&["compare", path(&good), path(&good), tol[0], tol[1]]);
        let err = o.refused(2);
        assert!(err.contains(tol[0]), "{tol:?}: {err}");
    }
    // Agreement and disagreement still work.
    assert!(xaifb(&["compare", path(&good), path(&good)])
        .ok()
        .contains("worst absolute difference 0.000e0"));
    let other = write(
        &dir,
        "other.out",
        " AD\nF(  1,  1)=   1.5000000000000000E+000\nF(  2,  1)=   2.0000000000000000E+000\n",
    );
    assert_eq!(xaifb(&["compare", path(&good), path(&other)]).code, Some(1));
}

// -------------------------------------------------------------- locations

#[test]
fn call_errors_name_file_line_and_routine() {
    let dir = scratch("callerr");
    // f(A) with A of 3 elements for a dummy of 5.
    let f = Routine {
        name: "f",
        scope: 3,
        symbols: r#"<xaif:Symbol symbol_id="Z" kind="variable" type="real" shape="vector" active="1"><xaif:DimensionBounds lower="1" upper="5"/></xaif:Symbol>"#.into(),
        formals: vec!["Z"],
        cfg: straight(&[copy(&elem("Z", 1), |e| e.real("1.0"))]),
    };
    let extra = r#"<xaif:Symbol symbol_id="A" kind="variable" type="real" shape="vector" active="0"><xaif:DimensionBounds lower="1" upper="3"/></xaif:Symbol>"#;
    let file = write(
        &dir,
        "shape.xaif",
        &program(&[head(1, 1, extra, straight(&[call("f", &["A"])])), f]),
    );
    let o = run_plain(&file, &[]);
    let err = o.refused(1);
    assert!(err.contains("needs 5 elements"), "{err}");
    located(err, &file, "head");
    // The harness passes x(1:1) to head's X(1:4).
    let file = write(
        &dir,
        "top.xaif",
        &program(&[head(
            4,
            1,
            "",
            straight(&[copy(&elem("Y", 1), |e| e.elem("X", 1))]),
        )]),
    );
    let o = run_plain(&file, &[]);
    let err = o.refused(1);
    assert!(err.contains("needs 4 elements"), "{err}");
    located(err, &file, "head");
    // An argument at a position without a formal, from a call statement
    // and from the harness.
    let g = Routine {
        name: "g",
        scope: 3,
        symbols: r#"<xaif:Symbol symbol_id="Z" kind="variable" type="real" shape="vector" active="1"><xaif:DimensionBounds lower="1" upper="1"/></xaif:Symbol>"#.into(),
        formals: vec!["Z"],
        cfg: straight(&[copy(&elem("Z", 1), |e| e.real("1.0"))]),
    };
    let file = write(
        &dir,
        "position.xaif",
        &program(&[
            head(1, 1, "", straight(&[call("g", &["Y", "X"])])),
            g.clone(),
        ]),
    );
    // The gate refuses the call statement, at its argument's element,
    // before anything runs, in every subcommand.
    let err = run_plain(&file, &[]).refused(1).to_string();
    assert!(
        err.contains("passes an argument at position 2, but `g` has 1 formal argument(s)"),
        "{err}"
    );
    assert!(err.contains(&format!("{}:", path(&file))), "{err}");
    assert!(err.contains("element `Argument`"), "{err}");
    for sub in ["tangent", "adjoint", "analyze", "validate"] {
        let o = Command::new(env!("CARGO_BIN_EXE_xaifb"))
            .arg(sub)
            .arg(&file)
            .args(if matches!(sub, "tangent" | "adjoint") {
                vec![
                    "-o".to_string(),
                    path(&dir.join(format!("{sub}.out"))).to_string(),
                ]
            } else {
                vec![]
            })
            .output()
            .unwrap();
        assert_ne!(o.status.code(), Some(0), "{sub}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains("at position 2, but `g` has 1"), "{sub}: {e}");
        assert!(!dir.join(format!("{sub}.out")).exists(), "{sub}");
    }
    // The same position twice.
    let twice = write(
        &dir,
        "twice.xaif",
        &program(&[
            head(1, 1, "", straight(&[call("g", &["Y", "X"])])),
            g.clone(),
        ])
        .replace(
            r#"<xaif:Argument position="2""#,
            r#"<xaif:Argument position="1""#,
        ),
    );
    let err = run_plain(&twice, &[]).refused(1).to_string();
    assert!(
        err.contains("the call of `g` has two arguments at position 1"),
        "{err}"
    );
    assert!(err.contains(&format!("{}:", path(&twice))), "{err}");
    let one = write(
        &dir,
        "one.xaif",
        &program(&[Routine {
            name: "head",
            scope: 2,
            symbols: head_symbols(1, 1, ""),
            formals: vec!["Y"],
            cfg: straight(&[copy(&elem("Y", 1), |e| e.real("1.0"))]),
        }]),
    );
    let err = run_plain(&one, &[]).refused(1).to_string();
    assert!(err.contains("position 2"), "{err}");
    located(&err, &one, "head");
    // A formal at a position no routine has does not size a table.
    let far = write(
        &dir,
        "far.xaif",
        &program(&[head(
            1,
            1,
            "",
            straight(&[copy(&elem("Y", 1), |e| e.real("1.0"))]),
        )])
        .replace(r#"position="2""#, r#"position="99999999999""#),
    );
    // The gate refuses it, at the formal's element, before anything runs.
    let err = run_plain(&far, &[]).refused(1).to_string();
    assert!(
        err.contains("`position` is 99999999999, outside 1..=2"),
        "{err}"
    );
    assert!(err.contains(&format!("{}:", path(&far))), "{err}");
}

#[test]
fn step_budget_in_derivative_outputs_is_located() {
    let Some(shared) = xaif_testkit::shared_dir() else {
        return;
    };
    let ex = shared.join("corpus/examples/Loop_simple_16");
    for (file, mode) in [
        ("tlmnonehead_sf.pre.xb.xaif", "tangent"),
        ("admsplithead_sf.pre.xb.xaif", "split"),
        ("admjointhead_sf.pre.xb.xaif", "joint"),
    ] {
        let file = ex.join(file);
        for budget in ["5", "20", "50", "80", "120"] {
            let o = xaifb(&["run", path(&file), "--mode", mode, "--step-budget", budget]);
            let err = o.refused(1);
            assert!(err.contains("step budget"), "{err}");
            assert!(
                err.contains(path(&file)) && err.contains("line ") && err.contains("in `"),
                "{mode} budget {budget}: {err}"
            );
        }
    }
}

/// A transformation that fails on one statement (an intrinsic applied to
/// active values that no catalogue knows) names the file, the statement's
/// line and column, its element and routine, in tangent and adjoint mode,
/// for one file and in a batch, and leaves no output.
#[test]
fn transformation_errors_name_the_statements_line() {
    let dir = scratch("located");
    let text = program(&[head(
        1,
        1,
        "",
        straight(&[copy(&elem("Y", 1), |e| {
            let x = e.elem("X", 1);
            e.op("frobnicate_scal", &[x])
        })]),
    )]);
    let file = write(&dir, "unknown.xaif", &text);
    let at = text.find("frobnicate_scal").unwrap();
    let start = text[..at].rfind("<xaif:Assignment ").unwrap();
    let line = text[..start].matches('\n').count() + 1;
    let column = start - text[..start].rfind('\n').map_or(0, |i| i + 1) + 1;
    let expected = format!(
        "{}:{line}:{column}: element Assignment: routine `head`",
        path(&file)
    );
    for mode in ["tangent", "adjoint"] {
        let out = dir.join(format!("{mode}.xaif"));
        let o = xaifb(&[mode, path(&file), "-o", path(&out)]);
        let err = o.refused(1);
        assert!(
            err.contains(&expected),
            "{mode}: {err}\nexpected {expected}"
        );
        assert!(err.contains("frobnicate_scal"), "{mode}: {err}");
        assert!(!out.exists(), "{mode}: output left behind");
        // A batch names the file the same way.
        let batch_out = dir.join(format!("{mode}-batch"));
        let o = xaifb(&[mode, path(&dir), "-o", path(&batch_out)]);
        let err = o.refused(1);
        assert!(err.contains(&expected), "{mode} batch: {err}");
    }
}
