"""The inspector as a Starlette app: every page has a JSON twin under ``/api`` (same path,
same query), so what a page shows can be scripted or tested without a browser.

    /search            the Search lab             /api/search
    /source/KB/PATH    a file, cited lines lit    /api/source/KB/PATH
    /index[/KB]        files, skips, versions     /api/index[/KB]
    /runs[/ID]         recorded runs              /api/runs[/ID]
    /runs/thread/ID    a thread of this server    /api/runs/thread/ID   (mounted only)
    /evals[/NAME[/rows/ID]]  eval reports         /api/evals/...

Restoring a version is the one write: ``POST /index/KB/restore`` with the page's token
(``POST /api/index/KB/restore`` with the ``X-Kbgraph-Token`` header), after a confirmation
page. Disk and model work runs in worker threads, never on the event loop.
"""

from __future__ import annotations

import importlib.resources
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from kbgraph.errors import ConfigError, IndexNotFoundError, KbgraphError
from kbgraph.graphs._internal import list_runs, read_run

from . import _evals, _index, _lab, _runs, _why
from ._config import InspectorConfig
from ._evals_view import render_report, render_report_list, render_row
from ._guard import TOKEN_HEADER, Guard, token_matches
from ._html import el, link, page, url
from ._lab_view import render_form, render_lab
from ._sources import RefusedPath, parse_lines, render_source, source_href, source_text

ASSETS = {
    "inspector.css": "text/css; charset=utf-8",
    "inspector.js": "text/javascript; charset=utf-8",
}
_THREAD_ID = re.compile(r"[0-9A-Za-z-]{1,80}")
Handler = Callable[[Request], Awaitable[Response]]


class Inspector:
    """The handlers, over one :class:`InspectorConfig`."""

    def __init__(self, config: InspectorConfig) -> None:
        self.config = config
        self.assets = {
            name: importlib.resources.files(__package__).joinpath("assets", name).read_bytes()
            for name in ASSETS
        }

    # -- helpers ---------------------------------------------------------------------
    def kb(self, name: str) -> Any:
        from kbgraph.graphs import open_knowledge_base

        base = self.config.base(name)
        spec = None if self.config.embedding.strip().lower() == "none" else self.config.embedding
        return open_knowledge_base(base.folder, spec, base.store, index_dir=base.index_dir)

    @staticmethod
    def root(request: Request) -> str:
        return str(request.scope.get("root_path") or "")

    def source_link(self, request: Request, folders: Mapping[str, str] | None = None) -> Any:
        """A citation's Source view URL, or None when its knowledge base is not served
        here. ``folders``: the run's own knowledge bases (name → folder); a citation of one
        of them links to the served knowledge base of that folder, whatever its name here."""
        served = {kb.name: str(kb.folder) for kb in self.config.knowledge_bases}
        by_folder = {folder: name for name, folder in served.items()}
        root = self.root(request)

        def href(c: Mapping[str, Any]) -> str | None:
            name = str(c.get("kb") or "")
            if folders and name in folders:
                name = by_folder.get(folders[name], "")
            elif not name and len(served) == 1:
                name = next(iter(served))
            if name not in served:
                return None
            return source_href(
                root,
                name,
                str(c.get("source") or ""),
                c.get("line_start"),
                c.get("line_end"),
                c.get("page"),
            )

        return href

    def html(
        self, request: Request, title: str, body: Any, active: str, status: int = 200
    ) -> HTMLResponse:
        return HTMLResponse(page(title, body, base=self.root(request), active=active), status)

    # -- search lab ------------------------------------------------------------------
    def _lab(self, query: _lab.LabQuery) -> tuple[dict[str, Any], dict[str, Any] | None]:
        settings = _lab.lab_settings(self.config, query)
        state = _lab.run_subgraph(settings, query)
        report = _lab.lab_report(state, settings, query)
        bases = _lab.chosen_bases(self.config, query)
        report["freshness"] = _lab.freshness(bases, lambda kb: self.kb(kb.name))
        why = None
        if query.why:
            why = _why.why_not(query.why, state, settings, lambda kb: self.kb(kb.name))
        return report, why

    def _files(self) -> list[str]:
        files: list[str] = []
        for base in self.config.knowledge_bases:
            try:
                files += list(self.kb(base.name).indexed_files())
            except KbgraphError:
                continue
        return files[:2000]

    async def search(self, request: Request) -> Response:
        query = _lab.LabQuery.from_params(_params(request))
        if _is_api(request, self):
            if not query.text:
                raise ConfigError("give the query as ?q=...")
            report, why = await run_in_threadpool(self._lab, query)
            return JSONResponse({**report, "why": why})
        names = [kb.name for kb in self.config.knowledge_bases]
        form = render_form(
            query.to_dict(),
            names,
            await run_in_threadpool(self._files),
            url(self.root(request), "/search"),
        )
        if not query.text:
            return self.html(request, "Search lab", form, "search")
        report, why = await run_in_threadpool(self._lab, query)
        body = [form, render_lab(report, self.source_link(request), why)]
        return self.html(request, "Search lab", body, "search")

    # -- source ----------------------------------------------------------------------
    def _source(self, name: str, rel: str, page_no: int | None) -> Any:
        base, kb = self.config.base(name), self.kb(name)
        scan = kb.scan_config
        indexed = kb.indexed_files()
        return source_text(
            name, base.folder, rel, indexed, page_no, limit=scan.max_file_bytes, scan=scan
        )

    async def source(self, request: Request) -> Response:
        name, rel = request.path_params["kb"], request.path_params["path"]
        start, end = parse_lines(request.query_params.get("lines"))
        page_no = _int(request.query_params.get("page"))
        text = (await run_in_threadpool(self._source, name, rel, page_no)).around(start)
        if _is_api(request, self):
            return JSONResponse(text.to_dict(start, end))
        body = render_source(text, start, end, self.root(request))
        return self.html(request, f"{name}: {rel}", body, "")

    # -- index -----------------------------------------------------------------------
    def _index_views(self, name: str | None) -> list[dict[str, Any]]:
        bases = [self.config.base(name)] if name else list(self.config.knowledge_bases)
        return [_index.index_view(base, self.kb(base.name)) for base in bases]

    async def index(self, request: Request) -> Response:
        name = request.path_params.get("kb")
        views = await run_in_threadpool(self._index_views, name)
        if _is_api(request, self):
            return JSONResponse(views[0] if name else {"knowledge_bases": views})
        root = self.root(request)

        def href(kb: str, path: str) -> str:
            return source_href(root, kb, path)

        restored = request.query_params.get("restored")
        notice = el("p", f"Restored generation {restored}.", class_="notice", role="status")
        body = [notice if restored else None, [_index.render_index(v, root, href) for v in views]]
        return self.html(request, "Index", body, "index")

    def _version(self, name: str, generation: str) -> dict[str, Any]:
        for version in self.kb(name).versions():
            if version.name == generation:
                found: dict[str, Any] = version.to_dict()
                return found
        raise ConfigError(f"{name} keeps no generation {generation!r}; see its Index view")

    async def restore_confirm(self, request: Request) -> Response:
        name = request.path_params["kb"]
        generation = request.query_params.get("generation") or ""
        version = await run_in_threadpool(self._version, name, generation)
        body = _index.render_restore_confirm(name, version, self.root(request), self.config.token)
        return self.html(request, f"Restore {name}?", body, "index")

    async def restore(self, request: Request) -> Response:
        name = request.path_params["kb"]
        api = _is_api(request, self)
        if api:
            given = request.headers.get(TOKEN_HEADER)
            generation = str((await _json_body(request)).get("generation") or "")
        else:
            form = await _form_body(request)
            given, generation = form.get("token", ""), form.get("generation", "")
        if not token_matches(given, self.config):
            return _refused(
                request,
                self,
                403,
                "this action needs the page's token; reload the Index view and confirm again",
            )
        await run_in_threadpool(self._version, name, generation)
        info = await run_in_threadpool(self.kb(name).restore, generation)
        if api:
            return JSONResponse(info.to_dict())
        target = url(self.root(request), f"/index/{name}", restored=info.name)
        return RedirectResponse(target, status_code=303)

    # -- runs ------------------------------------------------------------------------
    async def runs(self, request: Request) -> Response:
        runs = await run_in_threadpool(list_runs, self.config.runs_dir)
        threads = await self._threads() if self.config.threads else []
        if _is_api(request, self):
            return JSONResponse(
                {"runs": runs, "threads": threads, "runs_dir": str(self.config.runs_dir)}
            )
        root = self.root(request)
        body: list[Any] = [
            el(
                "p",
                f"Recorded in {self.config.runs_dir}. Record a run with `kbgraph ask "
                "--record` or RagSettings(record_runs=True).",
                class_="muted",
            ),
            _runs.render_run_list(runs, lambda r: url(root, f"/runs/{r['id']}")),
        ]
        if self.config.threads:
            body += [
                el("h2", "Threads of this server"),
                _runs.render_run_list(threads, lambda r: url(root, f"/runs/thread/{r['id']}")),
            ]
        return self.html(request, "Runs", body, "runs")

    async def _threads(self) -> list[dict[str, Any]]:
        from langgraph_sdk import get_client

        found = await get_client().threads.search(limit=20)
        return [_runs.thread_record(str(t["thread_id"]), t, t) for t in found]

    async def run(self, request: Request) -> Response:
        thread_id = request.path_params.get("thread_id")
        if thread_id is not None:
            record = await self._thread(thread_id)
        else:
            record = await run_in_threadpool(
                read_run, request.path_params["run_id"], self.config.runs_dir
            )
        what = f"run {record.get('id')}"
        view = _runs.well_formed(what, lambda: _runs.run_view(record))
        if _is_api(request, self):
            return JSONResponse(view)
        bases = [kb for kb in record.get("knowledge_bases") or [] if isinstance(kb, dict)]
        folders = {str(kb.get("name")): str(kb.get("folder")) for kb in bases}
        link = self.source_link(request, folders)
        body = _runs.well_formed(what, lambda: _runs.render_run(view, link))
        return self.html(request, f"Run {view.get('id')}", body, "runs")

    async def _thread(self, thread_id: str) -> dict[str, Any]:
        if not self.config.threads:
            raise ConfigError(
                "threads are shown when the inspector is mounted in the LangGraph "
                "server (langgraph dev): open /kbgraph/inspect there"
            )
        if not _THREAD_ID.fullmatch(thread_id):
            raise ConfigError(f"{thread_id!r} is not a thread id")
        from langgraph_sdk import get_client

        client = get_client()
        try:
            thread = await client.threads.get(thread_id)
            state = await client.threads.get_state(thread_id)
            runs = await client.runs.list(thread_id, limit=1)
        except Exception as exc:  # the SDK's own HTTP errors: not found, mostly
            raise ConfigError(f"no thread {thread_id} on this server ({exc})") from exc
        record = _runs.thread_record(thread_id, state, thread)
        latest: dict[str, Any] = dict(runs[0]) if runs else {}
        context = (latest.get("kwargs") or {}).get("context") or {}
        record["knowledge_bases"] = _runs.context_knowledge_bases(context)
        return record

    # -- evals -----------------------------------------------------------------------
    async def evals(self, request: Request) -> Response:
        refs = await run_in_threadpool(_evals.report_list, self.config.eval_dirs)
        if _is_api(request, self):
            return JSONResponse({"reports": refs})
        return self.html(
            request, "Eval reports", render_report_list(refs, self.root(request)), "evals"
        )

    async def eval_report(self, request: Request) -> Response:
        ref = _evals.find(self.config.eval_dirs, request.path_params["slug"])
        view = await run_in_threadpool(_evals.report_view, ref)
        if _is_api(request, self):
            return JSONResponse(view)
        body = render_report(view, self.root(request))
        return self.html(request, f"Eval report {ref.slug}", body, "evals")

    async def eval_row(self, request: Request) -> Response:
        ref = _evals.find(self.config.eval_dirs, request.path_params["slug"])
        view = await run_in_threadpool(_evals.row_view, ref, request.path_params["row_id"])
        if _is_api(request, self):
            return JSONResponse(view)
        back = link(url(self.root(request), f"/evals/{ref.slug}"), f"← {ref.slug}")
        row = _runs.well_formed(
            f"row {view['id']!r} of {ref.slug}",
            lambda: render_row(view, self.source_link(request)),
        )
        body = [el("p", back), row]
        return self.html(request, f"{ref.slug}: {view['id']}", body, "evals")

    # -- plumbing --------------------------------------------------------------------
    async def asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in self.assets:
            return Response("not found", 404, media_type="text/plain")
        return Response(self.assets[name], media_type=ASSETS[name])

    async def home(self, request: Request) -> Response:
        return RedirectResponse(url(self.root(request), "/search"), status_code=307)


def _params(request: Request) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in request.query_params.multi_items():
        out.setdefault(key, []).append(value)
    return out


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def _is_api(request: Request, app: Inspector) -> bool:
    return request.url.path.startswith(app.root(request) + "/api/")


async def _json_body(request: Request) -> dict[str, Any]:
    try:
        data = json.loads(await request.body() or b"{}")
    except ValueError as exc:
        raise ConfigError(f"the body is not JSON ({exc})") from exc
    return data if isinstance(data, dict) else {}


async def _form_body(request: Request) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body (the confirmation form's), the last
    value of each field; no multipart parser is needed for it."""
    body = (await request.body())[:65536].decode("utf-8", "replace")
    return {key: values[-1] for key, values in parse_qs(body).items()}


def _refused(request: Request, app: Inspector, status: int, message: str) -> Response:
    if _is_api(request, app):
        return JSONResponse({"detail": message}, status)
    titles = {400: "Not possible", 403: "Refused", 404: "Not found"}
    return app.html(
        request, titles.get(status, "Error"), el("p", message, class_="error"), "", status
    )


def _guarded(app: Inspector, handler: Handler) -> Handler:
    """A handler whose kbgraph errors become a 4xx page (or JSON) saying what was wrong."""

    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except RefusedPath as exc:
            return _refused(request, app, 403, str(exc))
        except IndexNotFoundError as exc:
            return _refused(request, app, 404, str(exc))
        except KbgraphError as exc:
            return _refused(request, app, 400, str(exc))

    return run


def create_app(config: InspectorConfig) -> Starlette:
    """The inspector over ``config`` (mount it anywhere: links follow the mount path)."""
    app = Inspector(config)
    pages: list[tuple[str, Handler, list[str]]] = [
        ("/search", app.search, ["GET"]),
        ("/source/{kb}/{path:path}", app.source, ["GET"]),
        ("/index", app.index, ["GET"]),
        ("/index/{kb}", app.index, ["GET"]),
        ("/runs", app.runs, ["GET"]),
        ("/runs/thread/{thread_id}", app.run, ["GET"]),
        ("/runs/{run_id}", app.run, ["GET"]),
        ("/evals", app.evals, ["GET"]),
        ("/evals/{slug}", app.eval_report, ["GET"]),
        ("/evals/{slug}/rows/{row_id}", app.eval_row, ["GET"]),
        ("/index/{kb}/restore", app.restore, ["POST"]),
    ]
    routes = [
        Route("/", app.home),
        Route("/assets/{name}", app.asset),
        Route("/index/{kb}/restore", _guarded(app, app.restore_confirm), methods=["GET"]),
    ]
    for path, handler, methods in pages:
        routes.append(Route(path, _guarded(app, handler), methods=methods))
        routes.append(Route("/api" + path, _guarded(app, handler), methods=methods))
    return Starlette(routes=routes, middleware=[Middleware(Guard, config=config)])


__all__ = ["ASSETS", "Inspector", "create_app"]
