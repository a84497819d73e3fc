"""The metadata an asset attaches does not keep the asset's tables alive after it returns."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A fresh interpreter: Dagster compiles each metadata record class on its first instance, so only a process in which
# no metadata was built yet shows whether the first instance pins its caller's tables (pipeline/defs/ui.py).
SCRIPT = """
import gc
import pyarrow as pa
from pipeline.defs.ui import table_metadata

def asset_body():
    table = pa.table({"model": pa.array(["m"] * 1_000_000), "conc": pa.array(range(1_000_000))})
    return table_metadata(table, path=None, preview_columns=["model", "conc"])

metadata = asset_body()
gc.collect()
print(pa.total_allocated_bytes())
"""


def test_table_metadata_does_not_pin_the_table():
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    still_allocated = int(done.stdout.split()[-1])
    # the table is ~13 MB of Arrow buffers; nothing of it may outlive the asset body
    assert still_allocated == 0
