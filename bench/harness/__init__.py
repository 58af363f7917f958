"""The benchmark harness: a load driver for MCP servers on stdio and Streamable HTTP.

It runs every target of a targets file in one sitting, rounds interleaving the targets,
and prints markdown tables of the medians with paired ratios between peers. Entry point:
``bench/mcpbench.py`` (``bash bench/run.sh`` sets up the venvs and calls it).
"""
