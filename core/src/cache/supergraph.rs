//! The graph the static cache simulation runs over: UPs × function instances (Mueller & Whalley's Algorithm 2
//! scope), joined through calls and returns.
//!
//! Nodes: one per (instance, UP), holding the UP's line references; one *after-call* node per (instance, call
//! block), where the callee instances return to and execution continues to the call block's successors; and,
//! when foreign code may call back, two shared nodes: foreign code calling a callback instance, and a callback
//! instance returning into foreign code. "The immediate successor of a block with a call is the first block in
//! that instance of the called function" (§3.2, Example 5).

use super::instances::{InstanceGraph, InstanceId, InstanceKind};
use super::lines::{LineRef, Lines};
use super::program::{Geometry, Program};
use super::uppa::{small_uppa, Uppa};
use crate::graph::{BlockId, EdgeKind};
use std::collections::HashMap;

/// What a node stands for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// UP number `up` of the instance's function, run in that instance.
    Up {
        /// The instance.
        instance: InstanceId,
        /// Index into the function's UPPA.
        up: u32,
    },
    /// Where the call of `block` returns to in `instance`.
    AfterCall {
        /// The instance.
        instance: InstanceId,
        /// The call block.
        block: BlockId,
    },
    /// Foreign code about to call a callback.
    ForeignCalls,
    /// A callback returned into foreign code.
    ForeignReturns,
}

/// One node: what it is, its line references and its successors.
#[derive(Clone, Debug)]
pub struct Node {
    /// What the node stands for.
    pub kind: NodeKind,
    /// Instructions run (0 for virtual nodes).
    pub insns: u32,
    /// Line references in order.
    pub refs: Vec<LineRef>,
    /// Successor nodes.
    pub succ: Vec<u32>,
}

/// The program's supergraph of UPs × instances, with its lines, UPPAs and instances.
#[derive(Clone, Debug)]
pub struct Supergraph {
    /// The nodes; the run starts at `entries`.
    pub nodes: Vec<Node>,
    /// The entry instance's entry UPs (entered with a cold cache).
    pub entries: Vec<u32>,
    /// The lines referenced.
    pub lines: Lines,
    /// One UPPA per function.
    pub uppas: Vec<Uppa>,
    /// The instances.
    pub instances: InstanceGraph,
    up_node: HashMap<(InstanceId, u32), u32>,
}

impl Supergraph {
    /// Builds the supergraph: Algorithm 1 per function, the instance graph with `budget`, the references of
    /// every UP under `geometry`.
    pub fn build(program: &Program, geometry: &Geometry, budget: usize) -> Supergraph {
        let instances = InstanceGraph::build(program, budget);
        let uppas: Vec<Uppa> = program.functions().iter().map(|f| small_uppa(&f.cfg, &f.call_blocks())).collect();
        let mut lines = Lines::default();
        // References per (function, UP), shared by the function's instances.
        let code: Vec<Vec<(u32, Vec<LineRef>)>> = program
            .functions()
            .iter()
            .zip(&uppas)
            .map(|(f, u)| {
                u.paths()
                    .iter()
                    .map(|p| {
                        let insns: Vec<_> =
                            p.blocks.iter().flat_map(|b| f.blocks[b.index()].insns.iter().copied()).collect();
                        (insns.len() as u32, lines.refs(geometry, &insns))
                    })
                    .collect()
            })
            .collect();

        let mut nodes = Vec::new();
        let mut up_node = HashMap::new();
        let mut after = HashMap::new();
        for (i, inst) in instances.instances().iter().enumerate() {
            let instance = InstanceId::from_index(i);
            let f = program.function(inst.proc);
            for (up, (insns, refs)) in code[inst.proc.index()].iter().enumerate() {
                up_node.insert((instance, up as u32), nodes.len() as u32);
                nodes.push(Node {
                    kind: NodeKind::Up { instance, up: up as u32 },
                    insns: *insns,
                    refs: refs.clone(),
                    succ: Vec::new(),
                });
            }
            for (b, code) in f.blocks.iter().enumerate() {
                if code.call.is_some() {
                    let block = BlockId::from_index(b);
                    after.insert((instance, block), nodes.len() as u32);
                    nodes.push(Node {
                        kind: NodeKind::AfterCall { instance, block },
                        insns: 0,
                        refs: vec![],
                        succ: vec![],
                    });
                }
            }
        }
        let callbacks = instances.callback_instances();
        let foreign = (!callbacks.is_empty()).then(|| {
            let n = nodes.len() as u32;
            nodes.push(Node { kind: NodeKind::ForeignCalls, insns: 0, refs: vec![], succ: vec![] });
            nodes.push(Node { kind: NodeKind::ForeignReturns, insns: 0, refs: vec![], succ: vec![] });
            (n, n + 1)
        });

        let entry_ups = |inst: InstanceId| -> Vec<u32> {
            let p = instances.instance(inst).proc;
            uppas[p.index()].starting_at(BlockId(0)).iter().map(|&u| up_node[&(inst, u as u32)]).collect()
        };
        // Where control goes when `inst` returns.
        let mut returns_to: HashMap<InstanceId, Vec<u32>> = HashMap::new();
        for l in instances.links() {
            returns_to.entry(l.callee).or_default().push(after[&(l.caller, l.block)]);
        }
        if let Some((_, back)) = foreign {
            for &c in &callbacks {
                returns_to.entry(c).or_default().push(back);
            }
        }
        let mut edges: Vec<(u32, u32)> = Vec::new();
        for (i, inst) in instances.instances().iter().enumerate() {
            let instance = InstanceId::from_index(i);
            let f = program.function(inst.proc);
            let adj = f.cfg.adjacency();
            let uppa = &uppas[inst.proc.index()];
            // From the end of `block` (its call done): its successors' UPs, and the callers if it returns.
            let continue_from = |block: BlockId, from: u32, edges: &mut Vec<(u32, u32)>| {
                for &e in adj.out_edges(block) {
                    let ed = f.cfg.edge(e);
                    match ed.kind {
                        EdgeKind::Branch { .. } => {
                            for &u in uppa.starting_at(ed.to) {
                                edges.push((from, up_node[&(instance, u as u32)]));
                            }
                        }
                        EdgeKind::Return => {
                            for &r in returns_to.get(&instance).map_or(&[][..], Vec::as_slice) {
                                edges.push((from, r));
                            }
                        }
                        EdgeKind::Termination | EdgeKind::ExitToEntry => {}
                    }
                }
            };
            for (u, p) in uppa.paths().iter().enumerate() {
                let n = up_node[&(instance, u as u32)];
                let tail = p.tail();
                match &f.blocks[tail.index()].call {
                    None => continue_from(tail, n, &mut edges),
                    Some(call) => {
                        let a = after[&(instance, tail)];
                        for &q in &call.procs {
                            if let Some(c) = instances.callee(instance, tail, q) {
                                for e in entry_ups(c) {
                                    edges.push((n, e));
                                }
                            }
                        }
                        if call.foreign {
                            edges.push((n, a));
                            if let Some((calls, _)) = foreign {
                                edges.push((a, calls));
                            }
                        }
                        continue_from(tail, a, &mut edges);
                    }
                }
            }
        }
        if let Some((calls, back)) = foreign {
            for &c in &callbacks {
                for e in entry_ups(c) {
                    edges.push((calls, e));
                }
            }
            for (i, n) in nodes.iter().enumerate() {
                if let NodeKind::AfterCall { instance, block } = n.kind {
                    let inst = instances.instance(instance);
                    let call = program.function(inst.proc).blocks[block.index()].call.as_ref();
                    if call.is_some_and(|c| c.foreign) {
                        edges.push((back, i as u32));
                    }
                }
            }
        }
        edges.sort_unstable();
        edges.dedup();
        for (a, b) in edges {
            nodes[a as usize].succ.push(b);
        }
        let entries = entry_ups(InstanceId(0));
        debug_assert_eq!(instances.instance(InstanceId(0)).kind, InstanceKind::Entry);
        Supergraph { nodes, entries, lines, uppas, instances, up_node }
    }

    /// The node of UP `up` run in `instance` (what an on-the-fly event names).
    pub fn up_node(&self, instance: InstanceId, up: u32) -> Option<u32> {
        self.up_node.get(&(instance, up)).copied()
    }
}
