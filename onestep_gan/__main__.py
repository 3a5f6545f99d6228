"""`python -m onestep_gan train|adversarial|chain|decode|generate|evaluate` (see onestep_gan.rdf2text.cli)."""

import sys

from onestep_gan.rdf2text.cli import main

sys.exit(main())
