//! Object placement files: a CSV that names a PE for objects by name.
//!
//! Header row, then one row per object. The object is named by the `name` column; its PE is
//! the `pe` column, or `to_pe` (the column `whatif lb --maps` writes, so a strategy's map can
//! be replayed as is). Other columns are ignored. `whatif inspect --objects` writes a trace's
//! recorded placement in this form (`object,name,pe`), e.g. to place the chares of a 1-PE
//! Charm++ log as a 2-PE run placed them.
//!
//! [`read_map`] reads such a file; [`PlacementFile::resolve`] applies it to a trace: objects
//! it names go to their PE, objects it does not name keep a fallback placement (the caller's,
//! usually the recorded one), and names that are not objects of the trace are counted.

use crate::LbError;
use std::collections::HashMap;
use std::path::Path;
use trace::Trace;

/// Rows a placement file may hold (bounds the memory a file can claim).
pub const MAX_ROWS: usize = 1 << 24;

/// Bytes a placement file may hold (a row is read whole: this bounds one long line too).
pub const MAX_BYTES: u64 = 1 << 30;

/// A placement read from a file: PE by object name, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlacementFile {
    /// The file, for messages.
    pub file: String,
    /// (object name, PE) in file order; a name appears once.
    pub rows: Vec<(String, u32)>,
}

/// A placement applied to one trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The PE of every object of the trace.
    pub pes: Vec<u32>,
    /// Objects the file does not name (they keep the fallback placement).
    pub unnamed: usize,
    /// The first of them, for messages.
    pub first_unnamed: Option<String>,
    /// Names in the file that are not objects of the trace.
    pub unknown: usize,
}

fn bad(file: &str, line: u64, expected: impl Into<String>) -> LbError {
    LbError::MapFile {
        file: file.to_string(),
        line,
        expected: expected.into(),
    }
}

/// Reads a placement file (see the module docs).
pub fn read_map(path: &Path) -> Result<PlacementFile, LbError> {
    let file = path.display().to_string();
    sim_core::inputs::register(path);
    let f = std::fs::File::open(path).map_err(|source| LbError::Read {
        what: file.clone(),
        source,
    })?;
    let bytes = f.metadata().map_or(0, |m| m.len());
    if bytes > MAX_BYTES {
        return Err(bad(
            &file,
            1,
            format!("at most {MAX_BYTES} bytes (one row per object), found {bytes}"),
        ));
    }
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(std::io::BufReader::new(f));
    let headers = rd
        .headers()
        .map_err(|e| bad(&file, 1, format!("a CSV header row ({e})")))?;
    let col = |n: &str| headers.iter().position(|h| h.trim() == n);
    let name_col = col("name").ok_or_else(|| {
        bad(
            &file,
            1,
            "a header with a `name` column (and `pe` or `to_pe`), e.g. `name,pe`",
        )
    })?;
    let pe_col = col("pe").or_else(|| col("to_pe")).ok_or_else(|| {
        bad(
            &file,
            1,
            "a header with a `pe` (or `to_pe`) column, e.g. `name,pe`",
        )
    })?;
    let mut rows = Vec::new();
    let mut seen: HashMap<String, u64> = HashMap::new();
    for rec in rd.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            bad(&file, line, format!("a CSV row ({e})"))
        })?;
        let line = rec.position().map_or(0, |p| p.line());
        if rows.len() >= MAX_ROWS {
            return Err(bad(
                &file,
                line,
                format!("at most {MAX_ROWS} rows (one per object)"),
            ));
        }
        let name = rec
            .get(name_col)
            .ok_or_else(|| bad(&file, line, "a `name` field"))?
            .to_string();
        let pe_text = rec
            .get(pe_col)
            .ok_or_else(|| bad(&file, line, "a `pe` field"))?
            .trim();
        let pe: u32 = pe_text.parse().map_err(|_| {
            bad(
                &file,
                line,
                format!("a PE number (0 to 4294967295), found `{pe_text}`"),
            )
        })?;
        if let Some(first) = seen.insert(name.clone(), line) {
            return Err(bad(
                &file,
                line,
                format!("each object once; `{name}` is also on line {first}"),
            ));
        }
        rows.push((name, pe));
    }
    Ok(PlacementFile { file, rows })
}

/// A trace's recorded placement as a placement file: `object,name,pe`, one row per object in
/// id order (names quoted as CSV requires).
pub fn recorded_csv(trace: &Trace) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut row = |r: [&str; 3]| w.write_record(r).expect("writing to memory");
    row(["object", "name", "pe"]);
    for (o, obj) in trace.objects.iter().enumerate() {
        row([&o.to_string(), &obj.name, &obj.recorded_pe.0.to_string()]);
    }
    w.into_inner().expect("writing to memory")
}

impl PlacementFile {
    /// The PE of every object of `trace` on a machine of `pes` PEs: the file's PE for the
    /// objects it names, `fallback[o]` for the others. A PE at or beyond `pes` is an error.
    pub fn resolve(&self, trace: &Trace, pes: u32, fallback: &[u32]) -> Result<Resolved, LbError> {
        let mut by_name: HashMap<&str, u32> = HashMap::with_capacity(self.rows.len());
        for (name, pe) in &self.rows {
            if *pe >= pes {
                return Err(LbError::Config(format!(
                    "{}: object `{name}` is placed on PE {pe}, but the machine has {pes} PEs (0 to {})",
                    self.file,
                    pes.saturating_sub(1)
                )));
            }
            by_name.insert(name, *pe);
        }
        let mut out = Resolved {
            pes: Vec::with_capacity(trace.objects.len()),
            unnamed: 0,
            first_unnamed: None,
            unknown: 0,
        };
        for (o, obj) in trace.objects.iter().enumerate() {
            match by_name.get(obj.name.as_str()) {
                Some(&pe) => out.pes.push(pe),
                None => {
                    out.unnamed += 1;
                    if out.first_unnamed.is_none() {
                        out.first_unnamed = Some(obj.name.clone());
                    }
                    out.pes.push(fallback.get(o).copied().unwrap_or(0));
                }
            }
        }
        // Names are unique in the file; object names may repeat in a trace, so count the
        // file's names no object carries.
        let names: std::collections::HashSet<&str> =
            trace.objects.iter().map(|o| o.name.as_str()).collect();
        out.unknown = self
            .rows
            .iter()
            .filter(|(n, _)| !names.contains(n.as_str()))
            .count();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::{ObjectId, PeId, TraceBuilder, TraceMeta};

    fn trace_of(names: &[&str]) -> Trace {
        let mut tb = TraceBuilder::new(TraceMeta {
            recorded_pes: 2,
            ..TraceMeta::default()
        });
        for (i, n) in names.iter().enumerate() {
            let o = tb.object(*n, PeId(i as u32 % 2));
            assert_eq!(o, ObjectId(i as u32));
        }
        tb.finish().unwrap()
    }

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("whatif-mapfile-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn names_pick_pes_and_the_rest_fall_back() {
        let p = write("ok.csv", "object,name,from_pe,to_pe\n0,b,0,1\n1,zz,0,0\n");
        let m = read_map(&p).unwrap();
        assert_eq!(m.rows, [("b".to_string(), 1), ("zz".to_string(), 0)]);
        let t = trace_of(&["a", "b", "c"]);
        let r = m.resolve(&t, 2, &[0, 0, 1]).unwrap();
        assert_eq!(r.pes, [0, 1, 1]);
        assert_eq!((r.unnamed, r.unknown), (2, 1));
        assert_eq!(r.first_unnamed.as_deref(), Some("a"));
        let e = m.resolve(&t, 1, &[0, 0, 0]).unwrap_err().to_string();
        assert!(
            e.contains("object `b` is placed on PE 1, but the machine has 1 PEs"),
            "{e}"
        );
        let _ = std::fs::remove_file(p);
    }

    #[test]
    fn the_recorded_placement_reads_back() {
        let t = trace_of(&["a", "b,\"c\"", "d"]);
        let text = recorded_csv(&t);
        assert_eq!(
            String::from_utf8(text.clone()).unwrap(),
            "object,name,pe\n0,a,0\n1,\"b,\"\"c\"\"\",1\n2,d,0\n"
        );
        let p = write("rec.csv", std::str::from_utf8(&text).unwrap());
        let r = read_map(&p).unwrap().resolve(&t, 2, &[1, 1, 1]).unwrap();
        assert_eq!((r.pes, r.unnamed, r.unknown), (vec![0, 1, 0], 0, 0));
        let _ = std::fs::remove_file(p);
    }

    #[test]
    fn bad_files_name_the_line_and_what_was_expected() {
        for (text, want) in [
            (
                "object,pe\n0,1\n",
                "line 1: expected a header with a `name` column",
            ),
            (
                "name,where\na,1\n",
                "line 1: expected a header with a `pe` (or `to_pe`) column",
            ),
            (
                "name,pe\na,1\nb,x\n",
                "line 3: expected a PE number (0 to 4294967295), found `x`",
            ),
            (
                "name,pe\na,1\na,0\n",
                "line 3: expected each object once; `a` is also on line 2",
            ),
            ("name,pe\na\n", "line 2: expected a `pe` field"),
        ] {
            let p = write("bad.csv", text);
            let e = read_map(&p).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            let _ = std::fs::remove_file(p);
        }
        let e = read_map(Path::new("/nonexistent/map.csv"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read /nonexistent/map.csv"), "{e}");
    }
}
