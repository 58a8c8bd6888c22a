"""A headless Chromium driven over the DevTools protocol, for the report's browser tests.

Chromium is started with ``--remote-debugging-pipe``: it reads protocol commands (JSON, each
ended by a NUL byte) on its file descriptor 3 and answers on 4, so nothing listens on a
port. :class:`Browser` opens a page at a given window size, loads a file, evaluates
JavaScript in it (the laid-out boxes of elements, as a person sees them) and takes
screenshots of the first screen or of the whole page.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

CHROMIUM = next((p for p in (shutil.which(n) for n in (
    "chromium", "chromium-browser", "google-chrome", "google-chrome-stable")) if p), None)


class BrowserError(RuntimeError):
    """Chromium answered a command with an error, or did not answer in time."""


class Browser:
    """One headless Chromium with one page (a context manager: the process ends on exit)."""

    def __init__(self, profile: Path, width: int = 1400, height: int = 900,
                 timeout: float = 60.0) -> None:
        if CHROMIUM is None:
            raise BrowserError("chromium is not installed (scripts/setup-test.sh)")
        self.width, self.height, self.timeout = width, height, timeout
        to_chromium_r, self._to_chromium = os.pipe()
        self._from_chromium, from_chromium_w = os.pipe()

        def fds_3_and_4() -> None:  # in the child, before exec: its pipe ends at 3 and 4
            high_r = os.dup(to_chromium_r)
            high_w = os.dup(from_chromium_w)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--hide-scrollbars",
                "--remote-debugging-pipe", f"--user-data-dir={profile}",
                f"--window-size={width},{height}", "about:blank"]
        profile.mkdir(parents=True, exist_ok=True)
        self.log = profile / "chromium.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                preexec_fn=fds_3_and_4, close_fds=False)
        os.close(to_chromium_r)
        os.close(from_chromium_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session = ""
        targets = self.send("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.send("Target.attachToTarget", targetId=page["targetId"],
                                 flatten=True, session=False)["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """End Chromium (politely first, then by its PID)."""
        if self.process.poll() is None:
            with contextlib.suppress(BrowserError, OSError):
                self.send("Browser.close", session=False, wait=5.0)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        for fd in (self._to_chromium, self._from_chromium):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("chromium did not answer in time")
            ready, _, _ = select.select([self._from_chromium], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_chromium, 1 << 20)
            if not chunk:
                raise BrowserError(f"chromium exited (status {self.process.poll()})")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def send(self, method: str, *, session: bool = True, wait: float | None = None,
             **params: Any) -> dict[str, Any]:
        """Send one command (to the page's session unless ``session`` is False) and return
        its result; events that arrive meanwhile are kept in ``events``."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_chromium, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + (wait if wait is not None else self.timeout)
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            self.events.append(answer)

    def _wait_event(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    del self.events[i]
                    return event
            self.events.append(self._read_message(deadline))

    def open(self, url: str) -> None:
        """Load ``url`` and wait for its load event (scripts have run)."""
        self.events.clear()
        self.send("Page.navigate", url=url)
        self._wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression evaluated in the page."""
        answer = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in answer:
            raise BrowserError(f"script failed: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        """A PNG of the first screen (the window's size), or of the whole page."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            height = int(self.evaluate("document.documentElement.scrollHeight"))
            params["clip"] = {"x": 0, "y": 0, "width": self.width, "height": height,
                              "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", **params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def console_errors(self) -> list[str]:
        """Exceptions thrown and errors logged by the page so far."""
        found = []
        for event in self.events:
            if event.get("method") == "Runtime.exceptionThrown":
                found.append(json.dumps(event["params"]["exceptionDetails"])[:500])
            elif event.get("method") == "Runtime.consoleAPICalled" and \
                    event["params"].get("type") == "error":
                found.append(json.dumps(event["params"]["args"])[:500])
        return found
