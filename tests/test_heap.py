"""``frozen_heap``: the objects of before the block are left out of the collector's passes, the block's own
garbage is collected, and the freeze ends however the block does."""

import gc
import weakref

import pytest

from pipeline.io.heap import frozen_heap


class Node:
    """An object that can hold a reference cycle and be watched by a weak reference."""

    partner = None


def test_the_objects_of_before_the_block_are_frozen_and_thawed_after():
    gc.unfreeze()
    before = len(gc.get_objects())
    with frozen_heap():
        assert gc.get_freeze_count() >= before
        assert len(gc.get_objects()) < before  # the tracked objects of before are not in any generation
    assert gc.get_freeze_count() == 0


def test_a_cycle_made_inside_the_block_is_collected_inside_it():
    with frozen_heap():
        a, b = Node(), Node()
        a.partner, b.partner = b, a
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None


def test_a_cycle_of_before_the_block_waits_for_the_thaw():
    a, b = Node(), Node()
    a.partner, b.partner = b, a
    kept = weakref.ref(a)
    with frozen_heap():
        del a, b
        gc.collect()
        assert kept() is not None  # frozen: the collector does not look at it
    gc.collect()
    assert kept() is None


def test_the_freeze_ends_when_the_block_raises():
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("a failed step")
    assert gc.get_freeze_count() == 0


def test_materialize_all_runs_its_steps_on_a_frozen_heap(monkeypatch):
    import pipeline.__main__ as cli
    import pipeline.definitions

    seen = []
    monkeypatch.setattr(pipeline.definitions, "defs", lambda: "definitions")
    monkeypatch.setattr(cli, "_materialize", lambda definitions, *args: seen.append(
        (definitions, gc.get_freeze_count())) or "result")
    assert cli.materialize_all(instance=None) == "result"
    assert seen[0][0] == "definitions" and seen[0][1] > 0
    assert gc.get_freeze_count() == 0
