"""Write N realistic raw logs for the performance harness (benchmarks/run.py): mixed formats, metadata in runs.csv
manifests and sidecars, 560 frontier groups swept once a day, 2 % repeats and 0.5 % byte copies, values from
pipeline.ingest.sample_data's serving model. Runs are distinct at every scale: more runs means more days.

    python benchmarks/generate.py --runs 100000 --out /tmp/bench-raw
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import random
import shutil
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from pipeline.ingest.sample_data import Config, inferencex_agg_doc, sglang_doc, simulate, trtllm_doc, vllm_doc

MODELS = (("dsr1", 1024, 1024), ("dsr1", 8192, 1024), ("dsr1", 1024, 8192), ("qwen3.5-397b-a17b", 8192, 1024),
          ("qwen3.5-397b-a17b", 1024, 1024))
HW = {"h100": 22.0, "h200": 19.0, "b200": 13.0, "b300": 11.0, "mi300x": 24.0, "mi325x": 21.0, "mi355x": 17.5}
CONCS = (4, 8, 16, 32, 64, 128, 256)
FIRST_DAY = date(2024, 1, 1)
# Of the runs written, this share are repeats (the same configuration, day and conc measured again: accepted and
# averaged on the frontier) and this share byte copies of an earlier run under another name (duplicate_run).
REPEAT_SHARE = 0.02
DUPLICATE_SHARE = 0.005


@dataclass
class Generated:
    """What ``generate`` wrote: ``files`` (run logs, sidecars, manifests), ``runs`` (run logs), ``duplicates``
    (byte copies among them), so ``runs - duplicates`` runs should be accepted."""

    files: int
    runs: int
    duplicates: int

    @property
    def distinct_runs(self) -> int:
        return self.runs - self.duplicates


def configs() -> list[Config]:
    """560 frontier groups: model/ISL/OSL (5) × GPU (7) × precision (2) × framework (4) × spec decoding (2)."""
    out = []
    for (model, isl, osl), (hw, tpot), precision, framework, spec in itertools.product(
            MODELS, HW.items(), ("fp8", "fp4"), ("vllm", "sglang", "trtllm", "inferencex"), ("none", "mtp")):
        scale = (0.8 if precision == "fp4" else 1.0) * (0.75 if spec == "mtp" else 1.0)
        out.append(Config(model, isl, osl, hw, precision, framework, spec, 8, tpot * scale, 40, 0.9, 150, 32,
                          accept_length=2.5 if spec == "mtp" else None))
    return out


def generate(n_runs: int, out: Path, seed: int = 7, run_date: str | None = None,
             date_folders: bool = False) -> Generated:
    """Write ``n_runs`` run logs under ``out`` (replaced), distinct at every scale.

    Each configuration is swept over the seven concurrencies once per day; day d holds every configuration's
    sweep (3,920 runs), so ``n_runs`` spans ``n_runs / 3920`` days from 2024-01-01, or all lie on ``run_date``
    (YYYY-MM-DD) as a nightly batch does. ``REPEAT_SHARE`` of the runs are repeats and ``DUPLICATE_SHARE``
    byte copies (see ``Generated``). Files go to ``<framework>/<configuration>/<day>/``, or with
    ``date_folders`` to ``<day>/<framework>/<configuration>/`` (the sensor's opt-in date-folder layout,
    docs/operations.md; same files, same content)."""
    if out.exists():
        shutil.rmtree(out)
    rng = random.Random(seed)
    cfgs = configs()
    files = runs = duplicates = 0
    manifests: dict[Path, list[dict]] = {}
    slot = 0
    last: tuple[Path, str, dict] | None = None
    while runs < n_runs:
        kind = "run"
        if last is not None and rng.random() < DUPLICATE_SHARE:
            kind = "duplicate"
        elif last is not None and rng.random() < REPEAT_SHARE:
            kind = "repeat"
        if kind == "run":
            sweep, conc_index = divmod(slot, len(CONCS))
            slot += 1
        cfg = cfgs[sweep % len(cfgs)]
        conc = CONCS[conc_index]
        day = run_date or (FIRST_DAY + timedelta(days=sweep // len(cfgs))).isoformat()
        line = f"{cfg.model}_{cfg.isl}_{cfg.osl}_{cfg.hw}_{cfg.precision}_{cfg.spec}"
        folder = out / day / cfg.framework / line if date_folders else out / cfg.framework / line / day
        folder.mkdir(parents=True, exist_ok=True)
        name = f"run_{runs:07d}"
        if kind == "duplicate":  # the last run's file again, under another name
            source, suffix, meta = last
            copy = folder / f"{name}{suffix}"
            shutil.copyfile(source, copy)
            duplicates += 1
            files += _write_metadata(copy, meta, manifests)
        else:
            path, meta = _write_run(folder, name, cfg, conc, day, simulate(cfg, conc, rng))
            last = (path, path.suffix, meta)
            files += _write_metadata(path, meta, manifests)
        files += 1
        runs += 1
    for folder, rows in manifests.items():
        with (folder / "runs.csv").open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        files += 1
    written = Generated(files, runs, duplicates)
    out.with_name(f"{out.name}.generated.json").write_text(json.dumps(written.__dict__))
    return written


def _write_run(folder: Path, name: str, cfg: Config, conc: int, day: str, point) -> tuple[Path, dict]:
    """One run log in the framework's own format; returns its path and its metadata."""
    cfg_day = Config(**{**cfg.__dict__, "run_date": day})
    meta = {"model": cfg.model, "hw": cfg.hw, "precision": cfg.precision, "spec_decoding": cfg.spec,
            "framework": cfg.framework, "tp": 8, "isl": cfg.isl, "osl": cfg.osl, "conc": conc, "run_date": day}
    if cfg.framework == "vllm":
        doc = vllm_doc(cfg_day, point)
        doc["date"] = day.replace("-", "") + "-120000"
        path = folder / f"{name}.json"
        path.write_text(json.dumps(doc))
    elif cfg.framework == "sglang":
        path = folder / f"{name}.jsonl"
        path.write_text(json.dumps(sglang_doc(cfg_day, point)) + "\n")
    elif cfg.framework == "trtllm":
        path = folder / f"{name}.json"
        path.write_text(json.dumps(trtllm_doc(cfg_day, point)))
    else:  # the row names its own configuration; the workflow's runs.csv dates it
        path = folder / f"{name}.json"
        path.write_text(json.dumps(inferencex_agg_doc(cfg_day, point)))
        meta = {"run_date": day}
    return path, meta


def _write_metadata(path: Path, meta: dict, manifests: dict[Path, list[dict]]) -> int:
    """SGLang runs get a sidecar (one file written), the others a row of their folder's runs.csv."""
    if path.suffix == ".jsonl":
        path.with_name(f"{path.name}.meta.json").write_text(json.dumps(meta))
        return 1
    manifests.setdefault(path.parent, []).append({"file": path.name, **meta})
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-raw"))
    args = parser.parse_args()
    written = generate(args.runs, args.out)
    print(f"wrote {written.files} files under {args.out}: {written.runs} run logs, {written.duplicates} of them "
          f"byte copies, so {written.distinct_runs} runs to accept")


if __name__ == "__main__":
    main()
