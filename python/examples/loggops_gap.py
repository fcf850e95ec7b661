"""The README tour's LogGOPS figure, from Python: the gap per byte G decides this halo.

A 1000-rank 3-D halo (10x10x10 ranks, 100 iterations of 100 us compute and 64 KiB
messages) replayed with LogGOPS at G=6ps (~166 GB/s), then with LogGOPSim's default
G=6ns (~166 MB/s). The README says: "this halo's 64 KiB messages then make the run
444 ms instead of 12.0 ms". Then the same halo over a range of latencies, as a table.

    python python/examples/loggops_gap.py
"""

import whatif

halo = whatif.generate("halo3d", dims="10x10x10", iters=100, compute="100us", bytes=65536)

fast = whatif.replay(halo, net="loggops:L=2500ns,o=1500ns,g=1000ns,G=6ps,O=0,S=65535")
slow = whatif.replay(halo, net="loggops")
print(f"G=6ps: {fast.makespan_s * 1e3:.1f} ms")
print(f"G=6ns (LogGOPSim's default): {slow.makespan_s * 1e3:.0f} ms")

# How sensitive is it to latency? One row per latency, ready to plot.
import pandas

rows = []
for lat in ("1us", "5us", "20us", "50us"):
    r = whatif.replay(halo, net=f"alphabeta:lat={lat},bw=10GB/s")
    rows.append({"latency": lat, "makespan_ms": r.makespan_s * 1e3,
                 "mean_utilization": r.per_pe["utilization"].mean()})
print(pandas.DataFrame(rows).to_string(index=False))
