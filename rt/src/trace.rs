//! Mode `trace`: per-thread bit streams written to `$PATHPROF_TRACE` (default `default.pathtrace`; `%p`,
//! `%h`, `%t` as for profiles; `%m` expands to zeros). Layout: `pathprof_format::trace_layout`.
//!
//! Instrumented code appends bits to the thread's state (a hidden thread-local the pass emits) and calls
//! [`__pathprof_trace_spill_word`] with every full 64-bit word. The runtime keeps, per thread, a fixed buffer of
//! [`BUF_WORDS`] words (allocated once, with `mmap`, at the thread's first traced entry) and writes it as one
//! `REC_DATA` record when full: memory is bounded and the hot path never allocates. At thread exit (a
//! `pthread` key destructor) and at process exit — after the program's destructors, at the last module's
//! destructor ([`exit_handler`]) — the thread's last bits and an `REC_END` record go out; a thread at its top
//! level then gets its final `Done` and is marked complete.
//!
//! Modules register from constructors ([`__pathprof_trace_register`]), which opens the file and assigns each a
//! range of trace ids from the file header's next id; their metadata goes into the file at once.
//!
//! Several runtime copies in one process (an instrumented executable and instrumented shared libraries, each
//! with its hidden copy) share the file (`trace_layout`, "Runtime copies"): the first to open it writes the
//! header, the others join under `flock` and take the next copy number, and every copy allocates trace ids from
//! the header, so one reader regenerates every copy's streams with one id space. A copy's records carry its
//! number and its image's path (`REC_IMAGE`).
//!
//! Abnormal transfers (an entry in a function body — a signal handler the runtime does not watch —, a call site
//! returning to a state not its own — `longjmp`, exceptions) are recorded as the bit where the thread's trace
//! stops being regenerable.
//! A `fork()`ed child writes its own file only when the name has `%p` (otherwise it would clobber the
//! parent's). In the child (a `pthread_atfork` handler) the records of the parent's other threads are dropped
//! (they never ran there) and the forking thread's stream goes on from the fork: its `REC_END` carries the
//! fork bit, so the reader counts only what the child ran (without `%p` the child writes nothing, and leaves a
//! `REC_UNTRACED_FORK` record in the parent's file instead). What the parent had written before the fork is not
//! written again: the child's file names the file that holds it (`REC_PARENT`), and the reader splices it in
//! (or reports the stream incomplete when that file is gone). With `%p` in the name a file is never
//! overwritten: when a file of that name exists (a reused pid), `NAME.1`, `NAME.2`, … is written instead.
//!
//! `PATHPROF_TRACE_MAX=BYTES` (a `K`, `M` or `G` suffix allowed) caps the data a process writes to its file:
//! a thread whose next record would pass it keeps what it wrote and is ended [`END_TRUNCATED`] (disk stays
//! bounded on long runs; the reader reports the prefix).
//!
//! With `PATHPROF_SIGNALS=1` a fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM) flushes every
//! thread's bits, flagged with the signal, before the signal takes its course (`signals`): the crashing
//! thread's trace is exact up to the crash. All entry points serialise on one spin lock, held with the thread's
//! signals blocked, and are not async-signal-safe, except the flush, which waits at most 2 s for the lock.
//!
//! The program's signal handlers (installed through the runtime's `sigaction`, `handlers`) run in *handler
//! streams* of their own, so that the stream they interrupt stays regenerable ([`handler_streams`]); so do the
//! user contexts a coroutine library switches between with `swapcontext` ([`context_streams`]).

use crate::sys::{self, Fd, MVec};
use crate::trace_ring::{Ring, SyncPoint};
use crate::{diag::pp_warn, path};
use core::ptr;
use core::sync::atomic::{compiler_fence, AtomicBool, AtomicU32, AtomicU8, AtomicUsize, Ordering};
use pathprof_format::trace_layout::*;

mod context_index;
mod context_streams;
mod handler_streams;
pub(crate) use handler_streams::with_handler_stream;

/// Words of a thread's buffer (512 KiB): one `REC_DATA` record.
const BUF_WORDS: usize = 1 << 16;
/// Words in front of the buffer for the record header and the first word's index (one `write` per record).
const HEAD_WORDS: usize = (RECORD_HEADER + 8) / 8;

/// One traced thread's stream, or a handler stream (in an anonymous mapping).
#[repr(C)]
struct Thread {
    /// The stream's trace-state words: the thread's thread-local words, or [`Thread::parked`] while another
    /// stream has those (a handler stream between handlers, a thread while a handler runs on it).
    tls: *mut u64,
    next: *mut Thread,
    serial: u32,
    /// The thread's id in the operating system.
    tid: u32,
    ended: bool,
    /// Absolute index (in the thread's stream) of `buf[0]`.
    buf_first: u64,
    /// Absolute index after the last word written to the file.
    written_hi: u64,
    /// Full words handed over so far.
    spilled: u64,
    /// Where the trace stops being regenerable (`u64::MAX`: nowhere).
    stop: u64,
    /// In a `fork()`ed child: the bit where the child's own part begins (`u64::MAX`: not a fork child).
    fork_at: u64,
    /// Words written to the file; the cap was reached (later words are dropped).
    kept: u64,
    truncated: bool,
    /// The shadow stack (`TLS_SHADOW`), or null.
    shadow: *mut u64,
    /// The thread's trace is stopped (`__pathprof_trace_stop`, or not started yet in region mode): its words
    /// are counted, not kept. The stop's bit and its partial word.
    off: bool,
    stop_bit: u64,
    stop_acc: u64,
    /// Sync records written or recorded (the stream holds only windows: `END_WINDOW`).
    window: bool,
    syncs: u64,
    ring: Ring,
    /// What the thread is doing inside the runtime ([`IDLE`], [`SPILLING`], [`BUSY`]): a signal handler that
    /// interrupts it there finds out, so that its words never touch a record in the middle of an update.
    /// Written and read only by the thread itself (and its handlers), volatile.
    busy: u8,
    /// While [`SPILLING`]: the bit where the word being spilled starts plus the bits before its new ones
    /// (the thread's position when the spill began).
    spill_bit: u64,
    /// The stream of the signal handlers run on this one ([`handler_streams`]), made at the first; null before.
    handlers: *mut Thread,
    /// For a handler stream: the stream its handlers interrupt (null for a thread's own stream), and how many
    /// handler streams deep it is.
    host: *mut Thread,
    depth: u32,
    /// A handler the trampoline ran on this stream has not returned to it (yet: it runs, or it left through
    /// `siglongjmp` or `exit`); the stream's words are parked in the meantime.
    in_handler: bool,
    /// The handler stream's `REC_HANDLERS` record is in the file.
    announced: bool,
    /// While [`Thread::in_handler`]: the interrupted code's stack pointer (0: unknown) and whether it was on
    /// the signal stack — a `longjmp` that lands at or above it, on the same stack, left the handler.
    parked_sp: usize,
    parked_on_alt: bool,
    /// The user context the stream is parked in (`swapcontext` saved it there: [`context_streams`]); 0 while
    /// it runs, or for a stream that no context holds.
    parked_ctx: usize,
    /// The stream's trace-state words while another stream has the thread's ([`handler_streams`]): [`Thread::tls`]
    /// points here then.
    parked: [u64; TLS_WORDS],
    /// The entry cache instrumented code reaches through `TLS_CACHE` (none with a flight recorder, whose
    /// file keeps only the oldest surviving sync point: a reader could not empty its copy where this one was).
    cache: [u32; ENTRY_CACHE_SLOTS],
    fill: usize,
    head: [u64; HEAD_WORDS],
    buf: [u64; BUF_WORDS],
}

/// The runtime's trace state, behind [`LOCK`].
struct State {
    modules: *mut TraceModuleDesc,
    threads: *mut Thread,
    next_base: u32,
    /// The file, opened by this pid.
    fd: Option<(Fd, u32)>,
    /// This runtime copy's number in the file.
    copy: u32,
    /// The file's name (NUL-terminated) and identity (device, inode), to tell when the program closed the
    /// descriptor or reused its number ([`keep_file`]).
    name: MVec<u8>,
    file: (u64, u64),
    /// Writing failed or is refused (a fork child without `%p`): drop everything.
    disabled: bool,
    /// More functions than trace ids: every thread's trace is marked abnormal from bit 0.
    overflow: bool,
    /// The exit flush ran.
    closed: bool,
    /// `exit` ran the `atexit` handlers: the threads end at the last module's unregistration ([`exit_handler`]).
    exiting: bool,
    /// The modules write naive items (`DESC_NAIVE`); the first registration decides.
    naive: Option<bool>,
    /// Data bytes this process wrote to its file, and the cap (`PATHPROF_TRACE_MAX`).
    data_bytes: u64,
    max_bytes: u64,
    key: libc::pthread_key_t,
    installed: bool,
    /// `PATHPROF_TRACE_RING` (bytes per thread; 0: no flight recorder).
    ring_bytes: u64,
    /// `PATHPROF_TRACE_REGION=1`: threads start stopped (only regions are traced).
    region: bool,
    /// A key whose value marks a thread that called `__pathprof_trace_start` before its first traced entry.
    early_key: libc::pthread_key_t,
    /// One descriptor held besides the file, so that a program has as many left as under the counting
    /// runtime (`fd_reserve`).
    spare: crate::fd_reserve::Reserve,
    /// The user contexts the runtime knows ([`context_streams`]): those a stream is parked in, and those
    /// `makecontext` made that no switch has reached yet.
    contexts: context_index::ContextIndex,
}

struct Global(core::cell::UnsafeCell<State>);
// SAFETY: only accessed under LOCK.
unsafe impl Sync for Global {}

static STATE: Global = Global(core::cell::UnsafeCell::new(State {
    modules: ptr::null_mut(),
    threads: ptr::null_mut(),
    next_base: 0,
    fd: None,
    copy: 0,
    name: MVec::new(),
    file: (0, 0),
    disabled: false,
    overflow: false,
    closed: false,
    exiting: false,
    naive: None,
    data_bytes: 0,
    max_bytes: u64::MAX,
    key: 0,
    installed: false,
    ring_bytes: 0,
    region: false,
    early_key: 0,
    spare: crate::fd_reserve::Reserve::new(),
    contexts: context_index::ContextIndex::new(),
}));
static LOCK: AtomicBool = AtomicBool::new(false);
/// The thread holding [`LOCK`] (`pthread_self`; 0: none), so that a signal handler of that thread never waits
/// for it.
static LOCK_OWNER: AtomicUsize = AtomicUsize::new(0);
static SERIAL: AtomicU32 = AtomicU32::new(0);
/// 1 + the thread-state key once [`install`]ed (0 before): a signal handler reads it without the lock.
static KEY: AtomicUsize = AtomicUsize::new(0);

/// The lock, held with every signal of the thread blocked: a signal handler then never finds its own thread
/// holding it, so it can trace into a handler stream of its own ([`handler_streams`]) instead of the
/// interrupted one (whose spill may be flushing under the lock). Signals wait until the guard goes. Not once
/// the program confined itself in a seccomp sandbox ([`CONFINED`]), where changing the mask is not allowed.
struct Guard {
    mask: Option<libc::sigset_t>,
}
impl Guard {
    fn state(&mut self) -> &mut State {
        // SAFETY: the lock is held for the guard's lifetime.
        unsafe { &mut *STATE.0.get() }
    }
}
impl Drop for Guard {
    fn drop(&mut self) {
        release_lock();
        if let Some(mask) = &self.mask {
            sys::set_signal_mask(mask);
        }
    }
}
fn lock() -> Guard {
    let mask = block_signals();
    take_lock();
    Guard { mask }
}

/// The program confined itself in a seccomp sandbox ([`confinement_flush`]): the runtime makes no more system
/// calls (not even to change a signal mask).
static CONFINED: AtomicBool = AtomicBool::new(false);

/// Blocks every signal unless [`CONFINED`]; the mask before.
fn block_signals() -> Option<libc::sigset_t> {
    (!CONFINED.load(Ordering::Acquire)).then(sys::block_all_signals)
}

/// Spins until the calling thread holds the lock (without a guard: the fork handlers hold it across `fork`).
fn take_lock() {
    while LOCK.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        // SAFETY: no preconditions.
        unsafe { libc::sched_yield() };
    }
    note_lock_owner();
}

fn note_lock_owner() {
    // SAFETY: no preconditions.
    LOCK_OWNER.store(unsafe { libc::pthread_self() } as usize, Ordering::Relaxed);
}

fn release_lock() {
    LOCK_OWNER.store(0, Ordering::Relaxed);
    LOCK.store(false, Ordering::Release);
}

/// Whether the calling thread holds the lock (a signal handler that interrupted it there).
fn lock_held_here() -> bool {
    // SAFETY: no preconditions.
    LOCK.load(Ordering::Acquire) && LOCK_OWNER.load(Ordering::Relaxed) == unsafe { libc::pthread_self() } as usize
}

/// Registers a trace-mode module: assigns its trace ids; writes its metadata if the file is open.
///
/// # Safety
/// `desc` must be null or a valid descriptor that stays valid until unregistered or the process exits.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_trace_register(desc: *mut TraceModuleDesc) {
    if desc.is_null() {
        return;
    }
    let mut g = lock();
    let st = g.state();
    install(st);
    // SAFETY: the caller passes a valid descriptor; only the runtime writes base, written and next.
    let d = unsafe { &mut *desc };
    if d.version != TRACE_VERSION {
        drop(g);
        pp_warn!("ignoring a trace-mode module built for another pathprof version; rebuild it");
        return;
    }
    if d.flags & DESC_REGISTERED != 0 {
        // A constructor run again (a call of a function the optimiser emptied runs on into whatever follows):
        // a second range of ids would split the module's functions, a second link would make the list a cycle.
        return;
    }
    let naive = d.flags & DESC_NAIVE != 0;
    if *st.naive.get_or_insert(naive) != naive {
        // Bit tracing and naive items in one thread's stream could not be told apart: trace nothing.
        st.disabled = true;
        drop(g);
        pp_warn!("trace-mode modules built with and without PATHPROF_TRACE_NAIVE in one process; no trace written");
        return;
    }
    match allocate_ids(st, d.num_functions) {
        Some(base) => d.base = base,
        None => {
            d.base = 0;
            st.overflow = true;
        }
    }
    d.next = st.modules;
    d.flags |= DESC_REGISTERED;
    st.modules = desc;
    if let Some((_, pid)) = &st.fd {
        if *pid == sys::pid() {
            write_module(st, desc);
        }
    }
}

/// Unregisters a module (an image going away): its metadata goes into the file first.
///
/// # Safety
/// `desc` must be null or a descriptor passed to [`__pathprof_trace_register`].
#[no_mangle]
pub unsafe extern "C" fn __pathprof_trace_unregister(desc: *mut TraceModuleDesc) {
    sys::on_own_stack(|| {
        if desc.is_null() {
            return;
        }
        let mut g = lock();
        let st = g.state();
        // SAFETY: registered descriptors are valid until here.
        let unwritten = || unsafe { (*desc).written } == 0;
        // `open` writes every listed module's metadata into a file it opens, this one's included.
        if unwritten() && open(st) && unwritten() {
            write_module(st, desc);
        }
        let mut at: *mut *mut TraceModuleDesc = &mut st.modules;
        // SAFETY: the list holds valid descriptors.
        unsafe {
            while !(*at).is_null() {
                if *at == desc {
                    *at = (*desc).next;
                    (*desc).flags &= !DESC_REGISTERED;
                    break;
                }
                at = &mut (**at).next;
            }
        }
        // At exit the pass's module destructors run last, after the program's own (see [`exit_handler`]).
        let last = st.exiting && st.modules.is_null();
        if last {
            end_every_thread(g);
        }
    })
}

/// [`Thread::busy`]: not inside the runtime.
const IDLE: u8 = 0;
/// [`Thread::busy`]: inside a spill (its position is [`Thread::spill_bit`]; the thread's counts and its state's
/// words may disagree until it ends).
const SPILLING: u8 = 1;
/// [`Thread::busy`]: inside another entry point that updates the record (a sync point, a region's start or stop).
const BUSY: u8 = 2;
/// [`Thread::busy`]: another thread's exit flush ended this thread's stream while it was still running, outside
/// the runtime ([`end_running`]): its later words are dropped and it never touches its record again.
const ENDED: u8 = 3;

/// [`TLS_THREAD`] while the thread's first entry registers it (the lock is held: a signal handler entering
/// instrumented code then must not take it).
const REGISTERING: u64 = 1;
/// [`TLS_THREAD`]: a signal handler entered instrumented code while the thread was registering; its bits
/// went into the thread's state, so the stream is abnormal from its start.
const REGISTERING_INTERRUPTED: u64 = 2;

/// The thread's record, if it has one (not while it registers).
///
/// # Safety
/// `tls` is the calling thread's trace state.
unsafe fn thread_record<'a>(tls: *mut u64) -> Option<&'a mut Thread> {
    // SAFETY: the state's thread word is 0, a registration marker or a live record of this thread; only this
    // thread (and the exit flush, under the lock) touch its record.
    let t = unsafe { ptr::read_volatile(tls.add(TLS_THREAD)) };
    if t <= REGISTERING_INTERRUPTED {
        None
    } else {
        Some(unsafe { &mut *(t as *mut Thread) })
    }
}

/// How many bits the thread's accumulator holds ([`TLS_ACC`]).
///
/// # Safety
/// `tls` is a live thread's trace state.
unsafe fn pending_bits(tls: *mut u64) -> u64 {
    // SAFETY: the caller's.
    acc_len(unsafe { ptr::read_volatile(tls.add(TLS_ACC)) })
}

/// [`Thread::busy`] as an atomic: the thread and its signal handlers change it, and another thread's exit flush
/// claims an idle thread's record through it ([`ENDED`]).
fn busy_cell(t: &Thread) -> &AtomicU8 {
    // SAFETY: a byte of a live record, accessed only through this view.
    unsafe { AtomicU8::from_ptr(ptr::addr_of!(t.busy).cast_mut()) }
}

fn set_busy(t: &mut Thread, what: u8) {
    compiler_fence(Ordering::SeqCst);
    busy_cell(t).store(what, Ordering::Release);
    compiler_fence(Ordering::SeqCst);
}

fn busy(t: &Thread) -> u8 {
    busy_cell(t).load(Ordering::Acquire)
}

/// The thread enters the runtime for `what` ([`SPILLING`], [`BUSY`]) if it is idle; false if another thread's
/// exit flush has ended its stream since it last looked ([`ENDED`]).
fn enter_runtime(t: &mut Thread, what: u8) -> bool {
    compiler_fence(Ordering::SeqCst);
    let entered = busy_cell(t).compare_exchange(IDLE, what, Ordering::AcqRel, Ordering::Acquire).is_ok();
    compiler_fence(Ordering::SeqCst);
    entered
}

/// A full word of the thread's bits (in the accumulator's order, first bit highest, as the file keeps it:
/// `trace_layout`, `REC_DATA`) and the accumulator after it (`acc`, [`TLS_ACC`]), which the runtime stores
/// before it returns: a signal handler that enters instrumented code at any point of a spill finds the thread's
/// position consistent ([`mark_abnormal`]), and words it spills itself while the thread is
/// inside the runtime are dropped (its entry made the trace abnormal there already), so that they never
/// interleave with the thread's own buffer updates or take the lock the thread may hold.
///
/// # Safety
/// `tls` is the calling thread's trace state.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_trace_spill_word(tls: *mut u64, word: u64, acc: u64) {
    // SAFETY: the caller's state.
    let Some(t) = (unsafe { thread_record(tls) }) else { return };
    if t.ended {
        return;
    }
    match busy(t) {
        IDLE => {}
        ENDED => {
            // SAFETY: the caller's state; the word goes nowhere (the stream has ended).
            unsafe { ptr::write_volatile(tls.add(TLS_ACC), acc) };
            return;
        }
        _ => {
            // A signal handler's word while its thread is inside the runtime.
            // SAFETY: the caller's state.
            unsafe { mark_abnormal(tls, t) };
            return;
        }
    }
    // SAFETY: the caller's state: its accumulator is still the one before this word.
    t.spill_bit = t.spilled * 64 + unsafe { pending_bits(tls) };
    if !enter_runtime(t, SPILLING) {
        // Another thread's exit flush ended the stream since: the word goes nowhere.
        // SAFETY: the caller's state.
        unsafe { ptr::write_volatile(tls.add(TLS_ACC), acc) };
        return;
    }
    if push_word(t, word) && !t.shadow.is_null() {
        // SAFETY: the thread's own state; a sync point is due at its next entry.
        unsafe { *tls.add(TLS_SHADOW) |= 1 };
    }
    if t.fill == BUF_WORDS {
        // The first full buffer also opens the file: on a stack of the runtime's own, as every write.
        sys::on_own_stack(|| flush_data(lock().state(), t));
    }
    // SAFETY: the caller's state.
    unsafe {
        ptr::write_volatile(tls.add(TLS_ACC), acc);
    }
    set_busy(t, IDLE);
}

/// An entry found the thread state even: a thread's first traced entry (registers it; returns the top-level
/// state 1) or an entry into a function body (records an abnormal transfer; returns an odd state).
///
/// # Safety
/// `tls` is the calling thread's trace state.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_trace_first(tls: *mut u64) -> u64 {
    // SAFETY: see above.
    let (thread, state) = unsafe { (ptr::read_volatile(tls.add(TLS_THREAD)), *tls.add(TLS_STATE)) };
    if thread == REGISTERING || thread == REGISTERING_INTERRUPTED {
        // A signal handler while its thread registers.
        // SAFETY: see above.
        unsafe { ptr::write_volatile(tls.add(TLS_THREAD), REGISTERING_INTERRUPTED) };
        return state | 1;
    }
    if let Some(t) = unsafe { thread_record(tls) } {
        // SAFETY: the caller's state.
        unsafe { mark_abnormal(tls, t) };
        return state | 1;
    }
    // SAFETY: see above. A new thread's accumulator: zero-initialised, or left by its ended stream.
    unsafe {
        ptr::write_volatile(tls.add(TLS_ACC), ACC_EMPTY);
        ptr::write_volatile(tls.add(TLS_THREAD), REGISTERING);
    }
    compiler_fence(Ordering::SeqCst);
    let t = register_thread(tls);
    compiler_fence(Ordering::SeqCst);
    // SAFETY: see above.
    unsafe {
        if !t.is_null() && ptr::read_volatile(tls.add(TLS_THREAD)) == REGISTERING_INTERRUPTED {
            (*t).stop = 0;
        }
        ptr::write_volatile(tls.add(TLS_THREAD), t as u64);
    }
    1
}

/// The thread's record, made and put on the list (null when nothing is traced).
///
/// # Safety
/// `tls` is the calling thread's trace state.
unsafe fn register_thread(tls: *mut u64) -> *mut Thread {
    let mut g = lock();
    let st = g.state();
    // SAFETY: a plain key read.
    let early = unsafe { !libc::pthread_getspecific(st.early_key).is_null() };
    // SAFETY: the caller's state.
    let t = unsafe { new_record(st, tls, early) };
    if !t.is_null() {
        // SAFETY: a plain key write.
        unsafe { libc::pthread_setspecific(st.key, tls as *const libc::c_void) };
    }
    t
}

/// A new stream's record, put on the list (null when nothing is traced): its shadow stack, entry cache, ring
/// and first window as the modes want, their addresses stored in the state words `words` — the thread's
/// (`tls`), or the record's own parked words for a handler stream (a null `tls`). `early`: the thread called
/// `__pathprof_trace_start` before (region mode).
///
/// # Safety
/// `tls` is null or the calling thread's trace state.
unsafe fn new_record(st: &mut State, tls: *mut u64, early: bool) -> *mut Thread {
    if st.closed || st.disabled {
        return ptr::null_mut();
    }
    let t = sys::map_anonymous(core::mem::size_of::<Thread>(), 0).cast::<Thread>();
    if t.is_null() {
        return t;
    }
    // SAFETY: fresh zeroed memory of the right size; fields set before use.
    unsafe {
        let words = if tls.is_null() { (*t).parked.as_mut_ptr() } else { tls };
        (*t).tls = words;
        (*t).serial = SERIAL.fetch_add(1, Ordering::Relaxed) + 1;
        (*t).tid = sys::tid();
        (*t).stop = if st.overflow { 0 } else { u64::MAX };
        (*t).fork_at = u64::MAX;
        if st.naive != Some(true) {
            (*t).shadow = map_shadow();
            *words.add(TLS_SHADOW) = (*t).shadow as u64;
        }
        if st.ring_bytes > 0 && !(*t).ring.allocate(st.ring_bytes) {
            pp_warn!("cannot map the flight recorder's ring; this thread is traced whole");
        }
        if st.naive != Some(true) && !(*t).ring.on() {
            (*t).cache.fill(u32::MAX);
            *words.add(TLS_CACHE) = (*t).cache.as_mut_ptr() as u64;
        }
        if st.region && !early {
            (*t).off = true;
        } else if (*t).ring.on() {
            // The thread's start: the top level, no activation yet.
            (*t).ring.record(SyncPoint { bit: 0, kind: SYNC_AT_SITE, state: 1, depth: 0, ..Default::default() }, |_| 0);
        } else if st.region {
            (*t).window = true;
            (*t).syncs = 1;
            write_sync(st, (*t).serial, 0, SYNC_AT_SITE, 1, 0, |_| 0);
        }
        (*t).next = st.threads;
        st.threads = t;
    }
    t
}

/// A `longjmp` came back to a `setjmp` (`symbols::TRACE_LANDING`).
///
/// # Safety
/// `tls` is the calling thread's trace state.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_trace_landing(tls: *mut u64, site: u64, body: u64, sp: u64, id: u64, from: u64) {
    // SAFETY (the block): the caller's.
    unsafe {
        let before = thread_record(tls).map(|t| t as *mut Thread);
        handler_streams::landing(tls, site, body, sp as usize);
        let Some(t) = thread_record(tls) else { return };
        // A handler left through `siglongjmp`: the thread goes on in a stream that starts at the landing.
        if before == Some(t as *mut Thread) && !lands_in(t, site, id, from) {
            mark_abnormal(tls, t);
        }
    }
}

/// Whether a `longjmp` from thread state `from` that came back to the `setjmp` call site `site` of function `id`
/// lands in an activation of `t`'s stream: the site's depth at most the depth it left, and the shadow stack's
/// live entry there that function's. A `longjmp` to another stack's frame — coroutines switched with
/// setjmp/longjmp (GNU Pth's sjlj machine contexts) — does not: its resync marker would fit none of the
/// reader's activations (a corrupt trace, the whole file refused), so the stream is abnormal there instead, and
/// reads back `incomplete`, exact up to the jump. (A frame of the same function at the same depth of another
/// stack is not told apart: the reader regenerates what the bits say.)
fn lands_in(t: &Thread, site: u64, id: u64, from: u64) -> bool {
    if t.shadow.is_null() {
        return true; // naive items describe themselves
    }
    let (depth, left) = ((site & 0xffff_ffff) >> 1, (from & 0xffff_ffff) >> 1);
    let id_mask = (1u64 << FUNC_ID_BITS) - 1;
    (1..=left).contains(&depth) && shadow_ok(t, depth) && shadow_entry_at(t.shadow, depth) & id_mask == id
}

/// A call site returned to a state not its own.
///
/// # Safety
/// `tls` is the calling thread's trace state.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_trace_abnormal(tls: *mut u64) {
    // SAFETY: see above.
    if let Some(t) = unsafe { thread_record(tls) } {
        // SAFETY: the caller's state.
        unsafe { mark_abnormal(tls, t) };
    }
}

/// Records the first abnormal transfer at the thread's current bit: its position when a spill began if it is
/// in one (a signal handler's entry; the spilled word is the thread's and stays), else its count of words and
/// its state's bits.
unsafe fn mark_abnormal(tls: *mut u64, t: &mut Thread) {
    // SAFETY: a field of a live record, which a signal handler may update too.
    if unsafe { ptr::read_volatile(&t.stop) } != u64::MAX {
        return;
    }
    let at = if busy(t) == SPILLING {
        t.spill_bit
    } else {
        // SAFETY: the caller's state.
        t.spilled * 64 + unsafe { pending_bits(tls) }
    };
    // SAFETY: as above.
    unsafe { ptr::write_volatile(&mut t.stop, at) };
}

fn install(st: &mut State) {
    if st.installed {
        return;
    }
    st.installed = true;
    sys::note_owner();
    crate::raw_fork::init();
    path::note_start_dir();
    // SAFETY: plain libc registration calls with valid function pointers.
    unsafe {
        libc::pthread_key_create(&mut st.key, Some(thread_exit));
        KEY.store(st.key as usize + 1, Ordering::Release);
        libc::atexit(exit_handler);
        libc::pthread_atfork(Some(fork_prepare), Some(fork_parent), Some(fork_child));
        sys::at_quick_exit(quick_exit_handler);
    }
    if let Some(max) = sys::env(c"PATHPROF_TRACE_MAX").and_then(parse_size) {
        st.max_bytes = max;
    }
    match sys::env(c"PATHPROF_TRACE_RING") {
        Some(v) if !v.is_empty() => match parse_size(v) {
            Some(n) => st.ring_bytes = n.max(512),
            None => pp_warn!("PATHPROF_TRACE_RING is not a size (N, NK, NM or NG bytes); traced whole"),
        },
        _ => {}
    }
    st.region = sys::env(c"PATHPROF_TRACE_REGION").is_some_and(|v| v == b"1");
    // SAFETY: a plain key without destructor.
    unsafe { libc::pthread_key_create(&mut st.early_key, None) };
    if sys::env(c"PATHPROF_SIGNALS").is_some_and(|v| v != b"0") {
        crate::pin_image(); // the handler may run this image's code at any time
        crate::signals::install();
    }
}

/// `N`, `NK`, `NM` or `NG` bytes.
fn parse_size(v: &[u8]) -> Option<u64> {
    let (&last, init) = v.split_last()?;
    let (digits, unit) = match last {
        b'K' | b'k' => (init, 1u64 << 10),
        b'M' | b'm' => (init, 1 << 20),
        b'G' | b'g' => (init, 1 << 30),
        _ => (v, 1),
    };
    if digits.is_empty() {
        return None;
    }
    let mut n = 0u64;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    n.checked_mul(unit)
}

/// Before a fork the C library runs no handlers for (`_Fork`, a `clone` without `CLONE_VM`; see `raw_fork`):
/// what `fork_prepare` does, when trace mode runs in this copy. Whether it did: then the parent must call
/// [`parent_after_raw_fork`] and the child [`child_after_raw_fork`].
pub(crate) fn before_raw_fork() -> bool {
    // Held across the fork, as `fork_prepare` holds it; released by `fork_parent`, reset by `fork_child`.
    take_lock();
    // SAFETY: the lock is held.
    let installed = unsafe { (*STATE.0.get()).installed };
    if !installed {
        release_lock();
    }
    installed
}

/// In the parent, after a fork [`before_raw_fork`] prepared (also when it failed).
pub(crate) fn parent_after_raw_fork() {
    // SAFETY: the lock is held since `before_raw_fork`.
    unsafe { fork_parent() }
}

/// In the single-threaded child of a fork [`before_raw_fork`] prepared.
pub(crate) fn child_after_raw_fork() {
    // SAFETY: the lock is held since `before_raw_fork` (copied into the child), which has one thread.
    unsafe { fork_child() }
}

/// Before `fork()`: holds the lock, so the child never inherits it held by a thread it does not have.
unsafe extern "C" fn fork_prepare() {
    take_lock();
}

/// After `fork()`, in the parent.
unsafe extern "C" fn fork_parent() {
    release_lock();
}

/// After `fork()`, in the child (single-threaded): drops the records of the parent's other threads and marks
/// where the forking thread's own part begins.
unsafe extern "C" fn fork_child() {
    // SAFETY: the lock is held since fork_prepare; the child has one thread.
    let st = unsafe { &mut *STATE.0.get() };
    let me = calling_tls(st);
    st.data_bytes = 0; // the child writes its own file
    sys::note_owner();
    // Nor is any module's metadata in that file yet: a child that opens it only at its end, when the module
    // destructors have unlisted their modules, must still write them (it wrote none: "unknown function").
    let mut d = st.modules;
    while !d.is_null() {
        // SAFETY: listed descriptors are valid.
        unsafe {
            (*d).written = 0;
            d = (*d).next;
        }
    }
    // The forking thread's streams go on in the child: the one its words are in (a handler stream when it
    // forked in a signal handler) and the streams whose handlers that one interrupts; the rest never ran here.
    let mut active = st.threads;
    // SAFETY (both loops): records on the list are live mappings (copied into the child).
    unsafe {
        while !active.is_null() && ((*active).tls != me || (*active).ended) {
            active = (*active).next;
        }
        if !active.is_null() {
            (*active).handlers = ptr::null_mut();
        }
    }
    let mut t = st.threads;
    while !t.is_null() {
        unsafe {
            let next = (*t).next;
            // A stream parked in a user context goes on too: the child may switch to that context.
            if handler_streams::hosts_or_is(active, t) || (*t).parked_ctx != 0 {
                (*t).fork_at = (*t).spilled * 64 + pending_bits((*t).tls);
                // The child's own thread: from here on the stream is its thread's, not the parent's.
                (*t).tid = sys::tid();
                (*t).announced = false;
            } else {
                unlink(st, t);
                free_thread(t);
            }
            t = next;
        }
    }
    release_lock();
}

/// The fatal-signal flush (`PATHPROF_SIGNALS=1`, called by `signals` before the signal takes its course):
/// every thread's bits so far, flagged [`END_SIGNAL`] with `sig`. Waits at most 2 s for the lock (a thread in
/// the middle of a write); never writes twice.
pub(crate) fn signal_flush(sig: libc::c_int) {
    sys::on_own_stack(|| {
        let Some(mut g) = lock_within_2s() else { return };
        let st = g.state();
        if st.closed || (st.threads.is_null() && st.modules.is_null()) {
            return;
        }
        open(st);
        end_all(st, END_SIGNAL | ((sig as u64 & 0xff) << 32));
        st.closed = true;
    })
}

/// Right before the program confines itself in a seccomp sandbox (see [`crate::sandbox`]): every thread's bits
/// so far, ended with [`END_CONFINED`]; then the trace is closed, so that nothing after makes a system call.
pub(crate) fn confinement_flush() {
    sys::on_own_stack(|| {
        let mut g = lock();
        // From here on (the guard's mask goes back before the sandbox starts).
        CONFINED.store(true, Ordering::Release);
        let st = g.state();
        if st.closed || (st.threads.is_null() && st.modules.is_null()) {
            st.closed = true;
            return;
        }
        open(st);
        end_all(st, END_CONFINED);
        st.closed = true;
    })
}

/// The lock, waiting at most 2 s for it (the flushes that may run in a signal handler, which may have
/// interrupted this thread in the middle of a write).
fn lock_within_2s() -> Option<Guard> {
    let mask = block_signals();
    let deadline = crate::signals::now_ns().saturating_add(2_000_000_000);
    while LOCK.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        if crate::signals::now_ns() > deadline {
            if let Some(mask) = &mask {
                sys::set_signal_mask(mask);
            }
            return None;
        }
        // SAFETY: no preconditions.
        unsafe { libc::sched_yield() };
    }
    note_lock_owner();
    Some(Guard { mask })
}

/// The process image ends without `atexit` handlers (`_exit`, `_Exit`): every thread's end, as at exit.
pub(crate) fn image_end() {
    sys::on_own_stack(|| {
        if let Some(g) = lock_within_2s() {
            end_every_thread(g);
        }
    })
}

/// Before an `exec`, which may fail and return: every thread's end so far, flagged [`END_AT_EXEC`] (with
/// [`END_AT_EXIT`]: for a reader the process ended there), and nothing closes. If the `exec` fails the streams
/// go on, and each one's next end replaces this provisional one (the reader takes the last). Flight
/// recorders keep their window for their real end: an `exec` loses it.
pub(crate) fn exec_flush() {
    sys::on_own_stack(|| {
        let Some(mut g) = lock_within_2s() else { return };
        let st = g.state();
        if st.closed || st.threads.is_null() {
            return;
        }
        open(st);
        each_thread(st, |st, t| {
            if !t.ring.on() {
                // SAFETY: the thread's own record and state.
                unsafe { finish(st, t, END_AT_EXIT | END_AT_EXEC) };
            }
        });
    })
}

/// The thread-exit destructor: the thread's last bits and its end.
unsafe extern "C" fn thread_exit(tls: *mut libc::c_void) {
    sys::on_own_stack(|| {
        let tls = tls as *mut u64;
        let mut g = lock();
        let st = g.state();
        // SAFETY: the key holds the exiting thread's state.
        let t = unsafe { *tls.add(TLS_THREAD) } as *mut Thread;
        if t.is_null() || st.closed {
            return;
        }
        // SAFETY: this thread's live records: its own stream and its handler streams.
        unsafe {
            handler_streams::end_and_free(st, handler_streams::own_stream(t));
            *tls.add(TLS_THREAD) = 0;
            *tls.add(TLS_STATE) = 0;
            *tls.add(TLS_ACC) = 0;
            *tls.add(TLS_SHADOW) = 0;
        }
    })
}

/// At `exit`, after the program's own `atexit` handlers: every thread's full words go out, and the threads go
/// on. Their ends wait for the last module's destructor ([`__pathprof_trace_unregister`]): the program's
/// destructors (`__attribute__((destructor))`, `.fini_array`) run after the `atexit` handlers and may run traced
/// code, and the pass's destructors (priority 1) run after them. Ended here, a thread read back complete
/// without its destructors' activations. Should the image end first (`_exit` in a destructor, a fatal signal),
/// those paths end the threads, as anywhere else.
extern "C" fn exit_handler() {
    sys::on_own_stack(|| {
        let mut g = lock();
        let st = g.state();
        if st.closed {
            return;
        }
        if st.modules.is_null() {
            return end_every_thread(g);
        }
        st.exiting = true;
        // Only the calling thread's: another thread may be filling its buffer right now (a flush that read the
        // buffer while its thread refilled it wrote one word under the next one's index and lost the first —
        // liburcu's fork test, whose children exit while their call_rcu threads run).
        let me = calling_tls(st);
        each_thread(st, |st, t| {
            if t.tls == me && !t.ring.on() && t.fill > 0 {
                flush_data(st, t);
            }
        });
    })
}

/// At `quick_exit`, after the program's own `at_quick_exit` handlers: no destructor runs after it, so every
/// thread ends here.
extern "C" fn quick_exit_handler() {
    sys::on_own_stack(|| {
        end_every_thread(lock());
    })
}

/// Calls `f` with every thread record on the list; `f` unlinks none.
fn each_thread(st: &mut State, mut f: impl FnMut(&mut State, &mut Thread)) {
    let mut t = st.threads;
    while !t.is_null() {
        // SAFETY: records on the list are live (their threads have not exited: `thread_exit` unlinks its record
        // under the lock), each its own allocation, apart from the state.
        unsafe {
            let next = (*t).next;
            f(st, &mut *t);
            t = next;
        }
    }
}

/// Writes every thread's end ([`END_AT_EXIT`] unless at its top level) and closes the file.
fn end_every_thread(mut g: Guard) {
    let st = g.state();
    if st.closed {
        return;
    }
    if st.threads.is_null() && st.modules.is_null() {
        st.closed = true;
        return;
    }
    open(st);
    end_all(st, END_AT_EXIT);
    st.closed = true;
    if let Some((fd, _)) = st.fd.take() {
        release(fd, st.file);
    }
}

/// Ends every thread's stream for the end of the process (`why`: exit, a fatal signal, a sandbox): the calling
/// thread's as it stands, every other one — which may still be running — with [`end_running`]. (A fatal
/// signal's flush ended running threads' streams the way the exit did: 73 of 300 crashes of a program whose
/// other threads spin gave traces the reader refused.)
fn end_all(st: &mut State, why: u64) {
    let me = calling_tls(st);
    each_thread(st, |st, t| {
        if t.tls == me || t.ended {
            // SAFETY (finish): the calling thread's own record and state.
            unsafe { finish(st, t, why) }
        } else {
            end_running(st, t, why)
        }
    });
}

/// The calling thread's trace-state words (null if it never ran traced code).
fn calling_tls(st: &State) -> *mut u64 {
    if st.installed {
        // SAFETY: a plain key read.
        (unsafe { libc::pthread_getspecific(st.key) }) as *mut u64
    } else {
        ptr::null_mut()
    }
}

/// Ends the stream of a thread other than the caller, which may still be running (a process ends under its
/// running threads). Outside the runtime, the thread is claimed ([`ENDED`]): it never touches its record again,
/// so its buffer or ring is written as it stands. Its state words keep changing while it runs: read before and
/// after the claim, they are used when they did not change (a thread blocked or idle ends exactly where it is,
/// as before); otherwise the stream ends at its last full word, an exact prefix of what it ran. Inside the
/// runtime (a spill or a sync point, perhaps waiting for the lock the caller holds), its buffer is being
/// changed: the stream ends with the words already in the file.
fn end_running(st: &mut State, t: &mut Thread, why: u64) {
    if t.off {
        // Stopped (`__pathprof_trace_stop`): nothing it does is kept; the stop is its end.
        // SAFETY: a stopped thread's kept state changes only under the lock, which the caller holds.
        return unsafe { finish(st, t, why) };
    }
    // SAFETY: the stream's state words (the thread's, or parked in the record while a handler stream has the
    // thread's: the pointer is part of the snapshot), live while its record is listed; plain aligned reads.
    let snapshot = |t: &Thread| unsafe {
        let tls = ptr::read_volatile(&t.tls);
        let words = (ptr::read_volatile(tls.add(TLS_STATE)), ptr::read_volatile(tls.add(TLS_ACC)));
        (ptr::read_volatile(&t.spilled), tls, words)
    };
    let before = snapshot(t);
    if busy_cell(t).compare_exchange(IDLE, ENDED, Ordering::AcqRel, Ordering::Acquire).is_err() {
        let flags = why | if t.stop != u64::MAX { END_ABNORMAL } else { 0 };
        write_end(st, t, t.written_hi * 64, 0, flags);
        t.ended = true;
        return;
    }
    let (_, _, (state, acc)) = before;
    // Still running (its words changed): its stream up to its last full word, not at its top level.
    let words = if snapshot(t) == before { (state, acc) } else { (0, ACC_EMPTY) };
    // SAFETY: the record is the caller's now ([`ENDED`]); the state words are given.
    unsafe { finish_with(st, t, why, Some(words)) };
}

/// Writes a thread's `REC_END`: `total` bits, the partial word `partial`, `flags`.
fn write_end(st: &mut State, t: &mut Thread, total: u64, partial: u64, flags: u64) {
    if !open(st) {
        return;
    }
    handler_streams::announce(st, t);
    let end = [total, partial, flags, t.stop, t.fork_at, u64::from(t.tid)];
    let head = record_header(REC_END, sys::pid(), st.copy, t.serial, END_PAYLOAD as u64);
    let mut rec = [0u8; RECORD_HEADER + END_PAYLOAD];
    let (h, body) = rec.split_at_mut(RECORD_HEADER);
    h.copy_from_slice(&head);
    for (chunk, w) in body.chunks_exact_mut(8).zip(end) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    write(st, &rec);
}

/// Ends a thread's stream: its final `Done` if at its top level (bit tracing), the remaining words (a flight
/// recorder's window), and `REC_END`; `why` are the flags of an end that is not the thread's own (process
/// exit, a fatal signal). With [`END_AT_EXEC`] the end is provisional: no final `Done`, and the stream goes on.
unsafe fn finish(st: &mut State, t: &mut Thread, why: u64) {
    // SAFETY: the caller's.
    unsafe { finish_with(st, t, why, None) }
}

/// [`finish`], with the thread's state and accumulator words given ([`end_running`]) or read (`None`).
unsafe fn finish_with(st: &mut State, t: &mut Thread, why: u64, words: Option<(u64, u64)>) {
    if t.ended {
        return;
    }
    let provisional = why & END_AT_EXEC != 0;
    // A fatal signal on the thread inside a spill: its counts and state may disagree; the stream ends with the
    // words stored, abnormal where the spill began.
    let interrupted = busy(t) == SPILLING && !t.off;
    if interrupted {
        t.stop = t.stop.min(t.spill_bit);
    }
    let tls = t.tls;
    // SAFETY: the thread's state (its own, or a live thread's at an exec); none read when `words` are given.
    let (state, raw) = words.unwrap_or_else(|| unsafe { (*tls.add(TLS_STATE), ptr::read_volatile(tls.add(TLS_ACC))) });
    let (mut acc, mut n) = acc_bits(raw);
    let mut flags = 0;
    if t.off {
        // A stopped stream's state still follows the thread: one at its top level was not suspended inside a
        // context (a context's function that returned, in region mode).
        let top = state & 0xffff_ffff == 1;
        flags |= END_STOPPED | if top { why & !END_SUSPENDED } else { why };
    } else if state & 0xffff_ffff == 1 && !provisional && !interrupted {
        if st.naive != Some(true) {
            // Done of the top level: one 0 bit (a full word goes in the accumulator's order).
            n += 1;
            if n == 64 {
                push_word(t, acc.reverse_bits());
                if t.fill == BUF_WORDS {
                    flush_data(st, t);
                }
                acc = 0;
                n = 0;
            }
        }
        flags |= END_COMPLETE;
    } else {
        flags |= why;
        if why & END_SIGNAL != 0 && state != 0 && state & 1 == 0 {
            flags |= END_IN_BODY;
        }
    }
    if t.fork_at != u64::MAX {
        flags |= END_FORK_CHILD;
    }
    if t.truncated {
        flags = (flags & !END_COMPLETE) | END_TRUNCATED;
    }
    if st.overflow {
        t.stop = 0;
    }
    if t.in_handler && !t.off && flags & END_COMPLETE == 0 {
        // A handler ran on the stream and never came back to it (`siglongjmp` out of it, or `exit` in it): the
        // thread left the stream where it parked it.
        t.stop = t.stop.min(t.spilled * 64 + n);
    }
    if t.parked_ctx != 0 && flags & END_COMPLETE == 0 {
        // Parked in a user context when the process ended: suspended there, exact up to it.
        flags |= END_SUSPENDED;
    }
    if t.stop != u64::MAX {
        flags |= END_ABNORMAL;
    }
    if t.window || t.ring.on() {
        flags |= END_WINDOW;
    }
    let (total, partial) = if t.off {
        (t.stop_bit, t.stop_acc)
    } else if interrupted {
        (stored_words(t) * 64, 0)
    } else {
        (t.spilled * 64 + n, acc)
    };
    if t.ring.on() {
        flags |= END_RING;
        dump_ring(st, t, total);
    } else {
        flush_data(st, t);
    }
    if t.truncated {
        write_end(st, t, t.written_hi * 64, 0, flags);
    } else {
        write_end(st, t, total, partial, flags);
    }
    t.ended = !provisional;
}

/// Words of the thread's stream stored so far (in the ring, the buffer or the file).
fn stored_words(t: &Thread) -> u64 {
    if t.ring.on() {
        t.ring.end()
    } else if t.fill > 0 {
        t.buf_first + t.fill as u64
    } else {
        t.written_hi
    }
}

/// Writes a flight recorder's window: its oldest surviving sync point (a naive trace's items need none: the
/// window's first word), then the words from there, through the thread's buffer.
fn dump_ring(st: &mut State, t: &mut Thread, total: u64) {
    let p = if st.naive == Some(true) {
        Some(SyncPoint { bit: t.ring.first() * 64, kind: SYNC_AT_SITE, state: 0, depth: 0, ..Default::default() })
    } else {
        t.ring.oldest(total)
    };
    let Some(p) = p else { return };
    let ring = &t.ring;
    write_sync(st, t.serial, p.bit, p.kind, p.state, p.depth, |k| ring.entry(&p, k));
    let mut i = p.bit / 64;
    let end = t.ring.end();
    while i < end {
        let n = ((end - i) as usize).min(BUF_WORDS);
        t.buf_first = i;
        for (k, slot) in t.buf.iter_mut().take(n).enumerate() {
            *slot = t.ring.word(i + k as u64);
        }
        t.fill = n;
        flush_data(st, t);
        i += n as u64;
    }
}

/// Writes a `REC_SYNC` record with the shadow entries `entry(1..=depth)`.
fn write_sync(st: &mut State, serial: u32, bit: u64, kind: u64, state: u64, depth: u64, entry: impl Fn(u64) -> u64) {
    if !open(st) {
        return;
    }
    let head = record_header(REC_SYNC, sys::pid(), st.copy, serial, 32 + 8 * depth);
    let mut rec = MVec::new();
    let mut built = rec.extend_from_slice(&head);
    for w in [bit, kind, state, depth].into_iter().chain((1..=depth).map(entry)) {
        built = built.and_then(|_| rec.extend_from_slice(&w.to_le_bytes()));
    }
    if built.is_ok() {
        write(st, rec.as_slice());
    }
}

/// Whether the shadow entries of depths `1..=depth` are the live activations' (none overwritten by an
/// activation `SHADOW_ENTRIES` deeper).
fn shadow_ok(t: &Thread, depth: u64) -> bool {
    !t.shadow.is_null() && (1..=depth).all(|k| shadow_entry_at(t.shadow, k) & 0xfff0_0000 == (2 * k) & 0xfff0_0000)
}

/// Shadow entry of the activation at depth `k` (index `2k`: instrumented code indexes by its body state).
fn shadow_entry_at(shadow: *mut u64, k: u64) -> u64 {
    // SAFETY: masked into the shadow stack's mapping (callers checked it is not null).
    unsafe { *shadow.add(((2 * k) & (SHADOW_ENTRIES - 1)) as usize) }
}

/// An entry found a sync point wanted (`TLS_SHADOW` bit 0, set every chunk of a flight recorder's ring): the
/// bit right after its `Enter` marker and the thread's shadow stack go into the ring's sync points.
///
/// # Safety
/// `tls` is the calling thread's trace state.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_trace_sync(tls: *mut u64) {
    // SAFETY: the caller's state; only this thread writes its shadow word.
    unsafe { *tls.add(TLS_SHADOW) &= !1 };
    // SAFETY: the caller's state.
    let Some(t) = (unsafe { thread_record(tls) }) else { return };
    if t.off || t.ended || !t.ring.on() || busy(t) != IDLE {
        return;
    }
    // SAFETY: the caller's state.
    let (state, nacc) = unsafe { (*tls.add(TLS_STATE), pending_bits(tls)) };
    let depth = (state & 0xffff_ffff) >> 1;
    if !shadow_ok(t, depth) {
        return;
    }
    let p = SyncPoint { bit: t.spilled * 64 + nacc, kind: SYNC_AT_ENTRY, state, depth, ..Default::default() };
    let shadow = t.shadow;
    if !enter_runtime(t, BUSY) {
        return; // another thread's exit flush ended the stream
    }
    t.ring.record(p, |k| shadow_entry_at(shadow, k));
    set_busy(t, IDLE);
}

/// The calling thread's trace-state words (null before its first traced entry) and its record (null as well
/// then), for the region calls.
fn calling_thread(st: &State) -> (*mut u64, *mut Thread) {
    // SAFETY: the key holds the calling thread's trace state, or null.
    let tls = unsafe { libc::pthread_getspecific(st.key) } as *mut u64;
    // SAFETY: the calling thread's state.
    let t = if tls.is_null() { ptr::null_mut() } else { unsafe { *tls.add(TLS_THREAD) as *mut Thread } };
    (tls, t)
}

/// The calling thread's trace starts (again) here: a sync record (the bit, the thread's shadow stack) opens a
/// window. A no-op if it is running. Called before the thread's first traced entry, it makes the thread start
/// traced in region mode (`PATHPROF_TRACE_REGION=1`). Per-thread: other threads are not affected.
#[no_mangle]
pub extern "C" fn __pathprof_trace_start() {
    let mut g = lock();
    let st = g.state();
    if !st.installed || st.closed {
        return;
    }
    let (tls, t) = calling_thread(st);
    if t.is_null() {
        // SAFETY: a plain key; any non-null value marks the thread.
        unsafe { libc::pthread_setspecific(st.early_key, ptr::dangling::<libc::c_void>()) };
        return;
    }
    // SAFETY: the calling thread's live record.
    let t = unsafe { &mut *t };
    if !t.off || t.ended {
        return;
    }
    // SAFETY: the calling thread's state.
    let (state, nacc) = unsafe { (*tls.add(TLS_STATE), pending_bits(tls)) };
    let naive = st.naive == Some(true);
    let depth = if naive { 0 } else { (state & 0xffff_ffff) >> 1 };
    if !naive && !shadow_ok(t, depth) {
        drop(g);
        pp_warn!("__pathprof_trace_start: the call stack is too deep to record; the thread stays stopped");
        return;
    }
    let bit = t.spilled * 64 + nacc;
    let shadow = t.shadow;
    let entry = |k| shadow_entry_at(shadow, k);
    set_busy(t, BUSY);
    t.off = false;
    t.window = true;
    t.syncs += 1;
    if t.ring.on() {
        t.ring.restart(t.spilled);
        t.ring.record(SyncPoint { bit, kind: SYNC_AT_SITE, state, depth, ..Default::default() }, entry);
    } else {
        write_sync(st, t.serial, bit, SYNC_AT_SITE, state, depth, entry);
        // The window is read from here with an empty entry cache (`trace_layout`, TLS_CACHE).
        t.cache.fill(u32::MAX);
    }
    set_busy(t, IDLE);
}

/// The calling thread's trace stops here: nothing more is kept until the next [`__pathprof_trace_start`]. A
/// no-op if it is stopped. Per-thread.
#[no_mangle]
pub extern "C" fn __pathprof_trace_stop() {
    let mut g = lock();
    let st = g.state();
    if !st.installed || st.closed {
        return;
    }
    let (tls, t) = calling_thread(st);
    if t.is_null() {
        // SAFETY: a plain key: the thread no longer starts traced.
        unsafe { libc::pthread_setspecific(st.early_key, ptr::null()) };
        return;
    }
    // SAFETY: the calling thread's live record.
    let t = unsafe { &mut *t };
    if t.off || t.ended {
        return;
    }
    set_busy(t, BUSY);
    if !t.window && !t.ring.on() {
        // Traced from its start so far: that window opens at bit 0, at the top level.
        t.window = true;
        t.syncs += 1;
        write_sync(st, t.serial, 0, SYNC_AT_SITE, 1, 0, |_| 0);
    }
    // SAFETY: the calling thread's state.
    let (acc, nacc) = unsafe { acc_bits(ptr::read_volatile(tls.add(TLS_ACC))) };
    t.stop_bit = t.spilled * 64 + nacc;
    t.stop_acc = acc;
    if !t.ring.on() {
        flush_data(st, t);
        if open(st) {
            let mut rec = [0u8; RECORD_HEADER + 16];
            let (h, body) = rec.split_at_mut(RECORD_HEADER);
            h.copy_from_slice(&record_header(REC_STOP, sys::pid(), st.copy, t.serial, 16));
            for (chunk, w) in body.chunks_exact_mut(8).zip([t.stop_bit, t.stop_acc]) {
                chunk.copy_from_slice(&w.to_le_bytes());
            }
            write(st, &rec);
        }
    }
    t.off = true;
    set_busy(t, IDLE);
}

/// Appends the thread's next word (dropped while it is stopped; a flight recorder's ring, or the buffer the
/// caller flushes when full); true when a flight recorder wants a sync point.
fn push_word(t: &mut Thread, word: u64) -> bool {
    let index = t.spilled;
    t.spilled += 1;
    if t.off {
        return false;
    }
    if t.ring.on() {
        return t.ring.push(index, word);
    }
    if t.fill == 0 {
        t.buf_first = index;
    }
    if let Some(slot) = t.buf.get_mut(t.fill) {
        *slot = word;
        t.fill += 1;
    }
    false
}

/// Writes the thread's buffered words as one `REC_DATA` record.
fn flush_data(st: &mut State, t: &mut Thread) {
    if t.fill == 0 {
        return;
    }
    let n = t.fill;
    t.fill = 0;
    if t.truncated || st.data_bytes.saturating_add(8 * n as u64) > st.max_bytes {
        t.truncated = true;
        return;
    }
    if !open(st) {
        return;
    }
    handler_streams::announce(st, t);
    st.data_bytes += 8 * n as u64;
    t.kept += n as u64;
    t.written_hi = t.buf_first + n as u64;
    let head = record_header(REC_DATA, sys::pid(), st.copy, t.serial, 8 + 8 * n as u64);
    let first = t.buf_first.to_le_bytes();
    for (w, chunk) in t.head.iter_mut().zip(head.chunks_exact(8).chain(core::iter::once(&first[..]))) {
        let mut b = [0u8; 8];
        b.copy_from_slice(chunk);
        *w = u64::from_ne_bytes(b);
    }
    for w in t.buf.iter_mut().take(n) {
        *w = w.to_le();
    }
    // SAFETY: head and buf are contiguous in the record (repr(C), u64-aligned, no padding between arrays).
    let bytes = unsafe { core::slice::from_raw_parts(t.head.as_ptr() as *const u8, HEAD_WORDS * 8 + 8 * n) };
    write(st, bytes);
}

/// Maps a thread's shadow stack (reserved lazily: only the pages its depth touches are committed); null if
/// mapping fails (then no sync points: the flight recorder keeps nothing regenerable, regions cannot start).
fn map_shadow() -> *mut u64 {
    sys::map_anonymous((SHADOW_ENTRIES * 8) as usize, libc::MAP_NORESERVE).cast::<u64>()
}

/// Unmaps a thread's record, its ring and its shadow stack.
///
/// # Safety
/// `t` is an unlinked record nobody uses any more.
unsafe fn free_thread(t: *mut Thread) {
    // SAFETY: see above; the mappings were made by `first`.
    unsafe {
        (*t).ring.free();
        if !(*t).shadow.is_null() {
            libc::munmap((*t).shadow as *mut libc::c_void, (SHADOW_ENTRIES * 8) as usize);
        }
        libc::munmap(t as *mut libc::c_void, core::mem::size_of::<Thread>());
    }
}

/// Opens the trace file for this process if needed (joining the file another runtime copy of the process
/// opened; then this copy's image and every registered module); false if the trace cannot or must not be
/// written.
fn open(st: &mut State) -> bool {
    if st.disabled || st.closed {
        // Closed: nothing more is written (a thread still running after the exit flush ended its stream).
        return false;
    }
    let pid = sys::pid();
    if let Some((_, p)) = &st.fd {
        if *p == pid {
            return true; // whether the descriptor is still the file: `keep_file`, before it is used
        }
    }
    let pattern = path::trace_pattern();
    let per_process = pattern.windows(2).any(|w| w == b"%p");
    if st.fd.is_some() && !per_process {
        // A fork child without %p would write over its parent's trace: it writes none, and says so there.
        st.disabled = true;
        note_untraced_fork(st);
        return false;
    }
    let mut host = [0u8; 256];
    let tmpdir = sys::env(c"TMPDIR").unwrap_or(b"/tmp");
    let vars = path::Vars { pid, host: path::hostname(&mut host), tmpdir, signature: 0, start_dir: path::start_dir() };
    let mut name = MVec::new();
    let joined = path::expand(pattern, &vars, &mut name).and_then(|_| join(&mut name, per_process, st.next_base));
    let (fd, copy, next_id) = match joined {
        Ok(v) => v,
        Err(e) => {
            st.disabled = true;
            pp_warn!("cannot write the trace file (errno ", crate::diag::Dec(e.0 as u64), "); no trace written");
            return false;
        }
    };
    let previous = core::mem::replace(&mut st.file, fd.identity());
    let inherited = st.fd.replace((fd, pid));
    let parent_name = core::mem::replace(&mut st.name, name);
    let parent_copy = core::mem::replace(&mut st.copy, copy);
    st.next_base = st.next_base.max(next_id);
    st.spare.hold(1);
    write_image(st);
    if let Some((old, parent_pid)) = inherited {
        // The file of the process this one was forked from (still its file unless the program reused the
        // descriptor): it holds the words this copy's threads inherited already written.
        write_parent(st, parent_pid, parent_copy, parent_name.as_slice());
        release(old, previous);
    }
    let mut d = st.modules;
    while !d.is_null() {
        write_module(st, d);
        // SAFETY: listed descriptors are valid.
        d = unsafe { (*d).next };
    }
    !st.disabled
}

/// A fork child that writes no trace (`PATHPROF_TRACE` without `%p`) appends a `REC_UNTRACED_FORK` record to the
/// file it inherited, so that the parent's trace says which processes ran traced code in no trace. Through a
/// descriptor of its own (the inherited one shares its flags with the parent's), and only to that same file.
fn note_untraced_fork(st: &State) {
    let Ok(fd) = Fd::open(st.name.as_slice(), libc::O_WRONLY | libc::O_APPEND, 0) else { return };
    if fd.identity() == st.file {
        let _ = fd.write_all(&record_header(REC_UNTRACED_FORK, sys::pid(), st.copy, 0, 0));
    }
    let _ = fd.close();
}

/// Opens `name` (append mode) and, under `flock`, joins the file another runtime copy of this process started
/// (the next copy number; the header's next trace id raised to `ids_used`, the ids this copy holds) or starts
/// it (copy 0). A file another process is still writing (its copies hold a POSIX read lock on the header's
/// first byte, which the process's own copies never conflict with) is passed over for `name.1`, `name.2`, …,
/// and so is, with a per-process name (`%p`: never overwrite an earlier process's file), any file of another
/// process; a file an ended process left is truncated. `name` ends up holding the name opened. Returns the
/// descriptor, the copy number and the header's next trace id.
fn join(name: &mut MVec<u8>, per_process: bool, ids_used: u32) -> Result<(Fd, u32, u32), sys::Errno> {
    let me = FileHeader { copies: 1, next_id: ids_used, ..this_process() };
    // The name ends in its NUL (`path::expand`): suffixes go before it.
    let base = name.len().saturating_sub(1);
    let mut n = 0u32;
    loop {
        let fd = Fd::open(name.as_slice(), libc::O_RDWR | libc::O_CREAT | libc::O_APPEND, 0o666)?.out_of_the_way();
        // A file system without locks: copies that open at the same moment may both start the file.
        let _ = fd.flock(libc::LOCK_EX);
        let outcome = join_locked(&fd, &me, per_process);
        let _ = fd.flock(libc::LOCK_UN);
        match outcome? {
            Some((copy, next_id)) => return Ok((fd, copy, next_id)),
            None if n < 10_000 => {
                n += 1;
                name.truncate(base);
                name.push(b'.')?;
                name.extend_from_slice(sys::decimal(u64::from(n), &mut [0; 20]))?;
                name.push(0)?;
            }
            None => return Err(sys::Errno(libc::EEXIST)),
        }
    }
}

/// [`join`]'s step under the lock: `Some((copy, next id))`, or `None` for a per-process name another process
/// holds.
fn join_locked(fd: &Fd, me: &FileHeader, per_process: bool) -> Result<Option<(u32, u32)>, sys::Errno> {
    if let Some(h) = own_header(fd) {
        let joined = FileHeader { copies: h.copies.saturating_add(1), next_id: h.next_id.max(me.next_id), ..h };
        rewrite_header(fd, &joined)?;
        hold_for_process(fd);
        return Ok(Some((h.copies, joined.next_id)));
    }
    let size = fd.stat()?.st_size as u64;
    if size > 0 && (per_process || held_by_another_process(fd)) {
        return Ok(None);
    }
    if size > 0 {
        // SAFETY: valid fd.
        if unsafe { libc::ftruncate(fd.raw(), 0) } != 0 {
            return Err(sys::Errno::last());
        }
    }
    fd.write_all(&me.encode())?;
    hold_for_process(fd);
    Ok(Some((0, me.next_id)))
}

/// The first byte's POSIX read lock: tells other processes this one is writing the file. POSIX locks belong to
/// the process, so its other runtime copies never conflict with it; the kernel drops it when the process ends
/// or execs (the descriptor is close-on-exec), or when a copy closes its descriptor at exit.
fn hold_for_process(fd: &Fd) {
    let mut l = first_byte(libc::F_RDLCK);
    // SAFETY: valid fd and lock description.
    unsafe { libc::fcntl(fd.raw(), libc::F_SETLK, &mut l) };
}

/// Whether another process holds the first byte's lock (is writing the file now).
fn held_by_another_process(fd: &Fd) -> bool {
    let mut l = first_byte(libc::F_WRLCK);
    // SAFETY: valid fd and lock description.
    let asked = unsafe { libc::fcntl(fd.raw(), libc::F_GETLK, &mut l) } == 0;
    asked && l.l_type != libc::F_UNLCK as libc::c_short
}

fn first_byte(kind: libc::c_int) -> libc::flock {
    // SAFETY: an all-zero flock is valid; the fields that matter are set below.
    let mut l: libc::flock = unsafe { core::mem::zeroed() };
    l.l_type = kind as libc::c_short;
    l.l_whence = libc::SEEK_SET as libc::c_short;
    l.l_start = 0;
    l.l_len = 1;
    l
}

/// This process's identity in a file header (pid and token; the other fields zero).
fn this_process() -> FileHeader {
    FileHeader { pid: sys::pid(), token: sys::process_token(), ..FileHeader::default() }
}

/// The file's header if this process started the file (its pid and token; a shorter file reads as none).
fn own_header(fd: &Fd) -> Option<FileHeader> {
    let mut head = [0u8; FILE_HEADER];
    fd.read_exact_at(&mut head, 0).ok()?;
    let this = this_process();
    FileHeader::decode(&head).filter(|h| (h.pid, h.token) == (this.pid, this.token))
}

/// Writes the header in place (the descriptor leaves append mode meanwhile: only this copy writes through it,
/// under the runtime's lock).
fn rewrite_header(fd: &Fd, h: &FileHeader) -> Result<(), sys::Errno> {
    // SAFETY: valid fd; plain flag calls.
    let flags = unsafe { libc::fcntl(fd.raw(), libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd.raw(), libc::F_SETFL, flags & !libc::O_APPEND) } != 0 {
        return Err(sys::Errno::last());
    }
    let written = fd.write_all_at(&h.encode(), 0);
    // SAFETY: as above.
    unsafe { libc::fcntl(fd.raw(), libc::F_SETFL, flags) };
    written
}

/// Trace ids for a module of `n` functions: the next ids of the file header, shared by the process's runtime
/// copies (or this copy's own next ids, without a file). `None`: the id space is exhausted.
fn allocate_ids(st: &mut State, n: u32) -> Option<u32> {
    let mut base = st.next_base;
    let file = open(st) && keep_file(st);
    let end = match (&st.fd, file) {
        (Some((fd, _)), true) => {
            let _ = fd.flock(libc::LOCK_EX);
            let h = own_header(fd);
            if let Some(h) = h {
                base = base.max(h.next_id);
            }
            let end = base.checked_add(n).filter(|&e| e <= ABANDON_ID);
            if let (Some(h), Some(end)) = (h, end) {
                // A header this process no longer owns (another process started the file since) is left alone:
                // readers leave this process's records out then.
                let _ = rewrite_header(fd, &FileHeader { next_id: end, ..h });
            }
            let _ = fd.flock(libc::LOCK_UN);
            end
        }
        _ => base.checked_add(n).filter(|&e| e <= ABANDON_ID),
    }?;
    st.next_base = end;
    Some(base)
}

/// Writes this copy's `REC_IMAGE` record: the path of the executable or shared object it is linked into.
fn write_image(st: &mut State) {
    // SAFETY: an all-zero Dl_info is valid; dladdr fills it for an address of this image.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    let found = unsafe { libc::dladdr(ptr::addr_of!(STATE).cast::<libc::c_void>(), &mut info) } != 0;
    // SAFETY: dli_fname is null or a NUL-terminated string owned by the dynamic linker.
    let mut image: &[u8] = if found { unsafe { sys::cstr_bytes(info.dli_fname) } } else { &[] };
    let mut exe = [0u8; 4096];
    if image.is_empty() {
        // The main program (the dynamic linker names it "").
        // SAFETY: a valid buffer of exe.len() bytes.
        let n = unsafe { libc::readlink(c"/proc/self/exe".as_ptr(), exe.as_mut_ptr().cast(), exe.len()) };
        image = exe.get(..usize::try_from(n).unwrap_or(0)).unwrap_or(&[]);
    }
    let head = record_header(REC_IMAGE, sys::pid(), st.copy, 0, image.len() as u64);
    let mut rec = MVec::new();
    if rec.extend_from_slice(&head).and_then(|_| rec.extend_from_slice(image)).is_ok() {
        write(st, rec.as_slice());
    }
}

/// Writes this copy's `REC_PARENT` record (a fork child): the file it inherited, as process `pid`'s copy `copy`.
fn write_parent(st: &mut State, pid: u32, copy: u32, name: &[u8]) {
    // The expanded name ends in its NUL (`path::expand`).
    let name = name.strip_suffix(&[0]).unwrap_or(name);
    let head = record_header(REC_PARENT, sys::pid(), st.copy, 0, 16 + name.len() as u64);
    let mut rec = MVec::new();
    let fields = [&pid.to_le_bytes()[..], &copy.to_le_bytes(), &sys::process_token().to_le_bytes(), name];
    if rec.extend_from_slice(&head).is_ok() && fields.iter().all(|f| rec.extend_from_slice(f).is_ok()) {
        write(st, rec.as_slice());
    }
}

/// Writes a module's `REC_MODULE` record.
fn write_module(st: &mut State, desc: *mut TraceModuleDesc) {
    // SAFETY: a registered, valid descriptor.
    let d = unsafe { &mut *desc };
    // SAFETY: the pass's metadata blob of meta_len bytes.
    let meta = unsafe { core::slice::from_raw_parts(d.meta, d.meta_len as usize) };
    let head = record_header(REC_MODULE, sys::pid(), st.copy, 0, 8 + d.meta_len);
    let mut rec = MVec::new();
    let built = rec
        .extend_from_slice(&head)
        .and_then(|_| rec.extend_from_slice(&d.base.to_le_bytes()))
        .and_then(|_| rec.extend_from_slice(&d.num_functions.to_le_bytes()))
        .and_then(|_| rec.extend_from_slice(meta));
    if built.is_err() {
        return;
    }
    write(st, rec.as_slice());
    d.written = 1;
}

/// Closes `fd` if it is still the file `file`; otherwise leaves the number alone (the program's now).
fn release(fd: Fd, file: (u64, u64)) {
    if fd.identity() == file {
        let _ = fd.close();
    } else {
        core::mem::forget(fd);
    }
}

/// Whether this copy's descriptor still refers to its file. A program may close descriptors it did not open
/// (daemons, `closefrom`) and reuse the numbers for files of its own; writing there would corrupt its output.
/// Then the descriptor is forgotten (never written to or closed), and the file opened again by name: it must still
/// hold this process's header, or nothing more is written (a warning).
fn keep_file(st: &mut State) -> bool {
    let Some((fd, pid)) = &st.fd else { return false };
    if fd.identity() == st.file {
        return true;
    }
    let pid = *pid;
    if let Some((fd, _)) = st.fd.take() {
        core::mem::forget(fd);
    }
    if let Ok(fd) = Fd::open(st.name.as_slice(), libc::O_RDWR | libc::O_APPEND, 0).map(Fd::out_of_the_way) {
        if own_header(&fd).is_some() {
            hold_for_process(&fd);
            st.file = fd.identity();
            st.fd = Some((fd, pid));
            return true;
        }
    }
    st.disabled = true;
    pp_warn!("the trace file was closed, removed or replaced while the program ran; the trace is incomplete");
    false
}

/// One `write` of a whole record (`O_APPEND`: records of processes sharing the file never interleave).
fn write(st: &mut State, bytes: &[u8]) {
    if !keep_file(st) {
        return;
    }
    let Some((fd, _)) = &st.fd else { return };
    if let Err(e) = fd.write_all(bytes) {
        st.disabled = true;
        pp_warn!("writing the trace failed (errno ", crate::diag::Dec(e.0 as u64), "); the trace is incomplete");
    }
}

fn unlink(st: &mut State, t: *mut Thread) {
    let mut at: *mut *mut Thread = &mut st.threads;
    // SAFETY: the list holds live records.
    unsafe {
        while !(*at).is_null() {
            if *at == t {
                *at = (*t).next;
                return;
            }
            at = &mut (**at).next;
        }
    }
}
