"""What a publish may lose, and who may publish: the guard ``pipeline.io.generations.publish`` runs under its
lock, on the generation about to become ``current``.

**Input loss against the last publish.** A generation's accepted runs are counted per line and run date (the
``runs/`` mart's ``line_id`` and ``run_date_partition``; a run counted once, whatever its price books) and judged
against a baseline: the counts of the last confirmed publish. A baseline cell (line, date) loses
max(0, baseline − now) runs, except that a line whose newest run date is now later than its newest date in the
baseline loses nothing (a newer sweep of the line arrived: under the latest-run rule its older runs are
superseded, so their files may go). Growth is never loss, and never offsets another cell's loss. A publish that
loses more than ``max_loss_share`` of the baseline's runs is refused with ``AcceptedRunsLossError`` (one line:
before, after, lost share, the biggest lost lines); nothing is published and ``current`` stays where it was.

The baseline only steps down on purpose: after a publish that lost nothing, or one with ``allow_shrink``, the
next baseline is that generation's counts; after one that lost less than the allowed share, it is, per cell, the
larger of the old baseline and the new counts (less the cells of replaced lines), so two 15 % losses in a row
are judged as 28 % and growth since the last confirmed publish is guarded too.

**One writer per mart folder.** Each generation records the warehouse that published it: its resolved path and
the id stored inside it (table ``warehouse_identity``, so a moved warehouse is still recognized; a warehouse
rebuilt at the same path, or at the same place beside a mart folder moved with it, is the same writer). A run
whose warehouse matches none of these is refused with ``OtherWarehouseError`` unless ``switch_warehouse``: two
warehouses publishing into one folder rebase each other's partitions into generations that mix two histories
(frontier runs missing from ``runs/``).

Both are recorded in the generation's ``RECORD`` file (``_accepted_runs.parquet``, skipped by readers: the
leading ``_``): rows ``role`` = ``published`` (this generation's counts) and ``baseline`` (what it was judged
against), and the footer key ``RECORD_KEY`` holding the verdict and the warehouse (docs/marts.md).
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.io.generations import publish, published_dir
from pipeline.io.storage import write_parquet_atomic

RECORD = "_accepted_runs.parquet"
RECORD_KEY = b"inference_frontier.publish"
RECORD_SCHEMA = pa.schema([("role", pa.string()), ("line_id", pa.string()), ("run_date_partition", pa.string()),
                           ("accepted_runs", pa.int64())])
WAREHOUSE_ID_TABLE = "warehouse_identity"
DEFAULT_MAX_LOSS_SHARE = 0.2
BIGGEST_LINES = 3  # lost lines named in a refusal
_UNDATED = "undated"  # run_date_partition of runs without a date: older than every date

Cell = tuple[str, str]  # (line_id, run_date_partition)


class AcceptedRunsLossError(RuntimeError):
    """This generation accepts more than the allowed share fewer runs than the last confirmed publish. One line:
    before, after, lost share, the biggest lost lines and the way through (``--allow-shrink``)."""


class RecordUnreadableError(RuntimeError):
    """The current generation's ``RECORD`` exists but cannot be read: the baseline and the writer are unknown, so
    nothing is published. One line naming the file and the way through."""


class OtherWarehouseError(RuntimeError):
    """The mart folder's current generation was published from another warehouse. One line naming both and the
    way through (``--switch-warehouse``)."""


@dataclass(frozen=True)
class WarehouseIdentity:
    """A warehouse as a generation records it: ``path`` (resolved, symlinks followed) and ``id`` (a UUID hex
    stored in the warehouse's table ``warehouse_identity``)."""

    path: str
    id: str

    def same_as(self, other: WarehouseIdentity, out_dir: Path, other_out_dir: Path | str | None = None) -> bool:
        """The same writer: same id (the file moved), same path (the file was rebuilt or replaced in place), or
        the same place relative to the mart folder (``out_dir`` now, ``other_out_dir`` when ``other`` was
        recorded: the folder holding both moved as one, and the warehouse was rebuilt there)."""
        if self.id == other.id or self.path == other.path:
            return True
        return other_out_dir is not None and \
            os.path.relpath(self.path, os.path.realpath(out_dir)) == os.path.relpath(other.path, other_out_dir)

    def describe(self) -> str:
        """``/path/w.duckdb (id 1a2b3c4d)`` for a one-line message."""
        return f"{self.path} (id {self.id[:8]})"


@dataclass(frozen=True)
class Record:
    """A generation's ``RECORD`` read back: its counts, the baseline it was judged against (None: nothing to judge
    against) and the footer's fields (``meta``: ``generation``, ``warehouse_path``, ``warehouse_id``,
    ``allow_shrink``, ``lost_runs``, ``baseline_since`` …)."""

    published: dict[Cell, int]
    baseline: dict[Cell, int] | None
    meta: dict = field(default_factory=dict)

    @property
    def warehouse(self) -> WarehouseIdentity | None:
        """The warehouse that published it, None when not recorded."""
        path, wid = self.meta.get("warehouse_path"), self.meta.get("warehouse_id")
        return WarehouseIdentity(path, wid) if path and wid else None


@dataclass(frozen=True)
class Verdict:
    """A generation judged against its baseline: ``before`` (baseline runs; None without a baseline), ``after``
    (runs now), ``lost`` (runs lost per baseline cell, only cells that lost), ``replaced`` (lines whose newer
    sweep excuses their older cells)."""

    before: int | None
    after: int
    lost: dict[Cell, int]
    replaced: frozenset[str]

    @property
    def lost_runs(self) -> int:
        """Runs of the baseline lost in all."""
        return sum(self.lost.values())

    @property
    def lost_share(self) -> float:
        """``lost_runs`` / ``before`` (0 without a baseline or with an empty one)."""
        return self.lost_runs / self.before if self.before else 0.0

    def lost_lines(self) -> list[tuple[str, int]]:
        """Lost runs per line, most first (ties by line id)."""
        per_line: dict[str, int] = {}
        for (line, _), n in self.lost.items():
            per_line[line] = per_line.get(line, 0) + n
        return sorted(per_line.items(), key=lambda kv: (-kv[1], kv[0]))


def warehouse_identity(conn: duckdb.DuckDBPyConnection, database: str) -> WarehouseIdentity:
    """This warehouse's identity: ``database`` resolved, and the id in table ``warehouse_identity`` (created with
    a fresh UUID the first time; a warehouse rebuilt after corruption gets a new one).

    Args:
        conn: a connection to the warehouse (it may write the table).
        database: the warehouse's file path (``Warehouse.database``).
    """
    conn.execute(f"create table if not exists {WAREHOUSE_ID_TABLE} (id varchar, created_at timestamptz)")
    row = conn.execute(f"select id from {WAREHOUSE_ID_TABLE} limit 1").fetchone()
    if row is None:
        row = (uuid.uuid4().hex,)
        conn.execute(f"insert into {WAREHOUSE_ID_TABLE} values (?, now())", [row[0]])
    return WarehouseIdentity(os.path.realpath(database), row[0])


def accepted_counts(folder: Path) -> dict[Cell, int]:
    """Accepted runs per (``line_id``, ``run_date_partition``) of the ``runs/`` mart in ``folder`` (a generation,
    a staging folder, or a mart folder of the layout before generations): distinct ``run_id`` (one row per run
    and price book in the mart). Files whose names start with ``.`` or ``_`` are skipped, as readers do; no
    ``runs/`` or no file: no cell. A run without a line id is counted under ``""``."""
    files = sorted(str(p) for p in (Path(folder) / "runs").rglob("*.parquet")
                   if not any(part.startswith((".", "_")) for part in p.relative_to(folder).parts))
    if not files:
        return {}
    with duckdb.connect() as conn:
        rows = conn.execute(
            "select coalesce(line_id, ''), run_date_partition, count(distinct run_id) "
            "from read_parquet($files, union_by_name = true) group by all", {"files": files}).fetchall()
    return {(line, date): n for line, date, n in rows}


def read_record(generation: Path) -> Record | None:
    """The ``RECORD`` of ``generation``, None when it has none (published before the guard, or never).

    Raises:
        RecordUnreadableError: the file exists but is not a readable record (not Parquet, other columns, a footer
            that is not JSON).
    """
    path = Path(generation) / RECORD
    if not path.is_file():
        return None
    try:
        table = pq.read_table(path)
        meta = orjson.loads((table.schema.metadata or {}).get(RECORD_KEY, b"{}"))
        table = table.cast(RECORD_SCHEMA)
    except (OSError, ValueError, pa.ArrowInvalid, orjson.JSONDecodeError) as exc:
        cause = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise RecordUnreadableError(
            f"{path} cannot be read ({cause}): the baseline and the writer of the published marts are unknown, "
            "nothing published; move the file aside to judge against that generation's runs/ alone and accept "
            "any warehouse") from exc
    cells: dict[str, dict[Cell, int]] = {"published": {}, "baseline": {}}
    for role, line, date, n in zip(*(table.column(name).to_pylist() for name in RECORD_SCHEMA.names)):
        cells.setdefault(role, {})[(line, date)] = n
    return Record(cells["published"], cells["baseline"] if meta.get("baseline_runs") is not None else None, meta)


def judge(baseline: dict[Cell, int] | None, now: dict[Cell, int]) -> Verdict:
    """Judge counts ``now`` against ``baseline`` (both (line, date) → accepted runs), the rule of this module's
    docstring: a cell loses max(0, baseline − now) unless its line's newest date now is later than its newest
    date in the baseline (``undated`` is older than every date); growth counts for nothing."""
    after = sum(now.values())
    if baseline is None:
        return Verdict(None, after, {}, frozenset())
    newest_before, newest_now = _newest_dates(baseline), _newest_dates(now)
    replaced = frozenset(line for line, newest in newest_before.items()
                         if line in newest_now and newest_now[line] > newest)
    lost = {cell: n - now.get(cell, 0) for cell, n in baseline.items()
            if cell[0] not in replaced and n > now.get(cell, 0)}
    return Verdict(sum(baseline.values()), after, lost, replaced)


def next_baseline(record: Record) -> dict[Cell, int]:
    """What the publish after ``record``'s generation is judged against: its own counts when it had no baseline,
    lost nothing or was published with ``allow_shrink``; else, per cell, the larger of its baseline and its
    counts, the cells of lines a newer sweep replaced taken from its counts only."""
    if record.baseline is None or record.meta.get("allow_shrink"):
        return dict(record.published)
    verdict = judge(record.baseline, record.published)
    carried = dict(record.published)
    for cell, n in record.baseline.items():
        if cell[0] not in verdict.replaced:
            carried[cell] = max(n, carried.get(cell, 0))
    return carried


def baseline_of(current: Path) -> tuple[dict[Cell, int] | None, str, Record | None]:
    """The baseline a publish onto ``current`` (the published generation, ``published_dir``) is judged against,
    the name of the generation that last set it (for messages), and ``current``'s record. A generation without
    a record (published before the guard) is its own baseline, counted from its ``runs/``; no ``runs/`` at all:
    no baseline (the first publish)."""
    record = read_record(current)
    if record is not None:
        return next_baseline(record), str(record.meta.get("baseline_since") or current.name), record
    if not (Path(current) / "runs").is_dir():
        return None, "", None
    return accepted_counts(current), current.name, None


def check_writer(out_dir: Path, warehouse: WarehouseIdentity, switch_warehouse: bool = False,
                 record: Record | None = None) -> None:
    """Refuse a run whose warehouse is not the one that published ``out_dir``'s current generation.

    Args:
        out_dir: ``PIPELINE_OUT_DIR``.
        warehouse: this run's warehouse.
        switch_warehouse: True when this warehouse takes the mart folder over on purpose.
        record: the current generation's record when already read (else it is read here).
    Raises:
        OtherWarehouseError: the current generation records a warehouse with another id and another path, and
            not ``switch_warehouse``. A folder without a generation, or one published before generations
            recorded their warehouse, accepts any warehouse.
    """
    record = record if record is not None else read_record(published_dir(Path(out_dir)))
    recorded = record.warehouse if record is not None else None
    if switch_warehouse or recorded is None or warehouse.same_as(recorded, out_dir, record.meta.get("out_dir")):
        return
    raise OtherWarehouseError(
        f"mart folder {out_dir} is published from warehouse {recorded.describe()}, this run's warehouse is "
        f"{warehouse.describe()}: two warehouses on one mart folder would mix their generations, nothing "
        "published; point PIPELINE_DB_PATH at that warehouse or PIPELINE_OUT_DIR at another folder, or make this "
        "warehouse the folder's writer with --switch-warehouse (run config switch_warehouse: true)")


def guarded_publish(out_dir: Path, run_id: str, warehouse: WarehouseIdentity, allow_shrink: bool = False,
                    max_loss_share: float = DEFAULT_MAX_LOSS_SHARE, switch_warehouse: bool = False,
                    raw_snapshot: str | None = None) -> Path | None:
    """``pipeline.io.generations.publish`` of run ``run_id`` under this module's guard: under the publish lock,
    on the generation about to become current (after any rebase), check the writer, count its accepted runs,
    judge them against the baseline, write ``RECORD`` into it, and only then switch ``current``.

    Args:
        out_dir: ``PIPELINE_OUT_DIR``.
        run_id: the run's generation id (``pipeline.defs.resources.generation_id``).
        warehouse: this run's warehouse (``warehouse_identity``).
        allow_shrink: publish whatever the loss, and make this generation the baseline.
        max_loss_share: the largest share of the baseline's runs a publish may lose (0.2 = 20 %).
        switch_warehouse: this warehouse takes the folder over from the one that published it.
        raw_snapshot: the parse-cache generation the warehouse's raw tables hold (table ``raw_generation``),
            recorded as ``raw_snapshot`` so the sensor starts from the state the published marts were built from.
    Returns:
        The new generation's folder, or None when the run staged nothing.
    Raises:
        OtherWarehouseError: see ``check_writer``.
        RecordUnreadableError: see ``read_record``.
        AcceptedRunsLossError: more than ``max_loss_share`` of the baseline's runs lost without
            ``allow_shrink``. Either way nothing is published and ``current`` stays.
        OSError: the mart folder cannot be written.
    """
    def guard(folder: Path, current: Path, name: str) -> None:
        baseline, since, record = baseline_of(current)
        check_writer(out_dir, warehouse, switch_warehouse, record)
        now = accepted_counts(folder)
        verdict = judge(baseline, now)
        if not allow_shrink and verdict.before and verdict.lost_runs > max_loss_share * verdict.before:
            raise AcceptedRunsLossError(_refusal(verdict, since, max_loss_share))
        confirmed = baseline is None or allow_shrink or verdict.lost_runs == 0
        write_record(folder / RECORD, now, baseline, {
            "generation": name, "published_at": datetime.now(timezone.utc).isoformat(),
            "warehouse_path": warehouse.path, "warehouse_id": warehouse.id,
            "out_dir": os.path.realpath(out_dir),
            "accepted_runs": verdict.after, "baseline_runs": verdict.before, "baseline_since": name if confirmed
            else since, "judged_against": since or None, "lost_runs": verdict.lost_runs,
            "lost_share": round(verdict.lost_share, 6), "max_run_loss_share": max_loss_share,
            "allow_shrink": allow_shrink, "confirmed": confirmed, "raw_snapshot": raw_snapshot})

    return publish(Path(out_dir), run_id, guard=guard)


def write_record(path: Path, published: dict[Cell, int], baseline: dict[Cell, int] | None, meta: dict) -> None:
    """Write ``RECORD`` at ``path``: one row per cell of ``published`` (role ``published``) and of ``baseline``
    (role ``baseline``), sorted by role, line and date, with ``meta`` as JSON under the footer key
    ``RECORD_KEY``."""
    parts = [(role, cells) for role, cells in (("published", published), ("baseline", baseline or {}))]
    table = pa.table([
        [role for role, cells in parts for _ in cells],
        [line for _, cells in parts for line, _ in cells],
        [date for _, cells in parts for _, date in cells],
        [n for _, cells in parts for n in cells.values()],
    ], schema=RECORD_SCHEMA).sort_by([("role", "descending"), ("line_id", "ascending"),
                                     ("run_date_partition", "ascending")])
    write_parquet_atomic(table.replace_schema_metadata({RECORD_KEY: orjson.dumps(meta)}), path)


def _refusal(verdict: Verdict, since: str, max_loss_share: float) -> str:
    biggest = ", ".join(f"{line} -{n}" for line, n in verdict.lost_lines()[:BIGGEST_LINES])
    return (f"accepted runs fell from {verdict.before} (last confirmed publish {since}) to {verdict.after}: "
            f"{verdict.lost_runs} of them lost ({verdict.lost_share:.1%}, over the {max_loss_share:.0%} allowed); "
            f"biggest lost lines: {biggest}; nothing published, the previous generation stays current; if the "
            "loss is deliberate, run again with --allow-shrink (run config allow_shrink: true on "
            "ingest__parsed_runs and comparisons__published_marts)")


def _newest_dates(counts: dict[Cell, int]) -> dict[str, str]:
    """Each line's newest run date (ISO text; ``undated`` as the empty string, older than every date)."""
    newest: dict[str, str] = {}
    for line, date in counts:
        newest[line] = max(newest.get(line, ""), "" if date == _UNDATED else date)
    return newest
