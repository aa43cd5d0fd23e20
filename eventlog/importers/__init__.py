"""Importers: history from before the tap, brought into the log through the writer (docs/import.md)."""
