"""``python -m sleuth.testing [CORPUS_DIR]``: serve the offline web until Ctrl-C."""

from sleuth.testing.web import main

main()
