"""plugin_utils/gc_freeze.py: what is frozen before a fork is out of the collector's reach; a play's start collects
the cyclic garbage frozen during the play before; the end of the run unfreezes. (The callback itself, which
imports ansible.plugins and so is not imported here, runs in tests/integration/test_gc_freeze_callback.py.)"""
import gc
import weakref

import pytest

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import gc_freeze


class Cycle:
    def __init__(self):
        self.me = self


@pytest.fixture(autouse=True)
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


def tracked(obj):
    return any(o is obj for o in gc.get_objects())


def cycle_garbage():
    """A weak reference to an object kept alive only by its own reference cycle."""
    return weakref.ref(Cycle())


def test_freeze_takes_the_heap_out_of_collections():
    kept = Cycle()
    assert tracked(kept)
    gc_freeze.freeze()
    assert gc.get_freeze_count() > 0
    # a collection (in a worker forked now, or here) no longer walks what existed at the freeze
    assert not tracked(kept)
    after = Cycle()
    assert tracked(after)


def test_garbage_frozen_during_a_play_is_collected_at_the_next_play_start():
    ref = cycle_garbage()
    gc_freeze.freeze()  # a task starts
    gc.collect()
    assert ref() is not None  # frozen: not collected
    gc_freeze.collect_and_freeze()  # the next play starts
    assert ref() is None
    assert gc.get_freeze_count() > 0


def test_without_a_freeze_the_same_garbage_is_collected():
    # the control for the test above: the cycle is garbage a plain collection finds
    ref = cycle_garbage()
    gc.collect()
    assert ref() is None


def test_release_unfreezes_everything():
    kept = Cycle()
    gc_freeze.freeze()
    gc_freeze.release()
    assert gc.get_freeze_count() == 0
    assert tracked(kept)
