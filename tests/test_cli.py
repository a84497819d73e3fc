"""The command line: `compare` prints the same numbers as the comparisons mart; bad sides get a clear message."""

from pipeline.__main__ import main


def test_compare_matches_the_mart(sample_run, capsys):
    run = sample_run
    rows = [r for r in run.mart("comparisons").to_pylist()
            if r["title"] == "MI355X FP4: MTP vs Off" and r["price_book"] == "inferencex-seed"]
    targets = sorted({r["target_intvty"] for r in rows})
    code = main(["compare", "--model", "dsr1", "--isl", "1024", "--osl", "1024",
                 "--a", "hw=mi355x,precision=fp4,spec_decoding=mtp", "--b", "hw=mi355x,precision=fp4,spec_decoding=none",
                 "--targets", *map(str, targets)])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("MI355X FP4: MTP vs Off")
    for r in rows:
        assert f"{r['tput_per_gpu']:>10.1f}" in out and f"{r['cost_per_mtok_hyperscaler']:>8.3f}" in out
        assert r["cost_sentence"] in out


def test_compare_rejects_incomplete_side(sample_run, capsys):
    code = main(["compare", "--model", "dsr1", "--isl", "1024", "--osl", "1024", "--a", "hw=mi355x", "--b",
                 "hw=b200,precision=fp4"])
    assert code == 1 and "needs hw= and precision=" in capsys.readouterr().err


def test_compare_reports_sides_without_runs(sample_run, capsys):
    code = main(["compare", "--model", "dsr1", "--isl", "1024", "--osl", "1024", "--a", "hw=h100,precision=fp8",
                 "--b", "hw=b200,precision=fp8"])
    assert code == 1 and "no runs for side(s)" in capsys.readouterr().err
