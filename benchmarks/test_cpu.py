"""Where the test suite's time goes: a pytest plugin that counts each test's wall time and CPU seconds (its own
process's and those of the child processes it waited for), and a summary of the largest tests and files.

    python -m pytest -q -n 2 -p benchmarks.test_cpu                     # writes /tmp/test-cpu/<worker>.jsonl
    python benchmarks/test_cpu.py [/tmp/test-cpu] [--top 20]             # the summary

``TEST_CPU_DIR`` chooses the folder (default ``/tmp/test-cpu``; emptied by the controlling process when the session
starts). A row per test phase (setup, call, teardown), so a module fixture's cost lands on the first test that
uses it, as the suite pays it. CPU is ``resource.getrusage``: ``RUSAGE_SELF`` (user + system) of the worker and
``RUSAGE_CHILDREN`` of the children it has waited for, so a child still running when a test ends is counted by
the test that reaps it; threads' CPU is in ``RUSAGE_SELF``.

With ``-n N``, N workers share the machine's cores: the suite's wall time cannot be below its total CPU divided by
the cores, however the tests are dealt out, which is the figure the summary prints beside the sum.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

DEFAULT_DIR = Path("/tmp/test-cpu")


def _folder() -> Path:
    return Path(os.environ.get("TEST_CPU_DIR", DEFAULT_DIR))


def _cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def pytest_configure(config: pytest.Config) -> None:
    """Empty the folder once, in the controlling process (an xdist worker has ``workerinput``)."""
    if not hasattr(config, "workerinput"):
        shutil.rmtree(_folder(), ignore_errors=True)
    _folder().mkdir(parents=True, exist_ok=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem):
    """Time the whole protocol of one test (setup, call, teardown) and append one JSON line."""
    wall, (own, children) = time.perf_counter(), _cpu()
    yield
    own_after, children_after = _cpu()
    worker = getattr(item.config, "workerinput", {}).get("workerid", "main")
    row = {"test": item.nodeid, "wall": time.perf_counter() - wall, "cpu_own": own_after - own,
           "cpu_children": children_after - children}
    with open(_folder() / f"{worker}.jsonl", "a") as out:
        out.write(json.dumps(row) + "\n")


def summary(folder: Path, top: int, cores: int | None = None) -> str:
    """The table: totals (with the least wall time ``cores`` cores need for them, default this machine's), then
    the ``top`` tests and the ``top`` files by CPU (own + children)."""
    cores = cores or os.cpu_count() or 1
    rows = [json.loads(line) for path in sorted(folder.glob("*.jsonl")) for line in path.read_text().splitlines()]
    if not rows:
        return f"no rows under {folder}"

    def cpu(row: dict) -> float:
        return row["cpu_own"] + row["cpu_children"]

    total = sum(cpu(r) for r in rows)
    head = (f"{len(rows)} tests, {sum(r['wall'] for r in rows):.1f} s of wall in the tests, {total:.1f} CPU-s "
            f"({sum(r['cpu_own'] for r in rows):.1f} own, {sum(r['cpu_children'] for r in rows):.1f} in child "
            f"processes); on {cores} cores no less than {total / cores:.1f} s")
    lines = [head, "", f"the {top} largest tests (CPU-s own + children, wall s):"]
    for r in sorted(rows, key=cpu, reverse=True)[:top]:
        lines.append(f"  {cpu(r):6.1f} {r['wall']:6.1f}  {r['test']}")
    files: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for r in rows:
        f = files[r["test"].split("::")[0]]
        f[0] += 1
        f[1] += r["cpu_own"]
        f[2] += r["cpu_children"]
        f[3] += r["wall"]
    lines += ["", f"the {top} largest files (tests, CPU-s own, CPU-s children, wall s):"]
    for name, (n, own, children, wall) in sorted(files.items(), key=lambda kv: -(kv[1][1] + kv[1][2]))[:top]:
        lines.append(f"  {n:4d} {own:7.1f} {children:7.1f} {wall:7.1f}  {name}")
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Summarize a `-p benchmarks.test_cpu` pytest run.")
    parser.add_argument("folder", nargs="?", type=Path, default=_folder())
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    print(summary(args.folder, args.top))
    sys.exit(0)
