//! Random CFGs for core's property tests, and random executions of them, written once for every module that
//! checks derived counts against simulated ones (`propagate`, `vertex_profile`).

use crate::graph::{BlockId, Cfg, Edge, EdgeId, EdgeKind};
use crate::test_rng::Rng;
use proptest::prelude::*;

/// A random CFG: `progress[i]` is block i's "forward" edge (to a higher block or EXIT), so every block reaches
/// EXIT; plus random extra edges (back edges, self-loops, parallel edges, returns) and, when asked for, at most
/// one Termination edge per block. Blocks without in-edges are unreachable.
#[derive(Debug, Clone)]
pub(crate) struct RandomCfg {
    pub(crate) cfg: Cfg,
    pub(crate) progress: Vec<EdgeId>,
}

/// Graphs of 1..=`max_blocks` blocks with fewer than `max_extra` extra edges; `terminations`: also random
/// Termination edges.
pub(crate) fn random_cfg(max_blocks: u32, max_extra: usize, terminations: bool) -> impl Strategy<Value = RandomCfg> {
    (1u32..=max_blocks)
        .prop_flat_map(move |n| {
            (
                Just(n),
                prop::collection::vec(any::<u32>(), n as usize),
                prop::collection::vec((0..n, 0..=n), 0..max_extra),
                prop::collection::vec(any::<bool>().prop_map(move |b| b && terminations), n as usize),
            )
        })
        .prop_map(|(n, fwd, extra, term)| {
            let mut edges = Vec::new();
            let mut succ = vec![0u32; n as usize];
            let mut push = |edges: &mut Vec<Edge>, f: u32, t: u32, terminate: bool| {
                let kind = if terminate {
                    EdgeKind::Termination
                } else if t == n {
                    EdgeKind::Return
                } else {
                    succ[f as usize] += 1;
                    EdgeKind::Branch { succ: succ[f as usize] - 1 }
                };
                edges.push(Edge { from: BlockId(f), to: BlockId(t), kind });
                EdgeId::from_index(edges.len() - 1)
            };
            let mut progress = Vec::new();
            for i in 0..n {
                let t = i + 1 + fwd[i as usize] % (n - i); // in i+1..=n
                progress.push(push(&mut edges, i, t, false));
            }
            for (f, t) in extra {
                push(&mut edges, f, t, false);
            }
            for (i, &b) in term.iter().enumerate() {
                if b {
                    push(&mut edges, i as u32, n, true);
                }
            }
            edges.push(Edge { from: BlockId(n), to: BlockId(0), kind: EdgeKind::ExitToEntry });
            RandomCfg { cfg: Cfg::new(n, edges).unwrap(), progress }
        })
}

/// True edge counts of `runs` random executions: random out-edges, a Termination edge taken with probability
/// 1/4 where present, and after 40 steps only progress edges (so every walk ends).
pub(crate) fn simulate(rc: &RandomCfg, rng: &mut Rng, runs: usize) -> Vec<u64> {
    let g = &rc.cfg;
    let adj = g.adjacency();
    let mut counts = vec![0u64; g.num_edges()];
    for _ in 0..runs {
        let mut v = g.entry();
        let mut steps = 0;
        while v != g.exit() {
            let outs = adj.out_edges(v);
            let term = outs.iter().copied().find(|&e| g.edge(e).kind == EdgeKind::Termination);
            let real: Vec<EdgeId> = outs.iter().copied().filter(|&e| g.edge(e).kind != EdgeKind::Termination).collect();
            let e = match term {
                Some(t) if rng.below(4) == 0 => t,
                _ if steps > 40 => rc.progress[v.index()],
                _ => real[rng.below(real.len())],
            };
            counts[e.index()] += 1;
            v = g.edge(e).to;
            steps += 1;
        }
        counts[g.exit_to_entry().index()] += 1;
    }
    counts
}
