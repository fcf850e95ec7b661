#!/usr/bin/python3
"""Writes a synthetic MPI run as an OTF2 archive with the official writer (Debian python3-otf2),
for whatif's OTF2 importer tests.

Usage: otf2_writer.py OUT_DIR RANKS ITERATIONS [SKEW_NS]

SKEW_NS (default 0) shifts the clocks of every rank but rank 1 forward, as unsynchronised
timers would: rank 1 then completes receives "before" their sends.

Timer: 1 GHz (times in ns). The run is causally consistent (a message is received after it was
sent, 1000 ns later), so the recorded schedule replays exactly. Per rank r, iteration k:

  compute  [T, T + c)         c = 2000 + 300 r + 50 k; nested "pack" in [T + c - 100, T + c - 10)
  MPI_Irecv x2, MPI_Isend x2  (4096 B to the right neighbour at s + 25, to the left at s + 35;
                               s = T + c; tag k)
  MPI_Waitall                 until 10 ns after the later of the two arrivals (or s + 50)
  MPI_Allreduce               8 B; every rank leaves at the latest entry + 3000
then MPI_Bcast (1024 B from rank 0), MPI_Barrier, MPI_Finalize; main ends at T + 5000.
Prints the end time of main (ns) on stdout.
"""

import sys

import otf2
from otf2.enums import CollectiveOp, GroupType, LocationType, Paradigm, RegionRole

out, P, K = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
SKEW = int(sys.argv[4]) if len(sys.argv) > 4 else 0


class Shifted:
    """An event writer whose timestamps are `d` ns late."""

    def __init__(self, w, d):
        self.w, self.d = w, d

    def __getattr__(self, name):
        f = getattr(self.w, name)
        return lambda t, *a, **k: f(t + self.d, *a, **k)

LAT, BYTES = 1000, 4096
NO_ROOT = 0xFFFFFFFF  # OTF2_UNDEFINED_UINT32: a collective without root

with otf2.writer.open(out, timer_resolution=1_000_000_000) as trace:
    d = trace.definitions
    node = d.system_tree_node("node")

    def user(name):
        return d.region(name, paradigm=Paradigm.USER, region_role=RegionRole.FUNCTION)

    def mpi(name):
        return d.region(name, paradigm=Paradigm.MPI, region_role=RegionRole.FUNCTION)

    main, compute, pack = user("main"), user("compute"), user("pack")
    names = ["MPI_Init", "MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Allreduce",
             "MPI_Bcast", "MPI_Barrier", "MPI_Finalize"]
    R = {n: mpi(n) for n in names}
    groups = [d.location_group(f"MPI Rank {r}", system_tree_parent=node) for r in range(P)]
    locs = [d.location("Master thread", type=LocationType.CPU_THREAD, group=groups[r])
            for r in range(P)]
    d.group("MPI locations", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI,
            members=locs)
    wg = d.group("world", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI,
                 members=list(range(P)))
    world = d.comm("MPI_COMM_WORLD", group=wg)
    w = [Shifted(trace.event_writer_from_location(l), 0 if r == 1 else SKEW)
         for r, l in enumerate(locs)]

    def call(r, region, t0, t1):
        w[r].enter(t0, R[region])
        w[r].leave(t1, R[region])

    for r in range(P):
        w[r].enter(0, main)
        call(r, "MPI_Init", 100, 1000)
    T = 1000
    for k in range(K):
        s = [T + 2000 + 300 * r + 50 * k for r in range(P)]
        for r in range(P):
            c = s[r] - T
            w[r].enter(T, compute)
            w[r].enter(T + c - 100, pack)
            w[r].leave(T + c - 10, pack)
            w[r].leave(T + c, compute)
        waits = []
        for r in range(P):
            left, right = (r - 1) % P, (r + 1) % P
            base = 2 * k
            for i in range(2):
                w[r].enter(s[r] + 10 * i, R["MPI_Irecv"])
                w[r].mpi_irecv_request(s[r] + 10 * i + 5, base + i)
                w[r].leave(s[r] + 10 * i + 10, R["MPI_Irecv"])
            w[r].enter(s[r] + 20, R["MPI_Isend"])
            w[r].mpi_isend(s[r] + 25, right, world, k, BYTES, base + 100)
            w[r].leave(s[r] + 30, R["MPI_Isend"])
            w[r].enter(s[r] + 30, R["MPI_Isend"])
            w[r].mpi_isend(s[r] + 35, left, world, k, BYTES, base + 101)
            w[r].leave(s[r] + 40, R["MPI_Isend"])
            # From the left neighbour's send to its right, and the right one's to its left.
            arrive = max(s[left] + 25 + LAT, s[right] + 35 + LAT, s[r] + 40)
            leave = arrive + 10
            w[r].enter(s[r] + 40, R["MPI_Waitall"])
            w[r].mpi_irecv(leave - 5, left, world, k, BYTES, base)
            w[r].mpi_irecv(leave - 5, right, world, k, BYTES, base + 1)
            w[r].mpi_isend_complete(leave - 3, base + 100)
            w[r].mpi_isend_complete(leave - 3, base + 101)
            w[r].leave(leave, R["MPI_Waitall"])
            waits.append(leave)
        end = max(waits) + 3000
        for r in range(P):
            w[r].enter(waits[r], R["MPI_Allreduce"])
            w[r].mpi_collective_begin(waits[r] + 1)
            w[r].mpi_collective_end(end - 1, CollectiveOp.ALLREDUCE, world, NO_ROOT,
                                    8 * P, 8 * P)
            w[r].leave(end, R["MPI_Allreduce"])
        T = end
    for r in range(P):
        w[r].enter(T, R["MPI_Bcast"])
        w[r].mpi_collective_begin(T + 1)
        sent = 1024 * P if r == 0 else 0
        w[r].mpi_collective_end(T + 1999, CollectiveOp.BCAST, world, 0, sent, 1024)
        w[r].leave(T + 2000, R["MPI_Bcast"])
        w[r].enter(T + 2000, R["MPI_Barrier"])
        w[r].mpi_collective_begin(T + 2001)
        w[r].mpi_collective_end(T + 3999, CollectiveOp.BARRIER, world, NO_ROOT,
                                0, 0)
        w[r].leave(T + 4000, R["MPI_Barrier"])
        call(r, "MPI_Finalize", T + 4000, T + 4500)
        w[r].leave(T + 5000, main)

print(T + 5000 + (SKEW if P > 1 else 0))
