//! Profile use (`PATHPROF_USE=FILE`): attach the exact counts of an earlier pathprof profile to the IR as
//! `!prof` branch weights and function entry counts, plus a ProfileSummary of the whole profile (every module),
//! so the rest of clang's pipeline optimises with them like `-fprofile-use`.
//!
//! The pass runs at the pipeline point where the profile was collected and rebuilds the same `Cfg`; a function
//! is annotated only when a profile function of its module (see [`crate::identity`]) has the same name and the
//! same branch structure (straight-line chains of blocks and the branches between them, so that profiles of
//! every mode apply) and its counts are exact — anything else is skipped and counted, never annotated wrongly.

use crate::cfg_build::{self, CallFacts};
use crate::ir;
use crate::shim;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMLinkage;
use pathprof_analysis::{FunctionCounts, ModuleCounts};
use pathprof_core::chains::Chains;
use pathprof_core::EdgeKind;
use pathprof_format::profile;

use crate::identity::{self, ModuleIdentity};
use std::collections::{HashMap, HashSet};

/// What the use mode did to a module, for the one-line summary.
#[derive(Default, Debug)]
pub struct UseStats {
    /// Functions annotated.
    pub annotated: usize,
    /// Functions whose name is in the profile but whose CFG differs (stale profile).
    pub mismatched: usize,
    /// Functions absent from the profile.
    pub missing: usize,
    /// Functions the profile has, with this CFG, but whose counts it does not vouch for (threads without atomic
    /// counters, an abnormal end): told apart from stale ones, whose remedy — a new profile of the current
    /// sources — would not help.
    pub inexact: usize,
}

/// Exact branch counts; names alone detect stale functions.
///
/// Every profile module's functions are indexed by (name, branch shape), and the module being annotated finds its
/// own record by identity ([`identity::own_module`]: same name, nearest output). Functions with internal linkage
/// are looked up in that record only: two translation units (or two shared objects) may each have a `static`
/// function of the same name and shape. So are strong external definitions: one program links one, and a
/// same-named one of another module is another program's (every program's `main`; bzip2recover's was taken for
/// stale against bzip2's). So are all functions of a program merged by LTO: each executable or shared object is a
/// module of its own, and a same-named function of another one is another function. Inline and template
/// functions (`linkonce`, `weak`) are looked up by (name, branch shape), summed over the modules that define them:
/// such a function is defined in every module that uses it, but only the copy the linker kept ran, so the other
/// modules' records hold zeros.
struct ProfileIndex {
    modules: Vec<ModuleIndex>,
    global: HashMap<(String, u64), Annotation>,
    global_inexact: HashSet<(String, u64)>,
    names: HashSet<String>,
}

/// One profile module's exact functions, its functions whose counts are not exact, and the names of all.
struct ModuleIndex {
    identity: ModuleIdentity,
    functions: HashMap<(String, u64), Annotation>,
    inexact: HashSet<(String, u64)>,
    names: HashSet<String>,
}

/// What gets attached to one function.
#[derive(Clone)]
struct Annotation {
    entry: u64,
    /// Count of successor `succ` of the last block of chain `c`, keyed by `(c, succ)`.
    branches: HashMap<(u32, u32), u64>,
    blocks: Vec<u64>,
}

/// Hash of the branch structure only: the function's straight-line chains ([`Chains`]) and the branches between
/// them, with their successor numbers. Chains, not blocks: the context and piecewise modes cut a block after
/// every call site, so their profiles describe more blocks than the same code has uninstrumented, but the same
/// chains. Termination edges are left out (whether a call may leave its frame abnormally depends on attributes
/// that differ between -O levels, but the branches the weights describe do not), and so are returns (a
/// `resume` returns in edge and path mode but terminates in the interprocedural modes; neither carries a
/// weight).
fn branch_shape(cfg: &pathprof_core::Cfg, chains: &Chains) -> u64 {
    use pathprof_format::layout::{fnv1a64_continue, FNV_OFFSET};
    let mut branches: Vec<[u32; 3]> = cfg
        .edges()
        .iter()
        .zip(&chains.link)
        .filter_map(|(e, &link)| match e.kind {
            EdgeKind::Branch { succ } if !link => {
                Some([chains.of_block[e.from.index()], chains.of_block[e.to.index()], succ])
            }
            _ => None,
        })
        .collect();
    branches.sort_unstable();
    let mut h = fnv1a64_continue(FNV_OFFSET, &(chains.count as u64).to_le_bytes());
    for v in branches.iter().flatten() {
        h = fnv1a64_continue(h, &v.to_le_bytes());
    }
    h
}

/// The weights of `cfg`'s branches between chains, keyed by (chain, successor): a chain's branches are those
/// of its last block, the only one of its blocks that can have more than one successor.
fn annotation(cfg: &pathprof_core::Cfg, chains: &Chains, c: &FunctionCounts) -> Annotation {
    let mut branches = HashMap::new();
    for (i, e) in cfg.edges().iter().enumerate() {
        match e.kind {
            EdgeKind::Branch { succ } if !chains.link[i] => {
                branches.insert((chains.of_block[e.from.index()], succ), c.edges[i].unwrap_or(0));
            }
            _ => {}
        }
    }
    Annotation { entry: c.entry.unwrap_or(0), branches, blocks: c.blocks.iter().map(|b| b.unwrap_or(0)).collect() }
}

impl Annotation {
    /// Adds another module's counts of the same function (saturating: counts are 64-bit totals).
    fn add(&mut self, other: &Annotation) {
        self.entry = self.entry.saturating_add(other.entry);
        for (k, v) in &other.branches {
            let e = self.branches.entry(*k).or_insert(0);
            *e = e.saturating_add(*v);
        }
        for (a, b) in self.blocks.iter_mut().zip(&other.blocks) {
            *a = a.saturating_add(*b);
        }
    }
}

fn load(path: &str) -> Result<ProfileIndex, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read PATHPROF_USE profile {path}: {e}"))?;
    let prof = profile::read(&bytes).map_err(|e| format!("PATHPROF_USE profile {path}: {e}"))?;
    let mut modules = Vec::with_capacity(prof.modules.len());
    let mut global: HashMap<(String, u64), Annotation> = HashMap::new();
    let mut global_inexact = HashSet::new();
    let mut names = HashSet::new();
    for module in &prof.modules {
        let module_counts = ModuleCounts::new(module);
        let identity = ModuleIdentity::of_meta(&module.meta);
        let mut own =
            ModuleIndex { identity, functions: HashMap::new(), inexact: HashSet::new(), names: HashSet::new() };
        for (i, f) in module.meta.functions.iter().enumerate() {
            names.insert(f.name.clone());
            own.names.insert(f.name.clone());
            if let Ok(c) = module_counts.function(i) {
                // Block mode leaves branch counts underived: such a function has no branch weights to give.
                let branches_known = f
                    .cfg
                    .edges()
                    .iter()
                    .zip(&c.edges)
                    .all(|(e, n)| !matches!(e.kind, EdgeKind::Branch { .. }) || n.is_some());
                let chains = Chains::of(&f.cfg);
                let shape = branch_shape(&f.cfg, &chains);
                if !c.exact {
                    global_inexact.insert((f.name.clone(), shape));
                    own.inexact.insert((f.name.clone(), shape));
                } else if branches_known {
                    let a = annotation(&f.cfg, &chains, &c);
                    match global.get_mut(&(f.name.clone(), shape)) {
                        Some(g) => g.add(&a),
                        None => {
                            global.insert((f.name.clone(), shape), a.clone());
                        }
                    }
                    own.functions.insert((f.name.clone(), shape), a);
                }
            }
        }
        modules.push(own);
    }
    Ok(ProfileIndex { modules, global, global_inexact, names })
}

/// Scales counts into LLVM's 32-bit branch weights the way LLVM's PGO does (one common divisor).
pub fn branch_weights(counts: &[u64]) -> Vec<u32> {
    let max = counts.iter().copied().max().unwrap_or(0);
    let scale = max / u64::from(u32::MAX) + 1;
    counts.iter().map(|&c| (c / scale) as u32).collect()
}

/// Annotates `m`, known as `me` (a whole program merged by LTO when `whole_output`), from the profile at `path`.
pub fn annotate(m: LLVMModuleRef, path: &str, me: &ModuleIdentity, whole_output: bool) -> Result<UseStats, String> {
    let index = load(path)?;
    let identities: Vec<ModuleIdentity> = index.modules.iter().map(|x| x.identity.clone()).collect();
    // Without a record of its own, a compile takes another compile's of its very source file as a weaker match
    // (`identity::weak_module`: an instrumented `app-prof` beside `app`, a file named otherwise): that compile
    // may have had other flags, so a function whose CFG differs is missing, not stale.
    let own_index = identity::own_module(me, whole_output, &identities);
    let weak = if own_index.is_none() && !whole_output { identity::weak_module(me, &identities) } else { None };
    let own = own_index.or(weak).and_then(|i| index.modules.get(i));
    let facts = CallFacts::new(m);
    let mut stats = UseStats::default();
    let summary = unsafe { shim::pathprof_shim_summary_new() };
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let prof_kind = LLVMGetMDKindIDInContext(ctx, c"prof".as_ptr(), 4);
        let i32t = LLVMInt32TypeInContext(ctx);
        let i64t = LLVMInt64TypeInContext(ctx);
        let node = |tag: &str, values: Vec<LLVMValueRef>| -> LLVMMetadataRef {
            let mut ops = vec![LLVMMDStringInContext2(ctx, tag.as_ptr() as *const _, tag.len())];
            ops.extend(values.into_iter().map(|v| LLVMValueAsMetadata(v)));
            LLVMMDNodeInContext2(ctx, ops.as_mut_ptr(), ops.len())
        };
        for f in ir::functions(m) {
            if ir::is_declaration(f) {
                continue;
            }
            let name = ir::name(f);
            let Ok(graph) = cfg_build::build(f, &facts) else {
                stats.missing += 1;
                continue;
            };
            let chains = Chains::of(&graph.cfg);
            let shape = branch_shape(&graph.cfg, &chains);
            // A function only this module defines — local, a strong definition (two in one program do not
            // link; a same-named one in another module is another program's: each program's `main`), or any
            // function of an LTO program — is looked up in the module's own record only, and is missing when
            // the profile has no record of the module. Inline and template functions (`linkonce`, `weak`),
            // defined in every module that uses them, over all modules.
            let own_only = whole_output
                || matches!(
                    LLVMGetLinkage(f),
                    LLVMLinkage::LLVMInternalLinkage
                        | LLVMLinkage::LLVMPrivateLinkage
                        | LLVMLinkage::LLVMExternalLinkage
                );
            let key = (name.clone(), shape);
            let (found, inexact, known) = match own {
                Some(o) if own_only => (o.functions.get(&key), o.inexact.contains(&key), o.names.contains(&name)),
                None if own_only => (None, false, false),
                // One copy without exact counts leaves the sum over the copies unvouched for.
                _ if index.global_inexact.contains(&key) => (None, true, true),
                _ => (index.global.get(&key), false, index.names.contains(&name)),
            };
            let Some(counts) = found else {
                if inexact {
                    stats.inexact += 1;
                } else if known && weak.is_none() {
                    stats.mismatched += 1;
                } else {
                    stats.missing += 1;
                }
                continue;
            };
            let entry = counts.entry;
            LLVMGlobalSetMetadata(f, prof_kind, node("function_entry_count", vec![LLVMConstInt(i64t, entry, 0)]));
            for (b, &bb) in graph.blocks.iter().enumerate() {
                let Some(term) = ir::terminator(bb) else { continue };
                let succs = ir::successors(term).len();
                if succs < 2 {
                    continue;
                }
                let chain = chains.of_block[b];
                let per_succ: Vec<u64> =
                    (0..succs as u32).map(|s| counts.branches.get(&(chain, s)).copied().unwrap_or(0)).collect();
                let weights = branch_weights(&per_succ).into_iter().map(|w| LLVMConstInt(i32t, u64::from(w), 0));
                let md = node("branch_weights", weights.collect());
                LLVMSetMetadata(term, prof_kind, LLVMMetadataAsValue(ctx, md));
            }
            stats.annotated += 1;
        }
        // The summary covers the whole profile, one record per function (copies in several modules merged), so
        // hot and cold thresholds are the program's, as with LLVM's indexed profiles.
        for a in index.global.values() {
            let record: Vec<u64> = std::iter::once(a.entry).chain(a.blocks.iter().copied()).collect();
            shim::pathprof_shim_summary_add(summary, record.as_ptr(), record.len());
        }
        shim::pathprof_shim_summary_finish(summary, if stats.annotated > 0 { m } else { std::ptr::null_mut() });
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::branch_weights;

    #[test]
    fn weights_keep_ratios_and_fit_32_bits() {
        assert_eq!(branch_weights(&[334, 666]), vec![334, 666]);
        let big = branch_weights(&[u64::MAX, u64::MAX / 2, 0]);
        assert_eq!(big[2], 0);
        assert!(big[0] >= 2 * big[1] - 1 && big[0] > 0);
    }
}
