"""The ingest ledger's promise, as a function the blocking check ``every_file_accounted_for`` calls: every file
under the raw folder appears exactly once, and each file's rows read = accepted runs + quarantined rows. The
ledger itself is built in SQL (``sql/ingest_ledger.sql``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from pipeline.ingest.scan import scan_folder


@dataclass(frozen=True)
class FileAccounting:
    """Files the ledger misses (on disk, not in it), invents (in it, not on disk) or lists twice, and ledger rows
    ``(source_file, rows_read, accepted_rows, quarantined_rows, pending_rows)`` whose counts do not add up or read
    no row."""

    files_on_disk: int
    missing: list[str]
    extra: list[str]
    repeated: list[str]
    unbalanced: list[tuple]

    @property
    def complete(self) -> bool:
        return not (self.missing or self.extra or self.repeated or self.unbalanced)


def account_for_files(raw_dir: Path, ledger: Sequence[tuple]) -> FileAccounting:
    """Hold the ledger to the raw folder as it is now.

    Args:
        raw_dir: the raw folder (listed as ingest lists it, ``pipeline.ingest.scan.scan_folder``).
        ledger: ``(source_file, rows_read, accepted_rows, quarantined_rows, pending_rows)`` per ledger row;
            pending rows (their date not ingested yet) count as accounted for; paths relative to
            ``raw_dir``, POSIX.
    Raises:
        FileNotFoundError: ``raw_dir`` is missing.
    """
    on_disk = set(scan_folder(Path(raw_dir)).rel)
    in_ledger = [row[0] for row in ledger]
    return FileAccounting(
        files_on_disk=len(on_disk),
        missing=sorted(on_disk - set(in_ledger)),
        extra=sorted(set(in_ledger) - on_disk),
        repeated=sorted(f for f, n in Counter(in_ledger).items() if n > 1),
        unbalanced=[tuple(row) for row in ledger if row[1] != row[2] + row[3] + row[4] or row[1] == 0],
    )
