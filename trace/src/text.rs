//! The human-readable JSON-lines form of a trace.
//!
//! One JSON object per line. The first line is the header; the rest are entries, objects,
//! groups and blocks, each numbered by an `id` that must equal its position among its kind.
//! Optional fields may be omitted.
//!
//! ```text
//! {"whatif_trace":2,"name":"ring-4","generator":"whatif gen ring","description":"","recorded_pes":4,"net":null,"seed":null}
//! {"entry":{"id":0,"name":"compute"}}
//! {"object":{"id":0,"name":"rank[0]","pe":0}}
//! {"group":{"id":0,"members":[0,1,2]}}
//! {"block":{"id":0,"object":0,"entry":0,"duration_ps":100000000,"trigger":null,"deps":[],
//!   "sends":[{"msg":0,"offset_ps":100000000,"to":{"object":1},"bytes":65536,"entry":0}],
//!   "iteration":0,"lb_sync":false,"priority":0,"start_ps":null}}
//! {"end":{"entries":1,"objects":1,"groups":1,"blocks":1}}
//! ```
//! (a block is one line; it is wrapped here for reading). Version 2 ends with the `end`
//! record, which repeats the counts: a file cut anywhere (even at a line boundary) is an
//! error, not a shorter trace. Version 1 files (no `end` record) are still read. `to` is one of `{"object":N}`,
//! `{"group":N}`, `"all"` or `{"all_except":N}`. Times are integer picoseconds.

use crate::error::TraceError;
use crate::ids::{BlockId, EntryId, MsgId, ObjectId, PeId};
use crate::model::{Block, Destination, EntryMethod, Group, ObjectInfo, Send, Trace, TraceMeta};
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::io::{self, BufRead, Write};

/// The format version of the JSON-lines form.
pub const TEXT_VERSION: u32 = 2;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HeaderLine {
    whatif_trace: u32,
    name: String,
    #[serde(default)]
    generator: String,
    #[serde(default)]
    description: String,
    recorded_pes: u32,
    #[serde(default)]
    net: Option<String>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cpu_scale: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    sequential_objects: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryLine {
    id: u32,
    name: String,
    /// Its blocks are outside their objects' order (written only when true).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    outside_object_order: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ObjectLine {
    id: u32,
    name: String,
    pe: u32,
    /// Recorded moves `[from block, pe]` (written only when the object moved).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    moves: Vec<[u32; 2]>,
    /// The object never migrates (written only when true).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pinned: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupLine {
    id: u32,
    members: Vec<ObjectId>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SendLine {
    msg: u64,
    offset_ps: u64,
    to: Destination,
    bytes: u64,
    entry: u32,
}

fn is_false(b: &bool) -> bool {
    !*b
}
fn is_zero(p: &i32) -> bool {
    *p == 0
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockLine {
    id: u32,
    object: u32,
    entry: u32,
    duration_ps: u64,
    #[serde(default)]
    trigger: Option<u64>,
    #[serde(default)]
    deps: Vec<u32>,
    #[serde(default)]
    sends: Vec<SendLine>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    iteration: Option<u32>,
    #[serde(default, skip_serializing_if = "is_false")]
    lb_sync: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    priority: i32,
    #[serde(default, skip_serializing_if = "is_false")]
    network: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    start_ps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    arrival_ps: Option<u64>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    Entry(EntryLine),
    Object(ObjectLine),
    Group(GroupLine),
    Block(BlockLine),
    End(EndLine),
}

/// The closing record of a version-2 file: the counts of what came before it.
#[derive(Serialize, Deserialize, PartialEq, Eq, Debug)]
#[serde(deny_unknown_fields)]
struct EndLine {
    entries: u64,
    objects: u64,
    groups: u64,
    blocks: u64,
}

impl EndLine {
    fn of(t: &Trace) -> EndLine {
        EndLine {
            entries: t.entries.len() as u64,
            objects: t.objects.len() as u64,
            groups: t.groups.len() as u64,
            blocks: t.num_blocks() as u64,
        }
    }
}

fn json_err(e: serde_json::Error) -> io::Error {
    io::Error::other(e)
}

/// Writes `trace` as JSON lines.
pub fn write_text<W: Write>(trace: &Trace, mut w: W) -> io::Result<()> {
    let m = &trace.meta;
    let header = HeaderLine {
        whatif_trace: TEXT_VERSION,
        name: m.name.clone(),
        generator: m.generator.clone(),
        description: m.description.clone(),
        recorded_pes: m.recorded_pes,
        net: m.net.clone(),
        seed: m.seed,
        cpu_scale: m.cpu_scale.clone(),
        sequential_objects: m.sequential_objects,
    };
    line(&mut w, &header)?;
    for (i, e) in trace.entries.iter().enumerate() {
        line(
            &mut w,
            &Line::Entry(EntryLine {
                id: i as u32,
                name: e.name.clone(),
                outside_object_order: e.outside_object_order,
            }),
        )?;
    }
    for (i, o) in trace.objects.iter().enumerate() {
        line(
            &mut w,
            &Line::Object(ObjectLine {
                id: i as u32,
                name: o.name.clone(),
                pe: o.recorded_pe.0,
                moves: o.moves.iter().map(|m| [m.from.0, m.pe.0]).collect(),
                pinned: o.pinned,
            }),
        )?;
    }
    for (i, g) in trace.groups.iter().enumerate() {
        line(
            &mut w,
            &Line::Group(GroupLine {
                id: i as u32,
                members: g.members.clone(),
            }),
        )?;
    }
    for id in trace.block_ids() {
        let b = trace.block(id);
        let bl = BlockLine {
            id: id.0,
            object: b.object.0,
            entry: b.entry.0,
            duration_ps: b.duration.as_ps(),
            trigger: b.trigger.map(|m| m.0),
            deps: trace.deps(id).iter().map(|d| d.0).collect(),
            sends: trace
                .sends(id)
                .iter()
                .map(|s| SendLine {
                    msg: s.msg.0,
                    offset_ps: s.offset.as_ps(),
                    to: s.dest,
                    bytes: s.bytes,
                    entry: s.entry.0,
                })
                .collect(),
            iteration: b.iteration,
            lb_sync: b.lb_sync,
            priority: b.priority,
            network: b.network,
            start_ps: b.recorded_start.map(|t| t.as_ps()),
            arrival_ps: b.recorded_arrival.map(|t| t.as_ps()),
        };
        line(&mut w, &Line::Block(bl))?;
    }
    line(&mut w, &Line::End(EndLine::of(trace)))?;
    w.flush()
}

fn line<W: Write, T: Serialize>(w: &mut W, v: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *w, v).map_err(json_err)?;
    w.write_all(b"\n")
}

/// Reads a JSON-lines trace and validates it. `path` names the source in errors.
pub fn read_text<R: BufRead>(r: R, path: &str) -> Result<Trace, TraceError> {
    let fail = |line: u64, message: String| TraceError::Text {
        path: path.to_string(),
        line,
        message,
    };
    let mut trace: Option<Trace> = None;
    let (mut deps, mut sends) = (Vec::new(), Vec::new());
    let mut last_line = 0;
    let mut version = TEXT_VERSION;
    let mut ended = false;
    for (i, l) in r.lines().enumerate() {
        let n = i as u64 + 1;
        last_line = n;
        let l = l.map_err(|e| fail(n, format!("read error: {e}")))?;
        if l.trim().is_empty() {
            continue;
        }
        let Some(t) = trace.as_mut() else {
            let h: HeaderLine = serde_json::from_str(&l).map_err(|e| {
                fail(n, format!("expected the header line {{\"whatif_trace\":{TEXT_VERSION},\"name\":...,\"recorded_pes\":...}}: {e}"))
            })?;
            if !(1..=TEXT_VERSION).contains(&h.whatif_trace) {
                return Err(fail(
                    n,
                    format!(
                        "text format version {} is not supported (this build reads 1 to {TEXT_VERSION})",
                        h.whatif_trace
                    ),
                ));
            }
            version = h.whatif_trace;
            trace = Some(Trace::new(TraceMeta {
                name: h.name,
                generator: h.generator,
                description: h.description,
                recorded_pes: h.recorded_pes,
                net: h.net,
                seed: h.seed,
                cpu_scale: h.cpu_scale,
                sequential_objects: h.sequential_objects,
            }));
            continue;
        };
        if ended {
            return Err(fail(
                n,
                "expected the end of the file after the `end` record".into(),
            ));
        }
        let parsed: Line = serde_json::from_str(&l).map_err(|e| {
            fail(
                n,
                format!(
                    "expected an {{\"entry\"|\"object\"|\"group\"|\"block\"|\"end\": {{...}}}} line: {e}"
                ),
            )
        })?;
        let expect_id = |kind: &str, id: u32, want: usize| {
            if id as usize != want {
                Err(fail(
                    n,
                    format!("{kind} id {id} is out of order; expected {want}"),
                ))
            } else {
                Ok(())
            }
        };
        match parsed {
            Line::Entry(e) => {
                expect_id("entry", e.id, t.entries.len())?;
                t.entries.push(EntryMethod {
                    name: e.name,
                    outside_object_order: e.outside_object_order,
                });
            }
            Line::Object(o) => {
                expect_id("object", o.id, t.objects.len())?;
                t.objects.push(ObjectInfo {
                    name: o.name,
                    recorded_pe: PeId(o.pe),
                    moves: o
                        .moves
                        .iter()
                        .map(|&[from, pe]| crate::model::RecordedMove {
                            from: crate::ids::BlockId(from),
                            pe: PeId(pe),
                        })
                        .collect::<Vec<_>>()
                        .into(),
                    pinned: o.pinned,
                });
            }
            Line::Group(g) => {
                expect_id("group", g.id, t.groups.len())?;
                t.groups.push(Group { members: g.members });
            }
            Line::Block(b) => {
                expect_id("block", b.id, t.num_blocks())?;
                deps.clear();
                deps.extend(b.deps.iter().map(|d| BlockId(*d)));
                sends.clear();
                sends.extend(b.sends.iter().map(|s| Send {
                    msg: MsgId(s.msg),
                    offset: SimDuration::from_ps(s.offset_ps),
                    dest: s.to,
                    bytes: s.bytes,
                    entry: EntryId(s.entry),
                }));
                let block = Block {
                    object: ObjectId(b.object),
                    entry: EntryId(b.entry),
                    duration: SimDuration::from_ps(b.duration_ps),
                    trigger: b.trigger.map(MsgId),
                    iteration: b.iteration,
                    lb_sync: b.lb_sync,
                    priority: b.priority,
                    network: b.network,
                    recorded_start: b.start_ps.map(SimTime::from_ps),
                    recorded_arrival: b.arrival_ps.map(SimTime::from_ps),
                };
                t.push_block(block, &deps, &sends);
            }
            Line::End(e) => {
                let have = EndLine::of(t);
                if e != have {
                    return Err(fail(
                        n,
                        format!(
                            "the `end` record counts {} entries, {} objects, {} groups and {} blocks, but the file has {}, {}, {} and {}",
                            e.entries,
                            e.objects,
                            e.groups,
                            e.blocks,
                            have.entries,
                            have.objects,
                            have.groups,
                            have.blocks
                        ),
                    ));
                }
                ended = true;
            }
        }
    }
    if trace.is_some() && version >= 2 && !ended {
        return Err(fail(
            last_line.max(1),
            "expected the closing `end` record: the file is cut short (a version-2 trace ends with {\"end\":{...}})".into(),
        ));
    }
    let trace = trace.ok_or_else(|| {
        fail(
            last_line.max(1),
            "empty file: expected a header line".into(),
        )
    })?;
    trace.validate().map_err(|source| TraceError::Invalid {
        path: path.to_string(),
        source,
    })?;
    Ok(trace)
}
