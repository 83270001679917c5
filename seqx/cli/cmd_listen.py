"""`seqx listen`: live commands from the microphone, stdin PCM or a file, one line (or JSON line) each."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import numpy as np
import typer

from seqx.cli.common import SetOpt, console, out, print_error, print_warning
from seqx.errors import SeqxError
from seqx.recipe import DEFAULT_RECIPE, ListenSettings, Recipe, load_recipe, recipe_from_dict

if TYPE_CHECKING:
    from seqx.listen.wake import Wake, WakeGate

InputOpt = Annotated[
    str,
    typer.Option("--input", "-i", help="mic (default microphone), - (raw s16le mono PCM on stdin) or an audio file."),
]


def _recipe(path: Path | None, overrides: list[str] | None) -> Recipe:
    """The recipe's listen: and actions: settings; all defaults when no recipe was named and none is here."""
    if path is None and not DEFAULT_RECIPE.is_file():
        if overrides:
            raise SeqxError("--set: no recipe here to override (pass --recipe FILE)")
        return recipe_from_dict({})
    return load_recipe(path or DEFAULT_RECIPE, overrides)


def listen(
    source_arg: Annotated[
        Optional[str], typer.Argument(metavar="INPUT", help="Same as --input: mic, - or a file.")
    ] = None,
    model: Annotated[
        Optional[Path], typer.Option("--model", "-m", help="Model bundle folder (default: the recipe's trained one).")
    ] = None,
    input_: InputOpt = "mic",
    rate: Annotated[
        int,
        typer.Option("--rate", min=8000, max=192000,
                     help="Sample rate of PCM on stdin, or to open the microphone at (one that refuses 16000 is "
                          "opened at its own rate); resampled to 16000."),
    ] = 16000,
    channels: Annotated[
        int, typer.Option("--channels", min=1, max=32, help="Channels of stdin PCM (arecord -c 2) or the mic; mixed.")
    ] = 1,
    realtime: Annotated[bool, typer.Option("--realtime", help="Play a file at the speed of a live input.")] = False,
    mic: Annotated[
        Optional[str], typer.Option("--mic", help="Input device name or number (default: the system's).")
    ] = None,
    recipe: Annotated[
        Optional[Path], typer.Option("--recipe", help="Recipe with listen: and actions: settings.")
    ] = None,
    grammar: Annotated[
        Optional[str],
        typer.Option("--grammar", help="Restrict decoding to a grammar file, `recipe` (the model's) or `none`."),
    ] = None,
    segments_only: Annotated[
        bool, typer.Option("--segments", help="Print the segments the endpointer finds; load no model, decode nothing.")
    ] = False,
    run: Annotated[
        bool, typer.Option("--run", help="Execute the recipe's matching actions (never without this).")
    ] = False,
    wake_word: Annotated[
        Optional[str],
        typer.Option("--wake-word", "-w",
                     help="Decode only what follows this word: alexa, 'hey jarvis', 'hey mycroft', 'hey rhasspy' "
                          "or an openWakeWord .onnx file (listen.wake_word).")
    ] = None,
    overrides: SetOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per line on stdout.")] = False,
) -> None:
    """Listen for spoken commands and print each as soon as it ends (Ctrl-C stops)."""
    from seqx.listen.session import listen as run_session
    from seqx.listen.sources import open_source
    from seqx.listen.vad import load_vad

    input_ = source_arg or input_
    settings = _recipe(recipe, overrides)
    if run and not settings.actions and not settings.listen.wake_run:
        raise SeqxError("--run: the recipe has no actions: section (nor listen.wake_run), so there is nothing to run")
    if input_ not in ("mic", "-") and not Path(input_).is_file():
        raise SeqxError(f"{input_}: no such file (--input takes mic, - or an audio file)")
    wake = _wake_gate(settings.listen, wake_word, json_out=json_out, model=model, run=run)
    decode = None if segments_only else wave_decoder(model, settings, grammar, overrides)
    own_vad = model / "silero_vad.onnx" if model is not None and (model / "silero_vad.onnx").is_file() else None
    vad, note = load_vad(settings.listen.vad, settings.listen.energy_margin_db, own_vad)  # an export's own copy
    if note:
        print_warning(note)
    device: str | int | None = int(mic) if mic is not None and mic.isdigit() else mic
    source = open_source(input_, rate=rate, realtime=realtime, device=device, on_clipping=print_warning,
                         channels=channels)
    if input_ == "mic":
        said = f" for {wake.label!r}" if wake is not None else ""
        console.print(f"listening{said} (Ctrl-C stops)", highlight=False)
    events = run_session(source, vad, settings.listen, decode, wake)
    try:
        for event in events:
            _print(event, json_out, segments_only)
            if run and event.understood:
                _act(settings, event, json_out)
    except KeyboardInterrupt:
        events.close()
        console.print("stopped", highlight=False)
    except BrokenPipeError:
        # whoever read our output has gone: say so once, and keep Python from a second error at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print_error("output closed (broken pipe)")
        raise typer.Exit(1) from None


def _wake_gate(
    settings: ListenSettings, given: str | None, json_out: bool, model: Path | None, run: bool = False
) -> WakeGate | None:
    """The wake-word gate `--wake-word` (or the recipe's listen.wake_word, or the export folder's own)
    asks for, or None (`none` turns an export's off). The moment the word is heard: "(hey jarvis)" on
    stderr, or with `json_out` a line `{"event": "wake", ...}` on stdout (a program reading the events
    learns it then, not when the command ends); with `run`, listen.wake_run started. An export
    folder's graphs and wake word need no openwakeword package."""
    from seqx.listen.wake import EXPORT_FILE, WakeDetector, WakeGate, exported_wake_word, wake_model_path, wake_word_label
    from seqx.runtime.model import is_exported

    folder = model if model is not None and is_exported(model) else None
    carried = exported_wake_word(folder) if folder is not None else None
    name = given or settings.wake_word or carried
    if name is None or name.lower() == "none":
        return None
    label = wake_word_label(name)
    path = folder / EXPORT_FILE if folder is not None and label == carried else wake_model_path(name)
    detector = WakeDetector(path, settings.wake_threshold, graphs_folder=folder)

    def heard(wake: Wake) -> None:
        if json_out:  # shaped as a segment (a reader of segments skips it as not understood), marked as the word
            from seqx.listen.session import Event

            said = Event(start=wake.time, end=wake.time, understood=False,
                         extra={"wake": round(wake.time, 3), "event": "wake", "wake_word": label, "score": round(wake.score, 4)})  # fmt: skip
            _print(said, json_out=True, segments_only=False)  # every key, with --segments too: the mark stays
        else:
            console.print(f"({label})", style="dim", highlight=False)
        if run and settings.wake_run:
            _start(list(settings.wake_run))

    return WakeGate(detector, settings.wake_follow_s, label=label, on_wake=heard)


def wave_decoder(  # noqa: ANN202 (lazy torch import)
    model: Path | None, recipe: Recipe, grammar: str | None = None, overrides: list[str] | None = None
):
    """Load the bundle and compile its grammar once; each segment's waveform is decoded with
    the bundle's settings, the `--set decode.*` given (as `seqx transcribe` takes them) and
    `--grammar` when given."""
    from seqx.cli.cmd_decode import check_exported_sets, decode_overrides
    from seqx.runtime.model import is_exported

    exported_model = model is not None and is_exported(model)
    sets = decode_overrides(recipe.decode, overrides)  # the recipe already read and checked them
    if exported_model:  # an ONNX export: onnxruntime + numpy, no torch
        check_exported_sets(sets)
        from seqx.runtime import load_exported, settings_for
        from seqx.runtime import transcribe_waves as run_exported

        exported = load_exported(model)
        given = {"grammar": grammar} if grammar is not None else {}  # recipe (the export's grammar) or none
        options = settings_for(exported, **{**sets, **given})
        return lambda waves: run_exported(exported, [np.asarray(w, np.float32) for w in waves], options)
    from seqx.cli.cmd_decode import _bundle
    from seqx.decode.transcribe import Constraint, transcribe_waves

    bundle = _bundle(model or (recipe.bundle_dir if (recipe.bundle_dir / "config.json").is_file() else None), "cpu")
    settings = bundle.decode.merged(**sets).merged(grammar=grammar)
    constraint = Constraint.of(bundle, settings)
    return lambda waves: transcribe_waves(bundle, list(waves), settings, constraint=constraint)


def _print(event, json_out: bool, segments_only: bool) -> None:  # noqa: ANN001
    if json_out:
        record = event.to_json()
        if segments_only:
            record = {k: record[k] for k in ("start", "end", "cut", "latency_ms", "wake") if k in record}
        out.file.write(json.dumps(record) + "\n")
        out.file.flush()
        return
    if segments_only:
        line = f"{event.start:.3f}\t{event.end:.3f}" + ("\tcut" if event.cut else "")
        line += "\twake" if event.extra.get("wake") is not None else ""
    elif not event.understood:
        return  # a rejected segment prints nothing in plain mode
    else:
        from seqx.decode.result import command_text

        line = event.text + (f"\t{command_text(event.intent, event.slots)}" if event.intent else "")
    out.file.write(line + "\n")
    out.file.flush()


def _act(recipe: Recipe, event, json_out: bool) -> None:  # noqa: ANN001
    from seqx.listen.actions import match_action, render_argv

    action = match_action(recipe.actions, event.text, event.intent, event.slots)
    if action is None:
        return
    _start(render_argv(action, event.text, event.slots))


def _start(argv: list[str]) -> None:
    """Start an action (not waited for) and say so on stderr; a failure to start is one error line."""
    from seqx.listen.actions import ActionError, start_action

    try:
        started = start_action(argv)
    except ActionError as err:
        print_error(str(err))
        return
    console.print(f"run: {' '.join(started.argv)} (pid {started.pid})", highlight=False)
