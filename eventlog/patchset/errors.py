"""Typed errors of the patch set. The CLI turns every PatchError into one stderr line and exit 2."""
from __future__ import annotations

from typing import Any

from ..errors import EventlogError


class PatchError(EventlogError):
    """Fail-closed refusal: nothing was changed (or everything was rolled back) when this is raised."""

    def __init__(self, code: str, message: str, report: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.report = report or {"ok": False, "error": code, "message": message}
