"""Click commands: parse → call the library → render. No logic here."""
