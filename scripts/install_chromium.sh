#!/usr/bin/env bash
# The browser tests drive Debian's chromium (never a browser that a test tool
# downloads). Install it with apt when it is missing and we may; otherwise say
# how. CHROMIUM=/path/to/chromium points the tests at another build.
set -eu
if [ -n "${CHROMIUM:-}" ] && [ -x "$CHROMIUM" ]; then exit 0; fi
if command -v chromium >/dev/null 2>&1; then exit 0; fi

if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    sudo=""
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo"
  else
    echo "chromium is missing: run 'sudo apt-get install chromium' and try again" >&2
    exit 1
  fi
  echo "installing Debian's chromium for the browser tests"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
  command -v chromium >/dev/null
else
  echo "chromium is missing: install Chromium and set CHROMIUM=/path/to/chromium" >&2
  exit 1
fi
