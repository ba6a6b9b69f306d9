"""The lines of a gzip JSONL stream, read in bounded blocks."""

from __future__ import annotations

import gzip
import hashlib
import re
import zlib
from collections.abc import Iterator
from typing import IO

# The first non-blank byte at or after a position: a run of blank lines is skipped in C, and the
# line from there to its newline is found with ``bytes.find`` (a memchr), not matched byte by byte.
_NON_BLANK = re.compile(rb"\S")


def iter_gzip_lines(
    stream: IO[bytes],
    *,
    max_chunk_bytes: int,
    max_record_bytes: int,
    raw_sha: hashlib._Hash | None,
    block_bytes: int = 1 << 20,
) -> Iterator[tuple[int, bytes | None, str]]:
    """Yield ``(line_no, line_bytes | None, problem)`` for every non-blank line of a gzip JSONL
    stream, hashing the uncompressed bytes into ``raw_sha``. Blank lines are counted (line numbers
    stay those of the file) but never materialised, so a stream of newlines costs only the
    decompression. Memory stays within one block (``block_bytes``) plus one record. Raises ``ShardTooLarge`` /
    ``EOFError`` / ``OSError`` / ``zlib.error`` for a stream that cannot be read whole."""
    gz = gzip.GzipFile(fileobj=stream)
    total = 0
    line_no = 0  # lines completed before ``pending``
    pending = b""
    skipping = False  # inside an over-long record: drop bytes up to its newline
    while True:
        block = gz.read(block_bytes)
        if not block:
            break
        total += len(block)
        if total > max_chunk_bytes:
            raise ShardTooLarge(f"decompressed size exceeds {max_chunk_bytes} bytes")
        if raw_sha is not None:
            raw_sha.update(block)
        last = block.rfind(b"\n")
        if last < 0:  # no line ends in this block
            if not skipping:
                pending += block
                if len(pending) > max_record_bytes:
                    yield line_no + 1, None, "record_too_large"
                    pending, skipping = b"", True
            continue
        # ``data[:stop]`` holds the block's whole lines (no copy of the block unless a record
        # from the block before continues in it)
        if skipping:  # the over-long record ends in this block
            head_end = block.find(b"\n")
            line_no += 1
            skipping = False
            data, start, stop = block, head_end + 1, last + 1
        elif pending:
            data, start, stop = pending + block, 0, len(pending) + last + 1
        else:
            data, start, stop = block, 0, last + 1
        pos = start
        search = _NON_BLANK.search
        while (m := search(data, pos, stop)) is not None:
            first = m.start()
            end = data.find(b"\n", first, stop)  # ``data[:stop]`` ends with a newline: found
            line_no += data.count(b"\n", pos, first)
            yield (
                (line_no + 1, None, "record_too_large")
                if end - first > max_record_bytes
                else (line_no + 1, data[first:end], "")
            )
            pos = end  # the gap to the next line is counted, never a line again
        line_no += data.count(b"\n", pos, stop)
        pending = block[last + 1 :]
        if len(pending) > max_record_bytes:
            yield line_no + 1, None, "record_too_large"
            pending, skipping = b"", True
    if pending and not skipping:
        tail = _NON_BLANK.search(pending)
        if tail:
            yield line_no + 1, pending[tail.start() :], ""


class ShardTooLarge(Exception):
    pass


STREAM_ERRORS: tuple[type[BaseException], ...] = (
    EOFError,
    OSError,
    zlib.error,
    gzip.BadGzipFile,
    ShardTooLarge,
)
