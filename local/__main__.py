"""Entry point of `python3 dev.py run` (`python -m local`)."""

import sys

from local.stack import main

sys.exit(main())
