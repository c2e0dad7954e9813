"""OpenTelemetry GenAI traces of sessions and runs (docs/reference/traces.md §15): `traces` builds the spans from
export records (no OpenTelemetry import), `otlp` hands them to the SDK to send or write. Neither is a rule: they
read what the library returns, and are imported only by a command that emits spans."""
