"""Skyward's benchmark suite: every case for Skyward on `sky.Local()` and for its peers, in one run.

    python benchmarks/run.py [--quick] [--only NAME[,NAME]] [--repeat N] [--json PATH] [--peers A,B]

Cases: start, latency, throughput, payload, joblib, ssh, wan, relay, collections, floor, defaults (see the
case_*.py modules). Every figure is measured `--repeat` times per framework and the table shows the
medians; the JSON file keeps every run. Peers (Ray, Dask, loky, ProcessPoolExecutor) are optional: one
that is not installed shows "missing" (`pip install -r benchmarks/requirements.txt`), one left out with
--peers shows "skipped". Nothing here asserts a timing; the targets section only reports.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# Workers of every framework import bench_tasks: put this folder on their path and on ours.
sys.path.insert(0, str(HERE))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)

import case_bootstrap  # noqa: E402
import case_collections  # noqa: E402
import case_defaults  # noqa: E402
import case_floor  # noqa: E402
import case_joblib  # noqa: E402
import case_latency  # noqa: E402
import case_linger  # noqa: E402
import case_payload  # noqa: E402
import case_relay  # noqa: E402
import case_ssh  # noqa: E402
import case_start  # noqa: E402
import case_throughput  # noqa: E402
import case_wan  # noqa: E402
import peers  # noqa: E402
from common import FAILED, MISSING, NOT_APPLICABLE, SKIPPED, Config, Figure  # noqa: E402

#: Cases that share one warm pool of 2 per framework.
WARM_CASES = (case_latency, case_throughput, case_payload)
CASES = {
    c.NAME: c
    for c in (
        case_start, *WARM_CASES, case_joblib, case_ssh, case_wan, case_relay, case_bootstrap, case_linger,
        case_collections, case_floor, case_defaults,
    )
}
ORDER = ("start", "latency", "throughput", "payload", "joblib", "ssh", "wan", "relay", "bootstrap", "linger",
         "collections", "floor", "defaults")


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer calls (a smoke run)")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help=f"run only these cases (repeatable or comma-separated): {', '.join(ORDER)}",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the table shows the median")
    parser.add_argument("--json", type=Path, default=HERE / "latest.json", help="where to write every run")
    parser.add_argument(
        "--peers",
        default=",".join(peers.NAMES),
        help="frameworks to run (comma-separated); the others show 'skipped'",
    )
    args = parser.parse_args(argv)
    only = [n.strip() for item in args.only for n in item.split(",") if n.strip()]
    unknown = sorted(set(only) - set(ORDER))
    if unknown:
        parser.error(f"unknown case {', '.join(unknown)}; choose from {', '.join(ORDER)}")
    args.cases = [n for n in ORDER if not only or n in only]
    chosen = [n.strip() for n in args.peers.split(",") if n.strip()]
    try:
        args.peer_names = [peers.by_name(n).name for n in chosen]
    except KeyError as exc:
        parser.error(f"unknown peer {exc}; choose from {', '.join(peers.NAMES)}")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def peer_status(peer_class: type[peers.Peer], selected: list[str]) -> str | None:
    """None when the peer runs; otherwise the mark its cells show."""
    if peer_class.name not in selected:
        return SKIPPED
    if not peer_class().available():
        return MISSING
    return None


def mark(figures: list[Figure], peer: str, value: str) -> None:
    for figure in figures:
        figure.values[peer] = value


def run_start(config: Config, selected: list[str]) -> list[Figure]:
    figures = case_start.figures()
    for peer_class in peers.ALL:
        status = peer_status(peer_class, selected)
        if status is not None:
            mark(figures, peer_class.name, status)
            continue
        log(f"start: {peer_class.name}")
        try:
            for _ in range(config.repeat):
                for key, value in case_start.measure(peer_class, config).items():
                    _figure(figures, key).add(peer_class.name, value)
        except Exception:  # noqa: BLE001 - one failing peer must not end the run
            traceback.print_exc()
            mark(figures, peer_class.name, FAILED)
    return figures


def run_warm(cases: list, config: Config, selected: list[str]) -> list[Figure]:
    """The cases that need a warm pool of 2: one pool per framework serves them all."""
    figures = {case.NAME: case.figures() for case in cases}
    for peer_class in peers.ALL:
        status = peer_status(peer_class, selected)
        if status is not None:
            for rows in figures.values():
                mark(rows, peer_class.name, status)
            continue
        peer = peer_class()
        try:
            log(f"{peer_class.name}: starting a pool of 2")
            peer.start(2)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            for rows in figures.values():
                mark(rows, peer_class.name, FAILED)
            continue
        try:
            for case in cases:
                log(f"{case.NAME}: {peer_class.name}")
                try:
                    case.warm_up(peer, config)
                    for _ in range(config.repeat):
                        for key, value in case.measure(peer, config).items():
                            _figure(figures[case.NAME], key).add(peer_class.name, value)
                except Exception:  # noqa: BLE001
                    traceback.print_exc()
                    mark(figures[case.NAME], peer_class.name, FAILED)
        finally:
            try:
                peer.stop()
            except Exception:  # noqa: BLE001
                traceback.print_exc()
    return [f for case in cases for f in figures[case.NAME]]


def run_joblib(config: Config, selected: list[str]) -> list[Figure]:
    figures = case_joblib.figures()
    for peer_class in peers.ALL:
        name = peer_class.name
        if name not in case_joblib.PEERS:
            mark(figures, name, NOT_APPLICABLE)
            continue
        status = peer_status(peer_class, selected)
        if status is None and not case_joblib.available():
            status = MISSING
        if status is not None:
            mark(figures, name, status)
            continue
        log(f"joblib: {name}")
        try:
            for value in case_joblib.measure(name, config):
                figures[0].add(name, value)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            mark(figures, name, FAILED)
    return figures


def run_skyward_only(case: Any, what: str, config: Config, selected: list[str]) -> list[Figure]:
    """A case only Skyward runs (its `PEERS`): the others are marked not applicable, and a case whose
    `available()` says no (ssh without sshd) is marked missing."""
    figures = case.figures()
    for peer_class in peers.ALL:
        if peer_class.name not in case.PEERS:
            mark(figures, peer_class.name, NOT_APPLICABLE)
    status = peer_status(peers.by_name("Skyward"), selected)
    if status is None and not getattr(case, "available", lambda: True)():
        status = MISSING
    if status is not None:
        mark(figures, "Skyward", status)
        return figures
    log(f"{case.NAME}: {what}")
    try:
        for key, values in case.measure(config).items():
            for value in values:
                _figure(figures, key).add("Skyward", value)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        mark(figures, "Skyward", FAILED)
    return figures


#: The cases only Skyward runs (their peers have no SSH, no cloud, no collections), in the order
#: they run, each with what the log line says it measures.
SKYWARD_ONLY = (
    (case_ssh, "Skyward over OpenSSH on loopback"),
    (case_wan, "Skyward over OpenSSH behind a delaying proxy (50 and 150 ms round trips)"),
    (case_relay, "a 100 MB broadcast to 4 SSH nodes over a 100 Mbit/s client uplink"),
    (case_bootstrap, "cold SSH pool vs its uv install floor"),
    (case_linger, "Skyward on the fake RunPod, parked pods against new ones"),
    (case_collections, "Skyward's distributed collections on Local"),
    (case_defaults, "default console and logging vs quiet, on Local"),
)


def run_floor(config: Config) -> list[Figure]:
    figures = case_floor.figures()
    log("floor")
    for _ in range(config.repeat):
        for key, value in case_floor.measure(config).items():
            _figure(figures, key).add("floor", value)
    return figures


def _figure(figures: list[Figure], key: str) -> Figure:
    return next(f for f in figures if f.key == key)


# -- report -----------------------------------------------------------------------------------------------


def fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def cell(figure: Figure, peer: str) -> str:
    mark_ = figure.mark(peer)
    return mark_ if mark_ is not None else fmt(figure.median(peer))


def table(rows: list[list[str]], left: int = 1) -> str:
    """A Markdown table; the first `left` columns are text (left-aligned), the rest numbers."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        pairs = enumerate(zip(row, widths, strict=True))
        cells = (c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in pairs)
        lines.append("| " + " | ".join(cells) + " |")
        if n == 0:
            lines.append(
                "|" + "|".join("-" * (w + 1) + ("-" if i < left else ":") for i, w in enumerate(widths)) + "|"
            )
    return "\n".join(lines)


def frameworks_table(figures: list[Figure]) -> str:
    others = [n for n in peers.NAMES if n != "Skyward"]
    rows = [["figure", *peers.NAMES, "vs best peer"]]
    for figure in figures:
        ratio = figure.advantage("Skyward", others)
        rows.append(
            [figure.label, *(cell(figure, n) for n in peers.NAMES), "-" if ratio is None else f"{ratio:.2f}x"]
        )
    return table(rows)


def floor_table(figures: list[Figure]) -> str:
    return table([["physical floor", "value"], *([f.label, cell(f, "floor")] for f in figures)])


#: The goal of a row with no target, shown for comparison with the one above it.
CONTEXT = "(context, no target)"


def targets(by_key: dict[str, Figure]) -> list[dict[str, object]]:
    """The issue's targets, checked against this run's medians (reported, never asserted)."""

    def m(key: str, peer: str = "Skyward") -> float | None:
        figure = by_key.get(key)
        if figure is None:
            return None
        return figure.median("floor" if key.startswith("floor.") else peer)

    def row(
        name: str, goal: str, value: float | None, met: bool | None, unit: str = "x"
    ) -> dict[str, object]:
        shown = "-" if value is None else f"{value:.2f}{unit}"
        if goal == CONTEXT:
            state = "n/a" if value is None else "-"  # no target, shown next to one for comparison
        else:
            state = "n/a" if met is None else ("met" if met else "MISSED")
        return {"target": name, "goal": goal, "measured": shown, "status": state}

    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b else None

    rows = []
    sky4 = m("start.pool4")
    r = ratio(sky4, m("start.pool4", "loky"))
    rows.append(row("start: pool of 4 vs loky", "<= 2x loky", r, None if r is None else r <= 2))
    for peer in ("Ray", "Dask"):
        r = ratio(m("start.pool4", peer), sky4)
        rows.append(
            row(f"start: pool of 4 vs {peer}", f">= 3x faster than {peer}", r, None if r is None else r >= 3)
        )
    p50 = m("latency.p50")
    # Both floors measured beside the calls, in the same seconds (see case_latency); the second is
    # the floor the issue's own figures describe (see case_floor).
    beside = (("latency.vs_pipe", "pipe ping-pong"), ("latency.vs_mp_pipe", "multiprocessing.Pipe ping-pong"))
    for key, floor in beside:
        r = m(key)
        rows.append(row(f"latency p50 vs {floor}", "<= 3x the floor", r, None if r is None else r <= 3))
    # No target: how far the full task path is from the smallest Python protocol (see case_floor).
    rows.append(row("latency p50 vs pickled call ping-pong", CONTEXT, ratio(p50, m("floor.call_p50")), None))
    peer_p50 = [v for v in (m("latency.p50", p) for p in peers.NAMES[1:]) if v is not None]
    r = ratio(min(peer_p50), p50) if peer_p50 and p50 else None
    rows.append(row("latency p50 vs every peer", "lower than all (> 1x)", r, None if r is None else r > 1))
    peer_tput = [v for v in (m("throughput.tasks_per_s", p) for p in peers.NAMES[1:]) if v is not None]
    r = ratio(m("throughput.tasks_per_s"), max(peer_tput)) if peer_tput else None
    rows.append(row("throughput vs best peer", ">= 5x", r, None if r is None else r >= 5))
    for key, way in (("payload.to_worker", "to worker"), ("payload.from_worker", "from worker")):
        r = ratio(m(key), m("floor.pipe"))
        rows.append(
            row(f"payload {way} vs pipe transfer", ">= 0.70 of the floor", r, None if r is None else r >= 0.7)
        )
        theirs = [v for v in (m(key, p) for p in peers.NAMES[1:]) if v is not None]
        r = ratio(m(key), max(theirs)) if theirs else None
        rows.append(row(f"payload {way} vs every peer", "above all (> 1x)", r, None if r is None else r > 1))
    r = ratio(m("joblib.wall"), m("joblib.wall", "loky"))
    rows.append(row("joblib vs loky backend", "<= 1.2x loky's time", r, None if r is None else r <= 1.2))
    p50 = m("ssh.p50")
    rows.append(row("ssh loopback: no-op p50", "under 1 ms", p50, None if p50 is None else p50 < 1000, " us"))
    warm = m("ssh.warm_start_s")
    met = None if warm is None else warm < 1
    rows.append(row("ssh: warm 2-host pool ready", "under 1 s", warm, met, " s"))
    adopted = m("linger.adopted_pool_s")
    met = None if adopted is None else adopted < 1.5
    rows.append(row("cloud: 2-node pool ready on parked machines", "about 1 s (< 1.5 s)", adopted, met, " s"))
    r = m("bootstrap.vs_floor")
    rows.append(row("ssh: cold pool vs uv install floor", "<= 1.3x", r, None if r is None else r <= 1.3))
    r = m("bootstrap.overlap")
    rows.append(row("ssh: cold nodes bootstrap in parallel (overlap)", CONTEXT, r, None, ""))
    vs_floor = m("ssh.vs_floor")
    met = None if vs_floor is None else vs_floor <= 2
    rows.append(row("ssh: no-op p50 vs channel echo", "<= 2x the floor", vs_floor, met, "x"))
    r = m("ssh.vs_floor_unpadded")
    rows.append(row("ssh: no-op p50 vs echo without IGNORE padding", CONTEXT, r, None, "x"))
    r = m("ssh.local_vs_ssh")
    rows.append(row("ssh: Local tasks/s vs ssh tasks/s", "<= 2x", r, None if r is None else r <= 2))
    r = m("ssh.payload_vs_floor")
    name = "ssh: 100 MB to each of 2 nodes vs raw channels"
    rows.append(row(name, ">= 0.70 of the floor", r, None if r is None else r >= 0.7))
    for rtt in case_wan.rtts_ms():
        for what, goal in (("noop", 1.2), ("map", 5.0), ("gather", 5.0)):
            r = m(f"wan{rtt}.{what}")
            name = f"wan {rtt} ms: {_WAN_NAMES[what]}"
            rows.append(row(name, f"<= {goal:g} RTT", r, None if r is None else r <= goal, " RTT"))
    r = m("relay.ratio")
    name = f"relay: {case_relay.SIZE_MB} MB `@` to {case_relay.NODES} nodes vs one copy, capped uplink"
    rows.append(row(name, "<= 1.5x", r, None if r is None else r <= 1.5))
    r = m("collections.vs_noop")
    name = "collections: strong increment p50 vs no-op round trip"
    rows.append(row(name, "<= 2x", r, None if r is None else r <= 2))
    r = m("collections.eventual_vs_strong")
    name = "collections: eventual vs strong increments/s"
    rows.append(row(name, ">= 10x", r, None if r is None else r >= 10))
    for mode in case_defaults.DEFAULTS:
        r = m(f"defaults.p50_{mode}_vs_quiet")
        name = f"defaults ({mode}): no-op p50 vs console=False, logging=False"
        rows.append(row(name, "within 10% (<= 1.10x)", r, None if r is None else r <= 1.1))
        r = m(f"defaults.tps_{mode}_vs_quiet")
        name = f"defaults ({mode}): tasks/s vs console=False, logging=False"
        rows.append(row(name, "within 10% (>= 0.90x)", r, None if r is None else r >= 0.9))
    for executor in ("thread", "process"):
        total = m(f"collections.total_{executor}")
        met = None if total is None else total == case_collections.TOTAL
        name = f"collections: 10,000 increments, 4 nodes, {executor}"
        rows.append(row(name, "exactly 10,000", total, met, ""))
    return rows


_WAN_NAMES = {
    "noop": "one >> no-op",
    "map": f"pool.map of {case_wan.MAP_ITEMS} no-ops",
    "gather": f"sky.gather of {case_wan.GATHER_ITEMS} no-ops",
}


def machine() -> dict[str, object]:
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average": os.getloadavg(),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = Config(quick=args.quick, repeat=args.repeat)
    about = machine()
    log(
        f"cases: {', '.join(args.cases)}; repeat {config.repeat}{'; quick' if config.quick else ''}; "
        f"{about['cpus']} cpus, load {about['load_average'][0]:.1f}"
    )
    began = time.perf_counter()
    floor: list[Figure] = []
    results: list[Figure] = []
    if "floor" in args.cases:  # first: it forks, which is only safe before any framework has threads
        floor = run_floor(config)
    if "start" in args.cases:
        results += run_start(config, args.peer_names)
    warm = [CASES[n] for n in args.cases if CASES[n] in WARM_CASES]
    if warm:
        results += run_warm(warm, config, args.peer_names)
    if "joblib" in args.cases:
        results += run_joblib(config, args.peer_names)
    for case, what in SKYWARD_ONLY:
        if case.NAME in args.cases:
            results += run_skyward_only(case, what, config, args.peer_names)
    by_key = {f.key: f for f in (*results, *floor)}
    goals = targets(by_key)
    elapsed = time.perf_counter() - began

    print(
        f"\nSkyward benchmarks: medians of {config.repeat} run(s){' (--quick)' if config.quick else ''}, "
        f"{about['cpus']} cpus, Python {about['python']}, {elapsed:.0f} s"
    )
    if results:
        print("\n" + frameworks_table(results))
        print("\nvs best peer: how many times better Skyward is than the best peer (> 1: Skyward wins).")
    if floor:
        print("\n" + floor_table(floor))
    shown = [g for g in goals if g["status"] != "n/a"]
    if shown:
        print(
            "\n"
            + table(
                [
                    ["target", "goal", "measured", "status"],
                    *([str(g[k]) for k in ("target", "goal", "measured", "status")] for g in shown),
                ],
                left=2,
            )
        )

    about["load_average_end"] = os.getloadavg()
    report = {
        "machine": about,
        "config": {
            "quick": config.quick,
            "repeat": config.repeat,
            "cases": args.cases,
            "peers": args.peer_names,
        },
        "seconds": elapsed,
        "figures": [_as_json(f) for f in results],
        "floor": [_as_json(f) for f in floor],
        "targets": goals,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.json}")
    return 0


def _as_json(figure: Figure) -> dict[str, object]:
    values: dict[str, object] = {}
    for name, runs in figure.values.items():
        if isinstance(runs, str):
            values[name] = runs
        else:
            values[name] = {"median": figure.median(name), "runs": runs}
    others = [n for n in peers.NAMES if n != "Skyward"]
    return {
        "key": figure.key,
        "label": figure.label,
        "unit": figure.unit,
        "better": figure.better,
        "values": values,
        "vs_best_peer": figure.advantage("Skyward", others),
    }


if __name__ == "__main__":
    sys.exit(main())
