//! The validation gate.
//!
//! Reading accepts anything shaped like XAIF; the gate proves the properties
//! that every pass relies on, so that passes can index without checks:
//!
//! - ids are unique where XAIF uses them as keys: scopes, symbols within a
//!   symbol table, call graph vertices, CFG vertices and edges within one
//!   graph, expression and variable-reference vertices and edges within one
//!   graph, alias / DU-UD / DO set keys, and statement ids within a routine of
//!   a front-end program (transformation results reuse statement ids such as
//!   `inline_push` by convention, so there they are not keys);
//! - references resolve: `scope_id`/`symbol_id` pairs name a symbol in that
//!   scope's table, edges join existing vertices, `alias`, `du_ud` and
//!   `do_chain` keys exist in their maps;
//! - expression graphs are acyclic, have one result vertex, and every
//!   operation has its arguments at positions 1..k exactly once;
//! - a call passes at most one argument per position, and a call of a
//!   routine whose argument list is in the file passes none where that list
//!   has no formal argument;
//! - every non-empty control flow graph has exactly one `Entry` and one
//!   `Exit`;
//! - the attributes the engine interprets parse (integers, booleans, enums).
//!
//! All errors are collected, in document order.

use std::ops::RangeInclusive;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::attrs::{parse_bool, Attrs, Span};
use crate::catalogue::{InlinableCatalogue, InlinableIntrinsic, NonInlinableCatalogue};
use crate::error::{ErrorKind, IdKind, ModelError, ModelErrors, RefKind};
use crate::model::*;
use crate::reader::Document;
use crate::source::SourceMap;

mod cfg_rules;

/// Validates any document.
pub fn validate_document(doc: &Document, source: &SourceMap) -> Result<(), ModelErrors> {
    match doc {
        Document::Program(p) => validate_program(p, source),
        Document::Inlinable(c) => validate_inlinable(c, source),
        Document::NonInlinable(c) => validate_noninlinable(c, source),
    }
}

/// Validates a program; `Ok` means every pass may rely on the properties in
/// the module documentation.
pub fn validate_program(p: &Program, source: &SourceMap) -> Result<(), ModelErrors> {
    let mut gate = Gate::new(source);
    gate.program(p);
    gate.finish()
}

/// Validates a program that is to be transformed with an inlinable
/// intrinsics catalogue: everything [`validate_program`] checks and, for
/// every `Intrinsic` whose name the catalogue defines, a number of
/// arguments in the range `arity` gives: at most its `nr_arguments`, and
/// at least the highest argument its partials read (fewer than
/// `nr_arguments` are Fortran's optional trailing arguments, as in
/// `size(a)`). Linearization instantiates the catalogue's partials with the
/// arguments of each use, so a use and its entry must agree before any
/// transformation starts.
pub fn validate_program_with_arities(
    p: &Program,
    source: &SourceMap,
    arity: &dyn Fn(&str) -> Option<RangeInclusive<usize>>,
) -> Result<(), ModelErrors> {
    let mut gate = Gate::new(source);
    gate.arity = Some(arity);
    gate.program(p);
    gate.finish()
}

/// Validates an inlinable intrinsics catalogue: names unique,
/// `nr_arguments` a positive integer up to
/// [`MAX_ARGUMENTS`](crate::catalogue::MAX_ARGUMENTS), every `Partial` numbered within
/// `1..=nr_arguments` once, its `ArgumentReference`s within
/// `0..=nr_arguments` (0 is the result), a linear or nonlinear partial with
/// an expression built only of argument references, constants and
/// intrinsics, and every intrinsic a partial applies that the catalogue
/// itself defines applied to as many arguments as its entry allows. Repeated
/// edge ids inside one partial are tolerated (the reference catalogue has
/// them); edges are identified by source, target and position there.
pub fn validate_inlinable(c: &InlinableCatalogue, source: &SourceMap) -> Result<(), ModelErrors> {
    let mut gate = Gate::new(source);
    let mut names = FxHashMap::default();
    // Arities first: partials apply intrinsics defined later in the file.
    let arities = catalogue_arities(c);
    let lookup = |name: &str| arities.get(name).cloned();
    gate.arity = Some(&lookup);
    for i in &c.intrinsics {
        gate.inlinable_intrinsic(i, &mut names);
    }
    gate.finish()
}

/// The numbers of arguments each entry of `c` allows: from the highest
/// argument its partials read up to its `nr_arguments` (entries whose
/// `nr_arguments` is invalid are left out: that is reported once, at the
/// entry, not at every use).
fn catalogue_arities(c: &InlinableCatalogue) -> FxHashMap<&str, RangeInclusive<usize>> {
    let mut arities: FxHashMap<&str, RangeInclusive<usize>> = FxHashMap::default();
    for i in &c.intrinsics {
        if let (Some(name), Some(n)) = (i.attrs.get("name"), i.attrs.int("nr_arguments")) {
            if let Some(n) = usize::try_from(n)
                .ok()
                .filter(|n| (1..=crate::catalogue::MAX_ARGUMENTS).contains(n))
            {
                let read = i
                    .partials
                    .iter()
                    .flat_map(|p| &p.vertices)
                    .filter(|v| matches!(v.kind, ExprVertexKind::ArgumentReference))
                    .filter_map(|v| v.attrs.int("argument"))
                    .filter_map(|k| usize::try_from(k).ok())
                    .max()
                    .unwrap_or(0);
                arities.entry(name).or_insert(read.min(n)..=n);
            }
        }
    }
    arities
}

/// Validates a non-inlinable intrinsics catalogue.
pub fn validate_noninlinable(
    c: &NonInlinableCatalogue,
    source: &SourceMap,
) -> Result<(), ModelErrors> {
    let mut gate = Gate::new(source);
    let mut names = FxHashMap::default();
    for e in &c.entries {
        match e.attrs().get("name") {
            Some(name) => gate.unique(
                &mut names,
                name,
                e.attrs(),
                "NonInlinableIntrinsic",
                IdKind::Intrinsic,
            ),
            None => gate.push(
                e.attrs(),
                "NonInlinableIntrinsic",
                ErrorKind::MissingAttribute("name"),
            ),
        }
    }
    gate.finish()
}

/// The resolved edges of an expression graph, per vertex: incoming
/// edges with their positions, whether it has an outgoing edge, its
/// successors.
struct ExprEdges<'e> {
    incoming: Vec<Vec<(i64, &'e Attrs)>>,
    has_out: Vec<bool>,
    succ: Vec<Vec<usize>>,
}

#[derive(Clone, Copy)]
struct ExprRules {
    /// Whether edge ids must be unique.
    edge_ids: bool,
    /// Whether a non-empty expression must have exactly one result vertex
    /// (and an empty one is an error).
    need_root: bool,
}

const PROGRAM_EXPR: ExprRules = ExprRules {
    edge_ids: true,
    need_root: true,
};

/// For an intrinsic name, the numbers of arguments its uses may have
/// (`None`: not in the catalogue).
type ArityOf<'a> = dyn Fn(&str) -> Option<RangeInclusive<usize>> + 'a;

struct Gate<'a> {
    source: &'a SourceMap,
    /// `nr_arguments` of the catalogue's intrinsics, when uses are checked
    /// against a catalogue.
    arity: Option<&'a ArityOf<'a>>,
    errors: Vec<ModelError>,
    /// Symbol ids per scope id.
    symbols: FxHashMap<&'a str, FxHashSet<&'a str>>,
    alias_keys: Option<FxHashSet<&'a str>>,
    duud_keys: Option<FxHashSet<&'a str>>,
    do_keys: Option<FxHashSet<&'a str>>,
    statement_ids_are_keys: bool,
    /// Formal argument counts of the file's routines, by symbol and scope.
    formals: FxHashMap<(&'a str, &'a str), usize>,
}

impl<'a> Gate<'a> {
    fn new(source: &'a SourceMap) -> Self {
        Gate {
            source,
            arity: None,
            errors: Vec::new(),
            symbols: FxHashMap::default(),
            alias_keys: None,
            duud_keys: None,
            do_keys: None,
            statement_ids_are_keys: true,
            formals: FxHashMap::default(),
        }
    }

    fn finish(mut self) -> Result<(), ModelErrors> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            // Document order: by position, stable for equal positions.
            self.errors.sort_by_key(|e| (e.line, e.column));
            Err(ModelErrors(self.errors))
        }
    }

    fn push(&mut self, attrs: &Attrs, element: &str, kind: ErrorKind) {
        self.push_at(attrs.span, element, kind);
    }

    fn push_at(&mut self, span: Span, element: &str, kind: ErrorKind) {
        self.errors.push(self.source.error(span, element, kind));
    }

    fn bad(
        &mut self,
        attrs: &Attrs,
        element: &str,
        attr: &'static str,
        value: &str,
        expected: &'static str,
    ) {
        self.push(
            attrs,
            element,
            ErrorKind::BadAttribute {
                attr,
                value: value.into(),
                expected,
            },
        );
    }

    /// Records `id` in `seen`, reporting a duplicate.
    fn unique<'s>(
        &mut self,
        seen: &mut FxHashMap<&'s str, Span>,
        id: &'s str,
        attrs: &Attrs,
        element: &str,
        what: IdKind,
    ) {
        if let Some(first) = seen.get(id) {
            let (first_line, first_column) = self.source.locate(*first);
            self.push(
                attrs,
                element,
                ErrorKind::DuplicateId {
                    what,
                    id: id.into(),
                    first_line,
                    first_column,
                },
            );
        } else {
            seen.insert(id, attrs.span);
        }
    }

    fn required<'s>(
        &mut self,
        attrs: &'s Attrs,
        element: &str,
        attr: &'static str,
    ) -> Option<&'s str> {
        let v = attrs.get(attr);
        if v.is_none() {
            self.push(attrs, element, ErrorKind::MissingAttribute(attr));
        }
        v
    }

    fn integer(
        &mut self,
        attrs: &Attrs,
        element: &str,
        attr: &'static str,
        required: bool,
    ) -> Option<i64> {
        match attrs.get(attr) {
            None => {
                if required {
                    self.push(attrs, element, ErrorKind::MissingAttribute(attr));
                }
                None
            }
            Some(v) => match v.trim().parse::<i64>() {
                Ok(i) => Some(i),
                Err(_) => {
                    self.bad(attrs, element, attr, v, "an integer");
                    None
                }
            },
        }
    }

    /// An optional attribute that must be an `xsd:nonNegativeInteger` (map
    /// keys and the references to them).
    fn non_negative(&mut self, attrs: &Attrs, element: &str, attr: &'static str) {
        if let Some(v) = attrs.get(attr) {
            let digits = v.trim().trim_start_matches('+');
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                self.bad(attrs, element, attr, v, "a non-negative integer");
            }
        }
    }

    /// A required positive integer attribute (an `xsd:positiveInteger`
    /// that fits in 63 bits).
    fn positive(&mut self, attrs: &Attrs, element: &str, attr: &'static str) -> Option<i64> {
        match attrs.get(attr) {
            None => {
                self.push(attrs, element, ErrorKind::MissingAttribute(attr));
                None
            }
            Some(v) => match v.trim().parse::<i64>() {
                Ok(i) if i > 0 => Some(i),
                _ => {
                    self.bad(attrs, element, attr, v, "a positive integer");
                    None
                }
            },
        }
    }

    /// Reports `value` of `attr` outside `low..=high`; `high` is what
    /// `bound` names (unknown when it did not parse).
    #[allow(clippy::too_many_arguments)]
    fn in_range(
        &mut self,
        attrs: &Attrs,
        element: &str,
        attr: &'static str,
        value: i64,
        low: i64,
        high: Option<i64>,
        bound: &'static str,
    ) {
        if let Some(high) = high {
            if value < low || value > high {
                self.push(
                    attrs,
                    element,
                    ErrorKind::OutOfRange {
                        attr,
                        value,
                        low,
                        high,
                        bound,
                    },
                );
            }
        }
    }

    fn boolean(&mut self, attrs: &Attrs, element: &str, attr: &'static str) {
        if let Some(v) = attrs.get(attr) {
            if parse_bool(v).is_none() {
                self.bad(attrs, element, attr, v, "a boolean (true, false, 1, 0)");
            }
        }
    }

    fn enumeration(
        &mut self,
        attrs: &Attrs,
        element: &str,
        attr: &'static str,
        allowed: &[&str],
        expected: &'static str,
    ) {
        if let Some(v) = attrs.get(attr) {
            if !allowed.contains(&v) {
                self.bad(attrs, element, attr, v, expected);
            }
        }
    }

    // --------------------------------------------------------------- catalogue

    /// One `InlinableIntrinsic`: a unique name, `nr_arguments` within
    /// range, its function and its partials.
    fn inlinable_intrinsic<'s>(
        &mut self,
        i: &'s InlinableIntrinsic,
        names: &mut FxHashMap<&'s str, Span>,
    ) {
        match i.attrs.get("name") {
            Some(name) => self.unique(
                names,
                name,
                &i.attrs,
                "InlinableIntrinsic",
                IdKind::Intrinsic,
            ),
            None => self.push(
                &i.attrs,
                "InlinableIntrinsic",
                ErrorKind::MissingAttribute("name"),
            ),
        }
        let mut arity = self.positive(&i.attrs, "InlinableIntrinsic", "nr_arguments");
        if let Some(n) = arity {
            let most = crate::catalogue::MAX_ARGUMENTS as i64;
            self.in_range(
                &i.attrs,
                "InlinableIntrinsic",
                "nr_arguments",
                n,
                1,
                Some(most),
                "the most arguments an intrinsic may take",
            );
            if n > most {
                arity = None;
            }
        }
        self.expr(
            &i.function,
            "Function",
            ExprRules {
                edge_ids: false,
                need_root: false,
            },
        );
        let mut partial_ids = FxHashMap::default();
        for partial in &i.partials {
            self.partial(partial, arity, &mut partial_ids);
        }
    }

    /// One `Partial` of an intrinsic with `arity` arguments: its id within
    /// `1..=arity` once, argument references within `0..=arity` (0 is the
    /// result), only argument references, constants and intrinsics, an
    /// expression where the type needs one.
    fn partial<'s>(
        &mut self,
        partial: &'s Expr,
        arity: Option<i64>,
        partial_ids: &mut FxHashMap<&'s str, Span>,
    ) {
        if let Some(id) = self.positive(&partial.attrs, "Partial", "partial_id") {
            self.in_range(
                &partial.attrs,
                "Partial",
                "partial_id",
                id,
                1,
                arity,
                "the intrinsic's nr_arguments",
            );
            let id = partial.attrs.get("partial_id").unwrap_or_default().trim();
            self.unique(partial_ids, id, &partial.attrs, "Partial", IdKind::Partial);
        }
        for v in &partial.vertices {
            match v.kind {
                ExprVertexKind::ArgumentReference => {
                    if let Some(k) = v.attrs.int("argument") {
                        self.in_range(
                            &v.attrs,
                            "ArgumentReference",
                            "argument",
                            k,
                            0,
                            arity,
                            "the intrinsic's nr_arguments",
                        );
                    }
                }
                ExprVertexKind::Constant | ExprVertexKind::Intrinsic => {}
                _ => self.push(
                    &v.attrs,
                    v.kind.element(),
                    ErrorKind::UnknownElement {
                        name: v.kind.element().into(),
                        parent: "Partial".into(),
                        old_format: false,
                    },
                ),
            }
        }
        let kind = partial.attrs.get("partial_type").unwrap_or("nonlinear");
        if partial.vertices.is_empty() && matches!(kind, "linear" | "nonlinear") {
            self.push(
                &partial.attrs,
                "Partial",
                ErrorKind::MissingChild(
                    "ArgumentReference (a linear or nonlinear partial needs an expression)",
                ),
            );
        }
        if let Some(t) = partial.attrs.get("partial_type") {
            if !matches!(
                t,
                "passive" | "linear_one" | "linear_minus_one" | "linear" | "nonlinear"
            ) {
                self.bad(
                    &partial.attrs,
                    "Partial",
                    "partial_type",
                    t,
                    "passive, linear_one, linear_minus_one, linear or nonlinear",
                );
            }
        }
        // Passive partials are empty; a non-empty partial computes one value.
        let need_root = !partial.vertices.is_empty();
        self.expr(
            partial,
            "Partial",
            ExprRules {
                edge_ids: false,
                need_root,
            },
        );
    }

    // ----------------------------------------------------------------- program

    fn program(&mut self, p: &'a Program) {
        self.statement_ids_are_keys = !p.is_output();
        self.scopes(p);
        self.maps(p);

        let mut routine_ids = FxHashMap::default();
        for item in &p.items {
            if let CallGraphItem::Routine(r) = item {
                let routine = &p.routines[*r];
                let element = routine_element(routine);
                let id = routine.attrs.get("vertex_id").unwrap_or("1");
                self.unique(
                    &mut routine_ids,
                    id,
                    &routine.attrs,
                    element,
                    IdKind::Routine,
                );
            }
        }
        for (i, attrs) in p.call_edges.iter().enumerate() {
            let _ = i;
            self.edge_ends(attrs, "CallGraphEdge", RefKind::CallGraphEdgeEnd, |id| {
                routine_ids.contains_key(id)
            });
        }
        for item in &p.items {
            if let CallGraphItem::Routine(r) = item {
                let routine = &p.routines[*r];
                // A routine without an argument list (a black box the front
                // end only names) declares nothing to check calls against.
                if let (Some(sym), Some(scope), Some(args)) = (
                    routine.attrs.get("symbol_id"),
                    routine.attrs.get("scope_id"),
                    &routine.arguments,
                ) {
                    self.formals.entry((sym, scope)).or_insert(args.args.len());
                }
            }
        }
        for item in &p.items {
            if let CallGraphItem::Routine(r) = item {
                self.routine(p, *r);
            }
        }
    }

    fn scopes(&mut self, p: &'a Program) {
        let mut scope_ids = FxHashMap::default();
        for item in &p.scope_hierarchy.items {
            if let ScopeItem::Scope(s) = item {
                let scope = &p.scopes[*s];
                let id = scope.attrs.get("vertex_id").unwrap_or("1");
                self.unique(&mut scope_ids, id, &scope.attrs, "Scope", IdKind::Scope);
                let mut seen = FxHashMap::default();
                for table in &scope.tables {
                    for sym in &table.symbols {
                        let sym = &p.symbols[*sym];
                        if let Some(name) = self.required(&sym.attrs, "Symbol", "symbol_id") {
                            self.unique(&mut seen, name, &sym.attrs, "Symbol", IdKind::Symbol);
                        }
                        self.symbol_attrs(sym);
                    }
                }
                self.symbols
                    .entry(id)
                    .or_default()
                    .extend(seen.keys().copied());
            }
        }
        let scopes: FxHashSet<&str> = scope_ids.keys().copied().collect();
        for item in &p.scope_hierarchy.items {
            if let ScopeItem::Edge(attrs) = item {
                self.edge_ends(attrs, "ScopeEdge", RefKind::ScopeEdgeEnd, |id| {
                    scopes.contains(id)
                });
            }
        }
    }

    fn symbol_attrs(&mut self, sym: &Symbol) {
        let a = &sym.attrs;
        self.enumeration(
            a,
            "Symbol",
            "kind",
            &["subroutine", "variable", "pointer"],
            "subroutine, variable or pointer",
        );
        self.enumeration(
            a,
            "Symbol",
            "type",
            &[
                "void", "integer", "real", "complex", "bool", "char", "string", "opaque",
            ],
            "a symbol type (void, integer, real, complex, bool, char, string, opaque)",
        );
        self.enumeration(
            a,
            "Symbol",
            "shape",
            &crate::index::SYMBOL_SHAPES,
            "a shape (scalar, vector, matrix, three_tensor … seven_tensor)",
        );
        for flag in ["active", "temp", "pointer"] {
            self.boolean(a, "Symbol", flag);
        }
        for b in &sym.bounds {
            self.integer(b, "DimensionBounds", "lower", true);
            self.integer(b, "DimensionBounds", "upper", true);
        }
        // Bounds are given for every dimension of the shape or for none (a
        // shape known at run time): a vector with two is no vector.
        let shape = a.get("shape").unwrap_or("scalar");
        if let Some(rank) = crate::index::shape_rank(shape) {
            if !sym.bounds.is_empty() && sym.bounds.len() != rank {
                self.push(
                    a,
                    "Symbol",
                    ErrorKind::ShapeBounds {
                        shape: shape.into(),
                        rank,
                        bounds: sym.bounds.len(),
                    },
                );
            }
        }
    }

    fn maps(&mut self, p: &'a Program) {
        // Both schemas require the three maps with at least one set each;
        // the writer writes what it read, so a program without them could
        // never become valid output.
        for (present, element) in [
            (
                p.alias_map.as_ref().map(|m| (&m.attrs, m.sets.is_empty())),
                "AliasSetMap",
            ),
            (
                p.duud_map.as_ref().map(|m| (&m.attrs, m.sets.is_empty())),
                "DUUDSetMap",
            ),
            (
                p.do_map.as_ref().map(|m| (&m.attrs, m.sets.is_empty())),
                "DOSetMap",
            ),
        ] {
            match present {
                None => self.push(&p.attrs, "CallGraph", ErrorKind::MissingChild(element)),
                Some((attrs, true)) => self.push(
                    attrs,
                    element,
                    ErrorKind::MissingChild(if element == "AliasSetMap" {
                        "AliasSet"
                    } else {
                        "StmtIdSet"
                    }),
                ),
                Some((_, false)) => {}
            }
        }
        if let Some(map) = &p.alias_map {
            let mut keys = FxHashMap::default();
            for set in &map.sets {
                self.non_negative(&set.attrs, "AliasSet", "key");
                if let Some(k) = self.required(&set.attrs, "AliasSet", "key") {
                    self.unique(&mut keys, k, &set.attrs, "AliasSet", IdKind::AliasKey);
                }
                for r in &set.ranges {
                    self.integer(r, "AliasRange", "from_virtual_address", true);
                    self.integer(r, "AliasRange", "to_virtual_address", true);
                    self.boolean(r, "AliasRange", "partial");
                }
            }
            self.alias_keys = Some(keys.keys().copied().collect());
        }
        for (map, element, what) in [
            (&p.duud_map, "DUUDSetMap", IdKind::DuudKey),
            (&p.do_map, "DOSetMap", IdKind::DoKey),
        ] {
            if let Some(map) = map {
                let mut keys = FxHashMap::default();
                for set in &map.sets {
                    self.non_negative(&set.attrs, "StmtIdSet", "key");
                    if let Some(k) = self.required(&set.attrs, "StmtIdSet", "key") {
                        self.unique(&mut keys, k, &set.attrs, element, what);
                    }
                }
                let keys = Some(keys.keys().copied().collect());
                if what == IdKind::DuudKey {
                    self.duud_keys = keys;
                } else {
                    self.do_keys = keys;
                }
            }
        }
    }

    fn edge_ends(
        &mut self,
        attrs: &Attrs,
        element: &str,
        what: RefKind,
        exists: impl Fn(&str) -> bool,
    ) {
        self.required(attrs, element, "edge_id");
        for end in ["source", "target"] {
            if let Some(id) = attrs.get(end) {
                if !exists(id) {
                    self.push(
                        attrs,
                        element,
                        ErrorKind::DanglingReference {
                            what,
                            id: id.into(),
                        },
                    );
                }
            } else {
                self.push(
                    attrs,
                    element,
                    ErrorKind::MissingAttribute(if end == "source" { "source" } else { "target" }),
                );
            }
        }
    }

    /// Checks a `scope_id`/`symbol_id` pair.
    fn symbol_pair(&mut self, attrs: &Attrs, element: &str) {
        let scope = attrs.get("scope_id");
        let symbol = attrs.get("symbol_id");
        match (scope, symbol) {
            (Some(scope), Some(symbol)) => match self.symbols.get(scope) {
                None => self.push(
                    attrs,
                    element,
                    ErrorKind::DanglingReference {
                        what: RefKind::Scope,
                        id: scope.into(),
                    },
                ),
                Some(table) => {
                    if !table.contains(symbol) {
                        self.push(
                            attrs,
                            element,
                            ErrorKind::DanglingReference {
                                what: RefKind::Symbol,
                                id: symbol.into(),
                            },
                        )
                    }
                }
            },
            (None, _) => self.push(attrs, element, ErrorKind::MissingAttribute("scope_id")),
            (_, None) => self.push(attrs, element, ErrorKind::MissingAttribute("symbol_id")),
        }
    }

    fn scope_ref(&mut self, attrs: &Attrs, element: &str, attr: &'static str) {
        if let Some(scope) = attrs.get(attr) {
            if !self.symbols.contains_key(scope) {
                self.push(
                    attrs,
                    element,
                    ErrorKind::DanglingReference {
                        what: RefKind::Scope,
                        id: scope.into(),
                    },
                );
            }
        }
    }

    fn key_ref(&mut self, attrs: &Attrs, element: &str) {
        for (attr, what) in [
            ("alias", RefKind::AliasKey),
            ("du_ud", RefKind::DuudKey),
            ("do_chain", RefKind::DoKey),
        ] {
            self.non_negative(attrs, element, attr);
            let Some(key) = attrs.get(attr) else { continue };
            let keys = match what {
                RefKind::AliasKey => &self.alias_keys,
                RefKind::DuudKey => &self.duud_keys,
                _ => &self.do_keys,
            };
            let missing = match keys {
                Some(keys) => !keys.contains(key),
                None => true,
            };
            if missing {
                self.push(
                    attrs,
                    element,
                    ErrorKind::DanglingReference {
                        what,
                        id: key.into(),
                    },
                );
            }
        }
    }

    fn routine(&mut self, p: &'a Program, r: RoutineId) {
        let routine = &p.routines[r];
        let element = routine_element(routine);
        self.symbol_pair(&routine.attrs, element);
        self.required(&routine.attrs, element, "controlflowgraph_scope_id");
        self.scope_ref(&routine.attrs, element, "controlflowgraph_scope_id");
        self.boolean(&routine.attrs, element, "structured");
        if let Some(args) = &routine.arguments {
            let mut positions = FxHashMap::default();
            for a in &args.args {
                self.symbol_pair(a, "ArgumentSymbolReference");
                if let Some(pos) = self.integer(a, "ArgumentSymbolReference", "position", true) {
                    // Formals are numbered 1..k; passes index by position.
                    self.in_range(
                        a,
                        "ArgumentSymbolReference",
                        "position",
                        pos,
                        1,
                        i64::try_from(args.args.len()).ok(),
                        "the number of formal arguments",
                    );
                    let key = pos.to_string();
                    if positions.contains_key(key.as_str()) {
                        self.push(
                            a,
                            "ArgumentSymbolReference",
                            ErrorKind::DuplicatePosition {
                                vertex: routine.attrs.get("symbol_id").unwrap_or("").into(),
                                position: pos,
                            },
                        );
                    } else {
                        positions.insert(key, ());
                    }
                }
                self.enumeration(
                    a,
                    "ArgumentSymbolReference",
                    "intent",
                    &["in", "out", "inout"],
                    "in, out or inout",
                );
            }
        }
        for list in &routine.side_effects {
            for v in &list.refs {
                self.var_ref(v, "SideEffectReference");
            }
        }
        let mut statement_ids = FxHashMap::default();
        match &routine.body {
            RoutineBody::Graph(cfg) => self.cfg(p, *cfg, &mut statement_ids),
            RoutineBody::Replacements(list) => {
                for rep in list {
                    self.boolean(&rep.attrs, "Replacement", "structured");
                    self.required(&rep.attrs, "Replacement", "placeholder");
                    // Statement ids of different replacements are distinct
                    // code versions of the same statements.
                    let mut ids = FxHashMap::default();
                    self.cfg(p, rep.cfg, &mut ids);
                }
            }
        }
    }

    fn cfg(&mut self, p: &'a Program, cfg: CfgId, statement_ids: &mut FxHashMap<&'a str, Span>) {
        let body = &p.cfgs[cfg];
        let mut vertex_ids = FxHashMap::default();
        let mut edge_ids = FxHashMap::default();
        let (mut entries, mut exits) = (0, 0);
        let mut first_span = None;
        for v in body.vertex_ids() {
            let vertex = &p.vertices[v];
            let element = vertex.kind.element();
            first_span.get_or_insert(vertex.attrs.span);
            let id = vertex.attrs.get("vertex_id").unwrap_or("1");
            self.unique(
                &mut vertex_ids,
                id,
                &vertex.attrs,
                element,
                IdKind::CfgVertex,
            );
            match &vertex.kind {
                VertexKind::Entry => entries += 1,
                VertexKind::Exit => exits += 1,
                _ => {}
            }
            self.vertex(p, vertex, statement_ids);
        }
        for e in body.edge_ids() {
            let edge = &p.edges[e];
            if let Some(id) = edge.attrs.get("edge_id") {
                self.unique(
                    &mut edge_ids,
                    id,
                    &edge.attrs,
                    "ControlFlowEdge",
                    IdKind::CfgEdge,
                );
            }
            self.edge_ends(&edge.attrs, "ControlFlowEdge", RefKind::CfgEdgeEnd, |id| {
                vertex_ids.contains_key(id)
            });
            self.boolean(&edge.attrs, "ControlFlowEdge", "has_condition_value");
            self.integer(&edge.attrs, "ControlFlowEdge", "condition_value", false);
        }
        if !body.items.is_empty() && (entries != 1 || exits != 1) {
            let routine = &p.routines[body.routine];
            let span = first_span.unwrap_or(routine.attrs.span);
            self.push_at(
                span,
                routine_element(routine),
                ErrorKind::EntryExitCount { entries, exits },
            );
        } else if !body.items.is_empty() && graph_resolves(p, cfg) {
            self.cfg_rules(p, cfg);
        }
    }

    fn vertex(
        &mut self,
        p: &'a Program,
        v: &'a CfgVertex,
        statement_ids: &mut FxHashMap<&'a str, Span>,
    ) {
        let element = v.kind.element();
        match &v.kind {
            VertexKind::BasicBlock(stmts) => {
                self.required(&v.attrs, element, "scope_id");
                self.scope_ref(&v.attrs, element, "scope_id");
                for s in stmts {
                    self.statement(&p.stmts[*s], statement_ids);
                }
            }
            VertexKind::ForLoop {
                init,
                condition,
                update,
            } => {
                self.enumeration(
                    &v.attrs,
                    element,
                    "reversal",
                    &["explicit", "anonymous"],
                    "explicit or anonymous",
                );
                for s in [init, update].into_iter().flatten() {
                    self.statement(&p.stmts[*s], statement_ids);
                }
                if let Some(c) = condition {
                    self.expr(c, "Condition", PROGRAM_EXPR);
                }
            }
            _ => {
                if let Some(c) = v.kind.condition() {
                    self.expr(c, "Condition", PROGRAM_EXPR);
                }
            }
        }
    }

    fn statement(&mut self, s: &'a Stmt, statement_ids: &mut FxHashMap<&'a str, Span>) {
        let element = s.kind.element();
        if let Some(id) = s.attrs.get("statement_id") {
            let is_key = self.statement_ids_are_keys
                && matches!(
                    s.kind,
                    StmtKind::Assignment(_) | StmtKind::SubroutineCall(_) | StmtKind::Marker
                );
            if is_key {
                self.unique(statement_ids, id, &s.attrs, element, IdKind::Statement);
            }
        } else if !matches!(s.kind, StmtKind::DerivativePropagator(_)) {
            self.push(
                &s.attrs,
                element,
                ErrorKind::MissingAttribute("statement_id"),
            );
        }
        match &s.kind {
            StmtKind::Assignment(a) => {
                self.key_ref(&s.attrs, element);
                self.var_ref(&a.lhs, "AssignmentLHS");
                self.expr(&a.rhs, "AssignmentRHS", PROGRAM_EXPR);
            }
            StmtKind::SubroutineCall(args) => {
                self.symbol_pair(&s.attrs, element);
                let callee = s.attrs.get("symbol_id").unwrap_or("");
                let formals = s
                    .attrs
                    .get("scope_id")
                    .and_then(|scope| self.formals.get(&(callee, scope)).copied());
                let mut taken = FxHashSet::default();
                for a in args {
                    let Some(pos) = self.call_arg_once(a, callee, &mut taken) else {
                        continue;
                    };
                    if let Some(n) = formals {
                        if pos >= 1 && usize::try_from(pos).map_or(true, |p| p > n) {
                            self.push(
                                &a.attrs,
                                "Argument",
                                ErrorKind::CallPositionNoFormal {
                                    routine: callee.into(),
                                    position: pos,
                                    formals: n,
                                },
                            );
                        }
                    }
                }
            }
            StmtKind::Marker => {}
            StmtKind::InlinableCall(args) => {
                self.required(&s.attrs, element, "subroutine_name");
                let callee = s.attrs.get("subroutine_name").unwrap_or("");
                let mut taken = FxHashSet::default();
                for a in args {
                    match a {
                        InlinableArg::Argument(a) => {
                            self.call_arg_once(a, callee, &mut taken);
                        }
                        InlinableArg::Substitute(v) => {
                            self.integer(&v.attrs, "ArgumentSubstitute", "position", true);
                            self.var_ref(v, "ArgumentSubstitute");
                        }
                    }
                }
            }
            StmtKind::DerivativePropagator(entries) => {
                for e in entries {
                    match &e.kind {
                        PropKind::SetDeriv { tgt, src }
                        | PropKind::SetNegDeriv { tgt, src }
                        | PropKind::IncDeriv { tgt, src }
                        | PropKind::DecDeriv { tgt, src } => {
                            self.var_ref(tgt, "Tgt");
                            self.var_ref(src, "Src");
                        }
                        PropKind::Sax { terms, y } | PropKind::Saxpy { terms, y } => {
                            for t in terms {
                                self.expr(&t.a, "A", PROGRAM_EXPR);
                                self.var_ref(&t.x, "X");
                            }
                            self.var_ref(y, "Y");
                        }
                        PropKind::ZeroDeriv(v) => self.var_ref(v, "ZeroDeriv"),
                    }
                }
            }
        }
    }

    /// Checks a call's argument and that its position is not taken yet
    /// (passes and the back end index the actuals by position); returns
    /// the position when it is new.
    fn call_arg_once(
        &mut self,
        a: &CallArg,
        callee: &str,
        taken: &mut FxHashSet<i64>,
    ) -> Option<i64> {
        self.call_arg(a);
        let pos = a.attrs.int("position")?;
        if taken.insert(pos) {
            return Some(pos);
        }
        self.push(
            &a.attrs,
            "Argument",
            ErrorKind::CallPositionTaken {
                routine: callee.into(),
                position: pos,
            },
        );
        None
    }

    fn call_arg(&mut self, a: &CallArg) {
        self.integer(&a.attrs, "Argument", "position", true);
        match &a.value {
            ArgValue::Variable(v) => self.var_ref(v, "VariableReference"),
            ArgValue::Constant(attrs) => self.constant(attrs),
        }
    }

    fn constant(&mut self, attrs: &Attrs) {
        self.required(attrs, "Constant", "value");
        self.required(attrs, "Constant", "type");
        self.enumeration(
            attrs,
            "Constant",
            "type",
            &["real", "double", "integer", "bool", "char", "string"],
            "real, double, integer, bool, char or string",
        );
        // A number's text must be one: `2,0`, `0x2` or nothing mean nothing.
        let (Some(ty), Some(value)) = (attrs.get("type"), attrs.get("value")) else {
            return;
        };
        let expected = match ty {
            "real" | "double" if !is_real_literal(value) => {
                "a real number (digits with an optional point, and an optional exponent with e, E, d or D)"
            }
            "integer" if !is_integer_literal(value) => "an integer (digits with an optional sign)",
            "bool" if !is_bool_literal(value) => "true, false, 1 or 0",
            _ => return,
        };
        self.bad(attrs, "Constant", "value", value, expected);
    }

    fn var_ref(&mut self, v: &VarRef, element: &str) {
        self.key_ref(&v.attrs, element);
        self.ref_graph(&v.graph, element, &v.attrs);
    }

    fn ref_graph(&mut self, g: &RefGraph, element: &str, owner: &Attrs) {
        if g.vertices.is_empty() {
            self.push(owner, element, ErrorKind::MissingChild("SymbolReference"));
            return;
        }
        let mut ids = FxHashMap::default();
        for v in &g.vertices {
            let id = v.attrs.get("vertex_id").unwrap_or("1");
            match &v.kind {
                RefVertexKind::Symbol { .. } => {
                    self.unique(&mut ids, id, &v.attrs, "SymbolReference", IdKind::RefVertex);
                    self.symbol_pair(&v.attrs, "SymbolReference");
                }
                RefVertexKind::ArrayElement { triplets } => {
                    self.unique(
                        &mut ids,
                        id,
                        &v.attrs,
                        "ArrayElementReference",
                        IdKind::RefVertex,
                    );
                    for t in triplets {
                        for (name, part) in [
                            ("Index", &t.index),
                            ("Bound", &t.bound),
                            ("Stride", &t.stride),
                        ] {
                            if let Some(e) = part {
                                self.expr(e, name, PROGRAM_EXPR);
                            }
                        }
                    }
                }
            }
        }
        let mut edge_ids = FxHashMap::default();
        for e in &g.edges {
            if let Some(id) = e.get("edge_id") {
                self.unique(
                    &mut edge_ids,
                    id,
                    e,
                    "VariableReferenceEdge",
                    IdKind::RefVertex,
                );
            }
            self.edge_ends(e, "VariableReferenceEdge", RefKind::RefEdgeEnd, |id| {
                ids.contains_key(id)
            });
        }
    }

    /// An expression graph: its vertices, its edges and, once those
    /// resolve, one result vertex, intrinsic arities, argument positions
    /// 1..k and no cycle.
    fn expr(&mut self, e: &Expr, element: &str, rules: ExprRules) {
        let index = self.expr_vertices(e);
        let Some(edges) = self.expr_edges(e, &index, rules) else {
            return;
        };
        // Further checks only make sense on a graph whose ids resolve
        // uniquely; otherwise they would repeat the errors above.
        if index.len() != e.vertices.len() {
            return;
        }
        if rules.need_root {
            self.expr_root(e, element, &edges.has_out);
        }
        self.expr_arities(e, &edges.incoming);
        self.expr_positions(e, edges.incoming);
        self.expr_cycles(e, &edges.succ);
    }

    /// The vertices of `e`: unique ids and what each kind requires; the
    /// index of each id (its first vertex).
    fn expr_vertices<'e>(&mut self, e: &'e Expr) -> FxHashMap<&'e str, usize> {
        let mut ids: FxHashMap<&str, Span> = FxHashMap::default();
        let mut index: FxHashMap<&str, usize> = FxHashMap::default();
        for (i, v) in e.vertices.iter().enumerate() {
            let vel = v.kind.element();
            let id = v.attrs.get("vertex_id").unwrap_or("1");
            self.unique(&mut ids, id, &v.attrs, vel, IdKind::ExprVertex);
            index.entry(id).or_insert(i);
            match &v.kind {
                ExprVertexKind::VariableReference(g) => {
                    self.key_ref(&v.attrs, vel);
                    self.ref_graph(g, vel, &v.attrs);
                }
                ExprVertexKind::Constant => self.constant(&v.attrs),
                ExprVertexKind::Intrinsic => {
                    self.required(&v.attrs, vel, "name");
                }
                ExprVertexKind::BooleanOperation => {
                    self.required(&v.attrs, vel, "name");
                    self.enumeration(
                        &v.attrs,
                        vel,
                        "name",
                        &[
                            "less_than",
                            "less_or_equal",
                            "greater_than",
                            "greater_or_equal",
                            "equal",
                            "not_equal",
                            "and",
                            "or",
                            "not",
                            "xor",
                        ],
                        "a boolean operation (less_than, less_or_equal, greater_than, greater_or_equal, equal, not_equal, and, or, not, xor)",
                    );
                }
                ExprVertexKind::FunctionCall(args) => {
                    for a in args {
                        self.var_ref(a, "Argument");
                    }
                }
                ExprVertexKind::ArgumentReference => {
                    self.integer(&v.attrs, vel, "argument", true);
                }
            }
        }
        index
    }

    /// The edges of `e`: unique ids (where `rules` asks), positions, ends
    /// that exist. `None` when some edge does not resolve.
    fn expr_edges<'e>(
        &mut self,
        e: &'e Expr,
        index: &FxHashMap<&str, usize>,
        rules: ExprRules,
    ) -> Option<ExprEdges<'e>> {
        let n = e.vertices.len();
        let mut edge_ids = FxHashMap::default();
        let mut edges = ExprEdges {
            incoming: vec![Vec::new(); n],
            has_out: vec![false; n],
            succ: vec![Vec::new(); n],
        };
        let mut resolved = true;
        for edge in &e.edges {
            let a = &edge.attrs;
            if rules.edge_ids {
                if let Some(id) = a.get("edge_id") {
                    self.unique(&mut edge_ids, id, a, "ExpressionEdge", IdKind::ExprEdge);
                }
            }
            let position = self.integer(a, "ExpressionEdge", "position", true);
            self.edge_ends(a, "ExpressionEdge", RefKind::ExprEdgeEnd, |id| {
                index.contains_key(id)
            });
            let s = a.get("source").and_then(|id| index.get(id).copied());
            let t = a.get("target").and_then(|id| index.get(id).copied());
            match (s, t, position) {
                (Some(s), Some(t), Some(pos)) => {
                    edges.incoming[t].push((pos, a));
                    edges.has_out[s] = true;
                    edges.succ[s].push(t);
                }
                _ => resolved = false,
            }
        }
        resolved.then_some(edges)
    }

    /// Exactly one vertex without outgoing edges: the result.
    fn expr_root(&mut self, e: &Expr, element: &str, has_out: &[bool]) {
        let roots = has_out.iter().filter(|o| !**o).count();
        if roots != 1 {
            let span = e
                .vertices
                .first()
                .map(|v| v.attrs.span)
                .unwrap_or(e.attrs.span);
            self.push_at(span, element, ErrorKind::ExpressionRoots { roots });
        }
    }

    /// Intrinsics the catalogue defines: as many arguments as it allows.
    fn expr_arities(&mut self, e: &Expr, incoming: &[Vec<(i64, &Attrs)>]) {
        let Some(arity) = self.arity else {
            return;
        };
        for (t, v) in e.vertices.iter().enumerate() {
            if !matches!(v.kind, ExprVertexKind::Intrinsic) {
                continue;
            }
            let Some(name) = v.attrs.get("name") else {
                continue;
            };
            if let Some(allowed) = arity(name) {
                // Fewer than nr_arguments are Fortran's optional trailing
                // arguments (`size(a)` of `size(a, dim)`), as long as the
                // partials do not read them.
                if !allowed.contains(&incoming[t].len()) {
                    self.push(
                        &v.attrs,
                        "Intrinsic",
                        ErrorKind::IntrinsicArity {
                            name: name.into(),
                            found: incoming[t].len(),
                            least: *allowed.start(),
                            most: *allowed.end(),
                        },
                    );
                }
            }
        }
    }

    /// Positions: exactly 1..k, once each.
    fn expr_positions(&mut self, e: &Expr, mut incoming: Vec<Vec<(i64, &Attrs)>>) {
        for (t, ins) in incoming.iter_mut().enumerate() {
            if ins.is_empty() {
                continue;
            }
            ins.sort_by_key(|(p, _)| *p);
            let vertex: &str = e.vertices[t].attrs.get("vertex_id").unwrap_or("1");
            for w in ins.windows(2) {
                if w[0].0 == w[1].0 {
                    self.push(
                        w[1].1,
                        "ExpressionEdge",
                        ErrorKind::DuplicatePosition {
                            vertex: vertex.into(),
                            position: w[1].0,
                        },
                    );
                }
            }
            let mut expected = 1;
            for (pos, attrs) in ins.iter() {
                if *pos == expected {
                    expected += 1;
                } else if *pos > expected {
                    self.push(
                        attrs,
                        "ExpressionEdge",
                        ErrorKind::MissingPosition {
                            vertex: vertex.into(),
                            position: expected,
                            found: ins.len(),
                        },
                    );
                    break;
                }
            }
        }
    }

    /// Cycles: iterative three-colour depth-first search; the first cycle
    /// found is reported.
    fn expr_cycles(&mut self, e: &Expr, succ: &[Vec<usize>]) {
        let n = e.vertices.len();
        let mut colour = vec![0u8; n];
        for start in 0..n {
            if colour[start] != 0 {
                continue;
            }
            let mut stack = vec![(start, 0usize)];
            colour[start] = 1;
            while let Some((v, i)) = stack.pop() {
                if i < succ[v].len() {
                    stack.push((v, i + 1));
                    let w = succ[v][i];
                    if colour[w] == 1 {
                        let vertex = e.vertices[w].attrs.get("vertex_id").unwrap_or("1");
                        self.push(
                            &e.vertices[w].attrs,
                            e.vertices[w].kind.element(),
                            ErrorKind::CyclicExpression {
                                vertex: vertex.into(),
                            },
                        );
                        return;
                    }
                    if colour[w] == 0 {
                        colour[w] = 1;
                        stack.push((w, 0));
                    }
                } else {
                    colour[v] = 2;
                }
            }
        }
    }
}

/// Whether `text` (blanks around it aside) is a real literal: an optional
/// sign, digits with an optional point (at least one digit), and an
/// optional exponent of `e`, `E`, `d` or `D` with an optional sign and
/// digits, as Fortran and the front end write them.
fn is_real_literal(text: &str) -> bool {
    let t = text.trim();
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (mantissa, exponent) = match t.find(['e', 'E', 'd', 'D']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = digits(int) && digits(frac) && !(int.is_empty() && frac.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    mantissa_ok && exponent_ok
}

/// Whether `text` (blanks around it aside) is an integer literal: an
/// optional sign and digits.
fn is_integer_literal(text: &str) -> bool {
    let t = text.trim();
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())
}

/// Whether `text` is a logical literal the oracle reads: `true`, `false`,
/// `1`, `0`, `t`, `f`, also as Fortran writes them (`.true.`), in any case.
fn is_bool_literal(text: &str) -> bool {
    matches!(
        text.trim().to_ascii_lowercase().trim_matches('.'),
        "true" | "false" | "1" | "0" | "t" | "f"
    )
}

/// Whether the vertex ids of `cfg` are unique, its edges join existing
/// vertices and their condition values are integers: only then do the
/// structural rules (`cfg_rules`) say anything the errors above do not.
fn graph_resolves(p: &Program, cfg: CfgId) -> bool {
    let body = &p.cfgs[cfg];
    let mut ids = FxHashSet::default();
    for v in body.vertex_ids() {
        if !ids.insert(p.vertices[v].attrs.get("vertex_id").unwrap_or("1")) {
            return false;
        }
    }
    body.edge_ids().all(|e| {
        let a = &p.edges[e].attrs;
        let end = |k| a.get(k).is_some_and(|id| ids.contains(id));
        let value = a
            .get("condition_value")
            .is_none_or(|v| v.trim().parse::<i64>().is_ok());
        end("source") && end("target") && value
    })
}

fn routine_element(r: &Routine) -> &'static str {
    match r.body {
        RoutineBody::Graph(_) => "ControlFlowGraph",
        RoutineBody::Replacements(_) => "ReplacementList",
    }
}
