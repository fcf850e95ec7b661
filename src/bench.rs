//! `whatif bench`: simulator speed on 3-D halo workloads.

use anyhow::{Result, bail};
use clap::Args;
use network_models::NetSpec;
use replay::ReplayConfig;
use scenarios::SynthParams;
use sim_core::{QueueKind, SimDuration};
use std::time::Instant;

#[derive(Args)]
pub struct BenchArgs {
    /// Rank counts to measure (comma-separated); each becomes the most cubic X x Y x Z grid.
    #[arg(long, default_value = "1000,100000", value_delimiter = ',')]
    ranks: Vec<u32>,
    /// Iterations of the halo.
    #[arg(long, default_value_t = 10)]
    iters: u32,
    /// Repetitions per size (the median is reported).
    #[arg(long, default_value_t = 3)]
    repeat: u32,
    /// Network model. With `contention`, the packet-hops per second are reported too, e.g.
    /// `--ranks 4096 --net contention:topo=torus:16x16x16,lat=1us,bw=10GB/s,packet=4KiB`.
    #[arg(long, default_value = "alphabeta:lat=1us,bw=10GB/s")]
    net: NetSpec,
    /// Event queue.
    #[arg(long, default_value = "radix")]
    queue: QueueKind,
}

/// The most cubic factorisation a*b*c = n with a <= b <= c.
pub fn cubic_dims(n: u32) -> [u32; 3] {
    let mut best = [1, 1, n];
    let mut best_spread = n;
    let mut a = 1;
    while a * a * a <= n {
        if n % a == 0 {
            let m = n / a;
            let mut b = a;
            while b * b <= m {
                if m % b == 0 && m / b - a < best_spread {
                    best = [a, b, m / b];
                    best_spread = m / b - a;
                }
                b += 1;
            }
        }
        a += 1;
    }
    best
}

pub fn run(a: BenchArgs) -> Result<()> {
    if a.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    println!(
        "ranks,dims,iters,blocks,messages,events,packet_hops,gen_s,replay_s_median,messages_per_s,events_per_s,packet_hops_per_s"
    );
    for &n in &a.ranks {
        let dims = cubic_dims(n);
        let p = SynthParams {
            iters: a.iters,
            compute: SimDuration::from_us(100),
            bytes: 65536,
            ..SynthParams::default()
        };
        let t0 = Instant::now();
        let trace = scenarios::halo(&dims, false, &p)?;
        let gen_s = t0.elapsed().as_secs_f64();
        let cfg = ReplayConfig {
            queue: a.queue,
            ..ReplayConfig::default()
        };
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..a.repeat {
            let mut net = a.net.build();
            let t0 = Instant::now();
            let r = replay::replay(&trace, net.as_mut(), &cfg)?;
            times.push(t0.elapsed().as_secs_f64());
            last = Some(r);
        }
        times.sort_by(f64::total_cmp);
        let med = times[times.len() / 2];
        let r = last.expect("repeat >= 1");
        let msgs = r.messages.total();
        let hops = r.net.as_ref().map_or(0, |s| s.packet_hops);
        println!(
            "{n},{}x{}x{},{},{},{},{},{hops},{gen_s:.3},{med:.4},{:.0},{:.0},{:.0}",
            dims[0],
            dims[1],
            dims[2],
            a.iters,
            r.blocks,
            msgs,
            r.events,
            msgs as f64 / med,
            r.events as f64 / med,
            hops as f64 / med
        );
        if hops > 0 {
            eprintln!(
                "{n} ranks: {:.2} M packet-hops/s ({hops} packet-hops)",
                hops as f64 / med / 1e6
            );
        }
        eprintln!(
            "{n} ranks ({}x{}x{}): {:.2} M messages/s, {:.2} M events/s (median of {}, replay incl. plan build)",
            dims[0],
            dims[1],
            dims[2],
            msgs as f64 / med / 1e6,
            r.events as f64 / med / 1e6,
            a.repeat
        );
    }
    Ok(())
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
