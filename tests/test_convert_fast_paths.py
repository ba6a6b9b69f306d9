"""The convert step's fast paths are the plain code they replace: each is checked against that
code (kept as the specification) on generated inputs built from the pieces that decide it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.convert.roots import RootRewriter, rewrite_roots

# texts made of paths (a root's forms, look-alikes, the repo's names) and what may stand before one
_SEGMENTS = ["repo", "app", "workspace", "home", "alice", "tmp", "tmpab12cd", "testbed", "astropy", "pandas"]
_SEGMENTS += ["notes", "a__b", "srv", "checkouts", "proj-7", "repo.git", "x.py", "app.", ""]
_BETWEEN = ["", " ", "\n", "file://", "https://github.com", ".", "~", "-", "x", "/"]
_paths = st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=4).map(lambda s: "/" + "/".join(s))
_texts = st.lists(st.tuples(st.sampled_from(_BETWEEN), _paths), max_size=5).map(
    lambda parts: "".join(a + b for a, b in parts)
)
_ROOTS = [
    None,
    "",
    "/",
    "/testbed",
    "/testbed/",
    "/repo",
    "/app/",
    "/srv/checkouts/proj-7",
    "/workspace/astropy",
]
_REPOS = [None, "", "astropy__astropy", "pandas-dev__pandas.95280573", "o/x", "srv"]


@settings(max_examples=400)
@given(st.lists(_texts, max_size=4), st.sampled_from(_ROOTS), st.sampled_from(_REPOS))
def test_a_runs_root_rewriter_is_rewrite_roots(texts: list[str], root: str | None, repo: str | None) -> None:
    rewrite = RootRewriter(root, repo)
    for text in texts:
        assert rewrite(text) == rewrite_roots(text, root, repo)
    args = {"command": texts, "path": texts[0] if texts else "/repo", "n": 3, "nested": {"x": texts[-1:]}}
    assert (
        rewrite.deep(args)
        == {
            "command": [rewrite_roots(t, root, repo) for t in texts],
            "path": rewrite_roots(args["path"], root, repo),  # type: ignore[arg-type]
            "n": 3,
            "nested": {"x": [rewrite_roots(t, root, repo) for t in texts[-1:]]},
        }
    )
