"""The model gateway (``memmatrix model``): an OpenAI-compatible server for every system's model calls."""

from .gateway import Gateway
from .oracle import ORACLE_VERSION, Oracle
from .settings import GatewaySettings

__all__ = ["Gateway", "GatewaySettings", "ORACLE_VERSION", "Oracle"]
