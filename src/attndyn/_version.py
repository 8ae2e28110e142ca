"""The package version, read from the installed metadata: pyproject.toml's ``version`` is the one place it is set."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__: str = version("attndyn")
except PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"
