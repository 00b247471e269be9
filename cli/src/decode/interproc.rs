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

use super::report::{percent_of, EdgeRef, FunctionReport, InterprocSteps, PathId, PathReport, Report, Steps};
use anyhow::{Context, Result};
use pathprof_analysis::{hottest, module_path_counts, InterprocCount, ModulePaths};
use pathprof_core::interproc::{PathEnd, ProcId, Via};
use pathprof_format::meta::ModuleMeta;
use pathprof_format::profile::ModuleProfile;
use std::collections::HashMap;
use std::path::Path;

/// Decodes every interprocedural module of the profile (`modules`), in order.
pub fn decode_modules(modules: &[&ModuleProfile], file: &Path) -> Result<Vec<ModulePaths>> {
    modules
        .iter()
        .map(|module| module_path_counts(module).with_context(|| format!("decoding {}", file.display())))
        .collect()
}

fn selected(meta: &ModuleMeta, p: ProcId, function: Option<&str>) -> bool {
    match meta.functions.get(p.index()) {
        Some(f) => crate::output::selects(function, f),
        None => function.is_none(),
    }
}

/// Per function of the module: how many paths it is home to (where their active suffix starts: the function a
/// path "belongs to") and the sum of their counts. One pass over the paths, not one per function.
pub(crate) fn home_totals(mp: &ModulePaths, num_functions: usize) -> Vec<(usize, i128)> {
    let mut totals = vec![(0usize, 0i128); num_functions];
    for p in &mp.paths {
        if let Some(slot) = p.home.and_then(|h| totals.get_mut(h.index())) {
            slot.0 += 1;
            slot.1 += i128::from(p.count);
        }
    }
    totals
}

/// Adds a decoded module's functions and its hottest paths (`top` of them; all without it) to `report`.
pub fn add_module<'a>(
    report: &mut Report<'a>,
    module: &'a ModuleProfile,
    mp: &'a ModulePaths,
    function: Option<&str>,
    top: Option<usize>,
    decoded: &'a InterprocSteps<'a>,
) {
    let meta = &module.meta;
    let homes = home_totals(mp, meta.functions.len());
    for (i, f) in meta.functions.iter().enumerate() {
        if !selected(meta, ProcId::from_index(i), function) {
            continue;
        }
        let (executed_paths, total_count) = homes[i];
        let c = &mp.functions[i];
        report.functions.push(FunctionReport {
            name: &f.name,
            display_name: &f.display_name,
            module: &meta.module_name,
            file: &f.file,
            start_line: f.start_line,
            num_paths: PathId::new(mp.num_paths),
            executed_paths,
            listed_paths: 0,
            total_count,
            entry_count: c.entry,
            exact: c.exact,
            inexact_reasons: c.inexact_reasons.iter().map(ToString::to_string).collect(),
        });
    }
    // Paths: the module's hottest first; with --function, those whose active suffix visits it.
    let visiting: Vec<&InterprocCount> = mp
        .paths
        .iter()
        .filter(|p| function.is_none() || p.visits.iter().any(|&q| selected(meta, q, function)))
        .collect();
    let total: i128 = mp.paths.iter().map(|p| i128::from(p.count)).sum();
    for (rank, p) in hottest(visiting, top).into_iter().enumerate() {
        report.paths.push(path_report(module, mp, p, rank + 1, total, decoded));
    }
}

pub(crate) fn path_report<'a>(
    module: &'a ModuleProfile,
    mp: &'a ModulePaths,
    p: &'a InterprocCount,
    rank: usize,
    total: i128,
    decoded: &'a InterprocSteps<'a>,
) -> PathReport<'a> {
    let meta = &module.meta;
    // Its steps, decoded again: a counted path decodes (it had to, to be counted).
    let path = decoded.path(mp, p.number);
    let fmeta = |q: ProcId| meta.functions.get(q.index());
    let edge = |q: ProcId, e: pathprof_core::EdgeId| {
        fmeta(q).and_then(|f| f.cfg.edges().get(e.index())).map(|x| EdgeRef { from: x.from.0, to: x.to.0 })
    };
    let prefix = path.as_ref().map_or(0, |x| x.context_prefix_len());
    let first = path.as_ref().and_then(|x| x.steps.get(prefix).copied());
    let (start, start_edge) = match first.map(|s| (s.proc, s.via)) {
        Some((q, Via::LoopRestart { back } | Via::MidEntry { back })) if mp.is_cut_edge(q, back) => {
            ("after_cut", edge(q, back))
        }
        Some((q, Via::LoopRestart { back } | Via::MidEntry { back })) => ("loop_header", edge(q, back)),
        _ => ("entry", None),
    };
    let (end, end_edge) = match path.as_ref().map(|x| x.end) {
        Some(PathEnd::RootReturn { .. }) | None => ("exit", None),
        Some(PathEnd::BackEdge { proc, back }) if mp.is_loop_entry_edge(proc, back) => ("loop_entry", edge(proc, back)),
        Some(PathEnd::BackEdge { proc, back }) if mp.is_cut_edge(proc, back) => ("cut", edge(proc, back)),
        Some(PathEnd::BackEdge { proc, back }) => ("back_edge", edge(proc, back)),
        Some(PathEnd::Termination { .. }) => ("abnormal", None),
    };
    let home = first.map_or(ProcId(0), |s| s.proc);
    let hf = fmeta(home);
    let percent = percent_of(p.count, total);
    PathReport {
        id: PathId::new(p.number),
        rank,
        count: p.count,
        percent,
        function: hf.map_or("", |f| &f.name),
        display_name: hf.map_or("", |f| &f.display_name),
        module: &meta.module_name,
        file: hf.map_or("", |f| &f.file),
        start,
        end,
        start_edge,
        end_edge,
        reentry_correction: p.count < 0 && end == "abnormal",
        fork_reentries: p.fork_reentries,
        context_steps: prefix as u32,
        steps: Steps::Interproc { meta, mp, number: p.number, decoded },
    }
}

/// Text output: per module, the hottest paths with their context-prefix and active suffix, one block per line
/// with its function and source lines, and the calls, returns and elided calls between them.
pub fn write_text<'a>(out: &mut impl std::io::Write, report: &Report<'a>) -> std::io::Result<()> {
    // Each step names its function: look them up by (module, linkage name), the first of a name as listed.
    let mut by_name: HashMap<(&str, &str), &FunctionReport> = HashMap::new();
    for f in &report.functions {
        by_name.entry((f.module, f.name)).or_insert(f);
    }
    let mut module = "";
    for p in &report.paths {
        if p.module != module {
            module = p.module;
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
        match p.start {
            "loop_header" => marks.push("starts at loop header".to_string()),
            "after_cut" => marks.push("starts after a cut".to_string()),
            _ => {}
        }
        match p.end {
            "back_edge" => marks.push("ends at back edge".into()),
            "cut" => marks.push("ends at a cut".into()),
            "loop_entry" => marks.push("ends entering a loop".into()),
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
        let names = |name: &'a str| match by_name.get(&(p.module, name)) {
            Some(f) if !f.display_name.is_empty() => (f.display_name, f.file),
            Some(f) => (name, f.file),
            None => (name, ""),
        };
        crate::text::interproc_steps(out, p.steps.iter(), p.context_steps as usize, names)?;
        match p.end {
            "back_edge" => writeln!(out, "        (ends at back edge)")?,
            "cut" => writeln!(out, "        (ends at a cut)")?,
            "loop_entry" => writeln!(out, "        (ends entering a loop)")?,
            _ => {}
        }
    }
    if report.paths.is_empty() {
        writeln!(out, "(no executed interprocedural paths)")?;
    }
    Ok(())
}
