//! `pathprof decode` for context and piecewise profiles: module-wide Melski–Reps paths that cross functions.
//!
//! Each counted path number is decoded by `pathprof_analysis::module_path_counts` (Algorithm 5.2 and its
//! piecewise extension over the program rebuilt from the metadata). A context path is printed as its
//! *context-prefix* (the calling context that led to the loop header where it starts; it ran in earlier paths)
//! and its *active suffix* (what this count measures). Steps carry how they were reached: `call` (entering a
//! callee), `return` (back in the caller), `summary` (a recursive call whose callee's activation is profiled as
//! paths of its own: "recursive call elided"), `summary_cut` (the same for a call the path budget cut), `loop_restart` (the path starts at a loop header
//! after a back edge). The JSON shape is path mode's, with `mode` = `context`/`piecewise`, `steps` across
//! functions and `context_steps` = the length of the context-prefix.

use super::{EdgeRef, FunctionReport, PathId, PathReport, Report, Step};
use anyhow::{Context, Result};
use pathprof_analysis::{module_path_counts, InterprocCount, ModulePaths};
use pathprof_core::interproc::{InterprocPath, PathEnd, ProcId, SiteRole, Via};
use pathprof_format::meta::ModuleMeta;
use pathprof_format::profile::ModuleProfile;
use std::path::Path;

/// Adds every (selected) interprocedural module of the profile to `report`.
pub fn add_modules(
    report: &mut Report,
    modules: &[&ModuleProfile],
    function: Option<&str>,
    top: Option<usize>,
    file: &Path,
) -> Result<()> {
    for module in modules {
        let mp = module_path_counts(module).with_context(|| format!("decoding {}", file.display()))?;
        add_module(report, module, &mp, function, top);
    }
    Ok(())
}

fn selected(meta: &ModuleMeta, p: ProcId, function: Option<&str>) -> bool {
    match meta.functions.get(p.index()) {
        Some(f) => crate::output::selects(function, f),
        None => function.is_none(),
    }
}

/// The function an interprocedural path "belongs to": where its active suffix starts.
fn home(p: &InterprocPath) -> Option<ProcId> {
    p.active_suffix().first().map(|s| s.proc)
}

fn add_module(
    report: &mut Report,
    module: &ModuleProfile,
    mp: &ModulePaths,
    function: Option<&str>,
    top: Option<usize>,
) {
    let meta = &module.meta;
    for (i, f) in meta.functions.iter().enumerate() {
        if !selected(meta, ProcId::from_index(i), function) {
            continue;
        }
        let mine: Vec<&InterprocCount> =
            mp.paths.iter().filter(|p| home(&p.path) == Some(ProcId::from_index(i))).collect();
        let c = &mp.functions[i];
        report.functions.push(FunctionReport {
            name: f.name.clone(),
            display_name: f.display_name.clone(),
            module: meta.module_name.clone(),
            file: f.file.clone(),
            start_line: f.start_line,
            num_paths: PathId::new(mp.num_paths),
            executed_paths: mine.len(),
            listed_paths: 0,
            total_count: mine.iter().map(|p| i128::from(p.count)).sum(),
            entry_count: c.entry,
            exact: c.exact,
            inexact_reasons: c.inexact_reasons.iter().map(ToString::to_string).collect(),
        });
    }
    // Paths: the module's hottest first; with --function, those whose active suffix visits it.
    let listed: Vec<&InterprocCount> = mp
        .hottest_first()
        .into_iter()
        .filter(|p| function.is_none() || p.path.active_suffix().iter().any(|s| selected(meta, s.proc, function)))
        .collect();
    let total: i128 = mp.paths.iter().map(|p| i128::from(p.count)).sum();
    let n = top.map_or(listed.len(), |t| t.min(listed.len()));
    for (rank, p) in listed.into_iter().take(n).enumerate() {
        report.paths.push(path_report(module, mp, p, rank + 1, total));
    }
}

fn path_report(module: &ModuleProfile, mp: &ModulePaths, p: &InterprocCount, rank: usize, total: i128) -> PathReport {
    let meta = &module.meta;
    let fmeta = |q: ProcId| meta.functions.get(q.index());
    let edge = |q: ProcId, e: pathprof_core::EdgeId| {
        fmeta(q).and_then(|f| f.cfg.edges().get(e.index())).map(|x| EdgeRef { from: x.from.0, to: x.to.0 })
    };
    let prefix = p.path.context_prefix_len();
    let first = p.path.steps.get(prefix);
    let (start, start_edge) = match first.map(|s| (s.proc, s.via)) {
        Some((q, Via::LoopRestart { back } | Via::MidEntry { back })) => ("loop_header", edge(q, back)),
        _ => ("entry", None),
    };
    let (end, end_edge) = match p.path.end {
        PathEnd::RootReturn { .. } => ("exit", None),
        PathEnd::BackEdge { proc, back } => ("back_edge", edge(proc, back)),
        PathEnd::Termination { .. } => ("abnormal", None),
    };
    let home = first.map_or(ProcId(0), |s| s.proc);
    let hf = fmeta(home);
    let percent = super::percent_of(p.count, total);
    PathReport {
        id: PathId::new(p.number),
        rank,
        count: p.count,
        percent,
        function: hf.map(|f| f.name.clone()).unwrap_or_default(),
        display_name: hf.map(|f| f.display_name.clone()).unwrap_or_default(),
        module: meta.module_name.clone(),
        file: hf.map(|f| f.file.clone()).unwrap_or_default(),
        start,
        end,
        start_edge,
        end_edge,
        reentry_correction: p.count < 0 && end == "abnormal",
        fork_reentries: p.fork_reentries,
        context_steps: prefix as u32,
        steps: p
            .path
            .steps
            .iter()
            .map(|s| {
                let f = fmeta(s.proc);
                let via = match s.via {
                    Via::RootEntry => "root_entry",
                    Via::MidEntry { .. } => "loop_restart",
                    Via::Edge(_) => "edge",
                    Via::LoopRestart { .. } => "loop_restart",
                    Via::Call { .. } => "call",
                    Via::Return { .. } => "return",
                    Via::Summary { site } => match mp.site_roles.get(site.index()) {
                        Some(SiteRole::Cut) => "summary_cut",
                        _ => "summary",
                    },
                };
                Step {
                    function: f.map(|f| f.name.clone()).unwrap_or_default(),
                    block: s.block.0,
                    lines: f.and_then(|f| f.blocks.get(s.block.index())).map(|b| b.lines.clone()).unwrap_or_default(),
                    via: Some(via),
                }
            })
            .collect(),
    }
}

/// Text output: per module, the hottest paths with their context-prefix and active suffix, one block per line
/// with its function and source lines, and the calls, returns and elided calls between them.
pub fn write_text(out: &mut impl std::io::Write, report: &Report) -> std::io::Result<()> {
    let mut module = "";
    for p in &report.paths {
        if p.module != module {
            module = &p.module;
            let executed: usize =
                report.functions.iter().filter(|f| f.module == module).map(|f| f.executed_paths).sum();
            let num_paths =
                report.functions.iter().find(|f| f.module == module).map_or(String::new(), |f| f.num_paths.to_string());
            writeln!(out, "module {module}  ({} mode): executed paths: {executed} of {num_paths}", report.mode)?;
            for f in report.functions.iter().filter(|f| f.module == module && !f.exact) {
                writeln!(out, "  INEXACT {}: {}", f.name, f.inexact_reasons.join("; "))?;
            }
        }
        let id = p.id.to_string();
        let percent = if p.count > 0 { format!("{:6.2}%", p.percent) } else { "      -".to_string() };
        let mut marks = Vec::new();
        if p.start == "loop_header" {
            marks.push("starts at loop header".to_string());
        }
        match p.end {
            "back_edge" => marks.push("ends at back edge".into()),
            "abnormal" if p.fork_reentries != 0 => {
                let last = p.steps.last().map_or(String::new(), |s| format!("{}:bb{}", s.function, s.block));
                marks.push(super::fork_mark(p, &last));
            }
            "abnormal" => marks.push("left abnormally: exit/longjmp/exception".into()),
            _ => {}
        }
        write!(out, "  #{:<3} count {:<10} {percent}  path {id}", p.rank, p.count)?;
        if !marks.is_empty() {
            write!(out, "  ({})", marks.join("; "))?;
        }
        writeln!(out)?;
        let file_of = |name: &str| {
            report.functions.iter().find(|f| f.module == p.module && f.name == name).map_or("", |f| f.file.as_str())
        };
        let shown = |name: &str| {
            report.functions.iter().find(|f| f.module == p.module && f.name == name).map_or(name.to_string(), |f| {
                if f.display_name.is_empty() {
                    name.to_string()
                } else {
                    f.display_name.clone()
                }
            })
        };
        let context = p.context_steps as usize;
        for (i, s) in p.steps.iter().enumerate() {
            if i == 0 && context > 0 {
                writeln!(out, "      context-prefix (ran in earlier paths):")?;
            }
            if i == context && context > 0 {
                writeln!(out, "      active suffix:")?;
            }
            match s.via {
                Some("call") => writeln!(out, "        -> call {}", shown(&s.function))?,
                Some("return") => writeln!(out, "        <- return to {}", shown(&s.function))?,
                Some("summary") => writeln!(
                    out,
                    "        (recursive call elided: the callee's activation is counted as paths of its own)"
                )?,
                Some("summary_cut") => writeln!(
                    out,
                    "        (call cut by the path budget, elided: the callee's paths are counted separately)"
                )?,
                Some("loop_restart") if i == context => writeln!(out, "        (starts at loop header)")?,
                _ => {}
            }
            let lines = if s.lines.is_empty() {
                "(no line info)".to_string()
            } else {
                format!("{}:{}", file_of(&s.function), crate::text::line_ranges(&s.lines))
            };
            writeln!(out, "        {}:bb{:<4} {lines}", shown(&s.function), s.block)?;
        }
        if p.end == "back_edge" {
            writeln!(out, "        (ends at back edge)")?;
        }
    }
    if report.paths.is_empty() {
        writeln!(out, "(no executed interprocedural paths)")?;
    }
    Ok(())
}
