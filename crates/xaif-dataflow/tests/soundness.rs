//! Soundness of activity against exact derivatives: on random programs, a
//! variable whose value after a statement depends on an independent (its
//! forward derivative is non-zero) and on which the dependent depends (the
//! derivative of the dependent with respect to it is non-zero) must be
//! active there for us. Derivatives are computed with dual numbers by a
//! small evaluator of the generated programs, independent of the analysis.

use std::fmt::Write as _;

use proptest::prelude::*;
use xaif_dataflow::{analyze, ActivitySpec, Config, Solver, VarSpec};

const VARS: [&str; 8] = ["x0", "x1", "y", "t3", "t4", "t5", "t6", "t7"];

#[derive(Clone, Debug)]
enum Ex {
    Var(usize),
    Const(f64),
    Add(Box<Ex>, Box<Ex>),
    Sub(Box<Ex>, Box<Ex>),
    Mul(Box<Ex>, Box<Ex>),
    Sin(Box<Ex>),
}

#[derive(Clone, Debug)]
enum St {
    Assign(usize, Ex),
    If(bool, Vec<St>, Vec<St>),
}

fn ex() -> impl Strategy<Value = Ex> {
    let leaf = prop_oneof![
        4 => (0..VARS.len()).prop_map(Ex::Var),
        1 => (0.5f64..2.0).prop_map(Ex::Const),
    ];
    leaf.prop_recursive(3, 8, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Ex::Add(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Ex::Sub(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Ex::Mul(Box::new(a), Box::new(b))),
            inner.prop_map(|a| Ex::Sin(Box::new(a))),
        ]
    })
}

fn stmts() -> impl Strategy<Value = Vec<St>> {
    let assign = (0..VARS.len(), ex()).prop_map(|(v, e)| St::Assign(v, e));
    let st = assign.prop_recursive(2, 24, 4, |inner| {
        (
            any::<bool>(),
            prop::collection::vec(inner.clone(), 1..4),
            prop::collection::vec(inner, 0..3),
        )
            .prop_map(|(c, t, e)| St::If(c, t, e))
    });
    prop::collection::vec(st, 1..10)
}

// ------------------------------------------------------------------ XAIF

struct Emit {
    text: String,
    edges: Vec<(usize, usize, Option<u8>)>,
    vertex: usize,
    stmt: usize,
}

fn expr_xml(e: &Ex) -> String {
    let mut out = String::new();
    let mut next = 0;
    fn go(e: &Ex, out: &mut String, next: &mut usize) -> usize {
        *next += 1;
        let me = *next;
        let bin = |name: &str, a: &Ex, b: &Ex, out: &mut String, next: &mut usize| {
            let _ = write!(out, r#"<xaif:Intrinsic vertex_id="{me}" name="{name}"/>"#);
            let x = go(a, out, next);
            let y = go(b, out, next);
            let _ = write!(
                out,
                r#"<xaif:ExpressionEdge edge_id="{x}" source="{x}" target="{me}" position="1"/><xaif:ExpressionEdge edge_id="{y}" source="{y}" target="{me}" position="2"/>"#
            );
        };
        match e {
            Ex::Var(v) => {
                let _ = write!(
                    out,
                    r#"<xaif:VariableReference vertex_id="{me}"><xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="{}"/></xaif:VariableReference>"#,
                    VARS[*v]
                );
            }
            Ex::Const(c) => {
                let _ = write!(
                    out,
                    r#"<xaif:Constant vertex_id="{me}" type="real" value="{c}"/>"#
                );
            }
            Ex::Add(a, b) => bin("add_scal_scal", a, b, out, next),
            Ex::Sub(a, b) => bin("sub_scal_scal", a, b, out, next),
            Ex::Mul(a, b) => bin("mul_scal_scal", a, b, out, next),
            Ex::Sin(a) => {
                let _ = write!(out, r#"<xaif:Intrinsic vertex_id="{me}" name="sin_scal"/>"#);
                let x = go(a, out, next);
                let _ = write!(
                    out,
                    r#"<xaif:ExpressionEdge edge_id="{x}" source="{x}" target="{me}" position="1"/>"#
                );
            }
        }
        me
    }
    go(e, &mut out, &mut next);
    out
}

impl Emit {
    fn v(&mut self) -> usize {
        self.vertex += 1;
        self.vertex
    }

    /// Emits `body` after vertex `prev` (edge value `cv`); returns the last
    /// vertex.
    fn seq(&mut self, body: &[St], mut prev: usize, mut cv: Option<u8>) -> usize {
        if body.is_empty() {
            let b = self.v();
            let _ = write!(
                self.text,
                r#"<xaif:BasicBlock vertex_id="{b}" scope_id="2"/>"#
            );
            self.edges.push((prev, b, cv));
            return b;
        }
        for s in body {
            match s {
                St::Assign(v, e) => {
                    self.stmt += 1;
                    let b = self.v();
                    let _ = write!(
                        self.text,
                        r#"<xaif:BasicBlock vertex_id="{b}" scope_id="2"><xaif:Assignment statement_id="s{}"><xaif:AssignmentLHS><xaif:SymbolReference vertex_id="1" scope_id="2" symbol_id="{}"/></xaif:AssignmentLHS><xaif:AssignmentRHS>{}</xaif:AssignmentRHS></xaif:Assignment></xaif:BasicBlock>"#,
                        self.stmt,
                        VARS[*v],
                        expr_xml(e)
                    );
                    self.edges.push((prev, b, cv.take()));
                    prev = b;
                }
                St::If(c, t, e) => {
                    let b = self.v();
                    let _ = write!(
                        self.text,
                        r#"<xaif:Branch vertex_id="{b}"><xaif:Condition><xaif:Constant vertex_id="1" type="bool" value="{c}"/></xaif:Condition></xaif:Branch>"#
                    );
                    self.edges.push((prev, b, cv.take()));
                    let lt = self.seq(t, b, Some(1));
                    let le = self.seq(e, b, Some(0));
                    let end = self.v();
                    let _ = write!(self.text, r#"<xaif:EndBranch vertex_id="{end}"/>"#);
                    self.edges.push((lt, end, None));
                    self.edges.push((le, end, None));
                    prev = end;
                }
            }
        }
        prev
    }
}

fn xaif(body: &[St]) -> String {
    let mut e = Emit {
        text: String::new(),
        edges: Vec::new(),
        vertex: 1,
        stmt: 0,
    };
    let last = e.seq(body, 1, None);
    let exit = e.v();
    let mut out = String::from(
        r#"<?xml version="1.0"?><xaif:CallGraph xmlns:xaif="http://www.mcs.anl.gov/XAIF" program_name="p" prefix="OpenAD_"><xaif:ScopeHierarchy><xaif:Scope vertex_id="1"><xaif:SymbolTable><xaif:Symbol symbol_id="prop__1" kind="subroutine" type="void" active="0"/></xaif:SymbolTable></xaif:Scope><xaif:Scope vertex_id="2"><xaif:SymbolTable>"#,
    );
    for v in VARS {
        let _ = write!(
            out,
            r#"<xaif:Symbol symbol_id="{v}" kind="variable" type="real" shape="scalar" active="1"/>"#
        );
    }
    out.push_str(r#"</xaif:SymbolTable></xaif:Scope><xaif:ScopeEdge edge_id="1" source="2" target="1"/></xaif:ScopeHierarchy><xaif:AliasSetMap><xaif:AliasSet key="0"/></xaif:AliasSetMap><xaif:DUUDSetMap><xaif:StmtIdSet key="0"/></xaif:DUUDSetMap><xaif:DOSetMap><xaif:StmtIdSet key="0"/></xaif:DOSetMap><xaif:ControlFlowGraph vertex_id="1" scope_id="1" symbol_id="prop__1" controlflowgraph_scope_id="2"><xaif:ArgumentList>"#);
    for (i, v) in VARS[..3].iter().enumerate() {
        let _ = write!(
            out,
            r#"<xaif:ArgumentSymbolReference position="{}" scope_id="2" symbol_id="{v}" intent="inout"/>"#,
            i + 1
        );
    }
    out.push_str(r#"</xaif:ArgumentList><xaif:Entry vertex_id="1"/>"#);
    out.push_str(&e.text);
    let _ = write!(out, r#"<xaif:Exit vertex_id="{exit}"/>"#);
    e.edges.push((last, exit, None));
    for (i, (s, t, c)) in e.edges.iter().enumerate() {
        let cv = c
            .map(|c| format!(r#" has_condition_value="true" condition_value="{c}""#))
            .unwrap_or_default();
        let _ = write!(
            out,
            r#"<xaif:ControlFlowEdge edge_id="{}" source="{s}" target="{t}"{cv}/>"#,
            i + 1
        );
    }
    out.push_str("</xaif:ControlFlowGraph></xaif:CallGraph>");
    out
}

// ------------------------------------------------------------ evaluation

/// A value with its derivative in one direction.
#[derive(Clone, Copy, Debug)]
struct Dual(f64, f64);

fn eval(e: &Ex, env: &[Dual]) -> Dual {
    match e {
        Ex::Var(v) => env[*v],
        Ex::Const(c) => Dual(*c, 0.0),
        Ex::Add(a, b) => {
            let (a, b) = (eval(a, env), eval(b, env));
            Dual(a.0 + b.0, a.1 + b.1)
        }
        Ex::Sub(a, b) => {
            let (a, b) = (eval(a, env), eval(b, env));
            Dual(a.0 - b.0, a.1 - b.1)
        }
        Ex::Mul(a, b) => {
            let (a, b) = (eval(a, env), eval(b, env));
            Dual(a.0 * b.0, a.1 * b.0 + a.0 * b.1)
        }
        Ex::Sin(a) => {
            let a = eval(a, env);
            Dual(a.0.sin(), a.0.cos() * a.1)
        }
    }
}

/// Runs `body`; `seed(n, env)` is called after the n-th executed assignment
/// and may set tangents. Returns the executed statement numbers in order.
fn run(
    body: &[St],
    env: &mut Vec<Dual>,
    counter: &mut usize,
    trace: &mut Vec<(usize, usize)>,
    seed: &mut dyn FnMut(usize, &mut Vec<Dual>),
) {
    for s in body {
        match s {
            St::Assign(v, e) => {
                *counter += 1;
                env[*v] = eval(e, env);
                trace.push((*counter, *v));
                seed(trace.len(), env);
            }
            St::If(c, t, e) => {
                // Statement numbers follow the emission order: both arms are
                // numbered even if only one runs.
                let (first, second) = (t, e);
                let start = *counter;
                let n_then = count(first);
                if *c {
                    run(first, env, counter, trace, seed);
                    *counter = start + n_then + count(second);
                } else {
                    *counter = start + n_then;
                    run(second, env, counter, trace, seed);
                }
            }
        }
    }
}

fn count(body: &[St]) -> usize {
    body.iter()
        .map(|s| match s {
            St::Assign(..) => 1,
            St::If(_, t, e) => count(t) + count(e),
        })
        .sum()
}

/// (statement number, variable) pairs that are varied and useful after the
/// statement on the executed path, with a witness derivative.
fn witnessed(body: &[St], inputs: &[f64]) -> Vec<(usize, usize)> {
    let start =
        |inputs: &[f64]| -> Vec<Dual> { (0..VARS.len()).map(|i| Dual(inputs[i], 0.0)).collect() };
    // Varied: forward derivative along x0 + x1 (random weights avoid
    // cancellation between the two).
    let mut env = start(inputs);
    env[0].1 = 1.0;
    env[1].1 = 0.7319;
    let mut trace = Vec::new();
    let mut varied = Vec::new();
    run(body, &mut env, &mut 0, &mut trace, &mut |_,
                                                  env: &mut Vec<
        Dual,
    >| {
        varied.push(env.iter().map(|d| d.1 != 0.0).collect::<Vec<_>>());
    });
    let mut out = Vec::new();
    for (k, &(stmt, v)) in trace.iter().enumerate() {
        if !varied[k][v] {
            continue;
        }
        // Useful: seed v right after its k-th executed assignment.
        let mut env = start(inputs);
        let mut t = Vec::new();
        run(body, &mut env, &mut 0, &mut t, &mut |n,
                                                  env: &mut Vec<
            Dual,
        >| {
            if n == k + 1 {
                for d in env.iter_mut() {
                    d.1 = 0.0;
                }
                env[v].1 = 1.0;
            }
        });
        if env[2].1 != 0.0 {
            out.push((stmt, v));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn activity_covers_every_witnessed_dependency_path(
        body in stmts(),
        inputs in prop::collection::vec(0.3f64..1.7, VARS.len()),
    ) {
        let text = xaif(&body);
        let (p, sm) = xaif_model::read_program_str(&text, None).expect("generated XAIF reads");
        xaif_model::validate_program(&p, &sm).expect("generated XAIF passes the gate");
        let spec = ActivitySpec {
            independents: vec![VarSpec::parse("prop:x0").unwrap(), VarSpec::parse("prop:x1").unwrap()],
            dependents: vec![VarSpec::parse("prop:y").unwrap()],
        };
        for solver in [Solver::Auto, Solver::Iterative] {
            let a = analyze(&p, &Config { activity: spec.clone(), solver, tbr: false }).unwrap();
            let r = *a.facts.routines.keys().next().unwrap();
            let universe = &a.facts.routines[&r].universe;
            let slot_of = |v: usize| {
                universe
                    .slots()
                    .find(|(_, s)| a.facts.storages[s.storage.index()].name == VARS[v])
                    .map(|(i, _)| i)
            };
            for (stmt, v) in witnessed(&body, &inputs) {
                let id = format!("s{stmt}");
                let s = p.stmts.iter().find(|(_, s)| s.id() == id).map(|(i, _)| i).unwrap();
                let sa = a.activity.stmts.get(s).expect("statement analysed");
                let slot = slot_of(v).expect("variable has a slot");
                prop_assert!(sa.out_vary.contains(slot) && sa.out_useful.contains(slot),
                    "{solver:?}: {} after {id} is varied and useful\n{body:?}", VARS[v]);
                let sym = p.symbols.iter().find(|(_, s)| s.name() == VARS[v]).map(|(i, _)| i).unwrap();
                prop_assert_eq!(a.activity.symbol_active(sym), Some(true),
                    "{:?}: {} must be active\n{:?}", solver, VARS[v], body);
            }
        }
    }
}
