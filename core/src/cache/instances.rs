//! The function-instance graph: Mueller & Whalley 1995, §2.2, Definition 5.
//!
//! A function has one instance per calling context (call site, its caller's instance, …), so that what the
//! first call of a function did (cold misses) need not be assumed again for the later ones. A depth-first
//! expansion of the call graph from the entry builds a tree; `f_i` is the i-th instance of `f` in that order.
//!
//! What the paper leaves out, and how it is handled here:
//! - **Recursion** (§2.2: "retained as a special back edge"): a call to a function that already has an
//!   instance on the current chain of the expansion links to that instance ([`LinkKind::Recursive`]); that
//!   instance then returns to every caller linked to it.
//! - **Indirect calls** (not handled by the paper): a call lists its candidate callees ([`super::program::CallTarget`]),
//!   each gets an instance as if called directly; at run time the callee that was called selects the instance.
//! - **Foreign code and callbacks**: every function foreign code may call gets one [`InstanceKind::Callback`]
//!   instance (expanded like the entry), entered from and returning to every foreign call.
//! - **Blow-up** (the tree can grow exponentially): past `budget` instances, calls link to one shared
//!   [`InstanceKind::Summary`] instance per function, whose calls link to summaries too (context-insensitive,
//!   still sound: it merges the states of every context it stands for).
//!
//! Calls in blocks the function's entry does not reach never run and create nothing.

use super::program::Program;
use crate::dfs::depth_first;
use crate::graph::BlockId;
use crate::melski_reps::program::ProcId;
use std::collections::HashMap;

crate::graph::typed_index!(
    /// A function instance (its position in [`InstanceGraph::instances`]).
    InstanceId,
    "fi"
);

/// How an instance came to be.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum InstanceKind {
    /// The entry function's single instance (`main_0`).
    Entry,
    /// A tree instance, created for one call site of one caller instance.
    Tree,
    /// The function's instance for every call from foreign code.
    Callback,
    /// The shared instance of the function once the budget is spent.
    Summary,
}

/// How a call of an instance reaches its callee instance.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum LinkKind {
    /// To a new child instance.
    Tree,
    /// Back to an instance on the current chain (recursion; the special edge of §2.2).
    Recursive,
    /// To a summary instance.
    Summary,
}

/// One instance of a function.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Instance {
    /// The function.
    pub proc: ProcId,
    /// Among the instances of `proc`, in creation order (the paper's `f_i`).
    pub ordinal: u32,
    /// How it was created.
    pub kind: InstanceKind,
}

/// One call edge of the instance graph.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Link {
    /// The calling instance.
    pub caller: InstanceId,
    /// The call block.
    pub block: BlockId,
    /// The callee instance.
    pub callee: InstanceId,
    /// Tree, recursive or summary.
    pub kind: LinkKind,
}

/// The instances of a program and the call edges between them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceGraph {
    instances: Vec<Instance>,
    links: Vec<Link>,
    callee: HashMap<(InstanceId, BlockId, ProcId), InstanceId>,
    callback: HashMap<ProcId, InstanceId>,
}

/// The default instance budget: enough for every real context of ordinary programs, small enough that the
/// states over UPs × instances stay in memory.
pub const DEFAULT_INSTANCE_BUDGET: usize = 20_000;

impl InstanceGraph {
    /// Expands the call graph of `program` (see the module docs), creating at most `budget` tree instances.
    pub fn build(program: &Program, budget: usize) -> InstanceGraph {
        let calls: Vec<Vec<(BlockId, Vec<ProcId>)>> = program
            .functions()
            .iter()
            .map(|f| {
                let adj = f.cfg.adjacency();
                let dfs = depth_first(&f.cfg, &adj);
                f.blocks
                    .iter()
                    .enumerate()
                    .filter_map(|(b, code)| {
                        let b = BlockId::from_index(b);
                        let c = code.call.as_ref()?;
                        dfs.is_reachable(b).then(|| (b, c.procs.clone()))
                    })
                    .collect()
            })
            .collect();
        let mut g = Builder {
            graph: InstanceGraph {
                instances: Vec::new(),
                links: Vec::new(),
                callee: HashMap::new(),
                callback: HashMap::new(),
            },
            ordinals: vec![0; calls.len()],
            summary: vec![None; calls.len()],
            pending_summaries: Vec::new(),
            on_chain: vec![None; calls.len()],
        };
        let entry = g.create(program.entry(), InstanceKind::Entry);
        g.expand(entry, &calls, budget);
        for &p in program.callbacks() {
            if !g.graph.callback.contains_key(&p) {
                let i = g.create(p, InstanceKind::Callback);
                g.graph.callback.insert(p, i);
                g.expand(i, &calls, budget);
            }
        }
        while let Some(s) = g.pending_summaries.pop() {
            let p = g.graph.instances[s.index()].proc;
            for (b, targets) in &calls[p.index()] {
                for &q in targets {
                    let t = g.summary_of(q);
                    g.link(s, *b, q, t, LinkKind::Summary);
                }
            }
        }
        g.graph
    }

    /// All instances; index 0 is the entry's.
    pub fn instances(&self) -> &[Instance] {
        &self.instances
    }

    /// One instance.
    pub fn instance(&self, i: InstanceId) -> Instance {
        self.instances[i.index()]
    }

    /// All call edges, in creation order.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// The instance a call from `caller`'s block `block` to `proc` enters (what the run time looks up).
    pub fn callee(&self, caller: InstanceId, block: BlockId, proc: ProcId) -> Option<InstanceId> {
        self.callee.get(&(caller, block, proc)).copied()
    }

    /// The instance foreign code enters when it calls `proc`.
    pub fn callback(&self, proc: ProcId) -> Option<InstanceId> {
        self.callback.get(&proc).copied()
    }

    /// The callback instances, in callback order.
    pub fn callback_instances(&self) -> Vec<InstanceId> {
        let mut v: Vec<InstanceId> = self.callback.values().copied().collect();
        v.sort_unstable();
        v
    }

    /// `f3` style name of an instance given function names.
    pub fn name(&self, i: InstanceId, names: &[&str]) -> String {
        let inst = self.instance(i);
        format!("{}{}", names.get(inst.proc.index()).copied().unwrap_or("?"), inst.ordinal)
    }
}

struct Builder {
    graph: InstanceGraph,
    ordinals: Vec<u32>,
    summary: Vec<Option<InstanceId>>,
    pending_summaries: Vec<InstanceId>,
    on_chain: Vec<Option<InstanceId>>,
}

impl Builder {
    fn create(&mut self, p: ProcId, kind: InstanceKind) -> InstanceId {
        let id = InstanceId::from_index(self.graph.instances.len());
        self.graph.instances.push(Instance { proc: p, ordinal: self.ordinals[p.index()], kind });
        self.ordinals[p.index()] += 1;
        id
    }

    fn summary_of(&mut self, p: ProcId) -> InstanceId {
        if let Some(s) = self.summary[p.index()] {
            return s;
        }
        let s = self.create(p, InstanceKind::Summary);
        self.summary[p.index()] = Some(s);
        self.pending_summaries.push(s);
        s
    }

    fn link(&mut self, caller: InstanceId, block: BlockId, q: ProcId, callee: InstanceId, kind: LinkKind) {
        self.graph.links.push(Link { caller, block, callee, kind });
        self.graph.callee.insert((caller, block, q), callee);
    }

    /// Depth-first expansion below `root` (iterative: one frame per instance on the chain).
    fn expand(&mut self, root: InstanceId, calls: &[Vec<(BlockId, Vec<ProcId>)>], budget: usize) {
        // (instance, next call index, next target index)
        let mut stack: Vec<(InstanceId, usize, usize)> = vec![(root, 0, 0)];
        self.on_chain[self.graph.instances[root.index()].proc.index()] = Some(root);
        while let Some(top) = stack.last_mut() {
            let (i, ci, ti) = *top;
            let p = self.graph.instances[i.index()].proc;
            let Some((b, targets)) = calls[p.index()].get(ci) else {
                self.on_chain[p.index()] = None;
                stack.pop();
                continue;
            };
            let Some(&q) = targets.get(ti) else {
                top.1 += 1;
                top.2 = 0;
                continue;
            };
            top.2 += 1;
            let b = *b;
            if let Some(anc) = self.on_chain[q.index()] {
                self.link(i, b, q, anc, LinkKind::Recursive);
            } else if self.graph.instances.len() >= budget {
                let s = self.summary_of(q);
                self.link(i, b, q, s, LinkKind::Summary);
            } else {
                let c = self.create(q, InstanceKind::Tree);
                self.link(i, b, q, c, LinkKind::Tree);
                self.on_chain[q.index()] = Some(c);
                stack.push((c, 0, 0));
            }
        }
    }
}
