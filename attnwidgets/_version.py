"""The package's version, in a module that imports nothing of ours, so every layer can read it without importing
the top level (which would make a circle: the top level imports them)."""

from __future__ import annotations


def _version() -> str:
    """The installed distribution's version (pyproject.toml is its one source); read from pyproject.toml itself in a
    source tree that was never installed, so a checkout on ``PYTHONPATH`` still knows its version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("attnwidgets")
    except PackageNotFoundError:
        import re
        from pathlib import Path

        pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
        found = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(encoding="utf-8"), re.M) \
            if pyproject.is_file() else None
        return found.group(1) if found else "0+unknown"


__version__ = _version()
