"""Spans out through the OpenTelemetry SDK (docs/reference/traces.md §15.1, §15.3): the SDK's own spans,
its OTLP/HTTP protobuf exporter, and the OTLP/JSON of a file made from the SDK's own encoding.

Only `export --format otlp` and commands that send live spans import this module; it imports the SDK
inside its functions' first call (`sdk()`), and says which extra to install when it is missing.
"""

import base64
import logging
import os
import re
from urllib.parse import unquote, urlsplit, urlunsplit

from .. import __version__
from ..errors import DurableError, invalid
from . import traces

BATCH = 512  # spans per request
LINE = 10_000  # spans per OTLP/JSON line
INSTALL = "pip install 'durable-cli[otel]'"


class NotSent(Exception):
    """A request the endpoint did not accept: REASON is the OS error, the HTTP status or a timeout."""


def sdk():
    """The SDK modules, or exit 2 naming the extra that installs them."""
    try:
        from google.protobuf import json_format
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
    except ImportError as e:
        raise invalid(f"OTLP traces need the OpenTelemetry SDK, which is not installed ({e.name}): {INSTALL}") from None
    return {"json_format": json_format, "encode_spans": encode_spans, "Exporter": OTLPSpanExporter, "Resource": Resource,
            "ReadableSpan": ReadableSpan, "Scope": InstrumentationScope, "SpanContext": SpanContext,
            "SpanKind": SpanKind, "Status": Status, "StatusCode": StatusCode, "TraceFlags": TraceFlags}


def check_protocol() -> None:
    """grpc (or anything but http/protobuf) needs another exporter: exit 2 (§15.1)."""
    for variable in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = os.environ.get(variable, "").strip()
        if value and value != "http/protobuf":
            raise invalid(f"{variable}={value!r} is not supported: durable sends OTLP over http/protobuf only")


def check_url(url: str, what: str) -> str:
    from ..config import is_url

    if not is_url(url):
        raise invalid(f"{what} must be an http:// or https:// URL, not {url!r}")
    return url


def configured_endpoint(config=None):
    """The traces URL of §15.1: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, else OTEL_EXPORTER_OTLP_ENDPOINT
    with /v1/traces, else telemetry.endpoint; None when none is set."""
    traces_url = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces_url:
        return traces_url
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if base:
        return base.rstrip("/") + "/v1/traces"
    return config.get("telemetry.endpoint") if config is not None else None


def headers() -> dict:
    raw = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or os.environ.get("OTEL_EXPORTER_OTLP_HEADERS") or ""
    out = {}
    for item in raw.split(","):
        if "=" in item:
            k, v = item.split("=", 1)
            if k.strip():
                out[unquote(k.strip())] = unquote(v.strip())
    return out


def shown(url: str) -> str:
    """The endpoint as an error may name it: no user-info, query or fragment."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    except ValueError:
        return "the endpoint"


def request_timeout() -> float:
    """OTEL_EXPORTER_OTLP_TRACES_TIMEOUT / OTEL_EXPORTER_OTLP_TIMEOUT in milliseconds, else 10 s."""
    for variable in ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"):
        value = os.environ.get(variable, "").strip()
        if value:
            try:
                ms = float(value)
            except ValueError:
                raise invalid(f"{variable} must be a number of milliseconds, not {value!r}") from None
            if ms > 0:
                return ms / 1000
    return 10.0


class Builder:
    """Our spans as the SDK's ReadableSpans, under one resource and the `durable` scope."""

    def __init__(self):
        self.m = m = sdk()
        resource = m["Resource"].create({"service.name": "durable", "service.version": __version__})

        class Fixed(m["Resource"]):
            """The one resource of every span, its hash computed once: the SDK's encoder groups spans by resource and
            Resource.__hash__ serializes its attributes to JSON on every call (a third of an export's time)."""

            def __hash__(self):
                return fixed_hash

        fixed_hash = hash(resource)
        self.resource = Fixed(resource.attributes, resource.schema_url)
        self.scope = m["Scope"]("durable", __version__)
        self.kinds = {traces.INTERNAL: m["SpanKind"].INTERNAL, traces.CLIENT: m["SpanKind"].CLIENT}
        self.codes = {traces.UNSET: m["StatusCode"].UNSET, traces.OK: m["StatusCode"].OK, traces.ERROR: m["StatusCode"].ERROR}
        self.flags = m["TraceFlags"](1)
        self._head = None  # the resource and scope of json_line_direct, rendered once

    def __call__(self, spans) -> list:
        m, out = self.m, []
        SpanContext, ReadableSpan, Status = m["SpanContext"], m["ReadableSpan"], m["Status"]
        for s in spans:
            tid = int.from_bytes(s.trace_id, "big")
            ctx = SpanContext(tid, int.from_bytes(s.span_id, "big"), is_remote=False, trace_flags=self.flags)
            parent = (SpanContext(tid, int.from_bytes(s.parent_id, "big"), is_remote=False, trace_flags=self.flags)
                      if s.parent_id is not None else None)
            status = Status(self.codes[s.status], s.description if s.status == traces.ERROR else None)
            out.append(ReadableSpan(s.name, context=ctx, parent=parent, resource=self.resource, attributes=s.attributes,
                                    kind=self.kinds[s.kind], status=status, start_time=s.start, end_time=s.end,
                                    instrumentation_scope=self.scope))
        return out

    def json_line(self, sdk_spans) -> dict:
        """One ExportTraceServiceRequest in the OTLP JSON encoding (hex ids, enums as integers, lowerCamelCase keys,
        64-bit integers as strings, default values left out), rendered from the SDK's own protobuf encoding of the
        spans. protobuf's generic json_format is 4 times slower on these messages; tests/cli/test_traces.py checks
        this rendering equals it (ids in hex, as OTLP/JSON wants them, where json_format gives base64)."""
        return _request_json(self.m["encode_spans"](sdk_spans))

    def json_line_direct(self, spans) -> dict:
        """The same request as json_line(self(SPANS)), built straight from our spans (traces.Span) without the SDK's
        per-span objects and protobuf messages (three quarters of a file export's time). The resource and scope
        parts are the SDK's own rendering (taken once); each span is rendered as the SDK encodes it: hex ids, kind
        and status code as numbers, 64-bit integers as strings, flags 0x100 (a local parent). tests/cli/test_traces.py
        checks it is equal to json_line's output, byte for byte once dumped."""
        if self._head is None:
            probe = traces.Span(b"\1" * 16, b"\1" * 8, None, "probe", traces.INTERNAL, 1, 1, {})
            doc = self.json_line(self([probe]))
            [rs] = doc["resourceSpans"]
            [ss] = rs["scopeSpans"]
            self._head = (rs, ss)
        rs, ss = self._head
        rendered = []
        for s in spans:
            d = {"traceId": s.trace_id.hex(), "spanId": s.span_id.hex()}
            if s.parent_id is not None:
                d["parentSpanId"] = s.parent_id.hex()
            if s.name:
                d["name"] = s.name
            d["kind"] = s.kind
            if s.start:
                d["startTimeUnixNano"] = str(s.start)
            if s.end:
                d["endTimeUnixNano"] = str(s.end)
            if s.attributes:
                d["attributes"] = [{"key": k, "value": _value(v)} for k, v in s.attributes.items()]
            status = {}
            if s.status == traces.ERROR and s.description:
                status["message"] = s.description
            if s.status:
                status["code"] = s.status
            d["status"] = status
            d["flags"] = 256
            rendered.append(d)
        return {"resourceSpans": [{**rs, "scopeSpans": [{**ss, "spans": rendered}]}]}

    def json_line_generic(self, sdk_spans) -> dict:
        """The same through protobuf's json_format (the reference the fast rendering is checked against)."""
        doc = self.m["json_format"].MessageToDict(self.m["encode_spans"](sdk_spans), use_integers_for_enums=True)
        for rs in doc.get("resourceSpans", ()):
            for ss in rs.get("scopeSpans", ()):
                for span in ss.get("spans", ()):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in span:
                            span[key] = base64.b64decode(span[key]).hex()
        return doc


def _value(v) -> dict:
    """An attribute value as the SDK encodes it (opentelemetry's _encode_value), in the OTLP JSON of _any."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        values = [_value(x) for x in v]
        return {"arrayValue": {"values": values} if values else {}}
    raise ValueError(f"durable's spans hold no {type(v).__name__} attribute")


def _any(v) -> dict:
    kind = v.WhichOneof("value")
    if kind == "string_value":
        return {"stringValue": v.string_value}
    if kind == "int_value":
        return {"intValue": str(v.int_value)}
    if kind == "bool_value":
        return {"boolValue": v.bool_value}
    if kind == "double_value":
        return {"doubleValue": v.double_value}
    if kind == "array_value":
        values = [_any(x) for x in v.array_value.values]
        return {"arrayValue": {"values": values} if values else {}}
    if kind == "kvlist_value":
        values = _attributes(v.kvlist_value.values)
        return {"kvlistValue": {"values": values} if values else {}}
    if kind == "bytes_value":
        return {"bytesValue": base64.b64encode(v.bytes_value).decode()}
    return {}


def _attributes(kvs) -> list:
    return [{"key": kv.key, "value": _any(kv.value)} if kv.HasField("value") else {"key": kv.key} for kv in kvs]


def _with_attributes(d: dict, m) -> dict:
    if len(m.attributes):
        d["attributes"] = _attributes(m.attributes)
    if m.dropped_attributes_count:
        d["droppedAttributesCount"] = m.dropped_attributes_count
    return d


def _span(s) -> dict:
    d = {"traceId": s.trace_id.hex(), "spanId": s.span_id.hex()}
    if s.trace_state:
        d["traceState"] = s.trace_state
    if s.parent_span_id:
        d["parentSpanId"] = s.parent_span_id.hex()
    if s.name:
        d["name"] = s.name
    if s.kind:
        d["kind"] = s.kind
    if s.start_time_unix_nano:
        d["startTimeUnixNano"] = str(s.start_time_unix_nano)
    if s.end_time_unix_nano:
        d["endTimeUnixNano"] = str(s.end_time_unix_nano)
    _with_attributes(d, s)
    if len(s.events) or len(s.links) or s.dropped_events_count or s.dropped_links_count:
        raise ValueError("durable's spans hold no events or links")
    if s.HasField("status"):
        st = {}
        if s.status.message:
            st["message"] = s.status.message
        if s.status.code:
            st["code"] = s.status.code
        d["status"] = st
    if s.flags:
        d["flags"] = s.flags
    return d


def _request_json(request) -> dict:
    out = []
    for rs in request.resource_spans:
        r: dict = {}
        if rs.HasField("resource"):
            r["resource"] = _with_attributes({}, rs.resource)
        scopes = []
        for ss in rs.scope_spans:
            sd: dict = {}
            if ss.HasField("scope"):
                scope: dict = {}
                if ss.scope.name:
                    scope["name"] = ss.scope.name
                if ss.scope.version:
                    scope["version"] = ss.scope.version
                sd["scope"] = _with_attributes(scope, ss.scope)
            if len(ss.spans):
                sd["spans"] = [_span(s) for s in ss.spans]
            if ss.schema_url:
                sd["schemaUrl"] = ss.schema_url
            scopes.append(sd)
        if scopes:
            r["scopeSpans"] = scopes
        if rs.schema_url:
            r["schemaUrl"] = rs.schema_url
        out.append(r)
    return {"resourceSpans": out} if out else {}


class _Collect(logging.Handler):
    """The exporter's log records, kept for the reason of a failure and never printed (§15.1)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


_LOGGERS = ("opentelemetry.exporter.otlp.proto.http.trace_exporter", "opentelemetry.exporter.otlp.common.http",
            "opentelemetry.exporter.otlp.proto.http", "opentelemetry")


def quiet_sdk_logs() -> _Collect:
    collect = _Collect()
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers[:] = [collect]
        logger.propagate = False
        logger.setLevel(logging.DEBUG)
    return collect


def _reason(collect: _Collect) -> str:
    for record in reversed(collect.records):
        args = record.args if isinstance(record.args, tuple) else ()
        if "batch code" in record.msg and len(args) >= 2 and args[1] is not None:
            return f"HTTP {args[1]}"
    for record in reversed(collect.records):
        args = record.args if isinstance(record.args, tuple) else ()
        if "Transient error" in record.msg and args and isinstance(args[0], str):  # a retryable HTTP status, by its phrase
            from http import HTTPStatus

            code = next((s.value for s in HTTPStatus if s.phrase == args[0]), None)
            return f"HTTP {code}" if code is not None else f"HTTP {args[0]}"
    for record in reversed(collect.records):
        text = " ".join(str(a) for a in (record.args if isinstance(record.args, tuple) else ()))
        errno = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
        if errno:
            return errno.group(1).strip().lower()
        if "timed out" in text.lower() or "timeout" in text.lower():
            return "timed out"
    for record in reversed(collect.records):
        if "timeout" in record.getMessage().lower():
            return "timed out"
    return "unreachable"


def _error_reason(error) -> str:
    """The OS error under a requests exception (`connection refused`), or `timed out`."""
    text = str(error)
    errno = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    if errno:
        return errno.group(1).strip().lower()
    if "timed out" in text.lower() or "timeout" in type(error).__name__.lower():
        return "timed out"
    return "unreachable"


class Sender:
    """OTLP/HTTP protobuf to URL, BATCH spans a request; NotSent on the first request not accepted."""

    def __init__(self, builder: Builder, url: str, timeout: float):
        self.builder, self.url = builder, url
        import requests  # the exporter's own HTTP client: its response hook tells the status of a refusal

        self.collect = quiet_sdk_logs()
        self.status = self.error = None
        sender = self

        class Session(requests.Session):
            """Remembers why a request failed: the answer's status, or the error that left no answer."""

            def request(self, *args, **kwargs):
                kwargs["allow_redirects"] = False  # POST to the URL as is (§15.3): a redirect is an answer other than 2xx
                try:
                    return super().request(*args, **kwargs)
                except Exception as e:
                    sender.error = e
                    raise

        session = Session()
        session.hooks["response"].append(self._answered)
        self.exporter = builder.m["Exporter"](endpoint=url, headers=headers(), timeout=timeout, session=session)
        self.sent = 0

    def _answered(self, response, *args, **kwargs):
        self.status = response.status_code

    def send(self, spans) -> None:
        from opentelemetry.sdk.trace.export import SpanExportResult

        for i in range(0, len(spans), BATCH):
            part = self.builder(spans[i:i + BATCH])
            self.collect.records.clear()
            self.status = self.error = None
            done = self.exporter.export(part) is SpanExportResult.SUCCESS
            if self.status is not None and not 200 <= self.status < 300:
                raise NotSent(f"HTTP {self.status}")  # the SDK counts any status under 400 (requests' `ok`) as sent
            if not done:
                if self.error is not None:
                    raise NotSent(_error_reason(self.error))
                raise NotSent(_reason(self.collect))
            self.sent += len(part)

    def close(self) -> None:
        try:
            self.exporter.shutdown()
        except Exception:  # noqa: BLE001 -- closing the session must not hide the outcome
            pass


def storage_error(url: str, reason: str, accepted: int) -> DurableError:
    return DurableError(f"cannot send traces to {shown(url)}: {reason}; {accepted} span{'s' if accepted != 1 else ''} "
                        "were accepted before it (running the export again is safe: same ids)", "storage")


class Live:
    """Live spans of one process (docs/reference/traces.md §15.5): sent within telemetry.timeout; a failure is one warning
    line, then nothing more until a send succeeds again. Never raises; never changes an outcome."""

    def __init__(self, url: str, timeout: float, content: bool):
        self.url, self.timeout, self.content = url, timeout, content
        self.failing = False
        self.sender: Sender | None = None

    def warn(self, reason: str) -> None:
        import sys

        if not self.failing:
            self.failing = True
            try:
                sys.stderr.write(f"durable: warning: traces not sent to {shown(self.url)}: {reason}\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass

    def send_prompt(self, record: dict, prompt_id: int) -> None:
        """The spans of prompt PROMPT_ID's trace in RECORD (its turn, calls and elicitations)."""
        try:
            if self.sender is None:
                check_protocol()
                self.sender = Sender(Builder(), self.url, self.timeout)
            want = traces.trace_id(record["id"], f"p{prompt_id}")
            spans = [s for s in traces.session_spans(record, content=self.content) if s.trace_id == want]
            self.sender.send(spans)
            self.failing = False
        except NotSent as e:
            self.warn(str(e))
        except DurableError as e:
            self.warn(e.message)
        except Exception as e:  # noqa: BLE001 -- a trace backend never changes an outcome (§15.5)
            self.warn(f"{type(e).__name__}: {e}")

    def send(self, spans) -> None:
        """SPANS (traces.Span) as they are: an operation span (§15.6)."""
        try:
            if self.sender is None:
                check_protocol()
                self.sender = Sender(Builder(), self.url, self.timeout)
            self.sender.send(spans)
            self.failing = False
        except NotSent as e:
            self.warn(str(e))
        except DurableError as e:
            self.warn(e.message)
        except Exception as e:  # noqa: BLE001 -- a trace backend never changes an outcome (§15.5)
            self.warn(f"{type(e).__name__}: {e}")


_warned_once: set = set()


def live(config):
    """The Live sender of this process for `telemetry.traces` work|all, or None (off, OTEL_SDK_DISABLED, no
    endpoint: one warning line per process for the last)."""
    import sys

    if config.get("telemetry.traces") == "off" or os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    url = configured_endpoint(config)
    if not url:
        if "no endpoint" not in _warned_once:
            _warned_once.add("no endpoint")
            sys.stderr.write("durable: warning: traces are on but no endpoint is set\n")
        return None
    return Live(url, float(config.seconds("telemetry.timeout")), bool(config.get("telemetry.content")))
