"""Signal dispositions: a signal the process ignores (inherited ignored, as ``nohup ... &``
leaves SIGINT) stays ignored through a teardown (``signals.deferred``); one it handles is
recorded there and acted on after. The test helpers that give a child the default
dispositions (``conftest.signals_at_default``) do so whatever this process inherited."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from vnetbench.signals import deferred

from ..conftest import signals_at_default


@pytest.fixture
def sigint_ignored() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("sigint_ignored")
def test_an_ignored_sigint_stays_ignored_through_a_teardown() -> None:
    with deferred() as pending:
        os.kill(os.getpid(), signal.SIGINT)
    assert pending == []
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


@pytest.mark.usefixtures("python_signal_handlers")
def test_a_handled_sigint_is_recorded_in_a_teardown_and_restored_after() -> None:
    with deferred() as pending:
        os.kill(os.getpid(), signal.SIGINT)
    assert pending == [signal.SIGINT]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


PRINT = ("import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, "
         "signal.getsignal(signal.SIGINT) == signal.SIG_IGN, "
         "signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)")


@pytest.mark.usefixtures("sigint_ignored")
def test_a_child_given_the_default_dispositions_handles_sigint() -> None:
    inherited = subprocess.run([sys.executable, "-c", PRINT], capture_output=True, text=True,
                               check=True).stdout.split()
    assert inherited == ["False", "True", "True"]  # what a child gets without the helper
    given = subprocess.run([sys.executable, "-c", PRINT], capture_output=True, text=True,
                           check=True, preexec_fn=signals_at_default).stdout.split()
    assert given == ["True", "False", "True"]
