"""Scrub stage: every secret kind is redacted everywhere in a run; look-alikes are left alone."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.reference.secrets import SECRET_KINDS, find_secrets
from pipeline.stages.scrub import Scrub
from tests.builders import SUBMIT, ctx, work_frame
from tests.builders import run_row as work_row


def all_text(df: pl.DataFrame) -> str:
    parts: list[str] = []
    for r in df.iter_rows(named=True):
        parts += r["commands"] + r["outputs"] + [m["content"] for m in r["messages"]]
    return "\n".join(parts)


# (kind, text holding the secret, the secret value)
GH = "ghp_" + "R7xk2QpL9mZt4WvB8nYc3HdJ6fGs1Ae5Uo0i"
PEM_BODY = "MIIEpAIBAAKCAQEA7bq9xk2Q" + "pL9mZt4WvB8nYc3HdJ6fGs1Ae5Uo0iR7x" * 3
CASES: list[tuple[str, str, str]] = [
    ("github_token", f"git remote set-url origin https://x-access-token:{GH}@github.com/a/b", GH),
    (
        "github_token",
        "token github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCD",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCD",
    ),
    ("gitlab_token", "PRIVATE-TOKEN: glpat-Ab3dE5gH7jK9mN1pQ3sT", "glpat-Ab3dE5gH7jK9mN1pQ3sT"),
    ("aws_access_key", "aws_access_key_id = AKIAZ7Q3XK2LMN4PQR5S", "AKIAZ7Q3XK2LMN4PQR5S"),
    (
        "aws_secret_key",
        "aws_secret_access_key = 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",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Lk3Jd2A",
    ),
    (
        "gcp_api_key",
        'key = "AIzaSyD3kF9xL2mQ7pR4tV8wZ1bN6cH0jY5uE3s"',
        "AIzaSyD3kF9xL2mQ7pR4tV8wZ1bN6cH0jY5uE3s",
    ),
    (
        "azure_key",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
        + "Zm9vYmFyYmF6cXV4" * 5
        + "Zm9vYmFy==;",
        "Zm9vYmFyYmF6cXV4" * 5 + "Zm9vYmFy==",
    ),
    (
        "hf_token",
        "HfFolder.save_token('hf_Q7mXk2pLz9RtV4wB8nYc3HdJ6fGs1Ae5Uo')",
        "hf_Q7mXk2pLz9RtV4wB8nYc3HdJ6fGs1Ae5Uo",
    ),
    (
        "openai_key",
        "client = OpenAI(api_key='sk-proj-Q7mXk2pLz9RtV4wB8nYc3HdJ6fGs1Ae5Uo0iR7xk2QpL9mZt')",
        "sk-proj-Q7mXk2pLz9RtV4wB8nYc3HdJ6fGs1Ae5Uo0iR7xk2QpL9mZt",
    ),
    (
        "anthropic_key",
        "x-api-key: sk-ant-api03-Q7mXk2pLz9RtV4wB8nYc3HdJ6fGs1Ae5Uo0iR7xk2QpL9mZt-AA",
        "sk-ant-api03-Q7mXk2pLz9RtV4wB8nYc3HdJ6fGs1Ae5Uo0iR7xk2QpL9mZt-AA",
    ),
    (
        "slack_token",
        "SLACK=xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUv",
        "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUv",
    ),
    ("stripe_key", "stripe.api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    (
        "private_key",
        f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----\n",
        PEM_BODY,
    ),
    ("private_key", f"cat key.pem\n-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}\n{PEM_BODY}", PEM_BODY),
    (
        "jwt",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    (
        "url_password",
        "pip install --index-url https://deploy:S3cr3tPassw0rd@pypi.internal.example/simple pkg",
        "S3cr3tPassw0rd",
    ),
    ("env_secret", "DATABASE_PASSWORD=q8Zr2LmX7vTp\nDEBUG=1", "q8Zr2LmX7vTp"),
    (
        "env_secret",
        "export OPENWEATHER_API_KEY=9f8e7d6c5b4a39281706f5e4d3c2b1a0 && python app.py",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    ),
    ("env_secret", "MY_SERVICE_TOKEN='Zx81Lq0Pw7Nv' ./deploy.sh", "Zx81Lq0Pw7Nv"),
    ("env_secret", "APP_SECRET_KEY=yGzu4iuccZIJLvMADs4T", "yGzu4iuccZIJLvMADs4T"),
    ("hf_token", "HF_TOKEN=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", "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"),
    # kinds a red-team pass found missed
    (
        "anthropic_key",
        "ANTHROPIC_AUTH=sk-ant-oat01-Q7mXk2pLz9RtV4wB8nYc3HdJ6fGs1Ae5Uo0iR7xk2QpL9mZt-AA claude",
        "sk-ant-oat01-Q7mXk2pLz9RtV4wB8nYc3HdJ6fGs1Ae5Uo0iR7xk2QpL9mZt-AA",
    ),
    (
        "slack_token",
        "SLACK_APP=xapp-1-A0123456789-1234567890-abcdef0123456789abcdef",
        "xapp-1-A0123456789-1234567890-abcdef0123456789abcdef",
    ),
    ("slack_token", "refresh with xoxe-1-My0xLTEyMzQ1Njc4OTAtabcdef", "xoxe-1-My0xLTEyMzQ1Njc4OTAtabcdef"),
    ("env_secret", "PGPASSWORD=q8Zr2LmX7vTp psql -h db -U app", "q8Zr2LmX7vTp"),
    ("env_secret", "db_password=q8Zr2LmX7vTp", "q8Zr2LmX7vTp"),
    (
        "aws_secret_key",
        '{"Version": 1, "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Lk3Jd2A"}',
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Lk3Jd2A",
    ),
    (
        "private_key",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: bot\nPublic-Lines: 1\n"
        "AAAAC3NzaC1lZDI1NTE5AAAAIOq\nPrivate-Lines: 1\nAAAAIBr3xk2QpL9mZt4WvB8nYc3HdJ6fGs1Ae5Uo0iR7xk2Q\n"
        "Private-MAC: 0a1b2c3d4e5f60718293a4b5c6d7e8f9",
        "AAAAIBr3xk2QpL9mZt4WvB8nYc3HdJ6fGs1Ae5Uo0iR7xk2Q",
    ),
    ("url_password", "git clone https://bot:%40S3cr3tPw9x@git.internal.example/a.git", "%40S3cr3tPw9x"),
    ("url_password", "git clone https://bot:_S3cr3tPw9x@git.internal.example/a.git", "_S3cr3tPw9x"),
    (
        "auth_header",
        'curl -H "Authorization: Basic Ym90OnMzY3IzdC1wdzk4" https://api.example',
        "Ym90OnMzY3IzdC1wdzk4",
    ),
    ("auth_header", "headers = {'Authorization': 'Bearer abcDEF123456ghiJKL789'}", "abcDEF123456ghiJKL789"),
    (
        "encoded_secret",
        "echo Z2hwX1I3eGsyUXBMOW1adDRXdkI4blljM0hkSjZmR3MxQWU1VW8waQ== | base64 -d > ~/.token",
        "Z2hwX1I3eGsyUXBMOW1adDRXdkI4blljM0hkSjZmR3MxQWU1VW8waQ==",
    ),
]


@pytest.mark.parametrize(
    ("kind", "text", "secret"), CASES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(CASES)]
)
def test_each_kind_is_redacted_in_command_output_and_messages(kind: str, text: str, secret: str) -> None:
    batch = work_frame([work_row([f"cat notes.txt  # {text}", SUBMIT], [text, ""])])
    out = Scrub(ctx())(batch)
    assert out.dropped.height == 0 and out.kept.height == 1
    published = all_text(out.kept)
    assert secret not in published
    assert f"<REDACTED:{kind}>" in published
    assert out.counters[f"scrub/{kind}"] == 1
    assert sum(out.counters.values()) == 1, out.counters


def test_every_kind_has_a_case() -> None:
    assert {k for k, _, _ in CASES} == set(SECRET_KINDS)


LOOKALIKES: list[str] = [
    "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",  # git SHA
    "run id 123e4567-e89b-12d3-a456-426614174000",  # UUID
    'FIXTURE = "aGVsbG8gd29ybGQgdGhpcyBpcyBhIGJhc2U2NCB0ZXN0IGZpeHR1cmUgc3RyaW5n"',  # base64 fixture
    "token: <REDACTED:github_token>",  # our own placeholder
    "git clone https://github.com/psf/requests.git",
    "ssh://git@github.com:22/owner/repo.git and http://localhost:8000/api",
    "PASSWORD=changeme",
    "API_KEY=${API_KEY}",
    "export GITHUB_TOKEN=$GITHUB_TOKEN",
    "SECRET_KEY=your-secret-key-here",
    'SECRET_KEY = "django-insecure-test-key"',  # Python source, not an env assignment
    "https://user:${PASSWORD}@host.example/x",
    "PWD=/testbed/src OLDPWD=/testbed",
    "def hf_hub_download_with_retries_and_backoff_strategy(): pass",
    "use the task-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
    "AKIAIOSFODNN7EXAMPLEXYZ123 is too long to be an access key id",
    "TOKEN=short1",
]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalikes_are_not_redacted(text: str) -> None:
    assert find_secrets(text) == []
    batch = work_frame([work_row([f"cat f.txt  # {text}"], [text])])
    out = Scrub(ctx())(batch)
    assert out.kept.equals(batch)
    assert not out.counters


def test_secret_seen_only_in_assignment_is_redacted_where_it_is_echoed() -> None:
    """``export X_TOKEN=v`` identifies v; the later bare ``echo`` output must be redacted too."""
    cmds = ["export DEPLOY_TOKEN=Qm9xR2lsbHlfc3RyaW5n", "echo $DEPLOY_TOKEN"]
    outs = ["", "Qm9xR2lsbHlfc3RyaW5n\n"]
    out = Scrub(ctx())(work_frame([work_row(cmds, outs)]))
    row = out.kept.row(0, named=True)
    assert row["outputs"][1] == "<REDACTED:env_secret>\n"
    assert row["commands"][0] == "export DEPLOY_TOKEN=<REDACTED:env_secret>"
    assert "Qm9xR2lsbHlfc3RyaW5n" not in all_text(out.kept)
    assert out.counters == {"scrub/env_secret": 1}


def test_batch_order_and_clean_rows_are_preserved() -> None:
    rows = [work_row(["ls"], ["a.py\n"], source_uid=f"u{i}") for i in range(5)]
    rows[2] = work_row([f"echo {GH}"], [GH + "\n"], source_uid="u2")
    batch = work_frame(rows)
    out = Scrub(ctx())(batch)
    assert out.kept["source_uid"].to_list() == [f"u{i}" for i in range(5)]
    assert out.kept.filter(pl.col("source_uid") != "u2").equals(batch.filter(pl.col("source_uid") != "u2"))
    assert out.kept.row(2, named=True)["commands"] == ["echo <REDACTED:github_token>"]
    assert out.kept.schema == batch.schema
    assert out.counters == {"scrub/github_token": 1}


def test_empty_batch() -> None:
    batch = work_frame([])
    out = Scrub(ctx())(batch)
    assert out.kept.height == 0 and out.dropped.height == 0


# ------------------------------------------------------------------ every column, the ledger, validity


def test_secrets_in_every_published_column_are_redacted() -> None:
    token = GH
    row = work_row(
        ["ls", SUBMIT],
        ["a\n", ""],
        patch=f"+TOKEN = '{token}'\n",
        instance_id=f"acme__w-{token}",
        upstream_id=f"up-{token}",
        model=f"org/{token}",
        source_uid=f"file:///c/{token}.jsonl.gz#L1",
    )
    out = Scrub(ctx())(work_frame([row]))
    kept = out.kept.row(0, named=True)
    for col in ("patch", "instance_id", "upstream_id", "model", "source_uid"):
        assert token not in kept[col] and "<REDACTED:github_token>" in kept[col], col
    assert out.counters["scrub/github_token"] == 1


def test_redaction_of_a_truncated_output_keeps_the_run_valid() -> None:
    """A secret cut in two by the observation's truncation: the output is redacted and the
    observation rendered again from it, so validation still passes and no part of it is left."""
    from pipeline.convert.render import render_observation, submission_of
    from pipeline.stages.validate import Validate

    secret = "ghp_" + "Z9xk2QpL9mZt4WvB8nYc3HdJ6fGs1Ae5Uo0i"
    long_out = "x" * 4990 + secret + "\n" + "y" * 20000 + "\n"
    row = work_row(
        ["cat big.log", SUBMIT],
        [long_out, "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n"],
        problem_statement=f"Fix it; the CI token {secret} leaked",
    )
    msgs = row["messages"]
    msgs[0]["content"] = __import__("pipeline.convert.render", fromlist=["x"]).render_system()
    msgs[1]["content"] = __import__("pipeline.convert.render", fromlist=["x"]).render_instance(
        row["problem_statement"]
    )
    msgs[3]["content"] = render_observation(long_out, 0)
    msgs[5]["content"] = submission_of("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n")
    assert secret[:10] in msgs[3]["content"] and secret not in msgs[3]["content"]  # cut by the truncation
    batch = work_frame([row])
    assert Validate(ctx())(batch).kept.height == 1  # valid before scrubbing
    scrubbed = Scrub(ctx())(batch).kept
    assert secret[:10] not in str(scrubbed.row(0, named=True))
    checked = Validate(ctx())(scrubbed)
    assert checked.kept.height == 1, checked.dropped.to_dicts()


def test_ledger_details_and_uids_are_scrubbed() -> None:
    from pipeline.stages.scrub import scrub_ledger
    from schemas.run import DROPS, empty

    drops = pl.concat(
        [
            empty(DROPS),
            pl.DataFrame(
                [
                    {
                        "source_uid": f"file:///c/{GH}.jsonl.gz#L1",
                        "epoch": 1,
                        "dataset": "d",
                        "stage": "solution_leak",
                        "reason": "network_fetch",
                        "detail": f"curl -u bot:{GH} https://api.github.com/repos/a/b",
                    },
                    {
                        "source_uid": "file:///c/x.jsonl.gz#L2",
                        "epoch": 1,
                        "dataset": "d",
                        "stage": "validate",
                        "reason": "roles",
                        "detail": "message 3: tool",
                    },
                ],
                schema=empty(DROPS).schema,
            ),
        ]
    )
    clean = scrub_ledger(drops)
    text = str(clean.to_dicts())
    assert GH not in text and text.count("<REDACTED:github_token>") == 2
    assert clean.row(1) == drops.row(1)


def test_counter_names_are_scrubbed() -> None:
    from collections import Counter

    from pipeline.stages.scrub import scrub_counter_names

    got = scrub_counter_names(Counter({f"convert/tool/{GH}": 2, "convert/turns": 5}))
    assert got == Counter({"convert/tool/<REDACTED:github_token>": 2, "convert/turns": 5})


def test_a_test_urls_one_letter_password_is_no_credential() -> None:
    """Real shape (gruckion/mini-swe-agent, psf__requests-6028): the run's tests use
    ``http://user:p@host``; a value is redacted wherever it occurs, so taking ``p`` for a secret
    rewrote every ``p`` of the run, its system prompt and its uid included."""
    from pipeline.reference.secrets import find_secrets

    assert find_secrets("proxies = {'http': 'http://user:p@10.0.0.1:3128'}") == []
    assert find_secrets("proxies = {'http': 'http://user:pass@10.0.0.1:3128'}") == []
    assert find_secrets("git clone https://bot:Zq8vK2xLw9@github.com/o/r") == [("url_password", "Zq8vK2xLw9")]
