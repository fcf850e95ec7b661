//! The MPI point-to-point protocol (`importers::mpi`) on hand-written SimGrid TI traces with
//! closed-form answers: when a transfer starts (eager at the send, rendezvous when the receive
//! is posted), when a send completes (at once below the detached size, at the transfer's end
//! above), the envelope, datatypes and wildcard receives. Network: alpha-beta, 1 us and
//! 1 GB/s (1 ns per byte); compute at 1 Gflop/s (1 flop = 1 ps * 1000).

use crate::cli::tmpdir;
use crate::run;
use importers::mpi::MpiProtocol;
use importers::{Format, ImportOptions, Imported, import};
use std::path::{Path, PathBuf};

const NET: &str = "alphabeta:lat=1us,bw=1GB/s";

fn ti(name: &str, text: &str) -> PathBuf {
    let p = tmpdir("mpi-protocol").keep().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn imp(path: &Path, protocol: &str) -> Imported {
    let mpi_protocol: MpiProtocol = protocol.parse().unwrap();
    import(
        Format::SimGrid,
        path,
        &ImportOptions {
            mpi_protocol: Some(mpi_protocol),
            ..ImportOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Makespan in ns of `text` under `protocol`.
fn makespan_ns(text: &str, protocol: &str) -> f64 {
    // Tests run in parallel: one file per call.
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let t = imp(&ti(&format!("t{n}.txt"), text), protocol).trace;
    run(&t, NET).makespan.as_ps() as f64 / 1000.0
}

#[test]
fn rendezvous_transfers_start_when_the_receive_is_posted() {
    // Rank 0 sends 1000 B at once; rank 1 computes 5 us, then receives.
    let text = "0 init\n1 init\n0 send 1 0 1000 6\n1 compute 5000\n1 recv 0 0 1000 6\n";
    // SimGrid: the transfer starts at the post (5 us) and carries 16 B of envelope.
    assert_eq!(makespan_ns(text, "simgrid"), 5000.0 + 1000.0 + 1016.0);
    // Eager: it arrived at 2 us and waited; the receive completes when posted.
    assert_eq!(makespan_ns(text, "eager"), 5000.0);
    assert_eq!(makespan_ns(text, "openmpi"), 5000.0);
    // Only the start changes with `eager=all`: it arrives at 2.016 us.
    assert_eq!(makespan_ns(text, "simgrid:eager=all"), 5000.0);
    // The receive posted first: both start at the send (at 3 us here).
    let text = "0 init\n1 init\n0 compute 3000\n0 send 1 0 1000 6\n1 recv 0 0 1000 6\n";
    assert_eq!(makespan_ns(text, "simgrid"), 3000.0 + 1000.0 + 1016.0);
    assert_eq!(makespan_ns(text, "eager"), 3000.0 + 1000.0 + 1000.0);
}

#[test]
fn sends_from_64_kib_hold_the_sender_until_the_transfer_ends() {
    // A blocking send, then 1 ms of work; the receive is posted at 0.
    let at = |bytes: u64, protocol: &str| {
        makespan_ns(
            &format!("0 init\n1 init\n0 send 1 0 {bytes} 6\n0 compute 1e6\n1 recv 0 0 {bytes} 6\n"),
            protocol,
        )
    };
    // SimGrid's detached threshold: `size < 65536` returns at once.
    assert_eq!(at(65535, "simgrid"), 1_000_000.0);
    assert_eq!(at(65536, "simgrid"), 1000.0 + 65552.0 + 1_000_000.0);
    assert_eq!(at(65536, "eager"), 1_000_000.0);
    // Open MPI-like: eager up to 64 KiB inclusive.
    assert_eq!(at(65536, "openmpi"), 1_000_000.0);
    assert_eq!(at(65537, "openmpi"), 1000.0 + 65537.0 + 1_000_000.0);
    assert_eq!(at(65536, "simgrid:detached=1MiB"), 1_000_000.0);
    // A non-blocking send holds its wait: posted at 50 us, 100 kB, ends at 151.016 us;
    // rank 0 then works 10 us more.
    let text = "0 init\n1 init\n0 isend 1 0 100000 6\n0 compute 10000\n0 wait 0 1 0\n0 compute 10000\n\
                1 compute 50000\n1 irecv 0 0 100000 6\n1 wait 0 1 0\n";
    assert_eq!(
        makespan_ns(text, "simgrid"),
        50_000.0 + 1000.0 + 100_016.0 + 10_000.0
    );
    // Eager: the transfer starts at 0 and the sender never waits: it ends at 101 us.
    assert_eq!(makespan_ns(text, "eager"), 1000.0 + 100_000.0);
    // Synchronous and buffered sends: always held, never held.
    let sync = "0 init\n1 init\n0 Ssend 1 0 10 6\n0 compute 1e6\n1 compute 5000\n1 recv 0 0 10 6\n";
    assert_eq!(
        makespan_ns(sync, "simgrid"),
        5000.0 + 1000.0 + 26.0 + 1_000_000.0
    );
    let buffered = "0 init\n1 init\n0 bsend 1 0 100000 6\n0 compute 1e6\n1 recv 0 0 100000 6\n";
    assert_eq!(makespan_ns(buffered, "simgrid"), 1_000_000.0);
}

#[test]
fn datatypes_are_decoded_and_the_envelope_is_on_the_wire() {
    // 10 MPI_DOUBLE_INT (16 B each), 3 MPI_INT, 2 MPI_COMPLEX16, 5 of a derived type (0 B).
    let text = "0 init\n1 init\n0 send 1 0 10 32\n0 send 1 1 3 1\n0 send 1 2 2 43\n0 send 1 3 5 -1\n\
                1 recv 0 0 10 32\n1 recv 0 1 3 1\n1 recv 0 2 2 43\n1 recv 0 3 5 -1\n";
    let p = ti("dt.txt", text);
    let bytes = |imported: &Imported| -> Vec<u64> {
        let mut v: Vec<u64> = imported.trace.all_sends().iter().map(|s| s.bytes).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(bytes(&imp(&p, "eager")), vec![0, 12, 32, 160]);
    // SimGrid's 16-byte envelope on every message.
    let sg = imp(&p, "simgrid");
    assert_eq!(bytes(&sg), vec![16, 28, 48, 176]);
    assert!(
        sg.notes
            .iter()
            .any(|n| n.contains("2 actions use a derived datatype (id -1)")),
        "{:?}",
        sg.notes
    );
    // Without a datatype field: MPI_BYTE, or MPI_DOUBLE when `init` has an argument.
    let t = imp(
        &ti(
            "default.txt",
            "0 init 1\n1 init 1\n0 send 1 0 125\n1 recv 0 0 125\n",
        ),
        "eager",
    );
    assert_eq!(bytes(&t), vec![1000]);
}

#[test]
fn wildcard_receives_take_the_message_sent_after_the_least_work() {
    // Ranks 0 and 1 send one double to rank 2 after 10 us and 30 us of work. Rank 2 posts two
    // receives from any source, waits for the first, works 100 us, waits for the second.
    let text = "0 init\n1 init\n2 init\n0 compute 10000\n0 send 2 7 1 0\n1 compute 30000\n1 send 2 7 1 0\n\
                2 irecv -333 7 1 0\n2 irecv -333 7 1 0\n2 wait -333 2 7\n2 compute 100000\n2 wait -333 2 7\n";
    let p = ti("any.txt", text);
    let imported = imp(&p, "simgrid");
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.contains("2 receives from any source")),
        "{:?}",
        imported.notes
    );
    // The first receive takes rank 0's message (arrives 11.024 us), so rank 2 ends at
    // 111.024 us; taken in the other order it would end at 131.024 us.
    assert_eq!(
        run(&imported.trace, NET).makespan.as_ps(),
        (10_000 + 1000 + 24 + 100_000) * 1000
    );
    // Any tag matches only user (non-negative) tags; a receive naming its source keeps its
    // message from the wildcards posted before it (a feasible matching is kept).
    let text = "0 init\n1 init\n2 init\n0 send 2 3 1 0\n1 compute 5000\n1 send 2 4 1 0\n\
                2 irecv -333 -444 1 0\n2 recv 0 3 1 0\n2 wait -333 2 -444\n";
    let t = imp(&ti("anytag.txt", text), "simgrid").trace;
    // The wildcard takes rank 1's message (rank 0's is needed by the later receive): it
    // ends at 5 us + 1.024 us.
    assert_eq!(run(&t, NET).makespan.as_ps(), (5000 + 1000 + 24) * 1000);
}

#[test]
fn waits_on_nothing_are_counted_not_fatal() {
    // SimGrid 3.32's replay aborts on a wait with no open request ("action wait not
    // preceded by any irecv or isend"); whatif makes it a no-op and says so.
    let p = ti("waits.txt", "0 init\n0 wait 0 1 0\n0 compute 1000\n");
    let imported = imp(&p, "simgrid");
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.contains("1 waits with no open request")),
        "{:?}",
        imported.notes
    );
    assert_eq!(run(&imported.trace, NET).makespan.as_ps(), 1_000_000);
}

#[test]
fn protocol_specs_round_trip_and_errors_teach() {
    for s in [
        "simgrid",
        "openmpi",
        "eager",
        "simgrid:detached=1048576,envelope=0",
    ] {
        let p: MpiProtocol = s.parse().unwrap();
        assert_eq!(p.to_string(), s);
    }
    let e = crate::cli::whatif(&[
        "replay",
        "x.txt",
        "--format",
        "simgrid",
        "--mpi-protocol",
        "mpich",
    ]);
    assert_eq!(e.status.code(), Some(2));
    let err = String::from_utf8_lossy(&e.stderr);
    assert!(err.contains("use simgrid"), "{err}");
}

#[test]
fn non_blocking_collectives_post_every_message_at_the_call_and_complete_at_the_wait() {
    // Two ranks, an 8-byte iallreduce (SimGrid: a send to and a receive from the other
    // rank, posted at the call). Rank 0 posts at 0 and waits; rank 1 computes 5 us first.
    // The waits name the request as SimGrid 3.32 writes them: `-333 -333` on rank 0, `0 0`
    // on rank 1 (by the collective's tag, -4446, whatever the ranks say).
    let text = "0 init\n1 init\n0 iallreduce 1 0 0\n0 wait -333 -333 -4446\n\
                1 compute 5000\n1 iallreduce 1 0 0\n1 compute 2000\n1 wait 0 0 -4446\n";
    // Both transfers start at 5 us, when rank 1 posts (SimGrid's protocol: a transfer
    // starts once its send and its receive are posted): 1 us of latency, 8 + 16 bytes,
    // both arrive at 6.024 us. Rank 0's wait ends then; rank 1 computes until 7 us.
    assert_eq!(makespan_ns(text, "simgrid"), 7000.0);
    let text2 = text.replace("1 compute 2000\n", "");
    // Without rank 1's 2 us: rank 0's wait ends last, at 6.024 us.
    assert_eq!(makespan_ns(&text2, "simgrid"), 6024.0);
    // A wait that names the collective by its tag but not by its ranks still waits: had
    // it been a no-op, rank 0 would end at 0.
    let text3 = text2.replace("0 wait -333 -333 -4446", "0 wait 0 0 -4446");
    assert_eq!(makespan_ns(&text3, "simgrid"), 6024.0);

    // ibcast from root 1 to 3 ranks, 1000 B (below 64 KiB: the root's sends complete at
    // once): the root posts both sends at 2 us and computes 10 us; each receiver's wait ends
    // when its message arrives (alpha-beta, no contention: both at 2 + 1 + 1.016 us), and
    // rank 0 then computes 20 us.
    let text = "0 init\n1 init\n2 init\n\
                1 compute 2000\n1 ibcast 1000 1 6\n1 compute 10000\n1 wait -333 -333 -3335\n\
                0 ibcast 1000 1 6\n0 wait 0 0 -3335\n0 compute 20000\n\
                2 ibcast 1000 1 6\n2 wait 0 0 -3335\n";
    assert_eq!(makespan_ns(text, "simgrid"), 2000.0 + 2016.0 + 20000.0);

    // A waitall completes a non-blocking collective with the rank's other requests.
    let text = "0 init\n1 init\n0 ibarrier\n0 irecv 1 5 100 6\n0 waitall 2\n\
                1 compute 3000\n1 ibarrier\n1 send 0 5 100 6\n1 wait 0 0 -779\n";
    // Everything starts at 3 us, when rank 1 posts: rank 0's waitall ends when the 100-byte
    // message arrives (3 + 1 + 0.116 us), rank 1's wait when rank 0's empty barrier message
    // does (3 + 1 + 0.016 us).
    assert_eq!(makespan_ns(text, "simgrid"), 3000.0 + 1000.0 + 116.0);
}

#[test]
fn a_wait_after_a_waitall_takes_its_request_back() {
    // Rank 0 posts a receive and a 64 KiB send (held until its transfer ends), waits for
    // "all", computes 10 us, then waits for the receive: SimGrid traces a `wait` only for a
    // request still open, so the program's waitall had the send alone (LULESH's pattern).
    // Rank 1 posts its receive at 20 us (the 64 KiB transfer: 20 + 1 + 65.552 = 86.552 us)
    // and sends 100 B at once (arrives at 86.552 + 1.116 = 87.668 us).
    let text = "0 init\n1 init\n\
                0 irecv 1 5 100 6\n0 isend 1 5 65536 6\n0 waitall 2\n0 compute 10000\n\
                0 wait 1 0 5\n\
                1 compute 20000\n1 recv 0 5 65536 6\n1 send 0 5 100 6\n";
    // The waitall ends with the send (86.552), the computation at 96.552, the receive had
    // arrived. Had the waitall taken the receive too (SimGrid's replay, whatif before stop
    // 49): 87.668 + 10 = 97.668. Had it waited for nothing: 87.668.
    assert_eq!(makespan_ns(text, "simgrid"), 96552.0);
    let p = ti("wa.txt", text);
    let notes = imp(&p, "simgrid").notes.join("\n");
    assert!(
        notes.contains("1 waits name a request open at the waitall or testall before them"),
        "{notes}"
    );
    // A wait naming nothing the waitall took stays a no-op.
    let text2 = text.replace("0 wait 1 0 5", "0 wait 1 0 7");
    assert_eq!(makespan_ns(&text2, "simgrid"), 97668.0);
}

#[test]
fn a_testall_waits_unless_a_later_completion_takes_its_requests_back() {
    // Rank 0 posts a receive (its message leaves rank 1 at 20 us, arrives at 21.116 us),
    // tests all, computes 5 us, then (TeaLeaf's pattern) waits for all: the program, had its
    // testall failed, waits at the waitall, and the receive is waited for there.
    let base = "0 init\n1 init\n1 compute 20000\n1 send 0 5 100 6\n0 irecv 1 5 100 6\n0 testall\n";
    let text = format!("{base}0 compute 5000\n0 waitall 1\n0 compute 3000\n");
    // The waitall ends at 21.116 us, then 3 us: 24.116. Had the testall waited: 21.116 + 5
    // + 3 = 29.116.
    assert_eq!(makespan_ns(&text, "simgrid"), 24116.0);
    // Nothing after the testall completes anything: it waits (the program saw the request
    // complete there), then 5 us.
    let text = format!("{base}0 compute 5000\n");
    assert_eq!(makespan_ns(&text, "simgrid"), 26116.0);
    // A polling loop: testall, compute 2 us, testall, compute 2 us, testall (the last one
    // succeeded): the requests are waited for at the last, then 1 us.
    let text =
        format!("{base}0 compute 2000\n0 testall\n0 compute 2000\n0 testall\n0 compute 1000\n");
    assert_eq!(makespan_ns(&text, "simgrid"), 22116.0);
    let p = ti("ta.txt", &text);
    let notes = imp(&p, "simgrid").notes.join("\n");
    assert!(notes.contains("3 testalls: each waits"), "{notes}");
    assert!(notes.contains("(2 were)"), "{notes}");
}

#[test]
fn a_non_blocking_reduce_scatter_is_refused_with_a_reason() {
    let p = ti(
        "irs.txt",
        "0 init\n0 ireducescatter 1 0 6\n0 wait -333 -333 -890\n",
    );
    let e = match import(Format::SimGrid, &p, &ImportOptions::default()) {
        Ok(_) => panic!("a non-blocking reduce-scatter was imported"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("irs.txt:2"), "{e}");
    assert!(e.contains("non-blocking reduce-scatter"), "{e}");
}
