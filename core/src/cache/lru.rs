//! The concrete LRU cache, one line reference at a time: what the on-the-fly counter applies to the conflict
//! sets during a run, and what `pathprof icache` runs over every fetch of a trace (cachegrind's I1 model: an
//! instruction straddling two lines is one access that misses if either line misses).

use super::program::{Geometry, Insn};

/// References `line` in one LRU set of `assoc` ways (most recently used first); returns whether it hit.
pub fn reference<T: PartialEq>(set: &mut Vec<T>, line: T, assoc: usize) -> bool {
    match set.iter().position(|l| *l == line) {
        Some(i) => {
            set[..=i].rotate_right(1);
            true
        }
        None => {
            set.insert(0, line);
            set.truncate(assoc);
            false
        }
    }
}

/// A set-associative LRU cache of memory lines that starts empty.
pub struct LruCache {
    geometry: Geometry,
    /// Per set, its lines, most recently used first.
    sets: Vec<Vec<u64>>,
}

impl LruCache {
    /// An empty cache of `geometry`.
    pub fn new(geometry: Geometry) -> LruCache {
        LruCache { geometry, sets: vec![Vec::with_capacity(geometry.assoc as usize + 1); geometry.sets() as usize] }
    }

    /// References one line; returns whether it missed.
    pub fn line(&mut self, line: u64) -> bool {
        let set = &mut self.sets[self.geometry.set_of(line) as usize];
        !reference(set, line, self.geometry.assoc as usize)
    }

    /// Fetches one instruction; returns whether it missed.
    pub fn fetch(&mut self, i: Insn) -> bool {
        let first = self.geometry.line_of(i.addr);
        let last = self.geometry.line_of(i.addr + u64::from(i.size.max(1)) - 1);
        // Every line the instruction covers (two at most on x86 with lines of 16 bytes or more, as cachegrind
        // assumes; more only in tests with tiny lines, where the model references them all too).
        let mut miss = false;
        for l in first..=last {
            miss |= self.line(l);
        }
        miss
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insn(addr: u64, size: u32) -> Insn {
        Insn { addr, size }
    }

    #[test]
    fn lru_set_keeps_the_most_recent_lines() {
        // 2 sets of 2 ways, 16-byte lines: lines 0, 2, 4 all map to set 0.
        let mut c = LruCache::new(Geometry::new(64, 2, 16).unwrap());
        let misses: Vec<bool> = [0x00, 0x20, 0x00, 0x40, 0x20, 0x00].iter().map(|&a| c.fetch(insn(a, 1))).collect();
        // 0 miss, 2 miss, 0 hit (0 most recent), 4 miss evicts 2, 2 miss evicts 0, 0 miss.
        assert_eq!(misses, [true, true, false, true, true, true]);
        // Set 1 was never touched.
        assert!(c.fetch(insn(0x10, 1)));
    }

    #[test]
    fn a_straddling_instruction_is_one_access_missing_if_either_line_misses() {
        let mut c = LruCache::new(Geometry::new(1024, 1, 32).unwrap());
        assert!(c.fetch(insn(0x1e, 4))); // lines 0 and 1, both cold
        assert!(!c.fetch(insn(0x00, 1))); // line 0 now present
        assert!(!c.fetch(insn(0x20, 1))); // so is line 1
        assert!(c.fetch(insn(0x3e, 4))); // line 1 present, line 2 cold: one miss
        assert!(!c.fetch(insn(0x3e, 4)));
    }
}
