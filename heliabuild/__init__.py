"""heliabuild: build TFLite models for Arm Ethos-U NPUs as file-dependency targets."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("heliabuild")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
