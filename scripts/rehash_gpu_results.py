"""Recompute the GPU results file's code hash from the code at the commit it records.

    .venv/bin/python scripts/rehash_gpu_results.py [PATH]

The results file (docs/experiments/results/gpu_norm_speed.json, written by
`make bench-gpu`) holds a hash of the code that was measured; the site compares it with the
code's hash now and says when the code changed since. When the definition of that hash
changes (resnorm_site/gpu_results/source.py's code_hash), a file measured before would read as
stale though the code is the same: this recomputes its hash from the code at its recorded
commit, with git show, and leaves the samples as they are. It measures nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "hooks"))

from resnorm_site.gpu_results import CODE_FILES, RESULTS_FILE, code_hash  # noqa: E402


def rehash(path: Path) -> str:
    """Recompute a results file's code_hash from the code at the commit it records
    (git show), the samples left as they are: for when the hash's definition changed
    after the figures were measured. Refuses a file measured on uncommitted code."""
    data = json.loads(path.read_text(encoding="utf-8"))
    commit = data.get("commit", "unknown")
    if commit == "unknown" or data.get("dirty"):
        raise SystemExit(
            f"{path}: measured at commit {commit!r}, dirty={data.get('dirty')}: "
            "the measured code is not in the repository, so it cannot be rehashed"
        )
    with tempfile.TemporaryDirectory() as tmp:
        for name in CODE_FILES:
            shown = subprocess.run(["git", "show", f"{commit}:{name}"], cwd=ROOT,
                                   capture_output=True, check=False)  # fmt: skip
            if shown.returncode == 0:  # a file absent at the commit is hashed as absent
                (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
                (Path(tmp) / name).write_bytes(shown.stdout)
            elif b"not in '" not in shown.stderr:  # absent, or on disk only
                raise SystemExit(f"git show {commit}:{name} failed: {shown.stderr.decode()}")
        data["code_hash"] = code_hash(Path(tmp))
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return data["code_hash"]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else ROOT / RESULTS_FILE
    print(f"{path}: code_hash {rehash(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
