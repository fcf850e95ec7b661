//! Topologies as data, with dimension-order routing.
//!
//! A [`Topology`] numbers its nodes `0..nodes()`. Coordinates on a mesh or torus are
//! mixed-radix with dimension 0 varying fastest: node `n` of `AxBxC` has
//! `x = n mod A`, `y = (n / A) mod B`, `z = n / (A*B)`. On a hypercube of dimension `d`, node
//! `n`'s neighbour across dimension `i` is `n XOR 2^i`.
//!
//! **Links** are directed: [`LinkId`] = `node * ports() + port`, the link leaving `node`
//! through `port`. Ports: hypercube `i` = across dimension `i`; mesh and torus `2i` = +1 along
//! dimension `i`, `2i+1` = -1 along it; fully connected: port = destination node (each pair has
//! its own link).
//!
//! **Routing** is deterministic dimension order:
//! * hypercube: e-cube, correcting differing address bits from the lowest dimension up;
//! * mesh: dimension 0 first (XY, XYZ...), moving toward the destination;
//! * torus: dimension 0 first, each dimension in the shorter direction around its ring; on a tie
//!   (even ring, distance exactly half the ring) the **positive** direction is taken;
//! * fully connected: one hop.
//!
//! Hop counts are therefore the Hamming distance (hypercube), the Manhattan distance (mesh) and
//! the wrapped Manhattan distance (torus).
//!
//! **Indirect networks** (fat-tree, dragonfly) have switches besides the hosts. Vertices
//! `0..nodes()` are the hosts (where PEs live), the switches follow up to `vertices()`; a hop
//! is one link, host links included (two hosts on one switch are 2 hops apart).
//!
//! * `fattree:k=K,levels=N[,up=U]`: the k-ary n-tree (Petrini and Vanneschi), tapered when
//!   `U < K` (default `U = K`): `K^N` hosts; host `h` has base-`K` digits `h_0..h_{N-1}`.
//!   Level `l` (0 = leaves) has `K^(N-1-l) * U^l` switches `(a, b)`: subtree `a` (it is above
//!   the hosts `h` with `h / K^(l+1) == a`) and replica `b < U^l` (the up-ports taken from the
//!   leaf, base `U`), numbered level by level, `a` then `b`. Leaf `(a, 0)` serves hosts
//!   `a*K..a*K+K-1`; switch `(a, b)` of level `l` links up through port `K + u` to `(a / K,
//!   b + u*U^l)` of level `l+1`. Ports: `0..K` down (to the host, or the child subtree with
//!   that digit), `K..K+U` up; a host's port 0 leads to its leaf switch. Routing is up/down
//!   with **D-mod-k** up-port selection: going up from level `l` toward destination `d`, take
//!   up-port `d_l mod U`; go down as soon as the destination is below. Two hosts whose
//!   highest differing digit is `m` are `2(m+1)` hops apart.
//! * `dragonfly:groups=G,routers=A,hosts=P,global=H`: `G` groups of `A` routers, each router
//!   with `P` hosts and `H` global links; routers of a group are fully connected; global link
//!   `t` of group `i` (`t = router * H + port`, `t < G-1`) leads to group `(i + t + 1) mod G`,
//!   arriving on its global link `G - 2 - t` (needs `A*H >= G-1`; one link per group pair).
//!   Router ports: `0..P` hosts, `P..P+A-1` the other routers of the group in order, then the
//!   `H` global links. **Minimal routing** (the default, `routing=minimal`): to the
//!   destination's router if in the same group; else to the router holding the global link to
//!   the destination group, across it, then to the destination router: 2 to 5 hops between
//!   hosts. **Valiant routing** (`routing=valiant`): between two groups (when there is a third),
//!   minimally to an intermediate group `I` first, arriving on the router where the global
//!   link from the source group lands ([`Topology::waypoint`]), then minimally to the
//!   destination: 2 to 7 hops. `I` is one of the `G - 2` other groups, chosen by a hash of
//!   (source host, destination host): every message of a pair takes the same route (so a
//!   model needs no random state and results need no seed), and the pairs of an adversarial
//!   pattern (group `i` to group `i+1`) spread over all groups. Within a group, minimal.

use std::fmt;
use std::str::FromStr;

/// A directed link: `node * ports + port`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkId(pub u64);

/// An interconnect shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Topology {
    /// Every node linked to every other (a crossbar).
    FullyConnected {
        /// Number of nodes.
        nodes: u32,
    },
    /// A binary hypercube of `2^dim` nodes.
    Hypercube {
        /// Dimension (0..=31).
        dim: u32,
    },
    /// An n-D mesh without wrap-around.
    Mesh {
        /// Extent of each dimension.
        dims: Vec<u32>,
    },
    /// An n-D torus (every dimension wraps around).
    Torus {
        /// Extent of each dimension.
        dims: Vec<u32>,
    },
    /// A k-ary n-tree (fat-tree) with D-mod-k up/down routing; tapered when `up < k`.
    FatTree {
        /// Switch arity: ports down per switch.
        k: u32,
        /// Switch levels.
        levels: u32,
        /// Ports up per switch below the top (`k`: full bisection; fewer: oversubscribed by
        /// `k / up` at every level).
        up: u32,
    },
    /// A dragonfly with minimal or Valiant routing.
    Dragonfly {
        /// Groups.
        groups: u32,
        /// Routers per group.
        routers: u32,
        /// Hosts per router.
        hosts: u32,
        /// Global links per router.
        global: u32,
        /// Valiant routing (through an intermediate group) instead of minimal.
        valiant: bool,
    },
}

impl Topology {
    /// Number of nodes that hold PEs (hosts).
    pub fn nodes(&self) -> u64 {
        match self {
            Topology::FullyConnected { nodes } => *nodes as u64,
            Topology::Hypercube { dim } => 1u64 << dim,
            Topology::Mesh { dims } | Topology::Torus { dims } => {
                dims.iter().map(|&d| d as u64).product()
            }
            Topology::FatTree { k, levels, .. } => (*k as u64).saturating_pow(*levels),
            Topology::Dragonfly {
                groups,
                routers,
                hosts,
                ..
            } => *groups as u64 * *routers as u64 * *hosts as u64,
        }
    }

    /// Number of vertices: the hosts, then the switches of indirect networks.
    pub fn vertices(&self) -> u64 {
        match self {
            Topology::FatTree { k, levels, up } => {
                self.nodes() + ft_level_start(*k as u64, *up as u64, *levels, *levels)
            }
            Topology::Dragonfly {
                groups, routers, ..
            } => self.nodes() + *groups as u64 * *routers as u64,
            _ => self.nodes(),
        }
    }

    /// Output ports per vertex (see the module docs for their numbering).
    pub fn ports(&self) -> u64 {
        match self {
            Topology::FullyConnected { nodes } => *nodes as u64,
            Topology::Hypercube { dim } => *dim as u64,
            Topology::Mesh { dims } | Topology::Torus { dims } => 2 * dims.len() as u64,
            Topology::FatTree { k, up, .. } => *k as u64 + *up as u64,
            Topology::Dragonfly {
                routers,
                hosts,
                global,
                ..
            } => *hosts as u64 + (*routers as u64).saturating_sub(1) + *global as u64,
        }
    }

    /// The class of the link leaving vertex `v` through `port`, for load per direction
    /// (mesh, torus, hypercube) or per level (fat-tree, dragonfly): `x+`, `y-`, `dim 3`,
    /// `host -> leaf`, `level 1 -> 2 (up)`, `local`, `global`.
    pub fn link_class(&self, v: u64, port: u64) -> String {
        match self {
            Topology::FullyConnected { .. } => "direct".into(),
            Topology::Hypercube { .. } => format!("dim {port}"),
            Topology::Mesh { dims } | Topology::Torus { dims } => {
                let i = (port / 2) as usize;
                let sign = if port % 2 == 0 { "+" } else { "-" };
                match (dims.len() <= 3, ["x", "y", "z"].get(i)) {
                    (true, Some(a)) => format!("{a}{sign}"),
                    _ => format!("dim {i}{sign}"),
                }
            }
            Topology::FatTree { k, levels, up } => {
                let hosts = self.nodes();
                if v < hosts {
                    return "host -> leaf".into();
                }
                let (l, _, _) = ft_coords(*k as u64, *up as u64, *levels, hosts, v);
                match (port < *k as u64, l) {
                    (true, 0) => "leaf -> host".into(),
                    (true, l) => format!("level {l} -> {} (down)", l - 1),
                    (false, l) => format!("level {l} -> {} (up)", l + 1),
                }
            }
            Topology::Dragonfly { routers, hosts, .. } => {
                let (h, a) = (*hosts as u64, (*routers as u64).saturating_sub(1));
                if v < self.nodes() {
                    "host -> router".into()
                } else if port < h {
                    "router -> host".into()
                } else if port < h + a {
                    "local".into()
                } else {
                    "global".into()
                }
            }
        }
    }

    /// Number of hops on the route from `a` to `b` (0 when `a == b`).
    pub fn hops(&self, a: u64, b: u64) -> u32 {
        match self {
            Topology::FatTree { k, .. } => {
                if a == b {
                    return 0;
                }
                // Highest base-k digit where the hosts differ.
                let (k, mut x, mut y, mut m) = (*k as u64, a, b, 0u32);
                let mut level = 0u32;
                while x != y {
                    if x % k != y % k {
                        m = level;
                    }
                    x /= k;
                    y /= k;
                    level += 1;
                }
                2 * (m + 1)
            }
            Topology::Dragonfly { .. } => match self.waypoint(a, b) {
                Some(w) => self.minimal_hops(a, w) + self.minimal_hops(w, b),
                None => self.minimal_hops(a, b),
            },
            Topology::FullyConnected { .. } => (a != b) as u32,
            Topology::Hypercube { .. } => (a ^ b).count_ones(),
            Topology::Mesh { dims } | Topology::Torus { dims } => {
                let wrap = matches!(self, Topology::Torus { .. });
                let (mut a, mut b, mut h) = (a, b, 0u32);
                for &d in dims {
                    let d = d as u64;
                    h += axis_move(wrap, d, a % d, b % d).1 as u32;
                    a /= d;
                    b /= d;
                }
                h
            }
        }
    }

    /// Hops of the minimal route between two vertices, by walking it.
    fn minimal_hops(&self, a: u64, b: u64) -> u32 {
        let (mut n, mut cur) = (0, a);
        while let Some((_, next)) = self.next_hop(cur, b) {
            cur = next;
            n += 1;
        }
        n
    }

    /// Appends the links of the route from `a` to `b` to `out`, in traversal order (through
    /// [`Topology::waypoint`] when there is one).
    pub fn route(&self, a: u64, b: u64, out: &mut Vec<LinkId>) {
        self.for_each_link(a, b, |l| out.push(l));
    }

    /// Calls `f` with each link of the route from `a` to `b`, in traversal order.
    #[inline]
    pub fn for_each_link(&self, a: u64, b: u64, mut f: impl FnMut(LinkId)) {
        let mut cur = a;
        if let Some(w) = self.waypoint(a, b) {
            while let Some((link, next)) = self.next_hop(cur, w) {
                f(link);
                cur = next;
            }
        }
        while let Some((link, next)) = self.next_hop(cur, b) {
            f(link);
            cur = next;
        }
    }

    /// The vertex a route from host `a` to host `b` passes through before it heads for `b`,
    /// or `None` when it goes straight there: with Valiant routing on a dragonfly, the router
    /// of the intermediate group where the global link from `a`'s group arrives (see the
    /// module docs). Routes are [`Topology::next_hop`] walks to the waypoint, then to `b`.
    #[inline]
    pub fn waypoint(&self, a: u64, b: u64) -> Option<u64> {
        let Topology::Dragonfly { valiant: true, .. } = self else {
            return None;
        };
        let (ra, p, h, g) = self.df();
        let hosts = self.nodes();
        if a >= hosts || b >= hosts || g < 3 {
            return None;
        }
        let (sg, dg) = (a / p / ra, b / p / ra);
        if sg == dg {
            return None;
        }
        // The i-th of the other groups, skipping the source and destination groups.
        let mut i = sim_core::rng::mix64(a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b) % (g - 2);
        for skip in [sg.min(dg), sg.max(dg)] {
            if i >= skip {
                i += 1;
            }
        }
        // Global link t of the source group leads to group i and lands on its link g - 2 - t.
        let t = (i + g - sg - 1) % g;
        Some(hosts + i * ra + (g - 2 - t) / h)
    }

    /// The node a link leads to.
    pub fn link_target(&self, link: LinkId) -> u64 {
        let ports = self.ports().max(1);
        let (node, port) = (link.0 / ports, link.0 % ports);
        match self {
            Topology::FullyConnected { .. } => port,
            Topology::Hypercube { .. } => node ^ (1 << port),
            Topology::Mesh { dims } | Topology::Torus { dims } => {
                let i = (port / 2) as usize;
                let stride: u64 = dims[..i].iter().map(|&d| d as u64).product();
                let d = dims[i] as u64;
                let x = node / stride % d;
                let next = if port % 2 == 0 {
                    (x + 1) % d
                } else {
                    (x + d - 1) % d
                };
                node - x * stride + next * stride
            }
            Topology::FatTree { k, levels, up } => {
                fat_tree_neighbour(*k as u64, *up as u64, *levels, self.nodes(), node, port)
            }
            Topology::Dragonfly { .. } => self.dragonfly_neighbour(node, port),
        }
    }

    /// Dragonfly sizes: (routers per group, hosts per router, global links per router, groups).
    fn df(&self) -> (u64, u64, u64, u64) {
        match self {
            Topology::Dragonfly {
                groups,
                routers,
                hosts,
                global,
                ..
            } => (
                *routers as u64,
                *hosts as u64,
                *global as u64,
                *groups as u64,
            ),
            _ => unreachable!("dragonfly only"),
        }
    }

    /// The vertex at the far end of `port` of a dragonfly vertex.
    fn dragonfly_neighbour(&self, v: u64, port: u64) -> u64 {
        let (a, p, h, g) = self.df();
        let hosts = self.nodes();
        if v < hosts {
            return hosts + v / p;
        }
        let r = v - hosts;
        let (group, local) = (r / a, r % a);
        if port < p {
            return r * p + port;
        }
        if port < p + a - 1 {
            let q = port - p;
            let q = if q < local { q } else { q + 1 };
            return hosts + group * a + q;
        }
        // Global link t of this group leads to group (group + t + 1) mod g, arriving on its
        // link g - 2 - t.
        let t = local * h + (port - p - (a - 1));
        if t + 1 >= g {
            // A spare global link (routers x global > groups - 1): connected to nothing,
            // never on a route.
            return v;
        }
        let to_group = (group + t + 1) % g;
        let back = g - 2 - t;
        hosts + to_group * a + back / h
    }

    /// The first link of the minimal route from vertex `cur` to vertex `dst` and the vertex it
    /// leads to, or `None` when `cur == dst`. Routing is a function of `(cur, dst)` only, so
    /// a packet needs no stored route beyond its [`Topology::waypoint`]: the contention model
    /// calls this once per hop.
    #[inline]
    pub fn next_hop(&self, cur: u64, dst: u64) -> Option<(LinkId, u64)> {
        if cur == dst {
            return None;
        }
        let ports = self.ports();
        match self {
            Topology::FullyConnected { .. } => Some((LinkId(cur * ports + dst), dst)),
            Topology::Hypercube { .. } => {
                let i = (cur ^ dst).trailing_zeros() as u64;
                Some((LinkId(cur * ports + i), cur ^ (1 << i)))
            }
            Topology::FatTree { k, levels, up } => Some(fat_tree_next(
                *k as u64,
                *up as u64,
                *levels,
                self.nodes(),
                ports,
                cur,
                dst,
            )),
            Topology::Dragonfly { .. } => {
                let (a, p, h, g) = self.df();
                let hosts = self.nodes();
                if cur < hosts {
                    return Some((LinkId(cur * ports), hosts + cur / p));
                }
                let r = cur - hosts;
                // The destination's router (a waypoint is a router itself).
                let dr = if dst < hosts { dst / p } else { dst - hosts };
                let port = if r == dr {
                    dst % p
                } else if r / a == dr / a {
                    let q = dr % a;
                    p + if q < r % a { q } else { q - 1 }
                } else {
                    let t = (dr / a + g - r / a - 1) % g;
                    if t / h == r % a {
                        p + (a - 1) + t % h
                    } else {
                        let q = t / h;
                        p + if q < r % a { q } else { q - 1 }
                    }
                };
                Some((
                    LinkId(cur * ports + port),
                    self.dragonfly_neighbour(cur, port),
                ))
            }
            Topology::Mesh { dims } | Topology::Torus { dims } => {
                let wrap = matches!(self, Topology::Torus { .. });
                let mut stride = 1u64;
                for (i, &d) in dims.iter().enumerate() {
                    let d = d as u64;
                    let x = cur / stride % d;
                    let y = dst / stride % d;
                    if x != y {
                        let (positive, _) = axis_move(wrap, d, x, y);
                        let (port, next) = if positive {
                            (2 * i as u64, (x + 1) % d)
                        } else {
                            (2 * i as u64 + 1, (x + d - 1) % d)
                        };
                        return Some((
                            LinkId(cur * ports + port),
                            cur - x * stride + next * stride,
                        ));
                    }
                    stride *= d;
                }
                None
            }
        }
    }
}

/// The first switch of level `l` (0 = leaves), counted from the first switch: level `i`
/// has `k^(levels-1-i) * up^i` switches.
fn ft_level_start(k: u64, up: u64, levels: u32, l: u32) -> u64 {
    (0..l).map(|i| k.pow(levels - 1 - i) * up.pow(i)).sum()
}

/// Fat-tree switch `(l, a, b)`: level `l`, subtree `a` (the hosts `h` with
/// `h / k^(l+1) == a`), replica `b < up^l` (the up-ports taken from the leaf, base `up`).
fn ft_switch(k: u64, up: u64, levels: u32, hosts: u64, l: u32, a: u64, b: u64) -> u64 {
    hosts + ft_level_start(k, up, levels, l) + a * up.pow(l) + b
}

/// `(l, a, b)` of switch vertex `v`.
fn ft_coords(k: u64, up: u64, levels: u32, hosts: u64, v: u64) -> (u32, u64, u64) {
    let mut x = v - hosts;
    for l in 0..levels {
        let n = k.pow(levels - 1 - l) * up.pow(l);
        if x < n {
            return (l, x / up.pow(l), x % up.pow(l));
        }
        x -= n;
    }
    unreachable!("a fat-tree vertex is a host or a switch")
}

/// The vertex at the far end of `port` of a fat-tree vertex: ports `0..k` down (to the host
/// or the child subtree with that digit), `k..k+up` up (appending that replica digit).
fn fat_tree_neighbour(k: u64, up: u64, levels: u32, hosts: u64, v: u64, port: u64) -> u64 {
    if v < hosts {
        return ft_switch(k, up, levels, hosts, 0, v / k, 0);
    }
    let (l, a, b) = ft_coords(k, up, levels, hosts, v);
    if port < k {
        if l == 0 {
            a * k + port
        } else {
            ft_switch(k, up, levels, hosts, l - 1, a * k + port, b % up.pow(l - 1))
        }
    } else {
        ft_switch(
            k,
            up,
            levels,
            hosts,
            l + 1,
            a / k,
            b + (port - k) * up.pow(l),
        )
    }
}

/// One fat-tree routing step (D-mod-k up, then down); `cur != dst`.
fn fat_tree_next(
    k: u64,
    up: u64,
    levels: u32,
    hosts: u64,
    ports: u64,
    cur: u64,
    dst: u64,
) -> (LinkId, u64) {
    if cur < hosts {
        return (
            LinkId(cur * ports),
            ft_switch(k, up, levels, hosts, 0, cur / k, 0),
        );
    }
    let (l, a, _) = ft_coords(k, up, levels, hosts, cur);
    let digit = dst / k.pow(l) % k;
    let port = if a == dst / k.pow(l + 1) {
        // Below: down to the host, or to the child subtree of the destination's digit l.
        digit
    } else {
        // Up (D-mod-k): the replica chosen by the destination's digit l.
        k + digit % up
    };
    (
        LinkId(cur * ports + port),
        fat_tree_neighbour(k, up, levels, hosts, cur, port),
    )
}

/// Direction (`true` = positive) and number of steps from coordinate `x` to `y` on an axis of
/// extent `d`: straight toward `y` on a mesh; the shorter way round on a torus ring, positive on
/// a tie. The one place both [`Topology::hops`] and [`Topology::route`] take this decision.
fn axis_move(wrap: bool, d: u64, x: u64, y: u64) -> (bool, u64) {
    if !wrap {
        return (y >= x, x.abs_diff(y));
    }
    let fwd = (y + d - x) % d;
    if fwd <= d - fwd {
        (true, fwd)
    } else {
        (false, d - fwd)
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |d: &[u32]| {
            d.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join("x")
        };
        match self {
            Topology::FullyConnected { nodes } => write!(f, "full:{nodes}"),
            Topology::Hypercube { dim } => write!(f, "hypercube:{dim}"),
            Topology::Mesh { dims } => write!(f, "mesh:{}", join(dims)),
            Topology::Torus { dims } => write!(f, "torus:{}", join(dims)),
            Topology::FatTree { k, levels, up } if up == k => {
                write!(f, "fattree:k={k},levels={levels}")
            }
            Topology::FatTree { k, levels, up } => {
                write!(f, "fattree:k={k},levels={levels},up={up}")
            }
            Topology::Dragonfly {
                groups,
                routers,
                hosts,
                global,
                valiant,
            } => {
                write!(
                    f,
                    "dragonfly:groups={groups},routers={routers},hosts={hosts},global={global}"
                )?;
                if *valiant {
                    f.write_str(",routing=valiant")?;
                }
                Ok(())
            }
        }
    }
}

impl FromStr for Topology {
    type Err = String;
    /// `full:N`, `hypercube:D`, `mesh:AxB[xC...]`, `torus:AxB[xC...]`, `fattree:k=K,levels=N`,
    /// `dragonfly:groups=G,routers=A,hosts=P,global=H[,routing=minimal|valiant]`.
    fn from_str(s: &str) -> Result<Self, String> {
        let usage = "expected full:N, hypercube:D, mesh:AxBxC, torus:AxBxC (e.g. torus:8x8x8), fattree:k=K,levels=N[,up=U] or dragonfly:groups=G,routers=A,hosts=P,global=H[,routing=minimal|valiant]";
        let (kind, arg) = s
            .split_once(':')
            .ok_or_else(|| format!("topology `{s}`: {usage}"))?;
        let num = |x: &str| {
            x.trim()
                .parse::<u32>()
                .map_err(|_| format!("topology `{s}`: `{x}` is not a number; {usage}"))
        };
        let t = match kind.trim() {
            "full" => Topology::FullyConnected { nodes: num(arg)? },
            "hypercube" => {
                let dim = num(arg)?;
                if dim > 31 {
                    return Err(format!(
                        "topology `{s}`: hypercube dimension must be at most 31"
                    ));
                }
                Topology::Hypercube { dim }
            }
            "mesh" | "torus" => {
                let dims = arg.split('x').map(num).collect::<Result<Vec<_>, _>>()?;
                if kind.trim() == "mesh" {
                    Topology::Mesh { dims }
                } else {
                    Topology::Torus { dims }
                }
            }
            kind @ ("fattree" | "dragonfly") => {
                let keys: &[&str] = if kind == "fattree" {
                    &["k", "levels", "up"]
                } else {
                    &["groups", "routers", "hosts", "global", "routing"]
                };
                let mut vals = vec![None; keys.len()];
                let mut valiant = false;
                for part in arg.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    let (key, v) = part.split_once('=').ok_or_else(|| {
                        format!("topology `{s}`: `{part}` is not key=value; {usage}")
                    })?;
                    let i = keys.iter().position(|k| *k == key.trim()).ok_or_else(|| {
                        format!(
                            "topology `{s}`: {kind} has no parameter `{}`; it takes {}",
                            key.trim(),
                            keys.join(", ")
                        )
                    })?;
                    if keys[i] == "routing" {
                        valiant = match v.trim() {
                            "minimal" => false,
                            "valiant" => true,
                            other => {
                                return Err(format!(
                                    "topology `{s}`: routing={other}; expected minimal or valiant"
                                ));
                            }
                        };
                        continue;
                    }
                    vals[i] = Some(num(v)?);
                }
                let get = |i: usize| {
                    vals[i].ok_or_else(|| format!("topology `{s}`: {kind} needs {}=...", keys[i]))
                };
                if kind == "fattree" {
                    let (k, levels) = (get(0)?, get(1)?);
                    let up = vals[2].unwrap_or(k);
                    if k < 2 || levels < 1 {
                        return Err(format!(
                            "topology `{s}`: a fat-tree needs k >= 2 and levels >= 1"
                        ));
                    }
                    if up < 1 || up > k {
                        return Err(format!(
                            "topology `{s}`: up must be between 1 and k (up = k: full bisection; fewer: tapered)"
                        ));
                    }
                    if (k as u64)
                        .checked_pow(levels)
                        .is_none_or(|n| n > u32::MAX as u64)
                    {
                        return Err(format!("topology `{s}` has more than 2^32 nodes"));
                    }
                    Topology::FatTree { k, levels, up }
                } else {
                    let (groups, routers, hosts, global) = (get(0)?, get(1)?, get(2)?, get(3)?);
                    if groups < 1 || routers < 1 || hosts < 1 {
                        return Err(format!(
                            "topology `{s}`: a dragonfly needs at least one group, router and host"
                        ));
                    }
                    if (routers as u64) * (global as u64) < groups as u64 - 1 {
                        return Err(format!(
                            "topology `{s}`: {groups} groups need {} global links per group (one to each other group), but routers x global = {}",
                            groups - 1,
                            routers as u64 * global as u64
                        ));
                    }
                    if groups as u64 * routers as u64 * hosts as u64 > u32::MAX as u64 {
                        return Err(format!("topology `{s}` has more than 2^32 nodes"));
                    }
                    Topology::Dragonfly {
                        groups,
                        routers,
                        hosts,
                        global,
                        valiant,
                    }
                }
            }
            other => return Err(format!("topology `{s}`: unknown kind `{other}`; {usage}")),
        };
        if t.nodes() == 0 {
            return Err(format!("topology `{s}` has no nodes"));
        }
        if t.nodes() > u32::MAX as u64 {
            return Err(format!("topology `{s}` has more than 2^32 nodes"));
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_routes(t: &Topology) {
        let mut links = Vec::new();
        let n = t.nodes();
        for a in 0..n {
            for b in 0..n {
                links.clear();
                t.route(a, b, &mut links);
                assert_eq!(links.len() as u32, t.hops(a, b), "{t}: {a}->{b}");
                // The route is a connected walk from a that ends at b.
                let mut cur = a;
                for l in &links {
                    assert_eq!(
                        l.0 / t.ports(),
                        cur,
                        "{t}: {a}->{b} link {l:?} does not leave {cur}"
                    );
                    cur = neighbour(t, cur, l.0 % t.ports());
                }
                assert_eq!(cur, b, "{t}: {a}->{b}");
            }
        }
    }

    /// The node at the far end of `port` of `node`, from the port numbering in the module docs.
    fn neighbour(t: &Topology, node: u64, port: u64) -> u64 {
        match t {
            Topology::FullyConnected { .. } => port,
            Topology::Hypercube { .. } => node ^ (1 << port),
            Topology::Mesh { dims } | Topology::Torus { dims } => {
                let i = (port / 2) as usize;
                let stride: u64 = dims[..i].iter().map(|&d| d as u64).product();
                let d = dims[i] as u64;
                let x = node / stride % d;
                let nx = if port % 2 == 0 {
                    (x + 1) % d
                } else {
                    (x + d - 1) % d
                };
                if let Topology::Mesh { .. } = t {
                    assert!(
                        if port % 2 == 0 { x + 1 < d } else { x > 0 },
                        "mesh route leaves the grid"
                    );
                }
                node - x * stride + nx * stride
            }
            Topology::FatTree { .. } | Topology::Dragonfly { .. } => {
                unreachable!("indirect networks are checked by check_indirect")
            }
        }
    }

    #[test]
    fn hop_counts_are_the_textbook_distances() {
        let h: Topology = "hypercube:5".parse().unwrap();
        for (a, b) in [(0u64, 31u64), (5, 6), (17, 17), (1, 30)] {
            assert_eq!(h.hops(a, b), (a ^ b).count_ones());
        }
        let m: Topology = "mesh:4x3x5".parse().unwrap();
        // node = x + 4y + 12z
        assert_eq!(m.hops(0, 3 + 4 * 2 + 12 * 4), 3 + 2 + 4);
        assert_eq!(m.hops(1 + 4, 2 + 12 * 3), 1 + 1 + 3);
        let t: Topology = "torus:8x8x8".parse().unwrap();
        assert_eq!(t.hops(0, 7), 1); // wraps
        assert_eq!(t.hops(0, 4), 4); // tie: half the ring
        assert_eq!(t.hops(0, 7 + 8 * 7 + 64 * 7), 3);
        assert_eq!(t.hops(3, 5 + 8 * 6 + 64 * 2), 2 + 2 + 2);
        let f: Topology = "full:9".parse().unwrap();
        assert_eq!((f.hops(2, 2), f.hops(2, 8)), (0, 1));
    }

    #[test]
    fn routes_are_walks_of_hop_length() {
        for s in [
            "hypercube:4",
            "mesh:3x4",
            "mesh:2x3x2",
            "torus:4x4",
            "torus:5x3x2",
            "torus:6",
            "full:5",
        ] {
            check_routes(&s.parse().unwrap());
        }
    }

    /// The undirected edges of an indirect network, built from its definition (not from the
    /// port numbering): for checking routes against.
    fn edges(t: &Topology) -> std::collections::HashSet<(u64, u64)> {
        let mut e = std::collections::HashSet::new();
        let mut add = |a: u64, b: u64| {
            e.insert((a.min(b), a.max(b)));
        };
        let hosts = t.nodes();
        match *t {
            Topology::FatTree { k, levels, up } => {
                // Switches listed level by level as (subtree, replica); a switch links up to
                // every replica of its parent subtree that extends its own replica digits.
                let (k, u) = (k as u64, up as u64);
                let mut id = hosts;
                let mut level: Vec<Vec<(u64, u64, u64)>> = Vec::new();
                for l in 0..levels {
                    let mut v = Vec::new();
                    for a in 0..k.pow(levels - 1 - l) {
                        for b in 0..u.pow(l) {
                            v.push((a, b, id));
                            id += 1;
                        }
                    }
                    level.push(v);
                }
                for h in 0..hosts {
                    add(h, level[0].iter().find(|s| s.0 == h / k).unwrap().2);
                }
                for l in 0..levels as usize - 1 {
                    for &(a, b, x) in &level[l] {
                        for &(a2, b2, y) in &level[l + 1] {
                            if a2 == a / k && b2 % u.pow(l as u32) == b {
                                add(x, y);
                            }
                        }
                    }
                }
            }
            Topology::Dragonfly {
                groups,
                routers,
                hosts: p,
                global,
                ..
            } => {
                let (g, a, p, h) = (groups as u64, routers as u64, p as u64, global as u64);
                for x in 0..hosts {
                    add(x, hosts + x / p);
                }
                for grp in 0..g {
                    for r in 0..a {
                        for q in 0..a {
                            if r != q {
                                add(hosts + grp * a + r, hosts + grp * a + q);
                            }
                        }
                    }
                    // One global link between every two groups.
                    for other in 0..g {
                        if other != grp {
                            let t = (other + g - grp - 1) % g;
                            let back = (grp + g - other - 1) % g;
                            assert_eq!(back, g - 2 - t);
                            add(hosts + grp * a + t / h, hosts + other * a + back / h);
                        }
                    }
                }
            }
            _ => unreachable!(),
        }
        e
    }

    /// Every route between hosts is a walk on the network's edges, leaving each vertex by a
    /// link of that vertex, of `hops()` length, ending at the destination.
    fn check_indirect(t: &Topology) -> u64 {
        let e = edges(t);
        let mut links = Vec::new();
        let mut total = 0u64;
        for a in 0..t.nodes() {
            for b in 0..t.nodes() {
                links.clear();
                t.route(a, b, &mut links);
                assert_eq!(links.len() as u32, t.hops(a, b), "{t}: {a}->{b}");
                let mut cur = a;
                for l in &links {
                    assert_eq!(l.0 / t.ports(), cur, "{t}: {a}->{b}");
                    let next = t.link_target(*l);
                    assert!(
                        e.contains(&(cur.min(next), cur.max(next))),
                        "{t}: {cur}-{next} is no edge"
                    );
                    assert!(next != cur);
                    cur = next;
                }
                assert_eq!(cur, b, "{t}: {a}->{b}");
                total += links.len() as u64;
            }
        }
        total
    }

    #[test]
    fn fat_tree_routes_and_hop_counts() {
        for s in [
            "fattree:k=2,levels=1",
            "fattree:k=2,levels=3",
            "fattree:k=4,levels=2",
            "fattree:k=3,levels=3",
            "fattree:k=4,levels=3,up=2",
            "fattree:k=3,levels=3,up=1",
        ] {
            let t: Topology = s.parse().unwrap();
            assert_eq!(t.to_string(), s);
            check_indirect(&t);
        }
        let tapered: Topology = "fattree:k=4,levels=3,up=2".parse().unwrap();
        // Levels of 16 leaves, 4 subtrees x 2 replicas, 1 x 4 top switches.
        assert_eq!((tapered.vertices(), tapered.ports()), (64 + 16 + 8 + 4, 6));
        assert_eq!(tapered.hops(0, 63), 6);
        let t: Topology = "fattree:k=4,levels=3".parse().unwrap();
        assert_eq!((t.nodes(), t.vertices(), t.ports()), (64, 64 + 3 * 16, 8));
        // Same leaf switch: 2 hops; highest differing digit 1: 4; digit 2: 6.
        assert_eq!(
            (t.hops(0, 3), t.hops(0, 4), t.hops(5, 63), t.hops(9, 9)),
            (2, 4, 6, 0)
        );
        // Up/down routes are shortest paths: the hop count is the BFS distance.
        let e = edges(&t);
        let mut adj = vec![Vec::new(); t.vertices() as usize];
        for &(a, b) in &e {
            adj[a as usize].push(b);
            adj[b as usize].push(a);
        }
        for src in [0u64, 17, 42] {
            let mut dist = vec![u32::MAX; adj.len()];
            let mut q = std::collections::VecDeque::from([src]);
            dist[src as usize] = 0;
            while let Some(v) = q.pop_front() {
                for &w in &adj[v as usize] {
                    if dist[w as usize] == u32::MAX {
                        dist[w as usize] = dist[v as usize] + 1;
                        q.push_back(w);
                    }
                }
            }
            for dst in 0..64 {
                assert_eq!(t.hops(src, dst), dist[dst as usize], "{src}->{dst}");
            }
        }
        // D-mod-k: up-ports are chosen by the destination's digits, so every source in another
        // top-level subtree reaches destination 63 through the same top switch.
        let mut tops = std::collections::BTreeSet::new();
        let mut links = Vec::new();
        for src in 0..16 {
            links.clear();
            t.route(src, 63, &mut links);
            tops.insert(t.link_target(links[2]));
        }
        assert_eq!(tops.len(), 1, "D-mod-k: one top switch per destination");
    }

    #[test]
    fn dragonfly_routes_and_hop_counts() {
        for s in [
            "dragonfly:groups=5,routers=2,hosts=2,global=2",
            "dragonfly:groups=9,routers=4,hosts=2,global=2",
            "dragonfly:groups=3,routers=4,hosts=1,global=1",
            "dragonfly:groups=1,routers=3,hosts=2,global=0",
        ] {
            let t: Topology = s.parse().unwrap();
            assert_eq!(t.to_string(), s);
            check_indirect(&t);
        }
        // 9 groups x 4 routers x 2 hosts, 2 global links per router (a*h = 8 = g-1).
        let t: Topology = "dragonfly:groups=9,routers=4,hosts=2,global=2"
            .parse()
            .unwrap();
        assert_eq!(
            (t.nodes(), t.vertices(), t.ports()),
            (72, 72 + 36, 2 + 3 + 2)
        );
        // Same router: 2; same group: 3.
        assert_eq!((t.hops(0, 1), t.hops(0, 2), t.hops(0, 7)), (2, 3, 3));
        // Group 0 -> group 1 is global link 0, on router 0 of group 0; it arrives on link
        // 9-2-0 = 7 of group 1, router 3. Host 0 (router 0) to host 8+6 (group 1, router 3):
        // host, global, host = 3 hops; to host 8 (router 0 of group 1): one more local hop.
        assert_eq!((t.hops(0, 14), t.hops(0, 8)), (3, 4));
        // From router 1 of group 0 (host 2) to group 1, router 0 (host 8): local, global,
        // local: 5 with the host links.
        assert_eq!(t.hops(2, 8), 5);
        // Minimal routes never take more than one global link, and are at most 5 hops.
        for a in 0..72 {
            for b in 0..72 {
                assert!(t.hops(a, b) <= 5);
            }
        }
    }

    #[test]
    fn valiant_routes_pass_through_a_third_group() {
        for s in [
            "dragonfly:groups=5,routers=2,hosts=2,global=2,routing=valiant",
            "dragonfly:groups=9,routers=4,hosts=2,global=2,routing=valiant",
            "dragonfly:groups=2,routers=2,hosts=1,global=1,routing=valiant",
            "dragonfly:groups=4,routers=1,hosts=3,global=3,routing=valiant",
        ] {
            let t: Topology = s.parse().unwrap();
            assert_eq!(t.to_string(), s);
            check_indirect(&t);
        }
        let t: Topology = "dragonfly:groups=9,routers=4,hosts=2,global=2,routing=valiant"
            .parse()
            .unwrap();
        let min: Topology = "dragonfly:groups=9,routers=4,hosts=2,global=2"
            .parse()
            .unwrap();
        let (hosts, per_group) = (72u64, 8u64);
        let group_of = |v: u64| {
            if v < hosts {
                v / per_group
            } else {
                (v - hosts) / 4
            }
        };
        let mut longest = 0;
        let mut seen = std::collections::BTreeSet::new();
        let mut links = Vec::new();
        for a in 0..hosts {
            for b in 0..hosts {
                let (ga, gb) = (group_of(a), group_of(b));
                let w = t.waypoint(a, b);
                if ga == gb {
                    // Within a group: minimal, no waypoint.
                    assert_eq!(w, None);
                    assert_eq!(t.hops(a, b), min.hops(a, b));
                    continue;
                }
                let w = w.expect("a waypoint between groups");
                let gi = group_of(w);
                assert!(w >= hosts && gi != ga && gi != gb, "{a}->{b} via {w}");
                // Two minimal legs: the first ends by crossing one global link (so at most
                // 3 hops: host, local, global); two global links in all, 2 to 7 hops.
                let h = t.hops(a, b);
                assert!((2..=7).contains(&h), "{a}->{b}: {h}");
                assert!(min.hops(a, w) <= 3, "{a}->{w}");
                assert_eq!(h, min.hops(a, w) + min.hops(w, b));
                links.clear();
                t.route(a, b, &mut links);
                let globals = links
                    .iter()
                    .filter(|l| {
                        let (v, port) = (l.0 / t.ports(), l.0 % t.ports());
                        v >= hosts && port >= 2 + 3
                    })
                    .count();
                assert_eq!(globals, 2, "{a}->{b}");
                longest = longest.max(h);
                if ga == 0 && gb == 1 {
                    seen.insert(gi);
                }
            }
        }
        assert_eq!(
            longest, 7,
            "local, global, local, global, local plus the host links"
        );
        // The adversarial pattern group 0 -> group 1 spreads over all 7 other groups.
        assert_eq!(seen, (2..9).collect());
        // With two groups there is no third one: minimal.
        let two: Topology = "dragonfly:groups=2,routers=2,hosts=1,global=1,routing=valiant"
            .parse()
            .unwrap();
        assert_eq!(two.waypoint(0, 3), None);
        let e = "dragonfly:groups=3,routers=2,hosts=2,global=1,routing=ugal"
            .parse::<Topology>()
            .unwrap_err();
        assert!(e.contains("minimal or valiant"), "{e}");
    }

    #[test]
    fn indirect_network_parse_errors() {
        for (s, want) in [
            ("fattree:k=4", "needs levels"),
            ("fattree:k=1,levels=3", "k >= 2"),
            ("fattree:k=4,levels=3,x=1", "no parameter `x`"),
            ("fattree:k=4,levels=3,up=5", "between 1 and k"),
            ("fattree:k=65536,levels=3", "2^32"),
            (
                "dragonfly:groups=10,routers=2,hosts=2,global=2",
                "9 global links per group",
            ),
            ("dragonfly:groups=3,routers=2,hosts=2", "needs global"),
        ] {
            let e = s.parse::<Topology>().unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
        }
    }

    #[test]
    fn torus_tie_goes_positive() {
        let t: Topology = "torus:4".parse().unwrap();
        let mut l = Vec::new();
        t.route(1, 3, &mut l);
        // Positive direction from 1: links leave 1 and 2 through port 0.
        assert_eq!(l, vec![LinkId(2), LinkId(2 * 2)]);
    }

    #[test]
    fn parse_errors_explain() {
        assert!(
            "torus"
                .parse::<Topology>()
                .unwrap_err()
                .contains("expected")
        );
        assert!(
            "ring:4"
                .parse::<Topology>()
                .unwrap_err()
                .contains("unknown kind")
        );
        assert!(
            "mesh:4xq"
                .parse::<Topology>()
                .unwrap_err()
                .contains("not a number")
        );
        assert!(
            "hypercube:40"
                .parse::<Topology>()
                .unwrap_err()
                .contains("at most 31")
        );
        assert!(
            "mesh:0x4"
                .parse::<Topology>()
                .unwrap_err()
                .contains("no nodes")
        );
        assert_eq!(
            "torus:8x8x8".parse::<Topology>().unwrap().to_string(),
            "torus:8x8x8"
        );
    }
}
