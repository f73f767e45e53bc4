"""Open an HTML report in Debian's headless Chromium and say what happened.

Shared by ``tests/test_report.py`` and ``benchmarks/report_speed.py``. Selenium
drives ``/usr/bin/chromium`` through ``/usr/bin/chromedriver`` (Debian's
``chromium`` and ``chromium-driver``; never a downloaded browser), with
Chrome's logs on: the console (``browser``) and the DevTools network events
(``performance``), so a test can assert that the page logged no error and asked
for nothing but ``file:`` and ``data:`` URLs. Host names resolve nowhere
(``--host-resolver-rules``), so a page that tried the network would be caught
by its request log, not helped by a connection.

The page counts as loaded when Bokeh's document is idle (every view rendered):
an in-page ``requestAnimationFrame`` loop checks ``Bokeh.documents[0].is_idle``
and returns ``performance.now()``, the milliseconds since navigation started,
at the first frame where it holds.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

#: Debian's paths (packages chromium and chromium-driver).
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

#: Waits in the page until Bokeh's document is idle; resolves with the time.
_WAIT_IDLE = """
const done = arguments[arguments.length - 1];
function check() {
  const docs = (window.Bokeh && window.Bokeh.documents) || [];
  if (docs.length > 0 && docs.every((d) => d.is_idle)) {
    done({ready_ms: performance.now()});
  } else {
    requestAnimationFrame(check);
  }
}
check();
"""

#: For each ancestry panel j (figure ``panel-j``): its bars' glyph type and image
#: shape in the document model (``bars-j``), the size of the image its view drew,
#: and the rows of the data source its tooltips read (``ancestry``).
_COUNT_BARS = """
const out = {};
const rows = Bokeh.documents[0].get_model_by_name("ancestry").get_length();
for (const view of Bokeh.index.all_views()) {
  const model = view.model;
  const name = model.name || "";
  if (model.type !== "GlyphRenderer" || !name.startsWith("bars-")) continue;
  const image = model.data_source.data.image[0];
  const drawn = view.glyph.image_data;
  out[model.name.split("-")[1]] = {
    glyph: model.glyph.type, shape: Array.from(image.shape),
    drawn: drawn && drawn[0] ? [drawn[0].height, drawn[0].width] : null,
    tooltip_rows: rows};
}
return out;
"""

#: Where (in the page's CSS pixels) bar x of figure ``name`` is, halfway up.
_BAR_POSITION = """
const [name, x] = arguments;
for (const view of Bokeh.index.all_views()) {
  if (view.model.name !== name) continue;
  const box = view.el.getBoundingClientRect();
  const frame = view.frame.bbox;
  const range = view.model.x_range;
  const fraction = (x - range.start) / (range.end - range.start);
  return [box.left + frame.left + frame.width * fraction,
          box.top + frame.top + frame.height / 2];
}
return null;
"""

#: The text of every Bokeh tooltip shown (tooltips live in shadow roots).
_TOOLTIPS = """
const out = [];
function walk(root) {
  for (const el of root.querySelectorAll("*")) {
    if (el.shadowRoot) walk(el.shadowRoot);
    if (String(el.className).includes("bk-tooltip-content")) out.push(el.innerText);
  }
}
walk(document);
return out;
"""


#: Runs a script body as an async function and hands its result to Selenium.
_ASYNC = """
const done = arguments[arguments.length - 1];
(async () => { CODE })().then(done, (error) => done({error: String(error)}));
"""


def _stat_cpu(path: str) -> tuple[str, int, float] | None:
    """(name, parent pid, user + system CPU seconds) from a /proc stat file."""
    try:
        with open(path) as handle:
            text = handle.read()
    except OSError:
        return None
    name = text[text.index("(") + 1:text.rindex(")")]
    fields = text.rsplit(")", 1)[1].split()
    return name, int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICKS


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_snapshot(root: int) -> tuple[float, dict]:
    """CPU seconds of process ``root`` and its descendants, and of each renderer
    process's main thread (``CrRendererMain``), by pid; Linux /proc."""
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat_cpu(f"/proc/{entry}/stat")):
            children.setdefault(stat[1], []).append(int(entry))
            cpu[int(entry)] = stat[2]
    total, main, stack = 0.0, {}, [root]
    while stack:
        pid = stack.pop()
        total += cpu.get(pid, 0.0)
        stack.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                renderer = b"--type=renderer" in handle.read()
        except OSError:
            continue
        # a renderer's main thread (CrRendererMain) is the thread whose id is the pid
        if renderer and (stat := _stat_cpu(f"/proc/{pid}/task/{pid}/stat")):
            main[pid] = stat[2]
    return total, main


@dataclass
class PageResult:
    """What loading a page in Chromium gave.

    Attributes
    ----------
    ready_ms : float
        Milliseconds from navigation start until Bokeh's document was idle.
    cpu_seconds : float
        CPU time (user + system) that the browser's processes (every process
        under chromedriver) spent from the start of navigation to idle: on a
        busy machine wall time waits for other processes, this does not.
    main_thread_seconds : float
        The part of it spent by the renderer's main thread (``CrRendererMain``:
        parsing, JavaScript, layout, painting calls), which runs one task at a
        time: on an idle machine the load cannot take less wall time than this.
    console : list of dict
        Chrome's console entries (``level``, ``message``).
    requests : list of str
        Every URL the page requested (DevTools ``Network.requestWillBeSent``).
    bars : dict
        Panel number (str) -> ``glyph`` (the bars' glyph type), ``shape``
        (its image's [rows, columns] in the document model), ``drawn`` (the
        [height, width] of the image its view drew), ``tooltip_rows`` (rows of
        the data source its tooltips read).
    tooltips : list of str
        For each of ``open_page``'s ``hover`` points, the text of the tooltip
        shown with the mouse there.
    screenshot : pathlib.Path or None
        The PNG written, when asked for.
    webgl : bool
        Whether the browser offered a WebGL context.
    results : dict
        What each of ``open_page``'s ``scripts`` returned, by name.
    """

    ready_ms: float
    cpu_seconds: float = float("nan")
    main_thread_seconds: float = float("nan")
    console: list = field(default_factory=list)
    requests: list = field(default_factory=list)
    bars: dict = field(default_factory=dict)
    screenshot: Path | None = None
    webgl: bool = False
    results: dict = field(default_factory=dict)
    tooltips: list = field(default_factory=list)

    @property
    def errors(self) -> list:
        """Console entries at level SEVERE (JavaScript errors, failed loads)."""
        return [entry for entry in self.console if entry.get("level") == "SEVERE"]


def missing() -> str | None:
    """Why a browser test cannot run here (None when it can)."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not Path(path).exists() and not shutil.which(Path(path).name):
            return (f"{path} not found: install Debian's {package} "
                    "(apt-get install chromium chromium-driver)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium not installed (pip install admixspec[test])"
    return None


def open_page(path, *, screenshot=None, width: int = 1400, height: int = 1800,
              timeout: float = 120.0, arguments=(), scripts=(),
              hover=()) -> PageResult:
    """Load ``path`` from a file URL in headless Chromium and report on it.

    Parameters
    ----------
    path : str or os.PathLike
        The HTML file.
    screenshot : str or os.PathLike, optional
        Write a PNG of the window here once the page is idle.
    width, height : int
        Window size in CSS pixels.
    timeout : float
        Seconds to wait for the page.
    arguments : sequence of str
        More Chromium command-line switches.
    scripts : sequence of (str, str)
        ``(name, JavaScript)`` run in order once the page is idle (before the
        screenshot), each as the body of an async function (``await`` works);
        what it returns lands in ``results[name]``.
    hover : sequence of (str, float)
        ``(figure name, x)``: after the scripts, move the mouse to bar ``x`` of
        that figure (halfway up), wait for the tooltip and read it.
    """
    import time

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.actions.action_builder import ActionBuilder

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     f"--window-size={width},{height}", "--enable-unsafe-swiftshader",
                     "--host-resolver-rules=MAP * ~NOTFOUND",
                     "--no-first-run", "--no-default-browser-check",
                     "--disable-background-networking", "--disable-component-update",
                     *arguments):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    service = Service(executable_path=CHROMEDRIVER)
    driver = webdriver.Chrome(options=options, service=service)
    try:
        driver.set_script_timeout(timeout)
        driver.set_page_load_timeout(timeout)
        driver.get("about:blank")
        root = driver.service.process.pid
        cpu_before, main_before = _cpu_snapshot(root)
        driver.get(Path(path).resolve().as_uri())
        ready = driver.execute_async_script(_WAIT_IDLE)
        cpu_after, main_after = _cpu_snapshot(root)
        cpu_seconds = cpu_after - cpu_before
        main_seconds = sum(value - main_before.get(key, 0.0)
                           for key, value in main_after.items())
        bars = driver.execute_script(_COUNT_BARS)
        webgl = bool(driver.execute_script(
            "return !!document.createElement('canvas').getContext('webgl2')"))
        results = {name: driver.execute_async_script(_ASYNC.replace("CODE", code))
                   for name, code in scripts}
        tooltips = []
        for name, x in hover:
            where = driver.execute_script(_BAR_POSITION, name, x)
            actions = ActionBuilder(driver)  # viewport coordinates, as the rect's
            actions.pointer_action.move_to_location(int(where[0]), int(where[1]))
            actions.perform()
            text = []
            for _ in range(100):
                text = driver.execute_script(_TOOLTIPS)
                if text:
                    break
                time.sleep(0.05)
            tooltips.append("\n".join(text))
        shot = None
        if screenshot is not None:
            driver.save_screenshot(str(screenshot))
            shot = Path(screenshot)
        console = [{"level": e["level"], "message": e["message"]}
                   for e in driver.get_log("browser")]
        requests = []
        for entry in driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                requests.append(message["params"]["request"]["url"])
    finally:
        driver.quit()
    return PageResult(ready_ms=float(ready["ready_ms"]), cpu_seconds=cpu_seconds,
                      main_thread_seconds=main_seconds,
                      console=console,
                      requests=requests, bars=bars, screenshot=shot, webgl=webgl,
                      results=results, tooltips=tooltips)
