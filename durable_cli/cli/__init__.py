"""The command line: typer wiring only (parse -> call the library -> render).

app.py builds the app lazily (only the command group being run is imported) and runs a command line;
options.py is what the command modules share (the global options, the run's Store, common options);
signals.py keeps 130/143 honest around commits; typer_patches.py holds what typer does not do by itself;
render.py is the only module that imports rich. The console script is durable_cli.cli:main.
"""

from .app import build_app, main, run  # noqa: F401 - the package's face: the console script, tests, tools
