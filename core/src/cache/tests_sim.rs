//! The second method for the property tests: random programs (random CFGs with random code layout, calls,
//! recursion, indirect and foreign calls, callbacks) and a plain, exact LRU set-associative simulation of every
//! fetch of a random execution, which also records the UP executions the on-the-fly counter is fed.

use super::classify::{CachePlan, Category};
use super::instances::InstanceId;
use super::program::{BlockCode, CallTarget, Function, Geometry, Insn, Program};
use crate::graph::{BlockId, EdgeKind};
use crate::melski_reps::program::ProcId;
use crate::random_cfg::RandomCfg;
use crate::test_rng::Rng;
use std::collections::HashMap;

/// A random program over `cfgs` (function 0 is the entry) and a random small geometry.
pub(super) fn random_program(cfgs: &[RandomCfg], rng: &mut Rng) -> (Program, Geometry) {
    let n = cfgs.len();
    let mut addr = rng.below(64) as u64;
    let mut functions = Vec::new();
    for (p, rc) in cfgs.iter().enumerate() {
        let mut blocks = Vec::new();
        for _ in 0..rc.cfg.num_blocks() {
            if rng.chance(4) {
                addr += rng.below(48) as u64;
            }
            let insns: Vec<Insn> = (0..rng.below(6))
                .map(|_| {
                    let size = 1 + rng.below(8) as u32;
                    let i = Insn { addr, size };
                    addr += u64::from(size);
                    i
                })
                .collect();
            let call = rng.chance(4).then(|| {
                let mut procs: Vec<ProcId> = (0..1 + rng.below(2)).map(|_| ProcId(rng.below(n) as u32)).collect();
                procs.sort_unstable();
                procs.dedup();
                let foreign = rng.chance(3) || !procs.iter().any(|q| q.index() > p);
                CallTarget { procs, foreign }
            });
            blocks.push(BlockCode { insns, call });
        }
        functions.push(Function { name: format!("f{p}"), cfg: rc.cfg.clone(), blocks });
        addr += rng.below(32) as u64;
    }
    let callbacks = (0..n).filter(|_| rng.chance(3)).map(|p| ProcId(p as u32)).collect();
    let line = [4u32, 8, 16][rng.below(3)];
    let assoc = 1 + rng.below(3) as u32;
    let sets = [1u64, 2, 4][rng.below(3)];
    let geometry = Geometry::new(sets * u64::from(assoc) * u64::from(line), assoc, line).unwrap();
    (Program::new(functions, ProcId(0), callbacks).unwrap(), geometry)
}

/// What one random execution did, fetch by fetch.
#[derive(Default, Debug)]
pub(super) struct Execution {
    /// The UP executions (supergraph nodes) in order.
    pub(super) events: Vec<u32>,
    /// Per function: (fetches, misses).
    pub(super) per_function: Vec<(u64, u64)>,
    /// Executed fetches per category, and how many of them missed.
    pub(super) by_category: [(u64, u64); 4],
    /// Per first-miss line: (first-miss fetches executed, of which missed).
    pub(super) first_miss: HashMap<u32, (u64, u64)>,
    /// Block executions.
    pub(super) blocks: u64,
    /// The run as a replay sees it: blocks completed, calls entered, returns.
    pub(super) steps: Vec<Step>,
}

/// One event of a run as a replay (a trace) reports it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// The current activation's block ran to its end (its call, if any, not yet made).
    Block(BlockId),
    /// The current activation's call block entered `callee` directly.
    Call(BlockId, ProcId),
    /// Foreign code called `callee`.
    Callback(ProcId),
    /// The current activation returned.
    Return,
}

struct Sim<'a> {
    program: &'a Program,
    plan: &'a CachePlan,
    rng: Rng,
    cache: Vec<Vec<u64>>,
    out: Execution,
    tails: Vec<Vec<bool>>,
}

/// Runs `program` from its entry, choosing branches, call targets and callbacks at random.
pub(super) fn execute(program: &Program, plan: &CachePlan, seed: u64) -> Execution {
    let g = &plan.geometry;
    let tails = program.functions().iter().zip(&plan.graph.uppas).map(|(f, u)| u.marks(f.cfg.num_blocks()).1).collect();
    let mut sim = Sim {
        program,
        plan,
        rng: Rng::new(seed),
        cache: vec![Vec::new(); g.sets() as usize],
        out: Execution { per_function: vec![(0, 0); program.functions().len()], ..Execution::default() },
        tails,
    };
    sim.activation(program.entry(), InstanceId(0), 0);
    sim.out
}

const MAX_DEPTH: usize = 6;

impl Sim<'_> {
    /// Fetches one instruction; whether it missed.
    fn fetch(&mut self, i: Insn) -> bool {
        let g = self.plan.geometry;
        let mut miss = false;
        for l in g.line_of(i.addr)..=g.line_of(i.addr + u64::from(i.size) - 1) {
            let set = &mut self.cache[g.set_of(l) as usize];
            match set.iter().position(|&x| x == l) {
                Some(k) => set[..=k].rotate_right(1),
                None => {
                    miss = true;
                    set.insert(0, l);
                    set.truncate(g.assoc as usize);
                }
            }
        }
        miss
    }

    fn activation(&mut self, p: ProcId, inst: InstanceId, depth: usize) {
        let f = self.program.function(p);
        let adj = f.cfg.adjacency();
        let mut v = f.cfg.entry();
        let (mut steps, mut piece, mut outcomes) = (0, Vec::new(), Vec::new());
        loop {
            self.out.blocks += 1;
            for &i in &f.blocks[v.index()].insns {
                let m = self.fetch(i);
                outcomes.push(m);
                self.out.per_function[p.index()].0 += 1;
                self.out.per_function[p.index()].1 += u64::from(m);
            }
            piece.push(v);
            self.out.steps.push(Step::Block(v));
            if self.tails[p.index()][v.index()] {
                self.up_done(p, inst, &piece, &outcomes);
                piece.clear();
                outcomes.clear();
            }
            if let Some(call) = &f.blocks[v.index()].call {
                let mut options: Vec<Option<ProcId>> = call
                    .procs
                    .iter()
                    .filter(|q| depth < MAX_DEPTH || q.index() > p.index())
                    .map(|&q| Some(q))
                    .collect();
                if call.foreign {
                    options.push(None);
                }
                match options[self.rng.below(options.len())] {
                    Some(q) => {
                        let c = self.plan.instances().callee(inst, v, q).expect("a reachable call has its instance");
                        self.out.steps.push(Step::Call(v, q));
                        self.activation(q, c, depth + 1);
                    }
                    None if depth < MAX_DEPTH => {
                        for _ in 0..self.rng.below(3) {
                            let cbs = self.program.callbacks();
                            if cbs.is_empty() {
                                break;
                            }
                            let q = cbs[self.rng.below(cbs.len())];
                            let c = self.plan.instances().callback(q).expect("a callback instance");
                            self.out.steps.push(Step::Callback(q));
                            self.activation(q, c, depth + 1);
                        }
                    }
                    None => {}
                }
            }
            steps += 1;
            let outs: Vec<_> =
                adj.out_edges(v).iter().copied().filter(|&e| f.cfg.edge(e).kind != EdgeKind::ExitToEntry).collect();
            let e = if steps > 30 { progress(f, v) } else { outs[self.rng.below(outs.len())] };
            let ed = f.cfg.edge(e);
            if ed.to == f.cfg.exit() {
                assert!(piece.is_empty(), "a function returns from a tail");
                self.out.steps.push(Step::Return);
                return;
            }
            v = ed.to;
        }
    }

    fn up_done(&mut self, p: ProcId, inst: InstanceId, piece: &[BlockId], outcomes: &[bool]) {
        let up = self.plan.graph.uppas[p.index()].find(piece).unwrap_or_else(|| panic!("{piece:?} is no UP"));
        let node = self.plan.graph.up_node(inst, up as u32).expect("a node");
        assert!(self.plan.nodes[node as usize].reached, "the run reached node {node}, which the analysis did not");
        self.out.events.push(node);
        for ((c, fm), &m) in self.plan.insn_categories(node as usize).iter().zip(outcomes) {
            let x = &mut self.out.by_category[*c as usize];
            x.0 += 1;
            x.1 += u64::from(m);
            match c {
                Category::AlwaysHit => assert!(!m, "an always-hit fetch missed (node {node})"),
                Category::AlwaysMiss => assert!(m, "an always-miss fetch hit (node {node})"),
                Category::FirstMiss => {
                    let y = self.out.first_miss.entry(fm.expect("a first-miss line")).or_default();
                    y.0 += 1;
                    y.1 += u64::from(m);
                }
                Category::Conflict => {}
            }
        }
    }
}

/// The progress edge of `v` (the lowest-numbered edge to a later block or EXIT, as [`crate::random_cfg`]
/// makes the first out-edge of every block).
fn progress(f: &Function, v: BlockId) -> crate::graph::EdgeId {
    f.cfg.edge_ids().find(|&e| f.cfg.edge(e).from == v).expect("every random block has a progress edge")
}
