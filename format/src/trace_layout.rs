//! Trace mode's byte layout (`no_std`, no allocation), shared by the pass (the per-thread state instrumented code
//! updates), the runtime (which writes the trace file) and the reader.
//!
//! # Per-thread state (`TraceTls`, [`TLS_WORDS`] `u64`s, thread-local, zero-initialised)
//! - [`TLS_ACC`]: the bits not yet spilled, under a marker bit: the first pending bit just below the marker, the
//!   last in bit 0 ([`ACC_EMPTY`]: none; [`acc_bits`] gives them in the file's order). One word, so that a bit
//!   costs a shift, an or and one store, and a signal handler never finds bits and count disagreeing.
//!   [`TLS_UNUSED`] was the count of an earlier layout.
//! - [`TLS_STATE`]: where the thread is, for the call-marker model: 0 = not seen yet; `2k` = in the body of an
//!   activation at depth k; `2k + 1` = inside a call site of depth k's activation (depth 0: the thread's top
//!   level). An entry when the state is even, or a call site returning to a state other than its own, is an
//!   abnormal transfer (a signal handler, `longjmp`, an exception): the runtime records where the trace stops
//!   being regenerable. The site's number is in bits 32..63, and bit 63 ([`STATE_CERTAIN`]) marks a site
//!   where no other activation may begin: a *certain* call site, whose callee's entry writes no marker, or a
//!   direct call site whose announced callee (one without landing pads) began there — its entry sets the flag
//!   in the state it restores on return, and the site then writes no Done. An entry that finds the flag
//!   without a certain announcement (a signal handler, a function wrapping the callee) is abnormal too.
//! - [`TLS_THREAD`]: the runtime's record of the thread (0 until the thread's first entry).
//! - [`TLS_SHADOW`]: 0, or (flight recorder, region tracing) the thread's shadow stack, [`SHADOW_ENTRIES`]
//!   `u64`s: every entry at depth k stores [`shadow_entry`] at index `2k % SHADOW_ENTRIES` (its body state), so
//!   that the runtime
//!   knows every activation's function and the call site it waits at. Bit 0 of the pointer set = a sync is
//!   wanted: the entry calls the runtime's sync right after its `Enter` marker.
//! - [`TLS_CALLEE`]: the announced callee (`pathprof_core::tracing::regenerate`, "Direct calls"): a direct call
//!   site of a traced function of the same module stores 1 + the callee's trace id before the call (before
//!   the call site's state, so a signal handler in between finds a body state: an abnormal transfer); every
//!   entry, call-site return, resync, unwind and abandon marker clears it. Nonzero, it says the stream is at a
//!   fresh direct call site: the entry of that callee writes `1`, any other activation `01` and its id (the
//!   markers too), the site's Done `00`; zero, an entry writes `1` and its id, a Done `0`. A *certain*
//!   call site (an implicit call: `pathprof_core::tracing::regenerate`, "Implicit calls"), whose callee is a
//!   definition of the module the call is sure to run, stores [`CALLEE_CERTAIN`] | (1 + the callee's id): that
//!   callee's entry then writes nothing, and the site writes no Done.
//!
//! - [`TLS_CACHE`]: the entry cache (`pathprof_core::tracing::bits`, "Entry cache"): an activation written with
//!   a full id (`1` + id, or `01` + id at a fresh direct call site) writes after its prefix a hit flag: `1` and
//!   the [`ENTRY_CACHE_BITS`]-bit slot when slot `id % ENTRY_CACHE_SLOTS` holds the id, else `0` and the
//!   [`FUNC_ID_BITS`]-bit id; either way the slot then holds the id (the markers' reserved ids too). The cache starts empty (every slot `u32::MAX`, no id) with the thread and is emptied where a region
//!   starts (its sync record); a flight-recorder thread has none (its sync points are not all in the file).
//!
//! When 64 bits are full, instrumented code calls the runtime's spill with the word; the runtime appends it to
//! the thread's buffer and writes full buffers to the file as [`REC_DATA`] records.
//!
//! # Trace file
//! A [`FILE_HEADER`]-byte header ([`FileHeader`]: [`TRACE_MAGIC`], `u32` [`TRACE_VERSION`], `u32 pid`, `u32`
//! runtime copies, `u64` process token, `u32` next trace id, `u32` zero), then records: a
//! [`RECORD_HEADER`]-byte header (`u32 kind, u32 pid, u32 thread, u32 copy, u64 payload length`) and the
//! payload.
//!
//! *Runtime copies.* A process may hold several copies of the runtime — an instrumented executable and
//! instrumented shared libraries each link their own hidden copy — and every copy keeps its own per-thread
//! streams of its own image's functions. They share one file: under `flock`, the first copy of a process to
//! open it writes the header (truncating a file an earlier process left), a later copy of the same process
//! (same pid and token, the process's `AT_RANDOM` bytes) joins it and takes the next copy number. Trace ids are
//! allocated from the header's next id, so the modules of all copies of a process have disjoint ids. A record
//! of another process (one that wrote the same name at the same time: its file was cut by this process's
//! start) carries a pid other than the header's; readers leave it out and say so.
//!
//! Records:
//! - [`REC_MODULE`]: `u32 base, u32 functions`, then the module's trace metadata (`trace::TraceModuleMeta`):
//!   its functions have trace ids `base..base + functions`.
//! - [`REC_DATA`]: `u64 first` (the index, in the thread's stream, of its first word), then whole
//!   little-endian `u64` words of the thread's bits (words a thread drops — a region stopped, a flight
//!   recorder's overwritten past — leave gaps in the indices). Since version 9 each word is as
//!   [`TLS_ACC`] filled it, its first bit highest ([`DATA_FIRST_BIT_HIGHEST_SINCE`]: reversing it would cost
//!   the runtime more per word than the instrumented code spends on 64 bits of a deferred loop); the reader
//!   turns it around. Version 8's words, and the partial words of the end and stop records in every version,
//!   hold their first bit lowest.
//! - [`REC_SYNC`]: a point where the thread's stream can be read from without what came before: `u64 bit`,
//!   `u64 kind` ([`SYNC_AT_ENTRY`]: right after an `Enter` marker, the deepest activation at its entry;
//!   [`SYNC_AT_SITE`]: every activation waits at a call site), `u64 state` (the thread state there), `u64
//!   depth` d, then d shadow entries (depth 1 first). Activation k waits at the call site in entry k + 1's
//!   site field (module-wide call-site numbers, 1-based, in the order of the module's functions, blocks and
//!   calls); the deepest one (at a site) at the site in `state`'s high half.
//! - [`REC_STOP`]: a region's end (`__pathprof_trace_stop`): `u64 bit, u64 the partial word there`.
//! - [`REC_END`]: `u64 total bits, u64 last partial word, u64 flags (`END_*`; a fatal signal's number in bits
//!   32..40), u64 bit where the trace stops being regenerable (`u64::MAX`: nowhere), u64 fork bit` (in a
//!   `fork()`ed child, [`END_FORK_CHILD`]: the bits before it are the parent's, inherited unflushed), `u64`
//!   the thread's id in the operating system (`gettid`: the same thread in another copy's streams).
//! - [`REC_IMAGE`]: the path of the image (executable or shared object) whose runtime copy wrote the record's
//!   copy number, written when the copy opens the file.
//!   With [`END_WINDOW`] the thread's bits are only the windows its syncs open (a flight recorder's last
//!   bytes, or regions), each up to the next `REC_STOP` at or after it, or up to the end.
//! - [`REC_PARENT`] (a `fork()`ed child's copy, once, when it opens its own file): `u32` pid and `u32` copy
//!   number the copy had in the file it inherited, `u64` that file's process token, then its path. The words a
//!   child's thread inherited already written (before its first `REC_DATA` record's index) are that copy's
//!   words of the same thread number there: the reader splices them in (`trace::TraceFile::parse_with_parents`).
//! - [`REC_UNTRACED_FORK`] (no payload; the record's pid is the child's, not the file's): a `fork()`ed child
//!   that writes no trace of its own (a name without `%p`) appends it to the file it inherited, once per
//!   runtime copy: what it ran after the fork is in no trace.
//! - [`REC_HANDLERS`]: `u32` host, `u32` zero: the record's thread number names a *handler stream*, the signal
//!   handlers the runtime's trampoline ran on thread `host` (of the same copy), one after another at the
//!   stream's top level, as if the stream's thread called them. The trampoline sets the interrupted stream's
//!   state words aside for each handler and puts them back when it returns, so neither stream sees the other;
//!   a handler interrupted by a signal gets a handler stream of its own. Written once, before or after the
//!   stream's other records.
//! - [`REC_RESUMED`]: `u32` from, `u32` zero: a signal handler left stream `from` through `siglongjmp` to a
//!   `setjmp` of one of its activations; `from` ends where the signal came (abnormal: it was left in the middle
//!   of a body), and the thread goes on in the record's thread, whose stream is read from a `REC_SYNC` at its
//!   bit 0 — the activations up to the `setjmp`'s, which waits at the `setjmp` call site — so it is a window
//!   ([`END_WINDOW`]). Written with that sync record.
//! - [`REC_CONTEXT`]: `u32` maker, `u32` zero: the record's thread number names the stream of a *user context*
//!   that stream `maker` made with `makecontext`. Coroutine libraries switch between contexts with
//!   `swapcontext`, each on a stack of its own, so a call returns into another context's frames: the runtime
//!   (its `swapcontext` and `setcontext` for instrumented code) sets the running stream's state words aside in
//!   its record, keyed by the context it saves, and gives the thread the target context's — a new stream at
//!   its top level for a context `makecontext` made, whose function is an ordinary top-level activation.
//!   Each context's stream stays whole; one the program never switches back to ends [`END_SUSPENDED`].
//!   Written when the stream begins.
//!
//! # Naive tracing ([`DESC_NAIVE`], the second method)
//! A module built with `PATHPROF_TRACE_NAIVE=1` writes, at the entry of every block it runs, one 64-bit item:
//! the block's index in the low 32 bits and the function's trace id in the high 32, and no other bits. The
//! items describe themselves (no call markers, no regeneration): they are the oracle bit tracing is checked
//! against, and their predicate blocks count the conditional branches a run executed. A process's modules
//! must all use one method.

/// First bytes of a trace file.
pub const TRACE_MAGIC: [u8; 4] = *b"PPTR";
/// Version of the layout above (3: unwind markers, and the module metadata's tail with `invoke` blocks and
/// kept calls; files of version 2 are refused, not misread;
/// 4: data records carry their first word's index, sync and stop records, the shadow stack word;
/// 5: announced entries at direct call sites, the module metadata's direct call sites, the callee word;
/// 6: the file header with runtime copies, records' copy numbers, image records, the end record's thread id;
/// 7: the entry cache; 8: abandon markers, [`ABANDON_ID`] reserved; 9: [`TLS_ACC`] holds its bits under a
/// marker bit, instrumented code of version 8 would corrupt it — the file's bits are as in version 8;
/// 10: [`REC_PARENT`] and [`REC_UNTRACED_FORK`] records, which a version-9 reader would call corrupt;
/// 11: [`REC_HANDLERS`] and [`REC_RESUMED`] records; 12: [`REC_CONTEXT`] records and [`END_SUSPENDED`]).
pub const TRACE_VERSION: u32 = 12;
/// The oldest file version this reader reads: the stream has not changed since.
pub const TRACE_READS_SINCE: u32 = 8;
/// The first version whose [`REC_DATA`] words hold their first bit highest.
pub const DATA_FIRST_BIT_HIGHEST_SINCE: u32 = 9;
/// Bytes of the file header.
pub const FILE_HEADER: usize = 32;

/// The file header: which process the file belongs to, and what its runtime copies share.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileHeader {
    /// The process that started the file (records of other pids are another process's).
    pub pid: u32,
    /// Runtime copies of the process that joined the file (copy numbers `0..copies`).
    pub copies: u32,
    /// Tells this process from an earlier one with the same pid (`exec` keeps the pid): its `AT_RANDOM` bytes.
    pub token: u64,
    /// The first trace id no copy has allocated yet.
    pub next_id: u32,
}

impl FileHeader {
    /// The header's bytes ([`TRACE_VERSION`]).
    pub fn encode(&self) -> [u8; FILE_HEADER] {
        let mut b = [0u8; FILE_HEADER];
        let fields: [&[u8]; 6] = [
            &TRACE_MAGIC,
            &TRACE_VERSION.to_le_bytes(),
            &self.pid.to_le_bytes(),
            &self.copies.to_le_bytes(),
            &self.token.to_le_bytes(),
            &self.next_id.to_le_bytes(),
        ];
        let mut at = 0;
        for f in fields {
            if let Some(slot) = b.get_mut(at..at + f.len()) {
                slot.copy_from_slice(f);
            }
            at += f.len();
        }
        b
    }

    /// A header of a layout version this build reads ([`TRACE_READS_SINCE`]..=[`TRACE_VERSION`]); `None` if `b`
    /// is short, has another magic or another version.
    pub fn decode(b: &[u8]) -> Option<FileHeader> {
        let u32_at = |at: usize| Some(u32::from_le_bytes(*b.get(at..at + 4)?.first_chunk::<4>()?));
        let readable = TRACE_READS_SINCE..=TRACE_VERSION;
        if b.get(..4)? != TRACE_MAGIC || !readable.contains(&u32_at(4)?) || b.len() < FILE_HEADER {
            return None;
        }
        let token = u64::from(u32_at(16)?) | u64::from(u32_at(20)?) << 32;
        Some(FileHeader { pid: u32_at(8)?, copies: u32_at(12)?, token, next_id: u32_at(24)? })
    }
}
/// Bytes of a record header.
pub const RECORD_HEADER: usize = 24;
/// A module's metadata and trace ids.
pub const REC_MODULE: u32 = 1;
/// A block of one thread's bits.
pub const REC_DATA: u32 = 2;
/// The end of one thread's bits.
pub const REC_END: u32 = 3;
/// `REC_END` flag: the thread ended at its top level and its final Done was written (the trace is whole).
pub const END_COMPLETE: u64 = 1;
/// `REC_END` flag: written at process exit while the thread was still inside a function (exit() from a
/// callee, or another thread still running).
pub const END_AT_EXIT: u64 = 2;
/// `REC_END` flag: the stop bit is valid (an abnormal transfer, or a thread beyond the id space).
pub const END_ABNORMAL: u64 = 4;
/// `REC_END` flag: a `fork()`ed child's thread; its bits before the fork bit are its parent's.
pub const END_FORK_CHILD: u64 = 8;
/// `REC_END` flag: written by the fatal-signal flush (`PATHPROF_SIGNALS=1`); the signal is in bits 32..40.
pub const END_SIGNAL: u64 = 16;
/// `REC_END` flag (with [`END_SIGNAL`]): the signal came in a traced function's body, not inside a call (a
/// fault at an instruction): the blocks regeneration walks after the last decision may not have run.
pub const END_IN_BODY: u64 = 32;
/// `REC_END` flag: the process's file reached `PATHPROF_TRACE_MAX`; the thread's bits stop at the total
/// written (a prefix of what it ran, exact but not the whole run).
pub const END_TRUNCATED: u64 = 64;
/// `REC_END` flag: the thread's stream holds only windows opened by `REC_SYNC` records (flight recorder, or
/// regions): what it ran before each is not in the file.
pub const END_WINDOW: u64 = 128;
/// `REC_END` flag (with [`END_WINDOW`]): a flight recorder (`PATHPROF_TRACE_RING`) kept only the last bytes.
pub const END_RING: u64 = 256;
/// `REC_END` flag (with [`END_WINDOW`]): the thread's last region was stopped; the end is that stop.
pub const END_STOPPED: u64 = 512;
/// `REC_END` flag (with [`END_AT_EXIT`]): written before an `exec` (or `daemon`), provisionally: if the `exec`
/// fails (in `daemon`'s child) the thread's stream goes on and a later `REC_END` of the thread replaces this one.
pub const END_AT_EXEC: u64 = 1024;
/// `REC_END` flag: written when the program confined itself in a seccomp sandbox, after which the runtime writes
/// nothing; the thread's bits stop there (a prefix of what it ran, exact but not the whole run, as
/// [`END_TRUNCATED`]'s).
pub const END_CONFINED: u64 = 2048;
/// `REC_END` flag: the stream ended suspended in a user context (`swapcontext` or `setcontext` to another
/// context): the program never switched back to it — it made that context anew, switched away for good, or
/// exited ([`END_AT_EXIT`] too) — so the stream is all the context ran, exact, up to its suspension.
pub const END_SUSPENDED: u64 = 4096;
/// A sync point's resume point.
pub const REC_SYNC: u32 = 4;
/// A region's end.
pub const REC_STOP: u32 = 5;
/// The image of a runtime copy.
pub const REC_IMAGE: u32 = 6;
/// A fork child's copy: where the words its threads inherited already written are.
pub const REC_PARENT: u32 = 7;
/// A fork child that writes no trace (the file's name has no `%p`).
pub const REC_UNTRACED_FORK: u32 = 8;
/// The record's thread is the stream of the signal handlers run on another thread's (payload: `u32` that
/// thread's number in the same runtime copy, `u32` zero).
pub const REC_HANDLERS: u32 = 9;
/// The record's thread is where another stream goes on after a signal handler left it through `siglongjmp`
/// (payload: `u32` that stream's thread number in the same runtime copy, `u32` zero).
pub const REC_RESUMED: u32 = 10;
/// The record's thread is the stream of a user context (`makecontext`) made by another stream (payload: `u32`
/// that stream's thread number in the same runtime copy, `u32` zero).
pub const REC_CONTEXT: u32 = 11;
/// `REC_SYNC` kind: right after an `Enter` marker.
pub const SYNC_AT_ENTRY: u64 = 0;
/// `REC_SYNC` kind: at a call site (or at the thread's top level).
pub const SYNC_AT_SITE: u64 = 1;
/// Entries of a thread's shadow stack (a power of two; depth k uses index `2k % SHADOW_ENTRIES`).
pub const SHADOW_ENTRIES: u64 = 1 << 20;

/// The shadow-stack entry an activation of function `id` with body state `body` (2 × its depth), entered from
/// a call site of state `saved`, stores: the site (the high half of `saved`), the body state's bits above the
/// index (to tell an entry a deeper activation overwrote), and the id.
pub const fn shadow_entry(saved: u64, body: u64, id: u64) -> u64 {
    (saved & !0xffff_ffff) | (body & 0xfff0_0000) | id
}
/// Bytes of a `REC_END` payload.
pub const END_PAYLOAD: usize = 48;
/// [`TraceModuleDesc::flags`]: the module writes naive items (one per block), not bit tracing.
pub const DESC_NAIVE: u32 = 1;
/// [`TraceModuleDesc::flags`], owned by the runtime (the pass emits it clear): the module is on the runtime's
/// list, so a second registration (a constructor run again) is ignored — it would give the module's functions
/// a second range of ids and link the list into a cycle.
pub const DESC_REGISTERED: u32 = 1 << 31;

/// Bits of a function id after an `Enter` marker's 1 bit (ids are assigned at run time as modules register).
pub const FUNC_ID_BITS: u8 = 20;
/// Function ids available in one process (the last three are [`RESYNC_ID`], [`UNWIND_ID`] and [`ABANDON_ID`]).
pub const MAX_FUNCS: u32 = 1 << FUNC_ID_BITS;
/// The activation id of a resync marker: `1`, this id, then the function's id ([`FUNC_ID_BITS`]), the
/// activation's depth, the block and the call's index among the block's call sites (32 bits each). Written
/// where a `setjmp` call returns after a `longjmp` (`pathprof_core::tracing::regenerate`, "Resync"); no
/// function gets this id.
pub const RESYNC_ID: u32 = MAX_FUNCS - 1;
/// The activation id of an unwind marker: `1`, this id, then the function's id ([`FUNC_ID_BITS`]) and the
/// activation's depth (32 bits). Written first thing in a landing pad (an exception caught, or a cleanup run,
/// in that activation): the reader drops the deeper activations — frames the exception left — and crosses
/// the unwind edge of the `invoke` the activation waits at (`pathprof_core::tracing::regenerate`,
/// "Unwinding"); no function gets this id.
pub const UNWIND_ID: u32 = MAX_FUNCS - 2;
/// The activation id of an abandon marker: `1`, this id, then the activation's depth and the number of the call
/// site it returns from (the site part of its state, [`site_number`]; 32 bits each). Written by a
/// call site whose return finds the state of a deeper activation — an exception or `longjmp` that untraced
/// code caught left the traced activations it passed: the reader drops the activations deeper than the depth
/// and the one at the depth returns from its call site (`pathprof_core::tracing::regenerate`, "Abandoned
/// activations"); no function gets this id, the lowest reserved one.
pub const ABANDON_ID: u32 = MAX_FUNCS - 3;

/// Words of the per-thread state.
pub const TLS_WORDS: usize = 7;
/// Index of the bit accumulator.
pub const TLS_ACC: usize = 0;
/// Unused (an earlier layout's bit count; [`TLS_ACC`]'s marker bit tells it now).
pub const TLS_UNUSED: usize = 1;
/// Index of the call-marker state.
pub const TLS_STATE: usize = 2;
/// Index of the runtime's thread record.
pub const TLS_THREAD: usize = 3;
/// Index of the shadow stack's address (0: none), bit 0 = a sync is wanted.
pub const TLS_SHADOW: usize = 4;
/// Index of the announced callee: 0, or 1 + the trace id of the function a fresh direct call site calls.
pub const TLS_CALLEE: usize = 5;
/// Index of the entry cache's address: [`ENTRY_CACHE_SLOTS`] `u32` trace ids in the runtime's record of the
/// thread, or 0 (no cache: every full-id entry misses).
pub const TLS_CACHE: usize = 6;
/// [`TLS_ACC`] with no bits pending: the marker bit alone.
pub const ACC_EMPTY: u64 = 1;

/// How many bits [`TLS_ACC`] holds (0..=63; a zero word, a thread the runtime has not set up, holds none).
pub const fn acc_len(acc: u64) -> u64 {
    if acc == 0 {
        0
    } else {
        63 - acc.leading_zeros() as u64
    }
}

/// [`TLS_ACC`]'s pending bits as the file stores a stream (its first bit least significant), and their number.
pub const fn acc_bits(acc: u64) -> (u64, u64) {
    let n = acc_len(acc);
    (stream_order(acc, n), n)
}

/// The [`TLS_ACC`] word holding the `n` (< 64) bits `bits`, given as the file stores them (first bit least
/// significant).
pub const fn acc_from(bits: u64, n: u64) -> u64 {
    (1 << n) | stream_order(bits, n)
}

/// The `w` (≤ 64) low bits of `v` reversed: a value written least-significant bit first, in [`TLS_ACC`]'s order
/// (first bit highest), and back. Instrumented code appends a `w`-bit item `u` as `acc << w | u`.
pub const fn stream_order(v: u64, w: u64) -> u64 {
    if w == 0 {
        0
    } else {
        v.reverse_bits() >> (64 - w)
    }
}

/// Bits of an entry-cache slot index: an entry with a full id whose id the cache holds costs a flag and this
/// many bits instead of a flag and [`FUNC_ID_BITS`].
pub const ENTRY_CACHE_BITS: u8 = 6;
/// Slots of the entry cache (direct-mapped: id `i` goes to slot `i % ENTRY_CACHE_SLOTS`).
pub const ENTRY_CACHE_SLOTS: usize = 1 << ENTRY_CACHE_BITS;

/// [`TLS_CALLEE`]: the announcement of a certain call site (its callee's entry writes no marker).
pub const CALLEE_CERTAIN: u64 = 1 << 62;
/// [`TLS_STATE`]: a certain call site's state, or a direct call site's whose announced callee began (an entry
/// must find a certain announcement).
pub const STATE_CERTAIN: u64 = 1 << 63;

/// The module-wide call-site number in a call-site state or a shadow-stack entry (1-based; 0: the top level).
pub const fn site_number(state: u64) -> u64 {
    (state & !STATE_CERTAIN) >> 32
}

/// The trace-mode module descriptor the pass emits and the runtime registers (`#[repr(C)]`).
#[repr(C)]
pub struct TraceModuleDesc {
    /// [`TRACE_VERSION`].
    pub version: u32,
    /// Functions of the module (trace ids `base..base + num_functions`).
    pub num_functions: u32,
    /// The module's trace metadata.
    pub meta: *const u8,
    /// Its length.
    pub meta_len: u64,
    /// The module's first trace id, written by the runtime at registration (instrumented code reads it).
    pub base: u32,
    /// Set by the runtime once the module's metadata is in the trace file.
    pub written: u32,
    /// `DESC_*` flags.
    pub flags: u32,
    /// Zero.
    pub reserved: u32,
    /// The runtime's list of modules.
    pub next: *mut TraceModuleDesc,
}

/// Encodes a record header: `thread` of runtime copy `copy` of process `pid`.
pub fn record_header(kind: u32, pid: u32, copy: u32, thread: u32, len: u64) -> [u8; RECORD_HEADER] {
    let (k, p, t, c) = (kind.to_le_bytes(), pid.to_le_bytes(), thread.to_le_bytes(), copy.to_le_bytes());
    let l = len.to_le_bytes();
    [
        k[0], k[1], k[2], k[3], p[0], p[1], p[2], p[3], t[0], t[1], t[2], t[3], c[0], c[1], c[2], c[3], l[0], l[1],
        l[2], l[3], l[4], l[5], l[6], l[7],
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accumulator_holds_its_first_bit_highest_under_the_marker() {
        // Bits 1, 0 (first to last): the file's order has the first bit least significant (0b01).
        assert_eq!(acc_from(0b01, 2), 0b110);
        assert_eq!(acc_bits(0b110), (0b01, 2));
        assert_eq!(acc_bits(ACC_EMPTY), (0, 0));
        assert_eq!(acc_bits(0), (0, 0));
        assert_eq!(acc_len(u64::MAX), 63);
        assert_eq!(stream_order(0b0011, 4), 0b1100);
        assert_eq!(stream_order(0b1, 1), 0b1);
        assert_eq!(stream_order(5, 0), 0);
    }

    /// The instrumented code's append (`pass::trace_helpers`: `acc << w | u` while it fits, else a full word
    /// to the runtime and the rest under a new marker), modelled here: the words and the pending bits read
    /// back as the items' bits in order, least-significant first.
    #[test]
    fn appending_in_stream_order_then_spilling_keeps_the_file_order() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..200 {
            let (mut acc, mut words, mut expect) = (ACC_EMPTY, Vec::new(), Vec::new());
            for _ in 0..(next() % 60) {
                let w = next() % 33;
                let v = next() & ((1u64 << w) - 1);
                expect.extend((0..w).map(|i| v >> i & 1));
                let u = stream_order(v, w);
                let k = acc_len(acc);
                if k + w <= 63 {
                    acc = acc << w | u;
                } else {
                    let take = 64 - k;
                    let word = (acc << take) | (u >> (w - take));
                    words.push(word.reverse_bits());
                    let rest = w - take;
                    acc = (1 << rest) | (u & ((1 << rest) - 1));
                }
            }
            let mut got: Vec<u64> = words.iter().flat_map(|&x| (0..64).map(move |i| x >> i & 1)).collect();
            let (bits, n) = acc_bits(acc);
            got.extend((0..n).map(|i| bits >> i & 1));
            assert_eq!(got, expect);
        }
    }
}
