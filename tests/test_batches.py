"""Forward passes side by side on CPU threads: the same results in the same order, torch's threads restored."""

from __future__ import annotations

import threading

import pytest
import torch

from lm.batches import map_passes


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_results_in_order_and_threads_restored(two_threads):
    weight = torch.randn(64, 64, generator=torch.Generator().manual_seed(0))
    batches = [torch.randn(n, 64, generator=torch.Generator().manual_seed(n)) for n in (5, 300, 1, 40)]
    seen: list[int] = []

    def run(x):
        seen.append(torch.get_num_threads())
        with torch.inference_mode():
            return (x @ weight).sum(dim=1).tolist()

    got = list(map_passes(run, batches, torch.device("cpu")))
    assert got == [pytest.approx((x @ weight).sum(dim=1).tolist(), abs=1e-4) for x in batches]
    assert seen == [1, 1, 1, 1]  # each pass on one thread
    assert torch.get_num_threads() == 2


def test_threads_restored_when_a_pass_fails_or_the_reader_stops(two_threads):
    def fail(n):
        if n == 2:
            raise ValueError("bad pass")
        return n

    with pytest.raises(ValueError, match="bad pass"):
        list(map_passes(fail, [1, 2, 3], "cpu"))
    assert torch.get_num_threads() == 2
    passes = map_passes(lambda n: n, [1, 2, 3], "cpu")
    assert next(passes) == 1
    passes.close()
    assert torch.get_num_threads() == 2


def test_one_thread_or_one_pass_runs_here(two_threads):
    assert list(map_passes(lambda n: torch.get_num_threads(), [7], "cpu")) == [2]
    torch.set_num_threads(1)
    assert list(map_passes(lambda n: torch.get_num_threads(), [1, 2], "cpu")) == [1, 1]


def test_passes_of_runs_side_by_side_each_take_one_thread_and_leave_the_caller_s_count(two_threads):
    """Runs in two threads of one process (a notebook's background job): the second's passes take the caller's count
    of threads, not the 1 the first's passes set, and run on one thread each though the first's end meanwhile; the
    count of the thread that called the second is the one it set."""
    inside, release = threading.Event(), threading.Event()

    def hold(n):
        if n == 0:
            inside.set()
            release.wait()
        return n

    first = threading.Thread(target=lambda: list(map_passes(hold, [0, 1], "cpu")))
    seen: list[tuple[int, str]] = []
    after: list[int] = []

    def second(n):
        if n == 1:
            release.set()
            first.join()  # the first's passes end while this one runs
        seen.append((torch.get_num_threads(), threading.current_thread().name))
        return n

    def caller():
        torch.set_num_threads(2)
        first.start()
        inside.wait()
        assert list(map_passes(second, [0, 1], "cpu")) == [0, 1]
        after.append(torch.get_num_threads())

    thread = threading.Thread(target=caller)
    thread.start()
    thread.join()
    assert [threads for threads, _ in seen] == [1, 1]
    assert all(name.startswith("kbc-pass") for _, name in seen)  # side by side, as alone
    assert after == [2]
