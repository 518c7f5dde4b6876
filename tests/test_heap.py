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


def test_blocks_overlapping_in_threads_restore_the_collector_after_the_last() -> None:
    """Two runs in two threads, the first to start ending first: the collector stays eased
    until the second ends, then is as it was (not left at the eased threshold)."""
    before = gc.get_threshold()
    first, second = collector_eased(), collector_eased()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold()[0] == max(YOUNG, before[0])
    assert gc.get_freeze_count() > 0
    second.__exit__(None, None, None)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


_EXIT_SCRIPT = """
import atexit, gc, sys
class Node:
    def __del__(self):
        sys.stdout.write("collected\\n")
        sys.stdout.flush()
a, b = Node(), Node()
a.other, b.other = b, a  # a cycle: only the collector frees it
if sys.argv[1] == "hook":
    from ragjudge.heap import freeze_at_exit
    atexit.register(freeze_at_exit)
del a, b
"""


@pytest.mark.parametrize("hook", ["hook", "none"])
def test_freeze_at_exit_keeps_the_exit_collections_off_what_is_left(hook: str) -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _EXIT_SCRIPT, hook], capture_output=True, text=True, check=True
    ).stdout
    assert ("collected" in out) is (hook == "none")


_CLI_SCRIPT = """
import sys
import ragjudge.heap as heap
hook = heap.freeze_at_exit
def counted():
    sys.stdout.write("frozen\\n")
    hook()
heap.freeze_at_exit = counted
from ragjudge.cli import main
for _ in range(3):
    try:
        main(["--version"])
    except SystemExit:
        pass
"""


def test_the_command_line_registers_the_exit_hook_once() -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _CLI_SCRIPT], capture_output=True, text=True, check=True
    ).stdout
    assert out.count("frozen") == 1
