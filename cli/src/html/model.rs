//! What the HTML report shows, built with the machinery `show` and `decode` use: per function `show`'s counts
//! ([`crate::show::function_report`]) and `decode`'s path reports ([`crate::decode::path_report`],
//! [`crate::decode::interproc::path_report`]) of its hottest paths. Nothing here decodes a path or derives a
//! count itself.

use crate::decode::interproc;
use crate::decode::report::{InterprocSteps, PathReport};
use crate::show::{function_report, FunctionReport};
use anyhow::{Context, Result};
use pathprof_analysis::{hottest, FunctionPaths, InterprocCount, ModuleCounts, ModulePaths};
use pathprof_format::meta::{FunctionMeta, Mode};
use pathprof_format::profile::{ModuleProfile, Profile};
use std::collections::HashMap;
use std::path::Path;

/// One function of the profile with its counts and its listed hot paths.
pub(super) struct Function<'a> {
    pub module: &'a ModuleProfile,
    pub meta: &'a FunctionMeta,
    /// `show`'s report of the function: block and edge counts.
    pub counts: FunctionReport,
    /// What the index ranks functions by: the sum of its path counts (path mode), of the counts of the
    /// interprocedural paths whose active suffix starts in it (context/piecewise), or of its block counts (edge and
    /// block modes: block executions).
    pub executions: i128,
    /// Path modes: the function's hot paths.
    pub paths: Option<HotPaths<'a>>,
}

/// A path-mode or interprocedural function's listed paths.
pub(super) struct HotPaths<'a> {
    /// Path mode: the function's executed paths; interprocedural: the module's executed paths whose active
    /// suffix visits the function.
    pub executed: usize,
    /// Path mode: NumPaths(ENTRY) of the function; interprocedural: of the module.
    pub num_paths: u128,
    /// The `top` hottest, hottest first, as `decode` reports them.
    pub listed: Vec<PathReport<'a>>,
}

impl Function<'_> {
    /// The profile mode of the function's module.
    pub fn mode(&self) -> Mode {
        self.module.meta.mode
    }
}

/// Everything decoded from a profile that the report's paths borrow from; built before [`functions`].
pub(super) struct Decoded<'a> {
    path_mode: Vec<(&'a ModuleProfile, &'a FunctionMeta, FunctionPaths)>,
    interproc: Vec<(&'a ModuleProfile, ModulePaths)>,
}

/// Decodes every path of the profile, with `decode`'s functions.
pub(super) fn decode<'a>(profile: &'a Profile, file: &Path) -> Result<Decoded<'a>> {
    let path_mode = crate::decode::decode_functions(&profile.modules, None, file)?;
    let modules: Vec<&ModuleProfile> = profile.modules.iter().filter(|m| m.meta.mode.is_interprocedural()).collect();
    let decoded = interproc::decode_modules(&modules, file)?;
    Ok(Decoded { path_mode, interproc: modules.into_iter().zip(decoded).collect() })
}

/// Every function of the profile, in profile order, with its `top` hottest paths.
pub(super) fn functions<'a>(
    profile: &'a Profile,
    decoded: &'a Decoded<'a>,
    top: usize,
    file: &Path,
    interproc_steps: &'a InterprocSteps<'a>,
) -> Result<Vec<Function<'a>>> {
    let by_function: HashMap<*const FunctionMeta, &'a FunctionPaths> =
        decoded.path_mode.iter().map(|(_, f, p)| (*f as *const FunctionMeta, p)).collect();
    let by_module: HashMap<*const ModuleProfile, &'a ModulePaths> =
        decoded.interproc.iter().map(|(m, p)| (*m as *const ModuleProfile, p)).collect();
    let mut out = Vec::new();
    for module in &profile.modules {
        let module_counts = ModuleCounts::new(module);
        let interproc = by_module.get(&(module as *const ModuleProfile)).copied();
        let visiting = interproc.map(|mp| visiting_paths(mp, module.meta.functions.len()));
        let homes = interproc.map(|mp| interproc::home_totals(mp, module.meta.functions.len()));
        let module_total: i128 = interproc.map_or(0, |mp| mp.paths.iter().map(|p| i128::from(p.count)).sum());
        for (index, meta) in module.meta.functions.iter().enumerate() {
            let c = module_counts.function(index).with_context(|| format!("reading {}", file.display()))?;
            let counts = function_report(module, index, &c);
            let block_executions = counts.blocks.iter().filter_map(|b| b.count).map(i128::from).sum();
            let (executions, paths) = if let Some(fp) = by_function.get(&(meta as *const FunctionMeta)) {
                let listed = fp
                    .hottest(Some(top))
                    .into_iter()
                    .enumerate()
                    .map(|(i, p)| crate::decode::path_report(module, meta, p, i + 1, fp.total))
                    .collect();
                (fp.total, Some(HotPaths { executed: fp.paths.len(), num_paths: fp.num_paths, listed }))
            } else if let (Some(mp), Some(visiting), Some(homes)) = (interproc, &visiting, &homes) {
                let mine = visiting.get(index).cloned().unwrap_or_default();
                let executed = mine.len();
                let listed = hottest(mine, Some(top))
                    .into_iter()
                    .enumerate()
                    .map(|(i, p)| interproc::path_report(module, mp, p, i + 1, module_total, interproc_steps))
                    .collect();
                let home = homes.get(index).map_or(0, |h| h.1);
                (home, Some(HotPaths { executed, num_paths: mp.num_paths, listed }))
            } else {
                (block_executions, None)
            };
            out.push(Function { module, meta, counts, executions, paths });
        }
    }
    Ok(out)
}

/// Per function of an interprocedural module: the paths whose active suffix visits it (once per path).
fn visiting_paths(mp: &ModulePaths, num_functions: usize) -> Vec<Vec<&InterprocCount>> {
    let mut out: Vec<Vec<&InterprocCount>> = vec![Vec::new(); num_functions];
    for p in &mp.paths {
        for q in p.visits.iter() {
            if let Some(v) = out.get_mut(q.index()) {
                v.push(p);
            }
        }
    }
    out
}
