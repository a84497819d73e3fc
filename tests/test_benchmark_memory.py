"""The benchmark's peak-memory measure (benchmarks/memory.py): a child started by fork + exec is charged its own
memory, not its parent's, and a child that does grow is seen."""

import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.memory import PeakMemory  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")

MIB = 2**20


def _run_child(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], check=True)


def _already_running_mib() -> float:
    """What this process's children hold before the test's own (an earlier test's parse fork server, say)."""
    return PeakMemory().children_mib()


def test_a_small_child_of_a_big_process_is_not_charged_the_parents_memory():
    held = bytearray(400 * MIB)
    held[::4096] = b"\1" * len(held[::4096])  # resident, not just reserved
    baseline = _already_running_mib()
    memory = PeakMemory().start()
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        _run_child("import time; time.sleep(0.3)")
        rusage_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        children = memory.children_mib()
    finally:
        memory.stop()
    assert held
    # what the kernel's rusage says of that child (the old measure): at least the parent's 400 MiB
    assert rusage_children >= 400 or before >= 400
    assert children - baseline < 100, f"a sleeping Python child charged {children - baseline:.0f} MiB"


def test_a_child_that_grows_is_seen_at_its_peak():
    baseline = _already_running_mib()
    memory = PeakMemory().start()
    try:
        _run_child("import time\nb = bytearray(300 * 2**20)\nb[::4096] = b'\\1' * len(b[::4096])\ntime.sleep(0.3)")
        time.sleep(0.05)
        children = memory.children_mib()
    finally:
        memory.stop()
    assert 300 <= children - baseline < 400
    assert memory.peak_mib() >= memory.own_mib() + 300
