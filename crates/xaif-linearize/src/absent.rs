//! Calls that pass on an optional formal which may be absent, to a formal
//! of the other activity.
//!
//! Fortran lets a routine pass one of its optional formals on, whole, to
//! an optional formal of a callee even when it is absent; the callee then
//! sees it absent too. When the two formals differ in activity, the
//! transformations convert the actual into a temporary of the callee's
//! activity around the call (`oad_convert(OpenAD_tyc_N, f)` before,
//! the way back after), and those conversions read `f`: reading an absent
//! argument is undefined. So before transforming, such a call is made
//! twice, under `if (present(f))`: with `f` (converted as usual) and with
//! that argument left out. The rest of the transformation (activity,
//! taping, control flow reversal) sees an ordinary two-way branch.
//!
//! A formal "may be absent" as [`xaif_model::formals_maybe_absent`] says:
//! some call leaves its position out, or passes on a formal that may be
//! absent. A program without such a call is not copied.

use xaif_model::{
    ArgValue, Attrs, CfgEdge, CfgId, CfgItem, CfgVertex, Decoration, ExprBuilder, Program,
    RoutineBody, RoutineIndex, StmtId, StmtKind, VertexId, VertexKind,
};

use crate::context::Ctx;
use crate::flatten::FlattenError;
use crate::linearize::LinearizeError;
use crate::tangent::{callee_formals, converted_to, TransformError};

/// Most arguments of one call that are guarded this way: the call is made
/// once for every combination of them present and absent (2^6 = 64).
pub const MAX_GUARDED_ARGUMENTS: usize = 6;

/// A call to make under `if (present(f))`: its index in its block and the
/// argument positions to guard.
type Guarded = (usize, Vec<usize>);

/// The program with every call that would convert an optional formal of
/// its routine which may be absent made under `if (present(f))`, or `None`
/// when there is no such call (or `p` is a transformation's output, which
/// the transformations refuse). `passive`, `decoration` and `wrappers` are
/// the transformation's `-p`, `-F` and `-w`, which decide activity and
/// conversions.
pub fn guard_absent(
    p: &Program,
    passive: &[String],
    decoration: Decoration,
    wrappers: &[String],
) -> Result<Option<Program>, TransformError> {
    guard(p, passive, decoration, wrappers, MAX_GUARDED_ARGUMENTS)
}

/// [`guard_absent`] with at most `limit` guarded arguments per
/// call.
fn guard(
    p: &Program,
    passive: &[String],
    decoration: Decoration,
    wrappers: &[String],
    limit: usize,
) -> Result<Option<Program>, TransformError> {
    if p.is_output() {
        return Ok(None);
    }
    let maybe_absent = xaif_model::formals_maybe_absent(p);
    if maybe_absent.is_empty() {
        return Ok(None);
    }
    let ctx = Ctx::with_names(p, passive, decoration, wrappers);
    let routines = RoutineIndex::new(p);
    let mut sites: Vec<(CfgId, VertexId, Vec<Guarded>)> = Vec::new();
    for (_, r) in p.routines.iter() {
        let RoutineBody::Graph(cfg) = &r.body else {
            continue;
        };
        let own = r.formal_positions();
        if own.is_empty() {
            continue;
        }
        let name = r.symbol_name();
        for v in p.cfgs[*cfg].vertex_ids() {
            let VertexKind::BasicBlock(stmts) = &p.vertices[v].kind else {
                continue;
            };
            let mut here = Vec::new();
            for (i, s) in stmts.iter().enumerate() {
                let stmt = &p.stmts[*s];
                let StmtKind::SubroutineCall(args) = &stmt.kind else {
                    continue;
                };
                let callee = stmt.attrs.get("symbol_id").unwrap_or("");
                let external = routines
                    .get(callee)
                    .is_none_or(|r| !p.routines[r].has_body(p));
                if external && ctx.has_wrapper(callee) {
                    continue;
                }
                let formals = callee_formals(&ctx, &routines, callee);
                let mut guarded = Vec::new();
                for (k, a) in args.iter().enumerate() {
                    let pos = a.attrs.int("position").unwrap_or(k as i64 + 1);
                    let ArgValue::Variable(actual) = &a.value else {
                        continue;
                    };
                    if !actual.graph.subscripts().is_empty() {
                        continue;
                    }
                    let Some(at) = actual.graph.symbol_ids().and_then(|ids| own.get(&ids)) else {
                        continue;
                    };
                    if !maybe_absent.contains(&(name.to_string(), *at)) {
                        continue;
                    }
                    let Some(sym) = ctx.symbol_of(&actual.graph) else {
                        continue;
                    };
                    let Ok(pos) = usize::try_from(pos) else {
                        continue;
                    };
                    if converted_to(&ctx, &formals, external, pos, sym, &actual.graph).is_some() {
                        guarded.push(pos);
                    }
                }
                if guarded.len() > limit {
                    return Err(TransformError::Flatten {
                        routine: name.to_string(),
                        source: FlattenError {
                            statement: stmt.id().to_string(),
                            span: stmt.attrs.span,
                            element: stmt.kind.element(),
                            source: LinearizeError::Unsupported(format!(
                                "a call passing {} optional arguments that may be absent to \
                                 formals of the other activity (at most {limit}: the call is \
                                 made once for each combination of them present and absent)",
                                guarded.len()
                            )),
                        },
                    });
                }
                if !guarded.is_empty() {
                    here.push((i, guarded));
                }
            }
            if !here.is_empty() {
                sites.push((*cfg, v, here));
            }
        }
    }
    if sites.is_empty() {
        return Ok(None);
    }
    let mut q = p.clone();
    for (cfg, v, here) in sites {
        split_block(&mut q, cfg, v, &here);
    }
    Ok(Some(q))
}

/// New vertices and edges of one split block, named after it.
struct Split {
    cfg: CfgId,
    base: String,
    block_attrs: Attrs,
    vertices: Vec<VertexId>,
    edges: Vec<CfgEdge>,
    count: usize,
}

impl Split {
    fn vertex(&mut self, q: &mut Program, mut attrs: Attrs, kind: VertexKind) -> String {
        self.count += 1;
        let id = format!("{}_absent_{}", self.base, self.count);
        attrs.set("vertex_id", id.as_str());
        let v = q.vertices.alloc(CfgVertex {
            attrs,
            cfg: self.cfg,
            kind,
        });
        self.vertices.push(v);
        id
    }

    fn block(&mut self, q: &mut Program, stmts: Vec<StmtId>) -> String {
        let attrs = self.block_attrs.clone();
        self.vertex(q, attrs, VertexKind::BasicBlock(stmts))
    }

    fn edge(&mut self, source: &str, target: &str, value: Option<i64>) {
        self.count += 1;
        let mut attrs = Attrs::new()
            .with("edge_id", format!("{}_absent_e{}", self.base, self.count))
            .with("source", source)
            .with("target", target);
        if let Some(v) = value {
            attrs.set("has_condition_value", "true");
            attrs.set("condition_value", v.to_string());
        }
        self.edges.push(CfgEdge {
            attrs,
            cfg: self.cfg,
        });
    }

    /// The branches over `guards[t..]` around variants of `call`, the
    /// arguments at the positions in `absent` left out. Returns the first
    /// and the last vertex. Depth at most [`MAX_GUARDED_ARGUMENTS`].
    fn choose(
        &mut self,
        q: &mut Program,
        call: StmtId,
        guards: &[usize],
        absent: &mut Vec<usize>,
    ) -> (String, String) {
        let Some((&pos, rest)) = guards.split_first() else {
            let stmt = if absent.is_empty() {
                call
            } else {
                let mut variant = q.stmts[call].clone();
                let id = variant.attrs.get("statement_id").unwrap_or("").to_string();
                variant.attrs.set(
                    "statement_id",
                    format!("{id}_absent_{}", self.count + 1).as_str(),
                );
                if let StmtKind::SubroutineCall(args) = &mut variant.kind {
                    // The arguments left keep their positions (written out
                    // where the input left them implicit).
                    let kept = args
                        .iter()
                        .enumerate()
                        .filter_map(|(k, a)| {
                            let at = a.attrs.int("position").unwrap_or(k as i64 + 1);
                            if usize::try_from(at).is_ok_and(|at| absent.contains(&at)) {
                                return None;
                            }
                            let mut a = a.clone();
                            if !a.attrs.has("position") {
                                a.attrs.set("position", at.to_string());
                            }
                            Some(a)
                        })
                        .collect();
                    *args = kept;
                }
                q.stmts.alloc(variant)
            };
            let b = self.block(q, vec![stmt]);
            return (b.clone(), b);
        };
        let actual = match &q.stmts[call].kind {
            StmtKind::SubroutineCall(args) => args.iter().enumerate().find_map(|(k, a)| {
                let at = a.attrs.int("position").unwrap_or(k as i64 + 1);
                match &a.value {
                    ArgValue::Variable(r) if usize::try_from(at) == Ok(pos) => Some(r.clone()),
                    _ => None,
                }
            }),
            _ => None,
        };
        // (A guarded position always holds a variable: it was found so.)
        let Some(actual) = actual else {
            return self.choose(q, call, rest, absent);
        };
        let mut cond = ExprBuilder::new();
        let arg = cond.reference(&actual);
        cond.intrinsic("present", &[arg]);
        let branch = self.vertex(q, Attrs::new(), VertexKind::Branch(Some(cond.finish())));
        let (then_first, then_last) = self.choose(q, call, rest, absent);
        absent.push(pos);
        let (else_first, else_last) = self.choose(q, call, rest, absent);
        absent.pop();
        let end = self.vertex(q, Attrs::new(), VertexKind::EndBranch);
        self.edge(&branch, &then_first, Some(1));
        self.edge(&branch, &else_first, Some(0));
        self.edge(&then_last, &end, None);
        self.edge(&else_last, &end, None);
        (branch, end)
    }
}

/// Splits block `v`: its statements up to the first guarded call stay in
/// it, each guarded call becomes its branches, the statements between and
/// after go to new blocks, and the block's outgoing edges leave from the
/// last new vertex.
fn split_block(q: &mut Program, cfg: CfgId, v: VertexId, here: &[Guarded]) {
    let VertexKind::BasicBlock(stmts) = q.vertices[v].kind.clone() else {
        return;
    };
    let base = q.vertices[v]
        .attrs
        .get("vertex_id")
        .unwrap_or("")
        .to_string();
    let mut block_attrs = q.vertices[v].attrs.clone();
    block_attrs.discard("vertex_id");
    let mut split = Split {
        cfg,
        base: base.clone(),
        block_attrs,
        vertices: Vec::new(),
        edges: Vec::new(),
        count: 0,
    };
    let first = here.first().map_or(stmts.len(), |(i, _)| *i);
    q.vertices[v].kind = VertexKind::BasicBlock(stmts[..first].to_vec());
    let mut last = base.clone();
    for (j, (i, guards)) in here.iter().enumerate() {
        let (head, tail) = split.choose(q, stmts[*i], guards, &mut Vec::new());
        split.edge(&last, &head, None);
        last = tail;
        let until = here.get(j + 1).map_or(stmts.len(), |(next, _)| *next);
        if i + 1 < until {
            let b = split.block(q, stmts[i + 1..until].to_vec());
            split.edge(&last, &b, None);
            last = b;
        }
    }
    // The block's own outgoing edges now leave from the last new vertex.
    let items = &mut q.cfgs[cfg].items;
    for item in items.iter() {
        if let CfgItem::Edge(e) = item {
            let attrs = &mut q.edges[*e].attrs;
            if attrs.get("source") == Some(base.as_str()) {
                attrs.set("source", last.as_str());
            }
        }
    }
    let at = items
        .iter()
        .position(|i| *i == CfgItem::Vertex(v))
        .map_or(items.len(), |k| k + 1);
    items.splice(at..at, split.vertices.iter().map(|&n| CfgItem::Vertex(n)));
    for e in split.edges {
        let e = q.edges.alloc(e);
        q.cfgs[cfg].items.push(CfgItem::Edge(e));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Program {
        let path = xaif_testkit::repo_root().join("fixtures/stress").join(name);
        match xaif_model::read_file(&path).unwrap().document {
            xaif_model::Document::Program(p) => *p,
            _ => panic!("{name}: not a program"),
        }
    }

    fn calls_of<'a>(q: &'a Program, routine: &str, callee: &str) -> Vec<&'a xaif_model::Stmt> {
        let r = q
            .routines
            .iter()
            .find(|(_, r)| r.symbol_name() == routine)
            .unwrap()
            .1;
        let RoutineBody::Graph(cfg) = &r.body else {
            panic!("no body")
        };
        q.cfgs[*cfg]
            .vertex_ids()
            .flat_map(|v| match &q.vertices[v].kind {
                VertexKind::BasicBlock(stmts) => stmts.clone(),
                _ => Vec::new(),
            })
            .map(|s| &q.stmts[s])
            .filter(|s| {
                matches!(s.kind, StmtKind::SubroutineCall(_))
                    && s.attrs.get("symbol_id") == Some(callee)
            })
            .collect()
    }

    /// `sa` passes its passive optional `FB`, absent in the only call of
    /// `sa`, to the active optional first formal of `sb`: the call is made
    /// under `if (present(fb))`, once with all three arguments and once
    /// without the first, and the result passes the gate.
    #[test]
    fn a_converted_absent_argument_gets_a_call_of_its_own() {
        let p = fixture("optional_passed_on_converted.xaif");
        assert_eq!(calls_of(&p, "sa", "sb").len(), 1);
        let q = guard_absent(&p, &[], Decoration::Open64, &[])
            .unwrap()
            .expect("a call to guard");
        let calls = calls_of(&q, "sa", "sb");
        let positions = |s: &xaif_model::Stmt| match &s.kind {
            StmtKind::SubroutineCall(args) => args
                .iter()
                .map(|a| a.attrs.int("position").unwrap())
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        };
        assert_eq!(
            calls.iter().map(|s| positions(s)).collect::<Vec<_>>(),
            [vec![1, 2, 3], vec![2, 3]]
        );
        let branches: Vec<_> = q
            .vertices
            .iter()
            .filter_map(|(_, v)| match &v.kind {
                VertexKind::Branch(Some(c)) => Some(c),
                _ => None,
            })
            .filter(|c| {
                c.vertices
                    .iter()
                    .any(|v| v.attrs.get("name") == Some("present"))
            })
            .collect();
        // The source's own `if (present(fa))` in `sb`, and the new one.
        assert_eq!(branches.len(), 2);
        let source = xaif_model::SourceMap::new(None, b"");
        xaif_model::validate_program(&q, &source).unwrap();
        // With `FB` of the same activity as `sb`'s formal, nothing is
        // converted and nothing guarded.
        let same = {
            let mut q = p.clone();
            for s in q.symbols.values_mut() {
                if s.attrs.get("symbol_id") == Some("FB") {
                    s.attrs.set("active", "1");
                }
            }
            q
        };
        assert!(guard_absent(&same, &[], Decoration::Open64, &[])
            .unwrap()
            .is_none());
    }

    /// Two guarded arguments in one call: four calls, one for each
    /// combination present and absent, under three branches (the fixture
    /// changed so that `head` also leaves out `sa`'s active `FA`, which
    /// `sa` passes to `sb`'s second formal, made passive here).
    #[test]
    fn two_guarded_arguments_give_four_calls() {
        let mut p = fixture("optional_passed_on_converted.xaif");
        let symbols = xaif_model::SymbolIndex::new(&p);
        let sb = p
            .routines
            .iter()
            .find(|(_, r)| r.symbol_name() == "sb")
            .unwrap()
            .1;
        let second = sb
            .arguments
            .iter()
            .flat_map(|l| l.args.iter())
            .find(|a| a.int("position") == Some(2))
            .and_then(|a| symbols.resolve(a))
            .unwrap();
        p.symbols[second].attrs.set("active", "0");
        for stmt in p.stmts.values_mut() {
            if stmt.attrs.get("symbol_id") != Some("sa") {
                continue;
            }
            if let StmtKind::SubroutineCall(args) = &mut stmt.kind {
                args.retain(|a| a.attrs.int("position") != Some(1));
            }
        }
        let q = guard_absent(&p, &[], Decoration::Open64, &[])
            .unwrap()
            .expect("a call to guard");
        let positions: Vec<Vec<i64>> = calls_of(&q, "sa", "sb")
            .iter()
            .map(|s| match &s.kind {
                StmtKind::SubroutineCall(args) => args
                    .iter()
                    .map(|a| a.attrs.int("position").unwrap())
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        assert_eq!(positions, [vec![1, 2, 3], vec![1, 3], vec![2, 3], vec![3]]);
        let ids: Vec<&str> = calls_of(&q, "sa", "sb")
            .iter()
            .map(|s| s.attrs.get("statement_id").unwrap())
            .collect();
        let mut unique = ids.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), 4, "{ids:?}");
        let source = xaif_model::SourceMap::new(None, b"");
        xaif_model::validate_program(&q, &source).unwrap();
    }

    /// A program whose calls leave nothing out is not copied.
    #[test]
    fn programs_without_absent_arguments_are_left_alone() {
        let p = fixture("broadcast_adjoint.xaif");
        assert!(xaif_model::formals_maybe_absent(&p).is_empty());
        assert!(guard_absent(&p, &[], Decoration::Open64, &[])
            .unwrap()
            .is_none());
    }

    /// Beyond the limit of guarded arguments in one call, the call is
    /// refused with its statement's position (the limit lowered to 0 here;
    /// the fixture's call guards one).
    #[test]
    fn too_many_guarded_arguments_are_refused_at_the_call() {
        let p = fixture("optional_passed_on_converted.xaif");
        let e = guard(&p, &[], Decoration::Open64, &[], 0).unwrap_err();
        let (span, element) = e.location().expect("located");
        assert!(span.is_known());
        assert_eq!(element, "SubroutineCall");
        assert!(
            e.to_string()
                .contains("1 optional arguments that may be absent"),
            "{e}"
        );
    }
}
