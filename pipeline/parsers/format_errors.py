"""Format errors: a reply the harness refused and its nudge, removed; the next reply's thought repaired.

mini-swe-agent (v1 ```` ```bash ````, v2 ```` ```mswea_bash_command ````, and the Affine traces of
mini harnesses) refuses a reply without exactly one action and answers with a nudge ("Please always
provide EXACTLY ONE action in triple backticks, found 2 actions." / v2's ``Format error:`` message,
marked ``extra.interrupt_type: FormatError``). Nothing ran, and the target format has no place for
the exchange, so the policy is:

1. **The run is kept**, its actions and observations untouched.
2. **The exchange is removed**: the refused reply and the nudge (``parse/format_error_removed``,
   one per exchange; consecutive refusals are one exchange each).
3. **The next reply's thought is repaired** when it refers to the exchange: the sentences about
   the formatting mistake itself are removed (``parse/format_thought_repaired``, one per thought
   edited) and every other character is kept. A sentence is removed whole, or not at all; it is
   removed when it is one of
   - "I made a mistake …" describing the refused reply (``_MISTAKE_HEAD``: "… in the previous
     response by including two bash blocks (one for `cat` …)"), every later clause ("but I …")
     about the format too: what it says of the refused reply goes with it, since that reply is gone;
   - a sentence about the exchange (:data:`EXCHANGE_RE`: an apology, "found 2 actions", "my
     previous response", "the system complained", "I will correct this.") that names nothing of
     the task outside its parentheses (:data:`TASK_ANCHOR_RE`: no code span, path, file name,
     identifier or line number; a parenthesis there describes the refused reply);
   - a sentence that only restates the format rule (:data:`RULE_RE`, every word one of
     :data:`RULE_WORDS`: "I should only provide one command.", "I will combine them.");
   - an interjection between removed sentences ("Wait, I see.", "I am very confused.");
   and it never is when it ends with ":" (it introduces what follows). A sentence that also
   speaks of the task stays whole ("I will update `reproduce_issue.py` and run it in a single
   command block."): a mention of the rule is harmless, the run's own prompt states it. Lines and
   paragraphs emptied by the removal go with their line break or blank line; a code block in the
   thought is never touched. An emptied thought is fine: mini-swe-agent accepts a reply that is
   only its bash block, and ``render_assistant`` writes the block alone.
4. **Dropped when it cannot be repaired**: if what is kept still refers to the exchange
   (:data:`FORMAT_ERROR_REFERENCE_RE` = :data:`EXCHANGE_RE`), the run is dropped as
   ``parse/format_error_reference``: a model must not learn to answer an error it never saw, and
   no sentence that also speaks of the task is cut. Only the reply right after an exchange is
   repaired (a later reply that mentions it is kept as it is, as before).

OpenHands' refused editor calls (``parse/rejected_call_removed``) are the same kind of exchange and
follow the same policy (``pipeline/parsers/openhands.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# the nudge: mini-swe-agent 1.x's format_error_template (and 2.x text-based, which embeds it in
# "Format error: <error>…</error>"); 2.x's note for a reply cut by the token limit
FORMAT_ERROR_MARKERS = (
    "EXACTLY ONE action",
    "found 0 actions",
    "Please always provide",
    "Your previous response reached the output token limit",
)

_NOUN = r"(?:bash |shell |code |command |action )?(?:code ?)?(?:blocks?|actions?|commands?)"
_NOUNS = r"(?:bash |shell |code |command |action |separate )?(?:code ?)?(?:blocks|actions|commands)"
# the refused reply ("the previous output" may be the last command's: only "my" says it is the reply)
_EARLIER = (
    r"(?:my (?:previous|last|earlier) (?:output|message)"
    r"|(?:my|the) (?:previous|last|earlier) (?:response|reply|answer|turn|thought(?: block| process)?))"
)
_DESCRIBE = r"(?:including|providing|putting|having|writing|adding|sending|giving|outputting|combining|using)"
# what refers to the exchange itself (the refused reply, the nudge): removable, and what drops a run
# when a kept sentence still says it
EXCHANGE_RE = re.compile(
    "|".join(
        (
            r"\bapologi[sz]e|\bapologies\b|\bsorry\b",
            rf"\bmistakes? again\b|\bsame mistake\b|\bmistake (?:in|with) {_EARLIER}\b"
            rf"|\bmistake (?:of|by) {_DESCRIBE}\b|\brepeat(?:ing|ed)? (?:the|my) mistake\b"
            rf"|\bmistakes?\b[^.!?\n]*?\b(?:(?:bash |code |shell )?blocks?|actions?|again)\b",
            rf"\b{_EARLIER}\b",
            r"\bfound (?:\d+|[XN]|multiple|several) actions?\b|\btriple backticks\b|\bEXACTLY ONE action\b"
            r"|\b\d+ actions\b",
            r"\b(?:confus|trigger|fool|trick)\w* the (?:system|parser|harness)\b"
            r"|\bI (?:split|separated) (?:the |my )?(?:commands|blocks)\b",
            r"\bthe (?:system|parser|harness)(?:'s parser)? (?:said|says|complained|complains|detected|detects"
            r"|rejected|rejects|reported|reports|is reporting|thinks|counted|counts|sees|saw|found|flagged"
            r"|considers|is parsing|parses|might|may|must|probably|seems|is (?:seeing|counting|detecting|very))\b",
            r"\b(?:response|reply|answer|output) was (?:rejected|refused|invalid)\b",
            rf"\b(?:I (?:had|used)|included|provided|put|wrote|gave|sent) (?:\w+ ){{0,3}}?(?:two|three|multiple"
            rf"|several|\d+) {_NOUNS}\b|\b(?:interpreted|counted|treated|parsed|detected|seen) as actions\b"
            r"|\bas (?:multiple|separate|two|several|\d+) actions\b|\bmessed up the (?:format|formatting|response)\b"
            r"|\b(?:included|put|had|wrote|added) (?:a second|another|an extra|an additional) (?:bash |code )?block\b",
            r"\bcorrect(?:ing)? (?:this|that|it)(?=\s*(?:[.,;!]|\Z|by\b|now\b|again\b))|\bcorrecting (?:the |my )?mistake\b",
            r"\bI (?:keep|kept) (?:forgetting|making|doing|putting|including)\b",
        )
    ),
    re.IGNORECASE,
)
# talk about the format rule (the run's own prompt states it): removable, never a reason to drop
RULE_RE = re.compile(
    "|".join(
        (
            rf"\b(?:exactly|only|just) (?:one|1|a single)\b|\b(?:a |one )?single {_NOUN}\b|\bone {_NOUN}\b",
            rf"\b(?:two|three|four|multiple|several|many) {_NOUNS}\b",
            r"\bformat(?:ting|ted)?\b(?! string| spec)|\bmessed up\b|\boops\b",
            r"\bone by one\b|\bone at a time\b|\bsequentially\b|\bseparately\b",
            rf"\bcombin(?:e|ed|ing) (?:them|both|all|the (?:two |both )?{_NOUNS})\b|\binto (?:a single|one) {_NOUN}\b",
        )
    ),
    re.IGNORECASE,
)
# the words of a sentence that states the format rule and nothing else ("I will combine them.",
# "I should only provide one command.", "I must include exactly one bash block.")
_RULE_WORDS = """
    i i'll i'm will must should need needed to have has had having am be being been is are was were
    only just exactly strictly single one a an all both them it they this that these those there
    the my each per at time of in into with without by for and or then now again instead
    not no don't didn't do does doing done make making sure ensure ensuring keep try trying let let's me
    provide provided providing include included including use used using put give issue issuing send
    output write run running ran execute executing combine combined combining follow following stick
    bash shell code block blocks command commands action actions format formatting response responses
    reply message turn separate separately sequentially properly correctly carefully careful
    present rule rules instruction instructions constraint
"""
RULE_WORDS = frozenset(_RULE_WORDS.split())
# "I made a mistake …": a sentence about the refused reply, with whatever it says of that reply
_MISTAKE_HEAD = re.compile(
    r"\A(?:(?:Ah|Oh|Oops|Sorry|Wait|OK|Okay|Hmm|It seems|It looks like),? )?I (?:(?:have |had )?made|make"
    r"|keep making|kept making|am making|seem to (?:have made|keep making|be making|be repeating)|repeated"
    r"|am repeating) (?:a|the|another|this|that|my)(?: same)? (?:mistake|error)\b(?P<rest>.*)\Z",
    re.IGNORECASE | re.DOTALL,
)
_MISTAKE_REST = re.compile(
    rf"\A(?: again)?(?:\s*[.!?]*\s*\Z| (?:in|with) {_EARLIER}\b| (?:of|by) {_DESCRIBE}\b| again\b)",
    re.IGNORECASE,
)
# a clause after the description that says what the agent will do or meant to do
_CLAUSE_RE = re.compile(r"(?:,|;)? \b(?:but|so|and|then) I\b|; ", re.IGNORECASE)
# what the task speaks with: a code span, a path or file name, an identifier, a line number
TASK_ANCHOR_RE = re.compile(
    r"`[^`\n]+`"
    r"|(?<![\w/.])\.{0,2}/[\w.-]+(?:/[\w.-]+)*"  # /abs, ./rel
    r"|\b[\w.-]+/(?:[\w.-]+/)*[\w-]+\.\w{1,5}\b|\b\w+/\w+/\w+"  # a/b.py, a/b/c
    r"|\b[\w-]+\.(?:py|pyi|pyx|rst|txt|md|cfg|ini|toml|json|yaml|yml|c|h|cpp|js|ts|html|css|sh)\b"
    r"|\b[A-Za-z]\w*_\w+\b"  # snake_case, dunder
    r"|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z0-9]+[A-Z]\w*\b"  # camelCase, CamelCase
    r"|\b\w+\(\)"
    r"|\blines? \d+",
)
# an interjection between removed sentences ("Wait, I see."): removed with them
_FILLER_RE = re.compile(
    r"\A(?:(?:Wait|Ah|Oh|Hmm|Oops|OK|Okay|Right|No)[,.!]?\s*)*(?:I see(?: what happened| now)?|I am (?:\w+ )?confused)?[.!]*\Z",
    re.IGNORECASE,
)
# the broad detector: a thought after an exchange that it finds is repaired, and a repaired thought
# it still finds in is dropped
FORMAT_ERROR_REFERENCE_RE = EXCHANGE_RE
_CODE_SPAN = re.compile(r"`[^`\n]*`")


def is_format_nudge(text: str) -> bool:
    """Whether a harness message is mini-swe-agent's format-error nudge (by its text)."""
    return "<returncode>" not in text and any(k in text for k in FORMAT_ERROR_MARKERS)


# --------------------------------------------------------------------------- sentences


def _sentence_ends(line: str) -> list[int]:
    """End offsets of the sentences of one line (each with its trailing blanks): a sentence ends
    after ``.``, ``!`` or ``?`` (and closing quotes or brackets) followed by blank space, outside
    a code span and outside parentheses."""
    ends: list[int] = []
    depth, in_code, i, n = 0, False, 0, len(line)
    while i < n:
        c = line[i]
        if c == "`":
            in_code = not in_code
        elif not in_code and c == "(":
            depth += 1
        elif not in_code and c == ")":
            depth = max(depth - 1, 0)
        elif not in_code and depth == 0 and c in ".!?":
            j = i + 1
            while j < n and line[j] in ".!?\"')]":
                j += 1
            if j < n and line[j] in " \t":
                while j < n and line[j] in " \t":
                    j += 1
                ends.append(j)
                i = j
                continue
        i += 1
    if not ends or ends[-1] != n:
        ends.append(n)
    return ends


def _outside_parentheses(s: str) -> str:
    """``s`` without its parenthesised parts (outside code spans)."""
    out, depth, in_code = [], 0, False
    for c in s:
        if c == "`" and depth == 0:
            in_code = not in_code
        if not in_code and c == "(":
            depth += 1
            continue
        if not in_code and c == ")" and depth:
            depth -= 1
            continue
        if depth == 0:
            out.append(c)
    return "".join(out)


def _talks_format(text: str) -> bool:
    """Whether ``text`` (code spans aside) speaks of the exchange or of the format rule."""
    masked = _CODE_SPAN.sub("`x`", text)
    return bool(EXCHANGE_RE.search(masked) or RULE_RE.search(masked))


def is_mistake_sentence(sentence: str) -> bool:
    """Whether a sentence is about the formatting mistake alone (the removal rule above): "I made
    a mistake …" describing the refused reply, its later clauses about the format too; a sentence
    about the exchange with nothing of the task outside parentheses; or the format rule alone."""
    s = sentence.strip()
    if not s or s.endswith(":"):
        return False
    head = _MISTAKE_HEAD.match(s)
    if head and (_MISTAKE_REST.match(head["rest"]) or _talks_format(head["rest"])):
        return all(_talks_format(c) for c in _CLAUSE_RE.split(_outside_parentheses(head["rest"]))[1:])
    masked = _CODE_SPAN.sub("`x`", s)
    if EXCHANGE_RE.search(masked):
        return TASK_ANCHOR_RE.search(_outside_parentheses(s)) is None
    return RULE_RE.search(masked) is not None and is_rule_only(s)


def is_rule_only(sentence: str) -> bool:
    """Whether every word of ``sentence`` is one of :data:`RULE_WORDS` (no code span either)."""
    if "`" in sentence:
        return False
    words = re.findall(r"[\w']+", sentence.replace("\u2019", "'"))
    return all(w.lower() in RULE_WORDS for w in words)  # a number is no rule word either


def refers_to_exchange(text: str) -> bool:
    """Whether ``text`` (code spans aside) still refers to the removed exchange."""
    return EXCHANGE_RE.search(_CODE_SPAN.sub("`x`", text)) is not None


@dataclass(frozen=True, slots=True)
class Repair:
    """A thought after the policy: ``thought`` (None: it still refers to the exchange, the run is
    dropped) and the sentences removed, in order."""

    thought: str | None
    removed: tuple[str, ...]


def _split(thought: str) -> list[list[str] | str]:
    """The thought's lines: a code-block line or blank line as it is, else its sentences."""
    out: list[list[str] | str] = []
    in_fence = False
    for line in thought.split("\n"):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            out.append(line)
        elif in_fence or not line.strip():
            out.append(line)
        else:
            ends, start, parts = _sentence_ends(line), 0, []
            for end in ends:
                parts.append(line[start:end])
                start = end
            out.append(parts)
    return out


def repair_thought(thought: str) -> Repair:
    """The thought without its sentences about the removed exchange (module docstring, 3-4)."""
    if not _talks_format(thought):
        return Repair(thought, ())
    lines = _split(thought)
    sentences = [(i, j) for i, ln in enumerate(lines) if isinstance(ln, list) for j in range(len(ln))]
    text = {(i, j): lines[i][j] for i, j in sentences}
    drop = {k for k in sentences if is_mistake_sentence(text[k])}
    if not drop:
        return Repair(thought if not refers_to_exchange(thought) else None, ())
    for n, k in enumerate(sentences):  # an interjection next to a removed sentence goes with it
        near = {sentences[m] for m in (n - 1, n + 1) if 0 <= m < len(sentences)}
        if k not in drop and near & drop and _FILLER_RE.match(text[k].strip()):
            drop.add(k)
    kept: list[str | None] = []  # None: a line the removal emptied
    for i, ln in enumerate(lines):
        if isinstance(ln, str):
            kept.append(ln)
            continue
        keep = "".join(p for j, p in enumerate(ln) if (i, j) not in drop)
        if len(keep) == sum(map(len, ln)):
            kept.append(keep)
        elif keep.strip():
            indent = ln[0][: len(ln[0]) - len(ln[0].lstrip())]
            kept.append(indent + keep.strip())
        else:
            kept.append(None)
    out = _join_kept(kept)
    removed = tuple(text[k].strip() for k in sentences if k in drop)
    return Repair(None if refers_to_exchange(out) else out, removed)


def _join_kept(kept: list[str | None]) -> str:
    """The lines kept, with the blank lines an emptied line leaves at a paragraph's edge removed:
    an emptied paragraph goes with one of its blank separators, so the rest keeps its spacing."""
    out: list[str] = []
    emptied = False  # a line was removed since the last line kept
    for line in kept:
        if line is None:
            emptied = True
            continue
        blank = not line.strip()
        if blank and emptied and (not out or not out[-1].strip()):
            continue  # a separator left doubled (or leading) by the removal
        if not blank:
            emptied = False
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    while out and not out[0].strip():
        out.pop(0)
    return "\n".join(out)
