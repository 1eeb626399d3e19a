"""SCons's CacheDir extended to a remote build cache on an HTTP server (heliabuild.cache, docs/remote-cache.md).

`RemoteCacheDir` is a custom CacheDir class (`env.CacheDir(path, custom_class)`, or the construction
variable `CACHEDIR_CLASS`); `remote_cache_class(url)` makes the one of a server. Contract:

- A target is looked up in the local CacheDir first when there is one (`path`), then on the server; a file
  fetched from the server is also put into the local CacheDir. A target SCons built is pushed to both.
  With `path` None the server is the only cache.
- The server's key of a target is SCons's own cache signature of it (`get_cachedir_bsig`: its sources'
  contents, its action, its path), so a target is fetched exactly when a local CacheDir with the same
  content would have served it; `NoCache` targets (a run's result bundle) are neither fetched nor stored.
- A fetched file is written atomically and only after its content matched its key; the build prints
  ``Retrieved `<target>' from remote cache`` (or, with `--cache-show`, the command, as SCons does).
- A server that fails is one `heliabuild: warning: remote cache ...` line on stderr, then the build goes
  on locally; a corrupted entry is one warning per entry and is built here. Neither fails the build.
- SCons's cache options hold: `--cache-disable` (nothing fetched or stored), `--cache-readonly` (nothing
  stored), `--cache-force` (up-to-date targets are stored too), `--cache-debug` (the server's hits, misses
  and stores too, by SCons's cache signature); with `-n` nothing is fetched.

`configure(env)`, called for each environment that declares heliabuild targets (heliabuild.scons.process),
adds the option `--helia-cache-url=URL` and, when it or the environment variable HELIA_CACHE_URL gives a URL
(the option wins; `--helia-cache-url=` turns a URL of the environment off), makes `env`'s CacheDir class the
server's, keeping whatever CacheDir path the SConstruct set. HELIA_CACHE_TIMEOUT sets the client's timeout in seconds.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TextIO

import SCons.Action
import SCons.CacheDir
import SCons.Environment
from SCons.Environment import Base as Environment
from SCons.Errors import UserError
from SCons.Node import Node

if TYPE_CHECKING:
    from heliabuild.cache.http import RemoteCache

OPTION = "--helia-cache-url"
OPTION_DEST = "helia_cache_url"
URL_VARIABLE = "HELIA_CACHE_URL"
"""The environment variable that gives the cache URL when the option does not."""
TIMEOUT_VARIABLE = "HELIA_CACHE_TIMEOUT"
"""The environment variable that sets the client's timeout, in seconds (heliabuild.cache.http)."""


class RemoteCacheDir(SCons.CacheDir.CacheDir):
    """A CacheDir whose files also live on a remote cache server (module docstring); `remote` is the
    server's client, shared by every instance of the class (one warning per server and build)."""

    remote: ClassVar[RemoteCache]

    def is_enabled(self) -> bool:
        return SCons.CacheDir.cache_enabled

    def cachepath(self, node: Node) -> tuple[str | None, str | None]:
        if self.path is None:
            return None, None
        return super().cachepath(node)

    def retrieve(self, node: Node) -> bool:
        """Retrieve `node` from the local CacheDir, else from the server; whether it was."""
        if not self.is_enabled():
            return False
        if self.path is not None and super().retrieve(node):
            return True
        if not SCons.Action.execute_actions or not self.remote.available:
            return False
        if self.path is None:
            self.requests += 1
        signature = node.get_cachedir_bsig()
        if not self.remote.fetch(signature, Path(node.get_abspath()), node.get_internal_path()):
            self.CacheDebug("CacheRetrieve(%s):  %s not in the remote cache\n", node, signature)
            return False
        self.hits += 1
        self.CacheDebug("CacheRetrieve(%s):  fetched %s from the remote cache\n", node, signature)
        if SCons.CacheDir.cache_show:
            node.build(presub=0, execute=0)
        elif SCons.Action.print_actions:
            _line(sys.stdout, f"Retrieved `{node.get_internal_path()}' from remote cache")
        if self.path is not None:
            super().push(node)
        return True

    def push(self, node: Node) -> None:
        """Store the built `node` in the local CacheDir and on the server."""
        if self.is_readonly() or not self.is_enabled():
            return
        if self.path is not None:
            super().push(node)
        if node.nocache or node.islink():
            return
        signature = node.get_cachedir_bsig()
        if self.remote.store(signature, Path(node.get_abspath()), node.get_internal_path()):
            self.CacheDebug("CachePush(%s):  stored %s in the remote cache\n", node, signature)


def warn(message: str) -> None:
    """Print a warning of the remote cache, `heliabuild: warning: <message>`, on stderr."""
    _line(sys.stderr, f"heliabuild: warning: {message}")


def _line(stream: TextIO, text: str) -> None:
    """Write `text` and its newline in one write, so lines of threads building at once (`-j`) never mix."""
    stream.write(f"{text}\n")
    stream.flush()


@cache
def remote_cache_class(url: str, timeout: float | None = None, source: str = OPTION) -> type[RemoteCacheDir]:
    """The RemoteCacheDir class of the server at `url` (one per URL and timeout in a build), for
    `env.CacheDir(path, remote_cache_class(url))`; a UserError naming `source` if `url` is no cache URL."""
    from heliabuild.cache.http import DEFAULT_TIMEOUT, CacheError, RemoteCache

    try:
        remote = RemoteCache(
            url, on_warning=warn, timeout=DEFAULT_TIMEOUT if timeout is None else timeout, source=source
        )
    except CacheError as error:
        hint = f" (hint: {error.hint})" if error.hint else ""
        raise UserError(f"heliabuild: {error.message}{hint}") from None
    return type("RemoteCacheDir", (RemoteCacheDir,), {"remote": remote, "__module__": __name__})


def add_option() -> None:
    """Add `--helia-cache-url` to SCons's options, once per process."""
    from SCons.Script import AddOption, GetOption

    try:
        GetOption(OPTION_DEST)
    except AttributeError:
        AddOption(
            OPTION,
            dest=OPTION_DEST,
            metavar="URL",
            default=None,
            help=f"also fetch and store built files on the remote cache at URL, http://host:port/prefix "
            f"(default: ${URL_VARIABLE})",
        )


def configured_url() -> tuple[str, str] | None:
    """The cache URL the build is given and where from (the option, else the environment variable), or
    None when there is none (or the option is empty)."""
    from SCons.Script import GetOption

    given = GetOption(OPTION_DEST)
    if given is not None:
        return (given, OPTION) if given else None
    value = os.environ.get(URL_VARIABLE, "")
    return (value, URL_VARIABLE) if value else None


def configured_timeout() -> float | None:
    """The timeout HELIA_CACHE_TIMEOUT sets, or None; a UserError if it is not a positive number."""
    text = os.environ.get(TIMEOUT_VARIABLE, "")
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise UserError(f"heliabuild: {TIMEOUT_VARIABLE}: {text!r} is not a positive number of seconds")
    return seconds


def configure(env: Environment) -> None:
    """Add the option and, given a URL, make `env`'s CacheDir class the server's (module docstring). For an
    override environment (a builder called with construction variables), the environment it overrides: SCons
    asks that one for the CacheDir."""
    add_option()
    given = configured_url()
    if given is None:
        return
    url, source = given
    while isinstance(env, SCons.Environment.OverrideEnvironment):
        env = env.__dict__["__subject"]  # SCons keeps no public reference to it
    env["CACHEDIR_CLASS"] = remote_cache_class(url, configured_timeout(), source)
