//! Call-graph classification: recursive call sites (Transformation 3), roots, and a callees-first order.
//!
//! Melski & Reps, "Interprocedural Path Profiling", CC 1999 / UW–Madison TR-1382, 1998, §3.2, Transformation 3:
//! a depth-first search of the call graph classifies call sites; a call-graph back edge is a *recursive call
//! site*, which is replaced by a summary edge c→r, and its callee R gets the edges Entry_global→Entry_R and
//! Exit_R→Exit_global, i.e. becomes a *root*. §8 applies the same transformation by choice to other sites
//! ([`Callee::Cut`]); §9.2.3 treats indirect and external calls as summary edges ([`Callee::External`]).
//!
//! Invariant: after classification the *interprocedural* call edges (sites with role
//! [`SiteRole::Interprocedural`]) form an acyclic graph, [`CallGraph::callee_first`] is a topological order of it
//! with callees before callers, and every procedure is a root or is called from a live interprocedural site.
//! The classification is deterministic: DFS roots are the procedures without live interprocedural-candidate
//! callers in id order, then every still unvisited procedure in id order; each procedure's call sites are
//! followed in call-site (= block) order. Call sites in blocks unreachable from their procedure's entry are
//! [`SiteRole::Dead`] and take no part (they never execute).

use super::program::{CallSiteId, Callee, ProcId, Program};
use crate::dfs::DfsInfo;

/// How a call site is represented in G*_fn.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SiteRole {
    /// A call edge c→Entry_Q and a return edge Exit_Q→r: paths run through the callee.
    Interprocedural,
    /// A call-graph back edge (Transformation 3): summary edge c→r; the callee is a root and its activation is
    /// profiled as a separate path ("recursive call elided").
    Recursive,
    /// A [`Callee::Cut`] site (§8): summary edge c→r; the callee is a root.
    Cut,
    /// A [`Callee::External`] site: summary edge c→r; nothing of the program is entered.
    External,
    /// The call block is unreachable from its procedure's entry: the site never executes.
    Dead,
}

impl SiteRole {
    /// Whether the site is a summary edge c→r in G*_fn (recursive, cut or external).
    pub fn is_summary(self) -> bool {
        matches!(self, SiteRole::Recursive | SiteRole::Cut | SiteRole::External)
    }
}

/// The classified call graph of a [`Program`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallGraph {
    roles: Vec<SiteRole>,
    roots: Vec<ProcId>,
    is_root: Vec<bool>,
    callee_first: Vec<ProcId>,
    callers: Vec<Vec<CallSiteId>>,
}

impl CallGraph {
    /// Classifies the call sites of `program`. `dfs[p]` must be the intraprocedural DFS of procedure `p` (it
    /// decides which call blocks are live); a missing entry counts every block of that procedure as dead.
    pub fn compute(program: &Program, dfs: &[DfsInfo]) -> CallGraph {
        let n = program.num_procs();
        let live = |s: CallSiteId| {
            program.site(s).is_some_and(|i| dfs.get(i.proc.index()).is_some_and(|d| d.is_reachable(i.block)))
        };
        // Candidate interprocedural edges: live direct calls.
        let mut out: Vec<Vec<(CallSiteId, ProcId)>> = vec![Vec::new(); n];
        let mut has_caller = vec![false; n];
        for (i, s) in program.sites().iter().enumerate() {
            let id = CallSiteId::from_index(i);
            if let Callee::Proc(q) = s.callee {
                if live(id) {
                    out[s.proc.index()].push((id, q));
                    has_caller[q.index()] = true;
                }
            }
        }

        const UNSEEN: u8 = 0;
        const ON_STACK: u8 = 1;
        const DONE: u8 = 2;
        let mut state = vec![UNSEEN; n];
        let mut recursive = vec![false; program.num_sites()];
        let mut postorder = Vec::with_capacity(n);
        let starts = (0..n).filter(|&p| !has_caller[p]).chain(0..n);
        for start in starts {
            if state[start] != UNSEEN {
                continue;
            }
            state[start] = ON_STACK;
            let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
            while let Some(top) = stack.last_mut() {
                let (p, next) = *top;
                let Some(&(site, q)) = out[p].get(next) else {
                    state[p] = DONE;
                    postorder.push(ProcId::from_index(p));
                    stack.pop();
                    continue;
                };
                top.1 += 1;
                match state[q.index()] {
                    UNSEEN => {
                        state[q.index()] = ON_STACK;
                        stack.push((q.index(), 0));
                    }
                    ON_STACK => recursive[site.index()] = true,
                    _ => {}
                }
            }
        }
        debug_assert!(state.iter().all(|&s| s == DONE));

        let roles: Vec<SiteRole> = program
            .sites()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let id = CallSiteId::from_index(i);
                if !live(id) {
                    SiteRole::Dead
                } else if recursive[i] {
                    SiteRole::Recursive
                } else {
                    match s.callee {
                        Callee::Proc(_) => SiteRole::Interprocedural,
                        Callee::Cut(_) => SiteRole::Cut,
                        Callee::External => SiteRole::External,
                    }
                }
            })
            .collect();

        let mut callers: Vec<Vec<CallSiteId>> = vec![Vec::new(); n];
        let mut is_root: Vec<bool> = program.procs().iter().map(|p| p.external_entry).collect();
        for (i, s) in program.sites().iter().enumerate() {
            match (roles[i], s.callee) {
                (SiteRole::Interprocedural, Callee::Proc(q)) => callers[q.index()].push(CallSiteId::from_index(i)),
                (SiteRole::Recursive | SiteRole::Cut, Callee::Proc(q) | Callee::Cut(q)) => is_root[q.index()] = true,
                _ => {}
            }
        }
        for p in 0..n {
            if callers[p].is_empty() {
                is_root[p] = true;
            }
        }
        let roots = (0..n).filter(|&p| is_root[p]).map(ProcId::from_index).collect();
        CallGraph { roles, roots, is_root, callee_first: postorder, callers }
    }

    /// The role of call site `s` ([`SiteRole::Dead`] for ids outside the program).
    pub fn role(&self, s: CallSiteId) -> SiteRole {
        self.roles.get(s.index()).copied().unwrap_or(SiteRole::Dead)
    }

    /// Roles of all call sites, indexed by `CallSiteId::index`.
    pub fn roles(&self) -> &[SiteRole] {
        &self.roles
    }

    /// The roots — targets of Entry_global→Entry_P edges — in procedure-id order (the order of their
    /// Entry_global offsets, Eq. 27).
    pub fn roots(&self) -> &[ProcId] {
        &self.roots
    }

    /// Whether `p` is a root (has edges Entry_global→Entry_P and Exit_P→Exit_global).
    pub fn is_root(&self, p: ProcId) -> bool {
        self.is_root.get(p.index()).copied().unwrap_or(false)
    }

    /// Every procedure, callees before callers along interprocedural call edges (the DFS postorder): the order
    /// in which ψ is solved (§5.2.2). Reversed, it is the callers-first order of numUnbalRLPaths (§6.1.1).
    pub fn callee_first(&self) -> &[ProcId] {
        &self.callee_first
    }

    /// The live interprocedural call sites that call `p`, in id order: the return successors of Exit_P.
    pub fn callers(&self, p: ProcId) -> &[CallSiteId] {
        self.callers.get(p.index()).map_or(&[], Vec::as_slice)
    }
}
