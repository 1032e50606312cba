"""A release to publish, offline: a small synthetic build, its blind copy and gold, and the dry-run
Hub trees of the dataset, the metric Spaces and the leaderboard; and what the Hub gives a tree
(its requirements, the Space image's extras, Spaces' variables)."""

from __future__ import annotations

import random
from pathlib import Path

import speakersleuth.speakersleuth_dataset as ssd
from publishing.__main__ import main as publish_main
from tests.support.synthetic import build_synthetic_dataset, dialogue_records

#: A seed nobody could guess (blind refuses guessable ones).
SECRET_SEED = 2**62 + 271828
#: What a Gradio Space's image has besides the repo's requirements: ``spaces`` (Gradio on Spaces
#: watches the app with its reloader, which needs it).
SPACES_IMAGE = ("spaces==0.51.3",)
#: What Spaces sets for a Space with ``hf_oauth: true`` (the client's secret also keys the session cookie).
OAUTH = {
    "OAUTH_CLIENT_ID": "test-client",
    "OAUTH_CLIENT_SECRET": "test-secret",
    "OAUTH_SCOPES": "openid profile",
    "OPENID_PROVIDER_URL": "https://huggingface.co",
}


def make_release(root: Path) -> dict[str, Path]:
    """A build (with a labelled validation split), its blind copy and gold, and the dry-run trees of
    publishing them with the metric Spaces and the leaderboard, under ``root``."""
    full = build_synthetic_dataset(root / "full", dialogues=6, variants=("main",))
    with ssd.DatasetWriter(full, "detection", "validation") as writer:
        writer.write_all(dialogue_records("main", 99, random.Random(1))[0])
    ssd.write_card(full, "# SpeakerSleuth (synthetic)\n\nFor tests only.\n\n## Citation\n\nc", build_seed=SECRET_SEED)
    ssd.write_blind(full, root / "public", root / "gold")
    args = [
        "--org",
        "acme",
        "--dataset",
        str(root / "public"),
        "--gold",
        str(root / "gold"),
        "--metrics",
        "--space",
        "--trees-out",
        str(root / "trees"),
    ]
    assert publish_main(args) == 0
    return {"full": full, "public": root / "public", "gold": root / "gold", "trees": root / "trees", "root": root}


def space_variables(release: dict[str, Path], port: int) -> dict[str, str]:
    """What Spaces gives the leaderboard's process: ``SYSTEM``, ``SPACE_ID``, the OAuth client, and the
    Space's variables (the dataset and gold, here folders; the port is Spaces' 7860 there)."""
    return {
        "SYSTEM": "spaces",
        "SPACE_ID": "acme/speakersleuth-leaderboard",
        "SPEAKERSLEUTH_PORT": str(port),
        "SPEAKERSLEUTH_DATASET": str(release["public"]),
        "SPEAKERSLEUTH_GOLD": str(release["gold"]),
        **OAUTH,
    }


def tree_requirements(tree: Path) -> list[str]:
    return [line for line in (tree / "requirements.txt").read_text().splitlines() if line.strip()]
