"""One error type for the whole tool, carrying the exit table of docs/reference/output.md §4 (equal to contract.json's; a test checks)."""

EXIT_CODES = {
    "internal": 1,
    "invalid_input": 2,
    "not_found": 3,
    "conflict": 4,
    "permission_denied": 5,
    "busy": 6,
    "storage": 7,
    "misconfigured": 7,  # remote mode: the Worker's own configuration is wrong (docs/reference/remote.md §13), naming the variable
    "outcome_unknown": 7,  # remote mode: a write whose outcome is unknown after the retries (docs/reference/remote.md §13)
    "rate_limited": 8,
    "timeout": 9,
    "not_approved": 10,  # durable step --approval: the request does not approve this call (docs/reference/sessions.md §5.2)
    "refused": 11,  # durable step --approval: the request was declined or expired (docs/reference/sessions.md §5.2)
}


class DurableError(Exception):
    """A failure a user can act on: a message naming the thing and the way out, a code, an exit status."""

    retry_after: float | None = None  # a remote rate_limited refusal's wait in seconds (durable ui's Retry-After)

    def __init__(self, message: str, code: str = "internal", document=None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.exit_status = EXIT_CODES[code]
        # Some failures still print their result document on stdout (doctor, limit hit, forget, elicit wait).
        self.document = document


class NotEncodable(DurableError, TypeError):
    """Input json cannot encode (an object in an item): exit 2 like any invalid input, and a TypeError, as
    the stores the adapters stand in for raise (the Agents SDK's own tests check for it)."""

    def __init__(self, message: str):
        super().__init__(message, "invalid_input")


def invalid(message: str) -> DurableError:
    return DurableError(message, "invalid_input")


def not_found(message: str) -> DurableError:
    return DurableError(message, "not_found")


def conflict(message: str) -> DurableError:
    return DurableError(message, "conflict")


def denied(message: str) -> DurableError:
    return DurableError(message, "permission_denied")


def storage(message: str) -> DurableError:
    return DurableError(message, "storage")


class Interrupted(BaseException):
    """Raised from SIGINT/SIGTERM handlers so open transactions roll back before the exit."""

    def __init__(self, exit_status: int):
        super().__init__(exit_status)
        self.exit_status = exit_status
