"""How many GPUs a run used: the one rule, in Python and as an Arrow column expression.

    single node:      tp × pp × pcp   (pp, pcp: 1 when absent)
    disaggregated:    num_prefill_gpu + num_decode_gpu

The metrics read the same rule in SQL (``sql/run_gpu_counts.sql``, the view ``run_gpu_counts``); a test holds the
three forms equal on every combination of absent, zero and positive counts. Validation (the tok/s/GPU ceiling and
the unit-mismatch evidence) and the parsers that infer a count (SGLang's per-role servers, the Together power
check) call these functions rather than multiplying on their own.
"""

from __future__ import annotations

from typing import Any, Mapping

import pyarrow as pa
import pyarrow.compute as pc


def gpu_count(tp: int | None, pp: int | None = None, pcp: int | None = None, *, disagg: bool | None = None,
              num_prefill_gpu: int | None = None, num_decode_gpu: int | None = None) -> int | None:
    """GPUs of one deployment (a count, no unit).

    Args:
        tp, pp, pcp: tensor-, pipeline- and context-parallel sizes of a single-node run; an absent ``pp`` or
            ``pcp`` counts 1 (an absent ``tp`` leaves the count unknown). A zero is kept: it gives 0 GPUs.
        disagg: True for a disaggregated run (a null reads as False, aggregated).
        num_prefill_gpu, num_decode_gpu: the two roles' GPUs of a disaggregated run.
    Returns:
        The count, or None when a count it needs is absent (``tp``; either role of a disaggregated run).
    """
    if disagg:
        if num_prefill_gpu is None or num_decode_gpu is None:
            return None
        return num_prefill_gpu + num_decode_gpu
    if tp is None:
        return None
    return tp * (1 if pp is None else pp) * (1 if pcp is None else pcp)


def run_gpus(run: Mapping[str, Any]) -> int | None:
    """``gpu_count`` of a run given as a mapping of ``RUN_SCHEMA`` values (absent keys read as None)."""
    return gpu_count(run.get("tp"), run.get("pp"), run.get("pcp"), disagg=run.get("disagg"),
                     num_prefill_gpu=run.get("num_prefill_gpu"), num_decode_gpu=run.get("num_decode_gpu"))


def gpu_count_column(table: pa.Table) -> pa.ChunkedArray:
    """``run_gpus`` of every row of a table with the ``RUN_SCHEMA`` columns ``tp``, ``pp``, ``pcp``, ``disagg``,
    ``num_prefill_gpu``, ``num_decode_gpu``, as float64 (null where ``run_gpus`` is None).

    Raises:
        KeyError: a column is missing.
    """
    def column(name: str) -> pa.ChunkedArray:
        return pc.cast(table[name], pa.float64())

    single = pc.multiply(pc.multiply(column("tp"), pc.fill_null(column("pp"), 1.0)),
                         pc.fill_null(column("pcp"), 1.0))
    split = pc.add(column("num_prefill_gpu"), column("num_decode_gpu"))
    return pc.if_else(pc.fill_null(table["disagg"], False), split, single)


def run_decode_gpus(run: Mapping[str, Any]) -> int | None:
    """GPUs that serve a run's decode steps (a count): a disaggregated run's ``num_decode_gpu``, else every GPU of
    the run (``run_gpus``). None when that count is absent.

    The tok/s/user ceiling spreads one decode step's weight reads over these GPUs; counting every one (replicas and
    pipeline stages too, which do not shorten one request's step) keeps that bound generous, never tight.
    """
    if run.get("disagg"):
        return run.get("num_decode_gpu")
    return run_gpus(run)


def decode_gpu_column(table: pa.Table) -> pa.ChunkedArray:
    """``run_decode_gpus`` of every row of a table with the columns ``gpu_count_column`` reads, as float64 (null where
    ``run_decode_gpus`` is None).

    Raises:
        KeyError: a column is missing.
    """
    decode = pc.cast(table["num_decode_gpu"], pa.float64())
    return pc.if_else(pc.fill_null(table["disagg"], False), decode, gpu_count_column(table))
