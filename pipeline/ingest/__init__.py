"""Stage ``ingest``: raw result files → normalized run rows, reject rows and one ledger row per file.

Read top to bottom in ``folder.py``: list the folder (``scan``) → look up the parse cache (``parse_cache``) →
parse what changed, in a process pool when many (``parse``, one module per format in ``parsers/``,
run metadata from sidecars and ``runs.csv`` in ``metadata``) → merge in scan order → save the cache. ``schema``
holds the run and quarantine schemas every later stage reads; ``keys`` the lowercase keys and display labels.

Kept free of imports so that a parse worker loads only what it needs.
"""
