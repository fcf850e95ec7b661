//! Decoding of BigSim `bgTrace` log files (version 6) into their raw records.
//!
//! Layout (all written with `PUP::toDisk`; fields in pup order):
//!
//! * summary `bgTrace`: `machineInfo` (16 bytes), `int totalWorkerProcs`,
//!   `BGMach{int x, y, z, numCth, numWth, stacksize, timingMethod}`, `int numEmulatingPes`,
//!   `int bglog_version`, `int thread_ep`;
//! * `bgTrace<k>`: `machineInfo`, `int numLocalProcs`, `int offsets[numLocalProcs]` (absolute
//!   file offsets), then one timeline per target processor: `int length` and `length` logs;
//! * a log (`BgTimeLog`): `int ep, seqno`, `int msgId.pe, msgId.msgID`, `u16 mpiOp`,
//!   `u32 mpiSize`, `i16 charm_ep`, `f64 recvTime, effRecvTime, startTime, execTime, endTime`,
//!   `u8 flag`, `char name[20]`, `int objId[4]`, `int nmsgs` + message entries, `int nevts` +
//!   events, `int nback` + back seqnos, `int nfwd` + forward seqnos;
//! * a message entry (`BgMsgEntry`): `int msgID, dstNode`, `f64 sendTime, recvTime`,
//!   `i16 tID`, `int msgsize`, `int group`;
//! * an event (`bgEvents`): `u8 eType`, `f64 rTime`, then `int index` (type 1) or `int len` +
//!   `len` bytes (types 2 and 3).
//!
//! Only little-endian files with 2-byte short, 4-byte int and 8-byte double are accepted (the
//! `machineInfo` says which); anything else is refused with the header values found.

use crate::ImportError;
use crate::cursor::Cursor;

/// Fields of the summary file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BgSummary {
    /// Number of target processors (virtual PEs) the program was emulated for.
    pub total_procs: u32,
    /// Target machine shape (x, y, z).
    pub shape: [u32; 3],
    /// Communication and worker threads per target node.
    pub threads: (u32, u32),
    /// Number of emulating PEs, i.e. of `bgTrace<k>` files.
    pub emulating_pes: u32,
    /// Log format version (only 6 is accepted).
    pub version: u32,
    /// EP number of "thread resume" events.
    pub thread_ep: i32,
}

/// One message entry of a log.
#[derive(Clone, Debug, PartialEq)]
pub struct BgMsg {
    /// Sequence number per source processor.
    pub msg_id: i32,
    /// `>= 0` a node; `-1` all nodes; `<= -100` all nodes except `-100 - dst_node`.
    pub dst_node: i32,
    /// Absolute send time (s).
    pub send_time: f64,
    /// Predicted receive time (s).
    pub recv_time: f64,
    /// Destination thread, -1 for any.
    pub tid: i16,
    /// Size in bytes.
    pub size: i32,
}

/// One sequential execution block as BigSim logged it.
#[derive(Clone, Debug, PartialEq)]
pub struct BgLog {
    /// Handler number (-1 internal).
    pub ep: i32,
    /// Source processor of the triggering message, -1 for none.
    pub src_pe: i32,
    /// Id of the triggering message at its source, -1 for none.
    pub msg_id: i32,
    /// Receive time of the triggering message (s).
    pub recv_time: f64,
    /// Start time (s).
    pub start_time: f64,
    /// Execution time (s).
    pub exec_time: f64,
    /// End time (s).
    pub end_time: f64,
    /// The log's name (at most 20 bytes, NUL-trimmed).
    pub name: String,
    /// The `CmiObjId` of the object the block ran on.
    pub obj_id: [i32; 4],
    /// Messages sent during the block.
    pub msgs: Vec<BgMsg>,
    /// Seqnos (indices in this timeline) of blocks that must finish first.
    pub backward: Vec<u32>,
    /// File offset of the log's first byte (for error messages).
    pub offset: u64,
}

/// The timeline of one target processor.
#[derive(Clone, Debug, PartialEq)]
pub struct BgTimeline {
    /// Global target-processor number.
    pub pe: u32,
    /// Its logs in seqno order.
    pub logs: Vec<BgLog>,
}

const MAGIC: [u8; 4] = [0x10, 0xea, 0xbd, 0xf9];
/// Upper bound on any count read from a file (guards allocation against garbage).
const MAX_COUNT: usize = 1 << 26;

/// Checks the 16-byte `PUP::machineInfo` header.
fn machine_info(c: &mut Cursor) -> Result<(), ImportError> {
    let magic = c.take(4, "the PUP machineInfo magic")?;
    if magic != MAGIC {
        return Err(c.error_at(
            0,
            "the PUP machineInfo magic 10 ea bd f9 (is this a BigSim bgTrace file?)",
            format!("{magic:02x?}"),
        ));
    }
    let h = c.take(12, "the rest of the PUP machineInfo header")?;
    // version, int sizes (char, short, int, long, int128), int format, float, double,
    // float format, bool, pointer.
    let (short, int, little, double) = (h[2], h[3], h[6], h[8]);
    if short != 2 || int != 4 || double != 8 || little != 1 {
        return Err(ImportError::Unsupported {
            file: String::new(),
            what: format!(
                "machineInfo says short={short} B, int={int} B, double={double} B, \
                 int format {little} ({}); only little-endian files with 2-byte short, \
                 4-byte int and 8-byte double are read",
                if little == 1 {
                    "little-endian"
                } else {
                    "big-endian"
                }
            ),
        });
    }
    Ok(())
}

fn with_file(e: ImportError, file: &str) -> ImportError {
    match e {
        ImportError::Unsupported { what, .. } => ImportError::Unsupported {
            file: file.to_string(),
            what,
        },
        e => e,
    }
}

/// Decodes the summary file.
pub fn parse_summary(buf: &[u8], file: &str) -> Result<BgSummary, ImportError> {
    let mut c = Cursor::new(buf, file);
    machine_info(&mut c).map_err(|e| with_file(e, file))?;
    let total = c.i32("int totalWorkerProcs")?;
    let mut mach = [0i32; 7];
    for (v, name) in mach.iter_mut().zip([
        "BGMach.x",
        "BGMach.y",
        "BGMach.z",
        "BGMach.numCth",
        "BGMach.numWth",
        "BGMach.stacksize",
        "BGMach.timingMethod",
    ]) {
        *v = c.i32(name)?;
    }
    let emulating = c.i32("int numEmulatingPes")?;
    let at = c.pos();
    let version = c.i32("int bglog_version")?;
    let thread_ep = c.i32("int thread_ep")?;
    if version != 6 {
        return Err(c.error_at(
            at,
            "bglog_version 6 (the only BigSim log version this importer reads)",
            format!("version {version}"),
        ));
    }
    let positive = |v: i32, what: &str, off: usize| -> Result<u32, ImportError> {
        if v <= 0 || v as usize > MAX_COUNT {
            Err(c.error_at(off, format!("a positive {what}"), format!("{v}")))
        } else {
            Ok(v as u32)
        }
    };
    Ok(BgSummary {
        total_procs: positive(total, "totalWorkerProcs", 16)?,
        shape: [
            mach[0].max(0) as u32,
            mach[1].max(0) as u32,
            mach[2].max(0) as u32,
        ],
        threads: (mach[3].max(0) as u32, mach[4].max(0) as u32),
        emulating_pes: positive(emulating, "numEmulatingPes", 48)?,
        version: version as u32,
        thread_ep,
    })
}

/// Decodes one per-emulating-PE file `bgTrace<k>` of a set with summary `s`: the timelines of
/// target processors `k, k + n, k + 2n, ...` (n = emulating PEs).
pub fn parse_pe_file(
    buf: &[u8],
    file: &str,
    k: u32,
    s: &BgSummary,
) -> Result<Vec<BgTimeline>, ImportError> {
    let mut c = Cursor::new(buf, file);
    machine_info(&mut c).map_err(|e| with_file(e, file))?;
    let at = c.pos();
    let n_local = c.count("int numLocalProcs", MAX_COUNT)?;
    let expect = (s.total_procs.saturating_sub(k)).div_ceil(s.emulating_pes) as usize;
    if n_local != expect {
        return Err(c.error_at(
            at,
            format!(
                "numLocalProcs = {expect} (target processors {k}, {k}+{n}, ... of {t} assigned cyclically to {n} files)",
                n = s.emulating_pes,
                t = s.total_procs
            ),
            format!("{n_local}"),
        ));
    }
    let mut offsets = Vec::with_capacity(n_local.min(c.len() / 4));
    for _ in 0..n_local {
        offsets.push(c.i32("a timeline offset")?);
    }
    let mut out = Vec::with_capacity(n_local);
    for (i, &off) in offsets.iter().enumerate() {
        if off < 0 || off as usize != c.pos() {
            return Err(c.error_at(
                c.pos(),
                format!("timeline {i} at the offset the header gives ({off})"),
                format!("the previous timeline ends at {}", c.pos()),
            ));
        }
        c.seek(off as usize, "a timeline")?;
        let pe = k + i as u32 * s.emulating_pes;
        out.push(timeline(&mut c, pe)?);
    }
    if c.pos() != c.len() {
        return Err(c.error_at(
            c.pos(),
            "end of file after the last timeline",
            format!("{} more bytes", c.len() - c.pos()),
        ));
    }
    Ok(out)
}

fn timeline(c: &mut Cursor, pe: u32) -> Result<BgTimeline, ImportError> {
    let len = c.count("int timeline length", MAX_COUNT)?;
    let mut logs = Vec::with_capacity(len.min(1 << 16));
    for i in 0..len {
        logs.push(log(c, i as u32, len as u32)?);
    }
    Ok(BgTimeline { pe, logs })
}

fn log(c: &mut Cursor, index: u32, len: u32) -> Result<BgLog, ImportError> {
    let offset = c.pos() as u64;
    let ep = c.i32("BgTimeLog.ep")?;
    let at = c.pos();
    let seqno = c.i32("BgTimeLog.seqno")?;
    if seqno != index as i32 {
        return Err(c.error_at(
            at,
            format!("seqno {index} (logs are renumbered 0..len-1 when written)"),
            format!("{seqno}"),
        ));
    }
    let src_pe = c.i32("BgTimeLog.msgId.pe")?;
    let msg_id = c.i32("BgTimeLog.msgId.msgID")?;
    let _mpi_op = c.u16("BgTimeLog.mpiOp")?;
    let _mpi_size = c.u32("BgTimeLog.mpiSize")?;
    let _charm_ep = c.i16("BgTimeLog.charm_ep")?;
    let recv_time = c.f64("BgTimeLog.recvTime")?;
    let _eff = c.f64("BgTimeLog.effRecvTime")?;
    let start_time = c.f64("BgTimeLog.startTime")?;
    let exec_time = c.f64("BgTimeLog.execTime")?;
    let end_time = c.f64("BgTimeLog.endTime")?;
    let _flag = c.u8("BgTimeLog.flag")?;
    let raw = c.take(20, "BgTimeLog.name[20]")?;
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    let name = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut obj_id = [0i32; 4];
    for v in obj_id.iter_mut() {
        *v = c.i32("BgTimeLog.objId")?;
    }
    let n = c.count("number of message entries", MAX_COUNT)?;
    let mut msgs = Vec::with_capacity(n.min(1 << 12));
    for _ in 0..n {
        msgs.push(BgMsg {
            msg_id: c.i32("BgMsgEntry.msgID")?,
            dst_node: c.i32("BgMsgEntry.dstNode")?,
            send_time: c.f64("BgMsgEntry.sendTime")?,
            recv_time: c.f64("BgMsgEntry.recvTime")?,
            tid: c.i16("BgMsgEntry.tID")?,
            size: c.i32("BgMsgEntry.msgsize")?,
        });
        let _group = c.i32("BgMsgEntry.group")?;
    }
    let n = c.count("number of events", MAX_COUNT)?;
    for _ in 0..n {
        let at = c.pos();
        let kind = c.u8("bgEvents.eType")?;
        let _rtime = c.f64("bgEvents.rTime")?;
        match kind {
            1 => {
                c.i32("bgEvents.index")?;
            }
            2 | 3 => {
                let len = c.count("bgEvents string length", MAX_COUNT)?;
                c.take(len, "bgEvents string")?;
            }
            k => {
                return Err(c.error_at(
                    at,
                    "event type 1 (Projections), 2 (print) or 3 (marker)",
                    format!("{k}"),
                ));
            }
        }
    }
    let n = c.count("number of backward dependencies", MAX_COUNT)?;
    let mut backward = Vec::with_capacity(n.min(1 << 12));
    for _ in 0..n {
        let at = c.pos();
        let d = c.i32("a backward dependency seqno")?;
        if d < 0 || d as u32 >= index {
            return Err(c.error_at(
                at,
                format!("a backward dependency on an earlier log (seqno below {index})"),
                format!("{d}"),
            ));
        }
        backward.push(d as u32);
    }
    let n = c.count("number of forward dependencies", MAX_COUNT)?;
    for _ in 0..n {
        let at = c.pos();
        let d = c.i32("a forward dependency seqno")?;
        if d <= index as i32 || d as u32 >= len {
            return Err(c.error_at(
                at,
                format!(
                    "a forward dependency on a later log (seqno {} to {})",
                    index + 1,
                    len.saturating_sub(1)
                ),
                format!("{d}"),
            ));
        }
    }
    Ok(BgLog {
        ep,
        src_pe,
        msg_id,
        recv_time,
        start_time,
        exec_time,
        end_time,
        name,
        obj_id,
        msgs,
        backward,
        offset,
    })
}
