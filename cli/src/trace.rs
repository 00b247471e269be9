//! `pathprof trace FILE [--last N] [--summary] [--json]`: regenerates the exact block sequence of every thread
//! of a trace-mode run (`pathprof_core::tracing::regenerate` over the file's bit streams).
//!
//! Text: per thread a header line, then one line per block `function block file:line[,line…]` (callees' blocks
//! between their caller's), then the thread's status: complete, cut short (the process exited or the thread
//! ended inside a function: the blocks up to there are exact), or incomplete (an abnormal transfer — a signal
//! handler, `longjmp`, an exception — or missing records: the blocks before it are exact, nothing after it is
//! shown). `--last N`: only each thread's last N blocks. `--summary`: per function its entries, block and edge
//! counts derived from the trace, summed over threads. JSON:
//! `{"threads":[{"pid","thread","status","blocks","steps":[{"function","block","lines"}]}]}`, and with
//! `--summary` `{"threads":[…without steps…],"functions":[{"function","module","entries","blocks":[{"id","count"}],
//! "edges":[{"from","to","count"}]}]}` (only traced edges: branches and returns, `to` = the number of blocks for
//! EXIT). A corrupt trace is an error (exit 2).

use anyhow::{bail, Context, Result};
use pathprof_core::tracing::{regenerate, BitReader, BitTrace, FuncId, RegenError, StepSink, StreamError};
use pathprof_core::{BlockId, EdgeId};
use pathprof_format::meta::FunctionMeta;
use pathprof_format::trace::{FunctionRef, ThreadTrace, TraceFile};
use serde::Serialize;
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
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// The functions of the trace by id.
struct Names<'a> {
    funcs: Vec<Option<(&'a str, &'a FunctionMeta)>>,
}

impl<'a> Names<'a> {
    fn new(file: &'a TraceFile, owner: &[Option<FunctionRef>]) -> Names<'a> {
        let funcs = owner
            .iter()
            .map(|o| {
                o.map(|(base, i)| {
                    let m = &file.modules[&base];
                    (m.module.module_name.as_str(), &m.module.functions[i])
                })
            })
            .collect();
        Names { funcs }
    }

    fn meta(&self, f: FuncId) -> Option<&'a FunctionMeta> {
        self.funcs.get(f.index()).copied().flatten().map(|(_, m)| m)
    }

    fn name(&self, f: FuncId) -> String {
        match self.meta(f) {
            Some(m) if !m.display_name.is_empty() => m.display_name.clone(),
            Some(m) => m.name.clone(),
            None => format!("<function {}>", f.0),
        }
    }
}

/// One regenerated block.
#[derive(Clone, Copy)]
struct Step {
    func: FuncId,
    block: BlockId,
}

/// Collects steps (all, or the last N) and counts.
struct Collector {
    last: Option<usize>,
    steps: VecDeque<Step>,
    counts: Option<Counts>,
    real_blocks: Vec<u32>,
    blocks: u64,
}

/// Per function: entries, block counts, edge counts.
#[derive(Default, Clone)]
struct Counts {
    blocks: Vec<Vec<u64>>,
    edges: Vec<Vec<u64>>,
}

impl StepSink for Collector {
    #[inline]
    fn block(&mut self, f: FuncId, b: BlockId) {
        if let Some(c) = &mut self.counts {
            c.blocks[f.index()][b.index()] += 1;
        }
        if b.0 >= self.real_blocks[f.index()] {
            return; // EXIT
        }
        self.blocks += 1;
        if self.counts.is_some() {
            return;
        }
        if self.last == Some(self.steps.len()) && self.steps.pop_front().is_none() {
            return;
        }
        self.steps.push_back(Step { func: f, block: b });
    }
    #[inline]
    fn edge(&mut self, f: FuncId, e: EdgeId) {
        if let Some(c) = &mut self.counts {
            c.edges[f.index()][e.index()] += 1;
        }
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
    status: String,
    blocks: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    steps: Option<Vec<JsonStep>>,
}

#[derive(Serialize)]
struct JsonCount {
    id: u32,
    count: u64,
}

#[derive(Serialize)]
struct JsonEdge {
    from: u32,
    to: u32,
    count: u64,
}

#[derive(Serialize)]
struct JsonFunction {
    function: String,
    module: String,
    entries: u64,
    blocks: Vec<JsonCount>,
    edges: Vec<JsonEdge>,
}

#[derive(Serialize)]
struct JsonReport {
    threads: Vec<JsonThread>,
    #[serde(skip_serializing_if = "Option::is_none")]
    functions: Option<Vec<JsonFunction>>,
}

/// Runs `pathprof trace`.
pub fn run(args: &Args) -> Result<()> {
    let what = || format!("reading {}", args.file.display());
    let bytes = std::fs::read(&args.file).with_context(what)?;
    let file = TraceFile::parse(&bytes).with_context(what)?;
    let (program, owner) = file.program().with_context(what)?;
    let names = Names::new(&file, &owner);
    let real_blocks: Vec<u32> =
        (0..owner.len()).map(|i| names.meta(FuncId(i as u32)).map_or(1, |m| m.cfg.num_blocks() as u32)).collect();
    let mut totals = args.summary.then(|| Counts {
        blocks: (0..owner.len())
            .map(|i| vec![0; names.meta(FuncId(i as u32)).map_or(2, |m| m.cfg.num_vertices())])
            .collect(),
        edges: (0..owner.len())
            .map(|i| vec![0; names.meta(FuncId(i as u32)).map_or(1, |m| m.cfg.num_edges())])
            .collect(),
    });
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut json_threads = Vec::new();
    for t in &file.threads {
        let mut c = Collector {
            last: args.last,
            steps: VecDeque::new(),
            counts: totals.take(),
            real_blocks: real_blocks.clone(),
            blocks: 0,
        };
        let status = regenerate_thread(&program, t, &names, &mut c).with_context(what)?;
        totals = c.counts.take();
        if args.json {
            let steps = (!args.summary).then(|| c.steps.iter().map(|s| json_step(&names, *s)).collect());
            json_threads.push(JsonThread { pid: t.pid, thread: t.thread, status, blocks: c.blocks, steps });
        } else {
            writeln!(out, "thread {} (process {}): {} blocks, {status}", t.thread, t.pid, c.blocks)?;
            for s in &c.steps {
                let m = names.meta(s.func);
                let lines = m.and_then(|m| m.blocks.get(s.block.index())).map(|b| &b.lines[..]).unwrap_or(&[]);
                let file = m.map_or("", |m| m.file.as_str());
                let lines: Vec<String> = lines.iter().map(u32::to_string).collect();
                writeln!(out, "  {} {} {}:{}", names.name(s.func), s.block.0, file, lines.join(","))?;
            }
        }
    }
    let functions = totals.map(|c| summary(&names, &c));
    if args.json {
        serde_json::to_writer(&mut out, &JsonReport { threads: json_threads, functions })?;
        writeln!(out)?;
    } else if let Some(functions) = functions {
        for f in functions {
            writeln!(out, "function {} ({}): {} entries", f.function, f.module, f.entries)?;
            for b in &f.blocks {
                writeln!(out, "  block {}: {}", b.id, b.count)?;
            }
            for e in &f.edges {
                writeln!(out, "  edge {} -> {}: {}", e.from, e.to, e.count)?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

fn json_step(names: &Names<'_>, s: Step) -> JsonStep {
    let lines =
        names.meta(s.func).and_then(|m| m.blocks.get(s.block.index())).map(|b| b.lines.clone()).unwrap_or_default();
    JsonStep { function: names.name(s.func), block: s.block.0, lines }
}

/// Per executed function: entries (executions of its entry block), block and traced-edge counts.
fn summary(names: &Names<'_>, c: &Counts) -> Vec<JsonFunction> {
    let mut out = Vec::new();
    for (i, blocks) in c.blocks.iter().enumerate() {
        let f = FuncId(i as u32);
        let Some(m) = names.meta(f) else { continue };
        if blocks.iter().all(|&n| n == 0) {
            continue;
        }
        let module = names.funcs[i].map_or("", |(module, _)| module).to_string();
        let edges = m
            .cfg
            .edge_ids()
            .filter(|&e| {
                matches!(m.cfg.edge(e).kind, pathprof_core::EdgeKind::Branch { .. } | pathprof_core::EdgeKind::Return)
            })
            .map(|e| JsonEdge { from: m.cfg.edge(e).from.0, to: m.cfg.edge(e).to.0, count: c.edges[i][e.index()] })
            .collect();
        out.push(JsonFunction {
            function: names.name(f),
            module,
            entries: blocks[0],
            blocks: (0..m.cfg.num_blocks()).map(|b| JsonCount { id: b as u32, count: blocks[b] }).collect(),
            edges,
        });
    }
    out
}

/// Regenerates one thread into `c`; returns its status, or an error for a corrupt trace.
fn regenerate_thread(
    program: &pathprof_core::tracing::Program,
    t: &ThreadTrace,
    names: &Names<'_>,
    c: &mut Collector,
) -> Result<String> {
    let bits = t.abnormal_at.unwrap_or(t.bits).min(t.bits);
    let trace = BitTrace { bytes: t.bytes.clone(), bits };
    let mut reader = BitReader::new(&trace);
    let thread = format!("thread {} of process {}", t.thread, t.pid);
    match regenerate(program, &mut reader, c, u64::MAX) {
        Ok(_) if reader.remaining() > 0 => bail!("{thread}: corrupt trace ({} bits after the end)", reader.remaining()),
        Ok(_) => Ok("complete".into()),
        Err(RegenError::Stream { error: StreamError::Ended, func, block }) => {
            let at = match (func, block) {
                (Some(f), Some(b)) => format!(" inside {} at block {}", names.name(f), b.0),
                _ => String::new(),
            };
            Ok(if t.abnormal_at.is_some() {
                format!("incomplete: an abnormal transfer (signal handler, longjmp or exception){at}; nothing after it is shown")
            } else if t.gap {
                format!("incomplete: records are missing (the process was killed, or a fork child){at}")
            } else if t.at_exit {
                format!("cut short: the process exited{at}")
            } else {
                format!("cut short: the thread ended{at}")
            })
        }
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
