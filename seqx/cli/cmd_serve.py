"""`seqx serve`: a trained model as a Wyoming speech-to-text service, for Home Assistant and Rhasspy 3."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from seqx.cli.common import SetOpt, console, out, print_warning
from seqx.serve.server import DEFAULT_URI


def serve(
    model: Annotated[
        Optional[Path], typer.Option("--model", "-m", help="Model bundle or export folder (default: the recipe's trained one).")
    ] = None,
    uri: Annotated[
        str, typer.Option("--uri", help="Where to listen: tcp://HOST:PORT (0.0.0.0 for other machines), unix://PATH or stdio://.")
    ] = DEFAULT_URI,
    recipe: Annotated[Optional[Path], typer.Option("--recipe", help="Recipe whose trained model to serve.")] = None,
    grammar: Annotated[
        Optional[str],
        typer.Option("--grammar", help="Restrict decoding to a grammar file, `recipe` (the model's) or `none`."),
    ] = None,
    max_seconds: Annotated[
        float, typer.Option("--max-seconds", min=1.0, max=300.0, help="Longest utterance taken; longer is not understood.")
    ] = 30.0,
    overrides: SetOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Each transcript sent, as one JSON object per line on stdout.")] = False,
) -> None:
    """Serve a trained model over the Wyoming protocol (Home Assistant: Settings > Devices > Add
    integration > Wyoming Protocol, this machine's address and port): each utterance sent is
    answered with its command's text, or the empty text when it is not understood; with a grammar,
    a command's text sent to it (Home Assistant's conversation agent) with its intent and slots."""
    from seqx import __version__
    from seqx.cli.cmd_listen import _recipe, wave_decoder
    from seqx.serve.intents import command_reader
    from seqx.serve.server import bound_uri, open_server, serve_stdio
    from seqx.serve.service import Service

    settings = _recipe(recipe, overrides)
    decode = wave_decoder(model, settings, grammar, overrides)
    folder = model or settings.bundle_dir
    service = Service(name=folder.resolve().name, decode=decode, max_seconds=max_seconds, version=__version__,
                      understand=command_reader(folder, grammar))

    def said(answer: dict[str, Any]) -> None:
        if json_out:
            out.file.write(json.dumps(answer) + "\n")
            out.file.flush()
        elif answer["understood"]:
            from seqx.decode.result import command_text

            command = f"  {command_text(answer['intent'], answer.get('slots') or {})}" if answer.get("intent") else ""
            console.print(f"{answer['text']}{command}", highlight=False, markup=False)
        else:
            console.print(f"not understood ({answer.get('reason') or 'rejected'})", style="dim", highlight=False)

    server = open_server(uri, service, on_result=said, on_problem=print_warning)
    if server is None:  # stdio://: stdout carries the protocol, so nothing else may go there
        json_out = False
        serve_stdio(service, on_result=said, on_problem=print_warning)
        return
    reads = ", and commands' text to intents" if service.understand else ""
    console.print(f"serving {service.name} at {bound_uri(server, uri)} (Wyoming: speech to text{reads}; Ctrl-C stops)",
                  highlight=False)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        console.print("stopped", highlight=False)
    finally:
        server.server_close()
