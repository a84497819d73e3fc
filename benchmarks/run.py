"""Time the pipeline's assets on N generated runs, then a nightly batch on top, and print wall seconds, rows/s and
peak RSS per stage, beside DuckDB's own JSON reader over the same files as this machine's reference speed.

The assets are the real ones (``pipeline/defs``), invoked directly with a DuckDB warehouse and marts under
``--out``: the same code a Dagster run executes, without Dagster's process start, run storage and event log.

    python benchmarks/run.py --runs 100000               # generates /tmp/bench-raw-100000 first when missing
    python benchmarks/run.py --runs 10000 --batch 2000

Rows:
- full refresh (empty warehouse, no parse cache): every partition, every asset of the job ``refresh_all``,
  staged into one mart generation that ``published_marts`` publishes last, as in a run; then the asset checks.
  The HTML report (drawn as a CLI run on a throwaway instance draws it: no charts for the Dagster UI) has a row
  of its own and is left out of TOTAL and of the full-refresh target, a presentation cost rather than a data
  one; ``benchmarks/cli.py`` adds it back when it sets the CLI beside this work;
- again: every date once more onto the same warehouse with nothing new, as the nightly schedule's run and
  ``python -m pipeline run`` do (partition discovery from the parse cache, then every asset);
- sensor tick with nothing new: the quick scan finds no folder moved and keeps its last state (not in the batch);
- nightly batch: ``--batch`` new runs on one new date added to the folder; the sensor's tick (a quick scan that
  lists again only the folders whose mtime moved, then the changed dates), then its run: the partitioned assets
  for those dates only, the cross-date marts in full, the ingest taking the tick's snapshot from the run tags as
  a sensor run does, published as one generation;
- the reference: DuckDB ``read_json_objects`` over every JSON file, each document parsed.
"""

# The heavy imports (Dagster, the assets) live in benchmarks/harness.py, imported only when this file runs as a
# script: the parse pool's workers start by importing this file as __mp_main__ (multiprocessing's main-module
# rule), and importing Dagster in each of them cost ~5 s per pool and a few hundred MiB per worker, which the
# benchmark then charged to the parser.
if __name__ == "__main__":
    import sys
    import warnings
    from pathlib import Path

    warnings.filterwarnings("ignore", message=".*currently in beta.*")  # Dagster's, raised while importing the assets

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks.harness import main

    main(__doc__)
