"""One SQL mutation worker: ``python -m tests.mutation.sql_worker <n>`` tests shard ``n`` of
``mutants-sql/plan.json`` (written by ``python -m tests.mutation``) in the copy ``mutants-sql/<n>/`` and appends its
results to ``mutants-sql/results-<n>.jsonl`` (``sql_mutants.run_worker``)."""

from __future__ import annotations

import json
import sys

from tests.mutation import sql_mutants as sm


def main(n: int) -> None:
    """Run shard ``n`` (an int index into the plan's shards)."""
    plan = json.loads((sm.WORK_DIR / "plan.json").read_text(encoding="utf-8"))
    fields = ("file", "operator", "start", "end", "original", "replacement", "line", "line_text", "occurrence")
    mutants = [sm.SqlMutant(**{k: m[k] for k in fields}) for m in plan["shards"][n]]
    mapping = plan["mapping"]
    sm.run_worker(sm.WORK_DIR / str(n), mutants, mapping["tests_by_file"], mapping["durations"],
                  sm.WORK_DIR / f"results-{n}.jsonl")


if __name__ == "__main__":
    main(int(sys.argv[1]))
