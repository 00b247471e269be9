//! `pathprof diff-program OLD NEW [--function F]… [--json] [--cc COMPILER] [-- CFLAGS…]`: which statements of NEW
//! may behave differently from OLD (Ball's thesis ch. 7, program differencing by slice isomorphism), so that a
//! reviewer sees what a change can affect — not just the lines it touched.
//!
//! Each version (a C or C++ source, or LLVM bitcode/IR with debug info) is compiled once through
//! `pathprof-clang` with `PATHPROF_STATEMENT_GRAPHS` set: the pass writes each function's statement graph
//! (`pathprof_core::slicing::versions::ModuleStatements`) and the object is thrown away. Source lines of the two
//! versions correspond by a line diff of their texts (the main files with each other, other files — headers —
//! with the same path); `pathprof_core::slicing::versions::diff_program` then says, per statement vertex of NEW,
//! `changed` (no counterpart: edited or new), `affected` (a counterpart, but its ordered slice differs) or the
//! same. A source line takes its vertices' worst status.
//!
//! JSON: `{"old", "new", "functions": [{"name", "display_name", "status", "reason"?, "lines": [{"file", "line",
//! "behaviour", "text"}], "without_line"}], "removed": [NAME], "changed_memory": [NAME]}`, `status` one of
//! `same`, `differs`, `new`, `not compared`.

use anyhow::{bail, Context, Result};
use pathprof_core::slicing::versions::{diff_program, FunctionDiff, FunctionStatements, LineMap, ModuleStatements};
use pathprof_core::slicing::Behaviour;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Arguments of `pathprof diff-program`.
#[derive(clap::Args)]
pub struct Args {
    /// The old version: a C/C++ source file, or LLVM bitcode/IR with debug info.
    #[arg(value_name = "OLD")]
    old: PathBuf,
    /// The new version.
    #[arg(value_name = "NEW")]
    new: PathBuf,
    /// Report only this function (linkage or source name); repeatable. Without it, every function that may
    /// differ.
    #[arg(long, value_name = "F")]
    function: Vec<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// The compiler wrapper [default: pathprof-clang (pathprof-clang++ for C++) next to this program, else on PATH].
    #[arg(long, value_name = "COMPILER")]
    cc: Option<PathBuf>,
    /// Compiler flags both versions need (include paths, defines), after `--`.
    #[arg(last = true, value_name = "CFLAGS")]
    cflags: Vec<String>,
}

#[derive(Serialize)]
struct Report {
    old: String,
    new: String,
    functions: Vec<FunctionReport>,
    removed: Vec<String>,
    changed_memory: Vec<String>,
}

#[derive(Serialize)]
struct FunctionReport {
    name: String,
    display_name: String,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    lines: Vec<LineReport>,
    /// Statements that may differ but have no source line (compiler-made: parameter spills, cleanups).
    without_line: usize,
}

#[derive(Serialize)]
struct LineReport {
    file: String,
    line: u32,
    behaviour: Behaviour,
    text: String,
}

/// Runs `pathprof diff-program`.
pub fn run(args: &Args) -> Result<()> {
    for p in [&args.old, &args.new] {
        if !p.is_file() {
            bail!("{}: no such file", p.display());
        }
    }
    let dir = tempfile::tempdir().context("cannot create a temporary directory")?;
    let old = statements(args, &args.old, &dir.path().join("old"))?;
    let new = statements(args, &args.new, &dir.path().join("new"))?;
    let selects = |f: &FunctionStatements, wanted: &str| f.name == wanted || f.display_name == wanted;
    for f in &args.function {
        if !new.functions.iter().any(|x| selects(x, f)) {
            bail!("{}: no function '{f}' in this version", args.new.display());
        }
    }
    let mut texts = Texts::default();
    let lines = line_map(&old, &new, args, &mut texts);
    let d = diff_program(&old, &new, &lines).context("the statement graphs are malformed")?;
    let mut functions = Vec::new();
    for ((name, fd), f) in d.functions.iter().zip(&new.functions) {
        let wanted = args.function.is_empty() || args.function.iter().any(|w| selects(f, w));
        if !wanted {
            continue;
        }
        let (status, reason, lines, without_line) = match fd {
            FunctionDiff::New => ("new", None, line_status(&new, f, |_| Behaviour::Changed, &mut texts), 0),
            FunctionDiff::NotCompared(why) => ("not compared", Some(why.clone()), Vec::new(), 0),
            FunctionDiff::Compared(b) => {
                let lines = line_status(&new, f, |v| b[v], &mut texts);
                let without_line = f
                    .stmts
                    .iter()
                    .zip(b)
                    .skip(2)
                    .filter(|(s, b)| b.differs() && (s.file.is_none() || s.line == 0))
                    .count();
                let differs = b.iter().any(|b| b.differs());
                (if differs { "differs" } else { "same" }, None, lines, without_line)
            }
        };
        if args.function.is_empty() && status == "same" {
            continue;
        }
        functions.push(FunctionReport {
            name: name.clone(),
            display_name: f.display_name.clone(),
            status,
            reason,
            lines,
            without_line,
        });
    }
    let report = Report {
        old: args.old.display().to_string(),
        new: args.new.display().to_string(),
        functions,
        removed: d.removed,
        changed_memory: d.changed_memory,
    };
    let compared = new
        .functions
        .iter()
        .filter(|f| args.function.is_empty() || args.function.iter().any(|w| selects(f, w)))
        .count();
    crate::output::print(&report, args.json, |out, r| write_text(out, r, compared))
}

/// Compiles `src` with the statement-graph dump on and reads the dump.
fn statements(args: &Args, src: &Path, base: &Path) -> Result<ModuleStatements> {
    let json = base.with_extension("json");
    let object = base.with_extension("o");
    let cc = match &args.cc {
        Some(cc) => cc.clone(),
        None => wrapper(is_cxx(src)),
    };
    let output = Command::new(&cc)
        .args(["-O0", "-g", "-fno-discard-value-names", "-c"])
        .arg(src)
        .arg("-o")
        .arg(&object)
        .args(&args.cflags)
        .env("PATHPROF_STATEMENT_GRAPHS", &json)
        .output()
        .with_context(|| format!("cannot run {}", cc.display()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let first = stderr.lines().find(|l| l.contains("error")).or_else(|| stderr.lines().next()).unwrap_or("");
        bail!("{}: does not compile: {}", src.display(), first.trim());
    }
    let text = std::fs::read(&json).with_context(|| {
        format!("{}: the compiler wrote no statement graphs (is {} pathprof's?)", src.display(), cc.display())
    })?;
    serde_json::from_slice(&text).with_context(|| format!("{}: unreadable statement graphs", src.display()))
}

fn is_cxx(src: &Path) -> bool {
    matches!(src.extension().and_then(|e| e.to_str()), Some("cc" | "cpp" | "cxx" | "C" | "c++" | "hpp" | "hh"))
}

/// `pathprof-clang` (or `++`) next to this executable, else by name on PATH.
fn wrapper(cxx: bool) -> PathBuf {
    let name = if cxx { "pathprof-clang++" } else { "pathprof-clang" };
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(name)))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Source texts by path, read once (lossily: a line is compared and shown, never rebuilt).
#[derive(Default)]
struct Texts {
    files: HashMap<String, Option<Vec<String>>>,
}

impl Texts {
    fn lines(&mut self, path: &str) -> Option<&Vec<String>> {
        self.files
            .entry(path.to_string())
            .or_insert_with(|| {
                let bytes = std::fs::read(path).ok()?;
                Some(String::from_utf8_lossy(&bytes).lines().map(str::to_string).collect())
            })
            .as_ref()
    }
}

/// The version's main source among the files its statements are in: the file compiled (`input`, when it is the
/// source), else the unit's `source_filename` (bitcode), else the file most statements are in.
fn main_file<'a>(unit: &'a ModuleStatements, input: &Path) -> Option<&'a str> {
    let input = std::fs::canonicalize(input).ok();
    let same = |f: &&String| input.is_some() && std::fs::canonicalize(f.as_str()).ok() == input;
    let named =
        |f: &&String| !unit.source.is_empty() && (**f == unit.source || f.ends_with(&format!("/{}", unit.source)));
    if let Some(f) = unit.files.iter().find(same).or_else(|| unit.files.iter().find(named)) {
        return Some(f);
    }
    let mut count: BTreeMap<u32, usize> = BTreeMap::new();
    for s in unit.functions.iter().flat_map(|f| &f.stmts) {
        if let Some(f) = s.file {
            *count.entry(f).or_default() += 1;
        }
    }
    let (&f, _) = count.iter().max_by_key(|&(&f, &n)| (n, std::cmp::Reverse(f)))?;
    unit.files.get(f as usize).map(String::as_str)
}

/// Corresponding lines: NEW's main file against OLD's, every other file against the same path in OLD, by a line
/// diff (Myers) of their texts. A file whose text cannot be read corresponds nowhere (everything in it is changed).
fn line_map(old: &ModuleStatements, new: &ModuleStatements, args: &Args, texts: &mut Texts) -> LineMap {
    let (old_main, new_main) = (main_file(old, &args.old), main_file(new, &args.new));
    let mut map = LineMap::default();
    for nf in &new.files {
        let of = if Some(nf.as_str()) == new_main {
            old_main
        } else {
            old.files.iter().find(|f| *f == nf).map(String::as_str)
        };
        let Some(of) = of else { continue };
        let Some(a) = texts.lines(of).map(|l| without_comments(l)) else { continue };
        let Some(b) = texts.lines(nf).map(|l| without_comments(l)) else { continue };
        let mut lines = vec![None; b.len()];
        for op in similar::capture_diff_slices(similar::Algorithm::Myers, &a, &b) {
            if let similar::DiffOp::Equal { old_index, new_index, len } = op {
                for k in 0..len {
                    lines[new_index + k] = Some((old_index + k + 1) as u32);
                }
            }
        }
        map.files.insert(nf.clone(), (of.to_string(), lines));
    }
    map
}

/// The lines as the line diff compares them: C/C++ comments removed and white space outside literals collapsed,
/// so that re-indenting or commenting a line does not make it a new one. (Precision only: statements correspond
/// only if they also compute the same thing.)
fn without_comments(lines: &[String]) -> Vec<String> {
    let mut in_block = false;
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        let mut kept = String::new();
        let mut chars = line.chars().peekable();
        let mut quote: Option<char> = None;
        while let Some(c) = chars.next() {
            if in_block {
                if c == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    in_block = false;
                    if !kept.ends_with(' ') {
                        kept.push(' ');
                    }
                }
                continue;
            }
            match quote {
                Some(q) => {
                    kept.push(c);
                    if c == '\\' {
                        kept.extend(chars.next());
                    } else if c == q {
                        quote = None;
                    }
                }
                None if c == '/' && chars.peek() == Some(&'/') => break,
                None if c == '/' && chars.peek() == Some(&'*') => {
                    chars.next();
                    in_block = true;
                }
                None if c == '"' || c == '\'' => {
                    quote = Some(c);
                    kept.push(c);
                }
                None if c.is_whitespace() => {
                    if !kept.ends_with(' ') {
                        kept.push(' ');
                    }
                }
                None => kept.push(c),
            }
        }
        out.push(kept.trim().to_string());
    }
    out
}

/// Per source line of `f` with a vertex that may differ, the worst behaviour of its vertices, in file and line
/// order.
fn line_status(
    unit: &ModuleStatements,
    f: &FunctionStatements,
    behaviour: impl Fn(usize) -> Behaviour,
    texts: &mut Texts,
) -> Vec<LineReport> {
    let mut worst: BTreeMap<(u32, u32), Behaviour> = BTreeMap::new();
    for (v, s) in f.stmts.iter().enumerate().skip(2) {
        let (Some(file), b) = (s.file, behaviour(v)) else { continue };
        if s.line == 0 || !b.differs() {
            continue;
        }
        let w = worst.entry((file, s.line)).or_insert(b);
        if b == Behaviour::Changed {
            *w = b;
        }
    }
    worst
        .into_iter()
        .map(|((file, line), behaviour)| {
            let path = unit.files.get(file as usize).cloned().unwrap_or_default();
            let text = texts.lines(&path).and_then(|l| l.get(line as usize - 1)).cloned().unwrap_or_default();
            LineReport { file: path, line, behaviour, text }
        })
        .collect()
}

fn write_text(out: &mut impl Write, r: &Report, compared: usize) -> io::Result<()> {
    let differing = r.functions.iter().filter(|f| f.status != "same").count();
    writeln!(out, "{} -> {}: {differing} of {compared} functions may behave differently", r.old, r.new)?;
    for f in &r.functions {
        let name = match f.display_name.as_str() {
            "" => f.name.clone(),
            d if d == f.name => f.name.clone(),
            d => format!("{d} ({})", f.name),
        };
        match (&f.reason, f.status) {
            (Some(why), _) => writeln!(out, "\n{name}: not compared ({why})")?,
            (None, "same") => writeln!(out, "\n{name}: behaves as before")?,
            (None, status) => writeln!(
                out,
                "\n{name}{}: {} line{} may behave differently{}",
                if status == "new" { " (new)" } else { "" },
                f.lines.len(),
                if f.lines.len() == 1 { "" } else { "s" },
                match f.without_line {
                    0 => String::new(),
                    n => format!(" (and {n} statement{} without a source line)", if n == 1 { "" } else { "s" }),
                }
            )?,
        }
        for l in &f.lines {
            let file = Path::new(&l.file).file_name().map_or(l.file.clone(), |n| n.to_string_lossy().into_owned());
            let tag = if l.behaviour == Behaviour::Changed { "changed " } else { "affected" };
            writeln!(out, "  {file}:{:<5} {tag}  {}", l.line, l.text.trim_end())?;
        }
    }
    if !r.removed.is_empty() {
        writeln!(out, "\nremoved: {}", r.removed.join(", "))?;
    }
    if !r.changed_memory.is_empty() {
        writeln!(
            out,
            "initial value changed, address taken (every read through a pointer may differ): {}",
            r.changed_memory.join(", ")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::without_comments;

    fn lines(text: &str) -> Vec<String> {
        without_comments(&text.lines().map(str::to_string).collect::<Vec<_>>())
    }

    #[test]
    fn comments_and_spacing_do_not_matter_but_literals_do() {
        assert_eq!(lines("  int x = 1;   // one\n\tint  y;"), ["int x = 1;", "int y;"]);
        assert_eq!(lines("a /* x */ b /* multi\n line */ c"), ["a b", "c"]);
        assert_eq!(lines("puts(\"// not a comment\");"), ["puts(\"// not a comment\");"]);
        assert_eq!(lines("puts(\"a  b\"); c = '\\'';  // q"), ["puts(\"a  b\"); c = '\\'';"]);
        assert_ne!(lines("puts(\"a  b\");"), lines("puts(\"a b\");"));
    }
}
