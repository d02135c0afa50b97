"""sleuth's optional extras, and the pip command that adds one to this installation.

sleuth is installed from a checkout (``pip install .``) or from a package index
(``pip install sleuth-research``). An install hint must name what works for the user
at hand: ``pip install '.[web]'`` in the checkout it was installed from (with ``-e``
for an editable install), the checkout's path elsewhere, and the package name only
when sleuth did not come from a folder. pip records where a package came from in
its ``direct_url.json`` (PEP 610), which is read here, only when a hint is needed.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urlsplit

from sleuth.errors import ConfigError

__all__ = ["DIST_NAME", "EXTRAS", "extra_needed", "install_hint", "missing_extra"]

DIST_NAME = "sleuth-research"
#: Each extra and the top-level packages it brings that sleuth imports.
EXTRAS: dict[str, tuple[str, ...]] = {
    "llm": ("openai",),
    "browser": ("playwright",),
    "mcp": ("mcp", "anyio"),
    "web": ("starlette", "uvicorn"),
    "ray": ("ray",),
}


def _source(root: Path) -> tuple[Path | None, bool]:
    """The folder the sleuth in ``root`` was installed from (None: from an index), and
    whether editably."""
    from importlib import metadata

    if (root / "pyproject.toml").is_file():
        # This code runs from a checkout (an editable install, or PYTHONPATH): the extra
        # belongs in an editable install of it.
        return root, True
    # Installed: the metadata beside the package, not some other copy on sys.path.
    dist = next(iter(metadata.distributions(name=DIST_NAME, path=[str(root)])), None)
    if dist is None:
        return None, False
    try:
        info = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        info = None
    if not isinstance(info, dict) or not str(info.get("url", "")).startswith("file:"):
        return None, False
    dir_info = info.get("dir_info")
    editable = isinstance(dir_info, dict) and dir_info.get("editable") is True
    return Path(unquote(urlsplit(str(info["url"])).path)), editable


def install_hint(extra: str, *, cwd: Path | None = None, root: Path | None = None) -> str:
    """The command that installs ``extra``: ``pip install '.[web]'`` from the checkout
    sleuth was installed from, ``pip install 'sleuth-research[web]'`` from an index.

    ``root`` is the folder holding the ``sleuth`` package (default: this one's).
    """
    try:
        folder, editable = _source(Path(__file__).resolve().parents[1] if root is None else root)
    except OSError:
        folder, editable = None, False
    if folder is None:
        return f"pip install {shlex.quote(f'{DIST_NAME}[{extra}]')}"
    here = Path.cwd() if cwd is None else cwd
    try:
        same = os.path.samefile(folder, here)
    except OSError:
        same = False
    where = "." if same else str(folder)
    return f"pip install {'-e ' if editable else ''}{shlex.quote(f'{where}[{extra}]')}"


def missing_extra(extra: str, package: str, what: str = "this command") -> ConfigError:
    """The one-line error for a missing optional package, with the command that adds it."""
    return ConfigError(
        f"{what} needs the '{extra}' extra ({package} is not installed): {install_hint(extra)}"
    )


@contextmanager
def extra_needed(extra: str, what: str = "this command") -> Iterator[None]:
    """Turn the ImportError of one of ``extra``'s packages inside the block into
    :func:`missing_extra`'s one line (any other ImportError is a bug, and passes)."""
    try:
        yield
    except ImportError as exc:
        package = (exc.name or "").split(".")[0]
        if package not in EXTRAS[extra]:
            raise
        raise missing_extra(extra, package, what) from None
