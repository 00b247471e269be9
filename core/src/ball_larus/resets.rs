//! Loop resets: which loop headers restart every path that enters them, so that each iteration of the loop
//! starts at one path number.
//!
//! In Ball and Larus's DAG a loop's back edge ends the path of one iteration, and the next starts at the header
//! with the back edge's surrogate. The first iteration is different: its path began before the loop, so the
//! number the back edge counts on the first iteration depends on where the loop was entered from. For a loop
//! nested in another, or entered along several paths, the back edge's count then has a run-time address even
//! when the loop's body has one path: the pass tests the number against the few that repeat and counts any
//! other in memory ([`super::promoted_paths`]). That test keeps LLVM from folding a loop that only counts into
//! its trip count and from vectorising a loop with a select in it (zlib's `slide_hash`, a six-deep counting nest).
//!
//! A *reset* header ends the path on every edge that enters the loop (like a cut) and starts every path into the
//! header — after a back edge or an entry — with one shared surrogate (`dag::assemble`). Every iteration then
//! ends at the back edge with a number that depends on the body's branches only; for a body of one path, a
//! constant the count can use directly, so the loop's counts are plain register additions LLVM can fold into
//! trip counts. The price is information: a path no longer runs from before the loop into its first iteration,
//! and the loop's entry is one more count (once per entry, outside the iterations).
//!
//! [`loop_resets`] picks the headers, innermost loops first, from the graph alone (the readers recompute the
//! same set): a loop whose body has no point where the activation may end (a `Termination` edge: those loops
//! are never promoted) and where resetting leaves at most [`LOOP_RESET_MAX_PATHS`] path number at each edge that
//! counts inside an iteration (its back edges, and the entries of inner loops reset before it) — fewer than
//! without. Under [`ResetRule::Hoisted`] an edge whose count moves to constant sites
//! ([`super::hoisting`]) counts as one number: a body of a few paths whose branches decide them (an `if` with
//! or without `else`) then resets too; and, once every loop is decided, a loop stays reset only if each of its
//! entries counts a constant number too (until nothing changes), so no loop pays a memory count per entry —
//! bzip2's bit-buffer refill loops, entered once per symbol from the middle of its decoder and rarely
//! iterating, paid more at their entries than their iterations saved. A nest of such loops resets from the
//! inside out.

use super::dag::{assemble, CfgEdgeRole, PathDag};
use super::hoisting::{hoisted_count_sites, prefix_counts};
use crate::dfs::DfsInfo;
use crate::graph::{Adjacency, BlockId, Cfg, EdgeKind};
use crate::loops::{natural_loops, NaturalLoop as Loop};
use serde::{Deserialize, Serialize};

/// At most this many path numbers at each edge that counts inside an iteration of a reset loop: one, so that
/// its count is a constant a promoted register adds 1 to. With two (as many as the pass tests for), LLVM turns
/// the complete test into two compare-and-add sequences per iteration, more instructions than the branches of
/// the incomplete test it replaced (bubble sort's inner loop: +76% instructions by callgrind).
pub const LOOP_RESET_MAX_PATHS: u128 = 1;

/// Which loops a path-mode DAG resets: a module's choice, recorded in its metadata so that every reader
/// rebuilds the DAG the pass numbered.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ResetRule {
    /// No resets: Ball and Larus's paths (`PATHPROF_LOOP_RESETS=0`, and profiles before metadata version 7).
    None,
    /// Loops whose iterations count one path number (metadata version 7).
    OnePath,
    /// Also loops whose iterations' counts all move to constant sites ([`super::hoisting`]; version 8 on).
    Hoisted,
}

/// Per vertex: whether it is a reset header under `rule` (see the module documentation). Deterministic.
pub fn loop_resets(cfg: &Cfg, adj: &Adjacency, dfs: &DfsInfo, rule: ResetRule) -> Vec<bool> {
    if rule == ResetRule::None {
        return vec![false; cfg.num_vertices()];
    }
    let hoisted = rule == ResetRule::Hoisted;
    let policy = Policy { hoisting: hoisted, constant_entries: hoisted, eligible: &|_| true, opaque: &|_| false };
    choose(cfg, adj, dfs, natural_loops(cfg, adj, dfs).loops, &policy)
}

/// The loop headers an interprocedural (Melski–Reps) procedure resets: the one-path rule, with every entry
/// counting a constant number, for loops of a nest (a loop inside another or around another) that `eligible`
/// accepts (the pass's: entries and back edges that can carry code). A call to a procedure of the program is
/// *opaque*: the path number after its call block depends on the callee's path, so a loop whose body holds one
/// is not reset, nor one whose entry a path through one reaches. The interprocedural modes do not hoist counts.
///
/// A loop alone in its function is left as it is: its later iterations already count at a tested constant slot
/// (`promoted_dag_paths`), and resetting it adds a count at each entry, a hashed update where the module's
/// path numbers live in a table — Lua's `luaD_precall`, whose argument-filling loop usually runs no
/// iteration, took 49% more instructions. In a nest the resets let the inner loops' entries and the outer
/// loops' back edges count constants too, so the whole nest keeps its counts in registers (or folds).
///
/// Unlike path mode's rule the result is recorded per procedure (`Procedure::reset_headers`), so readers need
/// neither the program's IR facts nor this policy.
pub fn interproc_loop_resets(
    cfg: &Cfg,
    adj: &Adjacency,
    dfs: &DfsInfo,
    eligible: &dyn Fn(&Loop) -> bool,
    opaque: &dyn Fn(BlockId) -> bool,
) -> Vec<bool> {
    let loops = natural_loops(cfg, adj, dfs).loops;
    let mut in_nest = vec![false; cfg.num_vertices()];
    for l in &loops {
        in_nest[l.header.index()] =
            loops.iter().any(|o| o.header != l.header && (o.contains(l.header) || l.contains(o.header)));
    }
    let eligible = |l: &Loop| in_nest[l.header.index()] && eligible(l);
    let policy = Policy { hoisting: false, constant_entries: true, eligible: &eligible, opaque };
    choose(cfg, adj, dfs, loops, &policy)
}

/// How [`choose`] picks loops.
struct Policy<'a> {
    /// An edge whose count moves to constant sites ([`super::hoisting`]) counts one number.
    hoisting: bool,
    /// A loop stays reset only if each of its entries counts a constant number (a fixed point, see below).
    constant_entries: bool,
    /// Loops the caller allows to reset at all.
    eligible: &'a dyn Fn(&Loop) -> bool,
    /// Blocks after which the path number is not a function of the intraprocedural prefix.
    opaque: &'a dyn Fn(BlockId) -> bool,
}

/// The reset headers among `loops` (the natural loops of `cfg`) under `policy`, innermost loops first (see the
/// module documentation).
fn choose(cfg: &Cfg, adj: &Adjacency, dfs: &DfsInfo, loops: Vec<Loop>, policy: &Policy) -> Vec<bool> {
    let nv = cfg.num_vertices();
    let mut reset = vec![false; nv];
    let is_back = dfs.back_edge_mask(cfg.num_edges());
    let no_cuts = vec![false; nv];
    let ends = |v: BlockId| adj.out_edges(v).iter().any(|&e| cfg.edge(e).kind == EdgeKind::Termination);
    let mut loops: Vec<_> = loops
        .into_iter()
        .filter(|l| {
            l.header != cfg.entry()
                && !l.body.iter().any(|&v| ends(v) || (policy.opaque)(v))
                // The DAG's back edges into the header are exactly the loop's (a reducible loop).
                && adj.in_edges(l.header).iter().all(|&e| is_back[e.index()] == l.back_edges.contains(&e))
                && (policy.eligible)(l)
        })
        .collect();
    // Innermost first: a loop's body contains its inner loops'.
    loops.sort_by_key(|l| (l.body.len(), l.header));
    // The DAG of the resets decided so far, and its prefix counts: each loop builds only its trial DAG.
    let build = |reset: &[bool]| {
        let dag = assemble(cfg, adj, dfs, &no_cuts, reset);
        let prefixes = prefix_counts(&dag);
        (dag, prefixes)
    };
    let mut current = build(&reset);
    for l in &loops {
        let before = numbers_counted(cfg, adj, l, &current, policy.hoisting);
        reset[l.header.index()] = true;
        let trial = build(&reset);
        let after = numbers_counted(cfg, adj, l, &trial, policy.hoisting);
        if after > LOOP_RESET_MAX_PATHS || after >= before {
            reset[l.header.index()] = false;
        } else {
            current = trial;
        }
    }
    if policy.constant_entries {
        // Entries last, once the enclosing loops are decided (an inner loop's entry is often a constant only
        // because its outer loop resets too). A loop whose entry would count in memory is not reset: entered
        // often for an iteration or two (bzip2's bit-buffer refills), it would pay that count more often than
        // its iterations save. Dropping a reset can spoil another loop's counts, hence the fixed point.
        loop {
            let after_opaque = after_opaque(&current.0, policy.opaque);
            let spoiled: Vec<BlockId> = loops
                .iter()
                .filter(|l| reset[l.header.index()])
                .filter(|l| {
                    numbers_counted(cfg, adj, l, &current, policy.hoisting) > LOOP_RESET_MAX_PATHS
                        || !entries_count_constants(cfg, adj, l, &current, &after_opaque, policy)
                })
                .map(|l| l.header)
                .collect();
            if spoiled.is_empty() {
                break;
            }
            for h in spoiled {
                reset[h.index()] = false;
            }
            current = build(&reset);
        }
    }
    reset
}

/// The DAG with some loops reset, and its ENTRY→v path counts.
type Trial = (PathDag, Vec<u128>);

/// The path numbers counted inside an iteration of `l`: at its back edges and at the entries of the inner loops
/// reset in `trial` (the largest count over those edges; with `hoisting`, an edge whose count hoists to constant
/// sites counts one).
fn numbers_counted(cfg: &Cfg, adj: &Adjacency, l: &Loop, (dag, prefixes): &Trial, hoisting: bool) -> u128 {
    let in_body = |v: BlockId| l.body.binary_search(&v).is_ok();
    cfg.edge_ids()
        .filter(|&e| {
            let edge = cfg.edge(e);
            in_body(edge.from)
                && (l.back_edges.contains(&e)
                    || (in_body(edge.to) && matches!(dag.cfg_edge_role(e), CfgEdgeRole::Cut { .. })))
        })
        .map(|e| {
            let numbers = prefixes[cfg.edge(e).from.index()];
            let hoisted =
                hoisting && numbers > 1 && hoisted_count_sites(cfg, adj, dag, prefixes, e, &|_| true).is_some();
            if hoisted {
                1
            } else {
                numbers
            }
        })
        .max()
        .unwrap_or(0)
}

/// Whether every entry of the reset loop `l` counts a constant number in `trial`: its source has one path prefix
/// and no path to it passes an opaque block (`after_opaque`, of `trial`'s DAG), or (with hoisting) the count
/// hoists to constant sites.
fn entries_count_constants(
    cfg: &Cfg,
    adj: &Adjacency,
    l: &Loop,
    (dag, prefixes): &Trial,
    after_opaque: &[bool],
    policy: &Policy,
) -> bool {
    adj.in_edges(l.header).iter().filter(|e| !l.back_edges.contains(e)).all(|&e| {
        let from = cfg.edge(e).from;
        (prefixes[from.index()] <= 1 && !after_opaque[from.index()] && !(policy.opaque)(from))
            || (policy.hoisting && hoisted_count_sites(cfg, adj, dag, prefixes, e, &|_| true).is_some())
    })
}

/// Per vertex of `dag`: whether some path from ENTRY (or a restart) to it leaves an opaque block on the way.
fn after_opaque(dag: &PathDag, opaque: &dyn Fn(BlockId) -> bool) -> Vec<bool> {
    let mut after = vec![false; dag.num_vertices()];
    for &v in dag.topological_order() {
        if after[v.index()] || opaque(v) {
            for &d in dag.out_edges(v) {
                let to = dag.edge(d).to;
                if to != v && to != dag.exit() {
                    after[to.index()] = true;
                }
            }
        }
    }
    after
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ball_larus::numbering::Numbering;
    use crate::ball_larus::regenerate::{decode, to_cfg_path, PathEnd, PathStart};
    use crate::dfs::depth_first;
    use crate::graph::{test_cfg, EdgeId};

    /// 0 → 1 (outer header) → 2 (inner header) ⇄ 3, 2 → 4 → 1, 1 → 5 → EXIT (`promoted_paths`'s nest): edges
    /// 0 (0→1), 1 (1→2), 2 (2→3), 3 (3→2, inner back), 4 (2→4), 5 (4→1, outer back), 6 (1→5).
    fn nest() -> Cfg {
        test_cfg(6, &[(0, 1), (1, 2), (2, 3), (3, 2), (2, 4), (4, 1), (1, 5)], &[5])
    }

    /// Every path number that ends at `e` (its count's possible addresses), by brute force over all numbers.
    fn numbers_ending_at(dag: &PathDag, e: EdgeId) -> Vec<(PathStart, Vec<u32>)> {
        let n = Numbering::compute(dag).expect("small graph");
        (0..n.num_paths())
            .filter_map(|r| {
                let p = to_cfg_path(dag, &decode(dag, &n, r).expect("in range")).expect("valid");
                let ends = matches!(p.end, PathEnd::BackEdge { back } | PathEnd::Cut { edge: back } if back == e);
                ends.then(|| (p.start, p.blocks.iter().map(|b| b.0).collect()))
            })
            .collect()
    }

    /// By hand: uncut, the inner back edge ends three paths (2→3 from the inner header, 1→2→3 from the outer
    /// one, 0→1→2→3 from the entry) and the outer back edge three (2→4, 1→2→4, 0→1→2→4). Resetting both headers leaves one path at each back edge (2→3 and 2→4), one at the inner loop's
    /// entry 1→2 (the path 1 from the outer header) and one at the outer loop's entry 0→1 (the path 0).
    #[test]
    fn a_counting_nest_resets_both_headers_and_counts_one_number_per_edge() {
        let g = nest();
        let adj = g.adjacency();
        let dfs = depth_first(&g, &adj);
        let reset = loop_resets(&g, &adj, &dfs, ResetRule::OnePath);
        assert_eq!(reset, vec![false, true, true, false, false, false, false]);
        // The inner loop's entry 1→2 counts a constant once the outer loop resets: the hoisting rule agrees.
        assert_eq!(loop_resets(&g, &adj, &dfs, ResetRule::Hoisted), reset);
        let plain = PathDag::build(&g, &adj, &dfs);
        assert_eq!(numbers_ending_at(&plain, EdgeId(3)).len(), 3);
        assert_eq!(numbers_ending_at(&plain, EdgeId(5)).len(), 3);
        let dag = PathDag::build_for_path_mode(&g, &adj, &dfs, u128::MAX, ResetRule::OnePath).expect("fits");
        let (inner, outer) = (EdgeId(3), EdgeId(5));
        let at = |e| numbers_ending_at(&dag, e);
        assert_eq!(at(inner), vec![(PathStart::LoopHeader { back: inner }, vec![2, 3])]);
        assert_eq!(at(outer), vec![(PathStart::LoopHeader { back: inner }, vec![2, 4])]);
        assert_eq!(at(EdgeId(1)), vec![(PathStart::LoopHeader { back: outer }, vec![1])]);
        assert_eq!(at(EdgeId(0)), vec![(PathStart::Entry, vec![0])]);
    }

    /// Entered after two diamonds (0 → 1 | 2 → 3 → 4 | 5 → 6 → 7, the header; 7 ⇄ 8; 7 → 9 → EXIT), the loop's
    /// entry 6→7 ends one of four paths, and its count cannot move to constant sites (the walk up from 6
    /// meets block 3, which branches): the one-path rule resets the loop, the hoisting rule does not — a loop
    /// entered from the middle of many paths pays a memory count per entry, which short loops entered often
    /// cannot earn back.
    #[test]
    fn the_hoisting_rule_resets_only_loops_whose_entries_count_constants() {
        let edges = [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (3, 5), (4, 6), (5, 6), (6, 7), (7, 8), (8, 7), (7, 9)];
        let g = test_cfg(10, &edges, &[9]);
        let adj = g.adjacency();
        let dfs = depth_first(&g, &adj);
        assert!(loop_resets(&g, &adj, &dfs, ResetRule::OnePath)[7]);
        assert!(!loop_resets(&g, &adj, &dfs, ResetRule::Hoisted)[7]);
        // Entered straight from the function's entry, the same loop resets under both rules.
        let g = test_cfg(4, &[(0, 1), (1, 2), (2, 1), (1, 3)], &[3]);
        let adj = g.adjacency();
        let dfs = depth_first(&g, &adj);
        assert!(loop_resets(&g, &adj, &dfs, ResetRule::OnePath)[1]);
        assert!(loop_resets(&g, &adj, &dfs, ResetRule::Hoisted)[1]);
        assert!(!loop_resets(&g, &adj, &dfs, ResetRule::None)[1]);
    }

    /// The interprocedural rule on the nest: with no call of the program's procedures, both headers reset, as
    /// under the one-path rule. A call in the inner body (block 3 opaque) keeps both loops whole: their
    /// iterations' numbers depend on the callee's path. A call before the nest (the entry block opaque) leaves
    /// the outer loop's entry 0→1, and through it the inner loop's entry 1→2, with a callee-dependent number: a
    /// memory count per entry, so neither is reset. With the outer loop ruled out by the caller, the inner one
    /// is not reset either: its entry 1→2 would end one of two paths (from the entry, and from the outer
    /// header after the outer back edge); nor the outer one alone: its back edge would end two paths (from its
    /// header, and from the inner header after the inner back edge). A loop alone in its function is not reset.
    #[test]
    fn the_interprocedural_rule_resets_loops_free_of_program_calls_whose_entries_count_constants() {
        let g = nest();
        let adj = g.adjacency();
        let dfs = depth_first(&g, &adj);
        let all = |_: &Loop| true;
        let none = |_: BlockId| false;
        let both = interproc_loop_resets(&g, &adj, &dfs, &all, &none);
        assert_eq!(both, loop_resets(&g, &adj, &dfs, ResetRule::OnePath));
        assert!(both[1] && both[2]);
        let call_in_inner = |v: BlockId| v == BlockId(3);
        assert!(interproc_loop_resets(&g, &adj, &dfs, &all, &call_in_inner).iter().all(|&r| !r));
        let call_at_entry = |v: BlockId| v == BlockId(0);
        assert!(interproc_loop_resets(&g, &adj, &dfs, &all, &call_at_entry).iter().all(|&r| !r));
        let inner_only = |l: &Loop| l.header == BlockId(2);
        assert!(interproc_loop_resets(&g, &adj, &dfs, &inner_only, &none).iter().all(|&r| !r));
        // A loop alone in its function keeps its paths (the one-path rule would reset it).
        let lone = test_cfg(4, &[(0, 1), (1, 2), (2, 1), (1, 3)], &[3]);
        let (lone_adj, lone_dfs) = (lone.adjacency(), depth_first(&lone, &lone.adjacency()));
        assert!(loop_resets(&lone, &lone_adj, &lone_dfs, ResetRule::OnePath)[1]);
        assert!(interproc_loop_resets(&lone, &lone_adj, &lone_dfs, &all, &none).iter().all(|&r| !r));
        let outer_only = |l: &Loop| l.header == BlockId(1);
        assert!(interproc_loop_resets(&g, &adj, &dfs, &outer_only, &none).iter().all(|&r| !r));
    }

    /// A loop with a call that may not return (a `Termination` edge) is never promoted: it keeps its paths.
    #[test]
    fn a_loop_that_may_end_the_activation_is_not_reset() {
        let g = test_cfg(4, &[(0, 1), (1, 2), (2, 1), (1, 3)], &[3]);
        let adj = g.adjacency();
        let dfs = depth_first(&g, &adj);
        assert!(
            loop_resets(&g, &adj, &dfs, ResetRule::OnePath).iter().any(|&r| r),
            "a plain loop entered from a path is reset"
        );
        let mut edges: Vec<_> = g.edges().to_vec();
        edges.insert(3, crate::graph::Edge { from: BlockId(2), to: g.exit(), kind: EdgeKind::Termination });
        let with_call = Cfg::new(4, edges).expect("valid");
        let adj = with_call.adjacency();
        let dfs = depth_first(&with_call, &adj);
        assert!(loop_resets(&with_call, &adj, &dfs, ResetRule::OnePath).iter().all(|&r| !r));
    }
}
