"""A property test: the library API against a small model of docs/reference/sessions.md §5's table (files, and the Worker)."""

import tempfile
import time

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from durable_cli import DurableError, Store


class SessionModel(RuleBasedStateMachine):
    @initialize()
    def start(self):
        self.name = "s"
        self.home = tempfile.mkdtemp()
        self.store = self.make_store()
        self.call("create", create=True)
        self.status, self.pending, self.processing, self.last_outcome = "created", [], None, None
        self.next_id = 1

    def make_store(self):
        return Store(home=self.home, user="alice", lock_timeout="0")

    def call(self, method, *args, create=False, **kwargs):
        with self.store.open(self.name, create=create) as s:
            if method == "create":
                return s.create()
            return getattr(s, method)(*args, **kwargs)

    def expect(self, code, method, *args, **kwargs):
        try:
            result = self.call(method, *args, **kwargs)
        except DurableError as e:
            assert e.exit_status == code, (method, e.message)
            return None
        assert code == 0, f"{method} should have failed with {code}"
        return result

    def recompute(self):
        if self.pending or self.processing:
            self.status = "active"
        else:
            self.status = self.last_outcome or "created"

    @rule(text=st.text(min_size=1, max_size=5))
    def prompt(self, text):
        if not text:
            return
        if self.status == "archived":
            self.expect(4, "prompt", text)
        elif len(self.pending) + (self.processing is not None) >= 10:
            self.expect(4, "prompt", text)
        else:
            self.expect(0, "prompt", text)
            self.pending.append(self.next_id)
            self.next_id += 1
            self.status = "active"

    @rule()
    def next(self):
        if self.status in ("archived", "cancelled"):
            self.expect(4, "next_prompt", lease_seconds=60)
        elif self.processing is not None:
            self.expect(4, "next_prompt", lease_seconds=60)
        elif not self.pending:
            assert self.call("next_prompt", lease_seconds=60) is None
        else:
            got = self.call("next_prompt", lease_seconds=60)
            assert got["id"] == self.pending[0]
            self.processing = self.pending.pop(0)

    @rule(failed=st.booleans())
    def finish(self, failed):
        if self.processing is None:
            return
        self.expect(0, "finish", self.processing, reply="ok", failed=failed)
        self.processing = None
        self.last_outcome = "failed" if failed else "completed"
        self.recompute()

    @rule()
    def stop(self):
        self.expect(0, "stop")
        if self.processing is not None:
            self.processing = None
            self.last_outcome = "failed"
            self.recompute()

    @rule()
    def cancel(self):
        if self.status in ("created", "active"):
            self.expect(0, "cancel")
            if self.pending or self.processing:
                self.last_outcome = "failed"
            self.pending, self.processing, self.status = [], None, "cancelled"
        else:
            self.expect(4, "cancel")

    @rule()
    def archive(self):
        if self.status == "archived":
            self.expect(0, "archive")
        elif self.status == "cancelled" or self.pending or self.processing:
            self.expect(4, "archive")
        else:
            self.expect(0, "archive")
            self.status = "archived"

    @rule()
    def unarchive(self):
        if self.status == "archived":
            self.expect(0, "unarchive")
            self.status = "active"
        else:
            self.expect(4, "unarchive")

    @rule()
    def dequeue(self):
        if self.pending:
            self.expect(0, "dequeue", self.pending[-1])
            self.pending.pop()
            self.recompute()

    @invariant()
    def agrees(self):
        if not hasattr(self, "store"):
            return
        show = self.call("show")
        assert show["status"] == self.status
        assert show["queue"] == {"pending": len(self.pending), "processing": int(self.processing is not None)}
        pending = [p["id"] for p in self.call("queue", pending_only=True)]
        assert pending == self.pending


# The suite runs a short form of each model (12 runs of 25 steps here, 8 against workerd below); `-m soak`
# runs 100 of each (SoakSessionModel, SoakRemoteSessionModel).
TestSessionModel = SessionModel.TestCase
TestSessionModel.settings = settings(max_examples=12, stateful_step_count=25, deadline=None)


class SoakSessionModel(SessionModel):
    """The local model at length (a class of its own: hypothesis keeps one TestCase and its settings per class)."""


TestSoakSessionModel = pytest.mark.soak(SoakSessionModel.TestCase)
TestSoakSessionModel.settings = settings(max_examples=100, stateful_step_count=25, deadline=None)


REMOTE = {}


@pytest.fixture(scope="class")
def remote_worker(tmp_path_factory):
    """A workerd serving the Worker for the remote model (each example uses a new NAME)."""
    from tests.remote.conftest import ALICE_TOKEN, start_dev

    dev = start_dev(tmp_path_factory)
    REMOTE.update(url=dev.url, token=ALICE_TOKEN)
    yield
    REMOTE.clear()
    dev.stop()


class RemoteSessionModel(SessionModel):
    """The same model against the remote backend: RemoteStore, one request per call."""

    def make_store(self):
        self.name = f"s-{time.time_ns()}"
        return Store(remote=REMOTE["url"], token=REMOTE["token"], user="alice")


TestRemoteSessionModel = pytest.mark.usefixtures("remote_worker")(RemoteSessionModel.TestCase)
TestRemoteSessionModel.settings = settings(max_examples=8, stateful_step_count=25, deadline=None)


class SoakRemoteSessionModel(RemoteSessionModel):
    """The remote model at length."""


TestSoakRemoteSessionModel = pytest.mark.soak(pytest.mark.usefixtures("remote_worker")(SoakRemoteSessionModel.TestCase))
TestSoakRemoteSessionModel.settings = settings(max_examples=100, stateful_step_count=25, deadline=None)
