"""Realistic text for the synthetic corpus: repositories, source files, tool outputs, secrets.

Everything is derived from a ``random.Random`` passed in by the caller (or from hashlib digests
of names), never from ``hash()`` or the clock, so the corpus is byte-identical for a seed.
Source files are generated once per (repo, path) and cached: runs on the same repository see
the same checkout, which is what makes edits, ``cat -n`` views and ``git diff`` agree.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import random
import string
from dataclasses import dataclass, field

from pipeline.reference.secrets import SECRET_KINDS

ALNUM = string.ascii_letters + string.digits


def digest(*parts: object) -> str:
    """Stable hex digest of the parts (the corpus' only source of name-derived randomness)."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


def rand_hex(rng: random.Random, n: int) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


def rand_str(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choices(alphabet, k=n))


# --------------------------------------------------------------------------------------------
# Repositories. None of these is a SWE-bench / Lite / Verified / Multimodal / Live repository,
# so SWE-bench-style ids minted for them can never collide with a benchmark id by accident.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RepoSpec:
    owner: str
    name: str
    language: str
    pkg: str  # import / package name used in paths and site-packages

    @property
    def key(self) -> str:  # owner__repo
        return f"{self.owner}__{self.name}"


REPOS: tuple[RepoSpec, ...] = (
    RepoSpec("marshmallow-code", "marshmallow", "python", "marshmallow"),
    RepoSpec("pydantic", "pydantic", "python", "pydantic"),
    RepoSpec("getmoto", "moto", "python", "moto"),
    RepoSpec("pallets", "click", "python", "click"),
    RepoSpec("tornadoweb", "tornado", "python", "tornado"),
    RepoSpec("encode", "httpx", "python", "httpx"),
    RepoSpec("pytoolz", "toolz", "python", "toolz"),
    RepoSpec("Suor", "funcy", "python", "funcy"),
    RepoSpec("gin-gonic", "gin", "go", "gin"),
    RepoSpec("spf13", "cobra", "go", "cobra"),
    RepoSpec("go-chi", "chi", "go", "chi"),
    RepoSpec("google", "gson", "java", "gson"),
    RepoSpec("jhy", "jsoup", "java", "jsoup"),
    RepoSpec("serde-rs", "json", "rust", "serde_json"),
    RepoSpec("BurntSushi", "ripgrep", "rust", "grep"),
    RepoSpec("clap-rs", "clap", "rust", "clap"),
    RepoSpec("expressjs", "express", "js", "express"),
    RepoSpec("lodash", "lodash", "js", "lodash"),
    RepoSpec("axios", "axios", "js", "axios"),
    RepoSpec("fmtlib", "fmt", "cpp", "fmt"),
    RepoSpec("nlohmann", "json", "cpp", "nlohmann"),
)

VERBS = (
    "get",
    "set",
    "parse",
    "load",
    "build",
    "render",
    "validate",
    "resolve",
    "apply",
    "merge",
    "split",
    "format",
    "encode",
    "decode",
    "read",
    "write",
    "check",
    "normalize",
    "convert",
    "update",
    "compute",
    "find",
    "collect",
    "handle",
    "prepare",
    "register",
    "dispatch",
)
NOUNS = (
    "value",
    "key",
    "item",
    "node",
    "path",
    "header",
    "field",
    "record",
    "token",
    "buffer",
    "index",
    "name",
    "option",
    "entry",
    "frame",
    "column",
    "query",
    "param",
    "route",
    "schema",
    "result",
    "context",
    "chunk",
    "block",
    "span",
    "limit",
    "offset",
    "prefix",
    "suffix",
)
MODULES = (
    "core",
    "utils",
    "parser",
    "reader",
    "writer",
    "config",
    "render",
    "context",
    "binding",
    "format",
    "encoder",
    "decoder",
    "validate",
    "schema",
    "router",
    "request",
    "response",
    "session",
    "cache",
    "errors",
    "types",
    "helpers",
    "compat",
    "fields",
    "decorators",
)
WORDS = (
    "the",
    "a",
    "when",
    "value",
    "is",
    "not",
    "returned",
    "correctly",
    "after",
    "calling",
    "with",
    "empty",
    "input",
    "list",
    "raises",
    "error",
    "expected",
    "but",
    "got",
    "instead",
    "this",
    "breaks",
    "our",
    "pipeline",
    "since",
    "upgrading",
    "to",
    "version",
    "regression",
    "behaviour",
    "edge",
    "case",
    "boundary",
    "threshold",
    "equal",
    "missing",
    "handling",
)
CMP_OPS = (">", "<", ">=", "<=", "==", "!=")
CMP_FIX = {">": ">=", "<": "<=", ">=": ">", "<=": "<", "==": "!=", "!=": "=="}


def _ident(rng: random.Random) -> tuple[str, str]:
    return rng.choice(VERBS), rng.choice(NOUNS)


# ---- per-language code templates ----------------------------------------------------------
# Each function has exactly one comparison line "COND" that a task can flip (the bug), so every
# fix is a one-line edit whose old text is taken verbatim from the generated file.


def _py_func(rng: random.Random, verb: str, noun: str, idx: int) -> list[str]:
    a, b, op, n = rng.choice(NOUNS) + "s", rng.choice(NOUNS), rng.choice(CMP_OPS), rng.randint(0, 64)
    body = [
        f"def {verb}_{noun}_{idx}({a}, {b}=None, *, strict=False):",
        f'    """{verb.capitalize()} the {noun} from ``{a}``.',
        "",
        f"    Returns ``None`` when ``{a}`` is empty; raises ``ValueError`` in strict mode.",
        '    """',
        f"    if not {a}:",
        "        if strict:",
        f'            raise ValueError("{verb}_{noun}: empty {a}")',
        "        return None",
        "    result = []",
        f"    for pos, item in enumerate({a}):",
        f"        if len(item) {op} {n}:",
        "            result.append(item)",
        f"        elif {b} is not None and item in {b}:",
        "            continue",
    ]
    for _ in range(rng.randint(0, 6)):
        v = rng.choice(NOUNS)
        body.append(f"        {v}_{pos_suffix(rng)} = _{rng.choice(VERBS)}_{v}(item, pos)")
    body += ["    return result", "", ""]
    return body


def pos_suffix(rng: random.Random) -> str:
    return rng.choice(("tmp", "val", "res", "out", "cur", "nxt"))


def _go_func(rng: random.Random, verb: str, noun: str, idx: int) -> list[str]:
    op, n = rng.choice(CMP_OPS), rng.randint(0, 64)
    name = f"{verb.capitalize()}{noun.capitalize()}{idx}"
    body = [
        f"// {name} {verb}s the {noun} from the given items.",
        f"func {name}(items []string, strict bool) ([]string, error) {{",
        "\tif len(items) == 0 {",
        "\t\tif strict {",
        f'\t\t\treturn nil, fmt.Errorf("{name}: empty items")',
        "\t\t}",
        "\t\treturn nil, nil",
        "\t}",
        "\tresult := make([]string, 0, len(items))",
        "\tfor _, item := range items {",
        f"\t\tif len(item) {op} {n} {{",
        "\t\t\tresult = append(result, item)",
        "\t\t}",
    ]
    body.extend(
        f"\t\t_ = {rng.choice(VERBS)}{rng.choice(NOUNS).capitalize()}(item)" for _ in range(rng.randint(0, 5))
    )
    body += ["\t}", "\treturn result, nil", "}", ""]
    return body


def _java_func(rng: random.Random, verb: str, noun: str, idx: int) -> list[str]:
    op, n = rng.choice(CMP_OPS), rng.randint(0, 64)
    name = f"{verb}{noun.capitalize()}{idx}"
    body = [
        "    /**",
        f"     * {verb.capitalize()}s the {noun} from the given items.",
        "     */",
        f"    public static List<String> {name}(List<String> items, boolean strict) {{",
        "        if (items == null || items.isEmpty()) {",
        "            if (strict) {",
        f'                throw new IllegalArgumentException("{name}: empty items");',
        "            }",
        "            return Collections.emptyList();",
        "        }",
        "        List<String> result = new ArrayList<>();",
        "        for (String item : items) {",
        f"            if (item.length() {op} {n}) {{",
        "                result.add(item);",
        "            }",
    ]
    body.extend(
        f"            {rng.choice(VERBS)}{rng.choice(NOUNS).capitalize()}(item);"
        for _ in range(rng.randint(0, 5))
    )
    body += ["        }", "        return result;", "    }", ""]
    return body


def _rust_func(rng: random.Random, verb: str, noun: str, idx: int) -> list[str]:
    op, n = rng.choice(CMP_OPS), rng.randint(0, 64)
    name = f"{verb}_{noun}_{idx}"
    body = [
        f"/// {verb.capitalize()}s the {noun} from the given items.",
        f"pub fn {name}(items: &[String], strict: bool) -> Result<Vec<String>, Error> {{",
        "    if items.is_empty() {",
        "        if strict {",
        f'            return Err(Error::new("{name}: empty items"));',
        "        }",
        "        return Ok(Vec::new());",
        "    }",
        "    let mut result = Vec::with_capacity(items.len());",
        "    for item in items {",
        f"        if item.len() {op} {n} {{",
        "            result.push(item.clone());",
        "        }",
    ]
    body.extend(
        f"        let _ = {rng.choice(VERBS)}_{rng.choice(NOUNS)}(item);" for _ in range(rng.randint(0, 5))
    )
    body += ["    }", "    Ok(result)", "}", ""]
    return body


def _js_func(rng: random.Random, verb: str, noun: str, idx: int) -> list[str]:
    op, n = rng.choice(CMP_OPS), rng.randint(0, 64)
    op = {"==": "===", "!=": "!=="}.get(op, op)
    name = f"{verb}{noun.capitalize()}{idx}"
    body = [
        "/**",
        f" * {verb.capitalize()} the {noun} from the given items.",
        " */",
        f"function {name}(items, strict) {{",
        "  if (!items || items.length === 0) {",
        "    if (strict) {",
        f"      throw new TypeError('{name}: empty items');",
        "    }",
        "    return [];",
        "  }",
        "  const result = [];",
        "  for (const item of items) {",
        f"    if (item.length {op} {n}) {{",
        "      result.push(item);",
        "    }",
    ]
    body.extend(
        f"    {rng.choice(VERBS)}{rng.choice(NOUNS).capitalize()}(item);" for _ in range(rng.randint(0, 5))
    )
    body += ["  }", "  return result;", "}", f"exports.{name} = {name};", ""]
    return body


def _cpp_func(rng: random.Random, verb: str, noun: str, idx: int) -> list[str]:
    op, n = rng.choice(CMP_OPS), rng.randint(0, 64)
    name = f"{verb}_{noun}_{idx}"
    body = [
        f"// {verb.capitalize()}s the {noun} from the given items.",
        f"std::vector<std::string> {name}(const std::vector<std::string>& items, bool strict) {{",
        "    if (items.empty()) {",
        "        if (strict) {",
        f'            throw std::invalid_argument("{name}: empty items");',
        "        }",
        "        return {};",
        "    }",
        "    std::vector<std::string> result;",
        "    for (const auto& item : items) {",
        f"        if (item.size() {op} {n}) {{",
        "            result.push_back(item);",
        "        }",
    ]
    body.extend(f"        {rng.choice(VERBS)}_{rng.choice(NOUNS)}(item);" for _ in range(rng.randint(0, 5)))
    body += ["    }", "    return result;", "}", ""]
    return body


FUNC = {
    "python": _py_func,
    "go": _go_func,
    "java": _java_func,
    "rust": _rust_func,
    "js": _js_func,
    "cpp": _cpp_func,
}


def _header(spec: RepoSpec, module: str) -> list[str]:
    lang = spec.language
    if lang == "python":
        return [
            f'"""{spec.pkg}.{module}: {module} helpers."""',
            "",
            "from __future__ import annotations",
            "",
            "import os",
            "import re",
            f"from .{rng_mod(module)} import _compat",
            "",
            "",
        ]
    if lang == "go":
        return [f"package {spec.pkg}", "", "import (", '\t"fmt"', '\t"strings"', ")", ""]
    if lang == "java":
        return [
            f"package com.{spec.owner.replace('-', '')}.{spec.pkg};",
            "",
            "import java.util.ArrayList;",
            "import java.util.Collections;",
            "import java.util.List;",
            "",
            f"public final class {module.capitalize()} {{",
            "",
        ]
    if lang == "rust":
        return ["use crate::error::Error;", "use std::collections::HashMap;", ""]
    if lang == "js":
        return ["'use strict';", "", "const debug = require('debug')('" + spec.pkg + ":" + module + "');", ""]
    return [
        f'#include "{spec.pkg}/{module}.h"',
        "",
        "#include <stdexcept>",
        "#include <string>",
        "#include <vector>",
        "",
        f"namespace {spec.pkg} {{",
        "",
    ]


def rng_mod(module: str) -> str:
    return "compat" if module != "compat" else "utils"


def _footer(spec: RepoSpec) -> list[str]:
    if spec.language == "java":
        return ["}", ""]
    if spec.language == "cpp":
        return [f"}}  // namespace {spec.pkg}", ""]
    return []


@dataclass(slots=True)
class Repo:
    """One checkout: a file tree whose contents are generated lazily and cached."""

    spec: RepoSpec
    commit: str
    sources: list[str]  # relative paths of source files
    tests: list[str]
    others: list[str]  # README, build files
    _cache: dict[str, str] = field(default_factory=dict)
    _funcs: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    @property
    def all_paths(self) -> list[str]:
        return self.others + self.sources + self.tests

    def read(self, rel: str) -> str:
        text = self._cache.get(rel)
        if text is None:
            text = self._generate(rel)
            self._cache[rel] = text
        return text

    def _generate(self, rel: str) -> str:
        rng = random.Random(digest("file", self.spec.key, self.commit, rel))
        spec = self.spec
        if rel in self.others:
            return _other_file(rng, spec, rel)
        module = rel.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        lines = _header(spec, module)
        gen = FUNC[spec.language]
        n_funcs = rng.randint(4, 34)
        for i in range(n_funcs):
            verb, noun = _ident(rng)
            lines.extend(gen(rng, verb, noun, i))
        lines.extend(_footer(spec))
        return "\n".join(lines) + "\n"

    def functions(self, rel: str) -> list[tuple[str, int]]:
        """(function name, line index of its comparison line) for every function in a file."""
        cached = self._funcs.get(rel)
        if cached is not None:
            return cached
        out: list[tuple[str, int]] = []
        name = ""
        for i, line in enumerate(self.read(rel).split("\n")):
            s = line.strip()
            if s.startswith(("def ", "func ", "pub fn ", "function ", "public static ")) or (
                s.startswith("std::vector<std::string> ") and "(" in s
            ):
                head = s.split("(", 1)[0]
                name = head.split()[-1]
            elif name and (
                s.startswith("if len(item)") or s.startswith("if (item.") or s.startswith("if item.")
            ):
                out.append((name, i))
                name = ""
        self._funcs[rel] = out
        return out


def _other_file(rng: random.Random, spec: RepoSpec, rel: str) -> str:
    if rel == "README.md":
        body = [
            f"# {spec.name}",
            "",
            f"`{spec.pkg}` is a small {spec.language} library.",
            "",
            "## Installation",
            "",
            f"Clone https://github.com/{spec.owner}/{spec.name} into /repository "
            "(or any folder) and build it with the usual tools.",
            "",
            "## Development",
            "",
        ]
        body += [
            " ".join(rng.choices(WORDS, k=rng.randint(8, 18))).capitalize() + "."
            for _ in range(rng.randint(6, 20))
        ]
        return "\n".join(body) + "\n"
    if rel.endswith(".toml") or rel.endswith(".cfg"):
        return (
            f'[project]\nname = "{spec.pkg}"\nversion = "{rng.randint(0, 4)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"\n'
            f'requires-python = ">=3.8"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
        )
    if rel == "go.mod":
        return f"module github.com/{spec.owner}/{spec.name}\n\ngo 1.21\n\nrequire github.com/stretchr/testify v1.8.4\n"
    if rel == "Cargo.toml":
        return f'[package]\nname = "{spec.pkg}"\nversion = "1.{rng.randint(0, 40)}.0"\nedition = "2021"\n\n[dependencies]\nserde = "1"\n'
    if rel == "pom.xml":
        return (
            f"<project>\n  <modelVersion>4.0.0</modelVersion>\n  <groupId>com.{spec.owner}</groupId>\n"
            f"  <artifactId>{spec.name}</artifactId>\n  <version>2.{rng.randint(0, 12)}.0</version>\n</project>\n"
        )
    if rel == "package.json":
        return f'{{\n  "name": "{spec.name}",\n  "version": "4.{rng.randint(0, 20)}.1",\n  "scripts": {{"test": "jest"}}\n}}\n'
    return f"cmake_minimum_required(VERSION 3.14)\nproject({spec.pkg} CXX)\nadd_library({spec.pkg} src/core.cpp)\n"


def make_repo(spec: RepoSpec, seed: int, commit: str | None = None) -> Repo:
    """A checkout of ``spec`` at ``commit`` (default: seed-derived), with a language-typical layout."""
    rng = random.Random(digest("repo", spec.key, seed))
    commit = commit or digest("commit", spec.key, seed)[:40]
    mods = rng.sample(MODULES, rng.randint(10, 18))
    lang, pkg = spec.language, spec.pkg
    if lang == "python":
        sources = [f"{pkg}/{m}.py" for m in mods[:-3]] + [f"{pkg}/io/{m}.py" for m in mods[-3:]]
        tests = [f"tests/test_{m}.py" for m in mods[:6]]
        others = ["README.md", "pyproject.toml", "setup.cfg"]
    elif lang == "go":
        sources = [f"{m}.go" for m in mods[:-3]] + [f"internal/{m}/{m}.go" for m in mods[-3:]]
        tests = [f"{m}_test.go" for m in mods[:6]]
        others = ["README.md", "go.mod"]
    elif lang == "java":
        base = f"src/main/java/com/{spec.owner.replace('-', '')}/{pkg}"
        sources = [f"{base}/{m.capitalize()}.java" for m in mods]
        tests = [
            f"src/test/java/com/{spec.owner.replace('-', '')}/{pkg}/{m.capitalize()}Test.java"
            for m in mods[:6]
        ]
        others = ["README.md", "pom.xml"]
    elif lang == "rust":
        sources = [f"src/{m}.rs" for m in mods]
        tests = [f"tests/{m}.rs" for m in mods[:5]]
        others = ["README.md", "Cargo.toml"]
    elif lang == "js":
        sources = [f"lib/{m}.js" for m in mods]
        tests = [f"test/{m}.test.js" for m in mods[:6]]
        others = ["README.md", "package.json"]
    else:
        sources = [f"src/{m}.cpp" for m in mods]
        tests = [f"test/test_{m}.cpp" for m in mods[:5]]
        others = ["README.md", "CMakeLists.txt"]
    return Repo(spec, commit, sources, tests, others)


# --------------------------------------------------------------------------------------------
# Tool outputs
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=2048)
def _lines(text: str) -> tuple[str, ...]:
    """Lines of a file (no trailing empty line); cached because runs re-read the same checkout."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return tuple(lines)


@functools.lru_cache(maxsize=2048)
def _numbered(text: str, sep: str) -> tuple[str, ...]:
    return tuple([f"{i:6d}{sep}{line}" for i, line in enumerate(_lines(text), 1)])


def cat_n(text: str, start: int = 1, end: int | None = None) -> str:
    """``cat -n`` (and OpenHands/SWE-agent ``view``) numbering of lines start..end (1-based)."""
    return "\n".join(_numbered(text, "\t")[start - 1 : end]) + "\n"


def claude_read(text: str, offset: int = 1, limit: int | None = None) -> str:
    """Claude Code's Read tool numbering (``     1→line``)."""
    end = None if limit is None else offset - 1 + limit
    return "\n".join(_numbered(text, "\u2192")[offset - 1 : end])


def sed_range(text: str, start: int, end: int) -> str:
    lines = text.split("\n")
    return "\n".join(lines[start - 1 : end]) + "\n"


def ls_la(rng: random.Random, names: list[str], user: str = "root") -> str:
    out = [
        f"total {rng.randint(40, 400)}",
        f"drwxr-xr-x {rng.randint(5, 12)} {user} {user}  4096 Sep  3 10:12 .",
        f"drwxr-xr-x  1 {user} {user}  4096 Sep  3 10:11 ..",
        f"drwxr-xr-x  8 {user} {user}  4096 Sep  3 10:12 .git",
        f"-rw-r--r--  1 {user} {user}   {rng.randint(100, 999)} Sep  3 10:12 .gitignore",
    ]
    for n in sorted(names):
        if "." in n:
            out.append(f"-rw-r--r--  1 {user} {user} {rng.randint(200, 40000):5d} Sep  3 10:12 {n}")
        else:
            out.append(f"drwxr-xr-x  {rng.randint(2, 9)} {user} {user}  4096 Sep  3 10:12 {n}")
    return "\n".join(out) + "\n"


def find_listing(rng: random.Random, repo: Repo, root: str, target_bytes: int) -> str:
    """``find <root> -type f``: the real tree plus .git objects and fixtures, up to a byte budget."""
    out: list[str] = [f"{root}/{p}" for p in repo.all_paths]
    size = sum(len(x) + 1 for x in out)
    i = 0
    while size < target_bytes:
        if i % 3:
            p = f"{root}/.git/objects/{rand_hex(rng, 2)}/{rand_hex(rng, 38)}"
        else:
            p = f"{root}/{repo.tests[i % len(repo.tests)].rsplit('/', 1)[0]}/fixtures/case_{i:05d}.json"
        out.append(p)
        size += len(p) + 1
        i += 1
    return "\n".join(out) + "\n"


def grep_text(text: str, shown: str, needle: str, limit: int = 400) -> str:
    """``grep -n`` hits of ``needle`` in one file, as ``path:line:text`` lines."""
    out: list[str] = []
    pos = text.find(needle)
    line_no, line_start = 1, 0
    while pos != -1 and len(out) < limit:
        line_no += text.count("\n", line_start, pos)
        line_start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        end = len(text) if end == -1 else end
        out.append(f"{shown}:{line_no}:{text[line_start:end]}\n")
        line_start = end
        pos = text.find(needle, end)
    return "".join(out)


def test_output(
    rng: random.Random,
    spec: RepoSpec,
    root: str,
    test_file: str,
    fn: str,
    passed: bool,
    n_tests: int,
    src_rel: str,
    src_line: str,
    src_lineno: int,
) -> tuple[str, int]:
    """Test-runner output for the repo's language: failing (with a traceback) or passing."""
    lang = spec.language
    if lang == "python":
        head = (
            "============================= test session starts ==============================\n"
            "platform linux -- Python 3.11.7, pytest-7.4.4, pluggy-1.3.0\n"
            f"rootdir: {root}\nconfigfile: pyproject.toml\ncollected {n_tests} items\n\n"
        )
        dots = "".join("." if passed or i != n_tests // 2 else "F" for i in range(n_tests))
        rows = [f"{test_file} {dots[i : i + 60]}" for i in range(0, len(dots), 60)]
        body = (
            head
            + "\n".join(
                f"{r:<74} [{min(100, (k + 1) * 60 * 100 // n_tests):3d}%]" for k, r in enumerate(rows)
            )
            + "\n"
        )
        if passed:
            return (
                body
                + f"\n============================== {n_tests} passed in {rng.randint(1, 40) / 10:.2f}s ===============================\n",
                0,
            )
        got, want = rng.randint(0, 9), rng.randint(10, 19)
        tb = (
            "\n=================================== FAILURES ===================================\n"
            f"________________________________ test_{fn} _________________________________\n\n"
            f'    def test_{fn}():\n        items = ["a" * n for n in range({want})]\n>       assert len({fn}(items)) == {want}\n'
            f"E       AssertionError: assert {got} == {want}\nE        +  where {got} = len([{', '.join(repr('a' * k) for k in range(min(got, 6)))}])\n\n"
            f"{test_file}:{rng.randint(10, 300)}: AssertionError\n"
            f"----------------------------- Captured stdout call -----------------------------\n"
            f"{src_rel}:{src_lineno}: {src_line.strip()}\n"
            "=========================== short test summary info ============================\n"
            f"FAILED {test_file}::test_{fn} - AssertionError: assert {got} == {want}\n"
            f"========================= 1 failed, {n_tests - 1} passed in {rng.randint(1, 40) / 10:.2f}s =========================\n"
        )
        return body + tb, 1
    if lang == "go":
        mod = f"github.com/{spec.owner}/{spec.name}"
        lines = [f"=== RUN   Test{fn}{i}\n--- PASS: Test{fn}{i} (0.00s)" for i in range(n_tests)]
        if passed:
            return "\n".join(lines) + f"\nPASS\nok  \t{mod}\t0.{rng.randint(10, 99)}3s\n", 0
        return "\n".join(lines) + (
            f"\n=== RUN   Test{fn}\n    {test_file}:{rng.randint(10, 200)}: got {rng.randint(0, 9)}, want {rng.randint(10, 20)}\n"
            f"--- FAIL: Test{fn} (0.00s)\nFAIL\nexit status 1\nFAIL\t{mod}\t0.{rng.randint(10, 99)}1s\n"
        ), 1
    if lang == "rust":
        lines = [f"test tests::{fn}_{i} ... ok" for i in range(n_tests)]
        head = f"   Compiling {spec.pkg} v1.0.0 ({root})\n    Finished test [unoptimized + debuginfo] target(s) in 4.{rng.randint(10, 99)}s\n     Running unittests src/lib.rs\n\nrunning {n_tests + (0 if passed else 1)} tests\n"
        if passed:
            return (
                head
                + "\n".join(lines)
                + f"\n\ntest result: ok. {n_tests} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n",
                0,
            )
        return head + "\n".join(lines) + (
            f"\ntest tests::{fn} ... FAILED\n\nfailures:\n\n---- tests::{fn} stdout ----\n"
            f"thread 'tests::{fn}' panicked at {src_rel}:{src_lineno}:9:\nassertion `left == right` failed\n  left: {rng.randint(0, 9)}\n right: {rng.randint(10, 20)}\n"
            f"note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\nfailures:\n    tests::{fn}\n\n"
            f"test result: FAILED. {n_tests} passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s\n\nerror: test failed, to rerun pass `--lib`\n"
        ), 101
    if lang == "java":
        head = f"[INFO] Scanning for projects...\n[INFO] Building {spec.name} 2.10.0\n[INFO] -------------------------------------------------------\n[INFO]  T E S T S\n[INFO] -------------------------------------------------------\n"
        if passed:
            return (
                head
                + f"[INFO] Tests run: {n_tests}, Failures: 0, Errors: 0, Skipped: 0\n[INFO] BUILD SUCCESS\n",
                0,
            )
        return head + (
            f"[ERROR] Tests run: {n_tests}, Failures: 1, Errors: 0, Skipped: 0\n[ERROR] {fn}Test.test{fn}:{rng.randint(20, 200)} expected:<{rng.randint(10, 20)}> but was:<{rng.randint(0, 9)}>\n"
            f"\tat org.junit.Assert.assertEquals(Assert.java:115)\n\tat com.{spec.owner}.{spec.pkg}.{fn}Test.test{fn}({fn}Test.java:{rng.randint(20, 200)})\n[INFO] BUILD FAILURE\n"
        ), 1
    if lang == "js":
        if passed:
            return f"PASS {test_file}\n" + "\n".join(
                f"  \u2713 {fn} case {i} ({rng.randint(1, 9)} ms)" for i in range(n_tests)
            ) + f"\n\nTests:       {n_tests} passed, {n_tests} total\n", 0
        return (
            f"FAIL {test_file}\n  \u25cf {fn} \u203a handles boundary\n\n    expect(received).toBe(expected) // Object.is equality\n\n"
            f"    Expected: {rng.randint(10, 20)}\n    Received: {rng.randint(0, 9)}\n\n      at Object.<anonymous> ({test_file}:{rng.randint(5, 90)}:27)\n\n"
            f"Tests:       1 failed, {n_tests - 1} passed, {n_tests} total\n"
        ), 1
    head = f"Test project {root}/build\n"
    if passed:
        return head + "\n".join(
            f"    Start {i + 1}: test_{fn}_{i}\n{i + 1}/{n_tests} Test #{i + 1}: test_{fn}_{i} ..........   Passed    0.01 sec"
            for i in range(n_tests)
        ) + "\n\n100% tests passed, 0 tests failed\n", 0
    return (
        head
        + f"    Start 1: test_{fn}\n1/1 Test #1: test_{fn} ....***Failed    0.02 sec\n{src_rel}:{src_lineno}: assertion failed\n\n0% tests passed, 1 tests failed out of 1\n",
        8,
    )


def test_command(spec: RepoSpec, test_file: str) -> str:
    return {
        "python": f"python -m pytest {test_file} -q",
        "go": "go test ./... -run . -v",
        "rust": "cargo test",
        "java": "mvn -q test",
        "js": f"npx jest {test_file}",
        "cpp": "cmake --build build && ctest --test-dir build",
    }[spec.language]


def unified_diff(rel: str, before: str, after: str) -> str:
    """``git diff`` of one file: one hunk spanning the changed lines, 3 lines of context."""
    if before == after:
        return ""
    a = before.split("\n")
    b = after.split("\n")
    # trailing "" from the final newline is not a line of the file
    if a and a[-1] == "":
        a.pop()
    if b and b[-1] == "":
        b.pop()
    lo = 0
    while lo < len(a) and lo < len(b) and a[lo] == b[lo]:
        lo += 1
    hi_a, hi_b = len(a), len(b)
    while hi_a > lo and hi_b > lo and a[hi_a - 1] == b[hi_b - 1]:
        hi_a -= 1
        hi_b -= 1
    s = max(0, lo - 3)
    ea, eb = min(len(a), hi_a + 3), min(len(b), hi_b + 3)
    body = (
        [" " + x for x in a[s:lo]]
        + ["-" + x for x in a[lo:hi_a]]
        + ["+" + x for x in b[lo:hi_b]]
        + [" " + x for x in a[hi_a:ea]]
    )
    idx = digest("idx", rel, before)[:7] + ".." + digest("idx", rel, after)[:7]
    return (
        f"diff --git a/{rel} b/{rel}\nindex {idx} 100644\n--- a/{rel}\n+++ b/{rel}\n"
        f"@@ -{s + 1},{ea - s} +{s + 1},{eb - s} @@\n" + "\n".join(body) + "\n"
    )


def problem_statement(rng: random.Random, spec: RepoSpec, fn: str, rel: str) -> str:
    title = f"`{fn}` drops items at the length boundary"
    para = " ".join(rng.choices(WORDS, k=rng.randint(25, 70))).capitalize() + "."
    para2 = " ".join(rng.choices(WORDS, k=rng.randint(15, 50))).capitalize() + "."
    lang = spec.language
    snippet = {
        "python": f"from {spec.pkg}.{rel.rsplit('/', 1)[-1][:-3]} import {fn}\nprint(len({fn}(['a' * n for n in range(12)])))",
        "go": f'items := []string{{"a", "aa", "aaa"}}\nres, _ := {fn}(items, false)\nfmt.Println(len(res))',
        "java": f'System.out.println({fn}(List.of("a", "aa", "aaa"), false).size());',
        "rust": f'let res = {fn}(&items, false).unwrap();\nprintln!("{{}}", res.len());',
        "js": f"const {{ {fn} }} = require('{spec.name}');\nconsole.log({fn}(['a', 'aa', 'aaa']).length);",
        "cpp": f'auto res = {spec.pkg}::{fn}({{"a", "aa", "aaa"}}, false);\nstd::cout << res.size();',
    }[lang]
    return (
        f"{title}\n\n{para}\n\n### Reproduce\n\n```{lang}\n{snippet}\n```\n\n"
        f"### Expected\n\nAll items whose length reaches the limit are kept.\n\n### Actual\n\n{para2}\n"
    )


# --------------------------------------------------------------------------------------------
# Secrets (every kind of docs/ARCHITECTURE.md); random bodies, realistic shapes
# --------------------------------------------------------------------------------------------

# the kinds the corpus plants: every kind the scrubber finds but the two that need a context the
# synthetic commands do not give (a header, an encoded body)
PLANTED_SECRET_KINDS = tuple(k for k in SECRET_KINDS if k not in ("auth_header", "encoded_secret"))


def _b64url(rng: random.Random, n: int) -> str:
    return rand_str(rng, ALNUM + "-_", n)


def make_secret(rng: random.Random, kind: str) -> tuple[str, str, str]:
    """(secret value, a command using it, the output that echoes it back)."""
    if kind == "github_token":
        v = "ghp_" + rand_str(rng, ALNUM, 36)
        return (
            v,
            f"git remote set-url origin https://x-access-token:{v}@github.com/acme/tools.git && git remote -v",
            f"origin\thttps://x-access-token:{v}@github.com/acme/tools.git (fetch)\norigin\thttps://x-access-token:{v}@github.com/acme/tools.git (push)\n",
        )
    if kind == "gitlab_token":
        v = "glpat-" + rand_str(rng, ALNUM + "-_", 20)
        return v, f"export GITLAB_TOKEN={v} && env | grep GITLAB", f"GITLAB_TOKEN={v}\n"
    if kind == "aws_access_key":
        v = "AKIA" + rand_str(rng, string.ascii_uppercase + string.digits, 16)
        return v, "cat ~/.aws/credentials", f"[default]\naws_access_key_id = {v}\nregion = us-east-1\n"
    if kind == "aws_secret_key":
        v = rand_str(rng, ALNUM + "/+", 40)
        return v, f"export AWS_SECRET_ACCESS_KEY={v} && env | grep AWS_SECRET", f"AWS_SECRET_ACCESS_KEY={v}\n"
    if kind == "gcp_api_key":
        v = "AIza" + rand_str(rng, ALNUM + "-_", 35)
        return (
            v,
            f"curl -s 'http://localhost:8080/geocode?key={v}' | head -c 200",
            f'{{"error": "service unavailable", "key": "{v}"}}\n',
        )
    if kind == "azure_key":
        v = rand_str(rng, ALNUM + "+/", 86) + "=="
        conn = f"DefaultEndpointsProtocol=https;AccountName=acmedata;AccountKey={v};EndpointSuffix=core.windows.net"
        return v, "cat .env.azure", f"AZURE_STORAGE_CONNECTION_STRING={conn}\n"
    if kind == "hf_token":
        v = "hf_" + rand_str(rng, string.ascii_letters, 34)
        return v, f"HF_TOKEN={v} python -c \"import os; print(os.environ['HF_TOKEN'])\"", f"{v}\n"
    if kind == "openai_key":
        v = "sk-proj-" + _b64url(rng, 48) + "T3BlbkFJ" + _b64url(rng, 48)
        return v, "grep -rn OPENAI_API_KEY .env", f".env:3:OPENAI_API_KEY={v}\n"
    if kind == "anthropic_key":
        v = "sk-ant-api03-" + _b64url(rng, 93) + "AA"
        return v, f"export ANTHROPIC_API_KEY={v}; echo $ANTHROPIC_API_KEY", f"{v}\n"
    if kind == "slack_token":
        v = f"xoxb-{rng.randint(10**11, 10**12 - 1)}-{rng.randint(10**11, 10**12 - 1)}-{rand_str(rng, ALNUM, 24)}"
        return v, "cat config/notify.yaml", f"slack:\n  channel: '#ci'\n  token: {v}\n"
    if kind == "stripe_key":
        v = "sk_live_" + rand_str(rng, ALNUM, 24)
        return v, "grep -rn STRIPE settings.py", f"settings.py:41:STRIPE_SECRET_KEY = '{v}'\n"
    if kind == "private_key":
        body = "\n".join(rand_str(rng, ALNUM + "+/", 64) for _ in range(12))
        v = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
        return v, "cat ~/.ssh/id_rsa", v + "\n"
    if kind == "jwt":
        # a real JWT: base64url(header JSON) . base64url(claims JSON) . signature — both start "eyJ"
        claims = (
            f'{{"sub":"{rng.randint(1000, 99999)}","name":"{rand_str(rng, string.ascii_lowercase, 8)}",'
            f'"iat":{rng.randint(1_600_000_000, 1_800_000_000)},"role":"{rng.choice(("admin", "dev", "ci"))}"}}'
        )
        body = base64.urlsafe_b64encode(claims.encode()).decode().rstrip("=")
        v = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + body + "." + _b64url(rng, 43)
        return (
            v,
            f"curl -s -H 'Authorization: Bearer {v}' http://localhost:5000/api/me",
            f'{{"user": "dev", "token": "{v}"}}\n',
        )
    if kind == "url_password":
        v = rand_str(rng, ALNUM, 14)
        url = f"postgres://admin:{v}@db.internal:5432/app"
        return v, f"echo DATABASE_URL={url} >> .env && tail -n 1 .env", f"DATABASE_URL={url}\n"
    # env_secret
    v = rand_str(rng, ALNUM, 32)
    return v, "env | grep -i secret", f"DJANGO_SECRET_KEY={v}\nSECRET_KEY={v}\n"
