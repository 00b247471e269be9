//! The program model ([`Function`]) of a function's machine code, so the static cache simulation runs over the
//! binary's real blocks and addresses.
//!
//! The model needs blocks that end at their call ([`super::program`]); a machine block may hold several calls.
//! So each machine block is cut after every call instruction (calls and tail jumps alike) into *segments*, the
//! model's blocks: segment `k` runs into segment `k + 1`, the last segment into the machine block's successors
//! (`Exit`: a `Return` edge). A block with no successor (a call that does not return, `ud2`) gets a
//! `Termination` edge. A block whose successors the code does not tell (an indirect jump) is given every block
//! of the function and EXIT as successors: more paths than the code has, never fewer, so the categories stay
//! sound. [`Segments`] tells the replay which model block a fetched range of a machine block completes.

use super::machine_map::MachineSucc;
use super::program::{BlockCode, CallTarget, Function, Insn};
use crate::graph::{BlockId, Cfg, Edge, EdgeKind};

/// One machine block as the model builder needs it.
#[derive(Clone, Debug)]
pub struct MachineCode<'a> {
    /// Instructions in address order.
    pub insns: &'a [Insn],
    /// Call instructions (and tail jumps): their index in `insns`, ascending, and what they may enter.
    pub calls: Vec<(usize, CallTarget)>,
    /// Successors, or `None` when the code does not tell them.
    pub succs: Option<&'a [MachineSucc]>,
}

/// Where each machine block's segments are among the model's blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segments {
    /// Per machine block: the model block of its first segment.
    first: Vec<u32>,
    /// Per machine block: the instruction index each segment ends at (exclusive), ascending; the last is the
    /// block's length (`[0]` for a block without instructions).
    ends: Vec<Vec<u32>>,
}

impl Segments {
    /// The model block of machine block `block`'s first segment.
    pub fn first(&self, block: usize) -> u32 {
        self.first[block]
    }

    /// Where machine block `block`'s segments end (see the field).
    pub fn ends(&self, block: usize) -> &[u32] {
        &self.ends[block]
    }

    /// The model block of the segment holding instruction `index` of machine block `block`.
    pub fn segment_of(&self, block: usize, index: usize) -> BlockId {
        let k = self.ends[block].iter().position(|&e| index < e as usize).unwrap_or(self.ends[block].len() - 1);
        BlockId(self.first[block] + k as u32)
    }

    /// Calls `done` with each model block that fetching instructions `from..to` of machine block `block`
    /// completes (in order). Fetching continues where the last fetch in the block stopped, so `from` is a
    /// segment start; a block without instructions completes when fetched with `from == to == 0`.
    pub fn completed(&self, block: usize, from: usize, to: usize, mut done: impl FnMut(BlockId)) {
        let ends = &self.ends[block];
        let first = self.first[block];
        if let [end] = ends[..] {
            // One segment (no call before the last instruction): the common case.
            if (from < end as usize || end == 0 && from == 0) && end as usize <= to {
                done(BlockId(first));
            }
            return;
        }
        for (k, &e) in ends.iter().enumerate() {
            if from < e as usize && e as usize <= to {
                done(BlockId(first + k as u32));
            }
        }
    }
}

/// Builds the model of a function from its machine blocks in layout order (the first is the entry; no blocks
/// make a function that returns at once).
pub fn model_function(name: &str, blocks: &[MachineCode<'_>]) -> (Function, Segments) {
    if blocks.is_empty() {
        let ret = [MachineSucc::Exit];
        return model_function(name, &[MachineCode { insns: &[], calls: Vec::new(), succs: Some(&ret) }]);
    }
    let mut first = Vec::with_capacity(blocks.len());
    let mut ends = Vec::with_capacity(blocks.len());
    let mut n = 0u32;
    for b in blocks {
        first.push(n);
        let len = b.insns.len() as u32;
        let mut e: Vec<u32> = b.calls.iter().map(|&(i, _)| i as u32 + 1).filter(|&x| x < len).collect();
        e.dedup();
        e.push(len);
        n += e.len() as u32;
        ends.push(e);
    }
    let exit = BlockId(n);
    let mut edges = Vec::new();
    let mut code = Vec::with_capacity(n as usize);
    for (i, b) in blocks.iter().enumerate() {
        let mut start = 0usize;
        for (k, &end) in ends[i].iter().enumerate() {
            let here = BlockId(first[i] + k as u32);
            let call = b.calls.iter().find(|&&(c, _)| c + 1 == end as usize).map(|(_, t)| t.clone());
            code.push(BlockCode { insns: b.insns[start..end as usize].to_vec(), call });
            start = end as usize;
            if k + 1 < ends[i].len() {
                edges.push(Edge { from: here, to: BlockId(here.0 + 1), kind: EdgeKind::Branch { succ: 0 } });
                continue;
            }
            let all: Vec<MachineSucc>;
            let succs = match b.succs {
                Some(s) => s,
                None => {
                    all = (0..blocks.len()).map(MachineSucc::Block).chain([MachineSucc::Exit]).collect();
                    &all
                }
            };
            let mut succ = 0;
            for &s in succs {
                match s {
                    MachineSucc::Block(j) => {
                        edges.push(Edge { from: here, to: BlockId(first[j]), kind: EdgeKind::Branch { succ } });
                        succ += 1;
                    }
                    MachineSucc::Exit => edges.push(Edge { from: here, to: exit, kind: EdgeKind::Return }),
                }
            }
            if succs.is_empty() {
                edges.push(Edge { from: here, to: exit, kind: EdgeKind::Termination });
            }
        }
    }
    edges.push(Edge { from: exit, to: BlockId(0), kind: EdgeKind::ExitToEntry });
    let cfg = Cfg::new(n, edges).expect("machine blocks make a well-formed CFG");
    (Function { name: name.to_string(), cfg, blocks: code }, Segments { first, ends })
}

/// The run's start as a model function: one block without code that calls foreign code — the C runtime, the
/// loader, functions that are not simulated — which may call every callback, any number of times, in any order.
/// Threads run one after another start here too.
pub fn foreign_start() -> Function {
    let cfg = Cfg::new(
        1,
        vec![
            Edge { from: BlockId(0), to: BlockId(1), kind: EdgeKind::Return },
            Edge { from: BlockId(1), to: BlockId(0), kind: EdgeKind::ExitToEntry },
        ],
    )
    .expect("a one-block CFG");
    Function {
        name: "<start>".to_string(),
        cfg,
        blocks: vec![BlockCode { insns: Vec::new(), call: Some(CallTarget::foreign()) }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::melski_reps::program::ProcId;

    fn insns(at: u64, n: usize) -> Vec<Insn> {
        (0..n).map(|k| Insn { addr: at + k as u64, size: 1 }).collect()
    }

    #[test]
    fn blocks_are_cut_after_each_call_and_keep_their_successors() {
        // Block 0: 5 instructions, calls at 1 and 4 (the last): segments [0,2) and [2,5), both with a call;
        // falls into block 1 or jumps to block 2. Block 1: returns. Block 2: an indirect jump. Block 3: empty,
        // no successor.
        let b0 = insns(0, 5);
        let b1 = insns(5, 2);
        let b2 = insns(7, 1);
        let s0 = [MachineSucc::Block(1), MachineSucc::Block(2)];
        let s1 = [MachineSucc::Exit];
        let s3: [MachineSucc; 0] = [];
        let blocks = [
            MachineCode {
                insns: &b0,
                calls: vec![(1, CallTarget::foreign()), (4, CallTarget::direct(ProcId(1)))],
                succs: Some(&s0),
            },
            MachineCode { insns: &b1, calls: vec![], succs: Some(&s1) },
            MachineCode { insns: &b2, calls: vec![], succs: None },
            MachineCode { insns: &[], calls: vec![], succs: Some(&s3) },
        ];
        let (f, seg) = model_function("f", &blocks);
        assert_eq!(f.cfg.num_blocks(), 5);
        assert_eq!((seg.first(0), seg.first(1), seg.first(2), seg.first(3)), (0, 2, 3, 4));
        assert_eq!(seg.ends(0), &[2, 5]);
        assert_eq!(f.blocks[0].insns, b0[..2].to_vec());
        assert_eq!(f.blocks[0].call, Some(CallTarget::foreign()));
        assert_eq!(f.blocks[1].call, Some(CallTarget::direct(ProcId(1))));
        assert_eq!(f.blocks[2].call, None);
        let edges: Vec<(u32, u32, EdgeKind)> = f.cfg.edges().iter().map(|e| (e.from.0, e.to.0, e.kind)).collect();
        let b = |succ| EdgeKind::Branch { succ };
        assert_eq!(
            edges,
            vec![
                (0, 1, b(0)),
                (1, 2, b(0)),
                (1, 3, b(1)),
                (2, 5, EdgeKind::Return),
                // the indirect jump: every block's first segment and EXIT
                (3, 0, b(0)),
                (3, 2, b(1)),
                (3, 3, b(2)),
                (3, 4, b(3)),
                (3, 5, EdgeKind::Return),
                (4, 5, EdgeKind::Termination),
                (5, 0, EdgeKind::ExitToEntry),
            ]
        );
        // Fetch ranges complete segments at their ends only.
        let done = |b, from, to| {
            let mut v = Vec::new();
            seg.completed(b, from, to, |x| v.push(x.0));
            v
        };
        assert_eq!(done(0, 0, 2), vec![0]);
        assert_eq!(done(0, 2, 5), vec![1]);
        assert_eq!(done(0, 0, 5), vec![0, 1]);
        assert_eq!(done(0, 5, 5), Vec::<u32>::new());
        assert_eq!(done(3, 0, 0), vec![4]);
        assert_eq!(seg.segment_of(0, 1), BlockId(0));
        assert_eq!(seg.segment_of(0, 4), BlockId(1));
    }
}
