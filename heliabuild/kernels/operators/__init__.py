"""Reference semantics and admission checks of the AOT operator contracts."""
