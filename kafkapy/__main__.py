"""``python -m kafkapy config/server.properties [--override key=value ...]``."""
import sys

from kafkapy.cli.server_start import main

sys.exit(main())
