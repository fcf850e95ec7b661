//! Reading one PE's log into pieces (BEGIN_PROCESSING .. END_PROCESSING), creations and
//! phase ends.

use super::sts::{Sts, Version};
use crate::ImportError;

/// The envelope type of an array broadcast as the array manager of a PE receives it
/// (`ArrayBcastMsg` in Charm++ 8.0.1 `ck-core/charm.h`), the first field of a BEGIN_PROCESSING.
const ARRAY_BCAST_MSG: f64 = 24.0;
/// Envelope types of a singleton chare's creation (`NewChareMsg`, `NewVChareMsg`).
const NEW_CHARE_MSG: f64 = 1.0;
const NEW_VCHARE_MSG: f64 = 2.0;

/// An array element's index as the log writes it (up to 6 dimensions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Index {
    pub(crate) len: u8,
    pub(crate) v: [i32; 6],
}

impl Index {
    pub(crate) fn as_slice(&self) -> &[i32] {
        &self.v[..self.len as usize]
    }
}

/// A message creation (CREATION, CREATION_BCAST, CREATION_MULTICAST).
pub(crate) struct Creation {
    pub(crate) pe: u32,
    pub(crate) event: i64,
    pub(crate) ep: i64,
    pub(crate) time_ps: u64,
    pub(crate) bytes: u64,
    /// A CREATION_BCAST or CREATION_MULTICAST record (one message for several PEs).
    pub(crate) fanout: bool,
    /// The piece it was made in.
    pub(crate) piece: usize,
}

/// One run of an entry on a PE as the log shows it: BEGIN_PROCESSING to END_PROCESSING (or
/// a run of creations outside any, `runtime`; or an untraced message's handler, from its
/// UNPACK outside any processing to the next record that is not its own, `received`).
pub(crate) struct Piece {
    pub(crate) pe: u32,
    pub(crate) ep: i64,
    pub(crate) runtime: bool,
    /// A `runtime` piece that handles a received message whose entry is not traced (it
    /// began with an UNPACK outside any processing).
    pub(crate) received: bool,
    pub(crate) begin_ps: u64,
    pub(crate) end_ps: u64,
    pub(crate) event: i64,
    pub(crate) src: i64,
    /// The receive time when the log has one (11.0, above 0), else the begin time.
    pub(crate) arrival_ps: u64,
    /// The array index written on the record (11.0, entries of chare arrays only).
    pub(crate) index: Option<Index>,
    /// The four id fields of a piece that is not an array element's (11.0; zeros when
    /// absent). A threaded entry running in its thread writes the thread's id in the first
    /// two (`CthThread`'s: its PE, then a serial number, [`Piece::thread`]); an array manager
    /// running an element's entry writes the element's index.
    pub(crate) ids: [i32; 4],
    /// Creations made in it, in log order.
    pub(crate) sends: Vec<usize>,
    /// Times of its untraced sends (BEGIN_PACK records of messages to untraced entries).
    pub(crate) packs: Vec<u64>,
    /// For a `received` piece: the creation standing for the untraced message it received
    /// from another PE ([`super::untraced`]).
    pub(crate) cause: Option<usize>,
    /// For a `received` piece: the piece on its own PE that sent it the message.
    pub(crate) after: Option<usize>,
    /// END_PHASE records seen on its PE before it began.
    pub(crate) phase: u32,
    /// Log-flush time inside it, taken out of its times after the flush (its end on the
    /// log's clock is `end_ps + paused_ps`).
    pub(crate) paused_ps: u64,
    /// The process's CPU time at its begin and end (11.0 logs write it; `None` when absent
    /// or 0), on the log's own scale: only differences on one PE mean anything.
    pub(crate) cpu_begin_ps: Option<u64>,
    pub(crate) cpu_end_ps: Option<u64>,
}

/// A record of the untraced-message stream of a PE, in log order ([`super::untraced`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Untraced {
    /// A BEGIN_PACK not right after a creation: a message sent to an untraced entry.
    Pack { piece: usize, time_ps: u64 },
    /// An untraced message's handler began (its piece is `received`).
    Receipt { piece: usize },
    /// A traced message began processing (the scheduler took a message from its queue).
    Step,
}

impl Piece {
    /// A piece of the runtime on `pe` beginning at `at_ps` (no entry, no message yet).
    fn runtime_at(pe: u32, at_ps: u64, phase: u32, received: bool) -> Piece {
        Piece {
            pe,
            ep: i64::MIN,
            runtime: true,
            received,
            begin_ps: at_ps,
            end_ps: at_ps,
            event: -1,
            src: -1,
            arrival_ps: at_ps,
            index: None,
            ids: [0; 4],
            sends: Vec::new(),
            packs: Vec::new(),
            cause: None,
            after: None,
            phase,
            paused_ps: 0,
            cpu_begin_ps: None,
            cpu_end_ps: None,
        }
    }
}

impl Piece {
    /// The thread it ran in, from its first two id fields (`None` when both are 0).
    pub(crate) fn thread(&self) -> Option<[i32; 2]> {
        let t = [self.ids[0], self.ids[1]];
        (t != [0, 0]).then_some(t)
    }
}

/// Everything read from the logs.
#[derive(Default)]
pub(crate) struct Logs {
    /// Per PE, its untraced sends and receipts in log order.
    pub(crate) untraced: Vec<Vec<Untraced>>,
    /// Pieces, PE by PE, each PE's in log order.
    pub(crate) pieces: Vec<Piece>,
    pub(crate) creations: Vec<Creation>,
    /// END_PHASE records per PE.
    pub(crate) phases: Vec<u32>,
    /// Pieces in which a phase ended, and when (the first END_PHASE, if several). Few: one
    /// per PE and load-balancing step.
    pub(crate) phase_ends: std::collections::BTreeMap<usize, u64>,
    /// Per file: its name and record count.
    pub(crate) files: Vec<(String, usize)>,
    pub(crate) stray_ends: usize,
    pub(crate) unterminated: usize,
    /// Creations whose event number their PE already used (ignored).
    pub(crate) dup_events: usize,
    /// Log-buffer flushes (a BEGIN_INTERRUPT .. END_INTERRUPT pair: Charm++ writing its
    /// full trace buffer to disk) inside an entry method, and their total time, taken out of
    /// the blocks they interrupted.
    pub(crate) flushes_in_blocks: usize,
    pub(crate) flush_ps: u64,
    /// Flushes between entry methods (idle time of the traced run; nothing to take out).
    pub(crate) flushes_between: usize,
    /// Whether any log has an idle record (then the rest of a PE's time between entry
    /// methods is the runtime's work, not unrecorded idleness).
    pub(crate) has_idle: bool,
    /// Pieces that construct a singleton chare (message type 1 `NewChareMsg` or 2
    /// `NewVChareMsg`, `ck-core/charm.h`): chares created as the program ran.
    pub(crate) chare_creations: usize,
    /// Per PE, in log order: its idle periods and its log flushes between entry methods.
    pub(crate) outside_spans: Vec<Vec<(u64, u64)>>,
}

/// A CPU-time field (microseconds) in ps; `None` when absent, not a number, or 0 (not
/// recorded).
fn cpu_field(t: &[&str], k: usize) -> Option<u64> {
    t.get(k)
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|x| x.is_finite() && *x > 0.0 && *x < 1.8e13)
        .map(us)
}

fn us(v: f64) -> u64 {
    (v.max(0.0) * 1e6).round() as u64
}

impl Logs {
    /// Reads the log of `pe` (`text`, from `file`).
    pub(crate) fn read(
        &mut self,
        sts: &Sts,
        pe: u32,
        file: String,
        text: &str,
    ) -> Result<(), ImportError> {
        let mut open: Option<usize> = None;
        let mut runtime: Option<usize> = None;
        // Untraced messages are read when the program registered the runtime module whose
        // entries are `[notrace]` (CkMulticast); elsewhere an UNPACK is only part of a traced
        // message's delivery, and the logs read as they always did.
        let untraced_entries = sts.chares.values().any(|c| c.name == "CkMulticastMgr");
        // An UNPACK outside any processing: a received message, traced when a
        // BEGIN_PROCESSING follows, else handled by an untraced entry.
        let mut pending_unpack: Option<u64> = None;
        // The last record that matters for packing (creation, begin/end, pack, unpack).
        let mut prev_sig = 0i64;
        let mut stream: Vec<Untraced> = Vec::new();
        let mut records = 0usize;
        let mut phase = 0u32;
        let mut events = std::collections::HashSet::new();
        // A log flush inside the open piece: when it began, and how long the piece's flushes
        // took so far (subtracted from its later times: the untraced run has no flush; 0
        // whenever no piece is open, as opening and closing one reset it).
        let mut flush_from: Option<u64> = None;
        let mut paused_ps = 0u64;
        let mut idle_from: Option<u64> = None;
        let mut spans: Vec<(u64, u64)> = Vec::new();
        for (i, l) in text.lines().enumerate() {
            let line = i as u64 + 1;
            let t: Vec<&str> = l.split_whitespace().collect();
            if t.is_empty() || t[0] == "PROJECTIONS-RECORD" {
                continue;
            }
            records += 1;
            let num = |k: usize, what: &str| -> Result<f64, ImportError> {
                let v = t.get(k).ok_or_else(|| {
                    ImportError::syntax(
                        &file,
                        line,
                        format!("{what} (field {})", k + 1),
                        format!("end of line in `{l}`"),
                    )
                })?;
                v.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x > -1e12 && *x < 1.8e13)
                    .ok_or_else(|| {
                        ImportError::syntax(
                            &file,
                            line,
                            format!("{what} (a number)"),
                            format!("`{v}`"),
                        )
                    })
            };
            let code = num(0, "a record type")? as i64;
            // The time of records that close a received message's handler.
            let closing_time = match code {
                2 => Some(num(3, "time")?),
                14 | 16 | 18 => Some(num(1, "time")?),
                _ => None,
            };
            if let Some(at) = pending_unpack.filter(|_| !matches!(code, 2 | 17 | 19)) {
                pending_unpack = None;
                self.pieces.push(Piece::runtime_at(pe, at, phase, true));
                runtime = Some(self.pieces.len() - 1);
                stream.push(Untraced::Receipt {
                    piece: self.pieces.len() - 1,
                });
            }
            if code == 2 {
                pending_unpack = None;
            }
            if let (Some(b), Some(at), false) = (runtime, closing_time, code == 16) {
                if self.pieces[b].received {
                    let p = &mut self.pieces[b];
                    p.end_ps = p.end_ps.max(us(at));
                    runtime = None;
                }
            }
            match code {
                1 | 20 | 21 => {
                    let ep = num(2, "entry point")? as i64;
                    let time = num(3, "time")?;
                    let event = num(4, "event number")? as i64;
                    let bytes = num(6, "message length")?.max(0.0) as u64;
                    if sts.version == Version::V11 {
                        num(7, "receive time")?;
                    }
                    let at = us(time).saturating_sub(paused_ps);
                    if !events.insert(event) {
                        self.dup_events += 1;
                        continue;
                    }
                    let b = match open {
                        Some(b) => {
                            runtime = None;
                            b
                        }
                        None => match runtime {
                            Some(b) => {
                                let p = &mut self.pieces[b];
                                p.end_ps = p.end_ps.max(at);
                                b
                            }
                            None => {
                                self.pieces.push(Piece::runtime_at(pe, at, phase, false));
                                runtime = Some(self.pieces.len() - 1);
                                self.pieces.len() - 1
                            }
                        },
                    };
                    self.pieces[b].sends.push(self.creations.len());
                    self.creations.push(Creation {
                        pe,
                        event,
                        ep,
                        time_ps: at,
                        bytes,
                        fanout: code != 1,
                        piece: b,
                    });
                }
                2 => {
                    let msg_type = num(1, "message type")?;
                    if msg_type == NEW_CHARE_MSG || msg_type == NEW_VCHARE_MSG {
                        self.chare_creations += 1;
                    }
                    let ep = num(2, "entry point")? as i64;
                    let time = num(3, "time")?;
                    let event = num(4, "event number")? as i64;
                    let src = num(5, "source PE")? as i64;
                    num(6, "message length")?;
                    let mut index = None;
                    let mut ids = [0i32; 4];
                    let mut cpu_begin = None;
                    // 11.0 logs write 0 when the receive time was not recorded (Charm++ 7
                    // does so for every message): the begin time stands in, as in 3.0.
                    let arrival = match sts.version {
                        Version::V11 => {
                            let r = num(7, "receive time")?;
                            // An array element's entry carries its index (ndims fields);
                            // a log without them (older writers) keeps the PE as the object.
                            // An array broadcast's envelope (`ArrayBcastMsg`) names no
                            // element: that piece is the PE's array manager taking the
                            // broadcast (e.g. an empty array's creation), and it writes
                            // zeros for the index; each element's piece follows with its own.
                            if let Some((_, nd)) = sts
                                .array_of(ep)
                                .filter(|(_, nd)| t.len() > 7 + nd && msg_type != ARRAY_BCAST_MSG)
                            {
                                let mut v = [0i32; 6];
                                for (d, slot) in v.iter_mut().enumerate().take(nd) {
                                    let x = num(8 + d, "an array index field")?;
                                    *slot = x.clamp(i32::MIN as f64, i32::MAX as f64) as i32;
                                }
                                index = Some(Index { len: nd as u8, v });
                            } else if sts.array_of(ep).is_none() && t.len() > 11 {
                                // Out-of-range fields (garbage) wrap into some id: still
                                // one value per thread that wrote it.
                                for (k, id) in ids.iter_mut().enumerate() {
                                    *id = t[8 + k].parse::<f64>().map_or(0, |x| {
                                        x.clamp(i64::MIN as f64, i64::MAX as f64) as i64 as i32
                                    });
                                }
                            }
                            // The CPU time follows the id fields (the index's, or four).
                            let ids = sts
                                .array_of(ep)
                                .filter(|(_, nd)| t.len() > 7 + nd)
                                .map_or(4, |(_, nd)| nd);
                            cpu_begin = cpu_field(&t, 8 + ids);
                            Some(r).filter(|r| *r > 0.0)
                        }
                        Version::V3 => None,
                    }
                    .unwrap_or(time);
                    if let Some(b) = open.take() {
                        self.unterminated += 1;
                        let p = &mut self.pieces[b];
                        p.end_ps = us(time).max(p.begin_ps);
                    }
                    runtime = None;
                    paused_ps = 0;
                    if event != -1 {
                        stream.push(Untraced::Step);
                    }
                    let begin = us(time);
                    self.pieces.push(Piece {
                        ep,
                        runtime: false,
                        event,
                        src,
                        arrival_ps: us(arrival).min(begin),
                        index,
                        ids,
                        cpu_begin_ps: cpu_begin,
                        ..Piece::runtime_at(pe, begin, phase, false)
                    });
                    open = Some(self.pieces.len() - 1);
                }
                3 => {
                    let time = num(3, "time")?;
                    match open.take() {
                        Some(b) => {
                            let p = &mut self.pieces[b];
                            p.end_ps = us(time).saturating_sub(paused_ps).max(p.begin_ps);
                            p.paused_ps = paused_ps;
                            if sts.version == Version::V11 {
                                p.cpu_end_ps =
                                    cpu_field(&t, 7).map(|c| c.saturating_sub(paused_ps));
                            }
                        }
                        None => self.stray_ends += 1,
                    }
                    paused_ps = 0;
                }
                8 => {
                    // BEGIN_INTERRUPT: Charm++ writes it, then END_INTERRUPT, around a flush
                    // of its full log buffer to disk [trace-projections.C,
                    // `LogPool::flushLogBuffer`]: tracing overhead, not the program's.
                    flush_from = Some(us(num(1, "time")?));
                }
                9 => {
                    let end = us(num(1, "time")?);
                    if let Some(from) = flush_from.take() {
                        if open.is_some() {
                            let d = end.saturating_sub(from);
                            paused_ps = paused_ps.saturating_add(d);
                            self.flushes_in_blocks += 1;
                            self.flush_ps = self.flush_ps.saturating_add(d);
                        } else {
                            self.flushes_between += 1;
                            spans.push((from, end));
                        }
                    }
                }
                14 => {
                    // BEGIN_IDLE: `14 <time> <pe>`.
                    idle_from = Some(us(num(1, "time")?));
                    self.has_idle = true;
                }
                15 => {
                    let end = us(num(1, "time")?);
                    if let Some(from) = idle_from.take() {
                        spans.push((from, end));
                    }
                }
                30 => {
                    // END_PHASE: `30 <phase> <time>`; Charm++ ends a phase at every
                    // load-balancing step.
                    let at = us(num(2, "time")?).saturating_sub(paused_ps);
                    phase = phase.saturating_add(1);
                    if let Some(b) = open {
                        let begin_ps = self.pieces[b].begin_ps;
                        self.phase_ends.entry(b).or_insert(at.max(begin_ps));
                    }
                }
                16 => {
                    // BEGIN_PACK: right after a creation it packs that (traced) message;
                    // otherwise the message is for an untraced entry.
                    let at = us(num(1, "time")?).saturating_sub(paused_ps);
                    if !matches!(prev_sig, 1 | 20 | 21) {
                        if let Some(b) = open.or(runtime) {
                            let p = &mut self.pieces[b];
                            p.packs.push(at);
                            p.end_ps = p.end_ps.max(at);
                            stream.push(Untraced::Pack {
                                piece: b,
                                time_ps: at,
                            });
                        }
                    }
                }
                18 => {
                    let at = us(num(1, "time")?);
                    match open {
                        // A multicast root packs its message and unpacks it again for its
                        // own PE [ck-core/ckmulticast.C, `sendToSection`]: not a send.
                        Some(b) if prev_sig == 17 => {
                            if let Some(Untraced::Pack { piece, .. }) = stream.last() {
                                if *piece == b {
                                    stream.pop();
                                    self.pieces[b].packs.pop();
                                }
                            }
                        }
                        Some(_) => {}
                        None if untraced_entries => {
                            runtime = None;
                            pending_unpack = Some(at);
                        }
                        None => {}
                    }
                }
                4..=7 | 10..=15 | 17 | 19 | 22..=29 | 31 | 32 | 98..=100 => {}
                other => {
                    return Err(ImportError::syntax(
                        &file,
                        line,
                        "a Projections record type (1-32, 98-100)",
                        format!("{other}"),
                    ));
                }
            }
            if matches!(code, 1 | 2 | 3 | 16..=21) {
                prev_sig = code;
            }
        }
        if open.is_some() {
            self.unterminated += 1;
        }
        self.phases.push(phase);
        self.outside_spans.push(spans);
        self.untraced.push(stream);
        self.files.push((file, records));
        Ok(())
    }
}
