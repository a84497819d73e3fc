"""``benchmarks/test_cpu.py``: the per-test CPU plugin records each test once, and its summary adds them up."""

import json
import subprocess
import sys
import textwrap

from conftest import REPO

from benchmarks.test_cpu import summary


def test_the_plugin_records_one_row_per_test_with_its_childrens_cpu(tmp_path):
    tests = tmp_path / "test_two.py"
    tests.write_text(textwrap.dedent("""
        import subprocess, sys

        def test_busy_child():
            subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)

        def test_idle():
            pass
    """))
    folder = tmp_path / "cpu"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "benchmarks.test_cpu", "-p", "no:cacheprovider",
                           str(tests)], cwd=REPO, env={"TEST_CPU_DIR": str(folder), "PATH": "/usr/bin:/bin",
                                                       "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r["test"].split("::")[1]: r for r in map(json.loads, (folder / "main.jsonl").read_text().splitlines())}
    assert set(rows) == {"test_busy_child", "test_idle"}
    assert rows["test_busy_child"]["cpu_children"] > 0.05  # the child's loop, counted once it was reaped
    assert rows["test_idle"]["cpu_children"] == 0
    assert all(r["wall"] >= 0 and r["cpu_own"] >= 0 for r in rows.values())


def test_the_summary_adds_up_tests_and_files(tmp_path):
    (tmp_path / "gw0.jsonl").write_text(
        json.dumps({"test": "tests/test_a.py::test_x", "wall": 3.0, "cpu_own": 1.0, "cpu_children": 2.0}) + "\n"
        + json.dumps({"test": "tests/test_b.py::test_y", "wall": 1.0, "cpu_own": 0.5, "cpu_children": 0.0}) + "\n")
    (tmp_path / "gw1.jsonl").write_text(
        json.dumps({"test": "tests/test_a.py::test_z", "wall": 2.0, "cpu_own": 1.5, "cpu_children": 0.0}) + "\n")
    text = summary(tmp_path, top=2, cores=2)
    assert text.splitlines()[0] == ("3 tests, 6.0 s of wall in the tests, 5.0 CPU-s (3.0 own, 2.0 in child "
                                    "processes); on 2 cores no less than 2.5 s")
    assert "     3.0    3.0  tests/test_a.py::test_x" in text
    assert "     2     2.5     2.0     5.0  tests/test_a.py" in text
    assert "tests/test_b.py::test_y" not in text  # beyond the top 2
    assert summary(tmp_path / "none", top=2) == f"no rows under {tmp_path / 'none'}"
