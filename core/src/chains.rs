//! Straight-line chains: maximal runs of blocks that always execute one after the other, because each block's
//! only branch leads to the next and is that block's only way in.
//!
//! Two graphs of one function that differ only in where straight-line code is cut into blocks have the same
//! chains and the same branches between them. The interprocedural modes cut a block after every call site (the
//! call ends its block, whose only successor is the return site), so a profile taken in context or piecewise
//! mode describes a graph with more blocks than the one the same code has without instrumentation; on chains the
//! two agree, which lets use mode apply such a profile.

use crate::graph::{Cfg, EdgeId, EdgeKind};

/// The chains of a [`Cfg`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chains {
    /// Per real block: its chain, chains numbered in the order of their first blocks.
    pub of_block: Vec<u32>,
    /// Per edge: whether it joins two blocks of one chain (a `Branch` inside a chain).
    pub link: Vec<bool>,
    /// Number of chains.
    pub count: usize,
}

impl Chains {
    /// Splits `cfg` into chains. Block `v` continues block `u`'s chain when `u`'s only `Branch` edge goes to `v`,
    /// `u` does not return, `v` is not the entry, and that edge is `v`'s only incoming edge (termination edges of
    /// `u`, which leave to EXIT, do not matter). A cycle of such blocks (unreachable from the entry) is cut at
    /// its first block.
    pub fn of(cfg: &Cfg) -> Chains {
        let n = cfg.num_blocks();
        let adj = cfg.adjacency();
        // next[u] = the block continuing u's chain, and the edge to it.
        let mut next: Vec<Option<(usize, EdgeId)>> = vec![None; n];
        let mut continues = vec![false; n];
        for u in cfg.vertices().take(n) {
            let out = adj.out_edges(u);
            let branches: Vec<EdgeId> =
                out.iter().copied().filter(|&e| matches!(cfg.edge(e).kind, EdgeKind::Branch { .. })).collect();
            let returns = out.iter().any(|&e| cfg.edge(e).kind == EdgeKind::Return);
            let [e] = branches[..] else { continue };
            let v = cfg.edge(e).to;
            if returns || v == cfg.entry() || v == u || adj.in_edges(v).len() != 1 {
                continue;
            }
            next[u.index()] = Some((v.index(), e));
            continues[v.index()] = true;
        }
        // Heads: blocks that continue nothing, then one block of each remaining cycle.
        let mut head = vec![false; n];
        let mut reached = vec![false; n];
        let mark = |start: usize, reached: &mut Vec<bool>| {
            let mut b = Some(start);
            while let Some(x) = b.filter(|&x| !reached[x]) {
                reached[x] = true;
                b = next[x].map(|(v, _)| v);
            }
        };
        for b in 0..n {
            if !continues[b] {
                head[b] = true;
                mark(b, &mut reached);
            }
        }
        for b in 0..n {
            if !reached[b] {
                head[b] = true;
                mark(b, &mut reached);
            }
        }
        let mut of_block = vec![u32::MAX; n];
        let mut link = vec![false; cfg.num_edges()];
        let mut count = 0usize;
        for h in (0..n).filter(|&b| head[b]) {
            let id = count as u32;
            count += 1;
            of_block[h] = id;
            let mut b = h;
            while let Some((v, e)) = next[b] {
                if head[v] {
                    break;
                }
                of_block[v] = id;
                link[e.index()] = true;
                b = v;
            }
        }
        Chains { of_block, link, count }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{test_cfg, BlockId, Edge};

    #[test]
    fn a_block_cut_after_a_call_is_one_chain_with_its_return_site() {
        // 0: loop header -> 1 (body) | 3 (exit); body cut after a call: 1 -> 2 (return site) -> 0.
        let cut = test_cfg(4, &[(0, 1), (0, 3), (1, 2), (2, 0)], &[3]);
        let c = Chains::of(&cut);
        assert_eq!((c.of_block.clone(), c.count), (vec![0, 1, 1, 2], 3));
        let links: Vec<usize> = (0..c.link.len()).filter(|&i| c.link[i]).collect();
        assert_eq!(links, vec![2], "only 1 -> 2 is inside a chain");
        // The same code uncut: blocks 0, 1, 2 with the same chains and the same branches between them.
        let whole = test_cfg(3, &[(0, 1), (0, 2), (1, 0)], &[2]);
        assert_eq!(Chains::of(&whole).of_block, vec![0, 1, 2]);
    }

    #[test]
    fn joins_branches_and_the_entry_end_chains() {
        // 0 -> 1 -> 2 -> 3, and 4 -> 3: 3 has two ways in.
        let g = test_cfg(5, &[(0, 1), (1, 2), (2, 3), (4, 3)], &[3]);
        assert_eq!(Chains::of(&g).of_block, vec![0, 0, 0, 1, 2]);
        // A block with two branches to one successor (parallel edges) ends its chain.
        let g = test_cfg(2, &[(0, 1), (0, 1)], &[1]);
        assert_eq!(Chains::of(&g).of_block, vec![0, 1]);
        // A loop back to the entry never joins its chain; a block that (also) returns ends its chain.
        let g = test_cfg(2, &[(0, 1), (1, 0)], &[]);
        assert_eq!(Chains::of(&g).of_block, vec![0, 0]);
        let g = test_cfg(2, &[(0, 1)], &[0, 1]);
        assert_eq!(Chains::of(&g).of_block, vec![0, 1]);
    }

    #[test]
    fn termination_edges_do_not_end_a_chain_and_unreachable_cycles_are_cut() {
        let e = |from: u32, to: u32, kind| Edge { from: BlockId(from), to: BlockId(to), kind };
        let b = |succ| EdgeKind::Branch { succ };
        // 0 -> 1 with a call in 0 that may not return; 1 returns; 2 <-> 3 unreachable.
        let edges = vec![
            e(0, 1, b(0)),
            e(0, 4, EdgeKind::Termination),
            e(1, 4, EdgeKind::Return),
            e(2, 3, b(0)),
            e(3, 2, b(0)),
            e(4, 0, EdgeKind::ExitToEntry),
        ];
        let g = Cfg::new(4, edges).unwrap();
        let c = Chains::of(&g);
        assert_eq!((c.of_block.clone(), c.count), (vec![0, 0, 1, 1], 2));
        assert_eq!(c.link, vec![true, false, false, true, false, false]);
    }

    /// The chain graph: number of chains and the sorted (chain, chain, successor) of the branches between them.
    fn chain_graph(g: &Cfg) -> (usize, Vec<(u32, u32, u32)>) {
        let c = Chains::of(g);
        let mut edges: Vec<(u32, u32, u32)> = g
            .edges()
            .iter()
            .enumerate()
            .filter(|&(i, _)| !c.link[i])
            .filter_map(|(_, e)| match e.kind {
                EdgeKind::Branch { succ } => Some((c.of_block[e.from.index()], c.of_block[e.to.index()], succ)),
                _ => None,
            })
            .collect();
        edges.sort_unstable();
        (c.count, edges)
    }

    /// Cuts block `k` of `g` in two, as splitting a block after a call does: `k` keeps its position and
    /// branches to the new block `k + 1`, which takes over `k`'s outgoing edges; later blocks move up by one.
    fn cut(g: &Cfg, k: u32) -> Cfg {
        let n = g.num_blocks() as u32;
        let shift = |v: u32| if v > k { v + 1 } else { v };
        let mut edges: Vec<Edge> = g
            .edges()
            .iter()
            .map(|e| {
                let from = if e.from.0 == k { k + 1 } else { shift(e.from.0) };
                Edge { from: BlockId(from), to: BlockId(shift(e.to.0)), kind: e.kind }
            })
            .collect();
        edges.push(Edge { from: BlockId(k), to: BlockId(k + 1), kind: EdgeKind::Branch { succ: 0 } });
        Cfg::new(n + 1, edges).unwrap()
    }

    proptest::proptest! {
        /// However straight-line code is cut into blocks, the chains and the branches between them are the
        /// same.
        #[test]
        fn cutting_blocks_keeps_the_chain_graph(
            n in 1u32..8,
            succs in proptest::collection::vec(proptest::collection::vec(0u32..8, 0..3), 8),
            cuts in proptest::collection::vec(0u32..8, 1..4),
        ) {
            let mut pairs = Vec::new();
            let mut exits = Vec::new();
            for b in 0..n {
                let s = &succs[b as usize];
                if s.is_empty() {
                    exits.push(b);
                }
                pairs.extend(s.iter().map(|&t| (b, t % n)));
            }
            let g = test_cfg(n, &pairs, &exits);
            let mut h = g.clone();
            for k in cuts {
                h = cut(&h, k % h.num_blocks() as u32);
            }
            proptest::prop_assert_eq!(chain_graph(&g), chain_graph(&h));
        }
    }
}
