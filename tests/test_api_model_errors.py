"""A model path that is no model folder is missing or damaged data: `kbcompare.run` raises `DataError` (a
`KbcError`), as the API's errors section says, with the message `kbc` prints."""

from __future__ import annotations

import pytest

import kbcompare


@pytest.mark.parametrize("make", ["missing", "empty", "file", "bad_json"])
def test_a_path_that_is_no_model_folder_is_a_data_error(make, lama_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "model"
    if make == "empty":
        model.mkdir()
    elif make == "file":
        model.write_text("weights")
    elif make == "bad_json":
        model.mkdir()
        (model / "config.json").write_text("{not json")
    with pytest.raises(kbcompare.DataError) as raised:
        kbcompare.run(
            "lama",
            corpus="trex",
            relations=["P19"],
            limit=2,
            predictors=[f"bert={model}"],
            data_dir=lama_dir,
            out=tmp_path / "run",
        )
    assert str(model) in str(raised.value) and "\n" not in str(raised.value)
