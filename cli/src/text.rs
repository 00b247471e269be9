//! Pieces of the text output shared by `show`, `decode` and `decode --hot-regions`, so the three print
//! functions and paths the same way.

use std::io::{self, Write};

/// Writes a function's header line (`display [linkage]  file:line  (module M, MODE mode)`) and returns the
/// file name to print source locations with.
pub fn function_header<'a>(
    out: &mut impl Write,
    name: &str,
    display_name: &str,
    file: &'a str,
    start_line: u32,
    module: &str,
    mode: &str,
) -> io::Result<&'a str> {
    let shown = if display_name.is_empty() { name } else { display_name };
    let file = if file.is_empty() { "<unknown file>" } else { file };
    write!(out, "{shown}")?;
    if shown != name {
        write!(out, " [{name}]")?;
    }
    writeln!(out, "  {file}:{start_line}  (module {module}, {mode} mode)")?;
    Ok(file)
}

/// Writes a path's blocks, one per line, with their compressed source line ranges.
pub fn path_steps<'s>(
    out: &mut impl Write,
    file: &str,
    steps: impl IntoIterator<Item = (u32, &'s [u32])>,
) -> io::Result<()> {
    for (block, lines) in steps {
        if lines.is_empty() {
            writeln!(out, "        bb{block:<4} (no line info)")?;
        } else {
            writeln!(out, "        bb{block:<4} {file}:{}", line_ranges(lines))?;
        }
    }
    Ok(())
}

/// Writes an interprocedural (context or piecewise) path's steps as `decode` prints them, for `decode`, `top` and
/// `diff` alike: the context-prefix and active suffix headed when there is a prefix, calls, returns and elided
/// calls marked, each block as `function:bbN file:lines`. `names` gives a linkage name's display name and its
/// source file (empty when unknown), looked up once per step.
pub fn interproc_steps<'s>(
    out: &mut impl Write,
    steps: impl IntoIterator<Item = crate::decode::report::Step<'s>>,
    context_steps: usize,
    names: impl Fn(&'s str) -> (&'s str, &'s str),
) -> io::Result<()> {
    let context = context_steps;
    for (i, s) in steps.into_iter().enumerate() {
        if i == 0 && context > 0 {
            writeln!(out, "      context-prefix (ran in earlier paths):")?;
        }
        if i == context && context > 0 {
            writeln!(out, "      active suffix:")?;
        }
        let (shown, file) = names(s.function);
        match s.via {
            Some("call") => writeln!(out, "        -> call {shown}")?,
            Some("return") => writeln!(out, "        <- return to {shown}")?,
            Some("summary") => writeln!(
                out,
                "        (recursive call elided: the callee's activation is counted as paths of its own)"
            )?,
            Some("summary_cut") => writeln!(
                out,
                "        (call cut by the path budget, elided: the callee's paths are counted separately)"
            )?,
            Some("loop_restart") if i == context => writeln!(out, "        (starts at loop header)")?,
            _ => {}
        }
        let lines = match file {
            _ if s.lines.is_empty() => "(no line info)".to_string(),
            "" => format!("<unknown file>:{}", line_ranges(s.lines)),
            file => format!("{file}:{}", line_ranges(s.lines)),
        };
        writeln!(out, "        {shown}:bb{:<4} {lines}", s.block)?;
    }
    Ok(())
}

/// `45,46,47,48,52` → `45-48,52`: runs of consecutive lines, in the given order.
pub fn line_ranges(lines: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let mut j = i;
        while j + 1 < lines.len() && lines[j].checked_add(1) == Some(lines[j + 1]) {
            j += 1;
        }
        parts.push(if j > i { format!("{}-{}", lines[i], lines[j]) } else { lines[i].to_string() });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::line_ranges;

    #[test]
    fn line_ranges_compress_consecutive_runs() {
        assert_eq!(line_ranges(&[]), "");
        assert_eq!(line_ranges(&[45]), "45");
        assert_eq!(line_ranges(&[45, 46, 47, 48]), "45-48");
        assert_eq!(line_ranges(&[45, 46, 47, 48, 52, 53, 60]), "45-48,52-53,60");
        assert_eq!(line_ranges(&[48, 45, 46]), "48,45-46");
        assert_eq!(line_ranges(&[u32::MAX, 0]), format!("{},0", u32::MAX));
    }
}
