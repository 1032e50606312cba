"""Texts of the Space: title, introduction, the About tab (tasks, exact metric definitions,
submission format, citation)."""

from __future__ import annotations

from speakersleuth.metrics.core import CITATION
from speakersleuth.space.check_tab import MAX_AUDIO_SECONDS, MAX_FILES, MAX_UPLOAD_BYTES
from speakersleuth.space.disclosure import MIN_STEP

TITLE = "SpeakerSleuth leaderboard"

INTRODUCTION = """\
Can a judge tell whether **one speaker's voice stays the same across a multi-turn dialogue**?
SpeakerSleuth evaluates large audio-language models (LALMs) and speaker-embedding methods on
three tasks: detection, localization and discrimination. Scores below are computed on **this
build** of the benchmark; the numbers reported in the paper were measured on the original data and
are shown apart, never mixed with them.
"""

TASKS = """\
## Tasks

A dialogue segment has N turns of a *target speaker* (N = 5; 10 in the `10turn` variant) and up to
20 turns in all. Judges hear the target's turns and a reference clip of the target (>= 3 s, taken
from outside the segment). Each dialogue appears in three scenarios with the same text:

- **S1** fully consistent: the original turns;
- **S2** gender switch: one target turn *k* is voice-converted to a speaker of the other gender;
- **S3** similar speaker: the same turn *k* is converted to the pool speaker most similar to the target.

| task | question | answer |
|---|---|---|
| detection | is the target's voice consistent across its turns? | `consistent` or `inconsistent` |
| localization | which target turns are not the target speaker? | the set of 1-based positions among the N target turns (empty for S1) |
| discrimination | turn *k* is masked; which of three candidates (the S1, S2, S3 versions, shuffled, labelled A/B/C) is the original? rank all three | the original's label, and a ranking of the three labels |

Variants: `main` (one voice-conversion model), `4vc` (the same dialogues; inconsistent clips from
four voice-conversion models) and `10turn` (N = 10).
"""

METRICS = """\
## Metrics (exact definitions)

All values are percentages with one decimal; 95% confidence intervals come from a seeded
bootstrap that resamples dialogues (S1, S2 and S3 of a dialogue stay together).

- **Detection.** Accuracy per scenario, Acc_S1, Acc_S2, Acc_S3; balanced accuracy
  Bal = 1/2 (Acc_S1 + (Acc_S2 + Acc_S3) / 2). A judge that always answers "consistent" scores 50.
- **Localization.** Per instance with predicted set P and gold set G: precision = |P ∩ G| / |P|,
  recall = |P ∩ G| / |G|, F1 = 2PR / (P + R). Conventions: precision = 0 when |P| = 0;
  recall = 0 when |G| = 0; F1 = 1 when both sets are empty; F1 = 0 when P + R = 0 otherwise.
  Macro-averaged per scenario; balanced F1 = 1/2 (F1_S1 + (F1_S2 + F1_S3) / 2).
- **Discrimination, classification.** Accuracy per source dataset and over all instances
  ("Avg" is the accuracy over all instances, not the mean of the per-dataset accuracies).
- **Discrimination, ranking.** The relevance of a candidate is (number of candidates - 1 - its
  index in the gold ranking), i.e. 2, 1, 0 for the gold order S1 > S3 > S2; gain = 2^rel - 1;
  DCG@k = sum over the first k predicted positions i of gain / log2(i + 1);
  NDCG@k = DCG@k / IDCG@k, averaged over instances. **Exact match** is the share of instances
  whose whole ranking equals the gold ranking.
- **Paired accuracy** (beyond the paper). S1, S2 and S3 of a dialogue share their text, so a judge
  that ignores the audio answers all three alike. Paired accuracy is the share of dialogues whose
  three scenarios are all answered correctly (detection; for localization, all three with the
  exact gold set). Any voice-blind judge scores 0.
- **Coverage.** A task is scored when the file has at least one line for it; every instance of
  that task left out counts as wrong, and the share answered is reported as coverage.
"""

SUBMISSION_FORMAT = """\
## Submission format

One JSONL file (UTF-8) per submission and variant, one JSON object per line:

```
{"task": "detection", "id": "...", "prediction": "inconsistent", "score": 0.93}
{"task": "localization", "id": "...", "prediction": [3]}
{"task": "discrimination", "id": "...", "prediction": "B", "ranking": ["B", "C", "A"]}
```

- `id` is the instance id of the config (`detection`, `localization` and `discrimination`, or
  their `-4vc` / `-10turn` versions for the other variants); detection and localization share ids.
- Localization positions are 1-based among the target turns (1..N); `[]` means "all consistent".
- A ranking is a permutation of the candidate labels, best first. Ranking metrics are scored when
  at least one discrimination line has a `ranking`; a line without one then scores NDCG 0 and no
  exact match.
- `"prediction": null` means "no answer" and scores like a missing line (wrong).
- A detection line may carry a `score`: a finite number, higher = more likely inconsistent (a
  probability such as P("inconsistent") from the logits, or an embedding distance). Either every
  detection line has one or none does. Scores give the threshold-free AUROC and EER (columns
  Det AUROC and Det EER): how well the judge hears the difference, apart from where its threshold
  sits; an instance without a line counts as ranked wrong.
- A file with any invalid line (bad JSON, unknown task or id, duplicate (task, id), wrong value
  type, position out of range, ranking that is not a permutation) is refused as a whole, with
  every error named by its line number; nothing of it is stored.
- Submitting the identical file again is recognised and returns the first submission's scores.
- Every submission has a page (the Submission tab, or a link `?submission=<id>`): its per-task
  breakdown with 95% CIs, the SHA-256 of its canonical predictions and those predictions to
  download. Its submitter can withdraw it there; withdrawn predictions cannot be submitted again.
- Limits: file size and line count are capped, and each user may submit a limited number of
  files per time window (see the Submit tab).

Score a file locally before submitting:
`python -m speakersleuth.metrics.score predictions.jsonl --dataset <folder> --variant main` (the test split of a
blind dataset has no gold: score its validation split with `--split validation`).

The example below answers every instance of the variant with a constant ("consistent", no turns,
candidate A, ranking A > B > C). It shows the format only; it is not a baseline result.
"""

CHECK_AUDIO = f"""\
## Check your audio

The **Check your audio** tab runs the benchmark's best embedding judge on a dialogue of your own
(`judges.check`, as `python -m speakersleuth.judges check` does): turn files with a speaker per file, or one
recording with its RTTM, optionally a reference clip per speaker. Per speaker, each turn's score
is drawn as a strip and the turns past τ are flagged. τ is calibrated on this benchmark's TTS
voices, where inconsistent turns are re-spoken or DSP-converted, and on dialogues of real recordings
and two other synthesisers with a planted turn: on other speech it is a starting point. At most {MAX_FILES} files, {MAX_UPLOAD_BYTES // 1_000_000} MB and {MAX_AUDIO_SECONDS / 60:g} minutes
of audio per check; the files are deleted after it and nothing is stored. It needs the speaker
encoders (the `check` extra); a Space without them says so on the tab.
"""

PAPER_NOTE = """\
These are the numbers the SpeakerSleuth paper reports on the original benchmark (DailyTalk, AMI,
Behavior-SD and Bazinga dialogues, converted with the paper's voice-conversion models). They are
**not** scores on this build and must not be compared with the table above as if they were.
"""

CITATION_TEXT = CITATION


PAIRED_BANNER = """\
**This blind copy is paired, and served for a demo only.** Its test rows share dialogues and clips (across rows
or variants): anyone who compares those rows' audio finds the altered turn and the scenario, that is the hidden
gold, whatever this leaderboard shows. Its scores rank nothing; a ranking needs the `--unpaired` copy.
"""


def disclosure_text(policy, rate: tuple[int, int]) -> str:
    """The About tab's section on what the leaderboard shows (``space.disclosure``): the threat model and the bound."""
    if not policy.blind:
        return (
            "## What is shown\n\nThis Space serves a labelled build: every submission's scores, their breakdowns "
            "and analyses, and its canonical predictions are public. One row per submitter, model name and "
            "setting is on the leaderboard: the newest; earlier ones keep their pages."
        )
    state = (
        "**The round is closed**: its selection froze at the close (each identity's newest file of the variant that it "
        "had not withdrawn by then) and the leaderboard shows one row per identity and variant with that file's "
        "private headline metrics; no submission or withdrawal is taken, and the round's gold is published with "
        "the standings, so anyone can score the files again."
        if policy.closed
        else "**The round is open**: the leaderboard shows values on the *public* part only; the private part decides "
        "the final ranking and nothing of it is shown before the round closes."
    )
    return f"""## What is shown: a blind round

The test split of this build is blind and was built for this round with a secret seed.
{state}

- **Two parts.** The test instances are split by dialogue into a public and a private part that share no
  dialogue and no clip. A file answers every test instance of its variant, every task; anything less is refused.
- **Nothing private while the round is open**: not a value, not a status that depends on it. Everything shown
  of a file before the close is a function of its answers on the public part alone.
- **The Ladder on the public part** (Blum & Hardt, 2015): detection balanced accuracy, localization balanced
  F1 and discrimination accuracy on the public part are released, rounded down to a step η, when they beat your
  best released value by more than η; η is the most one answer can change the metric on the public part (at
  least {MIN_STEP} points), so a file that differs from your best in one answer is never released, and models a few
  answers apart are told apart. Files one account sends at once are scored one after another against its best.
- **What the public part cannot protect.** On any public leaderboard a submitter with many accounts can learn
  public labels (each account's first release is its file's public score). Here it decides nothing: the public
  and private parts share no dialogue and no clip, the private part alone decides the standings, and nothing
  of it is shown before the close.
- **The close freezes the selection**: each account's newest file of a variant not withdrawn by then;
  afterwards no file and no withdrawal is taken. The closed table shows the selected files' private figures.
- No per-scenario or per-source values, confidence intervals, analyses or prediction downloads on a blind copy:
  the published gold gives them after the close.
- Budget: {rate[0]} scored submissions per {rate[1] // 3600} hours per user.
- Open round: one row per submitter, model name and setting: each metric's latest released value.
"""
