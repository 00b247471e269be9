//! Property tests of fork re-entries in the context and piecewise modes: random programs and executions (the
//! generators of `tests_prop`) split by a `fork()` at a random point where a call may fork; the child runs a
//! random continuation of its own. The arrival-counting simulator ([`Simulator::run_forking`]) records what the
//! instrumented parent and child record; netting plus re-entries must give back, for the parent's profile, the
//! child's and both merged, exactly the edges each process took and the re-entries of each block, tallied from
//! the events alone.

use super::tests_prop::{random_events, random_program, Rng};
use super::*;
use crate::graph::{BlockId, EdgeKind};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// An activation while tallying: procedure, current block (the call block while it waits in a call), the call
/// site it was entered through, and whether it has run in this process (false: in flight at the fork, not
/// resumed yet).
type Frame = (ProcId, BlockId, Option<CallSiteId>, bool);

/// What a process ran: `[proc][edge]` edge counts and `[proc][block]` re-entries.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Tally {
    edges: Vec<Vec<i128>>,
    reentries: Vec<Vec<i128>>,
}

impl Tally {
    fn new(program: &Program) -> Tally {
        Tally {
            edges: program.procs().iter().map(|p| vec![0; p.cfg.num_edges()]).collect(),
            reentries: program.procs().iter().map(|p| vec![0; p.cfg.num_blocks()]).collect(),
        }
    }

    fn add(&mut self, other: &Tally) {
        for (a, b) in self.edges.iter_mut().zip(&other.edges).chain(self.reentries.iter_mut().zip(&other.reentries)) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }
}

/// Runs `events` from `frames`, tallying into `t` what runs in this process: each activation's EXIT→entry edge
/// when it starts, edges as taken, a call site's c→r edge when the call returns (or at once for an external
/// call); an activation in flight at the fork counts one re-entry of its block when control comes back to it
/// (the running one with the first event, callers when their call returns); a termination counts the terminating
/// edge and, for every activation below that has run in this process, its call block's first termination edge.
/// Returns the frames left, or `None` when such a call block has no termination edge (see `tests_prop`).
fn tally(program: &Program, mut frames: Vec<Frame>, events: &[Event], t: &mut Tally) -> Option<Vec<Frame>> {
    for &ev in events {
        let top = frames.last_mut()?;
        if !top.3 {
            top.3 = true;
            t.reentries[top.0.index()][top.1.index()] += 1;
        }
        let (p, b, _, _) = *top;
        match ev {
            Event::Edge(e) => {
                t.edges[p.index()][e.index()] += 1;
                frames.last_mut()?.1 = program.cfg(p).edge(e).to;
            }
            Event::Call => {
                let info = *program.site(program.site_at(p, b)?)?;
                match info.callee {
                    Callee::Proc(q) | Callee::Cut(q) => {
                        t.edges[q.index()][program.cfg(q).exit_to_entry().index()] += 1;
                        frames.push((q, BlockId(0), program.site_at(p, b), true));
                    }
                    Callee::External => {
                        t.edges[p.index()][info.call_edge.index()] += 1;
                        frames.last_mut()?.1 = info.ret;
                    }
                }
            }
            Event::Return(e) => {
                t.edges[p.index()][e.index()] += 1;
                let (_, _, site, _) = frames.pop()?;
                if let Some(site) = site {
                    let info = *program.site(site)?;
                    let caller = frames.last_mut()?;
                    if !caller.3 {
                        caller.3 = true;
                        t.reentries[caller.0.index()][caller.1.index()] += 1;
                    }
                    t.edges[info.proc.index()][info.call_edge.index()] += 1;
                    caller.1 = info.ret;
                }
            }
            Event::Terminate(e) => {
                t.edges[p.index()][e.index()] += 1;
                for &(q, block, _, ran) in frames.iter().rev().skip(1) {
                    let cfg = program.cfg(q);
                    let term = cfg
                        .edge_ids()
                        .find(|&x| cfg.edge(x).from == block && cfg.edge(x).kind == EdgeKind::Termination)?;
                    if ran {
                        t.edges[q.index()][term.index()] += 1;
                    }
                }
                frames.clear();
            }
        }
    }
    Some(frames)
}

/// What the reader derives from a process's (or a merged) profile and re-entries: the netted paths are checked
/// (no path is left abnormally a negative number of times; only counted truncated paths are re-entered), and the
/// edge counts and re-entries per block are returned.
fn derive(
    num: &Numbering<'_>,
    profile: &Profile,
    paths: &BTreeMap<u128, u64>,
    blocks: &BTreeMap<(ProcId, BlockId), u64>,
) -> Tally {
    let raw: BTreeMap<u128, i128> = profile.iter().map(|(&n, &c)| (n, i128::from(c))).collect();
    let re: BTreeMap<u128, i128> = paths.iter().map(|(&n, &c)| (n, i128::from(c))).collect();
    let net = net_counts_with_reentries(num, &raw, &re).unwrap();
    for (n, p) in &net {
        assert!(
            p.count + p.fork_reentries >= 0,
            "path {n} ({}): {} + {} re-entries",
            p.path,
            p.count,
            p.fork_reentries
        );
        assert!(p.fork_reentries == 0 || ends_at_counted_termination(num, &p.path), "re-entry of path {n}");
    }
    let blocks: Vec<(ProcId, BlockId, i128)> = blocks.iter().map(|(&(p, b), &c)| (p, b, i128::from(c))).collect();
    let program = num.supergraph().program();
    let c = signed_edge_counts_with_reentries(
        program,
        num.mode(),
        net.values().map(|p| (&p.path, p.count, p.fork_reentries)),
        &blocks,
    );
    Tally { edges: c.edges, reentries: c.reentries }
}

/// One random program, a few forking executions per mode; returns how many forks were checked.
fn check_forks(seed: u64) -> usize {
    let mut rng = Rng::new(seed);
    let sg = Supergraph::build(random_program(&mut rng));
    let program = sg.program();
    let mut checked = 0;
    for mode in [Mode::Context, Mode::Piecewise] {
        let num = sg.number(mode).unwrap();
        for _ in 0..8 {
            let roots = sg.calls().roots();
            let root = roots[rng.below(roots.len())];
            let budget = rng.below(60);
            let exec = Execution { root, events: random_events(&sg, &mut rng, vec![(root, BlockId(0), None)], budget) };
            // Where a call may fork (the simulator refuses other points): the deepest such point half the time,
            // so that callers waiting in interprocedural, recursive and cut calls are exercised.
            let start: Vec<Frame> = vec![(root, BlockId(0), None, true)];
            let frames_at = |at: usize| tally(program, start.clone(), &exec.events[..at], &mut Tally::new(program));
            let candidates: Vec<(usize, usize)> = (0..=exec.events.len())
                .filter(|&at| {
                    matches!(
                        Simulator::counting_arrivals(&num).run_forking(&exec, at, &[]),
                        Err(TraceError::Incomplete)
                    )
                })
                .filter_map(|at| frames_at(at).map(|f| (f.len(), at)))
                .collect();
            let Some(&deepest) = candidates.iter().max() else { continue };
            let (_, at) = if rng.chance(2) { deepest } else { candidates[rng.below(candidates.len())] };
            // The activations at the fork, none of them resumed in the child yet.
            let Some(at_fork) = frames_at(at) else { continue };
            let budget = rng.below(40);
            let child_events =
                random_events(&sg, &mut rng, at_fork.iter().map(|&(p, b, s, _)| (p, b, s)).collect(), budget);
            let mut sim = Simulator::counting_arrivals(&num);
            let child = match sim.run_forking(&exec, at, &child_events) {
                Ok(c) => c,
                Err(TraceError::ImpossibleFork { .. } | TraceError::ImpossibleTermination { .. }) => continue,
                Err(e) => panic!("{mode:?}: {e} in {exec:?} forking at {at} into {child_events:?}"),
            };
            // The truth, from the events alone.
            let mut parent_truth = Tally::new(program);
            parent_truth.edges[root.index()][program.cfg(root).exit_to_entry().index()] += 1;
            let Some(_) = tally(program, start, &exec.events, &mut parent_truth) else { continue };
            let mut child_truth = Tally::new(program);
            let waiting: Vec<Frame> = at_fork.iter().map(|&(p, b, s, _)| (p, b, s, false)).collect();
            let Some(_) = tally(program, waiting, &child_events, &mut child_truth) else { continue };
            let mut merged_truth = parent_truth.clone();
            merged_truth.add(&child_truth);
            let mut merged = sim.profile().clone();
            for (n, c) in &child.profile {
                *merged.entry(*n).or_insert(0) += c;
            }
            let none = BTreeMap::new();
            let ctx = || format!("{mode:?}: {exec:?} forking at {at} into {child_events:?}; child recorded {child:?}");
            assert_eq!(derive(&num, sim.profile(), &none, &BTreeMap::new()), parent_truth, "parent: {}", ctx());
            assert_eq!(
                derive(&num, &child.profile, &child.path_reentries, &child.block_reentries),
                child_truth,
                "child: {}",
                ctx()
            );
            assert_eq!(
                derive(&num, &merged, &child.path_reentries, &child.block_reentries),
                merged_truth,
                "merged: {}",
                ctx()
            );
            checked += 1;
        }
    }
    checked
}

/// A hand-made program: root `f` (bb0 calls g at site 0, return site bb1 returns) and `g` (bb0 calls something
/// that may not return — its termination edge — then returns). g's call forks: the parent and the child both
/// return through f. The child records one re-entry of g's truncated path and one of f's call block; merged,
/// every activation on the stack at the fork counts once and the code after the call twice, with no abnormal
/// departure anywhere.
#[test]
fn fork_under_an_interprocedural_call_nets_to_one_activation_and_two_continuations() {
    use crate::graph::{Edge, EdgeId};
    let f_cfg = crate::graph::Cfg::new(
        2,
        vec![
            Edge { from: BlockId(0), to: BlockId(1), kind: EdgeKind::Branch { succ: 0 } },
            Edge { from: BlockId(0), to: BlockId(2), kind: EdgeKind::Termination },
            Edge { from: BlockId(1), to: BlockId(2), kind: EdgeKind::Return },
            Edge { from: BlockId(2), to: BlockId(0), kind: EdgeKind::ExitToEntry },
        ],
    )
    .unwrap();
    let g_cfg = crate::graph::Cfg::new(
        1,
        vec![
            Edge { from: BlockId(0), to: BlockId(1), kind: EdgeKind::Return },
            Edge { from: BlockId(0), to: BlockId(1), kind: EdgeKind::Termination },
            Edge { from: BlockId(1), to: BlockId(0), kind: EdgeKind::ExitToEntry },
        ],
    )
    .unwrap();
    let program = Program::new(vec![
        Procedure {
            cfg: f_cfg,
            call_sites: vec![CallSite { block: BlockId(0), callee: Callee::Proc(ProcId(1)) }],
            external_entry: true,
            cut_vertices: vec![],
            reset_headers: vec![],
        },
        Procedure::new(g_cfg, vec![]),
    ])
    .unwrap();
    let sg = Supergraph::build(program);
    for mode in [Mode::Context, Mode::Piecewise] {
        let num = sg.number(mode).unwrap();
        // f calls g; g's call forks (before event 1); both processes: g returns, f returns.
        let events = vec![Event::Call, Event::Return(EdgeId(0)), Event::Return(EdgeId(2))];
        let exec = Execution { root: ProcId(0), events: events.clone() };
        let mut sim = Simulator::counting_arrivals(&num);
        let child = sim.run_forking(&exec, 1, &events[1..]).unwrap();
        assert_eq!(child.block_reentries, BTreeMap::from([((ProcId(0), BlockId(0)), 1)]), "{mode:?}");
        assert_eq!(child.path_reentries.len(), 1, "{mode:?}");
        let mut merged = sim.profile().clone();
        for (n, c) in &child.profile {
            *merged.entry(*n).or_insert(0) += c;
        }
        let t = derive(&num, &merged, &child.path_reentries, &child.block_reentries);
        // f: bb0→bb1 2 (both processes went on), f's termination 0, bb1 return 2, invoked once.
        assert_eq!(t.edges[0], vec![2, 0, 2, 1], "{mode:?}");
        // g: return 2, termination 0, invoked once.
        assert_eq!(t.edges[1], vec![2, 0, 1], "{mode:?}");
        assert_eq!(t.reentries, vec![vec![1, 0], vec![1]], "{mode:?}");
        // No call can fork where nothing counts arrivals: f's bb0 waits in an interprocedural call.
        assert!(matches!(sim.run_forking(&exec, 0, &events), Err(TraceError::ImpossibleFork { position: 0 })));
    }
}

/// 400 programs: about 1,000 forks, some 30 of them under interprocedural calls (seed 0..3000 checked once:
/// 8,000 forks, 230 with call-block re-entries).
#[test]
fn random_forks_smoke() {
    let checked: usize = (0..400).map(check_forks).sum();
    assert!(checked > 500, "only {checked} forks checked");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn forked_profiles_net_to_the_edges_each_process_took(seed in any::<u64>()) {
        check_forks(seed);
    }
}
