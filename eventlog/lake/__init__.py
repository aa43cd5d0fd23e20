"""The lake: sealed days of many gateways' logs in one DuckLake (docs/lake.md). Derived and rebuildable: the local
JSONL stays canonical. Only eventlog/cli imports this package; it reads the store and recall's views."""
