//! The machine of a `flow` spec as a SimGrid platform, to run SimGrid next to whatif.
//!
//! [`platform_xml`] writes a SimGrid 3.x platform (DTD version 4.1) with one host per PE
//! (`pe0`, `pe1`, ...) and a `Full` routing zone: every ordered pair of PEs gets an explicit,
//! non-symmetrical route made of
//! - `nic<n>`: a `FATPIPE` link carrying the start-up latency `lat` of node `n` (only when
//!   `lat > 0`; its bandwidth is far above any link's, so it never limits or shares);
//! - `l<id>`: one shared link per *directed* link of the topology's routes
//!   ([`crate::Topology::next_hop`]), with latency `hop` and bandwidth `bw` (the two
//!   directions of a cable are two SimGrid links, so they do not share);
//! - between PEs of one node: `intra<n>`, a `FATPIPE` link with `lat_intra` and `bw_intra`.
//!
//! Run SimGrid with [`smpirun_cfg`] (`network/model:CM02`, cross-traffic off, TCP-gamma 1e30 (no window),
//! and the spec's factors and weight-S) and its flows take the routes, latencies and shares
//! the `flow` model gives them. SimGrid always weights shares by route latency (`cm02`);
//! under `sharing=maxmin` the two agree where the flows sharing a link have equal route
//! latencies. The number of routes grows as P^2, so P is bounded by
//! [`MAX_PLATFORM_PES`].

use crate::FlowParams;
use crate::flow::PPM;
use std::fmt::Write;

/// Largest PE count [`platform_xml`] writes (its routes grow as P^2: 1024 PEs is about a
/// million routes, tens of megabytes of XML).
pub const MAX_PLATFORM_PES: u32 = 1024;

/// Bandwidth of the latency-only `FATPIPE` links, in bytes per second: far above any link,
/// so neither the flow bound nor the penalty (`weight_s / bw`) notices them.
const FAT_BPS: u64 = 1_000_000_000_000_000_000;

/// A duration in ps as SimGrid reads it.
fn lat_text(ps: u64) -> String {
    format!("{ps}ps")
}

/// The platform for `pes` PEs on the machine of `p`, with hosts of `flops_per_s`.
pub fn platform_xml(p: &FlowParams, pes: u32, flops_per_s: f64) -> Result<String, String> {
    let net = &p.net;
    let ppn = net.pes_per_node.max(1);
    if pes == 0 || pes > MAX_PLATFORM_PES {
        return Err(format!(
            "a SimGrid platform is written for 1..={MAX_PLATFORM_PES} PEs (its routes grow as P^2); {pes} asked"
        ));
    }
    crate::hops::check_fit(&net.topology, ppn, pes)?;
    let nodes_used = pes.div_ceil(ppn) as u64;
    let mut x = String::new();
    x.push_str(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n",
    );
    let _ = writeln!(
        x,
        "<!-- written by whatif for --net {} and {pes} PEs -->",
        crate::NetSpec::Flow(p.clone())
    );
    x.push_str("<platform version=\"4.1\">\n<zone id=\"whatif\" routing=\"Full\">\n");
    for r in 0..pes {
        let _ = writeln!(x, "  <host id=\"pe{r}\" speed=\"{flops_per_s}f\"/>");
    }
    let bw = net.bandwidth.bytes_per_s();
    let lat = net.latency.as_ps();
    // Links used by the routes, each written once, in id order.
    let mut used = std::collections::BTreeSet::new();
    let mut routes: Vec<Vec<u64>> = Vec::with_capacity((nodes_used * nodes_used) as usize);
    let mut path = Vec::new();
    for a in 0..nodes_used {
        for b in 0..nodes_used {
            path.clear();
            if a != b {
                net.topology.route(a, b, &mut path);
            }
            let ids: Vec<u64> = path.iter().map(|l| l.0).collect();
            used.extend(ids.iter().copied());
            routes.push(ids);
        }
    }
    for l in &used {
        let _ = writeln!(
            x,
            "  <link id=\"l{l}\" bandwidth=\"{bw}Bps\" latency=\"{}\"/>",
            lat_text(net.per_hop.as_ps())
        );
    }
    for n in 0..nodes_used {
        if lat > 0 {
            let _ = writeln!(
                x,
                "  <link id=\"nic{n}\" bandwidth=\"{FAT_BPS}Bps\" latency=\"{}\" sharing_policy=\"FATPIPE\"/>",
                lat_text(lat)
            );
        }
        if ppn > 1 {
            let _ = writeln!(
                x,
                "  <link id=\"intra{n}\" bandwidth=\"{}Bps\" latency=\"{}\" sharing_policy=\"FATPIPE\"/>",
                net.intra_bandwidth.bytes_per_s(),
                lat_text(net.intra_latency.as_ps())
            );
        }
    }
    let _ = writeln!(
        x,
        "  <link id=\"loopback\" bandwidth=\"{FAT_BPS}Bps\" latency=\"0ps\" sharing_policy=\"FATPIPE\"/>"
    );
    for a in 0..pes {
        for b in 0..pes {
            let _ = write!(
                x,
                "  <route src=\"pe{a}\" dst=\"pe{b}\" symmetrical=\"NO\">"
            );
            let (na, nb) = ((a / ppn) as u64, (b / ppn) as u64);
            if a == b {
                x.push_str("<link_ctn id=\"loopback\"/>");
            } else if na == nb {
                let _ = write!(x, "<link_ctn id=\"intra{na}\"/>");
            } else {
                if lat > 0 {
                    let _ = write!(x, "<link_ctn id=\"nic{na}\"/>");
                }
                for l in &routes[(na * nodes_used + nb) as usize] {
                    let _ = write!(x, "<link_ctn id=\"l{l}\"/>");
                }
            }
            x.push_str("</route>\n");
        }
    }
    x.push_str("</zone>\n</platform>\n");
    Ok(x)
}

/// A SimGrid hostfile for `pes` ranks: rank `r` on host `pe<r>`.
pub fn hostfile(pes: u32) -> String {
    (0..pes).map(|r| format!("pe{r}\n")).collect()
}

/// The `--cfg` options that make SimGrid's network model the one of `p`.
pub fn smpirun_cfg(p: &FlowParams) -> Vec<String> {
    let f = |ppm: u64| format!("{}", ppm as f64 / PPM as f64);
    vec![
        "--cfg=network/model:CM02".to_string(),
        "--cfg=network/crosstraffic:0".to_string(),
        // A TCP window so large that it never bounds a flow (whatif models none). Not 0:
        // with `TCP-gamma:0`, SimGrid 3.32 completed some transfers without any transmission
        // time when several started together, depending on the order they were posted
        // (measured: on a 4-node ring, four of an all-to-all's twelve 10,016-byte transfers
        // finished after their 1.1 us latency alone).
        "--cfg=network/TCP-gamma:1e30".to_string(),
        format!("--cfg=network/latency-factor:{}", f(p.lat_factor_ppm)),
        format!("--cfg=network/bandwidth-factor:{}", f(p.bw_factor_ppm)),
        format!("--cfg=network/weight-S:{}", p.weight_s_bytes),
    ]
}
