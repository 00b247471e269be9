//! `pathprof diff A B [--json] [--limit N]`: the path spectra of two runs of one build compared (Reps, Ball, Das
//! and Larus, "The Use of Program Profiling for Software Maintenance with Applications to the Year 2000
//! Problem", ESEC/FSE 1997): which paths ran in one run and not in the other, and how each path's share of the
//! executions changed — program-wide and per function.
//!
//! A path's *spectrum share* is its count over the sum of the counts of its scope (the program, or its
//! function). Per scope the output gives the paths executed only in B (*new*), only in A (*vanished*), the paths
//! executed in both whose share changed most, and the *spectrum distance*: the total variation distance of the
//! two distributions, ½ Σ |share_B − share_A| over every path (0% = the same mix of paths, 100% = no path in
//! common). Functions are listed most changed first; every list is capped at `--limit` (default 10).
//!
//! Paths are matched by module build, function and path number (module-wide numbers in context and piecewise
//! modes), so the profiles must come from one build: a module (name and output) whose metadata differs between
//! them is an error, as in `merge`; so are profiles without a module in common, of different modes, or
//! without paths. A module in only one of the profiles (a library one run did not load) simply has paths in
//! one of them. Functions whose counts are not exact in either profile are left out of both sides, and the
//! output says which.
//!
//! JSON: `{"mode", "a": SIDE, "b": SIDE, "left_out": {"functions", "paths", "names"}, "program": CHANGES,
//! "functions": [{"function", "display_name", "module", "file", "start_line", "a": SIDE, "b": SIDE, ...CHANGES}]}`
//! where SIDE = `{"executions", "executed_paths"}` (plus `"file"` at the top), CHANGES = `{"new_paths",
//! "vanished_paths", "distance", "new": [PATH], "vanished": [PATH], "share_changes": [PATH]}` and PATH =
//! `{"id", "function", "display_name", "module", "count_a", "count_b", "percent_a", "percent_b", "delta",
//! "steps"}` (percentages of the scope's executions; steps as in `decode --json`).

use crate::decode::report::{InterprocSteps, PathId, Steps};
use crate::program_paths::{self, share, shown_name, Decoded, Enumerated, PathKey, ProgramPath};
use crate::{files, output};
use anyhow::{bail, Result};
use pathprof_format::profile::Profile;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Paths (and functions) listed per list without `--limit`.
const DEFAULT_LIMIT: usize = 10;

/// Arguments of `pathprof diff`.
#[derive(clap::Args)]
pub struct Args {
    /// The first run's profile (the baseline).
    #[arg(value_name = "A")]
    a: PathBuf,
    /// The second run's profile, of the same build.
    #[arg(value_name = "B")]
    b: PathBuf,
    /// List at most N paths per list and N functions [default: 10].
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    mode: &'static str,
    a: Side,
    b: Side,
    left_out: LeftOut<'a>,
    program: Changes<'a>,
    functions: Vec<FunctionDiff<'a>>,
}

#[derive(Serialize, Default)]
struct Side {
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    /// Sum of the counts of the compared paths.
    executions: u128,
    /// Compared paths with a positive count.
    executed_paths: usize,
}

#[derive(Serialize)]
struct LeftOut<'a> {
    /// Functions whose counts are not exact in A or in B.
    functions: usize,
    /// Their executed paths in A and B.
    paths: usize,
    names: Vec<&'a str>,
}

#[derive(Serialize, Default)]
struct Changes<'a> {
    /// Paths executed in B and not in A.
    new_paths: usize,
    /// Paths executed in A and not in B.
    vanished_paths: usize,
    /// Total variation distance of the two spectra, percent.
    distance: f64,
    new: Vec<DiffPath<'a>>,
    vanished: Vec<DiffPath<'a>>,
    /// Paths executed in both, largest change of share first.
    share_changes: Vec<DiffPath<'a>>,
}

#[derive(Serialize)]
struct DiffPath<'a> {
    id: PathId,
    function: &'a str,
    display_name: &'a str,
    module: &'a str,
    count_a: i64,
    count_b: i64,
    /// Share of the scope's executions in A, percent.
    percent_a: f64,
    percent_b: f64,
    /// `percent_b - percent_a`.
    delta: f64,
    steps: Steps<'a>,
    #[serde(skip)]
    path: ProgramPath<'a>,
}

#[derive(Serialize)]
struct FunctionDiff<'a> {
    function: &'a str,
    display_name: &'a str,
    module: &'a str,
    file: &'a str,
    start_line: u32,
    a: Side,
    b: Side,
    #[serde(flatten)]
    changes: Changes<'a>,
}

/// Reads both profiles, checks that they come from one build, and prints how their path spectra differ.
pub fn run(args: &Args) -> Result<()> {
    let (pa, pb) = (files::read_profile(&args.a)?, files::read_profile(&args.b)?);
    same_build(&pa, &pb, &args.a, &args.b)?;
    let (da, db) = (Decoded::new(&pa, &args.a)?, Decoded::new(&pb, &args.b)?);
    if da.mode != db.mode {
        bail!(
            "{} is a {} profile but {} a {} profile: diff compares runs of one build",
            args.a.display(),
            da.mode,
            args.b.display(),
            db.mode
        );
    }
    let steps = InterprocSteps::default();
    let (ea, eb) = (da.enumerate(&steps), db.enumerate(&steps));
    let report =
        compare(da.mode, &ea, &eb, da.interprocedural(), args.limit.unwrap_or(DEFAULT_LIMIT), (&args.a, &args.b));
    output::print(&report, args.json, write_text)
}

/// Refuses profiles of different builds: a module (name and output) with other metadata in the other profile,
/// or no module in common at all.
fn same_build(a: &Profile, b: &Profile, name_a: &Path, name_b: &Path) -> Result<()> {
    let builds: HashMap<(&str, &str), u64> =
        a.modules.iter().map(|m| ((m.meta.module_name.as_str(), m.meta.output.as_str()), m.meta_hash)).collect();
    let mut common = false;
    for m in &b.modules {
        match builds.get(&(m.meta.module_name.as_str(), m.meta.output.as_str())) {
            Some(&h) if h != m.meta_hash => bail!(
                "{} and {} come from different builds of module {}: diff compares runs of one build",
                name_a.display(),
                name_b.display(),
                m.meta.label()
            ),
            Some(_) => common = true,
            None => {}
        }
    }
    if !common {
        bail!(
            "{} and {} have no module in common: they are profiles of different programs",
            name_a.display(),
            name_b.display()
        );
    }
    Ok(())
}

/// One path's counts in A and B (0 where it did not run).
#[derive(Clone, Copy)]
struct Pair<'a> {
    a: i64,
    b: i64,
    /// The path as enumerated in B if it ran there, else in A (steps and names are the same in one build).
    path: ProgramPath<'a>,
    /// Enumeration order: A's paths first, then B's new ones; breaks ties.
    order: usize,
}

/// (module `meta_hash`, function index): the function a path belongs to.
type FunctionKey = (u64, usize);

/// Builds the report from the two enumerations.
fn compare<'a>(
    mode: &'static str,
    ea: &Enumerated<'a>,
    eb: &Enumerated<'a>,
    interprocedural: bool,
    limit: usize,
    files: (&Path, &Path),
) -> Report<'a> {
    // Functions left out on either side are left out of both.
    let mut left_out: HashSet<FunctionKey> = HashSet::new();
    let mut names = Vec::new();
    for f in ea.functions.iter().chain(&eb.functions).filter(|f| f.left_out) {
        if left_out.insert((f.module.meta_hash, f.function_index)) {
            names.push(f.function.name.as_str());
        }
    }
    let fkey = |p: &ProgramPath| (p.module.meta_hash, p.function_index);
    let mut left_out_paths = 0usize;
    let mut pairs: Vec<Pair> = Vec::new();
    let mut index: HashMap<PathKey, usize> = HashMap::new();
    for p in &ea.paths {
        if left_out.contains(&fkey(p)) {
            left_out_paths += 1;
            continue;
        }
        index.insert(p.key(interprocedural), pairs.len());
        pairs.push(Pair { a: p.count, b: 0, path: *p, order: pairs.len() });
    }
    for p in &eb.paths {
        if left_out.contains(&fkey(p)) {
            left_out_paths += 1;
            continue;
        }
        match index.get(&p.key(interprocedural)).and_then(|&i| pairs.get_mut(i)) {
            Some(pair) => {
                pair.b = p.count;
                pair.path = *p;
            }
            None => pairs.push(Pair { a: 0, b: p.count, path: *p, order: pairs.len() }),
        }
    }
    left_out_paths += ea.left_out_paths + eb.left_out_paths;

    let all: Vec<&Pair> = pairs.iter().collect();
    let (sa, sb) = (side(&all, |p| p.a), side(&all, |p| p.b));
    let program = changes(&all, sa.executions, sb.executions, limit);

    // Per function, in profile order of first appearance.
    let mut by_function: BTreeMap<usize, (FunctionKey, Vec<&Pair>)> = BTreeMap::new();
    let mut first_seen: HashMap<FunctionKey, usize> = HashMap::new();
    for p in &pairs {
        let k = fkey(&p.path);
        let slot = *first_seen.entry(k).or_insert(p.order);
        by_function.entry(slot).or_insert_with(|| (k, Vec::new())).1.push(p);
    }
    let mut functions: Vec<FunctionDiff> = by_function
        .into_values()
        .filter_map(|(_, mine)| {
            let f = mine.first()?.path;
            let (a, b) = (side(&mine, |p| p.a), side(&mine, |p| p.b));
            let changes = changes(&mine, a.executions, b.executions, limit);
            Some(FunctionDiff {
                function: &f.function.name,
                display_name: &f.function.display_name,
                module: &f.module.meta.module_name,
                file: &f.function.file,
                start_line: f.function.start_line,
                a,
                b,
                changes,
            })
        })
        .filter(|f| f.changes.distance > 0.0 || f.changes.new_paths > 0 || f.changes.vanished_paths > 0)
        .collect();
    // Most changed first; the sort is stable, so ties stay in profile order.
    functions.sort_by(|x, y| y.changes.distance.total_cmp(&x.changes.distance));
    functions.truncate(limit);

    Report {
        mode,
        a: Side { file: Some(files.0.display().to_string()), ..sa },
        b: Side { file: Some(files.1.display().to_string()), ..sb },
        left_out: LeftOut { functions: left_out.len(), paths: left_out_paths, names },
        program,
        functions,
    }
}

/// The executions and executed paths of one side of `pairs`.
fn side(pairs: &[&Pair], count: impl Fn(&Pair) -> i64) -> Side {
    let counts = pairs.iter().map(|p| count(p)).filter(|&c| c > 0);
    Side {
        file: None,
        executions: counts.clone().map(|c| c.unsigned_abs() as u128).sum(),
        executed_paths: counts.count(),
    }
}

/// New, vanished and most changed paths of one scope whose executions are `ta` in A and `tb` in B.
fn changes<'a>(pairs: &[&Pair<'a>], ta: u128, tb: u128, limit: usize) -> Changes<'a> {
    let entry = |p: &Pair<'a>| {
        let (percent_a, percent_b) = (share(p.a.unsigned_abs().into(), ta), share(p.b.unsigned_abs().into(), tb));
        DiffPath {
            id: p.path.id(),
            function: &p.path.function.name,
            display_name: &p.path.function.display_name,
            module: &p.path.module.meta.module_name,
            count_a: p.a,
            count_b: p.b,
            percent_a,
            percent_b,
            delta: percent_b - percent_a,
            steps: p.path.steps,
            path: p.path,
        }
    };
    let mut new: Vec<&Pair> = pairs.iter().copied().filter(|p| p.a == 0).collect();
    let mut vanished: Vec<&Pair> = pairs.iter().copied().filter(|p| p.b == 0).collect();
    let mut both: Vec<DiffPath> = pairs.iter().filter(|p| p.a > 0 && p.b > 0).map(|p| entry(p)).collect();
    let distance = spectrum_distance(pairs.iter().map(|p| (p.a, p.b)), ta, tb);
    let (new_paths, vanished_paths) = (new.len(), vanished.len());
    new.sort_by_key(|p| (Reverse(p.b), p.order));
    vanished.sort_by_key(|p| (Reverse(p.a), p.order));
    both.retain(|d| d.delta != 0.0);
    both.sort_by(|x, y| y.delta.abs().total_cmp(&x.delta.abs()));
    both.truncate(limit);
    Changes {
        new_paths,
        vanished_paths,
        distance,
        new: new.into_iter().take(limit).map(entry).collect(),
        vanished: vanished.into_iter().take(limit).map(entry).collect(),
        share_changes: both,
    }
}

/// The total variation distance, percent, of two path spectra given as (count in A, count in B) per path, with
/// `ta` and `tb` the sums of the positive counts: ½ Σ |share_B − share_A|.
fn spectrum_distance(counts: impl Iterator<Item = (i64, i64)>, ta: u128, tb: u128) -> f64 {
    let positive = |c: i64| u128::try_from(c).unwrap_or(0);
    counts.map(|(a, b)| (share(positive(b), tb) - share(positive(a), ta)).abs()).sum::<f64>() / 2.0
}

fn write_text(out: &mut impl Write, r: &Report) -> io::Result<()> {
    let side = |s: &Side| {
        format!(
            "{} ({} path executions, {} executed paths)",
            s.file.as_deref().unwrap_or(""),
            s.executions,
            s.executed_paths
        )
    };
    writeln!(out, "path spectra ({} mode)", r.mode)?;
    writeln!(out, "  A = {}", side(&r.a))?;
    writeln!(out, "  B = {}", side(&r.b))?;
    if r.left_out.functions > 0 {
        let s = if r.left_out.functions == 1 { "" } else { "s" };
        let mut names = r.left_out.names.iter().take(5).copied().collect::<Vec<_>>().join(", ");
        if r.left_out.names.len() > 5 {
            names.push_str(", ...");
        }
        writeln!(
            out,
            "left out: {} function{s} whose counts are not exact in A or B, with {} executed paths ({names})",
            r.left_out.functions, r.left_out.paths
        )?;
    }
    writeln!(out)?;
    write!(out, "program: ")?;
    write_changes(out, &r.program, "  ")?;
    if r.functions.is_empty() {
        writeln!(out, "\nno function's path spectrum changed")?;
    }
    for f in &r.functions {
        let name = if f.display_name.is_empty() { f.function } else { f.display_name };
        let file = if f.file.is_empty() { "<unknown file>" } else { f.file };
        writeln!(out)?;
        writeln!(
            out,
            "{name}  {file}:{}  (module {}): executions {} -> {}, executed paths {} -> {}",
            f.start_line, f.module, f.a.executions, f.b.executions, f.a.executed_paths, f.b.executed_paths
        )?;
        write!(out, "  ")?;
        write_changes(out, &f.changes, "    ")?;
    }
    Ok(())
}

fn write_changes(out: &mut impl Write, c: &Changes, indent: &str) -> io::Result<()> {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    writeln!(
        out,
        "{} new path{}, {} vanished path{}, spectrum distance {:.2}%",
        c.new_paths,
        plural(c.new_paths),
        c.vanished_paths,
        plural(c.vanished_paths),
        c.distance
    )?;
    let lists: [(&str, &Vec<DiffPath>, usize); 3] = [
        ("new (executed in B, not in A)", &c.new, c.new_paths),
        ("vanished (executed in A, not in B)", &c.vanished, c.vanished_paths),
        ("share changed most", &c.share_changes, c.share_changes.len()),
    ];
    for (title, list, total) in lists {
        if list.is_empty() {
            continue;
        }
        let more = if total > list.len() { format!(" ({} of {total})", list.len()) } else { String::new() };
        writeln!(out, "{indent}{title}{more}:")?;
        for p in list {
            writeln!(
                out,
                "{indent}  count {} -> {}  {:.2}% -> {:.2}% ({:+.2})  {}  path {}",
                p.count_a,
                p.count_b,
                p.percent_a,
                p.percent_b,
                p.delta,
                shown_name(p.path.function),
                p.id
            )?;
            program_paths::write_steps(out, &p.path)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::spectrum_distance;

    fn tv(a: &[i64], b: &[i64]) -> f64 {
        let sum = |v: &[i64]| v.iter().filter(|&&c| c > 0).map(|&c| c as u128).sum();
        spectrum_distance(a.iter().copied().zip(b.iter().copied()), sum(a), sum(b))
    }

    #[test]
    fn spectrum_distance_is_zero_for_the_same_mix_and_full_for_disjoint_runs() {
        assert_eq!(tv(&[1, 2, 3], &[10, 20, 30]), 0.0);
        assert_eq!(tv(&[5, 0], &[0, 7]), 100.0);
        // A: 50% / 50%, B: 75% / 25%: half of |+25| + |-25|.
        assert!((tv(&[1, 1], &[3, 1]) - 25.0).abs() < 1e-9);
        // Nothing ran on one side: every share there is 0.
        assert_eq!(tv(&[0, 0], &[2, 2]), 50.0);
    }
}
