"""Build the hostile corpus of ``tests/fuzz_corpus.py`` beside untouched copies of the real logs, run
``python -m pipeline run`` over it and over the copies alone, and print what happened to each kind of mutant:
tried, accepted, refused (by reason), plus the run's exit, wall time, peak memory and the harms the suite's
``tests/test_fuzz_corpus.py`` forbids (good runs lost or changed, leaks, paths outside the mart folder).

    python benchmarks/hostile_corpus.py [--real-logs DIR] [--out /tmp/hostile-corpus]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fuzz_corpus import build, judge  # noqa: E402
from test_fuzz_corpus import run_cli, secret_in  # noqa: E402

from pipeline.io.storage import read_mart  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real-logs", type=Path, default=REPO.parent / "shared" / "real-logs")
    parser.add_argument("--out", type=Path, default=Path("/tmp/hostile-corpus"))
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    corpus = build(args.out / "hostile", args.real_logs, REPO / "data" / "sample")
    clean_raw = args.out / "clean"
    for good in corpus.good:
        shutil.copytree(corpus.raw / good, clean_raw / good, symlinks=True)
    clean = run_cli(clean_raw, args.out / "clean-out")
    started = time.perf_counter()
    hostile = run_cli(corpus.raw, args.out / "hostile-out")
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    out = args.out / "hostile-out" / "marts"
    print(f"corpus: {len(corpus.mutants)} mutants in {len({m.seed for m in corpus.mutants})} seeds, "
          f"{len(corpus.fs_cases)} file-system and naming cases")
    print(f"run: exit {hostile.returncode} (clean copies alone: exit {clean.returncode}), {wall:.1f} s wall, "
          f"peak {peak:.0f} MiB")
    if hostile.returncode or clean.returncode:
        print(hostile.stdout[-2000:], hostile.stderr[-2000:])
        return 1
    verdict = judge(corpus, read_mart(args.out / "clean-out" / "marts", "runs").to_pylist(),
                    read_mart(out, "runs").to_pylist(), read_mart(out, "quarantine").to_pylist(), out, secret_in)
    print(f"good runs lost {len(verdict.good_lost)}, changed {len(verdict.good_changed)}; must-refuse mutants "
          f"accepted {len(verdict.wrongly_accepted)}; accepted far from their seed {len(verdict.moved)}; "
          f"files leaking outside bytes {len(verdict.leaked)}; outputs outside the mart folder {len(verdict.outside)}")
    print("\n| mutant kind | tried | accepted | refused, by reason (a mutant may carry several) |")
    print("| --- | ---: | ---: | --- |")
    for family, outcomes in sorted(verdict.families.items()):
        refused, accepted = Counter(), Counter()
        for outcome, n in outcomes.items():
            if outcome.startswith("accepted"):
                accepted[outcome.removeprefix("accepted").strip(" ()") or "as stated"] += n
            else:
                for reason in outcome.split(","):
                    refused[reason] += n
        top = ", ".join(f"{reason} {n}" for reason, n in refused.most_common(6))
        kept = ", ".join(f"{n} {how}" for how, n in accepted.most_common()) or "0"
        print(f"| {family} | {sum(outcomes.values())} | {kept} | {top} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
