"""``python -m kafkapy.pipeline``: same as the ``kafkapy-pipeline`` console script."""
from __future__ import annotations

import sys

from kafkapy.pipeline.cli import main

sys.exit(main())
