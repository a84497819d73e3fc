"""A hostile raw folder built from real result files: seeded mutants of every real run log and of the
sidecars, ``runs.csv`` and power logs that describe them, plus the file-system and naming cases a careless or
hostile operator produces, beside untouched copies of the same files.

``build(root, seed)`` writes ``root/raw`` (the folder the pipeline reads) and ``root/outside`` (files that
must never be read: each holds ``SECRET``) and returns a ``Corpus`` naming, for each mutant folder, the operator
applied and what it must never do (``must_refuse``: none of its runs may be accepted). Every choice comes from
``random.Random(seed)``, so a failing mutant is rebuilt exactly.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

SECRET = "OUTSIDE-SECRET-7f3a"  # in every file outside the raw folder: no output may hold it
MiB = 1 << 20

# Operators. ``must_refuse``: the bytes cannot be read as one true run (not UTF-8, empty, nested past any limit,
# a key given twice), so no run of the mutant may be accepted. ``value_only``: the operator changed the file's own
# content, whatever field that is; the pipeline may accept the mutant only with headline numbers (tok/s/GPU,
# interactivity) near its seed's, since a field it does not read changes nothing and one it reads and cannot
# judge must be refused. Mutants of sidecars, runs.csv and power logs change metadata on purpose: they must not
# crash, leak or take a good run down, and their accepted numbers are whatever the stated metadata implies.


@dataclass
class Mutant:
    folder: str          # relative to raw/, holds the mutant and its metadata carriers
    seed: str            # the real or sample file it was made from, relative to raw/
    operator: str
    must_refuse: bool
    value_only: bool     # only measured numbers changed, no metadata: accepted rows must stay near the seed's


@dataclass
class Corpus:
    raw: Path
    outside: Path
    good: list[str]                       # folders of untouched copies, relative to raw/
    mutants: list[Mutant] = field(default_factory=list)
    fs_cases: dict[str, str] = field(default_factory=dict)  # relative path → the case it stands for


# ---- JSON helpers -----------------------------------------------------------------------------------------------

def _load(data: bytes) -> tuple[str, list]:
    """('json', [doc]) or ('jsonl', [objects]) of a run log; raises ValueError for anything else."""
    try:
        return "json", [json.loads(data)]
    except ValueError:
        objects = [json.loads(line) for line in data.splitlines() if line.strip()]
        if not objects:
            raise
        return "jsonl", objects


def _dump(kind: str, docs: list) -> bytes:
    if kind == "json":
        return json.dumps(docs[0], allow_nan=True).encode()
    return b"\n".join(json.dumps(d, allow_nan=True).encode() for d in docs) + b"\n"


def _leaves(value, path=()):
    """(path, number) of every numeric leaf (bools excluded), depth first."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:50]):  # per-request arrays: their first items are enough
            yield from _leaves(item, (*path, index))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, value


def _set(root, path, value):
    for step in path[:-1]:
        root = root[step]
    root[path[-1]] = value


def _name(path) -> str:
    return str(path[-1]).lower() if path else ""


def _is_stat(name: str) -> bool:
    return any(m in name for m in ("ttft", "tpot", "itl", "e2el", "latency", "intvty", "interactivity"))


def _is_throughput(name: str) -> bool:
    return "throughput" in name or "tput" in name or name.endswith("_tps")


def _value_mutants(kind: str, docs: list, rng: random.Random) -> list[tuple[str, bool, bool, bytes]]:
    """(operator, must_refuse, value_only, bytes) of the mutants of one run log's content."""
    out = []
    # the summary's values (a per-request array item changes no summary: its mutant would be a duplicate run)
    leaves = [(i, p, v) for i, d in enumerate(docs) for p, v in _leaves(d) if not any(isinstance(x, int) for x in p)]
    if not leaves:
        return out

    def variant(operator, must_refuse, value_only, change):
        copy = json.loads(json.dumps(docs, allow_nan=True))
        if change(copy) is not False:
            out.append((operator, must_refuse, value_only, _dump(kind, copy)))

    def scale(names, factor):
        def change(copy):
            hits = [(i, p, v) for i, p, v in ((i, p, v) for i, d in enumerate(copy) for p, v in _leaves(d))
                    if names(_name(p)) and v]
            for i, p, v in hits:
                _set(copy[i], p, v * factor)
            return bool(hits)
        return change

    variant("throughput_x1000", False, True, scale(_is_throughput, 1000.0))
    # every TPOT/ITL statistic ÷ 100, E2EL left as it was: tok/s/user ×100 and an E2EL that cannot be
    variant("tpot_itl_x0.01", False, True,
            scale(lambda n: ("tpot" in n or "itl" in n or "intvty" in n) and "e2e" not in n, 0.01))
    stats = [(i, p, v) for i, p, v in leaves if _is_stat(_name(p)) and len(p) <= 3]
    for bad, label in ((math.nan, "nan"), (math.inf, "inf"), (-1.0, "negative"), (1e308, "1e308")):
        if stats:
            i, p, _ = rng.choice(stats)
            variant(f"stat_{label}:{_name(p)}", False, True,
                    lambda copy, i=i, p=p, bad=bad: _set(copy[i], p, bad))
    for label, make in (("string", lambda v: f"{v}abc"), ("list", lambda v: [v]), ("object", lambda v: {"v": v}),
                        ("bool", lambda v: True), ("null", lambda v: None), ("huge_int", lambda v: 2 ** 70),
                        ("negative", lambda v: -abs(v) - 1), ("zero", lambda v: 0)):
        i, p, v = rng.choice(leaves)
        variant(f"retype_{label}:{_name(p)}", False, True, lambda copy, i=i, p=p, v=v, make=make: _set(copy[i], p, make(v)))
    top = [(i, k) for i, d in enumerate(docs) if isinstance(d, dict) for k in d]
    for _ in range(2):
        if top:
            i, k = rng.choice(top)
            variant(f"delete:{k}", False, True, lambda copy, i=i, k=k: copy[i].pop(k, None))
    return out


def _byte_mutants(data: bytes, rng: random.Random) -> list[tuple[str, bool, bool, bytes]]:
    """Mutants of the bytes: truncated, a byte that is not UTF-8, a key given twice, nesting past any limit."""
    cut = rng.randrange(1, max(2, len(data)))
    at = rng.randrange(0, max(1, len(data)))
    out = [("truncate", False, True, data[:cut]),
           ("not_utf8", True, False, data[:at] + b"\xff\xfe" + data[at:]),
           ("empty", True, False, b""),
           ("deep", True, False, b"[" * 100_000 + b"]" * 100_000)]
    text = data.lstrip()
    if text.startswith(b"{"):
        out.append(("duplicate_key", True, False, b'{"model": "dsr1", ' + text[1:].replace(b'"model"', b'"model"', 1)
                    if b'"model"' in text else b'{"conc": 1, "conc": 2, ' + text[1:]))
    return out


def _twin(seed: Path, dest: Path, number: int) -> None:
    """A copy of a sample run log whose TPOT and ITL statistics are a little longer (2 %, plus 0.01 % times the twin's ``number``):
    another measurement of the same configuration, so the pipeline judges its own metadata and power log instead
    of refusing it as a duplicate of the seed or of another twin (which would test nothing)."""
    doc = json.loads(seed.read_bytes())
    factor = 1.02 + 1e-4 * number
    for key, value in list(doc.items()):
        if ("tpot" in key or "itl" in key) and isinstance(value, (int, float)) and not isinstance(value, bool):
            doc[key] = value * factor
    dest.write_text(json.dumps(doc))


# ---- metadata carriers ------------------------------------------------------------------------------------------

HOSTILE_MODELS = ["..", ".", "a/b", "..\\..\\x", ".hidden", "slug.model", "slug-model", "Slug-Model", "x" * 200,
                  "nul\u0000byte", "new\nline", "=cmd|' /C calc'!A0", "<script>alert(1)</script>", "résumé", " "]
HOSTILE_VALUES = {"tp": ["eight", -1, 0, 10 ** 12, 1.5, True], "hw": ["h999", "", "../h200"],
                  "precision": ["fp3", "../fp8"], "run_date": ["2026-13-45", "0001-01-01", "9999-12-31", "yesterday"],
                  "isl": [-1, 0, 10 ** 10, "1k"], "conc": [0, -4, 2 ** 40], "spec_decoding": ["warp", "mtp"],
                  "power_log": ["../../outside/secret.csv", "/etc/passwd", "power/../../../outside/secret.csv"]}


def _sample_row(raw: Path, seed_rel: str) -> dict[str, str] | None:
    """The seed's row of the ``runs.csv`` beside it, or None."""
    manifest = (raw / seed_rel).parent / "runs.csv"
    if not manifest.is_file():
        return None
    with open(manifest, newline="") as handle:
        return next((r for r in csv.DictReader(handle) if r["file"] == Path(seed_rel).name), None)


def _carry_metadata(raw: Path, seed_rel: str, folder: Path, **changes: str) -> dict[str, str] | None:
    """Give ``folder`` what describes the seed besides its own content: its ``runs.csv`` row (with ``changes``)
    and a copy of the power log that row names, as ``power.csv``; returns the row written (None when the seed's
    folder has no row for it)."""
    row = _sample_row(raw, seed_rel)
    if row is None:
        return None
    if row.get("power_log"):
        shutil.copy((raw / seed_rel).parent / row["power_log"], folder / "power.csv")
        row["power_log"] = "power.csv"
    row.update(changes)
    _write_manifest(folder, [row])
    return row


def _write_manifest(folder: Path, rows: list[dict[str, str]]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    (folder / "runs.csv").write_text(buffer.getvalue())


# ---- the corpus -------------------------------------------------------------------------------------------------

def build(root: Path, real_logs: Path, sample: Path, seed: int = 40, value_mutants: int = 1000) -> Corpus:
    """Write the hostile corpus under ``root`` (``raw/`` and ``outside/``) and describe it.

    Good copies: ``raw/real`` (every real log) and ``raw/sample/vllm/h200`` (sample runs with ``runs.csv`` and
    power logs). Mutants: ``raw/zz_fuzz/<n>/``, one per folder with its own metadata carriers, at least
    ``value_mutants`` of run-log content plus mutants of sidecars, ``runs.csv`` and power logs. File-system and
    naming cases: ``raw/zz_fs/`` (after the good copies in name order, so a tie between a copy and its seed keeps the seed).
    """
    rng = random.Random(seed)
    raw, outside = root / "raw", root / "outside"
    raw.mkdir(parents=True)
    outside.mkdir()
    shutil.copytree(real_logs, raw / "real")
    shutil.copytree(sample / "vllm" / "h200", raw / "sample" / "vllm" / "h200")
    corpus = Corpus(raw, outside, ["real", "sample"])
    (outside / "secret.csv").write_text(f"timestamp,index,power.draw\n{SECRET},0,1\n")
    (outside / "secret.json").write_text(json.dumps({"model": SECRET, "hw": "h200", "image": SECRET}))
    (outside / "runs.csv").write_text(f"file,model,hw\nx.json,{SECRET},h200\n")

    seeds = sorted(str(p.relative_to(raw)) for p in (raw / "real").rglob("*") if p.suffix in (".json", ".jsonl"))
    sample_seeds = sorted(str(p.relative_to(raw)) for p in (raw / "sample").rglob("*.json"))
    candidates = []
    for rel in seeds + sample_seeds:
        data = (raw / rel).read_bytes()
        try:
            kind, docs = _load(data)
        except ValueError:
            continue
        for operator, must_refuse, value_only, content in _value_mutants(kind, docs, rng) + _byte_mutants(data, rng):
            candidates.append((rel, operator, must_refuse, value_only, content))
    rng.shuffle(candidates)
    # a quarter that must be refused, the rest operators on values
    chosen = [c for c in candidates if c[2]][: value_mutants // 4]
    chosen += [c for c in candidates if not c[2]][: max(0, value_mutants - len(chosen))]
    for number, (rel, operator, must_refuse, value_only, content) in enumerate(chosen):
        folder = raw / "zz_fuzz" / f"{number:04d}"
        folder.mkdir(parents=True)
        (folder / Path(rel).name).write_bytes(content)
        _carry_metadata(raw, rel, folder)
        corpus.mutants.append(Mutant(str(folder.relative_to(raw)), rel, operator, must_refuse, value_only))

    number = len(chosen)
    powered = [rel for rel in sample_seeds if (_sample_row(raw, rel) or {}).get("power_log")]
    for rel in powered:  # metadata mutants: the sample's runs.csv rows and sidecars, and their power logs
        for key, values in [("model", HOSTILE_MODELS), *HOSTILE_VALUES.items()]:
            value = rng.choice(values)
            folder = raw / "zz_fuzz" / f"{number:04d}"
            number += 1
            folder.mkdir(parents=True)
            _twin(raw / rel, folder / Path(rel).name, number)
            if rng.random() < 0.5:  # the hostile value in a sidecar, the rest in runs.csv
                _carry_metadata(raw, rel, folder)
                (folder / (Path(rel).name + ".meta.json")).write_text(json.dumps({key: value}))
                where = "sidecar"
            else:
                _carry_metadata(raw, rel, folder, **{key: str(value)})
                where = "runs.csv"
            corpus.mutants.append(Mutant(str(folder.relative_to(raw)), rel, f"{where}:{key}={value!r}"[:80],
                                         False, False))
        folder = raw / "zz_fuzz" / f"{number:04d}"  # the power log itself mutated
        number += 1
        folder.mkdir(parents=True)
        _twin(raw / rel, folder / Path(rel).name, number)
        _carry_metadata(raw, rel, folder)
        lines = (folder / "power.csv").read_text().splitlines()
        operator = rng.choice(["watts_x1000", "watts_negative", "watts_nan", "reversed", "garbage", "truncated"])
        if operator == "watts_x1000":
            lines = lines[:1] + [",".join(l.split(",")[:-1] + [" 612000.0 W"]) for l in lines[1:]]
        elif operator == "watts_negative":
            lines = lines[:1] + [",".join(l.split(",")[:-1] + [" -5.0 W"]) for l in lines[1:]]
        elif operator == "watts_nan":
            lines = lines[:1] + [",".join(l.split(",")[:-1] + [" nan W"]) for l in lines[1:]]
        elif operator == "reversed":
            lines = lines[:1] + lines[:0:-1]
        elif operator == "garbage":
            lines = ["\x00\x01garbage", *lines[1:3]]
        else:
            lines = lines[: len(lines) // 3]
        (folder / "power.csv").write_text("\n".join(lines) + "\n")
        corpus.mutants.append(Mutant(str(folder.relative_to(raw)), rel, f"power:{operator}", False, False))

    _file_system_cases(corpus)
    return corpus


def _file_system_cases(corpus: Corpus) -> None:
    """Links out of the folder, FIFOs, a device, a sparse file, names that are not UTF-8 or collide once escaped,
    a symlink loop: each in ``raw/zz_fs/<case>/`` beside a good sample run that the case must not take down."""
    raw, outside = corpus.raw, corpus.outside
    sample = raw / "sample" / "vllm" / "h200"
    seed = next(p for p in sorted(sample.glob("*.json")) if (_sample_row(raw, str(p.relative_to(raw))) or {}).get("power_log"))

    def case(name: str) -> Path:
        folder = raw / "zz_fs" / name
        folder.mkdir(parents=True)
        _twin(seed, folder / seed.name, 5000 + len(corpus.fs_cases))
        _carry_metadata(raw, str(seed.relative_to(raw)), folder)
        corpus.fs_cases[str(folder.relative_to(raw))] = name
        return folder

    os.symlink(outside / "secret.json", case("log_link_outside") / "linked.json")
    os.symlink(outside / "secret.json", case("sidecar_link_outside") / (seed.name + ".meta.json"))
    folder = case("runs_csv_link_outside")
    (folder / "runs.csv").unlink()
    os.symlink(outside / "runs.csv", folder / "runs.csv")
    folder = case("power_link_outside")
    (folder / "power.csv").unlink()
    os.symlink(outside / "secret.csv", folder / "power.csv")
    os.mkfifo(case("log_fifo") / "fifo.json")
    os.mkfifo(case("sidecar_fifo") / (seed.name + ".meta.json"))
    folder = case("runs_csv_fifo")
    (folder / "runs.csv").unlink()
    os.mkfifo(folder / "runs.csv")
    folder = case("power_fifo")
    (folder / "power.csv").unlink()
    os.mkfifo(folder / "power.csv")
    os.symlink("/dev/zero", case("log_dev_zero") / "zero.json")
    os.symlink("/dev/zero", case("sidecar_dev_zero") / (seed.name + ".meta.json"))
    folder = case("power_sparse_2gib")
    (folder / "power.csv").unlink()
    with open(folder / "power.csv", "wb") as handle:
        handle.truncate(2048 * MiB)
    folder = case("names_escaped_collide")
    with open(os.fsencode(folder) + b"/name_\xff.json", "wb") as handle:
        handle.write(seed.read_bytes())
    (folder / "name_\\xff.json").write_bytes(seed.read_bytes())
    (case("name_newline") / "new\nline.json").write_bytes(seed.read_bytes())
    (case("name_leading_dot") / ".hidden.json").write_bytes(seed.read_bytes())
    (case("name_long") / ("n" * 240 + ".json")).write_bytes(seed.read_bytes())
    os.symlink("..", case("folder_loop") / "loop")
    for model in HOSTILE_MODELS[:7]:
        folder = case(f"model_{len(corpus.fs_cases)}")
        (folder / (seed.name + ".meta.json")).write_text(json.dumps({"model": model}))


# ---- judging a run over the corpus ------------------------------------------------------------------------------

GOOD_COLUMNS = ("run_id", "model", "hw", "framework", "precision", "spec_decoding", "isl", "osl", "conc",
                "num_gpus", "run_date", "tput_per_gpu", "x_intvty", "median_intvty", "cost_per_mtok_hyperscaler",
                "cost_per_mtok_rental", "tok_s_per_mw", "measured_tok_s_per_mw", "power_valid", "failure_rate")
# A value mutant may be accepted only near its seed: a field the parser does not read changes nothing, and a
# change within this factor is not one a plausibility rule could tell from a true run.
NEAR_SEED = 3.0


@dataclass
class Judgement:
    """What a pipeline run over the corpus did, against a run over the good copies alone (``judge``)."""

    good_lost: list                 # (source_file, source_row) accepted alone, absent beside the corpus
    good_changed: list              # ... present with other numbers (``GOOD_COLUMNS``)
    wrongly_accepted: list          # (folder, operator) of must-refuse mutants with an accepted run
    moved: list                     # (folder, operator, column, seed value, mutant value) accepted far from the seed
    leaked: list                    # output files holding ``SECRET``
    outside: list                   # output paths resolving outside the mart folder
    families: dict                  # operator family → Counter(outcome): accepted / a reason code / no row


def _family(operator: str) -> str:
    return operator.split(":")[0].split("=")[0]


def judge(corpus: Corpus, clean_runs: list[dict], runs: list[dict], quarantine: list[dict], out_dir: Path,
          secret_found: Callable[[Path], bool]) -> Judgement:
    """Judge a run: ``clean_runs`` (the runs mart of the good copies alone), ``runs`` and ``quarantine`` (the marts
    of the run over the corpus), ``out_dir`` (its mart folder, walked) and ``secret_found(path) -> bool``."""
    import collections
    good_before = {(r["source_file"], r["source_row"]): r for r in clean_runs}
    good_after = {(r["source_file"], r["source_row"]): r for r in runs if r["source_file"].split("/")[0] in corpus.good}
    def same(a, b) -> bool:
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))

    changed = sorted(k for k in set(good_before) & set(good_after)
                     if not all(same(good_before[k][c], good_after[k][c]) for c in GOOD_COLUMNS))
    by_folder = {m.folder: m for m in corpus.mutants}
    accepted = collections.defaultdict(list)
    for row in runs:
        folder = "/".join(row["source_file"].split("/")[:2])
        if folder in by_folder:
            accepted[folder].append(row)
    moved = []
    for folder, rows in accepted.items():
        mutant = by_folder[folder]
        for row in rows if mutant.value_only else ():
            seed = good_before.get((mutant.seed, row["source_row"]))
            for column in ("tput_per_gpu", "x_intvty"):
                value, reference = row[column], seed[column] if seed else None
                if seed is None or value is None or reference is None or not (
                        reference / NEAR_SEED <= value <= reference * NEAR_SEED):
                    moved.append((folder, mutant.operator, column, reference, value))
    families: dict = collections.defaultdict(collections.Counter)
    reasons = collections.defaultdict(set)
    for row in quarantine:
        folder = "/".join(row["source_file"].split("/")[:2])
        if (folder in by_folder or folder in corpus.fs_cases) and not row["reason_code"].startswith("not_a_run_log"):
            reasons[folder].add(row["reason_code"].split(":")[0])
    for folder, mutant in by_folder.items():
        power = sorted({r["power_invalid_reason"] or "valid" for r in accepted.get(folder, ()) if r.get("power_log")})
        outcome = (f"accepted (power {','.join(power)})" if power else "accepted") if folder in accepted \
            else ",".join(sorted(reasons[folder])) or "no run row"
        families[_family(mutant.operator)][outcome] += 1
    for row in runs:  # a file-system case: what its folder's files were refused for, and its twin run's power
        folder = "/".join(row["source_file"].split("/")[:2])
        if folder in corpus.fs_cases and row.get("power_invalid_reason"):
            reasons[folder].add(row["power_invalid_reason"])
    for folder, case in corpus.fs_cases.items():
        families[f"fs:{case}"][",".join(sorted(reasons[folder])) or "nothing refused"] += 1
    real_out = os.path.realpath(out_dir)
    outside, leaked = [], []
    for folder, dirs, files in os.walk(out_dir):
        for name in dirs + files:
            path = os.path.join(folder, name)
            if os.path.commonpath([real_out, os.path.realpath(path)]) != real_out:
                outside.append(path)
            elif name in files and os.path.isfile(path) and secret_found(Path(path)):
                leaked.append(path)
    return Judgement(sorted(set(good_before) - set(good_after)), changed,
                     [(f, by_folder[f].operator) for f in accepted if by_folder[f].must_refuse], moved, leaked,
                     outside, dict(families))
