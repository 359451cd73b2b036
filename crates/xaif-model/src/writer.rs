//! Writing the model as XAIF text.
//!
//! The output is deterministic: the same model always gives the same bytes.
//! Elements are written in the model's document order with two-space
//! indentation, attributes in their stored order, values escaped so that they
//! read back unchanged (including newlines and tabs). Namespace prefixes are
//! fixed (`xaif:`, `xaifii:`, `xaifnii:`), and the root declares every prefix
//! it uses.
//!
//! A program can be written to any `io::Write` ([`write_program_to`]): the
//! text goes out in chunks as it is produced, so writing a large output
//! never holds the whole document in memory.

use crate::attrs::Attrs;
use crate::catalogue::{
    InlinableCatalogue, NonInlinable, NonInlinableCatalogue, INLINABLE_NS, NONINLINABLE_NS, XAIF_NS,
};
use crate::model::*;
use crate::reader::Document;

const X: &str = "xaif:";
const II: &str = "xaifii:";
const NII: &str = "xaifnii:";

/// Namespace of `xsi:` attributes.
pub const XSI_NS: &str = "http://www.w3.org/2001/XMLSchema-instance";

/// Writes any document.
pub fn write_document(doc: &Document) -> String {
    match doc {
        Document::Program(p) => write_program(p),
        Document::Inlinable(c) => write_inlinable(c),
        Document::NonInlinable(c) => write_noninlinable(c),
    }
}

/// Writes a program.
pub fn write_program(p: &Program) -> String {
    let mut w = Writer::default();
    w.program(p);
    w.into_string()
}

/// Writes a program to `sink` as it goes, in chunks of about
/// [`CHUNK`] bytes; the bytes are those of [`write_program`].
pub fn write_program_to(p: &Program, sink: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut w = Writer {
        sink: Some(sink),
        ..Writer::default()
    };
    w.program(p);
    w.finish()
}

/// Writes the start of a program's text, up to its first routine or call
/// graph edge: [`write_header_to`], [`write_item_to`] for every item of
/// `p.items` in order and [`write_footer_to`] give the bytes of
/// [`write_program_to`]. A transformation that finishes one routine at a
/// time writes each as it is done and frees it; the header, which names
/// every routine's temporaries, comes last.
pub fn write_header_to(p: &Program, sink: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut w = Writer {
        sink: Some(sink),
        ..Writer::default()
    };
    w.header(p);
    w.finish()
}

/// Writes one routine or call graph edge of a program (see
/// [`write_header_to`]).
pub fn write_item_to(
    p: &Program,
    item: CallGraphItem,
    sink: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut w = Writer {
        sink: Some(sink),
        depth: 1,
        ..Writer::default()
    };
    w.item(p, item);
    w.finish()
}

/// Writes the end of a program's text (see [`write_header_to`]).
pub fn write_footer_to(sink: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut w = Writer {
        sink: Some(sink),
        depth: 1,
        ..Writer::default()
    };
    w.close(X, "CallGraph");
    w.finish()
}

/// How many bytes the writer gathers before handing them to its sink.
pub const CHUNK: usize = 1 << 16;

/// Writes an inlinable intrinsics catalogue.
pub fn write_inlinable(c: &InlinableCatalogue) -> String {
    let mut w = Writer::default();
    w.decl();
    w.root(
        "xaifii:InlinableIntrinsicDefinitions",
        &c.attrs,
        &[("xmlns:xaifii", INLINABLE_NS), ("xmlns:xaif", XAIF_NS)],
    );
    for i in &c.intrinsics {
        w.open(II, "InlinableIntrinsic", &i.attrs, false);
        w.expr(II, "Function", &i.function);
        for partial in &i.partials {
            w.expr(II, "Partial", partial);
        }
        w.close(II, "InlinableIntrinsic");
    }
    w.close(II, "InlinableIntrinsicDefinitions");
    w.into_string()
}

/// Writes a non-inlinable intrinsics catalogue.
pub fn write_noninlinable(c: &NonInlinableCatalogue) -> String {
    let mut w = Writer::default();
    w.decl();
    w.root(
        "xaifnii:NonInlinableIntrinsicDefinitions",
        &c.attrs,
        &[("xmlns:xaifnii", NONINLINABLE_NS), ("xmlns:xaif", XAIF_NS)],
    );
    for e in &c.entries {
        match e {
            NonInlinable::DirectAction(attrs) => w.empty(NII, "DirectAction", attrs),
            NonInlinable::ExplicitJacobian { attrs, partials } => {
                w.open(NII, "ExplicitJacobian", attrs, partials.is_empty());
                for p in partials {
                    w.empty(NII, "Partial", p);
                }
                w.close_if(NII, "ExplicitJacobian", !partials.is_empty());
            }
        }
    }
    w.close(NII, "NonInlinableIntrinsicDefinitions");
    w.into_string()
}

#[derive(Default)]
struct Writer<'s> {
    out: Vec<u8>,
    depth: usize,
    /// Where full chunks go; without one the whole text stays in `out`.
    sink: Option<&'s mut dyn std::io::Write>,
    /// The first error of the sink; later output is dropped.
    error: Option<std::io::Error>,
}

impl Writer<'_> {
    /// The text written without a sink.
    fn into_string(self) -> String {
        String::from_utf8(self.out).expect("the writer writes only UTF-8 text")
    }

    /// Hands a full chunk to the sink.
    fn spill(&mut self) {
        if self.out.len() < CHUNK {
            return;
        }
        if let Some(sink) = self.sink.as_mut() {
            if self.error.is_none() {
                if let Err(e) = sink.write_all(&self.out) {
                    self.error = Some(e);
                }
            }
            self.out.clear();
        }
    }

    /// Hands the rest to the sink and reports its first error.
    fn finish(mut self) -> std::io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if let Some(sink) = self.sink.as_mut() {
            sink.write_all(&self.out)?;
            sink.flush()?;
        }
        Ok(())
    }

    fn push_str(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }

    fn push(&mut self, c: u8) {
        self.out.push(c);
    }

    fn program(&mut self, p: &Program) {
        self.header(p);
        for item in &p.items {
            self.item(p, *item);
        }
        self.close(X, "CallGraph");
    }

    /// Everything before the call graph's routines and edges.
    fn header(&mut self, p: &Program) {
        self.decl();
        self.root("xaif:CallGraph", &p.attrs, &[("xmlns:xaif", XAIF_NS)]);
        self.scope_hierarchy(p);
        if let Some(map) = &p.alias_map {
            self.open(X, "AliasSetMap", &map.attrs, map.sets.is_empty());
            for set in &map.sets {
                self.open(X, "AliasSet", &set.attrs, set.ranges.is_empty());
                for r in &set.ranges {
                    self.empty(X, "AliasRange", r);
                }
                self.close_if(X, "AliasSet", !set.ranges.is_empty());
            }
            self.close_if(X, "AliasSetMap", !map.sets.is_empty());
        }
        for (name, map) in [("DUUDSetMap", &p.duud_map), ("DOSetMap", &p.do_map)] {
            if let Some(map) = map {
                self.open(X, name, &map.attrs, map.sets.is_empty());
                for set in &map.sets {
                    self.open(X, "StmtIdSet", &set.attrs, set.ids.is_empty());
                    for id in &set.ids {
                        self.empty(X, "StatementId", id);
                    }
                    self.close_if(X, "StmtIdSet", !set.ids.is_empty());
                }
                self.close_if(X, name, !map.sets.is_empty());
            }
        }
    }

    /// One routine or call graph edge.
    fn item(&mut self, p: &Program, item: CallGraphItem) {
        match item {
            CallGraphItem::Routine(r) => self.routine(p, r),
            CallGraphItem::Edge(i) => self.empty(X, "CallGraphEdge", &p.call_edges[i]),
        }
    }

    fn decl(&mut self) {
        self.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    }

    fn indent(&mut self) {
        const SPACES: &[u8] = &[b' '; 128];
        let mut n = 2 * self.depth;
        while n > 0 {
            let k = n.min(SPACES.len());
            self.out.extend_from_slice(&SPACES[..k]);
            n -= k;
        }
    }

    fn attrs(&mut self, attrs: &Attrs) {
        let out = &mut self.out;
        attrs.for_each_raw(|key, value| {
            out.push(b' ');
            out.extend_from_slice(key);
            out.extend_from_slice(b"=\"");
            // The writer's own prefixes always name its namespaces, whatever
            // prefixes the input used.
            let value = match key {
                b"xmlns:xaif" => XAIF_NS.as_bytes(),
                b"xmlns:xaifii" => INLINABLE_NS.as_bytes(),
                b"xmlns:xaifnii" => NONINLINABLE_NS.as_bytes(),
                b"xmlns:xsi" => XSI_NS.as_bytes(),
                _ => value,
            };
            escape_into(out, value);
            out.push(b'"');
        });
    }

    /// The root element, declaring `required` namespace prefixes that the
    /// stored attributes do not declare.
    fn root(&mut self, qname: &str, attrs: &Attrs, required: &[(&str, &str)]) {
        self.push(b'<');
        self.push_str(qname);
        for (key, value) in required {
            if !attrs.has(key) {
                self.push(b' ');
                self.push_str(key);
                self.push_str("=\"");
                self.push_str(value);
                self.push(b'"');
            }
        }
        self.attrs(attrs);
        self.push_str(">\n");
        self.depth += 1;
    }

    fn open(&mut self, prefix: &str, name: &str, attrs: &Attrs, empty: bool) {
        self.indent();
        self.push(b'<');
        self.push_str(prefix);
        self.push_str(name);
        self.attrs(attrs);
        if empty {
            self.push_str("/>\n");
        } else {
            self.push_str(">\n");
            self.depth += 1;
        }
    }

    fn empty(&mut self, prefix: &str, name: &str, attrs: &Attrs) {
        self.open(prefix, name, attrs, true);
    }

    fn close(&mut self, prefix: &str, name: &str) {
        self.spill();
        self.depth -= 1;
        self.indent();
        self.push_str("</");
        self.push_str(prefix);
        self.push_str(name);
        self.push_str(">\n");
    }

    fn close_if(&mut self, prefix: &str, name: &str, opened: bool) {
        if opened {
            self.close(prefix, name);
        }
    }

    fn scope_hierarchy(&mut self, p: &Program) {
        let h = &p.scope_hierarchy;
        self.open(X, "ScopeHierarchy", &h.attrs, h.items.is_empty());
        for item in &h.items {
            match item {
                ScopeItem::Edge(attrs) => self.empty(X, "ScopeEdge", attrs),
                ScopeItem::Scope(s) => {
                    let scope = &p.scopes[*s];
                    self.open(X, "Scope", &scope.attrs, scope.tables.is_empty());
                    for table in &scope.tables {
                        self.open(X, "SymbolTable", &table.attrs, table.symbols.is_empty());
                        for sym in &table.symbols {
                            let sym = &p.symbols[*sym];
                            self.open(X, "Symbol", &sym.attrs, sym.bounds.is_empty());
                            for b in &sym.bounds {
                                self.empty(X, "DimensionBounds", b);
                            }
                            self.close_if(X, "Symbol", !sym.bounds.is_empty());
                        }
                        self.close_if(X, "SymbolTable", !table.symbols.is_empty());
                    }
                    self.close_if(X, "Scope", !scope.tables.is_empty());
                }
            }
        }
        self.close_if(X, "ScopeHierarchy", !h.items.is_empty());
    }

    fn routine(&mut self, p: &Program, r: RoutineId) {
        let routine = &p.routines[r];
        let (name, empty) = match &routine.body {
            RoutineBody::Graph(cfg) => (
                "ControlFlowGraph",
                p.cfgs[*cfg].items.is_empty()
                    && routine.arguments.is_none()
                    && routine.side_effects.is_empty(),
            ),
            RoutineBody::Replacements(list) => (
                "ReplacementList",
                list.is_empty() && routine.arguments.is_none(),
            ),
        };
        self.open(X, name, &routine.attrs, empty);
        if empty {
            return;
        }
        if let Some(args) = &routine.arguments {
            self.open(X, "ArgumentList", &args.attrs, args.args.is_empty());
            for a in &args.args {
                self.empty(X, "ArgumentSymbolReference", a);
            }
            self.close_if(X, "ArgumentList", !args.args.is_empty());
        }
        for list in &routine.side_effects {
            let name = list.kind.element();
            self.open(X, name, &list.attrs, list.refs.is_empty());
            for v in &list.refs {
                self.var_ref(X, "SideEffectReference", v);
            }
            self.close_if(X, name, !list.refs.is_empty());
        }
        match &routine.body {
            RoutineBody::Graph(cfg) => self.cfg_items(p, *cfg),
            RoutineBody::Replacements(list) => {
                for rep in list {
                    let empty = p.cfgs[rep.cfg].items.is_empty();
                    self.open(X, "Replacement", &rep.attrs, empty);
                    if !empty {
                        self.cfg_items(p, rep.cfg);
                        self.close(X, "Replacement");
                    }
                }
            }
        }
        self.close(X, name);
    }

    fn cfg_items(&mut self, p: &Program, cfg: CfgId) {
        for item in &p.cfgs[cfg].items {
            match *item {
                CfgItem::Edge(e) => self.empty(X, "ControlFlowEdge", &p.edges[e].attrs),
                CfgItem::Vertex(v) => self.vertex(p, &p.vertices[v]),
            }
        }
    }

    fn vertex(&mut self, p: &Program, v: &CfgVertex) {
        let name = v.kind.element();
        match &v.kind {
            VertexKind::Entry
            | VertexKind::Exit
            | VertexKind::EndBranch
            | VertexKind::EndLoop
            | VertexKind::Goto
            | VertexKind::Label => self.empty(X, name, &v.attrs),
            VertexKind::BasicBlock(stmts) => {
                self.open(X, name, &v.attrs, stmts.is_empty());
                for s in stmts {
                    self.statement(&p.stmts[*s]);
                }
                self.close_if(X, name, !stmts.is_empty());
            }
            VertexKind::Branch(c)
            | VertexKind::If(c)
            | VertexKind::PreLoop(c)
            | VertexKind::PostLoop(c) => {
                self.open(X, name, &v.attrs, c.is_none());
                if let Some(c) = c {
                    self.expr(X, "Condition", c);
                    self.close(X, name);
                }
            }
            VertexKind::ForLoop {
                init,
                condition,
                update,
            } => {
                let empty = init.is_none() && condition.is_none() && update.is_none();
                self.open(X, name, &v.attrs, empty);
                if let Some(s) = init {
                    self.assignment("Initialization", &p.stmts[*s]);
                }
                if let Some(c) = condition {
                    self.expr(X, "Condition", c);
                }
                if let Some(s) = update {
                    self.assignment("Update", &p.stmts[*s]);
                }
                self.close_if(X, name, !empty);
            }
        }
    }

    fn assignment(&mut self, name: &str, s: &Stmt) {
        if let StmtKind::Assignment(a) = &s.kind {
            self.open(X, name, &s.attrs, false);
            self.var_ref(X, "AssignmentLHS", &a.lhs);
            self.expr(X, "AssignmentRHS", &a.rhs);
            self.close(X, name);
        }
    }

    fn statement(&mut self, s: &Stmt) {
        let name = s.kind.element();
        match &s.kind {
            StmtKind::Assignment(_) => self.assignment(name, s),
            StmtKind::Marker => self.empty(X, name, &s.attrs),
            StmtKind::SubroutineCall(args) => {
                self.open(X, name, &s.attrs, args.is_empty());
                for a in args {
                    self.call_arg(a);
                }
                self.close_if(X, name, !args.is_empty());
            }
            StmtKind::InlinableCall(args) => {
                self.open(X, name, &s.attrs, args.is_empty());
                for a in args {
                    match a {
                        InlinableArg::Argument(a) => self.call_arg(a),
                        InlinableArg::Substitute(v) => self.var_ref(X, "ArgumentSubstitute", v),
                    }
                }
                self.close_if(X, name, !args.is_empty());
            }
            StmtKind::DerivativePropagator(entries) => {
                self.open(X, name, &s.attrs, entries.is_empty());
                for e in entries {
                    self.prop_entry(e);
                }
                self.close_if(X, name, !entries.is_empty());
            }
        }
    }

    fn call_arg(&mut self, a: &CallArg) {
        self.open(X, "Argument", &a.attrs, false);
        match &a.value {
            ArgValue::Variable(v) => self.var_ref(X, "VariableReference", v),
            ArgValue::Constant(attrs) => self.empty(X, "Constant", attrs),
        }
        self.close(X, "Argument");
    }

    fn prop_entry(&mut self, e: &PropEntry) {
        let name = e.kind.element();
        match &e.kind {
            PropKind::SetDeriv { tgt, src }
            | PropKind::SetNegDeriv { tgt, src }
            | PropKind::IncDeriv { tgt, src }
            | PropKind::DecDeriv { tgt, src } => {
                self.open(X, name, &e.attrs, false);
                self.var_ref(X, "Tgt", tgt);
                self.var_ref(X, "Src", src);
                self.close(X, name);
            }
            PropKind::Sax { terms, y } | PropKind::Saxpy { terms, y } => {
                self.open(X, name, &e.attrs, false);
                for t in terms {
                    self.open(X, "AX", &t.attrs, false);
                    self.expr(X, "A", &t.a);
                    self.var_ref(X, "X", &t.x);
                    self.close(X, "AX");
                }
                self.var_ref(X, "Y", y);
                self.close(X, name);
            }
            PropKind::ZeroDeriv(v) => self.var_ref(X, name, v),
        }
    }

    fn var_ref(&mut self, prefix: &str, name: &str, v: &VarRef) {
        let empty = v.graph.vertices.is_empty() && v.graph.edges.is_empty();
        self.open(prefix, name, &v.attrs, empty);
        if !empty {
            self.ref_graph(&v.graph);
            self.close(prefix, name);
        }
    }

    fn ref_graph(&mut self, g: &RefGraph) {
        for v in &g.vertices {
            match &v.kind {
                RefVertexKind::Symbol { properties } => {
                    self.open(X, "SymbolReference", &v.attrs, properties.is_empty());
                    for prop in properties {
                        self.empty(X, "SymbolReferenceProperty", prop);
                    }
                    self.close_if(X, "SymbolReference", !properties.is_empty());
                }
                RefVertexKind::ArrayElement { triplets } => {
                    self.open(X, "ArrayElementReference", &v.attrs, triplets.is_empty());
                    for t in triplets {
                        let empty = t.index.is_none() && t.bound.is_none() && t.stride.is_none();
                        self.open(X, "IndexTriplet", &t.attrs, empty);
                        for (name, part) in [
                            ("Index", &t.index),
                            ("Bound", &t.bound),
                            ("Stride", &t.stride),
                        ] {
                            if let Some(e) = part {
                                self.expr(X, name, e);
                            }
                        }
                        self.close_if(X, "IndexTriplet", !empty);
                    }
                    self.close_if(X, "ArrayElementReference", !triplets.is_empty());
                }
            }
        }
        for e in &g.edges {
            self.empty(X, "VariableReferenceEdge", e);
        }
    }

    fn expr(&mut self, prefix: &str, name: &str, e: &Expr) {
        let empty = e.vertices.is_empty() && e.edges.is_empty();
        self.open(prefix, name, &e.attrs, empty);
        if empty {
            return;
        }
        let (mut vi, mut ei) = (0, 0);
        let mut emit = |w: &mut Writer, is_edge: bool| {
            if is_edge {
                w.empty(X, "ExpressionEdge", &e.edges[ei].attrs);
                ei += 1;
            } else {
                w.expr_vertex(&e.vertices[vi]);
                vi += 1;
            }
        };
        match &e.layout {
            Some(layout) => {
                for &is_edge in layout {
                    emit(self, is_edge);
                }
            }
            None => {
                for _ in 0..e.vertices.len() {
                    emit(self, false);
                }
                for _ in 0..e.edges.len() {
                    emit(self, true);
                }
            }
        }
        self.close(prefix, name);
    }

    fn expr_vertex(&mut self, v: &ExprVertex) {
        let name = v.kind.element();
        match &v.kind {
            ExprVertexKind::Constant
            | ExprVertexKind::Intrinsic
            | ExprVertexKind::BooleanOperation => self.empty(X, name, &v.attrs),
            ExprVertexKind::ArgumentReference => self.empty(II, name, &v.attrs),
            ExprVertexKind::VariableReference(g) => {
                let empty = g.vertices.is_empty() && g.edges.is_empty();
                self.open(X, name, &v.attrs, empty);
                if !empty {
                    self.ref_graph(g);
                    self.close(X, name);
                }
            }
            ExprVertexKind::FunctionCall(args) => {
                self.open(X, name, &v.attrs, args.is_empty());
                for a in args {
                    self.var_ref(X, "Argument", a);
                }
                self.close_if(X, name, !args.is_empty());
            }
        }
    }
}

/// Escapes an attribute value so that it reads back unchanged.
/// Characters XML 1.0 does not allow at all (control characters, NUL,
/// U+FFFE, U+FFFF: the reader rejects them, so only a model built in memory
/// can hold them) are written as U+FFFD, so the output is always
/// well-formed.
fn escape_into(out: &mut Vec<u8>, bytes: &[u8]) {
    // Most values (ids, names, numbers) need nothing: one scan, one copy.
    if !bytes
        .iter()
        .any(|&b| b < 0x20 || matches!(b, b'&' | b'<' | b'>' | b'"' | 0xEF))
    {
        out.extend_from_slice(bytes);
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\n' => "&#10;",
            b'\r' => "&#13;",
            b'\t' => "&#9;",
            0..=0x1F => "\u{FFFD}",
            0xEF if matches!(bytes.get(i + 1..i + 3), Some([0xBF, 0xBE | 0xBF])) => {
                // U+FFFE or U+FFFF: replace all three bytes.
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice("\u{FFFD}".as_bytes());
                start = i + 3;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(rep.as_bytes());
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

impl Program {
    /// Marks the program as a transformation result: `xsi:schemaLocation`
    /// names `xaif_output.xsd` in `schema_dir` (as the reference engine's `-s`
    /// does), declaring the `xsi` prefix when needed.
    pub fn mark_as_output(&mut self, schema_dir: &str) {
        let dir = schema_dir.trim_end_matches('/');
        let location = if dir.is_empty() {
            "xaif_output.xsd".to_string()
        } else {
            format!("{dir}/xaif_output.xsd")
        };
        self.attrs.set("xmlns:xsi", XSI_NS);
        self.attrs
            .set("xsi:schemaLocation", format!("{XAIF_NS} {location}"));
        self.ensure_default_keys();
    }

    /// Makes sure each of the three maps has the set with key `0`: both
    /// schemas give `do_chain`, `alias` and `du_ud` the default `0`, so
    /// every assignment a transformation adds without them refers to that
    /// key, and the output would not validate without it.
    pub fn ensure_default_keys(&mut self) {
        let has_zero = |attrs: &Attrs| attrs.get("key").is_some_and(|k| k.trim() == "0");
        let alias = self.alias_map.get_or_insert_with(Default::default);
        if !alias.sets.iter().any(|s| has_zero(&s.attrs)) {
            alias.sets.push(AliasSet {
                attrs: Attrs::new().with("key", "0"),
                ranges: Vec::new(),
            });
        }
        for map in [&mut self.duud_map, &mut self.do_map] {
            let map = map.get_or_insert_with(Default::default);
            if !map.sets.iter().any(|s| has_zero(&s.attrs)) {
                map.sets.push(StmtIdSet {
                    attrs: Attrs::new().with("key", "0"),
                    ids: Vec::new(),
                });
            }
        }
    }

    /// Whether the program is a transformation result: its schema location
    /// names `xaif_output.xsd`, or it holds output-only constructs.
    pub fn is_output(&self) -> bool {
        if self
            .attrs
            .get("xsi:schemaLocation")
            .is_some_and(|l| l.contains("xaif_output"))
        {
            return true;
        }
        self.routines
            .iter()
            .any(|(_, r)| matches!(r.body, RoutineBody::Replacements(_)))
            || self.stmts.iter().any(|(_, s)| {
                matches!(
                    s.kind,
                    StmtKind::DerivativePropagator(_) | StmtKind::InlinableCall(_)
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_and_whitespace() {
        let mut s = Vec::new();
        escape_into(&mut s, b"a<b>&\"c\"\n\td");
        assert_eq!(s, b"a&lt;b&gt;&amp;&quot;c&quot;&#10;&#9;d");
    }
}
