"""Operator commands: ``partitions`` registers the run-date partitions on the ``DAGSTER_HOME`` instance (so a
partition backfill works before the sensor has ever ticked), ``docs`` writes ``docs/marts.md``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pipeline.io.columns import marts_markdown

MARTS_DOC = Path(__file__).resolve().parents[2] / "docs" / "marts.md"


def register_run_dates(instance, raw_dir: str, cache_dir: str) -> tuple[list[str], list[str]]:
    """Add every run-date partition the logs under ``raw_dir`` populate (plus ``undated``) to ``instance``.

    Returns:
        (keys new to the instance, every registered key), both sorted.
    """
    from pipeline.defs.partitions import (
        RUN_DATE_PARTITIONS,
        discover_partition_keys,
        register_partitions,
    )

    before = set(instance.get_dynamic_partitions(RUN_DATE_PARTITIONS.name))
    every = register_partitions(instance, discover_partition_keys(raw_dir, cache_dir))
    return sorted(set(every) - before), sorted(every)


def dagster_instance():
    """``DAGSTER_HOME``'s Dagster instance when the variable is set (runs then show in the UI), else a throwaway
    in-memory one.

    Raises:
        OutputLocationError: ``DAGSTER_HOME`` is not a writable folder (``paths.check_dagster_home``), or Dagster
            cannot load the instance its ``dagster.yaml`` describes (the message's first line says why); one line.
    """
    import dagster as dg
    import yaml

    from pipeline.io.paths import OutputLocationError, check_dagster_home

    if not os.environ.get("DAGSTER_HOME"):
        return dg.DagsterInstance.ephemeral()
    check_dagster_home()
    try:
        return dg.DagsterInstance.get()
    except (dg.DagsterError, yaml.YAMLError) as exc:  # a dagster.yaml that does not parse or does not validate
        why = " ".join(line.strip() for line in str(exc).strip().splitlines()[:2])
        raise OutputLocationError(f"DAGSTER_HOME {os.environ['DAGSTER_HOME']}: Dagster cannot load its instance "
                                  f"({why}): nothing run") from exc


def run_partitions(_args) -> int:
    """``python -m pipeline partitions``: register PIPELINE_RAW_DIR's run dates on DAGSTER_HOME's instance and
    print them. Exit 1 without DAGSTER_HOME (they would go to a throwaway instance), when it or the parse cache
    cannot be used (one line, ``OutputLocationError``), or without the raw folder."""
    from pipeline.io.paths import OutputLocationError, check_parse_cache, env_path, parse_cache_dir

    if not os.environ.get("DAGSTER_HOME"):
        print("DAGSTER_HOME is not set: partitions would be registered on a throwaway instance; "
              "export DAGSTER_HOME=<folder holding dagster.yaml> first", file=sys.stderr)
        return 1
    raw_dir = env_path("PIPELINE_RAW_DIR")
    try:
        check_parse_cache()
        instance = dagster_instance()
    except OutputLocationError as exc:
        print(f"partitions not registered: {exc}", file=sys.stderr)
        return 1
    if not Path(raw_dir).is_dir():
        print(f"raw folder {raw_dir} does not exist (PIPELINE_RAW_DIR)", file=sys.stderr)
        return 1
    with instance:
        new, every = register_run_dates(instance, raw_dir, parse_cache_dir())
    print(f"run_date partitions on {os.environ['DAGSTER_HOME']}: {len(every)} ({len(new)} new)")
    print(" ".join(every))
    return 0


def run_docs(args) -> int:
    """``python -m pipeline docs``: write docs/marts.md from ``pipeline.io.columns`` (``--check``: exit 1 when the
    committed file differs, writing nothing)."""
    text = marts_markdown()
    current = MARTS_DOC.read_text(encoding="utf-8") if MARTS_DOC.is_file() else None
    if args.check:
        if current != text:
            print(f"{MARTS_DOC} is out of date: run python -m pipeline docs", file=sys.stderr)
            return 1
        print(f"{MARTS_DOC} is up to date")
        return 0
    MARTS_DOC.write_text(text, encoding="utf-8")
    print(MARTS_DOC)
    return 0
