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
#: and the rows of its hover glyph (``hover-j``) in the model and in the view.
_COUNT_BARS = """
const out = {};
for (const view of Bokeh.index.all_views()) {
  const model = view.model;
  if (model.type !== "GlyphRenderer" || !model.name) continue;
  const [kind, j] = model.name.split("-");
  if (kind !== "bars" && kind !== "hover") continue;
  const entry = out[j] || (out[j] = {});
  if (kind === "bars") {
    const image = model.data_source.data.image[0];
    entry.glyph = model.glyph.type;
    entry.shape = Array.from(image.shape);
    const drawn = view.glyph.image_data;
    entry.drawn = drawn && drawn[0] ? [drawn[0].height, drawn[0].width] : null;
  } else {
    entry.hover_rows = model.data_source.get_length();
    entry.hover_drawn = view.glyph.data_size;
  }
}
return out;
"""


#: Runs a script body as an async function and hands its result to Selenium.
_ASYNC = """
const done = arguments[arguments.length - 1];
(async () => { CODE })().then(done, (error) => done({error: String(error)}));
"""


def _tree_cpu_seconds(root: int) -> float:
    """User + system CPU seconds of process ``root`` and all its descendants (Linux)."""
    ticks = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, parent = int(entry), int(fields[1])
        children.setdefault(parent, []).append(pid)
        cpu[pid] = (int(fields[11]) + int(fields[12])) / ticks
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        total += cpu.get(pid, 0.0)
        stack.extend(children.get(pid, []))
    return total


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
    console : list of dict
        Chrome's console entries (``level``, ``message``).
    requests : list of str
        Every URL the page requested (DevTools ``Network.requestWillBeSent``).
    bars : dict
        Panel number (str) -> ``glyph`` (the bars' glyph type), ``shape``
        (its image's [rows, columns] in the document model), ``drawn`` (the
        [height, width] of the image its view drew), ``hover_rows`` and
        ``hover_drawn`` (rows of the panel's hover glyph in the model and in
        its view).
    screenshot : pathlib.Path or None
        The PNG written, when asked for.
    webgl : bool
        Whether the browser offered a WebGL context.
    results : dict
        What each of ``open_page``'s ``scripts`` returned, by name.
    """

    ready_ms: float
    cpu_seconds: float = float("nan")
    console: list = field(default_factory=list)
    requests: list = field(default_factory=list)
    bars: dict = field(default_factory=dict)
    screenshot: Path | None = None
    webgl: bool = False
    results: dict = field(default_factory=dict)

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
              timeout: float = 120.0, arguments=(), scripts=()) -> PageResult:
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
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

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
        cpu_before = _tree_cpu_seconds(root)
        driver.get(Path(path).resolve().as_uri())
        ready = driver.execute_async_script(_WAIT_IDLE)
        cpu_seconds = _tree_cpu_seconds(root) - cpu_before
        bars = driver.execute_script(_COUNT_BARS)
        webgl = bool(driver.execute_script(
            "return !!document.createElement('canvas').getContext('webgl2')"))
        results = {name: driver.execute_async_script(_ASYNC.replace("CODE", code))
                   for name, code in scripts}
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
                      console=console,
                      requests=requests, bars=bars, screenshot=shot, webgl=webgl,
                      results=results)
