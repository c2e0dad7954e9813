"""The rules, over an opened object: no typer, no rich, no printing."""
