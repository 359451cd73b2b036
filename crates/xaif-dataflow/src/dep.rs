//! Differentiable dependency (`Dep`, seed §4.1) and the varied and useful
//! propagations built on it (§4.2).
//!
//! A [`Dep`] summary is kept sparse: only the rows of the slots a structure
//! may write are stored, every other slot depending on itself alone. A row
//! lists the slots, just before the structure, on which the slot just after
//! it may depend in a differentiable way; a row without its own slot means
//! the slot is definitely overwritten. Composition, join, image and
//! pre-image then cost time proportional to the written slots, not to the
//! square of the universe.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use xaif_model::{RoutineId, StmtId};

use crate::facts::ProgramFacts;
use crate::framework::{Direction, Propagation, RoutineSummary, Summaries};
use crate::LocSet;

/// Differentiable dependencies across a structure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dep {
    rows: BTreeMap<u32, LocSet>,
}

impl Dep {
    /// The identity: nothing written.
    pub fn identity() -> Self {
        Dep::default()
    }

    /// The row of `slot`, if the structure may write it.
    pub fn row(&self, slot: u32) -> Option<&LocSet> {
        self.rows.get(&slot)
    }

    /// The written slots with their rows.
    pub fn rows(&self) -> impl Iterator<Item = (u32, &LocSet)> + '_ {
        self.rows.iter().map(|(k, v)| (*k, v))
    }

    /// Sets the row of `slot`.
    pub fn set_row(&mut self, slot: u32, row: LocSet) {
        self.rows.insert(slot, row);
    }

    fn row_or_self(&self, slot: u32) -> LocSet {
        match self.rows.get(&slot) {
            Some(r) => r.clone(),
            None => LocSet::from_slots([slot]),
        }
    }

    /// Whether `after` may depend on `before` across the structure.
    pub fn depends(&self, after: u32, before: u32) -> bool {
        match self.rows.get(&after) {
            Some(r) => r.contains(before),
            None => after == before,
        }
    }

    /// Slots definitely overwritten.
    pub fn killed(&self) -> LocSet {
        self.rows
            .iter()
            .filter(|(k, r)| !r.contains(**k))
            .map(|(k, _)| *k)
            .collect()
    }

    /// `self` then `then` (the paper's `×`).
    pub fn seq(&self, then: &Dep) -> Dep {
        let mut out = self.clone();
        let mut new_rows = Vec::with_capacity(then.rows.len());
        for (&w, row) in &then.rows {
            let mut acc = LocSet::new();
            for b in row.iter() {
                match self.rows.get(&b) {
                    Some(r) => {
                        acc.union_with(r);
                    }
                    None => {
                        acc.insert(b);
                    }
                }
            }
            new_rows.push((w, acc));
        }
        for (w, r) in new_rows {
            out.rows.insert(w, r);
        }
        out
    }

    /// Either `self` or `other`.
    pub fn join(&mut self, other: &Dep) {
        for (&w, row) in &other.rows {
            match self.rows.get_mut(&w) {
                Some(r) => {
                    r.union_with(row);
                }
                None => {
                    let mut r = row.clone();
                    r.insert(w);
                    self.rows.insert(w, r);
                }
            }
        }
        for (&w, r) in self.rows.iter_mut() {
            if !other.rows.contains_key(&w) {
                r.insert(w);
            }
        }
    }

    /// The slots after the structure that depend on some slot of `before`
    /// (`S × Dep`).
    pub fn image(&self, before: &LocSet) -> LocSet {
        let mut out = before.clone();
        for (&w, row) in &self.rows {
            if row.intersects(before) {
                out.insert(w);
            } else {
                out.remove(w);
            }
        }
        out
    }

    /// The slots before the structure on which some slot of `after` depends
    /// (`Dep × S`).
    pub fn preimage(&self, after: &LocSet) -> LocSet {
        let mut out = after.clone();
        for &w in self.rows.keys() {
            out.remove(w);
        }
        for (&w, row) in &self.rows {
            if after.contains(w) {
                out.union_with(row);
            }
        }
        out
    }

    /// The full relation as (after, before) pairs, for tests and reports.
    pub fn pairs(&self, universe: usize) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for a in 0..universe as u32 {
            for b in self.row_or_self(a).iter() {
                out.push((a, b));
            }
        }
        out
    }
}

/// The `Dep` problem of one routine.
pub struct DepProblem<'a, 'p> {
    /// Program facts.
    pub facts: &'a ProgramFacts<'p>,
    /// The routine.
    pub routine: RoutineId,
    /// Summaries of the routines known so far.
    pub table: &'a FxHashMap<RoutineId, RoutineSummary<Dep>>,
    /// Which way the facts flow when this problem propagates.
    pub direction: Direction,
}

impl Summaries for DepProblem<'_, '_> {
    type Summary = Dep;

    fn identity(&self) -> Dep {
        Dep::identity()
    }

    fn stmt(&self, s: StmtId) -> Option<Dep> {
        let e = self.facts.effect(self.routine, s);
        let mut d = Dep::identity();
        if let Some(call) = &e.call {
            let callee = self.table.get(&call.callee)?.summary.as_ref()?;
            let n = self.facts.routines[&self.routine].universe.len();
            let kills = call.kills(&callee.killed(), n);
            for (a, row) in callee.rows() {
                let targets = &call.may[a as usize];
                if targets.is_empty() {
                    continue;
                }
                let src = call.to_caller(row, n);
                for &c in targets {
                    match d.rows.get_mut(&c) {
                        Some(r) => {
                            r.union_with(&src);
                        }
                        None => {
                            d.rows.insert(c, src.clone());
                        }
                    }
                }
            }
            for (&c, r) in d.rows.iter_mut() {
                if !kills.contains(c) {
                    r.insert(c);
                }
            }
            return Some(d);
        }
        let dp = LocSet::from_slots(e.dp.iter().copied());
        for &w in &e.writes {
            let mut row = dp.clone();
            if !e.must || e.opaque {
                row.insert(w);
            }
            d.rows.insert(w, row);
        }
        Some(d)
    }

    fn seq(&self, first: &Dep, then: &Dep) -> Dep {
        first.seq(then)
    }

    fn join(&self, into: &mut Dep, other: &Dep) {
        into.join(other)
    }
}

impl Propagation for DepProblem<'_, '_> {
    type Fact = LocSet;

    fn direction(&self) -> Direction {
        self.direction
    }

    fn bottom(&self) -> LocSet {
        LocSet::new()
    }

    fn join_fact(&self, into: &mut LocSet, other: &LocSet) -> bool {
        into.union_with(other)
    }

    fn apply(&self, s: &Dep, fact: &LocSet) -> LocSet {
        match self.direction {
            Direction::Forward => s.image(fact),
            Direction::Backward => s.preimage(fact),
        }
    }

    /// Crosses an assignment without building its summary (the same result
    /// as [`Dep::image`] / [`Dep::preimage`] of [`Summaries::stmt`], without
    /// allocating a relation per statement).
    fn transfer(&self, s: StmtId, fact: &LocSet) -> LocSet {
        let e = self.facts.effect(self.routine, s);
        if e.call.is_some() {
            return match self.stmt(s) {
                Some(d) => self.apply(&d, fact),
                None => LocSet::new(),
            };
        }
        let mut out = fact.clone();
        let keeps_self = !e.must || e.opaque;
        match self.direction {
            Direction::Forward => {
                let hit = e.dp.iter().any(|d| fact.contains(*d));
                for &w in &e.writes {
                    if hit || (keeps_self && fact.contains(w)) {
                        out.insert(w);
                    } else {
                        out.remove(w);
                    }
                }
            }
            Direction::Backward => {
                let mut any = false;
                for &w in &e.writes {
                    if fact.contains(w) {
                        any = true;
                        if !keeps_self {
                            out.remove(w);
                        }
                    } else {
                        out.remove(w);
                    }
                }
                if any {
                    for &d in &e.dp {
                        out.insert(d);
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dep(rows: &[(u32, &[u32])]) -> Dep {
        let mut d = Dep::identity();
        for (w, r) in rows {
            d.set_row(*w, LocSet::from_slots(r.iter().copied()));
        }
        d
    }

    #[test]
    fn composition_follows_dependencies_through_the_middle() {
        // a := b; then c := a
        let first = dep(&[(0, &[1])]);
        let then = dep(&[(2, &[0])]);
        let d = first.seq(&then);
        assert!(d.depends(2, 1));
        assert!(!d.depends(2, 0));
        assert!(d.depends(0, 1));
        assert!(d.depends(1, 1));
        assert_eq!(d.killed(), LocSet::from_slots([0, 2]));
    }

    #[test]
    fn join_keeps_the_unchanged_path() {
        let mut a = dep(&[(0, &[1])]);
        a.join(&Dep::identity());
        assert!(a.depends(0, 0) && a.depends(0, 1));
        assert!(a.killed().is_empty());
    }

    #[test]
    fn image_and_preimage_are_adjoint() {
        let d = dep(&[(0, &[1, 2]), (3, &[])]);
        assert_eq!(
            d.image(&LocSet::from_slots([2, 3])),
            LocSet::from_slots([0, 2])
        );
        assert_eq!(
            d.preimage(&LocSet::from_slots([0, 3])),
            LocSet::from_slots([1, 2])
        );
    }
}
