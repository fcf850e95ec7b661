//! One-line network specs: `model[:key=value,key=value...]`.

use crate::flow::{PPM, Sharing};
use crate::{
    AlphaBeta, ContentionParams, FlowParams, Hops, Ideal, Latency, LogGops, LogGopsParams,
    NetworkModel, Recorded, Switching, Topology,
};
use sim_core::units::{parse_bytes, parse_duration};
use sim_core::{Bandwidth, SimDuration};
use std::fmt;
use std::str::FromStr;

/// A bad `--net` spec; the message lists what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid network spec `{spec}`: {reason}")]
pub struct SpecError {
    /// The spec as given.
    pub spec: String,
    /// What is wrong and what is accepted.
    pub reason: String,
}

/// A parsed network model spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetSpec {
    /// `ideal`: zero time.
    Ideal,
    /// `recorded`: each message takes the delay recorded in the trace.
    Recorded,
    /// `latency:lat=D`.
    Latency {
        /// Per-message latency.
        lat: SimDuration,
    },
    /// `alphabeta:lat=D,bw=B[,o_send=D][,o_recv=D]`.
    AlphaBeta {
        /// Latency.
        lat: SimDuration,
        /// Bandwidth.
        bw: Bandwidth,
        /// Sender CPU overhead per remote message.
        o_send: SimDuration,
        /// Receiver CPU overhead per remote message.
        o_recv: SimDuration,
    },
    /// `hops:topo=T,lat=D,hop=D,bw=B[,ppn=N,lat_intra=D,bw_intra=B]`.
    Hops(Hops),
    /// `loggops:L=D,o=D,g=D,G=D,O=D,S=BYTES`.
    LogGops(LogGopsParams),
    /// `contention:topo=T,lat=D,hop=D,bw=B,packet=BYTES,switching=vct|saf,nic_bw=B|off[,...]`.
    Contention(ContentionParams),
    /// `flow:topo=T,lat=D,hop=D,bw=B[,ppn=N,lat_intra=D,bw_intra=B,sharing=S,lat_factor=X,
    /// bw_factor=X,weight_s=BYTES]`: flows sharing links (max-min or SimGrid's weighting).
    Flow(FlowParams),
}

/// Help text listing every model and parameter (used by `whatif replay --help`).
pub const NET_HELP: &str = "\
Network models (--net MODEL[:key=value,...]; durations take ps|ns|us|ms|s, bandwidths e.g. 10GB/s):
  ideal                                   messages arrive when sent
  recorded                                every message (local ones too) takes the delay recorded
                                          in the trace (recorded arrival - recorded send time;
                                          BigSim imports have them)
  latency:lat=D                           fixed latency per remote message (default lat=0)
  alphabeta:lat=D,bw=B[,o_send=D,o_recv=D]
                                          lat + bytes/bw per remote message (no contention);
                                          o_send/o_recv: CPU time per remote message on the
                                          sending/receiving PE (default 0)
  hops:topo=T,lat=D,hop=D,bw=B[,ppn=N,lat_intra=D,bw_intra=B]
                                          lat + hops*hop + bytes/bw between nodes (no contention),
                                          lat_intra + bytes/bw_intra within a node; PE p is on
                                          node p/ppn. Defaults: lat=0, hop=0, ppn=1, lat_intra=0,
                                          bw_intra=bw. T: full:N, hypercube:D, mesh:AxBxC,
                                          torus:AxBxC (dimension-order routing; torus ties go +),
                                          fattree:k=K,levels=N[,up=U] (k-ary n-tree, K^N hosts,
                                          D-mod-k up/down routing; up < K tapers it),
                                          dragonfly:groups=G,routers=A,hosts=P,
                                          global=H[,routing=minimal|valiant] (Valiant: through
                                          an intermediate group hashed from the host pair). On
                                          fat-trees and dragonflies
                                          the host links count as hops.
  loggops:L=D,o=D,g=D,G=D,O=D,S=BYTES     LogGOPS as in LogGOPSim: first byte arrives o+L after the
                                          send starts; sender and receiver NICs busy g+(s-1)*G per
                                          message (a send waits for its NIC); CPU o+(s-1)*O per send,
                                          o+max((s-1)*O,(s-1)*G) per receive. G and O are per byte.
                                          S: eager limit (matters to operation schedules, e.g. GOAL).
                                          Defaults: L=2500ns,o=1500ns,g=1000ns,G=6ns,O=0,S=65535
  contention:topo=T,lat=D,hop=D,bw=B[,packet=BYTES,switching=vct|saf,nic_bw=B|off,
             ppn=N,lat_intra=D,bw_intra=B]
                                          packets of `packet` bytes cross the dimension-order route
                                          link by link; each directed link serves one packet at a
                                          time, FIFO. switching: vct (virtual cut-through) or saf
                                          (store-and-forward). nic_bw: each node's injection and
                                          ejection NIC is a shared resource of that bandwidth (off:
                                          no NIC limit). Defaults: lat=0, hop=0, packet=4KiB,
                                          switching=vct, nic_bw=off, ppn=1, lat_intra=0, bw_intra=bw
  flow:topo=T,lat=D,hop=D,bw=B[,ppn=N,lat_intra=D,bw_intra=B,sharing=S,lat_factor=X,
       bw_factor=X,weight_s=BYTES]
                                          messages are flows: after lat + hops*hop they share
                                          each link's bw with the other flows on it (recomputed
                                          when a flow starts or ends). sharing: maxmin (equal
                                          shares, default), cm02 or lv08 (SimGrid's: shares
                                          weighted by 1/(route latency + weight_s/bw per link)).
                                          lat_factor scales the start-up, bw_factor the rate;
                                          lv08 defaults them to 13.01 and 0.97, weight_s=20537.
                                          Checked against SimGrid 3.32 (see `whatif platform`).
                                          Other defaults as hops
Machines (--machine NAME on the command line; model = NAME in a study file):
  paragon                                 Intel Paragon at NASA Ames (MK 5.2): hops:topo=mesh:16x16,
                                          lat=120us,hop=0ns,bw=30MB/s (120 us + bytes / 30 MB/s)
Messages between objects on the same PE arrive when sent and pay no overheads.";

impl NetSpec {
    /// The interconnect and PEs per node, for the models that have a topology (`hops`,
    /// `contention`).
    pub fn topology(&self) -> Option<(&Topology, u32)> {
        match self {
            NetSpec::Hops(h) | NetSpec::Flow(FlowParams { net: h, .. }) => {
                Some((&h.topology, h.pes_per_node.max(1)))
            }
            NetSpec::Contention(c) => Some((&c.topology, c.pes_per_node.max(1))),
            _ => None,
        }
    }

    /// The model this spec describes.
    pub fn build(&self) -> Box<dyn NetworkModel> {
        match *self {
            NetSpec::Ideal => Box::new(Ideal),
            NetSpec::Recorded => Box::new(Recorded),
            NetSpec::Latency { lat } => Box::new(Latency { latency: lat }),
            NetSpec::AlphaBeta {
                lat,
                bw,
                o_send,
                o_recv,
            } => Box::new(AlphaBeta::new(lat, bw, o_send, o_recv)),
            NetSpec::Hops(ref h) => Box::new(h.clone().model()),
            NetSpec::LogGops(p) => Box::new(LogGops::new(p)),
            NetSpec::Contention(ref c) => Box::new(c.clone().model()),
            NetSpec::Flow(ref p) => Box::new(p.clone().flow_model()),
        }
    }
}

/// The `hops` keys of a topology model, in canonical order.
struct HopsKeys<'a>(&'a Hops);

impl fmt::Display for HopsKeys<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = self.0;
        write!(
            f,
            "topo={},lat={},hop={},bw={},ppn={},lat_intra={},bw_intra={}",
            h.topology,
            fmt_dur(h.latency),
            fmt_dur(h.per_hop),
            h.bandwidth,
            h.pes_per_node,
            fmt_dur(h.intra_latency),
            h.intra_bandwidth
        )
    }
}

/// A factor held in millionths, as the shortest decimal (13010000 -> 13.01).
pub fn fmt_ppm(ppm: u64) -> String {
    let (int, frac) = (ppm / PPM, ppm % PPM);
    if frac == 0 {
        return int.to_string();
    }
    let digits = format!("{frac:06}");
    format!("{int}.{}", digits.trim_end_matches('0'))
}

/// A positive decimal factor with at most six decimals, in millionths.
pub fn parse_ppm(v: &str) -> Result<u64, String> {
    let bad = || format!("`{v}` is not a positive number with at most 6 decimals (e.g. 0.97)");
    let t = v.trim();
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    if int.is_empty() && frac.is_empty()
        || frac.len() > 6
        || !int.chars().all(|c| c.is_ascii_digit())
        || !frac.chars().all(|c| c.is_ascii_digit())
    {
        return Err(bad());
    }
    let int: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad())?
    };
    let frac: u64 = format!("{frac:0<6}").parse().map_err(|_| bad())?;
    let ppm = int
        .checked_mul(PPM)
        .and_then(|i| i.checked_add(frac))
        .filter(|p| *p > 0 && *p <= 1_000_000 * PPM)
        .ok_or_else(|| format!("`{v}` must be above 0 and at most 1000000"))?;
    Ok(ppm)
}

/// Parameters shared by the topology models.
struct TopoParams {
    topology: Topology,
    bandwidth: Bandwidth,
    intra_bandwidth: Bandwidth,
    pes_per_node: u32,
}

fn fmt_dur(d: SimDuration) -> String {
    d.to_string().replace(' ', "")
}

impl fmt::Display for NetSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetSpec::Ideal => write!(f, "ideal"),
            NetSpec::Recorded => write!(f, "recorded"),
            NetSpec::Latency { lat } => write!(f, "latency:lat={}", fmt_dur(*lat)),
            NetSpec::AlphaBeta {
                lat,
                bw,
                o_send,
                o_recv,
            } => write!(
                f,
                "alphabeta:lat={},bw={bw},o_send={},o_recv={}",
                fmt_dur(*lat),
                fmt_dur(*o_send),
                fmt_dur(*o_recv)
            ),
            NetSpec::Hops(h) => write!(f, "hops:{}", HopsKeys(h)),
            NetSpec::Flow(p) => {
                write!(f, "flow:{},sharing={}", HopsKeys(&p.net), p.sharing)?;
                if (p.lat_factor_ppm, p.bw_factor_ppm, p.weight_s_bytes)
                    != FlowParams::defaults(p.sharing)
                {
                    write!(
                        f,
                        ",lat_factor={},bw_factor={},weight_s={}",
                        fmt_ppm(p.lat_factor_ppm),
                        fmt_ppm(p.bw_factor_ppm),
                        p.weight_s_bytes
                    )?;
                }
                Ok(())
            }
            NetSpec::LogGops(p) => write!(
                f,
                "loggops:L={},o={},g={},G={},O={},S={}",
                fmt_dur(p.l),
                fmt_dur(p.o),
                fmt_dur(p.g),
                fmt_dur(p.g_per_byte),
                fmt_dur(p.o_per_byte),
                p.eager_limit
            ),
            NetSpec::Contention(c) => write!(
                f,
                "contention:topo={},lat={},hop={},bw={},packet={},switching={},nic_bw={},ppn={},lat_intra={},bw_intra={}",
                c.topology,
                fmt_dur(c.latency),
                fmt_dur(c.per_hop),
                c.bandwidth,
                c.packet_bytes,
                c.switching,
                c.nic_bandwidth
                    .map_or_else(|| "off".to_string(), |b| b.to_string()),
                c.pes_per_node,
                fmt_dur(c.intra_latency),
                c.intra_bandwidth
            ),
        }
    }
}

/// Named machines: name, what it is, and the model it stands for. `--net NAME`,
/// `--machine NAME` and a study's `model = "NAME"` all accept them.
pub const MACHINES: &[(&str, &str, &str)] = &[(
    "paragon",
    "the Intel Paragon at NASA Ames (MK, section 5.2): a 2-D mesh (16x16 nodes), 120 us latency, 30 MB/s; MK gives no per-hop cost or contention, so a message takes 120 us + bytes / 30 MB/s",
    "hops:topo=mesh:16x16,lat=120us,hop=0ns,bw=30MB/s",
)];

/// The model of machine `name` (see [`MACHINES`]).
pub fn machine(name: &str) -> Result<NetSpec, SpecError> {
    let fail = |reason: String| SpecError {
        spec: name.to_string(),
        reason,
    };
    let m = MACHINES
        .iter()
        .find(|m| m.0 == name.trim())
        .ok_or_else(|| {
            let known: Vec<&str> = MACHINES.iter().map(|m| m.0).collect();
            fail(format!(
                "unknown machine `{name}`; known machines: {}",
                known.join(", ")
            ))
        })?;
    m.2.parse()
}

impl FromStr for NetSpec {
    type Err = SpecError;

    fn from_str(spec: &str) -> Result<Self, SpecError> {
        let fail = |reason: String| SpecError {
            spec: spec.to_string(),
            reason,
        };
        let (model, params) = match spec.trim().split_once(':') {
            Some((m, p)) => (m.trim(), p.trim()),
            None => (spec.trim(), ""),
        };
        let mut kv: Vec<(&str, &str)> = Vec::new();
        // `topo=fattree:k=4,levels=3`: the topology's own keys (after a `topo=` with those
        // kinds) belong to the topology value, which keeps its commas.
        let mut topo_text = String::new();
        for part in params.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| fail(format!("parameter `{part}` is not of the form key=value")))?;
            let k = k.trim();
            let in_topo = topo_text.starts_with("fattree:") || topo_text.starts_with("dragonfly:");
            if in_topo && TOPOLOGY_KEYS.contains(&k) {
                topo_text.push(',');
                topo_text.push_str(part);
                continue;
            }
            if k == "topo" {
                topo_text = v.trim().to_string();
            }
            if kv.iter().any(|(seen, _)| *seen == k) {
                return Err(fail(format!("parameter `{k}` is given twice")));
            }
            kv.push((k, v.trim()));
        }
        if let Some(t) = kv.iter_mut().find(|(k, _)| *k == "topo") {
            t.1 = topo_text.as_str();
        }
        if MACHINES.iter().any(|m| m.0 == model) {
            if !kv.is_empty() {
                return Err(fail(format!(
                    "machine `{model}` takes no parameters; it stands for `{}` (give that with your changes instead)",
                    machine(model)?
                )));
            }
            return machine(model);
        }
        let allowed: &[&str] = match model {
            "ideal" | "recorded" => &[],
            "latency" => &["lat"],
            "alphabeta" => &["lat", "bw", "o_send", "o_recv"],
            "hops" => &["topo", "lat", "hop", "bw", "ppn", "lat_intra", "bw_intra"],
            "flow" => &[
                "topo",
                "lat",
                "hop",
                "bw",
                "ppn",
                "lat_intra",
                "bw_intra",
                "sharing",
                "lat_factor",
                "bw_factor",
                "weight_s",
            ],
            "loggops" => &["L", "o", "g", "G", "O", "S"],
            "contention" => &[
                "topo",
                "lat",
                "hop",
                "bw",
                "packet",
                "switching",
                "nic_bw",
                "ppn",
                "lat_intra",
                "bw_intra",
            ],
            other => {
                return Err(fail(format!(
                    "unknown model `{other}`; known models: ideal, recorded, latency, alphabeta, hops, loggops, contention, flow, and the machines {} (see `whatif replay --help`)",
                    MACHINES.iter().map(|m| m.0).collect::<Vec<_>>().join(", ")
                )));
            }
        };
        if let Some((k, _)) = kv.iter().find(|(k, _)| !allowed.contains(k)) {
            let known = if allowed.is_empty() {
                "none".to_string()
            } else {
                allowed.join(", ")
            };
            return Err(fail(format!(
                "model `{model}` has no parameter `{k}`; its parameters: {known}"
            )));
        }
        let get = |k: &str| kv.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
        let dur = |k: &str| -> Result<SimDuration, SpecError> {
            match get(k) {
                None => Ok(SimDuration::ZERO),
                Some(v) => parse_duration(v).map_err(|e| fail(format!("{k}: {e}"))),
            }
        };
        let topo_params = |model: &str| -> Result<TopoParams, SpecError> {
            let topo = get("topo").ok_or_else(|| {
                fail(format!(
                    "{model} needs a topology, e.g. `{model}:topo=torus:8x8x8,lat=1us,hop=50ns,bw=10GB/s`"
                ))
            })?;
            let topology: Topology = topo
                .parse()
                .map_err(|e: String| fail(format!("topo: {e}")))?;
            let bw = get("bw")
                .ok_or_else(|| fail(format!("{model} needs a bandwidth, e.g. `bw=10GB/s`")))?;
            let bandwidth = Bandwidth::parse(bw).map_err(|e| fail(format!("bw: {e}")))?;
            let intra_bandwidth = match get("bw_intra") {
                Some(v) => Bandwidth::parse(v).map_err(|e| fail(format!("bw_intra: {e}")))?,
                None => bandwidth,
            };
            let pes_per_node = match get("ppn") {
                Some(v) => v
                    .parse::<u32>()
                    .ok()
                    .filter(|p| *p >= 1)
                    .ok_or_else(|| fail(format!("ppn: `{v}` is not a whole number >= 1")))?,
                None => 1,
            };
            Ok(TopoParams {
                topology,
                bandwidth,
                intra_bandwidth,
                pes_per_node,
            })
        };
        Ok(match model {
            "ideal" => NetSpec::Ideal,
            "recorded" => NetSpec::Recorded,
            "latency" => NetSpec::Latency { lat: dur("lat")? },
            "hops" | "flow" => {
                let t = topo_params(model)?;
                let h = Hops {
                    topology: t.topology,
                    latency: dur("lat")?,
                    per_hop: dur("hop")?,
                    bandwidth: t.bandwidth,
                    pes_per_node: t.pes_per_node,
                    intra_latency: dur("lat_intra")?,
                    intra_bandwidth: t.intra_bandwidth,
                };
                if model == "flow" {
                    let sharing = match get("sharing") {
                        Some(v) => v
                            .parse::<Sharing>()
                            .map_err(|e| fail(format!("sharing: {e}")))?,
                        None => Sharing::MaxMin,
                    };
                    let (lat_f, bw_f, ws) = FlowParams::defaults(sharing);
                    let factor = |k: &str, def: u64| -> Result<u64, SpecError> {
                        match get(k) {
                            Some(v) => parse_ppm(v).map_err(|e| fail(format!("{k}: {e}"))),
                            None => Ok(def),
                        }
                    };
                    let weight_s_bytes = match get("weight_s") {
                        Some(v) => parse_bytes(v).map_err(|e| fail(format!("weight_s: {e}")))?,
                        None => ws,
                    };
                    if weight_s_bytes != 0 && sharing == Sharing::MaxMin {
                        return Err(fail(
                            "weight_s weights shares as SimGrid does; it needs sharing=cm02 or lv08"
                                .into(),
                        ));
                    }
                    NetSpec::Flow(FlowParams {
                        net: h,
                        sharing,
                        lat_factor_ppm: factor("lat_factor", lat_f)?,
                        bw_factor_ppm: factor("bw_factor", bw_f)?,
                        weight_s_bytes,
                    })
                } else {
                    NetSpec::Hops(h)
                }
            }
            "contention" => {
                let t = topo_params("contention")?;
                let packet_bytes = match get("packet") {
                    Some(v) => parse_bytes(v).ok().filter(|p| *p >= 1).ok_or_else(|| {
                        fail(format!(
                            "packet: `{v}` is not a size of at least 1 byte (e.g. 4KiB)"
                        ))
                    })?,
                    None => 4096,
                };
                let switching = match get("switching") {
                    Some(v) => v
                        .parse::<Switching>()
                        .map_err(|e| fail(format!("switching: {e}")))?,
                    None => Switching::CutThrough,
                };
                let nic_bandwidth = match get("nic_bw") {
                    None | Some("off") => None,
                    Some(v) => Some(
                        Bandwidth::parse(v).map_err(|e| fail(format!("nic_bw: {e} (or `off`)")))?,
                    ),
                };
                NetSpec::Contention(ContentionParams {
                    topology: t.topology,
                    latency: dur("lat")?,
                    per_hop: dur("hop")?,
                    bandwidth: t.bandwidth,
                    packet_bytes,
                    switching,
                    nic_bandwidth,
                    pes_per_node: t.pes_per_node,
                    intra_latency: dur("lat_intra")?,
                    intra_bandwidth: t.intra_bandwidth,
                })
            }
            "loggops" => {
                let d = LogGopsParams::default();
                let or = |k: &str, def: SimDuration| -> Result<SimDuration, SpecError> {
                    if get(k).is_some() { dur(k) } else { Ok(def) }
                };
                let eager_limit = match get("S") {
                    Some(v) => parse_bytes(v).map_err(|e| fail(format!("S: {e}")))?,
                    None => d.eager_limit,
                };
                NetSpec::LogGops(LogGopsParams {
                    l: or("L", d.l)?,
                    o: or("o", d.o)?,
                    g: or("g", d.g)?,
                    g_per_byte: or("G", d.g_per_byte)?,
                    o_per_byte: or("O", d.o_per_byte)?,
                    eager_limit,
                })
            }
            _ => {
                // Parameters in the order written: a malformed latency is reported as such,
                // not as a missing bandwidth.
                let lat = dur("lat")?;
                let bw = get("bw").ok_or_else(|| {
                    fail("alphabeta needs a bandwidth, e.g. `alphabeta:lat=1us,bw=10GB/s`".into())
                })?;
                let bw = Bandwidth::parse(bw).map_err(|e| fail(format!("bw: {e}")))?;
                NetSpec::AlphaBeta {
                    lat,
                    bw,
                    o_send: dur("o_send")?,
                    o_recv: dur("o_recv")?,
                }
            }
        })
    }
}

/// Keys of the topologies written `kind:key=value,...` (fat-tree, dragonfly): in a `--net`
/// spec they follow `topo=fattree:...` and belong to the topology's value.
pub const TOPOLOGY_KEYS: &[&str] = &[
    "k", "levels", "up", "groups", "routers", "hosts", "global", "routing",
];

/// A value in a model table: strings are taken as written, numbers as their decimal form.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum TableValue {
    Str(String),
    Int(i64),
    Float(f64),
}

impl NetSpec {
    /// Builds a spec from a table of `model = "..."` plus the model's parameters, as in a
    /// TOML file:
    ///
    /// ```toml
    /// model = "contention"
    /// topo = "torus:8x8x8"
    /// lat = "1us"
    /// bw = "10GB/s"
    /// packet = "4KiB"
    /// nic_bw = "20GB/s"
    /// ```
    ///
    /// The same keys, defaults and checks as the one-line form apply (the table is turned
    /// into that form and parsed).
    pub fn from_table<'a>(
        entries: impl IntoIterator<Item = (&'a str, String)>,
    ) -> Result<NetSpec, SpecError> {
        let mut model = None;
        let mut params = Vec::new();
        for (k, v) in entries {
            if k == "model" {
                model = Some(v);
            } else if k == "topo" && (v.starts_with("fattree:") || v.starts_with("dragonfly:")) {
                // Its own keys follow it in the one-line form: put it first.
                params.insert(0, format!("{k}={v}"));
            } else if v.contains(',') || v.contains('=') {
                return Err(SpecError {
                    spec: format!("{k} = {v:?}"),
                    reason: format!("the value of `{k}` may not contain `,` or `=`"),
                });
            } else {
                params.push(format!("{k}={v}"));
            }
        }
        let model = model.ok_or_else(|| SpecError {
            spec: params.join(","),
            reason: "the table needs `model = \"...\"` (one of ideal, latency, alphabeta, hops, loggops, contention)".into(),
        })?;
        if params.is_empty() {
            model.parse()
        } else {
            format!("{model}:{}", params.join(",")).parse()
        }
    }
}

impl<'de> serde::Deserialize<'de> for NetSpec {
    /// Either a one-line spec string or a table (see [`NetSpec::from_table`]).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Form {
            Line(String),
            Table(std::collections::BTreeMap<String, TableValue>),
        }
        let form = Form::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "a network model is a spec string such as \"alphabeta:lat=1us,bw=10GB/s\" or a table with `model = \"...\"` and string or number parameters",
            )
        })?;
        match form {
            Form::Line(s) => s.parse().map_err(serde::de::Error::custom),
            Form::Table(t) => NetSpec::from_table(t.iter().map(|(k, v)| {
                let v = match v {
                    TableValue::Str(s) => s.clone(),
                    TableValue::Int(i) => i.to_string(),
                    TableValue::Float(f) => f.to_string(),
                };
                (k.as_str(), v)
            }))
            .map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_round_trips() {
        for s in [
            "ideal",
            "recorded",
            "latency:lat=5us",
            "alphabeta:lat=1us,bw=10GB/s",
            "alphabeta:bw=1MB/s,o_send=2ns,o_recv=1.5us,lat=0",
            "hops:topo=torus:8x8x8,lat=1us,hop=50ns,bw=10GB/s",
            "hops:topo=hypercube:10,bw=1GB/s,ppn=4,lat_intra=100ns,bw_intra=40GB/s",
            "hops:topo=fattree:k=4,levels=3,lat=1us,hop=100ns,bw=10GB/s",
            "hops:lat=1us,topo=fattree:levels=2,k=8,bw=1GB/s,ppn=2",
            "contention:topo=dragonfly:groups=9,routers=4,hosts=2,global=2,bw=10GB/s,lat=1us",
            "flow:topo=torus:4x4,hop=1us,bw=1GB/s",
            "flow:topo=torus:4x4,hop=1us,bw=1GB/s,sharing=lv08",
            "flow:topo=torus:4x4,hop=1us,bw=1GB/s,sharing=cm02,lat_factor=1.5,bw_factor=.92,weight_s=8KiB",
        ] {
            let spec: NetSpec = s.parse().unwrap();
            let canon = spec.to_string();
            assert_eq!(canon.parse::<NetSpec>().unwrap(), spec, "{s} -> {canon}");
        }
        let spec: NetSpec = "hops:topo=fattree:k=4,levels=3,lat=1us,bw=1GB/s"
            .parse()
            .unwrap();
        assert_eq!(
            spec.topology().map(|(t, _)| t.clone()),
            Some(Topology::FatTree {
                k: 4,
                levels: 3,
                up: 4
            })
        );
        // Flow factors are exact millionths; lv08 brings SimGrid's defaults.
        let NetSpec::Flow(f) = "flow:topo=full:4,bw=1GB/s,sharing=lv08".parse().unwrap() else {
            panic!("flow")
        };
        assert_eq!(
            (f.lat_factor_ppm, f.bw_factor_ppm, f.weight_s_bytes),
            (13_010_000, 970_000, 20537)
        );
        assert_eq!(fmt_ppm(970_000), "0.97");
        assert_eq!(parse_ppm("13.01"), Ok(13_010_000));
        for (bad, why) in [
            (
                "flow:topo=full:4,bw=1GB/s,weight_s=1000",
                "needs sharing=cm02 or lv08",
            ),
            ("flow:topo=full:4,bw=1GB/s,bw_factor=0", "above 0"),
            (
                "flow:topo=full:4,bw=1GB/s,lat_factor=1.0000001",
                "at most 6 decimals",
            ),
            (
                "flow:topo=full:4,bw=1GB/s,sharing=tcp",
                "not a sharing rule",
            ),
            (
                "hops:topo=full:4,bw=1GB/s,sharing=cm02",
                "has no parameter `sharing`",
            ),
        ] {
            let e = bad.parse::<NetSpec>().unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
        // A TOML table keeps the topology's commas inside its value, in any key order.
        let from_table = NetSpec::from_table([
            ("bw", "1GB/s".to_string()),
            ("lat", "1us".to_string()),
            ("model", "hops".to_string()),
            ("topo", "fattree:k=4,levels=3".to_string()),
        ])
        .unwrap();
        assert_eq!(from_table, spec);
        // Topology keys outside a fat-tree or dragonfly value are unknown model parameters.
        let e = "hops:topo=torus:4x4,k=4,bw=1GB/s"
            .parse::<NetSpec>()
            .unwrap_err();
        assert!(e.to_string().contains("no parameter `k`"), "{e}");
        assert_eq!(
            "alphabeta:lat=1us,bw=10GB/s"
                .parse::<NetSpec>()
                .unwrap()
                .to_string(),
            "alphabeta:lat=1us,bw=10GB/s,o_send=0ps,o_recv=0ps"
        );
        assert_eq!(
            "latency:lat=1.5us".parse::<NetSpec>().unwrap().to_string(),
            "latency:lat=1.5us"
        );
    }

    #[test]
    fn errors_say_what_is_accepted() {
        let e = |s: &str| s.parse::<NetSpec>().unwrap_err().to_string();
        assert!(e("torus").contains("known models"));
        assert!(e("latency:latency=5us").contains("its parameters: lat"));
        assert!(e("latency:lat=5").contains("unit is required"));
        assert!(e("alphabeta:lat=1us").contains("needs a bandwidth"));
        assert!(e("alphabeta:bw=fast").contains("bw:"));
        assert!(e("latency:lat").contains("key=value"));
        assert!(e("latency:lat=1us,lat=2us").contains("twice"));
        assert!(e("ideal:x=1").contains("its parameters: none"));
        assert!(e("hops:lat=1us,bw=1GB/s").contains("needs a topology"));
        assert_eq!(
            "hops:topo=torus:8x8x8,lat=1us,hop=50ns,bw=10GB/s"
                .parse::<NetSpec>()
                .unwrap()
                .to_string(),
            "hops:topo=torus:8x8x8,lat=1us,hop=50ns,bw=10GB/s,ppn=1,lat_intra=0ps,bw_intra=10GB/s"
        );
        assert!(e("hops:topo=ring:4,bw=1GB/s").contains("unknown kind"));
        assert!(e("hops:topo=torus:4x4,bw=1GB/s,ppn=0").contains("ppn"));
    }
}
