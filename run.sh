#!/usr/bin/env bash
# ./run.sh demo   set up, build the embedded benchmark, run the baseline judges, score them onto
#                 the leaderboard store, and start the Space on http://127.0.0.1:7860
# ./run.sh test   set up and run the test suite
set -euo pipefail
cd "$(dirname "$0")"
./setup.sh
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
py=.venv/bin/python
case "${1:-}" in
  demo)
    shift
    $py -m builder_scripts demo "$@"
    ;;
  test)
    shift
    $py -m pytest -q "$@"
    ;;
  *)
    echo "usage: ./run.sh demo|test [args]" >&2
    exit 2
    ;;
esac
