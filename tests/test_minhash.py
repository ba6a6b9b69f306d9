"""MinHash signatures and dedup keys: bit-identical to datasketch, vectorised tokenisation."""

from __future__ import annotations

import numpy as np
import polars as pl
from datasketch import MinHash
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.config import DedupParams
from pipeline.dedup import keys, minhash
from pipeline.dedup.keys import (
    TOKEN_PATTERN,
    action_stream,
    add_dedup_keys,
    minhash_signatures,
    shingle_hashes,
    token_hash,
    token_hashes_flat,
)
from pipeline.dedup.lsh import band_keys, candidate_pairs, union_find, verify
from pipeline.dedup.minhash import MAX_HASH, signatures


def datasketch_signature(hashes: np.ndarray, num_perm: int, seed: int) -> np.ndarray:
    m = MinHash(num_perm=num_perm, seed=seed, hashfunc=int)
    m.update_batch(hashes.tolist())
    return m.hashvalues


@given(
    docs=st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=60), min_size=1, max_size=12),
    seed=st.integers(0, 2**31 - 1),
    num_perm=st.sampled_from([1, 16, 128]),
)
@settings(max_examples=120, deadline=None)
def test_signatures_are_bit_identical_to_datasketch(docs: list[list[int]], seed: int, num_perm: int) -> None:
    flat = np.array([h for d in docs for h in d], dtype=np.uint32)
    offsets = np.concatenate([[0], np.cumsum([len(d) for d in docs])])
    ours = signatures(flat, offsets, num_perm, seed, threads=1)
    for i, doc in enumerate(docs):
        expected = datasketch_signature(np.array(doc, dtype=np.uint32), num_perm, seed)
        assert ours[i].tolist() == expected.tolist()


# Few distinct values (edge values included) so documents repeat values a lot: this exercises the
# per-document dedup that runs before the permutations, including its hash-table collisions.
_REPEATING = st.sampled_from([0, 1, 2, 3, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF, 12345, 0xDEADBEEF])


@given(
    docs=st.lists(st.lists(_REPEATING, max_size=300), min_size=1, max_size=20),
    seed=st.integers(0, 2**31 - 1),
    chunk=st.sampled_from([1, 7, 64, 1 << 16]),
    threads=st.sampled_from([1, 2]),
)
@settings(max_examples=80, deadline=None)
def test_signatures_bit_identical_when_documents_repeat_values(
    docs: list[list[int]], seed: int, chunk: int, threads: int
) -> None:
    flat = np.array([h for d in docs for h in d], dtype=np.uint32)
    offsets = np.concatenate([[0], np.cumsum([len(d) for d in docs])])
    saved = minhash._CHUNK
    minhash._CHUNK = chunk  # tiny blocks: many blocks, documents longer than a block
    try:
        ours = signatures(flat, offsets, 128, seed, threads=threads)
    finally:
        minhash._CHUNK = saved
    for i, doc in enumerate(docs):
        assert ours[i].tolist() == datasketch_signature(np.array(doc, dtype=np.uint32), 128, seed).tolist()


def test_signatures_bit_identical_on_large_random_batch_with_threads() -> None:
    rng = np.random.default_rng(7)
    lens = rng.integers(0, 3000, 300)
    offsets = np.concatenate([[0], np.cumsum(lens)])
    flat = rng.integers(0, 2**32, offsets[-1], dtype=np.uint64).astype(np.uint32)
    ours = signatures(flat, offsets, 128, 1, threads=2)
    for i in range(0, 300, 7):
        assert ours[i].tolist() == datasketch_signature(flat[offsets[i] : offsets[i + 1]], 128, 1).tolist()
    assert np.all(ours[lens == 0] == MAX_HASH)


def test_normalised_action_stream_masks_roots_ids_numbers_and_temp_names() -> None:
    cmds = pl.DataFrame(
        {
            "c": [
                [
                    "cd /testbed && sed -n '120,180p' /testbed/src/app.py",
                    "git show 3f2a9c1d7e && cat /tmp/tmpk2j4x9/out.log",
                    "rm -rf tmpa8f3kz_build",
                ]
            ]
        }
    )
    out = cmds.select(action_stream(pl.col("c"))).item()
    assert "/testbed" not in out and "src/app.py" in out
    assert "3f2a9c1d7e" not in out and "120" not in out and "tmpk2j4x9" not in out and "tmpa8f3kz" not in out
    assert out.count("NUM") == 3 and out.count("TMP") == 2


_PIECES = [
    "a",
    "f",
    "F",
    "g",
    "Z",
    "_",
    "0",
    "7",
    "12",
    "3f2a",
    "beef",
    "cafe1",
    " ",
    "\n",
    "-",
    "/",
    ".",
    "'",
    "é",
    "中文",
    "—",
    "“",
    "NUM",
    "tmp",
    "tmpab12x",
    "/tmp/x1",
    "/testbed",
    "0x1F",
    "x_1a2b",
]


def reference_token_hashes(commands: list[list[str]]) -> list[list[int]]:
    """The specification: the polars normalisation, TOKEN_PATTERN, then token_hash per token."""
    frame = pl.DataFrame({"c": commands}, schema={"c": pl.List(pl.Utf8)})
    tokens = frame.select(action_stream(pl.col("c")).str.extract_all(TOKEN_PATTERN)).to_series().to_list()
    return [[token_hash(t.encode()) for t in run or []] for run in tokens]


@given(
    commands=st.lists(
        st.lists(st.lists(st.sampled_from(_PIECES), max_size=25).map("".join), max_size=4),
        min_size=1,
        max_size=12,
    ),
    unit=st.sampled_from([1, 16, 1 << 19]),
    threads=st.sampled_from([1, 2]),
)
@settings(max_examples=150, deadline=None)
def test_byte_tokeniser_equals_the_regex_reference(
    commands: list[list[str]], unit: int, threads: int
) -> None:
    pre = (
        pl.DataFrame({"c": commands}, schema={"c": pl.List(pl.Utf8)})
        .select(keys._premask(pl.col("c")))
        .to_series()
    )
    saved = keys._BYTE_CHUNK
    keys._BYTE_CHUNK = unit  # tiny units: many work units dealt to both threads
    try:
        flat, counts = token_hashes_flat(pre, threads=threads)
    finally:
        keys._BYTE_CHUNK = saved
    off = np.concatenate([[0], np.cumsum(counts)])
    got = [flat[off[i] : off[i + 1]].tolist() for i in range(len(commands))]
    assert got == reference_token_hashes(commands)


def test_byte_tokeniser_masks_numbers_and_hex_words_like_the_regex() -> None:
    pre = (
        pl.DataFrame({"c": [["sed -n '120,180p' a.py && git show 3f2a9c1d pkg12 cafe é12"]]})
        .select(keys._premask(pl.col("c")))
        .to_series()
    )
    flat, counts = token_hashes_flat(pre)
    words = ["sed", "n", "NUM", "NUM", "p", "a", "py", "git", "show", "NUM", "pkg", "NUM", "cafe", "é", "NUM"]
    assert flat.tolist() == [token_hash(w.encode()) for w in words] and counts.tolist() == [len(words)]


def test_fused_signatures_equal_datasketch_over_the_shingle_hashes() -> None:
    cmds = [
        ["grep -rn 'def parse' src/ | head -20", "sed -n '1,80p' /testbed/src/a.py"] * 3,
        [],
        ["ls"],
        [f"python -m pytest tests/test_{i}.py -x -q -k case_{i % 3}" for i in range(40)],
    ]
    pre = pl.DataFrame({"c": cmds}).select(keys._premask(pl.col("c"))).to_series()
    params = DedupParams()
    fused = minhash_signatures(pre, params)
    hashes, offsets = shingle_hashes(pre, params.shingle)
    assert np.array_equal(fused, signatures(hashes, offsets, params.num_perm, params.seed))
    for i in range(len(cmds)):
        doc = hashes[offsets[i] : offsets[i + 1]]
        assert fused[i].tolist() == datasketch_signature(doc, params.num_perm, params.seed).tolist()
    assert np.all(fused[1] == MAX_HASH)  # no command, no shingle: the empty signature
    # the number mask is idempotent: fully normalised text (what the bench feeds) hashes the same
    normalised = pl.DataFrame({"c": cmds}).select(action_stream(pl.col("c"))).to_series()
    h2, o2 = shingle_hashes(normalised, params.shingle)
    assert np.array_equal(h2, hashes) and np.array_equal(o2, offsets)


def test_masked_differences_do_not_change_the_signature() -> None:
    a = ["python3 - <<'EOF'\nprint(open('/testbed/a.py').read()[:100])\nEOF", "git show 1a2b3c4d5e"]
    b = ["python3 - <<'EOF'\nprint(open('/testbed/a.py').read()[:250])\nEOF", "git show 9f8e7d6c5b"]
    frame = pl.DataFrame({"messages": [[{"role": "user", "content": "x"}]] * 2, "commands": [a, b]})
    keyed = add_dedup_keys(frame, DedupParams())
    assert keyed["minhash"][0].to_list() == keyed["minhash"][1].to_list()


def test_shingles_never_cross_runs_and_short_runs_get_one_shingle() -> None:
    streams = pl.Series(["a b c d e f", "x y", "", "a b c d e"])
    hashes, offsets = shingle_hashes(streams, 5)
    assert np.diff(offsets).tolist() == [2, 1, 0, 1]
    # "a b c d e" is the first shingle of run 0 and the only one of run 3: same hash
    assert hashes[offsets[3]] == hashes[offsets[0]]
    # the short run's shingle depends on its own tokens only
    h2, _o2 = shingle_hashes(pl.Series(["x y", "q r s t u v"]), 5)
    assert h2[0] == hashes[offsets[1]]


def test_exact_hash_ignores_system_prompt_and_keys_without_commands_use_bash_fences() -> None:
    msgs = [
        {"role": "system", "content": "You are a helpful assistant v1"},
        {"role": "user", "content": "Fix the bug"},
        {"role": "assistant", "content": "THOUGHT: look\n\n```bash\nls -la /testbed/src\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\na.py\n</output>"},
    ]
    other_system = [{"role": "system", "content": "You are a helpful assistant v2"}, *msgs[1:]]
    changed = [*msgs[:3], {"role": "user", "content": "<returncode>1</returncode>\n<output>\n</output>"}]
    frame = pl.DataFrame({"messages": [msgs, other_system, changed]})
    keyed = add_dedup_keys(frame, DedupParams())
    h = keyed["exact_hash"].to_list()
    assert h[0] == h[1] != h[2] and len(h[0]) == 64
    with_cmds = add_dedup_keys(
        frame.head(1).with_columns(pl.Series("commands", [["ls -la /testbed/src"]])), DedupParams()
    )
    assert keyed["minhash"][0].to_list() == with_cmds["minhash"][0].to_list()
    assert (
        keyed.schema["minhash"] == pl.List(pl.UInt32) and keyed["minhash"].list.len().to_list() == [128] * 3
    )


def test_lsh_pairs_verification_and_union_find() -> None:
    rng = np.random.default_rng(3)
    sig = rng.integers(0, 2**32, (6, 128), dtype=np.uint64).astype(np.uint32)
    sig[1] = sig[0]
    sig[1, :10] += 1  # J = 118/128 = 0.92
    sig[2] = sig[1]
    sig[2, 100:] += 1  # shares bands with 1 only partially: J(1,2) = 100/128 = 0.78
    sig[5] = MAX_HASH  # empty: never a candidate
    sig[4] = MAX_HASH
    keys = band_keys(sig, 16, 8)
    assert keys.shape == (6, 16) and (keys[0, 2:] == keys[1, 2:]).all() and keys[0, 0] != keys[1, 0]
    pairs = candidate_pairs(sig, 16, 8)
    assert pairs.tolist() == [[0, 1], [0, 2], [1, 2]]
    kept, est = verify(sig, pairs, 0.8)
    assert kept.tolist() == [[0, 1]] and est[0] == 118 / 128
    assert candidate_pairs(
        sig, 16, 8, probe=np.array([False, False, True, False, False, False])
    ).tolist() == [[0, 2], [1, 2]]
    assert union_find(5, np.array([[3, 4], [1, 3], [0, 2]])).tolist() == [0, 1, 0, 1, 1]
