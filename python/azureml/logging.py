"""The 2017 `azureml.logging` API, backed by mlw's metrics file:

    from azureml.logging import get_azureml_logger
    logger = get_azureml_logger()
    logger.log("Accuracy", 0.93)
"""

import sys

import mlw


class _Pending:
    """What Workbench's log() returned: an object whose wait() blocks until it is recorded."""

    def wait(self):
        return None


class _Logger:
    def log(self, name, value):
        """Records `value` (a scalar, a list, a numpy array or scalar) under `name`.

        As in 2017, logging never stops the script: a value that cannot be recorded is
        reported on stderr and skipped.
        """
        try:
            mlw.log_metric(str(name), value)
        except Exception as error:  # noqa: BLE001 - the logger must never raise
            try:
                print("mlw: metric %r not recorded: %s" % (name, error), file=sys.stderr)
            except Exception:  # noqa: BLE001
                pass
        return _Pending()


_logger = _Logger()


def get_azureml_logger():
    """The run's logger (one per process)."""
    return _logger
