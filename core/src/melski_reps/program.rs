//! The program model of interprocedural path profiling: procedures (each a [`Cfg`]) and their call sites.
//!
//! Melski & Reps, "Interprocedural Path Profiling", CC 1999 / UW–Madison TR-1382, 1998, §2.2: the supergraph
//! G* has one CFG per procedure and, for each call site, a *call* vertex c and a *return-site* vertex r joined
//! through the callee by the call edge c→Entry_Q and the return edge Exit_Q→r.
//!
//! # How a call site is modelled
//! A call site is attached to a block c of the caller's [`Cfg`] (the block that ends with the call; the pass
//! splits blocks so that this holds). c has exactly one `Branch` out-edge, c→r, and r — the *return-site
//! block*, where execution continues after the call — has c→r as its only in-edge. So "c→r" in the CFG stands
//! for the paper's call edge c→Entry_Q, the callee's body and the return edge Exit_Q→r; the intraprocedural
//! algorithms (DFS, the Ball–Larus DAG) see it as an ordinary edge, which is exactly the paper's rule that "a
//! return vertex r is considered to be a successor of its associated call vertex c" (§5.2.2). Because r has no
//! other in-edge, c→r is never a back edge.
//!
//! c may also have `Termination` edges (the call may leave the frame abnormally: `exit`, `longjmp`, an
//! exception); they end the observable path at c like the §9.2.1 surrogate c→GExit_P. c has no `Return` edge.
//! r may itself be a call block (two consecutive calls). The entry block may be a call block.
//!
//! Invariant (checked by [`Program::new`]): every procedure's entry block has no in-edges (LLVM forbids branches
//! to the entry block), call sites are sorted by strictly increasing block, and every call site has the shape
//! above. Every later algorithm relies on these and is total on every program `Program::new` accepts.

use crate::graph::{BlockId, Cfg, EdgeId, EdgeKind};
use serde::{Deserialize, Serialize};

crate::graph::typed_index!(
    /// A procedure of a [`Program`] (its position in the procedure list).
    ProcId,
    "f"
);
crate::graph::typed_index!(
    /// A call site of a [`Program`]: numbered program-wide, procedure by procedure, in each procedure's
    /// call-site order (= block order).
    CallSiteId,
    "cs"
);

/// What a call site calls, and whether the call is profiled interprocedurally.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Callee {
    /// A direct call to a procedure of the program. Paths run through the callee unless the call-graph DFS
    /// classifies the site as recursive (Transformation 3), in which case it becomes a summary edge and the
    /// callee a root.
    Proc(ProcId),
    /// A direct call to a procedure of the program that is *cut* by choice (§8 hybrid profiling, e.g. a call
    /// across translation units): a summary edge, and the callee becomes a root.
    Cut(ProcId),
    /// A call whose callee is not part of the program or not known (an indirect call, a library function;
    /// §9.2.3): a summary edge; no procedure of the program is entered.
    External,
}

/// One call site: the call block and what it calls (see the module docs for the required block shape).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CallSite {
    /// The call block c; its single `Branch` out-edge leads to the return-site block r.
    pub block: BlockId,
    /// What is called.
    pub callee: Callee,
}

/// One procedure: its CFG, its call sites and whether code outside the program may call it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Procedure {
    /// The procedure's CFG (entry = block 0, Exit_P = the virtual EXIT vertex).
    pub cfg: Cfg,
    /// Call sites, sorted by strictly increasing block.
    pub call_sites: Vec<CallSite>,
    /// Whether the procedure may be entered from outside the program (e.g. `main`, an exported or
    /// address-taken function); such a procedure is always a root. Procedures without callers are roots anyway.
    pub external_entry: bool,
    /// Vertices whose out-edges end one path and start the next, like back edges (the Ball–Larus DAG cut at
    /// them, [`crate::ball_larus::dag::PathDag::build_with_cuts`]): how a procedure with too many paths of its
    /// own still fits the numbering. Never the entry or a call site's block. Sorted, usually empty.
    pub cut_vertices: Vec<BlockId>,
    /// Loop headers that restart every path entering them, from outside the loop as after a back edge, with
    /// one shared start ([`crate::ball_larus::resets`]): each iteration then counts a number that does not
    /// depend on how the loop was entered, which lets the pass keep the count in a register. Chosen by the
    /// pass ([`crate::ball_larus::resets::interproc_loop_resets`]) and recorded. Sorted, usually few.
    pub reset_headers: Vec<BlockId>,
}

impl Procedure {
    /// A procedure that is not marked as externally entered and has no cut vertices or reset loops.
    pub fn new(cfg: Cfg, call_sites: Vec<CallSite>) -> Procedure {
        Procedure { cfg, call_sites, external_entry: false, cut_vertices: Vec::new(), reset_headers: Vec::new() }
    }
}

/// A validated call site with everything the algorithms need about it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct SiteInfo {
    /// The procedure containing the call.
    pub proc: ProcId,
    /// The call block c.
    pub block: BlockId,
    /// The return-site block r.
    pub ret: BlockId,
    /// The CFG edge c→r that stands for call, callee and return.
    pub call_edge: EdgeId,
    /// What is called.
    pub callee: Callee,
}

/// Why a set of procedures is not a well-formed program; see the module docs for the rules.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProgramError {
    /// A program has at least one procedure.
    #[error("a program must have at least one procedure")]
    NoProcedures,
    /// More procedures or call sites than 32-bit ids can name.
    #[error("too many procedures or call sites ({0})")]
    TooLarge(usize),
    /// The entry block of `proc` has an in-edge (LLVM forbids branches to the entry block).
    #[error("{proc}: edge {edge} enters the entry block")]
    EntryHasPredecessors {
        /// The procedure.
        proc: ProcId,
        /// The offending edge.
        edge: EdgeId,
    },
    /// Call sites of `proc` are not sorted by strictly increasing block (also: two sites in one block).
    #[error("{proc}: call site #{index} is not after the previous one in block order")]
    CallSitesUnsorted {
        /// The procedure.
        proc: ProcId,
        /// Position in the procedure's call-site list.
        index: usize,
    },
    /// A call site names a block that does not exist.
    #[error("{proc}: call block {block} does not exist")]
    CallBlockOutOfRange {
        /// The procedure.
        proc: ProcId,
        /// The named block.
        block: BlockId,
    },
    /// A call site names a procedure that does not exist.
    #[error("{proc}: call site in {block} calls unknown procedure {callee}")]
    UnknownCallee {
        /// The calling procedure.
        proc: ProcId,
        /// The call block.
        block: BlockId,
        /// The named callee.
        callee: ProcId,
    },
    /// A call block does not have exactly one `Branch` out-edge, or has a `Return` edge.
    #[error(
        "{proc}: call block {block} must have exactly one branch out-edge (to its return site) and no return edge"
    )]
    BadCallBlock {
        /// The procedure.
        proc: ProcId,
        /// The call block.
        block: BlockId,
    },
    /// A return-site block has an in-edge other than the one from its call block (or is the call block).
    #[error("{proc}: return-site block {block} must have its call block as only predecessor")]
    BadReturnSite {
        /// The procedure.
        proc: ProcId,
        /// The return-site block.
        block: BlockId,
    },
    /// A cut vertex is not a block, is the entry or a call site's block, or the list is not sorted and distinct.
    #[error("{proc}: block {block} cannot be a cut vertex")]
    BadCutVertex {
        /// The procedure.
        proc: ProcId,
        /// The cut vertex.
        block: BlockId,
    },
    /// A reset header is not a block, is the entry, or the list is not sorted and distinct.
    #[error("{proc}: block {block} cannot be a reset loop header")]
    BadResetHeader {
        /// The procedure.
        proc: ProcId,
        /// The header.
        block: BlockId,
    },
}

/// A validated program: procedures plus program-wide call-site numbering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    procs: Vec<Procedure>,
    sites: Vec<SiteInfo>,
    /// Per procedure, the id of its first call site (sites of one procedure are contiguous).
    first_site: Vec<u32>,
    /// Per procedure and block, the call site in that block.
    site_of_block: Vec<Vec<Option<CallSiteId>>>,
}

impl Program {
    /// Validates the procedures (see [`ProgramError`]) and numbers the call sites program-wide.
    pub fn new(procs: Vec<Procedure>) -> Result<Program, ProgramError> {
        if procs.is_empty() {
            return Err(ProgramError::NoProcedures);
        }
        let total_sites: usize = procs.iter().map(|p| p.call_sites.len()).sum();
        if u32::try_from(procs.len()).is_err() || u32::try_from(total_sites).is_err() {
            return Err(ProgramError::TooLarge(procs.len().max(total_sites)));
        }
        let mut sites = Vec::with_capacity(total_sites);
        let mut first_site = Vec::with_capacity(procs.len());
        let mut site_of_block = Vec::with_capacity(procs.len());
        for (pi, p) in procs.iter().enumerate() {
            let proc = ProcId::from_index(pi);
            let cfg = &p.cfg;
            first_site.push(sites.len() as u32);
            for (i, e) in cfg.edges().iter().enumerate() {
                if e.to == cfg.entry() && e.kind != EdgeKind::ExitToEntry {
                    return Err(ProgramError::EntryHasPredecessors { proc, edge: EdgeId::from_index(i) });
                }
            }
            let adj = cfg.adjacency();
            let mut by_block = vec![None; cfg.num_blocks()];
            let mut previous: Option<BlockId> = None;
            for (index, cs) in p.call_sites.iter().enumerate() {
                if previous.is_some_and(|b| b >= cs.block) {
                    return Err(ProgramError::CallSitesUnsorted { proc, index });
                }
                previous = Some(cs.block);
                let block = cs.block;
                if block.index() >= cfg.num_blocks() {
                    return Err(ProgramError::CallBlockOutOfRange { proc, block });
                }
                if let Callee::Proc(q) | Callee::Cut(q) = cs.callee {
                    if q.index() >= procs.len() {
                        return Err(ProgramError::UnknownCallee { proc, block, callee: q });
                    }
                }
                let outs = adj.out_edges(block);
                let branches: Vec<EdgeId> =
                    outs.iter().copied().filter(|&e| matches!(cfg.edge(e).kind, EdgeKind::Branch { .. })).collect();
                let returns = outs.iter().filter(|&&e| cfg.edge(e).kind == EdgeKind::Return).count();
                let [call_edge] = branches[..] else {
                    return Err(ProgramError::BadCallBlock { proc, block });
                };
                if returns != 0 {
                    return Err(ProgramError::BadCallBlock { proc, block });
                }
                let ret = cfg.edge(call_edge).to;
                let ins = adj.in_edges(ret).iter().filter(|&&e| cfg.edge(e).kind != EdgeKind::ExitToEntry).count();
                if ret == block || ins != 1 {
                    return Err(ProgramError::BadReturnSite { proc, block: ret });
                }
                let id = CallSiteId::from_index(sites.len());
                by_block[block.index()] = Some(id);
                sites.push(SiteInfo { proc, block, ret, call_edge, callee: cs.callee });
            }
            let mut previous: Option<BlockId> = None;
            for &block in &p.cut_vertices {
                let bad = block == cfg.entry()
                    || block.index() >= cfg.num_blocks()
                    || by_block[block.index()].is_some()
                    || previous.is_some_and(|b| b >= block);
                if bad {
                    return Err(ProgramError::BadCutVertex { proc, block });
                }
                previous = Some(block);
            }
            let mut previous: Option<BlockId> = None;
            for &block in &p.reset_headers {
                let bad =
                    block == cfg.entry() || block.index() >= cfg.num_blocks() || previous.is_some_and(|b| b >= block);
                if bad {
                    return Err(ProgramError::BadResetHeader { proc, block });
                }
                previous = Some(block);
            }
            site_of_block.push(by_block);
        }
        Ok(Program { procs, sites, first_site, site_of_block })
    }

    /// The same program with every call of a procedure `q` cut (`Callee::Cut(q)`) when `cut(q)`, and followed
    /// (`Callee::Proc(q)`) otherwise: the hybrid budget policy's rounds (§8), which change nothing else, so
    /// nothing needs validating again.
    pub fn with_cut(mut self, cut: impl Fn(ProcId) -> bool) -> Program {
        let retarget = |c: Callee| match c {
            Callee::Proc(q) | Callee::Cut(q) if cut(q) => Callee::Cut(q),
            Callee::Proc(q) | Callee::Cut(q) => Callee::Proc(q),
            Callee::External => Callee::External,
        };
        for cs in self.procs.iter_mut().flat_map(|p| p.call_sites.iter_mut()) {
            cs.callee = retarget(cs.callee);
        }
        for s in &mut self.sites {
            s.callee = retarget(s.callee);
        }
        self
    }

    /// The same program with its procedures in `order` (a permutation of the ids: `order[i]` is the procedure
    /// that becomes `i`), every callee renamed. `None` if `order` is not a permutation.
    pub fn permuted(&self, order: &[ProcId]) -> Option<Program> {
        let mut new_id = vec![None; self.procs.len()];
        for (i, p) in order.iter().enumerate() {
            match new_id.get_mut(p.index()) {
                Some(slot @ None) => *slot = Some(ProcId::from_index(i)),
                _ => return None,
            }
        }
        let new_id: Vec<ProcId> = new_id.into_iter().collect::<Option<_>>()?;
        let rename = |c: Callee| match c {
            Callee::Proc(q) => Callee::Proc(new_id[q.index()]),
            Callee::Cut(q) => Callee::Cut(new_id[q.index()]),
            Callee::External => Callee::External,
        };
        let procs = order
            .iter()
            .map(|p| {
                let mut q = self.procs[p.index()].clone();
                for cs in &mut q.call_sites {
                    cs.callee = rename(cs.callee);
                }
                q
            })
            .collect();
        Program::new(procs).ok()
    }

    /// Number of procedures.
    pub fn num_procs(&self) -> usize {
        self.procs.len()
    }

    /// Procedure ids in order.
    pub fn proc_ids(&self) -> impl Iterator<Item = ProcId> {
        (0..self.procs.len()).map(ProcId::from_index)
    }

    /// One procedure; `None` for an id outside the program.
    pub fn get_proc(&self, p: ProcId) -> Option<&Procedure> {
        self.procs.get(p.index())
    }

    /// One procedure. Panics on an id outside the program (a caller bug; ids from untrusted files should go
    /// through [`Program::get_proc`]).
    pub fn proc(&self, p: ProcId) -> &Procedure {
        &self.procs[p.index()]
    }

    /// The CFG of `p` (panics like [`Program::proc`]).
    pub fn cfg(&self, p: ProcId) -> &Cfg {
        &self.procs[p.index()].cfg
    }

    /// All procedures in id order.
    pub fn procs(&self) -> &[Procedure] {
        &self.procs
    }

    /// Number of call sites program-wide.
    pub fn num_sites(&self) -> usize {
        self.sites.len()
    }

    /// One call site; `None` for an id outside the program.
    pub fn site(&self, s: CallSiteId) -> Option<&SiteInfo> {
        self.sites.get(s.index())
    }

    /// All call sites in id order.
    pub fn sites(&self) -> &[SiteInfo] {
        &self.sites
    }

    /// The call sites of `p`, in block order (empty for an id outside the program).
    pub fn sites_of(&self, p: ProcId) -> impl Iterator<Item = CallSiteId> + '_ {
        let start = self.first_site.get(p.index()).map_or(0, |&s| s as usize);
        let len = self.procs.get(p.index()).map_or(0, |q| q.call_sites.len());
        (start..start + len).map(CallSiteId::from_index)
    }

    /// The call site in block `b` of `p`, if `b` is a call block.
    pub fn site_at(&self, p: ProcId, b: BlockId) -> Option<CallSiteId> {
        self.site_of_block.get(p.index())?.get(b.index()).copied().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{test_cfg, Edge};

    fn site(block: u32, callee: Callee) -> CallSite {
        CallSite { block: BlockId(block), callee }
    }

    #[test]
    fn call_sites_are_numbered_program_wide() {
        // f0: 0 -> 1 (call f1) -> 2 -> 3 (call ext) -> 4 -> EXIT; f1: 0 -> EXIT.
        let f0 = test_cfg(5, &[(0, 1), (1, 2), (2, 3), (3, 4)], &[4]);
        let f1 = test_cfg(1, &[], &[0]);
        let p = Program::new(vec![
            Procedure::new(f0, vec![site(1, Callee::Proc(ProcId(1))), site(3, Callee::External)]),
            Procedure::new(f1, vec![]),
        ])
        .unwrap();
        assert_eq!(p.num_sites(), 2);
        assert_eq!(p.site_at(ProcId(0), BlockId(3)), Some(CallSiteId(1)));
        assert_eq!(p.site_at(ProcId(0), BlockId(2)), None);
        assert_eq!(p.site_at(ProcId(7), BlockId(2)), None);
        let s = p.site(CallSiteId(0)).unwrap();
        assert_eq!((s.block, s.ret, s.call_edge), (BlockId(1), BlockId(2), EdgeId(1)));
        assert_eq!(p.sites_of(ProcId(0)).collect::<Vec<_>>(), vec![CallSiteId(0), CallSiteId(1)]);
        assert_eq!(p.sites_of(ProcId(1)).count(), 0);
        assert_eq!(format!("{} {}", ProcId(3), CallSiteId(4)), "f3 cs4");
    }

    #[test]
    fn malformed_programs_are_rejected() {
        let ok = || test_cfg(3, &[(0, 1), (1, 2)], &[2]);
        let one = |cfg: Cfg, sites: Vec<CallSite>| Program::new(vec![Procedure::new(cfg, sites)]);
        assert_eq!(Program::new(vec![]), Err(ProgramError::NoProcedures));
        assert!(matches!(
            one(test_cfg(2, &[(0, 1), (1, 0)], &[1]), vec![]),
            Err(ProgramError::EntryHasPredecessors { .. })
        ));
        assert!(matches!(
            one(ok(), vec![site(1, Callee::External), site(1, Callee::External)]),
            Err(ProgramError::CallSitesUnsorted { index: 1, .. })
        ));
        assert!(matches!(one(ok(), vec![site(9, Callee::External)]), Err(ProgramError::CallBlockOutOfRange { .. })));
        assert!(matches!(one(ok(), vec![site(1, Callee::Proc(ProcId(3)))]), Err(ProgramError::UnknownCallee { .. })));
        // A call block that branches two ways, or returns.
        let two = test_cfg(3, &[(0, 1), (1, 2), (1, 2)], &[2]);
        assert!(matches!(one(two, vec![site(1, Callee::External)]), Err(ProgramError::BadCallBlock { .. })));
        let ret = test_cfg(3, &[(0, 1), (1, 2)], &[1, 2]);
        assert!(matches!(one(ret, vec![site(1, Callee::External)]), Err(ProgramError::BadCallBlock { .. })));
        // A return site with a second predecessor.
        let join = test_cfg(3, &[(0, 1), (1, 2), (0, 2)], &[2]);
        assert!(matches!(one(join, vec![site(1, Callee::External)]), Err(ProgramError::BadReturnSite { .. })));
        // A call block that is its own return site.
        let selfloop = test_cfg(2, &[(1, 1)], &[0]);
        assert!(matches!(one(selfloop, vec![site(1, Callee::External)]), Err(ProgramError::BadReturnSite { .. })));
        // Termination edges out of a call block are fine.
        let mut edges = ok().edges().to_vec();
        edges.insert(0, Edge { from: BlockId(1), to: BlockId(3), kind: EdgeKind::Termination });
        let term = Cfg::new(3, edges).unwrap();
        assert!(one(term, vec![site(1, Callee::External)]).is_ok());
    }
}
