"""One GPU-count rule (``pipeline.ingest.gpus``): the Python function, the Arrow column and the metrics' SQL view
``run_gpu_counts`` give the same count on every combination of absent, zero and positive counts."""

import itertools

import duckdb
import pyarrow as pa
import pytest

from pipeline.ingest.gpus import gpu_count, gpu_count_column, run_gpus
from pipeline.ingest.parsers.sglang import _gpus as sglang_role_gpus
from pipeline.ingest.schema import RUN_SCHEMA
from pipeline.io.paths import sql_text

COUNTS = (None, 0, 1, 3)


def _grid() -> list[dict]:
    rows = []
    for disagg, tp, pp, pcp, prefill, decode in itertools.product((None, False, True), COUNTS, COUNTS, COUNTS,
                                                                   (None, 2), (None, 5)):
        rows.append({"run_id": f"r{len(rows)}", "disagg": disagg, "tp": tp, "pp": pp, "pcp": pcp,
                     "num_prefill_gpu": prefill, "num_decode_gpu": decode})
    return rows


def _by_hand(row: dict) -> int | None:
    if row["disagg"]:
        return None if row["num_prefill_gpu"] is None or row["num_decode_gpu"] is None else \
            row["num_prefill_gpu"] + row["num_decode_gpu"]
    if row["tp"] is None:
        return None
    return row["tp"] * (1 if row["pp"] is None else row["pp"]) * (1 if row["pcp"] is None else row["pcp"])


def test_python_column_and_sql_agree_on_every_combination():
    rows = _grid()
    table = pa.Table.from_pylist(rows, schema=pa.schema([RUN_SCHEMA.field(n) if n != "run_id" else
                                                         pa.field("run_id", pa.string()) for n in rows[0]]))
    with duckdb.connect() as conn:
        conn.register("validated_runs", table)
        conn.execute(sql_text("run_gpu_counts"))
        from_sql = dict(conn.sql("select run_id, num_gpus from run_gpu_counts").fetchall())
    column = gpu_count_column(table).to_pylist()
    for i, row in enumerate(rows):
        expected = _by_hand(row)
        assert run_gpus(row) == expected, row
        assert from_sql[row["run_id"]] == expected, row
        assert column[i] == (None if expected is None else float(expected)), row


@pytest.mark.parametrize("args, kwargs, expected", [
    ((2, 3, 5), {}, 30),                       # tp × pp × pcp
    ((2, None, 5), {}, 10),                    # an absent pp counts 1
    ((2, 3, None), {}, 6),                     # an absent pcp counts 1
    ((2, 0, 5), {}, 0),                        # a zero is kept, as SQL's coalesce keeps it
    ((None, 3, 5), {}, None),                  # no tp: unknown
    ((8,), {"disagg": True, "num_prefill_gpu": 3, "num_decode_gpu": 5}, 8),   # roles, tp ignored
    ((8,), {"disagg": True, "num_prefill_gpu": 3}, None),
    ((8,), {"disagg": True, "num_decode_gpu": 5}, None),
    ((8, 2), {"disagg": None, "num_prefill_gpu": 3, "num_decode_gpu": 5}, 16),  # null disagg: aggregated
])
def test_gpu_count_by_hand(args, kwargs, expected):
    assert gpu_count(*args, **kwargs) == expected


def test_missing_keys_read_as_absent():
    assert run_gpus({"tp": 4}) == 4
    assert run_gpus({"disagg": True, "num_prefill_gpu": 1, "num_decode_gpu": 2}) == 3
    assert run_gpus({}) is None


def test_sglang_roles_sum_their_servers_with_the_same_rule():
    assert sglang_role_gpus([{"tp_size": 4, "pp_size": 2}, {"tp_size": 8}]) == 16
    assert sglang_role_gpus([{"tp_size": "2"}]) == 2
    assert sglang_role_gpus([{"tp_size": 4}, {"pp_size": 2}]) is None
    assert sglang_role_gpus([]) == 0
