//! The MPI point-to-point protocol: when a transfer starts, when a send completes, what goes
//! on the wire.
//!
//! An [`MpiProtocol`] is three thresholds and a header size. A message of `n` payload bytes
//! - is **eager** when `n <= eager_max_bytes`: its transfer starts when the send is issued
//!   (the data waits at the receiver for its receive); otherwise it is a **rendezvous**
//!   message: the transfer starts when both the send and the matching receive are posted;
//! - is **detached** when `n <= detached_max_bytes`: the send completes at once (a blocking
//!   send returns, a wait on a non-blocking send returns); otherwise the send completes when
//!   the transfer ends (the sender is held until then);
//! - occupies `n + envelope_bytes` on the wire.
//!
//! A receive always completes when its transfer ends.
//!
//! Profiles, each naming its source:
//!
//! | profile | eager | detached | envelope | source |
//! |---|---|---|---|---|
//! | `simgrid` | none (every transfer waits for its receive) | below 64 KiB (`n < 65536`) | 16 B | SimGrid 3.32 defaults: `smpi/async-small-thresh` = 0, `smpi/send-is-detached-thresh` = 65536 (`src/smpi/internals/smpi_config.cpp`); the 16-byte envelope (`payload_size = size + 16`) and both tests (`size < threshold`) in `Request::start`, `src/smpi/mpi/smpi_request.cpp` |
//! | `openmpi` | up to 64 KiB | up to 64 KiB | 0 B | Open MPI's ob1 PML over TCP: `btl_tcp_eager_limit` = 65536; a message above it is sent by rendezvous and `MPI_Send` returns when its data has left. The RTS/CTS round trip of a real rendezvous is not modelled (the transfer starts at the later of send and receive) |
//! | `eager` | all | all | 0 B | whatif before the protocol model: every transfer starts at its send and no send ever blocks |
//!
//! A profile's values can be changed: `simgrid:detached=1MiB`, `openmpi:eager=12KiB,detached=12KiB`,
//! `eager:envelope=16` (keys `eager`, `detached`, `envelope`; `eager` and `detached` take a
//! size, `none` or `all`).

use std::fmt;
use std::str::FromStr;

/// How point-to-point messages travel (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpiProtocol {
    /// The profile this started from (for display).
    pub profile: Profile,
    /// Largest eager payload: `None` means no message is eager.
    pub eager_max_bytes: Option<u64>,
    /// Largest payload whose send completes at once: `None` means every send completes only
    /// when its transfer ends.
    pub detached_max_bytes: Option<u64>,
    /// Bytes each message adds on the wire (headers).
    pub envelope_bytes: u64,
}

/// A named set of protocol values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// SimGrid 3.32's defaults (what `smpirun -replay` does).
    SimGrid,
    /// Open MPI ob1 over TCP, approximately.
    OpenMpi,
    /// No protocol: transfers start at the send, sends never block.
    Eager,
}

impl Profile {
    fn name(self) -> &'static str {
        match self {
            Profile::SimGrid => "simgrid",
            Profile::OpenMpi => "openmpi",
            Profile::Eager => "eager",
        }
    }
}

/// SimGrid 3.32's `smpi/send-is-detached-thresh`.
pub const SIMGRID_DETACHED_THRESH: u64 = 65536;
/// SimGrid's MPI envelope (tag, destination, communicator) added to every payload.
pub const SIMGRID_ENVELOPE_BYTES: u64 = 16;
/// Open MPI's `btl_tcp_eager_limit`.
pub const OPENMPI_TCP_EAGER_LIMIT: u64 = 65536;

impl MpiProtocol {
    /// SimGrid 3.32's defaults.
    pub const SIMGRID: MpiProtocol = MpiProtocol {
        profile: Profile::SimGrid,
        eager_max_bytes: None,
        detached_max_bytes: Some(SIMGRID_DETACHED_THRESH - 1),
        envelope_bytes: SIMGRID_ENVELOPE_BYTES,
    };
    /// Open MPI-like (ob1 over TCP).
    pub const OPENMPI: MpiProtocol = MpiProtocol {
        profile: Profile::OpenMpi,
        eager_max_bytes: Some(OPENMPI_TCP_EAGER_LIMIT),
        detached_max_bytes: Some(OPENMPI_TCP_EAGER_LIMIT),
        envelope_bytes: 0,
    };
    /// whatif's behaviour before the protocol model.
    pub const EAGER: MpiProtocol = MpiProtocol {
        profile: Profile::Eager,
        eager_max_bytes: Some(u64::MAX),
        detached_max_bytes: Some(u64::MAX),
        envelope_bytes: 0,
    };

    /// Whether a message of `bytes` starts its transfer at the send.
    pub fn is_eager(&self, bytes: u64) -> bool {
        self.eager_max_bytes.is_some_and(|m| bytes <= m)
    }
    /// Whether a send of `bytes` completes at once.
    pub fn is_detached(&self, bytes: u64) -> bool {
        self.detached_max_bytes.is_some_and(|m| bytes <= m)
    }
    /// Bytes on the wire for a payload of `bytes`.
    pub fn wire_bytes(&self, bytes: u64) -> u64 {
        bytes.saturating_add(self.envelope_bytes)
    }
    /// Whether some message can be a rendezvous or a send can block (the trace then needs
    /// network blocks).
    pub fn is_plain_eager(&self) -> bool {
        self.eager_max_bytes == Some(u64::MAX) && self.detached_max_bytes == Some(u64::MAX)
    }
    fn base(profile: Profile) -> MpiProtocol {
        match profile {
            Profile::SimGrid => MpiProtocol::SIMGRID,
            Profile::OpenMpi => MpiProtocol::OPENMPI,
            Profile::Eager => MpiProtocol::EAGER,
        }
    }
}

/// `none`, `all` or a size: the largest payload of a class.
fn limit(key: &str, v: &str) -> Result<Option<u64>, String> {
    match v.trim() {
        "none" => Ok(None),
        "all" => Ok(Some(u64::MAX)),
        t => sim_core::units::parse_bytes(t)
            .map(Some)
            .map_err(|e| format!("`{key}={v}`: {e} (or `none`, `all`)")),
    }
}

fn show_limit(v: Option<u64>) -> String {
    match v {
        None => "none".into(),
        Some(u64::MAX) => "all".into(),
        Some(b) => b.to_string(),
    }
}

impl FromStr for MpiProtocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, keys) = s.trim().split_once(':').unwrap_or((s.trim(), ""));
        let profile = match name {
            "simgrid" | "simgrid-3.32" => Profile::SimGrid,
            "openmpi" => Profile::OpenMpi,
            "eager" => Profile::Eager,
            o => {
                return Err(format!(
                    "`{o}` is not an MPI protocol; use simgrid (SimGrid 3.32's defaults: rendezvous for every message, sends from 64 KiB block), openmpi (eager up to 64 KiB, rendezvous above) or eager (transfers start at the send, sends never block), optionally with :eager=SIZE,detached=SIZE,envelope=BYTES"
                ));
            }
        };
        let mut p = MpiProtocol::base(profile);
        for kv in keys.split(',').map(str::trim).filter(|k| !k.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("`{kv}`: expected KEY=VALUE (eager, detached, envelope)"))?;
            match k.trim() {
                "eager" => p.eager_max_bytes = limit(k, v)?,
                "detached" => p.detached_max_bytes = limit(k, v)?,
                "envelope" => {
                    p.envelope_bytes = sim_core::units::parse_bytes(v.trim())
                        .map_err(|e| format!("`{kv}`: {e}"))?
                }
                o => {
                    return Err(format!(
                        "`{o}` is not an MPI protocol key; use eager, detached or envelope"
                    ));
                }
            }
        }
        Ok(p)
    }
}

impl fmt::Display for MpiProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.profile.name())?;
        let base = MpiProtocol::base(self.profile);
        let mut keys = Vec::new();
        if self.eager_max_bytes != base.eager_max_bytes {
            keys.push(format!("eager={}", show_limit(self.eager_max_bytes)));
        }
        if self.detached_max_bytes != base.detached_max_bytes {
            keys.push(format!("detached={}", show_limit(self.detached_max_bytes)));
        }
        if self.envelope_bytes != base.envelope_bytes {
            keys.push(format!("envelope={}", self.envelope_bytes));
        }
        if !keys.is_empty() {
            write!(f, ":{}", keys.join(","))?;
        }
        Ok(())
    }
}

impl MpiProtocol {
    /// One line for import notes.
    pub fn describe(&self) -> String {
        let eager = match self.eager_max_bytes {
            None => "every transfer starts when its receive is posted".to_string(),
            Some(u64::MAX) => "every transfer starts at its send".to_string(),
            Some(b) => format!(
                "transfers of up to {b} B start at the send, larger ones when the receive is posted"
            ),
        };
        let detached = match self.detached_max_bytes {
            None => "every send completes when its transfer ends".to_string(),
            Some(u64::MAX) => "sends complete at once".to_string(),
            Some(b) => format!(
                "sends of up to {b} B complete at once, larger ones when their transfer ends"
            ),
        };
        format!(
            "MPI protocol {self}: {eager}; {detached}; {} B of envelope per message",
            self.envelope_bytes
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simgrid_thresholds_are_strict_as_in_request_start() {
        let p = MpiProtocol::SIMGRID;
        // `size < 65536` is detached; 65536 is not.
        assert!(p.is_detached(65535));
        assert!(!p.is_detached(65536));
        // async-small-thresh = 0: nothing is eager, not even 0 bytes.
        assert!(!p.is_eager(0));
        assert_eq!(p.wire_bytes(100), 116);
    }

    #[test]
    fn profiles_parse_print_and_take_keys() {
        for s in ["simgrid", "openmpi", "eager"] {
            let p: MpiProtocol = s.parse().unwrap();
            assert_eq!(p.to_string(), s);
        }
        let p: MpiProtocol = "simgrid:detached=1MiB,envelope=0".parse().unwrap();
        assert_eq!(p.detached_max_bytes, Some(1 << 20));
        assert_eq!(p.envelope_bytes, 0);
        assert_eq!(p.to_string(), "simgrid:detached=1048576,envelope=0");
        assert_eq!(p.to_string().parse::<MpiProtocol>().unwrap(), p);
        let p: MpiProtocol = "openmpi:eager=none,detached=all".parse().unwrap();
        assert!(!p.is_eager(0) && p.is_detached(u64::MAX));
        assert!(
            "mpich"
                .parse::<MpiProtocol>()
                .unwrap_err()
                .contains("simgrid")
        );
        assert!(
            "simgrid:eager"
                .parse::<MpiProtocol>()
                .unwrap_err()
                .contains("KEY=VALUE")
        );
        assert!(
            "simgrid:speed=1"
                .parse::<MpiProtocol>()
                .unwrap_err()
                .contains("not an MPI protocol key")
        );
        assert!("eager".parse::<MpiProtocol>().unwrap().is_plain_eager());
    }
}
