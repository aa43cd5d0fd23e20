"""The README stays an operator's page (issue 23 item 5): at most 250 lines, no measurements, and every link in it
and in docs/*.md that points into the repository resolves."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)  # regexes in code (`](?:…)`) are not links


def test_readme_is_at_most_250_lines():
    n = len((REPO / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= 250, f"README.md has {n} lines: move reference material into docs/"


def test_readme_carries_no_measured_figures():
    # figures go to docs/benchmarks.md: no "ms", "µs", "MB/s", "ev/s" or ratio like "×" next to a number
    text = (REPO / "README.md").read_text(encoding="utf-8")
    figures = re.findall(r"\b\d[\d.,]*\s?(?:ms|µs|MB/s|ev/s|msg/s)\b|\b\d[\d.]*×", text)
    assert not figures, figures


def test_readme_says_where_the_package_comes_from():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "no registry release yet" in text and "pip wheel" in text and "pipx install dist/" in text


def test_relative_links_resolve():
    for page in [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]:
        for target in LINK.findall(CODE.sub("", page.read_text(encoding="utf-8"))):
            if "://" in target or target.startswith("mailto:"):
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(REPO)}: broken link {target}"
