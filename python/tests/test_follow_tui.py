"""The explorer follows a running recording: `memtide -f run.jsonl` in a pseudo-terminal
(screen read back with the pyte terminal emulator) shows the file growing while a real PyTorch
run writes it, and a new peak as soon as the run makes one."""

import fcntl
import os
import pty
import re
import select
import struct
import termios
import time

import pyte
import torch
import torch.nn as nn

import memtide_record as mr

ROWS, COLS = 30, 100


class Term:
    """memtide in a pty, its output fed to a pyte screen."""

    def __init__(self, argv):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
            os.execvpe(argv[0], argv, dict(os.environ, TERM="xterm-256color"))
        self.screen = pyte.Screen(COLS, ROWS)
        self.stream = pyte.ByteStream(self.screen)

    def pump(self, secs):
        end = time.time() + secs
        while time.time() < end:
            r, _, _ = select.select([self.fd], [], [], 0.05)
            if r:
                try:
                    data = os.read(self.fd, 1 << 16)
                except OSError:
                    return
                if not data:
                    return
                self.stream.feed(data)

    def text(self):
        return "\n".join(self.screen.display)

    def wait_for(self, pred, what, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            self.pump(0.05)
            if pred(self.text()):
                return self.text()
        raise AssertionError(f"timed out waiting for {what}; screen:\n{self.text()}")

    def quit(self):
        os.write(self.fd, b"q")
        self.pump(1.0)
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)


def header_peak_mib(text):
    m = re.search(r"peak ([0-9.]+) (KiB|MiB|GiB)", text.splitlines()[0])
    if not m:
        return None
    scale = {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}[m.group(2)]
    return float(m.group(1)) * scale


def test_explorer_follows_a_running_recording(tmp_path, memtide_bin):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters())
    path = tmp_path / "run.jsonl"
    with mr.record(path, model=model, optimizer=opt, max_delay=0.05):
        mr.step(0)
        loss = model(torch.randn(32, 256)).sum()
        loss.backward()
        opt.step()
        mr.mark("first step done")
        term = Term([memtide_bin, "-f", str(path)])
        try:
            first = term.wait_for(lambda t: "FOLLOW" in t and header_peak_mib(t) is not None,
                                  "the follow indicator and a peak")
            before = header_peak_mib(first)
            assert before < 16, first  # the small model: well under the big tensor below
            # The run goes on: a 64 MiB activation-sized tensor raises the peak.
            mr.step(1)
            big = torch.zeros(64 << 20, dtype=torch.uint8)
            mr.mark("big made")
            grown = term.wait_for(lambda t: (header_peak_mib(t) or 0) >= 64,
                                  "the new peak from the running recording")
            assert "FOLLOW" in grown, grown
            del big
        finally:
            code = term.quit()
    assert code == 0
