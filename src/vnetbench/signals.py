"""Signals during a run: SIGTERM behaves like Ctrl-C, and no signal is ever lost or half-acted.

* ``terminate_raises()``: while active, SIGTERM raises ``Terminated`` in the main thread (as
  SIGINT raises ``KeyboardInterrupt``), so ``finally`` blocks tear labs down and the run is
  marked incomplete. ``vnetbench run`` holds it for the whole command, between trials too.
* ``deferred()``: while active (teardown), SIGINT and SIGTERM are recorded instead of acted
  on; when it ends, the first one recorded is raised (``KeyboardInterrupt`` or
  ``Terminated``). A second Ctrl-C during teardown therefore cannot leave debris, and a
  signal that lands in teardown still stops the run right after it. A signal this process
  ignores (inherited ignored: ``nohup ... &``) stays ignored.

Both only act in the main thread (Python delivers signals there); elsewhere they do nothing.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

HANDLED = (signal.SIGINT, signal.SIGTERM)
EXIT_SIGTERM = 128 + signal.SIGTERM
EXIT_SIGINT = 128 + signal.SIGINT


class Terminated(BaseException):
    """Raised in the main thread when SIGTERM arrives, so ``finally`` blocks tear down."""


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def exception_for(signum: int) -> BaseException:
    """The exception a signal stands for: ``KeyboardInterrupt`` or ``Terminated``."""
    if signum == signal.SIGINT:
        return KeyboardInterrupt()
    return Terminated(f"signal {signum}")


@contextmanager
def terminate_raises() -> Iterator[None]:
    """SIGTERM raises ``Terminated`` in the main thread while active."""
    if not _main_thread():
        yield
        return

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise Terminated(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def deferred() -> Iterator[list[int]]:
    """Record SIGINT/SIGTERM instead of acting on them; yields the list of those recorded.

    The caller raises ``exception_for(pending[0])`` when it is safe (see ``raise_pending``).
    """
    pending: list[int] = []
    if not _main_thread():
        yield pending
        return

    def record(signum: int, frame: FrameType | None) -> None:
        pending.append(signum)

    # an ignored signal stays ignored (``nohup vnetbench run &``: a shell leaves SIGINT
    # ignored for a background job, which Ctrl-C must not stop, in teardown or out of it)
    previous = {s: signal.signal(s, record) for s in HANDLED
                if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        yield pending
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def raise_pending(pending: list[int]) -> None:
    """Act on the first signal recorded by ``deferred`` (nothing if none was)."""
    if pending:
        raise exception_for(pending[0])
