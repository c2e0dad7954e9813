#!/usr/bin/env bash
# Nightly retention, for cron (e.g. "15 3 * * * /usr/local/bin/nightly-retention.sh"):
# fire due alarms, purge what has been idle for $KEEP (default 90d), check the store.
set -euo pipefail
keep=${KEEP:-90d}

durable sweep --json >/dev/null
durable purge --older-than "$keep" --yes --json \
  | jq -r '"purged \(.deleted | length) objects, skipped \(.skipped | length) busy ones"'
durable doctor --json | jq -e .healthy >/dev/null || { echo "durable doctor: store unhealthy" >&2; exit 1; }
