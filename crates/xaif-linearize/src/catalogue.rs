//! The inlinable intrinsics catalogue as partial-derivative templates.
//!
//! The catalogue (`-c`) gives, per intrinsic, one `Partial` per argument: a
//! type (passive, linear_one, linear_minus_one, linear, nonlinear) and an
//! expression over `ArgumentReference`s (argument 0 is the result). This
//! module turns each partial into a small template tree that linearization
//! instantiates with the actual arguments.

use rustc_hash::FxHashMap;
use xaif_model::{Attrs, Expr, ExprGraph, ExprVertexKind, InlinableCatalogue};

/// The kind of a partial derivative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartialKind {
    /// Zero: no edge.
    Passive,
    /// The constant +1.
    LinearOne,
    /// The constant -1.
    LinearMinusOne,
    /// Independent of the arguments' values.
    Linear,
    /// Depends on the arguments' values.
    Nonlinear,
}

/// A node of a partial-derivative template.
#[derive(Clone, Debug, PartialEq)]
pub enum TNode {
    /// `ArgumentReference argument=j` (0: the result).
    Arg(usize),
    /// A constant (its XAIF attributes).
    Const(Attrs),
    /// An intrinsic applied to template nodes.
    Op {
        /// Intrinsic name.
        name: String,
        /// Argument nodes in position order.
        args: Vec<usize>,
    },
}

/// A partial-derivative expression over the intrinsic's arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    /// Nodes.
    pub nodes: Vec<TNode>,
    /// The node computing the partial.
    pub root: usize,
}

impl Template {
    /// The template as linearization emits it: a term in which a node
    /// reached again is written `#k` (its first visit's number), constants
    /// by type and value. Two templates with the same canonical form
    /// produce the same code.
    pub fn canonical(&self) -> String {
        // An explicit stack of tasks (a catalogue partial is as deep as its
        // file makes it): visit a node, or write a fixed text.
        enum Task<'a> {
            Visit(usize),
            Text(&'a str),
        }
        let mut out = String::new();
        let mut seen: Vec<Option<usize>> = vec![None; self.nodes.len()];
        let mut k = 0;
        let mut stack = vec![Task::Visit(self.root)];
        while let Some(task) = stack.pop() {
            let n = match task {
                Task::Text(t) => {
                    out.push_str(t);
                    continue;
                }
                Task::Visit(n) => n,
            };
            let Some(first) = seen.get_mut(n) else {
                continue;
            };
            if let Some(i) = *first {
                out.push_str(&format!("#{i}"));
                continue;
            }
            *first = Some(k);
            k += 1;
            match &self.nodes[n] {
                TNode::Arg(j) => out.push_str(&format!("a{j}")),
                TNode::Const(a) => out.push_str(&format!(
                    "{}:{}",
                    a.get("type").unwrap_or(""),
                    a.get("value").unwrap_or("")
                )),
                TNode::Op { name, args } => {
                    out.push_str(name);
                    out.push('(');
                    stack.push(Task::Text(")"));
                    for (i, a) in args.iter().enumerate().rev() {
                        stack.push(Task::Visit(*a));
                        if i > 0 {
                            stack.push(Task::Text(","));
                        }
                    }
                }
            }
        }
        out
    }

    /// The nodes reachable from the root, arguments before the operations
    /// that use them, each once (a depth-first post-order in argument
    /// order, computed with an explicit stack: a catalogue partial is as
    /// deep as its file makes it).
    pub fn postorder(&self) -> Vec<usize> {
        let mut seen = vec![false; self.nodes.len()];
        let mut out = Vec::new();
        if self.root >= self.nodes.len() {
            return out;
        }
        seen[self.root] = true;
        let mut stack = vec![(self.root, 0usize)];
        while let Some(top) = stack.last_mut() {
            let (n, i) = *top;
            let args: &[usize] = match &self.nodes[n] {
                TNode::Op { args, .. } => args,
                _ => &[],
            };
            match args.get(i) {
                Some(&a) => {
                    top.1 += 1;
                    if !seen[a] {
                        seen[a] = true;
                        stack.push((a, 0));
                    }
                }
                None => {
                    out.push(n);
                    stack.pop();
                }
            }
        }
        out
    }

    /// The arguments the template reads (0 is the result).
    pub fn arguments(&self) -> Vec<usize> {
        let mut out: Vec<usize> = self
            .nodes
            .iter()
            .filter_map(|n| match n {
                TNode::Arg(j) => Some(*j),
                _ => None,
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// One partial of an intrinsic.
#[derive(Clone, Debug, PartialEq)]
pub struct Partial {
    /// Its kind.
    pub kind: PartialKind,
    /// Its expression (absent for passive partials).
    pub template: Option<Template>,
}

/// One intrinsic of the catalogue.
#[derive(Clone, Debug, PartialEq)]
pub struct Intrinsic {
    /// Name (`sin_scal`, …).
    pub name: String,
    /// Number of arguments.
    pub arity: usize,
    /// The catalogue marks it `nonSmooth` (`abs`, `tan`, `int`, …): the
    /// trace mode records where it is evaluated.
    pub non_smooth: bool,
    /// Partial with respect to argument `j` at index `j - 1`.
    pub partials: Vec<Partial>,
}

impl Intrinsic {
    /// The fewest arguments a use may have: the highest argument any of
    /// its partials reads (a use may omit optional trailing arguments no
    /// partial needs).
    pub fn least_arguments(&self) -> usize {
        self.partials
            .iter()
            .filter_map(|p| p.template.as_ref())
            .flat_map(|t| t.arguments())
            .max()
            .unwrap_or(0)
            .min(self.arity)
    }

    /// The partial with respect to argument `argument` (1-based).
    pub fn partial(&self, argument: usize) -> Option<&Partial> {
        self.partials.get(argument.checked_sub(1)?)
    }
}

/// The catalogue, indexed by intrinsic name.
#[derive(Clone, Debug, Default)]
pub struct Catalogue {
    entries: FxHashMap<String, Intrinsic>,
}

/// A catalogue entry that cannot be used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("intrinsic `{name}` in the catalogue: {reason}")]
pub struct CatalogueError {
    /// The intrinsic.
    pub name: String,
    /// What is wrong.
    pub reason: String,
}

/// Why a catalogue file could not be used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CatalogueFileError {
    /// The file could not be read or is not valid XAIF (the message names
    /// file, line and element).
    #[error("{0}")]
    Read(String),
    /// The file is XAIF of another kind.
    #[error("{0}: not an inlinable intrinsics catalogue")]
    NotInlinable(String),
    /// The file is XAIF of another kind.
    #[error("{0}: not a non-inlinable intrinsics catalogue")]
    NotNonInlinable(String),
    /// An entry of the inlinable catalogue cannot be used.
    #[error("{0}: {1}")]
    Entry(String, CatalogueError),
}

impl Catalogue {
    /// Checks a program against the catalogue before it is transformed:
    /// the model's gate ([`xaif_model::validate_program`]) and, for every
    /// `Intrinsic` the catalogue defines, no more than `nr_arguments`
    /// arguments and none fewer than its partials read, with errors naming
    /// the file, line and element.
    pub fn validate_program(
        &self,
        p: &xaif_model::Program,
        source: &xaif_model::SourceMap,
    ) -> Result<(), xaif_model::ModelErrors> {
        xaif_model::validate_program_with_arities(p, source, &|name| {
            self.get(name).map(|i| i.least_arguments()..=i.arity)
        })
    }
}

/// Reads and gates the inlinable catalogue (`-c`) and, when given, the
/// non-inlinable one (`-N`): every transformation needs the first, the
/// direct-action rules need the second.
pub fn read_catalogues(
    inlinable: &std::path::Path,
    noninlinable: Option<&std::path::Path>,
) -> Result<(Catalogue, Option<xaif_model::NonInlinableCatalogue>), CatalogueFileError> {
    let read = |path: &std::path::Path| {
        let parsed =
            xaif_model::read_file(path).map_err(|e| CatalogueFileError::Read(e.to_string()))?;
        xaif_model::validate_document(&parsed.document, &parsed.source)
            .map_err(|e| CatalogueFileError::Read(e.to_string()))?;
        Ok::<_, CatalogueFileError>(parsed.document)
    };
    let name = |path: &std::path::Path| path.display().to_string();
    let catalogue = inlinable_from_document(read(inlinable)?, &name(inlinable))?;
    let non = match noninlinable {
        None => None,
        Some(path) => match read(path)? {
            xaif_model::Document::NonInlinable(n) => Some(n),
            _ => return Err(CatalogueFileError::NotNonInlinable(name(path))),
        },
    };
    Ok((catalogue, non))
}

/// Reads and gates an inlinable catalogue from the bytes of the file
/// `name` (for its messages), as [`read_catalogues`] does from a path.
pub fn inlinable_from_bytes(bytes: &[u8], name: &str) -> Result<Catalogue, CatalogueFileError> {
    let parsed = xaif_model::read_bytes(bytes, Some(name))
        .map_err(|e| CatalogueFileError::Read(e.to_string()))?;
    xaif_model::validate_document(&parsed.document, &parsed.source)
        .map_err(|e| CatalogueFileError::Read(e.to_string()))?;
    inlinable_from_document(parsed.document, name)
}

/// The catalogue of a gated document, which must be an inlinable one.
fn inlinable_from_document(
    document: xaif_model::Document,
    name: &str,
) -> Result<Catalogue, CatalogueFileError> {
    let xaif_model::Document::Inlinable(c) = document else {
        return Err(CatalogueFileError::NotInlinable(name.to_string()));
    };
    Catalogue::new(&c).map_err(|e| CatalogueFileError::Entry(name.to_string(), e))
}

impl Catalogue {
    /// Builds the templates of a validated catalogue
    /// ([`xaif_model::validate_inlinable`]); an entry the gate would reject
    /// is an error here too, never a panic or an allocation sized by the
    /// file.
    pub fn new(c: &InlinableCatalogue) -> Result<Self, CatalogueError> {
        let mut entries = FxHashMap::default();
        for i in &c.intrinsics {
            let name = i.name().to_string();
            let err = |reason: String| CatalogueError {
                name: name.clone(),
                reason,
            };
            let arity = match i.attrs.get("nr_arguments") {
                None => return Err(err("no nr_arguments".into())),
                Some(v) => v
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=xaif_model::catalogue::MAX_ARGUMENTS).contains(n))
                    .ok_or_else(|| {
                        err(format!(
                            "nr_arguments `{v}` is not between 1 and {}",
                            xaif_model::catalogue::MAX_ARGUMENTS
                        ))
                    })?,
            };
            let mut partials = vec![
                Partial {
                    kind: PartialKind::Passive,
                    template: None,
                };
                arity
            ];
            for p in &i.partials {
                let id = p
                    .attrs
                    .int("partial_id")
                    .and_then(|k| usize::try_from(k).ok())
                    .filter(|k| (1..=arity).contains(k))
                    .ok_or_else(|| err("a partial without a valid partial_id".into()))?;
                let kind = match p.attrs.get("partial_type").unwrap_or("nonlinear") {
                    "passive" => PartialKind::Passive,
                    "linear_one" => PartialKind::LinearOne,
                    "linear_minus_one" => PartialKind::LinearMinusOne,
                    "linear" => PartialKind::Linear,
                    _ => PartialKind::Nonlinear,
                };
                let template = if p.vertices.is_empty() {
                    None
                } else {
                    Some(template(p, arity).ok_or_else(|| {
                        err(format!("partial {id} is not a tree over its arguments"))
                    })?)
                };
                if template.is_none()
                    && matches!(kind, PartialKind::Linear | PartialKind::Nonlinear)
                {
                    return Err(err(format!("partial {id} has no expression")));
                }
                partials[id - 1] = Partial { kind, template };
            }
            entries.insert(
                name.clone(),
                Intrinsic {
                    name,
                    arity,
                    non_smooth: i.attrs.flag("nonSmooth", false),
                    partials,
                },
            );
        }
        Ok(Catalogue { entries })
    }

    /// A catalogue of the given intrinsics (a later one of the same name
    /// replaces an earlier one).
    pub fn from_intrinsics(intrinsics: impl IntoIterator<Item = Intrinsic>) -> Self {
        Catalogue {
            entries: intrinsics
                .into_iter()
                .map(|i| (i.name.clone(), i))
                .collect(),
        }
    }

    /// The intrinsics, sorted by name.
    pub fn intrinsics(&self) -> Vec<&Intrinsic> {
        let mut all: Vec<&Intrinsic> = self.entries.values().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// The intrinsic called `name`.
    pub fn get(&self, name: &str) -> Option<&Intrinsic> {
        self.entries.get(name)
    }
}

/// The template of a partial; `None` when it is not an expression over
/// argument references `0..=arity`, constants and intrinsics.
fn template(e: &Expr, arity: usize) -> Option<Template> {
    let g = ExprGraph::new(e)?;
    let nodes = e
        .vertices
        .iter()
        .enumerate()
        .map(|(i, v)| {
            Some(match &v.kind {
                ExprVertexKind::ArgumentReference => TNode::Arg(
                    usize::try_from(v.attrs.int("argument")?)
                        .ok()
                        .filter(|k| *k <= arity)?,
                ),
                ExprVertexKind::Constant => TNode::Const(v.attrs.clone()),
                ExprVertexKind::Intrinsic => TNode::Op {
                    name: v.attrs.get("name")?.to_string(),
                    args: g.args[i].clone(),
                },
                _ => return None,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Template {
        nodes,
        root: g.root,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_partials_become_templates() {
        let Some(shared) = xaif_testkit::shared_dir() else {
            return;
        };
        let parsed =
            xaif_model::read_file(&shared.join("xaif/schema/examples/inlinable_intrinsics.xaif"))
                .unwrap();
        let xaif_model::Document::Inlinable(c) = parsed.document else {
            panic!("not a catalogue")
        };
        let cat = Catalogue::new(&c).unwrap();
        let add = cat.get("add_scal_scal").unwrap();
        assert_eq!(add.partials[0].kind, PartialKind::LinearOne);
        let sub = cat.get("sub_scal_scal").unwrap();
        assert_eq!(sub.partials[1].kind, PartialKind::LinearMinusOne);
        let mul = cat.get("mul_scal_scal").unwrap();
        assert_eq!(mul.partials[0].template.as_ref().unwrap().arguments(), [2]);
        let tan = cat.get("tan_scal").unwrap();
        // 1 + tan^2 reads the result (argument 0).
        assert_eq!(tan.partials[0].template.as_ref().unwrap().arguments(), [0]);
        assert!(tan.non_smooth && !cat.get("sin_scal").unwrap().non_smooth);
        let pow = cat.get("pow_scal_scal").unwrap();
        assert_eq!(
            pow.partials[1].template.as_ref().unwrap().arguments(),
            [1, 2]
        );
    }

    /// The built-in catalogue states the same intrinsics, arities,
    /// smoothness and partials as the catalogue of the XAIF distribution.
    #[test]
    fn builtin_catalogue_equals_the_distributed_file() {
        let Some(shared) = xaif_testkit::shared_dir() else {
            return;
        };
        let parsed =
            xaif_model::read_file(&shared.join("xaif/schema/examples/inlinable_intrinsics.xaif"))
                .unwrap();
        let xaif_model::Document::Inlinable(c) = parsed.document else {
            panic!("not a catalogue")
        };
        let file = Catalogue::new(&c).unwrap();
        let ours = crate::builtin();
        let names = |c: &Catalogue| {
            c.intrinsics()
                .iter()
                .map(|i| i.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&file), names(ours));
        for f in file.intrinsics() {
            let b = ours.get(&f.name).unwrap();
            assert_eq!(
                (f.arity, f.non_smooth),
                (b.arity, b.non_smooth),
                "{}",
                f.name
            );
            for (j, (pf, pb)) in f.partials.iter().zip(&b.partials).enumerate() {
                assert_eq!(pf.kind, pb.kind, "{} partial {}", f.name, j + 1);
                if matches!(pf.kind, PartialKind::Linear | PartialKind::Nonlinear) {
                    assert_eq!(
                        pf.template.as_ref().map(Template::canonical),
                        pb.template.as_ref().map(Template::canonical),
                        "{} partial {}",
                        f.name,
                        j + 1
                    );
                }
            }
        }
    }
}
