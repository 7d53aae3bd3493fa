"""The census of every family, computed in a process of its own (``python -m
resnorm_site.census.run OUT.json``): torch and transformers load there, not in the site's
build, and a family that runs too long is stopped by an alarm and read from its source.
The alarm counts the process's CPU time, not the clock's, so that a machine busy with
other work does not turn a family that runs in time into one read from its source.
"""

from __future__ import annotations

import json
import signal
import sys
import time
import warnings
from pathlib import Path

from resnorm_site.census import families, source

SECONDS_PER_FAMILY = 10  # of CPU time: the slowest family takes about 5 on an idle machine
WALL_SECONDS = 60  # and of the clock's, for a family that waits rather than computes


class Timeout(BaseException):  # not an Exception: no step of the probe may swallow it
    pass


def _alarm(signum, frame):
    if signum == signal.SIGPROF:
        raise Timeout(f"took more than {SECONDS_PER_FAMILY} s of CPU time")
    raise Timeout(f"took more than {WALL_SECONDS} s")


def _quiet() -> None:
    import logging

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)


def _alarms() -> None:
    signal.signal(signal.SIGALRM, _alarm)
    signal.signal(signal.SIGPROF, _alarm)


def modeling_file(family: families.Family) -> str:
    """The file that defines the class the row was built from, relative to the package
    (``models/llama/modeling_llama.py``), or the family's own modeling file."""
    import inspect

    try:
        path = Path(inspect.getsourcefile(families.model_class(family)))
    except Exception:
        path = families.models_dir() / family.name / f"modeling_{family.name}.py"
    return path.relative_to(families.models_dir().parent).as_posix()


def one(family: families.Family) -> dict:
    from resnorm_site.census import probe

    row = {
        "family": family.name,
        "text_type": family.text_type,
        "config_class": family.config_class,
        "file": modeling_file(family),
    }
    start = time.perf_counter()
    signal.setitimer(signal.ITIMER_PROF, SECONDS_PER_FAMILY)
    signal.alarm(WALL_SECONDS)
    try:
        row["raw"] = probe.probe(family)
        row["method"] = "probed"
    except (Exception, Timeout) as err:  # every failure keeps its row, read from the source
        row["error"] = f"{type(err).__name__}: {err}"[:300]
        row["why"] = getattr(err, "stage", "timeout" if isinstance(err, Timeout) else "probe")
        row["method"] = "source"
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.alarm(0)
    if row["method"] == "source":
        try:
            row["raw"] = source.read(family)
        except Exception as err:
            row["method"] = "none"
            row["source_error"] = f"{type(err).__name__}: {err}"[:300]
    row["seconds"] = round(time.perf_counter() - start, 3)
    return row


def compute() -> dict:
    _quiet()
    start = time.perf_counter()
    _alarms()
    kept, left_out = families.census_families()
    rows = [one(f) for f in kept]
    import torch

    return {
        "transformers": families.version(),
        "torch": torch.__version__,
        "folders": len(families.folders()),
        "left_out": left_out,
        "rows": rows,
        "seconds": round(time.perf_counter() - start, 1),
    }


def main(argv: list[str]) -> int:
    only = argv[2:]
    if only:
        _quiet()
        _alarms()
        result = {"rows": [one(families.classify(name)[1]) for name in only]}
    else:
        result = compute()
    Path(argv[1]).write_text(json.dumps(result, indent=1, sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
