"""``attndyn hardmax``, ``attndyn softmax`` and ``attndyn demo``."""

from __future__ import annotations

from . import app  # noqa: F401
