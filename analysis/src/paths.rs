//! Path-mode functions: path counts → regenerated Ball–Larus paths → edge and block counts.
//!
//! Ball & Larus, "Efficient Path Profiling", MICRO-29, 1996: the pass numbered the acyclic paths of the DAG that
//! `pathprof_core::dag::PathDag::build_for_path_mode(cfg, adj, dfs, budget, resets)` builds from the function's graph, and
//! each execution of a path bumped the count of its number. The DAG, and so the numbering, is a pure function of
//! the graph and the budget stored in the metadata, so the reader rebuilds it, checks that it has the recorded
//! number of paths, and regenerates every executed path (BL96 §3.5). Edge and block counts follow by summing the
//! path counts along the paths ([`pathprof_core::regenerate::signed_edge_counts_from_dag_paths`]).
//!
//! Counts are signed: a path ending with a `Termination` edge nets the calls that left the block abnormally
//! against the re-entries of a `setjmp` block by `longjmp`, so its count can be negative. Profiles of metadata
//! version 3 ([`pathprof_format::meta::ModuleMeta::path_arrivals`]) count such a path once per arrival at its block,
//! before the call, and the net count is derived here (`pathprof_core::arrivals`); older ones counted +1 before
//! the call and −1 after it returned. Each counter is read as an `i64` (the two's complement of the
//! `u64` in the file), and repeated hashed entries of one path add with wrapping, as [`pathprof_format::profile::merge`] does.
//!
//! Fork re-entries (metadata version 5): a `fork()`ed child resumes the activations in flight at the fork without
//! arriving at their blocks, so a truncated path nets one lower per resumption; the child recorded each one
//! against that truncated path, and `count + fork_reentries` is how often the program really left with its
//! prefix ([`pathprof_core::arrivals`]). Edge and block counts put the re-entries back as virtual edges EXIT→B
//! ([`pathprof_core::reentry`]), so they equal edge mode's.
//!
//! Untrusted input: every path number is checked against `num_paths` before it is decoded, which bounds each
//! decode by the size of the DAG, and the number of decodes by the number of counters and entries in the file.
//! A path number out of range or a recomputed path count that differs from the metadata is an
//! [`AnalysisError`] (a corrupt profile); a negative count that cannot be explained is an inexact reason.

use crate::judge::{conservation_violations, judge, AnalysisError, FunctionCounts, InexactReason};
use pathprof_core::arrivals::{net_counts_with_reentries, truncation_block};
use pathprof_core::dag::{DagEdgeId, PathDag};
use pathprof_core::dfs::depth_first;
use pathprof_core::numbering::Numbering;
use pathprof_core::reentry::add_fork_reentries;
use pathprof_core::regenerate::{
    decode, signed_edge_counts_from_dag_paths, to_cfg_path, CfgPath, DecodeError, PathEnd,
};
use pathprof_core::{BlockId, EdgeKind};
use pathprof_format::meta::{FunctionMeta, Mode, PathMeta, PathStorage};
use pathprof_format::profile::ModuleProfile;
use std::collections::BTreeMap;

/// One executed path of a function: its number, its net count and where it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathCount {
    /// The Ball–Larus path number, `0..num_paths`.
    pub number: u128,
    /// The net count: how often the path ran (negative only for a re-entry correction, see
    /// [`PathCount::is_reentry_correction`], or in an inconsistent profile).
    pub count: i64,
    /// A truncated path's fork re-entries: how often a `fork()`ed child resumed the call of its last block that
    /// was in flight at the fork, with the path's prefix (which ran in the parent). `count + fork_reentries` is
    /// how often the program really left the block abnormally with this prefix.
    pub fork_reentries: i64,
    /// The regenerated path: how it starts and ends, its blocks and cfg edges.
    pub path: CfgPath,
    /// Whether the path ends with a `Termination` edge: the program left its last block abnormally (`exit`,
    /// `longjmp`, an exception through a plain call).
    pub abnormal: bool,
    /// Whether the path ends with the `Termination` edge of a block in `FunctionMeta::reentry_blocks` (a
    /// `setjmp` block), the one kind of path whose count may legitimately be negative.
    pub reentry: bool,
    /// Whether the path ends by entering a reset loop ([`pathprof_core::ball_larus::resets`]): its
    /// [`PathEnd::Cut`] edge is the loop's entry, not a cut of the path budget, and the next path starts at the
    /// loop's header. Reports say which, so that a reset loop does not read as a budget cut.
    pub ends_at_loop_entry: bool,
}

impl PathCount {
    /// A negative count of a re-entry block's termination path: the block was re-entered by `longjmp` more
    /// often than it was left abnormally, or resumed by `fork()`ed children (see `fork_reentries`); the count is a
    /// correction, not executions.
    pub fn is_reentry_correction(&self) -> bool {
        (self.reentry || self.fork_reentries > 0) && self.count < 0
    }

    /// How often the program left the path's last block abnormally with this prefix: the count plus the fork
    /// re-entries (a `setjmp` block's net count is all that is known).
    pub fn departures(&self) -> i64 {
        self.count.saturating_add(self.fork_reentries)
    }

    /// The block the path leaves the function from (abnormally or by returning), or takes its back or cut edge
    /// from: the last block of the path.
    pub fn last_block(&self) -> Option<BlockId> {
        self.path.blocks.last().copied()
    }
}

/// Every executed path of one path-mode function and the counts derived from them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionPaths {
    /// NumPaths(ENTRY): path numbers are `0..num_paths` (the recorded value, verified against the rebuilt DAG).
    pub num_paths: u128,
    /// Every path with a nonzero net count, by ascending path number.
    pub paths: Vec<PathCount>,
    /// The sum of all path counts.
    pub total: i128,
    /// Edge, block and entry counts derived from the paths, with the exactness verdict (negative path counts
    /// that are not re-entry corrections are among its reasons).
    pub counts: FunctionCounts,
}

impl FunctionPaths {
    /// The paths hottest first: by descending count, ties by ascending path number.
    pub fn hottest_first(&self) -> Vec<&PathCount> {
        self.hottest(None)
    }

    /// The `limit` hottest paths (all without a limit), hottest first, as [`FunctionPaths::hottest_first`]
    /// orders them.
    pub fn hottest(&self, limit: Option<usize>) -> Vec<&PathCount> {
        crate::rank::hottest(self.paths.iter().collect(), limit)
    }
}

impl crate::rank::Ranked for PathCount {
    fn count(&self) -> i64 {
        self.count
    }

    fn number(&self) -> u128 {
        self.number
    }
}

/// Regenerates every executed path of function `func_index` of a path-mode module, with its net count, and
/// derives the function's edge and block counts from them (see the module docs).
///
/// Errors: the function does not exist, the module is not in path mode, the function has no path data, a path
/// number is `>= num_paths`, the DAG rebuilt from the graph and budget does not have `num_paths` paths (or
/// cannot be built), or a dense function also has hashed entries. Never panics.
pub fn function_path_counts(module: &ModuleProfile, func_index: usize) -> Result<FunctionPaths, AnalysisError> {
    let name = || module.meta.module_name.clone();
    let f = module.meta.functions.get(func_index).ok_or_else(|| AnalysisError::FunctionOutOfRange {
        module: name(),
        index: func_index,
        num_functions: module.meta.functions.len(),
    })?;
    if module.meta.mode != Mode::Path {
        return Err(AnalysisError::NotPathMode { module: name(), mode: module.meta.mode.name() });
    }
    let fname = || f.name.clone();
    let pm = f.path.as_ref().ok_or_else(|| AnalysisError::MissingPathData { module: name(), function: fname() })?;

    // Net count per path number; zero-sum paths are dropped.
    let mut raw = raw_path_counts(module, func_index, f, pm)?;
    // A well-formed file whose counts name paths the function does not have: leave those out, and say that
    // nothing derived for this function is vouched for.
    let out_of_range: Vec<InexactReason> = raw
        .split_off(&pm.num_paths)
        .into_keys()
        .map(|path| InexactReason::PathOutOfRange { path, num_paths: pm.num_paths })
        .collect();

    // Rebuild the pass's numbering.
    let cfg = &f.cfg;
    let adj = cfg.adjacency();
    let dfs = depth_first(cfg, &adj);
    let dag = PathDag::build_for_path_mode(cfg, &adj, &dfs, pm.budget, module.meta.path_loop_resets)
        .map_err(|error| AnalysisError::PathDag { module: name(), function: fname(), error })?;
    let numbering = Numbering::compute(&dag).map_err(|error| AnalysisError::PathNumbering {
        module: name(),
        function: fname(),
        error,
    })?;
    if numbering.num_paths() != pm.num_paths {
        return Err(AnalysisError::NumPathsMismatch {
            module: name(),
            function: fname(),
            recorded: pm.num_paths,
            recomputed: numbering.num_paths(),
        });
    }

    let decode_err = |error| AnalysisError::PathDecode { module: name(), function: fname(), error };
    let forked = module.fork_reentries();
    let f_index = func_index as u64;
    let reentered = |m: &BTreeMap<(u64, u128), u64>| -> Vec<(u128, u64)> {
        m.range((f_index, 0)..=(f_index, u128::MAX)).map(|(&(_, k), &c)| (k, c)).collect()
    };
    if let Some((b, _)) = reentered(&forked.blocks).first() {
        let reason = format!("a path-mode function with a fork re-entry of block {b}");
        return Err(AnalysisError::Reentry { module: name(), function: fname(), reason });
    }
    // Each counted path regenerated once: netting arrivals needs the paths too, so it hands them back.
    let net: Vec<(u128, i64, i64, Vec<DagEdgeId>)> = if module.meta.path_arrivals {
        // Re-entry counts are u64 sums in the file; read them as signed like the path counts they correct.
        let re = reentered(&forked.paths).into_iter().map(|(t, c)| (t, i128::from(c as i64)));
        net_counts_with_reentries(cfg, &dag, &numbering, raw, re)
            .map_err(decode_err)?
            .into_iter()
            .map(|(r, p)| match (i64::try_from(p.count), i64::try_from(p.fork_reentries)) {
                (Ok(c), Ok(k)) => Ok((r, c, k, p.path)),
                _ => Err(decode_err(DecodeError::Overflow)),
            })
            .collect::<Result<_, _>>()?
    } else {
        raw.into_iter()
            .map(|(r, c)| decode(&dag, &numbering, r).map(|p| (r, c, 0, p)).map_err(decode_err))
            .collect::<Result<_, _>>()?
    };
    let mut dag_paths: Vec<(Vec<DagEdgeId>, i64)> = Vec::with_capacity(net.len());
    let mut reentries: Vec<(BlockId, i128)> = Vec::new();
    let mut paths = Vec::with_capacity(net.len());
    let mut leading = out_of_range;
    let mut total: i128 = 0;
    for (number, count, fork_reentries, dag_path) in net {
        let path = to_cfg_path(&dag, &dag_path).map_err(decode_err)?;
        let (abnormal, reentry) = match path.end {
            PathEnd::Exit { edge } => match cfg.edges().get(edge.index()) {
                Some(e) if e.kind == EdgeKind::Termination => (true, f.reentry_blocks.contains(&e.from.0)),
                _ => (false, false),
            },
            PathEnd::BackEdge { .. } | PathEnd::Cut { .. } => (false, false),
        };
        let ends_at_loop_entry = matches!(path.end, PathEnd::Cut { edge } if dag.enters_reset_loop(edge));
        let p = PathCount { number, count, fork_reentries, path, abnormal, reentry, ends_at_loop_entry };
        if (count < 0 && !reentry && p.departures() < 0) || fork_reentries < 0 {
            leading.push(InexactReason::NegativePath { path: number, count: p.departures() });
        }
        if fork_reentries != 0 {
            if let Some(b) = truncation_block(cfg, &dag, &dag_path) {
                reentries.push((b, i128::from(fork_reentries)));
            }
        }
        // At most one i64 per path number, and fewer than 2^64 numbers: the sum cannot overflow i128.
        total = total.saturating_add(i128::from(count));
        dag_paths.push((dag_path, count));
        paths.push(p);
    }

    let mut derived =
        signed_edge_counts_from_dag_paths(cfg, &dag, dag_paths.iter().map(|(p, c)| (p.as_slice(), i128::from(*c))))
            .map_err(decode_err)?;
    let per_block = add_fork_reentries(cfg, &mut derived.edges, &mut derived.blocks, reentries)
        .map_err(|e| AnalysisError::Reentry { module: name(), function: fname(), reason: e.to_string() })?;
    let violations = conservation_violations(cfg, &derived.edges, &per_block);
    let mut measured = vec![false; cfg.num_edges()];
    for &e in &pm.instrumented_edges {
        if let Some(m) = usize::try_from(e).ok().and_then(|i| measured.get_mut(i)) {
            *m = true;
        }
    }
    let counts = judge(module, f, derived.edges, &derived.blocks, &per_block, &violations, measured, leading);
    Ok(FunctionPaths { num_paths: pm.num_paths, paths, total, counts })
}

/// The function's net count per path number (nonzero only): its dense counters, or its hashed entries.
fn raw_path_counts(
    module: &ModuleProfile,
    func_index: usize,
    f: &FunctionMeta,
    pm: &PathMeta,
) -> Result<BTreeMap<u128, i64>, AnalysisError> {
    let name = || module.meta.module_name.clone();
    let mut raw: BTreeMap<u128, i64> = BTreeMap::new();
    let mine = module.sparse.iter().filter(|s| usize::try_from(s.function).is_ok_and(|i| i == func_index));
    match pm.storage {
        PathStorage::Dense => {
            if mine.clone().next().is_some() {
                return Err(AnalysisError::MixedPathStorage { module: name(), function: f.name.clone() });
            }
            let out_of_range = || AnalysisError::CounterOutOfRange { module: name(), function: f.name.clone() };
            let start = usize::try_from(f.counter_base).map_err(|_| out_of_range())?;
            let end = start.checked_add(f.num_counters as usize).ok_or_else(out_of_range)?;
            let counters = module.counters.get(start..end).ok_or_else(out_of_range)?;
            for (i, &c) in counters.iter().enumerate() {
                if c != 0 {
                    // Two's complement: a −1 taken after a call returned (profiles without
                    // `path_arrivals`) wraps the u64 counter; counters of arrival-counting profiles only grow and read the same.
                    raw.insert(i as u128, c as i64);
                }
            }
        }
        PathStorage::Hashed { .. } | PathStorage::Sparse { .. } => {
            for s in mine {
                let slot = raw.entry(s.path).or_insert(0);
                *slot = slot.wrapping_add(s.count as i64);
            }
            raw.retain(|_, c| *c != 0);
        }
    }
    Ok(raw)
}
