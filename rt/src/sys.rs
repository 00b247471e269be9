//! The few libc services the runtime needs, wrapped so that the rest of the crate never sees `errno` or a raw
//! file descriptor: a growable vector in mapped memory, an owned fd, and EINTR-safe whole-buffer reads and writes.
//!
//! Nothing here allocates on the counting path; these are used only at dump time.
//!
//! # Never the program's allocator, never the program's `getenv`
//! `malloc`, `realloc`, `free` and `getenv` are interposable: a program that defines its own (bash's lib/malloc
//! and lib/sh/getenv.c, a custom allocator) gets every runtime call of them, and when that code is instrumented
//! too, the runtime's own allocations are counted as the program's — bash's `malloc` read 33 entries where the
//! program made 5, "exact" — and the calls made during the exit dump leave new counts behind, so each such
//! module's destructor wrote the whole profile again (6 writes of a 1.2 MB file per bash process). [`MVec`]
//! therefore allocates with anonymous `mmap` (grown with `mremap`), always, and [`env`] reads `environ` itself.
//! Both are plain system calls or memory reads, so they are also safe in a fatal-signal handler, where `malloc`
//! could deadlock.

use core::ffi::{c_char, c_int, c_void};
use core::marker::PhantomData;
use core::sync::atomic::{AtomicBool, Ordering};
use core::{mem, ptr, slice};

/// Set while a fatal-signal handler writes the profile (see the module docs).
static IN_SIGNAL: AtomicBool = AtomicBool::new(false);

/// Whether the fatal-signal flush is running: allocate with `mmap`, call only async-signal-safe functions.
pub(crate) fn in_signal() -> bool {
    IN_SIGNAL.load(Ordering::Relaxed)
}

/// Marks the fatal-signal flush as running until dropped (set and cleared with the runtime lock held).
pub(crate) struct SignalContext(());

impl SignalContext {
    pub(crate) fn enter() -> SignalContext {
        IN_SIGNAL.store(true, Ordering::Relaxed);
        SignalContext(())
    }
}

impl Drop for SignalContext {
    fn drop(&mut self) {
        IN_SIGNAL.store(false, Ordering::Relaxed);
    }
}

/// An `errno` value; the runtime's only error type (allocation failure is `ENOMEM`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Errno(pub(crate) c_int);

impl Errno {
    /// The calling thread's current `errno`.
    pub(crate) fn last() -> Errno {
        // SAFETY: __errno_location always returns the valid thread-local errno slot.
        Errno(unsafe { *libc::__errno_location() })
    }
}

/// A growable array in anonymous mapped memory (see the module docs) for plain-data `T` (never dropped
/// element-wise).
pub(crate) struct MVec<T: Copy> {
    ptr: *mut T,
    len: usize,
    cap: usize,
    /// The mapping's length in bytes (a whole number of pages; 0 when nothing is mapped).
    bytes: usize,
    _own: PhantomData<T>,
}

/// Mappings are made in whole pages: a vector's capacity is what its pages hold.
const PAGE: usize = 4096;

impl<T: Copy> MVec<T> {
    /// An empty vector; allocates nothing.
    pub(crate) const fn new() -> MVec<T> {
        MVec { ptr: ptr::null_mut(), len: 0, cap: 0, bytes: 0, _own: PhantomData }
    }

    /// Makes room for `extra` more elements.
    pub(crate) fn reserve(&mut self, extra: usize) -> Result<(), Errno> {
        let need = self.len.checked_add(extra).ok_or(Errno(libc::ENOMEM))?;
        if need <= self.cap {
            return Ok(());
        }
        let size = mem::size_of::<T>().max(1);
        let cap = need.max(self.cap.saturating_mul(2)).max(8);
        let bytes =
            cap.checked_mul(size).and_then(|b| b.checked_add(PAGE - 1)).ok_or(Errno(libc::ENOMEM))? & !(PAGE - 1);
        let p = if self.ptr.is_null() {
            map_anonymous(bytes, 0)
        } else {
            // SAFETY: `ptr` is our own mapping of `self.bytes` bytes; the result is checked.
            match unsafe { libc::mremap(self.ptr.cast::<c_void>(), self.bytes, bytes, libc::MREMAP_MAYMOVE) } {
                libc::MAP_FAILED => ptr::null_mut(),
                p => p,
            }
        };
        if p.is_null() {
            return Err(Errno(libc::ENOMEM));
        }
        // Page alignment suffices for the plain-data types used here (u8, u64, pointers, small structs of those).
        self.ptr = p.cast::<T>();
        self.bytes = bytes;
        self.cap = bytes / size;
        Ok(())
    }

    /// Appends one element.
    pub(crate) fn push(&mut self, v: T) -> Result<(), Errno> {
        self.reserve(1)?;
        // SAFETY: reserve guaranteed len < cap.
        unsafe { self.ptr.add(self.len).write(v) };
        self.len += 1;
        Ok(())
    }

    /// Appends a copy of `s`.
    pub(crate) fn extend_from_slice(&mut self, s: &[T]) -> Result<(), Errno> {
        self.reserve(s.len())?;
        // SAFETY: room for s.len() more elements; `s` cannot alias our spare capacity.
        unsafe { ptr::copy_nonoverlapping(s.as_ptr(), self.ptr.add(self.len), s.len()) };
        self.len += s.len();
        Ok(())
    }

    /// Appends `n` copies of `v`.
    pub(crate) fn extend_fill(&mut self, v: T, n: usize) -> Result<(), Errno> {
        self.reserve(n)?;
        for i in 0..n {
            // SAFETY: room for n more elements.
            unsafe { self.ptr.add(self.len + i).write(v) };
        }
        self.len += n;
        Ok(())
    }

    /// Inserts `v` at `at` (clamped to the length), shifting the tail.
    pub(crate) fn insert(&mut self, at: usize, v: T) -> Result<(), Errno> {
        self.reserve(1)?;
        let at = at.min(self.len);
        // SAFETY: at <= len < cap; the shifted range stays inside the allocation.
        unsafe {
            ptr::copy(self.ptr.add(at), self.ptr.add(at + 1), self.len - at);
            self.ptr.add(at).write(v);
        }
        self.len += 1;
        Ok(())
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Drops the contents (keeps the allocation).
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// Keeps the first `len` elements (no-op if there are fewer).
    pub(crate) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Forgets the allocation without unmapping it: used in a `fork()`ed child, where the mapping may be in the
    /// middle of being grown by a thread that no longer exists.
    pub(crate) fn leak(&mut self) {
        *self = MVec::new();
    }

    /// The elements.
    pub(crate) fn as_slice(&self) -> &[T] {
        if self.ptr.is_null() {
            return &[];
        }
        // SAFETY: the first `len` elements are initialised.
        unsafe { slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The elements, mutably.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        if self.ptr.is_null() {
            return &mut [];
        }
        // SAFETY: the first `len` elements are initialised and uniquely borrowed.
        unsafe { slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T: Copy> Drop for MVec<T> {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: our own mapping of exactly this size.
            unsafe { libc::munmap(self.ptr.cast::<c_void>(), self.bytes) };
        }
    }
}

/// An owned file descriptor, closed on drop (errors on that close are ignored: callers that care use
/// [`Fd::close`]).
pub(crate) struct Fd(c_int);

/// The bytes one `pread`/`write` call moved: `None` to retry after EINTR, 0 bytes as `EIO` (the file ended, or
/// the device took nothing), any other failure as its errno. One place for the retry rule of both loops.
fn moved(n: isize) -> Result<Option<usize>, Errno> {
    if n < 0 {
        let e = Errno::last();
        return if e.0 == libc::EINTR { Ok(None) } else { Err(e) };
    }
    if n == 0 {
        return Err(Errno(libc::EIO));
    }
    Ok(Some(n as usize))
}

impl Fd {
    /// `open(2)` with `O_CLOEXEC` added, so a concurrent `exec` in another thread never inherits the fd; never
    /// one of the standard descriptors 0–2. A program run with a standard stream closed (`sed … >&-`, as test
    /// suites do to check write errors) must keep it closed: had the runtime's file taken descriptor 1, the
    /// program's output would go into the trace or profile and its write errors would vanish.
    pub(crate) fn open(path: &[u8], flags: c_int, mode: libc::mode_t) -> Result<Fd, Errno> {
        let p = cstr(path);
        // SAFETY: `p` is NUL-terminated (see `cstr`).
        let fd = unsafe { libc::open(p, flags | libc::O_CLOEXEC | libc::O_NOCTTY, mode as libc::c_uint) };
        if fd < 0 {
            return Err(Errno::last());
        }
        Fd::off_the_standard_ones(fd)
    }

    /// Both ends of a new pipe (`O_CLOEXEC`), neither on a standard descriptor (see [`Fd::open`]).
    pub(crate) fn pipe() -> Result<(Fd, Fd), Errno> {
        let mut ends = [0 as c_int; 2];
        // SAFETY: a valid out-array of two descriptors.
        if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(Errno::last());
        }
        let read = Fd::off_the_standard_ones(ends[0]);
        let write = Fd::off_the_standard_ones(ends[1]);
        Ok((read?, write?))
    }

    /// `fd`, just opened by the runtime, moved above the standard descriptors 0–2 if it is one of them.
    fn off_the_standard_ones(fd: c_int) -> Result<Fd, Errno> {
        if fd > 2 {
            return Ok(Fd(fd));
        }
        // SAFETY: `fd` is open; F_DUPFD_CLOEXEC returns the lowest free descriptor >= 3.
        let high = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
        let err = Errno::last();
        // SAFETY: closes the standard descriptor this call took; the program never saw it.
        unsafe { libc::close(fd) };
        if high < 0 {
            Err(err)
        } else {
            Ok(Fd(high))
        }
    }

    /// The same file on a descriptor out of the program's way, for a file the runtime holds for the whole run
    /// (the trace): the lowest free one from 64 below the descriptor limit (at most 1024), where programs that
    /// check for leaked descriptors (gnulib's spawn tests assert that 3–6 are closed in a child) or count on
    /// the next `open` getting a low number do not look. Kept where it is when the limit leaves no room.
    pub(crate) fn out_of_the_way(self) -> Fd {
        // SAFETY: an all-zero rlimit is valid; getrlimit fills it.
        let mut rl: libc::rlimit = unsafe { mem::zeroed() };
        // SAFETY: valid out-pointer.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 || rl.rlim_cur < 128 {
            return self;
        }
        // Not higher: the kernel sizes a process's descriptor table to its highest descriptor.
        let from = (rl.rlim_cur.min(1024) - 64) as c_int;
        if self.0 >= from {
            return self;
        }
        // SAFETY: `self.0` is open; F_DUPFD_CLOEXEC returns the lowest free descriptor >= `from`.
        let high = unsafe { libc::fcntl(self.0, libc::F_DUPFD_CLOEXEC, from) };
        if high < 0 {
            return self;
        }
        // The same open file description now on `high` (its locks included): drop the low descriptor.
        drop(self);
        Fd(high)
    }

    /// The raw descriptor.
    pub(crate) fn raw(&self) -> c_int {
        self.0
    }

    /// Device and inode of the file, (0, 0) if the descriptor is not open: tells whether a descriptor the runtime
    /// holds is still its file, or a number the program closed and reused.
    // `st_dev` and `st_ino` are `u64` on x86-64 Linux, narrower on other targets: the casts are for those.
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn identity(&self) -> (u64, u64) {
        self.stat().map_or((0, 0), |s| (s.st_dev as u64, s.st_ino as u64))
    }

    /// `fstat(2)`.
    pub(crate) fn stat(&self) -> Result<libc::stat, Errno> {
        // SAFETY: an all-zero `stat` is a valid value; fstat fills it.
        let mut st: libc::stat = unsafe { mem::zeroed() };
        // SAFETY: valid fd and out-pointer.
        if unsafe { libc::fstat(self.0, &mut st) } != 0 {
            return Err(Errno::last());
        }
        Ok(st)
    }

    /// Reads exactly `buf.len()` bytes at `offset`; a file shorter than that is `EIO` (it shrank under us).
    pub(crate) fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<(), Errno> {
        let mut done = 0usize;
        while let Some(rest) = buf.get_mut(done..) {
            if rest.is_empty() {
                break;
            }
            let at = offset.checked_add(done as u64).ok_or(Errno(libc::EIO))?;
            // SAFETY: `rest` is a valid writable buffer of rest.len() bytes.
            let n = unsafe { libc::pread(self.0, rest.as_mut_ptr().cast::<c_void>(), rest.len(), at as libc::off_t) };
            if let Some(n) = moved(n)? {
                done += n;
            }
        }
        Ok(())
    }

    /// `flock(2)` with `op`, retried on `EINTR`.
    pub(crate) fn flock(&self, op: c_int) -> Result<(), Errno> {
        loop {
            // SAFETY: valid fd.
            if unsafe { libc::flock(self.0, op) } == 0 {
                return Ok(());
            }
            let e = Errno::last();
            if e.0 != libc::EINTR {
                return Err(e);
            }
        }
    }

    /// Writes all of `data` at `offset` (`pwrite(2)`; the descriptor must not be in append mode), retrying
    /// short writes and EINTR.
    pub(crate) fn write_all_at(&self, data: &[u8], offset: u64) -> Result<(), Errno> {
        let mut done = 0usize;
        while let Some(rest) = data.get(done..) {
            if rest.is_empty() {
                break;
            }
            let at = offset.checked_add(done as u64).ok_or(Errno(libc::EIO))?;
            // SAFETY: `rest` is a valid readable buffer.
            let n = without_write_signals(|| unsafe {
                libc::pwrite(self.0, rest.as_ptr().cast::<c_void>(), rest.len(), at as libc::off_t)
            });
            if let Some(n) = moved(n)? {
                done += n;
            }
        }
        Ok(())
    }

    /// Writes all of `data`, retrying short writes and EINTR.
    pub(crate) fn write_all(&self, data: &[u8]) -> Result<(), Errno> {
        let mut done = 0usize;
        while let Some(rest) = data.get(done..) {
            if rest.is_empty() {
                break;
            }
            // SAFETY: `rest` is a valid readable buffer.
            let n =
                without_write_signals(|| unsafe { libc::write(self.0, rest.as_ptr().cast::<c_void>(), rest.len()) });
            if let Some(n) = moved(n)? {
                done += n;
            }
        }
        Ok(())
    }

    /// Closes the descriptor and reports the error some file systems (NFS) only detect there.
    pub(crate) fn close(self) -> Result<(), Errno> {
        let fd = self.0;
        mem::forget(self);
        // SAFETY: we owned `fd`; it is closed exactly once.
        if unsafe { libc::close(fd) } != 0 {
            let e = Errno::last();
            // After EINTR the fd is already released on Linux; the data was handed to the kernel.
            if e.0 != libc::EINTR {
                return Err(e);
            }
        }
        Ok(())
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.0) };
    }
}

/// Runs `write`, a system call that may extend a file or fill a pipe, with `SIGXFSZ` and `SIGPIPE` blocked for
/// the calling thread, so that it fails with `EFBIG` or `EPIPE` instead of killing the program, and takes back
/// the signal the kernel queued with the error. Past the program's file size limit (`ulimit -f`, which test
/// suites set to check how a program handles write errors) the profile write killed the program at exit, before
/// the C library flushed its output (exit status 153 instead of 0, the output lost); a warning to a stderr whose
/// reader has gone would have killed it with `SIGPIPE`. A signal already pending for the program is left to it.
pub(crate) fn without_write_signals(write: impl FnOnce() -> isize) -> isize {
    // SAFETY: all-zero signal sets are valid and then initialised by sigemptyset; the calls have valid pointers.
    unsafe {
        let mut blocked: libc::sigset_t = mem::zeroed();
        let mut old: libc::sigset_t = mem::zeroed();
        let mut pending: libc::sigset_t = mem::zeroed();
        libc::sigemptyset(&mut blocked);
        libc::sigaddset(&mut blocked, libc::SIGXFSZ);
        libc::sigaddset(&mut blocked, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &blocked, &mut old);
        let got_pending = libc::sigpending(&mut pending) == 0;
        let n = write();
        if n < 0 {
            let e = *libc::__errno_location();
            let signal = match e {
                libc::EFBIG => libc::SIGXFSZ,
                libc::EPIPE => libc::SIGPIPE,
                _ => 0,
            };
            if signal != 0 && got_pending && libc::sigismember(&pending, signal) == 0 {
                let mut only: libc::sigset_t = mem::zeroed();
                libc::sigemptyset(&mut only);
                libc::sigaddset(&mut only, signal);
                let now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                libc::sigtimedwait(&only, ptr::null_mut(), &now);
            }
            *libc::__errno_location() = e;
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, ptr::null_mut());
        n
    }
}

/// Blocks every signal on the calling thread; the mask before, for [`set_signal_mask`]. For the runtime's own
/// bookkeeping, which a signal handler on the same thread must not find half done.
pub(crate) fn block_all_signals() -> libc::sigset_t {
    // SAFETY: all-zero signal sets are valid, then filled; the call has valid pointers.
    unsafe {
        let mut all: libc::sigset_t = mem::zeroed();
        let mut old: libc::sigset_t = mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        old
    }
}

/// Restores a mask [`block_all_signals`] returned.
pub(crate) fn set_signal_mask(mask: &libc::sigset_t) {
    // SAFETY: a valid mask.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, mask, ptr::null_mut()) };
}

/// Runs `f` with every signal blocked on the calling thread, then restores its mask.
pub(crate) fn with_signals_blocked<R>(f: impl FnOnce() -> R) -> R {
    let old = block_all_signals();
    let r = f();
    set_signal_mask(&old);
    r
}

/// The pointer of a path buffer that the caller built with a trailing NUL (every path in this crate is built by
/// [`crate::path`], which guarantees it). A buffer without one yields the empty string rather than an overrun.
pub(crate) fn cstr(path: &[u8]) -> *const c_char {
    match path.last() {
        Some(0) => path.as_ptr().cast::<c_char>(),
        _ => c"".as_ptr(),
    }
}

/// The bytes of a NUL-terminated C string (empty for null).
///
/// # Safety
/// `p` must be null or point to a NUL-terminated string that outlives the returned slice.
pub(crate) unsafe fn cstr_bytes<'a>(p: *const c_char) -> &'a [u8] {
    if p.is_null() {
        return &[];
    }
    // SAFETY: caller guarantees NUL termination.
    unsafe { slice::from_raw_parts(p.cast::<u8>(), libc::strlen(p)) }
}

/// A non-empty environment variable's value (an empty value counts as unset, as in compiler-rt), read from
/// `environ` itself: the program may define `getenv` (bash does, over its shell variables), and when that code is
/// instrumented the runtime's lookups would be counted as the program's calls (see the module docs).
pub(crate) fn env(name: &core::ffi::CStr) -> Option<&'static [u8]> {
    extern "C" {
        static mut environ: *const *const c_char;
    }
    let name = name.to_bytes();
    // SAFETY: `environ` is null or a null-terminated array of NUL-terminated strings owned by the environment;
    // the runtime never changes it, and the program changing it during a dump is its own race.
    let mut e = unsafe { ptr::addr_of!(environ).read() };
    if e.is_null() {
        return None;
    }
    loop {
        // SAFETY: `e` points into the array, at or before its null terminator.
        let entry = unsafe { e.read() };
        if entry.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated string of the environment.
        let bytes = unsafe { cstr_bytes(entry) };
        if let Some((&b'=', v)) = bytes.strip_prefix(name).and_then(|rest| rest.split_first()) {
            return if v.is_empty() { None } else { Some(v) };
        }
        // SAFETY: the entry was not the terminator, so the next slot exists.
        e = unsafe { e.add(1) };
    }
}

/// Reads the file at `path` (NUL-terminated) into `buf`, as much as fits (a `/proc` file: one read may return
/// less than the whole); the bytes read.
pub(crate) fn read_small(path: &[u8], buf: &mut [u8]) -> Result<usize, Errno> {
    let fd = Fd::open(path, libc::O_RDONLY, 0)?;
    let mut got = 0usize;
    while let Some(rest) = buf.get_mut(got..).filter(|r| !r.is_empty()) {
        // SAFETY: `rest` is writable for its length.
        let n = unsafe { libc::read(fd.raw(), rest.as_mut_ptr().cast::<c_void>(), rest.len()) };
        match moved(n) {
            Ok(Some(n)) => got += n,
            Ok(None) => continue,
            Err(_) if got > 0 || n == 0 => break,
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The calling thread's id in the operating system.
pub(crate) fn tid() -> u32 {
    // SAFETY: gettid cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// What tells this process from an earlier one with the same pid (`exec` keeps it): the first 8 of the 16
/// random bytes the kernel gives every `execve` (`AT_RANDOM`); a `fork()`ed child shares them, its pid differs.
pub(crate) fn process_token() -> u64 {
    // SAFETY: getauxval has no preconditions; AT_RANDOM points at 16 bytes that live as long as the process.
    let at = unsafe { libc::getauxval(libc::AT_RANDOM) } as *const u8;
    if at.is_null() {
        return 0;
    }
    let mut b = [0u8; 8];
    // SAFETY: see above.
    unsafe { ptr::copy_nonoverlapping(at, b.as_mut_ptr(), 8) };
    u64::from_le_bytes(b)
}

extern "C" {
    #[link_name = "at_quick_exit"]
    fn c_at_quick_exit(f: extern "C" fn()) -> c_int;
}

/// Registers `f` to run at `quick_exit` (C11; glibc has it, the `libc` crate does not declare it). Failure is
/// silent: `quick_exit` then writes nothing, as before.
pub(crate) fn at_quick_exit(f: extern "C" fn()) {
    // SAFETY: a plain registration of a function that lives as long as this image.
    unsafe { c_at_quick_exit(f) };
}

/// The process id.
pub(crate) fn pid() -> u32 {
    // SAFETY: getpid cannot fail.
    unsafe { libc::getpid() as u32 }
}

/// The process whose memory this is: set at the first registration and by the `fork()` child handlers. A
/// `vfork` child runs no fork handlers and shares its parent's memory, so its pid differs from this one.
static OWNER_PID: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// Records the calling process as the owner of this memory (first registration, `fork()` child).
pub(crate) fn note_owner() {
    OWNER_PID.store(pid(), Ordering::Relaxed);
}

/// Whether this is a `vfork` child (or another child sharing the parent's memory without fork handlers): its
/// counts are its parent's, which writes them.
pub(crate) fn shares_parent_memory() -> bool {
    let owner = OWNER_PID.load(Ordering::Relaxed);
    owner != 0 && owner != pid()
}

/// `bytes` bytes of fresh zeroed memory, an anonymous private mapping (with `extra` flags: `MAP_NORESERVE`,
/// `MAP_STACK`), or null. All the runtime's memory comes from here, never from the program's heap: a program may
/// define its own `malloc` (bash does), and one that reads memory it never initialised must see what its plain
/// build sees (zlib's `slide_hash`).
pub(crate) fn map_anonymous(bytes: usize, extra: c_int) -> *mut c_void {
    // SAFETY: an anonymous private mapping has no preconditions; the result is checked.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        ptr::null_mut()
    } else {
        p
    }
}

/// Bytes of the stack [`on_own_stack`] maps: a dump at exit, with the merge into an existing file, takes between
/// 8 and 16 KiB of stack (measured); sixteen times that.
const OWN_STACK: usize = 256 * 1024;

/// Runs `f` on a freshly mapped stack, then unmaps it (x86-64; elsewhere, or when no memory can be mapped, on
/// the current stack). The runtime's writes run on the program's stacks — a thread's, which may be as small as
/// `PTHREAD_STACK_MIN` (16 KiB), a `clone` child's, a signal handler's alternate stack — and a write that
/// overflowed one crashed a program that ran fine uninstrumented (a 16 KiB thread calling `exit`).
///
/// Signals stay blocked while the thread is on the mapped stack, so no handler of the program ever runs there:
/// a handler that records where the thread's stack is would take the mapping for it — the Boehm collector's
/// suspend handler saves its stack pointer, and the collector then scanned from there up to the top of the
/// thread's real stack, across unmapped memory (libgc's gctest in trace mode: "Unexpected bus error or
/// segmentation fault", in one run of two).
pub(crate) fn on_own_stack<F: FnOnce() -> R, R>(f: F) -> R {
    if crate::sandbox::confined() {
        // No new mapping in a seccomp sandbox: what runs here finds nothing left to write (see `sandbox`).
        return f();
    }
    /// What the mapped stack's first frame takes and gives back.
    struct Call<F, R> {
        f: mem::ManuallyDrop<F>,
        result: mem::MaybeUninit<R>,
    }
    extern "C" fn run<F: FnOnce() -> R, R>(call: *mut c_void) {
        // SAFETY: `call` points at the caller's `Call`, alive across this call, used by nothing else, and this
        // function runs exactly once for it, so `f` is taken once.
        unsafe {
            let call = &mut *call.cast::<Call<F, R>>();
            let f = mem::ManuallyDrop::take(&mut call.f);
            call.result.write(f());
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        let base = map_anonymous(OWN_STACK, libc::MAP_STACK);
        if !base.is_null() {
            let mut call = Call { f: mem::ManuallyDrop::new(f), result: mem::MaybeUninit::uninit() };
            // SAFETY: `top` is the page-aligned end of a mapping of OWN_STACK bytes that nothing else uses;
            // `run` follows the C ABI (it keeps the callee-saved registers, `r12` among them, which holds the old
            // stack pointer), and the `call` leaves the stack as the ABI wants it at a function's entry. `run`
            // has written the result when it returns.
            with_signals_blocked(|| unsafe {
                let top = base.cast::<u8>().add(OWN_STACK);
                core::arch::asm!(
                    "mov r12, rsp",
                    "mov rsp, {top}",
                    "call {run}",
                    "mov rsp, r12",
                    top = in(reg) top,
                    run = in(reg) run::<F, R> as extern "C" fn(*mut c_void),
                    in("rdi") ptr::addr_of_mut!(call).cast::<c_void>(),
                    out("r12") _,
                    clobber_abi("C"),
                );
            });
            // SAFETY: our own mapping, no longer used; `run` has written the result.
            unsafe {
                libc::munmap(base, OWN_STACK);
                return call.result.assume_init();
            }
        }
    }
    f()
}

/// Sorts `v` by `key` (heapsort: in place, O(n log n), not stable). The runtime's own sort, because core's
/// `sort_unstable` carries a panic path (for inconsistent orderings) that the archive must not contain.
pub(crate) fn sort_by_key<T, K: Ord>(v: &mut [T], key: impl Fn(&T) -> K) {
    let n = v.len();
    let p = v.as_mut_ptr();
    // SAFETY (for every `unsafe` below): all indices passed are < n, checked by the loop conditions.
    let k = |i: usize| key(unsafe { &*p.add(i) });
    let sift = |mut root: usize, end: usize| loop {
        let mut child = 2 * root + 1;
        if child >= end {
            break;
        }
        if child + 1 < end && k(child) < k(child + 1) {
            child += 1;
        }
        if k(root) >= k(child) {
            break;
        }
        unsafe { ptr::swap(p.add(root), p.add(child)) };
        root = child;
    };
    for i in (0..n / 2).rev() {
        sift(i, n);
    }
    for end in (1..n).rev() {
        unsafe { ptr::swap(p, p.add(end)) };
        sift(0, end);
    }
}

/// `n` in decimal, in the tail of `buf` (no indexing: the runtime has no panic paths, see rt/tests).
pub(crate) fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    for slot in buf.iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        n /= 10;
        at -= 1;
        if n == 0 {
            break;
        }
    }
    buf.get(at..).unwrap_or(&[])
}

/// Sleeps about `ns` nanoseconds (async-signal-safe; a signal only shortens it).
pub(crate) fn sleep_ns(ns: u64) {
    let ts = libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as _ };
    // SAFETY: a valid timespec; the remainder is not wanted.
    unsafe { libc::nanosleep(&ts, core::ptr::null_mut()) };
}

/// A whole decimal number that fits in a u32 (`/proc`'s numbers; a pid in a lock file).
pub(crate) fn parse_decimal(s: &[u8]) -> Option<u32> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u32, |acc, &c| {
        if c.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u32::from(c - b'0'))
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heapsort_matches_std_sort() {
        let mut rng = pathprof_core::fixtures::Rng::new(88172645463325252);
        for len in 0..200usize {
            let mut v: std::vec::Vec<(u64, usize)> = (0..len).map(|i| (rng.below(13), i)).collect();
            let mut want = v.clone();
            want.sort();
            sort_by_key(&mut v, |x| *x);
            assert_eq!(v, want);
        }
    }

    #[test]
    fn decimal_round_trip() {
        for v in [0u32, 7, 10, 12345, u32::MAX] {
            let text = std::format!("{v}");
            assert_eq!(decimal(u64::from(v), &mut [0; 20]), text.as_bytes());
            assert_eq!(parse_decimal(text.as_bytes()), Some(v));
        }
        assert_eq!(decimal(u64::MAX, &mut [0; 20]), b"18446744073709551615");
        assert_eq!(parse_decimal(b"4294967296"), None);
        assert_eq!(parse_decimal(b"12a"), None);
        assert_eq!(parse_decimal(b""), None);
    }
}
