//! `pathprof icache TRACE --binary PLAIN [--I1 SIZE,ASSOC,LINE] [--json]`: instruction-cache accesses and misses
//! of the plain binary, from an icache-mode trace (`--pathprof-mode=icache`: trace mode at `OptimizerLast`).
//!
//! PLAIN is the program built with the same flags, uninstrumented, plus `-fbasic-block-address-map` (and
//! `-no-pie` to compare with valgrind). Each traced function's IR blocks are mapped onto PLAIN's machine blocks
//! (`pathprof_core::cache::machine_map`: verified or refused); each thread's block sequence is expanded into
//! the machine instructions fetched, in order — a traced callee's instructions after the call instruction that
//! entered it — and run through an LRU cache that starts empty. Accesses count like cachegrind's `Ir`, misses
//! like its `I1mr` (an instruction straddling two lines is one access, a miss if either line misses).
//!
//! What is not simulated: functions not traced (libc, the loader), and traced functions whose mapping is
//! refused or fails a run-time check (their blocks are counted as such; their fetches are unknown). The cache
//! sees only simulated fetches, so evictions by other code are missing from the misses. Threads (and the
//! processes of a trace) are simulated one after another in one cache; a thread whose trace stops early (an
//! abnormal transfer, lost records) is counted up to there and reported in `incomplete_threads`.

mod binary;
mod statics;

use anyhow::{bail, Context, Result};
use binary::{Binary, MachineFunction};
use pathprof_core::cache::lru::LruCache;
use pathprof_core::cache::machine_map::{align_blocks, map_blocks, map_predicted_blocks, BlockMapping, IrTarget};
use pathprof_core::cache::program::Geometry;
use pathprof_core::cache::replay::{Activation, StaticRun};
use pathprof_core::tracing::{regenerate, FuncId, ResumePoint, StepSink};
use pathprof_core::{BlockId, EdgeId};
use pathprof_format::trace::TraceFile;
use serde::Serialize;
use statics::Model;
use std::collections::HashMap;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

/// Arguments of `pathprof icache`.
#[derive(clap::Args)]
pub struct Args {
    /// The trace of an icache-mode run (`--pathprof-mode=icache`).
    #[arg(value_name = "TRACE")]
    file: PathBuf,
    /// The plain build (same flags, uninstrumented, plus -fbasic-block-address-map).
    #[arg(long, value_name = "PLAIN")]
    binary: PathBuf,
    /// Cache geometry SIZE,ASSOC,LINE in bytes (cachegrind's --I1 syntax).
    #[arg(long = "I1", value_name = "SIZE,ASSOC,LINE", default_value = "32768,8,64")]
    i1: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Simulate every fetch (no static classification): the second method the classified run must equal.
    #[arg(long, conflicts_with = "verify")]
    full: bool,
    /// Run both methods and fail unless every function's accesses and misses agree.
    #[arg(long)]
    verify: bool,
}

/// Block checks the alignment search may make per function before it gives up (the function is then not
/// simulated).
const ALIGN_BUDGET: u64 = 200_000;

/// A verified mapping laid out for the replay's hot path (one lookup per IR step, no allocation).
struct Mapping {
    /// Per IR block: its machine block, if present.
    machine: Vec<Option<usize>>,
    /// Per machine block: each IR target it steps to and the range of `via` its added blocks are in.
    steps: Vec<Vec<(IrTarget, u32, u32)>>,
    /// The added blocks of every step, one range after another.
    via: Vec<usize>,
    /// Per machine block: the IR block it carries a copy of (tail duplication), whose step stays in it.
    absorbed: Vec<Option<u32>>,
}

impl Mapping {
    fn new(m: BlockMapping, machine_blocks: usize) -> Mapping {
        let mut steps = vec![Vec::new(); machine_blocks];
        let mut via = Vec::new();
        for ((block, target), path) in m.via {
            let start = via.len() as u32;
            via.extend(path);
            steps[block].push((target, start, via.len() as u32));
        }
        let mut absorbed = vec![None; machine_blocks];
        for (block, b) in m.absorbed {
            absorbed[block] = Some(b);
        }
        Mapping { machine: m.machine, steps, via, absorbed }
    }
}

/// Per traced function: what the simulation knows of it.
enum Status<'b> {
    /// Mapped and verified.
    Mapped(&'b MachineFunction, Mapping),
    /// Not simulated: the kind of reason (statistics) and the reason.
    Refused(&'static str, String),
}

/// Per-function totals.
#[derive(Default, Clone)]
struct Totals {
    accesses: u64,
    misses: u64,
    /// Executed IR blocks of the function when it is not simulated.
    blocks_not_simulated: u64,
    /// Executions of `rep`-prefixed instructions (counted once here; cachegrind counts each iteration).
    rep_fetches: u64,
}

/// One activation on the simulated call stack.
struct Frame {
    func: FuncId,
    /// Current machine block (layout index) and the next instruction in it to fetch.
    block: usize,
    cursor: usize,
    /// The call instruction a traced callee was entered from, until the IR call site is done.
    in_call: Option<usize>,
    /// The IR block the machine block runs, and how many of its call sites have returned: which call is
    /// running when the block's calls are its call sites one for one.
    ir_block: u32,
    sites_done: u32,
    /// The activation in the static model (simulated functions, static run only).
    act: Option<Activation>,
}

/// The static run's state: the model, the counter it drives, and whether the run left the model.
struct Statics<'m> {
    model: &'m Model,
    run: StaticRun<'m>,
    /// Why the counts cannot be used (the run left the model), if it did.
    broken: Option<String>,
    /// A thread stopped where the model has no way on to foreign code: any later simulated code leaves it.
    dangling: bool,
}

impl Statics<'_> {
    fn leave(&mut self, why: impl FnOnce() -> String) {
        if self.broken.is_none() {
            self.broken = Some(why());
        }
    }
}

/// Expands block steps into fetches.
struct Simulator<'a, 'b> {
    status: &'a [Status<'b>],
    /// Real IR blocks of each traced function (its EXIT's number).
    real: &'a [u32],
    /// Per traced function and IR block, its call sites (as the trace numbers them).
    ir_calls: &'a [&'b [u32]],
    /// Entry address of each traced function in the binary (for call checks).
    address: &'a [Option<u64>],
    cache: Option<LruCache>,
    totals: Vec<Totals>,
    stack: Vec<Frame>,
    /// The next `block` continues the top activation (an `edge` came first).
    stepping: bool,
    /// Functions whose run-time check failed (first reason).
    failed: Vec<Option<String>>,
    /// Fetches per instruction address (`PATHPROF_ICACHE_DUMP`, for debugging against valgrind).
    per_insn: Option<std::collections::BTreeMap<u64, u64>>,
    /// Call target address → the traced function a direct call there enters (`None`: several share it).
    direct: &'a HashMap<u64, Option<usize>>,
    /// Per traced function: entered other than by a direct call from a simulated function (a callback).
    outside: Vec<bool>,
    /// The static run, when the categories drive the counting.
    statics: Option<Statics<'a>>,
}

impl<'a, 'b> Simulator<'a, 'b> {
    fn mapped(&self, f: FuncId) -> Option<(&'b MachineFunction, &'a Mapping)> {
        let status: &'a [Status<'b>] = self.status;
        match status.get(f.index()) {
            Some(Status::Mapped(m, b)) if self.failed[f.index()].is_none() => Some((m, b)),
            _ => None,
        }
    }

    fn fail(&mut self, f: FuncId, why: String) {
        self.failed[f.index()].get_or_insert(why);
    }

    /// Fetches instructions `from..to` of machine block `block` of `f`.
    fn fetch(&mut self, f: FuncId, block: usize, from: usize, to: usize) {
        let Some((m, _)) = self.mapped(f) else { return };
        let code = &m.code[block];
        let t = &mut self.totals[f.index()];
        t.accesses += (to - from) as u64;
        t.rep_fetches += code.reps.iter().filter(|&&r| (from..to).contains(&r)).count() as u64;
        if let Some(per) = &mut self.per_insn {
            for i in &code.insns[from..to] {
                *per.entry(i.addr).or_default() += 1;
            }
        }
        if let Some(cache) = &mut self.cache {
            for &i in &code.insns[from..to] {
                if cache.fetch(i) {
                    t.misses += 1;
                }
            }
        }
        let (Some(st), Some(Frame { act: Some(a), .. })) = (&mut self.statics, self.stack.last_mut()) else { return };
        if st.broken.is_some() {
            return;
        }
        if st.dangling {
            st.leave(|| "a thread stopped where the model cannot continue, and simulated code ran after it".into());
            return;
        }
        let Some(segs) = st.model.segments[a.proc.index()].as_ref() else { return };
        let mut err = None;
        segs.completed(block, from, to, |b| {
            if err.is_none() {
                err = st.run.block(a, b).err();
            }
        });
        if let Some(e) = err {
            st.leave(|| e.to_string());
        }
    }

    /// The activation of simulated function `g` in the static model, entered from `entered` (the call of the
    /// simulated caller's block that entered it, when it is a fresh entry) — and, for the check runs, whether
    /// `g` is a callback.
    fn activate(&mut self, g: FuncId, entered: Option<(usize, binary::CallInsn)>) -> Option<Activation> {
        let direct_to = |c: &binary::CallInsn| c.target.and_then(|t| self.direct.get(&t).copied().flatten());
        let direct = entered.filter(|(_, c)| direct_to(c) == Some(g.index()));
        if direct.is_none() {
            self.outside[g.index()] = true;
        }
        let caller = self.stack.last().and_then(|fr| fr.act);
        let st = self.statics.as_mut()?;
        if st.broken.is_some() {
            return None;
        }
        let Some(p) = st.model.proc_of[g.index()] else {
            st.leave(|| "a simulated function is not in the model".into());
            return None;
        };
        let r = match (direct, caller) {
            (Some((block, c)), Some(caller)) => {
                let segs = st.model.segments[caller.proc.index()].as_ref()?;
                st.run.call(&caller, segs.segment_of(block, c.index), p)
            }
            (Some(_), None) => {
                st.leave(|| "a simulated caller has no activation in the model".into());
                return None;
            }
            (None, _) => st.run.callback(p),
        };
        match r {
            Ok(a) => Some(a),
            Err(e) => {
                st.leave(|| e.to_string());
                None
            }
        }
    }

    /// The top activation returns.
    fn pop_frame(&mut self) {
        let Some(fr) = self.stack.pop() else { return };
        if let (Some(st), Some(a)) = (&mut self.statics, fr.act) {
            if !a.between_ups() {
                st.leave(|| "a function returned inside a unique path of the model".into());
            }
        }
    }

    /// A thread ends (or the next starts): what its activations left behind decides whether the model covers
    /// what runs next (from foreign code, which is where a new thread starts).
    fn thread_boundary(&mut self) {
        if let Some(st) = &mut self.statics {
            if let Some(a) = self.stack.iter().rev().find_map(|fr| fr.act) {
                if !a.between_ups() {
                    st.leave(|| "a thread stops inside a unique path (an abnormal transfer or lost records)".into());
                } else if !a.last_block().is_some_and(|b| st.model.foreign_call[a.proc.index()][b.index()]) {
                    st.dangling = true;
                }
            }
        }
        self.stack.clear();
    }

    /// The top activation leaves its current block for `target`: the rest of the block, then the added
    /// blocks the mapping proved the step runs through.
    fn step(&mut self, target: IrTarget) {
        let Some(fr) = self.stack.last() else { return };
        let (f, block, cursor) = (fr.func, fr.block, fr.cursor);
        let Some((m, map)) = self.mapped(f) else { return };
        if let IrTarget::Block(b) = target {
            if map.absorbed[block] == Some(b) {
                // Into the copy this machine block carries: control stays here, nothing fetched yet.
                if let Some(fr) = self.stack.last_mut() {
                    fr.ir_block = b;
                    fr.sites_done = 0;
                }
                return;
            }
        }
        let len = m.code[block].insns.len();
        let Some(&(_, from, to)) = map.steps[block].iter().find(|s| s.0 == target) else {
            self.fail(f, format!("machine block {} has no path to {target:?}", m.blocks[block].id));
            return;
        };
        let next = match target {
            IrTarget::Block(b) => map.machine[b as usize],
            IrTarget::Exit => None,
        };
        self.fetch(f, block, cursor, len);
        for &v in &map.via[from as usize..to as usize] {
            self.fetch(f, v, 0, m.code[v].insns.len());
        }
        if let (Some(fr), Some(n), IrTarget::Block(b)) = (self.stack.last_mut(), next, target) {
            fr.block = n;
            fr.cursor = 0;
            fr.in_call = None;
            fr.ir_block = b;
            fr.sites_done = 0;
        }
    }

    /// A traced callee `g` starts inside the top activation's current block: fetch up to the call
    /// instruction that entered it (checked).
    /// Returns the call (its machine block) when a simulated caller's call instruction entered `g` afresh.
    fn enter_from_caller(&mut self, g: FuncId) -> Option<(usize, binary::CallInsn)> {
        let fr = self.stack.last()?;
        let (f, block, cursor, in_call) = (fr.func, fr.block, fr.cursor, fr.in_call);
        if in_call.is_some() {
            return None; // another activation from the same call (a callback)
        }
        let running = self.running_call(fr);
        let (m, _) = self.mapped(f)?;
        let code = &m.code[block];
        let g_addr = self.address.get(g.index()).copied().flatten();
        let traced = |a: u64| self.address.contains(&Some(a));
        // Calls that may enter g: direct to g, indirect, or into untraced code (which may call back).
        let candidates: Vec<_> = code
            .calls
            .iter()
            .filter(|c| c.index >= cursor)
            .filter(|c| match c.target {
                Some(t) => Some(t) == g_addr || !traced(t),
                None => true,
            })
            .copied()
            .collect();
        let chosen = match (running, candidates.first()) {
            (Some(k), _) => candidates.iter().find(|c| c.index == k).copied(),
            (None, Some(c)) if c.target.is_some() && c.target == g_addr => Some(*c),
            (None, Some(c)) if candidates.len() == 1 => Some(*c),
            _ => None,
        };
        let Some(c) = chosen else {
            let why = if candidates.is_empty() {
                format!("a traced callee was entered but machine block {} has no call to it", m.blocks[block].id)
            } else {
                format!("machine block {}: which call entered a traced callee is ambiguous", m.blocks[block].id)
            };
            self.fail(f, why);
            return None;
        };
        self.fetch(f, block, cursor, c.index + 1);
        if let Some(fr) = self.stack.last_mut() {
            fr.cursor = c.index + 1;
            fr.in_call = Some(c.index);
        }
        Some((block, c))
    }
}

impl Simulator<'_, '_> {
    /// The call instruction running in frame `fr`'s machine block, when the block's calls are its IR block's
    /// call sites one for one (as many, in order: codegen keeps the order of calls): the one after the sites
    /// that have returned. Other blocks (a call codegen added or removed: a library call for an intrinsic, a
    /// call made an instruction) tell nothing this way.
    fn running_call(&self, fr: &Frame) -> Option<usize> {
        self.site_call(fr.func, fr.block, fr.ir_block, fr.sites_done)
    }

    /// The instruction index of call `n` of `f`'s machine block `block`, which runs IR block `ir_block`, when
    /// the block's calls are that IR block's call sites one for one.
    fn site_call(&self, f: FuncId, block: usize, ir_block: u32, n: u32) -> Option<usize> {
        let (m, _) = self.mapped(f)?;
        let calls = &m.code[block].calls;
        let sites = *self.ir_calls.get(f.index())?.get(ir_block as usize)?;
        (calls.len() == sites as usize).then(|| calls.get(n as usize).map(|c| c.index)).flatten()
    }
}

impl Simulator<'_, '_> {
    /// The process exited inside the top activation (`exit()` from a traced function): its current block ran up
    /// to the call that did not return. Counted when one call remains in the block, else the function is not
    /// simulated (which call exited is unknown).
    fn exited(&mut self) {
        let Some(fr) = self.stack.last() else { return };
        let (f, block, cursor) = (fr.func, fr.block, fr.cursor);
        if fr.in_call.is_some() {
            return;
        }
        let Some((m, _)) = self.mapped(f) else { return };
        let left: Vec<usize> = m.code[block].calls.iter().filter(|c| c.index >= cursor).map(|c| c.index).collect();
        match (self.running_call(fr), &left[..]) {
            (Some(k), _) if k >= cursor => self.fetch(f, block, cursor, k + 1),
            (None, [only]) => self.fetch(f, block, cursor, only + 1),
            _ => self.fail(f, format!("the process exited in machine block {} at an unknown call", m.blocks[block].id)),
        }
    }
}

impl StepSink for Simulator<'_, '_> {
    fn block(&mut self, f: FuncId, b: BlockId) {
        let real = self.real.get(f.index()).copied().unwrap_or(u32::MAX);
        if std::mem::take(&mut self.stepping) {
            if b.0 >= real {
                self.step(IrTarget::Exit);
                self.pop_frame();
                return;
            }
            if self.mapped(f).is_none() {
                self.totals[f.index()].blocks_not_simulated += 1;
                return;
            }
            let present = self.mapped(f).is_some_and(|(_, map)| map.machine[b.index()].is_some());
            if present {
                self.step(IrTarget::Block(b.0));
            }
            return;
        }
        // A new activation (its entry block).
        let entered = self.enter_from_caller(f);
        let entry = self.mapped(f).and_then(|(_, map)| map.machine[0]);
        if entry.is_none() {
            self.totals[f.index()].blocks_not_simulated += 1;
        }
        let act = if entry.is_some() { self.activate(f, entered) } else { None };
        self.stack.push(Frame {
            func: f,
            block: entry.unwrap_or(0),
            cursor: 0,
            in_call: None,
            ir_block: 0,
            sites_done: 0,
            act,
        });
        if b.0 >= real {
            self.pop_frame();
        }
    }

    fn edge(&mut self, _f: FuncId, _e: EdgeId) {
        self.stepping = true;
    }

    fn site_done(&mut self, _f: FuncId, _b: BlockId) {
        if let Some(fr) = self.stack.last_mut() {
            fr.in_call = None;
            fr.sites_done += 1;
        }
    }

    fn cut_to(&mut self, depth: usize, resume: Option<(BlockId, u32)>) {
        // The static model follows calls and returns only: what runs after a longjmp or an exception is
        // simulated fetch by fetch.
        if let Some(st) = &mut self.statics {
            st.leave(|| "a longjmp or an exception ended activations without their returns".into());
        }
        // Each activation dropped ran its block up to the call that did not return: one a traced callee was
        // entered from (fetched then) or the block's running call. So did the one a setjmp resumes, when that
        // call was its own (a longjmp within one activation).
        let first = if resume.is_some() { depth.saturating_sub(1) } else { depth };
        for i in first..self.stack.len() {
            let fr = &self.stack[i];
            if fr.in_call.is_some() || self.mapped(fr.func).is_none() {
                continue;
            }
            let (f, block, cursor) = (fr.func, fr.block, fr.cursor);
            match self.running_call(fr) {
                Some(k) if k >= cursor => self.fetch(f, block, cursor, k + 1),
                _ => self.fail(f, "left by a longjmp or an exception at a call the machine code does not tell".into()),
            }
        }
        self.stack.truncate(depth);
        let Some((b, call)) = resume else { return };
        let Some(fr) = self.stack.last() else { return };
        let f = fr.func;
        let Some((_, map)) = self.mapped(f) else { return };
        // A setjmp returned again: the activation goes on right after that call instruction of the machine
        // block of `b`, found when the block's calls are its call sites one for one.
        let at = map
            .machine
            .get(b.index())
            .copied()
            .flatten()
            .and_then(|mb| self.site_call(f, mb, b.0, call).map(|i| (mb, i + 1)));
        match at {
            Some((mb, cursor)) => {
                let fr = self.stack.last_mut().expect("checked above");
                fr.block = mb;
                fr.cursor = cursor;
                fr.in_call = None;
                fr.ir_block = b.0;
                fr.sites_done = call + 1;
            }
            None => self
                .fail(f, format!("a setjmp call of block {} returned again where the machine code does not tell", b.0)),
        }
    }
}

#[derive(Serialize)]
struct JsonCache {
    size: u64,
    assoc: u32,
    line: u32,
}

#[derive(Serialize)]
struct JsonFunction {
    /// The linkage name (the binary's symbol), as the other commands' `name`.
    name: String,
    /// The source-level name (C++: without scope or parameters, so overloads and members of several classes
    /// share it), as the other commands' `display_name`.
    display_name: String,
    simulated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    accesses: u64,
    misses: u64,
    /// Accesses per static category (all `conflict` when the classification was not applied).
    categories: JsonCategories,
    blocks_not_simulated: u64,
    rep_fetches: u64,
}

/// Accesses per category of the static cache simulation.
#[derive(Serialize, Default, Clone, Copy)]
struct JsonCategories {
    always_hit: u64,
    always_miss: u64,
    first_miss: u64,
    conflict: u64,
}

impl From<[u64; 4]> for JsonCategories {
    fn from(c: [u64; 4]) -> JsonCategories {
        JsonCategories { always_hit: c[0], always_miss: c[1], first_miss: c[2], conflict: c[3] }
    }
}

impl JsonCategories {
    fn add(&mut self, o: &JsonCategories) {
        self.always_hit += o.always_hit;
        self.always_miss += o.always_miss;
        self.first_miss += o.first_miss;
        self.conflict += o.conflict;
    }
    /// Accesses charged by category without simulating them.
    fn classified(&self) -> u64 {
        self.always_hit + self.always_miss + self.first_miss
    }
}

/// The static classification: whether it drove the counts, and its size.
#[derive(Serialize, Default)]
struct JsonClassification {
    /// The counts come from the categories (conflicts simulated); otherwise every fetch was simulated.
    applied: bool,
    /// Why it was not applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// `--verify`: both methods ran and agree.
    #[serde(skip_serializing_if = "Option::is_none")]
    verified: Option<bool>,
    instances: usize,
    ups: usize,
    lines: usize,
    tracked_sets: usize,
    first_miss_lines: usize,
}

#[derive(Serialize)]
struct JsonTotal {
    accesses: u64,
    misses: u64,
    categories: JsonCategories,
    /// Accesses charged by category without simulating them (always-hit, always-miss, first-miss).
    classified_statically: u64,
    functions_simulated: usize,
    functions_not_simulated: usize,
    blocks_not_simulated: u64,
    /// Threads whose trace stops early (an abnormal transfer — signal handler, longjmp, exception — or lost
    /// records): the counts cover what they ran up to there only.
    incomplete_threads: usize,
    /// Threads traced in windows only (a flight recorder's ring, regions): not simulated — a window starts
    /// inside activations whose fetches before it are unknown.
    windowed_threads: usize,
    /// Processes in the trace (each simulated with its own cold cache would differ: they share one here).
    processes: usize,
}

/// The mapping over every traced function of the trace (executed or not), and its blocks.
#[derive(Serialize, Default)]
struct JsonMapping {
    functions: usize,
    /// Verified with the ids the pass predicted by running codegen's IR passes (`predicted`), else with
    /// machine id = IR block index (`identity`).
    predicted: usize,
    identity: usize,
    /// Verified (by identity or by the unique order-preserving alignment).
    verified: usize,
    blocks: usize,
    verified_blocks: usize,
    /// Refused functions by kind of reason.
    refused: std::collections::BTreeMap<&'static str, usize>,
    /// Verified functions whose run-time call check failed.
    failed_at_run_time: usize,
}

#[derive(Serialize)]
struct JsonReport {
    cache: JsonCache,
    mapping: JsonMapping,
    classification: JsonClassification,
    functions: Vec<JsonFunction>,
    total: JsonTotal,
}

/// The simulator fed the first `limit` blocks of a walk only (EXIT blocks included, as
/// [`crate::trace::certain_blocks`] counts them): those that certainly ran.
struct UpTo<'s, 'a, 'b> {
    sim: &'s mut Simulator<'a, 'b>,
    limit: u64,
    emitted: u64,
}

impl StepSink for UpTo<'_, '_, '_> {
    fn block(&mut self, f: FuncId, b: BlockId) {
        self.emitted += 1;
        if self.emitted <= self.limit {
            self.sim.block(f, b);
        }
    }
    fn edge(&mut self, f: FuncId, e: EdgeId) {
        if self.emitted < self.limit {
            self.sim.edge(f, e);
        }
    }
    fn site_done(&mut self, f: FuncId, b: BlockId) {
        if self.emitted < self.limit {
            self.sim.site_done(f, b);
        }
    }
    fn cut_to(&mut self, depth: usize, resume: Option<(BlockId, u32)>) {
        if self.emitted < self.limit {
            self.sim.cut_to(depth, resume);
        }
    }
}

/// Runs the whole trace through `sim`; returns how many threads end before their trace does (an abnormal
/// transfer or lost records): what ran after that point is not counted.
fn run_threads(
    file: &TraceFile,
    program: &pathprof_core::tracing::Program,
    sim: &mut Simulator<'_, '_>,
) -> Result<usize> {
    let mut incomplete = 0;
    for t in &file.threads {
        if t.window.is_some() {
            // A flight recorder's or a region's window starts inside the run, with activations the simulator
            // never saw enter (reported as `windowed_threads`).
            continue;
        }
        let bits = t.abnormal_at.unwrap_or(t.bits).min(t.bits);
        let mut reader = t.reader(bits);
        sim.thread_boundary();
        sim.stepping = false;
        // Where the stream ends before the thread did, only the blocks that certainly ran are fetched.
        let limit = crate::trace::certain_blocks(program, &ResumePoint::default(), t).map_or(u64::MAX, |c| c.certain);
        match regenerate(program, &mut reader, &mut UpTo { sim: &mut *sim, limit, emitted: 0 }, u64::MAX) {
            Ok(_) => {}
            // A thread cut short (exit inside a function, a user context never resumed) or an abnormal transfer:
            // the blocks before are exact.
            Err(pathprof_core::tracing::RegenError::Stream { .. }) => {
                if (t.at_exit || t.suspended) && t.abnormal_at.is_none() && !t.gap && !t.truncated {
                    sim.exited();
                } else {
                    incomplete += 1;
                }
            }
            Err(e) => bail!("{}: corrupt trace: {e}", t.label()),
        }
    }
    sim.thread_boundary();
    Ok(incomplete)
}

/// Runs `pathprof icache`.
pub fn run(args: &Args) -> Result<()> {
    let geometry = Geometry::parse(&args.i1).map_err(|_| {
        anyhow::anyhow!("invalid --I1 '{}' (expected SIZE,ASSOC,LINE with a power-of-two LINE)", args.i1)
    })?;
    let (file, warnings) = crate::files::read_trace(&args.file)?;
    crate::files::with_warnings(run_file(args, geometry, &file), warnings)
}

fn run_file(args: &Args, geometry: Geometry, file: &TraceFile) -> Result<()> {
    let what = || format!("reading {}", args.file.display());
    if file.modules.values().any(|m| !m.optimizer_last) {
        bail!("{}: recorded by trace mode, not icache mode (build with --pathprof-mode=icache)", args.file.display());
    }
    if file.images.len() > 1 {
        // Each copy's streams hold its own image's functions only; how they interleaved is not recorded.
        eprintln!(
            "pathprof: warning: {}: {} images with their own runtime copies traced; their fetches are simulated \
             one stream after the other, not interleaved as they ran",
            args.file.display(),
            file.images.len()
        );
    }
    let (program, owner) = file.program().with_context(what)?;
    let bin = Binary::read(&args.binary)?;
    if std::env::var_os("PATHPROF_ICACHE_DUMP").is_some() {
        for (name, f) in &bin.functions {
            if let Ok(f) = f {
                for (b, c) in f.blocks.iter().zip(&f.code) {
                    eprintln!(
                        "{name} id {} at {:#x}: {} insns, succs {:?} {:x?}",
                        b.id,
                        c.insns[0].addr,
                        c.insns.len(),
                        b.succs,
                        c.insns.iter().map(|i| i.addr).collect::<Vec<_>>()
                    );
                }
            }
        }
    }
    let mut status = Vec::with_capacity(owner.len());
    let mut address = Vec::with_capacity(owner.len());
    let mut names = Vec::with_capacity(owner.len());
    let mut symbols = Vec::with_capacity(owner.len());
    let mut real = Vec::with_capacity(owner.len());
    let mut ir_calls: Vec<&[u32]> = Vec::with_capacity(owner.len());
    let mut identity = 0;
    let mut by_prediction = 0;
    for o in &owner {
        real.push(o.map_or(1, |(base, i)| file.modules[&base].module.functions[i].cfg.num_blocks() as u32));
        ir_calls.push(o.map_or(&[][..], |(base, i)| &file.modules[&base].calls[i][..]));
        let Some((base, i)) = *o else {
            status.push(Status::Refused("none", "no such function".into()));
            address.push(None);
            names.push(String::new());
            symbols.push(String::new());
            continue;
        };
        let meta = &file.modules[&base].module.functions[i];
        names.push(if meta.display_name.is_empty() { meta.name.clone() } else { meta.display_name.clone() });
        symbols.push(meta.name.clone());
        match bin.functions.get(&meta.name) {
            None => {
                status.push(Status::Refused("not-in-binary", "not in the binary's block map".into()));
                address.push(None);
            }
            Some(Err(why)) => {
                status.push(Status::Refused("binary", why.clone()));
                address.push(None);
            }
            Some(Ok(m)) => {
                address.push(Some(m.address));
                // The pass's prediction of the ids first (it ran codegen's IR passes), then machine id = IR
                // block, then the search for the one order-preserving alignment.
                let isel = &file.modules[&base].isel[i];
                let predicted =
                    (!isel.is_empty()).then(|| map_predicted_blocks(&meta.cfg, &m.blocks, &isel.ids, &isel.split));
                status.push(match predicted {
                    Some(Ok(map)) => {
                        by_prediction += 1;
                        Status::Mapped(m, Mapping::new(map, m.blocks.len()))
                    }
                    _ => match map_blocks(&meta.cfg, &m.blocks) {
                        Ok(map) => {
                            identity += 1;
                            Status::Mapped(m, Mapping::new(map, m.blocks.len()))
                        }
                        Err(why) => match align_blocks(&meta.cfg, &m.blocks, ALIGN_BUDGET) {
                            Ok(map) => Status::Mapped(m, Mapping::new(map, m.blocks.len())),
                            Err(e) => Status::Refused(
                                why.kind(),
                                match predicted {
                                    Some(Err(p)) => format!("with the predicted ids, {p}; {why}; {e}"),
                                    _ => format!("{why}; {e}"),
                                },
                            ),
                        },
                    },
                });
            }
        }
    }
    let direct = statics::direct_targets(&address);
    let times = std::env::var_os("PATHPROF_ICACHE_TIMES").is_some();
    let clock = std::time::Instant::now();
    let new_sim = |failed: &[Option<String>], cache, statics| Simulator {
        status: &status,
        real: &real,
        ir_calls: &ir_calls,
        address: &address,
        cache,
        totals: vec![Totals::default(); owner.len()],
        stack: Vec::new(),
        stepping: false,
        failed: failed.to_vec(),
        per_insn: None,
        direct: &direct,
        outside: vec![false; owner.len()],
        statics,
    };
    // First the run-time checks alone, until no function fails anew; then the simulation.
    let mut failed = vec![None; owner.len()];
    let outside = loop {
        let mut sim = new_sim(&failed, None, None);
        run_threads(file, &program, &mut sim)?;
        if sim.failed == failed {
            break sim.outside;
        }
        failed = sim.failed;
    };
    if times {
        eprintln!("icache: run-time checks {:.2} s", clock.elapsed().as_secs_f64());
    }

    // The static classification of the simulated functions, and the run it drives.
    let simulated: Vec<Option<&MachineFunction>> = status
        .iter()
        .zip(&failed)
        .map(|(s, why)| match s {
            Status::Mapped(m, _) if why.is_none() => Some(*m),
            _ => None,
        })
        .collect();
    let direct_to = |t: Option<u64>| t.and_then(|t| direct.get(&t).copied().flatten());
    let model = (!args.full).then(|| statics::build(&simulated, &names, &direct_to, &outside, &geometry));
    if times {
        eprintln!("icache: classification done at {:.2} s", clock.elapsed().as_secs_f64());
    }
    let mut classification = JsonClassification::default();
    let mut by_statics: Option<(Vec<Totals>, Vec<[u64; 4]>, usize)> = None;
    if let Some(model) = &model {
        let plan = &model.plan;
        classification.instances = plan.instances().instances().len();
        classification.ups = plan.graph.uppas.iter().map(|u| u.paths().len()).sum();
        classification.lines = plan.graph.lines.len();
        classification.tracked_sets = plan.tracked_sets;
        classification.first_miss_lines = plan.first_miss_lines;
        let run = StaticRun::new(plan);
        let mut sim = new_sim(&failed, None, Some(Statics { model, run, broken: None, dangling: false }));
        let incomplete = run_threads(file, &program, &mut sim)?;
        let st = sim.statics.take().expect("set above");
        let (per, _) = st.run.report();
        let mut broken = st.broken;
        let mut totals = sim.totals;
        let mut categories = vec![[0u64; 4]; owner.len()];
        for (p, c) in per.iter().enumerate() {
            let Some(f) = model.func_of[p] else { continue };
            if c.accesses != totals[f].accesses && broken.is_none() {
                broken = Some(format!(
                    "internal: {} counts {} fetches, the replay {}",
                    names[f], c.accesses, totals[f].accesses
                ));
            }
            totals[f].misses = c.misses;
            categories[f] = c.categories;
        }
        match broken {
            None => {
                classification.applied = true;
                by_statics = Some((totals, categories, incomplete));
            }
            Some(why) => classification.reason = Some(why),
        }
    } else {
        classification.reason = Some("--full: every fetch simulated".into());
    }
    if times {
        eprintln!("icache: static-driven run done at {:.2} s", clock.elapsed().as_secs_f64());
    }
    let full = if by_statics.is_none() || args.verify {
        let mut sim = new_sim(&failed, Some(LruCache::new(geometry)), None);
        sim.per_insn = std::env::var_os("PATHPROF_ICACHE_DUMP").map(|_| Default::default());
        let incomplete = run_threads(file, &program, &mut sim)?;
        if let Some(per) = &sim.per_insn {
            for (a, n) in per {
                eprintln!("fetch {a:#x} {n}");
            }
        }
        if times {
            eprintln!("icache: full simulation done at {:.2} s", clock.elapsed().as_secs_f64());
        }
        Some((sim.totals, incomplete))
    } else {
        None
    };
    if let (true, Some((st, _, _)), Some((fu, _))) = (args.verify, &by_statics, &full) {
        for (f, (a, b)) in st.iter().zip(fu).enumerate() {
            if (a.accesses, a.misses) != (b.accesses, b.misses) {
                bail!(
                    "--verify: {}: the static-driven run counts {} accesses and {} misses, the full simulation {} and {}",
                    names[f],
                    a.accesses,
                    a.misses,
                    b.accesses,
                    b.misses
                );
            }
        }
        classification.verified = Some(true);
    }
    let (totals, categories, incomplete) = match (by_statics, full) {
        (Some(x), _) => x,
        (None, Some((totals, incomplete))) => {
            let categories = totals.iter().map(|t| [0, 0, 0, t.accesses]).collect();
            (totals, categories, incomplete)
        }
        (None, None) => unreachable!("the full simulation runs when the static one does not"),
    };

    let mut functions = Vec::new();
    for (i, t) in totals.iter().enumerate() {
        if owner[i].is_none() || (t.accesses == 0 && t.blocks_not_simulated == 0) {
            continue;
        }
        let reason = match (&status[i], &failed[i]) {
            (Status::Refused(_, why), _) => Some(why.clone()),
            (_, Some(why)) => Some(why.clone()),
            _ => None,
        };
        functions.push(JsonFunction {
            name: symbols[i].clone(),
            display_name: names[i].clone(),
            simulated: reason.is_none(),
            reason,
            accesses: t.accesses,
            misses: t.misses,
            blocks_not_simulated: t.blocks_not_simulated,
            rep_fetches: t.rep_fetches,
            categories: JsonCategories::from(categories[i]),
        });
    }
    functions.sort_by(|a, b| b.accesses.cmp(&a.accesses).then(a.name.cmp(&b.name)));
    let simulated: Vec<_> = functions.iter().filter(|f| f.simulated).collect();
    let mut cats = JsonCategories::default();
    for f in &simulated {
        cats.add(&f.categories);
    }
    let total = JsonTotal {
        accesses: simulated.iter().map(|f| f.accesses).sum(),
        misses: simulated.iter().map(|f| f.misses).sum(),
        categories: cats,
        classified_statically: cats.classified(),
        functions_simulated: simulated.len(),
        functions_not_simulated: functions.len() - simulated.len(),
        blocks_not_simulated: functions.iter().map(|f| f.blocks_not_simulated).sum(),
        incomplete_threads: incomplete,
        windowed_threads: file.threads.iter().filter(|t| t.window.is_some()).count(),
        processes: file.threads.iter().map(|t| t.pid).collect::<std::collections::BTreeSet<_>>().len(),
    };
    let mut mapping = JsonMapping { predicted: by_prediction, identity, ..JsonMapping::default() };
    for (i, st) in status.iter().enumerate() {
        if owner[i].is_none() {
            continue;
        }
        mapping.functions += 1;
        mapping.blocks += real[i] as usize;
        match st {
            Status::Mapped(..) => {
                mapping.verified += 1;
                mapping.verified_blocks += real[i] as usize;
                mapping.failed_at_run_time += usize::from(failed[i].is_some());
            }
            Status::Refused(kind, _) => *mapping.refused.entry(kind).or_default() += 1,
        }
    }
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.json {
        let cache = JsonCache { size: geometry.size, assoc: geometry.assoc, line: geometry.line };
        serde_json::to_writer(&mut out, &JsonReport { cache, mapping, classification, functions, total })?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "I1 cache {},{},{} (LRU, cold start; only the simulated functions' fetches)",
            geometry.size, geometry.assoc, geometry.line
        )?;
        writeln!(
            out,
            "{:>14} {:>12} {:>8} {:>7} {:>7} {:>7} {:>7}  function",
            "accesses", "misses", "miss%", "a-hit", "a-miss", "f-miss", "confl"
        )?;
        let pct = |n: u64, d: u64| if d == 0 { 0.0 } else { 100.0 * n as f64 / d as f64 };
        // As `text::function_header`: the source name, and the symbol when it differs (C++ overloads and
        // members of several classes share a source name).
        let shown = |f: &JsonFunction| {
            if f.display_name == f.name || f.name.is_empty() {
                f.display_name.clone()
            } else {
                format!("{} [{}]", f.display_name, f.name)
            }
        };
        for f in &functions {
            if f.simulated {
                let c = &f.categories;
                writeln!(
                    out,
                    "{:>14} {:>12} {:>7.2}% {:>6.1}% {:>6.1}% {:>6.1}% {:>6.1}%  {}",
                    f.accesses,
                    f.misses,
                    pct(f.misses, f.accesses),
                    pct(c.always_hit, f.accesses),
                    pct(c.always_miss, f.accesses),
                    pct(c.first_miss, f.accesses),
                    pct(c.conflict, f.accesses),
                    shown(f)
                )?;
            } else {
                writeln!(
                    out,
                    "{:>14} {:>12} {:>8} {:>31}  {} (not simulated: {}; {} blocks ran)",
                    "-",
                    "-",
                    "",
                    "",
                    shown(f),
                    f.reason.as_deref().unwrap_or(""),
                    f.blocks_not_simulated
                )?;
            }
        }
        if total.incomplete_threads > 0 {
            writeln!(
                out,
                "warning: {} threads stop being traced early (an abnormal transfer or lost records): what they ran \
                 after that is not counted",
                total.incomplete_threads
            )?;
        }
        if total.windowed_threads > 0 {
            writeln!(
                out,
                "warning: {} threads were traced in windows only (PATHPROF_TRACE_RING or regions): not simulated, \
                 their fetches are in no count",
                total.windowed_threads
            )?;
        }
        if total.processes > 1 {
            writeln!(
                out,
                "note: {} processes: their fetches are simulated one after another in one cache",
                total.processes
            )?;
        }
        let rate = if total.accesses == 0 { 0.0 } else { 100.0 * total.misses as f64 / total.accesses as f64 };
        writeln!(
            out,
            "{:>14} {:>12} {:>7.2}%  total of {} simulated functions ({} not simulated, {} of their blocks ran)",
            total.accesses,
            total.misses,
            rate,
            total.functions_simulated,
            total.functions_not_simulated,
            total.blocks_not_simulated
        )?;
        if classification.applied {
            writeln!(
                out,
                "classified statically: {} of {} accesses ({:.2}%); only the {} conflict accesses were simulated{}",
                total.classified_statically,
                total.accesses,
                pct(total.classified_statically, total.accesses),
                total.categories.conflict,
                if classification.verified == Some(true) { " (verified against a full simulation)" } else { "" }
            )?;
        } else {
            writeln!(
                out,
                "static classification not applied ({}): every access was simulated",
                classification.reason.as_deref().unwrap_or("")
            )?;
        }
    }
    out.flush()?;
    Ok(())
}
