"""A fact's uid comes from the data (`uuid`): its "recorded" link on a run's page is one path segment whatever it
holds, and opens the fact's page and JSON."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from urllib.parse import unquote

import pytest
from cli_support import run_kbc_captured

UIDS = ["a/b", "../../etc/passwd", "x?y#z", "50%"]


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href and "/facts/" in href:
            self.hrefs.append(href)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.explorer import Explorer, ExplorerConfig
    from bridge.serve.runs import Runs

    root = tmp_path_factory.mktemp("uids")
    data = root / "lama"
    (data / "TREx").mkdir(parents=True)
    (data / "relations.jsonl").write_text(json.dumps({"relation": "X1", "template": "[X] likes [Y] ."}) + "\n")
    (data / "TREx" / "X1.jsonl").write_text("".join(
        json.dumps({"sub_label": f"S{i}", "obj_label": "tea", "uuid": uid}) + "\n" for i, uid in enumerate(UIDS)))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KBC_CACHE", str(root / "cache"))
        code, _, err = run_kbc_captured(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--data-dir",
                                         str(data), "--out", str(root / "run"), "--quiet"])
        assert code == 0, err
        explorer = Explorer.start(ExplorerConfig(data_dir=str(data), predictors=["freq"], cache_dir=root / "cache"))
        with TestClient(create_app(explorer, Runs([root / "run"]))) as c:
            yield c
        explorer.close()


def test_each_recorded_link_opens_its_fact_whatever_its_uid_holds(client):
    """Jinja's urlencode keeps "/": "a/b" linked /runs/run/facts/a/b and "../../etc/passwd" a path the browser
    resolved to /etc/passwd, both a 404."""
    page = client.get("/runs/run")
    assert page.status_code == 200, page.text
    links = _Links()
    links.feed(page.text)
    assert sorted(unquote(h.rsplit("/facts/", 1)[1]) for h in links.hrefs) == sorted(UIDS)
    for href in links.hrefs:
        assert href.count("/") == 4, href  # /runs/run/facts/<one segment>
        uid = unquote(href.rsplit("/", 1)[1])
        assert client.get(href).status_code == 200, href
        body = client.get("/api" + href)
        assert body.status_code == 200 and body.json()["uid"] == uid, href
