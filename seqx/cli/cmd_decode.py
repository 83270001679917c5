"""`seqx transcribe` and `seqx evaluate`: parse, call the decode library, print."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional, get_args

import typer

from seqx.cli.common import (
    JsonOpt,
    RecipeArg,
    RichReporter,
    SetOpt,
    load_for_this_machine,
    out,
    print_error,
    print_warning,
)
from seqx.constants import DEFAULT_RECIPE, Precision
from seqx.errors import SeqxError

if TYPE_CHECKING:
    from seqx.recipe import DecodeSettings

SHOWN_CONFUSIONS = 8  # rows of `seqx evaluate`'s confusion table (--json has the report's 20)

ModelOpt = Annotated[
    Optional[Path],
    typer.Option("--model", "-m", help="Model bundle folder (default: the one `seqx train recipes/commands.yaml` wrote)."),
]
BeamOpt = Annotated[Optional[int], typer.Option("--beam", "-b", min=1, max=256, help="Beam size (default: the bundle's).")]
GreedyOpt = Annotated[bool, typer.Option("--greedy", help="Greedy search (same as --beam 1).")]
CtcOpt = Annotated[
    Optional[float], typer.Option("--ctc-weight", min=0.0, max=1.0, help="Weight of CTC prefix scores in beam search.")
]
DeviceOpt = Annotated[str, typer.Option("--device", help="cpu, cuda, or auto (cuda when present).")]
SlotOpt = Annotated[
    Optional[float],
    typer.Option("--slot-weight", min=0.0, max=100.0,
                 help="Rerank the grammar-constrained n-best by the model's intent/slot heads with this weight; "
                      "0 = off (default: the bundle's decode.slot_weight)."),
]
GapOpt = Annotated[
    Optional[float],
    typer.Option(
        "--max-ctc-gap",
        min=0.0,
        max=100.0,
        help="Report a result the CTC head finds this much less likely (nats/frame) than what it heard as "
        "no speech; 0 = off (default: the bundle's, 0.5).",
    ),
]
GrammarOpt = Annotated[
    Optional[str],
    typer.Option(
        "--grammar",
        "-g",
        help="Restrict decoding to a grammar file (.yaml/.jsgf/.gram/.txt/.json/.ini), `recipe` (the model's training "
        "grammar) or `none` (free decoding); default: the bundle's decode.grammar.",
    ),
]
PrecisionOpt = Annotated[
    Optional[str],
    typer.Option(
        "--precision",
        help="auto (bf16 on a GPU or a CPU with native bf16, else fp32), fp32 or bf16 (default: the bundle's).",
    ),
]


def _bundle(  # noqa: ANN202 (Bundle import is lazy)
    model: Path | None, device: str, recipe: Path = DEFAULT_RECIPE, overrides: list[str] | None = None
):
    from seqx.decode.bundle import load_bundle, locate_bundle

    # the recipe is read only when it is needed: --model works from any folder
    default = model or load_for_this_machine(recipe, overrides, device).bundle_dir
    return load_bundle(locate_bundle(model, default, recipe), device=device)


def decode_overrides(recipe_decode: DecodeSettings, overrides: list[str] | None) -> dict[str, object]:
    """The `--set decode.KEY=VALUE` settings, as the recipe parsed and checked them, to lay over the bundle's.

    A bundle carries the decode settings it was trained with (rejection thresholds chosen on
    valid included), so the recipe's `decode` section alone would not reach it; what the user
    names on the command line does. `auto` thresholds keep the bundle's: they were chosen at training.
    """
    keys = {o.split("=", 1)[0].strip().removeprefix("decode.") for o in overrides or () if o.strip().startswith("decode.")}
    values = {key: getattr(recipe_decode, key) for key in keys if key in type(recipe_decode).model_fields}
    return {key: value for key, value in values.items() if value != "auto"}


def model_decode_sets(overrides: list[str] | None, exported: bool = False) -> dict[str, object]:
    """`seqx transcribe --set decode.KEY=VALUE`: decode settings laid over a trained model's own.

    A model's other settings were fixed when it was trained, so only `decode.` keys apply; they are
    checked as a recipe's would be (an unknown key gets its "did you mean"), and `auto` keeps the
    model's thresholds. This is how a bundle made before a setting's default changed gets the new value.
    """
    for item in overrides or ():
        if not item.strip().startswith("decode."):
            raise SeqxError(f"--set {item}: a trained model takes only decode.KEY=VALUE (the rest was fixed at training)")
    if not overrides:
        return {}
    from seqx.errors import RecipeError
    from seqx.recipe import load_recipe

    try:
        recipe = load_recipe(DEFAULT_RECIPE, overrides)
    except RecipeError as err:  # "<the default recipe's path>: decode.bean: unknown key ...": the user named no recipe
        raise SeqxError(f"--set {str(err).split(': ', 1)[-1]}") from None
    sets = decode_overrides(recipe.decode, overrides)
    if exported:
        check_exported_sets(sets)
    return sets


def check_exported_sets(sets: dict[str, object]) -> None:
    """An ONNX export decodes with the settings its runtime knows; a `--set decode.*` it would ignore is refused."""
    from seqx.runtime.transcribe import SETTINGS

    for key in sets:
        if key not in SETTINGS:
            raise SeqxError(f"--set decode.{key}: an exported model does not take this setting (it decodes in onnxruntime)")


def _check_precision(precision: str | None) -> None:
    """Before any model is loaded: a typo should not wait for (or hide behind) the bundle."""
    choices = get_args(Precision)
    if precision is not None and precision not in choices:
        raise SeqxError(f"--precision {precision}: expected {', '.join(choices[:-1])} or {choices[-1]}")


def transcribe(
    files: Annotated[list[str], typer.Argument(help="Audio files, folders of them, or - to read paths from stdin.")],
    model: ModelOpt = None,
    beam: BeamOpt = None,
    greedy: GreedyOpt = False,
    nbest: Annotated[Optional[int], typer.Option("--nbest", "-n", min=1, max=256, help="Return the K best.")] = None,
    ctc_weight: CtcOpt = None,
    device: DeviceOpt = "auto",
    precision: PrecisionOpt = None,
    max_ctc_gap: GapOpt = None,
    slot_weight: SlotOpt = None,
    grammar: GrammarOpt = None,
    overrides: SetOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Transcribe audio files (wav/flac/ogg/mp3/m4a/webm..., any rate and channel count): one line per file,
    the text and, with a grammar, `intent {slot=value ...}` or `not understood`."""
    from seqx.decode.result import AUDIO_SUFFIXES, clipping_warning, expand_inputs, result_line  # torch-free: the exported-model path must not import torch
    from seqx.runtime.model import is_exported

    _check_precision(precision)
    exported_model = model is not None and is_exported(model)
    sets = model_decode_sets(overrides, exported=exported_model)  # before any file or model is read
    items = [line.strip() for line in sys.stdin if line.strip()] if files == ["-"] else files
    paths = expand_inputs(items)
    if not paths:
        raise SeqxError(f"no audio files given (folders are searched for {'/'.join(AUDIO_SUFFIXES)})")
    options = dict(
        beam=beam, greedy=greedy, nbest=nbest, ctc_weight=ctc_weight, max_ctc_gap=max_ctc_gap, slot_weight=slot_weight
    )
    if exported_model:  # an ONNX export: onnxruntime + numpy, torch never imported
        from seqx.runtime import load_exported, settings_for
        from seqx.runtime import transcribe_files as run_exported

        exported = load_exported(model)
        given = {k: v for k, v in {**options, "grammar": grammar}.items() if v is not None}  # --grammar: recipe or none
        settings = settings_for(exported, **{**sets, **given})
        results = run_exported(exported, paths, settings)
        if json_out:
            for result in results:
                if result.error:
                    print_error(f"{result.path}: {result.error}")
    else:
        from seqx.decode.transcribe import Constraint, transcribe_files

        bundle = _bundle(model, device)
        settings = bundle.decode.merged(**sets).merged(**options, precision=precision, grammar=grammar)
        constraint = Constraint.of(bundle, settings)  # a bad grammar or an unspellable word: one line, exit 2
        with RichReporter() as reporter:
            # text mode prints each unreadable file's error in its place below; JSON mode keeps the warning on stderr
            results = transcribe_files(
                bundle, paths, settings, reporter=reporter, warn_unreadable=json_out, constraint=constraint
            )
    for warning in filter(None, map(clipping_warning, results)):
        print_warning(warning)
    if json_out:
        out.print_json(json.dumps([r.to_json() for r in results]))
    else:
        for result in results:
            if result.error:
                print_error(f"{result.path}: {result.error}")
                continue
            # plain print, as `python -m seqx.runtime` does: rich would expand the tabs scripts split on
            # and read a transcript's "[...]" as markup
            line = result_line(result)
            if len(paths) == 1 and (nbest or 1) == 1:
                print(line, flush=True)
            else:
                print(f"{result.path}\t{line}", flush=True)
                for alt in result.nbest[1:]:
                    print(f"  {alt['score']:.3f}\t{alt['text']}", flush=True)
    if any(r.error for r in results):
        raise typer.Exit(1)


def evaluate(
    recipe: RecipeArg = DEFAULT_RECIPE,
    split: Annotated[str, typer.Option("--split", help="Which split to score.")] = "test",
    on: Annotated[
        Optional[Path],
        typer.Option("--on", help="Score your own recordings instead of a split: a folder of audio + .txt, a "
                                  "JSONL/CSV/TSV manifest or a Kaldi dir (data.manifest's readers)."),
    ] = None,
    model: ModelOpt = None,
    beam: BeamOpt = None,
    greedy: GreedyOpt = False,
    ctc_weight: CtcOpt = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="Score only the first N utterances.")] = None,
    oog: Annotated[int, typer.Option("--oog", min=3, help="Out-of-grammar sentences in the negative set.")] = 120,
    device: DeviceOpt = "auto",
    precision: PrecisionOpt = None,
    max_ctc_gap: GapOpt = None,
    slot_weight: SlotOpt = None,
    grammar: GrammarOpt = None,
    overrides: SetOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """WER, sentence accuracy, command acceptance, false rejects and false accepts (out-of-grammar
    speech and noise), free and grammar-constrained, with their real-time factors."""
    from rich.table import Table

    from seqx.decode.evaluate import compare

    _check_precision(precision)
    loaded = load_for_this_machine(recipe, overrides, device)
    bundle = _bundle(model, device, recipe, overrides)
    settings = bundle.decode.merged(**decode_overrides(loaded.decode, overrides)).merged(
        beam=beam, greedy=greedy, ctc_weight=ctc_weight, precision=precision, max_ctc_gap=max_ctc_gap, grammar=grammar,
        slot_weight=slot_weight,
    )
    with RichReporter() as reporter:
        reports = compare(loaded, bundle, settings, split=split, reporter=reporter, limit=limit, n_oog=oog, on=on)
    if json_out:
        out.print_json(json.dumps({mode: r.to_json() for mode, r in reports.items()}))
        return
    search = "greedy" if settings.beam == 1 else f"beam {settings.beam}, ctc {settings.ctc_weight:g}"
    grammars = [r.grammar for r in reports.values() if r.grammar]
    first = next(iter(reports.values()))
    split = f"{on} (your recordings)" if on is not None else split
    title = f"{loaded.name} / {split}, {first.overall.utterances} utterances ({search}{', grammar ' + grammars[0] if grammars else ''})"
    table = Table(title=title, caption="acc: sentence / command (intent + slots); FR: commands not understood; "
                                       "wrong: commands understood as another command; "
                                       "FA: negatives understood (out-of-grammar speech, noise)")
    # two-line headers and figures that never wrap: the table fits 80 columns
    columns = ("decoding", "WER\n%", "acc\n%", "cmd\nacc %", "FR\n%", "wrong\n%", "FA\noog %", "FA\nnoise %", "RTF")
    for column in columns:
        table.add_column(column, justify="left" if column == "decoding" else "right", no_wrap=True)
    pct = lambda x: "-" if x is None else f"{100 * x:.1f}"  # noqa: E731
    for mode, r in reports.items():
        c, n = r.commands, r.negatives
        table.add_row(mode, f"{100 * r.overall.wer:.2f}", pct(r.overall.sentence_accuracy), pct(c and c.acceptance),
                      pct(c and c.false_rejects), pct(c and c.wrong_answers), pct(n.oog_false_accepts if n and n.oog else None),
                      pct(n.noise_false_accepts if n and n.noise else None), f"{r.rtf:.3f}")
    out.print(table)
    for mode, r in reports.items():
        c = r.commands
        if c and (c.right_before_checks > c.acceptance or c.wrong_caught):
            out.print(f"{mode}: {pct(c.right_before_checks)}% of commands right before the \"not understood\" checks; "
                      f"they turned away {pct(c.right_before_checks - c.acceptance)}% that were right and "
                      f"{pct(c.wrong_caught)}% that were another command", highlight=False)
    subsets = Table(title="subsets: sentence accuracy %")
    subsets.add_column("subset")
    for mode in reports:
        subsets.add_column(mode, justify="right")
    for name in first.subsets:
        subsets.add_row(f"{name} ({first.subsets[name].utterances})",
                        *(pct(r.subsets[name].sentence_accuracy) for r in reports.values()))
    out.print(subsets)
    if first.negatives:
        kinds = Table(title="false accepts % by negative kind")
        kinds.add_column("kind")
        for mode in reports:
            kinds.add_column(mode, justify="right")
        for kind in first.negatives.by_kind:
            kinds.add_row(kind, *(pct(r.negatives.by_kind[kind]) for r in reports.values() if r.negatives))
        out.print(kinds)
    for mode, r in reports.items():
        if r.commands and r.commands.confusions:
            confusions = Table(title=f"{mode}: slot values heard wrong")
            for column in ("slot", "said", "heard", "times"):
                confusions.add_column(column, justify="right" if column == "times" else "left")
            for c in r.commands.confusions[:SHOWN_CONFUSIONS]:
                confusions.add_row(c.slot, c.said, c.heard, str(c.count))
            out.print(confusions)
    out.print(f"details {', '.join(r.details_path for r in reports.values())}", highlight=False)
