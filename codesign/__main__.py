"""``python -m codesign``: the command line, as the ``codesign`` script."""

from codesign.cli import app

app()
