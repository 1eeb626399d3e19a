"""A remote build cache: built files stored and fetched on an HTTP server by content key (docs/remote-cache.md).

heliabuild.cache.layout is the layout of Bazel's HTTP remote cache (`/cas/<sha256>`, `/ac/<key>`) and
heliabuild.cache.http the client that PUTs and GETs it; neither knows SCons (heliabuild.scons.remote_cache
wires the client into SCons's CacheDir). Every public name is importable from here; each loads its module
on first use.
"""

from heliabuild.lazy import lazy_exports

_EXPORTS = {
    "CacheEntry": "heliabuild.cache.layout",
    "CacheError": "heliabuild.cache.http",
    "CacheURL": "heliabuild.cache.http",
    "CorruptEntryError": "heliabuild.cache.layout",
    "DEFAULT_TIMEOUT": "heliabuild.cache.http",
    "RemoteCache": "heliabuild.cache.http",
    "ac_key": "heliabuild.cache.layout",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
