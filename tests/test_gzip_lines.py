"""Given a gzip JSONL stream, the reader yields every non-blank line from its first non-blank byte,
numbered as in the file, and an over-long record as one ``record_too_large`` entry, wherever the
1 MiB decompression blocks happen to cut the stream."""

from __future__ import annotations

import gzip
import hashlib
import io
import re

from hypothesis import given
from hypothesis import strategies as st

from pipeline.io.gzlines import iter_gzip_lines

MiB = 1 << 20


def lines_of(data: bytes, max_record_bytes: int = 64 * MiB) -> list[tuple[int, bytes | None, str]]:
    sha = hashlib.sha256()
    out = list(
        iter_gzip_lines(
            io.BytesIO(gzip.compress(data, 1)),
            max_chunk_bytes=1 << 32,
            max_record_bytes=max_record_bytes,
            raw_sha=sha,
        )
    )
    assert sha.hexdigest() == hashlib.sha256(data).hexdigest()  # every byte hashed, once
    return out


def test_blank_lines_are_counted_but_not_yielded_and_leading_blanks_are_cut() -> None:
    data = b'{"a":1}\n\n  \t\r\n \x0b{"b":2}\r\n{"c":3}'
    assert lines_of(data) == [(1, b'{"a":1}', ""), (4, b'{"b":2}\r', ""), (5, b'{"c":3}', "")]


def test_lines_that_cross_decompression_blocks_come_out_whole() -> None:
    big = b"x" * (MiB + 123)
    data = b"\n".join([b"a", big, b"", big + b"y", b"b"]) + b"\n\n"
    assert lines_of(data) == [(1, b"a", ""), (2, big, ""), (4, big + b"y", ""), (5, b"b", "")]


def test_an_over_long_record_is_one_entry_and_reading_goes_on_after_it() -> None:
    long = b"z" * (3 * MiB)
    data = b"\n".join([b"first", long, b"   ", b"after", long, b"last"])
    assert lines_of(data, max_record_bytes=MiB) == [
        (1, b"first", ""),
        (2, None, "record_too_large"),
        (4, b"after", ""),
        (5, None, "record_too_large"),
        (6, b"last", ""),
    ]


def test_a_long_line_within_one_block_is_refused_by_its_length() -> None:
    assert lines_of(b"ok\n" + b"q" * 50 + b"\n  tail", max_record_bytes=10) == [
        (1, b"ok", ""),
        (2, None, "record_too_large"),
        (3, b"tail", ""),
    ]


def test_a_file_that_ends_inside_an_over_long_record_yields_nothing_more() -> None:
    assert lines_of(b"a\n" + b"w" * (2 * MiB), max_record_bytes=MiB) == [
        (1, b"a", ""),
        (2, None, "record_too_large"),
    ]


# ----------------------------------------------------------------------------- the old reader
# The reader before the block split matched every line with ``\S[^\n]*``; it is the specification the
# faster line split must equal, line numbers and over-long records included.
_OLD_CONTENT = re.compile(rb"\S[^\n]*")


def _old_lines(data: bytes, max_record_bytes: int, block: int) -> list[tuple[int, bytes | None, str]]:
    out: list[tuple[int, bytes | None, str]] = []
    line_no, pending, skipping = 0, b"", False
    for k in range(0, len(data), block):
        chunk = data[k : k + block]
        last = chunk.rfind(b"\n")
        if last < 0:
            if not skipping:
                pending += chunk
                if len(pending) > max_record_bytes:
                    out.append((line_no + 1, None, "record_too_large"))
                    pending, skipping = b"", True
            continue
        if skipping:
            line_no += 1
            skipping = False
            buf, start = chunk[: last + 1], chunk.find(b"\n") + 1
        else:
            buf, start = pending + chunk[: last + 1], 0
        pos = start
        for m in _OLD_CONTENT.finditer(buf, start):
            line_no += buf.count(b"\n", pos, m.start())
            line = m.group()
            out.append(
                (line_no + 1, None, "record_too_large")
                if len(line) > max_record_bytes
                else (line_no + 1, line, "")
            )
            pos = m.end()
        line_no += buf.count(b"\n", pos)
        pending = chunk[last + 1 :]
        if len(pending) > max_record_bytes:
            out.append((line_no + 1, None, "record_too_large"))
            pending, skipping = b"", True
    if pending and not skipping:
        tail = _OLD_CONTENT.search(pending)
        if tail:
            out.append((line_no + 1, tail.group(), ""))
    return out


@given(
    parts=st.lists(
        st.sampled_from([b"\n", b" ", b"\t", b"\r", b"\x0b", b"\x0c", b"{}", b"ab", b"xyz"]), max_size=80
    ),
    block=st.integers(1, 12),
    max_record=st.integers(1, 10),
)
def test_the_line_split_equals_the_regex_reader_it_replaced(
    parts: list[bytes], block: int, max_record: int
) -> None:
    data = b"".join(parts)
    got = list(
        iter_gzip_lines(
            io.BytesIO(gzip.compress(data, 1)),
            max_chunk_bytes=1 << 32,
            max_record_bytes=max_record,
            raw_sha=None,
            block_bytes=block,
        )
    )
    assert got == _old_lines(data, max_record, block)
