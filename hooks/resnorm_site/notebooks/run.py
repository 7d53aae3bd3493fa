"""One notebook run: every cell in a fresh kernel, in an empty directory."""

from __future__ import annotations

import base64
import io
import os
import tempfile
import time
from pathlib import Path

from resnorm_site.notebooks.inline import inline_snippets

CELL_TIMEOUT_S = 600


class RunFailed(RuntimeError):
    """A notebook could not be executed: the message says which and why."""


def execute(notebook: Path, root: Path, target: Path) -> float:
    """Run every cell of ``notebook`` in a fresh kernel; write the result to ``target``."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = jupytext.read(notebook)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    try:
        inline_snippets(nb, root)
    except ValueError as err:
        raise RunFailed(f"notebook {notebook}: {err}") from None
    # The kernel starts in an empty directory, with no PYTHONPATH: the notebook
    # sees nothing of the repository but what it carries, as a reader's copy does.
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONSTARTUP"}}
    with tempfile.TemporaryDirectory(prefix="resnorm-notebook-") as scratch:
        client = NotebookClient(
            nb,
            timeout=CELL_TIMEOUT_S,
            kernel_name="python3",
            allow_errors=False,  # a cell tagged raises-exception may still fail on purpose
            resources={"metadata": {"path": scratch}},
        )
        if os.name == "posix":
            # Kernel and client talk over Unix sockets in the scratch directory, not
            # over TCP on localhost (which ipykernel warns about, once per notebook).
            client.km = client.create_kernel_manager()
            client.km.transport = "ipc"
            client.km.ip = os.path.join(scratch, "kernel")
        start = time.perf_counter()
        try:
            client.execute(env=env, cwd=scratch)
        except CellExecutionError as err:
            raise RunFailed(f"notebook {notebook} failed:\n{err}") from None
        except Exception as err:  # the kernel died, a cell timed out, ...
            raise RunFailed(f"notebook {notebook} failed: {type(err).__name__}: {err}") from None
        seconds = time.perf_counter() - start
    shrink_plots(nb)
    nb.metadata.setdefault("resnorm", {})["execution_seconds"] = round(seconds, 2)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    nbformat.write(nb, tmp)
    tmp.replace(target)
    return seconds


def shrink_plots(nb) -> None:
    """Re-encode PNG plots with a 256-colour palette when that is smaller.

    A notebook page inlines its plots as base64 PNG, which gzip cannot shrink;
    matplotlib's line plots use few colours, so a palette PNG is about a third
    of the size and looks the same.
    """
    from PIL import Image

    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" not in data:
                continue
            raw = base64.b64decode(data["image/png"])
            image = Image.open(io.BytesIO(raw)).convert("RGB")
            smaller = io.BytesIO()
            image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(
                smaller, "PNG", optimize=True
            )
            if smaller.tell() < len(raw):
                data["image/png"] = base64.b64encode(smaller.getvalue()).decode()
