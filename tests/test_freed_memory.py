"""``pipeline.io.storage.release_freed_memory``: memory the C heap kept after Python freed it goes back to the OS
(glibc's ``malloc_trim``), as Arrow's pool's does."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux /proc")

# 200,000 objects of about 1 KB (malloc's heap, not pymalloc's arenas nor mmap), one in 64 kept so that the freed
# ones sit between live ones: free() alone cannot shrink the heap past them
SCRIPT = """
import json, os
from pipeline.io.storage import release_freed_memory

def resident_mib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

start = resident_mib()
blocks = [bytes(1000) + bytes([i % 256]) for i in range(200_000)]
held = resident_mib() - start
kept = blocks[::64]
del blocks
freed = resident_mib() - start
release_freed_memory()
print(json.dumps({"held": held, "freed": freed, "released": resident_mib() - start}))
"""


def test_memory_the_c_heap_kept_after_a_free_is_released():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=120)
    mib = json.loads(done.stdout)
    assert mib["held"] > 150 and mib["freed"] > 150, mib  # freed by Python, still resident
    assert mib["released"] < 50, mib
