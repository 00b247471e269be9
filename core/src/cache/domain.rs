//! Abstract LRU cache states for must and may analysis (Ferdinand's analyses in the WCET tools' style, with
//! "younger sets" in place of ages, as in Reineke's and Cullmann's formulations).
//!
//! For a line `l`, its *younger set* is the set of other lines of its cache set touched since `l`'s last
//! access; under LRU with associativity A, `l` is cached iff it was accessed and its younger set has fewer than
//! A lines. A must state keeps, for lines cached on *every* path, an over-approximation of that set (joined by
//! union); a may state keeps, for lines cached on *some* path, an under-approximation (joined by intersection).
//! A line absent from a must state may be uncached; a line absent from a may state is certainly uncached.
//! With A = 1 both collapse to Mueller & Whalley's sets of lines: the may state is their abstract cache state
//! (Definition 7, the "invalid" pseudo-lines being the absence of any line of a set), and a line alone in its
//! set in it is exactly their always-hit condition.

use super::lines::Lines;
use std::collections::BTreeMap;

/// Must or may.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Lines cached on every path (join: intersection of lines, union of younger sets).
    Must,
    /// Lines cached on some path (join: union of lines, intersection of younger sets).
    May,
}

/// An abstract cache state: `(set, line) → younger set` (sorted, fewer than A lines).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct State {
    map: BTreeMap<(u32, u32), Vec<u32>>,
}

impl State {
    /// Whether `line` is in the state (cached on every path for must, on some path for may).
    pub fn contains(&self, lines: &Lines, line: u32) -> bool {
        self.map.contains_key(&(lines.set(line), line))
    }

    /// The effect of an access to `line` under LRU with associativity `assoc`.
    pub fn access(&mut self, lines: &Lines, assoc: u32, line: u32) {
        let s = lines.set(line);
        let mut evicted = Vec::new();
        for (&(_, l), y) in self.map.range_mut((s, 0)..=(s, u32::MAX)) {
            if l != line {
                if let Err(pos) = y.binary_search(&line) {
                    y.insert(pos, line);
                }
                if y.len() >= assoc as usize {
                    evicted.push(l);
                }
            }
        }
        for l in evicted {
            self.map.remove(&(s, l));
        }
        self.map.insert((s, line), Vec::new());
    }

    /// Joins `other` into `self`; returns whether `self` changed.
    pub fn join(&mut self, other: &State, kind: Kind, assoc: u32) -> bool {
        let old = self.map.len();
        let mut changed = false;
        match kind {
            Kind::Must => {
                self.map.retain(|k, y| {
                    let Some(o) = other.map.get(k) else {
                        return false;
                    };
                    for &x in o {
                        if let Err(pos) = y.binary_search(&x) {
                            y.insert(pos, x);
                            changed = true;
                        }
                    }
                    y.len() < assoc as usize
                });
            }
            Kind::May => {
                for (k, o) in &other.map {
                    match self.map.get_mut(k) {
                        None => {
                            self.map.insert(*k, o.clone());
                            changed = true;
                        }
                        Some(y) => {
                            let before = y.len();
                            y.retain(|x| o.binary_search(x).is_ok());
                            changed |= y.len() != before;
                        }
                    }
                }
            }
        }
        changed || self.map.len() != old
    }

    /// Number of lines in the state.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the state holds no line.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
