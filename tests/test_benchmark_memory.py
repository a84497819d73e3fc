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


def _resident_mib() -> float:
    """This process's resident memory now (``VmRSS``, MiB)."""
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


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


def test_a_step_peak_adds_a_childs_peak_only_to_the_step_it_ran_in():
    """The process peaks in one step and a child in another: the step-wise peak is the larger of the two steps,
    the whole-run sum counts both; a spike between two samples is still caught (VmHWM, reset per step). Children
    this process already had (an earlier test's parse fork server) are in every step: ``baseline``."""
    baseline = _already_running_mib()
    memory = PeakMemory().start()
    try:
        memory.next_step()
        rest = _resident_mib()  # the process at rest, before its spike
        spike = bytearray(300 * MIB)
        spike[::4096] = b"\1" * len(spike[::4096])
        del spike  # gone before any caller looks: only the high-water mark saw it
        spike_step = memory.next_step()
        quiet = memory.step_peak_mib()
        _run_child("import time\nb = bytearray(250 * 2**20)\nb[::4096] = b'\\1' * len(b[::4096])\ntime.sleep(0.3)")
        time.sleep(0.05)
        child_step = memory.next_step()
        stepwise, own, children = memory.step_peak_mib(), memory.own_mib(), memory.children_mib()
    finally:
        memory.stop()
    assert quiet >= 300  # the spike's step
    assert children >= 250 and own >= 300
    # the child's step holds the process at its resting size plus the child, not the spike plus the child
    assert stepwise < own + children - 200, (stepwise, own, children)
    assert stepwise >= max(quiet, children)
    # what each step reports for its own row: the spike's step the spike, the child's step the child on top of a
    # process back at rest
    assert rest + 290 <= spike_step <= rest + baseline + 350, (spike_step, rest, baseline)
    assert children <= child_step <= rest + children + 50, (child_step, rest, children)
