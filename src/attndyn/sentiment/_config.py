"""JSON round-trip shared by the sentiment configuration dataclasses."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Self

from .._validation import InputError


class JsonConfig:
    """Mixin for frozen config dataclasses: ``to_dict`` and a ``from_dict`` that rejects unknown keys."""

    _kind = "config"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        fields = cls.__dataclass_fields__  # type: ignore[attr-defined]
        unknown = set(data) - set(fields)
        if unknown:
            raise InputError(f"unknown {cls._kind} keys {sorted(unknown)}; allowed: {sorted(fields)}")
        return cls(**data)
