//! Right-hand sides as directed acyclic graphs of owned nodes.
//!
//! Linearization reads an expression graph operand by operand, names some
//! subexpressions by temporaries and writes the rest back. A small owned DAG
//! (shared subexpressions stay shared) with a writer that replaces chosen
//! nodes by references makes those rewrites direct.

use rustc_hash::FxHashMap;
use xaif_model::{Attrs, Expr, ExprBuilder, ExprGraph, ExprVertex, ExprVertexKind, VarRef};

/// A node of a right-hand side.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// A variable reference (attributes of the `VariableReference` and its
    /// reference graph).
    Var(VarRef),
    /// A constant (its attributes).
    Const(Attrs),
    /// An intrinsic or boolean operation applied to other nodes.
    Op {
        /// The vertex's attributes (`name`, annotations, …).
        attrs: Attrs,
        /// Whether it is a `BooleanOperation`.
        boolean: bool,
        /// Argument nodes in position order.
        args: Vec<usize>,
    },
    /// Anything else (function calls, argument references), kept verbatim.
    Other(ExprVertex),
}

impl Node {
    /// The operation's name.
    pub fn op_name(&self) -> Option<&str> {
        match self {
            Node::Op { attrs, .. } => attrs.get("name"),
            _ => None,
        }
    }
}

/// An expression DAG with its result node.
#[derive(Clone, Debug, PartialEq)]
pub struct Dag {
    /// Nodes; arguments always come before their users? Not necessarily:
    /// use [`Dag::postorder`] for an evaluation order.
    pub nodes: Vec<Node>,
    /// The result node.
    pub root: usize,
}

impl Dag {
    /// The DAG of a validated expression.
    pub fn from_expr(e: &Expr) -> Option<Dag> {
        let g = ExprGraph::new(e)?;
        let nodes = e
            .vertices
            .iter()
            .enumerate()
            .map(|(i, v)| match &v.kind {
                ExprVertexKind::VariableReference(rg) => Node::Var(VarRef {
                    attrs: v.attrs.clone(),
                    graph: rg.clone(),
                }),
                ExprVertexKind::Constant => Node::Const(v.attrs.clone()),
                ExprVertexKind::Intrinsic | ExprVertexKind::BooleanOperation => Node::Op {
                    attrs: v.attrs.clone(),
                    boolean: matches!(v.kind, ExprVertexKind::BooleanOperation),
                    args: g.args[i].clone(),
                },
                _ => Node::Other(v.clone()),
            })
            .collect();
        Some(Dag {
            nodes,
            root: g.root,
        })
    }

    /// Nodes reachable from `root`, arguments before users.
    pub fn postorder(&self, root: usize) -> Vec<usize> {
        let mut seen = vec![false; self.nodes.len()];
        let mut out = Vec::new();
        let mut stack = vec![(root, false)];
        while let Some((n, expanded)) = stack.pop() {
            if expanded {
                out.push(n);
                continue;
            }
            if seen[n] {
                continue;
            }
            seen[n] = true;
            stack.push((n, true));
            if let Node::Op { args, .. } = &self.nodes[n] {
                for &a in args.iter().rev() {
                    if !seen[a] {
                        stack.push((a, false));
                    }
                }
            }
        }
        out
    }

    /// Writes the subexpression at `root` as XAIF; nodes for which
    /// `replace` returns a reference are written as that reference (their
    /// arguments are not visited).
    ///
    /// Shared nodes are written once. The walk uses an explicit stack and
    /// remembers written nodes in a map, so its cost is that of the nodes
    /// it writes, not of the whole DAG, and deep expressions (XAIF writes
    /// them flat) use no native stack.
    pub fn to_expr(&self, root: usize, replace: &dyn Fn(usize) -> Option<VarRef>) -> Expr {
        let mut b = ExprBuilder::new();
        let mut made: FxHashMap<usize, usize> = FxHashMap::default();
        // Open operations with their written arguments so far.
        let mut stack: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut next = Some(root);
        loop {
            if let Some(n) = next.take() {
                if let Some(&v) = made.get(&n) {
                    match stack.last_mut() {
                        Some((_, args)) => args.push(v),
                        None => break,
                    }
                } else {
                    let leaf = match replace(n) {
                        Some(r) => Some(b.reference(&r)),
                        None => match &self.nodes[n] {
                            Node::Var(r) => Some(b.reference(r)),
                            Node::Const(attrs) => {
                                Some(b.vertex(attrs.clone(), ExprVertexKind::Constant))
                            }
                            Node::Other(vertex) => {
                                Some(b.vertex(vertex.attrs.clone(), vertex.kind.clone()))
                            }
                            Node::Op { .. } => None,
                        },
                    };
                    match leaf {
                        Some(v) => {
                            made.insert(n, v);
                            match stack.last_mut() {
                                Some((_, args)) => args.push(v),
                                None => break,
                            }
                        }
                        None => stack.push((n, Vec::new())),
                    }
                }
            }
            // Visit the next argument of the innermost open operation, or
            // write it.
            let Some((n, written)) = stack.last() else {
                break;
            };
            let Node::Op {
                attrs,
                boolean,
                args,
            } = &self.nodes[*n]
            else {
                stack.pop();
                continue;
            };
            if let Some(&a) = args.get(written.len()) {
                next = Some(a);
                continue;
            }
            let kind = if *boolean {
                ExprVertexKind::BooleanOperation
            } else {
                ExprVertexKind::Intrinsic
            };
            let v = b.vertex(attrs.clone(), kind);
            let Some((n, written)) = stack.pop() else {
                break;
            };
            for (i, a) in written.into_iter().enumerate() {
                b.edge(a, v, i + 1);
            }
            made.insert(n, v);
            match stack.last_mut() {
                Some((_, args)) => args.push(v),
                None => break,
            }
        }
        b.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Expr {
        // sin(x) * x with one shared x
        let mut b = ExprBuilder::new();
        let x = b.variable(Attrs::new(), "2", "x");
        let s = b.intrinsic("sin_scal", &[x]);
        b.intrinsic("mul_scal_scal", &[s, x]);
        b.finish()
    }

    #[test]
    fn round_trip_keeps_sharing() {
        let e = sample();
        let d = Dag::from_expr(&e).unwrap();
        assert_eq!(d.postorder(d.root), vec![0, 1, 2]);
        let back = d.to_expr(d.root, &|_| None);
        assert_eq!(back.vertices.len(), 3);
        assert_eq!(back.edges.len(), 3);
    }

    #[test]
    fn replaced_nodes_become_references() {
        let d = Dag::from_expr(&sample()).unwrap();
        let t = VarRef::symbol(Attrs::new(), "2", "t");
        let e = d.to_expr(d.root, &|n| (n == 1).then(|| t.clone()));
        // t * x: two references and one product.
        assert_eq!(e.vertices.len(), 3);
        assert!(
            matches!(&e.vertices[0].kind, ExprVertexKind::VariableReference(g) if g.symbol_ids() == Some(("2", "t")))
        );
    }
}
