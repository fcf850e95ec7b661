//! Charm++ load-balancing database dumps (`+LBDump`, written by CentralLB-derived balancers)
//! read into an [`LbDatabase`], as Charm++'s `+LBSim` reads them back.
//!
//! Layout (Charm++ v8.0.1, `CentralLB::writeStatsMsgs`, `PUP::toDisk`: raw, unpadded, native
//! byte order; `BaseLB::LDStats::pup`):
//!
//! ```text
//! machineInfo     16 B: magic 10 ea bd f9, version 1, intBytes[5], intFormat (1 = little
//!                 endian), floatBytes, doubleBytes, floatFormat, boolBytes, pointerBytes
//! lbversion i32 (2 or 3), stats_msg_count i32, n_migrateobjs i32
//! procs     u64 count x { total_walltime f64, idletime f64, bg_walltime f64, pe_speed f64,
//!                         available u8, n_objs i32, pe i32 (lbversion >= 2) }
//! objData   u64 count x { omId i32, omHandle i32, id u64, handle i32, wallTime f64,
//!                         migratable u8, asyncArrival u8, pupSize u16 (pup_encodeSize) }
//! from_proc u64 count x i32
//! commData  u64 count x { src_proc i32, sender (omId i32, id u64), type i8,
//!                         1: destProc i32 | 2: (omId i32, id u64, lastKnownPe i32) |
//!                         3: len i32, len x (omId i32, id u64),  messages i32, bytes i32 }
//! ```
//!
//! Builds with `CMK_LB_CPUTIMER` (two more f64 per PE, one per object) or `CMK_LB_USER_DATA`
//! write more; such a dump does not parse to its last byte and is refused with that reason.
//! Every count is checked against the bytes left before anything is allocated.
//!
//! Mapping: each object's `wallTime` is its load, `from_proc` its PE, `migratable` as
//! recorded; its migration size is the caller's (the dumped `pupSize` is kept in [`DumpObject`]
//! but not used: Charm++ 8.0.1 sets it only in `LBObj::setPupSize`, and in real dumps most
//! objects hold 0 and others values that decode to petabytes); a PE's `bg_walltime` plus its non-migratable objects' loads
//! is its background load; object-to-object messages (type 2, and type 3 multicasts to each
//! destination) are the communication graph. Messages from or to a PE (type 1, or
//! `src_proc != -1`) have no object end and are counted, not used.

use crate::{CommEdge, LbDatabase, LbError, LbPoint, ObjectRecord, PeRecord};
use sim_core::Ratio;
use std::collections::{BTreeMap, HashMap};

/// One PE's statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct DumpPe {
    /// Its number as written (`pe`, lbversion >= 2; else its position).
    pub pe: i32,
    /// Wall time of the LB period, seconds.
    pub total_walltime_s: f64,
    /// Idle time, seconds.
    pub idle_s: f64,
    /// Background (non-object) load, seconds.
    pub bg_walltime_s: f64,
    /// Relative speed.
    pub pe_speed: f64,
    /// Available to the balancer.
    pub available: bool,
    /// Objects it reported.
    pub n_objs: i32,
}

/// One object.
#[derive(Clone, Debug, PartialEq)]
pub struct DumpObject {
    /// Its location manager (`LDOMid`, a group index).
    pub om_id: i32,
    /// The location manager's handle.
    pub om_handle: i32,
    /// Its id within the location manager.
    pub obj_id: u64,
    /// Its handle.
    pub handle: i32,
    /// Load in the period, seconds.
    pub wall_s: f64,
    /// May it migrate.
    pub migratable: bool,
    /// `asyncArrival`.
    pub async_arrival: bool,
    /// Its packed size, bytes (decoded from the 16-bit approximate encoding).
    pub pup_bytes: u64,
}

/// Where a communication record goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DumpDest {
    /// To a PE (type 1).
    Pe(i32),
    /// To one object (type 2), with its last known PE.
    Object {
        /// `(omId, id)`.
        key: (i32, u64),
        /// Last known PE.
        last_pe: i32,
    },
    /// To a list of objects (type 3, a multicast).
    Objects(Vec<(i32, u64)>),
}

/// One communication record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpComm {
    /// The sending PE when not an object (-1: an object sent it).
    pub src_pe: i32,
    /// The sending object `(omId, id)`.
    pub sender: (i32, u64),
    /// Destination.
    pub dest: DumpDest,
    /// Messages.
    pub messages: i32,
    /// Bytes.
    pub bytes: i32,
}

/// A whole dump, as written.
#[derive(Clone, Debug, PartialEq)]
pub struct LbDump {
    /// `LB_FORMAT_VERSION` of the writer.
    pub lbversion: i32,
    /// PEs that reported.
    pub stats_msg_count: i32,
    /// Migratable objects.
    pub n_migrateobjs: i32,
    /// Per PE.
    pub pes: Vec<DumpPe>,
    /// Per object.
    pub objects: Vec<DumpObject>,
    /// Each object's PE.
    pub from_pe: Vec<i32>,
    /// Communication records.
    pub comm: Vec<DumpComm>,
}

/// Largest PE count a dump may claim.
const MAX_PES: usize = 1 << 24;

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
    file: &'a str,
}

impl<'a> Reader<'a> {
    fn err(&self, expected: impl Into<String>) -> LbError {
        LbError::Dump {
            file: self.file.to_string(),
            offset: self.at as u64,
            expected: expected.into(),
        }
    }
    fn take<const N: usize>(&mut self, what: &str) -> Result<[u8; N], LbError> {
        let s = self
            .b
            .get(self.at..self.at + N)
            .ok_or_else(|| self.err(format!("{what} ({N} bytes); the file ends")))?;
        self.at += N;
        Ok(s.try_into().expect("N bytes"))
    }
    fn i32(&mut self, what: &str) -> Result<i32, LbError> {
        Ok(i32::from_le_bytes(self.take(what)?))
    }
    fn u64(&mut self, what: &str) -> Result<u64, LbError> {
        Ok(u64::from_le_bytes(self.take(what)?))
    }
    fn u16(&mut self, what: &str) -> Result<u16, LbError> {
        Ok(u16::from_le_bytes(self.take(what)?))
    }
    fn i8(&mut self, what: &str) -> Result<i8, LbError> {
        Ok(self.take::<1>(what)?[0] as i8)
    }
    fn bool(&mut self, what: &str) -> Result<bool, LbError> {
        let at = self.at;
        match self.take::<1>(what)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            v => {
                self.at = at;
                Err(self.err(format!("{what} (a bool, 0 or 1); found {v}")))
            }
        }
    }
    /// A time in seconds: finite and not negative.
    fn secs(&mut self, what: &str) -> Result<f64, LbError> {
        let at = self.at;
        let v = f64::from_le_bytes(self.take(what)?);
        if (0.0..1e9).contains(&v) {
            Ok(v)
        } else {
            self.at = at;
            Err(self.err(format!("{what} (seconds, finite, >= 0); found {v}")))
        }
    }
    /// A vector's element count, bounded by the bytes left at `min_bytes` per element.
    fn count(&mut self, what: &str, min_bytes: usize) -> Result<usize, LbError> {
        let at = self.at;
        let n = self.u64(what)?;
        let left = (self.b.len() - self.at) as u64;
        if n > left / min_bytes as u64 {
            self.at = at;
            return Err(self.err(format!(
                "{what}: at most {} records of {min_bytes} bytes fit in the {left} bytes left; the count is {n}",
                left / min_bytes as u64
            )));
        }
        Ok(n as usize)
    }
    fn key(&mut self, what: &str) -> Result<(i32, u64), LbError> {
        Ok((self.i32(what)?, self.u64(what)?))
    }
}

/// `pup_decodeSize` (Charm++ `util/pup_c.C`): 13 bits of mantissa, 3 of power of 256.
pub fn decode_pup_size(a: u16) -> u64 {
    let power = (a >> 13) as u32;
    ((a & 0x1fff) as u64) << (8 * power)
}

/// Parses a dump; `file` names it in errors.
pub fn parse_lbdump(bytes: &[u8], file: &str) -> Result<LbDump, LbError> {
    let mut r = Reader {
        b: bytes,
        at: 0,
        file,
    };
    let head: [u8; 16] = r.take("the 16-byte PUP::machineInfo header")?;
    if head[..4] != [0x10, 0xea, 0xbd, 0xf9] {
        r.at = 0;
        return Err(r.err(format!(
            "the PUP::machineInfo magic 10 ea bd f9 of a Charm++ +LBDump file; found {:02x} {:02x} {:02x} {:02x}",
            head[0], head[1], head[2], head[3]
        )));
    }
    // version 1: intBytes[5] = 1 2 4 8 16, intFormat, floatBytes, doubleBytes, floatFormat,
    // boolBytes, pointerBytes.
    let want = [1u8, 1, 2, 4, 8, 16, 1, 4, 8, 1, 1];
    if head[4..15] != want {
        r.at = 4;
        return Err(r.err(format!(
            "a machine like x86-64 (machineInfo version 1, ints 1/2/4/8/16 bytes, little endian, 4/8-byte IEEE floats, 1-byte bool); found {:?}",
            &head[4..15]
        )));
    }
    let lbversion = r.i32("lbversion")?;
    if !(2..=3).contains(&lbversion) {
        r.at -= 4;
        return Err(r.err(format!(
            "LB database format version 2 or 3 (Charm++ 6.x-8.x); found {lbversion}"
        )));
    }
    let stats_msg_count = r.i32("stats_msg_count")?;
    let n_migrateobjs = r.i32("n_migrateobjs")?;
    let n = r.count("the PE count", 41)?;
    if n == 0 || n > MAX_PES {
        r.at -= 8;
        return Err(r.err(format!("1..{MAX_PES} PEs; found {n}")));
    }
    let mut pes = Vec::with_capacity(n);
    for i in 0..n {
        let total = r.secs("total_walltime")?;
        let idle = r.secs("idletime")?;
        let bg = r.secs("bg_walltime")?;
        let speed = r.secs("pe_speed")?;
        let available = r.bool("available")?;
        let n_objs = r.i32("n_objs")?;
        let pe = if lbversion >= 2 {
            r.i32("pe")?
        } else {
            i as i32
        };
        pes.push(DumpPe {
            pe,
            total_walltime_s: total,
            idle_s: idle,
            bg_walltime_s: bg,
            pe_speed: speed,
            available,
            n_objs,
        });
    }
    let n = r.count("the object count", 32)?;
    let mut objects = Vec::with_capacity(n);
    for _ in 0..n {
        let om_id = r.i32("omhandle.id")?;
        let om_handle = r.i32("omhandle.handle")?;
        let obj_id = r.u64("the object id")?;
        let handle = r.i32("the object handle")?;
        let wall_s = r.secs("wallTime")?;
        let migratable = r.bool("migratable")?;
        let async_arrival = r.bool("asyncArrival")?;
        let pup_bytes = decode_pup_size(r.u16("pupSize")?);
        objects.push(DumpObject {
            om_id,
            om_handle,
            obj_id,
            handle,
            wall_s,
            migratable,
            async_arrival,
            pup_bytes,
        });
    }
    let n = r.count("the from_proc count", 4)?;
    if n != objects.len() {
        r.at -= 8;
        return Err(r.err(format!(
            "one from_proc entry per object ({}); found {n}",
            objects.len()
        )));
    }
    let mut from_pe = Vec::with_capacity(n);
    for _ in 0..n {
        let at = r.at;
        let p = r.i32("from_proc")?;
        if p < 0 || p as usize >= pes.len() {
            r.at = at;
            return Err(r.err(format!(
                "a PE of the dump's {} for from_proc; found {p}",
                pes.len()
            )));
        }
        from_pe.push(p);
    }
    let n = r.count("the communication record count", 26)?;
    let mut comm = Vec::with_capacity(n);
    for _ in 0..n {
        let src_pe = r.i32("src_proc")?;
        let sender = r.key("the sender")?;
        let at = r.at;
        let dest = match r.i8("the receiver type")? {
            1 => DumpDest::Pe(r.i32("destProc")?),
            2 => {
                let key = r.key("the receiver")?;
                DumpDest::Object {
                    key,
                    last_pe: r.i32("destObjProc")?,
                }
            }
            3 => {
                let at = r.at;
                let len = r.i32("the multicast length")?;
                let left = r.b.len() - r.at;
                if len < 0 || len as usize > left / 12 {
                    r.at = at;
                    return Err(r.err(format!(
                        "a multicast length of 0..{} (12 bytes each in the {left} bytes left); found {len}",
                        left / 12
                    )));
                }
                let mut v = Vec::with_capacity(len as usize);
                for _ in 0..len {
                    v.push(r.key("a multicast receiver")?);
                }
                DumpDest::Objects(v)
            }
            t => {
                r.at = at;
                return Err(r.err(format!(
                    "a receiver type 1 (PE), 2 (object) or 3 (objects); found {t}"
                )));
            }
        };
        let messages = r.i32("messages")?;
        let bytes = r.i32("bytes")?;
        comm.push(DumpComm {
            src_pe,
            sender,
            dest,
            messages,
            bytes,
        });
    }
    if r.at != bytes.len() {
        return Err(r.err(format!(
            "the end of the file after {} communication records; {} bytes are left (a Charm++ built with CMK_LB_CPUTIMER or CMK_LB_USER_DATA writes more per record: not supported)",
            comm.len(),
            bytes.len() - r.at
        )));
    }
    Ok(LbDump {
        lbversion,
        stats_msg_count,
        n_migrateobjs,
        pes,
        objects,
        from_pe,
        comm,
    })
}

/// Counts of what [`LbDump::database`] left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DumpUse {
    /// Records from or to a PE (no object end).
    pub pe_records: usize,
    /// Records naming an object that is not in the dump.
    pub unknown_objects: usize,
    /// Records with negative counts.
    pub negative: usize,
}

fn ps(s: f64) -> u64 {
    (s * 1e12).round() as u64
}

impl LbDump {
    /// The objects' names: `om<omId>:<id>`.
    pub fn object_names(&self) -> Vec<String> {
        self.objects
            .iter()
            .map(|o| format!("om{}:{}", o.om_id, o.obj_id))
            .collect()
    }

    /// The LB database on `pes` PEs (the dump's count when `None`; objects and background
    /// of dump PE `p` go to `p * pes / dump_pes` on another count), every PE at `cpu_scale`,
    /// every object `migrate_bytes` to move.
    pub fn database(
        &self,
        pes: Option<u32>,
        cpu_scale: Ratio,
        migrate_bytes: u64,
    ) -> Result<(LbDatabase, DumpUse), LbError> {
        let dump_pes = self.pes.len() as u64;
        let p = pes.unwrap_or(dump_pes as u32);
        if p == 0 {
            return Err(LbError::Config("the machine needs at least one PE".into()));
        }
        let fold = |pe: i32| (pe as u64 * p as u64 / dump_pes) as u32;
        let mut db_pes = vec![
            PeRecord {
                background_ps: 0,
                cpu_scale,
            };
            p as usize
        ];
        for (i, d) in self.pes.iter().enumerate() {
            let bg = &mut db_pes[fold(i as i32) as usize].background_ps;
            *bg = bg.saturating_add(ps(d.bg_walltime_s));
        }
        let names = self.object_names();
        let objects: Vec<ObjectRecord> = self
            .objects
            .iter()
            .zip(&self.from_pe)
            .zip(names)
            .map(|((o, &pe), name)| ObjectRecord {
                name,
                load_ps: ps(o.wall_s),
                from_pe: fold(pe),
                migratable: o.migratable,
                migrate_bytes,
            })
            .collect();
        for o in objects.iter().filter(|o| !o.migratable) {
            let bg = &mut db_pes[o.from_pe as usize].background_ps;
            *bg = bg.saturating_add(o.load_ps);
        }
        let index: HashMap<(i32, u64), u32> = self
            .objects
            .iter()
            .enumerate()
            .map(|(i, o)| ((o.om_id, o.obj_id), i as u32))
            .collect();
        let mut edges: BTreeMap<(u32, u32), (u64, u64)> = BTreeMap::new();
        let mut used = DumpUse::default();
        for c in &self.comm {
            if c.messages < 0 || c.bytes < 0 {
                used.negative += 1;
                continue;
            }
            let dests: Vec<(i32, u64)> = match &c.dest {
                DumpDest::Pe(_) => {
                    used.pe_records += 1;
                    continue;
                }
                _ if c.src_pe != -1 => {
                    used.pe_records += 1;
                    continue;
                }
                DumpDest::Object { key, .. } => vec![*key],
                DumpDest::Objects(v) => v.clone(),
            };
            let Some(&a) = index.get(&c.sender) else {
                used.unknown_objects += 1;
                continue;
            };
            for k in dests {
                let Some(&b) = index.get(&k) else {
                    used.unknown_objects += 1;
                    continue;
                };
                if a == b {
                    continue;
                }
                let e = edges.entry((a.min(b), a.max(b))).or_default();
                e.0 = e.0.saturating_add(c.messages as u64);
                e.1 = e.1.saturating_add(c.bytes as u64);
            }
        }
        let edges = edges
            .into_iter()
            .map(|((a, b), (messages, bytes))| CommEdge {
                a,
                b,
                messages,
                bytes,
            })
            .collect();
        Ok((
            LbDatabase {
                point: LbPoint::Start,
                objects,
                pes: db_pes,
                edges,
            },
            used,
        ))
    }
}
