"""Stage ``validate``: the row rules that quarantine a run with a named reason (``rules``) and the Great
Expectations suite run as Dagster asset checks (``expectations``)."""
