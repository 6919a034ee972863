"""The documentation pages: the MkDocs site builds with every internal link and anchor resolved, every
page is reachable from the nav, and the README's links point at files that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from bridge.cli import SUBCOMMANDS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GENERATED = {"commands.md"}  # written by docs/hooks/cli_commands.py at build time
LINK = re.compile(r"\]\(([^)\s]+)\)")


def nav_pages(nav) -> list[str]:
    pages: list[str] = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages += nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_site_builds_strict(tmp_path):
    site = tmp_path / "site"
    # no --quiet: it hides the warnings that --strict turns into a failure
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    commands = (site / "commands" / "index.html").read_text()
    for name in SUBCOMMANDS:
        assert f'id="kbc-{name}"' in commands, name
    assert 'id="kbc-run-lama"' in commands
    # figures the pages show are copied beside them
    for figure in ("serve.png", "report_p_at_1.png", "report_delta.png"):
        assert (site / figure).read_bytes() == (DOCS / figure).read_bytes()
    assert '<img alt="The side-by-side view' in (site / "explorer" / "index.html").read_text()


def test_every_page_is_in_the_nav():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    in_nav = nav_pages(config["nav"])
    assert len(in_nav) == len(set(in_nav))
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    on_disk = {p for p in on_disk if not p.startswith("runs/")}  # the example notebook's run, left out of the site
    assert on_disk == set(in_nav) - GENERATED


def test_site_builds_beside_the_run_the_example_notebook_writes(tmp_path):
    """Jupyter runs docs/api_example.ipynb in docs/, so its run lands in docs/runs/: the strict build leaves it out
    rather than fail on a page outside the nav."""
    import shutil

    shutil.copytree(DOCS, tmp_path / "docs", ignore=shutil.ignore_patterns("runs"))
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    run = tmp_path / "docs" / "runs" / "api-example"
    run.mkdir(parents=True)
    (run / "summary.md").write_text("# summary\n")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(tmp_path / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "site" / "runs").exists()


def test_readme_links_resolve():
    targets = LINK.findall((ROOT / "README.md").read_text())
    local = [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]
    assert "docs/lama.md" in local and "docs/api.md" in local
    missing = [t for t in local if not (ROOT / t).is_file()]
    assert missing == []


def test_api_page_lists_every_experiment():
    import kbcompare

    text = " ".join((DOCS / "api.md").read_text().split())
    listed = re.search(r"runs `kbc run EXPERIMENT` \(([^;]*); `kbcompare\.experiments\(\)` lists them\)", text)
    assert listed is not None
    assert [name.strip(" `") for name in listed.group(1).split(",")] == kbcompare.experiments()


COMMAND = re.compile(r"(^|&&|;)\s*(\w+=\S+\s+)*(\S*/)?kbc (run|serve)\b")  # a command line, not a mention


def block_commands(text: str) -> list[tuple[str, bool]]:
    """Each `kbc run` / `kbc serve` command of the page's fenced blocks (continuation lines joined), with whether
    its block downloads data first (`kbc data download`)."""
    out = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        out += [(line, "kbc data download" in block) for line in joined.splitlines()
                if COMMAND.search(line)]
    return out


def test_every_run_and_serve_recipe_names_data_that_is_there_from_a_fresh_clone():
    """A recipe runs as written from a clone with ../shared beside it: `--data-dir ../shared/data/...` (the
    README's own command), or data a `kbc data download` of the same block put in data/."""
    pages = [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]
    found = [(page.name, line, downloads) for page in pages for line, downloads in block_commands(page.read_text())]
    assert len(found) >= 10
    given = [(page, re.search(r"--data-dir (\S+)", line)) for page, line, _ in found]
    bad = [(page, line) for (page, line, downloads), (_, m) in zip(found, given)
           if m is None or not (f"{m[1]}/".startswith("../shared/data/") or downloads and m[1].startswith("data/"))]
    assert bad == []
    missing = sorted({m[1] for _, m in given if m and m[1].startswith("../shared/") and not (ROOT / m[1]).exists()})
    assert missing == []


def test_no_page_links_to_a_generated_page():
    """A generated page exists only in the built site: a link to it from a page under docs/ or the README is dead
    wherever the Markdown is read as files (GitHub, an editor)."""
    pages = [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]
    linked = [(page.name, target) for page in pages for target in LINK.findall(page.read_text())
              if Path(target.split("#")[0]).name in GENERATED]
    assert linked == []


def test_the_extracted_kb_build_time_is_given_in_one_place():
    """The relation-extraction KB's first-build time is measured in one section of the performance page; the
    pages that mention it link there instead of quoting figures of their own."""
    section = (DOCS / "performance.md").read_text().split("\n## Relation-extraction KB\n")[1].split("\n## ")[0]
    assert "10 min 29 s" in section and "load average 5–7" in section
    for page, anchor in (("extraction.md", "performance.md#relation-extraction-kb"),
                         ("lmkbc.md", "performance.md#relation-extraction-kb"),
                         ("performance.md", "#relation-extraction-kb")):
        assert anchor in LINK.findall((DOCS / page).read_text()), page


def test_each_gpu_section_of_the_performance_page_says_which_code_it_measured():
    """Two H200 sections measured the masked engine before and after its changes: their headings tell them apart,
    and the earlier one names its figures as the earlier code's."""
    headings = re.findall(r"^## (On a GPU \(NVIDIA H200\).*)$", (DOCS / "performance.md").read_text(), re.M)
    assert headings == ["On a GPU (NVIDIA H200), current engine: batches of 2048, predictions made while the card runs",
                        "On a GPU (NVIDIA H200), earlier code: the padding mask"]


def test_the_performance_page_names_the_cpu_of_its_figures_and_bfloat16_on_one_without_its_instructions():
    """The build machine's CPU changed (the current one has AVX2 only): figures from the one with AVX512-BF16 are
    labelled as that machine's, and the page says, with the measured ratio, that bfloat16 is slower without it."""
    text = " ".join((DOCS / "performance.md").read_text().split())
    assert "with AVX2 only: no AVX-512, no AVX512-BF16, no AMX" in text
    assert "on the 2-core build machine (an AMD EPYC with AVX512-BF16)" not in text
    assert ("on the 2-core build machine of that time (an AMD EPYC with AVX512-BF16, which the current one lacks)"
            in text)
    assert "in float32, **0.14x** (0.16x and 0.14x by round)" in text
    assert "on the two AVX-512 cores of the build machine of that time" in text


def test_the_fixed_cost_breakdown_names_every_stage_as_bench_stages_prints_it():
    """The fixed-cost paragraph quotes `bench/fixed_cost.py`'s output: every stage `bench/stages.py` clocks appears
    under the name the script prints (`<stage>_s`), and no name that the script does not print."""
    sys.path.insert(0, str(ROOT))
    from bench.stages import STAGES

    page = (DOCS / "performance.md").read_text()
    start = page.index("- The fixed cost of a full T-REx run with a language model")
    paragraph = page[start:page.index("\n- ", start)]
    printed = {*(f"{name}_s" for name in STAGES), "imports_s", "other_s", "end_to_end_s", "scoring_s", "fixed_s"}
    named = set(re.findall(r"`(\w+_s)(?:=|`)", paragraph))
    named |= {f"{n}_s" for n in re.findall(r"`(\w+)`", paragraph) if f"{n}_s" in printed}
    assert named == printed - {"total_s"}


def test_the_fewrel_page_gives_the_cpu_cost_and_a_quick_trial():
    """FewRel's fine-tuning is not shrunk by --limit: the page says what a run costs on a CPU and how to try it
    quickly, with the command measured."""
    page = (DOCS / "fewrel.md").read_text()
    section = page.split("\n## Cost on a CPU, and a quick trial\n")[1].split("\n## ")[0]
    commands = [line for line, _ in block_commands(section)]
    assert commands == ["OMP_NUM_THREADS=1 kbc run fewrel --predictors bert=$TINY kb --set epochs=1 --limit 5 "
                        "--data-dir ../shared/data --out runs/fewrel-trial"]
    assert "took 1 min 14 s" in section and "6 min 7 s" in section


def test_the_command_line_page_names_every_command_with_a_quiet_flag():
    """docs/cli.md says which commands take `--quiet` (progress bars off): each command that has the flag is named
    there, itself or by its group where every command of the group that shows a bar has it (`kbc run`)."""
    import click

    from bridge.cli import cli

    def quiet(command: click.Command, ctx: click.Context, path: list[str]):
        if path and any("--quiet" in getattr(p, "opts", ()) for p in command.params):
            yield path
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                yield from quiet(command.get_command(ctx, name), ctx, [*path, name])

    sentence = next(line for line in (DOCS / "cli.md").read_text().split("\n\n") if "`--quiet` on" in line)
    named = set(re.findall(r"`kbc ([a-z -]+)`", sentence.split("drops only")[0]))
    missing = [" ".join(path) for path in quiet(cli, click.Context(cli, info_name="kbc"), [])
               if " ".join(path) not in named and path[0] not in named]
    assert missing == []
