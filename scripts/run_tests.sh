#!/usr/bin/env bash
# Installs what the test suite needs on a fresh machine, then runs the whole suite.
#   - Debian packages: tesseract-ocr (OCR tests), chromium (browser tests), when running as root
#     and they are missing;
#   - Python: the app's requirements plus requirements-test.txt and requirements-cluster.txt (ray: the
#     cluster ingest tests start a real multi-node Ray cluster on this machine).
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v tesseract >/dev/null 2>&1 || need+=(tesseract-ocr)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian packages: ${need[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "warning: missing ${need[*]}; the tests that need them will be skipped" >&2
  fi
fi

python3 -m pip install -q -r requirements.txt -r requirements-test.txt -r requirements-cluster.txt

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 GRADIO_ANALYTICS_ENABLED=False TOKENIZERS_PARALLELISM=false RAY_AUTH_MODE=disabled
exec python3 -m pytest "$@"
