"""Hand-made scenario units of synthetic tones, for testing records and verification without a build."""

from __future__ import annotations

from speakersleuth.builder_scripts.scenarios import Substitute, Unit
from speakersleuth.builder_scripts.segments import Segment
from tests.support.synthetic import tone


def make_unit(
    dialogue_id: str = "0",
    converted_turn: int = 1,
    num_targets: int = 5,
    target_f0: float = 220.0,
    s2: Substitute = Substitute("m1", "male", 0.2),
    s2_f0: float = 110.0,
    s3: Substitute = Substitute("f2", "female", 0.8),
    s3_f0: float = 250.0,
    seconds: float = 1.0,
) -> Unit:
    """A female target ("t") answering a male speaker; turn ``converted_turn`` of the
    ``num_targets`` target turns is converted to tones at ``s2_f0`` (S2) and ``s3_f0`` (S3); turns
    last ``seconds``, the reference three times as long."""
    window = tuple(range(2 * num_targets))
    seed = 100 * int(dialogue_id)
    return Unit(
        variant="main",
        segment=Segment(dialogue_id, "synthetic", "t", "female", window, window[::2], (), 0),
        turns=[{"speaker": "t" if i % 2 == 0 else "m1", "text": f"turn {i}", "is_target": i % 2 == 0} for i in window],
        vc_model="tone-shift",
        converted_turn=converted_turn,
        s2=s2,
        s3=s3,
        targets=[tone(target_f0, seconds, seed + j) for j in range(num_targets)],
        reference=tone(target_f0, 3 * seconds, seed + 99),
        converted={"S2": tone(s2_f0, seconds, seed + 50), "S3": tone(s3_f0, seconds, seed + 51)},
    )
