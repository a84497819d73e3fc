"""The mutation tooling itself (``tests/mutation``): the SQL mutants generated from a statement, their stable
identities, and the report's verdicts (a survivor without a reason is a missing test; a module with unchecked
mutants is not measured). Expected mutants are listed by hand from the statement's text."""

from pathlib import Path

import pytest

from tests.mutation import report
from tests.mutation.sql_mutants import mutants_of

STATEMENT = ("select a + b * 2 as x, coalesce(c, 0) as y\n"
             "from t\n"
             "where a <= 1 and b between 4 and 5 and greatest(a, b) > 0\n")


def _mutants(tmp_path: Path, text: str, name: str = "q.sql"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path, mutants_of(path)


def test_every_operator_on_one_statement(tmp_path):
    path, mutants = _mutants(tmp_path, STATEMENT)
    edits = sorted((m.operator, m.original, m.replacement) for m in mutants)
    assert edits == sorted([
        ("arith", "+", "-"), ("arith", "*", "/"), ("constant", "2", "3"),
        ("coalesce", "c, 0", "0, c"), ("constant", "0", "1"),
        ("compare", "<=", "<"), ("constant", "1", "2"),
        ("logic", "and", "or"), ("logic", "and", "or"),  # the two joining terms; not the and of between
        ("constant", "4", "5"), ("constant", "5", "6"),
        ("function", "greatest", "least"), ("compare", ">", ">="), ("constant", "0", "1"),
        ("drop_term", "a <= 1 and ", ""), ("drop_term", "and b between 4 and 5", ""),
        ("drop_term", "and greatest(a, b) > 0", ""),
    ])
    text = path.read_text()
    dropped = {m.apply(text).splitlines()[2] for m in mutants if m.operator == "drop_term"}
    assert dropped == {"where b between 4 and 5 and greatest(a, b) > 0",
                       "where a <= 1  and greatest(a, b) > 0",
                       "where a <= 1 and b between 4 and 5 "}


def test_a_star_is_not_a_product_and_an_or_clause_keeps_its_terms(tmp_path):
    _, mutants = _mutants(tmp_path, "select *, count(*), t.* from t where a = 1 or b = 2\n")
    assert sorted((m.operator, m.original, m.replacement) for m in mutants) == sorted([
        ("compare", "=", "<>"), ("compare", "=", "<>"), ("constant", "1", "2"), ("constant", "2", "3"),
        ("logic", "or", "and")])


def test_an_update_assignment_and_a_parameter_number_are_not_mutated(tmp_path):
    # set's = assigns (set a <> b does not parse) and $1 names a parameter ($2 is a missing one): neither is a
    # mutant; the = of a subquery inside the set list and of the where clause compare
    _, mutants = _mutants(tmp_path, "update t set a = s.a, b = (select max(c) from u where u.c = 3) from s\n"
                                    "where t.k = s.k and t.m in (select unnest($1::varchar[]))\n")
    assert sorted((m.operator, m.original, m.replacement) for m in mutants) == sorted([
        ("function", "max", "min"), ("compare", "=", "<>"), ("constant", "3", "4"),
        ("compare", "=", "<>"), ("logic", "and", "or"),
        ("drop_term", "t.k = s.k and ", ""), ("drop_term", "and t.m in (select unnest($1::varchar[]))", "")])


def test_identities_survive_edits_of_other_lines_and_tell_twins_apart(tmp_path):
    _, before = _mutants(tmp_path, "-- a comment\nselect a + 1 from t\n")
    _, after = _mutants(tmp_path, "-- a longer comment, and a line more\n\nselect a + 1 from t\n")
    assert [m.identity for m in before] == [m.identity for m in after]
    assert [m.line for m in before] == [2, 2] and [m.line for m in after] == [3, 3]
    _, twins = _mutants(tmp_path, "select a + 1 from t union all\nselect a + 1 from t\n")
    assert len({m.identity for m in twins}) == 4  # two lines of the same text: occurrence 0 and 1


def test_a_non_ascii_comment_does_not_shift_the_edits(tmp_path):
    # DuckDB's tokenizer counts bytes; × and — are two and three bytes in UTF-8
    path, mutants = _mutants(tmp_path, "-- tp × pp — the count\nselect tp * pp from t\n")
    assert [(m.operator, m.original) for m in mutants] == [("arith", "*")]
    assert mutants[0].apply(path.read_text()).endswith("select tp / pp from t\n")


def test_a_survivor_without_a_reason_is_a_missing_test_and_unchecked_is_not_measured():
    with_reason = report.Survivor("py:m.py:f:1", "x_f__mutmut_1", "survived", "- a\n+ b", "same value")
    without = report.Survivor("py:m.py:f:2", "x_f__mutmut_2", "survived", "- a\n+ c")
    score = report.ModuleScore("m.py", total=20, killed=18, surviving=2, measured="2026-11-27",
                               survivors=[with_reason, without])
    assert score.score == pytest.approx(0.9) and score.missing_tests == [without]
    text = report.render([score, report.ModuleScore("n.py", total=5, killed=4, unchecked=1)], ["py:gone:f:3"])
    assert "| `m.py` | 2026-11-27 | 18 / 20 | 90.0 % |" in text
    assert "| `n.py` | not measured (4 of 5 checked) |  |  |" in text
    assert "`x_f__mutmut_2` (survived), id `py:m.py:f:2`: **missing test**" in text
    assert "- `py:gone:f:3`" in text
    assert report.ModuleScore("n.py", total=5, killed=4, unchecked=1).score is None


def test_python_identities_ignore_mutmut_numbers_and_context_lines():
    diff = "--- a\n+++ b\n@@ -1,3 +1,3 @@\n def f(x):\n-    return x + 1\n+    return x - 1\n"
    shifted = "--- a\n+++ b\n@@ -4,3 +4,3 @@\n def f(x):\n     y = 2\n-    return x + 1\n+    return x - 1\n"
    assert report.python_identity("m.py", "f", diff, 0) == report.python_identity("m.py", "f", shifted, 0)
    assert report.python_identity("m.py", "f", diff, 0) != report.python_identity("m.py", "f", diff, 1)


def test_reasons_need_an_id_and_a_why_once(tmp_path):
    path = tmp_path / "reasons.toml"
    path.write_text('[[equivalent]]\nid = "a"\nwhy = "x"\n[[equivalent]]\nid = "a"\nwhy = "y"\n')
    with pytest.raises(ValueError, match=r"reasons.toml: id a is listed twice"):
        report.load_reasons(path)
    path.write_text('[[equivalent]]\nid = "a"\n')
    with pytest.raises(ValueError, match=r"reasons.toml: entry 1 needs both 'id' and 'why'"):
        report.load_reasons(path)


def _stored_entry(module: str, source: str) -> dict:
    """An entry as a run stores it: three killed mutants, one survivor with a reason and one without."""
    prefix = f"py:{module}:"
    survivors = [report.Survivor(prefix + "f:aaa", "x_f__mutmut_2", "survived", "- a\n+ b"),
                 report.Survivor(prefix + "g:bbb", "x_g__mutmut_1", "no tests", "- c\n+ d")]
    statuses = {prefix + "f:k1": "killed", prefix + "f:k2": "timeout", prefix + "g:k3": "killed",
                prefix + "f:aaa": "survived", prefix + "g:bbb": "no tests"}
    return report.make_entry(module, statuses, survivors, source=source, measured="2026-11-20",
                             stamp="2026-11-20T10:00:00.000000Z")


def test_stored_results_give_the_score_in_a_clone_without_mutants(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("def f():\n    return 1\n")
    monkeypatch.setattr(report, "ROOT", tmp_path)  # no mutants/ folder: a fresh clone
    digest = report.source_digest(tmp_path / "pkg" / "m.py")
    entry = _stored_entry("pkg/m.py", digest)
    # identities are stored without their "py:<module>:" prefix, killed ones too
    assert entry["mutants"] == {"killed": ["f:k1", "g:k3"], "no tests": ["g:bbb"], "survived": ["f:aaa"],
                                "timeout": ["f:k2"]}
    report.save_results({"pkg/m.py": entry}, tmp_path / "results.json")
    stored = report.load_results(tmp_path / "results.json")
    [score], ids = report.python_scores(["pkg/m.py"], {"py:pkg/m.py:f:aaa": "same value"}, stored)
    # 3 killed (killed, timeout, killed) of 5 decided: 60 %
    assert (score.total, score.killed, score.surviving, score.measured) == (5, 3, 2, "2026-11-20")
    assert score.score == pytest.approx(0.6)
    assert ids == {"py:pkg/m.py:f:aaa", "py:pkg/m.py:g:bbb"}
    assert [(s.name, s.status, s.diff, s.reason) for s in score.survivors] == [
        ("x_f__mutmut_2", "survived", "- a\n+ b", "same value"), ("x_g__mutmut_1", "no tests", "- c\n+ d", None)]
    # the file edited since: not measured, whatever was stored
    (tmp_path / "pkg" / "m.py").write_text("def f():\n    return 2\n")
    [changed], ids = report.python_scores(["pkg/m.py"], {}, stored)
    assert (changed.is_measured, changed.score, ids) == (False, None, set())
    assert "| `pkg/m.py` | not measured (changed since 2026-11-20) |  |  |" in report.render([changed], [])
    # a reason whose mutant is stored as killed by mutmut's CPU limit says so
    assert report._stored_status(stored, "py:pkg/m.py:f:k2") == "timeout"
    assert report._stored_status(stored, "py:pkg/m.py:f:gone") is None
    assert "- `py:pkg/m.py:f:k2` (timeout)" in report.render([], ["py:pkg/m.py:f:k2"], {"py:pkg/m.py:f:k2": "timeout"})
    # nothing stored: not measured
    [none], _ = report.python_scores(["pkg/m.py"], {}, {})
    assert (none.is_measured, none.total) == (False, 0)


def test_the_newer_complete_results_win():
    complete = report.ModuleScore("m.py", total=4, killed=4)
    partial = report.ModuleScore("m.py", total=4, killed=2, unchecked=2)
    entry = {"source": "d1", "stamp": "2026-11-20T10:00:00.000000Z"}
    newer, older = "2026-11-21T00:00:00.000000Z", "2026-11-19T00:00:00.000000Z"
    assert report.choose("m.py", complete, newer, True, entry, "d1") == "live"
    assert report.choose("m.py", complete, older, True, entry, "d1") == "stored"
    assert report.choose("m.py", None, None, False, entry, "d1") == "stored"  # no mutants/ at all
    assert report.choose("m.py", partial, newer, True, entry, "d1") == "stored"  # a stopped run keeps the entry
    assert report.choose("m.py", partial, newer, True, None, "d1") == "live"  # reads "not measured (2 of 4 ...)"
    # an older complete run replaces an entry of another version of the file
    assert report.choose("m.py", complete, older, True, entry, "d2") == "live"
    # the file edited after the run, and the entry of another version: neither counts
    assert report.choose("m.py", complete, newer, False, entry, "d2") == "changed"
    assert report.choose("m.py", None, None, False, entry, "d2") == "changed"
    assert report.choose("m.py", None, None, False, None, "d2") == "none"


def test_survivors_run_again_update_the_stored_entry():
    entry = _stored_entry("pkg/m.py", "d1")
    # f:aaa killed by a new test, g:bbb still without tests; an unchecked mutant's status is not taken
    merged = report.merge_entry("pkg/m.py", entry, {"py:pkg/m.py:f:aaa": "killed", "py:pkg/m.py:f:k1": "not checked"},
                                [], "2026-11-21T00:00:00.000000Z")
    assert merged["mutants"] == {"killed": ["f:aaa", "f:k1", "g:k3"], "no tests": ["g:bbb"], "timeout": ["f:k2"]}
    assert [s["id"] for s in merged["survivors"]] == ["g:bbb"]
    assert (merged["measured"], merged["source"]) == ("2026-11-20", "d1")  # the date of the full run
    assert merged["stamp"] == "2026-11-21T00:00:00.000000Z"
    score = report.score_from_entry("pkg/m.py", merged, {})
    assert (score.killed, score.surviving, score.score) == (4, 1, pytest.approx(0.8))  # 4 of 5


def test_a_sql_file_without_mutants_is_reported_as_such_and_passes(tmp_path, monkeypatch):
    # a statement with no operator the runner edits (columns, a join, an in-subquery) has no mutant: the report
    # says so, it is measured (nothing unchecked, nothing missing) and has no score; a file with one mutant and no
    # result is still not measured
    from tests.mutation import sql_mutants

    (tmp_path / "none.sql").write_text("select a from t join u using (k) where a in (select b from v)\n")
    (tmp_path / "one.sql").write_text("select a from t where a = b\n")
    monkeypatch.setattr(sql_mutants, "SQL_DIR", tmp_path)
    monkeypatch.setattr(report, "SQL_RESULTS", tmp_path / "results.json")
    stored = {"sql/none.sql": {"source": "old"}}
    [none, one], ids = report.sql_scores({}, stored)
    assert (none.module, none.no_mutants, none.is_measured, none.score, none.total) == (
        "sql/none.sql", True, True, None, 0)
    assert "sql/none.sql" not in stored  # an entry of an older text with mutants is dropped
    assert "| `sql/none.sql` | no mutants |  |  |" in report.render([none], [])
    assert report.summary_lines([none])[0].split() == ["sql/none.sql", "no", "mutants"]
    assert (one.no_mutants, one.is_measured, one.score, ids) == (False, False, None, set())


def test_results_of_a_removed_file_are_dropped():
    # a SQL file deleted or renamed (its statement moved) and a module taken out of only_mutate: their entries
    # would otherwise stay in results.json for good, describing no file
    stored = {"sql/kept.sql": {"source": "a"}, "sql/gone.sql": {"source": "b"}, "pkg/m.py": {"source": "c"},
              "pkg/old.py": {"source": "d"}}
    assert report.prune_removed(stored, {"sql/kept.sql", "pkg/m.py", "sql/new.sql"}) == ["pkg/old.py", "sql/gone.sql"]
    assert stored == {"sql/kept.sql": {"source": "a"}, "pkg/m.py": {"source": "c"}}
    assert report.prune_removed(stored, {"sql/kept.sql", "pkg/m.py"}) == []

