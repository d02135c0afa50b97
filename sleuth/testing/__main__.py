"""``python -m sleuth.testing [CORPUS_DIR]``: serve the offline web until Ctrl-C."""

import sys

from sleuth._extras import extra_needed
from sleuth.errors import ConfigError

try:
    with extra_needed("web", "the offline web"):
        from sleuth.testing.web import main
except ConfigError as exc:  # starlette or uvicorn is missing: one line, not a traceback
    print(f"python -m sleuth.testing: {exc}", file=sys.stderr)
    sys.exit(2)

main()
