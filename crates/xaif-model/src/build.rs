//! Constructors for the XAIF a transformation emits.
//!
//! Passes build new statements (temporaries, partials, propagators, tape
//! calls) and new symbols. These helpers produce elements in the canonical
//! layout the reference engine writes (vertices numbered from 1, then the
//! edges), so every pass emits XAIF the same way.

use crate::attrs::Attrs;
use crate::model::*;

/// The attributes of a `SymbolReference` (`vertex_id`, `symbol_id`,
/// `scope_id`).
pub fn symbol_ref_attrs(scope_id: &str, symbol_id: &str) -> Attrs {
    Attrs::new()
        .with("vertex_id", "1")
        .with("symbol_id", symbol_id)
        .with("scope_id", scope_id)
}

impl RefGraph {
    /// A reference to a whole variable.
    pub fn symbol(scope_id: &str, symbol_id: &str) -> RefGraph {
        RefGraph {
            vertices: vec![RefVertex {
                attrs: symbol_ref_attrs(scope_id, symbol_id),
                kind: RefVertexKind::Symbol {
                    properties: Vec::new(),
                },
            }],
            edges: Vec::new(),
        }
    }

    /// The `scope_id` and `symbol_id` of the referenced symbol.
    pub fn symbol_ids(&self) -> Option<(&str, &str)> {
        let a = self.symbol_ref()?;
        Some((a.get("scope_id")?, a.get("symbol_id")?))
    }
}

impl VarRef {
    /// A reference to a whole variable with the given element attributes.
    pub fn symbol(attrs: Attrs, scope_id: &str, symbol_id: &str) -> VarRef {
        VarRef {
            attrs,
            graph: RefGraph::symbol(scope_id, symbol_id),
        }
    }

    /// The same reference with `deriv` set (a reference to the derivative
    /// part) and attributes replaced by `attrs`.
    pub fn with_attrs(&self, attrs: Attrs) -> VarRef {
        VarRef {
            attrs,
            graph: self.graph.clone(),
        }
    }
}

/// Builds an expression graph vertex by vertex.
#[derive(Debug, Default)]
pub struct ExprBuilder {
    vertices: Vec<ExprVertex>,
    edges: Vec<(usize, usize, usize)>,
}

impl ExprBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a vertex; its `vertex_id` is assigned on [`ExprBuilder::finish`].
    /// Returns its index.
    pub fn vertex(&mut self, attrs: Attrs, kind: ExprVertexKind) -> usize {
        self.vertices.push(ExprVertex { attrs, kind });
        self.vertices.len() - 1
    }

    /// Adds a `Constant`.
    pub fn constant(&mut self, ty: &str, value: &str) -> usize {
        self.vertex(
            Attrs::new().with("type", ty).with("value", value),
            ExprVertexKind::Constant,
        )
    }

    /// Adds a real constant written so that it reads back as the same
    /// double.
    pub fn real(&mut self, x: f64) -> usize {
        self.constant("real", &real_text(x))
    }

    /// Adds a `VariableReference` (whole variable).
    pub fn variable(&mut self, attrs: Attrs, scope_id: &str, symbol_id: &str) -> usize {
        self.vertex(
            attrs,
            ExprVertexKind::VariableReference(RefGraph::symbol(scope_id, symbol_id)),
        )
    }

    /// Adds a `VariableReference` with the reference graph of `r`.
    pub fn reference(&mut self, r: &VarRef) -> usize {
        self.vertex(
            r.attrs.clone(),
            ExprVertexKind::VariableReference(r.graph.clone()),
        )
    }

    /// Adds an `Intrinsic` applied to `args` (in position order).
    pub fn intrinsic(&mut self, name: &str, args: &[usize]) -> usize {
        let v = self.vertex(Attrs::new().with("name", name), ExprVertexKind::Intrinsic);
        for (i, a) in args.iter().enumerate() {
            self.edge(*a, v, i + 1);
        }
        v
    }

    /// Adds an edge from argument `source` to operation `target` at
    /// `position` (1-based).
    pub fn edge(&mut self, source: usize, target: usize, position: usize) {
        self.edges.push((source, target, position));
    }

    /// The finished expression: vertex ids `1..`, then edges `1..`.
    pub fn finish(self) -> Expr {
        let mut vertices = self.vertices;
        for (i, v) in vertices.iter_mut().enumerate() {
            v.attrs.set("vertex_id", (i + 1).to_string());
        }
        let edges = self
            .edges
            .iter()
            .enumerate()
            .map(|(k, (s, t, p))| ExprEdge {
                attrs: Attrs::new()
                    .with("edge_id", (k + 1).to_string())
                    .with("source", (s + 1).to_string())
                    .with("target", (t + 1).to_string())
                    .with("position", p.to_string()),
            })
            .collect();
        Expr {
            attrs: Attrs::new(),
            vertices,
            edges,
            layout: None,
        }
    }
}

/// The shortest decimal text that reads back as exactly `x`, in the form
/// XAIF constants use.
pub fn real_text(x: f64) -> String {
    let s = format!("{x:e}");
    // `1e0` → `1.0e0` reads better and parses everywhere.
    if s.contains('.') {
        s
    } else {
        s.replacen('e', ".0e", 1)
    }
}

/// An `Assignment` statement.
pub fn assignment(statement_id: &str, lhs: VarRef, rhs: Expr) -> Stmt {
    Stmt {
        attrs: Attrs::new().with("statement_id", statement_id),
        kind: StmtKind::Assignment(Assignment { lhs, rhs }),
    }
}

/// An `InlinableSubroutineCall` with variable or constant arguments.
pub fn inlinable_call(name: &str, statement_id: &str, args: Vec<ArgValue>) -> Stmt {
    Stmt {
        attrs: Attrs::from_pairs([("subroutine_name", name), ("statement_id", statement_id)]),
        kind: StmtKind::InlinableCall(
            args.into_iter()
                .enumerate()
                .map(|(i, value)| {
                    InlinableArg::Argument(CallArg {
                        attrs: Attrs::new().with("position", (i + 1).to_string()),
                        value,
                    })
                })
                .collect(),
        ),
    }
}

impl Program {
    /// Appends a symbol to the first symbol table of `scope` and returns its
    /// handle.
    pub fn add_symbol(&mut self, scope: ScopeId, attrs: Attrs, bounds: Vec<Attrs>) -> SymbolId {
        let id = self.symbols.alloc(Symbol {
            attrs,
            bounds,
            scope,
        });
        let s = &mut self.scopes[scope];
        if s.tables.is_empty() {
            s.tables.push(SymbolTable {
                attrs: Attrs::new(),
                symbols: Vec::new(),
            });
        }
        s.tables[0].symbols.push(id);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_text_round_trips() {
        for x in [1.0, -0.5, 0.1, 1e-300, 2.5e10, 0.1f32 as f64] {
            assert_eq!(real_text(x).parse::<f64>().unwrap(), x);
        }
        assert_eq!(real_text(1.0), "1.0e0");
    }

    #[test]
    fn builder_numbers_vertices_and_edges() {
        let mut b = ExprBuilder::new();
        let x = b.variable(Attrs::new(), "2", "x");
        let c = b.real(2.0);
        b.intrinsic("mul_scal_scal", &[x, c]);
        let e = b.finish();
        assert_eq!(e.vertices[2].attrs.get("vertex_id"), Some("3"));
        assert_eq!(e.edges[1].attrs.get("source"), Some("2"));
        assert_eq!(e.edges[1].attrs.get("position"), Some("2"));
        let g = crate::ExprGraph::new(&e).unwrap();
        assert_eq!(g.root, 2);
        assert_eq!(g.args[2], vec![0, 1]);
    }
}
