"""The ``dolda`` command line."""

import re

from click.testing import CliRunner

from dolda.cli import main


def test_help_lists_commands():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    assert "demo" in result.output


def test_demo_reports_accuracy_beside_logistic_regression():
    result = CliRunner().invoke(main, ["demo", "--probit", "--iterations", "200", "--quiet"])
    assert result.exit_code == 0, result.output
    acc = float(re.search(r"DOProbit \(Horseshoe\): test accuracy ([0-9.]+)", result.output)[1])
    acc_lr = float(re.search(r"LogisticRegression  : test accuracy ([0-9.]+)", result.output)[1])
    assert acc > 0.93 and acc_lr > 0.93
