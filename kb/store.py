"""The graph store: facts as RDF with Wikidata IRIs and labels, in named graphs, asked by SPARQL.

Embedded default: rdflib on an on-disk Oxigraph store. The same class works against any
SPARQL 1.1 endpoint (query URL, plus an update URL to write), through `SparqlEndpoint`.
Named graphs are `urn:kbc:graph:<name>`: `gold-<corpus>` holds exactly the facts of one corpus
version (`ensure_corpus`); extraction and inference add their own. A `meta` graph records what
each graph holds (corpus version and a digest of its triples), so loads happen once and a graph
never mixes versions or holds a sample marked as the whole corpus.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.parse import quote, unquote, urlencode, urlsplit, urlunsplit
from urllib.request import Request

import pyoxigraph as ox
from rdflib import RDFS, Dataset, Literal, URIRef
from rdflib.graph import DATASET_DEFAULT_GRAPH_ID
from rdflib.query import Result

from eval.deadline import OPENER, within
from eval.errors import ConfigError, KbcError
from eval.out_folders import in_data
from eval.types import Entity, Fact
from kb.store_disk import GRAPH_NS, StoreFolder

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
FREEBASE = "http://rdf.freebase.com/ns/"
ENTITY_NS = "urn:kbc:entity:"
LABEL_NS = "urn:kbc:label:"
REL_NS = "urn:kbc:relation:"
LOADED = URIRef("urn:kbc:loaded")  # graph -> "corpus@version" it holds
CONTENT = URIRef("urn:kbc:content")  # graph -> "corpus@version <digest of its triples>"
LOADING = URIRef("urn:kbc:loading")  # graph -> "corpus@version" being written (left behind by a crash)
PREFIXES = f"PREFIX rdfs: <{RDFS}>\nPREFIX wdt: <{WDT}>\n"

_WIKIDATA_ITEM = re.compile(r"Q[0-9]+")
_WIKIDATA_PROPERTY = re.compile(r"P[0-9]+")


def _enc(text: str) -> str:
    """Percent-encode everything but unreserved ASCII, so any id fits in an IRI and in SPARQL."""
    return quote(text, safe="", errors="surrogatepass")


def _dec(text: str) -> str:
    return unquote(text, errors="surrogatepass")


def entity_iri(entity: Entity) -> URIRef:
    """Wikidata IRIs for Q ids, Freebase IRIs for `/m/` ids, else `urn:kbc:` IRIs (label when no id)."""
    return URIRef(_entity_iri_text(entity))


def _entity_iri_text(entity: Entity) -> str:
    eid = entity.id
    if eid and _WIKIDATA_ITEM.fullmatch(eid):
        return WD + eid
    if eid and eid.startswith("/m/"):
        return FREEBASE + "m." + _enc(eid[3:])
    if eid:
        return ENTITY_NS + _enc(eid)
    return LABEL_NS + _enc(entity.label)


def entity_key(iri: str) -> str:
    """The `Entity.key` of an IRI made by `entity_iri` (its exact inverse); other IRIs as they are."""
    if iri.startswith(WD):
        return iri[len(WD):]
    if iri.startswith(FREEBASE + "m."):
        return "/m/" + _dec(iri[len(FREEBASE) + 2:])
    if iri.startswith(ENTITY_NS):
        return _dec(iri[len(ENTITY_NS):])
    if iri.startswith(LABEL_NS):
        return "label:" + _dec(iri[len(LABEL_NS):])
    return iri


def entity_id(iri: str) -> str | None:
    """The `Entity.id` of an IRI made by `entity_iri` (None for an entity known only by its label)."""
    return None if iri.startswith(LABEL_NS) else entity_key(iri)


def relation_iri(relation: str) -> URIRef:
    return URIRef(_relation_iri_text(relation))


def _relation_iri_text(relation: str) -> str:
    if _WIKIDATA_PROPERTY.fullmatch(relation):
        return WDT + relation
    return REL_NS + _enc(relation)


def relation_key(iri: str) -> str:
    """The relation id of an IRI made by `relation_iri`."""
    if iri.startswith(WDT):
        return iri[len(WDT):]
    if iri.startswith(REL_NS):
        return _dec(iri[len(REL_NS):])
    return iri


def graph_iri(name: str) -> URIRef:
    return URIRef(GRAPH_NS + _enc(name))


def corpus_graph(corpus: str) -> str:
    """The graph that holds one corpus's facts, and nothing else."""
    return f"gold-{corpus}"


def fact_quads(facts: Iterable[Fact], graph: str) -> list[tuple]:
    """The (s, p, o, graph IRI) quads that store `facts`: the triple and both labels."""
    g = graph_iri(graph)
    quads = []
    # each entity, label and relation made once: a corpus names the same objects thousands of times
    iris: dict[tuple[str | None, str], URIRef] = {}
    labels: dict[str, Literal] = {}
    relations: dict[str, URIRef] = {}
    for fact in facts:
        sub, obj = fact.subject, fact.object
        s = iris.get((sub.id, sub.label)) or iris.setdefault((sub.id, sub.label), entity_iri(sub))
        o = iris.get((obj.id, obj.label)) or iris.setdefault((obj.id, obj.label), entity_iri(obj))
        p = relations.get(fact.relation) or relations.setdefault(fact.relation, relation_iri(fact.relation))
        quads.append((s, p, o, g))
        quads.append((s, RDFS.label, labels.get(sub.label) or labels.setdefault(sub.label, Literal(sub.label)), g))
        quads.append((o, RDFS.label, labels.get(obj.label) or labels.setdefault(obj.label, Literal(obj.label)), g))
    return quads


def facts_digest(facts: Iterable[Fact]) -> str:
    """A digest of what `fact_quads` writes: equal digests, equal graphs (order and duplicates aside).

    Computed from the facts, not the quads, so checking a loaded corpus stays cheap.
    """
    rows = {repr((_entity_iri_text(f.subject), _relation_iri_text(f.relation), _entity_iri_text(f.object),
                  f.subject.label, f.object.label)) for f in facts}
    return "sha256:" + hashlib.sha256("\n".join(sorted(rows)).encode("utf-8", "surrogatepass")).hexdigest()


def _corpus_of(tag: str) -> str:
    return tag.split("@", 1)[0]


def open_store(location: str | None, update_url: str | None, default_path: Path,
               timeout: float = 30.0, lazy: bool = False) -> GraphStore:
    """The store a command names: an http(s) URL is a SPARQL endpoint, else an on-disk Oxigraph path.

    The arguments are checked here; `lazy` opens an on-disk store only when it is first read or written, so a
    run none of whose predictors reads the store neither creates nor opens its folder.
    """
    if timeout <= 0:
        raise ConfigError(f"--store-timeout must be positive, not {timeout}")
    if location and location.startswith(("http://", "https://")):
        if update_url and not update_url.startswith(("http://", "https://")):
            raise ConfigError(f"--store-update must be an http(s) URL, not {update_url!r}")
        return GraphStore.remote(location, update_url, timeout=timeout)
    if update_url:
        raise ConfigError("--store-update needs --store URL (a SPARQL query endpoint); "
                          f"{location or default_path} is an embedded store")
    path = store_path(location) if location else default_path
    if lazy:
        return GraphStore(None, str(path), opener=lambda: _OnDisk(StoreFolder(path)))
    return GraphStore.open(path)


def store_path(location: str) -> Path:
    """The directory of an embedded store: a path or a `file://` URL, never inside a LAMA data directory.

    The store writes its database files into that directory, and data directories are inputs.
    """
    if "://" in location or location.startswith("file:"):
        parts = urlsplit(location)
        if parts.scheme != "file" or parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise ConfigError(f"--store {location}: use a directory path, a file:///absolute/path URL or an "
                              "http(s):// SPARQL endpoint URL")
        location = unquote(parts.path)
    path = Path(location).expanduser()
    where = in_data(path)
    if where is not None:
        raise ConfigError(f"--store {location} {where}, and a store writes its database files into its directory; "
                          "pass a directory outside the data, or leave --store out to use the cache")
    return path


def _oxigraph_quads(quads: list[tuple]) -> list[ox.Quad] | None:
    """(s, p, o, graph IRI) quads of IRIs and literals as the Oxigraph quads `Dataset.addN` stores for them, built
    directly: rdflib's per-term dispatch costs more than the store's own insert. Each distinct term is converted
    once (a corpus names the same relations, graphs and entities thousands of times). None where any quad holds
    another kind of term (a blank node, a graph object), which `addN` is left to convert."""
    converted: dict[tuple, ox.NamedNode | ox.Literal] = {}
    default_graph = str(DATASET_DEFAULT_GRAPH_ID)

    def oxigraph_term(term: object) -> ox.NamedNode | ox.Literal:
        """An IRI or a literal as `oxrdflib` converts it; ValueError for any other term."""
        kind = type(term)
        if kind is URIRef:
            key: tuple = (str(term),)
        elif kind is Literal:
            key = (str(term), term.language, term.datatype)
        else:
            raise ValueError(term)
        found = converted.get(key)
        if found is None:
            if kind is URIRef:
                if key[0] == default_graph:
                    raise ValueError(term)
                found = ox.NamedNode(key[0])
            else:
                found = ox.Literal(key[0], language=key[1], datatype=ox.NamedNode(key[2]) if key[2] else None)
            converted[key] = found
        return found

    try:
        return [ox.Quad(oxigraph_term(s), oxigraph_term(p), oxigraph_term(o), oxigraph_term(g))
                for s, p, o, g in quads]
    except ValueError:
        return None


def _values(solutions) -> list[tuple]:
    """Each row of Oxigraph's SELECT solutions as the text of its terms (None where unbound)."""
    return [tuple(None if term is None else term.value for term in row) for row in solutions]


def _dataset(store: ox.Store) -> Dataset:
    """An rdflib Dataset over an Oxigraph store. oxrdflib is imported here, at the first read or write: it loads
    rdflib's SPARQL engine, which a run whose predictors read no graph never needs."""
    from oxrdflib import OxigraphStore

    return Dataset(store=OxigraphStore(store=store))


class _Embedded:
    """rdflib Dataset on an in-memory Oxigraph store (scratch work such as a closure)."""

    def __init__(self) -> None:
        self.store = ox.Store()
        self.dataset = _dataset(self.store)

    def select(self, sparql: str) -> list[tuple]:
        return [tuple(row) for row in self.dataset.query(sparql)]

    def select_values(self, sparql: str) -> list[tuple]:
        return _values(self.store.query(sparql))

    def update(self, sparql: str) -> None:
        self.dataset.update(sparql)

    def add_quads(self, quads: list[tuple]) -> None:
        converted = _oxigraph_quads(quads)
        if converted is None:
            self.dataset.addN(quads)
        else:
            self.store.extend(converted)

    def close(self) -> None:
        self.dataset.close()


# from this many quads on, one write goes through Oxigraph's bulk loader (table files written directly) rather
# than a transaction, which holds every quad in memory; a smaller one would leave a table file per write
BULK_QUADS = 10_000


class _OnDisk:
    """The embedded store on disk (`kb.store_disk`): reads the published generation; writes go into a
    copy published when the outermost `writing()` block ends (each write outside one is its own block)."""

    def __init__(self, folder: StoreFolder) -> None:
        self.folder = folder
        self._depth = 0
        self._lock = threading.RLock()  # the explorer asks from several threads
        self._dataset: Dataset | None = None
        self._dataset_of: object = None

    @property
    def dataset(self) -> Dataset:
        store = self.folder.current()
        if self._dataset_of is not store:
            self._forget()
            self._dataset, self._dataset_of = _dataset(store), store
        return self._dataset

    def select(self, sparql: str) -> list[tuple]:
        with self._lock, self._damage():
            return [tuple(row) for row in self.dataset.query(sparql)]

    def select_values(self, sparql: str) -> list[tuple]:
        with self._lock, self._damage():
            return _values(self.folder.current().query(sparql))

    def update(self, sparql: str) -> None:
        with self.writing(), self._damage():
            self.claim()
            self.folder.writable()
            self.dataset.update(sparql)

    def add_quads(self, quads: list[tuple]) -> None:
        with self.writing(), self._damage():
            self.claim()
            self.folder.writable()
            dataset = self.dataset
            converted = _oxigraph_quads(quads)
            if converted is None:
                dataset.addN(quads)
            elif len(converted) >= BULK_QUADS:
                # the writer's own copy, published only when the block ends and dropped if it fails: the bulk
                # loader's lack of transactions costs nothing here, and it writes a corpus several times faster
                self.folder.current().bulk_extend(converted)
            else:
                self.folder.current().extend(converted)

    def claim(self) -> None:
        self.folder.claim()

    def newer_published(self) -> bool:
        return self.folder.newer_published()

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self._lock:
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if not self._depth:
                    self._forget()
                    self.folder.abandon()
                raise
            self._depth -= 1
            if not self._depth:
                self._forget()
                with self._damage():
                    self.folder.publish()

    def _forget(self) -> None:
        """Let go of the database the rdflib wrapper holds (rdflib's own reference cycles would keep a
        written copy open after it is published)."""
        if self._dataset is not None:
            self._dataset.close()
        self._dataset = self._dataset_of = None

    @contextmanager
    def _damage(self) -> Iterator[None]:
        """RocksDB's complaints about its files (a file missing or corrupted) name the store and the fix."""
        try:
            yield
        except (OSError, RuntimeError) as exc:
            text = str(exc)
            if isinstance(exc, OSError) or "Corruption" in text or "IO error" in text:
                raise self.folder.damaged(exc) from None
            raise

    def close(self) -> None:
        self._forget()
        self.folder.close()


_RESULT_TYPES = {
    "application/sparql-results+json": "json",
    "application/json": "json",
    "application/sparql-results+xml": "xml",
    "application/xml": "xml",
    "text/csv": "csv",
    "text/tab-separated-values": "tsv",
}
_TRANSIENT_STATUS = {502, 503, 504}
_TRANSIENT_ERRORS = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)


@dataclass
class SparqlEndpoint:
    """A SPARQL 1.1 Protocol client (query by POST form, update by POST `application/sparql-update`).

    rdflib's own SPARQL connector has no timeout and reports HTTP errors as a generic ValueError;
    this one bounds each request as a whole (connecting, sending, reading the answer) by `timeout`,
    retries transient failures (connection reset, HTTP 502/503/504) with exponential backoff, and
    reports every other failure as a one-line `KbcError` that names the endpoint.
    """

    query_url: str
    update_url: str | None = None
    timeout: float = 30.0
    retries: int = 3
    backoff: float = 0.5
    batch: int = 5000  # triples per INSERT DATA request
    requests: int = field(default=0, init=False)  # HTTP requests sent (attempts included)
    _headers: dict[str, str] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        """`user:password@` in a URL becomes HTTP Basic authentication (urllib would take it for the host)."""
        self.query_url, auth = _split_userinfo(self.query_url)
        if self.update_url:
            self.update_url, update_auth = _split_userinfo(self.update_url)
            auth = auth or update_auth
        if auth:
            self._headers["Authorization"] = "Basic " + base64.b64encode(auth.encode()).decode("ascii")

    def select_values(self, sparql: str) -> list[tuple]:
        return [tuple(None if term is None else str(term) for term in row) for row in self.select(sparql)]

    def select(self, sparql: str) -> list[tuple]:
        ctype, body = self._post(self.query_url, urlencode({"query": sparql}).encode(),
                                 "application/x-www-form-urlencoded",
                                 "application/sparql-results+json, application/sparql-results+xml;q=0.9")
        return self._parse(ctype, body)

    def update(self, sparql: str) -> None:
        if not self.update_url:
            raise KbcError(f"the SPARQL endpoint {self.query_url} is read-only here and this needs to "
                           "write: pass --store-update URL (its SPARQL 1.1 Update endpoint, e.g. "
                           "http://HOST:7878/update for Oxigraph server)")
        self._post(self.update_url, sparql.encode("utf-8"), "application/sparql-update; charset=utf-8", "*/*")

    def add_quads(self, quads: list[tuple]) -> None:
        """INSERT DATA in requests of `batch` triples (one request per triple would take hours)."""
        for start in range(0, len(quads), self.batch):
            by_graph: dict[object, list[str]] = {}
            for s, p, o, *g in quads[start:start + self.batch]:
                by_graph.setdefault(g[0] if g else None, []).append(f"{s.n3()} {p.n3()} {o.n3()} .")
            parts = [("\n".join(lines) if g is None else f"GRAPH {g.n3()} {{\n" + "\n".join(lines) + "\n}")
                     for g, lines in by_graph.items()]
            self.update("INSERT DATA {\n" + "\n".join(parts) + "\n}")

    def close(self) -> None:
        pass

    def _post(self, url: str, data: bytes, content_type: str, accept: str) -> tuple[str, bytes]:
        """(Content-Type, body) of a successful answer, after retrying transient failures."""
        where = f"SPARQL endpoint {url}"
        for attempt in range(self.retries + 1):
            transient = attempt < self.retries
            self.requests += 1
            request = Request(url, data=data, method="POST",
                              headers={"Content-Type": content_type, "Accept": accept, **self._headers})
            try:
                return self._attempt(request)
            except HTTPError as exc:
                if exc.code in _TRANSIENT_STATUS and transient:
                    self._wait(attempt)
                    continue
                detail = _one_line(_read_quietly(exc))
                tries = f" (after {attempt + 1} tries)" if attempt else ""
                raise KbcError(f"{where} answered HTTP {exc.code} {exc.reason}{tries}"
                               + (f": {detail}" if detail else "")) from None
            except URLError as exc:
                reason = exc.reason
                if isinstance(reason, _TRANSIENT_ERRORS) and transient:
                    self._wait(attempt)
                    continue
                raise KbcError(_network_message(where, url, reason, self.timeout, attempt + 1)) from None
            except _TRANSIENT_ERRORS as exc:  # includes http.client.RemoteDisconnected
                if transient:
                    self._wait(attempt)
                    continue
                raise KbcError(_network_message(where, url, exc, self.timeout, attempt + 1)) from None
            except (TimeoutError, OSError, http.client.HTTPException) as exc:
                raise KbcError(_network_message(where, url, exc, self.timeout)) from None
        raise AssertionError("unreachable")

    def _attempt(self, request: Request) -> tuple[str, bytes]:
        """One request, from connecting to the last byte, within `timeout` seconds (`TimeoutError` past it).

        A socket timeout bounds each read only, so a server that sends a byte now and then would
        never time out: the `Deadline` shuts the connection down when the whole request is late.
        """
        def read() -> tuple[str, bytes]:
            with OPENER.open(request, timeout=self.timeout) as answer:
                return answer.headers.get("Content-Type", ""), answer.read()

        return within(self.timeout, read)

    def _wait(self, attempt: int) -> None:
        time.sleep(self.backoff * 2 ** attempt)

    def _parse(self, ctype: str, body: bytes) -> list[tuple]:
        base = ctype.split(";")[0].strip().lower()
        fmt = _RESULT_TYPES.get(base)
        bad = f"the SPARQL endpoint {self.query_url} did not answer with SPARQL results"
        if fmt is None:
            raise KbcError(f"{bad} (Content-Type {base or 'missing'}: {_one_line(body, 80)}); "
                           "is it the query URL of a SPARQL endpoint?")
        try:
            result = Result.parse(BytesIO(body), format=fmt)
            if result.type != "SELECT":
                raise ValueError(f"a {result.type} result")
            return [tuple(row) for row in result]
        except Exception as exc:
            raise KbcError(f"{bad} (unreadable {base}: {_one_line(str(exc).encode(), 120)})") from None




def _read_quietly(exc: HTTPError) -> bytes:
    try:
        return exc.read()
    except Exception:
        return b""


def _one_line(body: bytes, limit: int = 200) -> str:
    text = " ".join(re.sub(r"<[^>]*>", " ", body.decode("utf-8", "replace")).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _split_userinfo(url: str) -> tuple[str, str | None]:
    """(URL without `user:password@`, "user:password" or None)."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=host)), unquote(parts.username) + ":" + unquote(parts.password or "")


def _network_message(where: str, url: str, reason: object, timeout: float, tries: int = 1) -> str:
    host = urlsplit(url).hostname or url
    if isinstance(reason, socket.gaierror):
        return f"{where}: unknown host {host}"
    if isinstance(reason, ConnectionRefusedError):
        return f"{where}: connection refused (is the server running on {urlsplit(url).netloc}?)"
    if isinstance(reason, TimeoutError):
        return f"{where}: no answer within {timeout:g} s (raise --store-timeout for slow servers)"
    if isinstance(reason, _TRANSIENT_ERRORS):
        return f"{where}: connection lost ({type(reason).__name__})" + (f" (after {tries} tries)" if tries > 1 else "")
    text = _one_line(str(reason).encode(), 160) or type(reason).__name__
    return f"{where}: {text}"


Backend = _Embedded | _OnDisk | SparqlEndpoint


class GraphStore:
    def __init__(self, backend: Backend | None, location: str, opener: Callable[[], Backend] | None = None) -> None:
        """`backend`, or None and `opener`, which makes it at the first read or write."""
        self._backend = backend
        self._opener = opener
        self._opening = threading.Lock()  # the explorer asks from several threads
        self.location = location

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            with self._opening:
                if self._backend is None:
                    self._backend = self._opener()
        return self._backend

    @property
    def dataset(self) -> Dataset | None:
        """The rdflib Dataset read now (None for a SPARQL endpoint)."""
        return getattr(self.backend, "dataset", None)

    @classmethod
    def open(cls, path: str | Path | None = None) -> GraphStore:
        """An Oxigraph store on disk at `path` (created if missing), or in memory if None.

        On disk, any number of processes read and write it at once (`kb.store_disk`).
        """
        if path is None:
            return cls(_Embedded(), ":memory:")
        return cls(_OnDisk(StoreFolder(Path(path))), str(path))

    @classmethod
    def remote(cls, query_url: str, update_url: str | None = None, timeout: float = 30.0,
               retries: int = 3, backoff: float = 0.5) -> GraphStore:
        """The same API against a SPARQL 1.1 endpoint (read-only without `update_url`)."""
        endpoint = SparqlEndpoint(query_url, update_url, timeout, retries, backoff)
        return cls(endpoint, endpoint.query_url)

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()

    def newer_published(self) -> bool:
        """Whether another process published a newer state of an on-disk store than the one this handle reads
        (which it keeps reading until reopened); False for a store in memory or behind an endpoint."""
        check = getattr(self._backend, "newer_published", None)
        return bool(check and check())

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Writes inside are one transaction: other processes see all of them, once the block ends, or none."""
        block = getattr(self.backend, "writing", None)
        with block() if block else nullcontext():
            yield

    @contextmanager
    def filling(self, done: Callable[[], bool]) -> Iterator[bool]:
        """A `writing()` block that yields whether to write: not when `done()` holds.

        `done()` is asked again once this process holds the writer lock, so of processes filling
        the same graphs at once one writes and the others then read what it wrote.
        """
        if done():
            yield False
            return
        with self.writing():
            claim = getattr(self.backend, "claim", None)
            if claim is not None:
                claim()
            yield not done()

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- what graphs hold ----------------------------------------------------------------
    def _meta(self, graph: str) -> dict[str, set[str]]:
        rows = self.select(f"SELECT ?p ?v WHERE {{ GRAPH <{graph_iri('meta')}> {{ <{graph_iri(graph)}> ?p ?v }} }}")
        meta: dict[str, set[str]] = {str(LOADED): set(), str(CONTENT): set(), str(LOADING): set()}
        for p, v in rows:
            meta.setdefault(str(p), set()).add(str(v))
        return meta

    def meta(self, graph: str) -> dict[str, set[str]]:
        """What the `meta` graph records about `graph`: predicate IRI -> values."""
        return self._meta(graph)

    def loaded_versions(self, graph: str = "gold") -> set[str]:
        return self._meta(graph)[str(LOADED)]

    def mark_loaded(self, tag: str, graph: str) -> None:
        self.add_quads([(graph_iri(graph), LOADED, Literal(tag), graph_iri("meta"))])

    def drop_graph(self, name: str) -> None:
        """Remove a named graph and all it records about it (so the next `ensure_*` rebuilds it)."""
        self.update(
            f"DROP SILENT GRAPH <{graph_iri(name)}> ; "
            f"DELETE WHERE {{ GRAPH <{graph_iri('meta')}> {{ <{graph_iri(name)}> ?p ?v }} }}"
        )

    # --- writing -------------------------------------------------------------------------
    def ensure_corpus(self, corpus: str, version: str, facts: list[Fact]) -> str:
        """The graph holding exactly `facts` (the whole corpus at `version`), (re)loaded if needed.

        Another version, a different fact set under the same version (a sample) or a load cut
        short replaces the graph's content; the graph is marked only once fully written.
        """
        return self.sync_corpus(corpus, version, facts)[0]

    def ensure_relations(self, corpus: str, versions: dict[str, str],
                         by_relation: dict[str, list[Fact]]) -> dict[str, str]:
        """`ensure_corpus` of each relation's facts (graph `gold-<corpus>-<relation>`), in one transaction."""
        with self.writing():
            return {rel: self.ensure_corpus(f"{corpus}-{rel}", versions[rel], facts)
                    for rel, facts in by_relation.items()}

    def sync_corpus(self, corpus: str, version: str, facts: list[Fact]) -> tuple[str, bool]:
        """`ensure_corpus`, also saying whether it had to (re)load the graph."""
        graph = corpus_graph(corpus)
        return graph, self._ensure(graph, f"{corpus}@{version}", facts, exclusive=True)

    def ensure_facts(self, facts: list[Fact], tag: str, graph: str = "gold") -> bool:
        """Load `facts` under `tag` (corpus@version) into a graph that may hold several corpora.

        Loaded unless the same facts are there under `tag`. A graph holding another version or
        another fact set of the same corpus, or a load cut short, is dropped first, with every
        corpus in it (those reload on their next `ensure_facts`). `ensure_corpus` gives each
        corpus its own graph and avoids that.
        """
        return self._ensure(graph, tag, facts, exclusive=False)

    def _ensure(self, graph: str, tag: str, facts: list[Fact], exclusive: bool) -> bool:
        content = f"{tag} {facts_digest(facts)}"

        def held() -> bool:
            meta = self._meta(graph)
            return tag in meta[str(LOADED)] and content in meta[str(CONTENT)] and not meta[str(LOADING)]

        with self.filling(held) as needed:
            if not needed:
                return False
            meta = self._meta(graph)
            loaded, loading = meta[str(LOADED)], meta[str(LOADING)]
            corpus = _corpus_of(tag)
            if exclusive or loading or any(_corpus_of(v) == corpus for v in loaded):
                self.drop_graph(graph)
            meta_graph, g = graph_iri("meta"), graph_iri(graph)
            self.add_quads([(g, LOADING, Literal(tag), meta_graph)])
            self.add_quads(fact_quads(facts, graph))
            self.add_quads([(g, LOADED, Literal(tag), meta_graph), (g, CONTENT, Literal(content), meta_graph)])
            self.update(f"DELETE WHERE {{ GRAPH <{meta_graph}> {{ <{g}> <{LOADING}> ?v }} }}")
            return True

    def add_facts(self, facts: Iterable[Fact], graph: str = "gold") -> int:
        quads = fact_quads(facts, graph)
        self.add_quads(quads)
        return len(quads) // 3

    def add_quads(self, quads: list[tuple]) -> None:
        """Add (s, p, o, graph IRI) quads as they are (for graphs that are not plain facts)."""
        self.backend.add_quads(quads)

    def update(self, sparql: str) -> None:
        """A SPARQL 1.1 Update request."""
        self.backend.update(PREFIXES + sparql)

    # --- reading -------------------------------------------------------------------------
    def select(self, sparql: str) -> list[tuple]:
        return self.backend.select(PREFIXES + sparql)

    def select_values(self, sparql: str) -> list[tuple]:
        """`select` with each term as its text (IRI, literal value as stored, None where unbound): for reading
        many rows, which rdflib's terms make several times slower."""
        return self.backend.select_values(PREFIXES + sparql)

    def objects(self, subject: Entity, relation: str, graph: str = "gold") -> list[Entity]:
        """Objects of (subject, relation), with labels."""
        rows = self.select(
            f"SELECT DISTINCT ?o ?l WHERE {{ GRAPH <{graph_iri(graph)}> {{ "
            f"<{entity_iri(subject)}> <{relation_iri(relation)}> ?o . OPTIONAL {{ ?o rdfs:label ?l }} }} }}"
        )
        return _entities(rows)

    def subjects(self, relation: str, obj: Entity, graph: str = "gold") -> list[Entity]:
        """Subjects of (relation, object), with labels."""
        rows = self.select(
            f"SELECT DISTINCT ?s ?l WHERE {{ GRAPH <{graph_iri(graph)}> {{ "
            f"?s <{relation_iri(relation)}> <{entity_iri(obj)}> . OPTIONAL {{ ?s rdfs:label ?l }} }} }}"
        )
        return _entities(rows)

    def pairs(self, relation: str, graph: str = "gold") -> Iterator[tuple[str, str, str]]:
        """(subject key, object key, object label) of every triple of `relation`."""
        rows = self.select(
            f"SELECT ?s ?o ?l WHERE {{ GRAPH <{graph_iri(graph)}> {{ "
            f"?s <{relation_iri(relation)}> ?o . OPTIONAL {{ ?o rdfs:label ?l }} }} }}"
        )
        for s, o, label in rows:
            yield entity_key(str(s)), entity_key(str(o)), str(label) if label is not None else ""

    def valid_objects(self, relation: str, graph: str = "gold") -> dict[str, set[str]]:
        """All valid object labels per subject key: what the `filtered` setting removes."""
        valid: dict[str, set[str]] = {}
        for s, _, label in self.pairs(relation, graph):
            valid.setdefault(s, set()).add(label)
        return valid

    def graph_names(self, prefix: str = "") -> list[str]:
        """Names of the named graphs that hold triples (`gold-trex`, `re-oracle`, ...), sorted."""
        rows = self.select("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
        names = [_dec(str(g)[len(GRAPH_NS):]) for (g,) in rows if str(g).startswith(GRAPH_NS)]
        return sorted(n for n in names if n != "meta" and n.startswith(prefix))

    def count(self, graph: str = "gold") -> int:
        rows = self.select(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph_iri(graph)}> {{ ?s ?p ?o }} }}")
        return int(rows[0][0])

    def relations(self, graph: str = "gold") -> dict[str, int]:
        rows = self.select(
            f"SELECT ?p (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph_iri(graph)}> {{ ?s ?p ?o }} "
            f"FILTER(?p != rdfs:label) }} GROUP BY ?p"
        )
        return {relation_key(str(p)): int(n) for p, n in rows}


def _entities(rows: list[tuple]) -> list[Entity]:
    out = []
    for iri, label in rows:
        out.append(Entity(str(label) if label is not None else entity_key(str(iri)), entity_id(str(iri))))
    return out
