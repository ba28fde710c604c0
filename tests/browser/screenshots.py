"""Screenshots of the web UI for docs/images, from a running collector:

    python -m tests.browser.screenshots http://127.0.0.1:4318 docs/images [--run /runs/<trace>/<span>]
        [--widths 800,1400]

The overview and runs pages (and the run page, with ``--run``) are shot at each width (``overview-800.png``,
``overview-1400.png``, ...; at the widest also as ``overview.png`` and ``run.png``, the README's images), each
as tall as its content (at most 2400 px)."""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from tests.browser.conftest import start_chromium


def shoot(base: str, out: Path, run: str | None, since: str, widths: tuple[int, ...] = (1400,)) -> list[Path]:
    profile = tempfile.mkdtemp(prefix="agentotel-shots-")
    driver = start_chromium(profile, "--hide-scrollbars", "--force-color-profile=srgb")
    pages = [("overview", f"/?since={since}"), ("runs", f"/runs?since={since}")]
    if run:
        pages.append(("run", run))
    written = []
    try:
        for name, path in pages:
            for width in widths:
                driver.set_window_size(width, 900)
                driver.get(base.rstrip("/") + path)
                time.sleep(0.5)
                height = min(int(driver.execute_script("return document.documentElement.scrollHeight")), 2400)
                driver.set_window_size(width, height)
                time.sleep(0.3)
                names = [f"{name}-{width}.png"] + (
                    [f"{name}.png"] if width == widths[-1] and name != "runs" else []
                )
                for file_name in names:
                    target = out / file_name
                    driver.save_screenshot(str(target))
                    written.append(target)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("base")
    parser.add_argument("out", type=Path)
    parser.add_argument("--run", help="the run page's path")
    parser.add_argument("--since", default="7d")
    parser.add_argument("--widths", default="800,1400", help="window widths in pixels, comma-separated")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    widths = tuple(int(w) for w in args.widths.split(","))
    for path in shoot(args.base, args.out, args.run, args.since, widths):
        print(path)


if __name__ == "__main__":
    main()
