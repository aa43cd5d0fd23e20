"""Locate, apply, revert, status and audit the OpenClaw patch set (see docs/patchset.md)."""
from eventlog.patchset.errors import PatchError
from eventlog.patchset.install import apply, audit, revert, status
from eventlog.patchset.manifest import Manifest, load_manifest

__all__ = ["PatchError", "Manifest", "load_manifest", "apply", "revert", "status", "audit"]
