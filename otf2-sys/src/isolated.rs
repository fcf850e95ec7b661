//! [`read_isolated`]: [`crate::read`] in a child process, so that the C library's failures on
//! malformed archives (endless loops, heap corruption, leaked file handles, all found by
//! fuzzing) end as an [`Error`] instead of taking the whole process with them.
//!
//! The parent forks; the child reads the archive, encodes the result (a compact
//! little-endian format, below) into a pipe and leaves with `_exit`; the parent reads the pipe
//! until a deadline, then collects the child: a signal or a missed deadline (the child is then
//! killed) becomes an error. Unix only.

use crate::{Archive, Clock, Comm, Error, Event, Group, Location, Region};
use std::ffi::c_int;
use std::path::Path;
use std::time::{Duration, Instant};

unsafe extern "C" {
    fn fork() -> c_int;
    fn pipe(fds: *mut c_int) -> c_int;
    fn close(fd: c_int) -> c_int;
    fn read(fd: c_int, buf: *mut u8, n: usize) -> isize;
    fn write(fd: c_int, buf: *const u8, n: usize) -> isize;
    fn poll(fds: *mut PollFd, n: u64, timeout_ms: c_int) -> c_int;
    fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
    fn kill(pid: c_int, sig: c_int) -> c_int;
    fn _exit(code: c_int) -> !;
}

#[repr(C)]
struct PollFd {
    fd: c_int,
    events: i16,
    revents: i16,
}

const POLLIN: i16 = 1;
const SIGKILL: c_int = 9;

/// Reads `anchor` as [`crate::read`] does, in a child process that may take at most
/// `deadline`; the encoded result may take at most `max_bytes`.
pub fn read_isolated(
    anchor: &Path,
    max_events: u64,
    deadline: Duration,
    max_bytes: u64,
) -> Result<Archive, Error> {
    let fail = |what: String| Error::Library {
        call: "isolated read",
        name: "CHILD".into(),
        description: what,
    };
    let mut fds = [0 as c_int; 2];
    // SAFETY: `fds` has room for the two descriptors `pipe` writes.
    if unsafe { pipe(fds.as_mut_ptr()) } != 0 {
        return Err(fail("cannot create a pipe".into()));
    }
    let (rd, wr) = (fds[0], fds[1]);
    // SAFETY: the child only runs `crate::read` (the library and the allocator, both usable
    // after fork in the forking thread), encodes, writes to its pipe and leaves with `_exit`,
    // never returning into the caller's code or running its destructors.
    let pid = unsafe { fork() };
    if pid < 0 {
        // SAFETY: both descriptors are ours and open.
        unsafe {
            close(rd);
            close(wr);
        }
        return Err(fail("cannot fork".into()));
    }
    if pid == 0 {
        // Child.
        let bytes = encode(&crate::read(anchor, max_events));
        // SAFETY: `rd` and `wr` are the pipe's ends; `bytes` is valid for its length; `_exit`
        // ends the child without unwinding.
        unsafe {
            close(rd);
            let mut off = 0;
            while off < bytes.len() {
                let n = write(wr, bytes[off..].as_ptr(), bytes.len() - off);
                if n <= 0 {
                    break;
                }
                off += n as usize;
            }
            close(wr);
            _exit(0);
        }
    }
    // Parent.
    // SAFETY: `wr` is the parent's copy of the write end, closed once.
    unsafe {
        close(wr);
    }
    let start = Instant::now();
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    let mut outcome: Result<(), String> = Ok(());
    loop {
        let left = deadline.saturating_sub(start.elapsed());
        if left.is_zero() {
            outcome = Err(format!(
                "the OTF2 library did not finish within {} s (some malformed archives make it loop)",
                deadline.as_secs()
            ));
            break;
        }
        let mut p = PollFd {
            fd: rd,
            events: POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().min(c_int::MAX as u128) as c_int;
        // SAFETY: one valid `PollFd`.
        let ready = unsafe { poll(&mut p, 1, ms.max(1)) };
        if ready < 0 {
            continue;
        }
        if ready == 0 {
            continue;
        }
        // SAFETY: `chunk` is valid for writes of its length.
        let n = unsafe { read(rd, chunk.as_mut_ptr(), chunk.len()) };
        if n < 0 {
            continue;
        }
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n as usize]);
        if buf.len() as u64 > max_bytes {
            outcome = Err(format!(
                "the archive's events take more than {max_bytes} bytes"
            ));
            break;
        }
    }
    let mut status: c_int = 0;
    // SAFETY: `pid` is our child; `rd` is ours and closed once; killing a child that already
    // ended is harmless (it is not reaped until `waitpid`).
    unsafe {
        if outcome.is_err() {
            kill(pid, SIGKILL);
        }
        close(rd);
        waitpid(pid, &mut status, 0);
    }
    outcome.map_err(fail)?;
    let signal = status & 0x7f;
    if signal != 0 {
        return Err(fail(format!(
            "the OTF2 library crashed on this archive (signal {signal})"
        )));
    }
    decode(&buf).ok_or_else(|| fail("the reader process ended without a result".into()))?
}

fn put(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}

fn put_all(v: &mut Vec<u8>, xs: &[u64]) {
    for &x in xs {
        put(v, x);
    }
}

fn put_str(v: &mut Vec<u8>, s: &str) {
    put(v, s.len() as u64);
    v.extend_from_slice(s.as_bytes());
}

fn encode(r: &Result<Archive, Error>) -> Vec<u8> {
    let mut v = Vec::new();
    let a = match r {
        Ok(a) => a,
        Err(Error::TooManyEvents { events, limit }) => {
            put(&mut v, 2);
            put(&mut v, *events);
            put(&mut v, *limit);
            return v;
        }
        Err(e) => {
            put(&mut v, 1);
            put_str(&mut v, &e.to_string());
            return v;
        }
    };
    put(&mut v, 0);
    match a.clock {
        Some(c) => {
            put(&mut v, 1);
            put(&mut v, c.ticks_per_s);
            put(&mut v, c.global_offset);
            put(&mut v, c.trace_length);
        }
        None => put(&mut v, 0),
    }
    let mut regions: Vec<_> = a.regions.iter().collect();
    regions.sort_by_key(|r| *r.0);
    put(&mut v, regions.len() as u64);
    for (id, r) in regions {
        put(&mut v, *id as u64);
        put_str(&mut v, &r.name);
        put_all(&mut v, &[r.role as u64, r.paradigm as u64]);
    }
    put(&mut v, a.locations.len() as u64);
    for l in &a.locations {
        put(&mut v, l.id);
        put_str(&mut v, &l.name);
        put_all(&mut v, &[l.kind as u64, l.events, l.group as u64]);
    }
    let mut groups: Vec<_> = a.groups.iter().collect();
    groups.sort_by_key(|g| *g.0);
    put(&mut v, groups.len() as u64);
    for (id, g) in groups {
        let n = g.members.len() as u64;
        put_all(&mut v, &[*id as u64, g.kind as u64, g.paradigm as u64, n]);
        put_all(&mut v, &g.members);
    }
    let mut comms: Vec<_> = a.comms.iter().collect();
    comms.sort_by_key(|c| *c.0);
    put(&mut v, comms.len() as u64);
    for (id, c) in comms {
        put(&mut v, *id as u64);
        put_str(&mut v, &c.name);
        put(&mut v, c.group as u64);
    }
    put(&mut v, a.events.len() as u64);
    for evs in &a.events {
        put(&mut v, evs.len() as u64);
        for e in evs {
            match *e {
                Event::Enter { time, region } | Event::Leave { time, region } => {
                    put(&mut v, matches!(e, Event::Leave { .. }) as u64);
                    put(&mut v, time);
                    put(&mut v, region as u64);
                }
                Event::Send {
                    time,
                    peer,
                    comm,
                    tag,
                    bytes,
                    request,
                }
                | Event::Recv {
                    time,
                    peer,
                    comm,
                    tag,
                    bytes,
                    request,
                } => {
                    let kind = if matches!(e, Event::Send { .. }) {
                        2
                    } else {
                        3
                    };
                    let req = request.unwrap_or(u64::MAX);
                    let has = request.is_some() as u64;
                    let (p, c, t) = (peer as u64, comm as u64, tag as u64);
                    put_all(&mut v, &[kind, time, p, c, t, bytes, req, has]);
                }
                Event::IsendComplete { time, request } | Event::IrecvRequest { time, request } => {
                    put(
                        &mut v,
                        if matches!(e, Event::IsendComplete { .. }) {
                            4
                        } else {
                            5
                        },
                    );
                    put(&mut v, time);
                    put(&mut v, request);
                }
                Event::CollectiveBegin { time } => {
                    put(&mut v, 6);
                    put(&mut v, time);
                }
                Event::CollectiveEnd {
                    time,
                    op,
                    comm,
                    root,
                    sent,
                    received,
                } => {
                    let (o, c, r) = (op as u64, comm as u64, root as u64);
                    put_all(&mut v, &[7, time, o, c, r, sent, received]);
                }
            }
        }
    }
    put(&mut v, a.other_events);
    v
}

/// Reads what [`encode`] wrote; `None` when it is cut short or inconsistent.
struct Dec<'a> {
    b: &'a [u8],
}

impl Dec<'_> {
    fn u(&mut self) -> Option<u64> {
        let (x, rest) = self.b.split_first_chunk::<8>()?;
        self.b = rest;
        Some(u64::from_le_bytes(*x))
    }
    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.u()?).ok()
    }
    fn u8(&mut self) -> Option<u8> {
        u8::try_from(self.u()?).ok()
    }
    /// A count, bounded by what is left (each item takes at least 8 bytes).
    fn n(&mut self) -> Option<usize> {
        let n = self.u()?;
        (n <= self.b.len() as u64 / 8).then_some(n as usize)
    }
    fn s(&mut self) -> Option<String> {
        let n = self.u()?;
        if n > self.b.len() as u64 {
            return None;
        }
        let (s, rest) = self.b.split_at(n as usize);
        self.b = rest;
        Some(String::from_utf8_lossy(s).into_owned())
    }
}

fn decode(b: &[u8]) -> Option<Result<Archive, Error>> {
    let mut d = Dec { b };
    match d.u()? {
        0 => {}
        1 => {
            return Some(Err(Error::Library {
                call: "OTF2 read",
                name: "ERROR".into(),
                description: d.s()?,
            }));
        }
        2 => {
            return Some(Err(Error::TooManyEvents {
                events: d.u()?,
                limit: d.u()?,
            }));
        }
        _ => return None,
    }
    let mut a = Archive::default();
    if d.u()? == 1 {
        a.clock = Some(Clock {
            ticks_per_s: d.u()?,
            global_offset: d.u()?,
            trace_length: d.u()?,
        });
    }
    for _ in 0..d.n()? {
        let id = d.u32()?;
        let r = Region {
            name: d.s()?,
            role: d.u8()?,
            paradigm: d.u8()?,
        };
        a.regions.insert(id, r);
    }
    for _ in 0..d.n()? {
        a.locations.push(Location {
            id: d.u()?,
            name: d.s()?,
            kind: d.u8()?,
            events: d.u()?,
            group: d.u32()?,
        });
    }
    for _ in 0..d.n()? {
        let id = d.u32()?;
        let (kind, paradigm) = (d.u8()?, d.u8()?);
        let n = d.n()?;
        let members = (0..n).map(|_| d.u()).collect::<Option<Vec<u64>>>()?;
        a.groups.insert(
            id,
            Group {
                kind,
                paradigm,
                members,
            },
        );
    }
    for _ in 0..d.n()? {
        let id = d.u32()?;
        let c = Comm {
            name: d.s()?,
            group: d.u32()?,
        };
        a.comms.insert(id, c);
    }
    for _ in 0..d.n()? {
        let n = d.n()?;
        let mut evs = Vec::with_capacity(n);
        for _ in 0..n {
            let kind = d.u()?;
            let time = d.u()?;
            evs.push(match kind {
                0 => Event::Enter {
                    time,
                    region: d.u32()?,
                },
                1 => Event::Leave {
                    time,
                    region: d.u32()?,
                },
                2 | 3 => {
                    let (peer, comm, tag, bytes) = (d.u32()?, d.u32()?, d.u32()?, d.u()?);
                    let (req, has) = (d.u()?, d.u()?);
                    let request = (has == 1).then_some(req);
                    if kind == 2 {
                        Event::Send {
                            time,
                            peer,
                            comm,
                            tag,
                            bytes,
                            request,
                        }
                    } else {
                        Event::Recv {
                            time,
                            peer,
                            comm,
                            tag,
                            bytes,
                            request,
                        }
                    }
                }
                4 => Event::IsendComplete {
                    time,
                    request: d.u()?,
                },
                5 => Event::IrecvRequest {
                    time,
                    request: d.u()?,
                },
                6 => Event::CollectiveBegin { time },
                7 => Event::CollectiveEnd {
                    time,
                    op: d.u8()?,
                    comm: d.u32()?,
                    root: d.u32()?,
                    sent: d.u()?,
                    received: d.u()?,
                },
                _ => return None,
            });
        }
        a.events.push(evs);
    }
    a.other_events = d.u()?;
    Some(Ok(a))
}
