//! Abstract locations: what a variable reference may read or write.
//!
//! The analyses of this crate reason about *storage*, not symbols: the same
//! global storage appears under several scope-1 symbols (`G_29`, `G_35`, one
//! per routine that declares it), a `temp="1"` scope-1 symbol is a local of
//! each routine that uses it, and an internal procedure reaches its host's
//! locals through host association. [`Storage`] is that unified unit,
//! resolved exactly as the interpreter resolves symbols.
//!
//! Within one routine, each storage is split into *slots*: a scalar is one
//! slot; an array whose elements are never named by constant subscripts is
//! one slot (the paper's coarse approximation: one element stands for the
//! whole array); an array some of whose elements are named by constant
//! subscripts gets one slot per named element plus one slot for all the
//! other elements. Every concrete element lies in exactly one slot, so a
//! constant-subscript write is a definite write (a kill) of its slot and a
//! constant-subscript read depends on that element only, while a reference
//! with a computed subscript may touch every slot of the array. The slots of
//! a routine form its [`Universe`]; data-flow facts are [`crate::LocSet`]s
//! over it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use rustc_hash::FxHashMap;
use xaif_model::{
    Expr, ExprGraph, ExprVertexKind, Program, RefGraph, RefVertexKind, RoutineId, ScopeId,
    ScopeItem, SymbolId, SymbolIndex, SymbolType,
};

/// Handle of a unified storage unit of the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StorageId(u32);

impl StorageId {
    pub(crate) fn new(i: u32) -> Self {
        StorageId(i)
    }

    /// Position in [`crate::ProgramFacts::storages`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What identifies a storage unit.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StorageKey {
    /// A variable of one routine (its own scope, its `temp="1"` scope-1
    /// symbols, or a host routine's variable reached by host association).
    Local {
        /// The routine whose frame holds the variable.
        routine: RoutineId,
        /// The declaring symbol.
        symbol: SymbolId,
    },
    /// Shared storage: scope-1 variables unified by their name without the
    /// `_<digits>` suffix, or `scope:name` for variables of other scopes
    /// (modules).
    Shared(String),
}

/// One unit of storage, with every symbol that names it.
#[derive(Clone, Debug)]
pub struct Storage {
    /// Its identity.
    pub key: StorageKey,
    /// The `symbol_id` of the first symbol seen for it (for messages).
    pub name: String,
    /// Every symbol resolved to this storage.
    pub symbols: Vec<SymbolId>,
    /// Rank from the symbol's shape.
    pub rank: usize,
    /// Whether values of this storage carry derivatives (real type).
    pub differentiable: bool,
}

/// Which part of a storage a slot stands for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Part {
    /// The whole variable (a scalar, or an array none of whose elements is
    /// named by constant subscripts).
    All,
    /// One element, by its constant subscripts in source order.
    Elem(Box<[i64]>),
    /// The elements of an array not named by any constant subscript of the
    /// routine.
    Others,
}

/// One abstract location of a routine.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Slot {
    /// The storage it belongs to.
    pub storage: StorageId,
    /// Which part of it.
    pub part: Part,
}

/// A location named for people and for clients outside the crate: the
/// storage's name and the part.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    /// Display name (the storage's first `symbol_id`).
    pub name: String,
    /// The storage.
    pub storage: StorageId,
    /// Which part.
    pub part: Part,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.part {
            Part::All => write!(f, "{}", self.name),
            Part::Elem(k) => {
                let ks: Vec<String> = k.iter().map(|x| x.to_string()).collect();
                write!(f, "{}({})", self.name, ks.join(","))
            }
            Part::Others => write!(f, "{}(other elements)", self.name),
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Group {
    /// Every slot of the storage; the first is `All` or `Others`.
    all: Vec<u32>,
    elems: FxHashMap<Box<[i64]>, u32>,
}

/// The slots of one routine: every storage it or its callees may touch.
#[derive(Clone, Debug, Default)]
pub struct Universe {
    slots: Vec<Slot>,
    groups: FxHashMap<StorageId, Group>,
}

impl Universe {
    /// Builds the slots for `used` (storage → element keys named by constant
    /// subscripts), in storage order.
    pub(crate) fn build(used: &BTreeMap<StorageId, BTreeSet<Box<[i64]>>>) -> Self {
        let mut u = Universe::default();
        for (&storage, keys) in used {
            let mut g = Group::default();
            let first = u.slots.len() as u32;
            u.slots.push(Slot {
                storage,
                part: if keys.is_empty() {
                    Part::All
                } else {
                    Part::Others
                },
            });
            g.all.push(first);
            for k in keys {
                let s = u.slots.len() as u32;
                u.slots.push(Slot {
                    storage,
                    part: Part::Elem(k.clone()),
                });
                g.all.push(s);
                g.elems.insert(k.clone(), s);
            }
            u.groups.insert(storage, g);
        }
        u
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the routine touches no storage at all.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The slot numbered `i`.
    pub fn slot(&self, i: u32) -> &Slot {
        &self.slots[i as usize]
    }

    /// All slots with their numbers.
    pub fn slots(&self) -> impl Iterator<Item = (u32, &Slot)> + '_ {
        self.slots.iter().enumerate().map(|(i, s)| (i as u32, s))
    }

    /// Whether `storage` has slots here.
    pub fn has(&self, storage: StorageId) -> bool {
        self.groups.contains_key(&storage)
    }

    /// Every slot of `storage` (empty if the routine never touches it).
    pub fn slots_of(&self, storage: StorageId) -> &[u32] {
        self.groups
            .get(&storage)
            .map(|g| g.all.as_slice())
            .unwrap_or(&[])
    }

    /// The slot of element `key` of `storage`, if that element is named.
    pub fn elem_slot(&self, storage: StorageId, key: &[i64]) -> Option<u32> {
        self.groups.get(&storage)?.elems.get(key).copied()
    }

    /// The slot standing for the whole storage or for its unnamed elements.
    pub fn rest_slot(&self, storage: StorageId) -> Option<u32> {
        self.groups.get(&storage).map(|g| g.all[0])
    }

    /// The slot holding element `key` of `storage`: its own slot if named,
    /// else the rest slot.
    pub fn slot_for_elem(&self, storage: StorageId, key: &[i64]) -> Option<u32> {
        self.elem_slot(storage, key)
            .or_else(|| self.rest_slot(storage))
    }
}

/// The shape of a reference, as far as the analyses care.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// No subscripts: the whole variable.
    Whole,
    /// One element with constant subscripts.
    Elem(Box<[i64]>),
    /// Computed subscripts or sections: some unknown part.
    Unknown,
}

/// A resolved variable reference.
#[derive(Clone, Debug)]
pub(crate) struct Access<'e> {
    pub storage: StorageId,
    pub shape: Shape,
    _expr: std::marker::PhantomData<&'e Expr>,
}

pub use xaif_model::{base_name, fortran_routine_name};

/// Resolves symbols to storage for one program.
pub(crate) struct Resolver<'p> {
    p: &'p Program,
    pub symbols: SymbolIndex,
    global_scope: Option<ScopeId>,
    scope_parent: FxHashMap<ScopeId, ScopeId>,
    scope_owner: FxHashMap<ScopeId, RoutineId>,
    routine_scope: FxHashMap<RoutineId, ScopeId>,
    pub storages: Vec<Storage>,
    by_key: FxHashMap<StorageKey, StorageId>,
}

impl<'p> Resolver<'p> {
    pub fn new(p: &'p Program) -> Self {
        let symbols = SymbolIndex::new(p);
        let mut scope_parent = FxHashMap::default();
        for item in &p.scope_hierarchy.items {
            if let ScopeItem::Edge(attrs) = item {
                if let (Some(s), Some(t)) = (
                    attrs.get("source").and_then(|id| symbols.scope(id)),
                    attrs.get("target").and_then(|id| symbols.scope(id)),
                ) {
                    scope_parent.insert(s, t);
                }
            }
        }
        let mut scope_owner = FxHashMap::default();
        let mut routine_scope = FxHashMap::default();
        for (r, routine) in p.routines.iter() {
            if let Some(s) = routine
                .attrs
                .get("controlflowgraph_scope_id")
                .and_then(|id| symbols.scope(id))
            {
                scope_owner.entry(s).or_insert(r);
                routine_scope.insert(r, s);
            }
        }
        Resolver {
            p,
            global_scope: symbols.scope("1"),
            symbols,
            scope_parent,
            scope_owner,
            routine_scope,
            storages: Vec::new(),
            by_key: FxHashMap::default(),
        }
    }

    fn is_ancestor(&self, scope: ScopeId, routine: RoutineId) -> bool {
        let mut s = self.routine_scope.get(&routine).copied();
        let mut steps = 0;
        while let Some(cur) = s {
            if cur == scope {
                return true;
            }
            steps += 1;
            if steps > 64 {
                return false;
            }
            s = self.scope_parent.get(&cur).copied();
        }
        false
    }

    fn key_of(&self, routine: RoutineId, sym: SymbolId) -> StorageKey {
        let symbol = &self.p.symbols[sym];
        let scope = symbol.scope;
        if self.routine_scope.get(&routine) == Some(&scope) {
            StorageKey::Local {
                routine,
                symbol: sym,
            }
        } else if Some(scope) == self.global_scope {
            if symbol.is_temp() {
                StorageKey::Local {
                    routine,
                    symbol: sym,
                }
            } else {
                StorageKey::Shared(base_name(symbol.name()))
            }
        } else if let Some(&owner) = self
            .scope_owner
            .get(&scope)
            .filter(|_| self.is_ancestor(scope, routine))
        {
            StorageKey::Local {
                routine: owner,
                symbol: sym,
            }
        } else {
            StorageKey::Shared(format!(
                "{}:{}",
                self.p.scopes[scope].attrs.get("vertex_id").unwrap_or("1"),
                symbol.name()
            ))
        }
    }

    /// The storage that `sym` names when referenced from `routine`, created
    /// on first sight.
    pub fn storage_of(&mut self, routine: RoutineId, sym: SymbolId) -> StorageId {
        let key = self.key_of(routine, sym);
        let symbol = &self.p.symbols[sym];
        if let Some(&id) = self.by_key.get(&key) {
            let st = &mut self.storages[id.index()];
            if !st.symbols.contains(&sym) {
                st.symbols.push(sym);
                st.rank = st.rank.max(symbol.rank());
                st.differentiable |= symbol.ty() == SymbolType::Real;
            }
            return id;
        }
        let id = StorageId(self.storages.len() as u32);
        self.storages.push(Storage {
            key: key.clone(),
            name: symbol.name().to_string(),
            symbols: vec![sym],
            rank: symbol.rank(),
            differentiable: symbol.ty() == SymbolType::Real,
        });
        self.by_key.insert(key, id);
        id
    }

    /// The storage that `sym` names from `routine`, if already known.
    pub fn find(&self, routine: RoutineId, sym: SymbolId) -> Option<StorageId> {
        self.by_key.get(&self.key_of(routine, sym)).copied()
    }

    /// Resolves a variable reference made in `routine`, creating storage.
    pub fn access<'e>(&mut self, routine: RoutineId, g: &'e RefGraph) -> Option<Access<'e>> {
        let sym = self.symbols.resolve(&g.chain().first()?.attrs)?;
        let storage = self.storage_of(routine, sym);
        Some(shape_of(storage, g))
    }

    /// Resolves a variable reference made in `routine` to known storage.
    pub fn lookup<'e>(&self, routine: RoutineId, g: &'e RefGraph) -> Option<Access<'e>> {
        let sym = self.symbols.resolve(&g.chain().first()?.attrs)?;
        let storage = self.find(routine, sym)?;
        Some(shape_of(storage, g))
    }
}

fn shape_of(storage: StorageId, g: &RefGraph) -> Access<'_> {
    let mut lists = 0;
    let mut key = Vec::new();
    let mut constant = true;
    for v in g.chain().iter().skip(1) {
        if let RefVertexKind::ArrayElement { triplets } = &v.kind {
            lists += 1;
            for t in triplets {
                match (&t.index, &t.bound, &t.stride) {
                    (Some(i), None, None) => match constant_int(i) {
                        Some(k) => key.push(k),
                        None => constant = false,
                    },
                    _ => constant = false,
                }
            }
        }
    }
    let shape = if lists == 0 {
        Shape::Whole
    } else if lists == 1 && constant && !key.is_empty() {
        Shape::Elem(key.into_boxed_slice())
    } else {
        Shape::Unknown
    };
    Access {
        storage,
        shape,
        _expr: std::marker::PhantomData,
    }
}

/// The value of an expression that is one integer constant.
pub(crate) fn constant_int(e: &Expr) -> Option<i64> {
    if e.vertices.len() != 1 {
        return None;
    }
    let v = &e.vertices[0];
    if !matches!(v.kind, ExprVertexKind::Constant) {
        return None;
    }
    if v.attrs.get("type").is_some_and(|t| t != "integer") {
        return None;
    }
    let text = v.attrs.get("value")?.trim();
    text.parse::<i64>().ok()
}

/// Calls `f` on every variable reference read by expression `e`, including
/// those inside subscripts and function-call arguments.
pub(crate) fn for_each_ref_in_expr<'e>(e: &'e Expr, f: &mut dyn FnMut(&'e RefGraph)) {
    for v in &e.vertices {
        match &v.kind {
            ExprVertexKind::VariableReference(g) => for_each_ref(g, f),
            ExprVertexKind::FunctionCall(args) => {
                for a in args {
                    for_each_ref(&a.graph, f)
                }
            }
            _ => {}
        }
    }
}

/// Calls `f` on `g` and on every reference inside its subscripts.
pub(crate) fn for_each_ref<'e>(g: &'e RefGraph, f: &mut dyn FnMut(&'e RefGraph)) {
    f(g);
    for_each_subscript_ref(g, f);
}

/// Calls `f` on every reference inside the subscripts of `g` (not on `g`).
pub(crate) fn for_each_subscript_ref<'e>(g: &'e RefGraph, f: &mut dyn FnMut(&'e RefGraph)) {
    for v in &g.vertices {
        if let RefVertexKind::ArrayElement { triplets } = &v.kind {
            for t in triplets {
                for e in [&t.index, &t.bound, &t.stride].into_iter().flatten() {
                    for_each_ref_in_expr(e, f);
                }
            }
        }
    }
}

/// The operand structure of `e`, if it has one.
pub(crate) fn expr_graph(e: &Expr) -> Option<ExprGraph> {
    ExprGraph::new(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_drop_front_end_suffixes() {
        assert_eq!(fortran_routine_name("head__24"), "head");
        assert_eq!(fortran_routine_name("OpenAD_head__28"), "openad_head");
        assert_eq!(base_name("G_29"), "g");
        assert_eq!(base_name("X_1"), "x");
        assert_eq!(base_name("exp5"), "exp5");
    }

    #[test]
    fn universes_split_arrays_at_named_elements() {
        let mut used = BTreeMap::new();
        let a = StorageId(0);
        let x = StorageId(1);
        used.insert(a, BTreeSet::new());
        used.insert(
            x,
            [vec![2i64].into_boxed_slice(), vec![1].into_boxed_slice()]
                .into_iter()
                .collect(),
        );
        let u = Universe::build(&used);
        assert_eq!(u.len(), 4);
        assert_eq!(u.slot(0).part, Part::All);
        assert_eq!(u.slot(1).part, Part::Others);
        assert_eq!(u.slots_of(x).len(), 3);
        assert_eq!(u.slot_for_elem(x, &[7]), u.rest_slot(x));
        assert_eq!(
            u.slot(u.elem_slot(x, &[2]).unwrap()).part,
            Part::Elem(vec![2].into())
        );
    }
}
