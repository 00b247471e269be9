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
