# make demo: corpus -> features -> tokenizer -> model -> a transcription and the test WER.
# make test: the test suite. Both install what is missing first (Debian packages, a .venv).
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
SEQX    = $(VENV)/bin/seqx
RECIPE ?= recipes/commands.yaml
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test setup system-deps bench clean

setup: system-deps $(VENV)/.installed

# Debian packages: the TTS engines that make the corpus (espeak-ng, flite, festival voices; piper comes
# from pip, the `voices` extra), the real human recordings bench/human.py checks on (pocketsphinx-testdata,
# alsa-utils, asterisk-core-sounds-en-wav with its transcripts, ktuberling-data, warzone2100-data, klettres-data)
# and PortAudio for `seqx listen`. Installed once; the check is one file per package.
APT_PKGS = espeak-ng flite festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts pocketsphinx-testdata \
           alsa-utils libportaudio2 asterisk-core-sounds-en-wav asterisk-core-sounds-en ktuberling-data \
           warzone2100-data klettres-data
APT_MARK = /usr/bin/espeak-ng /usr/bin/flite /usr/bin/text2wave /usr/share/festival/voices/english/ked_diphone \
           /usr/share/pocketsphinx/test/data/cards/cards.gram \
           /usr/share/sounds/alsa/Front_Left.wav /usr/share/asterisk/sounds/en_US_f_Allison/digits/14.wav \
           /usr/share/ktuberling/sounds/en.soundtheme /usr/share/games/warzone2100/base.wz \
           /usr/share/klettres/en/alpha/A.ogg
system-deps:
	@for f in $(APT_MARK); do [ -e $$f ] || missing=1; done; \
	  ldconfig -p | grep -q libportaudio.so || missing=1; \
	  [ -z "$$missing" ] || ( $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(APT_PKGS) >/dev/null )

# torch's CUDA build and its libraries are about 5.5 GB installed: no pip cache beside them (its copy
# of the downloaded wheels would be 3 GB more; a CI run ran out of disk with one), and a clear line
# when the disk cannot hold even the venv. uv installs them: 40 s against pip's 75 s on this machine
# (docs/benchmarks.md "The venv made by uv"). Its cache lies inside the venv, on the same disk, so the
# venv's files are hard links to it (no second copy) and it is deleted after; pip does it if uv cannot.
# --compile-bytecode, as pip does: where PYTHONDONTWRITEBYTECODE is set (this machine), every process
# would compile torch's modules again (`import torch, seqx.cli.app` 2.7-4.0 s against 1.7-1.9 s).
VENV_FREE_GB = 6
EXTRAS = train,dev,voices,export
$(VENV)/.installed: pyproject.toml Makefile
	@free=$$(df -Pk . | awk 'NR==2 {print int($$4 / 1048576)}'); [ -x $(PY) ] || [ "$$free" -ge $(VENV_FREE_GB) ] || \
	  { echo "make: $(VENV) needs about $(VENV_FREE_GB) GB free on $$(df -P . | awk 'NR==2 {print $$6}'), $$free GB are" >&2; exit 1; }
	[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --no-cache-dir --upgrade pip
	$(PY) -m pip install -q --no-cache-dir uv && $(VENV)/bin/uv pip install -q --native-tls --python $(PY) \
	  --cache-dir $(VENV)/.uv-cache --link-mode hardlink --compile-bytecode -e '.[$(EXTRAS)]' \
	  || $(PY) -m pip install -q --no-cache-dir -e '.[$(EXTRAS)]'
	rm -rf $(VENV)/.uv-cache
	touch $@

demo: setup
	$(SEQX) train $(RECIPE)
	$(SEQX) transcribe $$(ls exp/commands/data/audio/test/*.wav | head -n 3)
	$(SEQX) evaluate $(RECIPE)

# two pytest workers (pytest-xdist), each taking whole test files (loadscope: a file's tiny trained
# model is made once, by the worker that runs the file), each on one OpenMP thread (tests/conftest.py):
# 8 min warm on a 2-core AMD EPYC (docs/benchmarks.md "One thread per test worker"). TEST_WORKERS=0: one process
# (xdist then distributes nothing). --max-worker-restart 0: a worker that crashes ends the run with
# the test it crashed on named; replaced, pytest-xdist 3.8 can deadlock under loadscope (its issue
# #1378), and CI's run on 2026-11-30 hung until its 90 minutes were up. --no-loadscope-reorder: files in
# collection order; xdist's default (most tests first) put the one-test files last, the compile test
# (100-180 s) among them, and one worker idled 104 s at the end (docs/benchmarks.md "Which file ends the run")
TEST_WORKERS ?= 2
test: setup
	$(PY) -m ruff check --quiet .
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --max-worker-restart 0

bench: setup
	$(PY) bench/featurize.py
	$(PY) bench/train_throughput.py
	$(PY) bench/decode.py
	$(PY) bench/encoder_cost.py

clean:
	rm -rf exp .pytest_cache
