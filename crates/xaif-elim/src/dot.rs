//! Graphviz output of input and remainder graphs, for the driver's `--dot`
//! flag and for debugging eliminations by eye.
//!
//! Independents are boxes, intermediates ellipses, dependents double
//! circles; vertices show their name (or id), edges their value. Variable
//! labels are shown as `vN` unless the caller supplies names.

use std::fmt::Write;

use crate::graph::{Lcg, VarId, VertexId, VertexKind};
use crate::result::Remainder;

impl Lcg {
    /// The graph in dot syntax, variables shown as `vN`.
    pub fn to_dot(&self) -> String {
        self.to_dot_with(&|var| var.to_string())
    }

    /// The graph in dot syntax with caller names for variable labels.
    pub fn to_dot_with(&self, var_name: &dyn Fn(VarId) -> String) -> String {
        let vertices = self.vertices().map(|v| {
            (
                v,
                self.kind(v).unwrap_or(VertexKind::Intermediate),
                self.name(v),
            )
        });
        let edges = self.edges().iter().map(|e| {
            let label = match e.label {
                crate::Label::Variable(var) => var_name(var),
                other => other.to_string(),
            };
            (e.source, e.target, label)
        });
        render("lcg", vertices, edges)
    }
}

impl Remainder {
    /// The remainder graph in dot syntax (removed vertices omitted).
    pub fn to_dot(&self) -> String {
        self.to_dot_with(&|var| var.to_string())
    }

    /// The remainder graph in dot syntax with caller names for variables.
    pub fn to_dot_with(&self, var_name: &dyn Fn(VarId) -> String) -> String {
        let vertices = self
            .vertices
            .iter()
            .filter(|v| v.present)
            .map(|v| (v.id, v.kind, v.name.as_deref()));
        let edges = self.edges.iter().map(|e| {
            let label = match e.value {
                crate::EdgeValue::Variable(var) => var_name(var),
                other => other.to_string(),
            };
            (e.source, e.target, label)
        });
        render("remainder", vertices, edges)
    }
}

fn render<'a>(
    graph_name: &str,
    vertices: impl Iterator<Item = (VertexId, VertexKind, Option<&'a str>)>,
    edges: impl Iterator<Item = (VertexId, VertexId, String)>,
) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = writeln!(out, "digraph {graph_name} {{");
    for (id, kind, name) in vertices {
        let shape = match kind {
            VertexKind::Independent => "box",
            VertexKind::Intermediate => "ellipse",
            VertexKind::Dependent => "doublecircle",
        };
        let label = name.map_or_else(|| id.to_string(), str::to_string);
        let _ = writeln!(
            out,
            "  v{id} [label=\"{}\", shape={shape}];",
            escape(&label)
        );
    }
    for (source, target, label) in edges {
        let _ = writeln!(
            out,
            "  v{source} -> v{target} [label=\"{}\"];",
            escape(&label)
        );
    }
    out.push_str("}\n");
    out
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use crate::{Label, Lcg, VarId, VertexKind};

    #[test]
    fn dot_lists_vertices_and_labelled_edges() {
        let mut g = Lcg::new();
        let x = g.add_named_vertex(VertexKind::Independent, "x\"1");
        let y = g.add_vertex(VertexKind::Dependent);
        g.add_edge(x, y, Label::Variable(VarId(4))).unwrap();
        g.add_edge(x, y, Label::MinusOne).unwrap();
        let dot = g.to_dot_with(&|var| format!("lin_{}", var.0));
        assert_eq!(
            dot,
            "digraph lcg {\n  v0 [label=\"x\\\"1\", shape=box];\n  v1 [label=\"1\", shape=doublecircle];\n  v0 -> v1 [label=\"lin_4\"];\n  v0 -> v1 [label=\"-1\"];\n}\n"
        );
    }
}
