"""Publishing every mart of a pipeline run together, as one generation, so that neither a reader nor a crash ever
sees marts of two runs side by side.

Layout of the mart folder (``PIPELINE_OUT_DIR``)::

    .generations/<generation>/          one complete set of marts; never changed once published
    .generations/<run>.staging/         what a run in progress writes: hard links to the current generation's
                                        Parquet files, copies of its other files, and whatever the run rewrote
    current -> .generations/<generation>    the published generation (a symlink, replaced atomically)
    runs -> current/runs, frontiers.parquet -> current/frontiers.parquet, …   stable names for readers

A run writes only into its staging folder; its last step calls ``publish``, which renames the staging folder into
a generation and switches ``current`` in one ``rename``. A run that fails or is killed leaves ``current`` where it
was. The previous generations stay on disk (``KEEP_GENERATIONS``), so a reader that resolved ``current`` just
before a switch reads on undisturbed. Writers replace files (write a temporary, then ``os.replace``) and never
write into an existing file, so a hard link shared with a published generation is never changed through it.

Two runs at once each stage from the generation current when they started; the second to publish is rebased:
its own changes (files it wrote or removed, compared with its base) are applied on top of what the first one
published, under a lock, so no run's partitions are lost. A mart folder holding a ``_WHOLE`` file (``WHOLE``:
its files only make sense together, as ``pipeline.io.file_marts``' base and recent) is rebased as one: when the
run changed any of its files, the run's folder replaces the published one whole.

``publish`` takes a guard, called under the lock on the folder about to become the generation (after any
rebase): ``pipeline.io.publish_guard`` judges its accepted runs and its warehouse there, writes the generation's
own ``_accepted_runs.parquet`` (top-level names starting with ``_`` belong to one generation: never staged from
it, rebased or linked at the top of the mart folder) and refuses by raising, which leaves ``current`` as it was.
"""

from __future__ import annotations

import fcntl
import filecmp
import os
import shutil
import time
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

GENERATIONS = ".generations"
CURRENT = "current"
KEEP_GENERATIONS = 3  # the current one and the two before it
STALE_STAGING_S = 24 * 3600  # a staging folder untouched this long belongs to a run that died
WHOLE = "_WHOLE"  # in a mart folder: rebase it as one (readers skip names starting with "_")


def published_dir(out_dir: Path) -> Path:
    """The folder a reader should read every mart from to see one run's marts: the resolved ``current``
    generation, or ``out_dir`` itself for a mart folder written before generations existed (or never written)."""
    current = Path(out_dir) / CURRENT
    return current.resolve() if current.is_symlink() else Path(out_dir)


def staging_path(out_dir: Path, run_id: str) -> Path:
    """Where run ``run_id`` stages its marts (``staging_dir`` creates it)."""
    return Path(out_dir) / GENERATIONS / f"{run_id}.staging"


def staging_dir(out_dir: Path, run_id: str) -> Path:
    """The staging folder of run ``run_id`` under ``out_dir``, created on first use from the current generation
    (Parquet files hard-linked, other files copied) or, before the first generation, from the marts found at the
    top of ``out_dir``. Safe when several processes of one run ask at once: the first complete copy wins.

    Raises:
        OSError: ``out_dir`` cannot be created or written (read-only volume, a file in its place).
    """
    staging = staging_path(out_dir, run_id)
    if staging.is_dir():
        return staging
    root = staging.parent
    root.mkdir(parents=True, exist_ok=True)
    base = published_dir(out_dir)
    tmp = root / f".{run_id}.staging-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    for entry in _mart_entries(base):
        _link_copy(entry, tmp / entry.name)
    (root / f"{run_id}.base").write_text(base.name if base != Path(out_dir) else "", encoding="utf-8")
    try:
        tmp.rename(staging)
    except OSError:  # another process of the same run made it first
        shutil.rmtree(tmp, ignore_errors=True)
    return staging


def publish(out_dir: Path, run_id: str, guard: Callable[[Path, Path, str], None] | None = None) -> Path | None:
    """Make run ``run_id``'s staging folder the current generation: rename it to
    ``.generations/<UTC time>-<first 8 characters of the run id>``, switch ``current`` to it, point the top-level
    names at it, and delete generations beyond ``KEEP_GENERATIONS`` and staging folders of runs that died more than a
    day ago.

    When another run published since this one staged, this run's changes are applied on top of that
    generation instead (a file this run wrote replaces that run's; a file this run removed is removed).

    Args:
        guard: called under the lock as ``guard(folder, current, name)`` once ``folder`` holds exactly what
            generation ``name`` will hold (after any rebase) and ``current`` is ``published_dir(out_dir)``; it
            may write bookkeeping files named ``_…`` into ``folder`` (never carried into the next generation),
            and it refuses the publish by raising: then ``current`` does not move, a rebased folder is deleted
            and the staging folder is left to the caller (``discard``).
    Returns:
        The new generation's folder, or None when the run staged nothing (it wrote no mart).
    Raises:
        OSError: the mart folder cannot be written; whatever ``guard`` raises.
    """
    out_dir = Path(out_dir)
    staging = staging_path(out_dir, run_id)
    root = staging.parent
    if not staging.is_dir():
        return None
    with _lock(root):
        base_file = root / f"{run_id}.base"
        base_name = base_file.read_text(encoding="utf-8") if base_file.exists() else ""
        base = root / base_name if base_name else out_dir
        current = published_dir(out_dir)
        name = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S%fZ}-{run_id[:8]}"
        generation = root / name
        built = staging if current == base else _rebase(staging, base, current, generation)
        if guard is not None:
            try:
                guard(built, current, name)
            except BaseException:
                if built != staging:
                    shutil.rmtree(built, ignore_errors=True)
                raise
        built.rename(generation)
        if built != staging:
            shutil.rmtree(staging, ignore_errors=True)
        base_file.unlink(missing_ok=True)
        _switch(out_dir, name)
        _prune(root, keep={name} | {b.read_text(encoding="utf-8") for b in root.glob("*.base")})
    return generation


def _mart_entries(folder: Path) -> list[Path]:
    """Top-level marts of a generation, or of a mart folder of the layout before generations (its folders and
    Parquet files, not the hidden bookkeeping nor a generation's own ``_…`` files, which each publish writes)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if not p.name.startswith((".", "_")) and p.name != CURRENT
                  and not p.is_symlink() and (p.is_dir() or p.suffix == ".parquet"))


def _link_copy(src: Path, dst: Path) -> None:
    """Copy the tree ``src`` to ``dst`` (a new name in an existing folder), every file as a hard link (a copy on a
    file system without them). Safe because no writer writes a staged file in place: the marts' Parquet files
    are replaced (written beside, then renamed), the report step empties its folder before writing its pages,
    and a ``_WHOLE`` marker is only created where missing; a file written in place would also change the
    published generation that shares it."""
    if src.is_dir():
        dst.mkdir()
        for child in src.iterdir():
            _link_copy(child, dst / child.name)
        return
    try:
        os.link(src, dst)
    except OSError:  # a file system without hard links: copy
        shutil.copy2(src, dst)


def _files(folder: Path) -> dict[str, Path]:
    """Every file of the marts in ``folder``, by path relative to it."""
    return {p.relative_to(folder).as_posix(): p for entry in _mart_entries(folder)
            for p in ([entry] if entry.is_file() else entry.rglob("*")) if p.is_file()}


def _rebase(staging: Path, base: Path, current: Path, generation: Path) -> Path:
    """Build ``current`` plus what the run changed in ``staging`` relative to ``base``, in a temporary folder
    beside ``generation`` (returned; the caller renames it to ``generation``)."""
    ours, before = _files(staging), _files(base)
    tmp = generation.with_name(f".{generation.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    for entry in _mart_entries(current):
        _link_copy(entry, tmp / entry.name)
    changed = [rel for rel, path in ours.items()
               if rel not in before or not (os.path.samefile(path, before[rel])
                                            or filecmp.cmp(path, before[rel], shallow=False))]
    removed = before.keys() - ours.keys()
    # a folder of files that only make sense together, which this run changed: the run's folder, whole
    wholes = {rel.split("/")[0] for rel in [*changed, *removed]
              if "/" in rel and (staging / rel.split("/")[0] / WHOLE).is_file()}
    for folder in wholes:
        shutil.rmtree(tmp / folder, ignore_errors=True)
        _link_copy(staging / folder, tmp / folder)
    for rel in changed:
        if rel.split("/")[0] in wholes:
            continue
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        _link_copy(ours[rel], target)
    for rel in removed:
        if rel.split("/")[0] in wholes:
            continue
        (tmp / rel).unlink(missing_ok=True)
        for parent in (tmp / rel).parents:  # folders it emptied (none when the published generation lacks it)
            if parent == tmp or not parent.is_dir() or any(parent.iterdir()):
                break
            parent.rmdir()
    return tmp


def _switch(out_dir: Path, name: str) -> None:
    """Point ``current`` at generation ``name`` (one atomic rename of a new symlink), then make every top-level
    mart name a symlink into ``current`` (a mart folder of the earlier layout is replaced by its link) and drop
    links to marts the generation no longer has."""
    link = out_dir / f".{CURRENT}.{os.getpid()}.link"
    link.unlink(missing_ok=True)
    link.symlink_to(Path(GENERATIONS) / name)
    os.replace(link, out_dir / CURRENT)
    entries = {e.name for e in _mart_entries(out_dir / GENERATIONS / name)}
    for entry in sorted(entries):
        path = out_dir / entry
        target = Path(CURRENT) / entry
        if path.is_symlink() and Path(os.readlink(path)) == target:
            continue
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        path.symlink_to(target)
    for path in out_dir.iterdir():
        if path.is_symlink() and path.name != CURRENT and Path(os.readlink(path)).parts[:1] == (CURRENT,) \
                and path.name not in entries:
            path.unlink()


def _prune(root: Path, keep: set[str]) -> None:
    generations = sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
                          and not p.name.endswith(".staging")), key=lambda p: p.name, reverse=True)
    for old in generations[KEEP_GENERATIONS:]:
        if old.name not in keep:
            shutil.rmtree(old, ignore_errors=True)
    cutoff = time.time() - STALE_STAGING_S
    for stale in root.glob("*.staging"):
        run_id = stale.name[:-len(".staging")]
        if stale.stat().st_mtime < cutoff or not _process_alive(run_id):
            discard(Path(root).parent, run_id)


def cli_generation_id() -> str:
    """A generation id for one CLI run (the tag ``pipeline/generation`` of its run): ``cli-<pid>-<12 random hex
    digits>``, so that ``publish`` can tell the staging folder of a CLI run that was killed (its process is gone) and
    delete it."""
    return f"cli-{os.getpid()}-{uuid.uuid4().hex[:12]}"


def _process_alive(run_id: str) -> bool:
    """False only for a CLI generation whose process no longer runs; other runs are judged by age."""
    parts = run_id.split("-")
    if len(parts) != 3 or parts[0] != "cli" or not parts[1].isdigit():
        return True
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def discard(out_dir: Path, run_id: str) -> None:
    """Delete run ``run_id``'s staging folder (a run that failed or stopped): nothing it wrote is published."""
    root = Path(out_dir) / GENERATIONS
    shutil.rmtree(staging_path(out_dir, run_id), ignore_errors=True)
    (root / f"{run_id}.base").unlink(missing_ok=True)


@contextmanager
def _lock(root: Path) -> Iterator[None]:
    with open(root / ".lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
