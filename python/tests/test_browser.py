"""The report in a real browser: headless Chromium (Debian's package,
``/usr/bin/chromium`` or ``$KICKLAB_CHROMIUM``) driven by Playwright for
Python with that browser (no browser download).

A small report (``kicklab report --points 20 --messages 5000
--no-testbed``) is opened from ``file://``: it loads with no console
errors; moving the explorer's W_P slider (and typing other values) shows
the T, E, regime and m that ``kicklab model --json`` gives for the same
parameters; its simulator gives what ``kicklab sim`` gives; a slider move
is answered in under 50 ms; hovering a chart shows the point's value;
dragging a box zooms; nothing overflows a 700 px window and tick labels
stay >= 12 px.

With ``KICKLAB_REPORT=path/to/index.html`` the same checks read that page
instead (a full report: ``kicklab report``), but for the advice the CLI
gives with the paper's costs.

Skipped, with the reason, where Chromium is absent. Where it is present
and Playwright is not installed: skipped too, unless
``KICKLAB_REQUIRE_BROWSER=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import os
import re
import shlex
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import pytest

if TYPE_CHECKING:
    from conftest import Cli

CHROMIUM = Path(os.environ.get("KICKLAB_CHROMIUM", "/usr/bin/chromium"))
# As root, in a closed network: no sandbox, no background connections.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _playwright() -> Any:
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set KICKLAB_CHROMIUM)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        msg = "Playwright for Python is not installed (pip install playwright; it drives the system Chromium)"
        if os.environ.get("KICKLAB_REQUIRE_BROWSER") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return sync_playwright


@pytest.fixture(scope="module")
def report(cli: Cli, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small model-only report: its index.html; or, where
    ``KICKLAB_REPORT`` names an ``index.html`` (a full report, real runs
    and all), that page, for the checks of its shape."""
    _playwright()
    given = os.environ.get("KICKLAB_REPORT")
    if given:
        return Path(given).resolve()
    out = tmp_path_factory.mktemp("report") / "report"
    p = cli.run("report", "--out", str(out), "--points", "20", "--messages", "5000", "--no-testbed")
    assert p.returncode == 0, p.stderr
    index = out / "index.html"
    assert index.is_file()
    return index


class Browser:
    """One Chromium for the module; pages record their console errors."""

    def __init__(self, browser: Any, url: str) -> None:
        self.browser = browser
        self.url = url
        self.errors: list[str] = []

    def open(self, width: int = 1100, height: int = 900, explorer: bool = True) -> Any:
        """A page at this size; with `explorer`, the explorer's block
        opened with a click on its summary, as a reader would."""
        page = self.browser.new_page(viewport={"width": width, "height": height})
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.goto(self.url)
        page.wait_for_selector("#kl-ex[data-ready='1']", state="attached", timeout=20_000)
        if explorer:
            page.click("#explorer details.kl-more > summary")
        return page


@pytest.fixture(scope="module")
def browser(report: Path) -> Iterator[Browser]:
    sync_playwright = _playwright()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield Browser(b, report.as_uri())
        b.close()


@pytest.fixture(scope="module")
def page(browser: Browser) -> Any:
    return browser.open()


def _cli_text_t(cli: Cli, *args: str) -> str:
    """The T that ``kicklab model ARGS`` prints: ``4.4us`` of ``T  4.4us/message``."""
    p = cli.run("model", *args)
    assert p.returncode == 0, p.stderr
    m = re.search(r"^T\s+(\S+)/message", p.stdout, re.M)
    assert m, p.stdout
    return m.group(1)


def _explorer(page: Any) -> dict[str, str]:
    return {k: page.text_content(f"#kl-ex-{k}") or "" for k in ["regime", "T", "T-ns", "E-ns", "m", "error", "cmd"]}


def _set(page: Any, values: dict[str, str]) -> None:
    page.click("#kl-ex-defaults")
    for name, value in values.items():
        page.fill(f"#kl-ex-{name}", value)


def test_the_page_loads_from_file_with_no_console_errors(browser: Browser, page: Any) -> None:
    assert page.url.startswith("file://")
    status = page.text_content("#kl-ex-status") or ""
    assert "WebAssembly module" in status, status
    # The explorer starts at the Fig. 4 defaults: FP, T = 1.105 us.
    assert page.text_content("#kl-ex-regime") == "FP"
    assert page.text_content("#kl-ex-T") == "1.105us"
    assert browser.errors == []


def test_the_findings_open_the_page_and_say_what_findings_json_says(
    cli: Cli, report: Path, browser: Browser
) -> None:
    """The box is on the first screen at 1200 px, its lines are the JSON's,
    each answers from the page's data, and kicklab's own targets sit
    collapsed at the end."""
    import json

    page = browser.open(width=1200, height=900)
    data = json.loads((report.parent / "findings.json").read_text())
    box = page.query_selector("#findings")
    assert box is not None
    top = box.bounding_box()
    assert top is not None and top["y"] < 900, top
    items = page.query_selector_all("#findings li")
    assert 1 <= len(items) <= 10
    shown = [(li.get_attribute("data-topic"), (li.text_content() or "").removesuffix(" more")) for li in items]
    assert shown == [(f["topic"], f["text"]) for f in data["lines"]]
    # Each line points at a section of the page.
    for li in items:
        href = li.query_selector("a").get_attribute("href")
        assert page.query_selector(href) is not None, href
    # The paper line says what paper.reproduced says, with its figures.
    paper = next(t for k, t in shown if k == "paper")
    assert ("reproduces" in paper) == data["paper"]["reproduced"] and data["paper"]["reproduced"]
    assert "FP T 1.11us, E 2.2us; FC T 4.4us, E 5.7us" in paper
    # What to run: advise's pick for the same pair, as the CLI gives it
    # (the paper's costs: a model-only page).
    if os.environ.get("KICKLAB_REPORT"):
        return
    advice = [t for k, t in shown if k == "advice"]
    assert len(advice) == len(data["advice"]) == 2
    for text, a in zip(advice, data["advice"]):
        assert a["pick"][0] in text
        wp = f"{a['w_p_ns'] / 1000:g}us"
        got = cli.json("advise", "--wp", wp, "--messages", "100000", "--for", "napi")
        assert got["strategy"] == a["pick"][0]
        settings = {k: str(v) for k, v in got["knobs"][0]["settings"].items()}
        assert settings == dict(kv.split("=") for kv in a["napi"][0].split())
        assert a["napi"][0] in text
    # kicklab's own targets: collapsed, at the end.
    details = page.query_selector("#targets details")
    assert details is not None and details.get_attribute("open") is None
    assert page.evaluate("document.querySelector('section:last-of-type').id") == "targets"


def test_no_paragraph_is_a_wall_of_text(browser: Browser) -> None:
    """Every paragraph of the page holds at most 100 words (the page cuts
    longer ones at sentence ends into pieces of at most about 80)."""
    page = browser.open(width=1200, height=900)
    counts = page.evaluate(
        "Array.from(document.querySelectorAll('p')).map(p => p.innerText.split(/\\s+/).filter(w => w).length)"
    )
    assert len(counts) > 20
    assert max(counts) <= 100, sorted(counts)[-5:]


def _open_all(page: Any) -> None:
    page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")


def test_the_page_is_short_and_its_details_are_one_click_away(browser: Browser) -> None:
    """At 1200 px the default page is at most 15 000 px tall; each section
    shows its lead and first figure, and the rest opens with one click on
    its block's summary."""
    page = browser.open(width=1200, height=900, explorer=False)
    height = page.evaluate("document.documentElement.scrollHeight")
    print(f"1200 px window: page {height} px tall")
    assert height <= 15_000, height
    blocks = page.query_selector_all("section > details.kl-more")
    assert len(blocks) >= 8, len(blocks)
    more = page.query_selector("#fig2 details.kl-more")
    assert more is not None and not page.is_visible("#fig-fig2-E")
    more.query_selector("summary").click()
    assert page.is_visible("#fig-fig2-E")
    assert page.evaluate("document.documentElement.scrollHeight") > height
    page.close()


def test_each_regime_has_its_picture_without_a_click(browser: Browser) -> None:
    """The regimes section shows, before any click, one panel per regime
    of its table: P's and C's lanes of work, kicks, start-ups and sleeps."""
    page = browser.open(width=1200, height=900, explorer=False)
    assert page.is_visible("#fig-regime-timelines svg.kl-timeline")
    titles = page.evaluate(
        """() => Array.from(document.querySelectorAll('#fig-regime-timelines svg text[font-weight="600"]'))
            .map(t => t.textContent.split(':')[0])"""
    )
    page.evaluate("document.querySelectorAll('#regimes details').forEach(d => { d.open = true; })")
    regimes = page.evaluate(
        """() => Array.from(document.querySelectorAll('#regimes table'))[0].tBodies[0].rows.length"""
    )
    assert len(titles) == regimes >= 8, titles
    assert {"FP", "FC", "EWC"} <= set(titles), titles
    kinds = page.evaluate(
        """() => new Set(Array.from(document.querySelectorAll('#fig-regime-timelines svg rect title'))
            .map(t => t.textContent.split(':')[0])).size"""
    )
    assert kinds >= 4, kinds
    page.close()


def test_terms_link_to_the_glossary(browser: Browser) -> None:
    """The first use of a term in a section links to its definition in the
    glossary, and every such link lands on one."""
    page = browser.open(width=1200, height=900, explorer=False)
    hrefs = page.evaluate("() => Array.from(document.querySelectorAll('a.kl-term')).map(a => a.getAttribute('href'))")
    assert len(hrefs) >= 10, hrefs
    for href in set(hrefs):
        target = page.query_selector(href)
        assert target is not None, href
        assert page.evaluate("(e) => e.closest('#glossary') !== null", target), href
    # None inside the glossary itself, nor twice for one term in a section.
    assert page.query_selector("#glossary a.kl-term") is None
    twice = page.evaluate(
        """() => Array.from(document.querySelectorAll('section')).flatMap(s => {
            const seen = new Set(); const dup = [];
            s.querySelectorAll('a.kl-term').forEach(a => { const h = a.getAttribute('href');
                if (seen.has(h)) dup.push(s.id + ' ' + h); seen.add(h); });
            return dup; })"""
    )
    assert twice == [], twice
    page.close()


def test_every_charts_data_fill_a_fifth_of_its_plot(browser: Browser) -> None:
    """With every block opened, no chart's data (its lines and points)
    span less than a fifth of its plot's height: a log or fitted axis
    where one curve would squash the others."""
    page = browser.open(width=1200, height=900, explorer=False)
    _open_all(page)
    shares = page.evaluate(
        """() => Array.from(document.querySelectorAll('figure svg.kl-chart')).map(svg => {
        const [x, y, w, h] = svg.getAttribute('data-plot').split(' ').map(Number);
        let lo = Infinity, hi = -Infinity;
        const add = (px, py) => {
            if (px >= x - 0.5 && px <= x + w + 0.5 && py >= y - 0.5 && py <= y + h + 0.5) {
                lo = Math.min(lo, py); hi = Math.max(hi, py);
            }
        };
        svg.querySelectorAll('g.kl-zoom polyline').forEach(l => (l.getAttribute('points') || '').trim()
            .split(/\\s+/).forEach(p => { const [a, c] = p.split(',').map(Number); add(a, c); }));
        svg.querySelectorAll('g.kl-zoom circle').forEach(c => add(+c.getAttribute('cx'), +c.getAttribute('cy')));
        return [svg.closest('figure').id, (hi - lo) / h];
    })"""
    )
    assert len(shares) >= 10
    squashed = [(f, round(v, 2)) for f, v in shares if not v >= 0.2]
    print(f"{len(shares)} charts; the least filled: {min(shares, key=lambda s: s[1])}")
    assert squashed == [], squashed
    page.close()


def test_no_table_on_the_page_is_wider_than_it_or_has_more_than_eight_columns(browser: Browser) -> None:
    """With every section's block opened, the tables shown have at most
    eight columns and fit the page at 1200 px; with the wide tables'
    blocks opened too, the page does not scroll sideways (a whole wide
    table scrolls in its own box)."""
    page = browser.open(width=1200, height=900, explorer=False)
    page.evaluate("document.querySelectorAll('details.kl-more').forEach(d => { d.open = true; })")
    shown = page.evaluate(
        """() => Array.from(document.querySelectorAll('table')).filter(t => t.checkVisibility())
            .map(t => ({cols: t.rows[0].cells.length, right: t.getBoundingClientRect().right,
                        page: document.body.getBoundingClientRect().right}))"""
    )
    assert len(shown) >= 3
    assert max(t["cols"] for t in shown) <= 8, shown
    assert all(t["right"] <= t["page"] + 1 for t in shown), shown
    _open_all(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1200
    page.close()


def _long_values(text: str) -> list[str]:
    """Decimal values in `text` with more than three significant digits
    (whole numbers are counts and years, and stay whole)."""
    found = []
    for v in re.findall(r"(?<![\w.:=/-])\d+\.\d+(?![\w.]*=)", text):
        digits = v.replace(".", "").lstrip("0")
        if len(digits) > 3:
            found.append(v)
    return found


def test_the_page_prints_three_significant_digits(browser: Browser) -> None:
    """Every decimal value in the page's text, tables and summaries has at
    most three significant digits (the CSV and JSON keep every digit).
    Commands (code spans) keep what a user would type, and the explorer
    shows what the CLI prints for the same parameters."""
    page = browser.open(width=1200, height=900)
    _open_all(page)
    text = page.evaluate(
        """() => { let out = '';
            const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
            let n;
            while ((n = w.nextNode())) {
                const e = n.parentElement;
                if (e.closest('script, style, svg, code, #explorer')) continue;
                out += ' ' + n.textContent;
            }
            return out; }"""
    )
    assert len(text.split()) > 2000
    assert _long_values("1.105 2.2 1.0 0.0123 12.34") == ["1.105", "12.34"]
    assert _long_values(text) == []


def test_moving_the_slider_shows_the_clis_t(cli: Cli, browser: Browser, page: Any) -> None:
    page.click("#kl-ex-defaults")
    slider = page.locator("#kl-ex-wp-r")
    slider.focus()
    # W_P from 1us, 130 steps of 0.01us to the right: 2.3us.
    for _ in range(130):
        page.keyboard.press("ArrowRight")
    assert page.input_value("#kl-ex-wp") == "2.3us"
    want = cli.json("model", "--wp", "2.3us")
    got = _explorer(page)
    assert got["error"] == ""
    assert float(got["T-ns"]) == want["T_ns"]
    assert float(got["E-ns"]) == want["E_ns"]
    assert got["regime"] == want["regime"] == "FC"
    assert got["T"] == _cli_text_t(cli, "--wp", "2.3us") == "4.7us"
    assert got["cmd"] == "kicklab model --wp 2.3us"
    assert browser.errors == []


@pytest.mark.parametrize(
    "values",
    [
        {"len": "8", "wp": "2us", "wc": "1us", "sc": "20us", "sp": "0.5us"},
        {"len": "4", "wp": "0.5us"},
        {"wp": "0.6us", "np": "8.36us", "vp": "4.22us", "sp": "13.2us", "nc": "1.69us", "sc": "1.11us"},
        {"kp": "4", "kc": "3", "wp": "exp:1.7us", "nc": "350ns"},
    ],
    ids=["SCS", "SPS", "EWC", "batched"],
)
def test_typed_parameters_show_the_clis_numbers(
    cli: Cli, browser: Browser, page: Any, values: dict[str, str]
) -> None:
    _set(page, values)
    flags = [a for name, value in values.items() for a in (f"--{name}", value)]
    want = cli.json("model", *flags)
    got = _explorer(page)
    assert got["error"] == ""
    assert got["regime"] == want["regime"]
    assert float(got["T-ns"]) == want["T_ns"]
    assert float(got["E-ns"]) == want["E_ns"]
    if want["m"] is None:
        assert got["m"].startswith("none")
    else:
        assert got["m"].split()[0] == str(want["m"])
    assert got["T"] == _cli_text_t(cli, *flags)
    # The command the page shows prints the same.
    shown = shlex.split(got["cmd"])
    assert shown[:2] == ["kicklab", "model"]
    assert cli.json(*shown[1:])["T_ns"] == want["T_ns"]
    assert browser.errors == []


def test_bad_input_is_a_message_not_a_trap(browser: Browser, page: Any) -> None:
    _set(page, {"kp": "300"})
    err = page.text_content("#kl-ex-error") or ""
    assert "k_P" in err and "L = 256" in err, err
    assert page.text_content("#kl-ex-T") == "\u2013"
    _set(page, {"np": "1us", "vp": "2us"})
    assert "V_P" in (page.text_content("#kl-ex-error") or "")
    # And it recovers.
    _set(page, {"wp": "2us"})
    assert page.text_content("#kl-ex-error") == ""
    assert page.text_content("#kl-ex-T") == "4.4us"
    assert browser.errors == []


@pytest.mark.parametrize("exp", [False, True], ids=["const", "exp"])
def test_the_simulator_button_gives_what_kicklab_sim_gives(
    cli: Cli, browser: Browser, page: Any, exp: bool
) -> None:
    _set(page, {"wp": "1.7us", "len": "16"})
    page.fill("#kl-ex-messages", "20000")
    page.fill("#kl-ex-seed", "7")
    if page.is_checked("#kl-ex-exp") != exp:
        page.click("#kl-ex-exp")
    page.click("#kl-ex-run")
    page.wait_for_function("document.getElementById('kl-ex-sim-T').hasAttribute('data-ns')")
    got = float(page.get_attribute("#kl-ex-sim-T", "data-ns") or "nan")
    cmd = shlex.split(page.text_content("#kl-ex-sim-cmd") or "")
    assert cmd[:2] == ["kicklab", "sim"] and "--seed" in cmd
    assert ("--wp" in cmd) and (("exp:" in " ".join(cmd)) == exp)
    want = cli.json(*cmd[1:])
    if exp:
        # The same simulator on the same seeds; random costs draw through
        # log(), whose last bit may differ between wasm32 and x86-64.
        assert got == pytest.approx(want["T_ns"], rel=1e-9)
        page.click("#kl-ex-exp")
    else:
        assert got == want["T_ns"]
        # Constant costs: the simulator reproduces the closed form.
        assert got == pytest.approx(float(page.text_content("#kl-ex-T-ns") or "nan"), rel=1e-9)
    assert browser.errors == []


def test_a_slider_move_is_answered_in_under_50_ms(browser: Browser, page: Any) -> None:
    page.click("#kl-ex-defaults")
    page.locator("#kl-ex-wc-r").focus()
    times = []
    for _ in range(15):
        page.keyboard.press("ArrowRight")
        times.append(float(page.get_attribute("#kl-ex", "data-ms") or "nan"))
    median = statistics.median(times)
    print(f"explorer: a slider move took {median:.1f} ms (median of 15; max {max(times):.1f} ms)")
    assert median < 50.0, times
    assert browser.errors == []


def _point_on_screen(page: Any, fig: str) -> dict[str, Any]:
    """A data point of the chart in figure ``fig``, at least 4 px from any
    other series' point of other values: its screen position and values."""
    return page.evaluate(
        """(fig) => {
        const svg = document.querySelector(fig + ' svg');
        svg.scrollIntoView({block: 'center'});
        const c = svg.klChart;
        const alone = (a) => c.pixels.every(b => b.s === a.s || (b.x === a.x && b.y === a.y)
            || Math.hypot(c.tx(a.px) - c.tx(b.px), c.ty(a.py) - c.ty(b.py)) > 4);
        const pt = c.pixels.slice(Math.floor(c.pixels.length / 3)).concat(c.pixels).find(alone);
        const p = svg.createSVGPoint();
        p.x = c.tx(pt.px); p.y = c.ty(pt.py);
        const s = p.matrixTransform(svg.getScreenCTM());
        return {x: s.x, y: s.y, vx: pt.x, vy: pt.y, name: c.meta.s[pt.s].n, xl: c.meta.xl, yl: c.meta.yl};
    }""",
        fig,
    )


def test_hovering_a_chart_shows_its_value(browser: Browser, page: Any) -> None:
    for fig in ["#fig-fig2-T", "#kl-ex-chart-t", "#fig-scale-sim-throughput"]:
        # (A chart in a section's collapsed details is opened first.)
        page.evaluate("(fig) => document.querySelector(fig).closest('details')?.setAttribute('open', '')", fig)
        pt = _point_on_screen(page, fig)
        page.mouse.move(pt["x"], pt["y"])
        page.wait_for_selector(".kl-tip", state="visible")
        tip = page.text_content(".kl-tip") or ""
        # The series' name (with any other drawn through the same point),
        # x and y.
        assert pt["name"] in tip.split(pt["xl"])[0], (tip, pt)
        x = re.search(re.escape(pt["xl"]) + r" = ([-\d.e+]+)", tip)
        assert x and float(x.group(1)) == pytest.approx(pt["vx"], rel=1e-5), (tip, pt)
        y = re.search(re.escape(pt["yl"]) + r" = ([-\d.e+]+)", tip)
        assert y and float(y.group(1)) == pytest.approx(pt["vy"], rel=1e-5), (tip, pt)
        page.mouse.move(0, 0)
    # A regime map's cell.
    box = page.locator("svg.kl-map").first
    box.scroll_into_view_if_needed()
    b = box.bounding_box()
    page.mouse.move(b["x"] + b["width"] * 0.3, b["y"] + b["height"] * 0.5)
    tip = page.text_content(".kl-tip") or ""
    assert page.is_visible(".kl-tip") and "W_P [us] = " in tip, tip
    page.mouse.move(0, 0)
    assert browser.errors == []


def test_a_log_x_axis_puts_the_script_s_points_on_the_drawn_ticks(browser: Browser, page: Any) -> None:
    # Guests double from point to point: the page's script, which finds the
    # point under the mouse, must place x = 4 where the SVG drew its tick.
    at = page.evaluate(
        """() => {
        const svg = document.querySelector('#fig-scale-sim-throughput svg');
        const c = svg.klChart;
        const tick = Array.from(svg.querySelectorAll('text.tick'))
            .find(t => t.getAttribute('text-anchor') === 'middle' && t.textContent === '4');
        const pt = c.pixels.find(p => p.x === 4);
        return {meta: c.meta.xlog, tick: tick && parseFloat(tick.getAttribute('x')), px: pt && pt.px};
    }"""
    )
    assert at["meta"] is True, at
    assert at["tick"] is not None and at["px"] is not None, at
    assert abs(at["tick"] - at["px"]) < 1.0, at
    assert browser.errors == []


def _ticks(page: Any, fig: str) -> list[str]:
    return page.evaluate(
        """(fig) => Array.from(document.querySelectorAll(fig + ' svg text.tick'))
            .filter(t => t.getBoundingClientRect().width > 0).map(t => t.textContent)""",
        fig,
    )


def test_dragging_a_box_zooms_and_double_click_resets(browser: Browser, page: Any) -> None:
    fig = "#fig-fig2-T"
    page.evaluate("(fig) => document.querySelector(fig + ' svg').scrollIntoView({block: 'center'})", fig)
    before = _ticks(page, fig)
    plot = page.evaluate(
        """(fig) => {
        const svg = document.querySelector(fig + ' svg');
        const [x, y, w, h] = svg.getAttribute('data-plot').split(' ').map(Number);
        const m = svg.getScreenCTM();
        const at = (u, v) => { const p = svg.createSVGPoint(); p.x = u; p.y = v; return p.matrixTransform(m); };
        const a = at(x + 0.3 * w, y + 0.2 * h), b = at(x + 0.5 * w, y + 0.8 * h);
        return {x0: a.x, y0: a.y, x1: b.x, y1: b.y};
    }""",
        fig,
    )
    page.mouse.move(plot["x0"], plot["y0"])
    page.mouse.down()
    page.mouse.move((plot["x0"] + plot["x1"]) / 2, (plot["y0"] + plot["y1"]) / 2)
    page.mouse.move(plot["x1"], plot["y1"])
    page.mouse.up()
    after = _ticks(page, fig)
    assert after != before, after
    assert page.is_visible(f"{fig} .kl-reset")
    # W_P 0.1..3us over the plot: the box covers about 0.97..1.55 us.
    xs = [float(t) for t in after if re.fullmatch(r"[\d.]+", t)]
    assert any(0.9 < v < 1.6 for v in xs), after
    page.mouse.dblclick(plot["x0"], plot["y0"])
    assert _ticks(page, fig) == before
    assert browser.errors == []


def _drag(page: Any, fig: str, frm: tuple[float, float], to: tuple[float, float]) -> None:
    """Drags over `fig`'s plot from one point to another, each given as
    fractions of the plot's width and height."""
    at = page.evaluate(
        """([fig, a, b]) => {
        const svg = document.querySelector(fig + ' svg');
        svg.scrollIntoView({block: 'center'});
        const [x, y, w, h] = svg.getAttribute('data-plot').split(' ').map(Number);
        const m = svg.getScreenCTM();
        const pt = (f) => { const p = svg.createSVGPoint(); p.x = x + f[0] * w; p.y = y + f[1] * h;
                            const q = p.matrixTransform(m); return [q.x, q.y]; };
        return [pt(a), pt(b)];
    }""",
        [fig, list(frm), list(to)],
    )
    page.mouse.move(*at[0])
    page.mouse.down()
    page.mouse.move((at[0][0] + at[1][0]) / 2, (at[0][1] + at[1][1]) / 2)
    page.mouse.move(*at[1])
    page.mouse.up()


def test_a_short_drag_is_a_click_and_a_flat_box_fits_y_to_its_data(browser: Browser) -> None:
    """A drag of a few pixels leaves the chart as it was; a flat box over
    part of W_P zooms x and fits y to the data in that range (it fills
    most of the plot's height, never an empty chart)."""
    page = browser.open(width=1100, height=900, explorer=False)
    fig = "#fig-fig2-T"
    before = _ticks(page, fig)
    _drag(page, fig, (0.5, 0.5), (0.51, 0.51))
    assert _ticks(page, fig) == before
    _drag(page, fig, (0.6, 0.5), (0.9, 0.51))
    assert _ticks(page, fig) != before
    span = page.evaluate(
        """(fig) => {
        const svg = document.querySelector(fig + ' svg');
        const [x, y, w, h] = svg.getAttribute('data-plot').split(' ').map(Number);
        let lo = Infinity, hi = -Infinity;
        svg.querySelectorAll('polyline').forEach(l => {
            (l.getAttribute('points') || '').trim().split(/\\s+/).forEach(p => {
                const [px, py] = p.split(',').map(Number);
                if (px >= x && px <= x + w && py >= y && py <= y + h) { lo = Math.min(lo, py); hi = Math.max(hi, py); }
            });
        });
        return (hi - lo) / h;
    }""",
        fig,
    )
    print(f"a flat box over W_P 60-90%: the data fill {100 * span:.0f}% of the plot's height")
    assert span > 0.6, span
    page.close()
    assert browser.errors == []


def test_nothing_overflows_700_px_and_ticks_stay_readable(browser: Browser) -> None:
    page = browser.open(width=700, height=900)
    _open_all(page)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 700, width
    smallest = page.evaluate(
        """() => {
        let least = Infinity;
        document.querySelectorAll('svg text.tick').forEach(t => {
            const svg = t.ownerSVGElement;
            const k = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
            least = Math.min(least, parseFloat(t.getAttribute('font-size')) * k);
        });
        return least;
    }"""
    )
    print(f"700 px window: page {width} px wide, smallest tick label {smallest:.1f} px")
    assert 12.0 <= smallest < 100, smallest
    page.close()
    assert browser.errors == []
