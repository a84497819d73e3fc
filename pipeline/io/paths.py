"""Where things live: the project root, the SQL folder, and the three paths users configure by env var.

Environment variables (docs/inputs.md), defaults relative to the project root:
- ``PIPELINE_RAW_DIR`` [data/sample]   folder scanned recursively for raw logs
- ``PIPELINE_OUT_DIR`` [data/marts]    where the Parquet marts are written
- ``PIPELINE_DB_PATH`` [data/warehouse.duckdb]
- ``PIPELINE_CACHE_DIR`` [<PIPELINE_DB_PATH>.parse_cache]  the parse cache (pipeline/ingest/parse_cache/)
- ``PIPELINE_REFERENCE_DIR`` [data/reference]  the reference tables: GPUs, aliases, peaks, plausibility, SLOs
A relative value given in the environment is taken relative to the current directory, as a shell user expects.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SQL_DIR = PROJECT_ROOT / "sql"
REFERENCE_DIR = PROJECT_ROOT / "data" / "reference"

_DEFAULTS = {
    "PIPELINE_RAW_DIR": PROJECT_ROOT / "data" / "sample",
    "PIPELINE_OUT_DIR": PROJECT_ROOT / "data" / "marts",
    "PIPELINE_DB_PATH": PROJECT_ROOT / "data" / "warehouse.duckdb",
}


def env_path(name: str) -> str:
    """Absolute path for one of the ``PIPELINE_*`` variables (its value, else the documented default).

    Raises:
        KeyError: ``name`` is not one of the three documented variables.
    """
    value = os.environ.get(name)
    if value:
        return str(Path(value).expanduser().resolve())
    return str(_DEFAULTS[name])


def parse_cache_dir() -> str:
    """Absolute path of the parse cache: ``PIPELINE_CACHE_DIR``, else ``<PIPELINE_DB_PATH>.parse_cache`` beside
    the warehouse (a second warehouse, e.g. a test's, gets its own cache)."""
    value = os.environ.get("PIPELINE_CACHE_DIR")
    if value:
        return str(Path(value).expanduser().resolve())
    return env_path("PIPELINE_DB_PATH") + ".parse_cache"


def reference_dir() -> Path:
    """The reference folder: ``PIPELINE_REFERENCE_DIR`` when set (absolute, ``~`` expanded), else ``data/reference``.

    Read at each call, so a process (or test) that sets the variable sees its own folder. It holds
    ``gpu_reference.csv``, ``gpu_aliases.csv``, ``gpu_peak_flops.csv``, ``model_active_params.csv``,
    ``plausibility.csv``, ``slos.csv`` and the optional ``overrides.csv`` (data/reference/README.md).
    """
    value = os.environ.get("PIPELINE_REFERENCE_DIR")
    return Path(value).expanduser().resolve() if value else REFERENCE_DIR


def sql_text(name: str) -> str:
    """The text of ``sql/<name>.sql`` (one statement per file, parameters bound by DuckDB).

    Raises:
        FileNotFoundError: no such SQL file.
    """
    return (SQL_DIR / f"{name}.sql").read_text(encoding="utf-8")


class OutputLocationError(OSError):
    """A location the pipeline writes (mart folder, warehouse folder, parse cache, ``DAGSTER_HOME``) cannot be
    written: the message is one line naming the variable, the path and the cause."""


def check_writable_folder(path: str, variable: str) -> None:
    """Make sure ``path`` is a folder this process can write, or can be created (its nearest existing ancestor is
    a writable folder), before any work is done, so a bad location fails in one line instead of after parsing.
    Creates nothing.

    Raises:
        OutputLocationError: ``path`` is a file, cannot be created (an ancestor is a file or not writable), or is
            not writable (read-only volume, permissions).
    """
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise OutputLocationError(f"{variable} {folder} is a file, not a folder: nothing run")
    ancestor = folder
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if ancestor != folder and not ancestor.is_dir():
        raise OutputLocationError(f"{variable} {folder} cannot be created (Not a directory): nothing run")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        why = "is not writable" if ancestor == folder else f"cannot be created ({ancestor} is not writable)"
        raise OutputLocationError(f"{variable} {folder} {why} (read-only volume or permissions): nothing run")


def check_output_locations() -> None:
    """``check_dagster_home``, then ``check_writable_folder`` for the mart folder (``PIPELINE_OUT_DIR``), the
    warehouse's folder (``PIPELINE_DB_PATH``; the warehouse itself must not be a folder) and the parse cache
    (``check_parse_cache``).

    Raises:
        OutputLocationError: one of them cannot be written.
    """
    check_dagster_home()
    check_writable_folder(env_path("PIPELINE_OUT_DIR"), "PIPELINE_OUT_DIR")
    database = Path(env_path("PIPELINE_DB_PATH"))
    if database.is_dir():
        raise OutputLocationError(f"PIPELINE_DB_PATH {database} is a folder, not a DuckDB file: nothing run")
    check_writable_folder(str(database.parent), "PIPELINE_DB_PATH's folder")
    check_parse_cache()


def check_parse_cache() -> None:
    """``check_writable_folder`` for the parse cache (``parse_cache_dir``), named ``PIPELINE_CACHE_DIR`` when that
    is set, else as the default beside the warehouse.

    Raises:
        OutputLocationError: the cache folder is a file, cannot be created or is not writable.
    """
    variable = "PIPELINE_CACHE_DIR" if os.environ.get("PIPELINE_CACHE_DIR") else \
        "the parse cache beside PIPELINE_DB_PATH (PIPELINE_CACHE_DIR unset)"
    check_writable_folder(parse_cache_dir(), variable)


def check_dagster_home() -> None:
    """When ``DAGSTER_HOME`` is set (commands then record their runs in its Dagster instance), make sure it names
    a writable folder before anything is done, so a wrong value fails in one line instead of in Dagster's
    traceback. Unset is fine (a throwaway instance).

    Raises:
        OutputLocationError: ``DAGSTER_HOME`` is not an absolute path (Dagster requires one), does not exist, is a
            file, or is not writable.
    """
    value = os.environ.get("DAGSTER_HOME")
    if not value:
        return
    home = Path(value).expanduser()
    if not home.is_absolute():
        raise OutputLocationError(f"DAGSTER_HOME {value} is not an absolute path (Dagster requires one): nothing run")
    if not home.exists():
        raise OutputLocationError(f"DAGSTER_HOME {home} does not exist: create it (and copy dagster.yaml into it) "
                                  "or unset it for a throwaway instance: nothing run")
    if not home.is_dir():
        raise OutputLocationError(f"DAGSTER_HOME {home} is a file, not a folder: nothing run")
    if not os.access(home, os.W_OK | os.X_OK):
        raise OutputLocationError(f"DAGSTER_HOME {home} is not writable (read-only volume or permissions): "
                                  "nothing run")


@contextmanager
def pointed_at(raw_dir: Path, out_dir: Path, db_path: Path) -> Iterator[None]:
    """``PIPELINE_RAW_DIR``, ``PIPELINE_OUT_DIR`` and ``PIPELINE_DB_PATH`` set to these folders for the block, and
    ``PIPELINE_CACHE_DIR`` unset so the parse cache is the one beside ``db_path``; all four restored after (unset
    again where they were unset): how a command runs the pipeline on folders of its own (``python -m pipeline
    overlay``, the screenshot script) without changing the caller's environment or writing the caller's parse
    cache (it holds one raw folder: another folder's save would cost the caller's next run a full parse)."""
    names = ("PIPELINE_RAW_DIR", "PIPELINE_OUT_DIR", "PIPELINE_DB_PATH", "PIPELINE_CACHE_DIR")
    before = {name: os.environ.get(name) for name in names}
    os.environ.pop("PIPELINE_CACHE_DIR", None)
    os.environ.update(PIPELINE_RAW_DIR=str(raw_dir), PIPELINE_OUT_DIR=str(out_dir), PIPELINE_DB_PATH=str(db_path))
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
