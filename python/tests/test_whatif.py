"""The Python package against the command line: same results, same errors.

Run from a checkout after `pip install ./python` (see the README):
`WHATIF_BIN=target/release/whatif pytest python/tests`. Without WHATIF_BIN the comparisons
with the CLI use `whatif` on PATH, and skip with a message when there is none.
"""

import json
import os
import shutil
import subprocess

import pytest

import whatif

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
def _shared_data():
    """The real traces (../shared/data), found as the Rust tests find them."""
    for d in (os.environ.get("WHATIF_SHARED_DATA"),
              os.path.join(os.path.dirname(ROOT), "shared", "data"),
              "/work/shared/data"):
        if d and os.path.isdir(d):
            return d
    return os.path.join(os.path.dirname(ROOT), "shared", "data")


DATA = _shared_data()


def cli():
    """The whatif binary the Python results are compared with."""
    exe = os.environ.get("WHATIF_BIN") or shutil.which("whatif")
    if not exe or not os.path.exists(exe):
        pytest.skip("no whatif binary (set WHATIF_BIN=target/release/whatif)")
    return exe


def run_cli(*args, cwd=None):
    p = subprocess.run([cli(), *args], capture_output=True, text=True, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture()
def halo(tmp_path):
    """A 5x5x5 halo trace written by the CLI (`whatif gen`)."""
    path = tmp_path / "h.trace"
    code, _, err = run_cli(
        "gen", "halo3d", "--dims", "5x5x5", "--iters", "10",
        "--compute", "100us", "--bytes", "65536", "--out", str(path), "-q",
    )
    assert code == 0, err
    return path


def test_replay_equals_the_cli_json(halo):
    net = "alphabeta:lat=1us,bw=10GB/s"
    r = whatif.replay(whatif.load(halo), net=net, pes=25, map="block")
    code, out, err = run_cli("replay", str(halo), "--net", net, "--pes", "25",
                             "--map", "block", "--json", "-q")
    assert code == 0, err
    expected = json.loads(out)
    assert r.makespan_ps == expected["makespan_ps"]
    # Every field of the summary, not only the makespan.
    assert r.summary == expected
    # A path works as well as a loaded trace.
    assert whatif.replay(str(halo), net=net, pes=25, map="block").summary == expected


def test_tables_are_the_cli_csv_files(halo, tmp_path):
    net = "latency:lat=20us"
    r = whatif.replay(halo, net=net, pes=5, timeline=True)
    pe_csv = tmp_path / "pe.csv"
    tl_csv = tmp_path / "tl.csv"
    code, _, err = run_cli("replay", str(halo), "--net", net, "--pes", "5",
                           "--per-pe", str(pe_csv), "--timeline", str(tl_csv), "-q")
    assert code == 0, err
    import pandas

    pandas.testing.assert_frame_equal(r.per_pe, pandas.read_csv(pe_csv))
    pandas.testing.assert_frame_equal(r.timeline, pandas.read_csv(tl_csv))
    # One row per block of the run.
    assert len(r.timeline) == whatif.load(halo).num_blocks
    assert list(r.per_pe["pe"]) == [0, 1, 2, 3, 4]
    # Each PE's busy time is within the makespan.
    assert (r.per_pe["busy_s"] <= r.makespan_s + 1e-12).all()


def test_the_built_in_scenario_matches_whatif_run():
    r = whatif.replay(whatif.default_scenario(), pes=64, map="block")
    code, out, err = run_cli("run", "--pes", "64", "--map", "block", "--json", "-q")
    assert code == 0, err
    assert r.summary == json.loads(out)


def test_more_latency_is_slower_and_ideal_is_fastest(halo):
    times = [
        whatif.replay(halo, net=f"alphabeta:lat={lat},bw=10GB/s").makespan_ps
        for lat in ("1us", "10us", "100us")
    ]
    assert times[0] < times[1] < times[2]
    assert whatif.replay(halo, net="ideal").makespan_ps < times[0]


def test_errors_carry_the_cli_message(halo, tmp_path):
    with pytest.raises(whatif.InputError) as e:
        whatif.load(tmp_path / "missing.trace")
    code, _, err = run_cli("replay", str(tmp_path / "missing.trace"))
    assert code == 2
    assert err.strip() == "error: " + str(e.value)
    with pytest.raises(whatif.InputError, match="net"):
        whatif.replay(halo, net="warp:speed=9")
    with pytest.raises(TypeError, match="unknown option `lattency`"):
        whatif.replay(halo, lattency="1us")
    # A run limit is a failed run (exit status 1 on the command line).
    with pytest.raises(whatif.RunError, match="did not complete|limit"):
        whatif.replay(halo, max_events=10)
    code, _, _ = run_cli("replay", str(halo), "--max-events", "10", "-q")
    assert code == 1
    assert issubclass(whatif.InputError, whatif.WhatifError)


def test_analyze_finds_the_critical_path(halo, tmp_path):
    a = whatif.analyze(halo, net="alphabeta:lat=1us,bw=10GB/s", pes=25, jobs=1)
    code, out, err = run_cli("analyze", str(halo), "--net", "alphabeta:lat=1us,bw=10GB/s",
                             "--pes", "25", "--jobs", "1", "--json", "-q")
    assert code == 0, err
    cli_result = json.loads(out)
    assert a.result["critical_path"] == cli_result["critical_path"]
    assert a.findings == cli_result["findings"]   # their reproducing commands too
    # The path ends at the makespan and its rows are the path's steps.
    assert a.critical_path["end_ps"].max() == whatif.replay(
        halo, net="alphabeta:lat=1us,bw=10GB/s", pes=25).makespan_ps
    assert "time_profile" in a.views and len(a.views["usage"]) > 0


def test_a_real_charm_log_replays_as_on_the_cli():
    """A real Charm++ 8 run's Projections logs (stencil3d on 2 PEs), read with a format."""
    log = os.path.join(DATA, "charm-stencil3d", "logs", "p2", "stencil3d.prj.sts")
    if not os.path.exists(log):
        pytest.skip(f"{log} is absent (the shared data folder)")
    t = whatif.load(log, format="projections")
    assert t.num_blocks > 0 and t.recorded_pes == 2
    net = "alphabeta:lat=1us,bw=10GB/s"
    code, out, err = run_cli("replay", log, "--format", "projections", "--net", net,
                             "--json", "-q")
    assert code == 0, err
    assert whatif.replay(t, net=net).summary == json.loads(out)
    assert whatif.replay(log, format="projections", net=net).summary == json.loads(out)


def test_generate_writes_the_cli_trace_byte_for_byte(tmp_path):
    t = whatif.generate("halo3d", dims="4x4x2", iters=3, compute="50us", bytes=4096, jitter=0.1)
    whatif.save(t, tmp_path / "py.trace")
    code, _, err = run_cli("gen", "halo3d", "--dims", "4x4x2", "--iters", "3", "--compute",
                           "50us", "--bytes", "4096", "--jitter", "0.1",
                           "--out", str(tmp_path / "cli.trace"), "-q")
    assert code == 0, err
    assert (tmp_path / "py.trace").read_bytes() == (tmp_path / "cli.trace").read_bytes()
    with pytest.raises(whatif.InputError, match="dims"):
        whatif.generate("halo3d", dims="4x4")


def test_the_example_reproduces_the_readme_figure():
    """python/examples/loggops_gap.py prints the README tour's 12.0 ms and 444 ms."""
    script = os.path.join(ROOT, "python", "examples", "loggops_gap.py")
    import sys

    p = subprocess.run([sys.executable, script], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "G=6ps: 12.0 ms" in p.stdout, p.stdout
    assert "G=6ns (LogGOPSim's default): 444 ms" in p.stdout, p.stdout
    readme = open(os.path.join(ROOT, "README.md")).read()
    assert "444 ms instead of 12.0 ms" in readme


def test_the_readme_python_lines_run(monkeypatch):
    """The README's Python block runs as written, from the checkout."""
    monkeypatch.chdir(ROOT)
    readme = open(os.path.join(ROOT, "README.md")).read()
    block = readme.split("```python\n", 1)[1].split("```", 1)[0]
    scope = {}
    exec(compile(block, "README.md", "exec"), scope)
    r, a = scope["r"], scope["a"]
    assert r.makespan_ps > 0 and len(r.per_pe) == 125
    assert len(a.critical_path) > 0
    assert len(scope["s"].results) == 108


STUDY = os.path.join(ROOT, "scenarios", "studies", "stencil-latency-small.toml")


def test_sweep_writes_the_cli_files(tmp_path):
    s = whatif.sweep(STUDY, out=tmp_path / "py", jobs=2)
    code, _, err = run_cli("sweep", STUDY, "--out", str(tmp_path / "cli"), "--jobs", "1", "-q")
    assert code == 0, err
    for name in ("results.csv", "results.json", "manifest.json"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    assert len(s.results) == s.manifest["points_total"] == 108
    # A shard is the rows of its points.
    part = whatif.sweep(STUDY, shard="1/4")
    assert list(part.results["point"]) == list(range(1, 108, 4))
    with pytest.raises(whatif.InputError, match="shard"):
        whatif.sweep(STUDY, shard="4/4")


def test_lb_rows_equal_the_cli(halo):
    rows = whatif.lb(halo, pes=8, strategies="greedy,refine", at="start")
    code, out, err = run_cli("lb", str(halo), "--pes", "8", "--strategies", "greedy,refine",
                             "--at", "start", "--json", "-q")
    assert code == 0, err
    assert rows.to_dict("records") == json.loads(out)
    assert list(rows["strategy"]) == ["greedy", "refine"]
    with pytest.raises(whatif.InputError, match="strategies"):
        whatif.lb(halo, strategies="bogus")


def test_predict_equals_the_cli():
    p = whatif.predict("stencil3d", small=[1, 2, 4], at=[8], sets={"iters": 2})
    code, out, err = run_cli("predict", "stencil3d", "--small", "1,2,4", "--at", "8",
                             "--set", "iters=2", "--json", "-q")
    assert code == 0, err
    assert p.result == json.loads(out)
    assert list(p.rows["role"]) == ["small", "small", "small", "target"]
    assert p.rows["simulated_s"].notna().all()
    with pytest.raises(whatif.InputError, match="at least 3"):
        whatif.predict("stencil3d", small=[1, 2], at=[8])


def test_emulate_records_the_cli_trace(tmp_path):
    t = whatif.emulate("stencil3d", pes=4, sets={"iters": 3})
    out = tmp_path / "cli.trace"
    code, _, err = run_cli("emulate", "stencil3d", "--pes", "4", "--set", "iters=3",
                           "--flat", "--out", str(out), "-q")
    assert code == 0, err
    cli_trace = whatif.load(out)
    assert t.num_blocks == cli_trace.num_blocks and t.num_objects == cli_trace.num_objects
    # The same program, the same replay.
    assert whatif.replay(t).summary["makespan_ps"] == whatif.replay(cli_trace).summary["makespan_ps"]
    with pytest.raises(whatif.InputError):
        whatif.emulate("no-such-program")


def test_the_gil_is_released_while_a_replay_runs():
    """Python threads keep running while whatif works (a notebook stays responsive)."""
    import threading

    halo = whatif.generate("halo3d", dims="16x16x16", iters=20)
    ticks = []
    done = threading.Event()

    def work():
        whatif.replay(halo, net="contention:topo=torus:16x16x16,bw=10GB/s")
        done.set()

    t = threading.Thread(target=work)
    t.start()
    while not done.is_set():
        ticks.append(1)   # pure Python: runs only while the GIL is free
        done.wait(0.001)
    t.join()
    # The replay takes well over 10 ms; holding the GIL would leave at most a tick or two.
    assert len(ticks) > 10, len(ticks)


def test_the_output_folder_is_the_cli_folder(halo, tmp_path, monkeypatch):
    """replay(out=..., report=True) writes what `whatif replay --out --report` writes."""
    net = "alphabeta:lat=1us,bw=10GB/s"
    # The report names its folder as given: both write `out`, each in a folder of its own.
    (tmp_path / "py").mkdir()
    (tmp_path / "cli").mkdir()
    monkeypatch.chdir(tmp_path / "py")
    whatif.replay(str(halo), net=net, pes=25, out="out", report=True)
    code, _, err = run_cli("replay", str(halo), "--net", net, "--pes", "25",
                           "--out", "out", "--report", "-q", cwd=tmp_path / "cli")
    assert code == 0, err
    py, cli = tmp_path / "py" / "out", tmp_path / "cli" / "out"
    py_files = sorted(p.relative_to(py) for p in py.rglob("*"))
    cli_files = sorted(p.relative_to(cli) for p in cli.rglob("*"))
    assert py_files == cli_files and len(py_files) > 20
    differ = [str(f) for f in py_files
              if (py / f).is_file() and (py / f).read_bytes() != (cli / f).read_bytes()]
    # Only the finished-run marker, which names the process's command line, differs: the
    # findings' reproducing commands are built from the call's trace and options.
    assert differ == ["whatif-complete.json"], differ
    assert "report.html" in {str(f) for f in py_files}


def test_outputs_never_overwrite_the_input(tmp_path):
    """As on the command line: an output folder holding the input, even with force, or an
    output file that is the input, is refused before any work."""
    d = tmp_path / "d"
    d.mkdir()
    trace = d / "h.trace"
    whatif.save(whatif.generate("ring", ranks=4, iters=2), trace)
    before = trace.read_bytes()
    for kw in (dict(out=d, force=True), dict(out=trace)):
        with pytest.raises(whatif.InputError, match="overwrite the input|not a folder"):
            whatif.replay(str(trace), **kw)
    with pytest.raises(whatif.InputError, match="overwrite the input"):
        whatif.replay(whatif.load(trace), out=d, force=True)
    with pytest.raises(whatif.InputError, match="overwrite the input"):
        whatif.analyze(str(trace), out=d, force=True)
    assert sorted(p.name for p in d.iterdir()) == ["h.trace"]
    assert trace.read_bytes() == before
