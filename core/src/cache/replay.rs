//! Driving the on-the-fly counter ([`OnTheFly`]) from a block-by-block replay of a run (a trace), rather than
//! from instrumentation at each UP's measurement point: the replay reports each block as it completes and each
//! call as it enters a function; this cuts every activation's blocks into UP executions at the tails, and tells
//! which function instance runs (the callee instance of the call block, or the callback instance when foreign
//! code made the call), exactly as the static cache simulation's supergraph models them.
//!
//! A walk that is not a sequence of the model's UPs, or an instance the model does not have, is an error: the
//! caller must then not use the counts (the run left the model — its categories do not cover it).

use super::classify::CachePlan;
use super::instances::InstanceId;
use super::onthefly::{Counts, OnTheFly};
use crate::graph::BlockId;
use crate::melski_reps::program::ProcId;

/// Cuts one function's walks into UPs: a trie over the UPs' block sequences.
#[derive(Clone, Debug)]
struct Cutter {
    tail: Vec<bool>,
    /// Per trie node: its children (block, node); node 0 is the root.
    children: Vec<Vec<(u32, u32)>>,
    /// Per trie node: the UP its path is, if any.
    up: Vec<Option<u32>>,
}

impl Cutter {
    fn new(uppa: &super::uppa::Uppa, num_blocks: usize) -> Cutter {
        let mut c = Cutter { tail: uppa.marks(num_blocks).1, children: vec![Vec::new()], up: vec![None] };
        for (u, p) in uppa.paths().iter().enumerate() {
            let mut at = 0usize;
            for b in &p.blocks {
                at = match c.children[at].iter().find(|x| x.0 == b.0) {
                    Some(&(_, n)) => n as usize,
                    None => {
                        let n = c.children.len();
                        c.children[at].push((b.0, n as u32));
                        c.children.push(Vec::new());
                        c.up.push(None);
                        n
                    }
                };
            }
            c.up[at] = Some(u as u32);
        }
        c
    }
}

/// One activation of a modelled function: its instance and how far into its current UP it is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Activation {
    /// The function.
    pub proc: ProcId,
    /// Its instance.
    pub instance: InstanceId,
    /// Trie node of the blocks run since the last UP ended (0: none).
    at: u32,
    /// The last block completed (`u32::MAX`: none yet).
    last: u32,
}

impl Activation {
    /// Whether the activation is between two UPs (no UP is partly run).
    pub fn between_ups(&self) -> bool {
        self.at == 0
    }

    /// The last block completed, if any.
    pub fn last_block(&self) -> Option<BlockId> {
        (self.last != u32::MAX).then_some(BlockId(self.last))
    }
}

/// Why a replay left the model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The blocks run since the last UP are no prefix of a UP.
    #[error("function {proc}: bb{block} does not continue a unique path of the model")]
    NotAPath {
        /// The function.
        proc: ProcId,
        /// The block.
        block: u32,
    },
    /// The model has no instance for this entry.
    #[error("function {0}: entered where the model has no instance of it")]
    NoInstance(ProcId),
}

/// The on-the-fly counter fed by a replay.
#[derive(Clone, Debug)]
pub struct StaticRun<'a> {
    plan: &'a CachePlan,
    cutters: Vec<Cutter>,
    /// Per instance: the node of its UP 0 (an instance's UP nodes are consecutive).
    base: Vec<u32>,
    counter: OnTheFly<'a>,
}

impl<'a> StaticRun<'a> {
    /// A run about to start with a cold cache.
    pub fn new(plan: &'a CachePlan) -> StaticRun<'a> {
        let g = &plan.graph;
        let cutters: Vec<Cutter> = g
            .uppas
            .iter()
            .map(|u| {
                let n = u.paths().iter().flat_map(|p| p.blocks.iter()).map(|b| b.index() + 1).max().unwrap_or(0);
                Cutter::new(u, n)
            })
            .collect();
        let base = (0..g.instances.instances().len())
            .map(|i| {
                let inst = InstanceId::from_index(i);
                let b = g.up_node(inst, 0).unwrap_or(u32::MAX);
                let ups = g.uppas[g.instances.instance(inst).proc.index()].paths().len();
                debug_assert!((0..ups as u32).all(|u| g.up_node(inst, u) == Some(b + u)));
                b
            })
            .collect();
        StaticRun { plan, cutters, base, counter: OnTheFly::new(plan) }
    }

    /// The entry function's activation (the run's start).
    pub fn entry(&self) -> Activation {
        let instance = InstanceId(0);
        Activation { proc: self.plan.graph.instances.instance(instance).proc, instance, at: 0, last: u32::MAX }
    }

    /// The activation a call from `caller`'s block `block` to `callee` starts (a call the model knows).
    pub fn call(&self, caller: &Activation, block: BlockId, callee: ProcId) -> Result<Activation, ReplayError> {
        let instance =
            self.plan.graph.instances.callee(caller.instance, block, callee).ok_or(ReplayError::NoInstance(callee))?;
        Ok(Activation { proc: callee, instance, at: 0, last: u32::MAX })
    }

    /// The activation of `callee` called from foreign code.
    pub fn callback(&self, callee: ProcId) -> Result<Activation, ReplayError> {
        let instance = self.plan.graph.instances.callback(callee).ok_or(ReplayError::NoInstance(callee))?;
        Ok(Activation { proc: callee, instance, at: 0, last: u32::MAX })
    }

    /// Block `b` of `a`'s function ran to its end: at a tail, its UP execution is counted and its supergraph node
    /// returned.
    pub fn block(&mut self, a: &mut Activation, b: BlockId) -> Result<Option<u32>, ReplayError> {
        let c = &self.cutters[a.proc.index()];
        let not_a_path = || ReplayError::NotAPath { proc: a.proc, block: b.0 };
        let &(_, next) = c.children[a.at as usize].iter().find(|x| x.0 == b.0).ok_or_else(not_a_path)?;
        a.last = b.0;
        if c.tail.get(b.index()).copied().unwrap_or(false) {
            let up = c.up[next as usize].ok_or_else(not_a_path)?;
            let node = self.base[a.instance.index()] + up;
            self.counter.up(node);
            a.at = 0;
            Ok(Some(node))
        } else {
            a.at = next;
            Ok(None)
        }
    }

    /// Per function (indexed by `ProcId`) and in total: the counts so far.
    pub fn report(&self) -> (Vec<Counts>, Counts) {
        self.counter.report()
    }
}
