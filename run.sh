#!/usr/bin/env bash
# ./run.sh demo   set up, build the embedded benchmark, run the baseline judges, score them onto
#                 the leaderboard store, and start the Space on http://127.0.0.1:7860
# ./run.sh test   set up and run the test suite
set -euo pipefail
cd "$(dirname "$0")"
./setup.sh
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
py=.venv/bin/python
case "${1:-}" in
  demo)
    # Each step is resumable: the build cache, the judges' outputs and the store survive reruns.
    # The Space is served once the build is published and the first baseline file is on the board;
    # the other baselines (one process per core) and then the threshold sweep run behind it, each
    # file seeded as it is written (the Leaderboard tab says how many are still running).
    shift
    $py -m speakersleuth.builder_scripts build --dataset-out speakersleuth --cache cache --jobs "$(nproc)" "$@"
    $py -m speakersleuth.speakersleuth_dataset validate --dataset speakersleuth
    mkdir -p results/baselines data
    rm -f results/baselines/progress.json data/baselines-status.json
    set -m  # each background step in its own process group, so that the trap below ends it whole
    (
      $py -m speakersleuth.judges baselines --dataset speakersleuth --results-out results/baselines \
        --cache cache/embeddings --jobs "$(nproc)" --no-progress > results/baselines.log 2>&1
      $py -m speakersleuth.judges sweep --dataset speakersleuth --variant main --sweep-out results/sweep \
        --cache cache/embeddings --no-progress > results/sweep.log 2>&1
    ) &
    behind=$!
    $py -m speakersleuth.space.seed --dataset speakersleuth --predictions results/baselines --data-dir data \
      --follow "$behind" --no-progress &
    seeder=$!
    trap 'kill -- -"$behind" -"$seeder" 2>/dev/null || true' EXIT
    until grep -qs '"seeded": [1-9]' data/baselines-status.json || ! kill -0 "$seeder" 2>/dev/null; do
      sleep 1
    done
    $py -m speakersleuth.space.app --dataset speakersleuth --data-dir data --host 127.0.0.1 --port 7860
    ;;
  test)
    # One worker per core (pytest-xdist), each running whole test modules, so that a module's
    # fixtures (its builds) are made once; the slowest modules first (tests/conftest.py).
    shift
    $py -m pytest -q -n "$(nproc)" --dist loadfile --no-loadscope-reorder "$@"
    ;;
  *)
    echo "usage: ./run.sh demo|test [args]" >&2
    exit 2
    ;;
esac
