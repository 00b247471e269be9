//! The user contexts the trace runtime knows, by address: a hash table (open addressing, linear probing) in an
//! anonymous mapping, so that a switch costs the same with ten contexts or ten thousand (a coroutine server's),
//! and nothing is allocated with `malloc` (switches happen anywhere, signal handlers included).

use super::Thread;
use crate::sys::MVec;

/// What the runtime knows of a context.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Known {
    /// A stream parked in it (`swapcontext` saved it).
    Parked(*mut Thread),
    /// Made by `makecontext`, not yet switched to: the stream that made it (its thread number) and whether it
    /// traced then (region mode: the context starts traced too).
    Fresh { maker: u32, traced: bool },
}

#[derive(Clone, Copy)]
struct Slot {
    /// [`EMPTY`], [`REMOVED`] or a context's address.
    ucp: usize,
    known: Known,
}

const EMPTY: usize = 0;
const REMOVED: usize = 1;
const FREE: Slot = Slot { ucp: EMPTY, known: Known::Fresh { maker: 0, traced: false } };
/// Slots of the first table (a power of two, as every table's size).
const FIRST_SLOTS: usize = 64;

/// Contexts by address.
pub(super) struct ContextIndex {
    slots: MVec<Slot>,
    /// Slots holding a context or [`REMOVED`]: a table at 3/4 of that is rebuilt twice as large.
    used: usize,
}

impl ContextIndex {
    pub(super) const fn new() -> ContextIndex {
        ContextIndex { slots: MVec::new(), used: 0 }
    }

    /// What is known of context `ucp`.
    pub(super) fn get(&self, ucp: usize) -> Option<Known> {
        let i = self.find(ucp)?;
        self.slots.as_slice().get(i).map(|s| s.known)
    }

    /// What was known of context `ucp`, now forgotten.
    pub(super) fn take(&mut self, ucp: usize) -> Option<Known> {
        let i = self.find(ucp)?;
        let slot = self.slots.as_mut_slice().get_mut(i)?;
        slot.ucp = REMOVED;
        Some(slot.known)
    }

    /// Records `known` for context `ucp` (replacing what was); false when no memory is left.
    pub(super) fn put(&mut self, ucp: usize, known: Known) -> bool {
        if ucp <= REMOVED {
            return false;
        }
        if let Some(slot) = self.find(ucp).and_then(|i| self.slots.as_mut_slice().get_mut(i)) {
            slot.known = known;
            return true;
        }
        if !self.reserve() {
            return false;
        }
        let Some(slot) =
            self.probe(ucp, |s| s.ucp == EMPTY || s.ucp == REMOVED).and_then(|i| self.slots.as_mut_slice().get_mut(i))
        else {
            return false;
        };
        if slot.ucp == EMPTY {
            self.used += 1;
        }
        *slot = Slot { ucp, known };
        true
    }

    /// Makes room for one more context: false when no memory is left.
    pub(super) fn reserve(&mut self) -> bool {
        let size = self.slots.len();
        if size > 0 && (self.used + 1) * 4 < size * 3 {
            return true;
        }
        let live = self.slots.as_slice().iter().filter(|s| s.ucp > REMOVED).count();
        let mut new = ContextIndex::new();
        // At most half full after: the removed slots go, and the table grows when the live ones need it.
        let slots = ((live + 1) * 2).next_power_of_two().max(FIRST_SLOTS);
        if new.slots.extend_fill(FREE, slots).is_err() {
            return false;
        }
        for s in self.slots.as_slice().iter().filter(|s| s.ucp > REMOVED) {
            match new.probe(s.ucp, |n| n.ucp == EMPTY).and_then(|i| new.slots.as_mut_slice().get_mut(i)) {
                Some(n) => *n = *s,
                None => return false,
            }
            new.used += 1;
        }
        *self = new;
        true
    }

    fn find(&self, ucp: usize) -> Option<usize> {
        if ucp <= REMOVED {
            return None;
        }
        let i = self.probe(ucp, |s| s.ucp == ucp || s.ucp == EMPTY)?;
        (self.slots.as_slice().get(i)?.ucp == ucp).then_some(i)
    }

    /// The first slot from `ucp`'s home on that `stop` accepts (`None` in an empty table; a table always has an
    /// empty slot otherwise). Indexes with `get`: the runtime has no panic path.
    fn probe(&self, ucp: usize, stop: impl Fn(&Slot) -> bool) -> Option<usize> {
        let slots = self.slots.as_slice();
        let mask = slots.len().checked_sub(1)?;
        // Fibonacci hashing of the address without its alignment bits.
        let mut i = ((ucp >> 4) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(32) as usize & mask;
        for _ in 0..slots.len() {
            if stop(slots.get(i)?) {
                return Some(i);
            }
            i = (i + 1) & mask;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a plain map, through growth and removals (contexts made, parked, switched to and forgotten in
    /// a scheduler's pattern): every lookup agrees.
    #[test]
    fn the_index_agrees_with_a_map_through_growth_and_removals() {
        let mut index = ContextIndex::new();
        let mut map = std::collections::HashMap::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for step in 0..200_000u32 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            // 3,000 contexts, 944 bytes apart (a ucontext_t's size), as in an array of them.
            let ucp = 0x7f00_0000_0000 + (seed % 3000) as usize * 944;
            match seed >> 62 {
                0 | 1 => {
                    let known = Known::Fresh { maker: step, traced: step % 2 == 0 };
                    assert!(index.put(ucp, known));
                    map.insert(ucp, known);
                }
                2 => assert_eq!(index.take(ucp), map.remove(&ucp), "step {step}"),
                _ => assert_eq!(index.get(ucp), map.get(&ucp).copied(), "step {step}"),
            }
        }
        assert!(map.len() > 1000);
        for (&ucp, &known) in &map {
            assert_eq!(index.get(ucp), Some(known));
        }
        assert_eq!(index.get(0x1000), None);
        let slots = index.slots.len();
        assert!(slots.is_power_of_two() && index.used * 4 < slots * 3, "{slots} slots, {} used", index.used);
    }
}
