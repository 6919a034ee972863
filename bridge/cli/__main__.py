"""`python -m bridge.cli`: the `kbc` command."""

from bridge.cli import main

main()
