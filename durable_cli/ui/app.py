"""The ASGI app of `durable ui`: the checks every request passes (docs/reference/ui.md §16.2: Host, token or
cookie, CSRF), the pages (§16.3), the two writes (§16.4), the live stream (§16.5) and the error pages (§16.6).

Everything from the store is text: Jinja2 autoescapes it, and no page holds inline script or style."""

import asyncio
import hmac
import json
import os
import sys
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse

from .. import clock
from ..contract.vocabulary import STATUSES
from ..errors import DurableError
from . import views

HERE = os.path.dirname(__file__)
CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; "
       "base-uri 'none'; form-action 'self'")
HTTP_STATUS = {"invalid_input": 400, "not_found": 404, "conflict": 409, "permission_denied": 403, "busy": 503,
               "storage": 503, "misconfigured": 503, "outcome_unknown": 503, "rate_limited": 429, "timeout": 503,
               "internal": 500}
STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}
MAX_STREAMS = 32
MAX_BODY = 1 << 20
STALE = "this form is stale or came from another site; reload the page"


@dataclass
class Settings:
    port: int
    token: str
    csrf: str
    user: str
    home: object = None
    as_user: object = None
    tenant: object = None
    lock_timeout: object = None
    remote: object = None
    on_token: Any = None
    hub: Any = field(default=None)
    shared: Any = None  # --remote: the run's RemoteStore (one kept-alive connection per thread), shared by every request
    units: Any = None  # with telemetry.traces = all: a `durable ui` span per POST (docs/reference/traces.md §15.6)

    def store(self):
        """A Store for one request: the run's remote one (docs/reference/ui.md §16.8: the token stays in this
        process), or a file-backed one of its own, closed after the request."""
        if self.shared is not None:
            return _Kept(self.shared)
        from ..library import Store

        store = Store(self.home, user=self.as_user, tenant=self.tenant, lock_timeout=self.lock_timeout)
        store.delivering = "thread"  # docs/reference/sessions.md §5.3: what its writes produce is sent off the request
        return store

    def read_timeout(self) -> float:
        """A page read waits for a lock at most min(--lock-timeout, 2 s) (§16.6)."""
        from ..config import Config

        config = Config()
        if self.lock_timeout is not None:
            config.overrides["defaults.lock_timeout"] = self.lock_timeout
        return min(config.seconds("defaults.lock_timeout"), 2.0)


class _Kept:
    """The run's remote Store as one request's: the same object, but `close` (each request's end) keeps its
    connections for the next request."""

    def __init__(self, store):
        self._store = store

    def __getattr__(self, name):
        return getattr(self._store, name)

    def close(self) -> None:
        pass


class Hub:
    """The live streams' one poller: index.db's updated_at read at most every 0.25 s for all streams
    together (and only while a stream is open); each change since the previous poll (made while no stream was open
    included) wakes every stream with the ids that changed."""

    def __init__(self, settings):
        self.settings = settings
        self.streams = 0
        self.stopping = False
        self.refused = None  # --remote: the Worker's refusal of the run's token (revoked, expired): every stream ends
        # the index Durable Objects are polled at most once a second for all streams (docs/reference/ui.md §16.8)
        self.interval = 1.0 if settings.shared is not None else 0.25
        self.version = 0
        self.changed = None  # ids changed at `version` (None: anything, e.g. a deletion)
        self.event = asyncio.Event()
        self.task = None
        self._seen = None
        self._told = False

    def start(self):
        self.event = asyncio.Event()
        self.task = asyncio.create_task(self._loop())

    async def stop(self):
        self.stopping = True
        self.event.set()
        if self.task is not None:
            self.task.cancel()

    def _read_remote(self):
        """The first page of the acting user's `ls --all` from the index Durable Objects (one request): each
        session's (updated_at, status, title, turns, tokens, questions) against the previous poll's."""
        store = self.settings.store()
        try:
            rows = store.sessions_page(all_objects=True, limit=100)["rows"]
        except DurableError as e:
            if e.code == "permission_denied":
                self.refused = e
            return self._seen, set()
        seen = {r["id"]: (r["updated_at"], r["status"], r["title"], r["turns"], r["tokens"], r["pending_requests"]) for r in rows}
        if self._seen is None or seen == self._seen:
            return seen, set()
        return seen, {k for k in seen.keys() | self._seen.keys() if seen.get(k) != self._seen.get(k)}

    def _read(self):
        if self.settings.shared is not None:
            return self._read_remote()
        store = self.settings.store()
        try:
            index = store.objects.index(create=False)
            top = index.rows("SELECT max(updated_at) AS at, count(*) AS n FROM objects")
            seen = (top[0]["at"], top[0]["n"]) if top else (None, 0)  # no index.db yet: no objects
            if self._seen is None or seen == self._seen:
                return seen, set()
            if seen[1] != self._seen[1]:
                return seen, None
            return seen, {r["id"] for r in index.rows("SELECT id FROM objects WHERE updated_at >= ?", (self._seen[0] or 0,))}
        except DurableError:
            return self._seen, set()  # index.db busy or unreadable: the next poll tries again
        finally:
            store.close()

    async def _loop(self):
        while not self.stopping:
            if self.streams:
                try:
                    seen, changed = await run_in_threadpool(self._read)
                except Exception as e:  # noqa: BLE001 - a bug here must not end every live page: say it once, keep polling
                    if not self._told:
                        self._told = True
                        sys.stderr.write(f"durable: error: internal error: {type(e).__name__}: {e}; "
                                         "run with DURABLE_DEBUG=1 for details\n")
                        sys.stderr.flush()
                    await asyncio.sleep(1)
                    continue
                first = self._seen is None
                self._seen = seen
                if not first and changed != set():
                    self.version += 1
                    self.changed = changed
                    old, self.event = self.event, asyncio.Event()
                    old.set()
                if self.refused is not None:  # the Worker no longer accepts the token: the live streams end
                    old, self.event = self.event, asyncio.Event()
                    old.set()
            # with no stream open nothing is polled, and the last poll's view is kept: a page drawn meanwhile and
            # changed before its stream's first poll is told of that change (a baseline taken anew would miss it)
            await asyncio.sleep(self.interval)


def make_app(settings: Settings):
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(HERE, "templates")),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(num=number, cost=cost, ago=ago, when=when, q=lambda d: urlencode(
        [(k, v) for k, v in d.items() if v is not None]), fold=fold, compact=compact, marks=marks, show_command=show_command)
    settings.hub = Hub(settings)
    pages = Pages(settings, env)

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        try:
            response = await pages.handle(request)
        except Exception as e:  # noqa: BLE001 - a bug is the one 500, never a traceback in a page (docs/reference/ui.md §16.6)
            message = f"internal error: {type(e).__name__}: {e}; run with DURABLE_DEBUG=1 for details"
            sys.stderr.write(f"durable: error: {message}\n")
            if os.environ.get("DURABLE_DEBUG") == "1":
                import traceback

                traceback.print_exc()
            sys.stderr.flush()
            response = pages.error_page(DurableError(message, "internal"))
        headers = response.headers
        headers["X-Content-Type-Options"] = "nosniff"
        headers["Referrer-Policy"] = "no-referrer"
        headers.setdefault("Cache-Control", "no-store")
        if headers.get("content-type", "").startswith("text/html"):
            headers["Content-Security-Policy"] = CSP
        await response(scope, receive, send)

    return app


_FAILURE: ContextVar = ContextVar("durable_ui_post_failure", default=None)  # a traced POST's refusal, by its §4 code


def _failed(e: DurableError) -> None:
    box = _FAILURE.get()
    if box is not None:
        box.setdefault("code", e.code)


class Pages:
    def __init__(self, settings: Settings, env):
        self.s = settings
        self.env = env
        self.cookie = f"durable_ui_{settings.port}"
        self.hosts = {f"127.0.0.1:{settings.port}", f"localhost:{settings.port}"}
        self.origins = {f"http://{h}" for h in self.hosts}

    # the checks of docs/reference/ui.md §16.2, in order
    async def handle(self, request: Request) -> Response:
        host = request.headers.get("host", "").lower()
        if host not in self.hosts:
            return PlainTextResponse(f"Misdirected Request: durable ui answers at http://127.0.0.1:{self.s.port}/ only\n",
                                     status_code=421)
        if request.method == "OPTIONS":
            return PlainTextResponse("Method Not Allowed\n", status_code=405, headers={"Allow": "GET, POST"})
        query = _parse(request.scope.get("query_string", b"").decode("latin-1"))
        tokens = [v for k, v in query if k == "token"]
        if tokens:
            if len(tokens) == 1 and hmac.compare_digest(tokens[0].encode("utf-8", "surrogateescape"), self.s.token.encode()):
                if self.s.on_token is not None:
                    self.s.on_token()
                rest = urlencode([(k, v) for k, v in query if k != "token"], encoding="utf-8", errors="surrogateescape")
                raw = (request.scope.get("raw_path") or request.url.path.encode()).decode("latin-1")
                location = "/" + raw.lstrip("/") + ("?" + rest if rest else "")  # never //host: no open redirect
                response = Response(status_code=303, headers={"Location": location})
                response.headers["Set-Cookie"] = f"{self.cookie}={self.s.token}; HttpOnly; SameSite=Strict; Path=/"
                return response
            return self.forbidden()
        cookie = request.cookies.get(self.cookie, "")
        if not hmac.compare_digest(cookie.encode(), self.s.token.encode()):
            return self.forbidden()
        if request.method == "POST":
            return await (self.post(request) if self.s.units is None else self.traced_post(request))
        if request.method not in ("GET", "HEAD"):
            return PlainTextResponse("Method Not Allowed\n", status_code=405, headers={"Allow": "GET, POST"})
        bad = _not_text(query)
        if bad is not None:
            return self.error_page(bad)
        return await self.get(request, query)

    def forbidden(self) -> Response:
        return HTMLResponse(self.env.get_template("forbidden.html").render(), status_code=403)

    async def post(self, request: Request) -> Response:
        origin = request.headers.get("origin")
        site = request.headers.get("sec-fetch-site")
        if origin == "null" and site == "same-origin":
            origin = None  # Referrer-Policy: no-referrer makes Chromium send "Origin: null" on its own forms
        if (origin is not None and origin not in self.origins) or (site is not None and site != "same-origin"):
            return self.stale()
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            return PlainTextResponse("Unsupported Media Type: send a form (application/x-www-form-urlencoded)\n",
                                     status_code=415)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                return PlainTextResponse("Content Too Large\n", status_code=413)
        try:
            pairs = _parse(body.decode("utf-8"))
        except UnicodeDecodeError:
            return self.stale()
        form = dict(pairs)
        if not hmac.compare_digest(form.get("csrf", "").encode("utf-8", "surrogateescape"), self.s.csrf.encode()):
            return self.stale()
        bad = _not_text(pairs)
        if bad is not None:  # a field that decodes to no text: 400, as an argument that is not UTF-8 is exit 2 (§4)
            return self.error_page(bad)
        path = request.url.path
        if path == "/session/answer":
            return await self.write(self._answer, form)
        if path == "/memory/confirm":
            return await self.write(self._confirm, form)
        return self.not_found_page()

    async def traced_post(self, request: Request) -> Response:
        """post(REQUEST), then its span: exit status 0 for a write done, else the §4 status of its refusal."""
        from ..errors import EXIT_CODES
        from ..telemetry.operation import unit

        failure: dict = {}
        wakes, started = unit(), time.time_ns()
        _FAILURE.set(failure)
        try:
            response = await self.post(request)
        except Exception:
            self.s.units.span("ui", 1, "internal", wakes=wakes, start_ns=started)
            raise
        code = failure.get("code")
        if code is None and response.status_code >= 400:
            code = {403: "permission_denied", 404: "not_found"}.get(response.status_code, "invalid_input")
        self.s.units.span("ui", EXIT_CODES[code] if code else 0, code, wakes=wakes, start_ns=started)
        return response

    def stale(self) -> Response:
        return self.page("error.html", {"title": "Stale form", "message": STALE}, status=403)

    async def get(self, request: Request, query) -> Response:
        path = request.url.path
        params: dict = {}
        for k, v in query:
            params.setdefault(k, []).append(v)

        def one(k):
            return params.get(k, [None])[-1]

        if path.startswith("/static/"):
            return self.static(path[len("/static/"):])
        if path == "/live":
            return await self.live(one("page"), one("name"), one("tenant"))
        routes = {
            "/": lambda: self._list(params.get("status", []), one("after")),
            "/session": lambda: self._session(one("name"), one("tenant"), one("before"), one("superseded"),
                                              one("events_before")),
            "/search": lambda: self._search(one("q") or ""),
            "/usage": lambda: self._usage(one("days")),
            "/memory": self._memory,
        }
        if path not in routes:
            return self.not_found_page()
        return await run_in_threadpool(self._guarded, routes[path])

    def _guarded(self, render):
        try:
            return render()
        except DurableError as e:
            return self.error_page(e)

    def static(self, name) -> Response:
        if name not in STATIC:
            return self.not_found_page()
        with open(os.path.join(HERE, "static", name), "rb") as f:
            return Response(f.read(), media_type=STATIC[name], headers={"Cache-Control": "no-cache"})

    # rendering
    def page(self, template, context, status=200, headers=None) -> Response:
        base = {"user": self.s.user, "csrf": self.s.csrf, "live": None}
        base.update(context)
        return HTMLResponse(self.env.get_template(template).render(**base), status_code=status, headers=headers)

    def error_page(self, e: DurableError, template="error.html", context=None) -> Response:
        _failed(e)
        status = HTTP_STATUS.get(e.code, 500)
        headers = {}
        if e.code == "busy":
            headers["Retry-After"] = "1"
        elif e.code == "rate_limited":
            headers["Retry-After"] = str(getattr(e, "retry_after", None) or (e.document or {}).get("retry_after") or 1)
        hint = None
        if e.code == "storage" and ("corrupt" in e.message or "doctor" in e.message):
            hint = "durable doctor --repair"  # docs/reference/ui.md §16.6: a corrupt object's page names the repair
        ctx = {"title": "Error", "message": e.message, "hint": hint}
        ctx.update(context or {})
        ctx["message"] = e.message
        return self.page(template, ctx, status=status, headers=headers)

    def not_found_page(self) -> Response:
        return self.page("error.html", {"title": "Not found", "message": "no such page"}, status=404)

    # pages
    def _list(self, status_values, after):
        statuses, all_objects = views.statuses_of(status_values)
        store = self.s.store()
        try:
            doc = views.sessions(store, statuses=statuses, all_objects=all_objects, after=views.parse_after(after))
        finally:
            store.close()
        chosen = status_values[-1] if status_values else ""
        next_query = urlencode([("status", v) for v in status_values] + [("after", doc["next"])]) if doc["next"] else None
        live = "/live?page=list" if after is None else None
        return self.page("list.html", {"title": "Sessions", "doc": doc, "chosen": chosen, "next_query": next_query,
                                       "statuses": (*STATUSES, "all"),
                                       "live": live, "now": clock.now()})

    def _session(self, name, tenant, before, superseded, events_before, *, error=None, entered=None, status=200):
        name = views.require_name(name)
        store = self.s.store()
        try:
            doc = views.session(store, name, tenant=tenant, before=before, superseded=superseded == "1",
                                events_before=events_before, lock_timeout=self.s.read_timeout())
        except DurableError as e:  # busy: the CLI's words ("... is busy: ...; retry, ..."), 503 with Retry-After
            if error is not None:
                raise  # the page after a failed write cannot be read: the write's own error is shown (_answer)
            return self.error_page(e, context={"title": name})
        finally:
            store.close()
        address = {"name": name, "tenant": doc["tenant"]}
        live = "/live?" + urlencode([(k, v) for k, v in (("page", "session"), *address.items()) if v]) if doc["live"] else None
        return self.page("session.html", {"title": name, "doc": doc, "address": address, "live": live,
                                          "superseded": doc["superseded"], "error": error, "entered": entered or {}},
                         status=status)

    def _search(self, q):
        store = self.s.store()
        try:
            doc = views.search(store, q) if q.strip() else {"hits": [], "skipped": []}
        except DurableError as e:
            return self.error_page(e, "search.html", {"title": "Search", "q": q, "doc": {"hits": [], "skipped": []}})
        finally:
            store.close()
        return self.page("search.html", {"title": "Search", "q": q, "doc": doc})

    def _usage(self, days):
        if days is None or days == "":
            n = 30
        else:
            # a whole number as §4 writes one: ASCII digits, no sign, no leading zero, no `_` or spaces (int() takes them)
            n = int(days) if days.isascii() and days.isdigit() and not days.startswith("0") else 0
            if not 1 <= n <= 366:
                raise DurableError(f"invalid days {days!r}: give a whole number of days from 1 to 366", "invalid_input")
        store = self.s.store()
        try:
            try:
                doc = views.usage(store, n)
            except DurableError as e:
                if e.code != "not_found":
                    raise
                doc = {"rows": [], "total": {"sessions": 0, "turns": 0, "tokens": 0, "input_tokens": 0,
                                             "output_tokens": 0, "cost_usd": 0.0}}
        finally:
            store.close()
        from .charts import charts

        return self.page("usage.html", {"title": "Usage", "doc": doc, "days": n, "charts": charts(doc["rows"], n)})

    def _memory(self, *, error=None, status=200):
        store = self.s.store()
        try:
            facts = views.memory(store)
        finally:
            store.close()
        return self.page("memory.html", {"title": "Memory", "facts": facts, "error": error}, status=status)

    # the two writes (docs/reference/ui.md §16.4): 303 back to the page, or the page again with the error
    async def write(self, job, form) -> Response:
        return await run_in_threadpool(job, form)

    def _answer(self, form):
        name, tenant = form.get("name", ""), form.get("tenant") or None
        store = self.s.store()
        try:
            views.answer(store, form)
        except DurableError as e:
            _failed(e)
            if not name:
                return self.error_page(e)
            entered = {form.get("request", ""): {"choice": form.get("choice", ""), "comment": form.get("comment", "")}}
            try:
                views.require_name(name)
                response = self._session(name, tenant, None, None, None, error=e.message, entered=entered,
                                         status=HTTP_STATUS.get(e.code, 500))
            except DurableError:
                return self.error_page(e)
            if response.status_code != HTTP_STATUS.get(e.code, 500):
                return self.error_page(e)
            if e.code in ("busy", "rate_limited"):
                response.headers["Retry-After"] = self.error_page(e).headers["Retry-After"]
            return response
        finally:
            store.close()
        location = "/session?" + urlencode([(k, v) for k, v in (("name", name), ("tenant", tenant)) if v])
        return Response(status_code=303, headers={"Location": location + "#questions"})

    def _confirm(self, form):
        store = self.s.store()
        try:
            views.confirm(store, form)
        except DurableError as e:
            _failed(e)
            return self._memory(error=e.message, status=HTTP_STATUS.get(e.code, 500))
        finally:
            store.close()
        return Response(status_code=303, headers={"Location": "/memory"})

    # live updates (docs/reference/ui.md §16.5)
    async def live(self, page, name, tenant) -> Response:
        hub = self.s.hub
        if page not in ("list", "session"):
            return PlainTextResponse("give page=list or page=session\n", status_code=400)
        if hub.refused is not None:
            return self.error_page(hub.refused)
        if hub.streams >= MAX_STREAMS:
            return PlainTextResponse("Service Unavailable: too many live pages are open\n", status_code=503,
                                     headers={"Retry-After": "5"})
        object_id = None
        if page == "session" and name:
            object_id = await run_in_threadpool(self._object_id, name, tenant)
        hub.streams += 1

        async def stream():
            try:
                yield "retry: 1000\n\n"
                version = hub.version
                beat = time.monotonic()
                while not hub.stopping and hub.refused is None:
                    event = hub.event
                    if hub.version == version:
                        try:
                            await asyncio.wait_for(event.wait(), 0.5)
                        except TimeoutError:
                            pass
                    if hub.stopping or hub.refused is not None:
                        break
                    if hub.version != version:
                        version = hub.version
                        if page == "list" or hub.changed is None or object_id in hub.changed:
                            yield f"id: {version}\nevent: changed\ndata: {json.dumps(page)}\n\n"
                            beat = time.monotonic()
                    if time.monotonic() - beat > 15:
                        yield ": keep-alive\n\n"
                        beat = time.monotonic()
            finally:
                hub.streams -= 1

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    def _object_id(self, name, tenant):
        store = self.s.store()
        if self.s.shared is not None:  # the Worker knows the id (its secret): one request
            try:
                with store.open(name, tenant=tenant or None) as s:
                    return s.object_id()["id"]
            except DurableError:
                return None
        try:
            address = store.address(name, tenant=tenant or None)
            return store.objects.object_id(address.id_scope, address.owner, address.name)
        except DurableError:
            return None
        finally:
            store.close()


def _parse(text: str) -> list:
    """A query string or form body's (key, value) pairs, percent-decoded as UTF-8; bytes that are not UTF-8 kept as
    surrogate escapes (never replaced by U+FFFD, which would store or look up another text than was sent)."""
    return parse_qsl(text, keep_blank_values=True, encoding="utf-8", errors="surrogateescape")


def _not_text(pairs):
    """The error for the first key or value that is not UTF-8 (the §4 message of an argument that is not), or None."""
    for key, value in pairs:
        for part in (key, value):
            try:
                part.encode("utf-8")
            except UnicodeEncodeError:
                shown = part.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                where = key.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                return DurableError(f"invalid UTF-8 in {where} ('{shown[:60]}'); nothing was changed", "invalid_input")
    return None


# filters
def number(n) -> str:
    return f"{int(n or 0):,}"


def cost(usd) -> str:
    usd = float(usd or 0)
    if 0 < usd < 0.005:
        return "<$0.01"
    return f"${usd:,.2f}"


def when(iso) -> str:
    """An absolute UTC time as the pages show it."""
    if not iso:
        return ""
    return iso.replace("T", " ")[:19] + " UTC"


def ago(iso, now=None) -> str:
    if not iso:
        return ""
    from datetime import datetime

    then = datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000
    seconds = max(0, ((now or clock.now()) - then) / 1000)
    for size, unit in ((86400 * 365, "year"), (86400 * 30, "month"), (86400, "day"), (3600, "h"), (60, "min")):
        if seconds >= size:
            n = int(seconds // size)
            if unit in ("h", "min"):
                return f"{n} {unit} ago"
            return f"{n} {unit}{'s' if n > 1 else ''} ago"
    return "just now"


FOLD_LINES = 20
FOLD_CHARS = 2000
ROW_TEXT = 64 * 1024


def fold(text, command=None) -> dict:
    """How a text is shown: whole, or folded in a closed <details> (over 20 lines or 2,000 characters),
    cut at 64 KiB with the command that prints it whole."""
    text = "" if text is None else str(text)
    lines = text.count("\n") + 1 if text else 0
    shown, left = text, 0
    if len(text) > ROW_TEXT:
        shown = text[:ROW_TEXT]
        left = len(text) - ROW_TEXT
    folded = lines > FOLD_LINES or len(text) > FOLD_CHARS
    first = text.split("\n", 1)[0][:120]
    size = f"{lines:,} line{'s' if lines != 1 else ''}, {len(text):,} characters"
    return {"text": shown, "folded": folded, "first": first, "size": size, "left": left, "command": command}


def show_command(address, seq) -> str:
    """The command that prints row SEQ whole, as a shell takes it: ADDRESS (NAME, tenant ORG or None) quoted, the
    tenant's --tenant, and a NAME that starts with `-` after `--`."""
    import shlex

    name, tenant = address
    words = ["durable", "transcript", "show"]
    words += ["--tenant", shlex.quote(tenant)] if tenant else []
    options = ["--since", str(seq - 1), "--json"]
    if name.startswith("-"):
        return " ".join(words + options + ["--", shlex.quote(name)])
    return " ".join(words + [shlex.quote(name)] + options)


def compact(value) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def marks(snippet) -> list:
    """A search snippet split at its [match] brackets: plain, match, plain, ... (the matches shown as <mark>)."""
    import re

    return re.split(r"\[([^\]]*)\]", snippet or "")
