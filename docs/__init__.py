"""heliabuild's user documentation, installed with the package as `heliabuild.docs` (the Markdown files
beside this one), so that `heliabuild docs NAME` prints on a pip user's machine what every hint names."""
