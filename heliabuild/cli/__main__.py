"""`python -m heliabuild.cli`, as the `heliabuild` console script."""

import sys

from heliabuild.cli import main

sys.exit(main())
