"""The graph store against a real SPARQL 1.1 server: Oxigraph's own (the `oxigraph` package), on loopback.

Loading goes through the update endpoint in batches and answers equal the embedded store's.
"""

import math
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests_support_facts import toy_facts

from eval.errors import KbcError
from eval.types import Entity, Fact
from kb.store import GraphStore, open_store
from lm.local_server import free_port

RELATIONS = ("P19", "P47")


@pytest.fixture(scope="module")
def oxigraph() -> tuple[str, str]:
    """(query URL, update URL) of an in-memory Oxigraph server started for this module."""
    local = Path(sys.executable).with_name("oxigraph")
    binary = str(local) if local.exists() else shutil.which("oxigraph")
    if binary is None:
        pytest.fail("the `oxigraph` server binary is missing: install the dev extra (pip install -e '.[dev]')")
    for attempt in range(3):  # a port found free can be taken by another process before the server binds it
        port = free_port()
        proc = subprocess.Popen([binary, "serve", "--bind", f"127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30  # a deadlock guard
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.05)
        if proc.poll() is None and time.monotonic() < deadline:
            break
        if proc.poll() is None or attempt == 2:
            proc.kill()
            pytest.fail(f"oxigraph serve did not start: {proc.stderr.read().decode(errors='replace')[-500:]}")
    yield f"http://127.0.0.1:{port}/query", f"http://127.0.0.1:{port}/update"
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def trex_two(trex) -> list[Fact]:
    facts = [f for f in trex.facts if f.relation in RELATIONS]
    assert len(facts) == 944 + 922
    return facts


def test_load_through_the_update_endpoint_equals_embedded(oxigraph, trex, trex_two):
    query_url, update_url = oxigraph
    remote = GraphStore.remote(query_url, update_url)
    graph, loaded = remote.sync_corpus("trex", trex.version, trex_two)
    assert (graph, loaded) == ("gold-trex", True)
    with GraphStore.open(None) as embedded:
        assert embedded.ensure_corpus("trex", trex.version, trex_two) == graph
        for rel in RELATIONS:
            assert remote.valid_objects(rel, graph) == embedded.valid_objects(rel, graph)
        assert remote.count(graph) == embedded.count(graph)
        assert remote.relations(graph) == embedded.relations(graph) == {"P19": 944, "P47": 922}
    p47 = remote.valid_objects("P47", graph)
    assert len(p47) == 633 and sum(len(v) for v in p47.values()) == 922
    # loaded once: a second call only reads what the graph holds
    sent = remote.backend.requests
    assert remote.sync_corpus("trex", trex.version, trex_two) == (graph, False)
    assert remote.backend.requests == sent + 1
    # a read-only connection can use what is there, and refuses to write in one line
    read_only = GraphStore.remote(query_url)
    assert read_only.ensure_corpus("trex", trex.version, trex_two) == graph
    with pytest.raises(KbcError, match=r"read-only .* --store-update URL") as err:
        read_only.ensure_corpus("trex", trex.version, trex_two[:2])
    assert "\n" not in str(err.value)


def test_inserts_are_batched(oxigraph, trex_two):
    store = GraphStore.remote(*oxigraph)
    sent = store.backend.requests
    assert store.add_facts(trex_two, graph="batch-test") == len(trex_two)
    assert store.backend.requests - sent == math.ceil(3 * len(trex_two) / 5000) == 2
    assert store.relations("batch-test") == {"P19": 944, "P47": 922}


def test_new_version_replaces_the_old_remote(oxigraph):
    store = GraphStore.remote(*oxigraph)
    dante = Entity("Dante", "Q1067")
    graph = store.ensure_corpus("edits", "v1", [Fact("1", "edits", "P19", dante, Entity("Florence", "Q2044"))])
    store.ensure_corpus("edits", "v2", [Fact("1", "edits", "P19", dante, Entity("Ravenna", "Q13364"))])
    assert store.valid_objects("P19", graph) == {"Q1067": {"Ravenna"}}
    assert store.loaded_versions(graph) == {"edits@v2"}
    assert store.count(graph) == 3


def test_a_remote_load_cut_short_is_redone(oxigraph):
    store = GraphStore.remote(*oxigraph)
    store.backend.batch = 4
    send = store.backend.update
    inserts = []

    def fail_on_third_insert(sparql: str) -> None:
        if "INSERT DATA" in sparql:
            inserts.append(sparql)
            if len(inserts) == 3:
                raise KbcError("SPARQL endpoint: connection lost")
        send(sparql)

    store.backend.update = fail_on_third_insert
    with pytest.raises(KbcError):
        store.ensure_corpus("crash", "v1", toy_facts())
    assert store.loaded_versions("gold-crash") == set()
    assert store.count("gold-crash") == 4  # one batch of the facts got in
    store.backend.update = send
    graph = store.ensure_corpus("crash", "v1", toy_facts())
    assert store.valid_objects("P47", graph) == {"Q29": {"France"}, "Q142": {"Spain", "Italy"}}
    assert store.count(graph) == 13 and store.loaded_versions(graph) == {"crash@v1"}


def test_nasty_ids_remote(oxigraph):
    store = GraphStore.remote(*oxigraph)
    ids = ['/m/0 "x" <y>', "/m/{a}|b\\c", "/m/Zürich", "Q١", "100%"]
    facts = [Fact(str(i), "nasty", "place_of_birth", Entity(f'p "{i}"', eid), Entity("<Zürich>", "/m/z ü"))
             for i, eid in enumerate(ids)]
    graph = store.ensure_corpus("nasty", "v1", facts)
    assert store.valid_objects("place_of_birth", graph) == {eid: {"<Zürich>"} for eid in ids}
    assert store.objects(Entity("x", ids[0]), "place_of_birth", graph) == [Entity("<Zürich>", "/m/z ü")]


def test_bad_query_is_one_line(oxigraph):
    with pytest.raises(KbcError, match=r"^SPARQL endpoint http://127\.0\.0\.1:\d+/query answered HTTP 400") as err:
        GraphStore.remote(oxigraph[0]).select("SELECT WHERE nonsense")
    assert "\n" not in str(err.value)


def test_cli_load_into_a_remote_store(oxigraph, lama_dir):
    from bridge.cli.kb import kb

    query_url, update_url = oxigraph
    args = ["load", "--corpus", "google_re", "--data-dir", str(lama_dir), "--store", query_url]
    result = CliRunner().invoke(kb, [*args, "--store-update", update_url, "--store-timeout", "5"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("google_re: 5527 facts loaded (graph gold-google_re: ")
    again = CliRunner().invoke(kb, args)  # read-only is enough when the graph is current
    assert again.exit_code == 0, again.output
    assert "5527 facts already in the store" in again.output
    assert CliRunner().invoke(kb, [*args, "--store-timeout", "0"]).exit_code == 2


def test_open_store(tmp_path):
    assert open_store(None, None, tmp_path / "default").location == str(tmp_path / "default")
    assert open_store(str(tmp_path / "p"), None, tmp_path / "default").location == str(tmp_path / "p")
    remote = open_store("http://127.0.0.1:1/query", "http://127.0.0.1:1/update", tmp_path, timeout=2.5)
    assert (remote.backend.update_url, remote.backend.timeout) == ("http://127.0.0.1:1/update", 2.5)
    with pytest.raises(KbcError, match="--store-update needs --store URL"):
        open_store(str(tmp_path / "p"), "http://127.0.0.1:1/update", tmp_path)
    with pytest.raises(KbcError, match="--store-timeout must be positive"):
        open_store("http://127.0.0.1:1/query", None, tmp_path, timeout=0)


def test_lama_probe_against_the_server_equals_embedded(oxigraph, lama_dir, tmp_path):
    from bridge.run.runner import RunConfig, run_lama

    query, update = oxigraph

    def p1(rows):
        return {(r["predictor"], r["setting"], r["group"]): r["value"] for r in rows
                if r["metric"] == "p@1" and r["scope"] == "own"}

    remote = run_lama(RunConfig(["trex"], ["freq", "gold"], tmp_path / "remote", str(lama_dir), relations=["P530"],
                                cache_dir=tmp_path / "c", store=query, store_update=update, store_timeout=10),
                      progress=False)
    embedded = run_lama(RunConfig(["trex"], ["freq", "gold"], tmp_path / "embedded", str(lama_dir),
                                  relations=["P530"], cache_dir=tmp_path / "c"), progress=False)
    assert p1(remote) == p1(embedded)
    assert p1(remote)[("freq", "filtered", "P530")] > p1(remote)[("freq", "raw", "P530")]
    assert p1(remote)[("gold", "raw", "P530")] == 100.0
    assert "gold-trex-P530" in GraphStore.remote(query).graph_names("gold-")  # gold filled the server's graph


def test_a_server_that_never_answers_ends_the_run_within_the_timeout(lama_dir, tmp_path, capsys):
    from cli_support import run_kbc

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        url = f"http://127.0.0.1:{server.getsockname()[1]}/query"
        started = time.monotonic()
        code, _, err = run_kbc(["run", "lama", "--corpus", "google_re", "--relations", "place_of_death",
                                "--predictors", "gold", "--data-dir", str(lama_dir), "--out", str(tmp_path / "o"),
                                "--store", url, "--store-update", url, "--store-timeout", "1", "--quiet"], capsys)
    assert code == 2 and time.monotonic() - started < 30
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
