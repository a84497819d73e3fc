"""The suite's own scheduling under ``-n N`` (``tests/conftest.py``): ``long_first`` puts each worker's share of the
tests marked ``long`` at the front of the block xdist's work-stealing scheduler gives that worker, keeps every
test exactly once, and moves a ``long`` test that uses a module-scoped fixture together with its module."""

from types import SimpleNamespace

import pytest
from conftest import long_first


class FakeItem:
    """What ``long_first`` reads of a collected test: its node id, its ``long`` mark, its fixtures' scopes."""

    def __init__(self, nodeid: str, tier: int | None = None, module_fixture: bool = False):
        self.nodeid = nodeid
        self.mark = None if tier is None else SimpleNamespace(args=(tier,) if tier != 3 else ())
        scope = "module" if module_fixture else "function"
        self._fixtureinfo = SimpleNamespace(name2fixturedefs={"f": [SimpleNamespace(scope=scope)]})

    def get_closest_marker(self, name):
        return self.mark if name == "long" else None

    def __repr__(self):
        return self.nodeid


class FakeNode:
    """A worker as xdist's scheduler sees it: the test indices it was sent."""

    def __init__(self, name: str):
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices):
        self.sent += list(indices)


def xdist_blocks(nodeids: list[str], workers: int) -> list[list[str]]:
    """The tests xdist's ``WorkStealingScheduling`` sends each of ``workers`` idle workers at the session's start."""
    from xdist.scheduler import WorkStealingScheduling

    tx = [f"{workers}*popen"]  # what `-n N` becomes (xdist's pytest_cmdline_main)
    config = SimpleNamespace(getvalue=lambda name: {"tx": tx, "numprocesses": workers}.get(name),
                             option=SimpleNamespace(numprocesses=workers, tx=tx))
    scheduler = WorkStealingScheduling(config)
    nodes = [FakeNode(f"gw{i}") for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, nodeids)
    scheduler.schedule()
    return [[nodeids[i] for i in node.sent] for node in nodes]


def collection() -> list[FakeItem]:
    # eleven tests in four modules; in collection order: a (plain), b (a long tier-3 test and a plain one), c (a
    # long tier-1 test using a module fixture, and two plain tests sharing it), d (a long tier-2 test, plain ones)
    return [FakeItem("a.py::t1"), FakeItem("a.py::t2"),
            FakeItem("b.py::t1"), FakeItem("b.py::slow", tier=3),
            FakeItem("c.py::t1", module_fixture=True), FakeItem("c.py::slow", tier=1, module_fixture=True),
            FakeItem("c.py::t2", module_fixture=True),
            FakeItem("d.py::t1"), FakeItem("d.py::slow", tier=2), FakeItem("d.py::t2"), FakeItem("d.py::t3")]


@pytest.mark.parametrize("workers", [2, 3])
def test_each_worker_starts_on_its_share_of_the_long_tests(workers):
    items = collection()
    ordered = long_first(items, workers)
    assert sorted(map(id, ordered)) == sorted(map(id, items))  # the same tests, each once
    blocks = xdist_blocks([item.nodeid for item in ordered], workers)
    assert sum(map(len, blocks)) == len(items)
    firsts = [block[0] for block in blocks]
    if workers == 2:
        # tier 1 (with its module, the long test first) to the first worker, tier 2 to the second, tier 3 to the first
        assert blocks[0][:4] == ["c.py::slow", "c.py::t1", "c.py::t2", "b.py::slow"]
        assert blocks[1][0] == "d.py::slow"
        # the other tests fill the blocks in collection order
        assert blocks[0][4:] == ["a.py::t1"] and blocks[1][1:] == ["a.py::t2", "b.py::t1", "d.py::t1", "d.py::t2",
                                                                  "d.py::t3"]
    else:
        assert firsts == ["c.py::slow", "d.py::slow", "b.py::slow"]


def test_without_long_tests_the_order_is_the_collection():
    items = [FakeItem(f"m{i // 3}.py::t{i}") for i in range(10)]
    assert long_first(items, 2) == items
