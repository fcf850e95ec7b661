"""whatif from Python: predict how a message-driven parallel program runs on a machine you
don't have, by replaying a trace of its execution blocks on a simulated one.

The same engine as the ``whatif`` command line (the Rust ``workflow`` crate), with the same
option names (``--cpu-scale`` is ``cpu_scale=``) and values, the same results and the same
error messages::

    import whatif
    t = whatif.load("h.trace")                       # or any path the CLI reads (format=...)
    r = whatif.replay(t, net="alphabeta:lat=1us,bw=10GB/s", pes=125)
    r.makespan_ps                                    # as `whatif replay --json` gives it
    r.per_pe                                         # pandas DataFrame (pe.csv's columns)

Also ``whatif.generate``, ``whatif.emulate``, ``whatif.analyze``, ``whatif.lb``, ``whatif.sweep`` and
``whatif.predict``, each the CLI command of that name. Long work releases the GIL. Errors raise ``whatif.InputError`` (bad input; the CLI exits
with 2) or ``whatif.RunError`` (a run that could not finish; exit 1), both
``whatif.WhatifError``.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from . import _native
from ._native import InputError, RunError, Trace, WhatifError, __version__

__all__ = [
    "Trace",
    "Replay",
    "Analysis",
    "WhatifError",
    "InputError",
    "RunError",
    "load",
    "default_scenario",
    "generate",
    "emulate",
    "save",
    "replay",
    "analyze",
    "lb",
    "sweep",
    "Sweep",
    "predict",
    "Prediction",
    "__version__",
]


def _pandas():
    import pandas

    return pandas


def _csv(path: str):
    """A CSV table the engine wrote, as a DataFrame (None when it was not written)."""
    if not os.path.exists(path):
        return None
    return _pandas().read_csv(path)


def load(path: "str | os.PathLike", format: Optional[str] = None, *, quiet: bool = True, **options) -> Trace:
    """Reads a whatif trace, or with ``format`` (bgtrace, projections, simgrid, goal, otf2)
    imports a foreign one, as ``whatif replay --format`` does. Import options:
    ``flops_per_s``, ``eager_limit``, ``collectives``, ``mpi_protocol``; ``max_memory``
    bounds what the import may allocate."""
    return _native.load(os.fspath(path), format, quiet, **options)


def default_scenario() -> Trace:
    """The built-in scenario of ``whatif run``: a 3-D halo of 8x8x8 ranks, 20 iterations of
    100 us compute and 64 KiB messages, recorded with ``alphabeta:lat=1us,bw=10GB/s``."""
    return _native.default_scenario()


def generate(kind: str, **params) -> Trace:
    """A synthetic trace, as ``whatif gen KIND`` makes it: ``pingpong``, ``ring``
    (``ranks=``), ``halo2d``/``halo3d`` (``dims="10x10x10"``, ``periodic=``), ``pipeline``
    (``stages=``), with ``iters``, ``compute`` ("100us"), ``bytes``, ``jitter``, ``seed`` and
    the network model to record (``net=``). Equal parameters give byte-identical traces."""
    return _native.generate(kind, **params)


def emulate(program: str, *, pes: int = 4, sets: Optional[Dict[str, Any]] = None, **options) -> Trace:
    """Runs a built-in message-driven program (``whatif emulate --help`` lists them) on
    ``pes`` virtual PEs in simulated time and returns its trace, as ``whatif emulate`` records
    it: ``sets`` its parameters (``{"grid": "64x64x48", "iters": 10}``), ``net`` or
    ``machine``, ``timing`` ("model" or "measured"), ``map``, ``cpu_scale``, ``priority``,
    ``max_memory``."""
    return _native.emulate(program, pes=pes, sets=sets, **options)


def save(trace: Trace, path: "str | os.PathLike") -> None:
    """Writes ``trace`` to ``path`` (``.jsonl``: the readable text form; else binary)."""
    _native.save(trace, os.fspath(path))


@dataclass
class Replay:
    """A replay's result: ``summary`` is ``whatif replay --json``'s object; the tables are
    the CLI's CSV files as DataFrames (``timeline`` only when asked for)."""

    summary: Dict[str, Any]
    per_pe: Any = None
    links: Any = None
    entries: Any = None
    timeline: Any = None
    out: Optional[str] = None

    @property
    def makespan_ps(self) -> int:
        """The predicted makespan in picoseconds (``makespan_ps`` of ``--json``)."""
        return self.summary["makespan_ps"]

    @property
    def makespan_s(self) -> float:
        """The predicted makespan in seconds."""
        return self.summary["makespan_ps"] / 1e12

    def __repr__(self) -> str:
        s = self.summary
        return "<whatif.Replay {!r} on {} PEs, net {}: makespan {:.6g} s>".format(
            s.get("trace"), s.get("pes"), s.get("net"), self.makespan_s
        )


def replay(
    trace: "Trace | str | os.PathLike",
    *,
    timeline: bool = False,
    out: "str | os.PathLike | None" = None,
    report: bool = False,
    format: Optional[str] = None,
    quiet: bool = True,
    **options,
) -> Replay:
    """Replays ``trace`` (a ``Trace`` or a path) on the machine the keyword arguments
    describe, with ``whatif replay``'s names: ``net``, ``machine``, ``net_file``, ``pes``
    (a number or "objects"), ``map``, ``cpu_scale``, ``block_overhead``, ``local_msg_cost``,
    ``noise`` (a list), ``priority``, ``critical_path_priority``, ``speedup`` (a list),
    ``recorded_order``, ``free_object_order``, ``queue``, ``max_events``, ``max_time``,
    ``seed``, ``max_memory``, ``force``. Durations and sizes take the CLI's units
    ("500ns", "4GiB").

    ``timeline=True`` adds the per-block timeline (every block: memory grows with the run).
    ``out`` writes the CLI's output folder (``report=True`` adds the analysis and
    report.html). ``quiet=False`` shows progress on stderr."""
    if isinstance(trace, os.PathLike):
        trace = os.fspath(trace)
    with tempfile.TemporaryDirectory(prefix="whatif-") as tmp:
        paths = {
            name: os.path.join(tmp, name + ".csv")
            for name in ("per_pe", "links", "entries")
        }
        if timeline:
            paths["timeline"] = os.path.join(tmp, "timeline.csv")
        text = _native.replay(
            trace,
            format=format,
            out=None if out is None else os.fspath(out),
            report=report,
            quiet=quiet,
            **paths,
            **options,
        )
        tables = {name: _csv(p) for name, p in paths.items()}
    return Replay(
        summary=json.loads(text),
        out=None if out is None else os.fspath(out),
        **tables,
    )


@dataclass
class Analysis:
    """An analysis (``whatif analyze``): ``result`` is ``--json``'s object (critical path,
    findings with the command that reproduces each, limits, extrema), ``critical_path`` one
    row per path block, ``views`` Projections' and Rover's analyses (time profile, usage,
    communication, ...) as DataFrames by name."""

    result: Dict[str, Any]
    critical_path: Any = None
    views: Dict[str, Any] = field(default_factory=dict)

    @property
    def findings(self):
        """The diagnoses, largest saving first."""
        return self.result.get("findings", [])


def analyze(
    trace: "Trace | str | os.PathLike",
    *,
    out: "str | os.PathLike | None" = None,
    resimulate: bool = True,
    factor: int = 2,
    jobs: Optional[int] = None,
    format: Optional[str] = None,
    quiet: bool = True,
    **options,
) -> Analysis:
    """Analyses ``trace`` as ``whatif analyze`` does on the machine the keyword arguments
    describe (``replay``'s names): the critical path, what bounds it, and re-simulated
    what-ifs. ``out`` keeps the CLI's files (analysis.json, critical_path.csv, the views)."""
    if isinstance(trace, os.PathLike):
        trace = os.fspath(trace)
    with tempfile.TemporaryDirectory(prefix="whatif-") as tmp:
        folder = os.fspath(out) if out is not None else os.path.join(tmp, "analysis")
        text = _native.analyze(
            trace,
            folder,
            format=format,
            resimulate=resimulate,
            factor=factor,
            jobs=jobs,
            quiet=quiet,
            **options,
        )
        views = {}
        for name in sorted(os.listdir(folder)):
            if name.endswith(".csv") and name != "critical_path.csv":
                views[name[: -len(".csv")]] = _csv(os.path.join(folder, name))
        path = _csv(os.path.join(folder, "critical_path.csv"))
    return Analysis(result=json.loads(text), critical_path=path, views=views)


def lb(
    trace: "Trace | str | os.PathLike",
    *,
    strategies: Optional[str] = None,
    at: "str | int | None" = None,
    migrate_bytes: "int | str | None" = None,
    format: Optional[str] = None,
    quiet: bool = True,
    **options,
):
    """Compares load balancers as ``whatif lb`` does: one row per strategy (pre- and post-LB
    iteration times, makespan, idle fraction, max/avg load, migrations, cut, hop-bytes) as a
    DataFrame. ``strategies`` ("greedy,refine"; default: all), ``at`` ("start" or an
    iteration; default: the first sync point), ``migrate_bytes``, and ``replay``'s machine
    options."""
    if isinstance(trace, os.PathLike):
        trace = os.fspath(trace)
    text = _native.lb(
        trace,
        strategies=strategies,
        at=at,
        migrate_bytes=migrate_bytes,
        format=format,
        quiet=quiet,
        **options,
    )
    return _pandas().DataFrame(json.loads(text))


@dataclass
class Sweep:
    """A study's results: ``results`` (results.csv, one row per point), ``manifest``
    (manifest.json: the study, its axes) and, when kept, the output folder."""

    results: Any
    manifest: Dict[str, Any]
    out: Optional[str] = None


def sweep(
    study: "str | os.PathLike",
    *,
    out: "str | os.PathLike | None" = None,
    jobs: Optional[int] = None,
    shard: Optional[str] = None,
    point: Optional[int] = None,
    report: bool = False,
    force: bool = False,
    quiet: bool = True,
) -> Sweep:
    """Runs a study file as ``whatif sweep`` does (``shard="0/4"`` or ``point=`` for a
    part): results byte-identical to the CLI's whatever ``jobs``. ``out`` keeps the folder
    (``report=True`` adds report.html); without it the results are read from a temporary
    one."""
    with tempfile.TemporaryDirectory(prefix="whatif-") as tmp:
        folder = os.fspath(out) if out is not None else os.path.join(tmp, "sweep")
        _native.sweep(
            os.fspath(study),
            folder,
            jobs=jobs,
            shard=shard,
            point=point,
            report=report,
            force=force,
            quiet=quiet,
        )
        results = _csv(os.path.join(folder, "results.csv"))
        with open(os.path.join(folder, "manifest.json")) as f:
            manifest = json.load(f)
    return Sweep(results=results, manifest=manifest, out=None if out is None else folder)


@dataclass
class Prediction:
    """A scaling prediction (``whatif predict``): ``rows`` one per PE count (small runs, then
    targets: simulated and analytic seconds, the 95% band, whether the simulation leaves it
    and why), ``model_text`` the fitted model, ``result`` the whole ``--json`` object."""

    result: Dict[str, Any]
    rows: Any = None

    @property
    def model_text(self) -> str:
        return self.result["model_text"]


def predict(
    program: str,
    *,
    small,
    at,
    sets: Optional[Dict[str, Any]] = None,
    net: Optional[str] = None,
    machine: Optional[str] = None,
    metric: str = "makespan",
    simulate: bool = True,
    max_memory: "int | str | None" = None,
    quiet: bool = True,
) -> Prediction:
    """Predicts how a built-in program (``whatif emulate``'s) scales, as ``whatif predict``
    does: emulated and replayed at the ``small`` PE counts, Extra-P's normal form fitted,
    the ``at`` counts predicted with a band and, unless ``simulate=False``, emulated there
    to check. ``sets`` are the program's parameters (``{"steps": 3}``); ``net`` or
    ``machine`` ("paragon") the network (default ``latency:lat=1us``)."""
    text = _native.predict(
        program,
        list(small),
        list(at),
        sets=sets,
        net=net,
        machine=machine,
        metric=metric,
        simulate=simulate,
        max_memory=max_memory,
        quiet=quiet,
    )
    result = json.loads(text)
    return Prediction(result=result, rows=_pandas().DataFrame(result["rows"]))
