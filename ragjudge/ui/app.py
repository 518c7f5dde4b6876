"""``ragjudge ui``: a local web app over a run store (Starlette; pages rendered by the one
presentation layer, ``ragjudge.render``; every asset inside the package).

Safe by default (the contract the tests check):

- every text from a run is escaped by jinja2's autoescape, and the Content-Security-Policy
  allows scripts only from the app itself (no inline script, no ``javascript:`` URL runs);
- a request whose ``Host`` is not the address served is refused (DNS rebinding);
- every state-changing request (POST) must carry the session's CSRF token (a random value
  made when the app starts, in a form field ``csrf``), else 403;
- with ``token`` set (required by ``serve`` for any address other than loopback), every
  request must carry it once as ``?token=`` (it is then kept in an HttpOnly cookie), else 401;
- ``read_only`` refuses every POST (403) and hides the forms.

Errors are one plain-text line, ``STATUS: what was wrong``: 400 for a request the app cannot
use (a missing or malformed field, named; a ``ConfigError`` or ``DataError``), 404 for a run or
case not in the store, 503 for a store locked by another process, 500 for any other failure of
the store.
"""

from __future__ import annotations

import hmac
import math
import secrets
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ragjudge.calibrate.labels import stored_label_set
from ragjudge.calibrate.render import b64, fmt_ci, fmt_value
from ragjudge.errors import ConfigError, RagjudgeError, StateFileError
from ragjudge.render import render
from ragjudge.schema import JudgeStatus
from ragjudge.store import RunStore, StoredLabel, parse_item_id
from ragjudge.store.base import RunLockedError, StoreLockedError
from ragjudge.ui.labels import import_csv, judged_items, labels_csv, queue, unstored
from ragjudge.ui.pages import NotFoundError, Pages

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
TOKEN_COOKIE = "ragjudge_token"
RUNS_PER_PAGE = 25
SCALES = {"binary": ("1", "0"), "ordinal": ("1", "2", "3", "4", "5")}
"""The label scales the Label page offers (both ``agree`` reads): its keys, in order. One
dimension of a run is labelled on one scale."""


class _Guard(BaseHTTPMiddleware):
    """Token (when set), read-only, and the security headers (CSRF: ``_posted``)."""

    def __init__(self, app: Any, *, token: str | None, read_only: bool) -> None:
        super().__init__(app)
        self.token, self.read_only = token, read_only

    async def dispatch(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        given = request.query_params.get("token")
        if self.token is not None:
            have = given or request.cookies.get(TOKEN_COOKIE) or ""
            if not hmac.compare_digest(have.encode(), self.token.encode()):
                return PlainTextResponse("401: this server needs its token (?token=...)", 401)
        if request.method not in ("GET", "HEAD") and self.read_only:
            return PlainTextResponse("403: this server is read-only", 403)
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        if self.token is not None and given:
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
        return response


class _Contained:
    """Any error that is not a ragjudge error (a bug): a one-line ``500: internal error ...``
    response and the same line on the server's stderr, redacted, with no traceback in either
    (raised again only when the response had already begun)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            if started:
                raise
            from ragjudge.llm.settings import error_text

            line = f"500: internal error {error_text(exc, 300)}"
            print(f"ragjudge ui: {line} (please report it)", file=sys.stderr, flush=True)
            await PlainTextResponse(line, 500)(scope, receive, send)


Handler = Callable[[Request, FormData], Awaitable[Response]]


def _posted(csrf: str, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """A POST endpoint that runs ``handler`` only when the form carries the CSRF token."""

    async def endpoint(request: Request) -> Response:
        form = await request.form()
        sent = str(form.get("csrf", ""))
        if not hmac.compare_digest(sent.encode(), csrf.encode()):
            return PlainTextResponse("403: missing or wrong CSRF token", 403)
        return await handler(request, form)

    return endpoint


MAX_INT = 2**31 - 1
"""Whole numbers of a request are held within +-MAX_INT: a page, an offset or a k never
overflows the database's integers (a page past the end shows the last page)."""


def _required(values: Mapping[str, Any], name: str) -> str:
    """The field ``name`` of a query or form, stripped; absent or blank: ``ConfigError`` (400)
    naming it."""
    value = values.get(name)
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        raise ConfigError(f"missing field {name!r}")
    return text


def _float(values: Mapping[str, str], name: str) -> float | None:
    """The number in the field ``name``; None when absent or blank, ``ConfigError`` (400)
    naming the field when it is no finite number."""
    text = values.get(name, "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ConfigError(f"field {name!r}: not a number: {text[:40]!r}")
    return value


CASE_STATUSES = (*(s.value for s in JudgeStatus), "missing")
"""What the cases page filters on: a judge status, or ``missing`` (no result at that k)."""


def _case_status(values: Mapping[str, str]) -> str:
    """The ``status`` field: blank (any) or one of ``CASE_STATUSES``, else ``ConfigError``
    (400) naming the field (an unknown one matched nothing: an empty page that looked like
    "no such case")."""
    status = values.get("status", "").strip()
    if status and status not in CASE_STATUSES:
        raise ConfigError(f"status: {status!r} is none of {', '.join(CASE_STATUSES)}")
    return status


def _int(values: Mapping[str, str], name: str) -> int | None:
    """The whole number in the field ``name``, held within +-``MAX_INT``; None when absent or
    blank, ``ConfigError`` (400) naming the field when it is no whole number."""
    text = values.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"field {name!r}: not a whole number: {text[:40]!r}") from None
    return max(-MAX_INT, min(value, MAX_INT))


def _status(exc: Exception) -> int:
    """The HTTP status of an error (module docstring)."""
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, StoreLockedError | RunLockedError):
        return 503
    if isinstance(exc, StateFileError):
        return 500
    return 400


def _local_path(target: str) -> bool:
    """``target`` is a path on this server: ``/...``, not ``//host`` nor ``/\\host`` (which
    browsers read as another host)."""
    return target.startswith("/") and not target.startswith(("//", "/\\"))


def create_app(
    store: RunStore,
    *,
    read_only: bool = False,
    token: str | None = None,
    allowed_hosts: list[str] | None = None,
) -> Starlette:
    """The app over ``store`` (module docstring for the safety contract)."""
    pages = Pages(store)
    csrf = secrets.token_urlsafe(32)

    def page(request: Request, template: str, **context: Any) -> HTMLResponse:
        html = render(
            f"ui/{template}", csrf=csrf, read_only=read_only, path=request.url.path, **context
        )
        return HTMLResponse(html)

    async def runs(request: Request) -> Response:
        p = request.query_params
        q, status, sort = p.get("q", ""), p.get("status", ""), p.get("sort", "started")
        rows = pages.runs(q=q, status=status, sort=sort)
        n_pages = max(1, -(-len(rows) // RUNS_PER_PAGE))
        at = min(max(_int(p, "page") or 1, 1), n_pages)
        shown = rows[(at - 1) * RUNS_PER_PAGE : at * RUNS_PER_PAGE]
        return page(
            request,
            "runs.html.j2",
            rows=shown,
            q=q,
            status=status,
            sort=sort,
            page_no=at,
            pages=n_pages,
            total=len(rows),
        )

    async def run(request: Request) -> Response:
        run_id = pages.resolve(request.path_params["run"])
        summary = pages.run_summary(run_id)
        return page(
            request,
            "run.html.j2",
            m=store.manifest(run_id),
            s=summary,
            statuses=pages.statuses(run_id),
            baselines=[m for m in store.find_by_tag("baseline") if m.run_id != run_id],
        )

    async def cases(request: Request) -> Response:
        run_id = pages.resolve(request.path_params["run"])
        p = request.query_params
        baseline = p.get("baseline") or None
        explorer = pages.explorer(
            run_id,
            k=_int(p, "k"),
            q=p.get("q", ""),
            status=_case_status(p),
            judge=p.get("judge", ""),
            lo=_float(p, "min"),
            hi=_float(p, "max"),
            baseline=pages.resolve(baseline) if baseline else None,
            page=_int(p, "page") or 1,
        )
        return page(request, "cases.html.j2", e=explorer, p=dict(p), statuses=CASE_STATUSES)

    async def case(request: Request) -> Response:
        run_id = pages.resolve(request.path_params["run"])
        baseline = request.query_params.get("baseline") or None
        data = pages.case(
            run_id, request.path_params["case"], pages.resolve(baseline) if baseline else None
        )
        return page(request, "case.html.j2", c=data)

    async def compare(request: Request) -> Response:
        from ragjudge.report.build import html_context, report_plots
        from ragjudge.report.from_store import stored_report

        p = request.query_params
        runs_ = store.list_runs()
        if not p.get("run") or not p.get("baseline"):
            return page(request, "compare.html.j2", r=None, runs=runs_, p=dict(p))
        run_id, base_id = pages.resolve(p["run"]), pages.resolve(p["baseline"])
        report = stored_report(store, run_id, base_id, allow_partial=True)
        context = html_context(report, report_plots(report))
        judges = list(pages.digest(run_id).statuses)
        return page(request, "compare.html.j2", runs=runs_, p=dict(p), judges=judges, **context)

    async def history(request: Request) -> Response:
        from ragjudge.ui.history import history

        tag = request.query_params.get("tag", "nightly")
        return page(request, "history.html.j2", h=history(pages, store, tag))

    async def tag(request: Request, form: FormData) -> Response:
        run_id = pages.resolve(request.path_params["run"])
        name = str(form.get("tag", "baseline")).strip() or "baseline"
        target = str(form.get("next") or "/")
        if not _local_path(target):
            raise ConfigError(f"field 'next': {target[:80]!r} is not a path on this server")
        store.tag(run_id, name, str(form.get("value", "")))
        return RedirectResponse(target, status_code=303)

    def latest() -> str:
        finished = [m.run_id for m in store.list_runs() if m.status == "finished"]
        return finished[-1] if finished else pages.resolve("latest")

    async def label(request: Request) -> Response:
        p = request.query_params
        run_id = pages.resolve(p["run"]) if p.get("run") else latest()
        labeler = p.get("labeler", "").strip()
        scale = p.get("scale", "binary") if p.get("scale") in SCALES else "binary"
        rd = pages.run_data(run_id)
        mine = [lab for lab in store.labels(run_id) if lab.labeler == labeler]
        done = {lab.item_id for lab in mine}
        picks = queue(rd, done) if labeler else []
        pick = picks[0] if picks else None
        item = None
        if pick is not None:
            case_id, k = parse_item_id(pick.item_id)
            answer = rd.answers.get(pick.item_id)
            item = {
                "item_id": pick.item_id,
                "case_id": case_id,
                "k": k,
                "reason": pick.reason,
                "question": rd.questions.get(case_id, ""),
                "answer": answer.text if answer is not None else "",
                "contexts": list(zip(answer.context_ids, answer.contexts, strict=False))
                if answer is not None
                else [],
            }
        dims = sorted({r.judge for r in rd.results})
        return page(
            request,
            "label.html.j2",
            run_id=run_id,
            labeler=labeler,
            scale=scale,
            choices=SCALES[scale],
            item=item,
            dims=dims,
            n_mine=len(done),
            n_left=len(judged_items(rd) - done),
        )

    async def save_label(request: Request, form: FormData) -> Response:
        """Store a labeler's labels of one judged item: a ``dim:JUDGE`` field on the scale
        given for each dimension labelled (at least one). A dimension the labeler labelled on
        that item before: the same value again is skipped, another refused (``unstored``)."""
        run_id = pages.resolve(_required(form, "run"))
        labeler = str(form.get("labeler", "")).strip()
        if not labeler:
            return PlainTextResponse("400: give a labeler name", 400)
        scale = str(form.get("scale", "binary"))
        if scale not in SCALES:
            return PlainTextResponse(f"400: scale must be one of {', '.join(SCALES)}", 400)
        item = _required(form, "item_id")
        rd = pages.run_data(run_id)
        if item not in judged_items(rd):
            raise ConfigError(f"field 'item_id': {item[:80]!r} is no judged item of run {run_id}")
        case_id, k = parse_item_id(item)
        versions = {r.judge: r.judge_version for r in rd.results}
        note = str(form.get("note", ""))
        given = [d for d in sorted(versions) if str(form.get(f"dim:{d}", ""))]
        if not given:
            raise ConfigError(
                f"no label given: label a dimension of run {run_id} (fields "
                + ", ".join(f"dim:{d}" for d in sorted(versions))
                + ")"
            )
        for dim in given:
            value = str(form[f"dim:{dim}"])
            if value not in SCALES[scale]:
                raise ConfigError(
                    f"field 'dim:{dim}': {value[:20]!r} is not on the {scale} scale "
                    f"({', '.join(SCALES[scale])})"
                )
            other = {lab.scale for lab in store.labels(run_id, judge=dim)} - {scale, None}
            if other:
                return PlainTextResponse(
                    f"400: {dim} of run {run_id} is labelled on the {other.pop()} scale; "
                    f"label it on that scale, not {scale}",
                    400,
                )
        rows = [
            StoredLabel(
                run_id=run_id,
                case_id=case_id,
                k=k,
                judge=dim,
                labeler=labeler,
                value=float(str(form[f"dim:{dim}"])),
                raw=str(form[f"dim:{dim}"]),
                scale=scale,
                note=note,
                judge_version=versions.get(dim),
            )
            for dim in given
        ]
        store.add_labels(unstored(store.labels(run_id), rows))
        return RedirectResponse(
            f"/label?run={quote(run_id)}&labeler={quote(labeler)}&scale={scale}", status_code=303
        )

    async def agreement(request: Request) -> Response:
        from ragjudge.calibrate.analyze import analyze
        from ragjudge.calibrate.render import dimension_plots

        p = request.query_params
        run_id = pages.resolve(p["run"]) if p.get("run") else latest()
        stored = store.labels(run_id)
        report, dims = None, []
        if stored:
            source = f"run store {store.location}"
            report = analyze(stored_label_set(stored, source), pages.run_data(run_id))
            dims = [
                {
                    "rep": d,
                    "plots": [(t, b64(png)) for t, png in dimension_plots(d, report.threshold)],
                }
                for d in report.dimensions
            ]
        return page(
            request,
            "agreement.html.j2",
            run_id=run_id,
            labels=stored,
            r=report,
            dims=dims,
            fmt=fmt_value,
            ci=fmt_ci,
        )

    async def export_labels(request: Request) -> Response:
        run_id = pages.resolve(_required(request.query_params, "run"))
        return Response(
            labels_csv(store.labels(run_id)),
            media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="labels-{run_id}.csv"'},
        )

    async def import_labels(request: Request, form: FormData) -> Response:
        import tempfile

        run_id = pages.resolve(_required(form, "run"))
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            return PlainTextResponse("400: choose a CSV file", 400)
        labeler = str(form.get("labeler", "")).strip() or "import"
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "labels.csv"
            path.write_bytes(await upload.read())
            shown = upload.filename or "the uploaded file"
            import_csv(store, pages.run_data(run_id), path, labeler, shown=shown)
        return RedirectResponse(f"/agreement?run={quote(run_id)}", status_code=303)

    async def failure(request: Request, exc: Exception) -> Response:
        return PlainTextResponse(f"{_status(exc)}: {exc}", _status(exc))

    routes = [
        Route("/", runs),
        Route("/runs/{run}", run),
        Route("/runs/{run}/cases", cases),
        Route("/runs/{run}/cases/{case:path}", case),
        Route("/runs/{run}/tag", _posted(csrf, tag), methods=["POST"]),
        Route("/compare", compare),
        Route("/history", history),
        Route("/label", label),
        Route("/label", _posted(csrf, save_label), methods=["POST"]),
        Route("/agreement", agreement),
        Route("/labels.csv", export_labels),
        Route("/labels/import", _posted(csrf, import_labels), methods=["POST"]),
        Mount("/static", StaticFiles(packages=[("ragjudge.ui", "static")]), name="static"),
    ]
    hosts = allowed_hosts or ["127.0.0.1", "localhost"]
    middleware = [
        Middleware(TrustedHostMiddleware, allowed_hosts=hosts),
        Middleware(_Guard, token=token, read_only=read_only),
        Middleware(_Contained),
    ]
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={RagjudgeError: failure},
    )
    app.state.csrf = csrf
    return app
