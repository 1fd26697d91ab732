"""`python -m skyward.guardian start|run|renew|release ...`: the guardian (`agent.py`) in place."""

import sys

from skyward.guardian.agent import main

sys.exit(main())
