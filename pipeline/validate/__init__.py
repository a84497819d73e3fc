"""Stage ``validate``: the row rules that quarantine a run with a named reason (``rules``) and the Great
Expectations suite run as Dagster asset checks (``expectations``); the line, sweep and latest-run rule
(``lines``), which the duplicate rule and the later stages share."""
