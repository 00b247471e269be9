//! Sparse regions: path-mode functions whose counters live in a large, page-aligned `.bss` array of their own.
//!
//! Instrumented code updates a region exactly like the dense counter array (one indexed add, atomic in atomic
//! mode), so the fast path is the same as for small functions; the difference is only in what the runtime
//! writes: a region can span megabytes of which a run touches a few pages, so its nonzero counts are written
//! as sparse entries (like a path table's) instead of the whole array. The pages a run never wrote are never
//! committed by the kernel; `mincore` tells which pages are resident, and only those are scanned (all of them
//! if `mincore` fails). A page that is resident but only read holds zeros and costs a scan, nothing more.
//!
//! Counts are drained by atomic swaps to 0 (another thread may be updating the region), put back by atomic adds
//! after a failed write, zeroed by resets and in `fork()` children.

use crate::merge::PathCount;
use crate::sys::{Errno, MVec};
use core::ffi::c_void;
use core::sync::atomic::{AtomicU64, Ordering};
use pathprof_format::layout::{ModuleDesc, SparseRegion};

/// Counters per 4 KiB page.
const PER_PAGE: usize = 512;

/// The regions of a registered module.
fn regions(d: *mut ModuleDesc) -> impl Iterator<Item = *mut SparseRegion> {
    // SAFETY: registration checked that `regions` is non-null and aligned when `num_regions > 0`.
    let (base, n) = unsafe { ((*d).regions, (*d).num_regions as usize) };
    // SAFETY: each index is below num_regions; the array lives as long as the registered module.
    (0..n).map(move |i| unsafe { base.add(i) })
}

/// The counters of `r` on page `page` (atomically: instrumented code updates them concurrently).
///
/// # Safety
/// `r` must be a region of a registered module.
unsafe fn page_counters<'a>(r: *mut SparseRegion, page: usize) -> impl Iterator<Item = (usize, &'a AtomicU64)> {
    // SAFETY: caller contract; registration checked `counters`/`len`.
    let (base, len) = unsafe { ((*r).counters, (*r).len as usize) };
    let start = page * PER_PAGE;
    let end = (start + PER_PAGE).min(len);
    // SAFETY: start..end is within the array; u64 counters are aligned and only accessed atomically here.
    (start..end).map(move |i| (i, unsafe { AtomicU64::from_ptr(base.add(i)) }))
}

/// Calls `f` with every page of `r` that may hold a nonzero count.
///
/// # Safety
/// `r` must be a region of a registered module.
unsafe fn for_each_touched_page(r: *mut SparseRegion, mut f: impl FnMut(usize)) {
    // SAFETY: caller contract.
    let (base, len) = unsafe { ((*r).counters, (*r).len as usize) };
    let pages = len.div_ceil(PER_PAGE);
    let mut residency: MVec<u8> = MVec::new();
    let resident = residency.extend_fill(0, pages).is_ok() && {
        // SAFETY: the region is page-aligned (the pass aligns it to 4096) and has room for one byte per page.
        let r = unsafe { libc::mincore(base.cast::<c_void>(), len * 8, residency.as_mut_slice().as_mut_ptr()) };
        r == 0
    };
    for page in 0..pages {
        if !resident || residency.as_slice().get(page).is_some_and(|&b| b & 1 != 0) {
            f(page);
        }
    }
}

/// Whether a region of `d` has a nonzero count.
pub(crate) fn has_news(d: *mut ModuleDesc) -> bool {
    let mut news = false;
    for r in regions(d) {
        // SAFETY: regions of a registered module.
        unsafe {
            for_each_touched_page(r, |page| {
                news = news || page_counters(r, page).any(|(_, c)| c.load(Ordering::Relaxed) != 0);
            })
        };
    }
    news
}

/// Moves every nonzero count of `d`'s regions into `out` (setting them to 0). On `Err` (out of memory), what
/// was drained so far is in `out`, for [`restore`].
pub(crate) fn drain(d: *mut ModuleDesc, out: &mut MVec<PathCount>) -> Result<(), Errno> {
    let mut result = Ok(());
    for r in regions(d) {
        // SAFETY: regions of a registered module.
        let function = unsafe { (*r).function };
        unsafe {
            for_each_touched_page(r, |page| {
                for (i, c) in page_counters(r, page) {
                    if result.is_err() {
                        return;
                    }
                    let count = c.swap(0, Ordering::Relaxed);
                    if count != 0 {
                        let slot = c.as_ptr();
                        if let Err(e) =
                            out.push(PathCount { function, path: i as u64, count, table: core::ptr::null_mut(), slot })
                        {
                            c.fetch_add(count, Ordering::Relaxed);
                            result = Err(e);
                        }
                    }
                }
            })
        };
        result?;
    }
    result
}

/// Adds a drained region count back (after a failed write).
///
/// # Safety
/// `slot` must be the counter it was drained from, in a region of a still registered module.
pub(crate) unsafe fn restore(slot: *mut u64, count: u64) {
    // SAFETY: caller contract.
    unsafe { AtomicU64::from_ptr(slot) }.fetch_add(count, Ordering::Relaxed);
}

/// Sets every count of `d`'s regions to 0 (`__pathprof_reset`, and in a `fork()` child).
pub(crate) fn reset(d: *mut ModuleDesc) {
    for r in regions(d) {
        // SAFETY: regions of a registered module.
        unsafe {
            for_each_touched_page(r, |page| {
                for (_, c) in page_counters(r, page) {
                    c.store(0, Ordering::Relaxed);
                }
            })
        };
    }
}
