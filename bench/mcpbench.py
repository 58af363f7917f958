"""The benchmark harness's entry point: ``python bench/mcpbench.py --help``.

bench/run.sh runs it in the driver's venv with the targets of bench/targets.toml.
"""

import sys

from harness.cli import main

if __name__ == "__main__":
    sys.exit(main())
