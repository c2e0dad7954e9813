// The transcript (mirrors durable_cli/core/transcript/, docs/reference/transcript.md §6), one module a job as on the Python side:
// row, appends, reads, context (the window), edits, summaries. `session fork` is ../fork.ts (core/fork.py).
export * from "./row";
export * from "./appends";
export * from "./reads";
export * from "./context";
export * from "./edits";
export * from "./summaries";
