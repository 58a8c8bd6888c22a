"""How the ``vnetbench`` command starts and ends: the garbage collector paused while the
program loads and builds its first lab, and a quick exit once everything is written.

A short command (``vnetbench run`` of a build-only lab is timed as a whole against Mininet)
spends ~15 ms in cyclic garbage collections while it imports (pydantic alone allocates
hundreds of thousands of objects, none of them garbage) and ~40 ms more at exit, where the
interpreter tears the module graph down object by object. So:

- ``pause_gc`` (at start) turns the collector off; ``resume_gc`` (once start-up is over)
  moves every object alive by then to the permanent generation (``gc.freeze``: later
  collections never walk them) and turns it back on. Reference counting still frees
  everything meanwhile; only cycles wait.
- ``leave`` ends the process: stdout and stderr flushed, every ``atexit`` handler run,
  threads that are not daemons joined, then ``os._exit`` with the exit code, skipping the
  interpreter's teardown. Whatever a command writes is written (and closed, or flushed
  and fsynced) by the time it returns, so nothing is lost.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading

_paused = False


def pause_gc() -> None:
    """Turn the cyclic garbage collector off until ``resume_gc`` (if it was on)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_gc() -> None:
    """Turn the collector back on if ``pause_gc`` turned it off (else nothing): what is
    alive now is frozen out of later collections first. Cheap to call more than once."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def leave(code: int) -> None:
    """Exit with ``code`` now: flush the standard streams, run the ``atexit`` handlers,
    join the threads that are not daemons, and skip the interpreter's teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more to write
            continue
    atexit._run_exitfuncs()
    me = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not me and not thread.daemon:
            thread.join()
    os._exit(code)
