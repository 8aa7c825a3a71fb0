"""A line when the test run has printed nothing for a while: which tests are running, and for how long.

`pytest -q` prints a dot per finished test, and the slowest tests take minutes on a 2-core machine: without this,
`make test` can sit silent for over two minutes and look hung. Runs in the xdist controller (`make test`'s `-n`),
which runs no test itself. What it does NOT do: time out a test (pytest-timeout does), or speak in a run without
xdist: there the tests run in the reporting process, whose output pytest captures while a test runs.
"""

from __future__ import annotations

import threading
import time

import pytest

QUIET_S = 10.0  # the longest stretch without output before a line says what is running


class Heartbeat:
    def __init__(self, reporter: pytest.TerminalReporter, quiet_s: float = QUIET_S) -> None:
        self.reporter = reporter
        self.quiet_s = quiet_s
        self.running: dict[str, float] = {}  # node id -> when it started
        self.last_output = time.monotonic()
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="kv-test-heartbeat", daemon=True)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        with self.lock:
            self.running[nodeid] = self.last_output = time.monotonic()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        with self.lock:
            self.last_output = time.monotonic()
            if report.when == "teardown":
                self.running.pop(report.nodeid, None)

    def _watch(self) -> None:
        while not self.stopped.wait(1.0):
            with self.lock:
                now = time.monotonic()
                if not self.running or now - self.last_output < self.quiet_s:
                    continue
                longest, started = min(self.running.items(), key=lambda item: item[1])
                self.last_output = now
                line = f"... {len(self.running)} running; the longest, {now - started:.0f} s: {longest}"
                # a line of its own: -q leaves the cursor after the last dot
                self.reporter.write("\n" + line + "\n")

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    distributed = config.getoption("dist", "no") != "no" and not hasattr(config, "workerinput")
    if reporter is None or not distributed or config.option.collectonly:
        return
    heartbeat = Heartbeat(reporter)
    config.pluginmanager.register(heartbeat, "kv-test-heartbeat")
    config.add_cleanup(heartbeat.stop)
    heartbeat.start()
