//! `pathprof export --format=sample-text FILE -o OUT`: feed the exact counts to a compiler's PGO.
//!
//! # Sample-profile text (`--format=sample-text`)
//!
//! Writes LLVM's sample-profile *text* format, the one `clang -fprofile-sample-use=OUT` reads directly and
//! `llvm-profdata show --sample` prints (no `llvm-profdata merge` step needed):
//!
//! ```text
//! main:5447:1
//!  1: 1001
//!  2: 1000
//!  3: 334
//! by3:334:334
//!  0: 334
//! ```
//!
//! One record per function: `NAME:TOTAL:HEAD`, then one line ` OFFSET: SAMPLES` per source line (one leading
//! space, offsets ascending). Records are ordered by descending `TOTAL`, ties by name (as `llvm-profdata`
//! writes them). The numbers are the exact counts of `pathprof show` (`function_edge_counts`: measured by
//! chord counters in edge mode, derived from fewer counters in block mode — these records need only block and
//! entry counts — and from the path counts in path mode), not samples:
//!
//! - `NAME` is the function's linkage (mangled) name, which is what clang's sample loader matches.
//! - `HEAD` (head samples) is the entry count: how often the function was called.
//! - `OFFSET` is the source line minus the function's `start_line` (its `DISubprogram` line), modulo 2^16,
//!   exactly as LLVM computes `FunctionSamples::getOffset` from an instruction's debug location. Both come from
//!   the debug info the pass recorded at instrumentation time (`FunctionMeta::start_line`, `BlockMeta::lines`),
//!   so the using build must compile the same sources (any change of line numbers makes the profile stale).
//! - `SAMPLES` of a line is the *maximum* count among the blocks whose instructions carry that line: a line
//!   split across blocks (a `for` header: init, condition, increment) executes as often as its most executed
//!   block, and that is also how the sample loader reads a line (a block's weight is the largest weight of its
//!   instructions). Lines of blocks that never ran are written with 0 samples: the profile is exact, so "never
//!   executed" is known, not merely unsampled.
//! - `TOTAL` is the sum of the function's body samples.
//!
//! What is not written, and why:
//!
//! - **Discriminators** (`OFFSET.DISCRIMINATOR`): the profile records lines per block, not the discriminators
//!   LLVM's `AddDiscriminators` gives to the second and later blocks of one line, so every line is written
//!   without one (discriminator 0). clang assigns discriminators whenever it loads a sample profile (with or
//!   without `-fdebug-info-for-profiling`), so a line's samples apply to its instructions with discriminator 0,
//!   those of the first block (in IR order) holding the line; the loader infers the line's other blocks from
//!   the flow, and a record whose discriminator-0 instructions the early -O2 simplification removed (a `for`
//!   header's init) is not applied (`-sample-profile-check-record-coverage` reports it: 7 of main's 11 records
//!   in `test-suite/programs/loops.c`). Recording base discriminators per block in the pass would remove this
//!   approximation.
//! - **Call targets** (` OFFSET: SAMPLES callee:count ...`): the metadata has no call sites per line, so no
//!   call targets are written. Writing them would need the pass to record, per block, the source line and
//!   callee linkage name of each direct call (the count is then the block's count); indirect calls would need
//!   value profiling.
//! - **Inlined call sites** (nested records): the profile is collected at the start of the optimisation
//!   pipeline, before any inlining, so every count belongs to the function that contains it in the source. The
//!   sample loader gets a flat profile and makes its own inlining decisions (with the entry counts and the
//!   profile summary it computes).
//!
//! Functions are skipped rather than exported wrongly:
//!
//! - a function whose counts are not exact (`pathprof show` marks it `INEXACT`) is skipped with one warning
//!   line each (`pathprof: warning: not exporting NAME (module M): ...`);
//! - a function that ran but has no line information is not exported (there is no line to put its counts on,
//!   and clang's loader ignores a record without body samples, whatever its head samples): silently for
//!   compiler-generated functions (e.g. C++ `_GLOBAL__sub_I_*`, whose instructions all have line 0), with a
//!   warning when the function has no debug information at all (built with `-g0`);
//! - a function that never ran (all counts zero) is omitted silently;
//! - a name the text format cannot hold (empty, starting with `#` or whitespace, or with control characters)
//!   is skipped with a warning.
//!
//! The same linkage name in several modules (an inline C++ function instrumented in several translation units,
//! or one binary's modules merged) is one record: head, per-line samples and totals are summed, since the
//! sample loader matches by name only. If the copies come from different source locations (two `static`
//! functions with the same name), the sum is still written, with a warning: compile both builds with
//! `-funique-internal-linkage-names` to keep them apart. If any copy of a name is skipped (inexact, or ran
//! without line information), the name is not exported at all (a partial sum would be wrong). A profile with
//! nothing to export is an error (an empty file is not a sample profile clang accepts).
//!
//! `-o -` writes to stdout; otherwise the output file is replaced atomically.
//!
//! Using it: `clang -O2 -gline-tables-only -fdebug-info-for-profiling -fprofile-sample-use=OUT ...`. The
//! loader then sets each profiled function's `function_entry_count` to HEAD + 1 and branch weights from the
//! line samples; `-Rpass-analysis=sample-profile` shows "Applied N samples from profile (offset: K)" remarks
//! and `-mllvm -sample-profile-check-record-coverage=N` warns about records the IR did not use.
//!
//! # Hot regions (`pathprof decode --hot-regions`)
//!
//! The path-based hand-off, for superblock/trace formation (`cli/src/decode/hot_regions.rs`): per path-mode
//! function, the hottest Ball–Larus paths whose counts together reach `--coverage P` percent (default 90) of
//! the function's path executions (its positive path counts), each with its block sequence and source lines,
//! count, share, cumulative share and whether it is a loop body (it ends by taking a back edge into the block
//! it starts at: one whole iteration, from the header). `--json` for tools; `--top N` caps the regions.

use crate::files;
use anyhow::{bail, Context, Result};
use pathprof_analysis::{FunctionCounts, ModuleCounts};
use pathprof_format::meta::FunctionMeta;
use pathprof_format::profile::Profile;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::PathBuf;

/// Export formats.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// LLVM's sample-profile text format, for `clang -fprofile-sample-use`.
    #[value(name = "sample-text")]
    SampleText,
}

/// Arguments of `pathprof export`.
#[derive(clap::Args)]
pub struct Args {
    /// The profile to export (edge, block or path mode).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The output format.
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: Format,
    /// Where to write the result (replaced atomically); `-` for stdout.
    #[arg(short, long, value_name = "OUT")]
    output: PathBuf,
}

/// One function record of a sample profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionSamples {
    /// Linkage name.
    pub name: String,
    /// Sum of the body samples.
    pub total: u64,
    /// Entry count.
    pub head: u64,
    /// Line offset → samples.
    pub body: BTreeMap<u32, u64>,
}

/// Reads the profile, converts it and writes the result; warnings go to stderr, one line each.
pub fn run(args: &Args) -> Result<()> {
    let profile = files::read_profile(&args.file)?;
    let Format::SampleText = args.format;
    let (functions, warnings) =
        sample_profile(&profile).with_context(|| format!("exporting {}", args.file.display()))?;
    for w in &warnings {
        eprintln!("pathprof: warning: {}", w.replace(['\n', '\r'], " "));
    }
    if functions.is_empty() {
        bail!("nothing to export: {} has no function with exact, nonzero counts and source lines", args.file.display());
    }
    let text = sample_text(&functions);
    if args.output.as_os_str() == "-" {
        let mut out = io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
        Ok(())
    } else {
        files::write_atomically(&args.output, text.as_bytes()).context("cannot save the sample profile")
    }
}

/// Per linkage name, while the modules are read.
#[derive(Default)]
struct Acc {
    head: u64,
    body: BTreeMap<u32, u64>,
    /// Distinct (file, start line) of the copies that contributed counts.
    origins: Vec<(String, u32)>,
    /// A copy was skipped: the name is not exported.
    skipped: bool,
}

/// The sample-profile records of every exportable function (hottest first) and the warnings about the others.
/// Errors only when a function's counts cannot be derived at all (a corrupt profile).
pub fn sample_profile(profile: &Profile) -> Result<(Vec<FunctionSamples>, Vec<String>)> {
    let mut order: Vec<String> = Vec::new();
    let mut accs: HashMap<String, Acc> = HashMap::new();
    let mut warnings = Vec::new();
    for module in &profile.modules {
        let mname = &module.meta.module_name;
        let module_counts = ModuleCounts::new(module);
        for (index, f) in module.meta.functions.iter().enumerate() {
            let counts = module_counts.function(index)?;
            if !accs.contains_key(&f.name) {
                order.push(f.name.clone());
            }
            let acc = accs.entry(f.name.clone()).or_default();
            match add_copy(acc, f, &counts) {
                Ok(Copy::Added | Copy::NeverRan) => {}
                Ok(Copy::NoLines) => {
                    // Compiler-generated functions (all lines 0) are dropped silently; -g0 code is worth a word.
                    if f.file.is_empty() {
                        warnings.push(format!(
                            "not exporting {} (module {mname}): it has no debug information (compile with -g or \
                             -gline-tables-only)",
                            f.name
                        ));
                    }
                    acc.skipped = true;
                }
                Err(why) => {
                    warnings.push(format!("not exporting {} (module {mname}): {why}", f.name));
                    acc.skipped = true;
                }
            }
        }
    }

    let mut out = Vec::new();
    for name in order {
        let Some(acc) = accs.remove(&name) else { continue };
        if acc.skipped {
            continue;
        }
        if !representable(&name) {
            warnings.push(format!("not exporting {name:?}: the sample-profile text format cannot hold this name"));
            continue;
        }
        let Some(total) = acc.body.values().try_fold(0u64, |t, &n| t.checked_add(n)) else {
            warnings.push(format!("not exporting {name}: its total sample count exceeds 2^64-1"));
            continue;
        };
        if total == 0 {
            continue; // never ran (the sample loader ignores records without body samples)
        }
        if acc.origins.len() > 1 {
            let places: Vec<String> = acc.origins.iter().map(|(file, line)| format!("{file}:{line}")).collect();
            warnings.push(format!(
                "{name} is defined in several places ({}): their samples are summed under one name, as the sample \
                 loader matches by name only (-funique-internal-linkage-names keeps static functions apart)",
                places.join(", ")
            ));
        }
        out.push(FunctionSamples { name, total, head: acc.head, body: acc.body });
    }
    out.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.name.cmp(&b.name)));
    Ok((out, warnings))
}

/// What [`add_copy`] did.
enum Copy {
    /// The copy's counts were added.
    Added,
    /// The copy never ran: nothing to add.
    NeverRan,
    /// The copy ran but has no source lines to put its counts on (the name cannot be exported).
    NoLines,
}

/// Adds one module's copy of a function to the record of its name, or says why the name cannot be exported.
fn add_copy(acc: &mut Acc, f: &FunctionMeta, counts: &FunctionCounts) -> Result<Copy, String> {
    let blocks = exact_blocks(counts)?;
    let entry = counts.entry.unwrap_or(0);
    if entry == 0 && blocks.iter().all(|&c| c == 0) {
        return Ok(Copy::NeverRan);
    }
    let lines = line_samples(f, &blocks);
    if lines.is_empty() {
        return Ok(Copy::NoLines);
    }
    let overflow = || "its summed counts exceed 2^64-1".to_string();
    let head = acc.head.checked_add(entry).ok_or_else(overflow)?;
    let mut body = acc.body.clone();
    for (off, n) in lines {
        let slot = body.entry(off).or_insert(0);
        *slot = slot.checked_add(n).ok_or_else(overflow)?;
    }
    acc.head = head;
    acc.body = body;
    let origin = (f.file.clone(), f.start_line);
    if !acc.origins.contains(&origin) {
        acc.origins.push(origin);
    }
    Ok(Copy::Added)
}

/// Every block count, or why they cannot be exported.
fn exact_blocks(c: &FunctionCounts) -> Result<Vec<u64>, String> {
    if !c.exact {
        let reasons: Vec<String> = c.inexact_reasons.iter().map(ToString::to_string).collect();
        return Err(format!("its counts are not exact ({})", reasons.join("; ")));
    }
    c.blocks.iter().copied().collect::<Option<Vec<u64>>>().ok_or_else(|| "a block count is not exact".into())
}

/// Line offset → the largest count of a block with that line (empty without line information).
fn line_samples(f: &FunctionMeta, blocks: &[u64]) -> BTreeMap<u32, u64> {
    let mut m: BTreeMap<u32, u64> = BTreeMap::new();
    for (b, &count) in f.blocks.iter().zip(blocks) {
        for &line in &b.lines {
            // LLVM: (DIL->getLine() - SP->getLine()) & 0xffff.
            let off = line.wrapping_sub(f.start_line) & 0xffff;
            let slot = m.entry(off).or_insert(0);
            *slot = (*slot).max(count);
        }
    }
    m
}

/// Whether `NAME:TOTAL:HEAD` parses back to `name`: one line that is not a comment (`#`) or a body line
/// (leading whitespace).
fn representable(name: &str) -> bool {
    !name.is_empty() && !name.starts_with(['#', ' ', '\t']) && !name.chars().any(char::is_control)
}

/// The records in LLVM's sample-profile text format.
pub fn sample_text(functions: &[FunctionSamples]) -> String {
    let mut s = String::new();
    for f in functions {
        // Writing to a String cannot fail.
        let _ = writeln!(s, "{}:{}:{}", f.name, f.total, f.head);
        for (off, n) in &f.body {
            let _ = writeln!(s, " {off}: {n}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_layout() {
        let f = |name: &str, head, body: &[(u32, u64)]| FunctionSamples {
            name: name.into(),
            total: body.iter().map(|x| x.1).sum(),
            head,
            body: body.iter().copied().collect(),
        };
        let text = sample_text(&[f("main", 1, &[(3, 334), (1, 1001), (12, 0)]), f("_Z3by3v", 334, &[(0, 334)])]);
        assert_eq!(text, "main:1335:1\n 1: 1001\n 3: 334\n 12: 0\n_Z3by3v:334:334\n 0: 334\n");
    }

    #[test]
    fn names_that_the_text_format_cannot_hold() {
        for good in ["main", "_ZN1a1bEv", "operator:x", "a b"] {
            assert!(representable(good), "{good}");
        }
        for bad in ["", "#x", " x", "\tx", "a\nb", "\u{1}foo"] {
            assert!(!representable(bad), "{bad:?}");
        }
    }
}
