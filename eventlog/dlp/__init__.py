"""DLP: one rule file (rules.json) for the Python engine here and the JS engine in the OpenClaw runtime tap, alerts and
review as events under the log root. See docs/dlp.md."""
