//! The fast text importers: a large GOAL file parsed on two threads gives the trace a single
//! thread gives, and the same first error wherever it lies.

use importers::{Format, ImportOptions};
use std::fmt::Write as _;

/// A ring schedule of `ranks` ranks and `iters` iterations (about 14 MB for 200 x 500): each
/// rank computes, sends to its right neighbour and receives from its left one.
fn ring_goal(ranks: u32, iters: u32) -> String {
    let mut s = String::from("// ring\nnum_ranks ");
    let _ = writeln!(s, "{ranks}");
    for r in 0..ranks {
        let _ = writeln!(s, "rank {r} {{");
        let mut l = 0;
        for k in 0..iters {
            let (c, snd, rcv) = (l + 1, l + 2, l + 3);
            let _ = writeln!(s, "l{c}: calc {}", 1000 + (r * 7 + k * 13) % 500);
            let _ = writeln!(s, "l{snd}: send 512b to {} tag {k}", (r + 1) % ranks);
            let _ = writeln!(
                s,
                "l{rcv}: recv 512b from {} tag {k}",
                (r + ranks - 1) % ranks
            );
            let _ = writeln!(s, "l{snd} requires l{c}");
            if k > 0 {
                let _ = writeln!(s, "l{c} requires l{l}");
            }
            l += 3;
        }
        s.push_str("}\n");
    }
    s
}

fn import(text: &str, name: &str, parallel: bool) -> Result<trace::Trace, String> {
    let dir = std::env::temp_dir().join(format!("whatif-it-text-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    let opts = ImportOptions {
        parallel,
        ..ImportOptions::default()
    };
    let r = importers::import(Format::Goal, &p, &opts)
        .map(|i| i.trace)
        .map_err(|e| e.to_string());
    std::fs::remove_file(&p).ok();
    r
}

#[test]
fn a_large_goal_file_parses_the_same_on_two_threads() {
    let text = ring_goal(200, 500);
    assert!(text.len() > 8 << 20, "large enough to be split");
    let one = import(&text, "ring.goal", false).unwrap();
    let two = import(&text, "ring.goal", true).unwrap();
    assert!(
        one == two,
        "the two-thread parse differs from the one-thread parse"
    );
    assert_eq!(one.num_blocks(), 200 * 500 * 3);

    // Errors in the second half, across the halves and at the split give the same message.
    let lines: Vec<&str> = text.lines().collect();
    let second_half_rank = lines
        .iter()
        .rposition(|l| l.starts_with("rank 150 {"))
        .unwrap();
    // Where the parser splits: the first `rank` line after the middle of what follows the
    // header line.
    let header_end = text.find("num_ranks").unwrap()
        + text[text.find("num_ranks").unwrap()..].find('\n').unwrap()
        + 1;
    let middle = header_end + (text.len() - header_end) / 2;
    let split_byte = middle + text[middle..].find('\n').unwrap() + 1;
    let split_byte = split_byte + text[split_byte..].find("rank ").unwrap();
    let middle_rank = text[..split_byte].lines().count();
    assert!(
        lines[middle_rank].starts_with("rank "),
        "{}",
        lines[middle_rank]
    );
    let edit = |f: &dyn Fn(&mut Vec<String>)| {
        let mut v: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        f(&mut v);
        v.join("\n") + "\n"
    };
    let cases = [
        // A `requires` naming a label rank 150 never defines.
        edit(&|v| v.insert(second_half_rank + 5, "l4 requires l999999".into())),
        // Rank 3 defined again in the second half.
        edit(&|v| v[second_half_rank] = "rank 3 {".into()),
        // The rank block before the middle left open: the next `rank` line is inside it.
        edit(&|v| {
            let close = (0..middle_rank).rev().find(|&i| v[i] == "}").unwrap();
            v.remove(close);
        }),
        // The last block never closed.
        edit(&|v| {
            v.pop();
        }),
        // A bad token late in the file.
        edit(&|v| {
            let n = v.len();
            v[n - 3] = "l1: sned 8b to 1".into();
        }),
    ];
    for (i, text) in cases.iter().enumerate() {
        let a = import(text, "bad.goal", false).unwrap_err();
        let b = import(text, "bad.goal", true).unwrap_err();
        assert_eq!(a, b, "case {i}");
        assert!(a.contains("bad.goal:"), "case {i}: {a}");
    }
}

#[test]
fn simgrid_layouts_give_the_same_trace() {
    // Three ranks in a ring with a collective; the same actions laid out four ways.
    let mut per_rank: Vec<Vec<String>> = vec![Vec::new(); 3];
    for r in 0..3u32 {
        let v = &mut per_rank[r as usize];
        v.push(format!("{r} init"));
        for k in 0..20 {
            v.push(format!("{r} compute {}", 1000 + 37 * r + k));
            v.push(format!("{r} isend {} {k} {}", (r + 1) % 3, 100 + k));
            v.push(format!("{r} irecv {} {k} {}", (r + 2) % 3, 100 + k));
            v.push(format!("{r} waitall"));
            if k % 7 == 6 {
                v.push(format!("{r} allreduce 4 100"));
            }
        }
        v.push(format!("{r} finalize"));
    }
    let dir = std::env::temp_dir().join(format!("whatif-it-ti-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, lines: &[String]| {
        std::fs::write(dir.join(name), lines.join("\n") + "\n").unwrap();
    };
    for (r, lines) in per_rank.iter().enumerate() {
        write(&format!("r{r}.txt"), lines);
    }
    write(
        "in_order.idx",
        &["r0.txt".into(), "r1.txt".into(), "r2.txt".into()],
    );
    write(
        "shuffled.idx",
        &["r2.txt".into(), "r0.txt".into(), "r1.txt".into()],
    );
    let sorted: Vec<String> = per_rank.iter().flatten().cloned().collect();
    write("sorted.txt", &sorted);
    let mut interleaved = Vec::new();
    for i in 0..per_rank.iter().map(Vec::len).max().unwrap() {
        for r in &per_rank {
            if let Some(l) = r.get(i) {
                interleaved.push(l.clone());
            }
        }
    }
    write("interleaved.txt", &interleaved);
    let load = |name: &str| {
        importers::import(Format::SimGrid, &dir.join(name), &ImportOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .trace
    };
    let base = load("in_order.idx");
    assert_eq!(base.objects.len(), 3);
    for other in ["shuffled.idx", "sorted.txt", "interleaved.txt"] {
        let mut t = load(other);
        t.meta = base.meta.clone();
        assert!(t == base, "{other} gives another trace");
    }
    // A rank with no actions is an error in every layout.
    write("empty.txt", &["".into()]);
    write(
        "gap.idx",
        &["r0.txt".into(), "empty.txt".into(), "r2.txt".into()],
    );
    let e = importers::import(
        Format::SimGrid,
        &dir.join("gap.idx"),
        &ImportOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("rank 1 has no actions, but rank 2 does"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
