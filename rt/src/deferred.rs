//! Path-table updates made by a signal handler while its own thread held the table's lock.
//!
//! A handler that interrupts an update of a table (an insertion, a growth, a drain) and then counts a path of
//! the same table cannot wait for the lock: the holder is the thread it interrupted, which resumes only when the
//! handler returns. Dropping the update would cost the whole record its exactness (a program whose helper
//! thread signals the main thread thousands of times per second meets this within minutes), so the handler
//! parks the update here instead, and the interrupted thread applies it before it releases the lock
//! (`Held`'s drop in `table.rs`), or a drain of the table applies it first.
//!
//! Only the thread that holds a table's lock parks updates of that table (in a handler), and only that thread
//! takes them (when it unlocks), so each table's entries have one producer and one consumer, in one thread.
//! Slots are shared by all tables: a handler claims a free slot with a compare-and-swap (a nested handler
//! claims another one), fills it, then publishes the table pointer with release ordering. When all
//! [`SLOTS`] are taken, the update is dropped and flagged as before: nothing is counted wrongly.
//!
//! The cost outside handlers is one relaxed load of [`USED`] per lock release.

use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use pathprof_format::layout::PathTable;

/// Updates that can wait at once (each is three words).
pub(crate) const SLOTS: usize = 64;

/// Table word of a slot that a handler has claimed and is filling.
const FILLING: *mut PathTable = ptr::without_provenance_mut(1);

/// One parked update: `table` is null when free, [`FILLING`] while claimed, else the table it belongs to.
struct Slot {
    table: AtomicPtr<PathTable>,
    key: AtomicU64,
    delta: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot { table: AtomicPtr::new(ptr::null_mut()), key: AtomicU64::new(0), delta: AtomicU64::new(0) };

static PARKED: [Slot; SLOTS] = [FREE; SLOTS];
/// Slots not free (claimed or holding an update): lets every lock release skip the scan.
static USED: AtomicUsize = AtomicUsize::new(0);

/// Parks `delta` for table key `key` of `t`; false when every slot is taken (the caller drops the update).
pub(crate) fn park(t: *mut PathTable, key: u64, delta: u64) -> bool {
    for s in &PARKED {
        if s.table.compare_exchange(ptr::null_mut(), FILLING, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            USED.fetch_add(1, Ordering::Relaxed);
            s.key.store(key, Ordering::Relaxed);
            s.delta.store(delta, Ordering::Relaxed);
            s.table.store(t, Ordering::Release);
            return true;
        }
    }
    false
}

/// Takes one parked update of `t` (key, delta). Only the holder of `t`'s lock may call it.
pub(crate) fn take(t: *mut PathTable) -> Option<(u64, u64)> {
    if USED.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let s = PARKED.iter().find(|s| s.table.load(Ordering::Acquire) == t)?;
    let update = (s.key.load(Ordering::Relaxed), s.delta.load(Ordering::Relaxed));
    s.table.store(ptr::null_mut(), Ordering::Release);
    USED.fetch_sub(1, Ordering::Relaxed);
    Some(update)
}

/// Whether an update of `t` is parked: a handler may park one between the holder's last [`take`] and its
/// release of the lock.
pub(crate) fn has(t: *mut PathTable) -> bool {
    USED.load(Ordering::Relaxed) != 0 && PARKED.iter().any(|s| s.table.load(Ordering::Acquire) == t)
}

/// Forgets the parked updates of `t` (a fork child: they are counts of the parent).
pub(crate) fn discard(t: *mut PathTable) {
    while take(t).is_some() {}
}
