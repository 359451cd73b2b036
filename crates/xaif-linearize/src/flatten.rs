//! Flattening: the statements of a basic block grouped into sequences whose
//! linearized computational graphs are merged (seed "weighted term graphs"
//! §5), and each sequence's graph.
//!
//! A sequence grows statement by statement. A use on a right-hand side is
//! identified with an earlier definition of the sequence when the DU-UD
//! chains (or, without chains, the alias analysis of
//! [`crate::context::overlap`]) say it is certainly that definition; it is
//! an independent of the sequence when no definition of the sequence
//! reaches it; when either is uncertain the statement starts a new sequence.
//! A new sequence also starts before a statement whose left-hand side may be
//! a location already written in the sequence (unless `-Q`), before a
//! passive statement that writes a variable the sequence uses in a subscript
//! (the propagation at the end of the sequence evaluates subscripts again),
//! at calls and untranslated statements, and for every statement with `-S`.
//!
//! A definition is a dependent of its sequence unless its DU chain shows
//! that every use is a later statement of the same sequence.

use rustc_hash::FxHashMap;
use xaif_model::{Assignment, StmtId, StmtKind, SymbolId, VarRef};

use crate::catalogue::Catalogue;
use crate::context::{overlap, ref_text, subscript_symbols, Ctx, Overlap};
use crate::dag::Node;
use crate::linearize::{linearize, EdgePartial, LinStmt, LinearizeError};

/// Where an active use on a right-hand side gets its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// From before the sequence: independent number `k` of the sequence.
    Independent(usize),
    /// From the definition of item `k` of the sequence.
    Def(usize),
}

/// One statement of a sequence.
#[derive(Clone, Debug)]
pub enum Item {
    /// A statement emitted unchanged (passive assignments, inert markers).
    Plain(StmtId),
    /// An active assignment.
    Active {
        /// The statement.
        stmt: StmtId,
        /// Its linearization.
        lin: LinStmt,
        /// Its left-hand side.
        lhs: VarRef,
        /// Source of each active variable node of `lin.dag`.
        sources: FxHashMap<usize, Source>,
        /// The variable nodes read from an independent that the reference
        /// engine's flattening gives a vertex of their own (see
        /// [`reference_unshared`]), in increasing order.
        unshared: Vec<usize>,
        /// Whether its value is needed after the sequence.
        dependent: bool,
    },
    /// A passive value assigned to an active variable: its derivative
    /// becomes zero.
    Zero {
        /// The statement.
        stmt: StmtId,
        /// Its left-hand side.
        lhs: VarRef,
    },
}

/// An independent of a sequence: a variable read before the sequence
/// defines it.
#[derive(Clone, Debug)]
pub struct Independent {
    /// The reference.
    pub var: VarRef,
    /// Canonical text, the identity of the independent.
    pub key: String,
    /// The value comes from a zeroed definition of the sequence (its
    /// derivative is read after the zeroing).
    pub after_zero: bool,
}

/// A flattened sequence.
#[derive(Clone, Debug, Default)]
pub struct Sequence {
    /// Statements in order.
    pub items: Vec<Item>,
    /// Independents.
    pub independents: Vec<Independent>,
    /// Variables used in subscripts of the sequence's references.
    subscript_vars: Vec<SymbolId>,
}

impl Sequence {
    /// The index of the independent read of `var` (its value from after
    /// a zeroing of the sequence when `after_zero`), added if new.
    fn independent(&mut self, var: VarRef, after_zero: bool) -> usize {
        let key = if after_zero {
            format!("zero:{}", ref_text(&var.graph))
        } else {
            ref_text(&var.graph)
        };
        match self.independents.iter().position(|i| i.key == key) {
            Some(k) => k,
            None => {
                self.independents.push(Independent {
                    var,
                    key,
                    after_zero,
                });
                self.independents.len() - 1
            }
        }
    }

    /// Whether the sequence has derivative work.
    pub fn is_active(&self) -> bool {
        self.items
            .iter()
            .any(|i| matches!(i, Item::Active { .. } | Item::Zero { .. }))
    }

    fn defs(&self) -> impl Iterator<Item = (usize, &VarRef)> {
        self.items.iter().enumerate().filter_map(|(k, i)| match i {
            Item::Active { lhs, .. } | Item::Zero { lhs, .. } => Some((k, lhs)),
            Item::Plain(_) => None,
        })
    }

    fn stmt_ids<'c>(&self, ctx: &'c Ctx<'_>) -> Vec<&'c str> {
        self.items
            .iter()
            .map(|i| {
                let s = match i {
                    Item::Plain(s) | Item::Active { stmt: s, .. } | Item::Zero { stmt: s, .. } => {
                        *s
                    }
                };
                ctx.p.stmts[s].id()
            })
            .collect()
    }
}

/// A piece of a flattened basic block.
#[derive(Clone, Debug)]
pub enum Piece {
    /// A sequence of assignments.
    Seq(Sequence),
    /// A statement handled on its own (a call, a marker that may change
    /// values, an inlinable call, a direct-action assignment).
    Single(StmtId),
}

/// Options of flattening.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlattenOptions {
    /// `-S`: one graph per statement.
    pub per_statement: bool,
    /// `-Q`: do not split on possibly aliased left-hand sides.
    pub no_alias_split: bool,
}

/// Why a block cannot be flattened.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("statement `{statement}`: {source}")]
pub struct FlattenError {
    /// The statement id.
    pub statement: String,
    /// Where the statement starts in its input file (for the caller's
    /// message: the library does not know the file).
    pub span: xaif_model::Span,
    /// The statement's element name.
    pub element: &'static str,
    /// What went wrong.
    pub source: LinearizeError,
}

fn inert_marker(annotation: &str) -> bool {
    [
        "OPR_PRAGMA",
        "OPR_XPRAGMA",
        "OPR_COMMENT",
        "OPR_USE",
        "StmtLabel",
    ]
    .iter()
    .any(|k| annotation.contains(k))
}

/// Whether an assignment is a direct action of the non-inlinable
/// catalogue (`B = transpose_arr(A)` with `-N`): its right-hand side root is
/// such an intrinsic.
pub fn direct_action(a: &Assignment, direct: &dyn Fn(&str) -> bool) -> bool {
    let Some(d) = crate::dag::Dag::from_expr(&a.rhs) else {
        return false;
    };
    matches!(&d.nodes[d.root], Node::Op { attrs, .. } if attrs.get("name").is_some_and(direct))
}

/// Flattens a basic block.
pub fn flatten(
    ctx: &Ctx<'_>,
    catalogue: &Catalogue,
    stmts: &[StmtId],
    options: FlattenOptions,
    direct: &dyn Fn(&str) -> bool,
) -> Result<Vec<Piece>, FlattenError> {
    let mut pieces = Vec::new();
    let mut cur = Sequence::default();
    let flush = |cur: &mut Sequence, pieces: &mut Vec<Piece>| {
        if !cur.items.is_empty() {
            pieces.push(Piece::Seq(std::mem::take(cur)));
        }
    };
    for &s in stmts {
        let stmt = &ctx.p.stmts[s];
        let err = |source| FlattenError {
            statement: stmt.id().to_string(),
            span: stmt.attrs.span,
            element: stmt.kind.element(),
            source,
        };
        match &stmt.kind {
            StmtKind::Marker if inert_marker(stmt.attrs.get("annotation").unwrap_or("")) => {
                cur.items.push(Item::Plain(s));
            }
            StmtKind::Assignment(a) if direct_action(a, direct) => {
                flush(&mut cur, &mut pieces);
                pieces.push(Piece::Single(s));
            }
            StmtKind::Assignment(a) => {
                let lhs_active = !a.lhs.attrs.flag("deriv", false) && ctx.ref_active(&a.lhs.graph);
                if !lhs_active && ctx.ref_complex(&a.lhs.graph) {
                    // A complex variable carries no derivative: an active
                    // value stored in it would lose its derivative silently.
                    let lin = linearize(ctx, catalogue, &a.rhs).map_err(err)?;
                    if lin.active[lin.dag.root] {
                        return Err(err(LinearizeError::Unsupported(
                            "an active value assigned to a complex variable (derivatives are carried for real values only: the derivative would be dropped)".into(),
                        )));
                    }
                }
                if !lhs_active {
                    // Passive: a new sequence when it writes a variable used
                    // in a subscript of the sequence.
                    if let Some(sym) = ctx.symbol_of(&a.lhs.graph) {
                        if cur.subscript_vars.contains(&sym) {
                            flush(&mut cur, &mut pieces);
                        }
                    }
                    cur.items.push(Item::Plain(s));
                    continue;
                }
                let lin = linearize(ctx, catalogue, &a.rhs).map_err(err)?;
                // Active references with vector subscripts have no
                // derivative code (`Ctx::vector_subscript`).
                let active_refs = std::iter::once(&a.lhs).chain(
                    lin.dag
                        .nodes
                        .iter()
                        .zip(&lin.active)
                        .filter_map(|(n, &active)| match n {
                            Node::Var(r) if active => Some(r),
                            _ => None,
                        }),
                );
                for r in active_refs {
                    if let Some(why) = ctx.vector_subscript(&r.graph) {
                        return Err(err(LinearizeError::Unsupported(why)));
                    }
                }
                // Output dependence: the left-hand side may be a location the
                // sequence already writes.
                if options.per_statement
                    || (!options.no_alias_split
                        && cur
                            .defs()
                            .any(|(_, l)| overlap(ctx, l, &a.lhs) != Overlap::No))
                {
                    flush(&mut cur, &mut pieces);
                }
                let root_active = lin.active[lin.dag.root];
                if !root_active {
                    cur.items.push(Item::Zero {
                        stmt: s,
                        lhs: a.lhs.clone(),
                    });
                    note_subscripts(ctx, &mut cur, &a.lhs);
                    continue;
                }
                let sources = match resolve(ctx, &cur, &lin) {
                    Some(x) => x,
                    None => {
                        flush(&mut cur, &mut pieces);
                        resolve(ctx, &cur, &lin).expect("an empty sequence resolves everything")
                    }
                };
                let mut sources_final = FxHashMap::default();
                let mut unshared = Vec::new();
                for (node, src) in sources {
                    let resolved = match src {
                        Resolved::Def(k) => Source::Def(k),
                        Resolved::Independent(var, after_zero) => {
                            if !after_zero && reference_unshared(ctx, &var) {
                                unshared.push(node);
                            }
                            Source::Independent(cur.independent(var, after_zero))
                        }
                    };
                    sources_final.insert(node, resolved);
                }
                note_subscripts(ctx, &mut cur, &a.lhs);
                for n in &lin.dag.nodes {
                    if let Node::Var(r) = n {
                        note_subscripts(ctx, &mut cur, r);
                    }
                }
                cur.items.push(Item::Active {
                    stmt: s,
                    lin,
                    lhs: a.lhs.clone(),
                    sources: sources_final,
                    unshared,
                    dependent: true,
                });
                if options.per_statement {
                    flush(&mut cur, &mut pieces);
                }
            }
            _ => {
                flush(&mut cur, &mut pieces);
                pieces.push(Piece::Single(s));
            }
        }
    }
    flush(&mut cur, &mut pieces);
    for piece in &mut pieces {
        if let Piece::Seq(seq) = piece {
            mark_dependents(ctx, seq);
        }
    }
    Ok(pieces)
}

/// Whether the reference engine's flattening gives this read of a value
/// from before the sequence a vertex of its own. It identifies two reads
/// only when their DU-UD chains name the same one definition, a statement
/// of the program: a value from outside the routine (the chain's empty
/// id) or from one of several definitions is read into a new vertex at
/// every use. Without chains it identifies reads by the alias analysis,
/// as flattening does here.
fn reference_unshared(ctx: &Ctx<'_>, r: &VarRef) -> bool {
    ctx.chain(&r.attrs)
        .is_some_and(|chain| chain.len() != 1 || chain[0].is_empty())
}

fn note_subscripts(ctx: &Ctx<'_>, cur: &mut Sequence, r: &VarRef) {
    let mut syms = Vec::new();
    subscript_symbols(ctx, &r.graph, &mut syms);
    for s in syms {
        if !cur.subscript_vars.contains(&s) {
            cur.subscript_vars.push(s);
        }
    }
}

enum Resolved {
    Def(usize),
    Independent(VarRef, bool),
}

/// Sources of the active variable nodes of `lin` in `cur`; `None` when one
/// is ambiguous.
fn resolve(ctx: &Ctx<'_>, cur: &Sequence, lin: &LinStmt) -> Option<Vec<(usize, Resolved)>> {
    let ids = cur.stmt_ids(ctx);
    let mut out = Vec::new();
    for (n, node) in lin.dag.nodes.iter().enumerate() {
        let Node::Var(r) = node else { continue };
        if !lin.active[n] {
            continue;
        }
        let def = match ctx.chain(&r.attrs) {
            Some(chain) => {
                let inside: Vec<usize> = chain
                    .iter()
                    .filter_map(|id| ids.iter().position(|s| !id.is_empty() && s == id))
                    .collect();
                match (inside.len(), chain.len()) {
                    (0, _) => None,
                    // The one definition that reaches the use: the use's
                    // value is that definition's only if it reads the same
                    // location (an element of a vector the definition
                    // assigns is part of its value, not its value).
                    (1, 1) => match &cur.items[inside[0]] {
                        Item::Active { lhs, .. } | Item::Zero { lhs, .. }
                            if overlap(ctx, lhs, r) != Overlap::Must =>
                        {
                            return None
                        }
                        _ => Some(inside[0]),
                    },
                    _ => return None,
                }
            }
            None => {
                let mut found = None;
                for (k, lhs) in cur.defs() {
                    match overlap(ctx, lhs, r) {
                        Overlap::No => {}
                        Overlap::Must if found.is_none() => found = Some(k),
                        _ => return None,
                    }
                }
                found
            }
        };
        let resolved = match def {
            None => Resolved::Independent(r.clone(), false),
            Some(k) => match &cur.items[k] {
                Item::Zero { .. } => Resolved::Independent(r.clone(), true),
                Item::Active { .. } => Resolved::Def(k),
                Item::Plain(_) => return None,
            },
        };
        out.push((n, resolved));
    }
    Some(out)
}

fn mark_dependents(ctx: &Ctx<'_>, seq: &mut Sequence) {
    let ids: Vec<String> = seq.stmt_ids(ctx).into_iter().map(str::to_string).collect();
    for (k, item) in seq.items.iter_mut().enumerate() {
        if let Item::Active { lhs, dependent, .. } = item {
            *dependent = match ctx.chain(&lhs.attrs) {
                None => true,
                Some(uses) => uses.iter().any(|u| match ids.iter().position(|s| s == u) {
                    Some(pos) => pos <= k,
                    None => true,
                }),
            };
        }
    }
}

/// Statistics of one linearized computational graph and its elimination.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct GraphStats {
    /// Vertices of the graph.
    pub vertices: usize,
    /// Edges of the graph.
    pub edges: usize,
    /// Multiplications of the accumulation.
    pub multiplications: usize,
    /// Additions of the accumulation.
    pub additions: usize,
    /// Subtractions of the accumulation.
    pub subtractions: usize,
    /// Divisions of the accumulation.
    pub divisions: usize,
    /// Non-trivial edges left in the remainder graph.
    pub nontrivial_remainder_edges: usize,
    /// Elimination graphs counted (1 per graph, summed in totals).
    pub graphs: usize,
    /// Vertices elimination can remove or cut: intermediates and
    /// dependents with out-edges (after parallel edges are merged).
    pub inner_vertices: usize,
    /// Intermediate vertices of the graph as linearized.
    pub intermediates: usize,
    /// Cost of the reference's chain under the elimination goal
    /// (operations of the derivative code by default).
    pub chain_cost: u64,
    /// Cost of the elimination chosen.
    pub cost: u64,
    /// Lower bound on the cost of any edge elimination sequence.
    pub lower_bound: u64,
    /// Graphs whose result is proven optimal (among vertex or edge
    /// elimination sequences, see `proof`).
    pub proven: usize,
    /// `vertex` or `edge` when the result is proven optimal among those
    /// sequences.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proof: Option<&'static str>,
    /// Which part of the search found the result.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub found_by: &'static str,
    /// Microseconds spent choosing the elimination.
    pub micros: u64,
}

impl GraphStats {
    /// Adds another graph's counts.
    pub fn add(&mut self, o: &GraphStats) {
        self.vertices += o.vertices;
        self.edges += o.edges;
        self.multiplications += o.multiplications;
        self.additions += o.additions;
        self.subtractions += o.subtractions;
        self.divisions += o.divisions;
        self.nontrivial_remainder_edges += o.nontrivial_remainder_edges;
        self.graphs += o.graphs;
        self.inner_vertices += o.inner_vertices;
        self.intermediates += o.intermediates;
        self.chain_cost += o.chain_cost;
        self.cost += o.cost;
        self.lower_bound += o.lower_bound;
        self.proven += o.proven;
        self.micros += o.micros;
    }
}

/// The linearized computational graph of a sequence.
pub struct SeqGraph {
    /// The graph.
    pub lcg: xaif_elim::Lcg,
    /// Vertex of each independent.
    pub independent_vertex: Vec<xaif_elim::VertexId>,
    /// Vertex of each active node of each item: `node_vertex[item][node]`.
    pub node_vertex: Vec<Vec<Option<xaif_elim::VertexId>>>,
    /// The definition vertex of each item.
    pub def_vertex: Vec<Option<xaif_elim::VertexId>>,
    /// The partial instance of each variable label: (item, edge index).
    pub variables: Vec<(usize, usize)>,
}

/// Builds the graph of a sequence.
pub fn build_graph(seq: &Sequence) -> Result<SeqGraph, xaif_elim::GraphError> {
    build(seq, false).map(|(graph, _)| graph)
}

/// The graph the reference engine builds for a sequence, when it differs
/// from [`build_graph`]'s: every read of an independent that the
/// reference's flattening does not identify with an earlier read
/// ([`Item::Active::unshared`]) is a vertex of its own. The reference's
/// chains run on that graph, so its result bounds what the derivative
/// code may cost ([`xaif_elim::optimize_against`]); the code is generated
/// from [`build_graph`]'s graph. Independents come first, in order of
/// their first read, as there.
pub fn build_reference_graph(
    seq: &Sequence,
) -> Result<Option<xaif_elim::Lcg>, xaif_elim::GraphError> {
    build(seq, true).map(|(graph, differs)| differs.then_some(graph.lcg))
}

/// [`build_graph`], or with `split` [`build_reference_graph`] (then
/// without `independent_vertex`), and whether an independent has more than
/// one vertex.
fn build(seq: &Sequence, split: bool) -> Result<(SeqGraph, bool), xaif_elim::GraphError> {
    use xaif_elim::{Label, Lcg, VarId, VertexKind};
    let mut lcg = Lcg::new();
    let mut independent_vertex: Vec<Option<xaif_elim::VertexId>> =
        vec![None; seq.independents.len()];
    // With `split`, the vertex of each read of an independent.
    let mut read_vertex: FxHashMap<(usize, usize), xaif_elim::VertexId> = FxHashMap::default();
    let mut differs = false;
    if split {
        let mut vertices = vec![0usize; seq.independents.len()];
        let mut shared: Vec<Option<xaif_elim::VertexId>> = vec![None; seq.independents.len()];
        for (k, item) in seq.items.iter().enumerate() {
            let Item::Active {
                lin,
                sources,
                unshared,
                ..
            } = item
            else {
                continue;
            };
            for n in 0..lin.dag.nodes.len() {
                if !lin.active[n] || !matches!(lin.dag.nodes[n], Node::Var(_)) {
                    continue;
                }
                let Some(Source::Independent(i)) = sources.get(&n) else {
                    continue;
                };
                let i = *i;
                let own = unshared.binary_search(&n).is_ok();
                let v = match shared[i] {
                    Some(v) if !own => v,
                    _ => {
                        let name = format!("{}#{}", seq.independents[i].key, vertices[i]);
                        let v = lcg.add_named_vertex(VertexKind::Independent, name);
                        vertices[i] += 1;
                        differs |= vertices[i] > 1;
                        if !own {
                            shared[i] = Some(v);
                        }
                        v
                    }
                };
                read_vertex.insert((k, n), v);
            }
        }
    } else {
        for (i, ind) in seq.independents.iter().enumerate() {
            independent_vertex[i] =
                Some(lcg.add_named_vertex(VertexKind::Independent, ind.key.clone()));
        }
    }
    let mut node_vertex = Vec::with_capacity(seq.items.len());
    let mut def_vertex = vec![None; seq.items.len()];
    let mut variables = Vec::new();
    for (k, item) in seq.items.iter().enumerate() {
        let Item::Active {
            lin,
            sources,
            dependent,
            lhs,
            ..
        } = item
        else {
            node_vertex.push(Vec::new());
            continue;
        };
        let mut nv = vec![None; lin.dag.nodes.len()];
        for n in lin.dag.postorder(lin.dag.root) {
            if !lin.active[n] {
                continue;
            }
            nv[n] = match &lin.dag.nodes[n] {
                Node::Var(_) => match sources.get(&n) {
                    Some(Source::Independent(_)) if split => read_vertex.get(&(k, n)).copied(),
                    Some(Source::Independent(i)) => independent_vertex[*i],
                    Some(Source::Def(d)) => def_vertex[*d],
                    None => None,
                },
                Node::Op { .. } => Some(lcg.add_vertex(VertexKind::Intermediate)),
                _ => None,
            };
        }
        for (e, edge) in lin.edges.iter().enumerate() {
            let (Some(from), Some(to)) = (nv[edge.from], nv[edge.to]) else {
                continue;
            };
            let label = match &edge.partial {
                EdgePartial::Unit => Label::Unit,
                EdgePartial::MinusOne => Label::MinusOne,
                EdgePartial::Constant(c) => Label::Constant(*c),
                EdgePartial::Instance { .. } => {
                    variables.push((k, e));
                    Label::Variable(VarId((variables.len() - 1) as u32))
                }
            };
            lcg.add_edge(from, to, label)?;
        }
        let root = lin.dag.root;
        let def = match (&lin.dag.nodes[root], nv[root]) {
            (Node::Op { .. }, Some(v)) => v,
            (_, leaf) => {
                let v = lcg.add_vertex(VertexKind::Intermediate);
                if let Some(leaf) = leaf {
                    lcg.add_edge(leaf, v, Label::Unit)?;
                }
                v
            }
        };
        let kind = if *dependent {
            VertexKind::Dependent
        } else {
            VertexKind::Intermediate
        };
        lcg.set_kind(def, kind)?;
        let _ = lhs;
        def_vertex[k] = Some(def);
        node_vertex.push(nv);
    }
    let independent_vertex = independent_vertex.into_iter().flatten().collect();
    Ok((
        SeqGraph {
            lcg,
            independent_vertex,
            node_vertex,
            def_vertex,
            variables,
        },
        differs,
    ))
}
