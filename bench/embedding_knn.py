"""What the speech embedding alone knows about a human set: a nearest-neighbour vote with no training.

Usage:
    python bench/embedding_knn.py --exp-dir /tmp/seqx-human [--sets asterisk-numbers] [--k 5] [--json]

For each human file of a set whose sentences are few (a word or a short phrase each: numbers,
alsa's channel names), the file's raw 96-d speech embeddings are compared by dynamic time warping
(cosine distance between frames, path cost over both lengths) with those of every training
utterance of that set's corpus that says one of the set's own references, and the k nearest vote.
Both sides are cut to their speech (frame energy) with 0.2 s around it, as decoding does.

Beside `bench/human.py`'s answers for the same files this separates two causes of a miss: when
the vote is right and the trained model wrong, the front-end carried the difference and training
leaned on cues that only the synthetic voices have; when both are wrong, the embedding itself
puts the person's word nearer another one. Needs the corpus that `bench/human.py --exp-dir` made.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from human import as_wav, human_sets, set_model_name  # noqa: E402

from seqx.featurize.samples import read_samples  # noqa: E402
from seqx.featurize.span import speech_span  # noqa: E402

SAMPLE_RATE = 16000
MARGIN_S = 0.2


def speech_only(path: Path | str) -> np.ndarray:
    """The file at 16 kHz mono (seqx's own reader), cut to its sound as decoding finds it
    (seqx.featurize.span: 10 ms frames within 20 dB of the loudest) with MARGIN_S around."""
    wave = read_samples(path, SAMPLE_RATE)
    first, last = speech_span(wave, SAMPLE_RATE)
    pad = int(MARGIN_S * SAMPLE_RATE)
    return wave[max(0, first - pad) : last + pad]


def dtw_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Mean cosine distance along the cheapest monotonic alignment of two (frames, dim) sequences."""
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    cost = 1.0 - a @ b.T
    n, m = cost.shape
    total = np.full((n + 1, m + 1), np.inf)
    total[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            total[i, j] = cost[i - 1, j - 1] + min(total[i - 1, j], total[i, j - 1], total[i - 1, j - 1])
    return float(total[n, m] / (n + m))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exp-dir", type=Path, default=Path("/tmp/seqx-human"))
    parser.add_argument("--sets", default="asterisk-numbers")
    parser.add_argument("--kind", default="speech_embedding", help="the features.kind bench/human.py trained with")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from seqx.featurize.embedding import SpeechEmbedding

    embed = SpeechEmbedding()

    def features(path: Path | str) -> np.ndarray:
        return embed(speech_only(path))

    report = []
    for name in args.sets.split(","):
        hs = human_sets()[name]
        data = args.exp_dir / set_model_name(name, args.kind) / "data"
        if not (data / "train.jsonl").is_file():
            raise SystemExit(f"{data}: no corpus; run bench/human.py --exp-dir {args.exp_dir} --sets {name} first")
        said = {ref for _, ref in hs.files if ref}
        train = [json.loads(line) for line in (data / "train.jsonl").open()]
        refs = [(row["text"], features(data / row["audio"])) for row in train if row["text"] in said]
        right, files = 0, []
        for path, ref in hs.files:
            if not ref:
                continue
            mine = features(as_wav(path, args.exp_dir / "human"))
            nearest = sorted((dtw_distance(mine, theirs), text) for text, theirs in refs)[: args.k]
            vote = collections.Counter(text for _, text in nearest).most_common(1)[0][0]
            right += vote == ref
            files.append({"file": Path(path).name, "reference": ref, "vote": vote, "nearest": [t for _, t in nearest]})
        report.append({"set": name, "right": right, "files": len(files), "references": len(refs), "per_file": files})
    if args.json:
        print(json.dumps(report, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    for entry in report:
        table = Table(
            title=f"{entry['set']}: {args.k}-NN of {entry['references']} training utterances, "
            f"{entry['right']} of {entry['files']} right"
        )
        for col in ("file", "reference", "vote", "nearest"):
            table.add_column(col)
        for f in entry["per_file"]:
            table.add_row(f["file"], f["reference"], f["vote"], ", ".join(f["nearest"]))
        Console().print(table)


if __name__ == "__main__":
    main()
