"""The Typer app: every command registered in one explicit line, and `main()`.

`main()` runs the app and turns user-facing errors into one red line and an exit code
(2 for a bad recipe or setting, 1 for other bad input). A new command is a function in
its own `cmd_*.py` (which imports what it shares from `seqx.cli.common`) and one
`app.command()(...)` line below.
"""

from __future__ import annotations

import sys

import typer

from seqx.cli import cmd_data, cmd_decode, cmd_export, cmd_featurize, cmd_grammar, cmd_listen, cmd_plot, cmd_tokenize, cmd_train
from seqx.cli.common import (  # noqa: F401 (re-exported: what commands used to import from here)
    JsonOpt,
    RecipeArg,
    RichReporter,
    SetOpt,
    console,
    fail,
    load_for_this_machine,
    out,
    print_error,
)
from seqx.errors import SeqxError
from seqx.recipe import RecipeError

app = typer.Typer(
    name="seqx",
    help="Speech to text with a Transformer encoder-decoder: data, featurize, tokenize, train, transcribe, evaluate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command()(cmd_data.data)
app.command()(cmd_featurize.featurize)
app.command()(cmd_tokenize.tokenize)
app.command()(cmd_train.train)
app.command()(cmd_decode.transcribe)
app.command()(cmd_decode.evaluate)
app.command()(cmd_plot.plot)
app.command()(cmd_grammar.grammar)
app.command()(cmd_listen.listen)
app.command()(cmd_export.export)

# every command module, for callers that once had to import them to register the commands
COMMAND_MODULES = ["cmd_data", "cmd_featurize", "cmd_tokenize", "cmd_train", "cmd_decode", "cmd_plot", "cmd_grammar", "cmd_listen", "cmd_export"]


def main() -> None:
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
