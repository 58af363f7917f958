"""``python -m mcpactor``: the same as the ``mcpactor`` command."""

import sys

from .cli import main

sys.exit(main())
