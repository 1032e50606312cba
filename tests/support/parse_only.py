"""A command line parsed, not run: ``python tests/support/parse_only.py MODULE ARG...`` runs ``python -m
MODULE ARG...`` up to its argument parsing, prints the parsed namespace and exits 0; arguments the
command's own parser refuses end in argparse's usage error (exit 2). Nothing after the parsing runs
(``tests/product/test_readme.py``: README commands that need hours, corpora, models, a server or the Hub)."""

import argparse
import runpy
import sys

_parse_args = argparse.ArgumentParser.parse_args


def _parse_and_stop(self, args=None, namespace=None):
    parsed = _parse_args(self, args, namespace)
    print(f"parsed: {parsed}")
    raise SystemExit(0)


if __name__ == "__main__":
    argparse.ArgumentParser.parse_args = _parse_and_stop
    module, sys.argv = sys.argv[1], [sys.argv[1], *sys.argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
