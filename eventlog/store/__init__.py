"""The canonical log: schema, layout, writer, reader, lock, seals, head, commitments, migration, verify, stats."""
