"""The GitHub Actions workflow in docs/ci.md, its shell steps run the way GitHub runs them.

The ```yaml block is parsed, and each job's ``run:`` steps are written to a script and run, in order, under
the shell GitHub would use for them (``bash -e {0}`` by default, ``bash --noprofile --norc -eo pipefail {0}``
for ``shell: bash``), with the workflow's, job's and step's ``env``, a ``GITHUB_STEP_SUMMARY`` file and the
workspace as the working directory. A failed step skips the ones after it unless they say ``if: always()``.

``pip``, ``git`` and ``pytest`` are fakes on PATH that record their arguments (pytest writes the results files
a test chooses); ``agentotel-eval compare`` is the real command on those files. The dataset job, which needs
the production database, gets a fake ``agentotel-eval`` that only checks its arguments with
the CLI's own parser.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement

from agentotel_eval.cli import parse

REPO = Path(__file__).resolve().parents[2]
CI_MD = REPO / "docs" / "ci.md"
AGENTOTEL_EVAL = Path(sys.executable).parent / "agentotel-eval"

# GitHub's shells for a ``run:`` step on Linux (docs: "Workflow syntax", jobs.<job_id>.steps[*].shell)
SHELLS = {
    None: "bash -e {0}",
    "bash": "bash --noprofile --norc -eo pipefail {0}",
    "sh": "sh -e {0}",
}
EXPRESSIONS = {"github.base_ref": "main", "github.event_name": "pull_request"}


def workflow() -> dict[str, Any]:
    blocks = re.findall(r"^```yaml\n(# \.github/workflows/.*?)^```$", CI_MD.read_text(), re.M | re.S)
    assert len(blocks) == 1, "docs/ci.md should hold one workflow"
    return yaml.safe_load(blocks[0])


def expand(text: str) -> str:
    """``${{ expr }}`` replaced as GitHub would for the few expressions the workflow may use."""

    def value(match: re.Match[str]) -> str:
        expr = match.group(1).strip()
        assert expr in EXPRESSIONS, f"the test does not know the expression {expr!r}"
        return EXPRESSIONS[expr]

    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def shell_argv(shell: str | None, script: Path) -> list[str]:
    template = SHELLS.get(shell) or (shell if shell and "{0}" in shell else None)
    assert template is not None, f"unknown shell {shell!r}"
    return [str(script) if word == "{0}" else word for word in shlex.split(template)]


@dataclass
class StepRun:
    name: str
    shell: list[str]
    returncode: int
    output: str
    summary: str


def run_job(
    flow: dict[str, Any], job_id: str, workspace: Path, path: list[Path], env: dict[str, str] | None = None
) -> list[StepRun]:
    """Run the job's ``run:`` steps as a runner would; the steps that ran, in order."""
    job = flow["jobs"][job_id]
    defaults = {**(flow.get("defaults") or {}).get("run", {}), **(job.get("defaults") or {}).get("run", {})}
    base_env = {
        "PATH": os.pathsep.join([*map(str, path), "/usr/bin", "/bin"]),
        "HOME": str(workspace.parent),
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(workspace),
        **{k: expand(str(v)) for k, v in (flow.get("env") or {}).items()},
        **{k: expand(str(v)) for k, v in (job.get("env") or {}).items()},
        **(env or {}),
    }
    ran: list[StepRun] = []
    failed = False
    for index, step in enumerate(job["steps"]):
        if "run" not in step or (failed and "always()" not in str(step.get("if", ""))):
            continue
        script = workspace.parent / f"step-{job_id}-{index}.sh"
        script.write_text(expand(step["run"]))
        summary = workspace.parent / f"summary-{job_id}-{index}.md"
        summary.touch()
        argv = shell_argv(step.get("shell", defaults.get("shell")), script)
        step_env = base_env | {k: expand(str(v)) for k, v in (step.get("env") or {}).items()}
        step_env["GITHUB_STEP_SUMMARY"] = str(summary)
        cwd = workspace / step.get("working-directory", defaults.get("working-directory", "."))
        proc = subprocess.run(argv, cwd=cwd, env=step_env, capture_output=True, text=True, timeout=60)
        ran.append(
            StepRun(
                step.get("name", step["run"].splitlines()[0]),
                argv,
                proc.returncode,
                proc.stdout + proc.stderr,
                summary.read_text(),
            )
        )
        failed = failed or proc.returncode != 0
    return ran


# --- fakes ------------------------------------------------------------------------------------------------

RECORDER = """\
#!{python}
import json, os, sys
with open(os.environ["FAKE_LOG"], "a") as log:
    record = {"argv": [os.path.basename(sys.argv[0]), *sys.argv[1:]], "cwd": os.getcwd()}
    log.write(json.dumps(record) + "\\n")
"""

FAKE_GIT = (
    RECORDER
    + """\
if sys.argv[1:3] == ["worktree", "add"]:
    os.makedirs(sys.argv[3])
"""
)

# pytest writes the results file its working directory stands for: the base branch's worktree or the PR's
FAKE_PYTEST = (
    RECORDER
    + """\
import shutil
args = sys.argv[1:]
where = "BASE" if os.path.basename(os.getcwd()) == "base" else "PR"
source = os.environ.get(f"FAKE_{where}_RESULTS")
if "--agentotel-results" in args and source:
    shutil.copy(source, args[args.index("--agentotel-results") + 1])
for arg in args:
    if arg.startswith("--junitxml="):
        open(arg.split("=", 1)[1], "w").write("<testsuites/>")
failed = source is None or any(not json.loads(line)["success"] for line in open(source))
sys.exit(1 if failed else 0)
"""
)

# agentotel-eval where the real command cannot run (no production database): the CLI's parser checks the call
FAKE_AGENTOTEL_EVAL = (
    RECORDER
    + """\
from agentotel_eval.cli import parse
parse(sys.argv[1:])
sys.exit(int(os.environ.get("FAKE_AGENTOTEL_EVAL_EXIT", "0")))
"""
)


@dataclass
class Runner:
    root: Path
    workspace: Path
    path: list[Path]
    log: Path

    def calls(self, program: str) -> list[dict[str, Any]]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [call for call in map(json.loads, lines) if call["argv"][0] == program]

    def results(self, name: str, passed: list[bool]) -> Path:
        """A ``pytest --agentotel-results`` file: one tool-correctness assertion per test."""
        path = self.root / name
        path.write_text(
            "".join(
                json.dumps(
                    {
                        "test": f"tests/agents/test_trips.py::test_trip[{i}]",
                        "trace_id": f"{i:032x}",
                        "span_id": f"{i:016x}",
                        "agent": "travel_agent",
                        "metric": "tool_correctness_ordering",
                        "score": 1.0 if ok else 0.5,
                        "success": ok,
                        "tools_called": ["search_hotels", "book_hotel"],
                        "reason": "r",
                    }
                )
                + "\n"
                for i, ok in enumerate(passed)
            )
        )
        return path

    def run(self, job_id: str, **env: str) -> list[StepRun]:
        return run_job(workflow(), job_id, self.workspace, self.path, {"FAKE_LOG": str(self.log), **env})


def _install(directory: Path, name: str, text: str) -> None:
    script = directory / name
    script.write_text(text.replace("{python}", sys.executable, 1))
    script.chmod(0o755)


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    fakes, real = tmp_path / "fakebin", tmp_path / "realbin"
    fakes.mkdir()
    real.mkdir()
    _install(fakes, "pip", RECORDER)
    _install(fakes, "git", FAKE_GIT)
    _install(fakes, "pytest", FAKE_PYTEST)
    (real / "agentotel-eval").symlink_to(AGENTOTEL_EVAL)
    workspace = tmp_path / "work" / "repo"  # ../base and ../main-results.jsonl stay under tmp_path
    workspace.mkdir(parents=True)
    return Runner(tmp_path, workspace, [fakes, real], tmp_path / "calls.jsonl")


def _by_name(ran: list[StepRun]) -> dict[str, StepRun]:
    return {step.name: step for step in ran}


GATE = "gate on the change in pass rates"


# --- the pull request's gate ------------------------------------------------------------------------------


def test_a_fallen_pass_rate_fails_the_gate_and_the_summary_says_why(runner):
    base = runner.results("base.jsonl", [True, True, True, True])
    pr = runner.results("pr.jsonl", [True, True, False, False])
    ran = runner.run("tool-use", FAKE_BASE_RESULTS=str(base), FAKE_PR_RESULTS=str(pr))
    assert [step.returncode for step in ran] == [0, 0, 0, 1], [(s.name, s.output) for s in ran]
    gate = ran[-1]
    assert gate.name == GATE
    assert gate.shell[:5] == ["bash", "--noprofile", "--norc", "-eo", "pipefail"]  # shell: bash, as declared
    assert (
        "REGRESSION" in gate.summary
        and "pass rate fell 50.0 percentage points (more than 5.0)" in gate.summary
    )
    assert "test_trip[2]" in gate.summary and "test_trip[3]" in gate.summary
    assert "REGRESSION" in gate.output  # and in the log


def test_an_unchanged_pass_rate_passes_the_gate(runner):
    results = runner.results("same.jsonl", [True, True, False])
    ran = runner.run("tool-use", FAKE_BASE_RESULTS=str(results), FAKE_PR_RESULTS=str(results))
    assert [step.returncode for step in ran] == [0, 0, 0, 0], [(s.name, s.output) for s in ran]
    gate = _by_name(ran)[GATE]
    assert "tool_correctness_ordering" in gate.summary and "+0.0 pts" in gate.summary
    assert "no input that passed in the baseline fails in the candidate" in gate.summary
    assert gate.summary.startswith("~~~\n") and gate.summary.endswith("~~~\n")  # a block in the summary


def test_missing_base_results_fail_the_gate(runner):
    """The base branch's tests wrote nothing (``|| true`` lets that step pass): compare exits 2,
    and so does the gate."""
    pr = runner.results("pr.jsonl", [True, True])
    ran = runner.run("tool-use", FAKE_PR_RESULTS=str(pr))
    assert [(step.name, step.returncode) for step in ran][-1] == (GATE, 2)
    assert "main-results.jsonl" in ran[-1].summary


def test_each_step_runs_what_the_job_needs(runner):
    base = runner.results("base.jsonl", [True, True])
    ran = runner.run("tool-use", FAKE_BASE_RESULTS=str(base), FAKE_PR_RESULTS=str(base))
    assert all(step.returncode == 0 for step in ran), [(s.name, s.output) for s in ran]
    installs = [call["argv"][1:] for call in runner.calls("pip")]
    requirement = Requirement(installs[0][-1])
    # a direct reference pip can resolve, not a bare name no index serves
    assert (
        requirement.name == "agentotel-eval"
        and requirement.url
        and requirement.url.startswith("git+https://")
    )
    assert installs[0][:2] == ["install", "-e"]
    assert [call["argv"][1:] for call in runner.calls("git")] == [
        ["worktree", "add", "../base", "origin/main"]
    ]
    base_run, pr_run = runner.calls("pytest")
    assert Path(base_run["cwd"]).name == "base" and Path(pr_run["cwd"]) == runner.workspace
    assert (runner.workspace.parent / "main-results.jsonl").exists()  # where the gate reads the baseline
    assert (runner.workspace / "pr-results.jsonl").exists() and (
        runner.workspace / "pytest-junit.xml"
    ).exists()


def test_a_pipe_into_tee_under_the_default_shell_would_never_fail(runner):
    """Why the workflow sets ``shell: bash``: the harness runs a step as GitHub does, and under GitHub's
    default ``bash -e`` the old gate (``compare ... | tee``) passed with ``compare`` exiting 1."""
    old_gate = {
        "name": "old gate",
        "run": "agentotel-eval compare --baseline ../b.jsonl --candidate pr.jsonl "
        '--fail-on-regression 0.05 | tee -a "$GITHUB_STEP_SUMMARY"',
    }
    runner.results("work/b.jsonl", [True, True])
    (runner.workspace / "pr.jsonl").write_text(runner.results("pr.jsonl", [False, False]).read_text())
    for shell, status in ((None, 0), ("bash", 1)):
        flow = {"jobs": {"j": {"steps": [{**old_gate, **({"shell": shell} if shell else {})}]}}}
        (step,) = run_job(flow, "j", runner.workspace, runner.path)
        assert step.returncode == status, (shell, step.output)
        assert "REGRESSION" in step.summary


# --- the weekly dataset job ---------------------------------------------------------------------------------


@pytest.fixture
def dataset_runner(runner: Runner) -> Runner:
    fake = runner.root / "fake-agentotel-eval"
    fake.mkdir()
    _install(fake, "agentotel-eval", FAKE_AGENTOTEL_EVAL)
    runner.path = [runner.path[0], fake]
    return runner


def test_the_dataset_job_runs_real_commands(dataset_runner):
    ran = dataset_runner.run("dataset", PYTHONPATH=str(REPO))
    assert [step.returncode for step in ran] == [0], [(s.name, s.output) for s in ran]
    commands = [call["argv"][1] for call in dataset_runner.calls("agentotel-eval")]
    assert commands == ["rescore", "export-cases"]


def test_a_failed_rescore_fails_the_dataset_job(dataset_runner):
    ran = dataset_runner.run("dataset", PYTHONPATH=str(REPO), FAKE_AGENTOTEL_EVAL_EXIT="1")
    assert [step.returncode for step in ran] == [1]
    assert [call["argv"][1] for call in dataset_runner.calls("agentotel-eval")] == ["rescore"]


# --- the other commands on the page ------------------------------------------------------------------------


def _shell_commands() -> list[list[str]]:
    """The ``agentotel-eval`` command lines of docs/ci.md's bash blocks, split as a shell would."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```$", CI_MD.read_text(), re.M | re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "agentotel-eval":
                commands.append(words[1:])
    return commands


@pytest.mark.parametrize("argv", _shell_commands(), ids=lambda argv: " ".join(argv)[:60])
def test_the_pages_commands_are_commands_of_the_cli(argv):
    parse(argv)  # argparse exits 2 on an unknown command or flag
