// ../durable_cli/contract/contract.json
var contract_default = {
  about: "Where Python and the Worker meet (docs/reference/output.md \xA74, \xA75, \xA710, \xA713): both load this file; tests/test_contract.py fails when either side disagrees.",
  statuses: ["created", "active", "completed", "failed", "cancelled", "archived"],
  transitions: {
    prompt: { from: ["created", "active", "completed", "failed", "cancelled"], to: "active", role: null },
    next: { from: ["created", "active", "completed", "failed"], to: null, role: null },
    cancel: { from: ["created", "active"], to: "cancelled", role: null },
    archive: { from: ["created", "active", "completed", "failed", "archived"], to: "archived", role: "owner" },
    unarchive: { from: ["archived"], to: "active", role: null },
    write: { from: ["created", "active", "completed", "failed", "cancelled"], to: null, role: null },
    invite: { from: ["created", "active", "completed", "failed", "cancelled", "archived"], to: null, role: "owner" },
    any: { from: ["created", "active", "completed", "failed", "cancelled", "archived"], to: null, role: null }
  },
  messages_about: "The message catalog (code -> template) of what both runtimes say for the same situation: {name} takes the value as text, {name!r} the value quoted as Python's repr() does (by the contract's Unicode table). durable_cli/contract/messages.py and worker/src/rules/state.ts `say` fill it; tests/test_contract.py fails on a literal copy in either tree. Each error's code is the caller's.",
  messages: {
    invalid_name: "invalid {what} {value!r}: use 1-200 printable characters with no leading or trailing white space",
    invalid_title: "invalid title: use 1-200 printable characters",
    invalid_tag_key: "invalid tag key {key!r}: use 1-64 characters from A-Z a-z 0-9 . _ - : /, beginning with a letter or a digit",
    invalid_tag_value: "invalid value for tag {key!r}: use 1-256 printable characters with no blank at either end (remove a tag with --untag {key})",
    tag_twice: "tag {key!r} is named twice; name each KEY once (set it or --untag it)",
    too_many_tags: "{what} would hold {count} tags, more than tags.max = {limit}; remove some with --untag KEY, or raise the cap with 'durable config set tags.max N' (at most 32)",
    invalid_request_id: "invalid --request-id: use 1-128 printable characters",
    invalid_participant_role: "invalid role {role!r}: use owner or member",
    empty_prompt: "empty --prompt: say what the person should decide",
    empty_choice: "empty --choice",
    duplicate_choice: "duplicate --choice",
    choice_not_offered: "choice {choice!r} was not offered; choose one of: {choices}",
    session: 'session "{name}"',
    tenant_session: 'session "{name}" of tenant "{tenant}"',
    user_memory: 'memory of user "{user}"',
    not_found: "{what} not found; 'durable ls' lists your sessions (a tenant's sessions need --tenant ORG)",
    memory_empty: "{what} is empty; 'durable memory set' starts it",
    name_taken: "{what}: the name is taken; pick another name",
    owner_only: "only an owner of {what} can {doing}; ask an owner to do it",
    refused_archived: "{what} is archived; run 'durable session unarchive {name}' first",
    refused_cancelled_archive: "{what} is cancelled and cannot be archived; delete it with 'durable delete {name}'",
    refused_cancelled: "{what} is cancelled; send a new prompt with 'durable session prompt {name} TEXT' to reopen it",
    refused_not_archived: "{what} is not archived (it is {status})",
    cannot_prompt: "{what} is {status} and cannot take new prompts",
    cannot_next: "{what} is {status} and cannot hand out work",
    cannot_cancel: "{what} is {status} and cannot be cancelled",
    cannot_archive: "{what} is {status} and cannot be archived",
    cannot_unarchive: "{what} is {status} and cannot be unarchived",
    cannot_write: "{what} is {status} and cannot be written to",
    cannot_invite: "{what} is {status} and cannot take participants",
    cannot_any: "{what} is {status} and cannot do this",
    session_exists: "{what} already exists; pick another name or use 'durable session show {name}'",
    prompt_not_found: "prompt {id} not found in {what}; see 'durable session queue {name}'",
    prompt_request_id_reused: "request id {request_id!r} was already used with other content in {what}",
    queue_full: "the queue of {what} is full ({unfinished} unfinished prompts, queue.max_unfinished = {limit}); wait for room with --wait DUR, dequeue one, or raise the cap with 'durable config set queue.max_unfinished N'",
    schedule_not_found: "no schedule {id} in {what}; see 'durable session schedules {name}'",
    unschedule_denied: "only the author of schedule {id} or an owner of {what} can unschedule it",
    reserved_request_id: "--request-id {request_id!r}: ids starting with 'schedule:' are reserved for the prompts schedules queue",
    invalid_on_lease_expiry: "invalid queue.on_lease_expiry {value!r}: use fail or retry",
    invalid_max_attempts: "invalid queue.max_attempts {value!r}: use a positive integer",
    invalid_attempt: 'invalid --attempt {attempt!r}: use the positive start number the start gave (its "start")',
    prompt_still_processing: "prompt {id} of {what} is still processing; finish it with 'durable session finish {name} {id}' or wait with --wait",
    prompt_not_processing: "prompt {id} of {what} is {status}, not processing; it cannot be {doing}",
    prompt_lease_lost: "prompt {id} of {what} is on start {current}, not {attempt}: that start lost its lease or was handed back, so it cannot be {doing} (nothing changed)",
    finish_row_role: "line {line}: a turn's rows are assistant or tool rows, not {role}; nothing changed",
    finish_unended: "line {line}: the turn must end with a final assistant row without tool calls (or give --reply, or --failed for a partial turn); nothing changed",
    invalid_delay: "invalid --delay {delay!r}: use a duration such as 30s, or 0",
    archive_busy: "{what} has {queued} queued or processing prompts; finish, dequeue or cancel them before archiving",
    participants_tenant_only: "{what} belongs to one user; only tenant sessions (--tenant ORG) take participants",
    too_many_participants: "too many participants: {what} already has {count}, the most a session may have",
    prompt_not_pending: "prompt {id} of {what} is {status}, not pending; only pending prompts can be dequeued",
    request_not_found: "request {id} not found in {what}; see 'durable elicit list {name}'",
    ask_request_id_reused: "request id {request_id!r} was already used with another question in {what}",
    invalid_elicit_action: "invalid action {action!r}: use decline or cancel",
    request_not_pending: "request {id} of {what} is {status}, not pending; it cannot be answered",
    invalid_memory_source: "invalid --source {source!r}: use user, model or external",
    model_fact_confirmed: "a model fact cannot be confirmed when it is written; a person confirms it with 'durable memory confirm KEY'",
    empty_value: "empty VALUE",
    fact_not_found: "no fact {key!r}; 'durable memory list --all' shows every fact",
    fact_unconfirmed: "fact {key!r} is unconfirmed; 'durable memory confirm {key}' confirms it, or 'durable memory get {key} --all' shows it",
    fact_expired: "fact {key!r} has expired; 'durable memory get {key} --all' still shows it",
    fact_expired_confirm: "fact {key!r} has expired and can no longer be confirmed; 'durable memory set {key} VALUE' stores it anew",
    invalid_rate: "invalid --rate {rate!r}: use N/DURATION, e.g. 5/1h or 100/1d",
    invalid_burst: "--burst must be a positive integer",
    rate_limited: "rate limit {key!r} reached ({rate}); retry after {retry}s",
    fork_splits_tool_call: "row {at} of {what} would separate a tool call from its results; fork at the last result instead",
    fork_exists: "{what} already exists; pick another name for the fork",
    window_negative: "--tokens and --limit must be non-negative",
    empty_text: "empty {what}: give TEXT, or - to read it from stdin",
    text_too_large: "{what} is {size} bytes, over the limit of {limit} (transcript.max_turn_bytes); nothing was stored",
    tool_calls_not_array: 'tool calls must be a JSON array of {"id", "name", "arguments"}',
    tool_call_not_object: "tool call {n} is not a JSON object",
    tool_call_unknown_keys: "tool call {n} has unknown keys {keys}: use id, name and arguments",
    tool_call_needs: "tool call {n} needs a non-empty string {key!r}",
    tool_call_arguments: "tool call {n}: 'arguments' must be a string (the model's JSON text)",
    tool_call_id_twice: "tool call id {id!r} appears twice in one row",
    meta_not_object: "meta must be a JSON object",
    meta_model: "meta.model must be a string",
    meta_usage: "meta.usage must be an object with input_tokens and output_tokens",
    meta_usage_count: "meta.usage.{key} must be an integer from 0 to 10^12",
    meta_cost: "meta.cost_usd must be a finite number from 0 to 10^9",
    meta_times_both: "meta.started_at and meta.ended_at go together: give both or neither",
    meta_time: "meta.{key} must be an RFC 3339 time with a zone, e.g. 2026-12-05T10:00:03.120Z",
    meta_times_order: "meta.ended_at must not be before meta.started_at",
    invalid_row_role: "invalid role {role!r}: use one of {roles}",
    content_not_string: "content must be a string",
    tool_calls_not_assistant: "tool calls belong on assistant rows, not {role} rows",
    tool_row_call_id: "a tool row needs the id of the call it answers (--call-id ID)",
    tool_row_name: "the tool's name must be a non-empty string",
    call_id_not_tool: "a call id belongs on tool rows only, not {role} rows",
    name_not_tool: "a tool name belongs on tool rows only, not {role} rows",
    empty_content: "empty content: give TEXT (only an assistant row with tool calls, or a row with data, may be empty)",
    row_tokens: "tokens must be an integer from 0 to {max}",
    row_too_large: "the row is {size} bytes, over the limit of {limit} (transcript.max_turn_bytes); nothing was stored",
    json_too_deep: "{what} is nested deeper than {max} levels; nothing was stored",
    not_json: "{what} is not valid JSON ({why})",
    json_duplicate_key: "the key {key!r} appears twice in one object",
    json_nested: "nested deeper than {max} levels",
    json_overflow: "the number {number} overflows a double",
    no_rows: "no rows to append; nothing was stored",
    append_request_id_reused: "request id {request_id!r} was already used with another request in {what}",
    pop_count: "--count must be at least 1",
    pop_empty: "the transcript of {what} has no live row to pop",
    row_not_found: "row {seq} not found in {what}; see 'durable transcript show {name} --all'",
    langgraph_owned: "{what} is a LangGraph thread kept by DurableSaver; its checkpoints hold the same text, so it cannot {doing}: delete the thread (saver.delete_thread) or 'durable delete {name}'",
    last_with_all: "--last lists live rows; it does not go with --all",
    last_negative: "--last must be a non-negative integer",
    not_live_row: "row {seq} of {what} is not a live row; see 'durable transcript show {name}'",
    summary_pinned: "nothing to summarize through row {through} of {what}: it is a pinned turn",
    summary_splits_tool_call: "row {through} of {what} would separate a tool call from its results; summarize through the last result instead",
    summary_changed: "the transcript of {what} changed while summarizing; run it again",
    compact_negative: "--max-tokens and --keep-tokens must be non-negative",
    compact_keep: "--max-tokens must be at least --keep-tokens",
    stored_last_negative: "last must be a non-negative integer",
    owned_label: '{what} of user "{user}"',
    import_others: "{what} belongs to another user; only they can import it (or an installation restore with --all-users)",
    import_not_listed: "{label} does not list you ({actor!r}) as an owner; import it as one of its owners (or an installation restore with --all-users)",
    import_name_taken: "{label}: the name is taken",
    import_owner_only: "{label}: only an owner of it can import over it; ask an owner",
    import_exists: "{label} already exists with other content; use --replace to overwrite it",
    import_takes_session: "{label} does not list you ({actor!r}) as an owner; importing it would take the session from you",
    already_imported_changed: "already imported; it has changed since (--replace imports it again)",
    empty_search: 'empty search query: give words, "a phrase" or prefix*',
    search_no_word: 'search query {query!r} holds no word: give words, "a phrase" or prefix*',
    invalid_search_query: 'invalid --fts query {query!r} ({why}); see SQLite FTS5 query syntax (words, "phrases", prefix*, AND, OR, NOT), or leave out --fts to search plain text',
    invalid_search_role: "invalid --role {role!r}: use one of {roles}",
    limit_negative: "--limit must be a non-negative integer",
    search_session_not_found: `session "{session}" not found; 'durable ls --all' lists your sessions`,
    thread_deleted: "LangGraph thread {thread!r} was deleted; a write from before the delete is refused (start the thread again without a checkpoint id)",
    keep_checkpoints: "keep_checkpoints must be a positive integer",
    record_not_string: "must be a string, not {kind}",
    record_surrogate: "is not valid UTF-8 (lone surrogate)",
    record_empty: "must not be empty",
    record_name: "{value!r} is not a valid name (1-200 printable characters, no leading or trailing white space)",
    record_not_integer: "must be an integer, not {kind}",
    record_negative: "must be a non-negative integer",
    record_not_positive: "must be a positive integer",
    record_time: "must be a time in milliseconds since 1970 (an integer from 0 to {max}), not {value!r}",
    record_ttl: "is over 36,500 days",
    record_tag_value: "is not a tag VALUE: 1-256 printable characters with no blank at either end",
    record_too_many_tags: "holds more than {limit} tags (tags.max is at most {limit})",
    record_title: "must be 1-200 printable characters with no leading or trailing white space",
    record_request_id: "must be 1-128 printable characters",
    record_hex_id: "must be 64 lowercase hex digits",
    record_flag: "must be 0 or 1",
    record_number: "must be a non-negative number",
    record_not_json: "must be JSON text",
    record_not_rfc_json: "must be RFC 8259 JSON text ({why})",
    record_json_object: "must be the JSON text of an object",
    record_choices: "must be the JSON text of an array of non-empty strings",
    record_duplicate_choice: "holds a duplicate choice",
    record_one: "must be 1",
    record_blob: "must be base64 text (the stored bytes)",
    record_enum: "{value!r} is not one of {values}",
    record_not_valid: "is not valid: {why}",
    record_no_tool_call: "must hold at least one tool call (null means none)",
    record_invalid: "{where} {why}; nothing of this record was imported",
    record_unknown_field: "is not a field of the export format",
    record_missing: "is missing",
    record_reserved_name: "must be empty for a reserved (memory) record",
    record_not_object: "must be an object",
    record_ttl_expiry: "must be set exactly when ttl_seconds is",
    record_reserved_title: "must be null for a reserved (memory) record",
    record_not_array: "must be an array",
    record_twice: "{value!r} appears twice",
    record_repeats_key: "repeats the key ({columns}) = {value}",
    record_unknown_column: "is not a column of this table in this export version",
    record_too_large: "is {size} bytes, over the limit of {limit} (transcript.max_turn_bytes)",
    record_user_participants: "of a user-scoped record must be exactly its owner {owner!r} as owner",
    record_tenant_owner: "of a tenant record must include an owner",
    record_reserved_empty: "must be empty in a reserved (memory) record",
    record_reserved_only: "only a reserved (memory) record holds them",
    record_adapter_only: "only an object made by the {adapter} adapter holds them (object.adapter)",
    record_covers: "and covers_last of a summary must cover earlier rows (first <= last < seq)",
    record_covers_null: "must be null on a turn that is not a summary",
    record_call_id_tool: "is only allowed on a tool row",
    record_superseded_by: "{by} is not a later summary row of this record",
    record_answer: "{answer!r} is not one of the request's choices",
    record_answer_null: "must be null on a {status} request",
    record_no_sequence: "is not a table with a sequence",
    record_below_key: "{value} is below the table's highest key {top}"
  },
  constants_about: "Names and numbers both runtimes hold (docs/reference/concepts.md \xA72, \xA75, \xA76, \xA77): durable_cli/contract/vocabulary.py and config.py equal them (tests/test_contract.py), the Worker imports them; tests/test_contract.py greps both trees for literal copies.",
  constants: {
    row_roles: ["system", "developer", "user", "assistant", "tool"],
    pinned_roles: ["system", "developer"],
    participant_roles: ["owner", "member"],
    usage_keys: ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"],
    row_input_keys: ["role", "content", "tool_calls", "call_id", "name", "meta", "data", "tokens"],
    row_output_keys: ["seq", "author", "created_at", "kind", "superseded_by", "covers", "forked_from"],
    limits: { name: 200, title: 200, request_id: 128, row_tokens: 1e9, duration_seconds: 31536e5, participants: 1e3, tag_key: 64, tag_value: 256, tags: 32 },
    webhooks: { delays: [5, 300, 1800, 7200, 18e3, 36e3, 36e3], claim_floor_seconds: 10, attempt_timeout_seconds: 5, alarm_deliveries: 10, list_page: 200 },
    config_defaults: {
      "defaults.lock_timeout": "10s",
      "transcript.token_budget": 4e3,
      "transcript.tokenizer": "approx",
      "transcript.max_turn_bytes": 2097152,
      "queue.max_unfinished": 10,
      "queue.lease": "2h",
      "queue.on_lease_expiry": "fail",
      "queue.max_attempts": 3,
      "retention.draft_expiry": "8h",
      "retention.ephemeral_ttl": "24h",
      "remote.timeout": "10s",
      "tags.max": 32
    }
  },
  ops_about: "Every operation of POST /v1/call by scope (object: one object's Durable Object; index: the commands across objects; auth: token revocation; objects: search; none: what the Worker answers of itself, the acting user and its limits). write: a request id is remembered and the call retried only with it; parts: the lists of its arguments a body over the Worker's DURABLE_MAX_BODY_BYTES is split along (the client sends it in parts with a `part` argument, worker/src/parts.ts); creates: may make the object; erases: deletes storage. Each argument: JSON type (integer, string, boolean, array, object, enum, json), range (min/max; max_items for arrays), required; absent or null means the default. The Worker checks every call against it before running the op (worker/src/generated/ops.ts, rules/args.ts): a crafted body is HTTP 400. rule (object ops): where the op's rule lives, module.function of durable_cli/core/ (library.Session's method of the op's name, its module imported on first use) and its twin in worker/src/rules/module.ts, the same function in camelCase (the Worker's handler): scripts/gen_worker_ops.py writes both tables from it. worker: a function of worker/src/rules/ only (the file backend composes that op in library.Store from core functions of its own). Neither: the Durable Object answers the op itself (worker/src/object.ts). check (an op's, or an argument's): the client check of durable_cli/checks.py the library runs first, on either backend (an op's gets all its arguments, before theirs) (exit 2 with that check's message); the Worker checks again with its own rules. plain: the library's method of the op takes exactly the contract's arguments (positional first) and both backends run it through one dispatcher (durable_cli/seam.py).",
  ops: {
    object: {
      create: { rule: "sessions.create", write: true, creates: true, erases: false, plain: true, args: { title: { type: "string", default: null, check: "title" }, ttl_seconds: { type: "integer", min: 1, max: 31536e5, default: null }, tags: { type: "object", default: null, check: "tag_set" } } },
      show: { rule: "sessions.show", write: false, creates: false, erases: false, plain: true, args: {} },
      prompt: { rule: "sessions.prompt", write: true, creates: true, erases: false, plain: true, positional: ["content"], args: { content: { type: "string", required: true }, source: { type: "string", default: null }, request_id: { type: "string", default: null, check: "request_id" }, created: { type: "boolean", default: false }, waiting: { type: "boolean", default: false } } },
      schedule: { rule: "schedules.create", write: true, creates: true, erases: false, plain: true, positional: ["content"], args: { content: { type: "string", required: true }, source: { type: "string", default: null }, request_id: { type: "string", default: null, check: "request_id" }, at: { type: "string", default: null }, after: { type: "string", default: null }, every: { type: "string", default: null }, cron: { type: "string", default: null }, tz: { type: "string", default: null }, created: { type: "boolean", default: false } } },
      schedules: { rule: "schedules.schedules", write: false, creates: false, erases: false, plain: true, args: {} },
      unschedule: { rule: "schedules.unschedule", write: true, creates: false, erases: false, plain: true, positional: ["schedule_id"], args: { schedule_id: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true } } },
      hook: { rule: "hooks.create", write: true, creates: false, erases: false, plain: true, positional: ["url"], args: { url: { type: "string", required: true }, events: { type: "string", default: null }, include_reply: { type: "boolean", default: false }, secret: { type: "string", default: null } } },
      hooks: { rule: "hooks.hooks", write: false, creates: false, erases: false, plain: true, args: {} },
      unhook: { rule: "hooks.unhook", write: true, creates: false, erases: false, plain: true, positional: ["hook_id"], args: { hook_id: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true } } },
      deliveries: { rule: "hooks.deliveries", write: false, creates: false, erases: false, plain: true, args: { hook_id: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, default: null }, status: { type: "string", default: null }, after: { type: "integer", min: 0, max: 9223372036854776e3, default: null } } },
      next_prompt: { rule: "sessions.next_prompt", write: true, creates: false, erases: false, args: { lease_seconds: { type: "integer", min: 1, max: 31536e5, required: true }, waiting: { type: "boolean" }, context: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 }, on_expiry: { type: "string" }, max_attempts: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 } } },
      renew: { rule: "sessions.renew", write: true, creates: false, erases: false, plain: true, positional: ["prompt_id"], args: { prompt_id: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true }, lease_seconds: { type: "integer", min: 1, max: 31536e5, required: true }, attempt: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, default: null, check: "attempt" } } },
      finish: { rule: "sessions.finish", write: true, creates: false, erases: false, parts: ["rows"], args: { prompt_id: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true }, reply: { type: "string" }, rows: { type: "array", items: { type: "object" } }, failed: { type: "boolean" }, error: { type: "string" }, attempt: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, check: "attempt" }, part: { type: "object" } } },
      release: { rule: "sessions.release", write: true, creates: false, erases: false, plain: true, positional: ["prompt_id"], args: { prompt_id: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true }, delay_seconds: { type: "integer", min: 0, max: 31536e5, default: 0 }, not_an_attempt: { type: "boolean", default: false }, attempt: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, default: null, check: "attempt" } } },
      stop: { rule: "sessions.stop", write: true, creates: false, erases: false, plain: true, args: {} },
      cancel: { rule: "sessions.cancel", write: true, creates: false, erases: false, plain: true, args: {} },
      archive: { rule: "sessions.archive", write: true, creates: false, erases: false, plain: true, args: {} },
      unarchive: { rule: "sessions.unarchive", write: true, creates: false, erases: false, plain: true, args: {} },
      set_title: { rule: "sessions.set_title", write: true, creates: false, erases: false, plain: true, positional: ["title"], args: { title: { type: "string", required: true, check: "title" } } },
      tag: { rule: "tags.tag", write: true, creates: false, erases: false, plain: true, check: "tag_change", args: { set: { type: "object", default: null }, untag: { type: "array", items: { type: "string" }, default: null } } },
      tags: { rule: "tags.tags", write: false, creates: false, erases: false, plain: true, args: {} },
      invite: { rule: "sessions.invite", write: true, creates: false, erases: false, plain: true, positional: ["user", "role"], args: { user: { type: "string", required: true, check: "user" }, role: { type: "enum", values: ["owner", "member"], default: "member", check: "participant_role" } } },
      dequeue: { rule: "sessions.dequeue", write: true, creates: false, erases: false, plain: true, positional: ["prompt_id"], args: { prompt_id: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true } } },
      queue: { rule: "sessions.queue", write: false, creates: false, erases: false, plain: true, args: { pending_only: { type: "boolean", default: false } } },
      events: { rule: "sessions.events", write: false, creates: false, erases: false, plain: true, args: { since: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, default: 0 } } },
      session_page: { rule: "sessions.session_page", write: false, creates: false, erases: false, plain: true, args: { events_before: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, default: null } } },
      rows_before: { rule: "transcript.rows_before", write: false, creates: false, erases: false, plain: true, args: { before: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, default: null }, superseded: { type: "boolean", default: false }, limit: { type: "integer", min: 1, max: 200, default: 200 } } },
      participants: { rule: "sessions.participants", write: false, creates: false, erases: false, plain: true, args: {} },
      get_prompt: { rule: "sessions.get_prompt", write: false, creates: false, erases: false, plain: true, positional: ["prompt_id"], args: { prompt_id: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true } } },
      append_many: { rule: "transcript.append_many", write: true, creates: true, erases: false, parts: ["rows"], args: { rows: { type: "array", items: { type: "object" }, required: true }, request_id: { type: "string", check: "request_id" }, create: { type: "boolean" }, one: { type: "boolean" }, seqs_only: { type: "boolean" }, origin: { type: "array", items: { type: "string" }, max_items: 2 }, part: { type: "object" } } },
      show_transcript: { rule: "transcript.show", write: false, creates: false, erases: false, args: { all_rows: { type: "boolean" }, since: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 }, last: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 }, cursor: { type: "json" } } },
      follow_start: { rule: "transcript.follow_start", write: false, creates: false, erases: false, args: { all_rows: { type: "boolean" }, since: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 }, last: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 } } },
      rows_after: { rule: "transcript.rows_after", write: false, creates: false, erases: false, args: { seq: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true } } },
      stored_rows: { rule: "transcript.stored_rows", write: false, creates: false, erases: false, args: { last: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 }, cursor: { type: "json" } } },
      context_window: { rule: "transcript.context_window", write: false, creates: false, erases: false, plain: true, args: { budget: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, default: null }, limit: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, default: null }, keep: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, default: null } } },
      pop: { rule: "transcript.pop", write: true, creates: false, erases: false, plain: true, positional: ["count"], args: { count: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, default: 1 } } },
      clear: { rule: "transcript.clear", write: true, creates: false, erases: false, plain: true, args: {} },
      redact: { rule: "transcript.redact", write: true, creates: false, erases: false, plain: true, positional: ["seq"], args: { seq: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true } } },
      prune: { rule: "transcript.prune", write: true, creates: false, erases: false, plain: true, args: { older_than: { type: "integer", min: 1, max: 31536e5, required: true }, dry_run: { type: "boolean", default: false } } },
      replace_tail: { rule: "transcript.replace_tail", write: true, creates: false, erases: false, parts: ["rows"], args: { expected: { type: "array", items: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 }, required: true }, rows: { type: "array", items: { type: "object" }, required: true }, origin: { type: "array", items: { type: "string" }, max_items: 2 }, part: { type: "object" } } },
      summarize: { rule: "transcript.summarize", write: true, creates: false, erases: false, args: { through: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true }, text: { type: "string", required: true } } },
      compact: { rule: "transcript.compact", write: true, creates: false, erases: false, args: { max_tokens: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true }, keep_tokens: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true }, text: { type: "string", required: true } } },
      plan_summary: { worker: "transcript.planSummary", write: false, creates: false, erases: false, args: { through: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true } } },
      plan_compact: { worker: "transcript.planCompact", write: false, creates: false, erases: false, args: { max_tokens: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true }, keep_tokens: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true } } },
      plan_rows: { worker: "transcript.planRows", write: false, creates: false, erases: false, args: { seqs: { type: "array", items: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 }, max_items: 1e3, required: true } } },
      commit_summary: { worker: "transcript.commitSummary", write: true, creates: false, erases: false, parts: ["covered"], args: { covered: { type: "array", items: { type: "array" }, required: true }, high: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true }, text: { type: "string", required: true }, part: { type: "object" } } },
      fork_plan: { worker: "fork.forkPlan", write: false, creates: false, erases: false, args: { at: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 }, cursor: { type: "json" } } },
      fork_create: { worker: "fork.forkCreate", write: true, creates: true, erases: false, parts: ["rows"], args: { source: { type: "object", required: true }, rows: { type: "array", required: true }, title: { type: "string" }, part: { type: "object" } } },
      delete: { worker: "retention.remove", write: true, creates: false, erases: true, args: {} },
      ask: { rule: "elicit.ask", write: true, creates: false, erases: false, plain: true, positional: ["prompt"], args: { prompt: { type: "string", required: true, check: "prompt_text" }, choices: { type: "array", items: { type: "string" }, max_items: 1e3, default: [], check: "choices" }, timeout_seconds: { type: "integer", min: 1, max: 31536e5, default: null }, request_id: { type: "string", default: null, check: "request_id" }, call_id: { type: "string", default: null }, args: { type: "json", default: null }, approve: { type: "array", items: { type: "string" }, max_items: 1e3, default: null }, approvers: { type: "array", items: { type: "string" }, max_items: 1e3, default: null } } },
      decline: { rule: "elicit.decline", write: true, creates: false, erases: false, plain: true, positional: ["request_id", "action"], args: { request_id: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true }, action: { type: "string", required: true }, choice: { type: "string", default: null } } },
      requests: { rule: "elicit.list_requests", write: false, creates: false, erases: false, plain: true, args: { pending_only: { type: "boolean", default: false } } },
      request: { rule: "elicit.get", write: false, creates: false, erases: false, plain: true, positional: ["request_id"], args: { request_id: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true } } },
      step_begin: { rule: "steps.begin", write: true, creates: false, erases: false, plain: true, args: { key: { type: "string", required: true }, token: { type: "string", required: true }, prompt_id: { type: "integer", min: 1, max: 9223372036854776e3, default: null }, attempt: { type: "integer", min: 1, max: 9223372036854776e3, default: null }, call_id: { type: "string", default: null }, args_sha256: { type: "string", default: null }, approval: { type: "integer", min: 1, max: 9223372036854776e3, default: null }, inside: { type: "string", default: null } } },
      step_renew: { rule: "steps.renew", write: true, creates: false, erases: false, plain: true, args: { prompt_id: { type: "integer", min: 1, max: 9223372036854776e3, required: true }, key: { type: "string", required: true }, token: { type: "string", required: true }, start: { type: "integer", min: 1, max: 9223372036854776e3, required: true } } },
      step_commit: { rule: "steps.commit", write: true, creates: false, erases: false, plain: true, args: { prompt_id: { type: "integer", min: 1, max: 9223372036854776e3, required: true }, key: { type: "string", required: true }, token: { type: "string", required: true }, start: { type: "integer", min: 1, max: 9223372036854776e3, required: true }, exit_status: { type: "integer", min: 0, max: 255, required: true }, stdout_bytes: { type: "integer", min: 0, max: 9223372036854776e3, required: true }, stdout: { type: "string", default: null }, output_too_large: { type: "boolean", default: false } } },
      step_abandon: { rule: "steps.abandon", write: true, creates: false, erases: false, plain: true, args: { prompt_id: { type: "integer", min: 1, max: 9223372036854776e3, required: true }, key: { type: "string", required: true }, token: { type: "string", required: true } } },
      steps: { rule: "steps.listing", write: false, creates: false, erases: false, plain: true, args: { prompt_id: { type: "integer", min: 1, max: 9223372036854776e3, default: null }, cursor: { type: "array", items: { type: "integer", min: 0, max: 9223372036854776e3 }, max_items: 2, default: null } } },
      step_report: { rule: "steps.of_start", write: false, creates: false, erases: false, plain: true, args: { prompt_id: { type: "integer", min: 1, max: 9223372036854776e3, required: true }, start: { type: "integer", min: 1, max: 9223372036854776e3, required: true } } },
      step_live: { rule: "steps.still_live", write: false, creates: false, erases: false, plain: true, args: { prompt_id: { type: "integer", min: 1, max: 9223372036854776e3, required: true }, key: { type: "string", required: true } } },
      answer: { rule: "elicit.answer", write: true, creates: false, erases: false, plain: true, positional: ["request_id", "choice"], args: { request_id: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true }, choice: { type: "string", required: true }, comment: { type: "string", default: null } } },
      set_fact: { rule: "memory.set_fact", write: true, creates: true, erases: false, plain: true, positional: ["key", "value"], check: "fact", args: { key: { type: "string", required: true }, value: { type: "string", required: true }, source: { type: "enum", values: ["user", "model", "external"], default: "user" }, confirmed: { type: "boolean", default: false }, expires_seconds: { type: "integer", min: 1, max: 31536e5, default: null } } },
      get_fact: { rule: "memory.get_fact", write: false, creates: false, erases: false, plain: true, positional: ["key"], args: { key: { type: "string", required: true }, all_facts: { type: "boolean", default: false } } },
      facts: { rule: "memory.list_facts", write: false, creates: false, erases: false, plain: true, args: { all_facts: { type: "boolean", default: false } } },
      confirm_fact: { rule: "memory.confirm", write: true, creates: false, erases: false, plain: true, positional: ["key"], args: { key: { type: "string", required: true } } },
      forget_fact: { rule: "memory.forget_fact", write: true, creates: false, erases: false, plain: true, positional: ["key"], args: { key: { type: "string", required: true } } },
      hit: { rule: "limits.hit", write: true, creates: true, erases: false, args: { key: { type: "string", required: true }, rate: { type: "string", required: true }, n: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true }, per: { type: "integer", min: 1, max: 31536e5, required: true }, burst: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 } } },
      ttl: { rule: "retention.ttl", write: true, creates: false, erases: false, args: { seconds: { type: "integer", min: 1, max: 31536e5 }, clear: { type: "boolean" } } },
      export: { worker: "rights.exportObject", write: false, creates: false, erases: false, args: { cursor: { type: "json" } } },
      import: { worker: "rights.importObject", write: true, creates: true, erases: false, parts: ["record.*"], args: { record: { type: "object", required: true }, replace: { type: "boolean" }, keep_existing: { type: "boolean" }, part: { type: "object" } } },
      search_object: { worker: "rights.searchObject", write: false, creates: false, erases: false, args: { query: { type: "string", required: true }, fts: { type: "boolean" }, role: { type: "string" }, cutoff: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 }, superseded: { type: "boolean" }, limit: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true } } },
      meta: { write: false, creates: false, erases: false, args: {} },
      tombstone: { write: false, creates: false, erases: false, args: {} },
      object_id: { rule: "state.object_id", write: false, creates: false, erases: false, plain: true, args: {} },
      put_checkpoint: { rule: "checkpoints.put_checkpoint", write: true, creates: true, erases: false, parts: ["mirror"], args: { external_id: { type: "string" }, ns: { type: "string" }, checkpoint_id: { type: "string", required: true }, parent_id: { type: "string" }, type: { type: "string" }, blob: { type: "string" }, metadata: { type: "json" }, mirror: { type: "array", items: { type: "array" } }, keep: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 }, part: { type: "object" } } },
      put_checkpoint_writes: { rule: "checkpoints.put_writes", write: true, creates: true, erases: false, parts: ["writes"], args: { external_id: { type: "string" }, ns: { type: "string" }, checkpoint_id: { type: "string", required: true }, writes: { type: "array", items: { type: "array" }, required: true }, replace: { type: "boolean" }, part: { type: "object" } } },
      checkpoint_rows: { rule: "checkpoints.checkpoint_rows", write: false, creates: false, erases: false, args: { ns: { type: "string" }, checkpoint_id: { type: "string" }, before: { type: "string" }, owned: { type: "boolean" }, with_writes: { type: "boolean" }, limit: { type: "integer", min: 1, max: 9223372036854776e3 }, page: { type: "array", items: { type: "string" }, max_items: 2 } } },
      checkpoint_writes: { rule: "checkpoints.write_rows", write: false, creates: false, erases: false, args: { ns: { type: "string" }, checkpoint_id: { type: "string", required: true } } },
      delete_thread: { rule: "checkpoints.delete_thread", write: true, creates: false, erases: true, plain: true, args: {} }
    },
    index: {
      ls: { write: false, creates: false, erases: false, args: { user: { type: "string" }, statuses: { type: "array", items: { type: "enum", values: ["created", "active", "completed", "failed", "cancelled", "archived"] }, max_items: 6 }, all_objects: { type: "boolean" }, older_than: { type: "integer", min: 1, max: 31536e5 }, limit: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 }, before: { type: "json" }, tags: { type: "array", items: { type: "array" }, max_items: 100 } } },
      rows: { write: false, creates: false, erases: false, args: { user: { type: "string" }, all: { type: "boolean" }, reserved: { type: "boolean" }, expired: { type: "boolean" }, limit: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 }, before: { type: "json" } } },
      pending: { write: false, creates: false, erases: false, args: { limit: { type: "integer", min: 1, max: 100 } } },
      usage: { write: false, creates: false, erases: false, args: { user: { type: "string" }, everyone: { type: "boolean" }, session: { type: "string" }, newer_day: { type: "string" }, by: { type: "enum", values: ["session", "day", "model", "day_model"] }, cursor: { type: "json" }, tags: { type: "array", items: { type: "array" }, max_items: 100 } } },
      purge: { write: true, creates: false, erases: true, args: { older_than: { type: "integer", min: 1, max: 31536e5, required: true }, user: { type: "string" }, statuses: { type: "array", items: { type: "enum", values: ["created", "active", "completed", "failed", "cancelled", "archived"] }, max_items: 6 }, dry_run: { type: "boolean" }, cursor: { type: "json" } } },
      sweep: { write: true, creates: false, erases: true, args: { draft_expiry: { type: "integer", min: 1, max: 31536e5 }, cursor: { type: "json" } } },
      forget: { write: true, creates: false, erases: true, args: { user: { type: "string", required: true }, dry_run: { type: "boolean" }, cursor: { type: "json" } } },
      reindex: { write: true, creates: false, erases: false, args: { step: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 }, after: { type: "string" }, shard: { type: "string" }, shard_after: { type: "string" } } },
      fault: { write: true, creates: false, erases: false, args: { shard: { type: "string", required: true }, refuse: { type: "boolean" }, wipe: { type: "boolean" }, stale_seconds: { type: "integer", min: 0, max: 86400 } } },
      seed: { write: true, creates: false, erases: false, args: { users: { type: "integer", min: 0, max: 1e6, required: true }, prefix: { type: "string" }, usage: { type: "boolean" } } },
      subrequests: { write: false, creates: false, erases: false, args: {} },
      served: { write: false, creates: false, erases: false, args: {} },
      census: { write: false, creates: false, erases: false, args: { shards: { type: "array", items: { type: "string" }, max_items: 256, required: true } } }
    },
    auth: {
      revoke: { write: true, creates: false, erases: false, args: { jti: { type: "string" }, user: { type: "string" }, issued_before: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 } } }
    },
    objects: {
      search: { write: false, creates: false, erases: false, args: { query: { type: "string", required: true }, fts: { type: "boolean" }, user: { type: "string" }, session: { type: "string" }, role: { type: "string" }, cutoff: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3 }, superseded: { type: "boolean" }, limit: { type: "integer", min: -9223372036854776e3, max: 9223372036854776e3, required: true }, tenant: { type: "string" } } }
    },
    none: {
      whoami: { write: false, creates: false, erases: false, args: {} },
      limits: { write: false, creates: false, erases: false, args: {} }
    }
  },
  errors: {
    internal: { exit: 1, http: 500 },
    invalid_input: { exit: 2, http: 400 },
    not_found: { exit: 3, http: 404 },
    conflict: { exit: 4, http: 409 },
    permission_denied: { exit: 5, http: 403 },
    busy: { exit: 6, http: 503 },
    storage: { exit: 7, http: 507 },
    misconfigured: {
      exit: 7,
      http: 500
    },
    outcome_unknown: { exit: 7, http: null },
    rate_limited: { exit: 8, http: 429 },
    timeout: { exit: 9, http: 408 },
    not_approved: { exit: 10, http: 409 },
    refused: { exit: 11, http: 409 }
  },
  shapes: {
    session: ["name", "id", "scope", "owner", "title", "status", "created_at", "updated_at", "last_active_at", "participants", "queue", "turns", "tokens", "expires_at", "tags", "schedules", "hooks"],
    prompt: ["id", "status", "content", "author", "source", "request_id", "turn_seq", "position", "attempts", "start", "schedule_id", "created_at", "started_at", "lease_expires_at", "completed_at", "error"],
    schedule: ["id", "kind", "content", "source", "author", "at", "every", "cron", "tz", "next_at", "last_fired_at", "last_prompt_id", "fired", "missed", "request_id", "created_at"],
    hook: ["id", "url", "events", "include_reply", "secret", "author", "created_at"],
    delivery: ["id", "hook_id", "webhook_id", "type", "prompt_id", "status", "attempts", "created_at", "last_attempt_at", "next_attempt_at", "delivered_at", "last_response", "last_error"],
    event: ["seq", "type", "actor", "data", "at"],
    participant: ["user", "role", "joined_at"],
    row: ["seq", "role", "content", "tool_calls", "call_id", "name", "meta", "data", "forked_from", "tokens", "author", "created_at", "kind", "superseded_by", "covers"],
    window: ["turns", "tokens", "budget"],
    request: ["id", "status", "prompt", "choices", "created_at", "expires_at", "answer", "comment", "answered_by", "answered_at", "approvers", "call_id", "args", "args_sha256", "approve", "approved"],
    fact: ["key", "value", "source", "confirmed", "created_at", "confirmed_at", "expires_at"],
    limit: ["key", "allowed", "remaining", "retry_after"],
    ttl: ["name", "ttl_seconds", "expires_at"]
  }
};

// ../durable_cli/contract/unicode.json
var unicode_default = {
  about: "Generated by scripts/gen_unicode.py from Python 3.11 (str.isprintable, str.isspace): the one table of printable code points and white space both runtimes use (docs/reference/concepts.md \xA72 names, titles, request ids, users; strip; the approx token estimator's words).",
  unicode_version: "14.0.0",
  white_space: [9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 133, 160, 5760, 8192, 8193, 8194, 8195, 8196, 8197, 8198, 8199, 8200, 8201, 8202, 8232, 8233, 8239, 8287, 12288],
  printable: [
    32,
    126,
    161,
    172,
    174,
    887,
    890,
    895,
    900,
    906,
    908,
    908,
    910,
    929,
    931,
    1327,
    1329,
    1366,
    1369,
    1418,
    1421,
    1423,
    1425,
    1479,
    1488,
    1514,
    1519,
    1524,
    1542,
    1563,
    1565,
    1756,
    1758,
    1805,
    1808,
    1866,
    1869,
    1969,
    1984,
    2042,
    2045,
    2093,
    2096,
    2110,
    2112,
    2139,
    2142,
    2142,
    2144,
    2154,
    2160,
    2190,
    2200,
    2273,
    2275,
    2435,
    2437,
    2444,
    2447,
    2448,
    2451,
    2472,
    2474,
    2480,
    2482,
    2482,
    2486,
    2489,
    2492,
    2500,
    2503,
    2504,
    2507,
    2510,
    2519,
    2519,
    2524,
    2525,
    2527,
    2531,
    2534,
    2558,
    2561,
    2563,
    2565,
    2570,
    2575,
    2576,
    2579,
    2600,
    2602,
    2608,
    2610,
    2611,
    2613,
    2614,
    2616,
    2617,
    2620,
    2620,
    2622,
    2626,
    2631,
    2632,
    2635,
    2637,
    2641,
    2641,
    2649,
    2652,
    2654,
    2654,
    2662,
    2678,
    2689,
    2691,
    2693,
    2701,
    2703,
    2705,
    2707,
    2728,
    2730,
    2736,
    2738,
    2739,
    2741,
    2745,
    2748,
    2757,
    2759,
    2761,
    2763,
    2765,
    2768,
    2768,
    2784,
    2787,
    2790,
    2801,
    2809,
    2815,
    2817,
    2819,
    2821,
    2828,
    2831,
    2832,
    2835,
    2856,
    2858,
    2864,
    2866,
    2867,
    2869,
    2873,
    2876,
    2884,
    2887,
    2888,
    2891,
    2893,
    2901,
    2903,
    2908,
    2909,
    2911,
    2915,
    2918,
    2935,
    2946,
    2947,
    2949,
    2954,
    2958,
    2960,
    2962,
    2965,
    2969,
    2970,
    2972,
    2972,
    2974,
    2975,
    2979,
    2980,
    2984,
    2986,
    2990,
    3001,
    3006,
    3010,
    3014,
    3016,
    3018,
    3021,
    3024,
    3024,
    3031,
    3031,
    3046,
    3066,
    3072,
    3084,
    3086,
    3088,
    3090,
    3112,
    3114,
    3129,
    3132,
    3140,
    3142,
    3144,
    3146,
    3149,
    3157,
    3158,
    3160,
    3162,
    3165,
    3165,
    3168,
    3171,
    3174,
    3183,
    3191,
    3212,
    3214,
    3216,
    3218,
    3240,
    3242,
    3251,
    3253,
    3257,
    3260,
    3268,
    3270,
    3272,
    3274,
    3277,
    3285,
    3286,
    3293,
    3294,
    3296,
    3299,
    3302,
    3311,
    3313,
    3314,
    3328,
    3340,
    3342,
    3344,
    3346,
    3396,
    3398,
    3400,
    3402,
    3407,
    3412,
    3427,
    3430,
    3455,
    3457,
    3459,
    3461,
    3478,
    3482,
    3505,
    3507,
    3515,
    3517,
    3517,
    3520,
    3526,
    3530,
    3530,
    3535,
    3540,
    3542,
    3542,
    3544,
    3551,
    3558,
    3567,
    3570,
    3572,
    3585,
    3642,
    3647,
    3675,
    3713,
    3714,
    3716,
    3716,
    3718,
    3722,
    3724,
    3747,
    3749,
    3749,
    3751,
    3773,
    3776,
    3780,
    3782,
    3782,
    3784,
    3789,
    3792,
    3801,
    3804,
    3807,
    3840,
    3911,
    3913,
    3948,
    3953,
    3991,
    3993,
    4028,
    4030,
    4044,
    4046,
    4058,
    4096,
    4293,
    4295,
    4295,
    4301,
    4301,
    4304,
    4680,
    4682,
    4685,
    4688,
    4694,
    4696,
    4696,
    4698,
    4701,
    4704,
    4744,
    4746,
    4749,
    4752,
    4784,
    4786,
    4789,
    4792,
    4798,
    4800,
    4800,
    4802,
    4805,
    4808,
    4822,
    4824,
    4880,
    4882,
    4885,
    4888,
    4954,
    4957,
    4988,
    4992,
    5017,
    5024,
    5109,
    5112,
    5117,
    5120,
    5759,
    5761,
    5788,
    5792,
    5880,
    5888,
    5909,
    5919,
    5942,
    5952,
    5971,
    5984,
    5996,
    5998,
    6e3,
    6002,
    6003,
    6016,
    6109,
    6112,
    6121,
    6128,
    6137,
    6144,
    6157,
    6159,
    6169,
    6176,
    6264,
    6272,
    6314,
    6320,
    6389,
    6400,
    6430,
    6432,
    6443,
    6448,
    6459,
    6464,
    6464,
    6468,
    6509,
    6512,
    6516,
    6528,
    6571,
    6576,
    6601,
    6608,
    6618,
    6622,
    6683,
    6686,
    6750,
    6752,
    6780,
    6783,
    6793,
    6800,
    6809,
    6816,
    6829,
    6832,
    6862,
    6912,
    6988,
    6992,
    7038,
    7040,
    7155,
    7164,
    7223,
    7227,
    7241,
    7245,
    7304,
    7312,
    7354,
    7357,
    7367,
    7376,
    7418,
    7424,
    7957,
    7960,
    7965,
    7968,
    8005,
    8008,
    8013,
    8016,
    8023,
    8025,
    8025,
    8027,
    8027,
    8029,
    8029,
    8031,
    8061,
    8064,
    8116,
    8118,
    8132,
    8134,
    8147,
    8150,
    8155,
    8157,
    8175,
    8178,
    8180,
    8182,
    8190,
    8208,
    8231,
    8240,
    8286,
    8304,
    8305,
    8308,
    8334,
    8336,
    8348,
    8352,
    8384,
    8400,
    8432,
    8448,
    8587,
    8592,
    9254,
    9280,
    9290,
    9312,
    11123,
    11126,
    11157,
    11159,
    11507,
    11513,
    11557,
    11559,
    11559,
    11565,
    11565,
    11568,
    11623,
    11631,
    11632,
    11647,
    11670,
    11680,
    11686,
    11688,
    11694,
    11696,
    11702,
    11704,
    11710,
    11712,
    11718,
    11720,
    11726,
    11728,
    11734,
    11736,
    11742,
    11744,
    11869,
    11904,
    11929,
    11931,
    12019,
    12032,
    12245,
    12272,
    12283,
    12289,
    12351,
    12353,
    12438,
    12441,
    12543,
    12549,
    12591,
    12593,
    12686,
    12688,
    12771,
    12784,
    12830,
    12832,
    42124,
    42128,
    42182,
    42192,
    42539,
    42560,
    42743,
    42752,
    42954,
    42960,
    42961,
    42963,
    42963,
    42965,
    42969,
    42994,
    43052,
    43056,
    43065,
    43072,
    43127,
    43136,
    43205,
    43214,
    43225,
    43232,
    43347,
    43359,
    43388,
    43392,
    43469,
    43471,
    43481,
    43486,
    43518,
    43520,
    43574,
    43584,
    43597,
    43600,
    43609,
    43612,
    43714,
    43739,
    43766,
    43777,
    43782,
    43785,
    43790,
    43793,
    43798,
    43808,
    43814,
    43816,
    43822,
    43824,
    43883,
    43888,
    44013,
    44016,
    44025,
    44032,
    55203,
    55216,
    55238,
    55243,
    55291,
    63744,
    64109,
    64112,
    64217,
    64256,
    64262,
    64275,
    64279,
    64285,
    64310,
    64312,
    64316,
    64318,
    64318,
    64320,
    64321,
    64323,
    64324,
    64326,
    64450,
    64467,
    64911,
    64914,
    64967,
    64975,
    64975,
    65008,
    65049,
    65056,
    65106,
    65108,
    65126,
    65128,
    65131,
    65136,
    65140,
    65142,
    65276,
    65281,
    65470,
    65474,
    65479,
    65482,
    65487,
    65490,
    65495,
    65498,
    65500,
    65504,
    65510,
    65512,
    65518,
    65532,
    65533,
    65536,
    65547,
    65549,
    65574,
    65576,
    65594,
    65596,
    65597,
    65599,
    65613,
    65616,
    65629,
    65664,
    65786,
    65792,
    65794,
    65799,
    65843,
    65847,
    65934,
    65936,
    65948,
    65952,
    65952,
    66e3,
    66045,
    66176,
    66204,
    66208,
    66256,
    66272,
    66299,
    66304,
    66339,
    66349,
    66378,
    66384,
    66426,
    66432,
    66461,
    66463,
    66499,
    66504,
    66517,
    66560,
    66717,
    66720,
    66729,
    66736,
    66771,
    66776,
    66811,
    66816,
    66855,
    66864,
    66915,
    66927,
    66938,
    66940,
    66954,
    66956,
    66962,
    66964,
    66965,
    66967,
    66977,
    66979,
    66993,
    66995,
    67001,
    67003,
    67004,
    67072,
    67382,
    67392,
    67413,
    67424,
    67431,
    67456,
    67461,
    67463,
    67504,
    67506,
    67514,
    67584,
    67589,
    67592,
    67592,
    67594,
    67637,
    67639,
    67640,
    67644,
    67644,
    67647,
    67669,
    67671,
    67742,
    67751,
    67759,
    67808,
    67826,
    67828,
    67829,
    67835,
    67867,
    67871,
    67897,
    67903,
    67903,
    67968,
    68023,
    68028,
    68047,
    68050,
    68099,
    68101,
    68102,
    68108,
    68115,
    68117,
    68119,
    68121,
    68149,
    68152,
    68154,
    68159,
    68168,
    68176,
    68184,
    68192,
    68255,
    68288,
    68326,
    68331,
    68342,
    68352,
    68405,
    68409,
    68437,
    68440,
    68466,
    68472,
    68497,
    68505,
    68508,
    68521,
    68527,
    68608,
    68680,
    68736,
    68786,
    68800,
    68850,
    68858,
    68903,
    68912,
    68921,
    69216,
    69246,
    69248,
    69289,
    69291,
    69293,
    69296,
    69297,
    69376,
    69415,
    69424,
    69465,
    69488,
    69513,
    69552,
    69579,
    69600,
    69622,
    69632,
    69709,
    69714,
    69749,
    69759,
    69820,
    69822,
    69826,
    69840,
    69864,
    69872,
    69881,
    69888,
    69940,
    69942,
    69959,
    69968,
    70006,
    70016,
    70111,
    70113,
    70132,
    70144,
    70161,
    70163,
    70206,
    70272,
    70278,
    70280,
    70280,
    70282,
    70285,
    70287,
    70301,
    70303,
    70313,
    70320,
    70378,
    70384,
    70393,
    70400,
    70403,
    70405,
    70412,
    70415,
    70416,
    70419,
    70440,
    70442,
    70448,
    70450,
    70451,
    70453,
    70457,
    70459,
    70468,
    70471,
    70472,
    70475,
    70477,
    70480,
    70480,
    70487,
    70487,
    70493,
    70499,
    70502,
    70508,
    70512,
    70516,
    70656,
    70747,
    70749,
    70753,
    70784,
    70855,
    70864,
    70873,
    71040,
    71093,
    71096,
    71133,
    71168,
    71236,
    71248,
    71257,
    71264,
    71276,
    71296,
    71353,
    71360,
    71369,
    71424,
    71450,
    71453,
    71467,
    71472,
    71494,
    71680,
    71739,
    71840,
    71922,
    71935,
    71942,
    71945,
    71945,
    71948,
    71955,
    71957,
    71958,
    71960,
    71989,
    71991,
    71992,
    71995,
    72006,
    72016,
    72025,
    72096,
    72103,
    72106,
    72151,
    72154,
    72164,
    72192,
    72263,
    72272,
    72354,
    72368,
    72440,
    72704,
    72712,
    72714,
    72758,
    72760,
    72773,
    72784,
    72812,
    72816,
    72847,
    72850,
    72871,
    72873,
    72886,
    72960,
    72966,
    72968,
    72969,
    72971,
    73014,
    73018,
    73018,
    73020,
    73021,
    73023,
    73031,
    73040,
    73049,
    73056,
    73061,
    73063,
    73064,
    73066,
    73102,
    73104,
    73105,
    73107,
    73112,
    73120,
    73129,
    73440,
    73464,
    73648,
    73648,
    73664,
    73713,
    73727,
    74649,
    74752,
    74862,
    74864,
    74868,
    74880,
    75075,
    77712,
    77810,
    77824,
    78894,
    82944,
    83526,
    92160,
    92728,
    92736,
    92766,
    92768,
    92777,
    92782,
    92862,
    92864,
    92873,
    92880,
    92909,
    92912,
    92917,
    92928,
    92997,
    93008,
    93017,
    93019,
    93025,
    93027,
    93047,
    93053,
    93071,
    93760,
    93850,
    93952,
    94026,
    94031,
    94087,
    94095,
    94111,
    94176,
    94180,
    94192,
    94193,
    94208,
    100343,
    100352,
    101589,
    101632,
    101640,
    110576,
    110579,
    110581,
    110587,
    110589,
    110590,
    110592,
    110882,
    110928,
    110930,
    110948,
    110951,
    110960,
    111355,
    113664,
    113770,
    113776,
    113788,
    113792,
    113800,
    113808,
    113817,
    113820,
    113823,
    118528,
    118573,
    118576,
    118598,
    118608,
    118723,
    118784,
    119029,
    119040,
    119078,
    119081,
    119154,
    119163,
    119274,
    119296,
    119365,
    119520,
    119539,
    119552,
    119638,
    119648,
    119672,
    119808,
    119892,
    119894,
    119964,
    119966,
    119967,
    119970,
    119970,
    119973,
    119974,
    119977,
    119980,
    119982,
    119993,
    119995,
    119995,
    119997,
    120003,
    120005,
    120069,
    120071,
    120074,
    120077,
    120084,
    120086,
    120092,
    120094,
    120121,
    120123,
    120126,
    120128,
    120132,
    120134,
    120134,
    120138,
    120144,
    120146,
    120485,
    120488,
    120779,
    120782,
    121483,
    121499,
    121503,
    121505,
    121519,
    122624,
    122654,
    122880,
    122886,
    122888,
    122904,
    122907,
    122913,
    122915,
    122916,
    122918,
    122922,
    123136,
    123180,
    123184,
    123197,
    123200,
    123209,
    123214,
    123215,
    123536,
    123566,
    123584,
    123641,
    123647,
    123647,
    124896,
    124902,
    124904,
    124907,
    124909,
    124910,
    124912,
    124926,
    124928,
    125124,
    125127,
    125142,
    125184,
    125259,
    125264,
    125273,
    125278,
    125279,
    126065,
    126132,
    126209,
    126269,
    126464,
    126467,
    126469,
    126495,
    126497,
    126498,
    126500,
    126500,
    126503,
    126503,
    126505,
    126514,
    126516,
    126519,
    126521,
    126521,
    126523,
    126523,
    126530,
    126530,
    126535,
    126535,
    126537,
    126537,
    126539,
    126539,
    126541,
    126543,
    126545,
    126546,
    126548,
    126548,
    126551,
    126551,
    126553,
    126553,
    126555,
    126555,
    126557,
    126557,
    126559,
    126559,
    126561,
    126562,
    126564,
    126564,
    126567,
    126570,
    126572,
    126578,
    126580,
    126583,
    126585,
    126588,
    126590,
    126590,
    126592,
    126601,
    126603,
    126619,
    126625,
    126627,
    126629,
    126633,
    126635,
    126651,
    126704,
    126705,
    126976,
    127019,
    127024,
    127123,
    127136,
    127150,
    127153,
    127167,
    127169,
    127183,
    127185,
    127221,
    127232,
    127405,
    127462,
    127490,
    127504,
    127547,
    127552,
    127560,
    127568,
    127569,
    127584,
    127589,
    127744,
    128727,
    128733,
    128748,
    128752,
    128764,
    128768,
    128883,
    128896,
    128984,
    128992,
    129003,
    129008,
    129008,
    129024,
    129035,
    129040,
    129095,
    129104,
    129113,
    129120,
    129159,
    129168,
    129197,
    129200,
    129201,
    129280,
    129619,
    129632,
    129645,
    129648,
    129652,
    129656,
    129660,
    129664,
    129670,
    129680,
    129708,
    129712,
    129722,
    129728,
    129733,
    129744,
    129753,
    129760,
    129767,
    129776,
    129782,
    129792,
    129938,
    129940,
    129994,
    130032,
    130041,
    131072,
    173791,
    173824,
    177976,
    177984,
    178205,
    178208,
    183969,
    183984,
    191456,
    194560,
    195101,
    196608,
    201546,
    917760,
    917999
  ]
};

// src/rules/text.ts
var hex = (c2) => `\\u{${c2.toString(16)}}`;
var pairs = unicode_default.printable;
var klass = "";
for (let i = 0; i < pairs.length; i += 2) klass += `${hex(pairs[i])}-${hex(pairs[i + 1])}`;
var WS = unicode_default.white_space.map(hex).join("");
var UNPRINTABLE = new RegExp(`[^${klass}]`, "u");
var LEADING = new RegExp(`^[${WS}]+`, "u");
var TRAILING = new RegExp(`[${WS}]+$`, "u");
var WORD = new RegExp(`[^${WS}]+`, "gu");
var printable = (text4) => !UNPRINTABLE.test(text4);
var strip = (text4) => text4.replace(LEADING, "").replace(TRAILING, "");
var wordCount = (text4) => (text4.match(WORD) ?? []).length;
var hasSpace = (text4) => new RegExp(`[${WS}]`, "u").test(text4);
var words = (text4) => text4.match(WORD) ?? [];
function quote(v2) {
  if (typeof v2 !== "string") return v2 === null || v2 === void 0 ? "None" : String(v2);
  const q = v2.includes("'") && !v2.includes('"') ? '"' : "'";
  let out = "";
  for (const ch of v2) {
    if (ch === "\\") out += "\\\\";
    else if (ch === q) out += "\\" + q;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "	") out += "\\t";
    else if (!printable(ch)) {
      const c2 = ch.codePointAt(0);
      out += c2 < 256 ? "\\x" + c2.toString(16).padStart(2, "0") : c2 < 65536 ? "\\u" + c2.toString(16).padStart(4, "0") : "\\U" + c2.toString(16).padStart(8, "0");
    } else out += ch;
  }
  return q + out + q;
}
var TERMS = new RegExp(`"([^"]*)"(\\**)|([^${WS}]+)`, "gu");
var HAS_WORD = /[\p{L}\p{N}\p{Co}]/u;
function plainQuery(query) {
  const out = [];
  for (const m of query.matchAll(TERMS)) {
    let stem;
    let prefix;
    if (m[3] !== void 0) {
      stem = m[3].replace(/\*+$/u, "");
      prefix = stem !== m[3];
    } else {
      stem = m[1];
      prefix = m[2] !== "";
    }
    if (!HAS_WORD.test(stem)) continue;
    out.push(`"${stem.replace(/"/gu, '""')}"${prefix ? " *" : ""}`);
  }
  return out.length ? out.join(" ") : null;
}

// src/rules/state.ts
var CONSTANTS = contract_default.constants;
function say(code, values = {}) {
  return contract_default.messages[code].replace(/\{(\w+)(!r)?\}/g, (_2, name, r) => r ? quote(values[name]) : String(values[name]));
}
var defaults = contract_default.constants.config_defaults;
var DEFAULT_CONFIG = {
  max_unfinished: defaults["queue.max_unfinished"],
  max_turn_bytes: defaults["transcript.max_turn_bytes"],
  token_budget: defaults["transcript.token_budget"],
  tags_max: defaults["tags.max"]
};
var DurableError = class extends Error {
  constructor(message, code = "internal", document = void 0) {
    super(message);
    this.code = code;
    this.document = document;
  }
  code;
  document;
};
function internalError(e, where) {
  if (e instanceof DurableError && (e.code !== "internal" || INTERNAL_ANSWER.test(e.message))) return e;
  const bytes2 = crypto.getRandomValues(new Uint8Array(8));
  const id = [...bytes2].map((b2) => b2.toString(16).padStart(2, "0")).join("");
  const message = e instanceof Error ? e.message : String(e);
  console.error(`durable: internal error ${id} in ${where}: ${message}${e instanceof Error && e.stack ? `
${e.stack}` : ""}`);
  return new DurableError(`internal error ${id}`, "internal");
}
var INTERNAL_ANSWER = /^internal error [0-9a-f]{16}$/;
var invalid = (m) => new DurableError(m, "invalid_input");
var notFound = (m) => new DurableError(m, "not_found");
var conflict = (m) => new DurableError(m, "conflict");
var denied = (m) => new DurableError(m, "permission_denied");
function httpStatus(code) {
  const e = contract_default.errors[code];
  return e?.http ?? 500;
}
var SQL_LIMITS = { value: 2e6, statement: 1e5, params: 100 };
var encoder = new TextEncoder();
function sizeOf(v2, exact) {
  if (typeof v2 === "string") return exact ? encoder.encode(v2).length : v2.length * 3;
  if (v2 instanceof ArrayBuffer) return v2.byteLength;
  if (ArrayBuffer.isView(v2)) return v2.byteLength;
  return 8;
}
function guardSql(q, b2) {
  if (q.length > SQL_LIMITS.statement / 3 && encoder.encode(q).length > SQL_LIMITS.statement) {
    throw new DurableError(`a SQL statement of ${encoder.encode(q).length} bytes is over Cloudflare's limit of 100 KB; nothing was written`, "storage");
  }
  if (b2.length > SQL_LIMITS.params) {
    throw new DurableError(`a SQL statement with ${b2.length} bound parameters is over Cloudflare's limit of 100; nothing was written`, "storage");
  }
  let bound = 0;
  for (const v2 of b2) bound += sizeOf(v2, false);
  if (bound <= SQL_LIMITS.value) return;
  let total = 0;
  for (const v2 of b2) {
    const n = sizeOf(v2, true);
    if (n > SQL_LIMITS.value) {
      throw new DurableError(`a value of ${n} bytes is over Cloudflare's limit of 2,000,000 bytes per string, BLOB or row; nothing was written`, "storage");
    }
    total += n;
  }
  if (total > SQL_LIMITS.value) {
    throw new DurableError(`a row of ${total} bytes is over Cloudflare's limit of 2,000,000 bytes per row; nothing was written`, "storage");
  }
}
var MARK = "";
var MARK_LENGTH = MARK.length + 32;
var ROW_BUDGET = 19e5;
var PART_UNITS = 5e5;
var PART_BYTES = 15e5;
var isMarker = (v2) => typeof v2 === "string" && v2.length === MARK_LENGTH && v2.startsWith(MARK);
var isBytes = (v2) => v2 instanceof ArrayBuffer || ArrayBuffer.isView(v2);
var chunkColumns = "coalesce(NEW.content, ''), coalesce(NEW.tool_calls, ''), coalesce(NEW.meta, ''), coalesce(NEW.data, '')";
var CHUNK_SCHEMA = [
  "CREATE TABLE IF NOT EXISTS _durable_chunks (key TEXT NOT NULL, part INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (key, part))",
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_turn_gone AFTER DELETE ON turns BEGIN DELETE FROM _durable_chunks WHERE key IN (OLD.content, OLD.tool_calls, OLD.meta, OLD.data); END",
  `CREATE TRIGGER IF NOT EXISTS _durable_chunks_turn_changed AFTER UPDATE OF content, tool_calls, meta, data ON turns BEGIN DELETE FROM _durable_chunks WHERE key IN (OLD.content, OLD.tool_calls, OLD.meta, OLD.data) AND key NOT IN (${chunkColumns}); END`,
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_prompt_gone AFTER DELETE ON prompts BEGIN DELETE FROM _durable_chunks WHERE key = OLD.content; END",
  // a schedule's content (docs/reference/remote.md §13: chunked as a prompt's is)
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_schedule_gone AFTER DELETE ON schedules BEGIN DELETE FROM _durable_chunks WHERE key = OLD.content; END",
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_prompt_changed AFTER UPDATE OF content ON prompts BEGIN DELETE FROM _durable_chunks WHERE key = OLD.content AND key <> NEW.content; END",
  // a LangGraph checkpoint or pending write over a Cloudflare value (its serialized bytes), a fact's value: their
  // chunks go with the row when it is deleted (keep_checkpoints, memory forget)
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_checkpoint_gone AFTER DELETE ON lg_checkpoints BEGIN DELETE FROM _durable_chunks WHERE key IN (OLD.checkpoint, OLD.metadata); END",
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_write_gone AFTER DELETE ON lg_writes BEGIN DELETE FROM _durable_chunks WHERE key = OLD.value; END",
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_fact_gone AFTER DELETE ON facts BEGIN DELETE FROM _durable_chunks WHERE key = OLD.value; END"
];
var wholeSql = (text4) => `CASE WHEN length(${text4}) = ${MARK_LENGTH} AND substr(${text4}, 1, 2) = char(1, 2) THEN (SELECT group_concat(text, '') FROM (SELECT text FROM _durable_chunks WHERE key = ${text4} ORDER BY part)) ELSE ${text4} END`;
var argumentsSql = (calls) => `CASE WHEN ${calls} IS NULL THEN NULL ELSE (SELECT group_concat(json_extract(value, '$.arguments'), char(10)) FROM json_each(${wholeSql(calls)})) END`;
var counted = (row4) => `${row4}.seq <= (SELECT mark FROM turns_mark)`;
var ftsDelete = (row4) => `INSERT INTO turns_fts (turns_fts, rowid, content, arguments) VALUES ('delete', ${row4}.seq, ${wholeSql(`${row4}.content`)}, ${argumentsSql(`${row4}.tool_calls`)});`;
var USAGE_WHOLE = {
  marker: "_durable_chunks",
  // in the triggers' SQL once the Worker's version is in place
  timing: { usage_delete_counted: "BEFORE", usage_update_old_counted: "BEFORE", usage_update_new_counted: "AFTER" },
  catchUp: (usage2) => usage2.replaceAll("turns.meta", wholeSql("turns.meta")),
  trigger: (name, sql) => sql.replace(/^CREATE TRIGGER (IF NOT EXISTS )?/i, "CREATE TRIGGER ").replace(/\b(AFTER|BEFORE) (DELETE|UPDATE)\b/, `${USAGE_WHOLE.timing[name]} $2`).replaceAll("OLD.meta", wholeSql("OLD.meta")).replaceAll("NEW.meta", wholeSql("NEW.meta"))
};
var FTS_WHOLE = {
  marker: "_durable_chunks",
  // in the view's SQL once the Worker's version is in place
  statements: [
    "DROP VIEW IF EXISTS turns_fts_source",
    `CREATE VIEW turns_fts_source AS SELECT seq, ${wholeSql("content")} AS content, ${argumentsSql("tool_calls")} AS arguments FROM turns`,
    "DROP TRIGGER IF EXISTS turns_fts_forget",
    `CREATE TRIGGER turns_fts_forget BEFORE DELETE ON turns WHEN ${counted("OLD")} BEGIN ${ftsDelete("OLD")} END`,
    "DROP TRIGGER IF EXISTS turns_fts_rewrite",
    `CREATE TRIGGER turns_fts_rewrite BEFORE UPDATE OF content, tool_calls ON turns WHEN ${counted("OLD")} BEGIN ${ftsDelete("OLD")} END`,
    "DROP TRIGGER IF EXISTS turns_fts_rewritten",
    `CREATE TRIGGER turns_fts_rewritten AFTER UPDATE OF content, tool_calls ON turns WHEN ${counted("OLD")} BEGIN INSERT INTO turns_fts (rowid, content, arguments) SELECT seq, content, arguments FROM turns_fts_source WHERE seq = NEW.seq; END`
  ],
  // schema.catch_up's index step, through the view
  catchUp: "INSERT INTO turns_fts (rowid, content, arguments) SELECT seq, content, arguments FROM turns_fts_source WHERE seq > ?1"
};
function joinBytes(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(new Uint8Array(p), at);
    at += p.byteLength;
  }
  return out.buffer;
}
var Db = class _Db {
  constructor(sql) {
    this.sql = sql;
  }
  sql;
  exec(q, b2) {
    let bound = b2.map((x2) => x2 === void 0 ? null : x2);
    if (/^\s*(INSERT|UPDATE|REPLACE)/i.test(q)) bound = this.chunked(bound);
    guardSql(q, bound);
    return this.sql.exec(q, ...bound);
  }
  /** BOUND with its biggest texts or BLOBs replaced by chunk markers until the row fits (and any marker-like text). */
  chunked(bound) {
    let upper = 0;
    for (const v2 of bound) upper += typeof v2 === "string" ? v2.length * 3 : isBytes(v2) ? v2.byteLength : 8;
    if (upper <= ROW_BUDGET && !bound.some(isMarker)) return bound;
    const sizes = bound.map((v2) => typeof v2 === "string" ? encoder.encode(v2).length : isBytes(v2) ? v2.byteLength : 8);
    let total = sizes.reduce((a, n) => a + n, 0);
    const out = [...bound];
    const order = out.map((_2, i) => i).sort((a, c2) => sizes[c2] - sizes[a]);
    for (const i of order) {
      const v2 = out[i];
      if (!(isMarker(v2) || (typeof v2 === "string" || isBytes(v2)) && total > ROW_BUDGET && sizes[i] > MARK_LENGTH)) continue;
      out[i] = typeof v2 === "string" ? this.store(v2) : this.storeBytes(v2);
      total -= sizes[i] - MARK_LENGTH;
    }
    return out;
  }
  static key() {
    return MARK + [...crypto.getRandomValues(new Uint8Array(16))].map((x2) => x2.toString(16).padStart(2, "0")).join("");
  }
  /** A BLOB in chunks (BLOB parts: whole() gives its bytes back); its row holds the marker text. */
  storeBytes(v2) {
    const key = _Db.key();
    const bytes2 = v2 instanceof ArrayBuffer ? new Uint8Array(v2) : new Uint8Array(v2.buffer, v2.byteOffset, v2.byteLength);
    for (let at = 0, part = 0; at < bytes2.length; at += PART_BYTES, part++) {
      this.sql.exec("INSERT INTO _durable_chunks (key, part, text) VALUES (?, ?, ?)", key, part, bytes2.slice(at, at + PART_BYTES));
    }
    return key;
  }
  store(text4) {
    const key = _Db.key();
    let part = 0;
    for (let at = 0; at < text4.length || part === 0; part++) {
      let end = Math.min(at + PART_UNITS, text4.length);
      const last = text4.charCodeAt(end - 1);
      if (end < text4.length && last >= 55296 && last <= 56319) end--;
      const piece = text4.slice(at, end);
      guardSql("", [piece]);
      this.sql.exec("INSERT INTO _durable_chunks (key, part, text) VALUES (?, ?, ?)", key, part, piece);
      at = end;
    }
    return key;
  }
  /** ROWS with every chunk marker replaced by its whole text. */
  whole(rows) {
    for (const r of rows) {
      for (let i = 0; i < r.length; i++) {
        if (isMarker(r[i])) {
          const parts = [...this.sql.exec("SELECT text FROM _durable_chunks WHERE key = ? ORDER BY part", r[i]).raw()].map((p) => p[0]);
          r[i] = parts.length && isBytes(parts[0]) ? joinBytes(parts) : parts.join("");
        }
      }
    }
    return rows;
  }
  all(q, ...b2) {
    return this.whole([...this.exec(q, b2).raw()]);
  }
  /** The rows one at a time, read from storage as they are iterated (SQL cursors are lazy: a request
   *  holds the row it is at, not the result; docs/reference/remote.md §13). */
  iter(q, ...b2) {
    const rows = this.exec(q, b2).raw();
    const whole = (r) => this.whole([r])[0];
    return (function* () {
      for (const r of rows) yield whole(r);
    })();
  }
  one(q, ...b2) {
    const first = this.iter(q, ...b2).next();
    return first.done ? null : first.value;
  }
  /** Rows as objects keyed by column name, in the table's column order (as Python's `SELECT *` dicts). */
  dicts(q, ...b2) {
    const cur = this.exec(q, b2);
    const names = cur.columnNames;
    return this.whole([...cur.raw()]).map((r) => Object.fromEntries(names.map((n, i) => [n, r[i]])));
  }
  /** Rows as objects keyed by column name, one at a time as read (a lazy cursor). */
  *dictIter(q, ...b2) {
    const cur = this.exec(q, b2);
    const names = cur.columnNames;
    for (const r of cur.raw()) {
      const row4 = this.whole([r])[0];
      yield Object.fromEntries(names.map((n, i) => [n, row4[i]]));
    }
  }
  run(q, ...b2) {
    this.exec(q, b2);
  }
};
function now() {
  return Date.now();
}
function iso(ms) {
  return ms === null || ms === void 0 ? null : new Date(Number(ms)).toISOString();
}
function dumps(v2) {
  return JSON.stringify(v2);
}
var META = [
  "one",
  "id",
  "scope",
  "owner",
  "name",
  "title",
  "status",
  "created_at",
  "updated_at",
  "last_active_at",
  "ttl_seconds",
  "expires_at",
  "live_turns",
  "live_tokens",
  "external_id",
  "adapter"
];
var Opened = class {
  constructor(db, address, actor, config, id) {
    this.db = db;
    this.address = address;
    this.actor = actor;
    this.config = config;
    this.id = id;
  }
  db;
  address;
  actor;
  config;
  id;
  get name() {
    return this.address.name;
  }
  get what() {
    const a = this.address;
    if (a.id_scope === "reserved") return say("user_memory", { user: a.owner });
    if (a.id_scope === "tenant") return say("tenant_session", { name: a.name, tenant: a.owner });
    return say("session", { name: a.name });
  }
  get missing() {
    if (this.address.id_scope === "reserved") return say("memory_empty", { what: this.what });
    return say("not_found", { what: this.what });
  }
  get taken() {
    return say("name_taken", { what: this.what });
  }
  meta() {
    const r = this.db.one(`SELECT ${META.join(", ")} FROM object`);
    if (!r) return null;
    const m = {};
    META.forEach((k2, i) => m[k2] = r[i]);
    return m;
  }
  role() {
    const r = this.db.one("SELECT role FROM participants WHERE user = ?", this.actor);
    return r ? r[0] : null;
  }
  requireVisible() {
    if (this.address.id_scope === "tenant" && this.role() === null) throw notFound(this.missing);
  }
  requireOwner(doing) {
    if (this.role() !== "owner") throw denied(say("owner_only", { what: this.what, doing }));
  }
};
function objectId(obj) {
  obj.requireVisible();
  return { id: obj.id };
}
function createObject(obj, status, title = null, ttl2 = null) {
  const t = now();
  const a = obj.address;
  obj.db.run(
    "INSERT INTO object (one, id, scope, owner, name, title, status, created_at, updated_at, last_active_at, ttl_seconds, expires_at) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    obj.id,
    a.scope,
    a.owner,
    a.name,
    title,
    status,
    t,
    t,
    t,
    ttl2,
    ttl2 ? t + ttl2 * 1e3 : null
  );
  if (a.id_scope !== "reserved") {
    obj.db.run("INSERT INTO participants (user, role, joined_at) VALUES (?, 'owner', ?)", obj.actor, t);
    event(obj, "session.created", { scope: a.scope, status });
    if (ttl2) event(obj, "ttl.set", { ttl_seconds: ttl2 });
  }
}
function pyDumps(v2) {
  return JSON.stringify(v2).replace(/[\u007f-\uffff]/g, (c2) => "\\u" + c2.charCodeAt(0).toString(16).padStart(4, "0"));
}
function event(obj, type, data = null, actor = void 0) {
  const r = obj.db.one(
    "INSERT INTO events (type, actor, data, at) VALUES (?, ?, ?, ?) RETURNING seq",
    type,
    actor === void 0 ? obj.actor : actor,
    pyDumps(data ?? {}),
    now()
  );
  return r[0];
}
function touch(obj, active = true) {
  const t = now();
  if (active) {
    obj.db.run("UPDATE object SET updated_at = ?, last_active_at = ?, expires_at = CASE WHEN ttl_seconds IS NULL THEN NULL ELSE ? + ttl_seconds * 1000 END", t, t, t);
  } else {
    obj.db.run("UPDATE object SET updated_at = ?", t);
  }
}
function setStatus(obj, to, from) {
  if (to === from) return;
  obj.db.run("UPDATE object SET status = ?", to);
  event(obj, "session.status", { from, to });
}
function nextAlarmAt(db, deliveries2 = true) {
  const r = db.one("SELECT min(t) FROM (SELECT expires_at AS t FROM object UNION ALL SELECT min(lease_expires_at) FROM prompts WHERE status = 'processing' UNION ALL SELECT min(expires_at) FROM requests WHERE status = 'pending' UNION ALL SELECT min(next_at) FROM schedules" + (deliveries2 ? " UNION ALL SELECT min(next_attempt_at) FROM deliveries WHERE status = 'pending'" : "") + ")");
  return r ? r[0] : null;
}
function pendingAt(db) {
  const r = db.one("SELECT CASE WHEN EXISTS (SELECT 1 FROM prompts WHERE status = 'processing') THEN NULL ELSE (SELECT min(max(created_at, coalesce(not_before, 0))) FROM prompts WHERE status = 'pending') END");
  return r ? r[0] : null;
}
function sessionJson(obj) {
  const m = obj.meta();
  const participants2 = obj.db.all("SELECT user, role, joined_at FROM participants ORDER BY joined_at, user").map(([user, role, j2]) => ({ user, role, joined_at: iso(j2) }));
  const counts = {};
  for (const [s3, n] of obj.db.all("SELECT status, count(*) FROM prompts WHERE status IN ('pending','processing') GROUP BY status")) counts[s3] = n;
  return {
    name: m.name,
    id: m.id,
    scope: m.scope,
    owner: m.owner,
    title: m.title,
    status: m.status,
    created_at: iso(m.created_at),
    updated_at: iso(m.updated_at),
    last_active_at: iso(m.last_active_at),
    participants: participants2,
    queue: { pending: counts.pending ?? 0, processing: counts.processing ?? 0 },
    turns: m.live_turns,
    tokens: m.live_tokens,
    expires_at: iso(m.expires_at),
    ttl_seconds: m.ttl_seconds,
    external_id: m.external_id ?? null,
    tags: Object.fromEntries(obj.db.all("SELECT key, value FROM tags ORDER BY key").map((r) => [r[0], r[1]])),
    schedules: Number(obj.db.one("SELECT count(*) FROM schedules")[0]),
    hooks: Number(obj.db.one("SELECT count(*) FROM hooks")[0])
  };
}
function validName(text4, what = "name") {
  const s3 = typeof text4 === "string" ? text4 : "";
  const n = [...s3].length;
  if (typeof text4 !== "string" || n < 1 || n > 200 || !printable(s3) || s3 !== strip(s3)) {
    throw invalid(say("invalid_name", { what, value: text4 }));
  }
  return s3;
}
var pyRepr = quote;

// src/subrequests.ts
var DEFAULT_SUBREQUESTS = 1e4;
var most = 0;
var served = 0;
function takeMaxSubrequests() {
  const m = most;
  most = 0;
  return m;
}
function takeServed() {
  const n = served;
  served = 0;
  return n;
}
function limitOf(env) {
  const n = Number(env.DURABLE_SUBREQUEST_LIMIT);
  return Number.isSafeInteger(n) && n > 0 ? n : DEFAULT_SUBREQUESTS;
}
function counted2(env, limit, isServed = true) {
  let n = 0;
  if (isServed) served++;
  const wrap = (ns) => ({
    idFromName: (name) => ns.idFromName(name),
    get: (id) => {
      const stub = ns.get(id);
      return {
        fetch: (input, init) => {
          n++;
          if (n > most) most = n;
          if (n > limit) {
            throw new DurableError(`too many subrequests: this request needed more than ${limit} (Cloudflare's per-request limit; docs/remote.md)`, "internal");
          }
          return stub.fetch(input, init);
        }
      };
    }
  });
  return { ...env, OBJECTS: wrap(env.OBJECTS), INDEX: wrap(env.INDEX) };
}

// src/auth.ts
var MIN_KEY_BYTES = 32;
var MiB = 1048576;
function misconfigured(variable, why) {
  return new DurableError(`the Worker is misconfigured: ${variable} ${why} (docs/remote.md "Configuration"); nothing was done`, "misconfigured");
}
function positiveVar(env, name, fallback, max, unit = "bytes") {
  const v2 = env[name];
  if (v2 === void 0 || v2 === null) return fallback;
  if (typeof v2 !== "string" || !/^[1-9][0-9]{0,15}$/.test(v2) || Number(v2) > max) {
    throw misconfigured(name, `must be a positive integer of at most ${max} (${unit}), as text`);
  }
  return Number(v2);
}
var DEFAULT_RATE_LIMIT = 1200;
var MAX_RATE_LIMIT = 1e7;
var checked = null;
function checkConfig(env) {
  if (checked && checked.env === env) return checked.settings;
  for (const name of ["DURABLE_SECRET", "DURABLE_TOKEN_KEY"]) {
    const v2 = env[name];
    if (typeof v2 !== "string" || !v2) throw misconfigured(name, `is not set: put a random secret of at least ${MIN_KEY_BYTES} bytes (npx wrangler secret put ${name})`);
    if (new TextEncoder().encode(v2).length < MIN_KEY_BYTES) throw misconfigured(name, `is shorter than ${MIN_KEY_BYTES} bytes`);
  }
  for (const old of ["DURABLE_TOKENS", "DURABLE_ADMIN_TOKENS"]) {
    if (env[old] !== void 0) throw misconfigured(old, "is no longer read: tokens are signed with DURABLE_TOKEN_KEY ('durable remote token'); delete it");
  }
  const maxTurnBytes = positiveVar(env, "DURABLE_MAX_TURN_BYTES", 2 * MiB, 2 * MiB);
  const maxBodyBytes = positiveVar(env, "DURABLE_MAX_BODY_BYTES", 16 * MiB, 100 * MiB);
  if (maxBodyBytes < 64 * 1024) throw misconfigured("DURABLE_MAX_BODY_BYTES", "must be at least 65536 (bytes); keep it at least 6 times DURABLE_MAX_TURN_BYTES, so any turn can be sent");
  const f2 = env.DURABLE_DEV_FAULTS;
  if (f2 !== void 0 && f2 !== "1" && f2 !== "0") throw misconfigured("DURABLE_DEV_FAULTS", 'must be "1" or unset (a test hook of durable remote dev)');
  const subrequests = positiveVar(env, "DURABLE_SUBREQUEST_LIMIT", DEFAULT_SUBREQUESTS, 1e7, "subrequests per request");
  const r = env.DURABLE_RATE_LIMIT;
  if (r !== void 0 && r !== null && (typeof r !== "string" || !/^(0|[1-9][0-9]{0,7})$/.test(r) || Number(r) > MAX_RATE_LIMIT)) {
    throw misconfigured("DURABLE_RATE_LIMIT", `must be a whole number from 0 (no limit) to ${MAX_RATE_LIMIT} (requests a minute per token), as text`);
  }
  const h = env.DURABLE_HOOK_ALLOW_HOSTS;
  if (h !== void 0 && h !== null && (typeof h !== "string" || !/^[A-Za-z0-9.:\[\]_-]*(,[A-Za-z0-9.:\[\]_-]*)*$/.test(h.replace(/ /g, "")))) {
    throw misconfigured("DURABLE_HOOK_ALLOW_HOSTS", "must be a comma-separated list of host names or IP addresses, as text");
  }
  const rateLimit = r === void 0 || r === null ? DEFAULT_RATE_LIMIT : Number(r);
  const settings = { maxTurnBytes, maxBodyBytes, subrequests, rateLimit, faults: f2 === "1" };
  checked = { env, settings };
  return settings;
}
var B64URL = /^[A-Za-z0-9_-]*$/;
function unb64url(text4) {
  if (!B64URL.test(text4) || text4.length % 4 === 1) return null;
  const bin = atob(text4.replace(/-/g, "+").replace(/_/g, "/") + "==".slice(0, (4 - text4.length % 4) % 4));
  const bytes2 = Uint8Array.from(bin, (c2) => c2.charCodeAt(0));
  return b64url(bytes2) === text4 ? bytes2 : null;
}
function b64url(bytes2) {
  let bin = "";
  for (const b2 of bytes2) bin += String.fromCharCode(b2);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
var verifyKey = null;
async function keyFor(text4) {
  if (!verifyKey || verifyKey.text !== text4) {
    const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(text4), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    verifyKey = { text: text4, key };
  }
  return verifyKey.key;
}
var unauthorized = (why) => new DurableError(`the token is not valid for this Worker (${why}); check DURABLE_TOKEN or config remote.token, or issue one with 'durable remote token'`, "unauthorized");
var isInt = (v2) => typeof v2 === "number" && Number.isSafeInteger(v2);
function decodeJson(bytes2) {
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes2));
  } catch {
    return null;
  }
}
async function verify(token, keyText, nowMs) {
  const parts = token.split(".");
  if (parts.length !== 3) throw unauthorized("not a signed token");
  const [h, p, s3] = parts.map(unb64url);
  if (!h || !p || !s3) throw unauthorized("not canonical base64url");
  const header = decodeJson(h);
  if (!header || typeof header !== "object" || Array.isArray(header) || header.alg !== "HS256" || "crit" in header) {
    throw unauthorized("only HS256 tokens are accepted");
  }
  if (s3.length !== 32) throw unauthorized("bad signature");
  const ok = await crypto.subtle.verify("HMAC", await keyFor(keyText), s3, new TextEncoder().encode(`${parts[0]}.${parts[1]}`));
  if (!ok) throw unauthorized("bad signature");
  const c2 = decodeJson(p);
  if (!c2 || typeof c2 !== "object" || Array.isArray(c2) || typeof c2.sub !== "string" || typeof c2.adm !== "boolean" || !isInt(c2.iat) || !isInt(c2.exp) || typeof c2.jti !== "string" || !c2.jti || c2.jti.length > 200) {
    throw unauthorized("claims sub, adm, iat, exp and jti are required");
  }
  try {
    validName(c2.sub, "user");
  } catch {
    throw unauthorized("sub is not a valid user name");
  }
  if (c2.exp * 1e3 <= nowMs) throw unauthorized(`expired at ${new Date(c2.exp * 1e3).toISOString()}`);
  return { sub: c2.sub, adm: c2.adm, iat: c2.iat, exp: c2.exp, jti: c2.jti };
}
var REVOCATIONS_TTL_MS = 5e3;
var STALE_MS = 6e4;
var RETRY_READ_MS = 1e3;
var revocations = null;
var lastFailure = -Infinity;
var devFail = false;
function forgetRevocations() {
  revocations = null;
}
function devRevocationFault(fail2, ageMs, nowMs) {
  devFail = fail2;
  lastFailure = -Infinity;
  if (revocations && ageMs !== null) revocations.at = nowMs - ageMs;
}
async function revocationList(nowMs, fetch2) {
  const held2 = revocations;
  if (held2 && nowMs - held2.at <= REVOCATIONS_TTL_MS && nowMs >= held2.at) return held2.list;
  const usable = held2 !== null && nowMs - held2.at <= STALE_MS && nowMs >= held2.at;
  if (usable && nowMs - lastFailure < RETRY_READ_MS) return held2.list;
  try {
    if (devFail) throw new Error("the revocation list cannot be read (dev fault)");
    const got = await fetch2();
    revocations = { at: nowMs, list: { jtis: new Set(got.jtis), users: new Map(Object.entries(got.users)) } };
    return revocations.list;
  } catch (e) {
    lastFailure = nowMs;
    console.error(`durable: the revocation list (index shard auth:0) could not be read: ${e?.message ?? e}`);
    if (usable) return held2.list;
    throw Object.assign(
      new DurableError("the Worker cannot read its token revocation list just now; try again shortly", "busy"),
      { status: 503, retryable: true }
    );
  }
}
function revokedWhy(c2, list) {
  if (list.jtis.has(c2.jti)) return `token ${c2.jti} was revoked`;
  const before = list.users.get(c2.sub);
  if (before !== void 0 && c2.iat < before) return `the tokens of user "${c2.sub}" issued before ${new Date(before * 1e3).toISOString()} were revoked`;
  return null;
}
async function checkRevoked(c2, nowMs, fetch2) {
  const why = revokedWhy(c2, await revocationList(nowMs, fetch2));
  if (why !== null) throw unauthorized(why);
}

// src/rules/strict.ts
var MAX_DEPTH = 200;
var ENVELOPE_DEPTH = 16;
var USAGE_KEYS = CONSTANTS.usage_keys;
var LONE_SURROGATE = /\p{Cs}/u;
var LONE_MESSAGE = "a string holds a lone surrogate, which is not valid UTF-8";
var QUOTE = 34;
var BACKSLASH = 92;
var OPEN_OBJECT = 123;
var CLOSE_OBJECT = 125;
var OPEN_ARRAY = 91;
var CLOSE_ARRAY = 93;
var COMMA = 44;
function scan(text4, limit = MAX_DEPTH, lexemes, body = false, lone = body) {
  const keys = [];
  const path = [];
  let expectKey = false;
  const n = text4.length;
  let escape = lone ? text4.indexOf("\\u") : -1;
  let i = 0;
  while (i < n) {
    const c2 = text4.charCodeAt(i);
    if (c2 === QUOTE) {
      let end = i + 1;
      for (; ; ) {
        end = text4.indexOf('"', end);
        let k2 = end - 1;
        while (text4.charCodeAt(k2) === BACKSLASH) k2--;
        if ((end - 1 - k2) % 2 === 0) break;
        end++;
      }
      if (escape !== -1 && escape < i) escape = text4.indexOf("\\u", i);
      if (escape !== -1 && escape < end && LONE_SURROGATE.test(JSON.parse(text4.slice(i, end + 1)))) {
        return LONE_MESSAGE;
      }
      if (expectKey) {
        const raw2 = text4.slice(i + 1, end);
        const key = raw2.includes("\\") ? JSON.parse(text4.slice(i, end + 1)) : raw2;
        const seen = keys[keys.length - 1];
        if (seen.has(key)) return say("json_duplicate_key", { key });
        seen.add(key);
        path[keys.length - 1] = key;
        expectKey = false;
      }
      i = end + 1;
    } else if (c2 === OPEN_OBJECT || c2 === OPEN_ARRAY) {
      if (keys.length >= limit) return say("json_nested", { max: limit });
      keys.push(c2 === OPEN_OBJECT ? /* @__PURE__ */ new Set() : null);
      expectKey = c2 === OPEN_OBJECT;
      i++;
    } else if (c2 === CLOSE_OBJECT || c2 === CLOSE_ARRAY) {
      keys.pop();
      path.length = keys.length;
      expectKey = false;
      i++;
    } else if (c2 === COMMA) {
      expectKey = keys[keys.length - 1] != null;
      i++;
    } else if (c2 === 45 || c2 >= 48 && c2 <= 57) {
      let j2 = i + 1, plain = true;
      for (; j2 < n; j2++) {
        const d = text4.charCodeAt(j2);
        if (d >= 48 && d <= 57) continue;
        if (d === 46 || d === 101 || d === 69 || d === 43 || d === 45) {
          plain = false;
          continue;
        }
        break;
      }
      if (!plain || j2 - i > 300) {
        const lexeme = text4.slice(i, j2);
        const value = Number(lexeme);
        if (!Number.isFinite(value)) return say("json_overflow", { number: lexeme.slice(0, 40) });
        const L2 = keys.length;
        if (body && !plain && Number.isInteger(value) && L2 >= 3 && USAGE_KEYS.includes(path[L2 - 1]) && path[L2 - 2] === "usage" && path[L2 - 3] === "meta" && keys[L2 - 2] !== null && keys[L2 - 3] !== null && !path.slice(0, L2 - 3).includes("data")) {
          return say("meta_usage_count", { key: path[L2 - 1] });
        }
      }
      if (lexemes !== void 0 && keys.length <= 2 && keys.every((k2) => k2 !== null)) lexemes.set(path.slice(0, keys.length).join("."), text4.slice(i, j2));
      i = j2;
    } else i++;
  }
  return null;
}
function parse(text4, what, lexemes) {
  let value;
  try {
    value = JSON.parse(text4);
  } catch {
    throw invalid(`${what} is not valid JSON text`);
  }
  const why = scan(text4, MAX_DEPTH, lexemes);
  if (why !== null) throw invalid(say("not_json", { what, why }));
  return value;
}
function tooDeep(value, limit = MAX_DEPTH) {
  const stack = [[value, 1]];
  while (stack.length) {
    const [v2, depth] = stack.pop();
    if (v2 === null || typeof v2 !== "object") continue;
    if (depth > limit) return true;
    for (const c2 of Array.isArray(v2) ? v2 : Object.values(v2)) if (c2 !== null && typeof c2 === "object") stack.push([c2, depth + 1]);
  }
  return false;
}
function integerLexeme(lexeme) {
  return lexeme === void 0 || !/[.eE]/.test(lexeme);
}

// src/rules/lifecycle.ts
var TRANSITIONS = contract_default.transitions;
function check(obj, command, status = null, noop = false) {
  const { from, to, role } = TRANSITIONS[command];
  if (role === "owner") obj.requireOwner(command === "invite" ? "invite participants" : command);
  if (noop) return null;
  const current3 = status ?? obj.meta().status;
  if (!from.includes(current3)) throw conflict(refusal(obj, command, current3));
  return to ?? current3;
}
function refusal(obj, command, current3) {
  const [what, name] = [obj.what, obj.name];
  if (current3 === "archived") return say("refused_archived", { what, name });
  if (current3 === "cancelled" && command === "archive") return say("refused_cancelled_archive", { what, name });
  if (current3 === "cancelled") return say("refused_cancelled", { what, name });
  if (command === "unarchive") return say("refused_not_archived", { what, status: current3 });
  return say(`cannot_${command}`, { what, status: current3 });
}
function requireSession(obj) {
  const meta = obj.meta();
  if (meta === null) throw notFound(obj.missing);
  return meta;
}
function validTitle(title) {
  const t = typeof title === "string" ? strip(title) : title;
  if (typeof t !== "string" || [...t].length < 1 || [...t].length > 200 || !printable(t)) throw invalid(say("invalid_title"));
  return t;
}
function validRequestId(id) {
  if (id != null && (typeof id !== "string" || id.length < 1 || [...id].length > 128 || !printable(id))) {
    throw invalid(say("invalid_request_id"));
  }
  return id;
}

// src/rules/tags.ts
var KEY = /^[A-Za-z0-9][A-Za-z0-9._:/-]*$/;
function validKey(key) {
  if (typeof key !== "string" || key.length < 1 || key.length > CONSTANTS.limits.tag_key || !KEY.test(key)) {
    throw invalid(say("invalid_tag_key", { key: typeof key === "string" ? key : String(key) }));
  }
  return key;
}
function validValue(key, value) {
  const n = typeof value === "string" ? [...value].length : 0;
  if (typeof value !== "string" || n < 1 || n > CONSTANTS.limits.tag_value || !printable(value) || value !== strip(value)) {
    throw invalid(say("invalid_tag_value", { key }));
  }
  return value;
}
var byKey = (a, b2) => a < b2 ? -1 : a > b2 ? 1 : 0;
function validSet(tags2) {
  if (tags2 == null) return {};
  if (typeof tags2 !== "object" || Array.isArray(tags2)) throw invalid("tags must be a JSON object of KEY -> VALUE");
  const out = {};
  for (const k2 of Object.keys(tags2).sort(byKey)) out[validKey(k2)] = validValue(k2, tags2[k2]);
  return out;
}
function validChange(set, untag) {
  const changes = validSet(set);
  if (untag == null) untag = [];
  if (!Array.isArray(untag)) throw invalid("untag must be a JSON array of KEYs");
  const removed = [];
  for (const key of untag) {
    validKey(key);
    if (Object.prototype.hasOwnProperty.call(changes, key) || removed.includes(key)) throw invalid(say("tag_twice", { key }));
    removed.push(key);
  }
  return [changes, removed.sort(byKey)];
}
function current(obj) {
  const out = {};
  for (const [k2, v2] of obj.db.all("SELECT key, value FROM tags ORDER BY key")) out[k2] = v2;
  return out;
}
function put(obj, tags2) {
  const n = Object.keys(tags2).length;
  if (n > obj.config.tags_max) throw invalid(say("too_many_tags", { what: obj.what, count: n, limit: obj.config.tags_max }));
  if (!n) return;
  for (const [k2, v2] of Object.entries(tags2)) obj.db.run("INSERT INTO tags (key, value) VALUES (?, ?)", k2, v2);
  event(obj, "session.tagged", { set: tags2, unset: [] });
}
function tag(obj, a) {
  const [changes, removed] = validChange(a.set, a.untag);
  requireSession(obj);
  obj.requireVisible();
  const had = current(obj);
  const changed = {};
  for (const [k2, v2] of Object.entries(changes)) if (had[k2] !== v2) changed[k2] = v2;
  const unset = removed.filter((k2) => k2 in had);
  const added = Object.keys(changed).filter((k2) => !(k2 in had)).length;
  if (Object.keys(changed).length || unset.length) {
    const before = Object.keys(had).length;
    const count = before + added - unset.length;
    if (count > before && count > obj.config.tags_max) {
      throw conflict(say("too_many_tags", { what: obj.what, count, limit: obj.config.tags_max }));
    }
    for (const [k2, v2] of Object.entries(changed)) obj.db.run("INSERT OR REPLACE INTO tags (key, value) VALUES (?, ?)", k2, v2);
    for (const k2 of unset) obj.db.run("DELETE FROM tags WHERE key = ?", k2);
    event(obj, "session.tagged", { set: changed, unset });
    touch(obj, false);
  }
  return sessionJson(obj);
}
function tags(obj) {
  requireSession(obj);
  obj.requireVisible();
  return current(obj);
}

// src/indexes.ts
var ROOTS = "0123456789abcdef";
var ROW_COLUMNS = [
  "id",
  "scope",
  "owner",
  "name",
  "title",
  "status",
  "created_at",
  "updated_at",
  "last_active_at",
  "turns",
  "tokens",
  "expires_at",
  "next_alarm_at",
  "external_id",
  "pending_at",
  "pending_requests"
];
var PRICED_COLUMNS = [
  "cache_read_tokens",
  "cache_write_tokens",
  "uncosted_rows",
  "uncosted_base",
  "uncosted_cache_read",
  "uncosted_cache_write",
  "uncosted_output"
];
var USAGE_COLUMNS = ["day", "model", "rows", "turns", "tokens", "input_tokens", "output_tokens", "cost_usd", ...PRICED_COLUMNS];
function homeShard(scope, owner2) {
  return scope === "tenant" ? `tenant:${owner2}` : `user:${owner2}`;
}
function shardsOf(row4) {
  const out = /* @__PURE__ */ new Set([homeShard(row4.scope, row4.owner)]);
  for (const [user] of row4.members) out.add(`user:${user}`);
  return [...out].sort();
}
function shardStub(env, shard) {
  return env.INDEX.get(env.INDEX.idFromName(shard));
}
function objectStub(env, row4) {
  return env.OBJECTS.get(env.OBJECTS.idFromName(row4.id));
}
function addressOf(row4) {
  const idScope = row4.scope === "session" ? "user" : row4.scope;
  return { id_scope: idScope, owner: row4.owner, name: row4.name, scope: row4.scope };
}
async function answer(response) {
  const doc = await response.json();
  if (doc.error) throw new DurableError(doc.error.message, doc.error.code);
  return doc.result;
}
async function ask(env, shard, op, args = {}) {
  return answer(await shardStub(env, shard).fetch(`https://index/${op}`, { method: "POST", body: JSON.stringify({ shard, ...args }) }));
}
async function system(env, row4, op, args = {}) {
  const call = { op, args, address: addressOf(row4), id: row4.id };
  return answer(await objectStub(env, row4).fetch("https://object/system", { method: "POST", body: JSON.stringify(call) }));
}
function whereOf(f2) {
  const at = f2.at ?? now();
  const where = [];
  const params = [];
  if (!f2.reserved) where.push("o.scope != 'reserved'");
  if (!f2.expired) {
    where.push("(o.expires_at IS NULL OR o.expires_at > ?)");
    params.push(at);
  }
  if (f2.member != null && f2.reserved) {
    where.push("(EXISTS (SELECT 1 FROM members m WHERE m.user = ? AND m.object_id = o.id) OR (o.scope = 'reserved' AND o.owner = ?))");
    params.push(f2.member, f2.member);
  } else if (f2.member != null) {
    where.push("EXISTS (SELECT 1 FROM members m WHERE m.user = ? AND m.object_id = o.id)");
    params.push(f2.member);
  }
  if (f2.home_only) where.push("o.home = 1");
  if (f2.statuses && f2.statuses.length) {
    where.push(`o.status IN (${f2.statuses.map(() => "?").join(",")})`);
    params.push(...f2.statuses);
  } else if (f2.all_objects === false) where.push("o.status != 'archived'");
  if (f2.older_than != null) {
    where.push("o.last_active_at < ?");
    params.push(at - f2.older_than * 1e3);
  }
  if (f2.cutoff != null) {
    where.push("o.last_active_at < ?");
    params.push(f2.cutoff);
  }
  if (f2.tenant != null) {
    where.push("o.scope = 'tenant' AND o.owner = ?");
    params.push(f2.tenant);
  }
  if (f2.owner != null) {
    where.push("o.owner = ? AND o.scope IN ('user', 'session')");
    params.push(f2.owner);
  }
  if (f2.name != null) {
    where.push("o.name = ?");
    params.push(f2.name);
  }
  if (f2.alarm_due != null) {
    where.push("o.next_alarm_at IS NOT NULL AND o.next_alarm_at <= ?");
    params.push(f2.alarm_due);
  }
  if (f2.after_id != null) {
    where.push("o.id > ?");
    params.push(f2.after_id);
  }
  if (f2.before != null) {
    where.push("(o.last_active_at < ? OR (o.last_active_at = ? AND o.id < ?))");
    params.push(f2.before[0], f2.before[0], f2.before[1]);
  }
  if (f2.pending_due != null) {
    where.push("o.pending_at IS NOT NULL AND o.pending_at <= ?");
    params.push(f2.pending_due);
  }
  for (const [key, value] of f2.tags ?? []) {
    if (value == null) {
      where.push("o.id IN (SELECT t.object_id FROM tags t WHERE t.key = ?)");
      params.push(key);
    } else {
      where.push("o.id IN (SELECT t.object_id FROM tags t WHERE t.key = ? AND t.value = ?)");
      params.push(key, value);
    }
  }
  if (f2.draft_before != null) {
    where.push("o.status = 'created' AND o.updated_at < ? AND o.scope != 'reserved'");
    params.push(f2.draft_before);
  }
  if (!where.length) where.push("1");
  return [where, params];
}
var PAGE_MEMORY_MS = 864e5;
var PAGE_ABANDONED_MS = 6e4;
var SUMS = "count(DISTINCT u.object_id), CAST(sum(u.turns) AS TEXT), CAST(sum(u.tokens) AS TEXT), CAST(sum(u.input_tokens) AS TEXT), CAST(sum(u.output_tokens) AS TEXT), sum(u.cost_usd), CAST(coalesce(sum(u.cache_read_tokens), 0) AS TEXT), CAST(coalesce(sum(u.cache_write_tokens), 0) AS TEXT)";
var FIELDS = ["sessions", "turns", "tokens", "input_tokens", "output_tokens", "cost_usd", "cache_read_tokens", "cache_write_tokens"];
var PRICED = "CAST(sum(u.uncosted_rows) AS TEXT), CAST(sum(u.uncosted_base) AS TEXT), CAST(sum(u.uncosted_cache_read) AS TEXT), CAST(sum(u.uncosted_cache_write) AS TEXT), CAST(sum(u.uncosted_output) AS TEXT)";
var MAX_TOTAL = (1n << 63n) - 1n;
function overflow() {
  return new DurableError("a usage total is past 2^63-1 and cannot be counted exactly; narrow it with --user, --session or --newer-than", "storage");
}
function addCount(a, b2) {
  const sum = BigInt(String(a ?? 0)) + BigInt(String(b2 ?? 0));
  if (sum > MAX_TOTAL) throw overflow();
  return sum.toString();
}
var fields = (v2) => Object.fromEntries(FIELDS.map((k2, i) => [k2, k2 === "cost_usd" ? Number(v2[i] ?? 0) : String(v2[i] ?? 0)]));
var DurableIndex = class {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
    this.db = new Db(ctx.storage.sql);
  }
  ctx;
  env;
  db;
  ready = false;
  init() {
    if (this.ready) return;
    const cols = "id TEXT PRIMARY KEY, scope TEXT NOT NULL, owner TEXT NOT NULL, name TEXT NOT NULL, title TEXT, status TEXT NOT NULL, created_at INTEGER, updated_at INTEGER, last_active_at INTEGER, turns INTEGER, tokens INTEGER, expires_at INTEGER, next_alarm_at INTEGER, external_id TEXT, home INTEGER NOT NULL";
    this.ctx.storage.transactionSync(() => {
      this.db.run(`CREATE TABLE IF NOT EXISTS objects (${cols})`);
      this.db.run("CREATE INDEX IF NOT EXISTS objects_by_activity ON objects (last_active_at, id)");
      this.db.run("CREATE INDEX IF NOT EXISTS objects_by_alarm ON objects (next_alarm_at) WHERE next_alarm_at IS NOT NULL");
      if (!this.db.one("SELECT 1 FROM pragma_table_info('objects') WHERE name = 'pending_at'")) this.db.run("ALTER TABLE objects ADD COLUMN pending_at INTEGER");
      this.db.run("CREATE INDEX IF NOT EXISTS objects_by_pending ON objects (pending_at) WHERE pending_at IS NOT NULL");
      if (!this.db.one("SELECT 1 FROM pragma_table_info('objects') WHERE name = 'pending_requests'")) this.db.run("ALTER TABLE objects ADD COLUMN pending_requests INTEGER");
      this.db.run("CREATE TABLE IF NOT EXISTS members (object_id TEXT NOT NULL, user TEXT NOT NULL, role TEXT NOT NULL, PRIMARY KEY (object_id, user))");
      this.db.run("CREATE INDEX IF NOT EXISTS members_by_user ON members (user, object_id)");
      this.db.run("CREATE TABLE IF NOT EXISTS usage (object_id TEXT NOT NULL, day TEXT NOT NULL, model TEXT, rows INTEGER, turns INTEGER, tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER, cost_usd REAL)");
      this.db.run("CREATE INDEX IF NOT EXISTS usage_by_object ON usage (object_id)");
      this.db.run("CREATE TABLE IF NOT EXISTS tags (object_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (object_id, key))");
      this.db.run("CREATE INDEX IF NOT EXISTS tags_by_key ON tags (key, value, object_id)");
      for (const c2 of PRICED_COLUMNS) {
        if (!this.db.one("SELECT 1 FROM pragma_table_info('usage') WHERE name = ?", c2)) this.db.run(`ALTER TABLE usage ADD COLUMN ${c2} INTEGER`);
      }
      this.db.run("CREATE TABLE IF NOT EXISTS joined (object_id TEXT PRIMARY KEY, home TEXT NOT NULL)");
      this.db.run("CREATE INDEX IF NOT EXISTS joined_by_home ON joined (home)");
      this.db.run("CREATE TABLE IF NOT EXISTS registry (id TEXT PRIMARY KEY, home TEXT NOT NULL)");
      this.db.run("CREATE INDEX IF NOT EXISTS registry_by_home ON registry (home)");
      this.db.run("CREATE TABLE IF NOT EXISTS faults (one INTEGER PRIMARY KEY CHECK (one = 1), refuse INTEGER NOT NULL)");
      this.db.run("CREATE TABLE IF NOT EXISTS refusals (one INTEGER PRIMARY KEY CHECK (one = 1), n INTEGER NOT NULL)");
      this.db.run("CREATE TABLE IF NOT EXISTS shards (name TEXT PRIMARY KEY)");
      this.db.run("CREATE TABLE IF NOT EXISTS self (one INTEGER PRIMARY KEY CHECK (one = 1), name TEXT NOT NULL)");
      this.db.run("CREATE TABLE IF NOT EXISTS pages (id TEXT PRIMARY KEY, body TEXT, at INTEGER NOT NULL)");
      this.db.run("CREATE TABLE IF NOT EXISTS tombstones (id TEXT PRIMARY KEY, owner TEXT NOT NULL, last_checkpoint TEXT, deleted_at INTEGER NOT NULL)");
      if (!this.db.one("SELECT 1 FROM pragma_table_info('tombstones') WHERE name = 'members'")) this.db.run("ALTER TABLE tombstones ADD COLUMN members TEXT");
      this.db.run("CREATE TABLE IF NOT EXISTS revoked_jtis (jti TEXT PRIMARY KEY, at INTEGER NOT NULL)");
      this.db.run("CREATE TABLE IF NOT EXISTS revoked_users (user TEXT PRIMARY KEY, issued_before INTEGER NOT NULL)");
    });
    this.ready = true;
  }
  async fetch(request) {
    const op = new URL(request.url).pathname.slice(1);
    const args = await request.json();
    try {
      this.init();
      const refused = this.db.one("SELECT refuse FROM faults");
      if (refused && refused[0] && (op === "put" || op === "drop" || op === "join")) {
        this.db.run("INSERT INTO refusals (one, n) VALUES (1, 1) ON CONFLICT (one) DO UPDATE SET n = n + 1");
        throw new DurableError("index shard refuses updates (dev fault)", "busy");
      }
      let result;
      switch (op) {
        case "put":
          result = args.shard.startsWith("root:") ? this.putRoot(args.row) : await this.put(args.shard, args.row, !!args.home);
          break;
        case "drop":
          result = this.drop(args.id);
          break;
        case "join":
          await this.join(args.shard, args.id, args.home);
          break;
        case "homes":
          result = this.db.all("SELECT DISTINCT home FROM joined ORDER BY home").map((r) => r[0]);
          break;
        case "list":
          result = this.list(args.filter ?? {});
          break;
        case "usage":
          result = this.usage(args.filter ?? {}, args.by, args.newer_day ?? null);
          break;
        case "register":
          this.db.run("INSERT OR REPLACE INTO registry (id, home) VALUES (?, ?)", args.id, args.home);
          break;
        case "unregister":
          this.drop(args.id);
          break;
        // a root shard: the registry entry and the row's copy
        case "registry":
          result = this.db.all("SELECT id, home FROM registry WHERE id > ? ORDER BY id LIMIT ?", args.after ?? "", args.limit ?? 1e3).map(([id, home]) => ({ id, home }));
          break;
        case "shard":
          this.db.run("INSERT OR IGNORE INTO shards (name) VALUES (?)", args.name);
          break;
        case "unshard":
          this.db.run("DELETE FROM shards WHERE name = ?", args.name);
          break;
        case "shards":
          result = this.db.all("SELECT name FROM shards WHERE name > ? ORDER BY name LIMIT ?", args.after ?? "", args.limit ?? 100).map((r) => r[0]);
          break;
        case "seed":
          this.seed(args);
          break;
        // tests only (across.ts "seed")
        case "wipe":
          await this.ctx.storage.deleteAll();
          this.ready = false;
          if (args.shard && !args.shard.startsWith("root:")) await ask(this.env, rootOf(args.shard), "unshard", { name: args.shard });
          break;
        case "bury": {
          const had = this.db.one("SELECT members FROM tombstones WHERE id = ?", args.id);
          const members = [.../* @__PURE__ */ new Set([...had && had[0] ? JSON.parse(had[0]) : [], ...args.members ?? []])].sort();
          this.db.run(
            "INSERT INTO tombstones (id, owner, last_checkpoint, deleted_at, members) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET last_checkpoint = max(coalesce(last_checkpoint, ''), coalesce(excluded.last_checkpoint, '')), deleted_at = excluded.deleted_at, members = excluded.members",
            args.id,
            args.owner,
            args.last_checkpoint ?? null,
            args.at,
            JSON.stringify(members)
          );
          break;
        }
        case "tombstone": {
          const r = this.db.one("SELECT id, owner, last_checkpoint, deleted_at, members FROM tombstones WHERE id = ?", args.id);
          const readers = r && r[4] ? JSON.parse(r[4]) : [];
          const may = !!r && (args.all === true || readers.includes(args.user) || r[4] === null && args.shard === `user:${args.user}`);
          result = may ? { id: r[0], owner: r[1], last_checkpoint: r[2], deleted_at: r[3] } : null;
          break;
        }
        case "claim":
          result = this.claim(args.id);
          break;
        case "unclaim":
          this.db.run("DELETE FROM pages WHERE id = ? AND body IS NULL", args.id);
          break;
        case "settle":
          this.db.run("UPDATE pages SET body = ?, at = ? WHERE id = ?", args.body, now(), args.id);
          this.db.run("DELETE FROM pages WHERE at < ?", now() - PAGE_MEMORY_MS);
          break;
        case "revoke":
          if (args.jti !== null) this.db.run("INSERT OR IGNORE INTO revoked_jtis (jti, at) VALUES (?, ?)", args.jti, now());
          else this.db.run("INSERT INTO revoked_users (user, issued_before) VALUES (?, ?) ON CONFLICT (user) DO UPDATE SET issued_before = max(issued_before, excluded.issued_before)", args.user, args.issued_before);
          break;
        case "revocations":
          result = {
            jtis: this.db.all("SELECT jti FROM revoked_jtis").map((r) => r[0]),
            users: Object.fromEntries(this.db.all("SELECT user, issued_before FROM revoked_users").map((r) => [r[0], r[1]]))
          };
          break;
        case "sql_limits": {
          if (this.env.DURABLE_DEV_FAULTS !== "1") throw invalid("sql_limits is a test hook of 'durable remote dev' only");
          const tries = {
            value: () => this.db.run("SELECT length(?)", "x".repeat(2000001)),
            row: () => this.db.run("SELECT length(?) + length(?)", "x".repeat(1000001), "y".repeat(1e6)),
            statement: () => this.db.run(`SELECT 1 /* ${"x".repeat(1e5)} */`),
            parameters: () => this.db.run(`SELECT ${new Array(101).fill("?").join(" + ")}`, ...new Array(101).fill(1)),
            within: () => this.db.run(`SELECT ${new Array(99).fill("?").join(" + ")}, length(?)`, ...new Array(99).fill(1), "x".repeat(1999e3))
          };
          const out = {};
          for (const [k2, f2] of Object.entries(tries)) {
            try {
              f2();
              out[k2] = null;
            } catch (e) {
              out[k2] = e.message;
            }
          }
          result = out;
          break;
        }
        case "census":
          result = Object.fromEntries(["objects", "members", "joined", "usage"].map((t) => [t, this.db.one(`SELECT count(*) FROM ${t}`)[0]]));
          break;
        case "fault":
          this.db.run("INSERT OR REPLACE INTO faults (one, refuse) VALUES (1, ?)", args.refuse ? 1 : 0);
          result = Number(this.db.one("SELECT n FROM refusals")?.[0] ?? 0);
          break;
        default:
          throw invalid(`unknown index operation '${op}'`);
      }
      return new Response(JSON.stringify({ result: result ?? null }), { headers: { "content-type": "application/json" } });
    } catch (e) {
      const err = internalError(e, "an index shard");
      return new Response(JSON.stringify({ error: { code: err.code, message: err.message } }), { status: 500, headers: { "content-type": "application/json" } });
    }
  }
  /** The object's row replaces what the shard had (a shard tells its root shard its name once). */
  async put(shard, row4, home) {
    await this.named(shard);
    this.ctx.storage.transactionSync(() => this.store(row4, home));
  }
  /** A shard tells its root shard its name once (so that installation-wide commands reach it). */
  async named(shard) {
    if (!this.db.one("SELECT 1 FROM self")) {
      await ask(this.env, rootOf(shard), "shard", { name: shard });
      this.db.run("INSERT OR REPLACE INTO self (one, name) VALUES (1, ?)", shard);
    }
  }
  /** A user shard: its user participates in object ID, whose row HOME holds (one row, whatever the object's size). */
  async join(shard, id, home) {
    await this.named(shard);
    this.db.run("INSERT OR REPLACE INTO joined (object_id, home) VALUES (?, ?)", id, home);
  }
  /** A root shard: the object's home row, copied (what the installation-wide commands page over), and its registry entry. */
  putRoot(row4) {
    this.ctx.storage.transactionSync(() => {
      this.store(row4, true);
      this.db.run("INSERT OR REPLACE INTO registry (id, home) VALUES (?, ?)", row4.id, homeShard(row4.scope, row4.owner));
    });
  }
  /** Tests only: N users' shard names and the home rows of their memory objects, without the objects (a
   *  seeded installation of thousands of users in a few requests; the rows match no command's filter). */
  seed(a) {
    this.ctx.storage.transactionSync(() => {
      for (const name of a.shards ?? []) this.db.run("INSERT OR IGNORE INTO shards (name) VALUES (?)", name);
      for (const row4 of a.rows ?? []) this.store(row4, true);
    });
  }
  /** Inside a transaction: the row replaces what the shard had. */
  store(row4, home) {
    this.db.run(
      `INSERT OR REPLACE INTO objects (${ROW_COLUMNS.join(", ")}, home) VALUES (${ROW_COLUMNS.map(() => "?").join(", ")}, ?)`,
      ...ROW_COLUMNS.map((c2) => row4[c2] ?? null),
      home ? 1 : 0
    );
    const had = new Map(this.db.all("SELECT user, role FROM members WHERE object_id = ?", row4.id).map((r) => [r[0], r[1]]));
    const has = new Map(row4.members);
    for (const user of had.keys()) if (!has.has(user)) this.db.run("DELETE FROM members WHERE object_id = ? AND user = ?", row4.id, user);
    for (const [user, role] of has) {
      if (had.get(user) !== role) this.db.run("INSERT OR REPLACE INTO members (object_id, user, role) VALUES (?, ?, ?)", row4.id, user, role);
    }
    this.db.run("DELETE FROM tags WHERE object_id = ?", row4.id);
    for (const [k2, v2] of row4.tags ?? []) this.db.run("INSERT INTO tags (object_id, key, value) VALUES (?, ?, ?)", row4.id, k2, v2);
    this.db.run("DELETE FROM usage WHERE object_id = ?", row4.id);
    for (const u of row4.usage ?? []) this.db.run(`INSERT INTO usage (object_id, ${USAGE_COLUMNS.join(", ")}) VALUES (?${", ?".repeat(USAGE_COLUMNS.length)})`, row4.id, ...u);
  }
  /** A page request arrives: its first answer if it has one; "pending" while another attempt runs it
   *  (the client retries busy); else it is claimed and runs (an attempt silent for PAGE_ABANDONED_MS is taken over). */
  claim(id) {
    const r = this.db.one("SELECT body, at FROM pages WHERE id = ?", id);
    if (r && r[0] !== null) return { body: r[0] };
    if (r && r[1] > now() - PAGE_ABANDONED_MS) return { pending: true };
    this.db.run("INSERT OR REPLACE INTO pages (id, body, at) VALUES (?, NULL, ?)", id, now());
    return {};
  }
  drop(id) {
    this.ctx.storage.transactionSync(() => {
      for (const t of ["objects WHERE id", "members WHERE object_id", "usage WHERE object_id", "tags WHERE object_id", "registry WHERE id", "joined WHERE object_id"]) this.db.run(`DELETE FROM ${t} = ?`, id);
    });
  }
  list(f2) {
    const [where, params] = whereOf(f2);
    const order = f2.after_id != null ? "o.id" : f2.pending_due != null ? "o.pending_at, o.id" : "o.last_active_at DESC, o.id DESC";
    let sql = `SELECT ${ROW_COLUMNS.map((c2) => "o." + c2).join(", ")}, (SELECT total(u.cost_usd) FROM usage u WHERE u.object_id = o.id) FROM objects o WHERE ${where.join(" AND ")} ORDER BY ${order}`;
    if (f2.limit != null) {
      sql += " LIMIT ?";
      params.push(f2.limit);
    }
    const rows = [];
    for (const r of this.db.iter(sql, ...params)) {
      const row4 = {};
      ROW_COLUMNS.forEach((c2, i) => row4[c2] = r[i]);
      row4.cost_given_usd = r[ROW_COLUMNS.length] ?? 0;
      row4.members = [...this.db.iter("SELECT user, role FROM members WHERE object_id = ? ORDER BY user", row4.id)].map((m) => [m[0], m[1]]);
      row4.tags = [...this.db.iter("SELECT key, value FROM tags WHERE object_id = ? ORDER BY key", row4.id)].map((t) => [t[0], t[1]]);
      rows.push(row4);
    }
    return rows;
  }
  /** Usage groups over the selected objects (across/usage.py's query), with each session group's last activity for merging. */
  usage(f2, by, newerDay) {
    try {
      return this.usageGroups(f2, by, newerDay);
    } catch (e) {
      if (/integer overflow/.test(String(e.message))) throw overflow();
      throw e;
    }
  }
  /** The usage groups of one page of objects: at most F.limit of those F selects, in id order after F.after_id
   *  (docs/reference/remote.md §13: usage answers one page of groups), with the page's total, its object count and last id. */
  usageGroups(f2, by, newerDay) {
    const [where, params] = whereOf(f2);
    const page = `SELECT o.id, o.name, o.owner, o.last_active_at FROM objects o WHERE ${where.join(" AND ")} ORDER BY o.id LIMIT ?`;
    params.push(f2.limit ?? -1);
    const [objects, last] = this.db.one(`SELECT count(*), max(id) FROM (${page})`, ...params);
    if (newerDay !== null) params.push(newerDay);
    const source = `FROM usage u JOIN (${page}) o ON o.id = u.object_id${newerDay !== null ? " WHERE u.day >= ?" : ""}`;
    let groups;
    const column = by === "session" ? "u.object_id" : by === "day" ? "u.day" : by === "model" ? "u.model" : "u.day, u.model";
    const keyOf = (r) => by === "day_model" ? [JSON.stringify([r[0], r[1] ?? null]), 2] : [r[0], 1];
    if (by === "day_model") {
      groups = this.db.all(`SELECT ${column}, ${SUMS} ${source} GROUP BY ${column}`, ...params).map((r) => ({ key: keyOf(r)[0], ...fields(r.slice(2)) }));
    } else if (by === "session") {
      groups = this.db.all(`SELECT u.object_id, o.name, o.owner, max(o.last_active_at), ${SUMS} ${source} GROUP BY u.object_id`, ...params).map((r) => ({ key: r[0], name: r[1], owner: r[2], last_active_at: r[3], ...fields(r.slice(4)) }));
    } else {
      groups = this.db.all(`SELECT ${column}, ${SUMS} ${source} GROUP BY ${column}`, ...params).map((r) => ({ key: r[0], ...fields(r.slice(1)) }));
    }
    const byKey2 = new Map(groups.map((g2) => [g2.key, g2]));
    for (const g2 of groups) g2.priced = [];
    const grouped = by === "day_model" ? column : `${column}, u.model`;
    for (const r of this.db.all(`SELECT ${column}, u.model, ${PRICED} ${source} GROUP BY ${grouped} HAVING sum(u.uncosted_rows) > 0`, ...params)) {
      const [k2, width] = keyOf(r);
      byKey2.get(k2)?.priced.push(r.slice(width).map((v2, i) => i === 0 ? v2 : String(v2 ?? 0)));
    }
    const total = this.db.one(`SELECT ${SUMS} ${source}`, ...params);
    return { groups, total: fields(total ?? []), objects: Number(objects), last };
  }
};
function rootOf(shard) {
  let h = 0;
  for (const ch of shard) h = h * 31 + ch.codePointAt(0) >>> 0;
  return `root:${ROOTS[h % ROOTS.length]}`;
}
var ROOT_SHARDS = [...ROOTS].map((x2) => `root:${x2}`);
async function rootsPage(env, filter, after, limit) {
  const out = [];
  const first = after ? ROOTS.indexOf(after[0]) : 0;
  for (let i = Math.max(first, 0); i < ROOTS.length && out.length < limit; i++) {
    const from = i === first ? after : "";
    out.push(...await ask(env, ROOT_SHARDS[i], "list", { filter: { ...filter, after_id: from, limit: limit - out.length } }));
  }
  return out;
}
function newestFirst(a, b2) {
  return b2.last_active_at - a.last_active_at || (a.id < b2.id ? 1 : a.id > b2.id ? -1 : 0);
}
var LIST_PAGE = 200;
async function select(env, opts, filter, before = null) {
  const n = Math.min(filter.limit ?? LIST_PAGE, LIST_PAGE);
  if (n <= 0) return { rows: [], next: null };
  let lists2;
  if (opts.all) {
    lists2 = await Promise.all(ROOT_SHARDS.map((s3) => ask(env, s3, "list", { filter: { ...filter, home_only: true, before, limit: n } })));
  } else {
    if (!opts.user) throw invalid("no user to list the objects of");
    lists2 = await memberLists(env, opts.user, { ...filter, before, limit: n });
  }
  const merged = lists2.flat().sort(newestFirst);
  const rows = merged.slice(0, n);
  const more = merged.length > n || lists2.some((l) => l.length === n) && rows.length > 0;
  const last = rows[rows.length - 1];
  return { rows, next: more ? [last.last_active_at, last.id] : null };
}
async function listObjects(env, opts) {
  return (await memberLists(env, opts.user, { limit: opts.limit })).flat().sort(newestFirst).slice(0, opts.limit);
}
async function memberShards(env, user, tenant = null) {
  const homes = await ask(env, `user:${user}`, "homes");
  return [`user:${user}`, ...homes.filter((h) => tenant == null || h === `tenant:${tenant}`)];
}
async function memberLists(env, user, filter) {
  const shards = await memberShards(env, user, filter.tenant ?? null);
  return Promise.all(shards.map((s3) => ask(env, s3, "list", { filter: { member: user, ...filter, home_only: true } })));
}

// src/across.ts
var receipt = (dry_run = false) => ({ deleted: [], skipped: [], changed: [], dry_run });
var entry = (row4, extra = {}) => ({ id: row4.id, owner: row4.owner ?? null, name: row4.name ?? null, ...extra });
var byId = (a, b2) => a.id < b2.id ? -1 : a.id > b2.id ? 1 : 0;
var PARALLEL = 8;
var PAGE = 100;
var ROOTS_SOURCE = "roots";
async function pageOf(env, sources, after) {
  const lists2 = await Promise.all(sources.map(([s3, f2]) => s3 === ROOTS_SOURCE ? rootsPage(env, f2, after, PAGE) : ask(env, s3, "list", { filter: { ...f2, after_id: after, limit: PAGE } })));
  const seen = /* @__PURE__ */ new Map();
  for (const r of lists2.flat()) if (!seen.has(r.id)) seen.set(r.id, r);
  const all = [...seen.values()].sort(byId);
  const rows = all.slice(0, PAGE);
  const more = all.length > PAGE || lists2.some((l) => l.length === PAGE);
  return { rows, next: more && rows.length ? rows[rows.length - 1].id : null };
}
async function once(env, who2, run) {
  const id = who2.request_id;
  if (!id) return run();
  const root = rootOf(`page:${id}`);
  const claim2 = await ask(env, root, "claim", { id });
  if (claim2.body !== void 0) return JSON.parse(claim2.body);
  if (claim2.pending) throw Object.assign(new DurableError("this request is still running; try again shortly", "busy"), { retryable: true });
  let result;
  try {
    result = await run();
  } catch (e) {
    await ask(env, root, "unclaim", { id }).catch(() => void 0);
    throw e;
  }
  await ask(env, root, "settle", { id, body: JSON.stringify(result) });
  return result;
}
function asUser(who2, user) {
  const u = user ?? who2.actor;
  if (!who2.admin && u !== who2.token_user) {
    throw denied(`this token acts as user "${who2.token_user}", not "${u}"; use an admin token to act as another user`);
  }
  return u;
}
function adminOnly(who2, what) {
  if (!who2.admin) throw denied(`'${what}' covers the whole installation and needs an admin token`);
}
async function each(rows, fn) {
  const out = new Array(rows.length);
  let next = 0;
  const worker = async () => {
    while (next < rows.length) {
      const i = next++;
      out[i] = await fn(rows[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, rows.length) }, worker));
  return out;
}
async function onObject(env, row4, op, args, out) {
  let r;
  try {
    r = await system(env, row4, op, args);
  } catch (e) {
    const reason = e instanceof DurableError && e.code !== "busy" ? e.message : "busy";
    out.skipped.push(entry(row4, { reason }));
    return null;
  }
  if (r && r.absent) {
    await dropGhost(env, row4);
    return null;
  }
  return r;
}
async function dropGhost(env, row4) {
  const where = /* @__PURE__ */ new Set([...shardsOf(row4), homeShard(row4.scope, row4.owner)]);
  await Promise.all([...where].map((s3) => ask(env, s3, "drop", { id: row4.id })));
  await ask(env, `root:${row4.id[0]}`, "unregister", { id: row4.id });
}
function record(out, r) {
  if (r?.deleted) out.deleted.push(r.deleted);
  if (r?.changed) out.changed.push(r.changed);
}
function tagFilter(given) {
  return (given ?? []).map((pair) => {
    if (pair.length !== 2) throw invalid("a tag filter is [KEY, VALUE or null]");
    const key = validKey(pair[0]);
    return [key, pair[1] == null ? null : validValue(key, pair[1])];
  });
}
async function across(env, who2, op, given) {
  const args = (_2) => given;
  switch (op) {
    case "ls": {
      const a = args("ls");
      const user = asUser(who2, a.user);
      return select(env, { user }, {
        statuses: a.statuses ?? [],
        all_objects: !!a.all_objects,
        older_than: a.older_than ?? null,
        tenant: who2.tenant,
        limit: a.limit ?? null,
        tags: tagFilter(a.tags)
      }, a.before ?? null);
    }
    case "rows": {
      const a = args("rows");
      if (a.all) adminOnly(who2, "--all");
      const filter = { reserved: !!a.reserved, expired: !!a.expired, tenant: who2.tenant };
      if (!a.all) return select(env, { user: asUser(who2, a.user) }, filter, a.before ?? null);
      const before = a.before;
      const after = before != null && typeof before === "object" && typeof before.after === "string" ? before.after : "";
      const rows = await rootsPage(env, { ...filter, home_only: true }, after, LIST_PAGE);
      return { rows, next: rows.length === LIST_PAGE ? { after: rows[rows.length - 1].id } : null };
    }
    case "pending": {
      const limit = Math.min(Math.max(Number(args("pending").limit) || 8, 1), 100);
      const lists2 = await memberLists(env, who2.actor, { pending_due: now(), tenant: who2.tenant, all_objects: true, limit });
      return lists2.flat().sort((x2, y2) => (x2.pending_at ?? 0) - (y2.pending_at ?? 0) || byId(x2, y2)).slice(0, limit);
    }
    case "usage":
      return usage(env, who2, args("usage"));
    case "purge": {
      const a = args("purge");
      return a.dry_run ? purge(env, who2, a) : once(env, who2, () => purge(env, who2, a));
    }
    case "sweep":
      return once(env, who2, () => sweep(env, who2, args("sweep")));
    case "forget": {
      const a = args("forget");
      return a.dry_run ? forget(env, who2, a) : once(env, who2, () => forget(env, who2, a));
    }
    case "reindex":
      return once(env, who2, () => reindex(env, who2, args("reindex")));
    case "fault": {
      const a = args("fault");
      adminOnly(who2, "fault");
      if (env.DURABLE_DEV_FAULTS !== "1") throw invalid("faults are a test hook of 'durable remote dev' only");
      if (a.shard === "auth:0" && a.stale_seconds != null) return devRevocationFault(!!a.refuse, a.stale_seconds * 1e3, Date.now()), null;
      return ask(env, a.shard, a.wipe ? "wipe" : "fault", { refuse: !!a.refuse });
    }
    case "seed":
      return seed(env, who2, args("seed"));
    // tests only, as "fault"
    case "census": {
      adminOnly(who2, "census");
      if (env.DURABLE_DEV_FAULTS !== "1") throw invalid("census is a test hook of 'durable remote dev' only");
      return Promise.all(args("census").shards.map((s3) => ask(env, s3, "census")));
    }
    case "subrequests": {
      adminOnly(who2, "subrequests");
      if (env.DURABLE_DEV_FAULTS !== "1") throw invalid("subrequest counts are a test hook of 'durable remote dev' only");
      return takeMaxSubrequests();
    }
    case "served": {
      adminOnly(who2, "served");
      if (env.DURABLE_DEV_FAULTS !== "1") throw invalid("request counts are a test hook of 'durable remote dev' only");
      return takeServed();
    }
    default:
      throw invalid(`unknown index operation '${op}'`);
  }
}
var USAGE_PAGE = 500;
var USAGE_SHARDS = 16;
async function usage(env, who2, a) {
  const everyone = !!a.everyone;
  if (everyone) adminOnly(who2, "usage --all");
  const user = everyone ? null : asUser(who2, a.user);
  const filter = { tenant: who2.tenant, tags: tagFilter(a.tags) };
  const shardsToAsk = (everyone ? ROOT_SHARDS : await memberShards(env, user, who2.tenant)).slice().sort();
  const scoped = (f2) => everyone ? { ...f2, home_only: true } : { ...f2, member: user, home_only: true };
  const given = a.cursor;
  const c2 = given != null && typeof given === "object" && typeof given.shard === "string" && typeof given.after === "string" ? { shard: given.shard, after: given.after } : null;
  if (a.session != null) {
    filter.name = a.session;
    if (c2 === null) {
      const found = await Promise.all(shardsToAsk.map((s3) => ask(env, s3, "list", { filter: scoped({ ...filter, limit: 1 }) })));
      if (!found.flat().length) throw notFound(say("search_session_not_found", { session: a.session }));
    }
  }
  const parts = [];
  let i = c2 === null ? 0 : shardsToAsk.findIndex((s3) => s3 >= c2.shard);
  if (i < 0) i = shardsToAsk.length;
  let after = c2 !== null && shardsToAsk[i] === c2.shard ? c2.after : "";
  let count = 0;
  for (let asked = 0; i < shardsToAsk.length && count < USAGE_PAGE && asked < USAGE_SHARDS; asked++) {
    const want = USAGE_PAGE - count;
    const p = await ask(
      env,
      shardsToAsk[i],
      "usage",
      { filter: scoped({ ...filter, after_id: after, limit: want }), by: a.by, newer_day: a.newer_day ?? null }
    );
    parts.push(p);
    count += p.objects;
    if (p.objects === want && p.last !== null) after = p.last;
    else [i, after] = [i + 1, ""];
  }
  const next = i < shardsToAsk.length ? { shard: shardsToAsk[i], after } : null;
  const total = {
    sessions: 0,
    turns: "0",
    tokens: "0",
    input_tokens: "0",
    output_tokens: "0",
    cost_usd: 0,
    cache_read_tokens: "0",
    cache_write_tokens: "0"
  };
  const add = (into, from) => {
    for (const k2 of USAGE) into[k2] = typeof total[k2] === "string" ? addCount(into[k2], from[k2]) : into[k2] + from[k2];
  };
  for (const p of parts) add(total, p.total);
  let groups;
  if (a.by === "session") {
    groups = parts.flatMap((p) => p.groups);
  } else {
    const merged = /* @__PURE__ */ new Map();
    for (const g2 of parts.flatMap((p) => p.groups)) {
      const m = merged.get(g2.key);
      if (!m) merged.set(g2.key, { ...g2, priced: [...g2.priced ?? []] });
      else {
        add(m, g2);
        m.priced.push(...g2.priced ?? []);
      }
    }
    groups = [...merged.values()].sort((x2, y2) => (x2.key === null ? 1 : 0) - (y2.key === null ? 1 : 0) || ((x2.key ?? "") < (y2.key ?? "") ? -1 : (x2.key ?? "") > (y2.key ?? "") ? 1 : 0));
  }
  return { groups, total, next };
}
var USAGE = ["sessions", "turns", "tokens", "input_tokens", "output_tokens", "cost_usd", "cache_read_tokens", "cache_write_tokens"];
async function purge(env, who2, a) {
  const user = a.user ?? null;
  if (user === null) adminOnly(who2, "purge without --user");
  else asUser(who2, user);
  const out = receipt(!!a.dry_run);
  const c2 = a.cursor ?? {};
  const cutoff = c2.cutoff ?? now() - a.older_than * 1e3;
  const filter = { cutoff, owner: user, tenant: who2.tenant, statuses: a.statuses ?? [], expired: true, home_only: true };
  const where = user !== null ? [`user:${user}`] : who2.tenant !== null ? [`tenant:${who2.tenant}`] : [ROOTS_SOURCE];
  const { rows, next } = await pageOf(env, where.map((s3) => [s3, filter]), c2.after ?? "");
  if (a.dry_run) out.deleted = rows.map((r) => entry(r));
  else for (const r of await each(rows, (row4) => onObject(env, row4, "purge_if", { cutoff, statuses: a.statuses ?? [] }, out))) record(out, r);
  return { ...out, next: next === null ? null : { after: next, cutoff } };
}
async function sweep(env, who2, a) {
  adminOnly(who2, "sweep");
  const out = receipt();
  const c2 = a.cursor ?? {};
  const t = c2.t ?? now();
  const draftBefore = c2.draft_before ?? t - a.draft_expiry * 1e3;
  const phase = c2.phase ?? "alarm";
  const filter = phase === "alarm" ? { alarm_due: t, reserved: true } : { draft_before: draftBefore };
  const { rows, next } = await pageOf(env, [[ROOTS_SOURCE, { ...filter, home_only: true, expired: true }]], c2.after ?? "");
  const args = phase === "alarm" ? { kind: "alarm" } : { kind: "draft", draft_before: draftBefore };
  for (const r of await each(rows, (row4) => onObject(env, row4, "sweep", args, out))) record(out, r);
  const cursor = next !== null ? { phase, after: next, t, draft_before: draftBefore } : phase === "alarm" ? { phase: "draft", after: "", t, draft_before: draftBefore } : null;
  return { ...out, next: cursor };
}
async function forget(env, who2, a) {
  const user = asUser(who2, a.user);
  const out = receipt(!!a.dry_run);
  const c2 = a.cursor ?? {};
  const wanted = (r) => r.owner === user && ["user", "session", "reserved"].includes(r.scope) || r.scope === "tenant" && r.members.some(([u]) => u === user);
  const sources = [[`user:${user}`, { reserved: true, expired: true }]];
  for (const home of (await memberShards(env, user)).slice(1)) sources.push([home, { member: user, home_only: true, expired: true }]);
  if (who2.admin) {
    sources.push([ROOTS_SOURCE, { member: user, home_only: true, expired: true }]);
  }
  const page = await pageOf(env, sources, c2.after ?? "");
  const found = /* @__PURE__ */ new Map();
  for (const r of page.rows) if (wanted(r)) found.set(r.id, r);
  const reserved = await who2.reservedId(user);
  if (page.next === null && !found.has(reserved)) {
    found.set(reserved, { id: reserved, scope: "reserved", owner: user, name: "", members: [] });
  }
  const rows = [...found.values()].sort(byId);
  const next = (skipped2) => page.next === null ? null : { after: page.next, skipped: skipped2 };
  if (a.dry_run) {
    for (const r of rows) {
      if (r.scope === "reserved" && r.id === reserved && !r.status) continue;
      const others = r.scope === "tenant" && r.members.some(([u]) => u !== user);
      if (others) out.changed.push(entry(r, { what: "participant removed" }));
      else out.deleted.push(entry(r));
    }
    return { ...out, next: next(0) };
  }
  for (const r of await each(rows, (row4) => onObject(env, row4, row4.scope === "tenant" ? "leave" : "erase", { user }, out))) record(out, r);
  const skipped = (c2.skipped ?? 0) + out.skipped.length;
  if (page.next === null && !skipped) await ask(env, `user:${user}`, "wipe");
  return { ...out, next: next(skipped) };
}
var REINDEX_PAGE = 200;
async function reindex(env, who2, a) {
  adminOnly(who2, "reindex");
  const step = a.step ?? 0;
  const after = a.after ?? "";
  const skipped = [];
  let removed = 0;
  let reindexed = 0;
  const visit = async (id, hint) => {
    const placeholder = hint ?? { id, scope: "user", owner: "", name: "" };
    let row4;
    try {
      const r = await system(env, placeholder, "reindex");
      row4 = r && !("absent" in r) ? r : null;
    } catch (e) {
      skipped.push(entry(placeholder, { reason: e instanceof DurableError && e.code !== "busy" ? e.message : "busy" }));
      return void 0;
    }
    if (row4) reindexed++;
    return row4;
  };
  let last = null;
  if (step < ROOTS.length) {
    const root = `root:${ROOTS[step]}`;
    const page = await ask(env, root, "registry", { after, limit: REINDEX_PAGE });
    await each(page, async (e) => {
      if (await visit(e.id, null) === null) {
        await ask(env, e.home, "drop", { id: e.id });
        await ask(env, root, "unregister", { id: e.id });
        removed++;
      }
    });
    last = page.length === REINDEX_PAGE ? page[page.length - 1].id : null;
  } else {
    const k2 = step - ROOTS.length;
    if (k2 >= ROOTS.length) return { reindexed, removed, skipped, next: null };
    const shard = a.shard ?? (await ask(env, ROOT_SHARDS[k2], "shards", { after: a.shard_after ?? "", limit: 1 }))[0];
    if (shard === void 0) return { reindexed, removed, skipped, next: { step: step + 1, after: "" } };
    const rows = await ask(env, shard, "list", { filter: { reserved: true, expired: true, after_id: after, limit: REINDEX_PAGE } });
    await each(rows, async (r) => {
      const row4 = await visit(r.id, r);
      if (row4 === void 0) return;
      if (row4 === null || !shardsOf(row4).includes(shard)) {
        await ask(env, shard, "drop", { id: r.id });
        if (row4 === null) await ask(env, `root:${r.id[0]}`, "unregister", { id: r.id });
        removed++;
      }
    });
    const next2 = rows.length === REINDEX_PAGE ? { step, shard, after: rows[rows.length - 1].id } : { step, shard_after: shard, after: "" };
    return { reindexed, removed, skipped, next: next2 };
  }
  const next = last !== null ? { step, after: last } : { step: step + 1, after: "" };
  return { reindexed, removed, skipped, next };
}
async function seed(env, who2, a) {
  adminOnly(who2, "seed");
  if (env.DURABLE_DEV_FAULTS !== "1") throw invalid("seeding is a test hook of 'durable remote dev' only");
  const per = new Map(ROOT_SHARDS.map((s3) => [s3, { shards: [], rows: [] }]));
  const t = now();
  for (let i = 0; i < a.users; i++) {
    const user = `${a.prefix ?? "seed"}${i}`;
    per.get(rootOf(`user:${user}`)).shards.push(`user:${user}`);
    const id = [...crypto.getRandomValues(new Uint8Array(32))].map((b2) => b2.toString(16).padStart(2, "0")).join("");
    const row4 = {
      id,
      scope: "reserved",
      owner: user,
      name: "",
      title: null,
      status: "active",
      created_at: t,
      updated_at: t,
      last_active_at: t,
      turns: 0,
      tokens: 0,
      expires_at: null,
      next_alarm_at: null,
      external_id: null,
      members: []
    };
    if (a.usage) Object.assign(row4, {
      scope: "user",
      name: "s",
      turns: 1,
      tokens: 5,
      members: [[user, "owner"]],
      usage: [[new Date(t).toISOString().slice(0, 10), "m", 1, 1, 5, 2, 3, 1e-3, 0, 0, 0, 0, 0, 0, 0]]
    });
    per.get(`root:${id[0]}`).rows.push(row4);
  }
  await Promise.all([...per].map(([s3, v2]) => ask(env, s3, "seed", v2)));
  return { users: a.users };
}

// src/generated/ops.ts
var OBJECT_OPS = {
  create: { "rule": "sessions.create", "write": true, "creates": true, "erases": false, "plain": true, "args": { "title": { "type": "string", "default": null, "check": "title" }, "ttl_seconds": { "type": "integer", "min": 1, "max": 31536e5, "default": null }, "tags": { "type": "object", "default": null, "check": "tag_set" } } },
  show: { "rule": "sessions.show", "write": false, "creates": false, "erases": false, "plain": true, "args": {} },
  prompt: { "rule": "sessions.prompt", "write": true, "creates": true, "erases": false, "plain": true, "positional": ["content"], "args": { "content": { "type": "string", "required": true }, "source": { "type": "string", "default": null }, "request_id": { "type": "string", "default": null, "check": "request_id" }, "created": { "type": "boolean", "default": false }, "waiting": { "type": "boolean", "default": false } } },
  schedule: { "rule": "schedules.create", "write": true, "creates": true, "erases": false, "plain": true, "positional": ["content"], "args": { "content": { "type": "string", "required": true }, "source": { "type": "string", "default": null }, "request_id": { "type": "string", "default": null, "check": "request_id" }, "at": { "type": "string", "default": null }, "after": { "type": "string", "default": null }, "every": { "type": "string", "default": null }, "cron": { "type": "string", "default": null }, "tz": { "type": "string", "default": null }, "created": { "type": "boolean", "default": false } } },
  schedules: { "rule": "schedules.schedules", "write": false, "creates": false, "erases": false, "plain": true, "args": {} },
  unschedule: { "rule": "schedules.unschedule", "write": true, "creates": false, "erases": false, "plain": true, "positional": ["schedule_id"], "args": { "schedule_id": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true } } },
  hook: { "rule": "hooks.create", "write": true, "creates": false, "erases": false, "plain": true, "positional": ["url"], "args": { "url": { "type": "string", "required": true }, "events": { "type": "string", "default": null }, "include_reply": { "type": "boolean", "default": false }, "secret": { "type": "string", "default": null } } },
  hooks: { "rule": "hooks.hooks", "write": false, "creates": false, "erases": false, "plain": true, "args": {} },
  unhook: { "rule": "hooks.unhook", "write": true, "creates": false, "erases": false, "plain": true, "positional": ["hook_id"], "args": { "hook_id": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true } } },
  deliveries: { "rule": "hooks.deliveries", "write": false, "creates": false, "erases": false, "plain": true, "args": { "hook_id": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "default": null }, "status": { "type": "string", "default": null }, "after": { "type": "integer", "min": 0, "max": 9223372036854776e3, "default": null } } },
  next_prompt: { "rule": "sessions.next_prompt", "write": true, "creates": false, "erases": false, "args": { "lease_seconds": { "type": "integer", "min": 1, "max": 31536e5, "required": true }, "waiting": { "type": "boolean" }, "context": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 }, "on_expiry": { "type": "string" }, "max_attempts": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 } } },
  renew: { "rule": "sessions.renew", "write": true, "creates": false, "erases": false, "plain": true, "positional": ["prompt_id"], "args": { "prompt_id": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true }, "lease_seconds": { "type": "integer", "min": 1, "max": 31536e5, "required": true }, "attempt": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "default": null, "check": "attempt" } } },
  finish: { "rule": "sessions.finish", "write": true, "creates": false, "erases": false, "parts": ["rows"], "args": { "prompt_id": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true }, "reply": { "type": "string" }, "rows": { "type": "array", "items": { "type": "object" } }, "failed": { "type": "boolean" }, "error": { "type": "string" }, "attempt": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "check": "attempt" }, "part": { "type": "object" } } },
  release: { "rule": "sessions.release", "write": true, "creates": false, "erases": false, "plain": true, "positional": ["prompt_id"], "args": { "prompt_id": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true }, "delay_seconds": { "type": "integer", "min": 0, "max": 31536e5, "default": 0 }, "not_an_attempt": { "type": "boolean", "default": false }, "attempt": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "default": null, "check": "attempt" } } },
  stop: { "rule": "sessions.stop", "write": true, "creates": false, "erases": false, "plain": true, "args": {} },
  cancel: { "rule": "sessions.cancel", "write": true, "creates": false, "erases": false, "plain": true, "args": {} },
  archive: { "rule": "sessions.archive", "write": true, "creates": false, "erases": false, "plain": true, "args": {} },
  unarchive: { "rule": "sessions.unarchive", "write": true, "creates": false, "erases": false, "plain": true, "args": {} },
  set_title: { "rule": "sessions.set_title", "write": true, "creates": false, "erases": false, "plain": true, "positional": ["title"], "args": { "title": { "type": "string", "required": true, "check": "title" } } },
  tag: { "rule": "tags.tag", "write": true, "creates": false, "erases": false, "plain": true, "check": "tag_change", "args": { "set": { "type": "object", "default": null }, "untag": { "type": "array", "items": { "type": "string" }, "default": null } } },
  tags: { "rule": "tags.tags", "write": false, "creates": false, "erases": false, "plain": true, "args": {} },
  invite: { "rule": "sessions.invite", "write": true, "creates": false, "erases": false, "plain": true, "positional": ["user", "role"], "args": { "user": { "type": "string", "required": true, "check": "user" }, "role": { "type": "enum", "values": ["owner", "member"], "default": "member", "check": "participant_role" } } },
  dequeue: { "rule": "sessions.dequeue", "write": true, "creates": false, "erases": false, "plain": true, "positional": ["prompt_id"], "args": { "prompt_id": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true } } },
  queue: { "rule": "sessions.queue", "write": false, "creates": false, "erases": false, "plain": true, "args": { "pending_only": { "type": "boolean", "default": false } } },
  events: { "rule": "sessions.events", "write": false, "creates": false, "erases": false, "plain": true, "args": { "since": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "default": 0 } } },
  session_page: { "rule": "sessions.session_page", "write": false, "creates": false, "erases": false, "plain": true, "args": { "events_before": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "default": null } } },
  rows_before: { "rule": "transcript.rows_before", "write": false, "creates": false, "erases": false, "plain": true, "args": { "before": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "default": null }, "superseded": { "type": "boolean", "default": false }, "limit": { "type": "integer", "min": 1, "max": 200, "default": 200 } } },
  participants: { "rule": "sessions.participants", "write": false, "creates": false, "erases": false, "plain": true, "args": {} },
  get_prompt: { "rule": "sessions.get_prompt", "write": false, "creates": false, "erases": false, "plain": true, "positional": ["prompt_id"], "args": { "prompt_id": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true } } },
  append_many: { "rule": "transcript.append_many", "write": true, "creates": true, "erases": false, "parts": ["rows"], "args": { "rows": { "type": "array", "items": { "type": "object" }, "required": true }, "request_id": { "type": "string", "check": "request_id" }, "create": { "type": "boolean" }, "one": { "type": "boolean" }, "seqs_only": { "type": "boolean" }, "origin": { "type": "array", "items": { "type": "string" }, "max_items": 2 }, "part": { "type": "object" } } },
  show_transcript: { "rule": "transcript.show", "write": false, "creates": false, "erases": false, "args": { "all_rows": { "type": "boolean" }, "since": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 }, "last": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 }, "cursor": { "type": "json" } } },
  follow_start: { "rule": "transcript.follow_start", "write": false, "creates": false, "erases": false, "args": { "all_rows": { "type": "boolean" }, "since": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 }, "last": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 } } },
  rows_after: { "rule": "transcript.rows_after", "write": false, "creates": false, "erases": false, "args": { "seq": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true } } },
  stored_rows: { "rule": "transcript.stored_rows", "write": false, "creates": false, "erases": false, "args": { "last": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 }, "cursor": { "type": "json" } } },
  context_window: { "rule": "transcript.context_window", "write": false, "creates": false, "erases": false, "plain": true, "args": { "budget": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "default": null }, "limit": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "default": null }, "keep": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "default": null } } },
  pop: { "rule": "transcript.pop", "write": true, "creates": false, "erases": false, "plain": true, "positional": ["count"], "args": { "count": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "default": 1 } } },
  clear: { "rule": "transcript.clear", "write": true, "creates": false, "erases": false, "plain": true, "args": {} },
  redact: { "rule": "transcript.redact", "write": true, "creates": false, "erases": false, "plain": true, "positional": ["seq"], "args": { "seq": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true } } },
  prune: { "rule": "transcript.prune", "write": true, "creates": false, "erases": false, "plain": true, "args": { "older_than": { "type": "integer", "min": 1, "max": 31536e5, "required": true }, "dry_run": { "type": "boolean", "default": false } } },
  replace_tail: { "rule": "transcript.replace_tail", "write": true, "creates": false, "erases": false, "parts": ["rows"], "args": { "expected": { "type": "array", "items": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 }, "required": true }, "rows": { "type": "array", "items": { "type": "object" }, "required": true }, "origin": { "type": "array", "items": { "type": "string" }, "max_items": 2 }, "part": { "type": "object" } } },
  summarize: { "rule": "transcript.summarize", "write": true, "creates": false, "erases": false, "args": { "through": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true }, "text": { "type": "string", "required": true } } },
  compact: { "rule": "transcript.compact", "write": true, "creates": false, "erases": false, "args": { "max_tokens": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true }, "keep_tokens": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true }, "text": { "type": "string", "required": true } } },
  plan_summary: { "worker": "transcript.planSummary", "write": false, "creates": false, "erases": false, "args": { "through": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true } } },
  plan_compact: { "worker": "transcript.planCompact", "write": false, "creates": false, "erases": false, "args": { "max_tokens": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true }, "keep_tokens": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true } } },
  plan_rows: { "worker": "transcript.planRows", "write": false, "creates": false, "erases": false, "args": { "seqs": { "type": "array", "items": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 }, "max_items": 1e3, "required": true } } },
  commit_summary: { "worker": "transcript.commitSummary", "write": true, "creates": false, "erases": false, "parts": ["covered"], "args": { "covered": { "type": "array", "items": { "type": "array" }, "required": true }, "high": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true }, "text": { "type": "string", "required": true }, "part": { "type": "object" } } },
  fork_plan: { "worker": "fork.forkPlan", "write": false, "creates": false, "erases": false, "args": { "at": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 }, "cursor": { "type": "json" } } },
  fork_create: { "worker": "fork.forkCreate", "write": true, "creates": true, "erases": false, "parts": ["rows"], "args": { "source": { "type": "object", "required": true }, "rows": { "type": "array", "required": true }, "title": { "type": "string" }, "part": { "type": "object" } } },
  delete: { "worker": "retention.remove", "write": true, "creates": false, "erases": true, "args": {} },
  ask: { "rule": "elicit.ask", "write": true, "creates": false, "erases": false, "plain": true, "positional": ["prompt"], "args": { "prompt": { "type": "string", "required": true, "check": "prompt_text" }, "choices": { "type": "array", "items": { "type": "string" }, "max_items": 1e3, "default": [], "check": "choices" }, "timeout_seconds": { "type": "integer", "min": 1, "max": 31536e5, "default": null }, "request_id": { "type": "string", "default": null, "check": "request_id" }, "call_id": { "type": "string", "default": null }, "args": { "type": "json", "default": null }, "approve": { "type": "array", "items": { "type": "string" }, "max_items": 1e3, "default": null }, "approvers": { "type": "array", "items": { "type": "string" }, "max_items": 1e3, "default": null } } },
  decline: { "rule": "elicit.decline", "write": true, "creates": false, "erases": false, "plain": true, "positional": ["request_id", "action"], "args": { "request_id": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true }, "action": { "type": "string", "required": true }, "choice": { "type": "string", "default": null } } },
  requests: { "rule": "elicit.list_requests", "write": false, "creates": false, "erases": false, "plain": true, "args": { "pending_only": { "type": "boolean", "default": false } } },
  request: { "rule": "elicit.get", "write": false, "creates": false, "erases": false, "plain": true, "positional": ["request_id"], "args": { "request_id": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true } } },
  step_begin: { "rule": "steps.begin", "write": true, "creates": false, "erases": false, "plain": true, "args": { "key": { "type": "string", "required": true }, "token": { "type": "string", "required": true }, "prompt_id": { "type": "integer", "min": 1, "max": 9223372036854776e3, "default": null }, "attempt": { "type": "integer", "min": 1, "max": 9223372036854776e3, "default": null }, "call_id": { "type": "string", "default": null }, "args_sha256": { "type": "string", "default": null }, "approval": { "type": "integer", "min": 1, "max": 9223372036854776e3, "default": null }, "inside": { "type": "string", "default": null } } },
  step_renew: { "rule": "steps.renew", "write": true, "creates": false, "erases": false, "plain": true, "args": { "prompt_id": { "type": "integer", "min": 1, "max": 9223372036854776e3, "required": true }, "key": { "type": "string", "required": true }, "token": { "type": "string", "required": true }, "start": { "type": "integer", "min": 1, "max": 9223372036854776e3, "required": true } } },
  step_commit: { "rule": "steps.commit", "write": true, "creates": false, "erases": false, "plain": true, "args": { "prompt_id": { "type": "integer", "min": 1, "max": 9223372036854776e3, "required": true }, "key": { "type": "string", "required": true }, "token": { "type": "string", "required": true }, "start": { "type": "integer", "min": 1, "max": 9223372036854776e3, "required": true }, "exit_status": { "type": "integer", "min": 0, "max": 255, "required": true }, "stdout_bytes": { "type": "integer", "min": 0, "max": 9223372036854776e3, "required": true }, "stdout": { "type": "string", "default": null }, "output_too_large": { "type": "boolean", "default": false } } },
  step_abandon: { "rule": "steps.abandon", "write": true, "creates": false, "erases": false, "plain": true, "args": { "prompt_id": { "type": "integer", "min": 1, "max": 9223372036854776e3, "required": true }, "key": { "type": "string", "required": true }, "token": { "type": "string", "required": true } } },
  steps: { "rule": "steps.listing", "write": false, "creates": false, "erases": false, "plain": true, "args": { "prompt_id": { "type": "integer", "min": 1, "max": 9223372036854776e3, "default": null }, "cursor": { "type": "array", "items": { "type": "integer", "min": 0, "max": 9223372036854776e3 }, "max_items": 2, "default": null } } },
  step_report: { "rule": "steps.of_start", "write": false, "creates": false, "erases": false, "plain": true, "args": { "prompt_id": { "type": "integer", "min": 1, "max": 9223372036854776e3, "required": true }, "start": { "type": "integer", "min": 1, "max": 9223372036854776e3, "required": true } } },
  step_live: { "rule": "steps.still_live", "write": false, "creates": false, "erases": false, "plain": true, "args": { "prompt_id": { "type": "integer", "min": 1, "max": 9223372036854776e3, "required": true }, "key": { "type": "string", "required": true } } },
  answer: { "rule": "elicit.answer", "write": true, "creates": false, "erases": false, "plain": true, "positional": ["request_id", "choice"], "args": { "request_id": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true }, "choice": { "type": "string", "required": true }, "comment": { "type": "string", "default": null } } },
  set_fact: { "rule": "memory.set_fact", "write": true, "creates": true, "erases": false, "plain": true, "positional": ["key", "value"], "check": "fact", "args": { "key": { "type": "string", "required": true }, "value": { "type": "string", "required": true }, "source": { "type": "enum", "values": ["user", "model", "external"], "default": "user" }, "confirmed": { "type": "boolean", "default": false }, "expires_seconds": { "type": "integer", "min": 1, "max": 31536e5, "default": null } } },
  get_fact: { "rule": "memory.get_fact", "write": false, "creates": false, "erases": false, "plain": true, "positional": ["key"], "args": { "key": { "type": "string", "required": true }, "all_facts": { "type": "boolean", "default": false } } },
  facts: { "rule": "memory.list_facts", "write": false, "creates": false, "erases": false, "plain": true, "args": { "all_facts": { "type": "boolean", "default": false } } },
  confirm_fact: { "rule": "memory.confirm", "write": true, "creates": false, "erases": false, "plain": true, "positional": ["key"], "args": { "key": { "type": "string", "required": true } } },
  forget_fact: { "rule": "memory.forget_fact", "write": true, "creates": false, "erases": false, "plain": true, "positional": ["key"], "args": { "key": { "type": "string", "required": true } } },
  hit: { "rule": "limits.hit", "write": true, "creates": true, "erases": false, "args": { "key": { "type": "string", "required": true }, "rate": { "type": "string", "required": true }, "n": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true }, "per": { "type": "integer", "min": 1, "max": 31536e5, "required": true }, "burst": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 } } },
  ttl: { "rule": "retention.ttl", "write": true, "creates": false, "erases": false, "args": { "seconds": { "type": "integer", "min": 1, "max": 31536e5 }, "clear": { "type": "boolean" } } },
  export: { "worker": "rights.exportObject", "write": false, "creates": false, "erases": false, "args": { "cursor": { "type": "json" } } },
  import: { "worker": "rights.importObject", "write": true, "creates": true, "erases": false, "parts": ["record.*"], "args": { "record": { "type": "object", "required": true }, "replace": { "type": "boolean" }, "keep_existing": { "type": "boolean" }, "part": { "type": "object" } } },
  search_object: { "worker": "rights.searchObject", "write": false, "creates": false, "erases": false, "args": { "query": { "type": "string", "required": true }, "fts": { "type": "boolean" }, "role": { "type": "string" }, "cutoff": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 }, "superseded": { "type": "boolean" }, "limit": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true } } },
  meta: { "write": false, "creates": false, "erases": false, "args": {} },
  tombstone: { "write": false, "creates": false, "erases": false, "args": {} },
  object_id: { "rule": "state.object_id", "write": false, "creates": false, "erases": false, "plain": true, "args": {} },
  put_checkpoint: { "rule": "checkpoints.put_checkpoint", "write": true, "creates": true, "erases": false, "parts": ["mirror"], "args": { "external_id": { "type": "string" }, "ns": { "type": "string" }, "checkpoint_id": { "type": "string", "required": true }, "parent_id": { "type": "string" }, "type": { "type": "string" }, "blob": { "type": "string" }, "metadata": { "type": "json" }, "mirror": { "type": "array", "items": { "type": "array" } }, "keep": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 }, "part": { "type": "object" } } },
  put_checkpoint_writes: { "rule": "checkpoints.put_writes", "write": true, "creates": true, "erases": false, "parts": ["writes"], "args": { "external_id": { "type": "string" }, "ns": { "type": "string" }, "checkpoint_id": { "type": "string", "required": true }, "writes": { "type": "array", "items": { "type": "array" }, "required": true }, "replace": { "type": "boolean" }, "part": { "type": "object" } } },
  checkpoint_rows: { "rule": "checkpoints.checkpoint_rows", "write": false, "creates": false, "erases": false, "args": { "ns": { "type": "string" }, "checkpoint_id": { "type": "string" }, "before": { "type": "string" }, "owned": { "type": "boolean" }, "with_writes": { "type": "boolean" }, "limit": { "type": "integer", "min": 1, "max": 9223372036854776e3 }, "page": { "type": "array", "items": { "type": "string" }, "max_items": 2 } } },
  checkpoint_writes: { "rule": "checkpoints.write_rows", "write": false, "creates": false, "erases": false, "args": { "ns": { "type": "string" }, "checkpoint_id": { "type": "string", "required": true } } },
  delete_thread: { "rule": "checkpoints.delete_thread", "write": true, "creates": false, "erases": true, "plain": true, "args": {} }
};
var INDEX_OPS = {
  ls: { "write": false, "creates": false, "erases": false, "args": { "user": { "type": "string" }, "statuses": { "type": "array", "items": { "type": "enum", "values": ["created", "active", "completed", "failed", "cancelled", "archived"] }, "max_items": 6 }, "all_objects": { "type": "boolean" }, "older_than": { "type": "integer", "min": 1, "max": 31536e5 }, "limit": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 }, "before": { "type": "json" }, "tags": { "type": "array", "items": { "type": "array" }, "max_items": 100 } } },
  rows: { "write": false, "creates": false, "erases": false, "args": { "user": { "type": "string" }, "all": { "type": "boolean" }, "reserved": { "type": "boolean" }, "expired": { "type": "boolean" }, "limit": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 }, "before": { "type": "json" } } },
  pending: { "write": false, "creates": false, "erases": false, "args": { "limit": { "type": "integer", "min": 1, "max": 100 } } },
  usage: { "write": false, "creates": false, "erases": false, "args": { "user": { "type": "string" }, "everyone": { "type": "boolean" }, "session": { "type": "string" }, "newer_day": { "type": "string" }, "by": { "type": "enum", "values": ["session", "day", "model", "day_model"] }, "cursor": { "type": "json" }, "tags": { "type": "array", "items": { "type": "array" }, "max_items": 100 } } },
  purge: { "write": true, "creates": false, "erases": true, "args": { "older_than": { "type": "integer", "min": 1, "max": 31536e5, "required": true }, "user": { "type": "string" }, "statuses": { "type": "array", "items": { "type": "enum", "values": ["created", "active", "completed", "failed", "cancelled", "archived"] }, "max_items": 6 }, "dry_run": { "type": "boolean" }, "cursor": { "type": "json" } } },
  sweep: { "write": true, "creates": false, "erases": true, "args": { "draft_expiry": { "type": "integer", "min": 1, "max": 31536e5 }, "cursor": { "type": "json" } } },
  forget: { "write": true, "creates": false, "erases": true, "args": { "user": { "type": "string", "required": true }, "dry_run": { "type": "boolean" }, "cursor": { "type": "json" } } },
  reindex: { "write": true, "creates": false, "erases": false, "args": { "step": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 }, "after": { "type": "string" }, "shard": { "type": "string" }, "shard_after": { "type": "string" } } },
  fault: { "write": true, "creates": false, "erases": false, "args": { "shard": { "type": "string", "required": true }, "refuse": { "type": "boolean" }, "wipe": { "type": "boolean" }, "stale_seconds": { "type": "integer", "min": 0, "max": 86400 } } },
  seed: { "write": true, "creates": false, "erases": false, "args": { "users": { "type": "integer", "min": 0, "max": 1e6, "required": true }, "prefix": { "type": "string" }, "usage": { "type": "boolean" } } },
  subrequests: { "write": false, "creates": false, "erases": false, "args": {} },
  served: { "write": false, "creates": false, "erases": false, "args": {} },
  census: { "write": false, "creates": false, "erases": false, "args": { "shards": { "type": "array", "items": { "type": "string" }, "max_items": 256, "required": true } } }
};
var AUTH_OPS = {
  revoke: { "write": true, "creates": false, "erases": false, "args": { "jti": { "type": "string" }, "user": { "type": "string" }, "issued_before": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 } } }
};
var OBJECTS_OPS = {
  search: { "write": false, "creates": false, "erases": false, "args": { "query": { "type": "string", "required": true }, "fts": { "type": "boolean" }, "user": { "type": "string" }, "session": { "type": "string" }, "role": { "type": "string" }, "cutoff": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3 }, "superseded": { "type": "boolean" }, "limit": { "type": "integer", "min": -9223372036854776e3, "max": 9223372036854776e3, "required": true }, "tenant": { "type": "string" } } }
};
var NONE_OPS = {
  whoami: { "write": false, "creates": false, "erases": false, "args": {} },
  limits: { "write": false, "creates": false, "erases": false, "args": {} }
};
var SCOPES = { object: OBJECT_OPS, index: INDEX_OPS, auth: AUTH_OPS, objects: OBJECTS_OPS, none: NONE_OPS };

// src/rules/args.ts
var shown = (v2) => typeof v2 === "string" ? quote(v2.length > 40 ? v2.slice(0, 37) + "..." : v2) : JSON.stringify(v2)?.slice(0, 40) ?? String(v2);
function wrong(v2, spec) {
  switch (spec.type) {
    case "integer":
      if (typeof v2 !== "number" || !Number.isInteger(v2) || v2 < (spec.min ?? -Infinity) || v2 > (spec.max ?? Infinity)) {
        return `is not an integer from ${spec.min} to ${spec.max}`;
      }
      return null;
    case "string":
      return typeof v2 === "string" ? null : "is not a string";
    case "boolean":
      return typeof v2 === "boolean" ? null : "is not true or false";
    case "enum":
      return typeof v2 === "string" && spec.values.includes(v2) ? null : `is not one of ${spec.values.join(", ")}`;
    case "object":
      return v2 !== null && typeof v2 === "object" && !Array.isArray(v2) ? null : "is not a JSON object";
    case "array": {
      if (!Array.isArray(v2)) return "is not a JSON array";
      if (spec.max_items !== void 0 && v2.length > spec.max_items) return `has ${v2.length} items, more than ${spec.max_items}`;
      if (spec.items) {
        for (let i = 0; i < v2.length; i++) {
          const why = v2[i] === null ? "is null" : wrong(v2[i], spec.items);
          if (why) return `item ${i + 1} (${shown(v2[i])}) ${why}`;
        }
      }
      return null;
    }
    default:
      return null;
  }
}
function checkArgs(scope, op, args) {
  const table = SCOPES[scope];
  if (typeof op !== "string" || !table || !Object.prototype.hasOwnProperty.call(table, op)) {
    throw invalid(`unknown operation ${quote(String(op))}${table ? "" : ` in scope ${quote(String(scope))}`}; is the client as new as the Worker?`);
  }
  if (args === void 0 || args === null) args = {};
  if (typeof args !== "object" || Array.isArray(args)) throw invalid(`the arguments of ${op} are not a JSON object`);
  const given = args;
  for (const [name, spec] of Object.entries(table[op].args)) {
    const v2 = given[name];
    if (v2 === void 0 || v2 === null) {
      if (spec.required) throw invalid(`argument ${name} of ${op} is missing`);
      continue;
    }
    const why = wrong(v2, spec);
    if (why) throw invalid(`invalid argument ${name} of ${op}: ${spec.type === "array" ? why : `${shown(v2)} ${why}`}`);
  }
}

// src/calls.ts
async function callObject(env, id, call, devFault = null, raw2 = null) {
  const stub = env.OBJECTS.get(env.OBJECTS.idFromName(id));
  try {
    if (devFault === "overloaded") throw Object.assign(new Error("Durable Object is overloaded. Too many requests queued."), { overloaded: true });
    if (devFault === "retryable" && !faulted.has(call.request_id ?? "")) {
      faulted.add(call.request_id ?? "");
      throw Object.assign(new Error("Network connection lost."), { retryable: true });
    }
    return await stub.fetch("https://object/call", raw2 === null ? { method: "POST", body: JSON.stringify(call) } : { method: "POST", body: raw2, headers: { "x-durable-call": encodeURIComponent(JSON.stringify(call)) } });
  } catch (e) {
    const err = e;
    if (err.overloaded) throw new DurableError(`the object is overloaded (${err.message}); try again later`, "busy");
    throw Object.assign(new DurableError(`the object did not answer: ${err.message}`, "busy"), { retryable: err.retryable === true });
  }
}
var faulted = /* @__PURE__ */ new Set();

// src/search.ts
var MAX_OBJECTS = 1e3;
var PARALLEL2 = 32;
var MAX_LISTED = 20 * MAX_OBJECTS;
async function searchAll(env, op, args, actor, admin, list) {
  if (op !== "search") throw invalid(`unknown operation '${op}' across objects`);
  const a = args ?? {};
  const user = a.user == null ? actor : validName(a.user, "user");
  if (user !== actor && !admin) throw denied(`searching the sessions of user "${user}" needs an admin token or their own`);
  const limit = a.limit;
  if (!Number.isInteger(limit) || limit < 0) throw invalid(say("limit_negative"));
  const t = now();
  const tenant = a.tenant == null ? null : validName(a.tenant, "tenant");
  const all = await list(env, { user, limit: MAX_LISTED + 1 });
  if (all.length > MAX_LISTED) throw invalid(`this search spans more than ${MAX_LISTED} sessions; narrow it with --session or --newer-than`);
  const listed = all.filter((r) => (r.expires_at === null || r.expires_at > t) && (tenant === null || r.scope === "tenant" && r.owner === tenant));
  if (a.session != null && !listed.some((r) => r.name === a.session)) {
    throw new DurableError(say("search_session_not_found", { session: a.session }), "not_found");
  }
  const rows = listed.filter((r) => r.turns > 0 && (a.session == null || r.name === a.session) && (a.cutoff == null || r.last_active_at >= a.cutoff));
  const skipped = [];
  if (limit === 0) return { hits: [], skipped };
  if (rows.length > MAX_OBJECTS) {
    throw invalid(`this search spans ${rows.length} sessions, more than the ${MAX_OBJECTS} one request may reach; narrow it with --session or --newer-than`);
  }
  const found = [];
  const one = async (r) => {
    const call = {
      op: "search_object",
      args: { query: a.query, fts: !!a.fts, role: a.role ?? null, cutoff: a.cutoff ?? null, superseded: !!a.superseded, limit },
      address: { id_scope: r.scope === "tenant" || r.scope === "reserved" ? r.scope : "user", owner: r.owner, name: r.name, scope: r.scope },
      actor: user,
      id: r.id,
      create: false,
      request_id: null,
      all_users: false,
      config: DEFAULT_CONFIG
    };
    let doc;
    try {
      doc = await (await callObject(env, r.id, call)).json();
    } catch (e) {
      skipped.push({ id: r.id, owner: r.owner, name: r.name, reason: "busy" });
      return;
    }
    if (doc.error) {
      if (doc.error.code === "not_found") return;
      if (doc.error.code === "invalid_input") throw new DurableError(doc.error.message, "invalid_input");
      skipped.push({ id: r.id, owner: r.owner, name: r.name, reason: doc.error.code === "busy" ? "busy" : doc.error.message });
      return;
    }
    const res = doc.result;
    for (const h of res.hits) {
      found.push({
        key: [h.rank, -res.last_active_at, res.name, h.seq, res.id],
        hit: { name: res.name, id: res.id, seq: h.seq, role: h.role, created_at: iso(h.created_at), snippet: h.snippet }
      });
    }
  };
  for (let i = 0; i < rows.length; i += PARALLEL2) await Promise.all(rows.slice(i, i + PARALLEL2).map(one));
  found.sort((x2, y2) => compare(x2.key, y2.key));
  return { hits: found.slice(0, limit).map((f2) => f2.hit), skipped };
}
function compare(x2, y2) {
  for (let i = 0; i < x2.length; i++) {
    const [a, b2] = [x2[i], y2[i]];
    if (typeof a === "string" && typeof b2 === "string") {
      const [ca, cb] = [[...a].map((c2) => c2.codePointAt(0)), [...b2].map((c2) => c2.codePointAt(0))];
      for (let j2 = 0; j2 < Math.min(ca.length, cb.length); j2++) if (ca[j2] !== cb[j2]) return ca[j2] - cb[j2];
      if (ca.length !== cb.length) return ca.length - cb.length;
    } else if (a !== b2) return a < b2 ? -1 : 1;
  }
  return 0;
}

// src/rate.ts
var MINUTE_MS = 6e4;
var RATE_TABLE = "CREATE TABLE IF NOT EXISTS _durable_rate (jti TEXT PRIMARY KEY, tokens REAL NOT NULL, at INTEGER NOT NULL)";
function take(sql, jti, limit, at) {
  sql.exec(RATE_TABLE);
  const row4 = sql.exec("SELECT tokens, at FROM _durable_rate WHERE jti = ?", jti).toArray()[0];
  const refill = limit / MINUTE_MS;
  const tokens = row4 ? Math.min(limit, row4.tokens + Math.max(0, at - row4.at) * refill) : limit;
  sql.exec("DELETE FROM _durable_rate WHERE at < ? AND jti != ?", at - MINUTE_MS, jti);
  if (tokens < 1) {
    sql.exec("INSERT OR REPLACE INTO _durable_rate (jti, tokens, at) VALUES (?, ?, ?)", jti, tokens, at);
    return Math.max(1, Math.ceil((1 - tokens) / refill / 1e3));
  }
  sql.exec("INSERT OR REPLACE INTO _durable_rate (jti, tokens, at) VALUES (?, ?, ?)", jti, tokens - 1, at);
  return null;
}
function limited(limit, retryAfter) {
  return Object.assign(new DurableError(
    `this token is over its rate limit of ${limit} requests a minute (DURABLE_RATE_LIMIT); retry after ${retryAfter} s; nothing was done`,
    "rate_limited"
  ), { status: 429, retryAfter });
}

// src/raw.ts
var RAW_AT = 1024 * 1024;
var QUOTE2 = 34;
var BACKSLASH2 = 92;
var COLON = 58;
var COMMA2 = 44;
var OPEN = /* @__PURE__ */ new Set([123, 91]);
var CLOSE = /* @__PURE__ */ new Set([125, 93]);
var notJson = () => invalid("the request body is not JSON");
var decoder = () => new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
function space(b2, i) {
  while (i < b2.length && (b2[i] === 32 || b2[i] === 10 || b2[i] === 13 || b2[i] === 9)) i++;
  return i;
}
function skipString(b2, i) {
  for (i++; i < b2.length; i++) {
    if (b2[i] === BACKSLASH2) i++;
    else if (b2[i] === QUOTE2) return i + 1;
  }
  throw notJson();
}
function skipValue(b2, i) {
  if (b2[i] === QUOTE2) return skipString(b2, i);
  if (OPEN.has(b2[i])) {
    let depth = 0;
    while (i < b2.length) {
      if (b2[i] === QUOTE2) {
        i = skipString(b2, i);
        continue;
      }
      if (OPEN.has(b2[i])) depth++;
      else if (CLOSE.has(b2[i]) && --depth === 0) return i + 1;
      i++;
    }
    throw notJson();
  }
  const start = i;
  while (i < b2.length && b2[i] !== COMMA2 && !CLOSE.has(b2[i]) && space(b2, i) === i) i++;
  if (i === start) throw notJson();
  return i;
}
function text(b2) {
  try {
    return decoder().decode(b2);
  } catch {
    throw invalid("the request body is not valid UTF-8");
  }
}
function envelope(body) {
  let i = space(body, 0);
  if (body[i] !== 123) throw invalid("the request body is not a JSON object");
  const out = {};
  let sawArgs = false;
  i = space(body, i + 1);
  if (body[i] === 125) i++;
  else for (; ; ) {
    if (body[i] !== QUOTE2) throw notJson();
    const keyEnd = skipString(body, i);
    const key = JSON.parse(text(body.subarray(i, keyEnd)));
    if (Object.prototype.hasOwnProperty.call(out, key) || key === "args" && sawArgs) {
      throw invalid(`invalid request body: ${say("json_duplicate_key", { key })}`);
    }
    i = space(body, keyEnd);
    if (body[i] !== COLON) throw notJson();
    const start = space(body, i + 1);
    const end = skipValue(body, start);
    if (key === "args") sawArgs = true;
    else {
      const value = text(body.subarray(start, end));
      const why = scan(value, MAX_DEPTH, void 0, true);
      if (why !== null) throw invalid(`invalid request body: ${why}`);
      try {
        out[key] = JSON.parse(value);
      } catch {
        throw notJson();
      }
    }
    i = space(body, end);
    if (body[i] === COMMA2) {
      i = space(body, i + 1);
      continue;
    }
    if (body[i] !== 125) throw notJson();
    i++;
    break;
  }
  if (space(body, i) !== body.length) throw notJson();
  return out;
}
function rawArgs(bytes2, op) {
  const body = text(bytes2);
  const why = scan(body, MAX_DEPTH + ENVELOPE_DEPTH, void 0, true);
  if (why !== null) throw invalid(`invalid request body: ${why}`);
  let parsed;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw notJson();
  }
  checkArgs("object", op, parsed.args);
  return parsed.args ?? {};
}

// src/generated/schema.json
var schema_default = {
  migrations: [
    {
      name: "initial",
      statements: [
        "CREATE TABLE IF NOT EXISTS object ( one INTEGER PRIMARY KEY CHECK (one = 1), id TEXT NOT NULL, scope TEXT NOT NULL, owner TEXT NOT NULL, name TEXT NOT NULL, title TEXT, status TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, last_active_at INTEGER NOT NULL, ttl_seconds INTEGER, expires_at INTEGER, live_turns INTEGER NOT NULL DEFAULT 0, live_tokens INTEGER NOT NULL DEFAULT 0 );",
        "CREATE TABLE IF NOT EXISTS participants ( user TEXT PRIMARY KEY, role TEXT NOT NULL, joined_at INTEGER NOT NULL );",
        "CREATE TABLE IF NOT EXISTS prompts ( id INTEGER PRIMARY KEY AUTOINCREMENT, status TEXT NOT NULL, content TEXT NOT NULL, author TEXT, source TEXT, request_id TEXT UNIQUE, turn_seq INTEGER, created_at INTEGER NOT NULL, started_at INTEGER, lease_expires_at INTEGER, completed_at INTEGER, error TEXT );",
        "CREATE INDEX IF NOT EXISTS prompts_by_status ON prompts (status, id);",
        "CREATE TABLE IF NOT EXISTS turns ( seq INTEGER PRIMARY KEY AUTOINCREMENT, role TEXT NOT NULL, content TEXT NOT NULL, tokens INTEGER NOT NULL, author TEXT, created_at INTEGER NOT NULL, kind TEXT NOT NULL DEFAULT 'turn', superseded_by INTEGER, covers_first INTEGER, covers_last INTEGER, call_id TEXT, request_id TEXT UNIQUE, pos INTEGER AS (CASE WHEN kind = 'summary' THEN covers_first ELSE seq END) VIRTUAL );",
        "CREATE INDEX IF NOT EXISTS turns_live_by_pos ON turns (pos) WHERE superseded_by IS NULL;",
        "CREATE INDEX IF NOT EXISTS turns_by_created ON turns (created_at);",
        "CREATE TABLE IF NOT EXISTS events ( seq INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, actor TEXT, data TEXT NOT NULL, at INTEGER NOT NULL );",
        "CREATE TABLE IF NOT EXISTS requests ( id INTEGER PRIMARY KEY AUTOINCREMENT, status TEXT NOT NULL, prompt TEXT NOT NULL, choices TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER, answer TEXT, comment TEXT, answered_by TEXT, answered_at INTEGER );",
        "CREATE TABLE IF NOT EXISTS facts ( key TEXT PRIMARY KEY, value TEXT NOT NULL, source TEXT NOT NULL, confirmed INTEGER NOT NULL, created_at INTEGER NOT NULL, confirmed_at INTEGER, expires_at INTEGER );",
        "CREATE TABLE IF NOT EXISTS buckets ( key TEXT PRIMARY KEY, tokens REAL NOT NULL, updated_at INTEGER NOT NULL );"
      ]
    },
    {
      name: "rows hold what agents write",
      statements: [
        "ALTER TABLE turns ADD COLUMN tool_calls TEXT;",
        "ALTER TABLE turns ADD COLUMN name TEXT;",
        "ALTER TABLE turns ADD COLUMN meta TEXT;",
        "ALTER TABLE turns ADD COLUMN data TEXT;",
        "ALTER TABLE turns ADD COLUMN forked_from TEXT;",
        "ALTER TABLE turns ADD COLUMN request_hash TEXT;",
        "ALTER TABLE turns ADD COLUMN request_last INTEGER;",
        "CREATE INDEX IF NOT EXISTS turns_by_call ON turns (call_id) WHERE call_id IS NOT NULL;",
        "CREATE INDEX IF NOT EXISTS prompts_by_turn ON prompts (turn_seq) WHERE turn_seq IS NOT NULL;"
      ]
    },
    {
      name: "adapters keep the framework's id",
      statements: [
        "ALTER TABLE object ADD COLUMN external_id TEXT;",
        "ALTER TABLE object ADD COLUMN adapter TEXT;"
      ]
    },
    {
      name: "langgraph checkpoints",
      statements: [
        "CREATE TABLE IF NOT EXISTS lg_checkpoints ( checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL, parent_checkpoint_id TEXT, type TEXT, checkpoint BLOB, metadata TEXT NOT NULL, PRIMARY KEY (checkpoint_ns, checkpoint_id) ) WITHOUT ROWID;",
        "CREATE TABLE IF NOT EXISTS lg_writes ( checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, task_path TEXT NOT NULL DEFAULT '', idx INTEGER NOT NULL, channel TEXT NOT NULL, type TEXT, value BLOB, PRIMARY KEY (checkpoint_ns, checkpoint_id, task_id, idx) ) WITHOUT ROWID;",
        "CREATE TABLE IF NOT EXISTS lg_mirrored (message_id TEXT PRIMARY KEY, seq INTEGER) WITHOUT ROWID;"
      ]
    },
    {
      name: "full-text search index",
      statements: [
        "CREATE VIRTUAL TABLE IF NOT EXISTS turns_fts USING fts5( content, arguments, tokenize='unicode61 remove_diacritics 2' );",
        "CREATE TRIGGER IF NOT EXISTS turns_fts_insert AFTER INSERT ON turns BEGIN INSERT INTO turns_fts (rowid, content, arguments) VALUES (NEW.seq, NEW.content, (SELECT group_concat(json_extract(value, '$.arguments'), char(10)) FROM json_each(NEW.tool_calls))); END;",
        "CREATE TRIGGER IF NOT EXISTS turns_fts_delete AFTER DELETE ON turns BEGIN DELETE FROM turns_fts WHERE rowid = OLD.seq; END;",
        "CREATE TRIGGER IF NOT EXISTS turns_fts_update AFTER UPDATE OF content, tool_calls ON turns BEGIN UPDATE turns_fts SET content = NEW.content, arguments = (SELECT group_concat(json_extract(value, '$.arguments'), char(10)) FROM json_each(NEW.tool_calls)) WHERE rowid = NEW.seq; END;",
        "INSERT INTO turns_fts (rowid, content, arguments) SELECT seq, content, (SELECT group_concat(json_extract(value, '$.arguments'), char(10)) FROM json_each(turns.tool_calls)) FROM turns;"
      ]
    },
    {
      name: "usage totals per day and model",
      statements: [
        "CREATE TABLE IF NOT EXISTS usage_totals ( key TEXT PRIMARY KEY, day TEXT NOT NULL, model TEXT, rows INTEGER NOT NULL, turns INTEGER NOT NULL, tokens INTEGER NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL );",
        "CREATE TRIGGER IF NOT EXISTS usage_insert AFTER INSERT ON turns WHEN NEW.forked_from IS NULL BEGIN INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd) SELECT day || coalesce('=' || model, ''), day, model, +1, +turns, +tokens, +input_tokens, +output_tokens, +cost_usd FROM (SELECT strftime('%Y-%m-%d', NEW.created_at / 1000.0, 'unixepoch') AS day, json_extract(NEW.meta, '$.model') AS model, NEW.kind = 'turn' AS turns, NEW.tokens AS tokens, coalesce(json_extract(NEW.meta, '$.usage.input_tokens'), 0) AS input_tokens, coalesce(json_extract(NEW.meta, '$.usage.output_tokens'), 0) AS output_tokens, coalesce(json_extract(NEW.meta, '$.cost_usd'), 0) AS cost_usd) WHERE true ON CONFLICT (key) DO UPDATE SET rows = rows + excluded.rows, turns = turns + excluded.turns, tokens = tokens + excluded.tokens, input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens, cost_usd = cost_usd + excluded.cost_usd; END;",
        "CREATE TRIGGER IF NOT EXISTS usage_delete AFTER DELETE ON turns WHEN OLD.forked_from IS NULL BEGIN INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd) SELECT day || coalesce('=' || model, ''), day, model, -1, -turns, -tokens, -input_tokens, -output_tokens, -cost_usd FROM (SELECT strftime('%Y-%m-%d', OLD.created_at / 1000.0, 'unixepoch') AS day, json_extract(OLD.meta, '$.model') AS model, OLD.kind = 'turn' AS turns, OLD.tokens AS tokens, coalesce(json_extract(OLD.meta, '$.usage.input_tokens'), 0) AS input_tokens, coalesce(json_extract(OLD.meta, '$.usage.output_tokens'), 0) AS output_tokens, coalesce(json_extract(OLD.meta, '$.cost_usd'), 0) AS cost_usd) WHERE true ON CONFLICT (key) DO UPDATE SET rows = rows + excluded.rows, turns = turns + excluded.turns, tokens = tokens + excluded.tokens, input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens, cost_usd = cost_usd + excluded.cost_usd; DELETE FROM usage_totals WHERE rows <= 0; END;",
        "CREATE TRIGGER IF NOT EXISTS usage_update_old AFTER UPDATE OF tokens, meta, created_at, kind, forked_from ON turns WHEN OLD.forked_from IS NULL BEGIN INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd) SELECT day || coalesce('=' || model, ''), day, model, -1, -turns, -tokens, -input_tokens, -output_tokens, -cost_usd FROM (SELECT strftime('%Y-%m-%d', OLD.created_at / 1000.0, 'unixepoch') AS day, json_extract(OLD.meta, '$.model') AS model, OLD.kind = 'turn' AS turns, OLD.tokens AS tokens, coalesce(json_extract(OLD.meta, '$.usage.input_tokens'), 0) AS input_tokens, coalesce(json_extract(OLD.meta, '$.usage.output_tokens'), 0) AS output_tokens, coalesce(json_extract(OLD.meta, '$.cost_usd'), 0) AS cost_usd) WHERE true ON CONFLICT (key) DO UPDATE SET rows = rows + excluded.rows, turns = turns + excluded.turns, tokens = tokens + excluded.tokens, input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens, cost_usd = cost_usd + excluded.cost_usd; DELETE FROM usage_totals WHERE rows <= 0; END;",
        "CREATE TRIGGER IF NOT EXISTS usage_update_new AFTER UPDATE OF tokens, meta, created_at, kind, forked_from ON turns WHEN NEW.forked_from IS NULL BEGIN INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd) SELECT day || coalesce('=' || model, ''), day, model, +1, +turns, +tokens, +input_tokens, +output_tokens, +cost_usd FROM (SELECT strftime('%Y-%m-%d', NEW.created_at / 1000.0, 'unixepoch') AS day, json_extract(NEW.meta, '$.model') AS model, NEW.kind = 'turn' AS turns, NEW.tokens AS tokens, coalesce(json_extract(NEW.meta, '$.usage.input_tokens'), 0) AS input_tokens, coalesce(json_extract(NEW.meta, '$.usage.output_tokens'), 0) AS output_tokens, coalesce(json_extract(NEW.meta, '$.cost_usd'), 0) AS cost_usd) WHERE true ON CONFLICT (key) DO UPDATE SET rows = rows + excluded.rows, turns = turns + excluded.turns, tokens = tokens + excluded.tokens, input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens, cost_usd = cost_usd + excluded.cost_usd; END;",
        "INSERT OR REPLACE INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd) SELECT day || coalesce('=' || model, '') AS key, day, model, count(*) AS rows, sum(turns) AS turns, sum(tokens) AS tokens, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(cost_usd) AS cost_usd FROM (SELECT strftime('%Y-%m-%d', turns.created_at / 1000.0, 'unixepoch') AS day, json_extract(turns.meta, '$.model') AS model, turns.kind = 'turn' AS turns, turns.tokens AS tokens, coalesce(json_extract(turns.meta, '$.usage.input_tokens'), 0) AS input_tokens, coalesce(json_extract(turns.meta, '$.usage.output_tokens'), 0) AS output_tokens, coalesce(json_extract(turns.meta, '$.cost_usd'), 0) AS cost_usd FROM turns WHERE forked_from IS NULL) GROUP BY day, model;"
      ]
    },
    {
      name: "derived tables caught up at commit",
      statements: [
        "DROP TRIGGER IF EXISTS turns_fts_insert;",
        "DROP TRIGGER IF EXISTS usage_insert;",
        "DROP TRIGGER IF EXISTS usage_delete;",
        "DROP TRIGGER IF EXISTS usage_update_old;",
        "DROP TRIGGER IF EXISTS usage_update_new;",
        "CREATE TABLE IF NOT EXISTS turns_mark (one INTEGER PRIMARY KEY CHECK (one = 1), mark INTEGER NOT NULL);",
        "INSERT OR REPLACE INTO turns_mark (one, mark) SELECT 1, coalesce(max(seq), 0) FROM turns;",
        "CREATE TRIGGER IF NOT EXISTS usage_delete_counted AFTER DELETE ON turns WHEN OLD.forked_from IS NULL AND OLD.seq <= (SELECT mark FROM turns_mark) BEGIN INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd) SELECT day || coalesce('=' || model, ''), day, model, -1, -turns, -tokens, -input_tokens, -output_tokens, -cost_usd FROM (SELECT strftime('%Y-%m-%d', OLD.created_at / 1000.0, 'unixepoch') AS day, json_extract(OLD.meta, '$.model') AS model, OLD.kind = 'turn' AS turns, OLD.tokens AS tokens, coalesce(json_extract(OLD.meta, '$.usage.input_tokens'), 0) AS input_tokens, coalesce(json_extract(OLD.meta, '$.usage.output_tokens'), 0) AS output_tokens, coalesce(json_extract(OLD.meta, '$.cost_usd'), 0) AS cost_usd) WHERE OLD.seq <= (SELECT mark FROM turns_mark) ON CONFLICT (key) DO UPDATE SET rows = rows + excluded.rows, turns = turns + excluded.turns, tokens = tokens + excluded.tokens, input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens, cost_usd = cost_usd + excluded.cost_usd; DELETE FROM usage_totals WHERE rows <= 0; END;",
        "CREATE TRIGGER IF NOT EXISTS turns_emptied AFTER DELETE ON turns WHEN NOT EXISTS (SELECT 1 FROM turns) BEGIN UPDATE turns_mark SET mark = 0; DELETE FROM usage_totals; END;",
        "CREATE TRIGGER IF NOT EXISTS usage_update_old_counted AFTER UPDATE OF tokens, meta, created_at, kind, forked_from ON turns WHEN OLD.forked_from IS NULL AND OLD.seq <= (SELECT mark FROM turns_mark) BEGIN INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd) SELECT day || coalesce('=' || model, ''), day, model, -1, -turns, -tokens, -input_tokens, -output_tokens, -cost_usd FROM (SELECT strftime('%Y-%m-%d', OLD.created_at / 1000.0, 'unixepoch') AS day, json_extract(OLD.meta, '$.model') AS model, OLD.kind = 'turn' AS turns, OLD.tokens AS tokens, coalesce(json_extract(OLD.meta, '$.usage.input_tokens'), 0) AS input_tokens, coalesce(json_extract(OLD.meta, '$.usage.output_tokens'), 0) AS output_tokens, coalesce(json_extract(OLD.meta, '$.cost_usd'), 0) AS cost_usd) WHERE OLD.seq <= (SELECT mark FROM turns_mark) ON CONFLICT (key) DO UPDATE SET rows = rows + excluded.rows, turns = turns + excluded.turns, tokens = tokens + excluded.tokens, input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens, cost_usd = cost_usd + excluded.cost_usd; DELETE FROM usage_totals WHERE rows <= 0; END;",
        "CREATE TRIGGER IF NOT EXISTS usage_update_new_counted AFTER UPDATE OF tokens, meta, created_at, kind, forked_from ON turns WHEN NEW.forked_from IS NULL AND NEW.seq <= (SELECT mark FROM turns_mark) BEGIN INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd) SELECT day || coalesce('=' || model, ''), day, model, +1, +turns, +tokens, +input_tokens, +output_tokens, +cost_usd FROM (SELECT strftime('%Y-%m-%d', NEW.created_at / 1000.0, 'unixepoch') AS day, json_extract(NEW.meta, '$.model') AS model, NEW.kind = 'turn' AS turns, NEW.tokens AS tokens, coalesce(json_extract(NEW.meta, '$.usage.input_tokens'), 0) AS input_tokens, coalesce(json_extract(NEW.meta, '$.usage.output_tokens'), 0) AS output_tokens, coalesce(json_extract(NEW.meta, '$.cost_usd'), 0) AS cost_usd) WHERE NEW.seq <= (SELECT mark FROM turns_mark) ON CONFLICT (key) DO UPDATE SET rows = rows + excluded.rows, turns = turns + excluded.turns, tokens = tokens + excluded.tokens, input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens, cost_usd = cost_usd + excluded.cost_usd; END;"
      ]
    },
    {
      name: "search index without a copy of the text",
      statements: [
        "DROP TRIGGER IF EXISTS turns_fts_delete;",
        "DROP TRIGGER IF EXISTS turns_fts_update;",
        "DROP TABLE IF EXISTS turns_fts;",
        "CREATE VIEW IF NOT EXISTS turns_fts_source AS SELECT seq, content, CASE WHEN turns.tool_calls IS NULL THEN NULL ELSE (SELECT group_concat(json_extract(value, '$.arguments'), char(10)) FROM json_each(turns.tool_calls)) END AS arguments FROM turns;",
        "CREATE VIRTUAL TABLE turns_fts USING fts5( content, arguments, content='turns_fts_source', content_rowid='seq', tokenize='unicode61 remove_diacritics 2' );",
        "INSERT INTO turns_fts (rowid, content, arguments) SELECT seq, content, arguments FROM turns_fts_source WHERE turns_fts_source.seq <= (SELECT mark FROM turns_mark);",
        "CREATE TRIGGER IF NOT EXISTS turns_fts_forget BEFORE DELETE ON turns WHEN OLD.seq <= (SELECT mark FROM turns_mark) BEGIN INSERT INTO turns_fts (turns_fts, rowid, content, arguments) VALUES ('delete', OLD.seq, OLD.content, CASE WHEN OLD.tool_calls IS NULL THEN NULL ELSE (SELECT group_concat(json_extract(value, '$.arguments'), char(10)) FROM json_each(OLD.tool_calls)) END); END;",
        "CREATE TRIGGER IF NOT EXISTS turns_fts_rewrite AFTER UPDATE OF content, tool_calls ON turns WHEN OLD.seq <= (SELECT mark FROM turns_mark) BEGIN INSERT INTO turns_fts (turns_fts, rowid, content, arguments) VALUES ('delete', OLD.seq, OLD.content, CASE WHEN OLD.tool_calls IS NULL THEN NULL ELSE (SELECT group_concat(json_extract(value, '$.arguments'), char(10)) FROM json_each(OLD.tool_calls)) END); INSERT INTO turns_fts (rowid, content, arguments) VALUES (NEW.seq, NEW.content, CASE WHEN NEW.tool_calls IS NULL THEN NULL ELSE (SELECT group_concat(json_extract(value, '$.arguments'), char(10)) FROM json_each(NEW.tool_calls)) END); END;"
      ]
    },
    {
      name: "prompt attempts and hand-backs",
      statements: [
        "ALTER TABLE prompts ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;",
        "ALTER TABLE prompts ADD COLUMN handed_back INTEGER;",
        "ALTER TABLE prompts ADD COLUMN not_before INTEGER;",
        "ALTER TABLE prompts ADD COLUMN on_expiry TEXT;",
        "ALTER TABLE prompts ADD COLUMN max_attempts INTEGER;",
        "UPDATE prompts SET attempts = 1 WHERE started_at IS NOT NULL;"
      ]
    },
    {
      name: "prompt start numbers",
      statements: [
        "ALTER TABLE prompts ADD COLUMN start INTEGER NOT NULL DEFAULT 0;",
        "UPDATE prompts SET start = attempts;"
      ]
    },
    {
      name: "step journal and bound requests",
      statements: [
        "CREATE TABLE IF NOT EXISTS steps ( prompt_id INTEGER NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, status TEXT NOT NULL, attempt INTEGER NOT NULL, token TEXT, renewed_at INTEGER, runs INTEGER NOT NULL DEFAULT 0, replays INTEGER NOT NULL DEFAULT 0, last_replay_attempt INTEGER, exit_status INTEGER, stdout BLOB, stdout_bytes INTEGER, output_too_large INTEGER NOT NULL DEFAULT 0, redacted INTEGER NOT NULL DEFAULT 0, call_id TEXT, args_sha256 TEXT, approval INTEGER, started_at INTEGER NOT NULL, ended_at INTEGER, PRIMARY KEY (prompt_id, key) );",
        "ALTER TABLE requests ADD COLUMN call_id TEXT;",
        "ALTER TABLE requests ADD COLUMN args TEXT;",
        "ALTER TABLE requests ADD COLUMN args_sha256 TEXT;",
        "ALTER TABLE requests ADD COLUMN approve TEXT;",
        "ALTER TABLE requests ADD COLUMN approvers TEXT;"
      ]
    },
    {
      name: "tags",
      statements: [
        "CREATE TABLE IF NOT EXISTS tags (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
      ]
    },
    {
      name: "usage totals priced at answer time",
      statements: [
        "ALTER TABLE usage_totals ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;",
        "ALTER TABLE usage_totals ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;",
        "ALTER TABLE usage_totals ADD COLUMN uncosted_rows INTEGER NOT NULL DEFAULT 0;",
        "ALTER TABLE usage_totals ADD COLUMN uncosted_base INTEGER NOT NULL DEFAULT 0;",
        "ALTER TABLE usage_totals ADD COLUMN uncosted_cache_read INTEGER NOT NULL DEFAULT 0;",
        "ALTER TABLE usage_totals ADD COLUMN uncosted_cache_write INTEGER NOT NULL DEFAULT 0;",
        "ALTER TABLE usage_totals ADD COLUMN uncosted_output INTEGER NOT NULL DEFAULT 0;",
        "DROP TRIGGER IF EXISTS usage_delete_counted;",
        "DROP TRIGGER IF EXISTS usage_update_old_counted;",
        "DROP TRIGGER IF EXISTS usage_update_new_counted;",
        "CREATE TRIGGER IF NOT EXISTS usage_delete_counted AFTER DELETE ON turns WHEN OLD.forked_from IS NULL AND OLD.seq <= (SELECT mark FROM turns_mark) BEGIN INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd, cache_read_tokens, cache_write_tokens, uncosted_rows, uncosted_base, uncosted_cache_read, uncosted_cache_write, uncosted_output) SELECT day || coalesce('=' || model, ''), day, model, -1, -turns, -tokens, -input_tokens, -output_tokens, -cost_usd, -cache_read_tokens, -cache_write_tokens, -uncosted, -(uncosted * max(0, input_tokens - cache_read_tokens - cache_write_tokens)), -(uncosted * cache_read_tokens), -(uncosted * cache_write_tokens), -(uncosted * output_tokens) FROM (SELECT strftime('%Y-%m-%d', OLD.created_at / 1000.0, 'unixepoch') AS day, json_extract(OLD.meta, '$.model') AS model, OLD.kind = 'turn' AS turns, OLD.tokens AS tokens, coalesce(json_extract(OLD.meta, '$.usage.input_tokens'), 0) AS input_tokens, coalesce(json_extract(OLD.meta, '$.usage.output_tokens'), 0) AS output_tokens, coalesce(json_extract(OLD.meta, '$.cost_usd'), 0) AS cost_usd, coalesce(json_extract(OLD.meta, '$.usage.cache_read_tokens'), 0) AS cache_read_tokens, coalesce(json_extract(OLD.meta, '$.usage.cache_write_tokens'), 0) AS cache_write_tokens, coalesce(json_type(OLD.meta, '$.usage') = 'object' AND json_type(OLD.meta, '$.cost_usd') IS NULL, 0) AS uncosted) WHERE OLD.seq <= (SELECT mark FROM turns_mark) ON CONFLICT (key) DO UPDATE SET rows = rows + excluded.rows, turns = turns + excluded.turns, tokens = tokens + excluded.tokens, input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens, cost_usd = cost_usd + excluded.cost_usd, cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens, cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens, uncosted_rows = uncosted_rows + excluded.uncosted_rows, uncosted_base = uncosted_base + excluded.uncosted_base, uncosted_cache_read = uncosted_cache_read + excluded.uncosted_cache_read, uncosted_cache_write = uncosted_cache_write + excluded.uncosted_cache_write, uncosted_output = uncosted_output + excluded.uncosted_output; DELETE FROM usage_totals WHERE rows <= 0; END;",
        "CREATE TRIGGER IF NOT EXISTS usage_update_old_counted AFTER UPDATE OF tokens, meta, created_at, kind, forked_from ON turns WHEN OLD.forked_from IS NULL AND OLD.seq <= (SELECT mark FROM turns_mark) BEGIN INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd, cache_read_tokens, cache_write_tokens, uncosted_rows, uncosted_base, uncosted_cache_read, uncosted_cache_write, uncosted_output) SELECT day || coalesce('=' || model, ''), day, model, -1, -turns, -tokens, -input_tokens, -output_tokens, -cost_usd, -cache_read_tokens, -cache_write_tokens, -uncosted, -(uncosted * max(0, input_tokens - cache_read_tokens - cache_write_tokens)), -(uncosted * cache_read_tokens), -(uncosted * cache_write_tokens), -(uncosted * output_tokens) FROM (SELECT strftime('%Y-%m-%d', OLD.created_at / 1000.0, 'unixepoch') AS day, json_extract(OLD.meta, '$.model') AS model, OLD.kind = 'turn' AS turns, OLD.tokens AS tokens, coalesce(json_extract(OLD.meta, '$.usage.input_tokens'), 0) AS input_tokens, coalesce(json_extract(OLD.meta, '$.usage.output_tokens'), 0) AS output_tokens, coalesce(json_extract(OLD.meta, '$.cost_usd'), 0) AS cost_usd, coalesce(json_extract(OLD.meta, '$.usage.cache_read_tokens'), 0) AS cache_read_tokens, coalesce(json_extract(OLD.meta, '$.usage.cache_write_tokens'), 0) AS cache_write_tokens, coalesce(json_type(OLD.meta, '$.usage') = 'object' AND json_type(OLD.meta, '$.cost_usd') IS NULL, 0) AS uncosted) WHERE OLD.seq <= (SELECT mark FROM turns_mark) ON CONFLICT (key) DO UPDATE SET rows = rows + excluded.rows, turns = turns + excluded.turns, tokens = tokens + excluded.tokens, input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens, cost_usd = cost_usd + excluded.cost_usd, cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens, cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens, uncosted_rows = uncosted_rows + excluded.uncosted_rows, uncosted_base = uncosted_base + excluded.uncosted_base, uncosted_cache_read = uncosted_cache_read + excluded.uncosted_cache_read, uncosted_cache_write = uncosted_cache_write + excluded.uncosted_cache_write, uncosted_output = uncosted_output + excluded.uncosted_output; DELETE FROM usage_totals WHERE rows <= 0; END;",
        "CREATE TRIGGER IF NOT EXISTS usage_update_new_counted AFTER UPDATE OF tokens, meta, created_at, kind, forked_from ON turns WHEN NEW.forked_from IS NULL AND NEW.seq <= (SELECT mark FROM turns_mark) BEGIN INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd, cache_read_tokens, cache_write_tokens, uncosted_rows, uncosted_base, uncosted_cache_read, uncosted_cache_write, uncosted_output) SELECT day || coalesce('=' || model, ''), day, model, +1, +turns, +tokens, +input_tokens, +output_tokens, +cost_usd, +cache_read_tokens, +cache_write_tokens, +uncosted, +(uncosted * max(0, input_tokens - cache_read_tokens - cache_write_tokens)), +(uncosted * cache_read_tokens), +(uncosted * cache_write_tokens), +(uncosted * output_tokens) FROM (SELECT strftime('%Y-%m-%d', NEW.created_at / 1000.0, 'unixepoch') AS day, json_extract(NEW.meta, '$.model') AS model, NEW.kind = 'turn' AS turns, NEW.tokens AS tokens, coalesce(json_extract(NEW.meta, '$.usage.input_tokens'), 0) AS input_tokens, coalesce(json_extract(NEW.meta, '$.usage.output_tokens'), 0) AS output_tokens, coalesce(json_extract(NEW.meta, '$.cost_usd'), 0) AS cost_usd, coalesce(json_extract(NEW.meta, '$.usage.cache_read_tokens'), 0) AS cache_read_tokens, coalesce(json_extract(NEW.meta, '$.usage.cache_write_tokens'), 0) AS cache_write_tokens, coalesce(json_type(NEW.meta, '$.usage') = 'object' AND json_type(NEW.meta, '$.cost_usd') IS NULL, 0) AS uncosted) WHERE NEW.seq <= (SELECT mark FROM turns_mark) ON CONFLICT (key) DO UPDATE SET rows = rows + excluded.rows, turns = turns + excluded.turns, tokens = tokens + excluded.tokens, input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens, cost_usd = cost_usd + excluded.cost_usd, cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens, cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens, uncosted_rows = uncosted_rows + excluded.uncosted_rows, uncosted_base = uncosted_base + excluded.uncosted_base, uncosted_cache_read = uncosted_cache_read + excluded.uncosted_cache_read, uncosted_cache_write = uncosted_cache_write + excluded.uncosted_cache_write, uncosted_output = uncosted_output + excluded.uncosted_output; END;",
        "DELETE FROM usage_totals;",
        "INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd, cache_read_tokens, cache_write_tokens, uncosted_rows, uncosted_base, uncosted_cache_read, uncosted_cache_write, uncosted_output) SELECT key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd, cache_read_tokens, cache_write_tokens, uncosted_rows, uncosted_base, uncosted_cache_read, uncosted_cache_write, uncosted_output FROM (SELECT day || coalesce('=' || model, '') AS key, day, model, count(*) AS rows, sum(turns) AS turns, sum(tokens) AS tokens, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(cost_usd) AS cost_usd, sum(cache_read_tokens) AS cache_read_tokens, sum(cache_write_tokens) AS cache_write_tokens, sum(uncosted) AS uncosted_rows, sum(uncosted * max(0, input_tokens - cache_read_tokens - cache_write_tokens)) AS uncosted_base, sum(uncosted * cache_read_tokens) AS uncosted_cache_read, sum(uncosted * cache_write_tokens) AS uncosted_cache_write, sum(uncosted * output_tokens) AS uncosted_output FROM (SELECT strftime('%Y-%m-%d', turns.created_at / 1000.0, 'unixepoch') AS day, json_extract(turns.meta, '$.model') AS model, turns.kind = 'turn' AS turns, turns.tokens AS tokens, coalesce(json_extract(turns.meta, '$.usage.input_tokens'), 0) AS input_tokens, coalesce(json_extract(turns.meta, '$.usage.output_tokens'), 0) AS output_tokens, coalesce(json_extract(turns.meta, '$.cost_usd'), 0) AS cost_usd, coalesce(json_extract(turns.meta, '$.usage.cache_read_tokens'), 0) AS cache_read_tokens, coalesce(json_extract(turns.meta, '$.usage.cache_write_tokens'), 0) AS cache_write_tokens, coalesce(json_type(turns.meta, '$.usage') = 'object' AND json_type(turns.meta, '$.cost_usd') IS NULL, 0) AS uncosted FROM turns WHERE forked_from IS NULL AND seq <= (SELECT mark FROM turns_mark)) GROUP BY day, model);"
      ]
    },
    {
      name: "schedules, hooks and deliveries",
      statements: [
        "CREATE TABLE IF NOT EXISTS schedules ( id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, content TEXT NOT NULL, source TEXT, author TEXT, at INTEGER, every INTEGER, cron TEXT, tz TEXT, next_at INTEGER NOT NULL, last_fired_at INTEGER, last_prompt_id INTEGER, fired INTEGER NOT NULL DEFAULT 0, missed INTEGER NOT NULL DEFAULT 0, request_id TEXT UNIQUE, request_hash TEXT, created_at INTEGER NOT NULL );",
        "CREATE INDEX IF NOT EXISTS schedules_by_next ON schedules (next_at);",
        "ALTER TABLE prompts ADD COLUMN schedule_id INTEGER;",
        "CREATE TABLE IF NOT EXISTS hooks ( id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL, events TEXT NOT NULL, include_reply INTEGER NOT NULL DEFAULT 0, secret TEXT NOT NULL, author TEXT, created_at INTEGER NOT NULL );",
        "CREATE TABLE IF NOT EXISTS deliveries ( id INTEGER PRIMARY KEY AUTOINCREMENT, hook_id INTEGER NOT NULL, webhook_id TEXT NOT NULL, type TEXT NOT NULL, prompt_id INTEGER NOT NULL, body TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, last_attempt_at INTEGER, next_attempt_at INTEGER, delivered_at INTEGER, last_response INTEGER, last_error TEXT );",
        "CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';",
        "CREATE INDEX IF NOT EXISTS deliveries_by_hook ON deliveries (hook_id, id);"
      ]
    }
  ],
  catch_up: [
    "SELECT mark, (SELECT max(seq) FROM turns) FROM turns_mark",
    "INSERT INTO turns_fts (rowid, content, arguments) SELECT seq, content, CASE WHEN tool_calls IS NULL THEN NULL ELSE (SELECT group_concat(json_extract(value, '$.arguments'), char(10)) FROM json_each(turns.tool_calls)) END FROM turns WHERE seq > ?1",
    "INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd, cache_read_tokens, cache_write_tokens, uncosted_rows, uncosted_base, uncosted_cache_read, uncosted_cache_write, uncosted_output) SELECT day || coalesce('=' || model, ''), day, model, count(*) AS rows, sum(turns) AS turns, sum(tokens) AS tokens, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(cost_usd) AS cost_usd, sum(cache_read_tokens) AS cache_read_tokens, sum(cache_write_tokens) AS cache_write_tokens, sum(uncosted) AS uncosted_rows, sum(uncosted * max(0, input_tokens - cache_read_tokens - cache_write_tokens)) AS uncosted_base, sum(uncosted * cache_read_tokens) AS uncosted_cache_read, sum(uncosted * cache_write_tokens) AS uncosted_cache_write, sum(uncosted * output_tokens) AS uncosted_output FROM (SELECT strftime('%Y-%m-%d', turns.created_at / 1000.0, 'unixepoch') AS day, json_extract(turns.meta, '$.model') AS model, turns.kind = 'turn' AS turns, turns.tokens AS tokens, coalesce(json_extract(turns.meta, '$.usage.input_tokens'), 0) AS input_tokens, coalesce(json_extract(turns.meta, '$.usage.output_tokens'), 0) AS output_tokens, coalesce(json_extract(turns.meta, '$.cost_usd'), 0) AS cost_usd, coalesce(json_extract(turns.meta, '$.usage.cache_read_tokens'), 0) AS cache_read_tokens, coalesce(json_extract(turns.meta, '$.usage.cache_write_tokens'), 0) AS cache_write_tokens, coalesce(json_type(turns.meta, '$.usage') = 'object' AND json_type(turns.meta, '$.cost_usd') IS NULL, 0) AS uncosted FROM turns WHERE seq > ?1 AND forked_from IS NULL) WHERE true GROUP BY day, model ON CONFLICT (key) DO UPDATE SET rows = rows + excluded.rows, turns = turns + excluded.turns, tokens = tokens + excluded.tokens, input_tokens = CASE WHEN typeof(input_tokens + excluded.input_tokens) = 'integer' THEN input_tokens + excluded.input_tokens ELSE abs(-9223372036854775807 - 1) END, output_tokens = CASE WHEN typeof(output_tokens + excluded.output_tokens) = 'integer' THEN output_tokens + excluded.output_tokens ELSE abs(-9223372036854775807 - 1) END, cost_usd = cost_usd + excluded.cost_usd, cache_read_tokens = CASE WHEN typeof(cache_read_tokens + excluded.cache_read_tokens) = 'integer' THEN cache_read_tokens + excluded.cache_read_tokens ELSE abs(-9223372036854775807 - 1) END, cache_write_tokens = CASE WHEN typeof(cache_write_tokens + excluded.cache_write_tokens) = 'integer' THEN cache_write_tokens + excluded.cache_write_tokens ELSE abs(-9223372036854775807 - 1) END, uncosted_rows = uncosted_rows + excluded.uncosted_rows, uncosted_base = CASE WHEN typeof(uncosted_base + excluded.uncosted_base) = 'integer' THEN uncosted_base + excluded.uncosted_base ELSE abs(-9223372036854775807 - 1) END, uncosted_cache_read = CASE WHEN typeof(uncosted_cache_read + excluded.uncosted_cache_read) = 'integer' THEN uncosted_cache_read + excluded.uncosted_cache_read ELSE abs(-9223372036854775807 - 1) END, uncosted_cache_write = CASE WHEN typeof(uncosted_cache_write + excluded.uncosted_cache_write) = 'integer' THEN uncosted_cache_write + excluded.uncosted_cache_write ELSE abs(-9223372036854775807 - 1) END, uncosted_output = CASE WHEN typeof(uncosted_output + excluded.uncosted_output) = 'integer' THEN uncosted_output + excluded.uncosted_output ELSE abs(-9223372036854775807 - 1) END",
    "UPDATE turns_mark SET mark = ?2"
  ]
};

// src/rules/tokens.ts
function approx(text4) {
  const chars = [...text4].length;
  const words2 = wordCount(text4);
  return Math.max(Math.ceil(chars / 4), Math.ceil(words2 * 1.3)) + 4;
}

// src/rules/verbatim.ts
var splicing = null;
var Raw = class {
  constructor(text4) {
    this.text = text4;
  }
  text;
  get value() {
    return JSON.parse(this.text);
  }
  toJSON() {
    if (splicing === null) return this.value;
    splicing.texts.push(this.text);
    return splicing.mark;
  }
};
function raw(text4) {
  return text4 === null || text4 === void 0 ? null : new Raw(text4);
}
function stringify(doc) {
  const mark = crypto.randomUUID().replace(/-/g, "");
  const outer = splicing;
  const state = splicing = { mark, texts: [] };
  let out;
  try {
    out = JSON.stringify(doc);
  } finally {
    splicing = outer;
  }
  const texts = state.texts;
  if (!texts.length) return out;
  const parts = out.split(`"${mark}"`);
  if (parts.length !== texts.length + 1) throw new Error("a verbatim field could not be placed in the response");
  let s3 = parts[0];
  for (let i = 0; i < texts.length; i++) s3 += texts[i] + parts[i + 1];
  return s3;
}
function field(f2, key, where, lexemes) {
  const text4 = f2[`${key}_json`];
  if (text4 !== void 0 && text4 !== null) {
    if (f2[key] !== void 0 && f2[key] !== null) throw invalid(`${where}give ${key} or ${key}_json, not both`);
    if (typeof text4 !== "string") throw invalid(`${where}${key}_json must be JSON text`);
    const value2 = parse(text4, `${where}${key}`, lexemes);
    return value2 === null ? [null, null] : [value2, text4];
  }
  const value = f2[key] === void 0 ? null : f2[key];
  if (tooDeep(value)) throw invalid(where + say("json_too_deep", { what: key, max: MAX_DEPTH }));
  return value === null ? [null, null] : [value, JSON.stringify(value)];
}

// src/rules/transcript/row.ts
var ROLES = CONSTANTS.row_roles;
var PINNED = CONSTANTS.pinned_roles;
var USAGE_KEYS2 = CONSTANTS.usage_keys;
var COLS = "seq, role, content, tokens, author, created_at, kind, superseded_by, covers_first, covers_last, call_id, pos, tool_calls, name, meta, data, forked_from";
var [SEQ, ROLE, CONTENT, TOKENS, AUTHOR, CREATED, KIND, SUPERSEDED, FIRST, LAST, CALL_ID, POS, CALLS, NAME, META2, DATA, FORKED] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
var MAX_USAGE = 1e12;
var MAX_COST = 1e9;
var MAX_TOKENS = 1e9;
var REDACTED = "[redacted]";
var utf8 = (s3) => new TextEncoder().encode(s3).length;
var isInt2 = (n) => typeof n === "number" && Number.isInteger(n);
function checkText(obj, content, what = "content") {
  if (typeof content !== "string" || content === "") throw invalid(say("empty_text", { what }));
  const size = utf8(content);
  const limit = obj.config.max_turn_bytes;
  if (size > limit) throw invalid(say("text_too_large", { what, size, limit }));
}
function toolCalls(v2, where) {
  if (!Array.isArray(v2)) throw invalid(where + say("tool_calls_not_array"));
  const seen = /* @__PURE__ */ new Set();
  return v2.map((call, i) => {
    const n = i + 1;
    if (call === null || typeof call !== "object" || Array.isArray(call)) throw invalid(where + say("tool_call_not_object", { n }));
    const extra = Object.keys(call).filter((k2) => !["id", "name", "arguments"].includes(k2)).sort();
    if (extra.length) throw invalid(where + say("tool_call_unknown_keys", { n, keys: `[${extra.map(quote).join(", ")}]` }));
    for (const k2 of ["id", "name"]) if (typeof call[k2] !== "string" || !call[k2]) throw invalid(where + say("tool_call_needs", { n, key: k2 }));
    const args = call.arguments ?? "{}";
    if (typeof args !== "string") throw invalid(where + say("tool_call_arguments", { n }));
    if (seen.has(call.id)) throw invalid(where + say("tool_call_id_twice", { id: call.id }));
    seen.add(call.id);
    return { id: call.id, name: call.name, arguments: args };
  });
}
function metaProblem(v2, lexemes) {
  if (v2 === null || typeof v2 !== "object" || Array.isArray(v2)) return say("meta_not_object");
  if ("model" in v2 && typeof v2.model !== "string") return say("meta_model");
  if ("usage" in v2) {
    const u = v2.usage;
    if (u === null || typeof u !== "object" || Array.isArray(u)) return say("meta_usage");
    for (const k2 of USAGE_KEYS2) {
      const required = k2 === "input_tokens" || k2 === "output_tokens";
      if (!(k2 in u) && !required) continue;
      if (!isInt2(u[k2]) || !(u[k2] >= 0 && u[k2] <= MAX_USAGE) || !integerLexeme(lexemes?.get(`usage.${k2}`))) {
        return say("meta_usage_count", { key: k2 });
      }
    }
  }
  if ("cost_usd" in v2 && (typeof v2.cost_usd !== "number" || !(v2.cost_usd >= 0 && v2.cost_usd <= MAX_COST))) return say("meta_cost");
  if ("started_at" in v2 || "ended_at" in v2) {
    if (!("started_at" in v2) || !("ended_at" in v2)) return say("meta_times_both");
    const start = timeNs(v2.started_at), end = timeNs(v2.ended_at);
    if (start === null || end === null) return say("meta_time", { key: start === null ? "started_at" : "ended_at" });
    if (end < start) return say("meta_times_order");
  }
  return null;
}
var TIME = /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d\d):(\d\d))$/;
var DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
function timeNs(text4) {
  if (typeof text4 !== "string") return null;
  const m = TIME.exec(text4);
  if (m === null) return null;
  const [y2, mo, d, h, mi, sec] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i]));
  const leap = y2 % 4 === 0 && (y2 % 100 !== 0 || y2 % 400 === 0);
  if (!(y2 >= 1 && mo >= 1 && mo <= 12 && d >= 1 && d <= DAYS[mo - 1] + (mo === 2 && leap ? 1 : 0) && h <= 23 && mi <= 59 && sec <= 59)) return null;
  let offset2 = 0;
  if (m[9]) {
    const oh = Number(m[10]), om = Number(m[11]);
    if (oh > 23 || om > 59) return null;
    offset2 = (oh * 60 + om) * 60 * (m[9] === "+" ? 1 : -1);
  }
  const yy = y2 - (mo <= 2 ? 1 : 0);
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const days = era * 146097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719468;
  const seconds = days * 86400 + h * 3600 + mi * 60 + sec - offset2;
  return BigInt(seconds) * 1000000000n + BigInt((m[7] ?? "").padEnd(9, "0"));
}
function checkMeta(v2, where, lexemes) {
  const problem = metaProblem(v2, lexemes);
  if (problem !== null) throw invalid(`${where}${problem}`);
  return v2;
}
function prepare(obj, f2, where = "") {
  const role = f2.role;
  if (!ROLES.includes(role)) throw invalid(where + say("invalid_row_role", { role, roles: ROLES.join(", ") }));
  const content = f2.content ?? "";
  if (typeof content !== "string") throw invalid(where + say("content_not_string"));
  let calls = null;
  let [givenCalls, callsText] = field(f2, "tool_calls", where);
  if (givenCalls !== null) {
    if (role !== "assistant") throw invalid(where + say("tool_calls_not_assistant", { role }));
    calls = toolCalls(givenCalls, where);
    if (!calls.length) calls = null;
    else if (dumps(calls) !== dumps(givenCalls)) callsText = dumps(calls);
  }
  const callId = f2.call_id ?? null, name = f2.name ?? null;
  if (role === "tool") {
    if (typeof callId !== "string" || !callId) throw invalid(where + say("tool_row_call_id"));
    if (name !== null && (typeof name !== "string" || !name)) throw invalid(where + say("tool_row_name"));
  } else {
    if (callId !== null) throw invalid(where + say("call_id_not_tool", { role }));
    if (name !== null) throw invalid(where + say("name_not_tool", { role }));
  }
  const lexemes = /* @__PURE__ */ new Map();
  const [meta, metaText] = field(f2, "meta", where, lexemes);
  if (meta !== null) checkMeta(meta, where, lexemes);
  const [data, dataText] = field(f2, "data", where);
  if (content === "" && !(calls && role === "assistant") && data === null) {
    throw invalid(where + say("empty_content"));
  }
  const given = f2.tokens ?? null;
  if (given !== null && (!isInt2(given) || given < 0 || given > MAX_TOKENS)) throw invalid(where + say("row_tokens", { max: MAX_TOKENS }));
  const p = {
    role,
    content,
    call_id: callId,
    name,
    given,
    tokens: 0,
    tool_calls: calls ? callsText : null,
    meta: metaText,
    data: dataText
  };
  let size = utf8(content);
  for (const x2 of [p.tool_calls, p.meta, p.data]) if (x2 !== null) size += utf8(x2);
  const limit = obj.config.max_turn_bytes;
  if (size > limit) throw invalid(where + say("row_too_large", { size, limit }));
  if (given === null) {
    const parts = [content];
    for (const c2 of calls ?? []) parts.push(c2.name, c2.arguments);
    p.tokens = approx(parts.join("\n"));
  } else p.tokens = given;
  return p;
}
function rowJson(r) {
  const summary = r[KIND] === "summary";
  return {
    seq: r[SEQ],
    role: r[ROLE],
    content: r[CONTENT],
    tool_calls: raw(r[CALLS]),
    call_id: r[CALL_ID],
    name: r[NAME],
    meta: raw(r[META2]),
    data: raw(r[DATA]),
    forked_from: r[FORKED],
    tokens: r[TOKENS],
    author: r[AUTHOR],
    created_at: iso(r[CREATED]),
    kind: r[KIND],
    superseded_by: r[SUPERSEDED],
    covers: summary && r[LAST] !== null ? [r[FIRST], r[LAST]] : null
  };
}
function requireVisible(obj) {
  const meta = requireSession(obj);
  obj.requireVisible();
  return meta;
}
function refuseRewriteIfOwned(obj, meta, doing) {
  if (meta.adapter === "langgraph") {
    throw conflict(say("langgraph_owned", { what: obj.what, doing, name: obj.name }));
  }
}
var marks = (n) => new Array(n).fill("?").join(",");

// src/rules/transcript/reads.ts
var PAGE_ROWS = 1e3;
var PAGE_BYTES = 524288;
var offset = (n) => Math.min(n, Number.MAX_SAFE_INTEGER) - 1;
function show(obj, a) {
  requireVisible(obj);
  const since = a.since ?? 0;
  if (!isInt2(since)) throw invalid("--since must be an integer");
  let c2 = a.cursor ?? null;
  if (c2 !== null && (typeof c2 !== "object" || !isInt2(c2.after) || !isInt2(c2.high) || c2.from_pos != null && typeof c2.from_pos !== "number")) {
    throw invalid("cursor must be the `next` of the previous page");
  }
  if (c2 === null) {
    const high = Number(obj.db.one("SELECT coalesce(max(seq), 0) FROM turns")[0]);
    let fromPos = null;
    if (a.last != null) {
      if (a.all_rows) throw invalid(say("last_with_all"));
      if (!isInt2(a.last) || a.last < 0) throw invalid(say("last_negative"));
      if (a.last === 0) return { rows: [], next: null };
      const nth = obj.db.one("SELECT pos FROM turns WHERE superseded_by IS NULL AND seq > ? ORDER BY pos DESC LIMIT 1 OFFSET ?", since, offset(a.last));
      fromPos = nth ? nth[0] : null;
    }
    c2 = { after: Number.MIN_SAFE_INTEGER, from_pos: fromPos, high };
  }
  const sql = a.all_rows ? `SELECT ${COLS} FROM turns WHERE seq > ? AND seq > ? AND seq <= ? ORDER BY seq` : `SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos > ? AND seq > ? AND seq <= ?${c2.from_pos != null ? " AND pos >= ?" : ""} ORDER BY pos`;
  const params = [c2.after, since, c2.high];
  if (!a.all_rows && c2.from_pos != null) params.push(c2.from_pos);
  const rows = [];
  let bytes2 = 0;
  let last = null;
  for (const r of obj.db.iter(sql, ...params)) {
    rows.push(rowJson(r));
    last = a.all_rows ? r[SEQ] : r[POS];
    for (const x2 of [r[CONTENT], r[CALLS], r[META2], r[DATA]]) if (typeof x2 === "string") bytes2 += x2.length;
    if (rows.length >= PAGE_ROWS || bytes2 >= PAGE_BYTES) {
      return { rows, next: { after: last, from_pos: c2.from_pos ?? null, high: c2.high } };
    }
  }
  return { rows, next: null };
}
var STORED = "data, role, kind, content, call_id, tool_calls";
function rowBytes(r) {
  let bytes2 = 0;
  for (const x2 of [r[CONTENT], r[CALLS], r[META2], r[DATA]]) if (typeof x2 === "string") bytes2 += x2.length;
  return bytes2;
}
function pageOrNull(obj, sql, ...params) {
  const rows = [];
  let bytes2 = 0;
  for (const r of obj.db.iter(sql, ...params)) {
    bytes2 += rowBytes(r);
    if (rows.length >= PAGE_ROWS || bytes2 > PAGE_BYTES && rows.length) return null;
    rows.push(rowJson(r));
  }
  return rows;
}
function storedRows(obj, a) {
  requireVisible(obj);
  let c2 = a.cursor ?? null;
  if (c2 !== null && (typeof c2 !== "object" || !isInt2(c2.after) || !isInt2(c2.high) || c2.from_pos != null && typeof c2.from_pos !== "number")) {
    throw invalid("cursor must be the `next` of the previous page");
  }
  if (c2 === null) {
    let fromPos = null;
    if (a.last != null) {
      if (!isInt2(a.last) || a.last < 0) throw invalid(say("stored_last_negative"));
      if (a.last === 0) return { rows: [], next: null };
      const nth = obj.db.one("SELECT pos FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT 1 OFFSET ?", offset(a.last));
      fromPos = nth ? nth[0] : null;
    }
    c2 = { after: Number.MIN_SAFE_INTEGER, from_pos: fromPos, high: Number(obj.db.one("SELECT coalesce(max(seq), 0) FROM turns")[0]) };
  }
  const params = [c2.after, c2.high];
  if (c2.from_pos != null) params.push(c2.from_pos);
  const rows = [];
  let bytes2 = 0;
  for (const r of obj.db.iter(`SELECT ${STORED}, pos FROM turns WHERE superseded_by IS NULL AND pos > ? AND seq <= ?${c2.from_pos != null ? " AND pos >= ?" : ""} ORDER BY pos`, ...params)) {
    rows.push(r.slice(0, 6));
    for (const x2 of r) if (typeof x2 === "string") bytes2 += x2.length;
    if (rows.length >= PAGE_ROWS || bytes2 >= PAGE_BYTES) return { rows, next: { after: r[6], from_pos: c2.from_pos ?? null, high: c2.high } };
  }
  return { rows, next: null };
}
function followStart(obj, a) {
  const page = show(obj, { ...a, cursor: null });
  const high = Number(obj.db.one("SELECT coalesce(max(seq), 0) FROM turns")[0]);
  return [page.rows, Math.max(high, a.since ?? 0), obj.meta().status, page.next];
}
function rowsAfter(obj, a) {
  requireVisible(obj);
  if (!isInt2(a.seq)) throw invalid("seq must be an integer");
  const rows = [];
  let bytes2 = 0;
  for (const r of obj.db.iter(`SELECT ${COLS} FROM turns WHERE seq > ? ORDER BY seq`, a.seq)) {
    if (rows.length >= PAGE_ROWS || bytes2 >= PAGE_BYTES) return [rows, obj.meta().status, true];
    rows.push(rowJson(r));
    bytes2 += rowBytes(r);
  }
  return [rows, obj.meta().status, false];
}
function* rowsSince(obj, seq) {
  for (const r of obj.db.iter(`SELECT ${COLS} FROM turns WHERE seq > ? ORDER BY seq`, seq)) yield [r[SEQ], rowJson(r)];
}
var UI_ROWS = 200;
var IN_LIST = 90;
function rowsBefore(obj, a) {
  requireVisible(obj);
  const [key, index] = a.superseded ? ["seq", SEQ] : ["pos", POS];
  const live2 = a.superseded ? "" : "superseded_by IS NULL AND ";
  const limit = a.limit ?? UI_ROWS;
  const bounded = a.before != null;
  const rows = [];
  let bytes2 = 0;
  let going = null;
  for (const r of obj.db.iter(`SELECT ${COLS} FROM turns WHERE ${live2}${bounded ? `${key} < ?` : "1"} ORDER BY ${key} DESC LIMIT ?`, ...bounded ? [a.before] : [], limit)) {
    const row4 = rowJson(r);
    row4.key = r[index];
    rows.push(row4);
    for (const x2 of [r[CONTENT], r[CALLS], r[META2], r[DATA]]) if (typeof x2 === "string") bytes2 += x2.length;
    if (bytes2 >= PAGE_BYTES && rows.length < limit) {
      going = r[index];
      break;
    }
  }
  const low = rows.length ? rows[rows.length - 1].key : bounded ? a.before : null;
  const earlier = low === null ? false : !!obj.db.one(`SELECT 1 FROM turns WHERE ${live2}${key} < ? LIMIT 1`, low);
  let later = null;
  if (bounded) {
    const found = obj.db.one(`SELECT ${key} FROM turns WHERE ${live2}${key} >= ? ORDER BY ${key} LIMIT 1 OFFSET ?`, a.before, UI_ROWS);
    later = found ? found[0] : null;
  }
  const seqs = new Set(rows.map((r) => r.seq));
  const ids = /* @__PURE__ */ new Set();
  for (const r of rows) {
    const given = r.tool_calls instanceof Raw ? r.tool_calls.value : null;
    for (const c2 of Array.isArray(given) ? given : []) if (c2 && typeof c2 === "object" && typeof c2.id === "string") ids.add(c2.id);
  }
  const calls = [...ids].sort();
  const results = [];
  for (let i = 0; i < calls.length; i += IN_LIST) {
    const chunk = calls.slice(i, i + IN_LIST);
    for (const r of obj.db.iter(`SELECT ${COLS} FROM turns WHERE ${live2}call_id IN (${marks(chunk.length)}) ORDER BY seq`, ...chunk)) {
      if (!seqs.has(r[SEQ])) results.push(rowJson(r));
    }
  }
  results.sort((x2, y2) => x2.seq - y2.seq);
  return { rows, next: earlier ? going : null, earlier, later, results };
}

// src/rules/transcript/summaries.ts
import { createHash } from "node:crypto";

// src/rules/transcript/context.ts
function pinnedPrefix(rows) {
  const out = [];
  for (const r of rows) {
    if (PINNED.includes(r[ROLE]) && r[KIND] === "turn") out.push(r);
    else break;
  }
  return out;
}
function pinned(obj) {
  return pinnedPrefix(obj.db.iter(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL ORDER BY pos LIMIT 1000`));
}
function callIds(r) {
  return r[CALLS] ? JSON.parse(r[CALLS]).map((c2) => c2.id) : [];
}
function checkBounds(budget, limit) {
  if (budget < 0 || limit !== null && limit < 0) throw invalid(say("window_negative"));
}
function choose(pin, newerFirst, budget, limit = null, keep = null) {
  checkBounds(budget, limit);
  let total = pin.reduce((s3, r) => s3 + r[TOKENS], 0);
  if (total > budget && keep === null) return { rows: [], tokens: 0 };
  const tail = [];
  let count = 0;
  const waiting = /* @__PURE__ */ new Map();
  for (const r of newerFirst) {
    if (r[ROLE] === "tool" && r[KIND] === "turn") {
      if (!waiting.has(r[CALL_ID])) waiting.set(r[CALL_ID], []);
      waiting.get(r[CALL_ID]).push(r);
      continue;
    }
    const group = [r];
    for (const id of callIds(r)) {
      group.push(...waiting.get(id) ?? []);
      waiting.delete(id);
    }
    const cost = group.reduce((s3, g2) => s3 + g2[TOKENS], 0);
    if (r[SEQ] !== keep && (total + cost > budget || limit !== null && count + group.length > limit)) break;
    tail.push(...group);
    total += cost;
    count += group.length;
  }
  tail.sort((x2, y2) => x2[POS] - y2[POS]);
  return { rows: [...pin, ...tail], tokens: total };
}
function contextWindow(obj, a) {
  const budget = a.budget ?? obj.config.token_budget;
  const limit = a.limit ?? null;
  checkBounds(budget, limit);
  requireVisible(obj);
  const pin = pinned(obj);
  const boundary = pin.length ? pin[pin.length - 1][POS] : 0;
  const cursor = obj.db.iter(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos > ? ORDER BY pos DESC`, boundary);
  const { rows, tokens } = choose(pin, cursor, budget, limit, a.keep ?? null);
  return { turns: rows.map(rowJson), tokens, budget };
}

// src/rules/transcript/summaries.ts
var DIGEST = COLS.split(",").length;
var IDS = DIGEST + 1;
function light(r) {
  const out = [...r];
  for (const i of [CONTENT, CALLS, META2, DATA]) out[i] = null;
  out.push(createHash("sha256").update(JSON.stringify(r)).digest("hex"), JSON.stringify(r[KIND] === "turn" ? callIds(r) : []));
  return out;
}
function lightRows(obj, sql, ...params) {
  const out = [];
  for (const r of obj.db.iter(sql, ...params)) out.push(light(r));
  return out;
}
var idsOf = (r) => r.length > IDS ? JSON.parse(r[IDS]) : r[KIND] === "turn" ? callIds(r) : [];
function liveRow(obj, seq) {
  const row4 = isInt2(seq) ? obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, seq) : null;
  if (!row4 || row4[SUPERSEDED] !== null) throw notFound(say("not_live_row", { seq, what: obj.what, name: obj.name }));
  return row4;
}
function splitsACall(obj, covered, throughPos) {
  if (obj.db.one("SELECT 1 FROM turns WHERE role = 'tool' AND superseded_by IS NULL AND pos > ? LIMIT 1", throughPos) === null) return false;
  let ids = [];
  const splits = () => {
    const hit2 = ids.length > 0 && obj.db.one(
      `SELECT 1 FROM turns WHERE call_id IN (${marks(ids.length)}) AND role = 'tool' AND superseded_by IS NULL AND pos > ? LIMIT 1`,
      ...ids,
      throughPos
    ) !== null;
    ids = [];
    return hit2;
  };
  for (const r of covered) {
    if (r[KIND] !== "turn") continue;
    for (const id of idsOf(r)) if (ids.push(id) >= 90 && splits()) return true;
  }
  return splits();
}
function makePlan(obj, covered) {
  return { covered, high: obj.db.one("SELECT coalesce(max(seq), 0) FROM turns")[0] };
}
function planSummary(obj, a) {
  const meta = requireVisible(obj);
  liveRow(obj, a.through);
  refuseRewriteIfOwned(obj, meta, "be summarized");
  check(obj, "write", meta.status);
  const row4 = liveRow(obj, a.through);
  const pin = pinned(obj);
  const boundary = pin.length ? pin[pin.length - 1][POS] : 0;
  const covered = lightRows(obj, `SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos > ? AND pos <= ? ORDER BY pos`, boundary, row4[POS]);
  if (!covered.length) throw conflict(say("summary_pinned", { through: a.through, what: obj.what }));
  if (splitsACall(obj, covered, row4[POS])) {
    throw invalid(say("summary_splits_tool_call", { through: a.through, what: obj.what }));
  }
  return makePlan(obj, covered);
}
function planCompact(obj, a) {
  const max = a.max_tokens, keep = a.keep_tokens;
  if (!isInt2(max) || !isInt2(keep) || max < 0 || keep < 0) throw invalid(say("compact_negative"));
  if (max < keep) throw invalid(say("compact_keep"));
  const meta = requireVisible(obj);
  refuseRewriteIfOwned(obj, meta, "be compacted");
  check(obj, "write", meta.status);
  if (meta.live_tokens <= max) return null;
  const pin = pinned(obj);
  const boundary = pin.length ? pin[pin.length - 1][POS] : 0;
  const live2 = lightRows(obj, `SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos > ? ORDER BY pos`, boundary);
  let kept = 0;
  let fallback = null;
  for (let i = live2.length - 1; i > 0; i--) {
    kept += live2[i][TOKENS];
    if (kept < keep || live2[i][ROLE] === "tool") continue;
    if (splitsACall(obj, live2.slice(0, i), live2[i - 1][POS])) continue;
    if (live2[i][ROLE] === "user" && live2[i][KIND] === "turn") return makePlan(obj, live2.slice(0, i));
    if (fallback === null) fallback = i;
  }
  return fallback === null ? null : makePlan(obj, live2.slice(0, fallback));
}
var sameRow = (x2, y2) => !!x2 && x2.length === y2.length && x2.every((v2, i) => v2 === y2[i]);
function commitSummary(obj, a) {
  checkText(obj, a.text);
  const meta = requireVisible(obj);
  check(obj, "write", meta.status);
  const covered = a.covered;
  if (!Array.isArray(covered) || !covered.length || !isInt2(a.high) || !covered.every((r) => Array.isArray(r) && r.length === IDS + 1 && isInt2(r[SEQ]))) {
    throw invalid("the summary plan is not one this Worker made");
  }
  const changed = conflict(say("summary_changed", { what: obj.what }));
  const seqs = covered.map((r) => r[SEQ]);
  for (const r of covered) {
    const now2 = obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, r[SEQ]);
    if (!sameRow(now2 ? light(now2) : void 0, r) || r[SUPERSEDED] !== null) throw changed;
  }
  const ids = covered.filter((r) => r[KIND] === "turn").flatMap(idsOf);
  for (let i = 0; i < ids.length; i += 90) {
    const chunk = ids.slice(i, i + 90);
    if (obj.db.one(`SELECT 1 FROM turns WHERE seq > ? AND role = 'tool' AND call_id IN (${marks(chunk.length)}) LIMIT 1`, a.high, ...chunk)) throw changed;
  }
  const positions = covered.map((r) => r[POS]);
  const low = Math.min(...positions), top = Math.max(...positions);
  const pin = pinned(obj);
  const between = obj.db.one("SELECT count(*) FROM turns WHERE superseded_by IS NULL AND pos BETWEEN ? AND ?", low, top)[0];
  if (new Set(seqs).size !== seqs.length || between !== seqs.length || pin.length && low <= pin[pin.length - 1][POS]) {
    throw invalid("the summary plan is not one this Worker made");
  }
  return insertSummary(obj, covered, a.text);
}
function insertSummary(obj, covered, text4) {
  const first = Math.min(...covered.map((r) => r[KIND] === "summary" ? r[FIRST] : r[SEQ]));
  const last = Math.max(...covered.map((r) => r[KIND] === "summary" ? r[LAST] ?? r[FIRST] : r[SEQ]));
  const count = approx(text4);
  const seq = obj.db.one("INSERT INTO turns (role, content, tokens, author, created_at, kind, covers_first, covers_last) VALUES ('system', ?, ?, ?, ?, 'summary', ?, ?) RETURNING seq", text4, count, obj.actor, now(), first, last)[0];
  for (const r of covered) obj.db.run("UPDATE turns SET superseded_by = ? WHERE seq = ?", seq, r[SEQ]);
  obj.db.run(
    "UPDATE object SET live_turns = live_turns - ? + 1, live_tokens = live_tokens - ? + ?",
    covered.length,
    covered.reduce((s3, r) => s3 + r[TOKENS], 0),
    count
  );
  event(obj, "transcript.summarized", { seq, covers: [first, last], superseded: covered.length });
  touch(obj);
  return { summary: rowJson(obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, seq)), superseded: covered.length };
}
function planRows(obj, a) {
  requireVisible(obj);
  if (!Array.isArray(a.seqs) || !a.seqs.every(isInt2)) throw invalid("seqs must be a list of integers");
  const rows = [];
  let bytes2 = 0;
  for (const seq of a.seqs) {
    if (rows.length >= PAGE_ROWS || bytes2 >= PAGE_BYTES) break;
    const r = obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, seq);
    if (r) bytes2 += rowBytes(r);
    rows.push(r ?? [seq]);
  }
  return rows;
}
function summarize(obj, a) {
  checkText(obj, a.text, "summary");
  return insertSummary(obj, planSummary(obj, a).covered, a.text);
}
function compact(obj, a) {
  checkText(obj, a.text, "summary");
  const plan2 = planCompact(obj, a);
  return plan2 === null ? { summary: null, superseded: 0 } : insertSummary(obj, plan2.covered, a.text);
}

// src/rules/fork.ts
var REWRITES = ["transcript.popped", "transcript.cleared", "transcript.redacted", "transcript.pruned", "transcript.summarized"];
function forkPlan(obj, a) {
  const meta = requireVisible(obj);
  let c2 = a.cursor ?? null;
  if (c2 !== null) {
    if (typeof c2 !== "object" || ![c2.after, c2.cut, c2.seq, c2.events].every(isInt2)) throw invalid("cursor must be the `next` of the previous page");
    const cut2 = obj.db.one("SELECT seq FROM turns WHERE pos = ? AND superseded_by IS NULL", c2.cut);
    if (cut2 === null || cut2[0] !== c2.seq || obj.db.one(`SELECT 1 FROM events WHERE seq > ? AND type IN (${marks(REWRITES.length)}) LIMIT 1`, c2.events, ...REWRITES) !== null) {
      throw new DurableError(`the transcript of ${obj.what} was rewritten while it was being forked; run the fork again`, "conflict", { restart: true });
    }
  } else {
    const events2 = Number(obj.db.one("SELECT coalesce(max(seq), 0) FROM events")[0]);
    const last = a.at == null ? obj.db.one("SELECT pos, seq FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT 1") : null;
    if (a.at == null && last === null) return { id: obj.id, name: obj.name, title: meta.title, seq: null, rows: [], next: null };
    if (a.at != null) {
      const cut2 = liveRow(obj, a.at);
      if (splitsACall(obj, obj.db.iter(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos <= ? AND tool_calls IS NOT NULL ORDER BY pos`, cut2[POS]), cut2[POS])) {
        throw invalid(say("fork_splits_tool_call", { at: a.at, what: obj.what }));
      }
      c2 = { after: Number.MIN_SAFE_INTEGER, cut: cut2[POS], seq: a.at, events: events2 };
    } else {
      c2 = { after: Number.MIN_SAFE_INTEGER, cut: last[0], seq: last[1], events: events2 };
    }
  }
  const page = { id: obj.id, name: obj.name, title: meta.title, seq: c2.seq };
  const rows = [];
  let bytes2 = 0;
  for (const r of obj.db.iter(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos > ? AND pos <= ? ORDER BY pos`, c2.after, c2.cut)) {
    rows.push({
      role: r[ROLE],
      content: r[CONTENT],
      tool_calls_json: r[CALLS],
      call_id: r[CALL_ID],
      name: r[NAME],
      meta_json: r[META2],
      data_json: r[DATA],
      tokens: r[TOKENS],
      created_at: r[CREATED],
      kind: r[KIND]
    });
    for (const x2 of [r[CONTENT], r[CALLS], r[META2], r[DATA]]) if (typeof x2 === "string") bytes2 += x2.length;
    if ((rows.length >= PAGE_ROWS || bytes2 >= PAGE_BYTES) && r[POS] !== c2.cut) {
      if (a.cursor === void 0) throw invalid(`${obj.what} is too long for this client's fork; upgrade durable (the Worker answers a fork's plan in pages)`);
      return { ...page, rows, next: { ...c2, after: r[POS] } };
    }
  }
  return { ...page, rows, next: null };
}
var COPY = "INSERT INTO turns (seq, role, content, tokens, author, created_at, kind, covers_first, covers_last, call_id, tool_calls, name, meta, data, forked_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?)";
function forkCreate(obj, a) {
  const src = a.source ?? {};
  const bad = (what) => invalid(`the fork plan is not one this Worker made: ${what}`);
  if (typeof src.id !== "string" || !/^[0-9a-f]{64}$/.test(src.id)) throw bad("source id");
  if (typeof src.name !== "string" || !src.name) throw bad("source name");
  if (src.seq !== null && !(isInt2(src.seq) && src.seq >= 1)) throw bad("seq");
  if (a.rows === null || typeof a.rows !== "object" || !(Symbol.iterator in a.rows)) throw bad("rows");
  refuseExistingFork(obj);
  const title = a.title != null ? validTitle(a.title) : src.title != null ? validTitle(src.title) : null;
  createObject(obj, "created", title);
  let seq = 0, tokens = 0;
  for (const r of a.rows) {
    const c2 = forkCopy(obj, r, `row ${seq + 1}: `, bad);
    seq += 1;
    tokens += c2.tokens;
    obj.db.run(
      COPY,
      seq,
      c2.role,
      c2.content,
      c2.tokens,
      obj.actor,
      c2.created_at,
      c2.kind,
      c2.kind === "summary" ? seq : null,
      c2.call_id,
      c2.tool_calls,
      c2.name,
      c2.meta,
      c2.data,
      src.id
    );
  }
  const t = now();
  obj.db.run("UPDATE object SET live_turns = ?, live_tokens = ?, updated_at = ?, last_active_at = ?", seq, tokens, t, t);
  event(obj, "session.forked", { name: src.name, id: src.id, seq: src.seq });
  return sessionJson(obj);
}
function refuseExistingFork(obj) {
  if (obj.meta() !== null) {
    obj.requireVisible();
    throw conflict(say("fork_exists", { what: obj.what }));
  }
}
function forkCopy(obj, r, where, bad) {
  if (r === null || typeof r !== "object" || !isInt2(r.created_at) || r.created_at < 0) throw bad(`${where}created_at`);
  if (r.kind === "summary") {
    if (r.role !== "system" || typeof r.content !== "string" || !r.content || !isInt2(r.tokens) || r.tokens < 0 || r.call_id != null || r.name != null || ["tool_calls", "meta", "data"].some((k2) => r[k2] != null || r[`${k2}_json`] != null)) {
      throw bad(`${where}summary`);
    }
    return {
      role: "system",
      content: r.content,
      tokens: r.tokens,
      call_id: null,
      tool_calls: null,
      name: null,
      meta: null,
      data: null,
      created_at: r.created_at,
      kind: "summary"
    };
  }
  if (r.kind !== "turn") throw bad(`${where}kind`);
  if (!isInt2(r.tokens)) throw bad(`${where}tokens`);
  const p = prepare(obj, r, where);
  return { ...p, created_at: r.created_at, kind: "turn" };
}

// src/generated/records.json
var records_default = {
  format: "durable-export",
  version: 8,
  max_time: 253402300799999,
  max_ttl: 31536e5,
  tables: {
    object: {
      one: {
        check: "one",
        optional: true
      },
      id: {
        check: "hex_id",
        optional: false
      },
      scope: {
        check: "enum",
        optional: false,
        values: [
          "user",
          "session",
          "tenant",
          "reserved"
        ]
      },
      owner: {
        check: "name",
        optional: false
      },
      name: {
        check: "text",
        optional: false
      },
      title: {
        check: "title",
        optional: true
      },
      status: {
        check: "enum",
        optional: false,
        values: [
          "created",
          "active",
          "completed",
          "failed",
          "cancelled",
          "archived"
        ]
      },
      created_at: {
        check: "time",
        optional: false
      },
      updated_at: {
        check: "time",
        optional: false
      },
      last_active_at: {
        check: "time",
        optional: false
      },
      ttl_seconds: {
        check: "ttl",
        optional: true
      },
      expires_at: {
        check: "time",
        optional: true
      },
      live_turns: {
        check: "count",
        optional: true
      },
      live_tokens: {
        check: "count",
        optional: true
      },
      external_id: {
        check: "text",
        optional: true
      },
      adapter: {
        check: "enum",
        optional: true,
        values: [
          "openai-agents",
          "langgraph",
          "pydantic-ai"
        ]
      }
    },
    participants: {
      user: {
        check: "name",
        optional: false
      },
      role: {
        check: "enum",
        optional: false,
        values: [
          "owner",
          "member"
        ]
      },
      joined_at: {
        check: "time",
        optional: false
      }
    },
    prompts: {
      id: {
        check: "positive",
        optional: false
      },
      status: {
        check: "enum",
        optional: false,
        values: [
          "pending",
          "processing",
          "completed",
          "failed"
        ]
      },
      content: {
        check: "nonempty",
        optional: false
      },
      author: {
        check: "name",
        optional: true
      },
      source: {
        check: "text",
        optional: true
      },
      request_id: {
        check: "request_id",
        optional: true
      },
      turn_seq: {
        check: "positive",
        optional: true
      },
      created_at: {
        check: "time",
        optional: false
      },
      started_at: {
        check: "time",
        optional: true
      },
      lease_expires_at: {
        check: "time",
        optional: true
      },
      completed_at: {
        check: "time",
        optional: true
      },
      error: {
        check: "text",
        optional: true
      },
      attempts: {
        check: "count",
        optional: false
      },
      handed_back: {
        check: "positive",
        optional: true
      },
      not_before: {
        check: "time",
        optional: true
      },
      on_expiry: {
        check: "enum",
        optional: true,
        values: [
          "fail",
          "retry"
        ]
      },
      max_attempts: {
        check: "positive",
        optional: true
      },
      start: {
        check: "count",
        optional: false
      },
      schedule_id: {
        check: "positive",
        optional: true
      }
    },
    turns: {
      seq: {
        check: "positive",
        optional: false
      },
      role: {
        check: "enum",
        optional: false,
        values: [
          "system",
          "developer",
          "user",
          "assistant",
          "tool"
        ]
      },
      content: {
        check: "text",
        optional: false
      },
      tokens: {
        check: "count",
        optional: false
      },
      author: {
        check: "name",
        optional: true
      },
      created_at: {
        check: "time",
        optional: false
      },
      kind: {
        check: "enum",
        optional: false,
        values: [
          "turn",
          "summary"
        ]
      },
      superseded_by: {
        check: "count",
        optional: true
      },
      covers_first: {
        check: "positive",
        optional: true
      },
      covers_last: {
        check: "positive",
        optional: true
      },
      call_id: {
        check: "nonempty",
        optional: true
      },
      request_id: {
        check: "request_id",
        optional: true
      },
      pos: {
        check: "int",
        optional: true
      },
      tool_calls: {
        check: "json_tool_calls",
        optional: true
      },
      name: {
        check: "nonempty",
        optional: true
      },
      meta: {
        check: "json_meta",
        optional: true
      },
      data: {
        check: "json",
        optional: true
      },
      forked_from: {
        check: "hex_id",
        optional: true
      },
      request_hash: {
        check: "nonempty",
        optional: true
      },
      request_last: {
        check: "positive",
        optional: true
      }
    },
    events: {
      seq: {
        check: "positive",
        optional: false
      },
      type: {
        check: "enum",
        optional: false,
        values: [
          "delivery.failed",
          "elicit.answered",
          "elicit.asked",
          "elicit.expired",
          "hook.created",
          "hook.deleted",
          "participant.added",
          "participant.removed",
          "prompt.completed",
          "prompt.dequeued",
          "prompt.failed",
          "prompt.lease_expired",
          "prompt.queued",
          "prompt.released",
          "prompt.started",
          "schedule.created",
          "schedule.deleted",
          "schedule.fired",
          "schedule.missed",
          "session.created",
          "session.forked",
          "session.status",
          "session.tagged",
          "session.title",
          "transcript.cleared",
          "transcript.popped",
          "transcript.pruned",
          "transcript.redacted",
          "transcript.summarized",
          "ttl.set"
        ]
      },
      actor: {
        check: "name",
        optional: true
      },
      data: {
        check: "json_object",
        optional: false
      },
      at: {
        check: "time",
        optional: false
      }
    },
    requests: {
      id: {
        check: "positive",
        optional: false
      },
      status: {
        check: "enum",
        optional: false,
        values: [
          "pending",
          "answered",
          "expired"
        ]
      },
      prompt: {
        check: "nonempty",
        optional: false
      },
      choices: {
        check: "choices",
        optional: false
      },
      created_at: {
        check: "time",
        optional: false
      },
      expires_at: {
        check: "time",
        optional: true
      },
      answer: {
        check: "nonempty",
        optional: true
      },
      comment: {
        check: "text",
        optional: true
      },
      answered_by: {
        check: "name",
        optional: true
      },
      answered_at: {
        check: "time",
        optional: true
      },
      call_id: {
        check: "nonempty",
        optional: true
      },
      args: {
        check: "json",
        optional: true
      },
      args_sha256: {
        check: "nonempty",
        optional: true
      },
      approve: {
        check: "json",
        optional: true
      },
      approvers: {
        check: "json",
        optional: true
      }
    },
    facts: {
      key: {
        check: "name",
        optional: false
      },
      value: {
        check: "nonempty",
        optional: false
      },
      source: {
        check: "enum",
        optional: false,
        values: [
          "user",
          "model",
          "external"
        ]
      },
      confirmed: {
        check: "flag",
        optional: false
      },
      created_at: {
        check: "time",
        optional: false
      },
      confirmed_at: {
        check: "time",
        optional: true
      },
      expires_at: {
        check: "time",
        optional: true
      }
    },
    buckets: {
      key: {
        check: "name",
        optional: false
      },
      tokens: {
        check: "number",
        optional: false
      },
      updated_at: {
        check: "time",
        optional: false
      }
    },
    lg_checkpoints: {
      checkpoint_ns: {
        check: "text",
        optional: false
      },
      checkpoint_id: {
        check: "nonempty",
        optional: false
      },
      parent_checkpoint_id: {
        check: "nonempty",
        optional: true
      },
      type: {
        check: "text",
        optional: true
      },
      checkpoint: {
        check: "blob",
        optional: true
      },
      metadata: {
        check: "json",
        optional: false
      }
    },
    lg_writes: {
      checkpoint_ns: {
        check: "text",
        optional: false
      },
      checkpoint_id: {
        check: "nonempty",
        optional: false
      },
      task_id: {
        check: "nonempty",
        optional: false
      },
      task_path: {
        check: "text",
        optional: false
      },
      idx: {
        check: "int",
        optional: false
      },
      channel: {
        check: "nonempty",
        optional: false
      },
      type: {
        check: "text",
        optional: true
      },
      value: {
        check: "blob",
        optional: true
      }
    },
    lg_mirrored: {
      message_id: {
        check: "nonempty",
        optional: false
      },
      seq: {
        check: "positive",
        optional: true
      }
    },
    steps: {
      prompt_id: {
        check: "positive",
        optional: false
      },
      key: {
        check: "nonempty",
        optional: false
      },
      seq: {
        check: "positive",
        optional: false
      },
      status: {
        check: "enum",
        optional: false,
        values: [
          "running",
          "done",
          "abandoned"
        ]
      },
      attempt: {
        check: "count",
        optional: false
      },
      token: {
        check: "nonempty",
        optional: true
      },
      renewed_at: {
        check: "time",
        optional: true
      },
      runs: {
        check: "count",
        optional: false
      },
      replays: {
        check: "count",
        optional: false
      },
      last_replay_attempt: {
        check: "positive",
        optional: true
      },
      exit_status: {
        check: "int",
        optional: true
      },
      stdout: {
        check: "blob",
        optional: true
      },
      stdout_bytes: {
        check: "count",
        optional: true
      },
      output_too_large: {
        check: "flag",
        optional: false
      },
      redacted: {
        check: "flag",
        optional: false
      },
      call_id: {
        check: "nonempty",
        optional: true
      },
      args_sha256: {
        check: "nonempty",
        optional: true
      },
      approval: {
        check: "positive",
        optional: true
      },
      started_at: {
        check: "time",
        optional: false
      },
      ended_at: {
        check: "time",
        optional: true
      }
    },
    tags: {
      key: {
        check: "tag_key",
        optional: false
      },
      value: {
        check: "tag_value",
        optional: false
      }
    },
    schedules: {
      id: {
        check: "positive",
        optional: false
      },
      kind: {
        check: "enum",
        optional: false,
        values: [
          "at",
          "every",
          "cron"
        ]
      },
      content: {
        check: "text",
        optional: false
      },
      source: {
        check: "text",
        optional: true
      },
      author: {
        check: "name",
        optional: true
      },
      at: {
        check: "time",
        optional: true
      },
      every: {
        check: "positive",
        optional: true
      },
      cron: {
        check: "nonempty",
        optional: true
      },
      tz: {
        check: "nonempty",
        optional: true
      },
      next_at: {
        check: "time",
        optional: false
      },
      last_fired_at: {
        check: "time",
        optional: true
      },
      last_prompt_id: {
        check: "positive",
        optional: true
      },
      fired: {
        check: "count",
        optional: false
      },
      missed: {
        check: "count",
        optional: false
      },
      request_id: {
        check: "request_id",
        optional: true
      },
      request_hash: {
        check: "nonempty",
        optional: true
      },
      created_at: {
        check: "time",
        optional: false
      }
    },
    hooks: {
      id: {
        check: "positive",
        optional: false
      },
      url: {
        check: "nonempty",
        optional: false
      },
      events: {
        check: "json",
        optional: false
      },
      include_reply: {
        check: "flag",
        optional: false
      },
      secret: {
        check: "nonempty",
        optional: false
      },
      author: {
        check: "name",
        optional: true
      },
      created_at: {
        check: "time",
        optional: false
      }
    }
  },
  keys: {
    participants: "user",
    prompts: "id",
    turns: "seq",
    events: "seq",
    requests: "id",
    facts: "key",
    buckets: "key",
    tags: "key",
    schedules: "id",
    hooks: "id"
  },
  composite_keys: {
    lg_checkpoints: [
      "checkpoint_ns",
      "checkpoint_id"
    ],
    lg_writes: [
      "checkpoint_ns",
      "checkpoint_id",
      "task_id",
      "idx"
    ],
    lg_mirrored: [
      "message_id"
    ],
    steps: [
      "prompt_id",
      "key"
    ]
  },
  adapter_tables: {
    lg_checkpoints: "langgraph",
    lg_writes: "langgraph",
    lg_mirrored: "langgraph"
  },
  sequenced: [
    "prompts",
    "turns",
    "events",
    "requests",
    "schedules",
    "hooks"
  ],
  derived: {
    object: [
      "one",
      "live_turns",
      "live_tokens"
    ],
    turns: [
      "pos"
    ]
  },
  columns: {
    object: [
      "one",
      "id",
      "scope",
      "owner",
      "name",
      "title",
      "status",
      "created_at",
      "updated_at",
      "last_active_at",
      "ttl_seconds",
      "expires_at",
      "live_turns",
      "live_tokens",
      "external_id",
      "adapter"
    ],
    participants: [
      "user",
      "role",
      "joined_at"
    ],
    prompts: [
      "id",
      "status",
      "content",
      "author",
      "source",
      "request_id",
      "turn_seq",
      "created_at",
      "started_at",
      "lease_expires_at",
      "completed_at",
      "error",
      "attempts",
      "handed_back",
      "not_before",
      "on_expiry",
      "max_attempts",
      "start",
      "schedule_id"
    ],
    turns: [
      "seq",
      "role",
      "content",
      "tokens",
      "author",
      "created_at",
      "kind",
      "superseded_by",
      "covers_first",
      "covers_last",
      "call_id",
      "request_id",
      "tool_calls",
      "name",
      "meta",
      "data",
      "forked_from",
      "request_hash",
      "request_last"
    ],
    events: [
      "seq",
      "type",
      "actor",
      "data",
      "at"
    ],
    requests: [
      "id",
      "status",
      "prompt",
      "choices",
      "created_at",
      "expires_at",
      "answer",
      "comment",
      "answered_by",
      "answered_at",
      "call_id",
      "args",
      "args_sha256",
      "approve",
      "approvers"
    ],
    facts: [
      "key",
      "value",
      "source",
      "confirmed",
      "created_at",
      "confirmed_at",
      "expires_at"
    ],
    buckets: [
      "key",
      "tokens",
      "updated_at"
    ],
    lg_checkpoints: [
      "checkpoint_ns",
      "checkpoint_id",
      "parent_checkpoint_id",
      "type",
      "checkpoint",
      "metadata"
    ],
    lg_writes: [
      "checkpoint_ns",
      "checkpoint_id",
      "task_id",
      "task_path",
      "idx",
      "channel",
      "type",
      "value"
    ],
    lg_mirrored: [
      "message_id",
      "seq"
    ],
    steps: [
      "prompt_id",
      "key",
      "seq",
      "status",
      "attempt",
      "token",
      "renewed_at",
      "runs",
      "replays",
      "last_replay_attempt",
      "exit_status",
      "stdout",
      "stdout_bytes",
      "output_too_large",
      "redacted",
      "call_id",
      "args_sha256",
      "approval",
      "started_at",
      "ended_at"
    ],
    tags: [
      "key",
      "value"
    ],
    schedules: [
      "id",
      "kind",
      "content",
      "source",
      "author",
      "at",
      "every",
      "cron",
      "tz",
      "next_at",
      "last_fired_at",
      "last_prompt_id",
      "fired",
      "missed",
      "request_id",
      "request_hash",
      "created_at"
    ],
    hooks: [
      "id",
      "url",
      "events",
      "include_reply",
      "secret",
      "author",
      "created_at"
    ]
  },
  real: {
    object: [],
    participants: [],
    prompts: [],
    turns: [],
    events: [],
    requests: [],
    facts: [],
    buckets: [
      "tokens"
    ],
    lg_checkpoints: [],
    lg_writes: [],
    lg_mirrored: [],
    steps: [],
    tags: [],
    schedules: [],
    hooks: []
  },
  tables_exported: [
    "object",
    "participants",
    "prompts",
    "turns",
    "events",
    "requests",
    "facts",
    "buckets",
    "lg_checkpoints",
    "lg_writes",
    "lg_mirrored",
    "steps",
    "tags",
    "schedules",
    "hooks"
  ]
};

// src/rules/transcript/appends.ts
import { createHash as createHash2 } from "node:crypto";
var INSERT = "INSERT INTO turns (role, content, tokens, author, created_at, kind, call_id, tool_calls, name, meta, data, request_id, request_hash, request_last) VALUES (?, ?, ?, ?, ?, 'turn', ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq";
function insertRows(obj, rows, author, requestId = null, hash = null) {
  const t = now();
  const seqs = [];
  let tokens = 0;
  for (const r of rows) {
    const first2 = seqs.length === 0;
    seqs.push(obj.db.one(
      INSERT,
      r.role,
      r.content,
      r.tokens,
      author,
      t,
      r.call_id,
      r.tool_calls,
      r.name,
      r.meta,
      r.data,
      first2 ? requestId : null,
      first2 ? hash : null,
      null
    )[0]);
    tokens += r.tokens;
  }
  const first = seqs[0], last = seqs[seqs.length - 1];
  if (requestId !== null && last !== first) obj.db.run("UPDATE turns SET request_last = ? WHERE seq = ?", last, first);
  obj.db.run(
    "UPDATE object SET live_turns = live_turns + ?, live_tokens = live_tokens + ?, updated_at = ?, last_active_at = ?, expires_at = CASE WHEN ttl_seconds IS NULL THEN NULL ELSE ? + ttl_seconds * 1000 END",
    seqs.length,
    tokens,
    t,
    t,
    t
  );
  return seqs;
}
function insertTurn(obj, role, content, author) {
  return insertRows(obj, [prepare(obj, { role, content })], author)[0];
}
function rowsBetween(obj, first, last) {
  const rows = pageOrNull(obj, `SELECT ${COLS} FROM turns WHERE seq BETWEEN ? AND ? ORDER BY seq`, first, last);
  return rows ?? obj.db.all("SELECT seq FROM turns WHERE seq BETWEEN ? AND ? ORDER BY seq", first, last).map((r) => r[0]);
}
function oneRow(obj, seq) {
  return rowJson(obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, seq));
}
function requestHasher() {
  const h = createHash2("sha256").update("[");
  let n = 0;
  return {
    add(r) {
      h.update((n++ ? "," : "") + dumps([r.role, r.content, r.tool_calls, r.call_id, r.name, r.meta, r.data, r.given]));
    },
    digest: () => h.update("]").digest("hex")
  };
}
function eachRow(v2, what = "rows") {
  if (v2 == null) return [];
  if (typeof v2 !== "object" || !(Symbol.iterator in v2)) throw invalid(`${what} must be a list`);
  return v2;
}
function* prepared(obj, rows, where) {
  let i = 0;
  for (const r of rows) yield prepare(obj, r, where(i++));
}
function checkOrigin(origin) {
  if (origin == null) return null;
  if (!Array.isArray(origin) || origin.length !== 2 || typeof origin[0] !== "string" || typeof origin[1] !== "string") {
    throw invalid("origin must be [external_id, adapter]");
  }
  return [origin[0], origin[1]];
}
function appendMany(obj, a) {
  const input = eachRow(a.rows);
  const where = (i) => a.one ? "" : `row ${i + 1}: `;
  const requestId = validRequestId(a.request_id) ?? null;
  const hasher = requestHasher();
  let count = 0, only = null;
  for (const r of prepared(obj, input, where)) {
    if (count++ === 0) only = r;
    hasher.add(r);
  }
  if (!count) throw invalid(say("no_rows"));
  const digest = requestId !== null ? hasher.digest() : null;
  const origin = checkOrigin(a.origin);
  let meta = obj.meta();
  if (meta === null) {
    if (a.create === false) throw notFound(obj.missing);
    createObject(obj, "active");
    if (origin !== null) obj.db.run("UPDATE object SET external_id = ?, adapter = ?", origin[0], origin[1]);
    meta = obj.meta();
  } else {
    obj.requireVisible();
    if (origin !== null && meta.external_id === null) obj.db.run("UPDATE object SET external_id = ?, adapter = ?", origin[0], origin[1]);
  }
  if (requestId !== null) {
    const found = obj.db.one("SELECT seq, role, content, request_hash, coalesce(request_last, seq) FROM turns WHERE request_id = ?", requestId);
    if (found) {
      const same2 = found[3] !== null ? found[3] === digest : count === 1 && found[1] === only.role && found[2] === only.content;
      if (!same2) throw conflict(say("append_request_id_reused", { request_id: requestId, what: obj.what }));
      if (a.seqs_only) return obj.db.all("SELECT seq FROM turns WHERE seq BETWEEN ? AND ? ORDER BY seq", found[0], found[4]).map((r) => r[0]);
      return a.one ? oneRow(obj, found[0]) : rowsBetween(obj, found[0], found[4]);
    }
  }
  check(obj, "write", meta.status);
  const seqs = insertRows(obj, prepared(obj, input, where), obj.actor, requestId, digest);
  if (a.seqs_only) return seqs;
  return a.one ? oneRow(obj, seqs[0]) : rowsBetween(obj, seqs[0], seqs[seqs.length - 1]);
}

// src/rules/hooks.ts
var KINDS = ["completed", "failed", "cancelled"];
var MAX_HOOKS = 5;
var MAX_URL_BYTES = 2048;
var MAX_ERROR_BYTES = 4096;
var MAX_REPLY_BYTES = 64 * 1024;
var HOOK_COLUMNS = ["id", "url", "events", "include_reply", "secret", "author", "created_at"];
var DELIVERY_COLUMNS = [
  "id",
  "hook_id",
  "webhook_id",
  "type",
  "prompt_id",
  "status",
  "attempts",
  "created_at",
  "last_attempt_at",
  "next_attempt_at",
  "delivered_at",
  "last_response",
  "last_error"
];
var DELIVERY_TIMES = ["created_at", "last_attempt_at", "next_attempt_at", "delivered_at"];
var encoder2 = new TextEncoder();
var ALLOWED = [];
function allowHosts(variable) {
  ALLOWED = typeof variable === "string" ? variable.split(",").map((h) => hostKey(h.trim())).filter(Boolean) : [];
}
function hostKey(host) {
  let h = host.toLowerCase();
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  return h.endsWith(".") ? h.slice(0, -1) : h;
}
function ipv4Private(a) {
  const [x2, y2] = a;
  return x2 === 0 || x2 === 10 || x2 === 127 || x2 === 100 && y2 >= 64 && y2 <= 127 || x2 === 169 && y2 === 254 || x2 === 172 && y2 >= 16 && y2 <= 31 || x2 === 192 && y2 === 168 || x2 >= 224 && x2 <= 239 || a.every((n) => n === 255);
}
function ipv6Groups(text4) {
  let t = text4;
  const tail = [];
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(t);
  if (dotted) {
    const b2 = dotted[2].split(".").map(Number);
    tail.push(b2[0] << 8 | b2[1], b2[2] << 8 | b2[3]);
    t = dotted[1].endsWith("::") ? dotted[1] : dotted[1].slice(0, -1);
  }
  const [head, rest] = t.includes("::") ? t.split("::") : [t, null];
  const hex2 = (s3) => s3 ? s3.split(":").map((g2) => parseInt(g2, 16)) : [];
  const left = hex2(head), right = rest === null ? [] : hex2(rest);
  const fill = 8 - tail.length - left.length - right.length;
  if (fill < 0 || rest === null && fill !== 0) return null;
  const groups = [...left, ...new Array(fill).fill(0), ...right, ...tail];
  return groups.some((g2) => Number.isNaN(g2)) ? null : groups;
}
function localHost(hostname) {
  const h = hostKey(hostname);
  if (h === "localhost" || h.endsWith(".localhost") || h.endsWith(".local") || h.endsWith(".internal")) return true;
  if (/^\d+\.\d+\.\d+\.\d+$/.test(h)) return ipv4Private(h.split(".").map(Number));
  if (h.includes(":")) {
    const g2 = ipv6Groups(h);
    if (g2 === null) return true;
    if (g2.every((x2) => x2 === 0) || g2.slice(0, 7).every((x2) => x2 === 0) && g2[7] === 1) return true;
    if (g2.slice(0, 5).every((x2) => x2 === 0) && g2[5] === 65535) return ipv4Private([g2[6] >> 8, g2[6] & 255, g2[7] >> 8, g2[7] & 255]);
    return (g2[0] & 65024) === 64512 || (g2[0] & 65472) === 65152 || (g2[0] & 65280) === 65280;
  }
  return false;
}
function validUrl(url, remote = true) {
  const bad = invalid([...`invalid --url ${pyRepr(url)}: use an http:// or https:// URL with a host and no user name or password`].slice(0, 300).join(""));
  if (typeof url !== "string" || !url || encoder2.encode(url).length > MAX_URL_BYTES) throw bad;
  if (hasSpace(url) || /[\u0000-\u001f]/.test(url)) throw bad;
  const authority = /^https?:\/\/([^/?#]+)/i.exec(url);
  if (authority === null || authority[1].includes("@")) throw bad;
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw bad;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:" || !parsed.hostname || parsed.username || parsed.password) throw bad;
  if (remote && localHost(parsed.hostname) && !ALLOWED.includes(hostKey(parsed.hostname))) {
    throw invalid(`invalid --url ${pyRepr([...url].slice(0, 200).join(""))}: its host ${parsed.hostname} is local or private, which a remote Worker does not call (list it in the Worker's DURABLE_HOOK_ALLOW_HOSTS to allow it)`);
  }
  return url;
}
function validEvents(events2) {
  if (events2 == null) return [...KINDS];
  const items = typeof events2 === "string" ? events2.split(",") : Array.isArray(events2) ? events2 : [events2];
  for (const item of items) {
    if (!KINDS.includes(item)) throw invalid(`invalid --events item ${pyRepr(item)}: use a comma-separated list of completed, failed, cancelled`);
  }
  return KINDS.filter((k2) => items.includes(k2));
}
function validSecret(secret) {
  const bad = invalid("invalid --secret-file: it must hold whsec_ followed by the standard base64 of 24 to 64 bytes");
  if (typeof secret !== "string" || !secret.startsWith("whsec_")) throw bad;
  const b643 = secret.slice(6);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b643) || b643.length % 4 !== 0) throw bad;
  const n = atob(b643).length;
  if (n < 24 || n > 64) throw bad;
  return secret;
}
var b64 = (bytes2) => btoa(String.fromCharCode(...bytes2));
function hookJson(r) {
  const h = {};
  HOOK_COLUMNS.forEach((k2, i) => h[k2] = r[i]);
  h.events = JSON.parse(h.events);
  h.include_reply = !!h.include_reply;
  h.created_at = iso(h.created_at);
  return h;
}
function deliveryJson(r) {
  const d = {};
  DELIVERY_COLUMNS.forEach((k2, i) => d[k2] = r[i]);
  for (const k2 of DELIVERY_TIMES) d[k2] = iso(d[k2]);
  return d;
}
function owner(obj, doing) {
  requireSession(obj);
  obj.requireVisible();
  obj.requireOwner(doing);
}
function dropRemovedReplies(obj) {
  const rows = obj.db.all(`SELECT id, body FROM deliveries WHERE status = 'pending' AND body LIKE '%"reply":"%'`);
  for (const [id, body] of rows) {
    const doc = JSON.parse(body);
    const data = doc.data;
    if (data.reply == null || obj.db.one(
      "SELECT 1 FROM turns WHERE role = 'assistant' AND seq > ? AND content = ? LIMIT 1",
      data.turn_seq ?? 0,
      data.reply
    )) continue;
    data.reply = null;
    obj.db.run("UPDATE deliveries SET body = ? WHERE id = ?", JSON.stringify(doc), id);
  }
}
function create(obj, a) {
  validUrl(a.url);
  const kinds = validEvents(a.events);
  const secret = a.secret != null ? validSecret(a.secret) : "whsec_" + b64(crypto.getRandomValues(new Uint8Array(32)));
  owner(obj, "add a hook");
  if (obj.meta().status === "archived") throw conflict(`${obj.what} is archived (read-only): unarchive it to add a hook`);
  const count = Number(obj.db.one("SELECT count(*) FROM hooks")[0]);
  if (count >= MAX_HOOKS) throw conflict(`too many hooks: ${obj.what} has ${count} (at most ${MAX_HOOKS}); unhook one first`);
  const id = obj.db.one(
    "INSERT INTO hooks (url, events, include_reply, secret, author, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
    a.url,
    JSON.stringify(kinds).replace(/","/g, '", "'),
    a.include_reply ? 1 : 0,
    secret,
    obj.actor,
    now()
  )[0];
  event(obj, "hook.created", { hook_id: id, events: kinds });
  touch(obj);
  return hookJson(obj.db.one(`SELECT ${HOOK_COLUMNS.join(", ")} FROM hooks WHERE id = ?`, id));
}
function hooks(obj, _a) {
  owner(obj, "list its hooks");
  return obj.db.all(`SELECT ${HOOK_COLUMNS.join(", ")} FROM hooks ORDER BY id`).map(hookJson);
}
function hook(obj, id) {
  const r = obj.db.one(`SELECT ${HOOK_COLUMNS.join(", ")} FROM hooks WHERE id = ?`, id);
  if (!r) throw notFound(`no hook ${id} in ${obj.what}; see 'durable session hooks ${obj.name}'`);
  return hookJson(r);
}
function unhook(obj, a) {
  requireSession(obj);
  obj.requireVisible();
  const found = hook(obj, a.hook_id);
  obj.requireOwner("delete a hook");
  obj.db.run("DELETE FROM deliveries WHERE hook_id = ?", a.hook_id);
  obj.db.run("DELETE FROM hooks WHERE id = ?", a.hook_id);
  event(obj, "hook.deleted", { hook_id: a.hook_id });
  touch(obj);
  return found;
}
var DELIVERIES_PAGE = CONSTANTS.webhooks.list_page;
function deliveries(obj, a) {
  if (a.status != null && !["pending", "delivered", "failed"].includes(a.status)) {
    throw invalid(`invalid --status ${pyRepr(a.status)}: use pending, delivered or failed`);
  }
  requireSession(obj);
  obj.requireVisible();
  if (a.hook_id != null) hook(obj, a.hook_id);
  obj.requireOwner("list its deliveries");
  const where = [], params = [];
  if (a.hook_id != null) {
    where.push("hook_id = ?");
    params.push(a.hook_id);
  }
  if (a.status != null) {
    where.push("status = ?");
    params.push(a.status);
  }
  if (a.after != null) {
    where.push("id > ?");
    params.push(a.after);
  }
  const rows = obj.db.all(
    `SELECT ${DELIVERY_COLUMNS.join(", ")} FROM deliveries${where.length ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY id LIMIT ?`,
    ...params,
    DELIVERIES_PAGE + 1
  ).map(deliveryJson);
  const more = rows.length > DELIVERIES_PAGE;
  const page = rows.slice(0, DELIVERIES_PAGE);
  return { rows: page, next: more ? page[page.length - 1].id : null };
}
function cut(text4, limit) {
  if (text4 === null || text4 === void 0) return null;
  const data = encoder2.encode(text4);
  if (data.length <= limit) return text4;
  let end = limit - 3;
  while (end > 0 && (data[end] & 192) === 128) end--;
  return new TextDecoder().decode(data.subarray(0, end)) + "\u2026";
}
function outcome(obj, p, kind2) {
  const subscribed = obj.db.all("SELECT id, events, include_reply FROM hooks ORDER BY id").filter((h) => JSON.parse(h[1]).includes(kind2));
  if (!subscribed.length) return 0;
  const meta = obj.meta();
  let reply = null;
  if (kind2 === "completed" && p.turn_seq !== null) {
    const r = obj.db.one("SELECT content FROM turns WHERE seq > ? AND role = 'assistant' AND superseded_by IS NULL ORDER BY seq DESC LIMIT 1", p.turn_seq);
    if (r && encoder2.encode(r[0]).length <= MAX_REPLY_BYTES) reply = r[0];
  }
  const t = now();
  const type = "prompt." + kind2;
  for (const [hookId, , includeReply] of subscribed) {
    const data = {
      hook_id: hookId,
      session: meta.name,
      session_id: meta.id,
      scope: meta.scope,
      owner: meta.owner,
      prompt_id: p.id,
      request_id: p.request_id,
      source: p.source,
      schedule_id: p.schedule_id,
      status: p.status,
      error: cut(p.error, MAX_ERROR_BYTES),
      attempts: p.attempts,
      turn_seq: p.turn_seq,
      created_at: p.created_at,
      started_at: p.started_at,
      completed_at: p.completed_at,
      reply: includeReply ? reply : null
    };
    const body = JSON.stringify({ type, timestamp: p.completed_at, data });
    const webhookId = "msg_" + [...crypto.getRandomValues(new Uint8Array(16))].map((b2) => b2.toString(16).padStart(2, "0")).join("");
    obj.db.run("INSERT INTO deliveries (hook_id, webhook_id, type, prompt_id, body, status, created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)", hookId, webhookId, type, p.id, body, t, t);
  }
  return subscribed.length;
}

// src/rules/transcript/edits.ts
function pop(obj, a) {
  const count = a.count ?? 1;
  if (!isInt2(count) || count < 1) throw invalid(say("pop_count"));
  const meta = requireVisible(obj);
  refuseRewriteIfOwned(obj, meta, "be popped");
  check(obj, "write", meta.status);
  if (!obj.db.one("SELECT 1 FROM turns WHERE superseded_by IS NULL LIMIT 1")) throw conflict(say("pop_empty", { what: obj.what }));
  const removed = [];
  for (let i = 0; i < count; i++) {
    const r = obj.db.one(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT 1`);
    if (!r) break;
    obj.db.run("DELETE FROM turns WHERE seq = ?", r[SEQ]);
    let restored = [0, 0];
    if (r[KIND] === "summary") {
      restored = obj.db.one("SELECT count(*), coalesce(sum(tokens), 0) FROM turns WHERE superseded_by = ?", r[SEQ]);
      obj.db.run("UPDATE turns SET superseded_by = NULL WHERE superseded_by = ?", r[SEQ]);
    } else obj.db.run("UPDATE prompts SET turn_seq = NULL WHERE turn_seq = ?", r[SEQ]);
    obj.db.run("UPDATE object SET live_turns = live_turns - 1 + ?, live_tokens = live_tokens - ? + ?", restored[0], r[TOKENS], restored[1]);
    removed.push(rowJson(r));
  }
  dropRemovedReplies(obj);
  event(obj, "transcript.popped", { seqs: removed.map((r) => r.seq) });
  touch(obj);
  return removed;
}
function clear(obj) {
  const meta = requireVisible(obj);
  refuseRewriteIfOwned(obj, meta, "be cleared");
  const n = obj.db.one("SELECT count(*) FROM turns")[0];
  if (n === 0) return { deleted: 0 };
  check(obj, "write", meta.status);
  obj.db.run("DELETE FROM turns");
  obj.db.run("UPDATE prompts SET turn_seq = NULL WHERE turn_seq IS NOT NULL");
  obj.db.run("UPDATE object SET live_turns = 0, live_tokens = 0");
  dropRemovedReplies(obj);
  event(obj, "transcript.cleared", { deleted: n });
  touch(obj);
  return { deleted: n };
}
function redact(obj, a) {
  const meta = requireVisible(obj);
  const row4 = obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, a.seq);
  if (!row4) throw notFound(say("row_not_found", { seq: a.seq, what: obj.what, name: obj.name }));
  refuseRewriteIfOwned(obj, meta, "be redacted");
  const calls = row4[CALLS] ? JSON.parse(row4[CALLS]).map((c2) => ({ ...c2, arguments: "{}" })) : null;
  const parts = [REDACTED];
  for (const c2 of calls ?? []) parts.push(c2.name, c2.arguments);
  const count = approx(parts.join("\n"));
  obj.db.run("UPDATE turns SET content = ?, tokens = ?, tool_calls = ?, data = NULL WHERE seq = ?", REDACTED, count, calls ? dumps(calls) : null, a.seq);
  if (row4[SUPERSEDED] === null) obj.db.run("UPDATE object SET live_tokens = live_tokens - ? + ?", row4[TOKENS], count);
  obj.db.run("UPDATE prompts SET content = ? WHERE turn_seq = ?", REDACTED, a.seq);
  obj.db.run("UPDATE steps SET stdout = NULL, redacted = 1 WHERE prompt_id IN (SELECT id FROM prompts WHERE turn_seq = ?)", a.seq);
  dropRemovedReplies(obj);
  event(obj, "transcript.redacted", { seq: a.seq });
  touch(obj);
  return rowJson(obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, a.seq));
}
var PRUNED = "[pruned]";
function dropRemovedTokens(obj) {
  obj.db.run("INSERT INTO turns_fts (turns_fts) VALUES ('optimize')");
  dropRemovedReplies(obj);
}
function prune(obj, a) {
  const olderThan = a.older_than;
  if (!isInt2(olderThan) || olderThan < 0) throw invalid("--older-than must be a non-negative number of seconds");
  refuseRewriteIfOwned(obj, requireVisible(obj), "be pruned");
  const dryRun = !!a.dry_run;
  const cutoff = now() - olderThan * 1e3;
  const pin = new Set(pinned(obj).map((r) => r[SEQ]));
  const doomed = /* @__PURE__ */ new Set();
  for (const [s3] of obj.db.all("SELECT seq FROM turns WHERE created_at < ?", cutoff)) if (!pin.has(s3)) doomed.add(s3);
  let frontier = obj.db.all("SELECT seq FROM turns WHERE kind = 'summary' AND created_at < ?", cutoff).map((r) => r[0]).filter((s3) => doomed.has(s3));
  const inParts = (sql, seqs) => {
    const out = [];
    for (let i = 0; i < seqs.length; i += 100) {
      const part = seqs.slice(i, i + 100);
      for (const r of obj.db.all(sql(marks(part.length)), ...part)) out.push(r[0]);
    }
    return out;
  };
  while (frontier.length) {
    const more = inParts((m) => `SELECT seq FROM turns WHERE superseded_by IN (${m})`, frontier).filter((s3) => !doomed.has(s3));
    for (const s3 of more) doomed.add(s3);
    frontier = more.length ? inParts((m) => `SELECT seq FROM turns WHERE kind = 'summary' AND seq IN (${m})`, more) : [];
  }
  if (dryRun || doomed.size === 0) return { deleted: doomed.size, dry_run: dryRun };
  for (const s3 of [...doomed].sort((x2, y2) => x2 - y2)) {
    obj.db.run("DELETE FROM steps WHERE prompt_id IN (SELECT id FROM prompts WHERE turn_seq = ? AND status NOT IN ('pending', 'processing'))", s3);
    obj.db.run("DELETE FROM turns WHERE seq = ?", s3);
    obj.db.run("UPDATE prompts SET content = ?, turn_seq = NULL WHERE turn_seq = ?", PRUNED, s3);
  }
  const live2 = obj.db.one("SELECT count(*), coalesce(sum(tokens), 0) FROM turns WHERE superseded_by IS NULL");
  obj.db.run("UPDATE object SET live_turns = ?, live_tokens = ?", live2[0], live2[1]);
  dropRemovedTokens(obj);
  event(obj, "transcript.pruned", { deleted: doomed.size, older_than_seconds: olderThan });
  touch(obj, false);
  return { deleted: doomed.size, dry_run: false };
}
function replaceTail(obj, a) {
  const rows = (a.rows ?? []).map((r, i) => prepare(obj, r, `item ${i + 1}: `));
  const origin = checkOrigin(a.origin);
  const meta = requireVisible(obj);
  refuseRewriteIfOwned(obj, meta, "be compacted");
  check(obj, "write", meta.status);
  const expected = a.expected ?? [];
  if (!expected.length) return false;
  const tail = obj.db.all(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT ?`, expected.length).reverse();
  if (tail.length !== expected.length || tail.some((r, i) => r[SEQ] !== expected[i] || r[KIND] !== "turn")) return false;
  for (const r of tail) {
    obj.db.run("DELETE FROM turns WHERE seq = ?", r[SEQ]);
    obj.db.run("UPDATE prompts SET turn_seq = NULL WHERE turn_seq = ?", r[SEQ]);
  }
  obj.db.run(
    "UPDATE object SET live_turns = live_turns - ?, live_tokens = live_tokens - ?",
    tail.length,
    tail.reduce((sum, r) => sum + r[TOKENS], 0)
  );
  dropRemovedTokens(obj);
  event(obj, "transcript.popped", { seqs: [...expected].reverse() });
  if (origin !== null && meta.external_id === null) obj.db.run("UPDATE object SET external_id = ?, adapter = ?", origin[0], origin[1]);
  if (rows.length) insertRows(obj, rows, obj.actor);
  touch(obj);
  return true;
}

// src/rules/rights.ts
var TABLES = records_default.tables;
var COLUMNS = records_default.columns;
var KEYS = records_default.keys;
var SEQUENCED = records_default.sequenced;
var DERIVED = records_default.derived;
var EXPORTED = records_default.tables_exported;
var COMPOSITE = records_default.composite_keys;
var ADAPTER_TABLES = records_default.adapter_tables;
function isBase64(s3) {
  if (s3.length % 4 !== 0) return false;
  const pad = s3.endsWith("==") ? 2 : s3.endsWith("=") ? 1 : 0;
  return !/[^A-Za-z0-9+/]/.test(pad ? s3.slice(0, -pad) : s3);
}
var MAX_INT = 2 ** 63 - 1;
var utf82 = (s3) => new TextEncoder().encode(s3).length;
var isInt3 = (v2) => typeof v2 === "number" && Number.isInteger(v2);
var EXPORT_PAGE_ROWS = 1e3;
var EXPORT_PAGE_BYTES = 524288;
var COMPOSITE_KEYS = records_default.composite_keys;
function exportObject(obj, a) {
  const meta = obj.meta();
  if (meta === null) throw notFound(obj.missing);
  if (!a.all_users) obj.requireVisible();
  let c2 = a.cursor ?? null;
  if (c2 !== null && (typeof c2 !== "object" || !Number.isSafeInteger(c2.t) || c2.t < 1 || c2.t > EXPORTED.length || !Number.isSafeInteger(c2.after) || c2.highs === null || typeof c2.highs !== "object" || c2.key != null && (!Array.isArray(c2.key) || c2.key.some((k2) => typeof k2 !== "string" && !Number.isSafeInteger(k2))))) {
    throw invalid("cursor must be the `next` of the previous page");
  }
  const out = { tables: {} };
  if (c2 === null) {
    const highs = {};
    for (const table of EXPORTED.slice(1)) {
      const ddl = obj.db.one("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", table);
      if (ddl && !/WITHOUT ROWID/i.test(String(ddl[0]))) highs[table] = Number(obj.db.one(`SELECT coalesce(max(rowid), 0) FROM ${table}`)[0]);
    }
    const m = obj.db.dicts("SELECT * FROM object")[0];
    delete m.one;
    out.head = {
      format: records_default.format,
      version: records_default.version,
      id: m.id,
      scope: m.scope,
      owner: m.owner,
      name: m.name,
      object: withBlobsAsText([m])[0]
    };
    c2 = { t: 1, after: 0, highs };
  }
  let rows = 0, bytes2 = 0;
  for (let i = c2.t; i < EXPORTED.length; i++) {
    const table = EXPORTED[i];
    const list = out.tables[table] = [];
    const high = c2.highs[table];
    if (high === void 0) {
      const keys = COMPOSITE_KEYS[table];
      if (!keys) {
        if (i !== c2.t || c2.after === 0) list.push(...withBlobsAsText(obj.db.dicts(`SELECT * FROM ${table}`)));
        continue;
      }
      const from = i === c2.t && Array.isArray(c2.key) && c2.key.length === keys.length ? c2.key : null;
      const sql = `SELECT * FROM ${table}${from ? ` WHERE (${keys.join(", ")}) > (${keys.map(() => "?").join(", ")})` : ""} ORDER BY ${keys.join(", ")}`;
      for (const d of obj.db.dictIter(sql, ...from ?? [])) {
        list.push(withBlobsAsText([d])[0]);
        rows++;
        for (const v2 of Object.values(d)) if (typeof v2 === "string") bytes2 += v2.length;
        else if (v2 instanceof ArrayBuffer) bytes2 += v2.byteLength;
        if (rows >= EXPORT_PAGE_ROWS || bytes2 >= EXPORT_PAGE_BYTES) return { ...out, next: { t: i, after: 0, highs: c2.highs, key: keys.map((k2) => d[k2]) } };
      }
      continue;
    }
    const after = i === c2.t ? c2.after : 0;
    for (const d of obj.db.dictIter(`SELECT rowid AS "__rowid", * FROM ${table} WHERE rowid > ? AND rowid <= ? ORDER BY rowid`, after, high)) {
      const rowid = d.__rowid;
      delete d.__rowid;
      list.push(withBlobsAsText([d])[0]);
      rows++;
      for (const v2 of Object.values(d)) if (typeof v2 === "string") bytes2 += v2.length;
      else if (v2 instanceof ArrayBuffer) bytes2 += v2.byteLength;
      if (rows >= EXPORT_PAGE_ROWS || bytes2 >= EXPORT_PAGE_BYTES) return { ...out, next: { t: i, after: rowid, highs: c2.highs } };
    }
  }
  out.sequences = Object.fromEntries(obj.db.all("SELECT name, seq FROM sqlite_sequence").filter((r) => SEQUENCED.includes(r[0])).map((r) => [r[0], r[1]]));
  return { ...out, next: null };
}
function blobText(v2) {
  if (!(v2 instanceof ArrayBuffer) && !ArrayBuffer.isView(v2)) return v2;
  const bytes2 = v2 instanceof ArrayBuffer ? new Uint8Array(v2) : new Uint8Array(v2.buffer, v2.byteOffset, v2.byteLength);
  let s3 = "";
  for (let i = 0; i < bytes2.length; i += 32768) s3 += String.fromCharCode(...bytes2.subarray(i, i + 32768));
  return btoa(s3);
}
function blobBytes(v2) {
  const s3 = atob(v2);
  const out = new Uint8Array(s3.length);
  for (let i = 0; i < s3.length; i++) out[i] = s3.charCodeAt(i);
  return out;
}
var withBlobsAsText = (rows) => rows.map((r) => Object.fromEntries(Object.entries(r).map(([k2, v2]) => [k2, blobText(v2)])));
var Bad = class extends Error {
};
var clip = (s3) => [...s3].slice(0, 300).join("");
function text2(v2) {
  if (typeof v2 !== "string") throw new Bad(say("record_not_string", { kind: kind(v2) }));
  if (/\p{Cs}/u.test(v2)) throw new Bad(say("record_surrogate"));
  return v2;
}
function kind(v2) {
  if (v2 === null || v2 === void 0) return "null";
  if (typeof v2 === "boolean") return "a boolean";
  if (isInt3(v2)) return "an integer";
  if (typeof v2 === "number") return "a number";
  if (typeof v2 === "string") return "a string";
  return Array.isArray(v2) ? "an array" : "an object";
}
function int(v2) {
  if (!isInt3(v2) || Math.abs(v2) > MAX_INT) throw new Bad(say("record_not_integer", { kind: kind(v2) }));
  return v2;
}
function jsonText(v2, lexemes) {
  text2(v2);
  let value;
  try {
    value = JSON.parse(v2);
  } catch {
    throw new Bad(say("record_not_json"));
  }
  const why = scan(v2, MAX_DEPTH, lexemes, false, true);
  if (why === LONE_MESSAGE) throw new Bad(say("record_surrogate"));
  if (why !== null) throw new Bad(say("record_not_rfc_json", { why }));
  return value;
}
var plainObject = (v2) => v2 !== null && typeof v2 === "object" && !Array.isArray(v2);
var CHECKS = {
  text: (v2) => text2(v2),
  nonempty: (v2) => {
    if (text2(v2) === "") throw new Bad(say("record_empty"));
  },
  name: (v2) => {
    text2(v2);
    try {
      validName(v2);
    } catch {
      throw new Bad(say("record_name", { value: v2 }));
    }
  },
  int: (v2) => int(v2),
  count: (v2) => {
    if (int(v2) < 0) throw new Bad(say("record_negative"));
  },
  positive: (v2) => {
    if (int(v2) < 1) throw new Bad(say("record_not_positive"));
  },
  time: (v2) => {
    if (!isInt3(v2) || v2 < 0 || v2 > records_default.max_time) throw new Bad(clip(say("record_time", { max: records_default.max_time, value: v2 })));
  },
  ttl: (v2) => {
    if (int(v2) < 1) throw new Bad(say("record_not_positive"));
    if (v2 > records_default.max_ttl) throw new Bad(say("record_ttl"));
  },
  title: (v2) => {
    text2(v2);
    const n = [...v2].length;
    if (n < 1 || n > 200 || !printable(v2) || v2 !== strip(v2)) throw new Bad(say("record_title"));
  },
  tag_key: (v2) => {
    text2(v2);
    try {
      validKey(v2);
    } catch (e) {
      throw new Bad(e.message);
    }
  },
  tag_value: (v2) => {
    text2(v2);
    try {
      validValue("", v2);
    } catch {
      throw new Bad(say("record_tag_value"));
    }
  },
  request_id: (v2) => {
    text2(v2);
    const n = [...v2].length;
    if (n < 1 || n > 128 || !printable(v2)) throw new Bad(say("record_request_id"));
  },
  hex_id: (v2) => {
    text2(v2);
    if (!/^[0-9a-f]{64}$/.test(v2)) throw new Bad(say("record_hex_id"));
  },
  flag: (v2) => {
    if (v2 !== 0 && v2 !== 1) throw new Bad(say("record_flag"));
  },
  number: (v2) => {
    if (typeof v2 !== "number" || !Number.isFinite(v2) || v2 < 0) throw new Bad(say("record_number"));
  },
  one: (v2) => {
    if (v2 !== 1) throw new Bad(say("record_one"));
  },
  blob: (v2) => {
    text2(v2);
    if (!isBase64(v2)) throw new Bad(say("record_blob"));
  },
  json: (v2) => jsonText(v2),
  json_object: (v2) => {
    if (!plainObject(jsonText(v2))) throw new Bad(say("record_json_object"));
  },
  choices: (v2) => {
    const c2 = jsonText(v2);
    if (!Array.isArray(c2) || c2.some((x2) => typeof x2 !== "string" || x2 === "")) throw new Bad(say("record_choices"));
    if (new Set(c2).size !== c2.length) throw new Bad(say("record_duplicate_choice"));
  },
  json_tool_calls: (v2) => {
    let calls;
    try {
      calls = toolCalls(jsonText(v2), "");
    } catch (e) {
      if (e instanceof DurableError) throw new Bad(clip(say("record_not_valid", { why: e.message })));
      throw e;
    }
    if (!calls.length) throw new Bad(say("record_no_tool_call"));
  },
  json_meta: (v2) => {
    const lexemes = /* @__PURE__ */ new Map();
    const problem = metaProblem(jsonText(v2, lexemes), lexemes);
    if (problem !== null) throw new Bad(clip(say("record_not_valid", { why: problem })));
  },
  enum: (v2, rule) => {
    if (typeof v2 !== "string" || !rule.values.includes(v2)) throw new Bad(clip(say("record_enum", { value: v2, values: rule.values.join(", ") })));
  }
};
function checkContent(c2, address, limit) {
  let where = "record";
  try {
    if (!plainObject(c2)) throw new Bad(say("record_not_object"));
    const out = {};
    for (const table of Object.keys(TABLES)) {
      const spec = TABLES[table];
      if (table === "object") {
        where = "object";
        out.object = row(c2.object, spec, COLUMNS.object, "object", (w2) => where = w2);
        continue;
      }
      where = table;
      const rows = c2[table] ?? [];
      if (!Array.isArray(rows)) throw new Bad(say("record_not_array"));
      const key = KEYS[table];
      const composite = COMPOSITE[table];
      const seen = /* @__PURE__ */ new Set();
      out[table] = rows.map((r, i) => {
        const got = row(r, spec, COLUMNS[table], `${table}[${i}]`, (w2) => where = w2);
        if (key) {
          if (seen.has(got[key])) {
            where = `${table}[${i}].${key}`;
            throw new Bad(say("record_twice", { value: got[key] }));
          }
          seen.add(got[key]);
        } else if (composite) {
          const value = JSON.stringify(composite.map((c3) => got[c3]));
          if (seen.has(value)) {
            where = `${table}[${i}]`;
            throw new Bad(clip(say("record_repeats_key", { columns: composite.join(", "), value: `(${composite.map((c3) => pyRepr(got[c3])).join(", ")})` })));
          }
          seen.add(value);
        }
        return got;
      });
      const cmp = (a, b2) => a < b2 ? -1 : a > b2 ? 1 : 0;
      if (key) out[table].sort((a, b2) => cmp(a[key], b2[key]));
      else if (composite) out[table].sort((a, b2) => composite.reduce((o, c3) => o || cmp(a[c3], b2[c3]), 0));
    }
    for (const k2 of Object.keys(c2)) {
      if (!(k2 in TABLES) && k2 !== "sequences") {
        where = k2.slice(0, 60);
        throw new Bad(say("record_unknown_field"));
      }
    }
    const meta = out.object;
    const scope = meta.scope === "session" ? "user" : meta.scope;
    if (scope !== address.id_scope || meta.owner !== address.owner || meta.name !== address.name) {
      where = "object";
      throw new Bad("disagrees with the record's scope, owner and name");
    }
    if (meta.scope !== "reserved") CHECKS.name(meta.name, { check: "name", optional: false });
    else if (meta.name !== "") {
      where = "name";
      throw new Bad(say("record_reserved_name"));
    }
    if (meta.ttl_seconds === null !== (meta.expires_at === null)) {
      where = "object.expires_at";
      throw new Bad(say("record_ttl_expiry"));
    }
    if (meta.scope === "reserved" && meta.title !== null) {
      where = "object.title";
      throw new Bad(say("record_reserved_title"));
    }
    relations(out, meta.scope, meta.owner, limit, (w2) => where = w2);
    out.sequences = sequences(c2.sequences ?? {}, out, (w2) => where = w2);
    const live2 = out.turns.filter((t) => t.superseded_by === null);
    out.live = { live_turns: live2.length, live_tokens: live2.reduce((s3, t) => s3 + t.tokens, 0) };
    return out;
  } catch (e) {
    if (e instanceof Bad) throw invalid(say("record_invalid", { where, why: e.message }));
    throw e;
  }
}
function row(r, spec, current3, label2, at) {
  at(label2);
  if (!plainObject(r)) throw new Bad(say("record_not_object"));
  for (const column of Object.keys(r)) {
    if (!(column in spec)) {
      at(`${label2}.${column.slice(0, 60)}`);
      throw new Bad(say("record_unknown_column"));
    }
  }
  const out = {};
  for (const column of current3) {
    const rule = spec[column];
    at(`${label2}.${column}`);
    const v2 = r[column] === void 0 ? null : r[column];
    if (rule === void 0) {
      out[column] = null;
      continue;
    }
    if (v2 === null) {
      if (!rule.optional) throw new Bad(say("record_missing"));
    } else CHECKS[rule.check](v2, rule);
    out[column] = v2;
  }
  return out;
}
function relations(c2, scope, owner2, limit, at) {
  const people = c2.participants;
  at("participants");
  if (scope === "user" || scope === "session") {
    if (people.length !== 1 || people[0].user !== owner2 || people[0].role !== "owner") throw new Bad(say("record_user_participants", { owner: owner2 }));
  } else if (scope === "tenant") {
    if (!people.some((p) => p.role === "owner")) throw new Bad(say("record_tenant_owner"));
  } else {
    for (const t of ["participants", "prompts", "turns", "events", "requests"]) if (c2[t].length) {
      at(t);
      throw new Bad(say("record_reserved_empty"));
    }
  }
  if (scope !== "reserved") {
    for (const t of ["facts", "buckets"]) if (c2[t].length) {
      at(t);
      throw new Bad(say("record_reserved_only"));
    }
  }
  if ((c2.tags?.length ?? 0) > CONSTANTS.limits.tags) {
    at("tags");
    throw new Bad(say("record_too_many_tags", { limit: CONSTANTS.limits.tags }));
  }
  for (const [t, adapter] of Object.entries(ADAPTER_TABLES)) {
    if (c2[t]?.length && c2.object.adapter !== adapter) {
      at(t);
      throw new Bad(say("record_adapter_only", { adapter }));
    }
  }
  const turns = new Map(c2.turns.map((t) => [t.seq, t]));
  const tooLarge2 = (size) => {
    if (size > limit) throw new Bad(say("record_too_large", { size, limit }));
  };
  c2.turns.forEach((t, i) => {
    const label2 = `turns[${i}]`;
    at(`${label2}.content`);
    if (t.content === "" && !(t.tool_calls || t.data !== null)) throw new Bad(say("record_empty"));
    let size = utf82(t.content);
    for (const k2 of ["tool_calls", "meta", "data"]) if (t[k2] !== null) size += utf82(t[k2]);
    tooLarge2(size);
    at(`${label2}.covers_first`);
    if (t.kind === "summary") {
      const [first, last] = [t.covers_first, t.covers_last];
      if (!(last === null && first === t.seq && t.forked_from !== null) && (first === null || last === null || !(first <= last && last < t.seq))) {
        throw new Bad(say("record_covers"));
      }
    } else if (t.covers_first !== null || t.covers_last !== null) throw new Bad(say("record_covers_null"));
    at(`${label2}.call_id`);
    if (t.call_id !== null && t.role !== "tool") throw new Bad(say("record_call_id_tool"));
    at(`${label2}.superseded_by`);
    const by = t.superseded_by;
    if (by === 0) {
      if (t.kind === "summary" || c2.object.adapter !== "langgraph") throw new Bad(say("record_superseded_by", { by }));
    } else if (by !== null && (!turns.has(by) || turns.get(by).kind !== "summary" || by <= t.seq)) throw new Bad(say("record_superseded_by", { by }));
  });
  unique(c2.turns, "turns", "request_id", at);
  unique(c2.prompts, "prompts", "request_id", at);
  c2.prompts.forEach((p, i) => {
    at(`prompts[${i}].content`);
    tooLarge2(utf82(p.content));
  });
  c2.requests.forEach((r, i) => {
    at(`requests[${i}].prompt`);
    tooLarge2(utf82(r.prompt) + utf82(r.choices));
    at(`requests[${i}].answer`);
    const choices = JSON.parse(r.choices);
    if (r.status === "answered") {
      if (r.answer === null || choices.length && !choices.includes(r.answer)) throw new Bad(say("record_answer", { answer: r.answer }));
    } else if (r.answer !== null) throw new Bad(say("record_answer_null", { status: r.status }));
  });
  c2.events.forEach((e, i) => {
    at(`events[${i}].data`);
    tooLarge2(utf82(e.data));
  });
  c2.facts.forEach((f2, i) => {
    at(`facts[${i}].value`);
    tooLarge2(utf82(f2.value));
  });
}
function unique(rows, table, column, at) {
  const seen = /* @__PURE__ */ new Set();
  rows.forEach((r, i) => {
    if (r[column] === null) return;
    if (seen.has(r[column])) {
      at(`${table}[${i}].${column}`);
      throw new Bad(say("record_twice", { value: r[column] }));
    }
    seen.add(r[column]);
  });
}
function sequences(given, c2, at) {
  at("sequences");
  if (!plainObject(given)) throw new Bad(say("record_not_object"));
  const out = {};
  for (const [table, value] of Object.entries(given)) {
    at(`sequences.${table.slice(0, 60)}`);
    if (!SEQUENCED.includes(table)) throw new Bad(say("record_no_sequence"));
    if (int(value) < 0) throw new Bad(say("record_negative"));
    const top = Math.max(0, ...c2[table].map((r) => r[KEYS[table]]));
    if (value < top) throw new Bad(say("record_below_key", { value, top }));
    out[table] = value;
  }
  for (const table of SEQUENCED) {
    if (c2[table].length && !(table in out)) out[table] = Math.max(...c2[table].map((r) => r[KEYS[table]]));
  }
  return out;
}
function owners(c2) {
  return new Set(c2.participants.filter((p) => p.role === "owner").map((p) => p.user));
}
function label(obj) {
  const a = obj.address;
  return a.id_scope === "user" ? say("owned_label", { what: obj.what, user: a.owner }) : obj.what;
}
function precheck(obj, a, exists) {
  const checked2 = checkContent(a.record, obj.address, obj.config.max_turn_bytes);
  const listed = !!a.all_users || obj.address.id_scope !== "tenant" || owners(checked2).has(obj.actor);
  if (!listed && !exists) throw denied(refusal2(obj));
  return checked2;
}
function refusal2(obj) {
  return say("import_not_listed", { label: label(obj), actor: obj.actor });
}
function importObject(obj, a) {
  const checked2 = precheck(obj, a, true);
  const listed = !!a.all_users || obj.address.id_scope !== "tenant" || owners(checked2).has(obj.actor);
  const entry2 = { id: obj.id, owner: obj.address.owner, name: obj.address.name };
  const stored = canonical(obj);
  const present = stored.object !== null && (stored.object.expires_at === null || stored.object.expires_at > now());
  if (present) {
    const role = stored.participants.find((p) => p.user === obj.actor)?.role ?? null;
    if (obj.address.id_scope === "tenant" && !a.all_users) {
      if (role === null) throw conflict(say("import_name_taken", { label: label(obj) }));
      if (role !== "owner") throw denied(say("import_owner_only", { label: label(obj) }));
    }
    if (same(stored, checked2, obj.id)) return { ...entry2, already: "already imported" };
    if (!a.replace && a.keep_existing) return { ...entry2, already: say("already_imported_changed") };
    if (!a.replace) throw conflict(say("import_exists", { label: label(obj) }));
    if (!listed) throw denied(say("import_takes_session", { label: label(obj), actor: obj.actor }));
  } else if (!listed) throw denied(refusal2(obj));
  write(obj, checked2);
  return { ...entry2, what: present ? "replaced" : "imported" };
}
function canonical(obj) {
  const c2 = {};
  for (const table of Object.keys(COLUMNS)) {
    const keep = COLUMNS[table].filter((k2) => !(DERIVED[table] ?? []).includes(k2));
    const order = KEYS[table] ? ` ORDER BY ${KEYS[table]}` : COMPOSITE[table] ? ` ORDER BY ${COMPOSITE[table].join(", ")}` : "";
    c2[table] = withBlobsAsText(obj.db.dicts(`SELECT ${keep.join(", ")} FROM ${table}${order}`));
  }
  c2.object = c2.object.length ? c2.object[0] : null;
  c2.sequences = Object.fromEntries(obj.db.all("SELECT name, seq FROM sqlite_sequence").filter((r) => SEQUENCED.includes(r[0])).map((r) => [r[0], r[1]]));
  return c2;
}
function same(stored, checked2, id) {
  const norm = (c2, withId) => {
    const out = {};
    for (const table of Object.keys(COLUMNS)) {
      const keep = COLUMNS[table].filter((k2) => !(DERIVED[table] ?? []).includes(k2));
      const rows = table === "object" ? [withId ? { ...c2.object, id } : c2.object] : c2[table];
      out[table] = rows.map((r) => keep.map((k2) => r[k2] ?? null));
    }
    out.sequences = SEQUENCED.filter((t) => t in c2.sequences).map((t) => [t, c2.sequences[t]]);
    return JSON.stringify(out);
  };
  return norm(stored, false) === norm(checked2, true);
}
function write(obj, c2) {
  for (const table of Object.keys(COLUMNS)) obj.db.run(`DELETE FROM ${table}`);
  obj.db.run("DELETE FROM sqlite_sequence");
  const insert = (table, rows) => {
    const cols = COLUMNS[table];
    const sql = `INSERT INTO ${table} (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`;
    const blob = (k2) => TABLES[table]?.[k2]?.check === "blob";
    for (const r of rows) obj.db.run(sql, ...cols.map((k2) => r[k2] === void 0 || r[k2] === null ? null : blob(k2) ? blobBytes(r[k2]) : r[k2]));
  };
  insert("object", [{ ...c2.object, id: obj.id, one: 1, ...c2.live }]);
  for (const table of Object.keys(COLUMNS)) if (table !== "object") insert(table, c2[table]);
  obj.db.run("DELETE FROM sqlite_sequence");
  for (const [name, seq] of Object.entries(c2.sequences)) obj.db.run("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", name, seq);
}
var ROLES2 = CONSTANTS.row_roles;
var SNIPPET = "snippet(turns_fts, -1, '[', ']', '\u2026', 16)";
function searchMatch(query) {
  if (!strip(query)) throw invalid(say("empty_search"));
  const match = plainQuery(query);
  if (match === null) throw invalid(say("search_no_word", { query }));
  return match;
}
function searchObject(obj, a) {
  const meta = obj.meta();
  if (meta === null || obj.address.id_scope === "tenant" && obj.role() === null) return { hits: [], last_active_at: null };
  if (typeof a.query !== "string" || !strip(a.query)) throw invalid(say("empty_search"));
  const match = a.fts ? a.query : searchMatch(a.query);
  if (a.role != null && !ROLES2.includes(a.role)) throw invalid(say("invalid_search_role", { role: a.role, roles: ROLES2.join(", ") }));
  if (!isInt3(a.limit) || a.limit < 0) throw invalid(say("limit_negative"));
  if (a.cutoff != null && !isInt3(a.cutoff)) throw invalid("--newer-than must be a duration");
  const where = ["turns_fts MATCH ?"];
  const args = [match];
  if (!a.superseded) where.push("t.superseded_by IS NULL");
  if (a.role != null) {
    where.push("t.role = ?");
    args.push(a.role);
  }
  if (a.cutoff != null) {
    where.push("t.created_at >= ?");
    args.push(a.cutoff);
  }
  args.push(Math.min(a.limit, Number.MAX_SAFE_INTEGER));
  let rows;
  try {
    rows = obj.db.all(`SELECT t.seq, t.role, t.created_at, turns_fts.rank, ${SNIPPET} FROM turns_fts JOIN turns t ON t.seq = turns_fts.rowid WHERE ${where.join(" AND ")} ORDER BY turns_fts.rank, t.seq LIMIT ?`, ...args);
  } catch (e) {
    throw invalid(say("invalid_search_query", { query: a.query, why: e.message }));
  }
  const hits = rows.map(([seq, role, created, rank, snippet]) => ({ rank, seq, role, created_at: created, snippet }));
  return { hits, last_active_at: meta.last_active_at, id: meta.id, name: meta.name };
}

// src/rules/elicit.ts
import { createHash as createHash3 } from "node:crypto";
var COLS2 = "id, status, prompt, choices, created_at, expires_at, answer, comment, answered_by, answered_at, approvers, call_id, args, args_sha256, approve";
var MAX_APPROVERS = 32;
var requestJson = (r) => {
  const approve2 = r[14] === null || r[14] === void 0 ? null : JSON.parse(r[14]);
  let approved = null;
  if (r[11] !== null && r[11] !== void 0 && r[1] === "answered") approved = r[6] !== null && approve2.includes(r[6]);
  else if (r[11] !== null && r[11] !== void 0 && r[1] === "expired") approved = false;
  return {
    id: r[0],
    status: r[1],
    prompt: r[2],
    choices: JSON.parse(r[3]),
    created_at: iso(r[4]),
    expires_at: iso(r[5]),
    answer: r[6],
    comment: r[7],
    answered_by: r[8],
    answered_at: iso(r[9]),
    approvers: r[10] === null || r[10] === void 0 ? [] : JSON.parse(r[10]),
    call_id: r[11] ?? null,
    args: r[12] === null || r[12] === void 0 ? null : JSON.parse(r[12]),
    args_sha256: r[13] ?? null,
    approve: approve2,
    approved
  };
};
function canonical2(value) {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return "[" + value.map(canonical2).join(",") + "]";
  const o = value;
  return "{" + Object.keys(o).sort().map((k2) => JSON.stringify(k2) + ":" + canonical2(o[k2])).join(",") + "}";
}
var argsSha256 = (value) => createHash3("sha256").update(canonical2(value)).digest("hex");
function checkBinding(obj, a, choices) {
  const approvers = [...new Set(a.approvers ?? [])];
  if ((a.approvers ?? []).length > MAX_APPROVERS) throw invalid(`at most ${MAX_APPROVERS} --approver users may be named`);
  for (const u of approvers) validName(u, "user");
  let approve2 = [...a.approve ?? []];
  const callId = a.call_id ?? null;
  const hasArgs = a.args !== null && a.args !== void 0;
  if (callId === null !== !hasArgs) throw invalid("--call-id and --args go together: give both, or neither");
  if (callId === null) {
    if (approve2.length) throw invalid("--approve needs --call-id and --args: it names the choices that approve a tool call");
    return { choices, approve: null, argsText: null, sha: null, approvers };
  }
  if (typeof callId !== "string" || [...callId].length < 1 || [...callId].length > 128 || !printable(callId)) {
    throw invalid("invalid --call-id: use 1-128 printable characters");
  }
  if (!choices.length) {
    choices = ["approve", "decline"];
    if (!approve2.length) approve2 = ["approve"];
  } else if (!approve2.length) throw invalid("say which choices approve the call with --approve");
  for (const c2 of approve2) {
    if (!choices.includes(c2)) throw invalid(say("choice_not_offered", { choice: c2, choices: choices.join(", ") }));
  }
  approve2 = [...new Set(approve2)];
  const argsText = JSON.stringify(a.args);
  const enc = new TextEncoder();
  const size = enc.encode(a.prompt).length + enc.encode(pyJson(choices)).length + enc.encode(argsText).length;
  const limit = obj.config.max_turn_bytes;
  if (size > limit) {
    throw invalid(`the request is ${size} bytes with its choices and arguments, more than transcript.max_turn_bytes (${limit})`);
  }
  return { choices, approve: approve2, argsText, sha: argsSha256(a.args), approvers };
}
function visible(obj) {
  requireSession(obj);
  obj.requireVisible();
}
function get(obj, a) {
  visible(obj);
  const r = obj.db.one(`SELECT ${COLS2} FROM requests WHERE id = ?`, a.request_id);
  if (!r) throw notFound(say("request_not_found", { id: a.request_id, what: obj.what, name: obj.name }));
  return requestJson(r);
}
function pyJson(items) {
  const str2 = (s3) => JSON.stringify(s3).replace(/[\u007f-\uffff]/g, (c2) => "\\u" + c2.charCodeAt(0).toString(16).padStart(4, "0"));
  return "[" + items.map(str2).join(", ") + "]";
}
function checkAsk(prompt2, choices) {
  if (typeof prompt2 !== "string" || !prompt2 || !strip(prompt2)) throw invalid(say("empty_prompt"));
  if (!Array.isArray(choices)) throw invalid(say("empty_choice"));
  for (const c2 of choices) if (typeof c2 !== "string" || !c2) throw invalid(say("empty_choice"));
  if (new Set(choices).size !== choices.length) throw invalid(say("duplicate_choice"));
  return choices;
}
function ask2(obj, a) {
  const key = validRequestId(a.request_id) ?? null;
  const b2 = checkBinding(obj, a, checkAsk(a.prompt, a.choices ?? []));
  const choices = b2.choices;
  visible(obj);
  if (key !== null) {
    const made = obj.db.one("SELECT json_extract(data, '$.request_id') FROM events WHERE type = 'elicit.asked' AND json_extract(data, '$.key') = ? ORDER BY seq LIMIT 1", key);
    if (made) {
      const asked = get(obj, { request_id: made[0] });
      const sameApprovers = JSON.stringify([...asked.approvers].sort()) === JSON.stringify([...b2.approvers].sort());
      if (asked.prompt !== a.prompt || JSON.stringify(asked.choices) !== JSON.stringify(choices) || asked.call_id !== (a.call_id ?? null) || asked.args_sha256 !== b2.sha || !sameApprovers) {
        throw conflict(say("ask_request_id_reused", { request_id: key, what: obj.what }));
      }
      return asked;
    }
  }
  const t = now();
  check(obj, "write");
  const id = obj.db.one(
    "INSERT INTO requests (status, prompt, choices, created_at, expires_at, approvers, call_id, args, args_sha256, approve) VALUES ('pending', ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
    a.prompt,
    pyJson(choices),
    t,
    a.timeout_seconds ? t + a.timeout_seconds * 1e3 : null,
    b2.approvers.length ? pyJson(b2.approvers) : null,
    a.call_id ?? null,
    b2.argsText,
    b2.sha,
    b2.approve === null ? null : pyJson(b2.approve)
  )[0];
  event(obj, "elicit.asked", key === null ? { request_id: id } : { request_id: id, key });
  touch(obj);
  return get(obj, { request_id: id });
}
function decline(obj, a) {
  if (a.action !== "decline" && a.action !== "cancel" && a.action !== "accept") {
    throw invalid(say("invalid_elicit_action", { action: a.action }));
  }
  const request = get(obj, a);
  const choice = a.choice ?? null;
  if (a.action === "accept") {
    if (!choice) throw invalid(say("empty_choice"));
    if (request.choices.length && !request.choices.includes(choice)) {
      throw invalid(say("choice_not_offered", { choice, choices: request.choices.join(", ") }));
    }
  }
  if (request.status !== "pending") throw conflict(say("request_not_pending", { id: a.request_id, what: obj.what, status: request.status }));
  const [answer3, comment] = a.action === "accept" ? [choice, null] : [null, a.action];
  obj.db.run(
    "UPDATE requests SET status = 'answered', answer = ?, comment = ?, answered_by = ?, answered_at = ? WHERE id = ?",
    answer3,
    comment,
    request.approvers.length ? request.approvers[0] : obj.actor,
    now(),
    a.request_id
  );
  event(obj, "elicit.answered", { request_id: a.request_id, answer: answer3 });
  touch(obj);
  return get(obj, a);
}
function listRequests(obj, a) {
  visible(obj);
  const where = a.pending_only ? "WHERE status = 'pending'" : "";
  return obj.db.all(`SELECT ${COLS2} FROM requests ${where} ORDER BY id`).map(requestJson);
}
function answer2(obj, a) {
  const request = get(obj, a);
  if (request.choices.length && !request.choices.includes(a.choice)) {
    throw invalid(say("choice_not_offered", { choice: a.choice, choices: request.choices.join(", ") }));
  }
  if (!a.choice) throw invalid(say("empty_choice"));
  if (request.approvers.length && !request.approvers.includes(obj.actor)) {
    throw denied(`${obj.actor} may not answer request ${a.request_id} of ${obj.what}: only ${request.approvers.join(", ")} may (its --approver)`);
  }
  if (request.status !== "pending") throw conflict(say("request_not_pending", { id: a.request_id, what: obj.what, status: request.status }));
  obj.db.run(
    "UPDATE requests SET status = 'answered', answer = ?, comment = ?, answered_by = ?, answered_at = ? WHERE id = ?",
    a.choice,
    a.comment ?? null,
    obj.actor,
    now(),
    a.request_id
  );
  event(obj, "elicit.answered", { request_id: a.request_id, answer: a.choice });
  touch(obj);
  return get(obj, a);
}
function expire(obj, t) {
  const ids = obj.db.all("SELECT id FROM requests WHERE status = 'pending' AND expires_at <= ?", t).map((r) => r[0]);
  for (const id of ids) {
    obj.db.run("UPDATE requests SET status = 'expired' WHERE id = ?", id);
    event(obj, "elicit.expired", { request_id: id }, null);
  }
  if (ids.length) touch(obj, false);
  return ids.length;
}

// src/rules/sessions.ts
var PROMPT_COLUMNS = [
  "id",
  "status",
  "content",
  "author",
  "source",
  "request_id",
  "turn_seq",
  "attempts",
  "start",
  "created_at",
  "started_at",
  "lease_expires_at",
  "completed_at",
  "error",
  "schedule_id"
];
var ORDER_KEY = "coalesce(handed_back, 9223372036854775807)";
var QUEUE_ORDER = `${ORDER_KEY}, id`;
var MAX_INT2 = 9223372036854775807n;
var isPositive = (v2) => Number.isSafeInteger(v2) && v2 >= 1 || typeof v2 === "bigint" && v2 >= 1n && v2 <= MAX_INT2;
var TIMES = ["created_at", "started_at", "lease_expires_at", "completed_at"];
function create2(obj, a) {
  const given = validSet(a.tags);
  if (obj.meta() !== null) {
    obj.requireVisible();
    throw conflict(say("session_exists", { what: obj.what, name: obj.name }));
  }
  createObject(obj, "created", a.title != null ? validTitle(a.title) : null, a.ttl_seconds ?? null);
  put(obj, given);
  return sessionJson(obj);
}
function show2(obj) {
  requireSession(obj);
  return sessionJson(obj);
}
var PROMPT_KEYS = [
  "id",
  "status",
  "content",
  "author",
  "source",
  "request_id",
  "turn_seq",
  "position",
  "attempts",
  "start",
  "schedule_id",
  "created_at",
  "started_at",
  "lease_expires_at",
  "completed_at",
  "error"
];
function promptJson(r) {
  const row4 = {};
  PROMPT_COLUMNS.forEach((k2, i) => row4[k2] = r[i]);
  for (const k2 of TIMES) row4[k2] = iso(row4[k2]);
  const p = {};
  for (const k2 of PROMPT_KEYS) p[k2] = row4[k2] ?? null;
  return p;
}
function promptRow(obj, id) {
  const r = obj.db.one(`SELECT ${PROMPT_COLUMNS.join(", ")} FROM prompts WHERE id = ?`, id);
  if (!r) throw notFound(say("prompt_not_found", { id, what: obj.what, name: obj.name }));
  return r;
}
function getPrompt(obj, a) {
  const p = promptJson(promptRow(obj, a.prompt_id));
  p.position = p.status === "pending" ? obj.db.one(`SELECT count(*) FROM prompts, (SELECT ${ORDER_KEY} AS k FROM prompts WHERE id = ?1) AS me WHERE status = 'pending' AND (${ORDER_KEY} < me.k OR (${ORDER_KEY} = me.k AND id <= ?1))`, a.prompt_id)[0] : null;
  return p;
}
function recompute(obj, current3) {
  let to;
  if (obj.db.one("SELECT 1 FROM prompts WHERE status IN ('pending', 'processing') LIMIT 1")) to = "active";
  else {
    const last = obj.db.one("SELECT status FROM prompts WHERE status IN ('completed', 'failed') ORDER BY completed_at DESC, id DESC LIMIT 1");
    to = last ? last[0] : "created";
  }
  setStatus(obj, to, current3);
}
function prompt(obj, a) {
  checkText(obj, a.content);
  validRequestId(a.request_id);
  if (typeof a.request_id === "string" && a.request_id.startsWith("schedule:")) throw invalid(say("reserved_request_id", { request_id: a.request_id }));
  let meta = obj.meta();
  if (meta === null) {
    if (!a.created) throw notFound(obj.missing);
    createObject(obj, "active");
    meta = obj.meta();
  } else obj.requireVisible();
  if (a.request_id != null) {
    const row4 = obj.db.one("SELECT id, content FROM prompts WHERE request_id = ?", a.request_id);
    if (row4) {
      if (row4[1] !== a.content) throw conflict(say("prompt_request_id_reused", { request_id: a.request_id, what: obj.what }));
      return getPrompt(obj, { prompt_id: row4[0] });
    }
  }
  const to = check(obj, "prompt", meta.status);
  const unfinished = obj.db.one("SELECT count(*) FROM prompts WHERE status IN ('pending', 'processing')")[0];
  const limit = obj.config.max_unfinished;
  if (unfinished >= limit) {
    if (a.waiting) return null;
    throw conflict(say("queue_full", { what: obj.what, unfinished, limit }));
  }
  const id = obj.db.one(
    "INSERT INTO prompts (status, content, author, source, request_id, created_at) VALUES ('pending', ?, ?, ?, ?, ?) RETURNING id",
    a.content,
    obj.actor,
    a.source ?? null,
    a.request_id ?? null,
    now()
  )[0];
  event(obj, "prompt.queued", { prompt_id: id });
  setStatus(obj, to, meta.status);
  touch(obj);
  return getPrompt(obj, { prompt_id: id });
}
function validPolicy(onExpiry, maxAttempts) {
  if (onExpiry !== "fail" && onExpiry !== "retry") throw invalid(say("invalid_on_lease_expiry", { value: onExpiry }));
  if (!isPositive(maxAttempts)) throw invalid(say("invalid_max_attempts", { value: maxAttempts }));
  return [onExpiry, maxAttempts];
}
function validAttempt(attempt) {
  if (attempt == null) return null;
  if (!isPositive(attempt)) throw invalid(say("invalid_attempt", { attempt }));
  return attempt;
}
function nextPrompt(obj, a) {
  const [onExpiry, maxAttempts] = validPolicy(a.on_expiry ?? "fail", a.max_attempts ?? 3);
  const meta = requireSession(obj);
  obj.requireVisible();
  check(obj, "next", meta.status);
  const busy = obj.db.one("SELECT id FROM prompts WHERE status = 'processing' LIMIT 1");
  if (busy) {
    if (a.waiting) return null;
    throw conflict(say("prompt_still_processing", { id: busy[0], what: obj.what, name: obj.name }));
  }
  const t = now();
  const row4 = obj.db.one(`SELECT id, content, author, turn_seq FROM prompts WHERE status = 'pending' AND (not_before IS NULL OR not_before <= ?) ORDER BY ${QUEUE_ORDER} LIMIT 1`, t);
  if (!row4) return null;
  const [id, content, author] = row4;
  let seq = row4[3];
  if (seq === null || obj.db.one("SELECT max(seq) FROM turns WHERE superseded_by IS NULL")[0] !== seq) seq = insertTurn(obj, "user", content, author);
  obj.db.run(
    "UPDATE prompts SET status = 'processing', started_at = ?, lease_expires_at = ?, turn_seq = ?, attempts = attempts + 1, start = start + 1, handed_back = NULL, not_before = NULL, on_expiry = ?, max_attempts = ? WHERE id = ?",
    t,
    t + a.lease_seconds * 1e3,
    seq,
    onExpiry,
    maxAttempts,
    id
  );
  event(obj, "prompt.started", { prompt_id: id, turn_seq: seq });
  touch(obj);
  const window = a.context != null ? contextWindow(obj, { budget: a.context, keep: seq }) : void 0;
  const p = getPrompt(obj, { prompt_id: id });
  if (a.context != null) p.window = window;
  return p;
}
function processing(obj, id, doing, attempt = null) {
  requireSession(obj);
  obj.requireVisible();
  const r = promptRow(obj, id);
  if (r[1] !== "processing") throw conflict(say("prompt_not_processing", { id, what: obj.what, status: r[1], doing }));
  const current3 = r[PROMPT_COLUMNS.indexOf("start")];
  if (attempt !== null && Number(attempt) !== Number(current3)) {
    throw conflict(say("prompt_lease_lost", { id, what: obj.what, current: current3, attempt, doing }));
  }
}
function renew(obj, a) {
  processing(obj, a.prompt_id, "renewed", validAttempt(a.attempt));
  obj.db.run("UPDATE prompts SET lease_expires_at = ? WHERE id = ?", now() + a.lease_seconds * 1e3, a.prompt_id);
  touch(obj, false);
  return getPrompt(obj, a);
}
var FINISH_ROLES = ["assistant", "tool"];
function finish(obj, a) {
  const attempt = validAttempt(a.attempt);
  const failed = !!a.failed || a.error != null;
  const given = eachRow(a.rows);
  const fields2 = function* () {
    yield* given;
    if (a.reply != null) yield { role: "assistant", content: a.reply };
  };
  const prepared2 = function* () {
    let i = 0;
    for (const r of fields2()) yield prepare(obj, r, `line ${++i}: `);
  };
  let count = 0, last = null, badRole = null;
  for (const r of prepared2()) {
    count++;
    if (badRole === null && !FINISH_ROLES.includes(r.role)) badRole = [count, r.role];
    last = r;
  }
  if (badRole !== null) throw invalid(say("finish_row_role", { line: badRole[0], role: badRole[1] }));
  if (last !== null && !failed && (last.role !== "assistant" || last.tool_calls != null)) {
    throw invalid(say("finish_unended", { line: count }));
  }
  processing(obj, a.prompt_id, "finished", attempt);
  const meta = obj.meta();
  if (count) insertRows(obj, prepared2(), obj.actor);
  obj.db.run(
    "UPDATE prompts SET status = ?, completed_at = ?, lease_expires_at = NULL, error = ? WHERE id = ?",
    failed ? "failed" : "completed",
    now(),
    failed ? a.error ?? null : null,
    a.prompt_id
  );
  event(obj, failed ? "prompt.failed" : "prompt.completed", failed ? { prompt_id: a.prompt_id, error: a.error ?? null } : { prompt_id: a.prompt_id });
  outcome2(obj, a.prompt_id, failed ? "failed" : "completed");
  recompute(obj, meta.status);
  touch(obj);
  return getPrompt(obj, a);
}
function handBack(obj, id, delaySeconds = 0, notAnAttempt = false) {
  obj.db.run(
    "UPDATE prompts SET status = 'pending', lease_expires_at = NULL, started_at = NULL, handed_back = (SELECT coalesce(max(handed_back), 0) + 1 FROM prompts), not_before = ?, attempts = max(attempts - ?, 0) WHERE id = ?",
    delaySeconds ? now() + delaySeconds * 1e3 : null,
    notAnAttempt ? 1 : 0,
    id
  );
}
function release(obj, a) {
  const attempt = validAttempt(a.attempt);
  const delay = a.delay_seconds ?? 0;
  if (!Number.isSafeInteger(delay) || delay < 0 || delay > 36500 * 86400) throw invalid(say("invalid_delay", { delay }));
  processing(obj, a.prompt_id, "released", attempt);
  const meta = obj.meta();
  handBack(obj, a.prompt_id, delay, !!a.not_an_attempt);
  const attempts = obj.db.one("SELECT attempts FROM prompts WHERE id = ?", a.prompt_id)[0];
  event(obj, "prompt.released", { prompt_id: a.prompt_id, attempts, delay });
  recompute(obj, meta.status);
  touch(obj);
  return getPrompt(obj, a);
}
function outcome2(obj, id, kind2) {
  if (obj.db.one("SELECT 1 FROM hooks LIMIT 1")) outcome(obj, getPrompt(obj, { prompt_id: id }), kind2);
}
function failProcessing(obj, error, type = "prompt.failed", where = "status = 'processing'", params = [], actor = void 0, kind2 = "failed") {
  const t = now();
  const ids = obj.db.all(`SELECT id FROM prompts WHERE ${where} ORDER BY id`, ...params).map((r) => r[0]);
  for (const id of ids) {
    obj.db.run("UPDATE prompts SET status = 'failed', completed_at = ?, lease_expires_at = NULL, error = ? WHERE id = ?", t, error, id);
    event(obj, type, { prompt_id: id, error }, actor);
    outcome2(obj, id, kind2);
  }
  return ids.length;
}
function stop(obj) {
  const meta = requireSession(obj);
  obj.requireVisible();
  if (!obj.db.one("SELECT 1 FROM prompts WHERE status = 'processing'")) return sessionJson(obj);
  failProcessing(obj, "stopped", "prompt.failed", "status = 'processing'", [], void 0, "cancelled");
  recompute(obj, meta.status);
  touch(obj);
  return sessionJson(obj);
}
function cancel(obj) {
  const meta = requireSession(obj);
  obj.requireVisible();
  const to = check(obj, "cancel", meta.status);
  failProcessing(obj, "cancelled", "prompt.failed", "status IN ('pending', 'processing')", [], void 0, "cancelled");
  setStatus(obj, to, meta.status);
  touch(obj);
  return sessionJson(obj);
}
function archive(obj) {
  const meta = requireSession(obj);
  obj.requireVisible();
  if (check(obj, "archive", null, meta.status === "archived") === null) return sessionJson(obj);
  const to = check(obj, "archive", meta.status);
  const queued = obj.db.one("SELECT count(*) FROM prompts WHERE status IN ('pending', 'processing')")[0];
  if (queued) throw conflict(say("archive_busy", { what: obj.what, queued }));
  setStatus(obj, to, meta.status);
  touch(obj);
  return sessionJson(obj);
}
function unarchive(obj) {
  const meta = requireSession(obj);
  obj.requireVisible();
  const to = check(obj, "unarchive", meta.status);
  setStatus(obj, to, meta.status);
  touch(obj);
  return sessionJson(obj);
}
function setTitle(obj, a) {
  const title = validTitle(a.title);
  const meta = requireSession(obj);
  obj.requireVisible();
  if (meta.title !== title) {
    obj.db.run("UPDATE object SET title = ?", title);
    event(obj, "session.title", { title });
    touch(obj);
  }
  return sessionJson(obj);
}
function checkInvite(user, role) {
  validName(user, "user");
  if (role !== "owner" && role !== "member") throw invalid(say("invalid_participant_role", { role }));
}
function invite(obj, a) {
  const role = a.role ?? "member";
  checkInvite(a.user, role);
  requireSession(obj);
  obj.requireVisible();
  check(obj, "invite");
  if (obj.address.id_scope !== "tenant") throw conflict(say("participants_tenant_only", { what: obj.what }));
  const current3 = obj.db.one("SELECT role FROM participants WHERE user = ?", a.user);
  if (!current3) {
    const count = Number(obj.db.one("SELECT count(*) FROM participants")[0]);
    if (count >= CONSTANTS.limits.participants) throw conflict(say("too_many_participants", { what: obj.what, count }));
  }
  if (!current3 || current3[0] !== role) {
    obj.db.run("INSERT INTO participants (user, role, joined_at) VALUES (?, ?, ?) ON CONFLICT (user) DO UPDATE SET role = excluded.role", a.user, role, now());
    event(obj, "participant.added", { user: a.user, role });
    touch(obj, false);
  }
  return sessionJson(obj);
}
function dequeue(obj, a) {
  const meta = requireSession(obj);
  obj.requireVisible();
  const r = promptRow(obj, a.prompt_id);
  if (r[1] !== "pending") throw conflict(say("prompt_not_pending", { id: a.prompt_id, what: obj.what, status: r[1] }));
  obj.db.run("DELETE FROM prompts WHERE id = ?", a.prompt_id);
  event(obj, "prompt.dequeued", { prompt_id: a.prompt_id });
  recompute(obj, meta.status);
  touch(obj);
  return sessionJson(obj);
}
function queue(obj, a) {
  requireSession(obj);
  obj.requireVisible();
  const positions = /* @__PURE__ */ new Map();
  obj.db.all(`SELECT id FROM prompts WHERE status = 'pending' ORDER BY ${QUEUE_ORDER}`).forEach((r, i) => positions.set(Number(r[0]), i + 1));
  const [where, order] = a.pending_only ? ["WHERE status = 'pending'", QUEUE_ORDER] : ["", "id"];
  return obj.db.all(`SELECT ${PROMPT_COLUMNS.join(", ")} FROM prompts ${where} ORDER BY ${order}`).map((r) => {
    const p = promptJson(r);
    p.position = positions.get(Number(p.id)) ?? null;
    return p;
  });
}
function events(obj, a) {
  requireSession(obj);
  obj.requireVisible();
  return obj.db.all("SELECT seq, type, actor, data, at FROM events WHERE seq > ? ORDER BY seq", a.since ?? 0).map(([seq, type, actor, data, at]) => ({ seq, type, actor, data: JSON.parse(data), at: iso(at) }));
}
var UI_EVENTS = 50;
var UI_FINISHED = 20;
function sessionPage(obj, a) {
  requireSession(obj);
  obj.requireVisible();
  const pending = obj.db.all(`SELECT ${COLS2} FROM requests WHERE status = 'pending' ORDER BY id`).map(requestJson);
  const answered = obj.db.all(`SELECT ${COLS2} FROM requests WHERE status != 'pending' ORDER BY id DESC LIMIT ?`, UI_FINISHED).map(requestJson);
  const columns = PROMPT_COLUMNS.join(", ");
  const active = obj.db.all(`SELECT ${columns} FROM prompts WHERE status = 'processing' ORDER BY id`).map(promptJson);
  obj.db.all(`SELECT ${columns} FROM prompts WHERE status = 'pending' ORDER BY ${QUEUE_ORDER}`).forEach((r, i) => {
    const p = promptJson(r);
    p.position = i + 1;
    active.push(p);
  });
  const finished = obj.db.all(`SELECT ${columns} FROM prompts WHERE status NOT IN ('pending', 'processing') ORDER BY id DESC LIMIT ?`, UI_FINISHED).map(promptJson);
  const where = a.events_before != null ? "WHERE seq < ?" : "";
  const params = a.events_before != null ? [a.events_before] : [];
  let events2 = obj.db.all(`SELECT seq, type, actor, data, at FROM events ${where} ORDER BY seq DESC LIMIT ?`, ...params, UI_EVENTS + 1).map(([seq, type, actor, data, at]) => ({ seq, type, actor, data: JSON.parse(data), at: iso(at) }));
  const more = events2.length > UI_EVENTS;
  events2 = events2.slice(0, UI_EVENTS);
  return {
    info: sessionJson(obj),
    pending,
    answered,
    queue: { active, finished },
    events: events2,
    events_before: more ? events2[events2.length - 1].seq : null
  };
}
function participants(obj) {
  requireSession(obj);
  obj.requireVisible();
  return sessionJson(obj).participants;
}
function expireLeases(obj, t) {
  const meta = obj.meta();
  const retried = obj.db.all("SELECT id, attempts FROM prompts WHERE status = 'processing' AND lease_expires_at <= ? AND on_expiry = 'retry' AND attempts < coalesce(max_attempts, 1) ORDER BY id", t);
  for (const [id, attempts] of retried) {
    handBack(obj, id);
    event(obj, "prompt.lease_expired", { prompt_id: id, retry: true, attempts }, null);
  }
  const n = retried.length + failProcessing(obj, "timed out", "prompt.lease_expired", "status = 'processing' AND lease_expires_at <= ?", [t], null);
  if (n) {
    recompute(obj, meta.status);
    touch(obj, false);
  }
  return n;
}

// src/rules/schedules.ts
import { createHash as createHash4 } from "node:crypto";

// node_modules/croner/dist/croner.js
function g(s3, e, t, n = 0, r = 0, a = 0, i = 0) {
  let o = s3 >= 0 && s3 < 100, u = Date.UTC(o ? s3 + 400 : s3, e, t, n, r, a, i);
  return o ? u - 126227808e5 : u;
}
function D(s3) {
  return g(s3.y, s3.m - 1, s3.d, s3.h, s3.i, s3.s);
}
function w(s3, e) {
  return s3.y === e.y && s3.m === e.m && s3.d === e.d && s3.h === e.h && s3.i === e.i && s3.s === e.s;
}
function O(s3) {
  let e = s3.substring(9);
  return e.includes("Z") || e.includes("+") || e.includes("-");
}
function Z(s3, e) {
  let t = new Date(Date.parse(s3));
  if (isNaN(t)) throw new Error("Invalid ISO8601 passed to timezone parser.");
  return O(s3) ? { tp: T(t.getUTCFullYear(), t.getUTCMonth() + 1, t.getUTCDate(), t.getUTCHours(), t.getUTCMinutes(), t.getUTCSeconds(), "Etc/UTC"), ms: t.getUTCMilliseconds() } : { tp: T(t.getFullYear(), t.getMonth() + 1, t.getDate(), t.getHours(), t.getMinutes(), t.getSeconds(), e), ms: t.getMilliseconds() };
}
function v(s3, e, t) {
  let { tp: n, ms: r } = Z(s3, e);
  return new Date(N(n, t).getTime() + r);
}
function N(s3, e) {
  let t = _(s3);
  if (t.kind === "single") return t.date;
  if (t.kind === "ambiguous") return t.earlier;
  if (e) throw new Error("Invalid date passed to fromTZ()");
  return t.after;
}
function _(s3) {
  let e = D(s3), t = (i) => R(new Date(i), s3.tz), n = e - t(e), r = y(new Date(n), s3.tz);
  if (w(r, s3)) {
    let i = D(r) - n, o = n - (t(n - E) - i);
    if (o < n && w(y(new Date(o), s3.tz), s3)) return { kind: "ambiguous", earlier: new Date(o), later: new Date(n) };
    let u = n + (i - t(n + E));
    return u > n && w(y(new Date(u), s3.tz), s3) ? { kind: "ambiguous", earlier: new Date(n), later: new Date(u) } : { kind: "single", date: new Date(n) };
  }
  let a = e - (D(r) - n);
  return w(y(new Date(a), s3.tz), s3) ? { kind: "single", date: new Date(a) } : { kind: "gap", before: new Date(Math.min(n, a)), after: new Date(Math.max(n, a)) };
}
var E = 3 * 36e5;
function R(s3, e) {
  return D(y(s3, e)) - (s3.getTime() - s3.getUTCMilliseconds());
}
function k(s3, e, t) {
  let n = R(new Date(s3), t);
  for (; e - s3 > 1e3; ) {
    let r = s3 + Math.floor((e - s3) / 2e3) * 1e3;
    R(new Date(r), t) === n ? s3 = r : e = r;
  }
  return e;
}
function U(s3, e) {
  let t = _(y(new Date(s3), e));
  if (t.kind === "ambiguous") return s3 < t.later.getTime() ? "earlier" : "later";
}
var H = g(1, 0, 1);
var S = 864e5;
var W = /* @__PURE__ */ new Map();
function y(s3, e) {
  if (e === void 0) return T(s3.getFullYear(), s3.getMonth() + 1, s3.getDate(), s3.getHours(), s3.getMinutes(), s3.getSeconds());
  let t = W.get(e), n;
  try {
    t || (t = new Intl.DateTimeFormat("en-US", { timeZone: e, year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric", hour12: false }), W.set(e, t)), n = t.formatToParts(s3);
  } catch (i) {
    let o = i instanceof Error ? i.message : String(i);
    throw new RangeError(`toTZ: Invalid timezone '${e}' or date. Please provide a valid IANA timezone (e.g., 'America/New_York', 'Europe/Stockholm'). Original error: ${o}`);
  }
  let r = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0 };
  for (let i of n) (i.type === "year" || i.type === "month" || i.type === "day" || i.type === "hour" || i.type === "minute" || i.type === "second") && (r[i.type] = parseInt(i.value, 10));
  if (isNaN(r.year) || isNaN(r.month) || isNaN(r.day) || isNaN(r.hour) || isNaN(r.minute) || isNaN(r.second)) throw new Error(`toTZ: Failed to parse all date components from timezone '${e}'. This may indicate an invalid date or timezone configuration. Parsed components: ${JSON.stringify(r)}`);
  let a = s3.getTime() - H;
  return (a < -S || a < S && r.month === 12) && (r.year = 1 - r.year), r.hour === 24 && (r.hour = 0), { y: r.year, m: r.month, d: r.day, h: r.hour, i: r.minute, s: r.second, tz: e };
}
function T(s3, e, t, n, r, a, i) {
  return { y: s3, m: e, d: t, h: n, i: r, s: a, tz: i };
}
var x = [1, 2, 4, 8, 16];
var C = class s {
  pattern;
  timezone;
  mode;
  alternativeWeekdays;
  sloppyRanges;
  fixedTimeRule;
  second;
  minute;
  hour;
  day;
  month;
  dayOfWeek;
  year;
  lastDayOfMonth;
  lastWeekday;
  nearestWeekdays;
  starDOM;
  starDOW;
  starYear;
  useAndLogic;
  isFixedTime;
  constructor(e, t, n) {
    this.pattern = e, this.timezone = t, this.mode = n?.mode ?? "auto", this.alternativeWeekdays = n?.alternativeWeekdays ?? false, this.sloppyRanges = n?.sloppyRanges ?? false, this.fixedTimeRule = n?.fixedTimeRule ?? "single-value", this.second = Array(60).fill(0), this.minute = Array(60).fill(0), this.hour = Array(24).fill(0), this.day = Array(31).fill(0), this.month = Array(12).fill(0), this.dayOfWeek = Array(7).fill(0), this.year = [], this.lastDayOfMonth = false, this.lastWeekday = false, this.nearestWeekdays = Array(31).fill(0), this.starDOM = false, this.starDOW = false, this.starYear = false, this.useAndLogic = false, this.isFixedTime = false, this.parse();
  }
  parse() {
    if (!(typeof this.pattern == "string" || this.pattern instanceof String)) throw new TypeError("CronPattern: Pattern has to be of type string.");
    this.pattern.indexOf("@") >= 0 && (this.pattern = this.handleNicknames(this.pattern).trim());
    let e = this.pattern.match(/\S+/g) || [""], t = e.length;
    if (e.length < 5 || e.length > 7) throw new TypeError("CronPattern: invalid configuration format ('" + this.pattern + "'), exactly five, six, or seven space separated parts are required.");
    if (this.mode !== "auto") {
      let i;
      switch (this.mode) {
        case "5-part":
          i = 5;
          break;
        case "6-part":
          i = 6;
          break;
        case "7-part":
          i = 7;
          break;
        case "5-or-6-parts":
          i = [5, 6];
          break;
        case "6-or-7-parts":
          i = [6, 7];
          break;
        default:
          i = 0;
      }
      if (!(Array.isArray(i) ? i.includes(t) : t === i)) {
        let u = Array.isArray(i) ? i.join(" or ") : i.toString();
        throw new TypeError(`CronPattern: mode '${this.mode}' requires exactly ${u} parts, but pattern '${this.pattern}' has ${t} parts.`);
      }
    }
    if (e.length === 5 && e.unshift("0"), e.length === 6 && e.push("*"), this.pattern.indexOf("?") >= 0) for (let i = 0; i < e.length; i++) e[i] = e[i].replace(/\?/g, "*");
    if (e[3].toUpperCase() === "LW") this.lastWeekday = true, e[3] = "";
    else if (e[3].toUpperCase().indexOf("L") >= 0) {
      let i = e[3].split(",");
      if (i.length > 1 && i.some((o) => o.toUpperCase() === "LW")) throw new TypeError(`CronPattern: Syntax error, LW can not be in a list in day-of-month ('${e[3]}').`);
      if (i.some((o) => o === "" || o.toUpperCase() !== "L" && /l/i.test(o))) throw new TypeError("CronPattern: Syntax error, L has to be a value of its own in day-of-month ('" + e[3] + "').");
      e[3] = i.filter((o) => o.toUpperCase() !== "L").join(","), this.lastDayOfMonth = true;
    }
    if (e[3] == "*" && (this.starDOM = true), e[6] == "*" && (this.starYear = true), e[4].length >= 3 && (e[4] = this.replaceAlpha(e[4], s.MONTH_NAMES)), e[5].length >= 3 && (e[5] = this.alternativeWeekdays ? this.replaceAlpha(e[5], s.DAY_NAMES_QUARTZ) : this.replaceAlpha(e[5], s.DAY_NAMES)), e[5].startsWith("+") && (this.useAndLogic = true, e[5] = e[5].substring(1), e[5] === "")) throw new TypeError("CronPattern: Day-of-week field cannot be empty after '+' modifier.");
    switch (e[5] == "*" && (this.starDOW = true), this.mode) {
      case "5-part":
        e[0] = "0", e[6] = "*";
        break;
      case "6-part":
        e[6] = "*";
        break;
      case "5-or-6-parts":
        e[6] = "*";
        break;
      case "6-or-7-parts":
        break;
      case "7-part":
      case "auto":
        break;
    }
    this.throwAtIllegalCharacters(e), this.partToArray("second", e[0], 0, 1), this.partToArray("minute", e[1], 0, 1), this.partToArray("hour", e[2], 0, 1), this.partToArray("day", e[3], -1, 1), this.partToArray("month", e[4], -1, 1);
    let n = this.alternativeWeekdays ? -1 : 0;
    this.partToArray("dayOfWeek", e[5], n, 63), e[6] === "*" ? this.year = Array(1e4).fill(1) : (this.year = Array(1e4).fill(0), this.partToArray("year", e[6], 0, 1)), !this.alternativeWeekdays && this.dayOfWeek[7] && (this.dayOfWeek[0] = this.dayOfWeek[7]);
    let r = this.fixedTimeRule === "single-value", a = (i, o) => !i.includes("*") && !i.includes("/") && (!r || o.filter((u) => u).length === 1);
    this.isFixedTime = a(e[0], this.second) && a(e[1], this.minute) && a(e[2], this.hour);
  }
  partToArray(e, t, n, r) {
    let a = this[e];
    if (t === "" && !(e === "day" && (this.lastDayOfMonth || this.lastWeekday))) throw new TypeError("CronPattern: configuration entry " + e + " (" + t + ") is empty, check for trailing spaces.");
    if (t === "*") return a.fill(r);
    let i = t.split(",");
    if (i.length > 1) for (let o of i) this.partToArray(e, o, n, r);
    else t.includes("-") && t.includes("/") ? this.handleRangeWithStepping(t, e, n, r) : t.includes("-") ? this.handleRange(t, e, n, r) : t.includes("/") ? this.handleStepping(t, e, n, r) : t !== "" && this.handleNumber(t, e, n, r);
  }
  throwAtIllegalCharacters(e) {
    for (let t = 0; t < e.length; t++) if ((t === 3 ? /[^/*0-9,\-WwLl]+/ : t === 5 ? /[^/*0-9,\-#Ll]+/ : /[^/*0-9,\-]+/).test(e[t])) throw new TypeError("CronPattern: configuration entry " + t + " (" + e[t] + ") contains illegal characters.");
  }
  handleNumber(e, t, n, r) {
    let a = this.extractNth(e, t), i = e.toUpperCase().includes("W");
    if (t !== "day" && i) throw new TypeError("CronPattern: Nearest weekday modifier (W) only allowed in day-of-month.");
    i && (t = "nearestWeekdays");
    let o = i ? a[0].replace(/W$/i, "") : a[0], u = s.toNumber(o) + n;
    if (isNaN(u)) throw new TypeError("CronPattern: " + t + " is not a number: '" + e + "'");
    this.setPart(t, u, a[1] || r);
  }
  setPart(e, t, n) {
    if (!Object.prototype.hasOwnProperty.call(this, e)) throw new TypeError("CronPattern: Invalid part specified: " + e);
    if (e === "dayOfWeek") {
      if (t === 7 && (t = 0), t < 0 || t > 6) throw new RangeError("CronPattern: Invalid value for dayOfWeek: " + t);
      this.setNthWeekdayOfMonth(t, n);
      return;
    }
    if (e === "second" || e === "minute") {
      if (t < 0 || t >= 60) throw new RangeError("CronPattern: Invalid value for " + e + ": " + t);
    } else if (e === "hour") {
      if (t < 0 || t >= 24) throw new RangeError("CronPattern: Invalid value for " + e + ": " + t);
    } else if (e === "day" || e === "nearestWeekdays") {
      if (t < 0 || t >= 31) throw new RangeError("CronPattern: Invalid value for " + e + ": " + t);
    } else if (e === "month") {
      if (t < 0 || t >= 12) throw new RangeError("CronPattern: Invalid value for " + e + ": " + t);
    } else if (e === "year" && (t < 1 || t >= 1e4)) throw new RangeError("CronPattern: Invalid value for " + e + ": " + t + " (supported range: 1-9999)");
    this[e][t] = n;
  }
  static toNumber(e) {
    return /^\d+$/.test(e) ? parseInt(e, 10) : NaN;
  }
  validateNotNaN(e, t) {
    if (isNaN(e)) throw new TypeError(t);
  }
  validateRange(e, t, n, r, a) {
    if (e > t) throw new TypeError("CronPattern: From value is larger than to value: '" + a + "'");
    if (n !== void 0) {
      if (n === 0) throw new TypeError("CronPattern: Syntax error, illegal stepping: 0");
      if (n > this[r].length) throw new TypeError("CronPattern: Syntax error, steps cannot be greater than maximum value of part (" + this[r].length + ")");
    }
  }
  handleRangeWithStepping(e, t, n, r) {
    if (e.toUpperCase().includes("W")) throw new TypeError("CronPattern: Syntax error, W is not allowed in ranges with stepping.");
    let a = this.extractNth(e, t), i = a[0].match(/^(\d+)-(\d+)\/(\d+)$/);
    if (i === null) throw new TypeError("CronPattern: Syntax error, illegal range with stepping: '" + e + "'");
    let [, o, u, l] = i, h = parseInt(o, 10) + n, m = parseInt(u, 10) + n, d = parseInt(l, 10);
    this.validateNotNaN(h, "CronPattern: Syntax error, illegal lower range (NaN)"), this.validateNotNaN(m, "CronPattern: Syntax error, illegal upper range (NaN)"), this.validateNotNaN(d, "CronPattern: Syntax error, illegal stepping: (NaN)"), this.validateRange(h, m, d, t, e);
    for (let p = h; p <= m; p += d) this.setPart(t, p, a[1] || r);
  }
  extractNth(e, t) {
    let n = e, r;
    if (n.includes("#")) {
      if (t !== "dayOfWeek") throw new Error("CronPattern: nth (#) only allowed in day-of-week field");
      let a = n.split("#");
      if (a.length !== 2 || a[1] === "") throw new TypeError("CronPattern: Syntax error, illegal nth weekday: '" + e + "'");
      n = a[0], r = a[1];
    } else if (n.toUpperCase().endsWith("L")) {
      if (t !== "dayOfWeek") throw new Error("CronPattern: L modifier only allowed in day-of-week field (use L alone for day-of-month)");
      r = "L", n = n.slice(0, -1);
    }
    return [n, r];
  }
  handleRange(e, t, n, r) {
    if (e.toUpperCase().includes("W")) throw new TypeError("CronPattern: Syntax error, W is not allowed in a range.");
    let a = this.extractNth(e, t), i = a[0].split("-");
    if (i.length !== 2) throw new TypeError("CronPattern: Syntax error, illegal range: '" + e + "'");
    let o = s.toNumber(i[0]) + n, u = s.toNumber(i[1]) + n;
    this.validateNotNaN(o, "CronPattern: Syntax error, illegal lower range (NaN)"), this.validateNotNaN(u, "CronPattern: Syntax error, illegal upper range (NaN)"), this.validateRange(o, u, void 0, t, e);
    for (let l = o; l <= u; l++) this.setPart(t, l, a[1] || r);
  }
  handleStepping(e, t, n, r) {
    if (e.toUpperCase().includes("W")) throw new TypeError("CronPattern: Syntax error, W is not allowed in parts with stepping.");
    let a = this.extractNth(e, t), i = a[0].split("/");
    if (i.length !== 2) throw new TypeError("CronPattern: Syntax error, illegal stepping: '" + e + "'");
    if (this.sloppyRanges) i[0] === "" && (i[0] = "*");
    else {
      if (i[0] === "") throw new TypeError("CronPattern: Syntax error, stepping with missing prefix ('" + e + "') is not allowed. Use wildcard (*/step) or range (min-max/step) instead.");
      if (i[0] !== "*") throw new TypeError("CronPattern: Syntax error, stepping with numeric prefix ('" + e + "') is not allowed. Use wildcard (*/step) or range (min-max/step) instead.");
    }
    let o = 0;
    i[0] !== "*" && (o = s.toNumber(i[0]) + n, this.validateNotNaN(o, "CronPattern: Syntax error, illegal stepping start (NaN)"));
    let u = s.toNumber(i[1]);
    this.validateNotNaN(u, "CronPattern: Syntax error, illegal stepping: (NaN)"), this.validateRange(0, this[t].length - 1, u, t, e);
    for (let l = o; l < this[t].length; l += u) t === "year" && l === 0 || this.setPart(t, l, a[1] || r);
  }
  replaceAlpha(e, t) {
    let n = e;
    for (let [r, a] of Object.entries(t)) n = n.replace(new RegExp(r, "gi"), (i, o, u) => {
      let l = o + i.length - 3, h = u.charAt(l - 1), m = u.charAt(l + 3);
      if (/[a-z\d/#]/i.test(h) || /[a-km-z\d]/i.test(m)) throw new TypeError(`CronPattern: Syntax error, a month or day name has to stand alone ('${e}').`);
      return a;
    });
    return n;
  }
  static DAY_NAMES = { "-sun": "-7", sun: "0", mon: "1", tue: "2", wed: "3", thu: "4", fri: "5", sat: "6" };
  static DAY_NAMES_QUARTZ = { sun: "1", mon: "2", tue: "3", wed: "4", thu: "5", fri: "6", sat: "7" };
  static MONTH_NAMES = { jan: "1", feb: "2", mar: "3", apr: "4", may: "5", jun: "6", jul: "7", aug: "8", sep: "9", oct: "10", nov: "11", dec: "12" };
  static NICKNAME_MAP = { "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * SUN", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *" };
  handleNicknames(e) {
    let t = e.trim().toLowerCase();
    if (t === "@reboot") throw new TypeError("CronPattern: @reboot is not supported in this environment. This is an event-based trigger that requires system startup detection.");
    return s.NICKNAME_MAP[t] || e;
  }
  setNthWeekdayOfMonth(e, t) {
    if (typeof t != "number" && t.toUpperCase() === "L") this.dayOfWeek[e] = this.dayOfWeek[e] | 32;
    else if (t === 63) this.dayOfWeek[e] = 63;
    else if (t < 6 && t > 0) this.dayOfWeek[e] = this.dayOfWeek[e] | x[t - 1];
    else throw new TypeError(`CronPattern: nth weekday out of range, should be 1-5 or L. Value: ${t}, Type: ${typeof t}`);
  }
};
var B = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
var f = [["month", "year", 0], ["day", "month", -1], ["hour", "day", 0], ["minute", "hour", 0], ["second", "minute", 0]];
var c = class s2 {
  tz;
  instantMs;
  instantFields;
  ms;
  second;
  minute;
  hour;
  day;
  month;
  year;
  constructor(e, t) {
    if (this.tz = t, e && e instanceof Date) if (!isNaN(e)) this.fromDate(e);
    else throw new TypeError("CronDate: Invalid date passed to CronDate constructor");
    else if (e == null) this.fromDate(/* @__PURE__ */ new Date());
    else if (e && typeof e == "string") this.fromString(e);
    else if (e instanceof s2) this.fromCronDate(e);
    else throw new TypeError("CronDate: Invalid type (" + typeof e + ") passed to CronDate constructor");
  }
  getLastDayOfMonth(e, t) {
    return t !== 1 ? B[t] : new Date(g(e, t + 1, 0)).getUTCDate();
  }
  getLastWeekday(e, t) {
    let n = this.getLastDayOfMonth(e, t), a = new Date(g(e, t, n)).getUTCDay();
    return a === 0 ? n - 2 : a === 6 ? n - 1 : n;
  }
  getNearestWeekday(e, t, n) {
    let r = this.getLastDayOfMonth(e, t);
    if (n > r) return -1;
    let i = new Date(g(e, t, n)).getUTCDay();
    return i === 0 ? n === r ? n - 2 : n + 1 : i === 6 ? n === 1 ? n + 2 : n - 1 : n;
  }
  isNthWeekdayOfMonth(e, t, n, r) {
    let i = new Date(g(e, t, n)).getUTCDay(), o = 0;
    for (let u = 1; u <= n; u++) new Date(g(e, t, u)).getUTCDay() === i && o++;
    if (r & 63 && x[o - 1] & r) return true;
    if (r & 32) {
      let u = this.getLastDayOfMonth(e, t);
      for (let l = n + 1; l <= u; l++) if (new Date(g(e, t, l)).getUTCDay() === i) return false;
      return true;
    }
    return false;
  }
  fromDate(e) {
    if (this.tz !== void 0) if (typeof this.tz == "number") this.ms = e.getUTCMilliseconds(), this.second = e.getUTCSeconds(), this.minute = e.getUTCMinutes() + this.tz, this.hour = e.getUTCHours(), this.day = e.getUTCDate(), this.month = e.getUTCMonth(), this.year = e.getUTCFullYear(), this.apply();
    else try {
      let t = y(e, this.tz);
      this.ms = e.getMilliseconds(), this.second = t.s, this.minute = t.i, this.hour = t.h, this.day = t.d, this.month = t.m - 1, this.year = t.y, this.cacheInstant(e.getTime() - this.ms);
    } catch (t) {
      let n = t instanceof Error ? t.message : String(t);
      throw new TypeError(`CronDate: Failed to convert date to timezone '${this.tz}'. This may happen with invalid timezone names or dates. Original error: ${n}`);
    }
    else this.ms = e.getMilliseconds(), this.second = e.getSeconds(), this.minute = e.getMinutes(), this.hour = e.getHours(), this.day = e.getDate(), this.month = e.getMonth(), this.year = e.getFullYear(), this.cacheInstant(e.getTime() - this.ms);
  }
  cacheInstant(e) {
    this.instantMs = e;
    let { year: t, month: n, day: r, hour: a, minute: i, second: o } = this;
    this.instantFields = [t, n, r, a, i, o, this.tz];
  }
  cachedInstant() {
    let e = this.instantFields;
    if (!(e === void 0 || e[6] !== this.tz) && !(e[5] !== this.second || e[4] !== this.minute || e[3] !== this.hour) && !(e[2] !== this.day || e[1] !== this.month || e[0] !== this.year)) return this.instantMs;
  }
  fromCronDate(e) {
    this.tz = e.tz, this.year = e.year, this.month = e.month, this.day = e.day, this.hour = e.hour, this.minute = e.minute, this.second = e.second, this.ms = e.ms, this.instantMs = e.instantMs, this.instantFields = e.instantFields;
  }
  apply() {
    if (this.month > 11 || this.month < 0 || this.day > this.getLastDayOfMonth(this.year, this.month) || this.day < 1 || this.hour > 23 || this.minute > 59 || this.second > 59 || this.hour < 0 || this.minute < 0 || this.second < 0) {
      let e = /* @__PURE__ */ new Date(0);
      return e.setUTCFullYear(this.year, this.month, this.day), e.setUTCHours(this.hour, this.minute, this.second, this.ms), this.ms = e.getUTCMilliseconds(), this.second = e.getUTCSeconds(), this.minute = e.getUTCMinutes(), this.hour = e.getUTCHours(), this.day = e.getUTCDate(), this.month = e.getUTCMonth(), this.year = e.getUTCFullYear(), true;
    } else return false;
  }
  fromString(e) {
    if (typeof this.tz == "number") {
      if (O(e)) return this.fromDate(v(e));
      let t = v(e, "Etc/UTC");
      this.ms = t.getUTCMilliseconds(), this.second = t.getUTCSeconds(), this.minute = t.getUTCMinutes(), this.hour = t.getUTCHours(), this.day = t.getUTCDate(), this.month = t.getUTCMonth(), this.year = t.getUTCFullYear(), this.apply();
    } else return this.fromDate(v(e, this.tz));
  }
  findNext(e, t, n, r) {
    return this._findMatch(e, t, n, r, 1);
  }
  _matchDayValue(e, t, n, r) {
    let a = e;
    if (!a) {
      for (let i = 0; i < n.nearestWeekdays.length; i++) if (n.nearestWeekdays[i]) {
        let o = this.getNearestWeekday(this.year, this.month, i + 1);
        if (o !== -1 && o === t) {
          a = 1;
          break;
        }
      }
    }
    if (n.lastWeekday) {
      let i = this.getLastWeekday(this.year, this.month);
      t === i && (a = 1);
    }
    if (n.lastDayOfMonth) {
      let i = this.getLastDayOfMonth(this.year, this.month);
      t === i && (a = 1);
    }
    if (!n.starDOW) {
      let i = new Date(g(this.year, this.month, 1, 0, 0, 0, 0)).getUTCDay(), o = n.dayOfWeek[(i + (t - 1)) % 7];
      o && o & 63 && (o = this.isNthWeekdayOfMonth(this.year, this.month, t, o) ? 1 : 0), n.useAndLogic ? a = a && o : !r.domAndDow && !n.starDOM ? a = a || o : a = a && o;
    }
    return a;
  }
  _findMatch(e, t, n, r, a) {
    let i = this[t], o = t === "day" ? this.getLastDayOfMonth(this.year, this.month) : 0, u = this[t] + r, l = a === 1 ? (h) => h < n[t].length : (h) => h >= 0;
    for (let h = u; l(h); h += a) {
      let m = n[t][h];
      if (t === "day") {
        if (h - r > o) continue;
        m = this._matchDayValue(m, h - r, n, e);
      }
      if (m) return this[t] = h - r, i !== this[t] ? 2 : 1;
    }
    return 3;
  }
  recurse(e, t, n) {
    let r = this.year, a = n;
    for (; typeof a == "number"; ) {
      if (e.starYear && Math.abs(this.year - r) > 400) return null;
      a = this.recurseStep(e, t, a);
    }
    return a;
  }
  recurseStep(e, t, n) {
    if (n === 0 && !e.starYear) {
      if (this.year >= 0 && this.year < e.year.length && e.year[this.year] === 0) {
        let a = -1;
        for (let i = this.year + 1; i < e.year.length && i < 1e4; i++) if (e.year[i] === 1) {
          a = i;
          break;
        }
        if (a === -1) return null;
        this.year = a, this.month = 0, this.day = 1, this.hour = 0, this.minute = 0, this.second = 0, this.ms = 0;
      }
      if (this.year >= 1e4) return null;
    }
    let r = this.findNext(t, f[n][0], e, f[n][2]);
    if (r > 1) {
      let a = n + 1;
      for (; a < f.length; ) this[f[a][0]] = -f[a][2], a++;
      if (r === 3) {
        if (this[f[n][1]]++, this[f[n][0]] = -f[n][2], this.apply(), n === 0 && !e.starYear) {
          for (; this.year >= 0 && this.year < e.year.length && e.year[this.year] === 0 && this.year < 1e4; ) this.year++;
          if (this.year >= 1e4 || this.year >= e.year.length) return null;
        }
        return 0;
      } else if (this.apply()) return n - 1;
    }
    return n += 1, n >= f.length ? this : (e.starYear ? this.year >= 3e3 : this.year >= 1e4) ? null : n;
  }
  increment(e, t, n) {
    return this.instantMs = void 0, this.instantFields = void 0, this.second += t.interval !== void 0 && t.interval > 1 && n ? t.interval : 1, this.ms = 0, this.apply(), this.recurse(e, t, 0);
  }
  decrement(e, t, n = true) {
    this.instantMs = void 0, this.instantFields = void 0;
    let r = t.interval !== void 0 && t.interval >= 1;
    return (this.ms === 0 || r) && (this.second -= r && n ? t.interval : 1), this.ms = 0, this.apply(), this.year < 1 ? null : this.recurseBackward(e, t, 0);
  }
  recurseBackward(e, t, n) {
    let r = this.year, a = n;
    for (; typeof a == "number"; ) {
      if (e.starYear && Math.abs(this.year - r) > 400) return null;
      a = this.recurseBackwardStep(e, t, a);
    }
    return a;
  }
  recurseBackwardStep(e, t, n) {
    if (n === 0 && !e.starYear) {
      if (this.year >= 0 && this.year < e.year.length && e.year[this.year] === 0) {
        let a = -1;
        for (let i = this.year - 1; i >= 0; i--) if (e.year[i] === 1) {
          a = i;
          break;
        }
        if (a === -1) return null;
        this.year = a, this.month = 11, this.day = 31, this.hour = 23, this.minute = 59, this.second = 59, this.ms = 0;
      }
      if (this.year < 1) return null;
    }
    let r = this.findPrevious(t, f[n][0], e, f[n][2]);
    if (r > 1) {
      let a = n + 1;
      for (; a < f.length; ) {
        let i = f[a][0], o = f[a][2], u = this.getMaxPatternValue(i, e, o);
        this[i] = u, a++;
      }
      if (r === 3) {
        if (this[f[n][1]]--, n === 0) {
          let u = this.getLastDayOfMonth(this.year, this.month);
          this.day > u && (this.day = u);
        }
        if (n === 1) if (this.day <= 0) this.day = 1;
        else {
          let u = this.year, l = this.month;
          for (; l < 0; ) l += 12, u--;
          for (; l > 11; ) l -= 12, u++;
          let h = this.getLastDayOfMonth(u, l);
          this.day > h && (this.day = h);
        }
        this.apply();
        let i = f[n][0], o = f[n][2];
        if (this[i] = this.getMaxPatternValue(i, e, o), this.apply(), n === 0) {
          let u = f[1][2], l = this.getMaxPatternValue("day", e, u);
          l !== this.day && (this.day = l, this.hour = this.getMaxPatternValue("hour", e, f[2][2]), this.minute = this.getMaxPatternValue("minute", e, f[3][2]), this.second = this.getMaxPatternValue("second", e, f[4][2]));
        }
        if (n === 0 && !e.starYear) {
          for (; this.year >= 0 && this.year < e.year.length && e.year[this.year] === 0; ) this.year--;
          if (this.year < 1) return null;
        }
        return 0;
      } else if (this.apply()) return n - 1;
    }
    return n += 1, n >= f.length ? this : this.year < 1 ? null : n;
  }
  getMaxPatternValue(e, t, n) {
    let r = t[e].length - 1 - n;
    for (let a = t[e].length - 1; a >= 0; a--) if (t[e][a]) {
      r = a - n;
      break;
    }
    if (e === "day") {
      let a = this.getLastDayOfMonth(this.year, this.month);
      return t.lastWeekday || t.nearestWeekdays.some((i) => i) || t.lastDayOfMonth || !t.starDOW ? a : Math.min(r, a);
    }
    return r;
  }
  findPrevious(e, t, n, r) {
    return this._findMatch(e, t, n, r, -1);
  }
  getDate(e) {
    if (!e && typeof this.tz != "number") {
      let t = this.cachedInstant();
      if (t !== void 0) return new Date(t + (this.tz === void 0 ? this.ms : 0));
    }
    if (e || this.tz === void 0) {
      if (this.year >= 0 && this.year < 100) {
        let t = /* @__PURE__ */ new Date(0);
        return t.setFullYear(this.year, this.month, this.day), t.setHours(this.hour, this.minute, this.second, this.ms), t;
      }
      return new Date(this.year, this.month, this.day, this.hour, this.minute, this.second, this.ms);
    } else return typeof this.tz == "number" ? new Date(g(this.year, this.month, this.day, this.hour, this.minute - this.tz, this.second, this.ms)) : N(T(this.year, this.month + 1, this.day, this.hour, this.minute, this.second, this.tz), false);
  }
  getTime() {
    return this.getDate(false).getTime();
  }
  match(e, t) {
    if (!e.starYear && (this.year < 0 || this.year >= e.year.length || e.year[this.year] === 0)) return false;
    for (let n = 0; n < f.length; n++) {
      let r = f[n][0], a = f[n][2], i = this[r];
      if (i + a < 0 || i + a >= e[r].length) return false;
      let o = e[r][i + a];
      if (r === "day" && (o = this._matchDayValue(o, i, e, t)), !o) return false;
    }
    return true;
  }
};
function F(s3) {
  s3 === void 0 && (s3 = {}), delete s3.name, s3.legacyMode !== void 0 && s3.domAndDow === void 0 ? s3.domAndDow = !s3.legacyMode : s3.domAndDow === void 0 && (s3.domAndDow = false), s3.legacyMode = !s3.domAndDow;
  let e = (n, r) => n === void 0 ? r : n;
  if (s3.paused = e(s3.paused, false), s3.maxRuns = e(s3.maxRuns, 1 / 0), s3.catch = e(s3.catch, false), s3.unref = e(s3.unref, false), s3.mode = e(s3.mode, "auto"), s3.alternativeWeekdays = e(s3.alternativeWeekdays, false), s3.sloppyRanges = e(s3.sloppyRanges, false), s3.fixedTimeRule = e(s3.fixedTimeRule, "single-value"), s3.allowPast = e(s3.allowPast, false), s3.interval = s3.interval === void 0 ? 0 : parseInt(s3.interval.toString(), 10), s3.utcOffset = s3.utcOffset === void 0 ? void 0 : parseInt(s3.utcOffset.toString(), 10), s3.dayOffset = s3.dayOffset === void 0 ? 0 : parseInt(s3.dayOffset.toString(), 10), !["auto", "5-part", "6-part", "7-part", "5-or-6-parts", "6-or-7-parts"].includes(s3.mode)) throw new Error("CronOptions: mode must be one of 'auto', '5-part', '6-part', '7-part', '5-or-6-parts', or '6-or-7-parts'.");
  if (!["single-value", "no-wildcard"].includes(s3.fixedTimeRule)) throw new Error("CronOptions: fixedTimeRule must be one of 'single-value' or 'no-wildcard'.");
  s3.timezone === "" && (s3.timezone = void 0);
  let t = s3.timezone ?? s3.utcOffset;
  if (s3.startAt && (s3.startAt = I(new c(s3.startAt, t))), s3.stopAt && (s3.stopAt = I(new c(s3.stopAt, t))), s3.interval !== null) {
    if (isNaN(s3.interval)) throw new Error("CronOptions: Supplied value for interval is not a number");
    if (s3.interval < 0) throw new Error("CronOptions: Supplied value for interval can not be negative");
  }
  if (s3.utcOffset !== void 0) {
    if (isNaN(s3.utcOffset)) throw new Error("CronOptions: Invalid value passed for utcOffset, should be number representing minutes offset from UTC.");
    if (s3.utcOffset < -870 || s3.utcOffset > 870) throw new Error("CronOptions: utcOffset out of bounds.");
    if (s3.utcOffset !== void 0 && s3.timezone) throw new Error("CronOptions: Combining 'utcOffset' with 'timezone' is not allowed.");
  }
  if (s3.unref !== true && s3.unref !== false) throw new Error("CronOptions: Unref should be either true, false or undefined(false).");
  if (s3.dayOffset !== void 0 && s3.dayOffset !== 0 && isNaN(s3.dayOffset)) throw new Error("CronOptions: Invalid value passed for dayOffset, should be a number representing days to offset.");
  return s3;
}
function I(s3) {
  return s3.ms ? (s3.ms = 0, new c(new Date(s3.getTime() + 1e3), s3.tz)) : s3;
}
function b(s3) {
  return typeof s3 == "function";
}
function L(s3) {
  return b(s3);
}
function Y(s3) {
  typeof Deno < "u" && typeof Deno.unrefTimer < "u" ? Deno.unrefTimer(s3) : s3 && typeof s3.unref < "u" && s3.unref();
}
var P = 1440 * 60 * 1e3;
var $ = 30 * 1e3;
var M = [];
var j = class {
  name;
  options;
  _states;
  fn;
  _startAtRoundingMs = 0;
  getTz() {
    return this.options.timezone ?? this.options.utcOffset;
  }
  applyDayOffset(e) {
    let t = this._offsetMs();
    return t ? new Date(e.getTime() + t) : e;
  }
  _offsetMs() {
    return (this.options.dayOffset ?? 0) * P;
  }
  get _startAt() {
    return this.options.startAt;
  }
  get _stopAt() {
    return this.options.stopAt;
  }
  _nextTarget(e, t) {
    let n = this._offsetMs(), r = this._next(this._shift(e), new Date(t.getTime() - n), { startAt: this._shift(this._startAt), stopAt: this._shift(this._stopAt) });
    return r ? this.applyDayOffset(r.getDate(false)) : null;
  }
  _previousTarget(e, t) {
    let n = this._toMs(e ?? t) - this._offsetMs(), r = this._previous(new Date(n), { startAt: this._shift(this._startAt), stopAt: this._shift(this._stopAt) });
    return r ? this.applyDayOffset(r.getDate(false)) : null;
  }
  _shift(e) {
    if (e != null) return new c(new Date(this._toMs(e) - this._offsetMs()), this.getTz());
  }
  constructor(e, t, n) {
    let r, a;
    if (b(t)) a = t;
    else if (typeof t == "object") r = t;
    else if (t !== void 0) throw new Error("Cron: Invalid argument passed for optionsIn. Should be one of function, or object (options).");
    if (b(n)) a = n;
    else if (typeof n == "object") r = n;
    else if (n !== void 0) throw new Error("Cron: Invalid argument passed for funcIn. Should be one of function, or object (options).");
    this.name = r?.name;
    let i = r?.startAt;
    this.options = F(r), i && this._startAt && (this._startAtRoundingMs = this._startAt.getTime() - new c(i, this.getTz()).getTime());
    let o = !!e && (e instanceof Date || typeof e == "string" && e.indexOf(":") > 0);
    if (this._states = { kill: false, blocking: false, previousRun: void 0, currentRun: void 0, once: void 0, currentTimeout: void 0, maxRuns: r ? r.maxRuns : void 0, paused: r ? r.paused : false, pattern: o ? new C("* * * * *", void 0, { mode: "auto" }) : new C(e, this.options.timezone, { mode: this.options.mode, alternativeWeekdays: this.options.alternativeWeekdays, sloppyRanges: this.options.sloppyRanges, fixedTimeRule: this.options.fixedTimeRule }) }, o && (this._states.once = new c(e, this.getTz())), this.name) {
      if (M.find((l) => l.name === this.name)) throw new Error("Cron: Tried to initialize new named job '" + this.name + "', but name already taken.");
      M.push(this);
    }
    return a !== void 0 && L(a) && (this.fn = a, this.schedule()), this;
  }
  nextRun(e) {
    return this._nextTarget(e, /* @__PURE__ */ new Date());
  }
  nextRuns(e, t) {
    this._states.maxRuns !== void 0 && e > this._states.maxRuns && (e = this._states.maxRuns);
    let n = t || this._states.currentRun || void 0;
    return this._enumerateRuns(e, n, "next");
  }
  previousRuns(e, t) {
    return this._enumerateRuns(e, t || void 0, "previous");
  }
  enumerate(e) {
    return new A(this, e);
  }
  _enumerateRuns(e, t, n) {
    let r = [], a = /* @__PURE__ */ new Date(), i = t;
    for (; e-- > 0; ) {
      let o = n === "next" ? this._nextTarget(i, a) : this._previousTarget(i, a);
      if (!o) break;
      r.push(o), i = o;
    }
    return r;
  }
  match(e) {
    if (this._states.once) {
      let n = new c(e, this.getTz());
      n.ms = 0;
      let r = new c(this._states.once, this.getTz());
      return r.ms = 0, n.getTime() === r.getTime();
    }
    let t = new c(e, this.getTz());
    return t.ms = 0, t.match(this._states.pattern, this.options);
  }
  getPattern() {
    if (!this._states.once) return this._states.pattern ? this._states.pattern.pattern : void 0;
  }
  getOnce() {
    return this._states.once ? this._states.once.getDate() : null;
  }
  isRunning() {
    return !this._states.paused && !this._states.kill && this.fn !== void 0 && this._nextTarget(this._states.currentRun, /* @__PURE__ */ new Date()) !== null;
  }
  isStopped() {
    return this._states.kill;
  }
  isBusy() {
    return this._states.blocking;
  }
  currentRun() {
    return this._states.currentRun ? this._states.currentRun.getDate() : null;
  }
  previousRun() {
    return this._states.previousRun ? this._states.previousRun.getDate() : null;
  }
  msToNext(e) {
    let t = /* @__PURE__ */ new Date(), n = this._nextTarget(e, t);
    return n ? n.getTime() - this._toMs(e ?? t) : null;
  }
  stop() {
    this._states.kill = true, this._states.currentTimeout && clearTimeout(this._states.currentTimeout);
    let e = M.indexOf(this);
    e >= 0 && M.splice(e, 1);
  }
  pause() {
    return this._states.paused = true, !this._states.kill;
  }
  resume() {
    return this._states.paused = false, !this._states.kill;
  }
  schedule(e) {
    return this._schedule(e);
  }
  _schedule(e, t) {
    if (e && this.fn) throw new Error("Cron: It is not allowed to schedule two functions using the same Croner instance.");
    e && (this.fn = e);
    let n = t ?? /* @__PURE__ */ new Date(), r = this._nextTarget(void 0, n), a = r ? r.getTime() - n.getTime() : null, i = this._states.currentRun;
    i && i.getTime() > n.getTime() && (i = void 0);
    let o = this._nextTarget(i, n);
    return a === null || isNaN(a) || o === null ? this : (a > $ && (a = $), a < 0 && (a = this._states.paused ? 1e3 : 0), this._states.currentTimeout = setTimeout(() => this._checkTrigger(o), a), this._states.currentTimeout && this.options.unref && Y(this._states.currentTimeout), this);
  }
  async _trigger(e = /* @__PURE__ */ new Date()) {
    this._states.blocking = true, this._states.currentRun = new c(e, this.getTz());
    try {
      if (this.options.catch) try {
        this.fn !== void 0 && await this.fn(this, this.options.context);
      } catch (t) {
        if (b(this.options.catch)) try {
          Promise.resolve(this.options.catch(t, this)).catch(() => {
          });
        } catch {
        }
      }
      else this.fn !== void 0 && await this.fn(this, this.options.context);
    } finally {
      this._states.previousRun = new c(e, this.getTz()), this._states.blocking = false;
    }
  }
  async trigger() {
    await this._trigger();
  }
  runsLeft() {
    return this._states.maxRuns;
  }
  _checkTrigger(e) {
    let t = /* @__PURE__ */ new Date(), n = !this._states.paused && t.getTime() >= e.getTime(), r = this._states.blocking && this.options.protect;
    n && !r ? (this._states.maxRuns !== void 0 && this._states.maxRuns--, this._trigger(t)) : n && r && b(this.options.protect) && setTimeout(() => this.options.protect(this), 0), this._schedule(void 0, n ? void 0 : t);
  }
  _next(e, t, n) {
    let r = n ? n.startAt : this._startAt, a = n ? n.stopAt : this._stopAt, i = !!e, o = !!(e || this._states.currentRun), u = false;
    !e && r && this.options.interval && (e = this._calculatePreviousRun(r, t), e && (o = true), u = !e);
    let l = e ?? t ?? /* @__PURE__ */ new Date(), h = this._toMs(l);
    e = new c(l, this.getTz()), r && h < r.getTime() && (e = u ? r : new c(new Date(r.getTime() - 1e3), this.getTz()), h = e.getTime());
    let m = this._states.once || new c(e, this.getTz());
    if (!u && m !== this._states.once && (m = this._findOccurrence(e, h, 1, o)), this._states.once) {
      let d = this._states.once.getTime(), p = h - d;
      if (r && d < r.getTime() - this._startAtRoundingMs || this._states.currentRun && this.applyDayOffset(this._states.once.getDate()).getTime() <= this._states.currentRun.getTime() || (i ? p >= 0 : p > 1e3 && !this.options.allowPast)) return null;
    }
    return m === null || this._states.maxRuns !== void 0 && this._states.maxRuns <= 0 || this._states.kill || a && m.getTime() >= a.getTime() ? null : m;
  }
  _previous(e, t) {
    let n = this._toMs(e ?? /* @__PURE__ */ new Date());
    if (t.stopAt && n > t.stopAt.getTime() && (n = t.stopAt.getTime()), this._states.once) return this._states.once.getTime() < n ? this._states.once : null;
    let r = this._findOccurrence(new c(new Date(n), this.getTz()), n, -1);
    return r === null || t.startAt && r.getTime() < t.startAt.getTime() ? null : r;
  }
  _toMs(e) {
    if (e instanceof Date) return e.getTime();
    let t = new c(e, this.getTz());
    return t.getTime() + (typeof t.tz == "string" ? t.ms : 0);
  }
  _findOccurrence(e, t, n, r = false) {
    let a = this.options.interval ?? 0;
    if (a > 1 && (n === -1 || r)) {
      t += (a - 1) * 1e3 * n;
      let m = new Date(t);
      if (isNaN(m.getTime()) || (e = new c(m, this.getTz()), !(e.year >= 1 && e.year <= 9999))) return null;
      r = false;
    }
    let i = this._walk(e, t, n, r), o = this.getTz();
    if (this._states.pattern.isFixedTime && n === 1 || typeof o == "number" || U(t, o) !== (n === 1 ? "earlier" : "later")) return i;
    let u = Math.floor(t / 1e3) * 1e3, l = n === 1 ? k(u, u + P, o) : k(u - P, u, o) - 1e3;
    if (i && (l - i.getTime()) * n > 0) return i;
    let h = this._walk(new c(new Date(l), o), l - n, n, false, true);
    return !i || !h ? i ?? h : (i.getTime() - h.getTime()) * n > 0 ? h : i;
  }
  _walk(e, t, n, r, a = false) {
    let i = this._states.pattern, o = (l, h) => n === 1 ? l.increment(i, this.options, h) : l.decrement(i, this.options, h), u = new c(e, this.getTz());
    for ((!a || !u.match(i, this.options)) && (u = o(u, r)); u; ) {
      let l = this._runAt(u, t, n);
      if (l) return new c(l, this.getTz());
      u = o(u, false);
    }
    return null;
  }
  _runAt(e, t, n) {
    let r = (d) => (d.getTime() - t) * n > 0, a = e.tz;
    if (typeof a == "number") {
      let d = e.getDate();
      return r(d) ? d : null;
    }
    let i = T(e.year, e.month + 1, e.day, e.hour, e.minute, e.second, a), o = _(i), u = this._states.pattern.isFixedTime;
    if (o.kind === "single") return r(o.date) ? o.date : null;
    if (o.kind === "ambiguous") {
      let { earlier: d, later: p } = o;
      return (u ? [d] : n === 1 ? [d, p] : [p, d]).find(r) ?? null;
    }
    if (!u) return null;
    let l = new Date(k(o.before.getTime(), o.after.getTime(), a)), h = y(l, a);
    return h.y === i.y && h.m === i.m && h.d === i.d && r(l) ? l : null;
  }
  _calculatePreviousRun(e, t) {
    let n = new c(t, this.getTz()).getTime();
    if (e.getTime() > n) return;
    let r = this.options.interval * 1e3, a = e;
    for (; a.getTime() + r <= n; ) {
      let i = this._findOccurrence(a, a.getTime(), 1, true);
      if (i === null) break;
      a = i;
    }
    return a;
  }
};
var A = class {
  cron;
  cursor;
  now;
  done;
  initialMaxRuns;
  remainingRuns;
  constructor(e, t) {
    this.cron = e, this.initialMaxRuns = e.runsLeft() ?? 1 / 0, this.reset(t);
  }
  next() {
    if (this.done || this.remainingRuns <= 0) return this.done = true, { value: void 0, done: true };
    let e = this.cron._nextTarget(this.cursor, this.now);
    return e === null ? (this.done = true, { value: void 0, done: true }) : (this.cursor = e, this.remainingRuns--, { value: e, done: false });
  }
  peek() {
    return this.done || this.remainingRuns <= 0 ? null : this.cron._nextTarget(this.cursor, this.now);
  }
  reset(e) {
    this.cursor = e instanceof Date ? new Date(e.getTime()) : e ?? void 0, this.now = /* @__PURE__ */ new Date(), this.done = false, this.remainingRuns = this.initialMaxRuns;
  }
  [Symbol.iterator]() {
    return this;
  }
};

// src/rules/durations.ts
var UNITS = [604800, 86400, 3600, 60, 1];
var MAX_SECONDS = 36500 * 86400;
var GRAMMAR = /^(?:([1-9][0-9]*)w)?(?:([1-9][0-9]*)d)?(?:([1-9][0-9]*)h)?(?:([1-9][0-9]*)m)?(?:([1-9][0-9]*)s)?$/;
function parse2(text4, what = "duration") {
  const m = typeof text4 === "string" && text4 ? GRAMMAR.exec(text4) : null;
  if (m === null || !m.slice(1).some((g2) => g2 !== void 0)) {
    throw invalid(`invalid ${what} ${pyRepr(text4)}: use a number with a unit of w d h m s, e.g. 90d, 1h30m, 45s`);
  }
  const groups = m.slice(1);
  const long = groups.some((n) => n !== void 0 && n.length > 12);
  const total = long ? null : groups.reduce((sum, n, i) => sum + (n === void 0 ? 0 : Number(n) * UNITS[i]), 0);
  if (total === null || total > MAX_SECONDS) {
    const s3 = text4;
    const shown2 = [...s3].length <= 40 ? s3 : [...s3].slice(0, 37).join("") + "...";
    throw invalid(`invalid ${what} ${pyRepr(shown2)}: at most 36500d (100 years)`);
  }
  return total;
}

// src/rules/schedules.ts
var COLUMNS2 = [
  "id",
  "kind",
  "content",
  "source",
  "author",
  "at",
  "every",
  "cron",
  "tz",
  "next_at",
  "last_fired_at",
  "last_prompt_id",
  "fired",
  "missed",
  "request_id",
  "created_at"
];
var TIMES2 = ["at", "next_at", "last_fired_at", "created_at"];
var RESERVED_PREFIX = "schedule:";
var MAX_SCHEDULES = 20;
var MIN_EVERY = 60;
var MAX_AHEAD_MS = 36500 * 86400 * 1e3;
var CRON_HORIZON_DAYS = 3653;
var DEFAULT_SOURCE = "schedule";
var TIME2 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;
var ALIASES = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *"
};
var NAMES = { month: "JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC", dow: "SUN|MON|TUE|WED|THU|FRI|SAT" };
var RANGES = [[0, 59, null], [0, 23, null], [1, 31, null], [1, 12, "month"], [0, 7, "dow"]];
function parseTime(text4, what = "--at") {
  const m = typeof text4 === "string" ? TIME2.exec(text4) : null;
  if (m === null) {
    throw invalid(`invalid ${what} ${pyRepr(text4)}: use an RFC 3339 time with an offset, e.g. 2026-12-01T09:00:00Z or 2026-12-01T09:00:00+01:00`);
  }
  const [, year, month, day, hour, minute, second, frac, offset2] = m;
  const bad = (why) => invalid(`invalid ${what} ${pyRepr(text4)}: ${why}`);
  let offsetMin = 0;
  if (offset2 !== "Z" && offset2 !== "z") {
    const sign2 = offset2[0] === "-" ? -1 : 1;
    if (Number(offset2.slice(1, 3)) > 23 || Number(offset2.slice(4, 6)) > 59) {
      throw bad(`the offset ${offset2} is out of range (hours 00-23, minutes 00-59)`);
    }
    offsetMin = sign2 * (Number(offset2.slice(1, 3)) * 60 + Number(offset2.slice(4, 6)));
  }
  const [y2, mo, d, h, mi, s3] = [year, month, day, hour, minute, second].map(Number);
  if (y2 < 1) throw bad(`year ${y2} is out of range`);
  if (mo < 1 || mo > 12) throw bad("month must be in 1..12");
  const days = new Date(Date.UTC(2e3, mo, 0)).getUTCDate() - (mo === 2 && !(y2 % 4 === 0 && (y2 % 100 !== 0 || y2 % 400 === 0)) ? 1 : 0);
  if (d < 1 || d > days) throw bad("day is out of range for month");
  if (h > 23) throw bad("hour must be in 0..23");
  if (mi > 59) throw bad("minute must be in 0..59");
  if (s3 > 59) throw bad("second must be in 0..59");
  const utc = /* @__PURE__ */ new Date(0);
  utc.setUTCFullYear(y2, mo - 1, d);
  utc.setUTCHours(h, mi, s3, 0);
  return utc.getTime() - offsetMin * 6e4 + Number((frac ?? "0").padEnd(3, "0").slice(0, 3));
}
var ZONE_BAD = (tz) => `unknown time zone ${pyRepr(tz)}: use an IANA name such as UTC, Europe/Paris or America/New_York`;
function validTz(tz) {
  if (typeof tz !== "string" || !tz || [...tz].length > 255 || !/^[A-Za-z0-9_+-]+(\/[A-Za-z0-9_+-]+)*$/.test(tz)) throw invalid(ZONE_BAD(tz));
  let resolved;
  try {
    resolved = new Intl.DateTimeFormat("en-US", { timeZone: tz }).resolvedOptions().timeZone;
  } catch {
    throw invalid(ZONE_BAD(tz));
  }
  if (resolved.toLowerCase() === tz.toLowerCase() && resolved !== tz && !(tz === "UTC" || tz === "Etc/UTC")) throw invalid(ZONE_BAD(tz));
  return tz;
}
function fieldOk(field2, low, high, names) {
  const value = `(?:\\d{1,2}${names ? `|${NAMES[names]}` : ""})`;
  const item = new RegExp(`^(?:\\*|${value}(?:-${value})?)(?:/\\d{1,2})?$`, "i");
  for (const part of field2.split(",")) {
    if (!item.test(part)) return false;
    for (const n of part.split("/")[0].match(/\d+/g) ?? []) if (Number(n) < low || Number(n) > high) return false;
    if (part.includes("/") && Number(part.split("/")[1]) < 1) return false;
    if (part.includes("/") && !part.startsWith("*") && !part.includes("-")) return false;
  }
  return true;
}
function validCron(expr) {
  const bad = `invalid --cron ${pyRepr(expr)}: use five fields (minute hour day-of-month month day-of-week) or @hourly, @daily, @weekly, @monthly, @yearly`;
  if (typeof expr !== "string" || [...expr].length > 256) throw invalid(bad);
  const text4 = strip(expr);
  if (text4.startsWith("@")) {
    const alias = ALIASES[text4.toLowerCase()];
    if (alias === void 0) throw invalid(bad);
    return alias;
  }
  const fields2 = words(text4);
  if (fields2.length !== 5 || !fields2.every((f2, i) => fieldOk(f2, ...RANGES[i]))) throw invalid(bad);
  return fields2.join(" ");
}
function* cronTimes(fields2, tz, afterMs) {
  const cron = new j(fields2, { timezone: tz, mode: "5-part", domAndDow: false, fixedTimeRule: "no-wildcard" });
  let last = afterMs;
  for (; ; ) {
    const next = cron.nextRun(new Date(last));
    if (next === null) return;
    const ms = next.getTime();
    if (ms <= last) return;
    last = ms;
    yield ms;
  }
}
function cronNext(fields2, tz, afterMs, horizonMs = null) {
  for (const ms of cronTimes(fields2, tz, afterMs)) return horizonMs !== null && ms > horizonMs ? null : ms;
  return null;
}
function plan(t, o) {
  const { at = null, after = null, every = null, cron = null, tz = null } = o;
  let given = [["--at", at], ["--in", after], ["--every", every], ["--cron", cron]].filter(([, v2]) => v2 !== null).map(([k2]) => k2);
  if (given.join() === "--at,--every") given = ["--every"];
  if (given.length !== 1) {
    throw invalid("give one of --at TIME, --in DUR, --every DUR (with --at TIME for its first time) or --cron EXPR" + (given.length ? ` (not ${given.join(" and ")})` : ""));
  }
  if (tz !== null && cron === null) throw invalid("--tz is for --cron only");
  let first = null;
  if (at !== null) {
    first = parseTime(at);
    if (first <= t) throw invalid(`--at ${at} is in the past`);
    if (first - t > MAX_AHEAD_MS) throw invalid(`--at ${at} is more than 36500 days ahead`);
  }
  if (after !== null) {
    first = t + parse2(after, "--in") * 1e3;
    return { kind: "at", at: first, every: null, cron: null, tz: null, next_at: first };
  }
  if (every !== null) {
    const seconds = parse2(every, "--every");
    if (seconds < MIN_EVERY) throw invalid(`--every ${every} is too short: the minimum is 1m`);
    first = first !== null ? first : t + seconds * 1e3;
    return { kind: "every", at: first, every: seconds, cron: null, tz: null, next_at: first };
  }
  if (cron !== null) {
    const zone = tz === null ? "UTC" : tz;
    const fields2 = validCron(cron);
    const due = cronNext(fields2, validTz(zone), t, t + CRON_HORIZON_DAYS * 86400 * 1e3);
    if (due === null) throw invalid(`--cron ${pyRepr(cron)} has no due time in the next 10 years`);
    return { kind: "cron", at: null, every: null, cron, tz: zone, next_at: due };
  }
  return { kind: "at", at: first, every: null, cron: null, tz: null, next_at: first };
}
function scheduleJson(r) {
  const s3 = {};
  COLUMNS2.forEach((k2, i) => s3[k2] = r[i]);
  for (const k2 of TIMES2) s3[k2] = iso(s3[k2]);
  return s3;
}
var row2 = (obj, id) => obj.db.one(`SELECT ${COLUMNS2.join(", ")} FROM schedules WHERE id = ?`, id);
function requestHash(a) {
  const text4 = JSON.stringify([a.content, a.source ?? null, a.at ?? null, a.after ?? null, a.every ?? null, a.cron ?? null, a.tz ?? null]);
  return createHash4("sha256").update(text4).digest("hex");
}
function create3(obj, a) {
  checkText(obj, a.content);
  validRequestId(a.request_id);
  if (typeof a.request_id === "string" && a.request_id.startsWith(RESERVED_PREFIX)) throw invalid(say("reserved_request_id", { request_id: a.request_id }));
  const t = now();
  const planned = plan(t, a);
  const digest = requestHash(a);
  let meta = obj.meta();
  if (meta === null) {
    if (!a.created) throw notFound(obj.missing);
    createObject(obj, "created");
    meta = obj.meta();
  } else obj.requireVisible();
  if (a.request_id != null) {
    const found = obj.db.one("SELECT id, request_hash FROM schedules WHERE request_id = ?", a.request_id);
    if (found) {
      if (found[1] !== digest) throw conflict(`request id ${pyRepr(a.request_id)} was already used with another schedule in ${obj.what}`);
      return scheduleJson(row2(obj, found[0]));
    }
  }
  check(obj, "prompt", meta.status);
  const count = Number(obj.db.one("SELECT count(*) FROM schedules")[0]);
  if (count >= MAX_SCHEDULES) throw conflict(`too many schedules: ${obj.what} has ${count} (at most ${MAX_SCHEDULES}); unschedule one first`);
  const id = obj.db.one(
    "INSERT INTO schedules (kind, content, source, author, at, every, cron, tz, next_at, request_id, request_hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
    planned.kind,
    a.content,
    a.source ?? DEFAULT_SOURCE,
    obj.actor,
    planned.at,
    planned.every,
    planned.cron,
    planned.tz,
    planned.next_at,
    a.request_id ?? null,
    digest,
    t
  )[0];
  event(obj, "schedule.created", { schedule_id: id, kind: planned.kind, next_at: iso(planned.next_at) });
  touch(obj);
  return scheduleJson(row2(obj, id));
}
function schedules(obj, _a) {
  requireSession(obj);
  obj.requireVisible();
  return obj.db.all(`SELECT ${COLUMNS2.join(", ")} FROM schedules ORDER BY id`).map(scheduleJson);
}
function unschedule(obj, a) {
  requireSession(obj);
  obj.requireVisible();
  const r = row2(obj, a.schedule_id);
  if (!r) throw notFound(say("schedule_not_found", { id: a.schedule_id, what: obj.what, name: obj.name }));
  const found = scheduleJson(r);
  if (found.author !== obj.actor && obj.role() !== "owner") throw denied(say("unschedule_denied", { id: a.schedule_id, what: obj.what }));
  obj.db.run("DELETE FROM schedules WHERE id = ?", a.schedule_id);
  event(obj, "schedule.deleted", { schedule_id: a.schedule_id });
  touch(obj);
  return found;
}
function dueTimes(s3, t) {
  if (s3.kind === "at") return [s3.next_at, 1, null];
  if (s3.kind === "every") {
    const step = s3.every * 1e3;
    const k2 = Math.floor((t - s3.at) / step);
    const latest2 = s3.at + k2 * step;
    return [latest2, Math.floor((latest2 - s3.next_at) / step) + 1, latest2 + step];
  }
  const [fields2, tz] = [validCron(s3.cron), validTz(s3.tz)];
  let [latest, count, n] = [s3.next_at, 1, 0];
  for (const due of cronTimes(fields2, tz, s3.next_at)) {
    if (due > t) return [latest, count, due];
    if (n++ >= 1e5) return [latest, count, cronNext(fields2, tz, t)];
    [latest, count] = [due, count + 1];
  }
  return [latest, count, null];
}
function fireDue(obj, t) {
  let queued = 0;
  const due = obj.db.all(`SELECT ${COLUMNS2.join(", ")} FROM schedules WHERE next_at <= ? ORDER BY next_at, id`, t);
  for (const r of due) {
    const s3 = Object.fromEntries(COLUMNS2.map((k2, i) => [k2, r[i]]));
    const [latest, count, following] = dueTimes(s3, t);
    const meta = obj.meta();
    let reason = null;
    if (meta.status === "archived") reason = "archived";
    else if (s3.kind !== "at" && s3.last_prompt_id !== null && obj.db.one("SELECT 1 FROM prompts WHERE id = ? AND status IN ('pending', 'processing')", s3.last_prompt_id)) reason = "unfinished";
    else if (Number(obj.db.one("SELECT count(*) FROM prompts WHERE status IN ('pending', 'processing')")[0]) >= obj.config.max_unfinished) reason = "queue_full";
    const requestId = `${RESERVED_PREFIX}${s3.id}:${iso(latest)}`;
    if (reason === null && obj.db.one("SELECT 1 FROM prompts WHERE request_id = ?", requestId)) reason = "unfinished";
    if (reason !== null) {
      event(obj, "schedule.missed", { schedule_id: s3.id, due_at: iso(latest), reason, count }, null);
      if (following === null) obj.db.run("DELETE FROM schedules WHERE id = ?", s3.id);
      else obj.db.run("UPDATE schedules SET next_at = ?, missed = missed + ? WHERE id = ?", following, count, s3.id);
      touch(obj, false);
      continue;
    }
    const to = check(obj, "prompt", meta.status);
    const promptId = obj.db.one("INSERT INTO prompts (status, content, author, source, request_id, created_at, schedule_id) VALUES ('pending', ?, ?, ?, ?, ?, ?) RETURNING id", s3.content, s3.author, s3.source, requestId, t, s3.id)[0];
    event(obj, "prompt.queued", { prompt_id: promptId }, s3.author);
    event(obj, "schedule.fired", { schedule_id: s3.id, prompt_id: promptId, due_at: iso(latest), missed: count - 1 }, s3.author);
    if (following === null) obj.db.run("DELETE FROM schedules WHERE id = ?", s3.id);
    else {
      obj.db.run(
        "UPDATE schedules SET next_at = ?, last_fired_at = ?, last_prompt_id = ?, fired = fired + 1, missed = missed + ? WHERE id = ?",
        following,
        latest,
        promptId,
        count - 1,
        s3.id
      );
    }
    if (to !== meta.status) {
      obj.db.run("UPDATE object SET status = ?", to);
      event(obj, "session.status", { from: meta.status, to }, s3.author);
    }
    touch(obj);
    queued++;
  }
  return queued;
}

// src/rules/alarms.ts
function fireDue2(obj) {
  const meta = obj.meta();
  if (meta === null) return "absent";
  const t = now();
  const due = nextAlarmAt(obj.db, false);
  if (due === null || due > t) return "ok";
  if (meta.expires_at !== null && meta.expires_at <= t) return "expired";
  expireLeases(obj, t);
  expire(obj, t);
  if (obj.db.one("SELECT 1 FROM schedules WHERE next_at <= ? LIMIT 1", t)) fireDue(obj, t);
  return "fired";
}

// src/rules/memory.ts
var SOURCES = ["user", "model", "external"];
var COLS3 = "key, value, source, confirmed, created_at, confirmed_at, expires_at";
var factJson = (r) => ({
  key: r[0],
  value: r[1],
  source: r[2],
  confirmed: !!r[3],
  created_at: iso(r[4]),
  confirmed_at: iso(r[5]),
  expires_at: iso(r[6])
});
var visible2 = (r, t) => !!r[3] && (r[6] === null || r[6] > t);
function checkSet(key, value, source, confirmed) {
  validName(key, "memory key");
  if (!SOURCES.includes(source)) throw invalid(say("invalid_memory_source", { source }));
  if (source === "model" && confirmed) throw invalid(say("model_fact_confirmed"));
  if (value === "") throw invalid(say("empty_value"));
}
function setFact(obj, a) {
  const source = a.source ?? "user", confirmed = !!a.confirmed;
  checkSet(a.key, a.value, source, confirmed);
  const t = now();
  if (obj.meta() === null) createObject(obj, "active");
  obj.db.run("DELETE FROM facts WHERE key = ?", a.key);
  obj.db.run(
    `INSERT INTO facts (${COLS3}) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    a.key,
    a.value,
    source,
    confirmed ? 1 : 0,
    t,
    confirmed ? t : null,
    a.expires_seconds ? t + a.expires_seconds * 1e3 : null
  );
  return factJson(obj.db.one(`SELECT ${COLS3} FROM facts WHERE key = ?`, a.key));
}
function row3(obj, key) {
  validName(key, "memory key");
  return obj.meta() ? obj.db.one(`SELECT ${COLS3} FROM facts WHERE key = ?`, key) : null;
}
function getFact(obj, a) {
  const r = row3(obj, a.key);
  if (!r) throw notFound(say("fact_not_found", { key: a.key }));
  if (!a.all_facts && !r[3]) throw notFound(say("fact_unconfirmed", { key: a.key }));
  if (!a.all_facts && !visible2(r, now())) throw notFound(say("fact_expired", { key: a.key }));
  return factJson(r);
}
function listFacts(obj, a) {
  if (obj.meta() === null) return [];
  const t = now();
  return obj.db.all(`SELECT ${COLS3} FROM facts ORDER BY key`).filter((r) => a.all_facts || visible2(r, t)).map(factJson);
}
function confirm(obj, a) {
  const r = row3(obj, a.key);
  if (!r) throw notFound(say("fact_not_found", { key: a.key }));
  if (!r[3]) {
    if (r[6] !== null && r[6] <= now()) throw new DurableError(say("fact_expired_confirm", { key: a.key }), "conflict");
    obj.db.run("UPDATE facts SET confirmed = 1, confirmed_at = ? WHERE key = ?", now(), a.key);
  }
  return factJson(obj.db.one(`SELECT ${COLS3} FROM facts WHERE key = ?`, a.key));
}
function forgetFact(obj, a) {
  const r = row3(obj, a.key);
  if (!r) throw notFound(say("fact_not_found", { key: a.key }));
  obj.db.run("DELETE FROM facts WHERE key = ?", a.key);
  return factJson(r);
}

// src/rules/steps.ts
import { createHash as createHash5 } from "node:crypto";
var LIVE_MS = 3e4;
var MAX_STDOUT = 1048576;
var MAX_KEY = 200;
var PAGE_ROWS2 = 1e3;
var PAGE_BYTES2 = 1024 * 1024;
var COLUMNS3 = [
  "prompt_id",
  "key",
  "seq",
  "status",
  "attempt",
  "token",
  "renewed_at",
  "runs",
  "replays",
  "last_replay_attempt",
  "exit_status",
  "stdout",
  "stdout_bytes",
  "output_too_large",
  "redacted",
  "call_id",
  "args_sha256",
  "approval",
  "started_at",
  "ended_at"
];
var SELECT = `SELECT ${COLUMNS3.join(", ")} FROM steps`;
function stepId(objectId3, promptId, key) {
  return createHash5("sha256").update(`${objectId3}
${promptId}
${key}`).digest("hex").slice(0, 32);
}
function checkKey(key) {
  const n = typeof key === "string" ? [...key].length : 0;
  if (typeof key !== "string" || n < 1 || n > MAX_KEY || !printable(key) || key !== strip(key) || key.startsWith("-")) {
    throw invalid(`invalid step KEY ${quote(key)}: use 1-${MAX_KEY} printable characters, without leading or trailing white space, not beginning with '-'`);
  }
  return key;
}
function checkCall(key, token, callId = null, sha = null, approval = null) {
  checkKey(key);
  if (typeof token !== "string" || token.length < 1 || token.length > 64) throw invalid("invalid step token: 1-64 characters");
  if (callId === null !== (sha === null)) throw invalid("--call-id and --args go together: give both, or neither");
  if (approval !== null && callId === null) throw invalid("--approval needs --call-id and --args: an approval is bound to one tool call");
  if (callId !== null && ([...callId].length < 1 || [...callId].length > 128 || !printable(callId))) {
    throw invalid("invalid --call-id: use 1-128 printable characters");
  }
  if (sha !== null && !/^[0-9a-f]{64}$/.test(sha)) throw invalid("invalid args_sha256: 64 lowercase hex digits");
}
function stepOf(obj, promptId, key) {
  const r = obj.db.one(`${SELECT} WHERE prompt_id = ? AND key = ?`, promptId, key);
  return r === null ? null : Object.fromEntries(COLUMNS3.map((c2, i) => [c2, r[i]]));
}
function current2(obj, promptId) {
  const r = obj.db.one("SELECT status, start FROM prompts WHERE id = ?", promptId);
  return r !== null && r[0] === "processing" ? Number(r[1]) : null;
}
function live(obj, s3, t) {
  return s3.status === "running" && s3.attempt === current2(obj, s3.prompt_id) && (s3.renewed_at ?? 0) >= t - LIVE_MS;
}
var UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
function bytesOf(v2) {
  if (v2 instanceof ArrayBuffer) return new Uint8Array(v2);
  if (ArrayBuffer.isView(v2)) return new Uint8Array(v2.buffer, v2.byteOffset, v2.byteLength);
  return new Uint8Array(0);
}
function stepJson(obj, s3, t = now()) {
  const status = s3.status === "running" && !live(obj, s3, t) ? "abandoned" : s3.status;
  const kept = status === "done" && !s3.output_too_large && !s3.redacted;
  const out = kept ? bytesOf(s3.stdout) : null;
  let text4 = null;
  if (out !== null) {
    try {
      text4 = UTF8.decode(out);
    } catch {
      text4 = null;
    }
  }
  const done = s3.status === "done";
  return {
    prompt: s3.prompt_id,
    key: s3.key,
    seq: s3.seq,
    step_id: stepId(obj.id, s3.prompt_id, s3.key),
    status,
    attempt: s3.attempt,
    runs: s3.runs,
    replays: s3.replays,
    last_replay_attempt: s3.last_replay_attempt,
    exit_status: done ? s3.exit_status : null,
    stdout: text4,
    stdout_base64: out !== null ? blobText(out) : null,
    stdout_bytes: done ? s3.stdout_bytes : null,
    output_too_large: !!s3.output_too_large,
    redacted: !!s3.redacted,
    call_id: s3.call_id,
    args_sha256: s3.args_sha256,
    approval: s3.approval,
    started_at: iso(s3.started_at),
    ended_at: iso(s3.ended_at)
  };
}
function stepNow(obj, promptId, key) {
  const s3 = stepOf(obj, promptId, key);
  return s3 === null ? null : stepJson(obj, s3);
}
function visible3(obj) {
  requireSession(obj);
  obj.requireVisible();
}
var promptMissing = (obj, id) => notFound(`prompt ${id} of ${obj.what} not found; list them with 'durable session queue ${obj.name}'`);
function promptOf(obj, promptId, attempt) {
  let start;
  if (promptId === null) {
    const r = obj.db.one("SELECT id, start FROM prompts WHERE status = 'processing' ORDER BY id LIMIT 1");
    if (r === null) throw conflict(`no prompt of ${obj.what} is processing; a step belongs to a started prompt`);
    [promptId, start] = [Number(r[0]), Number(r[1])];
  } else {
    const r = obj.db.one("SELECT status, start FROM prompts WHERE id = ?", promptId);
    if (r === null) throw promptMissing(obj, promptId);
    if (r[0] !== "processing") {
      throw conflict(`prompt ${promptId} of ${obj.what} is ${r[0]}, not processing; a step belongs to a started prompt, and only its current start may run it`);
    }
    start = Number(r[1]);
  }
  if (attempt !== null && attempt !== start) {
    throw conflict(`start ${attempt} of prompt ${promptId} of ${obj.what} is not its current start (${start}); a step acts only for the current start`);
  }
  return [promptId, start];
}
function locate(obj, promptId, approval) {
  visible3(obj);
  if (promptId !== null && obj.db.one("SELECT 1 FROM prompts WHERE id = ?", promptId) === null) throw promptMissing(obj, promptId);
  return approval !== null ? get(obj, { request_id: approval }) : null;
}
function notApproved(message, code, reason, request) {
  return new DurableError(message, code, { reason, request });
}
function approve(obj, request, promptId, key, callId, sha) {
  const rid = request.id;
  const where = `request ${rid} of ${obj.what}`;
  if (request.call_id === null) {
    throw notApproved(`${where} is not bound to a tool call; ask it with --call-id and --args`, "not_approved", "unbound", request);
  }
  if (request.call_id !== callId || request.args_sha256 !== sha) {
    throw notApproved(
      `${where} approves another call (call id ${quote(request.call_id)}); this call was not approved`,
      "not_approved",
      "other_call",
      request
    );
  }
  const used = obj.db.one(
    "SELECT prompt_id, key FROM steps WHERE approval = ? AND NOT (prompt_id = ? AND key = ?) LIMIT 1",
    rid,
    promptId,
    key
  );
  if (used !== null) {
    throw notApproved(
      `${where} was already used by step ${quote(used[1])} of prompt ${used[0]}; a request approves one step`,
      "not_approved",
      "used",
      request
    );
  }
  if (request.status === "pending") {
    throw notApproved(`${where} is pending; wait for the answer with 'durable elicit wait ${obj.name} ${rid}', then run the step again`, "not_approved", "pending", request);
  }
  if (request.status === "expired") throw notApproved(`${where} expired without an answer; the call was refused`, "refused", "expired", request);
  if (!request.approved) {
    throw notApproved(`${where} was declined (answer ${quote(request.answer)}); the call was refused`, "refused", "declined", request);
  }
}
function tooLarge(key, size) {
  return `step ${quote(key)} wrote ${size} bytes, more than the 1 MiB a step keeps; it is not run again (write a large result to a file and print its path)`;
}
var lostMessage = (key) => `the start was lost while step ${quote(key)} ran; its result is not recorded and the next start runs it again`;
function begin(obj, a) {
  const [callId, sha, approval] = [a.call_id ?? null, a.args_sha256 ?? null, a.approval ?? null];
  checkCall(a.key, a.token, callId, sha, approval);
  const key = a.key;
  const request = locate(obj, a.prompt_id ?? null, approval);
  const t = now();
  const [promptId, start] = promptOf(obj, a.prompt_id ?? null, a.attempt ?? null);
  const answer3 = (action, step = null) => ({ action, prompt: promptId, start, step_id: stepId(obj.id, promptId, key), step });
  const s3 = stepOf(obj, promptId, key);
  if (s3 !== null) {
    if (s3.call_id !== callId || s3.args_sha256 !== sha) {
      throw conflict(`step ${quote(key)} was recorded for another call; its key is taken for prompt ${promptId}`);
    }
    if (s3.status === "done") {
      if (s3.redacted) throw conflict(`step ${quote(key)} was redacted; its output is gone (it is not run again)`);
      if (s3.output_too_large) throw invalid(tooLarge(key, s3.stdout_bytes));
      obj.db.run("UPDATE steps SET replays = replays + 1, last_replay_attempt = ? WHERE prompt_id = ? AND key = ?", start, promptId, key);
      touch(obj, false);
      s3.replays += 1;
      s3.last_replay_attempt = start;
      return answer3("replay", stepJson(obj, s3, t));
    }
    if (live(obj, s3, t)) {
      if (a.inside === String(promptId)) throw conflict(`step ${quote(key)} is already running in this process tree`);
      return answer3("wait");
    }
  }
  if (request !== null) approve(obj, request, promptId, key, callId, sha);
  if (s3 === null) {
    const seq = Number(obj.db.one("SELECT coalesce(max(seq), 0) + 1 FROM steps WHERE prompt_id = ?", promptId)[0]);
    obj.db.run(
      "INSERT INTO steps (prompt_id, key, seq, status, attempt, token, renewed_at, runs, call_id, args_sha256, approval, started_at) VALUES (?, ?, ?, 'running', ?, ?, ?, 1, ?, ?, ?, ?)",
      promptId,
      key,
      seq,
      start,
      a.token,
      t,
      callId,
      sha,
      approval,
      t
    );
  } else {
    obj.db.run(
      "UPDATE steps SET status = 'running', attempt = ?, token = ?, renewed_at = ?, runs = runs + 1, approval = coalesce(?, approval), started_at = ?, ended_at = NULL WHERE prompt_id = ? AND key = ?",
      start,
      a.token,
      t,
      approval,
      t,
      promptId,
      key
    );
  }
  touch(obj, false);
  return answer3("run");
}
function stillLive(obj, a) {
  visible3(obj);
  const s3 = stepOf(obj, a.prompt_id, a.key);
  return s3 !== null && live(obj, s3, now());
}
function held(obj, promptId, key, token, start) {
  const s3 = stepOf(obj, promptId, key);
  return s3 !== null && s3.status === "running" && s3.token === token && s3.attempt === start && current2(obj, promptId) === start;
}
function renew2(obj, a) {
  checkCall(a.key, a.token);
  if (!held(obj, a.prompt_id, a.key, a.token, a.start)) throw conflict(lostMessage(a.key));
  obj.db.run("UPDATE steps SET renewed_at = ? WHERE prompt_id = ? AND key = ?", now(), a.prompt_id, a.key);
  touch(obj, false);
  return null;
}
function stdoutOf(key, stdout, size, tooBig) {
  if (stdout !== null && !isBase64(stdout)) throw invalid(`the stdout of step ${quote(key)} is not base64`);
  const data = stdout === null ? new Uint8Array(0) : bytesFrom(stdout);
  if (tooBig) {
    if (size <= MAX_STDOUT) throw invalid(`step ${quote(key)} is marked output_too_large with ${size} bytes, within the 1 MiB a step keeps`);
    return null;
  }
  if (data.length > MAX_STDOUT) {
    throw invalid(`the stdout of step ${quote(key)} is ${data.length} bytes, more than the 1 MiB a step keeps; a commit over it is marked output_too_large and holds no stdout`);
  }
  if (size !== data.length) throw invalid(`the stdout of step ${quote(key)} is ${data.length} bytes, not the ${size} stdout_bytes says`);
  return data;
}
function bytesFrom(b643) {
  const s3 = atob(b643);
  const out = new Uint8Array(s3.length);
  for (let i = 0; i < s3.length; i++) out[i] = s3.charCodeAt(i);
  return out;
}
function commit(obj, a) {
  checkCall(a.key, a.token);
  const data = stdoutOf(a.key, a.stdout ?? null, a.stdout_bytes, !!a.output_too_large);
  if (!held(obj, a.prompt_id, a.key, a.token, a.start)) throw conflict(lostMessage(a.key));
  const t = now();
  obj.db.run(
    "UPDATE steps SET status = 'done', token = NULL, exit_status = ?, stdout = ?, stdout_bytes = ?, output_too_large = ?, ended_at = ? WHERE prompt_id = ? AND key = ?",
    a.exit_status,
    data,
    a.stdout_bytes,
    data === null ? 1 : 0,
    t,
    a.prompt_id,
    a.key
  );
  touch(obj);
  return stepJson(obj, stepOf(obj, a.prompt_id, a.key), t);
}
function abandon(obj, a) {
  checkCall(a.key, a.token);
  const s3 = stepOf(obj, a.prompt_id, a.key);
  if (s3 !== null && s3.status === "running" && s3.token === a.token) {
    obj.db.run("UPDATE steps SET status = 'abandoned', token = NULL WHERE prompt_id = ? AND key = ?", a.prompt_id, a.key);
    touch(obj, false);
  }
  const after = stepOf(obj, a.prompt_id, a.key);
  return after === null ? null : stepJson(obj, after);
}
function listing(obj, a) {
  visible3(obj);
  const promptId = a.prompt_id ?? null;
  if (promptId !== null && obj.db.one("SELECT 1 FROM prompts WHERE id = ?", promptId) === null) throw promptMissing(obj, promptId);
  const cursor = a.cursor ?? null;
  if (cursor !== null && cursor.length !== 2) throw invalid("invalid cursor of steps: [prompt id, seq]");
  const after = cursor ?? [0, 0];
  let where = "WHERE (prompt_id > ? OR (prompt_id = ? AND seq > ?))";
  const params = [after[0], after[0], after[1]];
  if (promptId !== null) {
    where += " AND prompt_id = ?";
    params.push(promptId);
  }
  const t = now();
  const rows = [];
  let size = 0;
  for (const r of obj.db.iter(`${SELECT} ${where} ORDER BY prompt_id, seq`, ...params)) {
    if (rows.length >= PAGE_ROWS2 || size >= PAGE_BYTES2) {
      const last = rows[rows.length - 1];
      return { rows, next: [last.prompt, last.seq] };
    }
    const s3 = Object.fromEntries(COLUMNS3.map((c2, i) => [c2, r[i]]));
    size += bytesOf(s3.stdout).length;
    rows.push(stepJson(obj, s3, t));
  }
  return { rows, next: null };
}
function ofStart(obj, a) {
  const ran = [];
  const replayed = [];
  for (const [key, status, attempt, lastReplay] of obj.db.all(
    "SELECT key, status, attempt, last_replay_attempt FROM steps WHERE prompt_id = ? ORDER BY seq",
    a.prompt_id
  )) {
    if (status === "done" && attempt === a.start) ran.push(key);
    else if (status === "done" && lastReplay === a.start) replayed.push(key);
  }
  return { ran, replayed };
}

// src/recall.ts
var PROMPT_OPS = /* @__PURE__ */ new Set(["prompt", "next_prompt", "renew", "finish", "release"]);
var ROW_FIELDS = ["content", "tool_calls", "meta", "data"];
function reduce(op, args, result) {
  if (result === null || result === void 0) return null;
  if (args.part != null && typeof result === "object" && !Array.isArray(result) && "staged" in result) return null;
  if (op === "append_many") {
    if (args.seqs_only) return null;
    const rows = Array.isArray(result) ? result : [result];
    return { recall: "rows", seqs: rows.map((r) => typeof r === "number" ? r : r.seq), one: !Array.isArray(result) };
  }
  if (op === "redact") return { recall: "rows", seqs: [result.seq], one: true };
  if (op === "pop") {
    return { recall: "popped", rows: result.map((r) => Object.fromEntries(Object.entries(r).filter(([k2]) => !ROW_FIELDS.includes(k2)))) };
  }
  if ((op === "summarize" || op === "compact" || op === "commit_summary") && result.summary) {
    return { recall: "summary", seq: result.summary.seq, superseded: result.superseded };
  }
  if (PROMPT_OPS.has(op) && typeof result === "object" && "id" in result) {
    return { recall: "prompt", id: result.id, window: result.window !== void 0 ? { budget: args.context, keep: result.turn_seq } : null };
  }
  if (op === "step_begin" && typeof result === "object" && "action" in result) {
    return { recall: "step_begin", action: result.action, prompt: result.prompt, start: result.start, step_id: result.step_id, key: args.key };
  }
  if ((op === "step_commit" || op === "step_abandon") && typeof result === "object" && "key" in result) {
    return { recall: "step", prompt: result.prompt, key: result.key };
  }
  if ((op === "ask" || op === "answer" || op === "decline") && typeof result === "object" && "id" in result) return { recall: "request", id: result.id };
  if ((op === "set_fact" || op === "confirm_fact") && typeof result === "object" && "key" in result) return { recall: "fact", key: result.key };
  if (op === "forget_fact" && typeof result === "object" && "key" in result) return { recall: "forgotten", fact: { ...result, value: null } };
  return null;
}
function rebuild(obj, r) {
  switch (r.recall) {
    case "rows": {
      const seqs = r.seqs;
      const rows = [];
      let bytes2 = 0;
      for (const seq of seqs) {
        const row4 = obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, seq);
        if (!row4) continue;
        bytes2 += rowBytes(row4);
        if (!r.one && (rows.length >= PAGE_ROWS || bytes2 > PAGE_BYTES && rows.length)) {
          return seqs.filter((s3) => obj.db.one("SELECT 1 FROM turns WHERE seq = ?", s3) !== null);
        }
        rows.push(rowJson(row4));
      }
      return r.one ? rows[0] ?? null : rows;
    }
    case "popped":
      return r.rows.map((row4) => ({ ...row4, content: null, tool_calls: null, meta: null, data: null }));
    case "summary": {
      const row4 = obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, r.seq);
      return { summary: row4 ? rowJson(row4) : null, superseded: r.superseded };
    }
    case "prompt": {
      const p = getPrompt(obj, { prompt_id: r.id });
      const w2 = r.window;
      if (w2) p.window = contextWindow(obj, { budget: w2.budget, keep: w2.keep });
      return p;
    }
    case "request":
      return get(obj, { request_id: r.id });
    case "step_begin": {
      const step = r.action === "replay" ? stepNow(obj, r.prompt, r.key) : null;
      return { action: r.action, prompt: r.prompt, start: r.start, step_id: r.step_id, step };
    }
    case "step":
      return stepNow(obj, r.prompt, r.key);
    case "forgotten":
      return r.fact;
    case "fact": {
      const row4 = obj.db.one(`SELECT ${COLS3} FROM facts WHERE key = ?`, r.key);
      return row4 ? factJson(row4) : null;
    }
    default:
      return null;
  }
}

// src/follow.ts
var END_OF_STREAM = 4e3;
var TOKEN_ENDED = 4001;
var UNKNOWN_SOCKET = 4002;
var TOO_FAR_BEHIND = 4003;
var MAX_BACKLOG = 4 * 1024 * 1024;
var ENDS = ["archived", "cancelled"];
var FOLLOWERS_TABLE = "CREATE TABLE IF NOT EXISTS _durable_followers (id TEXT PRIMARY KEY, user TEXT NOT NULL, call TEXT NOT NULL, last_seq INTEGER NOT NULL, at INTEGER NOT NULL)";
function fidOf(ws) {
  try {
    const a = ws.deserializeAttachment();
    return a && typeof a.fid === "string" ? a.fid : null;
  } catch {
    return null;
  }
}
function close(ws, code, why) {
  try {
    ws.close(code, why.slice(0, 120));
  } catch {
  }
}
function accept(ctx, db, call, since) {
  const pair = new WebSocketPair();
  const [client, server] = [pair[0], pair[1]];
  const fid = crypto.randomUUID();
  ctx.acceptWebSocket(server);
  server.serializeAttachment({ fid });
  const follow = {
    address: call.address,
    actor: call.actor,
    config: call.config,
    id: call.id,
    all_users: !!call.all_users,
    token: call.token
  };
  db.run("INSERT INTO _durable_followers (id, user, call, last_seq, at) VALUES (?, ?, ?, ?, ?)", fid, call.actor, JSON.stringify(follow), since, now());
  pushOne(db, server, fid, null);
  return new Response(null, { status: 101, webSocket: client });
}
function push(ctx, db, revoked) {
  const sockets = ctx.getWebSockets();
  const live2 = /* @__PURE__ */ new Set();
  for (const ws of sockets) {
    const fid = fidOf(ws);
    if (fid === null) close(ws, UNKNOWN_SOCKET, "session expired, reconnect");
    else {
      live2.add(fid);
      pushOne(db, ws, fid, revoked);
    }
  }
  for (const [fid] of db.all("SELECT id FROM _durable_followers")) {
    if (!live2.has(fid)) db.run("DELETE FROM _durable_followers WHERE id = ?", fid);
  }
}
function pushOne(db, ws, fid, revoked) {
  const m = db.one("SELECT user, call, last_seq FROM _durable_followers WHERE id = ?", fid);
  if (!m) return close(ws, UNKNOWN_SOCKET, "session expired, reconnect");
  const f2 = JSON.parse(m[1]);
  if (f2.token && revoked) {
    const ended = f2.token.exp * 1e3 <= now() ? "token expired" : revoked(f2.token) === true ? "token revoked" : null;
    if (ended !== null || revoked(f2.token) === null) {
      db.run("DELETE FROM _durable_followers WHERE id = ?", fid);
      return ended !== null ? close(ws, TOKEN_ENDED, ended) : close(ws, UNKNOWN_SOCKET, "session expired, reconnect");
    }
  }
  const obj = new Opened(db, f2.address, m[0], f2.config, f2.id);
  const meta = obj.meta();
  const end = (why) => {
    db.run("DELETE FROM _durable_followers WHERE id = ?", fid);
    close(ws, END_OF_STREAM, why);
  };
  if (meta === null) return end("deleted");
  if (f2.address.id_scope === "tenant" && !f2.all_users && obj.role() === null) return end("no longer visible");
  let last = Number(m[2]);
  for (const [seq, row4] of rowsSince(obj, last)) {
    const message = stringify({ row: row4 });
    const backlog = ws.bufferedAmount;
    if (backlog > 0 && backlog + utf8Length(message) > MAX_BACKLOG) {
      db.run("DELETE FROM _durable_followers WHERE id = ?", fid);
      return close(ws, TOO_FAR_BEHIND, "too far behind, reconnect");
    }
    ws.send(message);
    last = seq;
  }
  if (last !== Number(m[2])) db.run("UPDATE _durable_followers SET last_seq = ? WHERE id = ?", last, fid);
  if (ENDS.includes(meta.status)) end(meta.status);
}
function utf8Length(text4) {
  let n = text4.length;
  for (let i = 0; i < text4.length; i++) {
    const c2 = text4.charCodeAt(i);
    if (c2 >= 2048 && (c2 < 55296 || c2 > 57343)) n += 2;
    else if (c2 >= 128 && c2 < 2048) n += 1;
    else if (c2 >= 55296 && c2 <= 56319) n += 1;
  }
  return n;
}
function endAll(ctx, why) {
  for (const ws of ctx.getWebSockets()) close(ws, END_OF_STREAM, why);
}
function closed(db, ws, exists) {
  const fid = fidOf(ws);
  if (fid !== null && exists) db.run("DELETE FROM _durable_followers WHERE id = ?", fid);
}

// package.json
var version = "0.1.0";

// src/deliver.ts
var WEBHOOKS = CONSTANTS.webhooks;
var DELAYS = WEBHOOKS.delays;
var ATTEMPTS = DELAYS.length + 1;
var CLAIM_FLOOR = WEBHOOKS.claim_floor_seconds;
var TIMEOUT_MS = WEBHOOKS.attempt_timeout_seconds * 1e3;
var PER_ALARM = WEBHOOKS.alarm_deliveries;
var KEEP_FINISHED = 100;
function claim(db) {
  const t = now();
  const r = db.one("SELECT d.id, d.attempts, h.url, h.secret, d.webhook_id, d.body FROM deliveries d JOIN hooks h ON h.id = d.hook_id WHERE d.status = 'pending' AND d.next_attempt_at <= ? ORDER BY d.next_attempt_at, d.id LIMIT 1", t);
  if (!r) return null;
  const attempt = Number(r[1]) + 1;
  const delay = attempt <= DELAYS.length ? DELAYS[attempt - 1] : 0;
  db.run(
    "UPDATE deliveries SET attempts = ?, last_attempt_at = ?, next_attempt_at = ? WHERE id = ?",
    attempt,
    t,
    t + Math.max(delay, CLAIM_FLOOR) * 1e3,
    r[0]
  );
  db.run("UPDATE object SET updated_at = ?", t);
  return { id: r[0], attempt, started: t, url: r[2], secret: r[3], webhookId: r[4], body: r[5] };
}
var b642 = (bytes2) => btoa(String.fromCharCode(...bytes2));
async function sign(secret, webhookId, timestamp, body) {
  const raw2 = Uint8Array.from(atob(secret.slice("whsec_".length)), (c2) => c2.charCodeAt(0));
  const key = await crypto.subtle.importKey("raw", raw2, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${webhookId}.${timestamp}.${body}`));
  return "v1," + b642(new Uint8Array(mac));
}
async function post(c2) {
  try {
    const timestamp = Math.floor(Date.now() / 1e3);
    const answer3 = await fetch(c2.url, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.timeout(TIMEOUT_MS),
      body: c2.body,
      headers: {
        "content-type": "application/json",
        "user-agent": `durable/${version}`,
        "webhook-id": c2.webhookId,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": await sign(c2.secret, c2.webhookId, timestamp, c2.body)
      }
    });
    try {
      await answer3.body?.cancel();
    } catch {
    }
    return answer3.status >= 200 && answer3.status < 300 ? [answer3.status, null] : [answer3.status, `HTTP ${answer3.status}`];
  } catch (e) {
    const name = e instanceof Error ? e.name : "";
    const message = e instanceof Error ? e.message : String(e);
    if (name === "TimeoutError" || name === "AbortError" || /timed? ?out/i.test(message)) return [null, "timeout"];
    if (/refused/i.test(message)) return [null, "connection refused"];
    if (/connection lost|connect/i.test(message)) return [null, "connection failed"];
    return [null, (message || name || "fetch failed").slice(0, 200)];
  }
}
function record2(db, c2, status, error) {
  const r = db.one("SELECT hook_id, prompt_id, attempts, status FROM deliveries WHERE id = ?", c2.id);
  if (!r || Number(r[2]) !== c2.attempt || r[3] !== "pending") return;
  const [hookId, promptId] = r;
  const t = now();
  db.run("UPDATE object SET updated_at = ?", t);
  if (error === null) {
    db.run(
      "UPDATE deliveries SET status = 'delivered', delivered_at = ?, next_attempt_at = NULL, last_response = ?, last_error = NULL WHERE id = ?",
      t,
      status,
      c2.id
    );
  } else if (c2.attempt >= ATTEMPTS) {
    db.run("UPDATE deliveries SET status = 'failed', next_attempt_at = NULL, last_response = ?, last_error = ? WHERE id = ?", status, error, c2.id);
    db.run(
      "INSERT INTO events (type, actor, data, at) VALUES ('delivery.failed', NULL, ?, ?)",
      pyDumps({ delivery_id: c2.id, hook_id: hookId, prompt_id: promptId, attempts: c2.attempt, error }),
      t
    );
  } else {
    db.run(
      "UPDATE deliveries SET next_attempt_at = ?, last_response = ?, last_error = ? WHERE id = ?",
      c2.started + DELAYS[c2.attempt - 1] * 1e3,
      status,
      error,
      c2.id
    );
  }
  db.run("DELETE FROM deliveries WHERE hook_id = ? AND status IN ('delivered', 'failed') AND id NOT IN (SELECT id FROM deliveries WHERE hook_id = ? AND status IN ('delivered', 'failed') ORDER BY id DESC LIMIT ?)", hookId, hookId, KEEP_FINISHED);
}

// src/rules/checkpoints.ts
var ADAPTER = "langgraph";
var CHECKPOINT = "checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata";
function bytes(v2, what) {
  if (v2 === null || v2 === void 0) return null;
  if (typeof v2 !== "string" || !isBase64(v2)) throw invalid(`${what} must be base64 text`);
  return blobBytes(v2);
}
var text3 = (v2) => v2 === null || v2 === void 0 ? null : typeof v2 === "string" ? v2 : blobText(v2);
function str(v2, what) {
  if (typeof v2 !== "string") throw invalid(`${what} must be a string`);
  return v2;
}
function tombOf(obj, a) {
  if (a.__tomb_fetched) return a.__tomb ?? null;
  const r = obj.db.one("SELECT last_checkpoint FROM _durable_tomb");
  return r ? { last_checkpoint: r[0] } : null;
}
function refuseLate(obj, a, externalId, ids) {
  const grave = tombOf(obj, a);
  if (grave === null || !grave.last_checkpoint) return;
  if (ids.some((i) => i !== null && i !== void 0 && i <= grave.last_checkpoint)) {
    throw conflict(say("thread_deleted", { thread: externalId }));
  }
}
function writable(obj, a, externalId) {
  let meta = obj.meta();
  if (meta === null) {
    createObject(obj, "active");
    obj.db.run("UPDATE object SET external_id = ?, adapter = ?", externalId, ADAPTER);
    const grave = tombOf(obj, a);
    if (grave !== null) obj.db.run("INSERT OR REPLACE INTO _durable_tomb (one, last_checkpoint) VALUES (1, ?)", grave.last_checkpoint);
    meta = obj.meta();
  } else {
    obj.requireVisible();
    if (meta.external_id === null) obj.db.run("UPDATE object SET external_id = ?, adapter = ?", externalId, ADAPTER);
  }
  check(obj, "write", meta.status);
  return meta;
}
function moves(obj, id, parent) {
  const newest = obj.db.one("SELECT max(checkpoint_id) FROM lg_checkpoints WHERE checkpoint_ns = ''")[0];
  return newest !== null && id > newest && parent !== newest;
}
function followBranch(obj, messageIds) {
  const ids = JSON.stringify(messageIds);
  const mine = (op) => `seq IN (SELECT seq FROM lg_mirrored WHERE message_id ${op} (SELECT value FROM json_each(?)))`;
  obj.db.run(`UPDATE turns SET superseded_by = 0 WHERE superseded_by IS NULL AND ${mine("NOT IN")}`, ids);
  obj.db.run(`UPDATE turns SET superseded_by = NULL WHERE superseded_by = 0 AND ${mine("IN")}`, ids);
  obj.db.run("UPDATE object SET live_turns = (SELECT count(*) FROM turns WHERE superseded_by IS NULL), live_tokens = (SELECT coalesce(sum(tokens), 0) FROM turns WHERE superseded_by IS NULL)");
}
function putCheckpoint(obj, a) {
  const externalId = str(a.external_id, "external_id"), ns = str(a.ns, "ns"), id = str(a.checkpoint_id, "checkpoint_id");
  const parent = a.parent_id ?? null;
  refuseLate(obj, a, externalId, [parent]);
  const keep = a.keep ?? null;
  if (keep !== null && (!Number.isInteger(keep) || keep < 1)) throw invalid(say("keep_checkpoints"));
  const prepared2 = (a.mirror ?? []).map(([mid, fields2]) => {
    if (fields2 === null || typeof fields2 !== "object" || Array.isArray(fields2)) throw invalid("a mirrored message's row must be a JSON object");
    return [str(mid, "message id"), prepare(obj, fields2)];
  });
  parse(str(a.metadata, "metadata"), "checkpoint metadata");
  const blob = bytes(a.blob, "the checkpoint");
  writable(obj, a, externalId);
  if (ns === "" && moves(obj, id, parent)) followBranch(obj, prepared2.map(([mid]) => mid));
  obj.db.run("DELETE FROM lg_checkpoints WHERE checkpoint_ns = ? AND checkpoint_id = ?", ns, id);
  obj.db.run(
    `INSERT INTO lg_checkpoints (${CHECKPOINT}) VALUES (?, ?, ?, ?, ?, ?)`,
    ns,
    id,
    parent,
    a.type ?? null,
    blob,
    a.metadata
  );
  const fresh = prepared2.filter(([mid]) => obj.db.one("SELECT 1 FROM lg_mirrored WHERE message_id = ?", mid) === null);
  if (fresh.length) {
    const seqs = insertRows(obj, fresh.map(([, row4]) => row4), obj.actor);
    fresh.forEach(([mid], i) => obj.db.run("INSERT OR IGNORE INTO lg_mirrored (message_id, seq) VALUES (?, ?)", mid, seqs[i]));
  } else touch(obj);
  if (keep !== null) {
    const old = obj.db.all(
      "SELECT checkpoint_id FROM lg_checkpoints WHERE checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT -1 OFFSET ?",
      ns,
      Math.min(keep, Number.MAX_SAFE_INTEGER)
    );
    for (const [c2] of old) {
      obj.db.run("DELETE FROM lg_checkpoints WHERE checkpoint_ns = ? AND checkpoint_id = ?", ns, c2);
      obj.db.run("DELETE FROM lg_writes WHERE checkpoint_ns = ? AND checkpoint_id = ?", ns, c2);
    }
  }
  return null;
}
function putWrites(obj, a) {
  const externalId = str(a.external_id, "external_id"), ns = str(a.ns, "ns"), id = str(a.checkpoint_id, "checkpoint_id");
  refuseLate(obj, a, externalId, [id]);
  const writes = (a.writes ?? []).map((w2, i) => {
    const [task, path, idx, channel, type, blob] = w2;
    if (w2.length !== 6 || typeof task !== "string" || typeof path !== "string" || !Number.isSafeInteger(idx) || typeof channel !== "string" || type !== null && typeof type !== "string") {
      throw invalid(`write ${i + 1} must be [task_id, task_path, idx, channel, type, value]: strings, an integer idx, a type or null`);
    }
    return [task, path, idx, channel, type, bytes(blob, `the value of write ${i + 1}`)];
  });
  writable(obj, a, externalId);
  const key = "checkpoint_ns = ? AND checkpoint_id = ? AND task_id = ? AND idx = ?";
  for (const w2 of writes) {
    if (a.replace) obj.db.run(`DELETE FROM lg_writes WHERE ${key}`, ns, id, w2[0], w2[2]);
    else if (obj.db.one(`SELECT 1 FROM lg_writes WHERE ${key}`, ns, id, w2[0], w2[2])) continue;
    obj.db.run(
      "INSERT INTO lg_writes (checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      ns,
      id,
      ...w2
    );
  }
  touch(obj);
  return null;
}
function checkpointRows(obj, a) {
  const meta = obj.meta();
  if (a.page != null) return checkpointPage(obj, meta, a);
  if (meta === null || a.owned && meta.adapter !== ADAPTER) return a.with_writes ? [[], []] : [];
  obj.requireVisible();
  const [where, params] = filters(a);
  if (a.limit != null) params.push(Math.min(a.limit, Number.MAX_SAFE_INTEGER));
  const sql = `SELECT ${CHECKPOINT} FROM lg_checkpoints${where.length ? " WHERE " + where.join(" AND ") : ""} ORDER BY checkpoint_id DESC` + (a.limit != null ? " LIMIT ?" : "");
  const rows = obj.db.all(sql, ...params).map((r) => [r[0], r[1], r[2], r[3], text3(r[4]), r[5]]);
  if (!a.with_writes) return rows;
  return [rows, rows.map((r) => writeRows(obj, { ns: r[0], checkpoint_id: r[1] }))];
}
function filters(a) {
  const where = [], params = [];
  for (const [column, value, op] of [["checkpoint_ns", a.ns, "="], ["checkpoint_id", a.checkpoint_id, "="], ["checkpoint_id", a.before, "<"]]) {
    if (value !== null && value !== void 0) {
      where.push(`${column} ${op} ?`);
      params.push(value);
    }
  }
  return [where, params];
}
var PAGE_BYTES3 = 524288;
function checkpointPage(obj, meta, a) {
  const out = { rows: [], writes: [], next: null };
  if (meta === null || a.owned && meta.adapter !== ADAPTER) return out;
  obj.requireVisible();
  const page = a.page;
  if (page.length !== 0 && page.length !== 2) throw invalid("page must be [] or the next of the previous page");
  const [where, params] = filters(a);
  if (page.length) {
    where.push("(checkpoint_id, checkpoint_ns) < (?, ?)");
    params.push(page[0], page[1]);
  }
  const limit = a.limit ?? Infinity;
  let bytes2 = 0;
  for (const r of obj.db.iter(`SELECT ${CHECKPOINT} FROM lg_checkpoints${where.length ? " WHERE " + where.join(" AND ") : ""} ORDER BY checkpoint_id DESC, checkpoint_ns DESC`, ...params)) {
    const row4 = [r[0], r[1], r[2], r[3], text3(r[4]), r[5]];
    const writes = writeRows(obj, { ns: r[0], checkpoint_id: r[1] });
    out.rows.push(row4);
    out.writes.push(writes);
    bytes2 += String(row4[4] ?? "").length + String(row4[5] ?? "").length + writes.reduce((n, w2) => n + String(w2[3] ?? "").length, 0);
    if (out.rows.length >= limit) break;
    if (bytes2 >= PAGE_BYTES3) {
      out.next = [r[1], r[0]];
      break;
    }
  }
  return out;
}
function writeRows(obj, a) {
  return obj.db.all(
    "SELECT task_id, channel, type, value, task_path, idx FROM lg_writes WHERE checkpoint_ns = ? AND checkpoint_id = ?",
    a.ns,
    a.checkpoint_id
  ).map((r) => [r[0], r[1], r[2], text3(r[3]), r[4], r[5]]);
}
function deleteThread(obj) {
  const meta = obj.meta();
  const r = meta ? obj.db.one("SELECT max(checkpoint_id) FROM lg_checkpoints") : null;
  const members = meta ? obj.db.all("SELECT user FROM participants ORDER BY user").map((m) => String(m[0])) : [];
  return { last_checkpoint: r ? r[0] : null, owner: obj.address.owner, members };
}

// src/rules/limits.ts
function hit(obj, a) {
  validName(a.key, "limit key");
  if (!(a.n >= 1) || !(a.per >= 1)) throw invalid(say("invalid_rate", { rate: a.rate }));
  if (a.burst != null && a.burst < 1) throw invalid(say("invalid_burst"));
  const capacity = a.burst || a.n;
  const refill = a.n / (a.per * 1e3);
  const t = now();
  if (obj.meta() === null) createObject(obj, "active");
  const r = obj.db.one("SELECT tokens, updated_at FROM buckets WHERE key = ?", a.key);
  let tokens = r === null ? capacity : Math.min(capacity, r[0] + Math.max(0, t - r[1]) * refill);
  const allowed2 = tokens >= 1;
  if (allowed2) tokens -= 1;
  obj.db.run("INSERT OR REPLACE INTO buckets (key, tokens, updated_at) VALUES (?, ?, ?)", a.key, tokens, t);
  const retry = allowed2 ? null : Math.max(1, Math.ceil((1 - tokens) / refill / 1e3 - 1e-9));
  const doc = { key: a.key, allowed: allowed2, remaining: Math.floor(tokens + 1e-9), retry_after: retry };
  if (!allowed2) throw new DurableError(say("rate_limited", { key: a.key, rate: a.rate, retry }), "rate_limited", doc);
  return doc;
}

// src/rules/retention.ts
function ttl(obj, a) {
  let meta = requireSession(obj);
  obj.requireVisible();
  if (a.clear || a.seconds != null) {
    const next = a.clear ? null : a.seconds;
    if (next !== meta.ttl_seconds) {
      obj.db.run("UPDATE object SET ttl_seconds = ?, expires_at = CASE WHEN ? IS NULL THEN NULL ELSE last_active_at + ? * 1000 END", next, next, next);
      event(obj, "ttl.set", { ttl_seconds: next });
      touch(obj, false);
    }
    meta = obj.meta();
  }
  return { name: meta.name, ttl_seconds: meta.ttl_seconds, expires_at: iso(meta.expires_at) };
}
function remove(obj) {
  const meta = requireSession(obj);
  obj.requireVisible();
  if (obj.address.id_scope === "tenant") obj.requireOwner("delete it");
  return { deleted: [{ id: meta.id, owner: meta.owner, name: meta.name }], skipped: [], changed: [], dry_run: false };
}

// src/generated/handlers.ts
var RULES = {
  create: create2,
  show: show2,
  prompt,
  schedule: create3,
  schedules,
  unschedule,
  hook: create,
  hooks,
  unhook,
  deliveries,
  next_prompt: nextPrompt,
  renew,
  finish,
  release,
  stop,
  cancel,
  archive,
  unarchive,
  set_title: setTitle,
  tag,
  tags,
  invite,
  dequeue,
  queue,
  events,
  session_page: sessionPage,
  rows_before: rowsBefore,
  participants,
  get_prompt: getPrompt,
  append_many: appendMany,
  show_transcript: show,
  follow_start: followStart,
  rows_after: rowsAfter,
  stored_rows: storedRows,
  context_window: contextWindow,
  pop,
  clear,
  redact,
  prune,
  replace_tail: replaceTail,
  summarize,
  compact,
  plan_summary: planSummary,
  plan_compact: planCompact,
  plan_rows: planRows,
  commit_summary: commitSummary,
  fork_plan: forkPlan,
  fork_create: forkCreate,
  delete: remove,
  ask: ask2,
  decline,
  requests: listRequests,
  request: get,
  step_begin: begin,
  step_renew: renew2,
  step_commit: commit,
  step_abandon: abandon,
  steps: listing,
  step_report: ofStart,
  step_live: stillLive,
  answer: answer2,
  set_fact: setFact,
  get_fact: getFact,
  facts: listFacts,
  confirm_fact: confirm,
  forget_fact: forgetFact,
  hit,
  ttl,
  export: exportObject,
  import: importObject,
  search_object: searchObject,
  object_id: objectId,
  put_checkpoint: putCheckpoint,
  put_checkpoint_writes: putWrites,
  checkpoint_rows: checkpointRows,
  checkpoint_writes: writeRows,
  delete_thread: deleteThread
};

// src/parts.ts
var PARTS_SCHEMA = [
  "DROP TABLE IF EXISTS _durable_staged",
  // the former staging table (rows of append_many only)
  "CREATE TABLE IF NOT EXISTS _durable_parts (batch TEXT NOT NULL, path TEXT NOT NULL, n INTEGER NOT NULL, item TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (batch, path, n))",
  // an item over a Cloudflare row is stored in chunks (rules/state.ts): they go with it
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_part_gone AFTER DELETE ON _durable_parts BEGIN DELETE FROM _durable_chunks WHERE key = OLD.item; END"
];
var ABANDONED_MS = 864e5;
var int2 = (v2, lo, hi) => Number.isSafeInteger(v2) && v2 >= lo && v2 <= hi;
function allowed(path, patterns) {
  return patterns.some((p) => p === path || p.endsWith(".*") && path.startsWith(p.slice(0, -1)) && /^[a-z_]{1,40}$/.test(path.slice(p.length - 1)));
}
function checkPart(p, patterns) {
  if (!patterns) throw invalid("this operation is not sent in parts");
  const firsts = p && typeof p === "object" ? p.first : null;
  if (!p || typeof p !== "object" || typeof p.batch !== "string" || !/^[0-9a-f]{1,64}$/.test(p.batch) || !int2(p.count, 1, 1e6) || !int2(p.index, 0, p.count - 1) || !firsts || typeof firsts !== "object" || Array.isArray(firsts) || Object.entries(firsts).some(([k2, n]) => !allowed(k2, patterns) || !int2(n, 0, 1e8))) {
    throw invalid("part must be {batch: hex id, index, count, first: {list: items sent before}} with 0 <= index < count");
  }
  return p;
}
function listAt(args, path) {
  const [head, key] = path.split(".");
  const v2 = key === void 0 ? args[head] : args[head]?.[key];
  return v2;
}
function lists(args, patterns) {
  const out = [];
  for (const p of patterns) {
    if (p.endsWith(".*")) {
      const holder = args[p.slice(0, -2)];
      if (holder && typeof holder === "object" && !Array.isArray(holder)) {
        for (const [k2, v2] of Object.entries(holder)) if (Array.isArray(v2)) out.push([`${p.slice(0, -1)}${k2}`, v2]);
      }
    } else {
      const v2 = listAt(args, p);
      if (v2 !== void 0 && v2 !== null) {
        if (!Array.isArray(v2)) throw invalid(`${p} must be a list`);
        out.push([p, v2]);
      }
    }
  }
  return out;
}
function stage(db, part, args, patterns) {
  if (part.index === 0) dropAbandoned(db);
  let staged = 0;
  for (const [path, items] of lists(args, patterns)) {
    const first = part.first[path] ?? 0;
    items.forEach((item, i) => db.run(
      "INSERT OR REPLACE INTO _durable_parts (batch, path, n, item, at) VALUES (?, ?, ?, ?, ?)",
      part.batch,
      path,
      first + i,
      JSON.stringify(item),
      now()
    ));
    staged += items.length;
  }
  return { staged };
}
function dropAbandoned(db) {
  db.run("DELETE FROM _durable_parts WHERE batch IN (SELECT batch FROM _durable_parts WHERE n = 0 AND at < ?)", now() - ABANDONED_MS);
  return abandonedAt(db);
}
function abandonedAt(db) {
  const r = db.one("SELECT min(at) FROM _durable_parts WHERE n = 0");
  return r && r[0] !== null ? Number(r[0]) + ABANDONED_MS : null;
}
function unstage(db, part, args, lazy = false) {
  const out = { ...args };
  const counts = /* @__PURE__ */ new Map();
  for (const r of db.iter("SELECT path, count(*), max(n) FROM _durable_parts WHERE batch = ? GROUP BY path", part.batch)) {
    counts.set(r[0], r[1]);
    if (r[2] !== r[1] - 1) counts.set(r[0], -1);
  }
  const want = Object.entries(part.first).filter(([, n]) => n > 0);
  if (want.length !== counts.size || want.some(([path, n]) => counts.get(path) !== n)) {
    const have = [...counts.values()].reduce((a, n) => a + Math.max(n, 0), 0);
    const sent = want.reduce((a, [, n]) => a + n, 0);
    throw new DurableError(`a part of batch ${part.batch} is missing (${have} of ${sent} items staged); send the batch again`, "conflict");
  }
  for (const [path] of want) {
    const own = listAt(out, path);
    const mine = Array.isArray(own) ? own : [];
    const sql = "SELECT item FROM _durable_parts WHERE batch = ? AND path = ? ORDER BY n";
    const items = lazy ? { *[Symbol.iterator]() {
      for (const r of db.iter(sql, part.batch, path)) yield JSON.parse(r[0]);
      yield* mine;
    } } : [...db.all(sql, part.batch, path).map((r) => JSON.parse(r[0])), ...mine];
    const [head, key] = path.split(".");
    if (key === void 0) out[head] = items;
    else out[head] = { ...out[head], [key]: items };
  }
  if (!lazy) dropStaged(db, part);
  return out;
}
function dropStaged(db, part) {
  db.run("DELETE FROM _durable_parts WHERE batch = ?", part.batch);
}

// src/object.ts
var USAGE_CATCH_UP;
var OWN = {
  meta: (obj) => obj.meta()
};
var FLAGS = {
  fork_create: { lazy: true, staging: refuseExistingFork },
  append_many: { lazy: true },
  finish: { lazy: true },
  import: { precheck },
  put_checkpoint: { tomb: true },
  put_checkpoint_writes: { tomb: true },
  delete_thread: { buries: true }
};
var RUNS = { ...RULES, ...OWN };
var OPS = Object.fromEntries(Object.entries(RUNS).map(([name, run]) => [name, { ...OBJECT_OPS[name], run, ...FLAGS[name] }]));
var OBJECT_ID = "x-durable-object-id";
var REMEMBERED = 1e3;
var DurableObjectSession = class {
  // the namespaces counting the subrequests of the request or alarm running (subrequests.ts)
  constructor(ctx, base) {
    this.ctx = ctx;
    this.base = base;
    this.db = new Db(ctx.storage.sql);
    this.env = base;
    allowHosts(base.DURABLE_HOOK_ALLOW_HOSTS);
  }
  ctx;
  base;
  db;
  migrated = false;
  // What this instance knows without asking storage (reset on a wake, and by erase()):
  indexed = null;
  // the shards have the last commit (null: unknown, read _durable_index.dirty)
  due = void 0;
  // the object's next alarm time after the last commit (undefined: unknown)
  alarmAt = void 0;
  // the DO alarm as this instance last set it (undefined: unknown)
  sent = null;
  // the row and shards last taken by the index (a put of the same is skipped)
  rootDirty = null;
  // the root shard's copy lacks a commit (null: unknown, read _durable_index.root_dirty)
  rootAt = null;
  // when the alarm copies the row to the root shard (set once per dirtying)
  writes = 0;
  // commits this instance made (a root copy taken before one is not marked clean)
  backoff = null;
  // failed index updates in a row, next retry (null: unread)
  env;
  /** Each request and alarm has Cloudflare's per-request subrequest limit of its own, counted here as deployed
   *  (docs/reference/remote.md §13: `remote dev` counts the objects' own subrequests): one past it fails, so the index update of a
   *  commit that needs too many stays dirty, as it would on Cloudflare. */
  counting() {
    this.env = counted2(this.base, limitOf(this.base), false);
  }
  exists() {
    return this.db.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'object'") !== null;
  }
  /** Inside a transaction, just before it commits: the search index and usage totals brought up to the
   *  last row (the file store's schema.catch_up; no trigger fills them per inserted row). Returns RESULT. */
  caughtUp(result) {
    const [check2, , usage2, mark] = schema_default.catch_up;
    const fts = FTS_WHOLE.catchUp;
    const row4 = this.db.one(check2);
    if (row4 && row4[1] !== null && Number(row4[1]) > Number(row4[0])) {
      this.db.run(fts, row4[0]);
      this.db.run(USAGE_CATCH_UP ??= USAGE_WHOLE.catchUp(usage2), row4[0]);
      this.db.run(mark, row4[0], row4[1]);
    }
    return result;
  }
  /** The same ordered steps as the file store's schema.MIGRATIONS, recorded in _durable_schema. */
  migrate() {
    if (this.migrated && this.exists()) return;
    this.ctx.storage.transactionSync(() => {
      this.db.run("CREATE TABLE IF NOT EXISTS _durable_schema (one INTEGER PRIMARY KEY CHECK (one = 1), version INTEGER NOT NULL)");
      this.db.run("CREATE TABLE IF NOT EXISTS _durable_requests (id TEXT PRIMARY KEY, status INTEGER NOT NULL, body TEXT NOT NULL, at INTEGER NOT NULL)");
      this.db.run("CREATE TABLE IF NOT EXISTS _durable_index (one INTEGER PRIMARY KEY CHECK (one = 1), dirty INTEGER NOT NULL, shards TEXT NOT NULL)");
      this.db.run("INSERT OR IGNORE INTO _durable_index (one, dirty, shards) VALUES (1, 1, '[]')");
      if (!this.db.one("SELECT 1 FROM pragma_table_info('_durable_index') WHERE name = 'root_dirty'")) {
        this.db.run("ALTER TABLE _durable_index ADD COLUMN root_dirty INTEGER NOT NULL DEFAULT 1");
        this.db.run("ALTER TABLE _durable_index ADD COLUMN failures INTEGER NOT NULL DEFAULT 0");
        this.db.run("ALTER TABLE _durable_index ADD COLUMN retry_at INTEGER");
      }
      this.db.run("CREATE TABLE IF NOT EXISTS _durable_tomb (one INTEGER PRIMARY KEY CHECK (one = 1), last_checkpoint TEXT)");
      this.db.run(FOLLOWERS_TABLE);
      const row4 = this.db.one("SELECT version FROM _durable_schema");
      const version2 = row4 ? row4[0] : 0;
      if (version2 > schema_default.migrations.length) {
        throw new DurableError(`this object was written by a newer durable Worker (schema ${version2}, this one knows ${schema_default.migrations.length}); deploy the newer Worker`, "storage");
      }
      const chunked = !!this.db.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_durable_chunks'");
      for (const step of schema_default.migrations.slice(version2)) for (const s3 of step.statements) this.db.run(chunked ? USAGE_WHOLE.catchUp(s3) : s3);
      this.db.run("INSERT OR REPLACE INTO _durable_schema (one, version) VALUES (1, ?)", schema_default.migrations.length);
      for (const s3 of CHUNK_SCHEMA) this.db.run(s3);
      if (!String(this.db.one("SELECT sql FROM sqlite_master WHERE name = 'turns_fts_source'")?.[0] ?? "").includes(FTS_WHOLE.marker)) {
        for (const s3 of FTS_WHOLE.statements) this.db.run(s3);
      }
      for (const name of Object.keys(USAGE_WHOLE.timing)) {
        const sql = String(this.db.one("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", name)?.[0] ?? "");
        if (sql && !sql.includes(USAGE_WHOLE.marker)) {
          this.db.run(`DROP TRIGGER ${name}`);
          this.db.run(USAGE_WHOLE.trigger(name, sql));
        }
      }
      for (const s3 of PARTS_SCHEMA) this.db.run(s3);
    });
    this.migrated = true;
  }
  async fetch(request) {
    this.counting();
    const path = new URL(request.url).pathname;
    if (path === "/system") return this.system(await request.json());
    if (path === "/follow") return this.follow(request);
    if (path === "/rate") {
      const { jti, limit } = await request.json();
      const retryAfter = this.ctx.storage.transactionSync(() => take(this.ctx.storage.sql, jti, limit, now()));
      return new Response(JSON.stringify({ result: { retry_after: retryAfter } }), { headers: { "content-type": "application/json" } });
    }
    let call;
    try {
      call = await this.callOf(request);
    } catch (e) {
      return this.answer(0, e);
    }
    let fresh = false;
    let woke = null;
    try {
      if (call.op === "tombstone") {
        const grave = await this.tombstone(call);
        return new Response(JSON.stringify({ result: grave ?? null }), { headers: { "content-type": "application/json" } });
      }
      if (call.op === "dev_forget_followers" && this.env.DURABLE_DEV_FAULTS === "1" && this.exists()) {
        this.migrate();
        this.db.run("DELETE FROM _durable_followers");
        return new Response(JSON.stringify({ result: null }), { headers: { "content-type": "application/json" } });
      }
      const op = OPS[call.op];
      if (!op) throw new DurableError(`unknown operation '${call.op}'`, "invalid_input");
      const creating = op.creates && call.create !== false;
      const existed = this.exists();
      let extra = {};
      if (op.tomb && (!existed || this.db.one("SELECT 1 FROM object") === null)) {
        const grave = await this.tombstone(call);
        extra = { __tomb: grave ?? null, __tomb_fetched: true };
      }
      if (!existed) {
        if (!creating) return this.answer(0, this.refuse(call));
      }
      if (op.precheck && call.args?.part == null) {
        op.precheck(new Opened(this.db, call.address, call.actor, call.config, call.id), { ...call.args ?? {}, all_users: !!call.all_users }, existed);
        fresh = !existed;
      } else if (op.precheck) {
        fresh = !existed || this.db.one("SELECT 1 FROM object") === null;
      }
      this.migrate();
      const obj = new Opened(this.db, call.address, call.actor, call.config, call.id);
      if (call.request_id && op.write) {
        const seen = this.db.one("SELECT status, body FROM _durable_requests WHERE id = ?", call.request_id);
        if (seen) {
          const text4 = seen[1].startsWith('{"recall":') ? stringify({ result: rebuild(obj, JSON.parse(seen[1])) }) : seen[1];
          const seer = call.address.id_scope !== "tenant" || call.all_users || obj.role() !== null;
          return new Response(text4, { status: seen[0], headers: {
            "content-type": "application/json",
            "x-durable-replayed": "1",
            ...seer ? { [OBJECT_ID]: call.id } : {}
          } });
        }
      }
      const fired = this.fire(obj);
      if (fired === "expired") {
        await this.erase();
        if (!creating) return this.answer(0, this.refuse(call));
        this.migrate();
        if (op.tomb && !extra.__tomb_fetched) {
          const grave = await this.tombstone(call);
          extra = { __tomb: grave ?? null, __tomb_fetched: true };
        }
      }
      if (fired !== "absent" && fired !== "expired" && call.address.id_scope === "tenant" && !call.all_users && obj.role() === null) {
        throw creating ? new DurableError(obj.taken, "conflict") : new DurableError(obj.missing, "not_found");
      }
      woke = call.id;
      let ran = null;
      const body = this.ctx.storage.transactionSync(() => {
        if (call.dev_fault === "internal" && this.env.DURABLE_DEV_FAULTS === "1") {
          throw new Error(`dev fault: SQLITE_ERROR near the object's storage of ${call.id}`);
        }
        let args = { ...call.args ?? {}, all_users: !!call.all_users, ...extra };
        const part = args.part != null ? checkPart(args.part, op.parts) : null;
        let result;
        if (part && part.index < part.count - 1) {
          op.staging?.(obj);
          result = ran = stage(this.db, part, args, op.parts);
        } else {
          if (part) args = unstage(this.db, part, args, op.lazy);
          result = ran = op.run(obj, args);
          if (part && op.lazy) dropStaged(this.db, part);
          if (op.write) this.dirty();
        }
        const text4 = stringify({ result: result === void 0 ? null : result });
        if (call.request_id && op.write) {
          const recall = reduce(call.op, call.args ?? {}, result);
          this.db.run(
            "INSERT OR REPLACE INTO _durable_requests (id, status, body, at) VALUES (?, 200, ?, ?)",
            call.request_id,
            recall ? JSON.stringify(recall) : text4,
            now()
          );
          this.db.run(
            "DELETE FROM _durable_requests WHERE at < ? AND id NOT IN (SELECT id FROM _durable_requests ORDER BY at DESC LIMIT ?)",
            now() - 864e5,
            REMEMBERED
          );
        }
        return this.caughtUp(text4);
      });
      if (op.buries) {
        await ask(
          this.env,
          homeShard(call.address.id_scope, call.address.owner),
          "bury",
          { id: call.id, owner: ran.owner, last_checkpoint: ran.last_checkpoint, members: ran.members, at: now() }
        );
      }
      if (op.erases) await this.erase();
      await this.syncIndex();
      await this.schedule();
      if (op.write || fired === "fired") await this.pushFollowers();
      return new Response(body, { headers: { "content-type": "application/json", [OBJECT_ID]: call.id } });
    } catch (e) {
      if (fresh && this.exists() && this.db.one("SELECT 1 FROM object") === null) await this.erase();
      if (call.op === "import" && e instanceof DurableError && e.document === void 0) e.document = { id: call.id };
      const answer3 = this.answer(0, e);
      if (woke !== null) answer3.headers.set(OBJECT_ID, woke);
      return answer3;
    }
  }
  /** A call as the Worker sent it: its JSON, or (a big body, raw.ts) the call without args in a header and the
   *  client's body as it came, decoded, checked and parsed here once. */
  async callOf(request) {
    const head = request.headers.get("x-durable-call");
    if (head === null) return await request.json();
    const call = JSON.parse(decodeURIComponent(head));
    call.args = rawArgs(new Uint8Array(await request.arrayBuffer()), call.op);
    return call;
  }
  /** The tombstone a deleted LangGraph thread left at this object's id, as its caller may see it (docs/reference/integrations.md §12):
   *  the home shard answers it only to a participant the thread had when deleted (or an admin's
   *  installation-wide call); to anyone else null, as for a thread never made. */
  tombstone(call) {
    return ask(this.env, homeShard(call.address.id_scope, call.address.owner), "tombstone", { id: call.id, user: call.actor, all: !!call.all_users });
  }
  /** Due alarms fire in their own transaction (with the catch-up of a wake) -- skipped when this instance
   *  knows nothing is due: the object's alarm times change only through its own commits, seen here. */
  fire(obj) {
    if (this.due !== void 0 && (this.due === null || this.due > now())) return obj.meta() === null ? "absent" : "ok";
    const fired = this.ctx.storage.transactionSync(() => this.caughtUp(this.dirtyIf(fireDue2(obj))));
    if (fired === "ok") this.due = this.exists() ? nextAlarmAt(this.db, false) : null;
    return fired;
  }
  refuse(call) {
    const obj = new Opened(this.db, call.address, call.actor, call.config, call.id);
    if (call.op === "facts") return new DurableError("", "__empty_list");
    return new DurableError(obj.missing, "not_found");
  }
  answer(_unused, e) {
    if (e instanceof DurableError && e.code === "__empty_list") {
      return new Response(JSON.stringify({ result: [] }), { headers: { "content-type": "application/json" } });
    }
    const err = internalError(e, "an object's Durable Object");
    const body = { error: { code: err.code, message: err.message } };
    if (err.document !== void 0) body.error.document = err.document;
    return new Response(JSON.stringify(body), { status: httpStatus(err.code), headers: { "content-type": "application/json" } });
  }
  /** TTL expiry, `delete`, purge and forget: every byte of the object's storage goes (deleteAll), alarm
   *  included; then its rows leave the index shards it was listed in (best effort: a row left behind
   *  points at an absent object, which reindex and the commands across objects drop). */
  async erase() {
    endAll(this.ctx, "deleted");
    const id = this.exists() ? this.db.one("SELECT id FROM object") : null;
    const sent = this.sentTo();
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.migrated = false;
    this.forgetState();
    if (id) await this.unindex(String(id[0]), sent);
  }
  async unindex(id, shards) {
    try {
      await Promise.all([...shards.map((s3) => ask(this.env, s3, "drop", { id })), ask(this.env, `root:${id[0]}`, "unregister", { id })]);
    } catch {
    }
  }
  sentTo() {
    try {
      const r = this.db.one("SELECT shards FROM _durable_index");
      return r ? JSON.parse(r[0]) : [];
    } catch {
      return [];
    }
  }
  forgetState() {
    [this.indexed, this.due, this.alarmAt, this.sent] = [null, void 0, null, null];
    [this.rootDirty, this.rootAt, this.backoff] = [null, null, null];
  }
  /** Inside a write transaction: the index has not seen this commit yet. Stored only on the transition
   *  (a page write when it was clean); this instance's memory says when the shards have taken it. */
  dirty() {
    this.db.run("UPDATE _durable_index SET dirty = 1, root_dirty = 1 WHERE dirty = 0 OR root_dirty = 0");
    this.indexed = false;
    this.due = void 0;
    this.writes++;
    if (this.rootDirty !== true || this.rootAt === null) this.rootAt = now() + ROOT_COPY_MS;
    this.rootDirty = true;
  }
  /** The root shard's copy may lack a commit: known to this instance, else as stored. */
  isRootDirty() {
    if (!this.exists()) return false;
    if (this.rootDirty === null) this.rootDirty = !!this.db.one("SELECT root_dirty FROM _durable_index")?.[0];
    if (this.rootDirty && this.rootAt === null) this.rootAt = now();
    return this.rootDirty;
  }
  /** Failed index updates in a row and when the alarm tries again (as stored, read once per instance). */
  retry() {
    if (this.backoff === null) {
      const r = this.exists() ? this.db.one("SELECT failures, retry_at FROM _durable_index") : null;
      this.backoff = { failures: r ? Number(r[0]) : 0, at: r && r[1] !== null ? Number(r[1]) : null };
    }
    return this.backoff;
  }
  /** An index update failed: the next try from the alarm after a random delay up to 2 s, its bound doubling
   *  at each failure in a row up to 5 minutes (exponential backoff with full jitter; docs/reference/remote.md §13). */
  failed() {
    const failures = this.retry().failures + 1;
    const at = now() + Math.floor(Math.random() * Math.min(INDEX_RETRY_MS * 2 ** Math.min(failures - 1, 20), INDEX_RETRY_MAX_MS));
    this.backoff = { failures, at };
    if (this.exists()) this.ctx.storage.transactionSync(() => this.db.run("UPDATE _durable_index SET failures = ?, retry_at = ?", failures, at));
  }
  succeeded() {
    if (this.retry().failures === 0) return;
    this.backoff = { failures: 0, at: null };
    if (this.exists()) this.ctx.storage.transactionSync(() => this.db.run("UPDATE _durable_index SET failures = 0, retry_at = NULL"));
  }
  /** The alarm's copy of the row to its root shard (what installation-wide commands page over): never on a
   *  write's path. A commit made while it was sent leaves the copy dirty for the next alarm. FORCE: reindex. */
  async syncRoot(force = false) {
    if (!this.exists() || !(force || this.isRootDirty())) return true;
    const row4 = this.indexRow();
    const writes = this.writes;
    if (row4 !== null) {
      try {
        await ask(this.env, `root:${row4.id[0]}`, "put", { row: row4 });
      } catch {
        this.failed();
        return false;
      }
    }
    if (this.writes === writes && this.exists()) {
      this.ctx.storage.transactionSync(() => this.db.run("UPDATE _durable_index SET root_dirty = 0"));
      [this.rootDirty, this.rootAt] = [false, null];
    }
    if (!this.isDirty()) this.succeeded();
    return true;
  }
  dirtyIf(fired) {
    if (fired === "fired") this.dirty();
    return fired;
  }
  /** The shards may lack a commit: known to this instance, else (a wake) as stored -- an object stays
   *  marked dirty in storage after a hot-path update, so a new instance re-sends its row once (idempotent). */
  isDirty() {
    if (!this.exists()) return false;
    if (this.indexed !== null) return !this.indexed;
    const r = this.db.one("SELECT dirty FROM _durable_index");
    this.indexed = !!r && !r[0];
    return !this.indexed;
  }
  /** The object's index row (core/state.py index_row), from its own storage. */
  indexRow() {
    const m = this.db.one("SELECT id, scope, owner, name, title, status, created_at, updated_at, last_active_at, live_turns, live_tokens, expires_at, external_id FROM object");
    if (!m) return null;
    const [id, scope, owner2, name, title, status, created_at, updated_at, last_active_at, turns, tokens, expires_at, external_id] = m;
    const row4 = {
      id,
      scope,
      owner: owner2,
      name,
      title,
      status,
      created_at,
      updated_at,
      last_active_at,
      turns,
      tokens,
      expires_at,
      next_alarm_at: nextAlarmAt(this.db),
      external_id: external_id ?? null,
      pending_at: pendingAt(this.db),
      pending_requests: Number(this.db.one("SELECT count(*) FROM requests WHERE status = 'pending'")[0]),
      // the list's badge (docs/reference/ui.md §16.3)
      members: this.db.all("SELECT user, role FROM participants ORDER BY user").map((r) => [r[0], r[1]]),
      tags: this.db.all("SELECT key, value FROM tags ORDER BY key").map((r) => [r[0], r[1]])
      // docs/reference/storage.md §3
    };
    if (scope !== "reserved") {
      row4.usage = this.db.all("SELECT day, model, CAST(rows AS TEXT), CAST(turns AS TEXT), CAST(tokens AS TEXT), CAST(input_tokens AS TEXT), CAST(output_tokens AS TEXT), cost_usd, CAST(cache_read_tokens AS TEXT), CAST(cache_write_tokens AS TEXT), CAST(uncosted_rows AS TEXT), CAST(uncosted_base AS TEXT), CAST(uncosted_cache_read AS TEXT), CAST(uncosted_cache_write AS TEXT), CAST(uncosted_output AS TEXT) FROM usage_totals ORDER BY key");
    }
    return row4;
  }
  /** After a commit (or on a wake after a failed update): send the row to its shards, drop it from the
   *  shards it left (a participant removed), and mark the object clean. Other requests wait meanwhile,
   *  as the local index update happens under the object's lock. A failure leaves the object dirty and
   *  an alarm retries it (and so does the next request). FORCE: send even if clean (reindex). */
  async syncIndex(force = false, persist = false) {
    if (!this.exists() || !(force || this.isDirty())) return null;
    return this.ctx.blockConcurrencyWhile(async () => {
      const row4 = this.indexRow();
      if (row4 === null) {
        this.indexed = true;
        return null;
      }
      const home = homeShard(row4.scope, row4.owner);
      const shards = shardsOf(row4);
      const before = this.sentTo();
      const gone = before.filter((s3) => !shards.includes(s3));
      const joined = shards.filter((s3) => s3 !== home && (force || !before.includes(s3)));
      const text4 = JSON.stringify([row4, shards]);
      if (!force && text4 === this.sent && !gone.length) {
        this.indexed = true;
        return row4;
      }
      this.indexed = false;
      try {
        await Promise.all([
          ask(this.env, home, "put", { row: row4, home: true }),
          ...joined.map((s3) => ask(this.env, s3, "join", { id: row4.id, home })),
          ...gone.map((s3) => ask(this.env, s3, "drop", { id: row4.id }))
        ]);
      } catch {
        this.failed();
        return row4;
      }
      this.indexed = true;
      this.sent = text4;
      if (persist || shards.join() !== before.join()) {
        this.ctx.storage.transactionSync(() => this.db.run("UPDATE _durable_index SET dirty = ?, shards = ?", persist ? 0 : 1, JSON.stringify(shards)));
      }
      return row4;
    });
  }
  /** The DO alarm at the object's next due time (or a retry of a failed index update); storage is told
   *  only when that time changed since this instance last set it. */
  async schedule() {
    const exists = this.exists();
    let due = exists ? nextAlarmAt(this.db) : null;
    this.due = exists ? nextAlarmAt(this.db, false) : null;
    const indexable = exists && this.db.one("SELECT 1 FROM object") !== null;
    if (indexable && (this.isDirty() || this.isRootDirty())) {
      const next = this.retry().at ?? (this.isDirty() ? now() : this.rootAt ?? now());
      due = Math.min(due ?? Infinity, next);
    }
    const staged = exists ? abandonedAt(this.db) : null;
    if (staged !== null) due = Math.min(due ?? Infinity, staged);
    if (due === this.alarmAt) return;
    if (due === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Math.max(due, now() + 1));
    this.alarmAt = due;
  }
  async alarm() {
    this.counting();
    this.alarmAt = null;
    if (!this.exists()) return;
    this.migrate();
    const left = this.ctx.storage.transactionSync(() => dropAbandoned(this.db));
    if (this.db.one("SELECT 1 FROM object") === null) {
      if (left === null) await this.erase();
      else await this.schedule();
      return;
    }
    const obj = new Opened(this.db, { id_scope: "user", owner: "", name: "", scope: "user" }, "", DEFAULT_CONFIG, "");
    const fired = this.ctx.storage.transactionSync(() => this.caughtUp(this.dirtyIf(fireDue2(obj))));
    if (fired === "expired") await this.erase();
    else {
      if (fired === "fired") await this.pushFollowers();
      await this.deliver();
      if (!this.exists()) return;
      if (this.retry().at === null || this.retry().at <= now()) {
        await this.syncIndex(false, true);
        if (!this.isDirty()) await this.syncRoot();
      }
      await this.schedule();
      await this.pushFollowers();
    }
  }
  /** docs/reference/remote.md §13: the due deliveries of the outbox, at most PER_ALARM of them in one invocation, each
   *  claimed in a transaction, sent with fetch outside it (other requests run meanwhile; the claim keeps them from
   *  sending it too) and recorded in another. A receiver's error is recorded, never thrown; what is left is due at
   *  once, so schedule() sets the alarm again for it. */
  async deliver() {
    for (let n = 0; n < PER_ALARM; n++) {
      if (!this.exists() || this.db.one("SELECT 1 FROM object") === null) return;
      const claimed = this.ctx.storage.transactionSync(() => claim(this.db));
      if (claimed === null) return;
      const [status, error] = await post(claimed);
      if (!this.exists()) return;
      this.ctx.storage.transactionSync(() => {
        record2(this.db, claimed, status, error);
        this.dirty();
      });
    }
  }
  /** The newer rows to the live followers (follow.ts), after a commit; a follower whose token expired or
   *  was revoked since is closed instead (the revocation list as the Worker reads it, auth.ts). */
  async pushFollowers() {
    if (this.exists() && this.ctx.getWebSockets().length) {
      let list = null;
      try {
        list = await revocationList(Date.now(), () => ask(this.env, "auth:0", "revocations", {}));
      } catch {
      }
      if (!this.exists()) return;
      this.migrate();
      push(this.ctx, this.db, (t) => list === null ? null : revokedWhy(t, list) !== null);
    }
  }
  /** GET /v1/follow upgraded (the Worker checked the token and the caller): a follower of this object
   *  from the seq it names, accepted with the hibernation API (follow.ts). */
  async follow(request) {
    let call;
    try {
      call = JSON.parse(decodeURIComponent(request.headers.get("x-durable-call") ?? ""));
    } catch {
      return this.answer(0, new DurableError("a follow request carries its call", "invalid_input"));
    }
    try {
      if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") throw new DurableError("GET /v1/follow takes a WebSocket upgrade", "invalid_input");
      const given = call.args?.since;
      if (!Number.isInteger(given) || given < 0 || given > 2 ** 63) throw new DurableError("since must be a non-negative integer", "invalid_input");
      const since = Math.min(given, Number.MAX_SAFE_INTEGER);
      if (!this.exists()) return this.answer(0, this.refuse(call));
      this.migrate();
      const obj = new Opened(this.db, call.address, call.actor, call.config, call.id);
      const fired = this.fire(obj);
      if (fired === "expired") {
        await this.erase();
        return this.answer(0, this.refuse(call));
      }
      if (fired === "absent") return this.answer(0, this.refuse(call));
      if (call.address.id_scope === "tenant" && !call.all_users && obj.role() === null) throw new DurableError(obj.missing, "not_found");
      if (fired === "fired") {
        await this.syncIndex();
        await this.schedule();
      }
      return accept(this.ctx, this.db, call, since);
    } catch (e) {
      return this.answer(0, e);
    }
  }
  async webSocketMessage(_ws, _message) {
  }
  async webSocketClose(ws, code, reason) {
    closed(this.db, ws, this.exists());
    try {
      ws.close(code === 1005 || code === 1006 ? 1e3 : code, reason);
    } catch {
    }
  }
  async webSocketError(ws) {
    closed(this.db, ws, this.exists());
  }
  /** Operations the Worker runs for the commands across objects (never reachable from /v1/call): each
   *  re-checks the object itself, since the index row that led here can be stale. */
  async system(call) {
    try {
      let result = null;
      if (this.exists()) {
        this.migrate();
        result = await this.systemOp(call);
        if (this.exists()) {
          await this.syncIndex(call.op === "reindex", true);
          if (!await this.syncRoot(call.op === "reindex") && call.op === "reindex") {
            throw new DurableError("the root index shard did not take the object's row; run reindex again", "busy");
          }
          await this.schedule();
          await this.pushFollowers();
          if (call.op === "reindex" && this.isDirty()) throw new DurableError("the index did not take the object's row; run reindex again", "busy");
        }
      } else {
        result = { absent: true };
      }
      return new Response(JSON.stringify({ result }), { headers: { "content-type": "application/json" } });
    } catch (e) {
      return this.answer(0, e);
    }
  }
  async systemOp(call) {
    const config = DEFAULT_CONFIG;
    const obj = new Opened(this.db, call.address, "", config, call.id);
    const meta = obj.meta();
    if (meta === null) return { absent: true };
    const entry2 = (extra = {}) => ({ id: meta.id, owner: meta.owner, name: meta.name, ...extra });
    const a = call.args ?? {};
    switch (call.op) {
      case "reindex":
        return this.ctx.storage.transactionSync(() => this.caughtUp(this.dirtyIf(fireDue2(obj)))) === "expired" ? (await this.erase(), null) : this.indexRow();
      case "purge_if": {
        if (meta.scope === "reserved" || meta.last_active_at >= a.cutoff || a.statuses?.length && !a.statuses.includes(meta.status)) return null;
        await this.erase();
        return { deleted: entry2() };
      }
      case "sweep": {
        const scheduleDue = a.kind === "alarm" && this.db.one("SELECT 1 FROM schedules WHERE next_at <= ? LIMIT 1", now()) !== null;
        const fired = this.ctx.storage.transactionSync(() => this.caughtUp(this.dirtyIf(fireDue2(obj))));
        if (fired === "expired") {
          await this.erase();
          return a.kind === "alarm" ? { deleted: entry2({ reason: "ttl expired" }) } : null;
        }
        if (a.kind === "alarm") return fired === "fired" ? { changed: entry2({ what: scheduleDue ? "schedule fired" : "alarm fired" }) } : null;
        const archived = this.ctx.storage.transactionSync(() => {
          const m = obj.meta();
          if (m.status !== "created" || m.updated_at >= a.draft_before || this.db.one("SELECT 1 FROM prompts LIMIT 1")) return false;
          this.db.run("UPDATE object SET status = 'archived'");
          event(obj, "session.status", { from: "created", to: "archived", reason: "draft expired" }, null);
          touch(obj, false);
          this.dirty();
          return true;
        });
        return archived ? { changed: entry2({ what: "draft archived" }) } : null;
      }
      case "erase":
        if (meta.owner !== a.user || meta.scope === "tenant") return null;
        await this.erase();
        return { deleted: entry2() };
      case "leave":
        return this.leave(obj, entry2, a.user);
      default:
        throw new DurableError(`unknown system operation '${call.op}'`, "invalid_input");
    }
  }
  async leave(obj, entry2, user) {
    if (obj.address.id_scope !== "tenant" || !this.db.one("SELECT 1 FROM participants WHERE user = ?", user)) return null;
    let gone = [];
    const left = this.ctx.storage.transactionSync(() => {
      this.db.run("DELETE FROM participants WHERE user = ?", user);
      for (const [table, column] of [["turns", "author"], ["prompts", "author"], ["events", "actor"], ["requests", "answered_by"]]) {
        this.db.run(`UPDATE ${table} SET ${column} = NULL WHERE ${column} = ?`, user);
      }
      gone = ["schedules", "hooks"].filter((table) => this.db.one(`SELECT 1 FROM ${table} WHERE author = ? LIMIT 1`, user));
      this.db.run("DELETE FROM schedules WHERE author = ?", user);
      this.db.run("DELETE FROM deliveries WHERE hook_id IN (SELECT id FROM hooks WHERE author = ?)", user);
      this.db.run("DELETE FROM hooks WHERE author = ?", user);
      this.db.run("UPDATE events SET data = '{}' WHERE type IN ('participant.added', 'participant.removed') AND json_extract(data, '$.user') = ?", user);
      const rest = this.db.all("SELECT user, role FROM participants ORDER BY joined_at, user");
      event(obj, "participant.removed", {}, null);
      if (rest.length && !rest.some((r) => r[1] === "owner")) this.db.run("UPDATE participants SET role = 'owner' WHERE user = ?", rest[0][0]);
      this.dirty();
      return rest.length;
    });
    if (!left) {
      await this.erase();
      return { deleted: entry2() };
    }
    return { changed: entry2({ what: ["participant removed", ...gone].join(", ") }) };
  }
};
var INDEX_RETRY_MS = 2e3;
var INDEX_RETRY_MAX_MS = 3e5;
var ROOT_COPY_MS = 0;

// src/index.ts
function callConfig(cap, c2) {
  const positive = (v2, fallback) => Number.isInteger(v2) && v2 > 0 ? Math.min(v2, Number.MAX_SAFE_INTEGER) : fallback;
  return {
    max_unfinished: positive(c2.max_unfinished, DEFAULT_CONFIG.max_unfinished),
    max_turn_bytes: Math.min(positive(c2.max_turn_bytes, cap), cap),
    token_budget: positive(c2.token_budget, DEFAULT_CONFIG.token_budget),
    tags_max: Math.min(positive(c2.tags_max, DEFAULT_CONFIG.tags_max), DEFAULT_CONFIG.tags_max)
  };
}
var keyCache = null;
async function objectId2(secret, scope, owner2, name) {
  if (!keyCache || keyCache.secret !== secret) {
    const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    keyCache = { secret, key };
  }
  const fields2 = [scope, owner2, name].map((f2) => `${new TextEncoder().encode(f2).length}:${f2}`).join("");
  const mac = await crypto.subtle.sign("HMAC", keyCache.key, new TextEncoder().encode(fields2));
  return [...new Uint8Array(mac)].map((b2) => b2.toString(16).padStart(2, "0")).join("");
}
function fail(e) {
  const code = e.code === "unauthorized" ? "permission_denied" : e.code;
  const error = { code, message: e.message };
  if (e.document !== void 0) error.document = e.document;
  if (e.retryable) error.retryable = true;
  const retryAfter = e.retryAfter;
  if (retryAfter !== void 0) error.retry_after = retryAfter;
  return new Response(JSON.stringify({ error }), {
    status: e.code === "unauthorized" ? 401 : e.status ?? httpStatus(e.code),
    headers: { "content-type": "application/json", ...retryAfter !== void 0 ? { "retry-after": String(retryAfter) } : {} }
  });
}
async function who(env, header) {
  const token = header?.startsWith("Bearer ") ? header.slice(7) : null;
  if (!token) throw new DurableError("missing token: set DURABLE_TOKEN or config remote.token ('durable remote token' issues one)", "unauthorized");
  const t = Date.now();
  const claims = await verify(token, env.DURABLE_TOKEN_KEY, t);
  await checkRevoked(claims, t, () => askIndex(env, "revocations", {}));
  return { user: claims.sub, admin: claims.adm, claims };
}
var AUTH_SHARD = "auth:0";
async function askIndex(env, op, args) {
  return ask(env, AUTH_SHARD, op, args);
}
function json(doc) {
  return new Response(JSON.stringify(doc), { headers: { "content-type": "application/json" } });
}
function ownerOf(body, actor) {
  return body.owner == null ? actor : validName(body.owner, "user");
}
function refuseOthers(body, address, actor, id) {
  const what = address.id_scope === "reserved" ? say("user_memory", { user: address.owner }) : say("owned_label", { what: say("session", { name: address.name }), user: address.owner });
  if (body.op === "import") {
    throw new DurableError(say("import_others", { what }), "permission_denied", { id });
  }
  throw new DurableError(`${what} belongs to another user; only they can reach it (or an admin's installation-wide command)`, "permission_denied");
}
async function bodyBytes(request, max) {
  const tooLarge2 = (n) => Object.assign(new DurableError(
    `the request body${n === null ? "" : ` of ${n} bytes`} is over this Worker's DURABLE_MAX_BODY_BYTES (${max}); send a batch in parts (the durable client does) or raise the variable`,
    "invalid_input",
    { max_body_bytes: max }
  ), { status: 413 });
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > max) throw tooLarge2(Number(declared));
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  let all = new Uint8Array(declared !== null && /^[0-9]+$/.test(declared) ? Number(declared) : 65536);
  let total = 0;
  for (; ; ) {
    const { done, value } = await reader.read();
    if (done) break;
    if (total + value.byteLength > max) {
      await reader.cancel().catch(() => void 0);
      throw tooLarge2(null);
    }
    if (total + value.byteLength > all.length) {
      const grown = new Uint8Array(Math.min(max, Math.max(all.length * 2, total + value.byteLength)));
      grown.set(all.subarray(0, total));
      all = grown;
    }
    all.set(value, total);
    total += value.byteLength;
  }
  return all.subarray(0, total);
}
function decoded(bytes2) {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes2);
  } catch {
    throw new DurableError("the request body is not valid UTF-8", "invalid_input");
  }
}
var WORKER_OPS = /* @__PURE__ */ new Set(["whoami", "limits", "object_id"]);
function followCall(request) {
  if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") throw new DurableError("GET /v1/follow takes a WebSocket upgrade", "invalid_input");
  let body;
  try {
    body = JSON.parse(request.headers.get("x-durable-call") ?? "");
  } catch {
    throw new DurableError("the x-durable-call header of a follow request is not JSON", "invalid_input");
  }
  if (body === null || typeof body !== "object" || body.op !== "follow" || !["user", "tenant"].includes(body.scope)) {
    throw new DurableError("a follow request names one session (op follow, scope user or tenant)", "invalid_input");
  }
  return body;
}
async function followObject(env, id, call) {
  const stub = env.OBJECTS.get(env.OBJECTS.idFromName(id));
  try {
    return await stub.fetch("https://object/follow", { headers: { upgrade: "websocket", "x-durable-call": encodeURIComponent(JSON.stringify(call)) } });
  } catch (e) {
    throw new DurableError(`the object did not answer: ${e.message}`, "busy");
  }
}
async function rateCheck(env, claims, limit) {
  const id = await objectId2(env.DURABLE_SECRET, "reserved", claims.sub, "");
  let answer3;
  try {
    const response = await env.OBJECTS.get(env.OBJECTS.idFromName(id)).fetch("https://object/rate", {
      method: "POST",
      body: JSON.stringify({ jti: claims.jti, limit })
    });
    answer3 = await response.json();
  } catch (e) {
    throw Object.assign(new DurableError(`the rate limit's object did not answer: ${e.message}`, "busy"), { retryable: true });
  }
  const retryAfter = answer3.result?.retry_after ?? null;
  if (retryAfter !== null) throw limited(limit, retryAfter);
}
async function revoke(env, admin, args) {
  if (!admin) throw new DurableError("'remote revoke' needs an admin token", "permission_denied");
  const jti = args?.jti ?? null, user = args?.user ?? null, before = args?.issued_before ?? null;
  if (jti === null === (user === null)) throw new DurableError("revoke takes a token id (JTI) or --user USER, not both", "invalid_input");
  if (jti !== null && (typeof jti !== "string" || !jti || jti.length > 200)) throw new DurableError("invalid JTI: use the jti of a token", "invalid_input");
  if (user !== null) validName(user, "user");
  if (user !== null && (before === null || !Number.isSafeInteger(before) || before < 0)) throw new DurableError("issued_before must be whole seconds since the epoch", "invalid_input");
  await askIndex(env, "revoke", { jti, user, issued_before: user === null ? null : before });
  forgetRevocations();
  return { revoked: jti, user, issued_before: user === null ? null : before };
}
var index_default = {
  async fetch(request, plain) {
    const url = new URL(request.url);
    try {
      const settings = checkConfig(plain);
      const env = counted2(plain, settings.subrequests);
      if (url.pathname === "/v1/health") return new Response(JSON.stringify({ ok: true }), { headers: { "content-type": "application/json" } });
      const following = url.pathname === "/v1/follow" && request.method === "GET";
      if (!following && (url.pathname !== "/v1/call" || request.method !== "POST")) {
        throw new DurableError(`no such endpoint ${request.method} ${url.pathname}; is the remote URL a durable Worker?`, "invalid_input");
      }
      const token = await who(env, request.headers.get("authorization"));
      if (settings.rateLimit > 0) await rateCheck(env, token.claims, settings.rateLimit);
      let body;
      const bytes2 = following ? null : await bodyBytes(request, settings.maxBodyBytes);
      const head = bytes2 !== null && bytes2.byteLength >= RAW_AT ? envelope(bytes2) : null;
      const raw2 = head !== null && ["user", "tenant", "reserved"].includes(head.scope) && !WORKER_OPS.has(head.op) ? bytes2 : null;
      if (raw2 !== null) body = head;
      else {
        const text4 = bytes2 === null ? request.headers.get("x-durable-call") ?? "" : decoded(bytes2);
        try {
          body = following ? followCall(request) : JSON.parse(text4);
        } catch (e) {
          if (e instanceof DurableError) throw e;
          throw new DurableError("the request body is not JSON", "invalid_input");
        }
        const why = scan(text4, MAX_DEPTH + ENVELOPE_DEPTH, void 0, true);
        if (why !== null) throw new DurableError(`invalid request body: ${why}`, "invalid_input");
      }
      if (body === null || typeof body !== "object" || Array.isArray(body)) throw new DurableError("the request body is not a JSON object", "invalid_input");
      const actor = body.actor == null ? token.user : validName(body.actor, "user");
      if (!token.admin && actor !== token.user) {
        throw new DurableError(`this token acts as user "${token.user}", not "${actor}"; use an admin token to act as another user`, "permission_denied");
      }
      if (body.op === "whoami") return json({ result: { user: actor, admin: token.admin } });
      if (body.op === "limits") return json({ result: { max_body_bytes: settings.maxBodyBytes, max_turn_bytes: settings.maxTurnBytes } });
      if (body.op === "sql_limits" && body.scope === "dev" && token.admin && settings.faults) return json({ result: await ask(env, "dev:0", "sql_limits", {}) });
      if (!following && raw2 === null && !(body.op === "dev_forget_followers" && settings.faults)) {
        checkArgs(["index", "objects", "auth"].includes(body.scope) ? body.scope : "object", body.op, body.args);
      }
      if (body.op === "revoke" && body.scope === "auth") return json({ result: await revoke(env, token.admin, body.args) });
      const allUsers = body.all_users === true;
      if (allUsers && !token.admin) {
        throw new DurableError(`an installation-wide ${body.op === "import" ? "import (--all-users)" : body.op} needs an admin token; this token acts as user "${token.user}" only`, "permission_denied");
      }
      if (body.scope === "objects") return json({ result: await searchAll(env, body.op, body.args, actor, token.admin, listObjects) });
      if (body.scope === "index") {
        const tenant = body.tenant == null ? null : validName(body.tenant, "tenant");
        const reservedId = (u) => objectId2(env.DURABLE_SECRET, "reserved", u, "");
        const result = await across(env, { actor, admin: token.admin, token_user: token.user, tenant, reservedId, request_id: body.request_id ?? null }, body.op, body.args ?? {});
        return new Response(JSON.stringify({ result: result ?? null }), { headers: { "content-type": "application/json" } });
      }
      let idScope, owner2, name, scope;
      if (body.scope === "tenant") {
        [idScope, owner2, name, scope] = ["tenant", validName(body.tenant, "tenant"), validName(body.name), "tenant"];
      } else if (body.scope === "reserved") {
        [idScope, owner2, name, scope] = ["reserved", ownerOf(body, actor), "", "reserved"];
      } else if (body.scope === "user") {
        [idScope, owner2, name, scope] = ["user", ownerOf(body, actor), validName(body.name), body.label === "session" ? "session" : "user"];
      } else throw new DurableError(`unknown scope '${body.scope}'`, "invalid_input");
      const id = await objectId2(env.DURABLE_SECRET, idScope, owner2, name);
      if (idScope !== "tenant" && owner2 !== actor && !allUsers) refuseOthers(body, { id_scope: idScope, owner: owner2, name }, actor, id);
      if (body.op === "object_id" && (idScope !== "tenant" || allUsers)) return json({ result: { id } });
      const c2 = body.config ?? {};
      const call = {
        op: body.op,
        args: body.args ?? {},
        address: { id_scope: idScope, owner: owner2, name, scope },
        actor,
        id,
        create: !!body.create,
        request_id: body.request_id ?? null,
        all_users: allUsers,
        config: callConfig(settings.maxTurnBytes, c2)
      };
      const { sub, iat, exp, jti } = token.claims;
      const devFault = settings.faults ? body.dev_fault ?? null : null;
      if (devFault === "internal_worker") throw new Error(`dev fault: a detail of the Worker's own for the log only (${id})`);
      return following ? await followObject(env, id, { ...call, token: { sub, iat, exp, jti } }) : await callObject(env, id, devFault === "internal" ? { ...call, dev_fault: devFault } : call, devFault, raw2);
    } catch (e) {
      return fail(internalError(e, "the Worker"));
    }
  }
};
export {
  DurableIndex,
  DurableObjectSession,
  index_default as default,
  who
};
