"""The Elasticsearch backend, through the official `elasticsearch` client.

One shard (so BM25 statistics are global and scores equal tantivy's), the shared pattern
analyzer, bulk indexing, `match_phrase` for mentions, `_count`/`_msearch` for counts and
`search_after` paging for result sets of any size. `location` is an alias: a build fills a new
concrete index and swaps the alias in one `_aliases` call, so readers never see a half index.
Builds of one alias on one server run one at a time (`build_lock`, a file in the cache), as tantivy
builds of one folder do: two at once would each read the old alias and one would fail at its swap.
An unreachable server gives one clear line, after the client's retries; every request ends
within its timeout, answer included (`eval.deadline`), however slowly a server trickles bytes.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

from eval.deadline import Deadline, watching
from eval.errors import ConfigError, DataError, KbcError
from kb.text.analyzer import NAME as ANALYZER
from kb.text.analyzer import PATTERN, es_analysis, term_counts
from kb.text.base import Hit, Mention
from kb.text.index import ES_TIMEOUT as TIMEOUT
from kb.text.paragraphs import ContentDigest, Paragraph, index_fingerprint
from kb.writer_lock import WriterLock

PAGE = 5_000
BULK_CHUNK = 1_000
MSEARCH_CHUNK = 200
TIMEOUT_HINT = "raise --es-timeout, or --set es_timeout=SECONDS in `kbc run`, for slow servers"
MAPPINGS = {
    "dynamic": "strict",
    "properties": {
        "pid": {"type": "keyword"},
        "title": {"type": "keyword"},
        "para": {"type": "integer"},
        "text": {"type": "text", "analyzer": ANALYZER},
        "links": {"type": "keyword"},
        "facts": {"type": "keyword", "index": False},
    },
}


class ESUnavailable(KbcError):
    """The Elasticsearch server cannot be reached."""


class _Late(Exception):
    """A request outlived its deadline (no transport error: the client must not retry it)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.seconds = seconds


def _node_class():
    """The client's default node, with each request (connecting to the last byte) bounded by its timeout.

    urllib3's read timeout bounds each read only: a server sending a byte a second would hold a
    request forever.
    """
    from elastic_transport import Urllib3HttpNode
    from elastic_transport.client_utils import DEFAULT

    class DeadlineNode(Urllib3HttpNode):
        def __init__(self, config) -> None:
            super().__init__(config)
            self.pool.ConnectionCls = watching(self.pool.ConnectionCls)

        def perform_request(self, method, target, body=None, headers=None, request_timeout=DEFAULT):
            seconds = self.config.request_timeout if request_timeout is DEFAULT else request_timeout
            if seconds is None:
                return super().perform_request(method, target, body, headers, request_timeout)
            deadline = Deadline(seconds)
            try:
                with deadline:
                    response = super().perform_request(method, target, body, headers, request_timeout)
            except Exception:
                if deadline.expired:
                    raise _Late(seconds) from None
                raise
            if deadline.expired:  # a body without a length may end early at the shutdown: never use part of it
                raise _Late(seconds)
            return response

    return DeadlineNode


def check_url(url: str) -> str:
    """`url` if it is an http(s) URL with a host; a ConfigError naming the expected form otherwise."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port out of range)
    except ValueError as exc:
        raise ConfigError(f"Elasticsearch URL {url!r} is not valid ({exc}); "
                          "expected e.g. http://127.0.0.1:9200") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"Elasticsearch URL {url!r} is not an http(s) URL with a host; "
                          "expected e.g. http://127.0.0.1:9200")
    return url


def build_lock(url: str, name: str) -> WriterLock:
    """The lock one build of the index `name` at `url` holds at a time: a file in the cache, named by both."""
    from eval.datadir import cache_root

    folder = cache_root() / "index" / "elasticsearch-builds"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create {folder} (the lock of Elasticsearch index builds): {exc.strerror}; point "
                          "KBC_CACHE at a writable directory") from None
    key = hashlib.sha256(f"{url.rstrip('/')}\n{name}".encode()).hexdigest()[:16]
    return WriterLock(folder / f"{key}.lock", folder / f"{key}.json",
                      f"the text index {url.rstrip('/')}/{name} is being built", "or use another index name",
                      "wait for it to finish, or use another index name: --out NAME")


def connect(url: str, timeout: float = TIMEOUT, retries: int = 3):
    """A client for `url`, checked with one request so an unreachable server fails here, clearly.

    Connection failures are retried; a request past `timeout` is not (the bound holds in all).
    """
    from elasticsearch import Elasticsearch

    check_url(url)
    try:
        client = Elasticsearch(url, request_timeout=timeout, max_retries=retries, retry_on_timeout=False,
                               node_class=_node_class())
    except ValueError as exc:
        raise ConfigError(f"Elasticsearch URL {url!r} is not valid ({exc})") from None
    _call(url, client.info)
    return client


def _call(url: str, fn, *args, **kwargs):
    """Run one client call, turning transport and API failures into one-line errors."""
    from elastic_transport import ConnectionError as TransportConnectionError
    from elastic_transport import ConnectionTimeout, TransportError
    from elasticsearch import ApiError, UnsupportedProductError

    try:
        return fn(*args, **kwargs)
    except _Late as exc:
        raise ESUnavailable(f"Elasticsearch at {url}: no answer within {exc.seconds:g} s ({TIMEOUT_HINT})") from None
    except UnsupportedProductError:
        raise KbcError(f"the server at {url} is not Elasticsearch; pass the URL of an Elasticsearch server") from None
    except (TransportConnectionError, ConnectionTimeout) as exc:
        raise ESUnavailable(
            f"Elasticsearch at {url} is unreachable ({type(exc).__name__}); start one with "
            "`docker compose -f docker/docker-compose.yml up -d elasticsearch` or pass another --es-url"
        ) from None
    except ApiError as exc:
        reason = _reason(exc)
        if "media_type_header" in reason or "compatible-with" in reason:
            raise ConfigError(f"Elasticsearch at {url} rejects this client's version ({reason}); install the "
                              "elasticsearch client with the server's major version") from None
        raise KbcError(f"Elasticsearch at {url}: {reason}") from None
    except TransportError as exc:  # an answer the client cannot read (not JSON, TLS failure, ...)
        raise KbcError(f"Elasticsearch at {url}: {type(exc).__name__}: {_short(str(exc))}") from None


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _reason(exc) -> str:
    body = getattr(exc, "body", None)
    status = getattr(getattr(exc, "meta", None), "status", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            return _short(f"{err.get('type')}: {err.get('reason')}")
        if err:
            return _short(str(err))
    if isinstance(body, str | bytes) and body:
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        return _short(f"HTTP {status}: {text}")
    return _short(f"HTTP {status}: {getattr(exc, 'message', exc)}")


def _mention_query(mention: Mention) -> dict:
    should: list[dict] = [{"match_phrase": {"text": " ".join(p)}} for p in mention.token_phrases()]
    if mention.link:
        should.append({"term": {"links": mention.link}})
    if not should:
        return {"match_none": {}}
    return should[0] if len(should) == 1 else {"bool": {"should": should, "minimum_should_match": 1}}


def _all_of(mentions: Sequence[Mention]) -> dict:
    if not mentions:
        return {"match_all": {}}
    if len(mentions) == 1:
        return _mention_query(mentions[0])
    return {"bool": {"filter": [_mention_query(m) for m in mentions]}}


class ESIndex:
    backend = "elasticsearch"
    built = False  # True on the index a `build` made (False: opened as it was)

    def __init__(self, client, url: str, name: str) -> None:
        self._es = client
        self.url = url
        self.name = name
        concrete = self._concrete()
        if not concrete:
            raise DataError(f"no text index {name!r} at {url}; build it with "
                            f"`kbc index build --backend elasticsearch --es-url {url} --out {name} ...`")
        self.concrete = concrete[0]
        mapping = _call(url, self._es.indices.get_mapping, index=self.concrete)
        self.meta = mapping[self.concrete]["mappings"].get("_meta", {})

    def _concrete(self) -> list[str]:
        if not _call(self.url, self._es.indices.exists_alias, name=self.name):
            return []
        return sorted(_call(self.url, self._es.indices.get_alias, name=self.name))

    @classmethod
    def open(cls, url: str, name: str, timeout: float = TIMEOUT) -> ESIndex:
        return cls(connect(url, timeout), url, name)

    @classmethod
    def build(cls, paragraphs: Iterable[Paragraph], url: str, name: str, meta: dict | None = None,
              progress: bool = False, timeout: float = TIMEOUT,
              reuse: Callable[[dict], bool] | None = None) -> ESIndex:
        """Index `paragraphs` into a new concrete index and swap the alias `name` to it, one build of it at a time.

        A build waits for another build of the same alias on the same server (`build_lock`); then, where `reuse`
        accepts the stats of the index found there (one the other build just made), that index is returned instead
        (`built` False) and `paragraphs` are not read.
        """
        check_url(url)
        lock = build_lock(url, name)
        lock.acquire()
        try:
            if reuse is not None:
                try:
                    found = cls.open(url, name, timeout)
                except DataError:
                    found = None
                if found is not None and reuse(found.stats()):
                    return found
                if found is not None:
                    found.close()
            index = cls._build(paragraphs, url, name, meta, progress, timeout)
            index.built = True
            return index
        finally:
            lock.release(remove=True)  # the cache keeps no lock file per index name ever built

    @classmethod
    def _build(cls, paragraphs: Iterable[Paragraph], url: str, name: str, meta: dict | None, progress: bool,
               timeout: float) -> ESIndex:
        """The build itself, under the build lock: no other build reads or swaps the alias meanwhile."""
        from elasticsearch import helpers
        from tqdm import tqdm

        es = connect(url, timeout)
        if _call(url, es.indices.exists, index=name) and not _call(url, es.indices.exists_alias, name=name):
            raise ConfigError(f"{url}: {name!r} is a concrete index, not an alias this tool manages; "
                              "choose another name or delete it")
        concrete = f"{name}-{time.time_ns()}"
        info = {"backend": "elasticsearch", "analyzer": PATTERN, "built_at": time.time(), **(meta or {})}
        _call(url, es.indices.create, index=concrete, mappings={**MAPPINGS, "_meta": info},
              settings={"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1",
                        "analysis": es_analysis()})
        start = time.perf_counter()
        try:
            n = 0

            content = ContentDigest(paragraphs)

            def actions():
                nonlocal n
                for p in tqdm(content, desc="indexing", unit="para", disable=not progress):
                    n += 1
                    yield {"_index": concrete, "_id": p.pid, "_op_type": "create", "pid": p.pid,
                           "title": p.title, "para": p.para, "text": p.text, "links": list(p.links),
                           "facts": list(p.facts)}

            for ok, item in _call(url, lambda: list(helpers.streaming_bulk(
                    es, actions(), chunk_size=BULK_CHUNK, raise_on_error=False, max_retries=3))):
                if not ok:
                    error = next(iter(item.values()))
                    if "version_conflict" in str(error.get("error")):
                        raise DataError(f"duplicate paragraph id {error.get('_id')!r}; paragraph ids must be unique")
                    raise DataError(f"{url}: indexing paragraph {error.get('_id')!r} failed: {error.get('error')}")
            _call(url, es.indices.put_settings, index=concrete, settings={"refresh_interval": "1s"})
            _call(url, es.indices.refresh, index=concrete)
            count = _call(url, es.count, index=concrete)["count"]
            if count != n:
                raise DataError(f"{url}: {n} paragraphs sent but {count} indexed (duplicate paragraph ids?)")
            info.update(paragraphs=n, build_seconds=round(time.perf_counter() - start, 3),
                        content_sha256=content.hexdigest(), paragraphs_with_facts=content.with_facts)
            _call(url, es.indices.put_mapping, index=concrete, meta=info)
            old = sorted(_call(url, es.indices.get_alias, name=name)) if _call(
                url, es.indices.exists_alias, name=name) else []
            actions_ = [{"remove": {"index": o, "alias": name}} for o in old]
            actions_.append({"add": {"index": concrete, "alias": name}})
            _call(url, es.indices.update_aliases, actions=actions_)
        except BaseException:
            _call(url, es.indices.delete, index=concrete, ignore_unavailable=True)
            raise
        for o in old:
            _call(url, es.indices.delete, index=o, ignore_unavailable=True)
        return cls(es, url, name)

    # -- queries --------------------------------------------------------------------------------
    def __len__(self) -> int:
        return _call(self.url, self._es.count, index=self.name)["count"]

    def search(self, text: str, k: int = 10) -> list[Hit]:
        terms = term_counts(text)
        if not terms or k <= 0:
            return []
        should = [{"term": {"text": {"value": t, "boost": float(c)}}} for t, c in terms.items()]
        resp = _call(self.url, self._es.search, index=self.name, query={"bool": {"should": should}}, size=k,
                     track_total_hits=False)
        return [Hit(h["_score"], self._paragraph(h["_source"])) for h in resp["hits"]["hits"]]

    @staticmethod
    def _paragraph(src: dict) -> Paragraph:
        return Paragraph(src["pid"], src["title"], src["para"], src["text"], tuple(src.get("links") or ()),
                         tuple(src.get("facts") or ()))

    def count(self, *mentions: Mention) -> int:
        return _call(self.url, self._es.count, index=self.name, query=_all_of(mentions))["count"]

    def count_many(self, groups: Sequence[Sequence[Mention]]) -> list[int]:
        out: list[int] = []
        for start in range(0, len(groups), MSEARCH_CHUNK):
            body: list[dict] = []
            for g in groups[start:start + MSEARCH_CHUNK]:
                body += [{"index": self.name}, {"size": 0, "track_total_hits": True, "query": _all_of(g)}]
            resp = _call(self.url, self._es.msearch, searches=body)
            for r in resp["responses"]:
                if "error" in r:
                    raise KbcError(f"Elasticsearch at {self.url}: {r['error']}")
                out.append(r["hits"]["total"]["value"])
        return out

    def matching(self, *mentions: Mention) -> Iterator[str]:
        after = None
        while True:
            extra = {"search_after": after} if after is not None else {}
            resp = _call(self.url, self._es.search, index=self.name, query=_all_of(mentions), size=PAGE,
                         sort=[{"pid": "asc"}], source=False, track_total_hits=False, **extra)
            hits = resp["hits"]["hits"]
            for h in hits:
                yield h["_id"]
            if len(hits) < PAGE:
                return
            after = hits[-1]["sort"]

    def matching_paragraphs(self, *mentions: Mention) -> Iterator[Paragraph]:
        """The paragraphs themselves (text and links) of `matching`, in the same order."""
        after = None
        while True:
            extra = {"search_after": after} if after is not None else {}
            resp = _call(self.url, self._es.search, index=self.name, query=_all_of(mentions), size=PAGE,
                         sort=[{"pid": "asc"}], track_total_hits=False, **extra)
            hits = resp["hits"]["hits"]
            for h in hits:
                yield self._paragraph(h["_source"])
            if len(hits) < PAGE:
                return
            after = hits[-1]["sort"]

    def doc_freq(self, term: str) -> int:
        return _call(self.url, self._es.count, index=self.name, query={"term": {"text": term}})["count"]

    def facts_held(self, uids: Iterable[str]) -> set[str]:
        """Facts are stored, not indexed: every paragraph is read, unless the build recorded that none has facts."""
        wanted = set(uids)
        if not wanted or self.meta.get("paragraphs_with_facts") == 0:
            return set()
        return {uid for p in self.matching_paragraphs() for uid in p.facts if uid in wanted}

    def fingerprint(self) -> str:
        """What the index behind the alias holds (`index_fingerprint`; before the content digest: its name)."""
        return index_fingerprint(self.meta, self.concrete)

    def stats(self) -> dict:
        st = _call(self.url, self._es.indices.stats, index=self.concrete)["_all"]["primaries"]
        return {**self.meta, "backend": "elasticsearch", "location": f"{self.url}/{self.name}",
                "index": self.concrete, "paragraphs": st["docs"]["count"],
                "size_bytes": st.get("store", {}).get("size_in_bytes")}

    def close(self) -> None:
        self._es.close()

    def __enter__(self) -> ESIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
