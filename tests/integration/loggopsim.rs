//! `loggops` on GOAL schedules equals LogGOPSim (issue 16, part 1): the operation-level
//! simulator (`opsim`) against finishing times obtained by running LogGOPSim itself.
//!
//! How the expected values were obtained (2026-11-23): spcl/LogGOPSim at its snapshot in the
//! workplace mirror, built with Debian `gengetopt re2c libgraphviz-dev` (`-O2`); for each
//! schedule `txt2bin -i X.goal -o X.bin`, then `LogGOPSim -f X.bin -b -L l -o o -g g -G G
//! -O O -S S` for the five parameter sets below, reading "Maximum finishing time" (ns). The
//! schedules are written by this test exactly as they were for LogGOPSim: `whatif gen ... |
//! whatif export goal` (deterministic), four hand-written generators below, and the two GOAL
//! files in `../shared/data/goal`.

use crate::cli::{gen_trace, makespan_ps, stderr, tmpdir, whatif};
use network_models::LogGopsParams;
use sim_core::SimDuration;
use std::fmt::Write as _;
use std::path::Path;

/// `(L, o, g, G, O)` in ns and `S` in bytes.
const PARAMS: [(u64, u64, u64, u64, u64, u64); 5] = [
    (2500, 1500, 1000, 6, 0, 65535),
    (2500, 1500, 1000, 6, 0, 100_000),
    (5000, 200, 3000, 1, 2, 65535),
    (100, 0, 5000, 3, 0, 512),
    (9000, 4000, 10, 20, 7, 0),
];

/// LogGOPSim's finishing times (ns) per schedule and parameter set.
const LOGGOPSIM_NS: &[(&str, [u64; 5])] = &[
    ("h", [49845200, 49845200, 33504800, 26094600, 215293400]),
    ("ring", [316380, 316380, 274460, 231690, 574600]),
    ("pp", [14109880, 14109880, 6107960, 8001940, 42339600]),
    ("h2", [355544, 355544, 326975, 337440, 649366]),
    ("pl", [1223660, 1223660, 536830, 412830, 2799250]),
    ("hs", [209820, 209820, 204372, 227528, 575520]),
    ("a2a8", [87458, 87458, 41374, 58079, 265860]),
    ("a2a32", [13197314, 13197314, 8699276, 6667007, 58844163]),
    ("a2a12i", [61028, 61028, 46184, 66967, 183803]),
    ("irq", [523488, 523488, 345792, 264994, 2315946]),
    // Linear all-to-alls as LogGOPSim's Schedgen2 writes them (`schedgen.py alltoall --ptrn
    // linear --comm_size N --datasize S [--window_size W]`; `schedgen_alltoall` below writes the
    // same text, checked byte for byte against Schedgen2's output once): 30 to 126 operations per rank are freed at once, where LogGOPSim's
    // `std::sort` is not stable.
    ("sg16", [658180, 658180, 251700, 409940, 2361635]),
    ("sg32", [28313218, 28313218, 12412276, 13719965, 106487948]),
    ("sg24w4", [303642, 303642, 166953, 308371, 1107231]),
    ("sg64", [1310454, 1310454, 581814, 984830, 4642984]),
    ("binary_tree_32", [27500, 27500, 27000, 20100, 85000]),
    (
        "binomialtreebcast_128_1024",
        [81466, 81466, 52122, 51583, 262220],
    ),
];

fn params(i: usize) -> LogGopsParams {
    let (l, o, g, gb, ob, s) = PARAMS[i];
    LogGopsParams {
        l: SimDuration::from_ns(l),
        o: SimDuration::from_ns(o),
        g: SimDuration::from_ns(g),
        g_per_byte: SimDuration::from_ns(gb),
        o_per_byte: SimDuration::from_ns(ob),
        eager_limit: s,
    }
}

/// A linear all-to-all: every rank sends to `r+i` and receives from `r-i`, `i = 1..n`, after
/// a calc of `1000 * (r mod 3)` ns; a final calc needs them all. `chained`: each receive
/// `irequires` the send before it.
fn all_to_all(n: u32, size: u64, chained: bool) -> String {
    let mut s = format!("num_ranks {n}\n");
    for r in 0..n {
        let _ = writeln!(s, "rank {r} {{");
        let _ = writeln!(s, "l1: calc {}", 1000 * (r % 3));
        let mut k = 2;
        let mut labels = Vec::new();
        for i in 1..n {
            let _ = writeln!(s, "l{k}: send {size}b to {} tag {r}", (r + i) % n);
            let _ = writeln!(s, "l{k} requires l1");
            labels.push(k);
            k += 1;
            let src = (r + n - i) % n;
            let _ = writeln!(s, "l{k}: recv {size}b from {src} tag {src}");
            if chained {
                let _ = writeln!(s, "l{k} irequires l{}", k - 1);
            }
            labels.push(k);
            k += 1;
        }
        let _ = writeln!(s, "l{k}: calc 5000");
        for l in labels {
            let _ = writeln!(s, "l{k} requires l{l}");
        }
        s.push_str("}\n");
    }
    s
}

/// Schedgen2's linear all-to-all: rank `r` receives from ranks below it, sends to every other
/// rank in order, then receives from ranks above it; with a window `w`, send `k` requires send
/// `k - w`. Labels are numbered across ranks, as Schedgen2 does.
fn schedgen_alltoall(n: u32, size: u64, window: usize) -> String {
    let mut s = format!("num_ranks {n}\n\n");
    let mut k = 1;
    for r in 0..n {
        let _ = writeln!(s, "rank {r} {{");
        for j in 0..r {
            let _ = writeln!(s, "l{k}: recv {size}b from {j} tag 42001");
            k += 1;
        }
        let mut sends = Vec::new();
        for j in (0..n).filter(|&j| j != r) {
            let _ = writeln!(s, "l{k}: send {size}b to {j} tag 42001");
            sends.push(k);
            k += 1;
        }
        for j in r + 1..n {
            let _ = writeln!(s, "l{k}: recv {size}b from {j} tag 42001");
            k += 1;
        }
        if window > 0 {
            for i in window..sends.len() {
                let _ = writeln!(s, "l{} requires l{}", sends[i], sends[i - window]);
            }
        }
        s.push_str("}\n\n");
    }
    s
}

/// `irequires` and `requires` mixed, eager and rendezvous sizes.
fn irequires_mix() -> String {
    let mut s = String::from("num_ranks 4\n");
    for r in 0..4 {
        let _ = write!(
            s,
            "rank {r} {{\nl1: calc 2000\nl2: send 5000b to {} tag 7\nl2 irequires l1\n\
             l3: recv 5000b from {} tag 7\nl3 requires l1\nl4: calc 3000\nl4 irequires l3\n\
             l5: send 80000b to {} tag 9\nl5 requires l4\nl6: recv 80000b from {} tag 9\n\
             l6 irequires l2\n}}\n",
            (r + 1) % 4,
            (r + 3) % 4,
            (r + 2) % 4,
            (r + 2) % 4
        );
    }
    s
}

fn export(dir: &Path, name: &str, args: &[&str]) {
    let t = dir.join(format!("{name}.trace"));
    gen_trace(&t, args);
    let g = dir.join(format!("{name}.goal"));
    let o = whatif(&[
        "export",
        "goal",
        t.to_str().unwrap(),
        "--out",
        g.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn loggops_on_goal_equals_loggopsim_to_the_nanosecond() {
    let dir = tmpdir("loggopsim");
    export(
        &dir,
        "h",
        &[
            "halo3d",
            "--dims",
            "4x4x4",
            "--iters",
            "20",
            "--compute",
            "100us",
            "--bytes",
            "65536",
            "--periodic",
        ],
    );
    export(
        &dir,
        "ring",
        &[
            "ring",
            "--ranks",
            "16",
            "--iters",
            "10",
            "--compute",
            "20us",
            "--bytes",
            "1024",
        ],
    );
    export(
        &dir,
        "pp",
        &["pingpong", "--iters", "10", "--bytes", "100000"],
    );
    export(
        &dir,
        "h2",
        &[
            "halo2d",
            "--dims",
            "6x5",
            "--iters",
            "5",
            "--compute",
            "50us",
            "--bytes",
            "200",
        ],
    );
    export(
        &dir,
        "pl",
        &[
            "pipeline",
            "--ranks",
            "8",
            "--iters",
            "12",
            "--compute",
            "10us",
            "--bytes",
            "4096",
        ],
    );
    export(
        &dir,
        "hs",
        &[
            "halo3d",
            "--dims",
            "3x3x3",
            "--iters",
            "4",
            "--compute",
            "30us",
            "--bytes",
            "100",
            "--periodic",
        ],
    );
    std::fs::write(dir.join("a2a8.goal"), all_to_all(8, 1000, false)).unwrap();
    std::fs::write(dir.join("a2a32.goal"), all_to_all(32, 70000, false)).unwrap();
    std::fs::write(dir.join("a2a12i.goal"), all_to_all(12, 300, true)).unwrap();
    std::fs::write(dir.join("irq.goal"), irequires_mix()).unwrap();
    for (name, n, size, w) in [
        ("sg16", 16, 4096, 0),
        ("sg32", 32, 100_000, 0),
        ("sg24w4", 24, 800, 4),
        ("sg64", 64, 2000, 0),
    ] {
        std::fs::write(
            dir.join(format!("{name}.goal")),
            schedgen_alltoall(n, size, w),
        )
        .unwrap();
    }
    let shared = crate::shared_data("goal");
    let mut checked = 0;
    for (name, want) in LOGGOPSIM_NS {
        let path = match (&shared, dir.join(format!("{name}.goal"))) {
            (_, p) if p.exists() => p,
            (Some(s), _) => s.join(format!("{name}.goal")),
            (None, _) => continue,
        };
        let sched = importers::goal::parse_schedule(&path, false).unwrap();
        for (i, &ns) in want.iter().enumerate() {
            let r = opsim::simulate(&sched, &params(i));
            assert_eq!(r.unfinished, 0, "{name}");
            assert_eq!(r.finish_ps, ns * 1000, "{name} with {:?}", PARAMS[i]);
            checked += 1;
        }
    }
    assert!(checked >= 70, "{checked} cases");
    // The CLI takes this path for GOAL + loggops, and the block replay with --blocks (which
    // differs here: its sends hold the CPU while they wait for the NIC).
    let h = dir.join("h.goal");
    let run = |extra: &[&str]| -> u64 {
        let mut a = vec![
            "replay",
            h.to_str().unwrap(),
            "--format",
            "goal",
            "--net",
            "loggops:S=100000",
        ];
        a.extend_from_slice(extra);
        makespan_ps(&a)
    };
    assert_eq!(
        run(&[]),
        49_845_200_000,
        "the issue's case: LogGOPSim's 49,845,200 ns"
    );
    assert_eq!(
        run(&["--blocks"]),
        88_816_200_000,
        "the block replay's figure from the issue"
    );
}
