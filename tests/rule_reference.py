"""The validation reference the tests hold ``validate_table`` to: every rule of ``rules()`` applied to every run
(no screen), then the duplicate rule over the runs that passed. Written here, in the tests, so the one validation
path of ``pipeline.validate.rules`` is compared with an outcome its screens cannot influence."""

from __future__ import annotations

import datetime as dt
from typing import Any, Iterable, Mapping

import pyarrow as pa

from pipeline.ingest.schema import QUARANTINE_SCHEMA, RUN_SCHEMA
from pipeline.validate.rules import check_run, find_duplicates, rules


def _quarantine(run: Mapping[str, Any], code: str, detail: str, duplicate_of: str | None = None) -> dict:
    return {"source_file": run["source_file"], "source_format": run["source_format"], "source_row": run["source_row"],
            "reason_code": code, "detail": f"{run['source_file']} row {run['source_row']}: {detail}",
            "stage": "validate", "run_date_partition": run.get("run_date_partition"), "duplicate_of": duplicate_of}


def every_rule_on_every_run(runs: list[Mapping[str, Any]], known_hw: Iterable[str]
                            ) -> tuple[list[Mapping[str, Any]], list[dict]]:
    """(accepted runs in input order, quarantine rows: rule rejections in input order, then duplicates in input
    order), the order ``validate_table`` documents."""
    rule_list = rules(known_hw)
    passing, rejected = [], []
    for run in runs:
        finding = check_run(run, rule_list)
        if finding is None:
            passing.append(run)
        else:
            rejected.append(_quarantine(run, *finding))
    duplicates = find_duplicates(passing)
    accepted = [run for i, run in enumerate(passing) if i not in duplicates]
    rejected += [_quarantine(passing[i], *finding) for i, finding in sorted(duplicates.items())]
    return accepted, rejected


def reference_tables(runs: pa.Table, known_hw: Iterable[str]) -> tuple[pa.Table, pa.Table]:
    """``every_rule_on_every_run`` of a ``RUN_SCHEMA`` table, as (``RUN_SCHEMA``, ``QUARANTINE_SCHEMA``) tables."""
    accepted, rejected = every_rule_on_every_run(runs.cast(RUN_SCHEMA).to_pylist(), known_hw)
    return (pa.Table.from_pylist(accepted, schema=RUN_SCHEMA),
            pa.Table.from_pylist(rejected, schema=QUARANTINE_SCHEMA))


def good_run(i: int = 0, **over: Any) -> dict:
    """A clean fixed-sequence run (DeepSeek-R1 on 8 H200): medians TTFT 0.5 s, TPOT 20 ms, E2EL 20 s over OSL
    1024 ((20 − 0.5) / (0.02 × 1023) = 0.953), 5,000 tok/s over 8 GPUs = 625 tok/s/GPU, 50 tok/s/user; ``over``
    changes what a test is about. Shared by the rule tests."""
    run = {name: None for name in RUN_SCHEMA.names}
    run.update({"source_file": f"f{i}.json", "source_format": "vllm_bench_serve", "source_row": 0, "run_id": f"r{i}",
                "content_sha256": f"sha{i}", "metadata_conflicts": "", "benchmark_type": "fixed_seq",
                "model": "dsr1", "hw": "h200", "framework": "vllm", "precision": "fp8", "spec_decoding": "none",
                "isl": 1024, "osl": 1024, "conc": 8 + i, "tp": 8, "disagg": False, "completed": 80, "failed": 0,
                "num_prompts": 80, "total_tput_tok_s": 5000.0, "output_tput_tok_s": 2500.0,
                "median_tpot_s": 0.02, "median_ttft_s": 0.5, "median_e2el_s": 20.0,
                "latency_unit_in_file": "ms", "run_date": dt.date(2026, 1, 1)})
    run.update(over)
    return run
