//! Path-mode hash tables: [`__pathprof_path_add`] and the table side of dumps, resets and forks.
//!
//! Functions whose Ball–Larus path space is too large for a dense counter array get a [`PathTable`] each (the
//! pass emits them zeroed except `function` and links them from `ModuleDesc::tables`). Instrumented code calls
//! `__pathprof_path_add(table, path, delta)` with `delta` = +1 to count a path, or 0 (a no-op that inserts
//! nothing: the PHI entry of an edge that ends no path). [`__pathprof_path_cache_miss`] passes on a cached
//! count as its `delta`. Counts are 64-bit values stored as `u64` and updated with wrapping arithmetic, so any
//! signed `delta` sums exactly (objects instrumented before truncated paths counted arrivals also passed −1).
//!
//! # Table
//! Open addressing with linear probing over `capacity` (a power of two) pairs `(path + 1, count)`; a key of 0
//! marks an empty slot. The slot of a key starts at the splitmix64 finalizer of the key. The pair array is
//! mapped (anonymous `mmap`, never the program's heap) at the table's first insertion ([`INITIAL_CAPACITY`] pairs, 1 KiB) and doubled with a rehash when an
//! insertion would bring the load to more than 70 % (see "Concurrency" for what happens to the old array). `len` is the number of occupied slots. Only
//! `lock`, `slots`, `capacity` and `len` are written by the runtime, and only `slots` memory is allocated.
//!
//! Dumps drain a table like dense counters: under its lock they copy every nonzero count and set it to 0, but
//! keep the keys, so a program that keeps executing the same paths never reallocates. A table is freed only
//! when its module is unregistered (`dlclose`).
//!
//! # Bounded memory
//! A table holds at most 2^22 paths by default (4 194 304; the pair array then has 2^23 pairs, 128 MiB). An update
//! of a path that is not in a full table is dropped and the table remembers it; the dump then marks the module's
//! record [`RECORD_FLAG_DROPPED`](pathprof_format::layout::RECORD_FLAG_DROPPED) and prints one warning
//! per table and process. Updates of paths already in the table are always counted. The same happens, rarer
//! still, when the mapping fails, and for the path number `u64::MAX` (whose key would be 0; the pass never numbers
//! a path that high). An update that re-enters a table from a signal handler that interrupted an update of the
//! same table in the same thread cannot wait for the lock (that would deadlock): it is parked
//! ([`crate::deferred`]) and applied when the interrupted thread releases the lock, and dropped only if more
//! than [`crate::deferred::SLOTS`] updates wait at once.
//!
//! `PATHPROF_TABLE_CAP_LOG2=k` (decimal, `0 <= k <= 26`) sets the cap to 2^k paths per table: a run with more
//! distinct paths than the default can raise it (k = 26: a pair array of up to 2 GiB per table), tests lower it.
//! It is read once, at the first insertion into any table of the process; other values are ignored.
//!
//! # Concurrency
//! An update of a path that is already in the table takes no lock: it loads the published array (`slots`,
//! acquire), probes for the key and adds to its count with a compare-and-swap — exact under threads in every
//! counter mode, and a few instructions in the common case. Everything else takes the table's spin lock:
//! inserting a key (the count is stored before the key, which is stored with release ordering), growing,
//! draining (counts are swapped to 0), resets and forks. Growing copies each pair after swapping its count to
//! the sentinel [`MOVED`]; an updater that meets it takes the lock and finds the key in the new array, so no
//! update is lost. Arrays carry their capacity in a header word, so a reader never pairs one array with another
//! array's size; a replaced array is never freed while its table is live (a lock-free updater may still be
//! probing it), which costs less memory than the final array.
//!
//! The `lock` word (0 when emitted) holds:
//! - bits 0..61: the owner, `(pthread_self() & OWNER) | 1`, or 0 when free. Acquire is a compare-and-swap
//!   (acquire ordering) that preserves the flag bits, release a `fetch_and` (release ordering). Waiters spin
//!   [`SPINS`] times with a spin hint, then `sched_yield` between attempts.
//! - bit 61 [`FULL`]: one of the dropped updates met a full table (for the warning's wording).
//! - bit 62 [`WARNED`]: the dropped-updates warning for this table was printed (sticky).
//! - bit 63 [`DROPPED`]: an update was dropped since the last drain or reset.
//!
//! [`__pathprof_path_add`] touches nothing but the table and the cap (a static), so it is safe before the
//! module's constructor registered the module (C++ static initialisers of other translation units); the counts
//! reach the profile once the module is registered. Dumps take the runtime lock and then table locks; updates
//! take only a table lock, so the two never wait on each other in a cycle.
//!
//! Caches (non-atomic builds, `PathTable::cache`): instrumented code adds to a direct-mapped cache pair inline
//! and calls [`__pathprof_path_cache_miss`] only when the pair holds another path; the miss moves the evicted
//! count into the table under its lock. Every drain first moves all cached counts into the table
//! ([`Held::absorb_cache`]); resets and forks zero them; keys stay cached. Atomic builds' caches are *sticky*:
//! a miss calls [`__pathprof_path_cache_claim`], which gives an empty pair to the path for good with a
//! compare-and-swap, or else updates the table; hits add with an atomic add. Since a pair never changes hands,
//! a thread that found its path there adds to that path's count whatever other threads and dumps do meanwhile.
//!
//! Signal handlers: an update from a handler that interrupted an update of the same table in the same thread is
//! parked (see above), and a dump in such a handler (`exit` from a signal handler) leaves that table for later
//! and flags the record. The runtime is not async-signal-safe beyond that: an update from a handler that must
//! insert a path and grow the table maps memory.

use crate::diag::{pp_warn, Dec, Hex};
use crate::merge::PathCount;
use crate::sys::{Errno, MVec};
use core::ffi::c_void;
use core::ptr::{self, addr_of_mut};
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use pathprof_format::layout::{ModuleDesc, PathTable};

/// Owner bits of the lock word.
const OWNER: u64 = (1 << 61) - 1;
/// Lock word flag: an update was dropped because the table was full (with [`DROPPED`]).
const FULL: u64 = 1 << 61;
/// Lock word flag: the dropped-updates warning was printed for this table.
const WARNED: u64 = 1 << 62;
/// Lock word flag: an update was dropped since the last drain or reset.
const DROPPED: u64 = 1 << 63;
/// Spins with a spin-loop hint before a waiter starts yielding the CPU.
const SPINS: u32 = 64;
/// Count value of a slot whose pair was copied into a larger array: lock-free updaters that see it take the
/// lock and find the key in the new array. A real count never takes this value (it would take 2^63 net updates
/// of one path).
const MOVED: u64 = 1 << 63;
/// Words before a pair array holding its capacity.
const HEADER_WORDS: usize = 2;

/// Pairs allocated at a table's first insertion.
pub(crate) const INITIAL_CAPACITY: u64 = 64;
/// log2 of the most paths one table holds, unless `PATHPROF_TABLE_CAP_LOG2` says otherwise.
pub(crate) const DEFAULT_CAP_LOG2: u32 = 22;
/// The largest `PATHPROF_TABLE_CAP_LOG2`.
pub(crate) const MAX_CAP_LOG2: u32 = 26;
/// The effective cap's log2 plus one; 0 until `PATHPROF_TABLE_CAP_LOG2` has been read.
static CAP_READ: AtomicU32 = AtomicU32::new(0);

/// Adds `delta` (wrapping) to the count of `path` in `table`; see the module docs. `delta == 0` returns at once.
///
/// # Safety
/// `table` must be null or point to a `PathTable` that was emitted zeroed except `function` and is only ever
/// modified by this runtime.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_path_add(table: *mut PathTable, path: u64, delta: i64) {
    if delta == 0 || table.is_null() {
        return;
    }
    let key = path.wrapping_add(1);
    // SAFETY: caller contract.
    if key != 0 && unsafe { add_lock_free(table, key, delta as u64) } {
        return;
    }
    // SAFETY (both): caller contract.
    let w = unsafe { word(table) };
    match unsafe { Held::lock(table) } {
        Some(mut h) => {
            let dropped = if key != 0 { h.add(key, delta as u64) } else { DROPPED };
            if dropped != 0 {
                // Raised before the unlock, so a dump that drains the table next also sees the flag.
                w.fetch_or(dropped, Ordering::Relaxed);
            }
        }
        None => {
            // A signal handler interrupted this thread's own update of the table: the update waits for the
            // interrupted thread to release the lock (`deferred`), or is dropped if too many wait.
            if key == 0 || !crate::deferred::park(table, key, delta as u64) {
                w.fetch_or(DROPPED, Ordering::Relaxed);
            }
        }
    }
}

/// [`__pathprof_path_add`] for modules built without `--pathprof-atomic`: the fast path adds with a plain
/// load and store instead of a compare-and-swap. Single-threaded it is exactly the same; with threads,
/// concurrent updates of one path may be lost, as for the module's non-atomic dense counters, and the runtime
/// flags such records (`RECORD_FLAG_THREADED_NONATOMIC`). Inserts, growth and dumps still take the lock.
///
/// # Safety
/// As for [`__pathprof_path_add`].
#[no_mangle]
pub unsafe extern "C" fn __pathprof_path_add_plain(table: *mut PathTable, path: u64, delta: i64) {
    if delta == 0 || table.is_null() {
        return;
    }
    let key = path.wrapping_add(1);
    // SAFETY: caller contract.
    if key != 0 && unsafe { add_lock_free_with(table, key, delta as u64, false) } {
        return;
    }
    // SAFETY: caller contract.
    unsafe { __pathprof_path_add(table, path, delta) }
}

/// Called by instrumented code when the cache pair of `path` (see `PathTable::cache`) holds another path: that
/// path's cached count moves into the table and the pair takes `path` with `delta`. Without a cache, a plain
/// table update.
///
/// The old count is taken out of the pair before it is added to the table, so a dump in a signal handler that
/// interrupts this never counts it twice (at worst that dump misses it and the next one has it).
///
/// # Safety
/// As for [`__pathprof_path_add`]; `cache` must hold `cache_len` pairs when `cache_len` is nonzero (checked at
/// registration for registered modules; the pass always emits them together).
#[no_mangle]
pub unsafe extern "C" fn __pathprof_path_cache_miss(table: *mut PathTable, path: u64, delta: i64) {
    if table.is_null() {
        return;
    }
    // SAFETY: caller contract.
    let Some((path_word, count_word)) = (unsafe { cache_pair_of(table, path) }) else {
        // SAFETY: caller contract.
        return unsafe { __pathprof_path_add_plain(table, path, delta) };
    };
    let old_path = path_word.load(Ordering::Relaxed);
    let old_count = count_word.swap(0, Ordering::Relaxed);
    if old_count != 0 {
        // SAFETY: caller contract.
        unsafe { __pathprof_path_add_plain(table, old_path, old_count as i64) };
    }
    path_word.store(path, Ordering::Relaxed);
    count_word.store(delta as u64, Ordering::Relaxed);
}

/// Called by atomic builds' inlined cache update when the cache pair of `path` (see `PathTable::cache`) does not
/// hold it: an empty pair is claimed for `path` for good, and then counts it; a pair another path holds stays
/// that path's, and the update goes to the table. Claims are compare-and-swaps and counts atomic adds, so
/// concurrent threads count exactly, and an update that found its path in a pair can never add to another
/// path's count (pairs never change hands). `delta == 0` (a PHI's no-op) claims nothing.
///
/// # Safety
/// As for [`__pathprof_path_cache_miss`].
#[no_mangle]
pub unsafe extern "C" fn __pathprof_path_cache_claim(table: *mut PathTable, path: u64, delta: i64) {
    if delta == 0 || table.is_null() {
        return;
    }
    let key = path.wrapping_add(1);
    // SAFETY: caller contract.
    if let (true, Some((key_word, count_word))) = (key != 0, unsafe { cache_pair_of(table, path) }) {
        // A pair another path holds stays its own: only an empty one is worth a compare-and-swap. (Taking the
        // neighbouring pair as a second choice was tried: those paths then held other paths' first choices,
        // context-atomic SQLite 1.964 → 2.011 by instructions.)
        let mut holder = key_word.load(Ordering::Relaxed);
        if holder == 0 {
            holder = match key_word.compare_exchange(0, key, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => key,
                Err(holder) => holder,
            };
        }
        if holder == key {
            // Release: a drain that takes this count (acquire) also sees the key stored before it; later
            // updates are read-modify-writes, which continue the release sequence.
            count_word.fetch_add(delta as u64, Ordering::Release);
            return;
        }
    }
    // SAFETY: caller contract.
    unsafe { __pathprof_path_add(table, path, delta) }
}

/// The cache pair where `path` goes in `t`'s cache, or `None` when the table has no cache.
///
/// # Safety
/// `t` must point to a live `PathTable` whose `cache` holds `cache_len` pairs.
#[inline]
unsafe fn cache_pair_of<'a>(t: *mut PathTable, path: u64) -> Option<(&'a AtomicU64, &'a AtomicU64)> {
    // SAFETY: caller contract.
    let len = unsafe { (*t).cache_len };
    if len == 0 {
        return None;
    }
    // SAFETY: caller contract; the index is below cache_len.
    unsafe { cache_pair(t, pathprof_format::layout::path_cache_slot(path, len) as usize) }
}

/// Pair `i` of `t`'s cache (path and count words), or `None` without a cache. Accessed through atomic views
/// (relaxed: the instrumented code's plain loads and stores are the same single-word accesses on every
/// supported target) because a dump may read the cache while the program runs.
///
/// # Safety
/// `t` must point to a live `PathTable` whose `cache` holds `cache_len` pairs, and `i < cache_len`.
#[inline]
unsafe fn cache_pair<'a>(t: *mut PathTable, i: usize) -> Option<(&'a AtomicU64, &'a AtomicU64)> {
    // SAFETY: caller contract.
    let (cache, len) = unsafe { ((*t).cache, (*t).cache_len as usize) };
    if cache.is_null() {
        return None;
    }
    // SAFETY: caller contract: 2 × cache_len aligned words, path words first.
    unsafe { Some((AtomicU64::from_ptr(cache.add(i)), AtomicU64::from_ptr(cache.add(len + i)))) }
}

/// Every pair of `t`'s cache (none without a cache).
///
/// # Safety
/// `t` must point to a live `PathTable` whose `cache` holds `cache_len` pairs.
unsafe fn cache_pairs<'a>(t: *mut PathTable) -> impl Iterator<Item = (&'a AtomicU64, &'a AtomicU64)> {
    // SAFETY: caller contract.
    let len = if unsafe { (*t).cache.is_null() } { 0 } else { (unsafe { (*t).cache_len }) as usize };
    // SAFETY: i < cache_len.
    (0..len).filter_map(move |i| unsafe { cache_pair(t, i) })
}

/// The lock word of a table, atomically.
///
/// # Safety
/// `t` must point to a live `PathTable`.
unsafe fn word<'a>(t: *mut PathTable) -> &'a AtomicU64 {
    // SAFETY: the field is an aligned u64 (the struct is `repr(C)` of u64s and a pointer) that is only ever
    // accessed through this atomic view.
    unsafe { AtomicU64::from_ptr(addr_of_mut!((*t).lock)) }
}

/// The `slots` field of a table, atomically (published with release ordering after the array is complete).
///
/// # Safety
/// `t` must point to a live `PathTable`.
unsafe fn slots_word<'a>(t: *mut PathTable) -> &'a AtomicPtr<u64> {
    // SAFETY: an aligned pointer-sized field, only ever accessed atomically once the runtime owns it.
    unsafe { AtomicPtr::from_ptr(addr_of_mut!((*t).slots)) }
}

/// The capacity (in pairs) of a pair array, from the header word before it (see [`alloc_pairs`]).
///
/// # Safety
/// `slots` must be a non-null array from [`alloc_pairs`].
#[inline]
unsafe fn capacity_of(slots: *mut u64) -> u64 {
    // SAFETY: the header precedes the pairs in the same allocation and is written before publication.
    unsafe { *slots.sub(HEADER_WORDS) }
}

/// A zeroed array of `capacity` pairs preceded by a header holding `capacity`, so that a reader holding only the
/// array pointer knows its size; null if it cannot be allocated. Anonymous `mmap`, not `malloc`: counting never
/// changes the program's heap, so a program that reads memory it never initialised (zlib's `slide_hash` does)
/// sees what it sees in the uninstrumented build, and its counts match the other modes'.
fn alloc_pairs(capacity: u64) -> *mut u64 {
    // At most 2 × 2^MAX_CAP_LOG2 pairs of 16 bytes plus the header: no overflow anywhere.
    let bytes = (capacity as usize + 1) * 16;
    let base = crate::sys::map_anonymous(bytes, 0).cast::<u64>();
    if base.is_null() {
        return base;
    }
    // SAFETY: the mapping has 2 × (capacity + 1) zeroed words.
    unsafe {
        *base = capacity;
        base.add(HEADER_WORDS)
    }
}

/// Frees an array from [`alloc_pairs`] (null allowed).
///
/// # Safety
/// Nothing may use the array afterwards.
unsafe fn free_pairs(slots: *mut u64) {
    if !slots.is_null() {
        // SAFETY: caller contract; the mapping starts at the header, which holds the capacity it was made for.
        unsafe {
            let bytes = (capacity_of(slots) as usize + 1) * 16;
            libc::munmap(slots.sub(HEADER_WORDS).cast::<c_void>(), bytes);
        }
    }
}

/// The fast path of [`__pathprof_path_add`]: adds `delta` to `key`'s count without the lock when the key is in
/// the current array; false when it is not there (or the array is being replaced) and the caller must take the
/// lock. See "Concurrency" in the module docs.
///
/// # Safety
/// `t` must point to a live `PathTable`.
#[inline]
unsafe fn add_lock_free(t: *mut PathTable, key: u64, delta: u64) -> bool {
    // SAFETY: caller contract.
    unsafe { add_lock_free_with(t, key, delta, true) }
}

/// [`add_lock_free`] with a compare-and-swap (`atomic`) or a plain load and store of the count.
///
/// # Safety
/// `t` must point to a live `PathTable`.
#[inline(always)]
unsafe fn add_lock_free_with(t: *mut PathTable, key: u64, delta: u64, atomic: bool) -> bool {
    // SAFETY: caller contract.
    let slots = unsafe { slots_word(t) }.load(Ordering::Acquire);
    if slots.is_null() {
        return false;
    }
    // SAFETY: published arrays come from alloc_pairs and are never freed while the table is live.
    let mask = (unsafe { capacity_of(slots) } - 1) as usize;
    let mut i = mix(key) as usize & mask;
    loop {
        // SAFETY: i <= mask < capacity; the array has 2 × capacity words, accessed atomically.
        let (k, c) = unsafe { (AtomicU64::from_ptr(slots.add(2 * i)), AtomicU64::from_ptr(slots.add(2 * i + 1))) };
        let found = k.load(Ordering::Acquire);
        if found == key {
            let mut cur = c.load(Ordering::Relaxed);
            if !atomic {
                if cur == MOVED {
                    return false;
                }
                c.store(cur.wrapping_add(delta), Ordering::Relaxed);
                return true;
            }
            loop {
                if cur == MOVED {
                    return false;
                }
                match c.compare_exchange_weak(cur, cur.wrapping_add(delta), Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => return true,
                    Err(now) => cur = now,
                }
            }
        }
        if found == 0 {
            return false;
        }
        i = (i + 1) & mask;
    }
}

/// This thread's lock owner value (never 0, no flag bits).
fn me() -> u64 {
    // SAFETY: pthread_self has no preconditions. Thread descriptors are distinct, aligned user-space addresses
    // (below 2^57), so masking keeps them distinct.
    (unsafe { libc::pthread_self() } as u64 & OWNER) | 1
}

/// The cap on the number of paths in one table.
fn cap() -> u64 {
    let mut read = CAP_READ.load(Ordering::Relaxed);
    if read == 0 {
        let log2 = crate::sys::env(c"PATHPROF_TABLE_CAP_LOG2").and_then(parse_small).filter(|&k| k <= MAX_CAP_LOG2);
        read = log2.unwrap_or(DEFAULT_CAP_LOG2) + 1;
        // Racing first readers compute the same value.
        CAP_READ.store(read, Ordering::Relaxed);
    }
    1 << (read - 1).min(MAX_CAP_LOG2)
}

/// A short decimal number (at most two digits), else `None`.
fn parse_small(s: &[u8]) -> Option<u32> {
    if s.is_empty() || s.len() > 2 {
        return None;
    }
    s.iter().try_fold(0u32, |acc, &c| c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0')))
}

/// The table's slot hash (before masking).
#[inline]
fn mix(key: u64) -> u64 {
    pathprof_format::layout::path_slot_hash(key)
}

/// Exclusive access to a table (its lock held by this thread), released on drop.
///
/// Invariants while held: `slots` is null with `capacity == 0` and `len == 0`, or it points to `capacity`
/// (a power of two) mapped pairs of which exactly `len < capacity` have a nonzero key.
struct Held {
    t: *mut PathTable,
}

impl Held {
    /// Takes the lock of `t`, waiting as long as another thread holds it; `None` if this thread holds it already
    /// (a signal handler interrupted an update of the same table).
    ///
    /// # Safety
    /// `t` must point to a live `PathTable`.
    #[inline]
    unsafe fn lock(t: *mut PathTable) -> Option<Held> {
        // SAFETY: caller contract.
        let w = unsafe { word(t) };
        let me = me();
        let cur = w.load(Ordering::Relaxed);
        if cur & OWNER == 0 && w.compare_exchange_weak(cur, cur | me, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            return Some(Held { t });
        }
        // SAFETY: caller contract.
        unsafe { Held::lock_contended(t, me) }
    }

    /// [`Held::lock`] when the first attempt failed: spin, then yield.
    ///
    /// # Safety
    /// As for [`Held::lock`].
    #[cold]
    #[inline(never)]
    unsafe fn lock_contended(t: *mut PathTable, me: u64) -> Option<Held> {
        // SAFETY: caller contract.
        let w = unsafe { word(t) };
        let mut spins = 0u32;
        let mut cur = w.load(Ordering::Relaxed);
        loop {
            let owner = cur & OWNER;
            if owner == 0 {
                match w.compare_exchange_weak(cur, cur | me, Ordering::Acquire, Ordering::Relaxed) {
                    Ok(_) => return Some(Held { t }),
                    Err(now) => {
                        cur = now;
                        continue;
                    }
                }
            }
            if owner == me {
                return None;
            }
            if spins < SPINS {
                spins += 1;
                core::hint::spin_loop();
            } else {
                // SAFETY: sched_yield has no preconditions.
                unsafe { libc::sched_yield() };
            }
            cur = w.load(Ordering::Relaxed);
        }
    }

    // Field accessors go through the raw pointer (never a reference to the whole struct, whose `lock` other
    // threads modify atomically). SAFETY for all: the table is live and its runtime-owned fields are ours while
    // the lock is held (or in the single-threaded fork child).

    fn slots(&self) -> *mut u64 {
        // SAFETY: see above.
        unsafe { (*self.t).slots }
    }

    fn capacity(&self) -> u64 {
        // SAFETY: see above.
        unsafe { (*self.t).capacity }
    }

    fn len(&self) -> u64 {
        // SAFETY: see above.
        unsafe { (*self.t).len }
    }

    fn function(&self) -> u64 {
        // SAFETY: see above (`function` is never written after emission).
        unsafe { (*self.t).function }
    }

    fn set(&mut self, slots: *mut u64, capacity: u64, len: u64) {
        // SAFETY: see above; `slots` is published last, with release ordering, for lock-free readers.
        unsafe {
            (*self.t).capacity = capacity;
            (*self.t).len = len;
            slots_word(self.t).store(slots, Ordering::Release);
        }
    }

    /// Slot `i`'s key and count words, atomically (lock-free updaters access the same words).
    ///
    /// Requires `slots` non-null and `i < capacity`.
    fn pair(&self, i: usize) -> (&AtomicU64, &AtomicU64) {
        let slots = self.slots();
        // SAFETY: caller contract; the words live as long as the table (arrays are never freed while live).
        unsafe { (AtomicU64::from_ptr(slots.add(2 * i)), AtomicU64::from_ptr(slots.add(2 * i + 1))) }
    }

    /// The occupied slot of `key`, or the empty slot where it would go.
    ///
    /// Requires `slots` non-null (the loop ends because at least one slot is empty).
    #[inline]
    fn find(&self, key: u64) -> (usize, bool) {
        let slots = self.slots();
        let mask = (self.capacity() - 1) as usize;
        let mut i = mix(key) as usize & mask;
        loop {
            // SAFETY: i <= mask < capacity, and `slots` has 2 × capacity elements.
            let k = unsafe { AtomicU64::from_ptr(slots.add(2 * i)) }.load(Ordering::Relaxed);
            if k == key {
                return (i, true);
            }
            if k == 0 {
                return (i, false);
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds `delta` to `key`'s count, inserting it if needed. Returns 0, or the lock word flags to raise because
    /// the update had to be dropped (`DROPPED`, with `FULL` if the table holds as many paths as it may).
    #[inline]
    fn add(&mut self, key: u64, delta: u64) -> u64 {
        if !self.slots().is_null() {
            let (i, found) = self.find(key);
            if found {
                // Atomic: lock-free updaters change the same count concurrently.
                self.pair(i).1.fetch_add(delta, Ordering::Relaxed);
                return 0;
            }
        }
        self.insert(key, delta)
    }

    /// [`Held::add`] of a key that is not in the table (off the fast path: it may allocate).
    #[cold]
    #[inline(never)]
    fn insert(&mut self, key: u64, delta: u64) -> u64 {
        if self.slots().is_null() && !self.resize(INITIAL_CAPACITY) {
            return DROPPED;
        }
        let mut i = self.find(key).0;
        let (len, capacity) = (self.len(), self.capacity());
        if len >= cap() {
            return DROPPED | FULL;
        }
        // Grow before the load would exceed 70 %; if that fails, keep filling but leave one slot empty.
        if (len + 1) * 10 > capacity * 7 {
            if self.resize(capacity * 2) {
                i = self.find(key).0;
            } else if len + 2 > capacity {
                return DROPPED;
            }
        }
        // The count before the key: a lock-free reader that sees the key (acquire) sees its count.
        let (k, c) = self.pair(i);
        c.store(delta, Ordering::Relaxed);
        k.store(key, Ordering::Release);
        // SAFETY: the table is ours under the lock.
        unsafe { (*self.t).len = len + 1 };
        0
    }

    /// Moves the entries into a new, zeroed array of `capacity` pairs; false (table unchanged) if it cannot be
    /// allocated. Each old count is taken with an atomic swap to [`MOVED`], so an update that raced with the copy
    /// is either in the copied value or retried under the lock. The old array is not freed: a lock-free updater
    /// may still be probing it (the arrays of one table add up to less than its final array).
    fn resize(&mut self, capacity: u64) -> bool {
        let new = alloc_pairs(capacity);
        if new.is_null() {
            return false;
        }
        let mask = (capacity - 1) as usize;
        for j in 0..self.capacity() as usize {
            let (k, c) = self.pair(j);
            let key = k.load(Ordering::Relaxed);
            if key == 0 {
                continue;
            }
            let count = c.swap(MOVED, Ordering::Relaxed);
            let mut i = mix(key) as usize & mask;
            // SAFETY: i <= mask < capacity; the new array has more empty slots than the old one has keys, and
            // nobody else sees it before `set` publishes it.
            unsafe {
                while *new.add(2 * i) != 0 {
                    i = (i + 1) & mask;
                }
                *new.add(2 * i) = key;
                *new.add(2 * i + 1) = count;
            }
        }
        self.set(new, capacity, self.len());
        true
    }

    /// Every occupied slot's key (plus one, as stored) and count word.
    fn occupied(&self) -> impl Iterator<Item = (u64, &AtomicU64)> + '_ {
        let n = if self.slots().is_null() { 0 } else { self.capacity() as usize };
        (0..n).filter_map(move |i| {
            let (k, c) = self.pair(i);
            let key = k.load(Ordering::Relaxed);
            (key != 0).then_some((key, c))
        })
    }

    /// Moves every cached count into the table (the keys stay cached, so hot paths keep hitting). `sticky`:
    /// the cache is an atomic build's, whose path words hold path + 1 (see `PathTable::cache`). Returns the
    /// flags of updates that had to be dropped, as [`Held::add`].
    fn absorb_cache(&mut self, sticky: bool) -> u64 {
        let mut flags = 0;
        // SAFETY: a registered table's cache holds cache_len pairs (checked at registration).
        for (p, c) in unsafe { cache_pairs(self.t) } {
            let count = c.swap(0, Ordering::Acquire);
            if count != 0 {
                // As in `__pathprof_path_add`: path u64::MAX has no key (it would be the empty key 0). A sticky
                // pair's key was stored before its first count (see `__pathprof_path_cache_claim`); were it
                // not visible, the count would be flagged, never given to another path.
                let key = if sticky { p.load(Ordering::Acquire) } else { p.load(Ordering::Relaxed).wrapping_add(1) };
                flags |= if key != 0 { self.add(key, count) } else { DROPPED };
            }
        }
        flags
    }

    /// Applies the updates that signal handlers parked while this thread held the lock ([`crate::deferred`]),
    /// raising the flags of any that had to be dropped.
    fn absorb_parked(&mut self) {
        while let Some((key, delta)) = crate::deferred::take(self.t) {
            let flags = self.add(key, delta);
            if flags != 0 {
                // SAFETY: live table.
                unsafe { word(self.t) }.fetch_or(flags, Ordering::Relaxed);
            }
        }
    }

    /// Takes the `DROPPED` and `FULL` flags (returned as they were).
    fn take_dropped(&self) -> u64 {
        // SAFETY: live table.
        unsafe { word(self.t) }.fetch_and(!(DROPPED | FULL), Ordering::Relaxed) & (DROPPED | FULL)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.absorb_parked();
        // SAFETY: live table; we own the lock, so clearing the owner bits releases it and keeps the flags.
        unsafe { word(self.t) }.fetch_and(!OWNER, Ordering::Release);
        // A handler that ran between the absorption and the release parked its update: take the lock again
        // (this drop applies it). A handler that runs after the release takes the lock itself.
        if crate::deferred::has(self.t) {
            // SAFETY: live table.
            drop(unsafe { Held::lock(self.t) });
        }
    }
}

/// The tables of a registered module.
fn tables(d: *mut ModuleDesc) -> impl Iterator<Item = *mut PathTable> {
    // SAFETY: registration checked that `tables` is non-null and aligned when `num_tables > 0`.
    let (base, n) = unsafe { ((*d).tables, (*d).num_tables as usize) };
    // SAFETY: each index is below num_tables; the array lives as long as the registered module.
    (0..n).map(move |i| unsafe { base.add(i) })
}

/// Whether a dump of `d` has table or region news: a nonzero count or a dropped update.
pub(crate) fn has_news(d: *mut ModuleDesc) -> bool {
    crate::region::has_news(d)
        || tables(d).any(|t| {
            // SAFETY: tables of a registered module are live.
            let Some(h) = (unsafe { Held::lock(t) }) else { return true };
            // SAFETY: live table.
            unsafe { word(t) }.load(Ordering::Relaxed) & DROPPED != 0
            || h.occupied().any(|(_, c)| c.load(Ordering::Relaxed) != 0)
            // SAFETY: registered table (cache checked at registration).
            || unsafe { cache_pairs(t) }.any(|(_, c)| c.load(Ordering::Relaxed) != 0)
        })
}

/// Moves every nonzero count of `d`'s tables into `out` (and sets them to 0), and reports in `dropped` whether
/// an update was dropped since the last drain. On `Err` (out of memory), what was drained so far is in `out`
/// and `dropped`, for the caller to put back.
pub(crate) fn drain(d: *mut ModuleDesc, out: &mut MVec<PathCount>, dropped: &mut bool) -> Result<(), Errno> {
    crate::region::drain(d, out)?;
    for t in tables(d) {
        // SAFETY: tables of a registered module are live.
        let Some(mut h) = (unsafe { Held::lock(t) }) else {
            // This thread is inside an update of this table (the dump runs in a signal handler): leave its
            // counts for a later dump and flag the record.
            *dropped = true;
            continue;
        };
        h.absorb_parked();
        let cache_flags = h.absorb_cache(crate::is_atomic(d));
        if cache_flags != 0 {
            // SAFETY: live table.
            unsafe { word(t) }.fetch_or(cache_flags, Ordering::Relaxed);
        }
        out.reserve(h.len() as usize)?;
        let flags = h.take_dropped();
        if flags & DROPPED != 0 {
            *dropped = true;
            warn_once(&h, d, flags & FULL != 0);
        }
        let function = h.function();
        for (key, c) in h.occupied() {
            // Swapped: lock-free updaters may add to the count meanwhile.
            let count = c.swap(0, Ordering::Relaxed);
            if count != 0 {
                if let Err(e) = out.push(PathCount { function, path: key - 1, count, table: t, slot: ptr::null_mut() })
                {
                    c.fetch_add(count, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// The one dropped-updates warning of a table (per process).
fn warn_once(h: &Held, d: *mut ModuleDesc, full: bool) {
    // SAFETY: live table.
    if unsafe { word(h.t) }.fetch_or(WARNED, Ordering::Relaxed) & WARNED != 0 {
        return;
    }
    // SAFETY: registered descriptor.
    let meta_hash = unsafe { (*d).meta_hash };
    let (function, module) = (Dec(h.function()), Hex(meta_hash));
    let end = "; the profile is marked incomplete";
    if full {
        pp_warn!(
            "path counts of function ",
            function,
            " of module ",
            module,
            " were dropped (a table holds at most ",
            Dec(cap()),
            " paths)",
            end
        );
    } else {
        pp_warn!(
            "path counts of function ",
            function,
            " of module ",
            module,
            " were dropped (out of memory, or updated from a signal handler that interrupted an update)",
            end
        );
    }
}

/// Adds drained counts back into their tables after a failed write.
pub(crate) fn restore(counts: &[PathCount]) {
    let mut held: Option<Held> = None;
    for c in counts {
        if !c.slot.is_null() {
            // SAFETY: drained from a region of a module that is still registered.
            unsafe { crate::region::restore(c.slot, c.count) };
            continue;
        }
        if c.table.is_null() {
            continue; // a fork re-entry (`reentry::restore`)
        }
        if held.as_ref().map(|h| h.t) != Some(c.table) {
            // Release the previous table before waiting for the next.
            drop(held.take());
            // SAFETY: drained from a table of a module that is still registered (the runtime lock is held).
            held = unsafe { Held::lock(c.table) };
        }
        let dropped = match (held.as_mut(), c.path.checked_add(1)) {
            (Some(h), Some(key)) => h.add(key, c.count),
            // The dump runs in a handler that interrupted an update of this table.
            (None, Some(key)) if crate::deferred::park(c.table, key, c.count) => 0,
            _ => DROPPED,
        };
        if dropped != 0 {
            // SAFETY: live table.
            unsafe { word(c.table) }.fetch_or(dropped, Ordering::Relaxed);
        }
    }
}

/// Re-raises the dropped flag of `d` after a failed write (on its first table: the flag is per record).
pub(crate) fn mark_dropped(d: *mut ModuleDesc) {
    if let Some(t) = tables(d).next() {
        // SAFETY: live table.
        unsafe { word(t) }.fetch_or(DROPPED, Ordering::Relaxed);
    }
}

/// Sets every count of `d`'s tables and regions to 0 and forgets dropped updates (`__pathprof_reset`).
pub(crate) fn reset(d: *mut ModuleDesc) {
    crate::region::reset(d);
    for t in tables(d) {
        // SAFETY: tables of a registered module are live. A table this thread is updating (signal handler) is
        // left alone.
        if let Some(h) = unsafe { Held::lock(t) } {
            h.take_dropped();
            for (_, c) in h.occupied() {
                c.store(0, Ordering::Relaxed);
            }
            // SAFETY: registered table (cache checked at registration).
            for (_, c) in unsafe { cache_pairs(t) } {
                // A swap, not a store: a read-modify-write keeps a sticky pair's release sequence going (see
                // `Held::absorb_cache`).
                c.swap(0, Ordering::Relaxed);
            }
        }
    }
}

/// In a `fork()`ed child (single-threaded): zeroes the inherited counts and flags. A table whose lock was held
/// at the fork may be half-updated by a thread that does not exist here: it is emptied (its array abandoned).
pub(crate) fn fork_child(d: *mut ModuleDesc) {
    crate::region::reset(d);
    for t in tables(d) {
        // SAFETY: live table; the child has one thread, so nothing else accesses it.
        let w = unsafe { word(t) };
        let was = w.load(Ordering::Relaxed);
        w.store(was & WARNED, Ordering::Relaxed);
        let mut h = Held { t };
        if was & OWNER != 0 {
            h.set(ptr::null_mut(), 0, 0);
        } else {
            for (_, c) in h.occupied() {
                // Not MOVED: resizes hold the lock, and the lock was free at the fork.
                c.store(0, Ordering::Relaxed);
            }
        }
        // SAFETY: registered table (cache checked at registration).
        for (_, c) in unsafe { cache_pairs(t) } {
            c.store(0, Ordering::Relaxed);
        }
        crate::deferred::discard(t);
        // Not a lock we took: do not run the release.
        core::mem::forget(h);
    }
}

/// Frees the arrays of `d`'s tables (the module is being unregistered, for example by `dlclose`). Under each
/// table's lock, so a thread still updating the table at exit finds an empty one rather than freed memory.
pub(crate) fn release(d: *mut ModuleDesc) {
    for t in tables(d) {
        // SAFETY: the module's tables are live until its destructor returns.
        if let Some(mut h) = unsafe { Held::lock(t) } {
            let old = h.slots();
            h.set(ptr::null_mut(), 0, 0);
            // SAFETY: null or our array, no longer referenced (the module's code is being unloaded).
            unsafe { free_pairs(old) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn table(function: u64) -> PathTable {
        PathTable {
            function,
            lock: 0,
            slots: ptr::null_mut(),
            capacity: 0,
            len: 0,
            cache: ptr::null_mut(),
            cache_len: 0,
        }
    }

    /// A table of function 0 in front of `cache` (path words, then as many count words), which must outlive it.
    fn cached_table(cache: &mut [u64]) -> PathTable {
        PathTable { cache: cache.as_mut_ptr(), cache_len: cache.len() as u64 / 2, ..table(0) }
    }

    fn entries(t: &mut PathTable) -> Vec<(u64, u64)> {
        // SAFETY: a local table.
        let h = unsafe { Held::lock(t) }.unwrap();
        let mut v: Vec<(u64, u64)> = h.occupied().map(|(k, c)| (k - 1, c.load(Ordering::Relaxed))).collect();
        v.sort();
        v
    }

    #[test]
    fn counts_are_exact_and_signed_through_growth() {
        let mut t = table(3);
        let n = 3000u64;
        for round in 0..3u64 {
            for i in 0..n {
                let path = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 1;
                if i % 3 >= round {
                    // SAFETY: a local table.
                    unsafe { __pathprof_path_add(&mut t, path, 1) };
                }
            }
        }
        unsafe {
            __pathprof_path_add(&mut t, 5, -1);
            __pathprof_path_add(&mut t, 6, 0);
        }
        assert_eq!(t.len, n + 1);
        assert!(t.capacity.is_power_of_two() && t.len * 10 <= t.capacity * 7);
        let mut want: Vec<(u64, u64)> =
            (0..n).map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 1, i % 3 + 1)).collect();
        want.push((5, u64::MAX));
        want.sort();
        assert_eq!(entries(&mut t), want);
        assert_eq!(t.lock, 0);
        // SAFETY: our array (older arrays of the table are leaked by design).
        unsafe { free_pairs(t.slots) };
    }

    /// Four threads update overlapping paths (and keep inserting new ones, so the array grows under them)
    /// without any lost update: the lock-free path and the copy during growth agree.
    #[test]
    fn concurrent_updates_through_growth_are_exact() {
        let mut t = table(0);
        let addr = &mut t as *mut PathTable as usize;
        let threads: Vec<_> = (0..4u64)
            .map(|id| {
                std::thread::spawn(move || {
                    let tp = addr as *mut PathTable;
                    for i in 0..20_000u64 {
                        // Hot shared paths, plus a stream of new ones per thread.
                        unsafe {
                            __pathprof_path_add(tp, i % 7, 1);
                            __pathprof_path_add(tp, 1000 + id * 100_000 + i / 4, 1);
                        }
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        let got = entries(&mut t);
        for p in 0..7u64 {
            let want = (0..20_000u64).filter(|i| i % 7 == p).count() as u64 * 4;
            assert_eq!(got.iter().find(|e| e.0 == p).map(|e| e.1), Some(want), "path {p}");
        }
        let streamed: u64 = got.iter().filter(|e| e.0 >= 1000).map(|e| e.1).sum();
        assert_eq!(streamed, 4 * 20_000);
        assert_eq!(got.iter().filter(|e| e.0 >= 1000).count(), 4 * 5_000);
        assert_eq!(t.lock, 0);
    }

    #[test]
    fn plain_updates_are_exact_single_threaded_through_growth() {
        let mut t = table(1);
        for round in 0..3u64 {
            for i in 0..2000u64 {
                if i % 3 >= round {
                    // SAFETY: a local table.
                    unsafe { __pathprof_path_add_plain(&mut t, i * 7, 1) };
                }
            }
        }
        unsafe { __pathprof_path_add_plain(&mut t, 7, -1) };
        let got = entries(&mut t);
        assert_eq!(got.len(), 2000);
        for (path, count) in got {
            let i = path / 7;
            assert_eq!(count, (i % 3 + 1).wrapping_sub(u64::from(i == 1)), "path {path}");
        }
    }

    #[test]
    fn zero_delta_and_null_table_do_nothing() {
        let mut t = table(0);
        unsafe {
            __pathprof_path_add(&mut t, 1, 0);
            __pathprof_path_add(ptr::null_mut(), 1, 1);
        }
        assert!(t.slots.is_null());
        assert_eq!((t.len, t.lock), (0, 0));
    }

    #[test]
    fn path_u64_max_is_dropped_and_flagged() {
        let mut t = table(0);
        unsafe { __pathprof_path_add(&mut t, u64::MAX, 1) };
        assert_eq!(t.lock, DROPPED);
        assert_eq!(t.len, 0);
    }

    #[test]
    fn cached_path_u64_max_is_dropped_and_flagged_when_absorbed() {
        let mut cache = [0u64; 2];
        let mut t = cached_table(&mut cache);
        // The miss installs it in the only pair (path word, then count word).
        unsafe { __pathprof_path_cache_miss(&mut t, u64::MAX, 1) };
        assert_eq!(cache, [u64::MAX, 1]);
        let mut h = unsafe { Held::lock(&mut t) }.unwrap();
        assert_eq!(h.absorb_cache(false), DROPPED);
        drop(h);
        assert_eq!((t.len, cache[1]), (0, 0));
    }

    /// What an atomic build's inlined update does (`__pathprof_cached_add_atomic`): an atomic add when the pair
    /// holds path + 1, else the claim.
    fn sticky_update(t: *mut PathTable, path: u64, delta: i64) {
        let (pw, cw) = unsafe { cache_pair_of(t, path) }.unwrap();
        if pw.load(Ordering::Relaxed) == path.wrapping_add(1) {
            cw.fetch_add(delta as u64, Ordering::Relaxed);
        } else {
            unsafe { __pathprof_path_cache_claim(t, path, delta) };
        }
    }

    /// Sticky pairs: the first path to reach an empty pair keeps it (path + 1 in its word), a second path with
    /// the same pair counts in the table, a zero delta claims nothing, and absorbing moves the cached counts into
    /// the table by their keys while the keys stay.
    #[test]
    fn an_atomic_cache_pair_belongs_to_the_first_path_for_good() {
        let mut cache = [0u64; 2];
        let mut t = cached_table(&mut cache);
        let tp: *mut PathTable = &mut t;
        sticky_update(tp, 9, 0);
        assert_eq!(cache, [0, 0], "a PHI's no-op claims nothing");
        for (path, delta) in [(5, 1), (7, 1), (5, 1), (5, 3), (7, 2), (u64::MAX, 1)] {
            sticky_update(tp, path, delta);
        }
        assert_eq!(cache, [6, 5], "path 5 came first: its key is 6, its count 1 + 1 + 3");
        assert_eq!(entries(&mut t), [(7, 3)], "path 7 went to the table");
        assert_eq!(t.lock, DROPPED, "path u64::MAX has no key: dropped and flagged, as by __pathprof_path_add");
        let mut h = unsafe { Held::lock(tp) }.unwrap();
        assert_eq!(h.absorb_cache(true), 0);
        drop(h);
        assert_eq!(cache, [6, 0]);
        assert_eq!(entries(&mut t), [(5, 5), (7, 3)]);
        sticky_update(tp, 5, 1);
        assert_eq!(cache, [6, 1], "the key stays: path 5 still hits");
        unsafe { free_pairs(t.slots) };
    }

    /// Four threads update hot paths through a four-pair sticky cache (more paths than pairs, so some always go
    /// to the table) while a fifth drains the table again and again: every update is counted once.
    #[test]
    fn concurrent_sticky_cache_updates_and_drains_are_exact() {
        let mut cache = [0u64; 8];
        let mut t = cached_table(&mut cache);
        let addr = &mut t as *mut PathTable as usize;
        let done = std::sync::Arc::new(core::sync::atomic::AtomicBool::new(false));
        let drainer = {
            let done = done.clone();
            std::thread::spawn(move || {
                let tp = addr as *mut PathTable;
                let mut taken = [0u64; 11];
                loop {
                    let last = done.load(Ordering::Acquire);
                    let mut h = unsafe { Held::lock(tp) }.unwrap();
                    assert_eq!(h.absorb_cache(true), 0);
                    for (key, c) in h.occupied() {
                        taken[(key - 1) as usize] += c.swap(0, Ordering::Relaxed);
                    }
                    drop(h);
                    if last {
                        return taken;
                    }
                }
            })
        };
        let threads: Vec<_> = (0..4u64)
            .map(|id| {
                std::thread::spawn(move || {
                    let tp = addr as *mut PathTable;
                    for i in 0..50_000u64 {
                        sticky_update(tp, (i + id) % 11, 1);
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        done.store(true, Ordering::Release);
        let taken = drainer.join().unwrap();
        for (path, &n) in taken.iter().enumerate() {
            let want = (0..4u64).map(|id| (0..50_000u64).filter(|i| (i + id) % 11 == path as u64).count() as u64);
            assert_eq!(n, want.sum::<u64>(), "path {path}");
        }
        assert!(cache[..4].iter().all(|&k| k != 0), "every pair was claimed");
    }

    /// What a signal handler does when it interrupts its own thread's update of a table: it cannot wait, so its
    /// updates are parked and counted at the release — unless more than `SLOTS` wait, and then the rest are
    /// dropped and flagged, never miscounted.
    #[test]
    fn reentrant_updates_are_parked_until_the_release_then_dropped_when_too_many() {
        let mut t = table(0);
        let tp: *mut PathTable = &mut t;
        let h = unsafe { Held::lock(tp) }.unwrap();
        for i in 0..crate::deferred::SLOTS as u64 + 3 {
            // The table is empty, so every update needs the lock.
            unsafe { __pathprof_path_add(tp, i % 40, 2) };
        }
        assert!(t.slots.is_null(), "nothing applied while the lock is held");
        drop(h);
        assert_eq!(t.lock, DROPPED, "three updates found no slot");
        let mut want: Vec<(u64, u64)> = (0..40u64)
            .map(|p| (p, 2 * (0..crate::deferred::SLOTS as u64).filter(|i| i % 40 == p).count() as u64))
            .collect();
        want.sort();
        assert_eq!(entries(&mut t), want);
        assert!(!crate::deferred::has(tp));
        // With free slots again, a parked update is counted exactly and flags nothing.
        t.lock = 0;
        let h = unsafe { Held::lock(tp) }.unwrap();
        unsafe { __pathprof_path_add(tp, 1000, 5) };
        drop(h);
        assert_eq!(t.lock, 0);
        assert_eq!(entries(&mut t).iter().find(|e| e.0 == 1000), Some(&(1000, 5)));
    }

    #[test]
    fn mix_spreads_sequential_keys() {
        let mask = 63usize;
        let mut hits = [0u32; 64];
        for k in 1..=640u64 {
            hits[mix(k) as usize & mask] += 1;
        }
        assert!(hits.iter().all(|&h| (2..=25).contains(&h)), "{hits:?}");
    }

    #[test]
    fn knob_parsing() {
        assert_eq!(parse_small(b"4"), Some(4));
        assert_eq!(parse_small(b"22"), Some(22));
        assert_eq!(parse_small(b"123"), None);
        assert_eq!(parse_small(b"x"), None);
        assert_eq!(parse_small(b""), None);
    }
}
