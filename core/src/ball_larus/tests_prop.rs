//! Tests for Ball–Larus path profiling across its modules (`dag`, `budget`, `numbering`, `increments`,
//! `regenerate`, `counts`, `arrivals`): loops and odd graphs, cuts for huge path spaces, and property tests on
//! random CFGs that simulate the instrumented program exactly as the pass will emit it. The checkers here are
//! shared with the paper oracles of `tests_paper.rs`.

use super::arrivals::{net_counts_from_arrivals, net_counts_with_reentries, truncation_block};
use super::budget::DEFAULT_PATH_BUDGET;
use super::counts::{edge_counts_from_paths, signed_edge_counts_from_dag_paths};
use super::dag::{CfgEdgeRole, DagEdgeId, DagEdgeKind, DagError, PathDag};
use super::hoisting::hoisted_count_sites;
use super::increments::{IncrementError, Increments};
use super::numbering::{Numbering, NumberingError};
use super::regenerate::{check_path, decode, encode, to_cfg_path, DecodeError, PathEnd, PathStart};
use super::resets::ResetRule;
use crate::dfs::depth_first;
use crate::fixtures::lecture_cfg;
use crate::graph::{test_cfg, BlockId, Cfg, Edge, EdgeId, EdgeKind};
use crate::reentry::add_fork_reentries;
use crate::test_rng::Rng;
use proptest::prelude::*;
use std::collections::{BTreeMap, VecDeque};

// ---------------------------------------------------------------------------------------------------------------
// Fixtures and checkers
// ---------------------------------------------------------------------------------------------------------------

pub(super) fn b(i: u32) -> BlockId {
    BlockId(i)
}

pub(super) fn d(i: u32) -> DagEdgeId {
    DagEdgeId(i)
}

pub(super) fn dag_of(cfg: &Cfg) -> PathDag {
    let adj = cfg.adjacency();
    PathDag::build(cfg, &adj, &depth_first(cfg, &adj))
}

fn dag_with_budget(cfg: &Cfg, budget: u128) -> Result<PathDag, DagError> {
    let adj = cfg.adjacency();
    PathDag::build_with_budget(cfg, &adj, &depth_first(cfg, &adj), budget)
}

/// Every ENTRY→EXIT path of the DAG by brute force (an ENTRY self-loop only as first edge); `None` above `limit`.
pub(super) fn enumerate_paths(dag: &PathDag, limit: usize) -> Option<Vec<Vec<DagEdgeId>>> {
    let mut paths = Vec::new();
    let mut stack: Vec<(BlockId, Vec<DagEdgeId>)> = vec![(dag.entry(), Vec::new())];
    while let Some((v, path)) = stack.pop() {
        if v == dag.exit() {
            paths.push(path);
            if paths.len() > limit {
                return None;
            }
            continue;
        }
        for &e in dag.out_edges(v).iter().rev() {
            let ed = dag.edge(e);
            if ed.from == ed.to && !path.is_empty() {
                continue;
            }
            let mut p = path.clone();
            p.push(e);
            stack.push((ed.to, p));
        }
        if stack.len() > 100 * limit {
            return None;
        }
    }
    Some(paths)
}

pub(super) fn val_sum(n: &Numbering, path: &[DagEdgeId]) -> u128 {
    path.iter().map(|&e| n.val(e)).sum()
}

pub(super) fn inc_sum(inc: &Increments, path: &[DagEdgeId]) -> i128 {
    path.iter().map(|&e| inc.inc(e)).sum()
}

/// Structural invariants of a [`PathDag`] built from `cfg` (see the `dag.rs` module docs).
pub(super) fn check_dag(cfg: &Cfg, dag: &PathDag) {
    let adj = cfg.adjacency();
    let dfs = depth_first(cfg, &adj);
    let (entry, exit) = (dag.entry(), dag.exit());
    assert_eq!(dag.num_vertices(), cfg.num_vertices());
    assert_eq!(dag.num_cfg_edges(), cfg.num_edges());
    // Ids grouped by source vertex; EXIT->ENTRY last.
    let e2e = dag.exit_to_entry();
    assert_eq!(e2e.index(), dag.num_edges() - 1);
    assert_eq!(
        *dag.edge(e2e),
        crate::ball_larus::dag::DagEdge { from: exit, to: entry, kind: DagEdgeKind::ExitToEntry }
    );
    assert!(dag.edges().windows(2).all(|w| w[0].from <= w[1].from), "ids not grouped by source");
    // Topological order.
    let topo = dag.topological_order();
    assert_eq!(topo.first(), Some(&entry));
    assert_eq!(topo.last(), Some(&exit));
    let mut pos = vec![None; dag.num_vertices()];
    for (i, &v) in topo.iter().enumerate() {
        assert!(pos[v.index()].is_none(), "{v} twice in topological order");
        pos[v.index()] = Some(i);
    }
    for v in cfg.vertices() {
        assert_eq!(pos[v.index()].is_some(), v == exit || dfs.is_reachable(v), "{v} membership");
        assert_eq!(dag.contains_vertex(v), pos[v.index()].is_some());
    }
    for e in dag.edge_ids().filter(|&e| e != e2e) {
        let ed = dag.edge(e);
        assert!(dag.out_edges(ed.from).contains(&e) && dag.in_edges(ed.to).contains(&e));
        if ed.from == ed.to {
            assert_eq!(ed.from, entry, "only ENTRY may have self-loops");
            assert!(matches!(ed.kind, DagEdgeKind::EntrySurrogate { .. }));
        } else {
            assert!(pos[ed.from.index()].unwrap() < pos[ed.to.index()].unwrap(), "{e} goes backwards");
        }
        // Kinds agree with the cfg.
        let ce = |x: EdgeId| *cfg.edge(x);
        match ed.kind {
            DagEdgeKind::Real(x) => assert_eq!((ed.from, ed.to), (ce(x).from, ce(x).to)),
            DagEdgeKind::EntrySurrogate { back } => {
                assert!(dfs.is_back_edge(back));
                assert_eq!((ed.from, ed.to), (entry, ce(back).to));
            }
            DagEdgeKind::ExitSurrogate { back } => {
                assert!(dfs.is_back_edge(back));
                assert_eq!((ed.from, ed.to), (ce(back).from, exit));
            }
            DagEdgeKind::SplitEntry { edge } => {
                assert!(dag.cut_edges().contains(&edge));
                assert_eq!((ed.from, ed.to), (entry, ce(edge).to));
            }
            DagEdgeKind::SplitExit { edge } => {
                // A cut vertex's edge, or an edge entering a reset loop (its path restarts at the header).
                let reset_entry = matches!(dag.cfg_edge_role(edge), CfgEdgeRole::Cut { entry: n, .. }
                    if matches!(dag.edge(n).kind, DagEdgeKind::EntrySurrogate { .. }));
                assert!(dag.cut_vertices().contains(&ce(edge).from) || reset_entry);
                assert_eq!((ed.from, ed.to), (ce(edge).from, exit));
            }
            DagEdgeKind::ExitToEntry => panic!("second EXIT->ENTRY edge {e}"),
        }
    }
    // Recorded successor order: slot edges by EdgeId, then surrogates by EdgeId (entry side first), then
    // ENTRY self-loops.
    for &v in topo {
        let key = |e: DagEdgeId| {
            let ed = dag.edge(e);
            let id = ed.kind.cfg_edge().unwrap();
            match ed.kind {
                DagEdgeKind::Real(_) | DagEdgeKind::SplitExit { .. } => (0, id, 0),
                _ if ed.from == ed.to => (2, id, 0),
                DagEdgeKind::ExitSurrogate { .. } => (1, id, 1),
                _ => (1, id, 0),
            }
        };
        let keys: Vec<_> = dag.out_edges(v).iter().map(|&e| key(e)).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "successor order of {v}: {keys:?}");
    }
    // Roles.
    for e in cfg.edge_ids() {
        let ce = cfg.edge(e);
        let role = dag.cfg_edge_role(e);
        match role {
            CfgEdgeRole::Unreachable => {
                assert!(ce.kind != EdgeKind::ExitToEntry && !dfs.is_reachable(ce.from))
            }
            CfgEdgeRole::Real(x) => assert_eq!(dag.edge(x).kind, DagEdgeKind::Real(e)),
            // Into a reset header, every path starts with the surrogate of one back edge into it.
            CfgEdgeRole::Back { exit: x, entry: n } => {
                assert_eq!(dag.edge(x).kind, DagEdgeKind::ExitSurrogate { back: e });
                assert!(matches!(dag.edge(n).kind, DagEdgeKind::EntrySurrogate { back } if cfg.edge(back).to == ce.to));
                assert!(dag.back_edges().contains(&e));
            }
            CfgEdgeRole::Cut { exit: x, entry: n } => {
                assert_eq!(dag.edge(x).kind, DagEdgeKind::SplitExit { edge: e });
                assert!(match dag.edge(n).kind {
                    DagEdgeKind::SplitEntry { edge } => edge == e,
                    DagEdgeKind::EntrySurrogate { back } => cfg.edge(back).to == ce.to && !dfs.is_back_edge(e),
                    _ => false,
                });
            }
            CfgEdgeRole::ExitToEntry(x) => assert_eq!(x, e2e),
        }
    }
    assert_eq!(dag.back_edges(), dfs.back_edges.as_slice());
}

/// Numbering is dense and bijective, and decode/encode are inverse; returns all paths (if enumerable).
pub(super) fn check_numbering(dag: &PathDag, n: &Numbering, limit: usize) -> Option<Vec<Vec<DagEdgeId>>> {
    let paths = enumerate_paths(dag, limit)?;
    assert_eq!(paths.len() as u128, n.num_paths(), "NumPaths(ENTRY) vs brute force");
    let mut numbers: Vec<u128> = paths.iter().map(|p| val_sum(n, p)).collect();
    numbers.sort_unstable();
    assert!(numbers.iter().enumerate().all(|(i, &x)| x == i as u128), "numbering not dense: {numbers:?}");
    for p in &paths {
        let r = encode(dag, n, p).unwrap();
        assert_eq!(decode(dag, n, r).unwrap(), *p, "decode(encode(p)) for r = {r}");
        check_path(dag, p).unwrap();
        to_cfg_path(dag, p).unwrap();
    }
    assert!(matches!(decode(dag, n, n.num_paths()), Err(DecodeError::OutOfRange { .. })));
    Some(paths)
}

/// One recorded path segment of a simulated execution: its DAG edges, blocks and real cfg edges.
#[derive(Default, Clone, Debug)]
struct Segment {
    dag: Vec<DagEdgeId>,
    blocks: Vec<BlockId>,
    edges: Vec<EdgeId>,
}

/// What a simulated execution measured (through the instrumentation) and what really happened.
struct Simulation {
    /// `count[r]` as the instrumented program would leave it.
    counted: BTreeMap<u128, u64>,
    /// The actual path segments (split at back and cut edges).
    segments: Vec<Segment>,
    edge_counts: Vec<u128>,
    block_counts: Vec<u128>,
}

/// Distance (in edges) from every vertex to EXIT, ignoring EXIT->entry; `usize::MAX` if EXIT is unreachable.
fn distance_to_exit(cfg: &Cfg) -> Vec<usize> {
    let adj = cfg.adjacency();
    let mut dist = vec![usize::MAX; cfg.num_vertices()];
    dist[cfg.exit().index()] = 0;
    let mut q = VecDeque::from([cfg.exit()]);
    while let Some(v) = q.pop_front() {
        for &e in adj.in_edges(v) {
            let ed = cfg.edge(e);
            if ed.kind != EdgeKind::ExitToEntry && dist[ed.from.index()] == usize::MAX {
                dist[ed.from.index()] = dist[v.index()] + 1;
                q.push_back(ed.from);
            }
        }
    }
    dist
}

/// What the instrumented program counts for a block that may be left abnormally (a `Termination` edge).
#[derive(Copy, Clone, PartialEq, Eq)]
enum Truncation {
    /// Its truncated path when the `Termination` edge is taken (the net count the decoder reports).
    Net,
    /// Its truncated path on every arrival at the block, as the pass emits it (see `arrivals`).
    Arrivals,
}

/// Random walks entry→EXIT through the cfg, instrumented exactly as the pass does it: r = 0 on entry,
/// `r += Inc` on each DAG edge, at a back/cut edge `count[r + Inc(exit surrogate)]++; r = Inc(entry
/// surrogate)`, on an edge into EXIT `count[r + Inc]++` — except that with [`Truncation::Arrivals`] a block
/// with a `Termination` edge counts `count[r + Inc(Termination)]++` on arrival instead of when it is taken.
/// Every reachable block must reach EXIT.
fn simulate(
    cfg: &Cfg,
    dag: &PathDag,
    inc: &Increments,
    rng: &mut Rng,
    invocations: usize,
    max_steps: usize,
    truncation: Truncation,
) -> Simulation {
    let adj = cfg.adjacency();
    let dist = distance_to_exit(cfg);
    let (entry, exit) = (cfg.entry(), cfg.exit());
    let mut counted = BTreeMap::new();
    let mut segments = Vec::new();
    let mut edge_counts = vec![0u128; cfg.num_edges()];
    let mut block_counts = vec![0u128; cfg.num_vertices()];
    for _ in 0..invocations {
        edge_counts[cfg.exit_to_entry().index()] += 1;
        block_counts[entry.index()] += 1;
        let mut v = entry;
        let mut r: i128 = 0;
        let mut seg = Segment { blocks: vec![entry], ..Segment::default() };
        let mut steps = 0;
        while v != exit {
            let outs = adj.out_edges(v);
            if truncation == Truncation::Arrivals {
                for &t in outs.iter().filter(|&&t| cfg.edge(t).kind == EdgeKind::Termination) {
                    if let CfgEdgeRole::Real(dt) = dag.cfg_edge_role(t) {
                        bump(&mut counted, r + inc.inc(dt));
                    }
                }
            }
            assert!(!outs.is_empty() && dist[v.index()] != usize::MAX, "walk stuck at {v}");
            let e = if steps < max_steps {
                outs[rng.below(outs.len())]
            } else {
                *outs.iter().find(|&&e| dist[cfg.edge(e).to.index()] < dist[v.index()]).unwrap()
            };
            steps += 1;
            let to = cfg.edge(e).to;
            edge_counts[e.index()] += 1;
            block_counts[to.index()] += 1;
            match dag.cfg_edge_role(e) {
                CfgEdgeRole::Real(de) => {
                    r += inc.inc(de);
                    seg.dag.push(de);
                    seg.edges.push(e);
                    if to == exit {
                        if !(truncation == Truncation::Arrivals && cfg.edge(e).kind == EdgeKind::Termination) {
                            bump(&mut counted, r);
                        }
                        segments.push(std::mem::take(&mut seg));
                    } else {
                        seg.blocks.push(to);
                    }
                }
                CfgEdgeRole::Back { exit: x, entry: n } | CfgEdgeRole::Cut { exit: x, entry: n } => {
                    seg.dag.push(x);
                    bump(&mut counted, r + inc.inc(x));
                    segments.push(std::mem::take(&mut seg));
                    seg = Segment { dag: vec![n], blocks: vec![to], edges: Vec::new() };
                    r = inc.inc(n);
                }
                role => panic!("executed {e} with role {role:?}"),
            }
            v = to;
        }
    }
    Simulation { counted, segments, edge_counts, block_counts }
}

fn bump(counted: &mut BTreeMap<u128, u64>, r: i128) {
    let r = u128::try_from(r).expect("path register went negative at a count");
    *counted.entry(r).or_insert(0) += 1;
}

/// One process of a forking path-mode execution: what its instrumentation counted and what really ran there.
#[derive(Clone, Default)]
struct ForkedProcess {
    /// `count[r]`, arrivals included.
    counted: BTreeMap<u128, i128>,
    /// Fork re-entries recorded per truncated path number.
    reentries: BTreeMap<u128, i128>,
    /// True edge counts of the process (what ran in it).
    edges: Vec<i128>,
    /// True block counts: in-edges plus re-entries (EXIT: departures).
    blocks: Vec<i128>,
}

/// [`simulate`] with [`Truncation::Arrivals`] and fork points: on arrival at a block with a `Termination` edge the
/// call may `fork()` (probability 1/3, at most 8 processes). The child's counters start at zero; it dies inside
/// the call (probability 1/4: nothing more of this activation runs there), or resumes after it with the same path
/// register, records one re-entry of the truncated path — as the instrumented code does when the fork generation
/// changed across the call — and takes any out-edge (`Termination`: a later call of the block does not return);
/// then it runs the remaining invocations. Children fork again.
fn simulate_forking(
    cfg: &Cfg,
    dag: &PathDag,
    inc: &Increments,
    rng: &mut Rng,
    invocations: usize,
) -> Vec<ForkedProcess> {
    let adj = cfg.adjacency();
    let dist = distance_to_exit(cfg);
    let (entry, exit) = (cfg.entry(), cfg.exit());
    let mut pending: Vec<(Option<(BlockId, i128)>, usize)> = vec![(None, invocations)];
    let mut done = Vec::new();
    while let Some((mut resume, mut left)) = pending.pop() {
        let mut p = ForkedProcess {
            edges: vec![0; cfg.num_edges()],
            blocks: vec![0; cfg.num_vertices()],
            ..ForkedProcess::default()
        };
        loop {
            let (mut v, mut r, mut resumed) = match resume.take() {
                Some((v, r)) => (v, r, true),
                None if left == 0 => break,
                None => {
                    left -= 1;
                    p.edges[cfg.exit_to_entry().index()] += 1;
                    p.blocks[entry.index()] += 1;
                    (entry, 0, false)
                }
            };
            let mut steps = 0;
            while v != exit {
                let outs = adj.out_edges(v);
                let term = outs.iter().copied().find(|&t| cfg.edge(t).kind == EdgeKind::Termination);
                if let Some(CfgEdgeRole::Real(dt)) = term.map(|t| dag.cfg_edge_role(t)) {
                    let t = u128::try_from(r + inc.inc(dt)).unwrap();
                    if resumed {
                        *p.reentries.entry(t).or_insert(0) += 1;
                        p.blocks[v.index()] += 1;
                    } else {
                        *p.counted.entry(t).or_insert(0) += 1;
                        if done.len() + pending.len() < 7 && rng.below(3) == 0 && rng.below(4) != 0 {
                            pending.push((Some((v, r)), left));
                        }
                    }
                }
                resumed = false;
                let e = if steps < 40 {
                    outs[rng.below(outs.len())]
                } else {
                    *outs.iter().find(|&&e| dist[cfg.edge(e).to.index()] < dist[v.index()]).unwrap()
                };
                steps += 1;
                let to = cfg.edge(e).to;
                p.edges[e.index()] += 1;
                p.blocks[to.index()] += 1;
                match dag.cfg_edge_role(e) {
                    CfgEdgeRole::Real(de) => {
                        r += inc.inc(de);
                        if to == exit && cfg.edge(e).kind != EdgeKind::Termination {
                            *p.counted.entry(u128::try_from(r).unwrap()).or_insert(0) += 1;
                        }
                    }
                    CfgEdgeRole::Back { exit: x, entry: n } | CfgEdgeRole::Cut { exit: x, entry: n } => {
                        *p.counted.entry(u128::try_from(r + inc.inc(x)).unwrap()).or_insert(0) += 1;
                        r = inc.inc(n);
                    }
                    role => panic!("executed {e} with role {role:?}"),
                }
                v = to;
            }
        }
        done.push(p);
    }
    done
}

/// Runs [`simulate`] and checks counts, segments and derived edge/block counts against the truth.
pub(super) fn check_simulation(
    cfg: &Cfg,
    dag: &PathDag,
    n: &Numbering,
    inc: &Increments,
    seed: u64,
    invocations: usize,
) {
    let mut rng = Rng::new(seed);
    let sim = simulate(cfg, dag, inc, &mut rng, invocations, 40, Truncation::Net);
    let mut truth: BTreeMap<u128, u64> = BTreeMap::new();
    for s in &sim.segments {
        check_path(dag, &s.dag).unwrap();
        *truth.entry(val_sum(n, &s.dag)).or_insert(0) += 1;
        let cp = to_cfg_path(dag, &s.dag).unwrap();
        assert_eq!(cp.blocks, s.blocks, "blocks of segment {:?}", s.dag);
        assert_eq!(cp.edges, s.edges, "edges of segment {:?}", s.dag);
        let first = dag.edge(s.dag[0]).kind;
        assert_eq!(cp.starts_at_loop_header(), first.starts_segment());
        assert_eq!(cp.ends_at_back_edge(), dag.edge(*s.dag.last().unwrap()).kind.ends_segment());
    }
    assert_eq!(sim.counted, truth, "instrumented counts vs. brute-force path counts");
    let derived = edge_counts_from_paths(cfg, dag, n, sim.counted.iter().map(|(&r, &c)| (r, c))).unwrap();
    assert_eq!(derived.edges, sim.edge_counts, "edge counts from paths");
    assert_eq!(derived.blocks, sim.block_counts, "block counts from paths");
    assert_eq!(derived.invocations, invocations as u128);
}

// ---------------------------------------------------------------------------------------------------------------
// Loops, odd graphs, errors
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn ball_larus_1996_loop_surrogates_and_instrumentation() {
    // 0 → 1 (header), 1 → 2, 2 → 1 (back), 2 → 3, 3 → EXIT; plus a second back edge 3 → 1 into the same header.
    let cfg = test_cfg(4, &[(0, 1), (1, 2), (2, 1), (2, 3), (3, 1)], &[3]);
    let dag = dag_of(&cfg);
    check_dag(&cfg, &dag);
    assert_eq!(dag.back_edges(), &[EdgeId(2), EdgeId(4)]);
    let n = Numbering::compute(&dag).unwrap();
    // Paths: {ENTRY, via 2→1, via 3→1} × ends {2→1 back, 3→1 back, 3→EXIT} = 3 × 3.
    assert_eq!(n.num_paths(), 9);
    let paths = check_numbering(&dag, &n, 100).unwrap();
    let headers = paths.iter().filter(|p| to_cfg_path(&dag, p).unwrap().starts_at_loop_header()).count();
    assert_eq!(headers, 6);
    let inc = Increments::compute(&dag, &n, &vec![1.0; dag.num_edges()], &[]).unwrap();
    check_simulation(&cfg, &dag, &n, &inc, 11, 30);
}

#[test]
fn entry_block_as_loop_header_uses_an_entry_self_loop() {
    // LLVM forbids it, Cfg::new accepts it: 0 → 1, 1 → 0 (back edge into the entry), 1 → EXIT, 0 → 0.
    let cfg = test_cfg(2, &[(0, 1), (1, 0), (0, 0)], &[1]);
    let dag = dag_of(&cfg);
    check_dag(&cfg, &dag);
    let n = Numbering::compute(&dag).unwrap();
    // From ENTRY without a self-loop: 0→1→EXIT, 0→1→(back)EXIT, 0→(self back)EXIT = 3; times (1 + 2 loops).
    assert_eq!(n.num_paths(), 9);
    let paths = check_numbering(&dag, &n, 100).unwrap();
    let cp: Vec<_> = paths.iter().map(|p| to_cfg_path(&dag, p).unwrap()).collect();
    assert!(cp.iter().any(|c| c.start == PathStart::LoopHeader { back: EdgeId(1) } && c.blocks[0] == b(0)));
    let inc = Increments::compute(&dag, &n, &vec![1.0; dag.num_edges()], &[]).unwrap();
    check_simulation(&cfg, &dag, &n, &inc, 3, 20);
}

#[test]
fn unreachable_blocks_dead_ends_and_exitless_loops_do_not_panic() {
    // 0 → 1 ⇄ 2 (no exit), 0 → 3 (no successors at all), 4 unreachable → 1, 0 → 5 → EXIT.
    let cfg = test_cfg(6, &[(0, 1), (1, 2), (2, 1), (0, 3), (4, 1), (4, 4), (0, 5)], &[5]);
    let dag = dag_of(&cfg);
    check_dag(&cfg, &dag);
    assert!(!dag.contains_vertex(b(4)));
    assert_eq!(dag.cfg_edge_role(EdgeId(4)), CfgEdgeRole::Unreachable);
    let n = Numbering::compute(&dag).unwrap();
    assert_eq!(n.num_paths_from(b(3)), 0, "dead end");
    // ENTRY→1→2→(back) | ENTRY→5→EXIT | (back)→1→2→(back)
    assert_eq!(n.num_paths(), 3);
    check_numbering(&dag, &n, 100).unwrap();
    let inc = Increments::compute(&dag, &n, &vec![1.0; dag.num_edges()], &[]).unwrap();
    for p in enumerate_paths(&dag, 100).unwrap() {
        assert_eq!(inc_sum(&inc, &p), val_sum(&n, &p) as i128);
    }
    // A function with no way out at all has no paths.
    let lone = Cfg::new(1, vec![Edge { from: b(1), to: b(0), kind: EdgeKind::ExitToEntry }]).unwrap();
    let dag = dag_of(&lone);
    let n = Numbering::compute(&dag).unwrap();
    assert_eq!(n.num_paths(), 0);
    assert!(matches!(decode(&dag, &n, 0), Err(DecodeError::OutOfRange { .. })));
}

#[test]
fn termination_edges_end_paths() {
    // 0 → 1, 1 → 0? no: 0 → 1 → 2, 1 may terminate abnormally (Termination 1 → EXIT), 2 returns.
    let edges = vec![
        Edge { from: b(0), to: b(1), kind: EdgeKind::Branch { succ: 0 } },
        Edge { from: b(1), to: b(3), kind: EdgeKind::Termination },
        Edge { from: b(3), to: b(0), kind: EdgeKind::ExitToEntry },
        Edge { from: b(1), to: b(2), kind: EdgeKind::Branch { succ: 0 } },
        Edge { from: b(2), to: b(3), kind: EdgeKind::Return },
    ];
    let cfg = Cfg::new(3, edges).unwrap();
    let dag = dag_of(&cfg);
    check_dag(&cfg, &dag);
    let n = Numbering::compute(&dag).unwrap();
    assert_eq!(n.num_paths(), 2);
    let ends: Vec<PathEnd> = (0..2).map(|r| to_cfg_path(&dag, &decode(&dag, &n, r).unwrap()).unwrap().end).collect();
    // Slot order = EdgeId order at block 1: the Termination edge (e1) comes before 1 → 2 (e3).
    assert_eq!(ends, vec![PathEnd::Exit { edge: EdgeId(1) }, PathEnd::Exit { edge: EdgeId(4) }]);
    // The pass forces Termination edges into the tree; ExitToEntry is forced anyway.
    let term = match dag.cfg_edge_role(EdgeId(1)) {
        CfgEdgeRole::Real(x) => x,
        r => panic!("{r:?}"),
    };
    let inc = Increments::compute(&dag, &n, &vec![0.0; dag.num_edges()], &[term]).unwrap();
    assert!(inc.in_tree(term));
    check_simulation(&cfg, &dag, &n, &inc, 5, 10);
}

#[test]
fn errors_are_reported_not_panicked() {
    let cfg = lecture_cfg();
    let dag = dag_of(&cfg);
    let n = Numbering::compute(&dag).unwrap();
    let w = vec![1.0; dag.num_edges()];
    // Forced edges closing a cycle with EXIT→ENTRY: A→C, C→D, D→F, F→EXIT.
    assert_eq!(
        Increments::compute(&dag, &n, &w, &[d(0), d(4), d(5), d(8)]),
        Err(IncrementError::ForcedCycle { edge: d(8) })
    );
    assert_eq!(Increments::compute(&dag, &n, &w, &[d(99)]), Err(IncrementError::ForcedOutOfRange(d(99))));
    assert!(matches!(Increments::compute(&dag, &n, &w[1..], &[]), Err(IncrementError::LengthMismatch { .. })));
    let mut nan = w.clone();
    nan[3] = f64::NAN;
    assert!(matches!(Increments::compute(&dag, &n, &nan, &[]), Err(IncrementError::Spanning(_))));
    let mut no_e2e = vec![false; dag.num_edges()];
    no_e2e[0] = true;
    assert_eq!(Increments::from_tree(&dag, &n, no_e2e), Err(IncrementError::ExitToEntryNotInTree));
    // Invalid paths.
    assert_eq!(encode(&dag, &n, &[]), Err(DecodeError::InvalidPath { position: 0 }));
    assert_eq!(encode(&dag, &n, &[d(0), d(5)]), Err(DecodeError::InvalidPath { position: 1 }));
    assert_eq!(encode(&dag, &n, &[d(0), d(4), d(5)]), Err(DecodeError::InvalidPath { position: 3 }));
    assert_eq!(encode(&dag, &n, &[d(9)]), Err(DecodeError::InvalidPath { position: 0 }));
    assert_eq!(encode(&dag, &n, &[d(1000)]), Err(DecodeError::InvalidPath { position: 0 }));
    // A numbering of another DAG.
    let other = Numbering::compute(&dag_of(&test_cfg(1, &[], &[0]))).unwrap();
    assert_eq!(decode(&dag, &other, 0), Err(DecodeError::Mismatch));
    assert_eq!(Increments::compute(&dag, &other, &w, &[]), Err(IncrementError::NumberingMismatch));
    // Undecodable path numbers in a profile.
    assert!(matches!(
        edge_counts_from_paths(&cfg, &dag, &n, [(0u128, 1u64), (17, 1)]),
        Err(DecodeError::OutOfRange { r: 17, .. })
    ));
}

// ---------------------------------------------------------------------------------------------------------------
// Huge path spaces: cuts
// ---------------------------------------------------------------------------------------------------------------

/// `k` sequential if-diamonds: head 3i → 3i+1, 3i+2 → head 3(i+1); the last head returns. 2^k paths.
fn diamonds(k: u32) -> Cfg {
    let mut edges = Vec::new();
    for i in 0..k {
        let h = 3 * i;
        edges.extend([(h, h + 1), (h, h + 2), (h + 1, h + 3), (h + 2, h + 3)]);
    }
    test_cfg(3 * k + 1, &edges, &[3 * k])
}

/// A random ENTRY→EXIT path of the DAG (uniform choice among successors that reach EXIT).
fn random_dag_path(dag: &PathDag, n: &Numbering, rng: &mut Rng) -> Vec<DagEdgeId> {
    let mut v = dag.entry();
    let mut p = Vec::new();
    while v != dag.exit() {
        let outs: Vec<DagEdgeId> = dag
            .out_edges(v)
            .iter()
            .copied()
            .filter(|&e| n.num_paths_from(dag.edge(e).to) > 0 && (dag.edge(e).from != dag.edge(e).to || p.is_empty()))
            .collect();
        let e = outs[rng.below(outs.len())];
        p.push(e);
        v = dag.edge(e).to;
    }
    p
}

/// An edge into a reset loop's header ends its path like a cut but is not one of the budget's cuts: 0 → 1 ⇄ 2,
/// 1 → 3 with header 1 reset (the entry 0 → 1 starts nothing of its own), and 0 → 1 → 2 cut at vertex 1 (its
/// out-edge 1 → 2 starts a path of its own). Neither back edge nor plain edge enters a reset loop.
#[test]
fn only_the_edges_into_a_reset_loop_enter_one() {
    let looped = test_cfg(4, &[(0, 1), (1, 2), (2, 1), (1, 3)], &[3]);
    let adj = looped.adjacency();
    let dfs = depth_first(&looped, &adj);
    let reset = PathDag::build_with_cuts_and_resets(&looped, &adj, &dfs, &[], &[BlockId(1)]);
    let entering: Vec<u32> = looped.edge_ids().filter(|&e| reset.enters_reset_loop(e)).map(|e| e.0).collect();
    assert_eq!(entering, vec![0]);
    let plain = PathDag::build(&looped, &adj, &dfs);
    assert!(looped.edge_ids().all(|e| !plain.enters_reset_loop(e)));
    let chain = test_cfg(3, &[(0, 1), (1, 2)], &[2]);
    let (adj, dfs) = (chain.adjacency(), depth_first(&chain, &chain.adjacency()));
    let cut = PathDag::build_with_cuts(&chain, &adj, &dfs, &[BlockId(1)]);
    assert!(matches!(cut.cfg_edge_role(EdgeId(1)), CfgEdgeRole::Cut { .. }));
    assert!(chain.edge_ids().all(|e| !cut.enters_reset_loop(e)));
}

#[test]
fn ball_larus_1996_80_diamonds_cut_to_a_2_pow_63_budget() {
    let cfg = diamonds(80);
    // Uncut: 2^80 paths, still a valid u128 numbering.
    let uncut = dag_of(&cfg);
    assert_eq!(Numbering::compute(&uncut).unwrap().num_paths(), 1u128 << 80);
    let dag = dag_with_budget(&cfg, DEFAULT_PATH_BUDGET).unwrap();
    check_dag(&cfg, &dag);
    assert!(!dag.cut_vertices().is_empty());
    let n = Numbering::compute(&dag).unwrap();
    for &v in dag.topological_order() {
        assert!(n.num_paths_from(v) <= DEFAULT_PATH_BUDGET, "{v}: {}", n.num_paths_from(v));
    }
    assert!(n.num_paths() > 1 << 62, "cuts should not be needlessly aggressive: {}", n.num_paths());
    let mut rng = Rng::new(80);
    for _ in 0..300 {
        let r = rng.below_u128(n.num_paths());
        let p = decode(&dag, &n, r).unwrap();
        assert_eq!(encode(&dag, &n, &p).unwrap(), r);
        let q = random_dag_path(&dag, &n, &mut rng);
        assert_eq!(decode(&dag, &n, encode(&dag, &n, &q).unwrap()).unwrap(), q);
    }
    // The instrumented program: every run is cut at the cut edges and reassembles exactly.
    let w: Vec<f64> = (0..dag.num_edges()).map(|i| (i % 7) as f64).collect();
    let inc = Increments::compute(&dag, &n, &w, &[]).unwrap();
    check_simulation(&cfg, &dag, &n, &inc, 80, 1000);
    // Deterministic.
    assert_eq!(dag_with_budget(&cfg, DEFAULT_PATH_BUDGET).unwrap(), dag);
}

#[test]
fn more_paths_than_u128_is_an_error_uncut_and_fine_with_a_budget() {
    let cfg = diamonds(130);
    assert!(matches!(Numbering::compute(&dag_of(&cfg)), Err(NumberingError::TooManyPaths { .. })));
    let dag = dag_with_budget(&cfg, DEFAULT_PATH_BUDGET).unwrap();
    let n = Numbering::compute(&dag).unwrap();
    assert!(n.num_paths() <= DEFAULT_PATH_BUDGET);
    let mut rng = Rng::new(130);
    for _ in 0..50 {
        let q = random_dag_path(&dag, &n, &mut rng);
        assert_eq!(decode(&dag, &n, encode(&dag, &n, &q).unwrap()).unwrap(), q);
    }
}

#[test]
fn tiny_budget_round_trips_every_path() {
    // 0 → 1 → {2, 3} → 4 → 5 → {6, 7, 8} → 9 → EXIT: 2 · 3 = 6 paths uncut. Budget 5: only cutting 4 → 5
    // works (2 + 3 paths); the threshold passes over-cut, the greedy phase finds it.
    let cfg = test_cfg(
        10,
        &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (5, 6), (5, 7), (5, 8), (6, 9), (7, 9), (8, 9)],
        &[9],
    );
    assert_eq!(Numbering::compute(&dag_of(&cfg)).unwrap().num_paths(), 6);
    let dag = dag_with_budget(&cfg, 5).unwrap();
    check_dag(&cfg, &dag);
    assert_eq!(dag.cut_vertices(), &[b(4)]);
    assert_eq!(dag.cut_edges(), &[EdgeId(5)]);
    assert!(matches!(dag.cfg_edge_role(EdgeId(5)), CfgEdgeRole::Cut { .. }));
    let n = Numbering::compute(&dag).unwrap();
    assert_eq!(n.num_paths(), 5);
    let paths = check_numbering(&dag, &n, 1000).unwrap();
    let cps: Vec<_> = paths.iter().map(|p| to_cfg_path(&dag, p).unwrap()).collect();
    assert_eq!(cps.iter().filter(|c| c.start == PathStart::AfterCut { edge: EdgeId(5) }).count(), 3);
    assert_eq!(cps.iter().filter(|c| c.end == PathEnd::Cut { edge: EdgeId(5) }).count(), 2);
    for r in 0..n.num_paths() {
        assert_eq!(encode(&dag, &n, &decode(&dag, &n, r).unwrap()).unwrap(), r);
    }
    let inc = Increments::compute(&dag, &n, &vec![1.0; dag.num_edges()], &[]).unwrap();
    check_simulation(&cfg, &dag, &n, &inc, 4, 30);
    // Budget 4 cannot be met: segments cost distinct numbers (2 + 3 > 4).
    assert!(matches!(dag_with_budget(&cfg, 4), Err(DagError::BudgetUnreachable { budget: 4, achieved: 5 })));

    // With a loop around it (9 → 0) and budget 16, paths still round-trip exactly.
    let mut edges =
        vec![(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (5, 6), (5, 7), (5, 8), (6, 9), (7, 9), (8, 9)];
    edges.push((9, 1));
    let cfg = test_cfg(10, &edges, &[9]);
    let dag = dag_with_budget(&cfg, 16).unwrap();
    check_dag(&cfg, &dag);
    let n = Numbering::compute(&dag).unwrap();
    assert!(n.num_paths() <= 16 && !dag.cut_edges().is_empty());
    check_numbering(&dag, &n, 1000).unwrap();
    let inc = Increments::compute(&dag, &n, &vec![1.0; dag.num_edges()], &[]).unwrap();
    check_simulation(&cfg, &dag, &n, &inc, 9, 30);
}

#[test]
fn unreachable_budget_is_an_error() {
    // The entry has three returning successors: three paths whatever is cut.
    let cfg = test_cfg(4, &[(0, 1), (0, 2), (0, 3)], &[1, 2, 3]);
    assert_eq!(dag_with_budget(&cfg, 3).unwrap(), dag_of(&cfg));
    assert!(matches!(dag_with_budget(&cfg, 2), Err(DagError::BudgetUnreachable { budget: 2, achieved: 3 })));
    assert!(matches!(dag_with_budget(&cfg, 0), Err(DagError::BudgetUnreachable { .. })));
}

// ---------------------------------------------------------------------------------------------------------------
// Property tests on random CFGs
// ---------------------------------------------------------------------------------------------------------------

/// Raw material for a random CFG: `n` blocks; per block i ≥ 1 an optional parent edge from a block < i (so most
/// blocks are reachable; `None` leaves it to chance); extra branch pairs; every branch with a sort key that
/// shuffles terminator order; returning blocks; terminating blocks; the position of the EXIT→entry edge.
type RawCfg = (u32, Vec<Option<u32>>, Vec<(u32, u32)>, Vec<u8>, Vec<u32>, Vec<u32>, usize);

fn raw_cfg() -> impl Strategy<Value = RawCfg> {
    (1u32..=8).prop_flat_map(|n| {
        (
            Just(n),
            prop::collection::vec(prop::option::weighted(0.9, any::<u32>()), (n - 1) as usize),
            prop::collection::vec((0..n, 0..n), 0..=10),
            prop::collection::vec(any::<u8>(), 20),
            prop::collection::vec(0..n, 0..=3),
            prop::collection::vec(0..n, 0..=2),
            0usize..24,
        )
    })
}

/// Builds the cfg; with `walkable`, every block without a way to EXIT gets an extra `Return` edge so random
/// executions terminate.
fn make_cfg(raw: &RawCfg, walkable: bool) -> Cfg {
    let (n, parents, extra, keys, rets, terms, e2e_pos) = raw;
    let mut pairs: Vec<(u32, u32)> = parents
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.map(|p| (p % (i as u32 + 1), i as u32 + 1)))
        .chain(extra.iter().copied())
        .collect();
    let mut keyed: Vec<(u8, usize)> = (0..pairs.len()).map(|i| (keys[i % keys.len()], i)).collect();
    keyed.sort();
    pairs = keyed.iter().map(|&(_, i)| pairs[i]).collect();
    let mut succ = vec![0u32; *n as usize];
    let mut edges = Vec::new();
    for &(f, t) in &pairs {
        edges.push(Edge { from: b(f), to: b(t), kind: EdgeKind::Branch { succ: succ[f as usize] } });
        succ[f as usize] += 1;
    }
    for &x in rets {
        edges.push(Edge { from: b(x), to: b(*n), kind: EdgeKind::Return });
    }
    for &x in terms {
        edges.push(Edge { from: b(x), to: b(*n), kind: EdgeKind::Termination });
    }
    let pos = e2e_pos % (edges.len() + 1);
    edges.insert(pos, Edge { from: b(*n), to: b(0), kind: EdgeKind::ExitToEntry });
    let mut cfg = Cfg::new(*n, edges.clone()).unwrap();
    if walkable {
        let dist = distance_to_exit(&cfg);
        for v in 0..*n {
            if dist[v as usize] == usize::MAX {
                edges.push(Edge { from: b(v), to: b(*n), kind: EdgeKind::Return });
            }
        }
        cfg = Cfg::new(*n, edges).unwrap();
    }
    cfg
}

/// A statement of a structured program, for graphs shaped like the front end's: `if` with or without `else`,
/// top-tested loops (`for`: header, body, latch) and bottom-tested ones (`do … while`).
#[derive(Clone, Debug)]
enum Stmt {
    Plain,
    If(Vec<Stmt>, Vec<Stmt>),
    For(Vec<Stmt>),
    DoWhile(Vec<Stmt>),
}

fn stmts() -> impl Strategy<Value = Vec<Stmt>> {
    let leaf = Just(Stmt::Plain);
    let stmt = leaf.prop_recursive(3, 24, 3, |inner| {
        let block = prop::collection::vec(inner, 0..3);
        prop_oneof![
            1 => Just(Stmt::Plain),
            3 => (block.clone(), block.clone()).prop_map(|(t, e)| Stmt::If(t, e)),
            3 => block.clone().prop_map(Stmt::For),
            2 => block.prop_map(Stmt::DoWhile),
        ]
    });
    prop::collection::vec(stmt, 1..4)
}

/// The graph of a structured program (see [`Stmt`]); the last block returns.
fn structured_cfg(program: &[Stmt]) -> Cfg {
    fn emit(stmts: &[Stmt], mut cur: u32, n: &mut u32, edges: &mut Vec<(u32, u32)>) -> u32 {
        let new = |n: &mut u32| {
            *n += 1;
            *n - 1
        };
        for s in stmts {
            match s {
                Stmt::Plain => {
                    let b = new(n);
                    edges.push((cur, b));
                    cur = b;
                }
                Stmt::If(t, e) => {
                    let t0 = new(n);
                    edges.push((cur, t0));
                    let t_end = emit(t, t0, n, edges);
                    let e_end = if e.is_empty() {
                        cur
                    } else {
                        let e0 = new(n);
                        edges.push((cur, e0));
                        emit(e, e0, n, edges)
                    };
                    let join = new(n);
                    edges.push((t_end, join));
                    edges.push((e_end, join));
                    cur = join;
                }
                Stmt::For(body) => {
                    let h = new(n);
                    edges.push((cur, h));
                    let b0 = new(n);
                    edges.push((h, b0));
                    let b_end = emit(body, b0, n, edges);
                    let latch = new(n);
                    edges.push((b_end, latch));
                    edges.push((latch, h));
                    let x = new(n);
                    edges.push((h, x));
                    cur = x;
                }
                Stmt::DoWhile(body) => {
                    let b0 = new(n);
                    edges.push((cur, b0));
                    let b_end = emit(body, b0, n, edges);
                    edges.push((b_end, b0));
                    let x = new(n);
                    edges.push((b_end, x));
                    cur = x;
                }
            }
        }
        cur
    }
    let mut n = 1;
    let mut edges = Vec::new();
    let last = emit(program, 0, &mut n, &mut edges);
    test_cfg(n, &edges, &[last])
}

/// The DAG to test: uncut (`choice` 0), or cut to a budget below the uncut path count N: N − 1, N − 2, 7N/8,
/// 3N/4 or N/2 (`choice` 1..=5), at least 2; path mode's DAG with loop resets (`choice` 6: `resets`), and with
/// resets cut to N/2 (`choice` 7), both under the hoisting rule; under the one-path rule (`choice` 8). `None` when the budget is unreachable (which must then be reported as such).
fn build_for(cfg: &Cfg, choice: usize) -> Option<(PathDag, Option<u128>)> {
    let uncut = dag_of(cfg);
    let total = Numbering::compute(&uncut).unwrap().num_paths();
    let adj = cfg.adjacency();
    let dfs = depth_first(cfg, &adj);
    let budget = match choice {
        0 => return Some((uncut, None)),
        6 => {
            return Some((PathDag::build_for_path_mode(cfg, &adj, &dfs, u128::MAX, ResetRule::Hoisted).unwrap(), None))
        }
        8 => {
            return Some((PathDag::build_for_path_mode(cfg, &adj, &dfs, u128::MAX, ResetRule::OnePath).unwrap(), None))
        }
        7 => {
            let budget = (total / 2).max(2);
            return match PathDag::build_for_path_mode(cfg, &adj, &dfs, budget, ResetRule::Hoisted) {
                Ok(dag) => Some((dag, Some(budget))),
                Err(DagError::BudgetUnreachable { .. }) => None,
                Err(e) => panic!("{e}"),
            };
        }
        1 => total.saturating_sub(1),
        2 => total.saturating_sub(2),
        3 => total * 7 / 8,
        4 => total * 3 / 4,
        _ => total / 2,
    }
    .max(2);
    match dag_with_budget(cfg, budget) {
        Ok(dag) => Some((dag, Some(budget))),
        Err(DagError::BudgetUnreachable { budget: b2, achieved }) => {
            assert_eq!(b2, budget);
            assert!(achieved > budget);
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// A walkable random cfg (see [`make_cfg`]), its DAG per [`build_for`], numbering and increments from the
/// given chord weights; `None` when the budget is unreachable.
fn walkable(raw: &RawCfg, bi: usize, weights: &[u8]) -> Option<(Cfg, PathDag, Numbering, Increments)> {
    let cfg = make_cfg(raw, true);
    let (dag, _) = build_for(&cfg, bi)?;
    let n = Numbering::compute(&dag).unwrap();
    let w: Vec<f64> = (0..dag.num_edges()).map(|i| f64::from(weights[i % weights.len()])).collect();
    let inc = Increments::compute(&dag, &n, &w, &[]).unwrap();
    Some((cfg, dag, n, inc))
}

/// What a simulated run is made of: a random cfg, the DAG choice of [`build_for`], chord weights, the walk's
/// seed and its number of invocations (in `1..max_invocations`).
type RunInputs = (RawCfg, usize, Vec<u8>, u64, usize);

fn run_inputs(max_invocations: usize) -> impl Strategy<Value = RunInputs> {
    (raw_cfg(), 0usize..9, prop::collection::vec(0u8..10, 1..40), any::<u64>(), 1usize..max_invocations)
}

/// [`walkable`] with at most one `Termination` edge per block, as the pass gives it (for arrival counting).
fn walkable_one_termination_per_block(
    raw: &RawCfg,
    bi: usize,
    weights: &[u8],
) -> Option<(Cfg, PathDag, Numbering, Increments)> {
    let mut raw = raw.clone();
    raw.5.sort_unstable();
    raw.5.dedup();
    walkable(&raw, bi, weights)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Dense bijective numbering, decode/encode inverse, DAG invariants, budget respected.
    #[test]
    fn numbering_is_dense_and_decoding_round_trips(raw in raw_cfg(), bi in 0usize..9) {
        let cfg = make_cfg(&raw, false);
        let Some((dag, budget)) = build_for(&cfg, bi) else { return Ok(()) };
        check_dag(&cfg, &dag);
        let n = Numbering::compute(&dag).unwrap();
        if let Some(budget) = budget {
            for &v in dag.topological_order() {
                prop_assert!(n.num_paths_from(v) <= budget);
            }
        }
        if let Some(paths) = check_numbering(&dag, &n, 3000) {
            for r in 0..n.num_paths() {
                let p = decode(&dag, &n, r).unwrap();
                prop_assert_eq!(encode(&dag, &n, &p).unwrap(), r);
                prop_assert!(paths.contains(&p));
            }
        }
    }

    /// Increments from any spanning tree containing EXIT→ENTRY (random weights, random extra forced edges)
    /// give every path its number.
    #[test]
    fn increments_from_any_tree_encode_every_path(
        raw in raw_cfg(),
        bi in 0usize..6,
        weights in prop::collection::vec(-3i8..10, 1..40),
        forced in prop::collection::vec(0u32..40, 0..3),
    ) {
        let cfg = make_cfg(&raw, false);
        let Some((dag, _)) = build_for(&cfg, bi) else { return Ok(()) };
        let n = Numbering::compute(&dag).unwrap();
        let w: Vec<f64> = (0..dag.num_edges()).map(|i| f64::from(weights[i % weights.len()])).collect();
        let forced: Vec<DagEdgeId> = forced.iter().map(|&f| DagEdgeId(f % dag.num_edges() as u32)).collect();
        let inc = match Increments::compute(&dag, &n, &w, &forced) {
            Ok(inc) => inc,
            Err(IncrementError::ForcedCycle { .. }) => return Ok(()),
            Err(e) => panic!("{e}"),
        };
        prop_assert!(inc.in_tree(dag.exit_to_entry()));
        for f in &forced {
            prop_assert!(inc.in_tree(*f));
        }
        for e in dag.edge_ids() {
            prop_assert!(inc.is_chord(e) != inc.in_tree(e));
            if inc.in_tree(e) {
                prop_assert_eq!(inc.inc(e), 0);
            }
        }
        if let Some(paths) = enumerate_paths(&dag, 3000) {
            for p in &paths {
                prop_assert_eq!(inc_sum(&inc, p), val_sum(&n, p) as i128);
            }
        }
    }

    /// Simulated executions instrumented as the pass will do it count exactly the brute-force path segments,
    /// and the path counts reproduce the true edge and block counts.
    #[test]
    fn instrumented_walks_count_exact_paths_and_edges((raw, bi, weights, seed, invocations) in run_inputs(4)) {
        let Some((cfg, dag, n, inc)) = walkable(&raw, bi, &weights) else { return Ok(()) };
        check_simulation(&cfg, &dag, &n, &inc, seed, invocations);
    }

    /// Counting arrivals at blocks that may be left abnormally (one update instead of +1/−1 around the call),
    /// `net_counts_from_arrivals` recovers exactly the path segments the walks took.
    #[test]
    fn arrival_counts_give_the_exact_net_path_counts((raw, bi, weights, seed, invocations) in run_inputs(5)) {
        let Some((cfg, dag, n, inc)) = walkable_one_termination_per_block(&raw, bi, &weights) else { return Ok(()) };
        let sim = simulate(&cfg, &dag, &inc, &mut Rng::new(seed), invocations, 40, Truncation::Arrivals);
        let mut truth: BTreeMap<u128, i128> = BTreeMap::new();
        for s in &sim.segments {
            *truth.entry(val_sum(&n, &s.dag)).or_insert(0) += 1;
        }
        let net = net_counts_from_arrivals(&cfg, &dag, &n, sim.counted.iter().map(|(&r, &c)| (r, c))).unwrap();
        for (&r, p) in &net {
            prop_assert_eq!(&decode(&dag, &n, r).unwrap(), &p.path);
        }
        let net: BTreeMap<u128, i128> = net.into_iter().map(|(r, p)| (r, p.count)).collect();
        prop_assert_eq!(net, truth);
    }

    /// Forking executions (see [`simulate_forking`]): each process's profile alone and all of them merged give
    /// back the true edge counts and block counts (re-entries included) from the netted arrival counts plus the
    /// measured re-entries; the only negative net counts are truncated paths whose re-entries make up for them.
    #[test]
    fn arrival_counts_and_reentries_recover_forking_executions(
        (raw, bi, weights, seed, invocations) in run_inputs(5),
    ) {
        let Some((cfg, dag, n, inc)) = walkable_one_termination_per_block(&raw, bi, &weights) else { return Ok(()) };
        let procs = simulate_forking(&cfg, &dag, &inc, &mut Rng::new(seed), invocations);
        let mut merged = ForkedProcess {
            edges: vec![0; cfg.num_edges()],
            blocks: vec![0; cfg.num_vertices()],
            ..ForkedProcess::default()
        };
        for p in &procs {
            for (k, c) in &p.counted {
                *merged.counted.entry(*k).or_insert(0) += c;
            }
            for (k, c) in &p.reentries {
                *merged.reentries.entry(*k).or_insert(0) += c;
            }
            for (m, c) in merged.edges.iter_mut().zip(&p.edges) {
                *m += c;
            }
            for (m, c) in merged.blocks.iter_mut().zip(&p.blocks) {
                *m += c;
            }
        }
        for p in procs.iter().chain([&merged]) {
            let net = net_counts_with_reentries(
                &cfg,
                &dag,
                &n,
                p.counted.iter().map(|(&r, &c)| (r, c)),
                p.reentries.iter().map(|(&r, &c)| (r, c)),
            )
            .unwrap();
            for (&r, q) in &net {
                prop_assert_eq!(&decode(&dag, &n, r).unwrap(), &q.path);
                let block = truncation_block(&cfg, &dag, &q.path);
                prop_assert!(q.fork_reentries == 0 || block.is_some(), "re-entries of a completed path {}", r);
                prop_assert!(q.count + q.fork_reentries >= 0, "path {}: {} + {} re-entries", r, q.count, q.fork_reentries);
            }
            let mut d = signed_edge_counts_from_dag_paths(&cfg, &dag, net.values().map(|q| (q.path.as_slice(), q.count)))
                .unwrap();
            let re: Vec<(BlockId, i128)> = net
                .values()
                .filter(|q| q.fork_reentries != 0)
                .map(|q| (truncation_block(&cfg, &dag, &q.path).unwrap(), q.fork_reentries))
                .collect();
            add_fork_reentries(&cfg, &mut d.edges, &mut d.blocks, re).unwrap();
            prop_assert_eq!(&d.edges, &p.edges);
            prop_assert_eq!(&d.blocks, &p.blocks);
        }
    }

    /// Hoisted counts ([`super::hoisting`]) count what the back edges would: in simulated executions every
    /// segment that ends at a counting edge with sites passed exactly one of them, the register at a site's
    /// source is the same constant every time, and a pass through a site ends its segment at that edge or
    /// leaves the latch by an uncounted edge, which takes back the same number — so constant-address counts at
    /// the sites, less the uncounts, give exactly the counts at the edge.
    #[test]
    fn hoisted_counts_equal_the_back_edges_counts(
        program in stmts(),
        (raw, structured, weights, seed, invocations) in (raw_cfg(), prop::bool::weighted(0.8), prop::collection::vec(0u8..10, 1..40), any::<u64>(), 1usize..5),
        cut in any::<bool>(),
    ) {
        let cfg = if structured { structured_cfg(&program) } else { make_cfg(&raw, true) };
        let adj = cfg.adjacency();
        // Path mode's DAG, also cut to half its paths (cut edges count like back edges, and hoist alike).
        let Some((dag, _)) = build_for(&cfg, if cut { 7 } else { 6 }) else { return Ok(()) };
        let n = Numbering::compute(&dag).unwrap();
        let w: Vec<f64> = (0..dag.num_edges()).map(|i| f64::from(weights[i % weights.len()])).collect();
        let inc = Increments::compute(&dag, &n, &w, &[]).unwrap();
        let (_, prefixes) = super::budget::saturating_counts(&dag);
        // Per site edge: its counting edges, each with what the register gains after the site's source.
        let mut site_of: BTreeMap<EdgeId, Vec<(EdgeId, i128)>> = BTreeMap::new();
        // Per uncounted edge: its counting edges, each with what the register gains after the edge's source.
        let mut uncount_of: BTreeMap<EdgeId, Vec<(EdgeId, i128)>> = BTreeMap::new();
        let mut counting: BTreeMap<DagEdgeId, EdgeId> = BTreeMap::new();
        for e in cfg.edge_ids() {
            if let Some(h) = hoisted_count_sites(&cfg, &adj, &dag, &prefixes, e, &|_| true) {
                let (exit, _) = dag.cfg_edge_role(e).segment_break().unwrap();
                counting.insert(exit, e);
                for s in h.sites {
                    let later: i128 = s.dag_edges[1..].iter().map(|&d| inc.inc(d)).sum::<i128>() + inc.inc(exit);
                    site_of.entry(s.edge).or_default().push((e, later));
                }
                for u in h.uncounts {
                    let later: i128 = u.dag_edges.iter().map(|&d| inc.inc(d)).sum::<i128>() + inc.inc(exit);
                    uncount_of.entry(u.edge).or_default().push((e, later));
                }
            }
        }
        let sim = simulate(&cfg, &dag, &inc, &mut Rng::new(seed), invocations, 40, Truncation::Net);
        let mut at_sites: BTreeMap<u128, i64> = BTreeMap::new();
        let mut at_edges: BTreeMap<u128, i64> = BTreeMap::new();
        let mut register_at: BTreeMap<(EdgeId, EdgeId), i128> = BTreeMap::new();
        for seg in &sim.segments {
            let number = val_sum(&n, &seg.dag);
            let ends_at = seg.dag.last().and_then(|d| counting.get(d)).copied();
            // Per counting edge: the number its site passed last counted, not yet taken back.
            let mut pending: BTreeMap<EdgeId, u128> = BTreeMap::new();
            let mut r: i128 = 0;
            for &d in &seg.dag {
                let before = r;
                r += inc.inc(d);
                let Some(e) = dag.edge(d).kind.cfg_edge() else { continue };
                if dag.cfg_edge_role(e) != CfgEdgeRole::Real(d) {
                    continue;
                }
                for &(owner, later) in uncount_of.get(&e).into_iter().flatten() {
                    if let Some(counted) = pending.remove(&owner) {
                        prop_assert_eq!(u128::try_from(before + later).unwrap(), counted, "uncount of {:?}", owner);
                        *at_sites.entry(counted).or_insert(0) -= 1;
                    }
                }
                for &(owner, later) in site_of.get(&e).into_iter().flatten() {
                    prop_assert!(!pending.contains_key(&owner), "two sites of {:?} passed before it", owner);
                    let first = *register_at.entry((e, owner)).or_insert(before);
                    prop_assert_eq!(first, before, "site {:?} of {:?}: register varies", e, owner);
                    let counted = u128::try_from(before + inc.inc(d) + later).unwrap();
                    *at_sites.entry(counted).or_insert(0) += 1;
                    pending.insert(owner, counted);
                }
            }
            if let Some(e) = ends_at {
                prop_assert_eq!(pending.remove(&e), Some(number), "segment {:?}", seg.edges);
                *at_edges.entry(number).or_insert(0) += 1;
            }
            prop_assert!(pending.is_empty(), "segment {:?} passed a site and ended elsewhere", seg.edges);
        }
        at_sites.retain(|_, c| *c != 0);
        prop_assert_eq!(at_sites, at_edges);
    }

    /// A `DfsInfo` of another graph must not make anything panic.
    #[test]
    fn mismatched_dfs_never_panics(raw in raw_cfg(), other in raw_cfg(), budget in 0u128..20) {
        let cfg = make_cfg(&raw, false);
        let foreign = make_cfg(&other, false);
        let adj = cfg.adjacency();
        let dfs = depth_first(&foreign, &foreign.adjacency());
        let dag = PathDag::build(&cfg, &adj, &dfs);
        let _ = PathDag::build_with_budget(&cfg, &adj, &dfs, budget);
        if let Ok(n) = Numbering::compute(&dag) {
            for r in 0..n.num_paths().min(64) {
                if let Ok(p) = decode(&dag, &n, r) {
                    let _ = to_cfg_path(&dag, &p);
                    let _ = encode(&dag, &n, &p);
                }
            }
            let _ = Increments::compute(&dag, &n, &vec![1.0; dag.num_edges()], &[]);
        }
    }
}
