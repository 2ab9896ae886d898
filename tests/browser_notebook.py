"""What a student sees: one notebook opened in JupyterLab in a real browser, run, clicked and checked.

The checks run in the page against JupyterLab's own objects (exposed as window.jupyterapp):
each code cell's output model says what should be shown, the cell's DOM says what is shown.
"""

from __future__ import annotations

from pathlib import Path

MAIN_CONTROL = ".s09-main-control"  # the notebook's main Button (ipywidgets puts the class on its element)
RESULT = ".s09-result"  # the widget that shows what the main control did

# Each deadline below only bounds a hang: it is many times what a shared, loaded machine needs
# (two cores, other jobs beside the test), so a slow run passes and only a stuck one fails.
OPEN_SECONDS = 300  # load JupyterLab, start the kernel
RUN_ALL_SECONDS = 600  # every notebook is meant to run in under 20 s on an idle machine
SETTLE_SECONDS = 120  # widgets and images finish rendering after the kernel is idle
CLICK_SECONDS = 120  # a click may start and kill a child process
MAX_SCREENSHOT_HEIGHT = 16000

# True once the notebook is open and its kernel has started and is idle.
_KERNEL_IDLE = """() => {
    const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext && panel.sessionContext.session
        && panel.sessionContext.session.kernel;
    return Boolean(panel && panel.context && panel.context.isReady && kernel && kernel.status === 'idle'
        && kernel.connectionStatus === 'connected');
}"""

# Start "Run All" and record in window.s09RunAll when JupyterLab says it has finished.
_START_RUN_ALL = """() => {
    window.s09RunAll = null;
    window.jupyterapp.commands.execute('notebook:run-all-cells').then(
        (ok) => { window.s09RunAll = {ok: ok}; },
        (error) => { window.s09RunAll = {ok: false, error: String(error)}; });
}"""

_RUN_ALL_FINISHED = "() => Boolean(window.s09RunAll) && (" + _KERNEL_IDLE + ")()"

# True when no widget is still loading and every image has finished loading (or failed to).
_SETTLED = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const loading = [...panel.node.querySelectorAll('.jp-OutputArea-output')]
        .some((node) => node.textContent.includes('Loading widget...'));
    const images = [...panel.node.querySelectorAll('img')].every((image) => image.complete);
    return !loading && images;
}"""

# Fold the side panels away once JupyterLab has restored its layout (not awaited: it cannot hang).
_HIDE_SIDEBARS_WHEN_RESTORED = """() => {
    const app = window.jupyterapp;
    app.restored.then(() => { app.shell.collapseLeft(); app.shell.collapseRight(); });
}"""

# A JupyterLab dialog (kernel picker, error box) blocks everything: report its text.
_DIALOG_TEXT = "() => { const d = document.querySelector('.jp-Dialog'); return d ? d.innerText : null; }"

# Walk every cell; compare what its output model holds with what its DOM shows; list the problems.
_OUTPUT_PROBLEMS = r"""(widgetClassNames) => {
    const WIDGET = 'application/vnd.jupyter.widget-view+json';
    const panel = window.jupyterapp.shell.currentWidget;
    const problems = [];
    // ipywidgets' repr is Name(key=value, ...); matplotlib's Text(0.5, 1.0, 'title') is not one.
    const showsWidgetRepr = (text) => widgetClassNames.some((name) => text.startsWith(name + '(')
        && /^(\)|\w+=)/.test(text.slice(name.length + 1)));
    panel.content.widgets.forEach((cell, index) => {
        const where = `cell ${index + 1}`;
        for (const image of cell.node.querySelectorAll('.jp-MarkdownOutput img')) {
            if (!(image.complete && image.naturalWidth > 0)) {
                problems.push(`${where}: markdown image ${new URL(image.src).pathname} did not load`);
            }
        }
        if (cell.model.type !== 'code') return;
        const source = cell.model.sharedModel.getSource();
        const tags = cell.model.getMetadata('tags') || [];
        const mayRaise = tags.includes('raises-exception') || source.includes('NBVAL_RAISES_EXCEPTION');
        if (source.trim() && cell.model.executionCount === null) {
            problems.push(`${where}: never ran`);
        }
        const outputs = cell.model.outputs.toJSON();
        const shown = cell.outputArea.widgets.map((child) =>
            child.node.querySelector('.jp-OutputArea-output') || child.node);
        if (shown.length !== outputs.length) {
            problems.push(`${where}: ${outputs.length} outputs in the model, ${shown.length} on the page`);
            return;
        }
        outputs.forEach((output, k) => {
            const node = shown[k];
            const text = node.innerText.trim();
            const mime = node.getAttribute('data-mime-type');
            if (output.output_type === 'error' && !mayRaise) {
                problems.push(`${where}: error ${output.ename}: ${output.evalue}`);
            } else if (output.output_type === 'stream' && output.name === 'stderr') {
                problems.push(`${where}: stderr: ${text.slice(0, 300)}`);
            } else if (output.data && output.data[WIDGET]) {
                if (node.closest('.lm-mod-hidden')) return;  // a closed widget: JupyterLab hides it
                if (mime === 'text/plain') {
                    problems.push(`${where}: widget shown as text: ${text.slice(0, 120)}`);
                } else if (text.includes('Error displaying widget') || text.includes('Loading widget...')) {
                    problems.push(`${where}: ${text.slice(0, 120)}`);
                } else if (!node.querySelector('.jupyter-widgets')) {
                    problems.push(`${where}: widget output has no rendered widget`);
                }
            } else if (output.data && output.data['image/png']) {
                const image = node.querySelector('img');
                if (!(image && image.complete && image.naturalWidth > 0)) {
                    problems.push(`${where}: a plot is not shown as an image (${mime}): ${text.slice(0, 80)}`);
                }
            } else if (['text/plain', 'application/vnd.jupyter.stdout'].includes(mime) && showsWidgetRepr(text)) {
                problems.push(`${where}: widget repr printed as text: ${text.slice(0, 120)}`);
            } else if (mime === 'text/plain' && text.startsWith('<Figure size')) {
                problems.push(`${where}: figure shown as text, not as an image: ${text}`);
            }
        });
    });
    return problems;
}"""

# Scroll the notebook back to its first cell; return the window height at which nothing scrolls.
# (Also called after a failure, when there may be no notebook on the page to scroll.)
_SCROLL_TO_TOP = """() => {
    const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const scroller = panel && panel.node.querySelector('.jp-WindowedPanel-outer');
    if (!scroller) return window.innerHeight;
    scroller.scrollTop = 0;
    return window.innerHeight + scroller.scrollHeight - scroller.clientHeight;
}"""


class NotebookNotReady(AssertionError):
    """JupyterLab did not open the notebook, run it, or settle in time."""


def record_browser_errors(page) -> list[str]:
    """Start recording the page's script errors and console errors; returns the list they go into."""
    errors = []

    def on_console(message):
        if message.type == "error":
            errors.append(f"browser console error: {message.text[:300]}")

    page.on("pageerror", lambda error: errors.append(f"script error in the page: {error}"))
    page.on("console", on_console)
    return errors


def _wait(page, predicate: str, seconds: float, what: str) -> None:
    """Wait until predicate is true in the page, or raise NotebookNotReady naming what and any dialog."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(predicate, timeout=seconds * 1000, polling=250)
    except PlaywrightTimeout:
        dialog = page.evaluate(_DIALOG_TEXT)
        detail = f"; a dialog is open: {dialog!r}" if dialog else ""
        raise NotebookNotReady(f"{what} did not happen within {seconds} s{detail}") from None


def open_notebook(page, url: str) -> None:
    """Open the notebook at url, give it the whole window, and wait for its kernel to be idle."""
    page.goto(url, wait_until="domcontentloaded", timeout=OPEN_SECONDS * 1000)
    _wait(page, "() => Boolean(window.jupyterapp)", OPEN_SECONDS, "JupyterLab loading")
    page.evaluate(_HIDE_SIDEBARS_WHEN_RESTORED)
    _wait(page, _KERNEL_IDLE, OPEN_SECONDS, "the kernel starting")


def run_all_cells(page) -> None:
    """Run every cell with JupyterLab's Run All and wait until the kernel and the widgets are idle."""
    page.evaluate(_START_RUN_ALL)
    _wait(page, _RUN_ALL_FINISHED, RUN_ALL_SECONDS, "Run All finishing")
    wait_until_settled(page)


def wait_until_settled(page) -> None:
    """Wait until the kernel is idle, then (at most SETTLE_SECONDS) until widgets and images have loaded.

    A widget still loading after that is not an error here: output_problems reports it.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    _wait(page, _KERNEL_IDLE, RUN_ALL_SECONDS, "the kernel becoming idle")
    try:
        page.wait_for_function(_SETTLED, timeout=SETTLE_SECONDS * 1000, polling=250)
    except PlaywrightTimeout:
        pass


def output_problems(page, widget_class_names: list[str]) -> list[str]:
    """Everything a student would see go wrong: errors, stderr, broken widgets, plots not shown as images."""
    return page.evaluate(_OUTPUT_PROBLEMS, widget_class_names)


def has_main_control(page) -> bool:
    """Whether the notebook displays a main control (a Button with class s09-main-control)."""
    return page.locator(MAIN_CONTROL).count() > 0


def click_main_control(page, seconds: float = CLICK_SECONDS) -> tuple[str, str]:
    """Click the first main control; return the result widget's text before and after it changed.

    Raises AssertionError when there is no result widget, the button cannot be clicked within
    CLICK_SECONDS, or the result's text does not change within seconds (shorter only where
    nothing can change it: the self-test's button that does nothing).
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    result = page.locator(RESULT).first
    if result.count() == 0:
        raise AssertionError(f"the notebook has a {MAIN_CONTROL} but no {RESULT} widget")
    before = result.inner_text()
    try:
        page.locator(MAIN_CONTROL).first.click(timeout=CLICK_SECONDS * 1000)
    except PlaywrightTimeout:
        raise AssertionError(f"{MAIN_CONTROL} could not be clicked within {CLICK_SECONDS} s "
                             "(hidden, covered or disabled)") from None
    try:
        expect(result).not_to_have_text(before, timeout=seconds * 1000, use_inner_text=True)
    except AssertionError:
        raise AssertionError(f"clicking {MAIN_CONTROL} did not change {RESULT} within {seconds} s "
                             f"(still {before!r})") from None
    return before, result.inner_text()


def screenshot_whole_notebook(page, path: Path) -> None:
    """Save one PNG of the whole notebook: the window is made tall enough that nothing scrolls."""
    height = min(int(page.evaluate(_SCROLL_TO_TOP)), MAX_SCREENSHOT_HEIGHT)
    page.set_viewport_size({"width": page.viewport_size["width"], "height": max(height, 600)})
    page.wait_for_timeout(300)  # let JupyterLab lay the panel out at the new size
    page.evaluate(_SCROLL_TO_TOP)
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
