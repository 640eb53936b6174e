"""Sphinx configuration of the course site. site/build.py assembles the source folder
(index.md, lessons/, downloads/, _static/mathjax/) and runs sphinx-build with `-c site`.

Everything the pages load is local: MathJax 3 is a copy of the npm package (site/package.json),
the theme ships its own fonts and icons, and nothing here names a CDN."""

from pathlib import Path

project = "Transformer building blocks, by hand"
author = "The course authors"
copyright = "the course authors"

extensions = ["myst_nb"]

# Stored outputs: solutions/ is executed (seeded) and committed with its outputs; the site never
# runs a kernel.
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

exclude_patterns = ["downloads", "_static", "**/.ipynb_checkpoints"]
master_doc = "index"

# Math: a local MathJax 3 (copied into _static/mathjax by build.py), never a CDN.
mathjax_path = "mathjax/tex-chtml-full.js"

html_theme = "sphinx_book_theme"
html_title = project
html_static_path = ["static"]
html_css_files = ["course.css"]
html_favicon = "static/favicon.svg"
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "use_download_button": False,
    "use_repository_button": False,
    "use_issues_button": False,
    "use_edit_page_button": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": {"**": ["page-toc"], "index": []},
    "navbar_persistent": [],
}


def _static_from_source(app, config):
    """build.py puts MathJax into <source>/_static; serve it with the theme's static files."""
    config.html_static_path.append(str(Path(app.srcdir) / "_static"))


def setup(app):
    app.connect("config-inited", _static_from_source)
