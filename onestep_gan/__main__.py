"""`python -m onestep_gan train|generate|evaluate` (see onestep_gan.cli)."""

import sys

from onestep_gan.cli import main

sys.exit(main())
