"""Screenshots of our scores in Phoenix's and MLflow's own UIs, for docs/images (run in .venv-sinks):

    python -m tests.integration.sinks.screenshots docs/images

Starts ``phoenix serve`` and ``mlflow server`` as the round-trip tests do, sends the demo's runs through a
collector with each sink (the judge on a local stub), and shoots the tools' pages with headless Chromium:
``phoenix-annotations.png`` (a run's trace with its span annotations) and ``mlflow-assessments.png`` (a trace
with its assessments)."""

from __future__ import annotations

import argparse
import base64
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from agentotel_eval.collector.config_sinks import SinkConfig
from tests.browser.conftest import start_chromium
from tests.integration.sinks.scenario import scored_runs
from tests.support.sink_servers import running_mlflow, running_phoenix

WIDTH, HEIGHT = 1600, 1000


def _driver(profile: str) -> Any:
    return start_chromium(
        profile, "--hide-scrollbars", "--force-color-profile=srgb", f"--window-size={WIDTH},{HEIGHT}"
    )


def _shoot(driver: Any, url: str, out: Path, text: str, click: str | None = None, wait: float = 60.0) -> None:
    """Open ``url``, wait until the page shows ``text`` (the tool's app renders in the browser), click the
    element whose text is ``click`` if given, and save the window."""
    from selenium.webdriver.common.by import By

    driver.get(url)
    deadline = time.monotonic() + wait
    while text not in driver.find_element(By.TAG_NAME, "body").text:
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} never showed {text!r}")
        time.sleep(0.5)
    if click:
        for element in driver.find_elements(By.XPATH, f"//*[normalize-space(text())={click!r}]"):
            if element.is_displayed():
                driver.execute_script("arguments[0].click();", element)
                break
        time.sleep(3)
    time.sleep(2)
    driver.save_screenshot(str(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="agentotel-sink-shots-"))
    driver = _driver(str(work / "profile"))
    try:
        (work / "phoenix").mkdir()
        with (
            running_phoenix(work / "phoenix") as phoenix,
            scored_runs(work, SinkConfig(kind="phoenix", url=phoenix.url)) as (collector, _expected),
        ):
            trace = collector.query(
                "SELECT trace_id FROM agent_runs WHERE agent_name = 'weather_assistant' "
                "ORDER BY start_time DESC LIMIT 1"
            )["rows"][0][0]
            project = base64.b64encode(b"Project:1").decode()
            _shoot(
                driver,
                f"{phoenix.url}/projects/{project}/traces/{trace}",
                args.out / "phoenix-annotations.png",
                "weather_assistant",
                click="Annotations",
            )
        (work / "mlflow").mkdir()
        with (
            running_mlflow(work / "mlflow") as mlflow,
            scored_runs(work / "mlflow", SinkConfig(kind="mlflow", url=mlflow.url, experiment="agents")) as (
                collector,
                _expected,
            ),
        ):
            from mlflow import MlflowClient

            experiment = MlflowClient(tracking_uri=mlflow.url).get_experiment_by_name("agents").experiment_id
            trace = collector.query(
                "SELECT trace_id FROM agent_runs WHERE agent_name = 'weather_assistant' "
                "ORDER BY start_time DESC LIMIT 1"
            )["rows"][0][0]
            _shoot(
                driver,
                f"{mlflow.url}/#/experiments/{experiment}/traces?selectedEvaluationId=tr-{trace}",
                args.out / "mlflow-assessments.png",
                "weather_assistant",
                click="Assess",
            )
    finally:
        driver.quit()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
