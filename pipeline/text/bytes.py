"""Zero-copy access to the UTF-8 bytes of a polars string column (the byte tokenisers' and the exact
hash's input)."""

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


def list_buffers(
    lists: pl.Series,
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The UTF-8 bytes of every text of a list-of-strings column, their offsets, and the list offsets
    (list ``k`` holds texts ``lists_off[k]:lists_off[k + 1]``; a null list or text is empty); no join.

    ``data[off[j]:off[j + 1]]`` is text ``j``; ``off[0] == 0``.
    """
    arr = lists.rechunk().to_arrow()
    if arr.null_count or arr.values.null_count:  # Arrow leaves a null's range unspecified: make it empty
        arr = lists.fill_null([]).list.eval(pl.element().fill_null("")).rechunk().to_arrow()
    if arr.type != pa.large_list(pa.large_string()):
        arr = arr.cast(pa.large_list(pa.large_string()))
    lists_off = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    values = arr.values  # every text of the array, those of null lists included (an empty range)
    bufs = values.buffers()
    off = np.frombuffer(bufs[1], dtype=np.int64)[values.offset : values.offset + len(values) + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, dtype=np.uint8)
    return data[off[0] : off[-1]], off - off[0], lists_off


def utf8_views(texts: pl.Series) -> list[memoryview]:
    """The UTF-8 bytes of each string (null: empty) where polars holds them: its string views,
    exported to Arrow without a copy (a value of up to 12 bytes is inside its view, a longer one in
    one of the data buffers), so the column is never copied into one contiguous buffer."""
    arr = texts.cast(pl.Utf8).rechunk().to_arrow(compat_level=pl.CompatLevel.newest())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    bufs = arr.buffers()
    raw = memoryview(bufs[1])[arr.offset * 16 : (arr.offset + len(arr)) * 16]
    views = np.frombuffer(raw, dtype=np.int32).reshape(-1, 4)  # length, then inline bytes or
    # (prefix, buffer index, offset)
    data = [memoryview(b) for b in bufs[2:]]
    valid = [True] * len(arr) if arr.null_count == 0 else arr.is_valid().to_pylist()
    out = []
    for i, (n, _, buf, at) in enumerate(views.tolist()):
        if not valid[i] or n == 0:
            out.append(raw[0:0])
        elif n <= 12:
            out.append(raw[i * 16 + 4 : i * 16 + 4 + n])
        else:
            out.append(data[buf][at : at + n])
    return out
