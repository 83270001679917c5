"""The Typer app, its rich console and the reporter that draws progress bars.

Command modules (`seqx/cli/cmd_*.py`) register themselves on `app`; `main()`
imports them, runs the app and turns user-facing errors into one red line and
an exit code (2 for a bad recipe or setting, 1 for other bad input).
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Task as RichProgressTask
from rich.text import Text

from seqx.errors import SeqxError
from seqx.recipe import Recipe, RecipeError, load_recipe, local_device_kind

app = typer.Typer(
    name="seqx",
    help="Speech to text with a Transformer encoder-decoder: data, featurize, tokenize, train, transcribe, evaluate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(stderr=True)  # progress and tables on stderr; stdout stays for results
out = Console()  # results: transcripts, JSON

COMMAND_MODULES = ["cmd_data", "cmd_featurize", "cmd_tokenize", "cmd_train", "cmd_decode", "cmd_plot", "cmd_listen"]

RECIPE_HELP = "Recipe YAML file (default: recipes/commands.yaml)."
SET_HELP = "Override a recipe setting, KEY.PATH=VALUE (repeatable), e.g. --set model.d_model=192."

# The options every stage command shares, declared once.
RecipeArg = Annotated[Path, typer.Argument(help=RECIPE_HELP)]
SetOpt = Annotated[Optional[list[str]], typer.Option("--set", help=SET_HELP)]  # noqa: UP045 (Typer reads it)
ForceOpt = Annotated[bool, typer.Option("--force", help="Redo the stage even if its output is up to date.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]


class RateColumn(ProgressColumn):
    """Units per second, with the task's unit (utt/s, steps/s)."""

    def render(self, task: RichProgressTask) -> Text:
        speed = task.finished_speed or task.speed
        unit = task.fields.get("unit", "it")
        return Text("" if speed is None else f"{speed:,.1f} {unit}/s", style="cyan")


class _RichTask:
    def __init__(self, reporter: RichReporter, task_id: TaskID | None, description: str, total: float | None) -> None:
        self.reporter, self.task_id, self.description, self.total = reporter, task_id, description, total
        self.done = 0.0
        self.started = self.last_log = time.monotonic()

    def advance(self, n: float = 1, **fields: Any) -> None:
        self.done += n
        info = "  ".join(f"{k}={_fmt(v)}" for k, v in fields.items())
        if self.task_id is not None and self.reporter.progress is not None:
            self.reporter.progress.update(self.task_id, advance=n, info=info)
        elif time.monotonic() - self.last_log >= self.reporter.log_seconds:
            self.last_log = time.monotonic()
            rate = self.done / max(time.monotonic() - self.started, 1e-9)
            total = f"/{self.total:g}" if self.total else ""
            console.print(f"{self.description}: {self.done:g}{total} ({rate:.1f}/s) {info}", highlight=False)

    def close(self) -> None:
        if self.task_id is not None and self.reporter.progress is not None:
            self.reporter.progress.stop_task(self.task_id)
            self.reporter.progress.update(self.task_id, visible=True)


class RichReporter:
    """Progress bars with rate and ETA on a terminal; a plain line every few seconds otherwise."""

    def __init__(self, log_seconds: float = 10.0) -> None:
        self.log_seconds = log_seconds
        self.warnings: list[str] = []
        self.progress: Progress | None = None
        if console.is_terminal:
            self.progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                RateColumn(),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[info]}"),
                console=console,
                transient=False,
            )

    def __enter__(self) -> RichReporter:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def task(self, description: str, total: float | None, unit: str = "utt") -> _RichTask:
        task_id = None
        if self.progress is not None:
            task_id = self.progress.add_task(description, total=total, info="", unit=unit)
        return _RichTask(self, task_id, description, total)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        console.print(f"[yellow]warning:[/] {escape(message)}", highlight=False)

    def info(self, message: str) -> None:
        console.print(message, highlight=False)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def load_for_this_machine(path: Path, overrides: list[str] | None, device: str | None = None) -> Recipe:
    """The recipe with the device profile `seqx train` would use here, so every stage sees the same settings."""
    kind = "cuda" if device and device.startswith("cuda") else "cpu" if device == "cpu" else local_device_kind()
    return load_recipe(path, overrides).for_device(kind)


def print_error(message: str) -> None:
    """One red line. The message is escaped: a path or key like `take[1].wav` is text, not rich markup."""
    console.print(f"[bold red]error:[/] {escape(message)}", highlight=False)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print one red line and give the exit to raise."""
    print_error(message)
    return typer.Exit(code)


def main() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"seqx.cli.{name}")
    try:
        code = app(standalone_mode=False)
    except RecipeError as err:
        print_error(str(err))
        sys.exit(2)
    except SeqxError as err:
        print_error(str(err))
        sys.exit(1)
    except typer.Exit as err:
        sys.exit(err.exit_code)
    except typer.Abort:
        console.print("[red]aborted[/]")
        sys.exit(130)
    except KeyboardInterrupt:
        console.print("[red]interrupted[/]")
        sys.exit(130)
    except Exception as err:  # click usage errors arrive here with standalone_mode=False
        if _is_usage_error(err):
            err.show()  # type: ignore[attr-defined]
            sys.exit(err.exit_code)  # type: ignore[attr-defined]
        raise
    # without standalone mode click does not raise a command's `typer.Exit(1)`: it returns the code
    if isinstance(code, int) and code:
        sys.exit(code)


def _is_usage_error(err: Exception) -> bool:
    """A click error (bad option value, unknown option): shown as click shows it, exit code 2.

    Typer >= 0.2x ships its own copy of click (`typer._click`), whose exceptions are not
    click's; both kinds are recognised, so an out-of-range `--beam 0` is one line, not a traceback.
    """
    import click

    if isinstance(err, click.ClickException):
        return True
    bases = {cls.__module__ + "." + cls.__name__ for cls in type(err).__mro__}
    return "typer._click.exceptions.ClickException" in bases
