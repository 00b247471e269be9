//! The executed paths of a whole profile, for the program-wide views (`pathprof top`, `pathprof diff`).
//!
//! Decoding is `decode`'s: path-mode functions through [`crate::decode::decode_functions`]
//! (`pathprof_analysis::function_path_counts`), context and piecewise modules through
//! `pathprof_analysis::module_path_counts`. This module only enumerates the result program-wide: every path
//! with a positive count, with the function it belongs to (a context or piecewise path belongs to the function
//! its active suffix starts in, as in `decode`) and whether its count is vouched for.
//!
//! A path's count is vouched for when its function's counts are exact (for an interprocedural path: every
//! function its active suffix visits). A function is *left out* of the views when it is inexact or is home to a
//! path that is not vouched for: its paths are not ranked or compared as numbers, and the views say how many
//! functions and paths they left out. A negative count (a `setjmp` or fork re-entry correction) is not an
//! execution and is never listed.

use crate::decode::report::{InterprocSteps, PathId, Steps};
use anyhow::{bail, Context, Result};
use pathprof_analysis::{module_path_counts, FunctionPaths, ModulePaths, Ranked};
use pathprof_format::meta::{FunctionMeta, Mode};
use pathprof_format::profile::{ModuleProfile, Profile};
use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::Path;

/// The decoded paths of a profile's path-mode functions or of its interprocedural modules (never both: a
/// profile that mixes path modes is refused, as `decode` refuses it).
pub(crate) struct Decoded<'p> {
    /// `path`, `context` or `piecewise`.
    pub mode: &'static str,
    /// Path mode: every function of every path-mode module, in profile order.
    functions: Vec<(&'p ModuleProfile, &'p FunctionMeta, FunctionPaths)>,
    /// Context and piecewise modes: every module, in profile order.
    modules: Vec<(&'p ModuleProfile, ModulePaths)>,
    /// Modules of the profile in edge or block mode, which record no paths.
    pub edge_modules: usize,
}

/// One executed path (count > 0) of the program.
#[derive(Clone, Copy)]
pub(crate) struct ProgramPath<'a> {
    pub module: &'a ModuleProfile,
    /// The function the path belongs to.
    pub function: &'a FunctionMeta,
    /// Its index in the module's function list.
    pub function_index: usize,
    /// The path number: per function in path mode, module-wide in the interprocedural modes.
    pub number: u128,
    pub count: i64,
    /// Position in the enumeration (profile order, then path number): breaks ties in rankings.
    pub seq: u128,
    /// Decoded when read (interprocedural paths: see [`InterprocSteps`]).
    pub steps: Steps<'a>,
}

impl ProgramPath<'_> {
    /// The path's identity across profiles of one build: module build, function (path mode only; interprocedural
    /// numbers are module-wide) and number.
    pub fn key(&self, interprocedural: bool) -> PathKey {
        let function = if interprocedural { usize::MAX } else { self.function_index };
        (self.module.meta_hash, function, self.number)
    }

    pub fn id(&self) -> PathId {
        PathId::new(self.number)
    }
}

/// (module `meta_hash`, function index or `usize::MAX` for a module-wide number, path number).
pub(crate) type PathKey = (u64, usize, u128);

impl Ranked for ProgramPath<'_> {
    fn count(&self) -> i64 {
        self.count
    }

    /// The tie-breaker must be unique program-wide; path numbers repeat across functions, positions do not.
    #[allow(clippy::misnamed_getters)]
    fn number(&self) -> u128 {
        self.seq
    }
}

/// One function of the program with its vouched-for path executions.
pub(crate) struct FunctionPathsSummary<'a> {
    pub module: &'a ModuleProfile,
    pub function: &'a FunctionMeta,
    pub function_index: usize,
    /// Sum of the positive counts of its paths.
    pub executions: u128,
    /// Paths with a positive count.
    pub executed_paths: usize,
    /// Left out: its counts are not exact, or one of its paths crosses a function whose counts are not.
    pub left_out: bool,
}

/// The program's functions and executed paths, split into those the views rank and those they leave out.
pub(crate) struct Enumerated<'a> {
    /// Every function of the decoded modules, in profile order.
    pub functions: Vec<FunctionPathsSummary<'a>>,
    /// The executed paths of the functions that are not left out, in profile order then by path number.
    pub paths: Vec<ProgramPath<'a>>,
    /// Executed paths of left-out functions.
    pub left_out_paths: usize,
}

impl Enumerated<'_> {
    /// Sum of the counts of `paths`: the program's vouched-for path executions.
    pub fn executions(&self) -> u128 {
        self.functions.iter().filter(|f| !f.left_out).map(|f| f.executions).sum()
    }

    /// Functions left out of the views.
    pub fn left_out_functions(&self) -> usize {
        self.functions.iter().filter(|f| f.left_out).count()
    }
}

impl<'p> Decoded<'p> {
    /// Decodes every path-mode function or every interprocedural module of `profile` (`file` names it in
    /// errors). Refuses a profile without path-mode modules and one that mixes path modes.
    pub fn new(profile: &'p Profile, file: &Path) -> Result<Decoded<'p>> {
        let edge_modules = profile.modules.iter().filter(|m| m.meta.mode.counts_edges()).count();
        if edge_modules == profile.modules.len() {
            let kind = match profile.modules.first().map(|m| m.meta.mode) {
                Some(Mode::Block) => "a block profile",
                Some(_) => "an edge profile",
                None => "a profile without modules",
            };
            bail!("{} is {kind}: it records no paths (pathprof show and pathprof coverage read it)", file.display());
        }
        let modes: BTreeSet<&'static str> =
            profile.modules.iter().filter(|m| !m.meta.mode.counts_edges()).map(|m| m.meta.mode.name()).collect();
        if modes.len() > 1 {
            let modes: Vec<&str> = modes.into_iter().collect();
            bail!(
                "{} mixes path profiles of modes {}: their paths are not comparable",
                file.display(),
                modes.join(", ")
            );
        }
        let mode = modes.into_iter().next().unwrap_or(Mode::Path.name());
        let mut decoded = Decoded { mode, functions: Vec::new(), modules: Vec::new(), edge_modules };
        if mode == Mode::Path.name() {
            decoded.functions = crate::decode::decode_functions(&profile.modules, None, file)?;
        } else {
            for m in profile.modules.iter().filter(|m| m.meta.mode.is_interprocedural()) {
                let mp = module_path_counts(m).with_context(|| format!("decoding {}", file.display()))?;
                decoded.modules.push((m, mp));
            }
        }
        Ok(decoded)
    }

    /// Whether path numbers are module-wide (context, piecewise).
    pub fn interprocedural(&self) -> bool {
        !self.modules.is_empty()
    }

    /// Every function and every executed path, with the left-out ones set apart (see the module docs); the
    /// steps of interprocedural paths are decoded by `steps` when a view reads them.
    pub fn enumerate<'a>(&'a self, steps: &'a InterprocSteps<'a>) -> Enumerated<'a> {
        let mut out = Enumerated { functions: Vec::new(), paths: Vec::new(), left_out_paths: 0 };
        let mut seq: u128 = 0;
        for (module, f, fp) in &self.functions {
            let function_index = index_of(module, f);
            let mine: Vec<ProgramPath> = fp
                .paths
                .iter()
                .filter(|p| p.count > 0)
                .map(|p| {
                    seq += 1;
                    ProgramPath {
                        module,
                        function: f,
                        function_index,
                        number: p.number,
                        count: p.count,
                        seq,
                        steps: Steps::Blocks { function: f, blocks: &p.path.blocks },
                    }
                })
                .collect();
            add_function(&mut out, module, f, function_index, mine, !fp.counts.exact);
        }
        for (module, mp) in &self.modules {
            let meta = &module.meta;
            let mut homed: Vec<Vec<ProgramPath>> = vec![Vec::new(); meta.functions.len()];
            let mut unvouched = vec![false; meta.functions.len()];
            for p in mp.paths.iter().filter(|p| p.count > 0) {
                let Some(home) = p.home.map(|h| h.index()) else { continue };
                let (Some(f), Some(slot)) = (meta.functions.get(home), homed.get_mut(home)) else { continue };
                seq += 1;
                slot.push(ProgramPath {
                    module,
                    function: f,
                    function_index: home,
                    number: p.number,
                    count: p.count,
                    seq,
                    steps: Steps::Interproc { meta, mp, number: p.number, decoded: steps },
                });
                let exact = |i: usize| mp.functions.get(i).is_some_and(|c| c.exact);
                if !p.visits.iter().all(|q| exact(q.index())) {
                    if let Some(u) = unvouched.get_mut(home) {
                        *u = true;
                    }
                }
            }
            for (i, (f, mine)) in meta.functions.iter().zip(homed).enumerate() {
                let inexact = !mp.functions.get(i).is_some_and(|c| c.exact) || unvouched.get(i) == Some(&true);
                add_function(&mut out, module, f, i, mine, inexact);
            }
        }
        out
    }
}

/// Adds a function and its executed paths (`mine`) to `out`, or only its summary when it is `left_out`.
fn add_function<'a>(
    out: &mut Enumerated<'a>,
    module: &'a ModuleProfile,
    function: &'a FunctionMeta,
    function_index: usize,
    mine: Vec<ProgramPath<'a>>,
    left_out: bool,
) {
    let executions = mine.iter().map(|p| p.count.unsigned_abs() as u128).sum();
    out.functions.push(FunctionPathsSummary {
        module,
        function,
        function_index,
        executions,
        executed_paths: mine.len(),
        left_out,
    });
    if left_out {
        out.left_out_paths += mine.len();
    } else {
        out.paths.extend(mine);
    }
}

/// The index of `f` in its module's function list (it is one of them).
fn index_of(module: &ModuleProfile, f: &FunctionMeta) -> usize {
    module.meta.functions.iter().position(|g| std::ptr::eq(g, f)).unwrap_or(usize::MAX)
}

/// `part` as a percentage of `whole` (0 when `whole` is 0).
pub(crate) fn share(part: u128, whole: u128) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// The name a function is shown by: its source name, or its linkage name without debug info.
pub(crate) fn shown_name(f: &FunctionMeta) -> &str {
    if f.display_name.is_empty() {
        &f.name
    } else {
        &f.display_name
    }
}

/// Writes a path's blocks for text output, one per line with its source lines; an interprocedural path's
/// blocks name their function, with its context-prefix and the calls and returns between them marked.
pub(crate) fn write_steps(out: &mut impl Write, p: &ProgramPath) -> io::Result<()> {
    let file = if p.function.file.is_empty() { "<unknown file>" } else { p.function.file.as_str() };
    if let Steps::Blocks { .. } = p.steps {
        return crate::text::path_steps(out, file, p.steps.iter().map(|s| (s.block, s.lines)));
    }
    let functions = &p.module.meta.functions;
    let names = |name| match functions.iter().find(|f| f.name == name) {
        Some(f) => (shown_name(f), f.file.as_str()),
        None => (name, ""),
    };
    crate::text::interproc_steps(out, p.steps.iter(), p.steps.context_steps() as usize, names)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn shares_are_percentages_and_zero_without_a_whole() {
        assert_eq!(share(1, 4), 25.0);
        assert_eq!(share(3, 3), 100.0);
        assert_eq!(share(0, 7), 0.0);
        assert_eq!(share(5, 0), 0.0);
    }
}
