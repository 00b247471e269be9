//! The C library functions the runtime brings itself, because a program may define its own.
//!
//! The runtime is linked into the program, so its calls of `memcpy`, `strlen`, `write` or `clock_gettime`
//! bind to the program's definitions when it has them — a freestanding string library, a test that mocks the
//! clock. Instrumented, such a function counted the runtime's own calls (an edge build of a program with its own
//! `memcpy`, `memset` and `strlen` reported 38, 43 and 218 entries for 10, 10 and 1 calls) and, in trace mode,
//! re-entered the tracer while it registered the module: the program hung. `scripts/rt-archive.sh` renames every
//! reference in the archive — the runtime's calls and the compiler's (`memcpy` for
//! a struct copy, `bcmp` for a slice comparison) — to `pathprof_libc_NAME` for every such function defined here (test-suite/tests/hygiene.rs checks the archive): the memory and string
//! functions as plain loops the compiler cannot turn back into library calls, the rest as the system calls
//! they wrap (x86-64; elsewhere through `syscall(2)`). Each keeps its C library contract, `errno` included.
//! What stays with the C library (threads, signals, the dynamic loader, `atexit`, `strerror`) is what a program
//! replaces only to wrap it.

use core::ffi::{c_char, c_int, c_long, c_uint, c_void};

/// Copies with `rep movsb` (fast on every x86-64 since Ivy Bridge); a volatile loop elsewhere.
#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_memcpy(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    copy_forward(dst.cast(), src.cast(), n);
    dst
}

#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_memmove(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    let (d, s) = (dst as usize, src as usize);
    if d <= s || d >= s.wrapping_add(n) {
        copy_forward(dst.cast(), src.cast(), n);
    } else {
        // The destination overlaps the source's end: copy from the last byte down.
        let mut i = n;
        while i > 0 {
            i -= 1;
            core::ptr::write_volatile(dst.cast::<u8>().add(i), core::ptr::read_volatile(src.cast::<u8>().add(i)));
        }
    }
    dst
}

#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_memset(dst: *mut c_void, c: c_int, n: usize) -> *mut c_void {
    #[cfg(target_arch = "x86_64")]
    core::arch::asm!("rep stosb", inout("rdi") dst => _, inout("rcx") n => _, in("al") c as u8,
        options(nostack, preserves_flags));
    #[cfg(not(target_arch = "x86_64"))]
    for i in 0..n {
        core::ptr::write_volatile(dst.cast::<u8>().add(i), c as u8);
    }
    dst
}

#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_memcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int {
    for i in 0..n {
        let (x, y) = (core::ptr::read_volatile(a.cast::<u8>().add(i)), core::ptr::read_volatile(b.cast::<u8>().add(i)));
        if x != y {
            return c_int::from(x) - c_int::from(y);
        }
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_bcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int {
    pathprof_libc_memcmp(a, b, n)
}

#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_strlen(s: *const c_char) -> usize {
    let mut n = 0;
    while core::ptr::read_volatile(s.add(n)) != 0 {
        n += 1;
    }
    n
}

unsafe fn copy_forward(dst: *mut u8, src: *const u8, n: usize) {
    #[cfg(target_arch = "x86_64")]
    core::arch::asm!("rep movsb", inout("rdi") dst => _, inout("rsi") src => _, inout("rcx") n => _,
        options(nostack, preserves_flags));
    #[cfg(not(target_arch = "x86_64"))]
    for i in 0..n {
        core::ptr::write_volatile(dst.add(i), core::ptr::read_volatile(src.add(i)));
    }
}

/// A system call: its result, or -1 with `errno` set.
unsafe fn sys(n: c_long, args: [usize; 6]) -> c_long {
    let r = raw(n, args);
    if (-4095..0).contains(&r) {
        *libc::__errno_location() = -r as c_int;
        return -1;
    }
    r
}

#[cfg(target_arch = "x86_64")]
unsafe fn raw(n: c_long, a: [usize; 6]) -> c_long {
    let r: c_long;
    core::arch::asm!("syscall", inlateout("rax") n => r, in("rdi") a[0], in("rsi") a[1], in("rdx") a[2],
        in("r10") a[3], in("r8") a[4], in("r9") a[5], lateout("rcx") _, lateout("r11") _, options(nostack));
    r
}

/// Elsewhere the C library's `syscall(2)`, its errno convention undone.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn raw(n: c_long, a: [usize; 6]) -> c_long {
    let r = libc::syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
    if r == -1 {
        -(*libc::__errno_location() as c_long)
    } else {
        r
    }
}

/// Defines `pathprof_libc_NAME(args) -> ret` as system call `nr` with the arguments in order.
macro_rules! syscalls {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty = $nr:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            #[allow(unused_mut)]
            let mut a = [0usize; 6];
            let mut _i = 0;
            $( a[_i] = $arg as usize; _i += 1; )*
            sys($nr, a) as $ret
        }
    )*};
}

const CWD: usize = libc::AT_FDCWD as usize;

syscalls! {
    pathprof_libc_read(fd: c_int, buf: *mut c_void, n: usize) -> isize = libc::SYS_read;
    pathprof_libc_write(fd: c_int, buf: *const c_void, n: usize) -> isize = libc::SYS_write;
    pathprof_libc_pread(fd: c_int, buf: *mut c_void, n: usize, off: i64) -> isize = libc::SYS_pread64;
    pathprof_libc_pwrite(fd: c_int, buf: *const c_void, n: usize, off: i64) -> isize = libc::SYS_pwrite64;
    pathprof_libc_close(fd: c_int) -> c_int = libc::SYS_close;
    pathprof_libc_fstat(fd: c_int, st: *mut libc::stat) -> c_int = libc::SYS_fstat;
    pathprof_libc_flock(fd: c_int, op: c_int) -> c_int = libc::SYS_flock;
    pathprof_libc_fsync(fd: c_int) -> c_int = libc::SYS_fsync;
    pathprof_libc_ftruncate(fd: c_int, len: i64) -> c_int = libc::SYS_ftruncate;
    pathprof_libc_fchmod(fd: c_int, mode: c_uint) -> c_int = libc::SYS_fchmod;
    pathprof_libc_fcntl(fd: c_int, cmd: c_int, arg: usize) -> c_int = libc::SYS_fcntl;
    pathprof_libc_pipe2(fds: *mut c_int, flags: c_int) -> c_int = libc::SYS_pipe2;
    pathprof_libc_munmap(addr: *mut c_void, len: usize) -> c_int = libc::SYS_munmap;
    pathprof_libc_mincore(addr: *mut c_void, len: usize, vec: *mut u8) -> c_int = libc::SYS_mincore;
    pathprof_libc_getpid() -> c_int = libc::SYS_getpid;
    pathprof_libc_sched_yield() -> c_int = libc::SYS_sched_yield;
    pathprof_libc_nanosleep(req: *const libc::timespec, rem: *mut libc::timespec) -> c_int = libc::SYS_nanosleep;
    pathprof_libc_clock_gettime(clock: c_int, ts: *mut libc::timespec) -> c_int = libc::SYS_clock_gettime;
    pathprof_libc_getrusage(who: c_int, usage: *mut libc::rusage) -> c_int = libc::SYS_getrusage;
}

#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    sys(libc::SYS_openat, [CWD, path as usize, flags as usize, mode as usize, 0, 0]) as c_int
}

#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_stat(path: *const c_char, st: *mut libc::stat) -> c_int {
    sys(libc::SYS_newfstatat, [CWD, path as usize, st as usize, 0, 0, 0]) as c_int
}

#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_unlink(path: *const c_char) -> c_int {
    sys(libc::SYS_unlinkat, [CWD, path as usize, 0, 0, 0, 0]) as c_int
}

#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_rename(from: *const c_char, to: *const c_char) -> c_int {
    sys(libc::SYS_renameat, [CWD, from as usize, CWD, to as usize, 0, 0]) as c_int
}

#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_readlink(path: *const c_char, buf: *mut c_char, n: usize) -> isize {
    sys(libc::SYS_readlinkat, [CWD, path as usize, buf as usize, n, 0, 0]) as isize
}

#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_getrlimit(resource: c_int, lim: *mut libc::rlimit) -> c_int {
    sys(libc::SYS_prlimit64, [0, resource as usize, 0, lim as usize, 0, 0]) as c_int
}

/// The kernel's `getcwd` returns the length; the C library's the buffer (null on failure).
#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_getcwd(buf: *mut c_char, n: usize) -> *mut c_char {
    if sys(libc::SYS_getcwd, [buf as usize, n, 0, 0, 0, 0]) < 0 {
        return core::ptr::null_mut();
    }
    buf
}

/// `uname(2)`'s node name, NUL-terminated if it fits (`ENAMETOOLONG` otherwise, as glibc does).
#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_gethostname(buf: *mut c_char, n: usize) -> c_int {
    let mut uts: libc::utsname = core::mem::zeroed();
    if sys(libc::SYS_uname, [core::ptr::addr_of_mut!(uts) as usize, 0, 0, 0, 0, 0]) < 0 {
        return -1;
    }
    let name = &uts.nodename;
    let len = name.iter().position(|&c| c == 0).unwrap_or(name.len());
    if len >= n {
        *libc::__errno_location() = libc::ENAMETOOLONG;
        return -1;
    }
    for (i, &c) in name.iter().take(len).enumerate() {
        *buf.add(i) = c;
    }
    *buf.add(len) = 0;
    0
}

#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_mmap(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: i64,
) -> *mut c_void {
    mapping(sys(libc::SYS_mmap, [addr as usize, len, prot as usize, flags as usize, fd as usize, off as usize]))
}

#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_mremap(
    old: *mut c_void,
    old_len: usize,
    new_len: usize,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    mapping(sys(libc::SYS_mremap, [old as usize, old_len, new_len, flags as usize, new_addr as usize, 0]))
}

/// A mapping call's address, or `MAP_FAILED` (`errno` set).
fn mapping(r: c_long) -> *mut c_void {
    if r == -1 {
        libc::MAP_FAILED
    } else {
        r as *mut c_void
    }
}

/// Returns the error number instead of setting `errno`, as its C library contract says.
#[no_mangle]
pub unsafe extern "C" fn pathprof_libc_clock_nanosleep(
    clock: c_int,
    flags: c_int,
    req: *const libc::timespec,
    rem: *mut libc::timespec,
) -> c_int {
    let r = raw(libc::SYS_clock_nanosleep, [clock as usize, flags as usize, req as usize, rem as usize, 0, 0]);
    if r < 0 {
        -r as c_int
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::vec::Vec;

    /// The memory and string functions against slices' own operations, on every length and offset up to 40
    /// (overlaps both ways for `memmove`).
    #[test]
    fn memory_functions_match_the_slice_operations() {
        let base: Vec<u8> = (0..80u32).map(|i| (i * 37 % 251) as u8).collect();
        for n in 0..40usize {
            for shift in 0..8usize {
                let mut buf = base.clone();
                let mut want = base.clone();
                want.copy_within(shift..shift + n, 8);
                unsafe { pathprof_libc_memmove(buf.as_mut_ptr().add(8).cast(), buf.as_ptr().add(shift).cast(), n) };
                assert_eq!(buf, want, "memmove down n={n} shift={shift}");
                let mut buf = base.clone();
                let mut want = base.clone();
                want.copy_within(8..8 + n, shift);
                unsafe { pathprof_libc_memmove(buf.as_mut_ptr().add(shift).cast(), buf.as_ptr().add(8).cast(), n) };
                assert_eq!(buf, want, "memmove up n={n} shift={shift}");
            }
            let mut dst = std::vec![0u8; 40];
            unsafe { pathprof_libc_memcpy(dst.as_mut_ptr().cast(), base.as_ptr().add(3).cast(), n) };
            assert_eq!(dst[..n], base[3..3 + n]);
            assert!(dst[n..].iter().all(|&b| b == 0));
            unsafe { pathprof_libc_memset(dst.as_mut_ptr().cast(), 0x1ab, n) };
            assert!(dst[..n].iter().all(|&b| b == 0xab) && dst[n..].iter().all(|&b| b == 0));
            let (a, mut b) = (base[..n].to_vec(), base[..n].to_vec());
            assert_eq!(unsafe { pathprof_libc_memcmp(a.as_ptr().cast(), b.as_ptr().cast(), n) }, 0);
            if n > 0 {
                b[n - 1] = b[n - 1].wrapping_add(1);
                let got = unsafe { pathprof_libc_memcmp(a.as_ptr().cast(), b.as_ptr().cast(), n) };
                assert_eq!(got.signum(), (a.cmp(&b) as i32).signum(), "n={n}");
                assert_ne!(unsafe { pathprof_libc_bcmp(a.as_ptr().cast(), b.as_ptr().cast(), n) }, 0);
            }
            let s = CString::new(std::vec![b'x'; n]).unwrap();
            assert_eq!(unsafe { pathprof_libc_strlen(s.as_ptr()) }, n);
        }
    }

    /// The system-call functions keep the C library's contracts: results, `errno`, and the three whose kernel
    /// interface differs (getcwd's pointer, clock_nanosleep's error number, mmap's MAP_FAILED).
    #[test]
    fn system_call_functions_keep_the_c_library_contracts() {
        let dir = std::env::temp_dir().join(std::format!("pathprof-own-libc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = CString::new(dir.join("f").to_str().unwrap()).unwrap();
        let moved = CString::new(dir.join("g").to_str().unwrap()).unwrap();
        unsafe {
            let fd = pathprof_libc_open(path.as_ptr(), libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, 0o600);
            assert!(fd >= 0);
            assert_eq!(pathprof_libc_write(fd, b"hello".as_ptr().cast(), 5), 5);
            assert_eq!(pathprof_libc_pwrite(fd, b"J".as_ptr().cast(), 1, 0), 1);
            let mut buf = [0u8; 8];
            assert_eq!(pathprof_libc_pread(fd, buf.as_mut_ptr().cast(), 8, 0), 5);
            assert_eq!(&buf[..5], b"Jello");
            let mut st: libc::stat = core::mem::zeroed();
            assert_eq!(pathprof_libc_fstat(fd, &mut st), 0);
            assert_eq!(st.st_size, 5);
            assert_eq!(pathprof_libc_ftruncate(fd, 2), 0);
            assert_eq!(pathprof_libc_fsync(fd), 0);
            assert_eq!(pathprof_libc_flock(fd, libc::LOCK_EX | libc::LOCK_NB), 0);
            assert_eq!(pathprof_libc_fchmod(fd, 0o640), 0);
            assert_eq!(pathprof_libc_fcntl(fd, libc::F_GETFD, 0), libc::fcntl(fd, libc::F_GETFD));
            assert_eq!(pathprof_libc_close(fd), 0);
            assert_eq!(pathprof_libc_close(fd), -1);
            assert_eq!(*libc::__errno_location(), libc::EBADF);
            assert_eq!(pathprof_libc_stat(path.as_ptr(), &mut st), 0);
            assert_eq!((st.st_size, st.st_mode & 0o777), (2, 0o640));
            assert_eq!(pathprof_libc_rename(path.as_ptr(), moved.as_ptr()), 0);
            assert_eq!(pathprof_libc_stat(path.as_ptr(), &mut st), -1);
            assert_eq!(*libc::__errno_location(), libc::ENOENT);
            assert_eq!(pathprof_libc_unlink(moved.as_ptr()), 0);

            let mut cwd = [0 as c_char; 4096];
            assert_eq!(pathprof_libc_getcwd(cwd.as_mut_ptr(), cwd.len()), cwd.as_mut_ptr());
            let cwd = core::ffi::CStr::from_ptr(cwd.as_ptr()).to_str().unwrap();
            assert_eq!(std::path::Path::new(cwd), std::env::current_dir().unwrap());
            let mut tiny = [0 as c_char; 1];
            assert!(pathprof_libc_getcwd(tiny.as_mut_ptr(), 1).is_null());
            assert_eq!(*libc::__errno_location(), libc::ERANGE);
            let mut link = [0 as c_char; 64];
            let self_exe = CString::new("/proc/self/exe").unwrap();
            let n = pathprof_libc_readlink(self_exe.as_ptr(), link.as_mut_ptr(), link.len());
            assert!(n > 0);

            let (mut mine, mut theirs) = ([0 as c_char; 256], [0 as c_char; 256]);
            assert_eq!(pathprof_libc_gethostname(mine.as_mut_ptr(), 256), 0);
            assert_eq!(libc::gethostname(theirs.as_mut_ptr(), 256), 0);
            assert_eq!(mine, theirs);
            assert_eq!(pathprof_libc_gethostname(mine.as_mut_ptr(), 0), -1);

            let mut fds = [0; 2];
            assert_eq!(pathprof_libc_pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0);
            assert_eq!(pathprof_libc_write(fds[1], b"ab".as_ptr().cast(), 2), 2);
            let mut got = [0u8; 2];
            assert_eq!(pathprof_libc_read(fds[0], got.as_mut_ptr().cast(), 2), 2);
            assert_eq!(&got, b"ab");
            pathprof_libc_close(fds[0]);
            pathprof_libc_close(fds[1]);

            let page = 4096;
            let p = pathprof_libc_mmap(
                core::ptr::null_mut(),
                page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            *p.cast::<u8>() = 7;
            let q = pathprof_libc_mremap(p, page, 4 * page, libc::MREMAP_MAYMOVE, core::ptr::null_mut());
            assert_ne!(q, libc::MAP_FAILED);
            assert_eq!(*q.cast::<u8>(), 7);
            let mut resident = [0u8; 4];
            assert_eq!(pathprof_libc_mincore(q, 4 * page, resident.as_mut_ptr()), 0);
            assert_eq!(resident[0] & 1, 1);
            assert_eq!(pathprof_libc_munmap(q, 4 * page), 0);
            let bad = pathprof_libc_mmap(core::ptr::null_mut(), page, libc::PROT_READ, libc::MAP_PRIVATE, -1, 0);
            assert_eq!(bad, libc::MAP_FAILED);
            assert_eq!(*libc::__errno_location(), libc::EBADF);

            assert_eq!(pathprof_libc_getpid(), libc::getpid());
            assert_eq!(pathprof_libc_sched_yield(), 0);
            let (mut t0, mut t1) = (core::mem::zeroed::<libc::timespec>(), core::mem::zeroed::<libc::timespec>());
            assert_eq!(pathprof_libc_clock_gettime(libc::CLOCK_MONOTONIC, &mut t0), 0);
            let nap = libc::timespec { tv_sec: 0, tv_nsec: 1_000_000 };
            assert_eq!(pathprof_libc_nanosleep(&nap, core::ptr::null_mut()), 0);
            assert_eq!(pathprof_libc_clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &nap, core::ptr::null_mut()), 0);
            assert_eq!(pathprof_libc_clock_gettime(libc::CLOCK_MONOTONIC, &mut t1), 0);
            let ns = |t: libc::timespec| t.tv_sec * 1_000_000_000 + t.tv_nsec;
            assert!(ns(t1) - ns(t0) >= 2_000_000);
            let wrong = libc::timespec { tv_sec: 0, tv_nsec: 2_000_000_000 };
            assert_eq!(
                pathprof_libc_clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &wrong, core::ptr::null_mut()),
                libc::EINVAL
            );

            let (mut mine, mut theirs) = (core::mem::zeroed::<libc::rlimit>(), core::mem::zeroed::<libc::rlimit>());
            assert_eq!(pathprof_libc_getrlimit(libc::RLIMIT_NOFILE as c_int, &mut mine), 0);
            assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut theirs), 0);
            assert_eq!((mine.rlim_cur, mine.rlim_max), (theirs.rlim_cur, theirs.rlim_max));
            let mut usage = core::mem::zeroed::<libc::rusage>();
            assert_eq!(pathprof_libc_getrusage(libc::RUSAGE_SELF, &mut usage), 0);
            assert!(usage.ru_maxrss > 0);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
