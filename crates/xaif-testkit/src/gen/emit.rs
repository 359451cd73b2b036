//! A generated program as front-end XAIF: the shape `whirl2xaif` gives
//! programs (scope 1 with routines and module variables, one scope per
//! routine, alias sets with virtual address ranges, side-effect lists,
//! control flow graphs with `ForLoop`, `PreLoop`, `Branch` and jumps as
//! plain edges), plus the rarer vertex kinds the schema has (`If`,
//! `PostLoop`, `Goto`, `Label`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::ast::*;

const BOOLEAN_OPS: [&str; 10] = [
    "and",
    "or",
    "not",
    "equal",
    "not_equal",
    "less_than",
    "less_or_equal",
    "greater_than",
    "greater_or_equal",
    "xor",
];

fn shape_name(rank: usize) -> &'static str {
    [
        "scalar",
        "vector",
        "matrix",
        "three_tensor",
        "four_tensor",
        "five_tensor",
        "six_tensor",
    ][rank.min(6)]
}

fn real_text(x: f64) -> String {
    let s = format!("{x:?}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Program-wide numbering: statement ids, alias sets.
struct Ctx<'p> {
    p: &'p Program,
    stmt: usize,
    alias_keys: BTreeMap<(i64, i64, bool), usize>,
    /// Virtual address ranges: globals, then per routine its variables.
    global_range: Vec<(i64, i64)>,
    var_range: Vec<Vec<(i64, i64)>>,
    /// Options drawn for this program.
    pad_blocks: bool,
    goto_vertices: bool,
    /// Whether references carry DU-UD chains (`du_ud` keys).
    chains: bool,
    /// Statement the references being written belong to (`""` for
    /// conditions, which have no statement).
    stmt_id: String,
    /// Reads and writes since the last vertex, in execution order.
    events: Vec<Event>,
    /// Writes of the assignment being written (they follow its reads).
    pending_defs: Vec<Event>,
    /// Number of `du_ud` placeholders handed out.
    serials: usize,
    /// DU-UD sets and their keys.
    duud_keys: BTreeMap<Vec<String>, usize>,
    /// Per routine, the listing lines of its `do` loops not yet written
    /// (the `lineNumber`s of the `ForLoop`s).
    do_lines: Vec<std::collections::VecDeque<usize>>,
}

/// A read or a write of a storage, for the DU-UD chains.
#[derive(Clone, Debug)]
enum Event {
    /// A read by statement `stmt` through reference `serial` (if the
    /// reference is written with a `du_ud` placeholder).
    Use {
        serial: Option<usize>,
        storage: String,
        stmt: String,
    },
    /// A write by statement `stmt` (through reference `serial`); `kill`
    /// when it certainly overwrites the whole storage.
    Def {
        serial: Option<usize>,
        storage: String,
        stmt: String,
        kill: bool,
    },
}

impl<'p> Ctx<'p> {
    fn new(p: &'p Program) -> Self {
        let mut next = 1;
        let mut alloc = |size: i64| {
            let r = (next, next + size.max(1) - 1);
            next += size.max(1);
            r
        };
        let global_range = p.globals.iter().map(|g| alloc(g.size())).collect();
        let var_range = p
            .routines
            .iter()
            .map(|r| {
                r.formals
                    .iter()
                    .chain(r.locals.iter())
                    .map(|v| alloc(v.size()))
                    .collect()
            })
            .collect();
        // Presentation options follow from the program itself, so that
        // rendering stays a function of the program.
        let h = p.routines.iter().map(|r| r.body.len()).sum::<usize>() + p.globals.len();
        Ctx {
            p,
            stmt: 0,
            alias_keys: BTreeMap::new(),
            global_range,
            var_range,
            pad_blocks: h % 2 == 0,
            goto_vertices: h % 3 == 0,
            chains: h % 3 != 1,
            stmt_id: String::new(),
            do_lines: super::listing::do_lines(p)
                .into_iter()
                .map(Into::into)
                .collect(),
            events: Vec::new(),
            pending_defs: Vec::new(),
            serials: 0,
            duud_keys: BTreeMap::new(),
        }
    }

    /// The storage key of variable `v` of routine `r` (globals by name).
    fn storage(&self, v: VarId) -> String {
        match v {
            VarId::Global(g) => format!("g:{}", self.p.globals[g].name),
            VarId::Formal(f) => format!("f:{f}"),
            VarId::Local(l) => format!("l:{l}"),
        }
    }

    /// A `du_ud` placeholder for reference `serial`.
    fn placeholder(&mut self) -> (usize, String) {
        self.serials += 1;
        let serial = self.serials;
        (serial, format!(" du_ud=\"\u{1}{serial}\u{1}\""))
    }

    /// The key of a DU-UD set (0 for the empty set: no information).
    fn duud_key(&mut self, mut set: Vec<String>) -> usize {
        set.sort();
        set.dedup();
        if set.is_empty() {
            return 0;
        }
        let n = self.duud_keys.len() + 1;
        *self.duud_keys.entry(set).or_insert(n)
    }

    fn next_stmt(&mut self) -> String {
        self.stmt += 1;
        self.stmt.to_string()
    }

    fn range(&self, r: usize, v: VarId) -> (i64, i64) {
        match v {
            VarId::Global(g) => self.global_range[g],
            VarId::Formal(f) => self.var_range[r][f],
            VarId::Local(l) => self.var_range[r][self.p.routines[r].formals.len() + l],
        }
    }

    fn alias(&mut self, r: usize, rf: &Ref) -> usize {
        let (a, b) = self.range(r, rf.var);
        let key = (a, b, !rf.subs.is_empty());
        let n = self.alias_keys.len() + 1;
        *self.alias_keys.entry(key).or_insert(n)
    }

    /// (scope_id, symbol_id) of variable `v` in routine `r`.
    fn symbol(&self, r: usize, v: VarId) -> (String, String) {
        match v {
            VarId::Global(g) => ("1".into(), global_symbol(self.p, r, g)),
            VarId::Formal(f) => (
                scope_of(r).to_string(),
                self.p.routines[r].formals[f].name.clone(),
            ),
            VarId::Local(l) => (
                scope_of(r).to_string(),
                self.p.routines[r].locals[l].name.clone(),
            ),
        }
    }
}

fn scope_of(r: usize) -> usize {
    r + 2
}

/// The scope-1 symbol routine `r` knows global `g` by.
fn global_symbol(p: &Program, r: usize, g: usize) -> String {
    let own = p
        .own_global_symbol
        .get(r)
        .and_then(|o| o.get(g))
        .copied()
        .unwrap_or(false);
    if own {
        format!("{}_{}", p.globals[g].name, r + 1)
    } else {
        p.globals[g].name.clone()
    }
}

fn symbol_xml(out: &mut String, indent: &str, id: &str, v: &Var) {
    let ty = match v.role.ty() {
        Ty::Real => ("real", "F8"),
        Ty::Int => ("integer", "I4"),
        Ty::Bool => ("bool", "L4"),
    };
    let active = if v.role.active() { 1 } else { 0 };
    let bounds = match &v.dims {
        Dims::Fixed(e) => e.iter().rev().copied().collect::<Vec<_>>(),
        _ => Vec::new(),
    };
    let head = format!(
        "{indent}<xaif:Symbol symbol_id=\"{id}\" kind=\"variable\" type=\"{}\" feType=\"{}\" shape=\"{}\" active=\"{active}\"",
        ty.0,
        ty.1,
        shape_name(v.rank())
    );
    if bounds.is_empty() {
        let _ = writeln!(out, "{head}/>");
    } else {
        let _ = writeln!(out, "{head}>");
        for u in bounds {
            let _ = writeln!(
                out,
                "{indent}  <xaif:DimensionBounds lower=\"1\" upper=\"{u}\"/>"
            );
        }
        let _ = writeln!(out, "{indent}</xaif:Symbol>");
    }
}

/// Writes the XAIF text of `p`, with `comment` (and a listing of the
/// program) in a comment at the top.
pub fn xaif(p: &Program, comment: &str) -> String {
    let mut c = Ctx::new(p);
    let mut cfgs = String::new();
    for r in 0..p.routines.len() {
        cfgs.push_str(&routine(&mut c, r));
    }
    let mut calls = String::new();
    let mut edge = 0;
    for (r, routine) in p.routines.iter().enumerate() {
        let mut callees = Vec::new();
        walk(&routine.body, &mut |s| {
            if let Stmt::Call { callee, .. } = s {
                callees.push(*callee);
            }
        });
        for callee in callees {
            edge += 1;
            let _ = writeln!(
                calls,
                "  <xaif:CallGraphEdge edge_id=\"{edge}\" source=\"{}\" target=\"{}\"/>",
                r + 1,
                callee + 1
            );
        }
    }
    let mut out = String::new();
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let text = format!("{comment}\n{}", super::listing::listing(p));
    let _ = writeln!(out, "<!--\n{}\n-->", text.replace("--", "- -").trim_end());
    out.push_str("<xaif:CallGraph xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xmlns:xaif=\"http://www.mcs.anl.gov/XAIF\" xsi:schemaLocation=\"http://www.mcs.anl.gov/XAIF xaif.xsd\" program_name=\"generated\" prefix=\"OpenAD_\">\n");
    out.push_str(
        "  <xaif:ScopeHierarchy>\n    <xaif:Scope vertex_id=\"1\">\n      <xaif:SymbolTable>\n",
    );
    for r in &p.routines {
        let _ = writeln!(
            out,
            "        <xaif:Symbol symbol_id=\"{}\" kind=\"subroutine\" type=\"void\" shape=\"scalar\" active=\"0\"/>",
            r.name
        );
    }
    let mut global_symbols = BTreeSet::new();
    for r in 0..p.routines.len() {
        for g in 0..p.globals.len() {
            global_symbols.insert((g, global_symbol(p, r, g)));
        }
    }
    for (g, id) in &global_symbols {
        symbol_xml(&mut out, "        ", id, &p.globals[*g]);
    }
    out.push_str("      </xaif:SymbolTable>\n    </xaif:Scope>\n");
    for (r, routine) in p.routines.iter().enumerate() {
        let s = scope_of(r);
        let _ = writeln!(
            out,
            "    <xaif:Scope vertex_id=\"{s}\">\n      <xaif:SymbolTable>"
        );
        for v in routine.formals.iter().chain(routine.locals.iter()) {
            symbol_xml(&mut out, "        ", &v.name, v);
        }
        let _ = writeln!(
            out,
            "      </xaif:SymbolTable>\n    </xaif:Scope>\n    <xaif:ScopeEdge edge_id=\"{}\" source=\"{s}\" target=\"1\"/>",
            r + 1
        );
    }
    out.push_str(
        "  </xaif:ScopeHierarchy>\n  <xaif:AliasSetMap>\n    <xaif:AliasSet key=\"0\"/>\n",
    );
    let mut sets: Vec<(usize, (i64, i64, bool))> =
        c.alias_keys.iter().map(|(k, v)| (*v, *k)).collect();
    sets.sort_unstable();
    for (key, (a, b, partial)) in sets {
        let _ = writeln!(
            out,
            "    <xaif:AliasSet key=\"{key}\">\n      <xaif:AliasRange from_virtual_address=\"{a}\" to_virtual_address=\"{b}\" partial=\"{}\"/>\n    </xaif:AliasSet>",
            partial as u8
        );
    }
    out.push_str("  </xaif:AliasSetMap>\n  <xaif:DUUDSetMap>\n    <xaif:StmtIdSet key=\"0\"/>\n");
    let mut duud: Vec<(usize, &Vec<String>)> =
        c.duud_keys.iter().map(|(set, k)| (*k, set)).collect();
    duud.sort();
    for (key, set) in duud {
        let _ = writeln!(out, "    <xaif:StmtIdSet key=\"{key}\">");
        for id in set {
            let _ = writeln!(out, "      <xaif:StatementId idRef=\"{id}\"/>");
        }
        let _ = writeln!(out, "    </xaif:StmtIdSet>");
    }
    out.push_str("  </xaif:DUUDSetMap>\n  <xaif:DOSetMap>\n    <xaif:StmtIdSet key=\"0\"/>\n  </xaif:DOSetMap>\n");
    out.push_str(&cfgs);
    out.push_str(&calls);
    out.push_str("</xaif:CallGraph>\n");
    out
}

/// Calls `f` on every statement, nested ones included.
pub fn walk(stmts: &[Stmt], f: &mut dyn FnMut(&Stmt)) {
    for s in stmts {
        f(s);
        match s {
            Stmt::Do { body, .. }
            | Stmt::While { body, .. }
            | Stmt::GotoLoop { body, .. }
            | Stmt::GotoSkip { body, .. } => walk(body, f),
            Stmt::If { then, els, .. } => {
                walk(then, f);
                walk(els, f);
            }
            Stmt::Select { cases, default, .. } => {
                for (_, b) in cases {
                    walk(b, f);
                }
                walk(default, f);
            }
            _ => {}
        }
    }
}

/// Reads and writes of a routine's statements, for the side-effect lists.
#[derive(Default)]
struct Effects {
    read_local: BTreeSet<VarId>,
    mod_local: BTreeSet<VarId>,
    read: BTreeSet<VarId>,
    modified: BTreeSet<VarId>,
}

fn effects(
    p: &Program,
    r: usize,
    memo: &mut BTreeMap<usize, (BTreeSet<usize>, BTreeSet<usize>)>,
) -> Effects {
    let mut e = Effects::default();
    let nonlocal = |v: VarId| !matches!(v, VarId::Local(_));
    let mut reads: Vec<VarId> = Vec::new();
    let mut writes: Vec<VarId> = Vec::new();
    let mut calls: Vec<(usize, Vec<Option<VarId>>)> = Vec::new();
    let routine = &p.routines[r];
    walk(&routine.body, &mut |s| {
        let mut exprs: Vec<Expr> = Vec::new();
        match s {
            Stmt::Assign(lhs, rhs) => {
                writes.push(lhs.var);
                // Subscripts of the left-hand side are reads.
                for sub in &lhs.subs {
                    match sub {
                        Sub::Elem(e) => exprs.push(e.clone()),
                        Sub::Range(a, b, c) => {
                            exprs.push(a.clone());
                            exprs.push(b.clone());
                            exprs.extend(c.clone());
                        }
                    }
                }
                exprs.push(rhs.clone());
            }
            Stmt::Call { callee, args } => {
                let mut vars = Vec::new();
                for a in args {
                    match a {
                        Arg::Ref(rf) => {
                            exprs.push(Expr::r(rf.clone()));
                            vars.push(Some(rf.var));
                        }
                        Arg::Const(_) | Arg::Absent => vars.push(None),
                    }
                }
                calls.push((*callee, vars));
            }
            Stmt::Do {
                var, lo, hi, step, ..
            } => {
                writes.push(*var);
                exprs.push(lo.clone());
                exprs.push(hi.clone());
                if let Step::Var(v) = step {
                    reads.push(*v);
                }
            }
            Stmt::While { cond, .. }
            | Stmt::If { cond, .. }
            | Stmt::Exit(cond)
            | Stmt::Return(cond)
            | Stmt::GotoLoop { cond, .. }
            | Stmt::GotoSkip { cond, .. } => exprs.push(cond.clone()),
            Stmt::Select { on, .. } => exprs.push(on.clone()),
            Stmt::Marker => {}
        }
        for e in exprs {
            e.visit_refs(&mut |rf| reads.push(rf.var));
        }
    });
    for v in reads {
        if nonlocal(v) {
            e.read_local.insert(v);
        }
    }
    for v in writes {
        if nonlocal(v) {
            e.mod_local.insert(v);
        }
    }
    e.read = e.read_local.clone();
    e.modified = e.mod_local.clone();
    for (callee, vars) in calls {
        let (greads, gwrites) = global_effects(p, callee, memo);
        for g in greads {
            e.read.insert(VarId::Global(g));
        }
        for g in gwrites {
            e.modified.insert(VarId::Global(g));
        }
        for (k, v) in vars.into_iter().enumerate() {
            let Some(v) = v.filter(|v| nonlocal(*v)) else {
                continue;
            };
            e.read.insert(v);
            if p.routines[callee].written.get(k).copied().unwrap_or(true) {
                e.modified.insert(v);
            }
        }
    }
    e
}

/// Globals a routine and its callees read and write.
fn global_effects(
    p: &Program,
    r: usize,
    memo: &mut BTreeMap<usize, (BTreeSet<usize>, BTreeSet<usize>)>,
) -> (BTreeSet<usize>, BTreeSet<usize>) {
    if let Some(x) = memo.get(&r) {
        return x.clone();
    }
    let e = effects(p, r, memo);
    let pick = |s: &BTreeSet<VarId>| {
        s.iter()
            .filter_map(|v| match v {
                VarId::Global(g) => Some(*g),
                _ => None,
            })
            .collect::<BTreeSet<usize>>()
    };
    let out = (pick(&e.read), pick(&e.modified));
    memo.insert(r, out.clone());
    out
}

// ------------------------------------------------------------------ CFGs

#[derive(Clone)]
enum VKind {
    Entry,
    Exit,
    Block(Vec<String>),
    For {
        init: String,
        cond: String,
        update: String,
        explicit: bool,
        line: Option<usize>,
    },
    Pre(String, Option<usize>),
    Post(String, Option<usize>),
    EndLoop,
    Branch(String),
    If(String),
    EndBranch,
    Goto,
    Label,
}

struct Cfg<'c, 'p> {
    c: &'c mut Ctx<'p>,
    r: usize,
    vertices: Vec<(usize, VKind)>,
    edges: Vec<(usize, usize, Option<i64>)>,
    next: usize,
    exit: usize,
    /// Join vertices of the enclosing loops an `exit` leaves, with whether
    /// one was used.
    loop_exits: Vec<(usize, bool)>,
    /// Reads and writes of each vertex, in execution order.
    events: BTreeMap<usize, Vec<Event>>,
}

/// Predecessors waiting for the next vertex: (vertex, condition value).
type Preds = Vec<(usize, Option<i64>)>;

/// The condition value of the false edge of two-way branch `b`. OpenAD's
/// front end leaves that edge without one (the other edges' values make
/// it the default); the schema also allows `0`. Programs show both forms,
/// by the parity of the branch's vertex, which draws nothing from the
/// generator's randomness and leaves everything else the same.
fn otherwise(b: usize) -> Option<i64> {
    if b % 2 == 1 {
        None
    } else {
        Some(0)
    }
}

impl Cfg<'_, '_> {
    fn alloc(&mut self) -> usize {
        self.next += 1;
        self.next
    }

    fn add(&mut self, id: usize, kind: VKind, preds: Preds) {
        for (p, cv) in preds {
            self.edges.push((p, id, cv));
        }
        self.vertices.push((id, kind));
        let events = std::mem::take(&mut self.c.events);
        self.events.insert(id, events);
    }

    fn vertex(&mut self, kind: VKind, preds: Preds) -> usize {
        let id = self.alloc();
        self.add(id, kind, preds);
        id
    }

    /// A jump edge from `from` to `to`, through a `Goto` vertex when the
    /// program is drawn with them.
    fn jump(&mut self, from: usize, cv: Option<i64>, to: usize) {
        if self.c.goto_vertices {
            let g = self.vertex(VKind::Goto, vec![(from, cv)]);
            self.edges.push((g, to, None));
        } else {
            self.edges.push((from, to, cv));
        }
    }

    /// A join point several edges may reach.
    fn join(&mut self, id: usize, preds: Preds) -> Preds {
        let kind = if self.c.goto_vertices {
            VKind::Label
        } else {
            VKind::Block(Vec::new())
        };
        self.add(id, kind, preds);
        vec![(id, None)]
    }

    fn seq(&mut self, stmts: &[Stmt], mut preds: Preds) -> Preds {
        let mut block: Vec<String> = Vec::new();
        let mut first = true;
        for s in stmts {
            match s {
                Stmt::Assign(..) | Stmt::Call { .. } | Stmt::Marker => {
                    block.push(self.simple(s));
                }
                _ => {
                    if !block.is_empty() || (first && self.c.pad_blocks) {
                        let b = self.vertex(VKind::Block(std::mem::take(&mut block)), preds);
                        preds = vec![(b, None)];
                    }
                    preds = self.compound(s, preds);
                }
            }
            first = false;
        }
        if !block.is_empty() {
            let b = self.vertex(VKind::Block(block), preds);
            preds = vec![(b, None)];
        }
        preds
    }

    fn body(&mut self, stmts: &[Stmt], preds: Preds) -> Preds {
        // Every body starts with a block, empty or not.
        if stmts.is_empty()
            || !matches!(
                stmts[0],
                Stmt::Assign(..) | Stmt::Call { .. } | Stmt::Marker
            )
        {
            let b = self.vertex(VKind::Block(Vec::new()), preds);
            self.seq(stmts, vec![(b, None)])
        } else {
            self.seq(stmts, preds)
        }
    }

    fn compound(&mut self, s: &Stmt, preds: Preds) -> Preds {
        let r = self.r;
        match s {
            Stmt::Do {
                var,
                lo,
                hi,
                step,
                body,
                explicit,
            } => {
                let v = Expr::var(*var);
                let init = assignment(self.c, r, "Initialization", &Ref::whole(*var), lo);
                let (cond, update) = match step {
                    Step::Up => (
                        Expr::Op("less_or_equal", vec![v.clone(), hi.clone()]),
                        Expr::Op("add_scal_scal", vec![v.clone(), Expr::Int(1)]),
                    ),
                    Step::Down => (
                        Expr::Op("greater_or_equal", vec![v.clone(), hi.clone()]),
                        Expr::Op("sub_scal_scal", vec![v.clone(), Expr::Int(1)]),
                    ),
                    Step::Var(s) => (
                        Expr::Op("not_equal", vec![v.clone(), hi.clone()]),
                        Expr::Op("add_scal_scal", vec![v.clone(), Expr::var(*s)]),
                    ),
                };
                let cond = condition(self.c, r, &cond);
                let update = assignment(self.c, r, "Update", &Ref::whole(*var), &update);
                let line = self.c.do_lines.get_mut(r).and_then(|l| l.pop_front());
                let l = self.vertex(
                    VKind::For {
                        init,
                        cond,
                        update,
                        explicit: *explicit,
                        line,
                    },
                    preds,
                );
                self.loop_with(l, body)
            }
            Stmt::While { cond, body, post } => {
                let cond = condition(self.c, r, cond);
                let line = self.c.do_lines.get_mut(r).and_then(|l| l.pop_front());
                let kind = if *post {
                    VKind::Post(cond, line)
                } else {
                    VKind::Pre(cond, line)
                };
                let l = self.vertex(kind, preds);
                self.loop_with(l, body)
            }
            Stmt::If {
                cond,
                then,
                els,
                vertex,
            } => {
                let cond = condition(self.c, r, cond);
                let kind = if *vertex {
                    VKind::If(cond)
                } else {
                    VKind::Branch(cond)
                };
                let b = self.vertex(kind, preds);
                let mut ends = self.body(then, vec![(b, Some(1))]);
                ends.extend(self.body(els, vec![(b, otherwise(b))]));
                let e = self.vertex(VKind::EndBranch, ends);
                vec![(e, None)]
            }
            Stmt::Select { on, cases, default } => {
                let cond = condition(self.c, r, on);
                let b = self.vertex(VKind::Branch(cond), preds);
                let mut ends = Vec::new();
                for (values, body) in cases {
                    ends.extend(self.body(body, vec![(b, Some(values[0]))]));
                }
                ends.extend(self.body(default, vec![(b, None)]));
                let e = self.vertex(VKind::EndBranch, ends);
                vec![(e, None)]
            }
            Stmt::Exit(cond) => {
                let cond = condition(self.c, r, cond);
                let b = self.vertex(VKind::Branch(cond), preds);
                let target = self
                    .loop_exits
                    .last_mut()
                    .map(|(t, used)| {
                        *used = true;
                        *t
                    })
                    .expect("exit only inside loops");
                self.jump(b, Some(1), target);
                let cont = self.vertex(VKind::Block(Vec::new()), vec![(b, otherwise(b))]);
                vec![(cont, None)]
            }
            Stmt::Return(cond) => {
                let cond = condition(self.c, r, cond);
                let b = self.vertex(VKind::Branch(cond), preds);
                let exit = self.exit;
                self.jump(b, Some(1), exit);
                let cont = self.vertex(VKind::Block(Vec::new()), vec![(b, otherwise(b))]);
                vec![(cont, None)]
            }
            Stmt::GotoLoop { body, cond } => {
                let top = self.alloc();
                let preds = self.join(top, preds);
                let end = self.body(body, preds);
                let cond = condition(self.c, r, cond);
                let b = self.vertex(VKind::Branch(cond), end);
                self.jump(b, Some(1), top);
                let cont = self.vertex(VKind::Block(Vec::new()), vec![(b, otherwise(b))]);
                vec![(cont, None)]
            }
            Stmt::GotoSkip { cond, body } => {
                let cond = condition(self.c, r, cond);
                let b = self.vertex(VKind::Branch(cond), preds);
                let target = self.alloc();
                self.jump(b, Some(1), target);
                let end = self.body(body, vec![(b, otherwise(b))]);
                self.join(target, end)
            }
            Stmt::Assign(..) | Stmt::Call { .. } | Stmt::Marker => {
                unreachable!("simple statements")
            }
        }
    }

    /// Body and `EndLoop` of loop vertex `l`; the exit edge leaves `l` (to
    /// a join vertex when an `exit` also leaves the loop).
    fn loop_with(&mut self, l: usize, body: &[Stmt]) -> Preds {
        let join = self.alloc();
        self.loop_exits.push((join, false));
        let end = self.body(body, vec![(l, Some(1))]);
        let (_, used) = self.loop_exits.pop().expect("pushed above");
        let e = self.vertex(VKind::EndLoop, end);
        self.edges.push((e, l, None));
        if used {
            self.join(join, vec![(l, None)])
        } else {
            vec![(l, None)]
        }
    }

    fn simple(&mut self, s: &Stmt) -> String {
        let r = self.r;
        match s {
            Stmt::Assign(lhs, rhs) => assignment(self.c, r, "Assignment", lhs, rhs),
            Stmt::Marker => {
                let id = self.c.next_stmt();
                format!("      <xaif:Marker statement_id=\"{id}\" annotation=\"{{WHIRL_Id#{id}}} [passive: OPR_PRAGMA]\"/>\n")
            }
            Stmt::Call { callee, args } => {
                let id = self.c.next_stmt();
                self.c.stmt_id = id.clone();
                let p = self.c.p;
                let name = &p.routines[*callee].name;
                let mut out = format!(
                    "      <xaif:SubroutineCall statement_id=\"{id}\" scope_id=\"1\" symbol_id=\"{name}\" formalArgCount=\"{}\">\n",
                    args.len()
                );
                for (k, a) in args.iter().enumerate() {
                    if *a == Arg::Absent {
                        continue;
                    }
                    let _ = writeln!(out, "        <xaif:Argument position=\"{}\">", k + 1);
                    match a {
                        Arg::Ref(rf) => out.push_str(&var_ref(
                            self.c,
                            r,
                            rf,
                            "VariableReference",
                            " vertex_id=\"1\"",
                            "          ",
                            Access::Use,
                        )),
                        Arg::Const(e) => out.push_str(&constant(e, 1, "          ")),
                        Arg::Absent => {}
                    }
                    out.push_str("        </xaif:Argument>\n");
                }
                out.push_str("      </xaif:SubroutineCall>\n");
                // What the callee reads and may write.
                let mut memo = BTreeMap::new();
                let (reads, writes) = global_effects(p, *callee, &mut memo);
                for g in reads {
                    let storage = self.c.storage(VarId::Global(g));
                    self.c.events.push(Event::Use {
                        serial: None,
                        storage,
                        stmt: id.clone(),
                    });
                }
                let mut written: Vec<String> = writes
                    .iter()
                    .map(|&g| self.c.storage(VarId::Global(g)))
                    .collect();
                for (k, a) in args.iter().enumerate() {
                    if let Arg::Ref(rf) = a {
                        if p.routines[*callee].written.get(k).copied().unwrap_or(true) {
                            written.push(self.c.storage(rf.var));
                        }
                    }
                }
                for storage in written {
                    self.c.events.push(Event::Def {
                        serial: None,
                        storage,
                        stmt: id.clone(),
                        kill: false,
                    });
                }
                out
            }
            _ => unreachable!("compound statements"),
        }
    }
}

fn constant(e: &Expr, id: usize, indent: &str) -> String {
    match e {
        Expr::Real(x) => format!(
            "{indent}<xaif:Constant vertex_id=\"{id}\" type=\"real\" feType=\"F8\" value=\"{}\"/>\n",
            real_text(*x)
        ),
        Expr::Int(i) => format!(
            "{indent}<xaif:Constant vertex_id=\"{id}\" type=\"integer\" feType=\"I4\" value=\"{i}\"/>\n"
        ),
        Expr::Str(s) => format!(
            "{indent}<xaif:Constant vertex_id=\"{id}\" type=\"string\" value=\"{}\"/>\n",
            esc(s)
        ),
        // As OpenAD's front end writes them.
        Expr::Bool(b) => format!(
            "{indent}<xaif:Constant vertex_id=\"{id}\" type=\"bool\" feType=\"I4\" value=\"{b}\"/>\n"
        ),
        _ => unreachable!("not a constant"),
    }
}

/// How a reference takes part in the DU-UD chains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// It reads its storage.
    Use,
    /// It writes its storage (wholly when `kill`).
    Def {
        /// Whether it certainly overwrites the whole storage.
        kill: bool,
    },
}

/// A variable reference element (`tag` is `VariableReference`, or the
/// `AssignmentLHS` whose children the reference graph is).
#[allow(clippy::too_many_arguments)]
fn var_ref(
    c: &mut Ctx<'_>,
    r: usize,
    rf: &Ref,
    tag: &str,
    attrs: &str,
    indent: &str,
    access: Access,
) -> String {
    let (scope, symbol) = c.symbol(r, rf.var);
    let alias = c.alias(r, rf);
    let storage = c.storage(rf.var);
    let (serial, duud) = if c.chains {
        let (serial, text) = c.placeholder();
        (Some(serial), text)
    } else {
        (None, String::new())
    };
    let stmt = c.stmt_id.clone();
    match access {
        Access::Use => c.events.push(Event::Use {
            serial,
            storage,
            stmt,
        }),
        Access::Def { kill } => c.pending_defs.push(Event::Def {
            serial,
            storage,
            stmt,
            kill,
        }),
    }
    let mut out = format!("{indent}<xaif:{tag}{attrs}{duud} alias=\"{alias}\">\n");
    let _ = writeln!(
        out,
        "{indent}  <xaif:SymbolReference vertex_id=\"1\" scope_id=\"{scope}\" symbol_id=\"{symbol}\"/>"
    );
    if !rf.subs.is_empty() {
        let _ = writeln!(
            out,
            "{indent}  <xaif:ArrayElementReference vertex_id=\"2\">"
        );
        let inner = format!("{indent}        ");
        for s in &rf.subs {
            let _ = writeln!(out, "{indent}    <xaif:IndexTriplet>");
            match s {
                Sub::Elem(e) => {
                    out.push_str(&expression(c, r, "Index", e, &format!("{indent}      ")))
                }
                Sub::Range(a, b, st) => {
                    out.push_str(&expression(c, r, "Index", a, &format!("{indent}      ")));
                    out.push_str(&expression(c, r, "Bound", b, &format!("{indent}      ")));
                    // Front ends always write the stride of a section.
                    let one = Expr::Int(1);
                    let st = st.as_ref().unwrap_or(&one);
                    out.push_str(&expression(c, r, "Stride", st, &format!("{indent}      ")));
                }
            }
            let _ = inner;
            let _ = writeln!(out, "{indent}    </xaif:IndexTriplet>");
        }
        let _ = writeln!(out, "{indent}  </xaif:ArrayElementReference>");
        let _ = writeln!(
            out,
            "{indent}  <xaif:VariableReferenceEdge edge_id=\"1\" source=\"1\" target=\"2\"/>"
        );
    }
    let _ = writeln!(out, "{indent}</xaif:{tag}>");
    out
}

/// An expression graph as the children of element `tag`.
fn expression(c: &mut Ctx<'_>, r: usize, tag: &str, e: &Expr, indent: &str) -> String {
    let mut vertices = String::new();
    let mut edges: Vec<(usize, usize, usize)> = Vec::new();
    let mut next = 0;
    fn go(
        c: &mut Ctx<'_>,
        r: usize,
        e: &Expr,
        indent: &str,
        next: &mut usize,
        vertices: &mut String,
        edges: &mut Vec<(usize, usize, usize)>,
    ) -> usize {
        *next += 1;
        let id = *next;
        match e {
            Expr::Real(_) | Expr::Int(_) | Expr::Str(_) | Expr::Bool(_) => {
                vertices.push_str(&constant(e, id, indent))
            }
            Expr::Ref(rf) => vertices.push_str(&var_ref(
                c,
                r,
                rf,
                "VariableReference",
                &format!(" vertex_id=\"{id}\""),
                indent,
                Access::Use,
            )),
            Expr::Op(name, args) => {
                let tag = if BOOLEAN_OPS.contains(name) {
                    "BooleanOperation"
                } else {
                    "Intrinsic"
                };
                let _ = writeln!(
                    vertices,
                    "{indent}<xaif:{tag} vertex_id=\"{id}\" name=\"{name}\"/>"
                );
                for (k, a) in args.iter().enumerate() {
                    let s = go(c, r, a, indent, next, vertices, edges);
                    edges.push((s, id, k + 1));
                }
            }
        }
        id
    }
    let inner = format!("{indent}  ");
    go(c, r, e, &inner, &mut next, &mut vertices, &mut edges);
    let mut out = format!("{indent}<xaif:{tag}>\n{vertices}");
    for (k, (s, t, pos)) in edges.iter().enumerate() {
        let _ = writeln!(
            out,
            "{inner}<xaif:ExpressionEdge edge_id=\"{}\" source=\"{s}\" target=\"{t}\" position=\"{pos}\"/>",
            k + 1
        );
    }
    let _ = writeln!(out, "{indent}</xaif:{tag}>");
    out
}

/// An assignment-shaped element (`Assignment`, `Initialization`,
/// `Update`).
fn assignment(c: &mut Ctx<'_>, r: usize, tag: &str, lhs: &Ref, rhs: &Expr) -> String {
    let id = c.next_stmt();
    c.stmt_id = id.clone();
    let mut out = format!("      <xaif:{tag} statement_id=\"{id}\">\n");
    // A whole variable is overwritten; an element or section, or a DO
    // loop's update (which runs only on some entries), is not.
    let kill = lhs.subs.is_empty() && tag != "Update";
    out.push_str(&var_ref(
        c,
        r,
        lhs,
        "AssignmentLHS",
        "",
        "        ",
        Access::Def { kill },
    ));
    out.push_str(&expression(c, r, "AssignmentRHS", rhs, "        "));
    let defs = std::mem::take(&mut c.pending_defs);
    c.events.extend(defs);
    let _ = writeln!(out, "      </xaif:{tag}>");
    out
}

/// A condition (its reads belong to no statement).
fn condition(c: &mut Ctx<'_>, r: usize, e: &Expr) -> String {
    c.stmt_id.clear();
    expression(c, r, "Condition", e, "      ")
}

fn routine(c: &mut Ctx<'_>, r: usize) -> String {
    let p = c.p;
    let routine = &p.routines[r];
    let s = scope_of(r);
    let mut memo = BTreeMap::new();
    let effects = effects(p, r, &mut memo);
    let mut cfg = Cfg {
        c,
        r,
        vertices: Vec::new(),
        edges: Vec::new(),
        next: 2,
        exit: 2,
        loop_exits: Vec::new(),
        events: BTreeMap::new(),
    };
    let preds = cfg.seq(&routine.body, vec![(1, None)]);
    let mut vertices = vec![(1, VKind::Entry)];
    vertices.append(&mut cfg.vertices);
    vertices.push((2, VKind::Exit));
    let mut edges = cfg.edges;
    for (p, cv) in preds {
        edges.push((p, 2, cv));
    }
    let events = cfg.events;
    let c = cfg.c;
    let keys = if c.chains {
        du_ud(c, &edges, &events)
    } else {
        BTreeMap::new()
    };
    let structured = if routine.mark_unstructured {
        " structured=\"0\""
    } else {
        ""
    };
    let mut out = format!(
        "  <xaif:ControlFlowGraph vertex_id=\"{}\" scope_id=\"1\" symbol_id=\"{}\" controlflowgraph_scope_id=\"{s}\"{structured}>\n",
        r + 1,
        routine.name
    );
    out.push_str("    <xaif:ArgumentList>\n");
    for (k, f) in routine.formals.iter().enumerate() {
        let intent = if routine.out.get(k).copied().unwrap_or(false) {
            "out"
        } else if routine.written.get(k).copied().unwrap_or(true) {
            "inout"
        } else {
            "in"
        };
        let _ = writeln!(
            out,
            "      <xaif:ArgumentSymbolReference position=\"{}\" scope_id=\"{s}\" symbol_id=\"{}\" intent=\"{intent}\"/>",
            k + 1,
            f.name
        );
    }
    out.push_str("    </xaif:ArgumentList>\n");
    for (tag, set) in [
        ("ModLocal", &effects.mod_local),
        ("Mod", &effects.modified),
        ("ReadLocal", &effects.read_local),
        ("Read", &effects.read),
        ("OnEntry", &effects.read),
    ] {
        if set.is_empty() || !routine.side_effect_lists {
            continue;
        }
        let _ = writeln!(out, "    <xaif:{tag}>");
        for v in set {
            let (scope, symbol) = c.symbol(r, *v);
            let _ = writeln!(
                out,
                "      <xaif:SideEffectReference vertex_id=\"1\">\n        <xaif:SymbolReference vertex_id=\"1\" scope_id=\"{scope}\" symbol_id=\"{symbol}\"/>\n      </xaif:SideEffectReference>"
            );
        }
        let _ = writeln!(out, "    </xaif:{tag}>");
    }
    for (id, kind) in vertices {
        match kind {
            VKind::Entry => {
                let _ = writeln!(out, "    <xaif:Entry vertex_id=\"{id}\"/>");
            }
            VKind::Exit => {
                let _ = writeln!(out, "    <xaif:Exit vertex_id=\"{id}\"/>");
            }
            VKind::Block(stmts) => {
                if stmts.is_empty() {
                    let _ = writeln!(
                        out,
                        "    <xaif:BasicBlock vertex_id=\"{id}\" scope_id=\"{s}\"/>"
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "    <xaif:BasicBlock vertex_id=\"{id}\" scope_id=\"{s}\">"
                    );
                    for st in stmts {
                        out.push_str(&st);
                    }
                    out.push_str("    </xaif:BasicBlock>\n");
                }
            }
            VKind::For {
                init,
                cond,
                update,
                explicit,
                line,
            } => {
                let reversal = if explicit { "explicit" } else { "anonymous" };
                let line = line
                    .map(|l| format!(" lineNumber=\"{l}\""))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "    <xaif:ForLoop vertex_id=\"{id}\" reversal=\"{reversal}\"{line}>"
                );
                out.push_str(&init);
                out.push_str(&cond);
                out.push_str(&update);
                out.push_str("    </xaif:ForLoop>\n");
            }
            VKind::Pre(ref cond, line) | VKind::Post(ref cond, line) => {
                let tag = if matches!(kind, VKind::Pre(..)) {
                    "PreLoop"
                } else {
                    "PostLoop"
                };
                let line = line
                    .map(|l| format!(" lineNumber=\"{l}\""))
                    .unwrap_or_default();
                let _ = writeln!(out, "    <xaif:{tag} vertex_id=\"{id}\"{line}>");
                out.push_str(cond);
                let _ = writeln!(out, "    </xaif:{tag}>");
            }
            VKind::Branch(ref cond) | VKind::If(ref cond) => {
                let tag = match kind {
                    VKind::Branch(_) => "Branch",
                    _ => "If",
                };
                let _ = writeln!(out, "    <xaif:{tag} vertex_id=\"{id}\">");
                out.push_str(cond);
                let _ = writeln!(out, "    </xaif:{tag}>");
            }
            VKind::EndLoop => {
                let _ = writeln!(out, "    <xaif:EndLoop vertex_id=\"{id}\"/>");
            }
            VKind::EndBranch => {
                let _ = writeln!(out, "    <xaif:EndBranch vertex_id=\"{id}\"/>");
            }
            VKind::Goto => {
                let _ = writeln!(out, "    <xaif:Goto vertex_id=\"{id}\"/>");
            }
            VKind::Label => {
                let _ = writeln!(out, "    <xaif:Label vertex_id=\"{id}\"/>");
            }
        }
    }
    for (k, (a, b, cv)) in edges.iter().enumerate() {
        let value = match cv {
            Some(v) => format!(" has_condition_value=\"true\" condition_value=\"{v}\""),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "    <xaif:ControlFlowEdge edge_id=\"{}\" source=\"{a}\" target=\"{b}\"{value}/>",
            k + 1
        );
    }
    out.push_str("  </xaif:ControlFlowGraph>\n");
    if keys.is_empty() {
        return out;
    }
    // Placeholders to keys.
    let mut done = String::with_capacity(out.len());
    let mut parts = out.split('\u{1}');
    done.push_str(parts.next().unwrap_or(""));
    while let (Some(serial), Some(rest)) = (parts.next(), parts.next()) {
        let serial: usize = serial.parse().expect("placeholders hold serials");
        let _ = write!(done, "{}", keys.get(&serial).copied().unwrap_or(0));
        done.push_str(rest);
    }
    done
}

/// What the final pass of reaching definitions does at a read.
type OnUse<'a> = dyn FnMut(&Event, &BTreeSet<usize>) + 'a;

/// Reaching definitions over a routine's CFG: for every read through a
/// reference, the statements whose writes may reach it (`""`: the routine's
/// entry); for every write through a reference, the statements that may
/// read it (`""`: a condition, or code after the routine for formals and
/// globals). Returns the DU-UD key of every reference serial.
fn du_ud(
    c: &mut Ctx<'_>,
    edges: &[(usize, usize, Option<i64>)],
    events: &BTreeMap<usize, Vec<Event>>,
) -> BTreeMap<usize, usize> {
    // Every write, and one entry write per storage.
    let mut defs: Vec<(String, String)> = Vec::new();
    let mut def_of: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    let mut storages: BTreeSet<String> = BTreeSet::new();
    for (&v, list) in events {
        for (k, e) in list.iter().enumerate() {
            match e {
                Event::Def { storage, stmt, .. } => {
                    def_of.insert((v, k), defs.len());
                    defs.push((storage.clone(), stmt.clone()));
                    storages.insert(storage.clone());
                }
                Event::Use { storage, .. } => {
                    storages.insert(storage.clone());
                }
            }
        }
    }
    let entry_defs: BTreeMap<String, usize> = storages
        .iter()
        .map(|st| {
            defs.push((st.clone(), String::new()));
            (st.clone(), defs.len() - 1)
        })
        .collect();
    let transfer = |v: usize, set: &mut BTreeSet<usize>, mut on_use: Option<&mut OnUse<'_>>| {
        if v == 1 {
            set.extend(entry_defs.values().copied());
        }
        let Some(list) = events.get(&v) else { return };
        for (k, e) in list.iter().enumerate() {
            match e {
                Event::Use { .. } => {
                    if let Some(f) = on_use.as_mut() {
                        f(e, set);
                    }
                }
                Event::Def { storage, kill, .. } => {
                    if *kill {
                        set.retain(|&d| defs[d].0 != *storage);
                    }
                    set.insert(def_of[&(v, k)]);
                }
            }
        }
    };
    let mut vertices: BTreeSet<usize> = edges.iter().flat_map(|(a, b, _)| [*a, *b]).collect();
    vertices.insert(1);
    let mut out_sets: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    let mut changed = true;
    while changed {
        changed = false;
        for &v in &vertices {
            let mut set: BTreeSet<usize> = edges
                .iter()
                .filter(|(_, b, _)| *b == v)
                .flat_map(|(a, _, _)| out_sets.get(a).cloned().unwrap_or_default())
                .collect();
            transfer(v, &mut set, None);
            if out_sets.get(&v) != Some(&set) {
                out_sets.insert(v, set);
                changed = true;
            }
        }
    }
    // Reads see what reaches them; writes learn who reads them.
    let mut ud: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut du: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    for &v in &vertices {
        let mut set: BTreeSet<usize> = edges
            .iter()
            .filter(|(_, b, _)| *b == v)
            .flat_map(|(a, _, _)| out_sets.get(a).cloned().unwrap_or_default())
            .collect();
        let mut on_use = |e: &Event, set: &BTreeSet<usize>| {
            let Event::Use {
                serial,
                storage,
                stmt,
            } = e
            else {
                return;
            };
            let reaching: Vec<usize> = set
                .iter()
                .copied()
                .filter(|&d| defs[d].0 == *storage)
                .collect();
            if let Some(serial) = serial {
                ud.insert(
                    *serial,
                    reaching.iter().map(|&d| defs[d].1.clone()).collect(),
                );
            }
            for d in reaching {
                du.entry(d).or_default().insert(stmt.clone());
            }
        };
        transfer(v, &mut set, Some(&mut on_use));
        if v == 2 {
            for d in set {
                if !defs[d].0.starts_with("l:") {
                    du.entry(d).or_default().insert(String::new());
                }
            }
        }
    }
    let mut keys = BTreeMap::new();
    for (serial, set) in ud {
        keys.insert(serial, c.duud_key(set));
    }
    for (&(v, k), &d) in &def_of {
        if let Event::Def {
            serial: Some(serial),
            ..
        } = &events[&v][k]
        {
            let set: Vec<String> = du
                .get(&d)
                .map(|s| s.iter().cloned().collect())
                .unwrap_or_default();
            keys.insert(*serial, c.duud_key(set));
        }
    }
    keys
}
