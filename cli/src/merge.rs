//! `pathprof merge A B... -o OUT`: add up profiles of the same binary.

use crate::files;
use anyhow::{Context, Result};
use pathprof_format::profile::{self, MergeError};
use std::path::PathBuf;

/// Arguments of `pathprof merge`.
#[derive(clap::Args)]
pub struct Args {
    /// Profiles of the same binary.
    #[arg(required = true, value_name = "PROFILE")]
    inputs: Vec<PathBuf>,
    /// Where to write the sum (replaced atomically; may be one of the inputs).
    #[arg(short, long, value_name = "OUT")]
    output: PathBuf,
}

/// Reads every input (refusing on the first unreadable one), merges, and replaces the output.
pub fn run(args: &Args) -> Result<()> {
    let profiles = args.inputs.iter().map(|p| files::read_profile(p)).collect::<Result<Vec<_>>>()?;
    let merged = profile::merge(&profiles).map_err(|e| anyhow::anyhow!(describe(&e, &args.inputs)))?;
    files::write_atomically(&args.output, &profile::write(&merged)).context("cannot save the merged profile")
}

/// The merge error with input numbers replaced by file names.
fn describe(e: &MergeError, inputs: &[PathBuf]) -> String {
    let name =
        |i: usize| inputs.get(i.wrapping_sub(1)).map_or_else(|| format!("input {i}"), |p| p.display().to_string());
    let why = match e {
        MergeError::ModuleMissing { module, present, missing } => format!(
            "module {module} is in {} but not in {}: the profiles come from different binaries",
            name(*present),
            name(*missing)
        ),
        MergeError::DuplicateModule { module, input } => format!("module {module} appears twice in {}", name(*input)),
        MergeError::CounterCountMismatch { module, first, other, input } => {
            format!("module {module} has {first} counters in {} but {other} in {}", name(1), name(*input))
        }
        other => other.to_string(),
    };
    format!("cannot merge: {why}")
}
