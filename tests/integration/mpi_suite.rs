//! Real MPI applications against SimGrid 3.32's `smpirun -replay`: the suite of
//! `tests/data/mpi-suite` (NPB MG/FT/EP/LU/BT, miniFE, CoMD, HPCG, OSU collectives; two sizes
//! each; README.md there gives sources and commands) and the 16-rank HPCCG trace of
//! `../shared/data/smpi-hpccg16`, replayed by whatif with SimGrid's MPI protocol and
//! collectives (the defaults for SimGrid traces) on three machines, next to SimGrid's times
//! (`expected.tsv`). With `smpirun` installed (`.ci/run` installs it) the table itself is
//! checked against live `smpirun -replay` runs on the 16-rank traces.

use crate::cli::tmpdir;
use crate::run_with;
use importers::{Format, ImportOptions, import};
use replay::ReplayConfig;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// One row of `expected.tsv`.
#[derive(Clone, Debug)]
struct Case {
    trace: String,
    ranks: u32,
    machine: String,
    spec: String,
    simgrid_s: f64,
}

fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mpi-suite")
}

/// The table's rows (comment lines start with `#`).
fn read_table(path: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Case {
                trace: f[0].to_string(),
                ranks: f[1].parse().unwrap(),
                machine: f[2].to_string(),
                spec: f[3].to_string(),
                simgrid_s: f[4].parse().unwrap(),
            }
        })
        .collect()
}

/// Unpacks `<name>.tar.gz` of the suite (once per test process) and returns its index file.
fn unpack(name: &str) -> PathBuf {
    static DONE: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let dir = tmpdir("mpi-suite").keep();
    let index = dir.join(name).join(format!("{name}.txt"));
    let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
    if !done.iter().any(|n| n == name) {
        let tgz = suite_dir().join(format!("{name}.tar.gz"));
        let o = Command::new("tar")
            .arg("xzf")
            .arg(&tgz)
            .arg("-C")
            .arg(&dir)
            .output()
            .expect("run tar");
        assert!(
            o.status.success(),
            "tar xzf {}: {}",
            tgz.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        done.push(name.to_string());
    }
    index
}

/// whatif's prediction (s) for `index` on `spec`, with the defaults for SimGrid traces.
fn whatif_s(index: &Path, spec: &str) -> f64 {
    let imported = import(
        Format::SimGrid,
        index,
        &ImportOptions {
            flops_per_s: 1e9,
            ..ImportOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{}: {e}", index.display()));
    run_with(&imported.trace, spec, &ReplayConfig::default())
        .makespan
        .as_ps() as f64
        / 1e12
}

/// Replays the suite's traces whose name starts with one of `prefixes`, checks every case
/// against SimGrid within `bound`, and returns the relative differences.
fn check_family(prefixes: &[&str], bound: f64) -> Vec<f64> {
    let cases: Vec<Case> = read_table(&suite_dir().join("expected.tsv"))
        .into_iter()
        .filter(|c| prefixes.iter().any(|p| c.trace.starts_with(p)))
        .collect();
    assert!(!cases.is_empty(), "no cases for {prefixes:?}");
    let mut rels = Vec::new();
    let mut worst: Option<(f64, String)> = None;
    for c in &cases {
        let wi = whatif_s(&unpack(&c.trace), &c.spec);
        let rel = (wi - c.simgrid_s) / c.simgrid_s;
        eprintln!(
            "{:<18} {:<9} SimGrid {:.9} s  whatif {:.9} s  {:+.4}%",
            c.trace,
            c.machine,
            c.simgrid_s,
            wi,
            rel * 100.0
        );
        if worst.as_ref().is_none_or(|w| rel.abs() > w.0) {
            worst = Some((rel.abs(), format!("{} on {}", c.trace, c.machine)));
        }
        rels.push(rel);
    }
    let (w, at) = worst.unwrap();
    assert!(
        w <= bound,
        "{at}: whatif is {:.3}% from SimGrid (bound {}%)",
        w * 100.0,
        bound * 100.0
    );
    rels
}

// Measured when the table was made (release build; README.md): 90 of 90 cases within 0.04%
// (89 within 0.03%, median 0.0000%, largest +0.037%: osu_alltoall.64 on the starved
// fat-tree). The bound is 0.1% per case, so that a change that moves any of them shows.

#[test]
fn suite_npb_matches_simgrid() {
    check_family(&["npb-"], 0.001);
}

#[test]
fn suite_minife_comd_hpcg_match_simgrid() {
    // miniFE is replayed raw (its 144 and 936 `irecv -333`), SimGrid's times come from the
    // repaired copies (README.md).
    check_family(&["minife.", "comd.", "hpcg."], 0.001);
}

#[test]
fn suite_osu_collectives_match_simgrid() {
    check_family(&["osu_"], 0.001);
}

#[test]
fn suite_table_matches_smpirun_live() {
    if !crate::simgrid::smpirun_available() {
        return;
    }
    // The 16-rank traces (a few seconds of SimGrid in all); miniFE through its repaired copy.
    let cases: Vec<Case> = read_table(&suite_dir().join("expected.tsv"))
        .into_iter()
        .filter(|c| c.ranks == 16)
        .collect();
    assert!(cases.len() >= 30, "{} 16-rank cases", cases.len());
    let dir = tmpdir("mpi-suite-live");
    for c in &cases {
        let name = if c.trace.starts_with("minife.") {
            format!("{}.repaired", c.trace)
        } else {
            c.trace.clone()
        };
        let sg = crate::simgrid::simgrid_time(&dir, &c.spec, c.ranks, &unpack(&name));
        assert!(
            ((sg - c.simgrid_s) / c.simgrid_s).abs() < 1e-9,
            "{} on {}: smpirun gives {sg} s now, the table says {} s",
            c.trace,
            c.machine,
            c.simgrid_s
        );
    }
}

#[test]
fn hpccg_16_raw_trace_matches_simgrid_on_three_machines() {
    let Some(data) = crate::shared_data("smpi-hpccg16") else {
        return;
    };
    let dir = tmpdir("hpccg16");
    let o = Command::new("tar")
        .arg("xzf")
        .arg(data.join("hpccg.16.raw.tar.gz"))
        .arg("-C")
        .arg(&dir)
        .output()
        .expect("run tar");
    assert!(o.status.success());
    let index = dir.join("hpccg.16/hpccg.16.txt");
    // The raw trace, exactly as SimGrid wrote it: datatype ids, `-333` set-up receives.
    let imported = import(Format::SimGrid, &index, &ImportOptions::default()).unwrap();
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.contains("receives from any source")),
        "{:?}",
        imported.notes
    );
    // expected.tsv: trace, setting, --net spec, extra flags, SimGrid seconds, how obtained.
    let table = std::fs::read_to_string(data.join("expected.tsv")).unwrap();
    let mut n = 0;
    for l in table.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = l.split('\t').collect();
        let (setting, spec, sg) = (f[1], f[2], f[4].parse::<f64>().unwrap());
        assert!(f[3].contains("--collectives smpi --flops-per-s 1e9"), "{l}");
        let wi = run_with(&imported.trace, spec, &ReplayConfig::default())
            .makespan
            .as_ps() as f64
            / 1e12;
        let rel = (wi - sg) / sg;
        eprintln!(
            "hpccg.16 {setting}: SimGrid {sg} s, whatif {wi} s ({:+.4}%)",
            rel * 100.0
        );
        // Measured: +0.0001%, -0.0002%, +0.0001%.
        assert!(rel.abs() < 0.001, "{setting}: {:+.4}%", rel * 100.0);
        n += 1;
    }
    assert_eq!(n, 3);
    // Each cause of the difference the issue found, taken back one at a time, moves the
    // starved machine's prediction away from SimGrid's 0.861014 s: sends of 64 KiB or more
    // not blocking (-10%), transfers starting at the send (-0.07%), no envelope (-0.03%).
    let starved = "flow:topo=fattree:k=4,levels=2,up=2,lat=1us,hop=100ns,bw=100MB/s,sharing=lv08";
    let sg = 0.861014118906;
    let with = |protocol: &str| -> f64 {
        let t = import(
            Format::SimGrid,
            &index,
            &ImportOptions {
                mpi_protocol: Some(protocol.parse().unwrap()),
                ..ImportOptions::default()
            },
        )
        .unwrap()
        .trace;
        let wi = run_with(&t, starved, &ReplayConfig::default())
            .makespan
            .as_ps() as f64
            / 1e12;
        (wi - sg) / sg
    };
    assert!(with("simgrid:detached=all") < -0.09);
    assert!((-0.002..-0.0003).contains(&with("simgrid:eager=all")));
    assert!((-0.001..-0.0001).contains(&with("simgrid:envelope=0")));
    assert!(with("eager") < -0.09);
}

/// Non-blocking collectives (`expected-live.tsv`): SimGrid 3.32's replay cannot run them, so
/// the reference is the simulated time of the live `smpirun` run that recorded each trace, on
/// the platform `whatif platform` writes for the spec. The live time is printed with 6
/// digits and the trace's computations with 6 (`%g`), so agreement is to about 1e-5; before
/// the waits were matched by the collective's tag, whatif was 5-8% fast here (a wait naming
/// other ranks than `-333` was a no-op), and with a wildcard barrier receive it deadlocked on
/// the starved fat-tree.
#[test]
fn suite_non_blocking_collectives_match_the_live_runs() {
    check_table("expected-live.tsv", 3, 1e-4, "the live run");
}

/// Completions SimGrid 3.32's replay cannot run as recorded (`expected-rewritten.tsv`):
/// LULESH's `MPI_Waitall` of its sends followed by an `MPI_Wait` per receive, TeaLeaf's
/// `MPI_Testall`. whatif on the raw trace equals SimGrid's replay of the trace rewritten with
/// the program's semantics (SimGrid rounds its times to 1 ns). Before stop 49 whatif was
/// 0.03-2.5% high on LULESH (the `waitall` took every open request) and refused TeaLeaf.
#[test]
fn suite_completions_simgrid_cannot_replay_match_it_on_the_programs_semantics() {
    check_table("expected-rewritten.tsv", 6, 1e-6, "SimGrid");
}

/// Replays each row's trace (column 1) on its machine (column 3) and compares with the
/// reference seconds (column 4, from `reference`) within `tolerance` (relative).
fn check_table(file: &str, rows: usize, tolerance: f64, reference: &str) {
    let text = std::fs::read_to_string(suite_dir().join(file)).unwrap();
    let table: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split('\t').collect())
        .collect();
    assert_eq!(table.len(), rows, "{file}");
    for f in table {
        let (name, spec) = (f[0], f[2]);
        let want: f64 = f[3].parse().unwrap();
        let wi = whatif_s(&unpack(name), spec);
        let rel = (wi - want) / want;
        eprintln!(
            "{name:<16} {reference} {want:.12} s  whatif {wi:.12} s  {:+.7}%",
            rel * 100.0
        );
        assert!(
            rel.abs() < tolerance,
            "{name} on {spec}: whatif {wi} s, {reference} {want} s"
        );
    }
}
