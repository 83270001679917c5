"""`seqx data` from the command line: the summary table, the cache message, --json."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from conftest import ESPEAK_ONLY, REPO
from typer.testing import CliRunner

from seqx.cli.app import COMMAND_MODULES, app

for _name in COMMAND_MODULES:  # as main() does: register every command
    importlib.import_module(f"seqx.cli.{_name}")

# oog_share 0: the counts below are of the commands alone; espeak-ng alone, as piper loads a model
# per process (30 utterances of the four-engine default took 25-35 s under load, espeak-ng's 4 s)
SMALL = ["data.size=30", "data.synth.valid_voices=2", "data.synth.test_voices=2", "data.synth.empty_share=0",
         "data.synth.oog_share=0", *ESPEAK_ONLY]  # fmt: skip


def _args(tmp_path: Path, *extra: str) -> list[str]:
    sets = [f"exp_dir={tmp_path}", *SMALL]
    return ["data", str(REPO / "recipes/commands.yaml"), *[arg for s in sets for arg in ("--set", s)], *extra]


def test_cli_prints_the_summary_table_then_nothing_to_do(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, _args(tmp_path))
    assert result.exit_code == 0, result.output
    table = result.output
    for word in ("split", "utterances", "hours", "speakers", "train", "valid", "test"):
        assert word in table
    train_row = next(line for line in table.splitlines() if "train" in line and "│" in line)
    assert train_row.split("│")[2].strip() == "25"  # 30 utterances: 25 train, 2 valid, 3 test
    again = CliRunner().invoke(app, _args(tmp_path))
    assert again.exit_code == 0 and "nothing to do" in again.output


def test_cli_json_report(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, _args(tmp_path, "--json"))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["counts"] == {"train": 25, "valid": 2, "test": 3} and report["fresh"] is False
    assert report["skipped"] == [] and report["hours"]["train"] > 0


def test_cli_names_a_bad_setting(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, _args(tmp_path, "--set", "data.sizee=3"))
    assert result.exit_code != 0
    assert "data.sizee" in str(result.exception) + result.output


def test_out_of_range_option_is_one_usage_line_not_a_traceback() -> None:
    """What `seqx` (main(), standalone_mode=False) does with a value the option's range refuses."""
    import subprocess
    import sys

    for bad in (["--beam", "0"], ["--max-ctc-gap", "-1"], ["--no-such-option"]):
        run = subprocess.run([sys.executable, "-m", "seqx", "transcribe", "x.wav", *bad],
                             capture_output=True, text=True, timeout=120, check=False)
        assert run.returncode == 2, run.stderr
        assert "Traceback" not in run.stderr and "Error:" in run.stderr


def test_version_names_seqx_and_what_a_bug_report_needs() -> None:
    import subprocess
    import sys

    from seqx import __version__

    run = subprocess.run([sys.executable, "-m", "seqx", "--version"], capture_output=True, text=True, timeout=120,
                         check=False)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"seqx {__version__} (python ") and "torch 2." in run.stdout
    assert "onnxruntime" in run.stdout and "openwakeword 0.5.1" in run.stdout
