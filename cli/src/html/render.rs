//! The report's pages as strings: `index.html` and one page per source file. Every name, file name and source
//! line is HTML-escaped ([`esc`]); the CSS and JS are inlined, so the pages need nothing but each other.
//!
//! A source line's count is the **highest count among the blocks that carry it** (the blocks of the file's
//! functions whose `lines` include it, in every module), as `llvm-cov show` counts a line by its hottest region:
//! a line whose statements are split over blocks (a `for` header: initialisation, condition, increment) shows
//! how often its most executed part ran. A line no block carries has no count; one whose blocks' counts are all
//! unknown (an inexact function) shows `?`.

use super::model::{Function, HotPaths};
use crate::decode::report::PathReport;
use crate::not_profiled::NotProfiled;
use pathprof_format::meta::Mode;
use pathprof_format::profile::ModuleProfile;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;

const CSS: &str = include_str!("report.css");
const JS: &str = include_str!("report.js");

/// `s` with `& < > " '` replaced by character references: safe as element text and as a quoted attribute.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// One source file of the report: the recorded name, its page, where it was looked for and its text.
pub struct SourcePage {
    /// The file name recorded in the profile (empty: functions without debug info).
    pub recorded: String,
    /// The page's file name in the output directory.
    pub page: String,
    /// Where the source was read from, or first looked for (after `--source-root`).
    pub location: String,
    /// The source lines, `None` when the file could not be read.
    pub lines: Option<Vec<String>>,
    /// Indices into the function list of the functions recorded in this file, in profile order.
    pub functions: Vec<usize>,
}

/// The page a function's file is shown on, by recorded file name.
pub type PageOf<'p> = HashMap<&'p str, &'p str>;

/// A function's index in the function list by (module, linkage name): how a path's steps, which name their
/// functions, find them.
pub type ByName<'a> = HashMap<(*const ModuleProfile, &'a str), usize>;

fn head(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n\
         <style>\n{CSS}</style>\n</head>\n",
        esc(title)
    );
}

fn shown_name<'a>(f: &'a Function) -> &'a str {
    if f.meta.display_name.is_empty() {
        &f.meta.name
    } else {
        &f.meta.display_name
    }
}

fn count_text(c: Option<u64>) -> String {
    c.map_or_else(|| "?".to_string(), |v| v.to_string())
}

/// What [`Function::executions`] means for the function's mode.
fn executions_label(mode: Mode) -> &'static str {
    if mode.counts_edges() {
        "block executions"
    } else {
        "path executions"
    }
}

/// The index: functions ranked by executions (hottest first, ties in profile order), source files, the sources
/// that could not be found, and the functions the pass left uninstrumented.
pub fn index_page(
    profile_name: &str,
    functions: &[Function],
    pages: &[SourcePage],
    page_of: &PageOf,
    not_profiled: &[NotProfiled],
) -> String {
    let mut out = String::new();
    head(&mut out, &format!("pathprof report: {profile_name}"));
    let modes: BTreeSet<&str> = functions.iter().map(|f| f.mode().name()).collect();
    let _ = write!(
        out,
        "<body data-page=\"index\">\n<header><h1>pathprof report: {}</h1>\n<p>{} functions in {} source files; \
         mode {}. Functions are ranked by path executions (path, context and piecewise modes: the sum of the \
         counts of the paths they are home to) or block executions (edge and block modes: the sum of their \
         block counts).</p></header>\n<div class=\"page\">\n",
        esc(profile_name),
        functions.len(),
        pages.iter().filter(|p| !p.recorded.is_empty()).count(),
        esc(&modes.into_iter().collect::<Vec<_>>().join(", "))
    );
    let missing: Vec<&SourcePage> = pages.iter().filter(|p| p.lines.is_none() && !p.recorded.is_empty()).collect();
    if !missing.is_empty() {
        let _ = write!(
            out,
            "<h2 class=\"missing\">Sources not found ({})</h2>\n<p>Their counts are listed without source text; \
             use <code>--source-root OLD=NEW</code> to say where they are.</p>\n<ul class=\"missing\">\n",
            missing.len()
        );
        for p in &missing {
            let _ = writeln!(out, "<li>{} (looked for {})</li>", esc(&p.recorded), esc(&p.location));
        }
        out.push_str("</ul>\n");
    }
    if !not_profiled.is_empty() {
        let _ = write!(
            out,
            "<h2 class=\"missing\">Not profiled ({})</h2>\n<p>Left uninstrumented when compiled: these functions \
             ran uncounted, and no count of this report covers them.</p>\n<ul class=\"missing\" id=\"not-profiled\">\n",
            not_profiled.len()
        );
        for f in not_profiled {
            let name = if f.display_name.is_empty() { f.name } else { f.display_name };
            let _ = writeln!(
                out,
                "<li>{} ({}:{}, module {}): {}</li>",
                esc(name),
                esc(f.file),
                f.start_line,
                esc(f.module),
                esc(f.reason)
            );
        }
        out.push_str("</ul>\n");
    }
    out.push_str(
        "<h2>Functions</h2>\n<table class=\"index\" id=\"functions\">\n<thead><tr><th class=\"num\">#</th>\
         <th>function</th><th>location</th><th>mode</th><th class=\"num\">entries</th>\
         <th class=\"num\">executions</th><th class=\"num\">executed paths</th><th>hottest path</th>\
         <th>exact</th></tr></thead>\n<tbody>\n",
    );
    let mut order: Vec<usize> = (0..functions.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(functions[i].executions));
    for (rank, &i) in order.iter().enumerate() {
        let f = &functions[i];
        let page = page_of.get(f.meta.file.as_str()).copied().unwrap_or("");
        let file = if f.meta.file.is_empty() { "(no debug info)" } else { &f.meta.file };
        let (executed, hottest) = match &f.paths {
            Some(h) => (
                format!("{} of {}", h.executed, h.num_paths),
                h.listed.first().map_or(String::new(), |p| {
                    format!(
                        "<a href=\"{}#path={}:{}\">path {} ({})</a>",
                        esc(page),
                        esc(&uri_component(&f.meta.name)),
                        p.id,
                        p.id,
                        p.count
                    )
                }),
            ),
            None => (String::new(), String::new()),
        };
        let exact = if f.counts.exact { "yes".to_string() } else { "<span class=\"inexact\">no</span>".to_string() };
        let _ = writeln!(
            out,
            "<tr><td class=\"num\">{}</td><td><a href=\"{}#F{i}\">{}</a></td><td>{}:{}</td><td>{}</td>\
             <td class=\"num\">{}</td><td class=\"num\" title=\"{}\">{}</td><td class=\"num\">{}</td><td>{}</td>\
             <td>{exact}</td></tr>",
            rank + 1,
            esc(page),
            esc(shown_name(f)),
            esc(file),
            f.meta.start_line,
            f.mode().name(),
            count_text(f.counts.entry_count),
            executions_label(f.mode()),
            f.executions,
            executed,
            hottest,
        );
    }
    out.push_str(
        "</tbody>\n</table>\n<h2>Source files</h2>\n<table class=\"index\" id=\"files\">\n<thead><tr>\
                  <th>file</th><th class=\"num\">functions</th><th>source</th></tr></thead>\n<tbody>\n",
    );
    for p in pages {
        let name = if p.recorded.is_empty() { "(no debug info)" } else { &p.recorded };
        let status = match (&p.lines, p.recorded.is_empty()) {
            (_, true) => "",
            (Some(_), false) => "found",
            (None, false) => "<span class=\"missing\">not found</span>",
        };
        let _ = writeln!(
            out,
            "<tr><td><a href=\"{}\">{}</a></td><td class=\"num\">{}</td><td>{status}</td></tr>",
            esc(&p.page),
            esc(name),
            p.functions.len()
        );
    }
    out.push_str("</tbody>\n</table>\n</div>\n</body>\n</html>\n");
    out
}

/// `s` as a URI component (what JS's `encodeURIComponent` gives and `decodeURIComponent` reads).
fn uri_component(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Line → its count (see the module docs): `Some(n)`, or `None` when every block carrying it is unknown.
pub fn line_counts<'f, 'a: 'f>(functions: impl IntoIterator<Item = &'f Function<'a>>) -> BTreeMap<u32, Option<u64>> {
    let mut counts: BTreeMap<u32, Option<u64>> = BTreeMap::new();
    for f in functions {
        for b in &f.counts.blocks {
            for &line in b.lines.iter().filter(|&&l| l > 0) {
                let slot = counts.entry(line).or_insert(None);
                *slot = match (*slot, b.count) {
                    (Some(x), Some(y)) => Some(x.max(y)),
                    (x, y) => x.or(y),
                };
            }
        }
    }
    counts
}

/// A source file's page: the panels of its functions (counts, hot paths to choose) beside the annotated listing.
pub fn source_page(page: &SourcePage, functions: &[Function], by_name: &ByName, page_of: &PageOf) -> String {
    let mut out = String::new();
    let title = if page.recorded.is_empty() { "(no debug info)" } else { &page.recorded };
    head(&mut out, &format!("{title} - pathprof report"));
    let _ =
        write!(out, "<body data-page=\"source\">\n<header><a href=\"index.html\">index</a>\n<h1>{}</h1>\n", esc(title));
    match (&page.lines, page.recorded.is_empty()) {
        (_, true) => out.push_str("<p>Functions compiled without debug info: no source lines.</p>\n"),
        (Some(_), false) => {
            let _ = writeln!(out, "<p>Read from {}.</p>", esc(&page.location));
        }
        (None, false) => {
            let _ = writeln!(out, "<p class=\"missing\">Source not found at {}.</p>", esc(&page.location));
        }
    }
    out.push_str("</header>\n<div class=\"layout\">\n<nav class=\"fns\">\n");
    for &i in &page.functions {
        function_panel(&mut out, i, functions, by_name, page_of, &page.recorded);
    }
    out.push_str("</nav>\n<main>\n");
    if let Some(lines) = &page.lines {
        let counts = line_counts(page.functions.iter().map(|&i| &functions[i]));
        out.push_str("<table class=\"src\">\n<tbody>\n");
        for (k, text) in lines.iter().enumerate() {
            let n = k as u32 + 1;
            let (class, count) = match counts.get(&n) {
                Some(Some(0)) => ("zero", "0".to_string()),
                Some(Some(c)) => ("run", c.to_string()),
                Some(None) => ("unknown", "?".to_string()),
                None => ("", String::new()),
            };
            let _ = writeln!(
                out,
                "<tr id=\"L{n}\" class=\"{class}\"><td class=\"count\">{count}</td><td class=\"ln\">\
                 <a href=\"#L{n}\">{n}</a></td><td class=\"code\">{}</td></tr>",
                esc(text)
            );
        }
        out.push_str("</tbody>\n</table>\n");
    }
    let _ = write!(out, "</main>\n</div>\n<script>\n{JS}</script>\n</body>\n</html>\n");
    out
}

/// One function's panel: name, counts, its hot paths to choose from (each with its steps), blocks and edges.
fn function_panel(out: &mut String, i: usize, functions: &[Function], by_name: &ByName, page_of: &PageOf, here: &str) {
    let f = &functions[i];
    let _ = write!(
        out,
        "<section class=\"fn\" id=\"F{i}\">\n<h2><a href=\"#L{}\">{}</a></h2>\n",
        f.meta.start_line,
        esc(shown_name(f))
    );
    let mut meta = Vec::new();
    if shown_name(f) != f.meta.name {
        meta.push(format!("linkage name {}", esc(&f.meta.name)));
    }
    meta.push(format!("module {}", esc(&f.module.meta.module_name)));
    meta.push(format!("{} mode", f.mode().name()));
    meta.push(format!("entries {}", count_text(f.counts.entry_count)));
    meta.push(format!("{} {}", executions_label(f.mode()), f.executions));
    let _ = writeln!(out, "<p class=\"meta\">{}</p>", meta.join(" &middot; "));
    if !f.counts.exact {
        let _ = writeln!(out, "<p class=\"inexact\">INEXACT: {}</p>", esc(&f.counts.inexact_reasons.join("; ")));
    }
    if let Some(h) = &f.paths {
        hot_paths(out, i, f, h, functions, by_name, page_of, here);
    }
    blocks_and_edges(out, f);
    out.push_str("</section>\n");
}

/// The `<select>` of a function's hot paths and, per path, its steps (hidden until chosen) with the lines to
/// highlight on this page.
#[allow(clippy::too_many_arguments)]
fn hot_paths(
    out: &mut String,
    i: usize,
    f: &Function,
    h: &HotPaths,
    functions: &[Function],
    by_name: &ByName,
    page_of: &PageOf,
    here: &str,
) {
    let scope = if f.mode().is_interprocedural() { "of the module's paths through it" } else { "paths" };
    let _ = writeln!(
        out,
        "<p class=\"note\">{} executed of {} {scope}; the {} hottest listed.</p>",
        h.executed,
        h.num_paths,
        h.listed.len()
    );
    if h.listed.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<label>Hot path: <select class=\"paths\" data-fn=\"{}\">\n<option value=\"\">(choose a path)</option>\n",
        esc(&f.meta.name)
    );
    for (k, p) in h.listed.iter().enumerate() {
        let _ = writeln!(
            out,
            "<option value=\"P{i}-{k}\" data-id=\"{}\">#{} count {} ({:.1}%) path {}</option>",
            p.id, p.rank, p.count, p.percent, p.id
        );
    }
    out.push_str("</select></label>\n");
    for (k, p) in h.listed.iter().enumerate() {
        path_steps(out, &format!("P{i}-{k}"), f, p, functions, by_name, page_of, here);
    }
}

/// A path's steps as a list (calls, returns and elided calls marked, each block linked to its lines), with
/// the lines of this page's file it runs through in `data-lines` (its active part) and `data-ctx` (a context
/// path's calling context).
#[allow(clippy::too_many_arguments)]
fn path_steps(
    out: &mut String,
    id: &str,
    f: &Function,
    p: &PathReport,
    functions: &[Function],
    by_name: &ByName,
    page_of: &PageOf,
    here: &str,
) {
    let module = f.module as *const ModuleProfile;
    let mut active: BTreeSet<u32> = BTreeSet::new();
    let mut context: BTreeSet<u32> = BTreeSet::new();
    let mut items = String::new();
    let prefix = p.context_steps as usize;
    for (k, s) in p.steps.iter().enumerate() {
        let g = by_name.get(&(module, s.function)).map(|&j| &functions[j]);
        let file = g.map_or("", |g| g.meta.file.as_str());
        if file == here {
            let set = if k < prefix { &mut context } else { &mut active };
            set.extend(s.lines.iter().copied().filter(|&l| l > 0));
        }
        let via = match s.via {
            Some("call") => "<span class=\"via\">&rarr; call</span> ",
            Some("return") => "<span class=\"via\">&larr; return</span> ",
            Some("summary") => "<span class=\"via\">(recursive call elided)</span> ",
            Some("summary_cut") => "<span class=\"via\">(call cut by the path budget, elided)</span> ",
            Some("loop_restart") if k == prefix => "<span class=\"via\">(starts at loop header)</span> ",
            _ => "",
        };
        let name = g.map_or(s.function, shown_name);
        let place = match (s.lines.first(), g) {
            (Some(&l), Some(g)) => {
                let page =
                    if g.meta.file == here { "" } else { page_of.get(g.meta.file.as_str()).copied().unwrap_or("") };
                let file = if g.meta.file == here { String::new() } else { format!("{} ", esc(&g.meta.file)) };
                format!("<a href=\"{}#L{l}\">{file}line {}</a>", esc(page), crate::text::line_ranges(s.lines))
            }
            _ => "(no line info)".to_string(),
        };
        let class = if k < prefix { " class=\"ctx\"" } else { "" };
        let _ = writeln!(items, "<li{class}>{via}{}:bb{} {place}</li>", esc(name), s.block);
    }
    let context: Vec<String> = context.difference(&active).map(u32::to_string).collect();
    let active: Vec<String> = active.iter().map(u32::to_string).collect();
    let mut marks = Vec::new();
    match p.start {
        "loop_header" => marks.push("starts at a loop header"),
        "after_cut" => marks.push("starts after a cut"),
        _ => {}
    }
    match p.end {
        "back_edge" => marks.push("ends at a back edge"),
        "cut" => marks.push("ends at a cut"),
        "loop_entry" => marks.push("ends entering a loop"),
        "abnormal" => marks.push("left abnormally (exit, longjmp, exception)"),
        _ => {}
    }
    if prefix > 0 {
        marks.push("grey: calling context, ran in earlier paths");
    }
    let marks = if marks.is_empty() { String::new() } else { format!(": {}", marks.join("; ")) };
    let _ = write!(
        out,
        "<ol class=\"steps\" id=\"{id}\" data-lines=\"{}\" data-ctx=\"{}\" hidden>\n<li class=\"head\">path {}, \
         count {}{}</li>\n{items}</ol>\n",
        active.join(" "),
        context.join(" "),
        p.id,
        p.count,
        esc(&marks)
    );
}

/// The function's block and edge counts (open for edge and block profiles, folded for path profiles).
fn blocks_and_edges(out: &mut String, f: &Function) {
    let open = if f.mode().counts_edges() { " open" } else { "" };
    let _ = write!(
        out,
        "<details{open}><summary>blocks and edges</summary>\n<table class=\"blocks\"><thead><tr><th>block</th>\
         <th>lines</th><th class=\"num\">count</th></tr></thead><tbody>\n"
    );
    for b in &f.counts.blocks {
        let lines = match b.lines.first() {
            Some(l) => format!("<a href=\"#L{l}\">{}</a>", crate::text::line_ranges(&b.lines)),
            None => "-".to_string(),
        };
        let calls = b.calls.as_deref().map_or(String::new(), |c| format!(" calls {}", esc(c)));
        let _ = writeln!(
            out,
            "<tr><td>bb{}</td><td>{lines}{calls}</td><td class=\"num\">{}</td></tr>",
            b.id,
            count_text(b.count)
        );
    }
    let star = if f.mode() == Mode::Path { "instrumented" } else { "counter" };
    let _ = write!(
        out,
        "</tbody></table>\n<table class=\"edges\"><thead><tr><th>edge</th><th>kind</th><th class=\"num\">count</th>\
         <th>{star}</th></tr></thead><tbody>\n"
    );
    for e in &f.counts.edges {
        let to = if e.kind == "return" { "EXIT".to_string() } else { format!("bb{}", e.to) };
        let count = if f.mode() == Mode::Block { "n/a".to_string() } else { count_text(e.count) };
        let _ = writeln!(
            out,
            "<tr><td>bb{} &rarr; {to}</td><td>{}</td><td class=\"num\">{count}</td><td>{}</td></tr>",
            e.from,
            e.kind,
            if e.instrumented { "*" } else { "" }
        );
    }
    for a in &f.counts.abnormal_exits {
        let _ = writeln!(
            out,
            "<tr><td>bb{} (abnormal exit)</td><td>termination</td><td class=\"num\">{}</td><td></td></tr>",
            a.block, a.count
        );
    }
    out.push_str("</tbody></table>\n</details>\n");
}

#[cfg(test)]
mod tests {
    use super::{esc, uri_component};

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(esc("a<b>&\"c\"'d'"), "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
        assert_eq!(esc("</script><!--"), "&lt;/script&gt;&lt;!--");
        assert_eq!(esc("plain ü"), "plain ü");
    }

    #[test]
    fn uri_components_as_javascript_encodes_them() {
        assert_eq!(uri_component("_ZN3foo3barEv"), "_ZN3foo3barEv");
        assert_eq!(uri_component("a b:c/ü"), "a%20b%3Ac%2F%C3%BC");
    }
}
