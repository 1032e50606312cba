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
    shift
    $py -m speakersleuth.builder_scripts build --dataset-out speakersleuth --cache cache --jobs "$(nproc)" "$@"
    $py -m speakersleuth.speakersleuth_dataset validate --dataset speakersleuth
    $py -m speakersleuth.judges baselines --dataset speakersleuth --results-out results/baselines --cache cache/embeddings
    $py -m speakersleuth.judges sweep --dataset speakersleuth --variant main --sweep-out results/sweep --cache cache/embeddings
    $py -m speakersleuth.space.seed --dataset speakersleuth --predictions results/baselines --data-dir data
    exec $py -m speakersleuth.space.app --dataset speakersleuth --data-dir data --host 127.0.0.1 --port 7860
    ;;
  test)
    # One worker per core (pytest-xdist), each running whole test modules, so that a module's
    # fixtures (its builds) are made once.
    shift
    $py -m pytest -q -n "$(nproc)" --dist loadfile "$@"
    ;;
  *)
    echo "usage: ./run.sh demo|test [args]" >&2
    exit 2
    ;;
esac
