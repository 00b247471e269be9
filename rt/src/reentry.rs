//! Fork re-entries: the process's fork generation and the re-entries a `fork()`ed child records.
//!
//! A `fork()`ed child zeroes its inherited counters (the parent reports everything counted before the fork), so
//! the activations that were on the forking thread's stack go on in the child without having been entered
//! there. Instrumented code loads [`__pathprof_fork_gen`] before every call that may not return and again after
//! it; the generation changes only in a child, in the `pthread_atfork` child handler, so a change means "this
//! call was in flight at a fork and this process is the child resuming the activation". The code then calls
//! [`__pathprof_fork_reentry`] once (a cold path) with what to re-enter: the truncated path it counted on arrival
//! at the call's block (path, context and piecewise modes) or the block (edge mode, and interprocedural call
//! blocks), and the function with the kind, packed small (`layout::reentry_packed`). Calls made after the fork read the new generation, so each in-flight call records at most one
//! re-entry per fork, and a child's child (whose generation moved again) records its own.
//!
//! Why this is exact: only the forking thread exists in the child, and only its frames were in flight at the
//! fork; the generation is per runtime copy, but every copy (each instrumented shared object carries one)
//! installs its own child handler, so each image's generation moves in every child. `vfork` and `posix_spawn`
//! run no fork handlers and do not change it: a `vfork` child shares the parent's memory and its counts land in
//! the parent's profile, where nothing was zeroed.
//!
//! Re-entries are few (one per in-flight call of the forking thread, per child), so they are kept in a small
//! array under the runtime lock, summed per (module, function word, key), and written as sparse entries whose
//! function word carries `SPARSE_REENTRY` (and `SPARSE_REENTRY_BLOCK` for a block). Dumps drain them like
//! counters, a failed write puts them back, resets and unregistration drop them, and a forked child starts with
//! none. If memory runs out, the lost re-entry makes the next dump flag its records incomplete.

use crate::merge::PathCount;
use crate::sys::{Errno, MVec};
use core::ptr;
use core::sync::atomic::{AtomicU64, Ordering};
use pathprof_format::layout::{reentry_word, ModuleDesc, SPARSE_REENTRY};

/// The process's fork generation: 0 in the first process, incremented in every `fork()`ed child (by this runtime
/// copy's child handler), never changed otherwise. Instrumented code reads it around calls that may not return.
#[no_mangle]
pub static __pathprof_fork_gen: AtomicU64 = AtomicU64::new(0);

/// One summed re-entry record.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reentry {
    /// The module that recorded it.
    pub(crate) desc: *mut ModuleDesc,
    /// The sparse entry's function word (function index with `SPARSE_REENTRY` and maybe `SPARSE_REENTRY_BLOCK`).
    pub(crate) function: u64,
    /// The truncated path number or the block.
    pub(crate) key: u64,
    /// How often.
    pub(crate) count: u64,
}

/// Records one fork re-entry of module `desc` (see the module docs): `packed` names the function and the kind
/// (`layout::reentry_packed`; a value with the top bit set names nothing and is ignored), `key` the truncated
/// path or the block. Called by instrumented code when the fork generation changed across a call.
///
/// # Safety
/// `desc` must be the calling module's descriptor (it is only compared and, once registered, dumped).
#[no_mangle]
pub unsafe extern "C" fn __pathprof_fork_reentry(desc: *mut ModuleDesc, packed: u64, key: u64) {
    let Some(function) = reentry_word(packed) else { return };
    if desc.is_null() {
        return;
    }
    let mut guard = crate::lock();
    let st = guard.state();
    if record(&mut st.reentries, Reentry { desc, function, key, count: 1 }).is_err() {
        st.reentries_lost = true;
    }
}

/// Adds `r` to its record (searching from the newest: a child's re-entries come in bursts from one stack).
fn record(all: &mut MVec<Reentry>, r: Reentry) -> Result<(), Errno> {
    let found =
        all.as_mut_slice().iter_mut().rev().find(|x| x.desc == r.desc && x.function == r.function && x.key == r.key);
    match found {
        Some(x) => {
            x.count = x.count.wrapping_add(r.count);
            Ok(())
        }
        None => all.push(r),
    }
}

/// In a `fork()`ed child (single-threaded, from the child handler): a new generation, and no re-entries yet (the
/// parent reports its own; the array may be half-grown by a thread that does not exist here, so it is abandoned).
pub(crate) fn fork_child(all: &mut MVec<Reentry>) {
    __pathprof_fork_gen.fetch_add(1, Ordering::Relaxed);
    all.leak();
}

/// Whether `d` has re-entries to write.
pub(crate) fn has_news(all: &MVec<Reentry>, d: *mut ModuleDesc) -> bool {
    all.as_slice().iter().any(|r| r.desc == d && r.count != 0)
}

/// Moves `d`'s re-entries into `out` as path counts with flagged function words (their table and slot are
/// null). On `Err` (out of memory) what was moved is in `out`, for [`restore`].
pub(crate) fn drain(all: &mut MVec<Reentry>, d: *mut ModuleDesc, out: &mut MVec<PathCount>) -> Result<(), Errno> {
    for r in all.as_mut_slice().iter_mut().filter(|r| r.desc == d && r.count != 0) {
        out.push(PathCount {
            function: r.function,
            path: r.key,
            count: r.count,
            table: ptr::null_mut(),
            slot: ptr::null_mut(),
        })?;
        r.count = 0;
    }
    Ok(())
}

/// Puts the re-entries among `drained` (what a failed write drained for module `d`) back.
pub(crate) fn restore(all: &mut MVec<Reentry>, d: *mut ModuleDesc, drained: &[PathCount]) -> Result<(), Errno> {
    for p in drained.iter().filter(|p| p.function & SPARSE_REENTRY != 0) {
        record(all, Reentry { desc: d, function: p.function, key: p.path, count: p.count })?;
    }
    Ok(())
}

/// Drops `d`'s re-entries (reset, or the module is being unregistered).
pub(crate) fn forget(all: &mut MVec<Reentry>, d: *mut ModuleDesc) {
    for r in all.as_mut_slice().iter_mut().filter(|r| r.desc == d) {
        r.count = 0;
    }
    // Keep only live records, so a later module at the same address never inherits them.
    let mut keep = 0usize;
    for i in 0..all.len() {
        let Some(&r) = all.as_slice().get(i) else { break };
        if r.count != 0 {
            if let Some(slot) = all.as_mut_slice().get_mut(keep) {
                *slot = r;
            }
            keep += 1;
        }
    }
    all.truncate(keep);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(i: usize) -> *mut ModuleDesc {
        (0x1000 * i) as *mut ModuleDesc
    }

    #[test]
    fn records_sum_per_key_and_drain_once() {
        let mut all = MVec::new();
        let f = SPARSE_REENTRY | 3;
        for (desc, key) in [(1, 7), (1, 7), (2, 7), (1, 8)] {
            record(&mut all, Reentry { desc: d(desc), function: f, key, count: 1 }).unwrap();
        }
        assert!(has_news(&all, d(1)) && has_news(&all, d(2)) && !has_news(&all, d(3)));
        let mut out = MVec::new();
        drain(&mut all, d(1), &mut out).unwrap();
        let got: std::vec::Vec<(u64, u64, u64)> =
            out.as_slice().iter().map(|p| (p.function, p.path, p.count)).collect();
        assert_eq!(got, [(f, 7, 2), (f, 8, 1)]);
        assert!(!has_news(&all, d(1)));
        forget(&mut all, d(2));
        assert!(!has_news(&all, d(2)));
        assert_eq!(all.len(), 0);
    }
}
