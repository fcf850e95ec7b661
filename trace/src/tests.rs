//! Round trips, validation and robustness against malformed input.

use super::*;
use sim_core::rng::below;
use sim_core::{SeedTree, SimDuration, SimTime};

/// A small trace that uses every feature of the format.
pub(crate) fn sample() -> Trace {
    let mut b = TraceBuilder::new(TraceMeta {
        name: "sample".into(),
        generator: "unit test".into(),
        description: "every feature once".into(),
        recorded_pes: 2,
        net: Some("latency:lat=5us".into()),
        seed: Some(7),
        cpu_scale: None,
        sequential_objects: false,
    });
    let work = b.entry("work");
    let recv = b.entry("recv");
    let o: Vec<ObjectId> = (0..3)
        .map(|i| b.object(format!("o{i}"), PeId(i % 2)))
        .collect();
    let g = b.group(vec![o[1], o[2]]);
    let (m0, m1, m2) = (b.new_msg(), b.new_msg(), b.new_msg());
    let first = Block {
        iteration: Some(0),
        recorded_start: Some(SimTime::from_ps(10)),
        recorded_arrival: Some(SimTime::from_ps(7)),
        ..Block::new(o[0], work, SimDuration::from_ps(1000))
    };
    let s = |msg, off, dest, bytes| Send {
        msg,
        offset: SimDuration::from_ps(off),
        dest,
        bytes,
        entry: recv,
    };
    let b0 = b.block(
        first,
        &[],
        &[
            s(m0, 100, Destination::Group(g), 64),
            s(m1, 900, Destination::AllExcept(o[0]), 8),
            s(m2, 1000, Destination::Object(o[0]), 1 << 40),
        ],
    );
    let r1 = Block {
        trigger: Some(m0),
        priority: -3,
        ..Block::new(o[1], recv, SimDuration::from_ps(5))
    };
    b.block(r1, &[], &[]);
    let r2 = Block {
        trigger: Some(m0),
        lb_sync: true,
        ..Block::new(o[2], recv, SimDuration::ZERO)
    };
    let b2 = b.block(r2, &[], &[]);
    let r3 = Block {
        trigger: Some(m1),
        iteration: Some(u32::MAX - 1),
        network: true,
        ..Block::new(o[1], recv, SimDuration::ZERO)
    };
    b.block(r3, &[], &[]);
    let last = Block {
        trigger: Some(m2),
        priority: i32::MIN,
        ..Block::new(o[0], recv, SimDuration::from_ps(u64::MAX))
    };
    b.block(last, &[b0, b2], &[]);
    b.finish().expect("sample is valid")
}

fn encode(t: &Trace) -> Vec<u8> {
    let mut v = Vec::new();
    binary::write_binary(t, &mut v).unwrap();
    v
}

#[test]
fn binary_round_trip() {
    let t = sample();
    assert!(
        t.block(BlockId(3)).network,
        "the sample has a network block"
    );
    let bytes = encode(&t);
    assert_eq!(&bytes[..8], binary::MAGIC);
    let back = binary::read_binary(&bytes[..], "mem").unwrap();
    assert_eq!(back, t);
}

#[test]
fn text_round_trip() {
    let t = sample();
    let mut v = Vec::new();
    text::write_text(&t, &mut v).unwrap();
    let s = String::from_utf8(v).unwrap();
    // Header, 2 entries, 3 objects, 1 group, 5 blocks, the `end` record.
    assert_eq!(s.lines().count(), 1 + 2 + 3 + 1 + 5 + 1);
    let back = text::read_text(s.as_bytes(), "mem").unwrap();
    assert_eq!(back, t);
}

#[test]
fn text_cut_at_any_line_boundary_is_an_error() {
    let t = sample();
    let mut v = Vec::new();
    text::write_text(&t, &mut v).unwrap();
    let s = String::from_utf8(v).unwrap();
    let lines: Vec<&str> = s.lines().collect();
    for keep in 1..lines.len() {
        let cut = lines[..keep].join("\n") + "\n";
        let e = text::read_text(cut.as_bytes(), "mem")
            .expect_err("a cut file must not read")
            .to_string();
        assert!(e.contains("end"), "cut after {keep} lines: {e}");
    }
    // Wrong counts in the `end` record, and anything after it, are errors too.
    let last = lines.len() - 1;
    let bad_end = lines[..last].join("\n")
        + "\n{\"end\":{\"entries\":2,\"objects\":3,\"groups\":1,\"blocks\":4}}\n";
    let e = text::read_text(bad_end.as_bytes(), "mem")
        .unwrap_err()
        .to_string();
    assert!(e.contains("4 blocks") && e.contains("the file has"), "{e}");
    let extra = s.clone() + lines[1] + "\n";
    let e = text::read_text(extra.as_bytes(), "mem")
        .unwrap_err()
        .to_string();
    assert!(e.contains("after the `end` record"), "{e}");
    // Version 1 (no `end` record) is still read.
    let v1 = lines[..last]
        .join("\n")
        .replacen("\"whatif_trace\":2", "\"whatif_trace\":1", 1);
    assert_eq!(text::read_text(v1.as_bytes(), "mem").unwrap(), t);
}

#[test]
fn files_are_detected_by_content() {
    let dir = std::env::temp_dir().join(format!("whatif-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = sample();
    // A binary file with a .jsonl name and a text file with a .trace name both read back.
    let a = dir.join("a.jsonl");
    let b = dir.join("b.trace");
    write_trace_file(&t, &a, Format::Binary).unwrap();
    write_trace_file(&t, &b, Format::Text).unwrap();
    assert_eq!(read_trace_file(&a).unwrap(), t);
    assert_eq!(read_trace_file(&b).unwrap(), t);
    let c = dir.join("c.txt");
    std::fs::write(&c, b"hello world").unwrap();
    let e = read_trace_file(&c).unwrap_err().to_string();
    assert!(
        e.contains("c.txt") && e.contains("offset 0") && e.contains("WHATIFTR"),
        "{e}"
    );
    let missing = read_trace_file(&dir.join("nope")).unwrap_err().to_string();
    assert!(missing.contains("nope"), "{missing}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn truncation_is_reported_with_offset() {
    let bytes = encode(&sample());
    for cut in 0..bytes.len() {
        let err = binary::read_binary(&bytes[..cut], "cut.trace").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("cut.trace: byte offset "),
            "cut at {cut}: {msg}"
        );
        match err {
            TraceError::Binary { offset, .. } => {
                assert!(offset <= cut as u64, "cut at {cut}: {msg}")
            }
            other => panic!("cut at {cut}: unexpected {other}"),
        }
    }
    let mut extra = bytes.clone();
    extra.push(0);
    assert!(
        binary::read_binary(&extra[..], "x")
            .unwrap_err()
            .to_string()
            .contains("end of file after the trailer")
    );
}

#[test]
fn random_and_mutated_bytes_never_panic() {
    let valid = encode(&sample());
    let mut rng = SeedTree::new(99).stream("fuzz");
    for case in 0..20_000u64 {
        let input: Vec<u8> = match case % 3 {
            0 => {
                let n = below(&mut rng, 200) as usize;
                (0..n).map(|_| below(&mut rng, 256) as u8).collect()
            }
            1 => {
                // Valid header, random tail.
                let mut v = valid[..below(&mut rng, valid.len() as u64) as usize].to_vec();
                let n = below(&mut rng, 64) as usize;
                v.extend((0..n).map(|_| below(&mut rng, 256) as u8));
                v
            }
            _ => {
                let mut v = valid.clone();
                for _ in 0..1 + below(&mut rng, 4) {
                    let i = below(&mut rng, v.len() as u64) as usize;
                    v[i] = below(&mut rng, 256) as u8;
                }
                v
            }
        };
        // Must return (Ok or Err), never panic; reproduce with case number.
        let r = std::panic::catch_unwind(|| binary::read_binary(&input[..], "fuzz").map(|_| ()));
        assert!(r.is_ok(), "binary decoder panicked on case {case}");
        let text = String::from_utf8_lossy(&input).into_owned();
        let r = std::panic::catch_unwind(|| text::read_text(text.as_bytes(), "fuzz").map(|_| ()));
        assert!(r.is_ok(), "text decoder panicked on case {case}");
    }
}

#[test]
fn text_errors_name_the_line() {
    let mut v = Vec::new();
    text::write_text(&sample(), &mut v).unwrap();
    let s = String::from_utf8(v).unwrap();
    let mut lines: Vec<&str> = s.lines().collect();
    lines[3] = "{\"object\":{\"id\":0,\"name\":\"x\"}}";
    let bad = lines.join("\n");
    let e = text::read_text(bad.as_bytes(), "t.jsonl")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("t.jsonl: line 4:") && e.contains("pe"), "{e}");
    let e = text::read_text(&b""[..], "t.jsonl")
        .unwrap_err()
        .to_string();
    assert!(e.contains("empty file"), "{e}");
}

#[test]
fn validation_rejects_inconsistent_traces() {
    let base = || {
        let mut b = TraceBuilder::new(TraceMeta {
            recorded_pes: 1,
            ..Default::default()
        });
        let e = b.entry("e");
        let o = b.object("o", PeId(0));
        (b, e, o)
    };
    let expect = |b: TraceBuilder, needle: &str| {
        let e = b.finish().unwrap_err().to_string();
        assert!(e.contains(needle), "expected `{needle}` in `{e}`");
    };
    let (mut b, e, o) = base();
    let b0 = b.block(Block::new(o, e, SimDuration::ZERO), &[], &[]);
    b.block(
        Block::new(o, e, SimDuration::ZERO),
        &[BlockId(b0.0 + 1)],
        &[],
    );
    expect(b, "not an earlier block");

    let (mut b, e, o) = base();
    let m = b.new_msg();
    let s = Send {
        msg: m,
        offset: SimDuration::from_ps(2),
        dest: Destination::Object(o),
        bytes: 1,
        entry: e,
    };
    b.block(Block::new(o, e, SimDuration::from_ps(1)), &[], &[s]);
    expect(b, "after its end");

    let (mut b, e, o) = base();
    let s = Send {
        msg: MsgId(5),
        offset: SimDuration::ZERO,
        dest: Destination::Object(o),
        bytes: 1,
        entry: e,
    };
    b.block(Block::new(o, e, SimDuration::ZERO), &[], &[s, s]);
    expect(b, "sent more than once");

    let (mut b, e, o) = base();
    let o2 = b.object("o2", PeId(0));
    let m = b.new_msg();
    let s = Send {
        msg: m,
        offset: SimDuration::ZERO,
        dest: Destination::Object(o2),
        bytes: 1,
        entry: e,
    };
    b.block(Block::new(o, e, SimDuration::ZERO), &[], &[s]);
    b.block(
        Block {
            trigger: Some(m),
            ..Block::new(o, e, SimDuration::ZERO)
        },
        &[],
        &[],
    );
    expect(b, "addressed to");

    let (mut b, e, o) = base();
    b.block(
        Block {
            trigger: Some(MsgId(9)),
            ..Block::new(o, e, SimDuration::ZERO)
        },
        &[],
        &[],
    );
    b.block(
        Block {
            trigger: Some(MsgId(9)),
            ..Block::new(o, e, SimDuration::ZERO)
        },
        &[],
        &[],
    );
    expect(b, "both triggered by");

    let (mut b, _e, _o) = base();
    b.object("far", PeId(3));
    expect(b, "only 1 PEs");
}

#[test]
fn network_blocks_take_no_time_and_flags_are_checked() {
    let mut b = TraceBuilder::new(TraceMeta {
        recorded_pes: 1,
        ..TraceMeta::default()
    });
    let e = b.entry("transfer");
    let o = b.object("o", PeId(0));
    b.block(
        Block {
            network: true,
            ..Block::new(o, e, SimDuration::from_ps(1))
        },
        &[],
        &[],
    );
    let err = b.finish().unwrap_err().to_string();
    assert!(
        err.contains("is a network block but lasts 1 ps (network blocks take no time)"),
        "{err}"
    );
    // Columnar: an undefined flag bit is refused with its offset.
    let t = sample();
    let mut bytes = encode_columnar(&Repeated::flat(t.clone()));
    let flags_at = find_flags_column(&bytes, &t);
    bytes[flags_at] = 4;
    let e = decode_columnar(&bytes).unwrap_err().to_string();
    assert!(e.contains("block flags 0 to 3"), "{e}");
    bytes[flags_at] = FLAG_NETWORK | FLAG_LB_SYNC;
    assert!(decode_columnar(&bytes).is_ok());
}

/// The offset in `bytes` (the columnar encoding of `t`) of block 3's flag byte: the one byte
/// that changes when that (zero-time) block is not a network block.
fn find_flags_column(bytes: &[u8], t: &Trace) -> usize {
    let mut b = TraceBuilder::new(t.meta.clone());
    for e in &t.entries {
        b.entry(&e.name);
    }
    for o in &t.objects {
        b.object(o.name.clone(), o.recorded_pe);
    }
    for g in &t.groups {
        b.group(g.members.clone());
    }
    for id in t.block_ids() {
        let mut blk = t.block(id);
        blk.network &= id.0 != 3;
        b.block(blk, t.deps(id), t.sends(id));
    }
    let other = encode_columnar(&Repeated::flat(b.finish().unwrap()));
    let diff: Vec<usize> = (0..bytes.len()).filter(|&i| bytes[i] != other[i]).collect();
    assert_eq!(diff.len(), 1, "one flag byte differs");
    diff[0]
}

#[test]
fn summary_counts() {
    let s = TraceSummary::of(&sample());
    assert_eq!((s.objects, s.blocks, s.sends), (3, 5, 3));
    assert_eq!(
        (
            s.point_to_point,
            s.multicast,
            s.broadcast,
            s.broadcast_except
        ),
        (1, 1, 0, 1)
    );
    assert_eq!(s.iterations, Some(u32::MAX));
    assert_eq!(s.recorded_start_ps, Some(10));
    assert_eq!(s.recorded_end_ps, Some(1010));
    assert_eq!(s.entry_table[1].blocks, 4);
    assert_eq!(s.entry_table[1].messages_in, 3);
    // Deliveries count consumers: the multicast twice (o1, o2), the broadcast to all but
    // o0 once (o1) and the message to o0 once.
    assert_eq!(s.entry_table[1].deliveries, 4);
    let text = s.to_string();
    assert!(
        text.contains("recv") && text.contains("5 (4 triggered"),
        "{text}"
    );
}

#[test]
fn meta_flags_round_trip_and_older_versions_are_still_read() {
    let mut t = sample();
    t.meta.cpu_scale = Some("1/3".into());
    t.meta.sequential_objects = true;
    let bytes = encode(&t);
    assert_eq!(&bytes[8..10], &3u16.to_le_bytes());
    let back = binary::read_binary(&bytes[..], "v3").unwrap();
    assert_eq!(back.meta.cpu_scale.as_deref(), Some("1/3"));
    assert!(back.meta.sequential_objects);
    let mut text = Vec::new();
    text::write_text(&t, &mut text).unwrap();
    assert_eq!(text::read_text(&text[..], "t").unwrap(), t);
    // Version 2 lacks the sequential-objects byte; version 1 also the cpu-scale flag byte.
    let t0 = sample();
    let v3 = encode(&t0);
    let cpu_flag = {
        // magic, version, then name/generator/description (1-byte lengths here), pes, net, seed
        let mut at = 10;
        for _ in 0..3 {
            at += 1 + v3[at] as usize;
        }
        at += 1; // recorded_pes
        at += 1 + 1 + v3[at + 1] as usize; // has_net, net
        at += 1 + 1; // has_seed, seed 7
        at
    };
    assert_eq!(v3[cpu_flag], 0, "cpu-scale flag of a trace without one");
    assert_eq!(v3[cpu_flag + 1], 0, "sequential-objects flag");
    let mut v2 = v3.clone();
    v2.remove(cpu_flag + 1);
    v2[8..10].copy_from_slice(&2u16.to_le_bytes());
    assert_eq!(binary::read_binary(&v2[..], "v2").unwrap(), t0);
    let mut v1 = v2.clone();
    v1.remove(cpu_flag);
    v1[8..10].copy_from_slice(&1u16.to_le_bytes());
    assert_eq!(binary::read_binary(&v1[..], "v1").unwrap(), t0);
    let mut v4 = v3;
    v4[8..10].copy_from_slice(&4u16.to_le_bytes());
    let e = binary::read_binary(&v4[..], "v4").unwrap_err().to_string();
    assert!(e.contains("found version 4"), "{e}");
}

#[test]
fn send_blocks_and_consumers_invert_the_block_lists() {
    let t = sample();
    let owners = t.send_blocks();
    assert_eq!(owners.len(), t.num_sends());
    for id in t.block_ids() {
        for s in t.send_range(id) {
            assert_eq!(owners[s], id.0);
        }
    }
    let c = t.consumers();
    assert_eq!(c.start.len(), t.num_sends() + 1);
    let index = t.message_index();
    let mut seen = 0;
    for id in t.block_ids() {
        let expect = t.block(id).trigger.and_then(|m| index.lookup(m));
        assert_eq!(
            c.trigger_send[id.index()],
            expect.map_or(u32::MAX, |s| s as u32)
        );
        if let Some(s) = expect {
            let range = c.start[s] as usize..c.start[s + 1] as usize;
            assert!(c.blocks[range].contains(&id.0));
            seen += 1;
        }
    }
    assert_eq!(seen, c.blocks.len());
    assert!(seen > 1, "the sample has triggered blocks");
}

fn encode_columnar(r: &Repeated) -> Vec<u8> {
    let mut v = Vec::new();
    columnar::write_columnar(r, &mut v).unwrap();
    v
}

fn decode_columnar(bytes: &[u8]) -> Result<Repeated, TraceError> {
    columnar::read_columnar(bytes, bytes.len() as u64, "mem")
}

/// A repeated trace: a 3-object ring with carried dependencies, per-iteration durations,
/// end-anchored sends and iteration labels.
pub(crate) fn repeated_sample() -> Repeated {
    let mut b = TraceBuilder::new(TraceMeta {
        name: "rep".into(),
        recorded_pes: 3,
        ..Default::default()
    });
    let (work, recv) = (b.entry("work"), b.entry("recv"));
    let o: Vec<ObjectId> = (0..3).map(|i| b.object(format!("o{i}"), PeId(i))).collect();
    let mut msgs = Vec::new();
    for i in 0..3usize {
        let m = b.new_msg();
        msgs.push(m);
        let blk = Block {
            iteration: Some(0),
            ..Block::new(o[i], work, SimDuration::from_ps(1000))
        };
        let sends = [
            Send {
                msg: m,
                offset: SimDuration::from_ps(1000),
                dest: Destination::Object(o[(i + 1) % 3]),
                bytes: 100,
                entry: recv,
            },
            Send {
                msg: b.new_msg(),
                offset: SimDuration::from_ps(10),
                dest: Destination::Object(o[i]),
                bytes: 1,
                entry: recv,
            },
        ];
        b.block(blk, &[], &sends);
    }
    for i in 0..3usize {
        let blk = Block {
            trigger: Some(msgs[(i + 2) % 3]),
            iteration: Some(0),
            ..Block::new(o[i], recv, SimDuration::from_ps(5))
        };
        b.block(blk, &[], &[]);
    }
    let body = b.finish().unwrap();
    let reps = 4;
    // Block i (work) waits for its own work and receive of the previous iteration.
    let mut carried_end = Vec::new();
    let mut carried = Vec::new();
    for i in 0..6u32 {
        if i < 3 {
            carried.push(Carried {
                block: BlockId(i),
                lag: 1,
            });
            carried.push(Carried {
                block: BlockId(i + 3),
                lag: 1,
            });
        }
        carried_end.push(carried.len() as u32);
    }
    let varying = Varying {
        blocks: vec![0, 2],
        durations_ps: vec![1000, 1000, 1500, 900, 700, 2000, 1000, 1000],
        end_anchored: vec![1, 0, 0, 0, 1, 0],
    };
    Repeated::new(body, reps, carried_end, carried, 10, 1, varying).unwrap()
}

#[test]
fn columnar_round_trip_flat_and_repeated() {
    let t = sample();
    let r = Repeated::flat(t.clone());
    let bytes = encode_columnar(&r);
    assert_eq!(&bytes[..8], columnar::MAGIC);
    assert_eq!(
        bytes.len() % 8,
        4,
        "columns padded to 8 bytes, then the 4-byte trailer"
    );
    let back = decode_columnar(&bytes).unwrap();
    assert!(back.is_flat());
    assert_eq!(back.body(), &t);
    let rep = repeated_sample();
    let back = decode_columnar(&encode_columnar(&rep)).unwrap();
    assert_eq!(back, rep);
    // Through files: a repeated trace stays compact, or expands on request.
    let dir = std::env::temp_dir().join(format!("whatif-columnar-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("r.trace");
    write_repeated_file(&rep, &p, Format::Binary).unwrap();
    assert_eq!(read_repeated_file(&p).unwrap(), rep);
    assert_eq!(read_trace_file(&p).unwrap(), rep.expand());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn expansion_follows_the_repetition_rules() {
    let rep = repeated_sample();
    let t = rep.expand();
    assert_eq!(t.num_blocks(), 24);
    assert_eq!(rep.num_blocks(), 24);
    // Iteration 2, block 0 (varying, 700 ps): its end-anchored send leaves at its end; the
    // other keeps offset 10. Labels shift by 10 per iteration, iterations by 1.
    let b = t.block(BlockId(12));
    assert_eq!(b.duration.as_ps(), 700);
    assert_eq!(b.iteration, Some(2));
    let s = t.sends(BlockId(12));
    assert_eq!((s[0].msg.0, s[0].offset.as_ps()), (20, 700));
    assert_eq!((s[1].msg.0, s[1].offset.as_ps()), (21, 10));
    // Block 2 in iteration 1 (900 ps): anchored send at its end; block 1 never varies.
    assert_eq!(t.sends(BlockId(8))[0].offset.as_ps(), 900);
    assert_eq!(t.block(BlockId(7)).duration.as_ps(), 1000);
    // Carried dependencies appear from iteration 1 on.
    assert!(t.deps(BlockId(0)).is_empty());
    assert_eq!(t.deps(BlockId(6)), &[BlockId(0), BlockId(3)]);
    // Receive blocks are triggered by their own iteration's message.
    assert_eq!(t.block(BlockId(9)).trigger, Some(MsgId(14)));
}

#[test]
fn repetition_is_validated() {
    let rep = repeated_sample();
    let body = rep.body().clone();
    let v = rep.varying().clone();
    let ends = rep.carried_ends().to_vec();
    let car = rep.all_carried().to_vec();
    let err = |r: Result<Repeated, ValidationError>| r.unwrap_err().to_string();
    // Stride too small: labels of iteration 1 would collide with iteration 0's.
    let e = err(Repeated::new(
        body.clone(),
        4,
        ends.clone(),
        car.clone(),
        3,
        1,
        v.clone(),
    ));
    assert!(e.contains("collide"), "{e}");
    let e = err(Repeated::new(
        body.clone(),
        4,
        ends.clone(),
        car.clone(),
        10,
        0,
        v.clone(),
    ));
    assert!(e.contains("iteration-label stride"), "{e}");
    let mut bad = car.clone();
    bad[0].lag = 0;
    let e = err(Repeated::new(
        body.clone(),
        4,
        ends.clone(),
        bad,
        10,
        1,
        v.clone(),
    ));
    assert!(e.contains("lag of at least 1"), "{e}");
    let mut short = v.clone();
    short.durations_ps.pop();
    let e = err(Repeated::new(
        body.clone(),
        4,
        ends.clone(),
        car.clone(),
        10,
        1,
        short,
    ));
    assert!(e.contains("per-iteration durations"), "{e}");
    // An anchored-free send at offset 1000 cannot fit a 700 ps iteration.
    let mut unanchored = v.clone();
    unanchored.end_anchored[0] = 0;
    let e = err(Repeated::new(
        body.clone(),
        4,
        ends.clone(),
        car.clone(),
        10,
        1,
        unanchored,
    ));
    assert!(e.contains("after its end in iteration 2"), "{e}");
    let e = err(Repeated::new(body, 0, ends, car, 10, 1, v));
    assert!(e.contains("0 repetitions"), "{e}");
}

#[test]
fn columnar_truncation_and_corruption_give_errors_not_panics() {
    let bytes = encode_columnar(&repeated_sample());
    for cut in 0..bytes.len() {
        let e = decode_columnar(&bytes[..cut]).unwrap_err().to_string();
        assert!(e.starts_with("mem: "), "cut at {cut}: {e}");
    }
    let mut extra = bytes.clone();
    extra.extend_from_slice(&[0; 8]);
    let e = decode_columnar(&extra).unwrap_err().to_string();
    assert!(e.contains("bytes of columns"), "{e}");
    // A huge block count is refused before anything is allocated.
    let flat = encode_columnar(&Repeated::flat(sample()));
    let mut rng = SeedTree::new(7).stream("columnar-fuzz");
    for case in 0..20_000u64 {
        let src = if case % 2 == 0 { &bytes } else { &flat };
        let mut v = src.clone();
        for _ in 0..1 + below(&mut rng, 4) {
            let i = below(&mut rng, v.len() as u64) as usize;
            v[i] = below(&mut rng, 256) as u8;
        }
        let r = std::panic::catch_unwind(|| decode_columnar(&v).map(|_| ()));
        assert!(r.is_ok(), "columnar decoder panicked on case {case}");
    }
}

#[test]
fn summary_of_a_repeated_trace_equals_the_summary_of_its_expansion() {
    let rep = repeated_sample();
    let mut s = TraceSummary::of_repeated(&rep);
    assert_eq!(s.repeats, Some((6, 4)));
    assert!(s.to_string().contains("one iteration of 6 blocks, 4 times"));
    s.repeats = None;
    assert_eq!(s, TraceSummary::of(&rep.expand()));
}

#[test]
fn compressed_files_read_back_in_every_format() {
    let dir = std::env::temp_dir().join(format!("whatif-zst-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = sample();
    let rep = repeated_sample();
    // The name picks compression and, before `.zst`, the format inside.
    assert_eq!(Format::from_path(Path::new("a.jsonl.zst")), Format::Text);
    assert_eq!(Format::from_path(Path::new("a.trace.zst")), Format::Binary);
    assert!(compress::is_compressed_name(Path::new("a.trace.zst")));
    assert!(!compress::is_compressed_name(Path::new("a.zst.trace")));
    let a = dir.join("a.trace.zst");
    let b = dir.join("b.jsonl.zst");
    let r = dir.join("r.trace.zst");
    write_trace_file(&t, &a, Format::from_path(&a)).unwrap();
    write_trace_file(&t, &b, Format::from_path(&b)).unwrap();
    write_repeated_file(&rep, &r, Format::Binary).unwrap();
    for p in [&a, &b, &r] {
        let bytes = std::fs::read(p).unwrap();
        assert_eq!(bytes[..4], compress::ZSTD_MAGIC, "{}", p.display());
    }
    assert_eq!(read_trace_file(&a).unwrap(), t);
    assert_eq!(read_trace_file(&b).unwrap(), t);
    assert_eq!(read_repeated_file(&r).unwrap(), rep);
    // Read by content: a compressed file under any name, and the bytes inside are the
    // uncompressed file's bytes.
    let plain = dir.join("plain.trace");
    write_trace_file(&t, &plain, Format::Binary).unwrap();
    let inner = zstd::stream::decode_all(&std::fs::read(&a).unwrap()[..]).unwrap();
    assert_eq!(inner, std::fs::read(&plain).unwrap());
    let renamed = dir.join("renamed.trace");
    std::fs::copy(&a, &renamed).unwrap();
    assert_eq!(read_trace_file(&renamed).unwrap(), t);
    // The same trace gives the same bytes.
    let a2 = dir.join("a2.trace.zst");
    write_trace_file(&t, &a2, Format::Binary).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&a2).unwrap());
    // A periodic trace, compressed.
    let p = dir.join("p.trace.zst");
    let per = crate::Periodic {
        header: t.clone(),
        pieces: Vec::new(),
    };
    write_periodic_file(&per, &p).unwrap();
    assert_eq!(std::fs::read(&p).unwrap()[..4], compress::ZSTD_MAGIC);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bad_compressed_file_is_an_error_that_names_it() {
    let dir = std::env::temp_dir().join(format!("whatif-zst-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = sample();
    let a = dir.join("a.trace.zst");
    write_trace_file(&t, &a, Format::Binary).unwrap();
    let bytes = std::fs::read(&a).unwrap();
    // Cut anywhere after the magic: an error naming the file, never a panic.
    for cut in (4..bytes.len()).step_by(3) {
        let p = dir.join("cut.trace.zst");
        std::fs::write(&p, &bytes[..cut]).unwrap();
        let e = read_trace_file(&p).unwrap_err().to_string();
        assert!(e.contains("cut.trace.zst"), "cut at {cut}: {e}");
    }
    // Flipped bytes in the middle: an error (Zstandard checks its blocks) or, if the damage
    // decodes, the trace reader's own checks; never a panic.
    for at in (8..bytes.len()).step_by(5) {
        let mut b = bytes.clone();
        b[at] ^= 0x5a;
        let p = dir.join("flip.trace.zst");
        std::fs::write(&p, &b).unwrap();
        let _ = read_trace_file(&p);
    }
    // A compressed stream of something that is not a trace.
    let p = dir.join("junk.zst");
    std::fs::write(
        &p,
        zstd::stream::encode_all(&b"hello world"[..], 3).unwrap(),
    )
    .unwrap();
    let e = read_trace_file(&p).unwrap_err().to_string();
    assert!(
        e.contains("junk.zst (decompressed)") && e.contains("\"hello wo\""),
        "{e}"
    );
    // Compressed twice.
    let p = dir.join("twice.zst");
    std::fs::write(&p, zstd::stream::encode_all(&bytes[..], 3).unwrap()).unwrap();
    let e = read_trace_file(&p).unwrap_err().to_string();
    assert!(e.contains("compressed twice"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Blocks `range` of `t` as a segment with absolute references (what an emulator spills).
fn segment_of(t: &Trace, range: std::ops::Range<usize>) -> crate::periodic::Segment {
    let c = t.columns();
    let mut s = crate::periodic::Segment::default();
    for i in range {
        let id = BlockId(i as u32);
        s.object.push(c.object[i]);
        s.entry.push(c.entry[i]);
        s.duration_ps.push(c.duration_ps[i]);
        s.trigger.push(c.trigger[i]);
        s.iteration
            .push(c.iteration.get(i).copied().unwrap_or(NO_ITERATION));
        s.priority.push(c.priority.get(i).copied().unwrap_or(0));
        s.flags.push(c.flags.get(i).copied().unwrap_or(0));
        s.recorded_start
            .push(c.recorded_start.get(i).copied().unwrap_or(NONE_U64));
        s.recorded_arrival
            .push(c.recorded_arrival.get(i).copied().unwrap_or(NONE_U64));
        s.deps.extend(t.deps(id).iter().map(|d| d.0 as u64));
        s.deps_end.push(s.deps.len() as u32);
        s.sends.extend_from_slice(t.sends(id));
        s.sends_end.push(s.sends.len() as u32);
    }
    s
}

#[test]
fn a_spilled_trace_has_the_bytes_of_the_trace_written_at_once() {
    let dir = std::env::temp_dir().join(format!("whatif-spill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut plain = Vec::new();
    // (The sample's sends are labelled in order, as an emulator's are: a spill numbers them.)
    for (k, t) in [sample()].into_iter().enumerate() {
        plain.clear();
        columnar::write_columnar_flat(&t, &mut plain).unwrap();
        let n = t.num_blocks();
        // Every way of cutting the blocks into two or three batches, spilled plain or
        // compressed.
        for (a, b, z) in (0..=n)
            .flat_map(|a| (a..=n).step_by(3).map(move |b| (a, b)))
            .flat_map(|(a, b)| [(a, b, false), (a, b, true)])
        {
            {
                let sd = dir.join(format!("s{k}-{a}-{b}-{z}"));
                let mut sp = if z {
                    spill::ColumnSpill::create_compressed(&sd).unwrap()
                } else {
                    spill::ColumnSpill::create(&sd).unwrap()
                };
                assert_eq!(sp.is_compressed(), z);
                for r in [0..a, a..b, b..n] {
                    sp.push(&segment_of(&t, r)).unwrap();
                }
                assert_eq!(sp.blocks(), n as u64);
                let mut out = Vec::new();
                sp.finish(&t, &mut out).unwrap();
                assert!(
                    out == plain,
                    "trace {k}, cut at {a} and {b}, compressed {z}"
                );
                if z {
                    // As frames: they decode to the same bytes, and read as the trace.
                    let mut frames = Vec::new();
                    sp.finish_compressed(&t, &mut frames).unwrap();
                    assert_eq!(&frames[..4], &compress::ZSTD_MAGIC);
                    let decoded = zstd::stream::decode_all(&frames[..]).unwrap();
                    assert!(decoded == plain, "frames cut at {a} and {b}");
                    let f = dir.join(format!("f{k}-{a}-{b}.trace.zst"));
                    std::fs::write(&f, &frames).unwrap();
                    let back = crate::read_trace_file(&f).unwrap();
                    assert_eq!(back.num_blocks(), n);
                    let mut again = Vec::new();
                    sp.finish_compressed(&t, &mut again).unwrap();
                    assert!(again == frames, "the same bytes a second time");
                } else {
                    let mut frames = Vec::new();
                    assert!(sp.finish_compressed(&t, &mut frames).is_err());
                }
                // Back in memory: the same segment, and the folder removed.
                let all = segment_of(&t, 0..n);
                let back = sp.into_segment().unwrap();
                assert_eq!(
                    (&back.object, &back.entry, &back.duration_ps, &back.trigger),
                    (&all.object, &all.entry, &all.duration_ps, &all.trigger)
                );
                assert_eq!(
                    (&back.iteration, &back.priority, &back.flags),
                    (&all.iteration, &all.priority, &all.flags)
                );
                assert_eq!(
                    (&back.recorded_start, &back.recorded_arrival),
                    (&all.recorded_start, &all.recorded_arrival)
                );
                assert_eq!(
                    (&back.deps_end, &back.deps, &back.sends_end, &back.sends),
                    (&all.deps_end, &all.deps, &all.sends_end, &all.sends)
                );
                assert!(!sd.exists(), "the spill folder is removed");
            }
        }
        // Optional columns absent from the trace stay out of the file.
        let mut sp = spill::ColumnSpill::create(&dir.join("one")).unwrap();
        let mut s = segment_of(&t, 0..n);
        s.recorded_start.clear();
        s.recorded_arrival.clear();
        sp.push(&s).unwrap();
        let mut out = Vec::new();
        sp.finish(&t, &mut out).unwrap();
        let back = columnar::read_columnar(&out[..], out.len() as u64, "spill").unwrap();
        assert!(back.body().columns().recorded_start.is_empty());
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// An object a load balancer moved: its moves survive every format (binary, text, columnar),
/// give each block its recorded PE, and are checked; a trace without moves is written as
/// before (object flags 0 or 1).
#[test]
fn recorded_moves_round_trip_and_are_validated() {
    let plain = sample();
    let mut t = sample();
    // Object 0 runs blocks 0 and 4; from block 4 on it ran on PE 1.
    t.objects[0].moves = vec![RecordedMove {
        from: BlockId(4),
        pe: PeId(1),
    }]
    .into();
    t.validate().unwrap();
    assert_eq!(plain.recorded_block_pes(), vec![0, 1, 0, 1, 0]);
    assert_eq!(t.recorded_block_pes(), vec![0, 1, 0, 1, 1]);
    assert!(t.has_recorded_moves() && !plain.has_recorded_moves());

    let bytes = encode(&t);
    let back = binary::read_binary(&bytes[..], "moves").unwrap();
    assert_eq!(back, t);
    let mut text = Vec::new();
    text::write_text(&t, &mut text).unwrap();
    assert!(String::from_utf8_lossy(&text).contains(r#""moves":[[4,1]]"#));
    assert_eq!(text::read_text(&text[..], "t").unwrap(), t);
    let col = encode_columnar(&Repeated::flat(t.clone()));
    assert_eq!(decode_columnar(&col).unwrap().body(), &t);
    // Without moves nothing is written for them (what older builds wrote); with them, after
    // the objects: a move count per object (3 bytes) and the move's block and PE (2 bytes).
    let plain_bytes = encode(&plain);
    assert_eq!(bytes.len(), plain_bytes.len() + 5);
    let mut plain_text = Vec::new();
    text::write_text(&plain, &mut plain_text).unwrap();
    assert!(!String::from_utf8_lossy(&plain_text).contains("moves"));

    for (moves, why) in [
        (vec![(1, 1)], "not one of its blocks"),
        (vec![(4, 2)], "only 2 PEs"),
        (vec![(4, 1), (0, 0)], "not in block order"),
        (vec![(9, 1)], "not one of its blocks"),
    ] {
        let mut bad = sample();
        bad.objects[0].moves = moves
            .iter()
            .map(|&(b, pe)| RecordedMove {
                from: BlockId(b),
                pe: PeId(pe),
            })
            .collect::<Vec<_>>()
            .into();
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains(why), "{moves:?}: {e}");
    }
}

/// A header flag with an id list (`flagged` marks the items of `sample()`): it survives
/// every format; a trace without it is written as before; the list is `list` inserted after
/// the objects and the object-flags byte gains `bit`, nothing else differs; and each bad
/// list of `bad` (list, what the error says, the byte it names relative to the list's
/// start) is refused at its byte offset. `key` is the JSON-lines key, written `count` times.
fn flag_list_round_trips(
    flagged: impl Fn(&mut Trace),
    (key, count): (&str, usize),
    list: &[u8],
    bit: u8,
    bad: &[(&[u8], &str, usize)],
) {
    let plain = sample();
    let mut t = sample();
    flagged(&mut t);
    let bytes = encode(&t);
    assert_eq!(binary::read_binary(&bytes[..], "flagged").unwrap(), t);
    let mut text = Vec::new();
    text::write_text(&t, &mut text).unwrap();
    let text_s = String::from_utf8_lossy(&text);
    let pair = format!("\"{key}\":true");
    assert_eq!(text_s.matches(&pair).count(), count, "{text_s}");
    assert_eq!(text::read_text(&text[..], "t").unwrap(), t);
    let col = encode_columnar(&Repeated::flat(t.clone()));
    assert_eq!(decode_columnar(&col).unwrap().body(), &t);
    let mut plain_text = Vec::new();
    text::write_text(&plain, &mut plain_text).unwrap();
    assert!(!String::from_utf8_lossy(&plain_text).contains(key));

    let plain_bytes = encode(&plain);
    let n = list.len();
    assert_eq!(bytes.len(), plain_bytes.len() + n);
    let at = (0..plain_bytes.len())
        .find(|&p| bytes[p + n..] == plain_bytes[p..] && bytes[p..p + n] == *list)
        .expect("the list");
    let flags: Vec<usize> = (0..at).filter(|&i| bytes[i] != plain_bytes[i]).collect();
    assert_eq!(flags.len(), 1);
    assert_eq!(bytes[flags[0]], plain_bytes[flags[0]] | bit);
    for &(list, why, byte) in bad {
        let mut b = bytes[..at].to_vec();
        b.extend_from_slice(list);
        b.extend_from_slice(&bytes[at + n..]);
        let e = binary::read_binary(&b[..], "bad").unwrap_err().to_string();
        assert!(e.contains(why), "{list:?}: {e}");
        assert!(e.contains(&format!("byte offset {}:", at + byte)), "{e}");
    }
}

/// Pinned objects (a Charm++ PE's groups and main chare): the list is count 2, object 0, +2.
#[test]
fn pinned_objects_round_trip_and_bad_lists_are_refused() {
    flag_list_round_trips(
        |t| {
            t.objects[0].pinned = true;
            t.objects[2].pinned = true;
        },
        ("pinned", 2),
        &[2, 0, 2],
        4,
        &[
            (&[0], "pinned object count 1 to 3", 0),
            (&[4, 0, 1, 1, 1], "pinned object count 1 to 3", 0),
            (&[2, 0, 0], "ascending order", 2),
            (&[2, 1, 2], "pinned objects below 3", 2),
        ],
    );
}

/// Entries outside object order (AMPI's message handlers): the list is count 1, entry 1.
#[test]
fn entries_outside_object_order_round_trip_and_bad_lists_are_refused() {
    let what = "entry outside object order count 1 to 2";
    flag_list_round_trips(
        |t| t.entries[1].outside_object_order = true,
        ("outside_object_order", 1),
        &[1, 1],
        8,
        &[
            (&[0], what, 0),
            (&[3, 0, 1, 1], what, 0),
            (
                &[2, 0, 0],
                "entries outside object order in ascending order",
                2,
            ),
            (&[1, 2], "entries outside object order below 2", 1),
        ],
    );
}
