//! The program's signal handlers, watched: does every handler return?
//!
//! Counts are exact when every activation either returns or leaves through a call the pass gave a termination
//! edge (`exit`, `longjmp`, an exception). A signal handler can run between any two instructions, and one that
//! does not return — it calls `siglongjmp` back to a `sigsetjmp`, or `exit` (gnulib's c-stack on a stack
//! overflow, a SIGINT handler that exits) — leaves every activation it interrupted in the middle of a block,
//! where no counter accounts for it: the counts of those functions would be silently wrong. Which activations
//! those were is not known, so the process's records are then flagged
//! [`RECORD_FLAG_HANDLER_ESCAPED`](pathprof_format::layout::RECORD_FLAG_HANDLER_ESCAPED) and written apart, to
//! `FILE.<pid>.incomplete` (`dump`), so that the flag does not spread to the other runs merged into FILE.
//!
//! A handler run is not counted when the thread sent the signal to itself from a call — `raise`, `abort`,
//! `kill(getpid(), …)` in a process that has only ever had one thread, delivered right after the system call in
//! the C library that sent it: every instrumented activation of the thread is then at a call to a function
//! that may not return in the pass's graphs, and the termination edge of that call accounts for each activation
//! the handler's `siglongjmp` or `exit` abandons, exactly as if the C library function had called them itself
//! (MPFR's and libsodium's abort tests end in a SIGABRT handler that exits). A signal from elsewhere can find
//! the thread anywhere, even inside a C library function the pass counts as always returning (`memcpy`, which
//! a fault can leave): those handler runs must return.
//!
//! In trace mode each handler runs in a trace stream of its own (`trace::with_handler_stream`).
//!
//! The pass sends the instrumented code's `sigaction` and `signal` calls here ([`__pathprof_sigaction`],
//! [`__pathprof_signal`]; `pathprof_format::symbols`). A handler is installed behind a trampoline that counts
//! its entries and returns; everything else is the program's: the mask and flags it asked for, the handler it
//! gets back as the old action, `SA_RESETHAND`'s reset. Handlers installed by uninstrumented code (a library
//! built without pathprof, `sigset`, a raw system call) are not watched.

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use pathprof_format::layout::ModuleDesc;

/// Signals 1..NSIG (Linux: 64 and the real-time ones).
const NSIG: usize = 65;

/// Per signal: the program's handler behind the trampoline (0: none, or reset by `SA_RESETHAND`), the
/// `sa_flags` it asked for (the kernel's copy also has `SA_SIGINFO`, which the trampoline needs), and whether
/// the kernel's action is (or, reset to `SIG_DFL`, was) the trampoline.
static HANDLER: [AtomicUsize; NSIG] = [const { AtomicUsize::new(0) }; NSIG];
static FLAGS: [AtomicU64; NSIG] = [const { AtomicU64::new(0) }; NSIG];
static INSTALLED: [AtomicBool; NSIG] = [const { AtomicBool::new(false) }; NSIG];
/// Handler runs begun and ended (all threads).
static ENTERED: AtomicU64 = AtomicU64::new(0);
static RETURNED: AtomicU64 = AtomicU64::new(0);

/// Whether a watched handler has not returned: it left through `longjmp` or `exit` (or one is running in another
/// thread right now, which a dump then flags too: errs towards flagging).
pub(crate) fn escaped() -> bool {
    ENTERED.load(Ordering::Acquire) != RETURNED.load(Ordering::Acquire)
}

/// In a `fork()`ed child: the handlers that did not return left their parent's activations, not the child's
/// (which counts from zero).
pub(crate) fn fork_child() {
    RETURNED.store(ENTERED.load(Ordering::Acquire), Ordering::Release);
}

/// The C library's code: the executable segment of the loaded object named `libc.so*` (`[start, end)`; `0, 0`
/// until a handler is installed, and in a static program). By name, not by the address of one of its
/// functions: a program may define its own `raise`.
static LIBC_TEXT: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

/// Finds [`LIBC_TEXT`], once; outside signal context (it walks the loader's list of objects).
fn locate_libc_text() {
    if LIBC_TEXT[1].load(Ordering::Acquire) != 0 {
        return;
    }
    unsafe extern "C" fn segment_of(info: *mut libc::dl_phdr_info, _size: usize, _data: *mut c_void) -> c_int {
        // SAFETY: the loader passes a valid `dl_phdr_info` whose name (null or a C string) and program headers
        // it has mapped.
        let info = unsafe { &*info };
        if info.dlpi_name.is_null() || !is_libc(unsafe { core::ffi::CStr::from_ptr(info.dlpi_name) }.to_bytes()) {
            return 0;
        }
        for i in 0..info.dlpi_phnum as usize {
            // SAFETY: `dlpi_phnum` headers start at `dlpi_phdr`.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 {
                let start = (info.dlpi_addr as usize).wrapping_add(ph.p_vaddr as usize);
                LIBC_TEXT[0].store(start, Ordering::Release);
                LIBC_TEXT[1].store(start.wrapping_add(ph.p_memsz as usize), Ordering::Release);
                return 1;
            }
        }
        0
    }
    // SAFETY: a callback of the right type, which uses no data.
    unsafe { libc::dl_iterate_phdr(Some(segment_of), core::ptr::null_mut()) };
}

/// Whether a loaded object's path names the C library (`…/libc.so.6`).
fn is_libc(path: &[u8]) -> bool {
    let file = path.rsplit(|&c| c == b'/').next().unwrap_or(path);
    file.starts_with(b"libc.so")
}

/// Whether the thread sent the signal to itself from a call (see the module's documentation): `info` says this
/// process sent it (`kill`, `tgkill`, `sigqueue`), no other thread has ever run that could have, and the
/// interrupted context (`context`) is in the C library right after a `syscall` instruction — the call that
/// sent it, not a later point where a blocked signal was let through.
fn sent_to_itself_from_a_call(info: *const libc::siginfo_t, context: *mut c_void) -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        if info.is_null() || context.is_null() {
            return false;
        }
        // SAFETY: the kernel passes a valid `siginfo_t` and `ucontext_t` to an SA_SIGINFO handler; `si_pid` is
        // the sender's for these codes.
        let (code, pid, pc) = unsafe {
            let info = &*info;
            let pc = (*context.cast::<libc::ucontext_t>()).uc_mcontext.gregs[libc::REG_RIP as usize] as usize;
            (info.si_code, info.si_pid() as u32, pc)
        };
        if !matches!(code, libc::SI_USER | libc::SI_TKILL | libc::SI_QUEUE) || pid != crate::sys::pid() {
            return false;
        }
        let (start, end) = (LIBC_TEXT[0].load(Ordering::Acquire), LIBC_TEXT[1].load(Ordering::Acquire));
        if pc < start.saturating_add(2) || pc >= end || crate::threads::probe() {
            return false;
        }
        // SAFETY: the two bytes before `pc` are in the same executable (readable) segment of the C library.
        unsafe { core::ptr::read_volatile((pc - 2) as *const [u8; 2]) == [0x0f, 0x05] }
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        let _ = (info, context);
        false
    }
}

fn trampoline_address() -> usize {
    trampoline as unsafe extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) as usize
}

/// What the kernel calls for a watched signal: the program's handler, counted.
unsafe extern "C" fn trampoline(sig: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let i = sig as usize;
    let (Some(h), Some(f)) = (HANDLER.get(i), FLAGS.get(i)) else { return };
    let (handler, flags) = (h.load(Ordering::Acquire), f.load(Ordering::Acquire));
    if flags & libc::SA_RESETHAND as u64 != 0 {
        // The kernel reset the disposition on delivery: so does the program's view of it.
        h.store(0, Ordering::Release);
    }
    if handler == 0 {
        return; // replaced by SIG_DFL or SIG_IGN while this delivery was on its way
    }
    // A handler run for a signal the thread sent itself from a call may leave as it likes.
    let watched = !sent_to_itself_from_a_call(info, context);
    if watched {
        ENTERED.fetch_add(1, Ordering::AcqRel);
    }
    with_hand_overs_set_aside(&mut crate::modules(), &mut || {
        crate::trace::with_handler_stream(context, &mut || {
            if flags & libc::SA_SIGINFO as u64 != 0 {
                // SAFETY: the program installed this address as an SA_SIGINFO handler.
                let f: unsafe extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                    unsafe { core::mem::transmute(handler) };
                unsafe { f(sig, info, context) };
            } else {
                // SAFETY: the program installed this address as a plain handler.
                let f: unsafe extern "C" fn(c_int) = unsafe { core::mem::transmute(handler) };
                unsafe { f(sig) };
            }
        })
    });
    if watched {
        RETURNED.fetch_add(1, Ordering::AcqRel);
    }
}

/// Runs `handler` with this thread's caller/callee hand-over of every module in `modules` that has one (context
/// and piecewise modes, `ModuleDesc::ip_swap`) set aside, and restores them after it. A handler can interrupt
/// a caller between writing the hand-over and its callee reading it, or a callee's returned path number before
/// its caller reads it; instrumented code the handler runs in the same module would overwrite it, and the
/// interrupted path would go on from a wrong number, silently (a libuv test that signals its main thread after
/// every transfer). The handler starts with nothing handed over, as code entered from outside should. Saved
/// words live in this frame, 32 modules per frame (a recursion for more), so nested signals nest too.
fn with_hand_overs_set_aside(modules: &mut dyn Iterator<Item = *mut ModuleDesc>, handler: &mut dyn FnMut()) {
    const PER_FRAME: usize = 32;
    let mut saved = [[0u64; 3]; PER_FRAME];
    let mut swaps: [Option<unsafe extern "C" fn(*mut u64)>; PER_FRAME] = [None; PER_FRAME];
    let mut n = 0;
    while n < PER_FRAME {
        let Some(d) = modules.next() else { break };
        // SAFETY: registered descriptors stay valid while linked.
        if let Some(swap) = unsafe { (*d).ip_swap } {
            // SAFETY: the pass's swap reads and writes three words.
            unsafe { swap(saved[n].as_mut_ptr()) };
            swaps[n] = Some(swap);
            n += 1;
        }
    }
    if n == PER_FRAME {
        with_hand_overs_set_aside(modules, handler);
    } else {
        handler();
    }
    for (swap, words) in swaps.iter().zip(saved.iter_mut()).take(n).rev() {
        if let Some(swap) = swap {
            // SAFETY: as above; swapping back restores what the interrupted code had.
            unsafe { swap(words.as_mut_ptr()) };
        }
    }
}

/// `sigaction(2)` for instrumented code: the same result, with the program's handler watched.
///
/// # Safety
/// As `sigaction`: `act` and `old` are null or valid.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    let i = sig as usize;
    let (Some(h), Some(f), Some(on)) = (HANDLER.get(i), FLAGS.get(i), INSTALLED.get(i)) else {
        // SAFETY: the caller's arguments, unchanged.
        return unsafe { libc::sigaction(sig, act, old) };
    };
    let before = (h.load(Ordering::Acquire), f.load(Ordering::Acquire), on.load(Ordering::Acquire));
    // SAFETY: `act` is null or valid (the caller's contract).
    let result = match unsafe { act.as_ref() } {
        None => unsafe { libc::sigaction(sig, act, old) },
        Some(a) if a.sa_sigaction == libc::SIG_DFL || a.sa_sigaction == libc::SIG_IGN => {
            // SAFETY: as above.
            let r = unsafe { libc::sigaction(sig, act, old) };
            if r == 0 {
                h.store(0, Ordering::Release);
                on.store(false, Ordering::Release);
            }
            r
        }
        Some(a) => {
            locate_libc_text();
            let mut ours = *a;
            ours.sa_sigaction = trampoline_address();
            ours.sa_flags |= libc::SA_SIGINFO;
            f.store(a.sa_flags as u64, Ordering::Release);
            h.store(a.sa_sigaction, Ordering::Release);
            on.store(true, Ordering::Release);
            // SAFETY: a valid action; `old` as the caller passed it.
            let r = unsafe { libc::sigaction(sig, &ours, old) };
            if r != 0 {
                h.store(before.0, Ordering::Release);
                f.store(before.1, Ordering::Release);
                on.store(before.2, Ordering::Release);
            }
            r
        }
    };
    // The old action the program sees is what it installed: its own handler, not the trampoline, and its own
    // flags, not the trampoline's SA_SIGINFO — also once SA_RESETHAND reset the action to SIG_DFL, which keeps
    // the flags.
    // SAFETY: `old` is null or valid (the caller's contract).
    if let Some(o) = unsafe { old.as_mut() }.filter(|_| result == 0 && before.2) {
        if o.sa_sigaction == trampoline_address() {
            o.sa_sigaction = before.0;
            o.sa_flags = before.1 as c_int;
        } else if o.sa_sigaction == libc::SIG_DFL {
            o.sa_flags = before.1 as c_int;
        }
    }
    result
}

/// `signal(2)` for instrumented code, with glibc's semantics (BSD: the handler stays installed, interrupted
/// system calls restart) and the handler watched.
///
/// # Safety
/// As `signal`.
#[no_mangle]
pub unsafe extern "C" fn __pathprof_signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    // SAFETY: all-zero sigaction values are valid; the fields are set below.
    let mut act: libc::sigaction = unsafe { core::mem::zeroed() };
    let mut old: libc::sigaction = unsafe { core::mem::zeroed() };
    act.sa_sigaction = handler;
    act.sa_flags = libc::SA_RESTART;
    // SAFETY: a valid set.
    unsafe {
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaddset(&mut act.sa_mask, sig);
    }
    // SAFETY: valid pointers.
    if unsafe { __pathprof_sigaction(sig, &act, &mut old) } != 0 {
        return libc::SIG_ERR;
    }
    old.sa_sigaction
}
