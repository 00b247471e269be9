//! What `show`, `decode` and `decode --hot-regions` do alike around their reports: choosing the functions
//! `--function` names, and printing the report as JSON or text.

use pathprof_format::meta::FunctionMeta;
use serde::Serialize;
use std::io::{self, BufWriter, StdoutLock, Write};

/// Whether `--function NAME` (`function`) selects `f`: by linkage or by source name; without it, every function.
pub fn selects(function: Option<&str>, f: &FunctionMeta) -> bool {
    match function {
        None => true,
        Some(n) => n == f.name || n == f.display_name,
    }
}

/// Prints `report` to stdout, as pretty JSON when `json`, else with `write_text`, and flushes: one place for
/// the JSON form every report shares.
pub fn print<R: Serialize>(
    report: &R,
    json: bool,
    write_text: impl FnOnce(&mut BufWriter<StdoutLock<'static>>, &R) -> io::Result<()>,
) -> anyhow::Result<()> {
    let mut out = BufWriter::new(io::stdout().lock());
    if json {
        let mut serializer = serde_json::Serializer::with_formatter(&mut out, Pretty::default());
        report.serialize(&mut serializer).map_err(io::Error::from)?;
        writeln!(out)?;
    } else {
        write_text(&mut out, report)?;
    }
    out.flush()?;
    Ok(())
}

/// serde_json's `PrettyFormatter` with its two-space indent, writing each line break and indent in one piece
/// rather than one write per level: the same bytes, but `decode --json` writes millions of indented lines
/// (1.1 GB for xz's path-mode test profile), and the per-level writes were a fifth of its time.
#[derive(Default)]
struct Pretty {
    depth: usize,
    has_value: bool,
}

/// A line break followed by the widest indent written in one piece; deeper levels continue with more spaces.
const BREAK: &[u8] = b"\n                                                                ";

impl Pretty {
    /// `,` unless `first`, then a line break and the indent of the current depth.
    fn new_line<W: ?Sized + Write>(&self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        let mut spaces = 2 * self.depth;
        let head = spaces.min(BREAK.len() - 1);
        w.write_all(&BREAK[..=head])?;
        spaces -= head;
        while spaces > 0 {
            let n = spaces.min(BREAK.len() - 1);
            w.write_all(&BREAK[1..=n])?;
            spaces -= n;
        }
        Ok(())
    }

    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth = self.depth.saturating_sub(1);
        if self.has_value {
            self.new_line(w, true)?;
        }
        w.write_all(bracket)
    }
}

impl serde_json::ser::Formatter for Pretty {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.new_line(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.new_line(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Pretty;
    use serde::Serialize;
    use serde_json::json;

    fn pretty(v: &serde_json::Value) -> String {
        let mut out = Vec::new();
        v.serialize(&mut serde_json::Serializer::with_formatter(&mut out, Pretty::default())).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn pretty_writes_what_serde_json_writes() {
        let mut deep = json!([1, {}, []]);
        for i in 0..40 {
            deep = json!({ "level": i, "inner": [deep, "x\n\"y\""], "empty": {} });
        }
        let values = [
            json!(null),
            json!([]),
            json!({}),
            json!({"a": [], "b": {}, "c": [1, 2.5, -3], "d": {"e": "f", "g": [{"h": true}]}}),
            deep,
        ];
        for v in &values {
            assert_eq!(pretty(v), serde_json::to_string_pretty(v).unwrap());
        }
    }
}
