"""Print one content digest per mart of a published mart folder, to show two pipeline versions wrote the same marts.

    python benchmarks/mart_digests.py data/marts                 # one line per mart: rows, digest
    python benchmarks/mart_digests.py before/marts after/marts   # the marts whose digests differ, exit 1 if any

A mart is a top-level Parquet file (``comparisons.parquet``) or a folder of Parquet parts (``runs/``, read as one
table); the digest is ``pipeline.io.storage.content_hash`` of its rows (order-free, floats compared exactly, the
column names included, sorted), so a refactoring that keeps every value keeps every digest; a mart whose columns
only moved is reported as such. The report's HTML and images
and the publish record (``_accepted_runs.parquet``, which stamps when and from which raw snapshot) are not marts
and are left out.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pyarrow.dataset as ds

from pipeline.io.storage import content_hash

NOT_MARTS = {"report"}


def mart_tables(folder: Path) -> dict[str, Path]:
    """{mart name: its file or folder} under a mart folder (the ``current`` generation when it is a publish root)."""
    root = folder / "current" if (folder / "current").is_dir() else folder
    marts = {}
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(("_", ".")) or entry.name in NOT_MARTS:
            continue
        if entry.is_file() and entry.suffix == ".parquet":
            marts[entry.stem] = entry
        elif entry.is_dir() and any(entry.rglob("*.parquet")):
            marts[entry.name] = entry
    return marts


def digests(folder: Path) -> dict[str, tuple[int, str, tuple[str, ...]]]:
    """{mart name: (rows, content digest, column names in file order)} of every mart under ``folder``."""
    found = {}
    for name, path in mart_tables(folder).items():
        files = sorted(str(p) for p in path.rglob("*.parquet")) if path.is_dir() else [str(path)]
        table = ds.dataset(files, format="parquet").to_table()
        found[name] = (table.num_rows, content_hash(table.select(sorted(table.column_names))),
                       tuple(table.column_names))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="one mart folder to list, or two to compare")
    args = parser.parse_args(argv)
    if len(args.folders) == 1:
        for name, (rows, digest, _) in digests(args.folders[0]).items():
            print(f"{name:<24} {rows:>9} rows  {digest[:16]}")
        return 0
    if len(args.folders) != 2:
        parser.error("give one folder to list or two to compare")
    before, after = (digests(folder) for folder in args.folders)
    differ = sorted(name for name in before.keys() | after.keys()
                    if before.get(name, ())[:2] != after.get(name, ())[:2])
    for name in sorted(before.keys() | after.keys()):
        moved = name not in differ and before[name][2] != after[name][2]
        mark = "DIFFERS" if name in differ else "same (columns reordered)" if moved else "same"
        print(f"{name:<24} {mark:<24} before {before.get(name, ('-', '-'))[0]!s:>9} rows, "
              f"after {after.get(name, ('-', '-'))[0]!s:>9} rows")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
