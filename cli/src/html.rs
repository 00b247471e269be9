//! `pathprof report --html -o DIR FILE [--source-root OLD=NEW]... [--top N]`: a static, self-contained HTML site
//! (inline CSS and JS, no network, works from `file://`) of a profile.
//!
//! `DIR/index.html` ranks every function by executions and lists the source files (and those not found);
//! `DIR/NNN-NAME.html` shows one source file annotated with line counts (see [`render`] for the rule) beside
//! its functions: their block and edge counts and, in path, context and piecewise profiles, their `--top`
//! hottest paths (default 10: what a page ships per function, so a big profile's pages stay small). Choosing a
//! path highlights the lines it runs through; `NNN-NAME.html#path=NAME:ID` opens a page with path `ID` of the
//! function with linkage name `NAME` chosen. A context or piecewise path's steps link to the other functions and
//! files it runs through.
//!
//! Counts and paths come from `show`'s and `decode`'s machinery ([`model`]). Sources are read from the file
//! names recorded in the profile ([`sources`]); a file that cannot be read is listed on the index page and in
//! one line on stderr, and its functions are still shown without source text.

mod model;
mod render;

use crate::files;
use crate::sources;
use anyhow::{bail, Context, Result};
use render::{ByName, PageOf, SourcePage};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Hot paths listed per function when `--top` is not given.
const DEFAULT_TOP: usize = 10;

/// Arguments of `pathprof report`.
#[derive(clap::Args)]
pub struct Args {
    /// The profile to report on.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Write an HTML site (the only format so far).
    #[arg(long)]
    html: bool,
    /// The directory to write the site to (created if missing; existing pages are replaced).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    output: PathBuf,
    /// Where to find the sources: DIR is where relative names are relative to (the directory the compiler ran
    /// in), OLD=NEW reads names under OLD from NEW (repeatable; the first match wins).
    #[arg(long = "source-root", value_name = "DIR|OLD=NEW", value_parser = sources::parse_source_root)]
    source_roots: Vec<sources::SourceRoot>,
    /// Hot paths listed per function (path, context and piecewise profiles).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_TOP)]
    top: usize,
}

/// Reads the profile, builds the report and writes its pages.
pub fn run(args: &Args) -> Result<()> {
    if !args.html {
        bail!("pathprof report needs --html (the only report format)");
    }
    let profile = files::read_profile(&args.file)?;
    let decoded = model::decode(&profile, &args.file)?;
    let interproc_steps = crate::decode::report::InterprocSteps::default();
    let functions = model::functions(&profile, &decoded, args.top, &args.file, &interproc_steps)?;

    // One page per recorded file name, by name; functions without debug info share one.
    let mut by_file: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, f) in functions.iter().enumerate() {
        by_file.entry(f.meta.file.as_str()).or_default().push(i);
    }
    let all = &functions;
    let dirs = sources::ModuleDirs::new(all.iter().map(|f| (f.module.meta.module_name.as_str(), f.meta.file.as_str())))
        .with_compilation_dirs(
            profile
                .modules
                .iter()
                .flat_map(|m| m.meta.compilation_dirs.iter().map(|d| (m.meta.module_name.as_str(), d.as_str()))),
        );
    let pages: Vec<SourcePage> = by_file
        .into_iter()
        .enumerate()
        .map(|(n, (recorded, functions))| {
            let modules = functions.iter().map(|&i| all[i].module.meta.module_name.as_str());
            let places = sources::candidates(recorded, modules, &dirs, &args.source_roots);
            let found = places.iter().find_map(|p| sources::read_lines(p).map(|lines| (p, lines)));
            let (location, lines) = match found {
                Some((p, lines)) if !recorded.is_empty() => (p.clone(), Some(lines)),
                _ => (places[0].clone(), None),
            };
            SourcePage {
                recorded: recorded.to_string(),
                page: page_name(n, recorded),
                location: location.display().to_string(),
                lines,
                functions,
            }
        })
        .collect();
    let page_of: PageOf = pages.iter().map(|p| (p.recorded.as_str(), p.page.as_str())).collect();
    let mut by_name: ByName = HashMap::new();
    for (i, f) in functions.iter().enumerate() {
        by_name.entry((f.module as *const _, f.meta.name.as_str())).or_insert(i);
    }

    let dir = &args.output;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let profile_name = args.file.display().to_string();
    let not_profiled = crate::not_profiled::of_profile(&profile, None);
    write(dir, "index.html", &render::index_page(&profile_name, &functions, &pages, &page_of, &not_profiled))?;
    for p in &pages {
        write(dir, &p.page, &render::source_page(p, &functions, &by_name, &page_of))?;
    }
    let missing: Vec<&str> =
        pages.iter().filter(|p| p.lines.is_none() && !p.recorded.is_empty()).map(|p| p.recorded.as_str()).collect();
    if !missing.is_empty() {
        eprintln!(
            "pathprof: warning: {} source file{} not found (listed in {}; see --source-root): {}",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" },
            dir.join("index.html").display(),
            listed(&missing, 5).replace(['\n', '\r'], " ")
        );
    }
    Ok(())
}

/// The first `n` of `names`, and how many more there are.
fn listed(names: &[&str], n: usize) -> String {
    let mut text = names.iter().take(n).copied().collect::<Vec<_>>().join(", ");
    if names.len() > n {
        text.push_str(&format!(" and {} more", names.len() - n));
    }
    text
}

/// `NNN-BASENAME.html`: unique by number, readable by name, safe as a file name and in a URL.
fn page_name(n: usize, recorded: &str) -> String {
    let base = Path::new(recorded).file_name().and_then(|b| b.to_str()).unwrap_or("");
    let base: String = base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' { c } else { '_' })
        .collect();
    let base = if base.is_empty() { "unknown".to_string() } else { base };
    format!("{n:03}-{base}.html")
}

fn write(dir: &Path, name: &str, text: &str) -> Result<()> {
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::{listed, page_name};

    #[test]
    fn long_lists_of_missing_sources_are_cut() {
        assert_eq!(listed(&["a", "b"], 5), "a, b");
        assert_eq!(listed(&["a", "b", "c"], 2), "a, b and 1 more");
    }

    #[test]
    fn page_names_are_numbered_and_safe() {
        assert_eq!(page_name(0, "/src/a b<c>.c"), "000-a_b_c_.c.html");
        assert_eq!(page_name(12, ""), "012-unknown.html");
        assert_eq!(page_name(3, "/x/dir/"), "003-dir.html");
    }
}
