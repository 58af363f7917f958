"""``python -m mcpactor.cli``: the same as the ``mcpactor`` command."""

import sys

from . import main

sys.exit(main())
