"""A run's root rewriter sends an ASCII text through the ASCII twin of its pattern: on such a text
``\\w`` is ``[a-zA-Z0-9_]`` in both, so the rewrites are ``rewrite_roots``' own; a text with any
other character (a word character the ASCII classes would not know: ``é/repo`` is no root) keeps
the Unicode pattern."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.convert.roots import RootRewriter, _ascii_twin, _pattern, rewrite_roots

# what stands next to a root: ASCII word and boundary characters, and non-ASCII word characters
# (letters, a combining mark, a non-ASCII digit) and spaces that only the Unicode classes know
_AROUND = ["", " ", "x", "_", ".", "-", "/", "file://", "é", "ß", "\u0301", "\u0663", "\u00a0", "\u2192"]
_ROOT_FORMS = ["/repo", "/app", "/workspace/astropy", "/home/u/astropy", "/tmp/tmpab12cd/astropy"]
_ROOT_FORMS += ["/astropy__astropy", "/srv/proj", "/testbed", "/repository", "/reposé"]
_texts = st.lists(
    st.tuples(st.sampled_from(_AROUND), st.sampled_from(_ROOT_FORMS), st.sampled_from(_AROUND)),
    max_size=6,
).map(lambda parts: "".join(a + r + b for a, r, b in parts))
_ROOTS = [None, "/repo", "/srv/proj", "/workspace/astropy", "/testbed", "/ré/pro"]
_REPOS = [None, "astropy__astropy", "o/astropy"]


@settings(max_examples=500)
@given(st.lists(_texts, max_size=4), st.sampled_from(_ROOTS), st.sampled_from(_REPOS))
def test_ascii_and_other_texts_are_rewritten_as_rewrite_roots_does(
    texts: list[str], root: str | None, repo: str | None
) -> None:
    rewrite = RootRewriter(root, repo)
    for text in texts:
        assert rewrite(text) == rewrite_roots(text, root, repo)
    assert rewrite.deep({"command": texts, "path": "".join(texts)}) == {
        "command": [rewrite_roots(t, root, repo) for t in texts],
        "path": rewrite_roots("".join(texts), root, repo),
    }


@given(_texts, st.sampled_from(_REPOS))
def test_the_ascii_twin_matches_where_the_pattern_does_on_ascii_text(text: str, repo: str | None) -> None:
    pattern = _pattern(None, repo)
    ascii_text = text.encode("ascii", "ignore").decode()
    assert _ascii_twin(pattern).sub("/testbed", ascii_text) == pattern.sub("/testbed", ascii_text)


def test_a_non_ascii_word_character_before_a_root_is_part_of_a_word() -> None:
    assert RootRewriter(None, None)("é/repo /repo") == "é/repo /testbed"
    assert RootRewriter(None, None)("x/repo /repo") == "x/repo /testbed"
