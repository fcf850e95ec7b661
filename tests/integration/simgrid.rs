//! The `flow` model against SimGrid itself: `smpirun -replay` (SimGrid 3.32, Debian
//! `simgrid` + `libsimgrid-dev`, installed by `.ci/run`) on a platform written by
//! `whatif platform`, next to `whatif replay --format simgrid` on the same time-independent
//! traces. Skips with a message when `smpirun` is not installed.
//!
//! SimGrid starts a transfer when both the send and its receive are posted; whatif when the
//! send is issued. The traces below post their receives before (or when) the matching sends
//! are issued, so both semantics give the same schedule. (SimGrid 3.32's replay also lets a
//! `waitall` return early on receives posted long before their sends, in eager mode or with
//! `irecv` ahead of `compute`; the halos below avoid those layouts.)

use crate::cli::{makespan_ps, tmpdir, whatif};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

pub(crate) fn smpirun_available() -> bool {
    let ok = Command::new("smpirun")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "skipped: smpirun (SimGrid) not installed; `.ci/run` installs it with apt-get install simgrid libsimgrid-dev"
        );
    }
    ok
}

/// Writes one TI file per rank and an index; returns the index path.
fn write_ti(dir: &Path, ranks: &[String]) -> std::path::PathBuf {
    let mut index = String::new();
    for (r, text) in ranks.iter().enumerate() {
        std::fs::write(dir.join(format!("r{r}.txt")), text).unwrap();
        let _ = writeln!(index, "r{r}.txt");
    }
    let p = dir.join("index.txt");
    std::fs::write(&p, index).unwrap();
    p
}

/// SimGrid's simulated time (s) for `index` on the machine of `net`, read from the replay's
/// final log line printed with 12 decimals.
pub(crate) fn simgrid_time(dir: &Path, net: &str, pes: u32, index: &Path) -> f64 {
    static RUN: AtomicU32 = AtomicU32::new(0);
    let plat = dir.join(format!("plat-{}", RUN.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&plat);
    let o = whatif(&[
        "platform",
        "--net",
        net,
        "--pes",
        &pes.to_string(),
        "--out",
        plat.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let spec: network_models::NetSpec = net.parse().unwrap();
    let network_models::NetSpec::Flow(p) = spec else {
        panic!("flow spec")
    };
    let mut cmd = Command::new("smpirun");
    cmd.current_dir(index.parent().unwrap())
        .args(["-np", &pes.to_string(), "-platform"])
        .arg(plat.join("platform.xml"))
        .arg("-hostfile")
        .arg(plat.join("hostfile"))
        .arg("-replay")
        .arg(index)
        .args(network_models::simgrid::smpirun_cfg(&p))
        .args([
            "--log=root.thres:warning",
            "--log=smpi_replay.thres:info",
            "--log=smpi_replay.fmt:T=%.12d:%m%n",
        ]);
    let o = cmd.output().expect("run smpirun");
    let text =
        String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "smpirun failed: {text}");
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with("T=") && l.contains("Simulation time"))
        .unwrap_or_else(|| panic!("no simulation time in SimGrid's output: {text}"));
    line[2..line.find(':').unwrap()].parse().unwrap()
}

fn whatif_time(index: &Path, net: &str, extra: &[&str]) -> f64 {
    let mut a = vec![
        "replay",
        index.to_str().unwrap(),
        "--format",
        "simgrid",
        "--net",
        net,
    ];
    a.extend_from_slice(extra);
    makespan_ps(&a) as f64 / 1e12
}

/// Relative difference of whatif from SimGrid, checked against `bound`; returns it.
fn compare(dir: &Path, index: &Path, net: &str, pes: u32, extra: &[&str], bound: f64) -> f64 {
    let sg = simgrid_time(dir, net, pes, index);
    let wi = whatif_time(index, net, extra);
    let rel = (wi - sg) / sg;
    eprintln!(
        "{net} {extra:?}: SimGrid {sg:.9} s, whatif {wi:.9} s ({:+.4}%)",
        rel * 100.0
    );
    assert!(
        rel.abs() <= bound,
        "{net} {extra:?}: whatif {wi} s vs SimGrid {sg} s ({:+.4}%, bound {}%)",
        rel * 100.0,
        bound * 100.0
    );
    rel
}

/// A 2-D periodic halo on X x Y ranks: per iteration `compute`, post the four receives, send
/// the four faces, wait for all.
fn halo(x: u32, y: u32, iters: u32, bytes: u64, flops: impl Fn(u32, u32) -> u64) -> Vec<String> {
    (0..x * y)
        .map(|r| {
            let (i, j) = (r % x, r / x);
            let nb = [
                (i + 1) % x + j * x,
                (i + x - 1) % x + j * x,
                i + (j + 1) % y * x,
                i + (j + y - 1) % y * x,
            ];
            let mut t = format!("{r} init\n");
            for it in 0..iters {
                let _ = writeln!(t, "{r} compute {}", flops(r, it));
                for n in nb {
                    let _ = writeln!(t, "{r} irecv {n} {it} {bytes}");
                }
                for n in nb {
                    let _ = writeln!(t, "{r} isend {n} {it} {bytes}");
                }
                let _ = writeln!(t, "{r} waitall");
            }
            t + &format!("{r} finalize\n")
        })
        .collect()
}

#[test]
fn flow_matches_simgrid_on_halos() {
    if !smpirun_available() {
        return;
    }
    let dir = tmpdir("simgrid-halo");
    // Unequal compute on a torus (every flow on its own link): measured +0.0007% (SimGrid
    // adds about 16 ns per iteration).
    let index = write_ti(
        &dir,
        &halo(4, 4, 10, 200_000, |r, it| {
            2_000_000 + 10_000 * ((r * 7 + it) % 5) as u64
        }),
    );
    compare(
        &dir,
        &index,
        "flow:topo=torus:4x4,lat=1us,hop=2us,bw=1GB/s,sharing=cm02",
        16,
        &[],
        0.001,
    );
    // Tapered fat-trees: flows of 2 and 4 hops share up-links, weighted by route latency
    // (CM02) and with LV08's factors; measured -0.003% and -0.004%.
    let index = write_ti(&dir, &halo(4, 4, 10, 200_000, |_, _| 2_000_000));
    compare(
        &dir,
        &index,
        "flow:topo=fattree:k=4,levels=2,up=2,lat=1us,hop=2us,bw=1GB/s,sharing=cm02",
        16,
        &[],
        0.001,
    );
    compare(
        &dir,
        &index,
        "flow:topo=fattree:k=4,levels=2,up=1,lat=1us,hop=2us,bw=1GB/s,sharing=lv08",
        16,
        &[],
        0.001,
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn flow_matches_simgrid_on_a_shared_link() {
    if !smpirun_available() {
        return;
    }
    let dir = tmpdir("simgrid-shared");
    // On a line 0-1-2-3, ranks 0, 1, 2 each send 1 MB to rank 3: three flows of 3, 2 and 1
    // hops share the link into 3. Rank 3 waits for the 1-hop flow, computes 5 ms, then waits
    // for the rest, so the makespan shows when that flow ended: SimGrid gives the short route
    // the larger share (1/penalty).
    let mut ranks: Vec<String> = (0..3)
        .map(|r| format!("{r} init\n{r} isend 3 0 1000000\n{r} finalize\n"))
        .collect();
    ranks.push(
        "3 init\n3 irecv 0 0 1000000\n3 irecv 1 0 1000000\n3 irecv 2 0 1000000\n\
         3 wait 2 3 0\n3 compute 5000000\n3 waitall\n3 finalize\n"
            .into(),
    );
    let index = write_ti(&dir, &ranks);
    let base = "flow:topo=mesh:4,lat=1us,hop=5us,bw=1GB/s";
    for sharing in [
        "sharing=cm02",
        "sharing=lv08",
        "sharing=cm02,weight_s=50000",
    ] {
        compare(&dir, &index, &format!("{base},{sharing}"), 4, &[], 0.001);
    }
    // Plain max-min (equal shares) ends the short flow later: +15.5% measured.
    let sg = simgrid_time(&dir, &format!("{base},sharing=cm02"), 4, &index);
    let plain = whatif_time(&index, &format!("{base},sharing=maxmin"), &[]);
    assert!(plain > sg * 1.05, "max-min {plain} vs SimGrid {sg}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn flow_matches_simgrid_on_the_32_rank_trace() {
    if !smpirun_available() {
        return;
    }
    let Some(ti) = crate::shared_data("simgrid-ti") else {
        return;
    };
    let dir = tmpdir("simgrid-32");
    let index = ti.join("smpi_replay.txt");
    // With SimGrid's collective algorithms, measured +0.002% (torus, 100 MB/s links: about 4%
    // of the run is communication) and +0.004% (fat-tree, 1 GB/s).
    let slow = "flow:topo=torus:4x8,lat=1us,hop=1us,bw=100MB/s,sharing=cm02";
    compare(&dir, &index, slow, 32, &["--collectives", "smpi"], 0.005);
    compare(
        &dir,
        &index,
        "flow:topo=fattree:k=4,levels=3,lat=1us,hop=1us,bw=1GB/s,sharing=cm02",
        32,
        &["--collectives", "smpi"],
        0.005,
    );
    // whatif's own algorithms (pairwise all-to-all, ...) are another program: +5.7% measured.
    let classic = whatif_time(&index, slow, &["--collectives", "classic"]);
    let sg = simgrid_time(&dir, slow, 32, &index);
    assert!(classic > sg * 1.01, "classic {classic} vs SimGrid {sg}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `P` ranks, each running `body(r)` between `init` and `finalize`.
fn ranks_text(p: u32, body: impl Fn(u32) -> String) -> Vec<String> {
    (0..p)
        .map(|r| format!("{r} init\n{}{r} finalize\n", body(r)))
        .collect()
}

#[test]
fn smpi_collectives_match_simgrid_at_every_algorithm() {
    if !smpirun_available() {
        return;
    }
    let dir = tmpdir("simgrid-colls");
    // 16 ranks with uneven work before each call, SimGrid's default selector at sizes that
    // pick each of Open MPI's all-to-all algorithms for 16 ranks (2 B: linear-sync, 100 B:
    // modified Bruck, 10 kB: basic linear, 600 kB: linear-sync; SimGrid runs linear-sync as
    // basic linear), calls of 64 KiB and more (blocking sends hold the sender), v variants with
    // unequal counts, reduce-scatter with unequal counts (MPICH's recursive doubling), scans.
    let p = 16u32;
    let v = |k: u32| -> String {
        (0..p)
            .map(|q| (1000 + 500 * ((q + k) % 5)).to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let sym = |r: u32| -> String {
        (0..p)
            .map(|q| (70_000 + 500 * ((r + q) % 5)).to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let body = |r: u32| -> String {
        let w = |k: u32| format!("{r} compute {}\n", 10_000 + 7_000 * ((r * 5 + k) % 11));
        [
            format!("{r} alltoall 2 2 6 6\n"),
            format!("{r} alltoall 100 100 6 6\n"),
            format!("{r} alltoall 10000 10000 6 6\n"),
            format!("{r} alltoall 600000 600000 6 6\n"),
            format!("{r} bcast 100000 3 6\n"),
            format!("{r} reduce 20000 0 5 0\n"),
            format!("{r} allreduce 9000 0 0\n"),
            format!("{r} barrier\n"),
            format!(
                "{r} gatherv {} {} 2 6 6\n",
                1000 + 500 * ((r + 1) % 5),
                v(1)
            ),
            format!(
                "{r} scatterv {} {} 2 6 6\n",
                v(2),
                1000 + 500 * ((r + 2) % 5)
            ),
            format!(
                "{r} allgatherv {} {} 6 6\n",
                1000 + 500 * ((r + 3) % 5),
                v(3)
            ),
            // Rank r sends 70,000 + 500 ((r + q) mod 5) bytes to rank q (so q expects as
            // much from r).
            format!(
                "{r} alltoallv 1000000 {sym} 1000000 {sym} 6 6\n",
                sym = sym(r)
            ),
            format!("{r} reducescatter {} 0 1\n", v(5)),
            format!("{r} scan 3000 0 0\n"),
            format!("{r} exscan 3000 0 0\n"),
            format!("{r} gather 70000 70000 5 6 6\n"),
            format!("{r} scatter 70000 70000 7 6 6\n"),
            format!("{r} allgather 5000 5000 6 6\n"),
        ]
        .iter()
        .enumerate()
        .map(|(k, c)| w(k as u32) + c)
        .collect()
    };
    let index = write_ti(&dir, &ranks_text(p, body));
    for net in [
        "flow:topo=torus:4x4,lat=1us,hop=100ns,bw=10GB/s,sharing=cm02",
        "flow:topo=fattree:k=4,levels=2,up=2,lat=1us,hop=100ns,bw=100MB/s,sharing=lv08",
    ] {
        compare(&dir, &index, net, p, &[], 0.002);
    }
    // 4 ranks: a 600 kB all-to-all is pairwise (XOR partners), and a reduce-scatter of more
    // than 524,288 elements with unequal counts is MPICH's pairwise algorithm.
    let dir4 = tmpdir("simgrid-colls4");
    let index = write_ti(
        &dir4,
        &ranks_text(4, |r| {
            format!(
                "{r} compute {}\n{r} alltoall 600000 600000 6 6\n{r} reducescatter 200000 150000 150000 100000 0 1\n",
                100_000 * r
            )
        }),
    );
    compare(
        &dir4,
        &index,
        "flow:topo=torus:2x2,lat=1us,hop=100ns,bw=10GB/s,sharing=cm02",
        4,
        &[],
        0.002,
    );
    // 6 ranks (not a power of two): recursive doubling's extra halving steps.
    let dir6 = tmpdir("simgrid-colls6");
    let index = write_ti(
        &dir6,
        &ranks_text(6, |r| {
            format!(
                "{r} compute {}\n{r} reducescatter 1000 2000 3000 1000 2000 3000 0 0\n{r} alltoall 1000 1000 6 6\n",
                50_000 * r
            )
        }),
    );
    compare(
        &dir6,
        &index,
        "flow:topo=torus:2x3,lat=1us,hop=100ns,bw=10GB/s,sharing=cm02",
        6,
        &[],
        0.002,
    );
    let _ = std::fs::remove_dir_all(&dir);
}
