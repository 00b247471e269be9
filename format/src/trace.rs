//! Trace files (mode `trace`): each module's metadata with its call sites, and per thread the bit stream of
//! bit tracing (`pathprof_core::tracing`), read from untrusted bytes (never panics). Layout:
//! [`crate::trace_layout`].

use crate::meta::ModuleMeta;
use crate::trace_layout::*;
use pathprof_core::tracing::{
    bit_tracing_with, BitReader, CallSites, FuncId, FuncTables, Program, ResumePoint, Waiting, WitnessPlan,
};
use pathprof_core::{BlockId, Cfg, EdgeKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the reader needs of one traced module: the profile metadata (CFGs, lines, names) and, per function
/// and real block, how many call sites the block holds (where the callees' markers interleave).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceModuleMeta {
    /// The module's metadata, mode [`crate::meta::Mode::Trace`].
    pub module: ModuleMeta,
    /// Per function of `module.functions`, per real block: its call sites.
    pub calls: Vec<Vec<u32>>,
    /// Recorded at LLVM's `OptimizerLast` point (mode icache): the blocks are those of the optimised IR that
    /// codegen receives, not the front end's.
    pub optimizer_last: bool,
    /// Per function of `module.functions`: the blocks that end in an `invoke` (its last call site; successor 1
    /// is the unwind edge, taken when the landing pad's unwind marker says so).
    pub invokes: Vec<Vec<u32>>,
    /// Functions called from this module's traced code whose calls lost a `const`/`pure` promise (the callee
    /// writes the thread's trace state): the optimiser keeps every such call, where a build without tracing
    /// may merge or drop some, so these functions may run more often than in another mode's build.
    pub kept_calls: Vec<String>,
    /// Per function of `module.functions`: its direct call sites of traced functions of this module, as
    /// `(block, call index among the block's call sites, callee's index in module.functions)`. Instrumented
    /// code announces the callee there, so its entry costs one bit (`pathprof_core::tracing::regenerate`,
    /// "Direct calls").
    pub direct: Vec<Vec<(u32, u32, u32)>>,
    /// Per function of `module.functions`: its *implicit* call sites `(block, call index)`, each one of its
    /// `direct` sites whose callee is a straight-line leaf: instrumented code calls an uninstrumented copy of
    /// the callee there and writes no marker (`pathprof_core::tracing::regenerate`, "Implicit calls").
    pub implicit: Vec<Vec<(u32, u32)>>,
    /// Mode icache, per function of `module.functions`: the pass's prediction of its machine block ids
    /// (empty when the pass made none). A candidate that `pathprof icache` proves against the binary before
    /// using it, like any other mapping.
    pub isel: Vec<IselPrediction>,
    /// Per function of `module.functions`: the blocks that end in a tail call (`musttail`), where the
    /// activation ends and the callee's follows at the caller's call site (`pathprof_core::tracing::regenerate`,
    /// "Tail calls").
    pub tail_calls: Vec<Vec<u32>>,
}

/// Mode icache: which traced block each machine block id (`.llvm_bb_addr_map`) of one function will be.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IselPrediction {
    /// Per id from 0, the blocks instruction selection receives: the traced block, or `None` for a block
    /// codegen's IR passes add.
    pub ids: Vec<Option<u32>>,
    /// The traced blocks the pass cut from conditions as instruction selection will (`branch_split`), in the
    /// order it creates its own: their ids follow `ids`, among the other blocks instruction selection creates.
    pub split: Vec<u32>,
}

impl IselPrediction {
    /// Whether the pass made a prediction.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// [`TraceModuleMeta`]'s tail: what follows the call sites when any of it is set (flags byte
/// [`TAIL_OPTIMIZER_LAST`] | [`TAIL_EXTRAS`]).
#[derive(Serialize, Deserialize)]
struct Extras {
    invokes: Vec<Vec<u32>>,
    kept_calls: Vec<String>,
    direct: Vec<Vec<(u32, u32, u32)>>,
    implicit: Vec<Vec<(u32, u32)>>,
}

/// Tail flag: recorded at `OptimizerLast`.
const TAIL_OPTIMIZER_LAST: u8 = 1;
/// Tail flag: [`Extras`] follow (postcard).
const TAIL_EXTRAS: u8 = 2;
/// Tail flag: [`TraceModuleMeta::isel`] follows (postcard), after the extras.
const TAIL_ISEL: u8 = 4;
/// Tail flag: [`TraceModuleMeta::tail_calls`] follows (postcard), after the predicted ids.
const TAIL_TAIL_CALLS: u8 = 8;

/// Why a trace file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// Not a trace file, or a version this reader does not know.
    #[error("not a pathprof trace file (bad magic)")]
    BadHeader,
    /// A trace file of another layout version (written by another pathprof).
    #[error("trace file of layout version {0}, this pathprof reads versions {TRACE_READS_SINCE} to {TRACE_VERSION}: trace the program again with it")]
    Version(u32),
    /// A record runs past the end of the file or has a bad length.
    #[error("trace file is truncated or corrupt at byte {0}")]
    Corrupt(usize),
    /// A module's metadata does not decode, or the modules' ids overlap.
    #[error("trace file metadata is corrupt: {0}")]
    Meta(String),
}

impl TraceModuleMeta {
    /// The blob the pass embeds (the runtime copies it into the file unchanged).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.module.encode();
        let calls = postcard::to_allocvec(&self.calls).expect("postcard serialisation of call sites");
        let mut blob = Vec::with_capacity(out.len() + calls.len() + 8);
        blob.extend_from_slice(&(out.len() as u64).to_le_bytes());
        blob.append(&mut out);
        blob.extend_from_slice(&calls);
        // Plain trace mode without invokes, kept calls or direct calls keeps its bytes (nothing after the call
        // sites).
        let extras = self.invokes.iter().any(|b| !b.is_empty())
            || !self.kept_calls.is_empty()
            || self.direct.iter().any(|d| !d.is_empty())
            || self.implicit.iter().any(|d| !d.is_empty());
        let isel = self.isel.iter().any(|f| *f != IselPrediction::default());
        let tail_calls = self.tail_calls.iter().any(|b| !b.is_empty());
        if self.optimizer_last || extras || isel || tail_calls {
            blob.push(
                if self.optimizer_last { TAIL_OPTIMIZER_LAST } else { 0 }
                    | if extras { TAIL_EXTRAS } else { 0 }
                    | if isel { TAIL_ISEL } else { 0 }
                    | if tail_calls { TAIL_TAIL_CALLS } else { 0 },
            );
        }
        if extras {
            let e = Extras {
                invokes: self.invokes.clone(),
                kept_calls: self.kept_calls.clone(),
                direct: self.direct.clone(),
                implicit: self.implicit.clone(),
            };
            blob.extend_from_slice(&postcard::to_allocvec(&e).expect("postcard serialisation of extras"));
        }
        if isel {
            blob.extend_from_slice(&postcard::to_allocvec(&self.isel).expect("postcard serialisation of isel"));
        }
        if tail_calls {
            blob.extend_from_slice(&postcard::to_allocvec(&self.tail_calls).expect("postcard serialisation"));
        }
        blob
    }

    /// Decodes and checks a blob (every function's call sites fit its CFG).
    pub fn decode(bytes: &[u8]) -> Result<TraceModuleMeta, TraceError> {
        let bad = |m: &str| TraceError::Meta(m.to_string());
        let len = bytes.get(..8).ok_or_else(|| bad("short blob"))?;
        let len = u64::from_le_bytes(len.try_into().expect("8 bytes")) as usize;
        let meta = bytes.get(8..8usize.saturating_add(len)).ok_or_else(|| bad("short blob"))?;
        let module = ModuleMeta::decode(meta).map_err(|e| TraceError::Meta(e.to_string()))?;
        let (calls, rest): (Vec<Vec<u32>>, &[u8]) =
            postcard::take_from_bytes(&bytes[8 + len..]).map_err(|e| TraceError::Meta(e.to_string()))?;
        let (flags, rest) = rest.split_first().map_or((0, rest), |(&f, r)| (f, r));
        if flags & !(TAIL_OPTIMIZER_LAST | TAIL_EXTRAS | TAIL_ISEL | TAIL_TAIL_CALLS) != 0
            || (flags & (TAIL_EXTRAS | TAIL_ISEL | TAIL_TAIL_CALLS) == 0) != rest.is_empty()
        {
            return Err(bad("unknown metadata tail"));
        }
        let (extras, rest) = if flags & TAIL_EXTRAS != 0 {
            postcard::take_from_bytes(rest).map_err(|e| TraceError::Meta(e.to_string()))?
        } else {
            (Extras { invokes: Vec::new(), kept_calls: Vec::new(), direct: Vec::new(), implicit: Vec::new() }, rest)
        };
        let (isel, rest): (Vec<IselPrediction>, &[u8]) = if flags & TAIL_ISEL != 0 {
            postcard::take_from_bytes(rest).map_err(|e| TraceError::Meta(e.to_string()))?
        } else {
            (vec![IselPrediction::default(); calls.len()], rest)
        };
        let (tail_calls, rest): (Vec<Vec<u32>>, &[u8]) = if flags & TAIL_TAIL_CALLS != 0 {
            postcard::take_from_bytes(rest).map_err(|e| TraceError::Meta(e.to_string()))?
        } else {
            (vec![Vec::new(); calls.len()], rest)
        };
        if !rest.is_empty() {
            return Err(bad("unknown metadata tail"));
        }
        let invokes = if extras.invokes.is_empty() { vec![Vec::new(); calls.len()] } else { extras.invokes };
        let direct = if extras.direct.is_empty() { vec![Vec::new(); calls.len()] } else { extras.direct };
        let implicit = if extras.implicit.is_empty() { vec![Vec::new(); calls.len()] } else { extras.implicit };
        let nf = module.functions.len() as u64;
        if calls.len() != module.functions.len()
            || invokes.len() != calls.len()
            || direct.len() != calls.len()
            || direct.iter().zip(&calls).any(|(d, c)| {
                d.iter().any(|&(b, k, g)| c.get(b as usize).is_none_or(|&n| k >= n) || u64::from(g) >= nf)
            })
            || module.functions.iter().zip(&calls).any(|(f, c)| c.len() != f.cfg.num_blocks())
            || implicit.len() != calls.len()
            || implicit
                .iter()
                .zip(&direct)
                .any(|(i, d)| i.iter().any(|&(b, k)| !d.iter().any(|&(db, dk, _)| (db, dk) == (b, k))))
        {
            return Err(bad("call sites do not fit the functions"));
        }
        if isel.len() != calls.len()
            || isel.iter().zip(&module.functions).any(|(p, f)| {
                let mut seen = vec![false; f.cfg.num_blocks()];
                p.ids
                    .iter()
                    .flatten()
                    .chain(&p.split)
                    .any(|&b| seen.get_mut(b as usize).is_none_or(|s| std::mem::replace(s, true)))
                    || p.ids.first().is_some_and(|&b| b != Some(0))
                    || (p.ids.is_empty() && !p.split.is_empty())
            })
        {
            return Err(bad("predicted machine block ids do not fit the functions"));
        }
        // A tail call ends its activation: its block must be one the walk leaves by a return edge.
        if tail_calls.len() != calls.len()
            || tail_calls.iter().zip(&module.functions).any(|(t, f)| {
                t.iter().any(|&b| {
                    b as usize >= f.cfg.num_blocks()
                        || !f.cfg.edges().iter().any(|e| e.from.0 == b && e.kind == EdgeKind::Return)
                })
            })
        {
            return Err(bad("tail calls do not fit the functions"));
        }
        Ok(TraceModuleMeta {
            module,
            calls,
            optimizer_last: flags & TAIL_OPTIMIZER_LAST != 0,
            invokes,
            kept_calls: extras.kept_calls,
            direct,
            implicit,
            isel,
            tail_calls,
        })
    }
}

/// The witness plan and regeneration tables of one traced function: bit tracing, with `calls[b]` call sites in
/// block `b`, `invokes` the blocks ending in an `invoke` and `tail_calls` those ending in a tail call. The pass
/// instruments with the same plan, so both sides agree by construction.
pub fn function_tables(
    cfg: &Cfg,
    calls: &[u32],
    invokes: &[u32],
    tail_calls: &[u32],
) -> Result<(WitnessPlan, FuncTables), String> {
    let sites = CallSites::new(cfg, calls.to_vec()).map_err(|e| e.to_string())?;
    let sites = sites.with_invokes(invokes).map_err(|e| e.to_string())?;
    let plan = bit_tracing_with(cfg, &sites);
    let tables = FuncTables::build(cfg, &sites, &plan).map_err(|e| e.to_string())?;
    Ok((plan, tables.with_tail_calls(!tail_calls.is_empty())))
}

/// One thread's bits, reassembled from its records.
#[derive(Clone, Debug, Default)]
pub struct ThreadTrace {
    /// Process id.
    pub pid: u32,
    /// Thread number in its runtime copy (1 = the first thread that ran the copy's traced code).
    pub thread: u32,
    /// The runtime copy whose stream this is (`trace_layout`, "Runtime copies"): a process with instrumented
    /// shared libraries has one per image, each stream holding only its image's functions.
    pub copy: u32,
    /// The thread's id in the operating system (the same thread in other copies' streams), if its end record
    /// survived.
    pub tid: Option<u32>,
    /// The bits, least-significant first.
    pub bytes: Vec<u8>,
    /// How many bits are valid.
    pub bits: u64,
    /// The thread ended at its top level: the trace is whole.
    pub complete: bool,
    /// Flushed at process exit with the thread inside a function (exit() from a callee, a running thread).
    pub at_exit: bool,
    /// With `at_exit`: the process image was replaced (`exec`).
    pub at_exec: bool,
    /// The stream ended suspended in a user context the program never switched back to (`trace_layout`'s
    /// `END_SUSPENDED`): exact, all the context ran.
    pub suspended: bool,
    /// Where the trace stops being regenerable (an abnormal transfer: signal handler, longjmp, exception).
    pub abnormal_at: Option<u64>,
    /// Data records are missing (a gap in sequence numbers, or no end record: the process was killed).
    pub gap: bool,
    /// A `fork()`ed child's thread: its bits before this one are its parent's.
    pub fork_at: Option<u64>,
    /// A fork child's thread whose inherited words (those its parent had written before the fork) could not
    /// be spliced in ([`TraceFile::parse_with_parents`]): why, naming the parent's file. The thread has a gap.
    pub inherited_missing: Option<String>,
    /// Ended by the fatal-signal flush: the signal.
    pub signal: Option<u32>,
    /// The signal came in a function's body (a fault), not inside a call: where in the blocks after the last
    /// decision is unknown.
    pub in_body: bool,
    /// The bits are a prefix of the thread's run: the file reached its size limit (`PATHPROF_TRACE_MAX`), or
    /// the program confined itself in a seccomp sandbox ([`ThreadTrace::confined`]).
    pub truncated: bool,
    /// The program confined itself in a seccomp sandbox: nothing after is in the file.
    pub confined: bool,
    /// A window of the thread's stream (flight recorder, region): where it starts; `None` for a whole stream.
    pub window: Option<Window>,
    /// A handler stream (`trace_layout`'s `REC_HANDLERS`): the signal handlers run on this thread number of
    /// the same copy, one after another.
    pub handlers_of: Option<u32>,
    /// Where this thread number's stream goes on after a signal handler left it through `siglongjmp`
    /// (`trace_layout`'s `REC_RESUMED`): a window from the landing.
    pub resumes: Option<u32>,
    /// A user context's stream (`trace_layout`'s `REC_CONTEXT`): the thread number of the stream that made it
    /// with `makecontext`.
    pub context_of: Option<u32>,
}

impl ThreadTrace {
    /// Reads the stream's first `bits` bits as the runtime wrote them (bit tracing with the entry cache,
    /// `trace_layout`'s `TLS_CACHE`).
    pub fn reader(&self, bits: u64) -> BitReader<'_> {
        BitReader::over(&self.bytes, bits).with_entry_cache(ENTRY_CACHE_BITS)
    }

    /// Names the stream in messages: thread, what it is to another stream (handlers, a resumption), copy (when
    /// not the first) and process.
    pub fn label(&self) -> String {
        let mut handlers = self.handlers_of.map_or(String::new(), |h| format!(" (signal handlers of thread {h})"));
        if let Some(from) = self.resumes {
            handlers += &format!(" (thread {from} going on after a signal handler's siglongjmp)");
        }
        if let Some(maker) = self.context_of {
            handlers += &format!(" (a user context thread {maker} made)");
        }
        match self.copy {
            0 => format!("thread {}{handlers} of process {}", self.thread, self.pid),
            c => format!("thread {}{handlers} of runtime copy {c} of process {}", self.thread, self.pid),
        }
    }
}

/// A window of a thread's stream, opened by a sync record: `bytes` hold the stream from the sync's word on,
/// and reading starts at bit `start` of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// Bit of `bytes` where reading starts (the sync point).
    pub start: u64,
    /// The sync point's bit in the thread's whole stream (what ran before it is not in the file).
    pub at: u64,
    /// `SYNC_AT_ENTRY` or `SYNC_AT_SITE`.
    pub kind: u64,
    /// The thread state at the sync point.
    pub state: u64,
    /// The shadow entries (depth 1 first).
    pub entries: Vec<u64>,
    /// A flight recorder's window (`PATHPROF_TRACE_RING`): the thread's older bits were dropped.
    pub ring: bool,
    /// The window ends at a region's stop (`__pathprof_trace_stop`), not at the thread's end.
    pub stopped: bool,
    /// A sync record opened it (false: the thread's stream has no window at all — no sync point survived in
    /// its ring, or it never started a region).
    pub opened: bool,
}

/// A sync record while parsing.
type RawSync = (u64, u64, u64, Vec<u64>);

/// A thread's records while parsing: data blocks by first word, its end record's words, its sync and stop
/// records.
#[derive(Default)]
struct RawThread {
    data: BTreeMap<u64, Vec<u8>>,
    end: Option<[u64; 6]>,
    syncs: Vec<RawSync>,
    stops: Vec<(u64, u64)>,
    handlers_of: Option<u32>,
    resumes: Option<u32>,
    context_of: Option<u32>,
}

impl RawThread {
    /// The thread's stream holds only windows opened by sync records (flight recorder, regions).
    fn windowed(&self) -> bool {
        self.end.is_some_and(|e| e[2] & END_WINDOW != 0) || !self.syncs.is_empty()
    }

    /// The stream's words from word 0 on, as far as they run without a gap, at most `limit` words.
    fn leading_words(&self, limit: u64) -> Vec<u8> {
        let limit = usize::try_from(limit.saturating_mul(8)).unwrap_or(usize::MAX);
        let mut out = Vec::new();
        for (&first, words) in &self.data {
            if first.checked_mul(8) != Some(out.len() as u64) || out.len() >= limit {
                break;
            }
            out.extend_from_slice(words);
        }
        out.truncate(limit);
        out
    }
}

/// A fork child's runtime copy: the file it inherited, which holds the words its threads inherited already
/// written (`trace_layout`'s `REC_PARENT`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForkParent {
    /// The process that wrote that file (the file must still be that process's).
    pub pid: u32,
    /// That process's token (`trace_layout::FileHeader::token`).
    pub token: u64,
    /// The copy's number in that file.
    pub copy: u32,
    /// The file's path, as the runtime opened it.
    pub path: String,
}

/// A file's records, before its threads' streams are assembled.
struct Records {
    header: FileHeader,
    modules: BTreeMap<u32, TraceModuleMeta>,
    threads: BTreeMap<(u32, u32), RawThread>,
    images: BTreeMap<u32, String>,
    others: std::collections::BTreeSet<u32>,
    parents: BTreeMap<u32, ForkParent>,
    untraced_forks: std::collections::BTreeSet<u32>,
    cut_at: Option<u64>,
}

/// Reads a fork parent's file by the path its child recorded (`None`: not found).
pub type ParentLoader<'a> = dyn FnMut(&str) -> Option<Vec<u8>> + 'a;

/// How many forks away a parent's file may be (a bound on the reader's recursion, not on programs: each fork
/// child that writes its own file starts a new chain link only for what its parent had written).
const MAX_FORK_DEPTH: u32 = 64;

/// A traced function: its module's first trace id (the key of [`TraceFile::modules`]) and its index there.
pub type FunctionRef = (u32, usize);

/// A whole trace file.
#[derive(Clone, Debug, Default)]
pub struct TraceFile {
    /// Modules by first trace id.
    pub modules: BTreeMap<u32, TraceModuleMeta>,
    /// Threads in (copy, thread) order.
    pub threads: Vec<ThreadTrace>,
    /// The modules wrote naive items (one per block, `PATHPROF_TRACE_NAIVE`), not bit tracing.
    pub naive: bool,
    /// The process that wrote the file.
    pub pid: u32,
    /// Per runtime copy that wrote records, its image's path (empty if its image record is missing).
    pub images: BTreeMap<u32, String>,
    /// Per runtime copy of a fork child, the file it inherited.
    pub parents: BTreeMap<u32, ForkParent>,
    /// Processes whose records were left out: they wrote the same file at the same time (a name without `%p`),
    /// and the file's process cut their earlier records when it started it.
    pub other_processes: Vec<u32>,
    /// Fork children of the file's process that ran traced code but wrote no trace (a name without `%p`): what
    /// they ran after the fork is in no trace.
    pub untraced_forks: Vec<u32>,
    /// The file ends inside the record that starts at this byte: a write failed part-way (a full disk: the
    /// runtime then writes nothing more) or the file was cut short. The records before it are read, and the
    /// whole words of a cut data record; every thread whose end record is missing has a gap.
    pub cut_at: Option<u64>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

impl TraceFile {
    /// Parses a trace file on its own: a fork child's threads whose parent had written words before the fork
    /// lack them (a gap); [`TraceFile::parse_with_parents`] splices them in.
    pub fn parse(bytes: &[u8]) -> Result<TraceFile, TraceError> {
        Self::parse_with_parents(bytes, &mut |_| None)
    }

    /// Parses a trace file, taking what a fork child's threads inherited already written from the files of its
    /// parent (and of its parent's parents), read with `load`. A parent's file that cannot be read, or no
    /// longer holds those words, leaves the thread with a gap and says why ([`ThreadTrace::inherited_missing`]).
    pub fn parse_with_parents(bytes: &[u8], load: &mut ParentLoader<'_>) -> Result<TraceFile, TraceError> {
        let mut records = Records::parse(bytes)?;
        let missing = records.splice_inherited(load, 0);
        records.assemble(missing)
    }
}

impl Records {
    fn parse(bytes: &[u8]) -> Result<Records, TraceError> {
        if bytes.get(..4) != Some(&TRACE_MAGIC[..]) {
            return Err(TraceError::BadHeader);
        }
        let first_bit_highest = match u32_at(bytes, 4) {
            Some(v) if (TRACE_READS_SINCE..=TRACE_VERSION).contains(&v) => v >= DATA_FIRST_BIT_HIGHEST_SINCE,
            Some(v) => return Err(TraceError::Version(v)),
            None => return Err(TraceError::BadHeader),
        };
        let header = FileHeader::decode(bytes).ok_or(TraceError::BadHeader)?;
        let mut modules = BTreeMap::new();
        let mut threads: BTreeMap<(u32, u32), RawThread> = BTreeMap::new();
        let mut images = BTreeMap::new();
        let mut parents = BTreeMap::new();
        let mut others = std::collections::BTreeSet::new();
        let mut untraced_forks = std::collections::BTreeSet::new();
        let mut cut_at = None;
        let mut at = FILE_HEADER;
        while at < bytes.len() {
            let corrupt = TraceError::Corrupt(at);
            if bytes.len() - at < RECORD_HEADER {
                cut_at = Some(at as u64);
                break;
            }
            let kind = u32_at(bytes, at).ok_or(TraceError::Corrupt(at))?;
            let pid = u32_at(bytes, at + 4).ok_or(TraceError::Corrupt(at))?;
            let thread = u32_at(bytes, at + 8).ok_or(TraceError::Corrupt(at))?;
            let copy = u32_at(bytes, at + 12).ok_or(TraceError::Corrupt(at))?;
            let len = u64_at(bytes, at + 16).ok_or(TraceError::Corrupt(at))?;
            let start = at + RECORD_HEADER;
            let end = usize::try_from(len).ok().and_then(|l| start.checked_add(l)).ok_or(TraceError::Corrupt(at))?;
            let payload = match bytes.get(start..end) {
                Some(payload) => payload,
                None => {
                    // The file ends inside this record. Of a data record, its whole words are the thread's
                    // bits as written; any other record is left out.
                    cut_at = Some(at as u64);
                    let whole = 8 + (bytes.len() - start).saturating_sub(8) / 8 * 8;
                    match bytes.get(start..start + whole) {
                        Some(words) if kind == REC_DATA && whole > 8 => words,
                        _ => break,
                    }
                }
            };
            if kind == REC_UNTRACED_FORK {
                // A fork child of the file's process, which wrote no trace.
                untraced_forks.insert(pid);
                at = end;
                continue;
            }
            if pid != header.pid {
                // Another process wrote this name at the same time: its trace ids are its own, and its earlier
                // records went when this process started the file.
                others.insert(pid);
                at = end;
                continue;
            }
            if copy >= header.copies {
                return Err(TraceError::Meta(format!(
                    "a record of runtime copy {copy}; the file has {}",
                    header.copies
                )));
            }
            match kind {
                REC_MODULE => {
                    let base = u32_at(payload, 0).ok_or(TraceError::Corrupt(at))?;
                    let n = u32_at(payload, 4).ok_or(TraceError::Corrupt(at))?;
                    let meta = TraceModuleMeta::decode(&payload[8..])?;
                    if meta.module.functions.len() != n as usize {
                        return Err(TraceError::Meta("function count does not match the metadata".into()));
                    }
                    // A fork child's copy writes its modules into its own file again; ids must agree.
                    if let Some(old) = modules.insert(base, meta.clone()) {
                        if old != meta {
                            return Err(TraceError::Meta(format!("two modules with trace id {base}")));
                        }
                    }
                }
                REC_DATA => {
                    let first = u64_at(payload, 0).ok_or(corrupt)?;
                    if (payload.len() - 8) % 8 != 0 || first > u64::MAX / 128 {
                        return Err(TraceError::Corrupt(at));
                    }
                    let mut words = payload[8..].to_vec();
                    if first_bit_highest {
                        for w in words.chunks_exact_mut(8) {
                            let v = u64::from_le_bytes(w.try_into().expect("8 bytes")).reverse_bits();
                            w.copy_from_slice(&v.to_le_bytes());
                        }
                    }
                    let t = threads.entry((copy, thread)).or_default();
                    if t.data.insert(first, words).is_some() {
                        return Err(TraceError::Corrupt(at));
                    }
                }
                REC_SYNC => {
                    let w: Vec<u64> = payload.chunks(8).map(|c| u64_at(c, 0).unwrap_or(u64::MAX)).collect();
                    let [bit, kind, state, depth, entries @ ..] = &w[..] else { return Err(corrupt) };
                    if payload.len() % 8 != 0 || *depth != entries.len() as u64 || *kind > SYNC_AT_SITE {
                        return Err(corrupt);
                    }
                    threads.entry((copy, thread)).or_default().syncs.push((*bit, *kind, *state, entries.to_vec()));
                }
                REC_STOP => {
                    let (Some(bit), Some(acc), 16) = (u64_at(payload, 0), u64_at(payload, 8), payload.len()) else {
                        return Err(corrupt);
                    };
                    threads.entry((copy, thread)).or_default().stops.push((bit, acc));
                }
                REC_END => {
                    if payload.len() != END_PAYLOAD {
                        return Err(corrupt);
                    }
                    let w = [0, 8, 16, 24, 32, 40].map(|o| u64_at(payload, o).unwrap_or(0));
                    let t = threads.entry((copy, thread)).or_default();
                    // Only an end written before an `exec` that failed is followed by another.
                    if t.end.replace(w).is_some_and(|before| before[2] & END_AT_EXEC == 0) {
                        return Err(TraceError::Corrupt(at));
                    }
                }
                REC_IMAGE => {
                    images.insert(copy, String::from_utf8_lossy(payload).into_owned());
                }
                REC_HANDLERS | REC_RESUMED | REC_CONTEXT => {
                    let (Some(other), 8) = (u32_at(payload, 0), payload.len()) else { return Err(corrupt) };
                    let t = threads.entry((copy, thread)).or_default();
                    let field = match kind {
                        REC_HANDLERS => &mut t.handlers_of,
                        REC_RESUMED => &mut t.resumes,
                        _ => &mut t.context_of,
                    };
                    if other == thread || field.replace(other).is_some_and(|h| h != other) {
                        return Err(corrupt);
                    }
                }
                REC_PARENT => {
                    let (Some(pid), Some(from), Some(token)) =
                        (u32_at(payload, 0), u32_at(payload, 4), u64_at(payload, 8))
                    else {
                        return Err(corrupt);
                    };
                    let path = String::from_utf8_lossy(&payload[16..]).into_owned();
                    if parents.insert(copy, ForkParent { pid, token, copy: from, path }).is_some() {
                        return Err(corrupt);
                    }
                }
                _ => return Err(corrupt),
            }
            at = end;
        }
        Ok(Records { header, modules, threads, images, others, parents, untraced_forks, cut_at })
    }

    /// Splices into every fork child's thread the words it inherited already written, from its parent's file
    /// (itself spliced from its own parent's, up to [`MAX_FORK_DEPTH`] forks away). Returns, per thread left
    /// with a gap, why.
    fn splice_inherited(&mut self, load: &mut ParentLoader<'_>, depth: u32) -> BTreeMap<(u32, u32), String> {
        let mut missing = BTreeMap::new();
        let mut files: BTreeMap<String, Result<Records, String>> = BTreeMap::new();
        for (&(copy, thread), raw) in &mut self.threads {
            let Some(parent) = self.parents.get(&copy) else { continue };
            // Inherited words end where the child's own first record starts (its end, if it wrote none).
            let need = raw.data.keys().next().copied().or_else(|| raw.end.map(|e| e[0] / 64)).unwrap_or(0);
            if need == 0 || raw.windowed() {
                continue;
            }
            let file = files.entry(parent.path.clone()).or_insert_with(|| {
                if depth >= MAX_FORK_DEPTH {
                    return Err(format!("is more than {MAX_FORK_DEPTH} forks away"));
                }
                let bytes = load(&parent.path).ok_or("could not be read")?;
                let mut records = Records::parse(&bytes).map_err(|e| format!("cannot be read ({e})"))?;
                if (records.header.pid, records.header.token) != (parent.pid, parent.token) {
                    return Err("is now another process's".into());
                }
                records.splice_inherited(load, depth + 1);
                Ok(records)
            });
            let words = file.as_ref().map_err(String::clone).and_then(|f| {
                let words = f.threads.get(&(parent.copy, thread)).map_or(Vec::new(), |t| t.leading_words(need));
                if words.len() as u64 == need * 8 {
                    Ok(words)
                } else {
                    Err(format!("does not hold them (the first {need} words of thread {thread})"))
                }
            });
            match words {
                Ok(words) => {
                    raw.data.insert(0, words);
                }
                Err(why) => {
                    let at = format!("{} (process {})", parent.path, parent.pid);
                    missing
                        .insert((copy, thread), format!("what it inherited from its parent is in {at}, which {why}"));
                }
            }
        }
        missing
    }

    /// The file's threads, assembled from their records.
    fn assemble(self, mut missing: BTreeMap<(u32, u32), String>) -> Result<TraceFile, TraceError> {
        let Records { header, modules, threads, mut images, others, parents, untraced_forks, cut_at } = self;
        // Module ids must not overlap.
        let mut next = 0u64;
        for (&base, m) in &modules {
            if u64::from(base) < next {
                return Err(TraceError::Meta(format!("modules overlap at trace id {base}")));
            }
            next = u64::from(base) + m.module.functions.len() as u64;
        }
        let mut out = Vec::new();
        let pid = header.pid;
        for ((copy, thread), raw) in threads {
            images.entry(copy).or_default();
            let tid = raw.end.map(|e| e[5] as u32);
            let inherited_missing = missing.remove(&(copy, thread));
            let (handlers_of, resumes, context_of) = (raw.handlers_of, raw.resumes, raw.context_of);
            let key = ThreadTrace {
                pid,
                thread,
                copy,
                tid,
                inherited_missing,
                handlers_of,
                resumes,
                context_of,
                ..Default::default()
            };
            if raw.windowed() {
                out.extend(windows(&key, &raw)?);
                continue;
            }
            let mut t = key;
            t.bytes = raw.leading_words(u64::MAX);
            // A record after a gap is left out: the stream stops where its words stop running on.
            t.gap = t.bytes.len() < raw.data.values().map(Vec::len).sum::<usize>();
            apply_end(&mut t, raw.end, 0)?;
            out.push(t);
        }
        let mut methods = modules.values().map(|m| m.module.weighting == "naive");
        let naive = methods.next().unwrap_or(false);
        if methods.any(|n| n != naive) {
            return Err(TraceError::Meta("modules traced with different methods (naive and bit tracing)".into()));
        }
        let other_processes = others.into_iter().collect();
        let untraced_forks = untraced_forks.into_iter().collect();
        Ok(TraceFile { modules, threads: out, naive, pid, images, parents, other_processes, untraced_forks, cut_at })
    }
}

impl TraceFile {
    /// The program of every traced function, indexed by trace id (ids no module claims get a placeholder
    /// an activation cannot enter: `RegenError::UnknownFunction`), and per id its module and function index.
    pub fn program(&self) -> Result<(Program, Vec<Option<FunctionRef>>), TraceError> {
        let total = self.modules.iter().next_back().map_or(0, |(&b, m)| b as usize + m.module.functions.len());
        // Ids from ABANDON_ID up are the markers' (`Program::with_abandon` refuses a program reaching them):
        // refuse before allocating, or a corrupt module id (up to 2^32) would fill memory with placeholders.
        if total > ABANDON_ID as usize {
            return Err(TraceError::Meta("more functions than trace ids".into()));
        }
        let mut funcs = Vec::with_capacity(total);
        let mut owner = vec![None; total];
        let placeholder = placeholder();
        for (&base, m) in &self.modules {
            while funcs.len() < base as usize {
                funcs.push(placeholder.clone());
            }
            // The pass numbers a module's call sites from 1 over its functions, blocks and calls (`site_of`).
            let mut first_site = 1u32;
            for (i, ((f, calls), invokes)) in m.module.functions.iter().zip(&m.calls).zip(&m.invokes).enumerate() {
                let bad = |e: String| TraceError::Meta(format!("function `{}`: {e}", f.name));
                let (_, t) = function_tables(&f.cfg, calls, invokes, &m.tail_calls[i]).map_err(bad)?;
                let direct = m.direct[i].iter().map(|&(b, k, g)| (BlockId(b), k, FuncId(base + g)));
                let t = t.with_direct_callees(direct).map_err(|e| bad(e.to_string()))?;
                let implicit = m.implicit[i].iter().map(|&(b, k)| (BlockId(b), k));
                let t = t.with_implicit_sites(implicit).map_err(|e| bad(e.to_string()))?.with_first_site(first_site);
                first_site = first_site.wrapping_add(calls.iter().fold(0u32, |a, &n| a.wrapping_add(n)));
                owner[base as usize + i] = Some((base, i));
                funcs.push(t);
            }
        }
        let program = Program::with_func_bits(funcs, FUNC_ID_BITS)
            .and_then(|p| p.with_resync(pathprof_core::tracing::FuncId(RESYNC_ID)))
            .and_then(|p| p.with_unwind(pathprof_core::tracing::FuncId(UNWIND_ID)))
            .and_then(|p| p.with_abandon(pathprof_core::tracing::FuncId(ABANDON_ID)))
            .ok_or_else(|| TraceError::Meta("more functions than trace ids".into()))?;
        program.check_implicit().map_err(|e| TraceError::Meta(e.to_string()))?;
        Ok((program, owner))
    }
}

/// Fills `t`'s end from its end record: `t.bytes` hold whole words from word `first` of the stream.
fn apply_end(t: &mut ThreadTrace, end: Option<[u64; 6]>, first: u64) -> Result<(), TraceError> {
    let full = t.bytes.len() as u64 * 8;
    let base = first * 64;
    match end {
        Some([total, partial, flags, stop, fork_at, _]) if !t.gap && total >= base => {
            let total = total - base;
            if total < full || total - full >= 64 {
                return Err(TraceError::Meta(format!("{}: bad bit count", t.label())));
            }
            t.bytes.extend_from_slice(&partial.to_le_bytes());
            t.bits = total;
            t.complete = flags & END_COMPLETE != 0;
            t.at_exit = flags & END_AT_EXIT != 0;
            t.at_exec = flags & END_AT_EXEC != 0;
            t.suspended = flags & END_SUSPENDED != 0;
            let start = t.window.as_ref().map_or(0, |w| w.start);
            if flags & END_ABNORMAL != 0 {
                // An abnormal transfer before the window's sync point: nothing in it is vouched for.
                t.abnormal_at = Some(stop.saturating_sub(base).max(start).min(total));
            }
            if flags & END_FORK_CHILD != 0 {
                t.fork_at = Some(fork_at.saturating_sub(base).min(total));
            }
            if flags & END_SIGNAL != 0 {
                t.signal = Some(((flags >> 32) & 0xff) as u32);
                t.in_body = flags & END_IN_BODY != 0;
            }
            t.confined = flags & END_CONFINED != 0;
            t.truncated = flags & (END_TRUNCATED | END_CONFINED) != 0;
        }
        _ => {
            t.gap = true;
            t.bits = full;
        }
    }
    Ok(())
}

/// The windows of a thread's stream: one per sync record, each up to the first stop at or after it, or to the
/// thread's end. A window whose words are missing is reported with a gap.
fn windows(key: &ThreadTrace, raw: &RawThread) -> Result<Vec<ThreadTrace>, TraceError> {
    let mut syncs = raw.syncs.clone();
    syncs.sort_by_key(|s| s.0);
    let ring = raw.end.is_some_and(|e| e[2] & END_RING != 0);
    let bad = || TraceError::Meta(format!("{}: sync and stop records do not fit", key.label()));
    let mut out = Vec::new();
    if syncs.is_empty() {
        // A flight recorder with no surviving sync point, or a thread that never started a region.
        let window = Window { ring, ..Default::default() };
        out.push(ThreadTrace { window: Some(window), gap: raw.end.is_none(), ..key.clone() });
        return Ok(out);
    }
    for (i, (bit, kind, state, entries)) in syncs.iter().enumerate() {
        let next_sync = syncs.get(i + 1).map_or(u64::MAX, |s| s.0);
        let stop = raw.stops.iter().filter(|s| s.0 >= *bit).min_by_key(|s| s.0).copied();
        let end_total = raw.end.map(|e| e[0]);
        let first = bit / 64;
        let window = Window {
            start: bit % 64,
            at: *bit,
            kind: *kind,
            state: *state,
            entries: entries.clone(),
            ring,
            stopped: false,
            opened: true,
        };
        let mut t = ThreadTrace { window: Some(window), ..key.clone() };
        // The window ends at the first stop at or after its sync point (before the next one), or at the end.
        let stop = stop.filter(|s| s.0 <= next_sync);
        let end_bit = match (stop, end_total) {
            (Some((sbit, _)), _) => sbit,
            (None, _) if i + 1 < syncs.len() => return Err(bad()),
            (None, Some(total)) => total,
            (None, None) => u64::MAX,
        };
        if end_bit < *bit {
            return Err(bad());
        }
        // Its whole words, from the sync point's word up to the end's (exclusive): contiguous, or a gap.
        let end_word = end_bit / 64;
        let mut next = first;
        for (&f, words) in &raw.data {
            let n = words.len() as u64 / 8;
            if f + n <= next {
                continue;
            }
            if f > next || next >= end_word {
                break;
            }
            let from = ((next - f) * 8) as usize;
            let upto = ((end_word.min(f + n) - f) * 8) as usize;
            t.bytes.extend_from_slice(&words[from..upto]);
            next = end_word.min(f + n);
        }
        let complete_words = next == end_word;
        match stop {
            Some((sbit, acc)) => {
                if complete_words {
                    t.bytes.extend_from_slice(&acc.to_le_bytes());
                    t.bits = sbit - first * 64;
                } else {
                    t.gap = true;
                    t.bits = t.bytes.len() as u64 * 8;
                }
                if let Some(w) = t.window.as_mut() {
                    w.stopped = true;
                }
            }
            None => {
                let stopped = raw.end.is_some_and(|e| e[2] & END_STOPPED != 0);
                if let Some(w) = t.window.as_mut() {
                    w.stopped = stopped;
                }
                t.gap = !complete_words;
                apply_end(&mut t, raw.end, first)?;
            }
        }
        if t.bits < t.window.as_ref().map_or(0, |w| w.start) && !t.gap {
            return Err(bad());
        }
        out.push(t);
    }
    Ok(out)
}

/// Call sites of a module in the pass's numbering (1-based, in the order of functions, blocks and calls): the
/// function index, block and call index of site `site`.
fn site_of(m: &TraceModuleMeta, site: u64) -> Option<(usize, u32, u32)> {
    let mut left = site.checked_sub(1)?;
    for (fi, blocks) in m.calls.iter().enumerate() {
        for (b, &n) in blocks.iter().enumerate() {
            if left < u64::from(n) {
                return Some((fi, b as u32, left as u32));
            }
            left -= u64::from(n);
        }
    }
    None
}

impl TraceFile {
    /// Where regeneration starts for a window: its sync record's shadow entries resolved to the functions and
    /// call sites the activations wait at (`owner` as [`TraceFile::program`] returns it).
    pub fn resume_point(&self, w: &Window, owner: &[Option<FunctionRef>]) -> Result<ResumePoint, TraceError> {
        let bad = |why: &str| TraceError::Meta(format!("sync point at bit {}: {why}", w.at));
        let depth = w.entries.len();
        let waiting_depth =
            if w.kind == SYNC_AT_ENTRY { depth.checked_sub(1).ok_or_else(|| bad("no activation"))? } else { depth };
        let func = |e: u64| -> Result<(u32, FunctionRef), TraceError> {
            let id = (e & u64::from(MAX_FUNCS - 1)) as u32;
            let o = owner.get(id as usize).copied().flatten().ok_or_else(|| bad("unknown function"))?;
            Ok((id, o))
        };
        let mut point = ResumePoint::default();
        for k in 0..waiting_depth {
            let (id, (base, fi)) = func(w.entries[k])?;
            // The activation above's saved state (or, for the deepest, the thread's): the site, and whether
            // it is bound (its announced callee began there: `trace_layout`, STATE_CERTAIN).
            let state = w.entries.get(k + 1).copied().unwrap_or(w.state);
            let (site, bound) = (site_number(state), state & STATE_CERTAIN != 0);
            let m = &self.modules[&base];
            match site_of(m, site) {
                Some((f, block, call)) if f == fi => {
                    point.waiting.push(Waiting { func: FuncId(id), block: BlockId(block), call, bound })
                }
                _ => return Err(bad("a call site that is not its function's")),
            }
        }
        if w.kind == SYNC_AT_ENTRY {
            let (id, _) = func(w.entries[depth - 1])?;
            point.entered = Some(FuncId(id));
        }
        Ok(point)
    }
}

/// Tables of a one-block function for ids no module claims, marked unclaimed: an activation of one is an
/// error, never a block of a function that does not exist. Its CFG has the EXIT→entry edge `Cfg::new`
/// requires of every function (without it, any file whose trace ids have a gap — a first module above id 0,
/// a module's record lost — panicked here).
fn placeholder() -> FuncTables {
    use pathprof_core::Edge;
    let cfg = Cfg::new(
        1,
        vec![
            Edge { from: BlockId(0), to: BlockId(1), kind: EdgeKind::Return },
            Edge { from: BlockId(1), to: BlockId(0), kind: EdgeKind::ExitToEntry },
        ],
    )
    .expect("a one-block CFG");
    function_tables(&cfg, &[0], &[], &[]).expect("a one-block function").1.unclaimed()
}
