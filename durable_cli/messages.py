"""The message catalog of durable_cli/contract.json "messages": what both runtimes say for the input checks
they share, filled by one function. Literal here (no file read at start-up); tests/test_contract.py holds it
equal to the contract, which the Worker imports (worker/src/rules/state.ts `say`)."""

CATALOG = {
    "invalid_name": "invalid {what} {value}: use 1-200 printable characters with no leading or trailing white space",
    "invalid_title": "invalid title: use 1-200 printable characters",
    "invalid_request_id": "invalid --request-id: use 1-128 printable characters",
    "invalid_participant_role": "invalid role {role}: use owner or member",
    "empty_prompt": "empty --prompt: say what the person should decide",
    "empty_choice": "empty --choice",
    "duplicate_choice": "duplicate --choice",
    "choice_not_offered": "choice {choice} was not offered; choose one of: {choices}",
}


def say(key: str, **values) -> str:
    """The catalog's message KEY with its {names} filled (values already quoted where the user gave them)."""
    return CATALOG[key].format(**values)
