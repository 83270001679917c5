"""What every command shares: the rich consoles, the progress reporter, option types, errors.

Command modules (`seqx/cli/cmd_*.py`) import from here, never from `app.py`, so that
`app.py` can import them and register each command in one explicit line.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

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

from seqx.device import device_kind

if TYPE_CHECKING:  # the recipe schema is imported when a command loads a recipe, not at start-up
    from seqx.recipe import Recipe

console = Console(stderr=True)  # progress and tables on stderr; stdout stays for results
out = Console()  # results: transcripts, JSON

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
        print_warning(message)

    def info(self, message: str) -> None:
        console.print(message, highlight=False)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def load_for_this_machine(path: Path, overrides: list[str] | None, device: str | None = None) -> Recipe:
    """The recipe with the device profile `seqx train` would use here, so every stage sees the same settings."""
    from seqx.recipe import load_recipe

    return load_recipe(path, overrides).for_device(device_kind(device))


def print_warning(message: str) -> None:
    """One yellow line on stderr, escaped as `print_error`'s."""
    console.print(f"[yellow]warning:[/] {escape(message)}", highlight=False)


def print_error(message: str) -> None:
    """One red line. The message is escaped: a path or key like `take[1].wav` is text, not rich markup."""
    console.print(f"[bold red]error:[/] {escape(message)}", highlight=False)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print one red line and give the exit to raise."""
    print_error(message)
    return typer.Exit(code)
