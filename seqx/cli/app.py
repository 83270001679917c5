"""The Typer app: every command named in one explicit line of COMMANDS, and `main()`.

`main()` runs the app and turns user-facing errors into one red line and an exit code
(2 for a bad recipe or setting, 1 for other bad input). A new command is a function in
its own `cmd_*.py` (which imports what it shares from `seqx.cli.common`) and one line in
COMMANDS below. `main()` imports only the module of the command it runs.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING

from seqx.errors import SeqxError

if TYPE_CHECKING:
    import typer

HELP = ("Spoken commands to text, intents and slots, offline, trained on speech it makes itself: data, featurize, "
        "tokenize, train, transcribe, evaluate, listen, export, serve.")
# command -> (module, function), in the order `seqx --help` lists them. A module is imported only
# when its command runs (or for --help): the recipe schema, rich tables and torch are then paid
# only by the commands that use them (`seqx transcribe --help`: 0.41 -> 0.25 s of CPU, shared machine).
COMMANDS = {
    "data": ("cmd_data", "data"),
    "featurize": ("cmd_featurize", "featurize"),
    "tokenize": ("cmd_tokenize", "tokenize"),
    "train": ("cmd_train", "train"),
    "transcribe": ("cmd_decode", "transcribe"),
    "evaluate": ("cmd_decode", "evaluate"),
    "plot": ("cmd_plot", "plot"),
    "grammar": ("cmd_grammar", "grammar"),
    "listen": ("cmd_listen", "listen"),
    "export": ("cmd_export", "export"),
    "serve": ("cmd_serve", "serve"),
}
# every command module, for callers that once had to import them to register the commands
COMMAND_MODULES = list(dict.fromkeys(module for module, _ in COMMANDS.values()))


def build_app(only: str | None = None) -> typer.Typer:
    """The Typer app with every command, or with command `only` alone (what `main()` runs: it
    imports one command module). A group callback keeps the command's name on the command line
    even when it is the only one registered."""
    import typer

    app = typer.Typer(
        name="seqx", help=HELP, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False
    )

    def root(  # the group: without it a lone registered command would lose its name
        version: bool = typer.Option(
            False, "--version", callback=_version, is_eager=True, help="Print the versions and exit."
        ),
    ) -> None:
        pass

    app.callback()(root)
    for name, (module, function) in COMMANDS.items():
        if only is None or name == only:
            app.command(name)(getattr(importlib.import_module(f"seqx.cli.{module}"), function))
    return app


def _version(value: bool) -> None:
    """`seqx --version`: seqx's and the versions a bug report needs (torch, onnxruntime, the embedding's)."""
    if not value:
        return
    from importlib.metadata import PackageNotFoundError, version

    import typer

    from seqx import __version__

    found = []
    for package in ("torch", "torchaudio", "onnxruntime", "openwakeword", "sentencepiece"):
        try:
            found.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            found.append(f"{package} not installed")
    print(f"seqx {__version__} (python {sys.version.split()[0]}; {', '.join(found)})")
    raise typer.Exit()


def __getattr__(name: str) -> object:
    """`from seqx.cli.app import app` (tests, tools): the full app, built on first use."""
    if name == "app":
        globals()["app"] = built = build_app()
        return built
    if name in ("JsonOpt", "RecipeArg", "RichReporter", "SetOpt", "console", "fail", "load_for_this_machine", "out",
                "print_error"):  # fmt: skip
        return getattr(importlib.import_module("seqx.cli.common"), name)  # once re-exported from here
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _command(argv: list[str]) -> str | None:
    """The command the arguments name (the first that is not an option), if it is one of ours."""
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    return first if first in COMMANDS else None


def main() -> None:
    try:
        _main()
    except SystemExit as done:
        _end_distributed(done.code)
        raise
    _end_distributed(0)


def _end_distributed(code: int | str | None) -> None:
    """A torchrun worker that joined a process group ends without the interpreter's teardown
    (seqx.train.distributed.end_process says why); any other run exits as usual."""
    distributed = sys.modules.get("seqx.train.distributed")
    if distributed is not None and distributed.joined():
        distributed.end_process(code)


def _main() -> None:
    fast = _exported_transcribe(sys.argv[1:])
    if fast is not None:
        sys.exit(fast)
    import typer

    from seqx.cli.common import console, print_error

    try:
        code = build_app(only=_command(sys.argv[1:]))(standalone_mode=False)
    except (ValueError, SeqxError) as err:  # a RecipeError (a ValueError) exits 2, other SeqxErrors 1
        recipe_error = _is_recipe_error(err)
        if not recipe_error and not isinstance(err, SeqxError):
            raise
        print_error(str(err))
        sys.exit(2 if recipe_error else 1)
    except ModuleNotFoundError as err:
        if (err.name or "").partition(".")[0] not in TRAIN_MODULES:
            raise
        print_error(_needs_train(err.name or "", _command(sys.argv[1:])))
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
        from seqx.stage import disk_full, is_disk_full

        if is_disk_full(err):  # a write outside atomic_write (a log line): still one line, not a traceback
            print_error(str(disk_full(getattr(err, "filename", None) or "a file")))
            sys.exit(1)
        if _is_usage_error(err):
            err.show()  # type: ignore[attr-defined]
            sys.exit(err.exit_code)  # type: ignore[attr-defined]
        raise
    # without standalone mode click does not raise a command's `typer.Exit(1)`: it returns the code
    if isinstance(code, int) and code:
        sys.exit(code)


# what `pip install seqx[train]` adds to the core (pyproject.toml): the core runs exported models only
TRAIN_MODULES = {"torch", "torchaudio", "librosa", "safetensors", "jiwer", "tensorboard", "matplotlib", "openwakeword"}


def _needs_train(module: str, command: str | None) -> str:
    what = f"seqx {command}" if command else "this command"
    return (f"{what} needs {module}, which is not installed: pip install 'seqx[train]' "
            f"(an exported model runs without it: seqx transcribe --model EXPORTED_FOLDER, docs/export.md)")


def _exported_transcribe(argv: list[str]) -> int | None:
    """`seqx transcribe --model EXPORTED FILE [--beam N | --greedy]` (one file: the latency case) run as
    `python -m seqx.runtime` does, without building the Typer app: Typer 0.29 validates every option
    through pydantic, and with rich that is 0.15 s of CPU, 40 % of the first result
    (docs/benchmarks.md). The output is the same (tests/test_runtime.py compares the two). Anything
    else (another option, several files, a folder, stdin, a torch bundle, --help) returns None and
    goes to the Typer app, which owns the command's options."""
    if not argv or argv[0] != "transcribe":
        return None
    model, files, runtime_args = None, [], []
    args = iter(argv[1:])
    for arg in args:
        name, eq, value = arg.partition("=")
        if name in ("--model", "-m", "--beam", "-b"):
            value = value if eq else next(args, "")
            if name in ("--model", "-m"):
                model = value
            elif value.isdigit() and 1 <= int(value) <= 256:  # the command's BeamOpt range
                runtime_args += ["--beam", value]
            else:
                return None
        elif arg == "--greedy":
            runtime_args.append("--greedy")
        elif arg.startswith("-") or not os.path.isfile(arg):
            return None
        else:
            files.append(arg)
    if model is None or len(files) != 1:
        return None
    from seqx.runtime.model import is_exported

    if not is_exported(model):
        return None
    from seqx.runtime.__main__ import main as run

    return run([model, *files, *runtime_args])


def _is_recipe_error(err: Exception) -> bool:
    """A bad recipe or setting (exit 2). Without the recipe module imported none can have been
    raised, and importing it here would cost the start-up that lazy commands save."""
    recipe = sys.modules.get("seqx.recipe")
    return recipe is not None and isinstance(err, recipe.RecipeError)


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
