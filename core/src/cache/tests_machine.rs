//! Property test of the real-binary path (`pathprof icache`): random machine code — blocks with several calls,
//! tail calls, indirect jumps, blocks without successors, straddling instructions — modelled by
//! [`model_function`], classified, and replayed the way `pathprof icache` replays a trace (fetch ranges of
//! machine blocks completing segments, calls entering callees or foreign code calling back). The counts must
//! equal a concrete LRU simulation of every fetch of the same random runs.

use super::classify::classify;
use super::instances::DEFAULT_INSTANCE_BUDGET;
use super::lru::LruCache;
use super::machine_map::MachineSucc;
use super::machine_model::{foreign_start, model_function, MachineCode, Segments};
use super::program::{CallTarget, Geometry, Insn, Program};
use super::replay::{Activation, StaticRun};
use crate::melski_reps::program::ProcId;
use crate::test_rng::Rng;
use proptest::prelude::*;

/// One random machine function: per block its instructions, calls (index, callee: `None` = foreign) and
/// successors (`None` = an indirect jump, whose real targets are `hidden`).
struct MachineFn {
    insns: Vec<Vec<Insn>>,
    calls: Vec<Vec<(usize, Option<usize>)>>,
    succs: Vec<Option<Vec<MachineSucc>>>,
    hidden: Vec<Vec<MachineSucc>>,
    /// Per block: the successor that makes progress (the next block, or EXIT from the last).
    progress: Vec<MachineSucc>,
}

/// Functions 0..n; function p calls only functions above p directly (foreign code may call any callback).
fn random_machine(n: usize, rng: &mut Rng) -> Vec<MachineFn> {
    let mut addr = rng.below(64) as u64;
    (0..n)
        .map(|p| {
            let nb = 1 + rng.below(6);
            let mut f = MachineFn { insns: vec![], calls: vec![], succs: vec![], hidden: vec![], progress: vec![] };
            for b in 0..nb {
                if rng.chance(3) {
                    addr += rng.below(40) as u64;
                }
                let k = rng.below(6);
                let insns: Vec<Insn> = (0..k)
                    .map(|_| {
                        let i = Insn { addr, size: 1 + rng.below(7) as u32 };
                        addr += u64::from(i.size);
                        i
                    })
                    .collect();
                let mut calls: Vec<(usize, Option<usize>)> = Vec::new();
                for i in 0..k {
                    if rng.chance(4) {
                        let direct = p + 1 < n && rng.chance(2);
                        calls.push((i, direct.then(|| p + 1 + rng.below(n - p - 1))));
                    }
                }
                // A progress successor (the next block, or EXIT for the last) keeps runs finite.
                let progress = if b + 1 < nb { MachineSucc::Block(b + 1) } else { MachineSucc::Exit };
                f.progress.push(progress);
                let mut s = vec![progress];
                for _ in 0..rng.below(3) {
                    s.push(if rng.chance(4) { MachineSucc::Exit } else { MachineSucc::Block(rng.below(nb)) });
                }
                if rng.chance(8) && b + 1 < nb {
                    s = vec![]; // no successor: the run ends here (abort)
                }
                s.sort();
                s.dedup();
                let indirect = rng.chance(6);
                f.succs.push((!indirect).then(|| s.clone()));
                f.hidden.push(s);
                f.insns.push(insns);
                f.calls.push(calls);
            }
            f
        })
        .collect()
}

/// A concrete run: every fetch through an LRU cache, and the replay fed as `pathprof icache` feeds it.
struct Run<'a> {
    fns: &'a [MachineFn],
    segs: &'a [Segments],
    callbacks: &'a [usize],
    rng: Rng,
    cache: LruCache,
    /// Per function (model numbering, 0 = start): (accesses, misses).
    counts: Vec<(u64, u64)>,
    replay: StaticRun<'a>,
    plan: &'a super::classify::CachePlan,
    ended: bool,
}

/// Completes the segments fetching `from..to` of block `b` completes; checks each finished UP's fetch outcomes
/// (`outcomes`: the activation's since its last UP) against the categories.
#[allow(clippy::too_many_arguments)]
fn complete(
    replay: &mut StaticRun<'_>,
    plan: &super::classify::CachePlan,
    segs: &Segments,
    a: &mut Activation,
    b: usize,
    from: usize,
    to: usize,
    outcomes: &mut Vec<bool>,
) {
    segs.completed(b, from, to, |s| {
        if let Some(node) = replay.block(a, s).expect("a UP walk") {
            let cats = plan.insn_categories(node as usize);
            assert_eq!(cats.len(), outcomes.len(), "node {node}");
            for (k, ((c, _), &m)) in cats.iter().zip(outcomes.iter()).enumerate() {
                match c {
                    super::classify::Category::AlwaysHit => assert!(!m, "node {node} insn {k}: always-hit missed"),
                    super::classify::Category::AlwaysMiss => assert!(m, "node {node} insn {k}: always-miss hit"),
                    _ => {}
                }
            }
            outcomes.clear();
        }
    });
}

impl Run<'_> {
    /// Runs function `p` (model id `p + 1`) as activation `a`; returns false when the run ended inside.
    fn activation(&mut self, p: usize, mut a: Activation, depth: usize) {
        let f = &self.fns[p];
        let mut b = 0usize;
        let mut steps = 0;
        let mut outcomes = Vec::new();
        loop {
            let mut cursor = 0;
            for i in 0..f.insns[b].len() {
                let m = self.cache.fetch(f.insns[b][i]);
                self.counts[p + 1].0 += 1;
                self.counts[p + 1].1 += u64::from(m);
                outcomes.push(m);
                let Some(&(_, callee)) = f.calls[b].iter().find(|c| c.0 == i) else { continue };
                complete(&mut self.replay, self.plan, &self.segs[p], &mut a, b, cursor, i + 1, &mut outcomes);
                cursor = i + 1;
                let seg = self.segs[p].segment_of(b, i);
                match callee {
                    Some(q) => {
                        let c = self.replay.call(&a, seg, ProcId(q as u32 + 1)).expect("an instance");
                        self.activation(q, c, depth + 1);
                    }
                    None if depth < 5 => {
                        for _ in 0..self.rng.below(3) {
                            let q = self.callbacks[self.rng.below(self.callbacks.len())];
                            let c = self.replay.callback(ProcId(q as u32 + 1)).expect("a callback instance");
                            self.activation(q, c, depth + 1);
                            if self.ended {
                                return;
                            }
                        }
                    }
                    None => {}
                }
                if self.ended {
                    return;
                }
            }
            let len = f.insns[b].len();
            complete(&mut self.replay, self.plan, &self.segs[p], &mut a, b, cursor, len, &mut outcomes);
            steps += 1;
            let s = &f.hidden[b];
            if s.is_empty() {
                self.ended = true;
                return;
            }
            let next = if steps > 25 { f.progress[b] } else { s[self.rng.below(s.len())] };
            match next {
                MachineSucc::Exit => {
                    assert!(a.between_ups(), "a return ends a UP");
                    return;
                }
                MachineSucc::Block(j) => b = j,
            }
        }
    }
}

fn check(n: usize, seed: u64, budget: usize) -> (u64, u64) {
    let mut rng = Rng::new(seed);
    let fns = random_machine(n, &mut rng);
    let mut functions = vec![foreign_start()];
    let mut segs = Vec::new();
    for (p, f) in fns.iter().enumerate() {
        let code: Vec<MachineCode<'_>> = (0..f.insns.len())
            .map(|b| MachineCode {
                insns: &f.insns[b],
                calls: f.calls[b]
                    .iter()
                    .map(|&(i, q)| {
                        (i, q.map_or_else(CallTarget::foreign, |q| CallTarget::direct(ProcId(q as u32 + 1))))
                    })
                    .collect(),
                succs: f.succs[b].as_deref(),
            })
            .collect();
        let (m, s) = model_function(&format!("f{p}"), &code);
        functions.push(m);
        segs.push(s);
    }
    // Function 0 is entered from the start; others may be called back.
    let mut callbacks: Vec<usize> = (1..n).filter(|_| rng.chance(2)).collect();
    callbacks.push(0);
    let program =
        Program::new(functions, ProcId(0), callbacks.iter().map(|&q| ProcId(q as u32 + 1)).collect()).unwrap();
    let line = [4u32, 8, 16][rng.below(3)];
    let assoc = 1 + rng.below(3) as u32;
    let sets = [1u64, 2, 4][rng.below(3)];
    let geometry = Geometry::new(sets * u64::from(assoc) * u64::from(line), assoc, line).unwrap();
    let plan = classify(&program, &geometry, budget);
    let mut run = Run {
        fns: &fns,
        segs: &segs,
        callbacks: &callbacks,
        rng: Rng::new(seed ^ 0x5eed),
        cache: LruCache::new(geometry),
        counts: vec![(0, 0); n + 1],
        replay: StaticRun::new(&plan),
        plan: &plan,
        ended: false,
    };
    let mut start = run.replay.entry();
    run.replay.block(&mut start, crate::graph::BlockId(0)).expect("the start is a UP");
    // Several "threads" one after another in one cache, each entered from foreign code.
    for _ in 0..1 + run.rng.below(3) {
        let q = callbacks[run.rng.below(callbacks.len())];
        let a = run.replay.callback(ProcId(q as u32 + 1)).expect("a callback instance");
        run.activation(q, a, 0);
        if run.ended {
            break;
        }
    }
    let (per, total) = run.replay.report();
    let got: Vec<(u64, u64)> = per.iter().map(|c| (c.accesses, c.misses)).collect();
    assert_eq!(got, run.counts, "static-driven vs full simulation, {geometry:?}");
    (total.accesses, total.accesses - total.categories[3])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn machine_code_replayed_through_the_categories_counts_like_a_full_simulation(
        n in 1usize..5, seed: u64, budget in prop::sample::select(vec![2usize, DEFAULT_INSTANCE_BUDGET])
    ) {
        check(n, seed, budget);
    }
}
