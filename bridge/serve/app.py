"""The FastAPI app: HTML pages and the JSON API over one `Explorer` (and the runs it browses).

Pages and API render the same objects (`sides.answer_many`, `runs.fact_page`). User errors become 4xx
JSON `{"detail": "..."}` from the API (400 bad input, 404 unknown run or fact) and an HTML page saying the same
from the pages (404 for an unknown run, fact or relation filter); a run a `kbc run` is writing to is 503, "being
written", with nothing read of it meanwhile shown (`read_steadily`). Answering runs on the explorer's
own thread, whatever thread the request came in on; queries arriving together are answered as one
batch (`batching.Batcher`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated
from urllib.parse import quote, urlencode

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import BeforeValidator

from bridge.cli.fact_lines import gold_ranks_text
from bridge.run.freshness import read_steadily
from bridge.run.run_lock import BeingWritten
from bridge.serve import runs as run_views
from bridge.serve.batching import Batcher
from bridge.serve.explorer import Explorer
from bridge.serve.runs import Runs
from bridge.serve.sides import K_MAX, Ask, answer_many, check, suggest
from eval.cells import count_of, fixed, parameters_text
from eval.errors import KbcError
from eval.user_values import strict_int

HERE = Path(__file__).resolve().parent


def _whole(value):
    """A number in a query string read as `kbc` reads numbers: ASCII digits only (not ` 3`, `1_0`, `+3`)."""
    return strict_int(value) if isinstance(value, str) else value


WholeNumber = Annotated[int, BeforeValidator(_whole)]


def _detail(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err.get("loc", ())[1:]) or "request"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def create_app(explorer: Explorer, runs: Runs | None = None) -> FastAPI:
    app = FastAPI(title="kbcompare explorer", version="1",
                  description="Every KB and LM answer to one factual query, side by side; and finished runs.")
    app.state.explorer = explorer
    app.state.runs = runs or Runs([])
    batcher = Batcher(explorer, lambda asks: answer_many(explorer, asks))
    templates = Jinja2Templates(directory=str(HERE / "templates"))  # autoescapes .html
    templates.env.filters["qs"] = lambda params: urlencode({k: v for k, v in params.items() if v not in (None, "")})
    # one path segment: Jinja's urlencode keeps "/", so a uid from the data ("a/b", "../x") made another path
    templates.env.filters["segment"] = lambda value: quote(str(value), safe="")
    templates.env.filters["params"] = parameters_text
    templates.env.filters["gold_ranks"] = gold_ranks_text  # the words `kbc show` prints: exact ranks too
    templates.env.filters["fixed"] = fixed  # `{{ v|fixed(3) }}`: a score as every text table shows it
    templates.env.filters["count_of"] = count_of  # `{{ n|count_of('relations') }}`: '1 relation', '2 relations'
    templates.env.filters["short"] = lambda spec: "/".join(str(spec).rstrip("/").split("/")[-2:])
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    @app.exception_handler(KbcError)
    async def _user_error(request: Request, exc: KbcError):
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": str(exc)}, status_code=400)
        # a page answers with a page: e.g. a browsed run whose records were edited while it is served
        return page(request, "error.html", 400, error=str(exc), heading="Cannot show this")

    @app.exception_handler(BeingWritten)
    async def _being_written(request: Request, exc: BeingWritten):
        # a run a `kbc run` writes to (or changed while it was read): said so, nothing read of it shown or kept
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": str(exc), "being_written": True}, status_code=503)
        return page(request, "error.html", 503, error=str(exc), heading="This run is being written",
                    hint="Reload this page when that run ends.")

    @app.exception_handler(LookupError)
    async def _not_found(request: Request, exc: LookupError):
        detail = str(exc.args[0]) if exc.args else "not found"
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": detail}, status_code=404)
        return page(request, "error.html", 404, error=detail, heading="Not found")

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": _detail(exc)}, status_code=422)
        # a page answers with a page: an edited URL (`?k=ten`) reads as a message, not as JSON
        return page(request, "error.html", 422, error=_detail(exc), heading="Cannot show this")

    def ask(subject: str, relation: str, cloze: str, k: int, run: str = "") -> dict:
        """The answers; with `run` (the run page that links here), whether that run was made from other data for
        the relation asked (`other_data`), so its recorded fact is not read as this live one."""
        loaded = app.state.runs.get(run) if run else None
        checked = check(Ask(subject=subject, relation=relation, cloze=cloze, k=k), explorer)
        result = batcher.ask(checked)
        if loaded is None:
            return result
        other = run_views.other_data(loaded, explorer)
        asked = result.get("query", {}).get("relation")
        return {**result, "run": {"name": loaded.name,
                                  "other_data": other if other and asked in other["relations"] else None,
                                  "prompts": steadily(loaded, lambda: run_views.prompts_note(loaded, result))}}

    def with_other_data(loaded, body: dict) -> dict:
        return {**body, "other_data": run_views.other_data(loaded, explorer)}

    def steadily(loaded, read):
        """`read()` of a browsed run's files, refused (`BeingWritten`) where a `kbc run` took its lock or changed its
        files meanwhile: a page shows all it read of one state of the run, or none of it."""
        return read_steadily([loaded.run.path], read)

    # --- JSON API -------------------------------------------------------------------------------
    @app.get("/api/query", summary="Every side's answers to one query")
    def api_query(subject: str = "", relation: str = "", cloze: str = "", k: WholeNumber = 10, run: str = "") -> dict:
        """`subject` + `relation` (a relation id such as P19), or `cloze` with one [MASK]; `k` answers per side;
        `run`: a browsed run, whose `other_data` for the relation asked is said under `run`."""
        return ask(subject, relation, cloze, k, run)

    @app.get("/api/suggest", summary="Subject labels of the gold KB starting with a prefix")
    def api_suggest(prefix: str = "", limit: WholeNumber = 10) -> dict:
        if not 1 <= limit <= 50:
            raise KbcError(f"limit={limit}: must be between 1 and 50")
        return {"prefix": prefix, "labels": explorer.call(suggest, explorer, prefix, limit)}

    @app.get("/api/relations", summary="The relations a query can ask")
    def api_relations() -> dict:
        return {"corpus": explorer.corpus.name,
                "relations": [{"id": r.id, "label": r.label, "template": r.template, "type": r.type}
                              for r in explorer.relations.values()]}

    @app.get("/api/status", summary="What is configured")
    def api_status() -> dict:
        return {**explorer.describe(), "runs": list(app.state.runs.runs)}

    @app.get("/api/runs", summary="The runs being browsed")
    def api_runs() -> dict:
        return {"runs": app.state.runs.listing()}

    @app.get("/api/leaderboard", summary="Every predictor of every browsed run, best first, with intervals")
    def api_leaderboard(corpus: str = "", metric: str = "", setting: str = "raw", scope: str = "shared",
                        experiment: str = "", run: Annotated[list[str] | None, Query()] = None) -> dict:
        """Runs of one experiment (`experiment`, else the first run's; `run`: only these); `experiments` lists
        each one's runs; `notes` says what the scope left out."""
        return run_views.leaderboard(app.state.runs, corpus or None, metric or None, _setting(setting),
                                     _scope(scope), experiment or None, run)

    @app.get("/api/runs/{name}", summary="A run's summary table and per-relation scores")
    def api_run(name: str, setting: str = "raw") -> dict:
        loaded = app.state.runs.get(name)
        return steadily(loaded, lambda: with_other_data(loaded, run_views.overview(loaded, _setting(setting))))

    @app.get("/api/runs/{name}/facts", summary="One page of a run's facts, filtered by relation and outcome")
    def api_run_facts(name: str, relation: str = "", outcome: str = "all", a: str = "", b: str = "",
                      page: WholeNumber = 1, per_page: WholeNumber = 50, setting: str = "raw") -> dict:
        loaded = app.state.runs.get(name)
        return steadily(loaded, lambda: run_views.fact_page(loaded, relation or None, outcome, a or None, b or None,
                                                            page, per_page, _setting(setting)))

    @app.get("/api/runs/{name}/facts/{uid:path}", summary="One fact of a run across every predictor")
    def api_run_fact(name: str, uid: str) -> dict:
        loaded = app.state.runs.get(name)
        return steadily(loaded, lambda: with_other_data(loaded, run_views.fact_detail(loaded, uid)))

    # --- pages ----------------------------------------------------------------------------------
    def page(request: Request, template: str, status: int = 200, **context) -> HTMLResponse:
        return templates.TemplateResponse(request, template, {"explorer": explorer, "runs": app.state.runs,
                                                              "k_max": K_MAX, **context}, status_code=status)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request, subject: str = "", relation: str = "", cloze: str = "", k: WholeNumber = 10,
              run: str = ""):
        form = {"subject": subject, "relation": relation, "cloze": cloze, "k": k, "run": run}
        if not (subject or cloze or relation):  # a landing page with somewhere to go: examples and the runs
            return page(request, "index.html", form=form, result=None, error=None, examples=explorer.examples(),
                        listing=app.state.runs.listing())
        try:
            result = ask(subject, relation, cloze, k, run)
        except BeingWritten:
            raise
        except KbcError as exc:
            return page(request, "index.html", 400, form=form, result=None, error=str(exc))
        return page(request, "index.html", form=form, result=result, error=None)

    @app.get("/runs", response_class=HTMLResponse, include_in_schema=False)
    def runs_page(request: Request):
        return page(request, "runs.html", listing=app.state.runs.listing())

    @app.get("/leaderboard", response_class=HTMLResponse, include_in_schema=False)
    def leaderboard_page(request: Request, corpus: str = "", metric: str = "", setting: str = "raw",
                         scope: str = "shared", experiment: str = "", run: Annotated[list[str] | None, Query()] = None):
        run = run or []
        form = {"corpus": corpus, "metric": metric, "setting": setting, "scope": scope, "run": run}
        try:
            board = run_views.leaderboard(app.state.runs, corpus or None, metric or None, _setting(setting),
                                          _scope(scope), experiment or None, run)
        except BeingWritten:
            raise
        except KbcError as exc:
            choices = None  # the pickers stay where they can, so another choice is one click away
            for wanted in dict.fromkeys((experiment or None, None)):
                try:
                    choices = run_views.board_choices(app.state.runs, wanted)
                    break
                except KbcError:
                    continue
            return page(request, "leaderboard.html", 400, board=None, error=str(exc), choices=choices, form=form)
        return page(request, "leaderboard.html", board=board, error=None, choices=board, form=form)

    @app.get("/runs/{name}", response_class=HTMLResponse, include_in_schema=False)
    def run_page(request: Request, name: str, relation: str = "", outcome: str = "all", a: str = "",
                 b: str = "", page_no: Annotated[WholeNumber, Query(alias="page")] = 1, per_page: WholeNumber = 50,
                 setting: str = "raw"):
        loaded = app.state.runs.get(name)
        filters = {"relation": relation, "outcome": outcome, "a": a, "b": b, "per_page": per_page,
                   "setting": setting}

        def read() -> tuple[dict, dict | None]:
            info = with_other_data(loaded, run_views.overview(loaded, _setting(setting)))
            return info, (run_views.fact_page(loaded, relation or None, outcome, a or None, b or None, page_no,
                                              per_page, info["setting"]) if info["has_facts"] else None)

        try:
            info, facts = steadily(loaded, read)
        except run_views.UnknownRelation as exc:
            return page(request, "error.html", 404, error=str(exc), heading="Not found")
        except BeingWritten:
            raise
        except KbcError as exc:
            return page(request, "run.html", 400, info=None, facts=None, filters=filters, error=str(exc),
                        name=name, run_asked=run_views.asked_line(loaded))
        return page(request, "run.html", info=info, facts=facts, filters=filters, error=None, name=name,
                    run_asked=run_views.asked_line(loaded))

    @app.get("/runs/{name}/facts/{uid:path}", response_class=HTMLResponse, include_in_schema=False)
    def fact_page(request: Request, name: str, uid: str):
        loaded = app.state.runs.get(name)
        fact = steadily(loaded, lambda: with_other_data(loaded, run_views.fact_detail(loaded, uid)))
        return page(request, "fact.html", fact=fact, name=name, run_asked=run_views.asked_line(loaded))

    return app


def _setting(value: str) -> str:
    if value not in ("raw", "filtered"):
        raise KbcError(f"setting={value!r}: use raw or filtered")
    return value


def _scope(value: str) -> str:
    from bridge.run.leaderboard import SCOPES

    if value not in SCOPES:
        raise KbcError(f"scope={value!r}: use {' or '.join(SCOPES)}")
    return value
