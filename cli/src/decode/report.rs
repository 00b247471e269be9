//! The report model of `pathprof decode`, rendered as JSON (serde) or text.
//!
//! It borrows its names and source lines from the profile and its paths from the decoded results, and a path's
//! steps are produced one by one while they are written ([`Steps`]): the JSON report of a large profile lists
//! millions of steps (49,341 paths with 8.2 M steps for xz's path-mode test profile), and building them as
//! owned values first cost more time and memory (1.2 GB there) than writing them.

use crate::not_profiled::NotProfiled;
use pathprof_analysis::{ModulePaths, PathDecoder};
use pathprof_core::interproc::{InterprocPath, SiteRole, Step as InterprocStep, Via};
use pathprof_core::BlockId;
use pathprof_format::meta::{FunctionMeta, ModuleMeta};
use serde::{Serialize, Serializer};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// The whole output: `{"mode": "path", "functions": [...], "paths": [...], "not_profiled": [...],
/// "written_apart": [...]}`.
#[derive(Serialize)]
pub(crate) struct Report<'a> {
    pub mode: &'static str,
    /// One summary per decoded function (executed or not), in profile order.
    pub functions: Vec<FunctionReport<'a>>,
    /// The listed paths of all functions: by function order, then hottest first (ties by path number).
    pub paths: Vec<PathReport<'a>>,
    /// Functions of the decoded modules that the pass left uninstrumented: none of their paths is counted.
    pub not_profiled: Vec<NotProfiled<'a>>,
    /// Files next to the profile holding runs it does not (`files::written_apart`).
    pub written_apart: Vec<String>,
}

#[derive(Serialize)]
pub(crate) struct FunctionReport<'a> {
    /// Linkage name.
    pub name: &'a str,
    /// Source-level name (empty without debug info).
    pub display_name: &'a str,
    pub module: &'a str,
    pub file: &'a str,
    pub start_line: u32,
    /// NumPaths(ENTRY): path numbers are `0..num_paths`.
    pub num_paths: PathId,
    /// Paths with a nonzero net count.
    pub executed_paths: usize,
    /// Paths listed (after `--top`).
    pub listed_paths: usize,
    /// The sum of all path counts.
    pub total_count: i128,
    /// Invocations derived from the paths.
    pub entry_count: Option<u64>,
    pub exact: bool,
    pub inexact_reasons: Vec<String>,
}

/// A path number: a JSON number when it fits in a `u64`, a decimal string otherwise.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum PathId {
    Number(u64),
    Text(String),
}

impl PathId {
    pub fn new(n: u128) -> PathId {
        u64::try_from(n).map_or_else(|_| PathId::Text(n.to_string()), PathId::Number)
    }
}

impl std::fmt::Display for PathId {
    /// The decimal number, as in the JSON output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathId::Number(n) => write!(f, "{n}"),
            PathId::Text(s) => f.write_str(s),
        }
    }
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// `count` as a percentage of `total` (0 when the total is not positive).
pub(crate) fn percent_of(count: i64, total: i128) -> f64 {
    if total > 0 {
        count as f64 * 100.0 / total as f64
    } else {
        0.0
    }
}

#[derive(Serialize)]
pub(crate) struct PathReport<'a> {
    /// The Ball–Larus path number.
    pub id: PathId,
    /// 1-based rank within its function, hottest first.
    pub rank: usize,
    /// Net count (negative only for a re-entry correction or an inconsistent profile).
    pub count: i64,
    /// `count` as a percentage of the function's total path count (0 if the total is not positive).
    pub percent: f64,
    /// Linkage name of the function.
    pub function: &'a str,
    pub display_name: &'a str,
    pub module: &'a str,
    pub file: &'a str,
    /// `entry`, `loop_header` (after a back edge, or at a loop reset also after the loop's entry) or
    /// `after_cut`.
    pub start: &'static str,
    /// `exit` (a return), `back_edge`, `cut` (the path budget's), `loop_entry` (the edge into a reset loop,
    /// whose paths start at its header) or `abnormal` (a Termination edge: exit, longjmp, exception).
    pub end: &'static str,
    /// The back or cut edge taken just before the path (for `loop_header` and `after_cut`); at a loop reset
    /// (`pathprof_core::ball_larus::resets`) the header's first back edge, whichever way the loop was entered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_edge: Option<EdgeRef>,
    /// The back, cut or loop-entry edge the path ends by taking (for `back_edge`, `cut` and `loop_entry`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_edge: Option<EdgeRef>,
    /// A negative count of a setjmp block's termination path (re-entries by longjmp) or of a path cut short at
    /// a call that fork()ed children resumed: a correction, not executions.
    pub reentry_correction: bool,
    /// How often fork()ed children resumed the path's last block after its call, with this path's prefix (which
    /// ran in the parent); `count + fork_reentries` is how often the block was really left abnormally. 0 (and
    /// absent) for other paths.
    #[serde(skip_serializing_if = "is_zero")]
    pub fork_reentries: i64,
    /// Steps of calling contexts before the function's own blocks (interprocedural modes; always 0 here).
    pub context_steps: u32,
    /// The blocks of the path, in order.
    pub steps: Steps<'a>,
}

#[derive(Serialize, Clone, Copy)]
pub(crate) struct EdgeRef {
    pub from: u32,
    pub to: u32,
}

/// One block of a path, as written.
#[derive(Serialize)]
pub(crate) struct Step<'a> {
    /// Linkage name of the function the block belongs to.
    pub function: &'a str,
    /// Block index in the function (as in `pathprof show --json`).
    pub block: u32,
    /// The block's distinct source lines (`BlockMeta::lines`).
    pub lines: &'a [u32],
    /// Interprocedural modes: how the block was reached (`root_entry`, `edge`, `call`, `return`, `summary`,
    /// `summary_cut`, `loop_restart`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<&'static str>,
}

/// The steps of a path, made into [`Step`]s only when they are read or written.
#[derive(Clone, Copy)]
pub(crate) enum Steps<'a> {
    /// A path-mode path: blocks of one function.
    Blocks { function: &'a FunctionMeta, blocks: &'a [BlockId] },
    /// A context or piecewise path: block visits across the module's functions, decoded when read
    /// ([`InterprocSteps`]).
    Interproc { meta: &'a ModuleMeta, mp: &'a ModulePaths, number: u128, decoded: &'a InterprocSteps<'a> },
}

impl<'a> Steps<'a> {
    /// An interprocedural path's decoded steps (none if it does not decode, which a counted path always did).
    fn interproc(&self) -> Option<Rc<InterprocPath>> {
        match *self {
            Steps::Blocks { .. } => None,
            Steps::Interproc { mp, number, decoded, .. } => decoded.path(mp, number),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Steps::Blocks { blocks, .. } => blocks.len(),
            Steps::Interproc { .. } => self.interproc().map_or(0, |p| p.steps.len()),
        }
    }

    /// Interprocedural paths: how many steps are the context-prefix; 0 otherwise.
    pub fn context_steps(&self) -> u32 {
        self.interproc().map_or(0, |p| u32::try_from(p.context_prefix_len()).unwrap_or(u32::MAX))
    }

    /// Step `i`, if the path has that many.
    pub fn get(&self, i: usize) -> Option<Step<'a>> {
        match *self {
            Steps::Blocks { function, blocks } => blocks.get(i).map(|&b| Step {
                function: &function.name,
                block: b.0,
                lines: lines_of(Some(function), b),
                via: None,
            }),
            Steps::Interproc { meta, mp, .. } => {
                self.interproc().and_then(|p| p.steps.get(i).map(|s| interproc_step(meta, mp, s)))
            }
        }
    }

    pub fn last(&self) -> Option<Step<'a>> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    pub fn iter(&self) -> impl Iterator<Item = Step<'a>> + '_ {
        // An interprocedural path is looked up once, not once per step.
        let path = self.interproc();
        let n = path.as_ref().map_or_else(|| self.len(), |p| p.steps.len());
        (0..n).filter_map(move |i| match (self, &path) {
            (Steps::Interproc { meta, mp, .. }, Some(p)) => p.steps.get(i).map(|s| interproc_step(meta, mp, s)),
            _ => self.get(i),
        })
    }
}

/// An interprocedural step as written.
fn interproc_step<'a>(meta: &'a ModuleMeta, mp: &'a ModulePaths, s: &InterprocStep) -> Step<'a> {
    let f = meta.functions.get(s.proc.index());
    Step {
        function: f.map_or("", |f| &f.name),
        block: s.block.0,
        lines: lines_of(f, s.block),
        via: Some(via_name(s.via, &mp.site_roles)),
    }
}

impl Serialize for Steps<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// The interprocedural paths a report lists, decoded when they are written rather than kept: a module can have
/// millions of counted paths of hundreds of steps each. Each module's numbering is solved once, on the first
/// path of it that is read; the last few decoded paths are kept, as a path is read step by step.
#[derive(Default)]
pub(crate) struct InterprocSteps<'a> {
    decoders: RefCell<Vec<(*const ModulePaths, Option<PathDecoder<'a>>)>>,
    recent: RefCell<VecDeque<(*const ModulePaths, u128, Rc<InterprocPath>)>>,
}

/// How many decoded paths [`InterprocSteps`] keeps.
const RECENT_PATHS: usize = 4;

impl<'a> InterprocSteps<'a> {
    /// Path `number` of `mp`, decoded.
    pub fn path(&self, mp: &'a ModulePaths, number: u128) -> Option<Rc<InterprocPath>> {
        let key = mp as *const ModulePaths;
        if let Some((_, _, p)) = self.recent.borrow().iter().find(|(m, n, _)| *m == key && *n == number) {
            return Some(p.clone());
        }
        let mut decoders = self.decoders.borrow_mut();
        let at = match decoders.iter().position(|(m, _)| *m == key) {
            Some(i) => i,
            None => {
                decoders.push((key, mp.decoder().ok()));
                decoders.len() - 1
            }
        };
        let path = Rc::new(decoders[at].1.as_ref()?.decode(number).ok()?);
        let mut recent = self.recent.borrow_mut();
        if recent.len() == RECENT_PATHS {
            recent.pop_front();
        }
        recent.push_back((key, number, path.clone()));
        Some(path)
    }
}

/// The source lines of block `b` of `f` (none if either is unknown).
fn lines_of(f: Option<&FunctionMeta>, b: BlockId) -> &[u32] {
    f.and_then(|f| f.blocks.get(b.index())).map_or(&[], |m| m.lines.as_slice())
}

/// How an interprocedural step was reached, as written in `via`.
fn via_name(via: Via, site_roles: &[SiteRole]) -> &'static str {
    match via {
        Via::RootEntry => "root_entry",
        Via::MidEntry { .. } | Via::LoopRestart { .. } => "loop_restart",
        Via::Edge(_) => "edge",
        Via::Call { .. } => "call",
        Via::Return { .. } => "return",
        Via::Summary { site } => match site_roles.get(site.index()) {
            Some(SiteRole::Cut) => "summary_cut",
            _ => "summary",
        },
    }
}
