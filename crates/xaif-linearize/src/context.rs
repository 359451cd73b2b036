//! What the transformation needs to know about a program: symbol
//! resolution, activity, storage identity for alias decisions, static shapes
//! and types of expressions, and the DU-UD chains.

use std::fmt::Write as _;

use rustc_hash::{FxHashMap, FxHashSet};
use xaif_model::{
    base_name, index::SymbolType, Attrs, Decoration, Expr, ExprGraph, ExprVertexKind, IndexTriplet,
    Program, RefGraph, RefVertexKind, ScopeId, SymbolId, SymbolIndex, VarRef,
};

use crate::dag::{Dag, Node};

/// Where a variable's storage lives, for alias decisions: a symbol, or a
/// global unified by name (scope-1 variables of different routines that are
/// one COMMON or module variable).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Storage {
    /// A symbol of a routine or module scope (or a scope-1 temporary).
    Symbol(SymbolId),
    /// A scope-1 variable, by its name without the `_<n>` suffix.
    Global(String),
}

/// The static type of an expression value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    /// Real.
    Real,
    /// Integer.
    Integer,
    /// Logical.
    Bool,
    /// Anything else (strings, opaque).
    Other,
}

/// The static shape of an expression value.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// Rank (0 for a scalar).
    pub rank: usize,
    /// Extents when they are known at transformation time.
    pub extents: Option<Vec<i64>>,
}

impl Shape {
    /// A scalar.
    pub const SCALAR: Shape = Shape {
        rank: 0,
        extents: None,
    };

    /// Whether the value is a scalar.
    pub fn is_scalar(&self) -> bool {
        self.rank == 0
    }
}

/// Program-wide facts for the transformation.
pub struct Ctx<'a> {
    /// The input program.
    pub p: &'a Program,
    /// Symbol lookup.
    pub symbols: SymbolIndex,
    /// DU-UD sets by key.
    pub duud: FxHashMap<String, Vec<String>>,
    /// The global scope (`vertex_id="1"`).
    pub global_scope: Option<ScopeId>,
    /// Symbols forced passive (`-p`).
    pub forced_passive: FxHashSet<SymbolId>,
    /// How the front end decorated names (`-F`).
    pub decoration: Decoration,
    /// Routines without a body that have hand-written wrappers (`-w`), as
    /// the user named them.
    pub wrappers: Vec<String>,
}

impl<'a> Ctx<'a> {
    /// Facts about `p`; `passive_names` are forced passive (matched against
    /// symbol ids and their names without the numeric suffix, ignoring
    /// case).
    pub fn new(p: &'a Program, passive_names: &[String]) -> Self {
        Self::with_names(p, passive_names, Decoration::Open64, &[])
    }

    /// Facts about `p` with the front end's naming style (`-F`) and the
    /// routines with hand-written wrappers (`-w`); `passive_names` are
    /// matched under that style.
    pub fn with_names(
        p: &'a Program,
        passive_names: &[String],
        decoration: Decoration,
        wrappers: &[String],
    ) -> Self {
        let symbols = SymbolIndex::new(p);
        let mut duud = FxHashMap::default();
        if let Some(map) = &p.duud_map {
            for set in &map.sets {
                if let Some(key) = set.attrs.get("key") {
                    duud.insert(
                        key.to_string(),
                        set.ids
                            .iter()
                            .map(|i| i.get("idRef").unwrap_or("").to_string())
                            .collect(),
                    );
                }
            }
        }
        let forced_passive = if passive_names.is_empty() {
            FxHashSet::default()
        } else {
            p.symbols
                .iter()
                .filter(|(_, s)| {
                    passive_names
                        .iter()
                        .any(|n| decoration.names(s.name(), false, n))
                })
                .map(|(id, _)| id)
                .collect()
        };
        Ctx {
            p,
            global_scope: symbols.scope("1"),
            symbols,
            duud,
            forced_passive,
            decoration,
            wrappers: wrappers.to_vec(),
        }
    }

    /// Whether the routine `symbol_id` (one without a body) has a
    /// hand-written wrapper (`-w`).
    pub fn has_wrapper(&self, symbol_id: &str) -> bool {
        self.wrappers
            .iter()
            .any(|w| self.decoration.names(symbol_id, true, w))
    }

    /// The symbol a reference names.
    pub fn symbol_of(&self, g: &RefGraph) -> Option<SymbolId> {
        g.symbol_ref().and_then(|a| self.symbols.resolve(a))
    }

    /// Whether a symbol carries derivatives: the front end marked it
    /// active, it is real, and `-p` does not force it passive.
    pub fn symbol_active(&self, s: SymbolId) -> bool {
        let sym = &self.p.symbols[s];
        sym.is_active() && sym.ty() == SymbolType::Real && !self.forced_passive.contains(&s)
    }

    /// Whether a reference denotes an active variable.
    pub fn ref_active(&self, g: &RefGraph) -> bool {
        self.symbol_of(g).is_some_and(|s| self.symbol_active(s))
    }

    /// Whether a reference denotes a complex variable (whose values carry
    /// no derivative: see [`crate::linearize::complex_valued`]).
    pub fn ref_complex(&self, g: &RefGraph) -> bool {
        self.symbol_of(g)
            .is_some_and(|s| self.p.symbols[s].ty() == SymbolType::Complex)
    }

    /// The storage of a symbol.
    pub fn storage(&self, s: SymbolId) -> Storage {
        let sym = &self.p.symbols[s];
        if Some(sym.scope) == self.global_scope && !sym.is_temp() {
            Storage::Global(base_name(sym.name()))
        } else {
            Storage::Symbol(s)
        }
    }

    /// The statements a `du_ud` key names (`""` stands for outside the
    /// routine). `None` when there is no information (no key, key 0, or a
    /// key without a set).
    pub fn chain(&self, attrs: &Attrs) -> Option<&[String]> {
        let key = attrs.get("du_ud")?;
        if key == "0" {
            return None;
        }
        self.duud
            .get(key)
            .map(Vec::as_slice)
            .filter(|s| !s.is_empty())
    }

    /// The type of a variable.
    pub fn var_type(&self, g: &RefGraph) -> ValueType {
        match self.symbol_of(g).map(|s| self.p.symbols[s].ty()) {
            Some(SymbolType::Real) => ValueType::Real,
            Some(SymbolType::Integer) => ValueType::Integer,
            Some(SymbolType::Bool) => ValueType::Bool,
            _ => ValueType::Other,
        }
    }

    /// Why `g` cannot enter derivative code, when one of its subscripts
    /// is a vector subscript: an index whose value is an integer array
    /// not known to hold exactly one element (an integer array of several
    /// or of a run-time number of elements, `maxloc` of a matrix).
    ///
    /// Shapes and propagation take every single index as selecting one
    /// element ([`Ctx::ref_shape`]): such a reference would be
    /// differentiated as one element where it names a section (an adjoint
    /// summing where it should scatter, an index taped as one integer), and
    /// where its indices repeat, Fortran's copy of a vector-subscripted
    /// argument in and out keeps only one increment of an adjoint. An
    /// index array of exactly one element (`x(maxloc(x))` of a vector)
    /// selects one element and is taped whole.
    pub fn vector_subscript(&self, g: &RefGraph) -> Option<String> {
        for triplets in g.subscripts() {
            for t in triplets {
                let (Some(e), None, None) = (&t.index, &t.bound, &t.stride) else {
                    continue;
                };
                if e.vertices.len() == 1 && matches!(e.vertices[0].kind, ExprVertexKind::Constant) {
                    continue;
                }
                let Some(dag) = Dag::from_expr(e) else {
                    continue;
                };
                let shape = self.infer(&dag)[dag.root].1.clone();
                if shape.rank == 0 {
                    continue;
                }
                let size = match &shape.extents {
                    Some(extents) => {
                        let n: i64 = extents.iter().product();
                        if n == 1 {
                            continue;
                        }
                        format!("an integer array of {n} elements")
                    }
                    None => "an integer array of run-time size".to_string(),
                };
                let name = g.symbol_ids().map_or("?", |(_, name)| name);
                let index = match (e.vertices.as_slice(), e.edges.is_empty()) {
                    ([v], true) => match &v.kind {
                        ExprVertexKind::VariableReference(r) => r
                            .symbol_ids()
                            .map_or("an expression".to_string(), |(_, n)| format!("`{n}`")),
                        _ => "an expression".to_string(),
                    },
                    _ => "an expression".to_string(),
                };
                return Some(format!(
                    "`{name}` subscripted by {index}, {size} (a vector subscript): derivative code is generated only for subscripts that select one element each (an index array of exactly one element is taped whole)"
                ));
            }
        }
        None
    }

    /// The static shape of a reference.
    pub fn ref_shape(&self, g: &RefGraph) -> Shape {
        let Some(s) = self.symbol_of(g) else {
            return Shape::SCALAR;
        };
        let sym = &self.p.symbols[s];
        let rank = sym.rank();
        let declared = if sym.bounds.len() == rank && rank > 0 {
            Some(sym.source_bounds())
        } else {
            None
        };
        let subs = g.subscripts();
        let Some(triplets) = subs.last() else {
            return Shape {
                rank,
                extents: declared.map(|b| b.iter().map(|(lo, hi)| (hi - lo + 1).max(0)).collect()),
            };
        };
        let mut out_rank = 0;
        let mut extents = Some(Vec::new());
        for (d, t) in triplets.iter().enumerate() {
            if t.bound.is_none() && t.stride.is_none() && t.index.is_some() {
                continue;
            }
            out_rank += 1;
            let dim = declared.as_ref().and_then(|b| b.get(d).copied());
            let lo = t.index.as_ref().map(const_int).unwrap_or(dim.map(|b| b.0));
            let hi = t.bound.as_ref().map(const_int).unwrap_or(dim.map(|b| b.1));
            let st = t.stride.as_ref().map(const_int).unwrap_or(Some(1));
            match (lo, hi, st, extents.as_mut()) {
                (Some(lo), Some(hi), Some(st), Some(ext)) if st != 0 => {
                    ext.push(((hi - lo + st) / st).max(0))
                }
                _ => extents = None,
            }
        }
        Shape {
            rank: out_rank,
            extents,
        }
    }

    /// Type and shape of every node of `dag`.
    pub fn infer(&self, dag: &Dag) -> Vec<(ValueType, Shape)> {
        let mut out = vec![(ValueType::Other, Shape::SCALAR); dag.nodes.len()];
        for n in dag.postorder(dag.root) {
            out[n] = match &dag.nodes[n] {
                Node::Var(r) => (self.var_type(&r.graph), self.ref_shape(&r.graph)),
                Node::Const(a) => (
                    match a.get("type") {
                        Some("integer") => ValueType::Integer,
                        Some("bool") => ValueType::Bool,
                        Some("real") | Some("double") => ValueType::Real,
                        _ => ValueType::Other,
                    },
                    Shape::SCALAR,
                ),
                Node::Other(_) => (ValueType::Other, Shape::SCALAR),
                Node::Op {
                    attrs,
                    boolean,
                    args,
                } => {
                    let name = attrs.get("name").unwrap_or("");
                    let arg = |k: usize| args.get(k).map(|&a| out[a].clone());
                    let widest = args
                        .iter()
                        .map(|&a| out[a].1.clone())
                        .max_by_key(|s| (s.rank, s.extents.is_some()))
                        .unwrap_or(Shape::SCALAR);
                    let numeric = if args.iter().all(|&a| out[a].0 == ValueType::Integer) {
                        ValueType::Integer
                    } else {
                        ValueType::Real
                    };
                    if *boolean || name.starts_with("string_") {
                        (ValueType::Bool, widest)
                    } else {
                        match name {
                            "size" | "lbound" | "ubound" | "len" => {
                                (ValueType::Integer, Shape::SCALAR)
                            }
                            "present" | "allocated" => (ValueType::Bool, Shape::SCALAR),
                            "int_scal" | "nint_scal" => (ValueType::Integer, widest),
                            "real_scal" => (ValueType::Real, widest),
                            "sum_arr" | "nc_maxval" | "nc_minval" | "maxval" | "minval" => (
                                arg(0).map(|a| a.0).unwrap_or(ValueType::Real),
                                Shape::SCALAR,
                            ),
                            "maxloc_arr" | "minloc_arr" | "shape_arr" => (
                                ValueType::Integer,
                                Shape {
                                    rank: 1,
                                    extents: arg(0).map(|a| vec![a.1.rank.max(1) as i64]),
                                },
                            ),
                            "transpose_arr" => (
                                numeric,
                                Shape {
                                    rank: 2,
                                    extents: arg(0).and_then(|a| a.1.extents).map(|mut e| {
                                        e.reverse();
                                        e
                                    }),
                                },
                            ),
                            "reshape_arr" => (
                                arg(0).map(|a| a.0).unwrap_or(ValueType::Real),
                                Shape {
                                    rank: arg(1)
                                        .and_then(|a| a.1.extents)
                                        .and_then(|e| e.first().copied())
                                        .unwrap_or(1)
                                        as usize,
                                    extents: None,
                                },
                            ),
                            _ => (numeric, widest),
                        }
                    }
                }
            };
        }
        out
    }
}

fn const_int(e: &Expr) -> Option<i64> {
    if e.vertices.len() != 1 {
        return None;
    }
    let v = &e.vertices[0];
    if matches!(v.kind, ExprVertexKind::Constant) {
        v.attrs.get("value")?.trim().parse().ok()
    } else {
        None
    }
}

/// Number of vertices up to which an expression's canonical text spells
/// out shared subexpressions at every use (the front end's trees);
/// beyond it, the text names each shared vertex once.
const TREE_TEXT_LIMIT: usize = 1 << 16;

/// A canonical text of an expression, for comparing subscripts.
///
/// Written with an explicit stack (expressions are flat in XAIF, so their
/// depth is bounded only by the file). An expression whose tree would have
/// more than [`TREE_TEXT_LIMIT`] vertices (a subexpression shared at every
/// level repeats exponentially often) gets a text that lists its vertices
/// once instead; it never equals a tree text, so such subscripts are only
/// ever taken to be different, which is the conservative answer.
pub fn expr_text(e: &Expr) -> String {
    // One leaf and no edge (a constant or a variable subscript, the usual
    // case): its label, as the walk below would write it.
    if let ([vertex], true) = (e.vertices.as_slice(), e.edges.is_empty()) {
        match &vertex.kind {
            ExprVertexKind::Constant => {
                return vertex.attrs.get("value").unwrap_or("?").to_string()
            }
            ExprVertexKind::VariableReference(r) => return ref_text(r),
            _ => {}
        }
    }
    let Some(g) = ExprGraph::new(e) else {
        return "?".into();
    };
    let order = g.postorder();
    let mut tree = vec![0usize; e.vertices.len()];
    for &v in &order {
        tree[v] = g.args[v]
            .iter()
            .fold(1usize, |n, &a| n.saturating_add(tree[a]));
    }
    let label = |v: usize| -> String {
        let vertex = &e.vertices[v];
        match &vertex.kind {
            ExprVertexKind::Constant => vertex.attrs.get("value").unwrap_or("?").to_string(),
            ExprVertexKind::VariableReference(r) => ref_text(r),
            _ => vertex
                .attrs
                .get("name")
                .or(vertex.attrs.get("symbol_id"))
                .unwrap_or("?")
                .to_string(),
        }
    };
    let is_leaf = |v: usize| {
        matches!(
            e.vertices[v].kind,
            ExprVertexKind::Constant | ExprVertexKind::VariableReference(_)
        )
    };
    let mut out = String::new();
    if tree[g.root] > TREE_TEXT_LIMIT {
        // Each vertex once, arguments by their position in this list.
        let mut at = vec![0usize; e.vertices.len()];
        out.push('\u{1}');
        for (k, &v) in order.iter().enumerate() {
            at[v] = k;
            out.push_str(&label(v));
            if !is_leaf(v) {
                let args: Vec<String> = g.args[v].iter().map(|a| format!("#{}", at[*a])).collect();
                let _ = write!(out, "({})", args.join(","));
            }
            out.push(';');
        }
        return out;
    }
    enum Task<'a> {
        Text(&'a str),
        Visit(usize),
    }
    let mut stack = vec![Task::Visit(g.root)];
    while let Some(task) = stack.pop() {
        match task {
            Task::Text(t) => out.push_str(t),
            Task::Visit(v) => {
                out.push_str(&label(v));
                if !is_leaf(v) {
                    // Pushed in reverse: popped as `(a,b,…)`.
                    stack.push(Task::Text(")"));
                    for (i, &a) in g.args[v].iter().enumerate().rev() {
                        stack.push(Task::Visit(a));
                        if i > 0 {
                            stack.push(Task::Text(","));
                        }
                    }
                    stack.push(Task::Text("("));
                }
            }
        }
    }
    out
}

fn triplet_text(t: &IndexTriplet) -> String {
    let part = |x: &Option<Expr>| x.as_ref().map(expr_text).unwrap_or_default();
    if t.bound.is_none() && t.stride.is_none() {
        part(&t.index)
    } else {
        format!("{}:{}:{}", part(&t.index), part(&t.bound), part(&t.stride))
    }
}

/// A canonical text of a variable reference (`scope:symbol(sub,…)`).
pub fn ref_text(g: &RefGraph) -> String {
    let mut s = String::new();
    match g.symbol_ids() {
        Some((scope, sym)) => {
            s.reserve(scope.len() + 1 + sym.len());
            s.push_str(scope);
            s.push(':');
            s.push_str(sym);
        }
        None => s.push('?'),
    }
    for v in g.chain() {
        if let RefVertexKind::ArrayElement { triplets } = &v.kind {
            s.push('(');
            for (i, t) in triplets.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                s.push_str(&triplet_text(t));
            }
            s.push(')');
        }
    }
    s
}

/// The variables a reference's subscripts read.
pub fn subscript_symbols(ctx: &Ctx<'_>, g: &RefGraph, out: &mut Vec<SymbolId>) {
    for triplets in g.subscripts() {
        for t in triplets {
            for e in [&t.index, &t.bound, &t.stride].into_iter().flatten() {
                expr_symbols(ctx, e, out);
            }
        }
    }
}

/// The variables an expression reads (including in subscripts).
pub fn expr_symbols(ctx: &Ctx<'_>, e: &Expr, out: &mut Vec<SymbolId>) {
    for v in &e.vertices {
        if let ExprVertexKind::VariableReference(r) = &v.kind {
            if let Some(s) = ctx.symbol_of(r) {
                out.push(s);
            }
            subscript_symbols(ctx, r, out);
        }
    }
}

/// How two references may overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// Certainly different storage.
    No,
    /// Possibly the same storage.
    May,
    /// Certainly the same storage (same variable, same subscripts).
    Must,
}

/// Whether two references overlap. Different variables never alias
/// (Fortran forbids writing through aliased dummies); the same variable
/// with identical subscripts is the same storage; different constant
/// subscripts are different storage; anything else may overlap.
pub fn overlap(ctx: &Ctx<'_>, a: &VarRef, b: &VarRef) -> Overlap {
    let (Some(sa), Some(sb)) = (ctx.symbol_of(&a.graph), ctx.symbol_of(&b.graph)) else {
        return Overlap::May;
    };
    if ctx.storage(sa) != ctx.storage(sb) {
        return Overlap::No;
    }
    let (ta, tb) = (a.graph.subscripts(), b.graph.subscripts());
    match (ta.last(), tb.last()) {
        (None, None) => Overlap::Must,
        (Some(x), Some(y)) if x.len() == y.len() => {
            let texts = |t: &[IndexTriplet]| t.iter().map(triplet_text).collect::<Vec<_>>();
            let (xs, ys) = (texts(x), texts(y));
            if xs == ys {
                return Overlap::Must;
            }
            // Two element references with a different constant index in
            // some dimension cannot overlap.
            for (p, q) in x.iter().zip(y.iter()) {
                let single = |t: &IndexTriplet| {
                    if t.bound.is_none() && t.stride.is_none() {
                        t.index.as_ref().and_then(const_int)
                    } else {
                        None
                    }
                };
                if let (Some(i), Some(j)) = (single(p), single(q)) {
                    if i != j {
                        return Overlap::No;
                    }
                }
            }
            Overlap::May
        }
        _ => Overlap::May,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xaif_model::{Attrs, ExprBuilder};

    /// A single leaf is written as the general walk writes it: its label.
    #[test]
    fn texts_of_leaves_and_operations() {
        let mut b = ExprBuilder::new();
        b.constant("integer", "2");
        assert_eq!(expr_text(&b.finish()), "2");
        let mut b = ExprBuilder::new();
        b.variable(Attrs::new(), "3", "X");
        assert_eq!(expr_text(&b.finish()), "3:X");
        let mut b = ExprBuilder::new();
        let x = b.variable(Attrs::new(), "3", "X");
        let c = b.constant("integer", "2");
        b.intrinsic("add_scal_scal", &[x, c]);
        assert_eq!(expr_text(&b.finish()), "add_scal_scal(3:X,2)");
    }
}
