"""Counts of what the fault tests did, for docs/reliability.md (written when DURABLE_RELIABILITY_REPORT is set)."""

import collections

COUNTS = collections.Counter()


def count(what: str, outcome: str) -> None:
    COUNTS[f"{what}: {outcome}"] += 1
