"""heliabuild: build TFLite models for Arm Ethos-U NPUs as file-dependency targets."""

from heliabuild.distributions import NotInstalled, version

try:
    __version__ = version("heliabuild")
except NotInstalled:  # running from a source tree that was never installed
    __version__ = "0+unknown"
