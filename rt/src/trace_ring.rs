//! The flight recorder's per-thread memory (`PATHPROF_TRACE_RING=SIZE`): the last words of a thread's bit
//! stream in a ring, and its recent sync points (where regeneration can start: the bit and the shadow stack
//! there) in a second, smaller ring. Both live in one anonymous mapping made when the thread registers; the hot
//! path (a full word) is one store and a mask, and asks for a sync point every [`CHUNKS`]th of the ring, so
//! that the oldest surviving sync point is at most about one chunk into the window.

use core::ptr;

/// Sync points asked for per ring's worth of words.
pub(crate) const CHUNKS: u64 = 8;
/// Sync points remembered (the oldest may be overwritten by newer ones first).
const SLOTS: usize = 32;

/// A recorded sync point.
#[derive(Copy, Clone, Default)]
pub(crate) struct SyncPoint {
    /// Bit of the thread's stream where reading starts.
    pub(crate) bit: u64,
    /// `SYNC_AT_ENTRY` or `SYNC_AT_SITE`.
    pub(crate) kind: u64,
    /// The thread state there.
    pub(crate) state: u64,
    /// Activations on the stack (shadow entries in the pool).
    pub(crate) depth: u64,
    /// Absolute index of its first entry in the pool.
    pub(crate) pos: u64,
}

/// One thread's ring (all zero: no ring).
#[repr(C)]
pub(crate) struct Ring {
    words: *mut u64,
    /// Words of the ring (a power of two).
    n: u64,
    pool: *mut u64,
    /// Words of the pool (a power of two).
    pool_n: u64,
    /// Entries written to the pool so far.
    pool_at: u64,
    slots: [SyncPoint; SLOTS],
    /// Sync points recorded so far; those before `from` belong to an earlier window (a region restarted).
    nsync: u64,
    from: u64,
    /// The window's words: absolute indices `lo..hi` of the stream (the ring holds the last `n` of them).
    lo: u64,
    hi: u64,
}

impl Ring {
    /// Maps a ring of `bytes` bytes rounded down to a power of two (at least 512) and a pool of a quarter of it; false if mapping fails.
    pub(crate) fn allocate(&mut self, bytes: u64) -> bool {
        let words = (bytes / 8).max(64);
        let n = 1u64 << (63 - words.leading_zeros());
        let pool_n = (n / 4).max(64);
        let len = ((n + pool_n) * 8) as usize;
        let mem = crate::sys::map_anonymous(len, 0);
        if mem.is_null() {
            return false;
        }
        self.words = mem as *mut u64;
        // SAFETY: inside the mapping.
        self.pool = unsafe { self.words.add(n as usize) };
        self.n = n;
        self.pool_n = pool_n;
        true
    }

    /// Whether the ring exists.
    pub(crate) fn on(&self) -> bool {
        !self.words.is_null()
    }

    /// Stores the stream's word `index` (the next one); true when a sync point is due.
    #[inline]
    pub(crate) fn push(&mut self, index: u64, word: u64) -> bool {
        // SAFETY: the mask keeps the index inside the ring.
        unsafe { *self.words.add((index & (self.n - 1)) as usize) = word };
        self.hi = index + 1;
        self.hi.is_multiple_of((self.n / CHUNKS).max(1))
    }

    /// Starts a new window at word `index` (a region (re)started): older words and sync points are dropped.
    pub(crate) fn restart(&mut self, index: u64) {
        self.lo = index;
        self.hi = index;
        self.from = self.nsync;
    }

    /// Records a sync point with the `depth` shadow entries `entry(1..=depth)`; false (nothing recorded) when
    /// they do not fit the pool.
    pub(crate) fn record(&mut self, mut p: SyncPoint, entry: impl Fn(u64) -> u64) -> bool {
        if p.depth > self.pool_n {
            return false;
        }
        p.pos = self.pool_at;
        for k in 1..=p.depth {
            // SAFETY: masked into the pool.
            unsafe { *self.pool.add(((self.pool_at + k - 1) & (self.pool_n - 1)) as usize) = entry(k) };
        }
        self.pool_at += p.depth;
        if let Some(slot) = self.slots.get_mut((self.nsync % SLOTS as u64) as usize) {
            *slot = p;
        }
        self.nsync += 1;
        true
    }

    /// The first word the window still holds.
    pub(crate) fn first(&self) -> u64 {
        self.lo.max(self.hi.saturating_sub(self.n))
    }

    /// The oldest sync point whose entries and first word survive, at or before bit `end`.
    pub(crate) fn oldest(&self, end: u64) -> Option<SyncPoint> {
        let first_bit = self.first() * 64;
        let keep_from = self.pool_at.saturating_sub(self.pool_n);
        (self.from.max(self.nsync.saturating_sub(SLOTS as u64))..self.nsync)
            .filter_map(|i| self.slots.get((i % SLOTS as u64) as usize).copied())
            .find(|s| s.bit >= first_bit && s.bit <= end && s.pos >= keep_from)
    }

    /// Shadow entry `k` (1-based) of sync point `p`.
    pub(crate) fn entry(&self, p: &SyncPoint, k: u64) -> u64 {
        // SAFETY: masked into the pool.
        unsafe { *self.pool.add(((p.pos + k - 1) & (self.pool_n - 1)) as usize) }
    }

    /// The word of absolute index `i` (which the window holds).
    pub(crate) fn word(&self, i: u64) -> u64 {
        // SAFETY: masked into the ring.
        unsafe { *self.words.add((i & (self.n - 1)) as usize) }
    }

    /// The end of the window's words (absolute).
    pub(crate) fn end(&self) -> u64 {
        self.hi
    }

    /// Unmaps the ring.
    pub(crate) fn free(&mut self) {
        if self.on() {
            // SAFETY: the mapping made by `allocate`.
            unsafe { libc::munmap(self.words as *mut libc::c_void, ((self.n + self.pool_n) * 8) as usize) };
            self.words = ptr::null_mut();
        }
    }
}
