//! Dynamic slices from profiles (`PATHPROF_SLICE_PROFILE=FILE`, issue #22 part 3): the blocks and branch arcs a
//! profile of an earlier run shows executed.
//!
//! [`crate::slice_graph::FunctionGraph::build`] leaves everything else out of the program graph — never-run
//! blocks, never-taken arcs (a predicate with one taken arc is then a plain statement, which nothing is control
//! dependent on) — so the slice is the static slice of the program *as that run exercised it*: definitions on
//! untaken paths reach nothing, tests that always went one way control nothing. What that buys is only for inputs
//! that follow the profiled arcs (take no arc the profile counts 0): there the program and the restricted program
//! run the same, and the slice prints the same criterion values (thesis Theorem 6.1 on the restricted program).
//! A kept branch's never-taken arcs lead to a trap in the executable slice (`slice.off_profile`), so an input
//! that leaves the profiled arcs at a kept branch stops instead of printing wrong values; one that leaves them
//! at a dropped branch is not detected.
//!
//! A function is matched as the use mode does ([`crate::use_mode`]): same name, the same CFG as the pass rebuilds
//! here (so the profile must come from an edge- or path-mode build — pathprof-clang, same flags and source —
//! whose counts are exact); a `static` function only in the profile's record of this translation unit, others
//! summed over the modules that have them (an inline function's copies).

use crate::cfg_build::{self, CallFacts};
use crate::identity::{self, ModuleIdentity};
use crate::ir;
use inkwell::llvm_sys::core::LLVMGetLinkage;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMLinkage;
use pathprof_analysis::ModuleCounts;
use pathprof_core::{Cfg, EdgeKind};
use pathprof_format::profile;
use std::collections::{HashMap, HashSet};

/// What a profile shows one function executed.
#[derive(Debug, Default)]
pub struct Executed {
    /// Blocks that ran at least once.
    pub blocks: HashSet<LLVMBasicBlockRef>,
    /// Branch arcs (block, successor index) taken at least once.
    pub arcs: HashSet<(LLVMBasicBlockRef, u32)>,
}

/// Exact block and branch counts of one profile function.
struct Counts {
    cfg: Cfg,
    blocks: Vec<u64>,
    edges: Vec<u64>,
}

/// A loaded profile: per module, its functions' exact counts by name.
pub struct ProfileRuns {
    path: String,
    modules: Vec<(ModuleIdentity, HashMap<String, Vec<Counts>>)>,
}

impl ProfileRuns {
    /// Reads the profile at `path`; a one-line error if it cannot be read.
    pub fn load(path: &str) -> Result<ProfileRuns, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read PATHPROF_SLICE_PROFILE {path}: {e}"))?;
        let prof = profile::read(&bytes).map_err(|e| format!("PATHPROF_SLICE_PROFILE {path}: {e}"))?;
        let mut modules = Vec::new();
        for module in &prof.modules {
            let counts = ModuleCounts::new(module);
            let identity = ModuleIdentity::of_meta(&module.meta);
            let mut functions: HashMap<String, Vec<Counts>> = HashMap::new();
            for (i, f) in module.meta.functions.iter().enumerate() {
                let Ok(c) = counts.function(i) else { continue };
                let blocks: Option<Vec<u64>> = c.blocks.iter().copied().collect();
                let edges: Option<Vec<u64>> = c.edges.iter().copied().collect();
                if let (true, Some(blocks), Some(edges)) = (c.exact, blocks, edges) {
                    functions.entry(f.name.clone()).or_default().push(Counts { cfg: f.cfg.clone(), blocks, edges });
                }
            }
            modules.push((identity, functions));
        }
        Ok(ProfileRuns { path: path.into(), modules })
    }

    /// What the profile shows `f` (of the module known as `me`) executed; an error when the profile has no exact
    /// record of `f` with the CFG it has in this compile.
    pub fn executed(&self, f: LLVMValueRef, me: &ModuleIdentity, facts: &CallFacts) -> Result<Executed, String> {
        let name = ir::name(f);
        let graph = cfg_build::build(f, facts).map_err(|e| format!("{name}: {}", e.0))?;
        let identities: Vec<ModuleIdentity> = self.modules.iter().map(|m| m.0.clone()).collect();
        let own = identity::own_module(me, false, &identities);
        let local =
            matches!(unsafe { LLVMGetLinkage(f) }, LLVMLinkage::LLVMInternalLinkage | LLVMLinkage::LLVMPrivateLinkage);
        let matching = |k: usize| -> Vec<&Counts> {
            self.modules[k].1.get(&name).into_iter().flatten().filter(|c| c.cfg == graph.cfg).collect()
        };
        let found: Vec<&Counts> = match own {
            Some(k) if local || !matching(k).is_empty() => matching(k),
            _ if local => Vec::new(),
            _ => (0..self.modules.len()).flat_map(matching).collect(),
        };
        if found.is_empty() {
            return Err(format!(
                "{}: no exact record of function {name} with this compile's CFG (profile an edge- or path-mode \
                 build of the same source with the same flags)",
                self.path
            ));
        }
        let mut out = Executed::default();
        for (b, &bb) in graph.blocks.iter().enumerate() {
            if found.iter().any(|c| c.blocks[b] > 0) {
                out.blocks.insert(bb);
            }
        }
        for (i, e) in graph.cfg.edges().iter().enumerate() {
            if let EdgeKind::Branch { succ } = e.kind {
                if found.iter().any(|c| c.edges[i] > 0) {
                    out.arcs.insert((graph.blocks[e.from.index()], succ));
                }
            }
        }
        Ok(out)
    }
}
