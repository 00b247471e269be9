//! Straight runs: stretches of blocks that regeneration crosses without reading anything, walked as one.
//!
//! A *plain* vertex has one traced out-edge, which writes no witness, and no call site (not EXIT): the walk
//! reads nothing there and always takes that edge. Most blocks of a real program are plain — a bit trace
//! has about one decision per two or three blocks — so walking them one row lookup at a time costs most of
//! the regenerator's time. Here every plain vertex gets the run it starts: its own edge, then the edges of
//! the plain vertices that follow it, up to the first vertex that is not plain or that another edge enters
//! too (a merge: a run starting there is its own). Runs are thus suffixes of disjoint *sequences*, stored
//! once, each vertex of a sequence pointing to its own position: memory is one step per plain vertex. A
//! sink can then count a run instead of its blocks ([`super::StepSink::run`]) and derive the edges' counts
//! afterwards ([`super::FuncTables::add_run_counts`]).

use crate::graph::{BlockId, EdgeId};

/// One edge of a run and the block it enters.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RunStep {
    /// The edge crossed.
    pub edge: EdgeId,
    /// Its target.
    pub target: BlockId,
    /// Steps from this one to the end of its sequence, this one included: the length of the run that
    /// starts here.
    pub(crate) left: u32,
}

/// A function's sequences, and where each plain vertex's run starts in them.
pub(crate) struct Runs {
    /// Per vertex: the position of its run's first step in `steps` (`None`: not plain).
    pub(crate) start: Vec<Option<u32>>,
    pub(crate) steps: Vec<RunStep>,
}

impl Runs {
    /// The runs of a function whose vertex `v` is plain when `plain(v)` gives its edge and target. `in_degree`:
    /// the number of traced edges entering each vertex.
    pub(crate) fn compute(in_degree: &[u32], plain: &dyn Fn(BlockId) -> Option<(EdgeId, BlockId)>) -> Runs {
        let n = in_degree.len();
        let step_of: Vec<Option<(EdgeId, BlockId)>> = (0..n).map(|v| plain(BlockId(v as u32))).collect();
        // A plain vertex continues its predecessor's sequence when that predecessor is plain and the only way in.
        let mut continues = vec![false; n];
        for s in step_of.iter().flatten() {
            let t = s.1.index();
            if t < n && in_degree[t] == 1 && step_of[t].is_some() {
                continues[t] = true;
            }
        }
        let mut start = vec![None; n];
        let mut steps = Vec::new();
        // Heads first; then what is left (a cycle of plain vertices entered by nothing: unreachable), each
        // starting a sequence of its own.
        let heads = (0..n).filter(|&v| !continues[v]).chain((0..n).filter(|&v| continues[v]));
        for head in heads {
            if start[head].is_some() || step_of[head].is_none() {
                continue;
            }
            let first = steps.len();
            let mut v = head;
            while let (Some((edge, target)), None) = (step_of[v], start[v]) {
                start[v] = Some(steps.len() as u32);
                steps.push(RunStep { edge, target, left: 0 });
                v = target.index();
                if v >= n || !continues[v] {
                    break;
                }
            }
            let len = steps.len() - first;
            for (i, s) in steps[first..].iter_mut().enumerate() {
                s.left = (len - i) as u32;
            }
        }
        Runs { start, steps }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `a → b → c → d → x` with a second edge `y → c`: c is a merge, so the sequences are `a b` (into c) and
    /// `c d` (into x, not plain); b's run is its suffix.
    #[test]
    fn runs_stop_at_merges_and_at_vertices_that_are_not_plain() {
        let (a, b, c, d, x, y) = (0u32, 1, 2, 3, 4, 5);
        let next = [Some(b), Some(c), Some(d), Some(x), None, None]; // y is a predicate: not plain
        let mut in_degree = vec![0u32; 6];
        for t in next.iter().flatten() {
            in_degree[*t as usize] += 1;
        }
        in_degree[c as usize] += 1; // y → c
        let plain = |v: BlockId| next[v.index()].map(|t| (EdgeId(10 + v.0), BlockId(t)));
        let runs = Runs::compute(&in_degree, &plain);
        let step = |from: u32, to: u32, left| RunStep { edge: EdgeId(10 + from), target: BlockId(to), left };
        assert_eq!(runs.steps, vec![step(a, b, 2), step(b, c, 1), step(c, d, 2), step(d, x, 1)]);
        assert_eq!(runs.start, vec![Some(0), Some(1), Some(2), Some(3), None, None]);
        let _ = y;
    }

    /// A plain loop `h → h` entered from outside is a merge: its run is one step, back to itself; a cycle of
    /// plain vertices nothing enters (unreachable) still gets runs, and they end.
    #[test]
    fn plain_cycles_give_finite_runs() {
        // 0 → 1 → 1 (self loop, 1 entered twice); 2 → 3 → 2 entered by nothing else.
        let next = [Some(1u32), Some(1), Some(3), Some(2)];
        let in_degree = [0, 2, 1, 1];
        let plain = |v: BlockId| next[v.index()].map(|t| (EdgeId(v.0), BlockId(t)));
        let runs = Runs::compute(&in_degree, &plain);
        assert_eq!(runs.steps.len(), 4, "one step per plain vertex");
        for (v, s) in runs.start.iter().enumerate() {
            let p = s.expect("every vertex is plain") as usize;
            let run = &runs.steps[p..p + runs.steps[p].left as usize];
            assert_eq!(run[0].edge, EdgeId(v as u32), "a run starts with its vertex's own edge");
            assert!(run.len() <= 2);
        }
        assert_eq!(runs.steps[runs.start[1].unwrap() as usize].left, 1, "the self loop");
    }
}
