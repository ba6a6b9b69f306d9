"""The package's floors: every import goes downhill (docs/ARCHITECTURE.md "Floors").

The import graph is read from the source (every ``import`` and ``from ... import``, at module level
or inside a function, type-checking ones included), so a module that reaches up a floor fails here
even when nothing runs it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pipeline"

# Lowest first. A module may import its own package and the floors below it, never a floor above.
FLOORS: tuple[str, ...] = (
    "io",  # files, faults, the HTTP stream, the Hub: the standard library only
    "core",  # the ground of the run: the run model, the config, the stage names and order
    "text",  # shell commands, UTF-8 buffers, output tails, the SWE-smith id grammar
    "store",  # the work dir's state, the ledger, a row's publishing size
    "reference",  # benchmark tables, secret rules, the reference cache
    "sources",  # the Unit model, the Source protocol, the SOURCES registry, the readers
    "parsers",  # one module per format, the FORMATS registry
    "convert",  # an episode to mini-swe-agent's messages
    "dedup",  # dedup keys and the LSH
    "leaks",  # the solution and benchmark leak scanners
    "verify",  # the converted run against its own record
    "stages",  # one module per step, the step contract, the context
    "executors",  # local and Ray maps, knowing nothing of the steps
    "publish",  # shards, the card, the publisher
    "orchestration",  # per-unit work, the driver, trajpipe convert
    "report",  # the audit
    "cli",  # the command line
)
# Developer tooling beside the product: only the command line reaches it, and only lazily.
DEVKIT = "devkit"
DEVKIT_USERS = ("cli",)


def _floor_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _module_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.Module) -> list[tuple[str, int, bool]]:
    """(imported module, line, at module level) for every import of the package."""
    top = {id(node) for node in tree.body}
    for node in tree.body:  # an `if TYPE_CHECKING:` block is module level too
        if isinstance(node, ast.If):
            top |= {id(n) for n in node.body}
    out: list[tuple[str, int, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"relative import at line {node.lineno}"
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out += [(n, node.lineno, id(node) in top) for n in names if n.split(".")[0] == "pipeline"]
    return out


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_package_has_a_floor() -> None:
    declared = {*FLOORS, DEVKIT}
    found = {_floor_of(_module_of(p)) for p in _modules()} - {""}
    assert found <= declared, f"packages without a floor: {sorted(found - declared)}"
    assert declared <= found, f"floors without a package: {sorted(declared - found)}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_downhill(path: Path) -> None:
    module = _module_of(path)
    floor = _floor_of(module)
    upward = []
    for imported, line, at_top in _imports(ast.parse(path.read_text(), str(path))):
        target = _floor_of(imported)
        if not target or target == floor:
            continue
        if target == DEVKIT:
            if floor not in DEVKIT_USERS or at_top:
                upward.append(f"line {line}: {imported} (the devkit is imported lazily, by the CLI only)")
            continue
        if floor == DEVKIT:
            continue  # the devkit stands on the whole product
        if FLOORS.index(target) > FLOORS.index(floor):
            upward.append(f"line {line}: {imported} ({target} is above {floor})")
    assert not upward, f"{module} imports upward:\n" + "\n".join(upward)


def test_the_floors_catch_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: the ledger reaching up to the steps for the stage order is flagged."""
    tree = ast.parse("from pipeline.stages import STAGE_ORDER\n")
    ((imported, _, at_top),) = _imports(tree)
    assert at_top and FLOORS.index(_floor_of(imported)) > FLOORS.index("store")


def test_modules_stay_small() -> None:
    """No module over 600 lines outside the devkit: a bigger one holds more than one concept."""
    limit = 600
    big = {
        str(p.relative_to(PACKAGE)): n
        for p in _modules()
        if _floor_of(_module_of(p)) != DEVKIT and (n := len(p.read_text().splitlines())) > limit
    }
    assert set(big) <= OVERSIZED, f"modules over {limit} lines: {big}"
    assert set(big) >= OVERSIZED, f"split, so no longer oversized: {sorted(OVERSIZED - set(big))}"


# The modules not yet split by concept; the list only shrinks (it is empty: keep it so).
OVERSIZED: frozenset[str] = frozenset()
