//! `pathprof`: inspect and combine `.pathprof` profiles.
//!
//! `main` only parses the command line and dispatches; each subcommand is one `run` function in its own module.
//!
//! # Exit status
//! 0 on success (also when stdout is closed early, as in `pathprof show p | head`), 2 on any error, with exactly
//! one line on stderr: `pathprof: error: ` and the error's context chain joined with `": "`. Usage errors follow
//! the same rule; `--help` and `--version` exit 0.

mod coverage;
mod decode;
mod diff;
mod diff_program;
mod export;
mod files;
mod html;
mod icache;
mod merge;
mod not_profiled;
mod output;
mod program_paths;
mod show;
mod sources;
mod text;
mod top;
mod trace;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Exact edge and path profiles (Ball & Larus).
#[derive(Parser)]
#[command(name = "pathprof", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print every function's entry, block and edge counts.
    Show(show::Args),
    /// Add up profiles of the same binary into one.
    Merge(merge::Args),
    /// List the executed paths of a path profile, hottest first, with their source lines.
    Decode(decode::Args),
    /// Write the counts in a compiler's profile format (LLVM sample-profile text for -fprofile-sample-use).
    Export(export::Args),
    /// Rank the hottest paths (or functions) of the whole program.
    Top(top::Args),
    /// Compare the path spectra of two runs of one build: new, vanished and shifted paths.
    Diff(diff::Args),
    /// Which statements of a new version of a source file may behave differently from the old one's.
    #[command(name = "diff-program")]
    DiffProgram(diff_program::Args),
    /// Path, line and branch coverage per function, with an lcov export.
    Coverage(coverage::Args),
    /// Write a static HTML site: functions ranked, sources annotated with counts, hot paths highlighted.
    Report(html::Args),
    /// Regenerate the exact block sequence of every thread from a trace-mode run's trace.
    Trace(trace::Args),
    /// Instruction-cache accesses and misses of the plain binary, from an icache-mode trace.
    Icache(icache::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let result = match cli.command {
        Command::Show(args) => show::run(&args),
        Command::Merge(args) => merge::run(&args),
        Command::Decode(args) => decode::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Top(args) => top::run(&args),
        Command::Diff(args) => diff::run(&args),
        Command::DiffProgram(args) => diff_program::run(&args),
        Command::Coverage(args) => coverage::run(&args),
        Command::Report(args) => html::run(&args),
        Command::Trace(args) => trace::run(&args),
        Command::Icache(args) => icache::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            // `{:#}` joins the context chain with ": "; keep it on one line whatever the paths contain.
            eprintln!("pathprof: error: {}", one_line(&format!("{err:#}")));
            ExitCode::from(2)
        }
    }
}

/// `--help`/`--version` print normally and exit 0; every real usage error becomes one line and exit 2.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        // Printing help to a closed stdout is not worth an error.
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        eprintln!("pathprof: error: a subcommand is required: show, merge, decode or export (see 'pathprof --help')");
        return ExitCode::from(2);
    }
    // clap's message is a paragraph ("error: ...:\n  <FILE>") followed by tips and usage: keep the paragraph.
    let text = e.to_string();
    let paragraph: Vec<&str> =
        text.lines().map(str::trim).skip_while(|l| l.is_empty()).take_while(|l| !l.is_empty()).collect();
    let message = paragraph.join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    let message = if message.is_empty() { "invalid command line" } else { message };
    eprintln!("pathprof: error: {} (see 'pathprof --help')", one_line(message));
    ExitCode::from(2)
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().filter_map(|c| c.downcast_ref::<std::io::Error>()).any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}
