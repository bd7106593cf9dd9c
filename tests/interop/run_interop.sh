#!/usr/bin/env bash
# Runs torchvision_interop.py with a Python that has torch and torchvision: the first python3 on
# PATH that imports them, else Debian's /usr/bin/python3 (where python3-torch installs them; a pyenv
# or virtualenv python3 earlier on PATH would not see them). Exits 77 (skipped) when none has them.
# Usage: run_interop.sh DPTRAIN MODEL WORKDIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for python in "$(command -v python3 || true)" /usr/bin/python3; do
  [[ -n "$python" && -x "$python" ]] || continue
  if "$python" -c 'import numpy, torch, torchvision' 2>/dev/null; then
    exec "$python" "$here/torchvision_interop.py" "$@"
  fi
done
echo "SKIPPED: no python3 with torch and torchvision; install Debian's python3-torch and python3-torchvision" \
  "(scripts/install-deps.sh --test, which make test runs)"
exit 77
