"""Affine ``duel_turns@v4`` view records: a node graph of baked text messages."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pipeline.core.episode import Episode, ParseError, RawRun
from pipeline.parsers.assembly import messages_episode, resolved_from
from pipeline.parsers.fields import as_dict, as_list, opt_str, sub_dict, text_of
from pipeline.parsers.format import Format, Machines
from pipeline.parsers.messages import Msg
from pipeline.parsers.workdir import declared_workdir


def _parent(node: dict[str, Any], i: int, n: int, linear_default: bool) -> int | None:
    """A node's parent index, or None for a root. Missing parent means "previous node" in
    linear traces; out-of-range, self or non-int parents are treated as roots."""
    if "parent" not in node:
        return i - 1 if linear_default and i > 0 else None
    p = node["parent"]
    if isinstance(p, bool) or not isinstance(p, int) or p < 0 or p >= n or p == i:
        return None
    return p


def _cycle_node(parents: list[int | None]) -> int | None:
    """A node on a cycle of parent links, or None (iterative: each node is walked once)."""
    state = [0] * len(parents)  # 0 unseen, 1 on the current walk, 2 done
    for start in range(len(parents)):
        walk: list[int] = []
        cur: int | None = start
        while cur is not None and state[cur] == 0:
            state[cur] = 1
            walk.append(cur)
            cur = parents[cur]
        if cur is not None and state[cur] == 1:
            return cur
        for node in walk:
            state[node] = 2
    return None


def longest_path(parents: list[int | None]) -> list[int]:
    """Node indices of the longest root→leaf path (ties: highest leaf index).

    Iterative (no recursion limit) and cycle-proof: a walk that meets a node already on its own
    chain treats that edge as absent, so every node gets a finite depth."""
    n = len(parents)
    depth = [0] * n
    eff: list[int | None] = list(parents)  # parents with cycle-closing edges cut
    for start in range(n):
        if depth[start]:
            continue
        chain: list[int] = []
        on_chain: set[int] = set()
        cur: int | None = start
        while cur is not None and not depth[cur] and cur not in on_chain:
            chain.append(cur)
            on_chain.add(cur)
            cur = eff[cur]
        if cur is not None and cur in on_chain:
            eff[chain[-1]] = None  # the edge that closed the cycle
            base = 0
        else:
            base = depth[cur] if cur is not None else 0
        for node in reversed(chain):
            base += 1
            depth[node] = base
    has_child = [False] * n
    for p in eff:
        if p is not None:
            has_child[p] = True
    best = -1
    for i in range(n):
        if not has_child[i] and (best < 0 or depth[i] >= depth[best]):
            best = i
    if best < 0:
        return []
    path: list[int] = []
    cur = best
    while cur is not None:
        path.append(cur)
        cur = eff[cur]
    path.reverse()
    return path


def _is_chain(nodes: list[Any]) -> bool:
    """Whether the nodes are the usual record's chain: all objects, node 0 without a parent and
    node i's parent ``i - 1`` (an int, never a bool or float that compares equal). Its longest
    path is every node, and no parent needs checking one by one."""
    if not nodes or set(map(type, nodes)) != {dict}:
        return False
    parents = [nd.get("parent") for nd in nodes]
    return (
        parents[0] is None
        and parents[1:] == list(range(len(parents) - 1))
        and set(map(type, parents[1:])) <= {int}
    )


def _checked_path(nodes: list[Any], where: str, linear_default: bool) -> list[int]:
    """The longest root→leaf path of any node graph, refusing a node that is no object, a parent
    that names no node and a cycle of parent links."""
    n = len(nodes)
    parents: list[int | None] = []
    for i, nd in enumerate(nodes):
        if not isinstance(nd, dict):  # checked first: the location text is built only for the error
            as_dict(nd, f"{where}[{i}]")
        p = _parent(nd, i, n, linear_default)
        if "parent" in nd and nd["parent"] is not None and p is None:
            # a parent that names no node is a corrupt record, not one to repair into some path
            raise ParseError(
                "bad_graph", f"{where}[{i}].parent: {str(nd['parent'])[:40]} names no other node"
            )
        parents.append(p)
    cycle = _cycle_node(parents)
    if cycle is not None:
        raise ParseError("bad_graph", f"{where}[{cycle}]: the parent links form a cycle")
    return longest_path(parents)


def graph_messages(
    nodes: list[Any], where: str, *, linear_default: bool, message_key: str | None
) -> tuple[list[Msg], Counter[str]]:
    """The messages on the longest root→leaf path of a node graph."""
    from pipeline.parsers.messages import normalize_message

    counters: Counter[str] = Counter()
    path = range(len(nodes)) if _is_chain(nodes) else _checked_path(nodes, where, linear_default)
    if message_key is not None:
        return [
            normalize_message(nodes[i].get(message_key), f"{where}[{i}].{message_key}") for i in path
        ], counters
    msgs: list[Msg] = []
    for i in path:
        nd = nodes[i]
        role = nd.get("role")
        if not isinstance(role, str):
            raise ParseError("bad_shape", f"{where}[{i}].role: {type(role).__name__}")
        content = nd.get("content")
        # plain text (the usual case) needs no location string for text_of's errors
        msgs.append(
            Msg(role, content if isinstance(content, str) else text_of(content, f"{where}[{i}].content"))
        )
    return msgs, counters


def parse_view(raw: RawRun) -> Episode:
    rec = raw.payload
    nodes = as_list(rec.get("nodes"), "nodes")
    if not nodes:
        raise ParseError("no_steps", "nodes is empty")
    msgs, counters = graph_messages(nodes, "nodes", linear_default=False, message_key=None)
    policy = sub_dict(rec, "policy")
    stratum = opt_str(rec.get("stratum"))
    instance_id = opt_str(rec.get("instance_id")) or opt_str(rec.get("traj_id")) or ""
    if not instance_id:
        raise ParseError("missing_field", "instance_id")
    ep = messages_episode(
        msgs,
        instance_id=instance_id,
        repo=opt_str(rec.get("repo")) or "",
        pool=opt_str(rec.get("source")) or "unknown",
        language=opt_str(rec.get("language")) or "unknown",
        base_commit=opt_str(rec.get("base_commit")),
        patch=opt_str(rec.get("patch")),
        origin=raw.origin,
        harness=opt_str(policy.get("harness")) or "unknown",
        model=opt_str(rec.get("model")) or opt_str(policy.get("model")) or "unknown",
        source_uid=raw.source_uid,
        resolved=resolved_from(rec.get("resolved")),
        fold_group=stratum.split(":", 1)[0] if stratum else opt_str(rec.get("fold_group")),
        epoch=raw.epoch,
        root_hint=declared_workdir(msgs),
    )
    ep.counters.update(counters)
    return ep


# The harnesses of Affine's policies (``policy.harness``) and the machine each one is.
# Harnesses whose shell tool notes every nonzero exit in its result (Claude Code's leading "Exit
# code N", pi's "Command exited with code N", the bash and hermes tools' "[exit code: N]"): a
# result without the note records an exit status of 0.
EXIT_NOTED_HARNESSES = frozenset({"bash", "pi", "claude_code", "hermes_agent"})

AFFINE_MACHINES: Machines = {
    "bash": ("bash", "Affine's bash-tool harness (each command runs in `bash -c`, off a terminal)"),
    "mini_swe_textbased": (
        "textbased",
        "mini-swe-agent's text-based loop (one ```bash block per turn, `subprocess.run` per command)",
    ),
    "mini_swe": (
        "textbased",
        "mini-swe-agent's text-based loop (one ```bash block per turn, `subprocess.run` per command)",
    ),
    "pi": ("pi", "pi-coding-agent over ACP (tools `read`, `bash`, `edit`, `write`)"),
    "claude_code": (
        "claude-code",
        "Claude Code over ACP (tools `Bash`, `Read`, `Edit`, `Write`, `Grep`, `Glob`, to-do tools)",
    ),
    "kimi_code": ("kimi-code", "Kimi Code over ACP (shell and file tools, to-do tools)"),
    "hermes_agent": ("hermes", "Hermes agent (terminal and file tools, memory tools)"),
    "null": ("chat", "verifiers' plain chat agent with native tools over MCP, no container"),
}


def policy_harness(payload: dict[str, Any]) -> str:
    """An Affine record's ``policy.harness`` (``null`` when it names none)."""
    policy = payload.get("policy")
    h = policy.get("harness") if isinstance(policy, dict) else None
    return h if isinstance(h, str) and h else "null"


def _detect(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("nodes"), list)
        and ("view" in obj or "instance_id" in obj)
    )


FORMAT = Format(
    kind="view",
    parse=parse_view,
    harness=policy_harness,
    machines=AFFINE_MACHINES,
    name="Affine corpus",
    detect=_detect,
    sources=("affine-view",),
)
