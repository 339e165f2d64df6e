"""``python -m lab.simulator ...`` (same options as ``manage.py simulate``)."""

import sys

from .cli import main

sys.exit(main())
