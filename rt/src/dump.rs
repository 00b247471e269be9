//! Writing the profile: the file protocol around [`crate::merge::build`].
//!
//! # Protocol
//! 1. Expand the file name (see [`crate::path`]) to `FILE`.
//! 2. Unless `FILE` exists and is not a regular file (a directory, a device: that fails here, before a lock
//!    file appears next to it), open or create `FILE.lock` and take its lock (see [`crate::lock`]: a holder
//!    that is stopped, or that holds it for a minute, sends this process's counts apart instead). Every writer
//!    of `FILE` — other processes, a `fork()`ed child, another runtime copy in the same process — serialises
//!    here. (If the file system refuses locks the dump goes on unlocked, as compiler-rt does, with a verbose
//!    note.) The lock file stays: removing it would let two writers lock different inodes.
//! 3. Read `FILE` if it exists. It must be openable for writing (so a read-only profile is reported, not
//!    silently replaced) and be a regular file. An empty file counts as absent; a file that fails validation
//!    (magic, version, length, checksum, every record's length) is replaced, with one warning.
//! 4. Drain the counters (atomic swap to 0 in atomic mode) and the path tables (under each table's lock; see
//!    [`crate::table`]) and build the merged image in memory (see [`crate::merge`] for the rules). A dump with
//!    nothing to add (every module already counted in this process's runs, all counters and table counts zero,
//!    no dropped path update) skips steps 2–5.
//! 5. Write it to `FILE.tmp.<pid>` (same directory, same permissions as the old file), `fsync`, `rename` over
//!    `FILE`: readers and crashed writers never see a partial profile. Unlock.
//!
//! # Failures
//! Any failure prints exactly one line, `pathprof: warning: cannot write profile FILE: <reason>`, removes the
//! temporary file, puts the drained counts back into memory and returns `Err`: the program's output and exit
//! status are never affected. (Interval-timer ticks print it only for their first failure.)
//!
//! # Flags
//! Records of modules built without `--pathprof-atomic` that have dense counters, sparse regions or path tables get
//! `RECORD_FLAG_THREADED_NONATOMIC` when the process has ever run more than one thread, sampled after the drain
//! (see [`crate::threads`]). A fatal-signal flush ([`Kind::Fatal`], see [`crate::signals`]) writes even when
//! nothing is new, flags every record it writes `RECORD_FLAG_INCOMPLETE`, runs without `malloc` (see
//! [`crate::sys`]), and takes the file lock without waiting: if another process holds it, it writes this
//! process's records alone to `FILE.<pid>.incomplete` instead of merging into `FILE`. A dump at the process's
//! end ([`Kind::End`]) flags its records `RECORD_FLAG_THREADS_IN_FLIGHT` when another thread ran around the
//! drain (see [`crate::in_flight`]); such a dump never merges into `FILE`: it puts the counts back and tries
//! again, and after [`IN_FLIGHT_TRIES`] attempts the process writes apart, flagged, from then on.

use crate::diag::{pp_info, pp_warn, Dec, Hex};
use crate::lock::{self, Acquired};
use crate::merge::{self, Existing, Group, Note, PathCount};
use crate::path::{self, Vars};
use crate::sys::{self, Errno, Fd, MVec};
use crate::{counters, in_flight, is_atomic, modules, reentry, table, State};
use core::sync::atomic::Ordering;
use pathprof_format::layout::{
    ModuleDesc, FILE_HEADER_LEN, RECORD_FLAG_DROPPED, RECORD_FLAG_HANDLER_ESCAPED, RECORD_FLAG_INCOMPLETE,
    RECORD_FLAG_THREADED_NONATOMIC, RECORD_FLAG_THREADS_IN_FLIGHT,
};

/// Why a dump runs.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `__pathprof_dump`, a `dlclose`d module's unregistration.
    Normal,
    /// The process ends right after it (the exit handler, `_exit`, `exec`, the module destructors after
    /// exit): a thread still running then leaves its activations in flight (see [`crate::in_flight`]).
    End,
    /// A `PATHPROF_DUMP_INTERVAL` tick: like `Normal`, but only its first failure is reported.
    Timer,
    /// The flush of a fatal-signal handler, for this signal number.
    Fatal(libc::c_int),
    /// Right before the program confines itself in a seccomp sandbox (see [`crate::sandbox`]): the last write,
    /// apart and flagged incomplete.
    Confinement,
}

/// Which modules a dump covers.
#[derive(Copy, Clone)]
pub(crate) enum Scope {
    /// Every registered module (`__pathprof_dump`, exit).
    All,
    /// One module that is being unregistered.
    One(*mut ModuleDesc),
}

/// Why a profile could not be written.
enum Fail {
    /// A system call failed.
    Sys(Errno),
    /// `FILE` exists but is not a regular file (a device, a FIFO...): never replaced.
    NotRegular,
    /// A dump at the process's end that was to merge into `FILE` found a thread running around its drain: the
    /// counts are put back and [`run`] tries again, and writes apart after [`IN_FLIGHT_TRIES`] attempts.
    InFlight,
}

impl From<Errno> for Fail {
    fn from(e: Errno) -> Fail {
        Fail::Sys(e)
    }
}

impl crate::diag::Part for Fail {
    fn put(self, line: &mut crate::diag::Line) {
        match self {
            Fail::Sys(e) => e.put(line),
            Fail::NotRegular => line.bytes(b"not a regular file"),
            Fail::InFlight => line.bytes(b"a thread ran during the dump"),
        }
    }
}

/// A registered module taking part in a dump.
#[derive(Copy, Clone)]
struct Taken {
    desc: *mut ModuleDesc,
    meta_hash: u64,
    /// Registration rank, 0 = first registered.
    order: usize,
    /// Offset of its drained values in the snapshot, or `usize::MAX` if excluded (inconsistent duplicate).
    snap_at: usize,
    /// Its drained path counts: `paths[sparse_at..sparse_end]` (copies of one build are contiguous).
    sparse_at: usize,
    sparse_end: usize,
    /// A path-table update of the module was dropped since the last dump (the record gets flagged incomplete).
    dropped: bool,
}

impl Taken {
    fn new(desc: *mut ModuleDesc) -> Taken {
        Taken {
            desc,
            meta_hash: self::desc(desc).meta_hash,
            order: 0,
            snap_at: 0,
            sparse_at: 0,
            sparse_end: 0,
            dropped: false,
        }
    }
}

/// Dumps `scope`; call with the runtime lock held. Prints its own diagnostics. Runs on a stack of its own
/// ([`sys::on_own_stack`]): it may be called on any of the program's stacks.
pub(crate) fn dump(st: &mut State, scope: Scope, kind: Kind) -> Result<(), ()> {
    sys::on_own_stack(|| dump_here(st, scope, kind))
}

fn dump_here(st: &mut State, scope: Scope, kind: Kind) -> Result<(), ()> {
    let pid = sys::pid();
    if st.counted_pid != pid {
        // First dump of this process (or of a forked child): nothing counted yet.
        st.counted.clear();
        st.counted_pid = pid;
    }
    if st.signature.is_none() {
        st.signature = Some(merge::signature(modules().map(|d| desc(d).meta_hash)));
    }

    let mut path = MVec::new();
    let result = run(st, scope, kind, pid, &mut path, 0);
    // A new pair when `run` freed the held one for its files (a no-op when nothing was written).
    st.reserve.hold(2);
    if result.is_err() && kind == Kind::Timer {
        if st.timer_warned {
            return Err(());
        }
        st.timer_warned = true;
    }
    match result {
        Ok(()) => Ok(()),
        Err(Fail::Sys(Errno(libc::ENOMEM))) if path.len() == 0 => {
            pp_warn!("cannot write profile: out of memory");
            Err(())
        }
        Err(f) => {
            pp_warn!("cannot write profile ", path.as_slice(), ": ", f);
            Err(())
        }
    }
}

fn desc<'a>(d: *mut ModuleDesc) -> &'a ModuleDesc {
    // SAFETY: registered descriptors are valid while linked; callers hold the lock, so none is unlinked meanwhile.
    unsafe { &*d }
}

fn meta_of<'a>(d: *mut ModuleDesc) -> &'a [u8] {
    let d = desc(d);
    if d.meta_len == 0 {
        return &[];
    }
    // SAFETY: registration checked meta is non-null with meta_len <= isize::MAX; the pass emits a constant blob.
    unsafe { core::slice::from_raw_parts(d.meta, d.meta_len as usize) }
}

/// One dump; `tries`: the attempts to merge into `FILE` that found a thread running around their drain (see
/// [`Fail::InFlight`]).
fn run(st: &mut State, scope: Scope, kind: Kind, pid: u32, path: &mut MVec<u8>, tries: u32) -> Result<(), Fail> {
    // 1. The modules, oldest first, grouped by build.
    let mut taken: MVec<Taken> = MVec::new();
    match scope {
        Scope::All => {
            for d in modules() {
                taken.push(Taken::new(d))?;
            }
        }
        Scope::One(d) => taken.push(Taken::new(d))?,
    }
    if taken.len() == 0 {
        return Ok(());
    }
    let n = taken.len();
    for (i, t) in taken.as_mut_slice().iter_mut().enumerate() {
        t.order = n - 1 - i;
    }
    sys::sort_by_key(taken.as_mut_slice(), |t| (t.meta_hash, t.order));

    // Snapshot offsets: a group's copies are contiguous. A copy whose sizes or metadata disagree with the first
    // copy of its meta_hash cannot be summed with it and is left out (its counters stay in memory).
    let mut total = 0usize;
    let mut lead: Option<Taken> = None;
    let mut nothing_new = true;
    for t in taken.as_mut_slice() {
        let same_group = lead.is_some_and(|l| l.meta_hash == t.meta_hash);
        if same_group {
            let l = lead.map_or(t.desc, |l| l.desc);
            let consistent = desc(l).num_counters == desc(t.desc).num_counters
                && desc(l).num_tables == desc(t.desc).num_tables
                && meta_of(l) == meta_of(t.desc);
            if !consistent {
                pp_warn!(
                    "two instrumented modules share meta hash ",
                    Hex(t.meta_hash),
                    " but differ; the counts of one are not written"
                );
                t.snap_at = usize::MAX;
                continue;
            }
        } else {
            lead = Some(*t);
            nothing_new &= st.counted.as_slice().binary_search(&t.meta_hash).is_ok();
        }
        t.snap_at = total;
        total = total.checked_add(desc(t.desc).num_counters as usize).ok_or(Errno(libc::ENOMEM))?;
        nothing_new = nothing_new && counters(t.desc).all(|c| c.load(Ordering::Relaxed) == 0);
        nothing_new = nothing_new && !table::has_news(t.desc) && !reentry::has_news(&st.reentries, t.desc);
    }
    if nothing_new && !matches!(kind, Kind::Fatal(_)) {
        // Every module is already counted in this process's runs and nothing was counted since: the file is
        // up to date (this is the common case for a destructor-time unregister after the exit dump).
        return Ok(());
    }
    // The descriptors held for this moment (the program may have used up the rest): only now, so that a dump
    // with nothing to write (every module destructor at exit) costs no new pipe.
    st.reserve.release();

    // 2. File names.
    let mut host = [0u8; 256];
    let tmpdir = sys::env(c"TMPDIR").unwrap_or(b"/tmp");
    let signature = st.signature.unwrap_or(0);
    let vars = Vars { pid, host: path::hostname(&mut host), tmpdir, signature, start_dir: path::start_dir() };
    path::expand(path::profile_pattern(), &vars, path)?;
    if crate::handlers::escaped() || st.apart || kind == Kind::Confinement {
        // A signal handler of this process did not return, the process ends under a running thread (see
        // `locked`) or it is about to confine itself (see `sandbox`): its records are flagged, and merged into
        // FILE the flag would make every run's counts there inexact (a test suite's one stack overflow, every
        // function of the program). This process's counts go to FILE.<pid>.incomplete instead, from now on.
        st.apart = true;
        let mut apart = MVec::new();
        path::sibling(path.as_slice(), b".", Some(pid as u64), &mut apart)?;
        path::sibling(apart.as_slice(), b".incomplete", None, path)?;
    }
    let mut lock_path = MVec::new();
    path::sibling(path.as_slice(), b".lock", None, &mut lock_path)?;
    let mut tmp_path = MVec::new();
    path::sibling(path.as_slice(), b".tmp.", Some(pid as u64), &mut tmp_path)?;

    // 3. Lock, read. A path that names a directory or a device fails before any lock file is created next to it.
    precheck_type(path.as_slice())?;
    let lock = Fd::open(lock_path.as_slice(), libc::O_RDWR | libc::O_CREAT, 0o666)?;
    if let Kind::Fatal(sig) = kind {
        if !lock::try_acquire(&lock, pid) {
            // Another process is writing FILE: do not wait in a dying process; write our records alone.
            drop(lock);
            let mut alone = MVec::new();
            path::sibling(path.as_slice(), b".", Some(pid as u64), &mut alone)?;
            let mut named = MVec::new();
            path::sibling(alone.as_slice(), b".incomplete", None, &mut named)?;
            let mut tmp = MVec::new();
            path::sibling(named.as_slice(), b".tmp", None, &mut tmp)?;
            let result = locked(st, &mut taken, total, named.as_slice(), tmp.as_slice(), kind, false);
            if result.is_ok() {
                pp_warn!(
                    "fatal signal ",
                    Dec(sig as u64),
                    ": ",
                    path.as_slice(),
                    " is locked by another process; wrote this run's incomplete counts to ",
                    named.as_slice()
                );
            } else {
                // Name the file that failed.
                path.clear();
                path.extend_from_slice(named.as_slice())?;
            }
            return result;
        }
    } else {
        match lock::acquire(&lock, pid) {
            Acquired::Held => {}
            why if !st.apart => {
                // Waiting could last forever, or has lasted too long: this process's counts go apart, exact,
                // from now on (see `lock`).
                drop(lock);
                pp_info!(path.as_slice(), " is locked by another process (", why.reason(), "); writing apart");
                path.clear();
                st.apart = true;
                return run(st, scope, kind, pid, path, tries);
            }
            // FILE.<pid>.incomplete is this process's: only another runtime copy in it takes its lock.
            _ => {}
        }
    }
    let result = locked(st, &mut taken, total, path.as_slice(), tmp_path.as_slice(), kind, true);
    lock::release(&lock);
    if let Err(Fail::InFlight) = result {
        // The counts are back in memory. A thread that only woke for a moment is likely asleep at the next
        // attempt; one that keeps running makes the third write apart, flagged. A pause lets a thread that was
        // preempted on its way to a wait (a worker finishing its job on a loaded machine) get there first.
        drop(lock);
        path.clear();
        if tries + 1 >= IN_FLIGHT_TRIES {
            // Apart from now on, flagged: this attempt's drain may be consistent, but the run is not one piece
            // anymore (a module destructor's counts after an exit dump merged into FILE).
            st.apart = true;
            st.threads_ran = true;
        } else {
            sys::sleep_ns(IN_FLIGHT_PAUSE_NS);
        }
        return run(st, scope, kind, pid, path, tries + 1);
    }
    result
}

/// Fails early if `path` exists and is not a regular file (checked again, on the open file, under the lock).
fn precheck_type(path: &[u8]) -> Result<(), Fail> {
    // SAFETY: an all-zero `stat` is valid; `path` is NUL-terminated.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    if unsafe { libc::stat(sys::cstr(path), &mut st) } != 0 {
        return Ok(());
    }
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => Ok(()),
        libc::S_IFDIR => Err(Errno(libc::EISDIR).into()),
        _ => Err(Fail::NotRegular),
    }
}

/// Attempts to merge a dump at the process's end into `FILE` before it goes apart because a thread keeps
/// running around the drain.
const IN_FLIGHT_TRIES: u32 = 3;
/// The pause before another attempt, in nanoseconds.
const IN_FLIGHT_PAUSE_NS: u64 = 1_000_000;

/// Steps 3–5, under the file lock (`merge`: read and merge the existing file; else write a fresh one). At the
/// process's end ([`Kind::End`]) the other threads are looked at right before the drain and after it: if one
/// ran, the records are flagged, and a dump into `FILE` itself gives up with [`Fail::InFlight`] (the counts put
/// back) so that the flag never spreads to the runs merged there.
fn locked(
    st: &mut State,
    taken: &mut MVec<Taken>,
    total: usize,
    path: &[u8],
    tmp: &[u8],
    kind: Kind,
    merge: bool,
) -> Result<(), Fail> {
    let (old, mode) = if merge { read_existing(path)? } else { (Old::Absent, None) };
    let existing = match &old {
        Old::Absent => None,
        Old::Invalid(why) => {
            pp_warn!(path, " is not a valid profile (", *why, "); replacing it");
            None
        }
        Old::Bytes(b) => match merge::validate(b.as_slice())? {
            Ok(e) => Some(e),
            Err(why) => {
                pp_warn!(path, " is not a valid profile (", why, "); replacing it");
                None
            }
        },
    };

    // 4. Drain.
    let mut snap: MVec<u64> = MVec::new();
    snap.extend_fill(0, total)?;
    // Once flagged for good (`threads_ran`), what the census would say no longer matters.
    let census = (kind == Kind::End && !st.threads_ran).then(in_flight::Census::take);
    drain(taken, &mut snap);
    let mut paths: MVec<PathCount> = MVec::new();
    let lost = st.reentries_lost;
    let result = match drain_tables(taken, &mut paths, &mut st.reentries) {
        Ok(()) => {
            // Sampled after the drain: every thread that could have contributed to these counts existed by now.
            let mut flags = if crate::threads::probe() { RECORD_FLAG_THREADED_NONATOMIC } else { 0 };
            if matches!(kind, Kind::Fatal(_) | Kind::Confinement) || lost {
                flags |= RECORD_FLAG_INCOMPLETE;
            }
            if crate::handlers::escaped() {
                flags |= RECORD_FLAG_HANDLER_ESCAPED;
            }
            if census.as_ref().is_some_and(in_flight::Census::ran_since) || st.threads_ran {
                flags |= RECORD_FLAG_THREADS_IN_FLIGHT;
            }
            if flags & RECORD_FLAG_THREADS_IN_FLIGHT != 0 && !st.apart {
                Err(Fail::InFlight)
            } else {
                write_merged(st, taken, &snap, &paths, existing, path, tmp, mode, flags)
            }
        }
        Err(e) => Err(e.into()),
    };
    if result.is_err() {
        restore(taken, &snap);
        table::restore(paths.as_slice());
        for t in taken.as_slice().iter().filter(|t| t.snap_at != usize::MAX) {
            let drained = paths.as_slice().get(t.sparse_at..t.sparse_end).unwrap_or(&[]);
            if reentry::restore(&mut st.reentries, t.desc, drained).is_err() {
                st.reentries_lost = true;
            }
        }
        for t in taken.as_slice().iter().filter(|t| t.dropped) {
            table::mark_dropped(t.desc);
        }
    } else if lost {
        st.reentries_lost = false;
    }
    result
}

/// Moves the included modules' path-table counts and fork re-entries into `paths` (step 4), each build's sorted
/// by (function, path) (re-entries, whose function word has its top bit set, last). On `Err`, what was drained is
/// in `paths` and the `dropped` flags, for [`table::restore`] and [`reentry::restore`].
fn drain_tables(
    taken: &mut MVec<Taken>,
    paths: &mut MVec<PathCount>,
    reentries: &mut MVec<reentry::Reentry>,
) -> Result<(), Errno> {
    for t in taken.as_mut_slice().iter_mut().filter(|t| t.snap_at != usize::MAX) {
        t.sparse_at = paths.len();
        let r = table::drain(t.desc, paths, &mut t.dropped).and_then(|()| reentry::drain(reentries, t.desc, paths));
        t.sparse_end = paths.len();
        r?;
    }
    // One sort per build, over its copies' contiguous entries.
    let mut group: Option<(u64, usize, usize)> = None;
    let included = taken.as_slice().iter().filter(|t| t.snap_at != usize::MAX);
    for t in included.map(Some).chain([None]) {
        match (group, t) {
            (Some((h, start, _)), Some(t)) if h == t.meta_hash => group = Some((h, start, t.sparse_end)),
            (done, next) => {
                if let Some(run) = done.and_then(|(_, a, b)| paths.as_mut_slice().get_mut(a..b)) {
                    sys::sort_by_key(run, |p| (p.function, p.path));
                }
                group = next.map(|t| (t.meta_hash, t.sparse_at, t.sparse_end));
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn write_merged(
    st: &mut State,
    taken: &MVec<Taken>,
    snap: &MVec<u64>,
    paths: &MVec<PathCount>,
    existing: Option<Existing<'_>>,
    path: &[u8],
    tmp: &[u8],
    mode: Option<libc::mode_t>,
    dump_flags: u64,
) -> Result<(), Fail> {
    let mut groups: MVec<Group<'_>> = MVec::new();
    let included = taken.as_slice().iter().filter(|t| t.snap_at != usize::MAX);
    for t in included {
        let d = desc(t.desc);
        let n = d.num_counters as usize;
        let values = snap.as_slice().get(t.snap_at..t.snap_at.saturating_add(n)).unwrap_or(&[]);
        let mut flags =
            dump_flags & (RECORD_FLAG_INCOMPLETE | RECORD_FLAG_HANDLER_ESCAPED | RECORD_FLAG_THREADS_IN_FLIGHT);
        if t.dropped {
            flags |= RECORD_FLAG_DROPPED;
        }
        // Dense counters, sparse regions and cached/plain table updates of a non-atomic build are all plain adds.
        let plain_updates = n > 0 || d.num_tables > 0 || d.num_regions > 0;
        if dump_flags & RECORD_FLAG_THREADED_NONATOMIC != 0 && !is_atomic(t.desc) && plain_updates {
            flags |= RECORD_FLAG_THREADED_NONATOMIC;
        }
        let last = groups.as_mut_slice().last_mut();
        match last {
            // A further copy of the same build: its values and path counts follow the previous copy's.
            Some(g) if g.meta_hash == t.meta_hash => {
                let start = t.snap_at.saturating_sub(g.snap.len());
                g.snap = snap.as_slice().get(start..t.snap_at.saturating_add(n)).unwrap_or(g.snap);
                let start = t.sparse_at.saturating_sub(g.sparse.len());
                g.sparse = paths.as_slice().get(start..t.sparse_end).unwrap_or(g.sparse);
                g.flags |= flags;
            }
            _ => groups.push(Group {
                meta_hash: d.meta_hash,
                name_hash: d.name_hash,
                flags,
                meta: meta_of(t.desc),
                num_counters: n,
                snap: values,
                sparse: paths.as_slice().get(t.sparse_at..t.sparse_end).unwrap_or(&[]),
                runs_add: u64::from(st.counted.as_slice().binary_search(&d.meta_hash).is_err()),
                order: t.order,
            })?,
        }
    }

    let mut image = MVec::new();
    let summary = merge::build(existing, groups.as_slice(), &mut image, &mut |note| match note {
        // A rebuild replacing its own old counts is healthy use: said only when asked (see crate::diag).
        Note::Stale { name_hash } => {
            pp_info!(path, ": replacing the counts of an older build of a module (name hash ", Hex(name_hash), ")")
        }
        Note::Mismatch { meta_hash } => {
            pp_warn!(path, ": dropping an inconsistent record (meta hash ", Hex(meta_hash), ")")
        }
    })?;

    // 5. Temporary file, then rename.
    if let Err(e) = write_file(tmp, path, image.as_slice(), mode) {
        // SAFETY: NUL-terminated path; a failure to remove is ignored (the file may never have been created).
        unsafe { libc::unlink(sys::cstr(tmp)) };
        return Err(e);
    }
    for g in groups.as_slice() {
        if let Err(at) = st.counted.as_slice().binary_search(&g.meta_hash) {
            // Failing to remember only means a later dump of this process counts the run again.
            let _ = st.counted.insert(at, g.meta_hash);
        }
    }
    pp_info!(
        "wrote ",
        path,
        ": ",
        Dec(summary.merged as u64),
        " merged, ",
        Dec(summary.added as u64),
        " added, ",
        Dec(summary.kept as u64),
        " kept, ",
        Dec(summary.dropped as u64),
        " dropped"
    );
    Ok(())
}

fn write_file(tmp: &[u8], path: &[u8], image: &[u8], mode: Option<libc::mode_t>) -> Result<(), Fail> {
    let fd = Fd::open(tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o666)?;
    if let Some(m) = mode {
        // Keep the replaced profile's permissions; best effort.
        // SAFETY: valid fd.
        unsafe { libc::fchmod(fd.raw(), m) };
    }
    fd.write_all(image)?;
    // SAFETY: valid fd.
    if unsafe { libc::fsync(fd.raw()) } != 0 {
        return Err(Errno::last().into());
    }
    fd.close()?;
    // SAFETY: both paths are NUL-terminated.
    if unsafe { libc::rename(sys::cstr(tmp), sys::cstr(path)) } != 0 {
        return Err(Errno::last().into());
    }
    Ok(())
}

/// The current profile.
enum Old {
    /// No file, or an empty one.
    Absent,
    /// The header already shows it is not a profile (nothing more was read).
    Invalid(merge::Invalid),
    /// The whole file, still to be validated.
    Bytes(MVec<u8>),
}

/// Reads `path` (step 3) and returns it with its permission bits.
fn read_existing(path: &[u8]) -> Result<(Old, Option<libc::mode_t>), Fail> {
    // Opening for writing makes a read-only profile an error here rather than something rename would replace.
    let fd = match Fd::open(path, libc::O_RDWR | libc::O_NONBLOCK, 0) {
        Ok(fd) => fd,
        Err(Errno(libc::ENOENT)) => return Ok((Old::Absent, None)),
        Err(e) => return Err(e.into()),
    };
    let st = fd.stat()?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(Fail::NotRegular);
    }
    let mode = Some(st.st_mode & 0o7777);
    let len = st.st_size as u64;
    if len == 0 {
        return Ok((Old::Absent, mode));
    }
    let mut head = [0u8; FILE_HEADER_LEN];
    if len < FILE_HEADER_LEN as u64 {
        return Ok((Old::Invalid("shorter than the file header"), mode));
    }
    fd.read_exact_at(&mut head, 0)?;
    if let Err(why) = merge::precheck(&head, len) {
        return Ok((Old::Invalid(why), mode));
    }
    let mut buf = MVec::new();
    buf.extend_fill(0u8, usize::try_from(len).map_err(|_| Errno(libc::EFBIG))?)?;
    fd.read_exact_at(buf.as_mut_slice(), 0)?;
    Ok((Old::Bytes(buf), mode))
}

/// Moves the included modules' counts into `snap` (step 4).
fn drain(taken: &MVec<Taken>, snap: &mut MVec<u64>) {
    let snap = snap.as_mut_slice();
    for t in taken.as_slice().iter().filter(|t| t.snap_at != usize::MAX) {
        let atomic = is_atomic(t.desc);
        let out = snap.get_mut(t.snap_at..).unwrap_or(&mut []);
        for (c, v) in counters(t.desc).zip(out.iter_mut()) {
            *v = if atomic {
                c.swap(0, Ordering::Relaxed)
            } else {
                // Non-atomic mode: increments from other threads between these two moves are lost, as any
                // concurrent increment of a non-atomic counter may be.
                let x = c.load(Ordering::Relaxed);
                c.store(0, Ordering::Relaxed);
                x
            };
        }
    }
}

/// Adds drained counts back after a failed write, so a later dump can still report them.
fn restore(taken: &MVec<Taken>, snap: &MVec<u64>) {
    for t in taken.as_slice().iter().filter(|t| t.snap_at != usize::MAX) {
        let atomic = is_atomic(t.desc);
        let vals = snap.as_slice().get(t.snap_at..).unwrap_or(&[]);
        for (c, &v) in counters(t.desc).zip(vals.iter()) {
            if atomic {
                c.fetch_add(v, Ordering::Relaxed);
            } else {
                c.store(c.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
            }
        }
    }
}
