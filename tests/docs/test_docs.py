"""Docs match code: the README's commands, the configuration reference generated from the
settings, the docs' Python snippets, the pages the code cites, and no commit named outside the
changelog. (`python3 dev.py test` builds the site with `mkdocs build --strict` before pytest.)"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from pytest_examples import CodeExample, EvalExample, find_examples

from docs import hooks
from shared.kernel.settings import Settings
from tests.support import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
USER_FACING = [
    README,
    ROOT / "web" / "README.md",
    ROOT / "infra" / "README.md",
    ROOT / "clients" / "js" / "README.md",
    *sorted(p for p in DOCS.rglob("*.md") if p.name != "changelog.md"),
]
"""What a user or a contributor reads: the READMEs and the site, the changelog aside."""
CODE = ["shared", "functions", "local", "migrations", "bench", "infra", "web/public/src"]
"""Where code cites docs pages by their path."""


def test_readme_starts_with_the_two_commands() -> None:
    block = README.read_text().split("```")[1]
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()[1:]] == [
        "python3 dev.py run",
        "python3 dev.py test",
    ]


def test_ci_runs_the_readme_test_command() -> None:
    script = (README.parent / ".ci" / "run").read_text()
    assert "python3 dev.py test" in [
        line.removeprefix("exec ").strip() for line in script.splitlines()
    ]


def test_the_readme_is_a_newcomers_page() -> None:
    assert len(README.read_text().splitlines()) <= 150


def test_the_configuration_reference_lists_exactly_the_settings() -> None:
    table = hooks.configuration_table()
    documented = set(re.findall(r"^\| `([A-Z_]+)`", table, flags=re.MULTILINE))
    documented |= set(re.findall(r"^\| `[A-Z_]+` / `([A-Z_]+)`", table, flags=re.MULTILINE))
    expected = {name.upper() for name in Settings.model_fields} | {"DEEPSEEK_API_KEY"}
    assert documented == expected
    assert "<!-- generated: configuration -->" in (DOCS / "reference/configuration.md").read_text()


def test_every_setting_says_what_it_means() -> None:
    """The reference's text is each field's docstring: a field without one has no entry."""
    meanings = hooks.field_docstrings(ROOT / "shared" / "kernel" / "settings.py", "Settings")
    assert set(meanings) == set(Settings.model_fields)
    assert all(len(text) > 20 for text in meanings.values())


def test_a_generated_mention_of_a_page_links_it() -> None:
    text = hooks.linked("see docs/storage.md and `docs/events.md`", Path("reference/x.md"))
    assert text == "see [`docs/storage.md`](../storage.md) and [`docs/events.md`](../events.md)"


def test_every_route_and_event_type_is_in_the_reference() -> None:
    for function in hooks.FUNCTIONS:
        document = hooks.openapi_document(function)
        page = hooks.openapi_reference(document)
        for path, operations in document["paths"].items():
            for method in operations:
                assert f"### `{method.upper()} {path}`" in page
    schema = hooks.events_schema()
    page = hooks.events_reference(schema)
    kinds = re.findall(r"^### `([a-z_]+)`$", page, flags=re.MULTILINE)
    assert len(kinds) == len(schema["oneOf"]) == 12


def test_the_pages_the_code_cites_exist() -> None:
    """A path like `docs/events.md` in a docstring, comment or message names a real page."""
    cited: dict[str, Path] = {}
    for path in code_files():
        for page in re.findall(r"\bdocs/[\w/-]+\.(?:md|sql)\b", path.read_text()):
            cited.setdefault(page, path.relative_to(ROOT))
    assert cited
    assert {page: by for page, by in cited.items() if not (ROOT / page).is_file()} == {}


def code_files() -> list[Path]:
    """Parley's own code and configuration (no installed or vendored packages)."""
    found = [path for folder in CODE for path in (ROOT / folder).rglob("*")]
    skipped = {"vendor", "node_modules"}
    return [
        path
        for path in found
        if path.suffix in (".py", ".js", ".yml", ".sql") and not skipped & set(path.parts)
    ]


def commits_named(text: str) -> set[str]:
    """The hex words of `text` that name a commit of this repository."""
    words = sorted(set(re.findall(r"(?<![\w/.#-])[0-9a-f]{7,40}(?![\w-])", text)))
    words = [w for w in words if re.search(r"[a-f]", w) and re.search(r"\d", w)]
    if not words:
        return set()
    found = subprocess.run(
        ["git", "cat-file", "--batch-check"],
        input="".join(f"{w}^{{commit}}\n" for w in words),
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout.splitlines()
    return {word for word, line in zip(words, found, strict=True) if "missing" not in line}


def test_no_commit_is_named_outside_the_changelog() -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no commits to look words up in")
    head = subprocess.check_output(["git", "rev-parse", "--short=8", "HEAD"], cwd=ROOT, text=True)
    assert commits_named(f"a commit: {head}")
    named = {str(p.relative_to(ROOT)): commits_named(p.read_text()) for p in USER_FACING}
    assert {page: words for page, words in named.items() if words} == {}


SNIPPETS = list(find_examples(README, DOCS))


@pytest.mark.parametrize("example", SNIPPETS, ids=str)
def test_the_docs_python_snippets_run(example: CodeExample, eval_example: EvalExample) -> None:
    """Every Python snippet of the docs runs as written, and prints what its `#>` lines say.
    One that cannot run here says why in its fence: ```{.py test="skip" reason="…"}."""
    settings = example.prefix_settings()
    if settings.get("test") == "skip":
        pytest.skip(f"{example}: {settings.get('reason', 'marked test=skip without a reason')}")
    eval_example.set_config(line_length=100, target_version="py310")  # its newest choice
    eval_example.lint_ruff(example)
    eval_example.run_print_check(example)


def test_the_docs_have_python_snippets_and_each_skipped_one_says_why() -> None:
    """A fence with settings takes them in braces (`{.py key="value"}`): the site's Markdown
    reads no other form, and would show the block as text."""
    assert SNIPPETS
    for example in SNIPPETS:
        assert example.prefix.startswith("{.py") or example.prefix.strip() in ("py", "python")
        if example.prefix_settings().get("test") == "skip":
            assert example.prefix_settings().get("reason"), str(example)
