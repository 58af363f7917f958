"""Add up the refundable lines of an order: ``python total.py 12.50 3.20``."""

import sys

print(f"{sum(float(line) for line in sys.argv[1:]):.2f}")
