"""The names both runtimes share (durable_cli/contract/contract.json "constants"): row roles, the pinned ones,
usage keys, row keys, length limits. Literal here so that importing them costs nothing at start-up;
tests/test_contract.py holds them equal to the contract (the Worker imports the contract itself) and
fails on a literal copy anywhere else in durable_cli or worker/src."""

STATUSES = ("created", "active", "completed", "failed", "cancelled", "archived")
ROW_ROLES = ("system", "developer", "user", "assistant", "tool")
PINNED_ROLES = ROW_ROLES[:2]
PARTICIPANT_ROLES = ("owner", "member")
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
ROW_INPUT_KEYS = ("role", "content", "tool_calls", "call_id", "name", "meta", "data", "tokens")
ROW_OUTPUT_KEYS = ("seq", "author", "created_at", "kind", "superseded_by", "covers", "forked_from")
LIMITS = {"name": 200, "title": 200, "request_id": 128, "row_tokens": 1_000_000_000, "duration_seconds": 36500 * 86400, "participants": 1000, "tag_key": 64, "tag_value": 256, "tags": 32}
# docs/reference/sessions.md §5.3 "Attempts" (the Standard Webhooks schedule: attempt n+1 is due DELAYS[n-1] seconds after attempt
# n, 8 attempts in all), a claim's hold, an attempt's bound; reference/remote.md §13: deliveries one alarm invocation sends,
# deliveries a page of `session deliveries` holds
WEBHOOKS: dict = {"delays": [5, 300, 1800, 7200, 18000, 36000, 36000], "claim_floor_seconds": 10, "attempt_timeout_seconds": 5,
            "alarm_deliveries": 10, "list_page": 200}
