"""Stage ``comparisons``: matched-interactivity comparison tables (``compare``, with the band and targets of
``band``), historical trends (``trends``), and the static report with its charts (``report``, ``plots``)."""
