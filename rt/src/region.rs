//! Sparse regions: path-mode functions whose counters live in a large, page-aligned array of their own, which
//! the runtime maps when the module registers ([`map`]; not in `.bss`, where a conservative garbage collector
//! would scan it as roots: see `SparseRegion`).
//!
//! Instrumented code updates a region like the dense counter array (one indexed add, atomic in atomic mode,
//! from an address it reads once per activation), so the fast path is the same as for small functions; the
//! difference is in what the runtime writes: a region can span megabytes of which a run touches a few pages,
//! so its nonzero counts are written as sparse entries (like a path table's) instead of the whole array. The pages a run never wrote are never
//! committed by the kernel; `mincore` tells which pages are resident, and only those are scanned (all of them
//! if `mincore` fails). A page that is resident but only read holds zeros and costs a scan, nothing more.
//!
//! Counts are drained by atomic swaps to 0 (another thread may be updating the region), put back by atomic adds
//! after a failed write, zeroed by resets and in `fork()` children.

use crate::diag::{pp_warn, Dec};
use crate::merge::PathCount;
use crate::sys::{self, Errno, MVec};
use core::ffi::c_void;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
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

/// The counters of `r`: null while unmapped.
///
/// # Safety
/// `r` must be a region of a registered module.
unsafe fn counters(r: *mut SparseRegion) -> *mut u64 {
    // SAFETY: caller contract; registration checked that `cell` is non-null and aligned.
    unsafe { AtomicPtr::from_ptr((*r).cell) }.load(Ordering::Acquire)
}

/// The counters `cell` names, mapped now when they are not yet: `len` zeroed, page-aligned words that only
/// touched pages commit. Two threads racing here keep the first mapping. When no memory can be mapped (the
/// address space is exhausted: a build with the array in `.bss` would not even have loaded), the process
/// cannot count and ends with one line and status 127 — never a write through a null address.
///
/// # Safety
/// `cell` is a region's cell of an instrumented module and `len` its number of counters.
unsafe fn map(cell: *mut *mut u64, len: u64) -> *mut u64 {
    // SAFETY: caller contract: an aligned, live pointer word.
    let slot = unsafe { AtomicPtr::from_ptr(cell) };
    let now = slot.load(Ordering::Acquire);
    if !now.is_null() {
        return now;
    }
    let bytes = mapping_bytes(len);
    let fresh = sys::map_anonymous(bytes, libc::MAP_NORESERVE).cast::<u64>();
    if fresh.is_null() {
        pp_warn!(
            "cannot map ",
            Dec(bytes as u64 >> 20),
            " MiB for the path counters of a large function; ending the process"
        );
        // SAFETY: no precondition. (The status a shell gives a program that could not be loaded.)
        unsafe { libc::_exit(127) };
    }
    match slot.compare_exchange(core::ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => fresh,
        Err(first) => {
            // SAFETY: our own mapping, never published.
            unsafe { libc::munmap(fresh.cast::<c_void>(), bytes) };
            first
        }
    }
}

/// Bytes of the mapping of a region of `len` counters (never empty), for `mmap` and `munmap` alike.
fn mapping_bytes(len: u64) -> usize {
    (len as usize).saturating_mul(8).max(8)
}

/// Maps the regions of a module being registered.
pub(crate) fn map_all(d: *mut ModuleDesc) {
    for r in regions(d) {
        // SAFETY: the regions of a module whose descriptor registration checked.
        unsafe { map((*r).cell, (*r).len) };
    }
}

/// Unmaps the regions of a module being unregistered while the process goes on (its image is unloaded).
pub(crate) fn unmap_all(d: *mut ModuleDesc) {
    for r in regions(d) {
        // SAFETY: the regions of a module that was registered; its image is still mapped (its destructor runs).
        let (cell, len) = unsafe { ((*r).cell, (*r).len) };
        // SAFETY: as above.
        let mapped = unsafe { AtomicPtr::from_ptr(cell) }.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if !mapped.is_null() {
            // SAFETY: the mapping `map` made with this length.
            unsafe { libc::munmap(mapped.cast::<c_void>(), mapping_bytes(len)) };
        }
    }
}

/// The counters of a region whose module is not registered yet (instrumented code running before the module's
/// constructor: another image's constructor, an `ifunc` resolver); instrumented code calls it when the cell it
/// read at entry was null.
///
/// # Safety
/// As [`map`]; instrumented code passes its own module's cell and length.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_region_counters(cell: *mut *mut u64, len: u64) -> *mut u64 {
    // SAFETY: caller contract.
    unsafe { map(cell, len) }
}

/// The counters of `r` on page `page` (atomically: instrumented code updates them concurrently).
///
/// # Safety
/// `r` must be a region of a registered module.
unsafe fn page_counters<'a>(r: *mut SparseRegion, page: usize) -> impl Iterator<Item = (usize, &'a AtomicU64)> {
    // SAFETY: caller contract; registration checked `len`; `for_each_touched_page` saw the counters mapped.
    let (base, len) = unsafe { (counters(r), (*r).len as usize) };
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
    let (base, len) = unsafe { (counters(r), (*r).len as usize) };
    if base.is_null() {
        return; // never mapped: no count
    }
    let pages = len.div_ceil(PER_PAGE);
    let mut residency: MVec<u8> = MVec::new();
    let resident = residency.extend_fill(0, pages).is_ok() && {
        // SAFETY: the mapping is page-aligned and has room for one byte per page.
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
