"""`python -m seqx.runtime MODEL_DIR FILE.wav [...] [--beam N | --greedy] [--json]`: the smallest way to
run an exported model, for a device without torch (and the first-result latency benchmark):
imports numpy, onnxruntime, sentencepiece and soundfile only.
"""

from __future__ import annotations

import argparse
import json
import sys

from seqx.errors import SeqxError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m seqx.runtime", description="Transcribe with an exported seqx model."
    )
    parser.add_argument("model", help="folder written by `seqx export`")
    parser.add_argument("files", nargs="+", help="audio files")
    parser.add_argument("--beam", type=int, default=None)
    parser.add_argument("--greedy", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from seqx.decode.result import clipping_warning, result_line
    from seqx.runtime import load_exported, settings_for, transcribe_files

    try:
        model = load_exported(args.model)
        results = transcribe_files(model, args.files, settings_for(model, beam=args.beam, greedy=args.greedy))
    except SeqxError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for r in results:
        if (warning := clipping_warning(r)) is not None:
            print(f"warning: {warning}", file=sys.stderr)
        if args.json:
            print(json.dumps(r.to_json()))
        elif r.error:
            print(f"error: {r.path}: {r.error}", file=sys.stderr)
        else:
            line = result_line(r)
            print(line if len(results) == 1 else f"{r.path}\t{line}", flush=True)
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
