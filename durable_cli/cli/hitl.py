import typer
def register(root): pass
