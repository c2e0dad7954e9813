"""SIGINT/SIGTERM as `durable work` (docs/reference/sessions.md §5.1) and `durable step` (§5.2) take them while their CMD
runs: remembered (the first one wins) and sent on to CMD's process group. A module of its own so that both read
it without one importing the other (durable_cli/steps.py is imported by both Store backends; work.py reads the
remote backend)."""

import os
import signal


class Stop:
    """SIGINT/SIGTERM as `work` takes them: remembered (first one wins), and sent on to CMD's group."""

    def __init__(self):
        self.status = None
        self.group = None  # CMD's process group while it runs

    def __call__(self, signum, _frame):
        if self.status is None:
            self.status = 128 + signum
        if self.group is not None:
            try:
                os.killpg(self.group, signum)
            except OSError:
                pass

    def install(self):
        self.saved = {s: signal.signal(s, self) for s in (signal.SIGINT, signal.SIGTERM)}
        from . import guard

        if guard.signal_before is not None and self.status is None:  # one that came before: not lost
            self.status = guard.signal_before()

    def restore(self):
        for s, handler in self.saved.items():
            signal.signal(s, handler)
