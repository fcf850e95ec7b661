//! `--set key=value` parameters of the programs: declared with defaults and help, parsed with
//! units, unknown keys refused with the list of known ones.

use emulator::EmuError;
use sim_core::SimDuration;
use sim_core::units::{parse_bytes, parse_duration};
use std::collections::BTreeMap;

/// One parameter a program accepts.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    /// Its key.
    pub key: &'static str,
    /// Default value (as text).
    pub default: &'static str,
    /// What it means.
    pub help: &'static str,
}

/// Parsed parameters of one program.
#[derive(Debug)]
pub struct Params {
    program: &'static str,
    values: BTreeMap<&'static str, String>,
}

impl Params {
    /// Applies `sets` (`key=value`) over the defaults of `specs`.
    pub fn parse(
        program: &'static str,
        specs: &'static [ParamSpec],
        sets: &[(String, String)],
    ) -> Result<Params, EmuError> {
        let mut values: BTreeMap<&'static str, String> = specs
            .iter()
            .map(|s| (s.key, s.default.to_string()))
            .collect();
        for (k, v) in sets {
            let Some(spec) = specs.iter().find(|s| s.key == k) else {
                let known: Vec<&str> = specs.iter().map(|s| s.key).collect();
                return Err(EmuError::Param(format!(
                    "{program} has no parameter `{k}`; it has: {}",
                    known.join(", ")
                )));
            };
            values.insert(spec.key, v.clone());
        }
        Ok(Params { program, values })
    }
    /// The text of parameter `key` (its default when not set).
    pub fn text(&self, key: &str) -> &str {
        self.raw(key)
    }
    fn raw(&self, key: &str) -> &str {
        self.values
            .get(key)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("{} reads undeclared parameter {key}", self.program))
    }
    fn bad(&self, key: &str, expected: &str) -> EmuError {
        EmuError::Param(format!(
            "{} {key}={}: expected {expected}",
            self.program,
            self.raw(key)
        ))
    }
    /// An integer of at least `min`.
    pub fn u32_min(&self, key: &str, min: u32) -> Result<u32, EmuError> {
        self.raw(key)
            .parse::<u32>()
            .ok()
            .filter(|v| *v >= min)
            .ok_or_else(|| self.bad(key, &format!("an integer >= {min}")))
    }
    /// A duration with a unit (`10us`, `2.5ms`).
    pub fn duration(&self, key: &str) -> Result<SimDuration, EmuError> {
        parse_duration(self.raw(key))
            .map_err(|e| self.bad(key, &format!("a duration with a unit such as 10us ({e})")))
    }
    /// A size in bytes (`1KiB`, `64`).
    pub fn bytes(&self, key: &str) -> Result<u64, EmuError> {
        parse_bytes(self.raw(key)).map_err(|e| self.bad(key, &format!("a size such as 4KiB ({e})")))
    }
    /// Extents `AxBxC` (each >= 1).
    pub fn dims3(&self, key: &str) -> Result<[u32; 3], EmuError> {
        let parts: Vec<Option<u32>> = self
            .raw(key)
            .split('x')
            .map(|p| p.trim().parse::<u32>().ok().filter(|v| *v > 0))
            .collect();
        match parts.as_slice() {
            [Some(a), Some(b), Some(c)] => Ok([*a, *b, *c]),
            _ => Err(self.bad(key, "three positive extents such as 64x64x48")),
        }
    }
}

/// Formats a parameter table for `--help`.
pub fn describe(specs: &[ParamSpec]) -> String {
    specs
        .iter()
        .map(|s| format!("    {}={}  {}", s.key, s.default, s.help))
        .collect::<Vec<_>>()
        .join("\n")
}
