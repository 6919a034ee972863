"""Parquet files opened by Python, handed to pyarrow as a file. pyarrow encodes a path given as text in UTF-8,
whatever the file system's encoding: under a non-UTF-8 locale (`LANG=de_DE.ISO-8859-1`, or `LANG=C` with Python's
UTF-8 mode off) a folder named `données` would not be found, or a file would be written beside it under another
name. Python opens the path as every other file of the run is opened."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


def read_frame(path: Path, columns: list[str] | None = None) -> pd.DataFrame:
    """`pd.read_parquet(path)` for any path this process can open."""
    import pandas as pd

    with open(path, "rb") as handle:
        return pd.read_parquet(handle, columns=columns)


def read_table(path: Path, columns: list[str] | None = None) -> pa.Table:
    """`pyarrow.parquet.read_table(path)` for any path this process can open."""
    import pyarrow.parquet as pq

    with open(path, "rb") as handle:
        return pq.read_table(handle, columns=columns)


def write_frame(frame: pd.DataFrame, path: Path) -> None:
    """`frame.to_parquet(path)` (no index column) for any path this process can write: the same bytes, written by
    pyarrow itself, since pandas 2.1 swaps an open file for its name and pyarrow then encodes that name."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open(path, "wb") as handle:
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), handle)
