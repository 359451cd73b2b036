//! Results of [`optimize`](crate::optimize()) kept by the graph's shape, so that a program
//! that linearizes the same statement shape many times (`a(i) = b(i)*c(i)`
//! in every routine of a model) searches each shape once.
//!
//! Two graphs have the same shape when they have the same vertices (in
//! order, with their roles), the same edges (in order, same endpoints),
//! the same constant labels bit for bit, and variable labels that compare
//! the same way: the same variables are equal, and their order is the
//! same. The elimination only ever compares variable labels for equality
//! and order, so [`optimize`](crate::optimize()) of a graph of the same shape gives the
//! kept result with its variables renamed; the kept result is reused that
//! way, and the output is the same whether a result was kept or not (a
//! proptest holds [`optimize`](crate::optimize()) to this).
//!
//! Display names are not part of the shape: a reused result gets the
//! names of the graph it is reused for. The time in a reused report is
//! the time of the look-up.

use std::collections::{HashMap, HashSet};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use crate::cost::PropagationMode;
use crate::graph::{Label, Lcg, VarId};
use crate::optimize::{optimize_against, Optimized};
use crate::result::ElimError;
use crate::strategy::Config;
use crate::value::{EdgeValue, Expr, Operand};

/// Graphs with more edges than this are not kept: a large graph rarely
/// repeats, and its result is large.
pub const MEMO_MAX_EDGES: usize = 500;

/// Bytes of kept results, estimated, after which nothing more is kept.
pub const MEMO_MAX_BYTES: usize = 64 << 20;

/// Kept results of [`optimize`](crate::optimize()) under one [`Config`], shared by the
/// threads of one transformation.
pub struct Memo {
    config: Config,
    inner: Mutex<Kept>,
    /// Signalled whenever a claimed shape is released (see [`Kept::claimed`]).
    released: Condvar,
}

#[derive(Default)]
struct Kept {
    entries: HashMap<Key, Entry>,
    bytes: usize,
    /// Shapes some thread is optimizing now. Another thread that needs
    /// one of them waits for that result instead of computing it twice
    /// ([`Memo::optimize_against`]), or passes it by ([`Memo::prefetch_against`]).
    claimed: HashSet<Key>,
}

/// What [`Memo::prefetch_against`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefetched {
    /// Computed the result and kept it (within the memo's budget).
    Computed,
    /// The result was kept already, or another thread is computing it.
    Present,
    /// The graph is too large to keep, or the memo cannot be used.
    NotKept,
}

/// What a thread finds for a shape when it looks it up.
enum Claim {
    /// The kept result, renamed for the graph looked up.
    Found(Box<Optimized>),
    /// Nobody had it: this thread computes it and releases the claim.
    Mine,
    /// Another thread is computing it (only when not waiting).
    Busy,
    /// The memo cannot be used (a thread panicked holding its lock).
    Unusable,
}

/// Releases a claimed shape when dropped: after its result is kept, or
/// when the computation failed or panicked, so that no thread waits for a
/// result that will never come.
struct ClaimGuard<'m> {
    memo: &'m Memo,
    key: Option<Key>,
}

impl ClaimGuard<'_> {
    /// Keeps `optimized` for the claimed shape (within the memo's budget)
    /// and releases the claim.
    fn keep(mut self, vars: Vec<VarId>, optimized: &Optimized) {
        let Some(key) = self.key.take() else {
            return;
        };
        let bytes = estimate_bytes(&key, optimized);
        if let Ok(mut kept) = self.memo.inner.lock() {
            kept.claimed.remove(&key);
            if kept.bytes + bytes <= MEMO_MAX_BYTES && !kept.entries.contains_key(&key) {
                kept.bytes += bytes;
                kept.entries.insert(
                    key,
                    Entry {
                        vars,
                        optimized: optimized.clone(),
                    },
                );
            }
        }
        self.memo.released.notify_all();
    }
}

impl Drop for ClaimGuard<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            if let Ok(mut kept) = self.memo.inner.lock() {
                kept.claimed.remove(&key);
            }
            self.memo.released.notify_all();
        }
    }
}

/// A graph's shape under one propagation mode, with the shape of the
/// reference engine's graph of the same code if it differs (only its
/// chains' costs enter the result, so its variables are numbered on their
/// own).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    mode: PropagationMode,
    code: Vec<u64>,
    reference: Option<Vec<u64>>,
}

struct Entry {
    /// The distinct variables of the graph the result was found for, in
    /// increasing order.
    vars: Vec<VarId>,
    optimized: Optimized,
}

impl Memo {
    /// An empty memo for results under `config`.
    pub fn new(config: &Config) -> Memo {
        Memo {
            config: config.clone(),
            inner: Mutex::new(Kept::default()),
            released: Condvar::new(),
        }
    }

    /// [`optimize`](crate::optimize()) of `lcg` under the memo's
    /// configuration, reusing the result of a graph of the same shape
    /// found earlier.
    pub fn optimize(&self, lcg: &Lcg, mode: PropagationMode) -> Result<Optimized, ElimError> {
        self.optimize_against(lcg, None, mode)
    }

    /// [`optimize_against`] of `lcg` and the reference engine's graph of
    /// the same code, reusing a result as [`Memo::optimize`] does (the
    /// pair of shapes is the key).
    pub fn optimize_against(
        &self,
        lcg: &Lcg,
        reference: Option<&Lcg>,
        mode: PropagationMode,
    ) -> Result<Optimized, ElimError> {
        let config = &self.config;
        if !keepable(lcg, reference) {
            return optimize_against(lcg, reference, config, mode);
        }
        let started = Instant::now();
        let (key, vars) = shape_against(lcg, reference, mode);
        match self.claim(&key, &vars, lcg, true) {
            Claim::Found(mut found) => {
                found.report.micros = started.elapsed().as_micros() as u64;
                Ok(*found)
            }
            Claim::Mine => self.compute(key, vars, lcg, reference, mode),
            Claim::Busy | Claim::Unusable => optimize_against(lcg, reference, config, mode),
        }
    }

    /// Computes and keeps the result [`Memo::optimize_against`] would
    /// give for `lcg`, unless it is kept already, another thread is
    /// computing it, or the graph is too large to keep. A thread that runs
    /// ahead of the transformation calls this, so that the transformation
    /// finds the result when it gets there; the result is the same
    /// whichever thread computed it.
    pub fn prefetch_against(
        &self,
        lcg: &Lcg,
        reference: Option<&Lcg>,
        mode: PropagationMode,
    ) -> Result<Prefetched, ElimError> {
        if !keepable(lcg, reference) {
            return Ok(Prefetched::NotKept);
        }
        let (key, vars) = shape_against(lcg, reference, mode);
        match self.claim(&key, &vars, lcg, false) {
            Claim::Mine => {
                self.compute(key, vars, lcg, reference, mode)?;
                Ok(Prefetched::Computed)
            }
            Claim::Found(_) | Claim::Busy => Ok(Prefetched::Present),
            Claim::Unusable => Ok(Prefetched::NotKept),
        }
    }

    /// Optimizes `lcg` for the shape `key` this thread has claimed, keeps
    /// the result and releases the claim (also when it fails).
    fn compute(
        &self,
        key: Key,
        vars: Vec<VarId>,
        lcg: &Lcg,
        reference: Option<&Lcg>,
        mode: PropagationMode,
    ) -> Result<Optimized, ElimError> {
        let guard = ClaimGuard {
            memo: self,
            key: Some(key),
        };
        let optimized = optimize_against(lcg, reference, &self.config, mode)?;
        guard.keep(vars, &optimized);
        Ok(optimized)
    }

    /// The kept result for `key`; or, when another thread is computing
    /// it, that result once it is kept (`wait`) or [`Claim::Busy`];
    /// otherwise the claim to compute it.
    fn claim(&self, key: &Key, vars: &[VarId], lcg: &Lcg, wait: bool) -> Claim {
        let Ok(mut kept) = self.inner.lock() else {
            return Claim::Unusable;
        };
        loop {
            if let Some(entry) = kept.entries.get(key) {
                let mut found = entry.optimized.clone();
                rename(&mut found, &entry.vars, vars, lcg);
                return Claim::Found(Box::new(found));
            }
            if !kept.claimed.contains(key) {
                kept.claimed.insert(key.clone());
                return Claim::Mine;
            }
            if !wait {
                return Claim::Busy;
            }
            // Released claims are kept or dropped: look again.
            kept = match self.released.wait(kept) {
                Ok(kept) => kept,
                Err(_) => return Claim::Unusable,
            };
        }
    }

    /// The configuration the memo keeps results for.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How many results are kept.
    pub fn len(&self) -> usize {
        self.inner.lock().map_or(0, |k| k.entries.len())
    }

    /// Whether no result is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whether results for `lcg` (and its reference graph) are kept.
fn keepable(lcg: &Lcg, reference: Option<&Lcg>) -> bool {
    lcg.edges().len() <= MEMO_MAX_EDGES
        && reference.is_none_or(|r| r.edges().len() <= MEMO_MAX_EDGES)
}

/// The key of a result in the persistent cache ([`crate::cache`]): the
/// shape key of `lcg` against `reference` in `mode`, and everything of
/// `config` that decides a result except the effort and the cache, as
/// text.
pub(crate) fn cache_key(
    lcg: &Lcg,
    reference: Option<&Lcg>,
    mode: PropagationMode,
    config: &Config,
) -> String {
    use std::fmt::Write as _;
    let (key, _) = shape_against(lcg, reference, mode);
    let s = &config.search;
    let mut text = format!(
        "mode {:?}\nconfig {:?} {:?} {:?} {} {} {} {}\nstrategies {:?}\ncode",
        mode,
        s.goal,
        config.metric,
        config.triviality,
        s.randomized,
        s.rerouting,
        s.allow_maintaining,
        s.seed,
        config.strategies,
    );
    for c in &key.code {
        let _ = write!(text, " {c:x}");
    }
    text.push_str("\nreference");
    match &key.reference {
        Some(code) => {
            for c in code {
                let _ = write!(text, " {c:x}");
            }
        }
        None => text.push_str(" none"),
    }
    text
}

/// The key of `lcg` against the reference engine's graph of the same
/// code, and `lcg`'s distinct variables in increasing order.
fn shape_against(lcg: &Lcg, reference: Option<&Lcg>, mode: PropagationMode) -> (Key, Vec<VarId>) {
    let (mut key, vars) = shape(lcg, mode);
    key.reference = reference.map(|r| shape(r, mode).0.code);
    (key, vars)
}

/// The shape key of `lcg` and its distinct variables in increasing order.
fn shape(lcg: &Lcg, mode: PropagationMode) -> (Key, Vec<VarId>) {
    let mut vars: Vec<VarId> = lcg
        .edges()
        .iter()
        .filter_map(|e| match e.label {
            Label::Variable(v) => Some(v),
            _ => None,
        })
        .collect();
    vars.sort_unstable();
    vars.dedup();
    let mut code = Vec::with_capacity(2 + lcg.vertex_count() + 3 * lcg.edges().len());
    code.push(lcg.vertex_count() as u64);
    code.push(lcg.edges().len() as u64);
    for v in lcg.vertices() {
        code.push(match lcg.kind(v) {
            Some(crate::graph::VertexKind::Independent) => 0,
            Some(crate::graph::VertexKind::Intermediate) => 1,
            Some(crate::graph::VertexKind::Dependent) => 2,
            None => 3,
        });
    }
    for e in lcg.edges() {
        code.push(u64::from(e.source.0) << 32 | u64::from(e.target.0));
        let (tag, payload) = match e.label {
            Label::Unit => (0, 0),
            Label::MinusOne => (1, 0),
            Label::Constant(c) => (2, c.to_bits()),
            Label::Variable(v) => (3, vars.binary_search(&v).unwrap_or(usize::MAX) as u64),
        };
        code.push(tag);
        code.push(payload);
    }
    (
        Key {
            mode,
            code,
            reference: None,
        },
        vars,
    )
}

/// Renames the variables of a kept result (`old[k]` becomes `new[k]`) and
/// gives its remainder vertices `lcg`'s names.
fn rename(optimized: &mut Optimized, old: &[VarId], new: &[VarId], lcg: &Lcg) {
    let map = |v: VarId| -> VarId {
        match old.binary_search(&v) {
            Ok(k) => new.get(k).copied().unwrap_or(v),
            Err(_) => v,
        }
    };
    let elimination = &mut optimized.selection.elimination;
    for accumulation in &mut elimination.accumulations {
        rename_expr(&mut accumulation.expr, &map);
    }
    for edge in &mut elimination.remainder.edges {
        if let EdgeValue::Variable(v) = &mut edge.value {
            *v = map(*v);
        }
    }
    for vertex in &mut elimination.remainder.vertices {
        vertex.name = lcg.name(vertex.id).map(str::to_string);
    }
}

/// Renames the variable operands of an expression, without recursion.
fn rename_expr(expr: &mut Expr, map: &impl Fn(VarId) -> VarId) {
    let mut stack: Vec<&mut Expr> = vec![expr];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Leaf(Operand::Variable(v)) => *v = map(*v),
            Expr::Leaf(_) => {}
            Expr::Neg(inner) => stack.push(inner),
            Expr::Mul(l, r) | Expr::Add(l, r) | Expr::Sub(l, r) | Expr::Div(l, r) => {
                stack.push(l);
                stack.push(r);
            }
        }
    }
}

/// A rough size of a kept entry in bytes.
fn estimate_bytes(key: &Key, optimized: &Optimized) -> usize {
    let e = &optimized.selection.elimination;
    let ops = e.ops.multiplicative() + e.ops.additive() + e.ops.negations;
    (key.code.len() + key.reference.as_ref().map_or(0, Vec::len)) * 8
        + e.steps.len() * 32
        + e.accumulations.len() * 48
        + ops * 2 * 40
        + e.remainder.edges.len() * 40
        + e.remainder.vertices.len() * 48
        + 256
}
