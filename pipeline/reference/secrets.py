"""Secret patterns for the scrub stage: one entry per kind, in application order.

Every pattern is written in the syntax shared by Python ``re`` and Rust ``regex`` (no lookaround, no
backreferences), so the same text drives the cheap polars pre-filter (Rust, whole columns) and the
exact Python redaction of the few strings that can hold a secret. The part to redact is the named
group ``s``; text around it (``AWS_SECRET_ACCESS_KEY=``, ``https://user:``) is kept so the redacted
text still reads naturally. Optional validators (Python only) reject look-alikes the regex alone
cannot: placeholders (``changeme``, ``${TOKEN}``), values with no digits or too little entropy.

Order matters: a PEM block is removed before its base64 body can look like anything else, specific
vendor tokens come before the generic ``url_password``/``env_secret`` rules, and a value already
replaced by ``<REDACTED:kind>`` can never match again (``<`` starts no value).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

SECRET_KINDS: tuple[str, ...] = (
    "github_token",
    "gitlab_token",
    "aws_access_key",
    "aws_secret_key",
    "gcp_api_key",
    "azure_key",
    "hf_token",
    "openai_key",
    "anthropic_key",
    "slack_token",
    "stripe_key",
    "private_key",
    "jwt",
    "url_password",
    "auth_header",
    "env_secret",
    "encoded_secret",
)

PLACEHOLDER = "<REDACTED:{kind}>"

# Values that are obviously not secrets: documentation placeholders and shell/template references.
_PLACEHOLDER_WORDS = re.compile(
    r"(?i)^(?:x+|\*+|\.+|changeme|change_me|example|dummy|fake|test|testing|secret|password|passwd|"
    r"token|none|null|true|false|undefined|your[_-].*|my[_-].*|<.*>|\{\{.*\}\}|\$.*|%.*%|\[.*\]|"
    r"redacted|placeholder|xxx.*|\.\.\..*)$"
)
# the shortest URL password taken for a credential (see the url_password rule)
_MIN_URL_PASSWORD = 6


def _entropy(s: str) -> float:
    counts = Counter(s)
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _real_value(value: str) -> bool:
    """A generic assignment's value is a secret only if it is not a placeholder and looks random-ish."""
    v = value.strip("'\"")
    if len(v) < 8 or _PLACEHOLDER_WORDS.match(v):
        return False
    # Paths, file names and plain words (``/testbed/pass.txt``, ``settings``) are not credentials.
    if v.startswith(("/", "./", "~")) or re.fullmatch(r"[a-z]+(?:[._-][a-z]+)*", v):
        return False
    return _entropy(v) >= 2.5


def _not_hex_only(value: str) -> bool:
    # AWS secret keys are base64 (mixed case); a 40-hex git SHA after ``aws_secret...=`` is not one.
    return not re.fullmatch(r"[0-9a-f]{40}", value) and _entropy(value) >= 3.0


def _mixed(value: str) -> bool:
    """Random tokens mix cases or digits; lowercase identifiers (``hf_loaddatasetfrom...``) do not."""
    body = value.split("_", 1)[-1]
    return (
        any(c.isdigit() or c.isupper() for c in body)
        and any(c.islower() for c in body)
        and _entropy(body) >= 3.0
    )


@dataclass(frozen=True)
class SecretPattern:
    kind: str
    regex: str  # shared Python/Rust syntax; group ``s`` is the secret
    trigger: str  # a cheap Rust regex that every match of ``regex`` also matches (pre-filter)
    validate: Callable[[str], bool] | None = None
    # A Rust regex that every text in which ``trigger`` and ``regex`` both match *in Python* also
    # matches (see PREFILTER): ``regex`` relaxed, never tightened (boundaries dropped, counts cut to
    # their minimum, Python's extra ``\s`` and ``(?i)`` matches spelled out).
    prefilter: str = ""

    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.regex)


# Python's ``\s`` also matches U+001C-U+001F and its ``(?i)i`` also matches İ and ı; Rust's do not
# (tests/test_scrub_prefilter.py checks both over every code point). A prefilter spells them out.
_WS = r"[\s\x1c-\x1f]"
_I = "[iIİı]"
_B = r"(?:^|[^A-Za-z0-9_\-])"
_SECRET_NAMES = r"(?:API_?KEY|SECRET_?KEY|SECRET|PASSWORD|PASSWD|TOKEN|ACCESS_?KEY|PRIVATE_?KEY|AUTH_?KEY)"  # left boundary without lookbehind (kept outside the redacted group)

_ENCODED_PREFIXES = (
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "sk-ant-",
    "sk-proj-",
    "xoxb-",
    "xoxp-",
    "xapp-",
    "AKIA",
    "hf_",
    "AIza",
    "sk_live_",
    "-----BEGIN",
    "://",
)


def _base64_forms(prefix: str) -> list[str]:
    """The base64 text every encoding of ``prefix`` contains, at each of the three byte alignments."""
    forms = []
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + prefix.encode()).decode().rstrip("=")
        lead = (pad * 8 + 5) // 6  # characters touched by the padding bytes
        end = ((pad + len(prefix)) * 8) // 6  # characters fully determined by the prefix
        if end - lead >= 3:
            forms.append(enc[lead:end])
    return forms


def _encodes_secret(value: str) -> bool:
    """Whether a base64 run decodes to text that holds a secret (one level deep)."""
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (ValueError, binascii.Error):
        return False
    text = raw.decode("utf-8", "replace")
    return bool(find_secrets(text, _nested=True))


PATTERNS: tuple[SecretPattern, ...] = (
    # PEM blocks first: complete blocks, then a header whose END was cut off (truncated output).
    SecretPattern(
        "private_key",
        r"(?P<s>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)"
        r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)",
        r"PRIVATE KEY",
        prefilter=r"PRIVATE KEY",
    ),
    SecretPattern(
        "private_key",
        r"(?P<s>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[\s\\n\"]*[A-Za-z0-9+/=]{16,})+)",
        r"PRIVATE KEY",
        prefilter=r"PRIVATE KEY",
    ),
    # PuTTY keys: the whole file (header to MAC), or its private lines when the end was cut off.
    SecretPattern(
        "private_key",
        r"(?P<s>PuTTY-User-Key-File-[0-9]:(?s:.*?)Private-(?:MAC|Hash):\s*[0-9A-Fa-f]+)",
        r"PuTTY-User-Key-File",
        prefilter=r"PuTTY-User-Key-File-[0-9]:",
    ),
    SecretPattern(
        "private_key",
        r"(?P<s>Private-Lines:\s*[0-9]+(?:[\s\\n\"]*[A-Za-z0-9+/=]{16,})+)",
        r"Private-Lines:",
        prefilter=r"Private-Lines:",
    ),
    SecretPattern(
        "anthropic_key",
        _B + r"(?P<s>sk-ant-(?:api|admin|sid|oat|ort)[0-9]{2}-[A-Za-z0-9_\-]{32,})",
        r"\bsk-ant-",
        prefilter=r"sk-ant-(?:api|admin|sid|oat|ort)[0-9]{2}-[A-Za-z0-9_\-]{32}",
    ),
    SecretPattern(
        "openai_key",
        _B + r"(?P<s>sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}T3BlbkFJ[A-Za-z0-9_\-]{16,}"
        r"|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}|sk-[A-Za-z0-9]{48})(?:[^A-Za-z0-9_\-]|$)",
        r"\bsk-",
        prefilter=r"sk-[A-Za-z0-9_\-]{16,}T3BlbkFJ[A-Za-z0-9_\-]{16}|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40}"
        r"|sk-[A-Za-z0-9]{48}",
    ),
    SecretPattern(
        "github_token",
        r"(?P<s>gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
        r"gh[pousr]_|github_pat_",
        prefilter=r"gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{22}",
    ),
    SecretPattern(
        "gitlab_token",
        r"(?P<s>gl(?:pat|dt|ptt|rt|cbt|oas|soat)-[A-Za-z0-9_\-]{20,})",
        r"gl[a-z]{1,3}t-",
        prefilter=r"gl(?:pat|dt|ptt|rt|cbt|oas|soat)-[A-Za-z0-9_\-]{20}",
    ),
    SecretPattern(
        "aws_access_key",
        _B + r"(?P<s>(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16})(?:[^A-Za-z0-9]|$)",
        r"A(?:KIA|SIA|BIA|CCA|3T)",
        prefilter=r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}",
    ),
    SecretPattern(
        "aws_secret_key",
        r"(?i:aws_?secret(?:_?access)?_?key|aws_?secret|secret_?access_?key)[\"']?\s*[:=]\s*[\"']?"
        r"(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)",
        r"(?i:aws_?secret|secret_?access_?key)",
        _not_hex_only,
        prefilter=r"(?i:aws_?secret(?:_?access)?_?key|aws_?secret|secret_?access_?key)[\"']?"
        + f"{_WS}*[:=]{_WS}*"
        + r"[\"']?[A-Za-z0-9/+]{40}",
    ),
    SecretPattern(
        "gcp_api_key", r"(?P<s>AIza[0-9A-Za-z_\-]{35})", r"AIza", prefilter=r"AIza[0-9A-Za-z_\-]{35}"
    ),
    SecretPattern(
        "azure_key",
        r"(?:AccountKey=|SharedAccessKey=)(?P<s>[A-Za-z0-9+/]{43,86}={0,2})"
        r"|" + _B + r"(?P<s2>[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34})"
        r"|(?i:azure[a-z_]*(?:key|secret))[\"']?\s*[:=]\s*[\"']?(?P<s3>[A-Za-z0-9+/=_~.\-]{32,})",
        r"AccountKey=|SharedAccessKey=|[0-9]Q~|(?i:azure[a-z_]*(?:key|secret))",
        prefilter=r"(?:AccountKey=|SharedAccessKey=)[A-Za-z0-9+/]{43}|[0-9]Q~[A-Za-z0-9_~.\-]{31}"
        + f"|(?i:azure[a-z_İı]*(?:key|secret))[\"']?{_WS}*[:=]{_WS}*"
        + r"[\"']?[A-Za-z0-9+/=_~.\-]{32}",
    ),
    SecretPattern(
        "hf_token",
        _B + r"(?P<s>hf_[A-Za-z0-9]{34,40})(?:[^A-Za-z0-9_]|$)",
        r"\bhf_",
        _mixed,
        prefilter=r"hf_[A-Za-z0-9]{34}",
    ),
    SecretPattern(
        "slack_token",
        r"(?P<s>xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{10,}"
        r"|https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+)",
        r"xox[abposre]-|xapp-|hooks\.slack\.com",
        prefilter=r"xox[abposre]-[A-Za-z0-9\-]{10}|xapp-[0-9]-[A-Za-z0-9\-]{10}"
        r"|https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]",
    ),
    SecretPattern(
        "stripe_key",
        r"(?P<s>(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})",
        r"[sr]k_(?:live|test)_",
        prefilter=r"[sr]k_(?:live|test)_[A-Za-z0-9]{16}",
    ),
    SecretPattern(
        "jwt",
        r"(?P<s>eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})",
        r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ",
        prefilter=r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8}",
    ),
    # HTTP credentials in a header (curl -H, requests headers=, a logged request): Basic, Bearer, token.
    SecretPattern(
        "auth_header",
        r"(?i:authorization|proxy-authorization)[\"']?\s*[:=]\s*[\"']?(?i:basic|bearer|token|digest)\s+"
        r"(?P<s>[A-Za-z0-9._~+/\-]{8,}=*)",
        r"(?i:authorization)",
        _real_value,
        prefilter=f"(?i:author{_I}zat{_I}on)[\"']?{_WS}*[:=]{_WS}*[\"']?"
        + f"(?i:bas{_I}c|bearer|token|d{_I}gest){_WS}+"
        + r"[A-Za-z0-9._~+/\-]{8}",
    ),
    # scheme://user:password@host — the password must not start like a reference (${X}, $X, <...>);
    # a percent-encoded one (%40...) is a password (``%VAR%`` is left to the placeholder check).
    SecretPattern(
        "url_password",
        r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@\"'<>]+:(?P<s>[^\s@/\"'<>${][^\s@/\"'<>]*)@[A-Za-z0-9.\-\[]",
        r"://[^\s:/@\"'<>]+:[^\s@/\"'<>]+@",
        # a value is redacted wherever it occurs, so a short one (a test URL's ``user:p@host``) would
        # rewrite every ``p`` of the run, its system prompt and uid included: under six characters
        # it is a fixture's stand-in, not a credential
        lambda v: len(v) >= _MIN_URL_PASSWORD and not _PLACEHOLDER_WORDS.match(v),
        prefilter=r"[A-Za-z0-9+.\-]://[^\s:/@\"'<>]+:[^\s@/\"'<>${][^\s@/\"'<>]*@[A-Za-z0-9.\-\[]",
    ),
    # .env / shell assignments of secret-named variables: NAME=value (no spaces around '=', which keeps
    # Python source such as ``SECRET_KEY = "..."`` in a repository's settings out of it).
    SecretPattern(
        "env_secret",
        r"(?:^|[\s;&|(\"'])(?:export\s+)?(?i:[A-Z0-9_]*"
        + _SECRET_NAMES
        + r")=[\"']?(?P<s>[^\s\"'$<`;&|]{8,})",
        "(?i:" + _SECRET_NAMES + ")=",
        _real_value,
        prefilter="(?i:" + _SECRET_NAMES.replace("I", _I) + r")=[\"']?[^\s\"'$<`;&|]{8}",
    ),
    # a token hidden in base64 (``echo Z2hwX… | base64 -d``, a Basic header built by hand): the run is
    # decoded and redacted whole when what it encodes holds a secret of another kind
    SecretPattern(
        "encoded_secret",
        r"(?:^|[^A-Za-z0-9+/])(?P<s>[A-Za-z0-9+/]{20,}={0,2})",
        "",  # filled in below: the base64 forms of the vendor prefixes
        _encodes_secret,
    ),
)

PATTERNS = tuple(
    SecretPattern(
        p.kind,
        p.regex,
        trigger := "|".join(re.escape(f) for pre in _ENCODED_PREFIXES for f in _base64_forms(pre)),
        p.validate,
        prefilter=trigger,  # the pattern runs only where its trigger matches: literals, same in Rust
    )
    if p.kind == "encoded_secret"
    else p
    for p in PATTERNS
)

# One Rust regex that every string the scrub has ever searched matches (kept: which strings are searched
# is part of the output; a Unicode ``\b`` makes it slow over whole columns, so it is only run on the
# few strings PREFILTER keeps).
TRIGGER: str = "|".join(f"(?:{p.trigger})" for p in PATTERNS)
# One Rust regex that every string in which :func:`find_secrets` can find anything matches: if no
# pattern has a match in a text, nothing is replaced and every pattern sees the text as it is. Much
# tighter than TRIGGER (``token=None`` in source code is no candidate) and fast over whole columns.
PREFILTER: str = "|".join(f"(?:{p.prefilter})" for p in PATTERNS)

# PREFILTER as a few regexes whose matches are OR-ed per string (the same strings match): Rust's engine
# keeps its fast literal search on each group, and abandons it for the whole alternation (its lazy DFA
# gives up: 0.43 s against 0.24 s over the 196 MB of outputs of bench/out/corpus-r806-e2-s11). A pattern
# whose prefilter starts with no literal (url_password) or with many (encoded_secret) goes alone.
_PREFILTER_GROUP = {
    "auth_header": 1,
    "aws_secret_key": 1,
    "url_password": 2,
    "encoded_secret": 3,
    "env_secret": 4,
}
PREFILTER_GROUPS: tuple[str, ...] = tuple(
    "|".join(f"(?:{p.prefilter})" for p in PATTERNS if _PREFILTER_GROUP.get(p.kind, 0) == g)
    for g in range(1 + max(_PREFILTER_GROUP.values()))
)

_COMPILED: tuple[tuple[SecretPattern, re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (p, p.compiled(), re.compile(p.trigger)) for p in PATTERNS
)


def find_secrets(text: str, *, _nested: bool = False) -> list[tuple[str, str]]:
    """Every (kind, secret value) in ``text``, in pattern order; values validated, deduplicated."""
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    work = text
    for pat, rx, trig in _COMPILED:
        if (_nested and pat.kind == "encoded_secret") or not trig.search(work):
            continue
        new: list[tuple[str, str]] = []
        for m in rx.finditer(work):
            value = next((g for g in (m.groupdict().get(k) for k in ("s", "s2", "s3")) if g), None)
            if not value or value in seen or (pat.validate is not None and not pat.validate(value)):
                continue
            seen.add(value)
            new.append((pat.kind, value))
        # Hide what this pattern found so later (generic) patterns cannot count it a second time.
        for kind, value in new:
            work = work.replace(value, PLACEHOLDER.format(kind=kind))
        found.extend(new)
    return found


def redact(text: str, secrets: list[tuple[str, str]]) -> str:
    """Replace every occurrence of each known secret value by its typed placeholder.

    Longest values first so a secret that contains another (a URL holding a token) is replaced whole.
    """
    for kind, value in sorted(secrets, key=lambda kv: -len(kv[1])):
        if value in text:
            text = text.replace(value, PLACEHOLDER.format(kind=kind))
    return text
