//! OTF2 archives (issue 19): the Score-P ping-pong of `../shared/data/otf2-pingpong` and
//! archives written in the test by the official writer (Debian `python3-otf2`), read through
//! the OTF2 library (cargo feature `otf2`; `.ci/run` builds and runs these with it).

use crate::cli::{stderr, tmpdir, whatif};

/// `import --help` names both formats and what to point at.
#[test]
fn import_help_lists_otf2_and_gzip_projections_logs() {
    let o = whatif(&["import", "--help"]);
    assert!(o.status.success());
    let h = String::from_utf8_lossy(&o.stdout);
    assert!(h.contains("otf2") && h.contains("traces.otf2"), "{h}");
    assert!(h.contains(".log.gz"), "{h}");
}

/// Without the feature, `import otf2` says how to get it.
#[cfg(not(feature = "otf2"))]
#[test]
fn without_the_otf2_feature_the_import_says_how_to_build_it() {
    let dir = tmpdir("otf2-nofeature");
    let anchor = dir.join("traces.otf2");
    std::fs::write(&anchor, b"x").unwrap();
    let out = dir.join("t.trace");
    let o = whatif(&[
        "import",
        "otf2",
        anchor.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("--features otf2") && e.contains("libopen-trace-format2-dev"),
        "{e}"
    );
    eprintln!("skipped: the OTF2 reading tests need `cargo test --features otf2`");
}

#[cfg(feature = "otf2")]
mod with_library {
    use super::*;
    use crate::{run_with, shared_data};
    use importers::{Format, ImportOptions, import};
    use replay::ReplayConfig;
    use std::path::{Path, PathBuf};

    const PS_PER_S: u64 = 1_000_000_000_000;

    fn recorded() -> ReplayConfig {
        ReplayConfig {
            recorded_order: true,
            ..ReplayConfig::default()
        }
    }

    fn imp(anchor: &Path) -> importers::Imported {
        import(Format::Otf2, anchor, &ImportOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", anchor.display()))
    }

    /// A real Score-P trace: 2 ranks, 8 round trips of 16 KiB to 2 MiB.
    #[test]
    fn the_score_p_ping_pong_imports_and_replays_its_recorded_span() {
        let Some(dir) = shared_data("otf2-pingpong") else {
            return;
        };
        let anchor = dir.join("traces.otf2");
        let imported = imp(&anchor);
        let t = &imported.trace;
        assert_eq!(t.objects.len(), 2);
        let sizes: Vec<u64> = t.all_sends().iter().map(|s| s.bytes).collect();
        assert_eq!(sizes.len(), 16);
        let mut want: Vec<u64> = (0..8).flat_map(|k| [16384u64 << k; 2]).collect();
        want.sort_unstable();
        let mut got = sizes.clone();
        got.sort_unstable();
        assert_eq!(got, want, "16 messages, each size twice");
        let notes = imported.notes.join("\n");
        assert!(notes.contains("2 ranks (the MPI locations)"), "{notes}");
        assert!(notes.contains("clock 2095197216 ticks/s"), "{notes}");
        // The recorded schedule comes back exactly (the clock resolution is 477 ps): the
        // last LEAVE of main, 199.576798216 ms after the clock's offset.
        let end = imported.recorded_end.unwrap().as_ps();
        assert_eq!(end, 199_576_798_216);
        let r = run_with(t, "recorded", &recorded());
        assert_eq!(r.makespan.as_ps(), end);
        // A latency what-if: once latency dominates, every one of the 16 messages is on the
        // chain, so one more second of latency adds 16 s.
        let at = |lat: &str| {
            run_with(t, &format!("latency:lat={lat}"), &ReplayConfig::default())
                .makespan
                .as_ps()
        };
        let (one, two) = (at("1s"), at("2s"));
        assert_eq!(two - one, 16 * PS_PER_S);
        // What is left is compute on the chain: no more than both ranks' CPU time.
        let cpu: u64 = t.blocks().iter().map(|b| b.duration.as_ps()).sum();
        assert!(one - 16 * PS_PER_S <= cpu);
        // From the command line.
        let out = tmpdir("otf2-pp").keep().join("pp.trace");
        let o = whatif(&[
            "import",
            "otf2",
            anchor.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stderr(&o).contains("16 messages"), "{}", stderr(&o));
    }

    /// Runs the test's writer (`otf2_writer.py`) with the system Python, which has the
    /// `otf2` module of Debian's python3-otf2; `None` (skipped) when it cannot.
    fn write_archive(name: &str, ranks: u32, iters: u32) -> Option<(PathBuf, u64)> {
        write_skewed(name, ranks, iters, 0)
    }

    /// [`write_archive`] with every rank's clock but rank 1's `skew_ns` late.
    fn write_skewed(name: &str, ranks: u32, iters: u32, skew_ns: u64) -> Option<(PathBuf, u64)> {
        let dir = tmpdir(name).keep().join("archive");
        let _ = std::fs::remove_dir_all(&dir);
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration/otf2_writer.py");
        let o = std::process::Command::new("/usr/bin/python3")
            .arg(&script)
            .arg(&dir)
            .arg(ranks.to_string())
            .arg(iters.to_string())
            .arg(skew_ns.to_string())
            .output();
        match o {
            Ok(o) if o.status.success() => {
                let end: u64 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
                Some((dir.join("traces.otf2"), end))
            }
            Ok(o) => {
                eprintln!(
                    "skipped: the OTF2 writer (python3-otf2) failed: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
                None
            }
            Err(e) => {
                eprintln!("skipped: /usr/bin/python3 cannot run: {e}");
                None
            }
        }
    }

    fn entry_total_ps(t: &trace::Trace, name: &str) -> u64 {
        let e = t
            .entries
            .iter()
            .position(|e| e.name == name)
            .unwrap_or_else(|| panic!("no entry {name}"));
        t.blocks()
            .iter()
            .filter(|b| b.entry.index() == e)
            .map(|b| b.duration.as_ps())
            .sum()
    }

    /// The writer's synthetic run (see otf2_writer.py): non-blocking halo exchange,
    /// allreduce, bcast, barrier, nested user regions; every figure below is its closed form.
    #[test]
    fn an_archive_of_the_official_writer_imports_with_its_closed_forms() {
        let (p, k) = (4u64, 3u64);
        let Some((anchor, end_ns)) = write_archive("otf2-gen", p as u32, k as u32) else {
            return;
        };
        let imported = imp(&anchor);
        let t = &imported.trace;
        // Regions are entry methods: compute c(r,k) = 2000 + 300 r + 50 k ns, less 90 ns of
        // nested pack; main = MPI_Init, the Irecv/Isend calls, the bcast at its root (which
        // waits for nothing), MPI_Finalize and the rest of main (time kept as CPU).
        let c: u64 = (0..p)
            .flat_map(|r| (0..k).map(move |i| 2000 + 300 * r + 50 * i))
            .sum();
        assert_eq!(entry_total_ps(t, "compute"), (c - 90 * p * k) * 1000);
        assert_eq!(entry_total_ps(t, "pack"), 90 * p * k * 1000);
        let main = p * (100 + 900 + 500 + 500) + p * k * 4 * 10 + 2000;
        assert_eq!(entry_total_ps(t, "main"), main * 1000);
        // Messages: 2 per rank per iteration, allreduce = binomial reduce + bcast (2 (P-1)),
        // bcast (P-1), dissemination barrier (P log2 P).
        assert_eq!(
            t.num_sends() as u64,
            2 * p * k + 2 * (p - 1) * k + (p - 1) + p * 2
        );
        // The recorded run comes back exactly.
        let r = run_with(t, "recorded", &recorded());
        assert_eq!(imported.recorded_end.unwrap().as_ps(), end_ns * 1000);
        assert_eq!(r.makespan.as_ps(), end_ns * 1000);
        // SimGrid's collective algorithms instead: linear barrier, 2 (P-1) messages.
        let smpi = import(
            Format::Otf2,
            &anchor,
            &ImportOptions {
                collectives: Some(importers::mpi::Collectives::Smpi),
                ..ImportOptions::default()
            },
        )
        .unwrap();
        assert_eq!(
            smpi.trace.num_sends() as u64,
            2 * p * k + 2 * (p - 1) * k + (p - 1) + 2 * (p - 1)
        );
    }

    /// Clock offsets between locations are reported, as the Projections importer reports
    /// clock skew: with every rank's timer but rank 1's 5 us late, rank 1 completes receives
    /// "before" their sends.
    #[test]
    fn clock_offsets_between_locations_are_reported() {
        let Some((plain, _)) = write_skewed("otf2-noskew", 4, 2, 0) else {
            return;
        };
        let notes = imp(&plain).notes.join("\n");
        assert!(
            notes.contains("no clock offset between locations shows"),
            "{notes}"
        );
        let Some((skewed, _)) = write_skewed("otf2-skew", 4, 2, 5000) else {
            return;
        };
        let notes = imp(&skewed).notes.join("\n");
        let line = notes
            .lines()
            .find(|l| l.contains("complete their receive before they were sent"))
            .unwrap_or_else(|| panic!("{notes}"));
        // Rank 1 receives two halo messages per iteration from its shifted neighbours; each
        // completes 1 us + 10 ns after its (unshifted) send, recorded 5 us later: 3.99 us.
        assert!(line.starts_with("4 messages"), "{line}");
        assert!(line.contains("up to 3.99 us"), "{line}");
    }

    /// A larger archive (16 ranks, 40 iterations) imports, replays its recorded run, and a
    /// network what-if runs on it.
    #[test]
    fn a_larger_written_archive_replays_exactly_and_under_a_network_model() {
        let Some((anchor, end_ns)) = write_archive("otf2-gen16", 16, 40) else {
            return;
        };
        let imported = imp(&anchor);
        let t = &imported.trace;
        assert_eq!(t.objects.len(), 16);
        let r = run_with(t, "recorded", &recorded());
        assert_eq!(r.makespan.as_ps(), end_ns * 1000);
        let slow = run_with(t, "latency:lat=50us", &ReplayConfig::default());
        let fast = run_with(t, "latency:lat=1us", &ReplayConfig::default());
        assert!(slow.makespan > fast.makespan);
    }

    /// `replay --out` writes the predicted run as OTF2: `otf2-print` (the library's own tool)
    /// lists one Enter/Leave per block and a send and receive per message, and the archive
    /// imports back into a trace whose recorded run is the prediction.
    #[test]
    fn predictions_are_written_as_otf2_that_otf2_print_and_the_importer_read() {
        let dir = tmpdir("otf2-export");
        let t = dir.join("h.trace");
        crate::cli::gen_trace(&t, &["halo2d", "--dims", "3x3", "--iters", "2"]);
        let out = dir.join("out");
        let _ = std::fs::remove_dir_all(&out);
        let o = whatif(&[
            "replay",
            t.to_str().unwrap(),
            "--net",
            "latency:lat=2us",
            "--out",
            out.to_str().unwrap(),
            "--json",
            "-q",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let (blocks, messages, makespan) = (
            summary["blocks"].as_u64().unwrap(),
            summary["messages"].as_u64().unwrap(),
            summary["makespan_ps"].as_u64().unwrap(),
        );
        let anchor = out.join("otf2/traces.otf2");
        match std::process::Command::new("otf2-print")
            .arg(&anchor)
            .output()
        {
            Ok(p) if p.status.success() => {
                let text = String::from_utf8_lossy(&p.stdout);
                let count = |kind: &str| {
                    text.lines()
                        .filter(|l| l.split_whitespace().next() == Some(kind))
                        .count() as u64
                };
                assert_eq!(count("ENTER"), blocks);
                assert_eq!(count("LEAVE"), blocks);
                assert_eq!(count("MPI_SEND"), messages);
                assert_eq!(count("MPI_RECV"), messages);
                assert!(text.contains("Region: \"compute\""), "{text}");
            }
            _ => eprintln!("skipped: otf2-print (Debian otf2-tools) is not installed"),
        }
        let back = imp(&anchor);
        let r = run_with(&back.trace, "recorded", &recorded());
        assert_eq!(r.makespan.as_ps(), makespan);
        assert_eq!(back.trace.num_sends() as u64, messages);
    }

    /// Malformed archives end in a clean error through the library (read in a child process,
    /// so that its loops and crashes on some inputs, found by longer fuzzing, become errors).
    /// Only the Score-P archive is fuzzed here: its bytes are fixed, so the 300 mutations are
    /// the same on every run (archives of the Python writer carry a random trace id and a
    /// wall-clock date).
    #[test]
    fn the_fuzzer_covers_otf2_archives() {
        let mut inputs = Vec::new();
        if let Some(d) = shared_data("otf2-pingpong") {
            inputs.push(d.join("traces.otf2"));
        }
        for (i, input) in inputs.iter().enumerate() {
            let work = tmpdir(&format!("otf2-fuzz-work{i}"));
            let r = importers::fuzz::fuzz(
                Format::Otf2,
                input,
                &work,
                &importers::fuzz::FuzzConfig {
                    seed: 7 + i as u64,
                    duration: std::time::Duration::from_secs(300),
                    max_execs: 300,
                    opts: ImportOptions::default(),
                    // The library takes seconds to reject some mutated anchor files; per-input
                    // budgets are the CLI's business (`whatif fuzz-import otf2`).
                    time_per_input: std::time::Duration::from_secs(600),
                    memory_per_input_bytes: u64::MAX,
                },
                |_, _| {},
            )
            .unwrap();
            assert_eq!(r.execs, 300);
            assert!(
                r.panics.is_empty(),
                "{}: panics on {:?}",
                input.display(),
                r.panics
            );
            assert!(r.rejected > 0 && r.accepted > 0, "{r:?}");
        }
    }
}
