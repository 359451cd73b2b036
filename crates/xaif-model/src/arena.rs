//! Typed arenas and handles.
//!
//! Every XAIF entity that other code needs to point at (scopes, symbols,
//! routines, control flow graphs, their vertices and edges, statements) lives
//! in an [`Arena`] and is named by an [`Id`]. Handles are plain `u32` indices,
//! so analysis results can live in side tables ([`SecondaryMap`]) keyed by
//! handle instead of as fields on the IR.

use std::fmt;
use std::marker::PhantomData;

/// A handle to a `T` stored in an [`Arena<T>`].
///
/// Handles are only meaningful for the arena that produced them; they are
/// `Copy`, ordered by creation, and cheap to hash.
pub struct Id<T> {
    index: u32,
    _marker: PhantomData<fn() -> T>,
}

impl<T> Id<T> {
    /// Builds a handle from a raw index; used by side tables and tests.
    pub fn from_index(index: usize) -> Self {
        Id {
            index: u32::try_from(index).expect("arena index fits in u32"),
            _marker: PhantomData,
        }
    }

    /// The position of the element in its arena.
    pub fn index(self) -> usize {
        self.index as usize
    }
}

impl<T> Clone for Id<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Id<T> {}
impl<T> PartialEq for Id<T> {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index
    }
}
impl<T> Eq for Id<T> {}
impl<T> PartialOrd for Id<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Id<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.index.cmp(&other.index)
    }
}
impl<T> std::hash::Hash for Id<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.index.hash(state)
    }
}
impl<T> fmt::Debug for Id<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let full = std::any::type_name::<T>();
        let short = full.rsplit("::").next().unwrap_or(full);
        write!(f, "{short}#{}", self.index)
    }
}

/// An append-only store of `T` values addressed by [`Id<T>`].
///
/// Elements are never removed one by one: a transformation that drops an
/// entity simply stops referring to it, so handles held in side tables
/// never dangle. Only a program written one routine at a time drops the
/// newest elements wholesale ([`Arena::truncate`]) once nothing refers to
/// them.
#[derive(Clone, PartialEq)]
pub struct Arena<T> {
    items: Vec<T>,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena { items: Vec::new() }
    }
}

impl<T: fmt::Debug> fmt::Debug for Arena<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.items.iter()).finish()
    }
}

impl<T> Arena<T> {
    /// An empty arena.
    pub fn new() -> Self {
        Self::default()
    }

    /// An arena of `len` elements made by `make`, for a copy whose
    /// handles must match another arena's.
    pub fn filled(len: usize, make: impl FnMut() -> T) -> Self {
        let mut items = Vec::with_capacity(len);
        items.resize_with(len, make);
        Arena { items }
    }

    /// Stores `value` and returns its handle.
    pub fn alloc(&mut self, value: T) -> Id<T> {
        let id = Id::from_index(self.items.len());
        self.items.push(value);
        id
    }

    /// Number of stored elements.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the arena holds nothing.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Drops every element created after the first `len`, so that a
    /// program streamed routine by routine holds one routine's output at a
    /// time. Handles to the dropped elements must no longer be used: later
    /// elements reuse their indices.
    pub fn truncate(&mut self, len: usize) {
        self.items.truncate(len);
    }

    /// All handles with their values, in creation order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (Id<T>, &T)> + '_ {
        self.items
            .iter()
            .enumerate()
            .map(|(i, v)| (Id::from_index(i), v))
    }

    /// All values, mutably, in creation order (for passes that rewrite
    /// every element of a kind).
    pub fn values_mut(&mut self) -> impl ExactSizeIterator<Item = &mut T> + '_ {
        self.items.iter_mut()
    }

    /// All handles, in creation order.
    pub fn ids(&self) -> impl ExactSizeIterator<Item = Id<T>> {
        (0..self.items.len()).map(Id::from_index)
    }
}

impl<T> std::ops::Index<Id<T>> for Arena<T> {
    type Output = T;
    fn index(&self, id: Id<T>) -> &T {
        &self.items[id.index()]
    }
}

impl<T> std::ops::IndexMut<Id<T>> for Arena<T> {
    fn index_mut(&mut self, id: Id<T>) -> &mut T {
        &mut self.items[id.index()]
    }
}

/// A side table that attaches a `V` to some handles of an arena of `K`.
///
/// Analyses (activity, TBR, CFG orders) store their results here rather than
/// on the IR, so the model never learns about the passes that use it.
#[derive(Clone, Debug)]
pub struct SecondaryMap<K, V> {
    slots: Vec<Option<V>>,
    _marker: PhantomData<fn() -> K>,
}

impl<K, V> Default for SecondaryMap<K, V> {
    fn default() -> Self {
        SecondaryMap {
            slots: Vec::new(),
            _marker: PhantomData,
        }
    }
}

impl<K, V> SecondaryMap<K, V> {
    /// An empty side table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the value for `key`, returning the previous one.
    pub fn insert(&mut self, key: Id<K>, value: V) -> Option<V> {
        let i = key.index();
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        self.slots[i].replace(value)
    }

    /// The value for `key`, if any.
    pub fn get(&self, key: Id<K>) -> Option<&V> {
        self.slots.get(key.index()).and_then(Option::as_ref)
    }

    /// The value for `key`, mutably, if any.
    pub fn get_mut(&mut self, key: Id<K>) -> Option<&mut V> {
        self.slots.get_mut(key.index()).and_then(Option::as_mut)
    }

    /// Whether `key` has a value.
    pub fn contains_key(&self, key: Id<K>) -> bool {
        self.get(key).is_some()
    }

    /// All keys with values, in handle order.
    pub fn iter(&self) -> impl Iterator<Item = (Id<K>, &V)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_ref().map(|v| (Id::from_index(i), v)))
    }
}

impl<K, V> std::ops::Index<Id<K>> for SecondaryMap<K, V> {
    type Output = V;
    fn index(&self, key: Id<K>) -> &V {
        self.get(key)
            .expect("side table has an entry for this handle")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_index_their_arena() {
        let mut arena = Arena::new();
        let a = arena.alloc("a");
        let b = arena.alloc("b");
        assert_eq!(arena[a], "a");
        assert_eq!(arena[b], "b");
        assert!(a < b);
        assert_eq!(arena.len(), 2);
    }

    #[test]
    fn side_tables_hold_sparse_values() {
        let mut arena = Arena::new();
        let a = arena.alloc(1);
        let b = arena.alloc(2);
        let mut side = SecondaryMap::new();
        side.insert(b, "b");
        assert!(side.get(a).is_none());
        assert_eq!(side[b], "b");
        assert_eq!(side.iter().count(), 1);
    }
}
