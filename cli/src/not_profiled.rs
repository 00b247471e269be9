//! The functions a profile cannot describe: the pass left them uninstrumented when their module was compiled
//! (a construct it does not handle, a path space too large for the mode), so they ran uncounted. Reports list
//! them, with the pass's reason, instead of letting their absence read as "never executed".

use pathprof_format::meta::{LeftOutFunction, ModuleMeta};
use pathprof_format::profile::Profile;
use serde::Serialize;
use std::io::{self, Write};

/// One left-out function of one module, as reports show it (`not_profiled` in JSON).
#[derive(Serialize)]
pub(crate) struct NotProfiled<'a> {
    /// Linkage name.
    pub name: &'a str,
    /// Source-level name (empty without debug info).
    pub display_name: &'a str,
    pub module: &'a str,
    pub file: &'a str,
    pub start_line: u32,
    /// Why the pass left it out.
    pub reason: &'a str,
}

/// The left-out functions of the modules (their metadata) that `function` selects (all without it), in order.
pub(crate) fn collect<'a>(
    modules: impl IntoIterator<Item = &'a ModuleMeta>,
    function: Option<&str>,
) -> Vec<NotProfiled<'a>> {
    let mut list = Vec::new();
    for meta in modules {
        for f in meta.left_out.iter().filter(|f| selects(function, f)) {
            list.push(NotProfiled {
                name: &f.name,
                display_name: &f.display_name,
                module: &meta.module_name,
                file: &f.file,
                start_line: f.start_line,
                reason: &f.reason,
            });
        }
    }
    list
}

/// The left-out functions of every module of `profile` that `function` selects (all without it).
pub(crate) fn of_profile<'a>(profile: &'a Profile, function: Option<&str>) -> Vec<NotProfiled<'a>> {
    collect(profile.modules.iter().map(|m| &m.meta), function)
}

/// Whether `--function NAME` names this left-out function (by linkage or display name, as for profiled ones).
fn selects(function: Option<&str>, f: &LeftOutFunction) -> bool {
    function.is_none_or(|n| n == f.name || n == f.display_name)
}

/// The text form: a heading, then one line per function and reason, naming how many modules left it out (an
/// inline function is left out in every module that has a copy).
pub(crate) fn write_text(out: &mut impl Write, list: &[NotProfiled], separate: bool) -> io::Result<()> {
    if list.is_empty() {
        return Ok(());
    }
    let mut lines: Vec<(&NotProfiled, usize)> = Vec::new();
    for f in list {
        match lines.iter_mut().find(|(g, _)| g.name == f.name && g.reason == f.reason) {
            Some((_, n)) => *n += 1,
            None => lines.push((f, 1)),
        }
    }
    if separate {
        writeln!(out)?;
    }
    let s = if lines.len() == 1 { "" } else { "s" };
    writeln!(
        out,
        "NOT PROFILED: {} function{s} left uninstrumented when compiled (their executions are not counted):",
        lines.len()
    )?;
    for (f, modules) in lines {
        let shown = if f.display_name.is_empty() { f.name } else { f.display_name };
        write!(out, "  {shown}")?;
        if shown != f.name {
            write!(out, " [{}]", f.name)?;
        }
        let file = if f.file.is_empty() { "<unknown file>" } else { f.file };
        write!(out, "  {file}:{}  (module {}", f.start_line, f.module)?;
        if modules > 1 {
            write!(out, " and {} more", modules - 1)?;
        }
        writeln!(out, "): {}", f.reason)?;
    }
    Ok(())
}
