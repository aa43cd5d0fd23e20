"""Typed exceptions: the library raises these, the CLI turns them into one stderr line and exit 2."""


class EventlogError(Exception):
    """Base class: anything the CLI reports as a clean error."""


class BadEvent(EventlogError):
    """Input that is not a valid event (bad JSON, missing fields, hostile names, too large).

    `index` is the position of the offending event in a batch, when known."""

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


class LockTimeout(EventlogError):
    """A partition lock could not be taken in time."""


class DamagedLog(EventlogError):
    """The log on disk does not verify (or does not match its seal) where a writer needs it to."""
