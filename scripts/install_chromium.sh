#!/usr/bin/env bash
# The browser tests drive Debian's chromium (never a browser that a test tool
# downloads), and the Chinese pages need a font with Chinese glyphs, in the
# browser and for PlantUML's text layout: WenQuanYi Micro Hei (fonts-wqy-microhei,
# a 1.6 MB download that covers Simplified Chinese; fonts-noto-cjk is 56 MB).
# Install what is missing with apt when we may; otherwise say how.
# CHROMIUM=/path/to/chromium points the tests at another build.
set -eu
need=()
if ! { [ -n "${CHROMIUM:-}" ] && [ -x "$CHROMIUM" ]; } && ! command -v chromium >/dev/null 2>&1; then
  need+=(chromium)
fi
if ! command -v fc-list >/dev/null 2>&1 || [ -z "$(fc-list :lang=zh 2>/dev/null)" ]; then
  need+=(fonts-wqy-microhei)
fi
if [ ${#need[@]} -eq 0 ]; then exit 0; fi

if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    sudo=""
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo"
  else
    echo "missing: ${need[*]}: run 'sudo apt-get install ${need[*]}' and try again" >&2
    exit 1
  fi
  echo "installing ${need[*]} for the browser tests"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  command -v chromium >/dev/null || [ -n "${CHROMIUM:-}" ]
else
  echo "missing: ${need[*]}: install Chromium (set CHROMIUM=/path/to/chromium) and a CJK font" >&2
  exit 1
fi
