//! Issue 35: every command's `--help` has runnable examples, and every one of them runs, the
//! way doctests run; the README's tour runs as written (`readme_tour_runs_as_written`, ignored
//! in the debug test run: `.ci/run` runs it on the release build, which its million-rank lines
//! need).
//!
//! Examples are the indented `whatif ...` lines under a line starting with `Example` in a
//! command's help (a trailing `\` continues a line, ` # ` starts a comment, `&&` chains two
//! commands). Each command's examples run in order in a fresh folder that holds links to the
//! checkout's `scenarios/` and `docs/` (the help speaks from the checkout, as the README does)
//! and, when the team's real traces are present, `../shared/data`. Other lines (`smpirun`,
//! `extrap`) are shown to the reader and not run here.

use super::cli::stderr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The binary under test: `$WHATIF_BIN` (to try the examples on a release build), else the
/// debug build's.
fn bin() -> PathBuf {
    std::env::var_os("WHATIF_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_whatif")))
}

fn help(args: &[&str]) -> String {
    let o = Command::new(bin()).args(args).output().expect("run whatif");
    assert!(o.status.success(), "whatif {args:?}: {}", stderr(&o));
    String::from_utf8(o.stdout).expect("utf-8 help")
}

/// The subcommands `whatif --help` lists.
fn commands() -> Vec<String> {
    let h = help(&["--help"]);
    let mut out = Vec::new();
    let mut on = false;
    for line in h.lines() {
        if line.starts_with("Commands:") {
            on = true;
            continue;
        }
        if on {
            if !line.starts_with("  ") {
                break;
            }
            let name = line.split_whitespace().next().unwrap_or("");
            if !name.is_empty() && name != "help" && line.starts_with(&format!("  {name}")) {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// The example command lines of a help text (see the module docs), continuations joined,
/// comments cut, chains split.
pub fn examples(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut on = false;
    let mut pending = String::new();
    for line in help.lines() {
        if line.starts_with("Example") {
            on = true;
            continue;
        }
        if !on {
            continue;
        }
        if !line.starts_with(' ') {
            // A blank line or an unindented one ends the section (a continuation never is).
            on = false;
            continue;
        }
        let text = line.trim();
        let (text, cont) = match text.strip_suffix('\\') {
            Some(t) => (t.trim_end(), true),
            None => (text, false),
        };
        if !pending.is_empty() {
            pending.push(' ');
        }
        pending.push_str(text);
        if cont {
            continue;
        }
        let cmd = match pending.find(" # ") {
            Some(i) => pending[..i].trim_end().to_string(),
            None => pending.clone(),
        };
        pending.clear();
        for part in cmd.split(" && ") {
            let part = part.trim();
            if part.starts_with("whatif ") {
                out.push(part.to_string());
            }
        }
    }
    out
}

/// A fresh folder `ROOT/work` for one command's examples, with `scenarios/` and `docs/`
/// linked from the checkout and `ROOT/shared` linked to the real traces when present.
fn scratch(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("whatif-ex-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for d in ["scenarios", "docs"] {
        std::os::unix::fs::symlink(repo.join(d), work.join(d)).unwrap();
    }
    if let Some(data) = super::shared_data("") {
        std::fs::create_dir_all(root.join("shared")).unwrap();
        std::os::unix::fs::symlink(&data, root.join("shared/data")).unwrap();
    }
    work
}

/// Runs one example line (`whatif ARGS`, no quotes) in `dir`; the failure message names it.
fn run_line(line: &str, dir: &Path, limit: Duration) -> Result<Duration, String> {
    assert!(
        !line.contains('"') && !line.contains('\''),
        "example `{line}` has quotes: keep help examples to plain words"
    );
    let args: Vec<&str> = line.split_whitespace().skip(1).collect();
    let t0 = Instant::now();
    let o = Command::new(bin())
        .args(&args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("{line}: {e}"))?;
    let took = t0.elapsed();
    if !o.status.success() {
        return Err(format!(
            "`{line}` failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    if took > limit {
        return Err(format!(
            "`{line}` took {:.1} s (help examples must be quick)",
            took.as_secs_f64()
        ));
    }
    Ok(took)
}

#[test]
fn example_parser_joins_continuations_cuts_comments_and_splits_chains() {
    let h = "Usage: x\n\nExamples:\n  whatif a b \\\n      --c d   # note\n  smpirun -np 2\n  \
             whatif e && whatif f g\n\nMore text\n  whatif not-an-example\n";
    assert_eq!(
        examples(h),
        vec!["whatif a b --c d", "whatif e", "whatif f g"]
    );
}

#[test]
fn every_command_has_examples_and_every_help_example_runs() {
    let cmds = commands();
    assert!(cmds.len() >= 20, "commands: {cmds:?}");
    let has_shared = super::shared_data("").is_some();
    let mut failures = Vec::new();
    let mut ran = 0;
    let mut per_command = Vec::new();
    for cmd in std::iter::once("").chain(cmds.iter().map(String::as_str)) {
        let h = if cmd.is_empty() {
            help(&["--help"])
        } else {
            help(&[cmd, "--help"])
        };
        let ex = examples(&h);
        let name = if cmd.is_empty() { "whatif" } else { cmd };
        if ex.len() < 2 {
            failures.push(format!(
                "`whatif {cmd} --help` has {} example(s); every command shows 2 to 4",
                ex.len()
            ));
            continue;
        }
        // A command's own examples show it (the top-level help shows the tour's first steps).
        if !cmd.is_empty() && !ex.iter().any(|l| l.starts_with(&format!("whatif {cmd} "))) {
            failures.push(format!(
                "`whatif {cmd} --help`: no example runs `whatif {cmd}`"
            ));
        }
        let dir = scratch(name);
        let t0 = Instant::now();
        for line in &ex {
            if line.contains("../shared/data") && !has_shared {
                eprintln!("skipped `{line}`: ../shared/data not found");
                continue;
            }
            if (line.contains("import otf2") || line.contains("--format otf2"))
                && !cfg!(feature = "otf2")
            {
                eprintln!("skipped `{line}`: a build with --features otf2");
                continue;
            }
            match run_line(line, &dir, Duration::from_secs(60)) {
                Ok(_) => ran += 1,
                Err(e) => {
                    failures.push(format!("whatif {cmd} --help: {e}"));
                    break;
                }
            }
        }
        per_command.push(format!("{name} {:.1} s", t0.elapsed().as_secs_f64()));
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }
    eprintln!("{ran} examples ran: {}", per_command.join(", "));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The command lines of the README's tour (its first ```sh block after `## A 5-minute tour`),
/// each with the comment lines just before it and its own comment, continuations joined.
fn tour_lines(readme: &str) -> Vec<(String, String)> {
    let start = readme
        .find("## A 5-minute tour")
        .expect("the README has a tour");
    let body = &readme[start..];
    let open = body.find("```sh\n").expect("the tour's code block") + 6;
    let close = open + body[open..].find("```").expect("the code block ends");
    let mut out = Vec::new();
    let mut comments = String::new();
    let mut pending = String::new();
    for line in body[open..close].lines() {
        let t = line.trim();
        if pending.is_empty() && (t.is_empty() || t.starts_with('#')) {
            if t.is_empty() {
                comments.clear();
            } else {
                comments.push_str(t);
                comments.push('\n');
            }
            continue;
        }
        pending.push_str(line);
        if let Some(p) = pending.strip_suffix('\\') {
            pending = p.to_string();
            continue;
        }
        out.push((std::mem::take(&mut pending), std::mem::take(&mut comments)));
    }
    out
}

/// Whether a text states how long something takes (`about 30 s`, `40 s`, `a minute`).
fn states_a_time(text: &str) -> bool {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == '(' || c == ')')
        .collect();
    words.windows(2).any(|w| {
        w[0].trim_start_matches('~').parse::<f64>().is_ok()
            && matches!(w[1], "s" | "min" | "minutes" | "seconds")
    }) || text.contains("minute")
}

#[test]
fn readme_tour_parser_keeps_comments_and_joins_lines() {
    let readme = "x\n## A 5-minute tour\n\n```sh\n# one\n# about 30 s\nwhatif a \\\n  b   # c\n\n\
                  whatif d\n```\n";
    let l = tour_lines(readme);
    assert_eq!(l.len(), 2);
    assert_eq!(l[0].0, "whatif a   b   # c");
    assert_eq!(l[0].1, "# one\n# about 30 s\n");
    assert_eq!(l[1], ("whatif d".to_string(), String::new()));
    assert!(states_a_time("# about 30 s and 1.3 GB"));
    assert!(states_a_time("(40 s, 3 GB)"));
    assert!(!states_a_time("# 100 iterations of 100us"));
}

/// Runs the README's tour, line by line, as a reader would (bash, `whatif` the binary under
/// test, in a fresh folder with the checkout's `scenarios/` and `docs/` and the team's
/// `../shared/data`): every line must succeed, and a line that takes over [`SLOW_S`] must say
/// how long it takes (in its comment or the comment above it). OTF2 lines (and the lines
/// reading what they wrote) are skipped when the binary was built without the `otf2` feature. Needs a release build: `.ci/run`
/// runs `cargo test --release --test integration readme_tour -- --ignored`.
/// "A few seconds": a tour line that takes longer says how long (on this 2-core machine,
/// release build).
const SLOW_S: f64 = 8.0;

/// Whether the binary under test reads OTF2 (built with the `otf2` feature).
fn reads_otf2(dir: &Path) -> bool {
    let probe = dir.join("probe.otf2");
    std::fs::write(&probe, b"not an archive").unwrap();
    let o = Command::new(bin())
        .args(["import", "otf2"])
        .arg(&probe)
        .arg("--out")
        .arg(dir.join("probe.trace"))
        .output()
        .expect("run whatif");
    std::fs::remove_file(&probe).unwrap();
    !String::from_utf8_lossy(&o.stderr).contains("built without the `otf2` feature")
}

#[test]
#[ignore = "the whole README tour, million-rank lines included: .ci/run runs it on the release build"]
fn readme_tour_runs_as_written() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let lines = tour_lines(&readme);
    assert!(lines.len() > 50, "{} tour lines", lines.len());
    let dir = scratch("tour");
    let has_shared = super::shared_data("").is_some();
    let otf2 = reads_otf2(&dir);
    let mut failures = Vec::new();
    let mut times = Vec::new();
    // Files a skipped line would have written: the lines that read them are skipped too.
    let mut unmade: Vec<String> = Vec::new();
    for (line, comments) in &lines {
        if line.trim_start().starts_with("alias ") {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let why = if line.contains("../shared/data") && !has_shared {
            Some("no ../shared/data")
        } else if line.contains("import otf2") && !otf2 {
            Some("a build without the otf2 feature")
        } else if unmade.iter().any(|f| words.contains(&f.as_str())) {
            Some("it reads what a skipped line writes")
        } else {
            None
        };
        if let Some(why) = why {
            eprintln!("skipped ({why}): {line}");
            if let Some(i) = words.iter().position(|w| *w == "--out") {
                unmade.extend(words.get(i + 1).map(|w| w.to_string()));
            }
            continue;
        }
        let script = format!(
            "set -e\nwhatif() {{ \"{}\" \"$@\"; }}\n{line}\n",
            bin().display()
        );
        let t0 = Instant::now();
        let o = Command::new("bash")
            .arg("-c")
            .arg(&script)
            .current_dir(&dir)
            .output()
            .expect("bash");
        let took = t0.elapsed().as_secs_f64();
        times.push(format!("{took:6.1} s  {}", line.trim()));
        if !o.status.success() {
            failures.push(format!(
                "`{}` failed ({}): {}",
                line.trim(),
                o.status,
                String::from_utf8_lossy(&o.stderr)
            ));
            continue;
        }
        if took > SLOW_S && !states_a_time(&format!("{comments}{line}")) {
            failures.push(format!(
                "`{}` took {took:.1} s and its comment does not say how long it takes",
                line.trim()
            ));
        }
    }
    eprintln!("README tour, {} lines:\n{}", times.len(), times.join("\n"));
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The options of a command's help: the `--long` names its option lines start with.
fn options(help: &str) -> Vec<String> {
    help.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .flat_map(|l| l.split([',', ' ']).filter(|w| w.starts_with("--")))
        .map(|w| w.split('=').next().unwrap().to_string())
        .collect()
}

#[test]
fn every_command_speaks_the_vocabulary() {
    let mut failures = Vec::new();
    for cmd in commands() {
        let h = help(&[cmd.as_str(), "--help"]);
        let opts = options(&h);
        // -q on every command (docs/CLI.md: quiet).
        if !h.contains("-q, --quiet") {
            failures.push(format!("{cmd}: no -q, --quiet"));
        }
        // --out says whether it is a file or a folder.
        if opts.iter().any(|o| o == "--out")
            && !(h.contains("--out <FILE>") || h.contains("--out <DIR>"))
        {
            failures.push(format!("{cmd}: --out is neither <FILE> nor <DIR>"));
        }
        // One spelling per idea: none of the old ones is shown.
        for old in [
            "--threads",
            "--workers",
            "--quiet-mode",
            "--output",
            "--nprocs",
            "--np",
        ] {
            if opts.iter().any(|o| o == old) {
                failures.push(format!("{cmd}: shows `{old}`"));
            }
        }
        // A --net command that simulates a machine takes --machine too.
        if [
            "replay", "run", "lb", "analyze", "phases", "emulate", "predict",
        ]
        .contains(&cmd.as_str())
            && !opts.iter().any(|o| o == "--machine")
        {
            failures.push(format!("{cmd}: --net without --machine"));
        }
    }
    // --json on the commands whose result is numbers.
    for cmd in [
        "replay",
        "run",
        "inspect",
        "lb",
        "analyze",
        "phases",
        "predict",
        "model",
        "run-native",
        "sweep",
        "bench",
    ] {
        if !options(&help(&[cmd, "--help"]))
            .iter()
            .any(|o| o == "--json")
        {
            failures.push(format!("{cmd}: no --json"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs `whatif ARGS` in `dir`.
fn run_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(bin())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run whatif")
}

#[test]
fn old_spellings_still_work_with_a_note_that_quiet_hides() {
    let dir = scratch("spellings");
    let note = "is now spelled";
    // run-native --threads is --pes.
    let o = run_in(
        &dir,
        &["run-native", "ring", "--threads", "2", "--set", "laps=2"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("`--threads` is now spelled `--pes`"), "{e}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("on 2 PEs"));
    let o = run_in(
        &dir,
        &["run-native", "ring", "--pes", "2", "--set", "laps=2"],
    );
    assert!(
        o.status.success() && !stderr(&o).contains(note),
        "{}",
        stderr(&o)
    );
    let o = run_in(
        &dir,
        &[
            "run-native",
            "ring",
            "--threads",
            "2",
            "--set",
            "laps=2",
            "-q",
        ],
    );
    assert!(
        o.status.success() && stderr(&o).is_empty(),
        "{}",
        stderr(&o)
    );
    // Both spellings at once: refused.
    let o = run_in(
        &dir,
        &["run-native", "ring", "--threads", "2", "--pes", "2"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // --net paragon is --machine paragon: same result, and a note.
    let o = run_in(
        &dir,
        &[
            "emulate", "pge", "--pes", "8", "--set", "ways=2", "--out", "a.trace",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let old = run_in(&dir, &["replay", "a.trace", "--net", "paragon", "--json"]);
    let new = run_in(
        &dir,
        &["replay", "a.trace", "--machine", "paragon", "--json"],
    );
    assert!(old.status.success() && new.status.success());
    assert_eq!(old.stdout, new.stdout);
    assert!(
        stderr(&old).contains("`--net paragon` is now spelled `--machine paragon`"),
        "{}",
        stderr(&old)
    );
    assert!(!stderr(&new).contains(note), "{}", stderr(&new));
    // calibrate's bare seconds: the same calibration as with the unit, and a note.
    let study = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/studies/atm2d-paragon.toml");
    let cal = |time: &str, out: &str| {
        run_in(
            &dir,
            &[
                "calibrate",
                study.to_str().unwrap(),
                "--param",
                "params.cell_cost",
                "--measured",
                &format!("workload.pes=4,params.lambda=128:{time}"),
                "--out",
                out,
            ],
        )
    };
    let old = cal("0.817", "old.toml");
    let new = cal("0.817s", "new.toml");
    assert!(old.status.success(), "{}", stderr(&old));
    assert!(new.status.success(), "{}", stderr(&new));
    assert!(
        stderr(&old).contains("`:0.817` is now spelled `:0.817s`"),
        "{}",
        stderr(&old)
    );
    assert!(!stderr(&new).contains(note));
    // The same study, the header comment (which quotes the measurement as given) aside.
    let body = |f: &str| -> Vec<String> {
        std::fs::read_to_string(dir.join(f))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(String::from)
            .collect()
    };
    assert_eq!(body("old.toml"), body("new.toml"));
    assert!(
        body("new.toml")
            .iter()
            .any(|l| l.starts_with("cell_cost = "))
    );
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn sweep_and_bench_print_json() {
    let dir = scratch("json");
    let study = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/studies/atm2d-paragon.toml");
    let o = run_in(
        &dir,
        &[
            "sweep",
            study.to_str().unwrap(),
            "--out",
            "atm",
            "--json",
            "-q",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).expect("sweep --json");
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("atm/results.json")).unwrap()).unwrap();
    assert_eq!(rows, file, "sweep --json prints results.json's rows");
    assert_eq!(rows.as_array().unwrap().len(), 18);
    let o = run_in(
        &dir,
        &["sweep", study.to_str().unwrap(), "--list", "--json"],
    );
    let points: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--list --json");
    assert_eq!(points.as_array().unwrap().len(), 18);
    assert_eq!(points[17]["index"], 17);
    assert_eq!(points[0]["values"]["workload.pes"], "4");
    let o = run_in(
        &dir,
        &[
            "bench", "--ranks", "64,125", "--iters", "2", "--repeat", "1", "--json", "-q",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("bench --json");
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["ranks"], 64);
    assert_eq!(rows[1]["dims"], "5x5x5");
    // 125 ranks x 2 iterations of a non-periodic halo: 6 faces less the boundary ones.
    assert_eq!(rows[1]["messages"], 2 * 6 * 4 * 5 * 5);
    assert!(rows[1]["loop_s"].as_f64().unwrap() >= 0.0);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn the_tour_knows_whether_the_binary_reads_otf2() {
    if std::env::var_os("WHATIF_BIN").is_some() {
        return; // another binary: its features are not this test build's
    }
    let dir = scratch("otf2-probe");
    assert_eq!(reads_otf2(&dir), cfg!(feature = "otf2"));
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}
