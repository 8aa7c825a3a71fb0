"""The longest stretch a command stays silent: what a user waits through with nothing on the screen.

    python bench/silence.py [--label NAME] [--quiet | --stamps] [--json FILE] -- COMMAND [ARG ...]
    python bench/silence.py --table BEFORE.jsonl [AFTER.jsonl]      the runs of --json files as a markdown table

The command runs on a pseudo-terminal, as it would in a user's terminal: Python line-buffers its output there
and progress bars draw as they do for a person (a pipe would hold printed lines back and report a silence
that a user never sees). Every piece of visible text counts as output when it arrives: a line, or a progress
bar's redraw. The command's output is passed through unless `--quiet` (`--stamps`: piece by piece, each with
its second since the start, to see where the time goes); at the end one line says the total time, the
longest silence, the output around it and the exit code. `--json FILE` appends the same as one JSON object
per run, for a table of several flows.

What it does NOT measure: whether the output says anything useful (a bar that redraws without moving counts
as output), or silences shorter than the command's own output granularity.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import time
from dataclasses import asdict, dataclass
from pathlib import Path

_LINE_END = re.compile(rb"[\r\n]+")
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # colours and cursor moves of a terminal's output


@dataclass
class Silence:
    label: str
    seconds: float  # the whole run
    longest_gap_s: float  # the longest time without a line or a redraw (the start counts: from launch)
    before: str  # the last output before that gap ("" when it was the start)
    after: str  # the first output after it
    lines: int
    exit_code: int


def _clean(raw: bytes) -> str:
    return _ESCAPES.sub("", raw.decode(errors="replace")).strip()[:100]


def measure(command: list[str], label: str, echo: bool = True, stamps: bool = False) -> Silence:
    """Run `command` on a pseudo-terminal; time every line and redraw of its output."""
    primary, secondary = pty.openpty()
    # A new pseudo-terminal is 0 columns wide, where a progress bar draws nothing: size it as a terminal window.
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    started = time.monotonic()
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary,
                               close_fds=True)  # fmt: skip
    os.close(secondary)
    last_at, last_text = started, ""
    gap, before, after, lines = 0.0, "", "", 0
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the command and every process holding the terminal have exited
            chunk = b""
        if not chunk:
            break
        if echo and not stamps:
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
        # Output is what reaches the screen, when it does: a bar's redraw starts with a carriage return and
        # ends with none, so a chunk counts when it arrives, not when a line end follows it.
        now = time.monotonic()
        texts = [text for text in map(_clean, _LINE_END.split(chunk)) if text]
        if not texts:
            continue
        lines += len(texts)
        if stamps:
            for text in texts:
                print(f"{now - started:7.1f}  {text}", flush=True)
        if now - last_at > gap:
            gap, before, after = now - last_at, last_text, texts[0]
        last_at, last_text = now, texts[-1]
    code = process.wait()
    os.close(primary)
    ended = time.monotonic()
    if ended - last_at > gap:  # silent at the end (after its last output) counts too
        gap, before, after = ended - last_at, last_text, "(exit)"
    return Silence(label, ended - started, gap, before, after, lines, code)


def table(paths: list[Path]) -> str:
    """A markdown table of the flows in `--json` files (one column pair per file, flows in first-seen order)."""
    runs = [{run["label"]: run for run in map(json.loads, path.read_text().splitlines())} for path in paths]
    labels = list(dict.fromkeys(label for by_label in runs for label in by_label))
    heads = [f"{path.stem}: {what}" for path in paths for what in ("seconds", "longest silence (s)")]
    lines = ["| flow | " + " | ".join(heads) + " |", "|---" * (1 + len(heads)) + "|"]
    for label in labels:
        cells = [f"{run[label]['seconds']:.0f} | {run[label]['longest_gap_s']:.1f}" if label in run else "- | -"
                 for run in runs]  # fmt: skip
        lines.append(f"| `{label}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", help="the flow's name in the summary (default: the command)")
    parser.add_argument("--quiet", action="store_true", help="do not pass the command's output through")
    parser.add_argument("--stamps", action="store_true", help="print each line with its time since the start")
    parser.add_argument("--json", type=Path, help="append the result as one JSON line to this file")
    parser.add_argument(
        "--table", type=Path, nargs="+", metavar="JSONL", help="print these --json files as a table"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args()
    if args.table:
        print(table(args.table))
        return 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    result = measure(command, args.label or " ".join(command), echo=not args.quiet, stamps=args.stamps)
    print(f"\n[silence] {result.label}: {result.seconds:.0f} s in all, longest silence {result.longest_gap_s:.1f} s "
          f"(after {result.before!r}, before {result.after!r}), {result.lines} lines, exit {result.exit_code}")  # fmt: skip
    if args.json:
        with args.json.open("a") as handle:
            handle.write(json.dumps(asdict(result)) + "\n")
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
