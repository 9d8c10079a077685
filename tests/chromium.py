"""Headless Chromium (Debian's `chromium`) driven through its DevTools protocol over
`--remote-debugging-pipe`: standard library only, no websocket. Loads a page, keeps what
its scripts and console reported (exceptions, console errors, CSP violations, dialogs,
network requests), evaluates JavaScript in it and takes screenshots. Used by the HTML
report's tests and benchmark."""
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
         "--mute-audio", "--remote-debugging-pipe")


class ChromiumError(Exception):
    pass


class Chromium:
    """One headless browser with one page. Use as a context manager."""

    def __init__(self, width=1400, height=900, timeout=60):
        if not CHROMIUM:
            raise ChromiumError("chromium is not installed (tests/debian-packages.txt)")
        self.timeout = timeout
        self.dir = tempfile.mkdtemp(prefix="jobmon-chromium-")
        cmd_r, self._cmd_w = os.pipe()          # we write commands, it reads fd 3
        self._resp_r, resp_w = os.pipe()        # it writes replies to fd 4

        def pipes_at_3_and_4():
            a, b = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10), fcntl.fcntl(resp_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self.dir}", f"--window-size={width},{height}",
             "about:blank"], preexec_fn=pipes_at_3_and_4, pass_fds=(3, 4),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(resp_w)
        self._buf, self._next = b"", 0
        self.events, self.session = [], None
        self.width, self.height = width, height

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.proc.poll() is None:
            try:
                self.call("Browser.close", timeout=10)
            except (ChromiumError, OSError):
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self._cmd_w, self._resp_r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)

    # ---- the protocol ---------------------------------------------------------------

    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._resp_r], [], [], left)[0]:
                raise ChromiumError("no reply from chromium in time")
            chunk = os.read(self._resp_r, 1 << 20)
            if not chunk:
                raise ChromiumError(f"chromium ended (status {self.proc.poll()})")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, params=None, session=True, timeout=None):
        """Send one command (to the page's session unless session=False) and wait for its
        result; events that come meanwhile are kept in self.events."""
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise ChromiumError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._event(reply)

    def _event(self, msg):
        self.events.append(msg)
        if msg.get("method") == "Page.javascriptDialogOpening":   # it would block the page
            self._next += 1
            os.write(self._cmd_w, json.dumps(
                {"id": self._next, "method": "Page.handleJavaScriptDialog",
                 "params": {"accept": False}, "sessionId": msg.get("sessionId")}).encode()
                + b"\0")

    # ---- the page ---------------------------------------------------------------------

    def open(self, url, ready="document.documentElement.dataset.renderMs"):
        """Load url in a fresh page and wait until the JS expression `ready` is truthy."""
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        self.session = self.call("Target.attachToTarget", {"targetId": target["targetId"],
                                                           "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", {
            "width": self.width, "height": self.height, "deviceScaleFactor": 1,
            "mobile": False})
        self.call("Page.navigate", {"url": url})
        deadline = time.monotonic() + self.timeout
        probe = f"(() => {{ try {{ return !!({ready}); }} catch (e) {{ return false; }} }})()"
        while not self.evaluate(probe):
            if time.monotonic() > deadline:
                raise ChromiumError(f"the page was not ready in time; it reported "
                                    f"{self.problems()}")
            time.sleep(0.02)

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            raise ChromiumError(f"evaluating {expression!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def problems(self):
        """What the page reported that a clean page does not: uncaught exceptions, console
        errors and warnings, browser log errors (CSP violations, failed loads), dialogs."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                out.append("exception: " + (d.get("exception", {}).get("description")
                                            or d.get("text", "")))
            elif m == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert", "warning"):
                out.append(f"console.{p['type']}: " + " ".join(
                    str(a.get("value", a.get("description"))) for a in p["args"]))
            elif m == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                out.append(f"log {p['entry']['level']}: {p['entry']['text']}")
            elif m == "Page.javascriptDialogOpening":
                out.append(f"dialog {p['type']}: {p['message']}")
        return out

    def requests(self):
        """URLs the page asked for (the page itself included)."""
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path):
        """A PNG of the whole page, not just the window."""
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        shot = self.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": self.width,
                     "height": max(self.height, int(size["height"])), "scale": 1}})
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        return path
