#!/usr/bin/env python3
"""Installs the npm clients the client tests use (harness.install_node_clients)
and the chart tests' (harness.install_chart_clients), so that scripts/test.sh can fetch them while it builds. Prints what happened;
always exits 0: the tests themselves skip, saying why, if the clients are not
there."""
import unittest

import harness

try:
    print("node clients ready in", harness.install_node_clients())
except unittest.SkipTest as e:
    print("node clients not installed:", e)
try:
    print("chart clients ready in", harness.install_chart_clients())
except unittest.SkipTest as e:
    print("chart clients not installed:", e)
