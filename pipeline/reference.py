"""The versioned GPU reference table (``data/reference/gpu_reference.csv``; DESIGN.md §3)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

from pipeline.paths import REFERENCE_DIR

REFERENCE_SCHEMA = pa.schema(
    [
        ("hw", pa.string()),
        ("display_name", pa.string()),
        ("power_kw", pa.float64()),
        ("hyperscaler_usd_per_gpu_hour", pa.float64()),
        ("neocloud_usd_per_gpu_hour", pa.float64()),
        ("rental_usd_per_gpu_hour", pa.float64()),
        ("reference_version", pa.string()),
    ]
)


def load_gpu_reference(path: Path = REFERENCE_DIR / "gpu_reference.csv") -> pa.Table:
    """One row per GPU key: all-in power (kW per GPU) and $/GPU-hour for the hyperscaler, neocloud and rental tiers.

    Raises:
        ValueError: a missing column, a duplicate GPU key, or a non-positive power or price (naming the GPU).
    """
    table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(column_types=REFERENCE_SCHEMA))
    missing = set(REFERENCE_SCHEMA.names) - set(table.column_names)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    table = table.select(REFERENCE_SCHEMA.names)
    keys = table.column("hw").to_pylist()
    if len(set(keys)) != len(keys):
        raise ValueError(f"{path}: duplicate hw keys")
    for row in table.to_pylist():
        for column in ("power_kw", "hyperscaler_usd_per_gpu_hour", "neocloud_usd_per_gpu_hour",
                       "rental_usd_per_gpu_hour"):
            if row[column] is None or row[column] <= 0:
                raise ValueError(f"{path}: {row['hw']}: {column} must be > 0, got {row[column]}")
    return table
