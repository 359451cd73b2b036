//! Lookups and typed views that passes use after the validation gate.
//!
//! The IR keeps XAIF ids as text; these structures resolve them to handles
//! once. They are derived data, rebuilt on demand: a pass that adds symbols
//! or vertices builds a fresh index afterwards. On a program that passed
//! [`crate::validate_program`] every lookup of an id that occurs in the
//! program succeeds.

use compact_str::CompactString;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::attrs::Attrs;
use crate::model::*;

/// What a symbol names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    /// A variable.
    Variable,
    /// A subroutine or function.
    Subroutine,
    /// A pointer.
    Pointer,
}

/// The type of a symbol or constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymbolType {
    /// `real` (and constants of type `double`).
    Real,
    /// `integer`.
    Integer,
    /// `bool`.
    Bool,
    /// `complex`.
    Complex,
    /// `char`.
    Char,
    /// `string`.
    String,
    /// `opaque`.
    Opaque,
    /// `void`.
    Void,
}

impl SymbolType {
    /// Parses an XAIF type name (`double` is a real constant).
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "real" | "double" => SymbolType::Real,
            "integer" => SymbolType::Integer,
            "bool" => SymbolType::Bool,
            "complex" => SymbolType::Complex,
            "char" => SymbolType::Char,
            "string" => SymbolType::String,
            "opaque" => SymbolType::Opaque,
            "void" => SymbolType::Void,
            _ => return None,
        })
    }

    /// The XAIF name.
    pub fn name(self) -> &'static str {
        match self {
            SymbolType::Real => "real",
            SymbolType::Integer => "integer",
            SymbolType::Bool => "bool",
            SymbolType::Complex => "complex",
            SymbolType::Char => "char",
            SymbolType::String => "string",
            SymbolType::Opaque => "opaque",
            SymbolType::Void => "void",
        }
    }
}

/// Every shape a symbol may declare: `void` (no value), then the rank
/// names.
pub const SYMBOL_SHAPES: [&str; 9] = [
    "void",
    "scalar",
    "vector",
    "matrix",
    "three_tensor",
    "four_tensor",
    "five_tensor",
    "six_tensor",
    "seven_tensor",
];

/// The `annotation` of the `Entry` of an adjoint's checkpoint-restoring
/// graphs (placeholders 6, 9 and 13) when their restores read the values in
/// the order they were stored (the reference engine's `-f`: one checkpoint
/// file per store, read from its start) instead of taking them off a stack
/// in reverse. The reference engine writes `cp_entry` either way; a program
/// that is to be run must say which discipline its restores need, and this
/// annotation, which the schema allows and the back end ignores (it reads
/// only `{...}` tags from annotations), does.
pub const STORE_ORDER_ENTRY: &str = "cp_entry_store_order";

/// The `annotation` word xaifb's type-change output puts on the `Entry` of
/// every routine. Type-change output (argument conversions only) and
/// tangent-linear output of a program in which nothing is active hold the
/// same kind of code; only the first must not be run as a derivative, and
/// this mark, which the schema allows and the back end ignores, tells them
/// apart.
pub const TYPE_CHANGE_ENTRY: &str = "type_change";

/// The rank names of XAIF shapes, index = rank.
pub const SHAPES: &[&str] = SYMBOL_SHAPES.split_at(1).1;

/// How the front end decorated the names it wrote (the reference driver's
/// `-F`): Open64 appends `_<digits>` to every symbol and `__<digits>` to
/// user routines (`X_1`, `head__24`); other front ends write names as they
/// are. Names users give on the command line (`-p`, `-w`) and names the
/// trace mode prints are matched and shown without the decoration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Decoration {
    /// Open64's decorations (`OPEN64_STYLE`, the default).
    #[default]
    Open64,
    /// No decorations (`NO_STYLE`).
    Plain,
}

impl Decoration {
    /// The style named by the reference driver's `-F` argument.
    pub fn from_flag(s: &str) -> Option<Self> {
        match s {
            "OPEN64_STYLE" => Some(Decoration::Open64),
            "NO_STYLE" => Some(Decoration::Plain),
            _ => None,
        }
    }

    /// The name the user wrote for symbol `symbol_id`: with Open64
    /// decorations `X_1` → `X` and, for a routine, `foo__24` → `foo`; a
    /// name without a numeric suffix is kept whole.
    pub fn plain_name(self, symbol_id: &str, routine: bool) -> String {
        match self {
            Decoration::Plain => symbol_id.to_string(),
            Decoration::Open64 => match symbol_id.rfind('_') {
                Some(i)
                    if i + 1 < symbol_id.len()
                        && symbol_id[i + 1..].bytes().all(|b| b.is_ascii_digit()) =>
                {
                    let stem = &symbol_id[..i];
                    if routine {
                        stem.strip_suffix('_').unwrap_or(stem).to_string()
                    } else {
                        stem.to_string()
                    }
                }
                _ => symbol_id.to_string(),
            },
        }
    }

    /// Whether `symbol_id` is the symbol a user calls `name` (case
    /// ignored, as Fortran does).
    pub fn names(self, symbol_id: &str, routine: bool, name: &str) -> bool {
        self.plain_name(symbol_id, routine)
            .eq_ignore_ascii_case(name)
            || symbol_id.eq_ignore_ascii_case(name)
    }
}

/// `head__24` → `head`, `OpenAD_head__28` → `openad_head`,
/// `ad_roehf5__24` → `ad_roehf5`: the front end's numeric suffix and the
/// underscores before it removed, lower case. The name drivers, harness
/// descriptions and users give routines by (`--independent head:x`).
pub fn fortran_routine_name(symbol_id: &str) -> String {
    symbol_id
        .trim_end_matches(|c: char| c.is_ascii_digit())
        .trim_end_matches('_')
        .to_ascii_lowercase()
}

/// `G_29` → `g`: the front end's `_N` suffix removed, lower case. The name
/// under which scope-1 variables of different scopes are one global, and
/// the name users give variables by.
pub fn base_name(symbol_id: &str) -> String {
    let lower = symbol_id.to_ascii_lowercase();
    match lower.rfind('_') {
        Some(i) if i + 1 < lower.len() && lower[i + 1..].bytes().all(|b| b.is_ascii_digit()) => {
            lower[..i].to_string()
        }
        _ => lower,
    }
}

/// The rank of an XAIF shape name (`void` counts as scalar).
pub fn shape_rank(shape: &str) -> Option<usize> {
    if shape == "void" {
        return Some(0);
    }
    SHAPES.iter().position(|s| *s == shape)
}

impl Symbol {
    /// `symbol_id`.
    pub fn name(&self) -> &str {
        self.attrs.get("symbol_id").unwrap_or("")
    }

    /// `kind` (default `variable`).
    pub fn kind(&self) -> SymbolKind {
        match self.attrs.get("kind") {
            Some("subroutine") => SymbolKind::Subroutine,
            Some("pointer") => SymbolKind::Pointer,
            _ => SymbolKind::Variable,
        }
    }

    /// `type` (default `real`).
    pub fn ty(&self) -> SymbolType {
        self.attrs
            .get("type")
            .and_then(SymbolType::parse)
            .unwrap_or(SymbolType::Real)
    }

    /// The rank given by `shape` (default scalar).
    pub fn rank(&self) -> usize {
        self.attrs.get("shape").and_then(shape_rank).unwrap_or(0)
    }

    /// `active` (schema default `true`).
    pub fn is_active(&self) -> bool {
        self.attrs.flag("active", true)
    }

    /// `temp` (default `false`).
    pub fn is_temp(&self) -> bool {
        self.attrs.flag("temp", false)
    }

    /// `feType`, the front end's storage type (`F4`, `F8`, `I4`, …).
    pub fn fe_type(&self) -> &str {
        self.attrs.get("feType").unwrap_or("")
    }

    /// Declared bounds `(lower, upper)` in source order (first dimension
    /// first), reversing XAIF's last-dimension-first listing.
    pub fn source_bounds(&self) -> Vec<(i64, i64)> {
        self.bounds
            .iter()
            .rev()
            .map(|b| (b.int("lower").unwrap_or(1), b.int("upper").unwrap_or(0)))
            .collect()
    }
}

impl Routine {
    /// `symbol_id` of the routine.
    pub fn symbol_name(&self) -> &str {
        self.attrs.get("symbol_id").unwrap_or("")
    }

    /// Each formal's position by its (`scope_id`, `symbol_id`): what a call
    /// passing one of the routine's own formals on is matched against.
    pub fn formal_positions(&self) -> FxHashMap<(&str, &str), i64> {
        self.arguments
            .iter()
            .flat_map(|l| l.args.iter())
            .filter_map(|a| {
                Some((
                    (a.get("scope_id")?, a.get("symbol_id")?),
                    a.int("position")?,
                ))
            })
            .collect()
    }

    /// The side-effect list of `kind`, if present.
    pub fn side_effect(&self, kind: SideEffectKind) -> Option<&SideEffectList> {
        self.side_effects.iter().find(|l| l.kind == kind)
    }

    /// The plain body, or the replacement with `placeholder`.
    pub fn graph(&self, placeholder: Option<&str>) -> Option<CfgId> {
        match (&self.body, placeholder) {
            (RoutineBody::Graph(cfg), None) => Some(*cfg),
            (RoutineBody::Replacements(list), Some(ph)) => list
                .iter()
                .find(|r| r.attrs.get("placeholder") == Some(ph))
                .map(|r| r.cfg),
            _ => None,
        }
    }

    /// The attributes of the `ReplacementList` a transformation writes for
    /// this routine: its identity (`vertex_id`, `symbol_id`, `scope_id`,
    /// `controlflowgraph_scope_id`, `annotation`, those it has) and the
    /// back end's `template_name`.
    pub fn replacement_list_attrs(&self, template: &str) -> Attrs {
        let mut attrs = Attrs::new();
        for key in [
            "vertex_id",
            "symbol_id",
            "scope_id",
            "controlflowgraph_scope_id",
            "annotation",
        ] {
            if let Some(v) = self.attrs.get(key) {
                attrs.push(key, v);
            }
        }
        attrs.push("template_name", template);
        attrs
    }

    /// Whether the routine has code (front ends write empty graphs for
    /// modules).
    pub fn has_body(&self, p: &Program) -> bool {
        match &self.body {
            RoutineBody::Graph(cfg) => p.cfgs[*cfg].vertex_ids().next().is_some(),
            RoutineBody::Replacements(list) => !list.is_empty(),
        }
    }
}

impl Program {
    /// The routines in the order the call graph lists them (the order the
    /// transformations visit and write them), edges left out.
    pub fn call_graph_routines(&self) -> impl Iterator<Item = RoutineId> + '_ {
        self.items.iter().filter_map(|i| match i {
            CallGraphItem::Routine(r) => Some(*r),
            CallGraphItem::Edge(_) => None,
        })
    }

    /// The control flow graphs of routine `r` in document order: its body,
    /// or each replacement's.
    pub fn routine_cfgs(&self, r: RoutineId) -> Vec<CfgId> {
        match &self.routines[r].body {
            RoutineBody::Graph(cfg) => vec![*cfg],
            RoutineBody::Replacements(list) => list.iter().map(|rep| rep.cfg).collect(),
        }
    }

    /// The vertices and the statements (basic blocks' statements, loop
    /// initializations and updates) of routine `r`'s graphs, in document
    /// order: what passes that finish one routine at a time rewrite.
    pub fn routine_contents(&self, r: RoutineId) -> (Vec<VertexId>, Vec<StmtId>) {
        let (mut vertices, mut stmts) = (Vec::new(), Vec::new());
        for cfg in self.routine_cfgs(r) {
            for item in &self.cfgs[cfg].items {
                let CfgItem::Vertex(v) = *item else {
                    continue;
                };
                vertices.push(v);
                match &self.vertices[v].kind {
                    VertexKind::BasicBlock(list) => stmts.extend(list.iter().copied()),
                    VertexKind::ForLoop { init, update, .. } => {
                        stmts.extend(init.iter().chain(update.iter()).copied())
                    }
                    _ => {}
                }
            }
        }
        (vertices, stmts)
    }
}

impl Program {
    /// A copy of the program in which every statement is an empty
    /// placeholder (same handles): a transformation that finishes one
    /// routine at a time copies each routine's statements when it gets to
    /// it ([`Program::copy_statements_of`]) instead of holding a copy of
    /// all of them from the start.
    pub fn clone_without_statements(&self) -> Program {
        Program {
            attrs: self.attrs.clone(),
            scope_hierarchy: self.scope_hierarchy.clone(),
            alias_map: self.alias_map.clone(),
            duud_map: self.duud_map.clone(),
            do_map: self.do_map.clone(),
            items: self.items.clone(),
            call_edges: self.call_edges.clone(),
            scopes: self.scopes.clone(),
            symbols: self.symbols.clone(),
            routines: self.routines.clone(),
            cfgs: self.cfgs.clone(),
            vertices: self.vertices.clone(),
            edges: self.edges.clone(),
            stmts: crate::arena::Arena::filled(self.stmts.len(), || Stmt {
                attrs: Attrs::new(),
                kind: StmtKind::Marker,
            }),
        }
    }

    /// Copies the statements of `from`'s routine `r` into this copy of
    /// `from` (made by [`Program::clone_without_statements`]) under the
    /// same handles.
    pub fn copy_statements_of(&mut self, from: &Program, r: RoutineId) {
        for s in from.routine_contents(r).1 {
            self.stmts[s] = from.stmts[s].clone();
        }
    }

    /// Moves routine `r` with its graphs, vertices, edges and statements
    /// into a program of its own (handles renumbered, elements shared
    /// between its graphs kept shared; its only item is the routine; no
    /// scopes or maps), leaving empty values behind. Writing the routine
    /// from there gives the bytes of writing it here, so a finished
    /// routine can be written on another thread while the next one is
    /// made.
    pub fn take_routine(&mut self, r: RoutineId) -> Program {
        let mut part = Program::default();
        let mut routine = std::mem::replace(
            &mut self.routines[r],
            Routine {
                attrs: Attrs::new(),
                arguments: None,
                side_effects: Vec::new(),
                body: RoutineBody::Replacements(Vec::new()),
            },
        );
        let new_r = RoutineId::from_index(0);
        let mut vertices: FxHashMap<VertexId, VertexId> = FxHashMap::default();
        let mut edges: FxHashMap<EdgeId, EdgeId> = FxHashMap::default();
        let mut stmts: FxHashMap<StmtId, StmtId> = FxHashMap::default();
        let mut take_stmt = |this: &mut Program, part: &mut Program, s: &mut StmtId| {
            *s = *stmts.entry(*s).or_insert_with(|| {
                let stmt = std::mem::replace(
                    &mut this.stmts[*s],
                    Stmt {
                        attrs: Attrs::new(),
                        kind: StmtKind::Marker,
                    },
                );
                part.stmts.alloc(stmt)
            });
        };
        let mut cfgs: FxHashMap<CfgId, CfgId> = FxHashMap::default();
        let mut take_cfg = |this: &mut Program, part: &mut Program, cfg: CfgId| -> CfgId {
            if let Some(done) = cfgs.get(&cfg) {
                return *done;
            }
            let new_cfg = CfgId::from_index(part.cfgs.len());
            cfgs.insert(cfg, new_cfg);
            let mut items = std::mem::take(&mut this.cfgs[cfg].items);
            for item in &mut items {
                match item {
                    CfgItem::Edge(e) => {
                        *e = *edges.entry(*e).or_insert_with(|| {
                            let mut edge = std::mem::replace(
                                &mut this.edges[*e],
                                CfgEdge {
                                    attrs: Attrs::new(),
                                    cfg,
                                },
                            );
                            edge.cfg = new_cfg;
                            part.edges.alloc(edge)
                        });
                    }
                    CfgItem::Vertex(v) => {
                        if let Some(done) = vertices.get(v) {
                            *v = *done;
                            continue;
                        }
                        let mut vertex = std::mem::replace(
                            &mut this.vertices[*v],
                            CfgVertex {
                                attrs: Attrs::new(),
                                cfg,
                                kind: VertexKind::Entry,
                            },
                        );
                        vertex.cfg = new_cfg;
                        match &mut vertex.kind {
                            VertexKind::BasicBlock(list) => {
                                for s in list.iter_mut() {
                                    take_stmt(this, part, s);
                                }
                            }
                            VertexKind::ForLoop { init, update, .. } => {
                                for s in init.iter_mut().chain(update.iter_mut()) {
                                    take_stmt(this, part, s);
                                }
                            }
                            _ => {}
                        }
                        let new_v = part.vertices.alloc(vertex);
                        vertices.insert(*v, new_v);
                        *v = new_v;
                    }
                }
            }
            part.cfgs.alloc(Cfg {
                routine: new_r,
                items,
            })
        };
        match &mut routine.body {
            RoutineBody::Graph(cfg) => *cfg = take_cfg(self, &mut part, *cfg),
            RoutineBody::Replacements(list) => {
                for rep in list.iter_mut() {
                    rep.cfg = take_cfg(self, &mut part, rep.cfg);
                }
            }
        }
        part.routines.alloc(routine);
        part.items.push(CallGraphItem::Routine(new_r));
        part
    }
}

impl Stmt {
    /// `statement_id`.
    pub fn id(&self) -> &str {
        self.attrs.get("statement_id").unwrap_or("")
    }
}

/// Resolves `scope_id`/`symbol_id` pairs and scope ids to handles.
#[derive(Clone, Debug, Default)]
pub struct SymbolIndex {
    scopes: FxHashMap<CompactString, (ScopeId, FxHashMap<CompactString, SymbolId>)>,
}

impl SymbolIndex {
    /// Indexes every scope and symbol of `p`.
    pub fn new(p: &Program) -> Self {
        let mut scopes: FxHashMap<CompactString, (ScopeId, FxHashMap<CompactString, SymbolId>)> =
            FxHashMap::default();
        for (id, scope) in p.scopes.iter() {
            let key = CompactString::from(scope.attrs.get("vertex_id").unwrap_or("1"));
            let entry = scopes
                .entry(key)
                .or_insert_with(|| (id, FxHashMap::default()));
            for table in &scope.tables {
                for s in &table.symbols {
                    entry
                        .1
                        .entry(CompactString::from(p.symbols[*s].name()))
                        .or_insert(*s);
                }
            }
        }
        SymbolIndex { scopes }
    }

    /// The scope with XAIF id `scope_id`.
    pub fn scope(&self, scope_id: &str) -> Option<ScopeId> {
        self.scopes.get(scope_id).map(|(s, _)| *s)
    }

    /// The symbol `symbol_id` of scope `scope_id`.
    pub fn symbol(&self, scope_id: &str, symbol_id: &str) -> Option<SymbolId> {
        self.scopes.get(scope_id)?.1.get(symbol_id).copied()
    }

    /// The symbol named by the `scope_id` and `symbol_id` attributes of
    /// `attrs`.
    pub fn resolve(&self, attrs: &Attrs) -> Option<SymbolId> {
        self.symbol(attrs.get("scope_id")?, attrs.get("symbol_id")?)
    }

    /// Registers a symbol added after the index was built.
    pub fn insert(&mut self, scope_id: &str, scope: ScopeId, symbol_id: &str, symbol: SymbolId) {
        self.scopes
            .entry(CompactString::from(scope_id))
            .or_insert_with(|| (scope, FxHashMap::default()))
            .1
            .insert(CompactString::from(symbol_id), symbol);
    }
}

/// The routines of a program by their `symbol_id`.
#[derive(Clone, Debug, Default)]
pub struct RoutineIndex {
    by_symbol: FxHashMap<CompactString, RoutineId>,
}

impl RoutineIndex {
    /// Indexes the routines of `p` that have a body (the first one wins when
    /// several share a symbol).
    pub fn new(p: &Program) -> Self {
        let mut by_symbol = FxHashMap::default();
        for item in &p.items {
            if let CallGraphItem::Routine(r) = item {
                let routine = &p.routines[*r];
                by_symbol
                    .entry(CompactString::from(routine.symbol_name()))
                    .or_insert(*r);
            }
        }
        RoutineIndex { by_symbol }
    }

    /// The routine defined for symbol `symbol_id`.
    pub fn get(&self, symbol_id: &str) -> Option<RoutineId> {
        self.by_symbol.get(symbol_id).copied()
    }
}

/// The adjacency of one control flow graph.
#[derive(Clone, Debug)]
pub struct CfgGraph {
    /// Vertices in document order.
    pub vertices: Vec<VertexId>,
    /// The `Entry` vertex.
    pub entry: Option<VertexId>,
    /// The `Exit` vertex.
    pub exit: Option<VertexId>,
    local: FxHashMap<VertexId, usize>,
    succ: Vec<Vec<(EdgeId, VertexId)>>,
    pred: Vec<Vec<(EdgeId, VertexId)>>,
}

impl CfgGraph {
    /// Builds the adjacency of `cfg`. Edges whose ends do not resolve (only
    /// possible before the gate) are left out.
    pub fn new(p: &Program, cfg: CfgId) -> Self {
        let body = &p.cfgs[cfg];
        let vertices: Vec<VertexId> = body.vertex_ids().collect();
        let mut by_id: FxHashMap<&str, VertexId> = FxHashMap::default();
        let mut local = FxHashMap::default();
        let (mut entry, mut exit) = (None, None);
        for (i, v) in vertices.iter().enumerate() {
            let vertex = &p.vertices[*v];
            by_id
                .entry(vertex.attrs.get("vertex_id").unwrap_or("1"))
                .or_insert(*v);
            local.insert(*v, i);
            match vertex.kind {
                VertexKind::Entry => entry = entry.or(Some(*v)),
                VertexKind::Exit => exit = exit.or(Some(*v)),
                _ => {}
            }
        }
        let mut succ = vec![Vec::new(); vertices.len()];
        let mut pred = vec![Vec::new(); vertices.len()];
        for e in body.edge_ids() {
            let attrs = &p.edges[e].attrs;
            let s = attrs.get("source").and_then(|id| by_id.get(id)).copied();
            let t = attrs.get("target").and_then(|id| by_id.get(id)).copied();
            if let (Some(s), Some(t)) = (s, t) {
                succ[local[&s]].push((e, t));
                pred[local[&t]].push((e, s));
            }
        }
        CfgGraph {
            vertices,
            entry,
            exit,
            local,
            succ,
            pred,
        }
    }

    /// Outgoing edges of `v` with their targets, in document order.
    pub fn successors(&self, v: VertexId) -> &[(EdgeId, VertexId)] {
        &self.succ[self.local[&v]]
    }

    /// Incoming edges of `v` with their sources, in document order.
    pub fn predecessors(&self, v: VertexId) -> &[(EdgeId, VertexId)] {
        &self.pred[self.local[&v]]
    }

    /// Position of `v` in [`CfgGraph::vertices`].
    pub fn local_index(&self, v: VertexId) -> usize {
        self.local[&v]
    }
}

/// The operand structure of one expression graph.
#[derive(Clone, Debug)]
pub struct ExprGraph {
    /// Index of the result vertex (the one without outgoing edges).
    pub root: usize,
    /// For each vertex, its argument vertices by position (1 first).
    pub args: Vec<Vec<usize>>,
}

impl ExprGraph {
    /// Resolves the edges of `e`. `None` for an empty expression or one that
    /// does not pass the gate.
    pub fn new(e: &Expr) -> Option<Self> {
        if e.vertices.is_empty() {
            return None;
        }
        let mut by_id: FxHashMap<&str, usize> = FxHashMap::default();
        for (i, v) in e.vertices.iter().enumerate() {
            by_id
                .entry(v.attrs.get("vertex_id").unwrap_or("1"))
                .or_insert(i);
        }
        let mut with_pos: Vec<Vec<(i64, usize)>> = vec![Vec::new(); e.vertices.len()];
        let mut has_out = vec![false; e.vertices.len()];
        for edge in &e.edges {
            let a = &edge.attrs;
            let s = *by_id.get(a.get("source")?)?;
            let t = *by_id.get(a.get("target")?)?;
            with_pos[t].push((a.int("position")?, s));
            has_out[s] = true;
        }
        let root = has_out.iter().position(|o| !o)?;
        let args = with_pos
            .into_iter()
            .map(|mut v| {
                v.sort_by_key(|(p, _)| *p);
                v.into_iter().map(|(_, s)| s).collect()
            })
            .collect();
        Some(ExprGraph { root, args })
    }

    /// The vertices reachable from the root, every argument before the
    /// operations that use it, each once. Computed with an explicit stack:
    /// expressions are flat in XAIF, so their depth is bounded only by the
    /// size of the file, and passes that evaluate them bottom-up in this
    /// order use no native stack in proportion to it.
    pub fn postorder(&self) -> Vec<usize> {
        let mut seen = vec![false; self.args.len()];
        let mut out = Vec::with_capacity(self.args.len());
        let Some(root_seen) = seen.get_mut(self.root) else {
            return out;
        };
        *root_seen = true;
        let mut stack = vec![(self.root, 0usize)];
        while let Some(top) = stack.last_mut() {
            let (v, i) = *top;
            match self.args[v].get(i) {
                Some(&w) => {
                    top.1 += 1;
                    if !seen[w] {
                        seen[w] = true;
                        stack.push((w, 0));
                    }
                }
                None => {
                    out.push(v);
                    stack.pop();
                }
            }
        }
        out
    }
}

impl RefGraph {
    /// The vertices along the reference path: the symbol reference first,
    /// then each array element reference applied to it. (A reference has
    /// one vertex per subscript and a few at most: the path is kept
    /// inline, and no vertex id is copied.)
    pub fn chain(&self) -> smallvec::SmallVec<[&RefVertex; 4]> {
        if self.edges.is_empty() {
            return self.vertices.iter().collect();
        }
        fn id(v: &RefVertex) -> &str {
            v.attrs.get("vertex_id").unwrap_or("1")
        }
        let is_target = |vid: &str| self.edges.iter().any(|e| e.get("target") == Some(vid));
        let mut current = self.vertices.iter().find(|v| !is_target(id(v)));
        let mut out = smallvec::SmallVec::new();
        while let Some(v) = current {
            if out.len() > self.vertices.len() {
                break;
            }
            out.push(v);
            let vid = id(v);
            current = self
                .edges
                .iter()
                .find(|e| e.get("source") == Some(vid))
                .and_then(|e| e.get("target"))
                .and_then(|t| self.vertices.iter().find(|w| id(w) == t));
        }
        out
    }

    /// The array element references along the path, in order.
    pub fn subscripts(&self) -> Vec<&[IndexTriplet]> {
        self.chain()
            .into_iter()
            .filter_map(|v| match &v.kind {
                RefVertexKind::ArrayElement { triplets } => Some(triplets.as_slice()),
                RefVertexKind::Symbol { .. } => None,
            })
            .collect()
    }
}

/// (callee symbol id, position) of every formal that may be absent: some
/// call leaves it out (an optional argument that is not present;
/// `formalArgCount` or the callee's argument list says how many there
/// are, the `Argument`s which are there), or passes on, whole, a formal of
/// its own routine that may be absent (Fortran lets an absent optional
/// argument reach an optional formal).
pub fn formals_maybe_absent(p: &Program) -> FxHashSet<(String, i64)> {
    // Per routine: its name, its formals ((scope, symbol) -> position) and
    // its calls (callee, positions given, whole references passed).
    struct Call<'a> {
        callee: &'a str,
        given: Vec<i64>,
        whole: Vec<(i64, (&'a str, &'a str))>,
        count: Option<i64>,
    }
    let mut formals: FxHashMap<&str, Vec<i64>> = FxHashMap::default();
    let mut routines = Vec::new();
    for (_, r) in p.routines.iter() {
        let own = r.formal_positions();
        formals.insert(r.symbol_name(), own.values().copied().collect());
        let mut calls = Vec::new();
        if let RoutineBody::Graph(cfg) = &r.body {
            for item in &p.cfgs[*cfg].items {
                let CfgItem::Vertex(v) = item else { continue };
                let VertexKind::BasicBlock(stmts) = &p.vertices[*v].kind else {
                    continue;
                };
                for s in stmts {
                    let s = &p.stmts[*s];
                    let StmtKind::SubroutineCall(args) = &s.kind else {
                        continue;
                    };
                    let mut given = Vec::new();
                    let mut whole = Vec::new();
                    for (i, a) in args.iter().enumerate() {
                        let pos = a.attrs.int("position").unwrap_or(i as i64 + 1);
                        given.push(pos);
                        if let ArgValue::Variable(v) = &a.value {
                            if v.graph.subscripts().is_empty() {
                                if let Some(ids) = v.graph.symbol_ids() {
                                    whole.push((pos, ids));
                                }
                            }
                        }
                    }
                    calls.push(Call {
                        callee: s.attrs.get("symbol_id").unwrap_or(""),
                        given,
                        whole,
                        count: s.attrs.int("formalArgCount"),
                    });
                }
            }
        }
        routines.push((r.symbol_name(), own, calls));
    }
    let mut out = FxHashSet::default();
    for (_, _, calls) in &routines {
        for c in calls {
            let mut expected: Vec<i64> = formals.get(c.callee).cloned().unwrap_or_default();
            if let Some(n) = c.count {
                for k in 1..=n {
                    if !expected.contains(&k) {
                        expected.push(k);
                    }
                }
            }
            for pos in expected {
                if !c.given.contains(&pos) {
                    out.insert((c.callee.to_string(), pos));
                }
            }
        }
    }
    // Absent formals passed on: to a fixed point (each round adds a
    // position or stops).
    loop {
        let mut added = false;
        for (name, own, calls) in &routines {
            for c in calls {
                for (pos, ids) in &c.whole {
                    let Some(at) = own.get(ids) else { continue };
                    if out.contains(&(name.to_string(), *at))
                        && out.insert((c.callee.to_string(), *pos))
                    {
                        added = true;
                    }
                }
            }
        }
        if !added {
            break;
        }
    }
    out
}
