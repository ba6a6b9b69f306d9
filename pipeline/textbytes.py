"""Zero-copy access to the UTF-8 bytes of a polars string column (the byte tokenisers' input)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa


def utf8_buffers(texts: pl.Series) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """The UTF-8 bytes of all texts back to back and their offsets (nulls are empty); zero copy.

    ``data[off[k]:off[k + 1]]`` is text ``k``; ``off[0] == 0``.
    """
    arr = texts.cast(pl.Utf8).fill_null("").rechunk().to_arrow()
    if arr.type != pa.large_string():
        arr = arr.cast(pa.large_string())
    bufs = arr.buffers()
    off = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, dtype=np.uint8)
    return data[off[0] : off[-1]], off - off[0]
