"""The transcript and its context window (docs/reference/transcript.md §6).

A row holds what an agent writes: text, tool calls (assistant rows), the result of one call (`tool`
rows, by `call_id`), the turn's `meta` and the caller's own item (`data`, verbatim).
Logical order: live rows (not superseded) by position, where a turn stands at its seq and a summary
at the first seq it covers. The leading `system` and `developer` turns of that order are pinned.
Summaries are an overlay: a `summary` row plus `superseded_by` on the rows it stands for.
The window and `rows(last=N)` are read backwards from the tail through a partial index on live
positions, so their cost grows with what they return, never with the transcript.
Input is validated whole (`prepare`) before anything is opened or created.

One module a job, each the twin of the same name in worker/src/rules/transcript/: `row` (columns, input checks,
encoding, `row_json`), `appends`, `reads` (show, follow, rows), `context` (the window), `summaries`
(summarize, compact, the summarizer command) and `edits` (pop, clear, prune, redact, replace_tail).
This package's namespace is the transcript's API: `transcript.append(...)`, `transcript.window(...)`.
"""

from .appends import append, append_many, insert_rows, insert_turn  # noqa: F401
from .context import context_window, window  # noqa: F401
from .edits import clear, pop, prune, redact, replace_tail  # noqa: F401
from .reads import STORED_COLUMNS, follow_start, rows, rows_after, rows_before, show, stored_rows  # noqa: F401
from .row import (  # noqa: F401 - the transcript's API, by job
    AUTHOR,
    CALL_ID,
    CALLS,
    CONTENT,
    CREATED,
    DATA,
    FIRST,
    FORKED,
    INPUT_KEYS,
    KIND,
    LAST,
    MAX_COST,
    MAX_INT,
    MAX_USAGE,
    META,
    NAME,
    OUTPUT_KEYS,
    POS,
    PRUNED,
    REDACTED,
    ROLE,
    ROLES,
    ROW_COLUMNS,
    SEQ,
    SUPERSEDED,
    TOKENS,
    Prepared,
    check_content,
    check_text,
    estimate,
    parse_json,
    prepare,
    prepare_batch,
    refuse_rewrite_if_owned,
    row_json,
)
from .summaries import (  # noqa: F401
    Plan,
    check_summary_request,
    commit_summary,
    compact,
    plan_compact,
    plan_summary,
    run_summarizer,
    summarize,
    summarizer_input,
)
