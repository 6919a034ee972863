"""The explorer in a real browser: headless Chromium (Debian's, driven by Playwright) asks a query,
reads the rendered columns, and filters a run. Fails, never skips, when the browser is missing
(`serve_support.browser`)."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest
import serve_support

from eval.corpora import load_corpus

# the session fixtures shared by the explorer tests
client = serve_support.client
serve_app = serve_support.serve_app
serve_explorer = serve_support.serve_explorer
serve_run = serve_support.serve_run

browser = serve_support.browser


@pytest.fixture(scope="module")
def base_url(serve_app):
    with serve_support.served(serve_app) as url:
        yield url


def test_side_by_side_page(browser, base_url, lama_dir, tmp_path):
    facts = load_corpus("trex", lama_dir, ["P19"]).facts
    counts = Counter(f.subject.label for f in facts)
    fact = next(f for f in facts if counts[f.subject.label] == 1 and len(f.subject.label) > 6)
    top = Counter(f.object.label for f in facts).most_common(1)[0][0]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(base_url + "/")
    page.fill("#subject", fact.subject.label[:5])
    page.wait_for_function("document.querySelectorAll('#subject-suggestions option').length > 0",
                           timeout=60_000)  # a deadlock guard for one local request
    options = page.eval_on_selector_all("#subject-suggestions option", "els => els.map(e => e.value)")
    assert all(o.lower().startswith(fact.subject.label[:5].lower()) for o in options)
    page.fill("#subject", fact.subject.label)
    page.select_option("#relation", "P19")
    page.fill("#k", "5")
    page.click("#go")
    page.wait_for_selector("#result")
    assert page.inner_text("#prompt") == f"{fact.subject.label} was born in [MASK] ."
    gold = page.locator('.column[data-name="gold KB"] li')
    assert gold.count() == 1 and fact.object.label in gold.first.inner_text() and "gold" in gold.first.inner_text()
    assert page.locator('.column[data-name="freq"] li .label').first.inner_text() == top
    assert page.locator('.column[data-name="bert"] li').count() == 5
    assert page.locator('.column[data-name="bert"]').get_attribute("data-status") == "ok"
    assert "not configured" in page.inner_text('.column[data-name="inferred graph"]')
    assert f"subject={fact.subject.label.split()[0]}" in page.url  # the view is its URL
    shot = tmp_path / "serve.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    again = browser.new_page()
    again.goto(page.url)  # a shared URL renders the same view
    assert again.locator('.column[data-name="gold KB"] li').first.inner_text() == gold.first.inner_text()


def test_run_page_filters(browser, base_url, serve_run):
    frame = pd.read_parquet(serve_run / "instances.parquet")
    right = frame[frame["relation"] == "P36"].pivot_table(index="uid", columns="predictor", values="correct_raw",
                                                          aggfunc="first")
    expected = int(((right["gold"] == True) & (right["bert"] == False)).sum())  # noqa: E712
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(base_url + "/runs/lama-small")
    assert page.locator("#summary tr").count() > 1
    page.select_option("#f-relation", "P36")
    page.select_option("#f-a", "gold")
    page.select_option("#f-b", "bert")
    page.select_option("#f-outcome", "a-right-b-wrong")
    page.click("#f-go")
    page.wait_for_url("**outcome=a-right-b-wrong**")
    assert page.inner_text("#fact-count").startswith(f"{expected} fact{'' if expected == 1 else 's'} ")
    rows = page.locator("#facts tr[data-relation]")
    assert rows.count() == min(expected, 50) and expected > 0
    assert set(rows.evaluate_all("rs => rs.map(r => r.dataset.relation)")) == {"P36"}
    rows.first.locator("td a").first.click()
    page.wait_for_selector("#result")
    assert "[MASK]" in page.inner_text("#prompt")


def _no_overflow(page) -> None:
    width = page.evaluate("document.documentElement.clientWidth")
    wide = page.evaluate("""() => [...document.querySelectorAll('body *')].filter(e => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && r.right > document.documentElement.clientWidth + 1 && !e.closest('.scroll');
    }).map(e => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className)""")
    assert page.evaluate("document.documentElement.scrollWidth") <= width, wide
    assert wide == []


def test_narrow_window_has_no_horizontal_overflow(browser, base_url, serve_run, tmp_path):
    frame = pd.read_parquet(serve_run / "instances.parquet")
    row = frame[(frame["relation"] == "P36") & (frame["predictor"] == "bert")].iloc[0]
    page = browser.new_page(viewport={"width": 380, "height": 800})
    page.goto(base_url + "/?" + f"subject={row['subject']}&relation=P36&k=5".replace(" ", "+"))
    page.wait_for_selector("#result")
    assert "gold rank" in page.inner_text('.column[data-name="bert"]')
    _no_overflow(page)
    page.screenshot(path=str(tmp_path / "serve-narrow.png"), full_page=True)  # as docs/serve-narrow.png
    page.goto(base_url + "/runs/lama-small")
    assert "shared facts" in page.inner_text("#scopes")
    _no_overflow(page)
    assert (tmp_path / "serve-narrow.png").stat().st_size > 10_000


def test_the_leaderboards_checkboxes_are_a_touch_size_on_a_phone(browser, base_url, serve_run):
    page = browser.new_page(viewport={"width": 380, "height": 800})
    page.goto(base_url + "/leaderboard")
    box = page.locator("#run-picker input[type=checkbox]").first.bounding_box()
    label = page.locator("#run-picker label").first.bounding_box()
    assert box["width"] >= 24 and box["height"] >= 24 and label["height"] >= 44, (box, label)
    page.locator("#run-picker label").first.click(position={"x": 2, "y": 2})  # the label's corner toggles it too
    assert not page.locator("#run-picker input[type=checkbox]").first.is_checked()
    _no_overflow(page)


def test_pages_load_without_console_errors(browser, base_url, serve_run):
    """Each kind of page loads with nothing failing in the browser's console (no missing favicon, script or
    style), in a fresh browser context, as a first visit is."""
    uid = pd.read_parquet(serve_run / "instances.parquet")["uid"].iloc[0]
    for path in ("/", "/?subject=France&relation=P36&k=3", "/runs", "/leaderboard", "/runs/lama-small",
                 f"/runs/lama-small/facts/{uid}"):
        context = browser.new_context()
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m, errors=errors: m.type == "error" and errors.append(m.text))
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        page.goto(base_url + path)
        page.wait_for_load_state("networkidle")
        context.close()
        assert errors == [], (path, errors)
