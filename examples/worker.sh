#!/usr/bin/env bash
# An agent worker: a thin wrapper over `durable work` (docs/reference/sessions.md §5.1), which takes each prompt, runs the
# model command on it (the prompt document as JSON on stdin), records the reply, renews the lease,
# retries failures with back-off and hands the prompt back on Ctrl-C.
#   usage: worker.sh SESSION [MODEL_COMMAND]     (default: llm, reading the prompt text)
# Stops once no prompt came within $WAIT (default 30s): exit 0 if it handled one, 9 if none came.
set -euo pipefail
session=${1:?usage: worker.sh SESSION [MODEL_COMMAND]}
model=${2:-llm}
exec durable work "$session" --command "jq -r .content | $model" --wait "${WAIT:-30s}"
