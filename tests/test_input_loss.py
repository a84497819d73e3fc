"""The input-loss rule (``pipeline/ingest/input_loss.py``): an empty raw folder is refused always; a scan with
fewer runs than the last one is refused when it lost more than the allowed share, unless the shrink is allowed.
Every boundary below is worked out by hand from the rule ``runs < previous × (1 − share)``."""

from pathlib import Path

import pytest

from pipeline.ingest.input_loss import DEFAULT_MAX_RUN_LOSS_SHARE, InputLossError, check_input_loss

RAW = Path("/data/raw")


def test_the_default_share_is_a_fifth():
    assert DEFAULT_MAX_RUN_LOSS_SHARE == 0.2


@pytest.mark.parametrize("allow_shrink", [False, True])
def test_an_empty_folder_is_refused_even_when_shrinking_is_allowed(allow_shrink):
    with pytest.raises(InputLossError) as error:
        check_input_loss(RAW, files=0, runs=0, previous_runs=None, allow_shrink=allow_shrink)
    # the whole one-line message, as an operator reads it
    assert str(error.value) == ("raw folder /data/raw is empty (an unmounted or unsynced volume looks like this): "
                                "nothing published, previous marts kept")


@pytest.mark.parametrize("runs, previous", [
    (80, 100),   # 100 × 0.8 = 80: exactly a fifth lost is still allowed
    (100, 100),  # nothing lost
    (150, 100),  # grown
    (0, None),   # no earlier scan: nothing to compare (the folder holds files, so it is not empty)
    (0, 0),      # an earlier scan of no runs
])
def test_allowed_scans(runs, previous):
    assert check_input_loss(RAW, files=3, runs=runs, previous_runs=previous) is None


def test_one_run_past_a_fifth_is_refused_with_the_numbers():
    # 79 < 80: 21 fewer than 100, over 20 %
    with pytest.raises(InputLossError) as error:
        check_input_loss(RAW, files=3, runs=79, previous_runs=100)
    assert str(error.value) == (
        "raw folder /data/raw gives 79 runs, 21 fewer than the last scan's 100 (over 20% lost): nothing published, "
        "previous marts kept; if the logs were removed on purpose, run again with --allow-shrink "
        "(run config allow_shrink: true)")


def test_the_share_is_the_callers():
    # share 0.5: 100 × 0.5 = 50 allowed, 49 refused; share 0: any loss refused
    assert check_input_loss(RAW, files=1, runs=50, previous_runs=100, max_loss_share=0.5) is None
    with pytest.raises(InputLossError, match=r"51 fewer than the last scan's 100 \(over 50% lost\)"):
        check_input_loss(RAW, files=1, runs=49, previous_runs=100, max_loss_share=0.5)
    with pytest.raises(InputLossError, match="1 fewer"):
        check_input_loss(RAW, files=1, runs=99, previous_runs=100, max_loss_share=0.0)


def test_an_allowed_shrink_passes_whatever_was_lost():
    assert check_input_loss(RAW, files=1, runs=1, previous_runs=100, allow_shrink=True) is None
