//! Fork re-entries: activations that a `fork()`ed child resumes, as measured virtual edges.
//!
//! At `fork()` the child's runtime zeroes its counters, so every activation on the forking thread's stack
//! continues in the child after its in-flight call without having been entered there: on its own, the child's
//! profile (and the parent's and child's profiles merged) has such a block left once more than it was entered.
//! The instrumented code measures each resumption (every call that may not return compares the process's fork
//! generation before and after it), and the reader adds it as a virtual edge EXIT→B into the block B of the
//! call. Flow is then conserved at every vertex, B's count includes its re-entries (the rest of B ran once more),
//! and B's `Termination` edge counts only real abnormal departures, so it must not be negative.
//!
//! Edge mode derives counts with the re-entries as measured edges ([`crate::propagate::derive_counts_with_reentries`]).
//! The path modes derive edge counts from net path counts, in which a truncated path's re-entries show up as a
//! count that is one lower per re-entry (its prefix ran once although two processes went on from it, see
//! [`crate::ball_larus::arrivals`]); [`add_fork_reentries`] adds them back on B's `Termination` edge together with the
//! virtual edge.

use crate::graph::{BlockId, Cfg, EdgeKind};

/// Why re-entries cannot be added to a function's counts.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReentryError {
    /// The block is outside the graph or has no `Termination` edge (no call there can be in flight at a fork).
    #[error("fork re-entry into {block}, which has no call that may not return")]
    NoTermination {
        /// The block named.
        block: BlockId,
    },
    /// A sum leaves `i128`.
    #[error("a count with fork re-entries overflows")]
    Overflow,
}

/// Adds `count` re-entries of each `(block, count)` to path-derived counts: to the block's first `Termination`
/// edge in `edges` (per cfg edge) and, as the virtual edge EXIT→block, to the in-sums in `vertices` (per vertex,
/// EXIT included) of the block and of EXIT (whose in-sum counts the departures). Also returns the re-entries per
/// block.
pub fn add_fork_reentries(
    cfg: &Cfg,
    edges: &mut [i128],
    vertices: &mut [i128],
    reentries: impl IntoIterator<Item = (BlockId, i128)>,
) -> Result<Vec<i128>, ReentryError> {
    let mut per_block = vec![0i128; cfg.num_blocks()];
    for (block, count) in reentries {
        let term = cfg
            .edge_ids()
            .find(|&e| cfg.edge(e).from == block && cfg.edge(e).kind == EdgeKind::Termination)
            .filter(|_| block.index() < cfg.num_blocks())
            .ok_or(ReentryError::NoTermination { block })?;
        let add = |slot: Option<&mut i128>| -> Result<(), ReentryError> {
            if let Some(x) = slot {
                *x = x.checked_add(count).ok_or(ReentryError::Overflow)?;
            }
            Ok(())
        };
        add(edges.get_mut(term.index()))?;
        add(vertices.get_mut(block.index()))?;
        add(vertices.get_mut(cfg.exit().index()))?;
        add(per_block.get_mut(block.index()))?;
    }
    Ok(per_block)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::setjmp_cfg;

    #[test]
    fn reentries_go_on_the_termination_edge_and_the_block() {
        // setjmp_cfg: bb2 has Termination e6. One re-entry of bb2 after a path-derived count of -1 on e6.
        let cfg = setjmp_cfg();
        let mut edges = vec![2, 1, 1, 2, 2, 0, -1, 2];
        let mut vertices = vec![2, 2, 1, 3, 1];
        let per = add_fork_reentries(&cfg, &mut edges, &mut vertices, [(BlockId(2), 1)]).unwrap();
        assert_eq!(edges, vec![2, 1, 1, 2, 2, 0, 0, 2]);
        assert_eq!(vertices, vec![2, 2, 2, 3, 2]);
        assert_eq!(per, vec![0, 0, 1, 0]);
        assert_eq!(
            add_fork_reentries(&cfg, &mut edges, &mut vertices, [(BlockId(3), 1)]),
            Err(ReentryError::NoTermination { block: BlockId(3) })
        );
        assert_eq!(
            add_fork_reentries(&cfg, &mut edges, &mut vertices, [(BlockId(4), 1)]),
            Err(ReentryError::NoTermination { block: BlockId(4) })
        );
    }
}
