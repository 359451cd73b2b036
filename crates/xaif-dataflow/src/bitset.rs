//! Sets of abstract locations as bit vectors.
//!
//! Every data-flow fact of this crate is a set of slots of one routine's
//! [`crate::Universe`]; slots are dense small integers, so a word-packed bit
//! vector makes union, difference and intersection a few machine operations
//! per 64 locations, which is what keeps the analyses linear in program size.

use std::fmt;

/// A set of slot numbers of one routine's universe.
///
/// Sets of different capacities combine correctly (the shorter is padded
/// with zeros), so a set built before the universe was known never
/// miscompares; equality ignores trailing zero words.
#[derive(Clone, Default)]
pub struct LocSet {
    words: Vec<u64>,
}

impl LocSet {
    /// An empty set sized for `capacity` slots.
    pub fn with_capacity(capacity: usize) -> Self {
        LocSet {
            words: vec![0; capacity.div_ceil(64)],
        }
    }

    /// An empty set.
    pub fn new() -> Self {
        LocSet::default()
    }

    /// Builds a set from slot numbers.
    pub fn from_slots(slots: impl IntoIterator<Item = u32>) -> Self {
        let mut s = LocSet::new();
        for x in slots {
            s.insert(x);
        }
        s
    }

    fn grow(&mut self, words: usize) {
        if self.words.len() < words {
            self.words.resize(words, 0);
        }
    }

    /// Adds `slot`; returns whether it was new.
    pub fn insert(&mut self, slot: u32) -> bool {
        let (w, b) = (slot as usize / 64, slot % 64);
        self.grow(w + 1);
        let had = self.words[w] >> b & 1 == 1;
        self.words[w] |= 1 << b;
        !had
    }

    /// Removes `slot`.
    pub fn remove(&mut self, slot: u32) {
        let (w, b) = (slot as usize / 64, slot % 64);
        if let Some(word) = self.words.get_mut(w) {
            *word &= !(1 << b);
        }
    }

    /// Whether `slot` is in the set.
    pub fn contains(&self, slot: u32) -> bool {
        let (w, b) = (slot as usize / 64, slot % 64);
        self.words.get(w).is_some_and(|x| x >> b & 1 == 1)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Adds every element of `other`; returns whether the set grew.
    pub fn union_with(&mut self, other: &LocSet) -> bool {
        self.grow(other.words.len());
        let mut changed = false;
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            let n = *a | *b;
            changed |= n != *a;
            *a = n;
        }
        changed
    }

    /// Removes every element of `other`.
    pub fn difference_with(&mut self, other: &LocSet) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= !*b;
        }
    }

    /// Keeps only the elements also in `other`.
    pub fn intersect_with(&mut self, other: &LocSet) {
        for (i, a) in self.words.iter_mut().enumerate() {
            *a &= other.words.get(i).copied().unwrap_or(0);
        }
    }

    /// Whether the two sets share an element.
    pub fn intersects(&self, other: &LocSet) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    /// Whether every element of `self` is in `other`.
    pub fn is_subset(&self, other: &LocSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, a)| a & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    /// The elements in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros();
                w &= w - 1;
                Some(i as u32 * 64 + b)
            })
        })
    }
}

impl PartialEq for LocSet {
    fn eq(&self, other: &Self) -> bool {
        let n = self.words.len().max(other.words.len());
        (0..n).all(|i| {
            self.words.get(i).copied().unwrap_or(0) == other.words.get(i).copied().unwrap_or(0)
        })
    }
}

impl Eq for LocSet {}

impl fmt::Debug for LocSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl FromIterator<u32> for LocSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        LocSet::from_slots(iter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_operations_follow_their_definitions() {
        let mut a = LocSet::from_slots([1, 64, 130]);
        let b = LocSet::from_slots([1, 2]);
        assert!(a.intersects(&b));
        assert!(a.union_with(&b));
        assert!(!a.union_with(&b));
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![1, 2, 64, 130]);
        a.difference_with(&b);
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![64, 130]);
        let mut c = a.clone();
        c.intersect_with(&LocSet::from_slots([130]));
        assert_eq!(c, LocSet::from_slots([130]));
        assert!(c.is_subset(&a));
        assert!(!a.is_subset(&c));
        assert_eq!(LocSet::with_capacity(500), LocSet::new());
        assert_eq!(a.len(), 2);
    }
}
