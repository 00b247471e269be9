//! Path-mode hash tables: [`__pathprof_path_add`] and the table side of dumps, resets and forks.
//!
//! Functions whose Ball–Larus path space is too large for a dense counter array get a [`PathTable`] each (the
//! pass emits them zeroed except `function` and links them from `ModuleDesc::tables`). Instrumented code calls
//! `__pathprof_path_add(table, path, delta)` with `delta` = +1 to count a path, −1 to retract a count taken before
//! a call that then returned normally, and 0 (a no-op that inserts nothing). Counts are signed 64-bit values
//! stored as `u64` and updated with wrapping arithmetic: a −1 may arrive before (or without) its +1.
//!
//! # Table
//! Open addressing with linear probing over `capacity` (a power of two) pairs `(path + 1, count)`; a key of 0
//! marks an empty slot. The slot of a key starts at the splitmix64 finalizer of the key. The pair array is
//! `calloc`ed at the table's first insertion ([`INITIAL_CAPACITY`] pairs, 1 KiB) and doubled with a rehash when an
//! insertion would bring the load to more than 70 %. `len` is the number of occupied slots. Only
//! `lock`, `slots`, `capacity` and `len` are written by the runtime, and only `slots` memory is allocated.
//!
//! Dumps drain a table like dense counters: under its lock they copy every nonzero count and set it to 0, but
//! keep the keys, so a program that keeps executing the same paths never reallocates. A table is freed only
//! when its module is unregistered (`dlclose`).
//!
//! # Bounded memory
//! A table holds at most 2^22 paths (4 194 304; the pair array then has 2^23 pairs, 128 MiB). An update of a
//! path that is not in a full table is dropped and the table remembers it; the dump then marks the module's
//! record [`RECORD_FLAG_INCOMPLETE`](pathprof_format::layout::RECORD_FLAG_INCOMPLETE) and prints one warning
//! per table and process. Updates of paths already in the table are always counted. The same happens, rarer
//! still, when `calloc` fails, for the path number `u64::MAX` (whose key would be 0; the pass never numbers a
//! path that high), and for an update that re-enters a table from a signal handler that interrupted an update
//! of the same table in the same thread (waiting would deadlock).
//!
//! Testing knob: `PATHPROF_TABLE_CAP_LOG2=k` (decimal, `0 <= k <= 22`) lowers the cap to 2^k paths per table.
//! It is read once, at the first insertion into any table of the process; other values are ignored.
//!
//! # Locking
//! Every update, drain and reset takes the table's spin lock, in every counter mode: hashed functions are rare,
//! and exact counts under threads matter more than the few nanoseconds of an uncontended lock. The `lock` word
//! (0 when emitted) holds:
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
//! Signal handlers: an update from a handler that interrupted an update of the same table in the same thread is
//! dropped (see above), and a dump in such a handler (`exit` from a signal handler) leaves that table for later
//! and flags the record. The runtime is not async-signal-safe beyond that: an update from a handler that must
//! insert a path and grow the table calls `calloc`.

use crate::diag::{pp_warn, Dec, Hex};
use crate::merge::PathCount;
use crate::sys::{Errno, MVec};
use core::ffi::c_void;
use core::ptr::{self, addr_of_mut};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
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

/// Pairs allocated at a table's first insertion.
pub(crate) const INITIAL_CAPACITY: u64 = 64;
/// log2 of the most paths one table holds.
pub(crate) const CAP_LOG2: u32 = 22;
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
            w.fetch_or(DROPPED, Ordering::Relaxed);
        }
    }
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
        let log2 = crate::sys::env(c"PATHPROF_TABLE_CAP_LOG2").and_then(parse_small).filter(|&k| k <= CAP_LOG2);
        read = log2.unwrap_or(CAP_LOG2) + 1;
        // Racing first readers compute the same value.
        CAP_READ.store(read, Ordering::Relaxed);
    }
    1 << (read - 1).min(CAP_LOG2)
}

/// A short decimal number (at most two digits), else `None`.
fn parse_small(s: &[u8]) -> Option<u32> {
    if s.is_empty() || s.len() > 2 {
        return None;
    }
    s.iter().try_fold(0u32, |acc, &c| c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0')))
}

/// splitmix64's finalizer: a bijective mix in which every input bit affects every output bit.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Exclusive access to a table (its lock held by this thread), released on drop.
///
/// Invariants while held: `slots` is null with `capacity == 0` and `len == 0`, or it points to `capacity`
/// (a power of two) `calloc`ed pairs of which exactly `len < capacity` have a nonzero key.
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
        // SAFETY: see above.
        unsafe {
            (*self.t).slots = slots;
            (*self.t).capacity = capacity;
            (*self.t).len = len;
        }
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
            let k = unsafe { *slots.add(2 * i) };
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
                // SAFETY: `i` is a slot index (see `find`).
                unsafe {
                    let c = self.slots().add(2 * i + 1);
                    *c = (*c).wrapping_add(delta);
                }
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
        let slots = self.slots();
        // SAFETY: `i` is an empty slot of the current array.
        unsafe {
            *slots.add(2 * i) = key;
            *slots.add(2 * i + 1) = delta;
        }
        self.set(slots, self.capacity(), len + 1);
        0
    }

    /// Moves the entries into a new, zeroed array of `capacity` pairs; false (table unchanged) if it cannot be
    /// allocated.
    fn resize(&mut self, capacity: u64) -> bool {
        // At most 2 × 2^CAP_LOG2 pairs of 16 bytes: no overflow anywhere.
        // SAFETY: calloc has no preconditions; the result is checked.
        let new = unsafe { libc::calloc(capacity as usize, 16) }.cast::<u64>();
        if new.is_null() {
            return false;
        }
        let mask = (capacity - 1) as usize;
        for &[k, c] in self.pairs().iter() {
            if k == 0 {
                continue;
            }
            let mut i = mix(k) as usize & mask;
            // SAFETY: i <= mask < capacity; the new array has more empty slots than the old one has keys.
            unsafe {
                while *new.add(2 * i) != 0 {
                    i = (i + 1) & mask;
                }
                *new.add(2 * i) = k;
                *new.add(2 * i + 1) = c;
            }
        }
        let old = self.slots();
        self.set(new, capacity, self.len());
        // SAFETY: `old` is null or the array this runtime allocated; nothing refers to it any more.
        unsafe { libc::free(old.cast::<c_void>()) };
        true
    }

    /// The (key, count) pairs, mutably.
    fn pairs(&mut self) -> &mut [[u64; 2]] {
        let slots = self.slots();
        if slots.is_null() {
            return &mut [];
        }
        // SAFETY: `capacity` pairs of u64, 16-byte aligned from calloc, exclusively ours under the lock.
        unsafe { core::slice::from_raw_parts_mut(slots.cast::<[u64; 2]>(), self.capacity() as usize) }
    }

    /// Takes the `DROPPED` and `FULL` flags (returned as they were).
    fn take_dropped(&self) -> u64 {
        // SAFETY: live table.
        unsafe { word(self.t) }.fetch_and(!(DROPPED | FULL), Ordering::Relaxed) & (DROPPED | FULL)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: live table; we own the lock, so clearing the owner bits releases it and keeps the flags.
        unsafe { word(self.t) }.fetch_and(!OWNER, Ordering::Release);
    }
}

/// The tables of a registered module.
fn tables(d: *mut ModuleDesc) -> impl Iterator<Item = *mut PathTable> {
    // SAFETY: registration checked that `tables` is non-null and aligned when `num_tables > 0`.
    let (base, n) = unsafe { ((*d).tables, (*d).num_tables as usize) };
    // SAFETY: each index is below num_tables; the array lives as long as the registered module.
    (0..n).map(move |i| unsafe { base.add(i) })
}

/// Whether a dump of `d` has table news: a nonzero count or a dropped update.
pub(crate) fn has_news(d: *mut ModuleDesc) -> bool {
    tables(d).any(|t| {
        // SAFETY: tables of a registered module are live.
        let Some(mut h) = (unsafe { Held::lock(t) }) else { return true };
        // SAFETY: live table.
        unsafe { word(t) }.load(Ordering::Relaxed) & DROPPED != 0 || h.pairs().iter().any(|p| p[0] != 0 && p[1] != 0)
    })
}

/// Moves every nonzero count of `d`'s tables into `out` (and sets them to 0), and reports in `dropped` whether
/// an update was dropped since the last drain. On `Err` (out of memory), what was drained so far is in `out`
/// and `dropped`, for the caller to put back.
pub(crate) fn drain(d: *mut ModuleDesc, out: &mut MVec<PathCount>, dropped: &mut bool) -> Result<(), Errno> {
    for t in tables(d) {
        // SAFETY: tables of a registered module are live.
        let Some(mut h) = (unsafe { Held::lock(t) }) else {
            // This thread is inside an update of this table (the dump runs in a signal handler): leave its
            // counts for a later dump and flag the record.
            *dropped = true;
            continue;
        };
        out.reserve(h.len() as usize)?;
        let flags = h.take_dropped();
        if flags & DROPPED != 0 {
            *dropped = true;
            warn_once(&h, d, flags & FULL != 0);
        }
        let function = h.function();
        for p in h.pairs() {
            if p[0] != 0 && p[1] != 0 {
                out.push(PathCount { function, path: p[0] - 1, count: p[1], table: t })?;
                p[1] = 0;
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
        if held.as_ref().map(|h| h.t) != Some(c.table) {
            // Release the previous table before waiting for the next.
            drop(held.take());
            // SAFETY: drained from a table of a module that is still registered (the runtime lock is held).
            held = unsafe { Held::lock(c.table) };
        }
        let dropped = match (held.as_mut(), c.path.checked_add(1)) {
            (Some(h), Some(key)) => h.add(key, c.count),
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

/// Sets every count of `d`'s tables to 0 and forgets dropped updates (`__pathprof_reset`).
pub(crate) fn reset(d: *mut ModuleDesc) {
    for t in tables(d) {
        // SAFETY: tables of a registered module are live. A table this thread is updating (signal handler) is
        // left alone.
        if let Some(mut h) = unsafe { Held::lock(t) } {
            h.take_dropped();
            for p in h.pairs() {
                p[1] = 0;
            }
        }
    }
}

/// In a `fork()`ed child (single-threaded): zeroes the inherited counts and flags. A table whose lock was held
/// at the fork may be half-updated by a thread that does not exist here: it is emptied (its array abandoned).
pub(crate) fn fork_child(d: *mut ModuleDesc) {
    for t in tables(d) {
        // SAFETY: live table; the child has one thread, so nothing else accesses it.
        let w = unsafe { word(t) };
        let was = w.load(Ordering::Relaxed);
        w.store(was & WARNED, Ordering::Relaxed);
        let mut h = Held { t };
        if was & OWNER != 0 {
            h.set(ptr::null_mut(), 0, 0);
        } else {
            for p in h.pairs() {
                p[1] = 0;
            }
        }
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
            // SAFETY: null or our calloc block, no longer referenced.
            unsafe { libc::free(old.cast::<c_void>()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn table(function: u64) -> PathTable {
        PathTable { function, lock: 0, slots: ptr::null_mut(), capacity: 0, len: 0 }
    }

    fn entries(t: &mut PathTable) -> Vec<(u64, u64)> {
        // SAFETY: a local table.
        let mut h = unsafe { Held::lock(t) }.unwrap();
        let mut v: Vec<(u64, u64)> = h.pairs().iter().filter(|p| p[0] != 0).map(|p| (p[0] - 1, p[1])).collect();
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
        // SAFETY: our calloc block.
        unsafe { libc::free(t.slots.cast()) };
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
    fn reentrant_update_is_dropped_not_deadlocked() {
        let mut t = table(0);
        let tp: *mut PathTable = &mut t;
        let h = unsafe { Held::lock(tp) }.unwrap();
        unsafe { __pathprof_path_add(tp, 1, 1) };
        drop(h);
        assert_eq!(t.lock, DROPPED);
        assert!(t.slots.is_null());
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
