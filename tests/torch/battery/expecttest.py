# SPDX-License-Identifier: MIT
"""What torch's test helpers take from the expecttest package, for systems
that do not package it (Debian 12): the ACCEPT switch, and a TestCase with
the inline-expectation assertions. Only the comparing half is here:
ACCEPT (rewriting a test file's expectations) is refused."""
import textwrap
import unittest

ACCEPT = False


def _normal(text):
    return textwrap.dedent(text).strip("\n")


class TestCase(unittest.TestCase):
    longMessage = True

    def assertExpectedInline(self, actual, expect, skip=0):
        if ACCEPT:
            raise RuntimeError("this stand-in for expecttest cannot accept (rewrite) expectations")
        self.assertMultiLineEqual(_normal(expect), _normal(actual))

    def assertExpectedRaisesInline(self, exc_type, callable, expect, *args, **kwargs):
        with self.assertRaises(exc_type) as caught:
            callable(*args, **kwargs)
        self.assertExpectedInline(str(caught.exception), expect)
