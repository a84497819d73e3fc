"""sql/duplicate_candidates.sql joins on buckets of ln|median TPOT| instead of pairing every batch run with every
accepted run of its model, GPU and conc: it must choose exactly the rows the plain test chooses, at the
tolerance's edge, across bucket boundaries, and for zero, negative, NaN, infinite and null TPOTs."""

import math
import random

import duckdb
import pyarrow as pa
import pytest

from pipeline.validate.judge import TPOT_BUCKET_WIDTH
from pipeline.io.paths import sql_text
from pipeline.validate.rules import SAME_MEASUREMENT_RTOL

# The rule as first written: every accepted run of another date whose content matches, or whose model, GPU and
# conc match and whose median TPOT is within rtol relative of a batch run's (the spec the bucketed join keeps).
PLAIN = """
select e.* from validated_runs as e
where not list_contains($partition_keys, e.run_date_partition)
  and (e.content_sha256 in (select content_sha256 from _batch where content_sha256 is not null)
       or e.run_id in (
           select o.run_id from validated_runs as o join _batch as b
             on b.model is not distinct from o.model and b.hw is not distinct from o.hw
            and b.conc is not distinct from o.conc
           where not list_contains($partition_keys, o.run_date_partition)
             and abs(b.median_tpot_s - o.median_tpot_s)
                 <= $rtol * greatest(abs(b.median_tpot_s), abs(o.median_tpot_s))))
"""


def _tpots(rng: random.Random, base: list[float]) -> list[float | None]:
    """TPOTs near each base value: equal, just inside and just outside the tolerance both ways, across the
    bucket boundary nearest it, and the odd values."""
    rtol, width = SAME_MEASUREMENT_RTOL, TPOT_BUCKET_WIDTH
    out: list[float | None] = []
    for t in base:
        edge = math.exp(math.floor(math.log(abs(t)) / width) * width) * math.copysign(1, t)  # a bucket boundary
        out += [t, t * (1 + 0.9 * rtol), t * (1 - 0.9 * rtol), t * (1 + 1.1 * rtol), t * (1 - 1.1 * rtol),
                edge, edge * (1 + 0.5 * rtol), edge * (1 - 0.5 * rtol), t * (1 + rng.uniform(-3, 3) * rtol)]
    return out + [0.0, -0.0, float("nan"), float("inf"), float("-inf"), None]


def _runs(prefix: str, tpots: list[float | None], dates: list[str], rng: random.Random) -> pa.Table:
    n = len(tpots)
    return pa.table({
        "run_id": [f"{prefix}{i}" for i in range(n)],
        "run_date_partition": [rng.choice(dates) for _ in range(n)],
        "content_sha256": [rng.choice([None, "c1", "c2", f"{prefix}-own{i}"]) for i in range(n)],
        "model": [rng.choice(["dsr1", "gptoss", None]) for _ in range(n)],
        "hw": [rng.choice(["mi355x", "b200"]) for _ in range(n)],
        "conc": pa.array([rng.choice([4, 64, None]) for _ in range(n)], pa.int64()),
        "median_tpot_s": pa.array(tpots, pa.float64()),
    })


@pytest.mark.parametrize("seed", range(4))
def test_the_bucketed_join_chooses_exactly_the_plain_tests_rows(seed):
    rng = random.Random(seed)
    base = [0.0123, 0.5, 1e-4, 2.75, -0.03] + [rng.uniform(1e-4, 3) for _ in range(5)]
    history = _runs("h", _tpots(rng, base) * 2, ["2026-01-01", "2026-01-02", "undated", "2026-02-01"], rng)
    batch = _runs("b", _tpots(rng, base), ["2026-02-01"], rng)
    conn = duckdb.connect()
    conn.register("_history", history)
    conn.execute("create table validated_runs as select * from _history")
    conn.register("_batch", batch)
    params = {"partition_keys": ["2026-02-01"], "rtol": SAME_MEASUREMENT_RTOL}
    plain = conn.sql(PLAIN, params=params).to_arrow_table().sort_by("run_id")
    bucketed = conn.sql(sql_text("duplicate_candidates"),
                        params={**params, "bucket_width": TPOT_BUCKET_WIDTH}).to_arrow_table().sort_by("run_id")
    assert plain.num_rows > 20  # the data has matches of every kind, not an empty agreement
    # the same rows (run_id is unique here; Arrow's equals would call the NaN rows unequal to themselves)
    assert bucketed["run_id"].to_pylist() == plain["run_id"].to_pylist()
    assert bucketed.schema == plain.schema


def test_a_bucket_narrower_than_the_tolerance_would_miss_pairs():
    """The width is what keeps the join exact: at a width below the tolerance, two runs within it can sit two
    buckets apart and the neighbours no longer cover them (this test fails if the SQL ignores the width)."""
    conn = duckdb.connect()
    t = 0.5
    conn.register("_history", pa.table({"run_id": ["h"], "run_date_partition": ["2026-01-01"],
                                        "content_sha256": [None], "model": ["m"], "hw": ["g"],
                                        "conc": pa.array([4], pa.int64()), "median_tpot_s": [t * (1 + 0.9e-9)]}))
    conn.execute("create table validated_runs as select * from _history")
    conn.register("_batch", pa.table({"content_sha256": pa.array([None], pa.string()), "model": ["m"],
                                      "hw": ["g"], "conc": pa.array([4], pa.int64()), "median_tpot_s": [t]}))
    params = {"partition_keys": ["2026-02-01"], "rtol": SAME_MEASUREMENT_RTOL}
    found = conn.sql(sql_text("duplicate_candidates"), params={**params, "bucket_width": TPOT_BUCKET_WIDTH})
    assert found.fetchall() != []
    assert conn.sql(sql_text("duplicate_candidates"), params={**params, "bucket_width": 1e-12}).fetchall() == []
