"""KMIR's axioms: a run whose axioms explode stops with one error line that names no option the run lacks
(`--max-derived` is `kbc kb infer`'s); the default axioms over a corpus without their relations are refused."""

from __future__ import annotations

from cli_support import run_kbc

EXPLODING = """@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
wdt:P47 a owl:SymmetricProperty, owl:TransitiveProperty .
"""


def test_kmir_with_exploding_axioms_names_no_flag_it_lacks(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    axioms = tmp_path / "explode.ttl"
    axioms.write_text(EXPLODING)
    code, _, err = run_kbc(["run", "kmir", "--corpus", "trex", "--relations", "P47", "--limit", "5", "--predictors",
                            "kb-inferred", "--axioms", str(axioms), "--data-dir", str(lama_dir), "--out",
                            str(tmp_path / "run"), "--quiet"], capsys)
    last = err.strip().splitlines()[-1]
    assert code == 2 and last.startswith(f"error: {axioms}: the closure exploded: more than 10,000 new facts"), err
    assert "--max-derived" not in err
    code, _, err = run_kbc(["kb", "infer", "--axioms", str(axioms), "--data-dir", str(lama_dir), "--store",
                            str(tmp_path / "store")], capsys)
    assert code == 2 and err.strip().endswith("declared equivalent to it), or raise --max-derived"), err


def test_kmir_with_the_default_axioms_refuses_google_re(lama_dir, tmp_path, capsys, monkeypatch):
    """Google-RE sits in the LAMA folder beside T-REx's relations.jsonl, which lists none of its relations: the default
    axioms would derive nothing there and the run would lack its reasoning questions without a word."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "kmir", "--corpus", "google_re", "--predictors", "kb", "--limit", "5",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert (code, err.strip().splitlines()[-1]) == (
        2, "error: kmir on google_re: the default axioms (kb/axioms.ttl, over T-REx's relations) name P190, P47, "
           "P530, P131, P279, P361, P19, P527, P36, P1376, P103, P1412, P17, P20, which google_re does not hold; pass "
           "--axioms FILE with axioms over google_re's relations, or ask trex")
    assert not out.exists()
