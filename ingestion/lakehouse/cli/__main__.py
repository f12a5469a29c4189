"""``python -m lakehouse.cli``: the ``lakehouse`` command (:func:`lakehouse.cli.main`)."""

import sys

from lakehouse.cli import main

sys.exit(main())
