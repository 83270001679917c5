"""load_audio: every format and rate lands as mono float32 at the recipe rate; broken files raise AudioError."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from seqx.errors import AudioError
from seqx.featurize.audio import load_audio

TARGET = 16000


def _tone(rate: int, hz: float = 440.0, seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def _peak_hz(wave: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(wave * np.hanning(len(wave))))
    return float(np.argmax(spectrum) * rate / len(wave))


@pytest.mark.parametrize("rate", [8000, 22050, 44100, 48000])
def test_resampling_lands_at_recipe_rate_length_and_pitch(tmp_path: Path, rate: int) -> None:
    path = tmp_path / f"tone{rate}.wav"
    sf.write(path, _tone(rate), rate, subtype="PCM_16")
    wave = load_audio(path, TARGET)
    assert wave.dtype.is_floating_point and wave.ndim == 1
    assert abs(wave.numel() - TARGET) <= 2  # one second in, one second out
    # a 1 s window has 1 Hz bins: the tone must stay within one bin of 440 Hz
    assert abs(_peak_hz(wave.numpy(), TARGET) - 440.0) <= 1.0


def test_int_and_float_pcm_read_alike_and_stereo_is_mixed(tmp_path: Path) -> None:
    tone = _tone(TARGET)
    sf.write(tmp_path / "i16.wav", tone, TARGET, subtype="PCM_16")
    sf.write(tmp_path / "i32.wav", tone, TARGET, subtype="PCM_32")
    sf.write(tmp_path / "f32.wav", tone, TARGET, subtype="FLOAT")
    sf.write(tmp_path / "x.flac", tone, TARGET)
    sf.write(tmp_path / "stereo.wav", np.stack([tone, np.zeros_like(tone)], 1), TARGET, subtype="FLOAT")
    for name in ("i16.wav", "i32.wav", "f32.wav", "x.flac"):
        np.testing.assert_allclose(load_audio(tmp_path / name, TARGET).numpy(), tone, atol=1e-4)  # 16-bit step is 3e-5
    np.testing.assert_allclose(load_audio(tmp_path / "stereo.wav", TARGET).numpy(), tone / 2, atol=1e-6)


def test_mp3_through_the_same_entry_point(tmp_path: Path) -> None:
    path = tmp_path / "x.mp3"
    sf.write(path, _tone(TARGET, seconds=0.5), TARGET, format="MP3")
    wave = load_audio(path, TARGET)
    assert abs(wave.numel() - TARGET // 2) < 2000  # mp3 frames pad the ends
    assert abs(_peak_hz(wave.numpy(), TARGET) - 440.0) <= 3.0


def _encode(path: Path, wave: np.ndarray, codec: str, codec_rate: int) -> None:
    """Write `wave` (mono, TARGET Hz) with FFmpeg's encoder through PyAV, as a phone or browser would."""
    import av

    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=codec_rate)
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(wave[None, :], format="flt", layout="mono")
        frame.sample_rate = TARGET
        for chunk in av.AudioResampler(format=stream.format.name, layout="mono", rate=codec_rate).resample(frame):
            for packet in stream.encode(chunk):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)


@pytest.mark.parametrize(("name", "codec", "codec_rate"), [("phone.m4a", "aac", 44100), ("browser.webm", "libopus", 48000),
                                                            ("clip.mp4", "aac", 16000), ("raw.aac", "aac", 22050)])
def test_phone_and_browser_recordings_are_read(tmp_path: Path, name: str, codec: str, codec_rate: int) -> None:
    """m4a (a phone's voice memo), webm/opus (a browser's MediaRecorder), mp4, raw aac: containers libsndfile
    cannot open, decoded by PyAV without a system ffmpeg."""
    path = tmp_path / name
    _encode(path, _tone(TARGET), codec, codec_rate)
    wave = load_audio(path, TARGET)
    assert abs(wave.numel() - TARGET) < 2000  # the codec's frames pad the ends
    assert abs(_peak_hz(wave.numpy()[:TARGET], TARGET) - 440.0) <= 3.0
    middle = wave.numpy()[TARGET // 4 : 3 * TARGET // 4]  # the codec rings at the tone's abrupt ends
    assert 0.3 < float(np.sqrt(np.mean(middle**2))) < 0.4  # a 0.5 sine's rms is 0.354


def test_a_broken_phone_recording_is_one_line(tmp_path: Path) -> None:
    good = tmp_path / "good.m4a"
    _encode(good, _tone(TARGET), "aac", TARGET)
    for name, data in [("cut.m4a", good.read_bytes()[:3000]), ("notes.m4a", b"this is a text file\n" * 20)]:
        (tmp_path / name).write_bytes(data)
        with pytest.raises(AudioError, match=rf"^{tmp_path / name}: unreadable or unsupported audio \([^\n]*\)$"):
            load_audio(tmp_path / name, TARGET)


@pytest.mark.parametrize(("rate", "channels"), [(16000, 1), (44100, 2)])
def test_a_clipped_recording_is_told_a_clean_or_quiet_one_is_not(tmp_path: Path, espeak_wav, rate: int,
                                                                 channels: int) -> None:
    """A command driven 6 dB into full scale (a microphone's gain too high) is flagged by the share of
    samples flat at its peak, counted before resampling (a 44.1 kHz stereo file: resampled, its ringing
    hides the flat tops); the same speech clean, or quiet, is not."""
    import soxr

    from seqx.featurize.samples import CLIPPED_SHARE, read_audio

    speech = load_audio(espeak_wav(tmp_path / "s.wav", "set the volume to twenty five"), rate).numpy()
    speech = speech / np.abs(speech).max()
    for name, wave, clipped in [("clipped", np.clip(2 * speech, -1, 1), True), ("clean", 0.9 * speech, False),
                                ("quiet", 0.003 * np.clip(2 * speech, -1, 1), False)]:
        path = tmp_path / f"{name}.wav"
        sf.write(path, np.stack([wave] * channels, axis=1), rate, subtype="PCM_16")
        audio = read_audio(path, TARGET)
        assert (audio.clipped >= CLIPPED_SHARE) is clipped and (audio.clipped == 0) is not clipped, (name, audio.clipped)
        assert np.array_equal(audio.samples, load_audio(path, TARGET).numpy())
    if rate != TARGET:  # what the check would see after resampling: the flat tops gone
        from seqx.featurize.samples import clipped_share

        assert clipped_share(soxr.resample(np.clip(2 * speech, -1, 1), rate, TARGET)) == 0


def test_silence_is_valid_input(tmp_path: Path) -> None:
    path = tmp_path / "silence.wav"
    sf.write(path, np.zeros(TARGET // 2, np.float32), TARGET, subtype="PCM_16")
    assert load_audio(path, TARGET).abs().max() == 0


def _bad_files(folder: Path) -> dict[str, Path]:
    """Each broken kind once: what the featurize stage must skip and name."""
    good = folder / "good.wav"
    sf.write(good, _tone(TARGET), TARGET, subtype="PCM_16")
    files = {
        "truncated": folder / "truncated.wav",
        "empty": folder / "empty.wav",
        "nan": folder / "nan.wav",
        "text": folder / "notes.wav",
        "missing": folder / "missing.wav",
    }
    files["truncated"].write_bytes(good.read_bytes()[:30])  # cut inside the RIFF header
    files["empty"].write_bytes(b"")
    wave = _tone(TARGET)
    wave[100:200] = np.nan
    sf.write(files["nan"], wave, TARGET, subtype="FLOAT")
    files["text"].write_text("this is a text file, not audio\n" * 20)
    return files


@pytest.mark.parametrize("kind", ["truncated", "empty", "nan", "text", "missing"])
def test_broken_files_raise_audio_error_naming_the_file(tmp_path: Path, kind: str) -> None:
    path = _bad_files(tmp_path)[kind]
    with pytest.raises(AudioError) as err:
        load_audio(path, TARGET)
    assert err.value.path == str(path)
    assert str(err.value).startswith(f"{path}: ")
