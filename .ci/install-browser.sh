#!/usr/bin/env bash
# What the browser tests (tests/test_site.py, tests/test_lab.py) and `make book` need from Debian,
# installed only when missing: Chromium (Playwright drives /usr/bin/chromium; `playwright install`
# cannot download a browser here), a CJK font (tests/test_feedback_layout.py renders Chinese feedback
# pages: fonts-noto-cjk, Noto Sans CJK SC) and npm (site/build.py fetches MathJax once with `npm ci`).
# Idempotent and quiet: run it before `make test`.
set -euo pipefail

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -d /usr/share/fonts/opentype/noto ] && ls /usr/share/fonts/opentype/noto/NotoSansCJK* >/dev/null 2>&1 \
    || missing+=(fonts-noto-cjk)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
echo "install-browser.sh: installing ${missing[*]}"
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq "${missing[@]}" >/dev/null
/usr/bin/chromium --version
# matplotlib lists the system's fonts once, on its first import (the venv's may have come first):
# drop that list so the lessons' Chinese plots and the class report find the CJK font just installed
if [[ " ${missing[*]} " == *" fonts-noto-cjk "* ]]; then
    cache="${MPLCONFIGDIR:-${XDG_CACHE_HOME:-$HOME/.cache}/matplotlib}"
    if [ -x .venv/bin/python ]; then
        cache="$(.venv/bin/python -c 'import matplotlib; print(matplotlib.get_cachedir())' 2>/dev/null || echo "$cache")"
    fi
    rm -f "$cache"/fontlist-*.json
fi
