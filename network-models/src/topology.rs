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
}

impl Topology {
    /// Number of nodes.
    pub fn nodes(&self) -> u64 {
        match self {
            Topology::FullyConnected { nodes } => *nodes as u64,
            Topology::Hypercube { dim } => 1u64 << dim,
            Topology::Mesh { dims } | Topology::Torus { dims } => {
                dims.iter().map(|&d| d as u64).product()
            }
        }
    }

    /// Output ports per node (see the module docs for their numbering).
    pub fn ports(&self) -> u64 {
        match self {
            Topology::FullyConnected { nodes } => *nodes as u64,
            Topology::Hypercube { dim } => *dim as u64,
            Topology::Mesh { dims } | Topology::Torus { dims } => 2 * dims.len() as u64,
        }
    }

    /// Number of hops on the route from `a` to `b` (0 when `a == b`).
    pub fn hops(&self, a: u64, b: u64) -> u32 {
        match self {
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

    /// Appends the links of the route from `a` to `b` to `out`, in traversal order.
    pub fn route(&self, a: u64, b: u64, out: &mut Vec<LinkId>) {
        let mut cur = a;
        while let Some((link, next)) = self.next_hop(cur, b) {
            out.push(link);
            cur = next;
        }
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
        }
    }

    /// The first link of the route from `cur` to `dst` and the node it leads to, or `None`
    /// when `cur == dst`. Routing is a function of `(cur, dst)` only, so a packet needs no
    /// stored route: the contention model calls this once per hop.
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
        }
    }
}

impl FromStr for Topology {
    type Err = String;
    /// `full:N`, `hypercube:D`, `mesh:AxB[xC...]`, `torus:AxB[xC...]`.
    fn from_str(s: &str) -> Result<Self, String> {
        let usage = "expected full:N, hypercube:D, mesh:AxBxC or torus:AxBxC (e.g. torus:8x8x8)";
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
