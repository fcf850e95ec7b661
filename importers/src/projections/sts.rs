//! The `.sts` symbol table: version, PE count, chares (with the dimensions of chare arrays)
//! and entry methods.

use crate::ImportError;
use std::collections::{BTreeMap, HashMap};

/// The log layouts this importer reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    V3,
    V11,
}

impl Version {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Version::V3 => "3.0",
            Version::V11 => "11.0",
        }
    }
}

/// One entry method of the `.sts`.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    /// `Chare::entry` (the entry's name without its parameter list).
    pub(crate) name: String,
    /// Its chare's index in the `.sts`.
    pub(crate) chare: i64,
    /// It takes a `CkReductionMsg`: a reduction's result (a callback to a plain entry such
    /// as `Main::nextStep(CkReductionMsg*)`, a `redn_wrapper_*`) or a runtime's partial.
    pub(crate) takes_reduction: bool,
}

/// One chare of the `.sts`.
#[derive(Clone, Debug)]
pub(crate) struct Chare {
    pub(crate) name: String,
    /// Dimensions of a chare array's index (1..=6); -1 for every other kind of chare.
    /// Charm++ 11.0 logs write `ndims` index fields on a BEGIN_PROCESSING of an array
    /// element's entry, four otherwise (trace-projections.C, `LogEntry::pup`).
    pub(crate) ndims: i32,
}

pub(crate) struct Sts {
    pub(crate) version: Version,
    pub(crate) pes: u32,
    pub(crate) entries: BTreeMap<i64, Entry>,
    pub(crate) chares: HashMap<i64, Chare>,
}

impl Sts {
    /// The display name of entry `ep` (`ep<n>` when the `.sts` does not list it).
    pub(crate) fn entry_name(&self, ep: i64) -> String {
        self.entries
            .get(&ep)
            .map(|e| e.name.clone())
            .unwrap_or_else(|| format!("ep{ep}"))
    }
    /// The chare of entry `ep`, when listed.
    pub(crate) fn chare_of(&self, ep: i64) -> Option<(i64, &Chare)> {
        let c = self.entries.get(&ep)?.chare;
        self.chares.get(&c).map(|ch| (c, ch))
    }
    /// The array chare (and its dimensions) `ep` belongs to, if it is an array's entry.
    pub(crate) fn array_of(&self, ep: i64) -> Option<(i64, usize)> {
        match self.chare_of(ep) {
            Some((id, c)) if c.ndims >= 1 => Some((id, c.ndims as usize)),
            _ => None,
        }
    }
}

pub(crate) fn parse_sts(text: &str, file: &str) -> Result<Sts, ImportError> {
    let mut version = None;
    let mut pes = None;
    let mut chares: HashMap<i64, Chare> = HashMap::new();
    let mut eps: Vec<(i64, String, i64)> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let line = i as u64 + 1;
        let t: Vec<&str> = l.split_whitespace().collect();
        let err = |exp: &str| ImportError::syntax(file, line, exp, format!("`{l}`"));
        match t.first().copied() {
            Some("VERSION") => {
                version = Some(match t.get(1).copied() {
                    Some("3.0") => Version::V3,
                    Some("11.0") => Version::V11,
                    other => {
                        return Err(ImportError::Unsupported {
                            file: format!("{file}:{line}"),
                            what: format!(
                                "Projections log version {}; accepted versions are 3.0 and 11.0",
                                other.unwrap_or("(none)")
                            ),
                        });
                    }
                })
            }
            Some("PROCESSORS") => {
                pes = Some(
                    t.get(1)
                        .and_then(|v| v.parse::<u32>().ok())
                        .filter(|&n| n > 0 && n < 1 << 24)
                        .ok_or_else(|| err("`PROCESSORS <n>` with n >= 1"))?,
                )
            }
            Some("CHARE") => {
                let id = t
                    .get(1)
                    .and_then(|v| v.parse::<i64>().ok())
                    .ok_or_else(|| err("`CHARE <id> <name>`"))?;
                // 11.0: `CHARE <id> "<name>" <ndims>`; 3.0: `CHARE <id> <name>`.
                let mut rest = &t[2.min(t.len())..];
                let mut ndims = -1;
                if version == Some(Version::V11) && rest.len() > 1 {
                    ndims = rest[rest.len() - 1]
                        .parse::<i32>()
                        .ok()
                        .filter(|n| *n == -1 || (1..=6).contains(n))
                        .ok_or_else(|| {
                            err("`CHARE <id> \"<name>\" <ndims>` with ndims -1 or 1..6")
                        })?;
                    rest = &rest[..rest.len() - 1];
                }
                let name = unquote(rest);
                chares.insert(id, Chare { name, ndims });
            }
            Some("ENTRY") => {
                if t.len() < 6 || t[1] != "CHARE" {
                    return Err(err("`ENTRY CHARE <ep> <name> <chare> <msg>`"));
                }
                let ep = t[2]
                    .parse::<i64>()
                    .map_err(|_| err("`ENTRY CHARE <ep> ...` with a numeric ep"))?;
                let chare = t[t.len() - 2].parse::<i64>().map_err(|_| {
                    err("`ENTRY CHARE <ep> <name> <chare> <msg>` with a numeric chare")
                })?;
                let name = unquote(&t[3..t.len() - 2]);
                eps.push((ep, name, chare));
            }
            _ => {}
        }
    }
    let version = version
        .ok_or_else(|| ImportError::syntax(file, 1, "a `VERSION` line", "none in the file"))?;
    let pes = pes.ok_or_else(|| {
        ImportError::syntax(file, 1, "a `PROCESSORS <n>` line", "none in the file")
    })?;
    let entries = eps
        .into_iter()
        .map(|(ep, name, chare)| {
            let (short, params) = name.split_once('(').unwrap_or((&name, ""));
            let takes_reduction = params.contains("CkReductionMsg");
            let short = short.trim().to_string();
            let full = match chares.get(&chare) {
                Some(c) => format!("{}::{short}", c.name),
                None => short,
            };
            (
                ep,
                Entry {
                    name: full,
                    chare,
                    takes_reduction,
                },
            )
        })
        .collect();
    Ok(Sts {
        version,
        pes,
        entries,
        chares,
    })
}

/// Joins a name's tokens and drops surrounding quotes (11.0 quotes names, 3.0 does not).
fn unquote(t: &[&str]) -> String {
    t.join(" ").trim_matches('"').to_string()
}
