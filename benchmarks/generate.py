"""Write N realistic raw logs for the performance harness (benchmarks/run.py): mixed formats, metadata in runs.csv
manifests and sidecars, ~360 frontier groups, values from pipeline.ingest.sample_data's serving model.

    python benchmarks/generate.py --runs 100000 --out /tmp/bench-raw
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import random
import shutil
from pathlib import Path

from pipeline.ingest.sample_data import Config, inferencex_agg_doc, sglang_doc, simulate, trtllm_doc, vllm_doc

MODELS = (("dsr1", 1024, 1024), ("dsr1", 8192, 1024), ("qwen3.5-397b-a17b", 8192, 1024))
HW = {"h200": 19.0, "b200": 13.0, "mi355x": 17.5, "mi300x": 24.0, "b300": 11.0}
CONCS = (4, 8, 16, 32, 64, 128, 256)


def configs() -> list[Config]:
    """~360 frontier groups: model/ISL/OSL × GPU × precision × framework × spec decoding."""
    out = []
    for (model, isl, osl), (hw, tpot), precision, framework, spec in itertools.product(
            MODELS, HW.items(), ("fp8", "fp4"), ("vllm", "sglang", "trtllm", "inferencex"), ("none", "mtp")):
        scale = (0.8 if precision == "fp4" else 1.0) * (0.75 if spec == "mtp" else 1.0)
        out.append(Config(model, isl, osl, hw, precision, framework, spec, 8, tpot * scale, 40, 0.9, 150, 32,
                          accept_length=2.5 if spec == "mtp" else None))
    return out


def generate(n_runs: int, out: Path, seed: int = 7, run_date: str | None = None) -> int:
    """Write about ``n_runs`` runs under ``out`` (replaced); returns the number of files written.

    Runs spread over 2026's dates (~360 a day) unless ``run_date`` (YYYY-MM-DD) puts them all on one day, as a
    nightly batch does."""
    if out.exists():
        shutil.rmtree(out)
    rng = random.Random(seed)
    cfgs = configs()
    files = 0
    manifests: dict[Path, list[dict]] = {}
    for i in range(n_runs):
        cfg = cfgs[i % len(cfgs)]
        day = run_date or f"2026-{1 + (i // len(cfgs)) % 12:02d}-{1 + (i // (12 * len(cfgs))) % 28:02d}"
        conc = CONCS[(i // len(cfgs)) % len(CONCS)]
        point = simulate(cfg, conc, rng)
        cfg_day = Config(**{**cfg.__dict__, "run_date": day})
        folder = out / cfg.framework / f"{cfg.model}_{cfg.isl}_{cfg.hw}_{cfg.precision}_{cfg.spec}"
        folder.mkdir(parents=True, exist_ok=True)
        meta = {"model": cfg.model, "hw": cfg.hw, "precision": cfg.precision, "spec_decoding": cfg.spec,
                "framework": cfg.framework, "tp": 8, "isl": cfg.isl, "osl": cfg.osl, "conc": conc, "run_date": day}
        name = f"run_{i:07d}"
        if cfg.framework == "vllm":
            doc = vllm_doc(cfg_day, point)
            doc["date"] = day.replace("-", "") + "-120000"
            (folder / f"{name}.json").write_text(json.dumps(doc))
            manifests.setdefault(folder, []).append({"file": f"{name}.json", **meta})
        elif cfg.framework == "sglang":
            (folder / f"{name}.jsonl").write_text(json.dumps(sglang_doc(cfg_day, point)) + "\n")
            (folder / f"{name}.jsonl.meta.json").write_text(json.dumps(meta))
            files += 1
        elif cfg.framework == "trtllm":
            (folder / f"{name}.json").write_text(json.dumps(trtllm_doc(cfg_day, point)))
            manifests.setdefault(folder, []).append({"file": f"{name}.json", **meta})
        else:  # the row names its own configuration; the workflow's runs.csv dates it
            doc = inferencex_agg_doc(cfg_day, point)
            (folder / f"{name}.json").write_text(json.dumps(doc))
            manifests.setdefault(folder, []).append({"file": f"{name}.json", "run_date": day})
        files += 1
    for folder, rows in manifests.items():
        with (folder / "runs.csv").open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        files += 1
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-raw"))
    args = parser.parse_args()
    print(f"wrote {generate(args.runs, args.out)} files for {args.runs} runs under {args.out}")


if __name__ == "__main__":
    main()
