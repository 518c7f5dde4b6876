"""``ragjudge.heap.collector_eased``: the collector eased during a run and restored after."""

from __future__ import annotations

import gc

import pytest

from ragjudge.heap import YOUNG, collector_eased


def test_the_collector_is_eased_in_the_block_and_restored_after() -> None:
    before = gc.get_threshold()
    with collector_eased():
        assert gc.get_freeze_count() > 0  # what was alive is out of the collector's sight
        assert gc.get_threshold() == (max(YOUNG, before[0]), *before[1:])
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


def test_a_block_that_raises_restores_the_collector() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), collector_eased():
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


def test_garbage_cycles_made_in_the_block_are_still_collected() -> None:
    class Node:
        other: object = None

    with collector_eased():
        a, b = Node(), Node()
        a.other, b.other = b, a
        alive = [id(a)]
        del a, b
        gc.collect()
        assert not any(id(o) in alive for o in gc.get_objects() if isinstance(o, Node))
