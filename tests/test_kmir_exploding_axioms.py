"""A run whose axioms explode stops with one error line that names no option the run lacks (`--max-derived` is
`kbc kb infer`'s)."""

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
