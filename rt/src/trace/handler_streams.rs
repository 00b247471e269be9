//! Signal handlers traced in streams of their own.
//!
//! A handler runs between any two instructions of the thread it interrupts. Traced into that thread's stream it
//! would be an entry in the middle of a body — an abnormal transfer, after which nothing of the thread is
//! regenerable (libsigsegv: every thread of every test). So the trampoline that runs the program's watched
//! handlers (`handlers`) runs each one in a *handler stream*: it parks the interrupted stream's state words in
//! that stream's record, gives the thread the handler stream's words (a stream at its top level between
//! handlers, so each handler is an ordinary top-level activation), and on return parks those and puts the
//! interrupted ones back, exactly as they were — instrumented code that keeps bits in registers across the
//! signal finds its words unchanged. Each stream stays whole and regenerable; the file names the thread a
//! handler stream serves (`trace_layout`'s `REC_HANDLERS`).
//!
//! A handler that leaves through `siglongjmp` to a traced `setjmp` (libsigsegv's stack-overflow continuation)
//! is caught at the landing ([`landing`]): the handler stream ends there, marked abnormal (its activations were
//! left), and so does the interrupted stream, where the signal came — it was left in the middle of a body,
//! where no reader can expect a marker; what it ran up to there is exact. The thread goes on in a new stream
//! read from a sync point at the landing ([`resume_at_landing`]: the activations up to the `setjmp`'s, from the
//! shadow stack), so what it runs from there on is regenerable too (`REC_RESUMED`); the next handler gets a
//! new handler stream. Which stream a landing belongs to is told by the stack: the interrupted code's stack
//! pointer (from the signal's context) and whether it was on the signal stack; handler frames lie below it,
//! past the red zone and the kernel's signal frame. A handler that leaves otherwise (`exit`, a `longjmp` to
//! untraced code) leaves the interrupted stream parked, and its end is marked abnormal where it was parked.
//!
//! A signal in a handler gets a handler stream of the handler stream, up to [`MAX_DEPTH`] deep. The record is
//! made in the handler, under the lock (whose holders block signals, so the thread never holds it here);
//! interrupted inside the runtime (a spill), the host is parked all the same — the spill stores the host's
//! words when the handler has put them back. Handler streams are per thread and per runtime copy: code of
//! another image the handler calls, with its own copy, still finds that copy's stream in a body.

use super::{acc_len, CONFINED, ENDED, KEY, RECORD_HEADER, REC_HANDLERS, REC_RESUMED, SYNC_AT_SITE};
use super::{busy, finish, lock, lock_held_here, new_record, open, pending_bits, record_header, thread_record};
use super::{free_thread, shadow_entry_at, shadow_ok, unlink, write, write_sync, State, Thread};
use super::{TLS_ACC, TLS_CACHE, TLS_CALLEE};
use super::{TLS_STATE, TLS_THREAD, TLS_WORDS};
use crate::sys;
use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::Ordering;

/// Handler streams one thread may stack: signals nested in handlers, and handlers left through `siglongjmp`
/// (each leaves the thread in its stream). Deeper, a handler runs in the stream it interrupts.
const MAX_DEPTH: u32 = 8;

/// How far below the interrupted stack pointer a landing frame may still be the interrupted code's: the
/// caller of the landing's helper may be an un-inlined helper's small frame. Handler frames are further down:
/// below the 128-byte red zone and the kernel's signal frame (over 1 KiB with the FPU state).
const LANDING_SLACK: usize = 256;

/// Runs a watched signal handler (`run`, called by the trampoline with the signal's `context`) in the calling
/// thread's handler stream when it has traced code running in this runtime copy; otherwise as it is.
pub(crate) fn with_handler_stream(context: *mut c_void, run: &mut dyn FnMut()) {
    let key = KEY.load(Ordering::Acquire);
    if key == 0 || CONFINED.load(Ordering::Acquire) {
        // No trace state, or a seccomp sandbox: no system call to block signals is allowed.
        return run();
    }
    // SAFETY: a key this copy created; the value is the thread's state words or null.
    let tls = unsafe { libc::pthread_getspecific((key - 1) as libc::pthread_key_t) } as *mut u64;
    if tls.is_null() {
        // No traced code ran on the thread yet: the handler's first entry starts its stream at the top level.
        return run();
    }
    // SAFETY: the calling thread's state words.
    let swapped = sys::with_signals_blocked(|| unsafe { enter(tls, context) });
    run();
    if let Some(host) = swapped {
        // SAFETY: as above; `host` is the stream `enter` parked.
        sys::with_signals_blocked(|| unsafe { leave(tls, host) });
    }
}

/// Parks the thread's current stream and gives the thread its handler stream's words; the parked stream, or
/// `None` when the handler must run where it is.
///
/// # Safety
/// `tls` is the calling thread's state words; signals are blocked; `context` is the signal's `ucontext_t`.
unsafe fn enter(tls: *mut u64, context: *mut c_void) -> Option<*mut Thread> {
    // SAFETY: the caller's.
    let host = unsafe { thread_record(tls) }?;
    // Interrupted inside the runtime, the host is left as it is: a spill goes on storing the thread's words
    // after the handler. Only the lock must be free (its holder blocks signals; a raw fork does not): the
    // handler stream's spills may take it.
    if host.ended || host.depth >= MAX_DEPTH || busy(host) == ENDED || lock_held_here() {
        // Ended by another thread's exit flush, or too deep.
        return None;
    }
    if host.handlers.is_null() {
        let mut g = lock();
        // SAFETY: the lock is held.
        let h = unsafe { parked_top_level(g.state(), false) };
        if h.is_null() {
            return None;
        }
        // SAFETY: the new record, listed, used by this thread only.
        unsafe {
            (*h).host = host;
            (*h).depth = host.depth + 1;
        }
        host.handlers = h;
    }
    // SAFETY: the host's handler stream, a live record only this thread runs.
    let h = unsafe { &mut *host.handlers };
    if h.ended || busy(h) == ENDED {
        return None;
    }
    // SAFETY: the caller's state words and the two records' parked words.
    unsafe {
        park(tls, host);
        unpark(tls, h);
    }
    host.in_handler = true;
    // SAFETY: the caller's.
    (host.parked_sp, host.parked_on_alt) = unsafe { interrupted_stack(context) }.unwrap_or((0, false));
    Some(host)
}

/// The handler returned: parks the stream it ran in (the host's handler stream, or a deeper one a nested
/// handler that did not return left the thread in) and gives the thread the host's words back.
///
/// # Safety
/// As [`enter`]; `host` is the stream `enter` parked.
unsafe fn leave(tls: *mut u64, host: *mut Thread) {
    // SAFETY: the caller's; the thread's words belong to one of its handler streams.
    unsafe {
        if let Some(current) = thread_record(tls) {
            park(tls, current);
        }
        let host = &mut *host;
        unpark(tls, host);
        host.in_handler = false;
    }
}

/// A `longjmp` came back to a `setjmp` whose call site's state is `site` and activation's body state `state`,
/// in a frame whose stack pointer is `sp`. When the
/// thread runs a handler stream and the frame belongs to a stream that stream's handlers interrupted (the
/// outermost whose parked stack pointer is at most `sp`, on the same stack), the handler streams below it end —
/// abnormal where they are when their activations were left —, that stream too, and the thread goes on in its
/// place in a stream that starts at the landing ([`resume_at_landing`]; naive items go on in that stream
/// itself), its state the landing's. The caller then writes the resync marker there.
///
/// # Safety
/// `tls` is the calling thread's state words.
pub(super) unsafe fn landing(tls: *mut u64, site: u64, state: u64, sp: usize) {
    // SAFETY: the caller's.
    let Some(current) = (unsafe { thread_record(tls) }) else { return };
    if current.host.is_null() {
        return;
    }
    let on_alt = on_signal_stack();
    let mut target: *mut Thread = ptr::null_mut();
    let mut x = current.host;
    while !x.is_null() {
        // SAFETY: hosts of a live record are live records.
        let h = unsafe { &*x };
        if h.in_handler
            && h.parked_sp != 0
            && h.parked_on_alt == on_alt
            && sp.saturating_add(LANDING_SLACK) >= h.parked_sp
        {
            target = x;
        }
        x = h.host;
    }
    if target.is_null() {
        return; // a setjmp of the handler's own
    }
    let current: *mut Thread = current;
    sys::with_signals_blocked(|| {
        let mut g = lock();
        let st = g.state();
        // SAFETY: the thread's own records, from the running stream up its hosts to `target`; the lock is held.
        unsafe {
            // Naive items describe themselves: the streams go on whole. A stopped stream (regions) keeps nothing.
            let bits = st.naive != Some(true);
            let c = &mut *current;
            if bits && !c.off {
                c.stop = c.stop.min(c.spilled * 64 + pending_bits(tls));
            }
            // The streams below `target`: the running one, those between (parked in their handlers), and
            // those below the running one (between handlers).
            end_and_free(st, (*target).handlers);
            let t = &mut *target;
            t.handlers = ptr::null_mut();
            let mut words = t.parked;
            let resumed = if bits { resume_at_landing(st, t, site) } else { ptr::null_mut() };
            if resumed.is_null() {
                if bits && !t.off {
                    // Left in the middle of a body, where its reader cannot find a marker: regenerable up to
                    // where the signal came (its blocks after the last decision are uncertain), no further.
                    t.stop = t.stop.min(t.spilled * 64 + acc_len(t.parked[TLS_ACC]));
                }
                t.in_handler = false;
                ptr::write_volatile(&mut t.tls, tls);
            } else {
                // The stream ends where the signal came (`in_handler`); the thread goes on in `resumed`.
                finish(st, t, 0);
                unlink(st, target);
                free_thread(target);
                let r = &mut *resumed;
                words[TLS_ACC] = super::ACC_EMPTY;
                words[TLS_THREAD] = resumed as u64;
                words[TLS_CACHE] = r.parked[TLS_CACHE];
                words[TLS_CALLEE] = 0; // the setjmp site's: it called no traced function
                ptr::write_volatile(&mut r.tls, tls);
            }
            words[TLS_STATE] = state;
            for (i, w) in words.iter().enumerate() {
                ptr::write_volatile(tls.add(i), *w);
            }
        }
    });
}

/// A new stream for the thread a handler left through `siglongjmp` for `t`, read from a sync point at the
/// landing (`REC_SYNC` at its bit 0: the activations on `t`'s shadow stack up to the `setjmp`'s, which waits at
/// the `setjmp` call site, whose state is `site`), so that what the thread runs from there on is regenerable; it takes
/// over `t`'s shadow stack (and `t`'s place among the handler streams). Null (the thread goes on in `t`,
/// abnormal) for a flight recorder's or a region's stream, or without a shadow stack that holds those
/// activations.
///
/// # Safety
/// `t` is the calling thread's record, parked; the lock is held.
unsafe fn resume_at_landing(st: &mut State, t: &mut Thread, site: u64) -> *mut Thread {
    let depth = (site & 0xffff_ffff) >> 1;
    if st.region || t.ring.on() || !shadow_ok(t, depth) {
        return ptr::null_mut();
    }
    // SAFETY: a null `tls`: the record's own words.
    let r = unsafe { new_record(st, ptr::null_mut(), false) };
    if r.is_null() {
        return r;
    }
    // SAFETY: the new record, listed, used by this thread only.
    let r_ref = unsafe { &mut *r };
    core::mem::swap(&mut r_ref.shadow, &mut t.shadow);
    // A handler stream's continuation serves the same thread.
    r_ref.host = t.host;
    r_ref.depth = t.depth;
    if !t.host.is_null() {
        // SAFETY: a live record's host is a live record.
        unsafe { (*t.host).handlers = r };
    }
    r_ref.window = true;
    r_ref.syncs = 1;
    let shadow = r_ref.shadow;
    write_sync(st, r_ref.serial, 0, SYNC_AT_SITE, site, depth, |k| shadow_entry_at(shadow, k));
    write_relation(st, REC_RESUMED, r_ref.serial, t.serial);
    r
}

/// Ends the stream `first` and the handler streams below it, and frees their records.
///
/// # Safety
/// `first` is null or a live record of the calling thread (the lock is held); nothing uses these records after.
pub(super) unsafe fn end_and_free(st: &mut State, first: *mut Thread) {
    // Every end first: a handler stream's end names its host, whose record must still be there.
    let mut s = first;
    while !s.is_null() {
        // SAFETY: the caller's; handler streams of live records are live.
        unsafe {
            finish(st, &mut *s, 0);
            s = (*s).handlers;
        }
    }
    let mut s = first;
    while !s.is_null() {
        // SAFETY: as above; each record is read before it is freed.
        unsafe {
            let next = (*s).handlers;
            unlink(st, s);
            free_thread(s);
            s = next;
        }
    }
}

/// The interrupted code's stack pointer and whether it was on the signal stack, from a signal's context.
///
/// # Safety
/// `context` is null or a signal's `ucontext_t`.
unsafe fn interrupted_stack(context: *mut c_void) -> Option<(usize, bool)> {
    if context.is_null() {
        return None;
    }
    // SAFETY: the caller's.
    let uc = unsafe { &*(context as *const libc::ucontext_t) };
    #[cfg(target_arch = "x86_64")]
    let sp = uc.uc_mcontext.gregs[libc::REG_RSP as usize] as usize;
    #[cfg(target_arch = "aarch64")]
    let sp = uc.uc_mcontext.sp as usize;
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let sp = 0;
    // The kernel saves the thread's signal stack with SS_ONSTACK when the interrupted code ran on it.
    (sp != 0).then_some((sp, uc.uc_stack.ss_flags & libc::SS_ONSTACK != 0))
}

/// Whether the calling code runs on the thread's signal stack.
fn on_signal_stack() -> bool {
    // SAFETY: a query only (a null new stack).
    let mut ss: libc::stack_t = unsafe { core::mem::zeroed() };
    unsafe { libc::sigaltstack(ptr::null(), &mut ss) == 0 && ss.ss_flags & libc::SS_ONSTACK != 0 }
}

/// Copies the thread's state words into `t`'s record and points `t` there.
///
/// # Safety
/// `tls` is the calling thread's state words, holding `t`'s state.
pub(super) unsafe fn park(tls: *mut u64, t: &mut Thread) {
    for i in 0..TLS_WORDS {
        // SAFETY: the caller's.
        t.parked[i] = unsafe { ptr::read_volatile(tls.add(i)) };
    }
    // Another thread's exit flush reads the pointer, then the words it points at (`end_running`).
    // SAFETY: a field of a live record.
    unsafe { ptr::write_volatile(&mut t.tls, t.parked.as_mut_ptr()) };
}

/// Gives the thread `t`'s parked state words and points `t` at the thread's: the reverse of [`park`].
///
/// # Safety
/// `tls` is the calling thread's state words, already parked in the record of the stream they held.
pub(super) unsafe fn unpark(tls: *mut u64, t: &mut Thread) {
    for (i, w) in t.parked.iter().enumerate() {
        // SAFETY: the caller's.
        unsafe { ptr::write_volatile(tls.add(i), *w) };
    }
    // SAFETY: a field of a live record.
    unsafe { ptr::write_volatile(&mut t.tls, tls) };
}

/// A new stream's record whose parked words are at its top level, not yet run: a handler stream, or a user
/// context's (`context_streams`). Null when nothing is traced. `early` as for [`new_record`].
///
/// # Safety
/// The lock is held.
pub(super) unsafe fn parked_top_level(st: &mut State, early: bool) -> *mut Thread {
    // SAFETY: a null `tls`: the record's own words.
    let t = unsafe { new_record(st, ptr::null_mut(), early) };
    if !t.is_null() {
        // SAFETY: the new record, listed, not yet run.
        unsafe {
            (*t).parked[TLS_ACC] = super::ACC_EMPTY;
            (*t).parked[TLS_STATE] = 1; // the top level
            (*t).parked[TLS_THREAD] = t as u64;
        }
    }
    t
}

/// Whether `t` is `active` or a stream whose handlers `active` (a chain of handler streams) runs in.
pub(super) fn hosts_or_is(active: *mut Thread, t: *mut Thread) -> bool {
    let mut k = active;
    while !k.is_null() {
        if k == t {
            return true;
        }
        // SAFETY: a live record's host is a live record (or null).
        k = unsafe { (*k).host };
    }
    false
}

/// The thread's own stream, given any of its streams.
///
/// # Safety
/// `t` is a live record.
pub(super) unsafe fn own_stream(mut t: *mut Thread) -> *mut Thread {
    // SAFETY: the caller's; hosts are live records.
    unsafe {
        while !(*t).host.is_null() {
            t = (*t).host;
        }
    }
    t
}

/// Writes a handler stream's `REC_HANDLERS` record once (before its first other record in the file).
pub(super) fn announce(st: &mut State, t: &mut Thread) {
    if t.host.is_null() || t.announced || !open(st) {
        return;
    }
    t.announced = true;
    // SAFETY: a live record's host is a live record.
    let host = unsafe { (*t.host).serial };
    write_relation(st, REC_HANDLERS, t.serial, host);
}

/// Writes a record of `kind` ([`REC_HANDLERS`], [`REC_RESUMED`], `REC_CONTEXT`) that relates thread `serial`'s stream to
/// thread `other`'s.
pub(super) fn write_relation(st: &mut State, kind: u32, serial: u32, other: u32) {
    if !open(st) {
        return;
    }
    let mut rec = [0u8; RECORD_HEADER + 8];
    let (h, body) = rec.split_at_mut(RECORD_HEADER);
    h.copy_from_slice(&record_header(kind, sys::pid(), st.copy, serial, 8));
    body[..4].copy_from_slice(&other.to_le_bytes());
    write(st, &rec);
}
