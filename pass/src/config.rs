//! Plugin options, read from the environment.
//!
//! clang parses `-mllvm` options before it loads `-fpass-plugin` plugins, so a plugin's `cl::opt`s are
//! unreachable from clang's command line; environment variables (set by `pathprof-clang`'s flags) are not.

use pathprof_core::ball_larus::ResetRule;
use pathprof_format::meta::Mode;

/// How spanning-tree edge weights are estimated. Weights decide only where counters go (cost), never what
/// the counts are (correctness).
#[derive(Clone, Debug, PartialEq)]
pub enum Weighting {
    /// Every edge weighs the same.
    Uniform,
    /// Ball & Larus's static loop heuristic (TOPLAS 1994 §5), flow-corrected.
    Bl94,
    /// LLVM's BlockFrequencyInfo × BranchProbabilityInfo.
    Llvm,
    /// Exact edge counts from an earlier pathprof profile of the same code.
    Profile(String),
}

impl Weighting {
    /// The spelling recorded in the metadata and accepted in `PATHPROF_WEIGHTS`.
    pub fn spelling(&self) -> String {
        match self {
            Weighting::Uniform => "uniform".into(),
            Weighting::Bl94 => "bl94".into(),
            Weighting::Llvm => "llvm".into(),
            Weighting::Profile(f) => format!("profile:{f}"),
        }
    }
}

/// Everything the pass can be told.
#[derive(Clone, Debug)]
pub struct Config {
    /// What to measure (`PATHPROF_MODE`).
    pub mode: Mode,
    /// Spanning-tree weights (`PATHPROF_WEIGHTS`).
    pub weighting: Weighting,
    /// Atomic counter updates (`PATHPROF_ATOMIC=1`).
    pub atomic: bool,
    /// Print per-module statistics to stderr (`PATHPROF_STATS=1`).
    pub stats: bool,
    /// Print each function's graph, weights and chords to stderr (`PATHPROF_DEBUG=dump`).
    pub dump: bool,
    /// Path mode: cut the Ball–Larus DAG so no function has more paths than this; context and piecewise modes:
    /// cut call sites until the module has at most this many paths (`PATHPROF_PATH_BUDGET`).
    pub path_budget: u128,
    /// Path mode: functions with at most this many paths get a dense counter array, others a run-time hash
    /// table of executed paths (`PATHPROF_PATH_ARRAY_MAX`).
    pub path_array_max: u128,
    /// Path mode: functions with more paths than `path_array_max` but at most this many get a counter array of
    /// their own that only executed paths' pages occupy (`PATHPROF_PATH_SPARSE_MAX`); larger ones a hash table.
    pub path_sparse_max: u128,
    /// Pairs in the direct-mapped cache in front of each path hash table: 0 (none) or a power of two
    /// (`PATHPROF_PATH_CACHE`); `None`: sized by [`Config::cache_pairs`]. Atomic builds' pairs are sticky (see
    /// `pathprof_format::layout::PathTable::cache`).
    pub path_cache: Option<u64>,
    /// Profile use: annotate branch weights from this profile instead of instrumenting (`PATHPROF_USE`).
    pub use_profile: Option<String>,
    /// Whole-program mode (`PATHPROF_LTO=1`): instrument at the full-LTO link (lld loads the plugin with
    /// `--load-pass-plugin`), not when compiling; interprocedural paths then cross translation units.
    pub lto: bool,
    /// The file the compile or link writes, as the command gave it (`PATHPROF_OUTPUT`, set by `pathprof-clang`
    /// from `-o`; relative to the working directory): part of the module's identity ([`crate::identity`]).
    pub output: Option<String>,
    /// Fork re-entry checks around calls that may fork (`PATHPROF_FORK_CHECKS`, default 1; see
    /// [`crate::fork_check`]). Without them a `fork()`ed child's in-flight activations make those functions'
    /// counts inexact (reported, never wrong), and calls cost nothing extra.
    pub fork_checks: bool,
    /// Counter promotion in loops nothing can observe from inside (`PATHPROF_PROMOTE`, default 1; edge and path
    /// mode; see [`crate::promote`], [`crate::path_mode::PathPlan::promoted`]). Off: every in-loop update goes
    /// to memory, as LLVM's instrumentation without promotion.
    pub promote: bool,
    /// Promotion again after the inliner put callees' counter updates into the caller's loops (`PATHPROF_PROMOTE`
    /// `1`, the default; `early` promotes at instrumentation only; see [`crate::promote::promote_after_inlining`]).
    pub promote_after_inlining: bool,
    /// Path, context and piecewise modes restart the paths at the entry of loops whose iterations then count at
    /// constant addresses (`PATHPROF_LOOP_RESETS`, default 1; `pathprof_core::ball_larus::resets` and `hoisting`;
    /// the interprocedural modes only loops of nests free of calls to the program's functions): their counts
    /// become plain register additions the optimiser can fold. `0`: Ball and Larus's (and Melski and Reps's)
    /// paths, which run from before a loop into its first iteration.
    pub loop_resets: bool,
    /// Context and piecewise modes: cut every call site of a leaf with a loop (`PATHPROF_IP_CUT_LEAVES`, default
    /// 0), so that the leaf is a root counted in storage of its own and its callers hand nothing over to it, at
    /// the price of the calling context of the leaf's paths. Measured, not the default (README, "Performance").
    pub ip_cut_leaves: bool,
    /// Context and piecewise modes: which functions add their edge values along a spanning tree's chords
    /// (`PATHPROF_IP_PLACEMENT`, see [`crate::interproc_place`]).
    pub ip_placement: IpPlacement,
    /// Mode `icache` (`PATHPROF_MODE=icache`): trace mode's instrumentation, applied at the `OptimizerLast`
    /// extension point instead of the pipeline start, so the traced blocks are those of the IR codegen gets in a
    /// plain build with the same flags (`pathprof icache` maps them onto that build's machine code).
    pub optimizer_last: bool,
    /// Trace mode's second method (`PATHPROF_TRACE_NAIVE=1`): every block entered writes one 64-bit item
    /// (function id, block) instead of bit tracing's decisions; the oracle tests and branch counts use.
    pub trace_naive: bool,
    /// Executable slicing (`PATHPROF_SLICE=FILE:LINE[:VAR]`): the pass slices the function(s) holding the
    /// criterion instead of instrumenting ([`crate::slice_mode`]).
    pub slice: Option<SliceCriterion>,
    /// Where the slice's source lines are written as JSON (`PATHPROF_SLICE_JSON`).
    pub slice_json: Option<String>,
    /// Testing aid (`PATHPROF_SLICE_OBSERVE=slice|whole`): pass every value computed at the criterion's line to
    /// `pathprof_slice_observe`, in the slice or in the unsliced program ([`crate::slice_observe`]).
    pub slice_observe: Option<ObserveIn>,
    /// A profile of an earlier run (`PATHPROF_SLICE_PROFILE`): slice only the code it shows executed, a dynamic
    /// slice for inputs that follow the profiled paths ([`crate::slice_profile`]).
    pub slice_profile: Option<String>,
    /// Differencing (`PATHPROF_STATEMENT_GRAPHS=OUT.json`): the pass writes every function's statement graph
    /// for `pathprof diff-program` instead of instrumenting ([`crate::statement_graphs`]).
    pub statement_graphs: Option<String>,
}

/// Where context and piecewise modes put each edge's `path += ρ` ([`crate::interproc_place`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpPlacement {
    /// On the chords of a spanning tree priced like edge mode's in dispatch functions (a join of 32+
    /// predecessors), on the edge itself elsewhere (`dispatch`, the default): keeps LLVM 19's
    /// CorrelatedValuePropagation from running for minutes on interpreters' dispatch loops.
    Dispatch,
    /// On the chords of a spanning tree in every function (`tree`).
    Tree,
    /// On the edge itself everywhere, as the numbering gives them (`values`).
    Values,
}

/// Which build [`crate::slice_observe`] observes the criterion in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObserveIn {
    /// The executable slice.
    Slice,
    /// The whole program (nothing is sliced).
    Whole,
}

/// A slicing criterion as the user wrote it: the instructions of one source line, optionally only those that
/// read or write one variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceCriterion {
    /// The source file, matched against the end of each instruction's debug-info file path.
    pub file: String,
    /// The source line.
    pub line: u32,
    /// Only the accesses to this local variable (by its debug-info name), plus the line's calls.
    pub var: Option<String>,
}

impl SliceCriterion {
    /// Parses `FILE:LINE` or `FILE:LINE:VAR` (FILE may itself hold colons; LINE is a positive integer).
    pub fn parse(spec: &str) -> Result<SliceCriterion, String> {
        let bad = || format!("invalid PATHPROF_SLICE='{spec}' (expected FILE:LINE or FILE:LINE:VAR)");
        let line_of = |s: &str| s.parse::<u32>().ok().filter(|&n| n > 0);
        let (head, last) = spec.rsplit_once(':').ok_or_else(bad)?;
        if let Some(line) = line_of(last) {
            return if head.is_empty() {
                Err(bad())
            } else {
                Ok(SliceCriterion { file: head.into(), line, var: None })
            };
        }
        let (file, line) = head.rsplit_once(':').ok_or_else(bad)?;
        let line = line_of(line).ok_or_else(bad)?;
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        if file.is_empty() || last.is_empty() || !last.chars().all(ident) {
            return Err(bad());
        }
        Ok(SliceCriterion { file: file.into(), line, var: Some(last.into()) })
    }

    /// `FILE:LINE`, as the JSON reports the criterion.
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// Default `PATHPROF_PATH_BUDGET`: path numbers and the path register fit in a signed 64-bit register.
pub const DEFAULT_PATH_BUDGET: u128 = 1 << 63;
/// Default `PATHPROF_PATH_ARRAY_MAX`: 4096 paths = 32 KiB of counters, beyond which a dense array costs more
/// memory and profile space than a table of the (few) executed paths.
pub const DEFAULT_PATH_ARRAY_MAX: u128 = 4096;
/// Default `PATHPROF_PATH_SPARSE_MAX`: 2^22 paths = 32 MiB of address space per function (committed only
/// where paths ran).
pub const DEFAULT_PATH_SPARSE_MAX: u128 = 1 << 22;
/// Smallest automatic path-table cache: 1024 pairs (16 KiB of `.bss`), what one function's hot paths need.
pub const MIN_AUTO_PATH_CACHE: u64 = 1024;
/// Largest automatic path-table cache: 16384 pairs (256 KiB of `.bss`, touched only where paths land), for
/// interprocedural tables of large modules.
pub const MAX_AUTO_PATH_CACHE: u64 = 16384;
/// Largest automatic cache of an atomic build's path table: 65536 pairs (1 MiB of `.bss`, touched only where
/// paths land). Its pairs are sticky — the first path to reach a pair keeps it — so a hot path that arrives
/// after its pair was taken pays a runtime call on every update for good, where an evicting cache would take
/// the pair back: SQLite's interprocedural tables with 16384 pairs spent 22% of the run's instructions in
/// `__pathprof_path_cache_claim` and `__pathprof_path_add` (piecewise-atomic), 5% with 65536.
pub const MAX_AUTO_STICKY_PATH_CACHE: u64 = 65536;
/// Address space a module's sparse regions may reserve in all, in counters (2^26 = 512 MiB); functions beyond
/// it use hash tables.
pub const SPARSE_TOTAL_MAX: u64 = 1 << 26;

fn number(name: &str, value: Option<String>, default: u128, min: u128, max: u128) -> Result<u128, String> {
    match value.as_deref() {
        None | Some("") => Ok(default),
        Some(v) => match v.parse::<u128>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(format!("invalid {name}='{v}' (expected an integer in {min}..={max})")),
        },
    }
}

fn flag(name: &str, value: Option<String>) -> Result<bool, String> {
    match value.as_deref() {
        None | Some("") | Some("0") | Some("false") | Some("no") | Some("off") => Ok(false),
        Some("1") | Some("true") | Some("yes") | Some("on") => Ok(true),
        Some(v) => Err(format!("invalid {name}='{v}' (expected 0 or 1)")),
    }
}

impl Config {
    /// The loops path mode's DAGs reset ([`Config::loop_resets`]; `ModuleMeta::path_loop_resets`): the hoisting
    /// rule, the widest.
    pub fn path_loop_resets(&self) -> ResetRule {
        if self.mode == Mode::Path && self.loop_resets {
            ResetRule::Hoisted
        } else {
            ResetRule::None
        }
    }

    /// Reads the configuration from a variable lookup (the environment in the plugin, a map in tests).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
        let mode = match get("PATHPROF_MODE").as_deref() {
            None | Some("") | Some("path") => Mode::Path,
            Some("edge") => Mode::Edge,
            Some("context") => Mode::Context,
            Some("piecewise") => Mode::Piecewise,
            Some("block") => Mode::Block,
            Some("trace") | Some("icache") => Mode::Trace,
            Some(v) => {
                return Err(format!(
                    "unknown PATHPROF_MODE='{v}' (expected edge, block, path, context, piecewise, trace or icache)"
                ))
            }
        };
        let optimizer_last = get("PATHPROF_MODE").as_deref() == Some("icache");
        let weighting = match get("PATHPROF_WEIGHTS").as_deref() {
            None | Some("") | Some("llvm") => Weighting::Llvm,
            Some("uniform") => Weighting::Uniform,
            Some("bl94") => Weighting::Bl94,
            Some(v) if v.starts_with("profile:") && v.len() > "profile:".len() => {
                Weighting::Profile(v["profile:".len()..].to_string())
            }
            Some(v) => {
                return Err(format!("unknown PATHPROF_WEIGHTS='{v}' (expected llvm, uniform, bl94 or profile:FILE)"))
            }
        };
        let atomic = flag("PATHPROF_ATOMIC", get("PATHPROF_ATOMIC"))?;
        let stats = flag("PATHPROF_STATS", get("PATHPROF_STATS"))?;
        let dump = match get("PATHPROF_DEBUG").as_deref() {
            None | Some("") => false,
            Some("dump") => true,
            Some(v) => return Err(format!("unknown PATHPROF_DEBUG='{v}' (expected dump)")),
        };
        let path_budget =
            number("PATHPROF_PATH_BUDGET", get("PATHPROF_PATH_BUDGET"), DEFAULT_PATH_BUDGET, 2, DEFAULT_PATH_BUDGET)?;
        let path_array_max =
            number("PATHPROF_PATH_ARRAY_MAX", get("PATHPROF_PATH_ARRAY_MAX"), DEFAULT_PATH_ARRAY_MAX, 1, 1 << 24)?;
        let path_sparse_max =
            number("PATHPROF_PATH_SPARSE_MAX", get("PATHPROF_PATH_SPARSE_MAX"), DEFAULT_PATH_SPARSE_MAX, 1, 1 << 26)?;
        let path_cache = match get("PATHPROF_PATH_CACHE").filter(|v| !v.is_empty()) {
            None => None,
            Some(v) => match number("PATHPROF_PATH_CACHE", Some(v.clone()), 0, 0, 1 << 20)? {
                n if n == 0 || n.is_power_of_two() => Some(n as u64),
                _ => {
                    return Err(format!("invalid PATHPROF_PATH_CACHE='{v}' (expected 0 or a power of two up to 2^20)"))
                }
            },
        };
        let use_profile = get("PATHPROF_USE").filter(|v| !v.is_empty());
        let lto = flag("PATHPROF_LTO", get("PATHPROF_LTO"))?;
        let output = get("PATHPROF_OUTPUT").filter(|v| !v.is_empty());
        let fork_checks = match get("PATHPROF_FORK_CHECKS").filter(|v| !v.is_empty()) {
            None => true,
            v => flag("PATHPROF_FORK_CHECKS", v)?,
        };
        let (promote, promote_after_inlining) = match get("PATHPROF_PROMOTE").filter(|v| !v.is_empty()) {
            None => (true, true),
            Some(v) if v == "early" => (true, false),
            v => {
                let on = flag("PATHPROF_PROMOTE", v).map_err(|e| e.replace("0 or 1", "0, 1 or early"))?;
                (on, on)
            }
        };
        let loop_resets = match get("PATHPROF_LOOP_RESETS").filter(|v| !v.is_empty()) {
            None => true,
            v => flag("PATHPROF_LOOP_RESETS", v)?,
        };
        let ip_cut_leaves = match get("PATHPROF_IP_CUT_LEAVES").filter(|v| !v.is_empty()) {
            None => false,
            v => flag("PATHPROF_IP_CUT_LEAVES", v)?,
        };
        let ip_placement = match get("PATHPROF_IP_PLACEMENT").as_deref() {
            None | Some("") | Some("dispatch") => IpPlacement::Dispatch,
            Some("tree") => IpPlacement::Tree,
            Some("values") => IpPlacement::Values,
            Some(v) => return Err(format!("unknown PATHPROF_IP_PLACEMENT='{v}' (expected dispatch, tree or values)")),
        };
        if optimizer_last && (lto || use_profile.is_some()) {
            return Err("PATHPROF_MODE=icache works per compile: not with PATHPROF_LTO or PATHPROF_USE".into());
        }
        let trace_naive = flag("PATHPROF_TRACE_NAIVE", get("PATHPROF_TRACE_NAIVE"))?;
        let slice = get("PATHPROF_SLICE").filter(|v| !v.is_empty()).map(|v| SliceCriterion::parse(&v)).transpose()?;
        let slice_json = get("PATHPROF_SLICE_JSON").filter(|v| !v.is_empty());
        if slice_json.is_some() && slice.is_none() {
            return Err("PATHPROF_SLICE_JSON needs PATHPROF_SLICE (the criterion FILE:LINE[:VAR])".into());
        }
        if slice.is_some() && (lto || optimizer_last || use_profile.is_some()) {
            return Err("PATHPROF_SLICE slices per compile: not with PATHPROF_LTO, PATHPROF_USE or mode icache".into());
        }
        let slice_observe = match get("PATHPROF_SLICE_OBSERVE").as_deref() {
            None | Some("") => None,
            Some("slice") => Some(ObserveIn::Slice),
            Some("whole") => Some(ObserveIn::Whole),
            Some(v) => return Err(format!("unknown PATHPROF_SLICE_OBSERVE='{v}' (expected slice or whole)")),
        };
        let slice_profile = get("PATHPROF_SLICE_PROFILE").filter(|v| !v.is_empty());
        if (slice_observe.is_some() || slice_profile.is_some()) && slice.is_none() {
            return Err("PATHPROF_SLICE_OBSERVE and PATHPROF_SLICE_PROFILE need PATHPROF_SLICE (the criterion)".into());
        }
        let statement_graphs = get("PATHPROF_STATEMENT_GRAPHS").filter(|v| !v.is_empty());
        if statement_graphs.is_some() && (lto || optimizer_last || use_profile.is_some() || slice.is_some()) {
            return Err("PATHPROF_STATEMENT_GRAPHS works per compile: not with PATHPROF_LTO, PATHPROF_USE, \
                        PATHPROF_SLICE or mode icache"
                .into());
        }
        Ok(Config {
            mode,
            weighting,
            atomic,
            stats,
            dump,
            path_budget,
            path_array_max,
            path_sparse_max,
            path_cache,
            use_profile,
            lto,
            output,
            fork_checks,
            promote,
            promote_after_inlining,
            loop_resets,
            ip_cut_leaves,
            ip_placement,
            optimizer_last,
            trace_naive,
            slice,
            slice_json,
            slice_observe,
            slice_profile,
            statement_graphs,
        })
    }

    /// Pairs in the cache of a path table that functions with `blocks` basic blocks in all count into: as
    /// configured, or by default two pairs per block, within [`MIN_AUTO_PATH_CACHE`]..=[`MAX_AUTO_PATH_CACHE`]
    /// (atomic builds, whose pairs never change hands: four per block, up to [`MAX_AUTO_STICKY_PATH_CACHE`]).
    /// Blocks, not functions: besides the paths that end, the cache holds the truncated paths counted on arrival
    /// at every block with a call that may not return, and a large function has many (Lua's `lvm.c`, 1352
    /// blocks, in piecewise mode: cache misses 11% of the instructions with 1024 pairs, 2% with 4096; SQLite in
    /// context mode: 7% of the run time with 1024 pairs, 2% with 4096).
    pub fn cache_pairs(&self, blocks: usize) -> u64 {
        let (per_block, max) = if self.atomic { (4, MAX_AUTO_STICKY_PATH_CACHE) } else { (2, MAX_AUTO_PATH_CACHE) };
        self.path_cache
            .unwrap_or_else(|| (per_block * blocks as u64).next_power_of_two().clamp(MIN_AUTO_PATH_CACHE, max))
    }

    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Config, String> {
        Config::from_lookup(|k| std::env::var(k).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config, String> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn defaults_are_path_llvm_nonatomic() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c.mode, Mode::Path);
        assert_eq!(c.path_budget, 1 << 63);
        assert_eq!(c.weighting, Weighting::Llvm);
        assert!(!c.atomic && !c.stats && !c.dump);
    }

    #[test]
    fn parses_every_option() {
        assert!(cfg(&[]).unwrap().fork_checks);
        assert!(!cfg(&[("PATHPROF_FORK_CHECKS", "0")]).unwrap().fork_checks);
        assert!(cfg(&[("PATHPROF_FORK_CHECKS", "2")]).is_err());
        assert!(cfg(&[]).unwrap().promote);
        assert!(!cfg(&[("PATHPROF_PROMOTE", "0")]).unwrap().promote);
        assert!(!cfg(&[("PATHPROF_PROMOTE", "0")]).unwrap().promote_after_inlining);
        assert!(cfg(&[]).unwrap().promote_after_inlining);
        let early = cfg(&[("PATHPROF_PROMOTE", "early")]).unwrap();
        assert!(early.promote && !early.promote_after_inlining);
        assert_eq!(cfg(&[]).unwrap().ip_placement, IpPlacement::Dispatch);
        assert_eq!(cfg(&[("PATHPROF_IP_PLACEMENT", "values")]).unwrap().ip_placement, IpPlacement::Values);
        assert_eq!(cfg(&[("PATHPROF_IP_PLACEMENT", "dispatch")]).unwrap().ip_placement, IpPlacement::Dispatch);
        assert_eq!(cfg(&[("PATHPROF_IP_PLACEMENT", "tree")]).unwrap().ip_placement, IpPlacement::Tree);
        assert!(cfg(&[("PATHPROF_IP_PLACEMENT", "chords")]).is_err());
        assert!(cfg(&[("PATHPROF_PROMOTE", "2")]).is_err());
        assert_eq!(cfg(&[]).unwrap().path_loop_resets(), ResetRule::Hoisted);
        assert_eq!(cfg(&[("PATHPROF_LOOP_RESETS", "0")]).unwrap().path_loop_resets(), ResetRule::None);
        assert_eq!(cfg(&[("PATHPROF_MODE", "context")]).unwrap().path_loop_resets(), ResetRule::None);
        assert!(!cfg(&[]).unwrap().ip_cut_leaves);
        assert!(cfg(&[("PATHPROF_IP_CUT_LEAVES", "1")]).unwrap().ip_cut_leaves);
        assert!(cfg(&[("PATHPROF_IP_CUT_LEAVES", "2")]).is_err());
        assert!(cfg(&[("PATHPROF_LOOP_RESETS", "2")]).is_err());
        let c = cfg(&[("PATHPROF_WEIGHTS", "profile:/tmp/x.pathprof"), ("PATHPROF_ATOMIC", "1")]).unwrap();
        assert_eq!(c.weighting, Weighting::Profile("/tmp/x.pathprof".into()));
        assert!(c.atomic);
        assert_eq!(cfg(&[("PATHPROF_WEIGHTS", "bl94")]).unwrap().weighting, Weighting::Bl94);
        let c = cfg(&[("PATHPROF_MODE", "piecewise"), ("PATHPROF_LTO", "1"), ("PATHPROF_PATH_SPARSE_MAX", "65536")])
            .unwrap();
        assert_eq!((c.mode, c.lto, c.path_sparse_max), (Mode::Piecewise, true, 65536));
        assert_eq!(cfg(&[("PATHPROF_MODE", "context")]).unwrap().mode, Mode::Context);
        assert_eq!(cfg(&[("PATHPROF_MODE", "block")]).unwrap().mode, Mode::Block);
        assert_eq!(cfg(&[("PATHPROF_MODE", "trace")]).unwrap().mode, Mode::Trace);
        assert!(!cfg(&[("PATHPROF_MODE", "trace")]).unwrap().optimizer_last);
        let icache = cfg(&[("PATHPROF_MODE", "icache")]).unwrap();
        assert!(icache.mode == Mode::Trace && icache.optimizer_last);
        assert!(cfg(&[("PATHPROF_MODE", "icache"), ("PATHPROF_LTO", "1")]).is_err());
        assert_eq!(cfg(&[]).unwrap().path_sparse_max, DEFAULT_PATH_SPARSE_MAX);
        let auto = cfg(&[]).unwrap();
        assert_eq!((auto.cache_pairs(1), auto.cache_pairs(1352), auto.cache_pairs(100_000)), (1024, 4096, 16384));
        assert_eq!(cfg(&[("PATHPROF_PATH_CACHE", "0")]).unwrap().cache_pairs(1), 0);
        assert_eq!(cfg(&[("PATHPROF_PATH_CACHE", "64")]).unwrap().cache_pairs(5000), 64);
        // Atomic builds have caches too (sticky pairs), sized alike.
        assert_eq!(cfg(&[("PATHPROF_PATH_CACHE", "64"), ("PATHPROF_ATOMIC", "1")]).unwrap().cache_pairs(1), 64);
        let atomic = cfg(&[("PATHPROF_ATOMIC", "1")]).unwrap();
        assert_eq!((atomic.cache_pairs(1), atomic.cache_pairs(1352), atomic.cache_pairs(100_000)), (1024, 8192, 65536));
    }

    #[test]
    fn parses_slice_criteria() {
        let c =
            |file: &str, line, var: Option<&str>| SliceCriterion { file: file.into(), line, var: var.map(Into::into) };
        assert_eq!(SliceCriterion::parse("a.c:12"), Ok(c("a.c", 12, None)));
        assert_eq!(SliceCriterion::parse("dir/a.c:7:sum_2"), Ok(c("dir/a.c", 7, Some("sum_2"))));
        assert_eq!(SliceCriterion::parse("C:/x.c:3"), Ok(c("C:/x.c", 3, None)));
        for bad in ["a.c", "a.c:", ":3", "a.c:0", "a.c:x", "a.c:3:", "a.c:3:a-b", "a.c:-1:x", ":3:x"] {
            let e = SliceCriterion::parse(bad).unwrap_err();
            assert!(e.contains("PATHPROF_SLICE") && !e.contains('\n'), "{bad}: {e}");
        }
        assert!(cfg(&[("PATHPROF_SLICE", "a.c:3"), ("PATHPROF_LTO", "1")]).is_err());
        assert!(cfg(&[("PATHPROF_SLICE_JSON", "o.json")]).is_err());
        let s = cfg(&[("PATHPROF_SLICE", "a.c:3"), ("PATHPROF_SLICE_JSON", "o.json")]).unwrap();
        assert_eq!((s.slice, s.slice_json.as_deref()), (Some(c("a.c", 3, None)), Some("o.json")));
        assert!(cfg(&[("PATHPROF_SLICE_OBSERVE", "slice")]).is_err());
        assert!(cfg(&[("PATHPROF_SLICE_PROFILE", "p.pathprof")]).is_err());
        assert!(cfg(&[("PATHPROF_SLICE", "a.c:3"), ("PATHPROF_SLICE_OBSERVE", "all")]).is_err());
        let s =
            cfg(&[("PATHPROF_SLICE", "a.c:3"), ("PATHPROF_SLICE_OBSERVE", "whole"), ("PATHPROF_SLICE_PROFILE", "p")])
                .unwrap();
        assert_eq!((s.slice_observe, s.slice_profile.as_deref()), (Some(ObserveIn::Whole), Some("p")));
    }

    #[test]
    fn rejects_unknown_values_with_one_line() {
        for (k, v) in [
            ("PATHPROF_MODE", "paths"),
            ("PATHPROF_WEIGHTS", "profile:"),
            ("PATHPROF_ATOMIC", "2"),
            ("PATHPROF_PATH_BUDGET", "1"),
            ("PATHPROF_PATH_ARRAY_MAX", "x"),
            ("PATHPROF_PATH_SPARSE_MAX", "0"),
            ("PATHPROF_LTO", "yes please"),
            ("PATHPROF_PATH_CACHE", "100"),
            ("PATHPROF_PATH_CACHE", "4194304"),
        ] {
            let e = cfg(&[(k, v)]).unwrap_err();
            assert!(e.contains(k) && !e.contains('\n'), "{e}");
        }
    }
}
