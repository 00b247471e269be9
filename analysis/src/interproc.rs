//! Context and piecewise modules: module-wide path counts → decoded interprocedural paths → per-function counts.
//!
//! Melski & Reps, "Interprocedural Path Profiling", CC 1999 / UW–Madison TR-1382, 1998: the pass numbered the
//! observable paths of G*_fn for the program made of the module's functions (their graphs, with each direct
//! call to a function of the program ending its block) and the call sites recorded in
//! [`InterprocMeta`](pathprof_format::meta::InterprocMeta). That program, the supergraph and the ψ/ρ numbering are pure
//! functions of the metadata, so the reader rebuilds them with `pathprof_core::interproc`, checks that the
//! number of paths matches, and decodes every counted path (Algorithm 5.2 and its piecewise extension).
//!
//! Per-function edge and block counts follow from the *active* part of each path
//! (`pathprof_core::interproc::EdgeCounter`).
//!
//! Memory: a test suite's profile can hold millions of counted paths of hundreds of steps each (pixman's: more
//! than 4 M in one module), so no path is kept decoded. Netting streams (`net_counts_streaming`), each path is
//! added to the edge counts when its net count is final and dropped, and [`ModulePaths`] keeps a summary per
//! path ([`InterprocCount`]); views decode again only the paths they list ([`ModulePaths::decoder`]).
//!
//! Counts are signed as in path mode. A path cut short by a call that did not return is counted on every
//! arrival at its block when the metadata says so ([`ModuleMeta::path_arrivals`]), and netted here with
//! `pathprof_core::interproc::net_counts_streaming`; older profiles counted it +1 before the call and −1
//! once it returned. Untrusted input: path numbers are checked against `num_paths` before they are decoded, and
//! decoding is bounded by the program size.
//!
//! Fork re-entries (metadata version 5): a `fork()`ed child recorded a re-entry of the truncated path of each
//! counted block whose call was in flight at the fork and of each interprocedural call block it resumed; they
//! go into the netting and back into the edge counts as
//! virtual edges EXIT→B (`pathprof_core::interproc::EdgeCounter`).

use crate::judge::{conservation_violations, judge, AnalysisError, FunctionCounts, InexactReason};
use pathprof_core::interproc::{
    decode, net_counts_streaming, EdgeCounter, InterprocPath, Mode, Numbering, PathEnd, ProcId, Procedure, Program,
    SiteRole, Supergraph,
};
use pathprof_core::{BlockId, EdgeId};
use pathprof_format::meta::{InterprocMeta, ModuleMeta, PathStorage};
use pathprof_format::profile::ModuleProfile;
use std::collections::BTreeMap;

/// One counted interprocedural path, without its steps: a module can have millions of paths of hundreds of
/// steps each, so only what the views rank and filter by is kept; [`ModulePaths::decoder`] gives the steps of
/// the paths a view lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterprocCount {
    /// The module-wide path number, `0..num_paths`.
    pub number: u128,
    /// The net count (negative only for a re-entry correction — `setjmp`, or fork re-entries of a truncated path —
    /// or in an inconsistent profile).
    pub count: i64,
    /// A truncated path's fork re-entries (see [`crate::PathCount::fork_reentries`]).
    pub fork_reentries: i64,
    /// The function its active suffix starts in: the function the path "belongs to" in the views.
    pub home: Option<ProcId>,
    /// The functions its active suffix visits, ascending, each once: whose counts the path's count relies on.
    pub visits: Box<[ProcId]>,
}

impl InterprocCount {
    fn of(number: u128, count: i64, fork_reentries: i64, path: &InterprocPath) -> Self {
        let suffix = path.active_suffix();
        let mut visits: Vec<ProcId> = suffix.iter().map(|s| s.proc).collect();
        visits.sort_unstable();
        visits.dedup();
        let home = suffix.first().map(|s| s.proc);
        InterprocCount { number, count, fork_reentries, home, visits: visits.into_boxed_slice() }
    }
}

/// Every counted path of a context or piecewise module and the per-function counts derived from them.
#[derive(Clone, Debug)]
pub struct ModulePaths {
    /// Context or piecewise.
    pub mode: Mode,
    /// numValidComps(Entry_global).
    pub num_paths: u128,
    /// The paths with a nonzero net count (or fork re-entries), by ascending number.
    pub paths: Vec<InterprocCount>,
    /// Per function of the metadata (same order): derived edge and block counts with the exactness verdict.
    pub functions: Vec<FunctionCounts>,
    /// Per call site (program-wide id): (function index, call block) for labelling.
    pub sites: Vec<(usize, u32)>,
    /// Per call site: its role in G*_fn (a summary edge is `Recursive` or `Cut`).
    pub site_roles: Vec<SiteRole>,
    /// Per function: its cut edges (sorted; out-edges of its cut vertices that are not back edges, and edges
    /// entering a reset loop), so that a path ending or restarting at one is reported as cut, not as a loop's.
    pub cut_edges: Vec<Vec<EdgeId>>,
    /// Per function: the cut edges that enter a reset loop (sorted), so that a path ending at one is reported
    /// as entering the loop rather than cut by the budget.
    pub loop_entry_edges: Vec<Vec<EdgeId>>,
    /// The module's G*_fn and the first procedure of each storage unit, to decode listed paths again.
    graph: Option<(Supergraph, Vec<ProcId>)>,
    /// For errors.
    module_name: String,
}

/// Decodes the paths of one module (see [`ModulePaths::decoder`]).
pub struct PathDecoder<'m> {
    num: Numbering<'m>,
    module_name: &'m str,
}

impl PathDecoder<'_> {
    /// The steps of path `number` (one of the module's counted paths, which decoded before).
    pub fn decode(&self, number: u128) -> Result<InterprocPath, AnalysisError> {
        decode(&self.num, number).map_err(|e| AnalysisError::Interproc {
            module: self.module_name.to_string(),
            reason: format!("path {number}: {e}"),
        })
    }
}

impl ModulePaths {
    /// A decoder of the module's paths: the numbering is solved once per decoder, so a view decodes the paths it
    /// lists with one.
    pub fn decoder(&self) -> Result<PathDecoder<'_>, AnalysisError> {
        let corrupt = |reason: String| AnalysisError::Interproc { module: self.module_name.clone(), reason };
        let (sg, starts) = self.graph.as_ref().ok_or_else(|| corrupt("the module has no paths".into()))?;
        let num = sg.number_in_units(self.mode, starts).map_err(|e| corrupt(e.to_string()))?;
        Ok(PathDecoder { num, module_name: &self.module_name })
    }

    /// Whether cfg edge `e` of function `proc` is a cut edge rather than a back edge.
    pub fn is_cut_edge(&self, proc: ProcId, e: EdgeId) -> bool {
        self.cut_edges.get(proc.index()).is_some_and(|c| c.binary_search(&e).is_ok())
    }

    /// Whether cfg edge `e` of function `proc` enters a reset loop (one of its cut edges).
    pub fn is_loop_entry_edge(&self, proc: ProcId, e: EdgeId) -> bool {
        self.loop_entry_edges.get(proc.index()).is_some_and(|c| c.binary_search(&e).is_ok())
    }

    /// The paths hottest first: by descending count, ties by ascending number.
    pub fn hottest_first(&self) -> Vec<&InterprocCount> {
        crate::rank::hottest(self.paths.iter().collect(), None)
    }
}

impl crate::rank::Ranked for InterprocCount {
    fn count(&self) -> i64 {
        self.count
    }

    fn number(&self) -> u128 {
        self.number
    }
}

/// The Melski–Reps numbering a context or piecewise module's paths follow.
fn numbering_mode(meta: &ModuleMeta) -> Result<Mode, String> {
    match meta.mode {
        pathprof_format::meta::Mode::Context => Ok(Mode::Context),
        pathprof_format::meta::Mode::Piecewise => Ok(Mode::Piecewise),
        other => Err(format!("the module was profiled in {} mode", other.name())),
    }
}

/// Rebuilds the program the pass numbered from a module's metadata.
pub fn program_of(meta: &ModuleMeta) -> Result<(Program, Mode), String> {
    let mode = numbering_mode(meta)?;
    let ip = meta.interproc.as_ref().ok_or("the module has no interprocedural program")?;
    if ip.procs.len() != meta.functions.len() {
        return Err("the interprocedural program does not match the function list".into());
    }
    let procs = meta
        .functions
        .iter()
        .zip(&ip.procs)
        .map(|(f, p)| Procedure {
            cfg: f.cfg.clone(),
            call_sites: p.call_sites.clone(),
            external_entry: p.external_entry,
            cut_vertices: p.cut_vertices.iter().map(|&b| BlockId(b)).collect(),
            reset_headers: p.reset_headers.iter().map(|&b| BlockId(b)).collect(),
        })
        .collect();
    Program::new(procs).map(|p| (p, mode)).map_err(|e| e.to_string())
}

/// The counted paths of `ip`'s units by module-wide number (each unit counts with numbers local to it, in the
/// module's next dense counters or in the sparse entries tagged with the unit's index), and the numbers counted
/// past their unit's paths.
fn unit_counts(
    module: &ModuleProfile,
    ip: &InterprocMeta,
    num: &Numbering<'_>,
) -> Result<(BTreeMap<u128, i64>, Vec<InexactReason>), String> {
    let mut raw: BTreeMap<u128, i64> = BTreeMap::new();
    let mut dense_next = 0usize;
    for (meta, unit) in ip.units.iter().zip(num.units()) {
        if meta.storage == PathStorage::Dense {
            let n = usize::try_from(unit.num_paths).map_err(|_| "dense path array too large".to_string())?;
            let end = dense_next.checked_add(n).ok_or("dense path array too large")?;
            let counters = module.counters.get(dense_next..end).ok_or("dense path counters missing")?;
            for (i, &c) in counters.iter().enumerate() {
                if c != 0 {
                    raw.insert(unit.first_path.saturating_add(i as u128), c as i64);
                }
            }
            dense_next = end;
        }
    }
    // A local number past its unit's paths names none of the module's: kept apart, with the unit's path count.
    let mut strays: BTreeMap<(u128, u128), i64> = BTreeMap::new();
    for s in module.path_entries() {
        let unit = usize::try_from(s.function)
            .ok()
            .filter(|&u| ip.units.get(u).is_some_and(|m| m.storage != PathStorage::Dense));
        let unit = unit.and_then(|u| num.units().get(u)).ok_or("path counts outside the units that hash them")?;
        let slot = if s.path < unit.num_paths {
            raw.entry(unit.first_path.saturating_add(s.path)).or_insert(0)
        } else {
            strays.entry((s.path, unit.num_paths)).or_insert(0)
        };
        *slot = slot.wrapping_add(s.count as i64);
    }
    raw.retain(|_, c| *c != 0);
    let strays = strays
        .into_iter()
        .filter(|&(_, c)| c != 0)
        .map(|((path, num_paths), _)| InexactReason::PathOutOfRange { path, num_paths })
        .collect();
    Ok((raw, strays))
}

/// The paths of a module none of whose functions was instrumented: none, unless the file is corrupt.
fn empty_module(module: &ModuleProfile) -> Result<ModulePaths, String> {
    let mode = numbering_mode(&module.meta)?;
    if module.counters.iter().any(|&c| c != 0) || module.path_entries().next().is_some() {
        return Err("counts in a module without instrumented functions".into());
    }
    Ok(ModulePaths {
        mode,
        num_paths: 0,
        paths: Vec::new(),
        functions: Vec::new(),
        sites: Vec::new(),
        site_roles: Vec::new(),
        cut_edges: Vec::new(),
        loop_entry_edges: Vec::new(),
        graph: None,
        module_name: module.meta.module_name.clone(),
    })
}

/// Decodes every counted path of a context or piecewise module, derives per-function counts and keeps a summary
/// of each path (see the module docs).
///
/// Errors (a corrupt profile, or one of another mode): the program cannot be rebuilt or numbered, its number of
/// paths differs from the metadata, a path number is out of range, a path cannot be decoded, or dense counters
/// are missing. Never panics.
pub fn module_path_counts(module: &ModuleProfile) -> Result<ModulePaths, AnalysisError> {
    let corrupt = |reason: String| AnalysisError::Interproc { module: module.meta.module_name.clone(), reason };
    if module.meta.functions.is_empty() && module.meta.interproc.is_none() {
        // Every function was left out (`ModuleMeta::left_out`): a module with no program counts nothing.
        return empty_module(module).map_err(corrupt);
    }
    let (program, mode) = program_of(&module.meta).map_err(corrupt)?;
    let ip = module.meta.interproc.as_ref().ok_or_else(|| corrupt("no interprocedural program".into()))?;
    let sites: Vec<(usize, u32)> = program.sites().iter().map(|s| (s.proc.index(), s.block.0)).collect();
    let sg = Supergraph::build(program);
    let starts: Vec<ProcId> = ip.units.iter().map(|u| ProcId(u.first_proc)).collect();
    let num = sg.number_in_units(mode, &starts).map_err(|e| corrupt(e.to_string()))?;
    if num.num_paths() != ip.num_paths {
        return Err(corrupt(format!("records {} paths, but its program gives {}", ip.num_paths, num.num_paths())));
    }
    let (raw, out_of_range) = unit_counts(module, ip, &num).map_err(corrupt)?;

    // A well-formed file whose counts name paths the module does not have (`out_of_range`): those are left out;
    // a path crosses functions, so no function's derived counts are vouched for.
    let forked = module.fork_reentries();
    let program = sg.program();
    let mut path_reentries: BTreeMap<u128, i128> = BTreeMap::new();
    for (&(f, t), &c) in &forked.paths {
        // Signed like the path counts they correct; the function field says where the path was counted, so in
        // which unit its number `t` is local.
        let proc = ProcId(u32::try_from(f).unwrap_or(u32::MAX));
        let unit = num.units().get(num.unit_of(proc)).filter(|_| program.get_proc(proc).is_some());
        let Some(t) = unit.filter(|u| t < u.num_paths).map(|u| u.first_path.saturating_add(t)) else {
            return Err(corrupt(format!("a fork re-entry of path {t} of function #{f}, which its unit does not have")));
        };
        let slot = path_reentries.entry(t).or_insert(0);
        *slot = slot.saturating_add(i128::from(c as i64));
    }
    let mut block_reentries: Vec<(ProcId, BlockId, i128)> = Vec::new();
    for (&(f, b), &c) in &forked.blocks {
        let (p, b) = (ProcId(u32::try_from(f).unwrap_or(u32::MAX)), BlockId(u32::try_from(b).unwrap_or(u32::MAX)));
        let waits_in_a_call = program.get_proc(p).is_some()
            && program.site_at(p, b).is_some_and(|s| sg.calls().role(s) == SiteRole::Interprocedural)
            && program.cfg(p).edges().iter().any(|e| e.from == b && e.kind == pathprof_core::EdgeKind::Termination);
        if !waits_in_a_call {
            let why = "which holds no interprocedural call that may not return";
            return Err(corrupt(format!("a fork re-entry of block {b} of function #{f}, {why}")));
        }
        block_reentries.push((p, b, i128::from(c as i64)));
    }
    // Each path is decoded, added to the edge counts and dropped: only its summary stays.
    let mut leading: Vec<Vec<InexactReason>> = vec![out_of_range; program.num_procs()];
    // Per function, the paths ending in it that count negative, as (number, reason): listed by number.
    let mut negative: Vec<Vec<(u128, InexactReason)>> = vec![Vec::new(); program.num_procs()];
    let mut paths: Vec<InterprocCount> = Vec::new();
    let mut counter = EdgeCounter::new(program, mode);
    let mut add = |number: u128, path: &InterprocPath, count: i128, fork_reentries: i128| -> Result<(), String> {
        let (Ok(count), Ok(fork_reentries)) = (i64::try_from(count), i64::try_from(fork_reentries)) else {
            return Err(format!("path {number}: net count {count} out of range"));
        };
        let end_proc = match path.end {
            PathEnd::RootReturn { proc, .. } | PathEnd::Termination { proc, .. } | PathEnd::BackEdge { proc, .. } => {
                proc
            }
        };
        let reentry = matches!(path.end, PathEnd::Termination { proc, edge }
        if module.meta.functions.get(proc.index()).is_some_and(|f| {
            f.cfg.edges().get(edge.index()).is_some_and(|e| f.reentry_blocks.contains(&e.from.0))
        }));
        let departures = count.saturating_add(fork_reentries);
        if (count < 0 && !reentry && departures < 0) || fork_reentries < 0 {
            if let Some(l) = negative.get_mut(end_proc.index()) {
                l.push((number, InexactReason::NegativePath { path: number, count: departures }));
            }
        }
        counter.add(path, i128::from(count), i128::from(fork_reentries));
        paths.push(InterprocCount::of(number, count, fork_reentries, path));
        Ok(())
    };
    if module.meta.path_arrivals {
        let wide: BTreeMap<u128, i128> = raw.iter().map(|(&n, &c)| (n, i128::from(c))).collect();
        let mut failed = None;
        net_counts_streaming(&num, &wide, &path_reentries, |n, path, count, k| {
            if failed.is_none() {
                failed = add(n, path, count, k).err();
            }
        })
        .map_err(|e| corrupt(e.to_string()))?;
        if let Some(reason) = failed {
            return Err(corrupt(reason));
        }
    } else {
        for (&n, &c) in &raw {
            let path = decode(&num, n).map_err(|e| corrupt(format!("path {n}: {e}")))?;
            add(n, &path, i128::from(c), 0).map_err(corrupt)?;
        }
    }
    // Netting solves paths in its own order; the views list them by number.
    paths.sort_unstable_by_key(|p| p.number);
    for (l, mut n) in leading.iter_mut().zip(negative) {
        n.sort_unstable_by_key(|&(number, _)| number);
        l.extend(n.into_iter().map(|(_, reason)| reason));
    }
    let counted = counter.finish(&block_reentries);

    let functions = module
        .meta
        .functions
        .iter()
        .zip(counted.edges)
        .zip(counted.reentries)
        .zip(leading)
        .map(|(((f, raw_edges), reentries), lead)| {
            let cfg = &f.cfg;
            let violations = conservation_violations(cfg, &raw_edges, &reentries);
            let mut blocks = vec![0i128; cfg.num_vertices()];
            for (e, &c) in cfg.edges().iter().zip(&raw_edges) {
                if let Some(b) = blocks.get_mut(e.to.index()) {
                    *b = b.saturating_add(c);
                }
            }
            for (b, &r) in blocks.iter_mut().zip(&reentries) {
                *b = b.saturating_add(r);
            }
            blocks.truncate(cfg.num_blocks());
            judge(module, f, raw_edges, &blocks, &reentries, &violations, vec![false; cfg.num_edges()], lead)
        })
        .collect();
    let site_roles = sg.calls().roles().to_vec();
    // Cut edges, and edges into reset loops, which end their paths like cuts (as path mode reports them).
    let cut_edges = program
        .proc_ids()
        .map(|q| {
            let dag = sg.dag(q);
            let cut = |e: &EdgeId| matches!(dag.cfg_edge_role(*e), pathprof_core::dag::CfgEdgeRole::Cut { .. });
            program.cfg(q).edge_ids().filter(cut).collect()
        })
        .collect();
    let loop_entry_edges = program
        .proc_ids()
        .map(|q| {
            let dag = sg.dag(q);
            program.cfg(q).edge_ids().filter(|&e| dag.enters_reset_loop(e)).collect()
        })
        .collect();
    drop(num);
    let module_name = module.meta.module_name.clone();
    let graph = Some((sg, starts));
    Ok(ModulePaths {
        mode,
        num_paths: ip.num_paths,
        paths,
        functions,
        sites,
        site_roles,
        cut_edges,
        loop_entry_edges,
        graph,
        module_name,
    })
}
