//! `pathprof trace --bits FILE`: where a trace's bits go. Bit tracing spends its bits on branch decisions
//! (witnesses), on call markers (an `Enter` — one bit at a fresh direct call site, otherwise a flag and a
//! function id: 20 bits, or a 6-bit slot of the entry cache — and a `Done` per call site) and on resync and
//! unwind markers. Which of these dominates
//! decides what would make a program's trace smaller, so the breakdown names the callees whose entries carry
//! full ids and the predicates whose witnesses cost the most.
//!
//! Counted while the trace is regenerated (every bit is read exactly once, so the categories sum to the bits
//! read). Text, or with `--json`: `{"bits":N,"branches":N,"categories":[{"kind","count","bits"}],
//! "entries":[{"function","count","bits"}],"predicates":[{"function","block","count","bits"}]}`.

use super::{Flat, Names, Tally};
use anyhow::{bail, Context, Result};
use pathprof_core::tracing::{
    Abandon, BitReader, DecisionSource, FuncId, RegenError, ResumePoint, Resync, StreamError, Unwind,
};
use pathprof_core::BlockId;
use pathprof_format::trace::{FunctionRef, TraceFile};
use pathprof_format::trace_layout::{ABANDON_ID, ENTRY_CACHE_BITS, RESYNC_ID, UNWIND_ID};
use serde::Serialize;
use std::collections::HashMap;
use std::io::Write;

/// The kinds of bits, in report order.
const KINDS: [&str; 9] = [
    "witness (branch decision)",
    "enter at a fresh direct call site (1 bit)",
    "enter with a cached id",
    "enter with a function id",
    "done",
    "done at a fresh direct call site",
    "resync marker (longjmp)",
    "unwind marker (exception)",
    "abandon marker (exception or longjmp caught in untraced code)",
];
const WITNESS: usize = 0;
const ENTER_ANNOUNCED: usize = 1;
const ENTER_CACHED: usize = 2;
const ENTER_ID: usize = 3;
const DONE: usize = 4;
const DONE_ANNOUNCED: usize = 5;
const RESYNC: usize = 6;
const UNWIND: usize = 7;
const ABANDON: usize = 8;

/// Bits and counts per kind, per callee entered with a full id, per predicate.
#[derive(Default)]
struct Meter {
    kinds: [(u64, u64); KINDS.len()],
    /// Per callee: entries with a full id, their bits.
    entries: HashMap<FuncId, (u64, u64)>,
    /// Per (function, block): witnesses, their bits.
    predicates: HashMap<(FuncId, BlockId), (u64, u64)>,
}

impl Meter {
    fn add(&mut self, kind: usize, bits: u64) {
        let k = &mut self.kinds[kind];
        k.0 += 1;
        k.1 += bits;
    }
}

/// The bit reader, metered.
struct Metered<'a, 'm> {
    reader: BitReader<'a>,
    meter: &'m mut Meter,
}

impl Metered<'_, '_> {
    fn measure<T>(&mut self, read: impl FnOnce(&mut BitReader<'_>) -> T) -> (T, u64) {
        let before = self.reader.remaining();
        let value = read(&mut self.reader);
        (value, before - self.reader.remaining())
    }
}

impl DecisionSource for Metered<'_, '_> {
    fn witness(&mut self, f: FuncId, v: BlockId, width: u8) -> Result<u32, StreamError> {
        let (w, bits) = self.measure(|r| r.witness(f, v, width));
        self.meter.add(WITNESS, bits);
        let p = self.meter.predicates.entry((f, v)).or_default();
        p.0 += 1;
        p.1 += bits;
        w
    }
    fn activation(&mut self, announced: Option<FuncId>, func_bits: u8) -> Result<Option<FuncId>, StreamError> {
        let (a, bits) = self.measure(|r| r.activation(announced, func_bits));
        let kind = match (&a, announced) {
            (Ok(Some(f)), _) if f.0 == RESYNC_ID => RESYNC,
            (Ok(Some(f)), _) if f.0 == UNWIND_ID => UNWIND,
            (Ok(Some(f)), _) if f.0 == ABANDON_ID => ABANDON,
            (Ok(Some(f)), Some(g)) if *f == g => ENTER_ANNOUNCED,
            // A prefix (`1`, or `01` at a fresh direct call site), the cache's hit flag and a slot.
            (Ok(Some(_)), _) if bits <= 3 + u64::from(ENTRY_CACHE_BITS) => ENTER_CACHED,
            (Ok(Some(_)), _) => ENTER_ID,
            (_, Some(_)) => DONE_ANNOUNCED,
            _ => DONE,
        };
        self.meter.add(kind, bits);
        if let (Ok(Some(f)), ENTER_ID | ENTER_CACHED) = (&a, kind) {
            let e = self.meter.entries.entry(*f).or_default();
            e.0 += 1;
            e.1 += bits;
        }
        a
    }
    fn resync(&mut self, func_bits: u8) -> Result<Resync, StreamError> {
        let (r, bits) = self.measure(|r| r.resync(func_bits));
        self.meter.kinds[RESYNC].1 += bits;
        r
    }
    fn unwind(&mut self, func_bits: u8) -> Result<Unwind, StreamError> {
        let (u, bits) = self.measure(|r| r.unwind(func_bits));
        self.meter.kinds[UNWIND].1 += bits;
        u
    }
    fn abandon(&mut self) -> Result<Abandon, StreamError> {
        let (d, bits) = self.measure(|r| r.abandon());
        self.meter.kinds[ABANDON].1 += bits;
        d
    }
}

#[derive(Serialize)]
struct JsonKind {
    kind: &'static str,
    count: u64,
    bits: u64,
}

#[derive(Serialize)]
struct JsonEntry {
    function: String,
    count: u64,
    bits: u64,
}

#[derive(Serialize)]
struct JsonPredicate {
    function: String,
    block: u32,
    count: u64,
    bits: u64,
}

#[derive(Serialize)]
struct JsonBits {
    bits: u64,
    branches: u64,
    categories: Vec<JsonKind>,
    entries: Vec<JsonEntry>,
    predicates: Vec<JsonPredicate>,
}

/// How many callees and predicates the text lists.
const TOP: usize = 15;

/// Runs `pathprof trace --bits`.
pub(super) fn run(file: &TraceFile, owner: &[Option<FunctionRef>], json: bool, out: &mut dyn Write) -> Result<()> {
    if file.naive {
        bail!("a naive trace (--pathprof-trace-naive) spends 64 bits on every block; --bits reads bit traces");
    }
    let (program, _) = file.program()?;
    let names = Names::new(file, owner);
    let flat = Flat::new(file, owner, &names, &program);
    let mut meter = Meter::default();
    let mut branches = 0;
    for t in &file.threads {
        let Some(resume) = (match &t.window {
            Some(w) if !w.opened => None,
            Some(w) => Some(file.resume_point(w, owner).context("a sync record")?),
            None => Some(ResumePoint::default()),
        }) else {
            continue;
        };
        let bits = t.abnormal_at.unwrap_or(t.bits).min(t.bits);
        let mut reader = t.reader(bits);
        reader.skip(t.window.as_ref().map_or(0, |w| w.start));
        let mut tally = Tally::new(&flat, None, false);
        let mut src = Metered { reader, meter: &mut meter };
        // A stream that ends inside a function (exit, a cut) has still been read up to where it ends; anything
        // else the walk finds is a corrupt trace, as for the listing.
        match tally
            .regenerate_counts(&program, &resume, &mut src)
            .map_err(|e| anyhow::anyhow!("{}: corrupt trace: {e}", t.label()))?
        {
            Ok(_) | Err(RegenError::Stream { error: StreamError::Ended, .. }) => {}
            Err(e) => bail!("{}: corrupt trace: {e}", t.label()),
        }
        branches += tally.branches();
    }
    let total: u64 = meter.kinds.iter().map(|k| k.1).sum();
    let mut entries: Vec<JsonEntry> =
        meter.entries.iter().map(|(&f, &(count, bits))| JsonEntry { function: names.name(f), count, bits }).collect();
    entries.sort_by(|a, b| b.bits.cmp(&a.bits).then_with(|| a.function.cmp(&b.function)));
    let mut predicates: Vec<JsonPredicate> = meter
        .predicates
        .iter()
        .map(|(&(f, v), &(count, bits))| JsonPredicate { function: names.name(f), block: v.0, count, bits })
        .collect();
    predicates.sort_by(|a, b| b.bits.cmp(&a.bits).then_with(|| (&a.function, a.block).cmp(&(&b.function, b.block))));
    let categories =
        KINDS.iter().zip(meter.kinds).map(|(&kind, (count, bits))| JsonKind { kind, count, bits }).collect();
    let report = JsonBits { bits: total, branches, categories, entries, predicates };
    if json {
        serde_json::to_writer(&mut *out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    let per_branch = if branches > 0 { format!("{:.3}", total as f64 / branches as f64) } else { "-".into() };
    writeln!(out, "{total} bits, {branches} conditional branches executed: {per_branch} bits per branch")?;
    let share = |bits: u64| if total > 0 { 100.0 * bits as f64 / total as f64 } else { 0.0 };
    for k in &report.categories {
        writeln!(out, "  {:>14} bits {:>6.2}%  {:>12} × {}", k.bits, share(k.bits), k.count, k.kind)?;
    }
    if !report.entries.is_empty() {
        writeln!(out, "entries with a function id, by bits (callee: entries, bits):")?;
        for e in report.entries.iter().take(TOP) {
            writeln!(out, "  {}: {}, {} ({:.2}%)", e.function, e.count, e.bits, share(e.bits))?;
        }
    }
    if !report.predicates.is_empty() {
        writeln!(out, "witnesses by bits (function block: decisions, bits):")?;
        for p in report.predicates.iter().take(TOP) {
            writeln!(out, "  {} {}: {}, {} ({:.2}%)", p.function, p.block, p.count, p.bits, share(p.bits))?;
        }
    }
    Ok(())
}
