#!/usr/bin/env bash
# An agent worker: take prompts from a session's queue, run each through a model, store the reply.
#   usage: worker.sh SESSION [MODEL_COMMAND]
# MODEL_COMMAND reads the prompt on stdin and prints the reply (default: llm). Stops when no prompt
# came within $WAIT (default 30s); exits non-zero on any other failure.
set -euo pipefail
session=${1:?usage: worker.sh SESSION [MODEL_COMMAND]}
model=${2:-llm}
wait=${WAIT:-30s}

while true; do
  rc=0
  prompt=$(durable session next "$session" --wait "$wait" --json) || rc=$?
  case $rc in
    0) ;;
    9) exit 0 ;;          # nothing came: done
    *) exit "$rc" ;;
  esac
  id=$(jq -r .id <<<"$prompt")
  if reply=$(jq -r .content <<<"$prompt" | $model); then
    printf '%s' "$reply" | durable session finish "$session" "$id" --reply - >/dev/null
  else
    durable session finish "$session" "$id" --error "model failed" >/dev/null
  fi
done
