"""Safe keys: every metadata value that names a partition folder, a file, a report page or a
label is a bounded key that no two different values share.

- a model key that cannot be one folder name (``..``, ``.``, ``a/b``, ``a\\b``, a leading dot, NUL, 200
  characters) is quarantined ``invalid_metadata:model`` with a detail saying why, from a sidecar, from
  ``runs.csv`` or from the file itself; the real logs' model keys all pass;
- the partition folder of any model string is one component inside the mart, shown to pyarrow and pandas (no
  leading dot or underscore), at most 255 bytes, and different for different models;
- report page names differ for different comparisons (``slug.model`` and ``slug-model``), and labels for
  different keys; a page no comparison has is removed;
- the scan lists a file named with the text ``\\xff`` and a file named with the byte 0xff under different names:
  the first is read, the second refused ``invalid_file_name``.

One pipeline run over a folder of all of these beside good runs holds the whole chain: every file inside the out
dir, nothing stray at its top, every good run in ``runs/``, one page per comparison, the ledger's accepted count
equal to the rows of ``runs/``."""

import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from conftest import SAMPLE_DIR, reference_knowing_models, unrestricted

from pipeline.comparisons.report import REPORT_PRICE_BOOK, build_report, slug
from pipeline.ingest.keys import framework_label, hw_label, precision_label, spec_label
from pipeline.ingest.metadata import MetadataError, normalize
from pipeline.ingest.scan import scan_folder
from pipeline.io.storage import write_mart_partitions

SOURCE = SAMPLE_DIR / "vllm" / "mi355x"
BASE = "qwen3.5-397b-a17b_8k1k_mi355x_fp8_vllm_none_conc{}.json"
INFERENCEX = SAMPLE_DIR / "inferencex" / "agg_dsr1_1k1k_mi355x_fp4_sglang_none_conc{}.json"
LONG = "m" * 200
# model value -> the words the quarantine detail must hold
REFUSED = {
    "..": "starts with '.'",
    ".": "starts with '.'",
    ".hidden": "starts with '.'",
    "a/b": "path separator",
    "a\\b": "path separator",
    "a|b": "'|' or '~'",
    "nul\u0000byte": "control characters",
    LONG: "more than the 120",
    "evil\u202etxt.json": "U+202E",
}
# models kept: Slug-Model is the key slug-model (keys are lowercase), slug.model is another model
KEPT = ["slug.model", "slug-model", "Slug-Model"]
REAL_MODEL_KEYS = ["dsr1", "gptoss", "kimik2.5", "kimik2.7", "qwen3.5", "qwen3.5-397b-a17b", "llama3.3-70b",
                   "deepseek-r1-0528", "minimaxm2.5", "glm5.1", "glm-5"]


# --- keys at normalization ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", list(REFUSED))
def test_a_model_key_that_cannot_be_a_folder_name_is_refused_with_why(value):
    with pytest.raises(MetadataError) as caught:
        normalize({"model": value}, "the sidecar")
    assert caught.value.reason_code == "invalid_metadata:model"
    assert REFUSED[value] in caught.value.detail and "from the sidecar" in caught.value.detail


def test_real_model_keys_and_path_free_labels_pass():
    """The model keys the real logs and the InferenceX dashboard use pass unchanged; '/' in a framework or
    spec-decoding name (a label, never a path) is kept; '|' and '~' (the id separators) and 'all' (the pooled
    word) are not."""
    for key in REAL_MODEL_KEYS:
        assert normalize({"model": key}, "the sidecar") == {"model": key}
    assert normalize({"framework": "<b>x</b>", "spec_decoding": "a/b"}, "runs.csv") == {
        "framework": "<b>x</b>", "spec_decoding": "a/b"}
    for field, value in (("framework", "x|y"), ("spec_decoding", "x~y"), ("hw", "x|y"), ("precision", "x|y"),
                         ("framework", "all"), ("spec_decoding", "all")):
        with pytest.raises(MetadataError) as caught:  # "all" is the side ids' word for a pooled key
            normalize({field: value}, "runs.csv")
        assert caught.value.reason_code == f"invalid_metadata:{field}"


def test_the_real_logs_model_keys_all_pass(real_logs):
    """Every model key of a real log's run (every source: file, sidecar, runs.csv, engine path) passes
    normalization: no real run is lost to the key rule."""
    from pipeline.ingest.folder import ingest_folder

    result = ingest_folder(real_logs)
    models = set(result.runs.column("model").to_pylist()) - {None}
    assert {"dsr1", "gptoss", "kimik2.5", "qwen3.5", "minimaxm2.5"} <= models
    reasons = Counter(result.rejects.column("reason_code").to_pylist())
    assert not [code for code in reasons if code.startswith("invalid_metadata")], reasons


def test_labels_of_different_keys_differ():
    """Keys are lowercase; a label upper-cases ASCII letters only, so two keys never share a label ('ß' is not
    'SS')."""
    assert hw_label("ß") != hw_label("ss") and precision_label("ß") != precision_label("ss")
    assert spec_label("ß") != spec_label("ss") and hw_label("mi355x") == "MI355X" and spec_label("none") == "Off"
    assert framework_label("dynamo-trt") != framework_label("dynamo trt-llm")


# --- partition folders -------------------------------------------------------------------------------------------

WRITER_HOSTILE = ["..", ".", ".hidden", "_under", "a/b", "a\\b", "%2F", "a%2Fb", "é" * 120, "/" * 120,
                  "x" * 120, "x" * 119 + "y", "dsr1", "qwen3.5-397b-a17b"]


def test_partition_folders_are_one_visible_bounded_distinct_name():
    """The writer's folder name for any model string (normalization refuses most of these; the writer must be
    safe on its own): one path component, not '.'/'..', no leading '.' or '_' (pyarrow and pandas skip those),
    at most 255 bytes, distinct per model; plain keys keep their own name."""
    from pipeline.io.storage import partition_folder

    names = [partition_folder(model) for model in WRITER_HOSTILE]
    for model, name in zip(WRITER_HOSTILE, names):
        assert "/" not in name and "\\" not in name and name not in (".", ".."), (model, name)
        assert not name.startswith((".", "_")) and len(name.encode()) <= 255, (model, name)
    assert len(set(names)) == len(names)
    assert names[-2:] == ["dsr1", "qwen3.5-397b-a17b"]


def test_written_partitions_stay_inside_and_read_back(tmp_path):
    """Rows of every hostile model written as partitions: every file under the mart folder, and pyarrow's
    dataset reader (as ``read_mart``) returns every row."""
    table = pa.table({"model": WRITER_HOSTILE, "run_date": pa.array([None] * len(WRITER_HOSTILE), pa.date32()),
                      "n": list(range(len(WRITER_HOSTILE)))})
    base = tmp_path / "out" / "runs"
    written = write_mart_partitions(table, base)
    assert len(written) == len(WRITER_HOSTILE)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["runs"]
    for path in written:
        assert path.resolve().is_relative_to(base.resolve()) and path.relative_to(base).parts[1:] == (
            "undated", "part-0.parquet")
    back = ds.dataset(base, format="parquet", partitioning=None).to_table()
    assert sorted(back.column("model").to_pylist()) == sorted(WRITER_HOSTILE)


# --- report page names -------------------------------------------------------------------------------------------

def _row(model="dsr1", fa="sglang", fb="trtllm", hw="b200", precision="fp4", **extra):
    side = "|1024/1024|{hw}|{p}|spec=all|framework={f}"
    return {"kind": "framework", "title": f"{hw.upper()} {precision.upper()}: {framework_label(fa)} vs "
            f"{framework_label(fb)}", "model": model, "isl": 1024, "osl": 1024,
            "comparison_id": f"framework:{model}{side.format(hw=hw, p=precision, f=fa)}~"
                             f"{model}{side.format(hw=hw, p=precision, f=fb)}", **extra}


def test_page_names_differ_for_different_comparisons():
    """Comparisons whose readable names agree ('slug.model' and 'slug-model'; the framework key 'dynamo-trt-llm'
    and the known 'dynamo-trt', labelled 'Dynamo TRT-LLM'; a name cut at 120 characters) get different page
    names; a name that already says every key stays as it was."""
    assert slug(_row()) == "framework-b200-fp4-sglang-vs-trt-llm-dsr1-1024-1024"
    pairs = [(_row(model="slug.model"), _row(model="slug-model")),
             (_row(fa="dynamo-trt"), _row(fa="dynamo-trt-llm")),
             (_row(fa="x" * 150 + "a"), _row(fa="x" * 150 + "b")),
             (_row(fa="a-vs-b", fb="c"), _row(fa="a", fb="b-vs-c"))]
    for one, other in pairs:
        assert slug(one) != slug(other), (one["comparison_id"], slug(one))
        assert all(len(slug(r)) <= 120 and re.fullmatch(r"[a-z0-9-]+", slug(r)) for r in (one, other))


def test_sides_of_reads_a_comparison_id_back():
    from pipeline.frontiers.sides import enumerate_comparisons, sides_of

    runs = [{"model": "kimik2.5", "isl": isl, "osl": osl, "hw": hw, "precision": p, "spec_decoding": spec,
             "framework": f, "benchmark_type": kind}
            for hw in ("b200", "mi355x") for p in ("fp4", "fp8") for spec in ("none", "mtp")
            for f in ("sglang", "dynamo-trt") for isl, osl, kind in ((1024, 1024, "fixed_seq"),
                                                                    (None, None, "agentic_traces"))]
    comparisons = enumerate_comparisons(runs)
    assert {c.kind for c in comparisons} == {"spec_decoding", "framework", "precision", "hardware"}
    for c in comparisons:
        assert sides_of(c.comparison_id) == (c.kind, c.a, c.b)
    assert sides_of("framework:a|b|1024/1024|h100|fp8|spec=all|framework=x~a|1024/1024|h100|fp8|spec=all|"
                    "framework=y") is None


def test_build_report_refuses_two_comparisons_on_one_page(tmp_path, monkeypatch):
    """Were two comparisons ever to get one page name, the report fails naming both instead of writing one over
    the other."""
    import pipeline.comparisons.report as report

    monkeypatch.setattr(report, "slug", lambda row: "one-name")
    rows = [dict(_row(model=m), price_book=REPORT_PRICE_BOOK) for m in ("a", "b")]
    with pytest.raises(ValueError, match="one-name"):
        build_report(rows, [], [], tmp_path / "report")


def test_pages_no_comparison_has_are_removed(tmp_path):
    """The report folder starts as a copy of the last one: a page whose comparison is gone (or whose name changed)
    is removed, not left linked from nowhere."""
    report = tmp_path / "report"
    report.mkdir()
    (report / "hardware-b200-vs-mi355x-fp4-kimik2-5-agentic.html").write_text("an old page")
    build_report([], [], [], report)
    assert sorted(p.name for p in report.glob("*.html")) == ["index.html"]


# --- the scan's names --------------------------------------------------------------------------------------------

def test_a_literal_backslash_x_name_and_a_0xff_byte_are_listed_apart(tmp_path):
    (tmp_path / "\\xff.json").write_text("{}")
    with open(os.fsencode(tmp_path) + b"/\xff.json", "wb") as handle:
        handle.write(b"{}")
    rels = scan_folder(tmp_path).rel
    assert len(rels) == len(set(rels)) == 2 and "\\xff.json" in rels


def test_escaped_and_literal_names_through_the_parse_cache(tmp_path):
    """The parse cache keeps listed names: a first scan and a second (from the cache, and a quick scan) both read
    the run named with the text \\xff and refuse the one whose name has the byte 0xff, under two listed names."""
    from pipeline.ingest.folder import ingest_folder_cached

    raw = tmp_path / "raw"
    raw.mkdir()
    _copy(raw / "\\xff.json", BASE.format(16), model="xff")
    with open(os.fsencode(raw) + b"/\xff.json", "wb") as handle:
        handle.write((SOURCE / BASE.format(8)).read_bytes())
    seen = []
    for quick in (False, False, True):
        result, stats = ingest_folder_cached(raw, tmp_path / "cache", quick_scan=quick)
        seen.append((result.runs.column("source_file").to_pylist(),
                     [(r["source_file"], r["reason_code"]) for r in result.rejects.to_pylist()
                      if not r["reason_code"].startswith("not_a_run_log")], stats.cache_used))
    assert seen == [(["\\xff.json"], [("\ufffdff.json", "invalid_file_name")], False)] + [
        (["\\xff.json"], [("\ufffdff.json", "invalid_file_name")], True)] * 2


# --- the whole chain ---------------------------------------------------------------------------------------------

def _copy(log: Path, name: str, **meta) -> None:
    """One good sample run at ``log`` with its sidecar's keys replaced by ``meta`` (distinct content: ``label``)."""
    source = SOURCE / name
    run = json.loads(source.read_text(encoding="utf-8"))
    run["label"] = f"{log.parent.name}/{log.name}"
    log.write_text(json.dumps(run), encoding="utf-8")
    sidecar = json.loads(Path(f"{source}.meta.json").read_text(encoding="utf-8"))
    for telemetry in ("power_log", "start_time_unix"):
        sidecar.pop(telemetry)
    sidecar.update(meta)
    Path(f"{log}.meta.json").write_text(json.dumps(sidecar), encoding="utf-8")


@pytest.fixture(scope="module")
def hostile_folder(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The sample's MI355X vLLM runs as they are (good), and per hostile or kept model name the runs at conc 32,
    64 and 128 (4, 8 and 16 for Slug-Model, the key slug-model: other measurements, not repeats) at FP8 and again
    at FP4 (a precision comparison each) in folder ``m<i>/``; '..' also from a ``runs.csv`` and from an
    InferenceX file's own ``infmax_model_prefix``; a good run (model ``xff``) named with the text ``\\xff`` beside
    a run whose name has the byte 0xff. Returns the folder and the reason expected per file."""
    raw = tmp_path_factory.mktemp("safe-keys") / "raw"
    shutil.copytree(SOURCE, raw / "good")
    expected: dict[str, str] = {}
    for i, model in enumerate([*REFUSED, *KEPT]):
        folder = raw / f"m{i}"
        folder.mkdir()
        for precision in ("fp8", "fp4"):
            for conc in (4, 8, 16) if model == "Slug-Model" else (32, 64, 128):
                name = f"{precision}_{BASE.format(conc)}"
                _copy(folder / name, BASE.format(conc), model=model, precision=precision)
                expected[f"m{i}/{name}"] = "invalid_metadata:model" if model in REFUSED else "accepted"
    manifest = raw / "manifest"
    manifest.mkdir()
    lines = ["file,model,hw,precision,tp,isl,osl,run_date"]
    for conc in (32, 64):
        run = json.loads((SOURCE / BASE.format(conc)).read_text(encoding="utf-8"))
        run["label"] = f"manifest {conc}"
        (manifest / BASE.format(conc)).write_text(json.dumps(run), encoding="utf-8")
        lines.append(f"{BASE.format(conc)},..,mi355x,fp8,8,8192,1024,2026-07-14")
        expected[f"manifest/{BASE.format(conc)}"] = "invalid_metadata:model"
    (manifest / "runs.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (raw / "infx").mkdir()
    for conc in (4, 8):
        doc = json.loads(Path(str(INFERENCEX).format(conc)).read_text(encoding="utf-8"))
        doc["infmax_model_prefix"] = ".."
        (raw / "infx" / f"agg_{conc}.json").write_text(json.dumps(doc), encoding="utf-8")
        expected[f"infx/agg_{conc}.json"] = "invalid_metadata:model"
    names = raw / "names"
    names.mkdir()
    _copy(names / "\\xff.json", BASE.format(16), model="xff")
    expected["names/\\xff.json"] = "accepted"
    with open(os.fsencode(names) + b"/\xff.json", "wb") as handle:
        handle.write((SOURCE / BASE.format(8)).read_bytes())
    for conc in (4, 8, 16, 32, 64, 128):
        expected[f"good/{BASE.format(conc)}"] = "accepted"
    return raw, expected


def _pages(report: Path) -> dict[str, str]:
    """Each comparison page's file name -> the comparison id its embedded data names."""
    pages = {}
    for page in report.glob("*.html"):
        if page.name in ("index.html", "explorer.html"):
            continue
        found = re.search(r'<script type="application/json" id="[^"]*">(.*?)</script>',
                          page.read_text(encoding="utf-8"), re.S)
        pages[page.name] = json.loads(found.group(1))["comparison_id"]
    return pages


def test_one_run_over_hostile_model_names(hostile_folder, run_pipeline, tmp_path, monkeypatch):
    raw, expected = hostile_folder
    # the names are models the user made known (their sizes listed): what is under test is where they are written
    monkeypatch.setenv("PIPELINE_REFERENCE_DIR", str(reference_knowing_models(raw, tmp_path / "reference")))
    run = run_pipeline(raw)
    assert run.result.success
    assert all(run.check_results().values()), run.check_results()
    out = run.out_dir

    # every file and link under the out dir resolves inside it; nothing stray at its top
    for path in out.rglob("*"):
        assert path.resolve().is_relative_to(out.resolve()), path
    assert {p.name for p in out.iterdir()} <= {".generations", "current", "runs", "trends", "requests", "run_slo",
                                               "quarantine", "ingest_ledger", "frontiers.parquet",
                                               "comparisons.parquet", "frontiers_slo.parquet",
                                               "comparisons_slo.parquet", "regressions.parquet", "report"}

    # the good runs are all in runs/; the ledger's accepted count is the rows of runs/
    runs = run.mart("runs").to_pylist()
    files = Counter(r["source_file"] for r in runs)
    assert {f for f, why in expected.items() if why == "accepted"} == set(files)
    ledger = run.mart("ingest_ledger").to_pylist()
    assert sum(r["accepted_rows"] for r in ledger) == len(runs) == sum(files.values())
    assert {r["model"] for r in runs} == {"qwen3.5-397b-a17b", "slug.model", "slug-model", "xff"}

    # the hostile runs are in the quarantine with their reason and a detail saying why
    quarantine = run.mart("quarantine").to_pylist()
    reasons = {r["source_file"]: r["reason_code"] for r in quarantine}
    for name, why in expected.items():
        if why != "accepted":
            assert reasons.get(name) == why, name
    for i, (model, words) in enumerate(REFUSED.items()):
        details = {r["detail"] for r in quarantine if r["source_file"].startswith(f"m{i}/")
                   and r["reason_code"] == "invalid_metadata:model"}
        assert len(details) == 6, (model, details)
        assert all(words in d for d in details), (model, details)
    # the name with the byte 0xff is refused under its own listed name; the one named with the text \\xff is read
    logs = [r for r in ledger if r["source_file"].startswith("names/") and not r["source_file"].endswith(".meta.json")]
    assert sorted(r["outcome"] for r in logs) == ["accepted", "quarantined"] and len({r["source_file"] for r in logs}) == 2
    assert [r["reason_code"] for r in quarantine if r["source_file"] in {r["source_file"] for r in logs}] == [
        "invalid_file_name"]

    # one page per comparison: slug.model and slug-model each have theirs, and the index links every page
    comparisons = {r["comparison_id"]: r for r in unrestricted(run.mart("comparisons")).to_pylist()
                   if r["price_book"] == REPORT_PRICE_BOOK}
    pages = _pages(out / "report")
    assert sorted(pages.values()) == sorted(comparisons)
    assert {comparisons[c]["model"] for c in pages.values()} >= {"slug.model", "slug-model"}
    index = (out / "report" / "index.html").read_text(encoding="utf-8")
    assert sorted(re.findall(r'<a href="([^"]+)">', index)) == sorted(pages)
