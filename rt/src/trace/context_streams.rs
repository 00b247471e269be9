//! User contexts (`makecontext`/`swapcontext`) traced in streams of their own.
//!
//! Coroutine libraries (GNU Pth, libtask-style schedulers, QEMU's coroutines) run each coroutine on a stack of
//! its own and switch with `swapcontext`: the call returns on another stack, into another context's frames.
//! Traced into one stream per thread, the first switch is an abnormal transfer (a call site returning to a state
//! not its own), and nothing of the thread after it is regenerable. So, as signal handlers get handler streams
//! ([`super::handler_streams`]), each context gets a *context stream*: the runtime's `swapcontext` (the pass sends
//! instrumented code's calls here) parks the running stream's state words in its record, found again through
//! the context it saves (`context_index`, a hash table: a switch costs the same with thousands of contexts), and
//! gives the thread the target context's words — a parked stream's, exactly as they
//! were, or, for a context `makecontext` made ([`__pathprof_trace_made_context`], called after each of its calls),
//! a new stream at its top level, whose function is an ordinary top-level activation. When it resumes, the
//! caller's words are back and instrumented code goes on unaware.
//!
//! A context's function that returns goes to its `uc_link` through the C library, not through the runtime: the
//! `swapcontext` that resumes then finds the finished stream's words (at its top level) and ends that stream,
//! complete, before it takes its own back. A stream switched away from by `setcontext`, or parked in a context
//! that is saved or made anew, can never run again: it ends [`END_SUSPENDED`], exact up to its suspension; so
//! does one still parked when the process exits (with [`super::END_AT_EXIT`]).
//!
//! Limits (each falls back to what happens without context streams: the switch is traced into the running
//! stream, whose reader then stops at the abnormal transfer, never reads past it): a target context the runtime
//! did not see made or saved (`getcontext` alone, a switch in untraced code, another runtime copy's), a switch
//! in a signal handler's stream. A context may resume on another thread: its stream goes with it.

use super::context_index::Known;
use super::handler_streams::{end_and_free, park, parked_top_level, unpark, write_relation};
use super::{busy, finish, lock, lock_held_here, thread_record};
use super::{State, Thread, CONFINED, ENDED, KEY};
use super::{END_SUSPENDED, REC_CONTEXT};
use crate::sys;
use core::ptr;
use core::sync::atomic::Ordering;

/// `swapcontext(3)` for instrumented code (`symbols::SWAPCONTEXT`).
///
/// # Safety
/// As `swapcontext`.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_swapcontext(from: *mut libc::ucontext_t, to: *const libc::ucontext_t) -> i32 {
    let tls = calling_state();
    // SAFETY: the calling thread's state words (or null).
    let parked = if tls.is_null() { None } else { unsafe { switch(tls, Some(from as usize), to as usize) } };
    // SAFETY: the caller's.
    let rc = unsafe { libc::swapcontext(from, to) };
    if let Some(own) = parked {
        // Resumed, perhaps on another thread, perhaps by the C library (a context's function returned).
        let tls = calling_state();
        if !tls.is_null() {
            // SAFETY: as above; `own` is the record `switch` parked under `from`.
            unsafe { resumed(tls, own, from as usize) };
        }
    }
    rc
}

/// `setcontext(3)` for instrumented code (`symbols::SETCONTEXT`): the stream switched away from ends.
///
/// # Safety
/// As `setcontext`.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_setcontext(to: *const libc::ucontext_t) -> i32 {
    let tls = calling_state();
    if !tls.is_null() {
        // SAFETY: the calling thread's state words.
        unsafe { switch(tls, None, to as usize) };
    }
    // SAFETY: the caller's.
    unsafe { libc::setcontext(to) }
}

/// `makecontext` made `ucp` (`symbols::TRACE_MADE_CONTEXT`, called right after it): the next switch to it
/// starts a new stream. A stream parked in `ucp` before can never run again.
///
/// # Safety
/// `ucp` is the context the program passed to `makecontext`.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_trace_made_context(ucp: *mut libc::ucontext_t) {
    let tls = calling_state();
    if tls.is_null() {
        return;
    }
    if lock_held_here() {
        return;
    }
    // SAFETY: the calling thread's state words.
    let Some(maker) = (unsafe { thread_record(tls) }) else { return };
    let (maker, traced) = (maker.serial, !maker.off);
    let mut g = lock();
    let st = g.state();
    forget(st, ucp as usize);
    if !st.contexts.put(ucp as usize, Known::Fresh { maker, traced }) {
        crate::diag::pp_warn!("cannot note a context makecontext made; its switches are traced in place");
    }
}

/// The calling thread's trace-state words; null when it has none (no traced code ran on it), or in a seccomp
/// sandbox (no system call to block signals is allowed).
fn calling_state() -> *mut u64 {
    let key = KEY.load(Ordering::Acquire);
    if key == 0 || CONFINED.load(Ordering::Acquire) {
        return ptr::null_mut();
    }
    // SAFETY: a key this copy created; the value is the thread's state words or null.
    unsafe { libc::pthread_getspecific((key - 1) as libc::pthread_key_t) as *mut u64 }
}

/// Parks the running stream (under `from`; for `setcontext`, `None`: it ends) and gives the thread the words of
/// the stream of context `to`. The parked record, or `None` when the switch is traced in place.
///
/// The lock, held with every signal blocked, covers the switch of words: a signal handler that comes before
/// finds the running stream as it is (a handler puts back the words it found), one that comes after finds the
/// target's.
///
/// # Safety
/// `tls` is the calling thread's state words.
unsafe fn switch(tls: *mut u64, from: Option<usize>, to: usize) -> Option<*mut Thread> {
    if lock_held_here() || from == Some(to) {
        return None;
    }
    let mut g = lock();
    let st = g.state();
    // SAFETY: the caller's.
    let own = unsafe { thread_record(tls) }?;
    // Another thread's exit flush may have ended the stream (its record stays listed until the process ends).
    if own.ended || !own.host.is_null() || own.in_handler || busy(own) == ENDED {
        return None;
    }
    let own: *mut Thread = own;
    // Room to park `own` first: past this point the switch cannot fail.
    if !st.contexts.reserve() {
        return None;
    }
    // SAFETY (the block): records on the list are live; `own` is the calling thread's running record.
    unsafe {
        let target = match st.contexts.get(to) {
            Some(Known::Parked(t)) if !(*t).ended => {
                st.contexts.take(to);
                t
            }
            Some(Known::Fresh { maker, traced }) => {
                st.contexts.take(to);
                fresh_stream(st, maker, traced)?
            }
            _ => return None,
        };
        let t = &mut *target;
        match from {
            Some(from) => {
                forget(st, from);
                park(tls, &mut *own);
                (*own).parked_ctx = from;
                st.contexts.put(from, Known::Parked(own));
            }
            None => {
                // Switched away for good: what the stream ran is all it runs.
                park(tls, &mut *own);
                finish(st, &mut *own, END_SUSPENDED);
                end_and_free(st, own);
            }
        }
        t.parked_ctx = 0;
        t.tid = sys::tid();
        unpark(tls, t);
        from.map(|_| own)
    }
}

/// Back in the `swapcontext` that parked `own` under `from`: unless the switch that resumed it gave the thread
/// its words, the stream that ran last ends (a context whose function returned, at its top level: complete) and
/// `own`'s words come back.
///
/// # Safety
/// `tls` is the calling thread's state words; `own` was parked by [`switch`].
unsafe fn resumed(tls: *mut u64, own: *mut Thread, from: usize) {
    // SAFETY: the caller's. Read again under the lock: a handler may have run in between (it puts back what
    // it found).
    if unsafe { thread_record(tls) }.map(|t| t as *mut Thread) == Some(own) || lock_held_here() {
        return;
    }
    let mut g = lock();
    let st = g.state();
    // SAFETY: as above.
    let running = unsafe { thread_record(tls) }.map(|t| t as *mut Thread);
    if running == Some(own) {
        return;
    }
    // `own` is live while it is parked under `from` (ended and freed records are never parked).
    if st.contexts.get(from) != Some(Known::Parked(own)) {
        return;
    }
    st.contexts.take(from);
    // SAFETY (the block): `running` is the calling thread's record; `own` a parked, live record.
    unsafe {
        if let Some(r) = running {
            if (*r).host.is_null() && !(*r).in_handler {
                park(tls, &mut *r);
                finish(st, &mut *r, END_SUSPENDED);
                end_and_free(st, r);
            }
        }
        let o = &mut *own;
        o.parked_ctx = 0;
        o.tid = sys::tid();
        unpark(tls, o);
    }
}

/// A new stream for a context `makecontext` made, by stream `maker` (traced then, in region mode: `traced`);
/// `None` when no record can be made (the switch is traced in place).
///
/// # Safety
/// The lock is held.
unsafe fn fresh_stream(st: &mut State, maker: u32, traced: bool) -> Option<*mut Thread> {
    // SAFETY: the caller's.
    let t = unsafe { parked_top_level(st, traced) };
    if t.is_null() {
        return None;
    }
    // SAFETY: the new record.
    write_relation(st, REC_CONTEXT, unsafe { (*t).serial }, maker);
    Some(t)
}

/// Context `ucp` is saved or made anew: a stream parked in it can never run again (it ends, suspended), and a
/// made context not yet run is gone.
fn forget(st: &mut State, ucp: usize) {
    if let Some(Known::Parked(stale)) = st.contexts.take(ucp) {
        // SAFETY: a live, parked record that nothing runs (ended: the process is ending, it stays listed).
        unsafe {
            if !(*stale).ended {
                (*stale).parked_ctx = 0;
                finish(st, &mut *stale, END_SUSPENDED);
                end_and_free(st, stale);
            }
        }
    }
}
