"""How `jobmon compare` and `jobmon query --like` print their model: JSON, an HTML page
into a file, or text."""
import typer


def show(model, as_json, html, text, page):
    """The model as JSON, an HTML page written to `html` ("-": standard output), or
    text; text and page: the renderers (model -> str)."""
    if as_json:
        import json
        typer.echo(json.dumps(model, indent=1, default=str))
    elif html:
        write_page(html, page(model))
    else:
        typer.echo(text(model), nl=False)


def write_page(path, page, note=""):
    """The page into `path`, whole or not at all; "-": standard output. `note`: what the
    line that says it was written adds."""
    import os
    import sys
    if path == "-":
        sys.stdout.write(page)
        return
    tmp = f"{path}.tmp{os.getpid()}"   # a reader never sees half a page
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(page)
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        typer.echo(f"jobmon: cannot write {path}: {e.strerror}", err=True)
        raise typer.Exit(1)
    typer.echo(f"jobmon: wrote {path}{note}", err=True)
