"""Peak memory of the benchmark's process and the processes it starts (the parse pool's fork server and workers).

Why not ``getrusage(RUSAGE_CHILDREN).ru_maxrss``: on Linux a child started by fork + exec (the fork server is)
reports as its peak the RSS its parent had when it forked, because the kernel folds the pre-exec copy of the
parent's address space into the child's ``maxrss`` at exec. A 2 GiB process that starts a 100 MiB fork server
then reads ~2 GiB of children, and "process + largest child" counts the process twice. Each live descendant's
``VmHWM`` (``/proc/<pid>/status``) is its own high-water mark since its exec, so the children are sampled there.
"""

from __future__ import annotations

import os
import resource
import threading
from pathlib import Path

SAMPLE_INTERVAL_S = 0.05  # ~0.3 ms a sample: under 1 % of a core


def _descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (``/proc/<pid>/task/*/children``, recursively)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = Path(f"/proc/{parent}/task/{task}/children").read_text().split()
            except OSError:
                continue
            found += map(int, children)
            todo += map(int, children)
    return found


def _status_kib(pid: int) -> tuple[int, int]:
    """``(VmRSS, VmHWM)`` of ``pid`` in KiB; (0, 0) when it has exited."""
    rss = hwm = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return rss, hwm


class PeakMemory:
    """Samples this process's descendants every ``SAMPLE_INTERVAL_S`` on a daemon thread, from ``start()``.

    ``peak_mib()`` is this process's own peak RSS (``ru_maxrss``, exact) plus the children's peak: the largest of
    the sampled sums of every live descendant's RSS and any one descendant's ``VmHWM``. An upper bound of what
    was resident at once (the two peaks need not coincide; pages a forked worker shares with its fork server are
    counted in each), never the parent's memory again. Linux only (``/proc``).

    ``step_peak_mib()`` is the tighter bound the benchmark's target reads: the caller marks the end of each step
    (``next_step``), and only a step's own peak and its children's peak are added together, so the parse pool's
    workers, gone or idle after the parse, are not added to a later step's peak of the process.
    """

    def __init__(self) -> None:
        self._children_kib = 0
        self._step_children_kib = 0  # the children's peak since the current step began (``next_step``)
        self._step_peak_kib = 0  # the largest own + children peak of one step so far
        self._own_kib = 0  # this process's peak over the steps ended so far (clear_refs resets ru_maxrss too)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-memory", daemon=True)

    def start(self) -> PeakMemory:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> None:
        """One sample now (the thread calls it; callers may too, e.g. just before reading the peak)."""
        readings = [_status_kib(pid) for pid in _descendants(os.getpid())]
        together = sum(rss for rss, _ in readings)
        largest = max((hwm for _, hwm in readings), default=0)
        with self._lock:
            self._children_kib = max(self._children_kib, together, largest)
            self._step_children_kib = max(self._step_children_kib, together, largest)

    def next_step(self) -> float:
        """End the current step (the benchmark's rows: the parse, each asset) and begin the next: the step's own
        peak (this process's ``VmHWM``) plus its children's peak count towards ``step_peak_mib``, then both are
        reset (``/proc/<pid>/clear_refs`` ``5`` sets ``VmHWM`` back to the current RSS; Linux 4.0+).

        Returns:
            The ended step's own peak plus its children's (MiB).
        """
        self.sample()
        with self._lock:
            own = _status_kib(os.getpid())[1]
            self._own_kib = max(self._own_kib, own)
            ended = own + self._step_children_kib
            self._step_peak_kib = max(self._step_peak_kib, ended)
            for pid in (os.getpid(), *_descendants(os.getpid())):
                try:
                    Path(f"/proc/{pid}/clear_refs").write_text("5")
                except OSError:  # a child that exited, or one we may not reset: its peak stays, an over-count
                    pass
            self._step_children_kib = 0
        return ended / 1024

    def step_peak_mib(self) -> float:
        """The largest own + children peak of any one step ended so far (MiB): still an upper bound of what was
        resident at once (the two peaks of a step need not coincide), but the parse's workers are no longer added
        to the process's peak of a later step, which they never lived beside."""
        with self._lock:
            return self._step_peak_kib / 1024

    def children_mib(self) -> float:
        """The children's peak so far (MiB)."""
        self.sample()
        return self._children_kib / 1024

    def own_mib(self) -> float:
        """This process's peak RSS so far (MiB): ``ru_maxrss``, and the peaks of the steps ``next_step`` ended
        (resetting ``VmHWM`` resets ``ru_maxrss`` with it)."""
        own = max(self._own_kib, _status_kib(os.getpid())[1], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        return own / 1024

    def peak_mib(self) -> float:
        """Own peak plus the children's peak (MiB)."""
        return self.own_mib() + self.children_mib()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            self.sample()
