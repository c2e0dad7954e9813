"""The command line's commit guard (docs/reference/output.md §4, §13), in a module of its own so that either backend reads
it without importing the other: set by the CLI for one run, None in the library.

While it is entered around a COMMIT (store/objects.py) or a remote write (remote/client.py), SIGINT and
SIGTERM wait for the outcome, so 130/143 still mean nothing changed."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

commit_guard = None

# Called by the remote backend after each poll of a wait that answered "nothing yet" (its write changed
# nothing): a signal that came during it ends the run 130/143 now, and later ones interrupt at once
# (docs/reference/remote.md §13: a remote wait interrupted by a signal exits 130/143, never 9). None in the library.
poll_settled = None

# Entered around starting a child process whose group the caller must kill if the run is interrupted (a
# summarizer command): a signal that comes while the child is being started waits until the caller holds it,
# then ends the run 130/143 as usual. None in the library.
signals_deferred = None

# A dict the CLI sets for one run (docs/reference/traces.md §15.6, operation spans): object id -> [file path, wakes,
# lock wait, wake, work, commit seconds, alarms fired], summed over the run's wakes of that object, and "remote" ->
# [requests, seconds] of the requests to a Worker. None in the library. `mcp` and `ui` route it per call
# (telemetry/operation.py Routed): only its setdefault is used.
wakes = None

# Called by a loop that takes SIGINT/SIGTERM itself (`durable work`, `durable step`: durable_cli/stop.py) once its own
# handler is in place: the status of a signal the CLI's handler took before then and did not act on (deferred while a
# commit was under way, or raised where it was swallowed), or None, so that no signal is lost between the two
# handlers (a SIGTERM during `work`'s start-up then ends it as one during its loop does). None in the library.
signal_before: "Callable[[], int | None] | None" = None
