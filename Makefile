# make demo: corpus -> features -> tokenizer -> model -> a transcription and the test WER.
# make test: the test suite. Both install what is missing first (espeak-ng, flite, a .venv).
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
SEQX    = $(VENV)/bin/seqx
RECIPE ?= recipes/commands.yaml
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test setup system-deps bench clean

setup: system-deps $(VENV)/.installed

system-deps:
	@command -v espeak-ng >/dev/null && command -v flite >/dev/null && ldconfig -p | grep -q libportaudio.so.2 || \
	  ( $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq espeak-ng flite libportaudio2 >/dev/null )

$(VENV)/.installed: pyproject.toml
	[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

demo: setup
	$(SEQX) train $(RECIPE)
	$(SEQX) transcribe $$(ls exp/commands/data/audio/test/*.wav | head -n 3)
	$(SEQX) evaluate $(RECIPE)

test: setup
	$(PY) -m pytest

bench: setup
	$(PY) bench/featurize.py
	$(PY) bench/train_throughput.py
	$(PY) bench/decode.py
	$(PY) bench/encoder_cost.py

clean:
	rm -rf exp .pytest_cache
