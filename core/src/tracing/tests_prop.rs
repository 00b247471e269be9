//! Property tests for tracing on random CFGs (the fixtures' generator): random executions with calls —
//! recursion, calls into untraced code (no activation), callbacks (several activations from one call site),
//! direct calls (the announced callee first, usually; sometimes another function or none, as an interposed
//! callee would), implicit calls of straight-line leaves (no marker at all) — regenerate exactly under every encoding; the placement satisfies Trace and blocking; the checkers agree
//! with brute-force versions of the papers' characterisations; bit tracing costs exactly ⌈log2 N⌉ bits per
//! N-way decision; the entropy coder's size is within a small margin of the empirical entropy of the
//! decisions, computed independently from the execution. Plus the measured numbers of the report (bits per
//! branch, regeneration speed), as `#[ignore]`d tests that print.

use super::bits::{BitReader, BitTrace, BitWriter};
use super::check::{check_blocking, check_trace, TraceViolation};
use super::deferred::{deferred_loops, DeferredLoop};
use super::encode::SymbolSink;
use super::encode::{encode, Event};
use super::entropy::{EntropyModels, EntropySink, EntropySource};
use super::placement::{bit_tracing, blockers, place_witnesses, Blocking, WitnessPlan};
use super::regenerate::{regenerate, regenerate_from, DecisionSource, ResumePoint, StepSink, Waiting};
use super::tables::{FuncTables, Program};
use super::tokens::{TokenSink, TokenSource};
use super::view::{bits_for, is_traced, CallSites};
use super::FuncId;
use crate::graph::{BlockId, Cfg, EdgeId};
use crate::random_cfg::{random_cfg, RandomCfg};
use crate::test_rng::Rng;
use crate::weighting::bl94;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

// ---------------------------------------------------------------------------------------------------------------
// Random programs and executions
// ---------------------------------------------------------------------------------------------------------------

/// Functions (random CFGs) with random call sites.
#[derive(Clone, Debug)]
struct RandomProgram {
    cfgs: Vec<Cfg>,
    progress: Vec<Vec<EdgeId>>,
    calls: Vec<CallSites>,
    /// Traced out-edges per function and vertex, in `EdgeId` order (bit tracing's value order).
    outs: Vec<Vec<Vec<EdgeId>>>,
    /// Per function, block and call site: the function it calls directly, if any.
    direct: Vec<Vec<Vec<Option<usize>>>>,
    /// Per function, block and call site: the direct call is implicit (a copy of a straight-line leaf, or a
    /// certain call of a later function).
    implicit: Vec<Vec<Vec<bool>>>,
    /// Per function: a straight-line leaf (its implicit calls run a marker-free copy).
    leaves: Vec<bool>,
}

impl RandomProgram {
    /// The direct call sites of function `f` as [`FuncTables::with_direct_callees`] takes them.
    fn direct_sites(&self, f: usize) -> Vec<(BlockId, u32, FuncId)> {
        let mut out = Vec::new();
        for (b, sites) in self.direct[f].iter().enumerate() {
            for (c, g) in sites.iter().enumerate() {
                if let Some(g) = g {
                    out.push((BlockId::from_index(b), c as u32, FuncId::from_index(*g)));
                }
            }
        }
        out
    }

    /// The implicit call sites of function `f` as [`FuncTables::with_implicit_sites`] takes them.
    fn implicit_sites(&self, f: usize) -> Vec<(BlockId, u32)> {
        let mut out = Vec::new();
        for (b, sites) in self.implicit[f].iter().enumerate() {
            for (c, &i) in sites.iter().enumerate() {
                if i {
                    out.push((BlockId::from_index(b), c as u32));
                }
            }
        }
        out
    }

    /// Whether the call at site `c` of block `b` of `f` is implicit.
    fn is_implicit(&self, f: usize, b: BlockId, c: u32) -> bool {
        self.implicit[f].get(b.index()).and_then(|s| s.get(c as usize)).copied().unwrap_or(false)
    }
}

/// A straight-line leaf of `n` blocks (no decision, no call): what an implicit call may call.
fn chain_leaf(n: u32) -> RandomCfg {
    let edges: Vec<(u32, u32)> = (0..n - 1).map(|i| (i, i + 1)).collect();
    let cfg = crate::graph::test_cfg(n, &edges, &[n - 1]);
    let progress = cfg
        .vertices()
        .map(|v| cfg.edge_ids().find(|&e| cfg.edge(e).from == v && is_traced(cfg.edge(e).kind)).unwrap_or(EdgeId(0)))
        .collect();
    RandomCfg { cfg, progress }
}

fn random_program(mut rcs: Vec<RandomCfg>, seed: u64) -> RandomProgram {
    let mut rng = Rng::new(seed);
    // A straight-line leaf, so that some direct calls can be implicit.
    rcs.push(chain_leaf(1 + rng.below(3) as u32));
    let leaf = rcs.len() - 1;
    let mut calls = Vec::new();
    let mut outs = Vec::new();
    let mut direct = Vec::new();
    for (f, rc) in rcs.iter().enumerate() {
        let counts: Vec<u32> = if f == leaf {
            vec![0; rc.cfg.num_blocks()]
        } else {
            (0..rc.cfg.num_blocks()).map(|_| [0, 0, 0, 0, 0, 1, 1, 2][rng.below(8)]).collect()
        };
        // Three call sites in five are direct calls of a random function.
        direct.push(
            counts
                .iter()
                .map(|&n| (0..n).map(|_| (rng.below(5) < 3).then(|| rng.below(rcs.len()))).collect())
                .collect(),
        );
        calls.push(CallSites::new(&rc.cfg, counts).unwrap());
        let mut o = vec![Vec::new(); rc.cfg.num_vertices()];
        for (e, edge) in rc.cfg.edge_ids().zip(rc.cfg.edges()) {
            if is_traced(edge.kind) {
                o[edge.from.index()].push(e);
            }
        }
        outs.push(o);
    }
    // Half the direct calls of a straight-line leaf (no call sites, one traced out-edge per block) are implicit
    // (the writer calls a marker-free copy), and a third of the direct calls of any later function (certain
    // calls: the callee runs and writes its markers, its entry none; later only, so implicit calls, which
    // always run, cannot recurse forever).
    let leaves: Vec<bool> = (0..rcs.len())
        .map(|f| rcs[f].cfg.vertices().all(|v| calls[f].count(v) == 0) && outs[f].iter().all(|o| o.len() <= 1))
        .collect();
    let implicit = direct
        .iter()
        .enumerate()
        .map(|(f, fd): (usize, &Vec<Vec<Option<usize>>>)| {
            fd.iter()
                .map(|sites| {
                    sites
                        .iter()
                        .map(|g| {
                            g.is_some_and(|g| {
                                (leaves[g] && rng.below(2) == 0) || (!leaves[g] && g > f && rng.below(3) == 0)
                            })
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    RandomProgram {
        cfgs: rcs.iter().map(|rc| rc.cfg.clone()).collect(),
        progress: rcs.iter().map(|rc| rc.progress.clone()).collect(),
        calls,
        outs,
        direct,
        implicit,
        leaves,
    }
}

fn programs(max_funcs: usize, max_blocks: u32) -> impl Strategy<Value = RandomProgram> {
    (prop::collection::vec(random_cfg(max_blocks, 14, false), 1..=max_funcs), any::<u64>())
        .prop_map(|(rcs, seed)| random_program(rcs, seed))
}

/// A counting loop without calls: entry 0 → the cycle 1 → 2 → … → k → 1, whose test at block `t` leaves
/// for k + 1, which returns; the test's exit edge comes first or second (its bit is 0 or 1).
fn counting_loop(k: u32, t: u32, exit_first: bool) -> RandomCfg {
    let next = |i: u32| if i == k { 1 } else { i + 1 };
    let mut edges = vec![(0, 1)];
    for i in 1..=k {
        match (i == t, exit_first) {
            (false, _) => edges.push((i, next(i))),
            (true, true) => edges.extend([(i, k + 1), (i, next(i))]),
            (true, false) => edges.extend([(i, next(i)), (i, k + 1)]),
        }
    }
    let cfg = crate::graph::test_cfg(k + 2, &edges, &[k + 1]);
    // The walk's way forward after its first 40 steps: the test's exit edge.
    let progress = cfg
        .vertices()
        .map(|v| {
            let out = |e: &EdgeId| cfg.edge(*e).from == v && is_traced(cfg.edge(*e).kind);
            let to_exit = |e: &EdgeId| v.0 != t || cfg.edge(*e).to.0 == k + 1;
            cfg.edge_ids().filter(out).find(to_exit).unwrap_or(EdgeId(0))
        })
        .collect();
    RandomCfg { cfg, progress }
}

/// [`programs`] with a [`counting_loop`] among the functions, a callee like any other but with no call sites
/// of its own (so its loop is deferred).
fn programs_with_loops(max_funcs: usize, max_blocks: u32) -> impl Strategy<Value = RandomProgram> {
    (prop::collection::vec(random_cfg(max_blocks, 14, false), 1..=max_funcs), 1..4u32, any::<u64>()).prop_map(
        |(mut rcs, k, seed)| {
            let t = 1 + (seed % u64::from(k)) as u32;
            rcs.push(counting_loop(k, t, seed & 0x100 != 0));
            let f = rcs.len() - 1;
            let mut p = random_program(rcs, seed);
            p.calls[f] = CallSites::none(&p.cfgs[f]);
            p.direct[f] = vec![Vec::new(); p.cfgs[f].num_blocks()];
            p.implicit[f] = vec![Vec::new(); p.cfgs[f].num_blocks()];
            p
        },
    )
}

/// What a random execution did, recorded independently of the encoders.
#[derive(Default, Debug)]
struct Run {
    events: Vec<Event>,
    blocks: Vec<(FuncId, BlockId)>,
    /// (function, predicate, out-edge position, out-degree) of every decision.
    decisions: Vec<(usize, BlockId, usize, usize)>,
    edge_counts: Vec<Vec<u64>>,
    enters: u64,
    dones: u64,
    /// Entries of a fresh direct call site's callee there (1 bit each in the bit encodings).
    announced: u64,
    /// Other entries at a fresh direct call site (2 bits and an id).
    escaped: u64,
    /// Dones of fresh direct call sites (2 bits).
    fresh_dones: u64,
    /// Dones implied by the announced callee's return (no bits: `regenerate`, "Direct calls").
    bound: u64,
    /// Implicit calls (no bits: neither their entry nor their Done is written).
    implicit: u64,
    /// The functions of the entries written with a full id (the top level's, escaped and plain ones), in order.
    full_ids: Vec<usize>,
}

impl Run {
    /// Bits of the activation symbols in the bit encodings, with `func_bits`-bit ids (`regenerate`'s
    /// "Direct calls", counted from what the execution did).
    fn activation_bits(&self, func_bits: u8) -> u64 {
        let fb = u64::from(func_bits);
        let plain = self.enters - self.announced - self.escaped - self.implicit;
        self.announced
            + self.escaped * (2 + fb)
            + plain * (1 + fb)
            + self.fresh_dones * 2
            + (self.dones - self.fresh_dones - self.implicit - self.bound)
    }
}

impl Run {
    /// What an entry cache of 2^`slot_bits` slots changes in [`Run::activation_bits`]: a flag per full-id
    /// entry, and `slot_bits` instead of `func_bits` for each whose id its slot held (a direct-mapped table
    /// simulated here on the ids in order).
    fn entry_cache_delta(&self, func_bits: u8, slot_bits: u8) -> i64 {
        let mut slots = vec![usize::MAX; 1 << slot_bits];
        let mut delta = 0i64;
        for &id in &self.full_ids {
            let s = id % slots.len();
            delta += 1;
            if slots[s] == id {
                delta += i64::from(slot_bits) - i64::from(func_bits);
            }
            slots[s] = id;
        }
        delta
    }
}

/// Branch probabilities per function and vertex (`None`: uniform).
type Skew = Vec<Vec<Vec<f64>>>;

struct Exec<'a> {
    p: &'a RandomProgram,
    rng: Rng,
    skew: Option<&'a Skew>,
    run: Run,
    max_blocks: usize,
}

impl Exec<'_> {
    fn activation(&mut self, f: usize, depth: u32) {
        let g = &self.p.cfgs[f];
        self.run.events.push(Event::Enter(FuncId::from_index(f)));
        self.run.enters += 1;
        let mut v = g.entry();
        let mut steps = 0;
        loop {
            self.run.blocks.push((FuncId::from_index(f), v));
            if v == g.exit() {
                return;
            }
            for c in 0..self.p.calls[f].count(v) as usize {
                let k = if depth < 3 && self.run.blocks.len() < self.max_blocks {
                    [0, 0, 0, 0, 1, 1, 1, 2][self.rng.below(8)]
                } else {
                    0
                };
                let direct = self.p.direct[f][v.index()][c];
                if self.p.is_implicit(f, v, c as u32) {
                    // An implicit call runs its callee once (a leaf's copy, or a certain call's callee, inside
                    // which anything may run), and nothing else runs at the site.
                    self.run.implicit += 1;
                    self.activation(direct.unwrap(), depth + 1);
                    self.run.events.push(Event::CallReturned);
                    self.run.dones += 1;
                    continue;
                }
                let mut bound = false;
                for i in 0..k {
                    // A direct call runs its callee, but (rarely) an interposed function may run another one.
                    let callee = match direct {
                        Some(g) if i == 0 && self.rng.below(8) > 0 => g,
                        _ => self.rng.below(self.p.cfgs.len()),
                    };
                    if i == 0 && direct.is_some() {
                        if direct == Some(callee) {
                            self.run.announced += 1;
                            // The announced callee (random programs have no landing pads: it cannot resume)
                            // ends the site: nothing else runs there, and its Done is not written.
                            bound = true;
                        } else {
                            self.run.escaped += 1;
                            self.run.full_ids.push(callee);
                        }
                    } else {
                        self.run.full_ids.push(callee);
                    }
                    self.activation(callee, depth + 1);
                    if bound {
                        self.run.bound += 1;
                        break;
                    }
                }
                if k == 0 && direct.is_some() {
                    self.run.fresh_dones += 1;
                }
                self.run.events.push(Event::CallReturned);
                self.run.dones += 1;
            }
            let outs = &self.p.outs[f][v.index()];
            let i = if steps > 40 || self.run.blocks.len() > self.max_blocks {
                outs.iter().position(|&e| e == self.p.progress[f][v.index()]).unwrap()
            } else if let Some(skew) = self.skew.filter(|_| outs.len() > 1) {
                let x = (self.rng.next() >> 11) as f64 / (1u64 << 53) as f64;
                let probs = &skew[f][v.index()];
                let mut acc = 0.0;
                probs
                    .iter()
                    .position(|&q| {
                        acc += q;
                        x < acc
                    })
                    .unwrap_or(probs.len() - 1)
            } else {
                self.rng.below(outs.len())
            };
            if outs.len() > 1 {
                self.run.decisions.push((f, v, i, outs.len()));
            }
            let e = outs[i];
            self.run.edge_counts[f][e.index()] += 1;
            self.run.events.push(Event::Edge(e));
            v = g.edge(e).to;
            steps += 1;
        }
    }
}

/// One to two top-level activations of random functions, calls as described in the module docs.
fn execute(p: &RandomProgram, seed: u64, skew: Option<&Skew>, max_blocks: usize) -> Run {
    let mut ex = Exec { p, rng: Rng::new(seed), skew, run: Run::default(), max_blocks };
    ex.run.edge_counts = p.cfgs.iter().map(|g| vec![0; g.num_edges()]).collect();
    for _ in 0..1 + ex.rng.below(2) {
        let f = ex.rng.below(p.cfgs.len());
        ex.run.full_ids.push(f);
        ex.activation(f, 0);
    }
    ex.run.dones += 1; // the thread's end
    ex.run
}

/// Skewed branch probabilities: one hot out-edge per predicate, taken with probability 0.6, 0.9 or 0.99.
fn skew_of(p: &RandomProgram, seed: u64) -> Skew {
    let mut rng = Rng::new(seed);
    p.outs
        .iter()
        .map(|fo| {
            fo.iter()
                .map(|o| {
                    let n = o.len();
                    if n < 2 {
                        return vec![1.0; n];
                    }
                    let hot = rng.below(n);
                    let ph = [0.6, 0.9, 0.99][rng.below(3)];
                    (0..n).map(|i| if i == hot { ph } else { (1.0 - ph) / (n - 1) as f64 }).collect()
                })
                .collect()
        })
        .collect()
}

fn spanning_program(p: &RandomProgram) -> Program {
    let funcs = p
        .cfgs
        .iter()
        .zip(&p.calls)
        .map(|(g, c)| {
            let plan = place_witnesses(g, c, &bl94(g, &g.adjacency()), Blocking::CallsAndExit).unwrap();
            FuncTables::build(g, c, &plan).unwrap()
        })
        .enumerate()
        .map(|(f, t)| {
            t.with_direct_callees(p.direct_sites(f)).unwrap().with_implicit_sites(p.implicit_sites(f)).unwrap()
        })
        .collect();
    let program = Program::new(funcs);
    program.check_implicit().unwrap();
    program
}

fn bit_program(p: &RandomProgram) -> Program {
    Program::new(
        p.cfgs
            .iter()
            .zip(&p.calls)
            .enumerate()
            .map(|(f, (g, c))| {
                FuncTables::build(g, c, &bit_tracing(g))
                    .unwrap()
                    .with_direct_callees(p.direct_sites(f))
                    .unwrap()
                    .with_implicit_sites(p.implicit_sites(f))
                    .unwrap()
            })
            .collect(),
    )
}

fn regen<D: DecisionSource>(program: &Program, src: &mut D) -> Vec<(FuncId, BlockId)> {
    let mut out = Vec::new();
    regenerate(program, src, &mut out, 10_000_000).unwrap();
    out
}

fn bit_trace(program: &Program, events: &[Event]) -> BitTrace {
    let mut w = BitWriter::new();
    encode(program, events, &mut w).unwrap();
    w.finish()
}

/// Slot bits of the entry cache the property tests use: 2 slots, so that programs of a few functions see both
/// hits and misses.
const TEST_CACHE_BITS: u8 = 1;

/// [`bit_trace`] with an entry cache, emptied at bit `clear_at` if given.
fn cached_bit_trace(program: &Program, events: &[Event], clear_at: Option<u64>) -> BitTrace {
    let mut w = BitWriter::with_entry_cache(TEST_CACHE_BITS);
    if let Some(x) = clear_at {
        w.clear_cache_at(x);
    }
    encode(program, events, &mut w).unwrap();
    w.finish()
}

fn entropy_trace(program: &Program, models: &EntropyModels, events: &[Event]) -> Vec<u8> {
    let mut s = EntropySink::new(models);
    encode(program, events, &mut s).unwrap();
    s.finish()
}

/// −Σ log2(c_i / C) over every predicate's decisions: the empirical (conditional) entropy of the branching.
fn empirical_entropy_bits(run: &Run) -> f64 {
    let mut counts: std::collections::BTreeMap<(usize, BlockId), Vec<u64>> = Default::default();
    for &(f, v, i, n) in &run.decisions {
        counts.entry((f, v)).or_insert_with(|| vec![0; n])[i] += 1;
    }
    counts
        .values()
        .map(|c| {
            let total: u64 = c.iter().sum();
            c.iter().filter(|&&x| x > 0).map(|&x| x as f64 * (total as f64 / x as f64).log2()).sum::<f64>()
        })
        .sum()
}

// ---------------------------------------------------------------------------------------------------------------
// Brute-force oracles of the papers' characterisations
// ---------------------------------------------------------------------------------------------------------------

/// Vertices reachable from `x` over unwitnessed traced edges (x included).
fn closure(g: &Cfg, plan: &WitnessPlan, x: BlockId) -> Vec<bool> {
    let mut seen = vec![false; g.num_vertices()];
    let mut stack = vec![x];
    seen[x.index()] = true;
    while let Some(u) = stack.pop() {
        for (e, edge) in g.edge_ids().zip(g.edges()) {
            if edge.from == u && is_traced(edge.kind) && !plan.is_witnessed(e) && !seen[edge.to.index()] {
                seen[edge.to.index()] = true;
                stack.push(edge.to);
            }
        }
    }
    seen
}

/// TOPLAS'94 §4.1: Trace(Ewit) iff E − Ewit has no directed cycle and no diamond (two unwitnessed out-edges of
/// a predicate whose witness-free futures meet).
fn trace_by_characterisation(g: &Cfg, plan: &WitnessPlan) -> bool {
    let unwitnessed = |e: EdgeId| is_traced(g.edge(e).kind) && !plan.is_witnessed(e);
    let cycle =
        g.edge_ids().filter(|&e| unwitnessed(e)).any(|e| closure(g, plan, g.edge(e).to)[g.edge(e).from.index()]);
    let diamond = g.vertices().any(|p| {
        let outs: Vec<EdgeId> = g.edge_ids().filter(|&e| g.edge(e).from == p && unwitnessed(e)).collect();
        outs.iter().enumerate().any(|(i, &a)| {
            let ca = closure(g, plan, g.edge(a).to);
            outs[i + 1..].iter().any(|&b| closure(g, plan, g.edge(b).to).iter().zip(&ca).any(|(x, y)| *x && *y))
        })
    });
    !cycle && !diamond
}

/// §4.2 blocking: no predicate reaches EXIT or a blocked block over ≥ 1 unwitnessed edge.
fn blocking_by_search(g: &Cfg, calls: &CallSites, plan: &WitnessPlan) -> bool {
    let blocked = |v: BlockId| v == g.exit() || calls.count(v) > 0;
    g.vertices().all(|p| {
        let outs: Vec<EdgeId> = g.edge_ids().filter(|&e| g.edge(e).from == p && is_traced(g.edge(e).kind)).collect();
        outs.len() < 2
            || outs.iter().filter(|&&e| !plan.is_witnessed(e)).all(|&e| {
                let c = closure(g, plan, g.edge(e).to);
                !g.vertices().any(|v| c[v.index()] && blocked(v))
            })
    })
}

// ---------------------------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn placement_solves_trace_and_blocks(p in programs(1, 12)) {
        let (g, calls) = (&p.cfgs[0], &p.calls[0]);
        let plan = place_witnesses(g, calls, &bl94(g, &g.adjacency()), Blocking::CallsAndExit).unwrap();
        prop_assert_eq!(check_trace(g, &plan), Ok(()));
        prop_assert_eq!(check_blocking(g, calls, &plan), Ok(()));
        prop_assert!(trace_by_characterisation(g, &plan) && blocking_by_search(g, calls, &plan));
        for v in g.vertices().filter(|&v| v == g.exit() || calls.count(v) > 0) {
            for e in blockers(g, calls, v) {
                prop_assert!(plan.is_witnessed(e));
            }
        }
        // Without blocking, the placement is a plain spanning-tree chord set: |traced E| − (|V| − #components)
        // witnesses, and still solves Trace.
        let single = place_witnesses(g, &CallSites::none(g), &bl94(g, &g.adjacency()), Blocking::SingleProcedure)
            .unwrap();
        prop_assert_eq!(check_trace(g, &single), Ok(()));
        prop_assert!(single.witnessed().count() <= plan.witnessed().count());
        let bits = bit_tracing(g);
        prop_assert_eq!(check_trace(g, &bits), Ok(()));
        prop_assert_eq!(check_blocking(g, calls, &bits), Ok(()));
    }

    #[test]
    fn checkers_agree_with_the_characterisations(p in programs(1, 7), mask in any::<u64>()) {
        let (g, calls) = (&p.cfgs[0], &p.calls[0]);
        let edges: Vec<EdgeId> =
            g.edge_ids().filter(|&e| is_traced(g.edge(e).kind) && mask >> (e.index() % 64) & 1 == 1).collect();
        let plan = WitnessPlan::from_edges(g, &edges).unwrap();
        prop_assert_eq!(check_trace(g, &plan).is_ok(), trace_by_characterisation(g, &plan));
        prop_assert_eq!(check_blocking(g, calls, &plan).is_ok(), blocking_by_search(g, calls, &plan));
        // A placement FuncTables accepts regenerates its executions.
        if let Ok(t) = FuncTables::build(g, &CallSites::none(g), &plan) {
            let program = Program::new(vec![t]);
            let q = RandomProgram {
                cfgs: vec![g.clone()],
                progress: vec![p.progress[0].clone()],
                calls: vec![CallSites::none(g)],
                outs: vec![p.outs[0].clone()],
                direct: vec![vec![Vec::new(); g.num_blocks()]],
                implicit: vec![vec![Vec::new(); g.num_blocks()]],
                leaves: vec![false],
            };
            let run = execute(&q, mask, None, 2000);
            let mut sink = TokenSink::new(&program);
            encode(&program, &run.events, &mut sink).unwrap();
            let mut src = TokenSource::new(&program, &sink.tokens);
            prop_assert_eq!(regen(&program, &mut src), run.blocks);
            prop_assert_eq!(src.remaining(), 0);
        } else {
            // Without calls, only a placement that fails Trace is refused.
            prop_assert!(check_trace(g, &plan).is_err());
        }
    }

    #[test]
    fn executions_with_calls_regenerate_exactly(p in programs(4, 10), seed in any::<u64>()) {
        let run = execute(&p, seed, None, 3000);
        let nf = p.cfgs.len() as u64;

        // Spanning-tree witnesses: tokens and ⌈log2 n⌉-bit tokens.
        let sp = spanning_program(&p);
        let mut sink = TokenSink::new(&sp);
        encode(&sp, &run.events, &mut sink).unwrap();
        let mut src = TokenSource::new(&sp, &sink.tokens);
        prop_assert_eq!(&regen(&sp, &mut src), &run.blocks);
        prop_assert_eq!(src.remaining(), 0);
        let bits = bit_trace(&sp, &run.events);
        let mut reader = BitReader::new(&bits);
        prop_assert_eq!(&regen(&sp, &mut reader), &run.blocks);
        prop_assert_eq!(reader.remaining(), 0);
        // Its size: every witnessed edge crossed costs its function's width, plus the activation flags and ids.
        let mut expected = run.activation_bits(bits_for(nf));
        for (f, counts) in run.edge_counts.iter().enumerate() {
            let g = &p.cfgs[f];
            let plan = place_witnesses(g, &p.calls[f], &bl94(g, &g.adjacency()), Blocking::CallsAndExit).unwrap();
            let width = u64::from(bits_for(u64::from(plan.num_values())));
            expected += plan.witnessed().map(|e| counts[e.index()] * width).sum::<u64>();
        }
        prop_assert_eq!(bits.bits, expected);

        // Bit tracing: exactly ⌈log2 N⌉ bits per N-way decision, plus the activations.
        let bt = bit_program(&p);
        let bits = bit_trace(&bt, &run.events);
        let decisions: u64 = run.decisions.iter().map(|&(_, _, _, n)| u64::from(bits_for(n as u64))).sum();
        prop_assert_eq!(bits.bits, decisions + run.activation_bits(bits_for(nf)));
        let mut reader = BitReader::new(&bits);
        prop_assert_eq!(&regen(&bt, &mut reader), &run.blocks);
        prop_assert_eq!(reader.remaining(), 0);

        // With an entry cache: a flag per full-id entry, the slot instead of the id when it held the id.
        let cached = cached_bit_trace(&bt, &run.events, None);
        let fb = bits_for(nf);
        prop_assert_eq!(
            cached.bits as i64,
            (decisions + run.activation_bits(fb)) as i64 + run.entry_cache_delta(fb, TEST_CACHE_BITS)
        );
        let mut reader = BitReader::new(&cached).with_entry_cache(TEST_CACHE_BITS);
        prop_assert_eq!(&regen(&bt, &mut reader), &run.blocks);
        prop_assert_eq!(reader.remaining(), 0);

        // Entropy coding with a profile of an earlier run (a different execution): exact all the same.
        let earlier = execute(&p, seed ^ 0x5555, None, 3000);
        let models = EntropyModels::from_edge_counts(&bt, &earlier.edge_counts).unwrap();
        let bytes = entropy_trace(&bt, &models, &run.events);
        let mut src = EntropySource::new(&models, &bytes).unwrap();
        prop_assert_eq!(&regen(&bt, &mut src), &run.blocks);
        prop_assert_eq!(src.remaining(), 0);
    }

    #[test]
    fn regeneration_from_any_sync_point_is_the_runs_suffix(p in programs(4, 10), seed in any::<u64>(), pick in any::<u64>()) {
        let run = execute(&p, seed, None, 3000);
        let bt = bit_program(&p);
        // The writer's side: the bit offset and the stack at every entry and before every call site's return,
        // by simulating the events (independently of the regenerator).
        let mut sink = Positions { bits: 0 };
        let mut syncs = Vec::new();
        // Per activation: function, vertex, call sites of the vertex returned, and whether the activation that
        // began at the current site is its announced callee (the site is bound: `regenerate`, "Direct calls").
        let mut stack: Vec<(usize, BlockId, u32, bool)> = Vec::new();
        let mut blocks = 0usize;
        // Whether an activation began at the innermost call site.
        let mut began = false;
        let waiting_of = |stack: &[(usize, BlockId, u32, bool)]| -> Vec<Waiting> {
            stack
                .iter()
                .map(|&(f, b, c, bound)| Waiting { func: FuncId::from_index(f), block: b, call: c, bound })
                .collect()
        };
        for (i, ev) in run.events.iter().enumerate() {
            let direct_at = |&(f, b, c, _): &(usize, BlockId, u32, bool)| {
                p.direct[f].get(b.index()).and_then(|d| d.get(c as usize)).copied().flatten()
            };
            // The writer takes a sync point at a call site only inside a call of the runtime (regions), never at
            // a direct call site of a traced function.
            let at_direct = stack.last().is_some_and(|top| direct_at(top).is_some());
            // The writer has no markers at an implicit call site; a leaf's copy has no entry either (a certain
            // call's callee has one, where a sync point may be taken).
            let at_implicit = stack.last().is_some_and(|&(f, b, c, _)| p.is_implicit(f, b, c));
            let at_copy = at_implicit && stack.last().and_then(direct_at).is_some_and(|g| p.leaves[g]);
            if matches!(ev, Event::CallReturned) && !stack.is_empty() && !at_direct && !at_implicit {
                encode_prefix_bits(&bt, &run.events[..i], &mut sink);
                let cached = cached_prefix_bits(&bt, &run.events[..i]);
                syncs.push((sink.bits, cached, ResumePoint { waiting: waiting_of(&stack), entered: None }, blocks));
            }
            match *ev {
                Event::Enter(f) => {
                    if let Some(top) = stack.last_mut() {
                        // Random programs have no landing pads: an announced callee binds its site.
                        top.3 = !began && direct_at(top) == Some(f.index());
                    }
                    let waiting = waiting_of(&stack);
                    stack.push((f.index(), p.cfgs[f.index()].entry(), 0, false));
                    began = false;
                    blocks += 1;
                    if !at_copy {
                        encode_prefix_bits(&bt, &run.events[..=i], &mut sink);
                        let cached = cached_prefix_bits(&bt, &run.events[..=i]);
                        syncs.push((sink.bits, cached, ResumePoint { waiting, entered: Some(f) }, blocks - 1));
                    }
                }
                Event::CallReturned => {
                    if let Some(top) = stack.last_mut() {
                        top.2 += 1;
                        top.3 = false;
                    }
                    began = false;
                }
                Event::Edge(e) => {
                    let top = stack.last_mut().unwrap();
                    let g = &p.cfgs[top.0];
                    top.1 = g.edge(e).to;
                    top.2 = 0;
                    blocks += 1;
                    if top.1 == g.exit() {
                        stack.pop();
                        // Back at the caller's call site, where this activation began.
                        began = true;
                    }
                }
            }
        }
        prop_assume!(!syncs.is_empty());
        let whole = bit_trace(&bt, &run.events);
        for k in [pick as usize % syncs.len(), syncs.len() - 1, 0] {
            let (bit, cached_bit, at, before) = &syncs[k];
            let mut reader = BitReader::new(&whole);
            prop_assert!(reader.skip(*bit));
            let mut out = Vec::new();
            regenerate_from(&bt, at, &mut reader, &mut out, 10_000_000).unwrap().unwrap();
            prop_assert_eq!(&out[..], &run.blocks[*before..]);
            prop_assert_eq!(reader.remaining(), 0);
            // With an entry cache the writer empties it at the sync point; a reader starting there starts empty.
            let cached = cached_bit_trace(&bt, &run.events, Some(*cached_bit));
            let mut reader = BitReader::new(&cached).with_entry_cache(TEST_CACHE_BITS);
            prop_assert!(reader.skip(*cached_bit));
            let mut out = Vec::new();
            regenerate_from(&bt, at, &mut reader, &mut out, 10_000_000).unwrap().unwrap();
            prop_assert_eq!(&out[..], &run.blocks[*before..]);
            prop_assert_eq!(reader.remaining(), 0);
        }
    }

    #[test]
    fn entropy_coding_is_within_a_margin_of_the_empirical_entropy(p in programs(3, 12), seed in any::<u64>()) {
        let skew = skew_of(&p, seed);
        let run = execute(&p, seed, Some(&skew), 20_000);
        let bt = bit_program(&p);
        let models = EntropyModels::from_edge_counts(&bt, &run.edge_counts).unwrap();
        let bytes = entropy_trace(&bt, &models, &run.events);
        let mut src = EntropySource::new(&models, &bytes).unwrap();
        prop_assert_eq!(&regen(&bt, &mut src), &run.blocks);
        // A static model costs at least the empirical entropy of what it codes (Gibbs); the coder adds at most
        // ~0.003 bits per symbol (range truncation), ~1e-4 per decision (frequency quantisation) and 5 bytes.
        let h = empirical_entropy_bits(&run);
        let activations = run.activation_bits(bits_for(p.cfgs.len() as u64)) as f64;
        let symbols = (run.decisions.len() as u64 + run.enters * 2 + run.dones) as f64;
        let size = bytes.len() as f64 * 8.0;
        prop_assert!(size >= h + activations - 16.0, "size {size} < entropy {h} + {activations}");
        prop_assert!(size <= h + activations + 0.005 * symbols + 48.0, "size {size} vs entropy {h} + {activations}");
    }

    #[test]
    fn corrupt_and_truncated_traces_are_errors_not_panics(p in programs(3, 8), seed in any::<u64>(), flip in any::<u32>()) {
        let run = execute(&p, seed, None, 500);
        let bt = bit_program(&p);
        let mut bits = bit_trace(&bt, &run.events);
        if bits.bits > 0 {
            let i = u64::from(flip) % bits.bits;
            bits.bytes[(i / 8) as usize] ^= 1 << (i % 8);
        }
        let mut out: Vec<(FuncId, BlockId)> = Vec::new();
        let _ = regenerate(&bt, &mut BitReader::new(&bits), &mut out, 100_000);
        let models = EntropyModels::from_edge_counts(&bt, &run.edge_counts).unwrap();
        let bytes = entropy_trace(&bt, &models, &run.events);
        let cut = &bytes[..bytes.len() * (flip as usize % 4) / 4];
        if let Ok(mut src) = EntropySource::new(&models, cut) {
            let _ = regenerate(&bt, &mut src, &mut out, 100_000);
        }
    }
}

#[test]
fn termination_sources_are_blocked_like_calls() {
    // 0 → 1 → 2 → return, 0 → 2; block 1 may die in a call (Termination): the predicate 0 gets a witness on
    // 0 → 1 (its blocker), so a trace cut short in block 1 has nothing pending.
    use crate::graph::{ordered_cfg, Leave};
    let g = ordered_cfg(3, &[(0, 1, Leave::B), (0, 2, Leave::B), (1, 2, Leave::B), (2, 3, Leave::R), (1, 3, Leave::T)]);
    let calls = CallSites::none(&g);
    assert_eq!(blockers(&g, &calls, BlockId(1)), vec![EdgeId(0)]);
    let plan = place_witnesses(&g, &calls, &[1.0; 6], Blocking::CallsAndExit).unwrap();
    assert!(plan.is_witnessed(EdgeId(0)));
    check_blocking(&g, &calls, &plan).unwrap();
    let unblocked = WitnessPlan::from_edges(&g, &[EdgeId(1)]).unwrap();
    assert_eq!(
        check_blocking(&g, &calls, &unblocked),
        Err(TraceViolation::NotBlocking { predicate: BlockId(0), edge: EdgeId(0) })
    );
}

// ---------------------------------------------------------------------------------------------------------------
// Measurements (run with `cargo test --release -p pathprof-core tracing -- --ignored --nocapture`)
// ---------------------------------------------------------------------------------------------------------------

fn sample_programs(n: usize, max_funcs: usize, max_blocks: u32) -> Vec<RandomProgram> {
    let mut runner = TestRunner::deterministic();
    let s = programs(max_funcs, max_blocks);
    (0..n).map(|_| s.new_tree(&mut runner).unwrap().current()).collect()
}

/// Top-level activations (calls nested as in [`execute`]) until at least `min_blocks` blocks ran.
fn long_run(p: &RandomProgram, seed: u64, skew: Option<&Skew>, min_blocks: usize) -> Run {
    let mut ex = Exec { p, rng: Rng::new(seed), skew, run: Run::default(), max_blocks: usize::MAX };
    ex.run.edge_counts = p.cfgs.iter().map(|g| vec![0; g.num_edges()]).collect();
    while ex.run.blocks.len() < min_blocks {
        let f = ex.rng.below(p.cfgs.len());
        ex.max_blocks = ex.run.blocks.len() + 5_000;
        ex.run.full_ids.push(f);
        ex.activation(f, 0);
    }
    ex.run.dones += 1;
    ex.run
}

#[test]
#[ignore]
fn measure_bits_per_branch() {
    for skewed in [false, true] {
        let (mut branches, mut two_way, mut blocks, mut act_bits) = (0u64, 0u64, 0u64, 0u64);
        let (mut sp_bits, mut bt_bits, mut en_bits, mut en_prior_bits) = (0u64, 0u64, 0u64, 0u64);
        let mut h = 0.0;
        for (i, p) in sample_programs(100, 4, 12).iter().enumerate() {
            let skew = skew_of(p, i as u64);
            let run = long_run(p, i as u64, skewed.then_some(&skew), 20_000);
            let earlier = long_run(p, !(i as u64), skewed.then_some(&skew), 20_000);
            branches += run.decisions.len() as u64;
            two_way += run.decisions.iter().filter(|d| d.3 == 2).count() as u64;
            blocks += run.blocks.len() as u64;
            act_bits += run.activation_bits(bits_for(p.cfgs.len() as u64));
            h += empirical_entropy_bits(&run);
            sp_bits += bit_trace(&spanning_program(p), &run.events).bits;
            let bt = bit_program(p);
            bt_bits += bit_trace(&bt, &run.events).bits;
            let models = EntropyModels::from_edge_counts(&bt, &run.edge_counts).unwrap();
            en_bits += entropy_trace(&bt, &models, &run.events).len() as u64 * 8;
            let models = EntropyModels::from_edge_counts(&bt, &earlier.edge_counts).unwrap();
            en_prior_bits += entropy_trace(&bt, &models, &run.events).len() as u64 * 8;
        }
        // Bits per executed branch decision, the activation flags and function ids (the same in every
        // encoding, coded at ~1 bit per flag) left out; the totals with them in brackets.
        let per =
            |b: u64| format!("{:.3} ({:.3})", (b - act_bits) as f64 / branches as f64, b as f64 / branches as f64);
        println!(
            "{} branching: {branches} decisions ({:.0}% two-way), {blocks} blocks, {:.3} activation bits/branch; \
             bits/branch: spanning-tree witnesses {}, bit tracing {}, entropy with a same-run profile {}, \
             with an earlier-run profile {}; empirical entropy {:.3}",
            if skewed { "skewed" } else { "uniform" },
            100.0 * two_way as f64 / branches as f64,
            act_bits as f64 / branches as f64,
            per(sp_bits),
            per(bt_bits),
            per(en_bits),
            per(en_prior_bits),
            h / branches as f64
        );
    }
}

/// Counts every edge crossed, per function: as straight runs (`by_runs`, then [`FuncTables::add_run_counts`])
/// or one step at a time (the default `run`).
struct EdgeCounts {
    by_runs: bool,
    edges: Vec<Vec<u64>>,
    runs: Vec<Vec<u64>>,
}
impl StepSink for EdgeCounts {
    fn block(&mut self, _f: FuncId, _b: BlockId) {}
    fn edge(&mut self, f: FuncId, e: EdgeId) {
        self.edges[f.index()][e.index()] += 1;
    }
    fn run(&mut self, f: FuncId, at: u32, steps: &[crate::tracing::RunStep]) {
        if self.by_runs {
            self.runs[f.index()][at as usize] += 1;
        } else {
            for s in steps {
                self.step(f, s.edge, s.target);
            }
        }
    }
}

/// Edge counts of regenerating `bits` with `program`, counted as `EdgeCounts` says.
fn counted_edges(program: &Program, p: &RandomProgram, bits: &BitTrace, by_runs: bool) -> Vec<Vec<u64>> {
    let funcs: Vec<&FuncTables> = (0..p.cfgs.len()).map(|f| program.func(FuncId(f as u32)).unwrap()).collect();
    let mut sink = EdgeCounts {
        by_runs,
        edges: p.cfgs.iter().map(|g| vec![0; g.num_edges()]).collect(),
        runs: funcs.iter().map(|t| vec![0; t.num_run_positions()]).collect(),
    };
    regenerate(program, &mut BitReader::new(bits), &mut sink, u64::MAX).unwrap();
    for (f, t) in funcs.iter().enumerate() {
        t.add_run_counts(&sink.runs[f], &mut sink.edges[f]);
    }
    sink.edges
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Counting a straight run once and deriving its edges afterwards gives every edge's count, as counting
    /// each step does — and both give the execution's own counts of the edges tracing follows.
    #[test]
    fn counting_straight_runs_gives_the_edge_counts(p in programs(4, 10), seed in any::<u64>()) {
        let run = execute(&p, seed, None, 3000);
        for program in [spanning_program(&p), bit_program(&p)] {
            let bits = bit_trace(&program, &run.events);
            let stepwise = counted_edges(&program, &p, &bits, false);
            prop_assert_eq!(&counted_edges(&program, &p, &bits, true), &stepwise);
            for (f, counts) in stepwise.iter().enumerate() {
                for (e, &n) in counts.iter().enumerate() {
                    let traced = program.func(FuncId(f as u32)).unwrap().traces(EdgeId(e as u32));
                    if traced {
                        prop_assert_eq!(n, run.edge_counts[f][e], "function {} edge {}", f, e);
                    }
                }
            }
        }
    }
}

/// Counts blocks and folds their ids, so the work cannot be optimised away and nothing is stored.
struct Fold(u64);
impl StepSink for Fold {
    #[inline]
    fn block(&mut self, f: FuncId, b: BlockId) {
        self.0 = self.0.wrapping_mul(31).wrapping_add(u64::from(b.0 ^ f.0));
    }
}

#[test]
#[ignore]
fn measure_regeneration_speed() {
    // Larger functions, long executions: a few million blocks per program.
    let progs = sample_programs(4, 3, 40);
    let no_calls = |p: &RandomProgram| RandomProgram {
        calls: p.cfgs.iter().map(CallSites::none).collect(),
        direct: p.cfgs.iter().map(|g| vec![Vec::new(); g.num_blocks()]).collect(),
        implicit: p.cfgs.iter().map(|g| vec![Vec::new(); g.num_blocks()]).collect(),
        ..p.clone()
    };
    for p in progs.iter().flat_map(|p| [p.clone(), no_calls(p)]) {
        let p = &p;
        println!("{} functions, {} call sites per 100 blocks", p.cfgs.len(), {
            let (c, b): (u32, usize) = p.cfgs.iter().zip(&p.calls).fold((0, 0), |(c, b), (g, cs)| {
                (c + g.vertices().map(|v| cs.count(v)).sum::<u32>(), b + g.num_blocks())
            });
            100 * c as usize / b.max(1)
        });
        for skewed in [false, true] {
            let skew = skew_of(p, 5);
            let run = long_run(p, 7, skewed.then_some(&skew), 3_000_000);
            let n = run.blocks.len() as u64;
            println!("{} branching", if skewed { "skewed" } else { "uniform" });
            let sp = spanning_program(p);
            let bt = bit_program(p);
            let sp_bits = bit_trace(&sp, &run.events);
            let bt_bits = bit_trace(&bt, &run.events);
            let models = EntropyModels::from_edge_counts(&bt, &run.edge_counts).unwrap();
            let en = entropy_trace(&bt, &models, &run.events);
            let time = |name: &str, f: &mut dyn FnMut() -> u64| {
                let mut best = f64::MAX;
                for _ in 0..5 {
                    let t = std::time::Instant::now();
                    let got = f();
                    best = best.min(t.elapsed().as_secs_f64());
                    assert_eq!(got, n);
                }
                println!("{name}: {n} blocks, {:.0} M blocks/s", n as f64 / best / 1e6);
            };
            time("spanning-tree witnesses", &mut || {
                let mut s = Fold(0);
                regenerate(&sp, &mut BitReader::new(&sp_bits), &mut s, u64::MAX).unwrap()
            });
            time("bit tracing", &mut || {
                let mut s = Fold(0);
                regenerate(&bt, &mut BitReader::new(&bt_bits), &mut s, u64::MAX).unwrap()
            });
            time("entropy-coded", &mut || {
                let mut s = Fold(0);
                regenerate(&bt, &mut EntropySource::new(&models, &en).unwrap(), &mut s, u64::MAX).unwrap()
            });
            time("bit tracing into a Vec", &mut || {
                let mut s: Vec<(FuncId, BlockId)> = Vec::with_capacity(n as usize);
                regenerate(&bt, &mut BitReader::new(&bt_bits), &mut s, u64::MAX).unwrap()
            });
        }
    }
}

#[test]
fn quantised_frequencies_are_proportional_and_never_zero() {
    use super::entropy::quantize;
    // 2^15 = 32768 shared as 1 + ⌊c·(32768 − N)/C⌋, the remainder to the most frequent edge (by hand).
    assert_eq!(quantize(&[3, 1]), Some(vec![24576, 8192]));
    assert_eq!(quantize(&[5, 0]), Some(vec![32767, 1]));
    assert_eq!(quantize(&[0, 0, 0]), Some(vec![10924, 10922, 10922]));
    assert_eq!(quantize(&[]), None);
}

#[test]
fn range_coder_costs_what_the_probabilities_say() {
    use super::range_coder::{RangeDecoder, RangeEncoder};
    // 8000 fair coin flips (freq 2^14 of 2^15) cost 1000 bytes plus the 5-byte flush; 8000 symbols of
    // probability 1/4 (freq 2^13) cost 2 bits each; raw bits cost themselves.
    let mut rng = Rng::new(1);
    let flips: Vec<u32> = (0..8000).map(|_| (rng.next() & 1) as u32).collect();
    let mut enc = RangeEncoder::new();
    for &b in &flips {
        enc.encode(b << 14, 1 << 14, 15);
    }
    let bytes = enc.finish();
    assert!((1000..=1005).contains(&bytes.len()), "{} bytes", bytes.len());
    let mut dec = RangeDecoder::new(&bytes).unwrap();
    for &b in &flips {
        let x = dec.target(15).unwrap();
        assert_eq!(x >> 14, b);
        dec.consume(b << 14, 1 << 14).unwrap();
    }
    assert_eq!(dec.remaining(), 0);
    let mut enc = RangeEncoder::new();
    for i in 0..8000u32 {
        enc.encode((i % 4) << 13, 1 << 13, 15);
    }
    assert!((2000..=2005).contains(&enc.finish().len()));
    let mut enc = RangeEncoder::new();
    for i in 0..1000u32 {
        enc.encode_bits(i.wrapping_mul(2_654_435_761) % (1 << 24), 24);
    }
    let bytes = enc.finish();
    assert!((3000..=3005).contains(&bytes.len()));
    let mut dec = RangeDecoder::new(&bytes).unwrap();
    for i in 0..1000u32 {
        assert_eq!(dec.decode_bits(24).unwrap(), i.wrapping_mul(2_654_435_761) % (1 << 24));
    }
    assert!(dec.decode_bits(8).is_err(), "reading past the end is an error");
}

/// Counts the bits a bit-tracing encoder writes (the sync points' offsets).
struct Positions {
    bits: u64,
}

impl SymbolSink for Positions {
    fn witness(&mut self, _f: FuncId, _v: BlockId, width: u8, _value: u32) {
        self.bits += u64::from(width);
    }
    fn enter(&mut self, f: FuncId, announced: Option<FuncId>, func_bits: u8) {
        self.bits += match announced {
            Some(g) if g == f => 1,
            Some(_) => 2 + u64::from(func_bits),
            None => 1 + u64::from(func_bits),
        };
    }
    fn done(&mut self, announced: Option<FuncId>, _func_bits: u8) {
        self.bits += if announced.is_some() { 2 } else { 1 };
    }
}

/// The bits an entry-cached bit-tracing writer writes for a prefix of the events (quadratic, test-sized).
fn cached_prefix_bits(program: &Program, events: &[Event]) -> u64 {
    let mut w = BitWriter::with_entry_cache(TEST_CACHE_BITS);
    // An execution cut short: the encoder reports its end, after writing what it wrote.
    let _ = encode(program, events, &mut w);
    w.len()
}

/// The bits an encoder writes for a prefix of the events (a fresh count each time: quadratic, test-sized).
fn encode_prefix_bits(program: &Program, events: &[Event], sink: &mut Positions) {
    sink.bits = 0;
    // An execution cut short: the encoder reports its end, after counting what it wrote.
    let _ = encode(program, events, sink);
}

#[test]
fn an_implicit_call_is_a_direct_call_of_a_function_of_the_program() {
    // f: one block with one call site; g: a two-way branch (not marker-free); h: a straight line.
    let f = crate::graph::test_cfg(1, &[], &[0]);
    let g = crate::graph::test_cfg(3, &[(0, 1), (0, 2)], &[1, 2]);
    let h = crate::graph::test_cfg(2, &[(0, 1)], &[1]);
    let one_call = CallSites::new(&f, vec![1]).unwrap();
    let tables = |cfg: &Cfg, calls: &CallSites| FuncTables::build(cfg, calls, &bit_tracing(cfg)).unwrap();
    let site = (BlockId(0), 0);
    // Not a direct call site: refused.
    assert!(tables(&f, &one_call).with_implicit_sites([site]).is_err());
    let caller = |callee: u32| {
        tables(&f, &one_call)
            .with_direct_callees([(BlockId(0), 0, FuncId(callee))])
            .unwrap()
            .with_implicit_sites([site])
            .unwrap()
    };
    let none = |cfg: &Cfg| tables(cfg, &CallSites::none(cfg));
    assert!(!none(&g).is_marker_free() && none(&h).is_marker_free());
    // A callee the program does not have: refused.
    let bad = Program::new(vec![caller(3), none(&g), none(&h)]);
    assert_eq!(bad.check_implicit().map_err(|e| e.callee), Err(FuncId(3)));
    let with_g = Program::new(vec![caller(1), none(&g), none(&h)]);
    assert_eq!(with_g.check_implicit(), Ok(()));
    let with_h = Program::new(vec![caller(2), none(&g), none(&h)]);
    assert_eq!(with_h.check_implicit(), Ok(()));
    // f calls h implicitly (a copy): the trace holds only f's Enter and the thread's Done; regeneration walks h.
    let events = [
        Event::Enter(FuncId(0)),
        Event::Enter(FuncId(2)),
        Event::Edge(EdgeId(0)),
        Event::Edge(EdgeId(1)),
        Event::CallReturned,
        Event::Edge(EdgeId(0)),
    ];
    let bits = bit_trace(&with_h, &events);
    assert_eq!(bits.bits, (1 + 2) + 1, "Enter(f) with a 2-bit id, the top level's Done");
    let mut reader = BitReader::new(&bits);
    let blocks = regen(&with_h, &mut reader);
    let want: Vec<(FuncId, BlockId)> = vec![
        (FuncId(0), BlockId(0)),
        (FuncId(2), BlockId(0)),
        (FuncId(2), BlockId(1)),
        (FuncId(2), BlockId(2)),
        (FuncId(0), BlockId(1)),
    ];
    assert_eq!(blocks, want);
    // f calls g implicitly (a certain call): g's decision is the only bit between f's Enter and the Done.
    let events = [
        Event::Enter(FuncId(0)),
        Event::Enter(FuncId(1)),
        Event::Edge(EdgeId(1)),
        Event::Edge(EdgeId(3)),
        Event::CallReturned,
        Event::Edge(EdgeId(0)),
    ];
    let bits = bit_trace(&with_g, &events);
    assert_eq!(bits.bits, (1 + 2) + 1 + 1, "Enter(f), g's one-bit decision, the top level's Done");
    let mut reader = BitReader::new(&bits);
    let blocks = regen(&with_g, &mut reader);
    let want: Vec<(FuncId, BlockId)> = vec![
        (FuncId(0), BlockId(0)),
        (FuncId(1), BlockId(0)),
        (FuncId(1), BlockId(2)),
        (FuncId(1), BlockId(3)),
        (FuncId(0), BlockId(1)),
    ];
    assert_eq!(blocks, want);
    assert_eq!(reader.remaining(), 0);
}

// ---------------------------------------------------------------------------------------------------------------
// Deferred loops: the writer holds a loop's stay bits until its exit (`deferred`)
// ---------------------------------------------------------------------------------------------------------------

/// Per function of `p`, its deferred loops under bit tracing.
fn deferred_of(p: &RandomProgram) -> Vec<Vec<DeferredLoop>> {
    p.cfgs
        .iter()
        .zip(&p.calls)
        .map(|(g, c)| deferred_loops(g, c, &bit_tracing(g), &vec![false; g.num_vertices()]))
        .collect()
}

/// The instrumented writer of a deferred loop, as a sink in front of another: a deferred test's stay bit is
/// counted, not written; its exit bit writes the count's stay bits first. Any other symbol while a count is
/// held is a loop that was wrongly deferred: recorded in `violations`.
struct Deferring<'a, S> {
    inner: S,
    /// Per function: (test, stay value, exit value) of its deferred loops.
    tests: Vec<Vec<(BlockId, u32, u32)>>,
    /// The held count: (function, test, its stay value, stays).
    held: Option<(FuncId, BlockId, u32, u64)>,
    violations: u64,
    stays: u64,
    _p: std::marker::PhantomData<&'a ()>,
}

impl<S: SymbolSink> Deferring<'_, S> {
    fn new(inner: S, p: &RandomProgram) -> Self {
        let plans: Vec<WitnessPlan> = p.cfgs.iter().map(bit_tracing).collect();
        let tests = deferred_of(p)
            .iter()
            .zip(&plans)
            .map(|(ls, plan)| {
                ls.iter().map(|l| (l.test, plan.value(l.stay).unwrap(), plan.value(l.exit).unwrap())).collect()
            })
            .collect();
        Deferring { inner, tests, held: None, violations: 0, stays: 0, _p: std::marker::PhantomData }
    }

    fn other_symbol(&mut self) {
        if self.held.is_some_and(|(_, _, _, n)| n > 0) {
            self.violations += 1;
        }
    }
}

impl<S: SymbolSink> SymbolSink for Deferring<'_, S> {
    fn witness(&mut self, f: FuncId, v: BlockId, width: u8, value: u32) {
        if let Some(&(_, stay, _)) = self.tests[f.index()].iter().find(|t| t.0 == v) {
            match self.held {
                Some((hf, hv, _, _)) if (hf, hv) != (f, v) => self.violations += 1,
                _ => {}
            }
            if value == stay {
                let n = self.held.filter(|h| (h.0, h.1) == (f, v)).map_or(0, |h| h.3);
                self.held = Some((f, v, stay, n + 1));
                self.stays += 1;
                return;
            }
            // The exit edge: the held stays, then the exit bit.
            if let Some((_, _, stay, n)) = self.held.take().filter(|h| (h.0, h.1) == (f, v)) {
                for _ in 0..n {
                    self.inner.witness(f, v, width, stay);
                }
            }
            self.inner.witness(f, v, width, value);
            return;
        }
        self.other_symbol();
        self.inner.witness(f, v, width, value);
    }
    fn enter(&mut self, f: FuncId, announced: Option<FuncId>, func_bits: u8) {
        self.other_symbol();
        self.inner.enter(f, announced, func_bits);
    }
    fn done(&mut self, announced: Option<FuncId>, func_bits: u8) {
        self.other_symbol();
        self.inner.done(announced, func_bits);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Deferring a loop's bits to its exit writes the very stream bit tracing writes, bit for bit, and nothing
    /// else is ever written while a deferred loop holds bits.
    #[test]
    fn deferred_loops_write_the_same_stream(p in programs_with_loops(4, 10), seed in any::<u64>()) {
        // Skewed branching, so that loops often run many iterations.
        let run = execute(&p, seed, Some(&skew_of(&p, seed)), 3000);
        let bt = bit_program(&p);
        let plain = bit_trace(&bt, &run.events);
        let mut w = Deferring::new(BitWriter::new(), &p);
        encode(&bt, &run.events, &mut w).unwrap();
        prop_assert_eq!(w.violations, 0);
        prop_assert!(w.held.is_none_or(|h| h.3 == 0), "a held count at the thread's end");
        let deferred = w.inner.finish();
        prop_assert_eq!(deferred.bits, plain.bits);
        prop_assert_eq!(&deferred.bytes, &plain.bytes);
    }
}

/// The random programs have deferred loops, and their executions stay in them: the property above is not
/// vacuous.
#[test]
fn random_executions_cross_deferred_loops() {
    let (mut loops, mut stays) = (0, 0);
    let mut runner = TestRunner::deterministic();
    let strategy = programs_with_loops(4, 10);
    for i in 0..200 {
        let p = &strategy.new_tree(&mut runner).unwrap().current();
        loops += deferred_of(p).iter().map(Vec::len).sum::<usize>();
        let run = execute(p, i as u64, Some(&skew_of(p, i as u64)), 3000);
        let mut w = Deferring::new(BitWriter::new(), p);
        encode(&bit_program(p), &run.events, &mut w).unwrap();
        stays += w.stays;
    }
    assert!(loops >= 20, "{loops} deferred loops in 200 programs");
    assert!(stays >= 1000, "{stays} deferred stays");
    eprintln!("{loops} deferred loops, {stays} stays");
}
