# The C++ extension module (python/src/), typed loosely: the atvoss package wraps every entry
# point with typed functions and classes (their annotations are its types), so only its own
# modules use these.
from typing import Any

def __getattr__(name: str) -> Any: ...
