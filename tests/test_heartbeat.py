"""`make test`'s heartbeat (tests/heartbeat.py): a line names the test that keeps the run silent, and none comes
while tests report or once they are done."""

from __future__ import annotations

import time
from types import SimpleNamespace

from heartbeat import Heartbeat


class Screen:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> None:
        self.text += text


def test_a_silent_run_names_its_longest_test_and_a_finished_run_says_nothing() -> None:
    screen = Screen()
    heartbeat = Heartbeat(screen, quiet_s=0.5)  # type: ignore[arg-type]
    heartbeat.start()
    try:
        heartbeat.pytest_runtest_logstart("tests/test_a.py::test_slow")
        time.sleep(0.3)
        heartbeat.pytest_runtest_logstart("tests/test_b.py::test_other")
        time.sleep(1.6)
        lines = [line for line in screen.text.splitlines() if line]
        assert lines and all(line.startswith("... 2 running; the longest") for line in lines), screen.text
        assert lines[-1].endswith(": tests/test_a.py::test_slow")
        for nodeid in ("tests/test_a.py::test_slow", "tests/test_b.py::test_other"):
            heartbeat.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, when="teardown"))  # type: ignore[arg-type]
        written = screen.text
        time.sleep(1.6)
        assert screen.text == written, "nothing runs: nothing to say"
    finally:
        heartbeat.stop()
