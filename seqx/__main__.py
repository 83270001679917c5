"""`python -m seqx` (what `torchrun -m seqx train RECIPE` runs on every rank)."""

from seqx.cli.app import main

if __name__ == "__main__":
    main()
