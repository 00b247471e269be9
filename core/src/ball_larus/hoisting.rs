//! Hoisted segment counts: a count that moves from a back edge to the edges where its path number is decided.
//!
//! A back (or cut) edge `w→v` counts `count[r + Inc(w→EXIT)]++`, where `r` is the path register at `w`. In a
//! reset loop ([`super::resets`]) with two or three paths through its body, `r` at the latch is one of a few
//! numbers, but still a run-time value: the count's address is computed, which keeps LLVM from holding it in a
//! register (and from vectorising the loop). Yet the number is known earlier. When `w` has no other way on
//! than the back edge, every execution that enters `w` ends its path there, so the count can move onto each edge
//! into `w`, with that edge's increment added; and again from there through each block whose only out-edge
//! leads on, until every moved count sits on an edge whose source has a single path prefix — where `r` is a
//! compile-time constant and the count is a plain update at a constant address (bubble sort's
//! `if (a[i] > a[i+1]) swap` counts on the swap and on the skip edge instead of at the loop's back edge, like an
//! edge profile).
//!
//! A block on the way may have other ways on (a bottom-tested loop, `do … while (c)`, leaves from its latch; a
//! `break` leaves from the middle): the count still moves up, and each of those other out-edges takes it back
//! (an *uncount*: −1 at the number the block's register would have reached the counting edge with, a run-time
//! address, but once per loop exit instead of once per iteration), so zlib's `slide_hash` counts its two paths
//! per iteration at constant addresses too.
//!
//! Exact by construction: each execution that reaches the counting edge passed exactly one of the sites, and
//! each execution that passes a site goes on, through blocks each met once and along the one edge towards
//! the counting edge, adding the increments the site's number includes, until it takes the counting edge or an
//! uncount of exactly that number (an uncount never leads back into the walked blocks: every block the walk
//! meets has more than one prefix, so no site source lies downstream of it). A block that may be left abnormally has
//! a `Termination` out-edge too, so it is never walked through; the pass also refuses blocks its graph does not
//! show as risky (a call that returns twice) through `may_pass`.

use super::dag::{CfgEdgeRole, DagEdgeId, PathDag};
use crate::graph::{Adjacency, BlockId, Cfg, EdgeId, EdgeKind};

/// Most sites one count moves to: each is a split edge with its own update in the code.
///
/// Part of [`super::resets::ResetRule::Hoisted`]'s definition, like [`HOISTED_UNCOUNTS_MAX`]: which loops reset
/// depends on it, and readers rebuild the writer's DAG from the rule recorded in the profile. A different value
/// needs a new rule (and metadata version), or profiles written before decode wrongly — or, at best, as
/// "corrupt" (tried with 16: bzip2's `mainSimpleSort` then numbers 27 paths where the profile records 183).
pub const HOISTED_SITES_MAX: usize = 4;
/// Most uncounts one hoisted count may need (the other ways out of the blocks it passes).
pub const HOISTED_UNCOUNTS_MAX: usize = 2;

/// One place a hoisted count goes: the cfg edge, and the DAG edges whose increments the path register gains
/// from the edge's source to the counting edge (the site's own DAG edge first); the counting edge's exit
/// surrogate comes on top.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoistedSite {
    /// The cfg edge that carries the count.
    pub edge: EdgeId,
    /// The DAG edges from the site's source to the counting edge's source, in order.
    pub dag_edges: Vec<DagEdgeId>,
}

/// An edge that takes a hoisted count back: it leaves a block the count passed through without going on to the
/// counting edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Uncount {
    /// The cfg edge that carries the −1.
    pub edge: EdgeId,
    /// The DAG edges from the edge's source to the counting edge's source, in order (empty at the latch).
    pub dag_edges: Vec<DagEdgeId>,
}

/// Where a hoisted count goes: `sites` count +1; `uncounts`, the other ways out of the blocks between the sites
/// and the counting edge (a bottom-tested loop's exit, a `break`), take back −1 at the number the count would
/// have had (a run-time address, but once per loop exit, not per iteration).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HoistedCount {
    /// Edges that count the path they decide, at a constant number.
    pub sites: Vec<HoistedSite>,
    /// The ways out that take the count back.
    pub uncounts: Vec<Uncount>,
}

/// ENTRY→v path counts of `dag` per vertex (saturating): the `prefixes` [`hoisted_count_sites`] takes.
pub fn prefix_counts(dag: &PathDag) -> Vec<u128> {
    super::budget::saturating_counts(dag).1
}

/// Where the count of the back or cut edge `e` goes instead (see the module docs): `Some` when every site's
/// source has one path prefix in `prefixes` (ENTRY→v path counts of `dag`, saturating), with at most
/// [`HOISTED_SITES_MAX`] sites and [`HOISTED_UNCOUNTS_MAX`] uncounts; `None` when `e` is no such edge, its own
/// source already has one prefix, or the walk meets a block that is not `may_pass`, a block twice, or a way out
/// that is not a plain branch.
pub fn hoisted_count_sites(
    cfg: &Cfg,
    adj: &Adjacency,
    dag: &PathDag,
    prefixes: &[u128],
    e: EdgeId,
    may_pass: &dyn Fn(BlockId) -> bool,
) -> Option<HoistedCount> {
    dag.cfg_edge_role(e).segment_break()?;
    let one_prefix = |v: BlockId| prefixes.get(v.index()).copied() == Some(1);
    let latch = cfg.edge(e).from;
    if one_prefix(latch) {
        return None;
    }
    // A way out that takes the count back must be a Real branch (a return or an abnormal exit would need its
    // own path count moved too).
    let plain_exit = |o: EdgeId| {
        matches!(cfg.edge(o).kind, EdgeKind::Branch { .. }) && matches!(dag.cfg_edge_role(o), CfgEdgeRole::Real(_))
    };
    let mut sites = Vec::new();
    let mut uncounts: Vec<Uncount> = Vec::new();
    let mut walked: Vec<BlockId> = Vec::new();
    // Blocks still to walk through, each with its edge towards the counting edge and the DAG edges from it to
    // the counting edge's source.
    let mut work: Vec<(BlockId, EdgeId, Vec<DagEdgeId>)> = vec![(latch, e, Vec::new())];
    while let Some((v, towards, suffix)) = work.pop() {
        // A block met twice lies on two routes to the latch: one of them would be an uncount that goes on.
        if v == cfg.entry() || !may_pass(v) || walked.contains(&v) {
            return None;
        }
        walked.push(v);
        for &o in adj.out_edges(v).iter().filter(|&&o| o != towards) {
            if !plain_exit(o) || uncounts.len() == HOISTED_UNCOUNTS_MAX {
                return None;
            }
            uncounts.push(Uncount { edge: o, dag_edges: suffix.clone() });
        }
        for &into in adj.in_edges(v) {
            let edge = cfg.edge(into);
            let (EdgeKind::Branch { .. }, CfgEdgeRole::Real(d)) = (edge.kind, dag.cfg_edge_role(into)) else {
                return None;
            };
            if edge.from == v {
                return None;
            }
            let mut dag_edges = Vec::with_capacity(suffix.len() + 1);
            dag_edges.push(d);
            dag_edges.extend_from_slice(&suffix);
            if one_prefix(edge.from) {
                sites.push(HoistedSite { edge: into, dag_edges });
                if sites.len() > HOISTED_SITES_MAX {
                    return None;
                }
            } else {
                work.push((edge.from, into, dag_edges));
            }
        }
    }
    // An uncount into a block the count passes through would take back a count that goes on.
    if uncounts.iter().any(|u| walked.contains(&cfg.edge(u.edge).to)) {
        return None;
    }
    sites.sort_by_key(|s| s.edge);
    Some(HoistedCount { sites, uncounts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ball_larus::budget;
    use crate::ball_larus::numbering::Numbering;
    use crate::ball_larus::regenerate::{decode, to_cfg_path, PathEnd};
    use crate::ball_larus::resets::{loop_resets, ResetRule};
    use crate::dfs::depth_first;
    use crate::graph::test_cfg;

    /// The limits define the recorded reset rules for every reader (see [`HOISTED_SITES_MAX`]): changing them
    /// changes how profiles already written decode. A change must come with a new rule.
    #[test]
    fn the_limits_are_part_of_the_recorded_rule() {
        assert_eq!((HOISTED_SITES_MAX, HOISTED_UNCOUNTS_MAX), (4, 2), "add a ResetRule variant instead");
        assert_eq!(crate::ball_larus::resets::LOOP_RESET_MAX_PATHS, 1, "add a ResetRule variant instead");
    }

    /// Bubble sort's inner loop as clang emits it: 0 → 1 (header: `i < top`) → 2 (`a[i] > a[i+1]`) → 3 (swap)
    /// → 4 (join) → 5 (`i++`) → 1, and 2 → 4, 1 → 6 → EXIT. Edges: 0 (0→1), 1 (1→2), 2 (2→3), 3 (3→4),
    /// 4 (4→5), 5 (5→1, back), 6 (2→4), 7 (1→6).
    fn bubble() -> Cfg {
        test_cfg(7, &[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 1), (2, 4), (1, 6)], &[6])
    }

    /// By hand: resetting the header leaves two paths at the back edge, 1→2→3→4→5 and 1→2→4→5. Block 5 and block
    /// 4 lead only to the back edge, and 4's in-edges come from 3 (one prefix: 1→2→3) and from 2 (one prefix),
    /// so the count moves to the swap edge 3→4 and the skip edge 2→4; with the increments they gain, each site's
    /// number is the number of the path that ends at the back edge through it.
    #[test]
    fn bubble_sorts_back_edge_count_moves_to_the_swap_and_the_skip_edge() {
        let g = bubble();
        let adj = g.adjacency();
        let dfs = depth_first(&g, &adj);
        let reset = loop_resets(&g, &adj, &dfs, ResetRule::Hoisted);
        assert_eq!(reset, vec![false, true, false, false, false, false, false, false]);
        let dag = PathDag::build_for_path_mode(&g, &adj, &dfs, u128::MAX, ResetRule::Hoisted).unwrap();
        let (_, prefixes) = budget::saturating_counts(&dag);
        let back = EdgeId(5);
        let hoisted = hoisted_count_sites(&g, &adj, &dag, &prefixes, back, &|_| true).expect("hoisted");
        assert!(hoisted.uncounts.is_empty(), "a top-tested loop's latch only goes back");
        let sites = hoisted.sites;
        assert_eq!(sites.iter().map(|s| s.edge).collect::<Vec<_>>(), vec![EdgeId(3), EdgeId(6)]);
        let n = Numbering::compute(&dag).unwrap();
        let (exit, _) = dag.cfg_edge_role(back).segment_break().unwrap();
        for s in &sites {
            // The number: the site's source's single prefix, then the site's DAG edges, then the exit surrogate.
            let from = g.edge(s.edge).from;
            let prefix: u128 = (0..n.num_paths())
                .map(|r| decode(&dag, &n, r).unwrap())
                .find_map(|p| {
                    let i = p.iter().position(|&d| dag.edge(d).to == from)?;
                    Some(p[..=i].iter().map(|&d| n.val(d)).sum())
                })
                .unwrap();
            let r = prefix + s.dag_edges.iter().map(|&d| n.val(d)).sum::<u128>() + n.val(exit);
            let path = to_cfg_path(&dag, &decode(&dag, &n, r).unwrap()).unwrap();
            assert_eq!(path.end, PathEnd::BackEdge { back });
            assert!(path.edges.contains(&s.edge), "{path:?} through {:?}", s.edge);
        }
        // Without the reset the back edge's paths begin before the loop: nothing to hoist.
        let plain = PathDag::build(&g, &adj, &dfs);
        let (_, prefixes) = budget::saturating_counts(&plain);
        assert_eq!(hoisted_count_sites(&g, &adj, &plain, &prefixes, back, &|_| true), None);
        // A latch the pass may not pass through keeps its count.
        let (_, prefixes) = budget::saturating_counts(&dag);
        assert_eq!(hoisted_count_sites(&g, &adj, &dag, &prefixes, back, &|v| v != BlockId(4)), None);
    }

    /// A `break` between the decision and the latch (bubble sort's outer loop: `if (!swapped) break;` after the
    /// inner loop): 0 → 1 (header) → 2 (c1) → 3 | 4 → 5 (c2: break) → 6 (latch) → 1 (back, edge 7); 5 → 7
    /// (break, edge 8); 1 → 7 (edge 9); 7 → EXIT. By hand: the count moves through the latch 6 and block 5 to
    /// the arms 3→5 (edge 4) and 4→5 (edge 5); the break takes it back at 5's register plus 5→6's increment.
    #[test]
    fn a_break_between_the_arms_and_the_latch_takes_the_count_back() {
        let edges = [(0, 1), (1, 2), (2, 3), (2, 4), (3, 5), (4, 5), (5, 6), (6, 1), (5, 7), (1, 7)];
        let g = test_cfg(8, &edges, &[7]);
        let adj = g.adjacency();
        let dfs = depth_first(&g, &adj);
        assert!(loop_resets(&g, &adj, &dfs, ResetRule::Hoisted)[1]);
        let dag = PathDag::build_for_path_mode(&g, &adj, &dfs, u128::MAX, ResetRule::Hoisted).unwrap();
        let (_, prefixes) = budget::saturating_counts(&dag);
        let h = hoisted_count_sites(&g, &adj, &dag, &prefixes, EdgeId(7), &|_| true).expect("hoisted");
        assert_eq!(h.sites.iter().map(|s| s.edge).collect::<Vec<_>>(), vec![EdgeId(4), EdgeId(5)]);
        let CfgEdgeRole::Real(five_six) = dag.cfg_edge_role(EdgeId(6)) else { panic!("5→6 is a DAG edge") };
        assert_eq!(h.uncounts, vec![Uncount { edge: EdgeId(8), dag_edges: vec![five_six] }]);
    }

    /// A bottom-tested loop (`do { if (c1) … else … } while (c2)`): 0 → 1 (c1) → 2 | 3 → 4 (latch: c2) → 1
    /// (back, edge 5) | 5 → EXIT (edge 6). By hand: reset, the back edge ends two paths, 1→2→4 and 1→3→4;
    /// the latch also leaves the loop, so the counts move to 2→4 (edge 3) and 3→4 (edge 4) and the exit 4→5
    /// takes back the one the last iteration counted.
    #[test]
    fn a_bottom_tested_loop_counts_its_arms_and_takes_the_last_count_back_at_the_exit() {
        let g = test_cfg(6, &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 1), (4, 5)], &[5]);
        let adj = g.adjacency();
        let dfs = depth_first(&g, &adj);
        assert!(loop_resets(&g, &adj, &dfs, ResetRule::Hoisted)[1]);
        assert!(!loop_resets(&g, &adj, &dfs, ResetRule::OnePath)[1], "two paths per iteration");
        let dag = PathDag::build_for_path_mode(&g, &adj, &dfs, u128::MAX, ResetRule::Hoisted).unwrap();
        let (_, prefixes) = budget::saturating_counts(&dag);
        let h = hoisted_count_sites(&g, &adj, &dag, &prefixes, EdgeId(5), &|_| true).expect("hoisted");
        assert_eq!(h.sites.iter().map(|s| s.edge).collect::<Vec<_>>(), vec![EdgeId(3), EdgeId(4)]);
        assert_eq!(h.uncounts, vec![Uncount { edge: EdgeId(6), dag_edges: vec![] }]);
        // Three ways out of the latch are too many uncounts.
        let g = test_cfg(8, &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 1), (4, 5), (4, 6), (4, 7)], &[5, 6, 7]);
        let adj = g.adjacency();
        let dfs = depth_first(&g, &adj);
        let nv = g.num_vertices();
        let mut reset = vec![false; nv];
        reset[1] = true;
        let dag = crate::ball_larus::dag::assemble(&g, &adj, &dfs, &vec![false; nv], &reset);
        let (_, prefixes) = budget::saturating_counts(&dag);
        // Three ways out of the latch take back three counts: more than the limit (checked when compiling).
        const { assert!(HOISTED_UNCOUNTS_MAX < 3) };
        assert_eq!(hoisted_count_sites(&g, &adj, &dag, &prefixes, EdgeId(5), &|_| true), None);
    }
}
