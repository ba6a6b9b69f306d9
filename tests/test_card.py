"""Card: the fixed sections and tables, filled with this build's numbers from the ledger."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # before huggingface_hub is imported: any real call fails loudly

import re
from pathlib import Path

import huggingface_hub.constants
import polars as pl
import pytest
import yaml
from huggingface_hub import DatasetCard

from pipeline.publish.card import feature_yaml, origin_text, render_card, size_category
from schemas.run import COLUMNS, PUBLISHED
from tests.builders import sample_drops, sample_rows, sample_stats, table, work_frame

SEED_CARD = Path(__file__).parent / "fixtures" / "seed_card_002.txt"
BASH = "mini-coder-affine-bash"


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture
def seed_card() -> str:
    path = SEED_CARD

    # the file was saved with each line framed as "| <line> |" ("|" alone for an empty line)
    def unframe(line: str) -> str:
        if line.startswith("| ") and line.endswith(" |"):
            return line[2:-2]
        return "" if line.strip() in ("|", "| |") else line

    return "\n".join(unframe(line) for line in path.read_text().splitlines())


def headings(card: str) -> list[str]:
    return [line for line in card.splitlines() if line.startswith("#")]


def table_headers(card: str) -> list[str]:
    lines = card.splitlines()
    return [
        lines[i].strip()
        for i in range(len(lines) - 1)
        if lines[i].startswith("|") and lines[i + 1].startswith("|---")
    ]


def bash_card(checked: bool = True) -> tuple[str, pl.DataFrame]:
    frame = work_frame(sample_rows())
    drops = sample_drops()
    stats = sample_stats(frame, drops, checked=checked)
    rows = frame.filter(pl.col("dataset") == BASH)
    return render_card(BASH, rows, stats, drops, benchmarks_checked=checked, epochs=[84, 85]), rows


def test_sections_and_table_headers_match_seed_002(seed_card: str) -> None:
    card, _ = bash_card()
    seed_heads = [re.sub(r"^# .*", "# <dataset>", h) for h in headings(seed_card)]
    assert [re.sub(r"^# .*", "# <dataset>", h) for h in headings(card)] == seed_heads
    assert table_headers(card) == table_headers(seed_card)
    # the Columns table, word for word
    assert table(card, "| Column | Meaning |") == table(seed_card, "| Column | Meaning |")
    for marker in (
        "- **Origin:**",
        "- **Machine:**",
        "- **Repository root:**",
        "1. **Task-level dedup:**",
        "6. **Validated**",
    ):
        assert marker in card and marker in seed_card


def test_yaml_header_roundtrips_through_datasetcard(tmp_path: Path, seed_card: str) -> None:
    card, rows = bash_card()
    (tmp_path / "README.md").write_text(card)
    loaded = DatasetCard.load(tmp_path / "README.md")
    data = loaded.data.to_dict()
    seed_yaml = yaml.safe_load(seed_card.split("---")[1])
    for key in ("license", "language", "tags"):
        assert data[key] == seed_yaml[key]
    assert data["pretty_name"] == BASH
    assert data["size_categories"] == ["n<1K"]
    assert data["configs"] == [
        {
            "config_name": "default",
            "default": True,
            "data_files": [{"split": "train", "path": "data/train-*.parquet"}],
        }
    ]
    info = data["dataset_info"]
    assert [f["name"] for f in info["features"]] == [n for n, _, _ in COLUMNS]
    assert info["splits"][0]["num_examples"] == rows.height == 8
    assert loaded.text.lstrip().startswith(f"# {BASH}")


def test_features_are_what_datasets_writes_for_the_schema() -> None:
    datasets = pytest.importorskip("datasets")
    ours = [{"name": f.name, **feature_yaml(f.type)} for f in PUBLISHED]
    assert ours == datasets.Features.from_arrow_schema(PUBLISHED)._to_yaml_list()


def test_body_numbers_come_from_rows_and_ledger() -> None:
    card, _rows = bash_card()
    assert (
        "8 coding-agent trajectories on 8 SWE-smith tasks, converted to the format of albedo's "
        "`mini-coder` source"
    ) in card
    assert (
        "- **Origin:** Affine's public training corpus (`https://data.affine.io`, view `duel_turns@v4`, "
        "corpus epochs 84–85)."
    ) in card
    assert (
        "- **Machine:** Affine's bash-tool harness (each command runs in `bash -c`, off a terminal)." in card
    )
    # per-stage drops of THIS dataset (the SWE-Lego package_fetch drop is not counted here)
    assert "(1 run dropped: 1 `benchmark_task`)" in card
    assert "(2 runs dropped: 1 `exact`, 1 `near`)" in card
    assert "(2 runs dropped: 1 `no_steps`, 1 `unknown_tool`)" in card
    assert "(3 runs dropped: 2 `git_history`, 1 `network_fetch`)" in card
    assert "against `swebench_lite`, `swebench_verified`" in card
    assert "(1 run dropped: 1 `gold_patch`)" in card
    assert "(1 run dropped: 1 `submit`)" in card
    assert "(2 rows here carry albedo's id)" in card
    # across all datasets, from stats.json: 23 ingested, 1 quarantined, 2 parse/convert drops
    # 23 − (1 + 1 + 1 + 1 + 4 + 1 + 1 + 2) = 11
    assert (
        "Across both datasets: 23 runs exported, 12 dropped (1 unreadable; 1 not parsable; 1 not convertible; "
        "1 benchmark task; 4 solution leaks; 1 benchmark leak; 1 invalid; 2 duplicates), 11 published."
    ) in card
    assert "This dataset: 18 runs ingested, 10 dropped, 8 published" in card
    assert "(2 rows here carry albedo's id)" in card and "Albedo is the training-data collection" in card
    assert "Secrets redacted: 3 (2 `github_token`, 1 `aws_access_key`)." in card
    # Contents tables: every value with its rows, by rows descending
    assert table(card, "| Resolved | Rows |") == {"unknown": "4", "not resolved": "2", "resolved": "2"}
    assert list(table(card, "| Resolved | Rows |")) == ["unknown", "not resolved", "resolved"]
    assert table(card, "| Harness | Rows |") == {"bash": "8"}
    assert table(card, "| Task pool | Rows |") == {"swesmith": "8"}
    assert list(table(card, "| Language | Rows |").items()) == [("python", "5"), ("java", "2"), ("rust", "1")]
    assert "Affine publishes no license for its corpus" in card


def test_skipped_benchmark_check_is_stated() -> None:
    card, _ = bash_card(checked=False)
    assert "the benchmark check was skipped" in card
    assert "as benchmark leaks" not in card
    assert "2 duplicates), 11 published. The benchmark check was skipped." in card


def test_swe_lego_card_origin_machine_and_license() -> None:
    frame = work_frame(sample_rows())
    drops = sample_drops()
    name = "mini-coder-swe-lego-openhands"
    rows = frame.filter(pl.col("dataset") == name)
    card = render_card(name, rows, sample_stats(frame, drops), drops, benchmarks_checked=True, epochs=[0])
    assert card.split("---\n", 2)[2].lstrip().startswith(f"# {name}\n")
    assert "3 coding-agent trajectories on 3 SWE-Lego tasks" in card
    assert (
        "- **Origin:** the SWE-Lego dataset (`swelego`: 1 file, `resolved-00000-of-00003.parquet`)." in card
    )
    assert "OpenHands CodeAct in non-function-calling mode" in card
    assert "(1 run dropped: 1 `package_fetch`)" in card
    assert "SWE-Lego dataset and keep its terms" in card


def test_rendering_is_deterministic_and_order_free() -> None:
    frame = work_frame(sample_rows())
    drops = sample_drops()
    stats = sample_stats(frame, drops)
    rows = frame.filter(pl.col("dataset") == BASH)
    a = render_card(BASH, rows, stats, drops, benchmarks_checked=True, epochs=[84, 85])
    b = render_card(BASH, rows.reverse(), stats, drops.reverse(), benchmarks_checked=True, epochs=[85, 84])
    assert a == b


def test_size_categories_and_origin_epoch_text() -> None:
    assert [size_category(n) for n in (0, 999, 1_000, 31_000, 250_000, 2_000_000)] == [
        "n<1K",
        "n<1K",
        "1K<n<10K",
        "10K<n<100K",
        "100K<n<1M",
        "1M<n<10M",
    ]
    uid = "https://data.affine.io/views/duel_turns@v4/chunks/view_0084_0003.jsonl.gz#L7"
    assert (
        origin_text("Affine corpus", [uid], [84])
        == "Affine's public training corpus (`https://data.affine.io`, view `duel_turns@v4`, corpus epoch 84)."
    )
    assert origin_text("Affine corpus", [uid], [84, 86]).endswith("corpus epochs 84, 86).")
