"""Console scripts whose command needs an extra (``pip install 'speakersleuth[<extra>]'``): on the
core install they say which one in a line, instead of ending in an import traceback."""

from __future__ import annotations

import importlib
import sys


def launch(target: str, extra: str, prog: str) -> int:
    """Run ``target`` ("module:function", the command's ``main``); when a module it imports is not
    installed, print one line naming it and the extra that brings it, and return 2."""
    module, function = target.split(":")
    try:
        main = getattr(importlib.import_module(module), function)
    except ModuleNotFoundError as err:
        print(missing_extra(err, extra, prog), file=sys.stderr)
        return 2
    return main()


#: Modules that another extra than the command's brings (the Gemini judge's client).
EXTRA_OF_MODULE = {"google": "gemini"}


def missing_extra(err: ModuleNotFoundError, extra: str, prog: str) -> str:
    """The one line for a command that met a module its install lacks: ``extra`` names what
    installs it, unless ``EXTRA_OF_MODULE`` names another.

    Example:
        >>> missing_extra(ModuleNotFoundError("No module named 'torch'", name="torch"), "builder", "judges")
        "judges: needs torch, which the 'builder' extra installs: pip install 'speakersleuth[builder]'"
        >>> missing_extra(ModuleNotFoundError(name="google.genai"), "builder", "judges").split(": ", 1)[1]
        "needs google.genai, which the 'gemini' extra installs: pip install 'speakersleuth[gemini]'"
    """
    extra = EXTRA_OF_MODULE.get((err.name or "").split(".")[0], extra)
    return f"{prog}: needs {err.name}, which the '{extra}' extra installs: pip install 'speakersleuth[{extra}]'"
