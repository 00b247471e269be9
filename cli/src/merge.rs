//! `pathprof merge A B... -o OUT`: add up profiles — of one binary, or of the programs of one build (a test
//! suite's `%p` files, which share a library's modules): module by module, as one shared file would hold them.
//!
//! Thousands of inputs (a fleet's profiles, a test suite's `%p` files) are merged in parallel with bounded
//! memory: the inputs are split into contiguous runs, one per worker thread (at most the number of CPUs); each
//! worker reads its files one at a time and folds each into its running sum, and the sums are then folded in
//! input order. At any moment a worker holds its sum and one input, so memory does not grow with the number of
//! inputs. Sums are associative and sparse entries keep first-appearance order, so the result is byte for byte
//! what merging all inputs at once gives ([`profile::merge`]). A progress line goes to stderr when it is a
//! terminal, nothing otherwise.

use crate::files;
use anyhow::{anyhow, Context, Result};
use pathprof_format::profile::{self, MergeError, Profile};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Arguments of `pathprof merge`.
#[derive(clap::Args)]
pub struct Args {
    /// Profiles of one build (one binary, or several programs sharing modules).
    #[arg(required = true, value_name = "PROFILE")]
    inputs: Vec<PathBuf>,
    /// Where to write the sum (replaced atomically; may be one of the inputs).
    #[arg(short, long, value_name = "OUT")]
    output: PathBuf,
}

/// Reads every input (refusing on the first unreadable or mismatched one), merges, and replaces the output.
pub fn run(args: &Args) -> Result<()> {
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    let progress = Progress::new(args.inputs.len(), std::io::stderr().is_terminal());
    let merged = merge_files(&args.inputs, workers, &progress);
    progress.finish();
    files::write_atomically(&args.output, &profile::write(&merged?)).context("cannot save the merged profile")
}

/// Merges `inputs` with up to `workers` threads, each folding a contiguous run of them (see the module docs).
fn merge_files(inputs: &[PathBuf], workers: usize, progress: &Progress) -> Result<Profile> {
    let per_worker = inputs.len().div_ceil(workers.max(1)).max(1);
    let runs: Vec<&[PathBuf]> = inputs.chunks(per_worker).collect();
    let sums: Vec<Result<Sum>> = if runs.len() <= 1 {
        runs.iter().map(|run| fold(run, progress)).collect()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = runs.iter().map(|run| s.spawn(move || fold(run, progress))).collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(anyhow!("a merge thread failed")))).collect()
        })
    };
    let mut total: Option<Sum> = None;
    for sum in sums {
        let sum = sum?;
        total = Some(match total {
            None => sum,
            Some(acc) => add(acc, sum)?,
        });
    }
    total.map(|s| s.profile).ok_or_else(|| anyhow!("cannot merge: {}", MergeError::NoInputs))
}

/// A running sum and the input its first module order came from (for messages).
struct Sum<'a> {
    profile: Profile,
    first: &'a Path,
}

/// Reads `run` one file at a time and folds each into the sum of the ones before.
fn fold<'a>(run: &'a [PathBuf], progress: &Progress) -> Result<Sum<'a>> {
    let mut sum: Option<Sum> = None;
    for path in run {
        let next = files::read_profile(path)?;
        sum = Some(match sum {
            // Merging one profile checks it on its own (a module twice) and folds repeated sparse entries.
            None => Sum { profile: merge(vec![next], &[path])?, first: path },
            Some(acc) => add(acc, Sum { profile: next, first: path })?,
        });
        progress.advance();
    }
    sum.ok_or_else(|| anyhow!("cannot merge: {}", MergeError::NoInputs))
}

/// `acc + next`, with errors naming the files.
fn add<'a>(acc: Sum<'a>, next: Sum<'a>) -> Result<Sum<'a>> {
    let names = [acc.first, next.first];
    Ok(Sum { profile: merge(vec![acc.profile, next.profile], &names)?, first: acc.first })
}

/// [`profile::merge`] of `profiles` (moved in, not copied), its errors naming input `i` by `names[i - 1]`.
fn merge(profiles: Vec<Profile>, names: &[&Path]) -> Result<Profile> {
    profile::merge(&profiles).map_err(|e| anyhow!(describe(&e, names)))
}

/// The merge error with input numbers replaced by file names.
fn describe(e: &MergeError, names: &[&Path]) -> String {
    let name =
        |i: usize| names.get(i.wrapping_sub(1)).map_or_else(|| format!("input {i}"), |p| p.display().to_string());
    let why = match e {
        MergeError::DuplicateModule { module, input } => format!("module {module} appears twice in {}", name(*input)),
        MergeError::CounterCountMismatch { module, first, other, input } => {
            format!("module {module} has {first} counters in {} but {other} in {}", name(1), name(*input))
        }
        other => other.to_string(),
    };
    format!("cannot merge: {why}")
}

/// A progress line on stderr (`merging: 1200/2000 profiles`), only when stderr is a terminal.
struct Progress {
    total: usize,
    done: AtomicUsize,
    shown: bool,
}

impl Progress {
    fn new(total: usize, shown: bool) -> Progress {
        Progress { total, done: AtomicUsize::new(0), shown: shown && total > 1 }
    }

    fn advance(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        // About a hundred updates whatever the number of inputs.
        if self.shown && (done == self.total || done.is_multiple_of(self.total.div_ceil(100).max(1))) {
            eprint!("\rmerging: {done}/{} profiles", self.total);
        }
    }

    /// Ends the progress line.
    fn finish(&self) {
        if self.shown {
            eprint!("\r\x1b[K");
            let _ = std::io::stderr().flush();
        }
    }
}
