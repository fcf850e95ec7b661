//! `whatif bench`: simulator speed and memory on 3-D halo workloads, measured the way a user
//! runs them: generate, write, then (repeatedly) load from the file, plan and run the loop.

use anyhow::{Context, Result, bail};
use clap::Args;
use network_models::NetSpec;
use replay::ReplayConfig;
use scenarios::SynthParams;
use sim_core::{QueueKind, SimDuration};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct BenchArgs {
    /// Rank counts to measure (comma-separated); each becomes the most cubic X x Y x Z grid.
    /// The documented runs: `--ranks 1000 --iters 100` and
    /// `--ranks 1000000 --iters 10 --periodic` (about 30 s and 1.3 GB).
    #[arg(long, default_value = "1000,100000", value_delimiter = ',')]
    ranks: Vec<u32>,
    /// Iterations of the halo.
    #[arg(long, default_value_t = 10)]
    iters: u32,
    /// Wrap the grid around (every rank has six neighbours).
    #[arg(long)]
    periodic: bool,
    /// Repetitions of load + replay per size (medians are reported).
    #[arg(long, default_value_t = 3)]
    repeat: u32,
    /// Network model. With `contention`, the packet-hops per second are reported too, e.g.
    /// `--ranks 4096 --net contention:topo=torus:16x16x16,lat=1us,bw=10GB/s,packet=4KiB`.
    #[arg(long, default_value = "alphabeta:lat=1us,bw=10GB/s")]
    net: NetSpec,
    /// Event queue.
    #[arg(long, default_value = "radix")]
    queue: QueueKind,
    /// Refuse a size estimated to need more memory than this (generating or replaying),
    /// e.g. `32GiB` [default: 3/4 of this computer's memory].
    #[arg(long, value_name = "BYTES", value_parser = crate::parse_bytes_arg)]
    max_memory: Option<u64>,
    /// Folder for the generated trace files (deleted afterwards).
    #[arg(long, default_value_os_t = std::env::temp_dir())]
    dir: PathBuf,
    /// Print one JSON array (an object per size, the CSV's columns as keys) instead of the
    /// CSV table.
    #[arg(long)]
    json: bool,
    /// No per-size summary lines on stderr.
    #[arg(long, short)]
    quiet: bool,
}

pub(crate) const BENCH_HELP: &str = "\
Examples (the table goes to stdout, a line per size to stderr):
  whatif bench --ranks 1000 --iters 100
  whatif bench --ranks 4096 --periodic --repeat 1 --json
  whatif bench --ranks 4096 --repeat 1 --net contention:topo=torus:16x16x16,lat=1us,bw=10GB/s,packet=4KiB
The documented large run: `whatif bench --ranks 1000000 --iters 10 --periodic` (about 30 s and
1.3 GB on a release build).";

/// The columns of bench's table (CSV header, JSON keys).
const COLUMNS: &[&str] = &[
    "ranks",
    "dims",
    "periodic",
    "iters",
    "blocks",
    "messages",
    "events",
    "packet_hops",
    "gen_s",
    "write_s",
    "load_s",
    "plan_s",
    "loop_s",
    "messages_per_s_loop",
    "messages_per_s_end_to_end",
    "events_per_s_loop",
    "peak_rss_bytes",
    "rss_bytes_per_block",
];

/// The most cubic factorisation a*b*c = n with a <= b <= c.
pub fn cubic_dims(n: u32) -> [u32; 3] {
    let n64 = n as u64;
    let mut best = [1, 1, n];
    let mut best_spread = n;
    let mut a: u64 = 1;
    while a * a * a <= n64 {
        if n64 % a == 0 {
            let m = n64 / a;
            let mut b = a;
            while b * b <= m {
                if m % b == 0 && ((m / b - a) as u32) < best_spread {
                    best = [a as u32, b as u32, (m / b) as u32];
                    best_spread = (m / b - a) as u32;
                }
                b += 1;
            }
        }
        a += 1;
    }
    best
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub fn run(a: BenchArgs) -> Result<()> {
    if a.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    if !a.json {
        println!("{}", COLUMNS.join(","));
    }
    let mut json_rows = Vec::new();
    for &n in &a.ranks {
        let dims = cubic_dims(n);
        let p = SynthParams {
            iters: a.iters,
            compute: SimDuration::from_us(100),
            bytes: 65536,
            ..SynthParams::default()
        };
        let path = a
            .dir
            .join(format!("whatif-bench-{}-{n}.trace", std::process::id()));
        // The generator's memory (as `whatif gen` counts it: 136 bytes per stored block, one
        // iteration of 7 blocks per rank, and its indexes), before anything is allocated.
        let stored = 7 * n as u64;
        crate::memory::settle(
            &crate::memory::gen_estimate(stored),
            Some(
                a.max_memory
                    .unwrap_or_else(crate::limits::default_memory_limit),
            ),
            false,
        )?;
        let t0 = Instant::now();
        let trace = scenarios::halo_repeated(&dims, a.periodic, &p)?;
        let gen_s = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        trace::write_repeated_file(&trace, &path, trace::Format::Binary)
            .with_context(|| format!("cannot write {}", path.display()))?;
        let write_s = t0.elapsed().as_secs_f64();
        let cfg = ReplayConfig {
            queue: a.queue,
            ..ReplayConfig::default()
        };
        crate::memory::settle(
            &crate::memory::replay_estimate(&trace, &a.net, &cfg, false, false, 1)?,
            Some(
                a.max_memory
                    .unwrap_or_else(crate::limits::default_memory_limit),
            ),
            false,
        )?;
        drop(trace);
        let measured_peak = crate::memory::reset_peak_rss();
        let (mut load, mut plan, mut lp) = (Vec::new(), Vec::new(), Vec::new());
        let mut last = None;
        for _ in 0..a.repeat {
            let t0 = Instant::now();
            let trace = trace::read_repeated_file(&path)?;
            load.push(t0.elapsed().as_secs_f64());
            let mut net = a.net.build();
            let t0 = Instant::now();
            let prepared = replay::Prepared::new(&trace, net.as_mut(), &cfg)?;
            plan.push(t0.elapsed().as_secs_f64());
            drop(trace);
            let t0 = Instant::now();
            let r = prepared.run(net.as_mut())?;
            lp.push(t0.elapsed().as_secs_f64());
            last = Some(r);
        }
        let peak = if measured_peak {
            crate::memory::peak_rss()
        } else {
            None
        };
        std::fs::remove_file(&path).ok();
        let r = last.expect("repeat >= 1");
        let (load_s, plan_s, loop_s) = (median(load), median(plan), median(lp));
        let msgs = r.messages.total();
        let hops = r.net.as_ref().map_or(0, |s| s.packet_hops);
        let e2e = load_s + plan_s + loop_s;
        let per_block = peak.map(|b| b as f64 / r.blocks as f64);
        let row = format!(
            "{n},{}x{}x{},{},{},{},{},{},{hops},{gen_s:.3},{write_s:.3},{load_s:.4},{plan_s:.4},{loop_s:.4},{:.0},{:.0},{:.0},{},{}",
            dims[0],
            dims[1],
            dims[2],
            a.periodic,
            a.iters,
            r.blocks,
            msgs,
            r.events,
            msgs as f64 / loop_s,
            msgs as f64 / e2e,
            r.events as f64 / loop_s,
            peak.map_or(String::new(), |b| b.to_string()),
            per_block.map_or(String::new(), |b| format!("{b:.1}")),
        );
        if a.json {
            json_rows.push(json_row(&row));
        } else {
            println!("{row}");
        }
        if a.quiet {
            continue;
        }
        eprintln!(
            "{n} ranks ({}x{}x{}{}, {} iterations, {} blocks, {} messages): load {load_s:.3} s, plan {plan_s:.3} s, loop {loop_s:.3} s; {:.2} M messages/s in the loop, {:.2} M messages/s end to end{}{}",
            dims[0],
            dims[1],
            dims[2],
            if a.periodic { " periodic" } else { "" },
            a.iters,
            r.blocks,
            msgs,
            msgs as f64 / loop_s / 1e6,
            msgs as f64 / e2e / 1e6,
            match (peak, per_block) {
                (Some(b), Some(pb)) => format!(
                    "; peak RSS {:.0} MB = {pb:.1} bytes per block",
                    b as f64 / 1e6
                ),
                _ => String::new(),
            },
            if hops > 0 {
                format!("; {:.2} M packet-hops/s", hops as f64 / loop_s / 1e6)
            } else {
                String::new()
            }
        );
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&json_rows)?);
    }
    if !a.quiet {
        eprintln!(
            "(median of {} runs; gen and write once per size; load = reading the trace file, plan = compiling it for the machine, loop = the event loop)",
            a.repeat
        );
    }
    Ok(())
}

/// A CSV row of [`COLUMNS`] as a JSON object: numbers as numbers, `dims` as text, an empty
/// cell (no peak RSS measured) as null.
fn json_row(row: &str) -> serde_json::Value {
    let cells = COLUMNS.iter().zip(row.split(',')).map(|(k, v)| {
        let value = if v.is_empty() {
            serde_json::Value::Null
        } else if *k == "dims" {
            serde_json::Value::String(v.to_string())
        } else if *k == "periodic" {
            serde_json::Value::Bool(v == "true")
        } else {
            serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()))
        };
        (k.to_string(), value)
    });
    serde_json::Value::Object(cells.collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn cubic() {
        assert_eq!(super::cubic_dims(1000), [10, 10, 10]);
        assert_eq!(super::cubic_dims(100000), [40, 50, 50]);
        assert_eq!(super::cubic_dims(7), [1, 1, 7]);
    }
}
