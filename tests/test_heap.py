"""``frozen_heap``: the objects of before the block are left out of the collector's passes, the block's own
garbage is collected, the freeze ends however the block does, and a heap frozen already stays frozen."""

import gc
import weakref

import pytest

from pipeline.io.heap import frozen_heap


class Node:
    """An object that can hold a reference cycle and be watched by a weak reference."""

    partner = None


@pytest.fixture
def thawed():
    """A heap with nothing frozen for the test, frozen again afterwards if it was before."""
    was_frozen = gc.get_freeze_count() > 0
    gc.unfreeze()
    yield
    gc.unfreeze()
    if was_frozen:
        gc.freeze()


def test_the_objects_of_before_the_block_are_frozen_and_thawed_after(thawed):
    before = len(gc.get_objects())
    with frozen_heap():
        assert gc.get_freeze_count() >= before
        assert len(gc.get_objects()) < before  # the tracked objects of before are not in any generation
    assert gc.get_freeze_count() == 0


def test_a_cycle_made_inside_the_block_is_collected_inside_it(thawed):
    with frozen_heap():
        a, b = Node(), Node()
        a.partner, b.partner = b, a
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None


def test_a_cycle_of_before_the_block_waits_for_the_thaw(thawed):
    a, b = Node(), Node()
    a.partner, b.partner = b, a
    kept = weakref.ref(a)
    with frozen_heap():
        del a, b
        gc.collect()
        assert kept() is not None  # frozen: the collector does not look at it
    gc.collect()
    assert kept() is None


def test_the_freeze_ends_when_the_block_raises(thawed):
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("a failed step")
    assert gc.get_freeze_count() == 0


def test_a_heap_frozen_before_the_block_stays_frozen_after_it(thawed):
    gc.freeze()
    frozen = gc.get_freeze_count()
    with frozen_heap():
        made_inside = [Node() for _ in range(100)]
        assert gc.get_freeze_count() == frozen  # nothing more frozen: the block's objects are collected as usual
    assert gc.get_freeze_count() == frozen
    del made_inside


def test_materialize_all_runs_its_steps_on_a_frozen_heap(thawed, monkeypatch):
    import pipeline.__main__ as cli
    import pipeline.definitions

    seen = []
    monkeypatch.setattr(pipeline.definitions, "defs", lambda: "definitions")
    monkeypatch.setattr(cli, "_materialize", lambda definitions, *args: seen.append(
        (definitions, gc.get_freeze_count())) or "result")
    assert cli.materialize_all(instance=None) == "result"
    assert seen[0][0] == "definitions" and seen[0][1] > 0
    assert gc.get_freeze_count() == 0
