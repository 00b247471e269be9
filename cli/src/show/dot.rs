//! `pathprof show --dot --function F FILE [--path ID] [-o OUT]`: one function's control-flow graph as Graphviz
//! dot, for a picture of where its counts go.
//!
//! Nodes are the function's blocks (labelled with their source lines, count and the function they call) and
//! EXIT; edges carry their counts, with a line width growing with the logarithm of the count (1 for 0, 6 for the
//! function's largest edge count). Dashed edges are the measured ones: the chords that carry a counter (edge and
//! block modes) or the edges that carry path-register code (path mode); dotted edges to EXIT are abnormal exits
//! (`exit`, `longjmp`, an exception), drawn only when taken. Block mode draws no edge counts (it does not determine them all).
//!
//! `--path ID` draws the edges of one decoded path (a number `pathprof decode` lists) bold and red, with
//! `class="path"` (kept in SVG): in path mode the path's real edges (`CfgPath::edges`: the final return or
//! abnormal exit included, the back or cut edge that ends or starts it not — it is taken between two paths);
//! in context and piecewise modes the edges of this function that the path's active suffix takes, a call
//! block's edge to its return site included when the path returns there or elides the call. The path must
//! have been executed.
//!
//! OUT ending in `.svg` is rendered with Graphviz (`dot -Tsvg`); without Graphviz that is an error.

use super::Args;
use crate::files;
use anyhow::{bail, Context, Result};
use pathprof_analysis::{function_path_counts, module_path_counts, FunctionCounts, ModuleCounts};
use pathprof_core::interproc::{PathEnd, Via};
use pathprof_core::{EdgeId, EdgeKind};
use pathprof_format::meta::{FunctionMeta, Mode};
use pathprof_format::profile::ModuleProfile;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

/// The colour of a chosen path.
const PATH_COLOR: &str = "#d62728";

/// Writes the dot text (or SVG) of the function `--function` names.
pub(super) fn run(args: &Args) -> Result<()> {
    let Some(name) = args.function.as_deref() else { bail!("--dot needs --function NAME") };
    let profile = files::read_profile(&args.file)?;
    let found: Vec<(&ModuleProfile, usize)> = profile
        .modules
        .iter()
        .flat_map(|m| (0..m.meta.functions.len()).map(move |i| (m, i)))
        .filter(|&(m, i)| crate::output::selects(Some(name), &m.meta.functions[i]))
        .collect();
    let Some(&(module, index)) = found.first() else { bail!("no function named {name} in {}", args.file.display()) };
    if found.len() > 1 {
        eprintln!(
            "pathprof: note: {} functions are named {name}; drawing the one of module {}",
            found.len(),
            module.meta.module_name.replace(['\n', '\r'], " ")
        );
    }
    let f = &module.meta.functions[index];
    let counts =
        ModuleCounts::new(module).function(index).with_context(|| format!("showing {}", args.file.display()))?;
    let path = match &args.path {
        Some(id) => Some(path_edges(module, index, id).with_context(|| format!("--path {id}"))?),
        None => None,
    };
    let text = dot_text(module.meta.mode, f, &counts, path.as_ref().map(|(id, edges)| (id.as_str(), edges)));
    match &args.output {
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
        Some(out) if out.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg")) => svg(&text, out)?,
        Some(out) => files::write_atomically(out, text.as_bytes())?,
    }
    Ok(())
}

/// Runs `dot -Tsvg -o OUT` on `text`.
fn svg(text: &str, out: &Path) -> Result<()> {
    let what = || format!("writing {}", out.display());
    let mut child = match Command::new("dot")
        .arg("-Tsvg")
        .arg("-o")
        .arg(out)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!(
                "writing {} needs Graphviz's dot, which is not installed (or write .dot and render it elsewhere)",
                out.display()
            )
        }
        Err(e) => return Err(e).context("running dot").with_context(what),
    };
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(text.as_bytes()).context("running dot").with_context(what)?;
    }
    let result = child.wait_with_output().context("running dot").with_context(what)?;
    if !result.status.success() {
        let err = String::from_utf8_lossy(&result.stderr);
        bail!("{}: dot failed ({}): {}", what(), result.status, err.lines().next().unwrap_or(""));
    }
    Ok(())
}

/// The path number `id` (as given) and the edges of function `index` it takes (see the module docs).
fn path_edges(module: &ModuleProfile, index: usize, id: &str) -> Result<(String, BTreeSet<EdgeId>)> {
    let Ok(number) = id.trim().parse::<u128>() else { bail!("'{id}' is not a path number") };
    let f = &module.meta.functions[index];
    let not_run = || format!("path {number} was not executed in {} (pathprof decode lists the executed paths)", f.name);
    match module.meta.mode {
        Mode::Path => {
            let fp = function_path_counts(module, index)?;
            if number >= fp.num_paths {
                bail!("{} has {} paths, numbered from 0", f.name, fp.num_paths);
            }
            let p = fp.paths.iter().find(|p| p.number == number).with_context(not_run)?;
            Ok((number.to_string(), p.path.edges.iter().copied().collect()))
        }
        Mode::Context | Mode::Piecewise => {
            let mp = module_path_counts(module)?;
            if number >= mp.num_paths {
                bail!("module {} has {} paths, numbered from 0", module.meta.module_name, mp.num_paths);
            }
            let p = mp.paths.iter().find(|p| p.number == number).with_context(not_run)?;
            let path = mp.decoder()?.decode(p.number)?;
            let mut edges = BTreeSet::new();
            let steps = &path.steps;
            let mine = |proc: pathprof_core::interproc::ProcId| proc.index() == index;
            // The edge from a call block to its return site `to`, in this function.
            let call_edge = |site: usize, to: u32| {
                let &(proc, block) = mp.sites.get(site)?;
                (proc == index).then_some(())?;
                f.cfg.edge_ids().find(|&e| {
                    let x = f.cfg.edge(e);
                    x.from.0 == block && x.to.0 == to && matches!(x.kind, EdgeKind::Branch { .. })
                })
            };
            for k in path.context_prefix_len()..steps.len() {
                let s = steps[k];
                match s.via {
                    Via::Edge(e) if mine(s.proc) => {
                        edges.insert(e);
                    }
                    Via::Return { site, edge } => {
                        if k > 0 && mine(steps[k - 1].proc) {
                            edges.insert(edge);
                        }
                        edges.extend(call_edge(site.index(), s.block.0));
                    }
                    Via::Summary { site } => edges.extend(call_edge(site.index(), s.block.0)),
                    _ => {}
                }
            }
            match path.end {
                PathEnd::RootReturn { proc, edge } | PathEnd::Termination { proc, edge } if mine(proc) => {
                    edges.insert(edge);
                }
                _ => {}
            }
            if edges.is_empty() && !p.visits.iter().any(|&q| mine(q)) {
                bail!("path {number} does not run through {}", f.name);
            }
            Ok((number.to_string(), edges))
        }
        Mode::Edge | Mode::Block | Mode::Trace => {
            bail!(
                "{} is in {} mode: --path needs a path, context or piecewise profile",
                f.name,
                module.meta.mode.name()
            )
        }
    }
}

/// `s` as the inside of a dot string.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn count_text(c: Option<u64>) -> String {
    c.map_or_else(|| "?".to_string(), |v| v.to_string())
}

/// Line width of an edge with count `c` when the largest is `max`: 1 + 5·ln(1+c)/ln(1+max).
fn pen_width(c: u64, max: u64) -> f64 {
    if max == 0 {
        return 1.0;
    }
    1.0 + 5.0 * (c as f64).ln_1p() / (max as f64).ln_1p()
}

/// The dot text of `f`'s graph with its counts, and `path` (its number and edges) highlighted.
pub(crate) fn dot_text(
    mode: Mode,
    f: &FunctionMeta,
    counts: &FunctionCounts,
    path: Option<(&str, &BTreeSet<EdgeId>)>,
) -> String {
    let cfg = &f.cfg;
    let shown = if f.display_name.is_empty() { &f.name } else { &f.display_name };
    let block_mode = mode == Mode::Block;
    let measured = if mode.counts_edges() { "counters" } else { "instrumented edges" };
    let mut title = vec![
        format!("{shown}  {}:{}", f.file, f.start_line),
        format!("{} mode, entries {}", mode.name(), count_text(counts.entry)),
        format!("dashed: {measured}; dotted: abnormal exits"),
    ];
    if let Some((id, _)) = path {
        title.push(format!("red: path {id}"));
    }
    if !counts.exact {
        title.push("INEXACT counts".to_string());
    }
    let title: Vec<String> = title.iter().map(|t| quote(t)).collect();
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"{}\" {{", quote(&f.name));
    let _ = writeln!(out, "  graph [fontname=\"Helvetica\", labelloc=t, label=\"{}\"];", title.join("\\n"));
    out.push_str("  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\"];\n");
    let on_path: BTreeSet<u32> = path
        .map(|(_, edges)| {
            edges.iter().filter_map(|&e| cfg.edges().get(e.index())).flat_map(|e| [e.from.0, e.to.0]).collect()
        })
        .unwrap_or_default();
    for (i, b) in f.blocks.iter().enumerate() {
        let lines = if b.lines.is_empty() {
            "no line info".to_string()
        } else {
            format!("lines {}", crate::text::line_ranges(&b.lines))
        };
        let count = counts.blocks.get(i).copied().flatten();
        let mut label = format!("bb{i}\\n{}\\ncount {}", quote(&lines), count_text(count));
        if f.reentry_blocks.contains(&(i as u32)) {
            label.push_str("\\n(setjmp)");
        }
        let style =
            if on_path.contains(&(i as u32)) { format!(", color=\"{PATH_COLOR}\", penwidth=2") } else { String::new() };
        let _ = writeln!(out, "  bb{i} [label=\"{label}\"{style}];");
    }
    let exit = cfg.num_blocks() as u32;
    let exit_style =
        if on_path.contains(&exit) { format!(", color=\"{PATH_COLOR}\", penwidth=2") } else { String::new() };
    let _ = writeln!(out, "  EXIT [shape=oval, label=\"EXIT\"{exit_style}];");
    let max = if block_mode { 0 } else { counts.edges.iter().flatten().copied().max().unwrap_or(0) };
    for id in cfg.edge_ids() {
        let e = cfg.edge(id);
        let kind = match e.kind {
            EdgeKind::Branch { .. } => "",
            EdgeKind::Return => "",
            EdgeKind::Termination => "abnormal ",
            EdgeKind::ExitToEntry => continue,
        };
        let count = counts.edges.get(id.index()).copied().flatten();
        let chosen = path.is_some_and(|(_, edges)| edges.contains(&id));
        if e.kind == EdgeKind::Termination && count == Some(0) && !chosen {
            // A call that could have left the function abnormally but never did: not worth an arrow.
            continue;
        }
        let to = if e.to.0 == exit { "EXIT".to_string() } else { format!("bb{}", e.to.0) };
        let label = if block_mode { kind.trim_end().to_string() } else { format!("{kind}{}", count_text(count)) };
        let instrumented = counts.measured.get(id.index()).copied().unwrap_or(false);
        let mut style: Vec<&str> = Vec::new();
        if instrumented {
            style.push("dashed");
        }
        if e.kind == EdgeKind::Termination {
            style.push("dotted");
        }
        let mut width = pen_width(count.unwrap_or(0), max);
        let mut attrs = format!("id=\"e{}\", label=\"{label}\"", id.index());
        if chosen {
            style.push("bold");
            width = width.max(3.0);
            let _ = write!(attrs, ", color=\"{PATH_COLOR}\", fontcolor=\"{PATH_COLOR}\", class=\"path\"");
        }
        let _ = write!(attrs, ", penwidth={width:.2}");
        if !style.is_empty() {
            let _ = write!(attrs, ", style=\"{}\"", style.join(","));
        }
        let _ = writeln!(out, "  bb{} -> {to} [{attrs}];", e.from.0);
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::{pen_width, quote};

    #[test]
    fn pen_width_grows_with_the_log_of_the_count() {
        assert_eq!(pen_width(0, 0), 1.0);
        assert_eq!(pen_width(0, 100), 1.0);
        assert!((pen_width(100, 100) - 6.0).abs() < 1e-9);
        assert!((pen_width(9, 99) - 3.5).abs() < 1e-9);
    }

    #[test]
    fn quotes_dot_strings() {
        assert_eq!(quote("a\"b\\c\nd"), "a\\\"b\\\\c d");
    }
}
