"""The layout rule: one library package per stage, named as its Dagster group and its ``defs/`` folder, and the
data flow visible in the imports.

- A stage's library package (``pipeline/<stage>/``) imports only ``pipeline.io`` and its own or earlier stages.
- A stage's Dagster wiring (``pipeline/defs/<stage>/``) imports only its own stage's library, ``pipeline.io``, the
  shared wiring at ``pipeline/defs/*.py`` and the wiring of its own or earlier stages (for their asset keys).
- ``pipeline.io`` imports no stage.
"""

import ast
import importlib
import io
import re
import tokenize
from pathlib import Path

import dagster as dg
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pipeline"
STAGES = ("ingest", "validate", "metrics", "frontiers", "comparisons")


def pipeline_imports(path: Path) -> list[str]:
    """Every ``pipeline.…`` module a file imports (top level or inside functions)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "pipeline":
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "pipeline"]
    return found


def violations(folder: Path, allowed) -> list[str]:
    """``"<file> imports <module>"`` for every import under ``folder`` that ``allowed(module)`` refuses."""
    return [f"{path.relative_to(folder.parent)} imports {module}"
            for path in sorted(folder.rglob("*.py")) for module in pipeline_imports(path) if not allowed(module)]


def stage_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_stage_has_a_library_package_and_a_defs_folder():
    for stage in STAGES:
        assert (PACKAGE / stage / "__init__.py").is_file(), stage
        assert (PACKAGE / "defs" / stage / "__init__.py").is_file(), stage
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert flat == ["__init__.py", "__main__.py", "definitions.py"], "stage logic belongs in a stage package"


@pytest.mark.parametrize("stage", STAGES)
def test_library_imports_only_io_and_earlier_stages(stage):
    earlier = STAGES[:STAGES.index(stage) + 1]
    assert violations(PACKAGE / stage, lambda m: stage_of(m) in ("io", *earlier)) == []


@pytest.mark.parametrize("stage", STAGES)
def test_defs_import_only_their_stage_io_and_wiring(stage):
    earlier_defs = {f"pipeline.defs.{s}" for s in STAGES[:STAGES.index(stage) + 1]}
    shared_wiring = {f"pipeline.defs.{p.stem}" for p in (PACKAGE / "defs").glob("*.py") if p.stem != "__init__"}

    def allowed(module: str) -> bool:
        if stage_of(module) == "defs":
            return module in shared_wiring or ".".join(module.split(".")[:3]) in earlier_defs
        return stage_of(module) in ("io", stage)

    assert violations(PACKAGE / "defs" / stage, allowed) == []


def test_io_imports_no_stage():
    assert violations(PACKAGE / "io", lambda m: stage_of(m) == "io") == []


def test_rule_finds_a_stage_importing_a_later_one(tmp_path):
    """The checker itself can fail: a library module reaching into a later stage, even inside a function."""
    bad = tmp_path / "ingest" / "peek.py"
    bad.parent.mkdir()
    bad.write_text("import os\n\ndef f():\n    from pipeline.frontiers.pareto import pareto_frontier\n")
    assert violations(tmp_path / "ingest", lambda m: stage_of(m) in ("io", "ingest")) == [
        "ingest/peek.py imports pipeline.frontiers.pareto"]


@pytest.mark.parametrize("stage", STAGES)
def test_assets_of_a_defs_folder_are_in_the_group_of_that_name(stage):
    """From a group in the UI to its folder in one hop: every asset defined under ``defs/<stage>/`` is in group
    ``<stage>``."""
    modules = [importlib.import_module(f"pipeline.defs.{stage}.{p.stem}")
               for p in sorted((PACKAGE / "defs" / stage).glob("*.py")) if p.stem != "__init__"]
    assets = [value for module in modules for value in vars(module).values()
              if isinstance(value, dg.AssetsDefinition) and value.keys]
    assert assets, stage
    assert {group for asset in assets for group in asset.group_names_by_key.values()} == {stage}


def key_naming_problems(groups_by_key: dict[dg.AssetKey, str]) -> list[str]:
    """What breaks the key rule in ``{asset key: group name}``: a key whose first component is not its group, a
    key of other than two components (``<group>/<name>``), and a name (last component) that two keys share."""
    problems = [f"{key.to_user_string()}: {len(key.path)} components, expected <group>/<name>"
                for key in groups_by_key if len(key.path) != 2]
    problems += [f"{key.to_user_string()}: first component {key.path[0]!r} is not its group {group!r}"
                 for key, group in groups_by_key.items() if key.path[0] != group]
    names: dict[str, list[str]] = {}
    for key in groups_by_key:
        names.setdefault(key.path[-1], []).append(key.to_user_string())
    problems += [f"name {name!r} shared by {', '.join(sorted(keys))}" for name, keys in sorted(names.items())
                 if len(keys) > 1]
    return problems


def test_every_asset_key_starts_with_its_group_and_names_are_unique():
    """In the UI a key's first component is the group it is listed under, and the short name (last component) the
    lineage graph shows names one asset only."""
    from pipeline.definitions import defs

    graph = defs().resolve_asset_graph()
    groups = {key: graph.get(key).group_name for key in graph.get_all_asset_keys() if graph.get(key).is_materializable}
    assert len(groups) == 16  # every asset of pipeline/defs (tests/test_pipeline_end_to_end.py lists them)
    assert key_naming_problems(groups) == []
    assert {k.path[0] for k in groups} == set(STAGES)  # every stage has assets, nothing outside the stages


def test_key_rule_finds_a_wrong_prefix_and_a_shared_name():
    """The checker itself can fail: the old ``marts/`` prefix in group comparisons, and two ``trends``."""
    problems = key_naming_problems({dg.AssetKey(["marts", "comparisons"]): "comparisons",
                                    dg.AssetKey(["comparisons", "trends"]): "comparisons",
                                    dg.AssetKey(["metrics", "trends"]): "metrics",
                                    dg.AssetKey(["ingest", "raw", "runs"]): "ingest"})
    assert problems == ["ingest/raw/runs: 3 components, expected <group>/<name>",
                        "marts/comparisons: first component 'marts' is not its group 'comparisons'",
                        "name 'trends' shared by comparisons/trends, metrics/trends"]


def test_the_length_rule_is_written_once():
    """docs/metrics.md section 5 calls ``sql/run_lengths.sql`` the one place of the length rule: no other SQL or
    Python file writes its expected mean (``1 + coalesce(random_range_ratio``), and the validate stage runs that
    very file (``pipeline/validate/lengths.py``) rather than a copy."""
    root = Path(__file__).resolve().parents[1]
    writers = [p.relative_to(root).as_posix() for p in [*root.glob("sql/*.sql"), *root.glob("pipeline/**/*.py")]
               if "(1 + coalesce(random_range_ratio" in p.read_text(encoding="utf-8")]
    assert writers == ["sql/run_lengths.sql"]
    assert 'sql_text("run_lengths")' in (root / "pipeline" / "validate" / "lengths.py").read_text(encoding="utf-8")


def test_input_throughput_is_derived_in_one_place():
    """``parsers.base.input_throughput`` is the one place a parser derives input tok/s from total and output tok/s
    (both TRT-LLM parsers once subtracted it inline): no other parser module assigns ``input_tput_tok_s`` from a
    subtraction."""
    import re
    root = Path(__file__).resolve().parents[1]
    inline = re.compile(r"(input_tput_tok_s=|\[\"input_tput_tok_s\"\]\s*=)[^,\n]*\s-\s")  # a kwarg or item
    writers = [p.name for p in (root / "pipeline" / "ingest" / "parsers").glob("*.py")
               if inline.search(p.read_text(encoding="utf-8"))]
    assert writers == []


# Timing history belongs in commit messages and docs/performance.md, never in comments or docstrings: a comment
# states the rule and why, and stays true when the numbers move. The checker reads comment and docstring text only
# (Python comments by ``tokenize``, docstrings by ``ast``, ``--`` comments in SQL) and flags a sentence where a
# figure with a time or memory unit stands next to a word that makes it a measurement ("onto a million runs
# ~1.4 GB", "0.2 s instead of 0.57 s", "took ~0.65 s"), a before -> after pair, or a speed ratio ("~10x faster").
FIGURE = r"~?\d[\d,]*(?:\.\d+)?(?:\s?[-–]\s?~?\d[\d,]*(?:\.\d+)?)?\s?(?:ms|s|seconds?|min|minutes?|[KMGT]i?B|kB)\b"
MEASURED = (r"\b(?:before|after|onto|took|takes|was|were|used to|instead of|peak(?:ed)?|resident|allocated|measured"
            r"|per copy|costs?|1M|100k|1\.35M|100,000-run|million (?:runs|files))\b")
TIMING_HISTORY = [
    re.compile(rf"{FIGURE}.{{0,60}}{MEASURED}|{MEASURED}.{{0,60}}{FIGURE}", re.IGNORECASE),
    re.compile(rf"\bfrom ~?\d[\d.,]* (?:to|->) {FIGURE}"
               rf"|{FIGURE}\s*(?:->|→)\s*~?\d|~?\d[\d.,]*\s*(?:->|→)\s*{FIGURE}"),
    re.compile(r"\(~?\d[\d.]*(?:[-–]\d[\d.]*)? (?:ms|s)\)|~?\d[\d.]* (?:ms|s) (?:of|per|each|a|for) "),
    re.compile(r"~?\d+(?:\.\d+)?\s?(?:x|×|%) (?:faster|slower|larger|smaller)\b"
               r"|\b(?:half|a quarter|a third|twice|\w+ times) (?:of )?(?:the|as|its) [\w' ]{0,20}(?:cost|time)\b"
               r"|\b(?:was|were|took) most of the\b", re.IGNORECASE),
]
# Exact phrases that read as history to the checker and are not, with the reason; each must still occur (a phrase
# that is gone is taken off the list).
NOT_HISTORY = {
    "local time, 1 s, idle before and after the benchmark window": "the sample telemetry's sampling interval",
}


def comment_texts(path: Path) -> list[tuple[int, str]]:
    """(first line, text) of every comment block (consecutive comment lines joined) and every docstring of a
    Python file, or of every ``--`` comment block of a SQL file; whitespace collapsed to single spaces."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".sql":
        comments = [(n, line.split("--", 1)[1]) for n, line in enumerate(text.splitlines(), 1) if "--" in line]
    else:
        comments = [(token.start[0], token.string.lstrip("#"))
                    for token in tokenize.generate_tokens(io.StringIO(text).readline)
                    if token.type == tokenize.COMMENT]
    blocks: list[list] = []  # [first line, last line, text]
    for n, body in comments:
        if blocks and blocks[-1][1] == n - 1:
            blocks[-1][1:] = [n, f"{blocks[-1][2]} {body}"]
        else:
            blocks.append([n, n, body])
    if path.suffix == ".py":
        blocks += [[node.body[0].lineno, None, ast.get_docstring(node)] for node in ast.walk(ast.parse(text))
                   if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                   and ast.get_docstring(node) is not None]
    return [(first, " ".join(body.split())) for first, _, body in blocks]


def timing_history(files: list[Path], root: Path, allowed: dict[str, str]) -> tuple[list[str], set[str]]:
    """``"<file>:<line>: <the flagged words>"`` for each comment or docstring of ``files`` that carries timing
    history, and the phrases of ``allowed`` that were found (and left out of the check)."""
    found, used = [], set()
    for path in files:
        for line, text in comment_texts(path):
            for phrase in allowed:
                if phrase in text:
                    used.add(phrase)
                    text = text.replace(phrase, " ")
            flagged = [match.group(0) for sentence in re.split(r"(?<=[.;])\s+", text)
                       for pattern in TIMING_HISTORY for match in pattern.finditer(sentence)]
            if flagged:
                found.append(f"{path.relative_to(root).as_posix()}:{line}: {' | '.join(flagged)}")
    return found, used


def test_no_timing_history_in_comments_or_docstrings():
    """A comment or docstring of ``pipeline/`` or ``sql/`` keeps the rule and why; the figures that justified it go
    to docs/performance.md."""
    root = PACKAGE.parent
    files = sorted([*PACKAGE.rglob("*.py"), *(root / "sql").glob("*.sql")])
    found, used = timing_history(files, root, NOT_HISTORY)
    assert found == [], "timing history in a comment or docstring (move it to docs/performance.md)"
    assert set(NOT_HISTORY) - used == set(), "NOT_HISTORY lists a phrase that no longer occurs"


def test_timing_history_check_finds_figures_and_spares_rules(tmp_path):
    """The checker itself can fail, in a comment, a docstring and a SQL comment, and leaves rules and units alone."""
    (tmp_path / "a.py").write_text(
        '"""Streams the cache (onto a million runs ~1.4 GB not loaded)."""\n'
        "CAP = 32  # files over 32 MiB are streamed, a 1GB default memory limit; latencies in ms\n"
        "\n# the delta save took 0.20-0.25 s instead of\n# 0.57 s\n"
        "\nLEVEL = 1  # ~40 % faster\n"
        "def f():\n    '''Peak 1.72 -> 1.59 GiB.'''\n")
    (tmp_path / "b.sql").write_text("select 1 -- real logs 2.6 ms to 1.4 s\n\n-- 0.55 s for a night's files\n")
    found, _ = timing_history(sorted(tmp_path.iterdir()), tmp_path, {})
    assert [f.split(":")[:2] for f in found] == [["a.py", "4"], ["a.py", "7"], ["a.py", "1"], ["a.py", "9"],
                                                 ["b.sql", "3"]]


def test_ci_entry_stops_in_one_line_without_the_real_logs(tmp_path):
    """``.ci/run`` on a clone with no ``../shared/real-logs`` beside it stops before installing anything, exit 1,
    with one line naming the folder, whatever ``CI`` says in the caller's environment."""
    import os
    import shutil
    import subprocess

    clone = tmp_path / "clone"
    (clone / ".ci").mkdir(parents=True)
    shutil.copy(PACKAGE.parent / ".ci" / "run", clone / ".ci" / "run")
    for ci in ("", "false"):
        done = subprocess.run(["bash", str(clone / ".ci" / "run")], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "CI": ci})
        assert done.returncode == 1
        assert done.stderr.strip().splitlines() == [
            "ci: ../shared/real-logs not found beside the clone (the real-log tests read it)"]
        assert not (clone / ".venv").exists()
