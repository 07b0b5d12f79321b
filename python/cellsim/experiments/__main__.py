"""Prints the experiments' options reference (``docs/experiments.md``)."""

import sys

from . import options_reference

sys.stdout.write(options_reference())
