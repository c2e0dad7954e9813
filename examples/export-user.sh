#!/usr/bin/env bash
# Give a user their data: export everything they own (sessions, memory, limits) to one JSONL file.
#   usage: export-user.sh USER [DIR]
set -euo pipefail
user=${1:?usage: export-user.sh USER [DIR]}
dir=${2:-.}
out="$dir/$user-$(date -u +%Y%m%d).jsonl"

durable export --user "$user" --output "$out"
jq -r '"\(.scope)\t\(.name)\t\(.turns | length) turns\t\(.facts | length) facts"' "$out" >&2
echo "$out"
