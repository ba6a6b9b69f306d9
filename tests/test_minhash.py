"""MinHash signatures and dedup keys: bit-identical to datasketch, vectorised tokenisation."""

from __future__ import annotations

import numpy as np
import polars as pl
from datasketch import MinHash
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.config import DedupParams
from pipeline.dedup.keys import action_stream, add_dedup_keys, shingle_hashes
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


def test_signatures_bit_identical_on_large_random_batch_with_threads() -> None:
    rng = np.random.default_rng(7)
    lens = rng.integers(0, 3000, 300)
    offsets = np.concatenate([[0], np.cumsum(lens)])
    flat = rng.integers(0, 2**32, offsets[-1], dtype=np.uint64).astype(np.uint32)
    ours = signatures(flat, offsets, 128, 1, threads=2)
    for i in range(0, 300, 7):
        assert ours[i].tolist() == datasketch_signature(flat[offsets[i]:offsets[i + 1]], 128, 1).tolist()
    assert np.all(ours[lens == 0] == MAX_HASH)


def test_normalised_action_stream_masks_roots_ids_numbers_and_temp_names() -> None:
    cmds = pl.DataFrame({"c": [[
        "cd /testbed && sed -n '120,180p' /testbed/src/app.py",
        "git show 3f2a9c1d7e && cat /tmp/tmpk2j4x9/out.log",
        "rm -rf tmpa8f3kz_build",
    ]]})
    out = cmds.select(action_stream(pl.col("c"))).item()
    assert "/testbed" not in out and "src/app.py" in out
    assert "3f2a9c1d7e" not in out and "120" not in out and "tmpk2j4x9" not in out and "tmpa8f3kz" not in out
    assert out.count("NUM") == 3 and out.count("TMP") == 2


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
    h2, o2 = shingle_hashes(pl.Series(["x y", "q r s t u v"]), 5)
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
    with_cmds = add_dedup_keys(frame.head(1).with_columns(pl.Series("commands", [["ls -la /testbed/src"]])),
                               DedupParams())
    assert keyed["minhash"][0].to_list() == with_cmds["minhash"][0].to_list()
    assert keyed.schema["minhash"] == pl.List(pl.UInt32) and keyed["minhash"].list.len().to_list() == [128] * 3


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
    assert candidate_pairs(sig, 16, 8, probe=np.array([False, False, True, False, False, False])).tolist() == [
        [0, 2], [1, 2]]
    assert union_find(5, np.array([[3, 4], [1, 3], [0, 2]])).tolist() == [0, 1, 0, 1, 1]
