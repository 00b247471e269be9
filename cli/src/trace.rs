//! `pathprof trace FILE [--last N] [--summary] [--json]`: regenerates the exact block sequence of every thread
//! of a trace-mode run (`pathprof_core::tracing::regenerate` over the file's bit streams). With `--summary`,
//! functions the pass left untraced are listed as not profiled (JSON `not_traced`).
//!
//! Text: per thread a header line, then one line per block `function block file:line[,line…]` (callees' blocks
//! between their caller's), then the thread's status: complete, cut short (the process exited or the thread
//! ended inside a function: the blocks up to there are exact), or incomplete (an abnormal transfer — a signal
//! handler, `longjmp`, an exception — or missing records: the blocks before it are exact, nothing after it is
//! shown). `--last N`: only each thread's last N blocks. `--summary`: per function its entries, block and edge
//! counts derived from the trace, summed over threads. JSON:
//! `{"threads":[{"pid","thread","copy","image","tid","status","blocks","steps":[{"function","block","lines"}]}]}`
//! (`copy`, `image`: the runtime copy — one per instrumented executable or shared library of the process —
//! whose stream it is, holding that image's functions only; `tid`: the operating system's thread id, the same
//! thread in other copies' streams), and with
//! `--summary` `{"threads":[…without steps…],"functions":[{"function","module","entries","blocks":[{"id","count"}],
//! "edges":[{"from","to","count"}]}]}` (only traced edges: branches and returns, `to` = the number of blocks for
//! EXIT). A corrupt trace is an error (exit 2).

mod bits;

use crate::not_profiled::NotProfiled;
use anyhow::{bail, Context, Result};
use pathprof_core::tracing::{
    regenerate_from, Abandon, BadResume, BitReader, DecisionSource, FuncId, Program, RegenError, ResumePoint, Resync,
    RunStep, StepSink, StreamError, Unwind,
};
use pathprof_core::{BlockId, EdgeId};
use pathprof_format::meta::FunctionMeta;
use pathprof_format::trace::{FunctionRef, ThreadTrace, TraceFile};
use serde::Serialize;
use std::cell::Cell;
use std::collections::VecDeque;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

/// Arguments of `pathprof trace`.
#[derive(clap::Args)]
pub struct Args {
    /// The trace file (`default.pathtrace`, or `$PATHPROF_TRACE` of the run).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Print only each thread's last N blocks.
    #[arg(long, value_name = "N")]
    last: Option<usize>,
    /// Print block and edge counts derived from the trace instead of the sequence.
    #[arg(long)]
    summary: bool,
    /// Print where the trace's bits go instead: branch decisions, call markers (per callee entered with a
    /// function id), resync and unwind markers.
    #[arg(long, conflicts_with_all = ["summary", "last"])]
    bits: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// The functions of the trace by id.
struct Names<'a> {
    /// Per id: module name, the function's metadata, module output.
    funcs: Vec<Option<(&'a str, &'a FunctionMeta, &'a str)>>,
}

impl<'a> Names<'a> {
    fn new(file: &'a TraceFile, owner: &[Option<FunctionRef>]) -> Names<'a> {
        let funcs = owner
            .iter()
            .map(|o| {
                o.map(|(base, i)| {
                    let m = &file.modules[&base];
                    (m.module.module_name.as_str(), &m.module.functions[i], m.module.output.as_str())
                })
            })
            .collect();
        Names { funcs }
    }

    fn meta(&self, f: FuncId) -> Option<&'a FunctionMeta> {
        self.funcs.get(f.index()).copied().flatten().map(|(_, m, _)| m)
    }

    fn name(&self, f: FuncId) -> String {
        match self.meta(f) {
            Some(m) if !m.display_name.is_empty() => m.display_name.clone(),
            Some(m) => m.name.clone(),
            None => format!("<function {}>", f.0),
        }
    }
}

/// Every function's vertices and edges numbered densely (function by function), so that counting a block or
/// an edge is one array increment: regeneration runs at hundreds of millions of blocks per second, and a
/// nested `Vec` per function or a hash per block would cost more than the walk itself.
struct Flat {
    /// Per function id: the flat index of its vertex 0 (one more entry at the end: the total).
    vbase: Vec<u32>,
    /// Per function id: the flat index of its edge 0 (one more entry at the end: the total).
    ebase: Vec<u32>,
    /// Per flat vertex: [`EXIT`], [`REAL`] or [`PREDICATE`].
    kind: Vec<u8>,
    /// Per flat edge: the flat index of its target (the lean sink counts edges only, [`Tally::add_arrivals`]).
    etarget: Vec<u32>,
    /// Per function id: the flat index of its first straight-run position (one more entry at the end: the
    /// total), where the lean sink counts runs ([`Tally::add_runs`]).
    rbase: Vec<u32>,
}

/// [`Flat::kind`]: the function's virtual EXIT (counted for the summary, never listed).
const EXIT: u8 = 0;
/// [`Flat::kind`]: a real block.
const REAL: u8 = 1;
/// [`Flat::kind`]: a real block that is a predicate (two or more branch successors: a conditional branch).
const PREDICATE: u8 = 2;

impl Flat {
    fn new(file: &TraceFile, owner: &[Option<FunctionRef>], names: &Names<'_>, program: &Program) -> Flat {
        let mut rbase = vec![0u32];
        for i in 0..owner.len() {
            let runs = program.func(FuncId(i as u32)).map_or(0, |t| t.num_run_positions());
            rbase.push(rbase[i] + runs as u32);
        }
        let (mut vbase, mut ebase, mut kind, mut etarget) = (vec![0u32], vec![0u32], Vec::new(), Vec::new());
        for (i, o) in owner.iter().enumerate() {
            let v0 = kind.len() as u32;
            match (names.meta(FuncId(i as u32)), o) {
                (Some(m), Some((base, fi))) => {
                    etarget.extend(m.cfg.edge_ids().map(|e| v0 + m.cfg.edge(e).to.0));
                    let preds = predicate_blocks(&m.cfg, &file.modules[base].invokes[*fi]);
                    let real = m.cfg.num_blocks();
                    kind.extend((0..m.cfg.num_vertices()).map(|v| match v {
                        v if v >= real => EXIT,
                        v if preds[v] => PREDICATE,
                        _ => REAL,
                    }));
                    ebase.push(ebase[i] + m.cfg.num_edges() as u32);
                }
                // An id no module claims: a one-block placeholder (never entered in a valid trace).
                _ => {
                    kind.extend([REAL, EXIT]);
                    ebase.push(ebase[i] + 1);
                    etarget.push(v0 + 1);
                }
            }
            vbase.push(kind.len() as u32);
        }
        Flat { vbase, ebase, kind, etarget, rbase }
    }

    fn num_vertices(&self) -> usize {
        self.kind.len()
    }

    fn num_edges(&self) -> usize {
        *self.ebase.last().expect("one entry at least") as usize
    }

    /// The function and block of flat vertex `i`.
    fn block_of(&self, i: u32) -> (FuncId, BlockId) {
        let f = self.vbase.partition_point(|&b| b <= i) - 1;
        (FuncId(f as u32), BlockId(i - self.vbase[f]))
    }
}

/// What one thread's regeneration yields: its steps (all, or the last N) and counts.
struct Tally<'a> {
    flat: &'a Flat,
    last: Option<usize>,
    /// Whether to keep the steps (the listing), as flat vertex indices.
    keep_steps: bool,
    steps: VecDeque<u32>,
    /// Per flat vertex: the thread's own runs (EXIT included).
    hits: Vec<u64>,
    /// Per flat vertex: runs inherited from a fork child's parent (regenerated, not counted as the child's).
    inherited_hits: Vec<u64>,
    /// Per flat edge: the thread's own crossings.
    edges: Vec<u64>,
    /// Per flat straight-run position: the runs the lean sink counted there (not yet in `edges`).
    runs: Vec<u64>,
}

impl<'a> Tally<'a> {
    fn new(flat: &'a Flat, last: Option<usize>, keep_steps: bool) -> Self {
        Tally {
            flat,
            last,
            keep_steps,
            steps: VecDeque::new(),
            hits: vec![0; flat.num_vertices()],
            inherited_hits: vec![0; flat.num_vertices()],
            edges: vec![0; flat.num_edges()],
            runs: vec![0; *flat.rbase.last().expect("one entry at least") as usize],
        }
    }

    /// Real blocks regenerated (the thread's own and inherited ones).
    fn blocks(&self) -> u64 {
        self.real_sum(&self.hits) + self.real_sum(&self.inherited_hits)
    }

    /// Real blocks inherited from a fork child's parent.
    fn inherited(&self) -> u64 {
        self.real_sum(&self.inherited_hits)
    }

    /// Predicate executions counted (the conditional branches the thread executed).
    fn branches(&self) -> u64 {
        self.flat.kind.iter().zip(&self.hits).filter(|(&k, _)| k == PREDICATE).map(|(_, &n)| n).sum()
    }

    /// Adds a real block `b` of `f`: the thread's own if `counting`, else inherited (a naive item).
    fn push(&mut self, f: FuncId, b: BlockId, counting: bool) {
        let v = (self.flat.vbase[f.index()] + b.0) as usize;
        if counting {
            self.hits[v] += 1;
        } else {
            self.inherited_hits[v] += 1;
        }
        if self.keep_steps {
            if self.last == Some(self.steps.len()) && self.steps.pop_front().is_none() {
                return;
            }
            self.steps.push_back(v as u32);
        }
    }

    /// Regenerates a stream whose blocks are all the thread's own and certain into the counts (no steps kept),
    /// with the lean sink: it counts straight runs and edges only, and the blocks' counts follow from them.
    fn regenerate_counts<D: DecisionSource>(
        &mut self,
        program: &Program,
        resume: &ResumePoint,
        src: &mut D,
    ) -> Result<Result<u64, RegenError>, BadResume> {
        let (counting, emitted) = (Cell::new(true), Cell::new(0));
        let mut sink = Collector::<false, false>::new(self, &counting, &emitted, u64::MAX);
        let r = regenerate_from(program, resume, src, &mut sink, u64::MAX);
        self.add_runs(program);
        self.add_arrivals();
        r
    }

    /// Adds to each edge's crossings those of the straight runs the lean sink counted ([`StepSink::run`]).
    fn add_runs(&mut self, program: &Program) {
        let flat = self.flat;
        for (i, w) in flat.rbase.windows(2).enumerate() {
            let (Some(t), Some(e)) = (program.func(FuncId(i as u32)), flat.ebase.get(i..i + 2)) else { continue };
            let runs = &self.runs[w[0] as usize..w[1] as usize];
            if runs.iter().any(|&n| n > 0) {
                t.add_run_counts(runs, &mut self.edges[e[0] as usize..e[1] as usize]);
            }
        }
    }

    /// Adds to each block's own runs the crossings of the edges into it, which the lean sink counted instead
    /// (its `block` saw only the blocks entered without an edge: activations' entries).
    fn add_arrivals(&mut self) {
        for (&to, &n) in self.flat.etarget.iter().zip(&self.edges) {
            self.hits[to as usize] += n;
        }
    }

    fn real_sum(&self, hits: &[u64]) -> u64 {
        self.flat.kind.iter().zip(hits).filter(|(&k, _)| k != EXIT).map(|(_, &n)| n).sum()
    }
}

/// The regenerator's sink into a [`Tally`]: the tally's arrays borrowed as slices (no aliasing, so the hot path
/// keeps them in registers). `GATED`: a fork child's stream (blocks before its own part are inherited) or a
/// stream cut by a fault (blocks after the last certain one are dropped), tracked with the cells [`Gated`]
/// shares; otherwise every block is the thread's own and certain. `STEPS`: the steps are kept (the listing).
struct Collector<'t, const GATED: bool, const STEPS: bool> {
    vbase: &'t [u32],
    ebase: &'t [u32],
    kind: &'t [u8],
    hits: &'t mut [u64],
    inherited_hits: &'t mut [u64],
    edges: &'t mut [u64],
    rbase: &'t [u32],
    runs: &'t mut [u64],
    steps: &'t mut VecDeque<u32>,
    last: Option<usize>,
    /// Whether blocks are the thread's own (false in a fork child until its part of the stream begins).
    counting: &'t Cell<bool>,
    /// Blocks regenerated so far, EXIT included (shared with [`Gated`]).
    emitted: &'t Cell<u64>,
    /// Blocks (EXIT included) that certainly ran: later ones, and the edges into them, are dropped.
    limit: u64,
}

impl<'t, const GATED: bool, const STEPS: bool> Collector<'t, GATED, STEPS> {
    fn new(tally: &'t mut Tally<'_>, counting: &'t Cell<bool>, emitted: &'t Cell<u64>, limit: u64) -> Self {
        let flat = tally.flat;
        Collector {
            vbase: &flat.vbase,
            ebase: &flat.ebase,
            kind: &flat.kind,
            hits: &mut tally.hits,
            inherited_hits: &mut tally.inherited_hits,
            edges: &mut tally.edges,
            rbase: &flat.rbase,
            runs: &mut tally.runs,
            steps: &mut tally.steps,
            last: tally.last,
            counting,
            emitted,
            limit,
        }
    }
}

/// Per flat vertex and edge ([`Flat`]): block and edge counts summed over threads.
struct Counts {
    blocks: Vec<u64>,
    edges: Vec<u64>,
}

impl<const GATED: bool, const STEPS: bool> StepSink for Collector<'_, GATED, STEPS> {
    #[inline]
    fn block(&mut self, f: FuncId, b: BlockId) {
        if GATED {
            let i = self.emitted.get();
            self.emitted.set(i + 1);
            if i >= self.limit {
                return;
            }
        }
        let v = (self.vbase[f.index()] + b.0) as usize;
        if !GATED || self.counting.get() {
            self.hits[v] += 1;
        } else {
            self.inherited_hits[v] += 1;
        }
        if STEPS && self.kind[v] != EXIT {
            if self.last == Some(self.steps.len()) && self.steps.pop_front().is_none() {
                return;
            }
            self.steps.push_back(v as u32);
        }
    }
    #[inline]
    fn edge(&mut self, f: FuncId, e: EdgeId) {
        if GATED && self.emitted.get() >= self.limit {
            return; // into a block that may not have run
        }
        if !GATED || self.counting.get() {
            self.edges[(self.ebase[f.index()] + e.0) as usize] += 1;
        }
    }
    #[inline]
    fn step(&mut self, f: FuncId, e: EdgeId, to: BlockId) {
        if GATED || STEPS {
            self.edge(f, e);
            self.block(f, to);
        } else {
            // The block's run is the edge's crossing: Tally::add_arrivals counts it after the walk.
            self.edges[(self.ebase[f.index()] + e.0) as usize] += 1;
        }
    }
    #[inline]
    fn run(&mut self, f: FuncId, at: u32, steps: &[RunStep]) {
        if GATED || STEPS {
            for s in steps {
                self.step(f, s.edge, s.target);
            }
        } else {
            // Its edges and blocks are counted after the walk (Tally::add_runs, then add_arrivals).
            self.runs[(self.rbase[f.index()] + at) as usize] += 1;
        }
    }
}

/// The bit stream, which opens the collector's gate when a fork child's own part of it begins, and tracks
/// which blocks certainly ran: the target of a decision and the entry of an activation run right after their
/// bits are written; blocks walked after a Done or after the target, with no bits of their own, may not have
/// (a fault in a function's body ends the trace there).
struct Gated<'a> {
    reader: BitReader<'a>,
    bits: u64,
    fork_at: u64,
    counting: &'a Cell<bool>,
    emitted: &'a Cell<u64>,
    certain: &'a Cell<u64>,
}

impl Gated<'_> {
    #[inline]
    fn check(&self) {
        if self.bits - self.reader.remaining() >= self.fork_at {
            self.counting.set(true);
        }
    }
}

impl DecisionSource for Gated<'_> {
    #[inline]
    fn witness(&mut self, f: FuncId, v: BlockId, width: u8) -> Result<u32, StreamError> {
        self.check();
        let w = self.reader.witness(f, v, width)?;
        self.certain.set(self.emitted.get() + 1);
        Ok(w)
    }
    fn activation(&mut self, announced: Option<FuncId>, func_bits: u8) -> Result<Option<FuncId>, StreamError> {
        self.check();
        let a = self.reader.activation(announced, func_bits)?;
        self.certain.set(self.emitted.get() + u64::from(a.is_some()));
        Ok(a)
    }
    fn resync(&mut self, func_bits: u8) -> Result<Resync, StreamError> {
        let r = self.reader.resync(func_bits)?;
        self.certain.set(self.emitted.get());
        Ok(r)
    }
    fn unwind(&mut self, func_bits: u8) -> Result<Unwind, StreamError> {
        let u = self.reader.unwind(func_bits)?;
        // The landing pad wrote the marker: its block ran.
        self.certain.set(self.emitted.get() + 1);
        Ok(u)
    }
    fn abandon(&mut self) -> Result<Abandon, StreamError> {
        let d = self.reader.abandon()?;
        // The returning call site wrote the marker: nothing after it ran yet.
        self.certain.set(self.emitted.get());
        Ok(d)
    }
}

#[derive(Serialize)]
struct JsonStep {
    function: String,
    block: u32,
    lines: Vec<u32>,
}

#[derive(Serialize)]
struct JsonThread {
    pid: u32,
    thread: u32,
    copy: u32,
    image: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<u32>,
    /// A handler stream: the thread (number) whose signal handlers it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    handlers_of: Option<u32>,
    /// A stream a thread went on in after a signal handler's `siglongjmp`: the thread number it continues.
    #[serde(skip_serializing_if = "Option::is_none")]
    resumes: Option<u32>,
    /// A user context's stream: the thread number of the stream that made it (`makecontext`).
    #[serde(skip_serializing_if = "Option::is_none")]
    context_of: Option<u32>,
    status: String,
    blocks: u64,
    /// Bits of the thread's stream (naive: 64 per block).
    bits: u64,
    /// Conditional branches executed: blocks run that are predicates (two or more branch successors); in a
    /// fork child only its own.
    branches: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    steps: Option<Vec<JsonStep>>,
}

#[derive(Serialize)]
struct JsonCount {
    id: u32,
    count: u64,
    lines: Vec<u32>,
}

#[derive(Serialize)]
struct JsonEdge {
    from: u32,
    to: u32,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    succ: Option<u32>,
    count: u64,
}

/// One function's counts derived from the trace; the fields `pathprof show --json` has too (`name`, `file`,
/// `module`, `module_output`, `exact`, blocks' `lines`, edges' `kind` and `succ`) mean the same, so tools that
/// compare profiles can read both.
#[derive(Serialize)]
struct JsonFunction {
    function: String,
    name: String,
    file: String,
    module: String,
    module_output: String,
    /// Whether every thread of the file is complete or cut short: then the counts are the run's exact counts.
    /// An incomplete thread (an abnormal transfer, missing records) may have run any function after its stop.
    exact: bool,
    entries: u64,
    blocks: Vec<JsonCount>,
    edges: Vec<JsonEdge>,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    threads: Vec<JsonThread>,
    #[serde(skip_serializing_if = "Option::is_none")]
    functions: Option<Vec<JsonFunction>>,
    /// With `--summary`: every traced function of the file's modules as `[file, name]` (those that did not run
    /// too), so a comparison can tell "not run" from "not traced".
    #[serde(skip_serializing_if = "Option::is_none")]
    traced: Option<Vec<(String, String)>>,
    /// With `--summary`: functions called from traced code whose `const`/`pure` promise the trace build
    /// withdrew (every such call is kept), by name: they may run more often than in a build without tracing,
    /// whose optimiser merges or drops such calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    kept_calls: Option<Vec<String>>,
    /// With `--summary`: functions the pass left untraced (as `show`'s `not_profiled`): they ran unrecorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    not_traced: Option<Vec<NotProfiled<'a>>>,
    /// With `--summary`, when a thread's trace is only a window (flight recorder, regions): [`WINDOW_NOTE`].
    #[serde(skip_serializing_if = "Option::is_none")]
    window: Option<&'static str>,
    /// Fork children of the process that ran traced code in no trace (`PATHPROF_TRACE` without `%p`), by pid.
    #[serde(skip_serializing_if = "<[u32]>::is_empty")]
    untraced_forks: &'a [u32],
}

/// What a summary of windows says about its counts.
const WINDOW_NOTE: &str = "the counts cover only the recorded windows (flight recorder, regions, or where a thread \
                           went on after a signal handler left it through siglongjmp), not the whole run";

/// Why a thread's bits are only a prefix of what it ran.
fn prefix_reason(t: &pathprof_format::trace::ThreadTrace) -> &'static str {
    if t.confined {
        "the program confined itself in a seccomp sandbox, after which nothing is traced"
    } else {
        "the trace reached its size limit (PATHPROF_TRACE_MAX)"
    }
}

/// Why a thread's records have a gap, for its status.
fn missing_records(t: &pathprof_format::trace::ThreadTrace) -> String {
    match &t.inherited_missing {
        Some(why) => format!("a fork child's thread, and {why}"),
        None => "records are missing (the process was killed, the file was cut short, or a fork child's file names \
                 no parent)"
            .into(),
    }
}

/// A window's status: where it starts, then how it ends.
fn window_status(
    t: &pathprof_format::trace::ThreadTrace,
    w: &pathprof_format::trace::Window,
    status: String,
) -> String {
    let status = if status == "complete" { "ran to the thread's end".to_string() } else { status };
    if let Some(from) = t.resumes {
        format!("thread {from} going on where a signal handler left it through siglongjmp; {status}")
    } else if w.ring && w.at == 0 && w.entries.is_empty() {
        format!("whole (the flight recorder's ring kept the thread from its start); {status}")
    } else if w.ring {
        format!("partial from sync point at bit {} (flight recorder: what ran before is not recorded); {status}", w.at)
    } else {
        format!("region from bit {}; {status}", w.at)
    }
}

/// Runs `pathprof trace`.
pub fn run(args: &Args) -> Result<()> {
    let (file, warnings) = crate::files::read_trace(&args.file)?;
    crate::files::with_warnings(run_file(args, &file), warnings)
}

fn run_file(args: &Args, file: &TraceFile) -> Result<()> {
    let what = || format!("reading {}", args.file.display());
    let (program, owner) = file.program().with_context(what)?;
    if args.bits {
        let stdout = io::stdout();
        let mut out = BufWriter::new(stdout.lock());
        bits::run(file, &owner, args.json, &mut out).with_context(what)?;
        out.flush()?;
        return Ok(());
    }
    if file.threads.is_empty() && !args.json {
        // An empty listing would not say why.
        eprintln!(
            "pathprof: note: no thread in {}: the traced code never ran, or the process ended without writing \
             its trace (killed, or its image ended in untraced code)",
            args.file.display()
        );
    }
    let names = Names::new(file, &owner);
    let flat = Flat::new(file, &owner, &names, &program);
    let mut totals =
        args.summary.then(|| Counts { blocks: vec![0; flat.num_vertices()], edges: vec![0; flat.num_edges()] });
    let mut listing = Listing::new(&flat, &names);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut json_threads = Vec::new();
    let mut exact = true;
    let mut windowed = false;
    for t in &file.threads {
        let mut c = Tally::new(&flat, args.last, !args.summary);
        let (status, vouched) = match &t.window {
            Some(w) if !w.opened => {
                windowed = true;
                let why = if w.ring {
                    "nothing recorded: no sync point survived in the flight recorder's ring (a stretch without function entries longer than the ring)"
                } else {
                    "nothing recorded: the thread never started a region"
                };
                (why.to_string(), false)
            }
            _ => {
                let (status, vouched) = if file.naive {
                    naive_thread(t, &names, &mut c).with_context(what)?
                } else {
                    let resume = match &t.window {
                        Some(w) => file.resume_point(w, &owner).with_context(what)?,
                        None => ResumePoint::default(),
                    };
                    regenerate_thread(&program, &resume, t, &names, &mut c).with_context(what)?
                };
                match &t.window {
                    // A flight recorder that kept the thread from its start: the whole stream.
                    Some(w) if w.ring && w.at == 0 && w.entries.is_empty() => (window_status(t, w, status), vouched),
                    Some(w) => {
                        windowed = true;
                        (window_status(t, w, status), false)
                    }
                    None => (status, vouched),
                }
            }
        };
        let status = match (t.fork_at, c.inherited()) {
            (Some(_), n) if n > 0 => format!("{status} (a fork child: its first {n} blocks ran in its parent)"),
            _ => status,
        };
        exact &= vouched;
        if let Some(totals) = &mut totals {
            totals.blocks.iter_mut().zip(&c.hits).for_each(|(t, n)| *t += n);
            totals.edges.iter_mut().zip(&c.edges).for_each(|(t, n)| *t += n);
        }
        if args.json {
            let steps = (!args.summary).then(|| {
                c.steps
                    .iter()
                    .map(|&v| {
                        let (f, b) = flat.block_of(v);
                        json_step(&names, f, b)
                    })
                    .collect()
            });
            json_threads.push(JsonThread {
                pid: t.pid,
                thread: t.thread,
                copy: t.copy,
                image: file.images.get(&t.copy).cloned().unwrap_or_default(),
                tid: t.tid,
                handlers_of: t.handlers_of,
                resumes: t.resumes,
                context_of: t.context_of,
                status,
                blocks: c.blocks(),
                bits: t.bits - t.window.as_ref().map_or(0, |w| w.start.min(t.bits)),
                branches: c.branches(),
                steps,
            });
        } else {
            let relation = match (t.handlers_of, t.context_of) {
                (Some(h), _) => format!("signal handlers of thread {h}, "),
                (None, Some(m)) => format!("a user context thread {m} made, "),
                (None, None) => String::new(),
            };
            if file.images.len() > 1 {
                // Several runtime copies: say whose stream (the image's functions only) and which OS thread.
                let image = file.images.get(&t.copy).map_or("", String::as_str);
                let tid = t.tid.map_or(String::new(), |n| format!(", tid {n}"));
                writeln!(
                    out,
                    "thread {} of {image} ({relation}process {}{tid}): {} blocks, {status}",
                    t.thread,
                    t.pid,
                    c.blocks()
                )?;
            } else {
                writeln!(out, "thread {} ({relation}process {}): {} blocks, {status}", t.thread, t.pid, c.blocks())?;
            }
            for &v in &c.steps {
                out.write_all(listing.line(v))?;
            }
        }
    }
    let functions = totals.map(|c| summary(&names, &flat, &c, exact, !file.naive));
    let not_traced = crate::not_profiled::collect(file.modules.values().map(|m| &m.module), None);
    if args.json {
        let traced = args.summary.then(|| {
            let mut all: Vec<(String, String)> =
                names.funcs.iter().flatten().map(|(_, m, _)| (m.file.clone(), m.name.clone())).collect();
            all.sort();
            all.dedup();
            all
        });
        let kept_calls = args.summary.then(|| {
            let mut all: Vec<String> = file.modules.values().flat_map(|m| m.kept_calls.iter().cloned()).collect();
            all.sort();
            all.dedup();
            all
        });
        let window = (args.summary && windowed).then_some(WINDOW_NOTE);
        let not_traced = args.summary.then_some(not_traced);
        let untraced_forks = &file.untraced_forks;
        let report =
            JsonReport { threads: json_threads, functions, traced, kept_calls, not_traced, window, untraced_forks };
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else if let Some(functions) = functions {
        if windowed {
            writeln!(out, "note: {WINDOW_NOTE}")?;
        }
        for f in functions {
            writeln!(out, "function {} ({}): {} entries", f.function, f.module, f.entries)?;
            for b in &f.blocks {
                writeln!(out, "  block {}: {}", b.id, b.count)?;
            }
            for e in &f.edges {
                writeln!(out, "  edge {} -> {}: {}", e.from, e.to, e.count)?;
            }
        }
        crate::not_profiled::write_text(&mut out, &not_traced, true)?;
    }
    out.flush()?;
    Ok(())
}

fn json_step(names: &Names<'_>, f: FuncId, b: BlockId) -> JsonStep {
    let lines = names.meta(f).and_then(|m| m.blocks.get(b.index())).map(|b| b.lines.clone()).unwrap_or_default();
    JsonStep { function: names.name(f), block: b.0, lines }
}

/// The listing's line of each block (`  function block file:line,line…`), formatted once per block: a trace
/// lists the same few blocks millions of times.
struct Listing<'a> {
    flat: &'a Flat,
    names: &'a Names<'a>,
    /// Per flat vertex: its line, once formatted.
    lines: Vec<Option<Box<[u8]>>>,
}

impl<'a> Listing<'a> {
    fn new(flat: &'a Flat, names: &'a Names<'a>) -> Listing<'a> {
        Listing { flat, names, lines: vec![None; flat.num_vertices()] }
    }

    fn line(&mut self, v: u32) -> &[u8] {
        let (flat, names) = (self.flat, self.names);
        self.lines[v as usize].get_or_insert_with(|| {
            let (f, b) = flat.block_of(v);
            let m = names.meta(f);
            let lines = m.and_then(|m| m.blocks.get(b.index())).map(|b| &b.lines[..]).unwrap_or(&[]);
            let file = m.map_or("", |m| m.file.as_str());
            let lines: Vec<String> = lines.iter().map(u32::to_string).collect();
            format!("  {} {} {}:{}\n", names.name(f), b.0, file, lines.join(",")).into_bytes().into_boxed_slice()
        })
    }
}

/// Per executed function: entries (executions of its entry block), block and traced-edge counts.
fn summary(names: &Names<'_>, flat: &Flat, c: &Counts, exact: bool, with_edges: bool) -> Vec<JsonFunction> {
    let mut out = Vec::new();
    for i in 0..flat.vbase.len() - 1 {
        let blocks = &c.blocks[flat.vbase[i] as usize..flat.vbase[i + 1] as usize];
        let edge_counts = &c.edges[flat.ebase[i] as usize..flat.ebase[i + 1] as usize];
        let f = FuncId(i as u32);
        let Some(m) = names.meta(f) else { continue };
        if blocks.iter().all(|&n| n == 0) {
            continue;
        }
        let module = names.funcs[i].map_or("", |(module, _, _)| module).to_string();
        let edges = m
            .cfg
            .edge_ids()
            .filter(|&e| {
                with_edges
                    && matches!(
                        m.cfg.edge(e).kind,
                        pathprof_core::EdgeKind::Branch { .. } | pathprof_core::EdgeKind::Return
                    )
            })
            .map(|e| {
                let edge = m.cfg.edge(e);
                let (kind, succ) = match edge.kind {
                    pathprof_core::EdgeKind::Branch { succ } => ("branch", Some(succ)),
                    _ => ("return", None),
                };
                JsonEdge { from: edge.from.0, to: edge.to.0, kind, succ, count: edge_counts[e.index()] }
            })
            .collect();
        let block_lines = |b: usize| m.blocks.get(b).map(|b| b.lines.clone()).unwrap_or_default();
        out.push(JsonFunction {
            function: names.name(f),
            name: m.name.clone(),
            file: m.file.clone(),
            module,
            module_output: names.funcs[i].map_or("", |(_, _, output)| output).to_string(),
            exact,
            entries: blocks[0],
            blocks: (0..m.cfg.num_blocks())
                .map(|b| JsonCount { id: b as u32, count: blocks[b], lines: block_lines(b) })
                .collect(),
            edges,
        });
    }
    out
}

/// Why a user context's stream ends where it does (`END_SUSPENDED`): all the context ran, exact.
fn suspended_reason(t: &ThreadTrace) -> &'static str {
    if t.at_exit {
        "suspended in a user context when the process ended"
    } else {
        "suspended in a user context the program never switched back to"
    }
}

/// Regenerates one thread into `c`; returns its status and whether its blocks are all the thread ran up to
/// its end (complete or cut short), or an error for a corrupt trace.
fn regenerate_thread(
    program: &pathprof_core::tracing::Program,
    resume: &ResumePoint,
    t: &ThreadTrace,
    names: &Names<'_>,
    c: &mut Tally<'_>,
) -> Result<(String, bool)> {
    let bits = t.abnormal_at.unwrap_or(t.bits).min(t.bits);
    let reader = || thread_reader(t);
    let fork_at = t.fork_at.unwrap_or(0);
    let (limit, trimmed) = match certain_blocks(program, resume, t) {
        Some(c) => (c.certain, c.walked > c.certain),
        None => (u64::MAX, false),
    };
    let certain = Cell::new(0);
    let (counting, emitted) = (Cell::new(fork_at == 0), Cell::new(0));
    let thread = t.label();
    let gated = fork_at > 0 || limit != u64::MAX;
    let (result, remaining) = if gated {
        let mut src =
            Gated { reader: reader(), bits, fork_at, counting: &counting, emitted: &emitted, certain: &certain };
        let r = if c.keep_steps {
            let mut sink = Collector::<true, true>::new(c, &counting, &emitted, limit);
            regenerate_from(program, resume, &mut src, &mut sink, u64::MAX)
        } else {
            let mut sink = Collector::<true, false>::new(c, &counting, &emitted, limit);
            regenerate_from(program, resume, &mut src, &mut sink, u64::MAX)
        };
        (r, src.reader.remaining())
    } else {
        // Every block is the thread's own and certain: the plain reader and the lean sink.
        let mut src = reader();
        let r = if c.keep_steps {
            let mut sink = Collector::<false, true>::new(c, &counting, &emitted, limit);
            regenerate_from(program, resume, &mut src, &mut sink, u64::MAX)
        } else {
            c.regenerate_counts(program, resume, &mut src)
        };
        (r, src.remaining())
    };
    let result = result.map_err(|e| anyhow::anyhow!("{thread}: corrupt trace: {e}"))?;
    match result {
        Ok(_) if remaining > 0 => bail!("{thread}: corrupt trace ({remaining} bits after the end)"),
        Ok(_) => Ok(("complete".into(), true)),
        Err(RegenError::Stream { error: StreamError::Ended, func, block }) => {
            let at = match (func, block) {
                (Some(f), Some(b)) => format!(" inside {} at block {}", names.name(f), b.0),
                _ => String::new(),
            };
            Ok(if t.abnormal_at.is_some() {
                (format!("incomplete: an abnormal transfer (signal handler, longjmp or exception){at}; nothing after it is shown"), false)
            } else if t.gap {
                (format!("incomplete: {}{at}", missing_records(t)), false)
            } else if t.truncated {
                // Exact up to the cut, but not the whole run: its counts are no run's counts.
                (format!("cut short: {}{at}", prefix_reason(t)), false)
            } else if let Some(sig) = t.signal {
                let at = if trimmed {
                    "; the blocks after its last decision are left out (the fault came in one of them)".to_string()
                } else {
                    at
                };
                (format!("cut short: fatal signal {sig}{at}"), true)
            } else if t.window.as_ref().is_some_and(|w| w.stopped) {
                (format!("region stopped{at}"), true)
            } else if t.suspended {
                (format!("cut short: {}{at}", suspended_reason(t)), true)
            } else if t.at_exit {
                (
                    format!(
                        "cut short: the process {}{at}",
                        if t.at_exec { "exec'd (or became a daemon)" } else { "exited" }
                    ),
                    true,
                )
            } else {
                (format!("cut short: the thread ended{at}"), true)
            })
        }
        // Still going round a loop that reads nothing when the stream ended: exact up to the loop, but how often it
        // went round is not recorded, so the counts are not vouched for.
        Err(RegenError::EndlessLoop { func, block }) => Ok((
            format!(
                "cut short inside {} at block {}, in a loop without decisions: its iterations after the last \
                 decision are not recorded, so its counts are not exact",
                names.name(func),
                block.0
            ),
            false,
        )),
        Err(e) => {
            let e = match e {
                RegenError::Stream { func: Some(f), block: Some(b), .. } => {
                    format!("unexpected trace data in {} at block {}", names.name(f), b.0)
                }
                RegenError::BadWitness { func, block, value } => {
                    format!("witness {value} does not fit {} at block {}", names.name(func), block.0)
                }
                RegenError::DeadEnd { func, block } => {
                    format!("{} has no way out of block {}", names.name(func), block.0)
                }
                e => e.to_string(),
            };
            bail!("{thread}: corrupt trace: {e}")
        }
    }
}

/// The reader of thread `t`'s stream: up to an abnormal transfer, from its window's start.
fn thread_reader(t: &ThreadTrace) -> BitReader<'_> {
    let mut r = t.reader(t.abnormal_at.unwrap_or(t.bits).min(t.bits));
    r.skip(t.window.as_ref().map_or(0, |w| w.start));
    r
}

/// Of a walk over a thread's stream: the blocks regenerated and, of those, the ones that certainly ran
/// (EXIT blocks included in both).
pub(crate) struct CertainBlocks {
    pub walked: u64,
    pub certain: u64,
}

/// For a thread whose stream ends before the thread did — a prefix (a size limit, a file cut short or missing
/// its later records), a fault in a body, an abnormal transfer (a signal handler's entry, say, in a body or at
/// a call site) — a first walk finds the last block that certainly ran: the walk goes on past it through
/// blocks that need no bits, which may not have run. `None` when every block the walk regenerates ran.
/// Every consumer of regenerated blocks that must not count such blocks (the counts, the listing, the cache
/// simulation) stops there.
pub(crate) fn certain_blocks(
    program: &pathprof_core::tracing::Program,
    resume: &ResumePoint,
    t: &ThreadTrace,
) -> Option<CertainBlocks> {
    if !(t.truncated || t.gap || (t.signal.is_some() && t.in_body) || t.abnormal_at.is_some()) {
        return None;
    }
    let bits = t.abnormal_at.unwrap_or(t.bits).min(t.bits);
    let fork_at = t.fork_at.unwrap_or(0);
    let (probed, counting, certain) = (Cell::new(0), Cell::new(true), Cell::new(0));
    let mut src =
        Gated { reader: thread_reader(t), bits, fork_at, counting: &counting, emitted: &probed, certain: &certain };
    let _ = regenerate_from(program, resume, &mut src, &mut Probe(&probed), u64::MAX);
    Some(CertainBlocks { walked: probed.get(), certain: certain.get() })
}

/// Counts the blocks a walk regenerates (the first pass over a trace ended by a fault).
struct Probe<'a>(&'a Cell<u64>);

impl StepSink for Probe<'_> {
    fn block(&mut self, _f: FuncId, _b: BlockId) {
        self.0.set(self.0.get() + 1);
    }
}

/// Per block of `cfg`: whether it is a predicate (two or more branch successors: a conditional branch or a
/// switch), where bit tracing writes a decision; an `invoke` (blocks `invokes`) is a call, not a branch.
fn predicate_blocks(cfg: &pathprof_core::Cfg, invokes: &[u32]) -> Vec<bool> {
    let mut succs = vec![0u32; cfg.num_vertices()];
    for e in cfg.edge_ids() {
        if matches!(cfg.edge(e).kind, pathprof_core::EdgeKind::Branch { .. }) {
            succs[cfg.edge(e).from.index()] += 1;
        }
    }
    for &b in invokes {
        if let Some(n) = succs.get_mut(b as usize) {
            *n = n.saturating_sub(1);
        }
    }
    succs.into_iter().map(|n| n >= 2).collect()
}

/// Reads one thread's naive items (one per block: the block in the low 32 bits, the function's trace id in
/// the high 32) into `c`; returns its status as [`regenerate_thread`] does. Items describe themselves, but a
/// signal handler's may be spliced into the item it interrupted, or dropped: like bit tracing, reading stops at
/// the first abnormal transfer (at the item it began in).
fn naive_thread(t: &ThreadTrace, names: &Names<'_>, tally: &mut Tally<'_>) -> Result<(String, bool)> {
    let thread = t.label();
    let mut counting = t.fork_at.is_none_or(|f| f == 0);
    if !t.bits.is_multiple_of(64) && t.abnormal_at.is_none() {
        bail!("{thread}: corrupt naive trace ({} bits, not whole items)", t.bits);
    }
    let fork_at = t.fork_at.unwrap_or(0);
    let start = t.window.as_ref().map_or(0, |w| w.start);
    if !start.is_multiple_of(64) {
        bail!("{thread}: corrupt naive trace (a window starting inside an item)");
    }
    let items = t.abnormal_at.map_or(t.bits, |a| a.min(t.bits)) / 64;
    let mut last = None;
    for (i, item) in t.bytes.chunks_exact(8).take(items as usize).enumerate().skip((start / 64) as usize) {
        let v = u64::from_le_bytes(item.try_into().expect("8 bytes"));
        let (f, b) = (FuncId((v >> 32) as u32), BlockId(v as u32));
        if names.meta(f).is_none_or(|m| b.index() >= m.cfg.num_blocks()) {
            bail!("{thread}: corrupt naive trace (item {i}: block {} of function id {})", b.0, f.0);
        }
        if i as u64 * 64 >= fork_at {
            counting = true;
        }
        tally.push(f, b, counting);
        last = Some((f, b));
    }
    let at = last.map_or(String::new(), |(f, b)| format!(" inside {} at block {}", names.name(f), b.0));
    Ok(if t.abnormal_at.is_some() {
        (format!("incomplete: an abnormal transfer (signal handler, longjmp or exception){at}; nothing after it is shown"), false)
    } else if t.gap {
        (format!("incomplete: {}{at}", missing_records(t)), false)
    } else if t.truncated {
        (format!("cut short: {}{at}", prefix_reason(t)), false)
    } else if t.complete {
        ("complete".into(), true)
    } else if t.window.as_ref().is_some_and(|w| w.stopped) {
        (format!("region stopped{at}"), true)
    } else if let Some(sig) = t.signal {
        (format!("cut short: fatal signal {sig}{at}"), true)
    } else if t.suspended {
        (format!("cut short: {}{at}", suspended_reason(t)), true)
    } else if t.at_exit {
        (
            format!("cut short: the process {}{at}", if t.at_exec { "exec'd (or became a daemon)" } else { "exited" }),
            true,
        )
    } else {
        (format!("cut short: the thread ended{at}"), true)
    })
}
